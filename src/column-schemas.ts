// The HTTP schemas of a resource as this installation's columns are: real length and range limits, nullability, stored codes.
import type { TObject } from '@sinclair/typebox'
import { INTEGER_RANGES, type FieldStorage, type ResourceStorage } from './db/storage.js'

type Json = Record<string, any>

const clone = (schema: unknown): Json => JSON.parse(JSON.stringify(schema)) as Json

/** The schema without its `null` branch, or undefined when it was only null. */
function withoutNull (schema: Json): Json {
  if (!Array.isArray(schema.anyOf)) return schema
  const rest = schema.anyOf.filter((s: Json) => s.type !== 'null')
  if (rest.length === schema.anyOf.length) return schema
  const { anyOf: _, ...outer } = schema
  return rest.length === 1 ? { ...rest[0], ...outer } : { ...outer, anyOf: rest }
}

function allowsNull (schema: Json): boolean {
  return schema.type === 'null' || (Array.isArray(schema.type) && schema.type.includes('null')) ||
    (Array.isArray(schema.anyOf) && schema.anyOf.some((s: Json) => s.type === 'null'))
}

/**
 * The schema that also allows null. A single-type schema becomes `type: [t, 'null']` rather than
 * an anyOf: the response serializer (fast-json-stringify) writes type lists directly but runs a
 * validator per value for every anyOf, which made a page of 100 rows about 2.7 times slower.
 */
function nullable (schema: Json): Json {
  const simple = (s: Json): boolean => typeof s.type === 'string' && s.type !== 'null' && s.anyOf === undefined && s.const === undefined && s.enum === undefined
  if (Array.isArray(schema.anyOf) && schema.anyOf.length === 2) {
    const [a, b] = schema.anyOf as Json[]
    const [inner, other] = b.type === 'null' ? [a, b] : [b, a]
    if (other.type === 'null' && simple(inner)) {
      const { anyOf: _, ...outer } = schema
      return { ...inner, ...outer, type: [inner.type, 'null'] }
    }
  }
  if (allowsNull(schema)) return schema
  if (simple(schema)) return { ...schema, type: [schema.type, 'null'] }
  const { description, ...inner } = schema
  return { anyOf: [inner, { type: 'null' }], ...(description !== undefined && { description }) }
}

/** Applies `fn` to the non-null branch(es) of a property schema. */
function mapBranches (schema: Json, fn: (branch: Json) => Json): Json {
  if (Array.isArray(schema.anyOf) && !schema.anyOf.every((s: Json) => 'const' in s)) return { ...schema, anyOf: schema.anyOf.map((s: Json) => s.type === 'null' ? s : fn(s)) }
  return fn(schema)
}

function describeLimit (s: FieldStorage): string | undefined {
  const info = s.info
  if (info === undefined) return undefined
  if (s.category === 'decimal' && info.precision !== undefined && /dec|num/.test(info.type)) return `stored as decimal(${info.precision},${info.scale ?? 0}): at most ${info.scale ?? 0} decimal places`
  return undefined
}

/**
 * A body property's schema narrowed to what the column holds. `keptPast`: an update's body on SQLite,
 * which does not enforce a declared VARCHAR(n), an INT's range or a DECIMAL(p,s)'s, so a row may hold a
 * longer text or a larger number another program wrote and an edit form sends it back as shown. Its
 * schema takes any length and the API's own range: the column's are checked as the value is written
 * (ResourceStorage), where a value the row already shows is no change (Repository.update).
 */
function bodyProperty (schema: Json, s: FieldStorage, reference: boolean, keptPast: boolean): Json {
  let out = schema
  const info = s.info
  if (info === undefined) return out
  // a value map without a code for some of the API's values (a picking system that has no carousels): the
  // write would refuse them, so the body and the document take the mapped ones only
  if (s.map !== undefined && Array.isArray(out.anyOf) && out.anyOf.every((b: Json) => 'const' in b)) {
    const mapped = new Set(s.map.order.map((v) => String(v)))
    const kept = out.anyOf.filter((b: Json) => mapped.has(String(b.const)))
    if (kept.length > 0 && kept.length < out.anyOf.length) out = { ...out, anyOf: kept }
  }
  if (!info.nullable) out = withoutNull(out)
  // a field described as a whole (a station's address, a union with null) takes its notes there: nullable() keeps
  // that description over its branch's
  const described = Array.isArray(out.anyOf) && out.description !== undefined
  const lifted = new Set<string>()
  const describe = (b: Json, note: string): void => {
    if (described) lifted.add(note)
    else b.description = b.description === undefined ? note : `${String(b.description)}; ${note}`
  }
  out = mapBranches(out, (branch) => {
    const b = { ...branch }
    // the column's length decides, also above the reference schema's (a picking system's varchar(4000)
    // note), and a column without one (TEXT, nvarchar(max)) takes what it holds: a row read from it
    // can be sent back as it is. A UTF-8 column counts bytes, checked before writing (ResourceStorage).
    if (b.type === 'string' && (s.category === 'text' || s.category === 'ntext') && info.utf8 !== true && s.map === undefined) {
      if (info.maxLength !== undefined && info.maxLength > 0) {
        if (!keptPast) b.maxLength = info.maxLength
        else {
          delete b.maxLength
          describe(b, `at most ${info.maxLength} characters (its database column's limit), but a longer text the row already holds may be sent back unchanged`)
        }
      }
      // the gateway's own table of an older demo database (TEXT): the API's limits stay
      else if (!reference) delete b.maxLength
    }
    if (b.type === 'integer' || b.type === 'number') {
      const range = INTEGER_RANGES[info.type.toLowerCase()]
      let limit: [number, number] | undefined = range
      if (limit === undefined && s.category === 'decimal' && info.precision !== undefined && /dec|num/.test(info.type)) {
        const scale = info.scale ?? 0
        const max = Number((10 ** (info.precision - scale) - 10 ** -scale).toFixed(scale))
        limit = [-max, max]
      }
      // noted only where the column's range is narrower than the API's own (an address in an INT is not)
      const narrower = limit !== undefined && (b.minimum === undefined || limit[0] > b.minimum || b.maximum === undefined || limit[1] < b.maximum)
      const past = narrower && keptPast ? `between ${limit[0]} and ${limit[1]} (its database column's range), but a value past it the row already holds may be sent back unchanged` : undefined
      if (limit !== undefined && !keptPast) {
        b.minimum = b.minimum === undefined ? limit[0] : Math.max(b.minimum, limit[0])
        b.maximum = b.maximum === undefined ? limit[1] : Math.min(b.maximum, limit[1])
      }
      for (const note of [describeLimit(s), past]) if (note !== undefined) describe(b, note)
    }
    return b
  })
  if (lifted.size > 0) out = { ...out, description: [out.description, ...lifted].join('; ') }
  // a nullable column takes null: the answer to a GET may show it, and an edit form sends it back
  // (Repository.assertNullKept refuses it for a field the API never leaves empty unless it is unchanged)
  return info.nullable && s.def.id !== true ? nullable(out) : out
}

/**
 * What the API's schemas ask of a value a client writes. A read shows what is stored, which another
 * program may have written past them (a NOT NULL name of '' or bytes, shown as "", a negative weight,
 * an address beyond 65535): these belong to the body schemas, and a generated client that checks
 * responses would refuse real rows.
 */
const WRITE_LIMITS = ['minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'] as const

/** A response property's schema widened to what the column may hold: NULL, codes no map knows, values past the write limits. */
function responseProperty (schema: Json, s: FieldStorage): Json {
  let out = mapBranches(schema, (branch) => {
    const b = { ...branch }
    for (const keyword of WRITE_LIMITS) delete b[keyword]
    return b
  })
  if (s.map !== undefined || s.def.enum !== undefined) {
    const known = s.map !== undefined ? s.map.order.map((v) => String(v)) : s.def.enum!
    const description = `${schema.description !== undefined ? `${String(schema.description)}. ` : ''}One of ${known.join(', ')}; a stored code that no value map knows is returned as it is`
    if (s.def.kind === 'string') out = { type: 'string', description }
    else out = { anyOf: [withoutNull(schema), { type: 'string' }, { type: 'number' }], description }
  }
  // nullable() also turns an API schema's own null union into a type list the serializer writes fast;
  // showsNull: a NOT NULL column in SQLite may still hold a value the field's kind reads as null
  return s.showsNull || allowsNull(out) ? nullable(out) : out
}

export interface ResourceSchemas {
  item: Json
  create: Json
  update: Json
  /** the list's filter query parameters by field, for the document (the list parser checks them) */
  filters: Record<string, Json>
}

const OPERATORS = '[gt] [gte] [lt] [lte] [not] [like] [notlike] [or] [nor] [null] [notnull]'

const KIND_TEXT: Record<string, string> = {
  string: 'text',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  datetime: 'an ISO 8601 date-time, UTC unless it names an offset'
}

/**
 * A filter parameter's value: one condition, or several (the parameter repeated, `weight=[gte]1&weight=[lt]5`),
 * which the list ANDs; a generated client sends an array as the repeated parameter.
 */
const filterValue = (): Json => ({ anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] })

/** A filter example that the list parser accepts for the field. */
function filterExample (s: FieldStorage): string {
  const known = s.map !== undefined ? s.map.order.map((v) => String(v)) : s.def.enum
  if (known !== undefined && known.length > 1) return `[or]${known.slice(0, 2).join(';')}`
  switch (s.def.kind) {
    case 'integer': return s.def.id === true ? '[or]1;2;3' : '[gte]1'
    case 'number': return '[lt]10'
    case 'boolean': return 'true'
    case 'datetime': return '[gte]2026-01-01T00:00:00Z'
    default: return '[like]abc'
  }
}

/**
 * The query parameter of a filter on a field the gateway computes rather than reads from a column (a
 * station's live state): the same operators but [like] and [notlike]; `values` lists what it takes.
 */
export function computedFilterParameter (field: string, kind: string, values?: readonly string[]): Json {
  const example = values !== undefined ? `[or]${values.slice(0, 2).join(';')}` : kind === 'boolean' ? 'true' : kind === 'datetime' ? '[gte]2026-01-01T00:00:00Z' : 'x'
  return {
    ...filterValue(),
    description: `Filter on ${field} (${values !== undefined ? `one of ${values.join(', ')}` : KIND_TEXT[kind] ?? kind}): \`value\` for equality, or \`[op]value\` with op one of ` +
      `${OPERATORS.replace(' [like] [notlike]', '')}. [or] and [nor] take a list a;b;c, [null] and [notnull] no value. Repeat the parameter to AND two conditions.`,
    examples: [example]
  }
}

/** One optional text query parameter per field the list can filter on: stored and visible, in API order. */
export function filterParameters (storage: ResourceStorage, item: TObject | Json): Record<string, Json> {
  const out: Record<string, Json> = {}
  for (const field of Object.keys(item.properties as Record<string, unknown>)) {
    const s = storage.fields[field]
    if (s === undefined || s.absent || s.def.internal === true) continue
    out[field] = {
      ...filterValue(),
      description: `Filter on ${field} (${KIND_TEXT[s.def.kind] ?? s.def.kind}): \`value\` for equality, or \`[op]value\` with op one of ${OPERATORS}. ` +
        '[or] and [nor] take a list a;b;c, [null] and [notnull] no value; [like] and [notlike] take a pattern (% any run, _ one character; ' +
        'without either, a substring) and work on text only. Repeat the parameter to AND two conditions.' +
        (s.map !== undefined ? ' A value that is none of the field\'s values is matched as a stored code.' : ''),
      examples: [filterExample(s)]
    }
  }
  return out
}

/**
 * The item, create and update schemas of a resource for this database. Fields the storage does
 * not know (live hardware fields) are left as they are; without column facts (the database was
 * down at start) limits come from the API's own schema and every stored field may be null.
 */
export function resourceSchemas (storage: ResourceStorage, item: TObject, create: TObject, update: TObject): ResourceSchemas {
  const out: ResourceSchemas = { item: clone(item), create: clone(create), update: clone(update), filters: filterParameters(storage, item) }
  for (const [field, schema] of Object.entries(out.item.properties as Record<string, Json>)) {
    const s = storage.fields[field]
    if (s !== undefined && s.def.id !== true) out.item.properties[field] = responseProperty(schema, s)
    else if (s?.def.id === true && storage.idType === 'text') out.item.properties[field] = { type: 'string', description: `this installation's table is keyed by text${storage.sharedKey === undefined ? '' : ` (the ${storage.sharedKey})`}` }
    else if (s?.def.id === true && storage.idType === 'either') out.item.properties[field] = { type: ['integer', 'string'], description: `this installation's table is keyed by the ${storage.sharedKey ?? 'id'}` }
  }
  for (const body of [out.create, out.update]) {
    for (const [field, schema] of Object.entries(body.properties as Record<string, Json>)) {
      const s = storage.fields[field]
      if (s !== undefined) body.properties[field] = bodyProperty(schema, s, storage.reference, body === out.update && storage.dialect === 'sqlite')
    }
  }
  // a NOT NULL column without a default must be given on create, whatever the API's own schema says
  const required = new Set<string>(out.create.required ?? [])
  for (const field of Object.keys(out.create.properties)) {
    const s = storage.fields[field]
    if (s?.required === true && s.def.default === undefined) required.add(field)
  }
  if (required.size > 0) out.create.required = [...required]
  return out
}
