// Station and user tables keyed by text, as legacy picking systems keep them: a station by its code
// ('PTL-01'), a user by its login name. The id and the name are one column; paths, bodies, events,
// stream filters and tokens carry the text.
import { once } from 'node:events'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { TableMappingConfig } from '../../schemas/config.js'
import { createPasswords } from '../../src/auth/passwords.js'
import { initDatabase } from '../../src/bootstrap.js'
import { mappingsOf } from '../../src/config.js'
import { startSimulator } from '../../src/hardware/index.js'
import type { Database } from '../../src/db/types.js'
import { ADMIN_PASSWORD, TEST_ARGON2, build, type TestContext } from '../helpers/build.js'
import { until } from '../helpers/wait.js'
import { AUDIENCE, startProvider } from '../helpers/oidc.js'
import type { Config } from '../../src/config.js'

const MSSQL = process.env.GATEWAY_TEST_DB === 'mssql' && Boolean(process.env.MSSQL_TEST_URL)
const FAST = { ackTimeout: 150, heartbeatIdle: 200, deadAfter: 600, backoffInitial: 20, backoffMax: 100, stableAfter: 1000, connectTimeout: 500 }
const PASSWORD = 'legacy-password-1'

const USERS: TableMappingConfig = {
  table: 'Benutzer',
  columns: {
    id: 'Login',
    username: 'Login',
    passwordHash: 'PwHash',
    type: { column: 'Rolle', values: { admin: 'A', user: 'B', application: 'S' } },
    displayName: 'Name',
    enabled: 'Aktiv',
    tokenVersion: 'TokVer',
    lastLoginAt: 'LetzterLogin',
    createdAt: 'Angelegt',
    modifiedAt: 'Geaendert'
  }
}

const STATIONS: TableMappingConfig = {
  table: 'Platz',
  columns: {
    id: 'Code',
    name: 'Code',
    description: 'Bez',
    type: 'Art',
    warehouse: 'Lager',
    controllerId: 'Steuerung',
    address: 'Adresse',
    enabled: 'Aktiv',
    createdAt: 'Angelegt',
    modifiedAt: 'Geaendert'
  }
}

/**
 * The two tables, keyed by text compared without case (SQL Server's usual collations; SQLite's
 * COLLATE NOCASE), with a user the picking system's own administration wrote in mixed case.
 */
async function textKeyedTables (db: Database, rows = true): Promise<void> {
  const passwords = await createPasswords(TEST_ARGON2)
  const hash = await passwords.hash(PASSWORD)
  const mssql = db.dialect === 'mssql'
  if (mssql) for (const table of ['Benutzer', 'Platz']) await db.execute({ text: `DROP TABLE IF EXISTS [dbo].[${table}]`, params: [] })
  const ddl = mssql
    ? [
        'CREATE TABLE [dbo].[Benutzer] ([Login] NVARCHAR(64) NOT NULL PRIMARY KEY, [PwHash] NVARCHAR(255) NOT NULL, [Rolle] CHAR(1) NOT NULL DEFAULT \'B\', ' +
          '[Name] NVARCHAR(200) NULL, [Aktiv] BIT NOT NULL DEFAULT 1, [TokVer] INT NOT NULL DEFAULT 0, [LetzterLogin] DATETIME2(3) NULL, [Angelegt] DATETIME2(3) NULL, [Geaendert] DATETIME2(3) NULL)',
        'CREATE TABLE [dbo].[Platz] ([Code] NVARCHAR(20) NOT NULL PRIMARY KEY, [Bez] NVARCHAR(200) NULL, [Art] NVARCHAR(16) NOT NULL DEFAULT \'manual\', [Lager] NVARCHAR(64) NULL, ' +
          '[Steuerung] NVARCHAR(64) NULL, [Adresse] INT NULL, [Aktiv] BIT NOT NULL DEFAULT 1, [Angelegt] DATETIME2(3) NULL, [Geaendert] DATETIME2(3) NULL)'
      ]
    : [
        'CREATE TABLE "Benutzer" ("Login" VARCHAR(64) NOT NULL COLLATE NOCASE PRIMARY KEY, "PwHash" VARCHAR(255) NOT NULL, "Rolle" CHAR(1) NOT NULL DEFAULT \'B\', ' +
          '"Name" VARCHAR(200), "Aktiv" BOOLEAN NOT NULL DEFAULT 1, "TokVer" INTEGER NOT NULL DEFAULT 0, "LetzterLogin" DATETIME, "Angelegt" DATETIME, "Geaendert" DATETIME)',
        'CREATE TABLE "Platz" ("Code" VARCHAR(20) NOT NULL COLLATE NOCASE PRIMARY KEY, "Bez" VARCHAR(200), "Art" VARCHAR(16) NOT NULL DEFAULT \'manual\', "Lager" VARCHAR(64), ' +
          '"Steuerung" VARCHAR(64), "Adresse" INTEGER, "Aktiv" BOOLEAN NOT NULL DEFAULT 1, "Angelegt" DATETIME, "Geaendert" DATETIME)'
      ]
  for (const text of ddl) await db.execute({ text, params: [] })
  if (!rows) return
  // the picking system's own rows: an admin (so db init adds none) and a user in mixed case, a login of digits
  await db.execute({
    text: 'INSERT INTO "Benutzer" ("Login", "PwHash", "Rolle", "Name") VALUES (\'Admin\', @admin, \'A\', NULL), (\'Schulz\', @hash, \'B\', \'Eva Schulz\'), (\'0042\', @hash, \'B\', NULL)',
    params: [{ name: 'admin', kind: 'string', value: await passwords.hash(ADMIN_PASSWORD) }, { name: 'hash', kind: 'string', value: hash }]
  })
  await db.execute({ text: 'INSERT INTO "Platz" ("Code", "Bez", "Art", "Steuerung", "Adresse") VALUES (\'VLM-1\', \'Lift 1\', \'vlm\', \'ctl-1\', 7)', params: [] })
}

async function login (ctx: TestContext, username: string, password = PASSWORD): Promise<{ accessToken: string, refreshToken: string }> {
  return await ctx.login(username, password)
}

const sub = (token: string): unknown => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).sub

t.test('users keyed by their login name: ids are the names, tokens name them, and the self checks hold under any case', async (t) => {
  const ctx = await build(t, { mapping: { users: USERS } }, textKeyedTables)
  const { app } = ctx
  const admin = ctx.auth(ctx.adminToken)
  t.equal(sub(ctx.adminToken), 'Admin', "the token's subject is the stored login name")

  const list = await app.inject({ method: 'GET', url: '/api/users?sort=id', headers: admin })
  t.equal(list.statusCode, 200, list.body)
  t.same(list.json().data.map((u: { id: unknown, username: unknown }) => [u.id, u.username]), [['0042', '0042'], ['Admin', 'Admin'], ['Schulz', 'Schulz']], 'text ids, leading zeros kept')

  // a user of the picking system logs in in any case; its token is the stored row's
  const schulz = await login(ctx, 'SCHULZ')
  t.equal(sub(schulz.accessToken), 'Schulz')
  const own = await app.inject({ method: 'GET', url: '/api/users/Schulz', headers: ctx.auth(schulz.accessToken) })
  t.equal(own.statusCode, 200, own.body)
  t.match(own.json(), { id: 'Schulz', username: 'Schulz', displayName: 'Eva Schulz', type: 'user' })
  t.equal((await app.inject({ method: 'GET', url: '/api/users/Admin', headers: ctx.auth(schulz.accessToken) })).statusCode, 403, "another user's record")
  // its own record under another spelling of its key, which the caseless key finds: the row decides (before: 403)
  const spelled = await app.inject({ method: 'GET', url: '/api/users/SCHULZ', headers: ctx.auth(schulz.accessToken) })
  t.equal(spelled.statusCode, 200, spelled.body)
  t.equal(spelled.json().id, 'Schulz')
  t.equal((await app.inject({ method: 'GET', url: '/api/users/nobody', headers: ctx.auth(schulz.accessToken) })).statusCode, 403, 'no such user: the same 403 as another\'s')
  t.equal((await app.inject({ method: 'POST', url: '/api/users/ADMIN', headers: ctx.auth(schulz.accessToken), payload: { password: 'takeover-password' } })).statusCode, 403, "another's record under another spelling")
  t.equal((await app.inject({ method: 'POST', url: '/api/users/nobody', headers: ctx.auth(schulz.accessToken), payload: { password: 'takeover-password' } })).statusCode, 403)
  t.equal((await app.inject({ method: 'POST', url: '/api/users/schulz', headers: ctx.auth(schulz.accessToken), payload: { displayName: 'Eva Schulz' } })).statusCode, 200, 'its own, sent back unchanged, under another spelling')
  const refreshed = await app.inject({ method: 'POST', url: '/api/users/refresh', headers: ctx.auth(schulz.refreshToken) })
  t.equal(refreshed.statusCode, 200, refreshed.body)
  t.equal(sub(refreshed.json().accessToken), 'Schulz')
  const digits = await login(ctx, '0042')
  t.equal(sub(digits.accessToken), '0042', 'a login of digits stays text')
  t.equal((await app.inject({ method: 'GET', url: '/api/users/0042', headers: ctx.auth(digits.accessToken) })).statusCode, 200)

  // a created user: its id is its name as stored (trimmed, lower case), and the Location names it
  const created = await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username: 'Lager Nord', password: PASSWORD, type: 'application' } })
  t.equal(created.statusCode, 201, created.body)
  t.equal(created.headers.location, '/api/users/lager%20nord')
  t.match(created.json(), { id: 'lager nord', username: 'lager nord', type: 'application' })
  const app1 = await login(ctx, 'Lager Nord')
  const appToken = await app.inject({ method: 'POST', url: '/api/users/application-token', headers: ctx.auth(app1.refreshToken) })
  t.equal(appToken.statusCode, 200, appToken.body)
  t.equal((await app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(appToken.json().token) })).statusCode, 200, 'the application token works')
  t.equal((await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username: 'SCHULZ', password: PASSWORD } })).statusCode, 409, 'a name taken in another case')

  // the name is the id: a rename is refused and changes nothing; the same name in another case is no change
  const rename = await app.inject({ method: 'POST', url: '/api/users/Schulz', headers: admin, payload: { username: 'eva' } })
  t.equal(rename.statusCode, 400, rename.body)
  t.match(rename.json().message, /'username' is this installation's id of the user \(its table is keyed by it\) and cannot change/)
  const recased = await app.inject({ method: 'POST', url: '/api/users/Schulz', headers: admin, payload: { username: 'schulz', displayName: 'Eva S.' } })
  t.equal(recased.statusCode, 200, recased.body)
  t.match(recased.json(), { id: 'Schulz', username: 'Schulz', displayName: 'Eva S.' }, 'the stored key is not rewritten in another case')

  // the admin's own row under another spelling is still its own
  const selfDelete = await app.inject({ method: 'DELETE', url: '/api/users/ADMIN', headers: admin })
  t.equal(selfDelete.statusCode, 409, selfDelete.body)
  t.equal(selfDelete.json().code, 'SELF_DELETE')
  const selfDemote = await app.inject({ method: 'POST', url: '/api/users/admin', headers: admin, payload: { type: 'user' } })
  t.equal(selfDemote.statusCode, 403, selfDemote.body)
  t.equal((await app.inject({ method: 'GET', url: '/api/users/Admin', headers: admin })).json().type, 'admin', 'still an admin')

  // a user deleted through another spelling: its tokens are refused at once (the copy kept for token checks is the row's)
  t.equal((await app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(schulz.accessToken) })).statusCode, 200)
  t.equal((await app.inject({ method: 'DELETE', url: '/api/users/SCHULZ', headers: admin })).statusCode, 204)
  t.equal((await app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(schulz.accessToken) })).statusCode, 401, 'revoked')
  t.equal((await app.inject({ method: 'GET', url: '/api/users/Schulz', headers: admin })).statusCode, 404)

  // the documents say so
  const spec = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  t.equal(spec.paths['/api/users/{id}'].get.parameters.find((p: { name: string }) => p.name === 'id').schema.type, 'string')
})

t.test('a user whose login name the picking system stored in mixed case sends its own record back with a new password', async (t) => {
  const ctx = await build(t, { mapping: { users: USERS } }, textKeyedTables)
  const { app } = ctx
  const schulz = await login(ctx, 'schulz')
  const shown = (await app.inject({ method: 'GET', url: '/api/users/Schulz', headers: ctx.auth(schulz.accessToken) })).json()
  const { username, displayName, type, enabled } = shown
  t.equal(username, 'Schulz')
  const form = await app.inject({ method: 'POST', url: '/api/users/Schulz', headers: ctx.auth(schulz.accessToken), payload: { username, displayName, type, enabled, password: 'a-new-password-1' } })
  t.equal(form.statusCode, 200, form.body)
  t.match(form.json(), { id: 'Schulz', username: 'Schulz' })
  t.ok(await login(ctx, 'Schulz', 'a-new-password-1'), 'the new password logs in')
  const renamed = await app.inject({ method: 'POST', url: '/api/users/Schulz', headers: ctx.auth((await login(ctx, 'Schulz', 'a-new-password-1')).accessToken), payload: { username: 'eva', password: 'a-new-password-2' } })
  t.equal(renamed.statusCode, 403, 'another name is still a change')
  t.match(renamed.json().message, /not username/)
})

t.test('a user created again under a deleted user\'s login name (the same id) does not get its tokens', async (t) => {
  const ctx = await build(t, { mapping: { users: USERS } }, textKeyedTables)
  const { app } = ctx
  const admin = ctx.auth(ctx.adminToken)
  const create = async (password: string) => {
    const res = await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username: 'erp', password, type: 'application' } })
    t.equal(res.statusCode, 201, res.body)
    t.equal(res.json().id, 'erp')
  }
  await create('old-erp-password')
  const old = await login(ctx, 'erp', 'old-erp-password')
  const appToken = (await app.inject({ method: 'POST', url: '/api/users/application-token', headers: ctx.auth(old.refreshToken) })).json().token as string
  const bought = await app.inject({ method: 'POST', url: '/api/events/ticket', headers: ctx.auth(appToken) })
  t.equal(bought.statusCode, 200, bought.body)
  const ticket = bought.json().ticket as string
  t.equal((await app.inject({ method: 'GET', url: '/api/users/erp', headers: ctx.auth(appToken) })).statusCode, 200, 'the application token works')
  t.equal((await app.inject({ method: 'DELETE', url: '/api/users/erp', headers: admin })).statusCode, 204)
  // the leaked token of a deleted account stays dead when the account is made again with a new password
  await create('new-erp-password')
  for (const [token, what] of [[appToken, 'application token'], [old.accessToken, 'access token']]) {
    const res = await app.inject({ method: 'GET', url: '/api/users/erp', headers: ctx.auth(token) })
    t.equal(res.statusCode, 401, `the old ${what}`)
    t.match(res.json(), { code: 'TOKEN_INVALID' })
  }
  t.equal((await app.inject({ method: 'POST', url: '/api/users/refresh', headers: ctx.auth(old.refreshToken) })).statusCode, 401, 'the old refresh token')
  t.equal((await app.inject({ method: 'GET', url: `/api/events?ticket=${encodeURIComponent(ticket)}` })).statusCode, 401, 'the old stream ticket')
  const fresh = await login(ctx, 'erp', 'new-erp-password')
  t.equal((await app.inject({ method: 'GET', url: '/api/users/erp', headers: ctx.auth(fresh.accessToken) })).statusCode, 200, 'the new account\'s own tokens work')
})

t.test('db init on an empty user table keyed by the login name creates user admin under its name', async (t) => {
  // no copy kept for token checks: the rows below change behind the gateway's back
  const ctx = await build(t, { mapping: { users: USERS }, auth: { revocationCacheMs: 0 } }, async (db) => { await textKeyedTables(db, false) })
  t.equal(sub(ctx.adminToken), 'admin', 'the id is the name')
  const own = await ctx.app.inject({ method: 'GET', url: '/api/users/admin', headers: ctx.auth(ctx.adminToken) })
  t.equal(own.statusCode, 200, own.body)
  t.match(own.json(), { id: 'admin', username: 'admin', type: 'admin' })
  // a generated password: the hint names the admin's path
  await ctx.db.execute({ text: 'DELETE FROM "Benutzer"', params: [] })
  const printed: string[] = []
  t.match(await initDatabase(ctx.db, { demo: false, mappings: mappingsOf(ctx.config), argon2: TEST_ARGON2, print: (line) => printed.push(line) }), { adminCreated: true })
  t.match(printed.join('\n'), /Change it with POST \/api\/users\/admin \{"password": "\.\.\."\}/)
  // the admin made again under the same key starts at a random token version: the old admin's tokens stay dead
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(ctx.adminToken) })).statusCode, 401, "before: the deleted admin's token worked for the new one")
})

t.test('stations keyed by their code: paths, commands, events and the stream filter carry the code', async (t) => {
  const sim = await startSimulator({ host: '127.0.0.1', controllers: [{ id: 'ctl-1', port: 0 }], timings: { confirmDelay: 50, trayDelay: 50 } })
  t.teardown(() => sim.close())
  const port = sim.controllers.get('ctl-1')!.port
  const ctx = await build(t, { mapping: { stations: STATIONS }, hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port }], timings: FAST }, events: { heartbeatMs: 100 } }, textKeyedTables)
  const { app } = ctx
  const admin = ctx.auth(ctx.adminToken)

  const created = await app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'PTL-01', type: 'ptl', controllerId: 'ctl-1', address: 3 } })
  t.equal(created.statusCode, 201, created.body)
  t.equal(created.headers.location, '/api/stations/PTL-01')
  t.match(created.json(), { id: 'PTL-01', name: 'PTL-01', type: 'ptl', address: 3 })
  t.equal((await app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'vlm-1' } })).statusCode, 409, 'a code taken in another case')
  await until(async () => (await app.inject({ method: 'GET', url: '/api/stations/PTL-01', headers: admin })).json().connected === true, 'station online')
  t.same((await app.inject({ method: 'GET', url: '/api/stations?sort=id', headers: admin })).json().data.map((s: { id: unknown }) => s.id), ['PTL-01', 'VLM-1'])
  // a live list (filtered on the hardware's state, in memory) pages by the text ids too
  const live: unknown[] = []
  let next: string | undefined = '/api/stations?connected=true&limit=1&sort=-id'
  for (let page = 0; next !== undefined && page < 5; page++) {
    const res = await app.inject({ method: 'GET', url: next, headers: admin })
    t.equal(res.statusCode, 200, res.body)
    const page: { data: Array<{ id: unknown }>, meta: { next?: string } } = res.json()
    live.push(...page.data.map((s) => s.id))
    next = page.meta.next
  }
  t.same(live, ['VLM-1', 'PTL-01'], 'every connected station once, by the live list')

  // a stream for the station, named in another case: its events carry the code as stored
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' })
  const { port: http } = app.server.address() as AddressInfo
  const req = httpRequest({ host: '127.0.0.1', port: http, path: '/api/events?station=ptl-01', headers: admin })
  req.end()
  const [res] = await once(req, 'response') as [IncomingMessage]
  t.teardown(() => req.destroy())
  t.equal(res.statusCode, 200)
  let text = ''
  res.setEncoding('utf8')
  res.on('data', (chunk: string) => { text += chunk })
  await until(() => app.hardware.subscribers === 1, 'subscriber')

  const lit = await app.inject({ method: 'POST', url: '/api/stations/PTL-01/commands', headers: admin, payload: { command: 'light', quantity: 2, ref: 'order-7' } })
  t.equal(lit.statusCode, 200, lit.body)
  const vlm = await app.inject({ method: 'POST', url: '/api/stations/VLM-1/commands', headers: admin, payload: { command: 'callTray', tray: 'T-1' } })
  t.equal(vlm.statusCode, 200, vlm.body)
  await until(() => /event: pick\.confirmed/.test(text), 'pick.confirmed')
  const confirmed = JSON.parse(/event: pick\.confirmed\ndata: (.+)/.exec(text)![1])
  t.match(confirmed, { stationId: 'PTL-01', controllerId: 'ctl-1', address: 3, quantity: 2, ref: 'order-7' })
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.notMatch(text, /tray\.ready/, "another station's events are not in the filtered stream")

  t.equal((await app.inject({ method: 'GET', url: '/api/events?station=PTL-99', headers: admin })).statusCode, 404, 'a stream for no station')
  t.equal((await app.inject({ method: 'POST', url: '/api/stations/PTL-99/commands', headers: admin, payload: { command: 'status' } })).statusCode, 404)
  const rename = await app.inject({ method: 'POST', url: '/api/stations/PTL-01', headers: admin, payload: { name: 'PTL-02' } })
  t.equal(rename.statusCode, 400, rename.body)
  t.match(rename.json().message, /'name' is this installation's id of the station/)
  const moved = await app.inject({ method: 'POST', url: '/api/stations/PTL-01', headers: admin, payload: { address: 4, description: 'Zone A' } })
  t.equal(moved.statusCode, 200, moved.body)
  t.match(moved.json(), { id: 'PTL-01', address: 4, description: 'Zone A' })
  t.equal((await app.inject({ method: 'DELETE', url: '/api/stations/PTL-01', headers: admin })).statusCode, 204)
  t.equal((await app.inject({ method: 'GET', url: '/api/stations/PTL-01', headers: admin })).statusCode, 404)

  const spec = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  t.equal(spec.paths['/api/stations/{id}/commands'].post.parameters.find((p: { name: string }) => p.name === 'id').schema.type, 'string')
  t.equal(spec.paths['/api/events'].get.parameters.find((p: { name: string }) => p.name === 'station').schema.type, 'string')
})

t.test('a numeric station table keeps numeric ids: ?station= of no number finds no station', { skip: MSSQL && 'the reference tables only' }, async (t) => {
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port: 1 }], timings: FAST } })
  const admin = ctx.auth(ctx.adminToken)
  const res = await ctx.app.inject({ method: 'GET', url: '/api/events?station=PTL-1', headers: admin })
  t.equal(res.statusCode, 400, res.body)
  t.match(res.json().message, /station/)
})

t.test('SQLite: a material table keyed by a GUID column (declared UNIQUEIDENTIFIER, as a database moved from SQL Server keeps it): text ids, only GUIDs taken', { skip: MSSQL && 'SQLite DDL' }, async (t) => {
  const GUID = '6f9619ff-8b86-d011-b42d-00c04fc964ff'
  const ctx = await build(t, {
    mapping: {
      materials: {
        table: 'Artikel',
        columns: { id: 'ArtGuid', materialNumber: 'ArtNr', name: 'Bez', description: null, unit: null, barcode: null, minStock: null, maxStock: null, weight: null, blocked: null, blockReason: null, stockQuantity: null, createdAt: null, modifiedAt: 'Geaendert' }
      }
    }
  }, async (db) => {
    // the default a .NET program's table has on SQLite: a random GUID as text
    await db.execute({ text: 'CREATE TABLE "Artikel" ("ArtGuid" UNIQUEIDENTIFIER NOT NULL PRIMARY KEY DEFAULT (lower(hex(randomblob(4)) || \'-\' || hex(randomblob(2)) || \'-\' || hex(randomblob(2)) || \'-\' || hex(randomblob(2)) || \'-\' || hex(randomblob(6)))), "ArtNr" VARCHAR(40) NOT NULL UNIQUE, "Bez" VARCHAR(80) NOT NULL, "Geaendert" DATETIME)', params: [] })
    await db.execute({ text: `INSERT INTO "Artikel" ("ArtGuid", "ArtNr", "Bez") VALUES ('${GUID}', 'A-1', 'eins')`, params: [] })
  })
  const { app } = ctx
  const headers = ctx.auth(ctx.adminToken)
  t.match((await app.inject({ method: 'GET', url: `/api/materials/${GUID}`, headers })).json(), { id: GUID, materialNumber: 'A-1' })
  const created = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'A-2', name: 'zwei' } })
  t.equal(created.statusCode, 201, created.body)
  t.match(created.json().id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'the GUID the column gave')
  t.equal(created.headers.location, `/api/materials/${created.json().id as string}`)
  t.equal((await app.inject({ method: 'GET', url: '/api/materials/12345', headers })).statusCode, 404, 'a path that is no GUID names no row')
  const filtered = await app.inject({ method: 'GET', url: '/api/materials?id=12345', headers })
  t.equal(filtered.statusCode, 400, filtered.body)
  t.match(filtered.json().message, /^Invalid value for 'id': must be a GUID in this installation/)
  t.same((await app.inject({ method: 'GET', url: `/api/materials?id=[or]${GUID};${created.json().id as string}&sort=materialNumber`, headers })).json().data.map((m: { materialNumber: string }) => m.materialNumber), ['A-1', 'A-2'])
})

t.test('single sign-on onto a user table keyed by the login name: the provider\'s user gets the name as its id, and is found again by its identity', async (t) => {
  const idp = await startProvider()
  t.teardown(() => idp.close())
  const ctx = await build(t, {
    mapping: { users: USERS },
    auth: { sso: [{ id: 'warehouse', issuer: idp.issuer, audience: AUDIENCE, typeMap: { 'gateway-app': 'application' } as const, timeoutMs: 1000 } as unknown as Config['auth']['sso'][number]], revocationCacheMs: 0 }
  }, textKeyedTables)
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'ERP-System' })
  const bearer = { authorization: `Bearer ${await idp.clientCredentials('erp')}` }
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer })).statusCode, 200)
  const own = await ctx.app.inject({ method: 'GET', url: '/api/users/erp-system', headers: bearer })
  t.equal(own.statusCode, 200, own.body)
  t.match(own.json(), { id: 'erp-system', username: 'erp-system', type: 'application', source: 'sso' })
  const again = { authorization: `Bearer ${await idp.clientCredentials('erp')}` }
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: again })).statusCode, 200, 'a second token: the same row')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users?source=sso&count=true', headers: ctx.auth(ctx.adminToken) })).json().meta.total, 1)
  // withdrawn by disabling the row, under the name as its id
  t.equal((await ctx.app.inject({ method: 'PATCH', url: '/api/users/erp-system', headers: ctx.auth(ctx.adminToken), payload: { enabled: false } })).statusCode, 200)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: again })).statusCode, 401, 'its provider tokens are refused')
})
