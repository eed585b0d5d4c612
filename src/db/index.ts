// The database layer's entry point: opens the configured dialect and re-exports what the app uses.
import { openMssql, type DbLogger } from './mssql.js'
import { openSqlite, openSqliteWaiting } from './sqlite.js'
import type { Database } from './types.js'

export interface OpenDatabaseOptions {
  logger: DbLogger
  /** SQLite: create the file when missing (the embedded demo only) */
  create?: boolean
  /**
   * open for reading only and change nothing in the database (db introspect, check-config).
   * SQLite: opened read-only, its journal mode left as it is. SQL Server: the URL's login decides.
   */
  readonly?: boolean
  /** SQLite: how long a call waits in all for another process's lock before 503 (BUSY_TIMEOUT_MS, 5 s; tests shorten it) */
  busyTimeoutMs?: number
  /** mssql: overrides the URL's password */
  password?: string
  connectTimeoutMs?: number
  requestTimeoutMs?: number
}

/** `sqlite:<path>` (also `sqlite:///abs/path`, `sqlite::memory:`) → its file path, or undefined for other URLs. */
export function sqlitePath (url: string): string | undefined {
  if (!url.startsWith('sqlite:')) return undefined
  let path = url.slice('sqlite:'.length)
  if (path.startsWith('//')) path = path.slice(2)
  return path === '' ? undefined : path
}

/**
 * Opens the database a URL names. SQLite opens synchronously (a missing file is an error unless
 * `create`); SQL Server connects in the background, so a server that is down at start answers
 * 503 until it is back instead of stopping the gateway.
 */
export function openDatabase (url: string, opts: OpenDatabaseOptions): Database {
  const path = sqlitePath(url)
  if (path !== undefined) return openSqlite(path, { create: opts.create === true, readonly: opts.readonly === true, busyTimeoutMs: opts.busyTimeoutMs })
  if (url.startsWith('mssql://')) {
    return openMssql(url, {
      logger: opts.logger,
      password: opts.password,
      connectTimeoutMs: opts.connectTimeoutMs,
      requestTimeoutMs: opts.requestTimeoutMs
    })
  }
  throw new Error('database URL: expected sqlite:<path> or mssql://<user>:<password>@<host>[:port]/<database>')
}

/**
 * openDatabase for serve and the commands: a SQLite file another process holds locked is waited for on
 * timers (openSqliteWaiting), so that a signal meanwhile is handled at once; `signal` aborted ends that
 * wait (a stop during start-up) with the lock's error. The wait is logged as it begins: a start that seems
 * to hang says why.
 */
export async function openDatabaseWaiting (url: string, opts: OpenDatabaseOptions, signal?: AbortSignal): Promise<Database> {
  const path = sqlitePath(url)
  if (path !== undefined) {
    return await openSqliteWaiting(path, { create: opts.create === true, readonly: opts.readonly === true, busyTimeoutMs: opts.busyTimeoutMs }, signal, (ms) => {
      opts.logger.warn({ file: path, busyTimeoutMs: ms }, `the SQLite database file '${path}' is locked by another process: waiting up to ${ms / 1000} s for it`)
    })
  }
  return openDatabase(url, opts)
}

/**
 * One reading of the database server's clock (SQL Server; undefined on SQLite, which has none of its own)
 * against this host's: it was taken at some moment of the round trip, so the server is behind this host by
 * at most `behindAtMost` (from the round trip's end) and at least `behindAtLeast` (from its start; ahead by
 * at least -behindAtMost when that is negative). A slow round trip widens the range, and is no clock to set.
 */
export async function readServerClock (db: Pick<Database, 'clock'>, now: () => number = Date.now): Promise<{ behindAtMost: number, behindAtLeast: number } | undefined> {
  if (db.clock === undefined) return undefined
  const sent = now()
  const server = await db.clock()
  const received = now()
  if (!Number.isFinite(server)) return undefined
  return { behindAtMost: received - server, behindAtLeast: sent - server }
}

export type { DbLogger } from './mssql.js'
export type { Database, DialectName, Executor, FieldDef, FieldKind, Param, ResourceDef, Row, SqlValue, Statement, TableMapping } from './types.js'
export { BadQueryError, ConflictError, DatabaseUnavailableError, DbError, NotFoundError, PreconditionFailedError, SchemaMismatchError } from './errors.js'
export { idField, mappingProblems, materials, referenceMappings, resources, stations, users, type ResourceName } from './resources.js'
export { DEFAULT_LIMIT, MAX_LIMIT, encodeCursor, nextLink, parseIsoDateTime, parseListQuery, type Filter, type ListQuery, type QueryString, type SortKey } from './list-query.js'
export { Repository, type Id, type ListResult, type UpdateOptions, type WriteOptions } from './repository.js'
export { createReferenceTables, createTableStatements } from './init.js'
export { demoMaterials, demoStations, seedDemoData } from './demo-data.js'
