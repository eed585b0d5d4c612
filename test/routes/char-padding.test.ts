// CHAR(n) on SQLite: the picking system's codes keep their padding ('ST '), the API shows them without
// it ('ST'), and filters find the rows the API shows, as SQL Server's comparisons do by themselves.
import t from 'tap'
import type { TableMappingConfig } from '../../schemas/config.js'
import { paddingNotes } from '../../src/commands.js'
import { normalizeMapping } from '../../src/config.js'
import { openDatabase } from '../../src/db/index.js'
import { formatReport, introspect } from '../../src/db/introspect.js'
import { referenceMappings } from '../../src/db/resources.js'
import { inspectStorage } from '../../src/db/storage.js'
import type { Database } from '../../src/db/types.js'
import { build } from '../helpers/build.js'
import { tempDir } from '../helpers/temp.js'

const MSSQL = process.env.GATEWAY_TEST_DB === 'mssql' && Boolean(process.env.MSSQL_TEST_URL)

const MAPPING: TableMappingConfig = {
  table: 'Artikel',
  columns: {
    id: 'ArtID', materialNumber: 'ArtNr', name: 'Bezeichnung', description: null, unit: 'ME', barcode: null, minStock: null,
    maxStock: null, weight: null, blocked: null, blockReason: null, stockQuantity: null, createdAt: null, modifiedAt: null
  }
}

/** 'ST ' and 'KG ' as a program that pads writes them, 'ST' as one that does not */
const ROWS: Array<[number, string]> = [[1, 'ST '], [2, 'ST'], [3, 'KG '], [4, 'ST '], [5, 'L  ']]

async function fill (db: Database): Promise<void> {
  await db.execute({ text: 'CREATE TABLE "Artikel" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(20) NOT NULL UNIQUE, "Bezeichnung" VARCHAR(40) NOT NULL, "ME" CHAR(3))', params: [] })
  for (const [id, unit] of ROWS) {
    await db.execute({
      text: 'INSERT INTO "Artikel" ("ArtID", "ArtNr", "Bezeichnung", "ME") VALUES (@id, @nr, @name, @unit)',
      params: [{ name: 'id', kind: 'integer', value: id }, { name: 'nr', kind: 'string', value: `A-${id}` }, { name: 'name', kind: 'string', value: `Artikel ${id}` }, { name: 'unit', kind: 'string', value: unit }]
    })
  }
}

t.test('filters on a CHAR(n) column find the rows whose shown value matches', { skip: MSSQL && 'SQLite keeps the padding; SQL Server compares without it' }, async (t) => {
  const ctx = await build(t, { mapping: { materials: MAPPING } }, fill)
  const headers = ctx.auth(ctx.adminToken)
  const ids = async (query: string): Promise<number[]> => {
    const res = await ctx.app.inject({ method: 'GET', url: `/api/materials?sort=id&${query}`, headers })
    t.equal(res.statusCode, 200, query)
    return (res.json() as { data: Array<{ id: number }> }).data.map((m) => m.id)
  }
  const all = (await ctx.app.inject({ method: 'GET', url: '/api/materials?sort=id', headers })).json() as { data: Array<{ id: number, unit: string }> }
  t.same(all.data.map((m) => m.unit), ['ST', 'ST', 'KG', 'ST', 'L'], 'shown without the padding')
  t.same(await ids('unit=ST'), [1, 2, 4], 'equality, padded or not')
  t.same(await ids('unit=KG'), [3])
  t.same(await ids('unit=[not]ST'), [3, 5])
  t.same(await ids('unit=[or]KG;L'), [3, 5])
  t.same(await ids('unit=[nor]ST;KG'), [5])
  t.same(await ids('unit=[like]%25T'), [1, 2, 4], 'a pattern anchored at the end')
  t.same(await ids('unit=[notlike]%25T'), [3, 5])
  t.same(await ids('unit=[like]%T'), [1, 2, 4], 'typed with a raw %, which starts no escape')
  t.same(await ids('unit=[gt]L'), [1, 2, 4], "'ST' sorts after 'L' with or without its padding")
  t.same(await ids('unit=[lte]KG'), [3])
  // a walk sorted by the column: every row once, in the shown values' order (README: sorting compares without the padding)
  for (const [sort, order] of [['unit', [3, 5, 1, 2, 4]], ['-unit', [1, 2, 4, 5, 3]]] as const) {
    const seen: number[] = []
    let url: string | undefined = `/api/materials?sort=${sort}&limit=2`
    while (url !== undefined) {
      const page = (await ctx.app.inject({ method: 'GET', url, headers })).json() as { data: Array<{ id: number }>, meta: { next?: string } }
      seen.push(...page.data.map((m) => m.id))
      url = page.meta.next
    }
    // before: 'ST' (2) before 'ST ' (1) by the stored value (found by mapping-properties-users.test.ts, PROPERTY_SEED=777: '' and a CHAR's blanks)
    t.same(seen, order, `sort=${sort}: 'ST' padded or not is one value, ties by id`)
  }
})

// A picking system that pads its CHAR(n) codes as SQL Server would (SQLite keeps what it is given): the
// gateway writes them padded too, or the program's lookups of 'P-1                 ', the foreign keys
// holding that value and the unique index all miss the gateway's 'P-1'. Another installation keeps its
// codes unpadded in CHAR columns, with foreign keys from TEXT columns: its values stay as sent.
const PADDED: TableMappingConfig = {
  table: 'Artikel',
  columns: {
    id: 'ArtID', materialNumber: 'ArtNr', name: 'Bezeichnung', description: null, unit: 'ME', barcode: null, minStock: null,
    maxStock: null, weight: null, blocked: null, blockReason: null, stockQuantity: null, createdAt: null, modifiedAt: null
  }
}

const pad = (code: string, n: number): string => code.padEnd(n, ' ')

async function fillPadded (db: Database): Promise<void> {
  for (const text of [
    'CREATE TABLE "Einheit" ("ME" CHAR(2) PRIMARY KEY)',
    'CREATE TABLE "Artikel" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" CHAR(20) NOT NULL UNIQUE, "Bezeichnung" VARCHAR(40) NOT NULL, "ME" CHAR(2) REFERENCES "Einheit" ("ME"))',
    'CREATE TABLE "Lagerplatz" ("Platz" VARCHAR(10) PRIMARY KEY, "ArtNr" CHAR(20) REFERENCES "Artikel" ("ArtNr"))',
    "INSERT INTO \"Einheit\" VALUES ('ST'), ('L '), ('KG')",
    `INSERT INTO "Artikel" VALUES (1, '${pad('A-1', 20)}', 'Artikel 1', 'ST'), (2, '${pad('A-2', 20)}', 'Artikel 2', 'L ')`
  ]) await db.execute({ text, params: [] })
}

t.test('SQLite: CHAR(n) codes the picking system pads are written padded, as SQL Server stores them', { skip: MSSQL && 'SQL Server pads CHAR by itself' }, async (t) => {
  const ctx = await build(t, { mapping: { materials: PADDED } }, fillPadded)
  const headers = ctx.auth(ctx.adminToken)
  const stored = async (id: number): Promise<unknown> => (await ctx.db.query({ text: 'SELECT "ArtNr" AS nr, "ME" AS unit FROM "Artikel" WHERE "ArtID" = @id', params: [{ name: 'id', kind: 'integer', value: id }] }))[0]

  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'P-1', name: 'Neu', unit: 'L' } })
  t.equal(created.statusCode, 201, created.body)
  t.match(created.json(), { materialNumber: 'P-1', unit: 'L' }, 'shown without the padding')
  const id = (created.json() as { id: number }).id
  t.same(await stored(id), { nr: pad('P-1', 20), unit: 'L ' }, 'stored padded to the width, the unit code too (its foreign key holds)')
  // the old program's lookup, and its foreign key holding the padded code
  t.equal((await ctx.db.query({ text: `SELECT "ArtID" AS id FROM "Artikel" WHERE "ArtNr" = '${pad('P-1', 20)}'`, params: [] })).length, 1)
  await ctx.db.execute({ text: `INSERT INTO "Lagerplatz" VALUES ('LP-1', '${pad('P-1', 20)}')`, params: [] })
  await t.rejects(ctx.db.execute({ text: `INSERT INTO "Artikel" VALUES (9, '${pad('P-1', 20)}', 'Zweiter', 'ST')`, params: [] }), 'the unique index refuses a second P-1')
  const listed = (await ctx.app.inject({ method: 'GET', url: '/api/materials?materialNumber=P-1', headers })).json() as { data: unknown[] }
  t.equal(listed.data.length, 1, 'one material P-1')

  const dup = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'A-1', name: 'Zweiter', unit: 'ST' } })
  t.equal(dup.statusCode, 409, dup.body)
  t.match(dup.json(), { code: 'CONFLICT', message: "materialNumber 'A-1' already exists" }, 'named as the API shows it, not padded')

  const unit = await ctx.app.inject({ method: 'PATCH', url: `/api/materials/${id}`, headers, payload: { unit: 'KG' } })
  t.equal(unit.statusCode, 200, unit.body)
  const back = await ctx.app.inject({ method: 'PATCH', url: `/api/materials/${id}`, headers, payload: { unit: 'L' } })
  t.equal(back.statusCode, 200, back.body)
  t.same(await stored(id), { nr: pad('P-1', 20), unit: 'L ' }, 'an update of another field than the key writes it padded too')
  const other = await ctx.app.inject({ method: 'PATCH', url: '/api/materials/2', headers, payload: { materialNumber: 'A-20', unit: 'ST' } })
  t.equal(other.statusCode, 200, other.body)
  t.match(other.json(), { materialNumber: 'A-20', unit: 'ST' })
  t.same(await stored(2), { nr: pad('A-20', 20), unit: 'ST' }, 'an update of the key writes it padded')
  t.equal((await ctx.app.inject({ method: 'PATCH', url: '/api/materials/2', headers, payload: { materialNumber: 'P-1' } })).statusCode, 409, 'a key taken')
  const sorted = (await ctx.app.inject({ method: 'GET', url: '/api/materials?sort=materialNumber', headers })).json() as { data: Array<{ materialNumber: string }> }
  t.same(sorted.data.map((m) => m.materialNumber).slice(0, 2), ['A-1', 'A-20'])
})

t.test('SQLite: codes kept unpadded in a CHAR(n) column stay so, with foreign keys from TEXT columns', { skip: MSSQL && 'SQL Server pads CHAR by itself' }, async (t) => {
  const ctx = await build(t, { mapping: { materials: PADDED } }, async (db) => {
    for (const text of [
      'CREATE TABLE "Artikel" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" CHAR(20) NOT NULL UNIQUE, "Bezeichnung" VARCHAR(40) NOT NULL, "ME" CHAR(3))',
      'CREATE TABLE "Lagerplatz" ("Platz" TEXT PRIMARY KEY, "ArtNr" TEXT REFERENCES "Artikel" ("ArtNr"))',
      // one row an older program padded, among unpadded ones
      `INSERT INTO "Artikel" VALUES (1, 'A-1', 'Artikel 1', 'ST'), (2, 'A-2', 'Artikel 2', 'KG'), (3, '${pad('B-1', 20)}', 'Artikel 3', 'ST ')`
    ]) await db.execute({ text, params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'P-1', name: 'Neu', unit: 'L' } })
  t.equal(created.statusCode, 201, created.body)
  const [row] = await ctx.db.query({ text: 'SELECT "ArtNr" AS nr, "ME" AS unit FROM "Artikel" WHERE "ArtID" = @id', params: [{ name: 'id', kind: 'integer', value: (created.json() as { id: number }).id }] })
  t.same(row, { nr: 'P-1', unit: 'L' }, 'written as sent')
  await ctx.db.execute({ text: "INSERT INTO \"Lagerplatz\" VALUES ('LP-1', 'P-1')", params: [] })
  const dup = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'B-1', name: 'Zweiter' } })
  t.equal(dup.statusCode, 409, `a code the table holds padded is taken (${dup.body})`)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials?materialNumber=B-1', headers })).json().data.length, 1)
})

t.test('SQLite: a table keyed by a padded CHAR(n) code: the id in the path finds, changes and removes it', { skip: MSSQL && 'SQL Server pads CHAR by itself' }, async (t) => {
  const mapping: TableMappingConfig = { ...PADDED, columns: { ...PADDED.columns, id: 'ArtNr', unit: null } }
  const ctx = await build(t, { mapping: { materials: mapping } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "Artikel" ("ArtNr" CHAR(12) PRIMARY KEY, "Bezeichnung" VARCHAR(40) NOT NULL)', params: [] })
    await db.execute({ text: `INSERT INTO "Artikel" VALUES ('${pad('A-1', 12)}', 'Artikel 1'), ('${pad('A-2', 12)}', 'Artikel 2')`, params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'P-1', name: 'Neu' } })
  t.equal(created.statusCode, 201, created.body)
  t.match(created.json(), { id: 'P-1', materialNumber: 'P-1' })
  t.same(await ctx.db.query({ text: 'SELECT "ArtNr" AS nr FROM "Artikel" ORDER BY "ArtNr"', params: [] }), [{ nr: pad('A-1', 12) }, { nr: pad('A-2', 12) }, { nr: pad('P-1', 12) }])
  const taken = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'A-1', name: 'Zweiter' } })
  t.equal(taken.statusCode, 409, taken.body)
  t.match(taken.json(), { message: "materialNumber 'A-1' already exists" })
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials/P-1', headers })).json().name, 'Neu')
  const renamed = await ctx.app.inject({ method: 'PATCH', url: '/api/materials/P-1', headers, payload: { name: 'Anders' } })
  t.equal(renamed.statusCode, 200, renamed.body)
  t.equal((await ctx.app.inject({ method: 'DELETE', url: '/api/materials/P-1', headers })).statusCode, 204)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials/P-1', headers })).statusCode, 404)
})

t.test('SQLite: "pad" on a column\'s mapping decides where the data cannot (an empty table) or decides otherwise', { skip: MSSQL && 'SQL Server pads CHAR by itself' }, async (t) => {
  const create = async (db: Database): Promise<void> => {
    await db.execute({ text: 'CREATE TABLE "Artikel" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" CHAR(10) NOT NULL UNIQUE, "Bezeichnung" VARCHAR(40) NOT NULL, "ME" CHAR(3))', params: [] })
  }
  const padded = await build(t, { mapping: { materials: { ...PADDED, columns: { ...PADDED.columns, materialNumber: { column: 'ArtNr', pad: true } } } } }, create)
  let res = await padded.app.inject({ method: 'POST', url: '/api/materials', headers: padded.auth(padded.adminToken), payload: { materialNumber: 'P-1', name: 'Neu', unit: 'ST' } })
  t.equal(res.statusCode, 201, res.body)
  t.same(await padded.db.query({ text: 'SELECT "ArtNr" AS nr, "ME" AS unit FROM "Artikel"', params: [] }), [{ nr: pad('P-1', 10), unit: 'ST' }], 'padded as configured; the unit, which no data decides, as sent')

  const unpadded = await build(t, { mapping: { materials: { ...PADDED, columns: { ...PADDED.columns, materialNumber: { column: 'ArtNr', pad: false } } } } }, async (db) => {
    await create(db)
    await db.execute({ text: `INSERT INTO "Artikel" VALUES (1, '${pad('A-1', 10)}', 'Artikel 1', 'ST ')`, params: [] })
  })
  res = await unpadded.app.inject({ method: 'POST', url: '/api/materials', headers: unpadded.auth(unpadded.adminToken), payload: { materialNumber: 'P-1', name: 'Neu', unit: 'KG' } })
  t.equal(res.statusCode, 201, res.body)
  t.same(await unpadded.db.query({ text: 'SELECT "ArtNr" AS nr, "ME" AS unit FROM "Artikel" WHERE "ArtID" = 2', params: [] }), [{ nr: 'P-1', unit: 'KG ' }], '"pad": false writes as sent; the unit, whose values are padded, padded')
})

t.test('SQLite: what the data decides, as check-config and db introspect say it', async (t) => {
  const dir = tempDir(t, 'pg-char-pad-')
  const db = openDatabase(`sqlite:${dir}/p.db`, { create: true, logger: { info () {}, warn () {}, error () {} } })
  t.teardown(async () => { await db.close() })
  await fillPadded(db)
  // CHAR(3): one value shorter than the width ('L'), so not padded by the picking system; CHAR(4) all full width, none padded
  await db.execute({ text: 'ALTER TABLE "Artikel" ADD COLUMN "Zone" CHAR(3)', params: [] })
  await db.execute({ text: 'ALTER TABLE "Artikel" ADD COLUMN "Lager" CHAR(4)', params: [] })
  await db.execute({ text: "UPDATE \"Artikel\" SET \"Zone\" = CASE \"ArtID\" WHEN 1 THEN 'AB ' ELSE 'L' END, \"Lager\" = 'WH01'", params: [] })
  const columns = await db.columns({ table: 'Artikel', columns: {} })
  const decided = Object.fromEntries(columns.map((c) => [c.name, c.padsToWidth === true]))
  t.same(decided, { ArtID: false, ArtNr: true, Bezeichnung: false, ME: true, Zone: false, Lager: false })

  const mappings = { ...referenceMappings, materials: normalizeMapping(PADDED) }
  const { problems, columns: all } = await inspectStorage(db, mappings)
  t.same(problems.filter((p) => p.startsWith('materials')), [])
  const notes = paddingNotes('sqlite', mappings, all).filter((n) => n.startsWith('materials.'))
  t.match(notes, [/^materials\.materialNumber: column 'ArtNr' \(char\(20\)\) is written padded with blanks to 20 characters.*every value it holds is padded so/, /^materials\.unit: column 'ME' \(char\(2\)\) is written padded/])
  t.equal(notes.length, 2)

  const zone = normalizeMapping({ ...PADDED, columns: { ...PADDED.columns, unit: 'Zone', name: { column: 'Bezeichnung', pad: true } } })
  const checked = await inspectStorage(db, { ...mappings, materials: zone })
  t.match(checked.problems.filter((p) => !/^(?:stations|users)\b/.test(p)), [/^mapping\.materials\.columns\.name\.pad: column 'Bezeichnung' \(varchar\(40\)\) is no CHAR\(n\)/])
  t.match(paddingNotes('sqlite', { ...mappings, materials: normalizeMapping({ ...PADDED, columns: { ...PADDED.columns, unit: 'Zone' } }) }, all).filter((n) => n.startsWith('materials.unit')), [/column 'Zone' \(char\(3\)\) is written as sent, without padding \(its values do not show it/])
  // a time kept as digits in a CHAR(14) is no text to pad: no note advising "pad" for it (w3's finding)
  await db.execute({ text: 'ALTER TABLE "Artikel" ADD COLUMN "Geaendert" CHAR(14)', params: [] })
  await db.execute({ text: "UPDATE \"Artikel\" SET \"Geaendert\" = '20241107153012'", params: [] })
  const timed = { ...mappings, materials: normalizeMapping({ ...PADDED, columns: { ...PADDED.columns, modifiedAt: { column: 'Geaendert', format: 'yyyymmddhhmmss' } } }) }
  t.same(paddingNotes('sqlite', timed, (await inspectStorage(db, timed)).columns).filter((n) => n.startsWith('materials.modifiedAt')), [])

  const report = formatReport(await introspect(db, { materials: normalizeMapping(PADDED) })).join('\n')
  t.match(report, /ArtNr \(char\(20\), padded to 20, written so, not null/)
  // a configured "pad" is shown and stays in the proposed mapping, which is pasted back
  const configured = await introspect(db, { materials: normalizeMapping({ ...PADDED, columns: { ...PADDED.columns, materialNumber: { column: 'ArtNr', pad: false } } }) })
  t.match(formatReport(configured).join('\n'), /ArtNr \(char\(20\), written as sent \("pad": false\), not null/)
  t.same(configured.resources.materials.mapping?.columns.materialNumber, { column: 'ArtNr', pad: false })
})

// A legacy schema exported from another database spells CHAR(n) in the standard's words (CHARACTER(n),
// NATIONAL CHARACTER(n), NATIVE CHARACTER(n)) or with its own spacing and case; SQLite keeps the spelling.
t.test('SQLite: every spelling of CHAR(n) is fixed width, the varying ones are not', { skip: MSSQL && 'SQL Server pads CHAR by itself' }, async (t) => {
  const fixed = ['CHAR(20)', 'CHARACTER(20)', 'NATIONAL CHARACTER(20)', 'National  Char(20)', 'NCHAR(20)', 'NATIVE CHARACTER(20)', 'char ( 20 )', 'character\t(20)']
  const varying = ['VARCHAR(20)', 'CHARACTER VARYING(20)', 'CHAR VARYING(20)', 'NATIONAL CHARACTER VARYING(20)', 'NCHAR VARYING(20)', 'VARYING CHARACTER(20)', 'NVARCHAR(20)']
  for (const declared of [...fixed, ...varying]) {
    const ctx = await build(t, { mapping: { materials: PADDED } }, async (db) => {
      await db.execute({ text: `CREATE TABLE "Artikel" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" ${declared} NOT NULL UNIQUE, "Bezeichnung" VARCHAR(40) NOT NULL, "ME" VARCHAR(10))`, params: [] })
      await db.execute({ text: `INSERT INTO "Artikel" VALUES (1, '${pad('A-1', 20)}', 'Artikel 1', 'ST')`, params: [] })
    })
    const headers = ctx.auth(ctx.adminToken)
    const padded = fixed.includes(declared)
    t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials/1', headers })).json().materialNumber, padded ? 'A-1' : pad('A-1', 20), `${declared}: ${padded ? 'shown without the padding' : 'shown as stored'}`)
    const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'P-1', name: 'Neu' } })
    t.equal(created.statusCode, 201, `${declared}: ${created.body}`)
    const [row] = await ctx.db.query({ text: 'SELECT "ArtNr" AS nr FROM "Artikel" WHERE "ArtID" = @id', params: [{ name: 'id', kind: 'integer', value: (created.json() as { id: number }).id }] })
    t.same(row, { nr: padded ? pad('P-1', 20) : 'P-1' }, `${declared}: ${padded ? 'written padded, as the data shows' : 'written as sent'}`)
    await ctx.app.close()
  }
})
