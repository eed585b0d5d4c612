// Builds every statement the repositories run, for either dialect. Values only ever travel as parameters.
import type { Dialect } from './dialect.js'
import type { Filter, ListQuery, SortKey } from './list-query.js'
import { idField } from './resources.js'
import type { FieldKind, Param, ResourceDef, SqlValue, Statement, TableMapping } from './types.js'

/** Hands out @p1, @p2, … for one statement. */
class Params {
  readonly list: Param[] = []
  add (kind: FieldKind, value: SqlValue): string {
    const name = `p${this.list.length + 1}`
    this.list.push({ name, kind, value })
    return `@${name}`
  }

  named (name: string, kind: FieldKind, value: SqlValue): string {
    this.list.push({ name, kind, value })
    return `@${name}`
  }
}

const ESCAPE = "ESCAPE '\\'"

export class SqlBuilder {
  readonly dialect: Dialect
  readonly def: ResourceDef
  readonly mapping: TableMapping
  readonly id: string
  private readonly table: string
  private readonly selectList: string

  constructor (dialect: Dialect, def: ResourceDef, mapping: TableMapping) {
    this.dialect = dialect
    this.def = def
    this.mapping = mapping
    this.id = idField(def)
    this.table = dialect.table(mapping)
    this.selectList = Object.keys(def.fields).map((f) => `${this.col(f)} AS ${dialect.ident(f)}`).join(', ')
  }

  /** the quoted column of an API field */
  col (field: string): string {
    const column = this.mapping.columns[field]
    if (column === undefined || !Object.hasOwn(this.def.fields, field)) throw new Error(`${this.def.name}: no column for field '${field}'`)
    return this.dialect.ident(column)
  }

  private kind (field: string): FieldKind {
    return this.def.fields[field].kind
  }

  /** One row by id; `forUpdate` takes an update lock on SQL Server (inside a transaction). */
  selectById (id: SqlValue, opts: { forUpdate?: boolean } = {}): Statement {
    const params = new Params()
    const hint = opts.forUpdate === true && this.dialect.name === 'mssql' ? ' WITH (UPDLOCK, ROWLOCK)' : ''
    const p = params.named('id', this.kind(this.id), id)
    return { text: `SELECT ${this.selectList} FROM ${this.table}${hint} WHERE ${this.col(this.id)} = ${p}`, params: params.list }
  }

  /** A page: filters, keyset position, sort, then offset/limit exactly as given in `q`. */
  list (q: Pick<ListQuery, 'filters' | 'sort' | 'limit' | 'offset' | 'after'>): Statement {
    const params = new Params()
    const conditions = q.filters.map((f) => this.condition(f, params))
    if (q.after !== undefined) conditions.push(this.keyset(q.sort, q.after, params))
    const where = conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : ''
    const orderBy = q.sort.map((k) => `${this.col(k.field)} ${k.desc ? 'DESC' : 'ASC'}`).join(', ')
    const limit = params.named('limit', 'integer', q.limit)
    const offset = params.named('offset', 'integer', q.offset ?? 0)
    const paging = this.dialect.paging(limit.slice(1), offset.slice(1))
    return { text: `SELECT ${this.selectList} FROM ${this.table}${where} ORDER BY ${orderBy} ${paging}`, params: params.list }
  }

  /** The number of rows the filters match (the keyset position does not apply). */
  count (filters: Filter[]): Statement {
    const params = new Params()
    const conditions = filters.map((f) => this.condition(f, params))
    const where = conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : ''
    return { text: `SELECT COUNT(*) AS ${this.dialect.ident('total')} FROM ${this.table}${where}`, params: params.list }
  }

  /** Inserts one row and returns it (aliased like every select). */
  insert (values: Record<string, SqlValue>): Statement {
    const params = new Params()
    const fields = Object.keys(values)
    const head = fields.length === 0
      ? null
      : { cols: fields.map((f) => this.col(f)).join(', '), vals: fields.map((f) => params.add(this.kind(f), values[f])).join(', ') }
    if (this.dialect.name === 'sqlite') {
      const body = head === null ? 'DEFAULT VALUES' : `(${head.cols}) VALUES (${head.vals})`
      return { text: `INSERT INTO ${this.table} ${body} RETURNING ${this.selectList}`, params: params.list }
    }
    // OUTPUT without INTO fails on a table that has triggers (error 334), and customers' picking
    // tables often do: capture the new id in a table variable, then read the row back by it.
    const idType = this.kind(this.id) === 'integer' ? 'bigint' : 'nvarchar(450)'
    const output = `OUTPUT INSERTED.${this.col(this.id)} INTO @inserted`
    const body = head === null ? `${output} DEFAULT VALUES` : `(${head.cols}) ${output} VALUES (${head.vals})`
    return {
      text: `DECLARE @inserted TABLE ([id] ${idType}); ` +
        `INSERT INTO ${this.table} ${body}; ` +
        `SELECT ${this.selectList} FROM ${this.table} WHERE ${this.col(this.id)} = (SELECT TOP (1) [id] FROM @inserted)`,
      params: params.list
    }
  }

  /**
   * Inserts several rows in one statement, without returning them (seeding). The caller keeps
   * `rows.length * fields.length` under the dialect's parameter limit (SQL Server: 2100).
   */
  insertMany (fields: string[], rows: Array<Record<string, SqlValue>>): Statement {
    const params = new Params()
    const cols = fields.map((f) => this.col(f)).join(', ')
    const tuples = rows.map((row) => `(${fields.map((f) => params.add(this.kind(f), row[f] ?? null)).join(', ')})`)
    return { text: `INSERT INTO ${this.table} (${cols}) VALUES ${tuples.join(', ')}`, params: params.list }
  }

  /** Sets the given fields of one row. */
  update (id: SqlValue, values: Record<string, SqlValue>): Statement {
    const fields = Object.keys(values)
    if (fields.length === 0) throw new Error('update without fields')
    const params = new Params()
    const set = fields.map((f) => `${this.col(f)} = ${params.add(this.kind(f), values[f])}`).join(', ')
    const p = params.named('id', this.kind(this.id), id)
    return { text: `UPDATE ${this.table} SET ${set} WHERE ${this.col(this.id)} = ${p}`, params: params.list }
  }

  delete (id: SqlValue): Statement {
    const params = new Params()
    const p = params.named('id', this.kind(this.id), id)
    return { text: `DELETE FROM ${this.table} WHERE ${this.col(this.id)} = ${p}`, params: params.list }
  }

  private condition (f: Filter, params: Params): string {
    const c = this.col(f.field)
    const kind = this.kind(f.field)
    const p = (i = 0): string => params.add(kind, f.values[i])
    const list = (): string => f.values.map((v) => params.add(kind, v)).join(', ')
    switch (f.op) {
      case 'eq': return f.values[0] === null ? `${c} IS NULL` : `${c} = ${p()}`
      case 'gt': return `${c} > ${p()}`
      case 'gte': return `${c} >= ${p()}`
      case 'lt': return `${c} < ${p()}`
      case 'lte': return `${c} <= ${p()}`
      // The negations also match NULL (see Filter in list-query.ts).
      case 'not': return `(${c} <> ${p()} OR ${c} IS NULL)`
      case 'like': return `${c} LIKE ${this.likeParam(f, params)} ${ESCAPE}`
      case 'notlike': return `(${c} NOT LIKE ${this.likeParam(f, params)} ${ESCAPE} OR ${c} IS NULL)`
      case 'or': return `${c} IN (${list()})`
      case 'nor': return `(${c} NOT IN (${list()}) OR ${c} IS NULL)`
      case 'null': return `${c} IS NULL`
      case 'notnull': return `${c} IS NOT NULL`
    }
  }

  private likeParam (f: Filter, params: Params): string {
    return params.add('string', this.dialect.escapeLikePattern(String(f.values[0])))
  }

  /**
   * Rows strictly after the keyset position `after` in the order `sort`. Both dialects sort NULL
   * first ascending and last descending; so after a non-null x, ASC means `> x` and DESC means
   * `< x OR IS NULL`; after a NULL, ASC means `IS NOT NULL` and DESC means nothing (NULLs are last).
   * Equality on the earlier keys includes `IS NULL`. The NULL branches are left out for fields
   * declared notNull: an `OR col IS NULL` keeps SQLite from seeking on the column's index.
   */
  private keyset (sort: SortKey[], after: SqlValue[], params: Params): string {
    const refs = after.map((v, i) => v === null ? null : params.add(this.kind(sort[i].field), v))
    const nullable = (i: number): boolean => this.def.fields[sort[i].field].notNull !== true && this.def.fields[sort[i].field].id !== true
    const disjuncts: string[] = []
    for (let i = 0; i < sort.length; i++) {
      const c = this.col(sort[i].field)
      const ref = refs[i]
      let beyond: string | null
      if (ref === null) beyond = sort[i].desc ? null : `${c} IS NOT NULL`
      else if (sort[i].desc) beyond = nullable(i) ? `(${c} < ${ref} OR ${c} IS NULL)` : `${c} < ${ref}`
      else beyond = `${c} > ${ref}`
      if (beyond !== null) {
        const equal = sort.slice(0, i).map((k, j) => refs[j] === null ? `${this.col(k.field)} IS NULL` : `${this.col(k.field)} = ${refs[j]}`)
        disjuncts.push(equal.length === 0 ? beyond : `(${[...equal, beyond].join(' AND ')})`)
      }
    }
    const keyset = disjuncts.length === 1 ? disjuncts[0] : `(${disjuncts.join(' OR ')})`
    // The same bound on the first key alone is redundant, but it is the part an index can seek
    // on: each page then starts where the last one ended instead of filtering from the top.
    if (sort.length === 1) return keyset
    const c = this.col(sort[0].field)
    let leading: string | null
    if (refs[0] === null) leading = sort[0].desc ? `${c} IS NULL` : null
    else if (!sort[0].desc) leading = `${c} >= ${refs[0]}`
    else leading = nullable(0) ? `(${c} <= ${refs[0]} OR ${c} IS NULL)` : `${c} <= ${refs[0]}`
    return leading === null ? keyset : `${leading} AND ${keyset}`
  }
}
