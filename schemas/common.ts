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
 * Characters that show as nothing or as something else, in every plane (the patterns are compiled with
 * the 'u' flag, as Ajv does; TypeBox's Value.Check compiles without it, so check them with
 * hiddenCharacter, not Value.Check): control characters (C0, DEL, C1); Unicode's default-ignorable
 * characters (soft hyphen, zero-width space and joiners, direction marks and embeddings, word joiner,
 * BOM, combining grapheme joiner, Hangul fillers, variation selectors, and beyond the BMP the tag
 * characters U+E0000 to U+E0FFF, musical symbol formatting, shorthand format controls, and those not
 * yet assigned): 'ad\u200bmin' reads as admin in a list, SQL Server's collations give most of them no
 * weight, and 'M-1\u034fX' or 'PTL-01' with a tag character after it was a second material or station
 * that looks like the first; noncharacters (U+FDD0 to U+FDEF, U+FFFE, U+FFFF and their like in every
 * plane), which are no text; half of a surrogate pair; and the line breaks U+2028, U+2029 and the
 * Ogham space mark U+1680, which Unicode NFKC leaves as they are.
 */
const HIDDEN = '\\p{Cc}\\p{Default_Ignorable_Code_Point}\\p{Noncharacter_Code_Point}\\p{Cs}\\u1680\\u2028\\u2029'
/**
 * Spaces that look like the plain space U+0020 but are other characters (no-break space, en to hair
 * spaces, figure and narrow no-break spaces, the mathematical and ideographic spaces): 'PTL\u00a001'
 * was a second station beside 'PTL 01'. A username is stored in Unicode NFKC, which makes each of them
 * U+0020, so only the keys stored as sent (material numbers, station names) refuse them.
 */
const SPACE_LOOKALIKE = '\\u00a0\\u2000-\\u200a\\u202f\\u205f\\u3000'
/**
 * A text that names one thing and must look like nothing else: a material number, a station's name.
 * Something besides spaces, and no control, invisible or space look-alike characters (one at either
 * end is left to the repository, whose 400 says that a key may not begin or end with white space).
 */
const visibleKey = (hidden: string, space: string): string =>
  `^[ ${SPACE_LOOKALIKE}]*[^${hidden}${SPACE_LOOKALIKE}]*[^${space}${hidden}][^${hidden}${SPACE_LOOKALIKE}]*[ ${SPACE_LOOKALIKE}]*$`
export const VISIBLE_KEY = visibleKey(HIDDEN, '\\s')
/** A username as sent: VISIBLE_KEY, but the space look-alikes are taken (NFKC stores them as U+0020). */
const visibleUsername = (hidden: string, space: string): string => `^[^${hidden}]*[^${space}${hidden}][^${hidden}]*$`
export const VISIBLE_USERNAME = visibleUsername(HIDDEN, '\\s')

const HIDDEN_CHARACTER = new RegExp(`[${HIDDEN}]`, 'u')
const LOOKALIKE_INSIDE = new RegExp(`(?<=[^\\s][ ${SPACE_LOOKALIKE}]*)[${SPACE_LOOKALIKE}](?=[ ${SPACE_LOOKALIKE}]*[^\\s])`, 'u')

/**
 * The first control or invisible character of a key, else its first space look-alike between two
 * other characters (VISIBLE_KEY's; of a username as sent, VISIBLE_USERNAME's, without the space
 * look-alikes, which NFKC makes U+0020), named by its code point ('U+200B');
 * undefined when it holds none. An update refuses one only in a value the row does not already show
 * (Repository), since an edit form sends back what the picking system stored.
 */
export function hiddenCharacter (value: string, username = false): string | undefined {
  const m = HIDDEN_CHARACTER.exec(value) ?? (username ? null : LOOKALIKE_INSIDE.exec(value))
  if (m === null) return undefined
  return `U+${m[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`
}

const hex = (c: number): string => `\\u${c.toString(16).padStart(4, '0')}`
/** The BMP's characters that `re` matches, as a character class's ranges of \\u escapes; the surrogates left out */
function bmpRanges (re: RegExp): string {
  const matches = (c: number): boolean => c <= 0xffff && (c < 0xd800 || c > 0xdfff) && re.test(String.fromCharCode(c))
  let ranges = ''
  for (let c = 0; c <= 0xffff; c++) {
    if (!matches(c)) continue
    let end = c
    while (matches(end + 1)) end++
    ranges += end === c ? hex(c) : `${hex(c)}${end === c + 1 ? '' : '-'}${hex(end)}`
    c = end
  }
  return ranges
}

let portable: Record<string, string> | undefined
/**
 * The API's patterns as the OpenAPI document gives them, by the pattern they stand for. A client
 * generator compiles a schema's pattern with its own language's regular expressions: Java and .NET know
 * no \p{Default_Ignorable_Code_Point}, Python's re no \p{…} at all (each refused to compile ours), and
 * JavaScript without the 'u' flag reads \p{Cc} as the letters p, {, C, c and }, so a client refused
 * 'PTL-01'. Here each class is spelled out as the \u ranges of the BMP characters it holds, and \s as
 * JavaScript's white space (Java's \s is ASCII only), and the end as no character following (Java's and
 * Python's $ also match before a last line break): the same answer in all of them for every BMP
 * character. The gateway itself goes on checking with the patterns above, which also refuse invisible
 * characters beyond the BMP (the tag characters) and half surrogate pairs; a portable pattern leaves
 * the surrogates alone, since a language that counts UTF-16 units sees every character beyond the BMP
 * as two of them.
 */
export function portablePatterns (): Record<string, string> {
  if (portable !== undefined) return portable
  const hidden = bmpRanges(HIDDEN_CHARACTER)
  const space = bmpRanges(/\s/)
  // Java's and Python's $ also match before a last line break: 'PTL-01\n' passed there
  const atEnd = (pattern: string): string => `${pattern.slice(0, -1)}(?![\\s\\S])`
  portable = {
    [NOT_BLANK]: `[^${space}]`,
    [VISIBLE_KEY]: atEnd(visibleKey(hidden, space)),
    [VISIBLE_USERNAME]: atEnd(visibleUsername(hidden, space))
  }
  return portable
}

/** What each pattern of the API's schemas asks, in words: a validation error says this instead of the expression. */
export const COMMON_PATTERN_RULES: Record<string, string> = {
  [NOT_BLANK]: 'must hold a character other than spaces',
  [VISIBLE_KEY]: 'must hold a character other than spaces, and no control or invisible characters (zero-width spaces, direction marks) nor spaces other than U+0020',
  [VISIBLE_USERNAME]: 'must hold a character other than spaces, and no control or invisible characters (zero-width spaces, direction marks)'
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
