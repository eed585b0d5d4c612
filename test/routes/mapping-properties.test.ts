// Property-based tests of the mapping layer: fast-check generates legacy SQLite tables for materials within
// what the README's "Day one" section says a mapping supports (other column names, declared types, value
// maps, time formats, padding, NULLs, text or integer ids, unmapped columns), builds the mapping for each
// and checks the API over it: no 500, a 4xx changes nothing, a create reads back as sent, a walk by
// meta.next returns every row once, an update that changes nothing leaves modifiedAt alone, and a
// conditional GET after a write behind the gateway's back is a 200.
// Deterministic: fast-check's seed is fixed (SEED below, 20261127, 40 schemas: about 20 s); on a failure it
// prints the seed, the path and the shrunk counterexample, which PROPERTY_SEED=<seed> PROPERTY_PATH=<path>
// replays. PROPERTY_SEED and PROPERTY_RUNS explore other schemas; PROPERTY_STATS=1 lists the answers seen.
// Only 4xx, never 500, is asserted of odd bodies: which 4xx is the route tests' business.
import t, { type Test } from 'tap'
import fc from 'fast-check'
import type { TableMappingConfig } from '../../schemas/config.js'
import type { Database } from '../../src/db/types.js'
import { build, type TestContext } from '../helpers/build.js'

const MSSQL = process.env.GATEWAY_TEST_DB === 'mssql' && Boolean(process.env.MSSQL_TEST_URL)

/** fixed, so that every run checks the same schemas; PROPERTY_SEED and PROPERTY_RUNS explore others */
const SEED = Number(process.env.PROPERTY_SEED ?? 20261127)
const RUNS = Number(process.env.PROPERTY_RUNS ?? 40)
const STATS = process.env.PROPERTY_STATS === '1' ? new Map<string, number>() : undefined
const stat = (key: string): void => { STATS?.set(key, (STATS.get(key) ?? 0) + 1) }

type Flag = { kind: 'int' } | { kind: 'map', type: string, t: string | number, f: string | number }
type TimeColumn = { type: string, format?: 'unix' | 'unix-ms' | 'yyyymmddhhmmss' }

interface Column {
  field: string
  name: string
  type: string
  notNull: boolean
  /** SQL text of the column's default */
  dflt?: string
  /** text: CHAR(n) (padded on read), n the length limit */
  text?: { char: boolean, n?: number }
  /** digits: before the point, DECIMAL(p,s)'s p − s */
  number?: { integer: boolean, scale?: number, digits?: number, real?: boolean, asText?: boolean }
  flag?: Flag
  time?: TimeColumn
}

interface Schema {
  table: string
  /** id on its own INTEGER PRIMARY KEY, or on the materialNumber column: text, or an INTEGER PRIMARY KEY of numbers */
  key: 'own' | 'text' | 'int'
  /** the resource's timeZone: its DATETIME and digit columns hold local time */
  timeZone?: string
  columns: Column[]
  /** an unmapped NOT NULL column: filled by its default or by mapping.defaults */
  extra?: { name: string, viaDefaults: boolean }
}

// ---- names: mixed case, spaces, reserved words and quote characters, as the README allows ----

const BASES: Record<string, string[]> = {
  id: ['ArtID', 'ID', 'Order', 'Art Id'],
  materialNumber: ['ArtNr', 'ITEM_CODE', 'Key', 'Art "Nr"'],
  name: ['Bezeichnung', 'DESCR', 'Select', 'Name [de]'],
  description: ['Text', 'Langtext', 'Where', 'Beschreibung (lang)'],
  unit: ['ME', 'Unit', 'Group', 'Mengen einheit'],
  barcode: ['EAN', 'Barcode', 'Index', "Code 'EAN'"],
  minStock: ['MinBestand', 'MINBEST', 'Limit', 'Min Bestand'],
  weight: ['Gewicht', 'WEIGHT', 'Values', 'Gewicht (kg)'],
  blocked: ['Gesperrt', 'HOLD_FLAG', 'Check', 'Gesperrt?'],
  blockReason: ['Sperrgrund', 'HOLD_REASON', 'From', 'Sperr grund'],
  stockQuantity: ['Bestand', 'QTY', 'Table', 'Menge_Stück'],
  createdAt: ['Angelegt', 'CREATED', 'Default', 'Angelegt am'],
  modifiedAt: ['LastChange', 'LAST_UPD', 'Update', 'Letzte Änderung']
}

const nameOf = (field: string): fc.Arbitrary<string> => fc.tuple(fc.constantFrom(...BASES[field]), fc.constantFrom('as is', 'lower', 'upper')).map(([b, c]) => c === 'lower' ? b.toLowerCase() : c === 'upper' ? b.toUpperCase() : b)

const q = (name: string): string => `"${name.replaceAll('"', '""')}"`
const lit = (v: string): string => `'${v.replaceAll("'", "''")}'`

// ---- column types ----

const textType = (min: number): fc.Arbitrary<Pick<Column, 'type' | 'text'>> => fc.oneof(
  fc.constantFrom('TEXT', '').map((type) => ({ type, text: { char: false } })),
  fc.integer({ min, max: 40 }).map((n) => ({ type: `VARCHAR(${n})`, text: { char: false, n } })),
  fc.integer({ min, max: 40 }).map((n) => ({ type: `NVARCHAR(${n})`, text: { char: false, n } })),
  fc.integer({ min, max: 40 }).map((n) => ({ type: `CHAR(${n})`, text: { char: true, n } }))
)

const numberType: fc.Arbitrary<Pick<Column, 'type' | 'number'>> = fc.oneof(
  fc.constantFrom('INTEGER', 'BIGINT', 'SMALLINT', 'INT').map((type) => ({ type, number: { integer: true } })),
  fc.tuple(fc.integer({ min: 4, max: 15 }), fc.integer({ min: 0, max: 3 })).map(([p, s]) => ({ type: `DECIMAL(${p},${s})`, number: { integer: s === 0, scale: s, digits: p - s } })),
  fc.constant({ type: 'NUMERIC', number: { integer: false } }),
  fc.constantFrom('REAL', 'DOUBLE', 'FLOAT').map((type) => ({ type, number: { integer: false, real: true } })),
  // numbers a legacy program keeps as text, or in a column without a declared type
  fc.constantFrom('TEXT', '').map((type) => ({ type, number: { integer: false, asText: true } }))
)

const flagType: fc.Arbitrary<Pick<Column, 'type' | 'flag'>> = fc.oneof(
  fc.constantFrom('INTEGER', 'BOOLEAN', 'BIT').map((type) => ({ type, flag: { kind: 'int' } as Flag })),
  fc.constantFrom<[string, string]>(['Y', 'N'], ['J', 'N'], ['T', 'F']).chain(([y, n]) => fc.constantFrom('CHAR(1)', 'VARCHAR(1)', 'TEXT').map((type) => ({ type, flag: { kind: 'map', type, t: y, f: n } as Flag }))),
  fc.constant({ type: 'INTEGER', flag: { kind: 'map', type: 'INTEGER', t: -1, f: 0 } as Flag })
)

const timeType: fc.Arbitrary<TimeColumn> = fc.constantFrom<TimeColumn>(
  { type: 'DATETIME' }, { type: 'TEXT' }, { type: 'TIMESTAMP' },
  { type: 'INTEGER', format: 'unix' }, { type: 'BIGINT', format: 'unix-ms' },
  { type: 'BIGINT', format: 'yyyymmddhhmmss' }, { type: 'CHAR(14)', format: 'yyyymmddhhmmss' }
)

function column (field: string, typeArb: fc.Arbitrary<Partial<Column>>, opts: { optional: boolean, notNull?: boolean }): fc.Arbitrary<Column | undefined> {
  const col = fc.record({ name: nameOf(field), t: typeArb, notNull: opts.notNull === undefined ? fc.boolean() : fc.constant(opts.notNull) })
    .map(({ name, t, notNull }) => ({ field, name, notNull, ...t }) as Column)
  return opts.optional ? fc.option(col, { nil: undefined, freq: 3 }) : col
}

const schemaArb: fc.Arbitrary<Schema> = fc.record({
  table: fc.constantFrom('Artikel', 'ITEM MASTER', 'Order', 'teile'),
  key: fc.constantFrom<Schema['key']>('own', 'text', 'int'),
  timeZone: fc.option(fc.constantFrom('Europe/Berlin', 'America/New_York'), { nil: undefined }),
  materialNumber: column('materialNumber', textType(8), { optional: false, notNull: true }),
  name: column('name', textType(8), { optional: false }),
  description: column('description', textType(1), { optional: true }),
  unit: column('unit', textType(3), { optional: true }).chain((c) => c === undefined ? fc.constant(c) : fc.option(fc.constant(`'pcs'`), { nil: undefined }).map((dflt) => ({ ...c, dflt }))),
  barcode: column('barcode', textType(1), { optional: true }),
  minStock: column('minStock', numberType, { optional: true }),
  weight: column('weight', numberType, { optional: true }),
  blocked: column('blocked', flagType, { optional: true }).chain((c) => c === undefined || !c.notNull ? fc.constant(c) : fc.boolean().map((withDefault) => ({ ...c, dflt: withDefault ? falseCode(c.flag!) : undefined }))),
  blockReason: column('blockReason', textType(1), { optional: true }),
  stockQuantity: column('stockQuantity', numberType, { optional: true, notNull: true }).map((c) => c === undefined ? c : { ...c, dflt: '0' }),
  createdAt: column('createdAt', fc.constant({ type: 'DATETIME', dflt: 'CURRENT_TIMESTAMP', time: { type: 'DATETIME' } }), { optional: true }),
  modifiedAt: column('modifiedAt', timeType.map((time) => ({ type: time.type, time })), { optional: true }),
  extra: fc.option(fc.record({ name: fc.constantFrom('Mandant', 'Lager Zone'), viaDefaults: fc.boolean() }), { nil: undefined })
}).map(({ table, key, timeZone, extra, ...cols }) => {
  // copies: fast-check replays generated values while shrinking, so they are not changed in place
  const columns = Object.values(cols).filter((c): c is Column => c !== undefined).map((c): Column =>
    key === 'int' && c.field === 'materialNumber' ? { field: c.field, name: c.name, notNull: true, type: 'INTEGER', number: { integer: true } } : { ...c })
  // one column per field: names that collide after case folding get a suffix
  const seen = new Set<string>()
  for (const c of columns) {
    while (seen.has(c.name.toLowerCase())) c.name += '2'
    seen.add(c.name.toLowerCase())
  }
  return { table, key, timeZone, columns, extra }
})

function falseCode (flag: Flag): string {
  return flag.kind === 'int' ? '0' : typeof flag.f === 'number' ? String(flag.f) : lit(flag.f)
}

const ID_COLUMN = 'PK'

function ddl (s: Schema): string {
  const defs: string[] = []
  if (s.key === 'own') defs.push(`${q(ID_COLUMN)} INTEGER PRIMARY KEY`)
  for (const c of s.columns) {
    let def = `${q(c.name)} ${c.type}`
    if (c.field === 'materialNumber') def += s.key === 'text' ? ' NOT NULL PRIMARY KEY' : s.key === 'int' ? ' PRIMARY KEY' : ' NOT NULL UNIQUE'
    else if (c.notNull) def += ' NOT NULL'
    if (c.dflt !== undefined) def += ` DEFAULT ${c.dflt}`
    defs.push(def)
  }
  if (s.extra) defs.push(`${q(s.extra.name)} INTEGER NOT NULL${s.extra.viaDefaults ? '' : ' DEFAULT 1'}`)
  return `CREATE TABLE ${q(s.table)} (${defs.join(', ')})`
}

const FIELDS = Object.keys(BASES)

function mappingOf (s: Schema): TableMappingConfig {
  const columns: Record<string, TableMappingConfig['columns'][string]> = Object.fromEntries(FIELDS.map((f) => [f, null]))
  columns.maxStock = null
  for (const c of s.columns) {
    if (c.flag?.kind === 'map') columns[c.field] = { column: c.name, values: { true: c.flag.t, false: c.flag.f } }
    else if (c.time?.format !== undefined) columns[c.field] = { column: c.name, format: c.time.format }
    else columns[c.field] = c.name
  }
  columns.id = s.key === 'own' ? ID_COLUMN : (columns.materialNumber as string)
  return { table: s.table, ...(s.timeZone ? { timeZone: s.timeZone } : {}), columns, ...(s.extra?.viaDefaults ? { defaults: { [s.extra.name]: 7 } } : {}) }
}

// ---- data rows the picking system wrote: NULLs, padding, odd codes ----

function storedValue (c: Column, i: number): fc.Arbitrary<unknown> {
  const nullable = !c.notNull && c.field !== 'materialNumber'
  let v: fc.Arbitrary<unknown>
  if (c.field === 'materialNumber' && c.number) v = fc.constant(100 + i)
  else if (c.field === 'materialNumber') {
    // a column without a declared type keeps a number another program stored as a number
    v = fc.constantFrom<unknown>(`M-${i}`, `m${i}`, `M-${i} `, `${100 + i}`, `0${i}`, ...(c.type === '' ? [100 + i] : [])).map((x) => c.text!.char && c.text!.n ? String(x).padEnd(c.text!.n, ' ') : x)
  }
  else if (c.text) v = fc.string({ minLength: c.field === 'name' ? 1 : 0, maxLength: Math.min(c.text.n ?? 12, 12) }).map((x) => c.text!.char && c.text!.n ? x.padEnd(c.text!.n, ' ') : x)
  else if (c.number) v = c.number.integer ? fc.integer({ min: -1000, max: 100000 }) : fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.double({ min: -1000, max: 1000, noNaN: true }).map((x) => Number(x.toFixed(c.number!.scale ?? 3)))).map((x) => c.number!.asText ? String(x) : x)
  else if (c.flag) v = c.flag.kind === 'int' ? fc.constantFrom(0, 1, -1) : fc.constantFrom(c.flag.t, c.flag.f, typeof c.flag.t === 'string' ? c.flag.t.toLowerCase() : c.flag.t, typeof c.flag.f === 'string' ? `${c.flag.f} ` : c.flag.f)
  else if (c.time) v = timeValue(c.time)
  else v = fc.constant(null)
  return nullable ? fc.option(v, { nil: null, freq: 4 }) : v
}

function timeValue (time: TimeColumn): fc.Arbitrary<unknown> {
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

function rowsArb (s: Schema): fc.Arbitrary<Array<Record<string, unknown>>> {
  return fc.integer({ min: 0, max: 7 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) =>
    fc.record(Object.fromEntries(s.columns.map((c) => [c.name, storedValue(c, i + 1)]))))))
    .map((rows) => {
      // the key column is unique: keep the first row of each key (compared as the API does: without CHAR padding)
      const keyCol = s.columns.find((c) => c.field === 'materialNumber')!
      const seen = new Set<string>()
      return rows.filter((r) => {
        const k = String(r[keyCol.name]).trimEnd().toLowerCase()
        if (seen.has(k)) return false
        seen.add(k)
        return true
      })
    })
}

async function fill (db: Database, s: Schema, rows: Array<Record<string, unknown>>): Promise<void> {
  await db.execute({ text: ddl(s), params: [] })
  for (const r of rows) {
    const names = Object.keys(r)
    const extra = s.extra ? [q(s.extra.name)] : []
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

// ---- request bodies: valid ones the schema takes, and odd ones ----

function validValue (c: Column): fc.Arbitrary<unknown> {
  if (c.field === 'materialNumber' && c.number) return fc.integer({ min: 1, max: 99999 }).map(String)
  if (c.field === 'materialNumber') return fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }).filter((x) => x.trim() === x && x !== '.' && x !== '..' && [...x].length <= (c.text?.n ?? 64) && x.normalize('NFC') === x &&
    // the API takes no control or invisible characters and no space but U+0020 in a material number
    !/[\p{C}\p{Z}]/u.test(x.replaceAll(' ', '')))
  if (c.text) return fc.string({ unit: fc.constantFrom('a', 'Z', ' ', '-', 'é', 'ß', '€', '😀', '%', '_', '"'), minLength: c.field === 'name' || c.field === 'unit' ? 1 : 0, maxLength: Math.min(c.text.n ?? 20, 20) }).filter((x) => (c.field !== 'name' && c.field !== 'unit') || x.trim() !== '')
  // the API takes no negative stock or weight
  if (c.number) {
    const max = c.number.digits === undefined ? 30000 : Math.min(30000, 10 ** c.number.digits - 1)
    if (c.number.integer) return fc.integer({ min: 0, max })
    const scale = c.number.scale ?? 3
    return fc.integer({ min: 0, max: Math.min(9999, (max + 1) * 10 ** scale - 1) }).map((n) => Number((n / 10 ** scale).toFixed(scale)))
  }
  if (c.flag) return fc.boolean()
  return fc.constant(undefined)
}

const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, '', ' ', 'x'.repeat(300), -0, 1e300, 2 ** 53, 0.1 + 0.2, 1.23456789, true, 'J', 'N', 'Y', '0', '1', [], {}, 'null', '2024-01-01'),
  fc.string({ maxLength: 5 }), fc.double(), fc.integer()
)

const WRITABLE = new Set(['materialNumber', 'name', 'description', 'unit', 'barcode', 'minStock', 'weight', 'blocked', 'blockReason'])

function bodyArb (s: Schema): fc.Arbitrary<{ body: Record<string, unknown>, valid: boolean }> {
  const writable = s.columns.filter((c) => WRITABLE.has(c.field))
  const valid = fc.record(Object.fromEntries(writable.map((c) => [c.field, validValue(c)])), { requiredKeys: writable.filter((c) => c.field === 'materialNumber' || c.field === 'name' || (c.notNull && c.dflt === undefined && c.field !== 'unit' && c.field !== 'blocked')).map((c) => c.field) })
    .map((body) => ({ body: body as Record<string, unknown>, valid: true }))
  const odd = fc.tuple(valid, fc.constantFrom(...FIELDS, 'maxStock', 'nonsense'), oddValue)
    .map(([{ body }, field, value]) => ({ body: { ...body, [field]: value }, valid: false }))
  return fc.oneof(valid, odd)
}

// ---- checks ----

interface Material { id: number | string, modifiedAt?: string | null, [field: string]: unknown }

async function dump (ctx: TestContext, s: Schema): Promise<unknown[]> {
  return await ctx.db.query({ text: `SELECT * FROM ${q(s.table)} ORDER BY rowid`, params: [] })
}

const path = (id: number | string): string => `/api/materials/${encodeURIComponent(String(id))}`

/** the value a read should show for one sent: a CHAR(n) column's padding is dropped */
function expected (c: Column, v: unknown): unknown {
  if (c.text?.char && typeof v === 'string') return v.trimEnd()
  return v
}

const SORTABLE = ['id', 'materialNumber', 'name', 'description', 'unit', 'barcode', 'minStock', 'weight', 'blocked', 'blockReason', 'stockQuantity', 'createdAt', 'modifiedAt']

async function checkSchema (t: Test, s: Schema, rows: Array<Record<string, unknown>>, bodies: Array<{ body: Record<string, unknown>, valid: boolean }>, sortPick: number, desc: boolean): Promise<void> {
  const ctx = await build(t, { mapping: { materials: mappingOf(s) } }, async (db) => { await fill(db, s, rows) })
  try {
    await checks(ctx, s, rows, bodies, sortPick, desc)
  } finally {
    await ctx.app.close()
  }
}

async function checks (ctx: TestContext, s: Schema, rows: Array<Record<string, unknown>>, bodies: Array<{ body: Record<string, unknown>, valid: boolean }>, sortPick: number, desc: boolean): Promise<void> {
  const headers = ctx.auth(ctx.adminToken)
  const columnOf = new Map(s.columns.map((c) => [c.field, c]))
  const fail = (what: string, detail: unknown): never => { throw new Error(`${what}: ${JSON.stringify(detail)}\nDDL: ${ddl(s)}\nmapping: ${JSON.stringify(mappingOf(s))}`) }

  // creates: never a 500; a 4xx changes nothing and says something; a 201 reads back as sent
  for (const { body, valid } of bodies) {
    const before = await dump(ctx, s)
    const res = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: body })
    stat(`create ${res.statusCode}${res.statusCode >= 400 ? ` ${String(res.json().message).slice(0, 60)}` : ''}`)
    if (res.statusCode >= 500) fail(`create answered ${res.statusCode} ${res.body}`, body)
    if (valid && res.statusCode >= 400 && res.statusCode !== 409) fail(`a valid create answered ${res.statusCode} ${res.body}`, body)
    if (res.statusCode >= 400) {
      const after = await dump(ctx, s)
      if (JSON.stringify(after) !== JSON.stringify(before)) fail(`a ${res.statusCode} create changed the table (${res.body})`, body)
      if (typeof res.json().message !== 'string' || res.json().message === '') fail('a 4xx without a message', res.body)
      continue
    }
    if (res.statusCode !== 201) fail(`create answered ${res.statusCode}`, { body, res: res.body })
    const created = res.json() as Material
    const read = await ctx.app.inject({ method: 'GET', url: path(created.id), headers })
    if (read.statusCode !== 200) fail(`GET of a created material answered ${read.statusCode} ${read.body}`, body)
    const shown = read.json() as Material
    for (const [field, value] of Object.entries(body)) {
      const c = columnOf.get(field)
      if (c === undefined) continue
      if (JSON.stringify(shown[field]) !== JSON.stringify(expected(c, value))) fail(`created ${field} reads back as ${JSON.stringify(shown[field])}`, body)
    }
  }

  // a walk by meta.next: every row once, in any sort the mapping allows, with and without a filter
  const mapped = SORTABLE.filter((f) => f === 'id' || columnOf.has(f))
  const sortField = mapped[sortPick % mapped.length]
  const all = await ctx.app.inject({ method: 'GET', url: '/api/materials?limit=1000', headers })
  if (all.statusCode !== 200) fail(`list answered ${all.statusCode} ${all.body}`, null)
  const allIds = (all.json() as { data: Material[] }).data.map((m) => String(m.id)).sort()
  const count = (await ctx.db.query({ text: `SELECT COUNT(*) AS n FROM ${q(s.table)}`, params: [] }))[0] as { n: number }
  if (allIds.length !== Number(count.n)) fail(`the list shows ${allIds.length} of ${count.n} rows`, allIds)
  const filters = ['', columnOf.get('blocked') ? '&blocked=false' : '', '&name=[like]%25a%25'].filter((f, i) => i === 0 || f !== '')
  for (const filter of filters) {
    const expectedIds = filter === ''
      ? allIds
      : ((await ctx.app.inject({ method: 'GET', url: `/api/materials?limit=1000${filter}`, headers })).json() as { data: Material[] }).data.map((m) => String(m.id)).sort()
    const seen: string[] = []
    let next: string | undefined = `/api/materials?limit=2&sort=${desc ? '-' : ''}${sortField}${filter}`
    for (let pages = 0; next !== undefined && pages < 20; pages++) {
      const page = await ctx.app.inject({ method: 'GET', url: next, headers })
      if (page.statusCode !== 200) fail(`page ${next} answered ${page.statusCode} ${page.body}`, null)
      const body = page.json() as { data: Material[], meta: { next?: string | null } }
      seen.push(...body.data.map((m) => String(m.id)))
      next = body.meta.next ?? undefined
    }
    if (JSON.stringify([...seen].sort()) !== JSON.stringify(expectedIds)) fail(`a walk sorted by ${desc ? '-' : ''}${sortField}${filter} returned ${JSON.stringify(seen)}, the list ${JSON.stringify(expectedIds)}`, rows)
  }

  // an update sending what each row shows: no 500; a 200 leaves modifiedAt as it was; a 4xx changes nothing
  for (const m of (all.json() as { data: Material[] }).data) {
    const body = Object.fromEntries(Object.entries(m).filter(([f]) => WRITABLE.has(f) && columnOf.has(f)))
    const before = await dump(ctx, s)
    const res = await ctx.app.inject({ method: 'PATCH', url: path(m.id), headers, payload: body })
    stat(`same-values update ${res.statusCode}${res.statusCode >= 400 ? ` ${String(res.json().message).slice(0, 60)}` : ''}`)
    if (res.statusCode >= 500) fail(`an update sending the row as shown answered ${res.statusCode} ${res.body}`, { row: m })
    if (res.statusCode >= 400) {
      if (JSON.stringify(await dump(ctx, s)) !== JSON.stringify(before)) fail(`a ${res.statusCode} update changed the table (${res.body})`, { row: m })
      continue
    }
    if (res.statusCode !== 200) fail(`update answered ${res.statusCode}`, res.body)
    if (JSON.stringify(await dump(ctx, s)) !== JSON.stringify(before)) fail('an update sending the row as shown wrote to the table', { row: m, after: await dump(ctx, s), before })
    if ((res.json() as Material).modifiedAt !== m.modifiedAt) fail('an update sending the row as shown moved modifiedAt', { row: m, after: res.json() })
  }

  // a conditional GET after a write behind the gateway's back: 200 with the new row, not 304
  const first = (all.json() as { data: Material[] }).data[0]
  if (first !== undefined) {
    const read = await ctx.app.inject({ method: 'GET', url: path(first.id), headers })
    const etag = read.headers.etag
    if (read.statusCode !== 200 || typeof etag !== 'string') fail(`GET answered ${read.statusCode} without an ETag`, read.body)
    const nameCol = columnOf.get('name')!
    const keyCol = columnOf.get('materialNumber')!
    const newName = read.json().name === 'Q' ? 'R' : 'Q'
    // the row by its rowid: the key as reads show it (a number another program stored, padding dropped)
    const keys = await ctx.db.query({ text: `SELECT rowid AS r, ${q(s.key === 'own' ? ID_COLUMN : keyCol.name)} AS k FROM ${q(s.table)}`, params: [] }) as Array<{ r: number, k: unknown }>
    const rowid = keys.find((k) => String(k.k) === String(first.id))?.r ?? keys.find((k) => String(k.k).trimEnd() === String(first.id))?.r
    const changed = rowid === undefined ? 0 : await ctx.db.execute({ text: `UPDATE ${q(s.table)} SET ${q(nameCol.name)} = @v WHERE rowid = @r`, params: [{ name: 'v', kind: 'string', value: newName }, { name: 'r', kind: 'integer', value: rowid }] })
    if (changed !== 1) fail(`the write behind the gateway's back changed ${changed} rows`, { row: first, table: await dump(ctx, s) })
    const again = await ctx.app.inject({ method: 'GET', url: path(first.id), headers: { ...headers, 'if-none-match': etag as string } })
    if (again.statusCode !== 200) fail(`a conditional GET after a write behind the gateway's back answered ${again.statusCode}`, { row: first })
    if (again.json().name !== newName) fail(`the read after a write behind the gateway's back shows ${JSON.stringify(again.json().name)}`, { row: first })
  }
}

t.test('the mapping over generated legacy material tables', { skip: MSSQL && 'generated SQLite schemas', timeout: 300_000 }, async (t) => {
  let runs = 0
  await fc.assert(fc.asyncProperty(
    schemaArb.chain((s) => fc.record({ s: fc.constant(s), rows: rowsArb(s), bodies: fc.array(bodyArb(s), { minLength: 1, maxLength: 4 }), sortPick: fc.nat(), desc: fc.boolean() })),
    async ({ s, rows, bodies, sortPick, desc }) => {
      runs++
      await checkSchema(t, s, rows, bodies, sortPick, desc)
    }), { seed: SEED, numRuns: RUNS, ...(process.env.PROPERTY_PATH ? { path: process.env.PROPERTY_PATH, endOnFailure: true } : {}) })
  if (STATS) t.comment([...STATS].sort().map(([k, n]) => `${n}\t${k}`).join('\n'))
  t.ok(runs >= RUNS, `${runs} schemas checked (seed ${SEED})`)
})
