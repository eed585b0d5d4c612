// Schemas shared by every resource: ids, errors, the list envelope and list query.
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox'
import { MAX_PATH_PARAM_LENGTH } from '../src/db/resources.js'

export const ErrorResponse = Type.Object({
  statusCode: Type.Integer(),
  code: Type.String(),
  error: Type.String(),
  message: Type.String(),
  login: Type.Optional(Type.Boolean()),
  controllerCode: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'CONTROLLER_NAK only: the code of the controller\'s NAK, null when it gave none' }))
}, { $id: 'ErrorResponse', description: 'Fastify error shape, used by every 4xx and 5xx response' })
export type ErrorResponse = Static<typeof ErrorResponse>

/**
 * A path id is decimal digits only: `0x10`, `1e1`, `+16`, `16.0`, ` 16` and `016` are refused
 * (Ajv's coercion would read them all as numbers). The `digitsOnly` keyword (src/app.ts) checks
 * the raw text before `id` is coerced, so handlers still get a number.
 */
export const IdParams = Type.Object({
  id: Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER, description: 'Resource id: a whole number in decimal digits (ids the gateway creates start at 1; a legacy table may hold 0 or negative ones), no plus sign or leading zero' })
}, { digitsOnly: ['id'] })
export type IdParams = Static<typeof IdParams>

/**
 * The path id of a resource whose table is keyed by text (materials by their article number, stations
 * by their code, users by their login name): `key` is the field that shares the id's column, if one does.
 */
export function textIdParams (maxLength: number | undefined, key?: string): TObject {
  // the router takes no longer path parameter (a 414): a wider column's longer keys no path names
  const most = Math.min(maxLength ?? MAX_PATH_PARAM_LENGTH, MAX_PATH_PARAM_LENGTH)
  return Type.Object({
    id: Type.String({ minLength: 1, maxLength: most, description: `Resource id: this installation's table is keyed by text${key === undefined ? '' : ` (the ${key})`}; percent-encode it in the path` })
  })
}

/**
 * A text that must say something: a name or number of spaces alone is stored as it is, matches nothing
 * a person types, and on SQL Server equals '' (trailing spaces do not count in comparisons).
 */
export const NOT_BLANK = '\\S'
/**
 * Characters that show as nothing (soft hyphen, zero-width space and joiners, direction marks and
 * embeddings, word joiner, BOM): 'ad\u200bmin' reads as admin in a list, and SQL Server's collations
 * give most of them no weight, so at a login it could find admin's row under a throttle count of its own.
 * Also the rest of Unicode's default-ignorable characters in the BMP (combining grapheme joiner,
 * Hangul fillers, Khmer inherent vowels, Mongolian variation selectors, variation selectors, U+FFF0 to
 * U+FFF8): 'M-1\u034fX' showed as M-1X and was a second material beside it.
 */
const INVISIBLE = '\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0\\ufff0-\\ufffb'
/** control characters (C0, DEL, C1) and the invisible ones: what no key may hold */
const HIDDEN = `\\u0000-\\u001f\\u007f-\\u009f${INVISIBLE}`
/**
 * A text that names one thing and must look like nothing else: a username, a material number, a
 * station's name. Something besides spaces, and no control or invisible characters: 'PTL-01' with a
 * zero-width space after it was a second station that looks like PTL-01 in every list.
 */
export const VISIBLE_KEY = `^[^${HIDDEN}]*[^\\s${HIDDEN}][^${HIDDEN}]*$`

/**
 * A control or invisible character (VISIBLE_KEY's): an update refuses one only in a value the row does
 * not already show (Repository), since an edit form sends back what the picking system stored.
 */
export const HIDDEN_CHARACTER = new RegExp(`[${HIDDEN}]`, 'u')

/** What each pattern of the API's schemas asks, in words: a validation error says this instead of the expression. */
export const COMMON_PATTERN_RULES: Record<string, string> = {
  [NOT_BLANK]: 'must hold a character other than spaces',
  [VISIBLE_KEY]: 'must hold a character other than spaces, and no control or invisible characters (zero-width spaces, direction marks)'
}

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601, UTC' })
export const NullableString = (options: Record<string, unknown> = {}) => Type.Union([Type.String(options), Type.Null()])
export const NullableNumber = (options: Record<string, unknown> = {}) => Type.Union([Type.Number(options), Type.Null()])

/**
 * The list query. Filters on resource fields are further parameters (`field=value`,
 * `field=[gte]value`), so unknown keys are allowed here and checked by the list parser,
 * which names the offending parameter.
 */
export const ListQuery = Type.Object({
  limit: Type.Optional(Type.String({ description: 'Page size, 1 to 1000 (default 100)', examples: ['100'] })),
  offset: Type.Optional(Type.String({ description: 'Rows to skip (offset paging); prefer meta.next' })),
  sort: Type.Optional(Type.String({ description: 'Comma list of fields, `-` for descending, e.g. `-modifiedAt,name`; ties broken by id' })),
  count: Type.Optional(Type.String({ description: '`true` adds meta.total and X-Total-Count' })),
  cursor: Type.Optional(Type.String({ description: 'Opaque; taken from meta.next' })),
  modifiedSince: Type.Optional(Type.String({ description: 'ISO 8601 time; same as modifiedAt=[gte]<time>' }))
}, {
  additionalProperties: Type.Union([Type.String(), Type.Array(Type.String())]),
  description: 'Further parameters filter by field: `field=value` or `field=[op]value` with op one of eq, gt, gte, lt, lte, not, like, notlike, or, nor, null, notnull (case-insensitive)'
})
export type ListQuery = Static<typeof ListQuery>

export const ListMeta = Type.Object({
  limit: Type.Integer(),
  offset: Type.Optional(Type.Integer()),
  total: Type.Optional(Type.Integer()),
  next: Type.Optional(Type.String({ description: 'Relative URL of the next page; absent on the last page' })),
  serverTime: Timestamp
})

export const ListEnvelope = <T extends TSchema>(item: T) => Type.Object({
  data: Type.Array(item),
  meta: ListMeta
})

/** The error body, described for one status: the document's entry for it says when it comes. */
export const ErrorResponseFor = (description: string) => Type.Object(ErrorResponse.properties, { description })

/**
 * The errors a request may get before or beside what its route does (Node's HTTP parser, Fastify's
 * router and body parser, the error handler), by status: README, "Every error has Fastify's shape".
 */
export const FRAMEWORK_ERRORS = {
  400: 'BAD_URL: a path that does not decode (a % not followed by two hex digits); VALIDATION_ERROR, BAD_QUERY and the route\'s own 400s otherwise',
  404: 'ROUTE_NOT_FOUND: no route has this path',
  405: 'METHOD_NOT_ALLOWED: the path is a route, the method is not one it takes; Allow lists those it does',
  413: 'BODY_TOO_LARGE: the body is larger than server.bodyLimit (1 MiB by default)',
  414: 'URI_TOO_LONG: a path parameter longer than 100 characters',
  415: 'UNSUPPORTED_MEDIA_TYPE: a body that is not application/json (or application/merge-patch+json on PATCH), declares a charset other than UTF-8, or has a Content-Encoding',
  408: 'REQUEST_TIMEOUT: the request (headers and body) did not arrive within server.requestTimeoutMs; the connection is closed',
  417: 'EXPECTATION_FAILED: an Expect header other than 100-continue',
  431: 'HEADERS_TOO_LARGE: the request line and headers together are larger than Node\'s limit (16 KB unless --max-http-header-size says otherwise; a long URL counts)',
  500: 'INTERNAL_ERROR: a bug; the body carries only the request id, the log has the details'
} as const

/** `{ 400: ErrorResponse, 404: ErrorResponse, … }` for a route's response schema. */
export const errorResponses = (...codes: number[]): Record<number, typeof ErrorResponse> =>
  Object.fromEntries(codes.map((code) => [code, ErrorResponse]))
