// One resource's reads and writes over a Database, in API shape: rows keyed by API field, typed by kind.
import { dialectFor } from './dialect.js'
import { BadQueryError, ConflictError, NotFoundError, PreconditionFailedError } from './errors.js'
import { cursorFromRow, parseIsoDateTime, type Filter, type ListQuery } from './list-query.js'
import { idField } from './resources.js'
import { SqlBuilder } from './sql.js'
import type { Database, FieldDef, ResourceDef, Row, SqlValue, TableMapping } from './types.js'

export interface ListResult {
  rows: Row[]
  /** only when the query asked for a count */
  total?: number
  /** the cursor of the next page; absent on the last page */
  next?: string
}

export interface WriteOptions {
  /** called with the current row inside the transaction; false means 412 (If-Match did not match) */
  check?: (current: Row) => boolean
}

export interface UpdateOptions extends WriteOptions {
  /** set modifiedAt to now (default true); false for bookkeeping such as lastLoginAt */
  touch?: boolean
}

export type Id = number | string

const CANONICAL_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** A stored value in API shape: booleans, numbers, ISO 8601 UTC strings, strings, or null. */
export function toApiValue (def: FieldDef, value: unknown): unknown {
  if (value === null || value === undefined) return null
  switch (def.kind) {
    case 'boolean':
      if (typeof value === 'boolean') return value
      if (typeof value === 'number' || typeof value === 'bigint') return value !== 0 && value !== 0n
      return value === '1' || value === 'true'
    case 'integer':
    case 'number':
      return typeof value === 'number' ? value : Number(value)
    case 'datetime': {
      if (value instanceof Date) return value.toISOString()
      if (typeof value === 'string') return CANONICAL_TIME.test(value) ? value : parseIsoDateTime(value)?.toISOString() ?? value
      return String(value)
    }
    case 'string':
      return typeof value === 'string' ? value : String(value)
  }
}

export class Repository {
  def: ResourceDef
  sql: SqlBuilder
  private readonly db: Database
  private readonly mapping: TableMapping
  private readonly id: string
  private readonly uniqueFields: string[]

  constructor (db: Database, def: ResourceDef, mapping: TableMapping) {
    this.db = db
    this.mapping = mapping
    this.def = def
    this.sql = new SqlBuilder(dialectFor(db.dialect), def, mapping)
    this.id = idField(def)
    this.uniqueFields = Object.keys(def.fields).filter((f) => def.fields[f].unique === true && f !== this.id)
  }

  /** Takes a refined definition of the same resource (nullability learned from the database later). */
  adopt (def: ResourceDef): void {
    this.def = def
    this.sql = new SqlBuilder(dialectFor(this.db.dialect), def, this.mapping)
  }

  /** A driver row (aliased to API names) in API shape. */
  mapRow (raw: Row): Row {
    const out: Row = {}
    for (const [field, def] of Object.entries(this.def.fields)) out[field] = toApiValue(def, raw[field])
    return out
  }

  /** Checks and converts values from a caller (API-shaped or JS-typed) into statement values. */
  private input (values: Row): Record<string, SqlValue> {
    const out: Record<string, SqlValue> = {}
    for (const [field, value] of Object.entries(values)) {
      if (value === undefined) continue
      const def = Object.hasOwn(this.def.fields, field) ? this.def.fields[field] : undefined
      if (def === undefined) throw new BadQueryError(`Unknown field '${field}'`)
      if (def.id === true) throw new BadQueryError(`Field '${field}' cannot be set`)
      out[field] = this.convert(field, def, value)
    }
    return out
  }

  private convert (field: string, def: FieldDef, value: unknown): SqlValue {
    if (value === null) return null
    const bad = (): BadQueryError => new BadQueryError(`Invalid value for '${field}': expected ${def.kind}`)
    switch (def.kind) {
      case 'string':
        if (typeof value !== 'string') throw bad()
        return value
      case 'integer':
        if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw bad()
        return value
      case 'number':
        if (typeof value !== 'number' || !Number.isFinite(value)) throw bad()
        return value
      case 'boolean':
        if (typeof value !== 'boolean') throw bad()
        return value
      case 'datetime': {
        const d = value instanceof Date ? value : typeof value === 'string' ? parseIsoDateTime(value) : undefined
        if (d === undefined || Number.isNaN(d.getTime())) throw bad()
        return d
      }
    }
  }

  async list (q: ListQuery): Promise<ListResult> {
    // one row more than the page tells whether there is a next page without a count
    const [raw, total] = await Promise.all([
      this.db.query(this.sql.list({ ...q, limit: q.limit + 1 })),
      q.count ? this.count(q.filters) : undefined
    ])
    const rows = raw.slice(0, q.limit).map((r) => this.mapRow(r))
    const result: ListResult = { rows }
    if (total !== undefined) result.total = total
    if (raw.length > q.limit) result.next = cursorFromRow(q.sort, rows[rows.length - 1])
    return result
  }

  async count (filters: Filter[] = []): Promise<number> {
    const rows = await this.db.query(this.sql.count(filters))
    return Number(rows[0]?.total ?? 0)
  }

  async get (id: Id): Promise<Row | undefined> {
    const rows = await this.db.query(this.sql.selectById(id))
    return rows.length === 0 ? undefined : this.mapRow(rows[0])
  }

  /** The row whose `field` equals `value` (the lowest id if several do); internal fields allowed. */
  async findOne (field: string, value: unknown): Promise<Row | undefined> {
    if (!Object.hasOwn(this.def.fields, field)) throw new BadQueryError(`Unknown field '${field}'`)
    const v = this.convert(field, this.def.fields[field], value)
    const rows = await this.db.query(this.sql.list({
      filters: [{ field, op: v === null ? 'null' : 'eq', values: [v] }],
      sort: [{ field: this.id, desc: false }],
      limit: 1
    }))
    return rows.length === 0 ? undefined : this.mapRow(rows[0])
  }

  /** Inserts a row: defaults for missing writable fields, createdAt/modifiedAt now unless given. */
  async create (values: Row): Promise<Row> {
    const vals = this.input(values)
    for (const [field, def] of Object.entries(this.def.fields)) {
      if (vals[field] === undefined && def.default !== undefined && def.readOnly !== true) vals[field] = def.default
    }
    const now = new Date()
    if (this.has('createdAt') && vals.createdAt === undefined) vals.createdAt = now
    if (this.has('modifiedAt') && vals.modifiedAt === undefined) vals.modifiedAt = now
    try {
      const rows = await this.db.query(this.sql.insert(vals))
      return this.mapRow(rows[0])
    } catch (err) {
      throw await this.explainConflict(err, vals)
    }
  }

  /**
   * Changes the given fields in one transaction: locks the row, 404 when missing, 412 when
   * `check` rejects it, sets modifiedAt (strictly later than before, so it changes on every
   * update even within one millisecond), and returns the row as stored.
   */
  async update (id: Id, values: Row, opts: UpdateOptions = {}): Promise<Row> {
    const vals = this.input(values)
    try {
      return await this.db.transaction(async (tx) => {
        const current = await tx.query(this.sql.selectById(id, { forUpdate: true }))
        if (current.length === 0) throw new NotFoundError(`${this.def.name} ${id} not found`)
        const row = this.mapRow(current[0])
        if (opts.check !== undefined && !opts.check(row)) throw new PreconditionFailedError()
        if (opts.touch !== false && this.has('modifiedAt') && vals.modifiedAt === undefined) {
          const previous = typeof row.modifiedAt === 'string' ? Date.parse(row.modifiedAt) : Number.NaN
          const now = Date.now()
          vals.modifiedAt = new Date(Number.isNaN(previous) || previous < now ? now : previous + 1)
        }
        if (Object.keys(vals).length === 0) return row
        await tx.execute(this.sql.update(id, vals))
        const after = await tx.query(this.sql.selectById(id))
        return this.mapRow(after[0])
      })
    } catch (err) {
      throw await this.explainConflict(err, vals, id)
    }
  }

  /** Deletes one row in a transaction (404 when missing, 412 when `check` rejects it); returns the deleted row. */
  async delete (id: Id, opts: WriteOptions = {}): Promise<Row> {
    return await this.db.transaction(async (tx) => {
      const current = await tx.query(this.sql.selectById(id, { forUpdate: true }))
      if (current.length === 0) throw new NotFoundError(`${this.def.name} ${id} not found`)
      const row = this.mapRow(current[0])
      if (opts.check !== undefined && !opts.check(row)) throw new PreconditionFailedError()
      await tx.execute(this.sql.delete(id))
      return row
    })
  }

  private has (field: string): boolean {
    return Object.hasOwn(this.def.fields, field)
  }

  /**
   * The driver cannot say which unique key was hit without parsing vendor messages: with one
   * unique field it is that one; with several, look for the row that holds one of the values.
   */
  private async explainConflict (err: unknown, vals: Record<string, SqlValue>, exceptId?: Id): Promise<unknown> {
    if (!(err instanceof ConflictError)) return err
    const given = this.uniqueFields.filter((f) => vals[f] !== undefined && vals[f] !== null)
    const message = (f: string): ConflictError => new ConflictError(`${f} '${String(vals[f])}' already exists`, { cause: err })
    if (this.uniqueFields.length === 1 && given.length === 1) return message(given[0])
    for (const f of given) {
      try {
        const other = await this.findOne(f, vals[f])
        if (other !== undefined && (exceptId === undefined || String(other[this.id]) !== String(exceptId))) return message(f)
      } catch {
        break
      }
    }
    return err
  }
}
