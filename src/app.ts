// buildApp: the one Fastify instance, used by the server and by every test.
import type { Socket } from 'node:net'
import { maxHeaderSize, ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http'
import type { Duplex } from 'node:stream'
import { getHeapStatistics } from 'node:v8'
import rateLimit from '@fastify/rate-limit'
import underPressure from '@fastify/under-pressure'
import sensible from '@fastify/sensible'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import Ajv, { type ErrorObject, type FuncKeywordDefinition, type SchemaValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import Fastify, { LogController, type FastifyContextConfig, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions, type RequestPayload } from 'fastify'
import type { Config } from '../schemas/config.js'
import { Material, MaterialCreate } from '../schemas/materials.js'
import { Station, StationCreate } from '../schemas/stations.js'
import { COMMON_PATTERN_RULES, errorResponses, hiddenCharacter, NOT_BLANK, VISIBLE_USERNAME } from '../schemas/common.js'
import { User, UserCreate } from '../schemas/users.js'
import { mappingsOf, readTls, signingKeys, tlsValidityWarning } from './config.js'
import { argon2HashLength } from './auth/passwords.js'
import authPlugin, { type AuthPluginOptions } from '../plugins/auth.js'
import databasePlugin from '../plugins/database.js'
import errorHandler, { buildErrorBody } from '../plugins/error-handler.js'
import hardwarePlugin, { type HardwarePluginOptions } from '../plugins/hardware.js'
import openapi from '../plugins/openapi.js'
import healthRoutes from '../plugins/routes/health.js'
import materialRoutes from '../plugins/routes/materials.js'
import stationRoutes from '../plugins/routes/stations.js'
import stationCommandRoutes from '../plugins/routes/station-commands.js'
import eventRoutes from '../plugins/routes/events.js'
import userRoutes from '../plugins/routes/users.js'
import ssoRoutes from '../plugins/routes/sso.js'
import type { Database } from './db/types.js'
import { MAX_PATH_PARAM_LENGTH, PATH_ID } from './db/resources.js'
import { ApiError, badRequest, jsonSyntaxWords, statusText } from './errors.js'
import { repeatedHeader } from './http.js'
import { loggerOptions, redactUrl, requestLineWriter } from './logger.js'
import { MALFORMED_QUERY, malformedQueryMessage, parseQuery, type ParsedQuery } from './query-string.js'

export interface BuildOptions {
  db: Database
  /** a pino instance or options; defaults to the configured level */
  logger?: FastifyServerOptions['logger'] | FastifyServerOptions['loggerInstance']
  hardware?: Partial<HardwarePluginOptions>
  /** tests only: identity-provider key and discovery timings shorter than a minute */
  ssoTiming?: AuthPluginOptions['ssoTiming'] & { stateTtlMs?: number, maxPending?: number }
}

export type App = FastifyInstance

/** Fields a client may read but never write (in a resource but not in its create body); named as such in 400 messages. */
const READ_ONLY_FIELDS = new Set([[Material, MaterialCreate], [Station, StationCreate], [User, UserCreate]]
  .flatMap(([item, create]) => Object.keys(item.properties).filter((field) => !(field in create.properties))))

/**
 * `digitsOnly: ['id']` on a params object: those parameters are decimal digits, with a minus sign
 * for a negative id (legacy tables hold 0 and -1 rows), without a plus sign or leading zero. A keyword without a type runs before `properties`, so it sees the text before coercion
 * turns `0x10`, `1e1` or ` 16` into a number.
 */
const checkDigits: SchemaValidateFunction = function (names: string[], data: unknown): boolean {
  if (typeof data !== 'object' || data === null) return true
  for (const name of names) {
    const value = (data as Record<string, unknown>)[name]
    if (value === undefined || (typeof value === 'string' && PATH_ID.test(value))) continue
    checkDigits.errors = [{
      keyword: 'digitsOnly',
      instancePath: `/${name}`,
      params: { digitsOnly: name },
      message: `must be a whole number in decimal digits without spaces, plus sign or leading zero (-9007199254740991 to 9007199254740991), got '${String(value)}'`
    }]
    return false
  }
  return true
}
const digitsOnly: FuncKeywordDefinition = { keyword: 'digitsOnly', schemaType: 'array', validate: checkDigits }

/**
 * Bodies are validated strictly: no coercion ("5" is not a number, ["a"] is not a string) and
 * unknown fields refused, where Fastify's default Ajv coerces and strips (DESIGN §10).
 * Query strings and path parameters are text by nature and are coerced.
 */
function validatorCompiler () {
  // verbose: an error carries the value it refuses, so that a 400 can name a key's invisible character
  const base = { allErrors: false, useDefaults: true, strict: false, removeAdditional: false as const, verbose: true }
  const body = addFormats.default(new Ajv.default({ ...base, coerceTypes: false }))
  const text = addFormats.default(new Ajv.default({ ...base, coerceTypes: 'array' }))
  text.addKeyword(digitsOnly)
  return ({ schema, httpPart }: { schema: object, httpPart?: string }) =>
    (httpPart === 'body' ? body : text).compile(schema)
}

const NO_QUERY = Type.Object({}, { additionalProperties: false })

/** on a connection's socket: its requests whose answer has not gone yet (pipelined ones too) */
const IN_FLIGHT = Symbol('requests in flight')

/** Ends a connection whose answers have all gone, without waiting for the rest of a body the client still sends. */
function closeAnswered (socket: Socket): void {
  socket.end(() => socket.destroy())
}

/**
 * A preValidation hook naming every field a body may not carry at once: an edit form that posts a
 * whole row back learns all the read-only fields (id, stockQuantity, createdAt, …) from one 400,
 * where the schema's validator stops at the first. One such field is left to the validator's own message.
 * A callback hook, not an async one: it runs on every write, and a promise per request costs more than the check.
 */
function fieldsNotTaken (properties: Record<string, unknown>) {
  return (request: FastifyRequest, _reply: unknown, done: (err?: Error) => void): void => {
    const body = request.body
    let extra: string[] | undefined
    if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
      for (const key in body) if (!Object.hasOwn(properties, key)) (extra ??= []).push(key)
    }
    if (extra === undefined || extra.length < 2) {
      done()
      return
    }
    const readOnly = extra.filter((field) => READ_ONLY_FIELDS.has(field)).map((field) => `body/${field}`)
    const unknown = extra.filter((field) => !READ_ONLY_FIELDS.has(field)).map((field) => `'${field}'`)
    const parts: string[] = []
    if (readOnly.length > 0) parts.push(`${readOnly.join(', ')} ${readOnly.length === 1 ? 'is' : 'are'} read-only`)
    if (unknown.length > 0) parts.push(`body has unknown field${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')}`)
    done(badRequest(`${parts.join('; ')}; leave ${extra.length === 2 ? 'both' : 'them'} out`, 'VALIDATION_ERROR'))
  }
}

function describeValidation (errors: ErrorObject[], dataVar: string): Error {
  const [first] = errors
  const path = `${dataVar}${first.instancePath}`
  const params = first.params as Record<string, unknown>
  let message: string
  if (first.keyword === 'additionalProperties') {
    const field = params.additionalProperty as string
    message = READ_ONLY_FIELDS.has(field) ? `${path}/${field} is read-only` : `${path} has unknown field '${field}'`
  } else if (first.keyword === 'pattern' && Object.hasOwn(COMMON_PATTERN_RULES, params.pattern as string)) {
    message = `${path} ${COMMON_PATTERN_RULES[params.pattern as string]}`
    // the character itself, by its code point: 'PTL-01' and a tag character after it look the same in the request too
    const hidden = typeof first.data === 'string' ? hiddenCharacter(first.data, params.pattern === VISIBLE_USERNAME) : undefined
    if (hidden !== undefined && params.pattern !== NOT_BLANK) message += `, got ${hidden}`
  } else if (first.keyword === 'required') {
    message = `${path} must have required field '${params.missingProperty as string}'`
  } else if (first.keyword === 'minProperties' && params.limit === 1 && first.instancePath === '') {
    // an update's empty body: "must NOT have fewer than 1 properties" said it in the schema's words
    message = `${path} names no field to change; send at least one field to update`
  } else {
    // A union of literals (an enum written with TypeBox) reports one `const` error per branch.
    const allowed = errors.filter((e) => e.keyword === 'const' && e.instancePath === first.instancePath)
      .map((e) => (e.params as { allowedValue: unknown }).allowedValue)
    message = allowed.length > 1
      ? `${path} must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`
      : `${path} ${first.message ?? 'is invalid'}`
  }
  return new Error(message)
}

/** The charset a Content-Type header declares, lower-cased; undefined when it declares none. */
function declaredCharset (contentType: string | undefined): string | undefined {
  const m = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(contentType ?? '')
  return m === null ? undefined : m[1].toLowerCase()
}

/**
 * The offset of the first byte that is not part of valid UTF-8 (the body is known to hold one), in
 * one pass: the bytes before each character are counted as it goes. (Measuring the text before
 * every U+FFFD again made a body of real U+FFFD characters cost its length squared: 29 s of the
 * event loop for one 1 MiB login request.)
 */
export function firstInvalidByte (body: Buffer): number {
  const text = body.toString('utf8')
  let offset = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    // a U+FFFD that the body really holds (EF BF BD) is not the fault
    if (c === 0xfffd && (body[offset] !== 0xef || body[offset + 1] !== 0xbf || body[offset + 2] !== 0xbd)) return offset
    if (c < 0x80) offset += 1
    else if (c < 0x800) offset += 2
    else if (c >= 0xd800 && c <= 0xdbff) { offset += 4; i++ } else offset += 3
  }
  return 0
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * US-ASCII's names (IANA's registry, and Python's `ascii`). Refused as other charsets are, although every
 * ASCII body is UTF-8: the clients that declare it encode with an ASCII encoder (.NET's Encoding.ASCII, Java's
 * US_ASCII), which sends '?' for each character beyond ASCII; the gateway would store "Schl?ssel" unwarned.
 */
const ASCII_NAMES = new Set(['us-ascii', 'ascii', 'ansi_x3.4-1968', 'ansi_x3.4-1986', 'iso646-us', 'iso_646.irv:1991', 'iso-ir-6', 'us', 'ibm367', 'cp367', 'csascii'])
const ASCII_LOSES = "; an ASCII encoder (.NET's Encoding.ASCII, Java's US_ASCII) sends '?' for every character beyond ASCII, which would be stored as '?': encode the body as UTF-8"

/**
 * JSON Merge Patch (RFC 7396), which generated clients and HTTP libraries send on PATCH: an update's
 * body already means that (a flat record: the fields sent change, null empties a field), so it is
 * read as JSON there; on any other method it is a 415 (a create or a POST update is no patch).
 */
const MERGE_PATCH = 'application/merge-patch+json'

/** The methods whose requests Fastify never reads a body of */
const BODYLESS = new Set(['GET', 'HEAD', 'TRACE'])

/**
 * What a JSON body's headers alone refuse (a Content-Encoding, a declared charset other than
 * UTF-8), for the requests whose body goes to the JSON parser. A preParsing hook asks it, before the
 * body is read: a client that sent Expect: 100-continue gets this 415 instead of the 100, and
 * does not send its body for nothing.
 */
function refusedByHeaders (request: FastifyRequest): ApiError | undefined {
  const type = request.headers['content-type']
  if (type === undefined || BODYLESS.has(request.method)) return undefined
  // Node reads the first of two Content-Type headers and drops the other, which a proxy in front may have read:
  // JSON to one hop, text/plain to the other. Two alike say the same and pass.
  const types = repeatedHeader(request.raw.rawHeaders, 'content-type')
  if (types?.some((value) => value !== types[0]) === true) return badRequest('The request has more than one Content-Type header, and they differ; send one')
  const semicolon = type.indexOf(';')
  const media = (semicolon === -1 ? type : type.slice(0, semicolon)).trim().toLowerCase()
  if (media === MERGE_PATCH) {
    if (request.method !== 'PATCH') return new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', `Content-Type '${type}' is taken on PATCH only: send application/json`)
  } else if (media !== 'application/json') return undefined
  const encoding = request.headers['content-encoding']
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    return new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', `Content-Encoding '${encoding}' is not supported: send the body uncompressed`)
  }
  const charset = semicolon === -1 ? undefined : declaredCharset(type)
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    // `charset=` or `charset=""` (a client's charset variable left empty) read as "declares charset=:"
    const declared = charset === '' ? 'an empty charset (charset=)' : `charset=${charset}`
    const why = ASCII_NAMES.has(charset) ? ASCII_LOSES : ''
    return new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', `Content-Type declares ${declared}: JSON bodies must be UTF-8 (declare charset=utf-8 or no charset)${why}`)
  }
  return undefined
}

/** refusedByHeaders as a preParsing hook (a callback one: it runs on every write) */
function refuseByHeaders (request: FastifyRequest, _reply: FastifyReply, payload: RequestPayload, done: (err: Error | null, payload?: RequestPayload) => void): void {
  const refused = refusedByHeaders(request)
  if (refused === undefined) done(null, payload)
  else done(refused)
}

/**
 * JSON bodies are UTF-8 (RFC 8259 §8.1): bytes that are not are refused before anything is parsed
 * or written, instead of being stored as U+FFFD (another declared charset, or a Content-Encoding,
 * was refused before the body was read: refusedByHeaders). The text then goes to Fastify's own
 * JSON parser (which refuses __proto__ and constructor.prototype keys).
 */
function jsonParser (app: FastifyInstance) {
  const parse = app.getDefaultJsonParser('error', 'error')
  return (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void): void => {
    // A route that takes no body (a delete, a refresh, a ticket) reads nothing from a client that sends its
    // JSON Content-Type on every request, as scripts and ERP middleware do: it sent no body, not an empty one.
    if ((body as Buffer).length === 0 && request.routeOptions.schema?.body === undefined) {
      done(null, undefined)
      return
    }
    let text: string
    try {
      text = utf8.decode(body as Buffer)
    } catch {
      const at = firstInvalidByte(body as Buffer)
      done(new ApiError(400, 'INVALID_UTF8', `The body is not valid UTF-8 (byte 0x${(body as Buffer)[at].toString(16).toUpperCase().padStart(2, '0')} at offset ${at}): JSON bodies must be UTF-8`))
      return
    }
    parse(request, text, (err, value) => {
      if (err === null) {
        // only a \u escape can put a lone surrogate or a NUL into a string (raw ones are no UTF-8 or no JSON)
        const odd = text.includes('\\u') ? oddCharacter(value, 'body') : undefined
        if (odd !== undefined) done(new ApiError(400, 'VALIDATION_ERROR', odd))
        // A route that takes no body (a delete, a refresh, a ticket) refuses one that says something, as routes
        // that take no query refuse one: DELETE /api/materials/30 with {"ids": [1, 2, 3]} must not delete 30
        // alone and answer 204. `{}` and `null` say nothing and pass (scripts send a JSON body with every POST).
        else if (!saysNothing(value) && takesNoBody(request)) done(new ApiError(400, 'VALIDATION_ERROR', `body: ${request.method} ${request.routeOptions.url ?? ''} takes no body; send none`))
        else done(null, value)
        return
      }
      done(err.message.startsWith('Body is not valid JSON') ? invalidJson(text, err) : err)
    })
  }
}

/** `null` or `{}`: a JSON body that says nothing */
const saysNothing = (value: unknown): boolean =>
  value === null || (typeof value === 'object' && !Array.isArray(value) && Object.keys(value as object).length === 0)

/** A route with a schema but none for a body (routeOptions is a getter that builds its object anew: read only when asked) */
function takesNoBody (request: FastifyRequest): boolean {
  const schema = request.routeOptions.schema
  return schema !== undefined && schema.body === undefined
}

/**
 * The first string (or key) of a parsed body holding what no database column keeps as sent: half of
 * a UTF-16 surrogate pair (\ud800 alone: SQLite would store bytes that are no UTF-8, and read them
 * back as U+FFFD) or a NUL (C programs end a text there; SQL Server's collations ignore it).
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

export function oddCharacter (body: unknown, root: string): string | undefined {
  // a loop, not recursion: a body nested thousands deep must not overflow the stack
  const pending: Array<[unknown, string]> = [[body, root]]
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    const [value, path] = item
    if (typeof value === 'string') {
      if (LONE_SURROGATE.test(value)) return `${path} holds half of a UTF-16 surrogate pair (a \\ud800 to \\udfff escape without its other half), which is no character`
      if (value.includes('\u0000')) return `${path} holds a NUL character (\\u0000), which the database does not keep as sent`
    } else if (typeof value === 'object' && value !== null) {
      const entries = Object.entries(value)
      for (let i = entries.length - 1; i >= 0; i--) pending.push([entries[i][1], `${path}/${entries[i][0]}`], [entries[i][0], `${path} key`])
    }
  }
  return undefined
}

/**
 * What is wrong with a body the JSON parser refused: JSON.parse's own words, or the key refused for
 * safety. V8 quotes a piece of the body around an unexpected token; that piece is left out, since it
 * may be a password sent unquoted, and proxies log error bodies; so is the token, unless it is punctuation.
 */
function invalidJson (text: string, err: Error): Error {
  try {
    JSON.parse(text)
  } catch (syntax) {
    // the token itself only when it is JSON's punctuation: a letter or digit may be a password's ('S' of SECRET)
    const words = jsonSyntaxWords((syntax as Error).message, 'it may belong to a password sent without quotes')
    return new ApiError(400, 'INVALID_JSON', `The body is not valid JSON: ${words}`, { cause: err })
  }
  return new ApiError(400, 'INVALID_JSON', "The body has a '__proto__' or 'constructor.prototype' key, which is refused", { cause: err })
}

/** Errors Node's HTTP parser raises before there is a request (oversized headers, a malformed request line): the same body shape as every other error. */
function clientErrorHandler (this: FastifyInstance, err: Error & { code?: string, reason?: unknown }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  let status = 400
  let code = 'BAD_REQUEST'
  let message = `Malformed HTTP request${typeof err.reason === 'string' && err.reason !== '' ? `: ${err.reason}` : ''}`
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431
    code = 'HEADERS_TOO_LARGE'
    // Node's limit covers the request line too: a long query string (an [or] list of 500 values) meets it first
    message = `The request line and headers together are larger than ${Math.round(maxHeaderSize / 1024)} KB (a long URL counts: split a long filter over several requests)`
  } else if (err.code === 'HPE_INVALID_URL') {
    // Node's parser takes only ASCII in a request line: a query typed with é (curl -g, a script that
    // builds the URL by hand) ends here, and 'Invalid char in url query' does not say what to do
    message += ': a letter beyond ASCII or a control character must be percent-encoded as UTF-8, é as %C3%A9 (curl does it with -G and --data-urlencode)'
  } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408
    code = 'REQUEST_TIMEOUT'
    message = 'The request was not received in time'
  }
  // Node's parser error carries the bytes it had read (rawPacket): the request's headers, Authorization
  // and Cookie included, and any body, as a byte array that no scrubbing of text finds
  delete (err as { rawPacket?: unknown }).rawPacket
  this.log.debug({ err }, 'client error')
  if (socket.writable) socket.write(rawErrorAnswer(status, code, message))
  socket.destroy(err)
}

/** An error answer in the documented shape, written by hand on a socket no Fastify reply owns; the connection is to close after it. */
function rawErrorAnswer (status: number, code: string, message: string, headers = ''): string {
  const body = JSON.stringify(buildErrorBody(status, code, message))
  return `HTTP/1.1 ${status} ${statusText(status)}\r\n${headers}Content-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
}

/** The paths of each app's routes that say logQuery: false (the SSO callback's code and state), by the app */
const queryUnlogged = new WeakMap<object, RegExp[]>()

/** A route's URL (`/api/users/sso/:id/callback`) as a pattern of the paths it takes */
const routePattern = (url: string): RegExp =>
  new RegExp(`^${url.split('/').map((part) => part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('/')}/?$`)

/**
 * The log line of a request answered before routing, where the onResponse hook writes none: its URL
 * cut to 2 KB (the logger's formatter scrubs tokens in it, as in every line), and without the query of
 * a route that says logQuery: false, as its own line would be.
 */
function earlyRequestLine (app: FastifyInstance, method: string, url: string, statusCode: number, code: string): object {
  const query = url.indexOf('?')
  if (query >= 0) {
    const path = url.slice(0, query)
    if (queryUnlogged.get(app)?.some((pattern) => pattern.test(path)) === true) return { method, url: `${path.slice(0, 2048)}?[redacted]`, statusCode, code }
  }
  return { method, url: redactUrl(url.slice(0, 2048)), statusCode, code }
}

/** The scheme and authority of a request line's absolute URL (`GET http://host/api/materials`, as proxies send it) */
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i

/**
 * The request's path and query without the scheme and host of an absolute URL, and without a fragment: the router finds the
 * route either way, but meta.next, a 405's Allow and the fixed paths (/api/users/login) read the path.
 */
function originForm (req: IncomingMessage): string {
  let url = req.url ?? '/'
  // a fragment (#…) is the client's own and no part of the request target (RFC 9110 §7.1); a URL pasted
  // into a raw request line kept it, and the router read what follows '#' as a query ('unknown field x')
  const hash = url.indexOf('#')
  if (hash !== -1) url = url.slice(0, hash)
  // (the usual origin form, /…, at the cost of one character's test)
  if (url.charCodeAt(0) === 47) return url
  const authority = ABSOLUTE_FORM.exec(url)
  if (authority === null) return url
  const rest = url.slice(authority[0].length)
  return rest.startsWith('/') ? rest : `/${rest}`
}

/** Errors Fastify raises before routing (a URL that does not decode, a parameter too long): the documented shape and codes. */
function frameworkErrors (err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const status = err.statusCode ?? 500
  if (status >= 500) {
    request.log.error({ err }, 'request failed')
    void reply.code(500).send(buildErrorBody(500, 'INTERNAL_ERROR', `Internal error; the log has details under request id ${request.id}`))
    return
  }
  const code = err.code === 'FST_ERR_BAD_URL' ? 'BAD_URL' : err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'URI_TOO_LONG' : statusText(status).toUpperCase().replace(/[^A-Z]+/g, '_')
  // Fastify's "… is exceeding the max param length" names no limit; the path itself is in the log line below
  const message = code === 'URI_TOO_LONG' ? `A path parameter is longer than ${MAX_PATH_PARAM_LENGTH} characters, the most an id may have` : err.message
  void reply.code(status).send(buildErrorBody(status, code, message))
  // answered before routing, so without the onResponse hook's line: one here
  request.log.info(earlyRequestLine(request.server, request.method, request.url, status, code), 'request')
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: the request line's URL is logged without its query (it carries credentials: a browser login's code and state) */
    logQuery?: false
    /** true: a route without a query schema takes any query (a browser login's start, whose URL browsers and portals add to) */
    anyQuery?: true
    /** true: a route that only refuses its method (a read-only resource's writes): not one of the path's methods in a 405's Allow */
    refuses?: true
  }
}

/** The logged URL: credentials in the query (a stream ticket, a password), and the query of routes that say logQuery: false, left out. */
function redactQuery (request: FastifyRequest, config: FastifyContextConfig | undefined): string {
  const url = request.url
  if (config?.logQuery === false && url.includes('?')) return `${url.slice(0, url.indexOf('?'))}?[redacted]`
  return redactUrl(url)
}

export async function buildApp (config: Config, options: BuildOptions): Promise<App> {
  const { server } = config
  // set by the preClose hook below: the gateway is draining
  let closing = false
  /**
   * While closing, the answer after which its connection is ended (the last one the connection
   * carries, see the onResponse hook) says Connection: close (RFC 9112 §9.6), where it said
   * keep-alive and the connection then ended at once. Every answer's head passes writeHead
   * (an implicit one too): outside a shutdown, one flag test.
   */
  class DrainingResponse extends ServerResponse {
    override writeHead (statusCode: number, reason?: string | OutgoingHttpHeaders | OutgoingHttpHeader[], headers?: OutgoingHttpHeaders | OutgoingHttpHeader[]): this {
      if (closing && ((this.req.socket as (Socket & { [IN_FLIGHT]?: number }) | null)?.[IN_FLIGHT] ?? 0) <= 1) this.shouldKeepAlive = false
      return super.writeHead(statusCode, reason as string, headers)
    }
  }
  // Node's server options, for HTTPS too: Fastify hands https.createServer the TLS options alone, and with them
  // the headers came under Node's own 60 s limit, checked every 30 s, not server.headersTimeoutMs
  const serverOptions = { headersTimeout: server.headersTimeoutMs, connectionsCheckingInterval: 1000, ServerResponse: DrainingResponse }
  const fastifyOptions: FastifyServerOptions & Record<string, unknown> = {
    bodyLimit: server.bodyLimit,
    trustProxy: server.trustProxy as FastifyServerOptions['trustProxy'],
    // Slow clients (slowloris, 1 byte/s bodies) are cut off; Node checks every connectionsCheckingInterval.
    requestTimeout: server.requestTimeoutMs,
    keepAliveTimeout: server.keepAliveTimeoutMs,
    connectionTimeout: server.requestTimeoutMs + server.headersTimeoutMs,
    http: serverOptions,
    // While closing, answer with Connection: close so keep-alive clients do not hold shutdown (DESIGN §10).
    return503OnClosing: true,
    // /api/materials/17/ is /api/materials/17, as /api/materials/ is /api/materials
    // the default parser (fast-querystring) keeps a malformed value as sent: this one also marks it (see onRequest)
    routerOptions: { ignoreTrailingSlash: true, querystringParser: parseQuery, maxParamLength: MAX_PATH_PARAM_LENGTH },
    forceCloseConnections: 'idle',
    pluginTimeout: Math.max(10000, config.database.connectTimeoutMs * 2),
    schemaErrorFormatter: describeValidation,
    // One line per request, written when it ends (see the onResponse hook), instead of two.
    logController: new LogController({ disableRequestLogging: true }),
    ajv: { customOptions: { strict: false } },
    clientErrorHandler,
    frameworkErrors,
    rewriteUrl: originForm
  }
  // the certificate as read for the server, checked for its dates: logged once the logger is there
  let expired: string | undefined
  if (server.tls) {
    const https = readTls(server.tls)
    fastifyOptions.https = { ...https, ...serverOptions }
    expired = tlsValidityWarning(server.tls.cert, https.cert)
  }
  if (options.logger && typeof (options.logger as { info?: unknown }).info === 'function') {
    fastifyOptions.loggerInstance = options.logger as FastifyServerOptions['loggerInstance']
  } else {
    fastifyOptions.logger = (options.logger as FastifyServerOptions['logger']) ?? loggerOptions(config.logging.level) as FastifyServerOptions['logger']
  }

  const app = Fastify(fastifyOptions).withTypeProvider<TypeBoxTypeProvider>()
  const unlogged: RegExp[] = []
  queryUnlogged.set(app, unlogged)
  app.addHook('onRoute', (route) => { if (route.config?.logQuery === false) unlogged.push(routePattern(route.url)) })
  if (expired !== undefined) app.log.warn(expired)
  // an Expect other than 100-continue: Node's own 417 had no body at all, unlike every other error
  app.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const body = JSON.stringify(buildErrorBody(417, 'EXPECTATION_FAILED', `The Expect header '${String(req.headers.expect).slice(0, 100)}' is not supported; send 100-continue or none`))
    res.writeHead(417, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' })
    res.end(body)
    // before routing, so not yet rewritten: an absolute URL's scheme and host (and a user:password@ in it) left out here too
    app.log.info(earlyRequestLine(app, String(req.method), originForm(req), 417, 'EXPECTATION_FAILED'), 'request')
  })
  // CONNECT (a client that takes the gateway for a proxy): Node hands its socket to a 'connect' listener and,
  // without one, destroyed it unanswered and unlogged. The gateway tunnels nothing: a 405 whose empty Allow
  // says that the target (host:port) takes no method here (RFC 9110 §10.2.1), and the connection closed.
  app.server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    // the HTTP server no longer listens on this socket: a reset by the client would be an uncaught error
    socket.on('error', () => {})
    const message = 'CONNECT is not allowed: the gateway is no proxy and opens no tunnel; send each request to the gateway itself'
    socket.end(rawErrorAnswer(405, 'METHOD_NOT_ALLOWED', message, 'Allow: \r\n'), () => socket.destroy())
    // the target is host:port; a user:password@ a client put before it is left out
    const target = String(req.url)
    app.log.info(earlyRequestLine(app, 'CONNECT', target.slice(target.lastIndexOf('@') + 1), 405, 'METHOD_NOT_ALLOWED'), 'request')
  })
  // Expect: 100-continue (Java's HttpURLConnection, .NET's HttpClient, curl for bodies over 1 KB): Node
  // answered 100 at once, so the client sent its body before a 401, 413 or 415 that needed none of it
  // (a 5 MB upload then met a closed connection). The 100 now goes out when the body is first read,
  // after the token, the route, the content type and the declared length are checked; a refusal comes
  // instead of it, and Node then closes the connection, as the client may not send the body at all.
  app.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    // no body to wait for (a GET, a DELETE with Content-Length: 0): the 100 at once, as before, and the connection stays open
    if (req.headers['transfer-encoding'] === undefined && (req.headers['content-length'] ?? '0') === '0') {
      res.writeContinue()
      app.server.emit('request', req, res)
      return
    }
    const read = req._read
    req._read = function (size: number): void {
      req._read = read
      if (!res.headersSent) res.writeContinue()
      read.call(this, size)
    }
    app.server.emit('request', req, res)
  })
  app.setValidatorCompiler(validatorCompiler())
  // JSON only (and JSON Merge Patch on PATCH), and only UTF-8; any other content type (text/plain too) is a 415 naming it
  app.removeContentTypeParser(['application/json', 'text/plain'])
  const parseJson = jsonParser(app)
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJson)
  // on PATCH only: refusedByHeaders refuses it on other methods before the body is read
  app.addContentTypeParser(MERGE_PATCH, { parseAs: 'buffer' }, parseJson)

  // the service's own logger: its request lines go straight to its sink, the same bytes for less CPU
  const requestLine = requestLineWriter(options.logger)
  // While closing, a keep-alive connection whose request was in flight when the close began is ended
  // after its answer: forceCloseConnections closes the connections idle at that moment only, and this
  // one would otherwise hold the shutdown until keepAliveTimeoutMs (new requests get 503 and close).
  // Only after the last request the connection carries: a pipelined request already in flight behind
  // this one would lose its answer (a light sent, the client never told).
  // (a count kept on the socket itself, and a callback hook: this runs on every request, and a
  // WeakMap lookup or a promise per request costs more than the field)
  // Connections whose request was answered before its body had all arrived (a 401, a 415 refused from the
  // headers, a 413 by Content-Length): Node reads the rest of the body to keep the connection, so it is not
  // idle, and a shutdown waited the whole grace period for a body nobody reads, then cut it as in flight.
  const unread = new Set<Socket & { [IN_FLIGHT]?: number }>()
  app.addHook('preClose', async () => {
    closing = true
    for (const socket of unread) if ((socket[IN_FLIGHT] ?? 0) <= 0) closeAnswered(socket)
  })
  app.addHook('onRequest', (request, _reply, done) => {
    const socket = request.raw.socket as (Socket & { [IN_FLIGHT]?: number }) | null
    if (socket != null) socket[IN_FLIGHT] = (socket[IN_FLIGHT] ?? 0) + 1
    // A query that does not decode is refused as a path that does not is (BAD_URL), on every route,
    // before authentication: kept as sent, '%FF' would be searched for, or taken for a ticket.
    const malformed = (request.query as ParsedQuery)[MALFORMED_QUERY]
    if (malformed !== undefined) return done(badRequest(malformedQueryMessage(malformed), 'BAD_QUERY'))
    // Node keeps the first of two Host headers and drops the other, by which a proxy in front may have
    // routed the request: HTTP/1.1 answers such a request 400 (RFC 9112 §3.2)
    done(repeatedHeader(request.raw.rawHeaders, 'host') === undefined ? undefined : badRequest('The request has more than one Host header; send one'))
  })
  // on the routes that read a body only: a GET runs no hook for it, and a path that no route has stays a 404
  app.addHook('onRoute', (route) => {
    if ((Array.isArray(route.method) ? route.method : [route.method]).every((method) => BODYLESS.has(method))) return
    const existing = route.preParsing === undefined ? [] : Array.isArray(route.preParsing) ? route.preParsing : [route.preParsing]
    route.preParsing = [...existing, refuseByHeaders]
  })
  app.addHook('onResponse', async (request, reply) => {
    const socket = request.raw.socket as (Socket & { [IN_FLIGHT]?: number }) | null
    if (socket != null) {
      const left = (socket[IN_FLIGHT] ?? 1) - 1
      socket[IN_FLIGHT] = left
      // (an injected request's socket is a stand-in without end())
      if (left > 0 || typeof socket.end !== 'function') {
        // requests still in flight on it, or an injected request's stand-in
      } else if (closing) {
        if (request.raw.complete === false) closeAnswered(socket)
        else socket.end()
      } else if (request.raw.complete === false && !unread.has(socket)) {
        unread.add(socket)
        socket.once('close', () => unread.delete(socket))
      }
    }
    // routeOptions is a getter that builds a new object of the route's options on every read
    const { config, url: route } = request.routeOptions
    const method = request.method
    const url = redactQuery(request, config)
    const statusCode = reply.statusCode
    const responseTimeMs = Math.round(reply.elapsedTime * 10) / 10
    const user = request.identity?.id
    if (requestLine !== undefined) requestLine(request.log, { reqId: request.id, method, url, route, statusCode, responseTimeMs, user })
    else request.log.info({ method, url, route, statusCode, responseTimeMs, user }, 'request')
  })

  const mappings = mappingsOf(config)

  await app.register(errorHandler)
  await app.register(sensible)
  await app.register(rateLimit, { global: false })
  await app.register(underPressure, {
    maxEventLoopDelay: server.maxEventLoopDelayMs,
    maxHeapUsedBytes: server.maxHeapUsedRatio > 0 ? Math.floor(getHeapStatistics().heap_size_limit * server.maxHeapUsedRatio) : 0,
    retryAfter: 10,
    exposeStatusRoute: false
  })
  await app.register(openapi)
  await app.register(databasePlugin, { db: options.db, mappings, recheckMs: config.database.recheckMs, passwordHashLength: argon2HashLength(config.auth.argon2) })
  await app.register(authPlugin, { ...config.auth, keys: signingKeys(config), licenceLogins: config.licence.logins, ssoTiming: options.ssoTiming })
  await app.register(hardwarePlugin, { ...config.hardware, databaseRequestTimeoutMs: config.database.requestTimeoutMs, ...options.hardware })

  await app.register(healthRoutes)
  await app.register(async function api (scope) {
    scope.addHook('onRequest', scope.authenticate)
    // a route that takes no query parameters refuses them, as lists refuse unknown ones: ?dryRun=1 or
    // ?force=true must not be ignored while the write goes ahead. The 400 joins its documented answers.
    scope.addHook('onRoute', (route) => {
      if (route.schema === undefined || route.schema.querystring !== undefined || route.config?.anyQuery === true) return
      const response = route.schema.response as Record<string, unknown> | undefined
      route.schema = { ...route.schema, querystring: NO_QUERY, ...(response !== undefined && response['400'] === undefined && { response: { ...response, ...errorResponses(400) } }) }
    })
    // an update by PATCH lists the JSON Merge Patch it takes beside JSON (generated clients pick the first)
    scope.addHook('onRoute', (route) => {
      if (route.method === 'PATCH' && route.schema?.body !== undefined && route.schema.consumes === undefined) route.schema = { ...route.schema, consumes: ['application/json', MERGE_PATCH] }
    })
    scope.addHook('onRoute', (route) => {
      const body = route.schema?.body as { properties?: Record<string, unknown>, additionalProperties?: unknown } | undefined
      if (body?.properties === undefined || body.additionalProperties !== false) return
      const existing = route.preValidation === undefined ? [] : Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation]
      route.preValidation = [...existing, fieldsNotTaken(body.properties)]
    })
    await scope.register(userRoutes, {
      prefix: '/users',
      licenceLogins: config.licence.logins,
      loginAttemptsPerAddress: config.auth.loginThrottle.maxAttemptsPerAddress,
      loginAddressWindowMs: config.auth.loginThrottle.addressWindowMs
    })
    await scope.register(ssoRoutes, {
      prefix: '/users/sso',
      loginAttemptsPerAddress: config.auth.loginThrottle.maxAttemptsPerAddress,
      loginAddressWindowMs: config.auth.loginThrottle.addressWindowMs,
      stateTtlMs: options.ssoTiming?.stateTtlMs,
      maxPending: options.ssoTiming?.maxPending
    })
    await scope.register(materialRoutes, { prefix: '/materials' })
    await scope.register(stationRoutes, { prefix: '/stations' })
    await scope.register(stationCommandRoutes, { prefix: '/stations' })
    await scope.register(eventRoutes, { prefix: '/events', ...config.events })
  }, { prefix: '/api' })

  return app as unknown as App
}
