// Event stream for browsers: single-use tickets instead of an Authorization header, and Last-Event-ID replay.
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import t from 'tap'
import { EVENT_RING } from '../../plugins/hardware.js'
import { redactTicket, StreamTickets } from '../../plugins/routes/events.js'
import { buildApp } from '../../src/app.js'
import { initDatabase } from '../../src/bootstrap.js'
import { mappingsOf, validateConfig } from '../../src/config.js'
import { openDatabase } from '../../src/db/index.js'
import { loggerOptions } from '../../src/logger.js'
import { startSimulator, type Simulator } from '../../src/hardware/index.js'
import { ADMIN_PASSWORD, build, TEST_ARGON2, type TestContext } from '../helpers/build.js'
import { until } from '../helpers/wait.js'

const FAST = { ackTimeout: 150, heartbeatIdle: 200, deadAfter: 600, backoffInitial: 20, backoffMax: 100, stableAfter: 1000, connectTimeout: 500 }

interface Stream {
  res: IncomingMessage
  /** the events in the order they arrived */
  events: Array<{ id: number, type: string, data: Record<string, unknown> }>
  /** every block, comments included, in order */
  blocks: string[]
  close: () => void
}

async function setup (t: Parameters<typeof build>[0]): Promise<{ ctx: TestContext, sim: Simulator, stationId: number, token: string, user: Awaited<ReturnType<TestContext['createUser']>> }> {
  const sim = await startSimulator({ host: '127.0.0.1', controllers: [{ id: 'ctl-1', port: 0 }] })
  t.teardown(() => sim.close())
  const port = sim.controllers.get('ctl-1')!.port
  // overload answers (event loop delay) are not under test here: a loaded machine must not fail these
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port }], timings: FAST }, events: { heartbeatMs: 60000 }, server: { maxEventLoopDelayMs: 0 } })
  const station = await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-1', type: 'ptl', controllerId: 'ctl-1', address: 3 } })
  const user = await ctx.createUser('user')
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  return { ctx, sim, stationId: station.json().id, token: user.accessToken, user }
}

/** Opens /api/events over real HTTP; answers that are not a stream are read whole. */
async function open (ctx: TestContext, query: string, headers: OutgoingHttpHeaders = {}): Promise<Stream & { body: () => Promise<string> }> {
  const { port } = ctx.app.server.address() as AddressInfo
  const req = httpRequest({ host: '127.0.0.1', port, path: `/api/events${query}`, headers })
  req.end()
  const [res] = await once(req, 'response') as [IncomingMessage]
  const stream: Stream = { res, events: [], blocks: [], close: () => req.destroy() }
  let buffer = ''
  let all = ''
  res.setEncoding('utf8')
  res.on('error', () => {})
  res.on('data', (chunk: string) => {
    all += chunk
    buffer += chunk
    const parts = buffer.split('\n\n')
    buffer = parts.pop()!
    for (const block of parts) {
      stream.blocks.push(block)
      const id = /^id: (\d+)$/m.exec(block)?.[1]
      const type = /^event: (.+)$/m.exec(block)?.[1]
      const data = /^data: (.+)$/m.exec(block)?.[1]
      if (id && type && data) stream.events.push({ id: Number(id), type, data: JSON.parse(data) })
    }
  })
  return { ...stream, body: async () => { if (!res.readableEnded) await once(res, 'end'); return all } }
}

const ticketFor = async (ctx: TestContext, token: string): Promise<{ ticket: string, expiresIn: number }> => {
  const res = await ctx.app.inject({ method: 'POST', url: '/api/events/ticket', headers: ctx.auth(token) })
  if (res.statusCode !== 200) throw new Error(`ticket: ${res.statusCode} ${res.body}`)
  return res.json()
}

const fault = (sim: Simulator, addr: number, code: string) => sim.controllers.get('ctl-1')!.emitEvent('FAULT', { addr, code, msg: 'test' })

t.test('a ticket opens one stream, for its user, without an Authorization header', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t)

  const issued = await ctx.app.inject({ method: 'POST', url: '/api/events/ticket', headers: ctx.auth(token) })
  t.equal(issued.statusCode, 200)
  t.equal(issued.headers['cache-control'], 'no-store')
  const { ticket, expiresIn } = issued.json()
  t.equal(expiresIn, 30)
  t.match(ticket, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url')
  t.not((await ticketFor(ctx, token)).ticket, ticket, 'every ticket is new')

  const stream = await open(ctx, `?station=${stationId}&ticket=${ticket}`)
  t.equal(stream.res.statusCode, 200)
  t.match(stream.res.headers['content-type'], /^text\/event-stream/)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  fault(sim, 9, 'OTHER') // no station at address 9: filtered out
  fault(sim, 3, 'F1')
  await until(() => stream.events.length === 1, 'the station event')
  t.match(stream.events[0], { type: 'station.fault', data: { stationId, code: 'F1' } })

  const reused = await open(ctx, `?ticket=${ticket}`)
  t.equal(reused.res.statusCode, 401, 'a ticket opens one connection only')
  t.match(JSON.parse(await reused.body()), { statusCode: 401, code: 'TOKEN_INVALID' })
  t.match(reused.res.headers['www-authenticate'], /^Bearer/)
  stream.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'listener removed')

  const forged = await open(ctx, `?ticket=${Buffer.alloc(32, 7).toString('base64url')}`)
  t.equal(forged.res.statusCode, 401)
  t.equal(JSON.parse(await forged.body()).code, 'TOKEN_INVALID')
  const twice = await ticketFor(ctx, token)
  const doubled = await open(ctx, `?ticket=${twice.ticket}&ticket=${twice.ticket}`)
  t.equal(JSON.parse(await doubled.body()).code, 'TOKEN_INVALID', 'a repeated ticket parameter is refused')
  const none = await open(ctx, '?station=1')
  t.equal(JSON.parse(await none.body()).code, 'TOKEN_MISSING', 'no ticket and no header: as before')

  // Bearer still works, and the application type may read events too.
  const bearer = await open(ctx, '', ctx.auth(token))
  t.equal(bearer.res.statusCode, 200)
  bearer.close()
  const app = await ctx.createUser('application')
  const appStream = await open(ctx, `?ticket=${(await ticketFor(ctx, app.accessToken)).ticket}`)
  t.equal(appStream.res.statusCode, 200)
  appStream.close()
})

t.test('tickets need an access token, expire after 30 s and follow the user\'s revocation', async (t) => {
  const { ctx, token, user } = await setup(t)
  const plain = await ctx.app.inject({ method: 'POST', url: '/api/events/ticket' })
  t.equal(plain.statusCode, 401)
  t.equal(plain.json().code, 'TOKEN_MISSING')
  const refresh = await ctx.app.inject({ method: 'POST', url: '/api/events/ticket', headers: ctx.auth(user.refreshToken) })
  t.equal(refresh.statusCode, 401, 'a refresh token is not an access token')
  t.equal(refresh.json().code, 'TOKEN_INVALID')
  const viaTicket = await ctx.app.inject({ method: 'POST', url: `/api/events/ticket?ticket=${(await ticketFor(ctx, token)).ticket}` })
  t.equal(viaTicket.json().code, 'TOKEN_MISSING', 'a ticket buys no further ticket')

  // Expiry: the clock moves 31 s on.
  const late = await ticketFor(ctx, token)
  const early = await ticketFor(ctx, token)
  const realNow = Date.now
  Date.now = () => realNow() + 29000
  let inTime!: Stream
  let expired!: Awaited<ReturnType<typeof open>>
  try {
    inTime = await open(ctx, `?ticket=${early.ticket}`)
    Date.now = () => realNow() + 31000
    expired = await open(ctx, `?ticket=${late.ticket}`)
  } finally {
    Date.now = realNow
  }
  t.equal(inTime.res.statusCode, 200, 'valid for 30 s')
  inTime.close()
  t.equal(expired.res.statusCode, 401, 'expired after 30 s')
  t.equal(JSON.parse(await expired.body()).code, 'TOKEN_INVALID')

  // A ticket issued before the user was disabled opens nothing afterwards.
  const pending = await ticketFor(ctx, token)
  const disabled = await ctx.app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: ctx.auth(ctx.adminToken), payload: { enabled: false } })
  t.equal(disabled.statusCode, 200)
  const refused = await open(ctx, `?ticket=${pending.ticket}`)
  t.equal(refused.res.statusCode, 401)
  t.equal(JSON.parse(await refused.body()).code, 'TOKEN_INVALID')
})

t.test('Last-Event-ID: the held events after it first, in order and filtered, then live ones', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t)
  const first = await open(ctx, `?station=${stationId}`, ctx.auth(token))
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  fault(sim, 3, 'A')
  await until(() => first.events.length === 1, 'first event')
  const seen = first.events[0].id
  first.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'client gone')

  // While it is away: two for its station, one for no station.
  fault(sim, 3, 'B')
  fault(sim, 9, 'X')
  fault(sim, 3, 'C')
  await until(() => ctx.app.hardware.replay(seen).events.length === 3, 'three events published')

  const again = await open(ctx, `?station=${stationId}`, { ...ctx.auth(token), 'last-event-id': String(seen) })
  await until(() => again.events.length === 2, 'replayed events')
  t.same(again.events.map((e) => e.data.code), ['B', 'C'], 'the missed events of its station, in order')
  t.ok(again.events[0].id > seen && again.events[1].id > again.events[0].id)
  t.equal(again.blocks[0], ': connected', 'nothing was missed beyond what is held')
  fault(sim, 3, 'D')
  await until(() => again.events.length === 3, 'live event')
  t.same(again.events.map((e) => e.data.code), ['B', 'C', 'D'], 'then live ones')
  again.close()

  // The query parameter does the same for polyfills; with a ticket, as a browser would reconnect.
  const polyfill = await open(ctx, `?lastEventId=${seen}&ticket=${(await ticketFor(ctx, token)).ticket}`)
  await until(() => polyfill.events.length === 4, 'all held events after the id')
  t.same(polyfill.events.map((e) => e.data.code), ['B', 'X', 'C', 'D'])
  polyfill.close()
  const latest = ctx.app.hardware.replay(0).events.at(-1)!.id
  const upToDate = await open(ctx, '', { ...ctx.auth(token), 'last-event-id': String(latest) })
  await until(() => upToDate.blocks.length >= 1, 'connected')
  t.same(upToDate.blocks, [': connected'], 'nothing to replay')
  upToDate.close()
  const bad = await open(ctx, '', { ...ctx.auth(token), 'last-event-id': 'abc' })
  t.equal(bad.res.statusCode, 400)
  t.match(JSON.parse(await bad.body()).message, /last-event-id/)

  // An id above every one held comes from before a restart: everything held, said to be incomplete.
  const restarted = await open(ctx, `?station=${stationId}`, { ...ctx.auth(token), 'last-event-id': String(latest + 500) })
  await until(() => restarted.events.length === 4, 'replayed after a restart')
  t.equal(restarted.blocks[0], ': missed events before 1')
  t.same(restarted.events.map((e) => e.data.code), ['A', 'B', 'C', 'D'])
  restarted.close()
})

t.test('Last-Event-ID older than the ring: what the ring holds, after a comment saying events were missed', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t)
  const total = EVENT_RING + 20
  for (let i = 1; i <= total; i++) fault(sim, i % 2 === 0 ? 3 : 9, `E${i}`)
  await until(() => ctx.app.hardware.replay(0).missedBefore !== undefined && ctx.app.hardware.replay(0).events.at(-1)!.id >= total, `${total} events published`, 20000)
  const held = ctx.app.hardware.replay(0)
  t.equal(held.events.length, EVENT_RING)
  t.equal(held.missedBefore, held.events[0].id)

  const stream = await open(ctx, `?station=${stationId}`, { ...ctx.auth(token), 'last-event-id': '5' })
  const expected = held.events.filter((e) => e.data.stationId === stationId)
  await until(() => stream.events.length === expected.length, 'the held events of the station')
  t.equal(stream.blocks[0], `: missed events before ${held.events[0].id}`, 'first line: events were missed')
  t.same(stream.events.map((e) => e.id), expected.map((e) => e.id), 'every held event of its station, in order')
  stream.close()
})

t.test('the ticket store is bounded: expired tickets are swept, and at the cap the oldest go', async (t) => {
  const holder = { id: 1, tokenVersion: 0, tokenType: 'access' as const }
  const realNow = Date.now
  t.teardown(() => { Date.now = realNow })
  let now = 1_000_000
  Date.now = () => now
  const store = new StreamTickets(1000, 3)
  const [a, b] = [store.issue(holder), store.issue(holder)]
  now += 1500
  const [c, d, e] = [store.issue(holder), store.issue(holder), store.issue(holder)]
  t.equal(store.take(a), undefined, 'expired, swept')
  t.equal(store.take(b), undefined)
  const f = store.issue(holder)
  t.equal(store.take(c), undefined, 'the oldest valid one made room at the cap')
  t.match(store.take(f), holder)
  t.match(store.take(d), holder)
  t.equal(store.take(d), undefined, 'single use')
  now += 999
  t.match(store.take(e), holder, 'valid until its time is up')
})

t.test('a ticket never reaches the log', async (t) => {
  t.equal(redactTicket('/api/events?station=1&ticket=abc&x=1'), '/api/events?station=1&ticket=[redacted]&x=1')
  t.equal(redactTicket('/api/events?tick%65t=abc'), '/api/events?tick%65t=[redacted]')
  t.equal(redactTicket('/api/events?Ticket=abc'), '/api/events?Ticket=[redacted]')
  t.equal(redactTicket('/api/events?ticketed=abc'), '/api/events?ticketed=abc')
  t.equal(redactTicket('/api/events'), '/api/events')
  t.equal(redactTicket('/api/events?%E0%A4%A=1&ticket=x'), '/api/events?%E0%A4%A=1&ticket=[redacted]', 'a malformed name does not stop it')

  // The app as production builds it, with its logger writing into this test.
  const lines: string[] = []
  const sink = new Writable({ write (chunk, _enc, done) { lines.push(...String(chunk).split('\n').filter(Boolean)); done() } })
  const dir = mkdtempSync(join(tmpdir(), 'pg-log-'))
  const url = `sqlite:${join(dir, 'test.db')}`
  const config = validateConfig({ database: { url }, auth: { jwtSecret: randomBytes(32).toString('hex'), argon2: TEST_ARGON2 }, licence: { logins: 10 }, logging: { level: 'info' }, events: { heartbeatMs: 60000 } })
  const db = openDatabase(url, { create: true, connectTimeoutMs: 5000, requestTimeoutMs: 15000, logger: { info () {}, warn () {}, error () {} } })
  await initDatabase(db, { demo: false, mappings: mappingsOf(config), argon2: TEST_ARGON2, adminPassword: ADMIN_PASSWORD, print: () => {} })
  const app = await buildApp(config, { db, logger: pino(loggerOptions('info'), sink) })
  t.teardown(async () => { await app.close(); rmSync(dir, { recursive: true, force: true }) })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { accessToken } = (await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })).json()
  const ctx = { app } as TestContext
  const { ticket } = (await app.inject({ method: 'POST', url: '/api/events/ticket', headers: { authorization: `Bearer ${accessToken}` } })).json()
  const stream = await open(ctx, `?station=1&ticket=${ticket}`)
  t.equal(stream.res.statusCode, 200)
  stream.close()
  const reused = await open(ctx, `?ticket=${ticket}`)
  await reused.body()
  // a valid ticket in a request that fails validation: used up, and still not logged
  const second = (await app.inject({ method: 'POST', url: '/api/events/ticket', headers: { authorization: `Bearer ${accessToken}` } })).json().ticket
  const invalid = await open(ctx, `?station=abc&tick%65t=${second}`)
  t.equal(invalid.res.statusCode, 400)
  await invalid.body()
  // A stream that the client ends gets no request line (Fastify logs on 'finish'): the two refusals do.
  const requestLines = () => lines.filter((line) => line.includes('"url":"/api/events?'))
  await until(() => requestLines().length === 2, 'both request lines')

  t.same(requestLines().map((line) => JSON.parse(line)).map((l) => [l.url, l.statusCode]),
    [['/api/events?ticket=[redacted]', 401], ['/api/events?station=abc&tick%65t=[redacted]', 400]])
  t.ok(lines.some((line) => line.includes('"url":"/api/events/ticket"')), 'the ticket requests are logged')
  t.notOk(lines.some((line) => line.includes(ticket) || line.includes(second)), 'no ticket value in any log line')
})
