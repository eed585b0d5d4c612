// The one error handler: Fastify's body shape everywhere, token failures as 401, no internals in 5xx bodies.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ErrorResponseFor, FRAMEWORK_ERRORS } from '../schemas/common.js'
import { DbError } from '../src/db/errors.js'
import { ApiError, statusText, tokenExpired, tokenInvalid } from '../src/errors.js'
import { redactText, replaceTokens } from '../src/logger.js'

/** Fastify's body errors under the gateway's own codes (a client should not meet the framework's names) */
const FRAMEWORK_CODES: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'INVALID_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'EMPTY_BODY',
  FST_ERR_CTP_BODY_TOO_LARGE: 'BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BAD_REQUEST'
}

/** The methods whose requests Fastify reads a body of (and refuses with 413 or 415) */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** A status code an error may set itself; anything else becomes 500. */
const PASS_THROUGH = (status: number): boolean => status >= 400 && status < 500

export interface ErrorBody {
  statusCode: number
  code: string
  error: string
  message: string
  [extra: string]: unknown
}

/**
 * Hook for other plugins (the hardware plugin) to translate their own error classes.
 * Returns an ApiError, or undefined when the error is not theirs.
 */
export type ErrorTranslator = (err: Error) => ApiError | undefined

declare module 'fastify' {
  interface FastifyInstance {
    errorTranslators: ErrorTranslator[]
  }
}

function toApiError (err: FastifyError | Error, translators: ErrorTranslator[]): ApiError | undefined {
  if (err instanceof ApiError) return err
  const code = (err as FastifyError).code
  if (typeof code === 'string' && (code.startsWith('FAST_JWT_') || code.startsWith('FST_JWT_'))) {
    // @fastify/jwt answers several rejected tokens with 500 and a revealing message (DESIGN §10).
    if (code === 'FAST_JWT_EXPIRED' || code === 'FST_JWT_AUTHORIZATION_TOKEN_EXPIRED') return tokenExpired()
    return tokenInvalid()
  }
  if (code === 'FST_UNDER_PRESSURE') {
    // expected: under overload a stack per refused request would only add to the load
    return new ApiError(503, 'OVERLOADED', 'The gateway is overloaded; try again shortly', { headers: { 'retry-after': '10' }, expected: true })
  }
  if (err instanceof DbError) {
    const headers: Record<string, string> = err.statusCode === 503 ? { 'retry-after': '5' } : {}
    if (err.statusCode >= 500 && err.statusCode !== 503) return undefined
    // a 503 while the database is unavailable is expected: the outage itself is logged once, with its cause
    return new ApiError(err.statusCode, err.code, err.message, { headers, expected: err.statusCode === 503 })
  }
  for (const translate of translators) {
    const translated = translate(err)
    if (translated) return translated
  }
  return undefined
}

/**
 * The driver's message behind an error the database layer worded for the API, if it has one, with
 * the ones before it in the batch (SQL Server: a trigger's RAISERROR comes before the 3609 that ends
 * it). A value it quotes (SQL Server's truncated value, a duplicate key) could be a password hash or
 * a token: those are left out, as everywhere in the log.
 */
function databaseWords (err: Error): string | undefined {
  for (let cause = err.cause; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof DbError) continue
    const preceding = (cause as { precedingErrors?: unknown }).precedingErrors
    const earlier = Array.isArray(preceding) ? preceding.flatMap((e) => e instanceof Error ? [e.message] : []) : []
    return redactText([...earlier, cause.message].join(' / '))
  }
  return undefined
}

/**
 * An error body. A message that quotes what the client sent (a path, a sort key) shows a JSON Web
 * Token pasted into it as [token], found as the log finds them: proxies and ERPs log response bodies.
 */
export function buildErrorBody (statusCode: number, code: string, message: string, extra: Record<string, unknown> = {}): ErrorBody {
  return { statusCode, code, error: statusText(statusCode), message: message.includes('eyJ') ? replaceTokens(message, '[token]') : message, ...extra }
}

async function errorHandler (fastify: FastifyInstance): Promise<void> {
  fastify.decorate('errorTranslators', [])

  /** A fixed path (/api/users/login) asked with a method it does not take: answers the 405 and says so. */
  function wrongMethodOnFixedPath (request: FastifyRequest, reply: FastifyReply): boolean {
    const path = request.url.split('?')[0]
    if (!routes.isFixed(path)) return false
    const methods = routes.methodsOf(path)
    if (methods.includes(request.method)) return false
    notAllowed(reply, request.method, path, methods)
    return true
  }

  fastify.setErrorHandler(function (err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    const api = toApiError(err, fastify.errorTranslators)
    // DELETE /api/users/login reaches the route of /api/users/:id, whose token check comes first: the
    // method is what is wrong, with a token or without (with one, the id's pattern says so, below)
    if (api?.statusCode === 401 && wrongMethodOnFixedPath(request, reply)) return reply
    if (api) {
      // an expected 503 without its stack, with the database's words (a permission denied names its object)
      if (api.statusCode >= 500) request.log.warn(api.expected ? { code: api.code, database: err instanceof DbError ? databaseWords(err) : undefined } : { err, code: api.code }, api.message)
      else if (err instanceof DbError) {
        // the answer is in API words; the log keeps the database's (a CHECK's expression, the constraint a default broke)
        const words = databaseWords(err)
        if (words !== undefined) request.log.info({ code: api.code, database: words }, 'the database refused the request')
      }
      return reply.code(api.statusCode).headers(api.headers).send(buildErrorBody(api.statusCode, api.code, api.message, api.extra))
    }

    const status = err.statusCode ?? 500
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      const type = request.headers['content-type']
      const message = type === undefined ? 'A request body needs Content-Type: application/json' : `Content-Type '${type}' is not supported: send application/json`
      return reply.code(415).send(buildErrorBody(415, 'UNSUPPORTED_MEDIA_TYPE', message))
    }
    // /api/users/login is a path of its own, not a user id that fails its pattern: a wrong method there is a 405
    if (err.validationContext === 'params' && wrongMethodOnFixedPath(request, reply)) return reply
    const repeated = repeatedParameter(err, request)
    if (repeated !== undefined) return reply.code(400).send(buildErrorBody(400, 'BAD_QUERY', `Query parameter '${repeated}' must be given only once`))
    if (PASS_THROUGH(status)) {
      // Fastify's own 4xx (validation, 413, 415, bad JSON) and @fastify/sensible's httpErrors.
      const code = err.validation ? 'VALIDATION_ERROR' : (FRAMEWORK_CODES[err.code] ?? err.code ?? codeFromStatus(status))
      if (status === 429 && !reply.hasHeader('retry-after')) reply.header('retry-after', '60')
      // Fastify's "Request body is too large" says neither how large a body may be nor which setting says so
      const message = code === 'BODY_TOO_LARGE' ? `The request body is larger than ${fastify.initialConfig.bodyLimit ?? 0} bytes, the most this gateway takes (server.bodyLimit)` : err.message
      return reply.code(status).send(buildErrorBody(status, code, message))
    }

    // Never send err.message of a 5xx: it may carry SQL, table names or a stack (DESIGN §10).
    request.log.error({ err }, 'request failed')
    return reply.code(500).send(buildErrorBody(500, 'INTERNAL_ERROR', `Internal error; the log has details under request id ${request.id}`))
  })

  // The errors any route may answer with, whatever its handler does, in its documented responses (and
  // so in a generated client's error type): every route 408, 417, 431 and 500, a route with a path parameter 414,
  // one that takes a body 413 and 415 (Fastify parses a DELETE's body too). A route's own entry stays.
  fastify.addHook('onRoute', (route) => {
    if (route.schema === undefined || route.schema.hide === true) return
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map((m) => m.toUpperCase())
    const codes: Array<keyof typeof FRAMEWORK_ERRORS> = [408, 417, 431, 500]
    if (/[:*]/.test(route.url ?? route.path)) codes.push(414)
    if (methods.some((m) => BODY_METHODS.has(m))) codes.push(413, 415)
    const response = { ...(route.schema.response as Record<string, unknown> | undefined) }
    for (const code of codes) if (response[code] === undefined) response[code] = ErrorResponseFor(FRAMEWORK_ERRORS[code])
    route.schema = { ...route.schema, response }
  })

  const routes = new RouteTable()
  // a route that only answers 405 (a read-only resource's writes) is no method the path allows
  fastify.addHook('onRoute', (route) => { if (route.config?.refuses !== true) routes.add(route.url ?? route.path, route.method) })
  fastify.setNotFoundHandler(function (request, reply) {
    const path = request.url.split('?')[0]
    const allowed = routes.methodsOf(path)
    if (allowed.length > 0) return notAllowed(reply, request.method, path, allowed)
    return reply.code(404).send(buildErrorBody(404, 'ROUTE_NOT_FOUND', `Route ${request.method} ${path} not found`))
  })
}

/** The path was found, the method was not: RFC 9110's 405 with Allow. */
function notAllowed (reply: FastifyReply, method: string, path: string, allowed: string[]): FastifyReply {
  const allow = allowed.join(', ')
  return reply.code(405).header('allow', allow).send(buildErrorBody(405, 'METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}; allowed: ${allow}`))
}

/**
 * The routes' paths and their methods, to tell a wrong method (405) from a wrong path (404):
 * Fastify answers both as not found. A parameter (`:id`) matches one path segment, `*` the rest.
 * A fixed path (/api/users/login) is its own: the methods of a parametric one that would also
 * match it (/api/users/:id) are not its methods.
 */
export class RouteTable {
  private readonly routes: Array<{ pattern: RegExp, methods: Set<string>, fixed: boolean }> = []
  private readonly byUrl = new Map<string, Set<string>>()

  add (url: string, method: string | string[]): void {
    let methods = this.byUrl.get(url)
    if (methods === undefined) {
      methods = new Set()
      this.byUrl.set(url, methods)
      const source = url.split('/').map((part) => part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&')).join('/')
      this.routes.push({ pattern: new RegExp(`^${source}/?$`), methods, fixed: !/[:*]/.test(url) })
    }
    for (const m of Array.isArray(method) ? method : [method]) methods.add(m.toUpperCase())
  }

  /** the methods some route takes at this path, sorted (a fixed path's own only); none when no route has the path */
  methodsOf (path: string): string[] {
    const matching = this.matching(path)
    const fixed = matching.filter((route) => route.fixed)
    const methods = new Set<string>()
    for (const route of fixed.length > 0 ? fixed : matching) for (const m of route.methods) methods.add(m)
    return [...methods].sort()
  }

  /** whether a route has this very path, without parameters */
  isFixed (path: string): boolean {
    return this.matching(path).some((route) => route.fixed)
  }

  private matching (path: string): Array<{ pattern: RegExp, methods: Set<string>, fixed: boolean }> {
    // as the router reads it: escapes decoded, but an encoded slash (%2F) is no separator there, so
    // /api/users%2F1 is one segment that no route has (404), not /api/users/1 with GET "not allowed"
    let decoded = path
    try { decoded = decodeURIComponent(path.replace(/%2f/gi, '%252F')) } catch {}
    return this.routes.filter((route) => route.pattern.test(decoded))
  }
}

/** A single-valued query parameter given twice fails its schema's type check: the name, so the message can say so. */
function repeatedParameter (err: FastifyError, request: FastifyRequest): string | undefined {
  const [first] = err.validation ?? []
  if (err.validationContext !== 'querystring' || first?.keyword !== 'type' || !/^\/[^/]+$/.test(first.instancePath)) return undefined
  const name = first.instancePath.slice(1)
  return Array.isArray((request.query as Record<string, unknown> | undefined)?.[name]) ? name : undefined
}

function codeFromStatus (status: number): string {
  return statusText(status).toUpperCase().replace(/[^A-Z]+/g, '_').replace(/^_|_$/g, '')
}

export default fp(errorHandler, { name: 'error-handler', fastify: '5.x' })
