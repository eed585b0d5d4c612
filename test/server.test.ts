// The gateway as a process and as a server: signals, exit codes, timeouts, TLS, faults, logs.
import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, fstatSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { request as httpsRequest } from 'node:https'
import { connect, type AddressInfo } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import t, { type Test } from 'tap'
import { buildApp } from '../src/app.js'
import { main } from '../src/commands.js'
import { validateConfig } from '../src/config.js'
import { DatabaseUnavailableError } from '../src/db/errors.js'
import { openDatabase } from '../src/db/index.js'
import type { Database } from '../src/db/types.js'
import { loggerOptions, redactUrl, scrub, toJournal, withSyslogPriority } from '../src/logger.js'
import { ADMIN_PASSWORD, build } from './helpers/build.js'
import { until } from './helpers/wait.js'
import { tempDir } from './helpers/temp.js'
import { nodeArgs } from './helpers/built.js'

const SECRET = 'k7Jq2vX9pL4mN8rT1wY6zB3cF5hD0gSa'

/** The CLI as a process, killed at the end of the test if it still runs: a test that fails midway leaves no gateway behind. */
function spawnCli (t: Test, args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [...nodeArgs('src/cli.ts'), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c })
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c })
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>
  return { child, exited, out: () => stdout, err: () => stderr }
}


t.test('SIGTERM lets requests in flight finish and exits 0', async (t) => {
  const dir = tempDir(t, 'pg-srv-')
  const config = join(dir, 'config.json')
  // Expensive hashing makes a login last long enough to be in flight when the signal comes.
  writeFileSync(config, JSON.stringify({
    // no overload check: a busy machine's event-loop delay at start would answer the login 503
    server: { port: 0, maxEventLoopDelayMs: 0 },
    database: { url: `sqlite:${join(dir, 'g.db')}` },
    auth: { jwtSecret: SECRET, argon2: { memoryCost: 131072, timeCost: 6, parallelism: 1 } },
    hardware: { enabled: false }
  }))
  const env = { PICKING_GATEWAY_CONFIG: config, PICKING_GATEWAY_ADMIN_PASSWORD: ADMIN_PASSWORD }
  t.equal(await main(['db', 'init'], { out: () => {}, err: () => {}, readStdin: async () => '', env }), 0)

  const server = spawnCli(t, ['serve'], env)
  await until(() => /Server listening at http:\/\/127.0.0.1:(\d+)/.test(server.out()), 'listening', 30000)
  const port = Number(/Server listening at http:\/\/127.0.0.1:(\d+)/.exec(server.out())![1])
  const started = Date.now()
  const login = fetch(`http://127.0.0.1:${port}/api/users/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD })
  })
  // in flight once its hash runs: the process's CPU time climbs (a fixed wait lost the race on a busy machine)
  const cpu = (): number => { const f = readFileSync(`/proc/${server.child.pid}/stat`, 'utf8').split(') ')[1].split(' '); return Number(f[11]) + Number(f[12]) }
  const idle = cpu()
  await until(() => cpu() - idle >= 20, 'the login\'s password check running (0.2 s of CPU)', 15000)
  server.child.kill('SIGTERM')
  const res = await login
  t.equal(res.status, 200, 'the login in flight completed')
  t.equal(((await res.json()) as { login: boolean }).login, true)
  const [code, signal] = await server.exited
  t.equal(code, 0, 'exit code 0')
  t.equal(signal, null)
  t.match(server.out(), /closing: no new connections/)
  t.ok(Date.now() - started < 15000)
})

t.test('configuration errors exit 78 and name every key', async (t) => {
  const dir = tempDir(t, 'pg-srv-')
  const config = join(dir, 'config.json')
  writeFileSync(config, JSON.stringify({ server: { port: 'http' }, database: { url: 'oracle://x' }, auth: { jwtSecret: 'changeme' } }))
  const run = spawnCli(t, ['serve'], { PICKING_GATEWAY_CONFIG: config })
  const [code] = await run.exited
  t.equal(code, 78)
  t.match(run.err(), /server.port: expected integer, got "http"/)
  t.match(run.err(), /auth.jwtSecret: expected at least 32 bytes/)
  t.notMatch(run.err(), /changeme/)
})

t.test('slow clients are cut off', async (t) => {
  const ctx = await build(t, { server: { requestTimeoutMs: 1000, headersTimeoutMs: 800 } })
  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = ctx.app.server.address() as AddressInfo
  const cutOff = async (start: string, drip: string) => {
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    await once(socket, 'connect')
    socket.write(start)
    const drip1 = setInterval(() => { if (!socket.destroyed) socket.write(drip) }, 200)
    const t0 = Date.now()
    await Promise.race([new Promise((resolve) => socket.on('close', resolve)), new Promise((resolve) => setTimeout(resolve, 8000))])
    clearInterval(drip1)
    const closed = socket.destroyed || socket.readableEnded
    socket.destroy()
    return { closed, ms: Date.now() - t0 }
  }
  const headers = await cutOff('GET /health HTTP/1.1\r\nHost: x\r\n', 'X-a: b\r\n')
  t.ok(headers.closed, 'headers sent one line at a time are cut off')
  t.ok(headers.ms < 5000, `within ${headers.ms} ms`)
  const body = await cutOff('POST /api/users/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{', ' ')
  t.ok(body.closed, 'a body at 5 bytes per second is cut off')
  t.ok(body.ms < 5000, `within ${body.ms} ms`)
})

t.test('HTTPS with server.tls', async (t) => {
  const dir = tempDir(t, 'pg-tls-')
  const key = join(dir, 'key.pem')
  const cert = join(dir, 'cert.pem')
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' })
  const ctx = await build(t, { server: { tls: { cert, key }, headersTimeoutMs: 800 } })
  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = ctx.app.server.address() as AddressInfo
  const req = httpsRequest({ host: '127.0.0.1', port, path: '/health', rejectUnauthorized: false })
  req.end()
  const [res] = await once(req, 'response')
  let body = ''
  for await (const chunk of res) body += chunk
  t.equal(res.statusCode, 200)
  t.same(JSON.parse(body), { status: 'ok' })
  // headers sent one line at a time: cut off after server.headersTimeoutMs over HTTPS too (before: Node's 60 s)
  const slow = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false })
  slow.on('error', () => {})
  t.teardown(() => { slow.destroy() })
  await once(slow, 'secureConnect')
  let answer = ''
  slow.setEncoding('latin1').on('data', (c: string) => { answer += c })
  slow.write('GET /health HTTP/1.1\r\nHost: x\r\n')
  const drip = setInterval(() => { if (!slow.destroyed) slow.write('X-a: b\r\n') }, 200)
  const t0 = Date.now()
  await Promise.race([once(slow, 'close'), new Promise((resolve) => setTimeout(resolve, 8000))])
  clearInterval(drip)
  t.ok(slow.destroyed || slow.readableEnded, `headers sent one line at a time are cut off (${Date.now() - t0} ms)`)
  t.ok(Date.now() - t0 < 5000, 'within a few seconds')
  t.match(answer, /^HTTP\/1\.1 408 /)
})

/** A database that can be switched off, as when SQL Server goes away. */
function switchable (db: Database): Database & { down: boolean } {
  const flaky = {
    down: false,
    dialect: db.dialect,
    guard <T> (fn: () => Promise<T>): Promise<T> { return flaky.down ? Promise.reject(new DatabaseUnavailableError()) : fn() },
    query: (stmt: Parameters<Database['query']>[0]) => flaky.guard(() => db.query(stmt)),
    execute: (stmt: Parameters<Database['execute']>[0]) => flaky.guard(() => db.execute(stmt)),
    transaction: <T>(fn: (tx: Parameters<Parameters<Database['transaction']>[0]>[0]) => Promise<T>) => flaky.guard(() => db.transaction(fn)),
    ping: () => flaky.guard(() => db.ping()),
    columns: (m: Parameters<Database['columns']>[0]) => flaky.guard(() => db.columns(m)),
    changeMark: () => flaky.down ? undefined : db.changeMark(),
    close: () => db.close()
  }
  return flaky
}

t.test('database outage: readiness and requests answer 503, and recover by themselves', async (t) => {
  const ctx = await build(t)
  const flaky = switchable(ctx.db)
  // no overload check, as build() has none: on a busy machine this process lagged past its 1 s and answered OVERLOADED
  const config = validateConfig({ database: ctx.config.database, auth: { jwtSecret: SECRET, argon2: ctx.config.auth.argon2 }, logging: { level: 'silent' }, server: { maxEventLoopDelayMs: 0 } })
  const app = await buildApp(config, { db: flaky })
  t.teardown(() => app.close())
  const login = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })
  const headers = { authorization: `Bearer ${login.json().accessToken}` }

  const ready = await app.inject({ method: 'GET', url: '/health/ready' })
  t.equal(ready.statusCode, 200)
  t.match(ready.json(), { status: 'ready', database: { ok: true, latencyMs: Number } })

  flaky.down = true
  const notReady = await app.inject({ method: 'GET', url: '/health/ready' })
  t.equal(notReady.statusCode, 503)
  t.match(notReady.json(), { status: 'unavailable', database: { ok: false } })
  t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200, 'liveness does not depend on the database')
  const list = await app.inject({ method: 'GET', url: '/api/materials', headers })
  t.equal(list.statusCode, 503)
  t.match(list.json(), { code: 'DATABASE_UNAVAILABLE', error: 'Service Unavailable' })
  t.ok(list.headers['retry-after'])
  const create = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'X', name: 'x' } })
  t.equal(create.statusCode, 503)

  flaky.down = false
  t.equal((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/api/materials', headers })).statusCode, 200)
})

t.test('a database that is down at start: the gateway starts, answers 503, and checks the mapping once it is back', async (t) => {
  const ctx = await build(t)
  const base = { auth: { jwtSecret: SECRET, argon2: ctx.config.auth.argon2 }, logging: { level: 'silent' as const }, server: { maxEventLoopDelayMs: 0 } }

  const flaky = switchable(ctx.db)
  flaky.down = true
  const app = await buildApp(validateConfig({ ...base, database: { ...ctx.config.database, recheckMs: 50 } }), { db: flaky })
  t.teardown(() => app.close())
  t.equal((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 503)
  t.equal(app.repos.materials.storage.field('modifiedAt').nullable, true, 'nullability unknown: every field treated as nullable')
  flaky.down = false
  await until(() => !app.repos.materials.storage.field('modifiedAt').nullable, 'columns read after the database came back', 5000)
  t.equal((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200)

  // The same, with a mapping that turns out not to fit once the database is reachable.
  const stations = { table: 'missing_stations', columns: Object.fromEntries(Object.keys(ctx.app.repos.stations.def.fields).map((f) => [f, f])) }
  const late = switchable(ctx.db)
  late.down = true
  const wrong = await buildApp(validateConfig({ ...base, database: { ...ctx.config.database, recheckMs: 50 }, mapping: { stations } }), { db: late })
  t.teardown(() => wrong.close())
  late.down = false
  let ready = await wrong.inject({ method: 'GET', url: '/health/ready' })
  const end = Date.now() + 5000
  while (ready.statusCode === 200 || (ready.json().database.error === undefined && Date.now() < end)) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    ready = await wrong.inject({ method: 'GET', url: '/health/ready' })
  }
  t.equal(ready.statusCode, 503)
  t.match(ready.json().database.error, /^The database does not match the configured mapping; the log names what differs/)
  t.notMatch(ready.body, /missing_stations/, 'public readiness names no table; the log does')
})

t.test('a SQLite database closed under the start-up (a stop during its mapping check): the build fails as stopped, no "database unavailable at start" warning', async (t) => {
  const ctx = await build(t)
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _enc, cb) { lines.push(String(chunk)); cb() } })
  const db = openDatabase(ctx.config.database.url, { create: false, connectTimeoutMs: 5000, requestTimeoutMs: 15000, logger: { info () {}, warn () {}, error () {} } })
  const config = validateConfig({ database: ctx.config.database, auth: { jwtSecret: SECRET, argon2: ctx.config.auth.argon2 }, server: { maxEventLoopDelayMs: 0 } })
  const building = buildApp(config, { db, logger: pino(loggerOptions('info'), stream) })
  t.teardown(() => building.then((app) => app.close(), () => {}))
  // serve closes the database at a signal while the app is still being built
  await db.close()
  await t.rejects(building, { name: 'DatabaseClosedError' }, 'before: the build went on, retrying a database the stop had closed')
  const warned = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => String(line.msg).startsWith('database unavailable at start'))
  t.same(warned, [], 'no outage reported for the stop (before: a warning with the stack of "The database is closed" after "stopped during start-up")')
})

t.test("a SQL Server down at start whose clock is behind: once it is back, serverTime is set back at once, not from the minute's first reading", async (t) => {
  const ctx = await build(t)
  const BEHIND = 5000
  const flaky = switchable(ctx.db) as ReturnType<typeof switchable> & { clock: () => Promise<number> }
  // SQL Server's clock (SQLite has none), five seconds behind this host's, unreadable while the server is down
  flaky.clock = async () => { if (flaky.down) throw new DatabaseUnavailableError(); return Date.now() - BEHIND }
  flaky.down = true
  const config = validateConfig({ database: { ...ctx.config.database, recheckMs: 50 }, auth: { jwtSecret: SECRET, argon2: ctx.config.auth.argon2 }, logging: { level: 'silent' }, server: { maxEventLoopDelayMs: 0 } })
  const app = await buildApp(config, { db: flaky })
  t.teardown(() => app.close())
  flaky.down = false
  await until(() => !app.repos.materials.storage.field('modifiedAt').nullable, 'columns read after the database came back', 5000)
  const login = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })
  const before = Date.now()
  const page = await app.inject({ method: 'GET', url: '/api/materials?limit=1', headers: { authorization: `Bearer ${login.json().accessToken}` } })
  t.equal(page.statusCode, 200)
  const since = page.json().meta.serverTime as string
  // before: the gateway's own clock (less a second) until the clock was first read, up to a minute after start
  t.ok(Date.parse(since) <= before - BEHIND, `serverTime ${since} lies before the database server's clock (${new Date(before - BEHIND).toISOString()})`)
})

t.test('overload protection answers 503 with Retry-After; liveness stays 200', async (t) => {
  const ctx = await build(t, { server: { maxHeapUsedRatio: 0.000001 } })
  const headers = ctx.auth(ctx.adminToken)
  let res = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers })
  const end = Date.now() + 5000
  while (res.statusCode !== 503 && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    res = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers })
  }
  t.equal(res.statusCode, 503)
  t.equal(res.json().code, 'OVERLOADED')
  t.equal(res.headers['retry-after'], '10')
  // readiness says so in the error body (it failed to serialize against the readiness schema: a 500)
  const ready = await ctx.app.inject({ method: 'GET', url: '/health/ready' })
  t.equal(ready.statusCode, 503)
  t.same(ready.json(), { statusCode: 503, code: 'OVERLOADED', error: 'Service Unavailable', message: 'The gateway is overloaded; try again shortly' })
  t.equal(ready.headers['retry-after'], '10')
  // a busy process is alive: a supervisor restarting it on a liveness 503 would only lose its work
  const live = await ctx.app.inject({ method: 'GET', url: '/health' })
  t.equal(live.statusCode, 200)
  t.same(live.json(), { status: 'ok' })
})

t.test('an overload 503 is logged with its code and message, without a stack: under overload a stack per refused request only adds to the load', async (t) => {
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _enc, cb) { lines.push(String(chunk)); cb() } })
  const ctx = await build(t)
  const config = validateConfig({ database: ctx.config.database, auth: { jwtSecret: SECRET, argon2: ctx.config.auth.argon2 }, server: { maxHeapUsedRatio: 0.000001 } })
  const app = await buildApp(config, { db: ctx.db, logger: pino(loggerOptions('info'), stream) })
  t.teardown(() => app.close())
  let res = await app.inject({ method: 'GET', url: '/health/ready' })
  const end = Date.now() + 5000
  while (res.statusCode !== 503 && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    res = await app.inject({ method: 'GET', url: '/health/ready' })
  }
  t.equal(res.json().code, 'OVERLOADED')
  const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.code === 'OVERLOADED')
  t.ok(logged.length > 0, 'logged')
  for (const line of logged) {
    t.match(line, { level: 40, msg: 'The gateway is overloaded; try again shortly' })
    t.equal(line.err, undefined, 'no error object with its stack (before: a stack trace per refused request)')
  }
})

t.test('no secret reaches the log at any depth', async (t) => {
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _enc, cb) { lines.push(String(chunk)); cb() } })
  const logger = pino(loggerOptions('trace'), stream)
  const ctx = await build(t)
  // without the overload guard, as build() has it: on a loaded machine a 503 left a token undefined
  const config = validateConfig({ database: ctx.config.database, auth: { jwtSecret: SECRET, argon2: ctx.config.auth.argon2 }, server: { maxEventLoopDelayMs: 0 } })
  const app = await buildApp(config, { db: ctx.db, logger })
  t.teardown(() => app.close())
  const erp = await ctx.app.inject({ method: 'POST', url: '/api/users', headers: ctx.auth(ctx.adminToken), payload: { username: 'erp', password: 'erp-secret-password', type: 'application' } })
  t.equal(erp.statusCode, 201)

  const login = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'erp', password: 'erp-secret-password' } })
  const { accessToken, refreshToken } = login.json()
  const refreshed = (await app.inject({ method: 'POST', url: '/api/users/refresh', headers: { authorization: `Bearer ${refreshToken}` } })).json().accessToken
  const appToken = (await app.inject({ method: 'POST', url: '/api/users/application-token', headers: { authorization: `Bearer ${refreshToken}` } })).json().token
  await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'erp', password: 'wrong-password-1' } })
  await app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${appToken}x` } })
  // credentials put in a query string by mistake: refused, and logged without their values
  await app.inject({ method: 'POST', url: '/api/users/login?password=query-secret-1', payload: { username: 'erp', password: 'x' } })
  await app.inject({ method: 'GET', url: '/api/materials?Access_Token=query-secret-2&PASS%77ORD=query-secret-3&new-password=query-secret-4', headers: { authorization: `Bearer ${accessToken}` } })
  app.log.info({ deep: { a: { b: { password: 'erp-secret-password', list: [{ token: accessToken }] } } }, note: `Bearer ${refreshed}` }, 'a careless log line')
  app.log.error({ err: new Error(`failed with ${accessToken}`) }, 'an error that quotes a token')

  const log = lines.join('')
  t.ok(lines.length >= 7, `captured ${lines.length} log lines`)
  t.match(log, /"reqId"/)
  t.match(log, /"reqId":"req-\d+","method":"POST","url":"\/api\/users\/login","route":"\/api\/users\/login","statusCode":200,"responseTimeMs":[\d.]+/, 'one line per request: id, method, route, status, time')
  for (const [name, secret] of Object.entries({ accessToken, refreshToken, refreshed, appToken, password: 'erp-secret-password', wrong: 'wrong-password-1', jwtSecret: SECRET, query1: 'query-secret-1', query2: 'query-secret-2', query3: 'query-secret-3', query4: 'query-secret-4' })) {
    t.notOk(log.includes(secret), `${name} is not in the log`)
    t.notOk(log.includes(secret.split('.')[2] ?? secret), `nor its signature (${name})`)
  }
  t.match(log, /\[redacted\]/)
  t.match(log, /"url":"\/api\/users\/login\?password=\[redacted\]"/, 'the parameter stays, its value goes')
  t.same(redactUrl('/api/events?station=1&ticket=abc&x=1&api_key=k&secret=s&q=password'), '/api/events?station=1&ticket=[redacted]&x=1&api_key=[redacted]&secret=[redacted]&q=password')
  // other spellings of a password, and bracketed names (before: their values were logged)
  t.same(redactUrl('/api/users/login?username=a&pwd=1&Passwd=2&pass=3&password[]=4&user%5Bpassword%5D=5&passport=6&name[0]=7'),
    '/api/users/login?username=a&pwd=[redacted]&Passwd=[redacted]&pass=[redacted]&password[]=[redacted]&user%5Bpassword%5D=[redacted]&passport=6&name[0]=7')
  // other names for a credential a script may use (before: logged as sent)
  t.same(redactUrl('/api/materials?jwt=a&passphrase=b&auth=c&api-token=d&private_key=e&author=f&key=g'),
    '/api/materials?jwt=[redacted]&passphrase=[redacted]&auth=[redacted]&api-token=[redacted]&private_key=[redacted]&author=f&key=g')
  t.same(scrub({ Authorization: 'Bearer abc', nested: [{ refreshToken: 'x' }], ok: 1 }), { Authorization: '[redacted]', nested: [{ refreshToken: '[redacted]' }], ok: 1 })
  const given = { url: '/api/x?q=Bearer abc', list: ['a', 'eyJa.bcd.efg'], deep: { password: 'p', n: 1 }, fine: 'text' }
  const before = JSON.stringify(given)
  t.same(scrub(given), { url: '/api/x?q=[redacted]', list: ['a', '[redacted]'], deep: { password: '[redacted]', n: 1 }, fine: 'text' })
  t.equal(JSON.stringify(given), before, 'the caller\'s object is left as it was')
  t.same(scrub('Bearer abc and Bearer def'), '[redacted] and [redacted]', 'every occurrence, call after call')
  t.same(scrub('Bearer abc and Bearer def'), '[redacted] and [redacted]')
  // a password hash a driver message quotes (SQL Server 2628's truncated value), also in an error's cause, which pino writes too
  const hash = '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo'
  t.same(scrub(`Truncated value: '${hash}'.`), "Truncated value: '[redacted]'.")
  const inner = new Error(`String or binary data would be truncated in column 'PwHash'. Truncated value: '${hash}'.`)
  const outer = new Error('The database refused the values', { cause: new Error('wrapped', { cause: inner }) })
  scrub({ err: outer })
  t.notMatch(inner.message, /argon2/, 'the cause\'s message is scrubbed')
  t.match(inner.message, /Truncated value: '\[redacted\]'/)
  t.same(scrub('/x?t=eyJa.bcd.efg&u=1 "eyJh.i.j"'), '/x?t=[redacted]&u=1 "[redacted]"', 'a JWT after = or a quote')
  // a word of many "eyJ" without dots: one candidate, not one per "eyJ" (each used to rescan the rest: quadratic)
  const crafted = `/x?q=${'eyJ'.repeat(20000)}`
  t.equal(scrub(crafted), crafted, 'nothing in it is a token')
  t.same(scrub(`${'eyJ'.repeat(3)}.a.b`), '[redacted]', 'the word is one token when it has the dots')
  // right after a letter, digit, _ or - (percent-encoding in a URL puts one there): still a token
  const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl'
  for (const [given, wanted] of [
    [`/m?q=Bearer%20${jwt}`, '/m?q=Bearer%20[redacted]'],
    [`/m?q=%22${jwt}%22`, '/m?q=%22[redacted]%22'],
    [`/m?q=x_${jwt}`, '/m?q=x_[redacted]'],
    [`/m?name=%5Bfoo%5D${jwt}`, '/m?name=%5Bfoo%5D[redacted]'],
    [`a-${jwt} and ${jwt}.`, 'a-[redacted] and [redacted].'],
    [`eyJno.dots eyJa..b eyJa.b ${jwt}`, 'eyJno.dots eyJa..b eyJa.b [redacted]']
  ]) t.equal(scrub(given), wanted, given)
  t.equal(scrub(`${'eyJ'.repeat(5000)}.${'x'.repeat(10)}.s`), '[redacted]')
  const clean = { method: 'GET', url: '/api/materials', statusCode: 200, nested: { a: [1, 'b'] } }
  t.equal(scrub(clean), clean, 'an object with nothing to scrub is not copied')
})

t.test("journald: each line carries its syslog priority when standard output is journald's stream", async (t) => {
  t.equal(withSyslogPriority('{"level":50,"msg":"x"}'), '<3>{"level":50,"msg":"x"}', 'error')
  t.equal(withSyslogPriority('{"level":40,"msg":"x"}'), '<4>{"level":40,"msg":"x"}', 'warning: journalctl -p warning finds it')
  t.equal(withSyslogPriority('{"level":30,"msg":"x"}'), '<6>{"level":30,"msg":"x"}')
  t.equal(withSyslogPriority('{"level":20}'), '<7>{"level":20}')
  t.equal(withSyslogPriority('{"level":60}'), '<2>{"level":60}')
  t.equal(withSyslogPriority('not json'), '<6>not json')
  const dir = tempDir(t, 'pg-journal-')
  const fd = openSync(join(dir, 'stream'), 'w')
  t.teardown(() => closeSync(fd))
  const stat = fstatSync(fd)
  t.ok(toJournal(`${stat.dev}:${stat.ino}`, fd), 'JOURNAL_STREAM naming this stream')
  t.notOk(toJournal(`${stat.dev}:${stat.ino + 1}`, fd), 'another stream (the unit redirected its output)')
  t.notOk(toJournal(undefined, fd), 'no journald')
  t.notOk(toJournal('garbage', fd))
})
