// A picking system's table whose id column has neither identity nor default: mapping.newIds "max+1".
import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TableMappingConfig } from '../../schemas/config.js'
import { buildApp } from '../../src/app.js'
import { initDatabase } from '../../src/bootstrap.js'
import { mappingsOf, validateConfig } from '../../src/config.js'
import { SchemaMismatchError } from '../../src/db/errors.js'
import { openDatabase } from '../../src/db/index.js'
import type { Database } from '../../src/db/types.js'
import { ADMIN_PASSWORD, TEST_ARGON2, build, testDatabaseUrl } from '../helpers/build.js'
import { narrowMaterials } from '../helpers/legacy-fixture.js'

const silent = { info () {}, warn () {}, error () {} }

/** Numbered by the picking system as MAX(Nr) + 1; gaps where rows were deleted. */
async function createTable (db: Database, identity = false): Promise<void> {
  const mssql = db.dialect === 'mssql'
  if (mssql) await db.execute({ text: 'DROP TABLE IF EXISTS [dbo].[ArtOhneId]', params: [] })
  const nr = mssql ? `[Nr] INT${identity ? ' IDENTITY(1,1)' : ''} NOT NULL CONSTRAINT [PK_ArtOhneId] PRIMARY KEY` : `"Nr" INTEGER NOT NULL UNIQUE${identity ? ' PRIMARY KEY' : ''}`
  await db.execute({ text: `CREATE TABLE ${mssql ? '[dbo].[ArtOhneId]' : '"ArtOhneId"'} (${nr}, "ArtNr" VARCHAR(40) NOT NULL UNIQUE, "Bez" VARCHAR(80) NOT NULL, "Geaendert" DATETIME NULL)`, params: [] })
  if (identity) return
  for (const [nr, artNr] of [[5, 'A-5'], [17, 'A-17'], [3, 'A-3']] as const) {
    await db.execute({ text: 'INSERT INTO "ArtOhneId" ("Nr", "ArtNr", "Bez") VALUES (@nr, @artNr, @bez)', params: [{ name: 'nr', kind: 'integer', value: nr }, { name: 'artNr', kind: 'string', value: artNr }, { name: 'bez', kind: 'string', value: `Artikel ${nr}` }] })
  }
}

const mapping = (newIds: boolean): TableMappingConfig => ({
  ...narrowMaterials('ArtOhneId', { id: 'Nr', materialNumber: 'ArtNr', name: 'Bez', modifiedAt: 'Geaendert' }),
  ...(newIds ? { newIds: 'max+1' as const } : {})
})

/** The start as `serve` does it, on a database prepared by `prepare`: the error, or undefined. */
async function startError (t: Test, materials: TableMappingConfig, prepare: (db: Database) => Promise<void>): Promise<unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'pg-new-ids-'))
  const url = testDatabaseUrl(dir)
  const config = validateConfig({ database: { url }, auth: { jwtSecret: randomBytes(32).toString('hex'), argon2: TEST_ARGON2 }, logging: { level: 'silent' }, mapping: { materials } })
  const db = openDatabase(url, { create: true, logger: silent, connectTimeoutMs: 5000, requestTimeoutMs: 15000 })
  t.teardown(async () => {
    await db.close()
    rmSync(dir, { recursive: true, force: true })
  })
  await prepare(db)
  await initDatabase(db, { demo: false, mappings: mappingsOf(config), argon2: TEST_ARGON2, adminPassword: ADMIN_PASSWORD, print: () => {} })
  return await buildApp(config, { db }).then(async (app) => { await app.close() }, (e: unknown) => e)
}

t.test('without newIds, an id column the database does not number stops the start, and the message names the way out', async (t) => {
  const err = await startError(t, mapping(false), async (db) => { await createTable(db) })
  t.type(err, SchemaMismatchError)
  t.match((err as Error).message, /materials\.id: column 'Nr' \(\w+\) is neither an identity column nor has a default, so the gateway cannot create rows; set mapping\.materials\.newIds to "max\+1" if the picking system numbers its rows as the largest id plus one \(not from a counter table\), or set mapping\.materials\.readOnly to true/)
})

t.test('newIds on a column the database numbers itself is a start-up error too', async (t) => {
  const err = await startError(t, mapping(true), async (db) => { await createTable(db, true) })
  t.type(err, SchemaMismatchError)
  t.match((err as Error).message, /materials\.newIds: column 'Nr' .* is an identity column .*; remove newIds/)
})

t.test('newIds "max+1": a create gets the largest id plus one, concurrent creates distinct ones', async (t) => {
  const ctx = await build(t, { mapping: { materials: mapping(true) } }, async (db) => { await createTable(db) })
  const { app, db } = ctx
  const headers = ctx.auth(ctx.adminToken)
  const created = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N-1', name: 'Neu' } })
  t.equal(created.statusCode, 201)
  t.equal(created.json().id, 18, 'after 17, the largest (not after the row inserted last)')
  t.equal(created.headers.location, '/api/materials/18')
  t.match(created.json(), { materialNumber: 'N-1', name: 'Neu', description: null })

  const many = await Promise.all(Array.from({ length: 8 }, async (_, i) => await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: `N-${i + 2}`, name: 'Neu' } })))
  t.same(many.map((r) => r.statusCode), Array(8).fill(201))
  t.same(many.map((r) => r.json().id as number).sort((a, b) => a - b), [19, 20, 21, 22, 23, 24, 25, 26], 'eight at once: eight ids, none twice')

  // a refused create takes no number
  const dup = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N-1', name: 'Doppelt' } })
  t.equal(dup.statusCode, 409)
  t.equal((await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N-10', name: 'Neu' } })).json().id, 27)

  // the picking system deletes its newest row and inserts one of its own: the gateway counts on from what is there
  await db.execute({ text: 'DELETE FROM "ArtOhneId" WHERE "Nr" >= 20', params: [] })
  await db.execute({ text: 'INSERT INTO "ArtOhneId" ("Nr", "ArtNr", "Bez") VALUES (40, \'P-40\', \'vom Leitstand\')', params: [] })
  t.equal((await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N-11', name: 'Neu' } })).json().id, 41)
  const rows = await db.query({ text: 'SELECT "Nr" AS "nr", "ArtNr" AS "artNr" FROM "ArtOhneId" WHERE "Nr" > 17 ORDER BY "Nr"', params: [] })
  t.same(rows.map((r) => [Number(r.nr), r.artNr]), [[18, 'N-1'], [19, many.find((r) => r.json().id === 19)!.json().materialNumber], [40, 'P-40'], [41, 'N-11']], 'stored under those ids')
  t.equal((await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { id: 99, materialNumber: 'N-12', name: 'x' } })).statusCode, 400, 'the id is still not the client\'s to send')
})

t.test('newIds "max+1" on an empty table starts at 1', async (t) => {
  const ctx = await build(t, { mapping: { materials: mapping(true) } }, async (db) => {
    await createTable(db)
    await db.execute({ text: 'DELETE FROM "ArtOhneId"', params: [] })
  })
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers: ctx.auth(ctx.adminToken), payload: { materialNumber: 'N-1', name: 'Erster' } })
  t.equal(created.statusCode, 201)
  t.equal(created.json().id, 1)
})

t.test('newIds "max+1" when the largest id stored is no whole number below 2^53: creates answer 503 saying so, nothing is written', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') ? 'SQLite stores any value' : false }, async (t) => {
  const ctx = await build(t, { mapping: { materials: mapping(true) } }, async (db) => {
    await createTable(db)
    await db.execute({ text: 'INSERT INTO "ArtOhneId" ("Nr", "ArtNr", "Bez") VALUES (9007199254740993, \'BIG\', \'x\')', params: [] })
  })
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers: ctx.auth(ctx.adminToken), payload: { materialNumber: 'N-1', name: 'Neu' } })
  // before: 500 INTERNAL_ERROR
  t.equal(created.statusCode, 503, created.body)
  t.match(created.json(), { code: 'DATABASE_UNAVAILABLE', message: /New materials cannot be numbered \(mapping\.materials\.newIds is max\+1\): the largest id stored is no whole number below 2\^53/ })
  const [row] = await ctx.db.query({ text: 'SELECT COUNT(*) AS n FROM "ArtOhneId"', params: [] })
  t.equal(Number(row.n), 4, 'nothing written')
})

t.test('newIds accepts only "max+1"', async (t) => {
  t.throws(() => validateConfig({ mapping: { materials: { ...mapping(false), newIds: 'sequence' } } } as never), /newIds/)
})

t.test('SQLite: an INTEGER PRIMARY KEY of a WITHOUT ROWID table is no rowid and numbers nothing; with newIds the gateway numbers it', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') ? 'SQLite only' : false }, async (t) => {
  const withoutRowid = async (db: Database): Promise<void> => {
    await db.execute({ text: 'CREATE TABLE "ArtOhneId" ("Nr" INTEGER NOT NULL PRIMARY KEY, "ArtNr" VARCHAR(40) NOT NULL UNIQUE, "Bez" VARCHAR(80) NOT NULL, "Geaendert" DATETIME NULL) WITHOUT ROWID', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtOhneId" ("Nr", "ArtNr", "Bez") VALUES (7, \'A-7\', \'Artikel 7\')', params: [] })
  }
  const err = await startError(t, mapping(false), withoutRowid)
  t.type(err, SchemaMismatchError)
  t.match((err as Error).message, /materials\.id: column 'Nr' \(integer\) is neither an identity column nor has a default.*newIds to "max\+1"/)

  const ctx = await build(t, { mapping: { materials: mapping(true) } }, withoutRowid)
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers: ctx.auth(ctx.adminToken), payload: { materialNumber: 'N-1', name: 'Neu' } })
  t.equal(created.statusCode, 201, created.body)
  t.equal(created.json().id, 8)
})

t.test('SQLite: newIds "max+1" on a view over a table numbered AUTOINCREMENT counts on from the largest id that table ever held, as SQLite does', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') ? 'SQLite only' : false }, async (t) => {
  const ctx = await build(t, { mapping: { materials: { ...narrowMaterials('Articoli Magazzino', { id: 'Id', materialNumber: 'Codice', name: 'Descrizione' }), newIds: 'max+1' } } }, async (db) => {
    for (const text of [
      'CREATE TABLE "Anagrafica" ("Id" INTEGER PRIMARY KEY AUTOINCREMENT, "Codice" TEXT NOT NULL UNIQUE, "Descrizione" TEXT NOT NULL)',
      'CREATE VIEW "Articoli Magazzino" AS SELECT a."Id" AS "Id", a."Codice" AS "Codice", a."Descrizione" AS "Descrizione" FROM "Anagrafica" a',
      'CREATE TRIGGER "AM_ins" INSTEAD OF INSERT ON "Articoli Magazzino" BEGIN INSERT INTO "Anagrafica" ("Id", "Codice", "Descrizione") VALUES (NEW."Id", NEW."Codice", NEW."Descrizione"); END',
      'CREATE TRIGGER "AM_del" INSTEAD OF DELETE ON "Articoli Magazzino" BEGIN DELETE FROM "Anagrafica" WHERE "Id" = OLD."Id"; END',
      'INSERT INTO "Anagrafica" ("Codice", "Descrizione") VALUES (\'CAF-1\', \'Caffè\'), (\'TE-2\', \'Tè\'), (\'ZUC-3\', \'Zucchero\')'
    ]) await db.execute({ text, params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  t.equal((await ctx.app.inject({ method: 'DELETE', url: '/api/materials/3', headers })).statusCode, 204)
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'NUOVO', name: 'Nuovo' } })
  t.equal(created.statusCode, 201, created.body)
  // before: 3 again, the id of the deleted Zucchero, which an ERP may still hold for it
  t.equal(created.json().id, 4, 'not the id of the material deleted last')
  const [row] = await ctx.db.query({ text: 'SELECT seq FROM sqlite_sequence WHERE name = \'Anagrafica\'', params: [] })
  t.equal(Number(row.seq), 4, "and SQLite's own numbering goes on after it")
})
