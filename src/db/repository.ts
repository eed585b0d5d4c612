// One resource's reads and writes over a Database, in API shape: rows keyed by API field, typed by kind.
import { createHash } from 'node:crypto'
import { dialectFor } from './dialect.js'
import { checkExpression, faultToError, foreignKeysTo, namesIn } from './data-errors.js'
import { AmbiguousIdError, BadQueryError, ConflictError, ConstraintViolationError, DatabaseBusyError, DatabaseUnavailableError, DataFaultError, InvalidValueError, NotFoundError, PreconditionFailedError, ReadOnlyError } from './errors.js'
import { decodeCursor, encodeCursor, invalidCursor, parseIsoDateTime, type CursorValueType, type Filter, type ListQuery } from './list-query.js'
import { idField, isPathId, MAX_PATH_PARAM_LENGTH } from './resources.js'
import { hiddenCharacter } from '../../schemas/common.js'
import { SqlBuilder, sortAlias } from './sql.js'
import { INTEGER_RANGES, isGuid, ResourceStorage, type StorageOptions } from './storage.js'
import type { ColumnInfo, Database, Executor, FieldDef, ResourceDef, Row, SqlValue, Statement, TableMapping } from './types.js'

export interface ListResult {
  rows: Row[]
  /** only when the query asked for a count */
  total?: number
  /** the cursor of the next page; absent on the last page */
  next?: string
}

export interface WriteOptions {
  /** called with the current row inside the transaction; false means 412 (If-Match did not match) */
  check?: (current: Row) => boolean
}

export interface CreateOptions {
  /**
   * Runs inside the insert's transaction, before the insert: a rule that must still hold when the
   * row is written (the licence count); it throws to refuse. Without it the insert is one statement.
   */
  guard?: (tx: Executor) => Promise<void>
}

export interface UpdateOptions extends WriteOptions {
  /** set modifiedAt to now (default true); false for bookkeeping such as lastLoginAt */
  touch?: boolean
  /** runs inside the transaction with the locked current row, after `check`: a rule that must still hold; throws to refuse */
  guard?: (current: Row, tx: Executor) => Promise<void>
}

/**
 * Whether the row (as the API shows it) already holds `value` (an API value) in `field`. A flag shown
 * false for anything but true (a user's `enabled` holding NULL or a code no value map knows) shows false.
 */
function showsValue (row: Row, field: string, value: unknown, def?: ResourceDef): boolean {
  const current = row[field]
  if (value === false && def?.fields[field]?.unknownIsFalse === true) return current !== true
  return value instanceof Date ? current === value.toISOString() : current === value
}

/**
 * An update's stored values without the fields sent as the row already shows them: those stay as
 * stored. An edit form posts the whole row back; what the API could not show (a BLOB or '1,5' in a
 * number column, both shown as null) or shows trimmed (a CHAR's padding) must not be overwritten
 * by the form's copy of it while another field changes. Always a copy: a transaction that runs
 * again (a deadlock victim) compares afresh with the row as it is then.
 */
function changedOnly (vals: Record<string, SqlValue>, values: Row, row: Row, def: ResourceDef, storedAs?: (field: string, shown: unknown) => SqlValue | undefined): Record<string, SqlValue> {
  const out: Record<string, SqlValue> = {}
  for (const field in vals) {
    if (showsValue(row, field, values[field], def)) continue
    // a code kept as a number: '007' and '3.50' are stored as the row's 7 and 3.5, which it shows as '7' and '3.5';
    // a GUID as SQL Server reads it back: '{6f9619ff-…}' is the row's '6F9619FF-…'
    if (storedAs !== undefined && vals[field] !== null && storedAs(field, row[field]) === vals[field]) continue
    out[field] = vals[field]
  }
  return out
}

export interface RepositoryOptions extends StorageOptions {
  /** the table's columns as the database declares them (learned at start); without them every column counts as nullable */
  columns?: ColumnInfo[]
  /** singular noun for messages ('material'); default: the resource name without its last letter */
  noun?: string
}

export type Id = number | string

/**
 * The mapper of one resource: a driver row in API shape, built as one object literal with each
 * field read by its key (the API name a select aliases it to, or its place in a row of values).
 * V8 then gives every row the same hidden class and each read its own call site; a loop over
 * [field, reader] pairs made every load and store a keyed, megamorphic one (a page of 100 rows:
 * 62-69 us against 13 us). Field names come from the resource definitions, not from
 * configuration, and are written as JSON string literals.
 */
export function compileMapper<R extends Row | unknown[]> (readers: Array<[field: string, read: (raw: unknown) => unknown, key: string | number]>): (raw: R) => Row {
  if (readers.some(([field]) => field === '__proto__')) throw new Error('a field may not be named __proto__')
  const fields = readers.map(([field, , key], i) => `${JSON.stringify(field)}: r${i}(raw[${JSON.stringify(key)}])`)
  const make = new Function(...readers.map((_, i) => `r${i}`), `return function mapRow (raw) { return { ${fields.join(', ')} } }`)
  return make(...readers.map(([, read]) => read)) as (raw: R) => Row
}

/**
 * On a listed row (SQLite): the text fields whose column has no declared type and holds a number there
 * (12, shown as '12'), with that number. SQLite's ORDER BY puts numbers before all text, which the
 * station list sorted in memory follows by it (live-list.ts); set only where its query asks (ListQuery.storedNumbers).
 */
export const STORED_NUMBERS = Symbol('stored numbers')

/**
 * A keyset value as a database may take it for another: text without trailing blanks, case, accents or width
 * ('A-1' = 'a-1 ', 'Müller' = 'MULLER', 'Maß' = 'MASS'), as SQL Server's usual collations compare (SQLite's
 * NOCASE and RTRIM less). Coarser than any one column's collation: a page that ends before such rows ends
 * a little early where the column tells them apart, never between rows its next cursor would pass over.
 */
const comparedText = (v: unknown): unknown => typeof v === 'string' ? v.normalize('NFKD').replace(/\p{M}/gu, '').toUpperCase().toLowerCase().replace(/ +$/, '') : v

export class Repository {
  /** the resource as defined; `def` is it as this table has it (text ids where the key column holds text) */
  private readonly baseDef: ResourceDef
  storage: ResourceStorage
  sql: SqlBuilder
  private readonly db: Database
  private readonly mapping: TableMapping
  private readonly id: string
  private readonly uniqueFields: string[]
  /** unique fields whose duplicates the table's index misses: no unique index on the column, padded text on SQLite, caseless text where case counts */
  private selfChecked: string[] = []
  /** what a write with a guard (the licence's) looks up itself: every mapped unique field, and the self-checked ones */
  private guardedUnique: string[] = []
  /** the id column has no unique index of its own (one column of a composite key): rows may share an id, and a page must not end between them */
  private idShared = false
  private readonly opts: RepositoryOptions
  private readonly noun: string
  /** a driver row in API shape: compiled per resource (see compileMapper), run for every row */
  private mapRow: (raw: Row) => Row = () => ({})
  /** the same for a row of values in select-list order (Database.queryValues) */
  private mapValues: (raw: unknown[]) => Row = () => ({})
  /** each field's place in a select's values */
  private selectIndex = new Map<string, number>()
  /** what a create fills in: [field, default] of writable stored fields with one (and read-only ones whose column must be given), and the time stamps kept */
  private createDefaults: Array<[string, unknown]> = []
  private stamps: Array<'createdAt' | 'modifiedAt'> = []
  /**
   * text fields an update compares as stored (changedOnly): those kept in number columns (a warehouse
   * code as an int), and SQL Server's GUIDs, which it reads back upper-case without braces
   */
  private comparedAsStored = new Set<string>()
  /** SQLite: text fields (a text id too) on columns without a declared type, which keep a number as a number (STORED_NUMBERS) */
  private numbersShownAsText: Array<{ field: string, index: number }> = []
  /** fields an insert must give: the column has no default */
  private required: string[] = []
  /** SQLite: a trigger may change the row after its insert, which RETURNING does not show; the create reads it back */
  private readBack = false
  /** SQLite: a FAIL in the schema may keep a failed insert's row (ColumnInfo.failKeepsChanges): creates run in a transaction */
  private atomicCreate = false
  /** SQL Server: an INSTEAD OF trigger makes the inserts (ColumnInfo.insteadOf): a create finds its row by its unique value */
  private insteadOf = false
  /** SQLite: ids beyond 2^53 (ColumnInfo.wideValues): list pages read integers exactly, so their cursors are exact */
  private exactIntegers = false
  /** SQLite's change count tells a write a trigger skipped (RAISE(IGNORE)): not through a view, whose INSTEAD OF triggers it does not count */
  private countsChanges = false
  /** the steps the modified-time column stores times in (ResourceStorage's resolutionMs; 1 without the column) */
  modifiedResolutionMs = 1
  /** the IANA zone of a modifiedAt column that holds local wall-clock time */
  modifiedTimeZone: string | undefined = undefined
  /** how far the database server's clock is behind the gateway's (0 when not, or on SQLite): serverTime is set back by as much */
  clockBehindMs = 0
  /** the ids the id column can hold, when narrower than a path's (an int column: up to 2^31 - 1) */
  private idRange: [number, number] | undefined
  /** the id column is a GUID column: an id that is no GUID names no row (names) */
  private guidIds = false

  constructor (db: Database, def: ResourceDef, mapping: TableMapping, opts: RepositoryOptions = {}) {
    this.db = db
    this.mapping = mapping
    this.baseDef = def
    this.opts = opts
    this.noun = opts.noun ?? def.name.replace(/s$/, '')
    this.id = idField(def)
    this.uniqueFields = Object.keys(def.fields).filter((f) => def.fields[f].unique === true && f !== this.id)
    this.storage = new ResourceStorage(db.dialect, def, mapping, opts.columns, opts)
    this.sql = new SqlBuilder(dialectFor(db.dialect), this.storage)
    this.compile()
  }

  /** Takes the table's columns as the database declares them (learned later when it was down at start). */
  adopt (columns: ColumnInfo[]): void {
    this.storage = new ResourceStorage(this.db.dialect, this.baseDef, this.mapping, columns, this.opts)
    this.sql = new SqlBuilder(dialectFor(this.db.dialect), this.storage)
    this.compile()
  }

  /** Reads the table's columns from the database (one-shot commands; the server learns them at start). */
  async learn (): Promise<this> {
    this.adopt(await this.db.columns(this.mapping))
    return this
  }

  private compile (): void {
    const sqlite = this.db.dialect === 'sqlite'
    this.idShared = this.storage.fields[this.id]?.info?.unique !== true
    // a SQLite column UNIQUE ON CONFLICT REPLACE refuses no duplicate: a write of a value another row holds
    // deletes that row (and what its foreign keys cascade to) without an error, so every field on one is looked up
    const replacing = Object.values(this.storage.fields).filter((s) => !s.absent && s.info?.replacesDuplicates === true && s.field !== this.id && !this.uniqueFields.includes(s.field)).map((s) => s.field)
    this.selfChecked = [...this.uniqueFields, ...replacing].filter((f) => {
      const s = this.storage.fields[f]
      if (s === undefined || s.absent) return false
      // no unique index on the column alone (a legacy table with a plain index, or a composite one), or one that replaces
      if (s.info !== undefined && (s.info.unique !== true || s.info.replacesDuplicates === true)) return true
      // SQLite: a column without a declared type keeps 12 and '12' apart, which the API shows alike
      return (sqlite && s.padded) || this.sql.numberShownAsText(s) || (this.def.fields[f].caseless === true && (sqlite || s.info?.caseSensitive === true))
    })
    this.guardedUnique = [...new Set([...this.uniqueFields.filter((f) => this.has(f)), ...this.selfChecked])]
    const readers = Object.values(this.storage.fields).map((s) => [s.field, this.storage.reader(s)] as const)
    this.selectIndex = new Map(this.sql.selectFields.map((field, i) => [field, i]))
    this.mapRow = compileMapper(readers.map(([field, read]) => [field, read, field]))
    this.mapValues = compileMapper(readers.map(([field, read]) => [field, read, this.selectIndex.get(field)!]))
    this.createDefaults = this.storage.apiDefaulted().map((s) => [s.field, s.def.default])
    this.stamps = (['createdAt', 'modifiedAt'] as const).filter((f) => this.has(f))
    this.comparedAsStored = new Set(Object.values(this.storage.fields)
      .filter((s) => !s.absent && s.def.kind === 'string' && (['integer', 'decimal', 'float'].includes(s.category) || (s.guid && !sqlite))).map((s) => s.field))
    this.numbersShownAsText = Object.values(this.storage.fields).filter((s) => !s.absent && this.sql.keepsNumbers(s)).map((s) => ({ field: s.field, index: this.selectIndex.get(s.field)! }))
    this.required = Object.values(this.storage.fields).filter((s) => s.required).map((s) => s.field)
    this.readBack = sqlite && this.storage.columns?.some((c) => c.changedAfterInsert === true) === true
    this.atomicCreate = sqlite && this.storage.columns?.some((c) => c.failKeepsChanges === true) === true
    this.insteadOf = !sqlite && this.storage.columns?.some((c) => c.insteadOf === true) === true
    this.countsChanges = sqlite && this.storage.columns?.some((c) => c.viewWrites !== undefined) !== true
    this.modifiedResolutionMs = this.has('modifiedAt') ? this.storage.field('modifiedAt').resolutionMs : 1
    this.modifiedTimeZone = this.has('modifiedAt') ? this.storage.field('modifiedAt').timeZone : undefined
    this.exactIntegers = this.storage.field(this.id).info?.wideValues === true
    // SQLite's integers are 64 bits whatever the declared type
    const idType = this.db.dialect === 'mssql' ? this.storage.field(this.id).info?.type.toLowerCase() : undefined
    this.idRange = idType === undefined ? undefined : INTEGER_RANGES[idType]
    this.guidIds = this.storage.field(this.id).guid
  }

  /** An id its column cannot hold names no row: a 404, not a driver's refusal of the parameter (or SQL Server's of a GUID, error 8169). */
  private names (id: Id): boolean {
    if (this.guidIds) return typeof id === 'string' && isGuid(id)
    const range = this.idRange
    return range === undefined || (Number(id) >= range[0] && Number(id) <= range[1])
  }

  get def (): ResourceDef {
    return this.storage.def
  }

  get readOnly (): boolean {
    return this.storage.readOnly
  }

  /** Checks and converts values from a caller (API-shaped or JS-typed) into stored values. */
  private input (values: Row, refused?: Map<string, InvalidValueError>): Record<string, SqlValue> {
    const out: Record<string, SqlValue> = {}
    for (const [field, value] of Object.entries(values)) {
      if (value === undefined) continue
      const def = Object.hasOwn(this.def.fields, field) ? this.def.fields[field] : undefined
      if (def === undefined) throw new BadQueryError(`Unknown field '${field}'`)
      if (def.id === true) throw new BadQueryError(`Field '${field}' cannot be set`)
      const s = this.storage.field(field)
      let stored: SqlValue
      try {
        stored = this.storage.toDb(s, this.convert(field, def, value))
      } catch (err) {
        // an update decides once it has read the row (the value may be the one the row shows)
        if (refused === undefined || !(err instanceof InvalidValueError)) throw err
        refused.set(field, err)
        continue
      }
      // a field without a column takes null (and only null) and is left out of the statement
      if (!s.absent) out[field] = stored
    }
    return out
  }

  /**
   * A create's stored values (input). A refused value the request did not give, the API's default that this
   * picking system's column cannot take ("pcs" in a CHAR(2) unit), is said as such: the client sent no unit.
   * The fields are looked at again only when a value was refused.
   */
  private createInput (values: Row, given: Row): Record<string, SqlValue> {
    try {
      return this.input(given)
    } catch (err) {
      if (!(err instanceof InvalidValueError)) throw err
      const refused = new Map<string, InvalidValueError>()
      this.input(given, refused)
      const [field, first] = refused.entries().next().value ?? []
      if (field === undefined || first === undefined || values[field] !== undefined || !this.createDefaults.some(([f]) => f === field)) throw err
      throw new InvalidValueError(`${first.message}; the request gave no ${field}, so the API's default was used (${field} ${JSON.stringify(given[field])}): send a value the picking system takes`, { cause: first })
    }
  }

  private convert (field: string, def: FieldDef, value: unknown): SqlValue {
    if (value === null) return null
    const bad = (): InvalidValueError => new InvalidValueError(`Invalid value for '${field}': expected ${def.kind}`)
    switch (def.kind) {
      case 'string':
        if (typeof value !== 'string') throw bad()
        return value
      case 'integer':
        if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw bad()
        return value
      case 'number':
        if (typeof value !== 'number' || !Number.isFinite(value)) throw bad()
        return value
      case 'boolean':
        if (typeof value !== 'boolean') throw bad()
        return value
      case 'datetime': {
        const d = value instanceof Date ? value : typeof value === 'string' ? parseIsoDateTime(value) : undefined
        if (d === undefined || Number.isNaN(d.getTime())) throw bad()
        return d
      }
    }
  }

  private writable (): void {
    if (this.readOnly) throw new ReadOnlyError(`${this.def.name} are read-only in this installation`)
  }

  /**
   * The keyset values of a driver row for the cursor: each sort key's stored value. In a row of
   * values, a key whose value is not its column's comes after the select list (SqlBuilder.list).
   */
  private cursorOf (q: ListQuery, raw: Row | unknown[], as: (value: unknown) => unknown = (v) => v): string {
    let extra = this.sql.selectFields.length
    return encodeCursor(q.sort, q.sort.map((k, i) => {
      const column = this.sql.sortValueKind(k.field) === 'column'
      if (Array.isArray(raw)) return as(column ? raw[this.selectIndex.get(k.field)!] : raw[extra++])
      return as(column ? raw[k.field] : raw[sortAlias(i)])
    }))
  }

  private cursorTypes (q: ListQuery): { types: CursorValueType[], nullable: boolean[] } {
    const types = q.sort.map((k): CursorValueType => {
      const kind = this.sql.sortValueKind(k.field)
      if (kind === 'rank' || kind === 'flag' || kind === 'flag-text') return 'integer'
      if (kind === 'time-text') return 'string'
      // SQLite stores any value in any column: the cursor keeps what was stored (2.5 in an INTEGER column, '1,5' in a DECIMAL one),
      // except in the rowid (an INTEGER PRIMARY KEY), which holds integers only: a cursor with anything else there is no cursor of ours
      if (this.db.dialect === 'sqlite') return k.field === this.id && this.storage.field(this.id).info?.identity === true ? 'integer' : 'scalar'
      const s = this.storage.field(k.field)
      switch (s.category) {
        case 'text': case 'ntext': return 'string'
        case 'integer': return 'integer'
        case 'decimal': case 'float': return 'number'
        case 'bit': return 'boolean'
        case 'time': return 'time'
        default: return 'string'
      }
    })
    // SQLite's strftime reads a time it cannot parse as NULL, whatever the column declares
    return { types, nullable: q.sort.map((k) => this.storage.field(k.field).nullable || ['time-text', 'number-text', 'flag-text'].includes(this.sql.sortValueKind(k.field))) }
  }

  /** The statement of a list page (its cursor decoded into the keyset position); `limit` as given. */
  listStatement (q: ListQuery): Statement {
    let after = q.after
    if (q.cursor !== undefined) {
      const { types, nullable } = this.cursorTypes(q)
      after = decodeCursor(q.cursor, q.sort, types, nullable)
      // a cursor is the client's text: SQL Server converts the one compared with a uniqueidentifier (error 8169 for no GUID)
      const decoded = after
      if (q.sort.some((k, i) => this.storage.field(k.field).guid && typeof decoded[i] === 'string' && !isGuid(decoded[i] as string))) throw invalidCursor()
      // nor can the driver send a time past the column's range, or a rank beyond an int
      if (q.sort.some((k, i) => !this.sql.cursorValueFits(k.field, decoded[i]))) throw invalidCursor()
    }
    // not {...q, after}: q lacks `after` (it has the cursor), and on Node 20 such a clone gets a hidden class of its own (README, Performance)
    return this.sql.list(Object.assign({}, q, { after }))
  }

  async list (q: ListQuery): Promise<ListResult> {
    // one row more than the page tells whether there is a next page without a count
    const stmt = this.listStatement({ ...q, limit: q.limit + 1 })
    if (this.exactIntegers) stmt.exactIntegers = true
    const page = this.db.queryValues !== undefined
      ? this.db.queryValues(stmt).then((raw) => this.page(q, raw, this.mapValues))
      : this.db.query(stmt).then((raw) => this.page(q, raw, this.mapRow))
    const [result, total] = await Promise.all([page, q.count ? this.count(q.filters) : undefined])
    // every row read shares one keyset position (more rows hold the id than the page takes): read on until they end
    if (result === undefined) return await this.list({ ...q, limit: q.limit * 2 })
    if (total !== undefined) result.total = total
    // SQLite: an id beyond 2^53 that another program stored after the start (wideValues were learned then):
    // this cursor would keep it rounded, so the page is read again with exact integers, and so are all from now on
    if (!this.exactIntegers && result.next !== undefined && this.db.dialect === 'sqlite') {
      const last = result.rows[result.rows.length - 1]?.[this.id]
      if (typeof last === 'number' && Number.isInteger(last) && !Number.isSafeInteger(last)) {
        this.exactIntegers = true
        return await this.list(q)
      }
    }
    return result
  }

  /**
   * The page from the rows read (one more than the limit), mapped, with the next page's cursor when there is one.
   * Where rows share an id (idShared) and so the whole keyset position, the next page's cursor would skip those
   * of them past the page: the page ends before them instead, and is undefined when they fill it all.
   */
  private page<R extends Row | unknown[]> (q: ListQuery, raw: R[], map: (raw: R) => Row): ListResult | undefined {
    let end = Math.min(raw.length, q.limit)
    let next = raw.length > q.limit ? this.cursorOf(q, raw[end - 1]) : undefined
    // the positions as the database may compare them: 'A-1' and 'a-1 ' are one to SQL Server's usual collations and to
    // a SQLite column declared COLLATE NOCASE, and a cursor of either skipped the other (not the cursors' text)
    const at = next !== undefined && this.idShared ? this.cursorOf(q, raw[end - 1], comparedText) : undefined
    if (at !== undefined && this.cursorOf(q, raw[end], comparedText) === at) {
      while (end > 0 && this.cursorOf(q, raw[end - 1], comparedText) === at) end--
      if (end === 0) return undefined
      next = this.cursorOf(q, raw[end - 1])
    }
    const page = end < raw.length ? raw.slice(0, end) : raw
    const result: ListResult = { rows: page.map((r) => map(r)) }
    if (q.storedNumbers === true && this.numbersShownAsText.length > 0) this.markStoredNumbers(page, result.rows)
    if (next !== undefined) result.next = next
    return result
  }

  /** Sets STORED_NUMBERS on the mapped rows that hold a number in a text field's untyped column. */
  private markStoredNumbers (raw: Array<Row | unknown[]>, rows: Row[]): void {
    raw.forEach((r, i) => {
      for (const { field, index } of this.numbersShownAsText) {
        const v = Array.isArray(r) ? r[index] : r[field]
        if (typeof v !== 'number' && typeof v !== 'bigint') continue
        const row = rows[i] as Row & { [STORED_NUMBERS]?: Record<string, number> }
        ;(row[STORED_NUMBERS] ??= {})[field] = Number(v)
      }
    })
  }

  /** `tx` counts inside that transaction; with `lock` the counted range stays locked until it ends (SqlBuilder.count). */
  async count (filters: Filter[] = [], opts: { tx?: Executor, lock?: boolean } = {}): Promise<number> {
    const rows = await (opts.tx ?? this.db).query(this.sql.count(filters, { lock: opts.lock }))
    return Number(rows[0]?.total ?? 0)
  }

  /**
   * The row the id names. Where several rows hold it (an id column not unique by itself), a 409 as
   * for an update or delete: showing one of them would hand a client another's row (README, "Day one: mapping").
   */
  async get (id: Id): Promise<Row | undefined> {
    if (!this.names(id)) return undefined
    const rows = await this.rowsOf(this.db, this.sql.selectById(id))
    if (rows.length > 1) throw this.ambiguous(id, rows.length, 'nothing was read')
    return rows[0]
  }

  /** Several rows hold the id `id`: the gateway cannot tell which one is meant. */
  private ambiguous (id: Id, n: number, outcome: string): AmbiguousIdError {
    const table = this.mapping.schema === undefined ? this.mapping.table : `${this.mapping.schema}.${this.mapping.table}`
    return new AmbiguousIdError(id, table, `${n} rows of the picking system's table hold the ${this.noun} id ${id} (its id column is not unique as the table compares it: one column of a composite key, or a unique index that tells apart what the column compares as equal), so the gateway cannot tell which one is meant`, outcome)
  }

  /** Every row a statement that selects the select list returns, mapped (as values where the driver can). */
  private async rowsOf (ex: Executor, stmt: Statement): Promise<Row[]> {
    if (ex.queryValues !== undefined) return (await ex.queryValues(stmt)).map((r) => this.mapValues(r))
    return (await ex.query(stmt)).map((r) => this.mapRow(r))
  }

  /** The first row a statement that selects the select list returns, mapped (as values where the driver can). */
  private async first (ex: Executor, stmt: Statement): Promise<Row | undefined> {
    if (ex.queryValues !== undefined) {
      const rows = await ex.queryValues(stmt)
      return rows.length === 0 ? undefined : this.mapValues(rows[0])
    }
    const rows = await ex.query(stmt)
    return rows.length === 0 ? undefined : this.mapRow(rows[0])
  }

  private async all (ex: Executor, stmt: Statement): Promise<Row[]> {
    return ex.queryValues !== undefined ? (await ex.queryValues(stmt)).map(this.mapValues) : (await ex.query(stmt)).map(this.mapRow)
  }

  /**
   * The row whose `field` equals `value` (the lowest id if several do, the highest with `newest`);
   * internal fields allowed.
   */
  async findOne (field: string, value: unknown, ex: Executor = this.db, newest = false): Promise<Row | undefined> {
    if (!Object.hasOwn(this.def.fields, field)) throw new BadQueryError(`Unknown field '${field}'`)
    const v = this.convert(field, this.def.fields[field], value)
    return await this.first(ex, this.sql.list({
      filters: [{ field, op: v === null ? 'null' : 'eq', values: [v] }],
      sort: [{ field: this.id, desc: newest }],
      limit: 1
    }))
  }

  /**
   * The first row (lowest id) whose field reads exactly `value`. The database compares as the column's
   * collation does, which may also match another case or trailing blanks (a default SQL Server collation,
   * a SQLite column declared COLLATE NOCASE): those rows are passed over. At most 20 are looked at.
   */
  async findExact (field: string, value: string): Promise<Row | undefined> {
    if (!Object.hasOwn(this.def.fields, field)) throw new BadQueryError(`Unknown field '${field}'`)
    const rows = await this.all(this.db, this.sql.list({ filters: [{ field, op: 'eq', values: [this.convert(field, this.def.fields[field], value)] }], sort: [{ field: this.id, desc: false }], limit: 20 }))
    return rows.find((row) => row[field] === value)
  }

  /** The first row (lowest id) the filters match, read through `ex` (a transaction's, to see what it holds locked). */
  async findFirst (filters: Filter[], ex: Executor = this.db): Promise<Row | undefined> {
    return await this.first(ex, this.sql.list({ filters, sort: [{ field: this.id, desc: false }], limit: 1 }))
  }

  /**
   * The row a caseless field's value names (a login's username): when a legacy table holds it in
   * several spellings (JSmith and jsmith under a case-sensitive index), the one spelled as given,
   * trimmed; else the first whose `key` is the given value's (the database's collation may also
   * find names the API tells apart: Ozturk for öztürk where accents do not count); else the lowest
   * id. At most 20 spellings are looked at.
   */
  async findSpelled (field: string, value: string, key: (text: string) => string): Promise<Row | undefined> {
    if (!Object.hasOwn(this.def.fields, field)) throw new BadQueryError(`Unknown field '${field}'`)
    const rows = await this.all(this.db, this.sql.list({ filters: [{ field, op: 'eq', values: [this.convert(field, this.def.fields[field], value)] }], sort: [{ field: this.id, desc: false }], limit: 20 }))
    const spelled = value.trim()
    const wanted = key(value)
    const text = (row: Row): string | undefined => typeof row[field] === 'string' ? row[field] : undefined
    return rows.find((row) => text(row)?.trim() === spelled) ?? rows.find((row) => { const t = text(row); return t !== undefined && key(t) === wanted }) ?? rows[0]
  }

  /**
   * The row just inserted, found by a unique field's value, when reading it back by id found none:
   * an INSTEAD OF INSERT trigger does the insert itself, and the OUTPUT of the gateway's statement
   * does not see the id it got.
   */
  private async byUniqueValue (tx: Executor, given: Row): Promise<Row | undefined> {
    for (const field of this.uniqueFields) {
      if (given[field] === undefined || given[field] === null || !this.has(field)) continue
      const row = await this.findOne(field, given[field], tx, true)
      if (row !== undefined) return row
    }
    return undefined
  }

  /** A create whose row the table did not keep as sent (a trigger skipped it: RAISE(IGNORE), an INSTEAD OF trigger that inserts nothing or changes the key). */
  private notKept (): ConstraintViolationError {
    const unique = this.uniqueFields.find((f) => this.has(f))
    return new ConstraintViolationError(`The picking system's database did not keep the new ${this.noun} as sent (a trigger of its table skipped the insert${unique === undefined ? '' : ` or changed its ${unique}`}); nothing was created`)
  }

  /** The id a new row gets under mapping.newIds 'max+1': the largest one plus one (1 in an empty table, or one of only negative ids). */
  private async nextId (tx: Executor): Promise<number> {
    const [row] = await tx.query(this.sql.maxId())
    const max = row?.max === null || row?.max === undefined ? 0 : Number(row.max)
    // the table's data, not the request: creates are refused until the row is fixed (the log has the value)
    if (!Number.isSafeInteger(max)) {
      throw new DatabaseUnavailableError(`New ${this.def.name} cannot be numbered (mapping.${this.def.name}.newIds is max+1): the largest id stored is no whole number below 2^53 to count on from; the log has it`,
        { cause: new Error(`${this.def.name}: the largest id is ${String(row?.max)}`) })
    }
    const next = Math.max(max, 0) + 1
    // past its column's type (a tinyint or smallint key, a decimal(4,0)) the INSERT would fail with error 220, a 400 blaming
    // the request: like an identity column that has used up its values, no create passes until the column is widened
    const info = this.storage.field(this.id).info
    const last = this.idRange?.[1] ?? (this.db.dialect === 'mssql' && info?.precision !== undefined && (info.scale ?? 0) === 0 && /^(?:decimal|numeric)$/.test(info.type) ? 10 ** info.precision - 1 : undefined)
    if (last !== undefined && next > last) {
      throw new DatabaseUnavailableError(`New ${this.def.name} cannot be numbered (mapping.${this.def.name}.newIds is max+1): the largest id stored, ${max}, is the last one its column (${info!.type}) holds, and it takes no new rows until an administrator widens it`,
        { cause: new Error(`${this.def.name}: the largest id is ${max}, the last value of its column's type`) })
    }
    return next
  }

  /** A value the row shows, as the column would store it; undefined when it is no such field or cannot be. */
  private readonly storedAs = (field: string, shown: unknown): SqlValue | undefined => {
    if (!this.comparedAsStored.has(field) || typeof shown !== 'string') return undefined
    try {
      return this.storage.toDb(this.storage.field(field), shown)
    } catch {
      return undefined
    }
  }

  /** SQLite: the INSERT run once; undefined when another process held the write lock (nothing ran). */
  private async insertOnce (vals: Record<string, SqlValue>): Promise<Row | undefined> {
    const stmt = this.sql.insert(vals)
    stmt.once = true
    try {
      const row = await this.first(this.db, stmt)
      if (row === undefined) throw this.notKept()
      return row
    } catch (err) {
      if (err instanceof DatabaseBusyError) return undefined
      throw err
    }
  }

  /** The given stamp fields at this moment. */
  private stampsNow (fields: string[]): Row {
    const now = new Date()
    const out: Row = {}
    for (const field of fields) out[field] = now
    return out
  }

  /**
   * Inserts a row: the resource's defaults (resources.ts) for missing writable fields whose column
   * has none of its own, createdAt/modifiedAt now unless given.
   */
  async create (values: Row, opts: CreateOptions = {}): Promise<Row> {
    this.writable()
    // a copy by Object.assign: a {...values} clone given new keys gets a hidden class of its own on Node 20 (README, Performance)
    const given: Row = Object.assign({}, values)
    for (const [field, value] of this.createDefaults) {
      if (given[field] === undefined) given[field] = value
    }
    const now = new Date()
    // the times the gateway stamps (not given): stamped anew once the write lock is held, if it had to wait
    let stamped: string[] | undefined
    for (const field of this.stamps) {
      if (given[field] !== undefined) continue
      given[field] = now
      ;(stamped ??= []).push(field)
    }
    this.assertNullKept(values)
    this.assertTrimmed(given)
    this.assertKey(given)
    const vals = this.createInput(values, given)
    for (const field of this.required) {
      if (vals[field] === undefined) throw new InvalidValueError(`'${field}' is required: the database has no default for it`)
    }
    try {
      const guard = opts.guard
      const numbered = this.storage.mapping.newIds === 'max+1'
      const unique = this.checkedUnique(guard !== undefined)
      const checked = unique.some((f) => given[f] !== undefined && given[f] !== null)
      // On SQL Server always in a transaction, as updates and deletes are: a trigger's RAISERROR
      // without ROLLBACK ends neither statement nor batch, so a lone INSERT would stay committed
      // while the API answers that it was refused. SQLite's RAISE(ABORT) undoes its statement (RAISE(FAIL): below).
      // SQLite, the usual create: one INSERT, run once. Had it waited for another process's lock, it
      // would commit seconds after its stamp, and an incremental sync that began meanwhile (its
      // serverTime later than the stamp) would never see the row: met by a lock, it runs in the
      // transaction below instead, stamped once BEGIN IMMEDIATE holds the lock. Not where the schema
      // names FAIL: a RAISE(FAIL) ends the INSERT with an error but keeps the row it inserted.
      let row = guard === undefined && !numbered && !checked && !this.readBack && !this.atomicCreate && this.db.dialect === 'sqlite'
        ? await this.insertOnce(vals)
        : undefined
      row ??= await this.db.transaction(async (tx) => {
        if (stamped !== undefined) Object.assign(vals, this.input(this.stampsNow(stamped)))
        // a taken value is told before the guard's refusal: a name in use is a 409 whether or not the licence is full
        if (checked) await this.assertUnique(tx, given, undefined, unique)
        await guard?.(tx)
        if (numbered) vals[this.id] = await this.nextId(tx)
        let row = await this.first(tx, this.sql.insert(vals))
        // the id the batch captured is not the row's (0, NULL, or a dummy row's): the unique value finds it
        if (this.insteadOf) row = undefined
        // SQLite's RETURNING shows the row before an AFTER INSERT trigger changed it: read it again
        // (behind an INSTEAD OF trigger, a view, it has no id at all: found by its unique value below)
        const id = row?.[this.id]
        if (this.readBack) row = id === null || id === undefined ? undefined : await this.first(tx, this.sql.selectById(id as Id))
        // not found: a trigger skipped the insert or changed the value that finds it; undone, not half done
        const found = row ?? await this.byUniqueValue(tx, given)
        if (found === undefined) throw this.notKept()
        return found
      })
      return row
    } catch (err) {
      // the API's defaults the request left to the gateway, for a message about a value the client never sent
      const defaulted = Object.fromEntries(this.createDefaults.filter(([field]) => values[field] === undefined))
      throw await this.explainConflict(await this.explainFault(err, 'create', undefined, vals, defaulted), vals)
    }
  }

  /**
   * Changes the given fields in one transaction: locks the row, 404 when missing, 412 when
   * `check` rejects it, writes the fields that do not already show the value given (changedOnly),
   * sets modifiedAt (strictly later than before, so it changes on every update even within one
   * millisecond), and returns the row as stored. When every given field already shows the given
   * value nothing is written and modifiedAt stays: an ERP that sends its whole master data again
   * does not make every row look changed to the next incremental sync.
   */
  async update (id: Id, values: Row, opts: UpdateOptions = {}): Promise<Row> {
    this.writable()
    // a value the column could not take as a write (2.5 a legacy program left in an INT column) is
    // refused only if it would change the row: an edit form sends back what a read showed
    const refused = new Map<string, InvalidValueError>()
    const vals = this.input(values, refused)
    // what the last run of the transaction wrote (a deadlock victim runs again, from the row as it is then)
    let written = vals
    // the row's own id as read (a caseless text key: the path's 'abc' is the row's 'ABC'), for the 409 below
    let own: unknown = id
    try {
      return await this.db.transaction(async (tx) => {
        const row = await this.lockRow(tx, id, opts)
        own = row[this.id]
        if (refused.size > 0) for (const [field, err] of refused) if (!showsValue(row, field, values[field], this.def)) throw err
        this.assertNullKept(values, row)
        const write = changedOnly(vals, values, row, this.def, this.comparedAsStored.size === 0 ? undefined : this.storedAs)
        written = write
        // these pass a value the row already shows: nothing to check when nothing is written
        this.assertTrimmed(values, row)
        this.assertKey(values, row)
        // a key shared with the id passes only as the row shows it (a caseless username in another case):
        // it is not written, which would move the row to another id (a SQLite key compared as written)
        if (this.storage.sharedKey !== undefined) delete write[this.storage.sharedKey]
        // before the guard, as in create: renaming onto a taken name is a 409 whether or not enabling it would pass the licence
        const unique = this.checkedUnique(opts.guard !== undefined)
        if (unique.length > 0 && Object.keys(write).length > 0) await this.assertUnique(tx, values, row, unique)
        if (opts.guard !== undefined) await opts.guard(row, tx)
        // every field already shows the value sent: nothing is written, modifiedAt stays
        if (Object.keys(write).length === 0) return row
        if (opts.touch !== false && this.has('modifiedAt') && write.modifiedAt === undefined) {
          const s = this.storage.field('modifiedAt')
          write.modifiedAt = this.storage.toDb(s, this.storage.nextTime(s, row.modifiedAt as string | null, Date.now()))
        }
        // read back, not RETURNING: a trigger may have changed the row after the update (measured: no slower)
        const changed = await tx.execute(this.sql.update(id, write))
        // the row is locked, so no row changed means a trigger skipped the change (SQLite's RAISE(IGNORE));
        // SQL Server's count includes its triggers' statements and says nothing here
        if (changed === 0 && this.countsChanges) throw this.skipped(id, 'update')
        const after = await this.first(tx, this.sql.selectById(id))
        // a trigger deleted the row or changed its id, or a view no longer shows it: undone, as a create the table did not keep
        if (after === undefined) throw this.notKeptUpdate(id)
        return after
      })
    } catch (err) {
      throw await this.explainConflict(await this.explainFault(err, 'update', id, written), written, own as Id)
    }
  }

  /** Deletes one row in a transaction (404 when missing, 412 when `check` rejects it); returns the deleted row. */
  async delete (id: Id, opts: WriteOptions = {}): Promise<Row> {
    this.writable()
    try {
      return await this.db.transaction(async (tx) => {
        const row = await this.lockRow(tx, id, opts)
        const deleted = await tx.execute(this.sql.delete(id))
        // a SQLite table's own count: 0 means a BEFORE trigger skipped it (RAISE(IGNORE)). An INSTEAD OF
        // DELETE trigger (SQL Server, a SQLite view) may keep the row on purpose, as a legacy soft
        // delete that sets a flag: that stays a 204, as the picking system's own delete
        if (this.countsChanges && deleted === 0) throw this.skipped(id, 'delete')
        return row
      })
    } catch (err) {
      throw await this.explainFault(err, 'delete', id)
    }
  }

  /** The row, locked for the rest of the transaction: 404 when missing, 412 when `check` (If-Match) rejects it. */
  private async lockRow (tx: Executor, id: Id, opts: WriteOptions): Promise<Row> {
    const rows = this.names(id) ? await this.rowsOf(tx, this.sql.selectById(id, { forUpdate: true })) : []
    const row = rows[0]
    if (row === undefined) throw new NotFoundError(`${this.def.name} ${id} not found`)
    // an id column that is not unique by itself (one column of a composite key: ArtNr of (Mandant, ArtNr)):
    // the update or delete would change every row holding the id, so it changes none
    if (rows.length > 1) throw this.ambiguous(id, rows.length, 'nothing was changed')
    if (opts.check !== undefined && !opts.check(row)) throw new PreconditionFailedError()
    return row
  }

  /**
   * A null for a field the API never leaves empty (materials' blocked, a station's type or enabled)
   * is taken only as the row already shows it: an edit form's copy of a NULL the picking system
   * stored, which changes nothing. A create has no such row.
   */
  private assertNullKept (values: Row, row?: Row): void {
    for (const field in values) {
      if (values[field] !== null || this.def.fields[field]?.notNull !== true || (row !== undefined && row[field] === null)) continue
      throw new InvalidValueError(`'${field}' may not be null${row === undefined ? ': leave it out for its default' : ' (it is only taken as the value the row already shows)'}`)
    }
  }

  /** An update after which no row has the id (a trigger deleted the row or changed its key, a view's WHERE no longer shows it): rolled back. */
  private notKeptUpdate (id: Id): ConstraintViolationError {
    return new ConstraintViolationError(`The picking system's database did not keep the ${this.noun} ${id} as changed: after the update no row has that id (a trigger deleted the row or changed its ${this.storage.sharedKey ?? 'id'}, or the view the gateway reads no longer shows it); nothing was changed`)
  }

  /** A write a trigger of the picking system skipped without an error: it changed nothing, and says so. */
  private skipped (id: Id, operation: 'update' | 'delete'): ConstraintViolationError {
    return new ConstraintViolationError(`The picking system refused the change: a trigger on its table skipped the ${operation} of ${this.noun} ${id}, which is unchanged`)
  }

  /** SQL Server: a table as its messages qualify it ('WMS.dbo.Artikel', 'dbo.Artikel') is the mapped one. */
  private isMappedTable (table: string): boolean {
    const own = `${this.mapping.schema ?? 'dbo'}.${this.mapping.table}`.toLowerCase()
    const named = table.toLowerCase()
    return named === own || named.endsWith(`.${own}`)
  }

  /** SQLite: a constraint's message names another table than the mapped one, a table (a view's INSTEAD OF triggers write others by design). */
  private elsewhere (table: string | undefined): boolean {
    return table !== undefined && this.countsChanges && table.toLowerCase() !== this.mapping.table.toLowerCase()
  }

  /** A driver error about the data (foreign key, NOT NULL, CHECK, trigger) in API words. */
  private async explainFault (err: unknown, operation: 'create' | 'update' | 'delete', id?: Id, written?: Row, defaulted?: Row): Promise<unknown> {
    if (!(err instanceof DataFaultError)) return err
    const fault = err.fault
    // a column of another table, which a trigger wrote or a foreign key's SET NULL emptied: not the field of the same name (views write other tables by design)
    if (fault.kind === 'notNull' && this.elsewhere(fault.table)) {
      return new ConstraintViolationError('The picking system refused the change: a trigger of its table, or a foreign key\'s ON DELETE or ON UPDATE SET NULL, left a required column of another table empty (a NOT NULL constraint there); nothing was changed', { cause: err })
    }
    // SQL Server names the table of the column (515, 2628, a rule's 513): another table's column (a trigger's write to a
    // history table, or the base table of a mapped view) is no field of this resource, though it may share a field's column's name
    const elsewhere = this.db.dialect === 'mssql' && fault.table !== undefined && !this.isMappedTable(fault.table)
    const ctx = { noun: this.noun, operation, id, fieldOf: (column: string) => elsewhere ? undefined : this.storage.fieldOf(column) }
    if (fault.kind === 'check' && fault.columns === undefined && fault.constraint !== undefined) {
      return faultToError({ ...fault, columns: await this.checkColumns(fault.constraint) }, ctx, { cause: err })
    }
    if (fault.kind === 'foreignKey' && operation !== 'delete' && fault.columns === undefined) {
      const key = await this.foreignKeyColumns(fault.constraint, written, operation === 'create')
      // SQLite's message has no direction: no value the update set is missing from a parent table, and it
      // changed a column other tables' rows refer to (ON UPDATE RESTRICT or NO ACTION): they refuse it
      if (operation === 'update' && !key.exact && await this.refersToWritten(written)) return faultToError({ kind: 'referenced' }, ctx, { cause: err })
      // a key of mapping.defaults' columns alone: the configuration, not the request, names a missing record, and
      // every create fails alike until it is corrected (or the record added), as a newIds the ids defeat does
      const configured = operation === 'create' && key.exact && key.columns.length > 0
        ? key.columns.map((c) => this.storage.insertDefaults.find((d) => d.storage.column.toLowerCase() === c.toLowerCase()))
        : []
      if (configured.length > 0 && configured.every((d) => d !== undefined)) {
        const values = configured.map((d) => `'${d!.storage.column}' = ${JSON.stringify(d!.value)}`).join(', ')
        return new DatabaseUnavailableError(`New ${this.def.name} cannot be created: a value mapping.${this.def.name}.defaults writes into every new row refers to a record that does not exist in the picking system; correct the default or add the record (the log has it)`,
          { cause: new Error(`${this.def.name}: mapping.${this.def.name}.defaults ${values} refers to no row of the table its foreign key names`, { cause: err }) })
      }
      // the API's defaults are named as the cause only where the broken key's own columns are known
      return faultToError({ ...fault, columns: key.columns }, { ...ctx, defaulted: key.exact ? defaulted : undefined }, { cause: err })
    }
    return faultToError(fault, ctx, { cause: err })
  }

  /**
   * The columns a SQLite CHECK constraint reads: its message gives the expression of an unnamed
   * one, else the name, whose expression is in the table's CREATE TABLE text. Best effort: [] when
   * it cannot be found.
   */
  private async checkColumns (constraint: string): Promise<string[]> {
    const direct = namesIn(constraint).filter((n) => this.storage.fieldOf(n) !== undefined)
    if (direct.length > 0) return direct
    try {
      const [row] = await this.db.query({
        text: "SELECT sql AS sql FROM sqlite_schema WHERE type = 'table' AND name = @table COLLATE NOCASE",
        params: [{ name: 'table', kind: 'string', value: this.mapping.table }]
      })
      const expression = checkExpression(String(row?.sql ?? ''), constraint)
      return expression === undefined ? [] : namesIn(expression)
    } catch {
      return []
    }
  }

  /**
   * The columns of the foreign key a write broke (the messages name none). SQL Server: those of the
   * constraint its message names. SQLite: those whose written values no parent row holds, else the
   * table's columns that reference other tables, as the fields among them are what it can be about.
   * Best effort: [] when unknown. `exact`: the columns are the broken key's own (not a guess).
   */
  private async foreignKeyColumns (constraint: string | undefined, written?: Row, create = false): Promise<{ columns: string[], exact: boolean }> {
    const guess = (columns: string[]): { columns: string[], exact: boolean } => ({ columns, exact: false })
    try {
      if (this.db.dialect === 'mssql') {
        if (constraint === undefined) return guess([])
        const rows = await this.db.query({
          text: 'SELECT COL_NAME([k].[parent_object_id], [k].[parent_column_id]) AS [c] FROM sys.foreign_key_columns AS [k] ' +
            'JOIN sys.foreign_keys AS [f] ON [f].[object_id] = [k].[constraint_object_id] ' +
            'WHERE [f].[name] = @name AND [f].[parent_object_id] = OBJECT_ID(@table) ORDER BY [k].[constraint_column_id]',
          params: [{ name: 'name', kind: 'string', value: constraint, type: 'nvarchar(128)' }, { name: 'table', kind: 'string', value: dialectFor('mssql').table(this.mapping), type: 'nvarchar(600)' }]
        })
        return { columns: rows.map((r) => String(r.c)), exact: rows.length > 0 }
      }
      const keys = await this.db.query({ text: 'SELECT "id" AS id, "table" AS parent, "from" AS c, "to" AS t FROM pragma_foreign_key_list(@table) ORDER BY "id", "seq"', params: [{ name: 'table', kind: 'string', value: this.mapping.table }] })
      const unmatched = await this.unmatchedForeignKeys(keys, written, create)
      if (unmatched.length > 0) return { columns: unmatched, exact: true }
      const columns = keys.map((r) => String(r.c))
      // a create also writes mapping.defaults' columns, which no field names: then it cannot tell which (none named)
      const filled = new Set(this.storage.insertDefaults.map((d) => d.storage.column.toLowerCase()))
      if (create && columns.some((c) => filled.has(c.toLowerCase()))) return guess([])
      // the ones the write set (an update of unit names unit, not the warehouse it left alone), when it set any
      const set = written === undefined ? [] : columns.filter((c) => { const f = this.storage.fieldOf(c); return f !== undefined && written[f] !== undefined })
      return guess(set.length > 0 ? set : columns)
    } catch {
      return guess([])
    }
  }

  /**
   * SQLite: a foreign key of another table (or of this one, to itself) refers to a column the update
   * wrote. Best effort: false when it cannot be told.
   */
  private async refersToWritten (written: Row | undefined): Promise<boolean> {
    if (this.db.dialect !== 'sqlite' || written === undefined) return false
    const columns = new Set(Object.keys(written).filter((f) => this.has(f)).map((f) => this.storage.field(f).column.toLowerCase()))
    try {
      const keys = await this.db.query(foreignKeysTo(this.mapping.table))
      // no "to": the table's primary key
      const key = keys.some((k) => k.col === null)
        ? (await this.db.query({ text: 'SELECT name AS n FROM pragma_table_info(@table) WHERE pk > 0', params: [{ name: 'table', kind: 'string', value: this.mapping.table }] })).map((r) => String(r.n))
        : []
      return [...keys.map((k) => k.col), ...key].some((c) => c !== null && columns.has(String(c).toLowerCase()))
    } catch {
      return false
    }
  }

  /**
   * SQLite: the child columns of the foreign keys (pragma_foreign_key_list rows) whose written values
   * no row of the parent table holds. A create writes mapping.defaults' columns too. A key whose
   * columns the write left alone or set to NULL refers to nothing, and is not looked up.
   */
  private async unmatchedForeignKeys (keys: Row[], written: Row | undefined, create: boolean): Promise<string[]> {
    const value = (column: string): SqlValue | undefined => {
      const field = this.storage.fieldOf(column)
      if (field !== undefined && written?.[field] !== undefined) return written[field] as SqlValue
      return create ? this.storage.insertDefaults.find((d) => d.storage.column.toLowerCase() === column.toLowerCase())?.stored : undefined
    }
    const d = dialectFor('sqlite')
    const out: string[] = []
    for (const id of new Set(keys.map((k) => k.id))) {
      const key = keys.filter((k) => k.id === id)
      const values = key.map((k) => value(String(k.c)))
      if (values.some((v) => v === undefined || v === null)) continue
      const parent = String(key[0].parent)
      // no "to": the parent's primary key
      let to = key.map((k) => k.t === null ? undefined : String(k.t))
      if (to.some((t) => t === undefined)) {
        to = (await this.db.query({ text: 'SELECT name AS n FROM pragma_table_info(@parent) WHERE pk > 0 ORDER BY pk', params: [{ name: 'parent', kind: 'string', value: parent }] })).map((r) => String(r.n))
        if (to.length !== key.length) continue
      }
      const where = to.map((t, i) => `${d.ident(t!)} = @v${i}`).join(' AND ')
      const found = await this.db.query({ text: `SELECT 1 AS x FROM ${d.ident(parent)} WHERE ${where} LIMIT 1`, params: values.map((v, i) => ({ name: `v${i}`, kind: 'string', value: v as SqlValue })) })
      if (found.length === 0) out.push(...key.map((k) => String(k.c)))
    }
    return out
  }

  /** the field exists and the table has a column for it */
  private has (field: string): boolean {
    return Object.hasOwn(this.def.fields, field) && !this.storage.field(field).absent
  }

  /**
   * 409 when another row already holds a unique value as the API compares it, where the table's
   * own index would let the duplicate in: 'A-1' beside a legacy program's 'A-1   ' in a SQLite
   * CHAR column, 'jsmith' beside 'JSmith'. Inside the write's transaction. An update that sends the
   * value its row already shows claims nothing new: rows a legacy table already holds twice stay
   * editable (a form sends every field).
   */
  private async assertUnique (tx: Executor, given: Row, current: Row | undefined, fields: string[]): Promise<void> {
    for (const f of fields) {
      const value = given[f]
      if (value === undefined || value === null || (current !== undefined && this.sameShown(f, current[f], value))) continue
      // SQL Server: a second write of the value waits until this one commits (SQLite's writers take turns anyway);
      // a value the table's index keeps unique needs no lock: the index refuses the second write
      if (this.db.dialect === 'mssql' && this.selfChecked.includes(f)) await this.lockValue(tx, f, value)
      const other = await this.findOne(f, value, tx)
      // the row itself as read, not the id as the path spelled it ('abc' finds 'ABC' under a caseless collation)
      if (other !== undefined && (current === undefined || String(other[this.id]) !== String(current[this.id]))) {
        throw new ConflictError(`${f} '${String(value)}' already exists`)
      }
    }
  }

  /**
   * The unique fields a write looks up itself: those the table's index misses (selfChecked); with a
   * guard (the licence) every one the table has, since the index would only refuse the write after
   * the guard had refused it for another reason.
   */
  private checkedUnique (guarded: boolean): string[] {
    return guarded ? this.guardedUnique : this.selfChecked
  }

  /**
   * A unique text (a material number, a station's name) may not begin or end with white space: 'P-1 '
   * would be a second material beside 'P-1' that looks the same (SQL Server would even take them for
   * one), nor hold a control or invisible character, nor be written in another Unicode form than NFC
   * ('E' and a combining accent, as some keyboards and macOS file names send 'É': a second station
   * beside 'É01' that looks the same). A value the row already shows is no new claim.
   */
  private assertTrimmed (given: Row, current?: Row): void {
    for (const f of this.uniqueFields) {
      const value = given[f]
      if (typeof value !== 'string') continue
      const hidden = hiddenCharacter(value)
      if ((value === value.trim() && hidden === undefined && value === value.normalize('NFC')) || (current !== undefined && this.sameShown(f, current[f], value))) continue
      if (value !== value.trim()) throw new InvalidValueError(`'${f}' may not begin or end with white space, got ${JSON.stringify(value)}: it would look like ${JSON.stringify(value.trim())}`)
      if (value !== value.normalize('NFC')) throw new InvalidValueError(`'${f}' must be in Unicode NFC (an accented letter as one character, not a letter and a combining accent): it would look like ${JSON.stringify(value.normalize('NFC'))}, a second ${this.noun} that looks the same; send it in that form`)
      // 'PTL-01' with a zero-width space after it would be a second station that looks like PTL-01 (the create schemas' VISIBLE_KEY)
      throw new InvalidValueError(`'${f}' may hold no control or invisible characters (zero-width spaces, direction marks) nor spaces other than U+0020, got ${hidden ?? ''}: it would look like another ${this.noun}'s`)
    }
  }

  /**
   * A table keyed by its material number (storage.sharedKey): the number is the id. A create's must be
   * an id a path can name where ids are numbers (decimal digits without plus sign or leading zero); an
   * update may not change it, which would move the row to another URL.
   */
  private assertKey (given: Row, current?: Row): void {
    const key = this.storage.sharedKey
    const value = key === undefined ? undefined : given[key]
    if (key === undefined || value === undefined || value === null) return
    if (current !== undefined) {
      if (this.sameShown(key, current[key], value)) return
      throw new InvalidValueError(`'${key}' is this installation's id of the ${this.noun} (its table is keyed by it) and cannot change; create a new ${this.noun} instead`)
    }
    const text = String(value)
    if (this.def.fields[this.id].kind !== 'string' && !isPathId(text)) {
      throw new InvalidValueError(`'${key}' is this installation's id of the ${this.noun} (its table is keyed by a number): it must be a whole number up to ${Number.MAX_SAFE_INTEGER} in magnitude, without plus sign or leading zero, got '${text}'`)
    }
    // a row created under an id no path can name could be listed but never read, changed or deleted:
    // the router answers a longer one 414, and clients resolve '.' and '..' (also as %2E) as path steps
    if (text.length > MAX_PATH_PARAM_LENGTH || text === '.' || text === '..') {
      throw new InvalidValueError(`'${key}' is this installation's id of the ${this.noun} (its table is keyed by it), so a URL must name it: at most ${MAX_PATH_PARAM_LENGTH} characters, and not '.' or '..', got ${text.length > MAX_PATH_PARAM_LENGTH ? `${text.length} characters` : `'${text}'`}`)
    }
  }

  /**
   * SQL Server: holds a unique field for this transaction (sp_getapplock), so that a second write of a
   * value equal to this one waits. Named by the value (trimmed, any case) only under a binary
   * collation, whose equality trim() and toLowerCase() cannot split. Any other collation compares as
   * no text function here can ('Müller' = 'Muller' accent-insensitive, 'ß' = 'ss' and 'æ' = 'ae' in
   * Windows collations, a full-width 'Ａ' = 'A' width-insensitive), and a number column compares '7' and
   * '07' as one: two such writes took different locks and both passed. There the lock is the field's.
   */
  private async lockValue (tx: Executor, field: string, value: unknown): Promise<void> {
    const byValue = /_BIN2?(_|$)/i.test(this.storage.field(field).info?.collation ?? '')
    const name = `picking-gateway:${this.mapping.schema ?? 'dbo'}.${this.mapping.table}:${field}${byValue ? `:${String(value).trim().toLowerCase()}` : ''}`
    // sp_getapplock takes names of up to 255 characters
    const resource = name.length <= 255 ? name : `picking-gateway:${createHash('sha256').update(name).digest('hex')}`
    const [row] = await tx.query(this.sql.appLock(resource, 10000))
    // the field's lock: the write that holds it may be of another value
    if (Number(row?.rc) < 0) throw new DatabaseUnavailableError(`Another write of ${field}${byValue ? ` '${String(value)}'` : ''} is still running; try again`)
  }

  /** Two values of a field as the API compares them: a caseless field's regardless of case. */
  private sameShown (field: string, a: unknown, b: unknown): boolean {
    if (a === b) return true
    return this.def.fields[field].caseless === true && typeof a === 'string' && typeof b === 'string' && a.toLowerCase() === b.toLowerCase()
  }

  /**
   * Which unique key a write hit. SQLite names the index's columns: one field's, or several fields'
   * together (a composite index of the picking system). SQL Server's message names only the index:
   * look for another row that holds one of the unique values given; else the driver's words.
   */
  private async explainConflict (err: unknown, vals: Record<string, SqlValue>, exceptId?: Id): Promise<unknown> {
    if (!(err instanceof ConflictError)) return err
    if (this.elsewhere(err.table)) {
      return new ConflictError('The picking system refused the change: a trigger of its table wrote a row that another table already holds (a unique key there); nothing was changed', { cause: err })
    }
    // a value as the API shows it: without the padding a CHAR(n) column's value was written with (storage padsTo)
    const shown = (f: string): string => {
      const v = vals[f]
      return typeof v === 'string' && this.storage.fields[f]?.padsTo !== undefined ? v.trimEnd() : String(v)
    }
    const message = (f: string): ConflictError => new ConflictError(`${f} '${shown(f)}' already exists`, { cause: err })
    if (err.columns !== undefined) {
      const fields = err.columns.map((c) => this.storage.fieldOf(c))
      if (fields.length === 1 && fields[0] !== undefined && vals[fields[0]] !== undefined) return message(fields[0])
      if (fields.length > 1 && fields.every((f) => f !== undefined)) {
        const values = (fields as string[]).map((f) => vals[f] === undefined ? `${f} (as stored)` : `${f} '${shown(f)}'`).join(', ')
        return new ConflictError(`Another ${this.noun} already has this combination of values, which the picking system's table keeps unique: ${values}`, { cause: err })
      }
      if (fields.some((f) => f === undefined)) {
        const known = fields.filter((f): f is string => f !== undefined)
        const over = known.length === 0 ? 'over columns the gateway does not map' : `over ${known.join(', ')} and columns the gateway does not map`
        return new ConflictError(`Another ${this.noun} already has these values in a unique key of the picking system's table (${over})`, { cause: err })
      }
    }
    const given = this.uniqueFields.filter((f) => vals[f] !== undefined && vals[f] !== null)
    for (const f of given) {
      try {
        const other = await this.findOne(f, vals[f])
        if (other !== undefined && (exceptId === undefined || String(other[this.id]) !== String(exceptId))) return message(f)
      } catch {
        break
      }
    }
    return err
  }
}
