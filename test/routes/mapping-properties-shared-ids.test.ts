// Property-based tests of ids several rows hold (README "Day one: mapping"): fast-check generates legacy SQLite article
// tables whose article number, the id, is one column of a composite PRIMARY KEY or UNIQUE (with the warehouse), in text
// columns of several types and collations (NOCASE, RTRIM, CHAR(n) padded by some programs, none declared), and rows
// that share ids: in another case, with a trailing blank, padded, or as a number. Checks: a walk by meta.next with each
// sort, filter and page size returns every row exactly once by the full key (warehouse and number), in the list's
// order, its count=true the list's; a read of an id several rows hold (as the database compares it) is a 409, of one
// row's a 200 with that row; an update or delete of a shared id is a 409 that changes nothing. The same tables as
// station tables keyed by their code (per warehouse) check the station list, which a live filter or sort (connected,
// status) pages in memory. The walks' order is the one-page list's: that it is the sort's is mapping-properties*'s.
// Deterministic: the seed is fixed (20261128 below, 25 material and 15 station tables: about 30 s); PROPERTY_SEED,
// PROPERTY_RUNS, PROPERTY_PATH and PROPERTY_STATS=1 work as in mapping-properties.test.ts.
import t from 'tap'
import fc from 'fast-check'
import type { TableMappingConfig } from '../../schemas/config.js'
import {
  PROPERTY_TEST, checkProperty, checkSharedIdAccess, checkSharedWalk, fill, flagType, gateway, list, listAll, overTable, q,
  sharedIdColumnArb, sharedIdKey, sharedIdValue, storedFlag, timeType, timeValue, type Flag, type Gateway, type LegacyTable, type SharedIdColumn, type TimeColumn
} from '../helpers/legacy-properties.js'

interface Schema {
  table: string
  id: SharedIdColumn
  blocked?: { type: string, flag: Flag }
  modifiedAt?: TimeColumn
}

const schemaArb: fc.Arbitrary<Schema> = fc.record({
  table: fc.constantFrom('Artikel', 'ITEM MASTER', 'Order'),
  id: sharedIdColumnArb,
  blocked: fc.option(flagType.map((f) => ({ type: f.type, flag: f.flag! })), { nil: undefined }),
  modifiedAt: fc.option(timeType, { nil: undefined })
}, { requiredKeys: ['table', 'id'] })

const legacy = (s: Schema): LegacyTable => ({ table: s.table, columns: [] })

function ddl (s: Schema): string {
  const key = s.id.key.replace('other', q('Lager')).replace('id', q('ArtNr'))
  const cols = [`${q('Lager')} TEXT NOT NULL`, `${q('ArtNr')} ${s.id.type} NOT NULL`, `${q('Bez')} TEXT`]
  if (s.blocked !== undefined) cols.push(`${q('Gesperrt')} ${s.blocked.type}`)
  if (s.modifiedAt !== undefined) cols.push(`${q('Geaendert')} ${s.modifiedAt.type}`)
  return `CREATE TABLE ${q(s.table)} (${cols.join(', ')}, ${key})`
}

function mappingOf (s: Schema): TableMappingConfig {
  const absent = ['unit', 'barcode', 'minStock', 'maxStock', 'weight', 'blockReason', 'stockQuantity', 'createdAt']
  const columns: TableMappingConfig['columns'] = { ...Object.fromEntries(absent.map((f) => [f, null])), id: 'ArtNr', materialNumber: 'ArtNr', name: 'Bez', description: 'Lager', blocked: null, modifiedAt: null }
  if (s.blocked !== undefined) columns.blocked = s.blocked.flag.kind === 'map' ? { column: 'Gesperrt', values: { true: s.blocked.flag.t, false: s.blocked.flag.f } } : 'Gesperrt'
  if (s.modifiedAt !== undefined) columns.modifiedAt = s.modifiedAt.format === undefined ? 'Geaendert' : { column: 'Geaendert', format: s.modifiedAt.format }
  return { table: s.table, columns }
}

/** up to 14 rows, each of its own warehouse: ids from a few, so that several rows share one, now and then more than a page holds */
function rowsArb (s: Schema): fc.Arbitrary<Array<Record<string, unknown>>> {
  const row = fc.record({
    ArtNr: sharedIdValue(s.id),
    Bez: fc.constantFrom<unknown>('x', 'y', 'Ab', 'ab', null),
    ...(s.blocked === undefined ? {} : { Gesperrt: storedFlag(s.blocked.flag) }),
    ...(s.modifiedAt === undefined ? {} : { Geaendert: fc.option(timeValue(s.modifiedAt), { nil: null, freq: 4 }) })
  })
  return fc.array(row, { maxLength: 14 }).map((rows) => rows.map((r, i) => ({ Lager: `L${i + 1}`, ...r })))
}

interface Listed { id: string, [field: string]: unknown }

/** What a resource over such a table is checked by: the column of its id, the other part of each row's key, its sorts and filters, an edit */
interface SharedChecks {
  resource: 'materials' | 'stations'
  idColumn: string
  /** the other column of the composite key as the API shows it (unique by itself here) */
  other: string
  sorts: string[]
  filters: string[]
  edit: Record<string, unknown>
}

async function checks (g: Gateway, s: Schema, stored: Array<Record<string, unknown>>, c: SharedChecks): Promise<void> {
  const all = await listAll<Listed>(g, c.resource)
  const key = (m: Listed): string => sharedIdKey(s.id, m.id)
  // the full key: the warehouse is unique by itself here
  const full = (m: Listed): string => `${String(m[c.other])}|${m.id}`
  const holders = (m: Listed): number => stored.filter((r) => sharedIdKey(s.id, r[c.idColumn]) === key(m)).length
  const detail = { stored }
  let walks = 0
  for (const [j, sort] of c.sorts.entries()) {
    const field = sort.replace(/^-/, '')
    // rows the sort keys place alike: the sort field as shown and the id as the database compares it
    const position = (m: Listed): string => JSON.stringify(field === 'id' ? [key(m)] : [m[field] ?? null, key(m)])
    // without a filter, and with one of the others in turn
    for (const filter of ['', c.filters[1 + j % (c.filters.length - 1)]]) {
      const whole = await list<Listed>(g, c.resource, `&sort=${sort}${filter}`)
      // pages of 1, 2 and 3 rows in turn: each ends now before, now within a run of rows that share an id
      await checkSharedWalk(g, c.resource, `&sort=${sort}${filter}`, 1 + walks++ % 3, whole, full, position, detail)
    }
  }
  await checkSharedIdAccess(g, c.resource, all, holders, c.edit, (read, m) => read.id === m.id && read[c.other] === m[c.other], detail)
}

const materialChecks = (s: Schema): SharedChecks => ({
  resource: 'materials',
  idColumn: 'ArtNr',
  other: 'description',
  sorts: ['id', '-id', 'name', '-name', 'description', ...(s.blocked ? ['blocked', '-blocked'] : []), ...(s.modifiedAt ? ['-modifiedAt'] : [])],
  filters: ['', '&name=x', '&name=[like]%25a%25', '&id=[gte]B', '&id=[not]A-1', ...(s.blocked ? ['&blocked=false'] : [])],
  edit: { name: 'neu' }
})

// ---- stations keyed by their code (the id and the name), per warehouse: the list in memory where a filter or sort is live ----

function stationDdl (s: Schema): string {
  const key = s.id.key.replace('other', q('Lager')).replace('id', q('Platz'))
  const cols = [`${q('Lager')} TEXT NOT NULL`, `${q('Platz')} ${s.id.type} NOT NULL`, `${q('Bez')} TEXT`]
  if (s.blocked !== undefined) cols.push(`${q('Aktiv')} ${s.blocked.type}`)
  if (s.modifiedAt !== undefined) cols.push(`${q('Geaendert')} ${s.modifiedAt.type}`)
  return `CREATE TABLE ${q(s.table)} (${cols.join(', ')}, ${key})`
}

/** the materials' schema as a station table: the article number's column is the station's code, the blocked flag its enabled one */
function stationMapping (s: Schema): TableMappingConfig {
  const columns: TableMappingConfig['columns'] = { id: 'Platz', name: 'Platz', warehouse: 'Lager', description: 'Bez', type: null, controllerId: null, address: null, enabled: null, createdAt: null, modifiedAt: null }
  if (s.blocked !== undefined) columns.enabled = s.blocked.flag.kind === 'map' ? { column: 'Aktiv', values: { true: s.blocked.flag.t, false: s.blocked.flag.f } } : 'Aktiv'
  if (s.modifiedAt !== undefined) columns.modifiedAt = s.modifiedAt.format === undefined ? 'Geaendert' : { column: 'Geaendert', format: s.modifiedAt.format }
  return { table: s.table, columns }
}

const stationRows = (rows: Array<Record<string, unknown>>): Array<Record<string, unknown>> =>
  rows.map(({ ArtNr, Gesperrt, ...r }) => ({ ...r, Platz: ArtNr, ...(Gesperrt === undefined ? {} : { Aktiv: Gesperrt }) }))

// connected=false and sort=status are live: that list is filtered, sorted and paged in memory
const stationChecks = (s: Schema): SharedChecks => ({
  resource: 'stations',
  idColumn: 'Platz',
  other: 'warehouse',
  sorts: ['id', '-id', 'description', 'status', '-status', ...(s.blocked ? ['enabled'] : []), ...(s.modifiedAt ? ['-modifiedAt'] : [])],
  filters: ['', '&connected=false', '&description=x', '&connected=false&id=[gte]B'],
  edit: { description: 'neu' }
})

t.test('walks, reads and writes over generated legacy material tables whose id several rows hold', PROPERTY_TEST, async (t) => {
  await checkProperty(t,
    schemaArb.chain((s) => fc.record({ s: fc.constant(s), rows: rowsArb(s) })),
    async ({ s, rows }) => {
      await overTable(t, { mapping: { materials: mappingOf(s) } }, async (db) => { await fill(db, legacy(s), ddl(s), rows) },
        async (ctx) => { await checks(gateway(ctx, legacy(s), ddl(s), mappingOf(s), rows), s, rows, materialChecks(s)) })
    },
    {
      seed: 20261128,
      runs: 25,
      // what PROPERTY_SEED=1 found: RTRIM() of a CHAR(n) COLLATE NOCASE column compared in BINARY, so 'a-1' named one row
      examples: [{
        s: { table: 'Artikel', id: { type: 'CHAR(8) COLLATE NOCASE', char: 8, nocase: true, rtrim: false, key: 'PRIMARY KEY (other, id)' } },
        rows: [{ Lager: 'L1', ArtNr: 'a-1', Bez: 'x' }, { Lager: 'L2', ArtNr: 'A-1     ', Bez: 'x' }, { Lager: 'L3', ArtNr: 'B-1', Bez: null }]
      }]
    })
})

t.test('walks, reads and writes over generated legacy station tables whose code several rows hold', PROPERTY_TEST, async (t) => {
  await checkProperty(t,
    schemaArb.chain((s) => fc.record({ s: fc.constant(s), rows: rowsArb(s).map(stationRows) })),
    async ({ s, rows }) => {
      await overTable(t, { mapping: { stations: stationMapping(s) } }, async (db) => { await fill(db, legacy(s), stationDdl(s), rows) },
        async (ctx) => { await checks(gateway(ctx, legacy(s), stationDdl(s), stationMapping(s), rows), s, rows, stationChecks(s)) })
    },
    { seed: 20261128, runs: 15 })
})
