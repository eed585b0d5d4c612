// How picking-gateway serve stops during start-up (waiting for an unreachable SQL Server, for another process's
// lock on the SQLite file), a SQLite file that is not there, and npm start, build and bench ended by SIGTERM or
// SIGHUP: no process left running. Split from server-process.test.ts, which took 90 to 100 s on a busy machine.
import { once } from 'node:events'
import { cpSync, existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t, { type Test } from 'tap'
import { HUNG_MS, LISTENING, START_MS, gatewaySetup, jsonLines, listening, startCli, startCommand, type Run } from './helpers/process.js'
import { tempDir } from './helpers/temp.js'
import { until } from './helpers/wait.js'

/**
 * A "SQL Server" that accepts connections and never answers (the driver waits for its connect timeout), and a
 * gateway starting against it (`server` and `database` settings over gatewaySetup's), returned once the driver has
 * connected: the start-up is under way.
 */
async function startingAgainstSilentSqlServer (t: Test, server: Record<string, unknown> = {}, database: Record<string, unknown> = {}): Promise<Run> {
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
  const { env, dir } = await gatewaySetup(t, server)
  const file = join(dir, 'config.json')
  const config = JSON.parse(readFileSync(file, 'utf8'))
  writeFileSync(file, JSON.stringify({ ...config, database: { ...config.database, ...database } }))
  const dbPort = (silent.address() as AddressInfo).port
  const run = startCli(t, ['serve'], { ...env, DATABASE_URL: `mssql://gw:pw@127.0.0.1:${dbPort}/Picking` })
  // the driver's connection: the start-up is under way (buildApp checks the mapping)
  await until(() => reached || run.child.exitCode !== null, 'the gateway to connect to the database', 30000)
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(run.child.exitCode, null, 'still starting')
  return run
}

t.test('SIGTERM while start-up waits for an unreachable SQL Server: start-up stops, exit 0', async (t) => {
  // a grace period (1 s) shorter than the connect attempt (5 s), the other order than the next test's
  const grace = 1000
  const run = await startingAgainstSilentSqlServer(t, { closeGraceMs: grace })
  const sent = Date.now()
  run.child.kill('SIGTERM')
  const exit = await run.exitWithin(HUNG_MS)
  t.ok(exit, 'exited')
  if (!exit) return
  t.equal(exit.signal, null, 'not killed by the signal (before: handlers installed only once the app was built)')
  t.equal(exit.code, 0)
  // the pool closes once the driver's connect attempt (5 s) gives up, within the grace period and a little
  t.ok(exit.at - sent < grace + 2000, `ended ${exit.at - sent} ms after SIGTERM`)
  t.comment(`SIGTERM during start-up: exit ${exit.at - sent} ms after it`)
  t.match(run.err(), 'stopped during start-up: SIGTERM')
  t.notMatch(run.out(), LISTENING)
})

t.test('SIGTERM while start-up waits for an unreachable SQL Server, with a grace period longer than the connect attempt: no "database unavailable at start" warning after the stop', async (t) => {
  // the defaults' order (grace 10 s, connect 5 s), shorter (5 s, 3 s): the stop waits for the driver to give up its attempt
  const run = await startingAgainstSilentSqlServer(t, { closeGraceMs: 5000 }, { connectTimeoutMs: 3000 })
  run.child.kill('SIGTERM')
  const exit = await run.exitWithin(5000 + 7000)
  t.ok(exit, 'exited')
  if (!exit) return
  t.equal(exit.code, 0)
  t.match(run.err(), 'stopped during start-up: SIGTERM')
  const lines = jsonLines(run.out())
  t.ok(lines.some((l) => l.msg === 'stopped during start-up'))
  t.notOk(lines.some((l) => String(l.msg).startsWith('database unavailable at start')),
    'the pool the stop closed is no outage (before: once the attempt gave up, a warning that requests answer 503 until the database is back)')
})

/**
 * A gateway starting (gatewaySetup) on a SQLite file that the picking system, in this process, holds locked in the middle
 * of a write, on a file in rollback-journal mode: switching it to WAL, which the gateway does as it opens it, waits for
 * the lock. Returned once the gateway says that it waits for the lock.
 */
async function startingOnLockedFile (t: Test): Promise<{ run: Run, other: BetterSqlite3.Database, file: string }> {
  const { env, dir } = await gatewaySetup(t)
  const file = join(dir, 'g.db')
  const other = new BetterSqlite3(file)
  t.teardown(() => { other.close() })
  other.pragma('journal_mode = DELETE')
  other.exec('BEGIN EXCLUSIVE')
  other.exec('UPDATE materials SET name = name')
  const run = startCli(t, ['serve'], env)
  const waiting = () => jsonLines(run.out()).some((l) => l.msg === `the SQLite database file '${file}' is locked by another process: waiting up to 5 s for it`)
  await until(() => waiting() || run.child.exitCode !== null, 'the gateway to find the database file locked', START_MS)
  t.equal(run.child.exitCode, null, `still starting, waiting for the lock: ${run.err()}`)
  return { run, other, file }
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`${signal} while start-up waits for another process's lock on the SQLite file: start-up stops at once, exit 0`, async (t) => {
    const { run, other } = await startingOnLockedFile(t)
    const sent = Date.now()
    run.child.kill(signal)
    const exit = await run.exitWithin(HUNG_MS)
    t.ok(exit, 'exited')
    if (!exit) return
    t.equal(exit.code, 0, `a stop, not a failure (before: exit 1, "The database is busy"): ${run.err()}`)
    // the lock is never released here: the stop ends the wait, which runs on timers (before: only once SQLite's own 5 s wait inside the driver was over)
    t.ok(other.inTransaction, 'ended while the lock was still held')
    t.comment(`${signal} while waiting for the lock: exit ${exit.at - sent} ms after it`)
    t.match(run.err(), `stopped during start-up: ${signal}`)
    t.notMatch(run.err(), 'The database is busy')
    t.notMatch(run.err(), 'locked by another process')
    t.notMatch(run.out(), LISTENING)
  })
}

t.test('another process\'s lock on the SQLite file released while start-up waits for it: the gateway starts', async (t) => {
  const { run, other, file } = await startingOnLockedFile(t)
  other.exec('COMMIT')
  const port = await listening(run)
  t.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200, 'it serves')
  const reader = new BetterSqlite3(file, { readonly: true })
  t.equal(reader.pragma('journal_mode', { simple: true }), 'wal', 'the file switched to WAL once the lock was released')
  reader.close()
  run.child.kill('SIGTERM')
  t.equal((await run.exitWithin(HUNG_MS))?.code, 0)
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
