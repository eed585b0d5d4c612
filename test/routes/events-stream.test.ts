// Event stream for browsers: single-use tickets instead of an Authorization header, and Last-Event-ID replay.
import { createHmac } from 'node:crypto'
import { once } from 'node:events'
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { EVENT_RING } from '../../plugins/hardware.js'
import { CLOSED_EVENT, StreamTickets } from '../../plugins/routes/events.js'
import { redactUrl as redactTicket } from '../../src/logger.js'
import { DatabaseUnavailableError } from '../../src/db/errors.js'
import { sqlitePath } from '../../src/db/index.js'
import { startSimulator, type Simulator } from '../../src/hardware/index.js'
import { build, type TestContext } from '../helpers/build.js'
import { trackResources } from '../helpers/resources.js'
import { sleep, until } from '../helpers/wait.js'

const FAST = { ackTimeout: 150, heartbeatIdle: 200, deadAfter: 600, backoffInitial: 20, backoffMax: 100, stableAfter: 1000, connectTimeout: 500 }

interface Stream {
  res: IncomingMessage
  /** the events in the order they arrived */
  events: Array<{ id: number, type: string, data: Record<string, unknown> }>
  /** every block, comments included, in order */
  blocks: string[]
  close: () => void
}

async function setup (t: Parameters<typeof build>[0], events: { recheckMs?: number, maxStreamsPerUser?: number } = {}): Promise<{ ctx: TestContext, sim: Simulator, stationId: number, token: string, user: Awaited<ReturnType<TestContext['createUser']>> }> {
  const sim = await startSimulator({ host: '127.0.0.1', controllers: [{ id: 'ctl-1', port: 0 }] })
  t.teardown(() => sim.close())
  const port = sim.controllers.get('ctl-1')!.port
  // overload answers (event loop delay) are not under test here: a loaded machine must not fail these
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port }], timings: FAST }, events: { heartbeatMs: 60000, ...events }, server: { maxEventLoopDelayMs: 0 } })
  // connected before the station exists: its station.connected event is not among the ones counted below
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const station = await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-1', type: 'ptl', controllerId: 'ctl-1', address: 3 } })
  const user = await ctx.createUser('user')
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

/** The stream's whole text once the server ended it; fails the test when it is still open after `ms`. */
async function ended (stream: Awaited<ReturnType<typeof open>>, ms = 5000): Promise<string> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`the stream was still open after ${ms} ms`)), ms) })
  try {
    return await Promise.race([stream.body(), late])
  } finally {
    clearTimeout(timer)
  }
}

/** The data of the stream's last block when it is the closing event. */
function closedWith (text: string): Record<string, unknown> | undefined {
  const last = text.trimEnd().split('\n\n').at(-1)!
  const m = new RegExp(`^event: ${CLOSED_EVENT.replace('.', '\\.')}\ndata: (.+)$`).exec(last)
  return m === null ? undefined : JSON.parse(m[1])
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

t.test('a request refused after authentication leaves its ticket: it still opens one stream, and of two at once one opens', async (t) => {
  const { ctx, stationId, token } = await setup(t, { maxStreamsPerUser: 2 })
  const { ticket } = await ticketFor(ctx, token)
  const refusals: Array<[string, number, string]> = [
    ['?station=99999', 404, 'NOT_FOUND'],
    ['?station=abc', 400, 'VALIDATION_ERROR'],
    ['?colour=red', 400, 'VALIDATION_ERROR'],
    ['?lastEventId=x', 400, 'VALIDATION_ERROR']
  ]
  for (const [query, status, code] of refusals) {
    const refused = await open(ctx, `${query}&ticket=${ticket}`)
    t.equal(refused.res.statusCode, status, query)
    t.match(JSON.parse(await refused.body()), { statusCode: status, code }, query)
  }
  // the user's two streams are open: a 429, and the ticket is still there once one closes
  const bearer = [await open(ctx, '', ctx.auth(token)), await open(ctx, '', ctx.auth(token))]
  t.same(bearer.map((s) => s.res.statusCode), [200, 200])
  const full = await open(ctx, `?ticket=${ticket}`)
  t.equal(full.res.statusCode, 429)
  t.equal(JSON.parse(await full.body()).code, 'TOO_MANY_REQUESTS')
  for (const s of bearer) s.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'the Bearer streams closed')

  const stream = await open(ctx, `?station=${stationId}&ticket=${ticket}`)
  t.equal(stream.res.statusCode, 200, 'the ticket opens its stream after the refusals')
  const reused = await open(ctx, `?ticket=${ticket}`)
  t.equal(reused.res.statusCode, 401, 'and is used up by it')
  t.equal(JSON.parse(await reused.body()).code, 'TOKEN_INVALID')
  stream.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'the ticket stream closed')

  // Two requests with one ticket, both past authentication and waiting on the station lookup: one stream.
  const stations = ctx.app.repos.stations
  const get = stations.get.bind(stations)
  let waiting = 0
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  stations.get = async (...args: Parameters<typeof get>) => { waiting++; await released; return await get(...args) }
  t.teardown(() => { stations.get = get })
  const shared = (await ticketFor(ctx, token)).ticket
  const racing = [open(ctx, `?station=${stationId}&ticket=${shared}`), open(ctx, `?station=${stationId}&ticket=${shared}`)]
  await until(() => waiting === 2, 'both requests at the station lookup')
  release()
  const both = await Promise.all(racing)
  t.same(both.map((s) => s.res.statusCode).sort(), [200, 401], 'one opens, the other finds the ticket used')
  const loser = both.find((s) => s.res.statusCode === 401)!
  t.equal(JSON.parse(await loser.body()).code, 'TOKEN_INVALID')
  for (const s of both) s.close()
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
  const holder = { id: 1, username: 'admin', tokenVersion: 0, tokenType: 'access' as const }
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

t.test('one account cannot push other users\' tickets out: beyond 20 unused, its own oldest goes', async (t) => {
  const store = new StreamTickets(60000, 10000)
  const mine = { id: 1, username: 'ich', tokenVersion: 0, tokenType: 'access' as const }
  const theirs = { id: 2, username: 'du', tokenVersion: 0, tokenType: 'access' as const }
  const first = Array.from({ length: 20 }, () => store.issue(mine))
  const other = store.issue(theirs)
  const more = Array.from({ length: 5 }, () => store.issue(mine))
  t.match(store.take(other), theirs, 'the other user\'s ticket is still there')
  for (const ticket of first.slice(0, 5)) t.equal(store.take(ticket), undefined, 'its own oldest went')
  for (const ticket of [...first.slice(5), ...more]) t.match(store.take(ticket), mine)
})

t.test('streams per user are capped: one more is a 429, others and freed places are not affected', async (t) => {
  const { ctx, token } = await setup(t, { maxStreamsPerUser: 2 })
  const bearer = { authorization: `Bearer ${token}` }
  const a = await open(ctx, '', bearer)
  const b = await open(ctx, '', bearer)
  t.equal(a.res.statusCode, 200)
  t.equal(b.res.statusCode, 200)
  const third = await open(ctx, '', bearer)
  t.equal(third.res.statusCode, 429)
  t.equal(third.res.headers['retry-after'], '10')
  t.same(JSON.parse(await third.body()), { statusCode: 429, code: 'TOO_MANY_REQUESTS', error: 'Too Many Requests', message: 'This user already has 2 event streams open, the most one user may (events.maxStreamsPerUser); close one, or filter one stream by station in the client' })
  const admin = await open(ctx, '', { authorization: `Bearer ${ctx.adminToken}` })
  t.equal(admin.res.statusCode, 200, 'another user is not affected')
  a.close()
  let again = await open(ctx, '', bearer)
  for (let i = 0; again.res.statusCode === 429 && i < 50; i++) {
    await sleep(20)
    again = await open(ctx, '', bearer)
  }
  t.equal(again.res.statusCode, 200, 'a closed stream frees its place')
  for (const s of [b, admin, again]) s.close()
})

t.test('HEAD answers the stream\'s headers at once and opens no stream: no place held, no ticket used', async (t) => {
  const { ctx, token } = await setup(t, { maxStreamsPerUser: 1 })
  const { port } = ctx.app.server.address() as AddressInfo
  const head = async (query: string, headers: OutgoingHttpHeaders): Promise<IncomingMessage> => {
    const req = httpRequest({ method: 'HEAD', host: '127.0.0.1', port, path: `/api/events${query}`, headers })
    t.teardown(() => req.destroy())
    req.end()
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error('no answer to HEAD within 3 s')), 3000) })
    try {
      const [res] = await Promise.race([once(req, 'response'), late]) as [IncomingMessage]
      res.resume()
      if (!res.readableEnded) await Promise.race([once(res, 'end'), late])
      return res
    } finally {
      clearTimeout(timer)
    }
  }
  const bearer = { authorization: `Bearer ${token}` }
  for (let i = 0; i < 2; i++) {
    const res = await head('', bearer)
    t.equal(res.statusCode, 200)
    t.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8')
  }
  const { ticket } = await ticketFor(ctx, token)
  t.equal((await head(`?ticket=${ticket}`, {})).statusCode, 200)
  const stream = await open(ctx, `?ticket=${ticket}`)
  t.equal(stream.res.statusCode, 200, 'the HEADs held no place, and the ticket is still good')
  stream.close()
})

t.test('a ticket never reaches the log', async (t) => {
  t.equal(redactTicket('/api/events?station=1&ticket=abc&x=1'), '/api/events?station=1&ticket=[redacted]&x=1')
  t.equal(redactTicket('/api/events?tick%65t=abc'), '/api/events?tick%65t=[redacted]')
  t.equal(redactTicket('/api/events?Ticket=abc'), '/api/events?Ticket=[redacted]')
  t.equal(redactTicket('/api/events?ticketed=abc'), '/api/events?ticketed=abc')
  t.equal(redactTicket('/api/events'), '/api/events')
  t.equal(redactTicket('/api/events?%E0%A4%A=1&ticket=x'), '/api/events?%E0%A4%A=1&ticket=[redacted]', 'a malformed name does not stop it')

  // The app with the production logger (its redaction) writing into this test.
  const lines: string[] = []
  const ctx = await build(t, { logging: { level: 'info' }, events: { heartbeatMs: 60000 } }, undefined, { logStream: { write: (line) => { lines.push(...line.split('\n').filter(Boolean)) } } })
  const { app } = ctx
  await app.listen({ port: 0, host: '127.0.0.1' })
  const accessToken = ctx.adminToken
  const { ticket } = (await app.inject({ method: 'POST', url: '/api/events/ticket', headers: { authorization: `Bearer ${accessToken}` } })).json()
  // a ticket beside a station filter (the station must exist)
  const station = (await app.inject({ method: 'POST', url: '/api/stations', headers: { authorization: `Bearer ${accessToken}` }, payload: { name: 'S-1' } })).json()
  const stream = await open(ctx, `?station=${station.id as number}&ticket=${ticket}`)
  t.equal(stream.res.statusCode, 200)
  stream.close()
  const reused = await open(ctx, `?ticket=${ticket}`)
  await reused.body()
  // a valid ticket in a request that fails validation: not logged either
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

t.test('an open stream ends, saying why, once its user is disabled, deleted, or its password or type changes; other streams go on', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t, { recheckMs: 50 })
  const admin = ctx.auth(ctx.adminToken)
  const kept = await open(ctx, `?station=${stationId}`, ctx.auth(token))
  const keptByTicket = await open(ctx, `?ticket=${(await ticketFor(ctx, token)).ticket}`)
  await until(() => ctx.app.hardware.subscribers === 2, 'the unaffected streams')

  const application = await ctx.createUser('application')
  const applicationToken = (await ctx.app.inject({ method: 'POST', url: '/api/users/application-token', headers: ctx.auth(application.refreshToken) })).json().token as string
  const cases: Array<{ what: string, user: { id: number, accessToken: string }, token?: string, byTicket?: boolean, change: (id: number) => Promise<number> }> = [
    { what: 'disabled', user: await ctx.createUser('user'), change: async (id) => (await ctx.app.inject({ method: 'PATCH', url: `/api/users/${id}`, headers: admin, payload: { enabled: false } })).statusCode },
    { what: 'deleted (stream opened with a ticket)', user: await ctx.createUser('user'), byTicket: true, change: async (id) => (await ctx.app.inject({ method: 'DELETE', url: `/api/users/${id}`, headers: admin })).statusCode },
    { what: 'password changed', user: await ctx.createUser('user'), change: async (id) => (await ctx.app.inject({ method: 'POST', url: `/api/users/${id}`, headers: admin, payload: { password: 'a-new-password-1' } })).statusCode },
    { what: 'type changed (application token)', user: application, token: applicationToken, change: async (id) => (await ctx.app.inject({ method: 'PATCH', url: `/api/users/${id}`, headers: admin, payload: { type: 'user' } })).statusCode }
  ]
  for (const { what, user, token: bearer = user.accessToken, byTicket, change } of cases) {
    const stream = byTicket === true ? await open(ctx, `?ticket=${(await ticketFor(ctx, bearer)).ticket}`) : await open(ctx, '', ctx.auth(bearer))
    t.equal(stream.res.statusCode, 200)
    await until(() => ctx.app.hardware.subscribers === 3, `${what}: subscribed`)
    const status = await change(user.id)
    t.ok(status === 200 || status === 204, `${what}: ${status}`)
    const changedAt = Date.now()
    const text = await ended(stream)
    t.ok(Date.now() - changedAt < 3000, `${what}: ended within the re-check interval, not the default 5 s (${Date.now() - changedAt} ms)`)
    t.same(closedWith(text), { statusCode: 401, code: 'TOKEN_INVALID', error: 'Unauthorized', message: 'The token is invalid' }, `${what}: the last event says why`)
    await until(() => ctx.app.hardware.subscribers === 2, `${what}: unsubscribed`)
    const request = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(bearer) })
    t.equal(request.json().code, 'TOKEN_INVALID', `${what}: the same code as a request with the token`)
  }

  fault(sim, 3, 'STILL-HERE')
  await until(() => kept.events.length === 1 && keptByTicket.events.length === 1, 'the unaffected streams still get events')
  t.match(kept.events[0], { type: 'station.fault', data: { stationId, code: 'STILL-HERE' } })
  t.notOk([...kept.blocks, ...keptByTicket.blocks].some((block) => block.includes(CLOSED_EVENT)), 'and no closing event')
  t.notOk(kept.res.readableEnded || keptByTicket.res.readableEnded, 'both still open')
  kept.close()
  keptByTicket.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'streams closed by their clients')
})

t.test('a stream ends with TOKEN_EXPIRED when its token expires, also one opened with a ticket bought with it', async (t) => {
  const { ctx, sim, user, token } = await setup(t, { recheckMs: 50 })
  const secret = ctx.config.auth.jwtSecret!
  const now = Math.floor(Date.now() / 1000)
  // an access token as login issues it, but living two seconds (the configured minimum is a minute)
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: 'default' })).toString('base64url')
  // the user's token version as login put it in its token (a new user's starts at a random number)
  const { ver } = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as { ver: number }
  const payload = Buffer.from(JSON.stringify({ sub: String(user.id), typ: 'access', aud: 'picking-gateway:access', ver, jti: 'short-lived', iat: now, exp: now + 2 })).toString('base64url')
  const short = `${header}.${payload}.${createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url')}`

  const kept = await open(ctx, '', ctx.auth(token))
  const bearer = await open(ctx, '', ctx.auth(short))
  const byTicket = await open(ctx, `?ticket=${(await ticketFor(ctx, short)).ticket}`)
  t.equal(bearer.res.statusCode, 200)
  t.equal(byTicket.res.statusCode, 200)
  await until(() => ctx.app.hardware.subscribers === 3, 'subscribed')
  const expired = { statusCode: 401, code: 'TOKEN_EXPIRED', error: 'Unauthorized', message: 'The token has expired' }
  for (const [what, stream] of [['Bearer', bearer], ['ticket', byTicket]] as const) {
    const text = await ended(stream, 6000)
    t.ok(Date.now() < (now + 2) * 1000 + 3000, `${what}: ended within the re-check interval after exp, not the default 5 s`)
    t.same(closedWith(text), expired, `${what}: the last event says the token expired`)
  }
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(short) })).json().code, 'TOKEN_EXPIRED', 'as a request with it hears')
  await until(() => ctx.app.hardware.subscribers === 1, 'unsubscribed')
  fault(sim, 3, 'LATER')
  await until(() => kept.events.length === 1, 'the stream of a valid token goes on')
  kept.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'closed by its client')
})

t.test('a stream whose credential cannot be checked (database down) stays open and is checked again', async (t) => {
  const { ctx, sim, stationId, token, user } = await setup(t, { recheckMs: 50 })
  const stream = await open(ctx, `?station=${stationId}`, ctx.auth(token))
  await until(() => ctx.app.hardware.subscribers === 1, 'subscribed')
  const users = ctx.app.repos.users
  const get = users.get
  t.teardown(() => { users.get = get })
  let asked = 0
  users.get = async () => { asked++; throw new DatabaseUnavailableError('database down (test)') }
  ctx.app.auth.forget(user.id)
  await until(() => asked >= 3, 'checked again while the database is down')
  fault(sim, 3, 'DURING')
  await until(() => stream.events.length === 1, 'events still arrive')
  t.notOk(stream.res.readableEnded, 'still open')
  users.get = get
  await ctx.app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: ctx.auth(ctx.adminToken), payload: { enabled: false } })
  t.equal(closedWith(await ended(stream))?.code, 'TOKEN_INVALID', 'once it answers again, the revocation is found')
})

t.test('a stream for one station ends, saying so, when that station is deleted through the API; the others go on', async (t) => {
  const { ctx, stationId, token } = await setup(t)
  const other = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-2', controllerId: 'ctl-1', address: 4 } })).json().id
  const filtered = await open(ctx, `?station=${stationId}`, ctx.auth(token))
  const elsewhere = await open(ctx, `?station=${other as number}`, ctx.auth(token))
  const all = await open(ctx, '', ctx.auth(token))
  await until(() => ctx.app.hardware.subscribers === 3, 'three streams')
  t.equal((await ctx.app.inject({ method: 'DELETE', url: `/api/stations/${stationId}`, headers: ctx.auth(ctx.adminToken) })).statusCode, 204)
  // before: open for ever, with only heartbeats
  t.same(closedWith(await ended(filtered)), { statusCode: 404, code: 'NOT_FOUND', error: 'Not Found', message: `Station ${stationId} was deleted; this stream ends` })
  await until(() => ctx.app.hardware.subscribers === 2, 'the other two stay')
  t.equal(elsewhere.res.readableEnded, false)
  t.equal(all.res.readableEnded, false)
  // an EventSource reconnecting gets the 404 and gives up
  const again = await open(ctx, `?station=${stationId}`, ctx.auth(token))
  t.equal(again.res.statusCode, 404)
  elsewhere.close()
  all.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'no listener left')
})

t.test('a stream for one station ends when the picking system deletes that station itself, at the next check', async (t) => {
  const { ctx, stationId, token } = await setup(t, { recheckMs: 50 })
  const filtered = await open(ctx, `?station=${stationId}`, ctx.auth(token))
  const all = await open(ctx, '', ctx.auth(token))
  await until(() => ctx.app.hardware.subscribers === 2, 'two streams')
  await sleep(200)
  t.equal(filtered.res.readableEnded, false, 'checked a few times while the station is there: stays open')
  // the picking system's own connection, not the API: no onStationDeleted for this one
  const other = new BetterSqlite3(sqlitePath(ctx.config.database.url)!)
  t.teardown(() => other.close())
  t.equal(other.prepare('DELETE FROM stations WHERE id = ?').run(stationId).changes, 1)
  // before: open for ever, with only heartbeats
  t.same(closedWith(await ended(filtered)), { statusCode: 404, code: 'NOT_FOUND', error: 'Not Found', message: `Station ${stationId} was deleted; this stream ends` })
  await until(() => ctx.app.hardware.subscribers === 1, 'the unfiltered stream stays')
  t.equal(all.res.readableEnded, false)
  all.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'no listener left')
})

t.test('streams for one station share its existence check: one read per half recheck period, however many streams', async (t) => {
  const { ctx, stationId, token } = await setup(t, { recheckMs: 50, maxStreamsPerUser: 20 })
  const streams = await Promise.all(Array.from({ length: 10 }, async () => await open(ctx, `?station=${stationId}`, ctx.auth(token))))
  await until(() => ctx.app.hardware.subscribers === 10, 'ten streams')
  const stations = ctx.app.repos.stations
  const get = stations.get.bind(stations)
  let reads = 0
  stations.get = async (id) => { reads++; return await get(id) }
  t.teardown(() => { stations.get = get })
  const began = Date.now()
  await sleep(400)
  const windows = Math.ceil((Date.now() - began) / 25) + 1
  // before: each stream read the station at each of its checks, ten reads a round (some 80 here)
  t.ok(reads > 0 && reads <= windows, `${reads} reads in ${Date.now() - began} ms for ten streams (at most one per 25 ms)`)
  for (const stream of streams) stream.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'no listener left')
})

t.test('a stream for a station that does not exist is a 404; with the database down it opens', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t)
  const missing = await open(ctx, `?station=${stationId + 1000}`, ctx.auth(token))
  t.equal(missing.res.statusCode, 404)
  t.match(JSON.parse(await missing.body()), { statusCode: 404, code: 'NOT_FOUND', message: `Station ${stationId + 1000} not found` })
  t.equal(ctx.app.hardware.subscribers, 0, 'nothing subscribed for it')

  const stations = ctx.app.repos.stations
  const get = stations.get
  t.teardown(() => { stations.get = get })
  stations.get = async () => { throw new DatabaseUnavailableError('database down (test)') }
  const stream = await open(ctx, `?station=${stationId}`, ctx.auth(token))
  t.equal(stream.res.statusCode, 200, 'the station\'s events come from its controller, not the database')
  await until(() => ctx.app.hardware.subscribers === 1, 'subscribed')
  fault(sim, 3, 'DOWN')
  await until(() => stream.events.length === 1, 'its events arrive')
  t.match(stream.events[0], { type: 'station.fault', data: { stationId, code: 'DOWN' } })
  stream.close()
})

t.test('streams per user stay capped while a station is looked up, and a client gone during the lookup holds no place', async (t) => {
  const { ctx, stationId, token } = await setup(t, { maxStreamsPerUser: 1 })
  const stations = ctx.app.repos.stations
  const get = stations.get.bind(stations)
  t.teardown(() => { stations.get = get })
  // a database round trip (SQL Server) between the check and the stream
  stations.get = async (id) => { await sleep(50); return await get(id) }
  const [a, b] = await Promise.all([open(ctx, `?station=${stationId}`, ctx.auth(token)), open(ctx, `?station=${stationId}`, ctx.auth(token))])
  t.same([a.res.statusCode, b.res.statusCode].sort(), [200, 429], 'two at once: one opens, one is refused')
  await (a.res.statusCode === 200 ? b : a).body()
  const opened = a.res.statusCode === 200 ? a : b
  await until(() => ctx.app.hardware.subscribers === 1, 'one subscriber')
  opened.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'none')

  // a client that goes while its station is looked up: the lookup goes on only once the server has seen it go
  let entered!: () => void
  const looking = new Promise<void>((resolve) => { entered = resolve })
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  let lookedUp!: () => void
  const answered = new Promise<void>((resolve) => { lookedUp = resolve })
  stations.get = async (id) => { entered(); await released; const row = await get(id); lookedUp(); return row }
  const accepted: Socket[] = []
  const onConnection = (socket: Socket): void => { accepted.push(socket) }
  ctx.app.server.on('connection', onConnection)
  t.teardown(() => { ctx.app.server.off('connection', onConnection) })
  const { port } = ctx.app.server.address() as AddressInfo
  const gone = httpRequest({ agent: false, host: '127.0.0.1', port, path: `/api/events?station=${stationId}`, headers: ctx.auth(token) })
  gone.on('error', () => {})
  gone.end()
  await looking
  t.equal(accepted.length, 1, 'its connection')
  gone.destroy()
  await until(() => accepted[0].destroyed, 'the server to see the client gone')
  release()
  // the route goes on right after the lookup's answer: one turn of the event loop later it has decided
  await answered
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(ctx.app.hardware.subscribers, 0, 'nothing subscribed for it')
  const after = await open(ctx, `?station=${stationId}`, ctx.auth(token))
  t.equal(after.res.statusCode, 200, 'its place is free: the next stream opens')
  after.close()
})

t.test('streams that clients open and close leave no listener, timer, socket or place behind', async (t) => {
  const { ctx, stationId, token } = await setup(t, { maxStreamsPerUser: 3 })
  // once, so that what the first stream sets up for good (the station check's statement) is in the baseline
  const first = await open(ctx, `?station=${stationId}`, ctx.auth(token))
  await until(() => ctx.app.hardware.subscribers === 1, 'the first stream subscribed')
  first.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'the first stream gone')
  const tracker = trackResources()
  t.teardown(() => tracker.stop())
  const before = await tracker.settled()
  // 200 streams, three at a time (the user's most), closed by their clients: by Bearer token, by ticket, for one station
  for (let i = 0; i < 200; i += 3) {
    const streams = await Promise.all([
      open(ctx, '', ctx.auth(token)),
      open(ctx, `?ticket=${(await ticketFor(ctx, token)).ticket}`),
      open(ctx, `?station=${stationId}`, ctx.auth(token))
    ])
    t.same(streams.map((s) => s.res.statusCode), [200, 200, 200], `round ${i / 3}: every place given back by the round before`)
    await until(() => ctx.app.hardware.subscribers === 3, 'subscribed')
    for (const stream of streams) stream.close()
    await until(() => ctx.app.hardware.subscribers === 0, 'unsubscribed')
  }
  // the ACK and heartbeat timers of the controller link come and go meanwhile: a few, never one per stream
  const after = await tracker.settled()
  t.ok(after.Timeout - before.Timeout < 10, `timers: ${before.Timeout} before, ${after.Timeout} after 200 streams`)
  t.ok(after.TCPWRAP - before.TCPWRAP < 3, `sockets: ${before.TCPWRAP} before, ${after.TCPWRAP} after 200 streams`)
})
