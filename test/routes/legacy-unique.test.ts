// Unique fields on a picking system's table that does not keep them unique itself (a plain index),
// and a composite unique index of its own: 409s that name what was hit, and nothing written.
import t from 'tap'
import { openDatabase } from '../../src/db/index.js'
import { replacingUniqueColumns } from '../../src/db/sqlite.js'
import type { Database } from '../../src/db/types.js'
import { build, testDatabaseUrl } from '../helpers/build.js'
import { narrowMaterials } from '../helpers/legacy-fixture.js'
import { tempDir } from '../helpers/temp.js'

/** ArtNr has a plain index only (two rows share D-1 already); EAN and ME are unique together. */
async function createTable (db: Database): Promise<void> {
  const mssql = db.dialect === 'mssql'
  const ddl = mssql
    ? [
        'DROP TABLE IF EXISTS [dbo].[ArtIdx]',
        'CREATE TABLE [dbo].[ArtIdx] ([ArtID] INT IDENTITY(1,1) PRIMARY KEY, [ArtNr] VARCHAR(40) NOT NULL, [Bez] VARCHAR(80) NOT NULL, [EAN] VARCHAR(20) NULL, [ME] VARCHAR(4) NOT NULL)',
        'CREATE INDEX [IX_ArtIdx_ArtNr] ON [dbo].[ArtIdx] ([ArtNr])',
        'CREATE UNIQUE INDEX [UX_ArtIdx_EAN_ME] ON [dbo].[ArtIdx] ([EAN], [ME])'
      ]
    : [
        'CREATE TABLE "ArtIdx" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(40) NOT NULL, "Bez" VARCHAR(80) NOT NULL, "EAN" VARCHAR(20), "ME" VARCHAR(4) NOT NULL)',
        'CREATE INDEX "IX_ArtIdx_ArtNr" ON "ArtIdx" ("ArtNr")',
        'CREATE UNIQUE INDEX "UX_ArtIdx_EAN_ME" ON "ArtIdx" ("EAN", "ME")'
      ]
  for (const text of ddl) await db.execute({ text, params: [] })
  for (const [artNr, ean] of [['A-1', '4000000000001'], ['D-1', '4000000000002'], ['D-1', '4000000000003']]) {
    await db.execute({ text: 'INSERT INTO "ArtIdx" ("ArtNr", "Bez", "EAN", "ME") VALUES (@a, @b, @e, \'ST\')', params: [{ name: 'a', kind: 'string', value: artNr }, { name: 'b', kind: 'string', value: `Artikel ${artNr}` }, { name: 'e', kind: 'string', value: ean }] })
  }
}

const mapping = narrowMaterials('ArtIdx', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', barcode: 'EAN', unit: 'ME' })

t.test('a unique field on a column without a unique index: the gateway refuses the duplicate itself', async (t) => {
  const ctx = await build(t, { mapping: { materials: mapping } }, createTable)
  const { app } = ctx
  const headers = ctx.auth(ctx.adminToken)
  const count = async (): Promise<number> => Number((await ctx.db.query({ text: 'SELECT COUNT(*) AS n FROM "ArtIdx"', params: [] }))[0].n)

  const dup = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'A-1', name: 'Zweiter' } })
  t.equal(dup.statusCode, 409, dup.body)
  t.match(dup.json(), { code: 'CONFLICT', message: "materialNumber 'A-1' already exists" })
  t.equal(await count(), 3, 'nothing written')

  const fresh = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N-1', name: 'Neu' } })
  t.equal(fresh.statusCode, 201, fresh.body)
  const taken = await app.inject({ method: 'PATCH', url: fresh.headers.location as string, headers, payload: { materialNumber: 'A-1' } })
  t.equal(taken.statusCode, 409, taken.body)
  t.equal((await app.inject({ method: 'GET', url: fresh.headers.location as string, headers })).json().materialNumber, 'N-1')

  // the two rows the table already holds with D-1 stay editable, as an edit form sends them
  const [first] = (await app.inject({ method: 'GET', url: '/api/materials?materialNumber=D-1&sort=id', headers })).json().data as Array<{ id: number }>
  const edit = await app.inject({ method: 'PATCH', url: `/api/materials/${first.id}`, headers, payload: { materialNumber: 'D-1', name: 'Geändert' } })
  t.equal(edit.statusCode, 200, edit.body)
})

t.test("a composite unique index of the picking system's: the 409 names the fields it spans, not a unique field that is free", async (t) => {
  const ctx = await build(t, { mapping: { materials: mapping } }, createTable)
  const headers = ctx.auth(ctx.adminToken)
  const clash = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N-2', name: 'Neu', barcode: '4000000000001', unit: 'ST' } })
  t.equal(clash.statusCode, 409, clash.body)
  t.notMatch(clash.json().message, /materialNumber/, 'N-2 is free')
  if (ctx.db.dialect === 'sqlite') {
    t.equal(clash.json().message, "Another material already has this combination of values, which the picking system's table keeps unique: barcode '4000000000001', unit 'ST'")
  }
  const other = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N-2', name: 'Neu', barcode: '4000000000001', unit: 'KG' } })
  t.equal(other.statusCode, 201, 'the same barcode in another unit is another key')
  const update = await ctx.app.inject({ method: 'PATCH', url: other.headers.location as string, headers, payload: { unit: 'ST' } })
  t.equal(update.statusCode, 409, update.body)
  if (ctx.db.dialect === 'sqlite') t.match(update.json().message, "barcode (as stored), unit 'ST'")
})

t.test('SQLite: which columns count as unique', async (t) => {
  const dir = tempDir(t, 'pg-unique-')
  const db = openDatabase(`sqlite:${dir}/u.db`, { create: true, logger: { info () {}, warn () {}, error () {} } })
  t.teardown(async () => { await db.close() })
  await db.execute({ text: 'CREATE TABLE "U" ("Id" INTEGER PRIMARY KEY, "A" TEXT UNIQUE, "B" TEXT, "C" TEXT, "D" TEXT, "E" TEXT, "F" TEXT)', params: [] })
  await db.execute({ text: 'CREATE UNIQUE INDEX "UX_B" ON "U" ("B")', params: [] })
  await db.execute({ text: 'CREATE UNIQUE INDEX "UX_CD" ON "U" ("C", "D")', params: [] })
  await db.execute({ text: 'CREATE UNIQUE INDEX "UX_E" ON "U" ("E") WHERE "E" <> \'\'', params: [] })
  await db.execute({ text: 'CREATE INDEX "IX_F" ON "U" ("F")', params: [] })
  await db.execute({ text: 'CREATE TABLE "K" ("Nr" TEXT PRIMARY KEY, "X" TEXT)', params: [] })
  const unique = async (table: string): Promise<string[]> => (await db.columns({ table, columns: {} } as never)).filter((c) => c.unique === true).map((c) => c.name)
  t.same(await unique('U'), ['Id', 'A', 'B'], 'the rowid, a UNIQUE constraint, a unique index; not a composite, partial or plain one')
  t.same(await unique('K'), ['Nr'], 'a TEXT PRIMARY KEY')
})

t.test('a stock column NOT NULL without a default: a create writes the stock a new material has, 0', async (t) => {
  const ctx = await build(t, { mapping: { materials: narrowMaterials('ArtBestand', { id: 'ID', materialNumber: 'ArtNr', name: 'Bez', stockQuantity: 'Bestand' }) } }, async (db) => {
    const mssql = db.dialect === 'mssql'
    if (mssql) await db.execute({ text: 'DROP TABLE IF EXISTS [dbo].[ArtBestand]', params: [] })
    await db.execute({ text: `CREATE TABLE ${mssql ? '[dbo].[ArtBestand] ([ID] INT IDENTITY(1,1) PRIMARY KEY' : '"ArtBestand" ("ID" INTEGER PRIMARY KEY'}, "ArtNr" VARCHAR(40) NOT NULL UNIQUE, "Bez" VARCHAR(100) NOT NULL, "Bestand" INTEGER NOT NULL)`, params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'Q1', name: 'q' } })
  t.equal(created.statusCode, 201, created.body)
  t.equal(created.json().stockQuantity, 0)
  t.equal((await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'Q2', name: 'q', stockQuantity: 5 } })).statusCode, 400, 'still not the client\'s to set')
})

t.test('a unique text with white space at either end is refused: it would look like another', async (t) => {
  const ctx = await build(t, { mapping: { materials: mapping } }, createTable)
  const headers = ctx.auth(ctx.adminToken)
  for (const materialNumber of ['A-1 ', ' A-1', 'NEU\u00a0']) {
    const res = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber, name: 'x' } })
    t.equal(res.statusCode, 400, JSON.stringify(materialNumber))
    t.match(res.json().message, /'materialNumber' may not begin or end with white space/)
  }
  // a tab is a control character, which no material number holds (VISIBLE_KEY)
  t.match((await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'NEU\t', name: 'x' } })).json().message, /^body\/materialNumber must hold a character other than spaces, and no control or invisible characters/)
  const [row] = await ctx.db.query({ text: 'SELECT "ArtID" AS id FROM "ArtIdx" WHERE "ArtNr" = \'A-1\'', params: [] })
  t.equal((await ctx.app.inject({ method: 'PATCH', url: `/api/materials/${String(row.id)}`, headers, payload: { materialNumber: 'A-2 ' } })).statusCode, 400)
  // a legacy row that already has it stays editable with it
  await ctx.db.execute({ text: 'UPDATE "ArtIdx" SET "ArtNr" = \'A-1 \' WHERE "ArtID" = @id', params: [{ name: 'id', kind: 'integer', value: Number(row.id) }] })
  const read = (await ctx.app.inject({ method: 'GET', url: `/api/materials/${String(row.id)}`, headers })).json()
  const back = await ctx.app.inject({ method: 'PATCH', url: `/api/materials/${String(row.id)}`, headers, payload: { materialNumber: read.materialNumber, name: 'Neu' } })
  t.equal(back.statusCode, 200, back.body)
})

t.test('SQLite: a unique index over a mapped and an unmapped column: the 409 names the mapped field', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && "SQL Server's message names only the index" }, async (t) => {
  const ctx = await build(t, { mapping: { materials: { ...narrowMaterials('ArtMandant', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', barcode: 'EAN' }), defaults: { Mandant: 1 } } } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "ArtMandant" ("ArtID" INTEGER PRIMARY KEY, "Mandant" INTEGER NOT NULL, "ArtNr" VARCHAR(20) NOT NULL UNIQUE, "Bez" VARCHAR(40) NOT NULL, "EAN" VARCHAR(20))', params: [] })
    await db.execute({ text: 'CREATE UNIQUE INDEX "UX_Mandant_EAN" ON "ArtMandant" ("Mandant", "EAN")', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  t.equal((await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'E-1', name: 'x', barcode: '400' } })).statusCode, 201)
  const clash = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'E-2', name: 'x', barcode: '400' } })
  t.equal(clash.statusCode, 409)
  t.equal(clash.json().message, "Another material already has these values in a unique key of the picking system's table (over barcode and columns the gateway does not map)")
})

t.test('SQLite: a unique column without a declared type keeps 12 and \'12\' apart, which the API shows alike: the gateway refuses the second itself', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite stores any value in any column' }, async (t) => {
  const ctx = await build(t, { mapping: { materials: narrowMaterials('ArtLose', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez' }) } }, async (db: Database) => {
    await db.execute({ text: 'CREATE TABLE "ArtLose" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" UNIQUE NOT NULL, "Bez" VARCHAR(80) NOT NULL)', params: [] })
    // another program wrote the article number as a number
    await db.execute({ text: 'INSERT INTO "ArtLose" VALUES (1, 12, \'als Zahl\'), (2, \'A-1\', \'als Text\')', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials/1', headers })).json().materialNumber, '12')
  const dup = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: '12', name: 'Zweiter' } })
  t.equal(dup.statusCode, 409, 'before: a 201, and two materials showed materialNumber "12"')
  t.same(dup.json(), { statusCode: 409, code: 'CONFLICT', error: 'Conflict', message: "materialNumber '12' already exists" })
  const moved = await ctx.app.inject({ method: 'PATCH', url: '/api/materials/2', headers, payload: { materialNumber: '12' } })
  t.equal(moved.statusCode, 409, moved.body)
  t.equal((await ctx.app.inject({ method: 'PATCH', url: '/api/materials/1', headers, payload: { materialNumber: '12', name: 'gleich' } })).statusCode, 200, 'its own number sent back is no duplicate')
  t.equal((await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: '012', name: 'anders' } })).statusCode, 201, "'012' is another number's text")
  const [row] = await ctx.db.query({ text: 'SELECT COUNT(*) AS n FROM "ArtLose"', params: [] })
  t.equal(Number(row.n), 3)
})

t.test('SQLite: a unique column declared ON CONFLICT REPLACE deletes the row that holds the value: the gateway refuses the duplicate itself, and no row goes', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'a SQLite conflict clause' }, async (t) => {
  const ctx = await build(t, { mapping: { materials: narrowMaterials('Anagrafica', { id: 'Id', materialNumber: 'Codice', name: 'Descrizione', barcode: 'Barre' }) } }, async (db: Database) => {
    await db.execute({ text: 'CREATE TABLE "Anagrafica" ("Id" INTEGER PRIMARY KEY AUTOINCREMENT, "Codice" TEXT NOT NULL UNIQUE ON CONFLICT REPLACE, "Descrizione" TEXT NOT NULL ON CONFLICT REPLACE DEFAULT \'?\', "Barre" TEXT, UNIQUE ("Barre") ON CONFLICT REPLACE) STRICT', params: [] })
    await db.execute({ text: 'CREATE TABLE "Movimenti" ("Id" INTEGER PRIMARY KEY, "Articolo" INTEGER NOT NULL REFERENCES "Anagrafica" ("Id") ON DELETE CASCADE)', params: [] })
    await db.execute({ text: 'INSERT INTO "Anagrafica" ("Codice", "Descrizione", "Barre") VALUES (\'CAF-001\', \'Caffè\', \'800\'), (\'ZUC-002\', \'Zucchero\', NULL)', params: [] })
    await db.execute({ text: 'INSERT INTO "Movimenti" ("Articolo") VALUES (1), (1)', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const rows = async (): Promise<string> => JSON.stringify(await ctx.db.query({ text: 'SELECT a."Id" AS id, a."Codice" AS code, a."Barre" AS ean, (SELECT COUNT(*) FROM "Movimenti" m WHERE m."Articolo" = a."Id") AS moves FROM "Anagrafica" a ORDER BY a."Id"', params: [] }))
  const before = await rows()
  const dup = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'CAF-001', name: 'Doppione' } })
  t.equal(dup.statusCode, 409, 'before: a 201, and material 1 and its movements were deleted without a word')
  t.same(dup.json(), { statusCode: 409, code: 'CONFLICT', error: 'Conflict', message: "materialNumber 'CAF-001' already exists" })
  const renamed = await ctx.app.inject({ method: 'PATCH', url: '/api/materials/2', headers, payload: { materialNumber: 'CAF-001' } })
  t.equal(renamed.statusCode, 409, renamed.body)
  // a mapped field that is no unique field of the API, on such a column: the same
  const ean = await ctx.app.inject({ method: 'PATCH', url: '/api/materials/2', headers, payload: { barcode: '800' } })
  t.equal(ean.statusCode, 409, ean.body)
  t.equal(ean.json().message, "barcode '800' already exists")
  t.equal(await rows(), before, 'nothing deleted, nothing changed')
  t.equal((await ctx.app.inject({ method: 'PATCH', url: '/api/materials/1', headers, payload: { materialNumber: 'CAF-001', barcode: '800', name: 'Caffè in grani' } })).statusCode, 200, "a row's own values sent back are no duplicate")
  t.equal((await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'NEW-3', name: 'Nuovo', barcode: '801' } })).statusCode, 201)
})

t.test('SQLite: which unique columns replace a duplicate instead of refusing it', async (t) => {
  t.same([...replacingUniqueColumns('CREATE TABLE "A" ("Id" INTEGER PRIMARY KEY ON CONFLICT REPLACE, "Co dice" TEXT NOT NULL UNIQUE ON CONFLICT REPLACE, b TEXT NOT NULL ON CONFLICT REPLACE DEFAULT \'x\' UNIQUE, c TEXT UNIQUE ON CONFLICT ABORT, d TEXT REFERENCES p (x) ON DELETE CASCADE, CONSTRAINT u UNIQUE ([E e] COLLATE NOCASE) ON CONFLICT REPLACE, UNIQUE (f, g) ON CONFLICT REPLACE)')],
    ['id', 'co dice', 'e e'], 'a column UNIQUE or PRIMARY KEY ON CONFLICT REPLACE, or a table constraint of one column; not NOT NULL ON CONFLICT REPLACE, nor a composite one')
})
