// Runs what the README documents as a reader would: a gateway process from a temporary copy of the
// package (the demo keeps its files beside package.json, so the checkout gets none), the documented
// commands as child processes, and the proof that every process started has ended.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { createConnection } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { builtIsCurrent, nodeArgs, ROOT } from './built.js'
import { until } from './wait.js'

export { ROOT }
export const README = readFileSync(join(ROOT, 'README.md'), 'utf8')
/** a process still running this long after SIGTERM is hung */
export const STOP_MS = 15000

export interface Done { code: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string, timedOut: boolean }

/**
 * This process's environment without proxies (loopback is reached directly) and without the
 * gateway's own settings, so that only what a test passes configures the gateway.
 */
export function cleanEnv (): NodeJS.ProcessEnv {
  const env = { ...process.env }
  for (const key of Object.keys(env)) {
    if (/^(https?|all|no)_proxy$/i.test(key) || key.startsWith('PICKING_GATEWAY_') ||
        ['CREDENTIALS_DIRECTORY', 'DATABASE_URL', 'LOG_LEVEL', 'HOST', 'PORT'].includes(key)) delete env[key]
  }
  return { ...env, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' }
}

export const has = (cmd: string, args: string[]): boolean => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0

/** Nothing listens on the port (any more). */
export async function refused (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    socket.once('connect', () => { socket.destroy(); resolve(false) })
    socket.once('error', () => resolve(true))
  })
}

/** Processes whose command line names this directory (Linux: /proc), this one excluded. */
export function processesNaming (dir: string): string[] {
  if (!existsSync('/proc/self/cmdline')) return []
  const found: string[] = []
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    if (Number(pid) === process.pid) continue
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')
      if (cmdline.includes(dir)) found.push(`${pid}: ${cmdline}`)
    } catch {}
  }
  return found
}

/** A copy of the package to run from (src, plugins, schemas, package.json, tsconfig.json; node_modules linked; dist when current). */
export function packageCopy (prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  // times kept: the copy's dist/ is current where the package's is (helpers/built.ts)
  const subs = ['src', 'plugins', 'schemas', ...(builtIsCurrent() ? ['dist'] : [])]
  for (const sub of subs) cpSync(join(ROOT, sub), join(dir, sub), { recursive: true, preserveTimestamps: true })
  for (const file of ['package.json', 'tsconfig.json']) cpSync(join(ROOT, file), join(dir, file))
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
  return dir
}

export interface Gateway {
  child: ChildProcess
  out (): string
  err (): string
  exited: Promise<[number | null, NodeJS.Signals | null]>
}

/** Every process a test file starts, so that it can stop them all and prove that none is left. */
export class Processes {
  readonly started: ChildProcess[] = []

  /** Runs a command to its end (killed after timeoutMs), in cleanEnv() plus `env`. */
  async run (cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 30000): Promise<Done> {
    const child = spawn(cmd, args, { cwd, env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    this.started.push(child)
    let stdout = ''
    let stderr = ''
    child.stdout!.setEncoding('utf8').on('data', (c: string) => { stdout += c })
    child.stderr!.setEncoding('utf8').on('data', (c: string) => { stderr += c })
    let timedOut = false
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL') }, timeoutMs)
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
      child.on('error', reject)
      child.on('close', (c, s) => resolve([c, s]))
    })
    clearTimeout(timer)
    return { code, signal, stdout, stderr, timedOut }
  }

  /** `picking-gateway <args>` of the package copy through tap's TypeScript loader, as a command. */
  async cli (pkg: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60000): Promise<Done> {
    return await this.run(process.execPath, [...nodeArgs('src/cli.ts', { root: pkg }), ...args], pkg, env, timeoutMs)
  }

  /** `picking-gateway serve` of the package copy, resolved once it says it is ready; throws with its output if it does not. */
  async serve (pkg: string, env: NodeJS.ProcessEnv): Promise<Gateway> {
    const child = spawn(process.execPath, [...nodeArgs('src/cli.ts', { root: pkg }), 'serve'], {
      cwd: pkg,
      env: { ...cleanEnv(), ...env },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    this.started.push(child)
    let out = ''
    let err = ''
    child.stdout!.setEncoding('utf8').on('data', (c: string) => { out += c })
    child.stderr!.setEncoding('utf8').on('data', (c: string) => { err += c })
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('exit', (c, s) => resolve([c, s])))
    await until(() => out.includes('picking-gateway ready') || child.exitCode !== null, 'the gateway to start', 60000)
    if (!out.includes('picking-gateway ready')) throw new Error(`the gateway did not start:\n${out}\n${err}`)
    return { child, out: () => out, err: () => err, exited }
  }

  /** Stops the gateway with SIGTERM: its exit, or undefined when it is still running after STOP_MS. */
  async stop (gateway: Gateway): Promise<[number | null, NodeJS.Signals | null] | undefined> {
    gateway.child.kill('SIGTERM')
    let timer: NodeJS.Timeout | undefined
    const exit = await Promise.race([gateway.exited, new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), STOP_MS) })])
    clearTimeout(timer)
    return exit
  }

  /** Teardown: kills whatever still runs and removes the package copy. */
  async end (pkg: string): Promise<void> {
    for (const child of this.started) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL')
        await new Promise((resolve) => child.once('exit', resolve))
      }
    }
    rmSync(pkg, { recursive: true, force: true })
  }

  /** Processes started here that have not ended. */
  running (): ChildProcess[] {
    return this.started.filter((child) => child.exitCode === null && child.signalCode === null)
  }
}
