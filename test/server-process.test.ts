// picking-gateway serve when it cannot listen (it ends at once, non-zero, saying what to change), the
// controller lines of its log (one line per event), and how it stops: a slow client, a stop during start-up.
import { once } from 'node:events'
import { cpSync, existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, symlinkSync } from 'node:fs'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t, { type Test } from 'tap'
import { ConfigError } from '../src/config.js'
import { listenError, plainHttpWarning } from '../src/server.js'
import { GRACE_MS, HUNG_MS, LISTENING, START_MS, commandAwaitingAck, connectedBoth, gatewaySetup, jsonLines, listening, occupiedPort, startCli, startCommand, startDemo, type Run } from './helpers/process.js'
import { tempDir } from './helpers/temp.js'
import { until } from './helpers/wait.js'
import { ADMIN_PASSWORD } from './helpers/build.js'

// fifteen tests that each start a gateway process, some waiting out a grace period: past .taprc's 120 s
// on a busy machine (CI's clean clone with other work running), which cut the file off midway
t.setTimeout(8 * START_MS)

t.test('serve collects the young generation on its main thread alone: no helper thread takes part', async (t) => {
  // no overload check: a busy machine's event-loop delay would answer some of the thousand requests 503
  const { env } = await gatewaySetup(t, { maxEventLoopDelayMs: 0 })
  // V8's own trace: a line per collection; a scavenge's "background.scavenge.parallel" is the helpers' share in ms
  const run = startCli(t, ['serve'], env, ['--trace-gc-nvp'])
  const port = await listening(run)
  const from = run.out().length
  const pad = 'x'.repeat(12000)
  // about 12 MB of request text and log lines: several scavenges
  const statuses = new Set<number>()
  for (let i = 0; i < 1000; i++) statuses.add((await fetch(`http://127.0.0.1:${port}/api/materials?pad=${pad}`)).status)
  t.same([...statuses], [401])
  const scavenges = run.out().slice(from).split('\n').filter((l) => / gc=s /.test(l))
  t.ok(scavenges.length > 0, `${scavenges.length} scavenges after start-up`)
  const helpers = scavenges.map((l) => Number(/ background\.scavenge\.parallel=([\d.]+)/.exec(l)?.[1]))
  t.same(helpers.filter((ms) => ms !== 0), [], 'no helper thread time in any of them')
  run.child.kill('SIGTERM')
  const exit = await run.exitWithin(HUNG_MS)
  t.equal(exit?.code, 0, 'and it ends on SIGTERM')
})

t.test('port already in use: the process exits at once, non-zero, naming the address and how to choose another', async (t) => {
  const { env } = await gatewaySetup(t)
  const port = await occupiedPort(t)
  // debug: the links log 'connecting' when the app is ready, just before it tries to listen
  const run = startCli(t, ['serve'], { ...env, PORT: String(port), LOG_LEVEL: 'debug' })
  const exit = await run.exitWithin(30000)
  t.ok(exit, `exited by itself${exit ? '' : `; still running: ${run.err()}`}`)
  if (!exit) return
  t.equal(exit.signal, null)
  t.equal(exit.code, 1, 'exit 1: a failure systemd restarts (Restart=on-failure; 78 would not be restarted)')
  t.match(run.err(), `cannot listen on 127.0.0.1:${port}: the address is already in use (EADDRINUSE)`)
  t.match(run.err(), /PORT \(environment\) or server\.port \(configuration file\)/)
  const ready = jsonLines(run.out()).find((l) => l.msg === 'connecting to controller')
  t.ok(ready, 'the controller links had started')
  const ms = exit.at - ready!.time
  t.ok(ms < 5000, `exited ${ms} ms after the app was ready`)
  t.comment(`EADDRINUSE: exit ${ms} ms after the controller links started`)
  t.notMatch(run.out(), /picking-gateway ready/)
})

t.test('an address this machine does not have: exits non-zero naming HOST', async (t) => {
  const { env } = await gatewaySetup(t)
  const run = startCli(t, ['serve'], { ...env, HOST: '192.0.2.1', PORT: '3000' })
  const exit = await run.exitWithin(30000)
  t.ok(exit, 'exited by itself')
  t.equal(exit?.code, 1)
  t.match(run.err(), 'cannot listen on 192.0.2.1:3000: no network interface of this machine has the address 192.0.2.1 (EADDRNOTAVAIL)')
  t.match(run.err(), /HOST \(environment\) or server\.host/)
})

t.test('plain HTTP on an address other machines reach is a warning at start; HTTPS, a proxy in front or loopback are not', async (t) => {
  t.match(plainHttpWarning({ host: '0.0.0.0', trustProxy: false }), /^serving plain HTTP on 0\.0\.0\.0: passwords and tokens cross the network unencrypted; set server\.tls/)
  t.match(plainHttpWarning({ host: '10.1.2.3' }), /plain HTTP on 10\.1\.2\.3/)
  for (const server of [{ host: '127.0.0.1' }, { host: '127.0.0.2' }, { host: '::ffff:127.0.0.1' }, { host: '::1' }, { host: 'localhost' }, { host: '0.0.0.0', tls: { cert: 'c', key: 'k' } }, { host: '0.0.0.0', trustProxy: true }, { host: '0.0.0.0', trustProxy: '10.0.0.0/8' }]) {
    t.equal(plainHttpWarning(server), undefined, JSON.stringify(server))
  }
})

t.test('listen errors name the address and what to change', async (t) => {
  const err = (code: string, message = code) => Object.assign(new Error(message), { code })
  const denied = listenError(err('EACCES'), '0.0.0.0', 80)
  t.ok(denied instanceof ConfigError, 'a privileged port is a configuration error: exit 78, no restart loop')
  t.match(denied.message, /server\.port: cannot listen on 0\.0\.0\.0:80: permission denied \(EACCES\).*PORT \(environment\) or server\.port/)
  t.match(listenError(err('EADDRINUSE'), '::1', 3000).message, 'cannot listen on [::1]:3000: the address is already in use')
  t.match(listenError(err('ENOTFOUND'), 'gateway.invalid', 3000).message, /host name gateway\.invalid does not resolve \(ENOTFOUND\).*HOST/)
  t.match(listenError(err('EMFILE', 'too many open files'), '127.0.0.1', 3000).message, 'cannot listen on 127.0.0.1:3000: too many open files (EMFILE). Check HOST and PORT')
})

t.test('the demo with its simulated controllers, port in use: serve() fails and nothing keeps the process alive', async (t) => {
  const port = await occupiedPort(t)
  const run = startDemo(t, { PORT: String(port) })
  const exit = await run.exitWithin(30000)
  t.ok(exit, 'ended by itself: simulator, controller links and database closed')
  t.equal(exit?.code, 1)
  t.match(run.err(), `cannot listen on 127.0.0.1:${port}: the address is already in use`)
})

t.test('one line per controller event: connected once, disconnected once (info) on a normal shutdown', async (t) => {
  const run = startDemo(t, { PORT: '0' })
  await listening(run)
  await until(() => connectedBoth(run.out()), 'both demo controllers connected', 15000)
  run.child.kill('SIGTERM')
  const exit = await run.exitWithin(HUNG_MS)
  t.equal(exit?.code, 0, 'exit 0')
  const lines = jsonLines(run.out())
  const connected = lines.filter((l) => l.msg === 'controller connected')
  const disconnected = lines.filter((l) => l.msg === 'controller disconnected')
  t.same(connected.map((l) => l.controllerId).sort(), ['ctl-1', 'ctl-2'], 'one "controller connected" per controller')
  t.same(disconnected.map((l) => l.controllerId).sort(), ['ctl-1', 'ctl-2'], 'one "controller disconnected" per controller')
  t.same(disconnected.map((l) => l.level), [30, 30], 'at info: a shutdown is no outage')
  t.same(lines.filter((l) => l.level >= 40).map((l) => l.msg), [], 'no warning from start to stop')
})

t.test('SIGTERM with a slow upload in flight: the upload is cut after the grace period, a warning names it, exit 0', async (t) => {
  const { env } = await gatewaySetup(t)
  const run = startCli(t, ['serve'], env)
  const port = await listening(run)
  const client = connect(port, '127.0.0.1')
  client.on('error', () => {})
  t.teardown(() => { client.destroy() })
  await once(client, 'connect')
  // the headers and a first piece of a body that never comes whole
  client.write('POST /api/users/login HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"username":')
  await until(() => jsonLines(run.out()).length > 0 && run.child.exitCode === null, 'the request to be read', 5000)
  await new Promise((resolve) => setTimeout(resolve, 300))
  const sent = Date.now()
  run.child.kill('SIGTERM')
  const exit = await run.exitWithin(HUNG_MS)
  t.ok(exit, 'exited')
  if (!exit) return
  t.equal(exit.signal, null)
  t.equal(exit.code, 0, 'a requested stop, even one that had to cut a client (before: "killed by timeout", exit 1)')
  t.ok(exit.at - sent >= GRACE_MS - 100, `the upload had the grace period (${exit.at - sent} ms)`)
  const cut = jsonLines(run.out()).find((l) => /^grace period over/.test(l.msg))
  t.match(cut, { level: 40, connections: 1, graceMs: GRACE_MS, msg: 'grace period over: 1 connection(s) still open cut' })
  t.ok(jsonLines(run.out()).some((l) => l.msg === 'controller disconnected'), 'and then closed the rest')
})

t.test('SIGTERM after a write was refused from its headers while its body still comes: the gateway does not wait for the body, it exits at once', async (t) => {
  const { env } = await gatewaySetup(t)
  const run = startCli(t, ['serve'], env)
  const port = await listening(run)
  const login = await fetch(`http://127.0.0.1:${port}/api/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }) })
  const { accessToken } = await login.json() as { accessToken: string }
  const client = connect(port, '127.0.0.1')
  client.on('error', () => {})
  t.teardown(() => { client.destroy() })
  await once(client, 'connect')
  let answer = ''
  client.setEncoding('utf8').on('data', (c: string) => { answer += c })
  // a gzip body, refused (415) from its headers before it is read, and the first pieces of it, slowly: it never ends
  client.write(`POST /api/materials HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${accessToken}\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n`)
  await until(() => answer.includes('UNSUPPORTED_MEDIA_TYPE'), 'the 415', 5000)
  t.match(answer, /^HTTP\/1\.1 415 /)
  const more = setInterval(() => { if (!client.destroyed) client.write('1\r\n"\r\n') }, 200)
  t.teardown(() => { clearInterval(more) })
  await new Promise((resolve) => setTimeout(resolve, 500))
  const sent = Date.now()
  run.child.kill('SIGTERM')
  const exit = await run.exitWithin(HUNG_MS)
  t.ok(exit, 'exited')
  if (!exit) return
  t.equal(exit.code, 0)
  t.ok(exit.at - sent < GRACE_MS - 1000, `no grace period spent on a request already answered (${exit.at - sent} ms; before: ${GRACE_MS} ms and a connection cut)`)
  t.notOk(jsonLines(run.out()).some((l) => /^grace period over/.test(l.msg)), 'no connection left to cut')
})

/**
 * A "SQL Server" that accepts connections and never answers (the driver waits for its connect timeout), and a
 * gateway starting against it, returned once the driver has connected: the start-up is under way.
 */
async function startingAgainstSilentSqlServer (t: Test, server: Record<string, unknown> = {}): Promise<Run> {
  let reached = false
  const sockets: Socket[] = []
  const silent = createServer((socket) => {
    reached = true
    sockets.push(socket.on('error', () => {}))
  })
  silent.listen(0, '127.0.0.1')
  await once(silent, 'listening')
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    silent.close()
  })
  const { env } = await gatewaySetup(t, server)
  const dbPort = (silent.address() as AddressInfo).port
  const run = startCli(t, ['serve'], { ...env, DATABASE_URL: `mssql://gw:pw@127.0.0.1:${dbPort}/Picking` })
  // the driver's connection: the start-up is under way (buildApp checks the mapping)
  await until(() => reached || run.child.exitCode !== null, 'the gateway to connect to the database', 30000)
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(run.child.exitCode, null, 'still starting')
  return run
}

t.test('SIGTERM while start-up waits for an unreachable SQL Server: start-up stops, exit 0', async (t) => {
  const run = await startingAgainstSilentSqlServer(t)
  const sent = Date.now()
  run.child.kill('SIGTERM')
  const exit = await run.exitWithin(HUNG_MS)
  t.ok(exit, 'exited')
  if (!exit) return
  t.equal(exit.signal, null, 'not killed by the signal (before: handlers installed only once the app was built)')
  t.equal(exit.code, 0)
  // the pool closes once the driver's connect attempt (5 s) gives up, within the grace period and a little
  t.ok(exit.at - sent < GRACE_MS + 2000, `ended ${exit.at - sent} ms after SIGTERM`)
  t.comment(`SIGTERM during start-up: exit ${exit.at - sent} ms after it`)
  t.match(run.err(), 'stopped during start-up: SIGTERM')
  t.notMatch(run.out(), LISTENING)
})

t.test('SIGTERM while start-up waits for an unreachable SQL Server, with a grace period longer than the connect attempt: no "database unavailable at start" warning after the stop', async (t) => {
  // the defaults' order (grace 10 s, connect 5 s): the stop waits for the driver to give up its attempt
  const run = await startingAgainstSilentSqlServer(t, { closeGraceMs: 8000 })
  run.child.kill('SIGTERM')
  const exit = await run.exitWithin(8000 + 7000)
  t.ok(exit, 'exited')
  if (!exit) return
  t.equal(exit.code, 0)
  t.match(run.err(), 'stopped during start-up: SIGTERM')
  const lines = jsonLines(run.out())
  t.ok(lines.some((l) => l.msg === 'stopped during start-up'))
  t.notOk(lines.some((l) => String(l.msg).startsWith('database unavailable at start')),
    'the pool the stop closed is no outage (before: once the attempt gave up, a warning that requests answer 503 until the database is back)')
})

t.test('SIGTERM while start-up waits for another process\'s lock on the SQLite file: start-up stops, exit 0', { skip: process.platform === 'linux' ? false : 'reads /proc' }, async (t) => {
  const { env, dir } = await gatewaySetup(t)
  const file = join(dir, 'g.db')
  // the picking system in the middle of a write, on a file in rollback-journal mode: switching it to WAL,
  // which the gateway does as it opens it, waits for the lock (inside SQLite, for 5 s)
  const other = new BetterSqlite3(file)
  t.teardown(() => { other.close() })
  other.pragma('journal_mode = DELETE')
  other.exec('BEGIN EXCLUSIVE')
  other.exec('UPDATE materials SET name = name')
  const run = startCli(t, ['serve'], env)
  const opened = () => { try { return readdirSync(`/proc/${run.child.pid!}/fd`).some((fd) => { try { return readlinkSync(`/proc/${run.child.pid!}/fd/${fd}`) === file } catch { return false } }) } catch { return false } }
  await until(() => opened() || run.child.exitCode !== null, 'the gateway to open the database file', START_MS)
  t.equal(run.child.exitCode, null, 'still starting, waiting for the lock')
  const sent = Date.now()
  run.child.kill('SIGTERM')
  const exit = await run.exitWithin(HUNG_MS)
  t.ok(exit, 'exited')
  if (!exit) return
  t.equal(exit.code, 0, `a stop, not a failure (before: exit 1, "The database is busy"): ${run.err()}`)
  t.ok(exit.at - sent < GRACE_MS + 5000, `ended ${exit.at - sent} ms after SIGTERM`)
  t.match(run.err(), 'stopped during start-up: SIGTERM')
  t.notMatch(run.err(), 'The database is busy')
  t.notMatch(run.out(), LISTENING)
})

t.test('a SQLite file that is not there, or a directory: a configuration error (78) naming the path', async (t) => {
  const { env, dir } = await gatewaySetup(t)
  for (const [path, text] of [[join(dir, 'missing.db'), 'does not exist'], [dir, 'is a directory']]) {
    const run = startCli(t, ['serve'], { ...env, DATABASE_URL: `sqlite:${path}` })
    const exit = await run.exitWithin(30000)
    t.equal(exit?.code, 78, `${text}: exit 78, systemd does not restart`)
    t.match(run.err(), `database.url: SQLite database ${path === dir ? '' : 'file '}'${path}' ${text}`)
  }
})

const ROOT = join(import.meta.dirname, '..')
// npm start as systemd or a terminal runs it, from the built dist/ (npm ci's prepare builds it); --ignore-scripts skips only prestart's build
const BUILT = existsSync(join(ROOT, 'dist', 'src', 'cli.js'))

t.test('npm start runs the gateway through exec: SIGTERM to npm ends the gateway, which no shell keeps alive', { skip: BUILT ? false : 'dist/ is not built (npm run build)' }, async (t) => {
  const root = ROOT
  const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
  t.match(scripts.start, /^exec node /)
  const { env } = await gatewaySetup(t)
  const run = startCommand(t, process.platform === 'win32' ? 'npm.cmd' : 'npm', ['start', '--ignore-scripts', '--silent'], env, root)
  const port = await listening(run)
  t.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200, 'the gateway answers')
  const gateway = jsonLines(run.out()).find((l) => LISTENING.test(l.msg))?.pid as number
  t.ok(gateway !== undefined && gateway !== run.child.pid, `the gateway (pid ${gateway}) is npm's child, not npm itself (pid ${run.child.pid})`)
  // a gateway left behind by a shell (the failure this test is for) does not outlive the test
  t.teardown(() => { try { process.kill(gateway, 'SIGKILL') } catch {} })
  run.child.kill('SIGTERM')
  const exit = await run.exitWithin(HUNG_MS)
  t.ok(exit, 'npm ended')
  t.match(run.out(), /"signal":"SIGTERM"/, 'the gateway got the SIGTERM and said so')
  await until(() => { try { process.kill(gateway, 0); return false } catch { return true } }, 'the gateway process to end', HUNG_MS)
  await t.rejects(fetch(`http://127.0.0.1:${port}/health`), 'nothing answers on its port')
})

/** The processes whose working directory is `dir` (Linux). */
function processesIn (dir: string): number[] {
  return readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try { return readlinkSync(`/proc/${p}/cwd`) === dir } catch { return false }
  }).map(Number)
}

// SIGHUP: npm passes on only SIGTERM and SIGINT and dies of a SIGHUP sent to it alone (kill -HUP <npm>); prestart's build
// then watches npm itself, as the gateway does (before: the compiler ran on alone for some 20 s and wrote dist/), and so do
// build's and prebench's (before: they exec'd the compiler, which a SIGHUP to npm left building on alone, parent 1)
for (const [command, signal] of [[['start', '--silent'], 'SIGTERM'], [['run', 'build', '--silent'], 'SIGTERM'], [['run', 'bench', '--silent'], 'SIGTERM'], [['start', '--silent'], 'SIGHUP'], [['run', 'build', '--silent'], 'SIGHUP'], [['run', 'bench', '--silent'], 'SIGHUP']] as Array<[string[], NodeJS.Signals]>) {
t.test(`${signal} to npm ${command.slice(0, -1).join(' ')} while it compiles: the compiler ends too, nothing builds on in the background`, { skip: process.platform === 'linux' ? false : 'reads /proc' }, async (t) => {
  // a copy of the sources, so that the build it starts and stops writes nowhere near the dist/ other tests run
  const dir = realpathSync(tempDir(t, 'pg-prestart-'))
  for (const name of ['package.json', 'tsconfig.json', 'tsconfig.build.json']) cpSync(join(ROOT, name), join(dir, name))
  for (const name of ['src', 'plugins', 'schemas', 'bench']) cpSync(join(ROOT, name), join(dir, name), { recursive: true })
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  t.teardown(() => { for (const pid of processesIn(dir)) { try { process.kill(pid, 'SIGKILL') } catch {} } })
  // npm as a user runs it, without tap's NODE_OPTIONS (@tapjs/processinfo, which tap puts back into every child's
  // environment): its SIGTERM handler in the compiler waits for the synchronous compile to end, where a user's has none
  const run = startCommand(t, 'env', ['-u', 'NODE_OPTIONS', 'npm', ...command], {}, dir)
  // the compiler itself (node …/typescript/bin/tsc), not prestart's node -e, whose text names it too: a signal before that
  // has started may come before it watches npm
  const compiling = () => processesIn(dir).some((pid) => { try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[1]?.endsWith('/tsc') === true } catch { return false } })
  await until(() => compiling() || run.child.exitCode !== null, 'the prestart build to start', START_MS)
  t.equal(run.child.exitCode, null, 'npm is running the build')
  run.child.kill(signal)
  const exit = await run.exitWithin(HUNG_MS)
  t.ok(exit, 'npm ended')
  // the build takes some 15 s: before, the compiler (under a shell and a second npm that npm's SIGTERM never reached) went on alone
  // 6 s: well short of the build, and room for a loaded machine to deliver the signal (a leftover seen once at 3 s)
  await until(() => processesIn(dir).length === 0, 'every process of the build to end', 6000).then(
    () => t.pass('no process left'),
    () => t.fail(`left running: ${processesIn(dir).map((pid) => {
      // its state and parent say whether it was orphaned (parent 1, running) or is dying (Z) when seen
      try { return `${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')} (stat: ${readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ').slice(0, 2).join(' ') ?? '?'})` } catch { return String(pid) }
    }).join('; ')}`))
})
}

t.test('SIGTERM while a station command waits for its ACK past the grace period: the client gets a 504 saying so, not a connection reset', async (t) => {
  const { run, answer } = await commandAwaitingAck(t)
  run.child.kill('SIGTERM')
  const res = await answer
  // before: the connection was cut with the others when the grace period ended ("other side closed")
  t.equal(res.status, 504, JSON.stringify(res.body))
  t.match(res.body, { code: 'CONTROLLER_TIMEOUT', message: /shutting down.*LIGHT.*may have carried it out/ })
  const exit = await run.exitWithin(HUNG_MS)
  t.equal(exit?.code, 0, 'a requested stop: exit 0')
  // before: a warning 'grace period over: 0 connection(s) still open cut', where nothing was cut
  const over = jsonLines(run.out()).filter((l) => /^grace period over/.test(l.msg))
  t.match(over, [{ level: 30, commands: 1, connections: 0, graceMs: GRACE_MS, msg: 'grace period over: 1 station command(s) still waiting for an ACK answered 504, no connection cut' }])
})
