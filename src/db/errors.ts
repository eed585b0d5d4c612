// Errors the database layer raises; the HTTP layer maps each class to one status code.

import type { DataFault } from './data-errors.js'

export class DbError extends Error {
  readonly statusCode: number
  readonly code: string
  constructor (statusCode: number, code: string, message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = new.target.name
    this.statusCode = statusCode
    this.code = code
  }
}

/** A list query or filter the caller got wrong (400). The message names the parameter. */
export class BadQueryError extends DbError {
  constructor (message: string) { super(400, 'BAD_QUERY', message) }
}

export class NotFoundError extends DbError {
  constructor (message = 'Not found') { super(404, 'NOT_FOUND', message) }
}

/** A unique key was violated (409). The message names the API field, never the table. */
export class ConflictError extends DbError {
  /** the unique index's columns, when the driver names them (SQLite) */
  readonly columns?: string[]
  /** the unique index's table, when the driver names it (SQLite): a trigger may have written another table */
  readonly table?: string
  constructor (message: string, options?: ErrorOptions, columns?: string[], table?: string) {
    super(409, 'CONFLICT', message, options)
    if (columns !== undefined) this.columns = columns
    if (table !== undefined) this.table = table
  }
}

/**
 * Several rows hold the id a request names (an id column not unique by itself): a 409, and nothing was read
 * or changed. `id` and `tableName` are for the log; the message names neither the rows nor what they hold.
 */
export class AmbiguousIdError extends ConflictError {
  constructor (readonly id: unknown, readonly tableName: string, private readonly reason: string, outcome: string) {
    super(`${reason}; ${outcome}`)
  }

  /** The same 409, saying what the caller did not do instead (a station command: nothing was sent). */
  instead (outcome: string): AmbiguousIdError {
    return new AmbiguousIdError(this.id, this.tableName, this.reason, outcome)
  }
}

/** If-Match did not match the current row (412). */
export class PreconditionFailedError extends DbError {
  constructor (message = 'The resource was changed since the given ETag') { super(412, 'PRECONDITION_FAILED', message) }
}

/** The database cannot be reached or timed out (503). */
export class DatabaseUnavailableError extends DbError {
  constructor (message = 'The database is unavailable', options?: ErrorOptions) { super(503, 'DATABASE_UNAVAILABLE', message, options) }
}

/** The gateway closed the database itself (a stop): still a 503 to a caller, but no outage to report or wait out. */
export class DatabaseClosedError extends DatabaseUnavailableError {
  constructor (options?: ErrorOptions) { super('The database is unavailable: the gateway is stopping', options) }
}

/** The 503's message for a database that takes no writes (SQLite's file, SQL Server's 3906): either driver's. */
export const READ_ONLY = 'The database is read-only: it takes no changes until it is writable again'

/** The 503's message for a database whose disk, file group or transaction log is full (SQLite's SQLITE_FULL, SQL Server's 1101, 1105, 9002). */
export const STORAGE_FULL = 'The database\'s storage is full: it takes no changes until space is freed (the log says what is full)'

/** The 503's message for a database file that could not be read or written (SQLite's SQLITE_IOERR, SQLITE_NOMEM). */
export const IO_ERROR = 'The database file could not be read or written (an I/O error); the log has the details'

/** The 503's message for a damaged database file (SQLite's SQLITE_CORRUPT). */
export const DAMAGED = 'The database file is damaged; its administrator has to restore it (the log has the details)'

/** The 503's message for a file at the database path that is no SQLite database (SQLITE_NOTADB). */
export const NOT_A_DATABASE = 'The file at the database path is not a SQLite database'

/**
 * Faults of the database's storage, not of a request, which no retry of the client mends: the
 * gateway logs each as an error (once, then again every ten minutes while it lasts), beside the
 * warning of every request it refuses.
 */
export const STORAGE_FAULTS: ReadonlySet<string> = new Set([READ_ONLY, STORAGE_FULL, IO_ERROR, DAMAGED, NOT_A_DATABASE])

/**
 * SQLite: the database file's path cannot be looked at (its directory made unreadable: EACCES),
 * while the file already open serves on. Not a request's error: what the file check reports.
 */
export class FileUncheckableError extends Error {
  constructor (message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'FileUncheckableError'
  }
}

/** SQLite: another connection (another process) holds the write lock; the statement did not run. */
export class DatabaseBusyError extends DatabaseUnavailableError {
  constructor (options?: ErrorOptions) { super('The database is busy', options) }
}

/** The configured tables do not match the database (start-up error). */
export class SchemaMismatchError extends DbError {
  constructor (message: string) { super(500, 'SCHEMA_MISMATCH', message) }
}

/**
 * The database cannot list the mapped object's columns although it exists: a SQLite view whose
 * table, column or function is gone, or that names itself (SQLite compiles a view to list its
 * columns). `detail` is the database's own words, for the mapping check that reports it.
 */
export class UnreadableTableError extends DbError {
  readonly detail: string
  constructor (detail: string, options?: ErrorOptions) {
    super(500, 'SCHEMA_MISMATCH', `The mapped table cannot be read: ${detail}`, options)
    this.detail = detail
  }
}

/**
 * A table or column a statement names is missing from the database while the gateway runs (renamed
 * or dropped by an upgrade of the picking system, or named by one of its triggers): 503, as for a
 * database that is down, until it is back. `detail` is the database's own words (no such column:
 * "TITLE"; Invalid column name 'TITLE'), `missing` the name in them, for the log and the mapping
 * check: like every 5xx, the answer names no table or column.
 */
export class MappingGoneError extends DbError {
  readonly detail: string
  readonly missing: string | undefined
  constructor (detail: string, options?: ErrorOptions) {
    super(503, 'SCHEMA_MISMATCH', 'A table or column the request needs is missing from the database (renamed or dropped); the gateway serves again once it is back, and picking-gateway check-config shows what differs from the mapping', options)
    this.detail = detail
    this.missing = missingName(detail)
  }
}

/**
 * The table or column a driver's message names as missing, without schema, table or quotes:
 * no such table: main.audit_log, no such column: "T"."name", table T has no column named name,
 * Invalid column name 'Bez', Invalid object name 'dbo.Artikel' (and the same in the login's language).
 */
export function missingName (detail: string): string | undefined {
  const m = /^no such (?:column|table): (.+)$|^table \S+ has no column named (.+)$|^Invalid (?:column|object) name '(.+)'$/.exec(detail)
  // SQL Server words 207 and 208 in the login's language (Ungültiger Spaltenname 'Bez', Nom d'objet 'dbo.Artikel'
  // non valide), always with the name as the one quoted text: from the first quote that follows no letter to the last
  const name = m?.[1] ?? m?.[2] ?? m?.[3] ?? /(?<![\p{L}\p{N}])'(.+)'(?![\p{L}\p{N}])/u.exec(detail)?.[1]
  if (name === undefined) return undefined
  const parts = name.match(/"(?:[^"]|"")*"|\[(?:[^\]]|\]\])*\]|[^.]+/g) ?? [name]
  const last = parts[parts.length - 1]
  if (last.startsWith('"')) return last.slice(1, -1).replace(/""/g, '"')
  if (last.startsWith('[')) return last.slice(1, -1).replace(/\]\]/g, ']')
  return last
}

/** A row cannot be deleted (or its key changed) while other rows still reference it (409). */
export class ReferencedError extends DbError {
  constructor (message: string, options?: ErrorOptions) { super(409, 'REFERENCED', message, options) }
}

/** The database refused the values: a foreign key, a CHECK constraint, a trigger (400). */
export class ConstraintViolationError extends DbError {
  constructor (message: string, options?: ErrorOptions) { super(400, 'CONSTRAINT_VIOLATION', message, options) }
}

/** A value the column cannot hold: empty where required, too long, out of range, wrong type (400). */
export class InvalidValueError extends DbError {
  constructor (message: string, options?: ErrorOptions) { super(400, 'VALIDATION_ERROR', message, options) }
}

/**
 * A driver error about the data, classified but not yet worded: the dialect knows the fault, only
 * the repository knows the resource and its fields, and turns it into a specific error with faultToError.
 */
export class DataFaultError extends DbError {
  readonly fault: DataFault
  constructor (fault: DataFault, options?: ErrorOptions) {
    super(400, 'CONSTRAINT_VIOLATION', 'The database refused the values', options)
    this.fault = fault
  }
}

/** A write to a resource mapped `readOnly` (a view, or a table the picking system owns alone): 405. */
export class ReadOnlyError extends DbError {
  constructor (message: string) { super(405, 'METHOD_NOT_ALLOWED', message) }
}
