// Key sets shaped as providers other than oidc-provider publish them: a kid given to two keys, keys
// without kid, keys carried only as a certificate (x5c). Served by a plain HTTP server with a
// configured jwksUri (no discovery), tokens signed here.
import { execFileSync } from 'node:child_process'
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { exportJWK, generateKeyPair, importPKCS8, SignJWT, type CryptoKey, type JWK } from 'jose'
import t, { type Test } from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { build } from '../helpers/build.js'
import { tempDir } from '../helpers/temp.js'
import type { Config } from '../../src/config.js'

const AUDIENCE = 'https://gateway.test/api'

interface Key { privateKey: CryptoKey, jwk: JWK }

async function rsaKey (members: JWK = {}, alg = 'RS256'): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  return { privateKey, jwk: { ...await exportJWK(publicKey), use: 'sig', ...members } }
}

/** A provider that is only a key set: the tests choose what it publishes. */
async function setup (t: Test, published: () => JWK[], timing?: { jwksCooldownMs?: number, jwksMaxAgeMs?: number }): Promise<{ call: (token: string) => Promise<LightMyRequestResponse>, sign: (key: Key, claims: Record<string, unknown>, kid?: string, alg?: string) => Promise<string>, logs: string[] }> {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: published() }))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/idp`
  const logs: string[] = []
  const sso: Partial<Config['auth']['sso'][number]> = { id: 'keys', issuer, audience: AUDIENCE, jwksUri: `${issuer}/keys`, algorithms: ['RS256'], typeMap: { 'gateway-user': 'user' }, timeoutMs: 5000 }
  const ctx = await build(t, { auth: { sso: [sso as Config['auth']['sso'][number]], revocationCacheMs: 0 }, logging: { level: 'info' } }, undefined, { logStream: { write: (line: string) => { logs.push(line) } }, timing })
  let n = 0
  return {
    call: async (token) => await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${token}` } }),
    sign: async (key, claims, kid, alg = 'RS256') => {
      const now = Math.floor(Date.now() / 1000)
      return await new SignJWT({ iss: issuer, aud: AUDIENCE, sub: `s-${++n}`, preferred_username: `person-${n}`, roles: ['gateway-user'], iat: now, exp: now + 300, ...claims })
        .setProtectedHeader({ alg, typ: 'JWT', ...(kid === undefined ? {} : { kid }) }).sign(key.privateKey)
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

t.test('a key published only as a certificate (x5c, no n and e) verifies its tokens', async (t) => {
  const dir = tempDir(t, 'pg-x5c-')
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', '/CN=ADFS Signing'], { stdio: 'ignore' })
  const cert = new X509Certificate(readFileSync(join(dir, 'cert.pem')))
  const x5t = createHash('sha1').update(cert.raw).digest('base64url')
  const key: Key = {
    privateKey: await importPKCS8(createPrivateKey(readFileSync(join(dir, 'key.pem'))).export({ type: 'pkcs8', format: 'pem' }) as string, 'RS256'),
    jwk: { kty: 'RSA', use: 'sig', kid: x5t, x5t, x5c: [cert.raw.toString('base64')] }
  }
  const enc = await rsaKey({ kid: 'enc', use: 'enc', alg: 'RSA-OAEP' })
  const { call, sign } = await setup(t, () => [enc.jwk, key.jwk])
  t.equal((await call(await sign(key, {}, x5t))).statusCode, 200, 'the certificate\'s key checks the signature')
  const other = await rsaKey()
  t.equal((await call(await sign(other, {}, x5t))).statusCode, 401, 'and refuses another key\'s')
})

t.test('a provider that signs with an algorithm not accepted: 401, and the log names its alg and the accepted ones', async (t) => {
  const key = await rsaKey({ kid: 'rs384' }, 'RS384')
  const { call, sign, logs } = await setup(t, () => [key.jwk])
  t.equal((await call(await sign(key, {}, 'rs384', 'RS384'))).statusCode, 401)
  t.match(logs.join('\n'), /its alg is RS384, the accepted ones RS256 \(auth\.sso algorithms\)/, 'what to add to algorithms')
})

t.test('a system clock set back (NTP) holds back no refetch of the keys: a new kid after the cooldown is fetched, not refused for as long as the clock went back', async (t) => {
  const first = await rsaKey({ kid: 'first' })
  const second = await rsaKey({ kid: 'second' })
  let published = [first.jwk]
  const { call, sign } = await setup(t, () => published, { jwksCooldownMs: 200 })
  // the gateway's clock is an hour ahead when the keys are fetched (jose and the provider keep the true time)
  const realNow = Date.now
  Date.now = () => realNow() + 3600 * 1000
  t.teardown(() => { Date.now = realNow })
  t.equal((await call(await sign(first, { exp: Math.floor(realNow() / 1000) + 7200 }, 'first'))).statusCode, 200, 'the keys are fetched')
  // NTP sets it back; the provider rotates: a new key, past the cooldown
  Date.now = realNow
  published = [first.jwk, second.jwk]
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal((await call(await sign(second, {}, 'second'))).statusCode, 200, 'the new kid is fetched (before: 401 until the clock came back to the last fetch plus the cooldown, an hour)')
})

t.test('a system clock set back (NTP) keeps no checked token past the keys\' age: a token of a key the provider withdrew is refused as soon as without the step, not until its exp', async (t) => {
  const first = await rsaKey({ kid: 'first' })
  const second = await rsaKey({ kid: 'second' })
  let published = [first.jwk]
  const { call, sign } = await setup(t, () => published, { jwksCooldownMs: 100, jwksMaxAgeMs: 300 })
  // the gateway's clock is an hour ahead when the token is checked (jose and the provider keep the true time)
  const realNow = Date.now
  Date.now = () => realNow() + 3600 * 1000
  t.teardown(() => { Date.now = realNow })
  const token = await sign(first, { exp: Math.floor(realNow() / 1000) + 7200 }, 'first')
  t.equal((await call(token)).statusCode, 200, 'checked with the first key')
  // NTP sets it back; the provider withdraws the key
  Date.now = realNow
  published = [second.jwk]
  await new Promise((resolve) => setTimeout(resolve, 400))
  // past the keys' age: checked again, with the keys in use, which are fetched anew meanwhile
  await call(token)
  let status = 200
  for (let i = 0; i < 20 && status === 200; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    status = (await call(token)).statusCode
  }
  t.equal(status, 401, 'the withdrawn key\'s token is refused once the keys are fetched again (before: 200 from the checked tokens until the clock came back to their check plus the age, an hour, or the token\'s exp)')
})
