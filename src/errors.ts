// Errors raised by the HTTP layer that carry a stable code; the error handler turns them into responses.
import { STATUS_CODES } from 'node:http'

export class ApiError extends Error {
  readonly statusCode: number
  readonly code: string
  readonly headers: Record<string, string>
  /** extra body fields (for example `login: false`) */
  readonly extra: Record<string, unknown>
  /** an expected fault (a controller offline or silent): logged with its message and code, without a stack */
  readonly expected: boolean
  constructor (statusCode: number, code: string, message: string, options: { headers?: Record<string, string>, extra?: Record<string, unknown>, cause?: unknown, expected?: boolean } = {}) {
    super(message, { cause: options.cause })
    this.name = 'ApiError'
    this.statusCode = statusCode
    this.code = code
    this.headers = options.headers ?? {}
    this.extra = options.extra ?? {}
    this.expected = options.expected ?? false
  }
}

/** The piece of the text V8 quotes in a JSON.parse message (10 characters either side of an unexpected token; all of a short text) */
export const JSON_QUOTED_TEXT = /, (\.\.\.)?"([\s\S]*)"(\.\.\.)? is not valid JSON$/

/**
 * JSON.parse's words about a text it refused, without the text: V8 quotes a piece of it around an
 * unexpected token, which may be a password or secret written without quotes; so the token too, unless
 * it is JSON's punctuation (a letter or digit may be a secret's first). `why` says why it is left out.
 */
export function jsonSyntaxWords (message: string, why: string): string {
  return message.replace(JSON_QUOTED_TEXT, '').replace(/^Unexpected token '([^{}[\],:"])'/, `Unexpected token (not quoted here: ${why})`)
}

const BEARER = { 'www-authenticate': 'Bearer' }

/** One message for every invalid token, so a caller cannot learn which check failed. */
export const TOKEN_INVALID_MESSAGE = 'The token is invalid'

export const tokenMissing = (): ApiError =>
  new ApiError(401, 'TOKEN_MISSING', 'Authorization header with a Bearer token is required', { headers: BEARER })
export const tokenExpired = (): ApiError =>
  new ApiError(401, 'TOKEN_EXPIRED', 'The token has expired', { headers: { 'www-authenticate': 'Bearer error="invalid_token", error_description="The token has expired"' } })
/** `message`: only where the token passed every check of its signature (an identity provider's token that lacks a claim the configuration needs) */
export const tokenInvalid = (message = TOKEN_INVALID_MESSAGE): ApiError =>
  new ApiError(401, 'TOKEN_INVALID', message, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } })
export const invalidCredentials = (): ApiError =>
  new ApiError(401, 'INVALID_CREDENTIALS', 'Invalid username or password', { headers: BEARER, extra: { login: false } })
/**
 * The right password (or an identity provider's login) of a user whose id several rows of the user table hold: its
 * tokens would name no user, a 401 on every request. Says what is wrong and who mends it, not what the other rows hold.
 */
export const sharedUserId = (): ApiError =>
  new ApiError(409, 'CONFLICT', "This account cannot log in: its user id is held by more than one row of the picking system's user table, so no token can name it alone; nothing was changed. An administrator has to give it an id of its own")
export const forbidden = (message = 'Your user type may not do this'): ApiError =>
  new ApiError(403, 'FORBIDDEN', message)
export const licenceLimit = (logins: number): ApiError =>
  new ApiError(403, 'LICENCE_LIMIT', `The licence allows ${logins} enabled user or application account(s); disable one first`)
export const tooManyRequests = (retryAfterSeconds: number, message: string): ApiError =>
  new ApiError(429, 'TOO_MANY_REQUESTS', message, { headers: { 'retry-after': String(retryAfterSeconds) } })
export const badRequest = (message: string, code = 'BAD_REQUEST'): ApiError => new ApiError(400, code, message)
/** An identity provider that cannot be reached (discovery, key set): a fault, not the caller's token; logged with its reason where it is noticed, so its 503 without a stack. */
export const ssoUnavailable = (id: string): ApiError =>
  new ApiError(503, 'SSO_UNAVAILABLE', `The identity provider '${id}' cannot be reached; try again shortly`, { headers: { 'retry-after': '10' }, expected: true })

/** The provider refused the gateway's own client at its token endpoint: a fault of the installation, not of the person signing in. */
export const clientRefused = (id: string): ApiError =>
  new ApiError(503, 'SSO_UNAVAILABLE', `The identity provider '${id}' refused the gateway's client; the administrator must check its client id and client secret`, { headers: { 'retry-after': '10' }, expected: true })

export function statusText (statusCode: number): string {
  return STATUS_CODES[statusCode] ?? 'Error'
}
