// How each API field is stored: the column's declared type, value maps and time zone, compiled once per resource.
import { createHash } from 'node:crypto'
import { argon2HashLength, DEFAULT_ARGON2 } from '../auth/passwords.js'
import { codePageLength, describeCharacter, isDoubleByte, unstorableCharacter } from './code-pages.js'
import { InvalidValueError, UnreadableTableError } from './errors.js'
import { parseIsoDateTime, parseValue } from './list-query.js'
import { idField, isMissingTable, mappingProblems, missingColumns, referenceMappings, resources, type ResourceName } from './resources.js'
import { spellingsStatement, synonymsStatement, VERSION_STATEMENT, versionProblem, wideDecimal } from './mssql.js'
import { isTimeZone, isUtcZone, utcToWall, wallToUtc } from './time-zone.js'
import { holdsBytes, isFixedWidthText, TIME_FORMATS, type ColumnInfo, type Database, type DialectName, type FieldDef, type FieldKind, type ResourceDef, type SqlValue, type StoredCode, type TableMapping, type TimeFormat, type ColumnTimeFormat, type Write } from './types.js'

/** What the gateway makes of a column's declared type. */
export type Category = 'text' | 'ntext' | 'integer' | 'decimal' | 'float' | 'bit' | 'time' | 'other'

/** A compiled value map: API values and the codes that store them. */
export interface CompiledMap {
  /** API value (as text) -> stored codes, the first is written */
  codes: Map<string, StoredCode[]>
  /** normalized stored code -> API value */
  api: Map<string, unknown>
  /** lower-cased normalized code -> API value (codes compare case-insensitively, as SQL Server's usual collations do) */
  apiFolded: Map<string, unknown>
  /** API values in API order (false < true, numbers, text); their index + 1 is the rank sorting uses */
  order: unknown[]
  /** two values' codes differ only in case ('V' and 'v'): codes then compare exactly, in reads and filters alike */
  caseExact: boolean
}

export interface FieldStorage {
  readonly field: string
  readonly def: FieldDef
  /** the column's name; '' when the field is mapped to null (`absent`) */
  readonly column: string
  /** the table has no column for this field: always null, never written, not filterable */
  readonly absent: boolean
  /** undefined while the database has not been reached */
  readonly info: ColumnInfo | undefined
  readonly category: Category
  /** a fixed-width text column (char, nchar): its values come padded with spaces */
  readonly padded: boolean
  /**
   * SQLite: the width a CHAR(n)/NCHAR(n) column's values are written padded to, as SQL Server stores
   * them, where the picking system pads them (its data shows it, ColumnInfo.padsToWidth, or the
   * mapping's `pad`); undefined: written as sent
   */
  readonly padsTo: number | undefined
  /**
   * SQL Server's uniqueidentifier (a table keyed by GUIDs): read and compared as text, but only a GUID
   * is written or compared with it (the server's conversion of other text is error 8169)
   */
  readonly guid: boolean
  /** the column may hold NULL (always true while unknown, except for the id) */
  readonly nullable: boolean
  /**
   * the API may show null: the column is nullable, or it is a SQLite column of a non-text field
   * without a value map, whose declared type does not bind what other programs store (`'1,5'` in
   * a DECIMAL column reads as null)
   */
  readonly showsNull: boolean
  /** an insert must give a value: NOT NULL, no default, not filled by the database */
  readonly required: boolean
  readonly map: CompiledMap | undefined
  /** IANA zone of a column holding local wall-clock time; undefined for UTC */
  readonly timeZone: string | undefined
  /**
   * datetime columns: how finely the column stores time, in ms. 1 for milliseconds (datetime2(3),
   * SQLite's text), 0 for finer (datetime2(4..7)), more for coarser (smalldatetime 60000, date 86400000,
   * datetime2(0) 1000); -1 for SQL Server's datetime (1/300 s, rounded by the driver like the server does).
   */
  readonly resolutionMs: number
  /**
   * a date-time field kept in a number or text column (mapping's `format`): how it is written there;
   * undefined for a column of a time type (and SQLite's ISO 8601 text), and for julianday (below)
   */
  readonly timeFormat: ColumnTimeFormat | undefined
  /**
   * SQLite: a date-time field kept as Julian days in a number column (format julianday, what its
   * julianday() returns). SQLite's strftime reads those as it reads ISO text, so reads, filters and
   * sorting take the way of SQLite's text times (timeFormat stays undefined); only a write differs
   */
  readonly julianDays: boolean
  /**
   * SQLite: the form a date-time field's text is written in where it is not CURRENT_TIMESTAMP's with milliseconds
   * ('2026-11-26 04:30:01.111'): the mapping's format 'yyyy-mm-dd hh:mm:ss', or the form the column's times show
   * at start (ColumnInfo.isoTimeText). Reads, filters and sorting take any text SQLite's strftime reads, as
   * without it (old rows in another form too); only a write differs, and whole seconds make resolutionMs 1000
   */
  readonly timeText: TimeText | undefined
  /** T-SQL type text of parameters compared with or written to this column (SQL Server only) */
  readonly paramType: string | undefined
}

/**
 * A number as plain decimal text: 0.0000001 for 1e-7, 1000000000000000000000 for 1e21, as a legacy
 * program that parses its quantities digit by digit reads them; any other number as String gives it.
 */
export function plainNumber (n: number): string {
  const text = String(n)
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text)
  if (m === null) return text
  // String() writes exponents below 1e-6 and from 1e21 on: the point lies left of every digit or right of them all
  const digits = m[2] + (m[3] ?? '')
  const point = 1 + Number(m[4])
  return point <= 0 ? `${m[1]}0.${'0'.repeat(-point)}${digits}` : `${m[1]}${digits}${'0'.repeat(point - digits.length)}`
}

/** Characters (code points) of a text: its UTF-16 units less the second half of each surrogate pair. */
function codePoints (text: string): number {
  let n = text.length
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 0xdc00 && c <= 0xdfff) n--
  }
  return n
}

/** What SQL Server's integer types hold (bigint: what a JavaScript number holds exactly), and SQLite's declared types of those sizes. */
export const INTEGER_RANGES: Record<string, [number, number]> = {
  tinyint: [0, 255],
  smallint: [-32768, 32767],
  int: [-2147483648, 2147483647],
  bigint: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  // SQLite's other names of sizes (https://sqlite.org/datatype3.html), as a schema from MySQL or PostgreSQL declares them:
  // INT2 a SMALLINT, MEDIUMINT MySQL's three bytes, INT8 a BIGINT, UNSIGNED BIG INT one without negatives
  int2: [-32768, 32767],
  mediumint: [-8388608, 8388607],
  int8: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  'unsigned big int': [0, Number.MAX_SAFE_INTEGER]
}

/**
 * What SQL Server's money types hold: the range as the type declares it (for messages), and as
 * the doubles inside it (money's bounds round outward to ±922337203685477.625, which neither the
 * column nor the driver's 64-bit encoding holds).
 */
export const MONEY_RANGES: Record<string, { min: number, max: number, text: string }> = {
  smallmoney: { min: -214748.3648, max: 214748.3647, text: '-214748.3648 and 214748.3647' },
  money: { min: -922337203685477.5, max: 922337203685477.5, text: '-922337203685477.5808 and 922337203685477.5807' }
}

const MSSQL_CATEGORIES: Record<string, Category> = {
  varchar: 'text', char: 'text', text: 'text',
  // a GUID: the driver reads it as text ('6F9619FF-8B86-D011-B42D-00C04FC964FF'), and text converts to it
  uniqueidentifier: 'text',
  nvarchar: 'ntext', nchar: 'ntext', ntext: 'ntext', sysname: 'ntext',
  tinyint: 'integer', smallint: 'integer', int: 'integer', bigint: 'integer',
  decimal: 'decimal', numeric: 'decimal', money: 'decimal', smallmoney: 'decimal',
  float: 'float', real: 'float',
  bit: 'bit',
  datetime: 'time', smalldatetime: 'time', datetime2: 'time', datetimeoffset: 'time', date: 'time'
}

/** The category a field's kind stands for when nothing declares the column's type; `text` is the string kind's. */
function byKind (kind: FieldKind, text: Category): Category {
  return kind === 'string' ? text : kind === 'datetime' ? 'time' : kind === 'boolean' ? 'bit' : kind === 'integer' ? 'integer' : 'float'
}

/** Declared types of GUID columns on SQLite: NUMERIC affinity, where only text that is no number stays as written (a GUID with its hyphens). */
const SQLITE_GUID = /^(?:uniqueidentifier|guid|uuid)$/

/** A GUID as SQL Server converts text to uniqueidentifier: 32 hex digits in 8-4-4-4-12 groups, braces allowed. */
const GUID = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\{[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\})$/i

export function isGuid (text: string): boolean {
  return GUID.test(text)
}

/** What a value for a uniqueidentifier column must be, said of `field`. */
export function guidExpected (field: string, text: string): string {
  return `'${field}' must be a GUID in this installation (32 hexadecimal digits as 8-4-4-4-12, such as 6F9619FF-8B86-D011-B42D-00C04FC964FF), got ${JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text)}`
}

/** A column's category; SQLite by its declared type's affinity words (https://sqlite.org/datatype3.html). */
export function categoryOf (dialect: DialectName, info: ColumnInfo | undefined, kind: FieldKind): Category {
  if (info === undefined) return byKind(kind, 'ntext')
  const type = info.type.toLowerCase()
  if (dialect === 'mssql') return MSSQL_CATEGORIES[type] ?? 'other'
  if (/date|time/.test(type)) return 'time'
  if (/bool|bit/.test(type)) return 'bit'
  if (/int/.test(type)) return 'integer'
  if (/char|clob|text/.test(type)) return 'text'
  if (/real|floa|doub/.test(type)) return 'float'
  // a GUID column of a database moved from SQL Server (or written by .NET): text, in NUMERIC affinity (SQLITE_GUID)
  if (SQLITE_GUID.test(type)) return 'text'
  if (/dec|num|money/.test(type)) return info.precision !== undefined ? 'decimal' : 'float'
  // no declared type: SQLite stores whatever it is given
  return sqliteUntyped(type) ? byKind(kind, 'text') : 'other'
}

/**
 * A SQLite column of BLOB affinity, which stores any value as given: no declared type, or one naming
 * BLOB (and none of INT, CHAR, CLOB, TEXT, which come first in SQLite's rules). SQLite reports a
 * view's column over an untyped one as BLOB.
 */
export function sqliteUntyped (type: string): boolean {
  return type === '' || (/blob/.test(type) && !/int|char|clob|text/.test(type))
}

/**
 * A SQLite time column (DATETIME, DATE, TIMESTAMP) of NUMERIC or INTEGER affinity, not TEXT or REAL: SQLite
 * binds no time type, so the Unix times or digits a program writes there (strftime('%s','now') in a
 * trigger) stay numbers, in time order, and a column format (unix, yyyymmdd) can read them.
 */
export function sqliteNumericTime (type: string): boolean {
  return !/char|clob|text|real|floa|doub/.test(type.toLowerCase())
}

function mssqlParamType (info: ColumnInfo | undefined, category: Category): string | undefined {
  if (info === undefined) return undefined
  const t = info.type.toLowerCase()
  switch (category) {
    case 'text': return 'varchar(8000)'
    case 'ntext': return 'nvarchar(4000)'
    case 'integer': return t
    case 'decimal':
      if (t === 'money' || t === 'smallmoney') return t
      return `decimal(${info.precision ?? 18},${info.scale ?? 0})`
    case 'float': return t === 'real' ? 'real' : 'float'
    case 'bit': return 'bit'
    case 'time':
      if (t === 'datetime2' || t === 'datetimeoffset') return `${t}(${info.scale ?? 7})`
      return t
    default: return undefined
  }
}

/** SQLite time text: ISO 8601's first `length` characters with `sep` for its T, then `zone` ('2026-11-26T05:30:01Z'). */
export interface TimeText { readonly sep: ' ' | 'T', readonly length: 19 | 23, readonly zone: '' | 'Z' }

/**
 * SQLite: how a time field's text is written (FieldStorage.timeText): the format 'yyyy-mm-dd hh:mm:ss' as it says
 * (also in the gateway's own tables); else where every time the column held at start has a T (isoTimeText), that
 * form, as the picking system's text comparisons and ORDER BY need, but not a Z into local time (a column mapped
 * with a timeZone) nor into the gateway's own tables in UTC, whose driver text is ISO 8601 with a Z already.
 */
function timeTextOf (dialect: DialectName, info: ColumnInfo | undefined, format: TimeFormat | undefined, zone: string | undefined, reference: boolean): TimeText | undefined {
  if (dialect !== 'sqlite') return undefined
  if (format === 'yyyy-mm-dd hh:mm:ss') return { sep: ' ', length: 19, zone: '' }
  if (format !== undefined || info?.isoTimeText === undefined || (reference && zone === undefined)) return undefined
  if (info.isoTimeUtc === true && zone !== undefined) return undefined
  return { sep: 'T', length: info.isoTimeText === 'seconds' ? 19 : 23, zone: info.isoTimeUtc === true ? 'Z' : '' }
}

/** How finely each time format keeps time, in ms (as resolutionMs). */
const FORMAT_RESOLUTION: Record<TimeFormat, number> = { unix: 1000, 'unix-ms': 1, yyyymmdd: 86400000, yyyymmddhhmmss: 1000, julianday: 1, 'yyyy-mm-dd hh:mm:ss': 1000 }

function resolutionOf (dialect: DialectName, info: ColumnInfo | undefined, format: TimeFormat | undefined, text: TimeText | undefined): number {
  if (format !== undefined) return FORMAT_RESOLUTION[format]
  // SQLite text times written in whole seconds: modifiedAt moves by a second
  if (dialect === 'sqlite' || info === undefined) return text?.length === 19 ? 1000 : 1
  switch (info.type.toLowerCase()) {
    case 'datetime': return -1
    case 'smalldatetime': return 60000
    case 'date': return 86400000
    case 'datetime2':
    case 'datetimeoffset': {
      const scale = info.scale ?? 7
      return scale >= 4 ? 0 : 10 ** (3 - scale)
    }
    default: return 1
  }
}

/** a number written as text: what numberFromDb reads (the filter parser's syntax; no decimal commas, no hex) */
const NUMBER_TEXT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i

/** The Julian day of 1970-01-01T00:00:00Z (2440587.5) in milliseconds. */
const UNIX_EPOCH_JULIAN_MS = 210_866_760_000_000

/**
 * SQLite: a number its strftime reads as a Julian day of the years 1 to 9999 (julianday('now')
 * writes them): from 1721425.5 (0001-01-01) up to 5373484.5 (10000-01-01), which it does not read.
 */
export function isJulianDay (n: number): boolean {
  return n >= 1721425.5 && n < 5373484.5
}

/** A Julian day as the Unix time in ms SQLite's strftime reads in it: its date.c takes (sqlite3_int64)(r * 86400000.0 + 0.5). */
export function julianDayTime (n: number): number {
  return Math.floor(n * 86_400_000 + 0.5) - UNIX_EPOCH_JULIAN_MS
}

/** Unix time in ms as the Julian day SQLite's strftime reads as that very millisecond (julianDayTime gives it back). */
export function julianDayOf (t: number): number {
  return (t + UNIX_EPOCH_JULIAN_MS) / 86_400_000
}

/**
 * A stored value as a number, or null: numbers as they are, text only when it is a plain decimal
 * number (no decimal comma guessed). SQL Server's bigint arrives as text; in SQLite, text a numeric
 * column could not convert, or a number a legacy program keeps in a text column (SqlBuilder
 * compares those through the same function, so filters find what reads show).
 */
export function storedNumber (raw: unknown): number | null {
  let n: number
  if (typeof raw === 'number') n = raw
  else if (typeof raw === 'bigint' || typeof raw === 'boolean') n = Number(raw)
  else if (typeof raw === 'string' && NUMBER_TEXT.test(raw.trim())) n = Number(raw)
  else n = Number.NaN
  return Number.isFinite(n) ? n : null
}

/**
 * A stored flag without a value map, or null: numbers are true unless 0; text only 1/0/true/false. SQLite compares a
 * column without a declared type, which keeps them all as given, through the same function (SqlBuilder), so filters
 * and sorting find what reads show.
 */
export function storedFlag (raw: unknown): boolean | null {
  if (typeof raw === 'boolean') return raw
  if (typeof raw === 'number') return raw !== 0
  if (typeof raw === 'bigint') return raw !== 0n
  if (typeof raw === 'string') {
    const text = raw.trim().toLowerCase()
    if (text === '1' || text === 'true') return true
    if (text === '0' || text === 'false') return false
  }
  return null
}

const CANONICAL_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
/**
 * The text SQLite's date functions read as a time (its date.c): a date, then a time after spaces or
 * a T (an upper-case one only), a zone of Z or an offset with its colon (`+01:00`, up to 14 hours).
 * strftime, which filters and sorting compare, reads anything else as NULL: `+0100` (Java's and
 * Python's `%z`) or a lower-case `t`, which parseIsoDateTime takes.
 */
const SQLITE_TIME_TEXT = /^\d{4}-\d{2}-\d{2}(?:[\sT]+\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:[Zz]|[+-](?:0\d|1[0-4]):[0-5]\d)?)?$/

/** The stored code as the map compares it: text without the padding of fixed-width columns. */
const normalizeCode = (code: unknown): string => String(code).trimEnd()

/** How many different odd stored values (unknown codes, values shown as null) are logged per field and process; README, "Column types". */
export const ODD_VALUES_LOGGED = 1000

/** An odd stored value as logged: its first 200 characters, and how long it was beyond them. */
function loggedValue (value: string): string {
  return value.length <= 200 ? value : `${value.slice(0, 200)}… (${value.length} characters)`
}

function compareApi (a: unknown, b: unknown): number {
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b)
  if (typeof a === 'number' && typeof b === 'number') return a - b
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0
}

/** Compiles a configured value map; throws with a message naming the problem. */
export function compileValueMap (kind: FieldKind, values: Record<string, StoredCode | StoredCode[]>): CompiledMap {
  const map: CompiledMap = { codes: new Map(), api: new Map(), apiFolded: new Map(), order: [], caseExact: false }
  for (const [key, raw] of Object.entries(values)) {
    const value = parseValue(kind, key)
    if (value === undefined || value instanceof Date) throw new Error(`'${key}' is not ${kind === 'boolean' ? 'true or false' : `a valid ${kind}`}`)
    const codes = Array.isArray(raw) ? raw : [raw]
    for (const code of codes) {
      const norm = normalizeCode(code)
      if (map.api.has(norm)) {
        const other = map.api.get(norm)
        // the same code twice for one value ('P' and 'P ', the same without trailing blanks): listed once is enough
        if (other === value) throw new Error(`the stored code ${JSON.stringify(code)} is listed twice for ${JSON.stringify(key)} (codes compare without trailing blanks): list it once`)
        throw new Error(`the stored code ${JSON.stringify(code)} is given for two values, ${JSON.stringify(String(other))} and ${JSON.stringify(key)}`)
      }
      map.api.set(norm, value)
      const folded = norm.toLowerCase()
      if (!map.apiFolded.has(folded)) map.apiFolded.set(folded, value)
      else if (map.apiFolded.get(folded) !== value) map.caseExact = true
    }
    map.codes.set(String(value), codes)
    map.order.push(value)
  }
  if (kind === 'boolean' && (!map.codes.has('true') || !map.codes.has('false'))) throw new Error("a boolean's value map needs both 'true' and 'false'")
  map.order.sort(compareApi)
  return map
}

export interface StorageOptions {
  /** a stored value no map or enum knows: logged once per field and value */
  warn?: (obj: object, msg: string) => void
}

/**
 * A column's storage as its facts give it: a plain value, no map, format or zone, never required.
 * ResourceStorage sets the rest for its fields; mapping.defaults' columns take it as it is.
 */
function columnStorage (dialect: DialectName, field: string, def: FieldDef, column: string, info: ColumnInfo | undefined): FieldStorage {
  const category = categoryOf(dialect, info, def.kind)
  return {
    field,
    def,
    column,
    absent: false,
    info,
    category,
    padded: info !== undefined && isFixedWidthText(info.type),
    padsTo: padWidth(dialect, info, undefined),
    // SQLite: only GUIDs are written, so a value of digits alone is never stored as a number by the column's affinity
    guid: info !== undefined && (dialect === 'mssql' ? info.type.toLowerCase() === 'uniqueidentifier' : SQLITE_GUID.test(info.type.toLowerCase())),
    nullable: info?.nullable ?? true,
    showsNull: true,
    required: false,
    map: undefined,
    timeZone: undefined,
    resolutionMs: 1,
    timeFormat: undefined,
    julianDays: false,
    timeText: undefined,
    paramType: dialect === 'mssql' ? mssqlParamType(info, category) : undefined
  }
}

/**
 * SQLite: the width a CHAR(n)/NCHAR(n) column's values are written padded to: the mapping's `pad`
 * where it gives one, else what the column's data shows (ColumnInfo.padsToWidth). SQL Server pads
 * char columns itself.
 */
function padWidth (dialect: DialectName, info: ColumnInfo | undefined, pad: boolean | undefined): number | undefined {
  if (dialect !== 'sqlite' || info === undefined || !isFixedWidthText(info.type) || info.maxLength === undefined || info.maxLength <= 0) return undefined
  return (pad ?? info.padsToWidth === true) ? info.maxLength : undefined
}

/**
 * A table's column by its name regardless of case, the one spelled exactly as given first: under a
 * case-sensitive collation a SQL Server table may hold two columns whose names differ only in case
 * (Name and NAME). Statements name it as its `name` spells it (the database refuses another spelling).
 */
export function columnNamed (columns: readonly ColumnInfo[] | undefined, name: string): ColumnInfo | undefined {
  if (columns === undefined) return undefined
  const lower = name.toLowerCase()
  return columns.find((c) => c.name === name) ?? columns.find((c) => c.name.toLowerCase() === lower)
}

/** The whole resource: one FieldStorage per field, and the conversions between API and stored values. */
const ALL_WRITES: readonly Write[] = ['insert', 'update', 'delete']

export class ResourceStorage {
  readonly def: ResourceDef
  readonly mapping: TableMapping
  readonly dialect: DialectName
  readonly fields: Record<string, FieldStorage>
  /** the fields with a value map: a filter value that is not of the field's kind is a stored code (parseListQuery) */
  readonly coded: ReadonlySet<string>
  readonly id: string
  /** every column of the table, when known */
  readonly columns: ColumnInfo[] | undefined
  /**
   * the gateway's own reference table (db init's, as the default mapping names it): where its
   * text columns declare no length (SQLite databases made before db init declared VARCHAR(n)),
   * the API's own limits stay
   */
  readonly reference: boolean
  /** the def's naturalKey when it shares the id's column: the id is its value, and it cannot change */
  readonly sharedKey: string | undefined
  /**
   * mapping.defaults: each unmapped column a create fills, as a storage of its own (for its parameter
   * type), its value as configured, and as stored; or why the column cannot take it (storageProblems
   * reports it, and the gateway does not start)
   */
  readonly insertDefaults: Array<{ storage: FieldStorage, value: string | number | boolean, stored: SqlValue, problem?: string }>
  /** per field, the stored values already logged (unknown codes, values shown as null); each field's own budget, ODD_VALUES_LOGGED */
  private readonly warned = new Map<string, Set<string>>()
  /** per field, the notices logged once for the field (field + kind), whatever its values' budget holds */
  private readonly noticed = new Set<string>()
  private readonly warn: (obj: object, msg: string) => void

  constructor (dialect: DialectName, baseDef: ResourceDef, mapping: TableMapping, columns: ColumnInfo[] | undefined, opts: StorageOptions = {}) {
    this.mapping = mapping
    this.dialect = dialect
    this.columns = columns === undefined || columns.length === 0 ? undefined : columns
    this.id = idField(baseDef)
    this.warn = opts.warn ?? (() => {})
    const byName = { get: (name: string): ColumnInfo | undefined => columnNamed(this.columns, name) }
    const ref = referenceMappings[baseDef.name as ResourceName] as TableMapping | undefined
    this.reference = ref !== undefined && ref.table === mapping.table && (mapping.schema ?? 'dbo') === (ref.schema ?? 'dbo') &&
      Object.entries(ref.columns).every(([field, column]) => mapping.columns[field]?.toLowerCase() === column.toLowerCase())
    const idColumn = mapping.columns[this.id]?.toLowerCase()
    const key = baseDef.naturalKey
    this.sharedKey = key !== undefined && idColumn !== undefined && mapping.absent?.includes(key) !== true && mapping.columns[key]?.toLowerCase() === idColumn ? key : undefined
    // a resource whose id column holds text (an article number as the key) has text ids; so has one whose
    // id shares a SQLite column without a declared type with its text key, which keeps the text it is given
    // ('0099', 'M-1'): as integer ids, '0099' showed as 99, which no path found, and 'M-1' could not be created
    const idInfo = idColumn === undefined ? undefined : byName.get(mapping.columns[this.id])
    const textIds = key !== undefined && idInfo !== undefined && ['text', 'ntext'].includes(categoryOf(dialect, idInfo, this.sharedKey !== undefined ? baseDef.fields[key].kind : 'integer'))
    const def = textIds ? { ...baseDef, fields: { ...baseDef.fields, [this.id]: { ...baseDef.fields[this.id], kind: 'string' as const } } } : baseDef
    this.def = def
    this.fields = {}
    for (const [field, f] of Object.entries(def.fields)) {
      const absent = mapping.absent?.includes(field) === true
      const column = absent ? '' : mapping.columns[field]
      const info = absent ? undefined : byName.get(column ?? '')
      const values = mapping.values?.[field]
      const format = f.kind === 'datetime' ? mapping.timeFormats?.[field] : undefined
      // Unix time is an instant: the table's zone is its other columns'
      const zone = format === 'unix' || format === 'unix-ms' ? undefined : mapping.timeZones?.[field] ?? mapping.timeZone
      const isOffset = info?.type.toLowerCase() === 'datetimeoffset'
      const timeZone = f.kind === 'datetime' && zone !== undefined && !isOffset && !isUtcZone(zone) ? zone : undefined
      const timeText = f.kind === 'datetime' ? timeTextOf(dialect, info, format, timeZone, this.reference) : undefined
      this.fields[field] = Object.assign(columnStorage(dialect, field, f, column, info), {
        absent,
        nullable: f.id === true ? false : info === undefined ? true : info.nullable,
        showsNull: f.id !== true && (info === undefined || info.nullable || (dialect === 'sqlite' && values === undefined && f.kind !== 'string') ||
          (f.kind === 'datetime' && values === undefined && timeMayReadNull(format === 'yyyy-mm-dd hh:mm:ss' ? undefined : format, isOffset ? undefined : zone))),
        required: info !== undefined && !info.nullable && !info.hasDefault && f.id !== true,
        map: values === undefined ? undefined : compileValueMap(f.kind, values),
        timeZone,
        resolutionMs: f.kind === 'datetime' ? resolutionOf(dialect, info, format, timeText) : 1,
        timeFormat: format === 'julianday' || format === 'yyyy-mm-dd hh:mm:ss' ? undefined : format,
        julianDays: format === 'julianday',
        timeText,
        padsTo: padWidth(dialect, info, mapping.pads?.[field])
      })
    }
    this.coded = new Set(Object.values(this.fields).filter((s) => s.map !== undefined).map((s) => s.field))
    this.insertDefaults = Object.entries(mapping.defaults ?? {}).map(([column, value]) => {
      const info = byName.get(column)
      // a number or flag for a text column is written as the text SQL Server's own conversion makes
      // of it (7 as '7', true as '1', as CAST(1 AS bit) gives): kept a number, its parameter would be
      // a varchar one holding no text, which the driver refuses on every create
      const text = info !== undefined && typeof value !== 'string' && ['text', 'ntext'].includes(categoryOf(dialect, info, 'string'))
      // SQL Server: a time column's value read here as ISO 8601 (without an offset: as written, the column keeps no zone).
      // Given to the driver as text, tedious read it with JavaScript's Date.parse, in the host's time zone and in any
      // form: '1900-01-01T00:00:00' was stored as 1899-12-31 23:00 on a host in Berlin, '02.01.2024' as 1 February
      const time = dialect === 'mssql' && info !== undefined && categoryOf(dialect, info, 'string') === 'time'
      const at = time && typeof value === 'string' ? parseIsoDateTime(value) : undefined
      if (time && at === undefined) {
        const storage = columnStorage(dialect, column, { kind: 'datetime' }, info.name, info)
        return { storage, value, stored: null, problem: `the column (${describeType(info)}) holds times; give one in ISO 8601 as it is to be stored, '2024-01-02' or '2024-01-02T10:00:00', got ${JSON.stringify(value)}` }
      }
      const written = at ?? (text ? typeof value === 'boolean' ? (value ? '1' : '0') : typeof value === 'number' ? plainNumber(value) : value : value)
      const kind: FieldKind = written instanceof Date ? 'datetime' : typeof written === 'string' ? 'string' : typeof written === 'boolean' ? 'boolean' : Number.isInteger(written) ? 'integer' : 'number'
      const storage = columnStorage(dialect, column, { kind }, info?.name ?? column, info)
      // the value as a write of it is checked: a number column takes numbers, a varchar(4) four characters
      try {
        return { storage, value, stored: this.toDb(storage, written) }
      } catch (err) {
        return { storage, value, stored: null, problem: err instanceof Error ? err.message.replace(`'${column}' `, '') : String(err) }
      }
    })
  }

  /**
   * How paths and bodies give this resource's ids: numbers; text (a table keyed by text, such as
   * materials by their article number); or either, for a key shared with the material number whose
   * type is not known yet (the database was down at start)
   */
  get idType (): 'integer' | 'text' | 'either' {
    const s = this.fields[this.id]
    return s.def.kind === 'string' ? 'text' : this.sharedKey !== undefined && s.info === undefined ? 'either' : 'integer'
  }

  get readOnly (): boolean {
    return this.mapping.readOnly === true
  }

  /**
   * The writes the table takes, as far as is known now: none when mapped readOnly; for a SQLite
   * view, those its INSTEAD OF triggers take (known once its columns have been read); else all.
   */
  get writes (): ReadonlyArray<Write> {
    if (this.readOnly) return []
    return this.columns?.[0]?.viewWrites ?? ALL_WRITES
  }

  /** A table (not a SQLite view) as its columns, read, say: its writes need no check of their own. */
  get isTable (): boolean {
    return this.columns !== undefined && this.columns[0]?.viewWrites === undefined
  }

  /**
   * The fields a create gives the API's default (resources.ts) when the request leaves them out: mapped, without
   * a default of their column's own (DEFAULT 'ST' on a legacy unit column: the customer's column decides), and
   * writable, or read-only where the column must be given (a stock column NOT NULL without a default: 0).
   * Repository writes them; check-config notes a column that cannot take one.
   */
  apiDefaulted (): FieldStorage[] {
    return Object.values(this.fields).filter((s) => s.def.default !== undefined && (s.def.readOnly !== true || s.required) && !s.absent && s.info?.hasDefault !== true)
  }

  field (name: string): FieldStorage {
    const s = this.fields[name]
    if (s === undefined) throw new Error(`${this.def.name}: no field '${name}'`)
    return s
  }

  /** The API field a column is mapped to (case-insensitive), for messages about the data. */
  fieldOf (column: string): string | undefined {
    // a column of the table spelled exactly so is that column (columnNamed): under a case-sensitive collation an unmapped BEZ is no mapped Bez
    const exact = this.columns?.find((c) => c.name === column)
    const lower = column.toLowerCase()
    for (const s of Object.values(this.fields)) {
      if (s.absent || s.def.internal === true) continue
      if (exact !== undefined ? s.info === exact : s.column.toLowerCase() === lower) return s.field
    }
    return undefined
  }

  // -------------------------------------------------------------------------------------------
  // stored -> API

  /**
   * A driver value in API shape. A stored code that no map or enum knows is returned as is (and
   * logged once); a value that is not of the field's kind (text in a SQLite number column, a time
   * the gateway cannot read) is null (and logged once): never NaN or text where the schema says
   * number or date-time, which would fail the whole response.
   */
  fromDb (s: FieldStorage, raw: unknown): unknown {
    if (raw === null || raw === undefined || s.absent) return null
    if (s.map !== undefined) {
      // a BLOB is no code: its bytes as text would be an unknown code with a NUL in it
      if (raw instanceof Uint8Array) {
        this.odd(s, raw, 'bytes, not a code')
        return null
      }
      const code = normalizeCode(raw)
      const value = s.map.api.get(code) ?? (s.map.caseExact ? undefined : s.map.apiFolded.get(code.toLowerCase()))
      if (value !== undefined) return value
      this.unknown(s, raw)
      // a text field (a station's or user's type) shows a number code as text, as it shows any stored
      // number: its response schema is text, and a number there failed the whole list
      return typeof raw === 'string' || s.def.kind === 'string' ? code : typeof raw === 'bigint' ? Number(raw) : raw
    }
    switch (s.def.kind) {
      case 'string': {
        // a BLOB a program left in a text column: as text its bytes would change, and be written back changed
        if (raw instanceof Uint8Array) {
          this.odd(s, raw, 'bytes, not text')
          return null
        }
        const text = typeof raw === 'string' ? raw : raw instanceof Date ? raw.toISOString() : String(raw)
        // fixed-width columns pad with spaces; SQL compares without them, and so does the API
        const value = s.padded ? text.trimEnd() : text
        if (s.def.enum !== undefined && !s.def.enum.includes(value)) this.unknown(s, value)
        return value
      }
      case 'integer': {
        // the API promises a whole number (a station's address): a fraction another program left is no address
        const n = this.numberFromDb(s, raw)
        if (n === null || Number.isInteger(n)) return n
        this.odd(s, raw, 'not a whole number')
        return null
      }
      case 'number':
        return this.numberFromDb(s, raw)
      case 'boolean':
        return this.booleanFromDb(s, raw)
      case 'datetime':
        return this.timeFromDb(s, raw)
    }
  }

  /**
   * fromDb for one field, specialized once: mapRow runs it for every field of every row, so the
   * common cases (text, numbers, flags, canonical UTC time text) skip the general dispatch.
   */
  reader (s: FieldStorage): (raw: unknown) => unknown {
    if (s.absent) return () => null
    const general = (raw: unknown): unknown => this.fromDb(s, raw)
    if (s.map !== undefined || s.def.enum !== undefined) return general
    switch (s.def.kind) {
      case 'string':
        return s.padded ? general : (raw) => typeof raw === 'string' ? raw : general(raw)
      case 'integer':
        // the serializer refuses an infinite or fractional integer (SQLite keeps 1e999 as Infinity, and 5.5 in an INTEGER column);
        // beyond 2^53 the general way says in the log that the number may be rounded
        return (raw) => Number.isSafeInteger(raw) ? raw : general(raw)
      case 'number':
        return (raw) => typeof raw === 'number' && raw <= Number.MAX_SAFE_INTEGER && raw >= -Number.MAX_SAFE_INTEGER ? raw : general(raw)
      case 'boolean':
        return (raw) => raw === 1 ? true : raw === 0 ? false : general(raw)
      case 'datetime':
        // the text the gateway itself writes (and SQLite's strftime): already what the API shows
        if (s.timeZone !== undefined || s.timeFormat !== undefined) return general
        return (raw) => typeof raw === 'string' && CANONICAL_TIME.test(raw) ? raw : general(raw)
    }
  }

  /** A stored number; text only when it is a plain decimal number (no decimal commas guessed), else null. */
  private numberFromDb (s: FieldStorage, raw: unknown): number | null {
    const n = storedNumber(raw)
    if (n === null) this.odd(s, raw, 'not a number')
    // a 64-bit integer (SQLite INTEGER, SQL Server bigint) beyond 2^53 reads as the nearest double; a
    // float column's large numbers are doubles already, shown exactly
    else if ((s.category === 'integer' || typeof raw === 'bigint') && Math.abs(n) > Number.MAX_SAFE_INTEGER && Number.isFinite(n)) {
      // once per field, not per value: a table whose ids all lie there would fill the log
      this.oncePerField(s, 'beyond 2^53', { resource: this.def.name, field: s.field, value: String(raw) }, 'a stored whole number beyond 2^53 is shown rounded (JSON clients read whole numbers exactly only up to 2^53; SQLite\'s driver has rounded the value logged here already)')
    }
    return n
  }

  /** A stored flag without a value map (storedFlag), else null, logged once. */
  private booleanFromDb (s: FieldStorage, raw: unknown): boolean | null {
    const flag = storedFlag(raw)
    if (flag === null) this.odd(s, raw, 'not true or false')
    return flag
  }

  /**
   * A stored time: a Date (SQL Server), ISO 8601 text (SQLite), or a number (SQLite: a Julian day
   * from the year 1 to 9999 (1721425.5 to 5373484.5, SQLite's julianday(), which its strftime
   * reads so; as Unix seconds they would be moments of January to March 1970), else Unix time,
   * seconds when |n| < 1e11 (until the year 5138), else milliseconds; an instant, whatever the
   * column's zone), except a number (or text of digits) of the form YYYYMMDD or YYYYMMDDhhmmss,
   * which legacy programs write: a wall-clock time in the column's zone (as Unix time it would be
   * a moment in late 1970 or after the year 2570). Anything else is null.
   */
  private timeFromDb (s: FieldStorage, raw: unknown): string | null {
    if (s.timeFormat !== undefined) return this.formattedTimeFromDb(s, s.timeFormat, raw)
    let date: Date | undefined
    let wall = s.timeZone !== undefined
    if (raw instanceof Date) date = raw
    else if (typeof raw === 'string') {
      // SQLite's strftime, which filters and sorting compare, ignores trailing white space: so do reads
      const text = raw.trimEnd()
      // SQLite text: with Z or an offset it is an instant, whatever the column's zone
      if (/(?:z|[+-]\d{2}:?\d{2})$/i.test(text)) {
        // SQLite's filters and sorting see only the text: they compare it as the column's local time
        // (only a text strftime reads: any other is shown as null, below, and the odd-value log names it)
        if (wall && this.dialect === 'sqlite' && SQLITE_TIME_TEXT.test(text)) this.oncePerField(s, 'offset', { resource: this.def.name, field: s.field, value: text, timeZone: s.timeZone }, 'a stored time with an offset of its own, in a column mapped to a local time zone, is shown as that instant, but filters and sorting compare it as local time and may miss it (README, "Column types and what the API makes of them")')
        wall = false
      }
      date = compactTime(text)
      if (date !== undefined) this.compactNote(s, text)
      // SQLite: a text its strftime does not read is no time to filters and sorting, so it is not one to reads either
      // (shown as a time, a row modifiedSince never finds would look synced)
      else if (this.dialect !== 'sqlite' || SQLITE_TIME_TEXT.test(text)) date = parseIsoDateTime(text)
    } else if (typeof raw === 'number' || typeof raw === 'bigint') {
      const n = Number(raw)
      date = compactTime(String(raw))
      if (date !== undefined) this.compactNote(s, n)
      // digits of a date that is none (20240230120000, 20241301): a legacy program's broken date is far likelier
      // than Unix time of the year 2611 or of autumn 1970, so no time (as such text is none either)
      else if (compactShaped(String(raw))) date = undefined
      else if (this.dialect === 'sqlite' && isJulianDay(n)) {
        // SQLite's own numeric time (julianday('now')): a day and its fraction, read as strftime
        // reads it, so filters and sorting see the time the API shows (in the column's zone, as text)
        date = new Date(julianDayTime(n))
      } else if (s.julianDays) {
        // format julianday: any other number is no time (not Unix time), as strftime reads none in it
        date = undefined
      } else {
        date = new Date(Math.abs(n) < 1e11 ? n * 1000 : n)
        wall = false
        // SQLite's strftime, which filters and sorting compare, reads a number as a Julian day
        if (this.dialect === 'sqlite') this.oncePerField(s, 'unix', { resource: this.def.name, field: s.field, value: n }, `stored times that are numbers are read as Unix time; filters and sorting do not see them as times (README, "Column types and what the API makes of them")`)
      }
    }
    if (date === undefined || Number.isNaN(date.getTime())) {
      this.odd(s, raw, 'not a time the gateway can read')
      return null
    }
    return this.shownTime(s, raw, wall ? this.wallInstant(date, s.timeZone!) : date)
  }

  /**
   * A time as the API shows it: RFC 3339 text, whose year has four digits. An instant past the year
   * 9999 (Unix time from 253402300800 on, or 9999-12-31 23:00 in a zone west of UTC) or before the
   * year 0 would be '+010000-01-01T…' from toISOString, which no date-time parser takes: null, logged once.
   */
  private shownTime (s: FieldStorage, raw: unknown, date: Date): string | null {
    const year = date.getUTCFullYear()
    if (year >= 0 && year <= 9999) return date.toISOString()
    this.odd(s, raw, 'a time outside the years 0000 to 9999, which an RFC 3339 date-time cannot show,')
    return null
  }

  /**
   * A time kept as the mapping's format says: Unix time (a number, or text of one) is that instant;
   * digits are a wall-clock time in the column's zone. Anything else (0 or 99999999 for "no date",
   * text that is no number) is null, logged once.
   */
  private formattedTimeFromDb (s: FieldStorage, format: ColumnTimeFormat, raw: unknown): string | null {
    const date = formattedDate(format, raw)
    if (date === undefined) {
      this.odd(s, raw, `not a time in the format ${format}`)
      return null
    }
    return this.shownTime(s, raw, s.timeZone !== undefined ? this.wallInstant(date, s.timeZone) : date)
  }

  /**
   * A time as a formatted column keeps it, from the wall-clock time (UTC fields) for local columns,
   * else the instant: a number for a number column, the digits as text for a text one. A value to
   * write is checked against the column; a filter's bound (`write` false) is not: beyond the
   * column's range it still compares in time's order (SqlBuilder widens its parameter's type).
   */
  formattedTime (s: FieldStorage, format: ColumnTimeFormat, wall: Date, write = true): SqlValue {
    const t = wall.getTime()
    if (format === 'unix' || format === 'unix-ms') {
      const n = format === 'unix' ? Math.floor(t / 1000) : t
      return write ? this.checkNumber(s, n) : n
    }
    const year = wall.getUTCFullYear()
    // compactTime reads these years only: a value outside them would not read back
    if (write && (year < 1900 || year > 2999)) throw new InvalidValueError(`'${s.field}' must be in the years 1900 to 2999 (its column keeps ${format.toUpperCase()})`)
    const two = (v: number): string => String(v).padStart(2, '0')
    let digits = `${String(Math.max(0, year)).padStart(4, '0')}${two(wall.getUTCMonth() + 1)}${two(wall.getUTCDate())}`
    if (format === 'yyyymmddhhmmss') digits += `${two(wall.getUTCHours())}${two(wall.getUTCMinutes())}${two(wall.getUTCSeconds())}`
    const text = s.category === 'text' || s.category === 'ntext'
    // as text, a bound past the year 9999 would be a longer string that sorts among the stored ones:
    // one after every stored value stands for it
    if (!write && text && year > 9999) return `${'9'.repeat(FORMAT_DIGITS[format])}:`
    if (!write) return text ? digits : Number(digits)
    return text ? this.checkText(s, digits) : this.checkNumber(s, Number(digits))
  }

  private compactNote (s: FieldStorage, value: unknown): void {
    this.oncePerField(s, 'compact', { resource: this.def.name, field: s.field, value }, 'stored times written as digits (YYYYMMDD or YYYYMMDDhhmmss) are read as dates in the column\'s time zone; filters and sorting do not see them as times (README, "Column types and what the API makes of them")')
  }

  /**
   * The UTC instant a stored wall-clock time stands for. In the autumn's repeated hour: the first
   * occurrence. In the spring's skipped hour (a time no clock there showed): the moment the clock
   * jumped, so that the instants keep the order of the stored times, which sorting and paging
   * follow: a filter then finds exactly the rows whose shown time matches.
   */
  wallInstant (wall: Date, zone: string): Date {
    const instant = wallToUtc(wall, zone)
    const back = utcToWall(instant, zone).getTime()
    if (back === wall.getTime()) return instant
    // in the gap: the first instant whose wall-clock time is at or after the stored one
    let lo = instant.getTime() - (back - wall.getTime())
    let hi = instant.getTime()
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2)
      if (utcToWall(new Date(mid), zone).getTime() >= wall.getTime()) hi = mid
      else lo = mid
    }
    return new Date(hi)
  }

  private unknown (s: FieldStorage, raw: unknown): void {
    this.once(s, String(raw), { resource: this.def.name, field: s.field, value: typeof raw === 'string' ? loggedValue(raw) : raw }, `a stored value that no value map or list of values knows is returned as it is; add it to mapping.${this.def.name}.columns.${s.field}.values`)
  }

  /** A stored value the field's kind cannot show: returned as null, logged once per field and value. */
  private odd (s: FieldStorage, raw: unknown, what: string): void {
    const value = typeof raw === 'string' ? raw : raw instanceof Uint8Array ? `<${raw.length} bytes>` : String(raw)
    this.once(s, value, { resource: this.def.name, field: s.field, value: loggedValue(value) }, `a stored value that is ${what} is returned as null`)
  }

  /**
   * Logs once per field and value, up to ODD_VALUES_LOGGED values per field: a column full of odd
   * values does not flood the log (or fill memory), and does not silence another field's. The one
   * that fills the budget says so.
   */
  private once (s: FieldStorage, value: string, obj: object, msg: string): void {
    let values = this.warned.get(s.field)
    if (values === undefined) this.warned.set(s.field, values = new Set())
    if (values.size >= ODD_VALUES_LOGGED) return
    // remembered by a digest, not the value: a varchar(max) full of odd text must not fill memory (the
    // prefix keeps a short stored value from ever being taken for a long one's digest)
    const key = value.length <= 64 ? value : `sha256:${createHash('sha256').update(value).digest('base64')}`
    if (values.has(key)) return
    values.add(key)
    this.warn(obj, msg)
    if (values.size === ODD_VALUES_LOGGED) {
      this.warn({ resource: this.def.name, field: s.field }, `${ODD_VALUES_LOGGED} different stored values of this field were logged as above: further ones are not, until the gateway restarts`)
    }
  }

  /** Logs once per field and kind: a notice about the field, not one of its values; never crowded out by values (once). */
  private oncePerField (s: FieldStorage, kind: string, obj: object, msg: string): void {
    const k = `${s.field}\u0000${kind}`
    if (this.noticed.has(k)) return
    this.noticed.add(k)
    this.warn(obj, msg)
  }

  // -------------------------------------------------------------------------------------------
  // API -> stored

  /**
   * A value to write, checked against the column (length, integer range, decimal precision and
   * scale, date range) before any SQL runs: InvalidValueError names the field and the limit.
   * `value` is already of the field's kind (the HTTP schema or the caller made sure).
   */
  /** Why `value` cannot be written to the column of `s` (its length, its code page, its range), or undefined: toDb's refusal as text. */
  refusal (s: FieldStorage, value: SqlValue): string | undefined {
    try {
      this.toDb(s, value)
      return undefined
    } catch (err) {
      if (err instanceof InvalidValueError) return err.message
      throw err
    }
  }

  toDb (s: FieldStorage, value: SqlValue): SqlValue {
    if (s.absent) {
      if (value === null) return null
      throw new InvalidValueError(`'${s.field}' is not stored in this installation (the picking system's table has no column for it)`)
    }
    if (value === null) {
      if (s.info !== undefined && !s.info.nullable) throw new InvalidValueError(`'${s.field}' cannot be null: the database requires a value`)
      return null
    }
    if (s.map !== undefined) {
      const codes = s.map.codes.get(value instanceof Date ? value.toISOString() : String(value))
      if (codes === undefined) throw new InvalidValueError(`'${s.field}' must be one of ${s.map.order.map((v) => JSON.stringify(v)).join(', ')}`)
      return this.padText(s, this.codeValue(s, codes[0]))
    }
    switch (s.def.kind) {
      case 'string': return this.padText(s, this.checkText(s, value as string))
      case 'integer':
      case 'number': {
        const n = this.checkDigits(s, this.checkNumber(s, value as number))
        // SQLite does not enforce an INT's or SMALLINT's range, so a row may hold a number past it that another program
        // wrote: an update's body schema leaves the range to this check, which Repository.update passes for a value the row
        // already shows. Only an API field's value, as the body schemas limited them: not the gateway's own counters
        // (tokenVersion), time columns, value maps' codes or mapping.defaults, whose numbers SQLite keeps as they are
        if (this.dialect === 'sqlite' && this.fields[s.field] === s && s.def.internal !== true && s.def.readOnly !== true) this.checkRange(s, value as number)
        // SQLite: a number a legacy program keeps as text is written as text, '12' (bound as a
        // number, SQLite's TEXT affinity would store '12.0'), never in exponent form
        return this.dialect === 'sqlite' && s.category === 'text' && typeof n === 'number' ? plainNumber(n) : n
      }
      case 'boolean':
        if (s.category === 'integer' || s.category === 'decimal') return value === true ? 1 : 0
        return value
      case 'datetime': return this.timeToDb(s, value as Date)
    }
  }

  /** A stored code as the column's type wants it: numbers for numeric columns, text for text columns. */
  codeValue (s: FieldStorage, code: StoredCode): SqlValue {
    if (s.category === 'integer' || s.category === 'decimal' || s.category === 'float' || s.category === 'bit') {
      const n = typeof code === 'number' ? code : Number(code)
      return Number.isFinite(n) ? n : code
    }
    return typeof code === 'string' ? code : String(code)
  }

  /** Text for a CHAR(n) column the picking system pads (padsTo): padded with blanks to n characters, as SQL Server stores it. */
  private padText (s: FieldStorage, value: SqlValue): SqlValue {
    if (s.padsTo === undefined || typeof value !== 'string') return value
    const length = codePoints(value)
    return length < s.padsTo ? value + ' '.repeat(s.padsTo - length) : value
  }

  private checkText (s: FieldStorage, text: string): SqlValue {
    if (s.guid && !isGuid(text)) throw new InvalidValueError(guidExpected(s.field, text))
    // SQL Server keeps a GUID's 16 bytes and reads them back upper-case without braces: written as read, so that a
    // GUID sent again in another spelling (.NET writes lower case) is no change (SQLite keeps the text as written)
    if (s.guid && this.dialect === 'mssql') return text.replace(/^\{(.*)\}$/, '$1').toUpperCase()
    const info = s.info
    const codePage = info?.codePage
    if (codePage !== undefined) {
      // SQL Server would store '?' (or a look-alike) for it, without an error
      const ch = unstorableCharacter(text, codePage)
      if (ch !== undefined) throw new InvalidValueError(`'${s.field}' holds ${describeCharacter(ch)}, which its database column (${info!.type}, code page ${codePage}) cannot store`)
    }
    const max = info?.maxLength
    if (max !== undefined && max > 0) {
      const bytes = info?.utf8 === true || (codePage !== undefined && isDoubleByte(codePage))
      // SQLite counts characters; SQL Server's nvarchar(n) UTF-16 code units, two for a character beyond the BMP (an emoji)
      const pairs = !bytes && /[\ud800-\udfff]/.test(text)
      const length = info?.utf8 === true ? Buffer.byteLength(text) : bytes ? codePageLength(text, codePage!) : pairs && this.dialect === 'sqlite' ? codePoints(text) : text.length
      const unit = bytes ? 'bytes' : pairs && this.dialect === 'mssql' ? 'UTF-16 code units (an emoji or another character beyond the BMP counts two)' : 'characters'
      if (length > max) throw new InvalidValueError(`'${s.field}' must be at most ${max} ${unit} long (its database column's limit), got ${length}`)
    }
    if (s.category === 'integer' || s.category === 'decimal' || s.category === 'float') {
      // a text field the picking system keeps as a number (warehouse 3)
      if (!/^-?\d+(?:\.\d+)?$/.test(text)) throw new InvalidValueError(`'${s.field}' must be a number written as text in this installation, got '${text}'`)
      return this.checkDigits(s, this.checkNumber(s, Number(text)))
    }
    return text
  }

  /**
   * SQL Server: a decimal column keeps a value digit for digit, but a JSON number carries only 15
   * significant digits for sure: with more, the double the body's parser made may already be another
   * number (12345678901234.567 is the double 12345678901234.566, 99999999999999.999 is 1e14,
   * 1234567890123456.1234567891 is 1234567890123456), stored as such without a word. Refused, as a
   * value past the column's scale is; a whole number within 2^53 for a column without decimals is
   * exact. In a column of more than 15 digits with decimals (Dynamics NAV's decimal(38,20)) a value of
   * 17 digits within 4 units in the last place of its 15 digits is the noise of a sum in doubles (0.1 + 0.2
   * is 0.30000000000000004, which an ERP computing in doubles sends; 16 digits are a value meant so):
   * written as those 15 digits, which is what a read of such a column shows (wideDecimal). SQLite keeps
   * the double itself, as sent.
   * Returns the value to write.
   */
  private checkDigits (s: FieldStorage, n: SqlValue): SqlValue {
    const info = s.info
    if (this.dialect !== 'mssql' || typeof n !== 'number' || s.category !== 'decimal' || info === undefined || !Number.isFinite(n) || Number(n.toPrecision(15)) === n) return n
    const type = info.type.toLowerCase()
    const scale = type === 'money' || type === 'smallmoney' ? 4 : info.scale ?? 0
    if (scale === 0 && Number.isSafeInteger(n)) return n
    const precision = info.precision ?? 0
    if (precision > 15 && scale > 0 && Number(n.toPrecision(16)) !== n) {
      const short = wideDecimal(n)
      if (short !== n && Math.abs(short) < 10 ** (precision - scale)) return short
    }
    throw new InvalidValueError(`'${s.field}' must have at most 15 significant digits, all a JSON number carries exactly (its database column, ${describeType(info)}, would keep another number than the one sent), got ${n}`)
  }

  /** The range of the column's integer type (SQL Server's tinyint, smallint, int, bigint; SQLite's names of them too, INT2, MEDIUMINT, INT8), if it has one. */
  private checkRange (s: FieldStorage, n: number): void {
    const range = s.info === undefined ? undefined : INTEGER_RANGES[s.info.type.toLowerCase()]
    if (range !== undefined && (n < range[0] || n > range[1])) throw new InvalidValueError(`'${s.field}' must be between ${range[0]} and ${range[1]} (its database column's range), got ${n}`)
  }

  private checkNumber (s: FieldStorage, n: number): SqlValue {
    const info = s.info
    if (info === undefined) return n
    const type = info.type.toLowerCase()
    const range = INTEGER_RANGES[type]
    if (s.category === 'integer' || (s.category === 'decimal' && (info.scale ?? 0) === 0 && range === undefined && type !== 'money' && type !== 'smallmoney')) {
      if (!Number.isInteger(n)) throw new InvalidValueError(`'${s.field}' must be a whole number (its database column holds no fractions), got ${n}`)
    }
    if (range !== undefined && this.dialect === 'mssql') {
      this.checkRange(s, n)
      return n
    }
    // SQLite: an INTEGER column keeps 64 bits, and stores a whole number beyond them as REAL (1e20 as 1.0e+20);
    // past 2^53 a JSON number is no longer exact, so the API's integers end there, as bigint's do on SQL Server
    if (this.dialect === 'sqlite' && s.category === 'integer' && Math.abs(n) > Number.MAX_SAFE_INTEGER) {
      throw new InvalidValueError(`'${s.field}' must be between ${-Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER} (the whole numbers its integer column and JSON hold exactly), got ${n}`)
    }
    if (s.category === 'decimal') {
      const scale = type === 'money' || type === 'smallmoney' ? 4 : info.scale ?? 0
      // SQL Server's money types hold less than their precision says (smallmoney 214748.3647, not 999999.9999)
      const money = this.dialect === 'mssql' ? MONEY_RANGES[type] : undefined
      if (money !== undefined && (n < money.min || n > money.max)) throw new InvalidValueError(`'${s.field}' must be between ${money.text} (its database column's range, ${type}), got ${n}`)
      const precision = money !== undefined ? undefined : type === 'money' ? 19 : type === 'smallmoney' ? 10 : info.precision
      if (precision !== undefined) {
        const limit = 10 ** (precision - scale)
        if (Math.abs(n) >= limit) throw new InvalidValueError(`'${s.field}' must be less than ${limit} in magnitude (its database column is decimal(${precision},${scale})), got ${n}`)
      }
      if (Number(n.toFixed(scale)) !== n) throw new InvalidValueError(`'${s.field}' must have at most ${scale} decimal place${scale === 1 ? '' : 's'} (its database column's scale), got ${n}`)
    }
    // SQL Server's real has 4 bytes; SQLite's REAL is a double like any JSON number
    if (this.dialect === 'mssql' && type === 'real' && Math.abs(n) > 3.4e38) throw new InvalidValueError(`'${s.field}' is too large for its database column (real), got ${n}`)
    return n
  }

  private timeToDb (s: FieldStorage, date: Date): SqlValue {
    if (s.timeFormat !== undefined) {
      // the time the column can keep (a whole second, a day), rounded down as legacy programs do
      const wall = s.timeZone === undefined ? date : utcToWall(date, s.timeZone)
      return this.formattedTime(s, s.timeFormat, wall)
    }
    // the range filters clamp to (firstStoredAtOrAfter); a write outside it is refused
    const range = this.timeRange(s)
    if (range !== undefined && !this.holdsTime(s, date)) throw new InvalidValueError(`'${s.field}' must be between ${new Date(range[0]).toISOString()} and ${new Date(range[1]).toISOString()} (its database column's range)`)
    const stored = s.timeZone === undefined ? date : utcToWall(date, s.timeZone)
    // format julianday: the number SQLite's julianday() would give, in the column's zone
    if (s.julianDays) return this.checkNumber(s, julianDayOf(stored.getTime()))
    // the format 'yyyy-mm-dd hh:mm:ss', or the form the picking system writes ('2026-03-29T01:30:00'): so, rounded down
    // to the second where it keeps whole seconds, as the other formats are
    const text = s.timeText
    if (text !== undefined) return stored.toISOString().slice(0, text.length).replace('T', text.sep) + text.zone
    // SQLite keeps text: local time and a picking system's UTC columns as its CURRENT_TIMESTAMP and
    // other programs write them, '2026-11-26 04:30:01.111'; the gateway's reference tables ISO 8601
    // with Z, as their defaults write (the driver's text for a Date). Filters compare either through strftime.
    if (this.dialect !== 'sqlite' || (s.timeZone === undefined && this.reference)) return stored
    return stored.toISOString().replace('T', ' ').replace('Z', '')
  }

  /**
   * SQL Server: the times a time field's column (without a format) holds, as the driver gives them:
   * its type's range (datetime from 1753, smalldatetime 1900 to 2079), else the years 1 to 9999. What
   * writes, filter bounds and cursors are held to; undefined on SQLite.
   */
  private timeRange (s: FieldStorage): readonly [number, number] | undefined {
    if (this.dialect !== 'mssql' || s.timeFormat !== undefined || s.info === undefined) return undefined
    return MSSQL_TIME_RANGES[s.info.type.toLowerCase()] ?? TIME_RANGE
  }

  /** Whether a time field's column holds this stored value (as the driver gives it): within timeRange. */
  holdsTime (s: FieldStorage, date: Date): boolean {
    const range = this.timeRange(s)
    const t = date.getTime()
    return range === undefined || (t >= range[0] && t <= range[1])
  }

  /**
   * The first value the column can hold (as the driver gives it: a Date, wall-clock for local
   * columns) that the API shows as UTC time `t` or later. Exact for every time type: datetime's
   * 1/300 s ticks, coarse types rounded up, and local times after DST changes. Undefined when the
   * column holds none: `t` lies past its last value (9999-12-31 23:59:59.997 in a datetime).
   */
  firstStoredAtOrAfter (s: FieldStorage, t: number): Date | undefined {
    let wall = t
    if (s.timeZone !== undefined) {
      wall = utcToWall(new Date(t), s.timeZone).getTime()
      const before = utcToWall(new Date(t - 1), s.timeZone).getTime()
      // t is the moment the spring clock jumped: the skipped wall times stand for t too
      if (wall - before > 1) wall = before + 1
      // in the autumn's repeated hour a wall time reads as its first occurrence: a UTC time in the
      // second one is first reached by the wall-clock time just after the hour
      const zone = s.timeZone
      const shownAt = (w: number): number => this.wallInstant(new Date(w), zone).getTime()
      const shown = this.wallInstant(new Date(wall), zone).getTime()
      if (shown < t) {
        // the first wall time after the repeated hour: f(lo) < t <= f(hi), halved to the millisecond
        let lo = wall
        let hi = wall + (t - shown)
        while (hi - lo > 1) {
          const mid = Math.floor((lo + hi) / 2)
          if (shownAt(mid) >= t) hi = mid
          else lo = mid
        }
        wall = hi
      }
    }
    // before the column's first value (DateTime.MinValue against a datetime column): that first value;
    // past its last, none (a legacy table's 9999-12-31 or 2079-06-06 "no date" sentinel is its last value).
    // date, datetime2 and datetimeoffset end with the year 9999 too: a bound past it (a filter at .NET's
    // DateTime.MaxValue rounded up to the next second or day, or moved by the column's zone into the year
    // 10000) is a parameter the driver refuses ('Out of range', a 500), and no stored value lies there
    const range = this.timeRange(s)
    if (range !== undefined && wall < range[0]) return new Date(range[0])
    if (range !== undefined && wall > range[1]) return undefined
    // SQLite's time text compares through strftime, to the millisecond: also where the gateway writes whole seconds
    // (timeText), rows written before, or since by another program, may hold milliseconds
    const r = this.dialect === 'sqlite' && s.timeFormat === undefined ? 1 : s.resolutionMs
    if (r > 1) {
      const up = Math.ceil(wall / r) * r
      return range !== undefined && up > range[1] ? undefined : new Date(up)
    }
    if (r === -1) {
      // datetime: 300 ticks a second; the driver reads tick k as round(k * 10 / 3) ms into the day
      const day = Math.floor(wall / 86400000) * 86400000
      const tick = Math.ceil((6 * (wall - day) - 3) / 20)
      return new Date(day + Math.round(tick * 10 / 3))
    }
    return new Date(wall)
  }

  /**
   * The smallest later value the column can hold: modifiedAt must change on every update. A column
   * that keeps days (date, yyyymmdd) gets today: a day further on at each update of the day would
   * run ahead of the calendar (five updates today, modifiedAt five days on).
   */
  nextTime (s: FieldStorage, previousIso: string | null | undefined, now: number): Date {
    const previous = typeof previousIso === 'string' ? Date.parse(previousIso) : Number.NaN
    const step = s.resolutionMs === -1 ? 4 : Math.max(1, s.resolutionMs)
    if (step >= 86400000) return new Date(now)
    return new Date(Number.isNaN(previous) || previous + step <= now ? now : previous + step)
  }
}

/**
 * Whether a time field of a NOT NULL column may still read as null: a format's value that is not of
 * the format, or past the year 9999 (Unix time); a local zone west of UTC, where the column's last
 * day (9999-12-31, a "no date" sentinel of legacy tables) lies in the year 10000 in UTC.
 */
function timeMayReadNull (format: TimeFormat | undefined, zone: string | undefined): boolean {
  if (format !== undefined) return true
  return zone !== undefined && !isUtcZone(zone) && isTimeZone(zone) && wallToUtc(new Date(TIME_RANGE[1]), zone).getUTCFullYear() > 9999
}

/** The first and last value (ms) of SQL Server's other time types (datetime2, date, datetimeoffset): the years 0001 to 9999. */
const TIME_RANGE: [number, number] = [-62135596800000, Date.UTC(9999, 11, 31, 23, 59, 59, 999)]

/** The first and last value (ms) of SQL Server's coarse time types, as the driver reads them. */
const MSSQL_TIME_RANGES: Record<string, [number, number]> = {
  datetime: [Date.UTC(1753, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59, 997)],
  smalldatetime: [Date.UTC(1900, 0, 1), Date.UTC(2079, 5, 6, 23, 59)]
}

export type Fit = 'good' | 'weak' | 'codes' | 'format' | 'no'

/**
 * Whether a column can hold a field (without a value map): the rule storageProblems checks a
 * mapping with at start and introspection proposes columns by. 'weak' fits work but are second
 * choice, 'codes' need a value map, 'format' the mapping's format (a time kept as a number or digits).
 */
export function kindFit (dialect: DialectName, column: ColumnInfo, def: FieldDef): Fit {
  // a STRICT table's BLOB column takes nothing but bytes (SQLite: cannot store TEXT value in BLOB column), which no field is
  if (dialect === 'sqlite' && column.strict === true && column.type.toLowerCase() === 'blob') return 'no'
  const c: Category = categoryOf(dialect, column, def.kind)
  // SQLite without a declared type stores anything: usable, but nothing says it is right
  const untyped = dialect === 'sqlite' && sqliteUntyped(column.type.toLowerCase())
  switch (def.kind) {
    case 'integer':
      if (c === 'integer' || (c === 'decimal' && (column.scale ?? 0) === 0)) return untyped ? 'weak' : 'good'
      // SQLite: a quantity a legacy program keeps as text ('12'), compared as a number (SqlBuilder)
      return dialect === 'sqlite' && (c === 'float' || (c === 'text' && def.id !== true)) ? 'weak' : 'no'
    case 'number':
      if (c === 'integer' || c === 'decimal' || c === 'float') return untyped ? 'weak' : 'good'
      return dialect === 'sqlite' && c === 'text' ? 'weak' : 'no'
    case 'string':
      if (c === 'text' || c === 'ntext') return untyped ? 'weak' : 'good'
      return c === 'integer' || c === 'decimal' ? 'weak' : 'no'
    case 'boolean':
      if (c === 'bit' || c === 'integer') return untyped ? 'weak' : 'good'
      return c === 'text' || c === 'ntext' ? 'codes' : 'no'
    case 'datetime':
      if (c === 'time') return untyped ? 'weak' : 'good'
      // SQLite has no date type: the reference schema keeps ISO 8601 text
      if (dialect === 'sqlite' && c === 'text') return 'weak'
      // Unix time or a date as digits, with the mapping's format (what the values are decides which)
      return c === 'integer' || c === 'decimal' || c === 'float' || c === 'text' || c === 'ntext' ? 'format' : 'no'
  }
}

/**
 * What is wrong with a mapping given the table's columns: type mismatches, a NOT NULL column an
 * insert would miss, an id the database does not generate. Empty when it fits.
 */
export function storageProblems (storage: ResourceStorage, options: StorageCheckOptions = {}): string[] {
  const { def, mapping } = storage
  const problems: string[] = []
  const hashLength = options.passwordHashLength ?? argon2HashLength(DEFAULT_ARGON2)
  if (storage.columns === undefined) return problems
  const where = `${def.name}`
  // the user table cannot be read-only (the gateway writes logins and passwords)
  const readOnlyHint = def.name === 'users' ? 'or map another table' : `or set mapping.${def.name}.readOnly to true`
  // what only a create needs is not asked of a SQLite view that takes no inserts (no INSTEAD OF INSERT): its creates answer 405
  const creates = storage.writes.includes('insert')
  for (const s of Object.values(storage.fields)) {
    if (s.info === undefined) continue
    const col = `column '${s.column}' (${describeType(s.info)})`
    const k = s.def.kind
    const c = s.category
    // the picking system's own password column, sized for its MD5 or SHA-1 hex: no password the gateway sets would fit
    if (def.name === 'users' && s.field === 'passwordHash' && s.info.maxLength !== undefined && s.info.maxLength > 0 && s.info.maxLength < hashLength) {
      problems.push(`${where}.passwordHash: ${col} holds at most ${s.info.maxLength} characters, but the argon2id hashes the gateway stores (auth.argon2) take ${hashLength}: every password it sets (user add, user passwd, the API, db init's admin) would be refused. Map a column of at least ${hashLength} characters (255 leaves room), a column of the gateway's own where the picking system's login keeps its own hashes in this one`)
    }
    const wholeSeconds = s.def.kind === 'datetime' && mapping.timeFormats?.[s.field] === 'yyyy-mm-dd hh:mm:ss'
    const formatted = s.julianDays ? julianDaysProblem(storage.dialect, c) : wholeSeconds ? wholeSecondsProblem(storage.dialect, s.info) : s.timeFormat === undefined ? undefined : formatProblem(storage.dialect, s, s.timeFormat)
    if (formatted !== undefined) problems.push(`${where}.${s.field}: ${col} ${formatted}`)
    const pad = mapping.pads?.[s.field]
    // padding is for fixed-width text; SQL Server pads a char column by itself, so it cannot keep a value unpadded
    if (pad !== undefined && (!s.padded || s.info.maxLength === undefined || s.info.maxLength <= 0)) {
      problems.push(`mapping.${def.name}.columns.${s.field}.pad: ${col} is no CHAR(n) or NCHAR(n) column, whose values are padded to n characters; remove "pad"`)
    } else if (pad === false && storage.dialect === 'mssql') {
      problems.push(`mapping.${def.name}.columns.${s.field}.pad: SQL Server pads a ${s.info.type} column's values to its width by itself; remove "pad": false`)
    }
    // codes (a value map) go in any text or number column; otherwise the column must hold the kind itself
    // format 'yyyy-mm-dd hh:mm:ss' is text in a column that takes a time without a format (SQL Server refuses it above)
    const fits = s.timeFormat !== undefined || s.julianDays || (wholeSeconds && storage.dialect === 'mssql') || (s.map !== undefined ? c !== 'time' && c !== 'other' && k !== 'datetime' : ['good', 'weak'].includes(kindFit(storage.dialect, s.info, s.def)))
    // a STRICT table's BLOB column: every write of text or a number, codes included, would be refused
    if (storage.dialect === 'sqlite' && s.info.strict === true && s.info.type.toLowerCase() === 'blob') {
      problems.push(`${where}.${s.field}: ${col} is a BLOB column of a STRICT table, which takes nothing but bytes (SQLite refuses text and numbers there, so every write of the field would fail): map the field to another column, or to null`)
    } else if (!fits) {
      problems.push(k === 'boolean' && (c === 'text' || c === 'ntext')
        ? `${where}.${s.field}: ${col} holds codes, not a boolean: give it a value map such as {"column": "${s.column}", "values": {"true": "Y", "false": "N"}}`
        // a declared type SQLite does not know (STRING, JSON, VARBINARY): "(string) cannot hold a string" said nothing
        : k === 'string' && c === 'other' && storage.dialect === 'sqlite'
          ? `${where}.${s.field}: ${col} cannot hold a string: SQLite gives a column of the declared type '${s.info.type.toUpperCase()}' NUMERIC affinity, which stores text that looks like a number ('0123', '1e3') as that number; only a type naming CHAR, CLOB or TEXT, or none, keeps text as written. Map the field to another column, or to null`
          : `${where}.${s.field}: ${col} cannot hold ${k === 'integer' ? 'an integer' : `a ${k}`}${idHint(s.def) ?? (k !== 'datetime' && (c === 'text' || c === 'ntext' || c === 'integer') ? '; a value map may translate its codes' : '')}` +
          (k === 'datetime' && ['integer', 'decimal', 'float', 'text', 'ntext'].includes(c) ? `; if it holds ${storage.dialect === 'sqlite' ? 'Unix time, a date as digits or Julian days' : 'Unix time or a date as digits'}, map it as {"column": "${s.column}", "format": "unix"} (or ${TIME_FORMATS.slice(1).filter((f) => f !== 'yyyy-mm-dd hh:mm:ss' && (storage.dialect === 'sqlite' || f !== 'julianday')).join(', ')})` : '') +
          (c === 'other' && storage.dialect === 'mssql' ? unsupportedType(s.info.type, k) : ''))
    }
    // a field of named values (stations.type, users.type) in a number column holds codes: without a map
    // no value it takes could be written, not even the API's default, so every create would be a 400.
    // A column with a default of its own takes the creates that leave the field out, as before.
    // the code a value map writes (each value's first) must be one the column takes: SQLite would
    // store '004' in a CHAR(2) as it is, SQL Server refuse every such write
    if (s.map !== undefined && mapping.readOnly !== true) {
      const numeric = ['integer', 'decimal', 'float', 'bit'].includes(c)
      for (const value of s.map.order) {
        const code = storage.codeValue(s, s.map.codes.get(String(value))![0])
        // a STRICT table's INTEGER or REAL column refuses such text; its ANY column (read as no declared type: every
        // column of a STRICT table has one) keeps it
        const strictNumber = s.info.strict === true && s.info.type !== ''
        if (typeof code === 'string' && numeric && (storage.dialect === 'mssql' || strictNumber)) problems.push(`${where}.${s.field}: ${col} holds numbers, but the value map writes ${JSON.stringify(code)} for ${JSON.stringify(value)}; give number codes`)
        else if (typeof code === 'string' && !numeric) {
          // checked as any text written to the column is: its length in the units it counts (bytes for UTF-8
          // or a double-byte code page, UTF-16 code units for nvarchar), and its code page's characters
          const refusal = storage.refusal({ ...s, map: undefined, def: { ...s.def, kind: 'string' } }, code)
          if (refusal !== undefined) problems.push(`${where}.${s.field}: the value map writes ${JSON.stringify(code)} for ${JSON.stringify(value)}, which ${col} cannot take (${refusal})`)
        } else if (typeof code === 'number' && numeric && storage.dialect === 'mssql') {
          // a number code past a tinyint's or smallint's range fails every such write (error 220), and a fraction in an int
          // or past a decimal's scale is cut or rounded by the server's conversion, without an error, into another value's code
          const refusal = storage.refusal({ ...s, map: undefined, def: { ...s.def, kind: 'number' } }, code)
          if (refusal !== undefined) problems.push(`${where}.${s.field}: the value map writes ${JSON.stringify(code)} for ${JSON.stringify(value)}, which ${col} cannot take (${refusal})`)
        }
      }
    }
    const named = s.def.enum?.filter((v) => !/^-?\d+$/.test(v)) ?? []
    // not for a user's type: every user create gives it (user add, db init's admin, single sign-on), and
    // without a map no stored code is admin, user or application, so no row would have any rights
    const defaulted = s.info.hasDefault && def.name !== 'users'
    if (named.length > 0 && s.map === undefined && ['integer', 'decimal', 'float', 'bit'].includes(c) && s.timeFormat === undefined && !defaulted && mapping.readOnly !== true) {
      problems.push(`${where}.${s.field}: ${col} holds numbers, and ${s.field} is one of ${named.join(', ')}: give it a value map from its codes to those values, such as {"column": "${s.column}", "values": {${named.map((v) => `"${v}": …`).join(', ')}}} (db introspect lists the codes the column holds), ${readOnlyHint}`)
    }
    if (s.def.id === true && storage.mapping.readOnly !== true) {
      // the column of the materialNumber too: a create gives it
      const own = s.info.identity || s.info.hasDefault || storage.sharedKey !== undefined
      // a SQLite view shows no key, identity or default of the table below it: "neither an identity column nor has a
      // default" sent the integrator to look for one in a table that has it
      if (!own && mapping.newIds === undefined && creates && !storage.isTable && !s.guid && k !== 'string') {
        problems.push(`${where}.id: '${mapping.table}' is a view, which cannot tell the ids of the table below it (its ${col} shows no identity or default), so the gateway cannot number the rows its INSTEAD OF INSERT trigger creates; ` +
          `set mapping.${def.name}.newIds to "max+1" (the gateway numbers each new row as the largest id plus one, and the trigger passes the id on to the table) if the picking system numbers its rows that way, ${readOnlyHint}`)
      } else if (!own && mapping.newIds === undefined && creates) {
        problems.push(`${where}.id: ${col} is neither an identity column nor has a default, so the gateway cannot create rows; ` + (s.guid
          ? storage.dialect === 'sqlite'
            // SQLite has no NEWID(), and its ALTER TABLE gives no column a default
            ? `give the column a default that makes a GUID, which SQLite takes only in its CREATE TABLE (DEFAULT (lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-' || hex(randomblob(2)) || '-' || hex(randomblob(2)) || '-' || hex(randomblob(6))))), ${readOnlyHint}`
            : `give the column a default (ALTER TABLE … ADD DEFAULT NEWID() FOR ${s.column}), ${readOnlyHint}`
          : k === 'string'
          ? `map ${def.naturalKey!} to the same column if it holds the ${def.naturalKey!} (a table keyed by it), ${readOnlyHint}`
          : `set mapping.${def.name}.newIds to "max+1" if the picking system numbers its rows as the largest id plus one (not from a counter table), ${readOnlyHint}`))
      }
      if (storage.sharedKey !== undefined && mapping.newIds !== undefined) {
        problems.push(`${where}.newIds: the id is the ${storage.sharedKey} (both are mapped to ${col}), which a create gives; remove newIds`)
      } else if (k === 'string' && mapping.newIds !== undefined) {
        problems.push(`${where}.newIds: ${col} holds text, which "max+1" cannot count on from; remove newIds`)
      } else if (own && mapping.newIds !== undefined) {
        problems.push(`${where}.newIds: ${col} is ${s.info.identity ? 'an identity column' : 'given a default'} by the database, which numbers new rows itself; remove newIds`)
      }
    }
    if (s.timeZone !== undefined && !isTimeZone(s.timeZone)) problems.push(`${where}.${s.field}: unknown time zone '${s.timeZone}'`)
    // the gateway writes every field but the id and the read-only ones (createdAt, modifiedAt, lastLoginAt it sets itself):
    // a computed or identity column there fails every write (SQL Server errors 271, 8102)
    const written = s.def.id !== true && (s.def.readOnly !== true || ['createdAt', 'modifiedAt', 'lastLoginAt'].includes(s.field))
    // SQLite's INTEGER PRIMARY KEY takes the value given: a table keyed by its (numeric) article number
    const givenKey = s.field === storage.sharedKey && storage.dialect === 'sqlite' && !s.info.computed
    if (written && !givenKey && storage.mapping.readOnly !== true && (s.info.computed || s.info.identity)) {
      problems.push(`${where}.${s.field}: ${col} is ${s.info.computed ? 'computed' : 'an identity column'}, so the gateway cannot write it; map the field to another column, to null, ${readOnlyHint}`)
    }
  }
  const mapped = new Set(Object.entries(mapping.columns).filter(([field]) => mapping.absent?.includes(field) !== true).map(([, c]) => c.toLowerCase()))
  const names = new Set(storage.columns.map((c) => c.name.toLowerCase()))
  const type = (d: ResourceStorage['insertDefaults'][number]): string => d.storage.info?.type.toLowerCase() ?? ''
  for (const d of storage.insertDefaults) {
    const column = d.storage.column
    if (!names.has(column.toLowerCase())) problems.push(`${where}.defaults: the table has no column '${column}'`)
    else if (mapped.has(column.toLowerCase())) problems.push(`${where}.defaults: column '${column}' is mapped to a field, whose value a create sets; remove it from defaults`)
    else if (d.storage.info?.computed === true || d.storage.info?.identity === true || (storage.dialect === 'mssql' && ['timestamp', 'rowversion'].includes(type(d)))) {
      // a rowversion too: SQL Server refuses any value written to it (error 273)
      problems.push(`${where}.defaults: column '${column}' is filled by the database; remove it from defaults`)
    } else if (holdsBytes(storage.dialect, type(d))) {
      // text converts to bytes only explicitly (CONVERT): every create would fail (error 257), a number would become its 4 or 8 bytes
      problems.push(`${where}.defaults.${column}: the column (${describeType(d.storage.info!)}) holds bytes, which no value of the configuration is; give it a default in the database (ALTER TABLE … ADD DEFAULT 0x FOR [${column}]) and remove it from defaults`)
    } else if (typeof d.value === 'string' && ['integer', 'decimal', 'float', 'bit'].includes(d.storage.category) && !/^-?\d+(?:\.\d+)?$/.test(d.value)) {
      problems.push(`${where}.defaults.${column}: the column (${describeType(d.storage.info!)}) holds numbers; give a number, got ${JSON.stringify(d.value)}`)
    } else if (d.problem !== undefined) problems.push(`${where}.defaults.${column}: ${d.problem}`)
  }
  const spelled = new Map<string, string>()
  for (const column of Object.keys(mapping.defaults ?? {})) {
    const other = spelled.get(column.toLowerCase())
    if (other !== undefined) problems.push(`${where}.defaults: '${other}' and '${column}' name the same column (names are matched without regard to case)`)
    spelled.set(column.toLowerCase(), column)
  }
  // SQLite writes a view only through its INSTEAD OF triggers: without any, every write would fail
  if (!storage.readOnly && storage.writes.length === 0) {
    problems.push(`${where}: '${mapping.table}' is a view without INSTEAD OF triggers, which SQLite cannot write: give it INSTEAD OF INSERT, UPDATE and DELETE triggers that write the table below, ${readOnlyHint}`)
  }
  if (creates) {
    // the columns the fields and defaults resolved to (columnNamed): under a case-sensitive collation BEZ is another column than a mapped Bez
    const written = new Set([...Object.values(storage.fields).filter((s) => !s.absent).map((s) => s.info), ...storage.insertDefaults.map((d) => d.storage.info)])
    for (const column of storage.columns) {
      if (written.has(column) || column.nullable || column.hasDefault) continue
      // bytes take no value of the configuration (defaults refuses them): only the database's own default
      const bytes = holdsBytes(storage.dialect, column.type)
      const given = bytes ? '' : `give it a value every create writes (mapping.${def.name}.defaults: {"${column.name}": …}), `
      problems.push(`${where}: column '${column.name}' is NOT NULL without a default and not mapped, so inserts through the gateway would fail; map it, ${given}give it a default in the database, ${readOnlyHint}`)
    }
  }
  return problems
}

/**
 * Why a SQL Server type no field can be mapped to holds none: said, as "(xml) cannot hold a string" or
 * "(timestamp) cannot hold a datetime" left the integrator guessing (SQL Server's timestamp is no time).
 * A time column is advised for a time field only: a text or number field needs another column.
 */
function unsupportedType (type: string, kind: FieldKind): string {
  const t = type.toLowerCase()
  const time = kind === 'datetime'
  if (t === 'timestamp' || t === 'rowversion') return `: SQL Server's timestamp is a rowversion, a binary counter the server raises at every change of the row, not a time; map the field to ${time ? 'a column of a time type (datetime, datetime2, date, …)' : 'another column'}`
  if (t === 'time') return time ? ': it holds a time of day without a date; map the field to a column that holds both (datetime, datetime2, …)' : ': it holds a time of day, which the gateway neither reads nor writes; map the field to another column'
  return `: the gateway reads and writes text, number, bit and date-time columns, not SQL Server's ${t} type (nor other binary, xml, sql_variant, hierarchyid or spatial ones); map the field to another column`
}

/** Digits each format writes at most (Unix time until the year 2286 in seconds, 5138 in milliseconds). */
const FORMAT_DIGITS: Record<ColumnTimeFormat, number> = { unix: 10, 'unix-ms': 13, yyyymmdd: 8, yyyymmddhhmmss: 14 }

/**
 * Why a column cannot keep a date-time field as Julian days (format julianday); undefined when it
 * can: on SQLite a REAL (FLOAT, DOUBLE) column, or one declared as a time whose legacy program
 * writes julianday() numbers there (a DECIMAL(p,s) would round them to its scale).
 */
function julianDaysProblem (dialect: DialectName, c: Category): string | undefined {
  if (dialect === 'mssql') return 'cannot take the format julianday, which is SQLite\'s julianday() number; on SQL Server map a time column without a format, or Unix time with "format": "unix"'
  if (c === 'float' || c === 'time') return undefined
  return 'cannot hold Julian days (format julianday): they are numbers with a fraction (the time of day), which need a REAL column'
}

/**
 * Why a column cannot keep a date-time field as 'YYYY-MM-DD HH:MM:SS' text (format 'yyyy-mm-dd hh:mm:ss'); undefined
 * when it can: SQLite only, where reads, filters and sorting take such text as any text its strftime reads. SQL Server
 * keeps times in time types, which compare as times; text there would need a conversion in every filter and sort.
 */
function wholeSecondsProblem (dialect: DialectName, info: ColumnInfo): string | undefined {
  if (dialect === 'mssql') return 'cannot take the format yyyy-mm-dd hh:mm:ss, which is SQLite\'s text of whole seconds; on SQL Server map a column of a time type (datetime2(0) keeps whole seconds) without a format'
  if (info.maxLength !== undefined && info.maxLength > 0 && info.maxLength < 19) return 'is too short for 19 characters (yyyy-mm-dd hh:mm:ss)'
  return undefined
}

/** Why a column cannot keep a date-time field in the given format; undefined when it can. */
function formatProblem (dialect: DialectName, s: FieldStorage, format: ColumnTimeFormat): string | undefined {
  const info = s.info!
  const c = s.category
  // SQLite without a declared type (or BLOB) keeps numbers and text as given, which compare in no one order
  if (c === 'time' && dialect === 'sqlite' && sqliteUntyped(info.type.toLowerCase())) return `cannot hold a time in the format ${format}: without a declared type SQLite keeps numbers and text as given, which do not compare in one order`
  if (c === 'time' && dialect === 'sqlite' && sqliteNumericTime(info.type)) return undefined
  if (c === 'time') return `holds times itself; remove "format": "${format}"`
  const unix = format === 'unix' || format === 'unix-ms'
  if (c === 'text' || c === 'ntext') {
    // digits of one width compare as text in time order; Unix time's digits do not
    if (unix) return `is a text column, whose order is not that of Unix times; format ${format} needs a number column`
    const max = info.maxLength
    if (max !== undefined && max > 0 && max < FORMAT_DIGITS[format]) return `is too short for ${FORMAT_DIGITS[format]} digits (${format})`
    return undefined
  }
  if (c !== 'integer' && c !== 'decimal' && !(c === 'float' && unix)) return `cannot hold a time in the format ${format}`
  // SQL Server's real keeps 24 bits: near today's Unix times its neighbouring values are 128 seconds apart
  if (dialect === 'mssql' && unix && info.type.toLowerCase() === 'real') return `is a real (4 bytes), too coarse for ${format}: neighbouring values there are minutes apart; use float, bigint or decimal`
  if (c === 'decimal' && (info.scale ?? 0) > 0 && !unix) return `holds fractions; ${format} needs whole numbers`
  // SQL Server's integer types by their range; a declared DECIMAL(p,0) by its p, on SQLite too (the gateway holds writes to it)
  const range = dialect === 'mssql' ? INTEGER_RANGES[info.type.toLowerCase()] : undefined
  if (range !== undefined || (c === 'decimal' && info.precision !== undefined)) {
    const digits = range === undefined ? info.precision : String(range[1]).length - 1
    if (digits !== undefined && digits < FORMAT_DIGITS[format] && !(format === 'unix' && digits === 9)) return `is too small for ${format} (${FORMAT_DIGITS[format]} digits)`
  }
  return undefined
}

/**
 * A stored value of a column mapped with a time format as reads take it (a wall-clock Date for digits),
 * or undefined where they show null: no number, or digits of no real date (20240230). The SQL function
 * formatted_time (sqlite.ts) counts by it.
 */
export function formattedDate (format: ColumnTimeFormat, raw: unknown): Date | undefined {
  let date: Date | undefined
  const n = storedNumber(raw) ?? Number.NaN
  if (format === 'unix' || format === 'unix-ms') {
    // whole seconds (milliseconds), as filters compare them: a fraction another program left (a REAL column) is dropped
    if (Number.isFinite(n)) date = new Date(format === 'unix' ? Math.floor(n) * 1000 : Math.floor(n))
  } else if (Number.isInteger(n) && n >= 0) {
    date = compactTime(String(n))
    if (date !== undefined && (String(n).length === 8) !== (format === 'yyyymmdd')) date = undefined
  }
  return date === undefined || Number.isNaN(date.getTime()) ? undefined : date
}

/**
 * Digits shaped as YYYYMMDD or YYYYMMDDhhmmss with a year from 1900 to 2999, a real date or not: as Unix
 * time they would be seconds of August to December 1970 or milliseconds of the years 2572 to 2920.
 */
export function compactShaped (digits: string): boolean {
  return /^(?:19|2\d)\d{6}(?:\d{6})?$/.test(digits)
}

/**
 * A time written as digits, YYYYMMDD or YYYYMMDDhhmmss (years 1900 to 2999, a real calendar date
 * and time), as a wall-clock Date (its UTC fields are the stored ones); undefined for anything else.
 */
export function compactTime (digits: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})(?:(\d{2})(\d{2})(\d{2}))?$/.exec(digits)
  if (m === null) return undefined
  const [year, month, day, hour, minute, second] = m.slice(1).map((p) => p === undefined ? 0 : Number(p))
  if (year < 1900 || year > 2999) return undefined
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second))
  const same = date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day &&
    date.getUTCHours() === hour && date.getUTCMinutes() === minute && date.getUTCSeconds() === second
  return same ? date : undefined
}

export function describeType (info: ColumnInfo): string {
  const t = info.type === '' ? 'no declared type' : info.type
  if (info.maxLength !== undefined) return `${t}(${info.maxLength === -1 ? 'max' : info.maxLength})`
  if (info.precision !== undefined && /dec|num/.test(t)) return `${t}(${info.precision},${info.scale ?? 0})`
  if (info.scale !== undefined && /datetime2|datetimeoffset|time/.test(t) && t !== 'datetime') return `${t}(${info.scale})`
  return t
}

export interface StorageCheckOptions {
  /** the length of the password hashes the gateway writes (argon2HashLength of auth.argon2; default: of the default parameters) */
  passwordHashLength?: number
}

export interface StorageReport {
  /** human-readable problems, each naming the resource and field or column; empty when the mapping fits */
  problems: string[]
  /** every resource's table columns as the database declares them */
  columns: Record<ResourceName, ColumnInfo[]>
}

/**
 * What to do about an id in a column that cannot hold it: not a value map, which an id cannot have
 * (the configuration check refuses one), but a number column.
 */
function idHint (field: FieldDef): string | undefined {
  return field.id === true ? '; the id needs a number column' : undefined
}

/** The table's name as messages about it show it: schema-qualified on SQL Server. */
export function tableLabel (dialect: DialectName, mapping: TableMapping): string {
  return dialect === 'mssql' ? `${mapping.schema ?? 'dbo'}.${mapping.table}` : mapping.table
}

/**
 * Reads every mapped table's columns (once each) and checks the mapping against them. Rejects with
 * DatabaseUnavailableError when the database cannot be reached.
 */
export async function inspectStorage (db: Database, mappings: Record<ResourceName, TableMapping>, options: StorageCheckOptions = {}): Promise<StorageReport> {
  const problems: string[] = []
  const columns = {} as Record<ResourceName, ColumnInfo[]>
  if (db.dialect === 'mssql') {
    // SQL Server 2008 (R2) answers every catalog query the check runs, then fails every list: said at start instead
    const [row] = await db.query(VERSION_STATEMENT)
    const tooOld = versionProblem(row?.version)
    if (tooOld !== undefined) problems.push(tooOld)
  }
  for (const name of Object.keys(resources) as ResourceName[]) {
    const def = resources[name]
    const mapping = mappings[name]
    const fit = await mappingFit(db, def, mapping)
    columns[name] = fit.columns
    problems.push(...fit.problems)
    if (fit.problems.length === 0) problems.push(...storageProblems(new ResourceStorage(db.dialect, def, mapping, fit.columns), options))
  }
  return { problems, columns }
}

/**
 * One mapping against its table as the database declares it: the mapping's own problems, else the
 * columns it names that the table lacks; and the columns read (none when the mapping itself is wrong).
 */
export async function mappingFit (db: Database, def: ResourceDef, mapping: TableMapping): Promise<{ problems: string[], columns: ColumnInfo[] }> {
  const structural = mappingProblems(def, mapping)
  if (structural.length > 0) return { problems: structural, columns: [] }
  let columns: ColumnInfo[]
  try {
    columns = await db.columns(mapping)
  } catch (err) {
    if (!(err instanceof UnreadableTableError)) throw err
    return { problems: [`${def.name}: '${tableLabel(db.dialect, mapping)}' cannot be read (${err.detail}): repair it in the database (a view whose table, column or function was renamed or dropped), or map another table`], columns: [] }
  }
  if (columns.length === 0 && db.dialect === 'mssql') {
    // not a missing table (which db init would create, a second one beside the picking system's), but one spelled in another case
    const spelled = (await db.query(spellingsStatement(mapping))).map((r) => `${String(r.schema)}.${String(r.table)}`)
    if (spelled.length > 0) {
      return { problems: [`${def.name}: table '${tableLabel(db.dialect, mapping)}' is not there as spelled, but the database has ${spelled.map((name) => `'${name}'`).join(' and ')}: its collation tells names apart by case, so write schema and table in the mapping as the database does`], columns: [] }
    }
    // a synonym (of a table in another database, as legacy installations keep them): no columns, and no table db init may create
    const [synonym] = await db.query(synonymsStatement(mapping))
    if (synonym !== undefined) {
      return { problems: [`${def.name}: '${String(synonym.schema)}.${String(synonym.table)}' is a synonym (of ${String(synonym.target)}), whose columns SQL Server does not list: map the table or view it stands for, or, where that lies in another database, a view in this one over it (CREATE VIEW … AS SELECT … FROM ${String(synonym.target)})`], columns: [] }
    }
  }
  const missing = missingColumns(def, mapping, tableLabel(db.dialect, mapping), columns.map((c) => c.name))
  if (db.dialect !== 'mssql') return { problems: missing, columns }
  // SQL Server's catalog shows a login only the tables and columns it has a permission on: a table the
  // gateway's login may not use (a user table db init made with another login) looked missing, and its fix
  // seemed to be db init, which then failed on the table that is there (error 2714). A readOnly mapping is only read.
  const granted = `SQL Server lists only the tables and columns a login has a permission on: grant it ${mapping.readOnly === true ? 'SELECT' : 'SELECT, INSERT, UPDATE and DELETE'} there`
  return { problems: missing.map((p) => `${p}, or the gateway's login may not ${isMissingTable(p) ? 'use' : 'read'} it (${granted})`), columns }
}
