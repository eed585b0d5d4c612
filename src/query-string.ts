// The router's query string parser: fast-querystring's parse, which also marks a query that does not decode.

/**
 * Set on a parsed query whose name or value is not valid percent-encoded UTF-8 (a byte that is no
 * UTF-8, half of a surrogate pair; a '%' without two hex digits is a literal one): the first such parameter's name,
 * for the 400 the onRequest hook answers. The parser itself must not throw: it runs inside the
 * router's lookup, outside any request's error handling.
 */
export const MALFORMED_QUERY = Symbol('malformedQuery')

export interface MalformedPart {
  /** the parameter's name, decoded, or as sent when the name is what does not decode */
  name: string
  part: 'name' | 'value'
}

export type ParsedQuery = Record<string, string | string[]> & { [MALFORMED_QUERY]?: MalformedPart }

// A null-prototype object that V8 builds as fast as a literal (fast-querystring's own trick):
// `?__proto__=x` or `?constructor=x` is a parameter like any other.
const Empty = function () {} as unknown as { new (): ParsedQuery }
Empty.prototype = Object.create(null)

const PLUS = /\+/g

/** a '%' that starts no escape (no two hex digits after it) */
const LONE_PERCENT = /%(?![0-9A-Fa-f]{2})/g

/**
 * decodeURIComponent, or undefined for escapes that are no UTF-8 (%FF, half of a surrogate pair).
 * A '%' that starts no escape is a literal percent, as URL parsers read it: `name=[like]%valve%`
 * typed into curl or a browser's address bar finds what it says.
 */
function decode (text: string): string | undefined {
  try {
    return decodeURIComponent(text.replace(LONE_PERCENT, '%25'))
  } catch {
    return undefined
  }
}

/**
 * `a=1&b=2&a=3` as `{ a: ['1', '3'], b: '2' }`, in one pass, as Fastify's default parser
 * (fast-querystring) reads it: '+' is a space (application/x-www-form-urlencoded, what HTML forms
 * and URLSearchParams send; a plus is %2B), a name without '=' has the value ''. Where that parser
 * keeps a malformed name or value as sent, this one keeps it too and marks the query
 * (MALFORMED_QUERY). Only a name or value holding '%' is decoded, so the check costs nothing on
 * queries without one, and nothing at all on requests without a query.
 */
export function parseQuery (input: string): ParsedQuery {
  const result = new Empty()
  const length = input.length
  if (length === 0) return result
  let start = -1
  let equals = -1
  let decodeKey = false
  let decodeValue = false
  let keyPlus = false
  let valuePlus = false
  for (let i = 0; i <= length; i++) {
    const c = i === length ? 38 : input.charCodeAt(i)
    if (c === 38) { // '&' or the end
      const hasValue = equals > start
      if (!hasValue) equals = i
      let key = input.slice(start + 1, equals)
      if (hasValue || key.length > 0) {
        if (keyPlus) key = key.replace(PLUS, ' ')
        if (decodeKey) {
          const decoded = decode(key)
          if (decoded === undefined) result[MALFORMED_QUERY] ??= { name: key, part: 'name' }
          else key = decoded
        }
        let value = ''
        if (hasValue) {
          value = input.slice(equals + 1, i)
          if (valuePlus) value = value.replace(PLUS, ' ')
          if (decodeValue) {
            const decoded = decode(value)
            if (decoded === undefined) result[MALFORMED_QUERY] ??= { name: key, part: 'value' }
            else value = decoded
          }
        }
        const current = result[key]
        if (current === undefined) result[key] = value
        else if (typeof current === 'string') result[key] = [current, value]
        else current.push(value)
      }
      start = i
      equals = i
      decodeKey = false
      decodeValue = false
      keyPlus = false
      valuePlus = false
    } else if (c === 61) { // '='
      if (equals <= start) equals = i
    } else if (c === 43) { // '+'
      if (equals > start) valuePlus = true
      else keyPlus = true
    } else if (c === 37) { // '%'
      if (equals > start) decodeValue = true
      else decodeKey = true
    }
  }
  return result
}

/** The 400's message for a query that does not decode: the parameter, never its value (a ticket, a password). */
export function malformedQueryMessage ({ name, part }: MalformedPart): string {
  const shown = name.length > 100 ? `${name.slice(0, 100)}…` : name
  return `${part === 'name' ? `The query parameter name '${shown}' is` : `The value of query parameter '${shown}' is`} not valid percent-encoded UTF-8: ` +
    "percent-encode text as UTF-8 (é is %C3%A9, a literal '%' before two hex digits %25)"
}
