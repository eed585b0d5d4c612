// A picking system's article master keyed by its article number (text, leading zeros and all):
// the id and the materialNumber are one column, and the ids in paths, bodies and Location are text.
import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { validateConfig } from '../../src/config.js'
import { createPasswords } from '../../src/auth/passwords.js'
import type { Database } from '../../src/db/types.js'
import { ADMIN_PASSWORD, TEST_ARGON2, build, testDatabaseUrl, type TestContext } from '../helpers/build.js'
import { createMandantUsers, MANDANT_USERS, narrowMaterials } from '../helpers/legacy-fixture.js'

const NUMBERS = ['0099', '100234', 'A/7 Ü', '100235']

async function createTable (db: Database): Promise<void> {
  const mssql = db.dialect === 'mssql'
  if (mssql) await db.execute({ text: 'DROP TABLE IF EXISTS [dbo].[ArtStamm]', params: [] })
  await db.execute({
    text: mssql
      ? 'CREATE TABLE [dbo].[ArtStamm] ([ArtikelNr] NVARCHAR(20) NOT NULL PRIMARY KEY, [Bez] NVARCHAR(80) NOT NULL, [Geaendert] DATETIME2(3) NULL)'
      : 'CREATE TABLE "ArtStamm" ("ArtikelNr" VARCHAR(20) NOT NULL PRIMARY KEY, "Bez" VARCHAR(80) NOT NULL, "Geaendert" DATETIME)',
    params: []
  })
  for (const nr of NUMBERS) {
    await db.execute({ text: 'INSERT INTO "ArtStamm" ("ArtikelNr", "Bez") VALUES (@nr, @bez)', params: [{ name: 'nr', kind: 'string', value: nr }, { name: 'bez', kind: 'string', value: 'gleich' }] })
  }
}

const mapping = narrowMaterials('ArtStamm', { id: 'ArtikelNr', materialNumber: 'ArtikelNr', name: 'Bez', modifiedAt: 'Geaendert' })


/** The materials a walk by meta.next from `/api/materials?<query>` returns, each as `show` writes it; each page must be a 200. */
async function walkMaterials (t: Test, ctx: TestContext, query: string, show: (m: Record<string, unknown>) => string): Promise<string[]> {
  const seen: string[] = []
  let url: string | undefined = `/api/materials?${query}`
  while (url !== undefined) {
    const res: Awaited<ReturnType<typeof ctx.app.inject>> = await ctx.app.inject({ method: 'GET', url, headers: ctx.auth(ctx.adminToken) })
    t.equal(res.statusCode, 200, `${url}: ${res.body}`)
    if (res.statusCode !== 200) break
    const page: { data: Array<Record<string, unknown>>, meta: { next?: string } } = res.json()
    seen.push(...page.data.map(show))
    url = page.meta.next
  }
  return seen
}
t.test('the configuration may map id and materialNumber to one column (and only those two)', async (t) => {
  const auth = { jwtSecret: randomBytes(32).toString('hex') }
  t.doesNotThrow(() => validateConfig({ auth, mapping: { materials: mapping } }))
  t.throws(() => validateConfig({ auth, mapping: { materials: { ...mapping, columns: { ...mapping.columns, name: 'ArtikelNr' } } } }), /mapping\.materials\.columns\.name: column 'ArtikelNr' is already id's/)
})

t.test('materials keyed by a text article number: read, list, page, create, update and delete by it', async (t) => {
  const ctx = await build(t, { mapping: { materials: mapping } }, createTable)
  const { app } = ctx
  const headers = ctx.auth(ctx.adminToken)

  const one = await app.inject({ method: 'GET', url: '/api/materials/0099', headers })
  t.equal(one.statusCode, 200, one.body)
  t.match(one.json(), { id: '0099', materialNumber: '0099', name: 'gleich' }, 'the leading zero kept: text, not the number 99')
  t.equal((await app.inject({ method: 'GET', url: '/api/materials/99', headers })).statusCode, 404)
  t.equal((await app.inject({ method: 'GET', url: `/api/materials/${encodeURIComponent('A/7 Ü')}`, headers })).json().id, 'A/7 Ü', 'percent-encoded in the path')

  // every row once, walking pages of one ordered by name (all equal) and then the text id
  const seen: string[] = []
  let url: string | undefined = '/api/materials?limit=1&sort=name'
  while (url !== undefined) {
    const page: { data: Array<{ id: string }>, meta: { next?: string } } = (await app.inject({ method: 'GET', url, headers })).json()
    seen.push(...page.data.map((m) => m.id))
    url = page.meta.next
  }
  t.same(seen, [...NUMBERS].sort(), 'ties broken by the text id')
  // sorted by the key itself: ORDER BY names the column once (T-SQL error 169), the pages are the same
  for (const [sort, order] of [['materialNumber', [...NUMBERS].sort()], ['-materialNumber', [...NUMBERS].sort().reverse()]] as const) {
    const walked: string[] = []
    let next: string | undefined = `/api/materials?limit=1&sort=${sort}`
    while (next !== undefined) {
      const page: { data: Array<{ id: string }>, meta: { next?: string } } = (await app.inject({ method: 'GET', url: next, headers })).json()
      walked.push(...page.data.map((m) => m.id))
      next = page.meta.next
    }
    t.same(walked, order, `sort=${sort}, page by page`)
  }
  t.same((await app.inject({ method: 'GET', url: '/api/materials?id=[or]0099;100235&sort=id', headers })).json().data.map((m: { id: string }) => m.id), ['0099', '100235'])

  const created = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'N 1/2', name: 'Neu' } })
  t.equal(created.statusCode, 201, created.body)
  t.equal(created.headers.location, '/api/materials/N%201%2F2')
  t.match(created.json(), { id: 'N 1/2', materialNumber: 'N 1/2' })
  t.equal((await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: '0099', name: 'Doppelt' } })).statusCode, 409)

  const renamed = await app.inject({ method: 'PATCH', url: created.headers.location as string, headers, payload: { name: 'Umbenannt', materialNumber: 'N 1/2' } })
  t.equal(renamed.statusCode, 200, renamed.body)
  t.equal(renamed.json().name, 'Umbenannt')
  const rekey = await app.inject({ method: 'PATCH', url: created.headers.location as string, headers, payload: { materialNumber: 'N-3' } })
  t.equal(rekey.statusCode, 400)
  t.match(rekey.json().message, /'materialNumber' is this installation's id of the material .* and cannot change/)
  t.equal((await app.inject({ method: 'GET', url: '/api/materials/N-3', headers })).statusCode, 404, 'nothing renamed')

  t.equal((await app.inject({ method: 'DELETE', url: created.headers.location as string, headers })).statusCode, 204)
  t.equal((await app.inject({ method: 'GET', url: created.headers.location as string, headers })).statusCode, 404)

  const openapi = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  t.match(openapi.paths['/api/materials/{id}'].get.parameters.find((p: { name: string }) => p.name === 'id').schema, { type: 'string', maxLength: 20 })
})

t.test('a create under a text id no URL can name (longer than a path parameter may be, \'.\' or \'..\') is a 400 and writes nothing', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite DDL' }, async (t) => {
  const wide = narrowMaterials('Lang', { id: 'Nr', materialNumber: 'Nr', name: 'Bez', modifiedAt: 'Geaendert' })
  const ctx = await build(t, { mapping: { materials: wide } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "Lang" ("Nr" VARCHAR(200) NOT NULL PRIMARY KEY, "Bez" VARCHAR(80) NOT NULL, "Geaendert" DATETIME)', params: [] })
  })
  const { app } = ctx
  const headers = ctx.auth(ctx.adminToken)
  for (const nr of ['x'.repeat(101), 'ü'.repeat(150), '.', '..']) {
    const res = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: nr, name: 'n' } })
    t.equal(res.statusCode, 400, `${nr.slice(0, 12)} (${nr.length}): ${res.body}`)
    t.match(res.json(), { code: 'VALIDATION_ERROR', message: /'materialNumber' is this installation's id .* at most 100 characters, and not '\.' or '\.\.'/ })
  }
  t.equal((await app.inject({ method: 'GET', url: '/api/materials?count=true', headers })).json().meta.total, 0, 'nothing was written')
  const longest = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'x'.repeat(100), name: 'n' } })
  t.equal(longest.statusCode, 201, longest.body)
  t.equal((await app.inject({ method: 'GET', url: longest.headers.location as string, headers })).statusCode, 200, '100 characters: its Location answers')
  const openapi = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  t.match(openapi.paths['/api/materials/{id}'].get.parameters.find((p: { name: string }) => p.name === 'id').schema, { type: 'string', maxLength: 100 }, 'the document says what a path takes, not the column\'s 200')
})

t.test('SQLite: a padded CHAR key is read, updated and deleted by its value as shown', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQL Server ignores the padding itself' }, async (t) => {
  const ctx = await build(t, { mapping: { materials: narrowMaterials('ArtC', { id: 'Nr', materialNumber: 'Nr', name: 'Bez' }) } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "ArtC" ("Nr" CHAR(10) NOT NULL PRIMARY KEY, "Bez" VARCHAR(40) NOT NULL)', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtC" VALUES (\'A-1       \', \'gepolstert\'), (\'A-2       \', \'auch\')', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const read = await ctx.app.inject({ method: 'GET', url: '/api/materials/A-1', headers })
  t.equal(read.statusCode, 200, read.body)
  t.match(read.json(), { id: 'A-1', materialNumber: 'A-1' })
  const updated = await ctx.app.inject({ method: 'PATCH', url: '/api/materials/A-1', headers, payload: { name: 'geändert' } })
  t.equal(updated.statusCode, 200, updated.body)
  t.equal(updated.json().name, 'geändert')
  t.equal((await ctx.app.inject({ method: 'DELETE', url: '/api/materials/A-2', headers })).statusCode, 204)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials/A-2', headers })).statusCode, 404)
})

t.test('a table keyed by a numeric article number: materialNumber is the id, a whole number a path can name', async (t) => {
  const ctx = await build(t, { mapping: { materials: narrowMaterials('ArtNum', { id: 'Nr', materialNumber: 'Nr', name: 'Bez' }) } }, async (db) => {
    const mssql = db.dialect === 'mssql'
    if (mssql) await db.execute({ text: 'DROP TABLE IF EXISTS [dbo].[ArtNum]', params: [] })
    // SQLite: the rowid itself; SQL Server: a plain INT key (an IDENTITY one is refused at start)
    await db.execute({ text: `CREATE TABLE ${mssql ? '[dbo].[ArtNum] ([Nr] INT NOT NULL PRIMARY KEY' : '"ArtNum" ("Nr" INTEGER PRIMARY KEY'}, "Bez" VARCHAR(40) NOT NULL)`, params: [] })
    await db.execute({ text: 'INSERT INTO "ArtNum" ("Nr", "Bez") VALUES (4711, \'alt\')', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  t.match((await ctx.app.inject({ method: 'GET', url: '/api/materials/4711', headers })).json(), { id: 4711, materialNumber: '4711' })
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: '100234', name: 'neu' } })
  t.equal(created.statusCode, 201, created.body)
  t.equal(created.headers.location, '/api/materials/100234')
  t.match(created.json(), { id: 100234, materialNumber: '100234' })
  // a legacy table's 0 and negative numbers are ids a path names too
  const negative = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: '-6', name: 'minus' } })
  t.equal(negative.statusCode, 201, negative.body)
  t.equal(negative.headers.location, '/api/materials/-6')
  t.match((await ctx.app.inject({ method: 'GET', url: '/api/materials/-6', headers })).json(), { id: -6, materialNumber: '-6' })
  for (const bad of ['+6', '-0', '0124', '12.0', '9007199254740993', 'A-1']) {
    const res = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: bad, name: 'x' } })
    t.equal(res.statusCode, 400, bad)
    if (bad !== 'A-1') t.match(res.json().message, /it must be a whole number up to 9007199254740991 in magnitude, without plus sign or leading zero/, bad)
  }
})

t.test('an id column that is one column of a composite key (ArtNr of (Mandant, ArtNr)): a read, update or delete of an id two rows hold is a 409 and changes neither', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite DDL' }, async (t) => {
  const ctx = await build(t, { mapping: { materials: narrowMaterials('ArtMandant', { id: 'ArtNr', materialNumber: 'ArtNr', name: 'Bez' }) } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "ArtMandant" ("Mandant" INTEGER NOT NULL DEFAULT 1, "ArtNr" VARCHAR(20) NOT NULL, "Bez" VARCHAR(40) NOT NULL, PRIMARY KEY ("Mandant", "ArtNr"))', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtMandant" VALUES (1, \'A-1\', \'eins\'), (2, \'A-1\', \'zwei\'), (1, \'B-1\', \'allein\')', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const rows = async (): Promise<string[]> => (await ctx.app.inject({ method: 'GET', url: '/api/materials?sort=name', headers })).json().data.map((m: { id: string, name: string }) => `${m.id}:${m.name}`)
  const before = await rows()
  t.same(before, ['B-1:allein', 'A-1:eins', 'A-1:zwei'])
  for (const [method, payload] of [['PATCH', { name: 'beide?' }], ['POST', { name: 'beide?' }], ['DELETE', undefined]] as const) {
    const res = await ctx.app.inject({ method, url: '/api/materials/A-1', headers, ...(payload !== undefined && { payload }) })
    t.equal(res.statusCode, 409, `${method}: ${res.body}`)
    t.match(res.json(), { code: 'CONFLICT', message: /^2 rows of the picking system's table hold the material id A-1 .*nothing was changed/ })
  }
  t.same(await rows(), before, 'neither row changed, none deleted')
  // a read too: showing one of them would hand a client another's row (before: a 200 with one of them)
  for (const extra of [{}, { 'if-none-match': '*' }, { 'if-none-match': 'W/"x"' }]) {
    const read = await ctx.app.inject({ method: 'GET', url: '/api/materials/A-1', headers: { ...headers, ...extra } })
    t.equal(read.statusCode, 409, `GET ${JSON.stringify(extra)}: ${read.body}`)
    t.match(read.json(), { code: 'CONFLICT', message: /^2 rows of the picking system's table hold the material id A-1 .*nothing was read/ })
    t.equal(read.headers.etag, undefined, 'no ETag')
  }
  const one = await ctx.app.inject({ method: 'GET', url: '/api/materials/B-1', headers })
  t.equal(one.statusCode, 200, 'an id one row holds is read as before')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials/B-1', headers: { ...headers, 'if-none-match': one.headers.etag as string } })).statusCode, 304)
  const single = await ctx.app.inject({ method: 'PATCH', url: '/api/materials/B-1', headers, payload: { name: 'geändert' } })
  t.equal(single.statusCode, 200, `an id one row holds is written as before: ${single.body}`)
  t.equal((await ctx.app.inject({ method: 'DELETE', url: '/api/materials/B-1', headers })).statusCode, 204)
})

t.test('an id column that is one column of a composite key: a walk by meta.next returns every row, also where a page would end between rows that share an id', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite DDL' }, async (t) => {
  const ctx = await build(t, { mapping: { materials: narrowMaterials('ArtMandant', { id: 'ArtNr', materialNumber: 'ArtNr', name: 'Bez' }) } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "ArtMandant" ("Mandant" INTEGER NOT NULL DEFAULT 1, "ArtNr" VARCHAR(20) NOT NULL, "Bez" VARCHAR(40) NOT NULL, PRIMARY KEY ("Mandant", "ArtNr"))', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtMandant" VALUES (1, \'A-1\', \'gleich\'), (2, \'A-1\', \'gleich\'), (1, \'B-1\', \'allein\'), (3, \'A-1\', \'gleich\'), (2, \'C-1\', \'gleich\')', params: [] })
  })
  const all = ['A-1:gleich', 'A-1:gleich', 'A-1:gleich', 'B-1:allein', 'C-1:gleich']
  const walk = async (query: string): Promise<string[]> => (await walkMaterials(t, ctx, query, (m) => `${String(m.id)}:${String(m.name)}`)).sort()
  // before: a page that ended at the first A-1 had the cursor of A-1, and the next page began after every A-1
  for (const query of ['limit=1', 'limit=2', 'limit=3', 'limit=2&sort=-id', 'limit=2&sort=name', 'limit=1&sort=-name']) {
    t.same(await walk(query), all, query)
  }
})

t.test('an id column that is one column of a composite key, declared COLLATE NOCASE: a walk by meta.next returns every row where ids differ only in case, which the database takes for one', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite DDL' }, async (t) => {
  const ctx = await build(t, { mapping: { materials: narrowMaterials('ArtMandant', { id: 'ArtNr', materialNumber: 'ArtNr', name: 'Bez' }) } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "ArtMandant" ("Mandant" INTEGER NOT NULL DEFAULT 1, "ArtNr" VARCHAR(20) COLLATE NOCASE NOT NULL, "Bez" VARCHAR(40) NOT NULL, PRIMARY KEY ("Mandant", "ArtNr"))', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtMandant" VALUES (1, \'a-1\', \'eins\'), (2, \'A-1\', \'zwei\'), (1, \'B-1\', \'allein\'), (3, \'b-1\', \'drei\')', params: [] })
  })
  const all = ['A-1:zwei', 'B-1:allein', 'a-1:eins', 'b-1:drei']
  const walk = async (query: string): Promise<string[]> => (await walkMaterials(t, ctx, query, (m) => `${String(m.id)}:${String(m.name)}`)).sort()
  // before: a page that ended at 'a-1' had its cursor, and the next page's "ArtNr" > 'a-1' (NOCASE) passed over 'A-1'
  for (const query of ['limit=1', 'limit=3', 'limit=1&sort=-id', 'limit=1&sort=materialNumber', 'limit=1&count=true']) {
    t.same(await walk(query), all, query)
  }
  for (const id of ['a-1', 'A-1', 'b-1']) {
    const res = await ctx.app.inject({ method: 'GET', url: `/api/materials/${id}`, headers: ctx.auth(ctx.adminToken) })
    t.equal(res.statusCode, 409, `${id}: the column takes both spellings for one id`)
  }
})

t.test('SQLite: a CHAR(n) COLLATE NOCASE key compares regardless of case, as the column does, also where its padding is dropped: \'a-1\' and \'A-1     \' are one id', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite DDL' }, async (t) => {
  const ctx = await build(t, { mapping: { materials: narrowMaterials('ArtMandant', { id: 'ArtNr', materialNumber: 'ArtNr', name: 'Bez' }) } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "ArtMandant" ("Mandant" INTEGER NOT NULL DEFAULT 1, "ArtNr" CHAR(8) COLLATE NOCASE NOT NULL, "Bez" VARCHAR(40) NOT NULL, PRIMARY KEY ("Mandant", "ArtNr"))', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtMandant" VALUES (1, \'a-1\', \'eins\'), (2, \'A-1     \', \'zwei\'), (1, \'B-1\', \'allein\')', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  // before: RTRIM("ArtNr", ' ') compared in BINARY, so each spelling named one row (a VARCHAR(8) COLLATE NOCASE column: both)
  for (const id of ['a-1', 'A-1']) {
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const res = await ctx.app.inject({ method, url: `/api/materials/${id}`, headers, ...(method === 'PATCH' && { payload: { name: 'beide?' } }) })
      t.equal(res.statusCode, 409, `${method} ${id}: ${res.body}`)
    }
  }
  for (const query of ['id=A-1', 'materialNumber=a-1', 'id=[or]x;a-1']) {
    const res = await ctx.app.inject({ url: `/api/materials?${query}&sort=name`, headers })
    t.same(res.json().data.map((m: { name: string }) => m.name), ['eins', 'zwei'], query)
  }
  t.same((await ctx.app.inject({ url: '/api/materials?sort=name', headers })).json().data.map((m: { name: string }) => m.name), ['allein', 'eins', 'zwei'], 'neither row changed, none deleted')
  t.equal((await ctx.app.inject({ url: '/api/materials/b-1', headers })).statusCode, 200, 'an id one row holds, in another case')
})

t.test('SQLite: a TEXT PRIMARY KEY not declared NOT NULL, where the picking system left rows without a key: lists and counts leave them out, and a walk by meta.next gets past them in every order', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite DDL' }, async (t) => {
  const ctx = await build(t, { mapping: { materials: narrowMaterials('ArtNull', { id: 'ArtNr', materialNumber: 'ArtNr', name: 'Bez' }) } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "ArtNull" ("ArtNr" TEXT PRIMARY KEY, "Bez" VARCHAR(40) NOT NULL)', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtNull" VALUES (NULL, \'ohne 1\'), (\'B\', \'b\'), (NULL, \'ohne 2\'), (\'A\', \'a\'), (\'\', \'leer\'), (NULL, \'ohne 3\')', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const walk = async (query: string): Promise<string[]> => await walkMaterials(t, ctx, query, (m) => `${String(m.id)}:${String(m.name)}`)
  t.same(await walk('limit=1'), [':leer', 'A:a', 'B:b'], 'sorted by id: the empty key is one, the rows without any are not')
  t.same(await walk('limit=1&sort=-id'), ['B:b', 'A:a', ':leer'])
  t.same(await walk('limit=2&sort=name'), ['A:a', 'B:b', ':leer'])
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials?count=true', headers })).json().meta.total, 3)
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'C', name: 'c' } })
  t.equal(created.statusCode, 201, created.body)
  t.same(await walk('limit=2'), [':leer', 'A:a', 'B:b', 'C:c'])
})

t.test('a user table whose id column is one column of a composite key (Nr of (Mandant, Nr)): a login of an id two rows hold is a 409 that says so and writes nothing, its tokens from before are a 401, and a user learns no more of such an id than of another\'s', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite DDL' }, async (t) => {
  const password = 'legacy-password-1'
  const passwords = await createPasswords(TEST_ARGON2)
  const hash = await passwords.hash(password)
  const logs: Array<Record<string, unknown>> = []
  const ctx = await build(t, { mapping: { users: MANDANT_USERS }, logging: { level: 'warn' } }, async (db) => {
    await createMandantUsers(db, await passwords.hash(ADMIN_PASSWORD))
    await db.execute({
      text: 'INSERT INTO "BenMandant" ("Mandant", "Nr", "Login", "PwHash", "Rolle") VALUES (1, 7, \'schulz\', @hash, \'B\'), (1, 8, \'lager\', @hash, \'B\')',
      params: [{ name: 'hash', kind: 'string', value: hash }]
    })
  }, { logStream: { write: (line: string) => { logs.push(JSON.parse(line) as Record<string, unknown>) } } })
  const { app } = ctx
  // schulz logged in while id 7 was its own; then the picking system gave meier, of another client, id 7 too
  const schulz = await ctx.login('schulz', password)
  await ctx.db.execute({ text: 'INSERT INTO "BenMandant" ("Mandant", "Nr", "Login", "PwHash", "Rolle") VALUES (2, 7, \'meier\', @hash, \'B\')', params: [{ name: 'hash', kind: 'string', value: hash }] })
  // schulz's tokens name id 7, which meier's row holds too (before: a 409 CONFLICT on every request, the refresh too)
  for (const [method, url, token] of [['GET', '/api/materials', schulz.accessToken], ['GET', '/api/users/7', schulz.accessToken], ['POST', '/api/users/refresh', schulz.refreshToken]] as const) {
    const res = await app.inject({ method, url, headers: ctx.auth(token) })
    t.equal(res.statusCode, 401, `${method} ${url}: ${res.body}`)
    t.match(res.json(), { code: 'TOKEN_INVALID', message: 'The token is invalid' })
  }
  // a login again, with the right password: a 409 that says why, rather than tokens that are a 401 on every request
  // (before: a 200, and a client that logs in again on a 401 looped); nothing written, nor counted as a failed login
  const stored = async (): Promise<unknown[]> => await ctx.db.query({ text: 'SELECT "Mandant", "Nr", "PwHash", "TokVer", "Login_am", "Geaendert" FROM "BenMandant" ORDER BY "Mandant", "Nr"', params: [] })
  const before = await stored()
  // six times each: a sixth failure within 15 minutes would be a 429
  for (let i = 0; i < 6; i++) {
    for (const username of ['schulz', 'meier']) {
      const res = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username, password } })
      t.equal(res.statusCode, 409, `${username} ${i}: ${res.body}`)
      t.same(res.json(), { statusCode: 409, code: 'CONFLICT', error: 'Conflict', message: "This account cannot log in: its user id is held by more than one row of the picking system's user table, so no token can name it alone; nothing was changed. An administrator has to give it an id of its own" })
    }
  }
  t.same(await stored(), before, 'no row changed: no last login time, no rehash, no token version')
  const warnings = logs.filter((line) => String(line.msg).startsWith('a login of user id 7 was refused'))
  t.equal(warnings.length, 12, 'each refusal is logged')
  t.match(warnings[0], { level: 40, user: 7, table: 'BenMandant', msg: /several rows of the user table BenMandant hold that id/ })
  // the password is checked first: a wrong one learns nothing new (the same 401 as for any name)
  const wrong = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'schulz', password: 'not-the-password' } })
  t.equal(wrong.statusCode, 401, wrong.body)
  t.match(wrong.json(), { code: 'INVALID_CREDENTIALS', login: false })
  // another user: id 7 is another's record, as an id no row holds (before: a 409 that told it the id exists)
  const lager = ctx.auth((await ctx.login('lager', password)).accessToken)
  for (const id of ['7', '99']) {
    const read = await app.inject({ method: 'GET', url: `/api/users/${id}`, headers: lager })
    t.equal(read.statusCode, 403, `GET ${id}: ${read.body}`)
    t.match(read.json(), { code: 'FORBIDDEN', message: 'You may only read your own user record' })
    const update = await app.inject({ method: 'POST', url: `/api/users/${id}`, headers: lager, payload: { password: 'takeover-password' } })
    t.equal(update.statusCode, 403, `POST ${id}: ${update.body}`)
    t.match(update.json(), { code: 'FORBIDDEN', message: 'You may only change your own user record' })
  }
  // an admin is told why
  const admin = await app.inject({ method: 'GET', url: '/api/users/7', headers: ctx.auth(ctx.adminToken) })
  t.equal(admin.statusCode, 409, admin.body)
  t.match(admin.json(), { code: 'CONFLICT', message: /^2 rows of the picking system's table hold the user id 7 / })
  t.equal((await app.inject({ method: 'GET', url: '/api/users/8', headers: lager })).statusCode, 200, 'an id one row holds is its user\'s as before')
})

t.test('SQLite: a key column declared COLLATE NOCASE whose unique index is BINARY (\'a\', \'A\', \'b\'): ids compare as the index does, so a walk loses no row and each id names its own row', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'SQLite DDL' }, async (t) => {
  const ctx = await build(t, { mapping: { materials: narrowMaterials('ArtCase', { id: 'Nr', materialNumber: 'Nr', name: 'Bez' }) } }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "ArtCase" ("Nr" TEXT COLLATE NOCASE NOT NULL, "Bez" VARCHAR(40) NOT NULL)', params: [] })
    await db.execute({ text: 'CREATE UNIQUE INDEX "ix_ArtCase" ON "ArtCase" ("Nr" COLLATE BINARY)', params: [] })
    await db.execute({ text: 'INSERT INTO "ArtCase" VALUES (\'a\', \'klein\'), (\'A\', \'gross\'), (\'b\', \'bee\')', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const walk = async (query: string): Promise<string[]> => await walkMaterials(t, ctx, query, (m) => String(m.id))
  // before: a, b ('A' skipped: the keyset compared with the column's NOCASE)
  for (const sort of ['id', '-id', 'materialNumber', '-materialNumber']) {
    const seen = await walk(`limit=1&sort=${sort}`)
    t.same([...seen].sort(), ['A', 'a', 'b'], `sort=${sort}: every row once (${seen.join(', ')})`)
  }
  for (const [id, name] of [['a', 'klein'], ['A', 'gross']]) {
    const read = await ctx.app.inject({ method: 'GET', url: `/api/materials/${id}`, headers })
    t.equal(read.statusCode, 200, `GET ${id}: ${read.body}`)
    t.equal(read.json().name, name, `${id} names its own row`)
  }
  const patched = await ctx.app.inject({ method: 'PATCH', url: '/api/materials/A', headers, payload: { name: 'GROSS' } })
  t.equal(patched.statusCode, 200, `an update of A changes A alone: ${patched.body}`)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials/a', headers })).json().name, 'klein', 'a unchanged')
  // the index tells 'B' from 'b', as the picking system's own inserts find: a material of its own
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'B', name: 'Bee' } })
  t.equal(created.statusCode, 201, created.body)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials/b', headers })).json().name, 'bee', 'b is still its own row')
  t.same((await walk('limit=2&sort=id')), ['A', 'B', 'a', 'b'], 'in the index\'s order')
})
