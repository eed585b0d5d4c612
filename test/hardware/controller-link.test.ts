import net from 'node:net'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { encodeFrame, FrameDecoder, type Frame, type FrameArgsInput, type FrameInput } from '../../src/hardware/codec.js'
import { backoffDelay, ControllerLink, FRAMES_PER_TURN, type ControllerEvent, type ControllerLinkOptions, type LinkTimings, type Logger } from '../../src/hardware/controller-link.js'
import { HardwareError } from '../../src/hardware/errors.js'
import { freePort } from '../helpers/ports.js'
import { trackResources } from '../helpers/resources.js'
import { until, rejection, settledThisTurn } from '../helpers/wait.js'

// Generous where the test waits for something that should happen, short where it waits for a failure.
const BASE: LinkTimings = {
  ackTimeout: 5000,
  heartbeatIdle: 60000,
  deadAfter: 60000,
  backoffInitial: 10,
  backoffMax: 50,
  stableAfter: 60000,
  connectTimeout: 5000
}
const WAIT = 10000

/** Resolves with the first queued item matching `pred`, now or when it arrives. */
class Inbox<T> {
  private readonly items: T[] = []
  private readonly waiters: Array<{ pred: (item: T) => boolean, resolve: (item: T) => void }> = []

  push (item: T): void {
    const i = this.waiters.findIndex(w => w.pred(item))
    if (i === -1) this.items.push(item)
    else this.waiters.splice(i, 1)[0]!.resolve(item)
  }

  async take (pred: (item: T) => boolean = () => true, what = 'item'): Promise<T> {
    const i = this.items.findIndex(pred)
    if (i !== -1) return this.items.splice(i, 1)[0]!
    let waiter: { pred: (item: T) => boolean, resolve: (item: T) => void } | undefined
    let timer: NodeJS.Timeout | undefined
    try {
      return await new Promise<T>((resolve, reject) => {
        waiter = { pred, resolve }
        this.waiters.push(waiter)
        timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), WAIT)
      })
    } finally {
      clearTimeout(timer)
      const w = this.waiters.indexOf(waiter!)
      if (w !== -1) this.waiters.splice(w, 1)
    }
  }
}

/** One accepted connection of the fake controller. */
class RawConn {
  readonly all: Frame[] = []
  readonly inbox = new Inbox<Frame>()
  private readonly decoder = new FrameDecoder()
  constructor (readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      for (const frame of this.decoder.push(chunk)) {
        this.all.push(frame)
        this.inbox.push(frame)
      }
    })
    socket.on('error', () => {})
  }

  next (pred: (f: Frame) => boolean = () => true, what = 'a frame'): Promise<Frame> {
    return this.inbox.take(pred, what)
  }

  cmd (cmd: string, kind = 'REQ'): Promise<Frame> {
    return this.next(f => f.cmd === cmd && f.kind === kind, `${kind} ${cmd}`)
  }

  send (frame: FrameInput): void {
    this.socket.write(encodeFrame(frame))
  }

  ack (frame: Frame, args?: FrameArgsInput): void {
    this.send({ seq: frame.seq, kind: 'ACK', cmd: frame.cmd, args })
  }
}

/** A controller made of a bare TCP server, so each test decides every byte it sends. */
class RawController {
  readonly conns: RawConn[] = []
  readonly accepted = new Inbox<RawConn>()
  private constructor (readonly server: net.Server, readonly port: number) {}

  static async start (t: TestLike, port = 0): Promise<RawController> {
    const server = net.createServer()
    server.listen(port, '127.0.0.1')
    await once(server, 'listening')
    const ctl = new RawController(server, (server.address() as net.AddressInfo).port)
    server.on('connection', socket => {
      const conn = new RawConn(socket)
      ctl.conns.push(conn)
      ctl.accepted.push(conn)
    })
    t.teardown(() => ctl.stop())
    return ctl
  }

  nextConnection (): Promise<RawConn> {
    return this.accepted.take(() => true, 'a connection')
  }

  async stop (): Promise<void> {
    for (const conn of this.conns) conn.socket.destroy()
    if (this.server.listening) await new Promise(resolve => this.server.close(resolve))
  }
}

/** The part of a tap test the helpers need. */
interface TestLike { teardown (fn: () => unknown): void }

function makeLink (t: TestLike, port: number, timings: Partial<LinkTimings> = {}, options: ControllerLinkOptions = {}): ControllerLink {
  const link = new ControllerLink({ id: 'ctl-1', host: '127.0.0.1', port }, { ...options, timings: { ...BASE, ...timings } })
  t.teardown(() => link.close())
  return link
}

/** Starts a link against a fresh fake controller and answers its STATUS. */
async function connected (t: TestLike, timings: Partial<LinkTimings> = {}, options: ControllerLinkOptions = {}): Promise<{ ctl: RawController, link: ControllerLink, conn: RawConn }> {
  const ctl = await RawController.start(t)
  const link = makeLink(t, ctl.port, timings, options)
  const up = once(link, 'connected')
  const status = once(link, 'status')
  link.start()
  const conn = await ctl.nextConnection()
  conn.ack(await conn.cmd('STATUS'), { state: 'idle' })
  await up
  await status
  return { ctl, link, conn }
}

function captureLogger (): { logger: Logger, lines: Array<{ level: string, obj: object, msg?: string }> } {
  const lines: Array<{ level: string, obj: object, msg?: string }> = []
  const at = (level: string) => (obj: object, msg?: string): void => { lines.push({ level, obj, msg }) }
  return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } }
}


t.test('backoff: exponential ceiling, capped, with full jitter', async t => {
  const top = (): number => 0.999999
  t.same([0, 1, 2, 3, 4, 5, 6, 10, 100].map(n => Math.round(backoffDelay(n, 1000, 30000, top) / 1000)), [1, 2, 4, 8, 16, 30, 30, 30, 30])
  t.equal(backoffDelay(3, 1000, 30000, () => 0), 0, 'full jitter reaches down to 0')
  t.equal(backoffDelay(1, 1000, 30000, () => 0.5), 1000)
  t.equal(backoffDelay(2000, 1000, 30000, top) <= 30000, true, 'huge attempts do not overflow')
  t.equal(backoffDelay(-1, 1000, 30000, top) < 1000, true)
  const samples = Array.from({ length: 400 }, () => backoffDelay(3, 1000, 30000))
  t.ok(samples.every(d => d >= 0 && d < 8000), 'within [0, initial*2^n)')
  t.ok(new Set(samples).size > 50, 'jittered, not a fixed delay')
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length
  t.ok(mean > 2500 && mean < 5500, `uniform: mean ${mean} near 4000`)
})

t.test('backoff starts again from backoffInitial only after a connection stayed up stableAfter', async t => {
  for (const [stableAfter, expected] of [[60000, [1, 2, 3]], [0, [1, 1, 1]]] as const) {
    const { lines, logger } = captureLogger()
    const ctl = await RawController.start(t)
    const link = makeLink(t, ctl.port, { stableAfter }, { logger })
    const attempts = (): unknown[] => lines.filter(l => l.msg === 'reconnecting').map(l => (l.obj as { attempt: number }).attempt)
    let up = once(link, 'connected')
    link.start()
    for (let i = 0; i < 3; i++) {
      const conn = await ctl.nextConnection()
      conn.ack(await conn.cmd('STATUS'))
      await up
      up = once(link, 'connected')
      conn.socket.destroy()
      await until(() => attempts().length === i + 1, 'a reconnect')
    }
    t.same(attempts(), expected, `stableAfter ${stableAfter}`)
    await link.close()
  }
})

t.test('connects, sends STATUS as SEQ 0001 and keeps its answer', async t => {
  const ctl = await RawController.start(t)
  const link = makeLink(t, ctl.port)
  t.equal(link.connected, false)
  t.equal(link.lastSeenAt, null)
  const up = once(link, 'connected')
  link.start()
  link.start()
  const conn = await ctl.nextConnection()
  const status = await conn.next()
  t.same(status, { seq: 1, kind: 'REQ', cmd: 'STATUS', args: {} })
  t.equal(link.connected, false, 'not connected before the controller has said anything')
  t.equal((await rejection<HardwareError>(link.send('CLEAR', { addr: 1 }))).code, 'OFFLINE', 'nor driven')
  const statusEvent = once(link, 'status')
  conn.ack(status, { state: 'busy', addr3: 'lit:2', addr12: 'tray:T-1', fw: 'x' })
  await up
  t.equal(link.connected, true, 'its first frame, without a HELLO, is enough')
  const [state] = await statusEvent
  t.equal(state.state, 'busy')
  t.same(state.addresses, { 3: 'lit:2', 12: 'tray:T-1' })
  t.equal(link.state, state)
  t.type(link.lastSeenAt, Date)

  const sent = link.send('LIGHT', { addr: 3, qty: 2, text: 'M-100', ref: 'order-7' })
  const req = await conn.cmd('LIGHT')
  t.same(req, { seq: 2, kind: 'REQ', cmd: 'LIGHT', args: { addr: '3', qty: '2', text: 'M-100', ref: 'order-7' } })
  conn.send({ seq: req.seq, kind: 'ACK', cmd: 'CLEAR' }) // wrong CMD: not this command's answer
  conn.send({ seq: 999, kind: 'ACK', cmd: 'LIGHT' }) // unknown SEQ
  conn.ack(req, { note: 'ok' })
  t.same(await sent, { seq: 2, args: { note: 'ok' } })
  t.equal(link.pending, 0)
  t.ok(link.stats.framesIn >= 4 && link.stats.framesOut >= 2, 'counts frames')

  const bare = link.send('STATUS')
  conn.ack(await conn.cmd('STATUS'))
  await bare
  t.equal(link.state?.state, 'unknown', 'a STATUS without state=')
})

t.test('the controller restarts: the link reconnects, SEQ starts at 0001 again, STATUS is resent', async t => {
  const ctl = await RawController.start(t)
  const { port } = ctl
  const { lines, logger } = captureLogger()
  const link = makeLink(t, port, {}, { logger })
  link.start()
  const conn = await ctl.nextConnection()
  conn.ack(await conn.cmd('STATUS'), { state: 'busy', addr1: 'lit:1' })
  await once(link, 'status')
  const light = link.send('LIGHT', { addr: 1, qty: 1 })
  conn.ack(await conn.cmd('LIGHT'))
  t.equal((await light).seq, 2)

  const down = once(link, 'disconnected')
  await ctl.stop()
  const [reason] = await down
  t.type(reason, 'string')
  t.equal(link.connected, false)
  t.equal(link.state, null, 'no stale controller state while disconnected')
  const offline = await rejection<HardwareError>(link.send('CLEAR', { addr: 1 }))
  t.equal(offline.code, 'OFFLINE')
  await until(() => link.stats.connectFailures >= 2, 'failed reconnect attempts')

  const ctl2 = await RawController.start(t, port)
  const up = once(link, 'connected')
  const conn2 = await ctl2.nextConnection()
  const status = await conn2.next()
  t.same(status, { seq: 1, kind: 'REQ', cmd: 'STATUS', args: {} }, 'STATUS first, SEQ 0001')
  const resynced = once(link, 'status')
  conn2.ack(status, { state: 'idle' })
  await up
  await resynced
  t.equal(link.state?.state, 'idle')
  t.equal(link.stats.reconnects, 1)
  const again = link.send('CLEAR', { addr: 1 })
  conn2.ack(await conn2.cmd('CLEAR'))
  t.equal((await again).seq, 2)
  t.ok(lines.some(l => l.level === 'warn' && l.msg === 'controller disconnected'), 'logged the loss')
  t.equal(lines.filter(l => l.level === 'warn' && l.msg === 'cannot connect to controller').length, 1, 'one warning per outage')
})

t.test('a controller that closes every connection at once: one warning for the outage, not one per retry', async t => {
  const ctl = await RawController.start(t)
  ctl.server.on('connection', socket => socket.destroy())
  const { lines, logger } = captureLogger()
  const link = makeLink(t, ctl.port, {}, { logger })
  link.start()
  await until(() => link.stats.connectFailures >= 5, 'five connections closed at once')
  t.equal(link.connected, false)
  const warnings = lines.filter(l => l.level === 'warn' || l.level === 'error')
  t.same(warnings.map(l => l.msg), ['cannot connect to controller'], 'one warning per outage')
})

t.test('a link that drops after HELLO, before its STATUS is answered: one warning, \'controller disconnected\', and none with a stack; a STATUS that times out is one warning without a stack', async t => {
  const { lines, logger } = captureLogger()
  const ctl = await RawController.start(t)
  const link = makeLink(t, ctl.port, { ackTimeout: 30 }, { logger })
  link.start()
  const conn = await ctl.nextConnection()
  await conn.cmd('STATUS')
  const up = once(link, 'connected')
  conn.send({ seq: 1, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-1' } })
  await up
  const down = once(link, 'disconnected')
  conn.socket.destroy()
  await down
  await until(() => lines.some(l => l.msg === 'controller did not answer STATUS after connect'), 'the STATUS dropped')
  t.same(lines.filter(l => l.level === 'warn' || l.level === 'error').map(l => l.msg), ['controller disconnected'], 'the drop is said once (before: also the dropped STATUS, with a stack)')

  // the next connection: the controller says HELLO and never answers STATUS (the first send and the resend)
  const next = await ctl.nextConnection()
  await next.cmd('STATUS')
  next.send({ seq: 1, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-1' } })
  await until(() => lines.some(l => l.level === 'warn' && l.msg === 'controller did not answer STATUS after connect'), 'the STATUS timed out')
  const timedOut = lines.find(l => l.level === 'warn' && l.msg === 'controller did not answer STATUS after connect')
  t.match(timedOut?.obj, { code: 'TIMEOUT', reason: /did not acknowledge STATUS/ })
  t.notOk('err' in (timedOut?.obj ?? {}), 'an expected fault, no stack trace')
})

t.test('HELLO with another id: refused and never connected, retried with backoff, accepted once the id fits', async t => {
  const { lines, logger } = captureLogger()
  const ctl = await RawController.start(t)
  const link = makeLink(t, ctl.port, {}, { logger })
  let ups = 0
  link.on('connected', () => { ups++ })
  link.on('disconnected', () => { ups-- })
  link.start()
  for (let i = 0; i < 2; i++) {
    const conn = await ctl.nextConnection()
    await conn.cmd('STATUS')
    const closed = once(conn.socket, 'close')
    conn.send({ seq: 1, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-2', fw: 'x' } })
    await closed
    t.equal(link.connected, false)
  }
  t.equal(ups, 0, 'neither connected nor disconnected events')
  t.equal(link.lastSeenAt, null, 'a frame of another controller is not this one seen')
  t.equal(link.problem, `controller at 127.0.0.1:${ctl.port} answered as 'ctl-2', not 'ctl-1'`)
  const errors = lines.filter(l => l.level === 'error')
  t.equal(errors.length, 1, 'one error while the same mismatch goes on')
  t.match(errors[0], { obj: { host: '127.0.0.1', port: ctl.port, answeredAs: 'ctl-2' }, msg: /answered as 'ctl-2', not 'ctl-1': not driving it/ })
  t.notOk(lines.some(l => l.msg === 'cannot connect to controller' || l.msg === 'controller connected'))
  t.equal((await rejection<HardwareError>(link.send('LIGHT', { addr: 1, qty: 1 }))).code, 'OFFLINE')

  // the cabling fixed: a HELLO with the right id, later one without an id, are accepted
  for (const args of [{ id: 'ctl-1' }, { fw: 'x' }]) {
    const conn = await ctl.nextConnection()
    const up = once(link, 'connected')
    conn.send({ seq: 1, kind: 'EVT', cmd: 'HELLO', args })
    await up
    t.equal(link.problem, null)
    t.equal(link.connected, true)
    t.type(link.lastSeenAt, Date)
    conn.socket.destroy()
    await once(link, 'disconnected')
  }
  t.equal(lines.filter(l => l.level === 'error').length, 1)
})

t.test('a controller refused for another id that sends an event before its HELLO: the event is neither ACKed nor emitted, the stations do not flap, one error', async t => {
  const { lines, logger } = captureLogger()
  const ctl = await RawController.start(t)
  const link = makeLink(t, ctl.port, {}, { logger })
  const seen: string[] = []
  link.on('connected', () => seen.push('connected'))
  link.on('disconnected', () => seen.push('disconnected'))
  link.on('event', (e) => seen.push(e.cmd))
  link.start()
  const first = await ctl.nextConnection()
  first.send({ seq: 1, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-2' } })
  await once(first.socket, 'close')
  for (let i = 0; i < 2; i++) {
    const conn = await ctl.nextConnection()
    const closed = once(conn.socket, 'close')
    conn.send({ seq: 1, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 1, qty: 2, ref: 'not-ours' } })
    conn.send({ seq: 2, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-2' } })
    await closed
    t.notOk(conn.all.some(f => f.kind === 'ACK' || f.kind === 'NAK'), 'the event before the HELLO is not answered')
  }
  t.same(seen, [], 'no event emitted, never connected')
  t.equal(link.lastSeenAt, null, 'nor seen')
  t.equal(lines.filter(l => l.level === 'error').length, 1, 'one error while the same mismatch goes on')

  // the right controller now, sending its event before its HELLO: the event is taken once it is sent again after it
  const conn = await ctl.nextConnection()
  conn.send({ seq: 1, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 1, qty: 2 } })
  conn.send({ seq: 2, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-1' } })
  await once(link, 'connected')
  conn.send({ seq: 1, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 1, qty: 2 } })
  t.match(await conn.next(f => f.kind === 'ACK' && f.cmd === 'CONFIRM'), { seq: 1 })
  t.same(seen, ['connected', 'HELLO', 'CONFIRM'])
  t.equal(link.problem, null)
})

t.test('an offline controller: start() does not wait, commands fail at once with OFFLINE', async t => {
  const port = await freePort()
  const link = makeLink(t, port)
  const before = await rejection<HardwareError>(link.send('STATUS'))
  t.equal(before.code, 'OFFLINE', 'before start')
  t.equal(before.statusCode, 503)
  t.type(before, HardwareError)
  link.start() // returns at once: nothing below waits for it
  const send = link.send('LIGHT', { addr: 1, qty: 1 })
  t.equal(await settledThisTurn(send), 'rejected', 'rejected at once, while the first connect runs')
  const err = await rejection<HardwareError>(send)
  t.equal(err.code, 'OFFLINE')
  t.equal(err.controllerId, 'ctl-1')
  await until(() => link.stats.connectFailures >= 3, 'retries')
  t.equal(link.connected, false)
})

t.test('silence: the link is declared dead after deadAfter and reconnects; it pinged meanwhile', async t => {
  const ctl = await RawController.start(t)
  const link = makeLink(t, ctl.port, { heartbeatIdle: 40, deadAfter: 400 })
  const up = once(link, 'connected')
  link.start()
  const conn = await ctl.nextConnection()
  conn.send({ seq: 1, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-1', fw: 'x' } })
  await up
  const since = Date.now()
  const [reason] = await once(link, 'disconnected')
  const took = Date.now() - since
  t.match(reason, /no frame for 400 ms/)
  t.ok(took >= 380, `not before deadAfter (${took} ms)`)
  t.ok(took < 5000, `soon after deadAfter (${took} ms)`)
  t.ok(conn.all.some(f => f.kind === 'HBT' && f.cmd === 'PING'), 'sent PING while idle')
  await ctl.nextConnection()
})

t.test('heartbeat: PING after idle, answered PONGs keep the link alive; the link answers PING', async t => {
  const { link, conn } = await connected(t, { heartbeatIdle: 30, deadAfter: 600 })
  let dropped = false
  link.on('disconnected', () => { dropped = true })
  const started = Date.now()
  let pings = 0
  while (pings < 10 || Date.now() - started < 900) {
    const ping = await conn.next(f => f.kind === 'HBT', 'PING')
    t.equal(ping.cmd, 'PING')
    conn.send({ seq: ping.seq, kind: 'HBT', cmd: 'PONG' })
    pings++
  }
  t.equal(dropped, false, 'still up well past deadAfter')
  t.equal(link.connected, true)

  conn.send({ seq: 77, kind: 'HBT', cmd: 'PING' })
  const pong = await conn.next(f => f.cmd === 'PONG', 'PONG')
  t.same(pong, { seq: 77, kind: 'HBT', cmd: 'PONG', args: {} })
})

t.test('no ACK: exactly one resend with the same SEQ, then TIMEOUT', async t => {
  const { link, conn } = await connected(t, { ackTimeout: 80 })
  const sent = link.send('LIGHT', { addr: 3, qty: 2, ref: 'o-1' })
  const first = await conn.cmd('LIGHT')
  const second = await conn.cmd('LIGHT')
  t.same(second, first, 'same SEQ, same frame')
  const err = await rejection<HardwareError>(sent)
  t.equal(err.code, 'TIMEOUT')
  t.equal(err.statusCode, 504)
  t.equal(err.seq, first.seq)
  // too late for its client, but the controller did it: told as a late acknowledgement, once; an answer naming another CMD is not it
  const acknowledged: unknown[] = []
  link.on('acknowledged', c => acknowledged.push(c))
  conn.send({ seq: first.seq, kind: 'ACK', cmd: 'CLEAR' })
  conn.ack(first)
  conn.ack(first)
  await sleep(300)
  t.same(acknowledged, [{ cmd: 'LIGHT', args: { addr: 3, qty: 2, ref: 'o-1' }, seq: first.seq, late: true }], 'before: ignored, and the station showed idle')
  const clear = link.send('CLEAR', { addr: 3 })
  conn.ack(await conn.cmd('CLEAR'))
  await clear
  t.equal(conn.all.filter(f => f.cmd === 'LIGHT').length, 2, 'never a third send')
  t.equal(link.stats.timeouts, 1)
  t.equal(link.connected, true)
})

t.test('a resent command answered twice (a slow controller, or one stopped a while): the answer to its second copy is no warning', async t => {
  const { lines, logger } = captureLogger()
  const { link, conn } = await connected(t, { ackTimeout: 80 }, { logger, dropLogInterval: 60000 })
  // answered after the resend: both copies get their ACK, as the protocol has it
  const sent = link.send('LIGHT', { addr: 3, qty: 1 })
  const first = await conn.cmd('LIGHT')
  await conn.cmd('LIGHT')
  conn.ack(first)
  conn.ack(first)
  t.equal((await sent).seq, first.seq)
  // no answer to either copy in time: the 504, then both late ACKs
  const late = link.send('LIGHT', { addr: 4, qty: 1 })
  const other = await conn.cmd('LIGHT')
  await conn.cmd('LIGHT')
  t.equal((await rejection<HardwareError>(late)).code, 'TIMEOUT')
  conn.ack(other)
  conn.ack(other)
  // frames are read in order: once a CLEAR behind them is answered, both ACKs have been read
  const clear = link.send('CLEAR', { addr: 4 })
  conn.ack(await conn.cmd('CLEAR'))
  await clear
  t.same(lines.filter(l => l.level === 'warn'), [], 'before: a warning that an ACK matched no command in flight, for a controller that did as the protocol says')
  t.equal(lines.filter(l => l.level === 'debug' && /^ACK \d+ LIGHT answers the resent copy of a command already answered: ignored$/.test(l.msg ?? '')).length, 2)
  t.equal(lines.filter(l => /came after its command's timeout/.test(l.msg ?? '')).length, 1, 'the late ACK told once')
  // a third answer is a stray one again
  conn.ack(other)
  await until(() => lines.some(l => l.level === 'warn' && /matches no command in flight/.test(l.msg ?? '')), 'the warning')
})

t.test('a SEQ taken again after it wrapped is the new command\'s: an ACK that comes twice for it is not the old timed-out one\'s late ACK', async t => {
  const { link, conn } = await connected(t, { ackTimeout: 60 })
  const old = link.send('LIGHT', { addr: 3, qty: 1 })
  const first = await conn.cmd('LIGHT')
  await conn.cmd('LIGHT')
  t.equal((await rejection<HardwareError>(old)).code, 'TIMEOUT')
  // the SEQ runs to 9999 and starts at 1 again (heartbeats take SEQs too): here at once, as if 9999 frames had gone out
  ;(link as unknown as { session: { seq: number } }).session.seq = first.seq - 1
  const acknowledged: unknown[] = []
  link.on('acknowledged', c => acknowledged.push(c))
  const sent = link.send('LIGHT', { addr: 5, qty: 2 })
  const req = await conn.cmd('LIGHT')
  t.equal(req.seq, first.seq, 'the same SEQ again')
  // answered, then answered again (the controller acknowledges a resend too)
  conn.ack(req)
  await sent
  conn.ack(req)
  await sleep(100)
  t.same(acknowledged, [{ cmd: 'LIGHT', args: { addr: 5, qty: 2 }, seq: req.seq }], 'before: the second ACK was taken for the old LIGHT at address 3, which then showed busy')
})

t.test('three TIMEOUTs in a row mark the link dead; an answer in between resets the count', async t => {
  const { ctl, link, conn } = await connected(t, { ackTimeout: 150 })
  let drops = 0
  link.on('disconnected', () => { drops++ })
  for (let i = 0; i < 2; i++) t.equal((await rejection<HardwareError>(link.send('LIGHT', { addr: i + 1, qty: 1 }))).code, 'TIMEOUT')
  const clear = link.send('CLEAR', { addr: 9 })
  conn.send({ seq: (await conn.cmd('CLEAR')).seq, kind: 'NAK', cmd: 'CLEAR', args: { code: 'E1' } })
  t.equal((await rejection<HardwareError>(clear)).code, 'NAK')
  for (let i = 0; i < 2; i++) t.equal((await rejection<HardwareError>(link.send('LIGHT', { addr: i + 1, qty: 1 }))).code, 'TIMEOUT')
  t.equal(drops, 0, 'two in a row are not enough')
  const down = once(link, 'disconnected')
  t.equal((await rejection<HardwareError>(link.send('LIGHT', { addr: 3, qty: 1 }))).code, 'TIMEOUT')
  const [reason] = await down
  t.match(reason, /three commands/)
  await ctl.nextConnection()
})

t.test('NAK: rejected with the controller code and message', async t => {
  const { link, conn } = await connected(t)
  const sent = link.send('LIGHT', { addr: 3, qty: 2 })
  const req = await conn.cmd('LIGHT')
  conn.send({ seq: req.seq, kind: 'NAK', cmd: 'LIGHT', args: { code: 'E42', msg: 'jam; motor=1' } })
  const err = await rejection<HardwareError>(sent)
  t.type(err, HardwareError)
  t.match(err, { code: 'NAK', statusCode: 502, controllerCode: 'E42', controllerMessage: 'jam; motor=1', seq: req.seq, controllerId: 'ctl-1' })
  t.match(err.message, /E42/)
})

t.test('acknowledged: emitted at the ACK, with the command as sent, before an event read behind it and before send() resolves', async t => {
  const { link, conn } = await connected(t)
  const seen: string[] = []
  link.on('acknowledged', c => seen.push(`acknowledged ${c.cmd} ${c.seq} addr=${String(c.args.addr)}`))
  link.on('event', e => seen.push(`event ${e.cmd}`))
  const sent = link.send('LIGHT', { addr: 3, qty: 2 }).then(r => { seen.push(`resolved ${r.seq}`) })
  const req = await conn.cmd('LIGHT')
  conn.socket.write(Buffer.concat([encodeFrame({ seq: req.seq, kind: 'ACK', cmd: 'LIGHT' }), encodeFrame({ seq: 5, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 3, qty: 2 } })]))
  await sent
  t.same(seen, [`acknowledged LIGHT ${req.seq} addr=3`, 'event CONFIRM', `resolved ${req.seq}`])
  const nak = link.send('CLEAR', { addr: 3 })
  conn.send({ seq: (await conn.cmd('CLEAR')).seq, kind: 'NAK', cmd: 'CLEAR', args: { code: 'E1' } })
  await rejection(nak)
  t.equal(seen.length, 3, 'not for a NAK')
})

t.test('events: ACKed with the same SEQ and CMD, a duplicate SEQ is ACKed again but emitted once', async t => {
  const { ctl, link, conn } = await connected(t)
  const events: ControllerEvent[] = []
  link.on('event', e => events.push(e))
  const confirm: FrameInput = { seq: 7, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 3, qty: 2, ref: 'order-7' } }
  conn.socket.write(Buffer.concat([encodeFrame(confirm), encodeFrame(confirm)]))
  const acks = [await conn.next(f => f.kind === 'ACK', 'ACK 1'), await conn.next(f => f.kind === 'ACK', 'ACK 2')]
  t.same(acks, [{ seq: 7, kind: 'ACK', cmd: 'CONFIRM', args: {} }, { seq: 7, kind: 'ACK', cmd: 'CONFIRM', args: {} }])
  t.same(events, [{ cmd: 'CONFIRM', seq: 7, args: { addr: '3', qty: '2', ref: 'order-7' } }])

  // The window holds 64 SEQs: after 64 others, 7 counts as new again.
  for (let seq = 8; seq < 8 + 64; seq++) conn.send({ seq, kind: 'EVT', cmd: 'SHORTAGE', args: { addr: 1, qty: 0 } })
  conn.send(confirm)
  await until(() => events.length === 66, '66 events')
  t.equal(events.at(-1)?.seq, 7)

  // A new connection starts with an empty window.
  conn.socket.destroy()
  const conn2 = await ctl.nextConnection()
  conn2.ack(await conn2.cmd('STATUS'))
  conn2.send({ seq: 8, kind: 'EVT', cmd: 'TRAYREADY', args: { addr: 2, tray: 'T-5' } })
  await conn2.next(f => f.kind === 'ACK' && f.seq === 8, 'ACK of 8')
  t.same(events.at(-1), { seq: 8, cmd: 'TRAYREADY', args: { addr: '2', tray: 'T-5' } })
})

t.test('a controller that starts again on the same connection (its HELLO after other events): its new events are acted on, not taken for duplicates, and STATUS is asked again', async t => {
  const { lines, logger } = captureLogger()
  const { link, conn } = await connected(t, {}, { logger })
  const events: ControllerEvent[] = []
  link.on('event', e => events.push(e))
  conn.send({ seq: 1, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-1' } })
  conn.send({ seq: 1, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-1' } }) // sent again before any other event: a duplicate
  conn.send({ seq: 2, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 1, qty: 1, ref: 'before' } })
  await until(() => events.length === 2, 'the first HELLO and CONFIRM')
  t.same(events.map(e => e.cmd), ['HELLO', 'CONFIRM'])

  // a serial device server keeps the TCP connection while the controller behind it reboots: SEQ 0001 again
  conn.send({ seq: 1, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-1' } })
  conn.send({ seq: 2, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 1, qty: 1, ref: 'after' } })
  await conn.next(f => f.kind === 'ACK' && f.cmd === 'CONFIRM' && f.seq === 2 && conn.all.filter(a => a.kind === 'ACK' && a.cmd === 'CONFIRM').length === 2, 'the second CONFIRM ACKed')
  await until(() => events.length === 4, 'the HELLO and CONFIRM after the restart')
  t.same(events.map(e => [e.cmd, e.args.ref]), [['HELLO', undefined], ['CONFIRM', 'before'], ['HELLO', undefined], ['CONFIRM', 'after']])
  const status = await conn.cmd('STATUS')
  t.equal(status.seq, 2, 'STATUS asked again on the same connection')
  const resynced = once(link, 'status')
  conn.ack(status, { state: 'idle' })
  await resynced
  t.equal(link.state?.state, 'idle')
  t.equal(lines.filter(l => l.level === 'warn' && /HELLO again/.test(l.msg ?? '')).length, 1, 'one warning for the restart')
})

t.test('a burst of thousands of events in one write is worked off in batches: the event loop turns between them, every event is ACKed and emitted once, in order', async t => {
  const { conn, link } = await connected(t)
  const events: ControllerEvent[] = []
  let atFirstTurn: number | undefined
  link.on('event', e => {
    // before: the whole burst was emitted in one turn, so event-stream clients found it all queued for them at once
    if (events.length === 0) setImmediate(() => { atFirstTurn = events.length })
    events.push(e)
  })
  const burst = Array.from({ length: 3000 }, (_, i) => encodeFrame({ seq: i + 1, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 1, qty: 1, ref: `r${i + 1}` } }))
  conn.socket.write(Buffer.concat(burst))
  await until(() => events.length === 3000, '3000 events')
  t.ok(atFirstTurn !== undefined && atFirstTurn <= FRAMES_PER_TURN, `the loop turned after ${String(atFirstTurn)} of 3000 events (one batch at most)`)
  t.same(events.map(e => e.seq), Array.from({ length: 3000 }, (_, i) => i + 1), 'each once, in order')
  await until(() => conn.all.filter(f => f.kind === 'ACK' && f.cmd === 'CONFIRM').length === 3000, '3000 ACKs')
  // the socket reads again afterwards: the next event comes through as usual
  conn.send({ seq: 3001, kind: 'EVT', cmd: 'SHORTAGE', args: { addr: 2, qty: 0 } })
  await until(() => events.length === 3001, 'the event after the burst')
})

t.test('events with missing or invalid arguments, and unknown events: NAKed with a code, one warning each (no rate limit here), never emitted', async t => {
  const { lines, logger } = captureLogger()
  const { link, conn } = await connected(t, {}, { logger, dropLogInterval: 0 })
  const events: ControllerEvent[] = []
  link.on('event', e => events.push(e))
  const bad: Array<[string, FrameArgsInput, string, RegExp]> = [
    ['CONFIRM', { addr: 1, qty: -7 }, 'INVALID_EVENT', /^qty must be an integer from 0 to 99999, got "-7"$/],
    ['CONFIRM', { addr: 1 }, 'INVALID_EVENT', /^qty is missing$/],
    ['CONFIRM', { qty: 1 }, 'INVALID_EVENT', /^addr is missing$/],
    ['CONFIRM', { addr: 'abc', qty: 'x' }, 'INVALID_EVENT', /^addr must be an integer from 0 to 65535, got "abc"$/],
    ['CONFIRM', { addr: 1, qty: '99999999999999999999' }, 'INVALID_EVENT', /^qty must be/],
    ['SHORTAGE', { addr: 65536, qty: 1 }, 'INVALID_EVENT', /^addr must be/],
    ['SHORTAGE', { addr: 1, qty: '1.5' }, 'INVALID_EVENT', /^qty must be/],
    ['TRAYREADY', { addr: 1 }, 'INVALID_EVENT', /^tray is missing$/],
    ['TRAYREADY', { addr: 1, tray: '' }, 'INVALID_EVENT', /^tray is missing$/],
    ['FAULT', { addr: 1 }, 'INVALID_EVENT', /^code is missing$/],
    ['FAULT', { code: 'F1' }, 'INVALID_EVENT', /^addr is missing$/],
    ['DANCE', { addr: 1 }, 'UNKNOWN_EVENT', /^unknown event DANCE$/]
  ]
  let seq = 20
  for (const [cmd, args, code, msg] of bad) {
    conn.send({ seq: ++seq, kind: 'EVT', cmd, args })
    const answer = await conn.next(f => f.seq === seq && f.kind !== 'EVT', `answer to ${cmd}`)
    t.match(answer, { kind: 'NAK', cmd, args: { code, msg } }, `${cmd} ${JSON.stringify(args)}`)
  }
  const warnings = lines.filter(l => l.level === 'warn')
  t.equal(warnings.length, bad.length, 'one warning per refused event')
  t.match(warnings[0], { obj: { seq: 21, cmd: 'CONFIRM', code: 'INVALID_EVENT' }, msg: 'event refused: qty must be an integer from 0 to 99999, got "-7"' })
  conn.send({ seq: 21, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 1, qty: -7 } })
  t.match(await conn.next(f => f.seq === 21, 'the same SEQ again'), { kind: 'NAK' }, 'a refused SEQ is not remembered as acted on')

  // valid ones, with optional arguments left out: a FAULT without msg, a CONFIRM without ref, qty 0
  for (const [cmd, args] of [['FAULT', { addr: 0, code: 'F1' }], ['CONFIRM', { addr: 65535, qty: 0 }], ['TRAYREADY', { addr: 2, tray: 'T-1' }], ['HELLO', {}]] as const) {
    conn.send({ seq: ++seq, kind: 'EVT', cmd, args })
    t.match(await conn.next(f => f.seq === seq && f.kind !== 'EVT'), { kind: 'ACK', cmd })
  }
  t.same(events.map(e => e.cmd), ['FAULT', 'CONFIRM', 'TRAYREADY', 'HELLO'], 'only the valid ones are emitted')
})

t.test('a flood of refused events: each NAKed, but one warning at once and then one summary per interval with the count, not one each', async t => {
  const { lines, logger } = captureLogger()
  const { link, conn } = await connected(t, {}, { logger, dropLogInterval: 300 })
  const refused = () => lines.filter(l => l.level === 'warn' && /^(event refused|refused frames)/.test(l.msg ?? ''))
  const started = Date.now()
  const flood = 500
  conn.socket.write(Buffer.concat(Array.from({ length: flood }, (_, i) => encodeFrame({ seq: i + 1, kind: 'EVT', cmd: 'DANCE', args: { addr: 1 } }))))
  await until(() => conn.all.filter(f => f.kind === 'NAK').length === flood, 'a NAK for each')
  if (Date.now() - started < 250) t.equal(refused().length, 1, 'one warning so far, not 500')
  t.match(refused()[0], { obj: { seq: 1, cmd: 'DANCE', code: 'UNKNOWN_EVENT' }, msg: 'event refused: unknown event DANCE' })
  t.equal(lines.filter(l => l.level === 'debug' && l.msg === 'event refused: unknown event DANCE').length, flood - 1, 'the others at debug')
  await until(() => refused().length === 2, 'the summary line')
  t.match(refused()[1], { obj: { count: flood - 1, intervalMs: 300 }, msg: `refused frames: ${flood - 1} more since the last warning` })
  // one pending at close() is summed up then
  await sleep(400)
  conn.send({ seq: 9000, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 1 } })
  conn.send({ seq: 9001, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 1 } })
  await until(() => conn.all.some(f => f.seq === 9001 && f.kind === 'NAK'), 'the second NAK')
  t.equal(refused().length, 3, 'the first after the interval is a warning at once')
  await link.close()
  t.match(refused().at(-1), { obj: { count: 1 }, msg: 'refused frames: 1 more since the last warning' })
})

t.test('a controller that answers with another SEQ: the command times out, and a warning says the answer matched nothing (rate-limited)', async t => {
  const { lines, logger } = captureLogger()
  const { link, conn } = await connected(t, { ackTimeout: 60 }, { logger, dropLogInterval: 60000 })
  const sent = link.send('LIGHT', { addr: 3, qty: 1 })
  const frame = await conn.cmd('LIGHT')
  conn.send({ seq: frame.seq + 100, kind: 'ACK', cmd: 'LIGHT' })
  conn.send({ seq: frame.seq, kind: 'ACK', cmd: 'CLEAR' })
  t.match(await rejection<HardwareError>(sent), { code: 'TIMEOUT' })
  const warnings = lines.filter(l => l.level === 'warn' && /matches no command in flight/.test(l.msg ?? ''))
  t.equal(warnings.length, 1, 'one warning, the other at debug until the summary')
  t.match(warnings[0], { obj: { seq: frame.seq + 100, kind: 'ACK', cmd: 'LIGHT' }, msg: `ACK ${frame.seq + 100} LIGHT matches no command in flight (an answer after its command's timeout, or one with another SEQ or CMD): ignored` })
  t.equal(lines.filter(l => l.level === 'debug' && /^ACK \d+ CLEAR matches no command in flight/.test(l.msg ?? '')).length, 1, 'the one with another CMD too')
  t.equal(link.connected, true)
})

t.test('a command whose ACK comes behind a burst of events is answered once the burst is worked off, not timed out meanwhile', async t => {
  const { conn, link } = await connected(t, { ackTimeout: 60 })
  let emitted = 0
  // a listener that takes its time (10 ms every 256 events, about 310 ms for the burst): the work-off
  // outlasts both attempts' 60 ms, so without the wait the command fails on any machine
  link.on('event', () => {
    if (++emitted % 256 !== 0) return
    const until = Date.now() + 10
    while (Date.now() < until);
  })
  // built before the command goes out: its ACK timer runs from then on
  const burst = Buffer.concat(Array.from({ length: 8000 }, (_, i) => encodeFrame({ seq: i + 1, kind: 'EVT', cmd: 'SHORTAGE', args: { addr: 2, qty: 0 } })))
  const sent = link.send('LIGHT', { addr: 1, qty: 1 })
  const req = await conn.cmd('LIGHT')
  conn.socket.write(Buffer.concat([burst, encodeFrame({ seq: req.seq, kind: 'ACK', cmd: 'LIGHT' })]))
  const started = Date.now()
  // before: its timer ran out between the burst's batches (60 ms, twice), and the command failed with TIMEOUT
  t.match(await sent, { seq: req.seq }, `answered after ${Date.now() - started} ms`)
  t.equal(emitted, 8000, 'the burst was worked off first')
  t.ok(Date.now() - started > 2 * 60, 'after both attempts\' timeouts would have run out')
})

t.test('a REQ or EVT whose ARGS do not read gets a NAK INVALID_FRAME saying why, and is counted as dropped; nothing is emitted', async t => {
  const { conn, link } = await connected(t)
  const events: ControllerEvent[] = []
  link.on('event', e => events.push(e))
  const raw = (payload: string): Buffer => Buffer.concat([Buffer.from([0x02]), Buffer.from(payload, 'utf8'), Buffer.from([0x03])])
  // before: dropped without an answer, so the controller sent the pick again and again, and never learned why
  conn.socket.write(Buffer.concat([raw('0041|EVT|CONFIRM|addr=3;qty=1;qty=2'), raw('0042|EVT|CONFIRM|addr=3;qty=1;ref=é'), raw('0043|REQ|STATUS|x=%4')]))
  const naks = [await conn.next(f => f.kind === 'NAK' && f.seq === 41, 'NAK 41'), await conn.next(f => f.kind === 'NAK' && f.seq === 42, 'NAK 42'), await conn.next(f => f.kind === 'NAK' && f.seq === 43, 'NAK 43')]
  t.same(naks.map(f => [f.seq, f.cmd, f.args.code]), [[41, 'CONFIRM', 'INVALID_FRAME'], [42, 'CONFIRM', 'INVALID_FRAME'], [43, 'STATUS', 'INVALID_FRAME']])
  t.same(naks.map(f => f.args.msg), ['duplicate argument key qty', 'byte 0xc3 in payload', 'bad escape at 0'])
  t.equal(link.stats.droppedBytes > 0, true, 'counted as dropped')
  // a "|" the controller did not encode in a value: the header still reads
  conn.socket.write(raw('0045|EVT|CONFIRM|addr=3;qty=1;ref=A|B'))
  const pipe = await conn.next(f => f.kind === 'NAK' && f.seq === 45, 'NAK 45')
  t.same(pipe.args, { code: 'INVALID_FRAME', msg: 'expected 4 fields, got 5 (a "|" in ARGS must be sent as %7C)' })
  // a frame whose header does not read has no SEQ to answer: dropped, as before
  conn.socket.write(raw('12|EVT|CONFIRM|addr=3;qty=1'))
  conn.send({ seq: 44, kind: 'EVT', cmd: 'SHORTAGE', args: { addr: 3, qty: 0 } })
  // its ACK comes after any answer to the frame before it (one connection keeps the order)
  await conn.next(f => f.kind === 'ACK' && f.seq === 44, 'ACK 44')
  t.same(events.map(e => e.seq), [44])
  t.notOk(conn.all.some(f => f.seq === 12 && f.kind !== 'REQ'), 'no answer to a SEQ that is not 4 digits')
})

t.test('a NAK that echoes a long frame (its CMD, a value, a bad key) is cut to fit maxFrameBytes instead of throwing out of the data handler', async t => {
  const { conn, link } = await connected(t, {}, { maxFrameBytes: 4096 })
  const raw = (payload: string): Buffer => Buffer.concat([Buffer.from([0x02]), Buffer.from(payload, 'latin1'), Buffer.from([0x03])])
  // each is within 4096 bytes; before, each NAK was longer (the % escaped three times, the CMD twice) and encodeFrame's RangeError ended the process
  conn.socket.write(raw('0051|EVT|CONFIRM|' + '%'.repeat(1500)))
  conn.socket.write(raw('0052|EVT|' + 'X'.repeat(2100) + '|'))
  conn.socket.write(raw('0053|EVT|CONFIRM|addr=1;qty=' + '9'.repeat(4050)))
  conn.socket.write(raw('0054|REQ|' + 'Y'.repeat(4050) + '|'))
  const naks = [51, 52, 53, 54].map(seq => conn.next(f => f.kind === 'NAK' && f.seq === seq, `NAK ${seq}`))
  t.same((await Promise.all(naks)).map(f => f.args.code), ['INVALID_FRAME', 'UNKNOWN_EVENT', 'INVALID_EVENT', 'UNSUPPORTED'])
  t.equal(link.connected, true, 'the link is still up')
})

t.test('frames whose NAK does not fit maxFrameBytes: one warning with the CMD cut short, then one summary per interval, not one each', async t => {
  const { lines, logger } = captureLogger()
  const { link, conn } = await connected(t, {}, { logger, dropLogInterval: 300, maxFrameBytes: 4096 })
  const warnings = () => lines.filter(l => l.level === 'warn')
  const started = Date.now()
  const frames = 200
  for (let i = 1; i <= frames; i++) conn.socket.write(Buffer.from(`\x02${String(i).padStart(4, '0')}|REQ|${'Z'.repeat(4080)}|\x03`, 'latin1'))
  conn.send({ seq: 9999, kind: 'HBT', cmd: 'PING' })
  await conn.cmd('PONG', 'HBT')
  t.notOk(conn.all.some(f => f.kind === 'NAK'), 'none could be answered')
  if (Date.now() - started < 250) t.equal(warnings().length, 1, 'one warning so far, not 200')
  t.match(warnings()[0], { obj: { seq: 1, cmd: 'Z'.repeat(64), code: 'UNSUPPORTED' }, msg: 'the NAK for this frame does not fit maxFrameBytes: not sent' })
  await until(() => warnings().length === 2, 'the summary line')
  t.match(warnings()[1], { obj: { count: frames - 1 }, msg: `refused frames: ${frames - 1} more since the last warning` })
  t.equal(link.connected, true)
})

t.test('a first HELLO whose ARGS do not read is NAKed and does not identify the controller', async t => {
  const ctl = await RawController.start(t)
  const link = makeLink(t, ctl.port)
  link.start()
  const conn = await ctl.nextConnection()
  conn.socket.write(Buffer.from('\x020001|EVT|HELLO|id=ctl-2;fw=1%ZZ\x03', 'latin1'))
  t.match(await conn.next(f => f.kind === 'NAK' && f.seq === 1 && f.cmd === 'HELLO', 'NAK'), { args: { code: 'INVALID_FRAME' } })
  // before: the empty ARGS of the invalid frame passed the id check, and a controller answering as ctl-2 was driven
  t.equal(link.connected, false, 'not identified by a HELLO that said no readable id')
  conn.send({ seq: 2, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-2' } })
  await until(() => link.problem !== null, 'refused')
  t.equal(link.connected, false)
})

t.test('the connection drops with commands in flight and queued: all fail with LINK_DROPPED, none is re-sent', async t => {
  const { ctl, link, conn } = await connected(t, {}, { maxInFlight: 2 })
  const sends = [1, 2, 3].map(addr => link.send('LIGHT', { addr, qty: 1 }))
  await conn.cmd('LIGHT')
  await conn.cmd('LIGHT')
  t.equal(link.pending, 3, 'two in flight, one queued')
  const down = once(link, 'disconnected')
  conn.socket.destroy()
  const results = await Promise.allSettled(sends)
  await down
  for (const r of results) {
    t.equal(r.status, 'rejected')
    t.match((r as PromiseRejectedResult).reason, { code: 'LINK_DROPPED', statusCode: 503 })
  }
  t.equal(link.pending, 0)
  const conn2 = await ctl.nextConnection()
  const up = once(link, 'connected')
  conn2.ack(await conn2.cmd('STATUS'))
  await up
  const clear = link.send('CLEAR', { addr: 1 })
  conn2.ack(await conn2.cmd('CLEAR'))
  await clear
  t.same(conn2.all.map(f => f.cmd), ['STATUS', 'CLEAR'], 'nothing re-sent on its own')
})

t.test('stopSending(): queued commands fail with SHUTTING_DOWN and are never sent; those on the wire finish', async t => {
  const { link, conn } = await connected(t, {}, { maxInFlight: 1 })
  const sends = [1, 2, 3].map(addr => link.send('LIGHT', { addr, qty: 1 }))
  const first = await conn.cmd('LIGHT')
  link.stopSending()
  const queued = await Promise.allSettled(sends.slice(1))
  for (const r of queued) t.match((r as PromiseRejectedResult).reason, { code: 'SHUTTING_DOWN', statusCode: 503, message: /shutting down; the command was not sent to controller ctl-1/ })
  t.match(await rejection<HardwareError>(link.send('CLEAR', { addr: 1 })), { code: 'SHUTTING_DOWN' }, 'nothing new is taken')
  conn.ack(first)
  t.same((await sends[0]).seq, first.seq, 'the one on the wire finishes')
  await sleep(50)
  t.equal(conn.all.filter(f => f.kind === 'REQ' && f.cmd !== 'STATUS').length, 1, 'only the first was sent')
})

t.test('stopSending(): an event sent after it is neither acknowledged nor emitted, so the controller keeps it and sends it again; a duplicate of one acted on is acknowledged again (before: ACKed and emitted to streams already ended)', async t => {
  const { link, conn } = await connected(t)
  const events: ControllerEvent[] = []
  link.on('event', e => events.push(e))
  conn.send({ seq: 7, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 3, qty: 2, ref: 'before' } })
  await conn.next(f => f.kind === 'ACK' && f.seq === 7, 'ACK of 7')
  // a command on the wire keeps the connection open through the shutdown
  const light = link.send('LIGHT', { addr: 1, qty: 1 })
  const req = await conn.cmd('LIGHT')
  link.stopSending()
  conn.send({ seq: 8, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 3, qty: 1, ref: 'during' } })
  conn.send({ seq: 7, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 3, qty: 2, ref: 'before' } })
  // the duplicate's ACK comes after anything the link would have answered to 8
  await conn.next(f => f.kind === 'ACK' && f.seq === 7, 'the duplicate ACKed again')
  t.same(conn.all.filter(f => f.kind === 'ACK' || f.kind === 'NAK').map(f => f.seq), [7, 7], 'no answer to 8')
  t.same(events.map(e => e.args.ref), ['before'], 'and it is not acted on')
  // its last command answered, the link closes at once: the controller sends 8 again on its next connection
  conn.ack(req)
  t.equal((await light).seq, req.seq)
  await Promise.race([once(conn.socket, 'close'), sleep(2000)])
  t.ok(conn.socket.destroyed || conn.socket.readableEnded, 'closed by the link once nothing was on the wire')
  t.equal(link.connected, false)
})

t.test('stopSending() with no command on the wire: the connection closes at once, not when the gateway has finished its requests', async t => {
  const { logger, lines } = captureLogger()
  const { link, conn } = await connected(t, {}, { logger })
  link.stopSending()
  await Promise.race([once(conn.socket, 'close'), sleep(2000)])
  t.ok(conn.socket.destroyed || conn.socket.readableEnded, 'closed by the link')
  t.equal(link.connected, false)
  await link.close()
  t.match(lines.filter(l => l.msg === 'controller disconnected'), [{ level: 'info', obj: { reason: 'link closed' } }], 'logged as a normal shutdown, not as an outage')
})

t.test('stopSending(): a link that drops during the shutdown is not reconnected, so no STATUS goes out after it', async t => {
  const { ctl, link, conn } = await connected(t)
  const light = link.send('LIGHT', { addr: 1, qty: 1 })
  await conn.cmd('LIGHT')
  link.stopSending()
  conn.socket.destroy()
  t.match(await rejection<HardwareError>(light), { code: 'LINK_DROPPED' }, 'the command on the wire fails as on any drop')
  await sleep(300) // backoff is 10 to 50 ms here: a reconnect would have come
  t.equal(ctl.conns.length, 1, 'no new connection while shutting down')
  t.equal(link.connected, false)
  await link.close()
})

t.test('stopSending() while a connect is under way: the connection is closed when it opens, and no STATUS goes out', async t => {
  const ctl = await RawController.start(t)
  const link = makeLink(t, ctl.port)
  link.start()
  // the TCP connect has begun, not finished
  link.stopSending()
  const conn = await ctl.nextConnection()
  await Promise.race([once(conn.socket, 'close'), sleep(2000)])
  t.ok(conn.socket.destroyed || conn.socket.readableEnded, 'closed by the link')
  t.same(conn.all, [], 'not a frame: before, the new connection sent its STATUS after the shutdown began')
  t.equal(link.connected, false)
})

t.test('a signal aborted while its command waits in the queue: CANCELLED and never sent; one already on the wire goes on', async t => {
  const { link, conn } = await connected(t, {}, { maxInFlight: 1 })
  const callers = [1, 2, 3].map(() => new AbortController())
  const sends = callers.map((caller, i) => link.send('LIGHT', { addr: i + 1, qty: 1 }, { signal: caller.signal }))
  const first = await conn.cmd('LIGHT')
  callers[0].abort()
  callers[1].abort()
  const second = await rejection<HardwareError>(sends[1])
  t.match(second, { code: 'CANCELLED', statusCode: 503, seq: undefined, message: /the client went away before LIGHT was sent to controller ctl-1; it was not sent/ })
  t.equal(link.pending, 2, 'the one on the wire and the third')
  conn.ack(first)
  t.equal((await sends[0]).seq, first.seq, 'on the wire when its caller went: answered as usual')
  const third = await conn.cmd('LIGHT')
  t.equal(third.args.addr, '3', 'the third is sent next, the second never')
  conn.ack(third)
  await sends[2]
  callers[2].abort()
  t.match(await rejection<HardwareError>(link.send('CLEAR', { addr: 1 }, { signal: callers[2].signal })), { code: 'CANCELLED' }, 'an aborted signal: not even queued')
  await sleep(50)
  t.same(conn.all.filter(f => f.kind === 'REQ' && f.cmd !== 'STATUS').map(f => f.args.addr), ['1', '3'])
})

t.test('queue full: QUEUE_FULL at once, room again after an answer', async t => {
  const { link, conn } = await connected(t, {}, { maxQueue: 3, maxInFlight: 1 })
  const sends = [1, 2, 3].map(addr => link.send('LIGHT', { addr, qty: 1 }))
  const err = await rejection<HardwareError>(link.send('LIGHT', { addr: 4, qty: 1 }))
  t.match(err, { code: 'QUEUE_FULL', statusCode: 503 })
  const first = await conn.cmd('LIGHT')
  t.equal(conn.all.filter(f => f.cmd === 'LIGHT').length, 1, 'only maxInFlight on the wire')
  conn.ack(first)
  await sends[0]
  const fourth = link.send('LIGHT', { addr: 4, qty: 1 })
  for (let i = 0; i < 3; i++) conn.ack(await conn.cmd('LIGHT'))
  t.same((await Promise.all([...sends.slice(1), fourth])).map(r => r.seq), [3, 4, 5])
})

t.test('commands that cannot be encoded fail with INVALID_COMMAND', async t => {
  const { link } = await connected(t, {}, { maxFrameBytes: 4096 })
  t.equal((await rejection<HardwareError>(link.send('NO SUCH'))).code, 'INVALID_COMMAND')
  t.equal((await rejection<HardwareError>(link.send('LIGHT', { 'bad-key': 1 }))).code, 'INVALID_COMMAND')
  t.equal((await rejection<HardwareError>(link.send('LIGHT', { text: 'x'.repeat(5000) }))).code, 'INVALID_COMMAND')
  t.equal(link.pending, 0)
})

t.test('hostile controller input: garbage is counted, an oversize frame resets the connection', async t => {
  const { lines, logger } = captureLogger()
  const { ctl, link, conn } = await connected(t, {}, { logger, maxFrameBytes: 256 })
  conn.socket.write('garbage!')
  conn.socket.write(Buffer.from('\x02bad\x03'))
  conn.send({ seq: 5, kind: 'HBT', cmd: 'PING' })
  await conn.cmd('PONG', 'HBT')
  t.equal(link.stats.droppedBytes, 8 + 5)
  t.equal(link.stats.malformedFrames, 1)
  t.ok(lines.some(l => l.level === 'warn' && l.msg === 'dropped bytes from the controller'))

  conn.send({ seq: 6, kind: 'REQ', cmd: 'LIGHT' })
  t.match(await conn.next(f => f.kind === 'NAK'), { seq: 6, cmd: 'LIGHT', args: { code: 'UNSUPPORTED' } }, 'the gateway takes no requests')

  const down = once(link, 'disconnected')
  conn.socket.write(Buffer.concat([Buffer.from([2]), Buffer.alloc(1000, 0x41)]))
  const [reason] = await down
  t.equal(reason, 'frame too long')
  await ctl.nextConnection()
})

t.test('a controller that sends but does not read: its frames are not read on while the answers to them cannot be sent, so they do not pile up in memory', async t => {
  const { link, conn } = await connected(t)
  const socket = (): net.Socket => (link as unknown as { session: { socket: net.Socket } }).session.socket
  conn.socket.pause()
  // each 12-byte REQ is answered by a NAK five times its size: 2 MB of them ask for 10 MB of answers
  const frames = 170000
  const one = (i: number): string => `\x02${String((i % 9999) + 1).padStart(4, '0')}|REQ|X|\x03`
  for (let i = 0; i < frames; i += 1000) conn.socket.write(Buffer.from(Array.from({ length: 1000 }, (_, k) => one(i + k)).join(''), 'latin1'))
  const before = link.stats.framesIn
  let seen = -1
  // until the link stops taking frames (or took them all)
  await until(async () => {
    const now = link.stats.framesIn
    if (now - before >= frames) return true
    if (now === seen) return true
    seen = now
    await sleep(300)
    return false
  }, 'the link to stop reading', 60000)
  t.ok(link.stats.framesIn - before < frames, `the link stopped reading (${link.stats.framesIn - before} of ${frames} frames read)`)
  t.ok(socket().writableLength < 1024 * 1024, `answers held in memory: ${socket().writableLength} bytes`)

  // the controller reads again: every frame is read and answered
  conn.socket.resume()
  await until(() => link.stats.framesIn - before === frames, 'every frame read', 60000)
  await until(() => conn.all.filter(f => f.kind === 'NAK').length === frames, 'every frame answered', 60000)
  t.ok(link.connected)
})

t.test('a controller that never reads again is dropped after deadAfter, and the reason says it did not read', async t => {
  // the frames built before the link's deadAfter runs: built after, on a busy machine, they took longer
  // than its 500 ms, which ran out before the link had read any of them ('no frame for 500 ms')
  const one = (i: number): string => `\x02${String((i % 9999) + 1).padStart(4, '0')}|REQ|X|\x03`
  const chunks: Buffer[] = []
  for (let i = 0; i < 170000; i += 1000) chunks.push(Buffer.from(Array.from({ length: 1000 }, (_, k) => one(i + k)).join(''), 'latin1'))
  const { link, conn } = await connected(t, { deadAfter: 500, heartbeatIdle: 400 })
  conn.socket.pause()
  for (const chunk of chunks) conn.socket.write(chunk)
  const [reason] = await once(link, 'disconnected')
  t.match(reason, /^the controller did not read what it was sent, so none of its frames was read for 500 ms$/)
})

t.test('dropped bytes: counted, logged at once and then at most once per interval with the count; CR LF after frames is no garbage', async t => {
  const { lines, logger } = captureLogger()
  const { link, conn } = await connected(t, {}, { logger, dropLogInterval: 300 })
  const dropped = () => lines.filter(l => l.level === 'warn' && /^dropped bytes/.test(l.msg ?? ''))
  const started = Date.now()
  for (let i = 0; i < 500; i++) {
    conn.socket.write(Buffer.concat([Buffer.from('zz!'), encodeFrame({ seq: (i % 9000) + 1, kind: 'HBT', cmd: 'PONG' }), Buffer.from('\r\n')]))
  }
  conn.send({ seq: 9999, kind: 'HBT', cmd: 'PING' })
  await conn.cmd('PONG', 'HBT')
  t.equal(link.stats.droppedBytes, 1500, 'every garbage byte counted, none of the CR LF')
  if (Date.now() - started < 250) t.equal(dropped().length, 1, 'one warning so far, not 500')
  t.match(dropped()[0], { obj: { reason: 'garbage', bytes: 3 }, msg: 'dropped bytes from the controller' })
  await until(() => dropped().length === 2, 'the summary line')
  t.match(dropped()[1], { obj: { bytes: 1497, droppedBytes: 1500, intervalMs: 300 }, msg: 'dropped bytes from the controller: 1497 more since the last warning' })
  await sleep(400)
  t.equal(dropped().length, 2, 'nothing more while nothing is dropped')

  // after the interval the next drop is logged at once again; one pending at close() is summed up then
  conn.socket.write('a')
  await until(() => dropped().length === 3, 'the next drop')
  conn.socket.write('bc')
  await until(() => link.stats.droppedBytes === 1503, 'counted')
  await link.close()
  t.match(dropped().at(-1), { obj: { bytes: 2 } })
  t.equal(dropped().length, 4)
})

t.test('a frame whose handling throws resets that connection, logged, and the link reconnects: the process goes on', async t => {
  const { logger, lines } = captureLogger()
  const { ctl, link, conn } = await connected(t, {}, { logger })
  const handle = (link as unknown as { onFrame: (...args: unknown[]) => void }).onFrame
  ;(link as unknown as { onFrame: (...args: unknown[]) => void }).onFrame = () => { throw new Error('boom') }
  conn.send({ seq: 5, kind: 'EVT', cmd: 'CONFIRM', args: { addr: 1, qty: 1 } })
  await once(conn.socket, 'close')
  ;(link as unknown as { onFrame: (...args: unknown[]) => void }).onFrame = handle
  t.match(lines.find(l => l.level === 'error'), { obj: { seq: 5, kind: 'EVT', cmd: 'CONFIRM' }, msg: /could not be handled; the connection is reset/ })
  const again = await ctl.nextConnection()
  again.ack(await again.cmd('STATUS'))
  await until(() => link.connected, 'connected again')
})

t.test('a throwing listener does not break the link', async t => {
  const { lines, logger } = captureLogger()
  const { link, conn } = await connected(t, {}, { logger })
  link.on('event', () => { throw new Error('listener bug') })
  conn.send({ seq: 3, kind: 'EVT', cmd: 'FAULT', args: { addr: 1, code: 'F1', msg: 'x' } })
  await conn.next(f => f.kind === 'ACK' && f.seq === 3)
  const status = link.send('STATUS')
  conn.ack(await conn.cmd('STATUS'), { state: 'error' })
  await status
  t.ok(lines.some(l => l.level === 'error' && l.msg === 'listener failed'))
})

t.test('close(): rejects pending commands, stops reconnecting, leaves no handles', async t => {
  const baseline = process.getActiveResourcesInfo().filter(r => r === 'TCPSocketWrap' || r === 'Timeout').length
  const ctl = await RawController.start(t)
  const link = new ControllerLink({ id: 'ctl-1', host: '127.0.0.1', port: ctl.port }, { timings: { ...BASE, heartbeatIdle: 20, deadAfter: 5000 } })
  link.start()
  const conn = await ctl.nextConnection()
  conn.ack(await conn.cmd('STATUS'))
  await once(link, 'status')
  const pending = link.send('LIGHT', { addr: 1, qty: 1 })
  await conn.cmd('LIGHT')
  const closing = link.close()
  t.equal(link.close(), closing, 'idempotent')
  const err = await rejection<HardwareError>(pending)
  t.equal(err.code, 'LINK_DROPPED')
  await closing
  t.equal(link.connected, false)
  t.equal((await rejection<HardwareError>(link.send('STATUS'))).code, 'OFFLINE')
  t.throws(() => link.start(), /closed/)
  await sleep(150)
  t.equal(ctl.conns.length, 1, 'no reconnect after close')
  await ctl.stop()
  await until(() => process.getActiveResourcesInfo().filter(r => r === 'TCPSocketWrap' || r === 'Timeout').length <= baseline, 'handles to go')
  t.equal(link.listenerCount('connected'), 0)

  // Closing while waiting to reconnect, and before start.
  const offline = new ControllerLink({ id: 'x', host: '127.0.0.1', port: await freePort() }, { timings: { ...BASE, backoffInitial: 60000, backoffMax: 60000 } })
  offline.start()
  await until(() => offline.stats.connectFailures >= 1, 'a failed attempt')
  await offline.close()
  await new ControllerLink({ id: 'y', host: '127.0.0.1', port: 1 }).close()
  await until(() => process.getActiveResourcesInfo().filter(r => r === 'TCPSocketWrap' || r === 'Timeout').length <= baseline, 'handles to go')
})

t.test('a controller that connects and drops 1,000 times leaves no socket, timer or listener behind', async t => {
  const tracker = trackResources()
  t.teardown(() => tracker.stop())
  const ctl = await RawController.start(t)
  const link = makeLink(t, ctl.port, { backoffInitial: 1, backoffMax: 2, heartbeatIdle: 60000, deadAfter: 60000 })
  const listeners = (): number[] => link.eventNames().map(name => link.listenerCount(name))
  const before = listeners()
  let connects = 0
  let drops = 0
  link.on('connected', () => { connects++ })
  link.on('disconnected', () => { drops++ })
  link.start()
  let up: Record<string, number> | undefined
  for (let i = 0; i < 1000; i++) {
    const conn = await ctl.nextConnection()
    // the accepted connection is the test's, not the link's: forgotten, so the fake controller holds no socket either
    ctl.conns.length = 0
    // every other connection drops before it says anything (cannot connect), the others once up (link dropped)
    if (i % 2 === 1) {
      const status = once(link, 'status')
      conn.send({ seq: 1, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-1' } })
      conn.ack(await conn.cmd('STATUS'), { state: 'idle' })
      await status
      // the same point of every cycle: one connection up, its STATUS answered
      if (i === 1) up = await tracker.settled()
    }
    conn.socket.destroy()
  }
  const conn = await ctl.nextConnection()
  const status = once(link, 'status')
  conn.ack(await conn.cmd('STATUS'), { state: 'idle' })
  await status
  t.equal(connects, 501)
  t.equal(drops, 500)
  t.same(await tracker.settled(), up, 'after 1,000 drops, the sockets and timers of one connection, as after the first')
  t.same(listeners().slice(0, before.length), before, 'no listener added to the link')
  t.equal(conn.socket.listenerCount('data') <= 1, true)
  await link.close()
  await ctl.stop()
  t.same(await tracker.settled(), { Timeout: 0, TCPWRAP: 0, TCPCONNECTWRAP: 0 }, 'closed: none left')
})

t.test('option validation', async t => {
  t.throws(() => new ControllerLink({ id: 'a', host: 'h', port: 1 }, { maxQueue: 0 }), RangeError)
  t.throws(() => new ControllerLink({ id: 'a', host: 'h', port: 1 }, { maxInFlight: 1.5 }), RangeError)
  t.throws(() => new ControllerLink({ id: 'a', host: 'h', port: 1 }, { timings: { ackTimeout: -1 } }), RangeError)
  t.throws(() => new ControllerLink({ id: 'a', host: 'h', port: 1 }, { timings: { deadAfter: Number.NaN } }), RangeError)
  t.same(new ControllerLink({ id: 'a', host: 'h', port: 1 }).timings.ackTimeout, 2000)
})

t.test('HardwareError carries its status code and cause', async t => {
  const cause = new Error('socket hang up')
  const err = new HardwareError('LINK_DROPPED', 'dropped', { cause, controllerId: 'c' })
  t.equal(err.cause, cause)
  t.equal(err.statusCode, 503)
  t.equal(err.name, 'HardwareError')
  t.type(err, Error)
  t.equal(new HardwareError('TIMEOUT', 't').cause, undefined)
})
