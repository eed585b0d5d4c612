// /api/users/sso/<id>: browser login at an identity provider (authorization code + PKCE, state, nonce), ending in the gateway's own token pair.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import * as client from 'openid-client'
import { errorResponses } from '../../schemas/common.js'
import { LoginResponse } from '../../schemas/users.js'
import { describeError, SsoError, type SsoProvider } from '../../src/auth/sso.js'
import { addressKey } from '../../src/auth/throttle.js'
import type { Id } from '../../src/db/repository.js'
import { NotFoundError } from '../../src/db/errors.js'
import { badRequest, clientRefused, forbidden, ssoUnavailable } from '../../src/errors.js'

export interface SsoRoutesOptions {
  loginAttemptsPerAddress: number
  loginAddressWindowMs: number
  /** how long a started login may take until its callback (default 10 minutes) */
  stateTtlMs?: number
  /** pending logins kept at most (default MAX_PENDING) */
  maxPending?: number
}

/**
 * What the login remembers for its callback; the key is the state, used once. `browser` is the
 * SHA-256 of the value of the cookie the login set: only the browser that holds it completes the login.
 */
interface Pending { provider: string, codeVerifier: string, nonce: string, expires: number, address: string, browser: Buffer }

/**
 * Pending logins of one browser that keep their cookie: a new login ends the oldest beyond these. Each
 * cookie is about 72 bytes and lives the login's 10 minutes; without a bound some 110 logins abandoned
 * in that time (a user who starts over and over at a provider that fails) pass a proxy's 8 KB header
 * limit (nginx's default) and the browser can no longer reach the site. Logins in a few tabs still complete.
 */
export const MAX_BROWSER_LOGINS = 5

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest()

/**
 * The name of a pending login's cookie, from its state (which the callback brings back): one cookie
 * per login, so logins started in two tabs of one browser do not overwrite each other's.
 */
export const loginCookieName = (state: string): string => `sso-login-${sha256(state).subarray(0, 12).toString('base64url')}`

/**
 * The cookies of a Cookie header as [name, value], in its order (RFC 6265 5.4: `name=value` pairs joined
 * by `;`; a value may be quoted, RFC 6265 4.1.1). A name comes twice when the browser holds it for two paths.
 */
function cookiePairs (header: string | undefined): Array<[string, string]> {
  if (header === undefined) return []
  const pairs: Array<[string, string]> = []
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=')
    if (at === -1) continue
    const value = pair.slice(at + 1).trim()
    pairs.push([pair.slice(0, at).trim(), value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value])
  }
  return pairs
}

/** The values of the cookie `name` in a Cookie header (several when the browser holds it for two paths). */
export function cookieValues (header: string | undefined, name: string): string[] {
  return cookiePairs(header).filter(([n]) => n === name).map(([, value]) => value)
}

/** Token-endpoint errors (RFC 6749 5.2) that blame the gateway's client, not the person signing in. */
const CLIENT_REFUSED = new Set(['invalid_client', 'unauthorized_client'])

/**
 * The token endpoint's error when it refused the gateway's own client, else undefined. RFC 6749 5.2
 * keeps 401 for a client that failed to authenticate, whatever the error says: Auth0 answers a wrong
 * client secret with 401 access_denied, and a 401 with WWW-Authenticate (which the RFC requires where
 * the client sent Basic credentials, and some servers always add) is a challenge to openid-client.
 */
function clientRefusal (err: unknown): string | undefined {
  if (err instanceof client.ResponseBodyError && (CLIENT_REFUSED.has(err.error) || err.status === 401)) return err.error
  if (err instanceof client.WWWAuthenticateChallengeError && err.status === 401) return 'a 401 with a WWW-Authenticate challenge'
  return undefined
}

/**
 * The HTTP status of a server error (5xx) the token endpoint answered, else undefined: a provider
 * that is overloaded or restarting (500 server_error, 503 temporarily_unavailable) or a proxy before
 * it (502, 504). openid-client gives it as a ResponseBodyError's status when the body is an OAuth
 * error, else as the status of the response it puts in the error's cause.
 */
function serverError (err: unknown): number | undefined {
  const status = err instanceof client.ResponseBodyError ? err.status : (err as { cause?: { status?: unknown } } | undefined)?.cause?.status
  return typeof status === 'number' && status >= 500 && status <= 599 ? status : undefined
}

/**
 * Pending logins kept at most. Beyond it, the oldest of the address (an IPv6 client's /64) that holds
 * the most is dropped: a flood from many addresses (each within its rate limit) then drops its own
 * logins, not the one or two a person's browser has pending (dropping the oldest overall gave a
 * person's login a few seconds under a flood from some thousands of addresses).
 */
export const MAX_PENDING = 10000

const Params = Type.Object({ id: Type.String({ minLength: 1, maxLength: 32, description: 'the provider id from auth.sso' }) })

const CallbackQuery = Type.Object({
  state: Type.Optional(Type.String({ maxLength: 1024 })),
  code: Type.Optional(Type.String({ maxLength: 4096 })),
  iss: Type.Optional(Type.String({ maxLength: 1024 })),
  error: Type.Optional(Type.String({ maxLength: 256 })),
  error_description: Type.Optional(Type.String({ maxLength: 4096 }))
}, { additionalProperties: true, description: 'as the identity provider sends it (RFC 6749 4.1.2; RFC 9207 iss)' })

const sso: FastifyPluginAsyncTypebox<SsoRoutesOptions> = async (fastify, opts) => {
  const ttl = opts.stateTtlMs ?? 600000
  const maxPending = opts.maxPending ?? MAX_PENDING
  const pending = new Map<string, Pending>()
  /** the state of each pending login by its cookie's name (without __Host-) */
  const byCookie = new Map<string, string>()
  /** how many pending logins each address holds */
  const held = new Map<string, number>()
  const forget = (state: string): Pending | undefined => {
    const entry = pending.get(state)
    if (entry === undefined) return undefined
    pending.delete(state)
    byCookie.delete(loginCookieName(state))
    const n = (held.get(entry.address) ?? 1) - 1
    if (n === 0) held.delete(entry.address)
    else held.set(entry.address, n)
    return entry
  }
  const keep = (state: string, entry: Pending): void => {
    pending.set(state, entry)
    byCookie.set(loginCookieName(state), state)
    held.set(entry.address, (held.get(entry.address) ?? 0) + 1)
  }
  /** Room for one more: the expired go, then (all of them still open) the oldest of the address holding the most. */
  const makeRoom = (now: number): void => {
    for (const [state, entry] of pending) {
      if (entry.expires > now) break // insertion order: the rest are younger
      forget(state)
    }
    if (pending.size < maxPending) return
    let most: string | undefined
    let count = 0
    for (const [address, n] of held) if (n > count) { most = address; count = n }
    for (const [state, entry] of pending) {
      if (entry.address === most) { forget(state); return }
    }
  }
  const rateLimit = { max: opts.loginAttemptsPerAddress, timeWindow: opts.loginAddressWindowMs }

  function browserProvider (id: string): SsoProvider {
    const provider = fastify.auth.sso.byId.get(id)
    if (provider === undefined || provider.config.clientId === undefined || provider.config.redirectUri === undefined) {
      throw new NotFoundError(`No identity provider '${id}' with browser login is configured (auth.sso with clientId and redirectUri)`)
    }
    return provider
  }

  /** The browser reached the gateway over HTTPS, itself or through a trusted proxy's X-Forwarded-Proto (in any case). */
  const overHttps = (request: { protocol: string }): boolean => request.protocol.toLowerCase() === 'https'

  /**
   * The name of a pending login's cookie as this request sees it: over HTTPS with the __Host- prefix, which
   * a browser takes only from this very host (Secure, Path=/, no Domain), so that a sibling host
   * (evil.example.com beside gateway.example.com) cannot plant a cookie of its own login for the
   * gateway's callback (cookie tossing) and so sign a person into its account.
   */
  const cookieName = (request: { protocol: string }, state: string): string => `${overHttps(request) ? '__Host-' : ''}${loginCookieName(state)}`

  /**
   * The Set-Cookie of a pending login (maxAge 0: clears it). Lax, as the provider sends the browser back
   * with a top-level GET. Over HTTPS: __Host-, Secure and Path=/ (the prefix asks for both); over plain
   * HTTP (a browser refuses Secure there): the redirect URI's path up to /api/users/sso/ (behind a proxy
   * that adds a prefix, the prefix too).
   */
  function loginCookie (provider: SsoProvider, request: { protocol: string }, state: string, value: string, maxAge: number): string {
    const callback = new URL(provider.config.redirectUri!).pathname
    const path = overHttps(request) ? '/' : callback.slice(0, callback.length - `${provider.id}/callback`.length)
    return `${cookieName(request, state)}=${value}; Max-Age=${maxAge}; Path=${path}; HttpOnly; SameSite=Lax${overHttps(request) ? '; Secure' : ''}`
  }

  async function configuration (provider: SsoProvider, log: typeof fastify.log): Promise<client.Configuration> {
    try {
      return await provider.configuration()
    } catch (err) {
      if (!(err instanceof SsoError)) throw err
      log.warn({ provider: provider.id, reason: err.message }, 'identity provider unreachable for a browser login')
      throw ssoUnavailable(provider.id)
    }
  }

  fastify.get('/:id/login', {
    config: { auth: 'none', rateLimit, logQuery: false, anyQuery: true },
    schema: {
      summary: 'Start a browser login at an identity provider: redirects there (authorization code with PKCE)',
      operationId: 'startBrowserLogin',
      description: 'Sets a cookie for this login (sso-login-…, HttpOnly, SameSite=Lax, Path /api/users/sso/; over HTTPS __Host-sso-login-…, Secure, Path /) that its callback needs: only the browser that started the login completes it. ' +
        `A browser keeps ${MAX_BROWSER_LOGINS} pending logins at most: a new one ends its oldest others (those whose cookies it sends) and clears their cookies. ` +
        '400 for an id longer than 32 characters (VALIDATION_ERROR) or a path that does not decode (BAD_URL). ' +
        'An id holding ? or # must be percent-encoded: sent as it is, the path ends before it, at /api/users/sso, which is a user\'s record and answers 401 TOKEN_MISSING.',
      tags: ['auth'],
      security: [],
      params: Params,
      response: { 302: Type.Null({ description: 'Location: the provider\'s authorization endpoint' }), ...errorResponses(400, 401, 404, 429, 503) }
    }
  }, async (request, reply) => {
    const provider = browserProvider(request.params.id)
    const config = await configuration(provider, request.log)
    const now = Date.now()
    makeRoom(now)
    const codeVerifier = client.randomPKCECodeVerifier()
    const state = client.randomState()
    const nonce = client.randomNonce()
    // binds the login to this browser (RFC 9700 4.7.1): whoever else holds the callback URL cannot complete it
    const browser = randomBytes(32).toString('base64url')
    keep(state, { provider: provider.id, codeVerifier, nonce, expires: now + ttl, address: addressKey(request.ip), browser: sha256(browser) })
    reply.header('set-cookie', loginCookie(provider, request, state, browser, Math.max(1, Math.ceil(ttl / 1000))))
    // This browser's other pending logins (the cookies it sent, with their values) beyond MAX_BROWSER_LOGINS - 1:
    // the oldest end, their cookies cleared, so that abandoned logins do not pile up in its Cookie header.
    const host = overHttps(request) ? '__Host-' : ''
    const mine: Array<[string, Pending]> = []
    for (const [name, value] of cookiePairs(request.headers.cookie)) {
      if (!name.startsWith(`${host}sso-login-`)) continue
      const other = byCookie.get(name.slice(host.length))
      const entry = other === undefined ? undefined : pending.get(other)
      if (entry === undefined || other === state || mine.some(([known]) => known === other)) continue
      if (timingSafeEqual(sha256(value), entry.browser)) mine.push([other!, entry])
    }
    mine.sort(([, a], [, b]) => a.expires - b.expires)
    for (const [other, entry] of mine.slice(0, Math.max(0, mine.length - (MAX_BROWSER_LOGINS - 1)))) {
      forget(other)
      reply.header('set-cookie', loginCookie(fastify.auth.sso.byId.get(entry.provider) ?? provider, request, other, '', 0))
    }
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: provider.config.redirectUri!,
      scope: provider.config.scope,
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce
    })
    return reply.header('cache-control', 'no-store').redirect(url.href, 302)
  })

  fastify.get('/:id/callback', {
    config: { auth: 'none', rateLimit, logQuery: false },
    schema: {
      summary: 'Where the identity provider sends the browser back: the same answer as POST /api/users/login',
      operationId: 'finishBrowserLogin',
      description: '400 SSO_STATE_INVALID for an unknown, used or expired state, or without the cookie that the login set in the browser that started it. Clears that cookie when it ends the login (completed, refused, expired), not on a 503 that keeps the login open, nor for a state it does not find (used, or being completed by another callback) or a browser without the login\'s cookie.',
      tags: ['auth'],
      security: [],
      params: Params,
      querystring: CallbackQuery,
      response: { 200: LoginResponse, ...errorResponses(400, 401, 403, 404, 409, 429, 503) }
    }
  }, async (request, reply) => {
    const provider = browserProvider(request.params.id)
    const { state } = request.query
    // The login's cookie is cleared by the callback that ends the login (completed, refused, expired), but a
    // 503 that keeps it open; not by one that finds no login (a reload while the first callback is still at
    // the provider: that one may yet answer a 503 whose retry needs the cookie) or comes from another browser.
    const clearCookie = (): void => { reply.header('set-cookie', loginCookie(provider, request, state!, '', 0)) }
    const entry = state === undefined ? undefined : pending.get(state)
    const now = Date.now()
    if (entry !== undefined && entry.expires <= now) {
      forget(state!)
      clearCookie()
    }
    if (entry === undefined || entry.expires <= now) {
      request.log.info({ provider: provider.id }, 'browser login callback with an unknown, used or expired state')
      throw badRequest(`The login state is unknown, used or expired; start again at /api/users/sso/${provider.id}/login`, 'SSO_STATE_INVALID')
    }
    // Only the browser that started the login completes it: another one's callback (a callback URL that
    // leaked, or one an attacker makes a victim's browser open to sign it into the attacker's account)
    // changes nothing, and the login stays open for its own browser.
    const presented = cookieValues(request.headers.cookie, cookieName(request, state!))
    if (!presented.some((value) => timingSafeEqual(sha256(value), entry.browser))) {
      request.log.info({ provider: provider.id, cookie: presented.length > 0 }, 'browser login callback from another browser than the one that started the login')
      throw badRequest(`This login was not started in this browser (or its cookie is gone): the callback must come back to the browser that started the login, at the address of the redirect URI; start again at /api/users/sso/${provider.id}/login`, 'SSO_STATE_INVALID')
    }
    // Used once, whatever happens next (but a provider that cannot be asked): a replayed callback finds nothing.
    forget(state!)
    clearCookie()
    if (entry.provider !== provider.id) {
      request.log.info({ provider: provider.id }, 'browser login callback with an unknown, used or expired state')
      throw badRequest(`The login state is unknown, used or expired; start again at /api/users/sso/${provider.id}/login`, 'SSO_STATE_INVALID')
    }
    // The provider could not be asked: the login was not completed, so the browser may come back with
    // the same callback (the 503's Retry-After) instead of starting again, with its cookie kept.
    const unavailable = (err: unknown): never => {
      if (!pending.has(state!)) keep(state!, entry)
      reply.removeHeader('set-cookie')
      throw err
    }
    const config = await configuration(provider, request.log).catch(unavailable)
    // The URL the provider redirected to, as registered (not the Host header, which a proxy may change).
    const current = new URL(provider.config.redirectUri!)
    current.search = request.url.slice(request.url.indexOf('?'))
    let claims
    let idToken: string | undefined
    try {
      const tokens = await client.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: entry.codeVerifier,
        expectedState: state,
        expectedNonce: entry.nonce,
        idTokenExpected: true
      })
      claims = tokens.claims()
      idToken = tokens.id_token
    } catch (err) {
      const refusal = clientRefusal(err)
      if (refusal !== undefined) {
        // The gateway's own client was refused (a wrong or expired client secret, a client id the
        // provider does not know): no browser login works until the administrator fixes it.
        request.log.warn({ provider: provider.id, error: refusal }, 'the identity provider refused the gateway\'s client at its token endpoint: check auth.sso clientId and the client secret')
        throw clientRefused(provider.id)
      }
      const status = serverError(err)
      if (status !== undefined) {
        // The provider (or a proxy before it) could not serve the token request now: not the person's
        // fault, and the code was not taken, so the same callback completes the login once it is back.
        request.log.warn({ provider: provider.id, reason: describeError(err) }, 'identity provider unreachable for a browser login')
        unavailable(ssoUnavailable(provider.id))
      }
      if (err instanceof client.AuthorizationResponseError || err instanceof client.ResponseBodyError) {
        request.log.info({ provider: provider.id, error: err.error }, 'browser login refused by the identity provider')
        throw badRequest(`The identity provider refused the login (${err.error}); start again at /api/users/sso/${provider.id}/login`, 'SSO_LOGIN_FAILED')
      }
      const reason = describeError(err)
      const timeout = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError' || (err as { code?: string }).code === 'OAUTH_TIMEOUT')
      if (timeout || (err instanceof TypeError && /fetch failed/.test(err.message))) {
        request.log.warn({ provider: provider.id, reason }, 'identity provider unreachable for a browser login')
        unavailable(ssoUnavailable(provider.id))
      }
      request.log.warn({ provider: provider.id, reason }, 'browser login response refused')
      throw badRequest(`The identity provider's answer did not pass the checks; start again at /api/users/sso/${provider.id}/login`, 'SSO_LOGIN_FAILED')
    }
    if (claims === undefined || idToken === undefined) throw badRequest('The identity provider sent no ID token', 'SSO_LOGIN_FAILED')
    // Its signature too, not only trusted for arriving over TLS; with the keys access tokens are checked
    // with, so several keys under its kid or a key set the provider cannot give (503) are handled as
    // for its access tokens. The code is used up by now: a 503 cannot keep the login open.
    try {
      await provider.verify(idToken, { clientId: provider.config.clientId! })
    } catch (err) {
      if (!(err instanceof SsoError)) throw err
      if (err.unavailable) {
        request.log.warn({ provider: provider.id, reason: err.message }, 'identity provider unreachable for a browser login')
        throw ssoUnavailable(provider.id)
      }
      request.log.warn({ provider: provider.id, reason: err.message }, 'browser login response refused')
      // An ID token that passed every check but lacks the claim subjectClaim names: which one, as for an
      // access token (its holder learns nothing a forger could use); starting again gives one that lacks it too.
      if (err.callerMessage !== undefined) throw badRequest(`${err.callerMessage}: the ID token the identity provider sent at this login. Starting again gives the same answer; an administrator has to have the provider add the claim to its ID tokens, or change subjectClaim`, 'SSO_LOGIN_FAILED')
      throw badRequest(`The identity provider's answer did not pass the checks; start again at /api/users/sso/${provider.id}/login`, 'SSO_LOGIN_FAILED')
    }
    let user = await fastify.auth.ssoUser(provider, claims, request.log)
    // the person proved who they are at the provider: no password to keep secret, so say what stops them;
    // the log line as the bearer path's (plugins/auth.ts), where an operator asking why someone cannot sign in looks
    const disabled = (row: { id?: unknown, username?: unknown }) => {
      request.log.info({ provider: provider.id, user: row.id, username: row.username }, 'browser login refused: the gateway account of this identity is disabled (enable it to let it in)')
      return forbidden(`The gateway account '${String(row.username)}' is disabled; an administrator can enable it again`)
    }
    if (user.enabled !== true) throw disabled(user)
    // the row as the stamp left it, not the copy ssoUser may have had cached for auth.revocationCacheMs: a
    // disable or revocation made on another instance meanwhile would refuse tokens of that copy at once
    const stamp = async (row: typeof user) => await fastify.auth.recordLogin(row.id as Id, { lastLoginAt: new Date() }).catch((err: unknown) => {
      if (err instanceof NotFoundError) return null
      throw err
    })
    let stamped = await stamp(user)
    if (stamped === null) {
      // the row this instance had cached was deleted beside it (the picking system, another instance): made
      // again, as a bearer token of the identity makes it (not a 404 about users)
      fastify.auth.ssoRowGone(user)
      user = await fastify.auth.ssoUser(provider, claims, request.log)
      if (user.enabled !== true) throw disabled(user)
      stamped = await stamp(user)
    }
    user = stamped ?? user
    if (user.enabled !== true) throw disabled(user)
    reply.header('cache-control', 'no-store')
    return {
      login: true as const,
      accessToken: fastify.auth.issue(user, 'access'),
      refreshToken: fastify.auth.issue(user, 'refresh'),
      expiresIn: fastify.auth.accessTokenTtlSeconds
    }
  })
}

export default sso
