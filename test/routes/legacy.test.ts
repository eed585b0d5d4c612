// The gateway over a picking system's own tables (test/helpers/legacy-fixture.ts), used through the HTTP API as an integrator would.
import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import type { TableMappingConfig } from '../../schemas/config.js'
import { buildApp } from '../../src/app.js'
import { initDatabase } from '../../src/bootstrap.js'
import { mappingsOf, validateConfig } from '../../src/config.js'
import { openDatabase } from '../../src/db/index.js'
import { SchemaMismatchError } from '../../src/db/errors.js'
import type { Database, Param } from '../../src/db/types.js'
import { ADMIN_PASSWORD, TEST_ARGON2, build, testDatabaseUrl } from '../helpers/build.js'
import {
  ARBEITSPLATZ_ROWS, ARTIKEL_ROWS, BLOCKED_MESSAGE, LAGERPLATZ_ROWS, MATERIALS_MAPPING, MSSQL_DROP, NULL_ROWS, SPECIAL_ROWS, STATIONS_MAPPING,
  TIE_ROWS, TIE_UTC, createLegacyFixture, tableName, type ArtikelExpectation, type ArtikelRow, type FixtureOptions
} from '../helpers/legacy-fixture.js'

const MSSQL = process.env.GATEWAY_TEST_DB === 'mssql' && Boolean(process.env.MSSQL_TEST_URL)
const silent = { info () {}, warn () {}, error () {} }

/** the row whose Berlin time (02:30 on 29 March) does not exist */
const GAP = 'A-1002'

interface Material {
  id: number
  materialNumber: string
  name: string
  description: string | null
  unit: string | null
  barcode: string | null
  minStock: number | null
  maxStock: number | null
  weight: number | null
  blocked: boolean
  blockReason: string | null
  stockQuantity: number | null
  createdAt: string | null
  modifiedAt: string | null
}

interface Station {
  id: number
  name: string
  type: string
  enabled: boolean
  modifiedAt: string | null
  createdAt: string | null
  [field: string]: unknown
}

interface Page<T> { data: T[], meta: { limit: number, next?: string, total?: number } }

type Overrides = NonNullable<Parameters<typeof build>[1]>

/** the configuration file's form of the mapping (value maps), as validateConfig reads it */
const withMapping = (mapping: { materials: TableMappingConfig, stations: TableMappingConfig }): Overrides => ({ mapping })

/**
 * SQL Server keeps the fixture from the previous file or run: its bins reference the articles, so
 * they go first, before build.ts drops the mapped tables (it would fail on the foreign key).
 */
async function clearMssql (): Promise<void> {
  if (!MSSQL) return
  const db = openDatabase(process.env.MSSQL_TEST_URL!, { logger: silent, connectTimeoutMs: 5000, requestTimeoutMs: 15000 })
  try {
    for (const text of MSSQL_DROP) await db.execute({ text, params: [] })
  } finally {
    await db.close()
  }
}

const str = (name: string, value: string | number | null): Param => ({ name, kind: typeof value === 'number' ? 'integer' : 'string', value })

/** A time column as 'YYYY-MM-DD HH:MM:SS' text, the same in both dialects. */
const fmt = (db: Database, column: string): string => db.dialect === 'mssql' ? `CONVERT(varchar(19), "${column}", 120)` : `strftime('%Y-%m-%d %H:%M:%S', "${column}")`

/** Berlin wall-clock time of a UTC instant, to the second, by the runtime's own zone data. */
function berlinWall (iso: string): string {
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-US', {
    timeZone: 'Europe/Berlin', hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit'
  }).formatToParts(new Date(iso)).map((p) => [p.type, p.value]))
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`
}

function expectedMaterial (r: ArtikelRow & { expect: ArtikelExpectation }, id: number): Material {
  return {
    id,
    materialNumber: r.ArtNr,
    name: r.Bezeichnung,
    description: r.Beschreibung,
    unit: r.ME,
    barcode: r.EAN,
    minStock: r.MinBestand,
    maxStock: r.MaxBestand,
    weight: r.Gewicht,
    blocked: r.Gesperrt === 'J',
    blockReason: r.Sperrgrund,
    stockQuantity: r.Bestand,
    createdAt: r.expect.createdAt,
    modifiedAt: r.expect.modifiedAt
  }
}

const STATION_RANK: Record<string, number> = { K: 1, M: 2, P: 3, V: 4 }
const rankOf = (code: string): number => STATION_RANK[code] ?? 5

/** NULL first ascending (as both databases sort), then the time, then id. */
/**
 * The API's order: by the shown time; rows showing the same time in the order of their stored
 * times (only the spring gap maps two stored times to one shown), then by id.
 */
function byTime<T> (rows: T[], at: (row: T) => string | null, id: (row: T) => number, desc: boolean, stored: (row: T) => number = () => 0): T[] {
  return [...rows].sort((a, b) => {
    const x = at(a)
    const y = at(b)
    if (x !== y) {
      if (x === null) return desc ? 1 : -1
      if (y === null) return desc ? -1 : 1
      const d = Date.parse(x) - Date.parse(y)
      if (d !== 0) return desc ? -d : d
    }
    const s = stored(a) - stored(b)
    if (s !== 0) return desc ? -s : s
    return id(a) - id(b)
  })
}

async function legacyApp (t: Test, opts: { materials?: TableMappingConfig, stations?: TableMappingConfig, fixture?: FixtureOptions, logLines?: string[] } = {}) {
  await clearMssql()
  const lines = opts.logLines
  const ctx = await build(t, { ...withMapping({ materials: opts.materials ?? MATERIALS_MAPPING, stations: opts.stations ?? STATIONS_MAPPING }), ...lines === undefined ? {} : { logging: { level: 'info' as const } } },
    (db) => createLegacyFixture(db, opts.fixture), lines === undefined ? {} : { logStream: { write: (line: string) => { lines.push(line) } } })
  const headers = ctx.auth(ctx.adminToken)
  const inject = ctx.app.inject.bind(ctx.app)
  const get = async (url: string) => inject({ method: 'GET', url, headers })

  /** follows meta.next to the end; every page must be a 200 of at most `limit` rows */
  async function walk<T extends { id: number }> (t: Test, first: string, limit: number): Promise<{ rows: T[], pages: number }> {
    const rows: T[] = []
    let url: string | undefined = first
    let pages = 0
    while (url !== undefined) {
      const res = await get(url)
      if (res.statusCode !== 200) {
        t.fail(`GET ${url}: ${res.statusCode} ${res.body}`)
        break
      }
      const page = res.json() as Page<T>
      if (page.data.length > limit || (page.meta.next !== undefined && page.data.length !== limit)) t.fail(`page ${pages} of ${first} has ${page.data.length} rows`)
      rows.push(...page.data)
      url = page.meta.next
      if (url !== undefined && !/^\/api\/\w+\?.*cursor=[\w-]+/.test(url)) t.fail(`meta.next is not a relative URL with a cursor: ${url}`)
      pages++
      if (pages > 1000) throw new Error('walk does not end')
    }
    return { rows, pages }
  }

  /** material number -> id, as the database assigned them */
  const ids = new Map<string, number>()
  for (const r of await ctx.db.query({ text: `SELECT "ArtID" AS id, "ArtNr" AS nr FROM ${tableName(ctx.db.dialect, 'Artikel')}`, params: [] })) ids.set(String(r.nr), Number(r.id))
  const stationIds = new Map<string, number>()
  for (const r of await ctx.db.query({ text: `SELECT "AP_ID" AS id, "Bezeichnung" AS name FROM ${tableName(ctx.db.dialect, 'Arbeitsplatz')}`, params: [] })) stationIds.set(String(r.name), Number(r.id))

  const rawCount = async (table: string): Promise<number> =>
    Number((await ctx.db.query({ text: `SELECT COUNT(*) AS n FROM ${tableName(ctx.db.dialect, table)}`, params: [] }))[0].n)
  /** the raw Artikel row, times as Berlin wall text */
  const rawArtikel = async (nr: string) => (await ctx.db.query({
    text: `SELECT "Bezeichnung" AS name, "ME" AS unit, "Gesperrt" AS g, "Sperrgrund" AS reason, "MinBestand" AS min, "MaxBestand" AS max, "Lagerzone" AS zone, "Mandant" AS mandant, "Bestand" AS stock,
      ${fmt(ctx.db, 'Angelegt')} AS created, ${fmt(ctx.db, 'LastChange')} AS changed, "LastChange" AS changedRaw FROM ${tableName(ctx.db.dialect, 'Artikel')} WHERE "ArtNr" = @nr`,
    params: [str('nr', nr)]
  }))[0]

  return { ...ctx, headers, inject, get, walk, ids, stationIds, rawCount, rawArtikel }
}

const numbersOf = (rows: Array<{ materialNumber: string }>): string[] => rows.map((m) => m.materialNumber)

t.test('legacy rows read through the API: field names, codes, Berlin times in UTC, NULL as null', async (t) => {
  const ctx = await legacyApp(t)
  const { get, ids } = ctx

  const list = await get('/api/materials?limit=1000&count=true')
  t.equal(list.statusCode, 200)
  const body = list.json() as Page<Material>
  t.equal(body.meta.total, ARTIKEL_ROWS.length)
  t.equal(body.data.length, ARTIKEL_ROWS.length)
  t.notMatch(list.body, /ArtNr|Bezeichnung|LastChange|Gesperrt|Artikel"/, 'no column or table names')
  t.notMatch(list.body, /"(unit|description|barcode|modifiedAt)":""/, 'a NULL never comes out as ""')
  const byNumber = new Map(body.data.map((m) => [m.materialNumber, m]))
  t.same(ARTIKEL_ROWS.map((r) => byNumber.get(r.ArtNr)), ARTIKEL_ROWS.map((r) => expectedMaterial(r, ids.get(r.ArtNr)!)), 'every row as the API must show it')

  const one = async (nr: string) => {
    const res = await get(`/api/materials/${ids.get(nr)}`)
    t.equal(res.statusCode, 200, nr)
    return res.json()
  }
  t.same(await one('A-1000'), {
    id: ids.get('A-1000'),
    materialNumber: 'A-1000',
    name: 'Sechskantschraube M8x40 DIN 933 verzinkt',
    description: 'Festigkeitsklasse 8.8',
    unit: 'Stk',
    barcode: '4006209123456',
    minStock: 100,
    maxStock: 2500,
    weight: 0.021,
    blocked: false,
    blockReason: null,
    stockQuantity: 1234.5,
    createdAt: '2019-03-04T09:15:00.000Z',
    modifiedAt: '2026-01-15T07:30:00.000Z'
  }, 'winter row: 08:30 CET is 07:30 UTC')
  t.same(await one('A-1001'), {
    id: ids.get('A-1001'),
    materialNumber: 'A-1001',
    name: 'Kugelhahn DN15 PN40 Messing',
    description: null,
    unit: null,
    barcode: null,
    minStock: 5,
    maxStock: null,
    weight: 0.31,
    blocked: true,
    blockReason: 'Reklamation Lieferant',
    stockQuantity: 0,
    createdAt: '2020-06-30T22:00:00.000Z',
    modifiedAt: '2026-07-01T10:00:00.000Z'
  }, 'summer row: CEST, blocked from J, NULL unit as null')
  t.match(await one(GAP), { modifiedAt: '2026-03-29T01:00:00.000Z' }, 'a time in the spring gap (no Berlin clock showed 02:30) reads as the moment the clock jumped')
  t.match(await one('A-1003'), { modifiedAt: '2026-10-25T00:30:00.000Z' }, 'a time in the autumn overlap is the earlier instant')
  t.match(await one('A-1004'), { unit: null, modifiedAt: null, createdAt: '2003-11-17T07:00:00.000Z', minStock: null, blocked: false }, 'an old row without change time')
  t.match(await one('E-01'), { modifiedAt: '2026-03-29T00:59:59.000Z' })
  t.match(await one('E-02'), { modifiedAt: '2026-03-29T01:00:00.000Z' })
  t.match(await one('E-04'), { modifiedAt: '2026-10-24T23:59:59.000Z' })
  t.match(await one('E-06'), { modifiedAt: '2026-10-25T02:00:00.000Z' })

  const stations = await get('/api/stations?limit=100')
  t.equal(stations.statusCode, 200, 'a stored code no value map knows does not break the list')
  const s = new Map((stations.json() as Page<Station>).data.map((x) => [x.name, x]))
  t.equal(s.size, ARBEITSPLATZ_ROWS.length)
  t.same(s.get('LIFT-01'), {
    id: ctx.stationIds.get('LIFT-01'),
    name: 'LIFT-01',
    description: 'Kardex Shuttle XP 500',
    type: 'vlm',
    warehouse: 'HL1',
    controllerId: 'kardex-1',
    address: 1,
    enabled: true,
    connected: false,
    status: 'offline',
    lastSeenAt: null,
    createdAt: '2025-02-03T10:00:00.000Z',
    modifiedAt: '2026-11-20T14:05:09.000Z'
  }, 'times in the UTC table as written by CURRENT_TIMESTAMP')
  t.match(s.get('SHUTTLE-01'), { type: 'S', enabled: true }, 'the unknown code as it is stored')
  t.match(s.get('PTL-07'), { type: 'ptl', enabled: true }, "'Y' is the second code of true")
  t.match(s.get('KARUSSELL-05'), { type: 'carousel', enabled: false, status: 'disabled' })
  t.match(s.get('HAND-05'), { type: 'manual', warehouse: null, address: null, modifiedAt: null, createdAt: '2024-06-30T23:30:00.000Z' })
  t.equal((await get(`/api/stations/${ctx.stationIds.get('SHUTTLE-01')}`)).json().type, 'S', 'and read alone')
})

t.test('meta.next walks every row once, in order: ties across pages, NULL times, DST, value maps', async (t) => {
  const ctx = await legacyApp(t)
  const { ids, walk } = ctx
  const all = ARTIKEL_ROWS.map((r) => ({ nr: r.ArtNr, id: ids.get(r.ArtNr)!, at: r.expect.modifiedAt, blocked: r.Gesperrt === 'J' }))
  const allNumbers = all.map((r) => r.nr).sort()

  const check = async (query: string, limit: number, expected: string[]) => {
    const { rows, pages } = await walk<Material>(t, `/api/materials?${query}&limit=${limit}`, limit)
    const got = numbersOf(rows)
    t.equal(pages, Math.ceil(all.length / limit), `${query} limit ${limit}: pages`)
    t.same([...got].sort(), allNumbers, `${query} limit ${limit}: every row exactly once`)
    t.same(got, expected, `${query} limit ${limit}: in the order of the times the API shows (the DST gap row included)`)
    return rows
  }
  // the gap row (stored 02:30) and E-02 (stored 03:00) both show 01:00Z: the stored order decides
  const storedOrder = (r: { nr: string }): number => r.nr === GAP ? 0 : 1
  const asc = byTime(all, (r) => r.at, (r) => r.id, false, storedOrder).map((r) => r.nr)
  const desc = byTime(all, (r) => r.at, (r) => r.id, true, storedOrder).map((r) => r.nr)
  t.same(asc.slice(asc.indexOf('E-01'), asc.indexOf('E-01') + 4), ['E-01', GAP, 'E-02', 'E-03'], 'the gap row sits where its stored time does')
  for (const limit of [7, 123]) {
    const rows = await check('sort=modifiedAt', limit, asc)
    t.same(rows.slice(0, NULL_ROWS + 1).map((m) => m.modifiedAt), Array(NULL_ROWS + 1).fill(null), 'NULL times first ascending')
    t.equal(rows.filter((m) => m.modifiedAt === TIE_UTC).length, TIE_ROWS, 'the tie, written in three text forms, is one instant')
    await check('sort=-modifiedAt', limit, desc)
    await check('count=false', limit, [...all].sort((a, b) => a.id - b.id).map((r) => r.nr))
  }
  // a value-mapped key before a time key: J/N ranked as false < true
  const blockedThenTime = [...byTime(all, (r) => r.at, (r) => r.id, true, storedOrder)].sort((a, b) => Number(a.blocked) - Number(b.blocked)).map((r) => r.nr)
  await check('sort=blocked,-modifiedAt', 11, blockedThenTime)

  // stations by type: the API's order of values (carousel < manual < ptl < vlm), not the codes' (K < M < P < V); the unknown code last
  const stations = ARBEITSPLATZ_ROWS.map((r) => ({ name: r.Bezeichnung, id: ctx.stationIds.get(r.Bezeichnung)!, rank: rankOf(r.WpType.toUpperCase()) }))
  const byType = [...stations].sort((a, b) => a.rank - b.rank || a.id - b.id).map((s) => s.name)
  const byTypeDesc = [...stations].sort((a, b) => b.rank - a.rank || a.id - b.id).map((s) => s.name)
  for (const limit of [7, 123]) {
    const up = await walk<Station>(t, `/api/stations?sort=type&limit=${limit}`, limit)
    t.same(up.rows.map((s) => s.name), byType, `sort=type limit ${limit}`)
    t.same(up.rows.map((s) => s.type), [...Array(5).fill('carousel'), ...Array(5).fill('manual'), ...Array(7).fill('ptl'), ...Array(6).fill('vlm'), 'S'])
    const down = await walk<Station>(t, `/api/stations?sort=-type&limit=${limit}`, limit)
    t.same(down.rows.map((s) => s.name), byTypeDesc, `sort=-type limit ${limit}`)
  }
  const bad = await ctx.get('/api/stations?type=[like]v%25')
  t.equal(bad.statusCode, 400, '[like] on a value-mapped field')
  t.match(bad.json(), { code: 'BAD_QUERY', message: /type/ })
})

t.test('time filters: CURRENT_TIMESTAMP text, exact values the API returned, ranges around DST', async (t) => {
  const t0 = Date.now()
  const ctx = await legacyApp(t)
  const { get } = ctx
  const list = async (query: string): Promise<string[]> => {
    const res = await get(`/api/materials?limit=1000&sort=materialNumber&${query}`)
    t.equal(res.statusCode, 200, query)
    return numbersOf((res.json() as Page<Material>).data)
  }
  const where = (keep: (at: string | null) => boolean): string[] => ARTIKEL_ROWS.filter((r) => keep(r.expect.modifiedAt)).map((r) => r.ArtNr).sort()
  const ms = (iso: string | null): number => iso === null ? Number.NaN : Date.parse(iso)

  const since = await get(`/api/materials?modifiedSince=${TIE_UTC}&count=true&limit=1000`)
  t.equal(since.json().meta.total, TIE_ROWS)
  t.same(numbersOf(since.json().data).sort(), where((at) => at === TIE_UTC), 'modifiedSince finds the rows in SQLite\'s own text form, .NET\'s and ours')
  t.same(await list('modifiedSince=2026-11-23T06:06:04.001Z'), [], 'and not one millisecond later')
  t.same(await list(`modifiedAt=${TIE_UTC}`), where((at) => at === TIE_UTC), 'equality on the shared time')
  t.same(await list('modifiedAt=[null]'), where((at) => at === null))
  t.equal((await list('modifiedAt=[null]')).length, NULL_ROWS + 1)
  t.same(await list('modifiedAt=[gt]2026-11-01T00:00:00Z&modifiedAt=[lt]2026-11-23T06:06:04Z'), where((at) => at !== null && ms(at) > Date.parse('2026-11-01T00:00:00Z') && ms(at) < Date.parse(TIE_UTC)))

  // every value the API returned finds its own row (and only rows showing the same value)
  for (const r of SPECIAL_ROWS) {
    if (r.expect.modifiedAt === null) continue
    const shown = (await get(`/api/materials/${ctx.ids.get(r.ArtNr)}`)).json().modifiedAt as string
    t.same(await list(`modifiedAt=${shown}`), where((at) => at === shown), `modifiedAt=${shown} (${r.ArtNr})`)
  }

  const range = async (lo: string, loOp: 'gt' | 'gte', hi: string, hiOp: 'lt' | 'lte') => {
    const got = await list(`modifiedAt=[${loOp}]${lo}&modifiedAt=[${hiOp}]${hi}`)
    const expected = where((at) => {
      if (at === null) return false
      const x = ms(at)
      return (loOp === 'gt' ? x > Date.parse(lo) : x >= Date.parse(lo)) && (hiOp === 'lt' ? x < Date.parse(hi) : x <= Date.parse(hi))
    })
    t.same(got, expected, `[${loOp}]${lo} [${hiOp}]${hi}: the rows whose shown modifiedAt is in the range`)
  }
  // spring: 02:00 CET -> 03:00 CEST at 01:00Z
  await range('2026-03-29T01:00:00Z', 'gte', '2026-03-29T01:15:00Z', 'lt')
  await range('2026-03-28T12:00:00Z', 'gt', '2026-03-29T00:59:59Z', 'lte')
  await range('2026-03-29T01:15:00Z', 'gte', '2026-03-29T02:00:00Z', 'lt')
  await range('2026-03-29T00:59:59Z', 'gt', '2026-03-29T01:00:00Z', 'lt')
  await range('2026-03-29T00:59:59Z', 'gt', '2026-03-29T01:00:00Z', 'lte')
  // autumn: 03:00 CEST -> 02:00 CET at 01:00Z
  await range('2026-10-24T23:00:00Z', 'gte', '2026-10-25T00:45:00Z', 'lt')
  await range('2026-10-25T02:00:00Z', 'gt', '2026-10-25T03:00:00Z', 'lt')
  await range('2026-10-25T00:00:00Z', 'gte', '2026-10-25T01:00:00Z', 'lt')
  await range('2026-10-25T01:00:00Z', 'gte', '2026-10-25T02:00:00Z', 'lte')
  t.same(await list('modifiedAt=2026-10-25T01:30:00.000Z'), [], 'the later 02:30 (01:30Z) is not the row shown as 00:30Z')

  // stations: a UTC table whose times other programs wrote with CURRENT_TIMESTAMP
  const stationNames = async (query: string): Promise<string[]> => {
    const res = await get(`/api/stations?limit=100&sort=name&${query}`)
    t.equal(res.statusCode, 200, query)
    return (res.json() as Page<Station>).data.map((s) => s.name)
  }
  const changedSince = (iso: string) => ARBEITSPLATZ_ROWS.filter((r) => r.GeaendertAm !== null && Date.parse(`${r.GeaendertAm.replace(' ', 'T')}Z`) >= Date.parse(iso)).map((r) => r.Bezeichnung).sort()
  t.same(await stationNames('modifiedSince=2026-11-20T14:05:09Z'), changedSince('2026-11-20T14:05:09Z'))
  t.ok((await stationNames('modifiedSince=2026-11-20T14:05:09Z')).includes('LIFT-01'))
  t.notOk((await stationNames('modifiedSince=2026-11-20T14:05:09.001Z')).includes('LIFT-01'))
  t.same(await stationNames('modifiedAt=2026-11-21T06:30:00.000Z'), ARBEITSPLATZ_ROWS.filter((r) => r.GeaendertAm === '2026-11-21 06:30:00').map((r) => r.Bezeichnung).sort())
  // ten minutes of slack for a database server's clock; the other rows are from January or earlier
  const recently = new Date(t0 - 600_000).toISOString()
  t.same(await stationNames(`createdAt=[gte]${recently}`), ARBEITSPLATZ_ROWS.filter((r) => r.ErstelltAm === null).map((r) => r.Bezeichnung).sort(), 'rows the column default (CURRENT_TIMESTAMP) stamped during the test')

  // a station written by the gateway (ISO text with ms) sorts among the CURRENT_TIMESTAMP texts
  const created = await ctx.inject({ method: 'POST', url: '/api/stations', headers: ctx.headers, payload: { name: 'PTL-NEU', type: 'ptl' } })
  t.equal(created.statusCode, 201)
  t.same(await stationNames(`modifiedSince=${created.json().modifiedAt as string}`), ['PTL-NEU'])
  t.same(await stationNames(`modifiedAt=${created.json().modifiedAt as string}`), ['PTL-NEU'])
  const { rows } = await ctx.walk<Station>(t, '/api/stations?sort=-modifiedAt&limit=4', 4)
  t.equal(rows.length, ARBEITSPLATZ_ROWS.length + 1)
  t.same(rows.map((s) => s.name), byTime(rows, (s) => s.modifiedAt, (s) => s.id, true).map((s) => s.name), 'in the order of the times shown, NULLs last')
  t.equal(rows[0].name, 'PTL-NEU')
})

t.test('filters through value maps', async (t) => {
  const ctx = await legacyApp(t)
  const names = async (resource: string, query: string): Promise<string[]> => {
    const res = await ctx.get(`/api/${resource}?limit=1000&${query}`)
    t.equal(res.statusCode, 200, query)
    return (res.json() as Page<{ name: string, materialNumber?: string }>).data.map((x) => x.materialNumber ?? x.name).sort()
  }
  const blocked = ARTIKEL_ROWS.filter((r) => r.Gesperrt === 'J').map((r) => r.ArtNr).sort()
  t.ok(blocked.length > 10)
  t.same(await names('materials', 'blocked=true'), blocked, 'blocked=true finds the J rows')
  t.equal((await names('materials', 'blocked=false')).length, ARTIKEL_ROWS.length - blocked.length)
  t.same(await names('materials', 'blocked=true&unit=[null]'), ARTIKEL_ROWS.filter((r) => r.Gesperrt === 'J' && r.ME === null).map((r) => r.ArtNr).sort())

  // LIFT-06 and PTL-05 hold 'v' and 'p': found as they read
  const of = (...codes: string[]) => ARBEITSPLATZ_ROWS.filter((r) => codes.includes(r.WpType.toUpperCase())).map((r) => r.Bezeichnung).sort()
  t.ok(of('V').includes('LIFT-06') && of('P').includes('PTL-05'))
  t.same(await names('stations', 'type=vlm'), of('V'))
  t.same(await names('stations', 'type=[or]vlm;ptl'), of('V', 'P'))
  t.same(await names('stations', 'type=S'), ['SHUTTLE-01'], 'the unknown code is found as it is stored')
  t.same(await names('stations', 'type=[not]vlm'), of('K', 'P', 'M', 'S'))
  t.same(await names('stations', 'type=[nor]vlm;carousel;ptl;manual'), ['SHUTTLE-01'])
  t.same(await names('stations', 'enabled=true'), ARBEITSPLATZ_ROWS.filter((r) => r.Aktiv !== 'N').map((r) => r.Bezeichnung).sort(), "true is 'J' or 'Y'")
  t.same(await names('stations', 'enabled=false'), ['HAND-04', 'KARUSSELL-05'])
})

t.test('writes are held to the columns, and land as the picking system writes them', async (t) => {
  const ctx = await legacyApp(t)
  const { inject, headers, db } = ctx
  const before = Date.now()
  const created = await inject({
    method: 'POST',
    url: '/api/materials',
    headers,
    payload: { materialNumber: 'N-0001', name: 'Winkelverbinder 90x90', description: 'über die API angelegt', barcode: '4012345678901', minStock: 2.5, maxStock: 40, weight: 1.234, blocked: true, blockReason: 'Wareneingangsprüfung' }
  })
  t.equal(created.statusCode, 201)
  const m = created.json() as Material
  t.equal(created.headers.location, `/api/materials/${m.id}`)
  t.match(m, { materialNumber: 'N-0001', unit: 'ST', blocked: true, blockReason: 'Wareneingangsprüfung', stockQuantity: 0, minStock: 2.5, maxStock: 40, weight: 1.234 })
  t.equal(m.createdAt, m.modifiedAt)
  t.ok(Date.parse(m.modifiedAt!) >= before - 5 && Date.parse(m.modifiedAt!) <= Date.now() + 5, 'modifiedAt is now, in UTC')
  const raw = await ctx.rawArtikel('N-0001')
  t.match(raw, { g: 'J', zone: 'A', mandant: 1, stock: 0, unit: 'ST', reason: 'Wareneingangsprüfung' }, 'J written as the code, the unmapped NOT NULL columns got their defaults, and unit the column\'s own (not the API\'s pcs)')
  t.equal(raw.changed, berlinWall(m.modifiedAt!), 'LastChange holds Berlin wall-clock time')
  t.equal(raw.created, berlinWall(m.createdAt!), 'Angelegt too')
  if (db.dialect === 'sqlite') t.match(raw.changedRaw, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/, 'as local text without an offset, as the table holds it')
  t.same(numbersOf((await ctx.get(`/api/materials?modifiedAt=${m.modifiedAt!}`)).json().data), ['N-0001'], 'the returned modifiedAt finds the row')

  await new Promise((resolve) => setTimeout(resolve, 5))
  const updated = await inject({ method: 'PATCH', url: `/api/materials/${m.id}`, headers, payload: { blocked: false, blockReason: null, minStock: 3.125 } })
  t.equal(updated.statusCode, 200)
  const u = updated.json() as Material
  t.match(u, { blocked: false, blockReason: null, minStock: 3.125, createdAt: m.createdAt })
  t.ok(u.modifiedAt! > m.modifiedAt!, 'modifiedAt moves on')
  const raw2 = await ctx.rawArtikel('N-0001')
  t.match(raw2, { g: 'N', reason: null, min: 3.125 })
  t.equal(raw2.changed, berlinWall(u.modifiedAt!))
  const audit = await db.query({ text: `SELECT "Aktion" AS a FROM ${tableName(db.dialect, 'Artikel_Protokoll')} WHERE "ArtID" = @id ORDER BY "ProtID"`, params: [str('id', m.id)] })
  t.same(audit.map((r) => String(r.a)), ['I', 'U'], "the picking system's audit trigger saw both writes")

  // beyond the columns: 400 naming the field and the limit, nothing written
  const count = await ctx.rawCount('Artikel')
  const cases: Array<[string, Record<string, unknown>, RegExp[]]> = [
    ['materialNumber beyond VARCHAR(40)', { materialNumber: 'X'.repeat(41), name: 'x' }, [/materialNumber/, /\b40\b/]],
    ['name beyond VARCHAR(80)', { materialNumber: 'N-0002', name: 'n'.repeat(81) }, [/name/, /\b80\b/]],
    ['unit beyond VARCHAR(10)', { materialNumber: 'N-0002', name: 'x', unit: 'Stück/Karton' }, [/unit/, /\b10\b/]],
    ['barcode beyond VARCHAR(20)', { materialNumber: 'N-0002', name: 'x', barcode: '1'.repeat(21) }, [/barcode/, /\b20\b/]],
    ['description beyond VARCHAR(255)', { materialNumber: 'N-0002', name: 'x', description: 'd'.repeat(256) }, [/description/, /\b255\b/]],
    ['blockReason beyond VARCHAR(100)', { materialNumber: 'N-0002', name: 'x', blockReason: 'r'.repeat(101) }, [/blockReason/, /\b100\b/]],
    ['minStock beyond the scale of DECIMAL(18,3)', { materialNumber: 'N-0002', name: 'x', minStock: 1.2345 }, [/minStock/, /\b3\b/]],
    ['weight beyond the scale of DECIMAL(10,3)', { materialNumber: 'N-0002', name: 'x', weight: 0.0005 }, [/weight/, /\b3\b/]],
    ['weight beyond the precision of DECIMAL(10,3)', { materialNumber: 'N-0002', name: 'x', weight: 10000000 }, [/weight/, /9999999\.999|10000000|decimal\(10,3\)/]],
    ['maxStock beyond the precision of DECIMAL(18,3)', { materialNumber: 'N-0002', name: 'x', maxStock: 1e15 }, [/maxStock/, /999999999999999\.999|1000000000000000|decimal\(18,3\)/]]
  ]
  for (const [name, payload, messages] of cases) {
    const res = await inject({ method: 'POST', url: '/api/materials', headers, payload })
    t.equal(res.statusCode, 400, name)
    t.equal(res.json().code, 'VALIDATION_ERROR', name)
    for (const message of messages) t.match(res.json().message, message, name)
  }
  const a1000 = ctx.ids.get('A-1000')!
  const rawA1000 = await ctx.rawArtikel('A-1000')
  for (const [name, payload, messages] of [
    ['update: name beyond VARCHAR(80)', { name: 'n'.repeat(81) }, [/name/, /\b80\b/]],
    ['update: minStock beyond the scale', { minStock: 0.0001 }, [/minStock/, /\b3\b/]]
  ] as Array<[string, Record<string, unknown>, RegExp[]]>) {
    const res = await inject({ method: 'POST', url: `/api/materials/${a1000}`, headers, payload })
    t.equal(res.statusCode, 400, name)
    for (const message of messages) t.match(res.json().message, message, name)
  }
  t.equal(await ctx.rawCount('Artikel'), count, 'no row was written')
  t.same(await ctx.rawArtikel('A-1000'), rawA1000, 'the updated row is unchanged')

  // a VARCHAR column holds its code page's characters (SQLite and UTF-8 collations: every one);
  // SQL Server would store '?' for the others without an error
  const codePage = db.dialect === 'mssql'
    ? Number((await db.query({ text: "SELECT CONVERT(int, COLLATIONPROPERTY([collation_name], 'CodePage')) AS [cp] FROM sys.columns WHERE [object_id] = OBJECT_ID('wms.Artikel') AND [name] = 'Bezeichnung'", params: [] }))[0].cp)
    : 65001
  const ohm = await inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N-0003', name: 'Widerstand 10 Ω' } })
  if (codePage === 65001) {
    t.equal(ohm.statusCode, 201)
    t.equal(ohm.json().name, 'Widerstand 10 Ω')
    const stored = await db.query({ text: `SELECT "Bezeichnung" AS "name" FROM ${tableName(db.dialect, 'Artikel')} WHERE "ArtNr" = @n`, params: [str('n', 'N-0003')] })
    t.equal(stored[0].name, 'Widerstand 10 Ω', 'stored as sent')
  } else {
    t.equal(ohm.statusCode, 400, `code page ${codePage}`)
    t.match(ohm.json(), { code: 'VALIDATION_ERROR', message: new RegExp(`'name' holds 'Ω' \\(U\\+03A9\\), which its database column \\(varchar, code page ${codePage}\\) cannot store`) })
    t.equal(await ctx.rawCount('Artikel'), count, 'nothing written')
    const found = await ctx.get(`/api/materials?name=${encodeURIComponent('Widerstand 10 Ω')}`)
    t.same(found.json().data, [], 'a filter with the character finds nothing (not a stored "?")')
  }

  // stations: SMALLINT address, VARCHAR(30) name, codes written with the first code of a value
  const stationCount = await ctx.rawCount('Arbeitsplatz')
  for (const [name, payload, messages] of [
    ['address beyond SMALLINT', { name: 'S-X', address: 40000 }, [/address/, /32767/]],
    ['name beyond VARCHAR(30)', { name: 'n'.repeat(31) }, [/name/, /\b30\b/]],
    ['warehouse beyond VARCHAR(10)', { name: 'S-X', warehouse: 'Hochregal-1' }, [/warehouse/, /\b10\b/]],
    ['a type the API does not know', { name: 'S-X', type: 'shuttle' }, [/type/]]
  ] as Array<[string, Record<string, unknown>, RegExp[]]>) {
    const res = await inject({ method: 'POST', url: '/api/stations', headers, payload })
    t.equal(res.statusCode, 400, name)
    for (const message of messages) t.match(res.json().message, message, name)
  }
  t.equal(await ctx.rawCount('Arbeitsplatz'), stationCount, 'no station was written')
  const station = await inject({ method: 'POST', url: '/api/stations', headers, payload: { name: 'PTL-NEU', type: 'ptl', address: 32767, enabled: true } })
  t.equal(station.statusCode, 201)
  t.match(station.json(), { type: 'ptl', address: 32767, enabled: true, warehouse: null })
  const manual = await inject({ method: 'POST', url: '/api/stations', headers, payload: { name: 'HAND-NEU' } })
  t.match(manual.json(), { type: 'manual', enabled: true })
  const off = await inject({ method: 'PATCH', url: `/api/stations/${station.json().id as number}`, headers, payload: { enabled: false, type: 'vlm' } })
  t.match(off.json(), { enabled: false, type: 'vlm', status: 'disabled' })
  const rawStations = await db.query({ text: `SELECT "Bezeichnung" AS name, "WpType" AS type, "Aktiv" AS aktiv, ${fmt(db, 'GeaendertAm')} AS changed FROM ${tableName(db.dialect, 'Arbeitsplatz')} WHERE "Bezeichnung" IN (@a, @b) ORDER BY "Bezeichnung"`, params: [str('a', 'PTL-NEU'), str('b', 'HAND-NEU')] })
  t.same(rawStations.map((r) => ({ name: r.name, type: r.type, aktiv: r.aktiv })), [{ name: 'HAND-NEU', type: 'M', aktiv: 'J' }, { name: 'PTL-NEU', type: 'V', aktiv: 'N' }], "codes written, 'J' as the first code of true")
  t.equal(rawStations[1].changed, (off.json().modifiedAt as string).slice(0, 19).replace('T', ' '), 'the UTC table gets UTC')
})

t.test('what the database refuses: referenced rows, CHECK constraints, triggers', async (t) => {
  const lines: string[] = []
  const ctx = await legacyApp(t, { logLines: lines })
  const { inject, headers, db } = ctx
  const count = await ctx.rawCount('Artikel')

  const referenced = ctx.ids.get('A-1000')!
  t.equal(LAGERPLATZ_ROWS.filter((b) => b.ArtNr === 'A-1000').length, 2)
  const del = await inject({ method: 'DELETE', url: `/api/materials/${referenced}`, headers })
  t.equal(del.statusCode, 409)
  t.match(del.json(), { statusCode: 409, code: 'REFERENCED', error: 'Conflict', message: new RegExp(`^Material ${referenced} is still referenced`) })
  t.notMatch(del.json().message, /Lagerplatz|ArtID|FOREIGN|SQLITE/i, 'no table, column or driver names')
  t.equal((await ctx.get(`/api/materials/${referenced}`)).statusCode, 200, 'the row is still there')
  t.equal(await ctx.rawCount('Artikel'), count)

  const free = ctx.ids.get('C-0001')!
  t.equal((await inject({ method: 'DELETE', url: `/api/materials/${free}`, headers })).statusCode, 204, 'a row no bin references can go')
  t.equal((await ctx.get(`/api/materials/${free}`)).statusCode, 404)
  const audit = await db.query({ text: `SELECT "Aktion" AS a FROM ${tableName(db.dialect, 'Artikel_Protokoll')} WHERE "ArtID" = @id`, params: [str('id', free)] })
  t.same(audit.map((r) => String(r.a)), ['I', 'D'], 'seen by the audit trigger')

  const check = await inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N-0002', name: 'Prüfling', weight: 6000 } })
  t.equal(check.statusCode, 400, 'Gewicht <= 5000 is a CHECK the API does not know')
  t.match(check.json(), { code: 'CONSTRAINT_VIOLATION', message: "The picking system's database refused the value of 'weight' (a CHECK constraint of its table)" })
  t.notMatch(check.json().message, /CK_Artikel|Gewicht/)
  // the log keeps the database's own words, for whoever has to find the constraint
  const refused = lines.map((line) => JSON.parse(line) as { msg?: string, database?: string, reqId?: string }).filter((l) => l.msg === 'the database refused the request')
  t.ok(refused.some((l) => /Gewicht/.test(l.database ?? '')), `the CHECK's text is logged: ${JSON.stringify(refused)}`)
  t.equal(await ctx.rawCount('Artikel'), count - 1, 'nothing written')
  const rawBefore = await ctx.rawArtikel('A-1000')
  const checkUpdate = await inject({ method: 'POST', url: `/api/materials/${referenced}`, headers, payload: { weight: 5000.5 } })
  t.equal(checkUpdate.statusCode, 400)
  t.equal(checkUpdate.json().code, 'CONSTRAINT_VIOLATION')
  t.same(await ctx.rawArtikel('A-1000'), rawBefore, 'the row is unchanged')
  // MaxBestand >= MinBestand is a CHECK too, which the gateway knows: refused before the database sees it
  const order = await inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N-0002', name: 'Prüfling', minStock: 10, maxStock: 5 } })
  t.match(order.json(), { statusCode: 400, code: 'VALIDATION_ERROR', message: "'minStock' (10) may not be above 'maxStock' (5); nothing was written" })
  const orderUpdate = await inject({ method: 'POST', url: `/api/materials/${referenced}`, headers, payload: { maxStock: 50 } })
  t.match(orderUpdate.json(), { statusCode: 400, code: 'VALIDATION_ERROR', message: /^'minStock' \(\d+, the material's current value\) may not be above 'maxStock' \(50\)/ })
  t.same(await ctx.rawArtikel('A-1000'), rawBefore, 'the row is unchanged')
  t.equal(await ctx.rawCount('Artikel'), count - 1, 'nothing written')

  const blocked = ctx.ids.get('A-1001')!
  for (const payload of [{ unit: 'kg' }, { materialNumber: 'A-1001-X' }]) {
    const res = await inject({ method: 'PATCH', url: `/api/materials/${blocked}`, headers, payload })
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.same(res.json(), { statusCode: 400, code: 'CONSTRAINT_VIOLATION', error: 'Bad Request', message: `The picking system refused the change: ${BLOCKED_MESSAGE}` }, "the trigger's own message")
  }
  t.match(await ctx.rawArtikel('A-1001'), { unit: null, g: 'J' }, 'nothing changed')
  t.same(numbersOf((await ctx.get('/api/materials?materialNumber=A-1001')).json().data), ['A-1001'])
  const unblock = await inject({ method: 'PATCH', url: `/api/materials/${blocked}`, headers, payload: { blocked: false, unit: 'kg' } })
  t.equal(unblock.statusCode, 200, 'the trigger lets an unblocking change through')
  t.match(unblock.json(), { blocked: false, unit: 'kg' })
})

t.test('a read-only mapping: reads work, writes answer 405 with Allow', async (t) => {
  const stations: TableMappingConfig = { ...STATIONS_MAPPING, readOnly: true, columns: { ...STATIONS_MAPPING.columns, type: 'WpType' } }
  // the table has a NOT NULL column without default the mapping leaves out: fine when nothing is written
  const ctx = await legacyApp(t, { materials: { ...MATERIALS_MAPPING, readOnly: true }, stations, fixture: { unmappedRequired: true } })
  const { inject, headers } = ctx
  const list = await ctx.get('/api/materials?count=true&limit=5')
  t.equal(list.statusCode, 200)
  t.equal(list.json().meta.total, ARTIKEL_ROWS.length)
  const id = ctx.ids.get('A-1000')!
  t.match((await ctx.get(`/api/materials/${id}`)).json(), { materialNumber: 'A-1000', modifiedAt: '2026-01-15T07:30:00.000Z' })
  const count = await ctx.rawCount('Artikel')
  for (const [method, url] of [['POST', '/api/materials'], ['POST', `/api/materials/${id}`], ['PATCH', `/api/materials/${id}`], ['DELETE', `/api/materials/${id}`], ['POST', '/api/stations'], ['DELETE', `/api/stations/${ctx.stationIds.get('LIFT-01')}`]] as const) {
    const res = await inject({ method, url, headers, ...(method === 'DELETE' ? {} : { payload: { name: 'x' } }) })
    t.equal(res.statusCode, 405, `${method} ${url}`)
    t.equal(res.headers.allow, 'GET, HEAD', `${method} ${url}: Allow`)
    t.match(res.json(), { statusCode: 405, code: 'METHOD_NOT_ALLOWED', message: /read-only/ }, `${method} ${url}`)
  }
  // the method is what is wrong, whatever the body or query: curl -d sends a form, a script plain text or bad JSON
  const odd: Array<[string, Record<string, string>, string]> = [
    ['/api/materials', { 'content-type': 'application/x-www-form-urlencoded' }, 'name=x'],
    ['/api/materials', { 'content-type': 'text/plain' }, 'x'],
    ['/api/materials', { 'content-type': 'application/json' }, '{"name":'],
    ['/api/materials', { 'content-type': 'application/json; charset=latin1' }, '{}'],
    ['/api/materials', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, '{}'],
    ['/api/materials?dryRun=1', { 'content-type': 'application/json' }, '{}'],
    [`/api/materials/${id}`, { 'content-type': 'text/plain' }, 'x']
  ]
  for (const [url, more, payload] of odd) {
    const res = await inject({ method: 'POST', url, headers: { ...headers, ...more }, payload })
    t.equal(res.statusCode, 405, `POST ${url} ${JSON.stringify(more)}`)
    t.equal(res.headers.allow, 'GET, HEAD')
    t.match(res.json(), { code: 'METHOD_NOT_ALLOWED', message: /read-only/ })
  }
  for (const url of ['/api/materials', `/api/materials/${id}`]) {
    const anonymous = await inject({ method: 'POST', url, headers: { 'content-type': 'text/plain' }, payload: 'x' })
    t.equal(anonymous.statusCode, 405, `POST ${url} without a token: the same 405, nothing to protect`)
    t.match(anonymous.json(), { code: 'METHOD_NOT_ALLOWED', message: /read-only/ })
  }
  t.equal(await ctx.rawCount('Artikel'), count)
  t.equal((await ctx.get(`/api/materials/${id}`)).statusCode, 200, 'and nothing was deleted')
  for (const url of ['/api/materials', `/api/materials/${id}`]) {
    const put = await inject({ method: 'PUT', url, headers, payload: { name: 'x' } })
    t.equal(put.statusCode, 405, `PUT ${url}`)
    t.equal(put.headers.allow, 'GET, HEAD', `PUT ${url}: the same Allow as the writes' own 405`)
  }

  // no value map on the type column: every stored code is outside the API's values, and the list still works
  const s = await ctx.get('/api/stations?limit=100&sort=name')
  t.equal(s.statusCode, 200)
  const types = new Map((s.json() as Page<Station>).data.map((x) => [x.name, x.type]))
  t.same(types.get('LIFT-01'), 'V')
  t.same(types.get('SHUTTLE-01'), 'S')
  t.same([...new Set(types.values())].sort(), ['K', 'M', 'P', 'S', 'V', 'p', 'v'], 'as stored, lower case included')
})

/** The fixture on a database of its own, without build(): for starts that must fail and for a captured log. */
async function fixtureDatabase (t: Test, fixture: FixtureOptions = {}) {
  await clearMssql()
  const dir = mkdtempSync(join(tmpdir(), 'pg-legacy-'))
  const url = testDatabaseUrl(dir)
  const config = validateConfig({
    database: { url },
    auth: { jwtSecret: randomBytes(32).toString('hex'), argon2: TEST_ARGON2 },
    licence: { logins: 10 },
    logging: { level: 'silent' },
    // as build() does: on a busy machine the overload check's 503 is not what these tests look at
    server: { maxEventLoopDelayMs: 0 },
    mapping: { materials: MATERIALS_MAPPING, stations: STATIONS_MAPPING }
  })
  const db = openDatabase(url, { create: true, logger: silent, connectTimeoutMs: 5000, requestTimeoutMs: 15000 })
  t.teardown(async () => {
    await db.close()
    rmSync(dir, { recursive: true, force: true })
  })
  if (url.startsWith('mssql:')) await db.execute({ text: 'DROP TABLE IF EXISTS [dbo].[gateway_users]', params: [] })
  await createLegacyFixture(db, fixture)
  await initDatabase(db, { demo: false, mappings: mappingsOf(config), argon2: TEST_ARGON2, adminPassword: ADMIN_PASSWORD, print: () => {} })
  return { db, config }
}

t.test('a NOT NULL column without default that the mapping leaves out stops the start', async (t) => {
  const { db, config } = await fixtureDatabase(t, { unmappedRequired: true })
  const err = await buildApp(config, { db }).then(() => undefined, (e: unknown) => e)
  t.type(err, SchemaMismatchError)
  t.match((err as Error).message, /materials: column 'Kostenstelle' is NOT NULL without a default and not mapped/)
  t.match((err as Error).message, /readOnly/, 'and says how to serve it anyway')
  t.match((err as Error).message, /mapping\.materials\.defaults: \{"Kostenstelle": …\}/, 'or how to fill it')
  t.notMatch((err as Error).message, /db init/, 'db init would not help: the picking system\'s table exists')
})

t.test('mapping.defaults fills an unmapped NOT NULL column on every create; a wrong entry stops the start', async (t) => {
  const { db, config } = await fixtureDatabase(t, { unmappedRequired: true })
  const withDefaults = (defaults: Record<string, string | number>): typeof config => ({ ...config, mapping: { ...config.mapping, materials: { ...MATERIALS_MAPPING, defaults } } })
  for (const [defaults, message] of [
    [{ Kostenstele: '4711' }, /materials\.defaults: the table has no column 'Kostenstele'/],
    [{ Kostenstelle: '4711', ArtNr: 'X' }, /materials\.defaults: column 'ArtNr' is mapped to a field, whose value a create sets; remove it from defaults/],
    [{ Kostenstelle: 'ABCDEFGHIJK' }, /materials\.defaults\.Kostenstelle: must be at most 10 characters long \(its database column's limit\), got 11/],
    [{ Kostenstelle: '4711', Mandant: 'eins' }, /materials\.defaults\.Mandant: the column \(int(?:eger)?\) holds numbers; give a number, got "eins"/],
    [{ Kostenstelle: '4711', mandant: 1, MANDANT: 2 }, /materials\.defaults: 'mandant' and 'MANDANT' name the same column/]
  ] as const) {
    const err = await buildApp(withDefaults(defaults), { db }).then(async (app) => { await app.close() }, (e: unknown) => e)
    t.type(err, SchemaMismatchError)
    t.match((err as Error).message, message)
  }
  const app = await buildApp(withDefaults({ kostenstelle: '4711' }), { db })
  t.teardown(async () => { await app.close() })
  const login = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })
  const headers = { authorization: `Bearer ${String(login.json().accessToken)}` }
  const created = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'K-1', name: 'Mit Kostenstelle' } })
  t.equal(created.statusCode, 201, created.body)
  const [row] = await db.query({ text: `SELECT "Kostenstelle" AS k FROM ${tableName(db.dialect, 'Artikel')} WHERE "ArtNr" = 'K-1'`, params: [] })
  t.equal(row.k, '4711', 'written as configured, the column matched without regard to case')
  t.notOk('Kostenstelle' in created.json(), 'not a field of the API')
})

t.test('a stored code no value map knows is logged once', async (t) => {
  const { db, config } = await fixtureDatabase(t)
  const lines: Array<Record<string, unknown>> = []
  const logger = pino({ level: 'warn' }, { write: (line: string) => { lines.push(JSON.parse(line)) } })
  const app = await buildApp(config, { db, logger })
  t.teardown(() => app.close())
  await app.ready()
  const login = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })
  const headers = { authorization: `Bearer ${login.json().accessToken as string}` }
  for (let i = 0; i < 3; i++) t.equal((await app.inject({ method: 'GET', url: '/api/stations?limit=100', headers })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/api/stations?type=S', headers })).json().data[0].type, 'S')
  const unknown = lines.filter((l) => l.level === 40 && l.field === 'type')
  t.equal(unknown.length, 1, 'one warning for the field and code')
  t.match(unknown[0], { resource: 'stations', field: 'type', value: 'S', msg: /mapping\.stations\.columns\.type\.values/ })
  t.equal(lines.filter((l) => l.field === 'enabled').length, 0, "'Y' is a known code")
})

t.test('OpenAPI shows the columns: lengths from the table, nullability in responses', async (t) => {
  const ctx = await legacyApp(t)
  const res = await ctx.get('/api/openapi.json')
  t.equal(res.statusCode, 200)
  const doc = res.json() as { paths: Record<string, Record<string, any>> }
  const path = (p: string) => doc.paths[p] ?? doc.paths[`${p}/`]
  const create = path('/api/materials')?.post?.requestBody?.content?.['application/json']?.schema
  t.ok(create, 'the create body is documented')
  t.equal(create?.properties?.materialNumber?.maxLength, 40, 'materialNumber: VARCHAR(40)')
  t.equal(create?.properties?.name?.maxLength, 80, 'name: VARCHAR(80)')
  t.equal(create?.properties?.unit?.maxLength ?? create?.properties?.unit?.anyOf?.find((s: any) => s.type === 'string')?.maxLength, 10, 'unit: VARCHAR(10)')
  const item = path('/api/materials/{id}')?.get?.responses?.['200']?.content?.['application/json']?.schema
  t.ok(item, 'the read response is documented')
  const nullable = (s: any): boolean => s !== undefined && (s.nullable === true || s.type === 'null' || (Array.isArray(s.type) && s.type.includes('null')) ||
    [...(s.anyOf ?? []), ...(s.oneOf ?? [])].some((x: any) => nullable(x)))
  t.ok(nullable(item?.properties?.unit), 'unit: ME is nullable')
  t.ok(nullable(item?.properties?.modifiedAt), 'modifiedAt: LastChange is nullable')
  t.notOk(nullable(item?.properties?.materialNumber), 'materialNumber: NOT NULL')
  if (MSSQL) t.notOk(nullable(item?.properties?.createdAt), 'createdAt: Angelegt is NOT NULL')
  // SQLite's NOT NULL DATETIME column holds any text, and a time the gateway cannot read is null (README)
  else t.ok(nullable(item?.properties?.createdAt), 'createdAt: nullable on SQLite, whatever Angelegt declares')
})
