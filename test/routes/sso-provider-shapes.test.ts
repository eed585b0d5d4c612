// Discovery documents, key sets and access tokens shaped as real providers issue them (Entra ID v1.0,
// AD FS 2019, Keycloak), written from their public documentation, served by a plain HTTP server; the
// tokens are signed here. What each shape needs from auth.sso is the configuration the README gives.
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose'
import t, { type Test } from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { build, type TestContext } from '../helpers/build.js'
import type { Config } from '../../src/config.js'

interface Key { privateKey: CryptoKey, jwk: JWK }

async function newKey (alg: string, members: JWK): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  return { privateKey, jwk: { ...await exportJWK(publicKey), ...members } }
}

interface Provider {
  issuer: string
  ctx: TestContext
  logs: string[]
  call: (token: string) => Promise<LightMyRequestResponse>
  sign: (key: Key, claims: Record<string, unknown>, header: Record<string, unknown>) => Promise<string>
  users: () => Promise<Array<{ username: string, type: string, source: string }>>
}

/**
 * A provider whose issuer is `issuerPath` on a loopback server: its discovery document (unless
 * `discovery` is false: the entry then names the key set) and its key set, as `published` gives it.
 */
async function setup (t: Test, opts: { issuerPath: string, published: JWK[], advertised?: string[], discovery?: boolean, sso: Record<string, unknown> }): Promise<Provider> {
  const server = createServer((req, res) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    // openid-client asks <issuer>/.well-known/openid-configuration, without doubling an issuer's trailing slash
    if (opts.discovery !== false && req.url === `${opts.issuerPath.replace(/\/$/, '')}/.well-known/openid-configuration`) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
        issuer: `${base}${opts.issuerPath}`,
        authorization_endpoint: `${base}/oauth2/authorize`,
        token_endpoint: `${base}/oauth2/token`,
        jwks_uri: `${base}/discovery/keys`,
        response_types_supported: ['code', 'id_token', 'code id_token', 'token id_token', 'token'],
        subject_types_supported: ['pairwise'],
        id_token_signing_alg_values_supported: opts.advertised ?? ['RS256']
      }))
      return
    }
    if (req.url === '/discovery/keys') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: opts.published }))
      return
    }
    res.writeHead(404).end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const issuer = `${base}${opts.issuerPath}`
  const logs: string[] = []
  const sso = { id: 'idp', issuer, timeoutMs: 5000, ...(opts.discovery === false && { jwksUri: `${base}/discovery/keys` }), ...opts.sso }
  const ctx = await build(t, { auth: { sso: [sso as Config['auth']['sso'][number]], revocationCacheMs: 0 }, logging: { level: 'info' } }, undefined, { logStream: { write: (line: string) => { logs.push(line) } } })
  return {
    issuer,
    ctx,
    logs,
    call: async (token) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${token}` } }),
    sign: async (key, claims, header) => await new SignJWT({ iss: issuer, ...claims }).setProtectedHeader(header as { alg: string }).sign(key.privateKey),
    users: async () => (await ctx.app.inject({ method: 'GET', url: '/api/users?source=sso&sort=id', headers: ctx.auth(ctx.adminToken) })).json().data
  }
}

const now = (): number => Math.floor(Date.now() / 1000)

t.test('Entra ID version 1.0 tokens: issuer https://sts.windows.net/<tenant>/ with its trailing slash, discovered; an application\'s token and a person\'s', async (t) => {
  const tenant = '9122040d-6c67-4c5b-b112-36a304b66dad'
  // Entra ID's keys carry x5t and x5c beside n and e; its tokens name the key in kid and (v1.0) x5t
  const kid = 'nOo3ZDrODXEK1jKWhXslHR_KXEg'
  const key = await newKey('RS256', { kty: 'RSA', use: 'sig', kid, x5t: kid })
  const p = await setup(t, {
    issuerPath: `/${tenant}/`,
    published: [key.jwk],
    sso: { audience: ['6e74172b-be56-4843-9ff4-e66a39bb12e3', 'api://picking-gateway'], typeClaim: 'roles', typeMap: { 'Gateway.Admin': 'admin', 'Gateway.User': 'user', 'Gateway.Application': 'application' }, usernameClaim: ['upn', 'unique_name', 'appid'] }
  })
  t.equal(p.issuer.at(-1), '/', 'the issuer ends in a slash, as Entra ID\'s version 1.0 issuer does')
  const header = { typ: 'JWT', alg: 'RS256', x5t: kid, kid }
  const common = { aud: 'api://picking-gateway', tid: tenant, idp: `https://sts.windows.net/${tenant}/`, iat: now() - 300, nbf: now() - 300, exp: now() + 3600, ver: '1.0', aio: 'E2ZgYJgz', uti: 'kzp9xQ', rh: '0.AAAA' }
  // client credentials: appid names the client, oid and sub its service principal, roles the application permissions
  const app = await p.sign(key, { ...common, appid: '2d4d11a2-f814-46a7-890a-274a72a7309e', appidacr: '1', oid: 'f6a1ac4e-7e5c-4a1b-8d4b-6f1e7c3e9a11', sub: 'f6a1ac4e-7e5c-4a1b-8d4b-6f1e7c3e9a11', roles: ['Gateway.Application'] }, header)
  t.equal((await p.call(app)).statusCode, 200, 'the application\'s token')
  // a person: upn and unique_name, scp, sub pairwise for the API
  const person = await p.sign(key, { ...common, appid: '04b07795-8ddb-461a-bbee-02f9e1bf7b46', appidacr: '0', amr: ['pwd', 'mfa'], family_name: 'Doe', given_name: 'Jane', name: 'Jane Doe', oid: '00000000-0000-0000-66f3-3332eca7ea81', upn: 'Jane.Doe@contoso.com', unique_name: 'Jane.Doe@contoso.com', scp: 'user_impersonation', sub: 'l3_roISQU222bULS9yi2k0XpqpOiMz5H3ZACo1GeXA', roles: ['Gateway.User'] }, header)
  t.equal((await p.call(person)).statusCode, 200, 'the person\'s token')
  t.match(await p.users(), [{ username: '2d4d11a2-f814-46a7-890a-274a72a7309e', type: 'application', source: 'sso' }, { username: 'jane.doe@contoso.com', type: 'user', source: 'sso' }], 'named by appid and upn, typed by roles')
})

t.test('AD FS 2019: issuer http://<host>/adfs/services/trust with a jwksUri, aud microsoft:identityserver:…, a role claim named by its URI, upn and unique_name', async (t) => {
  const ROLE = 'http://schemas.microsoft.com/ws/2008/06/identity/claims/role'
  const kid = 'Zi8gJ2vF-0oTVSa6TmFVBDNU6ko'
  const key = await newKey('RS256', { kty: 'RSA', use: 'sig', alg: 'RS256', kid, x5t: kid })
  const p = await setup(t, {
    issuerPath: '/adfs/services/trust',
    published: [key.jwk],
    discovery: false,
    sso: { audience: 'microsoft:identityserver:picking-gateway', typeClaim: ROLE, typeMap: { 'Gateway Users': 'user', 'Gateway Admins': 'admin' }, usernameClaim: ['upn', 'unique_name'] }
  })
  const header = { typ: 'JWT', alg: 'RS256', x5t: kid, kid }
  const common = { aud: 'microsoft:identityserver:picking-gateway', iat: now(), nbf: now(), exp: now() + 3600, apptype: 'Confidential', appid: 'a1b2c3d4-erp', authmethod: 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport', auth_time: new Date().toISOString(), ver: '1.0', scp: 'openid' }
  t.equal((await p.call(await p.sign(key, { ...common, sub: 'Rl7sOj0nDbgh8BVWZegrkvgAKaB/SwNuEbmORcWcae4=', upn: 'john.doe@contoso.com', unique_name: 'CONTOSO\\JohnDoe', [ROLE]: ['Domain Users', 'Gateway Admins'] }, header))).statusCode, 200, 'several roles, one mapped')
  t.equal((await p.call(await p.sign(key, { ...common, sub: 'qF0RWOmQ3bTOtb3TzMrvXLuZ/pB3e9tyl7mOgQYwhXc=', unique_name: 'CONTOSO\\MaxMuster', [ROLE]: 'Gateway Users' }, header))).statusCode, 200, 'one role as a string, no upn')
  t.match(await p.users(), [{ username: 'john.doe@contoso.com', type: 'admin' }, { username: 'contoso\\maxmuster', type: 'user' }])
})

t.test('Keycloak: an enc key beside the sig keys, an ES256 key, aud a list, client roles, clock skew of a few seconds', async (t) => {
  const rsa = await newKey('RS256', { kty: 'RSA', use: 'sig', alg: 'RS256', kid: 'Kw1vrM5Lq3pDi0-RZ1DKn0wFmQ5aaAFo-SbSHj3FdSs' })
  const enc = await newKey('RSA-OAEP', { kty: 'RSA', use: 'enc', alg: 'RSA-OAEP', kid: '5Rr0Yp3hkxfTTH0cgsvHk-7bzmmOjkYo9dHBnMMUJ0s' })
  const ec = await newKey('ES256', { kty: 'EC', use: 'sig', alg: 'ES256', kid: 'O6kH7r3P0vVpRzAJgC8x9Z1JvN3TqfXbB2eRZl0Ywq4' })
  const p = await setup(t, {
    issuerPath: '/realms/warehouse',
    // the encryption key first, as Keycloak lists rsa-enc-generated before rsa-generated
    published: [enc.jwk, rsa.jwk, ec.jwk],
    advertised: ['PS384', 'ES384', 'RS384', 'HS256', 'HS512', 'ES256', 'RS256', 'HS384', 'ES512', 'PS256', 'PS512', 'RS512', 'EdDSA'],
    sso: { audience: 'picking-gateway', typeClaim: 'resource_access.picking-gateway.roles', typeMap: { 'gateway-user': 'user', 'gateway-app': 'application' } }
  })
  const service = (sub: string, at: number) => ({ exp: at + 300, iat: at, jti: `trrtcc:${sub}`, aud: ['picking-gateway', 'account'], sub, typ: 'Bearer', azp: 'erp', acr: '1', 'allowed-origins': ['/*'], realm_access: { roles: ['offline_access', 'default-roles-warehouse'] }, resource_access: { 'picking-gateway': { roles: ['gateway-app'] }, account: { roles: ['manage-account', 'view-profile'] } }, scope: 'profile email', clientHost: '10.0.0.7', email_verified: false, preferred_username: `service-account-${sub.slice(-4)}`, clientAddress: '10.0.0.7', client_id: 'erp' })
  t.equal((await p.call(await p.sign(rsa, service('0c1e5f1a-1111', now()), { alg: 'RS256', typ: 'JWT', kid: rsa.jwk.kid }))).statusCode, 200, 'RS256, the enc key beside it')
  t.equal((await p.call(await p.sign(ec, service('0c1e5f1a-2222', now()), { alg: 'ES256', typ: 'JWT', kid: ec.jwk.kid }))).statusCode, 200, 'ES256')
  t.equal((await p.call(await p.sign(rsa, service('0c1e5f1a-3333', now() + 5), { alg: 'RS256', typ: 'JWT', kid: rsa.jwk.kid }))).statusCode, 200, 'issued 5 s ahead of the gateway\'s clock')
  t.match((await p.call(await p.sign(rsa, { ...service('0c1e5f1a-4444', now() - 305), exp: now() - 5 }, { alg: 'RS256', typ: 'JWT', kid: rsa.jwk.kid }))).json(), { statusCode: 401, code: 'TOKEN_EXPIRED' }, 'expired 5 s ago by the gateway\'s clock: no skew on exp, as the README says')
  t.equal((await p.users()).length, 3, 'a row for each service account')
})
