// Builds every statement the repositories run, for either dialect. Values only ever travel as parameters.
import type { Dialect } from './dialect.js'
import { unstorableCharacter } from './code-pages.js'
import { BadQueryError } from './errors.js'
import type { Filter, ListQuery, SortKey } from './list-query.js'
import { spelledCaseless } from './resources.js'
import { guidExpected, INTEGER_RANGES, isGuid, MONEY_RANGES, ResourceStorage, sqliteUntyped, type FieldStorage } from './storage.js'
import type { FieldKind, Param, ResourceDef, SqlValue, Statement, TableMapping } from './types.js'

/**
 * Text upper-cased as SQL Server's UPPER does it: character by character, each to one character
 * (Unicode's simple mapping). JavaScript's full mapping makes 'weiß' 'WEISS' and 'ﬁ' 'FI', which
 * UPPER keeps as 'WEIß' and 'ﬁ': compared with UPPER(col), such a value found no row.
 */
export function simpleUpper (text: string): string {
  let out = ''
  for (const ch of text) {
    const upper = ch.toUpperCase()
    out += upper.length === ch.length ? upper : ch
  }
  return out
}

/** Hands out @p1, @p2, … for one statement. */
class Params {
  readonly list: Param[] = []
  add (kind: FieldKind, value: SqlValue, type?: string): string {
    const name = `p${this.list.length + 1}`
    this.list.push(type === undefined ? { name, kind, value } : { name, kind, value, type })
    return `@${name}`
  }

  named (name: string, kind: FieldKind, value: SqlValue, type?: string): string {
    this.list.push(type === undefined ? { name, kind, value } : { name, kind, value, type })
    return `@${name}`
  }
}

const ESCAPE = "ESCAPE '\\'"

/** The number a read shows as this text (String(12) is '12'), if any: '012', '1.50' and ' 12' are no number's text. */
function numberShownAs (v: SqlValue): number | undefined {
  if (typeof v !== 'string' || v === '') return undefined
  const n = Number(v)
  return Number.isFinite(n) && String(n) === v ? n : undefined
}
/** SQLite keeps times as text in more than one format: compare and sort them as one canonical text. */
const SQLITE_TIME = (column: string): string => `strftime('%Y-%m-%dT%H:%M:%fZ', ${column})`
/**
 * SQLite: a number kept in a text column ('12', '2.5') compares as one ('10' > '9'), not as text,
 * and text that is no number ('n/a', '1,5') as NULL, as reads show it (number_text, sqlite.ts).
 */
const SQLITE_NUMBER = (column: string): string => `number_text(${column})`
/**
 * SQLite: a flag in a column without a declared type ('1' and 'true' beside -1 and 1) as reads show it: 1, 0, or NULL
 * for anything else (flag_text, sqlite.ts).
 */
const SQLITE_FLAG = (column: string): string => `flag_text(${column})`

/**
 * Parameters SQL Server takes in one request: 2100, of which sp_executesql's statement and its
 * declaration list are two (error 8003 beyond).
 */
const MSSQL_MAX_PARAMS = 2098

/** The alias under which a list statement returns the value of sort key i (when it is an expression). */
export const sortAlias = (i: number): string => `__s${i}`

/**
 * What a sort key compares: the column itself; a value map's rank of the API value; SQLite's time
 * text read as time; SQLite's number text read as a number; a flag in a number column as 0 or 1, in a SQLite column
 * without a declared type as reads show it (0, 1 or NULL); SQLite's CHAR(n) text without its padding ('trim').
 */
export type SortValueKind = 'column' | 'rank' | 'time-text' | 'number-text' | 'flag' | 'flag-text' | 'fold' | 'trim'

/**
 * A decimal(precision,scale) parameter type (`type`) tedious writes `value` in exactly. It sends
 * round(|v| * 10^scale), computed in doubles, as a 64-bit integer: past 2^53 that product is no longer
 * exact (123456789012345 as decimal(19,4) arrived as 123456789012345.0112, money's 922337203685477.5
 * as 922337203685477.4784). The value's own decimals (at most the column's) keep it exact; a value
 * that is not exact even so (a filter value of 17 digits) keeps the column's scale.
 */
function exactDecimal (type: string, precision: number, scale: number, value: number): string {
  if (Math.abs(value) * 10 ** scale <= Number.MAX_SAFE_INTEGER) return type
  let own = 0
  while (own < scale && Number(value.toFixed(own)) !== value) own++
  return Math.round(Math.abs(value * 10 ** own)) <= Number.MAX_SAFE_INTEGER ? `decimal(${precision},${own})` : type
}

export class SqlBuilder {
  readonly dialect: Dialect
  readonly storage: ResourceStorage
  readonly id: string
  private readonly table: string
  private readonly selectList: string
  /** the fields every select lists, in its order (a list adds its sort keys' values after them) */
  readonly selectFields: string[]
  /**
   * Texts of writes and reads by id, by their shape (which fields, which hint): the same text object
   * each time, so the driver's statement cache finds it without rebuilding or rehashing it.
   */
  private readonly texts = new Map<string, string>()

  /** Over a compiled storage; or over a definition and mapping alone (columns unknown: types by kind). */
  constructor (dialect: Dialect, storage: ResourceStorage | ResourceDef, mapping?: TableMapping) {
    this.dialect = dialect
    storage = storage instanceof ResourceStorage ? storage : new ResourceStorage(dialect.name, storage, mapping!, undefined)
    this.storage = storage
    this.id = storage.id
    this.table = dialect.table(storage.mapping)
    // a field without a column (mapped to null) is selected as NULL, so every row has every field
    this.selectFields = Object.keys(storage.def.fields)
    this.selectList = this.selectFields.map((f) => `${storage.fields[f].absent ? 'NULL' : this.col(f)} AS ${dialect.ident(f)}`).join(', ')
  }

  /**
   * The quoted column of an API field, spelled as the database's catalog spells it when known: names
   * are matched case-insensitively at start, and a database with a case-sensitive collation would
   * refuse the configuration's spelling (error 207).
   */
  col (field: string): string {
    const column = this.storage.mapping.columns[field]
    if (this.storage.fields[field]?.absent === true) throw new BadQueryError(`'${field}' is not stored in this installation: it cannot be filtered or sorted`)
    if (column === undefined || !Object.hasOwn(this.storage.def.fields, field)) throw new Error(`${this.storage.def.name}: no column for field '${field}'`)
    return this.dialect.ident(this.storage.fields[field]?.info?.name ?? column)
  }

  /**
   * The column as comparisons and sorting see it: SQL Server's legacy text and ntext types can be
   * neither compared with = (error 402) nor sorted (error 306), so they go through (n)varchar(max).
   */
  private comparable (field: string): string {
    const c = this.col(field)
    // SQLite: a key column whose unique index compares in another collation than the column declares:
    // as the index does, so that its keys ('a' and 'A') are two ids, a walk's keyset passes none over, and the index seeks
    const unique = this.dialect.name === 'sqlite' ? this.s(field).info?.uniqueCollation : undefined
    if (unique !== undefined) return `${c} COLLATE ${unique}`
    const type = this.dialect.name === 'mssql' ? this.s(field).info?.type.toLowerCase() : undefined
    return type === 'text' ? `CAST(${c} AS varchar(max))` : type === 'ntext' ? `CAST(${c} AS nvarchar(max))` : c
  }

  /**
   * Lists and counts leave out the rows without an id, where the id column may hold NULL (a nullable
   * unique column, a SQLite key not declared NOT NULL): no path names such a row, the API's id cannot
   * show it, and the keyset of a walk, which takes the id as unique and never NULL, would stop at it.
   */
  private keyed (): string[] {
    const s = this.s(this.id)
    const info = s.info
    const keyed = info?.nullable === true || info?.nullKey === true ? [`${this.col(this.id)} IS NOT NULL`] : []
    // SQLite: a REAL or NUMERIC key numbered 1.0, 2.0 may hold 6.5 another program wrote, which no whole-number id
    // shows (the API showed it as 0, the id of another row if there is one) and no path names: left out, as a NULL key is
    if (this.dialect.name === 'sqlite' && s.def.kind === 'integer' && (s.category === 'float' || s.category === 'decimal')) keyed.push(`${this.col(this.id)} = CAST(${this.col(this.id)} AS INTEGER)`)
    return keyed
  }

  private s (field: string): FieldStorage {
    return this.storage.field(field)
  }

  /**
   * The T-SQL type of a parameter compared with or written to a column: the column's own type,
   * so that SQL Server neither converts the column (an nvarchar parameter against an indexed
   * varchar column scans) nor compares at another precision (datetime2 against datetime).
   * A value the column type cannot hold gets a wider type instead of a driver error.
   */
  paramType (s: FieldStorage, value: SqlValue): string | undefined {
    const type = s.paramType
    if (type === undefined || value === null) return type
    switch (s.category) {
      case 'text':
        // varchar parameters carry only what the column's code page has: other text compares as nvarchar
        if (typeof value !== 'string') return type
        if (!/^[\x00-\x7f]*$/.test(value)) return value.length > 4000 ? 'nvarchar(max)' : 'nvarchar(4000)'
        return value.length > 8000 ? 'varchar(max)' : type
      case 'ntext':
        return typeof value === 'string' && value.length > 4000 ? 'nvarchar(max)' : type
      case 'integer': {
        const fit = INTEGER_RANGES[type]
        if (typeof value !== 'number') return type
        if (!Number.isInteger(value)) return 'float'
        if (fit === undefined || (value >= fit[0] && value <= fit[1])) return type
        // a bigint parameter holds what a 64-bit integer does: the driver refuses 1e20 (EPARAM, a 500), a float compares it
        return value >= -(2 ** 63) && value < 2 ** 63 ? 'bigint' : 'float'
      }
      case 'decimal': {
        if (typeof value !== 'number') return type
        // a money parameter holds the type's range and 4 decimals: a filter value beyond either compares as a float
        const money = MONEY_RANGES[type]
        if (money !== undefined) return value >= money.min && value <= money.max && Number(value.toFixed(4)) === value ? type : 'float'
        if (!type.startsWith('decimal')) return type
        const info = s.info!
        const precision = info.precision ?? 18
        const scale = info.scale ?? 0
        const fits = Math.abs(value) < 10 ** (precision - scale) && Number(value.toFixed(scale)) === value
        if (!fits) return 'float'
        if (precision <= 19) return exactDecimal(type, precision, scale, value)
        // tedious writes a decimal parameter as round(|v| * 10^scale) in 64 bits, whatever its
        // precision: in decimal(38,20) (Dynamics NAV's every decimal) 1.5 is already too much.
        // The value's own decimals (at most the column's) keep it exact; beyond 2^64 it is a float.
        let own = 0
        while (own < scale && Number(value.toFixed(own)) !== value) own++
        return Math.round(Math.abs(value * 10 ** own)) < 2 ** 64 ? `decimal(${Math.min(precision, 38)},${own})` : 'float'
      }
      case 'float':
        // a real parameter beyond ±3.4e38 would travel as infinity, which the server refuses
        return type === 'real' && typeof value === 'number' && !Number.isFinite(Math.fround(value)) ? 'float' : type
      default:
        return type
    }
  }

  /**
   * `compared` false: a value written (INSERT, UPDATE … SET), whose statement text is kept per shape
   * (text()), so it may not depend on the value; the column converts it with its own code page anyway.
   */
  private param (params: Params, s: FieldStorage, value: SqlValue, compared = true): string {
    const type = this.paramType(s, value)
    const money = type === 'money' || type === 'smallmoney'
    // tedious writes a money parameter as value * 10000 truncated (19.99 arrives as 19.9899): it goes
    // as a decimal, which tedious rounds, cast back to the column's type so the column is not converted
    const p = params.add(this.storedKind(s, value), value, money ? (type === 'money' && typeof value === 'number' ? exactDecimal('decimal(19,4)', 19, 4, value) : type === 'money' ? 'decimal(19,4)' : 'decimal(10,4)') : type)
    return money ? `CAST(${p} AS ${type})` : compared ? this.inColumnCodePage(s, value, type, p) : p
  }

  /**
   * SQL Server: non-ASCII text for a varchar column travels as nvarchar (the driver would write a
   * varchar parameter in the database's code page, not the column's), and compared so it converts
   * the column to nvarchar: under a SQL_ collation (SQL_Latin1_General_CP1_CI_AS, the US default)
   * nvarchar compares by Unicode rules while ORDER BY sorts the varchar by the code page's, which
   * order hyphens and apostrophes differently, so a keyset cursor on 'Ventil-Satz Müller' skipped or
   * repeated rows at the page's edge (and the index was scanned, not sought). Cast to varchar in the
   * column's own collation, which converts with its code page, when that holds every character;
   * text it cannot hold equals no stored value anyway and stays nvarchar.
   */
  private inColumnCodePage (s: FieldStorage, value: SqlValue, type: string | undefined, p: string): string {
    const info = s.info
    if (s.category !== 'text' || typeof value !== 'string' || type?.startsWith('nvarchar') !== true || info?.collation === undefined) return p
    if (info.utf8 !== true && (info.codePage === undefined || unstorableCharacter(value, info.codePage) !== undefined)) return p
    // UTF-8 bytes are at least the code page's: varchar(8000) holds the value when they fit in it
    return `CAST(${p} COLLATE ${info.collation} AS varchar(${Buffer.byteLength(value) > 8000 ? 'max' : 8000}))`
  }

  /** The kind of a stored value: the field's, except a time kept as a number or digits (TimeFormat). */
  private storedKind (s: FieldStorage, value: SqlValue): FieldKind {
    if (s.timeFormat === undefined && !s.julianDays) return s.def.kind
    return typeof value === 'string' ? 'string' : Number.isInteger(value) ? 'integer' : 'number'
  }

  /**
   * A flag kept in a number column without a value map: any value but 0 reads true (the -1 of VB and Access programs too).
   * On SQLite also one declared BOOLEAN or BIT: NUMERIC affinity, which keeps a -1 as an INTEGER column does (SQL Server's bit holds 0 and 1 only).
   */
  private numericFlag (s: FieldStorage): boolean {
    return s.def.kind === 'boolean' && s.map === undefined && (s.category === 'integer' || s.category === 'decimal' ||
      (s.category === 'bit' && this.dialect.name === 'sqlite' && s.info !== undefined && !sqliteUntyped(s.info.type.toLowerCase())))
  }

  /**
   * SQLite: a flag without a value map on a column without a declared type, which keeps what each program wrote as given
   * (-1, 1, '1', 'true', '0'): compared and sorted as reads show it (flag_text), not as stored (-1 = 1 finds nothing)
   */
  private flagInText (s: FieldStorage): boolean {
    return s.def.kind === 'boolean' && s.map === undefined && this.untypedSqlite(s)
  }

  /**
   * SQLite: a number field on a text column (a quantity a legacy program keeps as text), or on one
   * without a declared type, which keeps text as written ('02', ' 3') beside numbers: reads show
   * those as numbers, so filters, sorting and the station lookups of events must see them so too
   * (not the id, whose column every list sorts and pages by: it stays a seek on the key)
   */
  private numberInText (s: FieldStorage): boolean {
    return this.dialect.name === 'sqlite' && (s.def.kind === 'number' || s.def.kind === 'integer') && s.map === undefined &&
      (s.category === 'text' || (s.field !== 'id' && this.untypedSqlite(s)))
  }

  /** SQLite: the field's column has no declared type, and so keeps numbers and text as given */
  private untypedSqlite (s: FieldStorage): boolean {
    return this.dialect.name === 'sqlite' && s.info !== undefined && sqliteUntyped(s.info.type.toLowerCase())
  }

  /**
   * SQLite: a text field (not the id, whose key is sought) on a column without a declared type, which keeps numbers as
   * numbers: 12 and '12' are two values there, which the API shows alike (filters compare both; a unique one is checked by the gateway).
   */
  numberShownAsText (s: FieldStorage): boolean {
    return s.field !== 'id' && this.keepsNumbers(s)
  }

  /** SQLite: a text field, a text id too, on a column without a declared type, where a number another program stored stays a number (12, shown as '12') */
  keepsNumbers (s: FieldStorage): boolean {
    return s.def.kind === 'string' && s.map === undefined && this.untypedSqlite(s)
  }

  /** What the keyset compares for a sort key, and how the cursor keeps it. */
  sortValueKind (field: string): SortValueKind {
    const s = this.s(field)
    if (s.map !== undefined) return 'rank'
    if (s.def.kind === 'datetime' && this.dialect.name === 'sqlite' && s.timeFormat === undefined) return 'time-text'
    if (this.numberInText(s)) return 'number-text'
    if (this.numericFlag(s)) return 'flag'
    if (this.flagInText(s)) return 'flag-text'
    // SQLite: a caseless field (usernames) sorted as its filters compare it (unicode_fold, without trailing
    // blanks), not by its bytes, which put 'anna' after 'Zoé' and [gt]Admin's rows in another order than
    // the list's. Not the id, which stays a seek on the key and the unique tie-breaker.
    if (this.dialect.name === 'sqlite' && s.def.caseless === true && field !== this.id) return 'fold'
    // SQLite: a CHAR(n) text as reads show it, without its padding, as its filters compare it: a row one program
    // padded ('   ', 'ST  ') and one another wrote as is ('', 'ST') are a tie, broken by id, not '' first.
    // Not the id, which stays a seek on the key (its path compares it so: idWhere)
    if (this.dialect.name === 'sqlite' && s.padded && s.def.kind === 'string' && s.map === undefined && field !== this.id) return 'trim'
    return 'column'
  }

  /**
   * Whether a list cursor's value for a sort key can be the keyset's parameter. SQL Server's driver refuses
   * a rank or flag beyond an int, digits beyond 2^53 for an int column, and a time outside its column's
   * type (a forged cursor's year 1000 on a datetime): such a cursor is none of ours (400), not a 500.
   */
  cursorValueFits (field: string, v: SqlValue): boolean {
    if (this.dialect.name !== 'mssql' || v === null) return true
    const kind = this.sortValueKind(field)
    if (kind === 'rank' || kind === 'flag') return typeof v === 'number' && v >= INTEGER_RANGES.int[0] && v <= INTEGER_RANGES.int[1]
    // digits beyond 2^53 stay text in a cursor (a bigint's exact value): the parameter has the column's type, which only a bigint holds them in
    if (typeof v === 'string' && kind === 'column' && this.s(field).category === 'integer') return this.s(field).paramType === 'bigint'
    return !(v instanceof Date) || this.storage.holdsTime(this.s(field), v)
  }

  /** The expression ORDER BY and the keyset use for a field. */
  private sortExpr (field: string, params: Params): string {
    const s = this.s(field)
    const c = this.col(field)
    switch (this.sortValueKind(field)) {
      case 'rank': {
        // API order, not the order of the codes: CASE gives each API value its rank; unknown codes sort last
        const map = s.map!
        const { expr, code: asCompared } = this.codeOperand(s, this.comparable(field))
        const whens = map.order.map((value, i) => {
          const codes = [...new Set(map.codes.get(String(value))!.flatMap((code) => asCompared(this.storage.codeValue(s, code))))].map((code) => this.param(params, s, code))
          return `WHEN ${expr} ${codes.length === 1 ? `= ${codes[0]}` : `IN (${codes.join(', ')})`} THEN ${i + 1}`
        })
        // a field that shows a NULL or an unknown code as false (users.enabled) ranks them with false
        const unknown = s.def.unknownIsFalse === true ? `${map.order.indexOf(false) + 1}` : undefined
        return `CASE ${whens.join(' ')} WHEN ${c} IS NULL THEN ${unknown ?? 'NULL'} ELSE ${unknown ?? map.order.length + 1} END`
      }
      case 'time-text': return SQLITE_TIME(c)
      case 'number-text': return SQLITE_NUMBER(c)
      // false before true, as the API shows the values: -1 and 2 are true, not below 0 or above 1; a field that
      // shows NULL (and text no flag reads) as false (users.enabled) ranks it with false, as with a value map
      case 'flag': return s.def.unknownIsFalse === true ? `CASE WHEN ${c} IS NULL OR ${c} = 0 THEN 0 ELSE 1 END` : `CASE WHEN ${c} = 0 THEN 0 WHEN ${c} IS NOT NULL THEN 1 END`
      case 'flag-text': return s.def.unknownIsFalse === true ? `COALESCE(${SQLITE_FLAG(c)}, 0)` : SQLITE_FLAG(c)
      case 'fold': return this.shownText(s, c, true, true).expr
      case 'trim': return this.shownText(s, c, true, false).expr
      default: return this.comparable(field)
    }
  }

  /**
   * The i-th sort key in ORDER BY, always by a select-list alias: a bare name in ORDER BY binds to an
   * alias first, on SQL Server and SQLite alike, so with `name` mapped to [Code] and `description`
   * to [Name], ORDER BY [Name] would sort by [Code]. A plain column is its field's alias; an
   * expression (a rank, a flag's 0 or 1, SQLite's time text or number text) is already selected as `__s<i>` for the cursor. Only
   * text/ntext, sorted through a cast, stays an expression (whose names bind to the table).
   */
  private orderTerm (field: string, i: number): string {
    if (this.sortValueKind(field) !== 'column') return this.dialect.ident(sortAlias(i))
    const c = this.comparable(field)
    return c === this.col(field) ? this.dialect.ident(field) : c
  }

  /**
   * The indexes of the sort keys ORDER BY and the keyset use: a later key that sorts the same
   * column the same way as an earlier one adds nothing, and T-SQL refuses a column named twice in
   * ORDER BY (error 169), by alias too. A table keyed by its material number sorts
   * `materialNumber` and the tie-breaker `id`: one column. (The cursor still keeps every key.)
   */
  private distinctKeys (sort: SortKey[]): number[] {
    const seen = new Set<string>()
    return sort.flatMap((k, i) => {
      const kind = this.sortValueKind(k.field)
      // a rank is its own field's value map: two fields' maps of one column sort differently
      const same = kind === 'rank' ? `${k.field}` : `${kind} ${this.col(k.field).toLowerCase()}`
      if (seen.has(same)) return []
      seen.add(same)
      return [i]
    })
  }

  /** The text of a statement shape, built once (at most 256 shapes kept: a body's choice of fields makes one each). */
  private text (shape: string, build: () => string): string {
    let text = this.texts.get(shape)
    if (text === undefined) {
      text = build()
      if (this.texts.size < 256) this.texts.set(shape, text)
    }
    return text
  }

  /** One row by id; `forUpdate` takes an update lock on SQL Server (inside a transaction). */
  selectById (id: SqlValue, opts: { forUpdate?: boolean } = {}): Statement {
    const params = new Params()
    const hint = opts.forUpdate === true && this.dialect.name === 'mssql' ? ' WITH (UPDLOCK, ROWLOCK)' : ''
    const where = this.idWhere(params, id)
    // the shape includes the condition: a non-ASCII text key compares through a cast (idWhere)
    return { text: this.text(`select${hint} ${where}`, () => `SELECT ${this.selectList} FROM ${this.table}${hint} WHERE ${where}`), params: params.list }
  }

  /**
   * A page: filters, keyset position, sort, then offset/limit exactly as given in `q`. A sort key
   * whose keyset value is not the column itself is also selected, as `__s<i>`, for the cursor.
   */
  list (q: Pick<ListQuery, 'filters' | 'sort' | 'limit' | 'offset' | 'after'>): Statement {
    const params = new Params()
    const extra = q.sort.map((k, i) => this.sortValueKind(k.field) === 'column' ? '' : `, ${this.sortExpr(k.field, params)} AS ${this.dialect.ident(sortAlias(i))}`).join('')
    const conditions = [...this.keyed(), ...q.filters.map((f) => this.condition(f, params))]
    const keys = this.distinctKeys(q.sort)
    const after = q.after
    if (after !== undefined) conditions.push(this.keyset(keys.map((i) => q.sort[i]), keys.map((i) => after[i]), params))
    const where = conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : ''
    const orderBy = keys.map((i) => `${this.orderTerm(q.sort[i].field, i)} ${q.sort[i].desc ? 'DESC' : 'ASC'}`).join(', ')
    const limit = params.named('limit', 'integer', q.limit)
    const offset = params.named('offset', 'integer', q.offset ?? 0)
    const paging = this.dialect.paging(limit.slice(1), offset.slice(1))
    this.checkParams(params)
    return { text: `SELECT ${this.selectList}${extra} FROM ${this.table}${where} ORDER BY ${orderBy} ${paging}`, params: params.list }
  }

  /**
   * parseListQuery bounds the filter values (MAX_FILTER_VALUES), but a value map turns one value
   * into each of its stored codes, and sorting by a mapped field adds its codes too: past SQL
   * Server's limit the request would fail (error 8003), so it is a 400 naming the limit.
   */
  private checkParams (params: Params): void {
    if (this.dialect.name === 'mssql' && params.list.length > MSSQL_MAX_PARAMS) {
      throw new BadQueryError(`Too many filter values: with the stored codes their value maps stand for, they need ${params.list.length} parameters, and SQL Server takes at most ${MSSQL_MAX_PARAMS}`)
    }
  }

  /**
   * The number of rows the filters match (the keyset position does not apply). `lock` (inside a
   * transaction) holds a serializable range update lock on SQL Server, so that a second
   * transaction counting the same range waits until the first commits (SQLite's BEGIN IMMEDIATE
   * already serializes writers).
   */
  count (filters: Filter[], opts: { lock?: boolean } = {}): Statement {
    const params = new Params()
    const conditions = [...this.keyed(), ...filters.map((f) => this.condition(f, params))]
    const where = conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : ''
    this.checkParams(params)
    const hint = opts.lock === true && this.dialect.name === 'mssql' ? ' WITH (UPDLOCK, HOLDLOCK)' : ''
    return { text: `SELECT COUNT(*) AS ${this.dialect.ident('total')} FROM ${this.table}${hint}${where}`, params: params.list }
  }

  /**
   * The largest id (mapping.newIds 'max+1'), inside the insert's transaction. On SQL Server the
   * serializable update lock covers the range past it, so a second insert (the gateway's or the
   * picking system's own) waits until this one commits; SQLite's BEGIN IMMEDIATE already
   * serializes writers.
   */
  maxId (): Statement {
    const hint = this.dialect.name === 'mssql' ? ' WITH (UPDLOCK, HOLDLOCK)' : ''
    const sequence = this.storage.field(this.id).info?.sequenceTable
    if (sequence !== undefined) {
      // the largest id the AUTOINCREMENT table below the view ever held, also one deleted since
      return {
        text: `SELECT MAX(COALESCE(MAX(${this.col(this.id)}), 0), COALESCE((SELECT seq FROM sqlite_sequence WHERE name = @sequence), 0)) AS ${this.dialect.ident('max')} FROM ${this.table}`,
        params: [{ name: 'sequence', kind: 'string', value: sequence }]
      }
    }
    return { text: `SELECT MAX(${this.col(this.id)}) AS ${this.dialect.ident('max')} FROM ${this.table}${hint}`, params: [] }
  }

  /**
   * SQL Server, inside a transaction: an exclusive application lock on a name (sp_getapplock), held
   * until the transaction ends; `rc` below 0 when it was not granted within the timeout. Two writes
   * of one unique value that no index guards take turns this way; a range lock on a column without
   * an index would lock the whole table and deadlock with the row lock an update already holds.
   */
  appLock (resource: string, timeoutMs: number): Statement {
    return {
      text: "DECLARE @rc int; EXEC @rc = sp_getapplock @Resource = @resource, @LockMode = N'Exclusive', @LockOwner = N'Transaction', @LockTimeout = @timeout; SELECT @rc AS [rc]",
      params: [{ name: 'resource', kind: 'string', value: resource, type: 'nvarchar(255)' }, { name: 'timeout', kind: 'integer', value: timeoutMs, type: 'int' }]
    }
  }

  /** Inserts one row and returns it (aliased like every select). `values` are stored values (ResourceStorage.toDb). */
  insert (values: Record<string, SqlValue>): Statement {
    const params = new Params()
    const fields = Object.keys(values)
    const placeholders = fields.map((f) => this.param(params, this.s(f), values[f], false))
    // mapping.defaults: unmapped columns every create fills
    const extra = this.storage.insertDefaults.map((d) => this.param(params, d.storage, d.stored, false))
    return { text: this.text(`insert ${fields.join(',')}`, () => this.insertText(fields, placeholders, extra)), params: params.list }
  }

  private insertText (fields: string[], placeholders: string[], extra: string[]): string {
    const cols = [...fields.map((f) => this.col(f)), ...this.storage.insertDefaults.map((d) => this.dialect.ident(d.storage.column))]
    const head = cols.length === 0 ? null : { cols: cols.join(', '), vals: [...placeholders, ...extra].join(', ') }
    if (this.dialect.name === 'sqlite') {
      const body = head === null ? 'DEFAULT VALUES' : `(${head.cols}) VALUES (${head.vals})`
      return `INSERT INTO ${this.table} ${body} RETURNING ${this.selectList}`
    }
    // OUTPUT without INTO fails on a table that has triggers (error 334), and customers' picking
    // tables often do: capture the new id in a table variable, then read the row back by it.
    const idType = this.s(this.id).paramType ?? 'bigint'
    // a text key (materials keyed by their number) compares with the column: the same collation, or a collation conflict
    const collation = this.s(this.id).info?.collation
    const collate = this.s(this.id).def.kind === 'string' && collation !== undefined ? ` COLLATE ${collation}` : ''
    const output = `OUTPUT INSERTED.${this.col(this.id)} INTO @inserted`
    const body = head === null ? `${output} DEFAULT VALUES` : `(${head.cols}) ${output} VALUES (${head.vals})`
    return `DECLARE @inserted TABLE ([id] ${idType}${collate}); ` +
      `INSERT INTO ${this.table} ${body}; ` +
      `SELECT ${this.selectList} FROM ${this.table} WHERE ${this.comparable(this.id)} = (SELECT TOP (1) [id] FROM @inserted)`
  }

  /**
   * Inserts several rows in one statement, without returning them (seeding). The caller keeps
   * `rows.length * fields.length` under the dialect's parameter limit (SQL Server: 2100).
   */
  insertMany (fields: string[], rows: Array<Record<string, SqlValue>>): Statement {
    const params = new Params()
    const cols = fields.map((f) => this.col(f)).join(', ')
    const tuples = rows.map((row) => `(${fields.map((f) => this.param(params, this.s(f), row[f] ?? null, false)).join(', ')})`)
    return { text: `INSERT INTO ${this.table} (${cols}) VALUES ${tuples.join(', ')}`, params: params.list }
  }

  /** Sets the given fields of one row (stored values). */
  update (id: SqlValue, values: Record<string, SqlValue>): Statement {
    const fields = Object.keys(values)
    if (fields.length === 0) throw new Error('update without fields')
    const params = new Params()
    const placeholders = fields.map((f) => this.param(params, this.s(f), values[f], false))
    const where = this.idWhere(params, id)
    const set = () => fields.map((f, i) => `${this.col(f)} = ${placeholders[i]}`).join(', ')
    return { text: this.text(`update ${fields.join(',')} ${where}`, () => `UPDATE ${this.table} SET ${set()} WHERE ${where}`), params: params.list }
  }

  delete (id: SqlValue): Statement {
    const params = new Params()
    const where = this.idWhere(params, id)
    return { text: this.text(`delete ${where}`, () => `DELETE FROM ${this.table} WHERE ${where}`), params: params.list }
  }

  /** The row with this id: a text key in a padded CHAR column compared as reads show it (SQLite; SQL Server ignores the padding itself). */
  private idWhere (params: Params, id: SqlValue): string {
    const s = this.s(this.id)
    const padded = s.padded && s.def.kind === 'string' && this.dialect.name === 'sqlite'
    // a legacy text/ntext key compares through (n)varchar(max): = on it is error 402
    const { expr, value } = this.shownText(s, this.comparable(this.id), padded, false)
    const type = this.paramType(s, id)
    const p = params.named('id', s.def.kind, value(id), type)
    // a non-ASCII key of a varchar column travels as nvarchar: cast back to the column's code page, as
    // filters are, or the column is converted and its index scanned (under UPDLOCK too, by every write)
    // SQLite: a text key on a column without a declared type may hold a number another program stored
    // (12), which reads show as '12' and = '12' does not find: the number is compared too, as filters do
    const shown = s.def.kind === 'string' && this.untypedSqlite(s) ? numberShownAs(id) : undefined
    if (shown !== undefined) return `${expr} IN (${p}, ${params.named('idNumber', 'number', shown)})`
    if (!padded) return `${expr} = ${this.inColumnCodePage(s, value(id), type, p)}`
    // the value with any padding lies between the value and the value padded to the column's width:
    // a range the key's index can seek, before RTRIM (which no index covers) decides
    const to = params.named('idTo', 'string', `${String(value(id))}${' '.repeat(s.info?.maxLength !== undefined && s.info.maxLength > 0 ? s.info.maxLength : 255)}`)
    return `${this.col(this.id)} BETWEEN ${p} AND ${to} AND ${expr} = ${p}`
  }

  private condition (f: Filter, params: Params): string {
    const s = this.s(f.field)
    if (s.absent) this.col(f.field)
    // SQL Server converts the text compared with a uniqueidentifier to one: other text is error 8169 ([like] compares text)
    if (s.guid && f.op !== 'like' && f.op !== 'notlike') {
      const bad = f.values.find((v) => typeof v === 'string' && !isGuid(v))
      if (bad !== undefined) throw new BadQueryError(`Invalid value for '${f.field}': ${guidExpected(f.field, String(bad)).replace(`'${f.field}' `, '')}`)
    }
    if (s.map !== undefined) return this.mappedCondition(f, s, params)
    if (s.def.kind === 'datetime') return this.timeCondition(f, s, params)
    // a flag in a number column reads true for any value but 0 (storage), and filters the same way
    if (this.numericFlag(s)) return this.numericFlagCondition(f, this.col(f.field))
    if (this.flagInText(s)) return this.numericFlagCondition(f, SQLITE_FLAG(this.col(f.field)))
    // a CHAR(n) value without its padding ('ST ' is the 'ST' the API shows; the sort compares it so too,
    // sortValueKind 'trim'), a caseless field (usernames) regardless of case and of trailing blanks,
    // as SQL Server compares them (a username never ends in one; a legacy program's 'Schulz ' is Schulz) ([like] as it is)
    const fold = s.def.caseless === true && f.op !== 'like' && f.op !== 'notlike'
    const { expr: c, value } = this.numberInText(s)
      ? { expr: SQLITE_NUMBER(this.col(f.field)), value: (v: SqlValue) => v }
      : this.shownText(s, this.comparable(f.field), s.padded || fold, fold)
    // a caseless field's value as a create or login spells it: ?username=Admin%20 or a full-width ａdmin finds what the login finds
    const spelled = fold ? (v: SqlValue): SqlValue => typeof v === 'string' ? spelledCaseless(v) : v : (v: SqlValue): SqlValue => v
    const operand = (v: SqlValue): SqlValue => value(this.operand(s, spelled(v)))
    const p = (i = 0): string => this.param(params, s, operand(f.values[i]))
    // SQLite: a text field on a column without a declared type shows a number another program stored
    // there (12) as its text ('12'), which = '12' does not find: the number is compared too
    // (a text id too, as idWhere compares it: ?id=12 finds the row /api/materials/12 reads)
    const shownNumbers = this.keepsNumbers(s) ? f.values.map(numberShownAs).filter((n) => n !== undefined) : []
    const list = (): string => [...f.values.map((v) => this.param(params, s, operand(v))), ...shownNumbers.map((n) => params.add('number', n))].join(', ')
    if (shownNumbers.length > 0) {
      if (f.op === 'eq') return `${c} IN (${list()})`
      if (f.op === 'not') return `(${c} NOT IN (${list()}) OR ${c} IS NULL)`
    }
    switch (f.op) {
      case 'eq': return f.values[0] === null ? `${c} IS NULL` : `${c} = ${p()}`
      case 'gt': return `${c} > ${p()}`
      case 'gte': return `${c} >= ${p()}`
      case 'lt': return `${c} < ${p()}`
      case 'lte': return `${c} <= ${p()}`
      // The negations also match NULL (see Filter in list-query.ts).
      case 'not': return `(${c} <> ${p()} OR ${c} IS NULL)`
      case 'like': return this.unicodeLike(f) ? `unicode_like(${c}, ${this.likeParam(f, s, params)}) = 1` : `${this.likeOperand(s, c)} LIKE ${this.likeParam(f, s, params)} ${ESCAPE}`
      case 'notlike': return this.unicodeLike(f) ? `(unicode_like(${c}, ${this.likeParam(f, s, params)}) = 0 OR ${c} IS NULL)` : `(${this.likeOperand(s, c)} NOT LIKE ${this.likeParam(f, s, params)} ${ESCAPE} OR ${c} IS NULL)`
      case 'or': return `${c} IN (${list()})`
      case 'nor': return `(${c} NOT IN (${list()}) OR ${c} IS NULL)`
      case 'null': return `${c} IS NULL`
      case 'notnull': return `${c} IS NOT NULL`
    }
  }

  /**
   * A flag kept in a number column, as reading shows it: any value but 0 is true. Legacy programs
   * (VB, Access, Delphi) store True as -1, which `= 1` would never find. The order operators
   * compare as the API orders flags (false < true), as sorting does. `c`: the column, or what reads show of it (SQLITE_FLAG).
   */
  private numericFlagCondition (f: Filter, c: string): string {
    const is = (v: SqlValue): string => v === true ? `${c} <> 0` : `${c} = 0`
    const isNot = (v: SqlValue): string => `(${v === true ? `${c} = 0` : `${c} <> 0`} OR ${c} IS NULL)`
    const both = new Set(f.values).size === 2
    const none = '1 = 0'
    const v = f.values[0]
    switch (f.op) {
      case 'eq': return v === null ? `${c} IS NULL` : is(v)
      case 'not': return isNot(v)
      case 'or': return both ? `${c} IS NOT NULL` : is(v)
      case 'nor': return both ? `${c} IS NULL` : isNot(v)
      case 'gt': return v === true ? none : is(true)
      case 'gte': return v === true ? is(true) : `${c} IS NOT NULL`
      case 'lt': return v === true ? is(false) : none
      case 'lte': return v === true ? `${c} IS NOT NULL` : is(false)
      case 'null': return `${c} IS NULL`
      case 'notnull': return `${c} IS NOT NULL`
      case 'like':
      case 'notlike':
        throw new BadQueryError(`Filter '${f.field}': [${f.op}] works only on text fields`)
    }
  }

  /** A filter operand as the column holds it. */
  private operand (s: FieldStorage, v: SqlValue): SqlValue {
    if (v === null) return v
    if (s.def.kind === 'string' && (s.category === 'integer' || s.category === 'decimal' || s.category === 'float')) {
      if (typeof v !== 'string' || !/^-?\d+(?:\.\d+)?$/.test(v)) throw new BadQueryError(`Invalid value for '${s.field}': this installation keeps it as a number, got '${String(v)}'`)
      return Number(v)
    }
    if (s.def.kind === 'boolean' && (s.category === 'integer' || s.category === 'decimal')) return v === true ? 1 : 0
    return v
  }

  /** SQLite's LIKE folds only A to Z: a pattern with other characters is matched by unicode_like (sqlite.ts) */
  private unicodeLike (f: Filter): boolean {
    return this.dialect.name === 'sqlite' && /[^\x00-\x7f]/.test(String(f.values[0]))
  }

  /**
   * The column as LIKE sees it. SQL Server ignores trailing blanks in = but not in LIKE on an nchar
   * column (nor on a char one against an nvarchar pattern): `unit=[like]%c` would miss the 'pc ' a
   * CHAR(3) holds, which reads show as 'pc'. SQLite's operand is already trimmed (shownText).
   */
  private likeOperand (s: FieldStorage, c: string): string {
    return s.padded && this.dialect.name === 'mssql' ? `RTRIM(${c})` : c
  }

  private likeParam (f: Filter, s: FieldStorage, params: Params): string {
    const pattern = this.dialect.escapeLikePattern(String(f.values[0]))
    return params.add('string', pattern, s.category === 'text' || s.category === 'ntext' ? this.paramType(s, pattern) : undefined)
  }

  /**
   * A text column compared as reads show it (ResourceStorage.fromDb): `trim` without trailing
   * spaces, `fold` regardless of case. The expression for the column and what a value compared with
   * it becomes. SQL Server ignores trailing spaces by itself, and case too under its usual (CI)
   * collations; under a CS or binary one both sides are upper-cased. SQLite compares exactly:
   * RTRIM(col) and the value trimmed, COLLATE NOCASE; a caseless field (usernames) through
   * unicode_fold (sqlite.ts), as NOCASE folds A to Z only.
   */
  private shownText (s: FieldStorage, c: string, trim: boolean, fold: boolean): { expr: string, value: (v: SqlValue) => SqlValue } {
    if (this.dialect.name === 'sqlite') {
      // RTRIM() of the bare column compares in BINARY: the column's own collation (NOCASE) only where written out
      const declared = s.info?.declaredCollation
      const trimmed = trim ? `RTRIM(${declared !== undefined && c === this.col(s.field) ? `${c} COLLATE ${declared}` : c}, ' ')` : c
      if (fold && s.def.caseless === true) {
        return { expr: `unicode_fold(${trimmed})`, value: (v) => typeof v === 'string' ? (trim ? v.replace(/ +$/, '') : v).toLowerCase() : v }
      }
      const expr = `${trimmed}${fold ? ' COLLATE NOCASE' : ''}`
      return { expr, value: trim ? (v) => typeof v === 'string' ? v.replace(/ +$/, '') : v : (v) => v }
    }
    if (fold && s.info?.caseSensitive === true) return { expr: `UPPER(${c})`, value: (v) => typeof v === 'string' ? simpleUpper(v) : v }
    return { expr: c, value: (v) => v }
  }

  /**
   * A value-mapped column as its codes are compared, so that filters and sorting find what reads
   * show: text without trailing spaces and regardless of case, unless two values' codes differ
   * only in case (then case counts, in reads too); numbers as they are.
   */
  private codeOperand (s: FieldStorage, c: string): { expr: string, code: (code: SqlValue) => SqlValue[] } {
    if (s.category !== 'text' && s.category !== 'ntext') {
      // SQLite keeps text in a column of any other type (a flag column declared BOOLEAN, NUMERIC or
      // nothing holding 'J', 'j' and 'J '), and reads take such text for its code as in a text column:
      // where the map has text codes, text compares as there, numbers as they are (and seek). A column
      // without a declared type also keeps '1' as text, which reads take for the code 1: there a number
      // code is compared as text too
      const untyped = this.dialect.name === 'sqlite' && sqliteUntyped(s.info?.type.toLowerCase() ?? 'int')
      const textCodes = this.dialect.name === 'sqlite' && [...s.map!.codes.values()].some((codes) => codes.some((code) => typeof this.storage.codeValue(s, code) === 'string'))
      if (!textCodes && !untyped) return { expr: c, code: (code) => [code] }
      return {
        expr: `(CASE WHEN typeof(${c}) = 'text' THEN RTRIM(${c}, ' ') ELSE ${c} END)${s.map!.caseExact ? '' : ' COLLATE NOCASE'}`,
        code: (code) => typeof code === 'string' ? [code.replace(/ +$/, '')] : untyped && typeof code === 'number' ? [code, String(code)] : [code]
      }
    }
    const { expr, value } = this.shownText(s, c, true, !s.map!.caseExact)
    return { expr, code: (code) => [value(code)] }
  }

  /**
   * Filters on a field with a value map compare stored codes: `type=vlm` is `col = 'V'`. A value
   * the map does not know is compared as it is (`blocked=X` is `col = 'X'`), so that rows with
   * unknown codes can be found.
   * The order operators compare the API order (the rank sorting uses).
   */
  private mappedCondition (f: Filter, s: FieldStorage, params: Params): string {
    // a legacy text or ntext column compares through (n)varchar(max): = on it is error 402
    const c = this.comparable(f.field)
    const { expr, code: asCompared } = this.codeOperand(s, c)
    const map = s.map!
    const numeric = s.category === 'integer' || s.category === 'decimal' || s.category === 'float' || s.category === 'bit'
    const codesOf = (v: SqlValue): SqlValue[] => {
      const codes = map.codes.get(String(v))
      if (codes !== undefined) return codes.flatMap((code) => asCompared(this.storage.codeValue(s, code)))
      // not in the map: compare as stored, when the column can hold it at all (SQLite's can hold any
      // value; a SQL Server number column no text, and a text parameter against it would fail)
      const raw = this.storage.codeValue(s, String(v))
      return numeric && typeof raw !== 'number' && this.dialect.name === 'mssql' ? [] : asCompared(raw)
    }
    // each code once: `[or]true;true;…` or two values folding to one code would repeat parameters
    const inList = (all: SqlValue[]): string | null => {
      const codes = [...new Set(all)]
      if (codes.length === 0) return null
      return codes.length === 1 ? `= ${this.param(params, s, codes[0])}` : `IN (${codes.map((code) => this.param(params, s, code)).join(', ')})`
    }
    const rank = (v: SqlValue): string => {
      const i = map.order.findIndex((value) => String(value) === String(v))
      if (i < 0) throw new BadQueryError(`Filter '${f.field}': [${f.op}] compares in the order ${map.order.map((o) => String(o)).join(' < ')}; '${String(v)}' is not one of them`)
      return params.add('integer', i + 1, this.dialect.name === 'mssql' ? 'int' : undefined)
    }
    switch (f.op) {
      case 'eq':
      case 'or': {
        if (f.values[0] === null) return `${c} IS NULL`
        const cond = inList(f.values.flatMap(codesOf))
        return cond === null ? '1 = 0' : `${expr} ${cond}`
      }
      case 'not':
      case 'nor': {
        const cond = inList(f.values.flatMap(codesOf))
        return cond === null ? '1 = 1' : `(${expr} NOT ${cond.startsWith('=') ? `IN (${cond.slice(2)})` : cond} OR ${c} IS NULL)`
      }
      case 'gt': return `${this.sortExpr(f.field, params)} > ${rank(f.values[0])}`
      case 'gte': return `${this.sortExpr(f.field, params)} >= ${rank(f.values[0])}`
      case 'lt': return `${this.sortExpr(f.field, params)} < ${rank(f.values[0])}`
      case 'lte': return `${this.sortExpr(f.field, params)} <= ${rank(f.values[0])}`
      case 'null': return `${c} IS NULL`
      case 'notnull': return `${c} IS NOT NULL`
      case 'like':
      case 'notlike':
        throw new BadQueryError(`Filter '${f.field}': [${f.op}] does not work on a field whose values are translated from codes; use [or] with the values`)
    }
  }

  /**
   * Time filters compare what the API shows. A filter time t (milliseconds, UTC) stands for the
   * stored values the API shows as t: the window [lo, hi) where lo is the first value the column
   * can hold that the API shows as t or later, and hi the same for t + 1 ms. So `[gt] t` is
   * `>= hi`, `[lte] t` is `< hi`, `= t` is `>= lo AND < hi` (nothing when lo = hi: the column
   * cannot hold t). Each bound is a value of the column's own type, so the comparison is exact
   * and can seek: SQL Server's datetime (1/300 s) bounds are the ticks the driver reads back as
   * t; smalldatetime, date and datetime2(0) bounds round up to what they hold; local-time
   * columns take the first wall-clock time at or after t (after the autumn's repeated hour,
   * whose times read as the first occurrence). Columns that hold exactly milliseconds in UTC
   * (datetime2(3), SQLite) compare t itself.
   */
  private timeCondition (f: Filter, s: FieldStorage, params: Params): string {
    const format = s.timeFormat
    const sqlite = this.dialect.name === 'sqlite' && format === undefined
    const c = sqlite ? SQLITE_TIME(this.col(f.field)) : this.col(f.field)
    // a formatted column (Unix time, digits) compares its own numbers or digits, which keep time's order
    const bound = (date: Date): string => format !== undefined
      ? this.param(params, s, this.storage.formattedTime(s, format, date, false))
      : sqlite
        ? params.add('string', date.toISOString())
        : params.add('datetime', date, s.paramType)
    const plain = format === undefined && s.timeZone === undefined && (sqlite || s.resolutionMs === 1)
    // the first value the column holds shown at t or later; undefined: none, t is past the column's last value
    const first = (t: number): Date | undefined => this.storage.firstStoredAtOrAfter(s, t)
    const window = (v: SqlValue): { lo: Date | undefined, hi: Date | undefined } => {
      const t = (v as Date).getTime()
      return { lo: first(t), hi: first(t + 1) }
    }
    const atOrAfter = (d: Date | undefined): string => d === undefined ? '1 = 0' : `${c} >= ${bound(d)}`
    const before = (d: Date | undefined): string => d === undefined ? `${c} IS NOT NULL` : `${c} < ${bound(d)}`
    const eq = (v: SqlValue): string => {
      if (plain) return `${c} = ${bound(v as Date)}`
      const { lo, hi } = window(v)
      if (lo === undefined || lo.getTime() === hi?.getTime()) return '1 = 0'
      return hi === undefined ? atOrAfter(lo) : `(${c} >= ${bound(lo)} AND ${c} < ${bound(hi)})`
    }
    const ne = (v: SqlValue): string => {
      if (plain) return `(${c} <> ${bound(v as Date)} OR ${c} IS NULL)`
      const { lo, hi } = window(v)
      if (lo === undefined || lo.getTime() === hi?.getTime()) return '1 = 1'
      return hi === undefined ? `(${c} < ${bound(lo)} OR ${c} IS NULL)` : `(${c} < ${bound(lo)} OR ${c} >= ${bound(hi)} OR ${c} IS NULL)`
    }
    const v = f.values[0]
    const at = (): Date => v as Date
    switch (f.op) {
      case 'eq': return v === null ? `${this.col(f.field)} IS NULL` : eq(v)
      case 'not': return ne(v)
      case 'gt': return plain ? `${c} > ${bound(at())}` : atOrAfter(window(v).hi)
      case 'gte': return plain ? `${c} >= ${bound(at())}` : atOrAfter(window(v).lo)
      case 'lt': return plain ? `${c} < ${bound(at())}` : before(window(v).lo)
      case 'lte': return plain ? `${c} <= ${bound(at())}` : before(window(v).hi)
      case 'or': return `(${f.values.map(eq).join(' OR ')})`
      case 'nor': return `(${f.values.map(ne).join(' AND ')})`
      case 'null': return `${this.col(f.field)} IS NULL`
      case 'notnull': return `${this.col(f.field)} IS NOT NULL`
      case 'like':
      case 'notlike':
        throw new BadQueryError(`Filter '${f.field}': [${f.op}] works only on text fields`)
    }
  }

  /**
   * Rows strictly after the keyset position `after` (the previous page's last row's sort values,
   * as stored) in the order `sort`. Both dialects sort NULL first ascending and last descending;
   * so after a non-null x, ASC means `> x` and DESC means `< x OR IS NULL`; after a NULL, ASC
   * means `IS NOT NULL` and DESC means nothing (NULLs are last). Equality on the earlier keys
   * includes `IS NULL`. The NULL branches are left out for columns declared NOT NULL: an
   * `OR col IS NULL` keeps SQLite from seeking on the column's index.
   */
  private keyset (sort: SortKey[], after: SqlValue[], params: Params): string {
    const ref = (i: number): string | null => {
      const v = after[i]
      if (v === null) return null
      const s = this.s(sort[i].field)
      switch (this.sortValueKind(sort[i].field)) {
        // a rank and a flag's 0 or 1 are small whole numbers
        case 'rank':
        case 'flag':
        case 'flag-text': return params.add('integer', v, this.dialect.name === 'mssql' ? 'int' : undefined)
        case 'time-text': return params.add('string', v)
        case 'number-text': return params.add('number', v)
        // the folded text the cursor kept (or a number another program stored there, compared as it is)
        case 'fold':
        case 'trim': return params.add(typeof v === 'number' ? 'number' : 'string', v)
        default: return this.param(params, s, v)
      }
    }
    const refs = after.map((_, i) => ref(i))
    const exprs = sort.map((k) => this.sortExpr(k.field, params))
    // a number in a text column reads NULL where the text is no number, whatever the column declares; so does a flag in an untyped one
    const nullable = (i: number): boolean => this.s(sort[i].field).nullable || ['number-text', 'flag-text'].includes(this.sortValueKind(sort[i].field))
    const disjuncts: string[] = []
    for (let i = 0; i < sort.length; i++) {
      const c = exprs[i]
      const r = refs[i]
      let beyond: string | null
      if (r === null) beyond = sort[i].desc ? null : `${c} IS NOT NULL`
      else if (sort[i].desc) beyond = nullable(i) ? `(${c} < ${r} OR ${c} IS NULL)` : `${c} < ${r}`
      else beyond = `${c} > ${r}`
      if (beyond !== null) {
        const equal = sort.slice(0, i).map((_, j) => refs[j] === null ? `${exprs[j]} IS NULL` : `${exprs[j]} = ${refs[j]}`)
        disjuncts.push(equal.length === 0 ? beyond : `(${[...equal, beyond].join(' AND ')})`)
      }
    }
    // every key NULL and descending (NULLs sort last): nothing follows. Only a cursor that holds a NULL
    // for each key ORDER BY keeps can say so (a nullable text key that is also the id); `()` is no condition
    if (disjuncts.length === 0) return '1 = 0'
    const keyset = disjuncts.length === 1 ? disjuncts[0] : `(${disjuncts.join(' OR ')})`
    // The same bound on the first key alone is redundant, but it is the part an index can seek
    // on: each page then starts where the last one ended instead of filtering from the top.
    if (sort.length === 1) return keyset
    const c = exprs[0]
    let leading: string | null
    if (refs[0] === null) leading = sort[0].desc ? `${c} IS NULL` : null
    else if (!sort[0].desc) leading = `${c} >= ${refs[0]}`
    else leading = nullable(0) ? `(${c} <= ${refs[0]} OR ${c} IS NULL)` : `${c} <= ${refs[0]}`
    return leading === null ? keyset : `${leading} AND ${keyset}`
  }
}
