import t from 'tap'
import { join } from 'node:path'
import { buildApp } from '../../src/app.js'
import { initDatabase } from '../../src/bootstrap.js'
import { validateConfig } from '../../src/config.js'
import { openDatabase, referenceMappings } from '../../src/db/index.js'
import { build, TEST_ARGON2 } from '../helpers/build.js'
import { tempDir } from '../helpers/temp.js'

t.test('walking meta.next returns every row once, also while rows change', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const headers = auth(ctx.adminToken)
  for (let i = 0; i < 250; i++) {
    await app.repos.materials.create({ materialNumber: `W-${String(i).padStart(3, '0')}`, name: `Item ${i % 7}`, unit: 'pcs', blocked: false })
  }
  const seen = new Map<number, number>()
  let url: string | undefined = '/api/materials?limit=60&count=true'
  let pages = 0
  while (url) {
    const res = await app.inject({ method: 'GET', url, headers })
    t.equal(res.statusCode, 200)
    const body: { data: Array<{ id: number }>, meta: { offset?: number, total: number, next?: string } } = res.json()
    t.equal(body.meta.offset, undefined, 'keyset pages have no offset')
    t.equal(res.headers['x-total-count'], String(body.meta.total))
    for (const m of body.data) seen.set(m.id, (seen.get(m.id) ?? 0) + 1)
    if (pages === 1) {
      // During the walk: one new row, and updates to rows before and after the current page.
      await app.repos.materials.create({ materialNumber: 'W-new', name: 'Late arrival', unit: 'pcs', blocked: false })
      await app.repos.materials.update(body.data[0].id - 30, { name: 'changed behind' })
      await app.repos.materials.update(body.data[0].id + 100, { name: 'changed ahead' })
    }
    url = body.meta.next
    if (url) t.match(url, /^\/api\/materials\?limit=60&count=true&cursor=[\w-]+$/)
    pages++
  }
  t.equal(pages, 5)
  t.equal(seen.size, 251, 'every row including the one inserted during the walk')
  t.ok([...seen.values()].every((n) => n === 1), 'no row twice')
  // as Python's requests (params={'count': True}) and PowerShell send a boolean
  const capital = await app.inject({ method: 'GET', url: '/api/materials?limit=1&count=True&blocked=False', headers })
  t.equal(capital.statusCode, 200, capital.body)
  t.equal(capital.headers['x-total-count'], '251')
})

t.test('sorting, filters and offset paging through the API', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const headers = auth(ctx.adminToken)
  const rows = [
    { materialNumber: 'A-1', name: 'Valve', weight: 2, minStock: 5 },
    { materialNumber: 'A-2', name: 'Bolt', weight: 0.5, minStock: 5 },
    { materialNumber: 'A-3', name: 'Nut', weight: null, minStock: 1 },
    { materialNumber: 'A-4', name: 'Ball valve', weight: 1, minStock: 9 }
  ]
  for (const r of rows) await app.inject({ method: 'POST', url: '/api/materials', headers, payload: r })
  const names = async (query: string) => {
    const res = await app.inject({ method: 'GET', url: `/api/materials?${query}`, headers })
    t.equal(res.statusCode, 200, query)
    return res.json().data.map((m: { name: string }) => m.name)
  }
  t.same(await names('sort=-minStock,name'), ['Ball valve', 'Bolt', 'Valve', 'Nut'], 'ties broken by the next key')
  t.same(await names('sort=minStock'), ['Nut', 'Valve', 'Bolt', 'Ball valve'], 'ties broken by id')
  t.same(await names('weight=[gte]1&weight=[lt]2'), ['Ball valve'], 'repeated parameters are ANDed')
  t.same(await names('weight=[null]'), ['Nut'])
  t.same(await names('name=[like]valve&sort=name'), ['Ball valve', 'Valve'])
  t.same(await names('name=[notlike]valve'), ['Bolt', 'Nut'])
  t.same(await names('materialNumber=[nor]A-1;A-2'), ['Nut', 'Ball valve'])
  t.same(await names('limit=2&offset=1'), ['Bolt', 'Nut'])
  const offset = await app.inject({ method: 'GET', url: '/api/materials?limit=2&offset=1', headers })
  t.equal(offset.json().meta.offset, 1)
  const future = new Date(Date.now() + 60000).toISOString()
  t.same(await names(`modifiedSince=${future}`), [])
  t.same((await names(`modifiedSince=${new Date(Date.now() - 60000).toISOString()}`)).length, 4)

  const bad: Array<[string, RegExp]> = [
    ['limit=1001', /^Query parameter 'limit' must be an integer from 1 to 1000, got '1001'$/],
    ['limit=0', /^Query parameter 'limit' must be an integer from 1 to 1000, got '0'$/],
    ['limit=-1', /^Query parameter 'limit' must be an integer from 1 to 1000, got '-1'$/],
    ['offset=-3', /^Query parameter 'offset' must be an integer from 0 to 9007199254740991, got '-3'$/],
    ['sort=colour', /colour/],
    ['colour=red', /Unknown query parameter 'colour'/],
    ['weight=[gt]heavy', /weight/],
    ['weight=[like]1', /weight/],
    ['modifiedSince=yesterday', /modifiedSince/],
    ['cursor=abc&offset=2', /cursor/],
    ['cursor=not-a-cursor', /cursor/]
  ]
  for (const [query, message] of bad) {
    const res = await app.inject({ method: 'GET', url: `/api/materials?${query}`, headers })
    t.equal(res.statusCode, 400, query)
    t.equal(res.json().code, 'BAD_QUERY')
    t.match(res.json().message, message, query)
  }
  const page = await app.inject({ method: 'GET', url: '/api/materials?limit=1&sort=name', headers })
  const cursor = new URL(page.json().meta.next, 'http://x').searchParams.get('cursor')
  const wrongSort = await app.inject({ method: 'GET', url: `/api/materials?limit=1&sort=-name&cursor=${cursor}`, headers })
  t.equal(wrongSort.statusCode, 400, 'a cursor only continues the sort it came from')
  // a cursor made by hand with text where the id (an integer key) is: no cursor of ours
  const byId = await app.inject({ method: 'GET', url: '/api/materials?limit=1', headers })
  const body = JSON.parse(Buffer.from(new URL(byId.json().meta.next, 'http://x').searchParams.get('cursor')!, 'base64url').toString('utf8'))
  const forged = Buffer.from(JSON.stringify({ ...body, v: body.v.map(() => 'a') }), 'utf8').toString('base64url')
  const tampered = await app.inject({ method: 'GET', url: `/api/materials?limit=1&cursor=${forged}`, headers })
  t.equal(tampered.statusCode, 400, 'not an empty page')
  t.match(tampered.json().message, /not a valid cursor/)

  const first = await app.inject({ method: 'GET', url: '/api/materials', headers })
  const again = await app.inject({ method: 'GET', url: '/api/materials', headers: { ...headers, 'if-none-match': first.headers.etag as string } })
  t.equal(again.statusCode, 304, 'an unchanged list answers 304')
  await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'A-5', name: 'Washer' } })
  const changed = await app.inject({ method: 'GET', url: '/api/materials', headers: { ...headers, 'if-none-match': first.headers.etag as string } })
  t.equal(changed.statusCode, 200, 'a changed list does not')
})

t.test('unknown operators are a 400 naming them; [eq] writes a value that starts with a bracket', async (t) => {
  const ctx = await build(t)
  const { app } = ctx
  const headers = ctx.auth(ctx.adminToken)
  for (const [materialNumber, name] of [['B-1', '[abc]'], ['B-2', 'abc'], ['B-3', '[eq]abc'], ['B-4', '50% off_cut'], ['B-5', '50 % off'], ['B-6', '500 offcut'], ['B-7', 'C:\\temp\\x']]) {
    t.equal((await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber, name } })).statusCode, 201)
  }
  const get = (query: Record<string, string>) => app.inject({ method: 'GET', url: '/api/materials', query, headers })
  const numbers = async (query: Record<string, string>): Promise<string[]> => {
    const res = await get(query)
    t.equal(res.statusCode, 200, JSON.stringify(query))
    return res.json().data.map((m: { materialNumber: string }) => m.materialNumber)
  }
  const operators = '[eq] [gt] [gte] [lt] [lte] [not] [like] [notlike] [or] [nor] [null] [notnull]'
  const eq = await get({ name: '[eq]abc' })
  t.same(eq.json().data.map((m: { materialNumber: string }) => m.materialNumber), ['B-2'], '[eq] is explicit equality')
  t.same(await numbers({ name: '[eq][abc]' }), ['B-1'], 'the literal text [abc]')
  t.same(await numbers({ name: '[EQ][eq]abc' }), ['B-3'])
  const unknown = await get({ name: '[abc]' })
  t.equal(unknown.statusCode, 400)
  t.same(unknown.json(), {
    statusCode: 400,
    code: 'BAD_QUERY',
    error: 'Bad Request',
    message: `Filter 'name': unknown operator '[abc]'; the operators are ${operators} (case-insensitive). To match a value that starts with '[', put [eq] before it: 'name=[eq][abc]'`
  })
  const ne = await get({ stockQuantity: '[ne]5' })
  t.equal(ne.statusCode, 400)
  t.same(ne.json(), {
    statusCode: 400,
    code: 'BAD_QUERY',
    error: 'Bad Request',
    message: `Filter 'stockQuantity': unknown operator '[ne]' (did you mean [not]?); the operators are ${operators} (case-insensitive). To match a value that starts with '[', put [eq] before it: 'stockQuantity=[eq][ne]5'`
  }, 'not "expected a number"')
  t.same(await numbers({ stockQuantity: '[NOT]5' }), ['B-1', 'B-2', 'B-3', 'B-4', 'B-5', 'B-6', 'B-7'], 'operators are case-insensitive')

  // [like]: \% and \_ are the characters themselves, \\ one backslash
  t.same(await numbers({ name: '[like]50%' }), ['B-4', 'B-5', 'B-6'], '% is a wildcard')
  t.same(await numbers({ name: '[like]50\\%' }), ['B-4'], '\\% is a literal percent (a substring search)')
  t.same(await numbers({ name: '[like]%\\_%' }), ['B-4'], '\\_ is a literal underscore')
  t.same(await numbers({ name: '[notlike]%\\%%' }), ['B-1', 'B-2', 'B-3', 'B-6', 'B-7'], 'no percent sign in the name')
  t.same(await numbers({ name: '[like]C:\\\\temp\\\\%' }), ['B-7'], '\\\\ is one backslash')
  t.same(await numbers({ name: '[like]C:\\temp\\x' }), ['B-7'], 'a backslash before anything else is literal')
})

t.test('materials mapped onto a foreign schema behave the same', async (t) => {
  const mapping = {
    table: 'MaterialBase',
    columns: {
      id: 'MatID', materialNumber: 'MatNo', name: 'MatName', description: 'MatDesc', unit: 'Uom', barcode: 'EAN',
      minStock: 'ReorderPoint', maxStock: 'MaxQty', weight: 'UnitWeight', blocked: 'Locked', blockReason: 'LockText',
      stockQuantity: 'QtyOnHand', createdAt: 'Created', modifiedAt: 'LastChange'
    }
  }
  const ctx = await build(t, { mapping: { materials: mapping } }, async (db) => {
    // A picking system's own table: other names, an extra column the gateway does not know.
    const mssql = db.dialect === 'mssql'
    if (mssql) await db.execute({ text: 'DROP TABLE IF EXISTS "MaterialBase"', params: [] })
    const [id, text, real, bool, time] = mssql
      ? ['int IDENTITY(1,1) PRIMARY KEY', 'nvarchar(200)', 'float', 'bit', 'datetime2(3)']
      : ['INTEGER PRIMARY KEY AUTOINCREMENT', 'TEXT', 'REAL', 'INTEGER', 'TEXT']
    await db.execute({
      text: `CREATE TABLE "MaterialBase" ("MatID" ${id}, "MatNo" ${text} NOT NULL UNIQUE, "MatName" ${text} NOT NULL,
        "MatDesc" ${text}, "Uom" ${text}, "EAN" ${text}, "ReorderPoint" ${real}, "MaxQty" ${real}, "UnitWeight" ${real}, "Locked" ${bool} NOT NULL DEFAULT 0,
        "LockText" ${text}, "QtyOnHand" ${real} NOT NULL DEFAULT 0, "Created" ${time}, "LastChange" ${time}, "BinLocation" ${text})`,
      params: []
    })
    // written the way each database takes a literal time (our SQLite text form; datetime2 without a zone)
    const ts = mssql ? '2025-01-01T00:00:00.000' : '2025-01-01T00:00:00.000Z'
    await db.execute({ text: `INSERT INTO "MaterialBase" ("MatNo", "MatName", "QtyOnHand", "BinLocation", "Created", "LastChange") VALUES ('LEGACY-1', 'Legacy item', 42, 'A-01-03', '${ts}', '${ts}')`, params: [] })
  })
  const { app, auth } = ctx
  const headers = auth(ctx.adminToken)
  const list = await app.inject({ method: 'GET', url: '/api/materials', headers })
  t.equal(list.statusCode, 200)
  t.match(list.json().data, [{ materialNumber: 'LEGACY-1', name: 'Legacy item', stockQuantity: 42, blocked: false, createdAt: '2025-01-01T00:00:00.000Z' }])
  t.notMatch(list.body, /MatNo|BinLocation|MaterialBase/, 'column names never leave the database layer')
  const created = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'NEW-1', name: 'New item', minStock: 3 } })
  t.equal(created.statusCode, 201)
  t.match(created.json(), { materialNumber: 'NEW-1', minStock: 3, unit: 'pcs' })
  const dup = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'LEGACY-1', name: 'x' } })
  t.equal(dup.statusCode, 409)
  t.match(dup.json().message, /materialNumber/)
  const upd = await app.inject({ method: 'PATCH', url: `/api/materials/${created.json().id}`, headers, payload: { blocked: true } })
  t.equal(upd.json().blocked, true)
  const filtered = await app.inject({ method: 'GET', url: '/api/materials?minStock=[gt]1&sort=-modifiedAt', headers })
  t.same(filtered.json().data.map((m: { materialNumber: string }) => m.materialNumber), ['NEW-1'])
  const raw = await ctx.db.query({ text: 'SELECT "ReorderPoint" AS r, "Locked" AS l FROM "MaterialBase" WHERE "MatNo" = @n', params: [{ name: 'n', kind: 'string', value: 'NEW-1' }] })
  t.same(raw.map((r) => ({ r: r.r, l: Number(r.l) })), [{ r: 3, l: 1 }], 'written to the mapped columns')

  // Legacy rows without a change time: a descending walk must still reach them (NULLs sort last).
  for (const no of ['OLD-1', 'OLD-2']) {
    await ctx.db.execute({ text: 'INSERT INTO "MaterialBase" ("MatNo", "MatName") VALUES (@n, @n)', params: [{ name: 'n', kind: 'string', value: no }] })
  }
  const walked: string[] = []
  let next: string | undefined = '/api/materials?sort=-modifiedAt&limit=1'
  while (next) {
    const page: { data: Array<{ materialNumber: string }>, meta: { next?: string } } = (await app.inject({ method: 'GET', url: next, headers })).json()
    walked.push(...page.data.map((m) => m.materialNumber))
    next = page.meta.next
  }
  t.same(walked, ['NEW-1', 'LEGACY-1', 'OLD-1', 'OLD-2'], 'every row once, NULL change times last')
})

t.test('a mapping that does not fit the database stops the start', async (t) => {
  const dir = tempDir(t, 'pg-mismatch-')
  const url = `sqlite:${join(dir, 'x.db')}`
  const stations = { table: 'Stations2', columns: { id: 'a', name: 'b', description: 'c', type: 'd', warehouse: 'e', controllerId: 'f', address: 'g', enabled: 'h', createdAt: 'i', modifiedAt: 'j' } }
  const config = validateConfig({ database: { url }, auth: { jwtSecret: 'k7Jq2vX9pL4mN8rT1wY6zB3cF5hD0gSa' }, logging: { level: 'silent' }, mapping: { stations } })
  const db = openDatabase(url, { create: true, logger: console })
  await db.execute({ text: 'CREATE TABLE "Stations2" ("a" INTEGER PRIMARY KEY)', params: [] })
  const mappings = { ...referenceMappings, stations }
  await t.rejects(initDatabase(db, { demo: false, mappings, argon2: TEST_ARGON2, print: () => {} }),
    /existing table does not match the configured mapping: stations.name: column 'b' does not exist/, 'db init never alters an existing table')
  await t.rejects(buildApp(config, { db }), /does not match the configured mapping.*column 'b'.*picking-gateway db init/, 'serve refuses to start')
  await db.close()
})

t.test('SQLite keeps at most 500 prepared statements, however many filter shapes clients send', async (t) => {
  const ctx = await build(t)
  const headers = ctx.auth(ctx.adminToken)
  await ctx.app.repos.materials.create({ materialNumber: 'S-1', name: 'v0', unit: 'pcs', blocked: false })
  const statements = (ctx.app.db as unknown as { cache: Map<string, unknown> }).cache
  // each count of [or] and [nor] values is a statement text of its own: 600 of them
  const values = (k: number): string => Array.from({ length: k }, (_, i) => `v${i}`).join(';')
  for (let k = 1; k <= 300; k++) {
    for (const url of [`/api/materials?name=[or]${values(k)}`, `/api/materials?name=[nor]${values(k)}`]) {
      const res = await ctx.app.inject({ method: 'GET', url, headers })
      if (res.statusCode !== 200) t.fail(`${url}: ${res.statusCode} ${res.body}`)
    }
  }
  t.ok(statements.size <= 500, `${statements.size} statements kept after 600 shapes`)
  // the first shape, pushed out, is prepared again
  const again = await ctx.app.inject({ method: 'GET', url: '/api/materials?name=[or]v0', headers })
  t.same(again.json().data.map((m: { materialNumber: string }) => m.materialNumber), ['S-1'])
  t.ok(statements.size <= 500)
})
