// `db init`: DDL for the reference tables in either dialect. Never run implicitly except for the embedded demo.
import { createHash } from 'node:crypto'
import { SchemaMismatchError } from './errors.js'
import { dialectFor, stringLiteral, type Dialect } from './dialect.js'
import { isMissingTable, resources, type ResourceName } from './resources.js'
import { mappingFit } from './storage.js'
import type { ColumnInfo, Database, DialectName, FieldDef, ResourceDef, TableMapping } from './types.js'

function asDialect (d: Dialect | DialectName): Dialect {
  return typeof d === 'string' ? dialectFor(d) : d
}

/** The column type for a field (without NULL/DEFAULT). */
export function columnType (dialect: Dialect | DialectName, f: FieldDef): string {
  const mssql = asDialect(dialect).name === 'mssql'
  switch (f.kind) {
    // SQLite keeps a declared length as written; the gateway holds values to it, as to SQL Server's
    case 'string': return mssql ? `nvarchar(${f.maxLength ?? 'max'})` : f.maxLength === undefined ? 'TEXT' : `VARCHAR(${f.maxLength})`
    case 'integer': return mssql ? 'int' : 'INTEGER'
    case 'number': return mssql ? 'float' : 'REAL'
    case 'boolean': return mssql ? 'bit' : 'INTEGER'
    case 'datetime': return mssql ? 'datetime2(3)' : 'TEXT'
  }
}

/** The columns `db init` creates for a resource, as the database would then declare them. */
export function referenceColumns (dialect: Dialect | DialectName, def: ResourceDef, mapping: TableMapping): ColumnInfo[] {
  const d = asDialect(dialect)
  return Object.entries(def.fields).filter(([field]) => mapping.absent?.includes(field) !== true).map(([field, f]) => {
    const declared = f.id === true ? (d.name === 'mssql' ? 'int' : 'INTEGER') : columnType(d, f)
    const m = /^(\w+)(?:\((max|\d+)\))?/.exec(declared)!
    const info: ColumnInfo = {
      name: mapping.columns[field],
      type: m[1].toLowerCase(),
      nullable: f.id !== true && f.notNull !== true,
      hasDefault: f.id === true || defaultExpression(d, f) !== undefined,
      identity: f.id === true,
      computed: false
    }
    if (f.kind === 'string' && m[2] !== undefined) info.maxLength = m[2] === 'max' ? -1 : Number(m[2])
    if (m[1] === 'datetime2') info.scale = 3
    return info
  })
}

function defaultExpression (d: Dialect, f: FieldDef): string | undefined {
  if (f.kind === 'datetime') {
    if (f.notNull !== true) return undefined
    // SQLite: ISO 8601 UTC with milliseconds, the same text the gateway writes, so values sort as text
    return d.name === 'mssql' ? 'SYSUTCDATETIME()' : "(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"
  }
  if (f.default === undefined) return undefined
  if (typeof f.default === 'boolean') return f.default ? '1' : '0'
  if (typeof f.default === 'number') return String(f.default)
  return stringLiteral(d, f.default)
}

/** SQL Server's longest name (sysname): a longer constraint or index name fails CREATE TABLE */
const MAX_NAME = 128

/**
 * `PK_table`, `UQ_table_column`-style constraint and index names; quoted by the caller. A name past
 * MAX_NAME keeps its start and ends with a hash of the whole, so two stay apart.
 */
function objectName (prefix: string, mapping: TableMapping, column?: string): string {
  const name = [prefix, mapping.table, ...(column === undefined ? [] : [column])].join('_')
  if (name.length <= MAX_NAME) return name
  return `${name.slice(0, MAX_NAME - 9)}_${createHash('sha256').update(name).digest('hex').slice(0, 8)}`
}

/**
 * The statements creating one table (if missing) and its modifiedAt index. Each string is one
 * batch. T-SQL gets named constraints so that they can be found and changed later.
 */
export function createTableStatements (dialect: Dialect | DialectName, def: ResourceDef, mapping: TableMapping): string[] {
  const d = asDialect(dialect)
  const table = d.table(mapping)
  const lines: string[] = []
  for (const [field, f] of Object.entries(def.fields)) {
    if (mapping.absent?.includes(field) === true) continue
    const column = mapping.columns[field]
    const parts = [d.ident(column)]
    if (f.id === true) {
      parts.push(d.name === 'mssql'
        ? `int IDENTITY(1,1) NOT NULL CONSTRAINT ${d.ident(objectName('PK', mapping))} PRIMARY KEY`
        : 'INTEGER PRIMARY KEY AUTOINCREMENT')
      lines.push(parts.join(' '))
      continue
    }
    parts.push(columnType(d, f))
    if (f.notNull === true) parts.push('NOT NULL')
    const dflt = defaultExpression(d, f)
    if (dflt !== undefined) parts.push(d.name === 'mssql' ? `CONSTRAINT ${d.ident(objectName('DF', mapping, column))} DEFAULT ${dflt}` : `DEFAULT ${dflt}`)
    if (f.unique === true) parts.push(d.name === 'mssql' ? `CONSTRAINT ${d.ident(objectName('UQ', mapping, column))} UNIQUE` : 'UNIQUE')
    lines.push(parts.join(' '))
  }
  const body = `(\n  ${lines.join(',\n  ')}\n)`
  const statements: string[] = []
  const modified = def.fields.modifiedAt !== undefined && mapping.absent?.includes('modifiedAt') !== true ? mapping.columns.modifiedAt : undefined
  const ix = modified === undefined ? undefined : d.ident(objectName('IX', mapping, modified))
  if (d.name === 'mssql') {
    const schema = mapping.schema ?? 'dbo'
    if (schema !== 'dbo') {
      statements.push(`IF SCHEMA_ID(${stringLiteral(d, schema)}) IS NULL EXEC(${stringLiteral(d, `CREATE SCHEMA ${d.ident(schema)}`)})`)
    }
    statements.push(`IF OBJECT_ID(${stringLiteral(d, table)}, N'U') IS NULL\nCREATE TABLE ${table} ${body}`)
    if (ix !== undefined && modified !== undefined) {
      statements.push(
        `IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE [name] = ${stringLiteral(d, objectName('IX', mapping, modified))} AND [object_id] = OBJECT_ID(${stringLiteral(d, table)}))\n` +
        `CREATE INDEX ${ix} ON ${table} (${d.ident(modified)})`)
    }
  } else {
    statements.push(`CREATE TABLE IF NOT EXISTS ${table} ${body}`)
    // SQLite compares and sorts times as strftime's canonical text (other programs write other
    // formats): the index is on that expression, so time-sorted pages still seek
    if (ix !== undefined && modified !== undefined) statements.push(`CREATE INDEX IF NOT EXISTS ${ix} ON ${table} (strftime('%Y-%m-%dT%H:%M:%fZ', ${d.ident(modified)}))`)
  }
  return statements
}

/**
 * Creates the reference tables (materials, stations, users) that do not exist yet. A table that
 * exists is never altered, not even by an index: if it does not fit the mapping, this fails and says why.
 */
export async function createReferenceTables (db: Database, mappings: Record<ResourceName, TableMapping>): Promise<string[]> {
  const created: string[] = []
  for (const name of Object.keys(resources) as ResourceName[]) {
    const { problems } = await mappingFit(db, resources[name], mappings[name])
    if (problems.length === 0) continue
    if (problems.length > 1 || !isMissingTable(problems[0])) {
      throw new SchemaMismatchError(`The existing table does not match the configured mapping: ${problems.join('; ')}`)
    }
    const statements = createTableStatements(db.dialect, resources[name], mappings[name])
    // a table and its index (and schema) together or not at all: a stop between them left a table
    // without its index, and the next db init, finding the table there, never added it
    await db.transaction(async (tx) => {
      for (const text of statements) await tx.execute({ text, params: [] })
    })
    created.push(name)
  }
  return created
}
