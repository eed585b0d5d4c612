// OpenAPI document at /api/openapi.json, generated from the route schemas, and a docs page at /api/docs. Both public.
import swagger, { type SwaggerTransform } from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifySchema } from 'fastify'
import fp from 'fastify-plugin'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ErrorResponse, FRAMEWORK_ERRORS, portablePatterns } from '../schemas/common.js'
import { packageRoot } from '../src/config.js'
import { DEFAULT_LIMIT, MAX_LIMIT } from '../src/db/list-query.js'

const version = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version

declare module 'fastify' {
  interface FastifySchema {
    /** For the document only: a list's filter parameters by field name (the list parser checks them at run time). */
    queryFilters?: Record<string, unknown>
  }
}

type Json = Record<string, any>

/**
 * The list query's control parameters are text at run time, so that the list parser names a bad
 * value in its own words; the document gives their real types, so generated clients send numbers.
 */
const LIST_CONTROLS: Record<string, Json> = {
  limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
  offset: { type: 'integer', minimum: 0 },
  count: { type: 'boolean' }
}

/** A list's query as documented: control parameters typed, filters listed instead of "any other parameter". */
function documentedQuery (querystring: Json | undefined, filters: Record<string, unknown> | undefined): Json | undefined {
  const properties = querystring?.properties as Record<string, Json> | undefined
  if (querystring === undefined || properties === undefined || !Object.keys(LIST_CONTROLS).every((name) => name in properties)) return querystring
  const documented: Record<string, unknown> = { ...properties }
  for (const [name, schema] of Object.entries(LIST_CONTROLS)) documented[name] = { ...schema, description: properties[name].description }
  for (const [name, schema] of Object.entries(filters ?? {})) if (!(name in documented)) documented[name] = schema
  const { additionalProperties: _, ...rest } = querystring
  return { ...rest, properties: documented }
}

/**
 * The answers a request may get at a path no operation describes (no route there, or not with this
 * method), and a path that does not decode: no operation lists them, since no operation was reached;
 * here once, with the error body, as components a client can name (openapi-typescript's
 * components['responses']). Every operation lists the rest (408, 413, 414, 415, 417, 431, 500) itself.
 */
function unroutedResponses (): Json {
  const { $id: _, ...body } = JSON.parse(JSON.stringify(ErrorResponse)) as Json
  const content = { 'application/json': { schema: body } }
  return {
    RouteNotFound: { description: `404 ${FRAMEWORK_ERRORS[404]}`, content },
    MethodNotAllowed: {
      description: `405 ${FRAMEWORK_ERRORS[405]}`,
      headers: { Allow: { description: 'the methods the path takes, e.g. GET, HEAD, POST', schema: { type: 'string' } } },
      content
    },
    BadUrl: { description: `400 ${FRAMEWORK_ERRORS[400]}`, content }
  }
}

const DESCRIPTION = 'REST gateway over a warehouse picking system: materials, stations, users, controller commands and events.\n\n' +
  'Every error has one body: {statusCode, code, error, message}. Besides the answers each ' +
  'operation lists (408 REQUEST_TIMEOUT, 417 EXPECTATION_FAILED, 431 HEADERS_TOO_LARGE and 500 INTERNAL_ERROR on all of them, 414 URI_TOO_LONG where the path has a parameter, 413 ' +
  'BODY_TOO_LARGE and 415 UNSUPPORTED_MEDIA_TYPE where the method takes a body), any request may get one that no operation lists, ' +
  'because it reached none: 404 ROUTE_NOT_FOUND for a path no route has, 405 METHOD_NOT_ALLOWED with an Allow header for a method ' +
  'the path does not take, 400 BAD_URL for a path that does not decode (components.responses RouteNotFound, MethodNotAllowed, BadUrl).'

const word = (text: string): string => text.split('-').map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('')

/** `getUsersById` for GET /api/users/:id: routes that name no operationId still get a stable, unique one. */
function operationIdOf (method: string, url: string): string {
  const words = url.split('/').filter((part) => part !== '' && part !== 'api')
    .map((part) => part.startsWith(':') ? `By${word(part.slice(1))}` : word(part))
  return method.toLowerCase() + words.join('')
}

const HEADER_TEXT = { type: 'string' }
/** The response headers the gateway sets, as the document names them: a generated client reads them by name. */
const ETAG = { ETag: { ...HEADER_TEXT, description: 'the version of what was sent: give it back in If-None-Match (a 304 while unchanged) or If-Match (an update or delete of that version only)' } }
const RESPONSE_HEADERS: Record<string, Json> = {
  201: { Location: { ...HEADER_TEXT, description: 'the path of the created record, e.g. /api/materials/1201' } },
  302: { Location: { ...HEADER_TEXT, description: 'where to go next' } },
  401: { 'WWW-Authenticate': { ...HEADER_TEXT, description: 'Bearer, with error="invalid_token" for an expired or invalid token (RFC 6750)' } },
  405: { Allow: { ...HEADER_TEXT, description: 'the methods the path takes, e.g. GET, HEAD' } },
  429: { 'Retry-After': { type: 'integer', description: 'seconds to wait before trying again' } },
  503: { 'Retry-After': { type: 'integer', description: 'seconds to wait before trying again, where waiting can help (the database, the identity provider or a controller unreachable, overload)' } }
}

/**
 * The headers of a route as documented: ETag and Location where the gateway sets them, X-Total-Count on
 * a list, WWW-Authenticate, Retry-After and Allow on the errors that carry them; If-None-Match where a
 * read may answer 304, If-Match where a write may answer 412. Only the document's copy changes.
 */
function documentedHeaders (schema: Json): Json {
  const response = schema.response as Record<string, Json> | undefined
  if (response === undefined) return schema
  const conditional = '304' in response || '412' in response
  const listed = (schema.querystring as Json | undefined)?.properties?.count !== undefined
  const documented: Record<string, Json> = {}
  for (const [status, body] of Object.entries(response)) {
    const headers: Json = { ...RESPONSE_HEADERS[status] }
    if (status === '201' || (conditional && (status === '200' || status === '304'))) Object.assign(headers, ETAG)
    if (listed && (status === '200' || status === '304')) headers['X-Total-Count'] = { type: 'integer', description: 'the number of matching records, with count=true' }
    if (Object.keys(headers).length === 0) { documented[status] = body; continue }
    // a copy without the shared error schema's $id, which names one schema only
    const { $id: _, ...copy } = body
    documented[status] = { ...copy, headers: { ...copy.headers, ...headers } }
  }
  const requestHeaders: Record<string, Json> = {}
  if ('304' in response) requestHeaders['if-none-match'] = { type: 'string', description: 'an ETag from an earlier answer: 304 without a body while it is still the current one' }
  if ('412' in response) requestHeaders['if-match'] = { type: 'string', description: 'the ETag of the version read: the write is refused with 412 if the record has changed since (* for any)' }
  const headers = Object.keys(requestHeaders).length === 0
    ? schema.headers
    : { type: 'object', ...schema.headers, properties: { ...schema.headers?.properties, ...requestHeaders } }
  return { ...schema, response: documented, ...(headers !== undefined && { headers }) }
}

/** A copy of a request schema whose patterns are the portable ones (portablePatterns): a generated client compiles them */
function withPortablePatterns (schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withPortablePatterns)
  if (schema === null || typeof schema !== 'object') return schema
  const patterns = portablePatterns()
  return Object.fromEntries(Object.entries(schema).map(([key, value]) =>
    [key, key === 'pattern' && typeof value === 'string' ? patterns[value] ?? value : withPortablePatterns(value)]))
}

/**
 * Per route: no trailing slash (a resource's `/` under its prefix answers with and without one),
 * an operationId, the security the route really has, the list query and the headers as documented, the
 * request bodies' patterns in a form every client generator compiles.
 */
const transform: SwaggerTransform = ({ schema, url, route }) => {
  const path = url.length > 1 && url.endsWith('/') ? url.slice(0, -1) : url
  const method = typeof route.method === 'string' ? route.method : route.method[0]
  const open = !path.startsWith('/api/') || route.config?.auth === 'none'
  // Refresh and application-token start from the gateway's own login: an identity provider's token is never taken there.
  const secured: Array<Record<string, string[]>> = route.config?.auth === 'refresh' ? [{ bearer: [] }] : [{ bearer: [] }, { identityProvider: [] }]
  const { queryFilters, ...rest } = schema ?? {} as FastifySchema
  return {
    url: path,
    schema: {
      ...documentedHeaders(rest as Json),
      ...(rest.body !== undefined && { body: withPortablePatterns(rest.body) }),
      operationId: rest.operationId ?? operationIdOf(method, path),
      security: rest.security ?? (open ? [] : secured),
      ...(rest.querystring !== undefined && { querystring: documentedQuery(rest.querystring as Json, queryFilters) })
    }
  }
}

async function openapi (fastify: FastifyInstance): Promise<void> {
  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'picking-gateway',
        version,
        description: DESCRIPTION
      },
      components: {
        responses: unroutedResponses(),
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'the gateway\'s own token: from POST /api/users/login (or a browser login at an identity provider), /api/users/refresh or /api/users/application-token' },
          identityProvider: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'an access token from an OpenID Connect provider configured in auth.sso (its iss and aud), for example a client-credentials token of Entra ID or Keycloak; never taken at /api/users/refresh or /api/users/application-token'
          },
          eventTicket: { type: 'apiKey', in: 'query', name: 'ticket', description: 'single-use, from POST /api/events/ticket; only GET /api/events takes it' }
        }
      }
    },
    hideUntagged: false,
    // a shared schema keeps its own name in components.schemas (ErrorResponse), where it was def-0: a generated
    // client's type for an error body was Def0
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => typeof json.$id === 'string' ? json.$id : `def-${i}` },
    transform
  })
  // The library's policy says upgrade-insecure-requests: a browser then fetches the page's own scripts
  // and styles over https, so on a gateway served in plain HTTP to other machines (http://10.0.0.5:3000)
  // the page stays blank (browsers exempt only localhost). Its assets are all on the page's own origin,
  // so over HTTPS the directive changes nothing either.
  await fastify.register(swaggerUi, {
    routePrefix: '/api/docs',
    staticCSP: true,
    transformStaticCSP: (header) => header.split(';').map((part) => part.trim()).filter((part) => part !== '' && part !== 'upgrade-insecure-requests').join('; ')
  })
  fastify.get('/api/openapi.json', { schema: { hide: true } }, async () => fastify.swagger())
}

export default fp(openapi, { name: 'openapi', fastify: '5.x' })
