import { createHmac } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import argon2 from 'argon2'
import t, { type Test } from 'tap'
import { Client } from 'undici'
import type { TokenClaims } from '../../plugins/auth.js'
import { VerifiedTokens } from '../../src/auth/verified-tokens.js'
import { DatabaseUnavailableError } from '../../src/db/errors.js'
import { ADMIN_PASSWORD, build } from '../helpers/build.js'

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')
const decode = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString())

function sign (header: object, payload: object, secret: string): string {
  const body = `${b64({ kid: 'default', ...header })}.${b64(payload)}`
  return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`
}

t.test('login', async (t) => {
  const ctx = await build(t)
  const { app } = ctx

  const ok = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })
  t.equal(ok.statusCode, 200)
  t.equal(ok.headers['cache-control'], 'no-store')
  const body = ok.json()
  t.equal(body.login, true)
  t.equal(body.expiresIn, 900)
  t.match(body.accessToken, /^[\w-]+\.[\w-]+\.[\w-]+$/)
  const access = decode(body.accessToken)
  const refresh = decode(body.refreshToken)
  t.equal(access.typ, 'access')
  t.equal(access.exp - access.iat, 900, 'access token lives 15 minutes')
  t.equal(refresh.typ, 'refresh')
  t.equal(refresh.exp - refresh.iat, 30 * 24 * 3600, 'refresh token lives 30 days')
  t.not(access.jti, refresh.jti)

  const expected = { statusCode: 401, code: 'INVALID_CREDENTIALS', error: 'Unauthorized', message: 'Invalid username or password', login: false }
  const wrong = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: 'nope-nope' } })
  t.equal(wrong.statusCode, 401)
  t.same(wrong.json(), expected)
  t.equal(wrong.headers['www-authenticate'], 'Bearer')
  const unknown = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'ghost', password: 'nope-nope' } })
  t.same(unknown.json(), expected, 'unknown user gets the same answer')

  const disabled = await ctx.createUser('user', 'dora')
  await app.inject({ method: 'POST', url: `/api/users/${disabled.id}`, headers: ctx.auth(ctx.adminToken), payload: { enabled: false } })
  const dis = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'dora', password: disabled.password } })
  t.same(dis.json(), expected, 'disabled user gets the same answer')

  const caseInsensitive = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: ' Admin ', password: ADMIN_PASSWORD } })
  t.equal(caseInsensitive.statusCode, 200, 'usernames are case-insensitive and trimmed')

  // a name no account can have: SQL Server's collations give NCHAR(0) no weight, so 'admin\u0000' could find admin's row
  // under a throttle count of its own (five more guesses per variant)
  for (const username of ['admin\u0000', 'admin\u0000\u0000', '\u0007admin', '   ', 'admin\u0085', 'admin\u0080', '\u009fadmin', 'ad\u200bmin']) {
    const res = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username, password: ADMIN_PASSWORD } })
    t.equal(res.statusCode, 400, JSON.stringify(username))
    // a NUL is refused in any string of a body, before the username's own rule
    t.equal(res.json().message, username.includes('\u0000') ? 'body/username holds a NUL character (\\u0000), which the database does not keep as sent' : `body/username must hold a character other than spaces, and no control or invisible characters (zero-width spaces, direction marks)${username.trim() === '' ? '' : `, got U+${/[^a-z]/u.exec(username)![0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`}`)
  }
  const missing = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin' } })
  t.equal(missing.statusCode, 400)
  t.match(missing.json().message, /password/)
  const coerced = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: ['admin'], password: ADMIN_PASSWORD } })
  t.equal(coerced.statusCode, 400, 'an array is not a string')
  t.match(coerced.json().message, /body\/username/)
  const extra = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD, remember: true } })
  t.equal(extra.statusCode, 400)
  t.match(extra.json().message, /unknown field 'remember'/)
  const notJson = await app.inject({ method: 'POST', url: '/api/users/login', headers: { 'content-type': 'application/xml' }, payload: '<login/>' })
  t.equal(notJson.statusCode, 415)
})

t.test('failed logins per username are throttled', async (t) => {
  const { app } = await build(t)
  for (let i = 0; i < 5; i++) {
    const res = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: i % 2 ? 'ADMIN' : 'admin ', password: 'wrong-password' } })
    t.equal(res.statusCode, 401)
  }
  const blocked = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })
  t.equal(blocked.statusCode, 429, 'even the right password waits after 5 failures')
  t.equal(blocked.json().code, 'TOO_MANY_REQUESTS')
  t.ok(Number(blocked.headers['retry-after']) > 0 && Number(blocked.headers['retry-after']) <= 900)
})

t.test('failed logins lock out the address they come from, not the account: the admin logs in from elsewhere; many addresses together reach the account\'s cap', async (t) => {
  const { app } = await build(t, { auth: { loginThrottle: { maxFailuresPerUserTotal: 8 } } })
  const login = (password: string, remoteAddress: string) => app.inject({ method: 'POST', url: '/api/users/login', remoteAddress, payload: { username: 'admin', password } })
  for (let i = 0; i < 5; i++) t.equal((await login('wrong-password', '10.0.0.66')).statusCode, 401)
  const refused = await login(ADMIN_PASSWORD, '10.0.0.66')
  t.equal(refused.statusCode, 429, 'the address that sent them waits, the right password too')
  t.equal(refused.json().message, 'Too many failed logins for this user from this address; try again later')
  t.equal((await login(ADMIN_PASSWORD, '10.0.0.5')).statusCode, 200, 'before: 429 for the admin everywhere for as long as someone sent wrong passwords')
  // the success forgot the account's failures; now from several addresses, under each one's limit
  for (let i = 0; i < 8; i++) t.equal((await login('wrong-password', `10.0.1.${i % 4}`)).statusCode, 401)
  const capped = await login(ADMIN_PASSWORD, '10.0.2.1')
  t.equal(capped.statusCode, 429, 'the account\'s cap holds over all addresses')
  t.equal(capped.json().message, 'Too many failed logins for this user; try again later')
  t.ok(Number(capped.headers['retry-after']) > 0)
})

t.test('an IPv6 client is counted by its /64: a new address of the same network per attempt is the same address to both limits', async (t) => {
  const { app } = await build(t, { auth: { loginThrottle: { maxAttemptsPerAddress: 8 } } })
  const login = (password: string, remoteAddress: string) => app.inject({ method: 'POST', url: '/api/users/login', remoteAddress, payload: { username: 'admin', password } })
  for (let i = 1; i <= 5; i++) t.equal((await login('wrong-password', `2001:db8:abcd:12::${i}`)).statusCode, 401)
  const refused = await login(ADMIN_PASSWORD, '2001:db8:abcd:12::99')
  t.equal(refused.statusCode, 429, 'before: each address of the /64 had five tries of its own')
  t.equal(refused.json().message, 'Too many failed logins for this user from this address; try again later')
  t.equal((await login(ADMIN_PASSWORD, '2001:db8:abcd:13::1')).statusCode, 200, 'another /64 logs in')
  // the attempts per address and minute too: 8 in all from the /64, whatever each attempt's address
  t.equal((await login('wrong-password', '2001:db8:abcd:12::100')).statusCode, 429)
  t.equal((await login('wrong-password', '2001:db8:abcd:12::101')).statusCode, 429)
  const limited = await login('wrong-password', '2001:db8:abcd:12::102')
  t.equal(limited.statusCode, 429)
  t.notMatch(limited.json().message, /Too many failed logins/, "the address's attempt limit, not the failure count")
})

t.test('concurrent logins for one username: at most the limit are checked, the rest wait their turn or get 429', async (t) => {
  // a short window, and an address limit the burst does not reach: the per-user count is under test
  const ctx = await build(t, { auth: { loginThrottle: { userWindowMs: 3000, maxAttemptsPerAddress: 1000 } } })
  const { app } = ctx
  const user = await ctx.createUser('user', 'burst')
  const login = (username: string, password: string) => app.inject({ method: 'POST', url: '/api/users/login', payload: { username, password } })
  const statuses = (answers: Array<{ statusCode: number }>) => answers.map((a) => a.statusCode)

  for (const username of ['burst', 'nobody-here']) {
    // Sent at once: every check waits for a password-hashing slot, so none has failed when the next arrives.
    const burst = await Promise.all(Array.from({ length: 19 }, (_, i) => login(i % 2 ? username.toUpperCase() : ` ${username}`, `wrong-${i}-password`)))
    t.equal(statuses(burst).filter((s) => s === 401).length, 5, `${username}: only 5 passwords were checked`)
    const refused = burst.filter((a) => a.statusCode === 429)
    t.equal(refused.length, 14, `${username}: the rest were refused`)
    for (const answer of refused) {
      t.equal(answer.json().code, 'TOO_MANY_REQUESTS')
      const wait = Number(answer.headers['retry-after'])
      t.ok(wait >= 1 && wait <= 3, `${username}: Retry-After ${wait} s, until the window (3 s) lets the oldest failure go`)
    }
  }
  const right = await login('burst', user.password)
  t.equal(right.statusCode, 429, 'the right password waits too, until the window passes')
  await sleep(3100)
  t.equal((await login('burst', user.password)).statusCode, 200, 'after the window, the right password logs in')

  // The right password sent together with failures gets no pass beyond the limit: it waits for the ones in flight.
  const mixed = await Promise.all([...Array.from({ length: 5 }, () => login('burst', 'wrong-password')), login('burst', user.password)])
  t.same(statuses(mixed), [401, 401, 401, 401, 401, 429], 'five failures in flight use up the limit')
  await sleep(3100)

  // Legitimate clients of one account logging in at once (more than the limit) all get in: they wait, they are not refused.
  const many = await Promise.all(Array.from({ length: 12 }, () => login('burst', user.password)))
  t.same(statuses(many), Array(12).fill(200), 'twelve concurrent right logins')
  const afterSuccesses = await Promise.all(Array.from({ length: 5 }, () => login('burst', 'wrong-password')))
  t.same(statuses(afterSuccesses), Array(5).fill(401), 'a success leaves no attempt counted')
})

t.test('a login that gets no verdict (database down) uses up no try', async (t) => {
  const ctx = await build(t, { auth: { loginThrottle: { maxAttemptsPerAddress: 1000 } } })
  const users = ctx.app.repos.users
  const findSpelled = users.findSpelled
  t.teardown(() => { users.findSpelled = findSpelled })
  users.findSpelled = async () => { throw new DatabaseUnavailableError('database down (test)') }
  const down = await Promise.all(Array.from({ length: 8 }, () => ctx.app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: 'wrong-password' } })))
  t.same(down.map((a) => a.statusCode), Array(8).fill(503), 'every one answered, none left waiting')
  users.findSpelled = findSpelled
  const ok = await ctx.app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })
  t.equal(ok.statusCode, 200, 'no try was used up')
})

t.test('login attempts per address are throttled', async (t) => {
  const { app } = await build(t, { auth: { loginThrottle: { maxAttemptsPerAddress: 4 } } })
  // build() already logged the admin in once from this address: 3 more attempts reach the limit of 4
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: `u${i}`, password: 'whatever1' } })
    t.equal(res.statusCode, 401)
  }
  const res = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })
  t.equal(res.statusCode, 429)
  t.ok(res.headers['retry-after'])
  t.equal(res.json().statusCode, 429)
})

t.test('a login refused for its body (415, 400) checks no password and uses up none of the address\'s attempts', async (t) => {
  const { app } = await build(t, { auth: { loginThrottle: { maxAttemptsPerAddress: 4 } } })
  // build() already logged the admin in once from this address: 3 attempts are left
  for (const [type, payload, status] of [
    ['application/x-www-form-urlencoded', 'username=admin&password=x', 415], ['text/plain', '{"username":"admin","password":"x"}', 415],
    ['application/json; charset=iso-8859-1', '{"username":"admin","password":"x"}', 415], ['application/json', '{"username":"admin"}', 400],
    ['application/json', '{"username":"admin",', 400]
  ] as const) {
    for (let i = 0; i < 4; i++) {
      const res = await app.inject({ method: 'POST', url: '/api/users/login', headers: { 'content-type': type }, payload })
      t.equal(res.statusCode, status, `${type} ${payload} (${i + 1})`)
    }
  }
  for (let i = 0; i < 2; i++) t.equal((await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: 'wrong-password' } })).statusCode, 401)
  const ok = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })
  t.equal(ok.statusCode, 200, 'the refused bodies took none of the 3 attempts left (before: a 429)')
  const limited = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })
  t.equal(limited.statusCode, 429, 'every attempt that reached the password check counted: the limit holds')
})

t.test('refresh and application tokens', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const tokens = await ctx.login('admin', ADMIN_PASSWORD)

  for (const method of ['GET', 'POST'] as const) {
    const res = await app.inject({ method, url: '/api/users/refresh', headers: auth(tokens.refreshToken) })
    t.equal(res.statusCode, 200, `${method} refresh`)
    t.equal(res.headers['cache-control'], 'no-store')
    t.equal(res.json().expiresIn, 900)
    const fresh = res.json().accessToken
    t.equal(decode(fresh).typ, 'access')
    const use = await app.inject({ method: 'GET', url: '/api/users/1', headers: auth(fresh) })
    t.equal(use.statusCode, 200)
  }

  const accessAsRefresh = await app.inject({ method: 'GET', url: '/api/users/refresh', headers: auth(tokens.accessToken) })
  t.equal(accessAsRefresh.statusCode, 401)
  t.equal(accessAsRefresh.json().code, 'TOKEN_INVALID')
  const refreshAsAccess = await app.inject({ method: 'GET', url: '/api/users', headers: auth(tokens.refreshToken) })
  t.equal(refreshAsAccess.statusCode, 401)
  t.equal(refreshAsAccess.json().code, 'TOKEN_INVALID')
  t.match(refreshAsAccess.headers['www-authenticate'], /^Bearer/)

  const notApp = await app.inject({ method: 'POST', url: '/api/users/application-token', headers: auth(tokens.refreshToken) })
  t.equal(notApp.statusCode, 403, 'admins are not application users')
  const user = await ctx.createUser('user')
  t.equal((await app.inject({ method: 'GET', url: '/api/users/application-token', headers: auth(user.refreshToken) })).statusCode, 403)

  const erp = await ctx.createUser('application', 'erp')
  for (const method of ['GET', 'POST'] as const) {
    const res = await app.inject({ method, url: '/api/users/application-token', headers: auth(erp.refreshToken) })
    t.equal(res.statusCode, 200, `${method} application-token`)
    t.equal(res.headers['cache-control'], 'no-store')
    const claims = decode(res.json().token)
    t.equal(claims.typ, 'application')
    t.equal(claims.exp, undefined, 'application tokens do not expire')
    const use = await app.inject({ method: 'GET', url: `/api/users/${erp.id}`, headers: auth(res.json().token) })
    t.equal(use.statusCode, 200, 'an application token is an access token')
    const onRefresh = await app.inject({ method: 'GET', url: '/api/users/refresh', headers: auth(res.json().token) })
    t.equal(onRefresh.statusCode, 401, 'an application token is not a refresh token')
    const onAppToken = await app.inject({ method: 'GET', url: '/api/users/application-token', headers: auth(erp.accessToken) })
    t.equal(onAppToken.statusCode, 401, 'the access token cannot mint application tokens')
  }
})

t.test('token attacks all end in 401 with a fixed message', async (t) => {
  const ctx = await build(t)
  const { app, auth, config } = ctx
  const secret = config.auth.jwtSecret!
  const now = Math.floor(Date.now() / 1000)
  const good = decode(ctx.adminToken)
  const invalid = { statusCode: 401, code: 'TOKEN_INVALID', error: 'Unauthorized', message: 'The token is invalid' }

  const call = (headers: Record<string, string>) => app.inject({ method: 'GET', url: '/api/users', headers })

  const none = await call({})
  t.equal(none.statusCode, 401)
  t.equal(none.json().code, 'TOKEN_MISSING')
  t.equal(none.headers['www-authenticate'], 'Bearer')
  t.equal((await call({ authorization: 'Basic YWRtaW46YWRtaW4=' })).json().code, 'TOKEN_MISSING')
  t.equal((await call({ authorization: 'Bearer ' })).json().code, 'TOKEN_MISSING', 'the scheme without a token')
  // a token is there but malformed (quoted by a script, sent twice, cut by a line break): not "send one"
  for (const sent of [`"${ctx.adminToken}"`, `${ctx.adminToken}, Bearer ${ctx.adminToken}`, `${ctx.adminToken.slice(0, 20)} ${ctx.adminToken.slice(20)}`]) {
    const res = await call({ authorization: `Bearer ${sent}` })
    t.same([res.statusCode, res.json(), res.headers['www-authenticate']], [401, invalid, 'Bearer error="invalid_token"'], `Bearer ${sent.slice(0, 24)}…`)
  }

  const [h, p] = ctx.adminToken.split('.')
  const cases: Record<string, string> = {
    'alg none': `${b64({ alg: 'none', typ: 'JWT', kid: 'default' })}.${p}.`,
    'alg none with signature': `${b64({ alg: 'none', typ: 'JWT', kid: 'default' })}.${p}.${ctx.adminToken.split('.')[2]}`,
    'no kid': (() => { const body = `${b64({ alg: 'HS256' })}.${b64(good)}`; return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}` })(),
    'unknown kid': sign({ alg: 'HS256', kid: 'other' }, good, secret),
    'lower-case alg': sign({ alg: 'hs256', typ: 'JWT' }, good, secret),
    'HS512 not allowed': (() => { const body = `${b64({ alg: 'HS512', kid: 'default' })}.${b64(good)}`; return `${body}.${createHmac('sha512', secret).update(body).digest('base64url')}` })(),
    'foreign signature': sign({ alg: 'HS256', typ: 'JWT' }, good, 'another-secret-that-is-long-enough-123'),
    'tampered payload': `${h}.${b64({ ...good, sub: '2' })}.${ctx.adminToken.split('.')[2]}`,
    'wrong typ': sign({ alg: 'HS256' }, { ...good, typ: 'refresh' }, secret),
    'typ without matching audience': sign({ alg: 'HS256' }, { ...good, aud: 'picking-gateway:refresh' }, secret),
    'access token without exp': sign({ alg: 'HS256' }, { ...good, exp: undefined }, secret),
    'string exp': sign({ alg: 'HS256' }, { ...good, exp: String(now + 600) }, secret),
    'future nbf': sign({ alg: 'HS256' }, { ...good, nbf: now + 3600 }, secret),
    'unknown crit header': sign({ alg: 'HS256', crit: ['x-unknown'], 'x-unknown': 1 }, good, secret),
    'wrong token version': sign({ alg: 'HS256' }, { ...good, ver: good.ver + 1 }, secret),
    'unknown user': sign({ alg: 'HS256' }, { ...good, sub: '999' }, secret),
    garbage: 'not.a.jwt',
    'two parts': `${h}.${p}`
  }
  for (const [name, token] of Object.entries(cases)) {
    const res = await call(auth(token))
    t.equal(res.statusCode, 401, name)
    t.same(res.json(), invalid, `${name}: body`)
  }

  const expired = sign({ alg: 'HS256', typ: 'JWT' }, { ...good, iat: now - 1000, exp: now - 100 }, secret)
  const exp = await call(auth(expired))
  t.equal(exp.statusCode, 401)
  t.equal(exp.json().code, 'TOKEN_EXPIRED')
  t.match(exp.headers['www-authenticate'], /invalid_token/)
  const expiredForeign = sign({ alg: 'HS256', typ: 'JWT' }, { ...good, iat: now - 1000, exp: now - 100 }, 'another-secret-that-is-long-enough-123')
  t.equal((await call(auth(expiredForeign))).json().code, 'TOKEN_INVALID', 'expiry is only told for a well-signed token')
})

t.test('a token that answered while valid is refused as expired once past exp, and a tampered copy never rides on it', async (t) => {
  const ctx = await build(t)
  const { app, auth, config } = ctx
  const secret = config.auth.jwtSecret!
  const good = decode(ctx.adminToken)
  const call = (token: string) => app.inject({ method: 'GET', url: '/api/materials?limit=1', headers: auth(token) })
  // exp is in whole seconds: this one ends at the start of the next second but one
  const exp = Math.floor(Date.now() / 1000) + 2
  const token = sign({ alg: 'HS256', typ: 'JWT' }, { ...good, exp }, secret)
  t.equal((await call(token)).statusCode, 200)
  t.equal((await call(token)).statusCode, 200, 'and again')
  const [h, , sig] = token.split('.')
  const tampered = `${h}.${b64({ ...good, exp, sub: '2' })}.${sig}`
  t.equal((await call(tampered)).json().code, 'TOKEN_INVALID', 'the same signature over other claims is another text')
  await sleep(exp * 1000 + 20 - Date.now())
  const late = await call(token)
  t.equal(late.statusCode, 401)
  t.equal(late.json().code, 'TOKEN_EXPIRED')
  t.equal((await call(token)).json().code, 'TOKEN_EXPIRED', 'and stays so')
})

t.test('on one keep-alive connection every request is judged by its own header', async (t) => {
  const ctx = await build(t)
  const { app, config } = ctx
  const secret = config.auth.jwtSecret!
  await app.listen({ port: 0, host: '127.0.0.1' })
  let connections = 0
  app.server.on('connection', () => { connections++ })
  const client = new Client(`http://127.0.0.1:${(app.server.address() as { port: number }).port}`)
  t.teardown(async () => { await client.close() })
  const call = async (authorization?: string): Promise<{ status: number, code?: string }> => {
    const res = await client.request({ method: 'GET', path: '/api/users?limit=1', headers: authorization === undefined ? {} : { authorization } })
    const body = await res.body.json() as { code?: string }
    return { status: res.statusCode, code: body.code }
  }
  const bearer = (token: string) => `Bearer ${token}`
  const user = await ctx.createUser('user')
  const good = decode(ctx.adminToken)
  const exp = Math.floor(Date.now() / 1000) + 2
  const shortLived = sign({ alg: 'HS256', typ: 'JWT' }, { ...good, exp }, secret)
  const [h, , sig] = ctx.adminToken.split('.')

  t.same(await call(bearer(ctx.adminToken)), { status: 200, code: undefined }, 'an admin lists users')
  t.same(await call(bearer(ctx.adminToken)), { status: 200, code: undefined }, 'and again')
  t.same(await call(bearer(user.accessToken)), { status: 403, code: 'FORBIDDEN' }, 'a user\'s token next on the same connection is the user\'s')
  t.same(await call(bearer(ctx.adminToken)), { status: 200, code: undefined }, 'the admin\'s again')
  t.same(await call(`${h}.${b64({ ...good, sub: String(user.id) })}.${sig}`), { status: 401, code: 'TOKEN_MISSING' }, 'no Bearer')
  t.same(await call(bearer(`${h}.${b64({ ...good, typ: 'refresh' })}.${sig}`)), { status: 401, code: 'TOKEN_INVALID' }, 'a tampered copy')
  t.same(await call(), { status: 401, code: 'TOKEN_MISSING' }, 'no header')
  t.same(await call(bearer(user.refreshToken)), { status: 401, code: 'TOKEN_INVALID' }, 'a refresh token, checked, is not an access token')
  t.same(await call(bearer(user.refreshToken)), { status: 401, code: 'TOKEN_INVALID' }, 'nor the second time')
  t.same(await call(bearer(shortLived)), { status: 200, code: undefined }, 'a token about to expire')
  await sleep(exp * 1000 + 20 - Date.now())
  t.same(await call(bearer(shortLived)), { status: 401, code: 'TOKEN_EXPIRED' }, 'past its exp on the same connection')
  t.same(await call(bearer(shortLived)), { status: 401, code: 'TOKEN_EXPIRED' }, 'and stays so')
  const userOn = async () => {
    const res = await client.request({ method: 'GET', path: `/api/users/${user.id}`, headers: { authorization: bearer(user.accessToken) } })
    await res.body.dump()
    return res.statusCode
  }
  t.equal(await userOn(), 200, 'a user reads itself')
  t.equal(await userOn(), 200)
  t.equal((await app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: ctx.auth(ctx.adminToken), payload: { enabled: false } })).statusCode, 200)
  t.equal(await userOn(), 401, 'disabled: its token refused on the connection that used it')
  t.equal(connections, 1, 'all on one connection')
})

t.test('VerifiedTokens: claims until exp, none for unknown text, emptied when full', async (t) => {
  const claims = (exp?: number): TokenClaims => ({ sub: '1', typ: exp === undefined ? 'application' : 'access', aud: 'x', ver: 0, jti: 'j', iat: 0, exp })
  const tokens = new VerifiedTokens<TokenClaims>(2)
  t.equal(tokens.get('a', 0), undefined)
  tokens.set('a', claims(100))
  t.same(tokens.get('a', 100_000), claims(100), 'valid at exp itself (fast-jwt: now <= exp)')
  t.equal(tokens.get('a', 100_001), 'expired')
  t.equal(tokens.get('a', 0), undefined, 'an expired entry is dropped')
  tokens.set('b', claims())
  t.same(tokens.get('b', Number.MAX_SAFE_INTEGER), claims(), 'without exp (application tokens) it stays')
  tokens.set('c', claims(100))
  t.equal(tokens.size, 2)
  tokens.set('d', claims(100))
  t.equal(tokens.size, 1, 'full: emptied, then the new one kept')
  t.equal(tokens.get('b', 0), undefined)
  t.ok(tokens.get('d', 0))
  const socket = {}
  t.equal(tokens.recall(socket, 'Bearer d', 0), undefined, 'nothing remembered for a connection')
  tokens.remember(socket, 'Bearer x', 'x')
  t.equal(tokens.recall(socket, 'Bearer x', 0), undefined, 'a token not checked here is not remembered')
  tokens.remember(socket, 'Bearer d', 'd')
  t.same(tokens.recall(socket, 'Bearer d', 100_000), claims(100), 'the header a connection sent last')
  t.equal(tokens.recall(socket, 'Bearer  d', 0), undefined, 'another text is not it')
  t.equal(tokens.recall({}, 'Bearer d', 0), undefined, 'nor is another connection')
  t.equal(tokens.recall(socket, 'Bearer d', 100_001), 'expired', 'expired after exp')
  t.equal(tokens.recall(socket, 'Bearer d', 0), undefined, 'and forgotten')
  tokens.set('e', claims(100), 50_000)
  t.same(tokens.get('e', 50_000), claims(100), 'an earlier time of its own: valid up to it')
  t.equal(tokens.get('e', 50_001), 'expired', 'and not after it, though exp is later')
})

t.test('revocation: disable, password change and delete revoke every token at once', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const admin = auth(ctx.adminToken)

  const erp = await ctx.createUser('application')
  const appToken = (await app.inject({ method: 'POST', url: '/api/users/application-token', headers: auth(erp.refreshToken) })).json().token
  t.equal((await app.inject({ method: 'GET', url: `/api/users/${erp.id}`, headers: auth(appToken) })).statusCode, 200)
  await app.inject({ method: 'POST', url: `/api/users/${erp.id}`, headers: admin, payload: { enabled: false } })
  for (const token of [appToken, erp.accessToken]) {
    const res = await app.inject({ method: 'GET', url: `/api/users/${erp.id}`, headers: auth(token) })
    t.equal(res.statusCode, 401)
    t.equal(res.json().code, 'TOKEN_INVALID')
  }
  t.equal((await app.inject({ method: 'GET', url: '/api/users/refresh', headers: auth(erp.refreshToken) })).statusCode, 401)
  await app.inject({ method: 'POST', url: `/api/users/${erp.id}`, headers: admin, payload: { enabled: true } })
  t.equal((await app.inject({ method: 'GET', url: `/api/users/${erp.id}`, headers: auth(appToken) })).statusCode, 401, 're-enabling does not revive old tokens')

  const user = await ctx.createUser('user')
  const change = await app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: auth(user.accessToken), payload: { password: 'a-new-password' } })
  t.equal(change.statusCode, 200, 'a user changes its own password')
  t.equal((await app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: auth(user.accessToken) })).statusCode, 401)
  const relogin = await ctx.login(user.username, 'a-new-password')
  t.equal((await app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: auth(relogin.accessToken) })).statusCode, 200)

  const doomed = await ctx.createUser('user')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/users/${doomed.id}`, headers: admin })).statusCode, 204)
  t.equal((await app.inject({ method: 'GET', url: `/api/users/${doomed.id}`, headers: auth(doomed.accessToken) })).statusCode, 401)
})

t.test('a rename or a type change revokes an application token, and the OpenAPI document says so', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const admin = auth(ctx.adminToken)
  const changes = { renamed: { username: 'erp-renamed' }, 'type changed': { type: 'user' } }
  for (const [what, payload] of Object.entries(changes)) {
    const erp = await ctx.createUser('application')
    const appToken = (await app.inject({ method: 'POST', url: '/api/users/application-token', headers: auth(erp.refreshToken) })).json().token
    t.equal((await app.inject({ method: 'POST', url: `/api/users/${erp.id}`, headers: admin, payload })).statusCode, 200, what)
    const res = await app.inject({ method: 'GET', url: '/api/materials?limit=1', headers: auth(appToken) })
    t.equal(res.json().code, 'TOKEN_INVALID', `${what}: the application token is revoked`)
  }
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const token = doc.paths['/api/users/application-token'].post.responses['200'].content['application/json'].schema.properties.token
  t.match(token.description, /renamed/, 'the token field names a rename')
  t.match(token.description, /type changes/, 'and a type change')
})

t.test('a login that rehashes a password (other argon2 parameters) never writes it back over a password changed while it was checked', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const user = await ctx.createUser('user')
  // hashes with other parameters than the configured ones (an older configuration's): the next login rehashes them.
  // Slow to verify on purpose (some 250 ms), so that a change lands while a login checks one.
  const slowHash = (password: string) => argon2.hash(password, { type: argon2.argon2id, memoryCost: 4096, timeCost: 60, parallelism: 1 })
  const setHash = async (hash: string, revoke = false): Promise<void> => {
    await ctx.db.execute({ text: `UPDATE gateway_users SET password_hash = @hash${revoke ? ', token_version = token_version + 1' : ''} WHERE id = @id`, params: [{ name: 'hash', kind: 'string', value: hash }, { name: 'id', kind: 'integer', value: user.id }] })
  }
  const login = (password: string) => app.inject({ method: 'POST', url: '/api/users/login', payload: { username: user.username, password } })
  const newHash = await slowHash('the-new-password')
  await setHash(await slowHash(user.password))
  const checking = login(user.password)
  await sleep(50)
  // the password changed meanwhile, as another instance or `picking-gateway user passwd` changes it
  await setHash(newHash, true)
  const raced = await checking
  t.equal(raced.statusCode, 401, 'the password changed while it was checked: no tokens that the change has revoked already')
  t.equal((await login(user.password)).statusCode, 401, 'the old password stays changed (before: the rehash wrote it back)')
  t.equal((await login('the-new-password')).statusCode, 200)

  // two logins of one account at once, both rehashing: the second finds the first one's new hash, and still logs in
  await setHash(newHash)
  const both = await Promise.all([login('the-new-password'), login('the-new-password')])
  t.same(both.map((res) => res.statusCode), [200, 200])
  for (const res of both) t.equal((await app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: auth(res.json().accessToken) })).statusCode, 200)
  t.equal((await login('the-new-password')).statusCode, 200)
})

t.test('a login overtaken by a revocation while its password was checked answers 401, or tokens that work: never a 200 with tokens refused at once', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const admin = auth(ctx.adminToken)
  const user = await ctx.createUser('user')
  // a hash slow to verify (some 250 ms), so that the change lands while the login checks it
  const hash = await argon2.hash(user.password, { type: argon2.argon2id, memoryCost: 4096, timeCost: 60, parallelism: 1 })
  const slow = async (): Promise<void> => {
    await ctx.db.execute({ text: 'UPDATE gateway_users SET password_hash = @hash WHERE id = @id', params: [{ name: 'hash', kind: 'string', value: hash }, { name: 'id', kind: 'integer', value: user.id }] })
  }
  const raced = async (change: object) => {
    await slow()
    const checking = app.inject({ method: 'POST', url: '/api/users/login', payload: { username: user.username, password: user.password } })
    await sleep(50)
    t.equal((await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: change })).statusCode, 200)
    return await checking
  }
  const get = async (token: string) => (await app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: auth(token) })).statusCode

  // an admin's new password: the one checked is no longer the user's
  const password = await raced({ password: 'an-admins-new-password' })
  t.equal(password.statusCode, 401)
  t.equal(password.json().code, 'INVALID_CREDENTIALS')
  await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { password: user.password } })

  // disabled: the 401 of a disabled user
  const disabled = await raced({ enabled: false })
  t.equal(disabled.statusCode, 401)
  t.equal(disabled.json().code, 'INVALID_CREDENTIALS')
  await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { enabled: true } })

  // a type change or a rename revokes the tokens too, but the password checked is still the user's: tokens of the row as it is now
  const typed = await raced({ type: 'application' })
  t.equal(typed.statusCode, 200)
  t.equal(await get(typed.json().accessToken), 200, 'the access token works')
  t.equal((await app.inject({ method: 'POST', url: '/api/users/application-token', headers: auth(typed.json().refreshToken) })).statusCode, 200, 'the refresh token too, as the application it now is')
  const renamed = await raced({ username: `${user.username}-renamed` })
  t.equal(renamed.statusCode, 200)
  t.equal(await get(renamed.json().accessToken), 200)
  t.equal(decode(renamed.json().accessToken).usr, `${user.username}-renamed`)
})

t.test('a user deleted while its login was being checked: the login is the 401 of an unknown user, not a 404 naming the table and id', async (t) => {
  const ctx = await build(t)
  const { app } = ctx
  const user = await ctx.createUser('user')
  // a hash slow to verify (some 250 ms), so that the delete lands while the login checks it
  const hash = await argon2.hash(user.password, { type: argon2.argon2id, memoryCost: 4096, timeCost: 60, parallelism: 1 })
  await ctx.db.execute({ text: 'UPDATE gateway_users SET password_hash = @hash WHERE id = @id', params: [{ name: 'hash', kind: 'string', value: hash }, { name: 'id', kind: 'integer', value: user.id }] })
  const checking = app.inject({ method: 'POST', url: '/api/users/login', payload: { username: user.username, password: user.password } })
  await sleep(50)
  await ctx.db.execute({ text: 'DELETE FROM gateway_users WHERE id = @id', params: [{ name: 'id', kind: 'integer', value: user.id }] })
  const res = await checking
  t.equal(res.statusCode, 401)
  t.same(res.json(), { statusCode: 401, code: 'INVALID_CREDENTIALS', error: 'Unauthorized', message: 'Invalid username or password', login: false })
})

t.test('revocation reaches other instances within the cache time', async (t) => {
  const ctx = await build(t, { auth: { revocationCacheMs: 300 } })
  const user = await ctx.createUser('user')
  const get = () => ctx.app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: ctx.auth(user.accessToken) })
  t.equal((await get()).statusCode, 200)
  // Bump the version behind the app's back, as another gateway instance would.
  await ctx.app.repos.users.update(user.id, { tokenVersion: 5 })
  const started = Date.now()
  let status = 200
  while (status === 200 && Date.now() - started < 5000) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    status = (await get()).statusCode
  }
  t.equal(status, 401)
  t.ok(Date.now() - started < 2000, 'revoked within seconds')
})

t.test('revocation reaches other instances within the cache time also when the system clock was set back meanwhile (NTP)', async (t) => {
  const ctx = await build(t, { auth: { revocationCacheMs: 300 } })
  const user = await ctx.createUser('user')
  const get = () => ctx.app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: ctx.auth(user.accessToken) })
  // a token older than the copy by more than a second: judged by the copy, not read again for being newer
  await sleep(1100)
  t.equal((await get()).statusCode, 200, 'the row is now cached')
  await ctx.app.repos.users.update(user.id, { tokenVersion: Number(decode(user.accessToken).ver) + 1 })
  const realNow = Date.now
  Date.now = () => realNow() - 3600 * 1000
  t.teardown(() => { Date.now = realNow })
  await sleep(400)
  t.equal((await get()).statusCode, 401, 'revoked after the cache time, not an hour later (before: the copy stood until the clock came back to its time)')
})

t.test('re-enabled: new tokens work at once, though the cache still held the disabled row (before: 401 for the cache time)', async (t) => {
  // a cache time no test waits out: every 200 below comes from the row being forgotten, not from expiry
  const ctx = await build(t, { auth: { revocationCacheMs: 60000 } })
  const admin = ctx.auth(ctx.adminToken)
  const user = await ctx.createUser('user')
  const erp = await ctx.createUser('application')
  for (const who of [user, erp]) {
    const get = (token: string) => ctx.app.inject({ method: 'GET', url: `/api/users/${who.id}`, headers: ctx.auth(token) })
    t.equal((await ctx.app.inject({ method: 'PATCH', url: `/api/users/${who.id}`, headers: admin, payload: { enabled: false } })).statusCode, 200)
    t.equal((await get(who.accessToken)).statusCode, 401, 'disabled: refused, and the disabled row is now cached')
    t.equal((await ctx.app.inject({ method: 'PATCH', url: `/api/users/${who.id}`, headers: admin, payload: { enabled: true } })).statusCode, 200)
    t.equal((await get(who.accessToken)).statusCode, 401, 'the tokens from before stay revoked')
    const again = await ctx.login(who.username, who.password)
    t.equal((await get(again.accessToken)).statusCode, 200, `${who.username}: the new access token works at once`)
    const app = await ctx.app.inject({ method: 'POST', url: '/api/users/application-token', headers: ctx.auth(again.refreshToken) })
    t.equal(app.statusCode, who === erp ? 200 : 403, 'the new refresh token too')
  }
  // a login also forgets a stale copy the API did not cause (another instance enabled the row)
  const other = await ctx.createUser('user')
  await ctx.app.repos.users.update(other.id, { enabled: false })
  t.equal((await ctx.app.inject({ method: 'GET', url: `/api/users/${other.id}`, headers: ctx.auth(other.accessToken) })).statusCode, 401)
  await ctx.app.repos.users.update(other.id, { enabled: true })
  const fresh = await ctx.login(other.username, other.password)
  t.equal((await ctx.app.inject({ method: 'GET', url: `/api/users/${other.id}`, headers: ctx.auth(fresh.accessToken) })).statusCode, 200)
})

t.test('tokens another instance issued after a password change or a re-enable work at once, though this instance cached the row before', async (t) => {
  // a cache time no test waits out: every 200 below comes from the row being read again, not from expiry
  const ctx = await build(t, { auth: { revocationCacheMs: 60000 } })
  const user = await ctx.createUser('user')
  const get = (token: string) => ctx.app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: ctx.auth(token) })
  // a new user's first version (random), as its token carries it
  const v = decode(user.accessToken).ver as number
  t.equal((await get(user.accessToken)).statusCode, 200, 'the row (version v) is now cached')
  // Another instance changes the password (version v + 1) and the user logs in there: its tokens carry version v + 1.
  await ctx.app.repos.users.update(user.id, { tokenVersion: v + 1 })
  const newer = ctx.app.auth.issue({ id: user.id, tokenVersion: v + 1 }, 'access')
  t.equal((await get(newer)).statusCode, 200, 'the newer token works at once (before: 401 TOKEN_INVALID for the cache time)')
  t.equal((await get(user.accessToken)).statusCode, 401, 'and the row read again revokes the old token here at once')
  const refresh = ctx.app.auth.issue({ id: user.id, tokenVersion: v + 1 }, 'refresh')
  t.equal((await ctx.app.inject({ method: 'POST', url: '/api/users/refresh', headers: ctx.auth(refresh) })).statusCode, 200, 'a newer refresh token too')

  // Another instance disables the user (version v + 2): this instance caches the disabled row.
  await ctx.app.repos.users.update(user.id, { enabled: false, tokenVersion: v + 2 })
  const during = ctx.app.auth.issue({ id: user.id, tokenVersion: v + 2 }, 'access')
  t.equal((await get(during)).statusCode, 401, 'disabled: refused, and the disabled row is now cached')
  // ... enables it again, and the user logs in there.
  await ctx.app.repos.users.update(user.id, { enabled: true })
  t.equal((await get(ctx.app.auth.issue({ id: user.id, tokenVersion: v + 2 }, 'access'))).statusCode, 200, 'a token from the login after the re-enable works at once')
  t.equal((await get(newer)).statusCode, 401, 'older tokens stay revoked')
  // a token older than the copy is judged by the copy: no read of the row for it
  await ctx.app.repos.users.update(user.id, { tokenVersion: v + 3 })
  t.equal((await get(during)).statusCode, 200, 'an older token still rides on the cached copy until it expires (the documented revocation delay)')
})

t.test('a refresh token revoked on another instance makes no new tokens here, though this instance cached the row before', async (t) => {
  // a cache time no test waits out: the 401s below come from the row being read, not from expiry
  const ctx = await build(t, { auth: { revocationCacheMs: 60000 } })
  const erp = await ctx.createUser('application')
  const v = decode(erp.accessToken).ver as number
  t.equal((await ctx.app.inject({ method: 'GET', url: `/api/users/${erp.id}`, headers: ctx.auth(erp.accessToken) })).statusCode, 200, 'the row (version v) is now cached')
  // another instance changes the password (version v + 1): the tokens of version v are refused there at once
  await ctx.app.repos.users.update(erp.id, { tokenVersion: v + 1 })
  for (const url of ['/api/users/refresh', '/api/users/application-token']) {
    const res = await ctx.app.inject({ method: 'POST', url, headers: ctx.auth(erp.refreshToken) })
    t.equal(res.statusCode, 401, `${url}: no 200 with a token of version v, dead on every other instance (and a non-expiring one at that)`)
    t.equal(res.json().code, 'TOKEN_INVALID')
  }
  t.equal((await ctx.app.inject({ method: 'GET', url: `/api/users/${erp.id}`, headers: ctx.auth(erp.accessToken) })).statusCode, 401, 'the copy read for the refresh is kept: the old access token is refused here now too')
  // an unchanged row: the refresh token makes tokens as before
  const again = await ctx.login(erp.username, erp.password)
  t.equal((await ctx.app.inject({ method: 'POST', url: '/api/users/refresh', headers: ctx.auth(again.refreshToken) })).statusCode, 200)
  t.equal((await ctx.app.inject({ method: 'POST', url: '/api/users/application-token', headers: ctx.auth(again.refreshToken) })).statusCode, 200)
})

t.test('a token another instance issued after the version came round to 0 (a narrow column\'s last value passed) works at once, though this instance cached the row at its last value', async (t) => {
  // a cache time no test waits out: the 200 below comes from the row being read again, not from expiry
  const ctx = await build(t, { auth: { revocationCacheMs: 60000 } })
  const user = await ctx.createUser('user')
  const get = (token: string) => ctx.app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: ctx.auth(token) })
  await ctx.app.repos.users.update(user.id, { tokenVersion: 255 })
  const last = ctx.app.auth.issue({ id: user.id, tokenVersion: 255 }, 'access')
  t.equal((await get(last)).statusCode, 200, 'the row (version 255, a TINYINT\'s last) is now cached')
  // another instance revokes (255 comes round to 0) and the user logs in there
  await ctx.app.repos.users.update(user.id, { tokenVersion: 0 })
  t.equal((await get(ctx.app.auth.issue({ id: user.id, tokenVersion: 0 }, 'access'))).statusCode, 200, 'the new token works at once (before: 401 TOKEN_INVALID for the cache time, 0 being lower than the copy\'s 255)')
  t.equal((await get(last)).statusCode, 401, 'and the row read again revokes the old token here at once')
})

t.test('a token the cached copy refuses reads the row again only when it was issued after the copy was read: a disabled user\'s polling costs no read per request', async (t) => {
  // a cache time no test waits out: the requests below are judged by one copy
  const ctx = await build(t, { auth: { revocationCacheMs: 60000 } })
  const user = await ctx.createUser('application')
  const app = (await ctx.app.inject({ method: 'POST', url: '/api/users/application-token', headers: ctx.auth(user.refreshToken) })).json().token as string
  // iat has whole seconds: past the second of slack, the token is older than any copy read from now on
  await sleep(2100)
  // the picking system's own screen disables the account without the gateway (no new token version)
  const users = ctx.app.repos.users
  await ctx.db.execute({ text: 'UPDATE gateway_users SET enabled = 0 WHERE id = @id', params: [{ name: 'id', kind: 'integer', value: user.id }] })
  // the copy read at the token's issue is dropped: the first request below reads the disabled row
  ctx.app.auth.forget(user.id)
  const get = users.get.bind(users)
  let reads = 0
  users.get = async (id) => { reads++; return await get(id) }
  t.teardown(() => { users.get = get })
  const codes = new Set<number>()
  for (let i = 0; i < 50; i++) codes.add((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(app) })).statusCode)
  t.same([...codes], [401], 'refused')
  // before: every request read the row again (51 reads for 50 requests), for as long as the integration polled
  t.equal(reads, 1, 'one read, then the cached copy judges it')
})

/**
 * A user, and the users repository's next read of it held until `release`: that read answers the row
 * as it is now (stale by then); the reads after it go to the database.
 */
async function heldRead (t: Test, absent: (id: unknown) => boolean = () => false) {
  const ctx = await build(t, { auth: { revocationCacheMs: 60000 } })
  const user = await ctx.createUser('user')
  const users = ctx.app.repos.users
  const get = users.get.bind(users)
  const stale = await get(user.id)
  let release!: () => void
  const held = new Promise<void>((resolve) => { release = resolve })
  let calls = 0
  users.get = async (id) => { if (absent(id)) return undefined; if (++calls === 1) { await held; return stale } return await get(id) }
  t.teardown(() => { users.get = get })
  ctx.app.auth.forget(user.id)
  return { ctx, user, users, stale, release }
}

t.test('two reads of a user in flight at once: the later read\'s copy is kept, not the one that finished last', async (t) => {
  // the first read started before the password change and answers after the second: it holds the old row
  const { ctx, user, users, release } = await heldRead(t)
  const first = ctx.app.auth.identifyUser(user.id, 0, 'access').catch(() => undefined)
  await users.update(user.id, { tokenVersion: 1 })
  await sleep(5)
  t.match(await ctx.app.auth.identifyUser(user.id, 1, 'access'), { id: user.id, tokenVersion: 1 }, 'the later read: version 1')
  release()
  await first
  // before: the earlier read overwrote the cache with version 0, so the revoked token passed for the cache time
  await t.rejects(ctx.app.auth.identifyUser(user.id, 0, 'access'), { code: 'TOKEN_INVALID' }, 'a token of version 0 stays refused')
})

t.test('a read of a user in flight while the user is disabled here is not kept: the revocation holds at once on this instance', async (t) => {
  // the first read started before the change and answers after it: it holds the row as it was
  const { ctx, user, stale, release } = await heldRead(t)
  const first = ctx.app.auth.identifyUser(user.id, Number(stale!.tokenVersion), 'access')
  const disabled = await ctx.app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: ctx.auth(ctx.adminToken), payload: { enabled: false } })
  t.equal(disabled.statusCode, 200)
  release()
  t.match(await first, { id: user.id }, 'the request that began before the change passes')
  // before: that read's copy went into the cache after the change had emptied it, and the token passed for the cache time
  const after = await ctx.app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: ctx.auth(user.accessToken) })
  t.equal(after.statusCode, 401)
  t.equal(after.json().code, 'TOKEN_INVALID')
})

t.test('a read of a user in flight while the user is disabled here is not kept, though the cache was emptied meanwhile (full: more than 10000 users)', async (t) => {
  // the first read began before the change and answers after it; ids from 1000000 up are users that are not there
  const { ctx, user, stale, release } = await heldRead(t, (id) => Number(id) >= 1000000)
  const first = ctx.app.auth.identifyUser(user.id, Number(stale!.tokenVersion), 'access')
  t.equal((await ctx.app.inject({ method: 'POST', url: `/api/users/${user.id}`, headers: ctx.auth(ctx.adminToken), payload: { enabled: false } })).statusCode, 200)
  // tokens of 10001 other ids checked meanwhile: the cache is full and emptied, the note of the change with it
  for (let id = 1000000; id <= 1010001; id++) await ctx.app.auth.identifyUser(id, 0, 'access').catch(() => {})
  release()
  t.match(await first, { id: user.id }, 'the request that began before the change passes')
  const after = await ctx.app.inject({ method: 'GET', url: `/api/users/${user.id}`, headers: ctx.auth(user.accessToken) })
  t.equal(after.statusCode, 401, 'before: the read begun before the change was kept once the cache had been emptied, and the token passed for the cache time')
  t.equal(after.json().code, 'TOKEN_INVALID')
})

t.test('key rotation: the newest key signs, older keys verify until removed', async (t) => {
  const k1 = { kid: 'k1', secret: 'first-secret-0123456789abcdefghijklmn' }
  const k2 = { kid: 'k2', secret: 'second-secret-0123456789abcdefghijklm' }
  const before = await build(t, { auth: { keys: [k1] } })
  const old = await before.login('admin', ADMIN_PASSWORD)
  t.equal(JSON.parse(Buffer.from(old.accessToken.split('.')[0], 'base64url').toString()).kid, 'k1')

  // Same database, new configuration: k2 added in front.
  const { buildApp } = await import('../../src/app.js')
  const { validateConfig } = await import('../../src/config.js')
  const base = { database: before.config.database, auth: { argon2: before.config.auth.argon2 }, logging: { level: 'silent' as const } }
  const rotated = await buildApp(validateConfig({ ...base, auth: { ...base.auth, keys: [k2, k1] } }), { db: before.db })
  t.teardown(() => rotated.close())
  const call = (app: typeof rotated, token: string) => app.inject({ method: 'GET', url: '/api/users/1', headers: { authorization: `Bearer ${token}` } })
  t.equal((await call(rotated, old.accessToken)).statusCode, 200, 'a token signed with the older key still works')
  const fresh = await rotated.inject({ method: 'GET', url: '/api/users/refresh', headers: { authorization: `Bearer ${old.refreshToken}` } })
  const freshToken = fresh.json().accessToken
  t.equal(JSON.parse(Buffer.from(freshToken.split('.')[0], 'base64url').toString()).kid, 'k2', 'new tokens are signed with the newest key')

  const removed = await buildApp(validateConfig({ ...base, auth: { ...base.auth, keys: [k2] } }), { db: before.db })
  t.teardown(() => removed.close())
  const refused = await call(removed, old.accessToken)
  t.equal(refused.statusCode, 401, 'a token signed with a removed key is refused')
  t.equal(refused.json().code, 'TOKEN_INVALID')
  t.equal((await call(removed, freshToken)).statusCode, 200)
})

t.test('two instances on one database with different secrets: each refuses the other\'s tokens, and the log says why', async (t) => {
  const logs: string[] = []
  const first = await build(t, { auth: { jwtSecret: 'first-instance-secret-0123456789abcdefgh' }, logging: { level: 'info' } }, undefined, { logStream: { write: (line: string) => { logs.push(line) } } })
  const { buildApp } = await import('../../src/app.js')
  const { validateConfig } = await import('../../src/config.js')
  const base = { database: first.config.database, auth: { argon2: first.config.auth.argon2 }, logging: { level: 'silent' as const } }
  const other = await buildApp(validateConfig({ ...base, auth: { ...base.auth, jwtSecret: 'second-instance-secret-0123456789abcdef' } }), { db: first.db })
  t.teardown(() => other.close())
  const login = await other.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })
  const { accessToken } = login.json()
  const res = await first.app.inject({ method: 'GET', url: '/api/users/1', headers: { authorization: `Bearer ${accessToken}` } })
  t.same([res.statusCode, res.json().code, res.json().message], [401, 'TOKEN_INVALID', 'The token is invalid'], 'the client learns nothing more')
  const refused = logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => typeof line.msg === 'string' && line.msg.startsWith('token refused'))
  t.equal(refused.length, 1, 'before: nothing in the log, so an operator could not tell why every other request was a 401')
  t.match(refused[0], { kid: 'default', msg: /signed with another secret \(an instance with another auth\.jwtSecret or auth\.keys/ })

  const rotated = await buildApp(validateConfig({ ...base, auth: { ...base.auth, keys: [{ kid: 'k2', secret: 'second-instance-secret-0123456789abcdef' }] } }), { db: first.db })
  t.teardown(() => rotated.close())
  const k2 = (await rotated.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })).json().accessToken
  t.equal((await first.app.inject({ method: 'GET', url: '/api/users/1', headers: { authorization: `Bearer ${k2}` } })).statusCode, 401)
  t.match(JSON.parse(logs.filter((line) => line.includes('token refused')).at(-1)!), { kid: 'k2', kids: ['default'], msg: /its kid names no key of this gateway/ }, 'a kid it does not know')
  t.equal((await first.app.inject({ method: 'GET', url: '/api/users/1', headers: first.auth(first.adminToken) })).statusCode, 200, 'its own tokens still work')
  t.notOk(logs.some((line) => line.includes(accessToken) || line.includes(k2)), 'the token itself is never logged')
})

t.test('usernames with invisible characters (shown as another name; ignored by SQL Server collations) are refused at a login', async (t) => {
  const { app } = await build(t)
  for (const username of ['admin\ufeff', '\u202eadmin', 'ad\u00admin', '\u2060', 'admin\u{e0001}', 'ad\u{e0020}min', 'admin\u{e01ef}', 'admin\u{1bca0}', 'admin\uffff']) {
    const res = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username, password: ADMIN_PASSWORD } })
    t.equal(res.statusCode, 400, JSON.stringify(username))
    t.match(res.json().message, /^body\/username must hold a character other than spaces, and no control or invisible characters/)
  }
})
