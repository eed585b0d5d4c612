// A picking system's table whose triggers fill in columns after an insert: the created row the API
// answers with is the row as stored, as a GET shows it (SQLite's RETURNING shows it before the trigger).
import t from 'tap'
import { changesAfterInsert } from '../../src/db/sqlite.js'
import type { Database } from '../../src/db/types.js'
import { build } from '../helpers/build.js'
import { narrowMaterials } from '../helpers/legacy-fixture.js'

/** ArtNeu: an AFTER INSERT trigger stamps Angelegt, writes the unit in capitals and an audit trigger writes elsewhere. */
async function createTable (db: Database): Promise<void> {
  const mssql = db.dialect === 'mssql'
  const ddl = mssql
    ? [
        'DROP TABLE IF EXISTS [dbo].[ArtNeu]',
        'DROP TABLE IF EXISTS [dbo].[ArtNeuLog]',
        'CREATE TABLE [dbo].[ArtNeuLog] ([LogID] INT IDENTITY(1,1) PRIMARY KEY, [ArtID] INT NOT NULL)',
        'CREATE TABLE [dbo].[ArtNeu] ([ArtID] INT IDENTITY(1,1) PRIMARY KEY, [ArtNr] VARCHAR(40) NOT NULL UNIQUE, [Bez] VARCHAR(80) NOT NULL, [ME] VARCHAR(4) NULL, [Angelegt] DATETIME NULL)',
        `CREATE TRIGGER [dbo].[trg_ArtNeu_I] ON [dbo].[ArtNeu] AFTER INSERT AS
BEGIN
  SET NOCOUNT ON;
  UPDATE a SET [Angelegt] = '2026-11-26T05:00:00', [ME] = UPPER(a.[ME]) FROM [dbo].[ArtNeu] AS a JOIN inserted AS i ON i.[ArtID] = a.[ArtID];
  INSERT INTO [dbo].[ArtNeuLog] ([ArtID]) SELECT [ArtID] FROM inserted;
END`
      ]
    : [
        'CREATE TABLE "ArtNeuLog" ("LogID" INTEGER PRIMARY KEY, "ArtID" INTEGER NOT NULL)',
        'CREATE TABLE "ArtNeu" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(40) NOT NULL UNIQUE, "Bez" VARCHAR(80) NOT NULL, "ME" VARCHAR(4), "Angelegt" DATETIME)',
        `CREATE TRIGGER "trg_ArtNeu_I" AFTER INSERT ON "ArtNeu" FOR EACH ROW BEGIN
  UPDATE "ArtNeu" SET "Angelegt" = '2026-11-26 05:00:00', "ME" = upper(NEW."ME") WHERE "ArtID" = NEW."ArtID";
END`,
        'CREATE TRIGGER "trg_ArtNeu_Log" AFTER INSERT ON "ArtNeu" BEGIN INSERT INTO "ArtNeuLog" ("ArtID") VALUES (NEW."ArtID"); END'
      ]
  for (const text of ddl) await db.execute({ text, params: [] })
}

t.test('a create answers with the row as its AFTER INSERT trigger left it, the same row and ETag a GET then shows', async (t) => {
  const ctx = await build(t, {
    mapping: { materials: narrowMaterials('ArtNeu', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', unit: 'ME', createdAt: 'Angelegt' }) }
  }, createTable)
  const { app } = ctx
  const headers = ctx.auth(ctx.adminToken)
  const created = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'T-1', name: 'Mit Trigger', unit: 'st' } })
  t.equal(created.statusCode, 201, created.body)
  t.match(created.json(), { materialNumber: 'T-1', unit: 'ST', createdAt: '2026-11-26T05:00:00.000Z' }, "the trigger's values, not the ones sent")
  const read = await app.inject({ method: 'GET', url: created.headers.location as string, headers })
  t.same(read.json(), created.json())
  t.equal(created.headers.etag, read.headers.etag, 'an If-None-Match with the create\'s ETag is a 304')

  const second = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'T-2', name: 'Zweiter', unit: 'kg' } })
  t.match(second.json(), { unit: 'KG', createdAt: '2026-11-26T05:00:00.000Z' })
  const log = await ctx.db.query({ text: 'SELECT COUNT(*) AS n FROM "ArtNeuLog"', params: [] })
  t.equal(Number(log[0].n), 2, 'the audit trigger ran once per create')
})

t.test('which SQLite triggers may change a row after its insert', async (t) => {
  t.ok(changesAfterInsert('CREATE TRIGGER x AFTER INSERT ON t BEGIN UPDATE t SET a = 1 WHERE id = NEW.id; END'))
  t.ok(changesAfterInsert('create trigger "x" after insert on "t" for each row begin replace into t (id) values (new.id); end'))
  t.ok(changesAfterInsert('CREATE TRIGGER x INSTEAD OF INSERT ON v BEGIN INSERT INTO t (a) VALUES (NEW.a); UPDATE t SET b = 2; END'))
  t.notOk(changesAfterInsert('CREATE TRIGGER x AFTER INSERT ON t BEGIN INSERT INTO log (id) VALUES (NEW.id); END'), 'an audit trigger writes elsewhere only')
  t.notOk(changesAfterInsert('CREATE TRIGGER x BEFORE INSERT ON t BEGIN UPDATE c SET n = n + 1; END'), 'BEFORE: the row is not there yet')
  t.notOk(changesAfterInsert('CREATE TRIGGER x INSERT ON t BEGIN UPDATE c SET n = n + 1; END'), 'no timing is BEFORE')
  t.notOk(changesAfterInsert('CREATE TRIGGER x AFTER UPDATE ON t BEGIN UPDATE t SET a = 1; END'), 'updates read their row back anyway')
  t.notOk(changesAfterInsert('CREATE TRIGGER x AFTER UPDATE OF b ON t BEGIN UPDATE t SET a = 1; END'))
})
