// Key sets shaped as providers other than oidc-provider publish them: a kid given to two keys, keys
// without kid. Served by a plain HTTP server with a configured jwksUri (no discovery), tokens signed here.
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose'
import t, { type Test } from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { build } from '../helpers/build.js'
import type { Config } from '../../src/config.js'

const AUDIENCE = 'https://gateway.test/api'

interface Key { privateKey: CryptoKey, jwk: JWK }

async function rsaKey (members: JWK = {}): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  return { privateKey, jwk: { ...await exportJWK(publicKey), use: 'sig', ...members } }
}

/** A provider that is only a key set: the tests choose what it publishes. */
async function setup (t: Test, published: () => JWK[]): Promise<{ call: (token: string) => Promise<LightMyRequestResponse>, sign: (key: Key, claims: Record<string, unknown>, kid?: string) => Promise<string>, logs: string[] }> {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: published() }))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/idp`
  const logs: string[] = []
  const sso: Partial<Config['auth']['sso'][number]> = { id: 'keys', issuer, audience: AUDIENCE, jwksUri: `${issuer}/keys`, algorithms: ['RS256'], typeMap: { 'gateway-user': 'user' }, timeoutMs: 1000 }
  const ctx = await build(t, { auth: { sso: [sso as Config['auth']['sso'][number]], revocationCacheMs: 0 }, logging: { level: 'info' } }, undefined, { logStream: { write: (line: string) => { logs.push(line) } } })
  let n = 0
  return {
    call: async (token) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${token}` } }),
    sign: async (key, claims, kid) => {
      const now = Math.floor(Date.now() / 1000)
      return await new SignJWT({ iss: issuer, aud: AUDIENCE, sub: `s-${++n}`, preferred_username: `person-${n}`, roles: ['gateway-user'], iat: now, exp: now + 300, ...claims })
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(kid === undefined ? {} : { kid }) }).sign(key.privateKey)
    },
    logs
  }
}

t.test('several keys fit a token\'s header (its kid twice, or no kid): the one whose signature verifies is used', async (t) => {
  const first = await rsaKey({ kid: 'signing' })
  const second = await rsaKey({ kid: 'signing' })
  const [plain1, plain2] = [await rsaKey(), await rsaKey()]
  const { call, sign, logs } = await setup(t, () => [first.jwk, second.jwk])
  t.equal((await call(await sign(first, {}, 'signing'))).statusCode, 200, 'the first key of the kid')
  t.equal((await call(await sign(second, {}, 'signing'))).statusCode, 200, 'the second key of the same kid')
  const stranger = await rsaKey()
  t.equal((await call(await sign(stranger, {}, 'signing'))).statusCode, 401, 'a key neither of them is: still refused')
  t.match(logs.join('\n'), /signature verification failed/, 'as a signature that does not verify')
  const expired = await call(await sign(second, { iat: Math.floor(Date.now() / 1000) - 600, exp: Math.floor(Date.now() / 1000) - 60 }, 'signing'))
  t.match(expired.json(), { code: 'TOKEN_EXPIRED' }, 'the key that verifies decides what else is wrong')

  const { call: callNoKid, sign: signNoKid } = await setup(t, () => [plain1.jwk, plain2.jwk])
  t.equal((await callNoKid(await signNoKid(plain1, {}))).statusCode, 200, 'no kid anywhere, first key')
  t.equal((await callNoKid(await signNoKid(plain2, {}))).statusCode, 200, 'no kid anywhere, second key')
})
