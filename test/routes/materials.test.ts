import { createHash } from 'node:crypto'
import t from 'tap'
import { referenceMappings } from '../../src/db/resources.js'
import { build } from '../helpers/build.js'

/** Serialized once: the ETag is the hash of the very bytes sent. */
const tagOfBody = (body: string) => `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`

const MATERIAL_KEYS = ['barcode', 'blockReason', 'blocked', 'createdAt', 'description', 'id', 'materialNumber', 'maxStock', 'minStock', 'modifiedAt', 'name', 'stockQuantity', 'unit', 'weight']

t.test('every materials route needs a token', async (t) => {
  const { app } = await build(t)
  for (const [method, url] of [['GET', '/api/materials'], ['POST', '/api/materials'], ['GET', '/api/materials/1'], ['POST', '/api/materials/1'], ['PATCH', '/api/materials/1'], ['DELETE', '/api/materials/1']]) {
    const res = await app.inject({ method: method as 'GET', url })
    t.equal(res.statusCode, 401, `${method} ${url}`)
    t.equal(res.json().code, 'TOKEN_MISSING')
  }
})

t.test('create, read, update, delete', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const erp = await ctx.createUser('application')
  const headers = auth(erp.accessToken)

  const created = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'M-1', name: 'Hex bolt M8x40', weight: 0.021, minStock: 10 } })
  t.equal(created.statusCode, 201)
  const m = created.json()
  t.equal(created.headers.location, `/api/materials/${m.id}`)
  t.equal((await app.inject({ method: 'POST', url: '/api/materials/?note=x', headers, payload: { materialNumber: 'M-0', name: 'Sent with a query' } })).statusCode, 400, 'a create takes no query parameters')
  const slash = await app.inject({ method: 'POST', url: '/api/materials/', headers, payload: { materialNumber: 'M-0', name: 'Sent to the slash form' } })
  t.equal(slash.statusCode, 201)
  t.equal(slash.headers.location, `/api/materials/${slash.json().id}`, 'the same Location from /api/materials/')
  t.equal((await app.inject({ method: 'DELETE', url: slash.headers.location as string, headers: auth(ctx.adminToken) })).statusCode, 204)
  t.equal(created.headers.etag, tagOfBody(created.body), 'a create answers with the ETag of the body it sends')
  t.same(Object.keys(m).sort(), MATERIAL_KEYS)
  t.match(m, { materialNumber: 'M-1', name: 'Hex bolt M8x40', unit: 'pcs', blocked: false, weight: 0.021, minStock: 10, maxStock: null, stockQuantity: 0, description: null })
  t.match(m.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.equal(m.createdAt, m.modifiedAt)

  const read = await app.inject({ method: 'GET', url: `/api/materials/${m.id}`, headers })
  t.equal(read.statusCode, 200)
  t.same(read.json(), m)
  const etag = read.headers.etag as string
  t.match(etag, /^"[\w-]+"$/)
  t.equal(etag, tagOfBody(read.body), 'the ETag is the hash of the body as sent')
  t.equal(etag, created.headers.etag, 'the ETag of the create is the one a read gives')
  t.match(read.headers['content-type'], /^application\/json; charset=utf-8$/)
  const notModified = await app.inject({ method: 'GET', url: `/api/materials/${m.id}`, headers: { ...headers, 'if-none-match': etag } })
  t.equal(notModified.statusCode, 304)
  t.equal(notModified.body, '')

  await new Promise((resolve) => setTimeout(resolve, 5))
  const updated = await app.inject({ method: 'POST', url: `/api/materials/${m.id}`, headers: { ...headers, 'if-match': etag }, payload: { blocked: true, blockReason: 'Quality hold' } })
  t.equal(updated.statusCode, 200)
  t.match(updated.json(), { name: 'Hex bolt M8x40', blocked: true, blockReason: 'Quality hold', weight: 0.021 })
  t.ok(updated.json().modifiedAt > m.modifiedAt, 'modifiedAt moves on')
  t.equal(updated.json().createdAt, m.createdAt)
  t.not(updated.headers.etag, etag)
  t.equal(updated.headers.etag, tagOfBody(updated.body), 'an update answers with the ETag of the body it sends')
  t.equal((await app.inject({ method: 'GET', url: `/api/materials/${m.id}`, headers: { ...headers, 'if-none-match': updated.headers.etag as string } })).statusCode, 304, 'which a read then confirms')

  const lost = await app.inject({ method: 'PATCH', url: `/api/materials/${m.id}`, headers: { ...headers, 'if-match': etag }, payload: { name: 'overwritten' } })
  t.equal(lost.statusCode, 412, 'an update based on an old ETag is refused')
  t.equal(lost.json().code, 'PRECONDITION_FAILED')
  t.equal((await app.inject({ method: 'GET', url: `/api/materials/${m.id}`, headers })).json().name, 'Hex bolt M8x40', 'and changed nothing')
  t.equal((await app.inject({ method: 'GET', url: `/api/materials/${m.id}`, headers: { ...headers, 'if-none-match': etag } })).statusCode, 200, 'old ETag is no longer current')

  const delStale = await app.inject({ method: 'DELETE', url: `/api/materials/${m.id}`, headers: { ...headers, 'if-match': etag } })
  t.equal(delStale.statusCode, 412)
  // a tag in weak form (as nginx's gzip hands it on) counts by its value (README, Conditional requests)
  t.equal((await app.inject({ method: 'DELETE', url: `/api/materials/${m.id}`, headers: { ...headers, 'if-match': `W/${etag}` } })).statusCode, 412, 'a stale tag in weak form is refused too')
  // an empty If-Match names no tag: it is no way around the check
  for (const method of ['PATCH', 'DELETE'] as const) {
    const empty = await app.inject({ method, url: `/api/materials/${m.id}`, headers: { ...headers, 'if-match': '' }, ...(method === 'PATCH' && { payload: { name: 'overwritten' } }) })
    t.equal(empty.statusCode, 412, `${method} with an empty If-Match`)
  }
  t.equal((await app.inject({ method: 'GET', url: `/api/materials/${m.id}`, headers })).json().name, 'Hex bolt M8x40', 'and changed nothing')
  const weak = await app.inject({ method: 'PATCH', url: `/api/materials/${m.id}`, headers: { ...headers, 'if-match': `W/${updated.headers.etag as string}` }, payload: { minStock: 5 } })
  t.equal(weak.statusCode, 200, 'the current tag in weak form matches')
  const del = await app.inject({ method: 'DELETE', url: `/api/materials/${m.id}`, headers: { ...headers, 'if-match': weak.headers.etag as string } })
  t.equal(del.statusCode, 204)
  t.equal((await app.inject({ method: 'GET', url: `/api/materials/${m.id}`, headers })).statusCode, 404)
  const gone = await app.inject({ method: 'DELETE', url: `/api/materials/${m.id}`, headers })
  t.same(gone.json(), { statusCode: 404, code: 'NOT_FOUND', error: 'Not Found', message: `Material ${m.id} not found` })
  t.equal((await app.inject({ method: 'POST', url: `/api/materials/${m.id}`, headers, payload: { name: 'x' } })).statusCode, 404)
})

t.test('bad bodies are refused and change nothing', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const headers = auth(ctx.adminToken)
  const first = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'M-1', name: 'First' } })
  t.equal(first.statusCode, 201)
  const id = first.json().id

  const dup = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'M-1', name: 'Second' } })
  t.equal(dup.statusCode, 409)
  t.same(Object.keys(dup.json()).sort(), ['code', 'error', 'message', 'statusCode'])
  t.match(dup.json().message, /materialNumber/)
  t.notMatch(dup.json().message, /material_number|materials|UNIQUE|SQL/i, 'no table or column names')

  const cases: Array<[string, object, RegExp]> = [
    ['missing name', { materialNumber: 'M-2' }, /required field 'name'/],
    ['number as string', { materialNumber: 'M-2', name: 'x', weight: '5' }, /body\/weight/],
    ['boolean as string', { materialNumber: 'M-2', name: 'x', blocked: 'false' }, /body\/blocked/],
    ['array as string', { materialNumber: ['M-2'], name: 'x' }, /body\/materialNumber/],
    ['unknown field', { materialNumber: 'M-2', name: 'x', colour: 'red' }, /unknown field 'colour'/],
    ['read-only stockQuantity', { materialNumber: 'M-2', name: 'x', stockQuantity: 5 }, /stockQuantity is read-only/],
    ['read-only modifiedAt', { materialNumber: 'M-2', name: 'x', modifiedAt: '2020-01-01T00:00:00Z' }, /modifiedAt is read-only/],
    ['negative weight', { materialNumber: 'M-2', name: 'x', weight: -1 }, /body\/weight/],
    ['empty materialNumber', { materialNumber: '', name: 'x' }, /body\/materialNumber/],
    // stored as sent, a blank number or name matches nothing a person types (before: 201)
    ['materialNumber of spaces', { materialNumber: '   ', name: 'x' }, /^body\/materialNumber must hold a character other than spaces, and no control or invisible characters \(zero-width spaces, direction marks\) nor spaces other than U\+0020$/],
    ['materialNumber with a zero-width space', { materialNumber: 'M-1\u200b', name: 'x' }, /^body\/materialNumber must hold a character other than spaces, and no control or invisible characters/],
    // the rest of Unicode's default-ignorable characters show as nothing too (before: 201, a second 'M-1X')
    ...['\u034f', '\u115f', '\u1160', '\u17b4', '\u180b', '\u3164', '\ufe0f', '\uffa0', '\ufff0'].map((c): [string, object, RegExp] =>
      [`materialNumber with U+${c.charCodeAt(0).toString(16).toUpperCase()}`, { materialNumber: `M-1${c}X`, name: 'x' }, /^body\/materialNumber must hold a character other than spaces, and no control or invisible characters/]),
    // beyond the BMP too, assigned or not (tag characters, variation selectors supplement, musical symbol
    // formatting, shorthand format controls), noncharacters, line separators, and spaces that look like
    // U+0020 (before: 201, a second 'M-1 X' or 'M-1X'); the 400 names the character
    ...[0xe0001, 0xe0020, 0xe0041, 0xe007f, 0xe0100, 0xe01ef, 0x1d173, 0x1d17a, 0x1bca0, 0x1bca3, 0xe0080, 0xe00ff, 0xe01f0, 0xe0fff,
      0xfdd0, 0xfdef, 0xfffe, 0xffff, 0x1fffe, 0x10ffff, 0x2028, 0x1680, 0xa0, 0x2007, 0x202f, 0x2000, 0x200a, 0x205f, 0x3000].map((c): [string, object, RegExp] => {
      const code = `U\\+${c.toString(16).toUpperCase().padStart(4, '0')}`
      return [`materialNumber with ${code}`, { materialNumber: `M-1${String.fromCodePoint(c)}X`, name: 'x' }, new RegExp(`^body/materialNumber must hold a character other than spaces, and no control or invisible characters \\(zero-width spaces, direction marks\\) nor spaces other than U\\+0020, got ${code}$`)]
    }),
    ['name of a tab', { materialNumber: 'M-2', name: '\t' }, /^body\/name must hold a character other than spaces$/]
  ]
  for (const [name, payload, message] of cases) {
    const res = await app.inject({ method: 'POST', url: '/api/materials', headers, payload })
    t.equal(res.statusCode, 400, name)
    t.equal(res.json().code, 'VALIDATION_ERROR', name)
    t.match(res.json().message, message, name)
  }
  // U+FFFD shows as itself, and a description is free text: both are taken as sent
  const replacement = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'M-\ufffd', name: 'x', description: 'a\u00a0b\u{e0001}' } })
  t.equal(replacement.statusCode, 201, replacement.body)
  t.equal((await app.inject({ method: 'DELETE', url: `/api/materials/${String(replacement.json().id)}`, headers })).statusCode, 204)
  const blank = await app.inject({ method: 'PATCH', url: `/api/materials/${id}`, headers, payload: { name: '  ' } })
  t.equal(blank.statusCode, 400, 'a rename to spaces')
  t.match(blank.json().message, /^body\/name must hold a character other than spaces$/)
  const upd = await app.inject({ method: 'POST', url: `/api/materials/${id}`, headers, payload: { id: 99 } })
  t.equal(upd.statusCode, 400)
  t.match(upd.json().message, /id is read-only/)
  const dupUpd = await app.inject({ method: 'POST', url: `/api/materials/${id}`, headers, payload: { materialNumber: 'M-3' } })
  t.equal(dupUpd.statusCode, 200)
  await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'M-1', name: 'Again' } })
  const clash = await app.inject({ method: 'POST', url: `/api/materials/${id}`, headers, payload: { materialNumber: 'M-1' } })
  t.equal(clash.statusCode, 409)
  const list = await app.inject({ method: 'GET', url: '/api/materials?count=true', headers })
  t.equal(list.json().meta.total, 2, 'only the two valid creates landed')
  const big = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'M-9', name: 'x', description: 'y'.repeat(2 * 1024 * 1024) } })
  t.equal(big.statusCode, 413)
})

t.test('SQL metacharacters are stored and matched literally', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const headers = auth(ctx.adminToken)
  const nasty = ["O'Brien \"quoted\"; DROP TABLE materials; --", '100% [cotton]_blend\\x', 'Robert\'); DELETE FROM gateway_users;--']
  const ids: number[] = []
  for (const [i, name] of nasty.entries()) {
    const res = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: `Q-${i}'`, name } })
    t.equal(res.statusCode, 201)
    t.equal(res.json().name, name)
    ids.push(res.json().id)
  }
  await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'plain', name: '100 cotton xblend' } })
  const q = async (query: Record<string, string>) => {
    const res = await app.inject({ method: 'GET', url: '/api/materials', query, headers })
    t.equal(res.statusCode, 200, JSON.stringify(query))
    return res.json().data.map((m: { name: string }) => m.name)
  }
  t.same(await q({ name: nasty[0] }), [nasty[0]], 'equality with quotes and comment markers')
  t.same(await q({ name: '[like]100%' }), [nasty[1], '100 cotton xblend'], '% is a wildcard in a like pattern')
  t.same(await q({ name: '[like][cotton]' }), [nasty[1]], 'brackets match literally')
  t.same(await q({ name: '[like]%[cotton]_blend\\x' }), [nasty[1]], 'a pattern is anchored; [ and \\ are literal, _ is one character')
  t.same(await q({ name: '[like]_blend' }), [], 'with a wildcard the pattern must match the whole value')
  t.same(await q({ materialNumber: "Q-0'" }), [nasty[0]])
  t.same(await q({ name: '[or]' + nasty[2].replaceAll(';', '\\;') + ';100 cotton xblend' }), [nasty[2], '100 cotton xblend'], 'a literal ; is written \\;')
  t.equal((await app.inject({ method: 'GET', url: '/api/users?count=true', headers })).json().meta.total, 1, 'the user table is intact')
})

t.test('an update that changes nothing writes nothing: modifiedAt and the ETag stay', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const headers = auth(ctx.adminToken)
  const m = (await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'M-SAME', name: 'Washer', minStock: 2.5, blocked: true, blockReason: 'QA' } })).json()
  const etag = (await app.inject({ method: 'GET', url: `/api/materials/${m.id}`, headers })).headers.etag as string
  await new Promise((resolve) => setTimeout(resolve, 5))
  // the ERP sends its master data again, every field as it is
  const same = await app.inject({ method: 'PATCH', url: `/api/materials/${m.id}`, headers, payload: { materialNumber: 'M-SAME', name: 'Washer', minStock: 2.5, maxStock: null, unit: 'pcs', blocked: true, blockReason: 'QA' } })
  t.equal(same.statusCode, 200)
  t.same(same.json(), m, 'the row as it was, modifiedAt included')
  t.equal(same.headers.etag, etag)
  const changedSince = await app.inject({ method: 'GET', url: `/api/materials?modifiedAt=[gt]${m.modifiedAt as string}`, headers })
  t.same(changedSince.json().data, [], 'an incremental sync does not see it as changed')
  t.equal((await app.inject({ method: 'PATCH', url: `/api/materials/${m.id}`, headers: { ...headers, 'if-match': '"stale"' }, payload: { name: 'Washer' } })).statusCode, 412, 'If-Match is still checked')
  t.equal((await app.inject({ method: 'PATCH', url: '/api/materials/999999', headers, payload: { name: 'Washer' } })).statusCode, 404, 'and a missing row is still a 404')
  t.equal((await app.inject({ method: 'PATCH', url: `/api/materials/${m.id}`, headers, payload: { name: '' } })).statusCode, 400, 'and the values still validated')

  // one field that differs: the row is written and modifiedAt moves
  const one = await app.inject({ method: 'PATCH', url: `/api/materials/${m.id}`, headers, payload: { name: 'Washer', minStock: 3 } })
  t.equal(one.statusCode, 200)
  t.equal(one.json().minStock, 3)
  t.ok(one.json().modifiedAt > m.modifiedAt, 'modifiedAt moves on')
  t.not(one.headers.etag, etag)
})

t.test('a number or name the picking system stored with an invisible character is taken back unchanged; a new one is refused', async (t) => {
  const ctx = await build(t)
  const { app } = ctx
  const headers = ctx.auth(ctx.adminToken)
  // written past the API (the picking system's own program, an import): a zero-width space, a tab, a tag character, a no-break space
  const material = (await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'M-7', name: 'Legacy' } })).json()
  const station = (await app.inject({ method: 'POST', url: '/api/stations', headers, payload: { name: 'PTL-7' } })).json()
  for (const [mapping, field, value, id] of [[referenceMappings.materials, 'materialNumber', 'M-7\u200b', material.id], [referenceMappings.stations, 'name', 'PTL\t\u{e0001}\u00a07', station.id]] as const) {
    const column = (name: string) => mapping.columns[name] as string
    await ctx.db.execute({ text: `UPDATE "${mapping.table}" SET "${column(field)}" = @value WHERE "${column('id')}" = @id`, params: [{ name: 'value', kind: 'string', value }, { name: 'id', kind: 'integer', value: id }] })
  }
  const shown = (await app.inject({ method: 'GET', url: `/api/materials/${String(material.id)}`, headers })).json()
  // the ERP sends its master data again, every field as a read showed it
  const again = await app.inject({ method: 'PATCH', url: `/api/materials/${String(material.id)}`, headers, payload: { materialNumber: shown.materialNumber, name: 'Renamed' } })
  t.equal(again.statusCode, 200, `before: 400, the row could not be sent back as it was (${again.body})`)
  t.match(again.json(), { materialNumber: 'M-7\u200b', name: 'Renamed' })
  const form = await app.inject({ method: 'POST', url: `/api/stations/${String(station.id)}`, headers, payload: { name: 'PTL\t\u{e0001}\u00a07', description: 'Zone B' } })
  t.equal(form.statusCode, 200, form.body)
  t.match(form.json(), { name: 'PTL\t\u{e0001}\u00a07', description: 'Zone B' })
  // a new value with such a character is still refused, and changes nothing
  for (const [url, payload, field, code] of [
    [`/api/materials/${String(material.id)}`, { materialNumber: 'M-8\u200b' }, 'materialNumber', '200B'],
    [`/api/stations/${String(station.id)}`, { name: 'PTL-8\u00ad' }, 'name', '00AD'],
    [`/api/stations/${String(station.id)}`, { name: 'PTL-8\u{e0001}' }, 'name', 'E0001'],
    [`/api/stations/${String(station.id)}`, { name: 'PTL\u00a08' }, 'name', '00A0']
  ] as const) {
    const res = await app.inject({ method: 'PATCH', url, headers, payload })
    t.equal(res.statusCode, 400, res.body)
    t.equal(res.json().code, 'VALIDATION_ERROR')
    t.match(res.json().message, new RegExp(`^'${field}' may hold no control or invisible characters \\(zero-width spaces, direction marks\\) nor spaces other than U\\+0020, got U\\+${code}: `))
  }
  t.equal((await app.inject({ method: 'GET', url: `/api/materials/${String(material.id)}`, headers })).json().materialNumber, 'M-7\u200b')
  t.equal((await app.inject({ method: 'PATCH', url: `/api/materials/${String(material.id)}`, headers, payload: { materialNumber: '  ' } })).statusCode, 400, 'nor one of spaces')
})

t.test('a number or name in another Unicode form than NFC is refused: it would look like one that exists', async (t) => {
  const ctx = await build(t)
  const { app } = ctx
  const headers = ctx.auth(ctx.adminToken)
  const count = async (url: string) => (await app.inject({ method: 'GET', url: `${url}?limit=1&count=true`, headers })).json().meta.total as number
  t.equal((await app.inject({ method: 'POST', url: '/api/stations', headers, payload: { name: '\u00c9-01' } })).statusCode, 201, 'É-01, composed')
  t.equal((await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'CAF\u00c9', name: 'x' } })).statusCode, 201)
  const stations = await count('/api/stations')
  const materials = await count('/api/materials')
  // 'E' and a combining acute accent, as a macOS client may send it: before, a second É-01 beside the first
  for (const [url, payload, field] of [['/api/stations', { name: 'E\u0301-01' }, 'name'], ['/api/materials', { materialNumber: 'CAFE\u0301', name: 'x' }, 'materialNumber']] as const) {
    const res = await app.inject({ method: 'POST', url, headers, payload })
    t.equal(res.statusCode, 400, res.body)
    t.equal(res.json().code, 'VALIDATION_ERROR')
    t.match(res.json().message, new RegExp(`^'${field}' must be in Unicode NFC .*it would look like "(\u00c9-01|CAF\u00c9)"`))
  }
  t.equal(await count('/api/stations'), stations, 'no station was created')
  t.equal(await count('/api/materials'), materials, 'no material was created')
})

t.test('minStock may not be above maxStock: 400, nothing written', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const headers = auth(ctx.adminToken)
  const post = async (url: string, payload: Record<string, unknown>, method: 'POST' | 'PATCH' = 'POST') => await app.inject({ method, url, headers, payload })
  const count = async () => (await app.inject({ method: 'GET', url: '/api/materials?limit=1&count=true', headers })).json().meta.total as number
  const before = await count()
  const bad = await post('/api/materials', { materialNumber: 'M-ORD', name: 'x', minStock: 50, maxStock: 10 })
  t.equal(bad.statusCode, 400)
  t.same(bad.json(), { statusCode: 400, code: 'VALIDATION_ERROR', error: 'Bad Request', message: "'minStock' (50) may not be above 'maxStock' (10); nothing was written" })
  t.equal(await count(), before, 'no row was created')
  t.equal((await post('/api/materials', { materialNumber: 'M-EQ', name: 'x', minStock: 10, maxStock: 10 })).statusCode, 201, 'equal is fine')
  t.equal((await post('/api/materials', { materialNumber: 'M-MIN', name: 'x', minStock: 50, maxStock: null })).statusCode, 201, 'no maximum: any minimum')

  const m = (await post('/api/materials', { materialNumber: 'M-ORD', name: 'x', minStock: 5, maxStock: 20 })).json()
  const url = `/api/materials/${m.id as number}`
  const half = await post(url, { maxStock: 4 }, 'PATCH')
  t.equal(half.statusCode, 400)
  t.equal(half.json().message, "'minStock' (5, the material's current value) may not be above 'maxStock' (4); nothing was written")
  const other = await post(url, { minStock: 21 })
  t.equal(other.statusCode, 400, 'the other half against the stored maximum')
  t.equal(other.json().message, "'minStock' (21) may not be above 'maxStock' (20, the material's current value); nothing was written")
  t.same((await app.inject({ method: 'GET', url, headers })).json(), m, 'the row is unchanged')
  const both = await post(url, { minStock: 100, maxStock: 200 })
  t.equal(both.statusCode, 200, 'both halves together move past the stored ones')
  t.match(both.json(), { minStock: 100, maxStock: 200 })
  t.equal((await post(url, { name: 'renamed' })).statusCode, 200, 'a write that sets neither is not checked')
})
