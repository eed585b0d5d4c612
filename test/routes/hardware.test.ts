// The hardware side through the HTTP API, against simulated controllers on real sockets.
import { once } from 'node:events'
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { createServer, type Socket } from 'node:net'
import { encodeFrame, FrameDecoder, startSimulator, type Simulator } from '../../src/hardware/index.js'
import { DatabaseUnavailableError } from '../../src/db/errors.js'
import { build, testDatabaseUrl, type TestContext } from '../helpers/build.js'
import { trackResources } from '../helpers/resources.js'
import { until } from '../helpers/wait.js'

const FAST = { ackTimeout: 150, heartbeatIdle: 200, deadAfter: 600, backoffInitial: 20, backoffMax: 100, stableAfter: 1000, connectTimeout: 500 }


async function setup (t: Parameters<typeof build>[0], simTimings: Record<string, number> = {}): Promise<{ ctx: TestContext, sim: Simulator, stationId: number, token: string }> {
  const sim = await startSimulator({ host: '127.0.0.1', controllers: [{ id: 'ctl-1', port: 0 }], timings: { confirmDelay: 50, trayDelay: 50, ...simTimings } })
  t.teardown(() => sim.close())
  const port = sim.controllers.get('ctl-1')!.port
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port }], timings: FAST }, events: { heartbeatMs: 100 } })
  const admin = ctx.auth(ctx.adminToken)
  const station = await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'PTL-1', type: 'ptl', controllerId: 'ctl-1', address: 3 } })
  const user = await ctx.createUser('user')
  return { ctx, sim, stationId: station.json().id, token: user.accessToken }
}

/** Resolves once the simulated ctl-1 has received `n` LIGHT requests: commands on the wire, their ACKs delayed. */
function lightsOnTheWire (sim: Simulator, n: number): Promise<void> {
  let seen = 0
  return new Promise((resolve) => {
    sim.controllers.get('ctl-1')!.on('frame', (frame: { kind: string, cmd: string }) => {
      if (frame.kind === 'REQ' && frame.cmd === 'LIGHT' && ++seen === n) resolve()
    })
  })
}

const command = (ctx: TestContext, token: string, id: number, payload: object) =>
  ctx.app.inject({ method: 'POST', url: `/api/stations/${id}/commands`, headers: ctx.auth(token), payload })

/** Opens /api/events over real HTTP and collects the parsed events. */
/**
 * The stream's events up to a FAULT at address 99 the controller emits last (a controller's events are
 * published in its order), taken off the stream; the marker's own event among them.
 */
async function eventsBefore (simulated: { emitEvent: (type: string, args: Record<string, string | number>) => unknown }, stream: { events: Array<{ type: string, data: Record<string, unknown> }> }, marker: string): Promise<Array<{ type: string, data: Record<string, unknown> }>> {
  simulated.emitEvent('FAULT', { addr: 99, code: marker })
  await until(() => stream.events.some((e) => e.data.code === marker), marker)
  return stream.events.splice(0)
}

async function openStream (ctx: TestContext, token: string, query = ''): Promise<{ res: IncomingMessage, events: Array<{ type: string, data: Record<string, unknown> }>, text: () => string, close: () => void }> {
  if (!ctx.app.server.listening) await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = ctx.app.server.address() as AddressInfo
  const req = httpRequest({ host: '127.0.0.1', port, path: `/api/events${query}`, headers: { authorization: `Bearer ${token}` } })
  req.end()
  const [res] = await once(req, 'response') as [IncomingMessage]
  let buffer = ''
  const events: Array<{ type: string, data: Record<string, unknown> }> = []
  res.setEncoding('utf8')
  res.on('data', (chunk: string) => {
    buffer += chunk
    for (const block of buffer.split('\n\n').slice(0, -1)) {
      const type = /^event: (.+)$/m.exec(block)?.[1]
      const data = /^data: (.+)$/m.exec(block)?.[1]
      if (type && data) events.push({ type, data: JSON.parse(data) })
    }
    buffer = buffer.slice(buffer.lastIndexOf('\n\n') + 2)
  })
  let all = ''
  res.on('data', (chunk: string) => { all += chunk })
  res.on('error', () => {})
  return { res, events, text: () => all, close: () => req.destroy() }
}

t.test('stations come online, a light is acknowledged and its confirmation streams to SSE', async (t) => {
  const { ctx, stationId, token } = await setup(t)
  const read = () => ctx.app.inject({ method: 'GET', url: `/api/stations/${stationId}`, headers: ctx.auth(token) }).then((r) => r.json())
  await until(async () => (await read()).connected === true, 'station online')
  const online = await read()
  t.equal(online.status, 'idle')
  t.type(online.lastSeenAt, 'string')

  const stream = await openStream(ctx, token, `?station=${stationId}`)
  t.equal(stream.res.statusCode, 200)
  t.match(stream.res.headers['content-type'], /^text\/event-stream/)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')

  const res = await command(ctx, token, stationId, { command: 'light', quantity: 2, text: 'M-100', ref: 'order-7' })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { ack: true, seq: Number })
  t.equal((await read()).status, 'busy', 'a lit position makes the station busy')
  await until(() => stream.events.some((e) => e.type === 'pick.confirmed'), 'pick.confirmed')
  const confirmed = stream.events.find((e) => e.type === 'pick.confirmed')!
  t.match(confirmed.data, { stationId, controllerId: 'ctl-1', address: 3, quantity: 2, ref: 'order-7', at: String })
  t.equal((await read()).status, 'idle')

  const tray = await command(ctx, token, stationId, { command: 'callTray', tray: 'T-12', ref: 'order-8' })
  t.equal(tray.statusCode, 200)
  await until(() => stream.events.some((e) => e.type === 'tray.ready'), 'tray.ready')
  t.match(stream.events.find((e) => e.type === 'tray.ready')!.data, { stationId, tray: 'T-12', ref: 'order-8' })

  const status = await command(ctx, token, stationId, { command: 'status' })
  t.match(status.json(), { ack: true, state: String })
  t.equal((await command(ctx, token, stationId, { command: 'clear' })).statusCode, 200)
  await until(() => /: heartbeat/.test(stream.text()), 'heartbeat comment')

  stream.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'listener removed after the client left')
  t.equal(ctx.app.hardware.subscribers, 0)
})

t.test('a confirmation for a station moved away after its light names that station (before: stationId null)', async (t) => {
  const { ctx, stationId, token } = await setup(t, { confirmDelay: 400 })
  await until(async () => (await ctx.app.inject({ method: 'GET', url: `/api/stations/${stationId}`, headers: ctx.auth(token) })).json().connected === true, 'station online')
  const stream = await openStream(ctx, token, `?station=${stationId}`)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  t.equal((await command(ctx, token, stationId, { command: 'light', quantity: 1, ref: 'order-9' })).statusCode, 200)
  // moved to another address while the operator picks at the old one
  t.equal((await ctx.app.inject({ method: 'PATCH', url: `/api/stations/${stationId}`, headers: ctx.auth(ctx.adminToken), payload: { address: 4 } })).statusCode, 200)
  await until(() => stream.events.some((e) => e.type === 'pick.confirmed'), 'pick.confirmed')
  t.match(stream.events.find((e) => e.type === 'pick.confirmed')!.data, { stationId, controllerId: 'ctl-1', address: 3, ref: 'order-9' })
  stream.close()
})

t.test('a station is busy only while its own address is: the controller\'s overall STATUS state is not the station\'s', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t, { trayDelay: 60000 })
  const admin = ctx.auth(ctx.adminToken)
  const other = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'PTL-2', type: 'ptl', controllerId: 'ctl-1', address: 5 } })).json().id
  const zero = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'PTL-0', type: 'ptl', controllerId: 'ctl-1', address: 0 } })).json().id
  const status = async (id: number): Promise<string> => (await ctx.app.inject({ method: 'GET', url: `/api/stations/${id}`, headers: ctx.auth(token) })).json().status
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')

  t.equal((await command(ctx, token, stationId, { command: 'callTray', tray: 'T-9' })).statusCode, 200)
  const answer = await command(ctx, token, other, { command: 'status' })
  t.equal(answer.json().state, 'busy', 'the controller as a whole is busy')
  t.same([await status(stationId), await status(other), await status(zero)], ['busy', 'idle', 'idle'], 'only the station with the tray is busy')
  t.equal((await command(ctx, token, stationId, { command: 'clear' })).statusCode, 200)
  t.same([await status(stationId), await status(other)], ['idle', 'idle'])

  // a fault at one address: that station stays in error through a STATUS while the controller reports error
  sim.controllers.get('ctl-1')!.emitEvent('FAULT', { addr: 3, code: 'F7', msg: 'Door open' })
  await until(async () => (await status(stationId)) === 'error', 'station in error')
  t.equal((await command(ctx, token, other, { command: 'status' })).json().state, 'error')
  t.same([await status(stationId), await status(other), await status(zero)], ['error', 'idle', 'idle'])
})

t.test('a fault outlives a reconnect while the controller still reports error; the STATUS after a reconnect without it ends it', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t)
  const admin = ctx.auth(ctx.adminToken)
  const other = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'PTL-2', type: 'ptl', controllerId: 'ctl-1', address: 5 } })).json().id
  const status = async (id: number): Promise<string> => (await ctx.app.inject({ method: 'GET', url: `/api/stations/${id}`, headers: ctx.auth(token) })).json().status
  const simulated = sim.controllers.get('ctl-1')!
  /** drops the connection and resolves once the new one is up and its STATUS sent */
  const reconnect = async (): Promise<void> => {
    const sent = new Promise<void>((resolve) => {
      simulated.once('connection', () => simulated.on('frame', function onFrame (frame: { kind: string, cmd: string }) {
        if (frame.kind !== 'REQ' || frame.cmd !== 'STATUS') return
        simulated.off('frame', onFrame)
        resolve()
      }))
    })
    simulated.drop()
    await sent
    await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected again')
  }
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')

  simulated.emitEvent('FAULT', { addr: 3, code: 'F7', msg: 'Door open' })
  await until(async () => (await status(stationId)) === 'error', 'station in error')
  await reconnect()
  t.equal(simulated.state, 'error', 'the controller still reports the fault')
  // before: idle after every reconnect, although the controller's STATUS said error and its FAULT is not sent again
  await until(async () => (await status(stationId)) === 'error' && (await status(other)) === 'idle', 'the fault kept, on its station only', 2000)
  t.same([await status(stationId), await status(other)], ['error', 'idle'])

  // the fault is gone on the controller (a CLEAR at another address ends the simulator's): the next reconnect's STATUS ends it
  t.equal((await command(ctx, token, other, { command: 'clear' })).statusCode, 200)
  t.equal(await status(stationId), 'error', 'a CLEAR elsewhere leaves it until a STATUS says so')
  await reconnect()
  await until(async () => (await status(stationId)) === 'idle', 'the fault ended by a STATUS without error')
})

t.test('command errors', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t)
  const admin = ctx.auth(ctx.adminToken)
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const simulated = sim.controllers.get('ctl-1')!

  const bad: Array<[object, RegExp]> = [
    [{ command: 'dance' }, /body\/command must be one of "light", "clear", "callTray", "status"/],
    [{ command: 'callTray' }, /tray is required/],
    [{ command: 'clear', quantity: 2 }, /quantity does not apply/],
    [{ command: 'light', quantity: '2' }, /body\/quantity/]
  ]
  for (const [payload, message] of bad) {
    const res = await command(ctx, token, stationId, payload)
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.match(res.json().message, message)
  }
  t.equal((await command(ctx, token, 999, { command: 'clear' })).statusCode, 404)
  t.equal((await ctx.app.inject({ method: 'POST', url: `/api/stations/${stationId}/commands`, payload: { command: 'clear' } })).statusCode, 401)

  simulated.setMode('nak')
  const nak = await command(ctx, token, stationId, { command: 'light', quantity: 1 })
  t.equal(nak.statusCode, 502)
  t.match(nak.json(), { code: 'CONTROLLER_NAK', controllerCode: 'E42' })

  simulated.setMode('silent')
  const started = Date.now()
  const timeout = await command(ctx, token, stationId, { command: 'light', quantity: 1 })
  t.equal(timeout.statusCode, 504)
  t.equal(timeout.json().code, 'CONTROLLER_TIMEOUT')
  t.ok(Date.now() - started >= 2 * FAST.ackTimeout, 'sent, resent once, then failed')

  // Silence beyond deadAfter: the link is declared dead and the station goes offline.
  await until(async () => (await ctx.app.inject({ method: 'GET', url: `/api/stations/${stationId}`, headers: admin })).json().status === 'offline', 'offline after silence', 5000)
  simulated.refuse(true)
  simulated.drop()
  const t0 = Date.now()
  const offline = await command(ctx, token, stationId, { command: 'light', quantity: 1 })
  t.equal(offline.statusCode, 503)
  t.equal(offline.json().code, 'CONTROLLER_OFFLINE')
  t.ok(offline.headers['retry-after'])
  t.ok(Date.now() - t0 < 1000, 'offline answers at once')

  simulated.setMode('normal')
  simulated.refuse(false)
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'reconnected by itself')
  t.equal((await command(ctx, token, stationId, { command: 'clear' })).statusCode, 200, 'recovers when the fault is gone')

  await ctx.app.inject({ method: 'POST', url: `/api/stations/${stationId}`, headers: admin, payload: { enabled: false } })
  const disabled = await command(ctx, token, stationId, { command: 'clear' })
  t.equal(disabled.statusCode, 409)
  t.equal(disabled.json().code, 'STATION_DISABLED')
  const unwired = await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'Bench' } })
  t.match((await command(ctx, token, unwired.json().id, { command: 'clear' })).json(), { statusCode: 409, code: 'STATION_NOT_WIRED', message: `Station ${unwired.json().id} has no controllerId and no address` })
  const noAddress = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'Half', controllerId: 'ctl-1' } })).json().id
  t.match((await command(ctx, token, noAddress, { command: 'clear' })).json(), { statusCode: 409, code: 'STATION_NOT_WIRED', message: `Station ${noAddress} has controllerId 'ctl-1' but no address` })
  const noController = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'Loose', address: 4 } })).json().id
  t.match((await command(ctx, token, noController, { command: 'clear' })).json(), { message: `Station ${noController} has address 4 but no controllerId` })
  t.match((await ctx.app.inject({ method: 'GET', url: `/api/stations/${noAddress}`, headers: admin })).json(), { connected: false, status: 'offline' }, 'its controller is up, but it cannot be driven')
  const cannot = await ctx.app.inject({ method: 'GET', url: '/api/stations?connected=false&enabled=true&controllerId=[notnull]', headers: admin })
  t.ok(cannot.json().data.some((s: { id: number }) => s.id === noAddress), "the README's query for stations that cannot be driven finds it")
  const foreign = await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'Far', controllerId: 'ctl-9', address: 1 } })
  const unknown = await command(ctx, token, foreign.json().id, { command: 'clear' })
  t.same(unknown.json(), { statusCode: 409, code: 'CONTROLLER_NOT_CONFIGURED', error: 'Conflict', message: `Controller 'ctl-9' of station ${foreign.json().id} is not configured on this gateway (hardware.controllers)` }, 'unknown controller')
  t.equal(unknown.headers['retry-after'], undefined, 'no retry: it is configuration')
})

t.test('a controller answering as another id is not driven; readiness says why', async (t) => {
  const sim = await startSimulator({ host: '127.0.0.1', controllers: [{ id: 'ctl-2', port: 0 }] })
  t.teardown(() => sim.close())
  const port = sim.controllers.get('ctl-2')!.port
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-3', host: '127.0.0.1', port }], timings: FAST } })
  const admin = ctx.auth(ctx.adminToken)
  const station = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'PTL-3', type: 'ptl', controllerId: 'ctl-3', address: 1 } })).json().id
  const ready = async () => (await ctx.app.inject({ method: 'GET', url: '/health/ready' })).json().controllers[0]
  await until(async () => (await ready()).error !== undefined, 'the refusal in /health/ready')
  t.match(await ready(), { id: 'ctl-3', connected: false, droppedBytes: 0, error: "the controller answered as 'ctl-2', not 'ctl-3'" })
  t.notMatch(JSON.stringify(await ready()), String(port), 'anyone may read readiness: no address of the controller')
  await until(() => sim.controllers.get('ctl-2')!.connectionCount === 0, 'link closed')
  t.match((await ctx.app.inject({ method: 'GET', url: `/api/stations/${station}`, headers: admin })).json(), { connected: false, status: 'offline' })
  const res = await command(ctx, ctx.adminToken, station, { command: 'light', quantity: 1 })
  t.equal(res.statusCode, 503)
  t.equal(res.json().code, 'CONTROLLER_OFFLINE')
})

t.test('while a link is down, readiness says why: the connect refused, a controller silent after connecting, a link the controller closed; nothing once it is up (before: only the log said so)', async (t) => {
  // a port with nothing listening: taken from a server closed at once
  const probe = createServer()
  probe.listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const port = (probe.address() as AddressInfo).port
  await new Promise((resolve) => probe.close(resolve))
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port }], timings: FAST } })
  const ready = async () => (await ctx.app.inject({ method: 'GET', url: '/health/ready' })).json().controllers[0]
  await until(async () => (await ready()).error !== undefined, 'the refused connect in /health/ready')
  t.match(await ready(), { id: 'ctl-1', connected: false })
  t.equal((await ready()).error, 'cannot connect: ECONNREFUSED')
  t.notMatch(JSON.stringify(await ready()), String(port), 'no address of the controller')

  // now something listens there: silent first, then a controller that says HELLO, answers, and is closed on demand
  let mode: 'silent' | 'controller' = 'silent'
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    if (mode === 'silent') return
    const decoder = new FrameDecoder()
    socket.write(encodeFrame({ seq: 1, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-1' } }))
    socket.on('data', (chunk: Buffer) => {
      for (const frame of decoder.push(chunk)) {
        if (frame.kind === 'HBT' && frame.cmd === 'PING') socket.write(encodeFrame({ seq: frame.seq, kind: 'HBT', cmd: 'PONG', args: {} }))
        else if (frame.kind === 'REQ') socket.write(encodeFrame({ seq: frame.seq, kind: 'ACK', cmd: frame.cmd, args: frame.cmd === 'STATUS' ? { state: 'idle' } : {} }))
      }
    })
  })
  server.listen(port, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { for (const socket of sockets) socket.destroy(); server.close() })
  await until(async () => /no frame/.test((await ready()).error ?? ''), 'the silent controller in /health/ready')
  t.match(await ready(), { connected: false })
  t.equal((await ready()).error, `cannot connect: no frame for ${FAST.deadAfter} ms`)

  mode = 'controller'
  await until(async () => (await ready()).connected === true, 'connected')
  t.notOk('error' in (await ready()), 'no reason while it is up')
  mode = 'silent'
  for (const socket of sockets) socket.end()
  // taken as seen: the reconnect to the silent listener replaces the reason after FAST.deadAfter
  let dropped: Record<string, unknown> = {}
  await until(async () => /closed by the controller/.test(String((dropped = await ready()).error)), 'the dropped link in /health/ready')
  t.match(dropped, { connected: false })
  t.equal(dropped.error, 'link dropped: closed by the controller')
})

t.test('a NAK without code: 502 with controllerCode null', async (t) => {
  // a controller that acknowledges STATUS and refuses everything else with a bare NAK
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    const decoder = new FrameDecoder()
    socket.on('data', (chunk: Buffer) => {
      for (const frame of decoder.push(chunk)) {
        if (frame.kind === 'REQ') socket.write(encodeFrame({ seq: frame.seq, kind: frame.cmd === 'STATUS' ? 'ACK' : 'NAK', cmd: frame.cmd, args: frame.cmd === 'STATUS' ? { state: 'idle' } : {} }))
      }
    })
    socket.on('error', () => {})
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { for (const socket of sockets) socket.destroy(); server.close() })
  const lines: Array<Record<string, unknown>> = []
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port: (server.address() as AddressInfo).port }], timings: FAST }, logging: { level: 'warn' } }, undefined, { logStream: { write: (line: string) => { lines.push(JSON.parse(line)) } } })
  const station = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-1', controllerId: 'ctl-1', address: 1 } })).json().id
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const res = await command(ctx, ctx.adminToken, station, { command: 'clear' })
  t.equal(res.statusCode, 502)
  t.same(res.json(), { statusCode: 502, code: 'CONTROLLER_NAK', error: 'Bad Gateway', message: 'The controller refused the command: no reason given', controllerCode: null })
  const logged = lines.find((l) => l.code === 'CONTROLLER_NAK')
  t.match(logged, { level: 40, msg: 'The controller refused the command: no reason given' }, 'an expected controller fault is a warning')
  t.equal(logged?.err, undefined, 'without a stack trace')
})

/**
 * A controller of the test's own on loopback: it says HELLO as ctl-1 and hands each frame it reads to
 * `onFrame`; a gateway driving it, with station PTL-1 at address 1, is connected when this returns.
 */
async function rawController (t: Parameters<typeof build>[0], onFrame: (frame: ReturnType<FrameDecoder['push']>[number], socket: Socket) => void): Promise<{ ctx: TestContext, station: number }> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    const decoder = new FrameDecoder()
    socket.write(encodeFrame({ seq: 1, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-1' } }))
    socket.on('data', (chunk: Buffer) => {
      for (const frame of decoder.push(chunk)) {
        // heartbeats answered, as a controller does: on a busy machine the link otherwise died after
        // FAST.deadAfter without a frame, and its reconnect's STATUS (nothing lit) undid what a test set up
        if (frame.kind === 'HBT' && frame.cmd === 'PING') socket.write(encodeFrame({ seq: frame.seq, kind: 'HBT', cmd: 'PONG', args: {} }))
        else onFrame(frame, socket)
      }
    })
    socket.on('error', () => {})
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { for (const socket of sockets) socket.destroy(); server.close() })
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port: (server.address() as AddressInfo).port }], timings: FAST } })
  const station = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-1', controllerId: 'ctl-1', address: 1 } })).json().id
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  return { ctx, station }
}

/** The controller's ACK of a REQ (a STATUS answered idle). */
const ackOf = (frame: { seq: number, cmd: string }): Buffer => encodeFrame({ seq: frame.seq, kind: 'ACK', cmd: frame.cmd, args: frame.cmd === 'STATUS' ? { state: 'idle' } : {} })

t.test('a CONFIRM read right behind the ACK of its LIGHT leaves the station idle, not busy', async (t) => {
  // a controller whose operator confirms at once: the ACK and the CONFIRM go out in one write
  let confirmAcked = false
  const { ctx, station } = await rawController(t, (frame, socket) => {
    if (frame.kind === 'ACK' && frame.cmd === 'CONFIRM') confirmAcked = true
    if (frame.kind !== 'REQ') return
    socket.write(frame.cmd === 'LIGHT' ? Buffer.concat([ackOf(frame), encodeFrame({ seq: 2, kind: 'EVT', cmd: 'CONFIRM', args: { addr: frame.args.addr, qty: frame.args.qty } })]) : ackOf(frame))
  })
  t.equal((await command(ctx, ctx.adminToken, station, { command: 'light', quantity: 2 })).statusCode, 200)
  await until(() => confirmAcked, 'the CONFIRM acknowledged')
  // before: busy until the next STATUS, since the LIGHT's status was set once its answer reached the route, after the CONFIRM
  t.equal((await ctx.app.inject({ method: 'GET', url: `/api/stations/${station}`, headers: ctx.auth(ctx.adminToken) })).json().status, 'idle')
})

t.test('a CONFIRM that comes before the ACK of its LIGHT leaves the station idle, not busy', async (t) => {
  // a controller that sends the operator's confirmation first and its ACK after it
  let lightAcked = false
  const { ctx, station } = await rawController(t, (frame, socket) => {
    if (frame.kind !== 'REQ') return
    if (frame.cmd !== 'LIGHT') return socket.write(ackOf(frame))
    socket.write(encodeFrame({ seq: 2, kind: 'EVT', cmd: 'CONFIRM', args: { addr: frame.args.addr, qty: frame.args.qty } }))
    setTimeout(() => { socket.write(ackOf(frame)); lightAcked = true }, 50)
  })
  t.equal((await command(ctx, ctx.adminToken, station, { command: 'light', quantity: 2 })).statusCode, 200)
  t.ok(lightAcked)
  // before: busy until the next STATUS, though the position was confirmed
  t.equal((await ctx.app.inject({ method: 'GET', url: `/api/stations/${station}`, headers: ctx.auth(ctx.adminToken) })).json().status, 'idle')
})

t.test('a LIGHT whose ACK comes after its 504: the station shows busy, as the controller lit it', async (t) => {
  // a controller that acknowledges a LIGHT only after the gateway gave up on it (both sends)
  let lightAcked = false
  let lights = 0
  const { ctx, station } = await rawController(t, (frame, socket) => {
    if (frame.kind !== 'REQ') return
    if (frame.cmd !== 'LIGHT') socket.write(ackOf(frame))
    else if (++lights === 2) setTimeout(() => { socket.write(ackOf(frame)); lightAcked = true }, FAST.ackTimeout + 100)
  })
  const status = async (): Promise<string> => (await ctx.app.inject({ method: 'GET', url: `/api/stations/${station}`, headers: ctx.auth(ctx.adminToken) })).json().status
  t.equal((await command(ctx, ctx.adminToken, station, { command: 'light', quantity: 2 })).statusCode, 504)
  t.equal(await status(), 'idle', 'unknown yet: no answer')
  await until(() => lightAcked, 'the late ACK sent')
  // before: ignored, and the station showed idle while its position was lit
  await until(async () => (await status()) === 'busy', 'busy after the late ACK')
  t.equal(await status(), 'busy')
})

t.test('the STATUS after a reconnect answered after its timeout still resynchronizes: a position the controller reports lit shows busy', async (t) => {
  // a controller busy starting up after a reconnect answers its STATUS only after the gateway gave up on it (both sends)
  let first: Socket | undefined
  let statuses = 0
  let lateSent = false
  const { ctx, station } = await rawController(t, (frame, socket) => {
    if (frame.kind !== 'REQ') return
    first ??= socket
    if (frame.cmd !== 'STATUS' || socket === first) {
      socket.write(ackOf(frame))
      return
    }
    if (++statuses === 2) setTimeout(() => { socket.write(encodeFrame({ seq: frame.seq, kind: 'ACK', cmd: 'STATUS', args: { state: 'busy', addr1: 'lit:2' } })); lateSent = true }, FAST.ackTimeout + 100)
  })
  const status = async (): Promise<string> => (await ctx.app.inject({ method: 'GET', url: `/api/stations/${station}`, headers: ctx.auth(ctx.adminToken) })).json().status
  t.equal(await status(), 'idle')
  // the controller restarts: its connection drops, the gateway connects again and asks for its STATUS
  const reconnected = new Promise<void>((resolve) => ctx.app.hardware.subscribe((event) => { if (event.type === 'station.connected') resolve() }))
  first!.destroy()
  await reconnected
  await until(() => lateSent, 'the late STATUS ACK sent')
  // before: the late answer was ignored, and the station showed idle, with its position lit, until the next STATUS
  await until(async () => (await status()) === 'busy', 'busy after the late STATUS ACK', 2000)
  t.equal(await status(), 'busy')
})

t.test('a STATUS answer naming hundreds of lit positions is read; a frame over hardware.maxFrameBytes shows in readiness while the link is down', async (t) => {
  // 400 lit positions: about 5 KB, over the 4 KiB that was the limit, so the link was reset at every connect, for ever
  const lit = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`addr${i + 1}`, 'lit:2']))
  const server = createServer((socket) => {
    const decoder = new FrameDecoder()
    socket.write(encodeFrame({ seq: 1, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-1' } }))
    socket.on('data', (chunk: Buffer) => {
      for (const frame of decoder.push(chunk)) {
        if (frame.kind === 'REQ') socket.write(encodeFrame({ seq: frame.seq, kind: 'ACK', cmd: frame.cmd, args: frame.cmd === 'STATUS' ? { state: 'busy', ...lit } : {} }))
      }
    })
    socket.on('error', () => {})
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const port = (server.address() as AddressInfo).port
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port }], timings: FAST } })
  const admin = ctx.auth(ctx.adminToken)
  const station = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'PTL-300', controllerId: 'ctl-1', address: 300 } })).json().id
  await until(async () => (await ctx.app.inject({ method: 'GET', url: `/api/stations/${station}`, headers: admin })).json().status === 'busy', 'position 300 busy from the STATUS answer')
  t.equal(ctx.app.hardware.controllerStates()[0].connected, true)

  // a limit set lower than the controller's STATUS: each connect is reset, and readiness says why
  const low = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port }], timings: FAST, maxFrameBytes: 4096 } })
  const ready = async () => (await low.app.inject({ method: 'GET', url: '/health/ready' })).json().controllers[0]
  await until(async () => (await ready()).error !== undefined, 'the reason in /health/ready')
  t.match(await ready(), { id: 'ctl-1', connected: false, error: /longer than 4096 bytes \(hardware\.maxFrameBytes\)/ })
})

t.test('hardware.enabled false: commands answer 409 HARDWARE_DISABLED, not a retryable 503', async (t) => {
  const ctx = await build(t, { hardware: { enabled: false, controllers: [{ id: 'ctl-1', host: '127.0.0.1', port: 1 }] } })
  const station = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-1', controllerId: 'ctl-1', address: 1 } })).json().id
  const res = await command(ctx, ctx.adminToken, station, { command: 'light', quantity: 1 })
  t.equal(res.statusCode, 409)
  t.match(res.json(), { code: 'HARDWARE_DISABLED', message: /hardware\.enabled is false.*'ctl-1'/ })
  t.equal(res.headers['retry-after'], undefined)
})

t.test('hardware.enabled false: the event stream and its ticket answer 409 HARDWARE_DISABLED instead of a stream that never sends an event', async (t) => {
  const ctx = await build(t, { hardware: { enabled: false, controllers: [{ id: 'ctl-1', host: '127.0.0.1', port: 1 }] } })
  const headers = ctx.auth(ctx.adminToken)
  // before: 200 and a stream of heartbeats only, so behind a round-robin balancer half the listeners heard nothing
  const stream = await ctx.app.inject({ method: 'GET', url: '/api/events', headers })
  t.equal(stream.statusCode, 409)
  t.match(stream.json(), { code: 'HARDWARE_DISABLED', message: /hardware\.enabled is false.*open the stream on the instance that has hardware enabled/ })
  t.equal(stream.headers['retry-after'], undefined, 'configuration: a retry here cannot help')
  const ticket = await ctx.app.inject({ method: 'POST', url: '/api/events/ticket', headers })
  t.equal(ticket.statusCode, 409, 'a ticket here would open nothing either')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/events' })).statusCode, 401, 'authentication first')
  const doc = (await ctx.app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  t.ok(doc.paths['/api/events'].get.responses['409'], 'the OpenAPI document lists the 409')
})

/**
 * setup() over real HTTP, its controller connected and acknowledging after 120 ms, within ackTimeout
 * (150 ms here): a command on the wire when a close begins is answered 200 while the close runs.
 */
async function slowAcksOverHttp (t: Parameters<typeof build>[0]): Promise<Awaited<ReturnType<typeof setup>> & { port: number }> {
  const s = await setup(t)
  await until(() => s.ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  await s.ctx.app.listen({ port: 0, host: '127.0.0.1' })
  s.sim.controllers.get('ctl-1')!.setMode('delay', { delayMs: 120 })
  return { ...s, port: (s.ctx.app.server.address() as AddressInfo).port }
}

t.test('shutdown: a keep-alive connection whose command was in flight is closed after its answer, not held until keepAliveTimeoutMs', async (t) => {
  const { ctx, sim, stationId, token, port } = await slowAcksOverHttp(t)
  const agent = new Agent({ keepAlive: true })
  t.teardown(() => agent.destroy())
  const body = JSON.stringify({ command: 'light', quantity: 1 })
  const req = httpRequest({ agent, host: '127.0.0.1', port, method: 'POST', path: `/api/stations/${stationId}/commands`, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } })
  const onWire = lightsOnTheWire(sim, 1)
  req.end(body)
  const socket = (await once(req, 'socket'))[0] as Socket
  const socketClosed = once(socket, 'close')
  await onWire
  const started = Date.now()
  const closing = ctx.app.close()
  const [res] = await once(req, 'response') as [IncomingMessage]
  res.resume()
  t.equal(res.statusCode, 200, 'the command in flight is answered')
  // before: "keep-alive" and "Keep-Alive: timeout=5", and the connection ended right after (RFC 9112 §9.6)
  t.equal(res.headers.connection, 'close', 'the answer says that the connection closes after it')
  t.equal(res.headers['keep-alive'], undefined)
  await closing
  const ms = Date.now() - started
  // before: the connection stayed open, idle, until keepAliveTimeoutMs (5 s), and the close waited for it
  t.ok(ms < 2000, `closed ${ms} ms after the close began`)
  await socketClosed
})

t.test('shutdown: pipelined requests in flight on one keep-alive connection are all answered before it is ended', async (t) => {
  const { ctx, sim, stationId, token, port } = await slowAcksOverHttp(t)
  const body = JSON.stringify({ command: 'light', quantity: 1 })
  const one = `POST /api/stations/${stationId}/commands HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
  const socket = connect(port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  await once(socket, 'connect')
  let received = ''
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => { received += chunk })
  const closed = once(socket, 'close')
  const onWire = lightsOnTheWire(sim, 3)
  socket.write(one + one + one)
  await onWire
  const started = Date.now()
  await ctx.app.close()
  await closed
  // before: the first answer ended the connection, and the two lights sent behind it were never answered
  t.same(received.match(/HTTP\/1\.1 \d+/g), ['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 200'], 'each request the gateway acted on is answered')
  // only the last answer may say close: a client told so earlier would give up the answers behind it
  const connection = received.match(/^Connection: \S+/gim) ?? []
  t.equal(connection.length, 3)
  t.same(connection.slice(0, 2).map((h) => h.toLowerCase()), ['connection: keep-alive', 'connection: keep-alive'])
  t.ok(Date.now() - started < 2000, 'and the connection is ended after the last, not held until keepAliveTimeoutMs')
})

t.test('shutdown: commands still queued are answered 503 SHUTTING_DOWN at once and never sent', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t)
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  sim.controllers.get('ctl-1')!.setMode('delay', { delayMs: 100 })
  const answers = Array.from({ length: 6 }, () => command(ctx, token, stationId, { command: 'light', quantity: 1 }))
  await new Promise((resolve) => setTimeout(resolve, 20))
  const closing = ctx.app.close()
  const codes = (await Promise.all(answers)).map((res) => res.json().code ?? res.statusCode)
  await closing
  const refused = codes.filter((code) => code === 'SHUTTING_DOWN')
  t.equal(refused.length, 2, `four in flight (the link's limit), two queued: ${codes.join(', ')}`)
})

t.test('a client that goes away while its command waits in the queue: the command is never sent; those on the wire finish', async (t) => {
  const sim = await startSimulator({ host: '127.0.0.1', controllers: [{ id: 'ctl-1', port: 0 }], timings: { confirmDelay: 60000 } })
  t.teardown(() => sim.close())
  const lines: Array<Record<string, unknown>> = []
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port: sim.controllers.get('ctl-1')!.port }], timings: { ...FAST, ackTimeout: 1000 } }, logging: { level: 'info' } },
    undefined, { logStream: { write: (line: string) => { lines.push(JSON.parse(line)) } } })
  const station = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-1', controllerId: 'ctl-1', address: 3 } })).json().id
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = ctx.app.server.address() as AddressInfo
  let lights = 0
  sim.controllers.get('ctl-1')!.on('frame', (frame: { kind: string, cmd: string }) => { if (frame.kind === 'REQ' && frame.cmd === 'LIGHT') lights++ })
  sim.controllers.get('ctl-1')!.setMode('delay', { delayMs: 200 })
  // six clients, each on its own connection: four commands go on the wire (the link's limit), two wait in the queue
  const onWire = lightsOnTheWire(sim, 4)
  const requests = Array.from({ length: 6 }, () => {
    const req = httpRequest({ agent: false, host: '127.0.0.1', port, method: 'POST', path: `/api/stations/${station as number}/commands`, headers: { authorization: `Bearer ${ctx.adminToken}`, 'content-type': 'application/json' } })
    req.on('error', () => {})
    req.end(JSON.stringify({ command: 'light', quantity: 1 }))
    return req
  })
  await onWire
  // every client gives up (its own timeout) before the controller answers
  for (const req of requests) req.destroy()
  const fate = (): Array<Record<string, unknown>> => lines.filter((l) => l.msg === 'station command acknowledged' || l.code === 'COMMAND_CANCELLED')
  await until(() => fate().length === 6, 'each command accounted for in the log')
  // before: all six were sent, the last two after their clients had gone (and might send them again)
  t.equal(lights, 4, 'only the commands on the wire reached the controller')
  t.equal(fate().filter((l) => l.code === 'COMMAND_CANCELLED').length, 2, 'the two queued ones are logged as not sent')
  t.match(fate().find((l) => l.code === 'COMMAND_CANCELLED'), { msg: /the client went away before LIGHT was sent to controller ctl-1; it was not sent/ })
})

t.test('events need a token, filter by station, follow reconnects and leave no listener', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/events' })).statusCode, 401)
  const bad = await ctx.app.inject({ method: 'GET', url: '/api/events?station=abc', headers: ctx.auth(token) })
  t.equal(bad.statusCode, 400)
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')

  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/events?station=999', headers: ctx.auth(token) })).statusCode, 404, 'a station that does not exist')
  const second = await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'Other station', type: 'manual' } })
  const other = await openStream(ctx, token, `?station=${second.json().id as number}`)
  const all = await openStream(ctx, token)
  await until(() => ctx.app.hardware.subscribers === 2, 'two subscribers')
  sim.controllers.get('ctl-1')!.emitEvent('CONFIRM', { addr: 3, qty: -7 })
  sim.controllers.get('ctl-1')!.emitEvent('TRAYREADY', { addr: 3 })
  sim.controllers.get('ctl-1')!.emitEvent('FAULT', { addr: 3, code: 'F7', msg: 'Door open' })
  await until(() => all.events.some((e) => e.type === 'station.fault'), 'station.fault')
  t.same(all.events.map((e) => e.type), ['station.fault'], 'invalid events are not published')
  t.match(all.events.find((e) => e.type === 'station.fault')!.data, { stationId, code: 'F7', message: 'Door open' })
  t.equal(other.events.length, 0, 'filtered by station')
  const state = await ctx.app.inject({ method: 'GET', url: `/api/stations/${stationId}`, headers: ctx.auth(token) })
  t.equal(state.json().status, 'error')

  sim.controllers.get('ctl-1')!.drop()
  await until(() => all.events.some((e) => e.type === 'station.disconnected'), 'station.disconnected')
  await until(() => all.events.some((e) => e.type === 'station.connected'), 'station.connected after reconnect')
  other.close()
  all.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'no listener left')
  t.equal(ctx.app.hardware.subscribers, 0)
})

t.test('an event goes to the stations a command reaches: the controller id as the API reads it, not as the column\'s collation compares', async (t) => {
  const sim = await startSimulator({ host: '127.0.0.1', controllers: [{ id: 'ctl-1', port: 0 }], timings: { confirmDelay: 50, trayDelay: 50 } })
  t.teardown(() => sim.close())
  const port = sim.controllers.get('ctl-1')!.port
  // a picking system's table whose controller column ignores case (SQL Server's usual collations ignore trailing spaces too)
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port }], timings: FAST }, events: { heartbeatMs: 100 } }, async (db) => {
    await db.execute({ text: `CREATE TABLE "stations" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "name" VARCHAR(100) NOT NULL UNIQUE, "description" VARCHAR(500),
      "type" VARCHAR(16) NOT NULL DEFAULT 'manual', "warehouse" VARCHAR(64), "controller_id" VARCHAR(64) COLLATE NOCASE, "address" INTEGER,
      "enabled" INTEGER NOT NULL DEFAULT 1, "created_at" TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
      "modified_at" TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))`, params: [] })
    await db.execute({ text: "INSERT INTO stations (id, name, type, controller_id, address) VALUES (1, 'PTL-1', 'ptl', 'ctl-1', 3), (2, 'PTL-2', 'ptl', 'CTL-1', 4)", params: [] })
  })
  const token = (await ctx.createUser('user')).accessToken
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const other = await ctx.app.inject({ method: 'POST', url: '/api/stations/2/commands', headers: ctx.auth(token), payload: { command: 'clear' } })
  t.equal(other.json().code, 'CONTROLLER_NOT_CONFIGURED', "'CTL-1' is not the configured ctl-1 for a command")
  t.match((await ctx.app.inject({ method: 'GET', url: '/api/stations/2', headers: ctx.auth(token) })).json(), { connected: false, status: 'offline' })
  const stream = await openStream(ctx, token)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  sim.controllers.get('ctl-1')!.emitEvent('FAULT', { addr: 4, code: 'F4' })
  sim.controllers.get('ctl-1')!.emitEvent('FAULT', { addr: 3, code: 'F3' })
  await until(() => stream.events.length === 2, 'both events')
  t.same(stream.events.map((e) => [e.data.code, e.data.stationId]), [['F4', null], ['F3', 1]], "no station wired to ctl-1's address 4 as a command sees it")
  sim.controllers.get('ctl-1')!.drop()
  await until(() => stream.events.some((e) => e.type === 'station.connected'), 'station.connected after reconnect')
  t.same(stream.events.filter((e) => e.type.startsWith('station.') && e.type !== 'station.fault').map((e) => [e.type, e.data.stationId]),
    [['station.disconnected', 1], ['station.connected', 1]], 'station 2 never shows connected')
  stream.close()
})

t.test('SQLite: an address kept as text in a column without a declared type (\'02\', \' 3\') is the number it reads as, for events, filters and the one-station-per-address check', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const sim = await startSimulator({ host: '127.0.0.1', controllers: [{ id: 'ctl-1', port: 0 }], timings: { confirmDelay: 50, trayDelay: 50 } })
  t.teardown(() => sim.close())
  const port = sim.controllers.get('ctl-1')!.port
  // another program wrote the addresses: an untyped column keeps its text as written
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port }], timings: FAST }, events: { heartbeatMs: 100 } }, async (db) => {
    await db.execute({ text: `CREATE TABLE "stations" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "name" VARCHAR(100) NOT NULL UNIQUE, "description" VARCHAR(500),
      "type" VARCHAR(16) NOT NULL DEFAULT 'manual', "warehouse" VARCHAR(64), "controller_id" VARCHAR(64), "address",
      "enabled" INTEGER NOT NULL DEFAULT 1, "created_at" TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
      "modified_at" TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))`, params: [] })
    await db.execute({ text: "INSERT INTO stations (id, name, type, controller_id, address) VALUES (1, 'PTL-1', 'ptl', 'ctl-1', '02'), (2, 'PTL-2', 'ptl', 'ctl-1', ' 3'), (3, 'PTL-3', 'ptl', 'ctl-1', 10)", params: [] })
  })
  const token = (await ctx.createUser('user')).accessToken
  const get = async (url: string) => (await ctx.app.inject({ method: 'GET', url, headers: ctx.auth(token) })).json()
  t.match(await get('/api/stations/1'), { address: 2 }, 'read as a number')
  t.same((await get('/api/stations?address=2')).data.map((s: { id: number }) => s.id), [1], 'found as it reads (before: no station)')
  t.same((await get('/api/stations?address=[gte]3&sort=address')).data.map((s: { id: number }) => s.id), [2, 3], "' 3' before 10, as numbers")
  const taken = await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-9', controllerId: 'ctl-1', address: 3 } })
  t.equal(taken.statusCode, 409, "station 2's address 3 is taken (before: a second station on it)")
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const stream = await openStream(ctx, token)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  sim.controllers.get('ctl-1')!.emitEvent('FAULT', { addr: 2, code: 'F2' })
  sim.controllers.get('ctl-1')!.emitEvent('FAULT', { addr: 3, code: 'F3' })
  await until(() => stream.events.length === 2, 'both events')
  t.same(stream.events.map((e) => [e.data.code, e.data.stationId]), [['F2', 1], ['F3', 2]], 'the stations a command to them reaches (before: stationId null)')
  stream.close()
})

t.test('an address outside 0 to 65535 another program stored: a 409 that says so, never sent (before: a LIGHT at 70000 acknowledged, its CONFIRM refused by the gateway)', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t)
  const frames: string[] = []
  sim.controllers.get('ctl-1')!.on('frame', (frame: { kind: string, cmd: string }) => { if (frame.kind === 'REQ' && frame.cmd !== 'STATUS') frames.push(frame.cmd) })
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  for (const address of [70000, -1]) {
    await ctx.db.execute({ text: 'UPDATE stations SET address = @a WHERE id = @id', params: [{ name: 'a', kind: 'number', value: address }, { name: 'id', kind: 'number', value: stationId }] })
    const res = await command(ctx, token, stationId, { command: 'light', quantity: 1 })
    t.equal(res.statusCode, 409, String(address))
    t.same(res.json(), { statusCode: 409, code: 'STATION_NOT_WIRED', error: 'Conflict', message: `Station ${stationId} has address ${address}, which no controller takes (0 to 65535)` })
    t.match((await ctx.app.inject({ method: 'GET', url: `/api/stations/${stationId}`, headers: ctx.auth(token) })).json(), { address, connected: false, status: 'offline' }, 'not shown as drivable')
  }
  t.same(frames, [], 'nothing sent')
})

t.test('rows the picking system keeps on one address: an event names the one station a command reaches there, once; commands to stations that share an address are refused', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t, { confirmDelay: 400 })
  const simulated = sim.controllers.get('ctl-1')!
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const stream = await openStream(ctx, token)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  const settled = async (marker: string): Promise<Array<[string, unknown]>> =>
    (await eventsBefore(simulated, stream, marker)).filter((e) => e.data.address === 3).map((e) => [e.type, e.data.stationId])
  // the station it replaced, kept disabled on the same address
  await ctx.app.repos.stations.create({ name: 'PTL-1-old', controllerId: 'ctl-1', address: 3, type: 'ptl', enabled: false })
  simulated.emitEvent('FAULT', { addr: 3, code: 'F1' })
  t.same(await settled('m1'), [['station.fault', stationId]], 'not also for the disabled one (before: one event each)')

  // lit, then the picking system adds a second row on the address: the confirmation answers the light
  t.equal((await command(ctx, token, stationId, { command: 'light', quantity: 1, ref: 'o-1' })).statusCode, 200)
  const twin = (await ctx.app.repos.stations.create({ name: 'ptl-1', controllerId: 'ctl-1', address: 3, type: 'ptl', enabled: true })).id as number
  await until(() => stream.events.some((e) => e.type === 'pick.confirmed'), 'pick.confirmed')
  t.same(await settled('m2'), [['pick.confirmed', stationId]], 'the station it was lit for, once (before: once for each station on the address)')

  for (const [id, other] of [[stationId, twin], [twin, stationId]]) {
    const res = await command(ctx, token, id, { command: 'light', quantity: 1 })
    t.equal(res.statusCode, 409)
    t.same(res.json(), { statusCode: 409, code: 'STATION_ADDRESS_SHARED', error: 'Conflict', message: `Station ${id} shares controllerId "ctl-1" and address 3 with station ${other} ("${other === twin ? 'ptl-1' : 'PTL-1'}"): a pick there could not be told apart; give one of them another address, or disable it` })
  }
  t.equal((await command(ctx, token, twin, { command: 'status' })).statusCode, 200, 'STATUS names no address')
  await ctx.app.inject({ method: 'PATCH', url: `/api/stations/${twin}`, headers: ctx.auth(ctx.adminToken), payload: { enabled: false } })
  t.equal((await command(ctx, token, stationId, { command: 'clear' })).statusCode, 200, 'the other one disabled: wired alone again')
  stream.close()
})

t.test('the answer to a light names the station it was lit for, once; after the station moved away nothing else at its old address names it', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t, { confirmDelay: 300 })
  const simulated = sim.controllers.get('ctl-1')!
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const stream = await openStream(ctx, token)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  const settled = async (marker: string): Promise<Array<[string, unknown, unknown]>> =>
    (await eventsBefore(simulated, stream, marker)).filter((e) => e.data.address !== 99).map((e) => [e.type, e.data.address, e.data.stationId])
  // the picking system moves its station behind the gateway's back
  const move = (address: number) => ctx.db.execute({ text: 'UPDATE stations SET address = @a WHERE id = @id', params: [{ name: 'a', kind: 'number', value: address }, { name: 'id', kind: 'number', value: stationId }] })

  t.equal((await command(ctx, token, stationId, { command: 'light', quantity: 1, ref: 'o-1' })).statusCode, 200)
  await until(() => stream.events.some((e) => e.type === 'pick.confirmed'), 'pick.confirmed')
  await move(4)
  simulated.emitEvent('FAULT', { addr: 3, code: 'F3' })
  simulated.emitEvent('CONFIRM', { addr: 3, qty: 5, ref: 'lit-by-the-picking-system' })
  t.same(await settled('m1'), [['pick.confirmed', 3, stationId], ['station.fault', 3, null], ['pick.confirmed', 3, null]], 'its light answered, address 3 is no longer its (before: both named it)')

  // lit at 4, then moved to 5 and another station put on 4 before the operator confirms
  t.equal((await command(ctx, token, stationId, { command: 'light', quantity: 1, ref: 'o-2' })).statusCode, 200)
  await move(5)
  const newcomer = (await ctx.app.repos.stations.create({ name: 'PTL-4', controllerId: 'ctl-1', address: 4, type: 'ptl', enabled: true })).id
  await until(() => stream.events.some((e) => e.type === 'pick.confirmed'), 'pick.confirmed')
  t.same(await settled('m2'), [['pick.confirmed', 4, stationId]], `the light's station, not station ${String(newcomer)} now at 4`)

  // a light the controller refused answers nothing
  simulated.setMode('nak')
  t.equal((await command(ctx, token, stationId, { command: 'light', quantity: 1, ref: 'o-3' })).statusCode, 502)
  simulated.setMode('normal')
  await move(6)
  simulated.emitEvent('CONFIRM', { addr: 5, qty: 1, ref: 'lit-by-the-picking-system' })
  t.same(await settled('m3'), [['pick.confirmed', 5, null]], 'not the station whose light was refused')
  stream.close()
})

t.test('a station table without an active flag (enabled mapped to null): every station is in use (before: all disabled, no command reached one)', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const sim = await startSimulator({ host: '127.0.0.1', controllers: [{ id: 'ctl-1', port: 0 }], timings: { confirmDelay: 50, trayDelay: 50 } })
  t.teardown(() => sim.close())
  const port = sim.controllers.get('ctl-1')!.port
  const stations = { table: 'Platz', columns: { id: 'PlatzID', name: 'Name', description: null, type: null, warehouse: null, controllerId: 'Steuerung', address: 'Adresse', enabled: null, createdAt: null, modifiedAt: null } }
  const ctx = await build(t, { mapping: { stations }, hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port }], timings: FAST }, events: { heartbeatMs: 100 } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "Platz" ("PlatzID" INTEGER PRIMARY KEY, "Name" VARCHAR(30) NOT NULL UNIQUE, "Steuerung" VARCHAR(20), "Adresse" INTEGER)', params: [] })
    await db.execute({ text: "INSERT INTO \"Platz\" VALUES (1, 'PTL-1', 'ctl-1', 3)", params: [] })
  })
  const token = (await ctx.createUser('user')).accessToken
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  t.match((await ctx.app.inject({ method: 'GET', url: '/api/stations/1', headers: ctx.auth(token) })).json(), { enabled: null, connected: true, status: 'idle' })
  const stream = await openStream(ctx, token, '?station=1')
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  const res = await command(ctx, token, 1, { command: 'light', quantity: 1, ref: 'o-1' })
  t.equal(res.statusCode, 200, res.body)
  await until(() => stream.events.some((e) => e.type === 'pick.confirmed'), 'pick.confirmed')
  sim.controllers.get('ctl-1')!.emitEvent('FAULT', { addr: 3, code: 'F3' })
  await until(() => stream.events.some((e) => e.type === 'station.fault'), 'station.fault')
  t.same(stream.events.map((e) => [e.type, e.data.stationId]), [['pick.confirmed', 1], ['station.fault', 1]])
  stream.close()
})

t.test('a station id two rows hold (PlatzID of (Werk, PlatzID)): a command is a 409 that says it was not sent, and the controller gets nothing (before: the read\'s "nothing was read")', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const sim = await startSimulator({ host: '127.0.0.1', controllers: [{ id: 'ctl-1', port: 0 }], timings: { confirmDelay: 50, trayDelay: 50 } })
  t.teardown(() => sim.close())
  const port = sim.controllers.get('ctl-1')!.port
  const stations = { table: 'PlatzWerk', newIds: 'max+1' as const, defaults: { Werk: 1 }, columns: { id: 'PlatzID', name: 'Name', description: null, type: null, warehouse: null, controllerId: 'Steuerung', address: 'Adresse', enabled: null, createdAt: null, modifiedAt: null } }
  const ctx = await build(t, { mapping: { stations }, hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port }], timings: FAST } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "PlatzWerk" ("Werk" INTEGER NOT NULL, "PlatzID" INTEGER NOT NULL, "Name" VARCHAR(30) NOT NULL UNIQUE, "Steuerung" VARCHAR(20), "Adresse" INTEGER, PRIMARY KEY ("Werk", "PlatzID"))', params: [] })
    await db.execute({ text: "INSERT INTO \"PlatzWerk\" VALUES (1, 1, 'PTL-1', 'ctl-1', 3), (2, 1, 'PTL-2', 'ctl-1', 4), (1, 2, 'PTL-3', 'ctl-1', 5)", params: [] })
  })
  const frames: string[] = []
  sim.controllers.get('ctl-1')!.on('frame', (frame: { kind: string, cmd: string }) => { if (frame.kind === 'REQ' && frame.cmd !== 'STATUS') frames.push(frame.cmd) })
  const token = (await ctx.createUser('user')).accessToken
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  for (const payload of [{ command: 'light', quantity: 1 }, { command: 'clear' }, { command: 'callTray', tray: 'T-1' }, { command: 'status' }]) {
    const res = await command(ctx, token, 1, payload)
    t.equal(res.statusCode, 409, `${payload.command}: ${res.body}`)
    t.match(res.json(), { code: 'CONFLICT', message: /^2 rows of the picking system's table hold the station id 1 .*so the gateway cannot tell which one is meant; the command was not sent to its controller$/ }, payload.command)
  }
  t.same(frames, [], 'nothing sent')
  t.match((await ctx.app.inject({ method: 'GET', url: '/api/stations/1', headers: ctx.auth(token) })).json(), { code: 'CONFLICT', message: /; nothing was read$/ }, 'a read says what it did not do')
  t.equal((await command(ctx, token, 2, { command: 'light', quantity: 1 })).statusCode, 200, 'an id one row holds takes commands as before')
  t.same(frames, ['LIGHT'])
})

t.test('a controller with more stations than a page of the lookup (1000): each gets its station.disconnected and station.connected (before: the first 1000 only)', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t)
  await ctx.db.execute({ text: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1004) INSERT INTO stations (name, type, controller_id, address) SELECT 'PTL-bus-' || i, 'ptl', 'ctl-1', 1000 + i FROM n", params: [] })
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const stream = await openStream(ctx, token)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  sim.controllers.get('ctl-1')!.drop()
  await until(() => stream.events.filter((e) => e.type === 'station.connected').length >= 1005, 'station.connected for each', 10000)
  const ids = (type: string) => new Set(stream.events.filter((e) => e.type === type).map((e) => e.data.stationId))
  t.equal(ids('station.disconnected').size, 1005)
  t.equal(ids('station.connected').size, 1005)
  t.ok(ids('station.connected').has(stationId))
  stream.close()
})

t.test('a disabled station gets no station.connected or station.disconnected: it stays connected false, status disabled, whatever the link does', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t)
  const admin = ctx.auth(ctx.adminToken)
  const disabled = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'PTL-9', type: 'ptl', controllerId: 'ctl-1', address: 4, enabled: false } })).json().id
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const stream = await openStream(ctx, token)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  sim.controllers.get('ctl-1')!.drop()
  await until(() => ctx.app.hardware.controllerStates()[0].connected && stream.events.some((e) => e.type === 'station.connected'), 'reconnected')
  // published after the connection events, in order: once it is here, they all are
  sim.controllers.get('ctl-1')!.emitEvent('FAULT', { addr: 3, code: 'F1' })
  await until(() => stream.events.some((e) => e.type === 'station.fault'), 'the fault after the reconnect')
  t.same(stream.events.filter((e) => e.type === 'station.disconnected' || e.type === 'station.connected').map((e) => [e.type, e.data.stationId]),
    [['station.disconnected', stationId], ['station.connected', stationId]], `nothing for disabled station ${disabled as number}`)
  t.match((await ctx.app.inject({ method: 'GET', url: `/api/stations/${disabled as number}`, headers: ctx.auth(token) })).json(), { connected: false, status: 'disabled' })
  stream.close()
})

t.test('events are published in the order the controller sent them, also when a station lookup answers late', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t)
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const stream = await openStream(ctx, token)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  // the database (SQL Server) answers one lookup late: the first one after this
  const stations = ctx.app.repos.stations
  const list = stations.list.bind(stations)
  let slow = 1
  stations.list = async (...args: Parameters<typeof list>) => {
    if (slow-- > 0) await new Promise((resolve) => setTimeout(resolve, 300))
    return await list(...args)
  }
  sim.controllers.get('ctl-1')!.emitEvent('CONFIRM', { addr: 3, qty: 1, ref: 'first' })
  sim.controllers.get('ctl-1')!.emitEvent('CONFIRM', { addr: 3, qty: 2, ref: 'second' })
  await until(() => stream.events.length === 2, 'both events')
  t.same(stream.events.map((e) => e.data.ref), ['first', 'second'])

  // a quick reconnect whose disconnect lookup is the late one: the stream ends with the station connected
  slow = 1
  sim.controllers.get('ctl-1')!.drop()
  await until(() => stream.events.filter((e) => e.type === 'station.connected').length === 1, 'station.connected after reconnect')
  await until(() => stream.events.length === 4, 'the disconnect too')
  t.same(stream.events.slice(2).map((e) => [e.type, e.data.stationId]), [['station.disconnected', stationId], ['station.connected', stationId]])
  stream.close()
})

t.test('an event during a database outage goes out without a station id; its warning has no stack, a fault that is no outage has one', async (t) => {
  const sim = await startSimulator({ host: '127.0.0.1', controllers: [{ id: 'ctl-1', port: 0 }], timings: { confirmDelay: 50 } })
  t.teardown(() => sim.close())
  const lines: Array<Record<string, unknown>> = []
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port: sim.controllers.get('ctl-1')!.port }], timings: FAST }, logging: { level: 'warn' } }, undefined,
    { logStream: { write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>) } } })
  await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-1', type: 'ptl', controllerId: 'ctl-1', address: 3 } })
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const stream = await openStream(ctx, ctx.adminToken)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  const stations = ctx.app.repos.stations
  let fault: Error = new DatabaseUnavailableError('database down (test)')
  stations.list = async () => { throw fault }
  sim.controllers.get('ctl-1')!.emitEvent('CONFIRM', { addr: 3, qty: 1, ref: 'in the outage' })
  await until(() => stream.events.length === 1, 'the event')
  fault = new Error('a bug (test)')
  sim.controllers.get('ctl-1')!.emitEvent('CONFIRM', { addr: 3, qty: 1, ref: 'after a bug' })
  await until(() => stream.events.length === 2, 'the second event')
  t.same(stream.events.map((e) => [e.data.ref, e.data.stationId]), [['in the outage', null], ['after a bug', null]])
  const warnings = lines.filter((line) => line.msg === 'station lookup failed; event sent without station id')
  t.equal(warnings.length, 2)
  t.match(warnings[0], { level: 40, controllerId: 'ctl-1', code: 'DATABASE_UNAVAILABLE', reason: 'database down (test)' })
  t.notOk('err' in warnings[0], 'the outage\'s warning carries no error with a stack')
  t.match(warnings[1], { level: 40, controllerId: 'ctl-1', err: { message: 'a bug (test)', stack: /Error: a bug/ } })
  stream.close()
})

t.test('a client that stops reading is cut off; the others keep receiving', async (t) => {
  const ctx = await build(t, { events: { maxBufferedBytes: 1048576, heartbeatMs: 60000 } })
  const token = ctx.adminToken
  // Capture the route's listeners to publish large events directly, as a busy controller would.
  const listeners: Array<(event: Parameters<Parameters<typeof ctx.app.hardware.subscribe>[0]>[0]) => void> = []
  const subscribe = ctx.app.hardware.subscribe.bind(ctx.app.hardware)
  ctx.app.hardware.subscribe = (listener) => { listeners.push(listener); return subscribe(listener) }

  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = ctx.app.server.address() as AddressInfo
  const stalled = connect(port, '127.0.0.1')
  stalled.on('error', () => {})
  await once(stalled, 'connect')
  stalled.write(`GET /api/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`)
  stalled.pause() // never reads again
  let stalledClosed = false
  stalled.on('close', () => { stalledClosed = true })
  const good = await openStream(ctx, token)
  await until(() => ctx.app.hardware.subscribers === 2, 'two subscribers')

  const big = 'x'.repeat(64 * 1024)
  let sent = 0
  for (let i = 0; i < 2000 && ctx.app.hardware.subscribers === 2; i++) {
    for (const listener of [...listeners]) listener({ id: i, type: 'station.fault', data: { stationId: 1, controllerId: 'ctl-1', address: 1, code: 'F1', message: big, at: new Date().toISOString() } })
    sent++
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  t.equal(ctx.app.hardware.subscribers, 1, `the stalled client was dropped after ${sent} events of 64 KiB`)
  t.ok(sent < 2000)
  stalled.resume() // the server hung up: reading what is left ends in the close
  await until(() => stalledClosed, 'stalled socket closed')
  await until(() => good.events.length === sent, `all ${sent} events at the reading client`)
  t.equal(good.events.length, sent, 'the reading client got every event')
  good.close()
  await until(() => ctx.app.hardware.subscribers === 0, 'no listener left')
})

/**
 * One simulated controller and a gateway on it whose warnings are kept in `lines`, for the station-lookup tests:
 * `stationLookupMs`, the simulator's confirmDelay and the database settings as each test needs them.
 */
async function lookupSetup (t: Test, stationLookupMs: number, confirmDelay: number, database: { requestTimeoutMs?: number } = {}) {
  const sim = await startSimulator({ host: '127.0.0.1', controllers: [{ id: 'ctl-1', port: 0 }], timings: { confirmDelay } })
  t.teardown(() => sim.close())
  const lines: Array<Record<string, unknown>> = []
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port: sim.controllers.get('ctl-1')!.port }], timings: FAST, stationLookupMs }, database, logging: { level: 'warn' } }, undefined,
    { logStream: { write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>) } } })
  return { sim, ctx, lines }
}

t.test('a station lookup the database never answers holds no event: it goes out without station id after hardware.stationLookupMs, a warning says why, and the next lookups run once it answers again (before: every later event of the controller held for good, silently)', async (t) => {
  const { sim, ctx, lines } = await lookupSetup(t, 200, 60000)
  const stationId = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-1', type: 'ptl', controllerId: 'ctl-1', address: 3 } })).json().id
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const stream = await openStream(ctx, ctx.adminToken)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  t.equal((await ctx.app.inject({ method: 'POST', url: `/api/stations/${stationId as number}/commands`, headers: ctx.auth(ctx.adminToken), payload: { command: 'light', quantity: 1 } })).statusCode, 200)
  const stations = ctx.app.repos.stations
  const list = stations.list.bind(stations)
  // SQL Server behind a lock the picking system holds: the lookups never answer
  const stuck: Array<(value: Awaited<ReturnType<typeof list>>) => void> = []
  stations.list = async () => await new Promise((resolve) => { stuck.push(resolve) })
  const simulated = sim.controllers.get('ctl-1')!
  // the answer to the gateway's own light names its station without asking the database
  simulated.emitEvent('CONFIRM', { addr: 3, qty: 1, ref: 'answer' })
  await until(() => stream.events.length === 1, 'the answer to the light')
  t.same(stream.events.splice(0).map((e) => [e.data.ref, e.data.stationId]), [['answer', stationId]])
  t.equal(stuck.length, 0, 'no lookup for it')
  for (let i = 0; i < 50; i++) simulated.emitEvent('CONFIRM', { addr: 3, qty: 1, ref: `stuck-${i}` })
  await until(() => stream.events.length === 50, 'the events, without their station', 5000)
  t.same(stream.events.map((e) => [e.data.ref, e.data.stationId]), Array.from({ length: 50 }, (_, i) => [`stuck-${i}`, null]), 'each in order, none held')
  // two at once; a lookup that has not answered within stationLookupMs gives its place to the next (before: one per event, 50)
  t.ok(stuck.length <= 4, `the database is asked a bounded number of times: ${stuck.length}`)
  const warnings = lines.filter((line) => line.msg === 'station lookup failed; event sent without station id')
  // the first at once, the others counted for one summary (before: a warning per event, 50)
  t.equal(warnings.length, 1, 'one warning for the burst')
  t.match(warnings[0], { level: 40, controllerId: 'ctl-1', address: 3, code: 'STATION_LOOKUP_TIMEOUT', reason: /200 ms/ })
  // the database answers again (the lock is released): the stuck lookups end, the next events name their station
  stations.list = list
  for (const resolve of stuck) resolve({ rows: [] } as unknown as Awaited<ReturnType<typeof list>>)
  simulated.emitEvent('CONFIRM', { addr: 3, qty: 1, ref: 'back' })
  await until(() => stream.events.length === 51, 'the event after the database is back')
  t.match(stream.events[50].data, { ref: 'back', stationId })
  stream.close()
  // the summary is due a minute after the first warning; the stop says it at once
  await ctx.app.close()
  const summaries = lines.filter((line) => /^station lookup failed: \d+ more/.test(String(line.msg)))
  t.match(summaries, [{ level: 40, controllerId: 'ctl-1', code: 'STATION_LOOKUP_TIMEOUT', count: 49, intervalMs: 60000, msg: 'station lookup failed: 49 more events sent without station id since the last warning' }])
  t.equal(summaries.length, 1)
})

t.test('a lookup past its events\' deadline keeps its place until the driver ends it (database.requestTimeoutMs): a controller holds at most two of the pool\'s connections, however long the database does not answer (before: a place freed at each 200 ms deadline, and another call started)', async (t) => {
  const { sim, ctx } = await lookupSetup(t, 100, 60000, { requestTimeoutMs: 10000 })
  await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-1', type: 'ptl', controllerId: 'ctl-1', address: 3 } })
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const stream = await openStream(ctx, ctx.adminToken)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  const stations = ctx.app.repos.stations
  const list = stations.list.bind(stations)
  const hung: Array<() => void> = []
  stations.list = async () => await new Promise((resolve) => { hung.push(() => resolve({ rows: [] } as unknown as Awaited<ReturnType<typeof list>>)) })
  const simulated = sim.controllers.get('ctl-1')!
  // events over a second, at two addresses, each past its 100 ms deadline long before the calls end
  for (let i = 0; i < 10; i++) {
    simulated.emitEvent('CONFIRM', { addr: 3 + (i % 2), qty: 1, ref: `slow-${i}` })
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  await until(() => stream.events.length === 10, 'every event, without its station')
  t.same(stream.events.map((e) => e.data.stationId), Array.from({ length: 10 }, () => null))
  t.equal(hung.length, 2, 'two calls, held until the database answers them')
  // it answers: the places are free, the next event is looked up
  stations.list = list
  for (const end of hung) end()
  simulated.emitEvent('CONFIRM', { addr: 3, qty: 1, ref: 'back' })
  await until(() => stream.events.length === 11, 'the event after the database answered')
  t.match(stream.events[10].data, { ref: 'back', stationId: Number })
  stream.close()
})

t.test('a stop while station lookups hang starts none on the closing database and warns of none: the events waiting go out without a station id (before: lookups on the closed database, and a warning each)', async (t) => {
  const { sim, ctx, lines } = await lookupSetup(t, 300, 60000)
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const stations = ctx.app.repos.stations
  const list = stations.list.bind(stations)
  let calls = 0
  let afterClose = 0
  let closing = false
  stations.list = async (...args: Parameters<typeof list>) => {
    calls++
    if (closing) afterClose++
    // the first two hang; the rest would read the table
    if (calls <= 2) return await new Promise(() => {})
    return await list(...args)
  }
  const simulated = sim.controllers.get('ctl-1')!
  for (let addr = 0; addr < 10; addr++) simulated.emitEvent('CONFIRM', { addr, qty: 1, ref: `r-${addr}` })
  await until(() => calls === 2, 'two lookups hang')
  await new Promise((resolve) => setTimeout(resolve, 50))
  const before = lines.length
  closing = true
  await ctx.app.close()
  // past every deadline
  await new Promise((resolve) => setTimeout(resolve, 500))
  t.equal(afterClose, 0, 'no lookup on the closing database')
  t.same(lines.slice(before).filter((line) => line.msg === 'station lookup failed; event sent without station id'), [], 'and no warning of one')
})

t.test('a slow database: one controller\'s lookups run at most two at once, events waiting at one address share the lookup started after them, and all are published in order with their station', async (t) => {
  const { ctx, sim, stationId, token } = await setup(t)
  const admin = ctx.auth(ctx.adminToken)
  const other = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'PTL-2', type: 'ptl', controllerId: 'ctl-1', address: 4 } })).json().id
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const stream = await openStream(ctx, token)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  const stations = ctx.app.repos.stations
  const list = stations.list.bind(stations)
  let running = 0
  let most = 0
  let calls = 0
  stations.list = async (...args: Parameters<typeof list>) => {
    calls++
    most = Math.max(most, ++running)
    try {
      await new Promise((resolve) => setTimeout(resolve, 50))
      return await list(...args)
    } finally {
      running--
    }
  }
  const simulated = sim.controllers.get('ctl-1')!
  for (let i = 0; i < 40; i++) simulated.emitEvent('CONFIRM', { addr: i % 2 === 0 ? 3 : 4, qty: 1, ref: `r-${i}` })
  await until(() => stream.events.length === 40, 'every event', 10000)
  t.same(stream.events.map((e) => [e.data.ref, e.data.stationId]), Array.from({ length: 40 }, (_, i) => [`r-${i}`, i % 2 === 0 ? stationId : other]))
  t.ok(most <= 2, `at most two at once (${most})`)
  t.ok(calls < 40, `fewer lookups than events (${calls})`)
  stream.close()
})

t.test('a link that drops and comes back while its stations cannot be looked up: one station.disconnected and one station.connected without station id, as the warning says (before: none, and a warning that an event was sent)', async (t) => {
  const { sim, ctx, lines } = await lookupSetup(t, 200, 50)
  const stationId = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-1', type: 'ptl', controllerId: 'ctl-1', address: 3 } })).json().id
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const stream = await openStream(ctx, ctx.adminToken)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  const stations = ctx.app.repos.stations
  const list = stations.list.bind(stations)
  stations.list = async () => { throw new DatabaseUnavailableError('database down (test)') }
  sim.controllers.get('ctl-1')!.drop()
  await until(() => stream.events.length === 2, 'the disconnect and the reconnect')
  t.same(stream.events.map((e) => [e.type, e.data.controllerId, e.data.stationId, e.data.address]), [['station.disconnected', 'ctl-1', null, null], ['station.connected', 'ctl-1', null, null]])
  // the second within the minute is counted for the summary, not a line of its own
  t.equal(lines.filter((line) => line.msg === 'station lookup failed; event sent without station id').length, 1)
  // a lookup that does not answer in time: the same
  const hung: Array<() => void> = []
  stations.list = async () => await new Promise((resolve) => { hung.push(() => resolve({ rows: [] } as unknown as Awaited<ReturnType<typeof list>>)) })
  sim.controllers.get('ctl-1')!.drop()
  await until(() => stream.events.length === 4, 'the disconnect and the reconnect, at their deadline')
  t.same(stream.events.slice(2).map((e) => [e.type, e.data.stationId]), [['station.disconnected', null], ['station.connected', null]])
  // the database is back: the calls it held end (as SQL Server answers them once the lock is released), the next drop names the station again
  stations.list = list
  for (const end of hung) end()
  sim.controllers.get('ctl-1')!.drop()
  await until(() => stream.events.length === 6, 'the disconnect and the reconnect with the station')
  t.same(stream.events.slice(4).map((e) => [e.type, e.data.stationId, e.data.address]), [['station.disconnected', stationId, 3], ['station.connected', stationId, 3]])
  stream.close()
})

t.test('a stop while station lookups are held up (a lock): the events the gateway ACKed before it reach the open streams before they end, with their station once the lookup answers (before: published after the streams had ended, lost)', async (t) => {
  const { sim, ctx } = await lookupSetup(t, 1000, 60000)
  const stationId = (await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-1', type: 'ptl', controllerId: 'ctl-1', address: 3 } })).json().id
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const all = await openStream(ctx, ctx.adminToken)
  const one = await openStream(ctx, ctx.adminToken, `?station=${stationId as number}`)
  await until(() => ctx.app.hardware.subscribers === 2, 'two subscribers')
  const stations = ctx.app.repos.stations
  const list = stations.list.bind(stations)
  // the picking system holds a lock: every lookup waits until it is released
  const held: Array<() => void> = []
  let locked = true
  stations.list = async (...args: Parameters<typeof list>) => {
    if (locked) await new Promise<void>((resolve) => { held.push(resolve) })
    return await list(...args)
  }
  const simulated = sim.controllers.get('ctl-1')!
  const acked: number[] = []
  simulated.on('frame', (frame: { kind: string, cmd: string, seq: number }) => { if (frame.kind === 'ACK' && frame.cmd === 'CONFIRM') acked.push(frame.seq) })
  for (let i = 0; i < 3; i++) simulated.emitEvent('CONFIRM', { addr: 3, qty: 1, ref: `before-${i}` })
  await until(() => acked.length === 3 && held.length > 0, 'the gateway to ACK the three events, their lookup held')
  const ended = Promise.all([once(all.res, 'end'), once(one.res, 'end')])
  const closing = ctx.app.close()
  // an event sent once the stop has begun is not answered: the controller keeps it for the restarted gateway
  setTimeout(() => simulated.emitEvent('CONFIRM', { addr: 3, qty: 1, ref: 'during' }), 30)
  // the lock is released a moment after the stop began
  setTimeout(() => {
    locked = false
    for (const release of held) release()
  }, 100)
  await closing
  await ended
  t.same(all.events.map((e) => [e.type, e.data.ref, e.data.stationId]), [0, 1, 2].map((i) => ['pick.confirmed', `before-${i}`, stationId]), 'every ACKed event on the unfiltered stream, with its station')
  t.same(one.events.map((e) => e.data.ref), ['before-0', 'before-1', 'before-2'], 'and on the stream filtered to its station')
  t.equal(acked.length, 3, 'the event sent during the stop was not ACKed')
})

/** Station PTL-1 at address 3 of ctl-1, an open stream, and station lookups that never answer (counted by calls()). */
async function lookupsThatNeverAnswer (t: Test, stationLookupMs: number) {
  const { sim, ctx, lines } = await lookupSetup(t, stationLookupMs, 60000)
  await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-1', type: 'ptl', controllerId: 'ctl-1', address: 3 } })
  await until(() => ctx.app.hardware.controllerStates()[0].connected, 'controller connected')
  const stream = await openStream(ctx, ctx.adminToken)
  await until(() => ctx.app.hardware.subscribers === 1, 'subscriber')
  let calls = 0
  ctx.app.repos.stations.list = async () => { calls++; return await new Promise(() => {}) }
  return { ctx, lines, stream, simulated: sim.controllers.get('ctl-1')!, calls: () => calls }
}

t.test('a stop while a station lookup never answers: the ACKed event goes out without its station at hardware.stationLookupMs, before the streams end, without a warning', async (t) => {
  const { ctx, lines, stream, simulated, calls } = await lookupsThatNeverAnswer(t, 300)
  let acked = 0
  simulated.on('frame', (frame: { kind: string, cmd: string }) => { if (frame.kind === 'ACK' && frame.cmd === 'CONFIRM') acked++ })
  simulated.emitEvent('CONFIRM', { addr: 3, qty: 1, ref: 'stuck' })
  await until(() => acked === 1 && calls() === 1, 'the event ACKed, its lookup hanging')
  const before = lines.length
  const ended = once(stream.res, 'end')
  const started = Date.now()
  await ctx.app.close()
  await ended
  t.same(stream.events.map((e) => [e.data.ref, e.data.stationId]), [['stuck', null]])
  t.ok(Date.now() - started < 3000, `the stop waited for its deadline only (${Date.now() - started} ms)`)
  t.same(lines.slice(before).filter((line) => /^station lookup failed/.test(String(line.msg))), [], 'no warning: the stop itself gave up on it')
})

t.test('a stop whose grace period ends while a station lookup still runs (stationLookupMs longer than it): abandon() sends the event out without its station before the streams end', async (t) => {
  const { ctx, stream, simulated, calls } = await lookupsThatNeverAnswer(t, 60000)
  // at one address each: the third waits for a place and is never looked up
  for (const addr of [3, 4, 5]) simulated.emitEvent('CONFIRM', { addr, qty: 1, ref: `stuck-${addr}` })
  await until(() => calls() === 2, 'two lookups hanging, the third event waiting for a place')
  const ended = once(stream.res, 'end')
  const closing = ctx.app.close()
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.same(stream.events, [], 'the stop waits for the lookups')
  // what the shutdown does when the grace period is over
  ctx.app.hardware.abandon()
  await closing
  await ended
  t.same(stream.events.map((e) => [e.data.ref, e.data.stationId]), [['stuck-3', null], ['stuck-4', null], ['stuck-5', null]])
  t.equal(calls(), 2, 'no lookup started after it')
})

t.test('a controller that connects and drops 300 times through the gateway leaves no timer, socket or listener behind', async (t) => {
  // a bare controller: says HELLO, answers STATUS, and (until the last connection) drops the connection then
  const accepted: Socket[] = []
  let keep = false
  const server = createServer((socket) => {
    accepted.push(socket)
    socket.on('error', () => {})
    const decoder = new FrameDecoder()
    socket.on('data', (chunk: Buffer) => {
      for (const frame of decoder.push(chunk)) {
        if (frame.kind !== 'REQ') continue
        socket.write(encodeFrame({ seq: frame.seq, kind: 'ACK', cmd: frame.cmd, args: frame.cmd === 'STATUS' ? { state: 'idle' } : {} }))
        if (frame.cmd === 'STATUS' && !keep) setImmediate(() => socket.destroy())
      }
    })
    socket.write(encodeFrame({ seq: 1, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-1' } }))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { for (const socket of accepted) socket.destroy(); server.close() })
  const tracker = trackResources()
  t.teardown(() => tracker.stop())
  const { port } = server.address() as AddressInfo
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port }], timings: { ...FAST, backoffInitial: 1, backoffMax: 2, heartbeatIdle: 60000, deadAfter: 120000 } }, server: { maxEventLoopDelayMs: 0 } })
  await ctx.app.inject({ method: 'POST', url: '/api/stations', headers: ctx.auth(ctx.adminToken), payload: { name: 'PTL-1', type: 'ptl', controllerId: 'ctl-1', address: 3 } })
  const events: string[] = []
  const unsubscribe = ctx.app.hardware.subscribe((event) => { events.push(event.type) })
  t.teardown(unsubscribe)
  await until(() => accepted.length >= 2, 'the first drop')
  const start = await tracker.settled()
  await until(() => accepted.length >= 300, '300 connections', 60000)
  keep = true
  await until(() => ctx.app.hardware.controllerStates()[0].connected && events.at(-1) === 'station.connected', 'connected for good', 10000)
  // every connect and drop published for the station, each after its own lookup
  t.ok(events.filter((type) => type === 'station.connected').length >= 299, `${events.length} events`)
  // the sockets of the last drops close meanwhile: a socket left behind never does
  await until(async () => (await tracker.settled()).TCPWRAP === 2, 'the dropped connections closed').catch(() => {})
  const end = await tracker.settled()
  t.ok(end.Timeout - start.Timeout < 10, `timers: ${start.Timeout} after the first drop, ${end.Timeout} after 300`)
  t.equal(end.TCPWRAP, 2, 'sockets: the one connection up, its two ends')
  t.equal(ctx.app.hardware.subscribers, 1, 'listeners: this test\'s alone')
})
