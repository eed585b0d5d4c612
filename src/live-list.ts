// Lists that filter or sort on fields the database does not hold (a station's live hardware state): done in memory.
import { BadQueryError } from './db/errors.js'
import { STORED_NUMBERS } from './db/repository.js'
import { invalidCursor, parseListQuery, readCursor, sortSpec, type Filter, type ListQuery, type QueryString, type SortKey } from './db/list-query.js'
import type { FieldDef, FieldKind, ResourceDef, Row, SqlValue } from './db/types.js'

/**
 * The most rows a live list reads from the database before filtering and sorting them in memory.
 * Stations number in the hundreds; beyond this the request is refused rather than read whole.
 */
export const LIVE_LIST_CAP = 10000

/** A parsed list request split into what the database does and what is left for memory. */
export interface LiveListQuery {
  /** the whole request, parsed against the resource with its live fields */
  query: ListQuery
  /** conditions on stored fields: the database applies them */
  stored: Filter[]
  /** conditions on live fields: applied in memory */
  live: Filter[]
  /** true when a live field is filtered or sorted on; otherwise the ordinary list path serves the request */
  inMemory: boolean
  /** true when a live field is sorted on: its values move between pages */
  liveSort: boolean
}

/** The resource's definition with its live fields added, so that the list parser knows them. */
export function withLiveFields (def: ResourceDef, live: Record<string, FieldDef>): ResourceDef {
  return { ...def, fields: { ...def.fields, ...live } }
}

/** Parses a list request that may name live fields; BadQueryError as for any list. `codes` as for parseListQuery. */
export function parseLiveListQuery (raw: QueryString, def: ResourceDef, live: Record<string, FieldDef>, codes?: ReadonlySet<string>): LiveListQuery {
  const query = parseListQuery(raw, withLiveFields(def, live), codes)
  const isLive = (field: string): boolean => Object.hasOwn(live, field)
  const stored: Filter[] = []
  const liveFilters: Filter[] = []
  for (const filter of query.filters) {
    if (!isLive(filter.field)) {
      stored.push(filter)
      continue
    }
    if (filter.op === 'like' || filter.op === 'notlike') {
      throw new BadQueryError(`Filter '${filter.field}': [${filter.op}] does not work on a live field; use [or] with the values`)
    }
    // a live field's values are the gateway's own, not stored codes: one it never has is a typo, not an empty match
    const { enum: values } = live[filter.field]
    const unknown = values === undefined ? undefined : filter.values.find((v) => typeof v === 'string' && !values.includes(v))
    if (unknown !== undefined) {
      throw new BadQueryError(`Invalid value for '${filter.field}': expected one of ${values!.join(', ')}, got '${String(unknown)}'`)
    }
    liveFilters.push(filter)
  }
  const liveSort = query.sort.some((k) => isLive(k.field))
  return { query, stored, live: liveFilters, inMemory: liveFilters.length > 0 || liveSort, liveSort }
}

/** The query the database runs for a live list: stored filters only, every match up to the cap (by id). */
export function storedQuery (q: LiveListQuery, idField = 'id'): ListQuery {
  return { limit: LIVE_LIST_CAP, sort: [{ field: idField, desc: false }], count: false, filters: q.stored, storedNumbers: true }
}

export function tooManyRows (noun: string, liveFields: string[]): BadQueryError {
  return new BadQueryError(`Filtering or sorting ${noun} by ${liveFields.join(', ')} works on at most ${LIVE_LIST_CAP} ${noun}, and more match ` +
    'the other filters: narrow the list with filters on stored fields')
}

/** A row value as the comparisons see it: times as epoch milliseconds, everything else as the API shows it. */
function comparable (kind: FieldKind, value: unknown): string | number | boolean | null {
  if (value === null || value === undefined) return null
  if (value instanceof Date) return value.getTime()
  if (kind === 'datetime' && typeof value === 'string') {
    const t = Date.parse(value)
    return Number.isNaN(t) ? value : t
  }
  return value as string | number | boolean
}

/**
 * Orders two non-null values of one field: false < true, numbers by value, text by code point, and a
 * number before any text, as SQLite's ORDER BY puts them (a text field's number in a column without a
 * declared type: STORED_NUMBERS).
 */
function order (a: string | number | boolean, b: string | number | boolean): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b
  if (typeof a === 'number' && typeof b === 'string') return -1
  if (typeof a === 'string' && typeof b === 'number') return 1
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b)
  const x = String(a)
  const y = String(b)
  return x < y ? -1 : x > y ? 1 : 0
}

/** One filter on one row, with the SQL semantics of list-query.ts (the negations also match null). */
export function matches (row: Row, filter: Filter, kind: FieldKind): boolean {
  const value = comparable(kind, row[filter.field])
  const values = filter.values.map((v: SqlValue) => comparable(kind, v))
  const equal = (v: string | number | boolean | null): boolean => value !== null && v !== null && order(value, v) === 0
  const cmp = (): number => order(value!, values[0]!)
  switch (filter.op) {
    case 'eq': return values[0] === null ? value === null : equal(values[0])
    case 'not': return value === null || !equal(values[0])
    case 'or': return values.some(equal)
    case 'nor': return value === null || !values.some(equal)
    case 'null': return value === null
    case 'notnull': return value !== null
    case 'gt': return value !== null && cmp() > 0
    case 'gte': return value !== null && cmp() >= 0
    case 'lt': return value !== null && cmp() < 0
    case 'lte': return value !== null && cmp() <= 0
    case 'like':
    case 'notlike':
      throw new BadQueryError(`Filter '${filter.field}': [${filter.op}] does not work on a live field`)
  }
}

/**
 * Compares two rows' sort keys the way the SQL lists do: NULL first ascending, last descending; on a field with a value
 * map (`known`: its API values), a code the map does not know (shown as stored) after all of them, such codes as equal
 * (ties by id), as the database's rank of the codes sorts them (sql.ts sortExpr).
 */
export function compareKeys (a: unknown[], b: unknown[], sort: SortKey[], kinds: Record<string, FieldKind>, known: Record<string, ReadonlySet<unknown>> = {}): number {
  for (let i = 0; i < sort.length; i++) {
    const kind = kinds[sort[i].field]
    const x = comparable(kind, a[i])
    const y = comparable(kind, b[i])
    const values = known[sort[i].field]
    // 1 for a code the field's map does not know
    const ux = values !== undefined && !values.has(x) ? 1 : 0
    const uy = values !== undefined && !values.has(y) ? 1 : 0
    const c = x === null ? (y === null ? 0 : -1) : y === null ? 1 : ux + uy > 0 ? ux - uy : order(x, y)
    if (c !== 0) return sort[i].desc ? -c : c
  }
  return 0
}

/** A row's sort keys as the API shows them, but a number its `stored` row holds in a text field (STORED_NUMBERS) as that number. */
function keysOf (row: Row, sort: SortKey[], stored?: Row): unknown[] {
  const numbers = (stored as { [STORED_NUMBERS]?: Record<string, number> } | undefined)?.[STORED_NUMBERS]
  return sort.map((k) => numbers?.[k.field] ?? row[k.field] ?? null)
}

const encodeKeys = (sort: SortKey[], keys: unknown[]): string =>
  Buffer.from(JSON.stringify({ s: `live:${sortSpec(sort)}`, v: keys }), 'utf8').toString('base64url')

/** A live list's cursor: the last row's sort keys as the API shows them, marked so that it is never taken for a database cursor. */
export function encodeLiveCursor (sort: SortKey[], row: Row): string {
  return encodeKeys(sort, keysOf(row, sort))
}

export function decodeLiveCursor (cursor: string, sort: SortKey[], kinds: Record<string, FieldKind>): unknown[] {
  const invalid = invalidCursor
  const { s, v } = readCursor(cursor)
  if (v.length !== sort.length) throw invalid()
  if (s !== `live:${sortSpec(sort)}`) throw new BadQueryError("Query parameter 'cursor' does not match this query: keep the filters and 'sort' of the request that returned it")
  v.forEach((value: unknown, i) => {
    const kind = kinds[sort[i].field]
    const type = kind === 'integer' || kind === 'number' ? 'number' : kind === 'boolean' ? 'boolean' : 'string'
    // a text field's stored number (STORED_NUMBERS) stays a number
    if (value !== null && typeof value !== type && !(kind === 'string' && typeof value === 'number')) throw invalid()
  })
  return v
}

export interface LivePage {
  rows: Row[]
  /** when the query asked for a count: the rows that match every filter */
  total?: number
  /** the cursor of the next page; absent on the last page */
  next?: string
}

/**
 * Filters (live conditions), sorts and pages rows that already passed the stored filters. `kinds`
 * gives every field's kind; `stored`, the repository's row of each where the rows are the API's view
 * of them (for STORED_NUMBERS). The cursor is the last row's keys: sorted by stored fields, a walk through
 * meta.next sees every row exactly once even when rows come and go; a row whose sort key changes
 * moves, as in any sorted walk. Sorted by a live field, the walk goes on after the last row where it
 * stands now (see below), so rows whose live value moves against it may be skipped or come twice.
 */
export function livePage (rows: Row[], q: LiveListQuery, kinds: Record<string, FieldKind>, known: Record<string, ReadonlySet<unknown>> = {}, stored?: readonly Row[]): LivePage {
  const { query } = q
  const keyed: Array<{ row: Row, keys: unknown[] }> = []
  rows.forEach((row, i) => {
    if (q.live.every((f) => matches(row, f, kinds[f.field]))) keyed.push({ row, keys: keysOf(row, query.sort, stored?.[i] ?? row) })
  })
  keyed.sort((a, b) => compareKeys(a.keys, b.keys, query.sort, kinds, known))
  let start = query.offset ?? 0
  if (query.cursor !== undefined) {
    const after = decodeLiveCursor(query.cursor, query.sort, kinds)
    // Live values move between pages, and every frame moves the lastSeenAt of all the stations of a controller at
    // once, the last page's row with them: by its old keys alone the next page began again at the first of them
    // (sort=lastSeenAt, for ever) or after the last (-lastSeenAt, ending the walk). So the walk goes on after that
    // row where it stands now, and by its keys only when it is gone (deleted, or no longer matching). A sort by
    // stored fields alone (live filters only) goes on by the keys, as the database's cursor does: a station edited
    // meanwhile (renamed to the end) would otherwise take the walk past every station between its old and new place.
    // Rows that share an id (one column of a composite key) are told apart by their keys while those stand still: the
    // last with the cursor's keys (a page holds all of those, below), else the last with its id. The first with its id
    // began the next page before the row the page had ended at, and a walk met that row again, for ever
    const i = q.liveSort ? query.sort.findIndex((k) => k.field === 'id') : -1
    let last = -1
    if (i !== -1) {
      last = keyed.findLastIndex((r) => r.keys[i] === after[i] && compareKeys(r.keys, after, query.sort, kinds, known) === 0)
      if (last === -1) last = keyed.findLastIndex((r) => r.keys[i] === after[i])
    }
    start = last !== -1 ? last + 1 : keyed.findIndex((r) => compareKeys(r.keys, after, query.sort, kinds, known) > 0)
    if (start < 0) start = keyed.length
  }
  let end = Math.min(start + query.limit, keyed.length)
  // rows that share an id (one column of a composite key) share every key, and the next page would begin after
  // all of them: the page ends before them instead, or holds them all where they fill it (as the database's list)
  const tied = (i: number): boolean => compareKeys(keyed[i].keys, keyed[end].keys, query.sort, kinds, known) === 0
  if (start < end && end < keyed.length && tied(end - 1)) {
    let cut = end - 1
    while (cut > start && tied(cut - 1)) cut--
    if (cut > start) end = cut
    else while (end < keyed.length && tied(end - 1)) end++
  }
  const slice = keyed.slice(start, end)
  const result: LivePage = { rows: slice.map((r) => r.row) }
  if (query.count) result.total = keyed.length
  if (end < keyed.length) result.next = encodeKeys(query.sort, slice[slice.length - 1].keys)
  return result
}
