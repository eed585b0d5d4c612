// A picking system's columns decide the text lengths: longer than the reference schema's where
// declared so, and any length where the column declares none, so a row read can be sent back.
// On SQLite, which enforces neither lengths nor number ranges, an update takes back what a row holds past them.
import t from 'tap'
import type { TableMappingConfig } from '../../schemas/config.js'
import type { Database } from '../../src/db/types.js'
import { createTableStatements } from '../../src/db/init.js'
import { materials, referenceMappings } from '../../src/db/resources.js'
import { apiDefaultNotes } from '../../src/commands.js'
import { normalizeMapping } from '../../src/config.js'
import { inspectStorage, ResourceStorage } from '../../src/db/storage.js'
import { createPasswords } from '../../src/auth/passwords.js'
import { ADMIN_PASSWORD, TEST_ARGON2, build, testDatabaseUrl } from '../helpers/build.js'
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

t.test('SQLite: a text longer than its VARCHAR(n) (SQLite keeps what another program wrote) is taken back unchanged by an update, on every resource; another such text is a 400', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only: SQL Server enforces the length' }, async (t) => {
  const ctx = await build(t, {
    mapping: {
      materials: narrowMaterials('ArtKurz', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', description: 'Notiz', modifiedAt: 'Geaendert' }),
      stations: { table: 'PlatzKurz', columns: { id: 'PlatzID', name: 'Name', description: 'Info', type: null, warehouse: 'Lager', controllerId: null, address: null, enabled: null, createdAt: null, modifiedAt: 'Geaendert' } },
      users: { table: 'BenKurz', columns: { id: 'BenID', username: 'Login', passwordHash: 'PwHash', type: 'Rolle', displayName: 'Name', enabled: 'Aktiv', tokenVersion: 'TokVer', lastLoginAt: 'Login_am', createdAt: 'Angelegt', modifiedAt: 'Geaendert' } }
    }
  }, async (db) => {
    const hash = await (await createPasswords(TEST_ARGON2)).hash(ADMIN_PASSWORD)
    for (const text of [
      'CREATE TABLE "ArtKurz" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(10) NOT NULL UNIQUE, "Bez" CHAR(10) NOT NULL, "Notiz" NVARCHAR(10), "Geaendert" DATETIME)',
      'INSERT INTO "ArtKurz" VALUES (1, \'A-1234567890\', \'Bezeichnung, zu lang\', \'Notiz, viel zu lang\', NULL)',
      'CREATE TABLE "PlatzKurz" ("PlatzID" INTEGER PRIMARY KEY, "Name" VARCHAR(8) NOT NULL UNIQUE, "Info" VARCHAR(8), "Lager" CHAR(3), "Geaendert" DATETIME)',
      'INSERT INTO "PlatzKurz" VALUES (1, \'PLATZ-LANG-1\', \'Info, zu lang\', \'HL12\', NULL)',
      'CREATE TABLE "BenKurz" ("BenID" INTEGER PRIMARY KEY, "Login" VARCHAR(5) NOT NULL UNIQUE, "PwHash" VARCHAR(255) NOT NULL, "Rolle" VARCHAR(20) NOT NULL DEFAULT \'user\', ' +
        '"Name" VARCHAR(8), "Aktiv" BOOLEAN NOT NULL DEFAULT 1, "TokVer" INTEGER NOT NULL DEFAULT 0, "Login_am" DATETIME, "Angelegt" DATETIME, "Geaendert" DATETIME)',
      'INSERT INTO "BenKurz" ("BenID", "Login", "PwHash", "Rolle", "Name") VALUES (1, \'admin\', @hash, \'admin\', NULL), (2, \'lagerist\', @hash, \'user\', \'Name, zu lang\')'
    ]) await db.execute({ text, params: text.includes('@hash') ? [{ name: 'hash', kind: 'string', value: hash }] : [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const cases = [
    { path: '/api/materials/1', fields: ['materialNumber', 'name', 'description'], limits: [10, 10, 10] },
    { path: '/api/stations/1', fields: ['name', 'description', 'warehouse'], limits: [8, 8, 3] },
    { path: '/api/users/2', fields: ['username', 'displayName'], limits: [5, 8] }
  ]
  for (const { path, fields, limits } of cases) {
    const shown = (await ctx.app.inject({ method: 'GET', url: path, headers })).json()
    const form = Object.fromEntries(fields.map((field) => [field, shown[field]]))
    for (const [i, field] of fields.entries()) t.ok(String(form[field]).length > limits[i], `${path}: ${field} is shown longer than its column`)
    // before: 400 "body/materialNumber must NOT have more than 10 characters", for values the form only sent back
    for (const method of ['POST', 'PATCH']) {
      const back = await ctx.app.inject({ method, url: path, headers, payload: form })
      t.equal(back.statusCode, 200, `${method} ${path}, the fields as shown: ${back.body}`)
      t.same(back.json(), shown, 'nothing written: modifiedAt stays')
    }
    for (const [i, field] of fields.entries()) {
      const longer = `${String(form[field])}!`
      const other = await ctx.app.inject({ method: 'POST', url: path, headers, payload: { ...form, [field]: longer } })
      t.equal(other.statusCode, 400, `${path}: another long ${field}`)
      t.equal(other.json().message, `'${field}' must be at most ${limits[i]} characters long (its database column's limit), got ${longer.length}`)
    }
    t.same((await ctx.app.inject({ method: 'GET', url: path, headers })).json(), shown, `${path}: nothing of the refused updates written`)
  }
  // the form with one short change: that field is written, the long ones stay as stored
  const edited = await ctx.app.inject({ method: 'POST', url: '/api/stations/1', headers, payload: { name: 'PLATZ-LANG-1', description: 'Info, zu lang', warehouse: 'K2' } })
  t.equal(edited.statusCode, 200, edited.body)
  t.match(edited.json(), { name: 'PLATZ-LANG-1', description: 'Info, zu lang', warehouse: 'K2', modifiedAt: String })
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'A-1234567890', name: 'x' } })
  t.match(created.json(), { statusCode: 400, message: 'body/materialNumber must NOT have more than 10 characters' }, 'a create still takes only what the column does')
  const doc = (await ctx.app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const schema = (path: string, method: string): Record<string, { maxLength?: number, description?: string }> => doc.paths[path][method].requestBody.content['application/json'].schema.properties
  t.equal(schema('/api/materials', 'post').materialNumber.maxLength, 10, 'the create body shows the limit')
  t.equal(schema('/api/materials/{id}', 'post').materialNumber.maxLength, undefined, 'the update body takes a longer text the row holds')
  t.match(schema('/api/materials/{id}', 'patch').materialNumber.description, /at most 10 characters \(its database column's limit\), but a longer text the row already holds may be sent back unchanged/)
})

t.test('SQLite: a number past its SMALLINT, INT or DECIMAL(p,s) (SQLite keeps what another program wrote) is taken back unchanged by an update; another such number is a 400', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite only: SQL Server enforces the range' }, async (t) => {
  const narrow = narrowMaterials('ArtZahl', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', minStock: 'MinB', maxStock: 'MaxB', weight: 'Gew' })
  const ctx = await build(t, {
    mapping: {
      // a Unix time in an INT column and a default past its SMALLINT: SQLite keeps these as they are, no range is checked for them
      materials: { ...narrow, columns: { ...narrow.columns, modifiedAt: { column: 'Geaendert', format: 'unix-ms' } } as TableMappingConfig['columns'], defaults: { Zone: 40000 } },
      stations: { table: 'PlatzZahl', columns: { id: 'PlatzID', name: 'Name', description: null, type: null, warehouse: 'Lager', controllerId: null, address: 'Adr', enabled: null, createdAt: null, modifiedAt: 'Geaendert' } }
    }
  }, async (db) => {
    for (const text of [
      'CREATE TABLE "ArtZahl" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(10) NOT NULL UNIQUE, "Bez" VARCHAR(20) NOT NULL, "MinB" SMALLINT, "MaxB" INT, "Gew" DECIMAL(7,2), "Zone" SMALLINT NOT NULL, "Geaendert" INT)',
      'INSERT INTO "ArtZahl" VALUES (1, \'A-1\', \'x\', 40000, 3000000000, 123456.78, 1, NULL), (2, \'A-2\', \'y\', 1, NULL, 12345.678, 1, NULL)',
      'CREATE TABLE "PlatzZahl" ("PlatzID" INTEGER PRIMARY KEY, "Name" VARCHAR(8) NOT NULL UNIQUE, "Lager" TINYINT, "Adr" SMALLINT, "Geaendert" DATETIME)',
      'INSERT INTO "PlatzZahl" VALUES (1, \'P1\', 300, 40000, NULL)'
    ]) await db.execute({ text, params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const cases = [
    { path: '/api/materials/1', form: { minStock: 40000, maxStock: 3000000000, weight: 123456.78 } },
    // 12345.678 is within decimal(7,2)'s range but has three places, which the schema never limited
    { path: '/api/materials/2', form: { minStock: 1, maxStock: null, weight: 12345.678 } },
    { path: '/api/stations/1', form: { warehouse: '300', address: 40000 } }
  ]
  for (const { path, form } of cases) {
    const shown = (await ctx.app.inject({ method: 'GET', url: path, headers })).json()
    t.match(shown, form, `${path} shows the numbers past the columns`)
    // before: 400 "body/minStock must be <= 32767", "body/address must be <= 32767", "body/weight must be <= 99999.99"
    for (const method of ['POST', 'PATCH']) {
      const back = await ctx.app.inject({ method, url: path, headers, payload: form })
      t.equal(back.statusCode, 200, `${method} ${path}, the fields as shown: ${back.body}`)
      t.same(back.json(), shown, 'nothing written: modifiedAt stays')
    }
  }
  const refused = [
    { path: '/api/materials/1', field: 'minStock', value: 40001, message: "'minStock' must be between -32768 and 32767 (its database column's range), got 40001" },
    { path: '/api/materials/1', field: 'maxStock', value: 2147483648, message: "'maxStock' must be between -2147483648 and 2147483647 (its database column's range), got 2147483648" },
    { path: '/api/materials/1', field: 'weight', value: 123456.79, message: "'weight' must be less than 100000 in magnitude (its database column is decimal(7,2)), got 123456.79" },
    { path: '/api/materials/2', field: 'weight', value: 12345.679, message: "'weight' must have at most 2 decimal places (its database column's scale), got 12345.679" },
    { path: '/api/stations/1', field: 'address', value: 40001, message: "'address' must be between -32768 and 32767 (its database column's range), got 40001" },
    // the API's own limits stay in the schema
    { path: '/api/stations/1', field: 'address', value: 65536, message: 'body/address must be <= 65535' },
    { path: '/api/materials/1', field: 'weight', value: -1, message: 'body/weight must be >= 0' },
    { path: '/api/materials/2', field: 'minStock', value: -1, message: 'body/minStock must be >= 0' }
  ]
  for (const { path, field, value, message } of refused) {
    const before = (await ctx.app.inject({ method: 'GET', url: path, headers })).json()
    const res = await ctx.app.inject({ method: 'PATCH', url: path, headers, payload: { [field]: value } })
    t.match(res.json(), { statusCode: 400, message }, `${path}: ${field} ${value}`)
    t.same((await ctx.app.inject({ method: 'GET', url: path, headers })).json(), before, 'nothing written')
  }
  // the form with one change within range: written (with the Unix time in the INT column, past its range), the numbers past it stay
  const edited = await ctx.app.inject({ method: 'POST', url: '/api/materials/1', headers, payload: { minStock: 40000, maxStock: 3000000000, weight: 5 } })
  t.equal(edited.statusCode, 200, edited.body)
  t.match(edited.json(), { minStock: 40000, maxStock: 3000000000, weight: 5, modifiedAt: String })
  const [row] = await ctx.db.query({ text: 'SELECT "Geaendert" AS g FROM "ArtZahl" WHERE "ArtID" = 1', params: [] })
  t.ok(Number(row.g) > 2147483647, 'modifiedAt as Unix milliseconds, past the INT range, which is no field of a body')
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'A-3', name: 'z', minStock: 40000 } })
  t.match(created.json(), { statusCode: 400, message: 'body/minStock must be <= 32767' }, 'a create still takes only what the column does')
  const plain = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'A-3', name: 'z', minStock: 1 } })
  t.equal(plain.statusCode, 201, plain.body)
  const [zone] = await ctx.db.query({ text: 'SELECT "Zone" AS z FROM "ArtZahl" WHERE "ArtNr" = \'A-3\'', params: [] })
  t.equal(Number(zone.z), 40000, 'mapping.defaults writes 40000 into its SMALLINT as configured')
  const doc = (await ctx.app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const schema = (path: string, method: string): Record<string, { minimum?: number, maximum?: number, description?: string }> => doc.paths[path][method].requestBody.content['application/json'].schema.properties
  t.match(schema('/api/stations', 'post').address, { minimum: 0, maximum: 32767 }, 'the create body shows the column\'s range')
  t.match(schema('/api/stations/{id}', 'patch').address, { minimum: 0, maximum: 65535, description: /between -32768 and 32767 \(its database column's range\), but a value past it the row already holds may be sent back unchanged/ }, 'the update body keeps the API\'s range')
  t.match(schema('/api/materials/{id}', 'post').weight, { minimum: 0, description: /decimal\(7,2\).*between -99999\.99 and 99999\.99 \(its database column's range\)/ })
  t.equal(schema('/api/materials/{id}', 'post').weight.maximum, undefined, 'the update body takes a larger number the row holds')
  t.equal(schema('/api/materials', 'post').weight.maximum, 99999.99, 'the create body shows the limit')
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

t.test('SQLite: INT2, MEDIUMINT, INT8 and UNSIGNED BIG INT hold a value to their range as SMALLINT and BIGINT do', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite type names' }, async (t) => {
  const narrow = narrowMaterials('ArtGroesse', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', minStock: 'MinB', maxStock: 'MaxB', weight: 'Gew' })
  const ctx = await build(t, { mapping: { materials: narrow } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "ArtGroesse" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(10) NOT NULL UNIQUE, "Bez" VARCHAR(20) NOT NULL, "MinB" INT2, "MaxB" MEDIUMINT, "Gew" INT8)', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtGroesse" VALUES (1, \'A-1\', \'x\', 40000, 9000000, 1)', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  // before: 201, with 40000 in the INT2 column, where a SMALLINT's create is a 400
  const refused = [
    { payload: { minStock: 40000 }, message: 'body/minStock must be <= 32767' },
    { payload: { maxStock: 8388608 }, message: 'body/maxStock must be <= 8388607' },
    { payload: { weight: 9007199254740992 }, message: 'body/weight must be <= 9007199254740991' }
  ]
  for (const { payload, message } of refused) {
    const res = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'A-2', name: 'y', ...payload } })
    t.match(res.json(), { statusCode: 400, message }, JSON.stringify(payload))
  }
  const [{ n }] = await ctx.db.query({ text: 'SELECT COUNT(*) AS n FROM "ArtGroesse"', params: [] }) as Array<{ n: number }>
  t.equal(Number(n), 1, 'nothing created')
  const within = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'A-2', name: 'y', minStock: 32767, maxStock: 8388607 } })
  t.equal(within.statusCode, 201, within.body)
  // what another program stored past the range is taken back unchanged; another such number is a 400, as for a SMALLINT
  const back = await ctx.app.inject({ method: 'PATCH', url: '/api/materials/1', headers, payload: { minStock: 40000, maxStock: 9000000 } })
  t.equal(back.statusCode, 200, back.body)
  for (const [field, value, range] of [['minStock', 40001, '-32768 and 32767'], ['maxStock', 9000001, '-8388608 and 8388607']] as const) {
    const res = await ctx.app.inject({ method: 'PATCH', url: '/api/materials/1', headers, payload: { [field]: value } })
    t.match(res.json(), { statusCode: 400, message: `'${field}' must be between ${range} (its database column's range), got ${value}` })
  }
  // UNSIGNED BIG INT: no negatives (the API's own fields take none anyway: the storage is asked directly)
  const storage = new ResourceStorage('sqlite', materials, normalizeMapping(narrow), [
    { name: 'ArtID', type: 'integer', nullable: false, hasDefault: true, identity: true, computed: false },
    { name: 'MinB', type: 'unsigned big int', nullable: true, hasDefault: false, identity: false, computed: false }
  ])
  t.throws(() => storage.toDb(storage.field('minStock'), -1), { message: "'minStock' must be between 0 and 9007199254740991 (its database column's range), got -1" })
  t.equal(storage.toDb(storage.field('minStock'), 5), 5)
})
