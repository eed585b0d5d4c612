// The three resources' stored fields, and where the reference schema (`db init`) keeps them.
import type { ResourceDef, Row, TableMapping } from './types.js'

export const materials: ResourceDef = {
  name: 'materials',
  naturalKey: 'materialNumber',
  fields: {
    id: { kind: 'integer', id: true },
    materialNumber: { kind: 'string', unique: true, notNull: true, maxLength: 64 },
    name: { kind: 'string', notNull: true, maxLength: 200 },
    description: { kind: 'string', maxLength: 2000 },
    unit: { kind: 'string', maxLength: 16, default: 'pcs' },
    barcode: { kind: 'string', maxLength: 64 },
    minStock: { kind: 'number' },
    maxStock: { kind: 'number' },
    weight: { kind: 'number' },
    blocked: { kind: 'boolean', notNull: true, default: false },
    blockReason: { kind: 'string', maxLength: 500 },
    stockQuantity: { kind: 'number', readOnly: true, notNull: true, default: 0 },
    createdAt: { kind: 'datetime', readOnly: true, notNull: true },
    modifiedAt: { kind: 'datetime', readOnly: true, notNull: true }
  }
}

export const stations: ResourceDef = {
  name: 'stations',
  // a station table keyed by its code ('PTL-01'): map id and name to that one column
  naturalKey: 'name',
  fields: {
    id: { kind: 'integer', id: true },
    name: { kind: 'string', unique: true, notNull: true, maxLength: 100 },
    description: { kind: 'string', maxLength: 500 },
    // vlm | carousel | ptl | manual: the HTTP schema checks the value set
    type: { kind: 'string', notNull: true, maxLength: 16, default: 'manual', enum: ['vlm', 'carousel', 'ptl', 'manual'] },
    warehouse: { kind: 'string', maxLength: 64 },
    controllerId: { kind: 'string', maxLength: 64 },
    address: { kind: 'integer' },
    enabled: { kind: 'boolean', notNull: true, default: true },
    createdAt: { kind: 'datetime', readOnly: true, notNull: true },
    modifiedAt: { kind: 'datetime', readOnly: true, notNull: true }
  }
}

export const users: ResourceDef = {
  name: 'users',
  // a user table keyed by the login name: map id and username to that one column
  naturalKey: 'username',
  fields: {
    id: { kind: 'integer', id: true },
    username: { kind: 'string', unique: true, caseless: true, notNull: true, maxLength: 100 },
    passwordHash: { kind: 'string', internal: true, notNull: true, maxLength: 255 },
    type: { kind: 'string', notNull: true, maxLength: 32, default: 'user', enum: ['admin', 'user', 'application'] },
    displayName: { kind: 'string', maxLength: 200 },
    // toUser shows a NULL or an unknown code as false
    enabled: { kind: 'boolean', notNull: true, default: true, unknownIsFalse: true },
    tokenVersion: { kind: 'integer', internal: true, notNull: true, default: 0 },
    lastLoginAt: { kind: 'datetime', readOnly: true },
    createdAt: { kind: 'datetime', readOnly: true, notNull: true },
    modifiedAt: { kind: 'datetime', readOnly: true, notNull: true }
  }
}

export const resources = { materials, stations, users }

export type ResourceName = keyof typeof resources

export const referenceMappings: Record<ResourceName, TableMapping> = {
  materials: {
    table: 'materials',
    columns: {
      id: 'id',
      materialNumber: 'material_number',
      name: 'name',
      description: 'description',
      unit: 'unit',
      barcode: 'barcode',
      minStock: 'min_stock',
      maxStock: 'max_stock',
      weight: 'weight',
      blocked: 'blocked',
      blockReason: 'block_reason',
      stockQuantity: 'stock_quantity',
      createdAt: 'created_at',
      modifiedAt: 'modified_at'
    }
  },
  stations: {
    table: 'stations',
    columns: {
      id: 'id',
      name: 'name',
      description: 'description',
      type: 'type',
      warehouse: 'warehouse',
      controllerId: 'controller_id',
      address: 'address',
      enabled: 'enabled',
      createdAt: 'created_at',
      modifiedAt: 'modified_at'
    }
  },
  users: {
    table: 'gateway_users',
    columns: {
      id: 'id',
      username: 'username',
      passwordHash: 'password_hash',
      type: 'type',
      displayName: 'display_name',
      enabled: 'enabled',
      tokenVersion: 'token_version',
      lastLoginAt: 'last_login_at',
      createdAt: 'created_at',
      modifiedAt: 'modified_at'
    }
  }
}

/** The id field's name (by convention 'id', but read it from the definition). */
export function idField (def: ResourceDef): string {
  for (const [name, f] of Object.entries(def.fields)) if (f.id === true) return name
  throw new Error(`resource '${def.name}' has no id field`)
}

/**
 * A caseless field's value (a username) as given, in its case: Unicode NFKC, without the spaces
 * around it. Creates, logins and list filters all spell it so (normalizeUsername lower-cases it too).
 */
export function spelledCaseless (text: string): string {
  return text.normalize('NFKC').trim()
}

/** The longest path parameter the router takes, in characters as decoded (UTF-16 code units): an id longer than this is a 414. */
export const MAX_PATH_PARAM_LENGTH = 100

/** A numeric id as a path writes it: decimal digits (a minus sign before a negative one), without plus sign, spaces or leading zero. */
export const PATH_ID = /^(?:0|-?[1-9][0-9]*)$/

/** A numeric id as a path names it: PATH_ID, within ±(2^53 - 1). */
export function isPathId (text: string): boolean {
  return PATH_ID.test(text) && Number.isSafeInteger(Number(text))
}

/**
 * Checks that a mapping covers every field of a resource and names nothing else.
 * Returns human-readable problems (empty when it fits).
 */
export function mappingProblems (def: ResourceDef, mapping: TableMapping): string[] {
  const problems: string[] = []
  if (!mapping.table) problems.push(`${def.name}: no table configured`)
  const absent = new Set(mapping.absent ?? [])
  for (const field of Object.keys(def.fields)) {
    if (absent.has(field)) {
      if (!canBeAbsent(def, field)) problems.push(`${def.name}.${field}: cannot be null; the gateway needs a column for it`)
      continue
    }
    const col = mapping.columns[field]
    if (typeof col !== 'string' || col === '') {
      // a users table without one (a legacy operator table without a modified time): say what to do, not only what is missing
      const remedy = canBeAbsent(def, field)
        ? ' (map it to null if the table has none)'
        : def.name === 'users' ? "; the user table needs a column for every field: add one to the table and map it (README, \"The picking system's own user table\")" : ''
      problems.push(`${def.name}.${field}: no column configured${remedy}`)
    }
  }
  for (const field of [...Object.keys(mapping.columns), ...absent]) {
    if (!Object.hasOwn(def.fields, field)) problems.push(`${def.name}: unknown field '${field}' in the column mapping`)
  }
  // one column for two fields: an insert names it twice (SQL Server error 264), and the two would
  // never differ anyway
  const byColumn = new Map<string, string>()
  for (const [field, column] of Object.entries(mapping.columns)) {
    // a read-only resource only reads: a view with one time stamp may show it as both times
    if (mapping.readOnly === true || absent.has(field) || typeof column !== 'string' || column === '') continue
    const other = byColumn.get(column.toLowerCase())
    // a table keyed by its article number: the id is the materialNumber
    const natural = def.naturalKey !== undefined && [field, other].includes(def.naturalKey) && [field, other].includes(idField(def))
    if (other === undefined) byColumn.set(column.toLowerCase(), field)
    else if (natural) continue
    else problems.push(`${def.name}.${field}: column '${column}' is already ${other}'s; one column serves one field${canBeAbsent(def, field) ? ` (map ${field} to null if the table has no column of its own for it)` : ''}`)
  }
  return problems
}

/**
 * Whether a field may be mapped to null (a legacy table without such a column): not the id, not a
 * unique key, not a field every create must give, and nothing of the gateway's own user table.
 */
export function canBeAbsent (def: ResourceDef, field: string): boolean {
  const f = def.fields[field]
  if (f === undefined || def.name === 'users') return false
  return f.id !== true && f.unique !== true && !(f.notNull === true && f.default === undefined && f.readOnly !== true)
}

/** A problem missingColumns reports for a table that is not there (which db init can create). */
export function isMissingTable (problem: string): boolean {
  return /: table '.*' does not exist(?:$|, or the gateway's login may not use it )/.test(problem)
}

/**
 * Compares a mapping with the columns a table has (`present`: the names the database
 * reported; empty when the table does not exist). Column names compare case-insensitively,
 * as in SQLite and SQL Server's usual collations.
 */
export function missingColumns (def: ResourceDef, mapping: TableMapping, table: string, present: string[]): string[] {
  if (present.length === 0) return [`${def.name}: table '${table}' does not exist`]
  const names = new Set(present.map((name) => name.toLowerCase()))
  return Object.entries(mapping.columns)
    .filter(([, column]) => !names.has(column.toLowerCase()))
    .map(([field, column]) => `${def.name}.${field}: column '${column}' does not exist in table '${table}'`)
}

/**
 * A station in use, which commands reach and events name: its flag reads true, or its table has no
 * active flag at all (`enabled` mapped to null, so every row reads null), where every station is. A
 * flag that reads false, or one the gateway could not read, keeps commands from it.
 */
export function stationInUse (station: Row, enabledAbsent: boolean): boolean {
  return station.enabled === true || ((station.enabled === null || station.enabled === undefined) && enabledAbsent)
}

