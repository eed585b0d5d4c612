// Tells driver errors about the data (constraints, lengths, ranges, triggers) apart, and words them as 4xx API errors without naming tables.

import { ConstraintViolationError, type DbError, InvalidValueError, ReferencedError } from './errors.js'
import type { Statement } from './types.js'

export type DataFaultKind =
  | 'referenced' // a DELETE/UPDATE hit a row other rows still reference
  | 'foreignKey' // an INSERT/UPDATE names a parent row that does not exist; SQLite cannot tell the direction and always says this
  | 'notNull'
  | 'check'
  | 'truncation'
  | 'overflow'
  | 'conversion'
  | 'rejected' // a trigger or the picking system refused the change

export interface DataFault {
  kind: DataFaultKind
  /** the column named by the driver's message, when it names one (515, 2628, SQLite NOT NULL "T.col") */
  column?: string
  /** for 'rejected' from RAISERROR/THROW/RAISE: the trigger's own message text (it is written for users) */
  message?: string
  /**
   * for 'check': the columns the constraint reads, when known (SQL Server names one; SQLite gives the
   * expression or the name); for 'foreignKey': the constraint's columns (Repository.foreignKeyColumns)
   */
  columns?: string[]
  /** for 'check' on SQLite: what the message names, the constraint's expression or its name; for 'foreignKey' on SQL Server: its name */
  constraint?: string
  /**
   * the table of the column the message names (a trigger may have written another table): SQLite's 'notNull'
   * ("T.col"); SQL Server's 'notNull', 'truncation' and a rule's 'check' as the message qualifies it ('WMS.dbo.T', 'dbo.T')
   */
  table?: string
  /**
   * for 'check' on SQL Server, what refused the values when it was no CHECK constraint: a legacy rule (CREATE RULE,
   * bound to the column or its alias type), or the WITH CHECK OPTION of the view the gateway writes through
   */
  checkedBy?: 'rule' | 'view'
}

export interface FaultContext {
  /** singular noun: 'material' */
  noun: string
  operation: 'create' | 'update' | 'delete'
  /** the id when updating or deleting */
  id?: number | string
  /** maps a column name (case-insensitive) to the API field it is mapped to, or undefined for unmapped columns */
  fieldOf (column: string): string | undefined
  /** what typically references this resource, for the 'referenced' message: 'bins or stock' */
  referencedBy?: string
  /** a create: the fields the request left out, which got the API's default, with that value */
  defaulted?: Record<string, unknown>
}

const OVERFLOW = new Set([8115, 220, 232, 517, 8134])
const CONVERSION = new Set([241, 242, 245, 8114, 295, 8169, 8023, 296])

/**
 * the n-th (from 0) single-quoted string of a message; SQL Server quotes names this way in every
 * language. An apostrophe inside a word is none of those quotes: French writes "Impossible
 * d'insérer la valeur NULL dans la colonne 'Zone'", and pairing from it would name the text between.
 */
function quoted (message: string, n: number): string | undefined {
  return quotedAll(message)[n]
}

/** every single-quoted string of a message, in order */
function quotedAll (message: string): string[] {
  return [...message.matchAll(/(?<![\p{L}\p{N}])'([^']*)'(?![\p{L}\p{N}])/gu)].map((m) => m[1])
}

/** a fault with the table its column is in, when the message names one */
function inTable (fault: DataFault, table: string | undefined): DataFault {
  return table === undefined || table === '' || fault.column === undefined ? fault : { ...fault, table }
}

function text (message: unknown): string | undefined {
  if (typeof message !== 'string') return undefined
  const trimmed = message.trim()
  return trimmed === '' ? undefined : trimmed
}

/** 547 covers three constraint kinds; the keywords stay English in localized messages ("REFERENCE-Einschränkung") */
function constraintKind (message: string): DataFaultKind {
  if (/\bREFERENCE\b/.test(message)) return 'referenced'
  if (/\bFOREIGN KEY\b/.test(message)) return 'foreignKey'
  if (/\bCHECK\b/.test(message)) return 'check'
  return /\bDELETE\b/.test(message) ? 'referenced' : 'check'
}

/** one SQL Server error and how much it says: a trigger's own text beats a constraint beats a bare 3609 */
function mssqlOne (e: { number?: unknown, message?: unknown }): { fault: DataFault, rank: number } | undefined {
  const number = e.number
  if (typeof number !== 'number') return undefined
  const message = typeof e.message === 'string' ? e.message : ''
  if (number >= 50000) {
    const own = text(message)
    return own === undefined ? { fault: { kind: 'rejected' }, rank: 1 } : { fault: { kind: 'rejected', message: own }, rank: 3 }
  }
  if (number === 3609) return { fault: { kind: 'rejected' }, rank: 1 }
  if (number === 547) {
    const kind = constraintKind(message)
    // "… CHECK constraint "CK_x". The conflict occurred in database "D", table "dbo.T", column 'Gewicht'.": only a one-column constraint names it
    const column = kind === 'check' ? quoted(message, 0) : undefined
    // "… FOREIGN KEY constraint "FK_Artikel_Einheit". …": the constraint's name, whose columns the catalog knows
    const constraint = kind === 'foreignKey' ? /"([^"]+)"/.exec(message)?.[1] : undefined
    if (constraint !== undefined) return { fault: { kind, constraint }, rank: 2 }
    return { fault: column === undefined || column === '' ? { kind } : { kind, columns: [column] }, rank: 2 }
  }
  // a legacy rule (CREATE RULE, sp_bindrule) the value broke: "… The conflict occurred in database 'D', table 'dbo.T',
  // column 'C'.", a CHECK constraint in all but name (before: a 500). The column is the last name quoted
  if (number === 513) {
    const names = quotedAll(message)
    const column = names[names.length - 1]
    const fault: DataFault = column === undefined || column === '' ? { kind: 'check', checkedBy: 'rule' } : { kind: 'check', columns: [column], checkedBy: 'rule' }
    return { fault: names.length >= 2 ? { ...fault, table: names[names.length - 2] } : fault, rank: 2 }
  }
  // "The attempted insert or update failed because the target view either specifies WITH CHECK OPTION or …": the row
  // written would not be one the mapped view shows (a view of one warehouse's stations, and a station moved to another)
  if (number === 550) return { fault: { kind: 'check', checkedBy: 'view' }, rank: 2 }
  // "Cannot insert the value NULL into column 'Zone', table 'WMS.dbo.T'" and "… truncated in table 'WMS.dbo.T', column 'ArtNr'":
  // the table too, which need not be the mapped one (Repository.explainFault)
  if (number === 515) return { fault: inTable(withColumn('notNull', quoted(message, 0)), quoted(message, 1)), rank: 2 }
  if (number === 2628) return { fault: inTable(withColumn('truncation', quoted(message, 1)), quoted(message, 0)), rank: 2 }
  if (number === 8152) return { fault: { kind: 'truncation' }, rank: 2 }
  if (OVERFLOW.has(number)) return { fault: { kind: 'overflow' }, rank: 2 }
  if (CONVERSION.has(number)) return { fault: { kind: 'conversion' }, rank: 2 }
  return undefined
}

function withColumn (kind: DataFaultKind, column: string | undefined): DataFault {
  return column === undefined || column === '' ? { kind } : { kind, column }
}

/**
 * The data fault in a node-mssql error, or undefined when it is about something else (unique keys,
 * deadlocks and connections are classifyMssqlError's). node-mssql throws the batch's last error
 * with the earlier ones in precedingErrors: a trigger's RAISERROR (50000) comes before the 3609
 * that ends the batch, so every error is looked at and the most informative one wins.
 */
export function mssqlDataFault (err: unknown): DataFault | undefined {
  if (typeof err !== 'object' || err === null) return undefined
  const e = err as { name?: unknown, code?: unknown, originalError?: unknown, precedingErrors?: unknown }
  if (e.name === 'TransactionError' && e.code === 'EABORT' && e.originalError !== undefined) return mssqlDataFault(e.originalError)
  if (e.name !== 'RequestError') return undefined
  const all = [...(Array.isArray(e.precedingErrors) ? e.precedingErrors : []), err]
  let best: { fault: DataFault, rank: number } | undefined
  for (const one of all) {
    if (typeof one !== 'object' || one === null) continue
    const found = mssqlOne(one as { number?: unknown, message?: unknown })
    // the earliest of equal rank: it is the cause, later ones are consequences
    if (found !== undefined && (best === undefined || found.rank > best.rank)) best = found
  }
  // a ROLLBACK that says nothing more: the trigger's words may have come as information (RAISERROR below severity 11, queryKeepingRaised)
  if (best !== undefined && best.fault.kind === 'rejected' && best.fault.message === undefined) {
    const raised = (err as { raisedInfo?: unknown }).raisedInfo
    const own = Array.isArray(raised) ? raised.map((r) => text((r as { message?: unknown }).message)).find((m) => m !== undefined) : undefined
    if (own !== undefined) return { kind: 'rejected', message: own }
  }
  return best?.fault
}

/** "T.col" in a SQLite message -> "col"; the table name comes first and has no dot */
function sqliteColumn (message: string, after: RegExp): string | undefined {
  const m = after.exec(message)
  if (m === null) return undefined
  return unqualified(message.slice(m.index + m[0].length).trim())
}

function unqualified (name: string): string {
  return name.slice(name.indexOf('.') + 1)
}

/** What a SQLite constraint message names after "constraint failed:" (columns as T.col, or a CHECK's expression or name). */
function constraintText (message: string): string | undefined {
  const named = /constraint failed:\s*(.+)$/s.exec(message)?.[1].trim()
  return named === '' ? undefined : named
}

/** The columns of "UNIQUE constraint failed: T.a, T.b" (SQLite names the index's columns, each after its table). */
export function uniqueColumns (message: string): string[] | undefined {
  return constraintText(message)?.split(', ').map(unqualified)
}

/** The table of "UNIQUE constraint failed: T.a, T.b" (or of a NOT NULL one): T. */
export function constraintTable (message: string): string | undefined {
  const named = constraintText(message)
  return named?.includes('.') === true ? named.slice(0, named.indexOf('.')) : undefined
}

/**
 * The data fault in a better-sqlite3 error, or undefined when it is about something else (unique
 * keys and busy databases are mapSqliteError's). SQLite's foreign key error names neither the
 * constraint nor the direction, so it is always 'foreignKey'.
 */
export function sqliteDataFault (err: unknown): DataFault | undefined {
  if (typeof err !== 'object' || err === null) return undefined
  const { code, message: raw } = err as { code?: unknown, message?: unknown }
  const message = typeof raw === 'string' ? raw : ''
  switch (code) {
    case 'SQLITE_CONSTRAINT_FOREIGNKEY': return { kind: 'foreignKey' }
    case 'SQLITE_CONSTRAINT_NOTNULL': {
      const column = constraintText(message)
      const fault = withColumn('notNull', column === undefined ? undefined : unqualified(column))
      return column?.includes('.') === true ? { ...fault, table: column.slice(0, column.indexOf('.')) } : fault
    }
    case 'SQLITE_CONSTRAINT_CHECK': {
      // "CHECK constraint failed: Gewicht <= 5000", or the constraint's name when it has one
      const constraint = constraintText(message)
      return constraint === undefined ? { kind: 'check' } : { kind: 'check', constraint }
    }
    case 'SQLITE_TOOBIG': return { kind: 'truncation' }
    case 'SQLITE_MISMATCH': return { kind: 'conversion' }
    // a STRICT table: "cannot store TEXT value in INTEGER column T.col"
    case 'SQLITE_CONSTRAINT_DATATYPE': return withColumn('conversion', sqliteColumn(message, /\bcolumn\b/))
    case 'SQLITE_CONSTRAINT_TRIGGER': {
      // ON DELETE/UPDATE RESTRICT reports through the trigger code, with the foreign key's own words
      if (/^FOREIGN KEY constraint failed$/i.test(message.trim())) return { kind: 'foreignKey' }
      const own = text(message)
      return own === undefined ? { kind: 'rejected' } : { kind: 'rejected', message: own }
    }
    default: return undefined
  }
}

/** The names in an SQL expression, unquoted ("Gewicht" <= 5000 AND [Menge (kg)] > 0 -> Gewicht, AND, Menge (kg)): candidates for columns. */
export function namesIn (expression: string): string[] {
  const names: string[] = []
  for (const m of expression.matchAll(/"((?:[^"]|"")+)"|\[([^\]]+)\]|`((?:[^`]|``)+)`|'(?:[^']|'')*'|([\p{L}_][\p{L}\p{N}_$]*)/gu)) {
    const name = m[1]?.replace(/""/g, '"') ?? m[2] ?? m[3]?.replace(/``/g, '`') ?? m[4]
    if (name !== undefined) names.push(name)
  }
  return names
}

/**
 * A named CHECK constraint's expression in a SQLite table's CREATE TABLE text (`CONSTRAINT "CK_x" CHECK (…)`,
 * also after a column's definition), or undefined. Parentheses are counted; quoted text is skipped.
 */
export function checkExpression (createTable: string, name: string): string | undefined {
  const quotedName = `(?:"${escapeRegExp(name.replace(/"/g, '""'))}"|\\[${escapeRegExp(name)}\\]|\`${escapeRegExp(name)}\`|${escapeRegExp(name)})`
  const head = new RegExp(`\\bCONSTRAINT\\s+${quotedName}\\s+CHECK\\s*\\(`, 'iu').exec(createTable)
  if (head === null) return undefined
  let depth = 1
  let quote: string | undefined
  const start = head.index + head[0].length
  for (let i = start; i < createTable.length; i++) {
    const c = createTable[i]
    if (quote !== undefined) {
      if (c === quote) quote = undefined
    } else if (c === "'" || c === '"' || c === '`') quote = c
    else if (c === '[') quote = ']'
    else if (c === '(') depth++
    else if (c === ')' && --depth === 0) return createTable.slice(start, i)
  }
  return undefined
}

function escapeRegExp (s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

const MAX_MESSAGE = 300

/** a trigger's text on one line, capped so a runaway message cannot flood the response */
function capped (message: string): string {
  const chars = Array.from(message.replace(/\s+/g, ' ').trim())
  return chars.length <= MAX_MESSAGE ? chars.join('') : chars.slice(0, MAX_MESSAGE - 1).join('') + '…'
}

/** The API fields of a fault's columns (mapped ones only, once each). */
function faultFields (fault: DataFault, ctx: FaultContext): string[] {
  return [...new Set((fault.columns ?? []).map((c) => ctx.fieldOf(c)).filter((f) => f !== undefined))]
}

/** The API error for a fault, in API vocabulary: fields through ctx.fieldOf, never a table or an unmapped column. */
export function faultToError (fault: DataFault, ctx: FaultContext, options?: ErrorOptions): DbError {
  const field = fault.column === undefined ? undefined : ctx.fieldOf(fault.column)
  const kind = fault.kind === 'foreignKey' && ctx.operation === 'delete' ? 'referenced' : fault.kind
  switch (kind) {
    case 'referenced': {
      const noun = ctx.noun.charAt(0).toUpperCase() + ctx.noun.slice(1)
      const subject = ctx.id === undefined ? `The ${ctx.noun}` : `${noun} ${ctx.id}`
      const example = ctx.referencedBy === undefined ? '' : ` (for example ${ctx.referencedBy})`
      const verb = ctx.operation === 'delete' ? 'deleted' : 'changed this way'
      return new ReferencedError(`${subject} is still referenced by other records of the picking system${example} and cannot be ${verb}`, options)
    }
    case 'foreignKey': {
      // SQLite names no column: the fields whose columns reference another table (Repository.foreignKeyColumns)
      const fields = faultFields(fault, ctx)
      const which = fields.length === 0 ? 'A value' : fields.length === 1 ? `'${fields[0]}'` : `One of ${fields.map((f) => `'${f}'`).join(', ')}`
      // a value the client never sent: the API's default (unit 'pcs') that the picking system's table does not know
      const own = fields.filter((f) => ctx.defaulted !== undefined && Object.hasOwn(ctx.defaulted, f))
      const hint = own.length === 0 ? '' : `; the request gave no ${own.join(' or ')}, so the API's default was written (${own.map((f) => `${f} ${JSON.stringify(ctx.defaulted![f])}`).join(', ')}): send a value the picking system knows`
      return new ConstraintViolationError(`${which} refers to a record that does not exist in the picking system${hint}`, options)
    }
    case 'notNull':
      return field === undefined
        ? new InvalidValueError("The picking system's table requires a value the gateway's mapping does not supply " +
          '(a NOT NULL column without a default); map that column or give it a default', options)
        : new InvalidValueError(`Field '${field}' must have a value: the database does not allow it to be empty`, options)
    case 'check': {
      const fields = faultFields(fault, ctx)
      const which = fields.length === 0 ? 'the values' : `the value${fields.length === 1 ? '' : 's'} of ${fields.map((f) => `'${f}'`).join(' and ')}`
      return new ConstraintViolationError(`The picking system's database refused ${which} (${fault.checkedBy === 'rule' ? 'a rule bound to a column of its table' : fault.checkedBy === 'view' ? `the WITH CHECK OPTION of the view the gateway writes through: the ${ctx.noun} would no longer be one the view shows` : 'a CHECK constraint of its table'})`, options)
    }
    case 'truncation':
      return new InvalidValueError(field === undefined ? 'A value is too long for the database column' : `Field '${field}' is too long for the database column`, options)
    case 'overflow':
    case 'conversion':
      return new InvalidValueError(field === undefined
        ? 'A value is outside what the database column can hold'
        : `Field '${field}' has a value outside what the database column can hold`, options)
    case 'rejected':
      return new ConstraintViolationError(fault.message === undefined
        ? 'The picking system refused the change (a trigger rolled it back)'
        : `The picking system refused the change: ${capped(fault.message)}`, options)
  }
}

/**
 * SQLite: the foreign keys of every table that refer to `table`, a row per column (child table, key id
 * within it, the parent column it refers to; null for the parent's primary key). For explaining a refused
 * write (Repository) and for check-config's note on keys SQLite cannot check.
 */
export function foreignKeysTo (table: string): Statement {
  return {
    text: 'SELECT m.name AS child, f.id AS id, f."to" AS col FROM sqlite_schema AS m JOIN pragma_foreign_key_list(m.name) AS f ' +
      'WHERE m.type = \'table\' AND f."table" = @table COLLATE NOCASE ORDER BY m.name, f.id, f.seq',
    params: [{ name: 'table', kind: 'string', value: table }]
  }
}
