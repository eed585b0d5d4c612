// The SQL Server dialect: one mssql ConnectionPool that reconnects on its own, typed parameters, error mapping.
import { createRequire } from 'node:module'
import type Mssql from 'mssql'
import { knownCodePage } from './code-pages.js'
import { mssqlDataFault } from './data-errors.js'
import { ConflictError, DatabaseClosedError, DatabaseUnavailableError, DataFaultError, MappingGoneError, READ_ONLY, STORAGE_FULL, type DbError } from './errors.js'
import type { ColumnInfo, Database, Executor, Param, Row, SqlValue, Statement, TableMapping } from './types.js'

type Driver = typeof Mssql
let driver: Driver | undefined
/** The driver, loaded on first use: an installation on SQLite never pays its memory (about 30 MB). */
const sql: Driver = new Proxy({} as Driver, {
  get: (_, key) => (driver ??= createRequire(import.meta.url)('mssql') as Driver)[key as keyof Driver]
})

/** The server's clock in UTC as ISO 8601 text to the millisecond (style 126, cut after the milliseconds). */
export const CLOCK_STATEMENT = 'SELECT CONVERT(varchar(23), SYSUTCDATETIME(), 126) AS [now]'

/** The pino subset the database layer logs through. */
export interface DbLogger {
  info (obj: object, msg?: string): void
  warn (obj: object, msg?: string): void
  error (obj: object, msg?: string): void
}

export interface MssqlOptions {
  /** overrides the URL's password (systemd credential) */
  password?: string
  /** default 5000: shorter than Fastify's plugin timeout so start-up never stalls on a dead server */
  connectTimeoutMs?: number
  /** default 15000 */
  requestTimeoutMs?: number
  logger: DbLogger
  /** reconnect backoff; defaults 500 ms doubling up to 30 s */
  retryInitialMs?: number
  retryMaxMs?: number
}

// ---------------------------------------------------------------------------------------------
// URL -> driver configuration

function optionValue (raw: string): string | number | boolean {
  if (raw === 'true') return true
  if (raw === 'false') return false
  if (/^-?\d+(?:\.\d+)?$/.test(raw)) return Number(raw)
  return raw
}

/**
 * `mssql://user:password@host[:port]/database?encrypt=true&trustServerCertificate=false`.
 * User, password and database are percent-decoded; every query parameter becomes the driver
 * option of the same name (`pool.max` and friends go to the pool), 'true'/'false' and numbers
 * parsed. Errors never repeat the URL (it holds a password).
 */
export function parseMssqlUrl (url: string, opts: Pick<MssqlOptions, 'password' | 'connectTimeoutMs' | 'requestTimeoutMs'> = {}): Mssql.config {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    throw new Error('database URL is not a valid mssql:// URL')
  }
  if (u.protocol !== 'mssql:') throw new Error(`database URL: expected the mssql: scheme, got '${u.protocol}'`)
  const server = u.hostname.replace(/^\[(.*)\]$/, '$1')
  if (server === '') throw new Error('database URL: the host is missing')
  const segments = u.pathname.split('/').filter((s) => s !== '')
  if (segments.length !== 1) throw new Error('database URL: expected exactly one path segment, the database name')
  const options: Record<string, unknown> = { appName: 'picking-gateway' }
  const pool: Record<string, unknown> = {}
  for (const [key, raw] of u.searchParams) {
    if (key.startsWith('pool.')) pool[key.slice(5)] = optionValue(raw)
    else options[key] = optionValue(raw)
  }
  const config: Mssql.config = {
    server,
    database: decodeURIComponent(segments[0]),
    connectionTimeout: opts.connectTimeoutMs ?? 5000,
    requestTimeout: opts.requestTimeoutMs ?? 15000,
    options: options as Mssql.IOptions,
    pool: pool as Mssql.config['pool']
  }
  if (u.port !== '') config.port = Number(u.port)
  if (u.username !== '') config.user = decodeURIComponent(u.username)
  const password = opts.password ?? (u.password !== '' ? decodeURIComponent(u.password) : undefined)
  if (password !== undefined) config.password = password
  return config
}

// ---------------------------------------------------------------------------------------------
// parameters

const INT_MIN = -2147483648
const INT_MAX = 2147483647

/** A T-SQL type text (`varchar(8000)`, `decimal(18,3)`, `datetime2(7)`) as the driver's type object. */
export function sqlTypeOf (text: string): Mssql.ISqlType | undefined {
  const m = /^([a-z0-9]+)(?:\((max|\d+)(?:,(\d+))?\))?$/.exec(text)
  if (m === null) return undefined
  const [, name, a, b] = m
  const len = a === 'max' ? sql.MAX : Number(a)
  switch (name) {
    case 'varchar': return sql.VarChar(len)
    case 'nvarchar': return sql.NVarChar(len)
    case 'tinyint': return sql.TinyInt()
    case 'smallint': return sql.SmallInt()
    case 'int': return sql.Int()
    case 'bigint': return sql.BigInt()
    case 'decimal': return sql.Decimal(Number(a), Number(b ?? 0))
    case 'money': return sql.Money()
    case 'smallmoney': return sql.SmallMoney()
    case 'float': return sql.Float()
    case 'real': return sql.Real()
    case 'bit': return sql.Bit()
    case 'datetime': return sql.DateTime()
    case 'smalldatetime': return sql.SmallDateTime()
    case 'datetime2': return sql.DateTime2(Number(a ?? 7))
    case 'datetimeoffset': return sql.DateTimeOffset(Number(a ?? 7))
    case 'date': return sql.Date()
    default: return undefined
  }
}

/**
 * The declared SQL type of a parameter: the column's own type when the statement builder knows it
 * (`p.type`), else by kind. Strings default to NVarChar(4000) (MAX beyond it), not their own
 * length, so that SQL Server reuses one cached plan for every value.
 */
export function mssqlType (p: Param): Mssql.ISqlType {
  if (p.type !== undefined) {
    const type = sqlTypeOf(p.type)
    if (type !== undefined) return type
  }
  switch (p.kind) {
    case 'string':
      return typeof p.value === 'string' && p.value.length > 4000 ? sql.NVarChar(sql.MAX) : sql.NVarChar(4000)
    case 'integer':
      return typeof p.value === 'number' && (p.value < INT_MIN || p.value > INT_MAX) ? sql.BigInt() : sql.Int()
    case 'number':
      return sql.Float()
    case 'boolean':
      return sql.Bit()
    case 'datetime':
      return sql.DateTime2(3)
  }
}

/** The last millisecond of SQL Server's datetime2 and datetimeoffset (9999-12-31 23:59:59.999). */
const LAST_TIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999)

/**
 * A time for a datetime2 or datetimeoffset of scale 0 to 2, rounded to what the column holds, as
 * SQL Server's own conversion rounds. tedious rounds the time of day alone and does not carry into
 * the date: 23:59:59.6 went to a datetime2(0) as 24:00:00 of the same day, which the server refuses
 * (error 8023, not a valid instance of datetime2), so a stamp taken in a day's last half second
 * failed the write. A time that would round past 9999-12-31 keeps its last whole unit.
 */
function timeAtScale (value: Date, type: string): Date {
  const m = /^(?:datetime2|datetimeoffset)\(([0-2])\)$/.exec(type)
  if (m === null) return value
  const unit = 10 ** (3 - Number(m[1]))
  const t = value.getTime()
  const rounded = Math.round(t / unit) * unit
  return new Date(rounded > LAST_TIME_MS ? Math.floor(t / unit) * unit : rounded)
}

/**
 * The value a parameter is sent with: a boolean written to an int column (a flag kept as 0/1) travels
 * as a number; a time for a datetime2 or datetimeoffset of scale 0 to 2 rounded to the column's scale (timeAtScale).
 */
export function mssqlValue (p: Param): SqlValue {
  if (p.value instanceof Date && p.type !== undefined) return timeAtScale(p.value, p.type)
  return typeof p.value === 'boolean' && p.type !== undefined && p.type !== 'bit' ? Number(p.value) : p.value
}

function request (target: Mssql.ConnectionPool | Mssql.Transaction, stmt: Statement): Mssql.Request {
  const req = new sql.Request(target as Mssql.ConnectionPool)
  for (const p of stmt.params) req.input(p.name, mssqlType(p), mssqlValue(p))
  return req
}

/** A message a trigger raised below severity 11, as node-mssql's 'info' event gives it. */
export interface RaisedInfo { number: number, message: string }

/**
 * Runs a request's text, keeping the messages the batch raised with its own numbers (50000 and up)
 * below severity 11: a legacy trigger's RAISERROR('…', 10, 1) before its ROLLBACK reaches the client
 * as information, not as an error, so the error node-mssql throws (the 3609 that ends the batch)
 * lacks the trigger's words. A failed batch's error carries them as `raisedInfo` (mssqlDataFault).
 */
export async function queryKeepingRaised (req: Pick<Mssql.Request, 'on' | 'query'>, text: string): Promise<Mssql.IResult<Row>> {
  const raised: RaisedInfo[] = []
  req.on('info', (info: { number?: unknown, message?: unknown }) => {
    if (typeof info.number === 'number' && info.number >= 50000 && typeof info.message === 'string') raised.push({ number: info.number, message: info.message })
  })
  try {
    return await req.query(text)
  } catch (err) {
    if (raised.length > 0 && typeof err === 'object' && err !== null) Object.defineProperty(err, 'raisedInfo', { value: raised, configurable: true })
    throw err
  }
}

// ---------------------------------------------------------------------------------------------
// errors

export type MssqlErrorClass =
  /** unique key (2627, 2601): 409 */
  | 'conflict'
  /** chosen as deadlock victim (1205): retry */
  | 'deadlock'
  /** the server cannot be reached or refuses the login: 503, and the pool is marked down */
  | 'connection'
  /** this request could not finish (request timeout, lock timeout, lost socket): 503 */
  | 'unavailable'
  /** a column or table the statement names is not there (207, 208): the mapping no longer fits, 503 */
  | 'schema'
  /**
   * the gateway's login may not do it: read or write an object (229, 230), create one (262), this
   * action (297), server state (300), use the database at all (916): 503 until an administrator changes it
   */
  | 'refused'
  /** the database is read-only (3906: a backup, a failover's secondary): 503 until it is writable */
  | 'readOnly'
  /** its file group or transaction log is full (1101, 1105, 9002; Azure SQL's size quota 40544): 503 until space is freed */
  | 'full'
  /**
   * an identity column has no value left to give: its type's last value reached (8115 converting IDENTITY), or the range
   * merge or transactional replication assigned to this server (548): 503, no create passes until that is fixed
   */
  | 'identity'
  /**
   * the mapped object is a view the server cannot write through: the change touches several base tables (4405), a
   * derived or constant column (4406), or the view aggregates (4403): 503, until it is mapped to its base table or
   * given INSTEAD OF triggers
   */
  | 'view'
  | 'other'

// Connection-level SQL errors: cannot open database, login failed, Azure SQL transient errors; an Always On
// availability database not accessible on this replica (976, 978) or between roles during a failover (983).
const CONNECTION_NUMBERS = new Set([4060, 18456, 18401, 40613, 40197, 40501, 49918, 49919, 49920, 10928, 10929, 233, 64, 121, 10053, 10054, 10060, 976, 978, 983])
/** Permission denied: the installation's fault, not the request's (MssqlErrorClass 'refused'). */
const REFUSED_NUMBERS = new Set([229, 230, 262, 297, 300, 916])
/** A file group or the transaction log full, or Azure SQL's size quota reached (MssqlErrorClass 'full'). */
const FULL_NUMBERS = new Set([1101, 1105, 9002, 40544])
const CONNECTION_CODES = new Set(['ELOGIN', 'ESOCKET', 'ETIMEOUT', 'ECONNCLOSED', 'ENOTOPEN', 'EINSTLOOKUP', 'ENOCONN'])

/**
 * Tells errors apart by class, `code` and SQL `number` (node-mssql README). A failed login counts
 * as 'connection': the server is unusable until an administrator or a restarting server fixes
 * it, which a retry in the background notices; the log says it was the login.
 */
/** A write through a view the server cannot carry out: 4403 (aggregates, DISTINCT, GROUP BY), 4405 (several base tables), 4406 (a derived or constant column). */
const VIEW_NUMBERS = new Set([4403, 4405, 4406])

export function classifyMssqlError (err: unknown): MssqlErrorClass {
  if (typeof err !== 'object' || err === null) return 'other'
  const e = err as { name?: unknown, code?: unknown, number?: unknown, originalError?: unknown }
  if (e.name === 'TransactionError' && e.code === 'EABORT' && e.originalError !== undefined) return classifyMssqlError(e.originalError)
  const number = typeof e.number === 'number' ? e.number : undefined
  if (number === 2627 || number === 2601) return 'conflict'
  if (number === 1205) return 'deadlock'
  if (number === 207 || number === 208) return 'schema'
  if (number !== undefined && REFUSED_NUMBERS.has(number)) return 'refused'
  if (number === 3906) return 'readOnly'
  if (number !== undefined && FULL_NUMBERS.has(number)) return 'full'
  // "Arithmetic overflow error converting IDENTITY to data type int.": the table's counter, not a value the request
  // gave (those are checked against their column before any SQL runs); the keyword stays English in every language
  if (number === 8115 && typeof (e as { message?: unknown }).message === 'string' && /\bIDENTITY\b/.test((e as { message: string }).message)) return 'identity'
  if (number === 548) return 'identity'
  if (number !== undefined && VIEW_NUMBERS.has(number)) return 'view'
  if (number !== undefined && CONNECTION_NUMBERS.has(number)) return 'connection'
  const code = typeof e.code === 'string' ? e.code : undefined
  if (e.name === 'ConnectionError') return 'connection'
  if (code !== undefined && CONNECTION_CODES.has(code)) {
    // a request that timed out or lost its socket says nothing about the next one
    return e.name === 'RequestError' ? 'unavailable' : 'connection'
  }
  if (number === 1222 || number === -2 || code === 'ECANCEL') return 'unavailable'
  // node-mssql throws a batch's last error: after a trigger's failure that is the 3616 or 3609 that ends the
  // batch, and the cause (a unique key its INSERT into another table hit, a deadlock) is among the ones before
  const preceding = (err as { precedingErrors?: unknown }).precedingErrors
  if (Array.isArray(preceding)) {
    for (const one of preceding) {
      const cause = classifyMssqlError(one)
      if (cause !== 'other') return cause
    }
  }
  return 'other'
}

/** The layer's error for a driver error, or the error itself when it has none. */
export function toDbError (err: unknown): DbError | unknown {
  switch (classifyMssqlError(err)) {
    case 'conflict': return new ConflictError('A row with the same unique key already exists', { cause: err })
    case 'deadlock': return new DatabaseUnavailableError('The database is busy (deadlock)', { cause: err })
    case 'connection': return new DatabaseUnavailableError(undefined, { cause: err })
    case 'unavailable': return new DatabaseUnavailableError('The database did not answer in time', { cause: err })
    // a grant revoked or a database set read-only (a backup, a failover's secondary): a fault of the
    // installation, not of the request; the log has the server's words, which name the object
    case 'refused': return new DatabaseUnavailableError('The database does not let the gateway\'s login do this (permission denied); the log names what it refused', { cause: err })
    case 'readOnly': return new DatabaseUnavailableError(READ_ONLY, { cause: err })
    case 'full': return new DatabaseUnavailableError(STORAGE_FULL, { cause: err })
    case 'identity': return new DatabaseUnavailableError('A table of the picking system has used up its ids: its identity column has reached the last value it may give (its type\'s largest, or the end of the range replication gave this server), and it takes no new rows until an administrator widens or reseeds it, or replication gives a new range (the log names it)', { cause: err })
    case 'view': return new DatabaseUnavailableError('The mapped view cannot take this change: the server cannot write through it (it joins several tables, or the field is computed or constant there); map the view\'s base table, or give the view INSTEAD OF triggers (the log has the server\'s words)', { cause: err })
    case 'schema': {
      // the server's own words, from inside a transaction's abort too
      const e = err as { name?: unknown, message?: unknown, originalError?: { message?: unknown } }
      const message = e.name === 'TransactionError' ? e.originalError?.message : e.message
      return new MappingGoneError(String(message).replace(/\.$/, ''), { cause: err })
    }
    default: {
      const fault = mssqlDataFault(err)
      return fault === undefined ? err : new DataFaultError(fault, { cause: err })
    }
  }
}

// ---------------------------------------------------------------------------------------------
// connection supervision

/** Capped exponential backoff with ±jitter/2 spread; `attempt` counts from 1. */
export function backoffDelay (attempt: number, initialMs: number, maxMs: number, random: () => number = Math.random, jitter = 0.2): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.min(30, Math.max(0, attempt - 1)))
  return Math.round(base * (1 + jitter * (random() - 0.5)))
}

export type SupervisorState = 'starting' | 'up' | 'down' | 'closed'

export interface SupervisorOptions {
  /** one attempt to (re)establish the connection; rejects when the server is unreachable */
  connect: () => Promise<void>
  logger: DbLogger
  initialMs?: number
  maxMs?: number
  random?: () => number
}

/**
 * Keeps the connection state. The first attempt runs at start and callers wait for it (bounded
 * by the connect timeout). After that, while the server is unreachable, callers are refused at
 * once (`ready()` rejects) and a timer retries with capped exponential backoff until it is back.
 */
export class ConnectionSupervisor {
  state: SupervisorState = 'starting'
  private attempt = 0
  private timer: NodeJS.Timeout | undefined
  private inflight: Promise<boolean> | undefined
  private lastError: unknown
  private readonly opts: Required<Omit<SupervisorOptions, 'random'>> & Pick<SupervisorOptions, 'random'>

  constructor (opts: SupervisorOptions) {
    this.opts = { ...opts, initialMs: opts.initialMs ?? 500, maxMs: opts.maxMs ?? 30000 }
  }

  start (): void {
    if (this.inflight === undefined && this.state === 'starting') this.inflight = this.tryConnect()
  }

  private async tryConnect (): Promise<boolean> {
    try {
      await this.opts.connect()
    } catch (err) {
      this.inflight = undefined
      if (this.state === 'closed') return false
      this.lastError = err
      this.state = 'down'
      this.attempt++
      const delay = backoffDelay(this.attempt, this.opts.initialMs, this.opts.maxMs, this.opts.random)
      const log = this.attempt === 1 ? this.opts.logger.error.bind(this.opts.logger) : this.opts.logger.warn.bind(this.opts.logger)
      log({ err, attempt: this.attempt, retryInMs: delay }, isLoginFailure(err)
        ? 'database login failed; check the user and password; retrying'
        : 'database unreachable; retrying in the background')
      this.schedule(delay)
      return false
    }
    this.inflight = undefined
    if (this.state === 'closed') return false
    if (this.attempt > 0) this.opts.logger.info({ attempts: this.attempt }, 'database connection established')
    this.attempt = 0
    this.state = 'up'
    return true
  }

  private schedule (delay: number): void {
    clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.timer = undefined
      if (this.state === 'down') this.inflight = this.tryConnect()
    }, delay)
    this.timer.unref()
  }

  /** Resolves when queries may run; rejects at once with DatabaseUnavailableError while down. */
  async ready (): Promise<void> {
    if (this.state === 'up') return
    if (this.state === 'starting' && this.inflight !== undefined) {
      if (await this.inflight) return
    }
    // closed while it waited for the first attempt (a stop during start-up): not the server's outage
    if (this.state === 'closed') throw new DatabaseClosedError({ cause: this.lastError })
    throw new DatabaseUnavailableError(undefined, { cause: this.lastError })
  }

  /** A query found the server gone: refuse further queries until a retry gets through. */
  markDown (err: unknown): void {
    if (this.state !== 'up') return
    this.lastError = err
    this.state = 'down'
    this.attempt = 0
    this.opts.logger.error({ err }, 'database connection lost; retrying in the background')
    this.schedule(backoffDelay(1, this.opts.initialMs, this.opts.maxMs, this.opts.random))
  }

  async close (): Promise<void> {
    this.state = 'closed'
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.inflight !== undefined) await this.inflight
  }
}

function isLoginFailure (err: unknown): boolean {
  const e = err as { code?: unknown, number?: unknown } | null
  return e?.code === 'ELOGIN' || e?.number === 18456
}

// ---------------------------------------------------------------------------------------------
// the Database

/**
 * Runs fn again when SQL Server chose it as a deadlock victim (1205), up to `retries` times
 * after a short random pause; the server has already rolled the victim back.
 */
export async function retryDeadlocks<T> (fn: () => Promise<T>, retries = 3, pause: (attempt: number) => Promise<void> = randomPause): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn()
    } catch (err) {
      if (attempt > retries || classifyMssqlError(err) !== 'deadlock') throw err
      await pause(attempt)
    }
  }
}

async function randomPause (attempt: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 40 * attempt))
}

/**
 * The rows of a statement's own result: its batch's last result set. A legacy trigger may SELECT
 * (an audit, a debugging leftover, allowed by default): its rows come first, before those of the
 * read-back that ends an insert's batch, and taking the first would answer a create with them.
 */
export function statementRows (result: { recordset?: unknown, recordsets?: unknown }): Row[] {
  const sets = Array.isArray(result.recordsets) ? result.recordsets as Row[][] : []
  const rows = sets.length > 0 ? sets[sets.length - 1] : (result.recordset ?? []) as Row[]
  return readAsStored(rows, (rows as { columns?: unknown }).columns)
}

/**
 * A decimal or numeric of 16 digits or more as the nearest double of the stored value. tedious reads
 * one as the sum of its 32-bit words in doubles, divided by 10^scale, up to 2 units in the last place
 * off: 23.63 in a decimal(38,20) (Dynamics NAV's every decimal) arrives as 23.630000000000003. The API
 * would show that, an update sending 23.63 would take it for a change, and a keyset cursor would carry
 * it, whose parameter then equals no stored 23.63 (the page's ties after it were skipped). The value
 * of 15 significant digits within 4 units in the last place; any other value as read.
 */
export function wideDecimal (n: number): number {
  const short = Number(n.toPrecision(15))
  return Math.abs(short - n) <= 4 * Number.EPSILON * Math.abs(n) ? short : n
}

/**
 * A real (4 bytes) as the shortest decimal that is the same real: 1.1, as the picking system wrote
 * it and SQL Server's tools show it, not the 1.100000023841858 its widening to a double gives, which
 * an update sending 1.1 would take for a change (and write the same real again, touching modifiedAt).
 */
export function shortReal (n: number): number {
  for (let digits = 1; digits < 9; digits++) {
    const short = Number(n.toPrecision(digits))
    if (Math.fround(short) === n) return short
  }
  return n
}

/** the driver's type constructors readAsStored compares with, looked up once */
let types: { decimal: unknown, numeric: unknown, real: unknown } | undefined

/** The rows with wide decimals and reals read as stored (wideDecimal, shortReal), by the result's column types. */
function readAsStored (rows: Row[], columns: unknown): Row[] {
  if (rows.length === 0 || typeof columns !== 'object' || columns === null) return rows
  // every statement's result passes here: nothing allocated for one that needs no fix (the usual case)
  types ??= { decimal: sql.Decimal, numeric: sql.Numeric, real: sql.Real }
  const cols = columns as Record<string, { type?: unknown, precision?: unknown, scale?: unknown }>
  let fixes: Array<[string, (n: number) => number]> | undefined
  for (const name in cols) {
    const c = cols[name]
    // scale 0: the driver's word sum is not divided, so it reads every whole number up to 2^53 exactly
    // (a decimal(18,0) key of 16 digits must not lose its last one)
    if ((c.type === types.decimal || c.type === types.numeric) && typeof c.precision === 'number' && c.precision > 15 && c.scale !== 0) (fixes ??= []).push([name, wideDecimal])
    else if (c.type === types.real) (fixes ??= []).push([name, shortReal])
  }
  if (fixes === undefined) return rows
  for (const row of rows) {
    for (const [name, fix] of fixes) {
      const v = row[name]
      if (typeof v === 'number') row[name] = fix(v)
    }
  }
  return rows
}

/**
 * The statement that reads a table's (or view's) columns: INFORMATION_SCHEMA.COLUMNS for type,
 * length, precision, nullability and default; COLUMNPROPERTY for identity and computed columns;
 * COLLATIONPROPERTY for the code page of a varchar column's collation.
 */
export function columnsStatement (mapping: TableMapping): Statement {
  const object = 'OBJECT_ID(QUOTENAME([TABLE_SCHEMA]) + N\'.\' + QUOTENAME([TABLE_NAME]))'
  return {
    text: 'SELECT [COLUMN_NAME] AS [name], [DATA_TYPE] AS [type], [CHARACTER_MAXIMUM_LENGTH] AS [maxLength], ' +
      '[NUMERIC_PRECISION] AS [precision], [NUMERIC_SCALE] AS [scale], [DATETIME_PRECISION] AS [timeScale], ' +
      '[IS_NULLABLE] AS [nullable], ' +
      // COLUMN_DEFAULT is the default's definition, which a login without VIEW DEFINITION does not see
      // (NULL): sys.columns still tells that there is one. DEFAULT NULL, when readable, counts as none.
      'CASE WHEN [COLUMN_DEFAULT] IS NOT NULL THEN CASE WHEN REPLACE(REPLACE([COLUMN_DEFAULT], \'(\', \'\'), \')\', \'\') = \'NULL\' THEN 0 ELSE 1 END ' +
      `WHEN EXISTS (SELECT 1 FROM sys.columns AS [c] WHERE [c].[object_id] = ${object} AND [c].[name] = [COLUMN_NAME] AND [c].[default_object_id] <> 0) THEN 1 ELSE 0 END AS [hasDefault], ` +
      `COLUMNPROPERTY(${object}, [COLUMN_NAME], 'IsIdentity') AS [identity], ` +
      // GENERATED ALWAYS columns (temporal periods, ledger tables) are NOT NULL without a default, and
      // the server fills them (a write is error 13536): computed, as far as the gateway is concerned.
      // COLUMNPROPERTY, not sys.columns.generated_always_type: that column is new in SQL Server 2016
      // and would fail the whole statement before it, where the property is merely NULL.
      `CASE WHEN COLUMNPROPERTY(${object}, [COLUMN_NAME], 'IsComputed') = 1 OR COLUMNPROPERTY(${object}, [COLUMN_NAME], 'GeneratedAlwaysType') <> 0 THEN 1 ELSE 0 END AS [computed], ` +
      // a unique index (primary key, unique constraint) on this column alone and without a filter
      'CASE WHEN EXISTS (SELECT 1 FROM sys.indexes AS [i] ' +
      'JOIN sys.index_columns AS [ic] ON [ic].[object_id] = [i].[object_id] AND [ic].[index_id] = [i].[index_id] AND [ic].[key_ordinal] > 0 ' +
      'JOIN sys.columns AS [k] ON [k].[object_id] = [ic].[object_id] AND [k].[column_id] = [ic].[column_id] ' +
      // not a disabled or hypothetical one, nor IGNORE_DUP_KEY (which drops a duplicate insert without an error)
      `WHERE [i].[object_id] = ${object} AND [i].[is_unique] = 1 AND [i].[has_filter] = 0 AND [i].[is_disabled] = 0 AND [i].[is_hypothetical] = 0 AND [i].[ignore_dup_key] = 0 AND [k].[name] = [COLUMN_NAME] ` +
      'AND NOT EXISTS (SELECT 1 FROM sys.index_columns AS [o] WHERE [o].[object_id] = [i].[object_id] AND [o].[index_id] = [i].[index_id] ' +
      'AND [o].[key_ordinal] > 0 AND [o].[column_id] <> [ic].[column_id])) THEN 1 ELSE 0 END AS [unique], ' +
      '[COLLATION_NAME] AS [collation], CONVERT(int, COLLATIONPROPERTY([COLLATION_NAME], \'CodePage\')) AS [codePage], ' +
      // an INSTEAD OF INSERT trigger (on a table or a view) inserts the row itself: OUTPUT sees the values given, not the
      // id it got (OBJECTPROPERTY's HasInsteadOfTrigger counts the soft deletes' INSTEAD OF DELETE too)
      'CASE WHEN EXISTS (SELECT 1 FROM sys.triggers AS [tr] JOIN sys.trigger_events AS [te] ON [te].[object_id] = [tr].[object_id] ' +
      `WHERE [tr].[parent_id] = ${object} AND [tr].[is_instead_of_trigger] = 1 AND [tr].[is_disabled] = 0 AND [te].[type_desc] = N'INSERT') THEN 1 ELSE 0 END AS [insteadOf] ` +
      'FROM INFORMATION_SCHEMA.COLUMNS WHERE [TABLE_SCHEMA] = @schema AND [TABLE_NAME] = @table ORDER BY [ORDINAL_POSITION]',
    params: tableParams(mapping)
  }
}

/** @schema and @table of the catalog statements: the mapping's schema (dbo unless it names one) and table. */
function tableParams (mapping: TableMapping): Statement['params'] {
  return [
    { name: 'schema', kind: 'string', value: mapping.schema ?? 'dbo' },
    { name: 'table', kind: 'string', value: mapping.table }
  ]
}

/**
 * The tables and views whose schema and name are the mapping's but for case, for a mapping whose
 * table columnsStatement did not find: in a database with a case-sensitive collation
 * (Latin1_General_CS_AS, a _BIN2 one) names are compared with their case, so [wms].[artikel] is not
 * [wms].[Artikel], and `db init` would create it as a second, empty table beside the picking system's.
 */
export function spellingsStatement (mapping: TableMapping): Statement {
  return {
    text: 'SELECT [TABLE_SCHEMA] AS [schema], [TABLE_NAME] AS [table] FROM INFORMATION_SCHEMA.TABLES ' +
      'WHERE UPPER([TABLE_SCHEMA]) = UPPER(@schema) AND UPPER([TABLE_NAME]) = UPPER(@table) ORDER BY [TABLE_SCHEMA], [TABLE_NAME]',
    params: tableParams(mapping)
  }
}

/**
 * The synonyms of the mapping's schema and name (in any case), for a mapping whose table neither
 * columnsStatement nor spellingsStatement found: SQL Server lists no columns for a synonym, and `db
 * init` would try to create a table of its name (error 2714) after start-up had called it missing.
 */
export function synonymsStatement (mapping: TableMapping): Statement {
  return {
    text: 'SELECT SCHEMA_NAME([schema_id]) AS [schema], [name] AS [table], [base_object_name] AS [target] FROM sys.synonyms ' +
      'WHERE UPPER(SCHEMA_NAME([schema_id])) = UPPER(@schema) AND UPPER([name]) = UPPER(@table) ORDER BY [schema], [table]',
    params: tableParams(mapping)
  }
}

/** The server's version ('10.50.6000.34' for SQL Server 2008 R2, '16.0.1000.6' for 2022): lists page with OFFSET … FETCH, which needs 11 (2012). */
export const VERSION_STATEMENT: Statement = { text: "SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)) AS [version]", params: [] }

/** Why the server's version (VERSION_STATEMENT's) cannot run the gateway's statements; undefined when it can, or is not known. */
export function versionProblem (version: unknown): string | undefined {
  const major = typeof version === 'string' ? /^(\d+)\./.exec(version)?.[1] : undefined
  if (major === undefined || Number(major) >= 11) return undefined
  return `SQL Server ${version as string} is older than the gateway needs: it pages its lists with OFFSET … FETCH, which SQL Server 2012 (version 11) and later understand, so every list would fail (error 102, incorrect syntax near 'OFFSET'); upgrade the server`
}

const TIME_TYPES = new Set(['datetime2', 'datetimeoffset', 'time'])

/** One row of columnsStatement as a ColumnInfo. */
export function mssqlColumnInfo (r: Row): ColumnInfo {
  const type = String(r.type).toLowerCase()
  const num = (v: unknown): number | undefined => v === null || v === undefined ? undefined : Number(v)
  const info: ColumnInfo = {
    name: String(r.name),
    type,
    nullable: r.nullable === 'YES',
    hasDefault: Number(r.hasDefault) === 1,
    identity: Number(r.identity) === 1,
    computed: Number(r.computed) === 1
  }
  if (Number(r.unique) === 1) info.unique = true
  if (Number(r.insteadOf) === 1) info.insteadOf = true
  const maxLength = num(r.maxLength)
  if (maxLength !== undefined) info.maxLength = maxLength
  if (TIME_TYPES.has(type)) {
    info.scale = num(r.timeScale) ?? 7
  } else if (num(r.precision) !== undefined) {
    info.precision = num(r.precision)
    info.scale = num(r.scale) ?? 0
  }
  // a binary collation may go on with _UTF8 (Latin1_General_100_BIN2_UTF8)
  if (typeof r.collation === 'string' && /_CS(_|$)|_BIN2?(_|$)/i.test(r.collation)) info.caseSensitive = true
  // a collation's name is letters, digits and underscores: safe to write into a COLLATE clause
  if (typeof r.collation === 'string' && /^\w+$/.test(r.collation)) info.collation = r.collation
  if (type === 'varchar' || type === 'char' || type === 'text') {
    const codePage = num(r.codePage)
    if (codePage === 65001 || (typeof r.collation === 'string' && /_UTF8$/i.test(r.collation))) info.utf8 = true
    else if (codePage !== undefined && knownCodePage(codePage)) info.codePage = codePage
  }
  // rowversion is filled by the server; identity and computed columns cannot be written
  if (info.identity || info.computed || type === 'timestamp' || type === 'rowversion') info.hasDefault = true
  return info
}

class MssqlDatabase implements Database {
  readonly dialect = 'mssql' as const
  private readonly pool: Mssql.ConnectionPool
  private readonly supervisor: ConnectionSupervisor
  private readonly logger: DbLogger

  constructor (config: Mssql.config, opts: MssqlOptions) {
    this.logger = opts.logger
    this.pool = new sql.ConnectionPool(config)
    // node-mssql re-emits every failed acquire here; without a listener an outage kills the process.
    this.pool.on('error', (err: unknown) => {
      if (this.supervisor.state === 'up') this.logger.warn({ err }, 'database pool error')
    })
    this.supervisor = new ConnectionSupervisor({
      logger: opts.logger,
      // undefined would override the supervisor's defaults and make the retry loop spin
      initialMs: opts.retryInitialMs ?? 500,
      maxMs: opts.retryMaxMs ?? 30000,
      connect: async () => {
        // the first success builds the pool; afterwards a probe through it tells whether the server is back
        if (!this.pool.connected) await this.pool.connect()
        else await this.pool.request().query('SELECT 1')
      }
    })
    this.supervisor.start()
  }

  /** Runs fn when connected, retrying deadlock victims, mapping driver errors. */
  private async run<T> (fn: () => Promise<T>): Promise<T> {
    await this.supervisor.ready()
    try {
      return await retryDeadlocks(fn)
    } catch (err) {
      if (classifyMssqlError(err) === 'connection') this.supervisor.markDown(err)
      throw toDbError(err)
    }
  }

  private static async query (target: Mssql.ConnectionPool | Mssql.Transaction, stmt: Statement): Promise<Row[]> {
    return statementRows(await queryKeepingRaised(request(target, stmt), stmt.text))
  }

  private static async execute (target: Mssql.ConnectionPool | Mssql.Transaction, stmt: Statement): Promise<number> {
    const result = await queryKeepingRaised(request(target, stmt), stmt.text)
    return result.rowsAffected.reduce((a, b) => a + b, 0)
  }

  query (stmt: Statement): Promise<Row[]> {
    return this.run(() => MssqlDatabase.query(this.pool, stmt))
  }

  execute (stmt: Statement): Promise<number> {
    return this.run(() => MssqlDatabase.execute(this.pool, stmt))
  }

  /** A deadlock victim's transaction is rolled back by the server, so fn runs again from the start. */
  transaction<T> (fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.run(async () => {
      const tx = new sql.Transaction(this.pool)
      await tx.begin()
      try {
        // any run-time error aborts the whole transaction instead of leaving it half-applied
        await new sql.Request(tx).batch('SET XACT_ABORT ON')
        const result = await fn({
          query: (stmt) => MssqlDatabase.query(tx, stmt),
          execute: (stmt) => MssqlDatabase.execute(tx, stmt)
        })
        await tx.commit()
        return result
      } catch (err) {
        try {
          await tx.rollback()
        } catch {
          // XACT_ABORT already rolled it back on the server
        }
        throw err
      }
    })
  }

  async ping (): Promise<void> {
    await this.query({ text: 'SELECT 1 AS [ok]', params: [] })
  }

  async clock (): Promise<number> {
    // as text, to the millisecond: a Date would depend on the connection's useUTC option
    const [row] = await this.query({ text: CLOCK_STATEMENT, params: [] })
    return Date.parse(`${String(row?.now)}Z`)
  }

  /** SQL Server has no cheap commit counter a client can read: conditional GETs run their query. */
  changeMark (): undefined {
    return undefined
  }

  async close (): Promise<void> {
    await this.supervisor.close()
    await this.pool.close()
  }

  async columns (mapping: TableMapping): Promise<ColumnInfo[]> {
    const rows = await this.query(columnsStatement(mapping))
    return rows.map(mssqlColumnInfo)
  }
}

/** Opens the pool in the background: a server that is down at start is retried, not fatal. */
export function openMssql (url: string, opts: MssqlOptions): Database {
  return new MssqlDatabase(parseMssqlUrl(url, opts), opts)
}
