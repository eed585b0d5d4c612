// Tokens, password checks and the per-request identity. Token kinds are told apart by checked claims (typ, aud), never by namespace.
import { randomUUID } from 'node:crypto'
import fastifyJwt from '@fastify/jwt'
import { createDecoder, createVerifier } from 'fast-jwt'
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { createPasswords, isCheckableHash, normalizeUsername, spelledUsername, type Argon2Params, type Passwords } from '../src/auth/passwords.js'
import { LoginThrottle } from '../src/auth/throttle.js'
import { VerifiedTokens } from '../src/auth/verified-tokens.js'
import { isSsoMarker, proxyFetch, SsoError, SsoProviders, type SsoIdentity, type SsoProvider, type SsoProviderOptions } from '../src/auth/sso.js'
import { ApiError, badRequest, forbidden, invalidCredentials, sharedUserId, ssoUnavailable, tokenExpired, tokenInvalid, tokenMissing, tooManyRequests } from '../src/errors.js'
import { AmbiguousIdError, ConflictError, ConstraintViolationError, DatabaseUnavailableError, InvalidValueError, NotFoundError, PreconditionFailedError } from '../src/db/errors.js'
import { idField, isPathId, users as usersDef } from '../src/db/resources.js'
import type { Id } from '../src/db/repository.js'
import type { Row } from '../src/db/types.js'
import { repeatedHeader } from '../src/http.js'
import { UserService } from '../src/users.js'
import type { SsoProviderConfig } from '../schemas/config.js'
import { UserType } from '../schemas/users.js'

/** the user table's id field */
const USER_ID = idField(usersDef)

/** the types that have rights here; a stored code outside them has none */
const USER_TYPES: ReadonlySet<string> = new Set(UserType.anyOf.map((literal) => literal.const))

export type TokenType = 'access' | 'refresh' | 'application'

/** What a route needs: `access` (default; application tokens count as access), `refresh`, or `none`. */
export type RouteAuth = 'access' | 'refresh' | 'none'

export interface TokenClaims {
  sub: string
  typ: TokenType
  aud: string
  /** the user's token version when issued; bumping it revokes every token of the user */
  ver: number
  /**
   * the user's name when issued: a token names its user by id and name, so that a row that takes a
   * deleted user's id (a legacy table numbered max+1, SQLite's rowid) is not that user's to its
   * tokens. Absent from tokens issued before it was added.
   */
  usr?: string
  jti: string
  iat: number
  exp?: number
}

export interface AuthUser {
  /** the user's id as its table keys it: a number, or the login name where the table is keyed by it */
  id: Id
  username: string
  type: UserType
  tokenType: TokenType
  /** the user's current token version (equal to the token's `ver`, or it was refused) */
  tokenVersion: number
}

export interface AuthPluginOptions {
  /** newest first: the first signs, every one verifies tokens that name its kid */
  keys: Array<{ kid: string, secret: string }>
  accessTokenTtlSeconds: number
  refreshTokenTtlSeconds: number
  revocationCacheMs: number
  argon2: Argon2Params
  loginThrottle: { maxFailuresPerUser: number, maxFailuresPerUserTotal: number, userWindowMs: number }
  /** OpenID Connect providers whose access tokens are accepted (auth.sso) */
  sso?: SsoProviderConfig[]
  /** for the user rows single sign-on creates */
  licenceLogins: number
  /** tests only: shorter key-set cooldowns and retries than the production minute */
  ssoTiming?: Pick<SsoProviderOptions, 'jwksCooldownMs' | 'retryMs' | 'jwksMaxAgeMs'>
}

export interface LoginResult {
  accessToken: string
  refreshToken: string
  expiresIn: number
}

export interface Auth {
  passwords: Passwords
  /** `address`: the client's, as the request has it (request.ip): failures count per username and address */
  login (username: string, password: string, address?: string): Promise<LoginResult>
  /** signs a token for a user row or a verified identity */
  issue (user: { id?: unknown, tokenVersion?: unknown, username?: unknown }, typ: TokenType): string
  accessTokenTtlSeconds: number
  /** Forget a user's cached token version so revocation takes effect at once in this process. */
  forget (userId: Id): void
  /**
   * The identity of a user as a credential issued at `tokenVersion` gives it: TOKEN_INVALID when the
   * user is gone, disabled or its tokens were revoked since, or its row has another user's name
   * (`username`: another row took the id). For credentials that are not JWTs (stream tickets).
   */
  identifyUser (id: Id, tokenVersion: number, tokenType: TokenType, username?: string): Promise<AuthUser>
  /**
   * When the Bearer token of a request that passed authentication expires (ms since the epoch), or
   * undefined when it never does (application tokens) or the request carries none. For what outlives
   * its request (event streams, stream tickets); not for the per-request check.
   */
  expiryOf (request: FastifyRequest): number | undefined
  /** the configured identity providers */
  sso: SsoProviders
  /**
   * The user row of an identity provider's verified claims (created on first sight, type kept in
   * step); throws 403 with the reason, and logs it. Also for the browser login's ID token.
   */
  ssoUser (provider: SsoProvider, claims: Parameters<SsoProvider['identity']>[0], log: FastifyRequest['log']): Promise<Row>
  /** Stamps a login's lastLoginAt (and a rehash): a refusal or a busy database is logged, never the login's failure. */
  recordLogin (userId: Id, changes: Row): Promise<Row | undefined>
  /** An identity provider's row found gone when stamped (deleted beside this instance): forgotten, so that ssoUser makes it again. */
  ssoRowGone (row: Row): void
}

declare module 'fastify' {
  interface FastifyInstance {
    auth: Auth
    /** preHandler that answers 403 unless the caller's user type is one of `types` */
    requireType (...types: UserType[]): preHandlerAsyncHookHandler
    /** onRequest hook of the /api scope */
    authenticate (request: FastifyRequest, reply: FastifyReply): Promise<void>
  }
  interface FastifyRequest {
    identity: AuthUser | null
  }
  interface FastifyContextConfig {
    auth?: RouteAuth
    /** another credential the route takes instead of a Bearer token; resolves undefined when the request carries none */
    credential?: (request: FastifyRequest) => Promise<AuthUser | undefined>
  }
}

const AUDIENCE: Record<TokenType, string> = {
  access: 'picking-gateway:access',
  refresh: 'picking-gateway:refresh',
  application: 'picking-gateway:application'
}

/** How far before a user row's last change a provider token may be issued and still change its type (staleClaim). */
const IAT_BACKDATE_MS = 6 * 60 * 1000

const BEARER = /^Bearer +([A-Za-z0-9_\-.=+/]+) *$/i
/** A Bearer header with something after the scheme: when that is no token (quoted, two tokens), it is a malformed one, not a missing one. */
const BEARER_SCHEME = /^Bearer +\S/i

/**
 * A user row as read (undefined: none), when it was read, and until when it stands for the row; `seq`
 * orders the reads and changes of this process (a change leaves an entry that stands for nothing).
 * `readAt` is wall-clock time, compared with tokens' iat; `expires` is on the monotonic clock
 * (performance.now()), so that a system clock set back (NTP, an operator) does not keep a copy, and
 * with it a revoked token, for as long as the clock went back.
 */
interface CachedUser { row: Row | undefined, readAt: number, expires: number, seq: number }

async function auth (fastify: FastifyInstance, opts: AuthPluginOptions): Promise<void> {
  const [signing] = opts.keys
  // One verifier per key, made once: @fastify/jwt's verify(token, { key }) builds a new verifier,
  // key object included, on every call.
  const verifiers = new Map(opts.keys.map((key) => [key.kid, createVerifier({ key: key.secret, algorithms: ['HS256'] })]))
  // A polling client sends the same token over and over: its claims are kept, keyed by the exact
  // token text, and answer until it expires (an expired one is dropped when it is sent again, and all
  // of them when 10,000 are kept: bounded, not swept). fast-jwt's own cache keys on a SHA-256 of the
  // token, which costs as much as checking the HMAC again (npm run bench: 10 % of a read by id).
  const verified = new VerifiedTokens<TokenClaims>(10000)
  const decodeComplete = createDecoder({ complete: true })
  const decodePayload = createDecoder()
  await fastify.register(fastifyJwt, {
    secret: signing.secret,
    sign: { algorithm: 'HS256', kid: signing.kid },
    // alg pinned: `none`, RS256-with-HMAC-key confusion and lower-case variants are refused.
    verify: { algorithms: ['HS256'] }
  })
  const passwords = await createPasswords(opts.argon2)
  const throttle = new LoginThrottle(opts.loginThrottle.maxFailuresPerUser, opts.loginThrottle.maxFailuresPerUserTotal, opts.loginThrottle.userWindowMs)
  const users = fastify.repos.users
  const cache = new Map<Id, CachedUser>()
  let reads = 0
  /** `reads` when the cache was last emptied: a read begun before then may predate a change whose entry went with it */
  let emptiedAt = 0
  const makeRoom = (): void => {
    if (cache.size <= 10000) return
    cache.clear()
    emptiedAt = reads
  }
  const providerFetch = proxyFetch()
  fastify.addHook('onClose', async () => { await providerFetch.close() })
  const sso = new SsoProviders(opts.sso ?? [], { fetch: providerFetch.fetch, ...opts.ssoTiming, warn: (fields, message) => fastify.log.warn(fields, message) })
  const userService = new UserService({
    repo: users,
    passwords,
    licenceLogins: opts.licenceLogins,
    onChange: (id) => { changed(id) },
    audit: (fields, message) => fastify.log.warn(fields, message)
  })
  /** provider + subject -> user id, so that a known identity costs no lookup by marker */
  const ssoIds = new Map<string, Id>()
  /** one creation per identity at a time */
  const ssoPending = new Map<string, Promise<Row>>()
  /** provider + subject -> the newest iat (ms) among its tokens seen here */
  const ssoNewest = new Map<string, number>()
  /** user id -> the iat (or exp) of the last provider token that stamped its lastLoginAt here */
  const ssoStamped = new Map<Id, number>()

  /**
   * A token that says another type than the row but is older than what set the row's type: a token
   * newer than it seen here, or the row's last change (less the backdating some providers do to iat,
   * Entra ID's five minutes among them, which also covers a restart). It may not set the type back.
   */
  function staleClaim (identity: SsoIdentity, row: Row): boolean {
    if (identity.issuedAt === undefined) return false
    const newest = ssoNewest.get(identity.marker)
    if (newest !== undefined && identity.issuedAt < newest) return true
    // rows are in API shape: modifiedAt is ISO text
    return identity.issuedAt < Date.parse(String(row.modifiedAt)) - IAT_BACKDATE_MS
  }

  function noteIssued (identity: SsoIdentity): void {
    if (identity.issuedAt === undefined || identity.issuedAt <= (ssoNewest.get(identity.marker) ?? -Infinity)) return
    if (ssoNewest.size > 10000) ssoNewest.clear()
    ssoNewest.set(identity.marker, identity.issuedAt)
  }

  /** `fresh`: read the row even when a copy is cached (and keep what was read) */
  async function loadUser (id: Id, fresh = false): Promise<Row | undefined> {
    const hit = cache.get(id)
    if (!fresh && hit && hit.expires > performance.now()) return hit.row
    const readAt = Date.now()
    const seq = ++reads
    const row = await users.get(id).catch((err: unknown) => {
      // an id several rows hold (a users table keyed by one column of a composite key) names no user: its tokens are
      // refused as a deleted user's are (401 TOKEN_INVALID, as every token check), not a 409 on every request of them
      if (!(err instanceof AmbiguousIdError)) throw err
      fastify.log.warn({ user: id, table: err.tableName }, `a token names user id ${String(id)}, which several rows of the user table ${err.tableName} hold: refused; map users.id to a column that is unique by itself (check-config lists such ids)`)
      return undefined
    })
    if (opts.revocationCacheMs > 0) {
      makeRoom()
      // two reads in flight at once: the later one's copy stays, not the one that finished last; nor
      // is a read kept that began before a change made here since (its copy may show the user enabled),
      // nor one that began before the cache was emptied (which took the entry of such a change along)
      const current = cache.get(id)
      if (current === undefined ? seq > emptiedAt : current.seq < seq) cache.set(id, { row, readAt, expires: performance.now() + opts.revocationCacheMs, seq })
    }
    return row
  }

  /** A user row changed here: the next check reads it again, and no read begun before the change is kept. */
  function changed (id: Id): void {
    if (opts.revocationCacheMs <= 0) return
    makeRoom()
    cache.set(id, { row: undefined, readAt: Date.now(), expires: 0, seq: ++reads })
  }

  function issue (user: { id?: unknown, tokenVersion?: unknown, username?: unknown }, typ: TokenType): string {
    const claims = { sub: String(user.id), typ, aud: AUDIENCE[typ], ver: Number(user.tokenVersion ?? 0), ...(typeof user.username === 'string' && { usr: user.username }), jti: randomUUID() }
    const ttl = typ === 'access' ? opts.accessTokenTtlSeconds : typ === 'refresh' ? opts.refreshTokenTtlSeconds : undefined
    // Application tokens do not expire (spec); they are revoked through the token version.
    return ttl === undefined ? fastify.jwt.sign(claims) : fastify.jwt.sign(claims, { expiresIn: ttl })
  }

  const service: Auth = {
    passwords,
    accessTokenTtlSeconds: opts.accessTokenTtlSeconds,
    issue,
    recordLogin,
    forget (userId) { changed(userId) },
    identifyUser,
    expiryOf (request) {
      const match = BEARER.exec(request.headers.authorization ?? '')
      if (!match) return undefined
      // The token passed authentication in this request (ours or a provider's): its exp is read, not checked again.
      const { exp } = decodePayload(match[1]) as { exp?: unknown }
      return typeof exp === 'number' ? exp * 1000 : undefined
    },
    sso,
    ssoUser,
    ssoRowGone,
    async login (username, password, address) {
      const key = normalizeUsername(username)
      // Reserved before anything is awaited: checks queue behind the hasher, and a burst must not all pass a count read before any failed.
      const { wait, scope } = await throttle.reserve(key, address)
      if (wait > 0) throw tooManyRequests(wait, scope === 'address' ? 'Too many failed logins for this user from this address; try again later' : 'Too many failed logins for this user; try again later')
      let settled = false
      let user: Row | undefined
      try {
        user = await users.findSpelled('username', spelledUsername(username), normalizeUsername)
        // the database's collation may find a row for a name the throttle counts as another: only the same name is this user
        if (user !== undefined && normalizeUsername(String(user.username)) !== key) user = undefined
        // verify() runs against a decoy hash when the user does not exist: same time either way.
        const ok = await passwords.verify(user?.passwordHash as string | undefined, password)
        settled = true
        if (!user || !ok || user.enabled !== true) {
          throttle.fail(key, address)
          // the answer is the same 401; the log tells the admin why this one can never succeed
          if (user !== undefined && !isCheckableHash(user.passwordHash) && !isSsoMarker(user.passwordHash)) {
            fastify.log.warn({ user: user.id, username: user.username }, "a login of this user was refused: its password column holds no password hash the gateway can check (none, or the picking system's own: MD5, SHA-1, bcrypt, plain text; the gateway checks only the argon2id hashes it writes). Set its password through the gateway (picking-gateway user passwd <name>, or an admin's PATCH /api/users/<id> with a password), which replaces the column's value: the picking system's own login no longer reads it then")
          }
          throw invalidCredentials()
        }
        throttle.succeed(key, address)
      } finally {
        // no verdict (database down, hasher queue full): the attempt counts for nothing
        if (!settled) throttle.release(key, address)
      }
      const changes: Row = { lastLoginAt: new Date() }
      const verifiedHash = user.passwordHash
      if (passwords.needsRehash(verifiedHash as string)) changes.passwordHash = await passwords.hash(password)
      // the new hash replaces only the one just verified: a password changed meanwhile (its tokens revoked) is not set back to this one
      const written = await recordLogin(user.id as Id, changes, changes.passwordHash === undefined ? undefined : (row) => row.passwordHash === verifiedHash).catch((err: unknown) => {
        // deleted while its password was checked: no user, as for a name that never was one
        throw err instanceof NotFoundError ? invalidCredentials() : err
      })
      // the row just read is the truth: a copy from before (disabled, another version) must not refuse the new tokens
      changed(user.id as Id)
      // A revocation that committed while the password was checked would refuse tokens of the version read
      // before it at once: a 200 whose tokens are dead. The row as the stamp left it decides: disabled, or a
      // new password (the version moved and the hash is not the one verified), is the 401 the login would get
      // a moment later; otherwise (a type change, a rename, another login's rehash) the tokens are of the row as it is now.
      if (written !== undefined) {
        if (written.enabled !== true || (Number(written.tokenVersion ?? 0) !== Number(user.tokenVersion ?? 0) && written.passwordHash !== verifiedHash && written.passwordHash !== changes.passwordHash)) {
          throw invalidCredentials()
        }
        user = written
      }
      return { accessToken: issue(user, 'access'), refreshToken: issue(user, 'refresh'), expiresIn: opts.accessTokenTtlSeconds }
    }
  }

  /** The 409 of a login (a password's, an identity provider's) of a user whose id several rows hold; the log says which id and table. */
  function sharedId (err: AmbiguousIdError): ApiError {
    fastify.log.warn({ user: err.id, table: err.tableName }, `a login of user id ${String(err.id)} was refused: several rows of the user table ${err.tableName} hold that id, so its tokens would name no user; map users.id to a column that is unique by itself, or give the user an id of its own (check-config lists such ids)`)
    return sharedUserId()
  }

  /** the row as the stamp left it, or undefined when nothing could be written */
  async function recordLogin (userId: Id, changes: Row, check?: (current: Row) => boolean): Promise<Row | undefined> {
    try {
      return await users.update(userId, changes, { touch: false, check })
    } catch (err) {
      // the row's hash is no longer the one verified (a password change, another login's rehash): it stays, the time is stamped
      if (err instanceof PreconditionFailedError) return await recordLogin(userId, { lastLoginAt: changes.lastLoginAt })
      // several rows hold the user's id (found by its name or its provider's marker, it is one of them): its tokens
      // would name no user, a 401 on every request, and a client that logs in again on a 401 would loop. The
      // update changed none of them. The password was right (login counted it so): no failed login that would
      // keep the account locked out once an administrator has mended the id.
      if (err instanceof AmbiguousIdError) throw sharedId(err)
      // the password (or the provider's token) was right: a trigger of the picking system that
      // refuses the stamp (or the rehash) must not turn the login into an error that tells a right
      // password from a wrong one; another program's write lock held past the wait (SQLite) must
      // not keep every user out for as long as it lasts. The row was read; the tokens need nothing written.
      if (err instanceof DatabaseUnavailableError) fastify.log.warn({ err: err.message, user: userId }, 'the login of this user could not be recorded (last login time, password rehash): the database takes no writes now (err says why: busy, read-only, full); the tokens are issued')
      // a unique key refusing the stamp is another table's too (an audit trigger's history row, one per user and day): no field written here is unique
      else if (err instanceof ConstraintViolationError || err instanceof InvalidValueError || err instanceof ConflictError) fastify.log.warn({ err, user: userId }, 'the login of this user could not be recorded (last login time, password rehash): the user table refused the change')
      else throw err
    }
  }

  async function identify (request: FastifyRequest, accepted: TokenType[]): Promise<AuthUser> {
    const header = request.headers.authorization ?? ''
    const connection = request.raw.socket
    const now = Date.now()
    // the header as this connection sent it last time (a keep-alive client's): compared as text, no parse, no hash of the token
    let claims = verified.recall(connection, header, now)
    if (claims === undefined) {
      const match = BEARER.exec(header)
      if (!match) throw BEARER_SCHEME.test(header) ? tokenInvalid() : tokenMissing()
      const token = match[1]
      // Only the gateway's own tokens are kept here: a hit needs no look at the issuer at all.
      claims = verified.get(token, now)
      if (claims === undefined) {
        const provider = sso.providerOf(token)
        if (provider !== undefined) {
          // A token from outside never starts the gateway's own chain: refresh and application tokens come from a login here.
          if (!accepted.includes('access')) {
            request.log.info({ provider: provider.id }, 'identity provider token refused: only access routes take it')
            throw tokenInvalid()
          }
          return await identifySso(request, provider, token)
        }
        try {
          claims = checkSignature(token, request.log)
        } catch (err) {
          const iss = sso.foreignIssuer(token)
          if (iss !== undefined) request.log.info({ iss, issuers: sso.issuers }, 'identity provider token refused: its iss is no configured issuer (auth.sso issuer)')
          const refused = sso.refusedAlgorithm(token)
          if (refused !== undefined) request.log.info(refused, 'identity provider token refused: its alg is none a provider may sign with (RS*, PS*, ES*, EdDSA: a key pair, never a shared secret or none); set the provider to sign with a key pair')
          throw err
        }
        verified.set(token, claims)
      }
      verified.remember(connection, header, token)
    }
    if (claims === 'expired') throw tokenExpired()
    const id = subjectId(claims.sub)
    if (id === undefined || !accepted.includes(claims.typ) || claims.aud !== AUDIENCE[claims.typ] ||
        !Number.isInteger(claims.ver) || (claims.typ !== 'application' && typeof claims.exp !== 'number') || (claims.usr !== undefined && typeof claims.usr !== 'string')) {
      throw tokenInvalid()
    }
    return identifyUser(id, claims.ver, claims.typ, claims.usr, claims.iat * 1000)
  }

  /**
   * The user id a token's sub names, as the user table keys it now: a number written as a path writes
   * it, or, in a table keyed by the login name, that name as stored (text, '0042' too).
   */
  function subjectId (sub: unknown): Id | undefined {
    if (typeof sub !== 'string') return undefined
    if (users.def.fields[USER_ID].kind === 'string') return sub === '' ? undefined : sub
    return isPathId(sub) ? Number(sub) : undefined
  }

  /** The claims of one of the gateway's own tokens, its signature checked: else TOKEN_EXPIRED or TOKEN_INVALID. */
  function checkSignature (token: string, log: FastifyRequest['log']): TokenClaims {
    let kid: unknown
    try {
      // The key is chosen by the header's kid: a token signed with a removed key finds none.
      const header = (decodeComplete(token) as { header?: { kid?: unknown } } | undefined)?.header
      kid = header?.kid
      const verifier = typeof kid === 'string' ? verifiers.get(kid) : undefined
      if (verifier === undefined) {
        // the caller learns only TOKEN_INVALID; the log says why, as for a provider's token: a
        // token of another instance (or from before a rotation) whose kid this one does not know
        if (typeof kid === 'string') log.info({ kid: kid.slice(0, 64), kids: [...verifiers.keys()] }, "token refused: its kid names no key of this gateway (auth.keys; 'default' for the single auth.jwtSecret): signed by another instance with other keys, or with a key removed since")
        throw tokenInvalid()
      }
      return verifier(token) as TokenClaims
    } catch (err) {
      // Expiry is only reported for a well-signed token: fast-jwt checks the signature first.
      if ((err as { code?: string }).code === 'FAST_JWT_EXPIRED') throw tokenExpired()
      // the usual cause is not forgery but several instances behind a load balancer given different
      // secrets: each refuses the others' tokens, and without this line nothing told the operator why
      if ((err as { code?: string }).code === 'FAST_JWT_INVALID_SIGNATURE') log.info({ kid: String(kid).slice(0, 64) }, "token refused: its signature does not verify with this gateway's key of its kid: signed with another secret (an instance with another auth.jwtSecret or auth.keys; the secret changed since) or altered")
      throw tokenInvalid()
    }
  }

  async function identifyUser (id: Id, tokenVersion: number, tokenType: TokenType, username?: string, issuedAt?: number): Promise<AuthUser> {
    // A refresh token only ever makes new tokens (a refresh, an application token): judged by a cached
    // copy, one revoked on another instance a moment ago would get a 200 with tokens of its old version,
    // refused there at once and here within the cache time (a non-expiring one too). One read per
    // refresh, some every 15 minutes per client; the access tokens of every other request keep the cache.
    let user = await loadUser(id, tokenType === 'refresh')
    // A well-signed token that the cached copy refuses, issued after the copy was read (a login on
    // another instance after a password change, or after the user was enabled again), may prove the
    // copy stale: the row is read again rather than the new tokens refused for the cache time. Any
    // other version than the copy's, not only a higher one: a narrow column's version comes round to 0
    // (nextTokenVersion), and the tokens of the login after that are lower than the copy's. Only
    // then (iat has whole seconds: a second of slack): a token older than the copy is judged by it,
    // so a disabled user's tokens, or a table restored to older versions, cost no read per request.
    if (user !== undefined && issuedAt !== undefined &&
        (Number(user.tokenVersion ?? 0) !== tokenVersion || user.enabled !== true)) {
      // only for a token the copy refuses: the usual request looks up nothing more
      const readAt = cache.get(id)?.readAt
      if (readAt !== undefined && issuedAt >= readAt - 1000) {
        changed(id)
        user = await loadUser(id)
      }
    }
    // a NULL version (a column the picking system's table got without a default) is 0, as issue() signs it
    if (!user || user.enabled !== true || Number(user.tokenVersion ?? 0) !== tokenVersion) throw tokenInvalid()
    // the row that has the id now is another user's: the token's user was deleted and its id taken again
    // (the name as issued is the row's as it is, but for a change of case: compared as text first, normalized only then)
    if (username !== undefined && user.username !== username && normalizeUsername(String(user.username)) !== normalizeUsername(username)) throw tokenInvalid()
    if (tokenType === 'application' && user.type !== 'application') throw tokenInvalid()
    return { id, username: user.username as string, type: user.type as UserType, tokenType, tokenVersion }
  }

  async function identifySso (request: FastifyRequest, provider: SsoProvider, token: string): Promise<AuthUser> {
    let claims: Awaited<ReturnType<SsoProvider['verify']>>
    try {
      claims = await provider.verify(token)
    } catch (err) {
      if (!(err instanceof SsoError)) throw err
      // The log says why (the caller only learns TOKEN_INVALID). An unreachable provider is a fault, not
      // the token's: 503, so that a client tries again instead of asking for a new token.
      request.log[err.unavailable ? 'warn' : 'info']({ provider: provider.id, reason: err.message }, err.unavailable ? 'identity provider token not checked' : 'identity provider token refused')
      if (err.unavailable) throw ssoUnavailable(provider.id)
      throw err.expired ? tokenExpired() : tokenInvalid(err.callerMessage)
    }
    let user = await ssoUser(provider, claims, request.log)
    if (user.enabled !== true) throw disabledSsoUser(request, provider, user)
    // A provider token is this identity's login: each new one stamps lastLoginAt once (not every
    // request), so that an ERP calling every day does not show the time of its first token for good.
    const issued = typeof claims.iat === 'number' ? claims.iat : claims.exp
    if (typeof issued === 'number' && issued > (ssoStamped.get(user.id as Id) ?? -Infinity)) {
      if (ssoStamped.size > 10000) ssoStamped.clear()
      ssoStamped.set(user.id as Id, issued)
      const gone = await recordLogin(user.id as Id, { lastLoginAt: new Date() }).then(() => false, (err: unknown) => {
        if (err instanceof NotFoundError) return true
        throw err
      })
      if (gone) {
        // the row this instance had cached was deleted beside it (the picking system, another instance):
        // made again, as the next token after a delete through the API makes it (not a 404 about users)
        ssoRowGone(user)
        user = await ssoUser(provider, claims, request.log)
        if (user.enabled !== true) throw disabledSsoUser(request, provider, user)
      }
    }
    return { id: user.id as Id, username: user.username as string, type: user.type as UserType, tokenType: 'access', tokenVersion: Number(user.tokenVersion) }
  }

  /**
   * A valid provider token of a disabled row: the same 401 as any refused token, and the log says why
   * (a client that fetches new tokens in a loop shows there, not as a mystery).
   */
  function disabledSsoUser (request: FastifyRequest, provider: SsoProvider, user: Row): ApiError {
    request.log.info({ provider: provider.id, user: user.id, username: user.username }, 'identity provider token refused: the gateway account of this identity is disabled (enable it to let it in)')
    return tokenInvalid()
  }

  function ssoRowGone (row: Row): void {
    ssoIds.delete(String(row.passwordHash))
    ssoStamped.delete(row.id as Id)
    changed(row.id as Id)
  }

  async function ssoUser (provider: SsoProvider, claims: Parameters<SsoProvider['identity']>[0], log: FastifyRequest['log']): Promise<Row> {
    try {
      const identity = provider.identity(claims)
      const row = await ssoRow(identity)
      if (row.type !== identity.type && row.enabled === true) {
        log.info({ provider: provider.id, userId: row.id, claimed: identity.type, type: row.type }, "identity provider token older than the user's type: it acts with the row's type")
      }
      return row
    } catch (err) {
      // claims that give no type, a username that is taken or too long, the licence: the caller and the log learn why
      if (err instanceof ApiError && err.statusCode === 403) log.warn({ provider: provider.id, sub: provider.subjectOf(claims), code: err.code }, err.message)
      throw err
    }
  }

  async function ssoRow (identity: SsoIdentity): Promise<Row> {
    // The usual path: a known identity, its row from the revocation cache.
    const known = ssoIds.get(identity.marker)
    const cached = known === undefined ? undefined : await loadUser(known)
    if (cached !== undefined && cached.passwordHash === identity.marker &&
      (cached.type === identity.type || cached.enabled !== true || staleClaim(identity, cached))) {
      noteIssued(identity)
      return cached
    }
    let pending = ssoPending.get(identity.marker)
    if (pending === undefined) {
      pending = userService.ssoUser(identity, (row) => staleClaim(identity, row)).finally(() => ssoPending.delete(identity.marker))
      ssoPending.set(identity.marker, pending)
    }
    let row: Row
    try {
      row = await pending
      // the marker found one of several rows that hold its id (never the cached path: loadUser finds no user
      // there): no token could name it alone, so its login is refused as a password login is
      await users.get(row.id as Id)
    } catch (err) {
      throw err instanceof AmbiguousIdError ? sharedId(err) : err
    }
    noteIssued(identity)
    if (ssoIds.size > 10000) ssoIds.clear()
    ssoIds.set(identity.marker, row.id as Id)
    changed(row.id as Id)
    return row
  }

  fastify.decorate('auth', service)
  fastify.decorateRequest('identity', null)
  fastify.decorate('requireType', (...types: UserType[]): preHandlerAsyncHookHandler => {
    return async function (request) {
      if (!request.identity || !types.includes(request.identity.type)) throw forbidden()
    }
  })

  // Added as one onRequest hook on the /api scope; each route says in its config which token it takes.
  fastify.decorate('authenticate', async function (request: FastifyRequest, reply: FastifyReply) {
    // routeOptions is a getter that builds a new object of the route's options on every read
    const { config } = request.routeOptions
    const mode = config.auth ?? 'access'
    if (mode === 'none') return
    // Node keeps the first of two Authorization headers and drops the other, which a proxy in front may have
    // used: which credential is meant is unknown, so neither is checked. The raw list is read only when there is one.
    if (request.headers.authorization !== undefined && repeatedHeader(request.raw.rawHeaders, 'authorization') !== undefined) {
      throw badRequest('The request has more than one Authorization header; send one')
    }
    // An answer to a credential is that caller's: no shared cache keeps it (nginx with proxy_cache and
    // proxy_cache_valid caches what carries no Cache-Control, Authorization or not, and hands it to the
    // next caller of the URL, one without a token too), and a browser asks again (If-None-Match) before
    // reusing its copy. Routes that send tokens or tickets replace it with no-store.
    reply.header('cache-control', 'private, no-cache')
    request.identity = await config.credential?.(request) ??
      await identify(request, mode === 'refresh' ? ['refresh'] : ['access', 'application'])
    // A role code of the picking system's own that no value map knows ('L' for a warehouse login) grants
    // nothing: without this, routes open to every type (reads, station commands, events) let it through.
    if (mode !== 'refresh' && !USER_TYPES.has(request.identity.type)) throw forbidden()
  })
}

export default fp(auth, { name: 'auth', fastify: '5.x', dependencies: ['database', 'error-handler'] })
