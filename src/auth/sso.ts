// OpenID Connect providers (auth.sso): discovery, signing keys and access-token checks with jose and openid-client; no Fastify here.
import { createHash, X509Certificate } from 'node:crypto'
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload, type JWTVerifyOptions } from 'jose'
import * as client from 'openid-client'
import { SSO_ALGORITHMS, type SsoProviderConfig } from '../../schemas/config.js'
import type { UserType } from '../../schemas/users.js'
import { isHttpsOrLoopback } from '../config.js'
import { forbidden } from '../errors.js'
import { storedUsername } from './passwords.js'
import { VerifiedTokens } from './verified-tokens.js'

/** The algorithms used when the configuration names none and the provider advertises none of them. */
const DEFAULT_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA']

/** Usernames are taken from the first of these claims that a token has. */
const DEFAULT_USERNAME_CLAIMS = ['preferred_username', 'upn', 'email']

/** An identity is keyed by the first of these claims that a token has. */
const DEFAULT_SUBJECT_CLAIMS = ['sub']

/** Claim names as the messages name them: 'a', 'b' */
const quoted = (names: readonly string[]): string => names.map((n) => `'${n}'`).join(', ')

/**
 * The hosts of Microsoft Entra ID's issuers: v2.0 (login.microsoftonline.com/<tenant>/v2.0, and the US
 * government's and 21Vianet's clouds) and v1.0 (sts.windows.net/<tenant>/, sts.chinacloudapi.cn). Its
 * `email` claim is the account's mail attribute, which Entra ID does not verify: only its optional claim
 * xms_edov (email domain owner verified) says the address's domain is the tenant's own.
 */
const ENTRA_ISSUER_HOSTS = new Set(['login.microsoftonline.com', 'login.microsoftonline.us', 'login.partner.microsoftonline.cn', 'sts.windows.net', 'sts.chinacloudapi.cn'])

/** At most this much skew is allowed for `nbf` (the provider's clock against ours). */
const NBF_SKEW_SECONDS = 60

/** The password-hash column of an SSO user holds this prefix: argon2 hashes start with `$argon2`, so it can never verify. */
export const SSO_MARKER_PREFIX = '!sso:'

/** When several claim values map to different types, the most privileged wins. */
const TYPE_RANK: Record<UserType, number> = { admin: 3, user: 2, application: 1 }

/** The column is 255 characters: a longer subject is stored as its SHA-256. */
const MARKER_MAX = 255

export type ProviderFetch = (url: string, init: RequestInit) => Promise<Response>

/** Why a token or a provider request failed; never carries the token. */
export class SsoError extends Error {
  /** the token was well signed but has expired */
  readonly expired: boolean
  /** the provider could not be reached or answered nonsense (the operator should know, not only the caller) */
  readonly unavailable: boolean
  /**
   * what the caller may learn instead of the fixed TOKEN_INVALID message: only for a token that passed
   * every check of its signature and claims, whose holder learns nothing a forger could use
   */
  readonly callerMessage?: string
  constructor (message: string, options: { expired?: boolean, unavailable?: boolean, callerMessage?: string, cause?: unknown } = {}) {
    super(message, { cause: options.cause })
    this.name = 'SsoError'
    this.expired = options.expired ?? false
    this.unavailable = options.unavailable ?? false
    if (options.callerMessage !== undefined) this.callerMessage = options.callerMessage
  }
}

/**
 * fetch for provider requests through HTTPS_PROXY / HTTP_PROXY unless NO_PROXY names the host
 * (on-premise servers often reach Entra ID only through a proxy). Node 20's own fetch ignores
 * those variables; undici's EnvHttpProxyAgent reads them (upper or lower case) when created.
 */
export function proxyFetch (): { fetch: ProviderFetch, close: () => Promise<void> } {
  // undici loads on the first provider request: about 20 MB resident that an installation
  // without single sign-on (the demo, most sites) does not need
  let loading: Promise<{ agent: import('undici').EnvHttpProxyAgent, fetch: typeof import('undici').fetch }> | undefined
  const load = async () => {
    const undici = await import('undici')
    return { agent: new undici.EnvHttpProxyAgent(), fetch: undici.fetch }
  }
  return {
    fetch: async (url, init) => {
      loading ??= load()
      const { agent, fetch } = await loading
      return await (fetch(url, { ...init as Parameters<typeof fetch>[1], dispatcher: agent }) as unknown as Promise<Response>)
    },
    // destroy, not close: close waits for requests under way, and one to a hanging provider would hold
    // the shutdown until its timeoutMs. At onClose the HTTP server is closed: no client waits for it.
    close: async () => {
      if (loading !== undefined) await (await loading).agent.destroy()
    }
  }
}

function ssoMarker (providerId: string, sub: string): string {
  const marker = `${SSO_MARKER_PREFIX}${providerId}:${sub}`
  return marker.length <= MARKER_MAX ? marker : `${SSO_MARKER_PREFIX}${providerId}:#${createHash('sha256').update(sub).digest('base64url')}`
}

export function isSsoMarker (passwordHash: unknown): boolean {
  return typeof passwordHash === 'string' && passwordHash.startsWith(SSO_MARKER_PREFIX)
}

/**
 * A claim by its name, or by a dotted path (Keycloak's realm_access.roles) when no claim has the whole
 * name. A step of the path may hold dots itself: Keycloak's client roles sit under the client id
 * (resource_access.<client>.roles), and a client id such as gateway.example.com has dots.
 */
function claimAt (claims: unknown, name: string): unknown {
  if (claims === null || typeof claims !== 'object') return undefined
  if (Object.hasOwn(claims, name)) return (claims as Record<string, unknown>)[name]
  for (let at = name.indexOf('.'); at !== -1; at = name.indexOf('.', at + 1)) {
    const head = name.slice(0, at)
    if (!Object.hasOwn(claims, head)) continue
    const value = claimAt((claims as Record<string, unknown>)[head], name.slice(at + 1))
    if (value !== undefined) return value
  }
  return undefined
}

export interface SsoIdentity {
  /** what the password-hash column of its user row holds */
  marker: string
  type: UserType
  /** normalized; or why there is none usable (only needed when the row is created) */
  username: { name: string } | { problem: string }
  displayName: string | null
  /** the token's iat in ms, when it has one: an older token may not set the type back (plugins/auth.ts) */
  issuedAt?: number
}

export interface SsoProviderOptions {
  fetch: ProviderFetch
  /** least time between two fetches of the key set (an unknown kid refetches at most this often) */
  jwksCooldownMs?: number
  /** a failed discovery, or a key set never fetched, is tried again after this long; requests in between fail at once */
  retryMs?: number
  /** keys older than this are fetched again on the next token (the cached ones stay in use if that fails) */
  jwksMaxAgeMs?: number
  /** what no request reports: a refetch of stale keys that failed while the old keys carried on */
  warn?: (fields: { provider: string }, message: string) => void
}

interface KeyParams { jwksUri: URL, algorithms: string[] }

type SsoClaims = JWTPayload

type KeyLookup = ReturnType<typeof createLocalJWKSet>

export class SsoProvider {
  readonly id: string
  readonly config: SsoProviderConfig
  private readonly fetch: ProviderFetch
  private readonly cooldownMs: number
  private readonly retryMs: number
  private readonly maxAgeMs: number
  private readonly warn: NonNullable<SsoProviderOptions['warn']>
  private discovery?: Promise<client.Configuration>
  private discoveryFailure?: { at: number, message: string }
  /** where the keys are and which algorithms they sign with: settled once known */
  private params?: KeyParams
  private keys?: KeyLookup
  /** when the keys were fetched, for the log (wall clock); the ages below are on the monotonic clock
   * (performance.now()), so that a system clock set back (NTP) holds no refetch back for as long */
  private keysAt = 0
  private keysFetchedAt = 0
  private keysAttemptedAt = Number.NEGATIVE_INFINITY
  /** the last fetch of the keys failed: a kid they lack may be one the provider has */
  private keysFailed = false
  private keysPending?: Promise<void>
  /** the claims that key the identity, choose its type and name its row, as configured (one or a list) */
  private readonly subjectClaims: string[]
  private readonly typeClaims: string[]
  private readonly usernameClaims: string[]
  /** Entra ID, known by its issuer's host: an `email` claim counts as verified only with xms_edov: true */
  private readonly entra: boolean
  /** key set requests made, for the log and the tests */
  jwksFetches = 0
  /**
   * Tokens checked here: until their exp, no longer than the keys are kept, and only while the key set
   * that checked them is the one in use, so that a key the provider withdrew stops working as soon as
   * it would without this (a refetch for a new kid finds it gone). A client sends the same token over
   * and over; checking its signature each time cost about 400 µs a request (tap, app.inject).
   */
  private readonly checked = new VerifiedTokens<{ claims: SsoClaims, keys: KeyLookup, exp?: number, at: number }>(10000)
  /** signatures checked (tokens not found among those checked before), for the tests */
  signatureChecks = 0

  constructor (config: SsoProviderConfig, options: SsoProviderOptions) {
    this.id = config.id
    this.config = config
    this.subjectClaims = config.subjectClaim === undefined ? DEFAULT_SUBJECT_CLAIMS : [config.subjectClaim].flat()
    // several: their values count together (Keycloak's realm roles and the gateway client's roles)
    this.typeClaims = [config.typeClaim].flat()
    this.usernameClaims = config.usernameClaim === undefined ? DEFAULT_USERNAME_CLAIMS : [config.usernameClaim].flat()
    // the configuration check made both absolute URLs
    this.entra = [config.issuer, config.accessTokenIssuer].some((iss) => iss !== undefined && ENTRA_ISSUER_HOSTS.has(new URL(iss).hostname))
    this.fetch = options.fetch
    this.cooldownMs = options.jwksCooldownMs ?? 60000
    this.retryMs = options.retryMs ?? 10000
    this.maxAgeMs = options.jwksMaxAgeMs ?? 600000
    this.warn = options.warn ?? (() => {})
  }

  /** The provider's metadata and the gateway's client there (openid-client), discovered once; a failure is tried again after retryMs. */
  async configuration (): Promise<client.Configuration> {
    if (this.discovery === undefined) {
      if (this.discoveryFailure !== undefined && performance.now() - this.discoveryFailure.at < this.retryMs) {
        throw new SsoError(`${this.discoveryFailure.message} (the last attempt failed ${Math.round((performance.now() - this.discoveryFailure.at) / 1000)} s ago; the next is made ${this.retryMs / 1000} s after it)`, { unavailable: true })
      }
      this.discovery = this.discover().catch((err: SsoError) => {
        this.discovery = undefined
        this.discoveryFailure = { at: performance.now(), message: err.message }
        throw err
      })
    }
    return await this.discovery
  }

  private async discover (): Promise<client.Configuration> {
    const { issuer, clientId, clientSecret, timeoutMs } = this.config
    const insecure = new URL(issuer).protocol === 'http:' // loopback only (config check)
    try {
      return await client.discovery(new URL(issuer), clientId ?? 'picking-gateway', undefined,
        clientSecret === undefined ? client.None() : client.ClientSecretPost(clientSecret), {
          [client.customFetch]: this.fetch as client.CustomFetch,
          timeout: timeoutMs / 1000,
          // the ID token's signature is checked by verify (plugins/routes/sso.ts), with the keys access tokens use
          execute: insecure ? [client.allowInsecureRequests] : []
        })
    } catch (err) {
      // the address openid-client asked: an issuer's trailing slash (Auth0, Authentik) is not doubled
      throw new SsoError(`discovery at ${issuer.replace(/\/$/, '')}/.well-known/openid-configuration failed: ${describeError(err)}`, { unavailable: true, cause: err })
    }
  }

  private async keyParams (): Promise<KeyParams> {
    const { jwksUri, algorithms } = this.config
    if (jwksUri !== undefined) return { jwksUri: new URL(jwksUri), algorithms: algorithms ?? DEFAULT_ALGORITHMS }
    const metadata = (await this.configuration()).serverMetadata()
    if (typeof metadata.jwks_uri !== 'string') throw new SsoError('the provider\'s metadata has no jwks_uri; set jwksUri', { unavailable: true })
    const url = new URL(metadata.jwks_uri)
    // the rule the configuration check applies to a configured jwksUri
    if (!isHttpsOrLoopback(url)) throw new SsoError(`jwks_uri ${url.href} is neither https nor on loopback`, { unavailable: true })
    if (algorithms !== undefined) return { jwksUri: url, algorithms }
    const advertised = (metadata.id_token_signing_alg_values_supported ?? []).filter((alg) => DEFAULT_ALGORITHMS.includes(alg))
    return { jwksUri: url, algorithms: advertised.length > 0 ? advertised : DEFAULT_ALGORITHMS }
  }

  /**
   * Verifies an access token of this provider: signature by kid (asymmetric algorithms only), iss,
   * aud, exp (required, no skew), nbf (at most 60 s skew), a subject (subjectClaim, default sub), and
   * that it is no ID token. Throws SsoError.
   * With `idTokenOf`, the ID token of a browser login instead (its aud the gateway's client id), with
   * the same keys and rules (several keys under its kid, keys given as certificates, a key set that
   * cannot be fetched: unavailable), which openid-client's own key cache did not apply. Never remembered:
   * it is no access token.
   */
  async verify (token: string, idTokenOf?: { clientId: string }): Promise<SsoClaims> {
    const hit = idTokenOf === undefined ? this.checked.get(token, Date.now()) : undefined
    // past its time: checked afresh, which also tells an expired token from one past the keys' age;
    // so is one checked with keys fetched again since, which may no longer have its key
    // the keys' age on the monotonic clock, as the keys' own (a clock set back would keep a withdrawn key's token for as long)
    if (hit !== undefined && hit !== 'expired' && hit.keys === this.keys && performance.now() - hit.at <= this.maxAgeMs) return hit.claims
    const { jwksUri, algorithms } = this.params ??= await this.keyParams()
    this.signatureChecks++
    let payload: JWTPayload
    /** the key set the token's key came from */
    const used: { keys?: KeyLookup } = {}
    const options: JWTVerifyOptions = {
      // AD FS signs its access tokens as another issuer than its discovery document's and ID tokens'
      issuer: idTokenOf === undefined ? this.config.accessTokenIssuer ?? this.config.issuer : this.config.issuer,
      audience: idTokenOf?.clientId ?? this.config.audience,
      algorithms,
      clockTolerance: NBF_SKEW_SECONDS,
      requiredClaims: ['exp']
    }
    const check = async (): Promise<JWTPayload> => {
      try {
        return (await jwtVerify(token, async (header, jws) => await this.key(jwksUri, header, jws, used), options)).payload
      } catch (err) {
        // Several keys fit the header (its kid twice in the set, or no kid and more than one key of
        // its type): jose leaves trying them to the caller. The one whose signature verifies wins.
        if (!(err instanceof errors.JWKSMultipleMatchingKeys)) throw err
        for await (const key of err) {
          try {
            return (await jwtVerify(token, key, options)).payload
          } catch (keyErr) {
            if (!(keyErr instanceof errors.JWSSignatureVerificationFailed)) throw keyErr
          }
        }
        throw new errors.JWSSignatureVerificationFailed()
      }
    }
    try {
      try {
        payload = await check()
      } catch (err) {
        // New key material under a kid the cached set has (a provider that generated its keys anew and
        // numbers them as before): fetched again, at most once per cooldown, as for an unknown kid. A
        // provider that cannot be asked then leaves the refusal as it was (a forged token stays a 401).
        if (!(err instanceof errors.JWSSignatureVerificationFailed) || !this.mayRefetch()) throw err
        const fetched = await this.refreshKeys(jwksUri).then(() => true, (fetchErr: Error) => {
          this.warn({ provider: this.id }, `${fetchErr.message}; the keys fetched ${new Date(this.keysAt).toISOString()} stay in use`)
          return false
        })
        if (!fetched) throw err
        payload = await check()
      }
    } catch (err) {
      if (err instanceof SsoError) throw err
      if (err instanceof errors.JWTExpired) throw new SsoError('the token has expired', { expired: true })
      if (err instanceof errors.JWKSNoMatchingKey) throw new SsoError(`no key in the provider's key set matches the token's kid (keys fetched ${this.keysAt === 0 ? 'never' : new Date(this.keysAt).toISOString()})`)
      // a mistyped or wrong audience is a likely configuration mistake: the log shows both sides, as for iss
      // so is a provider that signs with an algorithm not accepted (a Keycloak realm set to RS384 against the advertised default)
      if (err instanceof errors.JOSEAlgNotAllowed) throw new SsoError(`the token was refused: ${describeError(err)}; its alg is ${String(decodeProtectedHeader(token).alg).slice(0, 20)}, the accepted ones ${algorithms.join(', ')} (auth.sso algorithms)`)
      if (err instanceof errors.JWTClaimValidationFailed && err.claim === 'aud') throw new SsoError(`the token was refused: ${describeError(err)}; its aud is ${JSON.stringify(err.payload.aud ?? null).slice(0, 200)}, the configured audience ${JSON.stringify(this.config.audience)} (auth.sso audience)`)
      throw new SsoError(`the token was refused: ${describeError(err)}`)
    }
    // jose's clockTolerance also stretches exp: the skew is for nbf only.
    if ((payload.exp as number) <= Math.floor(Date.now() / 1000)) throw new SsoError('the token has expired', { expired: true })
    if (this.subjectOf(payload) === undefined) {
      // Refused, never keyed by another claim (sub): that would be another user row than the one configured.
      // The caller learns which claim: the token is the provider's own, and a new one lacks it as well.
      const names = quoted(this.subjectClaims)
      const which = this.subjectClaims.length === 1 ? `no ${names} claim, which names` : `none of the claims ${names} that name`
      throw new SsoError(`the token has ${which} its subject (auth.sso subjectClaim)`, {
        callerMessage: `The token has ${which} its user at the gateway (auth.sso subjectClaim of the identity provider '${this.id}')`
      })
    }
    if (typeof payload.iat === 'number' && payload.iat > Math.floor(Date.now() / 1000) + NBF_SKEW_SECONDS) throw new SsoError('the token was issued in the future (iat)')
    const claims = payload as SsoClaims
    if (idTokenOf !== undefined) return claims
    if (isIdToken(payload)) throw new SsoError('the token is an ID token, not an access token')
    this.checked.set(token, { claims, keys: used.keys!, at: performance.now() }, Math.min((claims.exp as number) * 1000, Date.now() + this.maxAgeMs))
    return claims
  }

  /** The key for a token header: the cached set, fetched when there is none and refetched (at most once per cooldown) for an unknown kid. */
  private async key (url: URL, header: Parameters<KeyLookup>[0], jws: Parameters<KeyLookup>[1], used: { keys?: KeyLookup }): Promise<Awaited<ReturnType<KeyLookup>>> {
    const lookup = async (): Promise<Awaited<ReturnType<KeyLookup>>> => {
      used.keys = this.keys!
      return await used.keys(header, jws)
    }
    const now = performance.now()
    if (this.keys === undefined) {
      // a fetch under way (the first token's, at start) has not failed: it is shared, as refreshKeys does
      if (this.keysPending === undefined && now - this.keysAttemptedAt < Math.min(this.retryMs, this.cooldownMs)) throw new SsoError('no signing keys: the last attempt to fetch them failed', { unavailable: true })
      await this.refreshKeys(url)
    } else if (now - this.keysFetchedAt > this.maxAgeMs && now - this.keysAttemptedAt >= this.cooldownMs) {
      // Stale keys are better than none while the provider is away; the next try is after the cooldown.
      // Fetched in the background: the cached keys check this token, which a provider that hangs would
      // otherwise hold for timeoutMs. Only the log can tell that the provider is away.
      this.refreshKeys(url).catch((err: Error) => {
        this.warn({ provider: this.id }, `${err.message}; the keys fetched ${new Date(this.keysAt).toISOString()} stay in use`)
      })
    }
    try {
      return await lookup()
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey)) throw err
      if (!this.mayRefetch()) {
        // Not known to be wrong: the provider could not be asked (a 401 would send the client for a new
        // token, which has the same kid); the next fetch is due after retryMs, what the 503's Retry-After says.
        if (this.keysFailed) throw new SsoError('no cached key matches the token\'s kid, and the last attempt to fetch the keys failed', { unavailable: true })
        throw err
      }
      await this.refreshKeys(url)
      return await lookup()
    }
  }

  /**
   * Whether a token the cached keys cannot verify (an unknown kid, a signature its kid's key refuses)
   * may have the keys fetched again: once per cooldown (after a failed fetch, once per retryMs, as a
   * failed discovery), or by sharing a fetch under way (another token's), whose outcome is this one's too.
   */
  private mayRefetch (): boolean {
    const wait = this.keysFailed ? Math.min(this.retryMs, this.cooldownMs) : this.cooldownMs
    return this.keysPending !== undefined || performance.now() - this.keysAttemptedAt >= wait
  }

  /** One fetch at a time: concurrent callers share it. */
  private async refreshKeys (url: URL): Promise<void> {
    this.keysPending ??= (async () => {
      this.keysAttemptedAt = performance.now()
      this.jwksFetches++
      try {
        const response = await this.fetch(url.href, {
          headers: { accept: 'application/jwk-set+json, application/json' },
          redirect: 'manual',
          signal: AbortSignal.timeout(this.config.timeoutMs)
        })
        if (response.status !== 200) throw new Error(`HTTP ${response.status}`)
        const set: unknown = await response.json()
        // an empty set is the provider's fault (a restart before its keys are loaded), not a withdrawal of every
        // key: taken as it is, it would refuse every token until the next fetch; the keys in use stay instead
        if (set === null || typeof set !== 'object' || !Array.isArray((set as { keys?: unknown }).keys) || (set as { keys: unknown[] }).keys.length === 0) throw new Error('the key set holds no keys')
        this.keys = createLocalJWKSet(keysFromCertificates(set) as Parameters<typeof createLocalJWKSet>[0])
        this.keysAt = Date.now()
        this.keysFetchedAt = performance.now()
        this.keysFailed = false
      } catch (err) {
        this.keysFailed = true
        throw new SsoError(`fetching the key set ${url.href} failed: ${describeError(err)}`, { unavailable: true, cause: err })
      } finally {
        this.keysPending = undefined
      }
    })()
    await this.keysPending
  }

  /**
   * What keys the identity at this provider: the first of subjectClaim (default sub) that the token has
   * as text. Not always sub: Okta's access tokens carry the user's login there (which can change, and is
   * not the ID token's sub, the user id they carry as uid).
   */
  subjectOf (claims: JWTPayload): string | undefined {
    return this.subjectClaims.map((name) => claimAt(claims, name)).find((v): v is string => typeof v === 'string' && v !== '')
  }

  /** What the claims say about the user row: identity, type (403 FORBIDDEN naming the claim when none), username. */
  identity (claims: JWTPayload): SsoIdentity {
    const subject = this.subjectOf(claims)
    // verify() refused a token without one
    if (subject === undefined) throw forbidden('The token names no subject (auth.sso subjectClaim)')
    const { typeMap } = this.config
    const { typeClaims } = this
    const values = typeClaims.flatMap((name) => {
      const raw = claimAt(claims, name)
      return typeof raw === 'string' ? [raw] : Array.isArray(raw) ? raw.filter((v): v is string => typeof v === 'string') : []
    })
    if (values.length === 0) {
      // Entra ID's group overage: for a person in more groups than a token holds it leaves `groups` out and
      // names a Graph lookup in _claim_names instead (OpenID Connect's distributed claims), which the gateway does not make
      const elsewhere = typeClaims.find((name) => claimAt(claims._claim_names, name) !== undefined)
      const none = typeClaims.length === 1 ? `no ${quoted(typeClaims)} claim` : `none of the claims ${quoted(typeClaims)}`
      throw forbidden(elsewhere !== undefined
        ? `The token has no '${elsewhere}' claim: the provider left it out and points to a lookup elsewhere instead (_claim_names; Entra ID does so for a person in more than 200 groups), which the gateway does not make; map app roles ('roles') instead (auth.sso typeClaim)`
        : `The token has ${none}: the gateway needs ${typeClaims.length === 1 ? 'it' : 'one'} to choose the user type (auth.sso typeClaim)`)
    }
    let type: UserType | undefined
    for (const value of values) {
      const mapped = Object.hasOwn(typeMap, value) ? typeMap[value] : undefined
      if (mapped !== undefined && (type === undefined || TYPE_RANK[mapped] > TYPE_RANK[type])) type = mapped
    }
    const named = typeClaims.length === 1 ? `the token's ${quoted(typeClaims)} claim` : `the token's claims ${quoted(typeClaims)}`
    if (type === undefined) throw forbidden(`No value of ${named} maps to a user type (auth.sso typeMap)`)
    const names = this.usernameClaims
    const usable = (v: unknown): v is string => typeof v === 'string' && v.trim() !== ''
    const from = names.find((name) => usable(claimAt(claims, name)))
    const found = from === undefined ? undefined : claimAt(claims, from) as string
    const unverified = from === 'email' ? this.unverifiedEmail(claims) : undefined
    // its length is the user table's column's to judge: the rows cut it to fit (users.ts)
    const name = typeof claims.name === 'string' ? claims.name : null
    return {
      marker: ssoMarker(this.id, subject),
      type,
      username: found === undefined
        ? { problem: `The token has none of the claims ${quoted(names)} to take the username from` }
        : unverified !== undefined ? { problem: unverified } : { name: storedUsername(found) },
      displayName: name,
      ...(typeof claims.iat === 'number' && { issuedAt: claims.iat * 1000 })
    }
  }

  /**
   * Why the token's `email` may not name a user, or undefined where it may. An address the provider says it has
   * not verified (a self-service sign-up at Keycloak or Auth0) may be anyone's: no new row is named after it, and it
   * cannot claim the name of an existing one either. Only what the token says: an email claim without
   * email_verified is as before. But Entra ID's: it has no email_verified, and its email is an attribute that need
   * not be the person's; xms_edov: true alone vouches for it.
   */
  private unverifiedEmail (claims: JWTPayload): string | undefined {
    if (this.entra && claims.xms_edov !== true && claims.xms_edov !== 'true') {
      return "The username would be the token's 'email' claim, which Entra ID does not verify unless the token says xms_edov: true (its optional claim 'email domain owner verified'): anyone may have entered that address, so it names no user here. Add the optional claim xms_edov to the app registration's tokens, or map another claim to the username (auth.sso usernameClaim)"
    }
    if (claims.email_verified !== false && claims.email_verified !== 'false') return undefined
    return "The username would be the token's 'email' claim, which the identity provider has not verified (email_verified: false): anyone may have entered that address, so it names no user here. Have the provider verify it, or map another claim to the username (auth.sso usernameClaim)"
  }
}

/** The providers by issuer, and which tokens are theirs. */
export class SsoProviders {
  private readonly byIssuer = new Map<string, SsoProvider>()
  readonly byId = new Map<string, SsoProvider>()

  constructor (configs: SsoProviderConfig[], options: SsoProviderOptions) {
    for (const config of configs) {
      const provider = new SsoProvider(config, options)
      this.byIssuer.set(config.issuer, provider)
      if (config.accessTokenIssuer !== undefined) this.byIssuer.set(config.accessTokenIssuer, provider)
      this.byId.set(config.id, provider)
    }
  }

  /**
   * The provider a token claims to come from: its (unverified) `iss` names one and its `alg` is
   * asymmetric. Anything else is left to the gateway's own HS256 check, which refuses what is not its own.
   */
  providerOf (token: string): SsoProvider | undefined {
    const iss = this.signedIssuer(token)
    return iss === undefined ? undefined : this.byIssuer.get(iss)
  }

  /**
   * The `iss` of a token signed as providers sign (an asymmetric alg) that names no configured issuer,
   * for the log: it is refused as one of the gateway's own, and the caller only learns TOKEN_INVALID
   * (Entra ID's version 1 tokens, issuer https://sts.windows.net/<tenant>/, against a v2 issuer).
   */
  foreignIssuer (token: string): string | undefined {
    const iss = this.signedIssuer(token)
    return iss !== undefined && !this.byIssuer.has(iss) ? iss.slice(0, 200) : undefined
  }

  /**
   * The provider whose issuer a token names although its `alg` is none a provider may sign with, and
   * that alg, for the log: it is refused as one of the gateway's own, and nothing else would say why
   * (Authentik signs with HS256 and the client secret when its provider has no signing key; an
   * application at Auth0 can be set to HS256).
   */
  refusedAlgorithm (token: string): { provider: string, alg: string } | undefined {
    const claimed = this.claimed(token)
    if (claimed === undefined || claimed.asymmetric) return undefined
    const provider = this.byIssuer.get(claimed.iss)
    return provider === undefined ? undefined : { provider: provider.id, alg: claimed.alg.slice(0, 20) }
  }

  /** The unverified `iss` of a token whose `alg` is one providers sign with; undefined when no provider is configured. */
  private signedIssuer (token: string): string | undefined {
    const claimed = this.claimed(token)
    return claimed?.asymmetric === true ? claimed.iss : undefined
  }

  /** A token's unverified `iss` and `alg`, when it has both; undefined when no provider is configured. */
  private claimed (token: string): { iss: string, alg: string, asymmetric: boolean } | undefined {
    if (this.byIssuer.size === 0) return undefined
    try {
      const { alg } = decodeProtectedHeader(token)
      if (typeof alg !== 'string') return undefined
      const { iss } = decodeJwt(token)
      return typeof iss === 'string' ? { iss, alg, asymmetric: (SSO_ALGORITHMS as readonly string[]).includes(alg) } : undefined
    } catch {
      return undefined
    }
  }

  /** the configured issuers, for the log */
  get issuers (): string[] {
    return [...this.byIssuer.keys()]
  }
}

/**
 * An ID token says who signed in at a client; it grants nothing. Its aud is the client's id, which
 * audience lists too where access tokens carry the same aud (Entra ID v2, Keycloak with the
 * gateway's client as audience), so aud alone cannot tell them apart. Where a provider names the
 * kind in the token, that decides: Keycloak's typ ("ID"; "Bearer" on access tokens, which carry
 * the login's nonce in its older versions), OpenAM's and ForgeRock AM's tokenName ("id_token",
 * with azp; "access_token", with token_type "Bearer" and, before AM 7, the login's nonce and no
 * claim naming the client). Elsewhere an ID token has the nonce of its login (the browser login
 * always sends one) and names neither the client its holder is nor a scope: access tokens do
 * (azp: Entra ID v2, Keycloak, Authentik, whose access tokens otherwise copy the ID token;
 * client_id: RFC 9068; appid: Entra ID v1 and ADFS; cid: Okta; scope or scp: what was granted).
 */
function isIdToken (payload: JWTPayload): boolean {
  if (payload.typ === 'ID' || payload.tokenName === 'id_token') return true
  if (payload.typ === 'Bearer' || payload.tokenName === 'access_token' || payload.token_type === 'Bearer' || payload.nonce === undefined) return false
  return !ACCESS_TOKEN_CLAIMS.some((claim) => Object.hasOwn(payload, claim))
}

/** Claims an access token has and an ID token does not: the client it was issued to, the scope granted. */
const ACCESS_TOKEN_CLAIMS = ['azp', 'client_id', 'appid', 'cid', 'scope', 'scp']

/**
 * A key set whose keys carry their public key only as a certificate (`x5c`, without `n`/`e` or `x`/`y`,
 * which RFC 7517 allows): the key is taken from the first certificate, since jose imports a key from
 * those members only and refused every token it signed. Other keys and sets are left as they are.
 */
function keysFromCertificates (jwks: unknown): unknown {
  if (jwks === null || typeof jwks !== 'object' || !Array.isArray((jwks as { keys?: unknown }).keys)) return jwks
  const keys = (jwks as { keys: unknown[] }).keys.map((jwk) => {
    if (jwk === null || typeof jwk !== 'object') return jwk
    const { x5c, n, x } = jwk as { x5c?: unknown, n?: unknown, x?: unknown }
    if (!Array.isArray(x5c) || typeof x5c[0] !== 'string' || n !== undefined || x !== undefined) return jwk
    try {
      const fromCertificate = new X509Certificate(Buffer.from(x5c[0], 'base64')).publicKey.export({ format: 'jwk' })
      return { ...jwk, ...fromCertificate }
    } catch {
      return jwk // not a certificate: refused as before when a token needs it
    }
  })
  return { ...jwks, keys }
}

/** An error for the log: its name, code, message and the message of its cause (openid-client puts the failed check there). */
export function describeError (err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  const code = (err as { code?: unknown }).code
  // openid-client gives the provider's response as the cause of an unexpected status, which its message does not name
  const status = (err.cause as { status?: unknown } | undefined)?.status
  const cause = err.cause instanceof Error ? ` (${err.cause.message})` : typeof status === 'number' ? ` (HTTP ${status})` : ''
  return `${err.name}${typeof code === 'string' ? ` ${code}` : ''}: ${err.message}${cause}`
}
