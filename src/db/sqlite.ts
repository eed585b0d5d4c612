// The embedded dialect: better-sqlite3 behind the async Database interface, one connection, calls serialized.
import { accessSync, closeSync, constants, existsSync, openSync, readSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import BetterSqlite3 from 'better-sqlite3'
import { constraintTable, sqliteDataFault, uniqueColumns } from './data-errors.js'
import { sqliteDialect } from './dialect.js'
import { resources } from './resources.js'
import { ConflictError, DatabaseBusyError, DatabaseClosedError, DatabaseUnavailableError, DataFaultError, FileUncheckableError, MappingGoneError, DAMAGED, IO_ERROR, NOT_A_DATABASE, READ_ONLY, ReadOnlyError, STORAGE_FULL, UnreadableTableError } from './errors.js'
import { compactShaped, compactTime, formattedDate, storedFlag, storedNumber } from './storage.js'
import { isFixedWidthText, type ColumnInfo, type ColumnTimeFormat, type Database, type Executor, type Param, type RecheckResult, type Row, type Statement, type TableMapping } from './types.js'

/** The API's date-time fields (createdAt, modifiedAt, lastLoginAt). */
const TIME_FIELDS = new Set(Object.values(resources).flatMap((def) => Object.entries(def.fields).filter(([, f]) => f.kind === 'datetime').map(([field]) => field)))

export interface SqliteOptions {
  /** create the file when it does not exist (only the embedded demo does) */
  create: boolean
  /**
   * open read-only and set nothing that persists in the file (db introspect, check-config); the
   * file must exist
   */
  readonly?: boolean
  /** how long a call waits in all for another process's lock before failing with 503 (BUSY_TIMEOUT_MS) */
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

/** What the answers say once another process opened the file after its -wal or -shm was removed under the gateway. */
const SIDECARS_TAKEN = 'The database file\'s -wal or -shm file was removed while the gateway had it open, and another process has opened the file since; the log says what to do'

/** The 503's message for a write that meets a foreign key SQLite cannot check (the log names it). */
export const FOREIGN_KEY_MISMATCH = 'The picking system\'s database declares a foreign key SQLite cannot check (the columns it refers to have no unique index), so this write cannot be done; its administrator has to fix that key (the log names it, and picking-gateway check-config lists it)'

/** Maps a driver error to the layer's errors; anything else is passed through unchanged. */
export function mapSqliteError (err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code !== 'string') return err
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    const message = String((err as { message?: unknown }).message)
    return new ConflictError('A row with the same unique key already exists', { cause: err }, uniqueColumns(message), constraintTable(message))
  }
  if (code.startsWith('SQLITE_BUSY')) return new DatabaseBusyError({ cause: err })
  if (code.startsWith('SQLITE_LOCKED')) return new DatabaseUnavailableError('The database is busy', { cause: err })
  // the file, its directory or the file system became read-only (a full disk remounted, a backup's
  // lock): a fault of the installation, which the next write after it is fixed no longer meets
  if (code.startsWith('SQLITE_READONLY')) return new DatabaseUnavailableError(READ_ONLY, { cause: err })
  // the disk is full: the statement changed nothing, and the next one after space is freed succeeds
  if (code.startsWith('SQLITE_FULL')) return new DatabaseUnavailableError(STORAGE_FULL, { cause: err })
  // the file could not be read or written (a disk fault, a network share gone), or memory ran out: a
  // fault of the machine, not of the request
  if (code.startsWith('SQLITE_IOERR') || code === 'SQLITE_NOMEM') return new DatabaseUnavailableError(IO_ERROR, { cause: err })
  // a damaged file does not mend itself, but it is the installation's fault all the same: its administrator restores it
  if (code.startsWith('SQLITE_CORRUPT')) return new DatabaseUnavailableError(DAMAGED, { cause: err })
  if (code === 'SQLITE_NOTADB') return new DatabaseUnavailableError(NOT_A_DATABASE, { cause: err })
  // a table or column renamed or dropped under the running gateway; SQLite's hint about quotes is no help here
  const message = String((err as { message?: unknown }).message).replace(/ - should this be a string literal in single-quotes\?$/, '')
  if (code === 'SQLITE_ERROR' && /^(?:no such (?:column|table): |table \S+ has no column named )/.test(message)) return new MappingGoneError(message, { cause: err })
  // a foreign key SQLite cannot check (its parent columns have no unique index): the picking system runs
  // without foreign keys and never meets it; with them on, every insert, delete and key change of the parent fails
  if (code === 'SQLITE_ERROR' && /^foreign key mismatch - /.test(message)) return new DatabaseUnavailableError(FOREIGN_KEY_MISMATCH, { cause: err })
  // a view without the INSTEAD OF trigger for this write (one with some of them passed the start-up check)
  const view = code === 'SQLITE_ERROR' ? /^cannot modify (.+) because it is a view$/.exec(message) : null
  if (view !== null) return new ReadOnlyError(`'${view[1]}' is a view whose INSTEAD OF triggers do not take this write; the picking system's database has to give it one`)
  const fault = sqliteDataFault(err)
  if (fault !== undefined) return new DataFaultError(fault, { cause: err })
  return err
}

/**
 * How long a call waits in all for another process's lock before it fails with 503, as SQLite's
 * busy_timeout of 5 s did before: now spent on timers between attempts, never inside SQLite,
 * where the synchronous driver stopped the event loop for the whole wait.
 */
export const BUSY_TIMEOUT_MS = 5000
/** the pauses between attempts while another process holds the lock; the last one repeats */
const BUSY_BACKOFF_MS = [1, 2, 5, 10, 20, 50]

/**
 * Another connection holds the lock (SQLITE_BUSY, raw or as mapSqliteError maps it). A statement
 * outside an explicit transaction, BEGIN and COMMIT that failed so changed nothing and may run
 * again (SQLite's documentation of sqlite3_step); SQLITE_LOCKED (this connection's own lock) may not.
 */
function isBusy (err: unknown): boolean {
  const driver = err instanceof DatabaseUnavailableError ? err.cause : err
  const code = (driver as { code?: unknown } | null)?.code
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY')
}

interface Backoff { deadline: number, step: number }

/** The next pause of a wait for another process's lock, at most `left` ms: 1, 2, 5, 10, 20, then 50 ms each (BUSY_BACKOFF_MS). */
function nextPauseMs (backoff: Backoff, left: number): number {
  return Math.min(BUSY_BACKOFF_MS[Math.min(backoff.step++, BUSY_BACKOFF_MS.length - 1)], left)
}

/** `exact`: the statement returns integers as BigInt (Statement.exactIntegers), as last set */
interface Prepared { statement: BetterSqlite3.Statement, bind: (params: Param[]) => Bound, exact: boolean }

interface FileId { dev: number, ino: number }

function fileId (path: string): FileId | undefined {
  const st = statSync(path, { throwIfNoEntry: false })
  return st === undefined ? undefined : { dev: st.dev, ino: st.ino }
}

/** Both there and the same file (device and inode). */
const sameFile = (a: FileId | undefined, b: FileId | undefined): boolean => a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino

interface ConnectOptions { create: boolean, readonly: boolean, busyTimeoutMs: number }

/**
 * May this process write the file at `path`, and its -wal and -shm files (or create them in its
 * directory)? SQLite opens a file it may not write read-only without a word, and a -wal or -shm it
 * may not write makes the connection read-only too: every write then fails with SQLITE_READONLY,
 * and the connection stays so after the file is made writable. access(2), as SQLite's open meets
 * the same modes, ACLs and read-only mounts.
 */
function writable (path: string): boolean {
  const may = (file: string): boolean | undefined => {
    try {
      accessSync(file, constants.W_OK)
      return true
    } catch (err) {
      return (err as { code?: unknown }).code === 'ENOENT' ? undefined : false
    }
  }
  if (may(path) !== true) return false
  // a missing -wal or -shm is created in the directory
  return ['-wal', '-shm'].every((suffix) => may(`${path}${suffix}`) ?? may(dirname(path)) === true)
}

/** A LIKE pattern's parts: any run (%), one character (_), or a character (folded to lower case). */
type LikeToken = { any: true } | { one: true } | { char: string }
const likeCache = new Map<string, LikeToken[]>()

function likeTokens (pattern: string): LikeToken[] {
  let tokens = likeCache.get(pattern)
  if (tokens !== undefined) return tokens
  tokens = []
  const chars = Array.from(pattern)
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]
    if (c === '\\' && i + 1 < chars.length) tokens.push({ char: chars[++i].toLowerCase() })
    else if (c === '%') {
      if (!('any' in (tokens[tokens.length - 1] ?? {}))) tokens.push({ any: true })
    } else if (c === '_') tokens.push({ one: true })
    else tokens.push({ char: c.toLowerCase() })
  }
  if (likeCache.size >= 256) likeCache.clear()
  likeCache.set(pattern, tokens)
  return tokens
}

/**
 * LIKE as SQLite's (% any run, _ one character, \\ escaping the next one), but ignoring case for
 * every letter ('É' is 'é'), where SQLite's own folds only A to Z. Matched by the usual wildcard
 * walk that only ever returns to the last %: time in proportion to value times pattern, whatever
 * the pattern (a regular expression would backtrack exponentially on '%a%a%a…').
 */
export function likeMatches (value: string, pattern: string): boolean {
  const p = likeTokens(pattern)
  const v = Array.from(value, (c) => c.toLowerCase())
  let vi = 0
  let pi = 0
  let star = -1
  let mark = 0
  while (vi < v.length) {
    const t = p[pi]
    if (t !== undefined && ('one' in t || ('char' in t && t.char === v[vi]))) {
      vi++
      pi++
    } else if (t !== undefined && 'any' in t) {
      star = pi++
      mark = vi
    } else if (star >= 0) {
      pi = star + 1
      vi = ++mark
    } else return false
  }
  while (pi < p.length && 'any' in p[pi]) pi++
  return pi === p.length
}

/**
 * A connection set up for the gateway. Only journal_mode = WAL persists in the file (README,
 * "SQLite: locks, journal mode and the database file"), so a read-only open does not set it; the others last as long as the connection.
 */
function connect (path: string, opts: ConnectOptions): BetterSqlite3.Database {
  // a new file is made readable by its owner alone before SQLite opens it (SQLite gives its -wal and -shm
  // files the same mode): it holds the users' argon2 hashes, and the umask would leave it world-readable
  if (opts.create && path !== ':memory:' && !path.startsWith('file:') && !existsSync(path)) {
    try {
      closeSync(openSync(path, 'wx', 0o600))
    } catch (err) {
      // another process made it meanwhile: it is that one's to set
      if ((err as { code?: unknown }).code !== 'EEXIST') throw err
    }
  }
  // `timeout` is busy_timeout while the connection is set up (switching to WAL takes an exclusive lock), before anything is served
  const db = new BetterSqlite3(path, { readonly: opts.readonly, fileMustExist: !opts.create, timeout: opts.busyTimeoutMs })
  try {
    if (!opts.readonly) db.pragma('journal_mode = WAL')
    db.pragma('foreign_keys = ON')
    // WAL makes NORMAL durable against application crashes; only a power loss can drop the last commits
    db.pragma('synchronous = NORMAL')
    // from now on SQLite itself never sleeps on another process's lock: the class waits on timers
    db.pragma('busy_timeout = 0')
    // a number a legacy program keeps in a text column, as reads show it (null for anything else)
    db.function('number_text', { deterministic: true }, (value: unknown) => storedNumber(value))
    // a flag in a column without a declared type (-1, 1, '1', 'true', '0'), as reads show it: 1, 0, or null for anything else
    db.function('flag_text', { deterministic: true }, (value: unknown) => { const flag = storedFlag(value); return flag === null ? null : flag ? 1 : 0 })
    // text of digits that reads as a date, YYYYMMDD or YYYYMMDDhhmmss, by the reads' own rule (no 30 February, no month 13): 1, else 0
    db.function('compact_time', { deterministic: true }, (value: unknown) => typeof value === 'string' && compactTime(value.trimEnd()) !== undefined ? 1 : 0)
    // a number shaped as such digits that is no real date (20240230120000), which reads show as null, not as Unix time: 1, else 0
    db.function('broken_compact_time', { deterministic: true }, (value: unknown) => (typeof value === 'number' || typeof value === 'bigint') && compactTime(String(value)) === undefined && compactShaped(String(value)) ? 1 : 0)
    // a value of a column mapped with a time format ('yyyymmdd', 'unix') that reads show as a time (formattedDate): 1, else 0
    db.function('formatted_time', { deterministic: true }, (value: unknown, format: unknown) => formattedDate(String(format) as ColumnTimeFormat, value) !== undefined ? 1 : 0)
    // LIKE folds ASCII letters only: a pattern with other letters ('écrou') goes through this (SqlBuilder)
    db.function('unicode_like', { deterministic: true }, (value: unknown, pattern: unknown) =>
      value === null || value === undefined ? null : likeMatches(String(value), String(pattern)) ? 1 : 0)
    // NOCASE folds A to Z only: a caseless field (usernames) compares through this, 'ÖZTÜRK' as 'öztürk'
    db.function('unicode_fold', { deterministic: true }, (value: unknown) => typeof value === 'string' ? value.toLowerCase() : value)
  } catch (err) {
    db.close()
    throw mapSqliteError(err)
  }
  return db
}

class SqliteDatabase implements Database {
  readonly dialect = 'sqlite' as const
  private db: BetterSqlite3.Database
  private readonly cache = new Map<string, Prepared>()
  /** a call holds the connection: an open transaction, or a queued call at its turn */
  private held = false
  /** calls waiting for their turn, first come first served */
  private readonly turns: Array<() => void> = []
  /** calls waiting out another process's lock (atTurn), in the order they met it */
  private readonly lockWaiters: object[] = []
  /** set while calls are refused (the database closed, or its file gone): the error they get */
  private refused: DatabaseUnavailableError | undefined
  private closed = false
  /** statements that wrote through this connection: PRAGMA data_version counts only other connections' commits */
  private ownWrites = 0
  private readonly path: string
  private readonly options: ConnectOptions
  /** the file this connection opened; the path naming another one means the file was replaced */
  private file: FileId | undefined
  /** the old file's -wal, left at the path by a retire that could not empty it: not to be opened with a new file */
  private staleWal: FileId | undefined
  /**
   * The connection's -wal and -shm files, once seen: while it is open they stay at the path. Removed
   * under it, its commits go to a -wal no other process sees; another one there means another
   * process opened the file since, with a -wal of its own.
   */
  private sidecars: Array<FileId | undefined> = [undefined, undefined]
  /** set once the -wal or -shm at the path was found to be another process's: nothing runs until a restart */
  private diverged = false
  /** the file opened at a recheck was one this process may not write: SQLite opened it read-only, and a recheck opens it anew once it is writable */
  private readOnlyFile = false

  private begin!: BetterSqlite3.Statement
  private commit!: BetterSqlite3.Statement
  private rollback!: BetterSqlite3.Statement
  private dataVersion!: BetterSqlite3.Statement

  constructor (path: string, db: BetterSqlite3.Database, options: ConnectOptions) {
    this.path = path
    this.db = db
    this.options = options
    this.file = path === ':memory:' || path === '' ? undefined : fileId(path)
    if (this.file !== undefined) this.sidecarState()
    this.prepareFixed()
  }

  private prepareFixed (): void {
    this.dataVersion = this.db.prepare('PRAGMA data_version').pluck()
    // prepared once: exec() parses and finalizes its text on every call (README, Performance)
    this.begin = this.db.prepare('BEGIN IMMEDIATE')
    this.commit = this.db.prepare('COMMIT')
    this.rollback = this.db.prepare('ROLLBACK')
  }

  /** the prepared statement of a text and the binder of its parameters, both made once per text */
  private prepare (stmt: Statement): Prepared {
    let entry = this.cache.get(stmt.text)
    if (entry === undefined) {
      entry = { statement: this.db.prepare(stmt.text), bind: compileBinder(stmt.params.map((p) => p.name)), exact: false }
      // list statements vary with their filters: keep the cache bounded
      if (this.cache.size >= 500) this.cache.delete(this.cache.keys().next().value as string)
      this.cache.set(stmt.text, entry)
    }
    return entry
  }

  /** The rows as objects, or with `values` as arrays (raw mode, set on every call: statements are shared). */
  private runQuery (stmt: Statement, values = false): Row[] | unknown[][] {
    try {
      const entry = this.prepare(stmt)
      const { statement: prepared, bind } = entry
      const bound = bind(stmt.params)
      // set per statement as it is asked for, and only when that changes: a statement text is shared
      if ((stmt.exactIntegers === true) !== entry.exact) {
        entry.exact = !entry.exact
        prepared.safeIntegers(entry.exact)
      }
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

  /** Gives the turn to the next queued call, or frees the connection. */
  private readonly release = (): void => {
    const next = this.turns.shift()
    if (next === undefined) this.held = false
    else next()
  }

  /** Takes the connection's turn: at once when it is free, else after every call queued before. */
  private async turn (): Promise<void> {
    if (this.refused !== undefined) throw this.refused
    if (!this.held) {
      this.held = true
      return
    }
    await new Promise<void>((resolve) => { this.turns.push(resolve) })
    // the file went away while this call waited: nothing runs on the deleted file (calls queued before close still run)
    if (this.refused !== undefined && !this.closed) {
      this.release()
      throw this.refused
    }
  }

  /** After a BUSY: a pause on a timer, or `failure` itself when it is another error or the deadline has passed. */
  private async pause (failure: unknown, backoff: Backoff): Promise<void> {
    if (!isBusy(failure)) throw failure
    const now = performance.now()
    if (backoff.deadline === 0) backoff.deadline = now + this.options.busyTimeoutMs
    const left = backoff.deadline - now
    if (left <= 0) throw failure
    await delay(nextPauseMs(backoff, left))
  }

  /**
   * One statement: at once when nothing is queued or running (the usual case: every statement is
   * synchronous, so the connection is only ever held by a transaction), else through `later`.
   */
  private now<T> (fn: () => T, once = false): Promise<T> {
    if (this.held || this.refused !== undefined) return this.later(fn, undefined, once)
    try {
      return Promise.resolve(fn())
    } catch (err) {
      return this.later(fn, err, once)
    }
  }

  /**
   * Runs `attempt` at its turn in the queue, and after a BUSY (another process holds the lock) again
   * after a pause, until the deadline; returns holding the turn. It holds the turn only while
   * `attempt` runs, never while it pauses: other calls are not held up behind a write waiting for a lock.
   * `once` (Statement.once): its failure, BUSY too, is thrown at once.
   */
  private async atTurn<T> (attempt: () => T, failure?: unknown, once = false): Promise<T> {
    let backoff: Backoff | undefined
    // its place among the calls waiting out another process's lock: they try again in the order they met it,
    // so that a lock released between two of their timers does not let a later one run first
    let waiting: object | undefined
    try {
      for (;;) {
        if (failure !== undefined && once) throw failure
        if (failure !== undefined) {
          if (waiting === undefined && isBusy(failure)) this.lockWaiters.push(waiting = {})
          await this.pause(failure, backoff ??= { deadline: 0, step: 0 })
          // an earlier call still waits for the lock: it tries first
          if (waiting !== undefined && this.lockWaiters[0] !== waiting) continue
        }
        await this.turn()
        try {
          return attempt()
        } catch (err) {
          this.release()
          failure = err
        }
      }
    } finally {
      if (waiting !== undefined) this.lockWaiters.splice(this.lockWaiters.indexOf(waiting), 1)
    }
  }

  /** A statement that could not run at once: through atTurn, then the turn goes to the next call. */
  private async later<T> (fn: () => T, failure?: unknown, once = false): Promise<T> {
    const result = await this.atTurn(fn, failure, once)
    this.release()
    return result
  }


  query (stmt: Statement): Promise<Row[]> {
    return this.now(() => this.runQuery(stmt) as Row[], stmt.once === true)
  }

  queryValues (stmt: Statement): Promise<unknown[][]> {
    return this.now(() => this.runQuery(stmt, true) as unknown[][], stmt.once === true)
  }

  execute (stmt: Statement): Promise<number> {
    return this.now(() => this.runExecute(stmt), stmt.once === true)
  }

  /**
   * better-sqlite3 is synchronous but fn awaits between statements: the turn keeps every other
   * call out until COMMIT or ROLLBACK, so nothing else runs inside this transaction by accident.
   * fn must use `tx`, not the database itself (that would wait for itself). With nothing queued
   * the transaction begins before the call returns.
   */
  transaction<T> (fn: (tx: Executor) => Promise<T>): Promise<T> {
    if (this.held || this.refused !== undefined) return this.transactionLater(fn)
    this.held = true
    try {
      this.beginNow()
    } catch (err) {
      this.release()
      return this.transactionLater(fn, err)
    }
    return this.inTransaction(fn)
  }

  /** A transaction that could not begin at once: as `later`, for BEGIN IMMEDIATE; fn runs once, after a BEGIN that succeeded. */
  private async transactionLater<T> (fn: (tx: Executor) => Promise<T>, failure?: unknown): Promise<T> {
    await this.atTurn(this.beginNow, failure)
    return await this.inTransaction(fn)
  }

  /** BEGIN IMMEDIATE, its error in the class's terms (a BUSY stays recognizable to pause) */
  private readonly beginNow = (): void => {
    try {
      this.begin.run()
    } catch (err) {
      throw mapSqliteError(err)
    }
  }


  /** fn inside the transaction just begun; gives the turn back once it is committed or rolled back. */
  private async inTransaction<T> (fn: (tx: Executor) => Promise<T>): Promise<T> {
    let open = true
    const guard = (): void => { if (!open) throw new Error('transaction already finished') }
    const tx: Executor = {
      query: async (stmt) => { guard(); return this.runQuery(stmt) as Row[] },
      queryValues: async (stmt) => { guard(); return this.runQuery(stmt, true) as unknown[][] },
      execute: async (stmt) => { guard(); return this.runExecute(stmt) }
    }
    try {
      const result = await fn(tx)
      try {
        this.commit.run()
      } catch (err) {
        await this.commitLater(err)
      }
      this.ownWrites++
      return result
    } catch (err) {
      // a statement inside the transaction that failed, BUSY too, is not run again: the whole transaction is rolled back
      if (this.db.inTransaction) this.rollback.run()
      throw mapSqliteError(err)
    } finally {
      open = false
      this.release()
    }
  }

  /**
   * COMMIT met another connection's lock (readers, in rollback-journal mode; in WAL mode the
   * transaction already holds the write lock): it may run again. The transaction is open, so it
   * keeps the turn while it pauses; past the deadline it is rolled back.
   */
  private async commitLater (failure: unknown): Promise<void> {
    const backoff: Backoff = { deadline: 0, step: 0 }
    for (;;) {
      await this.pause(mapSqliteError(failure), backoff)
      try {
        this.commit.run()
        return
      } catch (err) {
        failure = err
      }
    }
  }

  async ping (): Promise<void> {
    await this.query({ text: 'SELECT 1', params: [] })
  }

  changeMark (): string | undefined {
    if (this.refused !== undefined) return undefined
    return `${this.dataVersion.get() as number}:${this.ownWrites}`
  }

  /**
   * Is the file at the path still the one this connection opened (device and inode)? Gone: the
   * connection is closed and every call answers 503 until a file is back (a new one is never
   * created in its place). Another file there (a backup copied back, a file moved in), or the file
   * back: it is opened. Either waits for the call holding the connection (an open transaction ends
   * on the old file, never cut). The old connection is closed before a new one opens: closing
   * removes its -wal and -shm files, which must not be read as the new file's. A failed open
   * leaves calls refused and is tried again on the next recheck.
   */
  async recheck (): Promise<RecheckResult> {
    if (this.file === undefined || this.closed || this.diverged) return 'unchanged'
    const open = this.db.open
    let found: FileId | undefined
    let sidecars: 'same' | 'removed' | 'taken' = 'same'
    let unchanged = false
    try {
      found = fileId(this.path)
      unchanged = open && sameFile(found, this.file)
      if (unchanged) sidecars = this.sidecarState()
    } catch (err) {
      // the directory made unreadable: the file already open serves on (it was not refused), only the check cannot see
      if (open && this.refused === undefined) throw new FileUncheckableError(`the path '${this.path}' cannot be looked at: ${(err as Error).message}`, { cause: err })
      throw err
    }
    if (found === undefined && !open) return 'unchanged'
    // a read-only connection stays so: once the file may be written again it is opened anew
    const reopenWritable = unchanged && sidecars === 'same' && this.readOnlyFile && writable(this.path)
    if (unchanged && !reopenWritable) {
      if (sidecars === 'same') return 'unchanged'
      if (sidecars === 'taken') {
        // the gateway's commits and the other process's are in two -wal files now: merging either into the
        // file could overwrite the other's pages, so neither is; the log says what to do
        this.diverged = true
        this.refused = new DatabaseUnavailableError(SIDECARS_TAKEN)
        return 'diverged'
      }
    }
    // refused from here on: calls queued behind the switch must not run on the old file either
    this.refused ??= new DatabaseUnavailableError(found === undefined ? 'The database file is missing' : 'The database file is being reopened')
    if (this.held) await new Promise<void>((resolve) => { this.turns.push(resolve) })
    else this.held = true
    try {
      if (this.closed) return 'unchanged'
      // the removed -wal is this connection's alone: closed before its commits are in the file, they would be gone
      if (sidecars === 'removed' && !this.checkpoint()) {
        this.refused = new DatabaseUnavailableError('The database file is being reopened')
        throw new Error('the database file\'s -wal or -shm file was removed while the gateway had it open, and the commits only the gateway sees could not be written into the file (a full disk?); the connection stays open, and the next check tries again')
      }
      // the same file opened anew (writable again): the -wal at the path is its own, not an old file's
      if (open) this.retire(!unchanged)
      if (found === undefined) {
        this.refused = new DatabaseUnavailableError('The database file is missing')
        return 'missing'
      }
      const wal = fileId(`${this.path}-wal`)
      if (sameFile(wal, this.staleWal)) {
        throw new Error(`the old database file's ${this.path}-wal is still at the path (another process has the old file open); opening the new file would read it as its own: stop that process, or remove ${this.path}-wal and ${this.path}-shm if they hold nothing of the new file`)
      }
      this.staleWal = undefined
      // looked at before SQLite opens it: a -wal it may not write (one a read-only connection left) makes the
      // connection read-only, and SQLite then gives that -wal, empty, the file's mode, so that it looks writable after
      const mayWrite = this.options.readonly || writable(this.path)
      // not `create`: a file gone again in between is not made anew, empty
      try {
        this.db = connect(this.path, { ...this.options, create: false, busyTimeoutMs: 0 })
      } catch (err) {
        // what the answers say until the next recheck opens a file: a client learns what is wrong, as the log does
        // (a fault connect() has words for: not a database, damaged, an I/O error)
        this.refused = err instanceof DatabaseUnavailableError ? err : new DatabaseUnavailableError('The database file could not be opened', { cause: err })
        throw err
      }
      this.prepareFixed()
      this.file = fileId(this.path) ?? found
      this.sidecars = [undefined, undefined]
      this.sidecarState()
      // a change mark that the old file never had: no list page cached from it is served
      this.ownWrites++
      this.refused = undefined
      // decided before the open: the -wal and -shm SQLite made for a writable file are this process's own
      this.readOnlyFile = !mayWrite
      if (this.readOnlyFile) return 'readonly'
      return reopenWritable ? 'writable' : sidecars === 'removed' ? 'sidecars' : open ? 'reopened' : 'back'
    } finally {
      this.release()
    }
  }

  /**
   * Are the connection's -wal and -shm files still at the path: the same, gone ('removed': the
   * connection's commits since are in a -wal only it sees, and no other process has opened the file
   * since), or another file there ('taken': another process has). A read-only connection has none.
   */
  private sidecarState (): 'same' | 'removed' | 'taken' {
    if (this.options.readonly) return 'same'
    let state: 'same' | 'removed' | 'taken' = 'same'
    for (const [i, suffix] of ['-wal', '-shm'].entries()) {
      const now = fileId(`${this.path}${suffix}`)
      const was = this.sidecars[i]
      if (was === undefined) this.sidecars[i] = now
      else if (now === undefined) { if (state === 'same') state = 'removed' } else if (!sameFile(now, was)) state = 'taken'
    }
    return state
  }

  /** Writes the -wal's commits into the file and empties it: false when that failed (the -wal stays as it was). */
  private checkpoint (): boolean {
    try {
      const [result] = this.db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>
      return result?.busy === 0
    } catch {
      return false
    }
  }

  /**
   * Closes the connection to a file that is no longer at the path. Its commits still in the -wal
   * are first written into it (wherever it is now) and the -wal emptied: SQLite's own close does
   * neither for a moved file, and a -wal left at the path would be read as the next file's.
   */
  private retire (replaced = true): void {
    if (!this.checkpoint() && replaced) this.staleWal = fileId(`${this.path}-wal`)
    this.cache.clear()
    this.db.close()
  }

  async close (): Promise<void> {
    if (this.closed) return
    // refuse new calls at once; let the queued ones finish
    this.closed = true
    // a stop, not an outage: a start-up's mapping check it cuts short must not report one (plugins/database.ts)
    this.refused = new DatabaseClosedError()
    if (this.held) await new Promise<void>((resolve) => { this.turns.push(resolve) })
    else this.held = true
    this.cache.clear()
    if (this.db.open) this.db.close()
  }

  async columns (mapping: TableMapping): Promise<ColumnInfo[]> {
    let rows: Row[]
    try {
      rows = await this.query({
        text: 'SELECT name AS name, type AS type, "notnull" AS "required", dflt_value AS dflt, pk AS pk, hidden AS hidden FROM pragma_table_xinfo(@table)',
        params: [{ name: 'table', kind: 'string', value: mapping.table }]
      })
    } catch (err) {
      // SQLite compiles a view to list its columns: one whose table, column or function is gone (or
      // that names itself) fails here, and is the mapping check's problem to name, not a crash
      if (err instanceof MappingGoneError) throw new UnreadableTableError(err.detail, { cause: err })
      if ((err as { code?: unknown } | null)?.code === 'SQLITE_ERROR') throw new UnreadableTableError(String((err as Error).message), { cause: err })
      throw err
    }
    // INTEGER PRIMARY KEY (alone) is the rowid: SQLite assigns it, as SQL Server does an identity;
    // not in a WITHOUT ROWID table, where it is a plain key the writer must give
    const [list] = await this.query({ text: 'SELECT wr AS wr, type AS type, strict AS strict FROM pragma_table_list(@table)', params: [{ name: 'table', kind: 'string', value: mapping.table }] })
    const pkColumns = Number(list?.wr) === 1 ? 0 : rows.filter((r) => Number(r.pk) > 0).length
    const columns = rows.map((r) => sqliteColumnInfo(r, pkColumns, Number(list?.strict) === 1))
    // unique indexes of one column (a UNIQUE constraint, a TEXT PRIMARY KEY, CREATE UNIQUE INDEX); partial ones let duplicates in
    const unique = await this.query({
      text: 'SELECT ii.name AS name, ii.coll AS coll FROM pragma_index_list(@table) AS il JOIN pragma_index_xinfo(il.name) AS ii ' +
        'WHERE ii.key = 1 AND il."unique" = 1 AND il.partial = 0 AND (SELECT COUNT(*) FROM pragma_index_info(il.name)) = 1',
      params: [{ name: 'table', kind: 'string', value: mapping.table }]
    })
    const uniqueNames = new Set(unique.map((r) => String(r.name).toLowerCase()))
    const [table] = await this.query({ text: "SELECT sql AS sql FROM sqlite_schema WHERE type = 'table' AND name = @table COLLATE NOCASE", params: [{ name: 'table', kind: 'string', value: mapping.table }] })
    const replacing = replacingUniqueColumns(String(table?.sql ?? ''))
    for (const c of columns) {
      // the rowid (identity) is unique by itself
      if (uniqueNames.has(c.name.toLowerCase()) || c.identity) c.unique = true
      // a unique index in another collation than the column's own ('Nr' COLLATE NOCASE, its index COLLATE BINARY):
      // 'a' and 'A' are two keys, which the column's comparison takes for one
      const colls = unique.filter((r) => String(r.name).toLowerCase() === c.name.toLowerCase()).map((r) => String(r.coll).toUpperCase())
      const own = declaredCollation(String(table?.sql ?? ''), c.name)
      if (colls.length > 0 && !colls.includes(own) && /^\w+$/.test(colls[0])) c.uniqueCollation = colls[0]
      if (own !== 'BINARY' && /^\w+$/.test(own)) c.declaredCollation = own
      if (c.unique === true && replacing.has(c.name.toLowerCase())) c.replacesDuplicates = true
    }
    const triggers = await this.query({
      text: "SELECT sql AS sql FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = @table COLLATE NOCASE",
      params: [{ name: 'table', kind: 'string', value: mapping.table }]
    })
    if (triggers.some((t) => changesRowAfterInsert(String(t.sql ?? ''), list?.type === 'view'))) {
      for (const c of columns) c.changedAfterInsert = true
    }
    // FAIL anywhere (a trigger on another table may be what this insert sets off), or a trigger's RAISE(IGNORE),
    // which skips the insert without an error but keeps what the trigger wrote before it (an audit row):
    // creates run in a transaction, which the 400 for the skipped or failed insert rolls back
    const fails = await this.query({ text: "SELECT sql AS sql FROM sqlite_schema WHERE type IN ('table', 'trigger') AND (sql LIKE '%fail%' OR sql LIKE '%ignore%')", params: [] })
    if (fails.some((r) => /\bFAIL\b|\bRAISE\s*\(\s*IGNORE\s*\)/i.test(String(r.sql ?? '')))) {
      for (const c of columns) c.failKeepsChanges = true
    }
    if (list?.type === 'view') {
      const writes = (['insert', 'update', 'delete'] as const).filter((op) => triggers.some((t) => new RegExp(`\\bINSTEAD\\s+OF\\s+${op}\\b`, 'i').test(String(t.sql ?? ''))))
      for (const c of columns) c.viewWrites = writes
    }
    // One scan of the table, at start, for what the values of two kinds of columns say about how the gateway writes them:
    // CHAR(n) values a program pads to n (SQL Server pads them by itself, SQLite never): written padded too, or its lookups of
    // the padded code, foreign keys holding it and its unique index all miss the gateway's.
    // A time field's text a program writes as ISO 8601 with a T ('2026-03-29T01:30:00', with a Z or without): written so too,
    // or the picking system's own text comparisons and ORDER BY put the gateway's '2026-03-29 01:30:00.000' before every time
    // of that day (' ' sorts before 'T'). Only where every stored date-time is so
    const fixed = columns.filter((c) => isFixedWidthText(c.type) && c.maxLength !== undefined && c.maxLength > 0)
    const timeColumns = new Set(Object.entries(mapping.columns)
      .filter(([field]) => TIME_FIELDS.has(field) && mapping.timeFormats?.[field] === undefined)
      .map(([, column]) => column.toLowerCase()))
    const times = columns.filter((c) => timeColumns.has(c.name.toLowerCase()))
    const date = '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'
    const seconds = `${date}T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]`
    const sums = [
      ...fixed.map((c, i) => {
        const q = sqliteDialect.ident(c.name)
        const text = `typeof(${q}) = 'text' AND ${q} <> ''`
        return `SUM(${text} AND length(${q}) <> ${c.maxLength!}) AS "other${i}", SUM(${text} AND length(${q}) = ${c.maxLength!} AND substr(${q}, -1) = ' ') AS "padded${i}"`
      }),
      ...times.map((c, i) => {
        const q = sqliteDialect.ident(c.name)
        const text = `typeof(${q}) = 'text'`
        return `SUM(${text} AND ${q} GLOB '${date}[ Tt][0-9][0-9]:[0-9][0-9]*') AS "times${i}", SUM(${text} AND ${q} GLOB '${seconds}') AS "whole${i}", ` +
          `SUM(${text} AND ${q} GLOB '${seconds}.[0-9]*' AND NOT substr(${q}, 21) GLOB '*[^0-9]*') AS "fraction${i}", ` +
          // with a Z: strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), a modern table's DEFAULT, and JavaScript's toISOString()
          `SUM(${text} AND ${q} GLOB '${seconds}Z') AS "wholeZ${i}", ` +
          `SUM(${text} AND ${q} GLOB '${seconds}.[0-9]*Z' AND NOT substr(${q}, 21, length(${q}) - 21) GLOB '*[^0-9]*') AS "fractionZ${i}"`
      })
    ]
    const [counts] = sums.length === 0 ? [] : await this.query({ text: `SELECT ${sums.join(', ')} FROM ${sqliteDialect.table(mapping)}`, params: [] })
    fixed.forEach((c, i) => {
      if (Number(counts?.[`other${i}`] ?? 0) === 0 && Number(counts?.[`padded${i}`] ?? 0) > 0) c.padsToWidth = true
    })
    times.forEach((c, i) => {
      const [all, whole, fraction, wholeZ, fractionZ] = ['times', 'whole', 'fraction', 'wholeZ', 'fractionZ'].map((k) => Number(counts?.[`${k}${i}`] ?? 0))
      if (all > 0 && whole + fraction === all) c.isoTimeText = fraction === 0 ? 'seconds' : 'fraction'
      if (all > 0 && wholeZ + fractionZ === all) {
        c.isoTimeText = fractionZ === 0 ? 'seconds' : 'fraction'
        c.isoTimeUtc = true
      }
      // no time yet (a new installation's empty table): the form the column's DEFAULT writes, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
      // else the gateway's first rows would be of another form than the picking system's, and the next start would keep it so
      const dflt = String(rows.find((r) => String(r.name) === c.name)?.dflt ?? '')
      const shape = /strftime/i.test(dflt) ? /'%Y-%m-%dT%H:%M:(%f|%S)(Z?)'/.exec(dflt) : null
      if (all === 0 && shape !== null) {
        c.isoTimeText = shape[1] === '%f' ? 'fraction' : 'seconds'
        if (shape[2] === 'Z') c.isoTimeUtc = true
      }
    })
    // an integer key beyond what a JavaScript number holds exactly (the key's index answers at once)
    const key = columns.find((c) => c.name.toLowerCase() === mapping.columns.id?.toLowerCase())
    const keyRow = key === undefined ? undefined : rows.find((r) => String(r.name) === key.name)
    // the first column of the primary key only: a later one has no index of its own, and the check would scan the table
    if (key !== undefined && list?.type === 'table' && Number(keyRow?.pk) === 1 && /int/i.test(key.type)) {
      const limit = Number.MAX_SAFE_INTEGER
      const quoted = sqliteDialect.ident(key.name)
      // SQLite orders every text and BLOB above every number: only numbers count ('G-7' in an INT PRIMARY KEY is no wide id);
      // `< ''` (below the least text) keeps the upper range on the index
      const [range] = await this.query({ text: `SELECT EXISTS (SELECT 1 FROM ${sqliteDialect.table(mapping)} WHERE (${quoted} > ${limit} AND ${quoted} < '') OR ${quoted} < -${limit}) AS wide`, params: [] })
      if (Number(range?.wide) === 1) key.wideValues = true
    }
    // a view's id taken from a table numbered AUTOINCREMENT: SQLite never hands out an id again that such a table
    // once held, which 'max+1' over the view would, after the last row was deleted (sqlite_sequence keeps the largest)
    if (key !== undefined && list?.type === 'view') {
      let origin: string | null | undefined
      try {
        origin = this.db.prepare(`SELECT ${sqliteDialect.ident(key.name)} FROM ${sqliteDialect.table(mapping)}`).columns()[0]?.table
      } catch {}
      if (typeof origin === 'string') {
        const [base] = await this.query({ text: "SELECT sql AS sql FROM sqlite_schema WHERE type = 'table' AND name = @table COLLATE NOCASE", params: [{ name: 'table', kind: 'string', value: origin }] })
        if (/\bAUTOINCREMENT\b/i.test(String(base?.sql ?? ''))) key.sequenceTable = origin
      }
    }
    return columns
  }
}

/**
 * The collation a column of a CREATE TABLE statement declares (COLLATE NOCASE), upper case; BINARY,
 * SQLite's default, where it declares none. Read from the column definition's own tokens: comments,
 * quoted names and text ('x, y', "c COLLATE NOCASE") and what is in parentheses (a CHECK, a DEFAULT or
 * a generated column's expression, which may hold a COLLATE of its own) are no part of the answer.
 */
export function declaredCollation (sql: string, column: string): string {
  const name = column.toLowerCase()
  for (const tokens of columnDefinitions(sql)) {
    // a table constraint (PRIMARY KEY (a COLLATE NOCASE), CONSTRAINT … CHECK) names no column of its own
    if (tokens.length === 0 || /^(?:constraint|primary|unique|check|foreign)$/i.test(tokens[0]) || unquoted(tokens[0]).toLowerCase() !== name) continue
    const at = tokens.findIndex((token, i) => i > 0 && token.toUpperCase() === 'COLLATE')
    return at === -1 || at + 1 >= tokens.length ? 'BINARY' : unquoted(tokens[at + 1]).toUpperCase()
  }
  return 'BINARY'
}

/**
 * The columns (lower case) whose own unique constraint a CREATE TABLE statement declares ON CONFLICT
 * REPLACE (`"Codice" TEXT UNIQUE ON CONFLICT REPLACE`, `UNIQUE ("Codice") ON CONFLICT REPLACE`): a
 * plain INSERT or UPDATE of a value another row holds deletes that row, without an error. The
 * conflict clause of a NOT NULL constraint (`NOT NULL ON CONFLICT REPLACE`, which writes the default) does not count.
 */
export function replacingUniqueColumns (sql: string): Set<string> {
  const out = new Set<string>()
  const replaces = (tokens: string[], i: number): boolean =>
    /^on$/i.test(tokens[i]) && /^conflict$/i.test(tokens[i + 1] ?? '') && /^replace$/i.test(tokens[i + 2] ?? '')
  for (const tokens of columnDefinitions(sql)) {
    if (tokens.length === 0) continue
    let at = 0
    if (/^constraint$/i.test(tokens[0])) at = 2
    if (/^(?:unique|primary)$/i.test(tokens[at] ?? '')) {
      // a table constraint: UNIQUE (a) or PRIMARY KEY (a), of one column
      const list = tokens.find((t, i) => i > at && t.startsWith('('))
      const names = list === undefined ? [] : splitList(list.slice(1, -1))
      if (names.length === 1 && tokens.some((_, i) => replaces(tokens, i))) out.add(unquoted(names[0]).toLowerCase())
      continue
    }
    if (/^(?:check|foreign)$/i.test(tokens[at] ?? '')) continue
    // a column definition: the conflict clause belongs to the constraint before it
    let unique = false
    for (let i = 1; i < tokens.length; i++) {
      if (/^(?:unique|primary)$/i.test(tokens[i])) unique = true
      else if (/^(?:not|null|check|default|collate|references|generated|as|constraint)$/i.test(tokens[i])) unique = false
      else if (unique && replaces(tokens, i)) out.add(unquoted(tokens[0]).toLowerCase())
    }
  }
  return out
}

/** The first token of each item of a comma list (a constraint's columns: `"a b" COLLATE NOCASE, c`). */
function splitList (text: string): string[] {
  return columnDefinitions(`(${text})`).filter((tokens) => tokens.length > 0).map((tokens) => tokens[0])
}

/** An identifier token without its quotes ("a""b", [a b], `a`, 'a') */
function unquoted (token: string): string {
  const open = token[0]
  if (open === '[') return token.slice(1, -1)
  if (open === '"' || open === "'" || open === '`') return token.slice(1, -1).replaceAll(open + open, open)
  return token
}

/**
 * The column definitions and table constraints of a CREATE TABLE statement, each as its tokens: words,
 * quoted names and text whole, a parenthesized part whole, as written (comments inside it too); comments elsewhere left out.
 */
function columnDefinitions (sql: string): string[][] {
  const defs: string[][] = []
  let depth = 0
  let current: string[] = []
  // where the parenthesized part now open at depth 1 begins, and its token
  let open = 0
  let i = 0
  while (i < sql.length) {
    const ch = sql[i]
    if (ch === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i)
      i = end === -1 ? sql.length : end + 1
    } else if (ch === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2)
      i = end === -1 ? sql.length : end + 2
    } else if (ch === '"' || ch === "'" || ch === '`' || ch === '[') {
      const close = ch === '[' ? ']' : ch
      let end = sql.indexOf(close, i + 1)
      // a doubled quote is one quote character inside ([…] has no escape)
      while (close !== ']' && end !== -1 && sql[end + 1] === close) end = sql.indexOf(close, end + 2)
      if (end === -1) end = sql.length - 1
      if (depth === 1) current.push(sql.slice(i, end + 1))
      i = end + 1
    } else if (ch === '(') {
      if (depth === 1) {
        open = i
        current.push('()')
      }
      depth++
      i++
    } else if (ch === ')') {
      depth--
      i++
      if (depth === 1) current[current.length - 1] = sql.slice(open, i)
      if (depth === 0) break
    } else if (ch === ',' && depth === 1) {
      defs.push(current)
      current = []
      i++
    } else if (/\s/.test(ch) || depth !== 1) {
      i++
    } else {
      const word = /^[^\s(),'"`[]+/.exec(sql.slice(i, i + 200))![0]
      current.push(word)
      i += word.length
    }
  }
  defs.push(current)
  return defs
}

/**
 * A trigger (its CREATE TRIGGER text) that may change a row after its insert: AFTER or INSTEAD OF
 * INSERT (BEFORE is SQLite's default, and a BEFORE trigger cannot change the row it precedes) with
 * a body that updates or replaces rows. An audit trigger that only inserts elsewhere does not count.
 * On a view, any INSTEAD OF INSERT trigger counts: RETURNING shows the values the insert gave,
 * not the row the trigger made of them in the table below (its defaults, generated columns, id).
 */
export function changesRowAfterInsert (sql: string, view = false): boolean {
  const begin = /\bBEGIN\b/i.exec(sql)?.index ?? sql.length
  const head = /\b(?:(AFTER|INSTEAD\s+OF)\s+)?INSERT\s+ON\b/i.exec(sql.slice(0, begin))
  if (view && head?.[1] !== undefined && /^INSTEAD/i.test(head[1])) return true
  return head?.[1] !== undefined && /\b(?:UPDATE|REPLACE)\b/i.test(sql.slice(begin))
}

/**
 * One row of PRAGMA table_xinfo as a ColumnInfo. SQLite keeps the declared type as written
 * (`VARCHAR(40)`, `DECIMAL(18,3)`, `DATETIME`); the gateway holds values to it as SQL Server would.
 * `pkColumns`: the primary key's number of columns where the table has a rowid the key may alias; 0 in a WITHOUT ROWID table.
 * `strict`: the table is STRICT, where a column of type ANY keeps every value as given (elsewhere ANY
 * is NUMERIC affinity, which turns '0123' into 123): it is taken as a column without a declared type.
 */
export function sqliteColumnInfo (r: Row, pkColumns = 1, strict = false): ColumnInfo {
  const declared = String(r.type ?? '').trim()
  const m = /^([A-Za-z][A-Za-z0-9_ ]*?)\s*(?:\(\s*(max|\d+)\s*(?:,\s*(\d+)\s*)?\))?$/i.exec(declared)
  const named = (m?.[1] ?? declared).toLowerCase().replace(/\s+/g, ' ')
  const type = strict && named === 'any' ? '' : named
  const info: ColumnInfo = {
    name: String(r.name),
    type,
    nullable: Number(r.required) === 0 && Number(r.pk) === 0,
    // DEFAULT NULL is none: a NOT NULL column with it still needs a value
    hasDefault: r.dflt !== null && r.dflt !== undefined && !/^[\s(]*null[\s)]*$/i.test(String(r.dflt)),
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
  // a WITHOUT ROWID table (pkColumns 0) refuses a NULL key itself
  if (Number(r.pk) > 0 && Number(r.required) === 0 && pkColumns > 0 && !info.identity) info.nullKey = true
  if (strict) info.strict = true
  return info
}

/** Every SQLite database file begins with these 16 bytes (https://sqlite.org/fileformat.html). */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1')

/**
 * Why `path` cannot be opened as a SQLite database (a missing file unless created, a directory, a
 * file of something else), or undefined. An empty file is an empty database to SQLite.
 */
export function sqliteFileProblem (path: string, create: boolean): string | undefined {
  if (path === ':memory:') return undefined
  if (!existsSync(path)) {
    if (!create) return `SQLite database file '${path}' does not exist`
    // SQLite makes no directories: its own 'unable to open database file' (ENOENT) named no directory
    const dir = dirname(path)
    return existsSync(dir) ? undefined : `SQLite database file '${path}' cannot be created: its directory '${dir}' does not exist; create it first (mkdir -p '${dir}')`
  }
  const stat = statSync(path)
  if (stat.isDirectory()) return `SQLite database '${path}' is a directory, not a database file`
  if (stat.size === 0) return undefined
  const head = Buffer.alloc(SQLITE_HEADER.length)
  let fd: number | undefined
  try {
    fd = openSync(path, 'r')
    readSync(fd, head, 0, head.length, 0)
  } catch (err) {
    return `SQLite database file '${path}' cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
  return head.equals(SQLITE_HEADER) ? undefined : `'${path}' is not a SQLite database file (it does not begin with SQLite's header)`
}

/**
 * The configuration problem `serve` and `check-config` report for a SQLite database file that cannot
 * be opened (sqliteFileProblem), with what to do; db init only for a file that is not there.
 */
export function sqliteFileError (path: string, create: boolean): string | undefined {
  const problem = sqliteFileProblem(path, create)
  if (problem === undefined) return undefined
  return `database.url: ${problem}; correct DATABASE_URL or database.url${existsSync(path) ? '' : ', or create it with: picking-gateway db init'}`
}

/**
 * The configuration problem `serve` reports for a SQLite file it may not write (it switches the file
 * to WAL and creates the -wal and -shm files beside it): a restart would find it read-only again.
 * Undefined for any other error.
 */
export function sqliteReadOnlyError (path: string, err: unknown): string | undefined {
  if (!(err instanceof DatabaseUnavailableError) || err.message !== READ_ONLY) return undefined
  const user = process.getuid === undefined ? 'the user the gateway runs as' : `the user the gateway runs as (uid ${process.getuid()})`
  return `database.url: the SQLite database file '${path}' cannot be written: the gateway writes to it and creates '${path}-wal' and '${path}-shm' beside it, so the file, its directory and any -wal and -shm file there must be writable for ${user}; correct the permissions, or DATABASE_URL or database.url`
}

/** The open's settings, after the checks that need no connection (a missing file, one this process may not write). */
function openOptions (path: string, opts: SqliteOptions): ConnectOptions {
  const readonly = opts.readonly === true
  const options: ConnectOptions = {
    create: opts.create && !readonly,
    readonly,
    busyTimeoutMs: Math.max(0, Math.trunc(opts.busyTimeoutMs ?? BUSY_TIMEOUT_MS))
  }
  const problem = sqliteFileProblem(path, options.create)
  if (problem !== undefined) throw new DatabaseUnavailableError(problem)
  // SQLite would open it read-only without a word (a file in WAL mode, as it is after the first start, needs
  // no write to open), and leave -wal and -shm files as read-only as it beside it: every write would answer
  // 503, and go on doing so after the file was made writable
  if (!readonly && path !== ':memory:' && !path.startsWith('file:') && existsSync(path) && !writable(path)) throw new DatabaseUnavailableError(READ_ONLY)
  return options
}

/** A failed open's error as a command or the start says it. */
function openError (path: string, options: ConnectOptions, err: unknown): unknown {
  // A file in WAL mode without its -wal and -shm files (the gateway stopped) is read only by a user that may
  // write its directory, where SQLite makes them (SQLITE_READONLY_DIRECTORY at the connection's first read): a
  // command that only reads said 'The database is read-only: it takes no changes …', which told neither why nor what to do
  if (options.readonly && err instanceof DatabaseUnavailableError && (err.cause as { code?: unknown } | undefined)?.code === 'SQLITE_READONLY_DIRECTORY') {
    const user = process.getuid === undefined ? 'this user' : `this user (uid ${process.getuid()})`
    return new DatabaseUnavailableError(`the SQLite database file '${path}' is in WAL mode and its -wal and -shm files are not beside it (no process has it open now), so SQLite reads it only for a user that may write its directory '${dirname(path)}', which ${user} may not; run the command as the gateway's user, or while the gateway runs`, { cause: err.cause })
  }
  // said where it ends a command or the start (exit 1): which file, held by whom, and what to do;
  // a bare 'The database is busy' named neither
  if (!isBusy(err)) return err
  return new DatabaseUnavailableError(`the SQLite database file '${path}' is locked by another process (a write transaction in progress, or a program that keeps it locked) and was not released within ${options.busyTimeoutMs / 1000} s; try again once that process has finished its write`, { cause: err instanceof DatabaseUnavailableError ? err.cause : err })
}

/**
 * Opens the file, waiting for another process's lock inside SQLite (up to busyTimeoutMs), which stops
 * the event loop for that long: for tests and tools that open a file and nothing else. A process that
 * must answer signals meanwhile (serve, the commands) uses openSqliteWaiting.
 */
export function openSqlite (path: string, opts: SqliteOptions): Database {
  const options = openOptions(path, opts)
  let db: BetterSqlite3.Database
  try {
    db = connect(path, options)
  } catch (err) {
    throw openError(path, options, err)
  }
  return new SqliteDatabase(path, db, options)
}

/**
 * openSqlite that waits for another process's lock on timers, as calls do (BUSY_BACKOFF_MS, busyTimeoutMs
 * in all), never inside SQLite: each attempt to set the connection up (switching the file to WAL takes an
 * exclusive lock; a file in rollback-journal mode that another process holds locked keeps even a reader
 * out) gives up at once, so that signal handlers run between attempts. `signal` aborted ends the wait
 * with the lock's error at once (a stop during start-up); a lock released within the wait is an open
 * that succeeds. `waiting` is called once, at the first attempt that finds the file locked.
 */
export async function openSqliteWaiting (path: string, opts: SqliteOptions, signal?: AbortSignal, waiting?: (busyTimeoutMs: number) => void): Promise<Database> {
  const options = openOptions(path, opts)
  const backoff: Backoff = { deadline: performance.now() + options.busyTimeoutMs, step: 0 }
  for (let attempt = 0; ; attempt++) {
    let failure: unknown
    let db: BetterSqlite3.Database | undefined
    try {
      db = connect(path, { ...options, busyTimeoutMs: 0 })
    } catch (err) {
      failure = err
    }
    if (db !== undefined) return new SqliteDatabase(path, db, options)
    const left = backoff.deadline - performance.now()
    if (!isBusy(failure) || left <= 0 || signal?.aborted === true) throw openError(path, options, failure)
    if (attempt === 0) waiting?.(options.busyTimeoutMs)
    try {
      await delay(nextPauseMs(backoff, left), undefined, { signal })
    } catch {
      throw openError(path, options, failure)
    }
  }
}
