// The configuration file's shape. Checked once at start; every key has a default except secrets.
import { Type, type Static } from '@sinclair/typebox'
import { TIME_FORMATS } from '../src/db/types.js'

/**
 * A table, schema or column name as the database spells it: any characters but control characters
 * (`Größe`, `Menge (kg)`, `Item No`), up to SQL Server's 128. Every name is quoted in the SQL, its
 * quote character doubled, so no name can change a statement.
 */
const Identifier = Type.String({ minLength: 1, maxLength: 128, pattern: '^[^\\u0000-\\u001f\\u007f]*[^\\s\\u0000-\\u001f\\u007f][^\\u0000-\\u001f\\u007f]*$' })

const StoredCode = Type.Union([Type.String({ maxLength: 200 }), Type.Number()])

/** IANA time zone name such as Europe/Berlin; checked against the runtime's time zone data. */
const TimeZoneName = Type.String({ minLength: 1, maxLength: 64 })

/** A column with more than a name: legacy codes translated by a value map, or its own time zone. */
export const ColumnMappingConfig = Type.Object({
  column: Identifier,
  /** API value -> stored code (or codes; the first is written), e.g. {"vlm": "V", "true": "J"} */
  values: Type.Optional(Type.Record(Type.String(), Type.Union([StoredCode, Type.Array(StoredCode, { minItems: 1 })]), { minProperties: 1 })),
  timeZone: Type.Optional(TimeZoneName),
  /**
   * a date-time field kept in a number or text column: Unix time, or the digits of a date (and time); on SQLite
   * also Julian days, or 'yyyy-mm-dd hh:mm:ss' (its time text, written in whole seconds as CURRENT_TIMESTAMP does)
   */
  format: Type.Optional(Type.Union(TIME_FORMATS.map((f) => Type.Literal(f)))),
  /**
   * SQLite, a CHAR(n)/NCHAR(n) column: write its values padded with blanks to n characters (true), as
   * the picking system and SQL Server keep them, or as sent (false); without it the column's data decides at start
   */
  pad: Type.Optional(Type.Boolean())
}, { additionalProperties: false })

export const TableMappingConfig = Type.Object({
  schema: Type.Optional(Identifier),
  table: Identifier,
  /** a field mapped to null is not stored in this installation: always null, and a value written to it is a 400 */
  columns: Type.Record(Type.String(), Type.Union([Identifier, ColumnMappingConfig, Type.Null()])),
  /** local time zone of the table's datetime columns (default UTC) */
  timeZone: Type.Optional(TimeZoneName),
  /** list and read only: writes answer 405 */
  readOnly: Type.Optional(Type.Boolean()),
  /** an id column without identity or default: the gateway numbers a new row as the largest id plus one, under a lock */
  newIds: Type.Optional(Type.Literal('max+1')),
  /**
   * how long after stamping a row's modified time the picking system may commit it (a posting batch
   * that stamps its rows first): meta.serverTime lies that much further back, so an incremental sync
   * still finds the row (default 1000)
   */
  commitLagMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000 })),
  /** column -> value a create writes into an unmapped column (a NOT NULL one without a default: a client number, a zone) */
  defaults: Type.Optional(Type.Record(Identifier, Type.Union([Type.String({ maxLength: 4000 }), Type.Number(), Type.Boolean()]), { minProperties: 1 }))
}, { additionalProperties: false })
export type TableMappingConfig = Static<typeof TableMappingConfig>

/** Node's timers take at most 2^31-1 ms; a longer one fires after 1 ms (TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2147483647

const Ms = (def: number) => Type.Integer({ minimum: 1, maximum: MAX_TIMER_MS, default: def })

export const ControllerConfig = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$' }),
  host: Type.String({ minLength: 1 }),
  port: Type.Integer({ minimum: 1, maximum: 65535 })
}, { additionalProperties: false })
export type ControllerConfig = Static<typeof ControllerConfig>

export const SigningKey = Type.Object({
  kid: Type.String({ minLength: 1, maxLength: 64 }),
  secret: Type.String({ minLength: 1 })
}, { additionalProperties: false })

/** Asymmetric JWS algorithms an identity provider may sign with; `none` and HS* are never accepted. */
export const SSO_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const

/** one name, or several (claims tried in order; audiences any of) */
const OneOrMore = Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })])

/** One OpenID Connect identity provider (Entra ID, Keycloak, ADFS, Authentik, …). */
export const SsoProviderConfig = Type.Object({
  /** names the provider in URLs (/api/users/sso/<id>/login), credentials and the user rows it creates */
  id: Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z0-9][a-z0-9-]*$' }),
  /** exactly as the tokens' `iss` claim says; https, or http on loopback (tests) */
  issuer: Type.String({ minLength: 1 }),
  /** the access tokens' `iss` where it is not the issuer's (AD FS: http://<host>/adfs/services/trust, its access_token_issuer) */
  accessTokenIssuer: Type.Optional(Type.String({ minLength: 1 })),
  /** the `aud` the provider puts into access tokens for the gateway (one of these) */
  audience: OneOrMore,
  /** else discovered from <issuer>/.well-known/openid-configuration */
  jwksUri: Type.Optional(Type.String({ minLength: 1 })),
  /** default: what the provider advertises among RS256, PS256, ES256, EdDSA */
  algorithms: Type.Optional(Type.Array(Type.Union(SSO_ALGORITHMS.map((alg) => Type.Literal(alg))), { minItems: 1 })),
  /** claims tried in order for the identity's key (default sub): Okta's uid, a provider whose access tokens have no sub */
  subjectClaim: Type.Optional(OneOrMore),
  /** claims tried in order for the username of a new user row */
  usernameClaim: Type.Optional(OneOrMore),
  /**
   * the claim (a string or a list of strings; a dotted path such as realm_access.roles) whose values map to a
   * user type; or several, whose values count together (Keycloak's realm roles and client roles)
   */
  typeClaim: Type.Union(OneOrMore.anyOf, { default: 'roles' }),
  typeMap: Type.Record(Type.String({ minLength: 1 }), Type.Union([Type.Literal('admin'), Type.Literal('user'), Type.Literal('application')]), { minProperties: 1 }),
  /** for every request to the provider (discovery, keys, token endpoint) */
  timeoutMs: Type.Integer({ minimum: 100, maximum: 60000, default: 5000 }),
  /** browser login: the gateway's client at the provider */
  clientId: Type.Optional(Type.String({ minLength: 1 })),
  /** never in the file: systemd credential sso-<id>-client-secret or PICKING_GATEWAY_SSO_<ID>_CLIENT_SECRET */
  clientSecret: Type.Optional(Type.String({ minLength: 1 })),
  /** browser login: the public URL of GET /api/users/sso/<id>/callback, registered at the provider */
  redirectUri: Type.Optional(Type.String({ minLength: 1 })),
  scope: Type.String({ minLength: 1, default: 'openid profile email' })
}, { additionalProperties: false })
export type SsoProviderConfig = Static<typeof SsoProviderConfig>

export const Config = Type.Object({
  server: Type.Object({
    host: Type.String({ default: '127.0.0.1' }),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
    /** trust X-Forwarded-For from these proxies (true, a hop count, or addresses) */
    trustProxy: Type.Union([Type.Boolean(), Type.Integer({ minimum: 0 }), Type.String()], { default: false }),
    bodyLimit: Type.Integer({ minimum: 1024, default: 1048576 }),
    requestTimeoutMs: Ms(30000),
    keepAliveTimeoutMs: Ms(5000),
    headersTimeoutMs: Ms(10000),
    closeGraceMs: Ms(10000),
    /** answer 503 + Retry-After instead of falling over: event loop delay above this (0 = off) */
    maxEventLoopDelayMs: Type.Integer({ minimum: 0, default: 1000 }),
    /** ... or heap use above this share of V8's heap limit (0 = off) */
    maxHeapUsedRatio: Type.Number({ minimum: 0, maximum: 1, default: 0.9 }),
    tls: Type.Optional(Type.Object({
      cert: Type.String({ minLength: 1 }),
      key: Type.String({ minLength: 1 })
    }, { additionalProperties: false }))
  }, { additionalProperties: false, default: {} }),
  database: Type.Object({
    url: Type.String({ minLength: 1, default: 'sqlite:data/picking-gateway.db' }),
    /** overrides the password in an mssql:// URL (systemd credential `database-password`) */
    password: Type.Optional(Type.String()),
    connectTimeoutMs: Ms(5000),
    requestTimeoutMs: Ms(15000),
    /** when the database is down at start: how often the mapping check is tried again */
    recheckMs: Ms(5000)
  }, { additionalProperties: false, default: {} }),
  auth: Type.Object({
    /** HS256 secret, at least 32 bytes; or use `keys` for rotation */
    jwtSecret: Type.Optional(Type.String()),
    /** signing keys for rotation, newest first: the first signs, all verify (by the token's `kid`) */
    keys: Type.Optional(Type.Array(SigningKey, { minItems: 1, maxItems: 10 })),
    accessTokenTtlSeconds: Type.Integer({ minimum: 60, default: 900 }),
    refreshTokenTtlSeconds: Type.Integer({ minimum: 60, default: 2592000 }),
    /** how long a user's token version is cached; revocation takes effect within this time */
    revocationCacheMs: Type.Integer({ minimum: 0, maximum: 60000, default: 2000 }),
    argon2: Type.Object({
      memoryCost: Type.Integer({ minimum: 1024, default: 19456 }),
      timeCost: Type.Integer({ minimum: 1, default: 2 }),
      parallelism: Type.Integer({ minimum: 1, default: 1 })
    }, { additionalProperties: false, default: {} }),
    loginThrottle: Type.Object({
      /** per username and client address */
      maxFailuresPerUser: Type.Integer({ minimum: 1, default: 5 }),
      /** per username, over all addresses together */
      maxFailuresPerUserTotal: Type.Integer({ minimum: 1, default: 50 }),
      userWindowMs: Ms(900000),
      maxAttemptsPerAddress: Type.Integer({ minimum: 1, default: 20 }),
      addressWindowMs: Ms(60000)
    }, { additionalProperties: false, default: {} }),
    /** OpenID Connect providers whose access tokens are accepted and whose users may log in in a browser */
    sso: Type.Array(SsoProviderConfig, { default: [], maxItems: 20 })
  }, { additionalProperties: false, default: {} }),
  licence: Type.Object({
    logins: Type.Integer({ minimum: 0, default: 1 })
  }, { additionalProperties: false, default: {} }),
  mapping: Type.Object({
    materials: Type.Optional(TableMappingConfig),
    stations: Type.Optional(TableMappingConfig),
    users: Type.Optional(TableMappingConfig)
  }, { additionalProperties: false, default: {} }),
  hardware: Type.Object({
    enabled: Type.Boolean({ default: true }),
    controllers: Type.Array(ControllerConfig, { default: [] }),
    maxQueue: Type.Integer({ minimum: 1, default: 32 }),
    maxFrameBytes: Type.Integer({ minimum: 64, default: 65536 }),
    /** how long an event waits for the database to name its station before it goes out without one */
    stationLookupMs: Ms(5000),
    timings: Type.Object({
      ackTimeout: Ms(2000),
      heartbeatIdle: Ms(10000),
      deadAfter: Ms(30000),
      backoffInitial: Ms(1000),
      backoffMax: Ms(30000),
      stableAfter: Ms(60000),
      connectTimeout: Ms(5000)
    }, { additionalProperties: false, default: {} })
  }, { additionalProperties: false, default: {} }),
  events: Type.Object({
    /** SSE comment lines keep proxies from closing an idle stream */
    heartbeatMs: Ms(15000),
    /** how often an open stream checks its caller's token again (expiry, revocation); ends the stream when it no longer holds */
    recheckMs: Ms(5000),
    /** a client that lets this much pile up unread is disconnected instead of slowing the others */
    maxBufferedBytes: Type.Integer({ minimum: 1024, default: 1048576 }),
    /** event streams one user may hold open at once; one more is a 429 */
    maxStreamsPerUser: Type.Integer({ minimum: 1, maximum: 100000, default: 100 })
  }, { additionalProperties: false, default: {} }),
  logging: Type.Object({
    level: Type.Union([
      Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'),
      Type.Literal('info'), Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')
    ], { default: 'info' })
  }, { additionalProperties: false, default: {} })
}, { additionalProperties: false })

export type Config = Static<typeof Config>
