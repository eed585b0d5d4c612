// npm run bench's helper processes end: when ready and told to stop, and when they never get ready.
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { fetchWithin, fillSqliteInWorker, pacedRound, startHelper, startServer, unitFileEnvironment, type Server } from '../bench/harness.js'
import { openDatabase } from '../src/db/index.js'
import { gatewaySetup, HUNG_MS, startCommand, START_MS, type Run } from './helpers/process.js'
import { moduleUrl, runnable, scriptLoaders } from './helpers/built.js'
import { tempDir } from './helpers/temp.js'
import { until } from './helpers/wait.js'

// This file starts five processes under the TypeScript loader (four benches, one gateway): at a load
// of 15 on 2 cores they took 20 s to 30 s each (the gateway more than START_MS, so it is given three
// times that), the file 154 s to 232 s, past .taprc's 120 s for a file: tap ended it midway, a failure.
t.setTimeout(12 * START_MS)

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  // ended, and not yet reaped by whoever took it over when its parent went: gone as well
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] !== 'Z'
  } catch {
    return true
  }
}

/** Whether the process `pid` ends within `ms` (polled: it is no child of this one); or, given a list of processes, those still running after `ms`. */
async function gone (pid: number, ms: number): Promise<boolean>
async function gone (pids: () => string[], ms: number): Promise<string[]>
async function gone (pid: number | (() => string[]), ms: number): Promise<boolean | string[]> {
  const left = typeof pid === 'number' ? () => alive(pid) ? [String(pid)] : [] : pid
  try {
    await until(() => left().length === 0, `process ${String(left())} to end`, ms)
  } catch {}
  return typeof pid === 'number' ? left().length === 0 : left()
}

const HARNESS = moduleUrl('bench/harness.ts')

/** A bench in `dir` (bench.mjs) that installs the harness's cleanup, starts one server as `s` (`startServer(<serverArgs>)`), then runs `then`; its path. */
function benchScript (dir: string, serverArgs: string, then: string): string {
  const script = join(dir, 'bench.mjs')
  writeFileSync(script, `import { installCleanup, startServer } from ${JSON.stringify(HARNESS)}
installCleanup()
const s = await startServer(${serverArgs})
${then}
`)
  return script
}

/** A server in `dir` that answers /health (anything: ok) and would run forever; the startServer arguments that start it. */
function stubServer (dir: string): string {
  const server = join(dir, 'server.mjs')
  writeFileSync(server, `import { createServer } from 'node:http'\ncreateServer((req, res) => res.end('ok')).listen(Number(process.env.PORT), '127.0.0.1')\n`)
  return `'stub', ${JSON.stringify(server)}, [], {}, ${JSON.stringify(join(dir, 'stub.log'))}`
}

/**
 * Runs a bench in `dir` that starts one server (`startServer(<serverArgs>)`), prints its pid and waits;
 * resolves once it has, with that pid, and fails the test with the bench's error output when it ends
 * without. The bench, and its server where the test has not ended it, are killed when the test ends.
 * It waits for the line, not for a time: the bench gives up at its own start deadline and says why.
 */
async function startBench (t: Test, dir: string, serverArgs: string, env: NodeJS.ProcessEnv): Promise<{ run: Run, serverPid: number }> {
  const script = benchScript(dir, serverArgs, `process.stdout.write(s.pid + '\\n')
setInterval(() => {}, 1000)`)
  const run = startCommand(t, process.execPath, [...scriptLoaders(), script], env)
  let serverPid = 0
  t.teardown(() => { if (serverPid > 0 && alive(serverPid)) process.kill(serverPid, 'SIGKILL') })
  // the bench's own start under the loaders, then its server's start deadline (at most 3 * START_MS here)
  await until(() => run.out().includes('\n') || run.child.exitCode !== null, 'the bench to print its server\'s pid', 4 * START_MS)
  serverPid = Number(run.out().trim())
  if (!(serverPid > 0)) throw new Error(`the bench did not start its server (${run.child.exitCode}): ${run.err()}`)
  return { run, serverPid }
}

t.test('a helper that never prints "ready" is killed at its deadline, and the bench is told why', async (t) => {
  const dir = tempDir(t, 'pg-helper-')
  const script = join(dir, 'stuck.mjs')
  writeFileSync(script, 'setInterval(() => {}, 1000)\n')
  const started = Date.now()
  await t.rejects(startHelper('stuck', script, {}, 1000), { message: 'stuck did not print "ready" within 1 s' })
  t.ok(Date.now() - started < 5000, 'within its deadline')
  // found by its command line, not by a pid it writes: on a busy machine node may not have run a line
  // of it within the second (before, the test then failed reading a pid file that was not there)
  t.ok(existsSync('/proc/self/cmdline'), 'processes can be listed')
  const running = () => readdirSync('/proc').filter((pid) => {
    try {
      return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(script) && alive(Number(pid))
    } catch {
      return false
    }
  })
  t.same(await gone(running, HUNG_MS), [], 'the process is gone')
})

t.test('a helper that gets ready ends when its stdin does, giving its last line', async (t) => {
  const dir = tempDir(t, 'pg-helper-')
  const script = join(dir, 'ok.mjs')
  writeFileSync(script, `process.stdout.write('ready\\n')\nprocess.stdin.resume().on('end', () => process.stdout.write('done 42\\n'))\n`)
  const helper = await startHelper('ok', script, {})
  t.equal(await helper.stop(), 'done 42')
})

t.test('a helper that ends before it is ready fails the start with its exit code', async (t) => {
  const dir = tempDir(t, 'pg-helper-')
  const script = join(dir, 'fails.mjs')
  writeFileSync(script, 'process.exit(3)\n')
  await t.rejects(startHelper('fails', script, {}), { message: 'fails ended while starting (3)' })
})

t.test('the bench ends by SIGTERM, SIGINT or SIGHUP and takes its servers with it', async (t) => {
  for (const [signal, code] of [['SIGTERM', 143], ['SIGINT', 130], ['SIGHUP', 129]] as const) {
    const dir = tempDir(t, 'pg-bench-signal-')
    const bench = await startBench(t, dir, stubServer(dir), {})
    t.ok(alive(bench.serverPid), `${signal}: the bench's server runs (pid ${bench.serverPid})`)
    bench.run.child.kill(signal)
    const { code: exitCode, signal: exitSignal } = await bench.run.exited
    t.same([exitCode, exitSignal], [code, null], `${signal}: the bench exits ${code}, by its handler, not killed by the signal`)
    t.ok(await gone(bench.serverPid, HUNG_MS), `${signal}: its server is gone too (before, SIGHUP left it running)`)
  }
})

t.test('a bench run by npm ends when npm does (a SIGHUP to npm alone, which npm does not pass on), taking its servers with it', async (t) => {
  const dir = tempDir(t, 'pg-bench-parent-')
  const script = benchScript(dir, stubServer(dir), `process.stdout.write(process.pid + ' ' + s.pid + '\\n')
setInterval(() => {}, 1000)`)
  // npm's place: a shell that forks the bench (a command follows it) and then dies without passing anything on
  const npm = startCommand(t, 'sh', ['-c', '"$@"; exit $?', 'sh', process.execPath, ...scriptLoaders(), script], { npm_lifecycle_event: 'bench' })
  await until(() => npm.out().includes('\n') || npm.child.exitCode !== null, 'the bench to print its pids', 4 * START_MS)
  const [benchPid, serverPid] = npm.out().trim().split(' ').map(Number)
  if (!(serverPid > 0)) throw new Error(`the bench did not start its server (${npm.child.exitCode}): ${npm.err()}`)
  t.teardown(() => { for (const pid of [benchPid, serverPid]) if (alive(pid)) process.kill(pid, 'SIGKILL') })
  npm.child.kill('SIGKILL')
  await npm.exited
  t.ok(await gone(benchPid, HUNG_MS), 'the bench ends (before: it ran on, its 7 minutes at full load)')
  t.ok(await gone(serverPid, HUNG_MS), 'its server is gone too')
})

t.test('a bench killed with SIGKILL does not leave its gateway server behind', async (t) => {
  const { dir, env } = await gatewaySetup(t)
  // the real gateway: the compiled one when dist/ is current, else the source with this test's TypeScript loader
  // (the bench starts plain `node <script>` with only the environment it is given): the loaders' --import alone in
  // NODE_OPTIONS, as tap's other flags (coverage, and --test-name-pattern under tap --grep) have no place there or are
  // refused by node there; and the loader's settings (TS_NODE_TRANSPILE_ONLY), without which ts-node type-checks
  // the whole gateway as it loads it, more than twice as slow: past the start deadline on a busy machine
  const loaders = scriptLoaders({ withCoverage: false }).filter((a) => a.startsWith('--import='))
  const settings = Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('TS_NODE_') || name === 'TAP_TYPE_STRIP_ONLY'))
  const gateway = loaders.length === 0 ? env : { ...env, ...settings, NODE_OPTIONS: loaders.join(' ') }
  // as npm run bench does not start it: no npm_lifecycle_event from npm
  const bench = await startBench(t, dir, `'gateway', ${JSON.stringify(runnable('src/cli.ts'))}, ['serve'], ${JSON.stringify(gateway)}, ${JSON.stringify(join(dir, 'gateway.log'))}, ${3 * START_MS}`, { npm_lifecycle_event: undefined })
  t.ok(alive(bench.serverPid), `the bench's gateway runs (pid ${bench.serverPid})`)
  bench.run.child.kill('SIGKILL')
  await bench.run.exited
  t.ok(await gone(bench.serverPid, HUNG_MS), 'the gateway is gone too: it saw its parent go (before, it ran on as an orphan)')
  t.match(readFileSync(join(dir, 'gateway.log'), 'utf8'), /the process that started it \(pid \d+\) is gone/)
})

t.test('a paced round against a server that never answers ends, its requests counted as errors (before: the bench waited forever)', async (t) => {
  // accepts connections and reads requests, answers none: a gateway hung or stopped (SIGSTOP)
  const sockets = new Set<Socket>()
  const silent = createServer((socket) => { sockets.add(socket); socket.resume() })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    silent.close()
  })
  const base = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`
  const server: Server = { name: 'silent', base, pid: -1, log: '', rss: () => undefined, cpuSeconds: () => undefined, stop: async () => {} }
  const started = Date.now()
  const round = pacedRound(server, () => '/api/materials', {}, { rate: 20, seconds: 0.5, connections: 2, expect: 200, timeoutMs: 500 }, { phase: 'p', side: 's', round: '1' })
  let timer: NodeJS.Timeout | undefined
  const result = await Promise.race([round, new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), 10_000) })])
  clearTimeout(timer)
  t.ok(result, `the round ended (${Date.now() - started} ms)`)
  if (result === undefined) return
  t.equal(result.errors, 10, 'each of its 10 requests is one error')
  t.same(result.statuses, {})
  t.equal(result.expectedShare, 0)
})

t.test('npm run bench runs the bench through exec: a SIGTERM npm passes on reaches it, not a shell that dies alone', async (t) => {
  const scripts = (JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
  t.match(scripts.bench, /^exec node dist\/bench\/run\.js$/)
  // its build, in prebench, is npm run build's: a node that npm's signals reach (exec) and that stops the compiler once
  // npm is gone (server-process-startup.test.ts stops it midway)
  t.match(scripts.prebench, /^exec node -e /)
  t.equal(scripts.prebench, scripts.build)
})

t.test('the bench gives the gateway the systemd unit\'s environment, in each of systemd\'s forms', async (t) => {
  t.same(unitFileEnvironment([
    '[Service]',
    'Environment=NODE_ENV=production',
    'Environment="NODE_OPTIONS=--max-old-space-size=1024 --max-semi-space-size=8"',
    'Environment=A=1 "B=two words" C=3',
    '# Environment=COMMENTED=1',
    'Environment=A=4'
  ].join('\n')), { NODE_ENV: 'production', NODE_OPTIONS: '--max-old-space-size=1024 --max-semi-space-size=8', A: '4', B: 'two words', C: '3' })
  const unit = unitFileEnvironment(readFileSync(new URL('../systemd/picking-gateway.service', import.meta.url), 'utf8'))
  t.match(unit.NODE_OPTIONS, /--max-old-space-size=\d+/, 'the unit\'s heap limit reaches the bench')
  t.match(unit.NODE_OPTIONS, /--max-semi-space-size=\d+/, 'and its young-generation size')
})

t.test('a bench whose output pipe closes says so in one line and exits 141, taking its servers with it (before: an EPIPE stack, exit 1)', async (t) => {
  const dir = tempDir(t, 'pg-bench-pipe-')
  // its server's pid on standard error, then a line of results every 50 ms, as the rounds print theirs
  const bench = benchScript(dir, stubServer(dir), `process.stderr.write('pid ' + s.pid + '\\n')
setInterval(() => console.log('a round'), 50)`)
  const child = spawn(process.execPath, [...scriptLoaders(), bench], { stdio: ['ignore', 'pipe', 'pipe'] })
  let err = ''
  child.stderr.setEncoding('utf8').on('data', (c: string) => { err += c })
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('exit', (c, s) => resolve([c, s])))
  let serverPid = 0
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    if (serverPid > 0 && alive(serverPid)) process.kill(serverPid, 'SIGKILL')
  })
  const ready = Date.now() + 30000
  while (!/pid \d+\n/.test(err) && child.exitCode === null && Date.now() < ready) await new Promise((resolve) => setTimeout(resolve, 50))
  serverPid = Number(/pid (\d+)/.exec(err)?.[1])
  t.ok(serverPid > 0 && alive(serverPid), `the bench's server runs (pid ${serverPid})`)
  // the reader goes away, as head -1 does after its line
  await new Promise((resolve) => child.stdout.once('data', resolve))
  child.stdout.destroy()
  let timer: NodeJS.Timeout | undefined
  const result = await Promise.race([exited, new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), 10_000) })])
  clearTimeout(timer)
  t.same(result, [141, null], 'exit 141, as a command of a pipeline whose reader ended')
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(err.replace(/^pid \d+\n/, ''), 'npm run bench: standard output failed (EPIPE): stopping the servers\n', 'one line, no stack')
  const gone = Date.now() + 5000
  while (alive(serverPid) && Date.now() < gone) await new Promise((resolve) => setTimeout(resolve, 50))
  t.notOk(alive(serverPid), 'its server is gone too')
})

t.test('a server that accepts /health and never answers is stopped at the start deadline (before: each poll waited up to 300 s)', async (t) => {
  const dir = tempDir(t, 'pg-bench-hung-')
  // accepts connections and reads requests, answers none: a gateway hung while starting
  const server = join(dir, 'hung.mjs')
  writeFileSync(server, `import { createServer } from 'node:net'\nimport { writeFileSync } from 'node:fs'\nwriteFileSync(${JSON.stringify(join(dir, 'pid'))}, String(process.pid))\ncreateServer((socket) => socket.resume()).listen(Number(process.env.PORT), '127.0.0.1')\n`)
  const started = Date.now()
  let timer: NodeJS.Timeout | undefined
  const start = startServer('hung', server, [], {}, join(dir, 'hung.log'), 1000).then(() => 'started', (err: Error) => err.message)
  const result = await Promise.race([start, new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), 15_000) })])
  clearTimeout(timer)
  t.match(result, /^hung: GET \/health did not answer 200 within 1 s/, `the start failed (${Date.now() - started} ms)`)
  let pid = 0
  try { pid = Number(readFileSync(join(dir, 'pid'), 'utf8')) } catch {}
  t.teardown(() => { if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL') })
  t.ok(pid > 0, 'the server ran')
  const gone = Date.now() + 10_000
  while (alive(pid) && Date.now() < gone) await new Promise((resolve) => setTimeout(resolve, 50))
  t.notOk(alive(pid), 'and is gone')
})

t.test('the bench\'s own requests (login, probes, walk pages) give up on a server that stops answering (before: undici\'s 300 s each)', async (t) => {
  // one socket never answered, another answered with headers and a body that never ends: a gateway hung or stopped (SIGSTOP) midway
  const sockets = new Set<Socket>()
  const silent = createServer((socket) => {
    sockets.add(socket)
    socket.once('data', (chunk) => {
      if (chunk.toString().startsWith('GET /stalls ')) socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"data":[')
    })
  })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    silent.close()
  })
  const base = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`
  for (const [init, path] of [[{ method: 'POST', body: '{}' }, '/api/users/login'], [{}, '/stalls']] as const) {
    const started = Date.now()
    let timer: NodeJS.Timeout | undefined
    const request = fetchWithin(base + path, init, 500).then(() => 'answered', (err: Error) => err.message)
    const result = await Promise.race([request, new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), 10_000) })])
    clearTimeout(timer)
    t.equal(result, `${init.method ?? 'GET'} ${base}${path}: no answer within 0.5 s`, `${path}: it ended, naming the request (${Date.now() - started} ms)`)
  }
  // and every request of bench/run.ts goes through it
  t.notMatch(readFileSync(join(import.meta.dirname, '..', 'bench', 'run.ts'), 'utf8'), /(?<![\w.])fetch\(/, 'run.ts calls no bare fetch')
})

t.test('the bench fills its SQLite file in a worker thread: its own thread stays free for a stop (before: a SIGINT waited for the whole fill, 2 s to 12 s at 100,000 rows)', async (t) => {
  const dir = tempDir(t, 'pg-bench-fill-')
  const file = join(dir, 'master.db')
  const before = performance.eventLoopUtilization()
  await fillSqliteInWorker(file, 'bench-admin-password-1234', 20_000)
  const busy = performance.eventLoopUtilization(before).utilization
  t.ok(busy < 0.5, `this thread was busy ${Math.round(busy * 100)} % of the fill`)
  // closed by the worker: the file alone holds the data, the WAL checkpointed into it
  const db = openDatabase(`sqlite:${file}`, { readonly: true, logger: { info () {}, warn () {}, error () {} } })
  t.teardown(() => db.close())
  t.same(await db.query({ text: 'SELECT COUNT(*) AS n FROM materials', params: [] }), [{ n: 20_000 }], 'every row is there')
  t.same(await db.query({ text: "SELECT COUNT(*) AS n FROM gateway_users WHERE username = 'admin'", params: [] }), [{ n: 1 }], 'and the admin')
  t.match(readFileSync(join(import.meta.dirname, '..', 'bench', 'run.ts'), 'utf8'), /await fillSqliteInWorker\(/, 'bench/run.ts fills its SQLite file so')
  await t.rejects(fillSqliteInWorker(join(dir, 'no-such-dir', 'x.db'), 'bench-admin-password-1234', 10), 'a fill that fails fails the bench')
})
