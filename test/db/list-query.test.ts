import t from 'tap'
import {
  decodeCursor, encodeCursor, nextLink, timeFromText, timeText, type CursorValueType, parseFilter, parseIsoDateTime, parseListQuery, parseSort, parseValue, sortSpec
} from '../../src/db/list-query.js'
import { materials, stations, users } from '../../src/db/resources.js'

interface Asserts { throws: typeof t.throws }

const bad = (t: Asserts, query: Record<string, string | string[]>, message: RegExp, def = materials): void => {
  t.throws(() => parseListQuery(query, def), { name: 'BadQueryError', statusCode: 400, message }, JSON.stringify(query))
}

t.test('defaults', async (t) => {
  const q = parseListQuery({}, materials)
  t.same(q, { limit: 100, sort: [{ field: 'id', desc: false }], count: false, filters: [] })
  t.notOk('offset' in q, 'offset only for offset paging')
})

t.test('limit, offset, count', async (t) => {
  t.equal(parseListQuery({ limit: '1000' }, materials).limit, 1000)
  t.equal(parseListQuery({ limit: '1' }, materials).limit, 1)
  t.equal(parseListQuery({ offset: '0' }, materials).offset, 0)
  t.equal(parseListQuery({ offset: '30' }, materials).offset, 30)
  t.equal(parseListQuery({ count: 'true' }, materials).count, true)
  t.equal(parseListQuery({ count: 'false' }, materials).count, false)
  // Python's requests (params={'count': True}), PowerShell and .NET write True and False (before: 400)
  t.equal(parseListQuery({ count: 'True' }, materials).count, true)
  t.equal(parseListQuery({ count: 'FALSE' }, materials).count, false)
  // whatever is wrong, the message states the whole rule: '-5' is an integer, so 'must be an integer' alone misleads
  const limitRule = (got: string): RegExp => new RegExp(`^Query parameter 'limit' must be an integer from 1 to 1000, got '${got}'$`)
  const offsetRule = (got: string): RegExp => new RegExp(`^Query parameter 'offset' must be an integer from 0 to 9007199254740991, got '${got}'$`)
  for (const raw of ['1001', '0', '-5', '-1', '10abc', '1.5', '', ' 5']) bad(t, { limit: raw }, limitRule(raw))
  bad(t, { limit: ['10', '20'] }, /'limit' must be given only once/)
  for (const raw of ['-3', '1.5', '+4', 'x', '99999999999999999999', '9007199254740992']) bad(t, { offset: raw }, offsetRule(raw.replace('+', '\\+')))
  t.equal(parseListQuery({ offset: '9007199254740991' }, materials).offset, Number.MAX_SAFE_INTEGER)
  bad(t, { count: 'yes' }, /'count' must be true or false/)
})

t.test('sort', async (t) => {
  t.same(parseSort(materials, '-modifiedAt,materialNumber'), [
    { field: 'modifiedAt', desc: true }, { field: 'materialNumber', desc: false }, { field: 'id', desc: false }])
  t.same(parseSort(materials, '-id,name'), [{ field: 'id', desc: true }, { field: 'name', desc: false }], 'id already a key: not appended')
  t.same(parseSort(materials, ' name,+weight'), [{ field: 'name', desc: false }, { field: 'weight', desc: false }, { field: 'id', desc: false }], 'an unencoded + arrives as a space')
  t.equal(sortSpec(parseSort(materials, '-modifiedAt')), '-modifiedAt,id')
  bad(t, { sort: 'nope' }, /Unknown sort field 'nope' in 'sort'/)
  for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) bad(t, { sort: name }, new RegExp(`^Unknown sort field '${name}' in 'sort'$`))
  bad(t, { sort: 'passwordHash' }, /Unknown sort field 'passwordHash'/, users)
  bad(t, { sort: 'name,-name' }, /Sort field 'name' given twice/)
})

t.test('filters: equality and every operator', async (t) => {
  const f = (raw: string, field = 'name'): unknown => parseFilter(field, materials.fields[field], raw)
  t.same(f('Valve'), { field: 'name', op: 'eq', values: ['Valve'] })
  t.same(f('[gt]5', 'weight'), { field: 'weight', op: 'gt', values: [5] })
  t.same(f('[gte]-1.5e2', 'weight'), { field: 'weight', op: 'gte', values: [-150] })
  t.same(f('[lt]7', 'id'), { field: 'id', op: 'lt', values: [7] })
  t.same(f('[lte]2024-03-01', 'modifiedAt'), { field: 'modifiedAt', op: 'lte', values: [new Date('2024-03-01T00:00:00Z')] })
  t.same(f('[not]x'), { field: 'name', op: 'not', values: ['x'] })
  t.same(f('[like]valve'), { field: 'name', op: 'like', values: ['%valve%'] }, 'no wildcard: substring')
  t.same(f('[like]val_e%'), { field: 'name', op: 'like', values: ['val_e%'] }, 'wildcards given: as is')
  t.same(f('[like]50\\%'), { field: 'name', op: 'like', values: ['%50\\%%'] }, '\\% is a literal percent: no wildcard left, a substring')
  t.same(f('[like]a\\_b%'), { field: 'name', op: 'like', values: ['a\\_b%'] }, '\\_ is a literal underscore')
  t.same(f('[like]C:\\\\x%'), { field: 'name', op: 'like', values: ['C:\\\\x%'] }, '\\\\ is one backslash')
  t.same(f('[like]C:\\temp'), { field: 'name', op: 'like', values: ['%C:\\\\temp%'] }, 'any other backslash is literal')
  t.same(f('[like]end\\'), { field: 'name', op: 'like', values: ['%end\\\\%'] }, 'a trailing backslash is literal')
  t.same(f('[notlike]a'), { field: 'name', op: 'notlike', values: ['%a%'] })
  t.same(f('[or]a;b;c'), { field: 'name', op: 'or', values: ['a', 'b', 'c'] })
  t.same(f('[nor]1;2', 'id'), { field: 'id', op: 'nor', values: [1, 2] })
  t.same(f('[null]'), { field: 'name', op: 'null', values: [] })
  t.same(f('[notnull]'), { field: 'name', op: 'notnull', values: [] })
  t.same(f('[GTE]3', 'weight'), { field: 'weight', op: 'gte', values: [3] }, 'operators are case-insensitive')
  t.same(f('[eq][foo]bar'), { field: 'name', op: 'eq', values: ['[foo]bar'] }, '[eq] is explicit equality: a value starting with [ stays expressible')
  t.same(f('[EQ]'), { field: 'name', op: 'eq', values: [''] })
  t.same(f('[1]'), { field: 'name', op: 'eq', values: ['[1]'] }, 'only a bracketed word is an operator')
  t.same(f('[]x'), { field: 'name', op: 'eq', values: ['[]x'] })
  t.throws(() => f('[foo]bar'), { name: 'BadQueryError', message: /^Filter 'name': unknown operator '\[foo\]'; the operators are \[eq\] \[gt\] \[gte\] \[lt\] \[lte\] \[not\] \[like\] \[notlike\] \[or\] \[nor\] \[null\] \[notnull\] \(case-insensitive\)\. To match a value that starts with '\[', put \[eq\] before it: 'name=\[eq\]\[foo\]bar'$/ })
  t.throws(() => f('[ne]5', 'stockQuantity'), { message: /unknown operator '\[ne\]' \(did you mean \[not\]\?\)/ }, 'not "expected a number"')
  t.throws(() => f('[notnullx]'), { message: /unknown operator '\[notnullx\]'/ })
  t.same(f(''), { field: 'name', op: 'eq', values: [''] })
  t.same(f('true', 'blocked'), { field: 'blocked', op: 'eq', values: [true] })
})

t.test('filters from the query string: repeated keys AND, modifiedSince', async (t) => {
  const q = parseListQuery({ modifiedAt: ['[gte]2024-01-01', '[lt]2024-02-01'], modifiedSince: '2023-12-01T10:00:00+02:00', unit: 'kg', cursor: undefined }, materials)
  t.same(q.filters, [
    { field: 'modifiedAt', op: 'gte', values: [new Date('2023-12-01T08:00:00Z')] },
    { field: 'modifiedAt', op: 'gte', values: [new Date('2024-01-01T00:00:00Z')] },
    { field: 'modifiedAt', op: 'lt', values: [new Date('2024-02-01T00:00:00Z')] },
    { field: 'unit', op: 'eq', values: ['kg'] }
  ])
})

t.test('fields with a value map: a value not of their kind is a stored code', async (t) => {
  const codes = new Set(['blocked'])
  t.same(parseListQuery({ blocked: 'X' }, materials, codes).filters, [{ field: 'blocked', op: 'eq', values: ['X'] }])
  t.same(parseListQuery({ blocked: '[or]false;X' }, materials, codes).filters, [{ field: 'blocked', op: 'or', values: [false, 'X'] }], 'true and false stay booleans')
  t.same(parseListQuery({ blocked: '[nor]X;' }, materials, codes).filters, [{ field: 'blocked', op: 'nor', values: ['X', ''] }])
  t.same(parseListQuery({ blocked: '[null]' }, materials, codes).filters, [{ field: 'blocked', op: 'null', values: [] }])
  t.throws(() => parseListQuery({ blocked: 'null' }, materials, codes), /expected true or false, or a stored code \(for rows without a value: \[null\]\), got 'null'/)
  t.throws(() => parseListQuery({ blocked: 'X' }, materials), /Invalid value for 'blocked': expected true or false, got 'X'/, 'without a map: as before')
  t.same(parseListQuery({ blocked: 'True' }, materials).filters, [{ field: 'blocked', op: 'eq', values: [true] }], 'True as Python and .NET write it')
  t.same(parseListQuery({ blocked: '[or]False;X' }, materials, codes).filters, [{ field: 'blocked', op: 'or', values: [false, 'X'] }], 'with a map too: False is the boolean, not a code')
  t.same(parseFilter('address', stations.fields.address, '[or]1;S', true), { field: 'address', op: 'or', values: [1, 'S'] })
})

t.test('bad filters name the parameter', async (t) => {
  bad(t, { nope: '1' }, /^Unknown query parameter 'nope'$/)
  bad(t, { passwordHash: 'x' }, /^Unknown query parameter 'passwordHash'$/, users)
  bad(t, { tokenVersion: '1' }, /^Unknown query parameter 'tokenVersion'$/, users)
  bad(t, { toString: '1' }, /^Unknown query parameter 'toString'$/)
  bad(t, { materialnumber: 'M-1', blocked: 'false', Name: 'x' }, /^Unknown query parameters 'materialnumber', 'Name'$/)
  bad(t, { id: 'abc' }, /Invalid value for 'id': expected an integer, got 'abc'/)
  bad(t, { id: '1.5' }, /Invalid value for 'id': expected an integer/)
  bad(t, { id: '-99999999999999999999' }, /^Invalid value for 'id': expected an integer from -9007199254740991 to 9007199254740991, got '-99999999999999999999'$/)
  bad(t, { weight: '[gt]abc' }, /Invalid value for 'weight': expected a number, got 'abc'/)
  bad(t, { weight: '0x10' }, /Invalid value for 'weight'/)
  bad(t, { weight: 'Infinity' }, /Invalid value for 'weight'/)
  bad(t, { blocked: 'yes' }, /Invalid value for 'blocked': expected true or false/)
  bad(t, { modifiedAt: '[gte]2024-02-31' }, /Invalid value for 'modifiedAt': expected an ISO 8601 date-time/)
  bad(t, { modifiedAt: 'yesterday' }, /Invalid value for 'modifiedAt'/)
  bad(t, { modifiedSince: 'soon' }, /Invalid value for 'modifiedSince'/)
  bad(t, { address: '[or]1;x' }, /Invalid value for 'address': expected an integer, got 'x'/, stations)
  bad(t, { weight: '[like]5' }, /Filter 'weight': \[like\] works only on text fields/)
  bad(t, { name: '[null]x' }, /Filter 'name': \[null\] takes no value/)
  bad(t, { name: '[notnull]x' }, /\[notnull\] takes no value/)
  bad(t, { name: `[or]${Array.from({ length: 501 }, (_, i) => i).join(';')}` }, /Too many filter values/)
  bad(t, { offset: '10', cursor: 'abc' }, /'cursor' cannot be combined with 'offset'/)
  bad(t, { modifiedSince: '2024-01-01' }, /Unknown query parameter 'modifiedSince'/, { name: 'x', fields: { id: { kind: 'integer', id: true } } })
})

t.test('times finer than a millisecond: order filters round to the side that keeps them exact, equality is a 400', async (t) => {
  const at = (op: string, raw: string): string => {
    const f = parseFilter('modifiedAt', materials.fields.modifiedAt, `[${op}]${raw}`)
    return `${f.op} ${(f.values[0] as Date).toISOString()}`
  }
  const fine = '2026-01-30T06:30:00.2289Z'
  // a row shown as .228 is before .2289 and not at or past .2281 (before: .2289 cut to .228 found it neither way)
  t.equal(at('lt', fine), 'lte 2026-01-30T06:30:00.228Z', '[lt] .2289 is [lte] .228')
  t.equal(at('gte', '2026-01-30T06:30:00.2281Z'), 'gt 2026-01-30T06:30:00.228Z', '[gte] .2281 is [gt] .228')
  t.equal(at('gt', fine), 'gt 2026-01-30T06:30:00.228Z', '[gt] .2289 is [gt] .228')
  t.equal(at('lte', fine), 'lte 2026-01-30T06:30:00.228Z', '[lte] .2289 is [lte] .228')
  t.equal(at('lt', '2026-01-30T06:30:00.2280000Z'), 'lt 2026-01-30T06:30:00.228Z', 'zeros past the millisecond change nothing')
  // .NET's DateTime.MaxValue as "no upper bound": every row is before it (before this rule a bound past 9999 matched nothing)
  t.equal(at('lt', '9999-12-31T23:59:59.9999999Z'), 'lte 9999-12-31T23:59:59.999Z')
  t.equal(at('gte', '9999-12-31T23:59:59.9999999Z'), 'gt 9999-12-31T23:59:59.999Z')
  const since = parseListQuery({ modifiedSince: '2026-01-30T06:30:00.2281234+00:00' }, materials).filters[0]
  t.same(since, { field: 'modifiedAt', op: 'gt', values: [new Date('2026-01-30T06:30:00.228Z')] }, 'modifiedSince is [gte]: after .228')
  for (const query of [{ modifiedAt: fine }, { modifiedAt: `[eq]${fine}` }, { modifiedAt: `[not]${fine}` }, { modifiedAt: `[or]2026-01-30;${fine}` }]) {
    bad(t, query, /^Invalid value for 'modifiedAt': the API's times are whole milliseconds, so none equals '2026-01-30T06:30:00\.2289Z'; use \[gte\] and \[lt\] for a range$/)
  }
  t.equal(parseFilter('modifiedAt', materials.fields.modifiedAt, '2026-01-30T06:30:00.228000Z').values[0]?.toString(), new Date('2026-01-30T06:30:00.228Z').toString())
})

t.test('ISO 8601 parsing', async (t) => {
  t.equal(parseIsoDateTime('0001-01-01T00:00:00Z')?.toISOString(), '0001-01-01T00:00:00.000Z', ".NET's DateTime.MinValue (before: Date.UTC read year 1 as 1901, and the date was refused)")
  t.equal(parseIsoDateTime('0099-12-31')?.toISOString(), '0099-12-31T00:00:00.000Z')
  t.equal(parseIsoDateTime('0001-02-29'), undefined)
  t.equal(parseIsoDateTime('0000-01-01T00:00:00Z'), undefined, 'no year 0000 (SQL Server and .NET count from 0001)')
  t.equal(parseIsoDateTime('2024-05-06')?.toISOString(), '2024-05-06T00:00:00.000Z')
  t.equal(parseIsoDateTime('2024-05-06T07:08')?.toISOString(), '2024-05-06T07:08:00.000Z', 'no offset: UTC')
  t.equal(parseIsoDateTime('2024-05-06T07:08:09.123456Z')?.toISOString(), '2024-05-06T07:08:09.123Z')
  t.equal(parseIsoDateTime('2024-05-06T07:08:09-0130')?.toISOString(), '2024-05-06T08:38:09.000Z')
  t.equal(parseIsoDateTime('2024-05-06T07:08:09 02:00')?.toISOString(), '2024-05-06T05:08:09.000Z', "space read as '+'")
  t.equal(parseIsoDateTime('2024-02-29')?.toISOString(), '2024-02-29T00:00:00.000Z')
  t.equal(parseIsoDateTime('2023-02-29'), undefined)
  t.equal(parseIsoDateTime('2024-13-01'), undefined)
  t.equal(parseIsoDateTime('2024-01-01T24:00'), undefined)
  t.equal(parseIsoDateTime('2024-01-01T10:60'), undefined)
  t.equal(parseIsoDateTime('1714000000'), undefined)
  t.equal(parseValue('integer', '9007199254740993'), undefined, 'beyond safe integers')
  t.equal(parseValue('number', '.5'), 0.5)
  t.equal(parseValue('number', ''), undefined)
})

t.test('cursor round trip and mismatch', async (t) => {
  const sort = parseSort(materials, '-modifiedAt,description')
  const types: CursorValueType[] = ['time', 'string', 'integer']
  const nullable = [true, true, false]
  const cursor = encodeCursor(sort, [new Date('2024-01-02T03:04:05.678Z'), null, 9])
  t.match(cursor, /^[A-Za-z0-9_-]+$/, 'base64url')
  t.same(decodeCursor(cursor, sort, types, nullable), [new Date('2024-01-02T03:04:05.678Z'), null, 9])
  const q = parseListQuery({ sort: '-modifiedAt,description', cursor }, materials)
  t.equal(q.cursor, cursor, 'the repository decodes it, knowing the column types')
  t.equal(q.offset, undefined)
  const bad2 = (c: string, re: RegExp, s = sort, ty = types, nu = nullable): void => {
    t.throws(() => decodeCursor(c, s, ty, nu), re)
  }
  bad2(cursor, /'cursor' does not match sort/, parseSort(materials, 'modifiedAt,description'))
  bad2('not a cursor!', /'cursor' is not a valid cursor/)
  bad2('bm90IGpzb24', /'cursor' is not a valid cursor/)
  bad(t, { offset: '5', cursor }, /cannot be combined with 'offset'/)
  const forged = (body: unknown): string => Buffer.from(JSON.stringify(body)).toString('base64url')
  const byId = parseSort(materials, undefined)
  bad2(forged(null), /not a valid cursor/, byId, ['integer'], [false])
  bad2(forged({ s: 'id', v: [] }), /not a valid cursor/, byId, ['integer'], [false])
  bad2(forged({ s: 'id', v: [null] }), /not a valid cursor/, byId, ['integer'], [false])
  bad2(forged({ s: 'id', v: ['1x'] }), /not a valid cursor/, byId, ['integer'], [false])
  bad2(forged({ s: 'id', v: [1.5] }), /not a valid cursor/, byId, ['integer'], [false])
  // 19 digits, but beyond a 64-bit integer (SQL Server's bigint, whose driver would refuse it: a 500)
  bad2(forged({ s: 'id', v: ['9999999999999999999'] }), /not a valid cursor/, byId, ['integer'], [false])
  bad2(forged({ s: 'id', v: ['9223372036854775808'] }), /not a valid cursor/, byId, ['integer'], [false])
  bad2(forged({ s: 'id', v: ['-9223372036854775809'] }), /not a valid cursor/, byId, ['integer'], [false])
  t.same(decodeCursor(forged({ s: 'id', v: ['9223372036854775807'] }), byId, ['integer'], [false]), ['9223372036854775807'], "bigint's last value")
  t.same(decodeCursor(forged({ s: 'id', v: ['-9223372036854775808'] }), byId, ['integer'], [false]), ['-9223372036854775808'], "bigint's first value")
  const byTime = parseSort(materials, 'modifiedAt')
  bad2(forged({ s: 'modifiedAt,id', v: ['never', 1] }), /not a valid cursor/, byTime, ['time', 'integer'], [true, false])
  const byBlocked = parseSort(materials, 'blocked,weight')
  bad2(forged({ s: 'blocked,weight,id', v: ['true', 2.5, 1] }), /not a valid cursor/, byBlocked, ['boolean', 'number', 'integer'], [false, true, false])
  t.same(decodeCursor(forged({ s: 'blocked,weight,id', v: [true, 2.5, 1] }), byBlocked, ['boolean', 'number', 'integer'], [false, true, false]), [true, 2.5, 1])
  t.same(decodeCursor(forged({ s: 'blocked,weight,id', v: [1, 2.5, 1] }), byBlocked, ['boolean', 'number', 'integer'], [false, true, false]), [1, 2.5, 1], 'SQLite keeps booleans as 0/1')
})

t.test('every cursor encodeCursor makes decodes: odd values SQLite keeps, bigint text, infinity', async (t) => {
  const sort = parseSort(materials, 'stockQuantity,weight')
  const sqlite: CursorValueType[] = ['scalar', 'scalar', 'scalar']
  const roundTrip = (values: unknown[], types = sqlite): unknown[] => decodeCursor(encodeCursor(sort, values), sort, types, [true, true, false])
  t.same(roundTrip([2.5, '1,5', 100021]), [2.5, '1,5', 100021], 'a fraction in an INTEGER column, text in a DECIMAL one')
  t.same(roundTrip([Infinity, -Infinity, 1]), [Infinity, -Infinity, 1], '±Infinity, which JSON has no literal for')
  t.same(roundTrip([0, null, 1]), [0, null, 1])
  const body = JSON.parse(Buffer.from(encodeCursor(sort, [Infinity, 1, 2]), 'base64url').toString()) as { v: unknown[] }
  t.same(body.v[0], { n: 'Infinity' }, 'not null, which would put the walk back to the NULLs')
  // SQL Server: bigint columns arrive as text; beyond 2^53 text keeps the exact value
  const mssql: CursorValueType[] = ['number', 'number', 'integer']
  t.same(roundTrip([2.5, Infinity, '9007199254740993'], mssql), [2.5, Infinity, '9007199254740993'])
  t.same(roundTrip([1, 2, '42'], mssql), [1, 2, 42])
  t.same(roundTrip([1, 2, 2n ** 60n], mssql), [1, 2, String(2n ** 60n)])
  t.same(roundTrip([1, 2, 42n], mssql), [1, 2, 42])
  const forged = (v: unknown[]): string => Buffer.from(JSON.stringify({ s: 'stockQuantity,weight,id', v })).toString('base64url')
  for (const v of [[{ n: 'NaN' }, 1, 1], [{}, 1, 1], [[1], 1, 1]]) {
    t.throws(() => decodeCursor(forged(v), sort, sqlite, [true, true, false]), /not a valid cursor/, JSON.stringify(v))
  }
})

t.test('cursor times keep the digits below the millisecond (datetime2(7))', async (t) => {
  const stored = new Date('2021-03-15T14:22:05.123Z')
  Object.defineProperty(stored, 'nanosecondsDelta', { value: 0.0004567, enumerable: false })
  t.equal(timeText(stored), '2021-03-15T14:22:05.1234567Z')
  t.equal(timeText(new Date('2021-03-15T14:22:05.120Z')), '2021-03-15T14:22:05.120Z')
  const back = timeFromText('2021-03-15T14:22:05.1234567Z') as Date & { nanosecondDelta: number }
  t.equal(back.toISOString(), '2021-03-15T14:22:05.123Z')
  t.equal(Math.round(back.nanosecondDelta * 1e7), 4567, 'tedious reads nanosecondDelta when it writes a datetime2 parameter')
  const sort = parseSort(materials, 'modifiedAt')
  const [v] = decodeCursor(encodeCursor(sort, [stored, 1]), sort, ['time', 'integer'], [true, false]) as [Date & { nanosecondDelta: number }]
  t.equal(timeText(Object.defineProperty(new Date(v.getTime()), 'nanosecondsDelta', { value: v.nanosecondDelta })), '2021-03-15T14:22:05.1234567Z')
  t.equal(timeFromText('2021-03-15T14:22:05.12Z')?.toISOString(), '2021-03-15T14:22:05.120Z')
  t.equal(timeFromText('nope'), undefined)
})

t.test('nextLink keeps filters, sort, limit and count; drops offset and the old cursor', async (t) => {
  const link = nextLink('/api/materials', {
    name: '[like]a b&c', modifiedAt: ['[gte]2024-01-01T00:00:00Z', '[lt]2024-02-01'], sort: '-modifiedAt,name', limit: '50', count: 'true', offset: '100', cursor: 'OLD', x: undefined
  }, 'NEW_cursor-1')
  t.equal(link, '/api/materials?name=%5Blike%5Da%20b%26c&modifiedAt=%5Bgte%5D2024-01-01T00:00:00Z&modifiedAt=%5Blt%5D2024-02-01' +
    '&sort=-modifiedAt,name&limit=50&count=true&cursor=NEW_cursor-1')
  // what the link carries parses back to the same query
  const params = new URL(link, 'http://x').searchParams
  const back: Record<string, string[]> = {}
  for (const [k, v] of params) (back[k] ??= []).push(v)
  t.same(back.name, ['[like]a b&c'])
  t.same(back.modifiedAt, ['[gte]2024-01-01T00:00:00Z', '[lt]2024-02-01'])
  t.equal(nextLink('/api/stations', {}, 'c'), '/api/stations?cursor=c')
})
