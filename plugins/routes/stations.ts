// /api/stations: picking stations, with live state from the hardware plugin. Written by admins only.
import type { FastifyInstance } from 'fastify'
import { Station, StationCreate, StationUpdate } from '../../schemas/stations.js'
import type { QueryString } from '../../src/db/list-query.js'
import type { Id, Repository } from '../../src/db/repository.js'
import type { FieldDef, FieldKind, Row } from '../../src/db/types.js'
import { listMeta, sendList, sendListBody, serverTimeOf } from '../../src/http.js'
import { computedFilterParameter } from '../../src/column-schemas.js'
import { livePage, parseLiveListQuery, storedQuery, tooManyRows, withLiveFields } from '../../src/live-list.js'
import type { Hardware } from '../hardware.js'
import { resourceRoutes, type ListHandler } from './resource.js'

/** The live fields, as the list parser sees them: filterable and sortable, computed per row by the hardware plugin. */
const LIVE: Record<string, FieldDef> = {
  connected: { kind: 'boolean', readOnly: true },
  status: { kind: 'string', readOnly: true, enum: ['offline', 'idle', 'busy', 'error', 'disabled'] },
  lastSeenAt: { kind: 'datetime', readOnly: true }
}

const STORED = Object.keys(Station.properties).filter((field) => !Object.hasOwn(LIVE, field))

export const stationView = (hardware: Hardware) => (row: Row): Station => {
  const stored = Object.fromEntries(STORED.map((field) => [field, row[field] ?? null]))
  // into stored, not {...stored, ...live}: on Node 20 that clone gains keys and gets a hidden class of its own (README, Performance)
  return Object.assign(stored, hardware.stationState(row)) as Station
}

/**
 * The station list: the plain list unless a live field is filtered or sorted on; then every
 * station that matches the stored filters (up to LIVE_LIST_CAP) is read, and the live filters,
 * the sort and the page are applied in memory.
 */
const stationList = (_fastify: FastifyInstance, repo: Repository, toPublic: (row: Row) => Record<string, unknown>): ListHandler => {
  const kinds: Record<string, FieldKind> = Object.fromEntries(Object.entries(withLiveFields(repo.def, LIVE).fields).map(([field, def]) => [field, def.kind]))
  // a value map's API values: a code it does not know sorts after them, as in the database's order
  const known = Object.fromEntries([...repo.storage.coded].map((field) => [field, new Set(repo.storage.fields[field].map!.order)]))
  return async (request, reply) => {
    const query = request.query as QueryString
    const q = parseLiveListQuery(query, repo.def, LIVE, repo.storage.coded)
    if (!q.inMemory) return await sendList(request, reply, repo, toPublic)
    // a stored sort key without a column is refused here as the database path would refuse it
    for (const key of q.query.sort) if (!Object.hasOwn(LIVE, key.field)) repo.sql.col(key.field)
    const serverTime = serverTimeOf(repo)
    const stored = await repo.list(storedQuery(q))
    if (stored.next !== undefined) throw tooManyRows('stations', Object.keys(LIVE))
    const page = livePage(stored.rows.map(toPublic), q, kinds, known, stored.rows)
    return sendListBody(request, reply, page.rows, listMeta(request, reply, q.query, serverTime, page.total, page.next))
  }
}

export default resourceRoutes({
  noun: 'station',
  tag: 'stations',
  repo: (fastify) => fastify.repos.stations,
  item: Station,
  create: StationCreate,
  update: StationUpdate,
  toPublic: (fastify) => stationView(fastify.hardware),
  writers: ['admin'],
  // two stations on one address would each report every pick there: an ERP would book it twice
  uniqueTogether: ['controllerId', 'address'],
  filters: Object.fromEntries(Object.entries(LIVE).map(([field, def]) => [field, computedFilterParameter(field, def.kind, def.enum)])),
  list: stationList,
  // a stream filtered to it would otherwise stay open for ever, with nothing to send
  deleted: (fastify, row) => { fastify.hardware.stationDeleted(row.id as Id) }
})
