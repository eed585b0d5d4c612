// The headers the gateway sends and reads are in the OpenAPI document: a generated client names them (ETag,
// Location, X-Total-Count, WWW-Authenticate, Retry-After, Allow; If-None-Match, If-Match) as the document does.
import t from 'tap'
import { DatabaseUnavailableError } from '../../src/db/errors.js'
import { build } from '../helpers/build.js'

type Json = Record<string, any>

/** The response headers the gateway sets that a client acts on. */
const WATCHED = ['etag', 'location', 'x-total-count', 'www-authenticate', 'retry-after', 'allow']

t.test('every header an answer carries is documented on that operation and status', async (t) => {
  const ctx = await build(t)
  const admin = ctx.auth(ctx.adminToken)
  const doc = (await ctx.app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as { paths: Record<string, Record<string, Json>> }
  const json = { 'content-type': 'application/json' }

  const documented = (path: string, method: string, status: number): string[] =>
    Object.keys(doc.paths[path]?.[method]?.responses?.[String(status)]?.headers ?? {}).map((name) => name.toLowerCase())
  const check = async (path: string, method: string, request: Json): Promise<Json> => {
    const res = await ctx.app.inject({ method: method.toUpperCase(), ...request } as any)
    const sent = WATCHED.filter((name) => res.headers[name] !== undefined)
    t.same(sent.filter((name) => !documented(path, method, res.statusCode).includes(name)), [],
      `${method.toUpperCase()} ${path} ${res.statusCode} documents ${sent.join(', ') || 'no header'}`)
    return res as unknown as Json
  }

  const created = await check('/api/materials', 'post', { url: '/api/materials', headers: admin, payload: { materialNumber: 'H-1', name: 'Header' } })
  t.equal(created.statusCode, 201)
  t.ok(created.headers.location !== undefined && created.headers.etag !== undefined, 'a create sends Location and ETag')
  const id = JSON.parse(created.body as string).id as number
  const read = await check('/api/materials/{id}', 'get', { url: `/api/materials/${id}`, headers: admin })
  const etag = read.headers.etag as string
  t.equal((await check('/api/materials/{id}', 'get', { url: `/api/materials/${id}`, headers: { ...admin, 'if-none-match': etag } })).statusCode, 304)
  await check('/api/materials/{id}', 'patch', { url: `/api/materials/${id}`, headers: { ...admin, 'if-match': etag }, payload: { name: 'Header 2' } })
  t.equal((await check('/api/materials/{id}', 'post', { url: `/api/materials/${id}`, headers: { ...admin, 'if-match': etag }, payload: { name: 'Header 3' } })).statusCode, 412)
  const list = await check('/api/materials', 'get', { url: '/api/materials?count=true&limit=2', headers: admin })
  t.ok(list.headers['x-total-count'] !== undefined && list.headers.etag !== undefined, 'a counted list sends X-Total-Count and ETag')
  t.equal((await check('/api/materials', 'get', { url: '/api/materials?count=true&limit=2', headers: { ...admin, 'if-none-match': list.headers.etag } })).statusCode, 304)
  await check('/api/stations', 'get', { url: '/api/stations?count=true', headers: admin })
  await check('/api/stations/{id}', 'get', { url: '/api/stations/1', headers: admin })
  const user = await check('/api/users', 'post', { url: '/api/users', headers: admin, payload: { username: 'header-user', password: 'a-long-password' } })
  await check('/api/users/{id}', 'get', { url: `/api/users/${JSON.parse(user.body as string).id as number}`, headers: admin })
  await check('/api/users', 'get', { url: '/api/users?count=true', headers: admin })

  // 401 with WWW-Authenticate: no token, a bad one, a refresh without one
  t.equal((await check('/api/materials', 'get', { url: '/api/materials' })).statusCode, 401)
  t.equal((await check('/api/materials/{id}', 'get', { url: `/api/materials/${id}`, headers: { authorization: 'Bearer a.b.c' } })).statusCode, 401)
  t.equal((await check('/api/users/refresh', 'post', { url: '/api/users/refresh' })).statusCode, 401)
  t.equal((await check('/api/users/login', 'post', { url: '/api/users/login', headers: json, payload: { username: 'admin', password: 'wrong-password' } })).statusCode, 401)
  // 429 with Retry-After: a throttled login
  let throttled: Json | undefined
  for (let i = 0; i < 6 && throttled?.statusCode !== 429; i++) throttled = await check('/api/users/login', 'post', { url: '/api/users/login', headers: json, payload: { username: 'nobody', password: 'wrong-password' } })
  t.equal(throttled?.statusCode, 429)
  // 503 with Retry-After: the database away
  const materials = ctx.app.repos.materials
  const get = materials.get.bind(materials)
  materials.get = async () => { throw new DatabaseUnavailableError() }
  const away = await check('/api/materials/{id}', 'get', { url: `/api/materials/${id}`, headers: admin })
  materials.get = get
  t.equal(away.statusCode, 503)
  t.ok(away.headers['retry-after'] !== undefined, 'the 503 sends Retry-After')

  // the request headers a client sends: If-None-Match where a read answers 304, If-Match where a write answers 412
  const headerParams = (path: string, method: string): string[] =>
    (doc.paths[path][method].parameters as Json[] ?? []).filter((p) => p.in === 'header').map((p) => p.name.toLowerCase())
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if ('304' in op.responses) t.ok(headerParams(path, method).includes('if-none-match'), `${method.toUpperCase()} ${path} takes If-None-Match`)
      if ('412' in op.responses) t.ok(headerParams(path, method).includes('if-match'), `${method.toUpperCase()} ${path} takes If-Match`)
    }
  }
  t.ok(headerParams('/api/events', 'get').includes('last-event-id'), 'the event stream keeps its Last-Event-ID')
})
