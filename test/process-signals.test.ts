// How the gateway process takes signals that arrive twice (a terminal's Ctrl-C on npm start reaches npm and
// the gateway, and npm passes its copy on; a second signal sent on purpose still ends the process at once),
// and a signal that never arrives (npx: npm's SIGTERM kills only the shell between npm and the gateway).
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { createStop, FORCED_EXIT_MS, REPEAT_MS, watchProcess } from '../src/lifecycle.js'
import { GRACE_MS, HUNG_MS, LISTENING, START_MS, commandAwaitingAck, connectedBoth, gatewaySetup, jsonLines, listening, startCli, startCommand, type Exit, type Run } from './helpers/process.js'
import { nodeArgs } from './helpers/built.js'
import { sleep, until } from './helpers/wait.js'

// gateway processes one after another, some waiting out a grace period: on a busy machine (CI beside other
// work) past .taprc's 120 s, which cut the file off midway
t.setTimeout(8 * START_MS)

const ROOT = join(import.meta.dirname, '..')
const BUILT = existsSync(join(ROOT, 'dist', 'src', 'cli.js'))

/** A login whose body never comes whole: a request in flight that only the grace period ends. */
async function slowUpload (t: Test, run: Run, port: number): Promise<void> {
  const client = connect(port, '127.0.0.1')
  client.on('error', () => {})
  t.teardown(() => { client.destroy() })
  await once(client, 'connect')
  client.write('POST /api/users/login HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"username":')
  // a request the gateway answers after the upload's bytes reached it (not a sleep a loaded machine may outlast)
  t.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200)
  t.equal(run.child.exitCode, null, 'serving, the upload in flight')
}

/** A gateway serving, with a login upload in flight that only the grace period ends. */
async function servingAnUpload (t: Test, env: Record<string, string>): Promise<Run> {
  const run = startCli(t, ['serve'], env)
  await slowUpload(t, run, await listening(run))
  return run
}

t.test('the same signal twice at once (Ctrl-C through npm): one stop with its grace period; a second one later ends it at once', async (t) => {
  const { env } = await gatewaySetup(t)

  t.test('SIGINT, and SIGINT again 5 ms later: the upload has the grace period, exit 0', async (t) => {
    const run = await servingAnUpload(t, env)
    const sent = Date.now()
    run.child.kill('SIGINT')
    await sleep(5)
    run.child.kill('SIGINT')
    const exit = await run.exitWithin(HUNG_MS)
    t.ok(exit, 'exited')
    if (!exit) return
    t.equal(exit.code, 0)
    t.ok(exit.at - sent >= GRACE_MS - 100, `the upload had the grace period (${exit.at - sent} ms; before: the repeat ended the process at once)`)
    t.notMatch(run.err(), 'second SIGINT', 'the repeat is not taken for a second request')
    t.ok(jsonLines(run.out()).some((l) => /^grace period over/.test(l.msg)), 'the upload was cut when the grace period was over')
  })

  t.test('SIGTERM, then SIGTERM again after the repeat window: exits at once, saying so', async (t) => {
    const run = await servingAnUpload(t, env)
    const sent = Date.now()
    // The window runs from when the gateway takes the first signal, which a loaded machine may delay:
    // here it is not scheduled for 400 ms. Timing the repeat from the sending, 200 ms beyond the
    // window, it fell inside it and the gateway waited out the grace period.
    run.child.kill('SIGSTOP')
    run.child.kill('SIGTERM')
    setTimeout(() => run.child.kill('SIGCONT'), 400)
    await until(() => /"signal":"SIGTERM"/.test(run.out()), 'the gateway to log the first SIGTERM')
    await sleep(REPEAT_MS + 200)
    run.child.kill('SIGTERM')
    const exit = await run.exitWithin(HUNG_MS)
    t.ok(exit, 'exited')
    if (!exit) return
    t.equal(exit.code, 0)
    t.ok(exit.at - sent < GRACE_MS, `before the grace period was over (${exit.at - sent} ms)`)
    t.match(run.err(), 'second SIGTERM while stopping: exiting now')
  })
})

t.test('a second signal while a station command waits for its ACK: the client gets its 504 before the process ends at once (before: its connection was reset)', async (t) => {
  // each attempt waits longer than the whole grace period: only the second signal ends the wait
  const { run, answer } = await commandAwaitingAck(t)
  run.child.kill('SIGTERM')
  await until(() => /"signal":"SIGTERM"/.test(run.out()), 'the gateway to log the SIGTERM')
  // another signal than the first: a second request whenever it comes, never taken for the first one again
  const sent = Date.now()
  run.child.kill('SIGINT')
  const exit = await run.exitWithin(HUNG_MS)
  t.ok(exit, 'exited')
  if (!exit) return
  t.equal(exit.code, 0, 'the first request\'s code: a stop that was asked for')
  t.ok(exit.at - sent < GRACE_MS, `at once, not after the grace period (${exit.at - sent} ms)`)
  t.match(run.err(), 'second SIGINT while stopping: exiting now')
  const res = await answer
  t.equal(res.status, 504, JSON.stringify(res.body))
  t.match(res.body, { code: 'CONTROLLER_TIMEOUT', message: 'the gateway is shutting down: controller ctl-1 had not acknowledged LIGHT when a second signal ended the stop; it may have carried it out' })
  t.match(jsonLines(run.out()).filter((l) => /^second signal/.test(l.msg)), [{ level: 40, commands: 1, msg: 'second signal: 1 station command(s) still waiting for an ACK answered 504' }])
})

t.test('a second signal waits at most FORCED_EXIT_MS for the work registered for it, and a third one not at all', async (t) => {
  const stop = createStop()
  const exits: Array<{ code: number, at: number }> = []
  const unwatch = watchProcess(stop, { exit: (code) => { exits.push({ code, at: performance.now() }) } })
  t.teardown(unwatch)
  let started = 0
  stop.beforeForcedExit(async () => { started++; await new Promise(() => {}) })
  // the handlers as a signal runs them, without one reaching this process
  process.emit('SIGTERM', 'SIGTERM')
  t.same(exits, [], 'the first one asks for the stop')
  const second = performance.now()
  process.emit('SIGINT', 'SIGINT')
  t.equal(started, 1, 'the second runs the work')
  t.same(exits, [], 'and waits for it')
  await until(() => exits.length === 1, 'the exit')
  // a loaded machine's timers run late: the bound is that the exit does not wait for the work to end
  t.ok(exits[0].at - second >= FORCED_EXIT_MS - 1 && exits[0].at - second < FORCED_EXIT_MS + 1000, `after FORCED_EXIT_MS, though the work never ends (${Math.round(exits[0].at - second)} ms)`)
  t.equal(exits[0].code, 0)
  process.emit('SIGHUP', 'SIGHUP')
  t.equal(exits.length, 2, 'a third exits at once')
  t.equal(started, 1, 'without running the work again')
})

t.test('Ctrl-C on npm start (SIGINT to npm and the gateway, one process group): the gateway stops as for one SIGINT', { skip: BUILT ? false : 'dist/ is not built (npm run build)' }, async (t) => {
  const { env } = await gatewaySetup(t)
  // its own process group, as a terminal's foreground job; --ignore-scripts skips only prestart's build.
  // The kernel merges the two SIGINTs when both are pending before the gateway takes one, so this test
  // caught the fault only most of the time; the test above, with the repeat 5 ms later, always does.
  const child = spawn(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['start', '--ignore-scripts', '--silent'], {
    cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c })
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c })
  const exited = new Promise<Exit>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })))
  const group = child.pid!
  t.teardown(() => { try { process.kill(-group, 'SIGKILL') } catch {} })
  const run: Run = {
    child,
    exited,
    exitWithin: async (ms) => await Promise.race([exited, sleep(ms).then(() => undefined)]),
    out: () => stdout,
    err: () => stderr
  }
  const port = await listening(run)
  await slowUpload(t, run, port)
  const sent = Date.now()
  process.kill(-group, 'SIGINT')
  const exit = await run.exitWithin(HUNG_MS)
  t.ok(exit, 'npm ended')
  if (!exit) return
  t.ok(exit.at - sent >= GRACE_MS - 100, `the gateway drained for the grace period (${exit.at - sent} ms; before: at once)`)
  t.notMatch(stderr, 'second SIGINT', "npm's copy of the SIGINT is not a second request")
  t.match(stdout, /"signal":"SIGINT"/, 'the gateway said why it stopped')
  await until(() => { try { process.kill(-group, 0); return false } catch { return true } }, 'every process of the group to end', HUNG_MS)
})

/** Gone, or a zombie that init has yet to reap: an orphan's exit code goes to init, not to the test. */
function ended (pid: number): boolean {
  try {
    return / Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\)/, ''))
  } catch {
    return true
  }
}

t.test('run by npx (npm, a shell, the gateway), npm killed with SIGKILL: the shell lives on, and the gateway stops by itself', { skip: process.platform === 'linux' ? false : 'reads /proc' }, async (t) => {
  const { env } = await gatewaySetup(t)
  const quote = (arg: string) => `'${arg.replace(/'/g, "'\\''")}'`
  // as npm exec runs a bin: sh -c '<bin> serve', a shell that does not exec its last command; npm is a node process
  const command = `${[process.execPath, ...nodeArgs('src/cli.ts'), 'serve'].map(quote).join(' ')}; exit $?`
  const npm = `require('child_process').spawn('/bin/sh', ['-c', ${JSON.stringify(command)}], { stdio: 'inherit' }); setInterval(() => {}, 1000)`
  const run = startCommand(t, process.execPath, ['-e', npm], { ...env, npm_lifecycle_event: 'npx' })
  await listening(run)
  await until(() => connectedBoth(run.out()), 'both controllers connected', START_MS)
  const gateway = jsonLines(run.out()).find((l) => LISTENING.test(l.msg))?.pid as number
  const shell = Number(readFileSync(`/proc/${gateway}/stat`, 'utf8').replace(/^.*\)/, '').trim().split(' ')[1])
  t.not(shell, run.child.pid, `the gateway (pid ${gateway}) is the shell's child, the shell (pid ${shell}) npm's`)
  t.teardown(() => {
    for (const pid of [gateway, shell]) if (!ended(pid)) process.kill(pid, 'SIGKILL')
  })
  run.child.kill('SIGKILL')
  await run.exitWithin(HUNG_MS)
  t.notOk(ended(shell), 'the shell got nothing and waits on')
  await until(() => ended(gateway), 'the gateway to end (before: it ran on, serving, with its shell)', HUNG_MS)
  await until(() => run.out().includes('controller disconnected'), 'its last lines', HUNG_MS)
  t.match(run.out(), new RegExp(`"msg":"the process that started it \\(pid ${run.child.pid}\\) is gone \\(npm stopped or killed\\): closing, as on SIGTERM"`), 'its log says why, naming npm')
  t.match(run.out(), /"controller disconnected"/, 'a graceful stop: the links were closed')
})

t.test('run by npm (npx: npm, a shell, the gateway), the shell killed by the SIGTERM npm passes on: the gateway stops by itself', { skip: process.platform === 'linux' ? false : 'reads /proc' }, async (t) => {
  const { env } = await gatewaySetup(t)
  const quote = (arg: string) => `'${arg.replace(/'/g, "'\\''")}'`
  // as npm exec runs a bin: sh -c '<bin> serve', a shell that does not exec its last command
  const command = `${[process.execPath, ...nodeArgs('src/cli.ts'), 'serve'].map(quote).join(' ')}; exit $?`

  for (const [by, npm] of [['npm (npm_lifecycle_event set)', 'npx'], ['no npm', undefined]] as const) {
    const run = startCommand(t, '/bin/sh', ['-c', command], { ...env, npm_lifecycle_event: npm })
    await listening(run)
    // the links up first: a stop that closes them says so ("controller disconnected"); on a loaded machine
    // the shell was killed 14 ms after ready, before either link had connected, and the line was never due
    await until(() => connectedBoth(run.out()), `${by}: both controllers connected`, START_MS)
    const gateway = jsonLines(run.out()).find((l) => LISTENING.test(l.msg))?.pid as number
    t.ok(gateway !== undefined && gateway !== run.child.pid, `${by}: the gateway (pid ${gateway}) is the shell's child`)
    t.teardown(() => { if (!ended(gateway)) process.kill(gateway, 'SIGKILL') })
    run.child.kill('SIGTERM')
    t.equal((await run.exitWithin(HUNG_MS))?.signal, 'SIGTERM', `${by}: the shell died of the SIGTERM, passing nothing on`)
    if (npm === undefined) {
      // not run by npm (systemd, nohup … &): a parent that goes is no reason to stop
      await sleep(2000)
      t.notOk(ended(gateway), 'no npm: the gateway runs on')
      process.kill(gateway, 'SIGTERM')
      await until(() => ended(gateway), 'the gateway to end on its SIGTERM', HUNG_MS)
      continue
    }
    await until(() => ended(gateway), `${by}: the orphaned gateway to end (before: it ran on, serving)`, HUNG_MS)
    // its last lines may still be in the pipe it shared with the shell
    await until(() => run.child.stdout!.readableEnded, `${by}: the gateway's output to end`, HUNG_MS)
    t.match(run.out(), /"msg":"the process that started it \(pid \d+\) is gone \(npm stopped or killed\): closing, as on SIGTERM"/, `${by}: its log says why`)
    t.match(run.out(), /"controller disconnected"/, `${by}: a graceful stop: the links were closed`)
  }
})
