// HTTP conventions shared by the resource routes: ETags, conditional requests, the list envelope.
import { hash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { nextLink, parseListQuery, type DerivedFilters, type QueryString } from './db/list-query.js'
import type { Repository } from './db/repository.js'
import type { Row } from './db/types.js'
import { earliestShownFrom } from './db/time-zone.js'

/** Fields left out of ETags: they change on every heartbeat and are not the resource's version. */
const VOLATILE = new Set(['lastSeenAt'])

/** The ETag of a text: SHA-256, base64url, 27 characters (162 bits), quoted. */
function hashTag (text: string): string {
  return `"${hash('sha256', text, 'base64url').slice(0, 27)}"`
}

const dropVolatile = (key: string, v: unknown): unknown => (VOLATILE.has(key) ? undefined : v)

/** A flat object (a material's body) without volatile fields: JSON.stringify needs no replacer for it. */
function flatAndStable (value: unknown): boolean {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key]
    if (VOLATILE.has(key) || (v !== null && typeof v === 'object')) return false
  }
  return true
}

function etagOf (value: unknown): string {
  const json = flatAndStable(value) ? JSON.stringify(value) : JSON.stringify(value, dropVolatile)
  return hashTag(json)
}

/** A station's live state from its controller link: part of what a read shows, not of what a write changes. */
const LIVE = ['connected', 'status'] as const

/**
 * The ETag of an item with live fields: the stored fields' tag, then a dot and a short tag of the
 * live ones (`"<27>.<8>"`). If-None-Match compares it whole (a new status is a new representation);
 * If-Match only its stored part, so a station whose status moved on can still be updated.
 */
function liveTag (value: Record<string, unknown>): string {
  const stored: Record<string, unknown> = {}
  for (const key in value) if (!(LIVE as readonly string[]).includes(key) && !VOLATILE.has(key)) stored[key] = value[key]
  const live = LIVE.map((key) => value[key]).join('|')
  return `${hashTag(JSON.stringify(stored)).slice(0, -1)}.${hash('sha256', live, 'base64url').slice(0, 8)}"`
}

const hasLive = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && LIVE.some((key) => Object.hasOwn(value, key))

/** The part of a tag that If-Match compares: a live tag's stored part, any other tag whole. */
function storedPart (tag: string): string {
  const dot = tag.indexOf('.')
  return dot < 0 ? tag : `${tag.slice(0, dot)}"`
}

/**
 * Every value of the header `name` (lower case) in a raw header list (name, value, name, value, …), when it is
 * there more than once; else undefined. Node's request.headers keeps only the first of a single-valued header.
 */
export function repeatedHeader (raw: string[], name: string): string[] | undefined {
  let first: string | undefined
  let values: string[] | undefined
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length !== name.length || raw[i].toLowerCase() !== name) continue
    if (first === undefined) first = raw[i + 1]
    else (values ??= [first]).push(raw[i + 1])
  }
  return values
}

/** A compiled serializer of one item schema (fast-json-stringify): the body text of an item that holds only stored fields. */
export type Serialize = (body: unknown) => string

/**
 * One item as it is sent: with `serialize` (an item of stored fields only) serialized once, the
 * ETag the hash of that text and the text sent; without, the object and etagOf (volatile fields left out).
 */
function item<T> (body: T, serialize: Serialize | undefined): { etag: string, text?: string } {
  if (serialize === undefined) return { etag: hasLive(body) ? liveTag(body) : etagOf(body) }
  const text = serialize(body)
  return { etag: hashTag(text), text }
}

/** Sends a body already serialized as JSON. */
export function sendJsonText (reply: FastifyReply, text: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(text)
}

/** Sends one item with its ETag (the answer to a write). */
export function sendItem<T> (reply: FastifyReply, body: T, serialize?: Serialize): FastifyReply {
  const { etag, text } = item(body, serialize)
  reply.header('etag', etag)
  return text === undefined ? reply.send(body) : sendJsonText(reply, text)
}

function listTags (header: string): string[] {
  return header.split(',').map((tag) => tag.trim().replace(/^W\//, '')).filter(Boolean)
}

/** True when If-None-Match names the current representation: answer 304. */
export function notModified (request: FastifyRequest, etag: string): boolean {
  const header = request.headers['if-none-match']
  if (!header) return false
  return header.trim() === '*' || listTags(header).includes(etag)
}

/**
 * A check for Repository.update/delete built from If-Match: it runs inside the
 * write's transaction against the current row, so a change in between is a 412.
 */
export function ifMatchCheck<T> (request: FastifyRequest, toPublic: (row: Row) => T, serialize?: Serialize): ((current: Row) => boolean) | undefined {
  const header = request.headers['if-match']
  // an empty If-Match (a script whose ETag came out empty) names no tag, so nothing matches it
  // (RFC 9110 13.1.1): taken as absent, it overwrote whatever the row held
  if (header === undefined) return undefined
  if (header.trim() === '*') return () => true
  const tags = listTags(header).map(storedPart)
  // the ETag sendOne and sendItem give the same item, its stored part (a station's status may have moved on)
  return (current) => tags.includes(storedPart(item(toPublic(current), serialize).etag))
}

/** Sends one item with its ETag, or 304 when If-None-Match names it. */
export function sendOne<T> (request: FastifyRequest, reply: FastifyReply, body: T, serialize?: Serialize): T | FastifyReply {
  const { etag, text } = item(body, serialize)
  reply.header('etag', etag)
  if (notModified(request, etag)) return reply.code(304).send()
  return text === undefined ? body : sendJsonText(reply, text)
}

export interface ListBody<T> {
  data: T[]
  meta: { limit: number, offset?: number, total?: number, next?: string, serverTime: string }
}

/**
 * Pages of one list route answered without a query: URL -> the body last sent for it (serverTime
 * left as a slot), its ETag and total, and the database's change mark read before that page's
 * query ran. A mark that moved since (any commit, by the gateway or by the picking system behind
 * its back) makes the entry stale, so a hit is exactly the page the query would return now. An
 * ERP that polls the same page all day gets it, or its 304, for the cost of the token check.
 * Bounded by bytes (least recently used out first). A page larger than 128 KiB (or an eighth of
 * the budget) is not kept: a poll asks for the same small page again and again, a full sync walks
 * once through pages of up to 1,000 rows (400 KB each), which would only push the polled pages out.
 * For the same reason a page is kept from its second request on, and only if that comes before the
 * pages asked for in between would have filled the budget (kept at its first request, it would
 * have been pushed out by then anyway). So a page asked for once, by a walk or a one-off filter,
 * never enters, nor does one of a round of more pages than the cache holds. Kept, each such page
 * (34 KB for 100 rows) outlived V8's young generation only to die in the old one: at 200 such pages
 * a second, a full collection every 2 s (npm run bench, goal 5's list).
 */
export class ListPageCache {
  /** URL -> the page and the change mark read before its query */
  private readonly kept: SizedLru<{ mark: string, page: CachedPage }>
  /** URLs asked for once, with the size their page would have taken: the next set() keeps it */
  private readonly seen: SizedLru<true>
  private readonly maxPage: number
  constructor (maxBytes = 4 * 1048576, maxPage = 128 * 1024) {
    this.kept = new SizedLru(maxBytes)
    this.seen = new SizedLru(maxBytes)
    this.maxPage = Math.min(maxPage, maxBytes / 8)
  }

  get (url: string, mark: string): CachedPage | undefined {
    const hit = this.kept.take(url)
    if (hit === undefined) return undefined
    const size = sizeOf(url, hit.page)
    if (hit.mark !== mark) {
      // asked for again since it was kept: keep its next version at once
      this.seen.put(url, true, size)
      return undefined
    }
    this.kept.put(url, hit, size)
    return hit.page
  }

  set (url: string, mark: string, page: CachedPage): void {
    const old = this.kept.take(url)
    const size = sizeOf(url, page)
    if (size > this.maxPage) return
    if (old === undefined && this.seen.take(url) === undefined) {
      this.seen.put(url, true, size)
      return
    }
    this.kept.put(url, { mark, page }, size)
  }

  get size (): number {
    return this.kept.count
  }

  /** characters held (bodies and URLs) */
  get held (): number {
    return this.kept.bytes
  }
}

const sizeOf = (url: string, page: CachedPage): number => page.text.length + url.length

/** A map bounded by the sizes given with its values, least recently put out first. */
class SizedLru<V> {
  private readonly map = new Map<string, { value: V, size: number }>()
  bytes = 0
  constructor (private readonly maxBytes: number) {}

  get count (): number {
    return this.map.size
  }

  /** Removes the key and gives its value. */
  take (key: string): V | undefined {
    const entry = this.map.get(key)
    if (entry === undefined) return undefined
    this.map.delete(key)
    this.bytes -= entry.size
    return entry.value
  }

  /** The key as the most recent; the oldest go while the sizes exceed the budget. */
  put (key: string, value: V, size: number): void {
    this.take(key)
    this.map.set(key, { value, size })
    this.bytes += size
    while (this.bytes > this.maxBytes) {
      const [oldest] = this.map.keys()
      this.take(oldest)
    }
  }
}

export interface CachedPage {
  etag: string
  /** the body as sent, with serverTime as TIME_SLOT at `at` */
  text: string
  at: number
  total?: number
}

export interface SendListOptions {
  /**
   * The rows hold only stored fields (no live, volatile ones): the body is serialized once with
   * the route's compiled serializer and the ETag is the hash of that text; with a cache and a
   * database that has a change mark, a page whose data cannot have changed is answered from the
   * cache (200 or 304) without a query.
   */
  stored?: { cache: ListPageCache, mark: () => string | undefined }
  /** filters on response fields that are not columns (parseListQuery) */
  derived?: DerivedFilters
}

/** serverTime's place while the body is hashed: the same length as any ISO time, so it is replaced in place. */
const TIME_SLOT = '0000-00-00T00:00:00.000Z'

const DAY_MS = 86_400_000

/**
 * meta.serverTime: the point a sync passes as its next `modifiedSince`. Writers store the time
 * they took, often to the second only (CURRENT_TIMESTAMP, GETDATE() in a trigger) or to the minute
 * (smalldatetime), and commit later; a change made in the second of the page's query, or committed
 * just after it, carries a time before that query's. So it is the gateway's clock when the query
 * began less one step of the modified-time column (at least a second, or the mapping's commitLagMs;
 * two for date-only columns), rounded down to the second (to the minute for coarser columns): such
 * rows come again on the next run instead of never. A column of local time (timeZone) shows the
 * autumn's repeated hour's second occurrence as its first: from within that hour, back to its start.
 */
export function syncPoint (queryStartedAt: number, resolutionMs: number, commitLagMs = 1000, timeZone?: string): string {
  const { k, grain } = syncStepOf(queryStartedAt, resolutionMs, commitLagMs)
  return syncPointAt(k, grain, timeZone)
}

/** which grain'th step the sync point of a query started at `queryStartedAt` lies in, and the grain */
function syncStepOf (queryStartedAt: number, resolutionMs: number, commitLagMs = 1000): { k: number, grain: number } {
  const grain = syncGrain(resolutionMs)
  return { k: Math.floor((queryStartedAt - syncStep(resolutionMs, commitLagMs)) / grain), grain }
}

/** one step of the column: a second at least, two days for date-only columns */
const columnStep = (resolutionMs: number): number => resolutionMs >= DAY_MS ? 2 * resolutionMs : Math.max(1000, resolutionMs)
/** how far back the point lies: a step of the column, or commitLagMs */
const syncStep = (resolutionMs: number, commitLagMs: number): number => Math.max(columnStep(resolutionMs), commitLagMs)
/** what the point is rounded down to: the second, the minute for coarser columns */
const syncGrain = (resolutionMs: number): number => Math.min(columnStep(resolutionMs), 60_000)

/** the sync point of the grain'th step `k` */
function syncPointAt (k: number, grain: number, timeZone: string | undefined): string {
  let at = k * grain
  // local wall-clock stamps: around the autumn change, the repeated hour's second occurrence reads as its first
  if (timeZone !== undefined) at = Math.floor(earliestShownFrom(at, timeZone) / grain) * grain
  return new Date(at).toISOString()
}

/** the last serverTime per repository: it moves once a second at most, and a local zone's costs some microseconds */
const lastServerTime = new WeakMap<Repository, { k: number, grain: number, timeZone: string | undefined, text: string }>()

/** meta.serverTime of a list of the repository's rows queried now, by the database server's clock where that is behind the gateway's. */
export function serverTimeOf (repo: Repository): string {
  const { k, grain } = syncStepOf(Date.now() - repo.clockBehindMs, repo.modifiedResolutionMs, repo.storage.mapping.commitLagMs)
  const timeZone = repo.modifiedTimeZone
  const last = lastServerTime.get(repo)
  if (last !== undefined && last.k === k && last.grain === grain && last.timeZone === timeZone) return last.text
  const text = syncPointAt(k, grain, timeZone)
  lastServerTime.set(repo, { k, grain, timeZone, text })
  return text
}

/**
 * A page's meta: limit and offset as asked, total (also as X-Total-Count) when counted, the link
 * to the page after `cursor`, and serverTime (syncPoint of `serverTime`, the time the query began).
 */
export function listMeta (request: FastifyRequest, reply: FastifyReply, asked: { limit: number, offset?: number }, serverTime: string, total?: number, cursor?: string): ListBody<never>['meta'] {
  const meta: ListBody<never>['meta'] = { limit: asked.limit, serverTime }
  if (asked.offset !== undefined) meta.offset = asked.offset
  if (total !== undefined) {
    meta.total = total
    reply.header('x-total-count', String(total))
  }
  if (cursor !== undefined) meta.next = nextLink(request.url.split('?')[0], request.query as QueryString, cursor)
  return meta
}

/** A page whose rows may hold live fields: the ETag is taken over data, total and next (volatile fields left out); 304 when it matches. */
export function sendListBody<T> (request: FastifyRequest, reply: FastifyReply, data: T[], meta: ListBody<T>['meta']): ListBody<T> | FastifyReply {
  const etag = etagOf({ data, total: meta.total, next: meta.next })
  reply.header('etag', etag)
  if (notModified(request, etag)) return reply.code(304).send()
  return { data, meta }
}

/** Parses the list query, runs it and builds the envelope with meta.next, X-Total-Count and ETag. */
export async function sendList<T> (
  request: FastifyRequest,
  reply: FastifyReply,
  repo: Repository,
  toPublic: (row: Row) => T,
  opts: SendListOptions = {}
): Promise<ListBody<T> | FastifyReply> {
  const parsed = parseListQuery(request.query as QueryString, repo.def, repo.storage.coded, opts.derived)
  const stored = opts.stored
  const mark = stored?.mark()
  const hit = mark === undefined ? undefined : stored?.cache.get(request.url, mark)
  if (hit !== undefined) {
    reply.header('etag', hit.etag)
    if (hit.total !== undefined) reply.header('x-total-count', String(hit.total))
    if (notModified(request, hit.etag)) return reply.code(304).send()
    return sendStored(reply, hit, serverTimeOf(repo))
  }
  const serverTime = serverTimeOf(repo)
  const result = await repo.list(parsed)
  const meta = listMeta(request, reply, parsed, serverTime, result.total, result.next)
  const data = result.rows.map(toPublic)
  if (stored === undefined) return sendListBody(request, reply, data, meta)
  // Serialize once: the route's compiled serializer, with serverTime's slot held fixed while hashing
  meta.serverTime = TIME_SLOT
  const text = reply.serialize({ data, meta }) as string
  const page: CachedPage = { etag: hashTag(text), text, at: text.lastIndexOf(TIME_SLOT), total: meta.total }
  if (mark !== undefined) stored.cache.set(request.url, mark, page)
  reply.header('etag', page.etag)
  if (notModified(request, page.etag)) return reply.code(304).send()
  return sendStored(reply, page, serverTime)
}

/**
 * A stored body with this request's serverTime in its slot (the last one: meta follows data).
 * Kept and sent as a string: copying a Buffer per request (40 KB for a page of 100) churned
 * memory outside V8's heap and raised the resident size by tens of MiB under load (npm run bench).
 */
function sendStored (reply: FastifyReply, page: CachedPage, serverTime: string): FastifyReply {
  return sendJsonText(reply, page.text.slice(0, page.at) + serverTime + page.text.slice(page.at + TIME_SLOT.length))
}
