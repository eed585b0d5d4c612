// What reads of a legacy table return validates against the response schemas the document gives: rows
// another program wrote past the API's write limits (README, "Column types and what the API makes of them").
import Ajv from 'ajv'
import addFormats from 'ajv-formats'
import t from 'tap'
import { NOT_BLANK, portablePatterns } from '../../schemas/common.js'
import type { TableMappingConfig } from '../../schemas/config.js'
import type { Database } from '../../src/db/types.js'
import { build, testDatabaseUrl } from '../helpers/build.js'

const sqliteOnly = testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite stores what SQL Server\'s column types refuse'

const MATERIALS: TableMappingConfig = {
  table: 'Artikel',
  columns: {
    id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', description: null, unit: null, barcode: null,
    minStock: 'MinB', maxStock: 'MaxB', weight: 'Gewicht', blocked: null, blockReason: null, stockQuantity: 'Bestand',
    createdAt: null, modifiedAt: 'Geaendert'
  }
}

const STATIONS: TableMappingConfig = {
  table: 'Platz',
  columns: {
    id: 'PlatzID', name: 'Name', description: null, type: 'Typ', warehouse: null, controllerId: null, address: 'Adresse',
    enabled: null, createdAt: null, modifiedAt: 'Geaendert'
  }
}

const seed = async (db: Database): Promise<void> => {
  const run = async (text: string) => { await db.execute({ text, params: [] }) }
  await run('CREATE TABLE "Artikel" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(20) NOT NULL UNIQUE, "Bez" VARCHAR(40) NOT NULL, "MinB" DECIMAL(10,3), "MaxB" DECIMAL(10,3), "Gewicht" DECIMAL(10,3), "Bestand" INT NOT NULL DEFAULT 0, "Geaendert" DATETIME)')
  // a name of '' and of bytes (both shown as ""), negative numbers, a name of spaces (the write pattern refuses it)
  await run(`INSERT INTO "Artikel" VALUES (1, 'A-1', '', -1, -2, -0.5, -3, '2024-04-02T10:00:00.000Z'), (2, 'A-2', X'00ff', 0, 1, 2, 0, '2024-04-02T10:00:00.000Z'), (3, 'A-3', '   ', NULL, NULL, NULL, 5, '2024-04-02T10:00:00.000Z')`)
  await run('CREATE TABLE "Platz" ("PlatzID" INTEGER PRIMARY KEY, "Name" VARCHAR(40) NOT NULL UNIQUE, "Typ" VARCHAR(16) NOT NULL, "Adresse" INTEGER, "Geaendert" DATETIME)')
  // an empty name, a type no list of values knows, addresses beyond 0 to 65535
  await run(`INSERT INTO "Platz" VALUES (1, '', 'kiosk', -5, '2024-04-02T10:00:00.000Z'), (2, 'P-2', 'vlm', 70000, '2024-04-02T10:00:00.000Z')`)
}

type Json = Record<string, any>

t.test('rows past the write limits validate against the documented response schemas; bodies keep the limits', { skip: sqliteOnly }, async (t) => {
  const ctx = await build(t, { mapping: { materials: MATERIALS, stations: STATIONS } }, seed)
  const headers = ctx.auth(ctx.adminToken)
  const doc = (await ctx.app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as { paths: Record<string, Record<string, Json>> }
  const ajv = addFormats.default(new Ajv.default({ strict: false, allErrors: true }))
  const responseSchema = (path: string, method: string, status: number): Json => doc.paths[path][method].responses[String(status)].content['application/json'].schema

  const reads: Array<[url: string, path: string]> = [
    ['/api/materials?sort=id', '/api/materials'],
    ['/api/materials/1', '/api/materials/{id}'],
    ['/api/materials/2', '/api/materials/{id}'],
    ['/api/materials/3', '/api/materials/{id}'],
    ['/api/stations?sort=id', '/api/stations'],
    ['/api/stations/1', '/api/stations/{id}'],
    ['/api/stations/2', '/api/stations/{id}']
  ]
  for (const [url, path] of reads) {
    const res = await ctx.app.inject({ method: 'GET', url, headers })
    t.equal(res.statusCode, 200, `${url}: ${res.body}`)
    const validate = ajv.compile(responseSchema(path, 'get', 200))
    t.ok(validate(res.json()), `${url} validates: ${ajv.errorsText(validate.errors)}`)
  }
  t.match((await ctx.app.inject({ method: 'GET', url: '/api/materials/1', headers })).json(), { name: '', minStock: -1, maxStock: -2, weight: -0.5, stockQuantity: -3 }, 'shown as stored')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials/2', headers })).json().name, '', 'bytes in a NOT NULL name: ""')
  t.match((await ctx.app.inject({ method: 'GET', url: '/api/stations/1', headers })).json(), { name: '', type: 'kiosk', address: -5 })
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/stations/2', headers })).json().address, 70000)

  // no write limit anywhere in a 2xx answer of any operation (an enum there is a value the code sets: a station's live status, login: true)
  const limits = /"(minLength|maxLength|pattern|minimum|maximum|exclusiveMinimum|exclusiveMaximum|multipleOf)":/
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
        if (status.startsWith('2')) t.notMatch(JSON.stringify(response), limits, `${method} ${path} ${status}: no write limit`)
      }
    }
  }

  // stored codes are returned as they are: no list of values in the answer, only in its description
  for (const path of ['/api/stations/{id}', '/api/users/{id}']) {
    const type = responseSchema(path, 'get', 200).properties.type
    t.same([type.type, type.enum, type.anyOf], ['string', undefined, undefined], `${path}: type is text`)
  }

  // the bodies keep them: a write is checked as before
  const body = (path: string, method: string): Json => doc.paths[path][method].requestBody.content['application/json'].schema
  // the name's pattern as the document spells it for client generators (portablePatterns)
  t.match(body('/api/materials', 'post').properties, { name: { minLength: 1, pattern: portablePatterns()[NOT_BLANK] }, weight: { minimum: 0 } })
  t.match(body('/api/materials/{id}', 'patch').properties, { name: { minLength: 1 }, minStock: { minimum: 0 } })
  t.match(body('/api/stations', 'post').properties, { name: { minLength: 1 }, address: { minimum: 0, maximum: 65535 } })
  const refused = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'A-9', name: '', weight: -1 } })
  t.equal(refused.statusCode, 400, refused.body)
  t.equal((await ctx.app.inject({ method: 'POST', url: '/api/stations', headers, payload: { name: 'P-9', address: 70000 } })).statusCode, 400)
})

t.test('a stored time past the year 9999 is shown as null, logged once, and the answer validates as a date-time', { skip: sqliteOnly }, async (t) => {
  const lines: Array<Record<string, unknown>> = []
  const mapping: TableMappingConfig = { ...MATERIALS, columns: { ...MATERIALS.columns, modifiedAt: { column: 'Geaendert', format: 'unix' } } as TableMappingConfig['columns'] }
  const ctx = await build(t, { mapping: { materials: mapping }, logging: { level: 'warn' } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "Artikel" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(20) NOT NULL UNIQUE, "Bez" VARCHAR(40) NOT NULL, "MinB" DECIMAL(10,3), "MaxB" DECIMAL(10,3), "Gewicht" DECIMAL(10,3), "Bestand" INT NOT NULL DEFAULT 0, "Geaendert" INTEGER NOT NULL)', params: [] })
    await db.execute({ text: 'INSERT INTO "Artikel" VALUES (1, \'A-1\', \'a\', NULL, NULL, NULL, 0, 253402300799), (2, \'A-2\', \'b\', NULL, NULL, NULL, 0, 253402300800), (3, \'A-3\', \'c\', NULL, NULL, NULL, 0, 253402300800)', params: [] })
  }, { logStream: { write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>) } } })
  const headers = ctx.auth(ctx.adminToken)
  const doc = (await ctx.app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as { paths: Record<string, Record<string, Json>> }
  const ajv = addFormats.default(new Ajv.default({ strict: false, allErrors: true }))
  const validate = ajv.compile(doc.paths['/api/materials'].get.responses['200'].content['application/json'].schema)
  const res = await ctx.app.inject({ method: 'GET', url: '/api/materials?sort=id', headers })
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json().data.map((m: Json) => m.modifiedAt), ['9999-12-31T23:59:59.000Z', null, null], 'not +010000-01-01T00:00:00.000Z')
  t.ok(validate(res.json()), ajv.errorsText(validate.errors))
  t.match(doc.paths['/api/materials/{id}'].get.responses['200'].content['application/json'].schema.properties.modifiedAt, { type: ['string', 'null'], format: 'date-time' })
  await ctx.app.inject({ method: 'GET', url: '/api/materials/2', headers })
  const warnings = lines.filter((l) => typeof l.msg === 'string' && /outside the years 0000 to 9999/.test(l.msg))
  t.match(warnings, [{ resource: 'materials', field: 'modifiedAt', value: '253402300800' }], 'one warning for the value, however often it is read')
  t.equal(warnings.length, 1)
})
