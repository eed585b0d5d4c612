import t, { type Test } from 'tap'
import { build } from '../helpers/build.js'
import { unstorableCharacter } from '../../src/db/code-pages.js'

type Users = Awaited<ReturnType<typeof build>>['app']['repos']['users']

/**
 * Runs `then` right after each read of a user row through users.get, before its caller goes on: a
 * concurrent request that commits between a request's read and its lock. The real get is back when
 * the test ends.
 */
function afterUserRead (t: Test, users: Users, then: (id: Parameters<Users['get']>[0], row: Awaited<ReturnType<Users['get']>>) => Promise<void>): void {
  const get = users.get.bind(users)
  t.teardown(() => { users.get = get })
  users.get = async (id) => {
    const row = await get(id)
    await then(id, row)
    return row
  }
}

const USER_KEYS = ['createdAt', 'displayName', 'enabled', 'id', 'lastLoginAt', 'modifiedAt', 'source', 'type', 'username']

t.test('every users route needs a token', async (t) => {
  const { app } = await build(t)
  const routes: Array<[string, string]> = [['GET', '/api/users'], ['POST', '/api/users'], ['GET', '/api/users/1'], ['POST', '/api/users/1'], ['PATCH', '/api/users/1'], ['DELETE', '/api/users/1']]
  for (const [method, url] of routes) {
    const res = await app.inject({ method: method as 'GET', url, payload: method === 'GET' || method === 'DELETE' ? undefined : {} })
    t.equal(res.statusCode, 401, `${method} ${url}`)
    t.equal(res.json().code, 'TOKEN_MISSING')
  }
})

t.test('list and read', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const user = await ctx.createUser('user', 'uma')
  const list = await app.inject({ method: 'GET', url: '/api/users?sort=username', headers: auth(ctx.adminToken) })
  t.equal(list.statusCode, 200)
  const body = list.json()
  t.same(body.data.map((u: { username: string }) => u.username), ['admin', 'uma'])
  t.same(Object.keys(body.data[0]).sort(), USER_KEYS, 'no password, hash or token version')
  t.equal(body.meta.limit, 100)
  t.ok(list.headers.etag)
  t.notMatch(list.body, /argon2|password/i)

  t.equal((await app.inject({ method: 'GET', url: '/api/users', headers: auth(user.accessToken) })).statusCode, 403, 'users cannot list users')
  const own = await app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: auth(user.accessToken) })
  t.equal(own.statusCode, 200)
  t.equal(own.json().username, 'uma')
  t.equal(own.json().type, 'user')
  t.equal(own.json().enabled, true)
  t.type(own.json().lastLoginAt, 'string', 'login recorded')
  const other = await app.inject({ method: 'GET', url: '/api/users/1', headers: auth(user.accessToken) })
  t.equal(other.statusCode, 403)
  t.equal(other.json().code, 'FORBIDDEN')
  const missing = await app.inject({ method: 'GET', url: '/api/users/999', headers: auth(ctx.adminToken) })
  t.equal(missing.statusCode, 404)
  t.same(missing.json(), { statusCode: 404, code: 'NOT_FOUND', error: 'Not Found', message: 'User 999 not found' })
  const badId = await app.inject({ method: 'GET', url: '/api/users/abc', headers: auth(ctx.adminToken) })
  t.equal(badId.statusCode, 400)
  t.match(badId.json().message, /params\/id/)

  const filtered = await app.inject({ method: 'GET', url: '/api/users?type=user&count=true', headers: auth(ctx.adminToken) })
  t.same(filtered.json().data.map((u: { username: string }) => u.username), ['uma'])
  t.equal(filtered.json().meta.total, 1)
  t.equal(filtered.headers['x-total-count'], '1')
})

t.test('create', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const admin = auth(ctx.adminToken)
  const res = await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username: 'Picker.One', password: 'long-enough', type: 'user', displayName: 'Picker One' } })
  t.equal(res.statusCode, 201)
  const created = res.json()
  t.equal(res.headers.location, `/api/users/${created.id}`)
  t.same(Object.keys(created).sort(), USER_KEYS)
  t.equal(created.username, 'picker.one', 'stored in lower case')
  t.equal(created.lastLoginAt, null)
  t.notMatch(res.body, /long-enough|argon2/)
  const read = await app.inject({ method: 'GET', url: `/api/users/${created.id}`, headers: admin })
  t.match(res.headers.etag, /^"[\w-]{27}"$/)
  t.equal(res.headers.etag, read.headers.etag, 'the create answers with the ETag a read gives')
  const stored = await app.repos.users.get(created.id)
  t.match(stored!.passwordHash, /^\$argon2id\$/, 'stored as an argon2id hash')

  const dup = await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username: 'PICKER.ONE', password: 'long-enough' } })
  t.equal(dup.statusCode, 409)
  t.equal(dup.json().code, 'CONFLICT')
  t.match(dup.json().message, /username/)

  const bad: Array<[object, RegExp]> = [
    [{ username: 'x', password: 'short' }, /password/],
    [{ username: 'x', password: 'long-enough', type: 'root' }, /type/],
    [{ username: 'x', password: 'long-enough', tokenVersion: 3 }, /unknown field 'tokenVersion'/],
    [{ username: 'x', password: 'long-enough', id: 7 }, /id is read-only/],
    [{ username: 'x', password: 'long-enough', enabled: 'true' }, /enabled/],
    [{ password: 'long-enough' }, /username/],
    // stored trimmed, a name of spaces would be '': an account no login can reach, holding a licence login
    [{ username: '   ', password: 'long-enough' }, /^body\/username must hold a character other than spaces, and no control or invisible characters \(zero-width spaces, direction marks\)$/],
    [{ username: '\u3000\u00a0', password: 'long-enough' }, /^body\/username must hold a character other than spaces/],
    [{ username: 'a\u0007b', password: 'long-enough' }, /^body\/username must hold a character other than spaces, and no control or invisible characters \(zero-width spaces, direction marks\), got U\+0007$/],
    // beyond the BMP, assigned or not, and noncharacters (before: 201, a second 'admin' in every list)
    [{ username: 'admin\u{e0001}', password: 'long-enough' }, /^body\/username must hold a character other than spaces, and no control or invisible characters \(zero-width spaces, direction marks\), got U\+E0001$/],
    [{ username: 'ad\u{e0100}min', password: 'long-enough' }, /, got U\+E0100$/],
    [{ username: 'ad\u{1d173}min', password: 'long-enough' }, /, got U\+1D173$/],
    [{ username: 'ad\u{e0fff}min', password: 'long-enough' }, /, got U\+E0FFF$/],
    [{ username: 'admin\ufdd0', password: 'long-enough' }, /, got U\+FDD0$/],
    [{ username: 'ad\u2028min', password: 'long-enough' }, /, got U\+2028$/],
    // shows as admin in a list
    [{ username: 'ad\u200bmin', password: 'long-enough' }, /^body\/username must hold a character other than spaces, and no control or invisible characters/],
    [{ username: '\u202enimda', password: 'long-enough' }, /^body\/username must hold a character other than spaces, and no control or invisible characters/]
  ]
  for (const [payload, message] of bad) {
    const r = await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload })
    // (U+2028 escaped: TAP reads it as a line break, which ended the subtest's output early)
    t.equal(r.statusCode, 400, JSON.stringify(payload).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`))
    t.match(r.json().message, message)
  }
  const count = await app.inject({ method: 'GET', url: '/api/users?count=true', headers: admin })
  t.equal(count.json().meta.total, 2, 'bad requests changed nothing')
  // a space that looks like U+0020 is one: NFKC stores it so (an ideographic space typed by an input method)
  const spaced = await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username: 'yamada\u3000taro\u00a0x', password: 'long-enough' } })
  t.equal(spaced.statusCode, 201, spaced.body)
  t.equal(spaced.json().username, 'yamada taro x')
  await app.inject({ method: 'DELETE', url: `/api/users/${String(spaced.json().id)}`, headers: admin })

  const user = await ctx.createUser('user')
  const forbidden = await app.inject({ method: 'POST', url: '/api/users', headers: auth(user.accessToken), payload: { username: 'y', password: 'long-enough' } })
  t.equal(forbidden.statusCode, 403)
})

t.test('a name with İ is stored without the combining dot its lower case would add (README: usernames are case-insensitive)', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const admin = auth(ctx.adminToken)
  const res = await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username: 'İlker', password: 'long-enough' } })
  t.equal(res.statusCode, 201)
  // 'İlker'.toLowerCase() is 'i\u0307lker': a character nobody typed, which a Turkish (1254) or Latin (1252) varchar cannot store
  t.equal(res.json().username, 'İlker', 'İ kept, the rest in lower case')
  t.equal(unstorableCharacter(res.json().username, 1254), undefined, 'a Turkish code page column holds it')
  for (const name of ['İlker', 'İLKER', 'i\u0307lker']) t.ok((await ctx.login(name, 'long-enough')).accessToken, `${name} logs in`)
  const dup = await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username: 'İLKER', password: 'long-enough' } })
  t.equal(dup.statusCode, 409, 'the same name in capitals')
  const found = await app.inject({ method: 'GET', url: `/api/users?username=${encodeURIComponent('İLKER')}`, headers: admin })
  t.same(found.json().data.map((u: { username: string }) => u.username), ['İlker'])
  const other = await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username: 'ILKER', password: 'other-password' } })
  t.equal(other.statusCode, 201, 'ilker is another name')
  t.equal(other.json().username, 'ilker')
  t.ok((await ctx.login('ilker', 'other-password')).accessToken)
  const renamed = await app.inject({ method: 'PATCH', url: `/api/users/${other.json().id as number}`, headers: admin, payload: { username: 'İLKNUR' } })
  t.equal(renamed.json().username, 'İlknur', 'a rename is stored the same way')
})

t.test('a name that Unicode NFKC makes longer than 64 characters is a 400 naming the username, on a create and a rename; nothing is written', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const admin = auth(ctx.adminToken)
  // U+FDFA is one character as typed and 18 in NFKC: four are 72
  const long = '\uFDFA'.repeat(4)
  const res = await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username: long, password: 'long-enough' } })
  t.equal(res.statusCode, 400, `before: 201 with a 72-character username: ${res.body}`)
  t.match(res.json(), { code: 'VALIDATION_ERROR', message: /^'username' would be stored as 72 characters \(Unicode NFKC writes some characters as several\), more than 64$/ })
  const user = await ctx.createUser('user')
  const rename = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { username: long } })
  t.equal(rename.statusCode, 400)
  t.equal((await app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: admin })).json().username, user.username, 'the name is unchanged')
  t.equal((await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username: '\uFDFA'.repeat(3), password: 'long-enough' } })).statusCode, 201, 'three (54 characters) fit')
})

t.test('licence caps enabled user and application accounts', async (t) => {
  const ctx = await build(t, { licence: { logins: 2 } })
  const admin = ctx.auth(ctx.adminToken)
  const create = (username: string, type: string, enabled = true) =>
    ctx.app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username, password: 'long-enough', type, enabled } })
  t.equal((await create('a1', 'user')).statusCode, 201)
  t.equal((await create('a2', 'application')).statusCode, 201)
  const over = await create('a3', 'user')
  t.equal(over.statusCode, 403)
  t.equal(over.json().code, 'LICENCE_LIMIT')
  t.equal((await create('boss', 'admin')).statusCode, 201, 'admins are not counted')
  const disabled = await create('a4', 'user', false)
  t.equal(disabled.statusCode, 201, 'disabled accounts are not counted')
  const enable = await ctx.app.inject({ method: 'POST', url: `/api/users/${disabled.json().id}`, headers: admin, payload: { enabled: true } })
  t.equal(enable.statusCode, 403)
  t.equal(enable.json().code, 'LICENCE_LIMIT')
  const demote = await ctx.app.inject({ method: 'POST', url: `/api/users/${(await create('boss2', 'admin')).json().id}`, headers: admin, payload: { type: 'user' } })
  t.equal(demote.json().code, 'LICENCE_LIMIT', 'turning an admin into a user needs a licence too')
})

t.test('a taken username is a 409 before the licence: creating, renaming while enabling, demoting an admin', async (t) => {
  const ctx = await build(t, { licence: { logins: 1 } })
  const admin = ctx.auth(ctx.adminToken)
  const post = (url: string, payload: object) => ctx.app.inject({ method: 'POST', url, headers: admin, payload })
  t.equal((await post('/api/users', { username: 'mmüller', password: 'long-enough', type: 'user' })).statusCode, 201, 'the one login is used')
  const conflict = { statusCode: 409, code: 'CONFLICT', error: 'Conflict', message: "username 'mmüller' already exists" }

  const dup = await post('/api/users', { username: 'MMÜLLER', password: 'long-enough', type: 'user' })
  t.same(dup.json(), conflict, 'the name, not the full licence')
  t.equal((await post('/api/users', { username: 'other', password: 'long-enough', type: 'user' })).json().code, 'LICENCE_LIMIT', 'a free name still meets the licence')

  const disabled = (await post('/api/users', { username: 'idle', password: 'long-enough', type: 'user', enabled: false })).json()
  t.same((await post(`/api/users/${disabled.id as number}`, { username: 'MMüller', enabled: true })).json(), conflict, 'renaming onto a taken name while enabling')
  t.equal((await post(`/api/users/${disabled.id as number}`, { enabled: true })).json().code, 'LICENCE_LIMIT', 'enabling alone meets the licence')
  const boss = (await post('/api/users', { username: 'boss', password: 'long-enough', type: 'admin' })).json()
  t.same((await post(`/api/users/${boss.id as number}`, { username: 'mmüller', type: 'user' })).json(), conflict, 'renaming an admin onto a taken name while making it a user')
  const stored = await ctx.app.repos.users.get(disabled.id)
  t.same([stored!.username, stored!.enabled], ['idle', false], 'nothing was written')
})

t.test('the licence check is atomic with the write: concurrent creates and enables for the last free login', async (t) => {
  const ctx = await build(t, { licence: { logins: 2 } })
  const admin = ctx.auth(ctx.adminToken)
  const post = (url: string, payload: object) => ctx.app.inject({ method: 'POST', url, headers: admin, payload })
  t.equal((await post('/api/users', { username: 'first', password: 'long-enough', type: 'user' })).statusCode, 201, 'one of two logins used')
  const expected = { statusCode: 403, code: 'LICENCE_LIMIT', error: 'Forbidden', message: 'The licence allows 2 enabled user or application account(s); disable one first' }

  const creates = await Promise.all(['r1', 'r2', 'r3'].map((username, i) =>
    post('/api/users', { username, password: 'long-enough', type: i === 1 ? 'application' : 'user' })))
  t.same(creates.map((r) => r.statusCode).sort(), [201, 403, 403], 'exactly one of three concurrent creates gets the last login')
  for (const res of creates.filter((r) => r.statusCode === 403)) t.same(res.json(), expected)
  const listed = await ctx.app.inject({ method: 'GET', url: '/api/users?enabled=true&type=[or]user;application&count=true', headers: admin })
  t.equal(listed.json().meta.total, 2, 'the licence holds: nothing else was written')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users?count=true', headers: admin })).json().meta.total, 3, 'the refused creates left no row behind')

  // free one login, then race three enables of disabled accounts for it
  const winner = creates.find((r) => r.statusCode === 201)!.json()
  t.equal((await post(`/api/users/${winner.id as number}`, { enabled: false })).statusCode, 200)
  const disabled: number[] = []
  for (const username of ['d1', 'd2', 'd3']) disabled.push((await post('/api/users', { username, password: 'long-enough', type: 'user', enabled: false })).json().id)
  const enables = await Promise.all(disabled.map((id) => post(`/api/users/${id}`, { enabled: true })))
  t.same(enables.map((r) => r.statusCode).sort(), [200, 403, 403], 'exactly one of three concurrent enables gets the last login')
  for (const res of enables.filter((r) => r.statusCode === 403)) t.same(res.json(), expected)
  const states = await Promise.all(disabled.map(async (id) => (await ctx.app.inject({ method: 'GET', url: `/api/users/${id}`, headers: admin })).json().enabled))
  t.same(states.filter(Boolean).length, 1, 'only the winner is enabled')
})

t.test('a revocation that commits between an update\'s read of the user and its lock: the update is made from the row as it is then, not a 412 about an ETag never sent', async (t) => {
  const ctx = await build(t)
  const admin = ctx.auth(ctx.adminToken)
  const user = await ctx.createUser('user')
  const users = ctx.app.repos.users
  // the user's own new password (its token version one up) commits right after the admin's update read the row
  let bumps = 0
  let times = 1
  afterUserRead(t, users, async (id, row) => {
    if (bumps++ < times) await users.update(id, { tokenVersion: Number(row!.tokenVersion) + 1 })
  })
  const res = await ctx.app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { enabled: false } })
  t.equal(res.statusCode, 200, `before: 412 PRECONDITION_FAILED, "The resource was changed since the given ETag": ${res.body}`)
  t.equal(res.json().enabled, false)
  t.equal((await ctx.app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: ctx.auth(user.accessToken) })).statusCode, 401, 'and its tokens are revoked')

  // If-Match still decides: an ETag read before the revocation is an old version
  times = 0
  const etag = (await ctx.app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: admin })).headers.etag as string
  bumps = 0
  times = 1
  const stale = await ctx.app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: { ...admin, 'if-match': etag }, payload: { displayName: 'x' } })
  t.equal(stale.statusCode, 412)
  // a row whose version keeps moving: a few tries, then the 412 stands
  bumps = 0
  times = 10
  t.equal((await ctx.app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { displayName: 'y' } })).statusCode, 412)
  t.equal(bumps, 3, 'three reads')
})

t.test('a user\'s own change whose token an admin revoked between its read of the row and the lock is not made again: the 412 stands', async (t) => {
  const ctx = await build(t)
  const admin = ctx.auth(ctx.adminToken)
  const user = await ctx.createUser('user')
  // the user's token checked once: its row is cached, so the next read is the update's own
  t.equal((await ctx.app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: ctx.auth(user.accessToken) })).statusCode, 200)
  // the admin disables the user (its tokens revoked) right after the user's own password change read the row
  let raced = false
  afterUserRead(t, ctx.app.repos.users, async () => {
    if (raced) return
    raced = true
    t.equal((await ctx.app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { enabled: false } })).statusCode, 200)
  })
  const res = await ctx.app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: ctx.auth(user.accessToken), payload: { password: 'a-new-password-1' } })
  t.equal(res.statusCode, 412, `before: 200, the password of a user disabled meanwhile set by its revoked token: ${res.body}`)
  t.equal((await ctx.app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { enabled: true } })).statusCode, 200)
  const login = (password: string) => ctx.app.inject({ method: 'POST', url: '/api/users/login', payload: { username: user.username, password } })
  t.equal((await login('a-new-password-1')).statusCode, 401, 'the new password was not set')
  t.equal((await login(user.password)).statusCode, 200, 'the old one still holds')
})

t.test('update', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const admin = auth(ctx.adminToken)
  const user = await ctx.createUser('user')

  const res = await app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: admin, payload: { displayName: 'Renamed' } })
  t.equal(res.statusCode, 200)
  t.equal(res.json().displayName, 'Renamed')
  t.equal(res.json().type, 'user', 'fields not sent are unchanged')
  const patch = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { displayName: null } })
  t.equal(patch.statusCode, 200, 'PATCH is an alias')
  t.equal(patch.json().displayName, null)

  const selfType = await app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: auth(user.accessToken), payload: { type: 'admin' } })
  t.equal(selfType.statusCode, 403, 'no self-promotion')
  const selfName = await app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: auth(user.accessToken), payload: { displayName: 'me' } })
  t.equal(selfName.statusCode, 403)
  t.match(selfName.json().message, /password/)
  // its own record as a form sends it back: the other fields unchanged, a new password
  const own = (await app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: admin })).json()
  const form = { username: own.username.toUpperCase(), type: own.type, displayName: own.displayName, enabled: own.enabled }
  const oneChanged = await app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: auth(user.accessToken), payload: { ...form, displayName: 'changed' } })
  t.equal(oneChanged.statusCode, 403)
  t.equal(oneChanged.json().message, 'You may only change your own password, not displayName', 'the field it changes, no other')
  const adminSelf = await app.inject({ method: 'POST', url: '/api/users/1', headers: admin, payload: { type: 'user' } })
  t.equal(adminSelf.statusCode, 403, 'an admin cannot demote itself')
  t.match(adminSelf.json().message, /cannot change your own type or enabled state/)
  t.equal((await app.inject({ method: 'POST', url: '/api/users/1', headers: admin, payload: { enabled: false } })).statusCode, 403, 'nor disable itself')
  const unchanged = await app.inject({ method: 'PATCH', url: '/api/users/1', headers: admin, payload: { type: 'admin', enabled: true, displayName: 'The Admin' } })
  t.equal(unchanged.statusCode, 200, 'its own type and enabled state sent unchanged, as a form does, are no change')
  t.match(unchanged.json(), { type: 'admin', enabled: true, displayName: 'The Admin' })
  const otherUser = await ctx.createUser('user')
  t.equal((await app.inject({ method: 'POST', url: `/api/users/${otherUser.id}`, headers: auth(user.accessToken), payload: { password: 'x-long-enough' } })).statusCode, 403)
  const erp = await ctx.createUser('application')
  t.equal((await app.inject({ method: 'POST', url: `/api/users/${erp.id}`, headers: auth(erp.accessToken), payload: { password: 'x-long-enough' } })).statusCode, 403)

  t.equal((await app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: admin, payload: { id: 5 } })).statusCode, 400)
  t.equal((await app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: admin, payload: {} })).statusCode, 400, 'an empty update is refused')
  t.equal((await app.inject({ method: 'POST', url: '/api/users/999', headers: admin, payload: { displayName: 'x' } })).statusCode, 404)
  const dup = await app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: admin, payload: { username: 'admin' } })
  t.equal(dup.statusCode, 409)
  const blank = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { username: '    ' } })
  t.equal(blank.statusCode, 400, 'a rename to spaces')
  t.match(blank.json().message, /^body\/username must hold a character other than spaces/)
  t.equal((await app.repos.users.get(user.id))!.username, user.username, 'and the name is unchanged')

  const read = await app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: admin })
  const stale = await app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: { ...admin, 'if-match': '"stale"' }, payload: { displayName: 'x' } })
  t.equal(stale.statusCode, 412)
  const fresh = await app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: { ...admin, 'if-match': read.headers.etag as string }, payload: { displayName: 'y' } })
  t.equal(fresh.statusCode, 200)
  // last: the new password revokes the user's tokens
  const withPassword = await app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: auth(user.accessToken), payload: { ...form, displayName: 'y', password: 'a-new-password-1' } })
  t.equal(withPassword.statusCode, 200, `before: 403 naming fields it did not change: ${withPassword.body}`)
  t.equal((await app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: auth(user.accessToken) })).statusCode, 401, 'the new password revoked its tokens')
  t.equal((await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: user.username, password: 'a-new-password-1' } })).statusCode, 200, 'and it logs in with the new one')
})

t.test('delete', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const admin = auth(ctx.adminToken)
  const user = await ctx.createUser('user')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/users/${user.id}`, headers: auth(user.accessToken) })).statusCode, 403)
  const self = await app.inject({ method: 'DELETE', url: '/api/users/1', headers: admin })
  t.equal(self.statusCode, 409)
  t.equal(self.json().code, 'SELF_DELETE')
  const del = await app.inject({ method: 'DELETE', url: `/api/users/${user.id}`, headers: admin })
  t.equal(del.statusCode, 204)
  t.equal(del.body, '')
  t.equal((await app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: admin })).statusCode, 404)
  t.equal((await app.inject({ method: 'DELETE', url: `/api/users/${user.id}`, headers: admin })).statusCode, 404)
})

t.test('a login moves lastLoginAt and the ETag, not modifiedAt (README: user fields)', async (t) => {
  const ctx = await build(t)
  const admin = ctx.auth(ctx.adminToken)
  const created = await ctx.app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username: 'erp-sync', password: 'long-enough', type: 'user' } })
  const before = await ctx.app.inject({ method: 'GET', url: `/api/users/${created.json().id}`, headers: admin })
  await new Promise((resolve) => setTimeout(resolve, 5))
  const login = await ctx.app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'erp-sync', password: 'long-enough' } })
  t.equal(login.statusCode, 200)
  const after = await ctx.app.inject({ method: 'GET', url: `/api/users/${created.json().id}`, headers: { ...admin, 'if-none-match': before.headers.etag as string } })
  t.equal(after.statusCode, 200, 'not a 304: lastLoginAt is part of the user')
  t.type(after.json().lastLoginAt, 'string')
  t.equal(after.json().modifiedAt, before.json().modifiedAt, 'modifiedAt stays: an incremental sync of users does not bring the user again')
})
