// What differs between SQLite and SQL Server text: identifier quoting, table names, paging, LIKE escaping.
import type { DialectName, TableMapping } from './types.js'

export interface Dialect {
  readonly name: DialectName
  /** a quoted identifier; the name comes from configuration, quoting still guards against odd names */
  ident (name: string): string
  /** the quoted, schema-qualified table name */
  table (mapping: TableMapping): string
  /** `ORDER BY` is emitted by the caller; this is what follows it */
  paging (limitParam: string, offsetParam: string): string
  /**
   * a pattern for `LIKE … ESCAPE '\'` (from likePattern: `\%`, `\_`, `\\` already escaped) with
   * what else this dialect's LIKE treats specially escaped too
   */
  escapeLikePattern (pattern: string): string
}

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  ident: (name) => `"${name.replaceAll('"', '""')}"`,
  table: (mapping) => sqliteDialect.ident(mapping.table),
  paging: (limit, offset) => `LIMIT @${limit} OFFSET @${offset}`,
  // SQLite's LIKE knows only % and _, and likePattern has escaped those and the escape character.
  escapeLikePattern: (pattern) => pattern
}

export const mssqlDialect: Dialect = {
  name: 'mssql',
  ident: (name) => `[${name.replaceAll(']', ']]')}]`,
  table: (mapping) => `${mssqlDialect.ident(mapping.schema ?? 'dbo')}.${mssqlDialect.ident(mapping.table)}`,
  paging: (limit, offset) => `OFFSET @${offset} ROWS FETCH NEXT @${limit} ROWS ONLY`,
  // T-SQL's LIKE also treats [ as the start of a character class: escape it so it matches literally.
  escapeLikePattern: (pattern) => pattern.replaceAll('[', '\\[')
}

export function dialectFor (name: DialectName): Dialect {
  return name === 'mssql' ? mssqlDialect : sqliteDialect
}

/** A string literal for DDL (T-SQL N'…' or SQLite '…'); only ever used with configured names. */
export function stringLiteral (dialect: Dialect, value: string): string {
  const quoted = `'${value.replaceAll("'", "''")}'`
  return dialect.name === 'mssql' ? `N${quoted}` : quoted
}
