// Turns a list request's query string into a ListQuery (DESIGN §5), and the opaque keyset cursor both ways.
import { BadQueryError } from './errors.js'
import { idField } from './resources.js'
import type { FieldDef, FieldKind, ResourceDef, SqlValue } from './types.js'

export const DEFAULT_LIMIT = 100
export const MAX_LIMIT = 1000
/** Bounds the number of bound parameters a filter set produces (SQL Server allows 2100 per request). */
export const MAX_FILTER_VALUES = 500

export type FilterOp =
  | 'eq' | 'gt' | 'gte' | 'lt' | 'lte' | 'not'
  | 'like' | 'notlike' | 'or' | 'nor' | 'null' | 'notnull'

/**
 * One condition on one field. `values` are typed by the field's kind (datetimes as Date).
 * For like/notlike, values[0] is a pattern for `LIKE … ESCAPE '\'`: `%` and `_` are wildcards,
 * `\%`, `\_` and `\\` the characters themselves (likePattern writes it); the statement builder
 * escapes what else its dialect treats specially.
 *
 * The negations (`not`, `nor`, `notlike`) also match rows where the field is NULL: in SQL,
 * `col <> 'x'` is not true for a NULL col, and integrators asking for "everything that is not
 * x" do not expect rows without a value to vanish.
 */
export interface Filter {
  field: string
  op: FilterOp
  values: SqlValue[]
}

/** A filter on a field computed from stored ones: the raw query value to a Filter, or a BadQueryError. */
export type DerivedFilters = Record<string, (raw: string) => Filter>

export interface SortKey {
  field: string
  desc: boolean
}

export interface ListQuery {
  limit: number
  /** set only for offset paging (so meta.offset can tell) */
  offset?: number
  /** never empty; always ends with the id field */
  sort: SortKey[]
  count: boolean
  filters: Filter[]
  /** the opaque cursor of the request; the repository decodes it into `after` */
  cursor?: string
  /** keyset position: the previous page's last row's stored value of every sort key */
  after?: SqlValue[]
  /** SQLite: mark the numbers a text field's untyped column holds on the listed rows (STORED_NUMBERS), for a list sorted in memory */
  storedNumbers?: boolean
}

export type QueryString = Record<string, string | string[] | undefined>

const CONTROL_PARAMS = new Set(['limit', 'offset', 'sort', 'count', 'cursor', 'modifiedSince'])
export const OPERATORS: readonly FilterOp[] = ['eq', 'gt', 'gte', 'lt', 'lte', 'not', 'like', 'notlike', 'or', 'nor', 'null', 'notnull']
/** a value starting with `[word]` names an operator (case-insensitive); an unknown word is an error, not text */
const OPERATOR = /^\[([a-z]+)\]/i
/** what other APIs call the operators, for the message about an unknown one */
const OPERATOR_HINTS: Record<string, FilterOp> = { ne: 'not', neq: 'not', in: 'or', nin: 'nor', notin: 'nor', ge: 'gte', le: 'lte', isnull: 'null', isnotnull: 'notnull', contains: 'like' }
const KIND_NAMES: Record<FieldKind, string> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  datetime: 'an ISO 8601 date-time'
}

function isVisible (f: FieldDef | undefined): f is FieldDef {
  return f !== undefined && f.internal !== true
}

function single (query: QueryString, key: string): string | undefined {
  const v = query[key]
  if (Array.isArray(v)) {
    if (v.length > 1) throw new BadQueryError(`Query parameter '${key}' must be given only once`)
    return v[0]
  }
  return v
}

/** A whole number from min to max in decimal digits; whatever is wrong with it, the message states the whole rule (-1 is an integer too). */
function parseCount (name: string, raw: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(raw)
  if (!/^\d+$/.test(raw) || n < min || n > max) throw new BadQueryError(`Query parameter '${name}' must be an integer from ${min} to ${max}, got '${raw}'`)
  return n
}

const ISO_DATETIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+\- ]\d{2}:?\d{2})?)?$/i

/**
 * Parses an ISO 8601 date or date-time. Without an offset the time is UTC (the API speaks UTC).
 * A space before the offset is read as '+': an unencoded '+' in a query string arrives as a space.
 * Returns undefined for anything else, including impossible dates such as February 31.
 */
export function parseIsoDateTime (raw: string): Date | undefined {
  const m = ISO_DATETIME.exec(raw)
  if (m === null) return undefined
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m
  // the year 0000 is no year of the calendar SQL Server and .NET count (0001 to 9999)
  if (y === '0000') return undefined
  let offset = zone.toUpperCase() === 'Z' ? 'Z' : zone.replace(' ', '+')
  if (offset !== 'Z' && !offset.includes(':')) offset = `${offset.slice(0, 3)}:${offset.slice(3)}`
  const ms = frac.padEnd(3, '0').slice(0, 3)
  const text = `${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}${offset}`
  const t = Date.parse(text)
  if (Number.isNaN(t)) return undefined
  // Date.parse rolls 2024-02-31 over into March; check the calendar fields did not move
  // (setUTCFullYear, not Date.UTC, which reads the years 0-99 as 1900-1999: .NET's DateTime.MinValue is 0001-01-01)
  const check = new Date(0)
  check.setUTCFullYear(Number(y), Number(mo) - 1, Number(d))
  if (check.getUTCFullYear() !== Number(y) || check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d)) return undefined
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined
  return new Date(t)
}

/**
 * The time has digits past the millisecond that are not zero (.NET's round-trip format sends seven):
 * parseIsoDateTime keeps the millisecond it falls in, which order filters must round to the right side.
 */
function finerThanMs (raw: string): boolean {
  const frac = ISO_DATETIME.exec(raw)?.[7] ?? ''
  return /[1-9]/.test(frac.slice(3))
}

/**
 * A time filter, exact although the API's times are whole milliseconds: with a time finer than that
 * (t in the millisecond m), below t is at or before m, at or past t is after m, after t is after m and
 * at or before t at or before m (never a bound past 9999-12-31T23:59:59.999, .NET's MaxValue).
 * Equality with such a time cannot hold: a 400 says so.
 */
function timeFilter (field: string, op: FilterOp, raw: string): Filter {
  const v = operand(field, { kind: 'datetime' }, raw, false)
  if (!finerThanMs(raw)) return { field, op, values: [v] }
  if (op === 'lt' || op === 'lte') return { field, op: 'lte', values: [v] }
  if (op === 'gt' || op === 'gte') return { field, op: 'gt', values: [v] }
  throw new BadQueryError(`Invalid value for '${field}': the API's times are whole milliseconds, so none equals '${raw}'; use [gte] and [lt] for a range`)
}

/** true or false in a query string, in any case (True, FALSE); undefined for anything else. */
function parseBoolean (raw: string): boolean | undefined {
  const lower = raw.toLowerCase()
  return lower === 'true' ? true : lower === 'false' ? false : undefined
}

/** Parses one filter operand by the field's kind; undefined when it is not of that kind. */
export function parseValue (kind: FieldKind, raw: string): SqlValue | undefined {
  switch (kind) {
    case 'string':
      return raw
    case 'integer': {
      if (!/^-?\d+$/.test(raw)) return undefined
      const n = Number(raw)
      return Number.isSafeInteger(n) ? n : undefined
    }
    case 'number': {
      if (!/^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i.test(raw)) return undefined
      const n = Number(raw)
      return Number.isFinite(n) ? n : undefined
    }
    case 'boolean':
      // in any case: Python's requests, PowerShell and .NET write a boolean as True
      return parseBoolean(raw)
    case 'datetime':
      return parseIsoDateTime(raw)
  }
}

/**
 * One operand. On a field with a value map (`codes`) a value that is not of the field's kind is a
 * stored code no map knows (`blocked=X`: rows the API shows as "X"); `null` is not, as it never was
 * (`[null]` finds rows without a value).
 */
function operand (field: string, def: FieldDef, raw: string, codes: boolean): SqlValue {
  const v = parseValue(def.kind, raw)
  if (v !== undefined) return v
  if (codes && raw !== 'null') return raw
  const hint = codes ? ', or a stored code (for rows without a value: [null])' : ''
  // digits beyond 2^53 are an integer too: then the message names the range that was broken
  const kind = def.kind === 'integer' && /^-?\d+$/.test(raw) ? `an integer from ${-Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}` : KIND_NAMES[def.kind]
  throw new BadQueryError(`Invalid value for '${field}': expected ${kind}${hint}, got '${raw}'`)
}

/**
 * An API [like] pattern as a pattern for `LIKE … ESCAPE '\'`. In the API pattern `%` and `_` are
 * wildcards and `\%`, `\_`, `\\` stand for the characters themselves; any other backslash is
 * literal. Without an unescaped wildcard the pattern matches as a substring.
 */
export function likePattern (raw: string): string {
  let out = ''
  let wildcard = false
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]
    if (c === '\\') {
      const next = raw[i + 1]
      if (next === '%' || next === '_' || next === '\\') {
        out += `\\${next}`
        i++
      } else {
        out += '\\\\'
      }
    } else {
      if (c === '%' || c === '_') wildcard = true
      out += c
    }
  }
  return wildcard ? out : `%${out}%`
}

/**
 * Parses one `field=value` filter; exported for the tests and for callers building filters by hand.
 * `codes`: the field has a value map, so a value not of its kind is taken as a stored code.
 */
export function parseFilter (field: string, def: FieldDef, raw: string, codes = false): Filter {
  const m = OPERATOR.exec(raw)
  const time = def.kind === 'datetime' && !codes
  if (m === null) return time ? timeFilter(field, 'eq', raw) : { field, op: 'eq', values: [operand(field, def, raw, codes)] }
  const op = m[1].toLowerCase() as FilterOp
  if (!OPERATORS.includes(op)) {
    const hint = OPERATOR_HINTS[op] === undefined ? '' : ` (did you mean [${OPERATOR_HINTS[op]}]?)`
    throw new BadQueryError(`Filter '${field}': unknown operator '${m[0]}'${hint}; the operators are ${OPERATORS.map((o) => `[${o}]`).join(' ')} ` +
      `(case-insensitive). To match a value that starts with '[', put [eq] before it: '${field}=[eq]${raw}'`)
  }
  const rest = raw.slice(m[0].length)
  switch (op) {
    case 'null':
    case 'notnull':
      if (rest !== '') throw new BadQueryError(`Filter '${field}': [${op}] takes no value, got '${rest}'`)
      return { field, op, values: [] }
    case 'or':
    case 'nor':
      // `\;` is a literal semicolon inside a value of the list
      return { field, op, values: rest.split(/(?<!\\);/).map((part) => time ? timeFilter(field, op, part).values[0] : operand(field, def, part.replaceAll('\\;', ';'), codes)) }
    case 'like':
    case 'notlike': {
      if (def.kind !== 'string') throw new BadQueryError(`Filter '${field}': [${op}] works only on text fields`)
      return { field, op, values: [likePattern(rest)] }
    }
    default:
      return time ? timeFilter(field, op, rest) : { field, op, values: [operand(field, def, rest, codes)] }
  }
}

/** Parses a sort parameter (`-modifiedAt,materialNumber`); the id field is appended as the final tie-breaker. */
export function parseSort (def: ResourceDef, raw: string | undefined, derived?: DerivedFilters): SortKey[] {
  const id = idField(def)
  const keys: SortKey[] = []
  for (const part of (raw ?? '').split(',')) {
    // '+' arrives as a space when the client did not encode it
    let name = part.trim()
    if (name === '') continue
    let desc = false
    if (name.startsWith('-')) { desc = true; name = name.slice(1) } else if (name.startsWith('+')) name = name.slice(1)
    if (!Object.hasOwn(def.fields, name) || !isVisible(def.fields[name])) {
      // a response field that is no column (a user's source) filters by what its values stand for, but has nothing to sort by
      if (derived !== undefined && Object.hasOwn(derived, name)) throw new BadQueryError(`'${name}' cannot be sorted by in 'sort': it is derived from other columns, not stored (filter by it instead: ?${name}=…)`)
      throw new BadQueryError(`Unknown sort field '${name}' in 'sort'`)
    }
    if (keys.some((k) => k.field === name)) throw new BadQueryError(`Sort field '${name}' given twice in 'sort'`)
    keys.push({ field: name, desc })
  }
  if (!keys.some((k) => k.field === id)) keys.push({ field: id, desc: false })
  return keys
}

/** The canonical text of a sort; a cursor records it so that it cannot be replayed under another sort. */
export function sortSpec (sort: SortKey[]): string {
  return sort.map((k) => (k.desc ? '-' : '') + k.field).join(',')
}

/**
 * `codes`: the fields with a value map in this installation (ResourceStorage.coded), whose filters
 * may name stored codes that no map knows.
 * `derived`: response fields that are not columns (a user's `source`), each with the filter on
 * stored columns that one of its values stands for.
 */
export function parseListQuery (query: QueryString, def: ResourceDef, codes?: ReadonlySet<string>, derived?: DerivedFilters): ListQuery {
  const limitRaw = single(query, 'limit')
  const offsetRaw = single(query, 'offset')
  const countRaw = single(query, 'count')
  const cursorRaw = single(query, 'cursor')
  const sinceRaw = single(query, 'modifiedSince')

  const limit = limitRaw === undefined ? DEFAULT_LIMIT : parseCount('limit', limitRaw, 1, MAX_LIMIT)
  const offset = offsetRaw === undefined ? undefined : parseCount('offset', offsetRaw, 0)
  let count = false
  if (countRaw !== undefined) {
    const parsed = parseBoolean(countRaw)
    if (parsed === undefined) throw new BadQueryError(`Query parameter 'count' must be true or false, got '${countRaw}'`)
    count = parsed
  }
  const sort = parseSort(def, single(query, 'sort'), derived)

  const filters: Filter[] = []
  if (sinceRaw !== undefined) {
    if (!isVisible(def.fields.modifiedAt)) throw new BadQueryError("Unknown query parameter 'modifiedSince'")
    const since = parseIsoDateTime(sinceRaw)
    if (since === undefined) throw new BadQueryError(`Invalid value for 'modifiedSince': expected an ISO 8601 date-time, got '${sinceRaw}'`)
    filters.push({ field: 'modifiedAt', op: finerThanMs(sinceRaw) ? 'gt' : 'gte', values: [since] })
  }
  // every unknown name at once, as a body's unknown fields are: an ERP with several misspelt filters fixes them in one go
  const unknown = Object.keys(query).filter((key) => !CONTROL_PARAMS.has(key) && query[key] !== undefined &&
    !(derived !== undefined && Object.hasOwn(derived, key)) && (!Object.hasOwn(def.fields, key) || !isVisible(def.fields[key])))
  if (unknown.length > 0) throw new BadQueryError(`Unknown query parameter${unknown.length > 1 ? 's' : ''} ${unknown.map((key) => `'${key}'`).join(', ')}`)
  let operands = 0
  for (const [key, value] of Object.entries(query)) {
    if (CONTROL_PARAMS.has(key) || value === undefined) continue
    const derive = derived !== undefined && Object.hasOwn(derived, key) ? derived[key] : undefined
    if (derive !== undefined) {
      for (const raw of Array.isArray(value) ? value : [value]) filters.push(derive(raw))
      continue
    }
    const field = def.fields[key]
    for (const raw of Array.isArray(value) ? value : [value]) {
      const filter = parseFilter(key, field, raw, codes?.has(key) === true)
      operands += Math.max(1, filter.values.length)
      if (operands > MAX_FILTER_VALUES) throw new BadQueryError(`Too many filter values (at most ${MAX_FILTER_VALUES})`)
      filters.push(filter)
    }
  }

  if (cursorRaw !== undefined && offset !== undefined) throw new BadQueryError("Query parameter 'cursor' cannot be combined with 'offset'")
  return { limit, ...(offset !== undefined && { offset }), sort, count, filters, ...(cursorRaw !== undefined && { cursor: cursorRaw }) }
}

interface CursorBody {
  /** the sort spec */
  s: string
  /**
   * the last row's stored value of every sort key; times as ISO 8601 with up to 7 fractional
   * digits; ±Infinity (SQLite keeps it, JSON has no literal for it) as `{"n": "Infinity"}`; a BLOB
   * (SQLite keeps one in any column, and sorts it after all text) as `{"b": "<base64>"}`, so the
   * keyset compares a BLOB, as ORDER BY does, and not its bytes read as text
   */
  v: Array<string | number | boolean | null | { n: string } | { b: string }>
}

/**
 * How a cursor value is read back: by the type the keyset compares it as. `scalar` is a SQLite
 * column's: text, a number or a flag, whatever the column declares, since SQLite stores any value
 * in any column (text in a DECIMAL column, 2.5 in an INTEGER one).
 */
export type CursorValueType = 'string' | 'number' | 'integer' | 'boolean' | 'time' | 'scalar'

/** An ISO text of a stored time, keeping the driver's digits below the millisecond (datetime2(7)). */
export function timeText (value: Date): string {
  const below = (value as Date & { nanosecondsDelta?: number }).nanosecondsDelta
  const iso = value.toISOString()
  if (typeof below !== 'number' || below <= 0) return iso
  const digits = String(Math.round(below * 1e7)).padStart(4, '0').replace(/0+$/, '')
  return `${iso.slice(0, -1)}${digits}Z`
}

/** A time text with up to 7 fractional digits as a Date carrying the rest below the millisecond (for tedious). */
export function timeFromText (text: string): Date | undefined {
  const m = /^(.*\.\d{3})(\d{1,4})Z$/.exec(text)
  const date = parseIsoDateTime(m === null ? text : `${m[1]}Z`)
  if (date === undefined || m === null) return date
  const below = Number(m[2].padEnd(4, '0')) / 1e7
  Object.defineProperty(date, 'nanosecondDelta', { value: below, enumerable: false })
  Object.defineProperty(date, 'nanosecondsDelta', { value: below, enumerable: false })
  return date
}

/** The cursor for the page after a row whose sort keys hold `values` (as stored). */
export function encodeCursor (sort: SortKey[], values: unknown[]): string {
  const v = values.map((value) => {
    if (value instanceof Date) return timeText(value)
    if (value === undefined || value === null) return null
    if (typeof value === 'number') return Number.isFinite(value) ? value : { n: String(value) }
    if (typeof value === 'string' || typeof value === 'boolean') return value
    // beyond 2^53 as text, so that the keyset compares the exact value
    if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : String(value)
    if (value instanceof Uint8Array) return { b: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') }
    return String(value)
  })
  const body: CursorBody = { s: sortSpec(sort), v }
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url')
}

export const invalidCursor = (): BadQueryError => new BadQueryError("Query parameter 'cursor' is not a valid cursor")

/** A cursor's sort spec and values, as the client sent them back: BadQueryError when it is not one at all. */
export function readCursor (cursor: string): { s: string, v: unknown[] } {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalidCursor()
  let body: unknown
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    throw invalidCursor()
  }
  const { s, v } = (typeof body === 'object' && body !== null ? body : {}) as { s?: unknown, v?: unknown }
  if (typeof s !== 'string' || !Array.isArray(v)) throw invalidCursor()
  return { s, v }
}

/** A number as encodeCursor writes it: finite, or ±Infinity as `{"n": "Infinity"}`. */
function cursorNumber (raw: unknown): number | undefined {
  if (typeof raw === 'number') return Number.isFinite(raw) ? raw : undefined
  const n = (typeof raw === 'object' && raw !== null ? raw : {}) as { n?: unknown }
  return n.n === 'Infinity' ? Infinity : n.n === '-Infinity' ? -Infinity : undefined
}

/** A BLOB a cursor keeps (`{"b": "<base64>"}`), bound as a BLOB (better-sqlite3 binds a Buffer so). */
function cursorBlob (raw: unknown): SqlValue | undefined {
  const b = (typeof raw === 'object' && raw !== null ? raw : {}) as { b?: unknown }
  if (typeof b.b !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(b.b)) return undefined
  // a Buffer where SqlValue names none: only SQLite's scalar keys ever carry one, and its driver takes it
  return Buffer.from(b.b, 'base64') as unknown as SqlValue
}

const integerText = (raw: string): number | string => Number.isSafeInteger(Number(raw)) ? Number(raw) : raw

/** Digits a 64-bit integer (SQL Server's bigint) holds: a cursor's text beyond it (9999999999999999999) is none of ours, and the driver would refuse it (a 500). */
const int64Text = (raw: string): boolean => /^-?\d{1,19}$/.test(raw) && BigInt(raw) >= -(2n ** 63n) && BigInt(raw) < 2n ** 63n

/**
 * Reads a cursor back into keyset values of the given types; BadQueryError when it is malformed
 * or made for another sort. `nullable[i]` false refuses a null (the id).
 */
export function decodeCursor (cursor: string, sort: SortKey[], types: CursorValueType[], nullable: boolean[]): SqlValue[] {
  const { s, v } = readCursor(cursor)
  if (s !== sortSpec(sort)) throw new BadQueryError("Query parameter 'cursor' does not match sort: keep the 'sort' of the request that returned it")
  if (v.length !== sort.length) throw invalidCursor()
  return sort.map((_, i) => {
    const raw = v[i]
    if (raw === null) {
      if (!nullable[i]) throw invalidCursor()
      return null
    }
    let value: SqlValue | undefined
    switch (types[i]) {
      case 'string': value = typeof raw === 'string' ? raw : undefined; break
      case 'boolean': value = typeof raw === 'boolean' ? raw : raw === 0 || raw === 1 ? raw : undefined; break
      // SQL Server's bigint arrives as text (and beyond 2^53 stays text: encodeCursor)
      case 'integer': value = Number.isSafeInteger(raw) ? raw as number : typeof raw === 'string' && int64Text(raw) ? integerText(raw) : undefined; break
      case 'number': value = cursorNumber(raw); break
      case 'time': value = typeof raw === 'string' ? timeFromText(raw) : undefined; break
      case 'scalar': value = typeof raw === 'string' || typeof raw === 'boolean' ? raw : cursorBlob(raw) ?? cursorNumber(raw); break
    }
    if (value === undefined) throw invalidCursor()
    return value
  })
}

function encodeComponent (s: string): string {
  // commas and colons are legal in a query and keep sort lists and times readable
  return encodeURIComponent(s).replaceAll('%2C', ',').replaceAll('%3A', ':')
}

/**
 * The relative URL of the next page: the request's filters, sort, limit and count, plus the cursor;
 * never its offset (the cursor replaces it).
 */
export function nextLink (path: string, query: QueryString, cursor: string): string {
  const parts: string[] = []
  for (const [key, value] of Object.entries(query)) {
    if (key === 'offset' || key === 'cursor' || value === undefined) continue
    for (const v of Array.isArray(value) ? value : [value]) parts.push(`${encodeComponent(key)}=${encodeComponent(v)}`)
  }
  parts.push(`cursor=${cursor}`)
  return `${path}?${parts.join('&')}`
}
