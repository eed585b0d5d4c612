// Loads the configuration (file, then environment, then systemd credentials), validates it, and explains what is wrong.
import { randomBytes, X509Certificate } from 'node:crypto'
import { isIP } from 'node:net'
import { createSecureContext } from 'node:tls'
import { chmodSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { domainToASCII, fileURLToPath } from 'node:url'
import proxyAddr from '@fastify/proxy-addr'
import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { ColumnMappingConfig, Config, type TableMappingConfig } from '../schemas/config.js'
import { mappingProblems, referenceMappings, resources, type ResourceName } from './db/resources.js'
import { compileValueMap } from './db/storage.js'
import { isTimeZone } from './db/time-zone.js'
import type { TableMapping } from './db/types.js'
import { JSON_QUOTED_TEXT, jsonSyntaxWords } from './errors.js'

export { Config }

/** The repository root (two levels up from dist/src or one from src under tsx). */
export const packageRoot = (() => {
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir)
  return dir
})()

export const demoDataDir = join(packageRoot, 'data')

/** Exit code for configuration errors (EX_CONFIG from sysexits.h); systemd does not restart on it. */
export const EXIT_CONFIG = 78

export class ConfigError extends Error {
  readonly problems: string[]
  constructor (problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.name = 'ConfigError'
    this.problems = problems
  }
}

/** Keys whose values are never printed, not even in error messages. */
const SECRET_KEYS = new Set(['auth.jwtSecret', 'database.password', 'database.url'])
/** Any key whose name contains one of these words (auth.sso.0.clientSecret, database.password). */
const SECRET_KEY_PATTERN = /secret|password/i
/** Keys whose value holds secrets when it has the wrong shape: `"keys": ["<secret>"]`, `"database": "mssql://user:password@…"`. */
const SECRET_HOLDERS = /^(?:\(root\)|auth|auth\.keys(?:\.\d+)?|auth\.sso(?:\.\d+)?|database)$/

/** Publicly known or trivially guessable secrets that are refused even if long enough. */
const KNOWN_WEAK_SECRETS = ['secret', 'changeme', 'change-me', 'password', 'jwt-secret', 'supersecret', 'default', 'test', 'example', 'your-256-bit-secret', 'picking-gateway']

export const MIN_SECRET_BYTES = 32

export interface LoadedConfig {
  config: Config
  /** true when neither DATABASE_URL nor PICKING_GATEWAY_CONFIG is set: the embedded demo */
  demo: boolean
  /** where the configuration came from, for the start-up log line */
  source: string
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv
  /** where the demo keeps its database and generated secret */
  dataDir?: string
  /**
   * false for a command that signs and verifies no token (db introspect): a missing secret is no
   * problem then, and the demo generates none; a secret given is still checked, as every other key
   */
  secretNeeded?: boolean
}

export function loadConfig (options: LoadOptions = {}): LoadedConfig {
  const env = options.env ?? process.env
  const dataDir = options.dataDir ?? demoDataDir
  const problems: string[] = []
  let raw: Record<string, any> = {}
  const file = env.PICKING_GATEWAY_CONFIG
  if (file) {
    raw = readConfigFile(file, problems)
    refuseSsoSecretsInFile(raw, problems)
  }
  const demo = !file && !env.DATABASE_URL

  applyEnv(raw, env, problems)
  const beforeCredentials = raw.auth?.jwtSecret
  applyCredentials(raw, env, problems)
  // a weak secret is named where the admin put it
  const secretSource = env.PICKING_GATEWAY_JWT_SECRET ? 'PICKING_GATEWAY_JWT_SECRET' : raw.auth?.jwtSecret !== beforeCredentials ? 'credential jwt-secret' : undefined
  let unusableDemoSecret = false
  if (demo) {
    raw.database = { ...raw.database, url: `sqlite:${join(dataDir, 'picking-gateway.db')}` }
    raw.licence = { logins: 5, ...raw.licence }
    if (!raw.auth?.jwtSecret && !raw.auth?.keys && options.secretNeeded !== false) {
      raw.auth = { ...raw.auth, jwtSecret: demoSecret(dataDir, problems) }
      // a kept secret it cannot use is named as such (demoSecret), not as one missing
      unusableDemoSecret = raw.auth.jwtSecret === undefined
    }
  }

  // a bad URL is named where the admin put it, as HOST, PORT and LOG_LEVEL are (the demo sets its own)
  const urlSource = env.DATABASE_URL ? 'DATABASE_URL' : undefined
  const config = validateConfig(raw, problems, secretSource, options.secretNeeded === false || unusableDemoSecret, urlSource)
  return { config, demo, source: file ? resolve(file) : demo ? 'embedded demo' : 'environment' }
}

/** Validates a raw object (defaults applied); throws ConfigError listing every problem. */
export function validateConfig (raw: unknown, problems: string[] = [], secretSource = 'auth.jwtSecret', secretOptional = false, urlSource = 'database.url'): Config {
  // Value.Default turns an object where a list with a default belongs into that (empty) list, and a list where
  // an object belongs into the defaults: "controllers": {…} without brackets would run with no controllers,
  // "server": […] on 127.0.0.1:3000. So the shape is checked on the file as written, before the defaults.
  const misshapen = shapeProblems(Config, raw ?? {}, '')
  for (const { path, expected, value } of misshapen) problems.push(describeError(path, `Expected ${expected}`, value))
  const withDefaults = Value.Default(Config, structuredClone(raw ?? {}))
  for (const error of Value.Errors(Config, withDefaults)) {
    if (misshapen.some(({ path }) => error.path === path || error.path.startsWith(path + '/'))) continue
    // a column given as an object: what is wrong inside it (an unknown key, a misspelt format), not "expected union value"
    if (/^\/mapping\/\w+\/columns\/[^/]+$/.test(error.path) && typeof error.value !== 'string') {
      if (error.value === null || typeof error.value !== 'object' || Array.isArray(error.value)) {
        problems.push(`${error.path.slice(1).replaceAll('/', '.')}: expected a column name, {"column": …} or null, got ${JSON.stringify(error.value) ?? 'nothing'}`)
        continue
      }
      for (const inner of Value.Errors(ColumnMappingConfig, error.value)) {
        problems.push(describeError(error.path + inner.path, inner.message, inner.value, inner.schema as { anyOf?: Array<{ const?: unknown }> }))
      }
      continue
    }
    problems.push(describeError(error.path, error.message, error.value, error.schema as { anyOf?: Array<{ const?: unknown }> }))
  }
  // The checks beyond the schema run on whatever parts have the right shape, so every problem is listed at once.
  const config = withDefaults as Config
  if (config.auth?.keys === undefined || Array.isArray(config.auth.keys)) checkSecrets(config, problems, secretSource, secretOptional)
  if (typeof config.database?.url === 'string') checkDatabaseUrl(config.database.url, problems, config.database.password !== undefined, urlSource)
  if (Array.isArray(config.auth?.sso)) checkSso(config.auth.sso, problems)
  if (config.server !== null && typeof config.server === 'object') {
    checkTrustProxy(config.server.trustProxy, problems)
    const problem = typeof config.server.host === 'string' ? hostProblem(config.server.host) : undefined
    if (problem !== undefined) problems.push(`server.host: ${problem}`)
  }
  if (config.hardware !== null && typeof config.hardware === 'object') checkHardware(config.hardware, problems)
  for (const name of Object.keys(config.mapping ?? {}) as ResourceName[]) {
    const mapping = config.mapping[name]
    if (mapping && typeof mapping.columns === 'object' && mapping.columns !== null) {
      const normalized = normalizeMapping(mapping)
      // a field's problem under the key the file has for it: mapping.materials.columns.name, not mapping.materials.name
      problems.push(...mappingProblems(resources[name], normalized).map((p) => `mapping.${p.replace(/^(\w+)\.(\w+):/, '$1.columns.$2:')}`))
      problems.push(...valueProblems(name, normalized))
      if (name === 'users' && mapping.readOnly === true) problems.push('mapping.users.readOnly: the gateway writes its user table (logins, passwords); it cannot be read-only')
    }
  }
  if (problems.length === 0) return config
  throw new ConfigError(dedupe(problems))
}

function dedupe (list: string[]): string[] {
  return [...new Set(list)]
}

/** Where the raw configuration has a list for an object or an object for a list (JSON pointer paths). */
function shapeProblems (schema: TSchema | undefined, value: unknown, path: string): Array<{ path: string, expected: string, value: unknown }> {
  if (value === undefined || value === null || typeof value !== 'object' || schema === undefined || schema === null || typeof schema !== 'object') return []
  if (schema.type === 'array' && !Array.isArray(value)) return [{ path, expected: 'array', value }]
  if (schema.type === 'object' && Array.isArray(value)) return [{ path, expected: 'object', value }]
  if (schema.type === 'array' && Array.isArray(value)) return value.flatMap((item, i) => shapeProblems(schema.items, item, `${path}/${i}`))
  if (schema.type === 'object' && schema.properties !== undefined) {
    return Object.entries(value as Record<string, unknown>).flatMap(([key, item]) =>
      Object.hasOwn(schema.properties, key) ? shapeProblems(schema.properties[key] as TSchema, item, `${path}/${key}`) : [])
  }
  return []
}

function describeError (path: string, message: string, value: unknown, schema?: { anyOf?: Array<{ const?: unknown, type?: unknown }> }): string {
  const key = path.replace(/^\//, '').replace(/\//g, '.') || '(root)'
  if (message.startsWith('Unexpected property')) return `${key}: unknown key`
  const shown = SECRET_KEYS.has(key) || SECRET_KEY_PATTERN.test(key) || SECRET_HOLDERS.test(key) ? '<hidden>' : JSON.stringify(value)
  // a choice of fixed values (logging.level): name them instead of "expected union value"
  const choices = schema?.anyOf?.every((s) => typeof s.const === 'string') === true ? schema.anyOf.map((s) => s.const as string) : undefined
  if (choices !== undefined) return `${key}: expected one of ${choices.join(', ')}, got ${shown === undefined ? 'nothing' : shown}`
  // one line for a missing key (the schema reports it as missing and as of the wrong type)
  if (value === undefined) {
    const table = /^mapping\.(\w+)\.columns$/.exec(key)?.[1]
    const def = table !== undefined && Object.hasOwn(resources, table) ? resources[table as ResourceName] : undefined
    return def === undefined
      ? `${key}: missing`
      : `${key}: missing; map each field of ${table} to its column, or to null where the table has none: ${Object.keys(def.fields).join(', ')}`
  }
  // a name or a list of names (auth.sso audience, typeClaim): what is wanted, not "expected union value"
  if (schema?.anyOf?.length === 2 && schema.anyOf[0].type === 'string' && schema.anyOf[1].type === 'array') return `${key}: expected a non-empty string or a non-empty list of non-empty strings, got ${shown ?? 'nothing'}`
  // only the first letter: the rest may quote a pattern or a name whose case matters
  return `${key}: ${message.charAt(0).toLowerCase()}${message.slice(1)}, got ${shown === undefined ? 'nothing' : shown}`
}

function readConfigFile (file: string, problems: string[]): Record<string, any> {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    problems.push(`${file}: cannot read the configuration file (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
    return {}
  }
  try {
    const parsed = JSON.parse(text)
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      problems.push(`${file}: expected a JSON object at the top level`)
      return {}
    }
    return parsed
  } catch (err) {
    problems.push(`${file}: not valid JSON (${jsonProblem((err as Error).message, text)})`)
    return {}
  }
}

/**
 * JSON.parse's words about a configuration file, without the piece of it that V8 quotes around an
 * unexpected token: a secret written without quotes went to the journal, whose readers need not be the
 * file's. That token's place is told instead, found from the piece (10 characters either side of it;
 * a short file is quoted whole, which tells no place); the other messages give their position themselves.
 */
function jsonProblem (message: string, text: string): string {
  const words = jsonSyntaxWords(message, 'it may be a secret written without quotes')
  const quoted = JSON_QUOTED_TEXT.exec(message)
  if (quoted === null) return words
  const [, before, piece, after] = quoted
  const start = before === undefined ? 0 : after === undefined ? text.length - piece.length : text.indexOf(piece)
  const at = before === undefined ? piece.length - 10 : start + 10
  // a short file (quoted whole), or a piece not found as quoted: no place rather than a wrong one
  if ((before === undefined && after === undefined) || start < 0 || text.slice(start, start + piece.length) !== piece || at < 0 || at >= text.length) return words
  const line = text.slice(0, at).split('\n').length
  return `${words} at line ${line}, column ${at - text.lastIndexOf('\n', at - 1)}`
}

function applyEnv (raw: Record<string, any>, env: NodeJS.ProcessEnv, problems: string[]): void {
  const section = (name: string): Record<string, any> => {
    if (raw[name] === undefined) raw[name] = {}
    return raw[name]
  }
  if (env.HOST) {
    // named as set, as PORT and LOG_LEVEL are: not the file's server.host
    const problem = hostProblem(env.HOST)
    if (problem === undefined) section('server').host = env.HOST
    else problems.push(`HOST: ${problem}`)
  }
  if (env.PORT) {
    const port = /^\d+$/.test(env.PORT) ? Number(env.PORT) : NaN
    if (Number.isInteger(port) && port <= 65535) section('server').port = port
    else problems.push(`PORT: expected an integer from 0 to 65535, got ${JSON.stringify(env.PORT)}`)
  }
  if (env.DATABASE_URL) section('database').url = env.DATABASE_URL
  if (env.PICKING_GATEWAY_JWT_SECRET) section('auth').jwtSecret = env.PICKING_GATEWAY_JWT_SECRET
  if (env.LOG_LEVEL) {
    // named as set: "logging.level" sent people to a configuration file that said "info"
    const levels = Config.properties.logging.properties.level.anyOf.map((s) => s.const)
    if ((levels as string[]).includes(env.LOG_LEVEL)) section('logging').level = env.LOG_LEVEL
    else problems.push(`LOG_LEVEL: expected one of ${levels.join(', ')}, got ${JSON.stringify(env.LOG_LEVEL)}`)
  }
  for (const provider of ssoEntries(raw)) {
    const secret = env[ssoSecretEnv(provider.id)]
    if (secret) provider.clientSecret = secret
  }
}

/** The raw auth.sso entries that have an id (the schema reports the others). */
function ssoEntries (raw: Record<string, any>): Array<Record<string, any> & { id: string }> {
  const list: unknown = raw.auth?.sso
  if (!Array.isArray(list)) return []
  return list.filter((p): p is Record<string, any> & { id: string } => p !== null && typeof p === 'object' && typeof p.id === 'string')
}

/** PICKING_GATEWAY_SSO_<ID>_CLIENT_SECRET: the provider id upper-cased, '-' as '_'. */
function ssoSecretEnv (id: string): string {
  return `PICKING_GATEWAY_SSO_${id.toUpperCase().replaceAll('-', '_')}_CLIENT_SECRET`
}

/** A client secret is never kept in the file, which is readable by more people than the credential. */
function refuseSsoSecretsInFile (raw: Record<string, any>, problems: string[]): void {
  const list: unknown = raw.auth?.sso
  if (!Array.isArray(list)) return
  list.forEach((provider: unknown, i) => {
    if (provider === null || typeof provider !== 'object' || !('clientSecret' in provider)) return
    const given = (provider as { id?: unknown }).id
    const id = typeof given === 'string' ? given : '<id>'
    problems.push(`auth.sso.${i}.clientSecret: the client secret does not belong in the configuration file; use the systemd credential sso-${id}-client-secret or ${ssoSecretEnv(id)}`)
    delete (provider as { clientSecret?: unknown }).clientSecret
  })
}

/** systemd's LoadCredential= puts secrets as files into $CREDENTIALS_DIRECTORY. */
function applyCredentials (raw: Record<string, any>, env: NodeJS.ProcessEnv, problems: string[]): void {
  const dir = env.CREDENTIALS_DIRECTORY
  if (!dir) return
  const read = (name: string): string | undefined => {
    const path = join(dir, name)
    if (!existsSync(path)) return undefined
    try {
      return readFileSync(path, 'utf8').replace(/\r?\n$/, '')
    } catch (err) {
      problems.push(`credential ${name}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
      return undefined
    }
  }
  const jwt = read('jwt-secret')
  if (jwt !== undefined && !env.PICKING_GATEWAY_JWT_SECRET) raw.auth = { ...raw.auth, jwtSecret: jwt }
  for (const provider of ssoEntries(raw)) {
    const secret = read(`sso-${provider.id}-client-secret`)
    if (secret !== undefined && secret !== '' && !env[ssoSecretEnv(provider.id)]) provider.clientSecret = secret
  }
  const dbPassword = read('database-password')
  // An empty credential file means "no separate password" (systemd requires the file to exist).
  if (dbPassword !== undefined && dbPassword !== '') raw.database = { ...raw.database, password: dbPassword }
}

function checkSecrets (config: Config, problems: string[], secretSource: string, optional: boolean): void {
  const { keys, jwtSecret } = config.auth ?? {}
  if (keys !== undefined) {
    const kids = new Set<string>()
    keys.forEach((key, i) => {
      if (typeof key?.secret !== 'string') return
      if (kids.has(key.kid)) problems.push(`auth.keys.${i}.kid: '${key.kid}' appears twice`)
      kids.add(key.kid)
      checkSecret(`auth.keys.${i}.secret`, key.secret, problems)
    })
    return
  }
  if (typeof jwtSecret !== 'string' || jwtSecret === '') {
    if (jwtSecret !== undefined && jwtSecret !== '') return // wrong type: the schema already said so
    if (optional) return
    problems.push('auth.jwtSecret: missing; set PICKING_GATEWAY_JWT_SECRET, auth.jwtSecret (or auth.keys) in the configuration file, or the systemd credential jwt-secret')
    return
  }
  checkSecret(secretSource, jwtSecret, problems)
}

function checkSecret (key: string, secret: string, problems: string[]): void {
  if (Buffer.byteLength(secret) < MIN_SECRET_BYTES) {
    problems.push(`${key}: expected at least ${MIN_SECRET_BYTES} bytes, got ${Buffer.byteLength(secret)} (generate one with: openssl rand -base64 48)`)
  } else if (isWeakSecret(secret)) {
    problems.push(`${key}: a well-known default or repeated text is not a secret; generate one with: openssl rand -base64 48`)
  }
}

/** Where each resource lives: the configured mapping, the reference schema for the rest. */
export function mappingsOf (config: Config): Record<ResourceName, TableMapping> {
  const out = { ...referenceMappings }
  for (const [name, mapping] of Object.entries(config.mapping ?? {}) as Array<[ResourceName, TableMappingConfig | undefined]>) {
    if (mapping !== undefined) out[name] = normalizeMapping(mapping)
  }
  return out
}

/** The configuration's mapping (a column name, or {column, values, timeZone}) as the database layer takes it. */
export function normalizeMapping (config: TableMappingConfig): TableMapping {
  const mapping: TableMapping = { table: config.table, columns: {} }
  if (config.schema !== undefined) mapping.schema = config.schema
  if (config.timeZone !== undefined) mapping.timeZone = config.timeZone
  if (config.readOnly !== undefined) mapping.readOnly = config.readOnly
  if (config.newIds !== undefined) mapping.newIds = config.newIds
  if (config.commitLagMs !== undefined) mapping.commitLagMs = config.commitLagMs
  if (config.defaults !== undefined) mapping.defaults = { ...config.defaults }
  for (const [field, entry] of Object.entries(config.columns)) {
    if (entry === null) {
      (mapping.absent ??= []).push(field)
      continue
    }
    if (typeof entry === 'string') {
      mapping.columns[field] = entry
      continue
    }
    if (entry === null || typeof entry !== 'object') continue
    mapping.columns[field] = entry.column
    if (entry.values !== undefined) (mapping.values ??= {})[field] = entry.values
    if (entry.timeZone !== undefined) (mapping.timeZones ??= {})[field] = entry.timeZone
    // the schema reports a format of another type (null); only a known one reaches the database layer
    if (typeof entry.format === 'string') (mapping.timeFormats ??= {})[field] = entry.format
    if (entry.pad !== undefined) (mapping.pads ??= {})[field] = entry.pad
  }
  return mapping
}

/** Value maps that do not fit their field, and time zones the runtime does not know. */
function valueProblems (name: ResourceName, mapping: TableMapping): string[] {
  const problems: string[] = []
  const def = resources[name]
  for (const [field, values] of Object.entries(mapping.values ?? {})) {
    const f = def.fields[field]
    if (f === undefined) continue
    if (f.id === true || f.kind === 'datetime') {
      problems.push(`mapping.${name}.columns.${field}.values: ${f.id === true ? 'the id' : 'a date-time field'} cannot have a value map`)
      continue
    }
    const strange = f.enum === undefined ? [] : Object.keys(values).filter((key) => !f.enum!.includes(key))
    if (strange.length > 0) {
      problems.push(`mapping.${name}.columns.${field}.values: ${strange.map((k) => JSON.stringify(k)).join(', ')} ${strange.length === 1 ? 'is not a value' : 'are not values'} of ${field}; expected ${f.enum!.join(', ')}`)
      continue
    }
    try {
      compileValueMap(f.kind, values)
    } catch (err) {
      problems.push(`mapping.${name}.columns.${field}.values: ${(err as Error).message}`)
    }
  }
  for (const [field, format] of Object.entries(mapping.timeFormats ?? {})) {
    const f = def.fields[field]
    if (f === undefined) continue
    if (f.kind !== 'datetime') problems.push(`mapping.${name}.columns.${field}.format: only a date-time field has a format (${field} is ${f.kind === 'integer' ? 'an integer' : `a ${f.kind}`})`)
    else if (format.startsWith('unix') && mapping.timeZones?.[field] !== undefined) problems.push(`mapping.${name}.columns.${field}: Unix time is an instant, in no time zone; remove timeZone (or use the format yyyymmddhhmmss for a local time)`)
  }
  for (const field of Object.keys(mapping.timeZones ?? {})) {
    const f = def.fields[field]
    // a zone on a field that holds no time would be ignored: most likely the wrong field
    if (f !== undefined && f.kind !== 'datetime') problems.push(`mapping.${name}.columns.${field}.timeZone: only a date-time field has a time zone (${field} is ${f.kind === 'integer' ? 'an integer' : `a ${f.kind}`})`)
  }
  const zones: Array<[string, string]> = [
    ...(mapping.timeZone === undefined ? [] : [[`mapping.${name}.timeZone`, mapping.timeZone] as [string, string]]),
    ...Object.entries(mapping.timeZones ?? {}).map(([field, zone]): [string, string] => [`mapping.${name}.columns.${field}.timeZone`, zone])
  ]
  for (const [key, zone] of zones) {
    if (!isTimeZone(zone)) problems.push(`${key}: unknown time zone ${JSON.stringify(zone)}; expected an IANA name such as Europe/Berlin`)
  }
  return problems
}

/** The keys tokens are signed and verified with: auth.keys, or auth.jwtSecret as the single key 'default'. */
export function signingKeys (config: Config): Array<{ kid: string, secret: string }> {
  return config.auth.keys ?? [{ kid: 'default', secret: config.auth.jwtSecret! }]
}

export function isWeakSecret (secret: string): boolean {
  const lower = secret.toLowerCase()
  if (KNOWN_WEAK_SECRETS.some((weak) => lower.replaceAll(weak, '') === '')) return true
  return new Set(secret).size < 8
}

/** https anywhere; plain http only to this machine (a test provider), never across a network. */
export function isHttpsOrLoopback (url: URL): boolean {
  if (url.protocol === 'https:') return true
  if (url.protocol !== 'http:') return false
  const host = url.hostname.replace(/^\[|\]$/g, '')
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
}

function checkSso (providers: Config['auth']['sso'], problems: string[]): void {
  const ids = new Set<string>()
  const issuers = new Set<string>()
  providers.forEach((provider, i) => {
    if (provider === null || typeof provider !== 'object') return
    const key = `auth.sso.${i}`
    if (typeof provider.id === 'string') {
      if (ids.has(provider.id)) problems.push(`${key}.id: '${provider.id}' appears twice`)
      ids.add(provider.id)
    }
    for (const field of ['issuer', 'accessTokenIssuer'] as const) {
      const value = provider[field]
      if (typeof value !== 'string') continue
      if (field === 'accessTokenIssuer' && value === provider.issuer) {
        problems.push(`${key}.accessTokenIssuer: ${JSON.stringify(value)} is the entry's own issuer; leave accessTokenIssuer out where the access tokens name the issuer`)
        continue
      }
      if (issuers.has(value)) problems.push(`${key}.${field}: ${JSON.stringify(value)} appears twice; one entry per provider`)
      issuers.add(value)
    }
    for (const field of ['issuer', 'accessTokenIssuer', 'jwksUri'] as const) {
      const value = provider[field]
      if (typeof value !== 'string') continue
      const url = parseUrl(value)
      // Nothing is fetched from an issuer with a jwksUri and no browser login, nor from an accessTokenIssuer:
      // they are only compared with the tokens' iss, which ADFS writes into its access tokens as
      // http://<host>/adfs/services/trust.
      const fetched = field === 'jwksUri' || (field === 'issuer' && (provider.jwksUri === undefined || provider.clientId !== undefined))
      if (url === undefined || url.search !== '' || url.hash !== '') {
        problems.push(`${key}.${field}: expected an absolute URL without query or fragment, got ${JSON.stringify(value)}`)
      } else if (fetched && !isHttpsOrLoopback(url)) {
        problems.push(`${key}.${field}: expected https:// (plain http only on loopback, for tests${field === 'issuer' ? '; or with a jwksUri and no browser login, where the issuer is only compared with the tokens\' iss; or, where only the access tokens name it (AD FS), as accessTokenIssuer beside the https issuer' : ''}), got ${JSON.stringify(value)}`)
      }
    }
    const browser = [provider.clientId, provider.redirectUri].filter((v) => v !== undefined).length
    if (browser === 1) problems.push(`${key}: browser login needs both clientId and redirectUri (or neither, for access tokens only)`)
    if (provider.clientSecret !== undefined && provider.clientId === undefined) problems.push(`${key}: a client secret without clientId is of no use`)
    // without it the provider sends no ID token (or refuses the request): every browser login would fail
    if (typeof provider.scope === 'string' && provider.clientId !== undefined && !provider.scope.split(' ').includes('openid')) {
      problems.push(`${key}.scope: the browser login needs the scope 'openid' (it reads the ID token), got ${JSON.stringify(provider.scope)}`)
    }
    if (typeof provider.redirectUri === 'string') {
      const url = parseUrl(provider.redirectUri)
      const path = `/api/users/sso/${provider.id}/callback`
      if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
        problems.push(`${key}.redirectUri: expected an absolute http(s) URL, got ${JSON.stringify(provider.redirectUri)}`)
      } else if (!url.pathname.endsWith(path)) {
        problems.push(`${key}.redirectUri: must be the gateway's ${path} as the browser reaches it, got ${JSON.stringify(provider.redirectUri)}`)
      }
    }
  })
}

/** a host name's labels (RFC 1123; an underscore too, as Windows networks name machines), 253 characters at most */
const HOST_NAME = /^(?=.{1,253}\.?$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/

/**
 * Why a listen address is none: serve would fail at every start with ENOTFOUND, which systemd
 * restarts as a passing fault (an address not yet on the machine), and check-config passed it.
 * Undefined for an IP address or a host name, which only the listen itself can try.
 */
export function hostProblem (host: string): string | undefined {
  if (isIP(host) !== 0 || HOST_NAME.test(host)) return undefined
  // an internationalized name (lager-süd.example): the listen looks it up as its punycode, as a browser does
  if (/[^\x00-\x7f]/.test(host) && HOST_NAME.test(domainToASCII(host))) return undefined
  const got = `got ${JSON.stringify(host)}`
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(host)) return `expected an IP address or host name without a scheme (the gateway serves HTTPS when server.tls is set), ${got}`
  if (/^\[.*\]$/.test(host) && isIP(host.slice(1, -1)) === 6) return `expected an IPv6 address without brackets (${host.slice(1, -1)}), ${got}`
  const port = /^(.*):(\d+)$/.exec(host)
  if (port !== null && (isIP(port[1].replace(/^\[|\]$/g, '')) !== 0 || HOST_NAME.test(port[1]))) return `expected an IP address or host name without a port (the port is server.port, or PORT in the environment), ${got}`
  return `expected an IP address (0.0.0.0 for every interface of this machine, 127.0.0.1 for itself alone) or a host name, ${got}`
}

/**
 * server.trustProxy as Fastify will take it, checked at load: a list entry Fastify's own parser
 * (@fastify/proxy-addr) refuses would otherwise stop the server when it is built, with words that
 * name no key, after check-config had said the file was fine.
 */
function checkTrustProxy (trustProxy: unknown, problems: string[]): void {
  if (typeof trustProxy === 'number' && Number.isInteger(trustProxy) && trustProxy > 0) {
    // Fastify 5 trusts no proxy for a hop count (it cannot tell the nearest peer is the proxy), so X-Forwarded-For would be ignored
    problems.push(`server.trustProxy: a hop count (${trustProxy}) makes the gateway trust no proxy at all; give the proxy's address instead, e.g. "127.0.0.1"`)
  } else if (typeof trustProxy === 'string') {
    const bad = trustProxy.split(',').map((entry) => entry.trim()).filter((entry) => {
      try {
        proxyAddr.compile(entry)
        return false
      } catch {
        return true
      }
    })
    if (bad.length > 0) {
      problems.push(`server.trustProxy: ${bad.map((entry) => JSON.stringify(entry)).join(', ')} ${bad.length === 1 ? 'is' : 'are'} not an IP address, address/prefix or address/netmask, nor loopback, linklocal or uniquelocal; expected for example "127.0.0.1" or "10.0.0.0/8, ::1"`)
    }
  }
}

/**
 * server.tls's certificate and key, read and tried as TLS will use them, by serve (buildApp) and
 * check-config alone: the one-shot commands serve no HTTP, and the admin running them need not be able
 * to read the service's key. A file that cannot be read, or a key that is not the certificate's, is a
 * configuration error naming the key (exit 78; before: exit 1 with Node's ENOENT or OpenSSL's words).
 */
export function readTls (tls: { cert: string, key: string }): { cert: Buffer, key: Buffer } {
  const problems: string[] = []
  const read = (name: 'cert' | 'key'): Buffer | undefined => {
    try {
      return readFileSync(tls[name])
    } catch (err) {
      problems.push(`server.tls.${name}: cannot read ${JSON.stringify(tls[name])} (${(err as NodeJS.ErrnoException).code ?? 'error'}); the gateway's user must be able to read it`)
      return undefined
    }
  }
  const cert = read('cert')
  const key = read('key')
  if (cert !== undefined && key !== undefined) {
    try {
      createSecureContext({ cert, key })
    } catch (err) {
      // OpenSSL's words ("key values mismatch", "no start line") quote nothing of the key
      problems.push(`server.tls: ${JSON.stringify(tls.cert)} and ${JSON.stringify(tls.key)} are not a PEM certificate and its private key (${(err as Error).message})`)
    }
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return { cert: cert!, key: key! }
}

/**
 * An expired (or not yet valid) certificate: the gateway serves with it, but every client that checks
 * certificates refuses the connection, so serve logs it and check-config says it. `pem`: the file at
 * `path` as readTls read it. Nothing when it does not parse as a certificate (readTls reports that).
 */
export function tlsValidityWarning (path: string, pem: Buffer, now = Date.now()): string | undefined {
  let cert: X509Certificate
  try {
    cert = new X509Certificate(pem)
  } catch {
    return undefined
  }
  const from = Date.parse(cert.validFrom)
  const to = Date.parse(cert.validTo)
  if (now > to) return `server.tls.cert: the certificate ${JSON.stringify(path)} expired on ${new Date(to).toISOString()}; clients that check certificates refuse the connection: renew it`
  if (now < from) return `server.tls.cert: the certificate ${JSON.stringify(path)} is valid only from ${new Date(from).toISOString()}; clients that check certificates refuse the connection until then (check the clock)`
  return undefined
}

function checkHardware (hardware: Config['hardware'], problems: string[]): void {
  // two entries with one id: the gateway keeps a single link per id, so one controller would never be driven
  const ids = new Set<string>()
  if (Array.isArray(hardware.controllers)) {
    hardware.controllers.forEach((controller, i) => {
      if (controller === null || typeof controller !== 'object' || typeof controller.id !== 'string') return
      if (ids.has(controller.id)) problems.push(`hardware.controllers.${i}.id: '${controller.id}' appears twice; one entry per controller`)
      ids.add(controller.id)
    })
  }
  const { heartbeatIdle, deadAfter } = hardware.timings ?? {}
  // a PING goes out only after heartbeatIdle: a link declared dead before it would drop whenever it is quiet
  if (Number.isInteger(heartbeatIdle) && Number.isInteger(deadAfter) && deadAfter <= heartbeatIdle) {
    problems.push(`hardware.timings.deadAfter: must be greater than hardware.timings.heartbeatIdle (${heartbeatIdle}), got ${deadAfter}; the defaults are 30000 and 10000`)
  }
}

function parseUrl (text: string): URL | undefined {
  try {
    return new URL(text)
  } catch {
    return undefined
  }
}

/** `separatePassword`: database.password (or its credential) is set, and the URL's password is not used (parseMssqlUrl) */
function checkDatabaseUrl (url: string, problems: string[], separatePassword: boolean, key: string): void {
  if (/^sqlite:.+/.test(url)) return
  if (/^mssql:\/\/[^/]+\/[^/?]+/.test(url)) {
    // what the connection decodes (parseMssqlUrl), checked here: a password with a literal '%' was
    // 'URI malformed' at start, exit 1, and check-config called the file OK. Never the value itself.
    let u: URL
    try {
      u = new URL(url)
    } catch {
      problems.push(`${key}: not a valid URL (a port beyond 65535, or a character a URL cannot hold unencoded)`)
      return
    }
    const parts: Array<[string, string]> = [['user', u.username], ...(separatePassword ? [] : [['password', u.password] as [string, string]]), ['database name', u.pathname.slice(1)]]
    const bad = parts.filter(([, text]) => { try { decodeURIComponent(text); return false } catch { return true } }).map(([name]) => name)
    if (bad.length > 0) problems.push(`${key}: the ${bad.join(' and ')} ${bad.length === 1 ? 'holds' : 'hold'} a '%' that starts no percent-escape: percent-encode ${bad.length === 1 ? 'it' : 'them'} (a literal % is %25)`)
    return
  }
  problems.push(`${key}: expected sqlite:<path> or mssql://<user>:<password>@<host>[:port]/<database>[?options]`)
}

/**
 * The demo's kept secret; one it cannot use (an empty file, a directory) is a problem naming the file and
 * what to do, where it was 'auth.jwtSecret: missing', which named nothing the demo's user had set, or EISDIR.
 */
function keptSecret (path: string, problems: string[]): string | undefined {
  const fix = 'the demo generates a new one (tokens it signed before are then refused)'
  let text: string
  try {
    text = readFileSync(path, 'utf8').trim()
  } catch (err) {
    problems.push(`${path}: the demo's JWT secret cannot be read (${(err as { code?: string }).code ?? String(err)}); delete it, and ${fix}`)
    return undefined
  }
  if (text === '') problems.push(`${path}: the demo's JWT secret is empty; delete the file, and ${fix}`)
  return text === '' ? undefined : text
}

/** A demo's temporary secret file: jwt-secret.<pid>.<12 hex digits> (demoSecret's `own`). */
const SECRET_TEMP = /^jwt-secret\.(\d+)\.[0-9a-f]{12}$/

function running (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: there, another user's
    return (err as { code?: unknown }).code !== 'ESRCH'
  }
}

/**
 * Removes the temporary secret files of demos killed between writing and removing theirs, which stayed for
 * ever: those whose process is gone, or older than a minute (its pid taken since by another, as pid 1 in a
 * container). One that a demo starting at this moment is writing is neither. A file it cannot remove stays.
 */
function removeLeftoverSecrets (dataDir: string): void {
  let names: string[]
  try {
    names = readdirSync(dataDir)
  } catch {
    return
  }
  for (const name of names) {
    const pid = SECRET_TEMP.exec(name)?.[1]
    if (pid === undefined) continue
    const file = join(dataDir, name)
    try {
      if (!running(Number(pid)) || Date.now() - statSync(file).mtimeMs > 60_000) rmSync(file, { force: true })
    } catch {}
  }
}

/** The demo's JWT secret: generated once and kept (mode 0600) beside its database. */
function demoSecret (dataDir: string, problems: string[]): string | undefined {
  const path = join(dataDir, 'jwt-secret')
  removeLeftoverSecrets(dataDir)
  if (existsSync(path)) return keptSecret(path, problems)
  // its own user's alone: the database beside the secret keeps the users' password hashes, and SQLite
  // creates it (and its -wal and -shm files) as the umask says, readable by everyone with the usual 022
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const secret = randomBytes(48).toString('base64url')
  // Written whole beside it, then linked into place, which fails when the file is there: a second
  // instance started on the same data directory at the same moment overwrote the first one's secret
  // after the first had read it, and each then refused the other's tokens until a restart.
  const own = `${path}.${process.pid}.${randomBytes(6).toString('hex')}`
  try {
    writeFileSync(own, secret + '\n', { mode: 0o600, flag: 'wx' })
    chmodSync(own, 0o600)
    try {
      linkSync(own, path)
    } catch (err) {
      // a file system without hard links (a FAT or network mount): created there only if it is not yet, as before
      if (!['EPERM', 'ENOTSUP', 'ENOSYS', 'EOPNOTSUPP'].includes((err as { code?: string }).code ?? '')) throw err
      writeFileSync(path, secret + '\n', { mode: 0o600, flag: 'wx' })
      chmodSync(path, 0o600)
    }
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'EEXIST') throw err
    // the other instance's, written whole before it was linked: both sign with it
    return keptSecret(path, problems)
  } finally {
    rmSync(own, { force: true })
  }
  return secret
}
