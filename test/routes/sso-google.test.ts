// Google as the README configures it ("Configuration: Google (Workspace)"), its entry parsed from the README: the
// browser login ending in Google-shaped ID tokens (issuer https://accounts.google.com, sub, email, email_verified,
// hd), the username and the type as documented. Google's issuer cannot be served from loopback (discovery is
// fetched from it): the provider's requests go to a Google written here, from its published discovery document.
import { createHash } from 'node:crypto'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose'
import t, { type Test } from 'tap'
import { build, type TestContext } from '../helpers/build.js'
import { README } from '../helpers/documented.js'
import { fenced, section } from '../helpers/markdown.js'
import type { ProviderFetch } from '../../src/auth/sso.js'
import type { Config } from '../../src/config.js'

const ISSUER = 'https://accounts.google.com'
const AUTHORIZE = 'https://accounts.google.com/o/oauth2/v2/auth'
const TOKEN = 'https://oauth2.googleapis.com/token'
const CERTS = 'https://www.googleapis.com/oauth2/v3/certs'
const SECRET = 'GOCSPX-test-secret-0123456789ab'

/** The README's Google `auth.sso` entry, as a reader copies it. */
function documentedGoogle (): Config['auth']['sso'][number] {
  const blocks = fenced(section(section(README, 'Single sign-on with an OpenID Connect provider'), 'Configuration: Google (Workspace)'), 'json')
  if (blocks.length !== 1) throw new Error(`README "Configuration: Google (Workspace)" should have one json block, found ${blocks.length}`)
  const entries = (JSON.parse(`{${blocks[0]}}`) as { auth: { sso: Array<Config['auth']['sso'][number]> } }).auth.sso
  if (entries.length !== 1) throw new Error('README "Configuration: Google (Workspace)": auth.sso should have one entry')
  return entries[0]
}

/** What Google's token endpoint hands out for a code: the ID token's claims, the nonce and PKCE challenge of its login. */
interface Grant { claims: JWTPayload, nonce: string, challenge: string }

async function fakeGoogle (clientId: string) {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  const kid = 'a3f5b2c1d4e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0'
  const grants = new Map<string, Grant>()
  const tokenRequests: URLSearchParams[] = []
  const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8' } })
  const sign = async (claims: JWTPayload, key: CryptoKey = privateKey) => await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' }).sign(key)
  const fetch: ProviderFetch = async (url, init) => {
    if (url === `${ISSUER}/.well-known/openid-configuration`) {
      // as https://accounts.google.com/.well-known/openid-configuration has it
      return json({
        issuer: ISSUER,
        authorization_endpoint: AUTHORIZE,
        device_authorization_endpoint: 'https://oauth2.googleapis.com/device/code',
        token_endpoint: TOKEN,
        userinfo_endpoint: 'https://openidconnect.googleapis.com/v1/userinfo',
        revocation_endpoint: 'https://oauth2.googleapis.com/revoke',
        jwks_uri: CERTS,
        response_types_supported: ['code', 'token', 'id_token', 'code token', 'code id_token', 'token id_token', 'code token id_token', 'none'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        scopes_supported: ['openid', 'email', 'profile'],
        token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
        claims_supported: ['aud', 'email', 'email_verified', 'exp', 'family_name', 'given_name', 'iat', 'iss', 'name', 'picture', 'sub'],
        code_challenge_methods_supported: ['plain', 'S256'],
        grant_types_supported: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code', 'urn:ietf:params:oauth:grant-type:jwt-bearer']
      })
    }
    if (url === CERTS) return json({ keys: [{ ...await exportJWK(publicKey), kid, alg: 'RS256', use: 'sig' }] })
    if (url === TOKEN && init.method === 'POST') {
      const body = new URLSearchParams(String(init.body))
      tokenRequests.push(body)
      const grant = grants.get(body.get('code') ?? '')
      grants.delete(body.get('code') ?? '')
      if (grant === undefined || body.get('client_secret') !== SECRET || body.get('client_id') !== clientId) return json({ error: 'invalid_grant', error_description: 'Bad Request' }, 400)
      if (createHash('sha256').update(body.get('code_verifier') ?? '').digest('base64url') !== grant.challenge) return json({ error: 'invalid_grant', error_description: 'Invalid code verifier.' }, 400)
      const accessToken = `ya29.a0AfB_${grant.nonce.slice(0, 16)}`
      const now = Math.floor(Date.now() / 1000)
      const atHash = createHash('sha256').update(accessToken).digest().subarray(0, 16).toString('base64url')
      const idToken = await sign({ iss: ISSUER, azp: clientId, aud: clientId, at_hash: atHash, nonce: grant.nonce, iat: now, exp: now + 3599, ...grant.claims })
      return json({ access_token: accessToken, expires_in: 3599, scope: 'openid https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile', token_type: 'Bearer', id_token: idToken })
    }
    return json({ error: 'not_found' }, 404)
  }
  return { fetch, grants, tokenRequests, sign }
}

async function setup (t: Test) {
  const entry = documentedGoogle()
  const logs: string[] = []
  const ctx: TestContext = await build(t, { auth: { sso: [{ ...entry, clientSecret: SECRET }], revocationCacheMs: 0 }, logging: { level: 'info' } }, undefined, { logStream: { write: (line: string) => { logs.push(line) } } })
  const google = await fakeGoogle(entry.clientId!)
  // the provider's requests (discovery, keys, token endpoint) go to the Google above, before its first one
  Object.assign(ctx.app.auth.sso.byId.get(entry.id)!, { fetch: google.fetch })
  let codes = 0
  /** A browser login of a Google account with these ID-token claims: /login, Google's sign-in, then the callback. */
  const signIn = async (claims: JWTPayload) => {
    const start = await ctx.app.inject({ method: 'GET', url: `/api/users/sso/${entry.id}/login` })
    if (start.statusCode !== 302) throw new Error(`login: ${start.statusCode} ${start.body}`)
    const authorization = new URL(start.headers.location as string)
    const code = `4/0AanRRrt-${++codes}`
    google.grants.set(code, { claims, nonce: authorization.searchParams.get('nonce')!, challenge: authorization.searchParams.get('code_challenge')! })
    const cookie = String(start.headers['set-cookie']).split(';')[0]
    // Google's redirect back: state, code, the scope granted, and for a Workspace account hd, authuser, prompt
    const back = new URLSearchParams({ state: authorization.searchParams.get('state')!, code, scope: 'email profile openid https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile', authuser: '0', prompt: 'none' })
    if (typeof claims.hd === 'string') back.set('hd', claims.hd)
    const res = await ctx.app.inject({ method: 'GET', url: `${new URL(entry.redirectUri!).pathname}?${back}`, headers: { cookie } })
    return { authorization, res }
  }
  const users = async () => (await ctx.app.inject({ method: 'GET', url: '/api/users?source=sso&sort=id', headers: ctx.auth(ctx.adminToken) })).json().data as Array<Record<string, unknown>>
  return { entry, ctx, google, signIn, users, logs }
}

t.test('Google with the README\'s entry: a Workspace account of the domain signs in as a user named by its address; other domains and personal accounts are refused, no row', async (t) => {
  const { entry, ctx, google, signIn, users } = await setup(t)
  t.match(entry, { issuer: ISSUER, typeClaim: 'hd', usernameClaim: 'email' }, 'the README\'s entry is Google\'s')
  const jane = { sub: '110169484474386276334', hd: 'example.com', email: 'Jane.Doe@example.com', email_verified: true, name: 'Jane Doe', given_name: 'Jane', family_name: 'Doe', picture: 'https://lh3.googleusercontent.com/a/ACg8ocJ' }
  const { authorization, res } = await signIn(jane)
  t.equal(`${authorization.origin}${authorization.pathname}`, AUTHORIZE, 'the browser is sent to Google\'s authorization endpoint')
  t.match(Object.fromEntries(authorization.searchParams), { client_id: entry.clientId, redirect_uri: entry.redirectUri, response_type: 'code', scope: 'openid profile email', code_challenge_method: 'S256' })
  t.equal(res.statusCode, 200, `signed in: ${res.body}`)
  t.match(res.json(), { login: true, accessToken: String, refreshToken: String, expiresIn: 900 })
  t.match(Object.fromEntries(google.tokenRequests[0]), { grant_type: 'authorization_code', client_id: entry.clientId, client_secret: SECRET, redirect_uri: entry.redirectUri }, 'the code exchanged with the client secret')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(res.json().accessToken) })).statusCode, 200, 'the gateway\'s token works')
  t.match(await users(), [{ username: 'jane.doe@example.com', type: 'user', displayName: 'Jane Doe', source: 'sso', enabled: true }], 'the username is the address, lower-cased; the type from hd')
  t.equal((await signIn(jane)).res.statusCode, 200, 'the same account again: its row, found by sub')
  t.equal((await users()).length, 1)

  const personal = await signIn({ sub: '104455667788990011223', email: 'jane.doe@gmail.com', email_verified: true, name: 'Jane' })
  t.same(personal.res.json(), { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: "The token has no 'hd' claim: the gateway needs it to choose the user type (auth.sso typeClaim)" }, 'a personal account (no hd): refused')
  const elsewhere = await signIn({ sub: '108877665544332211009', hd: 'other.example', email: 'jane.doe@other.example', email_verified: true, name: 'Jane' })
  t.same(elsewhere.res.json(), { statusCode: 403, code: 'FORBIDDEN', error: 'Forbidden', message: "No value of the token's 'hd' claim maps to a user type (auth.sso typeMap)" }, 'another Workspace domain: refused')
  t.equal((await users()).length, 1, 'no row for either')

  // Google's ID token names the client in azp: were audience the client id, it would pass as a Bearer token
  const now = Math.floor(Date.now() / 1000)
  const idToken = await google.sign({ iss: ISSUER, azp: entry.clientId, aud: entry.clientId, nonce: 'n-0S6_WzA2Mj', iat: now, exp: now + 3599, ...jane })
  t.match((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(idToken) })).json(), { statusCode: 401, code: 'TOKEN_INVALID' }, 'an ID token sent as a Bearer token: refused (its aud is not the documented audience)')
})
