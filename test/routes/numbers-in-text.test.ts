// SQLite: quantities a legacy program keeps in TEXT columns ('12', '2.5'): read, filtered, sorted and paged as numbers.
import t from 'tap'
import type { Database } from '../../src/db/types.js'
import { build, testDatabaseUrl, walkPages } from '../helpers/build.js'
import { narrowMaterials } from '../helpers/legacy-fixture.js'

const STOCK: Array<[string, string | null]> = [['A-1', '10'], ['A-2', '9'], ['A-3', '100'], ['A-4', '2.5'], ['A-5', ''], ['A-6', '9'], ['A-7', 'n/a']]

t.test('SQLite: number fields on TEXT columns compare as numbers', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const ctx = await build(t, {
    mapping: { materials: narrowMaterials('ArtText', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', minStock: 'MinLager', stockQuantity: 'Saldo' }) }
  }, async (db: Database) => {
    await db.execute({ text: 'CREATE TABLE "ArtText" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" TEXT NOT NULL UNIQUE, "Bez" TEXT NOT NULL, "MinLager" TEXT, "Saldo" TEXT NOT NULL DEFAULT \'0\')', params: [] })
    for (const [nr, saldo] of STOCK) {
      await db.execute({ text: 'INSERT INTO "ArtText" ("ArtNr", "Bez", "Saldo") VALUES (@nr, \'x\', @s)', params: [{ name: 'nr', kind: 'string', value: nr }, { name: 's', kind: 'string', value: saldo }] })
    }
  })
  const headers = ctx.auth(ctx.adminToken)
  const numbers = async (query: string): Promise<string[]> => ((await ctx.app.inject({ method: 'GET', url: `/api/materials?${query}`, headers })).json().data as Array<{ materialNumber: string }>).map((m) => m.materialNumber)

  const one = (await ctx.app.inject({ method: 'GET', url: '/api/materials?materialNumber=A-4', headers })).json().data[0]
  t.equal(one.stockQuantity, 2.5, 'read as a number')
  t.same(await numbers('stockQuantity=[gt]9&sort=id'), ['A-1', 'A-3'], "'10' and '100' are above 9, '9' is not (as text, '9' > '10')")
  t.same(await numbers('stockQuantity=9&sort=id'), ['A-2', 'A-6'])
  t.same(await numbers('sort=stockQuantity,id'), ['A-5', 'A-7', 'A-4', 'A-2', 'A-6', 'A-1', 'A-3'], 'NULL (and text that is no number, which reads as null) first, then in numeric order')
  t.same(await numbers('stockQuantity=[null]&sort=id'), ['A-5', 'A-7'], 'found as it reads')
  t.same(await numbers('stockQuantity=[lt]1&sort=id'), [], "'n/a' is no 0")

  // a walk of pages of one by the number, every row once, in order
  const walked: string[] = []
  let url: string | undefined = '/api/materials?limit=1&sort=-stockQuantity'
  while (url !== undefined) {
    const page: { data: Array<{ materialNumber: string }>, meta: { next?: string } } = (await ctx.app.inject({ method: 'GET', url, headers })).json()
    walked.push(...page.data.map((m) => m.materialNumber))
    url = page.meta.next
  }
  t.same(walked.slice(0, 5), ['A-3', 'A-1', 'A-2', 'A-6', 'A-4'])
  t.same(walked.slice(5).sort(), ['A-5', 'A-7'], 'every row once')

  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N-1', name: 'Neu', minStock: 12.5 } })
  t.equal(created.statusCode, 201, created.body)
  t.equal(created.json().minStock, 12.5)
  const [row] = await ctx.db.query({ text: 'SELECT "MinLager" AS m, typeof("MinLager") AS t FROM "ArtText" WHERE "ArtNr" = \'N-1\'', params: [] })
  t.same([row.m, row.t], ['12.5', 'text'], 'stored as text, as the column keeps it')
  t.same(await numbers('minStock=[gte]12.5'), ['N-1'])
  const whole = await ctx.app.inject({ method: 'PATCH', url: created.headers.location as string, headers, payload: { minStock: 12 } })
  t.equal(whole.json().minStock, 12)
  const [again] = await ctx.db.query({ text: 'SELECT "MinLager" AS m FROM "ArtText" WHERE "ArtNr" = \'N-1\'', params: [] })
  t.equal(again.m, '12', 'a whole number as the legacy program writes it, not 12.0')
})

t.test('SQLite: a column of type ANY in a STRICT table keeps values as given, as one without a declared type', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const ctx = await build(t, {
    mapping: { materials: narrowMaterials('ArtStrict', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', description: 'Notiz', stockQuantity: 'Saldo' }) }
  }, async (db: Database) => {
    // before: refused at start as NUMERIC affinity, which ANY is only outside a STRICT table
    await db.execute({ text: 'CREATE TABLE "ArtStrict" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" TEXT NOT NULL UNIQUE, "Bez" TEXT NOT NULL, "Notiz" ANY, "Saldo" ANY) STRICT', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtStrict" ("ArtNr", "Bez", "Notiz", "Saldo") VALUES (\'A-1\', \'a\', \'n\', 10), (\'A-2\', \'b\', NULL, \'9\'), (\'A-3\', \'c\', NULL, \'2.5\')', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const numbers = async (query: string): Promise<string[]> => ((await ctx.app.inject({ method: 'GET', url: `/api/materials?${query}`, headers })).json().data as Array<{ materialNumber: string }>).map((m) => m.materialNumber)
  t.same(await numbers('stockQuantity=[gt]5&sort=stockQuantity'), ['A-2', 'A-1'], "'9' text and 10 compare as the numbers they read as")
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N-1', name: 'Neu', description: '0123' } })
  t.equal(created.statusCode, 201, created.body)
  t.equal(created.json().description, '0123')
  const [row] = await ctx.db.query({ text: 'SELECT "Notiz" AS n, typeof("Notiz") AS t FROM "ArtStrict" WHERE "ArtNr" = \'N-1\'', params: [] })
  t.same([row.n, row.t], ['0123', 'text'], 'kept as text, leading zero and all')
  t.same(await numbers('description=0123'), ['N-1'])
})

t.test('SQLite: a flag with J/N codes in a STRICT table\'s ANY column: the codes are written as text, as the column keeps them', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const flagged = narrowMaterials('ArtStrictFlag', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez' })
  const ctx = await build(t, {
    mapping: { materials: { ...flagged, columns: { ...flagged.columns, blocked: { column: 'Gesperrt', values: { true: 'J', false: 'N' } } } } }
  }, async (db: Database) => {
    // before: a start-up error, "(no declared type) holds numbers, but the value map writes "J""
    await db.execute({ text: 'CREATE TABLE "ArtStrictFlag" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" TEXT NOT NULL UNIQUE, "Bez" TEXT NOT NULL, "Gesperrt" ANY NOT NULL DEFAULT \'N\') STRICT', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtStrictFlag" ("ArtNr", "Bez", "Gesperrt") VALUES (\'A-1\', \'a\', \'J\'), (\'A-2\', \'b\', \'N\')', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const list = (await ctx.app.inject({ method: 'GET', url: '/api/materials?sort=id', headers })).json().data as Array<{ materialNumber: string, blocked: boolean }>
  t.same(list.map((m) => [m.materialNumber, m.blocked]), [['A-1', true], ['A-2', false]])
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N-1', name: 'Neu', blocked: true } })
  t.equal(created.statusCode, 201, created.body)
  const [row] = await ctx.db.query({ text: 'SELECT "Gesperrt" AS g, typeof("Gesperrt") AS t FROM "ArtStrictFlag" WHERE "ArtNr" = \'N-1\'', params: [] })
  t.same([row.g, row.t], ['J', 'text'])
})

t.test('SQLite: a station name kept as a number in a column without a declared type sorts in memory (a live filter) as the database sorts it: numbers first, by value, then text', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const ctx = await build(t, {
    mapping: { stations: { table: 'PlatzU', columns: { id: 'PlatzID', name: 'Name', description: 'Info', type: null, warehouse: null, controllerId: null, address: null, enabled: null, createdAt: null, modifiedAt: null } } }
  }, async (db: Database) => {
    await db.execute({ text: 'CREATE TABLE "PlatzU" ("PlatzID" INTEGER PRIMARY KEY, "Name" NOT NULL UNIQUE, "Info")', params: [] })
    // an old program wrote numbers; '10' and '7b' are text, as the gateway writes a name
    await db.execute({ text: 'INSERT INTO "PlatzU" VALUES (1, 12, NULL), (2, \'PTL-01\', NULL), (3, 9, NULL), (4, \'10\', NULL), (5, 2.5, NULL), (6, \'7b\', NULL), (7, 100, NULL)', params: [] })
  })
  const [types] = await ctx.db.query({ text: 'SELECT group_concat(typeof("Name")) AS t FROM (SELECT "Name" FROM "PlatzU" ORDER BY "PlatzID")', params: [] })
  t.equal(types.t, 'integer,text,integer,text,real,text,integer')
  const database = ['2.5', '9', '12', '100', '10', '7b', 'PTL-01']
  t.same(await walkPages(t, ctx, '/api/stations?limit=3&sort=name', 10, 'name'), database, 'the database\'s order')
  // before: by text alone, '10', '100', '12', '2.5', '7b', '9', 'PTL-01'
  t.same(await walkPages(t, ctx, '/api/stations?limit=3&sort=name&status=offline', 10, 'name'), database, 'in memory, every station offline: the same order')
  t.same(await walkPages(t, ctx, '/api/stations?limit=2&sort=-name&status=offline', 10, 'name'), [...database].reverse(), 'and descending')
  t.same(await walkPages(t, ctx, '/api/stations?limit=2&sort=status,name', 10, 'name'), database, 'sorted by a live field, then the name')
})
