// The embedded dialect: better-sqlite3 behind the async Database interface, one connection, calls serialized.
import { existsSync } from 'node:fs'
import BetterSqlite3 from 'better-sqlite3'
import { sqliteDataFault } from './data-errors.js'
import { ConflictError, DatabaseUnavailableError, DataFaultError } from './errors.js'
import type { ColumnInfo, Database, Executor, Param, Row, Statement, TableMapping } from './types.js'

export interface SqliteOptions {
  /** create the file when it does not exist (only the embedded demo does) */
  create: boolean
  /** how long a statement waits for another process's lock before failing with 503 */
  busyTimeoutMs?: number
}

type Bound = Record<string, string | number | null>

/** better-sqlite3 binds numbers, strings and null: booleans become 1/0, dates ISO 8601 UTC text with ms (sorts as text). */
function sqliteValue (v: Param['value']): string | number | null {
  return v instanceof Date ? v.toISOString() : typeof v === 'boolean' ? (v ? 1 : 0) : v
}

export function toSqliteParams (params: Param[]): Bound {
  const out: Bound = {}
  for (const p of params) out[p.name] = sqliteValue(p.value)
  return out
}

/**
 * Binds a statement's parameters as toSqliteParams does, by one object literal compiled per
 * statement text, so that every call for it builds objects of one hidden class. toSqliteParams'
 * loop stores keys that differ from statement to statement through one megamorphic site: 0.5 µs a
 * statement in a profile of creates (README, Performance). The names become quoted keys
 * (JSON.stringify), never code.
 */
export function compileBinder (names: readonly string[]): (params: Param[]) => Bound {
  const build = new Function('value', 'p', `return {${names.map((n, i) => `${JSON.stringify(n)}: value(p[${i}].value)`).join(', ')}}`) as (value: typeof sqliteValue, p: Param[]) => Bound
  return (params) => {
    // the same text with other parameters (not made by this project's builder, but possible): the plain way
    if (params.length !== names.length) return toSqliteParams(params)
    for (let i = 0; i < names.length; i++) if (params[i].name !== names[i]) return toSqliteParams(params)
    return build(sqliteValue, params)
  }
}

/** Maps a driver error to the layer's errors; anything else is passed through unchanged. */
export function mapSqliteError (err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code !== 'string') return err
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    return new ConflictError('A row with the same unique key already exists', { cause: err })
  }
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return new DatabaseUnavailableError('The database is busy', { cause: err })
  }
  const fault = sqliteDataFault(err)
  if (fault !== undefined) return new DataFaultError(fault, { cause: err })
  return err
}

/** fn's result as a promise: a throw becomes a rejection. */
function attempt<T> (fn: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(fn())
  } catch (err) {
    return Promise.reject(err)
  }
}

interface Prepared { statement: BetterSqlite3.Statement, bind: (params: Param[]) => Bound }

class SqliteDatabase implements Database {
  readonly dialect = 'sqlite' as const
  private readonly db: BetterSqlite3.Database
  private readonly cache = new Map<string, Prepared>()
  /** the tail of the queue every call waits on: a transaction holds it across its awaits */
  private queue: Promise<unknown> = Promise.resolve()
  /** calls queued or running through the queue */
  private pending = 0
  private closed = false
  /** statements that wrote through this connection: PRAGMA data_version counts only other connections' commits */
  private ownWrites = 0

  constructor (db: BetterSqlite3.Database) {
    this.db = db
    this.dataVersion = db.prepare('PRAGMA data_version').pluck()
    // prepared once: exec() parses and finalizes its text on every call (README, Performance)
    this.begin = db.prepare('BEGIN IMMEDIATE')
    this.commit = db.prepare('COMMIT')
    this.rollback = db.prepare('ROLLBACK')
  }

  private readonly begin: BetterSqlite3.Statement
  private readonly commit: BetterSqlite3.Statement
  private readonly rollback: BetterSqlite3.Statement

  /** the prepared statement of a text and the binder of its parameters, both made once per text */
  private prepare (stmt: Statement): Prepared {
    let entry = this.cache.get(stmt.text)
    if (entry === undefined) {
      entry = { statement: this.db.prepare(stmt.text), bind: compileBinder(stmt.params.map((p) => p.name)) }
      // list statements vary with their filters: keep the cache bounded
      if (this.cache.size >= 500) this.cache.delete(this.cache.keys().next().value as string)
      this.cache.set(stmt.text, entry)
    }
    return entry
  }

  /** The rows as objects, or with `values` as arrays (raw mode, set on every call: statements are shared). */
  private runQuery (stmt: Statement, values = false): Row[] | unknown[][] {
    try {
      const { statement: prepared, bind } = this.prepare(stmt)
      const bound = bind(stmt.params)
      // counted before it runs: a reader that sees the mark after this write also sees the write
      if (!prepared.readonly) this.ownWrites++
      if (prepared.reader) return prepared.raw(values).all(bound) as Row[] | unknown[][]
      prepared.run(bound)
      return []
    } catch (err) {
      throw mapSqliteError(err)
    }
  }

  private runExecute (stmt: Statement): number {
    try {
      const { statement: prepared, bind } = this.prepare(stmt)
      if (!prepared.readonly) this.ownWrites++
      return prepared.run(bind(stmt.params)).changes
    } catch (err) {
      throw mapSqliteError(err)
    }
  }

  /**
   * Runs fn once every earlier call (and transaction) has finished: at once when nothing is queued
   * or running (a transaction then begins without waiting for a turn of the microtask queue).
   */
  private serialize<T> (fn: () => T | Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new DatabaseUnavailableError('The database is closed'))
    const run = this.pending++ === 0 ? attempt(fn) : this.queue.then(fn)
    this.queue = run.then(this.settled, this.settled)
    return run
  }

  private readonly settled = (): void => { this.pending-- }

  /**
   * One statement: at once when nothing is queued or running (the usual case: every statement is
   * synchronous, so the queue is only ever held by a transaction), else after the queue.
   */
  private now<T> (fn: () => T): Promise<T> {
    if (this.pending > 0 || this.closed) return this.serialize(fn)
    return attempt(fn)
  }

  query (stmt: Statement): Promise<Row[]> {
    return this.now(() => this.runQuery(stmt) as Row[])
  }

  queryValues (stmt: Statement): Promise<unknown[][]> {
    return this.now(() => this.runQuery(stmt, true) as unknown[][])
  }

  execute (stmt: Statement): Promise<number> {
    return this.now(() => this.runExecute(stmt))
  }

  /**
   * better-sqlite3 is synchronous but fn awaits between statements: the queue keeps every other
   * call out until COMMIT or ROLLBACK, so nothing else runs inside this transaction by accident.
   * fn must use `tx`, not the database itself (that would wait for itself).
   */
  transaction<T> (fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.serialize(async () => {
      let open = true
      const guard = (): void => { if (!open) throw new Error('transaction already finished') }
      const tx: Executor = {
        query: async (stmt) => { guard(); return this.runQuery(stmt) as Row[] },
        queryValues: async (stmt) => { guard(); return this.runQuery(stmt, true) as unknown[][] },
        execute: async (stmt) => { guard(); return this.runExecute(stmt) }
      }
      try {
        this.begin.run()
      } catch (err) {
        throw mapSqliteError(err)
      }
      try {
        const result = await fn(tx)
        this.commit.run()
        this.ownWrites++
        return result
      } catch (err) {
        if (this.db.inTransaction) this.rollback.run()
        throw mapSqliteError(err)
      } finally {
        open = false
      }
    })
  }

  async ping (): Promise<void> {
    await this.query({ text: 'SELECT 1', params: [] })
  }

  changeMark (): string | undefined {
    if (this.closed) return undefined
    return `${this.dataVersion.get() as number}:${this.ownWrites}`
  }

  private readonly dataVersion: BetterSqlite3.Statement

  async close (): Promise<void> {
    if (this.closed) return
    // refuse new calls at once; let the queued ones finish
    this.closed = true
    await this.queue
    this.cache.clear()
    this.db.close()
  }

  async columns (mapping: TableMapping): Promise<ColumnInfo[]> {
    const rows = await this.query({
      text: 'SELECT name AS name, type AS type, "notnull" AS "required", dflt_value AS dflt, pk AS pk, hidden AS hidden FROM pragma_table_xinfo(@table)',
      params: [{ name: 'table', kind: 'string', value: mapping.table }]
    })
    // INTEGER PRIMARY KEY (alone) is the rowid: SQLite assigns it, as SQL Server does an identity
    const pkColumns = rows.filter((r) => Number(r.pk) > 0).length
    return rows.map((r) => sqliteColumnInfo(r, pkColumns))
  }
}

/**
 * One row of PRAGMA table_xinfo as a ColumnInfo. SQLite keeps the declared type as written
 * (`VARCHAR(40)`, `DECIMAL(18,3)`, `DATETIME`); the gateway holds values to it as SQL Server would.
 */
export function sqliteColumnInfo (r: Row, pkColumns = 1): ColumnInfo {
  const declared = String(r.type ?? '').trim()
  const m = /^([A-Za-z][A-Za-z0-9_ ]*?)\s*(?:\(\s*(max|\d+)\s*(?:,\s*(\d+)\s*)?\))?$/i.exec(declared)
  const type = (m?.[1] ?? declared).toLowerCase().replace(/\s+/g, ' ')
  const info: ColumnInfo = {
    name: String(r.name),
    type,
    nullable: Number(r.required) === 0 && Number(r.pk) === 0,
    hasDefault: r.dflt !== null && r.dflt !== undefined,
    identity: Number(r.pk) === 1 && pkColumns === 1 && type === 'integer',
    computed: Number(r.hidden) === 2 || Number(r.hidden) === 3
  }
  const size = m?.[2]
  if (size !== undefined) {
    const n = size.toLowerCase() === 'max' ? -1 : Number(size)
    if (/char|text|clob/.test(type)) info.maxLength = n
    else if (/dec|num/.test(type)) {
      info.precision = n
      info.scale = m?.[3] === undefined ? 0 : Number(m[3])
    } else if (/time/.test(type)) info.scale = n
  }
  if (info.identity || info.computed) info.hasDefault = true
  return info
}

export function openSqlite (path: string, opts: SqliteOptions): Database {
  if (!opts.create && path !== ':memory:' && !existsSync(path)) {
    throw new DatabaseUnavailableError(`SQLite database file '${path}' does not exist`)
  }
  const db = new BetterSqlite3(path)
  try {
    db.pragma('journal_mode = WAL')
    db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(opts.busyTimeoutMs ?? 5000))}`)
    db.pragma('foreign_keys = ON')
    // WAL makes NORMAL durable against application crashes; only a power loss can drop the last commits
    db.pragma('synchronous = NORMAL')
  } catch (err) {
    db.close()
    throw mapSqliteError(err)
  }
  return new SqliteDatabase(db)
}
