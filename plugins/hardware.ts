// Owns one persistent link per configured controller: live station state, station commands, and the event feed.
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../schemas/config.js'
import { ApiError } from '../src/errors.js'
import { ControllerLink, HardwareError, type ControllerEvent, type FrameArgsInput } from '../src/hardware/index.js'
import { WarningLimit } from '../src/hardware/controller-link.js'
import { DbError } from '../src/db/errors.js'
import type { Filter } from '../src/db/list-query.js'
import type { Id } from '../src/db/repository.js'
import { stationInUse } from '../src/db/resources.js'
import type { Row } from '../src/db/types.js'

export type StationStatus = 'offline' | 'idle' | 'busy' | 'error' | 'disabled'

export interface LiveState {
  connected: boolean
  status: StationStatus
  lastSeenAt: string | null
}

export interface ControllerHealth {
  id: string
  connected: boolean
  lastSeenAt: string | null
  /** bytes from the controller dropped since the start: garbage between frames, malformed frames */
  droppedBytes: number
  /** why the link is refused (the controller answered as another id), or why it was reset while it is down (a frame over maxFrameBytes) */
  error?: string
}

export type EventType = 'station.connected' | 'station.disconnected' | 'pick.confirmed' | 'pick.shortage' | 'tray.ready' | 'station.fault'

export interface StationEvent {
  /** increasing within this process; the SSE `id:` */
  id: number
  type: EventType
  data: {
    /** the station's id as its table keys it: a number, or its code where the table is keyed by it */
    stationId: Id | null
    controllerId: string
    address: number | null
    quantity?: number
    tray?: string
    ref?: string
    code?: string
    message?: string
    at: string
  }
}

export interface StationCommand {
  command: 'light' | 'clear' | 'callTray' | 'status'
  quantity?: number
  text?: string
  ref?: string
  tray?: string
}

export interface CommandAck {
  ack: true
  seq: number
  /** for `status`: what the controller reported */
  state?: string
}

export interface Hardware {
  /** hardware.enabled: this instance drives the controllers (with several instances, exactly one does) */
  readonly enabled: boolean
  /** the live fields of a station, from its controller's link */
  stationState (station: Row): LiveState
  controllerStates (): ControllerHealth[]
  /** sends a command to the station's controller and waits for its ACK; `signal`: the caller gave up (not sent if still queued) */
  command (station: Row, command: StationCommand, signal?: AbortSignal): Promise<CommandAck>
  /**
   * the shutdown's grace period is over (or a second signal ends it: `when`, for the 504's message): commands still
   * waiting for an ACK are answered 504 now (returns how many), and events still waiting for their station lookup
   * go out without a station id
   */
  abandon (when?: string): number
  /** subscribes to station events; returns the unsubscribe function */
  subscribe (listener: (event: StationEvent) => void): () => void
  /** a station was deleted through the API: listeners (streams filtered to it) learn its id; returns the unsubscribe function */
  onStationDeleted (listener: (stationId: Id) => void): () => void
  stationDeleted (stationId: Id): void
  /**
   * The held events (the last EVENT_RING published) with an id above `afterId`, oldest first, and
   * `missedBefore` (the oldest id held, or that will be) when some events after `afterId` are no
   * longer held: it is older than the ring, or above every id (from before a restart).
   */
  replay (afterId: number): { events: StationEvent[], missedBefore?: number }
  /** number of current subscribers (for tests and health) */
  readonly subscribers: number
}

export type HardwarePluginOptions = Config['hardware'] & {
  /** database.requestTimeoutMs: by then the driver has ended a station lookup the database did not answer */
  databaseRequestTimeoutMs?: number
}

declare module 'fastify' {
  interface FastifyInstance {
    hardware: Hardware
  }
}

/** How many of the latest events a reconnecting stream client can get again (Last-Event-ID). */
export const EVENT_RING = 1000

const EVENT_TYPES: Record<string, EventType> = {
  CONFIRM: 'pick.confirmed',
  SHORTAGE: 'pick.shortage',
  TRAYREADY: 'tray.ready',
  FAULT: 'station.fault'
}

const ERROR_CODES: Record<string, string> = {
  NAK: 'CONTROLLER_NAK',
  TIMEOUT: 'CONTROLLER_TIMEOUT',
  OFFLINE: 'CONTROLLER_OFFLINE',
  QUEUE_FULL: 'CONTROLLER_BUSY',
  LINK_DROPPED: 'CONTROLLER_OFFLINE',
  INVALID_COMMAND: 'INVALID_COMMAND',
  SHUTTING_DOWN: 'SHUTTING_DOWN',
  CANCELLED: 'COMMAND_CANCELLED'
}

function toApiError (err: Error): ApiError | undefined {
  if (!(err instanceof HardwareError)) return undefined
  const headers: Record<string, string> = err.statusCode === 503 ? { 'retry-after': '5' } : {}
  // always there on a NAK, so a client need not tell a missing field from a NAK without code
  const extra = err.code === 'NAK' ? { controllerCode: err.controllerCode ?? null } : {}
  const message = err.code === 'NAK'
    ? `The controller refused the command: ${err.controllerMessage ?? err.controllerCode ?? 'no reason given'}`
    : err.message
  return new ApiError(err.statusCode, ERROR_CODES[err.code] ?? err.code, message, { headers, extra, expected: true })
}

/**
 * Station lookups of one controller's events that run at once. The lookups of a controller that sends faster than
 * the database answers otherwise ran one per event, without bound, each holding a connection of SQL Server's pool
 * (10) that requests then waited for.
 */
const LOOKUPS_PER_CONTROLLER = 2
/**
 * Readiness's error for a link: why it is refused (another id), or reset for an oversize frame at every
 * connect (connected for a moment each time); otherwise, while down, how the last connection ended or
 * the last connect failed. Anyone may read readiness: the controller's address is left out (the log has it).
 */
function linkError (link: ControllerLink): { error?: string } {
  if (link.answeredAs !== null) return { error: `the controller answered as '${link.answeredAs}', not '${link.id}'` }
  const reason = link.connected ? null : link.tooLong ?? link.downReason
  return reason === null ? {} : { error: reason }
}

/** a failed station lookup's warning: the first at once, then one summary per this interval (per controller and cause) */
const LOOKUP_WARNING_MS = 60_000
const LOOKUP_FAILED = 'station lookup failed; event sent without station id'

/** An event waiting for its stations: answered by the lookup it shares, or given up at its deadline. */
interface StationWaiter {
  /** its lookup runs (it no longer waits for a place among LOOKUPS_PER_CONTROLLER) */
  started: boolean
  answer: (stations: Row[]) => void
  fail: (err: unknown) => void
  /** the stop's grace period is over: published at once without a station id, and without a warning */
  drop: () => void
}

/** The addresses the protocol carries (`addr`, README: Protocol reference). */
const MAX_ADDRESS = 65535

/**
 * A station's address a controller can be sent: a whole number from 0 to 65535. Another program may
 * have stored one outside (-1, 70000): a LIGHT there was acknowledged by some controllers, and its
 * CONFIRM, whose addr the protocol refuses, never came back.
 */
const drivable = (address: unknown): address is number => typeof address === 'number' && Number.isInteger(address) && address >= 0 && address <= MAX_ADDRESS

const int = (value: string | undefined): number | undefined => {
  if (value === undefined || !/^-?\d+$/.test(value)) return undefined
  return Number(value)
}

async function hardware (fastify: FastifyInstance, opts: HardwarePluginOptions): Promise<void> {
  const log = fastify.log.child({ plugin: 'hardware' })
  const links = new Map<string, ControllerLink>()
  /** per controller: address -> status reported by the latest STATUS, command or event */
  const addressStatus = new Map<string, Map<number, StationStatus>>()
  const listeners = new Set<(event: StationEvent) => void>()
  const deletionListeners = new Set<(stationId: Id) => void>()
  /**
   * per controller: address -> the station a LIGHT or CALLTRAY was last sent for, until answered (CONFIRM or
   * SHORTAGE for a LIGHT, TRAYREADY for a CALLTRAY) or cleared. The answer at an address no station holds any
   * more (the station was moved meanwhile) still names the station it answers; nothing else there does (a
   * fault, or a pick the picking system lit itself, after the station moved away).
   */
  const commanded = new Map<string, Map<number, { id: Id, cmd: 'LIGHT' | 'CALLTRAY' }>>()
  const ANSWERS: Partial<Record<EventType, 'LIGHT' | 'CALLTRAY'>> = { 'pick.confirmed': 'LIGHT', 'pick.shortage': 'LIGHT', 'tray.ready': 'CALLTRAY' }
  let nextEventId = 1
  /** the latest EVENT_RING events: `ring[(id - 1) % EVENT_RING]` holds event `id` */
  const ring: StationEvent[] = []
  /**
   * Per controller, publications wait here in the order its frames arrived. Each looks its stations up in the
   * database first, and those lookups run side by side: one answered sooner (SQL Server) must not put a
   * controller's events out of order (a pick.confirmed before the pick.confirmed it follows, a station.connected
   * before the station.disconnected of a quick reconnect, leaving a stream's client with the wrong state).
   */
  const published = new Map<string, Promise<void>>()
  function inOrder<T> (controllerId: string, lookup: Promise<T>, publishAll: (stations: T) => void): Promise<void> {
    // a failure must not stop the chain: every later publication waits on it. A lookup failing before its turn
    // is handled at its turn, not an unhandled rejection meanwhile.
    lookup.catch(() => {})
    const next = (published.get(controllerId) ?? Promise.resolve())
      .then(async () => { publishAll(await lookup) })
      .catch((err) => { log.warn({ err, controllerId }, 'station events not published') })
    published.set(controllerId, next)
    return next
  }

  fastify.errorTranslators.push(toApiError)

  function publish (type: EventType, data: Omit<StationEvent['data'], 'at'>): void {
    // Object.assign, not {...data, at}: on Node 20 that clone gets a hidden class of its own (README, Performance)
    const event: StationEvent = { id: nextEventId++, type, data: Object.assign({}, data, { at: new Date().toISOString() }) }
    ring[(event.id - 1) % EVENT_RING] = event
    for (const listener of listeners) {
      try {
        listener(event)
      } catch (err) {
        log.warn({ err }, 'event listener failed')
      }
    }
  }

  const inUse = (station: Row): boolean => stationInUse(station, fastify.repos.stations.storage.fields.enabled.absent)

  /** Stations on a controller (and address), as the database holds them now: commands and events look them up, so the mapping stays in the database. */
  async function wiredTo (controllerId: string, address?: number): Promise<Row[]> {
    // a station table without controller columns (mapped to null) wires no station to a controller
    const { fields } = fastify.repos.stations.storage
    if (fields.controllerId.absent || (address !== undefined && fields.address.absent)) return []
    const filters: Filter[] = [{ field: 'controllerId', op: 'eq', values: [controllerId] }]
    if (address !== undefined) filters.push({ field: 'address', op: 'eq', values: [address] })
    // every page: a pick-to-light bus may drive more than a page of positions, each owed its station.connected
    const rows: Row[] = []
    let cursor: string | undefined
    do {
      const result = await fastify.repos.stations.list({ limit: 1000, sort: [{ field: 'id', desc: false }], filters, count: false, ...(cursor === undefined ? {} : { cursor }) })
      rows.push(...result.rows)
      cursor = result.next
    } while (cursor !== undefined)
    // the database compares as the column's collation does ('CTL-1' and 'ctl-1 ' are ctl-1 under SQL Server's
    // usual ones, or a SQLite column declared COLLATE NOCASE); a command finds its link by the id exactly as the
    // API reads it, so an event goes to the stations a command to that controller and address would reach
    return rows.filter((station) => station.controllerId === controllerId && (address === undefined || station.address === address))
  }

  /**
   * Per controller: how many of its events' station lookups run (at most LOOKUPS_PER_CONTROLLER), and the events
   * waiting for one to end, by address (undefined: all its stations, for a connect or disconnect), the oldest
   * first. Events waiting at one address share the lookup that starts after all of them arrived, so it reads the
   * table as each one's own would have, and a burst at a few addresses is a few lookups.
   */
  const lookups = new Map<string, { running: number, waiting: Map<number | undefined, Array<StationWaiter>> }>()
  /**
   * How long a lookup keeps its place: until the driver has ended it (SQL Server's request timeout), not only
   * until its events' deadline, so that a controller never holds more than LOOKUPS_PER_CONTROLLER of the pool's
   * connections (with 5 s deadlines against 15 s requests it otherwise held up to six). A second beyond, for the
   * driver's own timer; and a place is given up in the end even for a call that never returns.
   */
  const lookupPlaceMs = Math.max(opts.stationLookupMs, opts.databaseRequestTimeoutMs ?? 0) + 1000
  /** set when the gateway stops: no new event gets a lookup, and one that gets no station goes out without a warning */
  let stopping = false
  /** every event waiting for its stations (its lookup running or not): at the end of a stop's grace period they go out without one */
  const unsettled = new Set<StationWaiter>()

  function runLookups (controllerId: string): void {
    const lane = lookups.get(controllerId)!
    while (lane.running < LOOKUPS_PER_CONTROLLER && lane.waiting.size > 0) {
      const [address, waiters] = lane.waiting.entries().next().value as [number | undefined, StationWaiter[]]
      lane.waiting.delete(address)
      lane.running++
      for (const waiter of waiters) waiter.started = true
      let running = true
      const done = (): void => {
        if (!running) return
        running = false
        clearTimeout(giveUp)
        lane.running--
        runLookups(controllerId)
      }
      // a call the database never answers gives its place up in the end: it cannot keep the controller's events from the database for good
      const giveUp = setTimeout(done, lookupPlaceMs).unref()
      wiredTo(controllerId, address).then(
        (stations) => { for (const waiter of waiters) waiter.answer(stations) },
        (err: unknown) => { for (const waiter of waiters) waiter.fail(err) }
      ).finally(done)
    }
  }

  /**
   * wiredTo for an event, run at most LOOKUPS_PER_CONTROLLER at once per controller (a slow database, SQL Server
   * behind a lock the picking system holds, is not asked again for each event meanwhile, and its pool keeps
   * connections for requests). Without an answer within stationLookupMs of the event, or after a failed lookup,
   * the event is published without a station id, with a warning saying why, rather than held: undefined then.
   */
  function stationsOf (controllerId: string, address?: number): Promise<Row[] | undefined> {
    return new Promise((resolve) => {
      let lane = lookups.get(controllerId)
      if (lane === undefined) lookups.set(controllerId, lane = { running: 0, waiting: new Map() })
      let waiters = lane.waiting.get(address)
      if (waiters === undefined) lane.waiting.set(address, waiters = [])
      let pending = true
      /** true once: the first of the answer, the failure and the deadline settles the event */
      const settle = (): boolean => {
        if (!pending) return false
        pending = false
        clearTimeout(deadline)
        unsettled.delete(waiter)
        return true
      }
      const waiter: StationWaiter = {
        started: false,
        answer: (stations) => {
          if (settle()) resolve(stations)
        },
        fail: (err) => {
          if (!settle()) return
          // the gateway closed the database itself: no outage to report
          if (stopping) { resolve(undefined); return }
          // an outage (503) is expected, as for requests: a warning per event without a stack; the outage itself is logged once, with its cause
          if (err instanceof DbError && err.statusCode === 503) lookupFailed(controllerId, err.code, () => { log.warn({ controllerId, address, code: err.code, reason: err.message }, LOOKUP_FAILED) })
          else lookupFailed(controllerId, undefined, () => { log.warn({ err, controllerId, address }, LOOKUP_FAILED) })
          resolve(undefined)
        },
        drop: () => {
          if (settle()) resolve(undefined)
        }
      }
      const deadline = setTimeout(() => {
        if (!settle()) return
        if (stopping) { resolve(undefined); return }
        const reason = waiter.started
          ? `the database did not answer the station lookup within ${opts.stationLookupMs} ms (hardware.stationLookupMs)`
          : `the database did not answer within ${opts.stationLookupMs} ms (hardware.stationLookupMs): ${LOOKUPS_PER_CONTROLLER} earlier station lookups of this controller still running`
        if (!waiter.started) {
          // its lookup is not asked for any more
          const still = lane.waiting.get(address)?.filter((other) => other !== waiter)
          if (still === undefined || still.length === 0) lane.waiting.delete(address)
          else lane.waiting.set(address, still)
        }
        lookupFailed(controllerId, 'STATION_LOOKUP_TIMEOUT', () => { log.warn({ controllerId, address, code: 'STATION_LOOKUP_TIMEOUT', reason }, LOOKUP_FAILED) })
        resolve(undefined)
      }, opts.stationLookupMs).unref()
      waiters.push(waiter)
      unsettled.add(waiter)
      runLookups(controllerId)
    })
  }

  /**
   * The warning of an event sent without station id because its lookup failed: the first of a controller's
   * for one cause (`code`: an outage's, a timeout; undefined: an error with a stack) at once, the others
   * counted and said in one summary a minute later (and at the stop): a burst of events during an outage
   * is not a line each.
   */
  const lookupWarnings = new Map<string, WarningLimit>()
  function lookupFailed (controllerId: string, code: string | undefined, warn: () => void): void {
    const key = `${controllerId}\0${code ?? ''}`
    let limit = lookupWarnings.get(key)
    if (limit === undefined) {
      lookupWarnings.set(key, limit = new WarningLimit(LOOKUP_WARNING_MS, (count) => {
        log.warn({ controllerId, ...(code === undefined ? {} : { code }), count, intervalMs: LOOKUP_WARNING_MS }, `station lookup failed: ${count} more events sent without station id since the last warning`)
      }))
    }
    if (limit.first(1)) warn()
  }

  function setStatus (controllerId: string, address: number | undefined, status: StationStatus): void {
    if (address === undefined) return
    let map = addressStatus.get(controllerId)
    if (!map) addressStatus.set(controllerId, map = new Map())
    map.set(address, status)
  }

  async function onEvent (link: ControllerLink, event: ControllerEvent): Promise<void> {
    const type = EVENT_TYPES[event.cmd]
    if (!type) {
      if (event.cmd === 'HELLO') log.info({ controllerId: link.id, fw: event.args.fw }, 'controller said hello')
      return
    }
    const address = int(event.args.addr)
    if (type === 'station.fault') setStatus(link.id, address, 'error')
    else if (type === 'tray.ready') setStatus(link.id, address, 'busy')
    else setStatus(link.id, address, 'idle')
    // the command this event answers, taken now (a LIGHT sent while the lookup runs is answered by a later event)
    const pending = address === undefined ? undefined : commanded.get(link.id)?.get(address)
    const sent = pending !== undefined && ANSWERS[type] === pending.cmd ? pending.id : undefined
    if (sent !== undefined) commanded.get(link.id)!.delete(address!)
    // the answer to a command names the station it was sent for: nothing to ask the database
    const lookup = address === undefined || sent !== undefined ? Promise.resolve([]) : stationsOf(link.id, address).then((stations) => stations ?? [])
    const data = {
      controllerId: link.id,
      address: address ?? null,
      ...(event.args.qty !== undefined ? { quantity: int(event.args.qty) } : {}),
      ...(event.args.tray !== undefined ? { tray: event.args.tray } : {}),
      ...(event.args.ref !== undefined ? { ref: event.args.ref } : {}),
      ...(event.args.code !== undefined ? { code: event.args.code } : {}),
      ...(event.args.msg !== undefined ? { message: event.args.msg } : {})
    }
    await inOrder(link.id, lookup, (stations) => {
      // the stations a command reaches there: a disabled one (a replaced station the picking system keeps) is none
      const wired = stations.filter(inUse)
      // one event per frame: the answer to a LIGHT or CALLTRAY names the station it was sent for, wherever that is now;
      // any other event the one station wired there. With several (rows the picking system holds so) naming any
      // would be a guess, and naming each would have an ERP book the pick once per station
      const stationId = sent ?? (wired.length === 1 ? wired[0].id as Id : null)
      publish(type, { stationId, ...data })
    })
  }

  async function onConnection (link: ControllerLink, type: 'station.connected' | 'station.disconnected'): Promise<void> {
    // the links close as the gateway stops, and the streams end with it: no station went offline
    if (stopping) return
    if (type === 'station.disconnected') {
      // Lit positions and trays come back with the STATUS after the reconnect; a fault does not: STATUS names none per
      // address, and its FAULT was acknowledged, so the controller does not send it again. It is kept, and that
      // STATUS keeps it while the controller still says error (the status listener), as any STATUS does.
      const faults = new Map([...addressStatus.get(link.id) ?? []].filter(([, status]) => status === 'error'))
      if (faults.size > 0) addressStatus.set(link.id, faults)
      else addressStatus.delete(link.id)
    }
    await inOrder(link.id, stationsOf(link.id), (stations) => {
      // its stations could not be looked up (the warning says why): one event for the controller, not none, so a
      // stream's client still learns that the link went down or came back
      if (stations === undefined) {
        publish(type, { stationId: null, controllerId: link.id, address: null })
        return
      }
      for (const station of stations) {
        // a station without an address (or one outside the protocol's) stays disconnected, a disabled one too (stationState): no event says otherwise
        if (!drivable(station.address) || !inUse(station)) continue
        publish(type, { stationId: station.id as Id, controllerId: link.id, address: (station.address as number | null) ?? null })
      }
    })
  }

  if (opts.enabled) {
    for (const controller of opts.controllers) {
      const link = new ControllerLink(controller, {
        timings: opts.timings,
        maxQueue: opts.maxQueue,
        maxFrameBytes: opts.maxFrameBytes,
        logger: log.child({ controllerId: controller.id })
      })
      // The link logs its connects and disconnects (info when closing, warn for an outage): one line per event.
      link.on('connected', () => { void onConnection(link, 'station.connected') })
      link.on('disconnected', () => { void onConnection(link, 'station.disconnected') })
      link.on('event', (event) => { void onEvent(link, event) })
      link.on('acknowledged', ({ cmd, args }) => {
        // At the ACK, not once send() resolves: a CONFIRM read right behind the ACK of its LIGHT (the same read) was
        // acted on before that, and the LIGHT's busy then overwrote its idle, for good.
        let status: StationStatus | undefined = cmd === 'LIGHT' || cmd === 'CALLTRAY' ? 'busy' : cmd === 'CLEAR' ? 'idle' : undefined
        // a LIGHT or CALLTRAY whose answer (CONFIRM, SHORTAGE, TRAYREADY) came before its ACK (a controller that
        // answers its resent copy only after the operator confirmed, or sends the event first): the position is
        // done, and busy would stay until the next STATUS
        if (status === 'busy' && typeof args.addr === 'number' && commanded.get(link.id)?.get(args.addr)?.cmd !== cmd) status = undefined
        if (status !== undefined && typeof args.addr === 'number') setStatus(link.id, args.addr, status)
        // a cleared position answers nothing any more
        if (cmd === 'CLEAR' && typeof args.addr === 'number') commanded.get(link.id)?.delete(args.addr)
      })
      link.on('status', (state) => {
        // STATUS resynchronizes: addresses listed are busy, all others idle. Its overall state is the
        // controller's, not a station's; it carries no fault per address, so a fault reported at an
        // address stays while the controller still says error.
        const previous = addressStatus.get(link.id)
        const map = new Map<number, StationStatus>()
        if (state.state === 'error' && previous) for (const [address, status] of previous) if (status === 'error') map.set(address, 'error')
        for (const key of Object.keys(state.addresses)) {
          const address = int(key)
          if (address !== undefined && !map.has(address)) map.set(address, 'busy')
        }
        addressStatus.set(link.id, map)
      })
      links.set(controller.id, link)
    }
    // Never blocks start-up: links connect (and reconnect) in the background.
    fastify.addHook('onReady', async () => { for (const link of links.values()) link.start() })
  }

  // preClose runs before the server waits for requests in flight: queued commands are answered now, not sent.
  // It runs before the event routes' preClose, which ends the streams.
  fastify.addHook('preClose', async () => {
    // a link that closes now publishes nothing, and a lookup that fails or passes its deadline is no outage to warn of
    stopping = true
    // from now on the links answer no new event (the controller keeps it and sends it again after the restart), and
    // each closes once no command of its is on the wire
    for (const link of links.values()) link.stopSending()
    // The events already ACKed and still waiting for their stations (a lock the picking system holds) were lost:
    // published after the streams had ended, while the controller had been told they were delivered. The streams
    // wait for them, and the database closes only after: each gets its lookup's answer, or goes out without a
    // station id at its deadline (stationLookupMs) or at the end of the grace period (abandon), whichever is first.
    await Promise.all(published.values())
  })
  fastify.addHook('onClose', async () => {
    listeners.clear()
    for (const limit of lookupWarnings.values()) limit.end()
    await Promise.all([...links.values()].map((link) => link.close()))
  })

  const service: Hardware = {
    enabled: opts.enabled,

    stationState (station) {
      // not only false: a flag the gateway could not read (null) does not enable a station either
      if (!inUse(station)) return { connected: false, status: 'disabled', lastSeenAt: null }
      const link = typeof station.controllerId === 'string' ? links.get(station.controllerId) : undefined
      // a station without an address (or one outside 0 to 65535) cannot be driven even when its controller is: not connected, like one without controller
      if (!link || !drivable(station.address)) return { connected: false, status: 'offline', lastSeenAt: null }
      const lastSeenAt = link.lastSeenAt?.toISOString() ?? null
      if (!link.connected) return { connected: false, status: 'offline', lastSeenAt }
      // only what was reported for the station's own address: the controller's overall state covers all its addresses
      const status = addressStatus.get(link.id)?.get(station.address as number) ?? 'idle'
      return { connected: true, status, lastSeenAt }
    },

    controllerStates () {
      return [...links.values()].map((link) => ({
        id: link.id,
        connected: link.connected,
        lastSeenAt: link.lastSeenAt?.toISOString() ?? null,
        droppedBytes: link.stats.droppedBytes,
        ...linkError(link)
      }))
    },

    async command (station, command, signal) {
      if (!inUse(station)) throw new ApiError(409, 'STATION_DISABLED', `Station ${station.id} is disabled`)
      const noController = typeof station.controllerId !== 'string'
      const noAddress = station.address === null || station.address === undefined
      if (noController || noAddress) {
        const has = noController && noAddress ? 'no controllerId and no address' : noController ? `address ${String(station.address)} but no controllerId` : `controllerId '${String(station.controllerId)}' but no address`
        throw new ApiError(409, 'STATION_NOT_WIRED', `Station ${station.id} has ${has}`)
      }
      if (!drivable(station.address)) {
        throw new ApiError(409, 'STATION_NOT_WIRED', `Station ${station.id} has address ${String(station.address)}, which no controller takes (0 to ${MAX_ADDRESS})`)
      }
      const link = links.get(station.controllerId as string)
      // configuration, not an outage: a retry cannot help, so 409 without Retry-After
      if (!opts.enabled) {
        throw new ApiError(409, 'HARDWARE_DISABLED', `This gateway drives no controllers (hardware.enabled is false); station ${station.id}'s controller '${String(station.controllerId)}' is driven by the instance that has it enabled`)
      }
      if (!link) {
        throw new ApiError(409, 'CONTROLLER_NOT_CONFIGURED', `Controller '${String(station.controllerId)}' of station ${station.id} is not configured on this gateway (hardware.controllers)`)
      }
      const addr = station.address as number
      // two stations on one address (rows the picking system holds so): a pick there could not be told apart, and
      // each command would take over the other's lit position (STATUS names no address)
      const others = command.command === 'status' ? [] : (await wiredTo(link.id, addr)).filter((other) => inUse(other) && other.id !== station.id)
      if (others.length > 0) {
        const named = others.slice(0, 3).map((other) => `${String(other.id)} (${JSON.stringify(other.name)})`).join(', ')
        throw new ApiError(409, 'STATION_ADDRESS_SHARED', `Station ${station.id} shares controllerId "${link.id}" and address ${addr} with station${others.length === 1 ? '' : 's'} ${named}${others.length > 3 ? ', …' : ''}: a pick there could not be told apart; give one of them another address, or disable it`)
      }
      let cmd: string
      let args: FrameArgsInput
      switch (command.command) {
        case 'light':
          cmd = 'LIGHT'
          args = { addr, qty: command.quantity ?? 1, text: command.text ?? '', ref: command.ref ?? '' }
          break
        case 'clear':
          cmd = 'CLEAR'
          args = { addr }
          break
        case 'callTray':
          cmd = 'CALLTRAY'
          args = { addr, tray: command.tray ?? '', ref: command.ref ?? '' }
          break
        case 'status':
          cmd = 'STATUS'
          args = {}
          break
      }
      // the station's status follows at the ACK itself (the link's 'acknowledged' listener)
      let entry: { id: Id, cmd: 'LIGHT' | 'CALLTRAY' } | undefined
      if (cmd === 'LIGHT' || cmd === 'CALLTRAY') {
        let sent = commanded.get(link.id)
        if (sent === undefined) commanded.set(link.id, sent = new Map())
        sent.set(addr, entry = { id: station.id as Id, cmd })
      }
      const result = await link.send(cmd, args, { signal }).catch((err: unknown) => {
        // refused or never sent: nothing will answer it (after a timeout or a dropped link the controller may have acted on it)
        const maybeDone = err instanceof HardwareError && (err.code === 'TIMEOUT' || err.code === 'LINK_DROPPED')
        if (entry !== undefined && !maybeDone && commanded.get(link.id)?.get(addr) === entry) commanded.get(link.id)!.delete(addr)
        throw err
      })
      return command.command === 'status'
        ? { ack: true, seq: result.seq, state: result.args.state ?? 'unknown' }
        : { ack: true, seq: result.seq }
    },

    abandon (when) {
      let n = 0
      for (const link of links.values()) n += link.abandon(when)
      // events still waiting for their stations go out now, without a station id, to the streams still open; the
      // lookups not started yet never start (the database closes next)
      for (const lane of lookups.values()) lane.waiting.clear()
      for (const waiter of [...unsettled]) waiter.drop()
      return n
    },

    subscribe (listener) {
      listeners.add(listener)
      return () => { listeners.delete(listener) }
    },

    onStationDeleted (listener) {
      deletionListeners.add(listener)
      return () => { deletionListeners.delete(listener) }
    },

    stationDeleted (stationId) {
      for (const listener of [...deletionListeners]) listener(stationId)
    },

    replay (afterId) {
      const last = nextEventId - 1
      const oldest = Math.max(1, last - EVENT_RING + 1)
      // an id above the last one comes from before a restart (ids start again at 1)
      const from = afterId > last ? oldest : Math.max(afterId + 1, oldest)
      const events: StationEvent[] = []
      for (let id = from; id <= last; id++) events.push(ring[(id - 1) % EVENT_RING])
      return afterId > last || afterId + 1 < oldest ? { events, missedBefore: oldest } : { events }
    },

    get subscribers () {
      return listeners.size
    }
  }
  fastify.decorate('hardware', service)
}

export default fp(hardware, { name: 'hardware', fastify: '5.x', dependencies: ['database', 'error-handler'] })
