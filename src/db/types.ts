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
  /** strings: the column length `db init` creates (nvarchar(n)); absent means nvarchar(max)/TEXT */
  maxLength?: number
  /** the column holds no NULLs: `db init` creates it NOT NULL, and keyset paging relies on it */
  notNull?: boolean
  /** applied by Repository.create when the field is not given (and the column's default in `db init`) */
  default?: string | number | boolean
}

export interface ResourceDef {
  /** the API name, e.g. 'materials' */
  name: string
  /** every stored field, keyed by API field name (camelCase) */
  fields: Record<string, FieldDef>
}

/** Where a resource lives: validated configuration, never request input. */
export interface TableMapping {
  /** SQL Server schema; ignored by SQLite. Default 'dbo'. */
  schema?: string
  table: string
  /** API field name -> column name; every field of the ResourceDef must be mapped */
  columns: Record<string, string>
}

export type SqlValue = string | number | boolean | Date | null

/** A bound parameter. `kind` tells the mssql driver which SQL type to declare. */
export interface Param {
  name: string
  kind: FieldKind
  value: SqlValue
}

/**
 * One statement with named parameters written as `@name` in `text`
 * (both better-sqlite3 and node-mssql accept that form).
 */
export interface Statement {
  text: string
  params: Param[]
}

export type Row = Record<string, unknown>

export type DialectName = 'sqlite' | 'mssql'

/** Runs statements. Rows come back keyed by API field name (the builder aliases every column). */
export interface Executor {
  query (stmt: Statement): Promise<Row[]>
  /** returns the number of rows affected */
  execute (stmt: Statement): Promise<number>
}

export interface Database extends Executor {
  readonly dialect: DialectName
  /** Runs fn in one transaction (SQL Server: XACT_ABORT ON, deadlocks retried). */
  transaction<T> (fn: (tx: Executor) => Promise<T>): Promise<T>
  /** One round trip; throws DatabaseUnavailableError when the database cannot be reached. */
  ping (): Promise<void>
  close (): Promise<void>
  /**
   * Checks that the mapped table and columns exist. Resolves to a list of
   * human-readable problems (empty when the mapping fits the database).
   */
  checkMapping (def: ResourceDef, mapping: TableMapping): Promise<string[]>
  /** The mapped table's columns as the database declares them; empty when the table does not exist. */
  columns (mapping: TableMapping): Promise<ColumnInfo[]>
}

export interface ColumnInfo {
  name: string
  /** false only when the column is declared NOT NULL (or is the primary key) */
  nullable: boolean
}
