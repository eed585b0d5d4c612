// The property-based mapping tests' shared parts (test/routes/mapping-properties*.test.ts): fast-check arbitraries for
// the names, types and stored values of generated legacy SQLite tables, the tables and mappings built from them, the
// seeded run, and the checks every resource's API must pass over such a table.
import type { Test } from 'tap'
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import type { TableMappingConfig } from '../../schemas/config.js'
import type { Database } from '../../src/db/types.js'
import { build, type TestContext } from './build.js'

const MSSQL = process.env.GATEWAY_TEST_DB === 'mssql' && Boolean(process.env.MSSQL_TEST_URL)

// ---- the run: a fixed seed, replays, the answers seen ----

/** tap's options for a property test: the generated tables are SQLite's, and all of them take a while */
export const PROPERTY_TEST = { skip: MSSQL && 'generated SQLite schemas', timeout: 300_000 }

const STATS = process.env.PROPERTY_STATS === '1' ? new Map<string, number>() : undefined

/** counts an answer seen: PROPERTY_STATS=1 lists them at the end */
export const stat = (key: string): void => { STATS?.set(key, (STATS.get(key) ?? 0) + 1) }

/** how long a failure's shrinking may go on: a failing property reports its counterexample well within .taprc's 120 s a file */
export const SHRINK_MS = 20_000

/**
 * Checks `check` on `examples`, then on `runs` values of `arb` from the fixed `seed`, so that every run checks the same
 * schemas; PROPERTY_SEED and PROPERTY_RUNS explore others. On a failure fast-check shrinks the counterexample for at
 * most `shrinkMs` (PROPERTY_SHRINK_MS; each step builds an app: shrinking to the end took longer than tap waits for a
 * file, which then said only "timeout!"), and the failure names the seed, the path and the counterexample shrunk so far,
 * which PROPERTY_SEED=<seed> PROPERTY_PATH=<path> replays. A run without a failure is never cut short.
 */
export async function checkProperty<T> (t: Test, arb: fc.Arbitrary<T>, check: (value: T) => Promise<void>, defaults: { seed: number, runs: number, examples?: T[], shrinkMs?: number }): Promise<void> {
  const seed = Number(process.env.PROPERTY_SEED ?? defaults.seed)
  const numRuns = Number(process.env.PROPERTY_RUNS ?? defaults.runs)
  const shrinkMs = Number(process.env.PROPERTY_SHRINK_MS ?? defaults.shrinkMs ?? SHRINK_MS)
  let runs = 0
  let failedAt: number | undefined
  const details = await fc.check(fc.asyncProperty(arb, async (value) => {
    // once a failure has been shrunk for shrinkMs: fast-check stops and reports the last value that failed
    if (failedAt !== undefined && Date.now() - failedAt > shrinkMs) throw new fc.PreconditionFailure(true)
    runs++
    try {
      await check(value)
    } catch (err) {
      failedAt ??= Date.now()
      throw err
    }
  }), {
    seed,
    numRuns,
    // the failure's message names the DDL, the mapping and what went wrong
    includeErrorInReport: true,
    ...(defaults.examples === undefined ? {} : { examples: defaults.examples.map((e): [T] => [e]) }),
    ...(process.env.PROPERTY_PATH ? { path: process.env.PROPERTY_PATH, endOnFailure: true } : {})
  })
  if (details.failed) {
    const cut = details.interrupted ? `\n(shrinking stopped after ${shrinkMs} ms: the counterexample is shrunk so far; PROPERTY_SHRINK_MS=<ms> and tap's --timeout shrink it further)` : ''
    throw new Error(`${fc.defaultReportMessage(details)}${cut}`)
  }
  if (STATS) t.comment([...STATS].sort().map(([k, n]) => `${n}\t${k}`).join('\n'))
  t.ok(runs >= numRuns, `${runs} schemas checked (seed ${seed})`)
}

// ---- columns: names and types ----

export type Flag = { kind: 'int' } | { kind: 'map', t: string | number, f: string | number }
export type TimeColumn = { type: string, format?: 'unix' | 'unix-ms' | 'yyyymmddhhmmss' }

/** a generated column: what every resource's columns have (each test adds its own kinds) */
export interface LegacyColumn {
  field: string
  name: string
  type: string
  notNull: boolean
  /** SQL text of the column's default */
  dflt?: string
  /** text: CHAR(n) (padded on read), n the length limit */
  text?: { char: boolean, n?: number }
  flag?: Flag
  time?: TimeColumn
}

/** an unmapped column: NOT NULL filled by its default or by mapping.defaults, or a nullable one */
export interface Extra { name: string, kind: 'default' | 'viaDefaults' | 'nullable' }

export interface LegacyTable<C extends LegacyColumn = LegacyColumn> {
  table: string
  /** the resource's timeZone: its DATETIME and digit columns hold local time */
  timeZone?: string
  columns: C[]
  extra?: Extra
}

export const q = (name: string): string => `"${name.replaceAll('"', '""')}"`
export const lit = (v: string | number): string => typeof v === 'number' ? String(v) : `'${v.replaceAll("'", "''")}'`

/** column(field, type, notNull?): a column named one of the field's `names` (mixed case, spaces, reserved words and quote characters, as the README allows), in any case; NOT NULL as given, else either */
export function columnArb<C extends LegacyColumn> (names: Record<string, string[]>): (field: string, typeArb: fc.Arbitrary<Partial<C>>, notNull?: boolean) => fc.Arbitrary<C> {
  const nameOf = (field: string): fc.Arbitrary<string> => fc.tuple(fc.constantFrom(...names[field]), fc.constantFrom('as is', 'lower', 'upper')).map(([b, c]) => c === 'lower' ? b.toLowerCase() : c === 'upper' ? b.toUpperCase() : b)
  return (field, typeArb, notNull) => fc.record({ name: nameOf(field), t: typeArb, notNull: notNull === undefined ? fc.boolean() : fc.constant(notNull) })
    .map(({ name, t, notNull }) => ({ field, name, notNull, ...t }) as C)
}

/** a column the table may lack */
export const optional = <T>(column: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(column, { nil: undefined, freq: 3 })

/** a NOT NULL column gets a default (the code the API's default writes) or none, when the API has a default */
export const withDefault = <C extends LegacyColumn>(dflt: (c: C) => string) => <T extends C | undefined>(c: T): fc.Arbitrary<T> =>
  c === undefined || !c.notNull ? fc.constant(c) : fc.boolean().map((d) => ({ ...c, dflt: d ? dflt(c) : undefined }))

/** one column per field: names that collide after case folding get a suffix (renamed in place: pass copies, as fast-check replays generated values while shrinking) */
export function distinctNames<C extends LegacyColumn> (columns: C[]): C[] {
  const seen = new Set<string>()
  for (const c of columns) {
    while (seen.has(c.name.toLowerCase())) c.name += '2'
    seen.add(c.name.toLowerCase())
  }
  return columns
}

export const textType = (min: number, max = 40): fc.Arbitrary<Pick<LegacyColumn, 'type' | 'text'>> => fc.oneof(
  fc.constantFrom('TEXT', '').map((type) => ({ type, text: { char: false } })),
  fc.integer({ min, max }).map((n) => ({ type: `VARCHAR(${n})`, text: { char: false, n } })),
  fc.integer({ min, max }).map((n) => ({ type: `NVARCHAR(${n})`, text: { char: false, n } })),
  fc.integer({ min, max }).map((n) => ({ type: `CHAR(${n})`, text: { char: true, n } }))
)

export const flagType: fc.Arbitrary<Pick<LegacyColumn, 'type' | 'flag'>> = fc.oneof(
  fc.constantFrom('INTEGER', 'BOOLEAN', 'BIT').map((type) => ({ type, flag: { kind: 'int' } as Flag })),
  fc.constantFrom<[string, string]>(['Y', 'N'], ['J', 'N'], ['T', 'F']).chain(([y, n]) => fc.constantFrom('CHAR(1)', 'VARCHAR(1)', 'TEXT').map((type) => ({ type, flag: { kind: 'map', t: y, f: n } as Flag }))),
  fc.constant({ type: 'INTEGER', flag: { kind: 'map', t: -1, f: 0 } as Flag })
)

/**
 * A flag column, or now and then one without a declared type, which keeps what each program wrote as given: the -1 of VB,
 * a number's text, codes (`untypedFlagOdd` adds the text a number may come as)
 */
export const flagOrUntypedType: fc.Arbitrary<Pick<LegacyColumn, 'type' | 'flag'>> = fc.oneof(
  { arbitrary: flagType, weight: 3 },
  { arbitrary: fc.constantFrom<Flag>({ kind: 'int' }, { kind: 'map', t: 'J', f: 'N' }, { kind: 'map', t: -1, f: 0 }).map((flag) => ({ type: '', flag })), weight: 1 }
)

/** the odd values of storedFlag: in a column without a declared type a number may come as its text ('1', '-1'), as another program bound it */
export const untypedFlagOdd = (c: LegacyColumn): { int: unknown[], map: unknown[] } =>
  c.type !== '' ? { int: [], map: [] } : { int: ['1', '0'], map: c.flag?.kind === 'map' && typeof c.flag.t === 'number' ? [String(c.flag.t), String(c.flag.f)] : [] }

export const trueCode = (flag: Flag): string => flag.kind === 'int' ? '1' : lit(flag.t)
export const falseCode = (flag: Flag): string => flag.kind === 'int' ? '0' : lit(flag.f)

export const timeType: fc.Arbitrary<TimeColumn> = fc.constantFrom<TimeColumn>(
  { type: 'DATETIME' }, { type: 'TEXT' }, { type: 'TIMESTAMP' },
  { type: 'INTEGER', format: 'unix' }, { type: 'BIGINT', format: 'unix-ms' },
  { type: 'BIGINT', format: 'yyyymmddhhmmss' }, { type: 'CHAR(14)', format: 'yyyymmddhhmmss' }
)

// ---- the table, its mapping and its rows ----

/**
 * CREATE TABLE for a generated table: its own INTEGER PRIMARY KEY `key.own` first where it has one, the key field's
 * column with `key.sql` (its NOT NULL, PRIMARY KEY or UNIQUE), the others NOT NULL as generated, then the extra column.
 */
export function createTable (s: LegacyTable, key: { own?: string, field: string, sql: string }): string {
  const defs: string[] = []
  if (key.own !== undefined) defs.push(`${q(key.own)} INTEGER PRIMARY KEY`)
  for (const c of s.columns) {
    let def = `${q(c.name)} ${c.type}`
    if (c.field === key.field) def += key.sql
    else if (c.notNull) def += ' NOT NULL'
    if (c.dflt !== undefined) def += ` DEFAULT ${c.dflt}`
    defs.push(def)
  }
  if (s.extra) defs.push(`${q(s.extra.name)} INTEGER${s.extra.kind === 'nullable' ? '' : ' NOT NULL'}${s.extra.kind === 'default' ? ' DEFAULT 1' : ''}`)
  return `CREATE TABLE ${q(s.table)} (${defs.join(', ')})`
}

type ValueMap = NonNullable<Exclude<TableMappingConfig['columns'][string], string | null>['values']>

/**
 * The mapping onto a generated table: `nulls` (the fields it leaves out) first, then each column by name, with its value
 * map (a flag's codes, else `values(c)`) or its time format, and the id on the column `id`.
 */
export function tableMapping<C extends LegacyColumn> (s: LegacyTable<C>, id: string, nulls: string[], values?: (c: C) => ValueMap | undefined): TableMappingConfig {
  const columns: Record<string, TableMappingConfig['columns'][string]> = Object.fromEntries(nulls.map((f) => [f, null]))
  for (const c of s.columns) {
    const map = c.flag?.kind === 'map' ? { true: c.flag.t, false: c.flag.f } : values?.(c)
    if (map !== undefined) columns[c.field] = { column: c.name, values: map }
    else if (c.time?.format !== undefined) columns[c.field] = { column: c.name, format: c.time.format }
    else columns[c.field] = c.name
  }
  columns.id = id
  return { table: s.table, ...(s.timeZone ? { timeZone: s.timeZone } : {}), columns, ...(s.extra?.kind === 'viaDefaults' ? { defaults: { [s.extra.name]: 7 } } : {}) }
}

/** what a CHAR(n) column holds of a text: padded with blanks to n */
export const pad = (c: LegacyColumn, x: unknown): unknown => c.text?.char === true && c.text.n !== undefined && typeof x === 'string' ? x.padEnd(c.text.n, ' ') : x

/** a stored value, or NULL in one row of four or so where the column takes it */
export const orNull = (v: fc.Arbitrary<unknown>, nullable: boolean): fc.Arbitrary<unknown> => nullable ? fc.option(v, { nil: null, freq: 4 }) : v

/** a flag as the picking system stored it: its codes, a code in lower case or with a trailing blank, and `odd` ones where given */
export function storedFlag (flag: Flag, odd: { int: unknown[], map: unknown[] } = { int: [], map: [] }): fc.Arbitrary<unknown> {
  return flag.kind === 'int'
    ? fc.constantFrom(0, 1, -1, ...odd.int)
    : fc.constantFrom(flag.t, flag.f, typeof flag.t === 'string' ? flag.t.toLowerCase() : flag.t, typeof flag.f === 'string' ? `${flag.f} ` : flag.f, ...odd.map)
}

/** a time as the column keeps it: its format's number or digits, else ISO text with a blank for the T */
export function timeValue (time: TimeColumn): fc.Arbitrary<unknown> {
  return fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2030-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => {
    const iso = d.toISOString()
    switch (time.format) {
      case 'unix': return Math.floor(d.getTime() / 1000)
      case 'unix-ms': return d.getTime()
      case 'yyyymmddhhmmss': {
        const digits = iso.slice(0, 19).replace(/[-T:]/g, '')
        return time.type === 'BIGINT' ? Number(digits) : digits
      }
      default: return iso.slice(0, 23).replace('T', ' ')
    }
  })
}

/** a row's values by column name */
export const valuesArb = <C extends LegacyColumn>(columns: C[], value: (c: C) => fc.Arbitrary<unknown>): fc.Arbitrary<Record<string, unknown>> =>
  fc.record(Object.fromEntries(columns.map((c) => [c.name, value(c)])))

/** `first` where given, then up to `max` rows row(1) … row(n); the key column is unique, so the first row of each key(row) is kept */
export function rowsArb<R> (max: number, row: (i: number) => fc.Arbitrary<R>, key: (r: R) => string, first?: fc.Arbitrary<R>): fc.Arbitrary<R[]> {
  return fc.integer({ min: 0, max }).chain((n) => fc.tuple(...(first === undefined ? [] : [first]), ...Array.from({ length: n }, (_, i) => row(i + 1))))
    .map((rows) => {
      const seen = new Set<string>()
      return rows.filter((r) => {
        const k = key(r)
        if (seen.has(k)) return false
        seen.add(k)
        return true
      })
    })
}

/** up to 7 rows of stored values; the key field's column is unique, compared as the API does: without CHAR padding, in any case */
export function keyedRows<C extends LegacyColumn> (s: LegacyTable<C>, field: string, storedValue: (c: C, i: number) => fc.Arbitrary<unknown>): fc.Arbitrary<Array<Record<string, unknown>>> {
  const keyCol = s.columns.find((c) => c.field === field)!
  return rowsArb(7, (i) => valuesArb(s.columns, (c) => storedValue(c, i)), (r) => String(r[keyCol.name]).trimEnd().toLowerCase())
}

/** creates the table and inserts the rows (values by column name) as the picking system wrote them, 3 in a NOT NULL extra column */
export async function fill (db: Database, s: LegacyTable, ddl: string, rows: Array<Record<string, unknown>>): Promise<void> {
  await db.execute({ text: ddl, params: [] })
  for (const r of rows) {
    const names = Object.keys(r)
    const extra = s.extra === undefined || s.extra.kind === 'nullable' ? [] : [q(s.extra.name)]
    await db.execute({
      text: `INSERT INTO ${q(s.table)} (${[...names.map(q), ...extra].join(', ')}) VALUES (${[...names.map((_, i) => `@p${i}`), ...extra.map(() => '3')].join(', ')})`,
      params: names.map((n, i) => {
        const value = r[n]
        if (value === null) return { name: `p${i}`, kind: 'string' as const, value: null }
        if (typeof value === 'number') return { name: `p${i}`, kind: Number.isInteger(value) ? 'integer' as const : 'number' as const, value }
        return { name: `p${i}`, kind: 'string' as const, value: String(value) }
      })
    })
  }
}

// ---- request bodies ----

/** a request body, and whether the schema takes it */
export interface Body { body: Record<string, unknown>, valid: boolean }

/** a valid body of some of the columns' fields (always those of `requiredKeys`) */
export const validBody = <C extends LegacyColumn>(columns: C[], value: (c: C) => fc.Arbitrary<unknown>, requiredKeys: string[]): fc.Arbitrary<Body> =>
  fc.record(Object.fromEntries(columns.map((c) => [c.field, value(c)])), { requiredKeys }).map((body) => ({ body: body as Record<string, unknown>, valid: true }))

/** a valid body, or one with one of `fields` set to an odd value */
export function withOdd (valid: fc.Arbitrary<Body>, fields: string[], oddValue: fc.Arbitrary<unknown>): fc.Arbitrary<Body> {
  const odd = fc.tuple(valid, fc.constantFrom(...fields), oddValue)
    .map(([{ body }, field, value]) => ({ body: { ...body, [field]: value }, valid: false }))
  return fc.oneof(valid, odd)
}

// ---- checks ----

/** the app over one generated table, an admin's headers, and fail(), which throws naming the table and its mapping */
export interface Gateway {
  ctx: TestContext
  table: string
  headers: { authorization: string }
  fail: (what: string, detail: unknown) => never
}

/** builds the app over the table `prepare` makes, runs `checks` and closes the app again (also after a failure: the run goes on shrinking) */
export async function overTable (t: Test, overrides: Parameters<typeof build>[1], prepare: (db: Database) => Promise<void>, checks: (ctx: TestContext) => Promise<void>): Promise<void> {
  const ctx = await build(t, overrides, prepare)
  try {
    await checks(ctx)
  } finally {
    await ctx.app.close()
  }
}

/** the checks' view of the app over table `s`: fail() names the DDL, the mapping and, where given, the rows */
export function gateway (ctx: TestContext, s: LegacyTable, ddl: string, mapping: TableMappingConfig, rows?: unknown): Gateway {
  const rowsText = rows === undefined ? '' : `\nrows: ${JSON.stringify(rows)}`
  return {
    ctx,
    table: s.table,
    headers: ctx.auth(ctx.adminToken),
    fail: (what, detail) => { throw new Error(`${what}: ${JSON.stringify(detail)}\nDDL: ${ddl}\nmapping: ${JSON.stringify(mapping)}${rowsText}`) }
  }
}

/** the table's rows as stored, to compare before and after a request */
export async function dump (g: Gateway): Promise<unknown[]> {
  return await g.ctx.db.query({ text: `SELECT * FROM ${q(g.table)} ORDER BY rowid`, params: [] })
}

/** a row as the API shows it */
export interface Shown { id: number | string, [field: string]: unknown }

/** the list of `resource` (a 200, up to 1000 rows), with a filter (`&field=value`) where given */
export async function list<R extends Shown> (g: Gateway, resource: string, filter = ''): Promise<R[]> {
  const res = await g.ctx.app.inject({ method: 'GET', url: `/api/${resource}?limit=1000${filter}`, headers: g.headers })
  if (res.statusCode !== 200) g.fail(`the list${filter} answered ${res.statusCode} ${res.body}`, null)
  return (res.json() as { data: R[] }).data
}

/** the list of `resource`, checked to show every row of the table */
export async function listAll<R extends Shown> (g: Gateway, resource: string): Promise<R[]> {
  const rows = await list<R>(g, resource)
  const count = (await g.ctx.db.query({ text: `SELECT COUNT(*) AS n FROM ${q(g.table)}`, params: [] }))[0] as { n: number }
  if (rows.length !== Number(count.n)) g.fail(`the list shows ${rows.length} of ${count.n} rows`, rows.map((r) => String(r.id)).sort())
  return rows
}

/**
 * Sends a write and checks what every write must do: never a 5xx; where `valid`, no 4xx but a conflict (409); and a 4xx
 * (refused) leaves the table as it was and, unless `message` is false, says why. `what` names the write in failures
 * ('create' or 'update' by the method), `stat` in the answers seen (`what`). The caller checks what a 2xx did.
 */
export async function write (g: Gateway, request: { method: 'POST' | 'PATCH', url: string, payload: Record<string, unknown> }, w: { what?: string, stat?: string, detail: unknown, valid?: boolean, message?: boolean }): Promise<{ res: LightMyRequestResponse, refused: boolean, before: unknown[] }> {
  const noun = request.method === 'POST' ? 'create' : 'update'
  const what = w.what ?? noun
  const before = await dump(g)
  const res = await g.ctx.app.inject({ ...request, headers: g.headers })
  stat(`${w.stat ?? what} ${res.statusCode}${res.statusCode >= 400 ? ` ${String(res.json().message).slice(0, 60)}` : ''}`)
  if (res.statusCode >= 500) g.fail(`${what} answered ${res.statusCode} ${res.body}`, w.detail)
  if (w.valid === true && res.statusCode >= 400 && res.statusCode !== 409) g.fail(`a valid ${noun} answered ${res.statusCode} ${res.body}`, w.detail)
  const refused = res.statusCode >= 400
  if (refused) {
    if (JSON.stringify(await dump(g)) !== JSON.stringify(before)) g.fail(`a ${res.statusCode} ${noun} changed the table (${res.body})`, w.detail)
    if (w.message !== false && (typeof res.json().message !== 'string' || res.json().message === '')) g.fail('a 4xx without a message', res.body)
  }
  return { res, refused, before }
}

/** the value a read should show for one sent: a CHAR(n) column's padding is dropped */
export function expected (c: LegacyColumn, v: unknown): unknown {
  if (c.text?.char === true && typeof v === 'string') return v.trimEnd()
  return v
}

/** each field of `body` a column holds reads back as sent (`done`: 'created' or 'updated') */
export function checkReadBack (g: Gateway, columnOf: Map<string, LegacyColumn>, body: Record<string, unknown>, shown: Shown, done: string, detail: unknown): void {
  for (const [field, value] of Object.entries(body)) {
    const c = columnOf.get(field)
    if (c === undefined) continue
    if (JSON.stringify(shown[field]) !== JSON.stringify(expected(c, value))) g.fail(`${done} ${field} reads back as ${JSON.stringify(shown[field])}`, detail)
  }
}

/**
 * A walk by meta.next (2 rows a page, at most `maxPages` pages, each a 200) of `resource` sorted by `sort` (a field,
 * '-' first for descending) with `filter`: every row of `expectedIds` once, and where `order` is given (the ids of all
 * rows in the order of the sort, from checkListParameters) in that order. Returns the rows in the order shown.
 */
export async function checkWalk<R extends Shown> (g: Gateway, resource: string, sort: string, filter: string, expectedIds: string[], maxPages: number, detail: unknown, order?: string[]): Promise<R[]> {
  const rows: R[] = []
  let next: string | undefined = `/api/${resource}?limit=2&sort=${sort}${filter}`
  for (let pages = 0; next !== undefined && pages < maxPages; pages++) {
    const page = await g.ctx.app.inject({ method: 'GET', url: next, headers: g.headers })
    if (page.statusCode !== 200) g.fail(`page ${next} answered ${page.statusCode} ${page.body}`, null)
    const body = page.json() as { data: R[], meta: { next?: string | null } }
    rows.push(...body.data)
    next = body.meta.next ?? undefined
  }
  const seen = rows.map((r) => String(r.id))
  if (JSON.stringify([...seen].sort()) !== JSON.stringify(expectedIds)) g.fail(`a walk sorted by ${sort}${filter} returned ${JSON.stringify(seen)}, the list ${JSON.stringify(expectedIds)}`, detail)
  const inOrder = order?.filter((id) => expectedIds.includes(id))
  if (inOrder !== undefined && JSON.stringify(seen) !== JSON.stringify(inOrder)) g.fail(`a walk sorted by ${sort}${filter} returned ${JSON.stringify(seen)}, the shown values' order: ${JSON.stringify(inOrder)}`, detail)
  return rows
}

/** text in code point order, as SQLite compares text (UTF-8 bytes) and as the README promises: not JavaScript's UTF-16 order */
export function compareCodePoints (a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0)!)
  const y = [...b].map((c) => c.codePointAt(0)!)
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i]
  return x.length - y.length
}

/** a list with `query` (`&field=value`, …) shows exactly the rows of `expectedIds` (sorted), none missing, none extra */
export async function checkListed (g: Gateway, resource: string, query: string, expectedIds: string[], detail: unknown): Promise<void> {
  const listed = (await list(g, resource, query)).map((r) => String(r.id)).sort()
  if (JSON.stringify(listed) !== JSON.stringify(expectedIds)) g.fail(`?${query.slice(1)} listed ${JSON.stringify(listed)}, the rows whose shown values match: ${JSON.stringify(expectedIds)}`, detail)
}

// ---- list parameters, against the values reads show (README "List parameters") ----

/** how a field's values compare: an id (text or number), text, a number, a flag (true, false or an unknown code as stored) or a time */
export type Kind = 'id' | 'text' | 'number' | 'flag' | 'time'

/**
 * How a list orders two values reads show: no value first, false before true, numbers and times by value, text by code
 * point, but a number that a text column without a declared type holds before all its text (`numeric`: such values' text,
 * README "Values the declared type does not bind"; an INTEGER key's material numbers are all such)
 */
export function compareShown (a: unknown, b: unknown, numeric: Set<string>): number {
  if (a === null || b === null) return a === null ? (b === null ? 0 : -1) : 1
  if (typeof a === 'string' && typeof b === 'string') {
    if (numeric.has(a) || numeric.has(b)) return numeric.has(a) && numeric.has(b) ? Number(a) - Number(b) : numeric.has(a) ? -1 : 1
    return compareCodePoints(a, b)
  }
  return Number(a) - Number(b)
}

/** a filter value as the query string carries it: one that starts with a bracket behind [eq] (README) */
const filterValue = (v: string): string => encodeURIComponent(v.startsWith('[') ? `[eq]${v}` : v)

/**
 * Each equality filter (`field=value`), `[gt]`/`[lt]` on a flag or a field with a value map, `modifiedSince` and `sort=field` / `sort=-field` over the rows `all` of the list
 * of `resource` as reads show them (GET /api/<resource>/:id, each the same as listed), for each field of `kinds` (the
 * mapped ones): a filter lists exactly the rows whose shown value equals it (a flag: true and false, where a row shown
 * with null matches neither, and each code shown as stored), `modifiedSince` at a shown time (`since` picks it) and a
 * millisecond after lists those whose shown modifiedAt is at or after it, and a sort orders the rows by their shown
 * values, ties by id. `numericColumn(field)` names the column whose numbers a text field shows as their text (sorted
 * first), if any; `mapped(field)` lists the API values of a field with a value map, which sorts a code it does not know
 * (shown as stored) after them all (src/db/sql.ts sortExpr). Returns the ids in the order of each sort (`-name`:
 * descending), for checkWalk. The fields of `unsorted` (derived, not stored: users' source) are filtered, not sorted by;
 * `fold` gives what a field's filters and sorting compare of a shown value (users' username: as a login spells it; the id
 * as its column's collation compares it), the tie-breaker by id too.
 */
export async function checkListParameters<R extends Shown> (g: Gateway, resource: string, all: R[], kinds: Record<string, Kind>, since: number, numericColumn: (field: string) => string | undefined, mapped: (field: string) => unknown[] | undefined = () => undefined, unsorted: string[] = [], fold: Record<string, (v: unknown) => unknown> = {}): Promise<Map<string, string[]>> {
  const { ctx, headers, fail } = g
  const shown = new Map<string, R>()
  for (const m of all) {
    const read = await ctx.app.inject({ method: 'GET', url: `/api/${resource}/${encodeURIComponent(String(m.id))}`, headers })
    if (read.statusCode !== 200) fail(`GET of a listed row answered ${read.statusCode} ${read.body}`, m)
    if (read.body !== JSON.stringify(m)) fail('a read shows a row other than the list', { listed: m, read: read.json() })
    shown.set(String(m.id), m)
  }
  const rows = [...shown.values()]
  const idsWhere = (match: (m: R) => boolean): string[] => rows.filter(match).map((m) => String(m.id)).sort()
  const fields = Object.keys(kinds)
  const detail = { shown: rows }

  for (const field of fields) {
    const codes = [...new Set(rows.map((m) => m[field]).filter((v) => v !== null && v !== undefined))]
    const values = kinds[field] === 'flag' ? [true, false, ...codes.filter((v) => typeof v !== 'boolean')] : codes
    const as = fold[field] ?? ((v: unknown) => v)
    for (const v of values) await checkListed(g, resource, `&${field}=${filterValue(String(v))}`, idsWhere((m) => m[field] !== null && as(m[field]) === as(v)), detail)
  }

  const times = [...new Set(rows.map((m) => m.modifiedAt).filter((v): v is string => typeof v === 'string'))].sort()
  if (times.length > 0) {
    const at = Date.parse(times[since % times.length])
    for (const t of [at, at + 1]) {
      await checkListed(g, resource, `&modifiedSince=${new Date(t).toISOString()}`, idsWhere((m) => typeof m.modifiedAt === 'string' && Date.parse(m.modifiedAt) >= t), detail)
    }
  }

  // [gt] and [lt] on a field of a few values (a flag; a value map's, mapped(field)) compare in the order sorting uses
  // (README "Value maps" and the bit row of "Column types"): a code no map knows after them all, no value (null) in neither
  for (const field of fields.filter((f) => !unsorted.includes(f))) {
    const known = kinds[field] === 'flag' ? [false, true] : mapped(field)
    if (known === undefined) continue
    const as = fold[field] ?? ((v: unknown) => v)
    const ordered = [...known].sort((a, b) => compareShown(as(a), as(b), new Set()))
    const rank = (v: unknown): number => {
      const i = ordered.findIndex((o) => as(o) === as(v))
      return i === -1 ? ordered.length : i
    }
    for (const v of ordered) {
      const has = (m: R): boolean => m[field] !== null && m[field] !== undefined
      await checkListed(g, resource, `&${field}=${encodeURIComponent(`[gt]${String(v)}`)}`, idsWhere((m) => has(m) && rank(m[field]) > rank(v)), detail)
      await checkListed(g, resource, `&${field}=${encodeURIComponent(`[lt]${String(v)}`)}`, idsWhere((m) => has(m) && rank(m[field]) < rank(v)), detail)
    }
  }

  // the text of the numbers a column keeps where the field is text (its order puts them first)
  const numeric = async (field: string): Promise<Set<string>> => {
    const column = numericColumn(field)
    if (column === undefined) return new Set()
    const stored = await ctx.db.query({ text: `SELECT ${q(column)} AS v FROM ${q(g.table)} WHERE typeof(${q(column)}) IN ('integer', 'real')`, params: [] }) as Array<{ v: number }>
    return new Set(stored.map((r) => String(r.v)))
  }
  const byId = await numeric('id')
  const idAs = (v: unknown): unknown => (fold.id ?? ((v: unknown) => v))(v)
  const orders = new Map<string, string[]>()
  for (const field of fields.filter((f) => !unsorted.includes(f))) {
    const byField = await numeric(field)
    const known = mapped(field)
    const unknown = (v: unknown): boolean => known !== undefined && v !== null && !known.includes(v)
    const as = (v: unknown): unknown => v === null ? v : (fold[field] ?? ((v: unknown) => v))(v)
    const compare = (a: unknown, b: unknown): number => unknown(a) || unknown(b) ? Number(unknown(a)) - Number(unknown(b)) : compareShown(as(a), as(b), byField)
    for (const desc of [false, true]) {
      const sort = `${desc ? '-' : ''}${field}`
      const expected = [...rows].sort((a, b) => (desc ? -1 : 1) * compare(a[field], b[field]) || compareShown(idAs(a.id), idAs(b.id), byId)).map((m) => String(m.id))
      const listed = (await list<R>(g, resource, `&sort=${sort}`)).map((m) => String(m.id))
      if (JSON.stringify(listed) !== JSON.stringify(expected)) fail(`sort=${sort} listed ${JSON.stringify(listed)}, the shown values' order: ${JSON.stringify(expected)}`, detail)
      orders.set(sort, expected)
    }
  }
  return orders
}

/**
 * A conditional GET of `row` (at `url`) after a write behind the gateway's back, which sets its `field` (in `column`) to a
 * new value: a 200 showing it, not a 304. The write finds the row by rowid from its id column `idColumn` as reads show
 * it (a number another program stored, padding dropped).
 */
export async function checkWriteBehind (g: Gateway, url: string, row: Shown, idColumn: string, field: string, column: string): Promise<void> {
  const read = await g.ctx.app.inject({ method: 'GET', url, headers: g.headers })
  const etag = read.headers.etag
  if (read.statusCode !== 200 || typeof etag !== 'string') g.fail(`GET answered ${read.statusCode} without an ETag`, read.body)
  const newValue = read.json()[field] === 'Q' ? 'R' : 'Q'
  const keys = await g.ctx.db.query({ text: `SELECT rowid AS r, ${q(idColumn)} AS k FROM ${q(g.table)}`, params: [] }) as Array<{ r: number, k: unknown }>
  const rowid = keys.find((k) => String(k.k) === String(row.id))?.r ?? keys.find((k) => String(k.k).trimEnd() === String(row.id))?.r
  const changed = rowid === undefined ? 0 : await g.ctx.db.execute({ text: `UPDATE ${q(g.table)} SET ${q(column)} = @v WHERE rowid = @r`, params: [{ name: 'v', kind: 'string', value: newValue }, { name: 'r', kind: 'integer', value: rowid }] })
  if (changed !== 1) g.fail(`the write behind the gateway's back changed ${changed} rows`, { row, table: await dump(g) })
  const again = await g.ctx.app.inject({ method: 'GET', url, headers: { ...g.headers, 'if-none-match': etag as string } })
  if (again.statusCode !== 200) g.fail(`a conditional GET after a write behind the gateway's back answered ${again.statusCode}`, { row })
  if (again.json()[field] !== newValue) g.fail(`the read after a write behind the gateway's back shows ${JSON.stringify(again.json()[field])}`, { row })
}

// ---- ids shared by several rows: the id column one column of a composite key (README "Day one: mapping") ----

/** an id column unique only together with another: its declared type and collation, and which key holds it */
export interface SharedIdColumn {
  /** the declared type with any COLLATE ('CHAR(8) COLLATE NOCASE', '' for none) */
  type: string
  /** CHAR(n): a program may pad what it writes to n */
  char?: number
  /** the column compares text regardless of ASCII case (COLLATE NOCASE) */
  nocase: boolean
  /** the column compares text without trailing blanks (COLLATE RTRIM) */
  rtrim: boolean
  /** the table constraint that makes the id column unique only together with the other one (the warehouse) */
  key: 'PRIMARY KEY (other, id)' | 'PRIMARY KEY (id, other)' | 'UNIQUE (other, id)'
}

export const sharedIdColumnArb: fc.Arbitrary<SharedIdColumn> = fc.record({
  base: fc.constantFrom('TEXT', 'VARCHAR(12)', 'CHAR(8)', ''),
  collation: fc.constantFrom('', 'NOCASE', 'RTRIM'),
  key: fc.constantFrom<SharedIdColumn['key']>('PRIMARY KEY (other, id)', 'PRIMARY KEY (id, other)', 'UNIQUE (other, id)')
}).map(({ base, collation, key }) => ({
  // a column without a declared type takes no collation here: its numbers are the case it tests
  type: base === '' ? '' : `${base}${collation === '' ? '' : ` COLLATE ${collation}`}`,
  ...(base === 'CHAR(8)' ? { char: 8 } : {}),
  nocase: base !== '' && collation === 'NOCASE',
  rtrim: base !== '' && collation === 'RTRIM',
  key
}))

/** the ids rows may share: one a number may stand for in a column without a declared type, one with a letter NOCASE does not fold */
const SHARED_ID_BASES = ['A-1', 'b-2', '12', 'Ä-3', 'C-4']

/**
 * An id as a program stored it in `c`: a base id as is, in another case, with a trailing blank, padded to a CHAR(n)'s
 * width (some programs do, others not), or a number where the column has no declared type
 */
export function sharedIdValue (c: SharedIdColumn): fc.Arbitrary<unknown> {
  return fc.tuple(fc.constantFrom(...SHARED_ID_BASES), fc.constantFrom('as is', 'lower', 'upper', 'blank', 'padded', 'number')).map(([base, how]) => {
    switch (how) {
      case 'lower': return base.toLowerCase()
      case 'upper': return base.toUpperCase()
      case 'blank': return `${base} `
      case 'padded': return c.char !== undefined ? base.padEnd(c.char, ' ') : base
      case 'number': return c.type === '' && /^\d+$/.test(base) ? Number(base) : base
      default: return base
    }
  })
}

/** the id a read shows for a stored one: a number's text, a CHAR(n) value without its padding */
export const shownSharedId = (c: SharedIdColumn, stored: unknown): string => c.char !== undefined ? String(stored).trimEnd() : String(stored)

/**
 * The rows the database takes for one id, by a key of each stored id: a number and its text are one (reads show
 * both as the text, and a path finds both); CHAR(n) and COLLATE RTRIM compare without trailing blanks, NOCASE regardless
 * of ASCII case (not of 'Ä' and 'ä')
 */
export function sharedIdKey (c: SharedIdColumn, stored: unknown): string {
  let k = String(stored)
  if (c.char !== undefined || c.rtrim) k = k.replace(/ +$/, '')
  if (c.nocase) k = k.replace(/[A-Z]/g, (l) => l.toLowerCase())
  return k
}

/**
 * A walk by meta.next (`limit` rows a page) of `resource` with `query` (`&sort=…&filter…`): each a 200, every row of the
 * list with that query (`whole`, one page of up to 1000) exactly once by `fullKey` (the id alone repeats), in the order of
 * that list as far as the database's order is defined (`position` of each row: rows that share it may come in any
 * order), and on each page the list's count (count=true) as meta.total. The walk is bounded by the rows there are.
 */
export async function checkSharedWalk<R extends Shown> (g: Gateway, resource: string, query: string, limit: number, whole: R[], fullKey: (r: R) => string, position: (r: R) => string, detail: unknown): Promise<void> {
  const rows: R[] = []
  let next: string | undefined = `/api/${resource}?limit=${limit}&count=true${query}`
  for (let pages = 0; next !== undefined; pages++) {
    if (pages > whole.length + 1) g.fail(`a walk with ${query} and limit=${limit} did not end after ${pages} pages`, { rows: rows.map(fullKey) })
    const page = await g.ctx.app.inject({ method: 'GET', url: next, headers: g.headers })
    if (page.statusCode !== 200) g.fail(`page ${next} answered ${page.statusCode} ${page.body}`, detail)
    const body = page.json() as { data: R[], meta: { next?: string, total?: number } }
    if (body.meta.total !== whole.length) g.fail(`page ${next} counted ${String(body.meta.total)} rows, the list holds ${whole.length}`, detail)
    rows.push(...body.data)
    next = body.meta.next
  }
  const seen = rows.map(fullKey)
  const all = whole.map(fullKey)
  if (JSON.stringify([...seen].sort()) !== JSON.stringify([...all].sort())) g.fail(`a walk with ${query} and limit=${limit} returned ${JSON.stringify(seen)}, the list ${JSON.stringify(all)}`, detail)
  if (JSON.stringify(rows.map(position)) !== JSON.stringify(whole.map(position))) g.fail(`a walk with ${query} and limit=${limit} returned the positions ${JSON.stringify(rows.map(position))}, the list ${JSON.stringify(whole.map(position))}`, detail)
}

/**
 * Reads, updates (`update`: a body) and deletes by each id the list shows: where several rows hold it (`holders`, by the
 * database's comparison) a 409 CONFLICT that changes nothing, else a read is a 200 showing that row (`sameRow`).
 */
export async function checkSharedIdAccess<R extends Shown> (g: Gateway, resource: string, listed: R[], holders: (r: R) => number, update: Record<string, unknown>, sameRow: (read: R, r: R) => boolean, detail: unknown): Promise<void> {
  const url = (r: R): string => `/api/${resource}/${encodeURIComponent(String(r.id))}`
  for (const r of listed) {
    const n = holders(r)
    const read = await g.ctx.app.inject({ method: 'GET', url: url(r), headers: g.headers })
    stat(`read of an id ${n > 1 ? 'shared' : 'alone'} ${read.statusCode}`)
    if (n === 1) {
      if (read.statusCode !== 200) g.fail(`GET of the id ${JSON.stringify(r.id)}, which one row holds, answered ${read.statusCode} ${read.body}`, detail)
      if (!sameRow(read.json() as R, r)) g.fail(`GET of the id ${JSON.stringify(r.id)} shows another row`, { listed: r, read: read.json() })
      continue
    }
    if (read.statusCode !== 409 || read.json().code !== 'CONFLICT') g.fail(`GET of the id ${JSON.stringify(r.id)}, which ${n} rows hold, answered ${read.statusCode} ${read.body}`, detail)
    for (const method of ['PATCH', 'POST', 'DELETE'] as const) {
      const before = await dump(g)
      const res = await g.ctx.app.inject({ method, url: url(r), headers: g.headers, ...(method === 'DELETE' ? {} : { payload: update }) })
      stat(`${method} of an id shared ${res.statusCode}`)
      if (res.statusCode !== 409 || res.json().code !== 'CONFLICT') g.fail(`${method} of the id ${JSON.stringify(r.id)}, which ${n} rows hold, answered ${res.statusCode} ${res.body}`, detail)
      if (JSON.stringify(await dump(g)) !== JSON.stringify(before)) g.fail(`a 409 ${method} of the id ${JSON.stringify(r.id)} changed the table`, detail)
    }
  }
}
