// GET /api/events: Server-Sent Events of what the controllers report, optionally for one station; tickets for EventSource.
import { randomBytes } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger } from 'fastify'
import type { Row } from '../../src/db/types.js'
import { Type } from '@sinclair/typebox'
import { ErrorResponse, errorResponses } from '../../schemas/common.js'
import { EventsHeaders, eventsQuery, EventTicket, type EventsQuery } from '../../schemas/events.js'
import { ApiError, tokenExpired, tokenInvalid, tooManyRequests } from '../../src/errors.js'
import type { TokenType } from '../auth.js'
import { buildErrorBody } from '../error-handler.js'
import type { StationEvent } from '../hardware.js'
import { DatabaseUnavailableError, NotFoundError } from '../../src/db/errors.js'
import type { Id } from '../../src/db/repository.js'
import { idField } from '../../src/db/resources.js'
import { idFromText } from './resource.js'

export interface EventRoutesOptions {
  heartbeatMs: number
  maxBufferedBytes: number
  /** how often an open stream checks its caller's credential again (expiry, revocation) */
  recheckMs: number
  /** how long a stream ticket opens a stream (default 30) */
  ticketTtlSeconds?: number
  /** unused tickets held at most; beyond, the oldest go (default 10000) */
  maxTickets?: number
  /** streams one user may hold open at once; one more is a 429 (default 100) */
  maxStreamsPerUser?: number
}

/** unused tickets one user holds at most: beyond, that user's oldest goes, never another user's */
const TICKETS_PER_USER = 20

interface TicketHolder {
  id: Id
  username: string
  tokenVersion: number
  tokenType: TokenType
  /** when the token the ticket was bought with expires (ms since the epoch): the stream ends then too */
  expiresAt?: number
}

/**
 * Single-use stream tickets, held in memory. An EventSource cannot send an Authorization header,
 * and a token in a URL would stay valid for as long as the token wherever the URL was logged.
 */
export class StreamTickets {
  private readonly held = new Map<string, TicketHolder & { expires: number }>()
  private readonly ttlMs: number
  private readonly max: number

  constructor (ttlMs: number, max: number) {
    this.ttlMs = ttlMs
    this.max = max
  }

  issue (holder: TicketHolder): string {
    const now = Date.now()
    // Held in the order they expire: the expired ones are at the front.
    for (const [ticket, entry] of this.held) {
      if (entry.expires > now && this.held.size < this.max) break
      this.held.delete(ticket)
    }
    // one account buying tickets in a loop pushes out its own, not the ones other users are about to use
    let own = 0
    let oldest: string | undefined
    for (const [ticket, entry] of this.held) {
      if (entry.id !== holder.id) continue
      own++
      oldest ??= ticket
    }
    if (own >= TICKETS_PER_USER && oldest !== undefined) this.held.delete(oldest)
    const ticket = randomBytes(32).toString('base64url')
    this.held.set(ticket, { ...holder, expires: now + this.ttlMs })
    return ticket
  }

  /** The holder of a valid ticket, which stays held; undefined for an unknown, used or expired one. */
  peek (ticket: string): TicketHolder | undefined {
    const entry = this.held.get(ticket)
    return entry !== undefined && entry.expires > Date.now() ? entry : undefined
  }

  /** The holder of a valid ticket; undefined for an unknown, used or expired one. The ticket is gone either way. */
  take (ticket: string): TicketHolder | undefined {
    const entry = this.held.get(ticket)
    if (entry === undefined) return undefined
    this.held.delete(ticket)
    return entry.expires > Date.now() ? entry : undefined
  }
}

const STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  connection: 'keep-alive',
  'x-accel-buffering': 'no'
}

const frame = (event: StationEvent): string => `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`

/**
 * The last event of a stream whose credential no longer holds: the 401 body a request with it would
 * get. Not `event: error`, which an EventSource also fires for a lost connection. No `id:`, so the
 * client's Last-Event-ID stays that of the last station event.
 */
export const CLOSED_EVENT = 'stream.closed'
/** The last event of a stream for one station once that station is gone. */
const stationGone = (station: Id): ApiError => new ApiError(404, 'NOT_FOUND', `Station ${String(station)} was deleted; this stream ends`)
const closedFrame = (err: ApiError): string =>
  `event: ${CLOSED_EVENT}\ndata: ${JSON.stringify(buildErrorBody(err.statusCode, err.code, err.message))}\n\n`

const events: FastifyPluginAsyncTypebox<EventRoutesOptions> = async (fastify, opts) => {
  const ttlSeconds = opts.ticketTtlSeconds ?? 30
  const tickets = new StreamTickets(ttlSeconds * 1000, opts.maxTickets ?? 10000)
  const open = new Set<() => void>()
  const maxStreams = opts.maxStreamsPerUser ?? 100
  /** open streams by user id */
  const streamsOf = new Map<Id, number>()
  /** the ticket a stream request authenticated with: used up when its stream opens, and the expiry of its token */
  const ticketOf = new WeakMap<object, { ticket: string, holder: TicketHolder }>()
  // One timer a stream: it sends the heartbeat and checks the credential, each at its own multiple of the tick.
  const tickMs = Math.min(opts.heartbeatMs, opts.recheckMs)
  const heartbeatEvery = Math.max(1, Math.floor(opts.heartbeatMs / tickMs))
  const recheckEvery = Math.max(1, Math.floor(opts.recheckMs / tickMs))
  // app.close() waits for open connections: end the streams first.
  fastify.addHook('preClose', async () => { for (const end of [...open]) end() })
  // An instance without the controllers has no events to send: a stream there would stay silent for
  // ever behind a load balancer's round robin. Told as station commands tell it (after authentication).
  if (!fastify.hardware.enabled) {
    fastify.addHook('preHandler', async () => {
      throw new ApiError(409, 'HARDWARE_DISABLED', 'This gateway drives no controllers (hardware.enabled is false), so it has no station events: open the stream on the instance that has hardware enabled')
    })
  }

  fastify.post('/ticket', {
    schema: {
      operationId: 'createEventTicket',
      summary: `A single-use ticket that opens one event stream within ${ttlSeconds} s (for EventSource, which cannot send an Authorization header)`,
      tags: ['events'],
      response: { 200: EventTicket, ...errorResponses(401, 403, 409, 503) }
    }
  }, async (request, reply) => {
    const { id, username, tokenVersion, tokenType } = request.identity!
    reply.header('cache-control', 'no-store')
    return { ticket: tickets.issue({ id, username, tokenVersion, tokenType, expiresAt: fastify.auth.expiryOf(request) }), expiresIn: ttlSeconds }
  })

  const stations = fastify.repos.stations
  const stationIdField = idField(stations.def)
  /**
   * Whether a station still exists, asked by the streams filtered to it at their recheck: one read a
   * station per half recheck period, shared by all its streams (200 displays on one station are one
   * query, not 200); a failed read is not kept.
   */
  const stationChecks = new Map<string, { at: number, found: Promise<boolean> }>()
  const stationExists = async (station: Id): Promise<boolean> => {
    const key = String(station)
    const now = Date.now()
    const known = stationChecks.get(key)
    if (known !== undefined && now - known.at < opts.recheckMs / 2) return await known.found
    if (stationChecks.size > 10000) stationChecks.clear()
    const found = stations.get(station).then((row) => row !== undefined)
    stationChecks.set(key, { at: now, found })
    found.catch(() => { if (stationChecks.get(key)?.found === found) stationChecks.delete(key) })
    return await found
  }
  /**
   * A stream for one station needs that station: a 404 for one that does not exist (an EventSource
   * gives up on it instead of listening for ever). Returns the id as the station's events carry it: a
   * station table keyed by its code finds 'PTL-01' for `?station=ptl-01` in a case-insensitive
   * collation. The database being down does not keep a stream shut: the station's events come from its
   * controller link, so it opens, as one for all stations does, for the id as given.
   */
  async function stationOf (given: Id, log: FastifyBaseLogger): Promise<Id> {
    // as a path gives it: a table keyed by text takes the query's text, else a number
    const id = idFromText(stations, given, (id) => new NotFoundError(`Station ${id} not found`))
    let found: Row | undefined
    try {
      found = await stations.get(id)
    } catch (err) {
      if (!(err instanceof DatabaseUnavailableError)) throw err
      log.warn({ err, stationId: id }, 'event stream: the station could not be looked up; the stream opens')
      return id
    }
    if (found === undefined) throw new NotFoundError(`Station ${id} not found`)
    return found[stationIdField] as Id
  }

  fastify.get('/', {
    config: {
      // `?ticket=` stands in for the Bearer token; the user's revocation state is checked again on use.
      // Only looked at here: a request refused after authentication (400, 404, 409, 429) leaves the
      // ticket for the retry. The handler uses it up as the stream opens.
      credential: async (request) => {
        const { ticket } = request.query as { ticket?: unknown }
        if (ticket === undefined) return undefined
        const holder = typeof ticket === 'string' ? tickets.peek(ticket) : undefined
        if (holder === undefined) throw tokenInvalid()
        ticketOf.set(request, { ticket: ticket as string, holder })
        return fastify.auth.identifyUser(holder.id, holder.tokenVersion, holder.tokenType, holder.username)
      }
    },
    schema: {
      operationId: 'streamEvents',
      summary: 'Stream station events (text/event-stream)',
      description: 'Events: station.connected, station.disconnected, pick.confirmed, pick.shortage, tray.ready, station.fault. ' +
        'Each is `event: <type>`, `id: <n>` and one `data:` line of JSON ({stationId, controllerId, address, quantity?, tray?, ref?, code?, message?, at}). ' +
        'Comment lines (`: heartbeat`) keep idle proxies open. ' +
        `The caller's credential is checked again every ${opts.recheckMs / 1000} s: once it has expired or was revoked (user disabled, deleted, password or type changed) ` +
        `the stream sends \`event: ${CLOSED_EVENT}\` with the 401 body (code TOKEN_EXPIRED or TOKEN_INVALID) and ends; reconnect with a fresh token or ticket. ` +
        `A stream for one station (\`?station=\`) ends the same way, with a 404 body, once that station is deleted. ` +
        `Authenticate with a Bearer token, or with \`?ticket=\` from POST /api/events/ticket (one stream, within ${ttlSeconds} s). ` +
        'A client reconnecting with `Last-Event-ID: <n>` (or `?lastEventId=<n>`) first gets the held events after n (the last 1000) that match its filter; ' +
        'when some after n are no longer held the stream starts with the comment `: missed events before <id>`.',
      tags: ['events'],
      security: [{ bearer: [] }, { identityProvider: [] }, { eventTicket: [] }],
      querystring: eventsQuery(stations.storage.idType),
      headers: EventsHeaders,
      // the stream's media type on its 200 alone: the errors before it are JSON, as everywhere
      response: { 200: { description: 'an endless text/event-stream', content: { 'text/event-stream': { schema: Type.String() } } }, 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse, 503: ErrorResponse }
    }
  }, async (request, reply) => {
    const query = request.query as EventsQuery
    const lastEventId = request.headers['last-event-id'] ?? query.lastEventId
    const raw = reply.raw
    const { id, username, tokenVersion, tokenType } = request.identity!
    const station = query.station === undefined ? undefined : await stationOf(query.station, request.log)
    const matches = (event: StationEvent): boolean => station === undefined || event.data.stationId === station
    // From here on nothing awaits: the count is read and taken, and the listeners that give it back
    // attached, in one step. A client gone during the lookups (the station, the credential) gets
    // nothing: its socket's close has fired already, and a stream opened now would never end.
    if (request.socket.destroyed) {
      reply.hijack()
      return
    }
    const held = streamsOf.get(id) ?? 0
    if (held >= maxStreams) {
      throw tooManyRequests(10, `This user already has ${held} event streams open, the most one user may (events.maxStreamsPerUser); close one, or filter one stream by station in the client`)
    }
    // A HEAD gets the stream's headers and no stream: Node sends a HEAD answer's headers only when it
    // ends, so a stream would leave the client waiting for them, and hold a place, for ever. It opens
    // nothing, so a ticket stays for the GET.
    if (request.method === 'HEAD') {
      reply.hijack()
      raw.writeHead(200, STREAM_HEADERS)
      raw.end()
      return
    }
    const ticket = ticketOf.get(request)
    // In the same step as the count: of two requests with one ticket, the first here opens a stream
    // and the other finds it used (or expired meanwhile, during the lookups).
    if (ticket !== undefined && tickets.take(ticket.ticket) === undefined) throw tokenInvalid()
    const expiresAt = ticket !== undefined ? ticket.holder.expiresAt : fastify.auth.expiryOf(request)
    streamsOf.set(id, held + 1)
    reply.hijack()
    raw.writeHead(200, STREAM_HEADERS)

    let ended = false
    const send = (chunk: string): void => {
      if (ended) return
      // A client that stopped reading is dropped rather than buffered without bound.
      if (raw.writableLength > opts.maxBufferedBytes) {
        request.log.warn({ buffered: raw.writableLength }, 'event stream client too slow; disconnecting')
        end()
        return
      }
      raw.write(chunk)
    }
    // The backlog is taken and the subscription made in one synchronous step: no event falls between them.
    const backlog = lastEventId === undefined ? undefined : fastify.hardware.replay(lastEventId)
    const unsubscribe = fastify.hardware.subscribe((event: StationEvent) => {
      if (matches(event)) send(frame(event))
    })
    // the station deleted through the API: the stream ends saying so, and an EventSource that reconnects gets the 404
    const unwatch = station === undefined
      ? () => {}
      : fastify.hardware.onStationDeleted((deleted) => {
        if (String(deleted) !== String(station)) return
        request.log.info({ stationId: station }, 'event stream closed: its station was deleted')
        end(closedFrame(stationGone(station)))
      })
    let ticks = 0
    let checking = false
    const timer = setInterval(() => {
      ticks++
      if (ticks % heartbeatEvery === 0) send(': heartbeat\n\n')
      if (ticks % recheckEvery === 0 && !checking) {
        checking = true
        void recheck().finally(() => { checking = false })
      }
    }, tickMs)
    timer.unref()
    /**
     * The same checks as a request's: the token's (or the ticket's token's) expiry, then the user's
     * revocation state; then, for a stream of one station, that the station is still there (the
     * picking system may delete it itself, which onStationDeleted does not hear of).
     */
    async function recheck (): Promise<void> {
      let failure: ApiError
      try {
        if (expiresAt !== undefined && Date.now() > expiresAt) throw tokenExpired()
        await fastify.auth.identifyUser(id, tokenVersion, tokenType, username)
        if (station === undefined || await stationExists(station)) return
        failure = stationGone(station)
      } catch (err) {
        if (!(err instanceof ApiError)) {
          // The database did not answer: the stream stays and the next tick asks again. A revocation is
          // itself a database write, so an outage hides none for longer than the outage.
          request.log.warn({ err }, 'event stream: the credential or the station could not be checked again')
          return
        }
        failure = err
      }
      if (ended) return
      if (failure.code === 'NOT_FOUND') request.log.info({ stationId: station }, 'event stream closed: its station was deleted')
      else request.log.info({ code: failure.code }, 'event stream closed: the credential no longer holds')
      end(closedFrame(failure))
    }
    /** Ends the stream, after a last chunk when one is given (sent before the connection goes). */
    function end (last?: string): void {
      if (ended) return
      ended = true
      clearInterval(timer)
      unsubscribe()
      unwatch()
      open.delete(close)
      const left = (streamsOf.get(id) ?? 1) - 1
      if (left > 0) streamsOf.set(id, left)
      else streamsOf.delete(id)
      if (typeof last === 'string' && !raw.destroyed) {
        raw.end(last, () => raw.destroy())
        // a client that does not read may never take it
        setTimeout(() => raw.destroy(), 1000).unref()
        return
      }
      if (!raw.destroyed) raw.end()
      raw.destroy()
    }
    // listeners get an argument (an error): end() takes a chunk
    const close = (): void => { end() }
    open.add(close)
    request.raw.on('close', close)
    raw.on('error', close)
    raw.on('close', close)

    if (backlog?.missedBefore !== undefined) raw.write(`: missed events before ${backlog.missedBefore}\n\n`)
    raw.write(': connected\n\n')
    for (const event of backlog?.events ?? []) if (matches(event)) send(frame(event))
    return reply
  })
}

export default events
