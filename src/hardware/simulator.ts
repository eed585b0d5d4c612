// A controller simulator speaking the controller side of the protocol, with fault controls for demos and tests.

import { EventEmitter, once } from 'node:events'
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
import type { Logger } from './controller-link.js'

export interface SimulatorTimings {
  /** LIGHT → CONFIRM. */
  confirmDelay: number
  /** CALLTRAY → TRAYREADY. */
  trayDelay: number
  /** Wait for the gateway's ACK of an event before sending it again. */
  eventRetry: number
  /** Sends of one event (first one included) before giving up on it. */
  eventAttempts: number
}

export const DEFAULT_SIMULATOR_TIMINGS: Readonly<SimulatorTimings> = Object.freeze({
  confirmDelay: 1500,
  trayDelay: 2000,
  eventRetry: 2000,
  // the first send and the protocol's one resend with the same SEQ
  eventAttempts: 2
})

export type SimMode = 'normal' | 'silent' | 'nak' | 'delay'

export interface SimModeOptions {
  /** `delay`: ms before each ACK. Default 3000. */
  delayMs?: number
  /** `nak`: the NAK's code and message. */
  code?: string
  msg?: string
}

export interface SimControllerConfig {
  id: string
  /** 0 picks a free port; read it back from `SimController.port`. */
  port: number
}

export interface SimulatorOptions {
  host?: string
  controllers: SimControllerConfig[]
  timings?: Partial<SimulatorTimings>
  logger?: Logger
  maxFrameBytes?: number
}

export interface Simulator {
  controllers: Map<string, SimController>
  close (): Promise<void>
}

export interface SimControllerEvents {
  connection: []
  disconnect: []
  /** Every frame received, before it is acted on. */
  frame: [frame: Frame]
}

const noop = (): void => {}
const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop }
/** an address as the protocol has it: 0 to 65535 in decimal digits (a station at address 0 was refused with E01) */
const ADDR = { test: (text: string): boolean => /^(?:0|[1-9][0-9]{0,4})$/.test(text) && Number(text) <= 65535 }
const QTY = /^[0-9]{1,6}$/

interface OutgoingEvent {
  cmd: string
  args: FrameArgsInput
}

interface SentEvent extends OutgoingEvent {
  seq: number
  attempts: number
  timer: NodeJS.Timeout | undefined
}

/** What one accepted connection remembers. */
class SimConnection {
  seq = 0
  readonly answered = new Map<number, FrameInput | null>()
  readonly unacked = new Map<number, SentEvent>()
  readonly timers = new Set<NodeJS.Timeout>()
  constructor (readonly socket: net.Socket, readonly decoder: FrameDecoder) {}

  takeSeq (): number {
    this.seq = nextSeq(this.seq)
    return this.seq
  }

  /** Null while the answer is still to come (delay mode). */
  remember (seq: number, answer: FrameInput | null): void {
    this.answered.delete(seq)
    this.answered.set(seq, answer)
    if (this.answered.size > 64) this.answered.delete(this.answered.keys().next().value!)
  }

  get open (): boolean {
    return !this.socket.destroyed
  }
}

export class SimController extends EventEmitter<SimControllerEvents> {
  readonly id: string
  readonly host: string
  /** The bound port (the configured one, or the one picked for port 0). */
  port: number
  mode: SimMode = 'normal'
  modeOptions: SimModeOptions = {}
  /** Lit positions and present trays, by address: `lit:<qty>` or `tray:<tray>`. */
  readonly positions = new Map<number, string>()
  /** Set by an emitted FAULT, cleared by the next CLEAR. */
  faulted = false
  readonly timings: Readonly<SimulatorTimings>

  private readonly log: Logger
  private readonly maxFrameBytes: number
  private server: net.Server | undefined
  private readonly connections = new Set<SimConnection>()
  private readonly positionTimers = new Map<number, NodeJS.Timeout>()
  /** Events raised while nobody could receive them; sent after HELLO on the next connection. */
  private readonly outbox: OutgoingEvent[] = []
  private closed = false

  constructor (config: SimControllerConfig, options: { host: string, timings: Readonly<SimulatorTimings>, logger: Logger, maxFrameBytes: number }) {
    super()
    this.id = config.id
    this.port = config.port
    this.host = options.host
    this.timings = options.timings
    this.log = options.logger
    this.maxFrameBytes = options.maxFrameBytes
  }

  get connectionCount (): number {
    return this.connections.size
  }

  get state (): 'idle' | 'busy' | 'error' {
    if (this.faulted) return 'error'
    return this.positions.size > 0 ? 'busy' : 'idle'
  }

  /** Starts accepting connections on `port` (the bound one once known). */
  async listen (): Promise<void> {
    if (this.server !== undefined || this.closed) return
    const server = net.createServer(socket => this.accept(socket))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.port, this.host, () => {
        server.off('error', reject)
        resolve()
      })
    })
    server.on('error', (err) => this.log.error({ err, controller: this.id }, 'simulator server error'))
    this.server = server
    this.port = (server.address() as net.AddressInfo).port
    this.log.info({ controller: this.id, host: this.host, port: this.port }, 'simulated controller listening')
  }

  /** Destroys the current connections, as a controller reboot or a cable pull would. */
  drop (): void {
    this.log.info({ controller: this.id, connections: this.connections.size }, 'dropping connections')
    for (const conn of this.connections) conn.socket.destroy()
  }

  /** Refuses (closes the listening socket) or accepts connections again on the same port. */
  async refuse (on: boolean): Promise<void> {
    if (on) {
      const server = this.server
      this.server = undefined
      server?.close()
      this.log.info({ controller: this.id }, 'refusing connections')
    } else {
      await this.listen()
    }
  }

  setMode (mode: SimMode, options: SimModeOptions = {}): void {
    this.mode = mode
    this.modeOptions = options
    this.log.info({ controller: this.id, mode, ...options }, 'simulator mode')
    if (mode !== 'silent') this.flushOutbox()
  }

  /** Raises an event (CONFIRM, SHORTAGE, TRAYREADY, FAULT, …) towards every connected gateway. */
  emitEvent (cmd: string, args: FrameArgsInput = {}): void {
    encodeFrame({ seq: 1, kind: 'EVT', cmd, args }, this.maxFrameBytes)
    const addr = Number(args.addr)
    if ((cmd === 'SHORTAGE' || cmd === 'CONFIRM') && this.positions.has(addr)) this.clearPosition(addr)
    if (cmd === 'FAULT') this.faulted = true
    this.deliver({ cmd, args })
  }

  async close (): Promise<void> {
    this.closed = true
    for (const timer of this.positionTimers.values()) clearTimeout(timer)
    this.positionTimers.clear()
    const server = this.server
    this.server = undefined
    for (const conn of this.connections) conn.socket.destroy()
    // Connections leave the set on 'close', so each of these is still to close.
    const sockets = [...this.connections].map(conn => once(conn.socket, 'close'))
    await Promise.all([
      ...sockets,
      server === undefined ? undefined : new Promise<void>(resolve => server.close(() => resolve()))
    ])
  }

  private accept (socket: net.Socket): void {
    socket.setNoDelay(true)
    const conn: SimConnection = new SimConnection(socket, new FrameDecoder({
      maxFrameBytes: this.maxFrameBytes,
      onDiscard: (reason, bytes, detail) => this.log.warn({ controller: this.id, reason, bytes, detail }, 'simulator dropped bytes')
    }))
    this.connections.add(conn)
    this.log.info({ controller: this.id, remote: `${socket.remoteAddress}:${socket.remotePort}` }, 'gateway connected')
    socket.on('data', (chunk: Buffer) => this.onData(conn, chunk))
    socket.on('error', (err) => this.log.debug({ controller: this.id, err }, 'simulator socket error'))
    socket.on('close', () => this.onClose(conn))
    if (this.mode !== 'silent') {
      this.sendEvent(conn, { cmd: 'HELLO', args: { id: this.id, fw: 'sim-1.0' } })
      this.flushOutbox()
    }
    this.emit('connection')
  }

  private onClose (conn: SimConnection): void {
    this.connections.delete(conn)
    for (const timer of conn.timers) clearTimeout(timer)
    for (const sent of conn.unacked.values()) clearTimeout(sent.timer)
    // Events nobody acknowledged wait for the next connection, except the greeting.
    if (this.connections.size === 0 && !this.closed) {
      for (const sent of conn.unacked.values()) {
        if (sent.cmd !== 'HELLO') this.queue({ cmd: sent.cmd, args: sent.args })
      }
    }
    conn.unacked.clear()
    this.log.info({ controller: this.id }, 'gateway disconnected')
    this.emit('disconnect')
  }

  private onData (conn: SimConnection, chunk: Buffer): void {
    let frames: Frame[]
    try {
      frames = conn.decoder.push(chunk)
    } catch (err) {
      if (!(err instanceof FrameTooLongError)) throw err
      this.log.warn({ controller: this.id }, 'frame too long, resetting the connection')
      conn.socket.destroy()
      return
    }
    for (const frame of frames) {
      if (!conn.open) return
      this.emit('frame', frame)
      this.onFrame(conn, frame)
    }
  }

  private onFrame (conn: SimConnection, frame: Frame): void {
    if (this.mode === 'silent') return
    if (frame.invalid !== undefined) {
      // its ARGS did not read: a NAK saying why, for a REQ or EVT (every one is answered)
      if (frame.kind === 'REQ' || frame.kind === 'EVT') this.write(conn, { seq: frame.seq, kind: 'NAK', cmd: frame.cmd, args: { code: 'E97', msg: frame.invalid } })
      return
    }
    switch (frame.kind) {
      case 'HBT':
        if (frame.cmd === 'PING') this.write(conn, { seq: frame.seq, kind: 'HBT', cmd: 'PONG' })
        return
      case 'ACK':
      case 'NAK': {
        const sent = conn.unacked.get(frame.seq)
        if (sent !== undefined && sent.cmd === frame.cmd) {
          clearTimeout(sent.timer)
          conn.unacked.delete(frame.seq)
        }
        return
      }
      case 'EVT':
        this.write(conn, { seq: frame.seq, kind: 'NAK', cmd: frame.cmd, args: { code: 'E98', msg: 'controllers take no events' } })
        return
      case 'REQ':
        this.onRequest(conn, frame)
    }
  }

  private onRequest (conn: SimConnection, frame: Frame): void {
    if (conn.answered.has(frame.seq)) {
      // Seen before: answer again without acting twice (or wait for the delayed answer).
      const answer = conn.answered.get(frame.seq)
      if (answer != null) this.write(conn, answer)
      return
    }
    if (this.mode === 'nak') {
      const answer: FrameInput = { seq: frame.seq, kind: 'NAK', cmd: frame.cmd, args: { code: this.modeOptions.code ?? 'E42', msg: this.modeOptions.msg ?? 'simulated fault' } }
      conn.remember(frame.seq, answer)
      this.write(conn, answer)
      return
    }
    if (this.mode === 'delay') {
      conn.remember(frame.seq, null)
      const timer = setTimeout(() => {
        conn.timers.delete(timer)
        this.answer(conn, frame)
      }, this.modeOptions.delayMs ?? 3000)
      conn.timers.add(timer)
      return
    }
    this.answer(conn, frame)
  }

  private answer (conn: SimConnection, frame: Frame): void {
    const answer: FrameInput = { seq: frame.seq, kind: 'ACK', cmd: frame.cmd }
    const refuse = (code: string, msg: string): void => {
      answer.kind = 'NAK'
      answer.args = { code, msg }
    }
    const { args } = frame
    switch (frame.cmd) {
      case 'LIGHT':
        if (!ADDR.test(args.addr ?? '')) refuse('E01', 'invalid addr')
        else if (!QTY.test(args.qty ?? '')) refuse('E02', 'invalid qty')
        else this.light(args)
        break
      case 'CLEAR':
        if (!ADDR.test(args.addr ?? '')) refuse('E01', 'invalid addr')
        else {
          this.clearPosition(Number(args.addr))
          this.faulted = false
        }
        break
      case 'CALLTRAY':
        if (!ADDR.test(args.addr ?? '')) refuse('E01', 'invalid addr')
        else if ((args.tray ?? '') === '') refuse('E03', 'missing tray')
        else this.callTray(args)
        break
      case 'STATUS': {
        const status: FrameArgs = { state: this.state }
        for (const [addr, what] of [...this.positions].sort((a, b) => a[0] - b[0])) status[`addr${addr}`] = what
        answer.args = status
        break
      }
      default:
        refuse('E99', `unknown command ${frame.cmd}`)
    }
    this.log.debug({ controller: this.id, seq: frame.seq, cmd: frame.cmd, kind: answer.kind }, 'simulator answered')
    conn.remember(frame.seq, answer)
    this.write(conn, answer)
  }

  private light (args: FrameArgs): void {
    const addr = Number(args.addr)
    this.clearPosition(addr)
    this.positions.set(addr, `lit:${args.qty}`)
    this.schedule(addr, this.timings.confirmDelay, () => {
      this.positions.delete(addr)
      this.deliver({ cmd: 'CONFIRM', args: { addr, qty: args.qty, ref: args.ref } })
    })
  }

  private callTray (args: FrameArgs): void {
    const addr = Number(args.addr)
    this.clearPosition(addr)
    this.positions.set(addr, `tray:${args.tray}`)
    this.schedule(addr, this.timings.trayDelay, () => {
      this.deliver({ cmd: 'TRAYREADY', args: { addr, tray: args.tray, ref: args.ref } })
    })
  }

  private schedule (addr: number, delay: number, fn: () => void): void {
    this.positionTimers.set(addr, setTimeout(() => {
      this.positionTimers.delete(addr)
      fn()
    }, delay))
  }

  private clearPosition (addr: number): void {
    clearTimeout(this.positionTimers.get(addr))
    this.positionTimers.delete(addr)
    this.positions.delete(addr)
  }

  private deliver (event: OutgoingEvent): void {
    const open = [...this.connections].filter(conn => conn.open)
    if (this.mode === 'silent' || open.length === 0) {
      this.queue(event)
      return
    }
    for (const conn of open) this.sendEvent(conn, event)
  }

  private queue (event: OutgoingEvent): void {
    this.outbox.push(event)
    if (this.outbox.length > 64) this.outbox.shift()
  }

  private flushOutbox (): void {
    if (this.connections.size === 0) return
    for (const event of this.outbox.splice(0)) this.deliver(event)
  }

  private sendEvent (conn: SimConnection, event: OutgoingEvent): void {
    const sent: SentEvent = { ...event, seq: conn.takeSeq(), attempts: 0, timer: undefined }
    conn.unacked.set(sent.seq, sent)
    this.transmitEvent(conn, sent)
  }

  private transmitEvent (conn: SimConnection, sent: SentEvent): void {
    if (this.mode === 'silent') {
      // A hung controller sends nothing; try again later.
      sent.timer = setTimeout(() => this.transmitEvent(conn, sent), this.timings.eventRetry)
      return
    }
    if (sent.attempts >= this.timings.eventAttempts) {
      conn.unacked.delete(sent.seq)
      this.log.warn({ controller: this.id, seq: sent.seq, cmd: sent.cmd }, 'event never acknowledged, giving up')
      return
    }
    sent.attempts++
    this.write(conn, { seq: sent.seq, kind: 'EVT', cmd: sent.cmd, args: sent.args })
    sent.timer = setTimeout(() => this.transmitEvent(conn, sent), this.timings.eventRetry)
  }

  private write (conn: SimConnection, frame: FrameInput): void {
    if (!conn.open) return
    let bytes: Buffer
    try {
      bytes = encodeFrame(frame, this.maxFrameBytes)
    } catch (err) {
      // a NAK whose msg echoes a long frame (an unknown command's name) goes without its msg: a throw
      // here would leave the data handler, and the demo runs the simulator in the gateway's process
      if (frame.args?.msg !== undefined && frame.args.msg !== null) return this.write(conn, { ...frame, args: { ...frame.args, msg: undefined } })
      this.log.warn({ controller: this.id, err }, 'a frame the simulator could not encode was not sent')
      return
    }
    conn.socket.write(bytes)
  }
}

/** Starts one TCP server per controller; rejects (and closes what it opened) if a port is taken. */
export async function startSimulator (options: SimulatorOptions): Promise<Simulator> {
  const host = options.host ?? '127.0.0.1'
  const timings = Object.freeze({ ...DEFAULT_SIMULATOR_TIMINGS, ...options.timings })
  const logger = options.logger ?? silentLogger
  const maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES
  const controllers = new Map<string, SimController>()
  for (const config of options.controllers) {
    if (controllers.has(config.id)) throw new Error(`duplicate controller id ${config.id}`)
    controllers.set(config.id, new SimController(config, { host, timings, logger, maxFrameBytes }))
  }
  const close = async (): Promise<void> => {
    await Promise.all([...controllers.values()].map(c => c.close()))
  }
  try {
    for (const controller of controllers.values()) await controller.listen()
  } catch (err) {
    await close()
    throw err
  }
  return { controllers, close }
}
