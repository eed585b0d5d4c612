// Identity-provider access tokens as Bearer tokens, against a real OpenID provider (oidc-provider) on loopback.
import { createHmac } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { generateKeyPair, SignJWT } from 'jose'
import t, { type Test } from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { ADMIN_PASSWORD, build, TEST_ARGON2, type TestContext } from '../helpers/build.js'
import { createMandantUsers, MANDANT_USERS } from '../helpers/legacy-fixture.js'
import { createPasswords } from '../../src/auth/passwords.js'
import type { TableMappingConfig } from '../../schemas/config.js'
import type { Database } from '../../src/db/types.js'
import { until } from '../helpers/wait.js'
import { AUDIENCE, REALM_PATH, startProvider, type TestKey, type TestProvider } from '../helpers/oidc.js'
import type { Config } from '../../src/config.js'
import { createTableStatements } from '../../src/db/init.js'
import { referenceMappings, users as usersDef } from '../../src/db/resources.js'

// some 45 s alone (key rotations wait out their cooldowns), 156 s once beside three reviewers' npm ci:
// past .taprc's 120 s for a file, which cut it off midway, a failure of the machine, not of the tests
t.setTimeout(300_000)

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const decode = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString())
const header = (token: string) => JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString())
const INVALID = { statusCode: 401, code: 'TOKEN_INVALID', error: 'Unauthorized', message: 'The token is invalid' }
/** the provider could not be asked: a fault, tried again later, not a token to replace */
const UNAVAILABLE = { statusCode: 503, code: 'SSO_UNAVAILABLE', error: 'Service Unavailable', message: "The identity provider 'warehouse' cannot be reached; try again shortly" }
const TYPE_MAP = { 'gateway-admin': 'admin', 'gateway-user': 'user', 'gateway-app': 'application' } as const

type SsoOverrides = Partial<Config['auth']['sso'][number]>

async function setup (t: Test, options: { sso?: SsoOverrides | ((idp: TestProvider) => SsoOverrides), licence?: number, timing?: { jwksCooldownMs?: number, retryMs?: number, jwksMaxAgeMs?: number }, revocationCacheMs?: number, users?: TableMappingConfig, prepare?: (db: Database) => Promise<void> } = {}): Promise<{ idp: TestProvider, ctx: TestContext, bearer: (token: string) => { authorization: string }, logs: string[] }> {
  const idp = await startProvider()
  t.teardown(() => idp.close())
  const logs: string[] = []
  const ctx = await build(t, {
    auth: {
      sso: [{ id: 'warehouse', issuer: idp.issuer, audience: AUDIENCE, typeMap: TYPE_MAP, timeoutMs: 5000, ...(typeof options.sso === 'function' ? options.sso(idp) : options.sso) } as Config['auth']['sso'][number]],
      revocationCacheMs: options.revocationCacheMs ?? 0
    },
    licence: { logins: options.licence ?? 10 },
    logging: { level: 'info' },
    ...(options.users !== undefined && { mapping: { users: options.users } })
  }, options.prepare, { timing: options.timing, logStream: { write: (line: string) => { logs.push(line) } } })
  return { idp, ctx, bearer: (token) => ({ authorization: `Bearer ${token}` }), logs }
}

/** A provider, and a gateway for it whose user table is the reference one's CREATE TABLE as `rewrite` changes it */
async function withOwnUserTable (t: Test, rewrite: (text: string, dialect: Database['dialect']) => string): Promise<{ idp: TestProvider, ctx: TestContext }> {
  const idp = await startProvider()
  t.teardown(() => idp.close())
  const ctx = await build(t, {
    auth: { sso: [{ id: 'warehouse', issuer: idp.issuer, audience: AUDIENCE, typeMap: TYPE_MAP, timeoutMs: 5000 } as unknown as Config['auth']['sso'][number]], revocationCacheMs: 0 }
  }, async (db) => {
    for (const text of createTableStatements(db.dialect, usersDef, referenceMappings.users)) await db.execute({ text: rewrite(text, db.dialect), params: [] })
  })
  return { idp, ctx }
}

t.test('a client-credentials token from the provider works on every kind of access route', async (t) => {
  const { idp, ctx, bearer } = await setup(t)
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'ERP-System' })
  idp.claims.set('scanner', { roles: ['gateway-user'], preferred_username: 'scanner' })
  idp.claims.set('erp-2', { roles: ['gateway-admin', 'gateway-user'], preferred_username: 'it-admin' })
  const token = await idp.clientCredentials('erp')
  t.equal(decode(token).iss, `http://127.0.0.1:${idp.port}${REALM_PATH}`, 'the issuer has a path')
  t.equal(decode(token).aud, AUDIENCE)
  t.equal(header(token).alg, 'RS256')

  const list = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })
  t.equal(list.statusCode, 200, 'materials read')
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers: bearer(token), payload: { materialNumber: 'M-SSO', name: 'Bolt' } })
  t.equal(created.statusCode, 201, 'materials write')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/stations', headers: bearer(token) })).statusCode, 200, 'stations read')
  t.equal((await ctx.app.inject({ method: 'POST', url: '/api/events/ticket', headers: bearer(token) })).statusCode, 200, 'event stream ticket')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users', headers: bearer(token) })).statusCode, 403, 'an application may not list users')

  const users = (await ctx.app.inject({ method: 'GET', url: '/api/users', headers: ctx.auth(ctx.adminToken) })).json().data
  const erp = users.find((u: { username: string }) => u.username === 'erp-system')
  t.match(erp, { type: 'application', source: 'sso', enabled: true }, 'the first token created the user row, username lower-cased')
  t.equal(users.find((u: { username: string }) => u.username === 'admin').source, 'local')
  const own = await ctx.app.inject({ method: 'GET', url: `/api/users/${erp.id}`, headers: bearer(token) })
  t.equal(own.statusCode, 200, 'own user record')
  t.equal(own.json().username, 'erp-system')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users/1', headers: bearer(token) })).statusCode, 403)

  const again = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await idp.clientCredentials('erp')) })
  t.equal(again.statusCode, 200, 'a second token of the same identity')
  const count = (await ctx.app.inject({ method: 'GET', url: '/api/users?count=true', headers: ctx.auth(ctx.adminToken) })).json().meta.total
  t.equal(count, 2, 'no second row for the same identity')

  const user = await idp.clientCredentials('scanner')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(user) })).statusCode, 200, 'a user-type identity')
  const admin = await idp.clientCredentials('erp-2')
  const asAdmin = await ctx.app.inject({ method: 'GET', url: '/api/users', headers: bearer(admin) })
  t.equal(asAdmin.statusCode, 200, 'the most privileged mapped value wins: admin routes')
  t.match(asAdmin.json().data.find((u: { username: string }) => u.username === 'it-admin'), { type: 'admin', source: 'sso' })
})

t.test('tokens that are not right are refused with 401', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t)
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const real = await idp.clientCredentials('erp')
  const good = decode(real)
  const now = Math.floor(Date.now() / 1000)
  const call = async (token: string) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })
  t.equal((await call(real)).statusCode, 200, 'the real one works')

  const expired = await call(await idp.sign({ ...good, iat: now - 600, exp: now - 120 }))
  t.equal(expired.statusCode, 401)
  t.equal(expired.json().code, 'TOKEN_EXPIRED', 'a well-signed expired token says so')
  t.equal((await call(await idp.sign({ ...good, iat: now - 600, exp: now - 1 }))).json().code, 'TOKEN_EXPIRED', 'no skew on exp')

  const { kid } = idp.keys[0]
  const publicPem = JSON.stringify(idp.keys[0].publicJwk)
  const hs = (payload: object, secret: string) => {
    const body = `${b64({ alg: 'HS256', kid, typ: 'JWT' })}.${b64(payload)}`
    return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`
  }
  const [h, p] = real.split('.')
  const cases: Record<string, string> = {
    'nbf 2 minutes ahead': await idp.sign({ ...good, nbf: now + 120 }),
    'iat 2 minutes ahead': await idp.sign({ ...good, iat: now + 120 }),
    'no exp': await idp.sign({ ...good, exp: undefined }),
    'wrong aud': await idp.sign({ ...good, aud: 'https://other.test/api' }),
    'wrong iss (another realm of the same server)': await idp.sign({ ...good, iss: `http://127.0.0.1:${idp.port}/realms/other` }),
    'no sub': await idp.sign({ ...good, sub: undefined }),
    'unknown kid': await idp.sign(good, { header: { kid: 'no-such-key' } }),
    'HS256 with the public key as secret': hs(good, publicPem),
    'HS256 with the modulus as secret': hs(good, idp.keys[0].publicJwk.n!),
    'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${p}.`,
    'alg none with the signature kept': `${b64({ alg: 'none', kid })}.${p}.${real.split('.')[2]}`,
    'tampered payload': `${h}.${b64({ ...good, roles: ['gateway-admin'] })}.${real.split('.')[2]}`,
    'signed by a key the provider never had': await (async () => {
      const other = await startProvider()
      t.teardown(() => other.close())
      return await other.sign(good, { header: { kid } })
    })()
  }
  for (const [name, token] of Object.entries(cases)) {
    const res = await call(token)
    t.equal(res.statusCode, 401, name)
    // a token that passed every other check learns which claim the gateway needs (subjectClaim, default sub)
    t.same(res.json(), name === 'no sub' ? { ...INVALID, message: "The token has no 'sub' claim, which names its user at the gateway (auth.sso subjectClaim of the identity provider 'warehouse')" } : INVALID, `${name}: body`)
  }
  t.ok(await idp.sign({ ...good, nbf: now + 30 }).then(call).then((r) => r.statusCode === 200), 'nbf 30 s ahead is within the skew')
  t.match(logs.join('\n'), /identity provider token refused/, 'the log says a provider token was refused')
  t.match(logs.join('\n'), /unexpected \\"aud\\" claim value/, '… and why')
  t.match(logs.join('\n'), /its aud is \\"https:\/\/other\.test\/api\\", the configured audience \\"https:\/\/gateway\.test\/api\\" \(auth\.sso audience\)/, '… with the token\'s aud and the configured one: a mistyped audience shows at once')
  const algorithms = logs.map((l) => JSON.parse(l)).filter((entry) => /its alg is none a provider may sign with/.test(entry.msg))
  t.same(algorithms.map((entry) => [entry.provider, entry.alg]), [['warehouse', 'HS256'], ['warehouse', 'HS256'], ['warehouse', 'none'], ['warehouse', 'none']], 'a token naming the provider\'s issuer but signed with a secret (a provider without a signing key) says why')
  t.notMatch(logs.join('\n'), /eyJ[\w-]+\.eyJ/, 'no token in the log')
})

t.test('a token from an issuer no entry names (Entra ID\'s version 1 tokens: https://sts.windows.net/<tenant>/): 401, and the log names its iss', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t)
  const now = Math.floor(Date.now() / 1000)
  const v1 = await idp.sign({ iss: 'https://sts.windows.net/0b1c2d3e/', aud: AUDIENCE, sub: 'erp', appid: 'erp', iat: now, exp: now + 300, roles: ['gateway-app'] })
  const res = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(v1) })
  t.same(res.json(), INVALID, 'refused, with the body every invalid token gets')
  const line = logs.map((l) => JSON.parse(l)).find((entry) => /its iss is no configured issuer/.test(entry.msg))
  t.match(line, { level: 30, iss: 'https://sts.windows.net/0b1c2d3e/', issuers: [idp.issuer] }, 'the log says which issuer the token has and which are configured')
  t.notMatch(logs.join('\n'), /eyJ[\w-]+\.eyJ/, 'no token in the log')
  const before = logs.length
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: 'Bearer not.a.token' } })).statusCode, 401)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(ctx.adminToken.slice(0, -2)) })).statusCode, 401)
  t.notMatch(logs.slice(before).join('\n'), /no configured issuer/, 'not for tokens that are no provider\'s (malformed, the gateway\'s own HS256)')
})

t.test('an ID token is not an access token, even where audience lists the client it was issued to', async (t) => {
  // audience names the gateway's client, as the README's Entra ID example does (and Keycloak's, where the client is the audience)
  const { idp, ctx, bearer, logs } = await setup(t, { sso: { audience: [AUDIENCE, 'gateway-web'] } })
  const now = Math.floor(Date.now() / 1000)
  const person = { iss: idp.issuer, sub: 'alice', iat: now, exp: now + 300, roles: ['gateway-user'], preferred_username: 'alice' }
  const call = async (token: string) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })
  const refused: Record<string, Record<string, unknown>> = {
    'the ID token of a browser login (its nonce, aud the client)': { ...person, aud: 'gateway-web', nonce: 'n-0S6_WzA2Mj' },
    'an ID token with at_hash and auth_time as well': { ...person, aud: 'gateway-web', nonce: 'n-0S6_WzA2Mj', at_hash: 'HK6E_P6Dh8Y93mRNtsDB1Q', auth_time: now - 5 },
    'Keycloak\'s ID token (typ "ID", with azp)': { ...person, aud: 'gateway-web', typ: 'ID', azp: 'gateway-web' },
    'an ID token whose aud is the API': { ...person, aud: AUDIENCE, nonce: 'n-0S6_WzA2Mj' },
    // OpenAM and ForgeRock AM (PingAM) name the kind in tokenName; their ID token carries azp
    'OpenAM\'s ID token (tokenName "id_token", with azp)': { ...person, aud: 'gateway-web', azp: 'gateway-web', nonce: 'n-0S6_WzA2Mj', at_hash: 'zjr2ybLyWiruBaACZVL-dQ', tokenName: 'id_token', tokenType: 'JWTToken', realm: '/alpha' }
  }
  for (const [name, payload] of Object.entries(refused)) {
    const res = await call(await idp.sign(payload))
    t.equal(res.statusCode, 401, name)
    t.same(res.json(), INVALID, `${name}: the same body as every invalid token`)
  }
  t.match(logs.join('\n'), /the token is an ID token, not an access token/, 'the log says why')
  const accepted: Record<string, Record<string, unknown>> = {
    'an access token with aud the client (Entra ID v2: azp)': { ...person, aud: 'gateway-web', azp: 'erp-client', scp: 'access' },
    'an older Keycloak\'s access token with the login\'s nonce (typ "Bearer")': { ...person, aud: AUDIENCE, typ: 'Bearer', azp: 'spa', nonce: 'n-0S6_WzA2Mj' },
    'Authentik\'s access token: the ID token\'s claims and azp': { ...person, aud: 'gateway-web', nonce: 'n-0S6_WzA2Mj', azp: 'gateway-web' },
    'an RFC 9068 access token (client_id)': { ...person, aud: AUDIENCE, client_id: 'spa' },
    // OpenAM and ForgeRock AM before client_id: the login's nonce, aud the client, no claim naming it
    'OpenAM\'s stateless access token of a login with a nonce (tokenName "access_token", token_type "Bearer")': { ...person, aud: 'gateway-web', nonce: 'n-0S6_WzA2Mj', tokenName: 'access_token', token_type: 'Bearer', grant_type: 'authorization_code', scope: ['openid', 'profile'], realm: '/alpha' },
    'an access token with the login\'s nonce and its scope, but no claim naming the client': { ...person, aud: 'gateway-web', nonce: 'n-0S6_WzA2Mj', scope: 'openid gateway' },
    'the same with Entra ID\'s and Okta\'s scp': { ...person, aud: 'gateway-web', nonce: 'n-0S6_WzA2Mj', scp: ['gateway.access'] }
  }
  for (const [name, payload] of Object.entries(accepted)) t.equal((await call(await idp.sign(payload))).statusCode, 200, name)
})

t.test('gateway tokens and provider tokens stay apart', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t)
  const handedToProvider = () => logs.filter((line) => JSON.parse(line).msg === 'identity provider token refused').length
  const gateway = decode(ctx.adminToken)
  // A provider token that copies the gateway's own claims: sub 1 is the admin's id here.
  idp.claims.set('erp', { roles: ['gateway-user'], preferred_username: 'copycat' })
  const copy = await idp.sign({ ...gateway, iss: idp.issuer, aud: 'picking-gateway:access' })
  const refused = await ctx.app.inject({ method: 'GET', url: '/api/users', headers: bearer(copy) })
  t.equal(refused.statusCode, 401, 'the gateway\'s audience is not the provider\'s')
  t.equal(handedToProvider(), 1, 'refused by the provider check')
  const copied = await idp.sign({ ...gateway, iss: idp.issuer, aud: AUDIENCE, roles: ['gateway-user'], preferred_username: 'copycat' })
  const asUser = await ctx.app.inject({ method: 'GET', url: '/api/users/1', headers: bearer(copied) })
  t.equal(asUser.statusCode, 403, 'sub "1" of the provider is not user 1 of the gateway')
  const row = (await ctx.app.inject({ method: 'GET', url: '/api/users?username=copycat', headers: ctx.auth(ctx.adminToken) })).json().data[0]
  t.match(row, { source: 'sso', type: 'user' })
  t.not(row.id, 1)

  // The gateway's token with the provider's issuer: still HS256, so never the provider's; and not the gateway's either.
  const [, , sig] = ctx.adminToken.split('.')
  const withIss = `${ctx.adminToken.split('.')[0]}.${b64({ ...gateway, iss: idp.issuer })}.${sig}`
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users', headers: bearer(withIss) })).statusCode, 401)
  t.equal(handedToProvider(), 1, 'an HS256 token naming the provider\'s issuer is never handed to the provider')
  t.ok(logs.some((line) => /"provider":"warehouse","alg":"HS256".*its alg is none a provider may sign with/.test(line)), 'the log says why it is refused')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users', headers: ctx.auth(ctx.adminToken) })).statusCode, 200, 'the gateway\'s own token still works')
})

t.test('provider tokens are refused at refresh and application-token', async (t) => {
  const { idp, ctx, bearer } = await setup(t)
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const token = await idp.clientCredentials('erp')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })).statusCode, 200)
  for (const url of ['/api/users/refresh', '/api/users/application-token']) {
    for (const method of ['GET', 'POST'] as const) {
      const res = await ctx.app.inject({ method, url, headers: bearer(token) })
      t.equal(res.statusCode, 401, `${method} ${url}`)
      t.same(res.json(), INVALID)
    }
  }
})

t.test('claims: type mapping, missing claim, username fallbacks, a local account\'s name', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t)
  const users = async () => (await ctx.app.inject({ method: 'GET', url: '/api/users?limit=100', headers: ctx.auth(ctx.adminToken) })).json().data as Array<{ username: string, type: string, source: string }>
  const call = async (client: string) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await idp.clientCredentials(client)) })

  idp.claims.set('erp', { roles: ['warehouse-visitor'], preferred_username: 'visitor' })
  const unmapped = await call('erp')
  t.equal(unmapped.statusCode, 403)
  t.equal(unmapped.json().code, 'FORBIDDEN')
  t.match(unmapped.json().message, /'roles' claim maps to a user type/, 'the message names the claim')
  idp.claims.set('erp', { preferred_username: 'visitor' })
  const missing = await call('erp')
  t.equal(missing.statusCode, 403)
  t.match(missing.json().message, /no 'roles' claim/)
  t.notOk((await users()).some((u) => u.username === 'visitor'), 'no row was created')

  idp.claims.set('erp-2', { roles: 'gateway-user', upn: 'Bob@Example.COM' })
  t.equal((await call('erp-2')).statusCode, 200, 'a single string value, username from upn')
  idp.claims.set('erp-3', { roles: ['gateway-user'], email: 'carol@example.com' })
  t.equal((await call('erp-3')).statusCode, 200, 'username from email')
  idp.claims.set('erp-4', { roles: ['gateway-user'] })
  const nameless = await call('erp-4')
  t.equal(nameless.statusCode, 403)
  t.match(nameless.json().message, /none of the claims 'preferred_username', 'upn', 'email'/)
  const list = await users()
  t.ok(list.some((u) => u.username === 'bob@example.com' && u.source === 'sso'))
  t.ok(list.some((u) => u.username === 'carol@example.com' && u.source === 'sso'))

  await ctx.createUser('user', 'dave')
  idp.claims.set('erp-5', { roles: ['gateway-admin'], preferred_username: 'Dave' })
  const collision = await call('erp-5')
  t.equal(collision.statusCode, 403)
  t.match(collision.json().message, /'dave' is already taken by a local account/)
  t.match((await users()).find((u) => u.username === 'dave'), { type: 'user', source: 'local' }, 'the local account is untouched')
  t.match(logs.join('\n'), /already taken by a local account/, 'and the log warns')

  // source is a filter like any field: every row of each side, through meta.next
  const walk = async (query: string) => {
    const names: string[] = []
    let url: string | undefined = `/api/users?limit=1&${query}`
    while (url !== undefined) {
      const res: LightMyRequestResponse = await ctx.app.inject({ method: 'GET', url, headers: ctx.auth(ctx.adminToken) })
      t.equal(res.statusCode, 200, url)
      for (const u of res.json().data as Array<{ username: string, source: string }>) names.push(`${u.source}:${u.username}`)
      url = res.json().meta.next as string | undefined
    }
    return names.sort()
  }
  const everyone = (await users()).map((u) => `${u.source}:${u.username}`).sort()
  const sso = await walk('source=sso')
  const local = await walk('source=local&sort=-username')
  t.same(sso, everyone.filter((u) => u.startsWith('sso:')))
  t.same(local, everyone.filter((u) => u.startsWith('local:')))
  t.ok(sso.length >= 2 && local.length >= 2, `both sides have rows: ${sso.join(', ')} | ${local.join(', ')}`)
  t.same(await walk('source=sso&source=local'), [], 'repeated, the conditions are ANDed')
  // derived, not stored: filtered by, but not sorted by, and the 400 says so (before: "Unknown sort field 'source'", a field the list shows)
  const sorted = await ctx.app.inject({ method: 'GET', url: '/api/users?sort=-source', headers: ctx.auth(ctx.adminToken) })
  t.equal(sorted.statusCode, 400)
  t.same(sorted.json().message, "'source' cannot be sorted by in 'sort': it is derived from other columns, not stored (filter by it instead: ?source=…)")
  const bad = await ctx.app.inject({ method: 'GET', url: '/api/users?source=SSO', headers: ctx.auth(ctx.adminToken) })
  t.equal(bad.statusCode, 400)
  t.same(bad.json(), { error: 'Bad Request', code: 'BAD_QUERY', message: "Invalid value for 'source': expected sso or local, got 'SSO'", statusCode: 400 })

  idp.claims.set('erp-6', { roles: ['gateway-user'], preferred_username: 'x'.repeat(65) })
  const long = await call('erp-6')
  t.equal(long.statusCode, 403)
  t.match(long.json().message, /longer than 64 characters/)

  idp.claims.set('erp-7', { roles: ['gateway-user'], preferred_username: 'bell\u0007name' })
  const control = await call('erp-7')
  t.equal(control.statusCode, 403, 'a name the API itself would refuse is refused here too')
  t.match(control.json().message, /holds control or invisible characters/)
  t.notOk((await users()).some((u) => u.username.startsWith('bell')), 'and no row was made')
  idp.claims.set('erp-8', { roles: ['gateway-user'], preferred_username: 'ad\u200bmin' })
  const invisible = await call('erp-8')
  t.equal(invisible.statusCode, 403, 'a name that shows as admin')
  t.match(invisible.json().message, /holds control or invisible characters \(U\+200B\)/)
  // beyond the BMP too (a tag character), checked as the API checks it (TypeBox compiled the pattern without the 'u' flag)
  idp.claims.set('erp-9', { roles: ['gateway-user'], preferred_username: 'admin\u{e0001}' })
  const tag = await call('erp-9')
  t.equal(tag.statusCode, 403, 'a name that shows as admin, beyond the BMP')
  t.match(tag.json().message, /holds control or invisible characters \(U\+E0001\)/)
  t.notOk((await users()).some((u) => u.username.startsWith('admin') && u.username !== 'admin'), 'and no row was made')
})

t.test('Entra ID\'s group overage (groups left out, _claim_names pointing to Graph): the 403 says so, and no row', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t, { sso: { typeClaim: 'groups', typeMap: { '62e90394-69f5-4237-9190-012177145e10': 'user' } } })
  const now = Math.floor(Date.now() / 1000)
  // a v2.0 access token of a person in more than 200 groups, as Entra ID shapes it
  const token = await idp.sign({
    iss: idp.issuer, aud: AUDIENCE, sub: 'AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ', oid: '00000000-0000-0000-66f3-3332eca7ea81', tid: '9122040d-6c67-4c5b-b112-36a304b66dad',
    azp: '6e74172b-be56-4843-9ff4-e66a39bb12e3', scp: 'access_as_user', preferred_username: 'big.groups@contoso.com', name: 'Big Groups', ver: '2.0', iat: now, nbf: now, exp: now + 3600,
    _claim_names: { groups: 'src1' },
    _claim_sources: { src1: { endpoint: 'https://graph.windows.net/9122040d-6c67-4c5b-b112-36a304b66dad/users/00000000-0000-0000-66f3-3332eca7ea81/getMemberObjects' } }
  })
  const res = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })
  t.equal(res.statusCode, 403)
  t.match(res.json(), { code: 'FORBIDDEN', message: /no 'groups' claim: the provider left it out and points to a lookup elsewhere instead \(_claim_names; Entra ID does so for a person in more than 200 groups\).*map app roles \('roles'\) instead/ }, 'the message says why the claim is missing and what to map instead')
  t.match(logs.join('\n'), /the provider left it out/, 'the log says so too')
  const users = (await ctx.app.inject({ method: 'GET', url: '/api/users?count=true', headers: ctx.auth(ctx.adminToken) })).json()
  t.equal(users.meta.total, 1, 'no row was created')
  idp.claims.set('erp', { groups: ['62e90394-69f5-4237-9190-012177145e10'], preferred_username: 'erp' })
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await idp.clientCredentials('erp')) })).statusCode, 200, 'a token that carries its groups is mapped as before')
})

t.test('a user table with columns narrower than the API\'s: a long name is cut to fit, a username that does not fit is a 403 that says so', async (t) => {
  const idp = await startProvider()
  t.teardown(() => idp.close())
  const logs: string[] = []
  const ctx = await build(t, {
    auth: { sso: [{ id: 'warehouse', issuer: idp.issuer, audience: AUDIENCE, typeMap: TYPE_MAP, timeoutMs: 5000 } as unknown as Config['auth']['sso'][number]], revocationCacheMs: 0 },
    logging: { level: 'info' }
  }, async (db) => {
    // a picking system's user table: 20 characters for the login, 16 for the name
    for (const text of createTableStatements(db.dialect, usersDef, referenceMappings.users)) {
      await db.execute({ text: text.replace(/("?display_name"?\]?) N?VARCHAR\(\d+\)/i, '$1 VARCHAR(16)').replace(/("?username"?\]?) N?VARCHAR\(\d+\)/i, '$1 VARCHAR(20)'), params: [] })
    }
  }, { logStream: { write: (line: string) => { logs.push(line) } } })
  const call = async (client: string) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${await idp.clientCredentials(client)}` } })
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp', name: 'Warehouse ERP of the north site' })
  t.equal((await call('erp')).statusCode, 200, 'a name longer than its column does not keep the identity out (before: 400 VALIDATION_ERROR on every request)')
  const row = (await ctx.app.inject({ method: 'GET', url: '/api/users?username=erp', headers: ctx.auth(ctx.adminToken) })).json().data[0]
  t.match(row, { source: 'sso', displayName: 'Warehouse ERP of' }, 'the name, cut to the column\'s 16 characters')
  idp.claims.set('scanner', { roles: ['gateway-user'], preferred_username: 'scanner.north@example.com' })
  const long = await call('scanner')
  t.equal(long.statusCode, 403, 'a username longer than its column (but within 64): the 403 of an unusable username, not a 400 for a request that has no body')
  t.same(long.json(), { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: "The username 'scanner.north@example.com' from the identity provider does not fit the user table ('username' must be at most 20 characters long (its database column's limit), got 25); map another claim to the username (auth.sso usernameClaim); no user was created" })
  t.match(logs.join('\n'), /"sub":"scanner".*does not fit the user table/, 'the log warns, naming the subject')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users?count=true', headers: ctx.auth(ctx.adminToken) })).json().meta.total, 2, 'no row for it')
})

t.test('a user table whose name column is NOT NULL DEFAULT \'\': a provider\'s token without a name makes its row with the column\'s default', async (t) => {
  const { idp, ctx } = await withOwnUserTable(t, (text) => text.replace(/("?display_name"?\]?) (N?VARCHAR\(\d+\))/i, "$1 $2 NOT NULL DEFAULT ''"))
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const res = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${await idp.clientCredentials('erp')}` } })
  t.equal(res.statusCode, 200, 'before: the row\'s NULL name was refused, and so was every request of the identity')
  const row = (await ctx.app.inject({ method: 'GET', url: '/api/users?username=erp', headers: ctx.auth(ctx.adminToken) })).json().data[0]
  t.match(row, { source: 'sso', username: 'erp', displayName: '' }, 'the column\'s default')
})

t.test('subjects that differ only in case are two identities with a row each, also where the password column ignores case', async (t) => {
  // SQL Server's usual collations ignore case; on SQLite the column is declared so
  const { idp, ctx } = await withOwnUserTable(t, (text, dialect) => dialect === 'sqlite' ? text.replace(/("?password_hash"?) (VARCHAR\(\d+\))/i, '$1 $2 COLLATE NOCASE') : text)
  idp.claims.set('erp', { roles: ['gateway-user'], preferred_username: 'erp' })
  const base = decode(await idp.clientCredentials('erp'))
  const as = async (sub: string, name: string) => await ctx.app.inject({ method: 'GET', url: '/api/materials?limit=1', headers: { authorization: `Bearer ${await idp.sign({ ...base, sub, preferred_username: name })}` } })
  t.equal((await as('Jane', 'jane.upper')).statusCode, 200)
  t.equal((await as('jane', 'jane.lower')).statusCode, 200)
  const rows = (await ctx.app.inject({ method: 'GET', url: '/api/users?source=sso&sort=id', headers: ctx.auth(ctx.adminToken) })).json().data as Array<{ username: string }>
  t.same(rows.map((row) => row.username), ['jane.upper', 'jane.lower'], 'before: jane signed in as Jane\'s row')
  t.equal((await as('Jane', 'jane.upper')).statusCode, 200, 'each finds its own row again')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users?source=sso', headers: ctx.auth(ctx.adminToken) })).json().data.length, 2)
})

t.test('a name longer than 200 characters is cut to the display-name column, or kept whole where the column has no length', async (t) => {
  const name = `${'Warehouse ERP of the north site, '.repeat(8)}end`
  t.ok(name.length > 200 && name.length < 300)
  const { idp, ctx, bearer } = await setup(t)
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp', name })
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await idp.clientCredentials('erp')) })).statusCode, 200)
  const row = (await ctx.app.inject({ method: 'GET', url: '/api/users?username=erp', headers: ctx.auth(ctx.adminToken) })).json().data[0]
  t.equal(row.displayName, name.slice(0, 200).trimEnd(), 'the reference column\'s 200 characters of it (before: no name at all)')

  const wide = await startProvider()
  t.teardown(() => wide.close())
  const ctx2 = await build(t, {
    auth: { sso: [{ id: 'warehouse', issuer: wide.issuer, audience: AUDIENCE, typeMap: TYPE_MAP, timeoutMs: 5000 } as unknown as Config['auth']['sso'][number]], revocationCacheMs: 0 }
  }, async (db) => {
    // a picking system's user table whose name column has no length
    for (const text of createTableStatements(db.dialect, usersDef, referenceMappings.users)) {
      await db.execute({ text: text.replace(/("?display_name"?\]?) N?VARCHAR\(\d+\)/i, db.dialect === 'mssql' ? '$1 NVARCHAR(MAX)' : '$1 TEXT'), params: [] })
    }
  })
  wide.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp', name })
  t.equal((await ctx2.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${await wide.clientCredentials('erp')}` } })).statusCode, 200)
  const whole = (await ctx2.app.inject({ method: 'GET', url: '/api/users?username=erp', headers: ctx2.auth(ctx2.adminToken) })).json().data[0]
  t.equal(whole.displayName, name, 'the whole name (before: no name at all)')
})

t.test('a configured username claim and a nested type claim (Keycloak\'s realm_access.roles)', async (t) => {
  const { idp, ctx, bearer } = await setup(t, { sso: { usernameClaim: ['client_id'], typeClaim: 'realm_access.roles' } })
  idp.claims.set('scanner', { realm_access: { roles: ['offline_access', 'gateway-user'] }, preferred_username: 'ignored' })
  const res = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await idp.clientCredentials('scanner')) })
  t.equal(res.statusCode, 200)
  const users = (await ctx.app.inject({ method: 'GET', url: '/api/users', headers: ctx.auth(ctx.adminToken) })).json().data
  t.ok(users.some((u: { username: string, type: string }) => u.username === 'scanner' && u.type === 'user'))
})

t.test('Keycloak\'s client roles under a client id with dots (resource_access.gateway.example.com.roles): the path finds them', async (t) => {
  const { idp, ctx, bearer } = await setup(t, { sso: { typeClaim: 'resource_access.gateway.example.com.roles' } })
  idp.claims.set('scanner', { preferred_username: 'scanner', resource_access: { 'gateway.example.com': { roles: ['gateway-user'] }, account: { roles: ['manage-account'] } } })
  const res = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await idp.clientCredentials('scanner')) })
  t.equal(res.statusCode, 200, 'the client role maps to its type (before: 403, the token has no such claim)')
  const users = (await ctx.app.inject({ method: 'GET', url: '/api/users?username=scanner', headers: ctx.auth(ctx.adminToken) })).json().data
  t.match(users, [{ username: 'scanner', type: 'user', source: 'sso' }])
})

t.test('typeClaim as a list (Keycloak\'s realm roles and the gateway client\'s roles): their values count together, the most privileged wins', async (t) => {
  const { idp, ctx, bearer } = await setup(t, { sso: { typeClaim: ['realm_access.roles', 'resource_access.picking-gateway.roles'] } })
  const call = async (client: string) => await ctx.app.inject({ method: 'GET', url: '/api/users', headers: bearer(await idp.clientCredentials(client)) })
  // gateway-admin granted as a client role, gateway-user as a realm role
  idp.claims.set('scanner', { preferred_username: 'it-admin', realm_access: { roles: ['offline_access', 'gateway-user'] }, resource_access: { 'picking-gateway': { roles: ['gateway-admin'] }, account: { roles: ['manage-account'] } } })
  t.equal((await call('scanner')).statusCode, 200, 'an admin by its client role (before: typeClaim took one path only, a list was a configuration error)')
  idp.claims.set('erp', { preferred_username: 'erp', resource_access: { 'picking-gateway': { roles: ['gateway-app'] } } })
  idp.claims.set('erp-2', { preferred_username: 'picker', realm_access: { roles: ['gateway-user'] } })
  t.equal((await call('erp')).statusCode, 403, 'an application (client role only) may not list users')
  t.equal((await call('erp-2')).statusCode, 403, 'a user (realm role only) may not list users')
  const rows = (await ctx.app.inject({ method: 'GET', url: '/api/users?source=sso', headers: ctx.auth(ctx.adminToken) })).json().data as Array<{ username: string, type: string }>
  t.same(rows.map((u) => [u.username, u.type]).sort(), [['erp', 'application'], ['it-admin', 'admin'], ['picker', 'user']], 'each path alone works too')
  idp.claims.set('erp-3', { preferred_username: 'nobody', resource_access: { account: { roles: ['manage-account'] } } })
  t.same((await call('erp-3')).json(), { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: "The token has none of the claims 'realm_access.roles', 'resource_access.picking-gateway.roles': the gateway needs one to choose the user type (auth.sso typeClaim)" }, 'none of the claims: a 403 naming them')
  idp.claims.set('erp-4', { preferred_username: 'other', realm_access: { roles: ['offline_access'] }, resource_access: { 'picking-gateway': { roles: ['viewer'] } } })
  t.same((await call('erp-4')).json().message, "No value of the token's claims 'realm_access.roles', 'resource_access.picking-gateway.roles' maps to a user type (auth.sso typeMap)", 'no value that maps: a 403 naming the claims')
})

t.test('email as the username claim and email_verified: false: a 403 saying so, never the existing user of that name nor a new row; the log says why', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t, { sso: { usernameClaim: ['preferred_username', 'email'] } })
  const local = await ctx.app.repos.users.create({ username: 'jane@example.com', passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$local', type: 'admin', displayName: null, enabled: true })
  const now = Math.floor(Date.now() / 1000)
  const token = async (claims: Record<string, unknown>) => await idp.sign({ iss: idp.issuer, aud: AUDIENCE, azp: 'web', roles: ['gateway-user'], iat: now, exp: now + 300, ...claims })
  const call = async (claims: Record<string, unknown>) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await token(claims)) })
  const unverified = "The username would be the token's 'email' claim, which the identity provider has not verified (email_verified: false): anyone may have entered that address, so it names no user here. Have the provider verify it, or map another claim to the username (auth.sso usernameClaim); no user was created"
  const taken = await call({ sub: 'mallory', email: 'Jane@example.com', email_verified: false })
  t.same(taken.json(), { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: unverified }, 'the name of an existing user: 403 saying the address is unverified (before: that the name was taken)')
  t.same((await call({ sub: 'eve', email: 'eve@example.com', email_verified: 'false' })).json().message, unverified, 'a free name too (before: a row named after the unverified address), also with "false" as text')
  const line = logs.map((l) => JSON.parse(l)).find((l) => l.sub === 'mallory')
  t.match(line, { level: 40, provider: 'warehouse', code: 'FORBIDDEN', msg: unverified }, 'the log warns, naming provider and subject')
  t.equal((await call({ sub: 'bob', email: 'bob@example.com', email_verified: true })).statusCode, 200, 'a verified address names a new row')
  t.equal((await call({ sub: 'carol', email: 'carol@example.com' })).statusCode, 200, 'no email_verified claim: as before')
  t.equal((await call({ sub: 'dave', preferred_username: 'dave', email: 'dave@example.com', email_verified: false })).statusCode, 200, 'the username from another claim: an unverified email is not looked at')
  const rows = (await ctx.app.inject({ method: 'GET', url: '/api/users', headers: ctx.auth(ctx.adminToken) })).json().data as Array<{ id: number, username: string, source: string }>
  t.same(rows.filter((u) => u.source === 'sso').map((u) => u.username).sort(), ['bob@example.com', 'carol@example.com', 'dave'], 'no row for the unverified addresses')
  t.match(rows.find((u) => u.username === 'jane@example.com'), { id: local.id, source: 'local' }, 'the local account is as it was')
})

t.test('Entra ID (its issuer at login.microsoftonline.com): its email claim names no row unless the token says xms_edov: true; a row the identity has is not affected', async (t) => {
  const issuer = 'https://login.microsoftonline.com/9122040d-6c67-4c5b-b112-36a304b66dad/v2.0'
  // the keys from the test provider: with a jwksUri (and no browser login) nothing is fetched from the issuer
  const { idp, ctx, bearer, logs } = await setup(t, { sso: (idp) => ({ issuer, jwksUri: `${idp.issuer}/jwks`, usernameClaim: ['preferred_username', 'email'] }) })
  const local = await ctx.app.repos.users.create({ username: 'jane@contoso.com', passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$local', type: 'admin', displayName: null, enabled: true })
  const now = Math.floor(Date.now() / 1000)
  const call = async (claims: Record<string, unknown>) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await idp.sign({ iss: issuer, aud: AUDIENCE, azp: 'web', roles: ['gateway-user'], iat: now, exp: now + 300, ver: '2.0', ...claims })) })
  const unverified = "The username would be the token's 'email' claim, which Entra ID does not verify unless the token says xms_edov: true (its optional claim 'email domain owner verified'): anyone may have entered that address, so it names no user here. Add the optional claim xms_edov to the app registration's tokens, or map another claim to the username (auth.sso usernameClaim); no user was created"
  t.same((await call({ sub: 'mallory', email: 'Jane@contoso.com' })).json(), { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: unverified }, 'no xms_edov: the existing user of that name is not signed in (before: a 403 that the name was taken)')
  t.same((await call({ sub: 'eve', email: 'eve@contoso.com' })).json().message, unverified, 'nor a row made for a free name (before: a row named after the address)')
  t.same((await call({ sub: 'eve', email: 'eve@contoso.com', xms_edov: false })).json().message, unverified, 'xms_edov: false')
  t.same((await call({ sub: 'eve', email: 'eve@contoso.com', email_verified: true })).json().message, unverified, 'an email_verified claim is not Entra ID\'s word: xms_edov decides')
  t.match(logs.map((l) => JSON.parse(l)).find((l) => l.sub === 'mallory'), { level: 40, provider: 'warehouse', code: 'FORBIDDEN', msg: unverified }, 'the log warns, naming provider and subject')
  t.equal((await call({ sub: 'bob', email: 'bob@contoso.com', xms_edov: true })).statusCode, 200, 'xms_edov: true names a new row')
  t.equal((await call({ sub: 'bob', email: 'bob@contoso.com' })).statusCode, 200, 'the row the identity has: a later token without xms_edov is not affected')
  t.equal((await call({ sub: 'dave', preferred_username: 'Dave@contoso.com', email: 'dave@contoso.com' })).statusCode, 200, 'the username from another claim: the email is not looked at')
  const rows = (await ctx.app.inject({ method: 'GET', url: '/api/users', headers: ctx.auth(ctx.adminToken) })).json().data as Array<{ id: number, username: string, source: string }>
  t.same(rows.filter((u) => u.source === 'sso').map((u) => u.username).sort(), ['bob@contoso.com', 'dave@contoso.com'], 'no row for the addresses Entra ID did not vouch for')
  t.match(rows.find((u) => u.username === 'jane@contoso.com'), { id: local.id, source: 'local' }, 'the local account is as it was')
})

t.test('subjectClaim: Okta\'s access tokens keyed by uid (their sub is the login, which can change), a client\'s by sub; a token with none of the claims is a 401', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t, { sso: { subjectClaim: ['uid', 'sub'], usernameClaim: ['sub'], typeClaim: 'groups', typeMap: { 'Gateway Users': 'user', 'Gateway Apps': 'application' } } })
  const now = Math.floor(Date.now() / 1000)
  const call = async (token: string) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })
  const users = async () => (await ctx.app.inject({ method: 'GET', url: '/api/users?source=sso', headers: ctx.auth(ctx.adminToken) })).json().data as Array<{ id: number, username: string, type: string }>
  // an Okta custom authorization server's access token for a person, as Okta shapes it
  const okta = { ver: 1, jti: 'AT.0mP4JKAZX1iACIT4vbEDF7LpvDVjxypPMf0D7uX39RE', iss: idp.issuer, aud: AUDIENCE, cid: '0oa1qhy8ji0Xx4F0v5d7', uid: '00u1tosfeeIzj3fjK5d7', scp: ['openid', 'gateway'], auth_time: now - 60, groups: ['Everyone', 'Gateway Users'] }
  t.equal((await call(await idp.sign({ ...okta, sub: 'jane@example.com', iat: now - 10, exp: now + 3600 }))).statusCode, 200)
  t.match(await users(), [{ username: 'jane@example.com', type: 'user' }])
  // her login renamed at Okta: a new sub, the same uid
  t.equal((await call(await idp.sign({ ...okta, sub: 'jane.doe@example.com', iat: now, exp: now + 3600 }))).statusCode, 200, 'the renamed login is the same identity')
  t.equal((await users()).length, 1, 'no second row')
  // a client-credentials token: no uid, sub is the client id
  idp.claims.set('erp', { groups: ['Gateway Apps'] })
  t.equal((await call(await idp.clientCredentials('erp'))).statusCode, 200, 'a client, keyed by its sub')
  t.match((await users()).map((u) => [u.username, u.type]).sort(), [['erp', 'application'], ['jane@example.com', 'user']])

  const nameless = await call(await idp.sign({ ...okta, uid: undefined, sub: undefined, iat: now, exp: now + 3600 }))
  t.same(nameless.json(), { ...INVALID, message: "The token has none of the claims 'uid', 'sub' that name its user at the gateway (auth.sso subjectClaim of the identity provider 'warehouse')" }, 'none of the subject claims: 401 naming them')
  t.match(logs.join('\n'), /the token has none of the claims 'uid', 'sub' that name its subject \(auth\.sso subjectClaim\)/, 'the log names the claims')
})

t.test('a configured subjectClaim the token lacks: a 401 naming it, never keyed by sub instead (another user row than the one configured), and the log names claim and provider', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t, { sso: { subjectClaim: 'oid' } })
  // a row keyed by sub, which the token does carry: a fallback to sub would sign it in as this row
  const bySub = await ctx.app.repos.users.create({ username: 'jane', passwordHash: '!sso:warehouse:s-jane', type: 'admin', displayName: null, enabled: true })
  const now = Math.floor(Date.now() / 1000)
  const token = await idp.sign({ iss: idp.issuer, aud: AUDIENCE, sub: 's-jane', azp: 'web', preferred_username: 'jane', roles: ['gateway-user'], iat: now, exp: now + 300 })
  const res = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })
  t.same(res.json(), { ...INVALID, message: "The token has no 'oid' claim, which names its user at the gateway (auth.sso subjectClaim of the identity provider 'warehouse')" }, 'a 401 naming the missing claim (before: the fixed message only)')
  t.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"')
  const line = logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'identity provider token refused')
  t.match(line, { provider: 'warehouse', reason: "the token has no 'oid' claim, which names its subject (auth.sso subjectClaim)" }, 'the log names the claim and the provider')
  const rows = (await ctx.app.inject({ method: 'GET', url: '/api/users?source=sso', headers: ctx.auth(ctx.adminToken) })).json().data
  t.match(rows, [{ id: bySub.id, username: 'jane', lastLoginAt: null }], 'no row made, and the row keyed by sub not signed in')
})

t.test('subjectClaim changed after rows were made under sub: the person is a new identity, a 403 naming the taken username, and the row is left alone, as the README says', async (t) => {
  const { idp, ctx, bearer } = await setup(t, { sso: { subjectClaim: 'oid' } })
  // the row the same person's token made while the entry keyed identities by sub (the default)
  const before = await ctx.app.repos.users.create({ username: 'jane', passwordHash: '!sso:warehouse:s-jane', type: 'user', displayName: null, enabled: true })
  const now = Math.floor(Date.now() / 1000)
  const token = await idp.sign({ iss: idp.issuer, aud: AUDIENCE, sub: 's-jane', oid: 'o-jane', preferred_username: 'jane', roles: ['gateway-user'], iat: now, exp: now + 300 })
  const res = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })
  t.equal(res.statusCode, 403, res.body)
  t.match(res.json(), { code: 'FORBIDDEN', message: /^The username 'jane' is already taken by another single sign-on account of this provider, under another subject \(one keyed by another claim before auth\.sso subjectClaim changed, or the person's former account there\)/ }, 'the message names the username that is taken, and why a person of this provider may find it taken (before: as of any other account)')
  const rows = (await ctx.app.inject({ method: 'GET', url: '/api/users?username=jane', headers: ctx.auth(ctx.adminToken) })).json().data
  t.same(rows.map((u: { id: unknown }) => u.id), [before.id], 'no second row')
  t.equal((await ctx.app.repos.users.get(before.id as number))?.passwordHash, '!sso:warehouse:s-jane', 'and the old row still names its sub')
})

t.test('the user row: disable, delete and re-creation, type following the claim, what the API refuses', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t, { revocationCacheMs: 0 })
  const admin = ctx.auth(ctx.adminToken)
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp', name: 'SAP ERP' })
  const token = await idp.clientCredentials('erp')
  const call = async () => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })
  t.equal((await call()).statusCode, 200)
  const row = (await ctx.app.inject({ method: 'GET', url: '/api/users?username=erp', headers: admin })).json().data[0]
  t.match(row, { type: 'application', source: 'sso', displayName: 'SAP ERP', enabled: true })
  t.type(row.lastLoginAt, 'string')

  // What only the provider decides
  const typeChange = await ctx.app.inject({ method: 'PATCH', url: `/api/users/${row.id}`, headers: admin, payload: { type: 'user' } })
  t.equal(typeChange.statusCode, 400)
  t.equal(typeChange.json().code, 'SSO_USER')
  t.match(typeChange.json().message, /type follows the identity provider/)
  const password = await ctx.app.inject({ method: 'PATCH', url: `/api/users/${row.id}`, headers: admin, payload: { password: 'a-password-here' } })
  t.equal(password.statusCode, 400)
  t.match(password.json().message, /no password here/)
  const login = await ctx.app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'erp', password: '!sso:warehouse:erp' } })
  t.equal(login.statusCode, 401, 'the marker in the password column is not a password')
  t.equal((await ctx.app.repos.users.get(row.id))?.passwordHash, '!sso:warehouse:erp', 'the password-hash column names provider and subject')
  t.equal((await ctx.app.inject({ method: 'PATCH', url: `/api/users/${row.id}`, headers: admin, payload: { displayName: 'SAP' } })).statusCode, 200, 'other fields may change')

  // Disable: refused at once (revocationCacheMs 0 here), however many tokens the provider issues
  t.equal((await ctx.app.inject({ method: 'PATCH', url: `/api/users/${row.id}`, headers: admin, payload: { enabled: false } })).statusCode, 200)
  t.same((await call()).json(), INVALID, 'a disabled user\'s provider token is refused')
  // before: nothing in the log said why, and an ERP fetching new tokens in a loop was a mystery
  t.match(logs.map((l) => JSON.parse(l)).find((entry) => /gateway account of this identity is disabled/.test(entry.msg)), { level: 30, provider: 'warehouse', user: row.id, username: 'erp' }, 'the log says the row is disabled')
  const fresh = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await idp.clientCredentials('erp')) })
  t.equal(fresh.statusCode, 401, 'a new token too')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users?username=erp', headers: admin })).json().data[0].enabled, false, 'the row stays disabled')
  t.equal((await ctx.app.inject({ method: 'PATCH', url: `/api/users/${row.id}`, headers: admin, payload: { enabled: true } })).statusCode, 200)
  t.equal((await call()).statusCode, 200, 'enabled again')

  // The type follows the claim on every token; it revokes the gateway tokens of the old type
  idp.claims.set('erp', { roles: ['gateway-user'], preferred_username: 'erp' })
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await idp.clientCredentials('erp')) })).statusCode, 200)
  t.equal((await ctx.app.inject({ method: 'GET', url: `/api/users/${row.id}`, headers: admin })).json().type, 'user')

  // Delete: the row goes, the next token brings it back (so disabling is how access is withdrawn)
  t.equal((await ctx.app.inject({ method: 'DELETE', url: `/api/users/${row.id}`, headers: admin })).statusCode, 204)
  t.equal((await ctx.app.inject({ method: 'GET', url: `/api/users/${row.id}`, headers: admin })).statusCode, 404)
  t.equal((await call()).statusCode, 200, 'the next token re-creates it')
  const recreated = (await ctx.app.inject({ method: 'GET', url: '/api/users?username=erp', headers: admin })).json().data[0]
  t.not(recreated.id, row.id, 'a new row')
  t.match(recreated, { source: 'sso', enabled: true })
})

t.test('each new provider token stamps lastLoginAt once: an ERP calling every day does not show its first token\'s time for good', async (t) => {
  const { idp, ctx, bearer } = await setup(t)
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const base = decode(await idp.clientCredentials('erp'))
  const now = Math.floor(Date.now() / 1000)
  const older = await idp.sign({ ...base, iat: now - 120, exp: now + 600 })
  const newer = await idp.sign({ ...base, iat: now, exp: now + 600 })
  const get = async (token: string) => (await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })).statusCode
  const row = async () => (await ctx.app.inject({ method: 'GET', url: '/api/users?username=erp', headers: ctx.auth(ctx.adminToken) })).json().data[0] as { lastLoginAt: string, modifiedAt: string }
  const pause = async () => { await new Promise((resolve) => setTimeout(resolve, 20)) }
  t.equal(await get(older), 200)
  const first = await row()
  await pause()
  t.equal(await get(older), 200)
  t.equal(await get(older), 200)
  t.equal((await row()).lastLoginAt, first.lastLoginAt, 'the same token again: no write')
  await pause()
  t.equal(await get(newer), 200)
  const second = await row()
  t.ok(Date.parse(second.lastLoginAt) > Date.parse(first.lastLoginAt), `a new token stamps it (${first.lastLoginAt} -> ${second.lastLoginAt}; before: the first token's time for good)`)
  t.equal(second.modifiedAt, first.modifiedAt, 'without moving modifiedAt, as a password login')
  await pause()
  t.equal(await get(older), 200)
  t.equal((await row()).lastLoginAt, second.lastLoginAt, 'an older token is no new login')
})

t.test('a new provider token of an identity whose row the picking system deleted while this instance still had it cached: the row is made again, not a 404 about users', async (t) => {
  const { idp, ctx, bearer } = await setup(t, { revocationCacheMs: 60000 })
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const first = await idp.clientCredentials('erp')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(first) })).statusCode, 200)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(first) })).statusCode, 200, 'its row now cached')
  const row = (await ctx.app.inject({ method: 'GET', url: '/api/users?username=erp', headers: ctx.auth(ctx.adminToken) })).json().data[0]
  // deleted beside the gateway (the picking system's own user administration): this instance's copy stands for a minute
  await ctx.db.execute({ text: 'DELETE FROM gateway_users WHERE id = @id', params: [{ name: 'id', kind: 'integer', value: row.id }] })
  await new Promise((resolve) => setTimeout(resolve, 1100)) // a token with a later iat
  const res = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await idp.clientCredentials('erp')) })
  t.equal(res.statusCode, 200, `the token is good and the identity is made again, as after a delete through the API (got ${res.statusCode} ${res.body})`)
  const again = (await ctx.app.inject({ method: 'GET', url: '/api/users?username=erp', headers: ctx.auth(ctx.adminToken) })).json().data[0]
  t.match(again, { source: 'sso', enabled: true })
  t.not(again.id, row.id, 'a new row')
})

t.test('an identity whose user id a row of another client takes too (Nr of (Mandant, Nr)): its provider tokens are a 409 that says so and stamp nothing, not requests as that id', async (t) => {
  const { idp, ctx, logs } = await setup(t, { users: MANDANT_USERS, prepare: async (db) => { await createMandantUsers(db, await (await createPasswords(TEST_ARGON2)).hash(ADMIN_PASSWORD)) } })
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const token = await idp.clientCredentials('erp')
  const get = async (bearer: string) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${bearer}` } })
  t.equal((await get(token)).statusCode, 200, 'its row made, as Nr 2 of client 1')
  const stored = async (): Promise<unknown[]> => await ctx.db.query({ text: 'SELECT "Mandant", "Nr", "Login", "TokVer", "Login_am", "Geaendert" FROM "BenMandant" ORDER BY "Mandant", "Nr"', params: [] })
  t.match(await stored(), [{ Nr: 1, Login: 'admin' }, { Mandant: 1, Nr: 2, Login: 'erp' }])
  await ctx.db.execute({ text: 'INSERT INTO "BenMandant" ("Mandant", "Nr", "Login", "PwHash") VALUES (2, 2, \'fremd\', \'x\')', params: [] })
  const before = await stored()
  await new Promise((resolve) => setTimeout(resolve, 1100)) // a token with a later iat: a new login, which would stamp lastLoginAt
  for (const bearer of [token, token, await idp.clientCredentials('erp')]) {
    const res = await get(bearer)
    t.equal(res.statusCode, 409, `before: a 200 as user 2 with the token from before: ${res.body}`)
    t.same(res.json(), { statusCode: 409, code: 'CONFLICT', error: 'Conflict', message: "This account cannot log in: its user id is held by more than one row of the picking system's user table, so no token can name it alone; nothing was changed. An administrator has to give it an id of its own" })
  }
  t.same(await stored(), before, 'nothing stamped or changed')
  t.match(logs.join('\n'), /"user":2,"table":"BenMandant","msg":"a login of user id 2 was refused: several rows of the user table BenMandant hold that id/)
})

t.test('an older token cannot set the type back: the newest claim holds, and the older token acts with the row\'s type', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t)
  const admin = ctx.auth(ctx.adminToken)
  idp.claims.set('erp', { roles: ['gateway-admin'], preferred_username: 'boss' })
  const base = decode(await idp.clientCredentials('erp'))
  const now = Math.floor(Date.now() / 1000)
  const asAdmin = await idp.sign({ ...base, roles: ['gateway-admin'], iat: now - 1800, exp: now + 1800 })
  const asUser = await idp.sign({ ...base, roles: ['gateway-user'], iat: now, exp: now + 3600 })
  const users = (token: string) => ctx.app.inject({ method: 'GET', url: '/api/users', headers: bearer(token) })
  const typeOf = async () => (await ctx.app.inject({ method: 'GET', url: '/api/users?username=boss', headers: admin })).json().data[0].type

  t.equal((await users(asAdmin)).statusCode, 200, 'the first token creates an admin')
  t.equal(await typeOf(), 'admin')
  t.equal((await users(asUser)).statusCode, 403, 'the provider demoted the person: the newer token makes the row a user')
  t.equal(await typeOf(), 'user')
  const again = await users(asAdmin)
  t.equal(again.statusCode, 403, 'the older admin token, still valid, now acts as a user')
  t.equal(await typeOf(), 'user', 'and the row stays a user (before: admin again, the user\'s gateway tokens revoked)')
  const create = await ctx.app.inject({ method: 'POST', url: '/api/users', headers: bearer(asAdmin), payload: { username: 'mallory', password: 'long-enough-1' } })
  t.equal(create.statusCode, 403, 'it cannot create an admin')
  t.match(logs.join('\n'), /single sign-on: the provider's claim changed the user's type/, 'the change is in the log')
  t.match(logs.join('\n'), /"from":"admin","to":"user"/)
  t.match(logs.join('\n'), /single sign-on: user created by its first token/)
  t.match(logs.join('\n'), /token older than the user's type: it acts with the row's type/)

  // a newer promotion still works; a restart (nothing remembered) still holds against tokens from before the row's change
  const promoted = await idp.sign({ ...base, roles: ['gateway-admin'], iat: now + 1, exp: now + 3600 })
  t.equal((await users(promoted)).statusCode, 200)
  t.equal(await typeOf(), 'admin')
  const { buildApp } = await import('../../src/app.js')
  const { validateConfig } = await import('../../src/config.js')
  const restarted = await buildApp(validateConfig({ ...ctx.config, logging: { level: 'silent' } }), { db: ctx.db })
  t.teardown(() => restarted.close())
  const oldUser = await idp.sign({ ...base, roles: ['gateway-user'], iat: now - 1200, exp: now + 1800 })
  t.equal((await restarted.inject({ method: 'GET', url: '/api/users', headers: bearer(oldUser) })).statusCode, 200, 'a user token from 20 minutes before the promotion acts as the admin the row is')
  t.equal(await typeOf(), 'admin')
})

t.test('licence: a new SSO user past the licence, and a type change into it', async (t) => {
  const { idp, ctx, bearer } = await setup(t, { licence: 1 })
  const admin = ctx.auth(ctx.adminToken)
  const call = async (client: string) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await idp.clientCredentials(client)) })
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  idp.claims.set('scanner', { roles: ['gateway-user'], preferred_username: 'scanner' })
  idp.claims.set('erp-2', { roles: ['gateway-admin'], preferred_username: 'boss' })
  t.equal((await call('erp')).statusCode, 200, 'the one licensed login')
  const over = await call('scanner')
  t.equal(over.statusCode, 403)
  t.equal(over.json().code, 'LICENCE_LIMIT')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users?username=scanner', headers: admin })).json().data.length, 0, 'no row')
  t.equal((await call('erp-2')).statusCode, 200, 'admins do not count')

  // The provider moves the admin to a licensed type while the licence is used up
  idp.claims.set('erp-2', { roles: ['gateway-user'], preferred_username: 'boss' })
  const promoted = await call('erp-2')
  t.equal(promoted.statusCode, 403)
  t.equal(promoted.json().code, 'LICENCE_LIMIT')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users?username=boss', headers: admin })).json().data[0].type, 'admin', 'unchanged')

  // Disabling the first frees the login
  const erp = (await ctx.app.inject({ method: 'GET', url: '/api/users?username=erp', headers: admin })).json().data[0]
  await ctx.app.inject({ method: 'PATCH', url: `/api/users/${erp.id}`, headers: admin, payload: { enabled: false } })
  t.equal((await call('erp-2')).statusCode, 200)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/users?username=boss', headers: admin })).json().data[0].type, 'user')
  // Enabling the first again through the API is now past the licence
  const enable = await ctx.app.inject({ method: 'PATCH', url: `/api/users/${erp.id}`, headers: admin, payload: { enabled: true } })
  t.equal(enable.statusCode, 403)
  t.equal(enable.json().code, 'LICENCE_LIMIT')
})

/**
 * A token the gateway accepted, then the provider's keys changed by `change` and, past the cooldown, a
 * token the provider signs after it: the start of the key-rotation tests.
 */
async function keysChanged (t: Test, cooldownMs: number, change: (idp: TestProvider) => Promise<TestKey>) {
  const { idp, ctx, bearer } = await setup(t, { timing: { jwksCooldownMs: cooldownMs } })
  const provider = ctx.app.auth.sso.byId.get('warehouse')!
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const before = await idp.clientCredentials('erp')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(before) })).statusCode, 200)
  t.equal(provider.jwksFetches, 1)
  const key = await change(idp)
  await new Promise((resolve) => setTimeout(resolve, cooldownMs + 50))
  const after = await idp.clientCredentials('erp')
  t.equal(header(after).kid, key.kid, 'the provider signs with the changed key')
  return { idp, ctx, bearer, provider, before, after, key }
}

t.test('key rotation at the provider: a new kid is accepted without a restart', async (t) => {
  const { ctx, bearer, provider, before, after } = await keysChanged(t, 200, async (idp) => await idp.rotate())
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(after) })).statusCode, 200, 'accepted')
  t.equal(provider.jwksFetches, 2, 'one refetch for the new kid')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(before) })).statusCode, 200, 'the old key is still published')
  t.equal(provider.jwksFetches, 2)
})

t.test('a key the provider withdrew: a token it signed, accepted before, is refused once the keys are fetched without it', async (t) => {
  const { ctx, bearer, provider, before, after } = await keysChanged(t, 200, async (idp) => {
    const key = await idp.rotate()
    idp.withdraw(idp.keys[1])
    return key
  })
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(after) })).statusCode, 200, 'the new kid: accepted')
  t.equal(provider.jwksFetches, 2, 'after a refetch')
  t.same((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(before) })).json(), INVALID, 'the old key\'s token is refused (before: remembered as checked for up to 10 minutes)')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(after) })).statusCode, 200, 'the new one still is accepted')
  t.equal(provider.signatureChecks, 3, 'and remembered: checked once per key set')
})

t.test('an empty key set from the provider is a failed fetch: the keys in use stay, an unknown kid is a 503', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t, { timing: { jwksCooldownMs: 200, retryMs: 200 } })
  const provider = ctx.app.auth.sso.byId.get('warehouse')!
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const token = await idp.clientCredentials('erp')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })).statusCode, 200)
  idp.jwksAnswer = { keys: [] }
  await new Promise((resolve) => setTimeout(resolve, 250))
  const other = await idp.sign(decode(token), { header: { kid: 'rotated' } })
  t.same((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(other) })).json(), UNAVAILABLE, 'an unknown kid while the set is empty: not known to be wrong')
  t.equal(provider.jwksFetches, 2, 'the set was fetched')
  t.match(logs.join('\n'), /fetching the key set .* failed: Error: the key set holds no keys/)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await idp.clientCredentials('erp')) })).statusCode, 200, 'a token of the key in use still works (before: 401 until the next fetch)')
  idp.jwksAnswer = undefined
  await new Promise((resolve) => setTimeout(resolve, 250))
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(other) })).statusCode, 401, 'the keys back: the unknown kid is refused as before')
})

t.test('new key material under the same kid (a provider restarted with generated keys): fetched again once the cooldown allows, not refused for the keys\' whole age', async (t) => {
  // made first: an RSA key takes a while, and the checks below must fall inside one cooldown (3 s: a
  // loaded machine stalls for about a second)
  const stranger = (await generateKeyPair('RS256')).privateKey
  const { idp, ctx, bearer, provider, after, key } = await keysChanged(t, 3000, async (idp) => await idp.rekey())
  // a token the provider's keys do not verify
  const forged = await idp.sign(decode(after), { key: { ...key, privateKey: stranger } })
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(after) })).statusCode, 200, 'accepted (before: 401 until the cached keys were jwksMaxAgeMs old)')
  t.equal(provider.jwksFetches, 2, 'one refetch')
  t.same((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(forged) })).json(), INVALID, 'within the cooldown: refused at once')
  t.equal(provider.jwksFetches, 2, 'without another fetch')
  await new Promise((resolve) => setTimeout(resolve, 3050))
  t.same((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(forged) })).json(), INVALID, 'past it: fetched again, still refused')
  t.equal(provider.jwksFetches, 3)
})

t.test('closing does not wait for a provider request that hangs (a long timeoutMs would outlast the shutdown\'s grace)', async (t) => {
  const { idp, ctx, bearer } = await setup(t, { sso: { timeoutMs: 30000 } })
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const token = await idp.clientCredentials('erp')
  idp.mode = 'hang'
  const inFlight = ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })
  await until(() => idp.hung > 0, 'the discovery request held by the provider')
  const started = Date.now()
  await ctx.app.close()
  t.ok(Date.now() - started < 10000, `closed in ${Date.now() - started} ms, not after the 30 s timeout`)
  const res = await inFlight
  t.equal(res.statusCode, 503, 'the request that waited gets the usual 503')
  t.equal(res.json().code, 'SSO_UNAVAILABLE')
})

t.test('the provider stopped or hanging', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t, { sso: { timeoutMs: 500 }, timing: { jwksCooldownMs: 1000 } })
  // counted by the gateway: the provider's own counter misses requests it never answers
  const provider = ctx.app.auth.sso.byId.get('warehouse')!
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const token = await idp.clientCredentials('erp')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })).statusCode, 200)
  t.equal(provider.jwksFetches, 1)
  const good = decode(token)
  const unknownKid = async (n: number) => await idp.sign(good, { header: { kid: `rotated-${n}` } })

  idp.mode = 'hang'
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })).statusCode, 200, 'hanging: the cached key still works')
  await new Promise((resolve) => setTimeout(resolve, 1050)) // past the cooldown: an unknown kid may refetch
  const started = Date.now()
  const burst = await Promise.all([1, 2, 3, 4, 5].map(async (n) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await unknownKid(n)) })))
  for (const res of burst) {
    t.same(res.json(), UNAVAILABLE, 'an unknown kid, and the keys cannot be fetched: 503')
    t.equal(res.headers['retry-after'], '10')
  }
  t.ok(Date.now() - started < 5000, `answered, not held by the hanging fetch (${Date.now() - started} ms)`)
  t.equal(provider.jwksFetches, 2, 'one key-set fetch for the whole burst')
  t.match(logs.join('\n'), /fetching the key set .* failed/, 'the log says why')
  const answered = logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.code === 'SSO_UNAVAILABLE')
  t.ok(answered.length >= 5, 'each 503 is logged')
  t.notOk(answered.some((line) => 'err' in line), 'without a stack: the reason is logged where the fault is noticed (before: a stack per request)')
  t.same((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await unknownKid(6)) })).json(), UNAVAILABLE, 'the last fetch failed: an unknown kid is not known to be wrong')
  t.equal(provider.jwksFetches, 2, 'no fetch within the cooldown after the last one')

  await idp.stop()
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })).statusCode, 200, 'stopped: the cached key still works')
  await new Promise((resolve) => setTimeout(resolve, 1050))
  t.same((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await unknownKid(9)) })).json(), UNAVAILABLE, 'stopped, past the cooldown: 503')
  t.notMatch(logs.join('\n'), /"statusCode":500/)
  await idp.start()
  idp.mode = 'up'
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(await idp.clientCredentials('erp')) })).statusCode, 200, 'back: a new token works')
})

t.test('a new kid while the keys cannot be fetched: 503, and the retry the 503 asks for works once the provider is back', async (t) => {
  const { idp, ctx, bearer } = await setup(t, { sso: { timeoutMs: 500 }, timing: { jwksCooldownMs: 1000, retryMs: 300 } })
  const provider = ctx.app.auth.sso.byId.get('warehouse')!
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const get = async (token: string) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })
  t.equal((await get(await idp.clientCredentials('erp'))).statusCode, 200)
  await new Promise((resolve) => setTimeout(resolve, 1050)) // past the cooldown: a new kid may fetch the keys
  await idp.rotate()
  const rotated = await idp.clientCredentials('erp')
  await idp.stop()
  const down = await get(rotated)
  t.same(down.json(), UNAVAILABLE, 'the provider is down: the new kid cannot be checked')
  t.equal(down.headers['retry-after'], '10')
  t.equal(provider.jwksFetches, 2)
  await idp.start()
  t.same((await get(rotated)).json(), UNAVAILABLE, 'at once again: still 503, not the 401 that would send the client for a new token with the same kid')
  t.equal(provider.jwksFetches, 2, 'without a fetch')
  await new Promise((resolve) => setTimeout(resolve, 350))
  t.equal((await get(rotated)).statusCode, 200, 'after the retry time (not the cooldown): fetched again and accepted')
  t.equal(provider.jwksFetches, 3)
  t.same((await get(await idp.sign(decode(rotated), { header: { kid: 'no-such-key' } }))).json(), INVALID, 'the keys fetched: an unknown kid is a 401 again')
  t.equal(provider.jwksFetches, 3, 'within the cooldown, without a fetch')
})

t.test('a checked token is remembered until its exp, and no longer than the keys are kept', async (t) => {
  const { idp, ctx, bearer } = await setup(t, { timing: { jwksMaxAgeMs: 400 } })
  const provider = ctx.app.auth.sso.byId.get('warehouse')!
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const token = await idp.clientCredentials('erp')
  const get = async (tok: string) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(tok) })
  for (let i = 0; i < 3; i++) t.equal((await get(token)).statusCode, 200)
  t.equal(provider.signatureChecks, 1, 'one signature check for three requests')
  await new Promise((resolve) => setTimeout(resolve, 450))
  t.equal((await get(token)).statusCode, 200)
  t.equal(provider.signatureChecks, 2, 'past the keys\' age: checked again')

  // at least a second left: valid when first sent, whatever the current second's fraction
  const soon = await idp.sign({ ...decode(token), exp: Math.floor(Date.now() / 1000) + 2 })
  t.equal((await get(soon)).statusCode, 200)
  t.equal(provider.signatureChecks, 3)
  await new Promise((resolve) => setTimeout(resolve, Number(decode(soon).exp) * 1000 - Date.now() + 50))
  const late = await get(soon)
  t.equal(late.statusCode, 401, 'past its exp: refused, not answered from the remembered claims')
  t.equal(late.json().code, 'TOKEN_EXPIRED')
  t.equal(provider.signatureChecks, 4, 'checked afresh to tell why')
  t.equal((await get(token)).statusCode, 200, 'the other token still works')
})

t.test('keys past their age are fetched again; when that fails, the old ones carry on and the log says so', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t, { sso: { timeoutMs: 500 }, timing: { jwksCooldownMs: 0, jwksMaxAgeMs: 200 } })
  const provider = ctx.app.auth.sso.byId.get('warehouse')!
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const token = await idp.clientCredentials('erp')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })).statusCode, 200)
  t.equal(provider.jwksFetches, 1)
  await new Promise((resolve) => setTimeout(resolve, 250))
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })).statusCode, 200)
  t.equal(provider.jwksFetches, 2, 'stale keys: fetched again')
  t.notMatch(logs.join('\n'), /stay in use/, 'a refetch that worked is not a warning')

  await idp.stop()
  await new Promise((resolve) => setTimeout(resolve, 250))
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })).statusCode, 200, 'the provider is down: the stale key still works')
  t.equal(provider.jwksFetches, 3, 'it was tried')
  await until(() => logs.some((line) => /stay in use/.test(line)), 'the warning of the fetch in the background')
  const warning = logs.map((line) => JSON.parse(line)).find((entry) => /stay in use/.test(entry.msg))
  t.match(warning, { level: 40, provider: 'warehouse', msg: /^fetching the key set http:\/\/127\.0\.0\.1:\d+\/.* failed: .*; the keys fetched \d{4}-\d\d-\d\dT.* stay in use$/ }, 'a warning names the provider, the cause and the age of the keys in use')
})

t.test('keys past their age while the provider hangs: the token is checked with the cached keys at once, not after timeoutMs', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t, { sso: { timeoutMs: 3000 }, timing: { jwksCooldownMs: 0, jwksMaxAgeMs: 200 } })
  const provider = ctx.app.auth.sso.byId.get('warehouse')!
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const token = await idp.clientCredentials('erp')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })).statusCode, 200)
  idp.mode = 'hang'
  await new Promise((resolve) => setTimeout(resolve, 250))
  const started = Date.now()
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })).statusCode, 200, 'the stale key still works')
  // the warning comes when the fetch times out: none yet means the answer did not wait for it
  t.notOk(logs.some((line) => /stay in use/.test(line)), `answered in ${Date.now() - started} ms, while the fetch still waits for its 3000 ms timeout (before: each such token waited for it)`)
  t.equal(provider.jwksFetches, 2, 'the keys are being fetched again')
  await until(() => logs.some((line) => /stay in use/.test(line)), 'the warning once the fetch timed out')
  t.ok(Date.now() - started >= 2900, 'which ends with its timeout')
})

t.test('the first tokens after a start, at once: they share the first fetch of the keys, none is a 503', async (t) => {
  // each instance behind a load balancer starts so, with the ERPs' tokens already arriving
  const { idp, ctx, bearer, logs } = await setup(t)
  const provider = ctx.app.auth.sso.byId.get('warehouse')!
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  idp.claims.set('scanner', { roles: ['gateway-user'], preferred_username: 'scanner' })
  const tokens = [await idp.clientCredentials('erp'), await idp.clientCredentials('scanner'), await idp.clientCredentials('erp')]
  const burst = await Promise.all(tokens.map(async (token) => await ctx.app.inject({ method: 'GET', url: '/api/materials?limit=1', headers: bearer(token) })))
  t.same(burst.map((res) => res.statusCode), [200, 200, 200], 'before: the first fetched the keys, the others were 503 "the last attempt to fetch them failed" while it ran')
  t.equal(provider.jwksFetches, 1, 'one fetch for the burst')
  t.notMatch(logs.join('\n'), /SSO_UNAVAILABLE/)
})

t.test('a provider that hangs or is down before its keys are known', async (t) => {
  const { idp, ctx, bearer, logs } = await setup(t, { sso: { timeoutMs: 400 }, timing: { jwksCooldownMs: 60000, retryMs: 60000 } })
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const token = await idp.clientCredentials('erp')
  idp.mode = 'hang'
  const started = Date.now()
  const burst = await Promise.all([1, 2, 3].map(async () => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })))
  const took = Date.now() - started
  for (const res of burst) t.same(res.json(), UNAVAILABLE, 'hanging discovery: 503 SSO_UNAVAILABLE, not 401 or 500')
  t.ok(took >= 350 && took < 5000, `ended by the 400 ms timeout (${took} ms)`)
  t.match(logs.join('\n'), /discovery at .* failed/, 'the log says why')
  const asked = idp.discoveryRequests
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: bearer(token) })).statusCode, 503)
  t.equal(idp.discoveryRequests, asked, 'a failure is remembered: no new request (and wait) until the retry time')
})

t.test('a discovery document the provider answers with an error status: 503, and the log names the status', async (t) => {
  // a provider in maintenance (503), or a proxy that refuses the host (403): the operator needs to tell them apart
  const server = createServer((req, res) => { res.writeHead(503, { 'content-type': 'text/html' }).end('<html>maintenance</html>') })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/realms/warehouse`
  const logs: string[] = []
  const sso: SsoOverrides = { id: 'warehouse', issuer, audience: AUDIENCE, typeMap: TYPE_MAP, timeoutMs: 5000 }
  const ctx = await build(t, { auth: { sso: [sso as Config['auth']['sso'][number]], revocationCacheMs: 0 }, logging: { level: 'info' } }, undefined, { logStream: { write: (line: string) => { logs.push(line) } } })
  const { privateKey } = await generateKeyPair('RS256')
  const now = Math.floor(Date.now() / 1000)
  const token = await new SignJWT({ iss: issuer, aud: AUDIENCE, sub: 'erp', iat: now, exp: now + 300 }).setProtectedHeader({ alg: 'RS256', kid: 'k' }).sign(privateKey)
  const res = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${token}` } })
  t.same(res.json(), UNAVAILABLE)
  t.match(logs.join('\n'), /discovery at .* failed: .*unexpected HTTP response status code \(HTTP 503\)/, 'the log says which status the provider answered')

  // an issuer with a trailing slash (Auth0, Authentik): the address the log names is the one asked
  const slashed = await build(t, { auth: { sso: [{ ...sso, issuer: `${issuer}/` } as Config['auth']['sso'][number]], revocationCacheMs: 0 }, logging: { level: 'info' } }, undefined, { logStream: { write: (line: string) => { logs.push(line) } } })
  const before = logs.length
  const slashedToken = await new SignJWT({ iss: `${issuer}/`, aud: AUDIENCE, sub: 'erp', iat: now, exp: now + 300 }).setProtectedHeader({ alg: 'RS256', kid: 'k' }).sign(privateKey)
  t.equal((await slashed.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${slashedToken}` } })).statusCode, 503)
  t.match(logs.slice(before).join('\n'), `discovery at ${issuer}/.well-known/openid-configuration failed`, 'no doubled slash')
})

t.test('a configured jwksUri and algorithms: no discovery; a key set that cannot be fetched', async (t) => {
  const idp = await startProvider()
  t.teardown(() => idp.close())
  const logs: string[] = []
  const config = { id: 'keys', issuer: idp.issuer, audience: AUDIENCE, typeMap: TYPE_MAP, timeoutMs: 300, jwksUri: `${idp.issuer}/jwks`, algorithms: ['RS256' as const] }
  const ctx = await build(t, { auth: { sso: [config], revocationCacheMs: 0 }, logging: { level: 'info' } }, undefined, { logStream: { write: (line: string) => { logs.push(line) } } })
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const token = await idp.clientCredentials('erp')
  idp.mode = 'hang'
  const started = Date.now()
  const res = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${token}` } })
  t.same(res.json(), { ...UNAVAILABLE, message: "The identity provider 'keys' cannot be reached; try again shortly" })
  t.ok(Date.now() - started < 5000, `ended by the 300 ms timeout (${Date.now() - started} ms)`)
  t.match(logs.join('\n'), /fetching the key set .* failed/, 'the log says why')
  idp.mode = 'up'
  const immediately = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${token}` } })
  t.equal(immediately.statusCode, 503, 'the failed fetch is not repeated at once')
  t.equal(idp.discoveryRequests, 0, 'no discovery')
  t.equal(idp.jwksRequests, 0, 'the hanging request was never answered; none since')
})

t.test('a provider token\'s exp is what an event stream or a stream ticket bought with it lasts until', async (t) => {
  const { idp, ctx, bearer } = await setup(t)
  idp.claims.set('scanner', { roles: ['gateway-user'], preferred_username: 'scanner' })
  const token = await idp.clientCredentials('scanner')
  t.equal((await ctx.app.inject({ method: 'POST', url: '/api/events/ticket', headers: bearer(token) })).statusCode, 200)
  const request = (headers: Record<string, string>) => ({ headers }) as unknown as Parameters<typeof ctx.app.auth.expiryOf>[0]
  t.equal(ctx.app.auth.expiryOf(request(bearer(token))), decode(token).exp * 1000, 'the provider\'s exp')
  t.equal(ctx.app.auth.expiryOf(request({})), undefined, 'no token, no expiry')
})
