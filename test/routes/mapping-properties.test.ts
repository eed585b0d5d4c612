// Property-based tests of the mapping layer: fast-check generates legacy SQLite tables for materials within
// what the README's "Day one" section says a mapping supports (other column names, declared types, value
// maps, time formats, padding, NULLs, text or integer ids, unmapped columns), builds the mapping for each
// and checks the API over it: no 500, a 4xx changes nothing, a create reads back as sent, the list
// parameters agree with the values reads show (each equality filter, modifiedSince, sort=f and sort=-f,
// a walk by meta.next: every row once, in that order), an update that changes nothing leaves modifiedAt
// alone, and a conditional GET after a write behind the gateway's back is a 200.
// Deterministic: fast-check's seed is fixed (20261127 below, 40 schemas: about 25 s); on a failure it
// prints the seed, the path and the counterexample shrunk for up to 20 s (PROPERTY_SHRINK_MS), which
// PROPERTY_SEED=<seed> PROPERTY_PATH=<path> replays. PROPERTY_SEED and PROPERTY_RUNS explore other schemas;
// PROPERTY_STATS=1 lists the answers seen.
// Only 4xx, never 500, is asserted of odd bodies: which 4xx is the route tests' business.
import t from 'tap'
import fc from 'fast-check'
import type { TableMappingConfig } from '../../schemas/config.js'
import { build, walkPages } from '../helpers/build.js'
import { rejection, sleep } from '../helpers/wait.js'
import {
  PROPERTY_TEST, checkListParameters, checkProperty, checkReadBack, checkWalk, checkWriteBehind, columnArb, createTable, distinctNames, dump, falseCode, fill,
  flagOrUntypedType, gateway, keyedRows, list, listAll, optional, orNull, overTable, pad, storedFlag, tableMapping, textType, timeType, timeValue,
  untypedFlagOdd, validBody, withDefault, withOdd, write, type Body, type Gateway, type Kind, type LegacyColumn, type LegacyTable
} from '../helpers/legacy-properties.js'

interface Column extends LegacyColumn {
  /** digits: before the point, DECIMAL(p,s)'s p − s */
  number?: { integer: boolean, scale?: number, digits?: number, real?: boolean, asText?: boolean }
}

interface Schema extends LegacyTable<Column> {
  /** id on its own INTEGER PRIMARY KEY, or on the materialNumber column: text, or an INTEGER PRIMARY KEY of numbers */
  key: 'own' | 'text' | 'int'
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

const column = columnArb<Column>(BASES)

// ---- column types ----

const numberType: fc.Arbitrary<Pick<Column, 'type' | 'number'>> = fc.oneof(
  fc.constantFrom('INTEGER', 'BIGINT', 'SMALLINT', 'INT').map((type) => ({ type, number: { integer: true } })),
  fc.tuple(fc.integer({ min: 4, max: 15 }), fc.integer({ min: 0, max: 3 })).map(([p, s]) => ({ type: `DECIMAL(${p},${s})`, number: { integer: s === 0, scale: s, digits: p - s } })),
  fc.constant({ type: 'NUMERIC', number: { integer: false } }),
  fc.constantFrom('REAL', 'DOUBLE', 'FLOAT').map((type) => ({ type, number: { integer: false, real: true } })),
  // numbers a legacy program keeps as text, or in a column without a declared type
  fc.constantFrom('TEXT', '').map((type) => ({ type, number: { integer: false, asText: true } }))
)

const schemaArb: fc.Arbitrary<Schema> = fc.record({
  table: fc.constantFrom('Artikel', 'ITEM MASTER', 'Order', 'teile'),
  key: fc.constantFrom<Schema['key']>('own', 'text', 'int'),
  timeZone: fc.option(fc.constantFrom('Europe/Berlin', 'America/New_York'), { nil: undefined }),
  materialNumber: column('materialNumber', textType(8), true),
  name: column('name', textType(8)),
  description: optional(column('description', textType(1))),
  unit: optional(column('unit', textType(3))).chain((c) => c === undefined ? fc.constant(c) : fc.option(fc.constant(`'pcs'`), { nil: undefined }).map((dflt) => ({ ...c, dflt }))),
  barcode: optional(column('barcode', textType(1))),
  minStock: optional(column('minStock', numberType)),
  weight: optional(column('weight', numberType)),
  blocked: optional(column('blocked', flagOrUntypedType)).chain(withDefault((c) => falseCode(c.flag!))),
  blockReason: optional(column('blockReason', textType(1))),
  stockQuantity: optional(column('stockQuantity', numberType, true)).map((c) => c === undefined ? c : { ...c, dflt: '0' }),
  createdAt: optional(column('createdAt', fc.constant({ type: 'DATETIME', dflt: 'CURRENT_TIMESTAMP', time: { type: 'DATETIME' } }))),
  modifiedAt: optional(column('modifiedAt', timeType.map((time) => ({ type: time.type, time })))),
  extra: fc.option(fc.record({ name: fc.constantFrom('Mandant', 'Lager Zone'), viaDefaults: fc.boolean() }), { nil: undefined })
}).map(({ table, key, timeZone, extra, ...cols }): Schema => {
  // copies: fast-check replays generated values while shrinking, so they are not changed in place
  const columns = Object.values(cols).filter((c): c is Column => c !== undefined).map((c): Column =>
    key === 'int' && c.field === 'materialNumber' ? { field: c.field, name: c.name, notNull: true, type: 'INTEGER', number: { integer: true } } : { ...c })
  return { table, key, timeZone, columns: distinctNames(columns), extra: extra && { name: extra.name, kind: extra.viaDefaults ? 'viaDefaults' : 'default' } }
})

const ID_COLUMN = 'PK'

/** the column of the id: its own, or the materialNumber's */
const idColumn = (s: Schema): string => s.key === 'own' ? ID_COLUMN : s.columns.find((c) => c.field === 'materialNumber')!.name

function ddl (s: Schema): string {
  return createTable(s, { own: s.key === 'own' ? ID_COLUMN : undefined, field: 'materialNumber', sql: s.key === 'text' ? ' NOT NULL PRIMARY KEY' : s.key === 'int' ? ' PRIMARY KEY' : ' NOT NULL UNIQUE' })
}

const FIELDS = Object.keys(BASES)

function mappingOf (s: Schema): TableMappingConfig {
  return tableMapping(s, idColumn(s), [...FIELDS, 'maxStock'])
}

// ---- data rows the picking system wrote: NULLs, padding, odd codes ----

function storedValue (c: Column, i: number): fc.Arbitrary<unknown> {
  const nullable = !c.notNull && c.field !== 'materialNumber'
  let v: fc.Arbitrary<unknown>
  if (c.field === 'materialNumber' && c.number) v = fc.constant(100 + i)
  else if (c.field === 'materialNumber') {
    // a column without a declared type keeps a number another program stored as a number
    v = fc.constantFrom<unknown>(`M-${i}`, `m${i}`, `M-${i} `, `${100 + i}`, `0${i}`, ...(c.type === '' ? [100 + i] : [])).map((x) => pad(c, x))
  }
  else if (c.text) v = fc.string({ minLength: c.field === 'name' ? 1 : 0, maxLength: Math.min(c.text.n ?? 12, 12) }).map((x) => pad(c, x))
  else if (c.number) v = c.number.integer ? fc.integer({ min: -1000, max: 100000 }) : fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.double({ min: -1000, max: 1000, noNaN: true }).map((x) => Number(x.toFixed(c.number!.scale ?? 3)))).map((x) => c.number!.asText ? String(x) : x)
  else if (c.flag) v = storedFlag(c.flag, untypedFlagOdd(c))
  else if (c.time) v = timeValue(c.time)
  else v = fc.constant(null)
  return orNull(v, nullable)
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

function bodyArb (s: Schema): fc.Arbitrary<Body> {
  const writable = s.columns.filter((c) => WRITABLE.has(c.field))
  const valid = validBody(writable, validValue, writable.filter((c) => c.field === 'materialNumber' || c.field === 'name' || (c.notNull && c.dflt === undefined && c.field !== 'unit' && c.field !== 'blocked')).map((c) => c.field))
  return withOdd(valid, [...FIELDS, 'maxStock', 'nonsense'], oddValue)
}

// ---- checks ----

interface Material { id: number | string, modifiedAt?: string | null, [field: string]: unknown }

const path = (id: number | string): string => `/api/materials/${encodeURIComponent(String(id))}`

const SORTABLE = ['id', 'materialNumber', 'name', 'description', 'unit', 'barcode', 'minStock', 'weight', 'blocked', 'blockReason', 'stockQuantity', 'createdAt', 'modifiedAt']

// ---- list parameters, against the values reads show (README "List parameters") ----

const KINDS: Record<string, Kind> = {
  id: 'id', materialNumber: 'text', name: 'text', description: 'text', unit: 'text', barcode: 'text', blockReason: 'text',
  minStock: 'number', weight: 'number', stockQuantity: 'number', blocked: 'flag', createdAt: 'time', modifiedAt: 'time'
}

/** the column whose numbers a text field shows as their text: a text field's, the id's where it is the material number's */
function numericColumn (s: Schema, field: string): string | undefined {
  if (field === 'id') return s.key === 'own' ? undefined : idColumn(s)
  return KINDS[field] === 'text' ? s.columns.find((c) => c.field === field)?.name : undefined
}

async function checks (g: Gateway, s: Schema, rows: Array<Record<string, unknown>>, bodies: Body[], sortPick: number, desc: boolean, since: number): Promise<void> {
  const { ctx, headers, fail } = g
  const columnOf = new Map(s.columns.map((c) => [c.field, c]))

  // creates: never a 500; a 4xx changes nothing and says something; a 201 reads back as sent
  for (const { body, valid } of bodies) {
    const { res, refused } = await write(g, { method: 'POST', url: '/api/materials', payload: body }, { detail: body, valid })
    if (refused) continue
    if (res.statusCode !== 201) fail(`create answered ${res.statusCode}`, { body, res: res.body })
    const created = res.json() as Material
    const read = await ctx.app.inject({ method: 'GET', url: path(created.id), headers })
    if (read.statusCode !== 200) fail(`GET of a created material answered ${read.statusCode} ${read.body}`, body)
    checkReadBack(g, columnOf, body, read.json() as Material, 'created', body)
  }

  // a walk by meta.next: every row once, in any sort the mapping allows, with and without a filter
  const mapped = SORTABLE.filter((f) => f === 'id' || columnOf.has(f))
  const sortField = mapped[sortPick % mapped.length]
  const all = await listAll<Material>(g, 'materials')
  const kinds = Object.fromEntries(Object.entries(KINDS).filter(([f]) => f === 'id' || columnOf.has(f)))
  const orders = await checkListParameters(g, 'materials', all, kinds, since, (f) => numericColumn(s, f))
  const allIds = all.map((m) => String(m.id)).sort()
  const filters = ['', columnOf.get('blocked') ? '&blocked=false' : '', '&name=[like]%25a%25'].filter((f, i) => i === 0 || f !== '')
  const sort = `${desc ? '-' : ''}${sortField}`
  for (const filter of filters) {
    const expectedIds = filter === '' ? allIds : (await list<Material>(g, 'materials', filter)).map((m) => String(m.id)).sort()
    await checkWalk(g, 'materials', sort, filter, expectedIds, 20, rows, orders.get(sort))
  }

  // an update sending what each row shows: no 500; a 200 leaves modifiedAt as it was; a 4xx changes nothing
  for (const m of all) {
    const body = Object.fromEntries(Object.entries(m).filter(([f]) => WRITABLE.has(f) && columnOf.has(f)))
    const { res, refused, before } = await write(g, { method: 'PATCH', url: path(m.id), payload: body }, { what: 'an update sending the row as shown', stat: 'same-values update', detail: { row: m }, message: false })
    if (refused) continue
    if (res.statusCode !== 200) fail(`update answered ${res.statusCode}`, res.body)
    if (JSON.stringify(await dump(g)) !== JSON.stringify(before)) fail('an update sending the row as shown wrote to the table', { row: m, after: await dump(g), before })
    if ((res.json() as Material).modifiedAt !== m.modifiedAt) fail('an update sending the row as shown moved modifiedAt', { row: m, after: res.json() })
  }

  // a conditional GET after a write behind the gateway's back: 200 with the new row, not 304
  const first = all[0]
  if (first !== undefined) await checkWriteBehind(g, path(first.id), first, idColumn(s), 'name', columnOf.get('name')!.name)
}

t.test('the mapping over generated legacy material tables', PROPERTY_TEST, async (t) => {
  await checkProperty(t,
    schemaArb.chain((s) => fc.record({ s: fc.constant(s), rows: keyedRows(s, 'materialNumber', storedValue), bodies: fc.array(bodyArb(s), { minLength: 1, maxLength: 4 }), sortPick: fc.nat(), desc: fc.boolean(), since: fc.nat() })),
    async ({ s, rows, bodies, sortPick, desc, since }) => {
      await overTable(t, { mapping: { materials: mappingOf(s) } }, async (db) => { await fill(db, s, ddl(s), rows) },
        async (ctx) => { await checks(gateway(ctx, s, ddl(s), mappingOf(s)), s, rows, bodies, sortPick, desc, since) })
    },
    // fixed, so that every run checks the same schemas
    { seed: 20261127, runs: 40 })
})

// what the property's list checks found: a flag without a value map on a column without a declared type was compared as stored, so
// blocked=true missed the -1 and the '1' that reads show as true, and sorting put -1 before 0 and text after numbers
t.test('a flag in a column without a declared type filters and sorts as reads show it', PROPERTY_TEST, async (t) => {
  const stored: unknown[] = [0, 1, -1, '1', 'true', '0', 'X']
  const ctx = await build(t, {
    mapping: {
      materials: {
        table: 'Art',
        columns: { id: 'PK', materialNumber: 'Nr', name: 'Name', blocked: 'Gesperrt', ...Object.fromEntries(['description', 'unit', 'barcode', 'minStock', 'maxStock', 'weight', 'blockReason', 'stockQuantity', 'createdAt', 'modifiedAt'].map((f) => [f, null])) }
      }
    }
  }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "Art" ("PK" INTEGER PRIMARY KEY, "Nr" TEXT NOT NULL UNIQUE, "Name" TEXT, "Gesperrt" NOT NULL)', params: [] })
    for (const [i, v] of stored.entries()) {
      await db.execute({ text: 'INSERT INTO "Art" ("Nr", "Gesperrt") VALUES (@n, @v)', params: [{ name: 'n', kind: 'string', value: `M-${i + 1}` }, typeof v === 'number' ? { name: 'v', kind: 'integer', value: v } : { name: 'v', kind: 'string', value: String(v) }] })
    }
  })
  const ids = async (query: string): Promise<number[]> => {
    const res = await ctx.app.inject({ url: `/api/materials?${query}`, headers: ctx.auth(ctx.adminToken) })
    if (res.statusCode !== 200) t.fail(`${query} answered ${res.statusCode} ${res.body}`)
    return (res.json() as { data: Material[] }).data.map((m) => Number(m.id))
  }
  const all = (await ctx.app.inject({ url: '/api/materials', headers: ctx.auth(ctx.adminToken) })).json() as { data: Material[] }
  t.same(all.data.map((m) => m.blocked), [false, true, true, true, true, false, null], "reads: any number but 0 is true; the text '1', 'true', '0'; other text is null")
  t.same(await ids('blocked=true'), [2, 3, 4, 5], "blocked=true finds the -1, '1' and 'true' reads show as true")
  t.same(await ids('blocked=false'), [1, 6])
  t.same(await ids('blocked=%5Bnull%5D'), [7], '[null] finds the text shown as null')
  t.same(await ids('blocked=%5Bnot%5Dtrue'), [1, 6, 7])
  t.same(await ids('blocked=%5Bgt%5Dfalse'), [2, 3, 4, 5])
  const walk = async (sort: string): Promise<number[]> => (await walkPages(t, ctx, `/api/materials?limit=2&sort=${sort}`, 10, 'id')).map(Number)
  t.same(await walk('blocked'), [7, 1, 6, 2, 3, 4, 5], 'sorted as shown: null, false, true, ties by id')
  t.same(await walk('-blocked'), [2, 3, 4, 5, 1, 6, 7], 'descending: the row shown as null last, although the column is NOT NULL')
})

// the runner itself: a failure that would shrink for half a minute (a hundred numbers, each shrunk towards 1000 by trying
// smaller ones that pass, each check 10 ms) reports the counterexample shrunk so far, with the seed and path, once
// shrinkMs has passed; a run that keeps passing is not cut short
t.test('checkProperty reports a failure\'s counterexample once shrinking has taken shrinkMs, and never cuts a passing run short', { skip: Object.keys(process.env).some((k) => k.startsWith('PROPERTY_')) && 'PROPERTY_* set: they would change the runs' }, async (t) => {
  let checked = 0
  const err = await rejection(checkProperty(t, fc.noBias(fc.array(fc.nat({ max: 1e9 }), { minLength: 100, maxLength: 100 })), async (numbers) => {
    checked++
    await sleep(10)
    if (numbers.every((n) => n >= 1000)) throw new Error('all at least 1000')
  }, { seed: 7, runs: 5, shrinkMs: 200 }))
  t.match(err.message, /^Property failed after 1 tests\n\{ seed: 7, path: "0(:\d+)+", endOnFailure: true \}\nCounterexample: \[\[\d+(,\d+){99}\]\]\nShrunk \d+ time\(s\)\nGot error: all at least 1000/)
  t.match(err.message, /shrinking stopped after 200 ms: the counterexample is shrunk so far; PROPERTY_SHRINK_MS=<ms> and tap's --timeout shrink it further/)
  // shrinking the hundred numbers to 1000 takes thousands of checks
  t.ok(checked < 1000, `${checked} checks`)
  let passed = 0
  await checkProperty(t, fc.nat(), async () => { passed++; await sleep(10) }, { seed: 7, runs: 30, shrinkMs: 0 })
  t.equal(passed, 30, 'a passing run checks all its values, however long they take')
})
