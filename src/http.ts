// HTTP conventions shared by the resource routes: ETags, conditional requests, the list envelope.
import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { parseListQuery, nextLink } from './db/list-query.js'
import type { Repository } from './db/repository.js'
import type { Row } from './db/types.js'

/** Fields left out of ETags: they change on every heartbeat and are not the resource's version. */
const VOLATILE = new Set(['lastSeenAt'])

export function etagOf (value: unknown): string {
  const json = JSON.stringify(value, (key, v) => (VOLATILE.has(key) ? undefined : v))
  return `"${createHash('sha256').update(json).digest('base64url').slice(0, 27)}"`
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
export function ifMatchCheck<T> (request: FastifyRequest, toPublic: (row: Row) => T): ((current: Row) => boolean) | undefined {
  const header = request.headers['if-match']
  if (!header) return undefined
  if (header.trim() === '*') return () => true
  const tags = listTags(header)
  return (current) => tags.includes(etagOf(toPublic(current)))
}

/** Sends one object with its ETag, or 304. */
export function sendOne<T> (request: FastifyRequest, reply: FastifyReply, body: T): T | FastifyReply {
  const etag = etagOf(body)
  reply.header('etag', etag)
  if (notModified(request, etag)) return reply.code(304).send()
  return body
}

export interface ListBody<T> {
  data: T[]
  meta: { limit: number, offset?: number, total?: number, next?: string, serverTime: string }
}

/**
 * Conditional GETs of one list route answered without a query: URL -> the ETag last sent for it
 * and the database's change mark read before that page's query ran. A mark that moved since
 * (any commit, by the gateway or by the picking system behind its back) makes the entry stale.
 */
export class ListEtagCache {
  private readonly entries = new Map<string, { mark: string, etag: string }>()
  constructor (private readonly max = 1000) {}

  get (url: string, mark: string): string | undefined {
    const hit = this.entries.get(url)
    return hit !== undefined && hit.mark === mark ? hit.etag : undefined
  }

  set (url: string, mark: string, etag: string): void {
    this.entries.delete(url)
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value as string)
    this.entries.set(url, { mark, etag })
  }

  get size (): number {
    return this.entries.size
  }
}

export interface SendListOptions {
  /**
   * The rows hold only stored fields (no live, volatile ones): the body is serialized once with
   * the route's compiled serializer and the ETag is the hash of that text; with a cache and a
   * database that has a change mark, a matching If-None-Match is answered without a query.
   */
  stored?: { cache?: ListEtagCache, mark?: () => string | undefined }
}

/** serverTime's place while the body is hashed: the same length as any ISO time, so it is replaced in place. */
const TIME_SLOT = '0000-00-00T00:00:00.000Z'

function hashTag (text: string): string {
  return `"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`
}

/** Parses the list query, runs it and builds the envelope with meta.next, X-Total-Count and ETag. */
export async function sendList<T> (
  request: FastifyRequest,
  reply: FastifyReply,
  repo: Repository,
  toPublic: (row: Row) => T,
  opts: SendListOptions = {}
): Promise<ListBody<T> | FastifyReply> {
  const query = request.query as Record<string, string | string[] | undefined>
  const parsed = parseListQuery(query, repo.def)
  const stored = opts.stored
  const mark = stored?.mark?.()
  if (stored?.cache !== undefined && mark !== undefined && request.headers['if-none-match'] !== undefined) {
    const etag = stored.cache.get(request.url, mark)
    if (etag !== undefined && notModified(request, etag)) return reply.code(304).header('etag', etag).send()
  }
  const result = await repo.list(parsed)
  const meta: ListBody<T>['meta'] = { limit: parsed.limit, serverTime: new Date().toISOString() }
  if (parsed.offset !== undefined) meta.offset = parsed.offset
  if (result.total !== undefined) {
    meta.total = result.total
    reply.header('x-total-count', String(result.total))
  }
  if (result.next !== undefined) meta.next = nextLink(request.url.split('?')[0], query, result.next)
  const data = result.rows.map(toPublic)
  if (stored === undefined) {
    const etag = etagOf({ data, total: meta.total, next: meta.next })
    reply.header('etag', etag)
    if (notModified(request, etag)) return reply.code(304).send()
    return { data, meta }
  }
  // Serialize once: the route's compiled serializer, with serverTime's slot held fixed while hashing
  const serverTime = meta.serverTime
  meta.serverTime = TIME_SLOT
  const text = reply.serialize({ data, meta }) as string
  const etag = hashTag(text)
  if (mark !== undefined) stored.cache?.set(request.url, mark, etag)
  reply.header('etag', etag)
  if (notModified(request, etag)) return reply.code(304).send()
  const at = text.lastIndexOf(TIME_SLOT)
  return reply.type('application/json; charset=utf-8').send(text.slice(0, at) + serverTime + text.slice(at + TIME_SLOT.length))
}
