// The database layer's vocabulary: resources, their storage mapping, and dialect-neutral statements.

export type FieldKind = 'integer' | 'number' | 'string' | 'boolean' | 'datetime'

export interface FieldDef {
  kind: FieldKind
  /** set by the gateway or owned by the picking system: never accepted in a request body */
  readOnly?: boolean
  /** stored but never returned by the API (password hashes, token versions) */
  internal?: boolean
  /** the primary key; exactly one field per resource, named 'id' */
  id?: boolean
  /** a unique key: a duplicate is a 409 naming this field */
  unique?: boolean
  /** strings compared without regard to case whatever the database does (usernames; the API stores them in lower case) */
  caseless?: boolean
  /** strings: the column length `db init` creates (nvarchar(n)); absent means nvarchar(max)/TEXT */
  maxLength?: number
  /** the column holds no NULLs: `db init` creates it NOT NULL, and keyset paging relies on it */
  notNull?: boolean
  /** applied by Repository.create when the field is not given (and the column's default in `db init`) */
  default?: string | number | boolean
  /** strings: the values the API knows; a stored value outside them is returned as is and logged once */
  enum?: string[]
  /**
   * booleans: the API shows a NULL or a code no value map knows as false (a user's active flag:
   * such a row is not enabled), so sorting ranks it with false, not after true
   */
  unknownIsFalse?: boolean
}

export interface ResourceDef {
  /** the API name, e.g. 'materials' */
  name: string
  /** every stored field, keyed by API field name (camelCase) */
  fields: Record<string, FieldDef>
  /**
   * A unique field whose column may also be the id's: a picking system's table keyed by its
   * article number. Its ids are then text where that column holds text (ResourceStorage).
   */
  naturalKey?: string
}

/**
 * How a number or text column keeps a date-time field (legacy programs): Unix time in seconds or
 * milliseconds (an instant), or the digits of a wall-clock date (YYYYMMDD) or date and time
 * (YYYYMMDDhhmmss) in the column's zone. SQLite also: Julian days, and 'yyyy-mm-dd hh:mm:ss', the
 * whole seconds of its CURRENT_TIMESTAMP as text, which a legacy program may parse in that form alone.
 */
export type TimeFormat = 'unix' | 'unix-ms' | 'yyyymmdd' | 'yyyymmddhhmmss' | 'julianday' | 'yyyy-mm-dd hh:mm:ss'

export const TIME_FORMATS: readonly TimeFormat[] = ['unix', 'unix-ms', 'yyyymmdd', 'yyyymmddhhmmss', 'julianday', 'yyyy-mm-dd hh:mm:ss']

/**
 * A column of fixed-width text, whose values are (or are to be) padded with blanks to its length:
 * SQL Server's char and nchar, and on SQLite every spelling of CHAR(n) a schema exported from another
 * database carries (ColumnInfo.type: the declared name in lower case, its blanks collapsed): char,
 * character, nchar, national char(acter), native character. Not the varying ones (varchar, character
 * varying, char varying, nchar varying, national character varying, varying character), nor a longer
 * name that holds one (SQLite gives any type containing CHAR text affinity).
 */
export const isFixedWidthText = (type: string): boolean => /^(?:n|national |native )?char(?:acter)?$/.test(type)

/**
 * SQL Server: a column of bytes (binary, varbinary, image), which no value of the configuration is: text
 * converts to bytes only explicitly (error 257), so "defaults" cannot fill one; only the database's own default.
 */
export const holdsBytes = (dialect: DialectName, type: string): boolean => dialect === 'mssql' && ['binary', 'varbinary', 'image'].includes(type.toLowerCase())

/** The formats whose column keeps numbers or digits in time's order, compared as they are (julianday and SQLite's seconds text go through its strftime instead). */
export type ColumnTimeFormat = Exclude<TimeFormat, 'julianday' | 'yyyy-mm-dd hh:mm:ss'>

/** A code as the customer's table stores it. */
export type StoredCode = string | number

/**
 * API value (written as text: 'vlm', 'true', '3') -> the stored code, or several codes that
 * all mean it (the first is written).
 */
export type ValueMap = Record<string, StoredCode | StoredCode[]>

/** Where a resource lives: validated configuration, never request input. */
export interface TableMapping {
  /** SQL Server schema; ignored by SQLite. Default 'dbo'. */
  schema?: string
  table: string
  /** API field name -> column name; every field of the ResourceDef is mapped or listed in `absent` */
  columns: Record<string, string>
  /** fields this table has no column for (mapped to null): always null, never written, not filterable */
  absent?: string[]
  /** API field name -> value map, for columns whose stored codes differ from the API's values */
  values?: Record<string, ValueMap>
  /** IANA time zone of `datetime` columns that hold local time (default UTC) */
  timeZone?: string
  /** per field, overriding timeZone */
  timeZones?: Record<string, string>
  /** per date-time field kept in a number or text column: how it is written there */
  timeFormats?: Record<string, TimeFormat>
  /** per text field on a SQLite CHAR(n)/NCHAR(n) column: written padded to n (true) or as sent (false); else ColumnInfo.padsToWidth decides */
  pads?: Record<string, boolean>
  /** a view or a table the picking system owns alone: list and read only, writes answer 405 */
  readOnly?: boolean
  /**
   * 'max+1': the id column has neither identity nor default, and the picking system numbers its
   * rows as the largest id plus one: the gateway does the same, inside the insert's transaction,
   * under a lock that holds off other inserts until it commits
   */
  newIds?: 'max+1'
  /** how long after stamping a row the picking system may commit it: meta.serverTime lies that much further back (default 1000) */
  commitLagMs?: number
  /**
   * column -> value every create writes into that column, which no field maps: a legacy table's
   * NOT NULL column without a default (a client number, a storage zone)
   */
  defaults?: Record<string, string | number | boolean>
}

export type SqlValue = string | number | boolean | Date | null

/** A bound parameter. `type` (T-SQL type text such as `varchar(8000)`, `datetime`, `decimal(18,3)`) is
 * what the mssql driver declares; without it `kind` picks a default. */
export interface Param {
  name: string
  kind: FieldKind
  value: SqlValue
  type?: string
}

/**
 * One statement with named parameters written as `@name` in `text`
 * (both better-sqlite3 and node-mssql accept that form).
 */
export interface Statement {
  text: string
  params: Param[]
  /** SQLite: integers come back exactly, as BigInt (ColumnInfo.wideValues) */
  exactIntegers?: boolean
  /**
   * SQLite: run once: another connection's lock fails it at once with DatabaseBusyError instead of
   * a wait of up to busyTimeoutMs (its caller runs it again its own way: a create stamps its row anew)
   */
  once?: boolean
}

export type Row = Record<string, unknown>

export type DialectName = 'sqlite' | 'mssql'

/**
 * What Database.recheck found: the file as it was, gone, back after being gone, replaced by another
 * (then opened), its -wal or -shm removed (its commits written into the file, then opened again), or
 * those removed and another process's there since (calls refused); SQLite: a file opened (back or
 * replaced) that this process may not write ('readonly': reads only), or such a file writable again
 * (opened anew, 'writable').
 */
export type RecheckResult = 'unchanged' | 'missing' | 'back' | 'reopened' | 'sidecars' | 'diverged' | 'readonly' | 'writable'

/** Runs statements. Rows come back keyed by API field name (the builder aliases every column). */
export interface Executor {
  query (stmt: Statement): Promise<Row[]>
  /**
   * Like query, but each row is an array of its values in the statement's column order. Only
   * SQLite has it (better-sqlite3's raw mode): there, building an object per row cost more than
   * the query itself. Without it, the repository uses query.
   */
  queryValues? (stmt: Statement): Promise<unknown[][]>
  /** returns the number of rows affected */
  execute (stmt: Statement): Promise<number>
}

export interface Database extends Executor {
  readonly dialect: DialectName
  /** Runs fn in one transaction (SQL Server: XACT_ABORT ON, deadlocks retried). */
  transaction<T> (fn: (tx: Executor) => Promise<T>): Promise<T>
  /** One round trip; throws DatabaseUnavailableError when the database cannot be reached. */
  ping (): Promise<void>
  /**
   * The database server's clock (ms since 1970): SQL Server only, whose triggers stamp the picking
   * system's rows with it (GETDATE(), SYSDATETIME()), while serverTime is the gateway's clock. SQLite
   * runs in the writer's own process, on its host's clock.
   */
  clock? (): Promise<number>
  close (): Promise<void>
  /** The mapped table's columns as the database declares them; empty when the table does not exist. */
  columns (mapping: TableMapping): Promise<ColumnInfo[]>
  /**
   * A text that changes whenever anything was committed to the database, by this process or any
   * other (SQLite: PRAGMA data_version plus this connection's own writes). Undefined when the
   * dialect cannot tell cheaply: then nothing may be cached on it.
   */
  changeMark (): string | undefined
  /**
   * Checks that the connection still serves the database it opened, and repairs what it can; the
   * database plugin calls it every `database.recheckMs`. SQLite only: its file deleted, calls
   * answer DatabaseUnavailableError until it is back; another file at its path, it is opened in
   * place of the old one. The result names what changed, for the log.
   */
  recheck? (): Promise<RecheckResult>
}

/** A column as the database declares it (INFORMATION_SCHEMA.COLUMNS / sys.columns, PRAGMA table_xinfo). */
/** A kind of write a table may take (a SQLite view only those its INSTEAD OF triggers do). */
export type Write = 'insert' | 'update' | 'delete'

export interface ColumnInfo {
  name: string
  /**
   * The declared type's name, lower case, without length or precision: 'nvarchar', 'varchar',
   * 'datetime', 'datetime2', 'decimal', 'int', 'bit', ... SQLite: the declared type's name as
   * written ('varchar', 'datetime', 'integer'; '' when the column declares none).
   */
  type: string
  /** strings: the declared length in characters (bytes for varchar with a UTF-8 collation); -1 for max */
  maxLength?: number
  /** decimal/numeric: total digits; integers: their digits */
  precision?: number
  /** decimal/numeric: digits after the point; datetime2/datetimeoffset/time: fractional second digits */
  scale?: number
  /** false only when the column is declared NOT NULL (or is the primary key) */
  nullable: boolean
  /** the column has a default (or is filled by the database: identity, computed, rowversion) */
  hasDefault: boolean
  identity: boolean
  computed: boolean
  /** varchar with a UTF-8 collation: maxLength counts bytes */
  utf8?: boolean
  /**
   * char, varchar and text with another collation: its Windows code page (1252, 932, …), which
   * holds only some characters; maxLength counts bytes in it
   */
  codePage?: number
  /** text with a case-sensitive or binary collation (SQL Server): 'V' = 'v' is false */
  caseSensitive?: boolean
  /**
   * SQLite: a CHAR(n) or NCHAR(n) column (isFixedWidthText) whose stored values show that the picking system pads them
   * with blanks to n characters, as SQL Server's char does by itself: every non-empty value is n
   * characters long, and at least one ends in a blank. The gateway writes its values padded too.
   */
  padsToWidth?: boolean
  /**
   * SQLite: a time field's column (without a format) whose stored date-times are all text as ISO 8601
   * with a T and no zone ('2026-03-29T01:30:00', as .NET's "s" format and Python's isoformat() write
   * them), in whole seconds ('seconds') or with a fraction ('fraction'). The gateway writes its times
   * so too: its '2026-03-29 01:30:00.000' sorts before every such time of the day as text.
   */
  isoTimeText?: 'seconds' | 'fraction'
  /**
   * SQLite: with isoTimeText, every such time ends in Z ('2026-03-29T01:30:00.250Z', as a DEFAULT of
   * strftime('%Y-%m-%dT%H:%M:%fZ', 'now') writes it): the gateway writes its UTC times with the Z too
   */
  isoTimeUtc?: boolean
  /**
   * SQLite: the id column of a view comes from this table, which is numbered AUTOINCREMENT: newIds
   * 'max+1' counts on from the largest id it ever held (sqlite_sequence), as SQLite would
   */
  sequenceTable?: string
  /** SQL Server: a text column's collation (Latin1_General_CI_AS, …) */
  collation?: string
  /**
   * a unique index, key or constraint on this column alone (not filtered or partial): the database
   * refuses a duplicate by itself. Where a unique field's column has none, the gateway looks for the
   * duplicate itself inside the write's transaction.
   */
  unique?: boolean
  /**
   * SQLite: the collation of the column's unique index (BINARY) where it is not the one the column
   * declares (COLLATE NOCASE): ids and the column's other fields compare, sort and page in the
   * index's, which tells apart the keys 'a' and 'A'
   */
  uniqueCollation?: string
  /**
   * SQLite: the column's unique constraint is declared ON CONFLICT REPLACE, so it refuses no duplicate:
   * a plain write of a value another row holds deletes that row. The gateway looks for the duplicate
   * itself inside the write's transaction, as where there is no unique index.
   */
  replacesDuplicates?: boolean
  /**
   * SQLite: the collation the column declares where it is not BINARY (NOCASE, RTRIM). A comparison of
   * RTRIM(column) compares in BINARY unless the collation is written out: a CHAR(n) COLLATE NOCASE id
   * then found one of 'a-1' and 'A-1', which the column itself takes for one
   */
  declaredCollation?: string
  /**
   * SQLite: the table has a trigger that may change the row after an insert: AFTER or INSTEAD OF
   * INSERT, with an UPDATE or REPLACE in its body, or, on a view, any INSTEAD OF INSERT. RETURNING shows the row before such a trigger
   * ran, so a create reads the row back. Set on every column of the table.
   */
  changedAfterInsert?: boolean
  /**
   * SQLite: the database's schema names FAIL (a trigger's RAISE(FAIL, …), INSERT OR FAIL, ON CONFLICT
   * FAIL): such a failure ends its statement but keeps what the statement changed before it, the
   * inserted row too when an AFTER INSERT trigger raises it. A create then runs in a transaction, which
   * its failure rolls back, not as a lone INSERT that would stay committed. A trigger's RAISE(IGNORE)
   * too: it skips the insert without an error, but what the trigger wrote before (an audit row) stays.
   * Set on every column.
   */
  failKeepsChanges?: boolean
  /**
   * SQLite: set when the mapped object is a view, to the writes its INSTEAD OF triggers take (none:
   * SQLite writes no view by itself; those it takes SQLite's change count does not see). Set on every column.
   */
  viewWrites?: Write[]
  /**
   * SQL Server: the table or view has an INSTEAD OF INSERT trigger, which makes the insert itself: the
   * statement's OUTPUT does not see the id the row got, so a create finds it by its unique value. Set on every column.
   */
  insteadOf?: boolean
  /**
   * SQLite: the id column (a table's integer key) holds values beyond ±(2^53 - 1), which a JavaScript
   * number does not hold exactly: lists read its integers exactly (BigInt), so that the cursor of a
   * walk sorted by it names the exact row and the walk gets past it.
   */
  wideValues?: boolean
  /**
   * SQLite: a primary key column that may hold NULL all the same: in a table with a rowid, a key
   * column not declared NOT NULL (other than an INTEGER PRIMARY KEY, the rowid itself), as SQLite
   * has allowed for compatibility since its early versions; each such NULL is a row of its own.
   */
  nullKey?: boolean
  /**
   * SQLite: the column's table is STRICT, whose INTEGER and REAL columns refuse text that is no
   * number, as SQL Server's number columns do (elsewhere SQLite keeps such text).
   */
  strict?: boolean
}
