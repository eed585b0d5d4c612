// A picking system's columns decide the text lengths: longer than the reference schema's where
// declared so, and any length where the column declares none, so a row read can be sent back.
import t from 'tap'
import type { Database } from '../../src/db/types.js'
import { createTableStatements } from '../../src/db/init.js'
import { materials, referenceMappings } from '../../src/db/resources.js'
import { apiDefaultNotes } from '../../src/commands.js'
import { normalizeMapping } from '../../src/config.js'
import { inspectStorage } from '../../src/db/storage.js'
import { build, testDatabaseUrl } from '../helpers/build.js'
import { narrowMaterials } from '../helpers/legacy-fixture.js'

async function createTable (db: Database): Promise<void> {
  const mssql = db.dialect === 'mssql'
  if (mssql) await db.execute({ text: 'DROP TABLE IF EXISTS [dbo].[ArtLang]', params: [] })
  await db.execute({
    text: mssql
      ? 'CREATE TABLE [dbo].[ArtLang] ([ArtID] INT IDENTITY(1,1) PRIMARY KEY, [ArtNr] VARCHAR(20) NOT NULL UNIQUE, [Bez] NVARCHAR(300) NOT NULL, [Notiz] NVARCHAR(MAX) NULL)'
      : 'CREATE TABLE "ArtLang" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(20) NOT NULL UNIQUE, "Bez" VARCHAR(300) NOT NULL, "Notiz" TEXT)',
    params: []
  })
  await db.execute({ text: 'INSERT INTO "ArtLang" ("ArtNr", "Bez", "Notiz") VALUES (\'L-1\', \'Lang\', @n)', params: [{ name: 'n', kind: 'string', value: 'Notiz '.repeat(2500) }] })
}

t.test("the column's declared length is the limit, also above the reference schema's; a column without one takes any length", async (t) => {
  const ctx = await build(t, { mapping: { materials: narrowMaterials('ArtLang', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', description: 'Notiz' }) } }, createTable)
  const headers = ctx.auth(ctx.adminToken)
  const long = 'x'.repeat(250)
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'L-2', name: long } })
  t.equal(created.statusCode, 201, 'a name of 250 characters in a 300-character column (the reference schema has 200)')
  const tooLong = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'L-3', name: 'y'.repeat(301) } })
  t.equal(tooLong.statusCode, 400)
  t.match(tooLong.json().message, /name must NOT have more than 300 characters/)
  const number = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'L-'.padEnd(21, '4'), name: 'z' } })
  t.match(number.json(), { statusCode: 400, message: /materialNumber must NOT have more than 20 characters/ }, 'a shorter column is shorter')

  // the row with 15,000 characters of notes, read and sent back as it is (an ERP's nightly master data)
  const list = (await ctx.app.inject({ method: 'GET', url: '/api/materials?materialNumber=L-1', headers })).json().data as Array<Record<string, unknown>>
  const { id, materialNumber, name, description } = list[0]
  t.equal((description as string).length, 15000)
  const back = await ctx.app.inject({ method: 'POST', url: `/api/materials/${String(id)}`, headers, payload: { materialNumber, name, description: `${String(description)}!` } })
  t.equal(back.statusCode, 200, back.body)
  t.equal(back.json().description.length, 15001)

  const openapi = (await ctx.app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const body = JSON.stringify(openapi.paths['/api/materials'].post.requestBody)
  t.match(body, /"maxLength":300/, 'the documentation shows the column\'s limit')
  const item = openapi.paths['/api/materials/{id}'].get.responses['200'].content['application/json'].schema
  t.ok(item.properties?.name, 'the item schema is inline, with its fields')
  const shown = JSON.stringify(item.properties)
  t.notMatch(shown, /maxLength/, 'responses show what is stored, however long: no limit a client would check them against')
  t.ok(openapi.paths['/api/materials/{id}'].delete.responses['409'], 'a delete documents its 409 REFERENCED')
})

t.test('SQLite: the reference tables of an older demo database (TEXT columns) keep the API\'s own limits', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only' }, async (t) => {
  const ctx = await build(t, {}, async (db) => {
    // as db init made them before it declared VARCHAR(n)
    for (const text of createTableStatements('sqlite', materials, referenceMappings.materials)) await db.execute({ text: text.replace(/VARCHAR\(\d+\)/g, 'TEXT'), params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const res = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'M'.repeat(65), name: 'x' } })
  t.equal(res.statusCode, 400)
  t.match(res.json().message, /materialNumber must NOT have more than 64 characters/)
})

t.test("an API default the column cannot hold (unit \"pcs\" in a CHAR(2)) is named as the gateway's in the 400, not as a value the client sent", async (t) => {
  const ctx = await build(t, { mapping: { materials: narrowMaterials('ArtME', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', unit: 'ME' }) } }, async (db) => {
    const mssql = db.dialect === 'mssql'
    if (mssql) await db.execute({ text: 'DROP TABLE IF EXISTS [dbo].[ArtME]', params: [] })
    await db.execute({
      text: mssql
        ? 'CREATE TABLE [dbo].[ArtME] ([ArtID] INT IDENTITY(1,1) PRIMARY KEY, [ArtNr] VARCHAR(20) NOT NULL UNIQUE, [Bez] VARCHAR(80) NOT NULL, [ME] CHAR(2) NULL)'
        : 'CREATE TABLE "ArtME" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(20) NOT NULL UNIQUE, "Bez" VARCHAR(80) NOT NULL, "ME" CHAR(2))',
      params: []
    })
  })
  const headers = ctx.auth(ctx.adminToken)
  const none = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'U-1', name: 'ohne Einheit' } })
  t.same(none.json(), {
    statusCode: 400,
    code: 'VALIDATION_ERROR',
    error: 'Bad Request',
    message: "'unit' must be at most 2 characters long (its database column's limit), got 3; the request gave no unit, so the API's default was used (unit \"pcs\"): send a value the picking system takes"
  }, 'before: "got 3" alone, about a unit the client never sent')
  const sent = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'U-2', name: 'x', unit: 'pcs' } })
  t.equal(sent.statusCode, 400)
  t.notMatch(sent.json().message, /default/, 'a unit the client sent is its own')
  const [count] = await ctx.db.query({ text: 'SELECT COUNT(*) AS n FROM "ArtME"', params: [] })
  t.equal(Number(count.n), 0, 'nothing written')
  const ok = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'U-3', name: 'x', unit: 'ST' } })
  t.equal(ok.statusCode, 201, ok.body)

  // check-config says so before the first create does
  const notes = async (unit: string | { column: string, values: Record<string, string> }): Promise<string[]> => {
    const mappings = { ...referenceMappings, materials: normalizeMapping(narrowMaterials('ArtME', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', unit } as Record<string, string>)) }
    const { problems, columns } = await inspectStorage(ctx.db, mappings)
    t.same(problems.filter((p) => p.startsWith('materials')), [])
    return apiDefaultNotes(ctx.db.dialect, mappings, columns).filter((n) => n.startsWith('materials.'))
  }
  t.same(await notes('ME'), [
    "materials.unit: column 'ME' (char(2)) cannot take the API's default \"pcs\" ('unit' must be at most 2 characters long (its database column's limit), got 3): every create that gives no unit is a 400; give the column a default in the database, or map the field with a value map that writes the picking system's code for \"pcs\""
  ])
  t.same(await notes({ column: 'ME', values: { pcs: 'ST', kg: 'KG' } }), [], 'a value map that writes a code for pcs')
  await ctx.db.execute({ text: ctx.db.dialect === 'mssql' ? "ALTER TABLE [dbo].[ArtME] ADD [ME2] CHAR(2) NULL DEFAULT 'ST'" : 'ALTER TABLE "ArtME" ADD COLUMN "ME2" CHAR(2) DEFAULT \'ST\'', params: [] })
  t.same(await notes('ME2'), [], 'a column with a default of its own, which a create without a unit leaves to the database')
})
