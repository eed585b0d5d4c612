// Browser login at a real OpenID provider (oidc-provider on loopback): code + PKCE, state and nonce, ending in the gateway's token pair.
import { exportJWK, generateKeyPair } from 'jose'
import t, { type Test } from 'tap'
import { build, type TestContext } from '../helpers/build.js'
import { AUDIENCE, BROWSER_CLIENT, browserLogin, CLIENT_SECRET, startProvider, type TestProvider } from '../helpers/oidc.js'

const REDIRECT = 'https://gateway.example.com/api/users/sso/warehouse/callback'
const TYPE_MAP = { 'gateway-admin': 'admin', 'gateway-user': 'user', 'gateway-app': 'application' } as const
const decode = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString())

async function setup (t: Test, options: { licence?: number, stateTtlMs?: number, maxPending?: number, clientSecret?: string, revocationCacheMs?: number } = {}): Promise<{ idp: TestProvider, ctx: TestContext, logs: string[] }> {
  const idp = await startProvider({ redirectUri: REDIRECT })
  t.teardown(() => idp.close())
  const logs: string[] = []
  const ctx = await build(t, {
    auth: {
      sso: [
        { id: 'warehouse', issuer: idp.issuer, audience: AUDIENCE, typeMap: TYPE_MAP, timeoutMs: 1000, clientId: BROWSER_CLIENT, clientSecret: options.clientSecret ?? CLIENT_SECRET, redirectUri: REDIRECT },
        { id: 'tokens-only', issuer: `${idp.issuer}-other`, audience: AUDIENCE, typeMap: TYPE_MAP }
      ],
      revocationCacheMs: options.revocationCacheMs ?? 0
    },
    licence: { logins: options.licence ?? 10 },
    logging: { level: 'info' }
  }, undefined, { timing: { stateTtlMs: options.stateTtlMs, maxPending: options.maxPending }, logStream: { write: (line: string) => { logs.push(line) } } })
  return { idp, ctx, logs }
}

/** GET /login, then the provider's pages as a browser follows them: the callback URL the provider sends back. */
async function start (ctx: TestContext, idp: TestProvider): Promise<{ authorization: URL, callback: URL }> {
  const res = await ctx.app.inject({ method: 'GET', url: '/api/users/sso/warehouse/login' })
  if (res.statusCode !== 302) throw new Error(`login: ${res.statusCode} ${res.body}`)
  const authorization = new URL(res.headers.location as string)
  return { authorization, callback: await browserLogin(authorization.href, REDIRECT) }
}

const callbackOf = (url: URL) => `${url.pathname}${url.search}`

t.test('code + PKCE end to end: the same answer as a password login, then refresh as usual', async (t) => {
  const { idp, ctx, logs } = await setup(t)
  idp.loginAs = 'alice'
  idp.claims.set('alice', { preferred_username: 'Alice', name: 'Alice Example', roles: ['gateway-user'] })

  const res = await ctx.app.inject({ method: 'GET', url: '/api/users/sso/warehouse/login' })
  t.equal(res.statusCode, 302)
  t.equal(res.headers['cache-control'], 'no-store')
  const authorization = new URL(res.headers.location as string)
  t.equal(`${authorization.origin}${authorization.pathname}`, `${idp.issuer}/auth`, 'to the provider\'s authorization endpoint (discovered; issuer with a path)')
  const q = authorization.searchParams
  t.equal(q.get('response_type'), 'code')
  t.equal(q.get('client_id'), BROWSER_CLIENT)
  t.equal(q.get('redirect_uri'), REDIRECT)
  t.equal(q.get('code_challenge_method'), 'S256')
  t.match(q.get('code_challenge'), /^[\w-]{43}$/)
  t.match(q.get('state'), /^[\w-]{20,}$/)
  t.match(q.get('nonce'), /^[\w-]{20,}$/)
  t.equal(q.get('scope'), 'openid profile email')

  const callback = await browserLogin(authorization.href, REDIRECT)
  t.equal(callback.searchParams.get('state'), q.get('state'))
  t.ok(callback.searchParams.get('code'))
  const done = await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
  t.equal(done.statusCode, 200, done.body)
  t.equal(done.headers['cache-control'], 'no-store')
  const body = done.json()
  t.same(Object.keys(body).sort(), ['accessToken', 'expiresIn', 'login', 'refreshToken'])
  t.equal(body.login, true)
  t.equal(body.expiresIn, 900)
  t.equal(decode(body.accessToken).typ, 'access', 'the gateway\'s own tokens')

  const me = await ctx.app.inject({ method: 'GET', url: `/api/users/${decode(body.accessToken).sub}`, headers: ctx.auth(body.accessToken) })
  t.equal(me.statusCode, 200)
  t.match(me.json(), { username: 'alice', displayName: 'Alice Example', type: 'user', source: 'sso', enabled: true })
  t.type(me.json().lastLoginAt, 'string')
  const refreshed = await ctx.app.inject({ method: 'POST', url: '/api/users/refresh', headers: ctx.auth(body.refreshToken) })
  t.equal(refreshed.statusCode, 200, 'refresh works unchanged')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(refreshed.json().accessToken) })).statusCode, 200)

  // Replayed: the state was used up; nothing changes
  const before = (await ctx.app.inject({ method: 'GET', url: '/api/users?count=true', headers: ctx.auth(ctx.adminToken) })).json().meta.total
  const replay = await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
  t.equal(replay.statusCode, 400)
  t.equal(replay.json().code, 'SSO_STATE_INVALID')
  t.match(replay.json().message, /unknown, used or expired/)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users?count=true', headers: ctx.auth(ctx.adminToken) })).json().meta.total, before)

  // A second login of the same person: the same row
  const second = await start(ctx, idp)
  const again = await ctx.app.inject({ method: 'GET', url: callbackOf(second.callback) })
  t.equal(again.statusCode, 200)
  t.equal(decode(again.json().accessToken).sub, decode(body.accessToken).sub, 'one identity, one row')

  const logged = logs.join('\n')
  t.notMatch(logged, new RegExp(callback.searchParams.get('code')!), 'the code is not logged')
  t.match(logged, /"url":"\/api\/users\/sso\/warehouse\/callback\?\[redacted\]"/)
})

t.test('forged, crossed and expired callbacks are a 400 that changes nothing', async (t) => {
  // the short lifetime on a gateway of its own: two browser logins on a loaded machine outlast 300 ms
  const { idp, ctx } = await setup(t)
  idp.claims.set('alice', { preferred_username: 'alice', roles: ['gateway-user'] })
  const count = async () => (await ctx.app.inject({ method: 'GET', url: '/api/users?count=true', headers: ctx.auth(ctx.adminToken) })).json().meta.total
  const users = await count()

  const forged = await ctx.app.inject({ method: 'GET', url: '/api/users/sso/warehouse/callback?code=abc&state=made-up' })
  t.equal(forged.statusCode, 400)
  t.equal(forged.json().code, 'SSO_STATE_INVALID')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users/sso/warehouse/callback' })).json().code, 'SSO_STATE_INVALID', 'no state at all')

  // A real state with another code: the provider refuses the code, and the state is gone
  const one = await start(ctx, idp)
  const other = await start(ctx, idp)
  const crossed = new URL(one.callback)
  crossed.searchParams.set('code', other.callback.searchParams.get('code')!)
  const refused = await ctx.app.inject({ method: 'GET', url: callbackOf(crossed) })
  t.equal(refused.statusCode, 400, 'a code issued for another login (its PKCE verifier does not match)')
  t.equal(refused.json().code, 'SSO_LOGIN_FAILED')
  t.equal((await ctx.app.inject({ method: 'GET', url: callbackOf(one.callback) })).json().code, 'SSO_STATE_INVALID', 'the state was used by the failed attempt')
  // The code's own login still completes: without that login's PKCE verifier the crossed attempt got nothing.
  t.equal((await ctx.app.inject({ method: 'GET', url: callbackOf(other.callback) })).statusCode, 200, 'the rightful callback')

  // The provider says no
  const third = await start(ctx, idp)
  const denied = await ctx.app.inject({ method: 'GET', url: `/api/users/sso/warehouse/callback?error=access_denied&state=${third.callback.searchParams.get('state')}&iss=${encodeURIComponent(idp.issuer)}` })
  t.equal(denied.statusCode, 400)
  t.match(denied.json().message, /refused the login \(access_denied\)/)

  // Too late
  const short = await setup(t, { stateTtlMs: 300 })
  short.idp.claims.set('alice', { preferred_username: 'alice', roles: ['gateway-user'] })
  const late = await start(short.ctx, short.idp)
  await new Promise((resolve) => setTimeout(resolve, 350))
  t.equal((await short.ctx.app.inject({ method: 'GET', url: callbackOf(late.callback) })).json().code, 'SSO_STATE_INVALID', 'an expired state')
  t.equal(await count(), users + 1, 'no user was created by any of the refused ones (one by the rightful callback)')
})

t.test('a flood of started logins from many addresses, each within its rate limit, drops its own pending logins, not a person\'s', async (t) => {
  const { idp, ctx } = await setup(t, { maxPending: 20 })
  idp.loginAs = 'alice'
  idp.claims.set('alice', { preferred_username: 'alice', roles: ['gateway-user'] })
  // the person's browser starts its login first
  const res = await ctx.app.inject({ method: 'GET', url: '/api/users/sso/warehouse/login', remoteAddress: '192.168.1.50' })
  t.equal(res.statusCode, 302)
  // then 60 logins that never come back, 5 from each of 12 addresses (an IPv6 client's /64 counts as one)
  for (let i = 0; i < 60; i++) {
    const flood = await ctx.app.inject({ method: 'GET', url: '/api/users/sso/warehouse/login', remoteAddress: `2001:db8:0:${i % 12}::${i}` })
    t.equal(flood.statusCode, 302)
  }
  // before: the oldest pending login was dropped first, the person's; now the address holding the most loses one
  const callback = await browserLogin(res.headers.location as string, REDIRECT)
  const done = await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
  t.equal(done.statusCode, 200, `the person's login completes: ${done.body}`)
})

t.test('browser login: claims, licence and disabled users as for tokens', async (t) => {
  const { idp, ctx } = await setup(t, { licence: 1 })
  const admin = ctx.auth(ctx.adminToken)
  const login = async (account: string) => {
    idp.loginAs = account
    const { callback } = await start(ctx, idp)
    return await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
  }
  idp.claims.set('nobody', { preferred_username: 'nobody', roles: ['visitor'] })
  const unmapped = await login('nobody')
  t.equal(unmapped.statusCode, 403)
  t.match(unmapped.json().message, /'roles' claim/)
  idp.claims.set('bob', { preferred_username: 'bob', roles: ['gateway-user'] })
  idp.claims.set('carol', { preferred_username: 'carol', roles: ['gateway-user'] })
  t.equal((await login('bob')).statusCode, 200)
  const over = await login('carol')
  t.equal(over.statusCode, 403)
  t.equal(over.json().code, 'LICENCE_LIMIT')
  const bob = (await ctx.app.inject({ method: 'GET', url: '/api/users?username=bob', headers: admin })).json().data[0]
  await ctx.app.inject({ method: 'PATCH', url: `/api/users/${bob.id}`, headers: admin, payload: { enabled: false } })
  const disabled = await login('bob')
  t.equal(disabled.statusCode, 403, 'not "Invalid username or password": the person typed none')
  t.same(disabled.json(), { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: "The gateway account 'bob' is disabled; an administrator can enable it again" })
})

t.test('a browser login of a row disabled on another instance a moment before is the 403, not a 200 with tokens of the copy cached here', async (t) => {
  // a cache time no test waits out: the 403 comes from the row the login stamps, not from expiry
  const { idp, ctx } = await setup(t, { revocationCacheMs: 60000 })
  const login = async () => {
    idp.loginAs = 'bob'
    const { callback } = await start(ctx, idp)
    return await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
  }
  idp.claims.set('bob', { preferred_username: 'bob', roles: ['gateway-user'] })
  t.equal((await login()).statusCode, 200, 'the row is created')
  const tokens = await login()
  t.equal(tokens.statusCode, 200, 'and now cached')
  const bob = (await ctx.app.inject({ method: 'GET', url: '/api/users?username=bob', headers: ctx.auth(ctx.adminToken) })).json().data[0]
  // another instance disables it (its version moves): this instance's copy still shows it enabled
  const ver = JSON.parse(Buffer.from(tokens.json().accessToken.split('.')[1], 'base64url').toString()).ver as number
  await ctx.app.repos.users.update(bob.id, { enabled: false, tokenVersion: ver + 1 })
  const disabled = await login()
  t.equal(disabled.statusCode, 403)
  t.same(disabled.json(), { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: "The gateway account 'bob' is disabled; an administrator can enable it again" })
})

t.test('unknown providers, providers without browser login, an unreachable provider', async (t) => {
  const { idp, ctx, logs } = await setup(t)
  const unknown = await ctx.app.inject({ method: 'GET', url: '/api/users/sso/nope/login' })
  t.equal(unknown.statusCode, 404)
  t.match(unknown.json().message, /No identity provider 'nope'/)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users/sso/tokens-only/login' })).statusCode, 404, 'configured for tokens only')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users/sso/tokens-only/callback?state=x' })).statusCode, 404)
  await idp.stop()
  const down = await ctx.app.inject({ method: 'GET', url: '/api/users/sso/warehouse/login' })
  t.equal(down.statusCode, 503)
  t.equal(down.json().code, 'SSO_UNAVAILABLE')
  t.ok(down.headers['retry-after'])
  t.match(logs.join('\n'), /identity provider unreachable for a browser login/)
})

t.test('a callback that fails the checks: the log says which check, for the administrator', async (t) => {
  const { idp, ctx, logs } = await setup(t)
  idp.claims.set('alice', { preferred_username: 'alice', roles: ['gateway-user'] })
  const { callback } = await start(ctx, idp)
  const mixedUp = new URL(callback)
  mixedUp.searchParams.set('iss', 'https://another-provider.example.com')
  const res = await ctx.app.inject({ method: 'GET', url: callbackOf(mixedUp) })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'SSO_LOGIN_FAILED')
  const line = logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'browser login response refused')
  t.match(line?.reason, /OAUTH_INVALID_RESPONSE.*"iss"/, 'the reason names the failed check, not only "invalid response encountered"')
  t.notMatch(logs.join('\n'), /code=|another-provider.example.com\/.*state/, 'no code or state in the log')
})

t.test('a client secret the provider refuses (wrong, expired) is a fault of the installation: 503 and a warning, not the person\'s 400', async (t) => {
  const wrong = 'an-expired-client-secret-0123456789'
  const { idp, ctx, logs } = await setup(t, { clientSecret: wrong })
  idp.claims.set('alice', { preferred_username: 'alice', roles: ['gateway-user'] })
  const { callback } = await start(ctx, idp)
  const res = await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
  t.equal(res.statusCode, 503, res.body)
  t.same(res.json(), { statusCode: 503, code: 'SSO_UNAVAILABLE', error: 'Service Unavailable', message: "The identity provider 'warehouse' refused the gateway's client; the administrator must check its client id and client secret" })
  t.equal(res.headers['retry-after'], '10')
  const warning = logs.map((line) => JSON.parse(line)).find((line) => line.msg?.includes('refused the gateway\'s client'))
  t.match(warning, { level: 40, provider: 'warehouse', error: 'invalid_client' }, 'a warning names the provider and the error')
  t.notMatch(logs.join('\n'), new RegExp(`${wrong}|code=`), 'neither the secret nor the code in the log')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users?username=alice', headers: ctx.auth(ctx.adminToken) })).json().data.length, 0, 'no user row')
})

t.test('a client refused in other words: Auth0\'s 401 access_denied, a 401 with a WWW-Authenticate challenge; a 400 invalid_grant stays the person\'s', async (t) => {
  const { idp, ctx, logs } = await setup(t)
  idp.claims.set('alice', { preferred_username: 'alice', roles: ['gateway-user'] })
  const cases: Array<[string, NonNullable<typeof idp.tokenAnswer>, number, string]> = [
    // Auth0 answers a wrong client secret at /oauth/token so
    ['Auth0: 401 access_denied "Unauthorized"', { status: 401, body: { error: 'access_denied', error_description: 'Unauthorized' } }, 503, 'SSO_UNAVAILABLE'],
    // RFC 6749 5.2: a server that takes Basic must add WWW-Authenticate to its 401; some always do
    ['401 invalid_client with WWW-Authenticate: Basic', { status: 401, body: { error: 'invalid_client' }, headers: { 'www-authenticate': 'Basic realm="warehouse"' } }, 503, 'SSO_UNAVAILABLE'],
    ['400 invalid_grant: the code, not the client', { status: 400, body: { error: 'invalid_grant', error_description: 'grant request is invalid' } }, 400, 'SSO_LOGIN_FAILED']
  ]
  for (const [what, answer, status, code] of cases) {
    idp.tokenAnswer = undefined
    const { callback } = await start(ctx, idp)
    idp.tokenAnswer = answer
    const res = await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
    t.equal(res.statusCode, status, `${what}: ${res.body}`)
    t.equal(res.json().code, code, what)
    if (status === 503) t.match(res.json().message, /refused the gateway's client/, what)
  }
  t.equal(logs.filter((line) => line.includes('refused the gateway\'s client at its token endpoint')).length, 2, 'a warning for each client refusal')
})

t.test('the provider goes away between login and callback', async (t) => {
  const { idp, ctx } = await setup(t)
  idp.claims.set('alice', { preferred_username: 'alice', roles: ['gateway-user'] })
  const { callback } = await start(ctx, idp)
  idp.mode = 'hang'
  const started = Date.now()
  const res = await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
  t.equal(res.statusCode, 503, 'the token endpoint does not answer')
  t.ok(Date.now() - started < 2500, `within the timeout (${Date.now() - started} ms)`)
  idp.mode = 'up'
  await idp.stop()
  const refused = await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
  t.equal(refused.statusCode, 503, 'the provider stopped: the same callback again is still a 503, not a used state')
  await idp.start()
  const again = await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
  t.equal(again.statusCode, 200, `the provider back: the same callback completes the login, as the 503's Retry-After promised (${again.body})`)
  t.equal((await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })).json().code, 'SSO_STATE_INVALID', 'and only once')
})

t.test('a token endpoint that answers a server error (the provider overloaded or restarting, a proxy before it): 503, and the same callback completes the login once it is back', async (t) => {
  const { idp, ctx, logs } = await setup(t)
  idp.claims.set('alice', { preferred_username: 'alice', roles: ['gateway-user'] })
  const cases: Array<[string, NonNullable<typeof idp.tokenAnswer>]> = [
    ['500 server_error', { status: 500, body: { error: 'server_error' } }],
    ['503 temporarily_unavailable', { status: 503, body: { error: 'temporarily_unavailable' } }],
    ['a proxy\'s 502, no OAuth error', { status: 502, body: { message: 'bad gateway' } }]
  ]
  for (const [what, answer] of cases) {
    idp.tokenAnswer = undefined
    const { callback } = await start(ctx, idp)
    idp.tokenAnswer = answer
    const res = await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
    t.equal(res.statusCode, 503, `${what}: ${res.body}`)
    t.equal(res.json().code, 'SSO_UNAVAILABLE', what)
    t.equal(res.headers['retry-after'], '10', what)
    idp.tokenAnswer = undefined
    const again = await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
    t.equal(again.statusCode, 200, `${what}: the provider back, the same callback completes the login (${again.body})`)
  }
  t.equal(logs.filter((line) => line.includes('identity provider unreachable for a browser login')).length, 3, 'a warning for each')
  t.notMatch(logs.join('\n'), /code=/, 'no code in the log')
})

t.test('the browser login\'s ID token is checked with the keys access tokens are: several keys under its kid, or a key set the provider cannot give', async (t) => {
  t.test('one kid given to two keys: the one whose signature verifies is used', async (t) => {
    const { idp, ctx } = await setup(t)
    idp.claims.set('alice', { preferred_username: 'alice', roles: ['gateway-user'] })
    const { publicKey } = await generateKeyPair('RS256', { extractable: true })
    const twin = { ...await exportJWK(publicKey), kid: idp.keys[0].kid, alg: 'RS256', use: 'sig' }
    idp.jwksAnswer = { keys: [twin, idp.keys[0].publicJwk] }
    const { callback } = await start(ctx, idp)
    const res = await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
    t.equal(res.statusCode, 200, res.body)
    // and still checked: signed with a key the provider does not publish, it is refused
    const other = await setup(t)
    other.idp.claims.set('alice', { preferred_username: 'alice', roles: ['gateway-user'] })
    other.idp.jwksAnswer = { keys: [{ ...twin, kid: other.idp.keys[0].kid }] }
    const forged = await start(other.ctx, other.idp)
    const refused = await other.ctx.app.inject({ method: 'GET', url: callbackOf(forged.callback) })
    t.equal(refused.statusCode, 400, refused.body)
    t.equal(refused.json().code, 'SSO_LOGIN_FAILED')
    t.match(other.logs.map((line) => JSON.parse(line)).find((line) => line.msg === 'browser login response refused'), { reason: /signature verification failed/ })
  })
  t.test('a key set without keys (a provider restarted before loading them): 503, not the person\'s 400', async (t) => {
    const { idp, ctx, logs } = await setup(t)
    idp.claims.set('alice', { preferred_username: 'alice', roles: ['gateway-user'] })
    idp.jwksAnswer = { keys: [] }
    const { callback } = await start(ctx, idp)
    const res = await ctx.app.inject({ method: 'GET', url: callbackOf(callback) })
    t.equal(res.statusCode, 503, res.body)
    t.equal(res.json().code, 'SSO_UNAVAILABLE')
    t.equal(res.headers['retry-after'], '10')
    t.match(logs.map((line) => JSON.parse(line)).find((line) => line.msg === 'identity provider unreachable for a browser login'), { reason: /key set .* holds no keys/ })
  })
})
