// One persistent TCP client connection to one picking controller (DESIGN §8).

import { EventEmitter } from 'node:events'
import net from 'node:net'
import {
  encodeFrame,
  FrameDecoder,
  FrameTooLongError,
  nextSeq,
  DEFAULT_MAX_FRAME_BYTES,
  type Frame,
  type FrameArgs,
  type FrameArgsInput,
  type FrameInput
} from './codec.js'
import { HardwareError } from './errors.js'

export interface ControllerConfig {
  id: string
  host: string
  port: number
}

/** All in milliseconds. */
export interface LinkTimings {
  /** Wait for an ACK/NAK before the one resend, and again before failing. */
  ackTimeout: number
  /** Send a PING after this long without any frame in either direction. */
  heartbeatIdle: number
  /** Drop the connection after this long without any frame received. */
  deadAfter: number
  backoffInitial: number
  backoffMax: number
  /** The backoff only starts again from backoffInitial once a connection stayed up this long. */
  stableAfter: number
  connectTimeout: number
}

export const DEFAULT_LINK_TIMINGS: Readonly<LinkTimings> = Object.freeze({
  ackTimeout: 2000,
  heartbeatIdle: 10000,
  deadAfter: 30000,
  backoffInitial: 1000,
  backoffMax: 30000,
  stableAfter: 60000,
  connectTimeout: 5000
})

/** The pino methods the link uses. Pass a child logger that already names the controller. */
export interface Logger {
  debug (obj: object, msg?: string): void
  info (obj: object, msg?: string): void
  warn (obj: object, msg?: string): void
  error (obj: object, msg?: string): void
}

export interface ControllerLinkOptions {
  timings?: Partial<LinkTimings>
  maxFrameBytes?: number
  /** Commands sent or waiting to be sent; one more is refused with QUEUE_FULL. Default 32. */
  maxQueue?: number
  /** Commands sent and not yet answered; the rest wait in the queue. Default 4. */
  maxInFlight?: number
  /** TCP keep-alive initial delay. Default 10000. */
  keepAliveDelay?: number
  /** Dropped bytes and refused events are each logged at once, then at most once per this many ms (a summary with the count). Default 60000. */
  dropLogInterval?: number
  logger?: Logger
  /** For tests of the backoff: a source of numbers in [0, 1). */
  random?: () => number
}

export interface ControllerEvent {
  cmd: string
  args: FrameArgs
  seq: number
}

/** What the controller's last STATUS acknowledgement said. */
export interface ControllerState {
  /** `idle`, `busy` or `error` (whatever the controller sent; `unknown` when it sent none). */
  state: string
  /** `addrN=…` entries keyed by N. */
  addresses: Record<string, string>
  args: FrameArgs
  receivedAt: Date
}

export interface CommandResult {
  seq: number
  args: FrameArgs
}

export interface SendOptions {
  /**
   * Aborted when the caller no longer waits for the answer (its HTTP client went away): a command still in the
   * queue then fails with CANCELLED and is never sent; one already sent goes on, since the controller may act on it.
   */
  signal?: AbortSignal
}

export interface LinkStats {
  framesIn: number
  framesOut: number
  droppedBytes: number
  malformedFrames: number
  /** Successful connections after the first one. */
  reconnects: number
  connectFailures: number
  timeouts: number
}

/** A command the controller acknowledged, as it was sent. */
export interface AcknowledgedCommand {
  cmd: string
  args: FrameArgsInput
  seq: number
  /** the ACK came after the command's timeout (its client got the 504): the controller acted on it all the same */
  late?: boolean
}

/** commands whose timeout passed that a late ACK is still matched to, per session (the newest) */
const TIMED_OUT_KEPT = 64

export interface LinkEvents {
  connected: []
  disconnected: [reason: string]
  event: [event: ControllerEvent]
  status: [state: ControllerState]
  /**
   * Emitted as the ACK is read, before the frames behind it in the same read are acted on (send()'s promise
   * resolves only after them): what the command changed is recorded before an event that followed it.
   */
  acknowledged: [command: AcknowledgedCommand]
}

/** The events a controller sends and the arguments each needs (DESIGN §8); the others (ref, msg, fw) are optional. */
export const EVENT_REQUIRED_ARGS: Readonly<Record<string, readonly string[]>> = {
  HELLO: [],
  CONFIRM: ['addr', 'qty'],
  SHORTAGE: ['addr', 'qty'],
  TRAYREADY: ['addr', 'tray'],
  FAULT: ['addr', 'code']
}

/** The ranges of a station's address and a command's quantity in the API. */
const NUMERIC_ARGS: Record<string, number> = { addr: 65535, qty: 99999 }

/** Why an event cannot be acted on (answered with a NAK), or undefined when it can. */
export function eventProblem (cmd: string, args: FrameArgs): string | undefined {
  const required = EVENT_REQUIRED_ARGS[cmd]
  if (required === undefined) return `unknown event ${cmd}`
  for (const key of required) if (args[key] === undefined || args[key] === '') return `${key} is missing`
  for (const [key, max] of Object.entries(NUMERIC_ARGS)) {
    const value = args[key]
    if (value !== undefined && (!/^[0-9]{1,9}$/.test(value) || Number(value) > max)) return `${key} must be an integer from 0 to ${max}, got ${JSON.stringify(value)}`
  }
  return undefined
}

/**
 * Frames acted on in one turn of the event loop. A controller that sends thousands at once (its
 * buffered events after a stall) is worked off in batches, its socket paused in between (TCP
 * back-pressure): event-stream clients get written to between batches instead of finding a
 * whole burst queued for them at once (and being cut off as too slow), and requests go on.
 */
export const FRAMES_PER_TURN = 256

const noop = (): void => {}
const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop }

/**
 * Exponential backoff with full jitter: a uniform delay in
 * [0, min(max, initial·2^attempt)). `attempt` counts from 0.
 */
export function backoffDelay (attempt: number, initial: number, max: number, random: () => number = Math.random): number {
  const ceiling = Math.min(max, initial * 2 ** Math.min(Math.max(attempt, 0), 30))
  return Math.floor(random() * ceiling)
}

interface Pending {
  cmd: string
  args: FrameArgsInput
  seq: number
  attempts: number
  /** how often this attempt's wait was extended for frames received and not yet read (a burst's backlog) */
  extended: number
  timer: NodeJS.Timeout | undefined
  resolve: (result: CommandResult) => void
  reject: (err: HardwareError) => void
}

/**
 * A warning that may come thousands of times a second: the first is logged at once; what comes in
 * the next interval is counted, and then said in one summary (with the amount counted).
 */
export class WarningLimit {
  private at = Number.NEGATIVE_INFINITY
  private amount = 0
  private timer: NodeJS.Timeout | undefined

  constructor (private readonly intervalMs: number, private readonly summary: (amount: number) => void) {}

  /** true: log this one now; false: it is counted (by `amount`) for the summary, which is then due */
  first (amount: number): boolean {
    const now = Date.now()
    if (this.timer === undefined && now - this.at >= this.intervalMs) {
      this.at = now
      return true
    }
    this.amount += amount
    this.timer ??= setTimeout(() => this.flush(), this.at + this.intervalMs - now).unref()
    return false
  }

  /** At the end: the summary of what is counted, if a summary is due. */
  end (): void {
    if (this.timer === undefined) return
    clearTimeout(this.timer)
    this.flush()
  }

  private flush (): void {
    const { amount } = this
    this.at = Date.now()
    this.amount = 0
    this.timer = undefined
    this.summary(amount)
  }
}

/** State that lives exactly as long as one TCP connection. */
class Session {
  /** the TCP connection is up */
  connected = false
  /**
   * The controller has spoken: a HELLO with this link's id or none, or any other first frame. Only
   * then does the link count as connected, so that a controller answering as another id is never driven.
   */
  identified = false
  /** closed because the controller answered as another id */
  refused = false
  connectedAt = 0
  /** Set once the session is being torn down; the first reason wins. */
  endReason: string | undefined
  error: Error | undefined
  seq = 0
  consecutiveTimeouts = 0
  readonly inFlight = new Map<number, Pending>()
  /** the newest commands that timed out (TIMED_OUT_KEPT), by SEQ: a late ACK still tells what the controller did */
  readonly timedOut = new Map<number, { cmd: string, args: FrameArgsInput }>()
  /**
   * The newest commands sent twice and answered (in time or late), by SEQ, with their CMD: the
   * controller answers the resent copy too (a SEQ seen again is acknowledged again), no stray answer.
   */
  readonly answeredTwice = new Map<number, string>()
  readonly queue: Pending[] = []
  private readonly seen = new Set<number>()
  private readonly seenOrder: number[] = []
  /** events acted on since the controller's last HELLO (or since the connection opened, without one) */
  eventsSinceHello = 0
  connectTimer: NodeJS.Timeout | undefined
  idleTimer: NodeJS.Timeout | undefined
  deadTimer: NodeJS.Timeout | undefined
  /** frames received and not yet acted on (a burst beyond FRAMES_PER_TURN), from `next` on */
  backlog: Frame[] = []
  next = 0
  /** a turn to work off the backlog is scheduled */
  working = false
  /** the controller does not read what it is sent: its frames are not read either until it does ('drain') */
  writeBlocked = false

  constructor (readonly socket: net.Socket, readonly decoder: FrameDecoder) {}

  get ended (): boolean {
    return this.endReason !== undefined || this.socket.destroyed
  }

  takeSeq (): number {
    this.seq = nextSeq(this.seq)
    // the SEQ wrapped (9999): an ACK with it is the new frame's now, never the late one of a command that timed out under it
    this.timedOut.delete(this.seq)
    this.answeredTwice.delete(this.seq)
    return this.seq
  }

  /** A command sent twice got its answer: the answer to its other copy is expected. */
  answered (seq: number, cmd: string): void {
    this.answeredTwice.set(seq, cmd)
    if (this.answeredTwice.size > TIMED_OUT_KEPT) this.answeredTwice.delete(this.answeredTwice.keys().next().value as number)
  }

  /** Whether an event SEQ was acted on in this connection (a duplicate, acknowledged again). */
  actedOn (seq: number): boolean {
    return this.seen.has(seq)
  }

  /** Remembers an event SEQ; false when it was already acted on. */
  remember (seq: number): boolean {
    if (this.seen.has(seq)) return false
    this.seen.add(seq)
    this.seenOrder.push(seq)
    if (this.seenOrder.length > 64) this.seen.delete(this.seenOrder.shift()!)
    this.eventsSinceHello++
    return true
  }

  /** The controller started again on this connection (its HELLO after other events): its SEQs count from 0001 again. */
  forget (): void {
    this.seen.clear()
    this.seenOrder.length = 0
  }

  clearTimers (): void {
    clearTimeout(this.connectTimer)
    clearTimeout(this.idleTimer)
    clearTimeout(this.deadTimer)
    for (const p of this.inFlight.values()) clearTimeout(p.timer)
  }
}

export class ControllerLink extends EventEmitter<LinkEvents> {
  readonly id: string
  readonly host: string
  readonly port: number
  readonly timings: Readonly<LinkTimings>
  readonly maxFrameBytes: number
  readonly maxQueue: number
  readonly maxInFlight: number
  /** Last frame received, on any connection. */
  lastSeenAt: Date | null = null
  /** From the last STATUS acknowledgement on the current connection; null while disconnected. */
  state: ControllerState | null = null
  /** The id the controller at the configured address answered as, when that was another (its connection refused); null once one is accepted. */
  answeredAs: string | null = null
  /** why the last connection was reset, when it was for a frame longer than maxFrameBytes (cleared when one ends for another reason) */
  tooLong: string | null = null
  /**
   * Why the link is down, as readiness shows it to anyone, without the controller's address: how the
   * last connection ended (`link dropped: no frame for 30000 ms`) or the last connect failed
   * (`cannot connect: ECONNREFUSED`, a socket error by its code); null once a controller is connected,
   * and while none was ever tried.
   */
  downReason: string | null = null
  readonly stats: LinkStats = { framesIn: 0, framesOut: 0, droppedBytes: 0, malformedFrames: 0, reconnects: 0, connectFailures: 0, timeouts: 0 }

  private readonly log: Logger
  private readonly keepAliveDelay: number
  private readonly dropLogInterval: number
  /** bytes dropped from the stream: a noisy line must not flood the log */
  private readonly dropped: WarningLimit
  /** frames not acted on (events refused, NAKs too long to send, answers to no command): a controller repeating one thousands of times a second must not either */
  private readonly refused: WarningLimit
  private readonly random: () => number
  private session: Session | undefined
  private started = false
  private closing = false
  /** stopSending() was called: nothing more goes out but what is already on the wire, and no new event is answered */
  private draining = false
  /** an event was left unanswered since stopSending() (logged once at info, then at debug) */
  private eventsLeft = false
  private closed: Promise<void> | undefined
  private everConnected = false
  private attempt = 0
  private failuresInRow = 0
  private reconnectTimer: NodeJS.Timeout | undefined

  constructor (config: ControllerConfig, options: ControllerLinkOptions = {}) {
    super()
    this.id = config.id
    this.host = config.host
    this.port = config.port
    this.timings = Object.freeze({ ...DEFAULT_LINK_TIMINGS, ...options.timings })
    for (const [key, value] of Object.entries(this.timings)) {
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new RangeError(`timings.${key} must be a number >= 0`)
    }
    this.maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES
    this.maxQueue = options.maxQueue ?? 32
    this.maxInFlight = options.maxInFlight ?? 4
    if (!Number.isInteger(this.maxQueue) || this.maxQueue < 1) throw new RangeError('maxQueue must be an integer >= 1')
    if (!Number.isInteger(this.maxInFlight) || this.maxInFlight < 1) throw new RangeError('maxInFlight must be an integer >= 1')
    this.keepAliveDelay = options.keepAliveDelay ?? 10000
    this.dropLogInterval = options.dropLogInterval ?? 60000
    this.log = options.logger ?? silentLogger
    this.dropped = new WarningLimit(this.dropLogInterval, (bytes) => {
      this.log.warn({ bytes, droppedBytes: this.stats.droppedBytes, intervalMs: this.dropLogInterval }, `dropped bytes from the controller: ${bytes} more since the last warning`)
    })
    this.refused = new WarningLimit(this.dropLogInterval, (count) => {
      this.log.warn({ count, intervalMs: this.dropLogInterval }, `refused frames: ${count} more since the last warning`)
    })
    this.random = options.random ?? Math.random
  }

  /** Why the last connection was refused (the controller answered as another id), as the log says it; null once one is accepted. */
  get problem (): string | null {
    return this.answeredAs === null ? null : `controller at ${this.host}:${this.port} answered as '${this.answeredAs}', not '${this.id}'`
  }

  get connected (): boolean {
    return this.session !== undefined && this.session.identified && !this.session.ended
  }

  /** Commands sent or waiting on the current connection. */
  get pending (): number {
    return this.session === undefined ? 0 : this.session.inFlight.size + this.session.queue.length
  }

  /** Starts connecting in the background; never waits for the controller. */
  start (): void {
    if (this.closing) throw new Error('the link was closed')
    if (this.started) return
    this.started = true
    this.connect()
  }

  /**
   * Sends a REQ and resolves with its ACK. Rejects with a HardwareError:
   * NAK, TIMEOUT (after one resend with the same SEQ), OFFLINE, QUEUE_FULL,
   * LINK_DROPPED (never re-sent), INVALID_COMMAND (cannot be encoded), CANCELLED (options.signal, before it was sent).
   */
  send (cmd: string, args: FrameArgsInput = {}, options: SendOptions = {}): Promise<CommandResult> {
    try {
      encodeFrame({ seq: 1, kind: 'REQ', cmd, args }, this.maxFrameBytes)
    } catch (err) {
      return Promise.reject(new HardwareError('INVALID_COMMAND', (err as Error).message, { controllerId: this.id }))
    }
    if (options.signal?.aborted === true) return Promise.reject(this.cancelled(cmd))
    if (this.draining) return Promise.reject(this.notSent())
    const session = this.session
    if (this.closing || session === undefined || !session.identified || session.ended) {
      return Promise.reject(new HardwareError('OFFLINE', `controller ${this.id} is offline`, { controllerId: this.id }))
    }
    return this.enqueue(session, cmd, args, options.signal)
  }

  private enqueue (session: Session, cmd: string, args: FrameArgsInput, signal?: AbortSignal): Promise<CommandResult> {
    if (session.inFlight.size + session.queue.length >= this.maxQueue) {
      return Promise.reject(new HardwareError('QUEUE_FULL', `controller ${this.id} has ${this.maxQueue} commands pending`, { controllerId: this.id }))
    }
    return new Promise((resolve, reject) => {
      const p: Pending = { cmd, args, seq: 0, attempts: 0, extended: 0, timer: undefined, resolve, reject }
      if (signal !== undefined) {
        // Behind a slow controller a command can wait many seconds in the queue: a client that gave up meanwhile
        // (and may send it again) must not have it sent after all. Once on the wire it goes on as any command.
        const onAbort = (): void => {
          const i = session.queue.indexOf(p)
          if (i === -1) return
          session.queue.splice(i, 1)
          p.reject(this.cancelled(cmd))
        }
        signal.addEventListener('abort', onAbort, { once: true })
        p.resolve = (result) => { signal.removeEventListener('abort', onAbort); resolve(result) }
        p.reject = (err) => { signal.removeEventListener('abort', onAbort); reject(err) }
      }
      session.queue.push(p)
      this.pump(session)
    })
  }

  private cancelled (cmd: string): HardwareError {
    return new HardwareError('CANCELLED', `the client went away before ${cmd} was sent to controller ${this.id}; it was not sent`, { controllerId: this.id })
  }

  /**
   * The start of a shutdown: commands not yet sent fail at once with SHUTTING_DOWN (their clients learn that
   * nothing reached the controller) and no more are taken; those already sent go on until answered or closed.
   * An event the controller sends from now on is neither answered nor acted on (a duplicate of one acted on
   * is acknowledged again): the event streams end with the stop, so an ACK would tell the controller that an
   * event was delivered that nobody gets; unanswered, the controller keeps it and sends it again.
   */
  stopSending (): void {
    this.draining = true
    // a reconnect already scheduled does not happen either
    clearTimeout(this.reconnectTimer)
    this.reconnectTimer = undefined
    const queued = this.session?.queue.splice(0) ?? []
    for (const p of queued) p.reject(this.notSent())
    this.closeIfIdle()
  }

  /**
   * During a shutdown, a connection with no command left on the wire is closed at once, not only once the gateway
   * has finished its requests (a slow upload holds it for the whole grace period): it answers no event any more,
   * and a controller may give up an event that it sent twice without an answer while the connection stays,
   * where it sends one that a connection closed without answering again after its reconnect.
   */
  private closeIfIdle (): void {
    const session = this.session
    if (!this.draining || this.closing || session === undefined || !session.connected || session.inFlight.size > 0) return
    void this.close()
  }

  /**
   * The end of a shutdown's grace period: commands still waiting for their ACK fail now with TIMEOUT (504), so
   * that their clients get an answer before the connections are cut. The controller may have acted on them, as
   * after any timeout (a late ACK still counts). Returns how many there were.
   */
  abandon (when = 'the grace period ended'): number {
    const session = this.session
    if (session === undefined) return 0
    const waiting = [...session.inFlight.values()]
    for (const p of waiting) {
      clearTimeout(p.timer)
      this.giveUp(session, p, `the gateway is shutting down: controller ${this.id} had not acknowledged ${p.cmd} when ${when}; it may have carried it out`)
    }
    return waiting.length
  }

  /** A command given up on without its ACK: 504 to its caller, kept as timed out so that a late ACK still counts. */
  private giveUp (session: Session, p: Pending, message: string): void {
    session.inFlight.delete(p.seq)
    session.timedOut.set(p.seq, { cmd: p.cmd, args: p.args })
    if (session.timedOut.size > TIMED_OUT_KEPT) session.timedOut.delete(session.timedOut.keys().next().value as number)
    p.reject(new HardwareError('TIMEOUT', message, { controllerId: this.id, seq: p.seq }))
    this.closeIfIdle()
  }

  private notSent (): HardwareError {
    return new HardwareError('SHUTTING_DOWN', `the gateway is shutting down; the command was not sent to controller ${this.id}`, { controllerId: this.id })
  }

  /** Stops reconnecting, fails pending commands with LINK_DROPPED, resolves once the socket is closed. */
  close (): Promise<void> {
    if (this.closed !== undefined) return this.closed
    this.closing = true
    clearTimeout(this.reconnectTimer)
    this.reconnectTimer = undefined
    this.dropped.end()
    this.refused.end()
    const session = this.session
    if (session === undefined) {
      this.closed = Promise.resolve()
    } else {
      this.closed = new Promise(resolve => session.socket.once('close', () => resolve()))
      this.endSession(session, 'link closed')
    }
    return this.closed
  }

  private connect (): void {
    const socket = new net.Socket()
    const decoder = new FrameDecoder({
      maxFrameBytes: this.maxFrameBytes,
      onDiscard: (reason, bytes, detail) => {
        this.stats.droppedBytes += bytes
        if (reason === 'malformed') this.stats.malformedFrames++
        this.logDropped(reason, bytes, detail)
      }
    })
    const session = new Session(socket, decoder)
    this.session = session
    session.connectTimer = setTimeout(() => {
      this.endSession(session, `connect timeout after ${this.timings.connectTimeout} ms`)
    }, this.timings.connectTimeout).unref()
    socket.on('connect', () => this.onConnect(session))
    socket.on('data', (chunk: Buffer) => this.onData(session, chunk))
    socket.on('error', (err) => { session.error ??= err })
    socket.on('close', () => this.onClose(session))
    this.log.debug({ host: this.host, port: this.port }, 'connecting to controller')
    socket.connect({ host: this.host, port: this.port })
  }

  /** The first drop at once, then at most one summary per dropLogInterval. */
  private logDropped (reason: string, bytes: number, detail: string): void {
    if (this.dropped.first(bytes)) this.log.warn({ reason, bytes, detail, droppedBytes: this.stats.droppedBytes }, 'dropped bytes from the controller')
  }

  /** A refused frame: the first at once as a warning, the others of the next dropLogInterval at debug, then one summary with their count. */
  private logRefused (obj: object, msg: string): void {
    this.log[this.refused.first(1) ? 'warn' : 'debug'](obj, msg)
  }

  private onConnect (session: Session): void {
    clearTimeout(session.connectTimer)
    if (session.ended) return
    // a connect under way when the shutdown began: nothing goes to the controller after it, STATUS neither
    if (this.draining) {
      this.endSession(session, 'link closed')
      return
    }
    session.socket.setNoDelay(true)
    session.socket.setKeepAlive(true, this.keepAliveDelay)
    session.connected = true
    session.connectedAt = Date.now()
    session.idleTimer = setTimeout(() => this.onIdle(session), this.timings.heartbeatIdle).unref()
    session.deadTimer = setTimeout(() => {
      // not reading its frames is the gateway's doing then (writeBytes): the log says what the controller did
      this.endSession(session, session.writeBlocked
        ? `the controller did not read what it was sent, so none of its frames was read for ${this.timings.deadAfter} ms`
        : `no frame for ${this.timings.deadAfter} ms`)
    }, this.timings.deadAfter).unref()
    // STATUS goes first so it always carries SEQ 0001 of the new connection; it changes nothing on the controller,
    // so it may go before the controller has said who it is.
    this.enqueue(session, 'STATUS', {}).catch((err: HardwareError) => {
      // a link closed right after it connected, or refused, drops its STATUS: no fault of the controller. Nor is
      // it news when the controller never spoke (closed at once, silent): the one 'cannot connect' warning per
      // outage says so, and a warning for each retry would be one more line every backoff for as long as it lasts.
      // A link that dropped before the answer has its own 'controller disconnected' warning; the rest is an
      // expected fault, said without a stack, as a command's 504 is.
      const quiet = this.closing || session.refused || !session.identified || err.code === 'LINK_DROPPED'
      this.log[quiet ? 'debug' : 'warn'](err instanceof HardwareError ? { code: err.code, reason: err.message } : { err }, 'controller did not answer STATUS after connect')
    })
  }

  /** The controller's first frame: HELLO with the configured id (or none) or anything else. */
  private identify (session: Session, frame: Frame): boolean {
    const id = frame.kind === 'EVT' && frame.cmd === 'HELLO' ? frame.args.id : undefined
    if (id !== undefined && id !== this.id) {
      // wrong IP or port in the configuration, or a swapped cable: lighting positions there would mislead operators
      const again = this.answeredAs === id
      this.answeredAs = id
      const problem = this.problem!
      this.log[again ? 'debug' : 'error']({ host: this.host, port: this.port, answeredAs: id }, `${problem}: not driving it; check hardware.controllers`)
      session.refused = true
      this.endSession(session, problem)
      return false
    }
    if (session.identified) return true
    if (this.answeredAs !== null && !(frame.kind === 'EVT' && frame.cmd === 'HELLO')) {
      // It answered as another controller before: only its HELLO tells whether it still does. Taking another frame
      // for it would publish that controller's events as this one's, and flap the stations connected, at every retry.
      // Not answered, so a controller that is the right one now sends it again after its HELLO.
      this.log.debug({ seq: frame.seq, kind: frame.kind, cmd: frame.cmd }, 'frame before the HELLO of a controller refused before: not acted on')
      return false
    }
    session.identified = true
    this.answeredAs = null
    this.downReason = null
    this.failuresInRow = 0
    if (this.everConnected) this.stats.reconnects++
    this.everConnected = true
    this.log.info({ host: this.host, port: this.port }, 'controller connected')
    this.safeEmit('connected')
    return !session.ended
  }

  private onData (session: Session, chunk: Buffer): void {
    if (session.ended) return
    let frames: Frame[]
    try {
      frames = session.decoder.push(chunk)
    } catch (err) {
      if (!(err instanceof FrameTooLongError)) throw err
      this.log.warn({ maxFrameBytes: this.maxFrameBytes }, 'frame too long, resetting the connection')
      this.tooLong = `the controller sent a frame longer than ${this.maxFrameBytes} bytes (hardware.maxFrameBytes), so its connection is reset: raise hardware.maxFrameBytes if it is a real one (a STATUS answer with many lit positions)`
      this.endSession(session, 'frame too long')
      return
    }
    // the usual case: a few frames, acted on at once
    if (!session.working && frames.length <= FRAMES_PER_TURN) {
      for (const frame of frames) {
        if (session.ended) return
        this.act(session, frame)
      }
      return
    }
    for (const frame of frames) session.backlog.push(frame)
    this.workOff(session)
  }

  /** Acts on FRAMES_PER_TURN frames of the backlog, then on the rest in later turns, the socket paused meanwhile. */
  private workOff (session: Session): void {
    if (session.working) return
    const { backlog } = session
    for (let n = 0; n < FRAMES_PER_TURN && session.next < backlog.length; n++) {
      // frames left when the session ends were never ACKed: the controller sends them again
      if (session.ended) return
      this.act(session, backlog[session.next++])
    }
    if (session.next < backlog.length) {
      session.working = true
      session.socket.pause()
      setImmediate(() => {
        session.working = false
        if (!session.ended) this.workOff(session)
      })
      return
    }
    session.backlog = []
    session.next = 0
    if (!session.writeBlocked) session.socket.resume()
  }

  /**
   * onFrame, and what it may throw ends this connection (logged, reconnected as after any drop), not
   * the process: whatever a controller sends, the gateway and its other links go on.
   */
  private act (session: Session, frame: Frame): void {
    try {
      this.onFrame(session, frame)
    } catch (err) {
      this.log.error({ err, seq: frame.seq, kind: frame.kind, cmd: frame.cmd.slice(0, 64) }, 'a frame from the controller could not be handled; the connection is reset')
      this.endSession(session, 'frame could not be handled')
    }
  }

  private onFrame (session: Session, frame: Frame): void {
    this.stats.framesIn++
    session.deadTimer?.refresh()
    session.idleTimer?.refresh()
    if (frame.invalid !== undefined) {
      if (session.identified) this.lastSeenAt = new Date()
      // SEQ, KIND and CMD read, the ARGS did not (counted as dropped): a REQ or EVT gets a NAK saying
      // why, as every one is answered, instead of being sent again and again unanswered. Before
      // identify(): a HELLO whose id did not read says nothing about who the controller is.
      if (frame.kind === 'REQ' || frame.kind === 'EVT') this.nak(session, frame, 'INVALID_FRAME', frame.invalid)
      return
    }
    // lastSeenAt is this controller's last frame: not one of a controller that answered as another id (a swapped
    // cable), whose HELLO at every retry would otherwise show a station offline but seen just now
    if (!this.identify(session, frame)) return
    this.lastSeenAt = new Date()
    switch (frame.kind) {
      case 'HBT':
        if (frame.cmd === 'PING') this.write(session, { seq: frame.seq, kind: 'HBT', cmd: 'PONG' })
        return
      case 'ACK':
      case 'NAK':
        this.onReply(session, frame)
        return
      case 'EVT':
        this.onEvent(session, frame)
        return
      case 'REQ':
        this.nak(session, frame, 'UNSUPPORTED', 'the gateway takes no requests')
    }
  }

  private onReply (session: Session, frame: Frame): void {
    const p = session.inFlight.get(frame.seq)
    if (p === undefined && session.answeredTwice.get(frame.seq) === frame.cmd) {
      // a controller that was slow (or stopped a while) answers both copies of a resent command: the second is no fault
      session.answeredTwice.delete(frame.seq)
      this.log.debug({ seq: frame.seq, kind: frame.kind, cmd: frame.cmd }, `${frame.kind} ${frame.seq} ${frame.cmd} answers the resent copy of a command already answered: ignored`)
      return
    }
    const late = p === undefined && frame.kind === 'ACK' ? session.timedOut.get(frame.seq) : undefined
    if (late !== undefined && late.cmd === frame.cmd) {
      // its client got the 504, but the controller did it (a position lit, a tray called): the station's state says so
      session.timedOut.delete(frame.seq)
      session.answered(frame.seq, frame.cmd)
      this.log.info({ seq: frame.seq, cmd: frame.cmd }, `ACK ${frame.seq} ${frame.cmd} came after its command's timeout (its client was answered 504): the controller carried it out`)
      // a STATUS answer too: frames come in the order the controller sent them, so it is no older than what was
      // read before it, and what comes behind it is applied after it, as for one in time (the STATUS after a
      // reconnect to a controller still starting up was otherwise lost, and its lit positions showed idle)
      if (late.cmd === 'STATUS') this.applyStatus(frame.args)
      this.safeEmit('acknowledged', { cmd: late.cmd, args: late.args, seq: frame.seq, late: true })
      return
    }
    if (p === undefined || p.cmd !== frame.cmd) {
      // a warning (rate-limited): a controller that answers with another SEQ or CMD otherwise showed only as 504s
      this.logRefused({ seq: frame.seq, kind: frame.kind, cmd: frame.cmd.slice(0, 64) }, `${frame.kind} ${frame.seq} ${frame.cmd.slice(0, 64)} matches no command in flight (an answer after its command's timeout, or one with another SEQ or CMD): ignored`)
      return
    }
    session.inFlight.delete(frame.seq)
    clearTimeout(p.timer)
    if (p.attempts >= 2) session.answered(frame.seq, frame.cmd)
    session.consecutiveTimeouts = 0
    if (frame.kind === 'ACK') {
      if (p.cmd === 'STATUS') this.applyStatus(frame.args)
      this.safeEmit('acknowledged', { cmd: p.cmd, args: p.args, seq: frame.seq })
      p.resolve({ seq: frame.seq, args: frame.args })
    } else {
      const controllerCode = frame.args.code
      const controllerMessage = frame.args.msg
      p.reject(new HardwareError('NAK', `controller ${this.id} refused ${p.cmd}: ${controllerCode ?? '?'} ${controllerMessage ?? ''}`.trimEnd(), {
        controllerId: this.id, seq: frame.seq, controllerCode, controllerMessage
      }))
    }
    this.pump(session)
    this.closeIfIdle()
  }

  private onEvent (session: Session, frame: Frame): void {
    const problem = eventProblem(frame.cmd, frame.args)
    if (problem !== undefined) {
      // not acted on, so not remembered: the same SEQ sent again is refused again
      const code = EVENT_REQUIRED_ARGS[frame.cmd] === undefined ? 'UNKNOWN_EVENT' : 'INVALID_EVENT'
      this.logRefused({ seq: frame.seq, cmd: frame.cmd, args: frame.args, code }, `event refused: ${problem}`)
      this.nak(session, frame, code, problem)
      return
    }
    if (this.draining && !session.actedOn(frame.seq)) {
      const level = this.eventsLeft ? 'debug' : 'info'
      this.eventsLeft = true
      this.log[level]({ seq: frame.seq, cmd: frame.cmd }, 'the gateway is stopping: event not answered, so that the controller sends it again after the restart')
      return
    }
    this.write(session, { seq: frame.seq, kind: 'ACK', cmd: frame.cmd })
    // A HELLO after other events: the controller started again while the TCP connection stayed (a serial device
    // server keeps it over the controller's reboot). It counts its SEQs from 0001 again, so the window of the SEQs
    // acted on before would take its new events for duplicates, ACK them and drop them (a pick lost), and what it
    // had lit is gone: the window is forgotten and STATUS asked again, as after a reconnect. A HELLO sent again
    // before any other event (its ACK lost) is a duplicate as any other.
    const restarted = frame.cmd === 'HELLO' && session.eventsSinceHello > 0
    if (restarted) {
      this.log.warn({ seq: frame.seq }, 'controller said HELLO again on the same connection: it started again; asking its STATUS')
      session.forget()
    }
    if (!session.remember(frame.seq)) {
      this.log.debug({ seq: frame.seq, cmd: frame.cmd }, 'duplicate event acknowledged again')
      return
    }
    if (frame.cmd === 'HELLO') session.eventsSinceHello = 0
    this.safeEmit('event', { cmd: frame.cmd, args: frame.args, seq: frame.seq })
    // not while shutting down: nothing goes to the controller after stopSending() but what is on the wire
    if (restarted && !session.ended && !this.draining && !this.closing) {
      this.enqueue(session, 'STATUS', {}).catch((err: HardwareError) => {
        this.log.debug({ err }, 'controller did not answer STATUS after its HELLO')
      })
    }
  }

  private applyStatus (args: FrameArgs): void {
    const addresses: Record<string, string> = {}
    for (const [key, value] of Object.entries(args)) {
      const m = /^addr([0-9]+)$/.exec(key)
      if (m !== null) addresses[String(Number(m[1]))] = value
    }
    this.state = { state: args.state ?? 'unknown', addresses, args, receivedAt: new Date() }
    this.safeEmit('status', this.state)
  }

  private onIdle (session: Session): void {
    if (session.ended) return
    // write() re-arms this timer.
    this.write(session, { seq: session.takeSeq(), kind: 'HBT', cmd: 'PING' })
  }

  private pump (session: Session): void {
    while (!session.ended && session.inFlight.size < this.maxInFlight && session.queue.length > 0) {
      const p = session.queue.shift()!
      p.seq = session.takeSeq()
      session.inFlight.set(p.seq, p)
      this.transmit(session, p)
    }
  }

  private transmit (session: Session, p: Pending): void {
    p.attempts++
    p.extended = 0
    this.write(session, { seq: p.seq, kind: 'REQ', cmd: p.cmd, args: p.args })
    p.timer = setTimeout(() => this.onAckTimeout(session, p), this.timings.ackTimeout).unref()
  }

  private onAckTimeout (session: Session, p: Pending): void {
    if (session.ended || session.inFlight.get(p.seq) !== p) return
    // its ACK may be among a burst's frames not yet worked off (workOff): waited for, up to ten times as
    // long, before it counts (a controller that floods without ever answering still gets its TIMEOUT)
    if (session.working && p.extended < 10) {
      p.extended++
      p.timer = setTimeout(() => this.onAckTimeout(session, p), this.timings.ackTimeout).unref()
      return
    }
    if (p.attempts < 2) {
      this.log.debug({ seq: p.seq, cmd: p.cmd }, 'no acknowledgement, sending once more')
      this.transmit(session, p)
      return
    }
    this.stats.timeouts++
    this.giveUp(session, p, `controller ${this.id} did not acknowledge ${p.cmd}`)
    if (++session.consecutiveTimeouts >= 3) {
      this.log.warn({ timeouts: session.consecutiveTimeouts }, 'controller stopped acknowledging, reconnecting')
      this.endSession(session, 'three commands in a row unacknowledged')
      return
    }
    this.pump(session)
  }

  /**
   * Answers a frame of the controller's with a NAK. Its msg may echo the frame (a long CMD, a value, a
   * key) and the CMD is echoed anyway: msg is cut until the NAK fits maxFrameBytes, since encodeFrame's
   * RangeError would otherwise escape the socket's data handler and end the process.
   */
  private nak (session: Session, frame: Frame, code: string, msg: string): void {
    let text = msg.length > 200 ? msg.slice(0, 200) : msg
    for (;;) {
      let bytes: Buffer
      try {
        bytes = encodeFrame({ seq: frame.seq, kind: 'NAK', cmd: frame.cmd, args: text === '' ? { code } : { code, msg: text } }, this.maxFrameBytes)
      } catch {
        if (text !== '') {
          text = text.slice(0, text.length >> 1)
          continue
        }
        this.logRefused({ seq: frame.seq, cmd: frame.cmd.slice(0, 64), code }, 'the NAK for this frame does not fit maxFrameBytes: not sent')
        return
      }
      this.writeBytes(session, bytes)
      return
    }
  }

  private write (session: Session, frame: FrameInput): void {
    if (!session.ended) this.writeBytes(session, encodeFrame(frame, this.maxFrameBytes))
  }

  /** A frame already encoded (nak() encodes to find what fits). */
  private writeBytes (session: Session, bytes: Buffer): void {
    if (session.ended) return
    if (!session.socket.write(bytes) && !session.writeBlocked) {
      // The controller does not read: every frame of its answered (ACK, NAK, PONG) would queue one more in this
      // process's memory, without bound. Its frames are read again once it has taken ours; if it never does, no
      // frame arrives for deadAfter and the connection is dropped.
      session.writeBlocked = true
      session.socket.pause()
      session.socket.once('drain', () => {
        session.writeBlocked = false
        if (!session.working && !session.ended) session.socket.resume()
      })
    }
    this.stats.framesOut++
    session.idleTimer?.refresh()
  }

  private endSession (session: Session, reason: string): void {
    session.endReason ??= reason
    session.socket.destroy()
  }

  private onClose (session: Session): void {
    session.endReason ??= session.error?.message ?? 'closed by the controller'
    session.clearTimers()
    session.decoder.reset()
    if (this.session === session) this.session = undefined
    const reason = session.endReason
    if (reason !== 'frame too long') this.tooLong = null
    const pending = [...session.inFlight.values(), ...session.queue]
    session.inFlight.clear()
    session.queue.length = 0
    for (const p of pending) {
      p.reject(new HardwareError('LINK_DROPPED', `link to controller ${this.id} dropped: ${reason}`, {
        controllerId: this.id, seq: p.seq === 0 ? undefined : p.seq
      }))
    }
    // a shutdown's own closing is no reason to show; a socket error by its code, as its message names the address
    const code = (session.error as NodeJS.ErrnoException | undefined)?.code
    const shown = reason === session.error?.message && code !== undefined ? code : reason
    if (!this.closing && !this.draining) this.downReason = `${session.identified ? 'link dropped' : 'cannot connect'}: ${shown}`
    if (session.identified) {
      if (Date.now() - session.connectedAt >= this.timings.stableAfter) this.attempt = 0
      this.state = null
      this.log[this.closing ? 'info' : 'warn']({ reason }, 'controller disconnected')
      this.safeEmit('disconnected', reason)
    } else if (!session.refused) {
      // not connected, or connected but silent: the controller never came up
      this.stats.connectFailures++
      // One warning per outage; the retries after it would flood the log. A connect cut short by close() is no outage.
      const level = this.closing ? 'debug' : ++this.failuresInRow === 1 ? 'warn' : 'debug'
      this.log[level]({ reason, host: this.host, port: this.port }, 'cannot connect to controller')
    }
    // A link that drops while the gateway shuts down (stopSending() was called) stays down: a new connection
    // would send STATUS to the controller after the shutdown began, and close() would then wait for its answer.
    if (!this.closing && !this.draining) this.scheduleReconnect()
  }

  private scheduleReconnect (): void {
    const delay = backoffDelay(this.attempt++, this.timings.backoffInitial, this.timings.backoffMax, this.random)
    this.log.debug({ delay, attempt: this.attempt }, 'reconnecting')
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined
      if (!this.closing && !this.draining) this.connect()
    }, delay).unref()
  }

  /** A throwing listener must not break the socket's data handling. */
  private safeEmit<K extends keyof LinkEvents> (name: K, ...args: LinkEvents[K]): void {
    try {
      (this.emit as (event: K, ...rest: LinkEvents[K]) => boolean)(name, ...args)
    } catch (err) {
      this.log.error({ err, event: name }, 'listener failed')
    }
  }
}
