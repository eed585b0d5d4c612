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

/** Parses the list query, runs it and builds the envelope with meta.next, X-Total-Count and ETag. */
export async function sendList<T> (
  request: FastifyRequest,
  reply: FastifyReply,
  repo: Repository,
  toPublic: (row: Row) => T
): Promise<ListBody<T> | FastifyReply> {
  const query = request.query as Record<string, string | string[] | undefined>
  const parsed = parseListQuery(query, repo.def)
  const result = await repo.list(parsed)
  const meta: ListBody<T>['meta'] = { limit: parsed.limit, serverTime: new Date().toISOString() }
  if (parsed.offset !== undefined) meta.offset = parsed.offset
  if (result.total !== undefined) {
    meta.total = result.total
    reply.header('x-total-count', String(result.total))
  }
  if (result.next !== undefined) meta.next = nextLink(request.url.split('?')[0], query, result.next)
  const data = result.rows.map(toPublic)
  const etag = etagOf({ data, total: meta.total, next: meta.next })
  reply.header('etag', etag)
  if (notModified(request, etag)) return reply.code(304).send()
  return { data, meta }
}
