import t from 'tap'
import { stations } from '../src/db/resources.js'
import { encodeCursor } from '../src/db/list-query.js'
import type { FieldDef, FieldKind, Row } from '../src/db/types.js'
import {
  compareKeys, decodeLiveCursor, encodeLiveCursor, LIVE_LIST_CAP, livePage, matches, parseLiveListQuery, storedQuery, tooManyRows, withLiveFields
} from '../src/live-list.js'

const LIVE: Record<string, FieldDef> = {
  connected: { kind: 'boolean' },
  status: { kind: 'string' },
  lastSeenAt: { kind: 'datetime' }
}
const KINDS: Record<string, FieldKind> = Object.fromEntries(Object.entries(withLiveFields(stations, LIVE).fields).map(([f, d]) => [f, d.kind]))

const T1 = '2026-01-01T10:00:00.000Z'
const T2 = '2026-01-01T10:00:05.000Z'
const ROWS: Row[] = [
  { id: 1, name: 'A', type: 'ptl', connected: true, status: 'idle', lastSeenAt: T2 },
  { id: 2, name: 'B', type: 'ptl', connected: true, status: 'busy', lastSeenAt: T1 },
  { id: 3, name: 'C', type: 'vlm', connected: false, status: 'offline', lastSeenAt: null },
  { id: 4, name: 'D', type: 'vlm', connected: false, status: 'disabled', lastSeenAt: null },
  { id: 5, name: 'E', type: 'ptl', connected: true, status: 'idle', lastSeenAt: T1 },
  { id: 6, name: 'F', type: 'manual', connected: false, status: 'offline', lastSeenAt: T1 }
]

const page = (query: Record<string, string | string[]>, rows = ROWS) => livePage(rows, parseLiveListQuery(query, stations, LIVE), KINDS)
const ids = (query: Record<string, string | string[]>): number[] => page(query).rows.map((r) => r.id as number)

t.test('which requests need memory', async (t) => {
  t.equal(parseLiveListQuery({ name: 'A', sort: '-name' }, stations, LIVE).inMemory, false, 'stored fields only: the database does it all')
  const q = parseLiveListQuery({ name: '[like]A', status: '[or]idle;busy', limit: '5' }, stations, LIVE)
  t.equal(q.inMemory, true)
  t.same(q.stored, [{ field: 'name', op: 'like', values: ['%A%'] }])
  t.same(q.live, [{ field: 'status', op: 'or', values: ['idle', 'busy'] }])
  t.same(storedQuery(q), { limit: LIVE_LIST_CAP, sort: [{ field: 'id', desc: false }], count: false, filters: q.stored, storedNumbers: true }, 'the database reads every stored match, by id, up to the cap, its rows marked with the numbers untyped text columns hold')
  t.equal(parseLiveListQuery({ sort: '-lastSeenAt' }, stations, LIVE).inMemory, true, 'a live sort key alone')
  t.throws(() => parseLiveListQuery({ status: '[like]id' }, stations, LIVE), { name: 'BadQueryError', message: "Filter 'status': [like] does not work on a live field; use [or] with the values" })
  t.throws(() => parseLiveListQuery({ connected: 'maybe' }, stations, LIVE), { message: "Invalid value for 'connected': expected true or false, got 'maybe'" })
  t.throws(() => parseLiveListQuery({ lastSeenAt: '[gt]yesterday' }, stations, LIVE), { message: /expected an ISO 8601 date-time/ })
  t.throws(() => parseLiveListQuery({ status: '[ne]idle' }, stations, LIVE), { message: /unknown operator '\[ne\]'/ })
  t.match(tooManyRows('stations', ['status', 'connected', 'lastSeenAt']).message, /at most 10000 stations/)
})

t.test('filters: the SQL semantics, negations include null', async (t) => {
  t.same(ids({ status: '[or]idle;busy' }), [1, 2, 5])
  t.same(ids({ status: 'offline' }), [3, 6])
  t.same(ids({ status: '[not]idle' }), [2, 3, 4, 6])
  t.same(ids({ status: '[nor]idle;offline' }), [2, 4])
  t.same(ids({ connected: 'false' }), [3, 4, 6])
  t.same(ids({ connected: '[not]true' }), [3, 4, 6])
  t.same(ids({ lastSeenAt: '[null]' }), [3, 4])
  t.same(ids({ lastSeenAt: '[notnull]' }), [1, 2, 5, 6])
  t.same(ids({ lastSeenAt: T1 }), [2, 5, 6], 'equality on the instant')
  t.same(ids({ lastSeenAt: '2026-01-01T12:00:05+02:00' }), [1], 'any offset')
  t.same(ids({ lastSeenAt: `[gt]${T1}` }), [1])
  t.same(ids({ lastSeenAt: `[gte]${T1}` }), [1, 2, 5, 6])
  t.same(ids({ lastSeenAt: `[lt]${T2}` }), [2, 5, 6], 'null is neither before nor after')
  t.same(ids({ lastSeenAt: `[lte]${T1}` }), [2, 5, 6])
  t.same(ids({ lastSeenAt: `[not]${T1}` }), [1, 3, 4], '[not] includes null')
  t.same(ids({ lastSeenAt: [`[gte]${T1}`, `[lt]${T2}`] }), [2, 5, 6], 'repeated: AND')
  t.same(ids({ lastSeenAt: `[or]${T2};2000-01-01` }), [1])
  t.same(ids({ lastSeenAt: `[nor]${T1}` }), [1, 3, 4])
  t.same(ids({ status: 'idle', connected: 'true' }), [1, 5])
  t.equal(matches({ status: null }, { field: 'status', op: 'eq', values: [null] }, 'string'), true, 'equality with null (built by hand)')
  t.throws(() => matches({ status: 'x' }, { field: 'status', op: 'like', values: ['%x%'] }, 'string'), { name: 'BadQueryError' })
})

t.test('sort: live and stored keys, NULL first ascending and last descending, ties by id', async (t) => {
  t.same(ids({ sort: 'status' }), [2, 4, 1, 5, 3, 6], 'busy, disabled, idle, offline')
  t.same(ids({ sort: '-status,-name' }), [6, 3, 5, 1, 4, 2])
  t.same(ids({ sort: 'lastSeenAt' }), [3, 4, 2, 5, 6, 1])
  t.same(ids({ sort: '-lastSeenAt' }), [1, 2, 5, 6, 3, 4])
  t.same(ids({ sort: '-lastSeenAt,-id' }), [1, 6, 5, 2, 4, 3])
  t.same(ids({ sort: 'connected,type,-name' }), [6, 4, 3, 5, 2, 1], 'false before true, then a stored key')
  t.same(ids({ status: '[or]idle;busy', sort: '-name' }), [5, 2, 1], 'a live filter with a stored sort')
  t.equal(compareKeys([null], [null], [{ field: 'lastSeenAt', desc: false }], KINDS), 0)
  t.equal(compareKeys([T1], ['not a time'], [{ field: 'lastSeenAt', desc: false }], KINDS) < 0, true, 'a time the API could not read sorts as text')
})

t.test('sort by a field with a value map and a live filter: a code the map does not know after the map\'s values, such codes as equal (ties by id), as the database sorts them', async (t) => {
  // WpType 'S' and 'X' are no station type the map knows: shown as stored, sorted last by the database (sort=type without a live filter)
  const rows: Row[] = [
    { id: 1, name: 'A', type: 'X', connected: false, status: 'offline', lastSeenAt: null },
    { id: 2, name: 'B', type: 'manual', connected: false, status: 'offline', lastSeenAt: null },
    { id: 3, name: 'C', type: 'S', connected: false, status: 'offline', lastSeenAt: null },
    { id: 4, name: 'D', type: null, connected: false, status: 'offline', lastSeenAt: null },
    { id: 5, name: 'E', type: 'vlm', connected: false, status: 'offline', lastSeenAt: null }
  ]
  const known = { type: new Set<unknown>(['vlm', 'carousel', 'ptl', 'manual']) }
  const sorted = (sort: string): number[] => livePage(rows, parseLiveListQuery({ sort, status: 'offline' }, stations, LIVE), KINDS, known).rows.map((r) => r.id as number)
  t.same(sorted('type'), [4, 2, 5, 1, 3], 'no value, manual, vlm, then X and S by id (not S before manual, by code point)')
  t.same(sorted('-type'), [1, 3, 5, 2, 4], 'X and S first, by id as every tie')
})

t.test('paging: offset, count after the live filters, and a cursor that walks every row once', async (t) => {
  const first = page({ sort: 'status', limit: '4', count: 'true' })
  t.same(first.rows.map((r) => r.id), [2, 4, 1, 5])
  t.equal(first.total, 6)
  t.type(first.next, 'string')
  t.same(page({ sort: 'status', limit: '4', offset: '4' }).rows.map((r) => r.id), [3, 6])
  t.equal(page({ sort: 'status', limit: '4', offset: '4' }).next, undefined, 'the last page has no next')
  t.same(page({ sort: 'status', limit: '2', offset: '9' }).rows, [], 'beyond the end: empty')
  const counted = page({ status: 'offline', count: 'true', limit: '1' })
  t.equal(counted.total, 2, 'the count is taken after the live filters')
  t.equal(counted.rows.length, 1)

  for (const sort of ['status', '-lastSeenAt', 'connected,-name', 'lastSeenAt,-id', '-status']) {
    const all = ids({ sort })
    const walked: number[] = []
    let cursor: string | undefined
    do {
      const p = page({ sort, limit: '2', ...(cursor !== undefined && { cursor }) })
      walked.push(...p.rows.map((r) => r.id as number))
      cursor = p.next
    } while (cursor !== undefined)
    t.same(walked, all, `sort=${sort}: every row once, in order`)
  }

  // rows inserted and deleted between pages: the cursor is a position in the key order, not a count
  const p1 = page({ sort: 'name', status: '[not]disabled', limit: '2' })
  t.same(p1.rows.map((r) => r.id), [1, 2])
  const changed = [{ id: 7, name: 'AA', status: 'idle', connected: true, lastSeenAt: T1 }, ...ROWS.filter((r) => r.id !== 1)]
  const p2 = page({ sort: 'name', status: '[not]disabled', limit: '2', cursor: p1.next! }, changed)
  t.same(p2.rows.map((r) => r.id), [3, 5], 'a row inserted before the cursor and one deleted before it shift nothing')
})

t.test('paging by stored fields where rows share an id (one column of a composite key, Nr of (Mandant, Nr)): a walk returns every row', async (t) => {
  const shared: Row[] = [
    { id: 1, name: 'L-1', connected: false, status: 'offline', lastSeenAt: null },
    { id: 1, name: 'L-1', connected: false, status: 'offline', lastSeenAt: null },
    { id: 2, name: 'L-2', connected: false, status: 'offline', lastSeenAt: null },
    { id: 1, name: 'L-1', connected: false, status: 'offline', lastSeenAt: null },
    { id: 3, name: 'L-3', connected: false, status: 'offline', lastSeenAt: null }
  ]
  // before: a page that ended at the first L-1 carried its keys, and the next began after every L-1
  for (const [sort, limit] of [['id', '1'], ['id', '2'], ['-name', '3'], ['name', '4']]) {
    const walked: number[] = []
    let cursor: string | undefined
    do {
      const p = page({ sort, connected: 'false', limit, ...(cursor !== undefined && { cursor }) }, shared)
      walked.push(...p.rows.map((r) => r.id as number))
      cursor = p.next
    } while (cursor !== undefined)
    t.same(walked.sort(), [1, 1, 1, 2, 3], `sort=${sort}&limit=${limit}`)
  }
})

t.test('paging by a live field where rows share an id: every row once, and the walk ends', async (t) => {
  const shared: Row[] = [
    { id: 1, name: 'L-1', warehouse: 'A', connected: false, status: 'offline', lastSeenAt: null },
    { id: 1, name: 'L-1', warehouse: 'B', connected: false, status: 'offline', lastSeenAt: null },
    { id: 2, name: 'L-2', warehouse: 'A', connected: false, status: 'disabled', lastSeenAt: null },
    { id: 1, name: 'L-1', warehouse: 'C', connected: false, status: 'disabled', lastSeenAt: null },
    { id: 3, name: 'L-3', warehouse: 'A', connected: false, status: 'offline', lastSeenAt: null }
  ]
  // before: the next page began after the first row with the cursor's id, so a page that ended at the second L-1
  // (warehouse B) began again with it, for ever; and a page could end between rows of the same status and id
  for (const [sort, limit] of [['status', '1'], ['status', '2'], ['-status', '1'], ['-status', '3'], ['connected', '1']]) {
    const walked: string[] = []
    let cursor: string | undefined
    for (let pages = 0; pages < 10; pages++) {
      const p = page({ sort, limit, ...(cursor !== undefined && { cursor }) }, shared)
      walked.push(...p.rows.map((r) => `${String(r.id)}${String(r.warehouse)}`))
      cursor = p.next
      if (cursor === undefined) break
    }
    t.equal(cursor, undefined, `sort=${sort}&limit=${limit}: the walk ends`)
    t.same(walked.sort(), ['1A', '1B', '1C', '2A', '3A'], `sort=${sort}&limit=${limit}`)
  }
})

t.test('paging by a live field that moves for every station of a controller at once (each frame sets its lastSeenAt): every station once, and the walk ends', async (t) => {
  const at = (s: number): string => new Date(Date.UTC(2026, 0, 1, 10, 0, s)).toISOString()
  /** the stations of one controller as a read n seconds later sees them: all seen again meanwhile */
  const seen = (s: number): Row[] => [1, 2, 3, 4, 5].map((id) => ({ id, name: `S${id}`, type: 'ptl', connected: true, status: 'idle', lastSeenAt: at(s) }))
  for (const sort of ['lastSeenAt', '-lastSeenAt', '-lastSeenAt,-id']) {
    const walked: number[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const p = page({ sort, limit: '2', ...(cursor !== undefined && { cursor }) }, seen(pages++))
      walked.push(...p.rows.map((r) => r.id as number))
      cursor = p.next
    } while (cursor !== undefined && pages < 10)
    // before: sort=lastSeenAt began again at the first station on every page, for ever; -lastSeenAt ended after the first page
    t.same(walked.slice().sort((a, b) => a - b), [1, 2, 3, 4, 5], `sort=${sort}: ${walked.join(',')}`)
    t.ok(pages <= 3, `sort=${sort}: ended after ${pages} pages`)
  }
  // the station the last page ended with is gone (deleted, or no longer matching): the walk goes on by its keys
  const p1 = page({ sort: 'lastSeenAt', limit: '2' }, seen(0))
  const p2 = page({ sort: 'lastSeenAt', limit: '2', cursor: p1.next! }, seen(0).filter((r) => r.id !== 2))
  t.same(p2.rows.map((r) => r.id), [3, 4])
})

t.test('paging by a stored field with a live filter goes on after the cursor\'s keys, as the database\'s cursor does: a station renamed meanwhile skips no other', async (t) => {
  const p1 = page({ sort: 'name', connected: 'true', limit: '1' })
  t.same(p1.rows.map((r) => r.id), [1])
  // station 1 ('A') renamed to the end of the order between the pages
  const renamed = ROWS.map((r) => r.id === 1 ? { ...r, name: 'Z' } : r)
  const p2 = page({ sort: 'name', connected: 'true', limit: '5', cursor: p1.next! }, renamed)
  // before: the next page began after 'Z', where station 1 stands now, and B and E were never listed
  t.same(p2.rows.map((r) => r.id), [2, 5, 1], 'after A: B, E, and the renamed station where it stands now')
})

t.test('cursors', async (t) => {
  const sort = [{ field: 'lastSeenAt', desc: true }, { field: 'id', desc: false }]
  const cursor = encodeLiveCursor(sort, ROWS[0])
  t.same(decodeLiveCursor(cursor, sort, KINDS), [T2, 1])
  const bad = (c: string, message: RegExp): void => { t.throws(() => decodeLiveCursor(c, sort, KINDS), { name: 'BadQueryError', message }, c) }
  bad('not a cursor!', /not a valid cursor/)
  bad(Buffer.from('{').toString('base64url'), /not a valid cursor/)
  bad(Buffer.from('[1]').toString('base64url'), /not a valid cursor/)
  bad(Buffer.from(JSON.stringify({ s: 'live:-lastSeenAt,id', v: [T2] })).toString('base64url'), /not a valid cursor/)
  bad(Buffer.from(JSON.stringify({ s: 'live:-lastSeenAt,id', v: [T2, 'one'] })).toString('base64url'), /not a valid cursor/)
  bad(Buffer.from(JSON.stringify({ s: 'live:-lastSeenAt,id', v: [5, 1] })).toString('base64url'), /not a valid cursor/)
  bad(encodeLiveCursor([{ field: 'status', desc: false }, { field: 'id', desc: false }], ROWS[0]), /does not match this query/)
  bad(encodeCursor(sort, [T2, 1]), /does not match this query/)
  t.throws(() => page({ sort: 'status', cursor: encodeCursor([{ field: 'status', desc: false }, { field: 'id', desc: false }], ['idle', 1]) }),
    { message: /does not match this query/ }, "a database cursor is not a live list's cursor")
})
