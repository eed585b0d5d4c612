// Times a legacy program wrote as digits (YYYYMMDD, YYYYMMDDhhmmss) into a SQLite DATE column:
// read as dates in the column's zone, not as Unix seconds of late 1970.
import t from 'tap'
import { timeTextNotes } from '../../src/commands.js'
import { mappingsOf } from '../../src/config.js'
import { compactTime, inspectStorage } from '../../src/db/storage.js'
import type { Database } from '../../src/db/types.js'
import { build, testDatabaseUrl } from '../helpers/build.js'
import { narrowMaterials } from '../helpers/legacy-fixture.js'

t.test('compactTime: digits that are a calendar date (and time), nothing else', async (t) => {
  t.same(compactTime('20240101'), new Date('2024-01-01T00:00:00Z'))
  t.same(compactTime('20240402120530'), new Date('2024-04-02T12:05:30Z'))
  for (const no of ['20240230', '20241301', '18991231', '30000101', '2024010', '202401011200', '20240101246000', '1712052000', '-20240101', '2024-01-01']) {
    t.equal(compactTime(no), undefined, no)
  }
})

t.test('SQLite: a DATE column holding 20240101 shows 2024-01-01 in its zone; Unix time still reads as before', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite stores any value in any column' }, async (t) => {
  const ctx = await build(t, {
    mapping: { materials: { ...narrowMaterials('ArtDatum', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', createdAt: 'Angelegt', modifiedAt: 'Geaendert' }), timeZone: 'Europe/Berlin' } }
  }, async (db: Database) => {
    await db.execute({ text: 'CREATE TABLE "ArtDatum" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(20) NOT NULL UNIQUE, "Bez" VARCHAR(40) NOT NULL, "Angelegt" DATE, "Geaendert" DATETIME)', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtDatum" VALUES (1, \'A-1\', \'a\', 20240101, 20240402120000), (2, \'A-2\', \'b\', \'20240615\', 1712052000)', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const rows = (await ctx.app.inject({ method: 'GET', url: '/api/materials?sort=id', headers })).json().data
  t.match(rows[0], { createdAt: '2023-12-31T23:00:00.000Z', modifiedAt: '2024-04-02T10:00:00.000Z' }, 'midnight and noon in Berlin')
  t.match(rows[1], { createdAt: '2024-06-14T22:00:00.000Z', modifiedAt: '2024-04-02T10:00:00.000Z' }, 'as text too; Unix seconds stay an instant')
})

t.test("SQLite: the gateway writes a picking system's time columns in the format of SQLite's CURRENT_TIMESTAMP ('2026-11-26 04:30:01.111', UTC); its own reference tables as ISO 8601", { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const ctx = await build(t, {
    mapping: { materials: narrowMaterials('ArtZeit', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', createdAt: 'Angelegt', modifiedAt: 'Geaendert' }) }
  }, async (db: Database) => {
    await db.execute({ text: 'CREATE TABLE "ArtZeit" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(20) NOT NULL UNIQUE, "Bez" VARCHAR(40) NOT NULL, "Angelegt" TEXT, "Geaendert" DATETIME DEFAULT CURRENT_TIMESTAMP)', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtZeit" ("ArtNr", "Bez", "Angelegt") VALUES (\'OLD\', \'vom Leitstand\', \'2020-01-01T00:00:00.000Z\')', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'NEW', name: 'neu' } })
  t.equal(created.statusCode, 201)
  const [row] = await ctx.db.query({ text: 'SELECT "Angelegt" AS a, "Geaendert" AS g FROM "ArtZeit" WHERE "ArtNr" = \'NEW\'', params: [] })
  t.match(row.g, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/, 'as CURRENT_TIMESTAMP writes it, with milliseconds')
  t.match(row.a, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'a TEXT column whose times are ISO 8601 in UTC with a Z: so too, beside the row the picking system wrote')
  await ctx.app.inject({ method: 'POST', url: '/api/stations', headers, payload: { name: 'S-1', type: 'manual' } })
  const [own] = await ctx.db.query({ text: 'SELECT "modified_at" AS m FROM "stations"', params: [] })
  t.match(own.m, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'the reference table of stations: ISO 8601, as its default writes')
  t.equal(created.json().modifiedAt, `${String(row.g).replace(' ', 'T')}Z`, 'the same instant in the API')
  t.equal(created.json().createdAt, row.a, 'so is the Z form')
  const since = (await ctx.app.inject({ method: 'GET', url: `/api/materials?modifiedSince=${encodeURIComponent(created.json().modifiedAt)}`, headers })).json().data
  t.same(since.map((m: { materialNumber: string }) => m.materialNumber), ['NEW'], 'found by modifiedSince beside a row of the default format')
})

t.test("SQLite: where the picking system writes its text times as ISO 8601 with a T ('2026-03-29T01:30:00'), the gateway writes them so too, and the picking system's text order keeps the gateway's rows in place", { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const berlin = new Intl.DateTimeFormat('sv-SE', { timeZone: 'Europe/Berlin', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' })
  // the first second of today in Berlin, as the picking system writes it
  const today = `${berlin.format(new Date()).slice(0, 10)}T00:00:00`
  const ctx = await build(t, {
    mapping: { materials: { ...narrowMaterials('Artikel', { id: 'ArtNr', materialNumber: 'ArtNr', name: 'Bez', createdAt: 'Angelegt', modifiedAt: 'Geaendert' }), timeZone: 'Europe/Berlin' } }
  }, async (db: Database) => {
    await db.execute({ text: 'CREATE TABLE "Artikel" ("ArtNr" TEXT NOT NULL PRIMARY KEY, "Bez" TEXT NOT NULL, "Angelegt" TEXT, "Geaendert" TEXT, "Gebucht" TEXT) WITHOUT ROWID', params: [] })
    // a day's times of the picking system, an empty one and NULL (no date-time, which decide nothing), and a column with a fraction
    await db.execute({ text: 'INSERT INTO "Artikel" VALUES (\'A-1\', \'Größe\', \'2026-03-29T01:30:00\', \'2099-12-31T23:59:59\', NULL), (\'A-2\', \'Schüttgut\', \'\', NULL, NULL), (\'A-3\', \'Straße\', @today, NULL, NULL)', params: [{ name: 'today', kind: 'string', value: today }] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'NEU', name: 'neu' } })
  t.equal(created.statusCode, 201)
  const stored = async (): Promise<Record<string, unknown>> => (await ctx.db.query({ text: 'SELECT "Angelegt" AS a, "Geaendert" AS g FROM "Artikel" WHERE "ArtNr" = \'NEU\'', params: [] }))[0]
  const row = await stored()
  // before: '2026-11-28 05:00:50.123', which sorts before every time of that day the picking system wrote ('T' > ' ')
  t.match(row.a, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/, 'createdAt as the picking system writes it: a T, whole seconds, no zone')
  t.match(row.g, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/, 'modifiedAt too')
  t.equal(berlin.format(new Date(created.json().createdAt)).replace(' ', 'T'), row.a, 'the response shows the stored local time, in UTC')
  t.match(created.json().createdAt, /\.000Z$/, 'in whole seconds, as stored')
  const first = created.json().modifiedAt
  const updated = await ctx.app.inject({ method: 'POST', url: '/api/materials/NEU', headers, payload: { name: 'neu 2' } })
  t.equal(updated.statusCode, 200)
  t.ok(Date.parse(updated.json().modifiedAt) >= Date.parse(first) + 1000, 'an update moves modifiedAt by at least the second the column keeps')
  t.match((await stored()).g, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/, 'and writes it as the picking system does')
  const ofToday = await ctx.db.query({ text: 'SELECT "ArtNr" AS nr FROM "Artikel" WHERE "Angelegt" >= @today ORDER BY "Angelegt" DESC', params: [{ name: 'today', kind: 'string', value: today }] })
  t.same(ofToday.map((r) => r.nr), ['NEU', 'A-3'], "the picking system's own text comparison finds the gateway's row of today, and its order puts it last")
  const since = (await ctx.app.inject({ method: 'GET', url: `/api/materials?modifiedSince=${encodeURIComponent(first)}&sort=modifiedAt`, headers })).json().data
  t.same(since.map((m: { id: string }) => m.id), ['NEU', 'A-1'], 'modifiedSince finds it, before the row of 2099')
  const mappings = mappingsOf(ctx.config)
  const { columns } = await inspectStorage(ctx.db, mappings)
  t.same(timeTextNotes('sqlite', mappings, columns), [
    "materials.createdAt: column 'Angelegt' (text) is written as 2026-11-26T05:30:01, in whole seconds, as the times it holds are written (ISO 8601 with a T, no zone), not as SQLite's CURRENT_TIMESTAMP writes them",
    "materials.modifiedAt: column 'Geaendert' (text) is written as 2026-11-26T05:30:01, in whole seconds, as the times it holds are written (ISO 8601 with a T, no zone), not as SQLite's CURRENT_TIMESTAMP writes them"
  ], 'check-config says so')
})

t.test("SQLite: ISO 8601 text times with a fraction ('2026-03-29T01:30:00.250') are written with a T and milliseconds; a column that also holds another shape keeps CURRENT_TIMESTAMP's", { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const ctx = await build(t, {
    mapping: { materials: narrowMaterials('ArtMs', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', createdAt: 'Angelegt', modifiedAt: 'Geaendert' }) }
  }, async (db: Database) => {
    await db.execute({ text: 'CREATE TABLE "ArtMs" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" TEXT NOT NULL UNIQUE, "Bez" TEXT NOT NULL, "Angelegt" TEXT, "Geaendert" TEXT)', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtMs" VALUES (1, \'A-1\', \'a\', \'2026-03-29T01:30:00.250\', \'2026-03-29T01:30:00\'), (2, \'A-2\', \'b\', \'2026-03-29T01:30:00\', \'2026-03-29 01:30:00\')', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'NEU', name: 'neu' } })
  t.equal(created.statusCode, 201)
  const [row] = await ctx.db.query({ text: 'SELECT "Angelegt" AS a, "Geaendert" AS g FROM "ArtMs" WHERE "ArtNr" = \'NEU\'', params: [] })
  t.match(row.a, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$/, 'a T and milliseconds, where some stored times have a fraction')
  t.equal(created.json().createdAt, `${String(row.a)}Z`, 'the same instant in the API (UTC)')
  t.match(row.g, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/, "a column holding times of both shapes: as SQLite's CURRENT_TIMESTAMP, as before")
})

t.test("SQLite: a column of ISO 8601 text in whole seconds, written so: a time with milliseconds another program writes there later is still found to the millisecond", { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const ctx = await build(t, {
    mapping: { materials: { ...narrowMaterials('ArtSec', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', createdAt: 'Angelegt', modifiedAt: 'Geaendert' }), timeZone: 'Europe/Berlin' } }
  }, async (db: Database) => {
    await db.execute({ text: 'CREATE TABLE "ArtSec" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" TEXT NOT NULL UNIQUE, "Bez" TEXT NOT NULL, "Angelegt" TEXT, "Geaendert" TEXT)', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtSec" VALUES (1, \'A-1\', \'a\', \'2026-01-01T09:00:00\', \'2026-01-01T09:00:00\')', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  // after the start, which took the column for whole seconds: another program's row with a fraction (local time, UTC+1)
  await ctx.db.execute({ text: 'INSERT INTO "ArtSec" VALUES (2, \'A-2\', \'b\', \'2026-01-01T11:00:00.500\', \'2026-01-01T11:00:00.500\')', params: [] })
  const since = await ctx.app.inject({ method: 'GET', url: '/api/materials?modifiedSince=2026-01-01T10:00:00.250Z', headers })
  t.equal(since.statusCode, 200)
  t.same(since.json().data.map((m: { materialNumber: string }) => m.materialNumber), ['A-2'], 'modifiedSince a quarter second before it finds it: the bound is not rounded up to the next whole second')
  const created = await ctx.app.inject({ method: 'GET', url: '/api/materials?createdAt=2026-01-01T10:00:00.500Z', headers })
  t.same(created.json().data.map((m: { materialNumber: string }) => m.materialNumber), ['A-2'], 'and an exact filter at its millisecond')
})

t.test("SQLite: a Julian day (julianday('now'), SQLite's own numeric time) shows the time its strftime reads, which filters and sorting compare", { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const ctx = await build(t, {
    mapping: { materials: { ...narrowMaterials('ArtJul', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', createdAt: 'Angelegt', modifiedAt: 'Geaendert' }), timeZone: 'Europe/Berlin' } }
  }, async (db: Database) => {
    await db.execute({ text: 'CREATE TABLE "ArtJul" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(20) NOT NULL UNIQUE, "Bez" VARCHAR(40) NOT NULL, "Angelegt" DATETIME DEFAULT (julianday(\'now\')), "Geaendert" DATETIME)', params: [] })
    // 2460001.5 is 2023-02-26 00:00 (strftime reads it so, as local time in the column's zone); 1712052000 stays Unix seconds
    await db.execute({ text: 'INSERT INTO "ArtJul" VALUES (1, \'A-1\', \'a\', 2460001.5, 2460001.75), (2, \'A-2\', \'b\', 2460002.5, 1712052000)', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const rows = (await ctx.app.inject({ method: 'GET', url: '/api/materials?sort=id', headers })).json().data
  t.match(rows[0], { createdAt: '2023-02-25T23:00:00.000Z', modifiedAt: '2023-02-26T05:00:00.000Z' }, 'midnight and 06:00 in Berlin, not January 1970')
  t.match(rows[1], { createdAt: '2023-02-26T23:00:00.000Z', modifiedAt: '2024-04-02T10:00:00.000Z' }, 'Unix seconds stay an instant')
  const found = (await ctx.app.inject({ method: 'GET', url: '/api/materials?createdAt=%5Bgte%5D2023-02-26T00:00:00Z&sort=-createdAt', headers })).json().data
  t.same(found.map((m: { id: number }) => m.id), [2], 'the filter finds the row whose shown time matches it')
  const on = (await ctx.app.inject({ method: 'GET', url: '/api/materials?createdAt=2023-02-25T23:00:00.000Z', headers })).json().data
  t.same(on.map((m: { id: number }) => m.id), [1], 'equality on the shown time')
})

t.test('SQLite: a number shaped as YYYYMMDD or YYYYMMDDhhmmss that is no real date (20240230120000) shows null, not Unix time of the year 2611; no time filter finds it', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite stores any value in any column' }, async (t) => {
  const ctx = await build(t, {
    mapping: { materials: narrowMaterials('ArtKaputt', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', createdAt: 'Angelegt', modifiedAt: 'Geaendert' }) }
  }, async (db: Database) => {
    await db.execute({ text: 'CREATE TABLE "ArtKaputt" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(20) NOT NULL UNIQUE, "Bez" VARCHAR(40) NOT NULL, "Angelegt" DATE, "Geaendert" DATETIME)', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtKaputt" VALUES (1, \'A-1\', \'a\', 20241301, 20240230120000), (2, \'A-2\', \'b\', 20240101, 1712052000000)', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const rows = (await ctx.app.inject({ method: 'GET', url: '/api/materials?sort=id', headers })).json().data
  // before: 2611-05-22 (Unix milliseconds) and 1970-08-23 (Unix seconds)
  t.match(rows[0], { createdAt: null, modifiedAt: null }, 'no date, shown as null')
  t.match(rows[1], { createdAt: '2024-01-01T00:00:00.000Z', modifiedAt: '2024-04-02T10:00:00.000Z' }, 'a real date, and Unix milliseconds, as before')
  for (const filter of ['modifiedAt=%5Bgt%5D2024-01-01T00:00:00Z', 'modifiedAt=%5Bgt%5D2500-01-01T00:00:00Z', 'createdAt=%5Bgt%5D1970-01-01T00:00:00Z']) {
    const found = (await ctx.app.inject({ method: 'GET', url: `/api/materials?${filter}`, headers })).json().data
    t.notOk(found.some((m: { id: number }) => m.id === 1), `${filter} does not find the row it shows without a time`)
  }
})

t.test("SQLite: where the picking system's times are ISO 8601 text in UTC with a Z (a DEFAULT of strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), the gateway writes them so too", { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const ctx = await build(t, {
    mapping: { materials: narrowMaterials('Anagrafica', { id: 'Id', materialNumber: 'Codice', name: 'Descrizione', createdAt: 'Creato il', modifiedAt: 'Modificato il' }) }
  }, async (db: Database) => {
    const now = "DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"
    await db.execute({ text: `CREATE TABLE "Anagrafica" ("Id" INTEGER PRIMARY KEY, "Codice" TEXT NOT NULL UNIQUE, "Descrizione" TEXT NOT NULL, "Creato il" TEXT NOT NULL ${now}, "Modificato il" TEXT NOT NULL ${now}) STRICT`, params: [] })
    // one row the picking system wrote today, in the first millisecond of the day, by its default
    await db.execute({ text: 'INSERT INTO "Anagrafica" ("Codice", "Descrizione", "Creato il", "Modificato il") VALUES (\'CAF-1\', \'Caffè\', \'2026-01-10T08:00:00.000Z\', \'2026-01-10T08:00:00.000Z\'), (\'OGGI\', \'di oggi\', strftime(\'%Y-%m-%dT00:00:00.000Z\', \'now\'), strftime(\'%Y-%m-%dT00:00:00.000Z\', \'now\'))', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'NUOVO', name: 'nuovo' } })
  t.equal(created.statusCode, 201, created.body)
  const stored = async (): Promise<Record<string, unknown>> => (await ctx.db.query({ text: 'SELECT "Creato il" AS c, "Modificato il" AS m FROM "Anagrafica" WHERE "Codice" = \'NUOVO\'', params: [] }))[0]
  // before: '2026-11-28 04:53:17.898', which the picking system's text comparisons put before every time of the day
  t.equal((await stored()).c, created.json().createdAt, 'createdAt as the default writes it: a T, milliseconds and a Z')
  const updated = await ctx.app.inject({ method: 'POST', url: created.headers.location as string, headers, payload: { name: 'nuovo 2' } })
  t.equal((await stored()).m, updated.json().modifiedAt, 'modifiedAt of an update too')
  const today = await ctx.db.query({ text: 'SELECT "Codice" AS code FROM "Anagrafica" WHERE "Modificato il" >= strftime(\'%Y-%m-%dT00:00:00.000Z\', \'now\') ORDER BY "Modificato il" DESC', params: [] })
  t.same(today.map((r) => r.code), ['NUOVO', 'OGGI'], "the picking system's own text comparison finds the gateway's row of today, and its order puts it last")
  const mappings = mappingsOf(ctx.config)
  const { columns } = await inspectStorage(ctx.db, mappings)
  t.same(timeTextNotes('sqlite', mappings, columns), [
    "materials.createdAt: column 'Creato il' (text) is written as 2026-11-26T05:30:01.111Z, as the times it holds are written (ISO 8601 with a T, in UTC with a Z), not as SQLite's CURRENT_TIMESTAMP writes them",
    "materials.modifiedAt: column 'Modificato il' (text) is written as 2026-11-26T05:30:01.111Z, as the times it holds are written (ISO 8601 with a T, in UTC with a Z), not as SQLite's CURRENT_TIMESTAMP writes them"
  ], 'check-config says so')
})

t.test("SQLite: an empty table whose time columns' DEFAULT is strftime('%Y-%m-%dT%H:%M:%fZ', 'now'): the gateway's first rows are written in that form", { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const ctx = await build(t, {
    mapping: { materials: narrowMaterials('Anagrafica', { id: 'Id', materialNumber: 'Codice', name: 'Descrizione', createdAt: 'Creato il', modifiedAt: 'Modificato il' }) }
  }, async (db: Database) => {
    await db.execute({ text: 'CREATE TABLE "Anagrafica" ("Id" INTEGER PRIMARY KEY, "Codice" TEXT NOT NULL UNIQUE, "Descrizione" TEXT NOT NULL, "Creato il" TEXT NOT NULL DEFAULT (strftime(\'%Y-%m-%dT%H:%M:%fZ\', \'now\')), "Modificato il" TEXT DEFAULT (STRFTIME(\'%Y-%m-%dT%H:%M:%S\', \'now\'))) STRICT', params: [] })
  })
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers: ctx.auth(ctx.adminToken), payload: { materialNumber: 'PRIMO', name: 'il primo' } })
  t.equal(created.statusCode, 201, created.body)
  const [row] = await ctx.db.query({ text: 'SELECT "Creato il" AS c, "Modificato il" AS m FROM "Anagrafica"', params: [] })
  // before: '2026-11-28 05:13:25.123', and the next start, seeing both forms, kept writing that one
  t.equal(row.c, created.json().createdAt, 'as its DEFAULT writes: a T, milliseconds and a Z')
  t.match(row.m, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/, 'whole seconds without a zone, as that DEFAULT writes')
})
