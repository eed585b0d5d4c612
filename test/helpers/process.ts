// Runs picking-gateway serve as a real process for the process tests, and makes sure every process started ends.
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { main } from '../../src/commands.js'
import { startSimulator } from '../../src/hardware/index.js'
import { ADMIN_PASSWORD, TEST_ARGON2 } from './build.js'
import { tempDir } from './temp.js'
import { until } from './wait.js'
import { moduleUrl, nodeArgs, scriptLoaders } from './built.js'

const SECRET = 'k7Jq2vX9pL4mN8rT1wY6zB3cF5hD0gSa'
/** server.closeGraceMs of the gateways started here */
export const GRACE_MS = 3000
/** A process still there this long after it should have ended is hung: killed, and the test fails. */
export const HUNG_MS = GRACE_MS + 7000
/** How long a process started under the tests' loaders (TypeScript, coverage) may take to start, or to refuse to, on a busy machine. */
export const START_MS = 30_000

export interface Exit { code: number | null, signal: NodeJS.Signals | null, at: number }

export interface Run {
  child: ChildProcess
  exited: Promise<Exit>
  /** resolves with the exit, or with undefined when the process is still running after `ms` */
  exitWithin (ms: number): Promise<Exit | undefined>
  out (): string
  err (): string
}

/**
 * Starts node (with tap's TypeScript loader) and makes sure the process ends: a process still
 * running at the end of the test is killed and waited for.
 */
export function start (t: Test, args: string[], env: NodeJS.ProcessEnv): Run {
  return startCommand(t, process.execPath, [...process.execArgv, ...args], env)
}

/** As `start`, for `picking-gateway <args>` (the compiled CLI when current, see helpers/built.ts); `nodeOptions` go before it. */
export function startCli (t: Test, args: string[], env: NodeJS.ProcessEnv, nodeOptions: string[] = []): Run {
  return startCommand(t, process.execPath, [...nodeOptions, ...nodeArgs('src/cli.ts'), ...args], env)
}

/** As `start`, for any command (npm, for one), in `cwd` when given. */
export function startCommand (t: Test, command: string, args: string[], env: NodeJS.ProcessEnv, cwd?: string): Run {
  const child = spawn(command, args, { env: { ...process.env, ...env }, cwd, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.setEncoding('utf8').on('data', (c: string) => { stdout += c })
  child.stdout!.on('error', () => {})
  child.stderr!.setEncoding('utf8').on('data', (c: string) => { stderr += c })
  const exited = new Promise<Exit>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await exited
    }
  })
  const exitWithin = async (ms: number) => {
    let timer: NodeJS.Timeout | undefined
    const result = await Promise.race([exited, new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), ms) })])
    clearTimeout(timer)
    return result
  }
  return { child, exited, exitWithin, out: () => stdout, err: () => stderr }
}

export interface LogLine { level: number, time: number, msg: string, controllerId?: string, [key: string]: unknown }

export const jsonLines = (text: string): LogLine[] => text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine)

/** A configuration file, a database with user admin, and two simulated controllers in this process. */
export async function gatewaySetup (t: Test, server: Record<string, unknown> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'pg-proc-'))
  const sim = await startSimulator({ controllers: [{ id: 'ctl-1', port: 0 }, { id: 'ctl-2', port: 0 }] })
  t.teardown(async () => {
    await sim.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const config = join(dir, 'config.json')
  writeFileSync(config, JSON.stringify({
    // a loaded machine stalls the event loop for a second at times: an overload 503 to a test's request (the slow
    // upload a stop must wait for) made the stop find nothing to wait for; overload is tested on its own
    server: { port: 0, closeGraceMs: GRACE_MS, maxEventLoopDelayMs: 0, ...server },
    database: { url: `sqlite:${join(dir, 'g.db')}` },
    auth: { jwtSecret: SECRET, argon2: TEST_ARGON2 },
    hardware: { controllers: [...sim.controllers.values()].map((c) => ({ id: c.id, host: '127.0.0.1', port: c.port })) }
  }))
  const env = { PICKING_GATEWAY_CONFIG: config, PICKING_GATEWAY_ADMIN_PASSWORD: ADMIN_PASSWORD, LOG_LEVEL: 'info' }
  t.equal(await main(['db', 'init'], { out: () => {}, err: () => {}, readStdin: async () => '', env }), 0, 'db init')
  return { dir, env, sim }
}

/** A command's answer as a test reads it: status 0 and the error when the connection was cut. */
export interface CommandAnswer { status: number, body: Record<string, unknown> }

/**
 * A gateway process (gatewaySetup) whose LIGHT to station PTL-1 of ctl-1 is on the wire and will not be
 * acknowledged within the grace period: the controller is silent, and each attempt waits longer than it.
 * `answer` settles when the client gets its answer, or its connection is cut.
 */
export async function commandAwaitingAck (t: Test): Promise<{ run: Run, answer: Promise<CommandAnswer> }> {
  const { dir, env, sim } = await gatewaySetup(t)
  const file = join(dir, 'config.json')
  const config = JSON.parse(readFileSync(file, 'utf8'))
  // each attempt waits longer than the whole grace period (a slow radio link's setting)
  config.hardware.timings = { ackTimeout: GRACE_MS + 1000 }
  writeFileSync(file, JSON.stringify(config))
  const run = startCli(t, ['serve'], env)
  const port = await listening(run)
  // its HELLO, not only the connection: a command before it is a 503 (offline) that never reaches the wire
  await until(() => jsonLines(run.out()).some((l) => l.msg === 'controller said hello' && l.controllerId === 'ctl-1'), 'ctl-1 said hello', START_MS)
  const base = `http://127.0.0.1:${port}`
  const { accessToken } = await (await fetch(`${base}/api/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }) })).json() as { accessToken: string }
  const headers = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' }
  const station = await (await fetch(`${base}/api/stations`, { method: 'POST', headers, body: JSON.stringify({ name: 'PTL-1', controllerId: 'ctl-1', address: 1 }) })).json() as { id: number }
  const simulated = sim.controllers.get('ctl-1')!
  simulated.setMode('silent')
  const onWire = new Promise<void>((resolve) => simulated.on('frame', (frame: { kind: string, cmd: string }) => { if (frame.kind === 'REQ' && frame.cmd === 'LIGHT') resolve() }))
  const answer = fetch(`${base}/api/stations/${station.id}/commands`, { method: 'POST', headers, body: JSON.stringify({ command: 'light', quantity: 1 }) })
    .then(async (res) => ({ status: res.status, body: await res.json() as Record<string, unknown> }), (err: Error) => ({ status: 0, body: { error: String(err.cause ?? err) } }))
  // an answer before the frame is on the wire is a failure of the setup, said as such rather than waited on
  await Promise.race([onWire, answer.then((early) => { throw new Error(`the LIGHT was answered before it reached the controller: ${JSON.stringify(early)}`) })])
  return { run, answer }
}

/** A port that something else listens on. */
export async function occupiedPort (t: Test): Promise<number> {
  const holder = createServer()
  holder.listen(0, '127.0.0.1')
  await once(holder, 'listening')
  t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())))
  return (holder.address() as AddressInfo).port
}

export const LISTENING = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/

export async function listening (run: Run): Promise<number> {
  await until(() => LISTENING.test(run.out()) || run.child.exitCode !== null, 'the gateway to listen', START_MS)
  const match = LISTENING.exec(run.out())
  if (!match) throw new Error(`the gateway did not start: ${run.err()}`)
  return Number(match[1])
}

export const connectedBoth = (text: string) => (text.match(/controller connected/g) ?? []).length >= 2

/** The embedded demo (its simulator runs in the gateway's process) in a temporary data directory. */
export function startDemo (t: Test, env: NodeJS.ProcessEnv) {
  const dir = tempDir(t, 'pg-demo-')
  const script = `import { serve } from ${JSON.stringify(moduleUrl('src/server.ts'))}
serve({ dataDir: ${JSON.stringify(dir)}, env: ${JSON.stringify({ PICKING_GATEWAY_ADMIN_PASSWORD: ADMIN_PASSWORD, LOG_LEVEL: 'info', ...env })} })
  .catch((err) => { process.stderr.write(err.message + '\\n'); process.exitCode = 1 })`
  return startCommand(t, process.execPath, [...scriptLoaders(), '--input-type=module', '-e', script], {})
}
