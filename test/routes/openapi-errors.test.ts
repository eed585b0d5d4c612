// The errors the gateway answers with are in the OpenAPI document: listed on the operation a request reached, with a
// schema its body validates against, or, when it reached none (no route, a wrong method), once in components.responses.
import Ajv from 'ajv'
import addFormats from 'ajv-formats'
import { connect } from 'node:net'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { build } from '../helpers/build.js'

type Json = Record<string, any>

interface Answer { statusCode: number, headers: Record<string, unknown>, body: string }

/** A request as a client sends it, the operation it was sent to, and the status the gateway gives it. */
interface Sample {
  status: number
  code: string
  op: [path: string, method: string]
  request: { method: string, url: string, headers?: Record<string, string>, payload?: string }
}

/** A raw HTTP request over a socket: Node's parser answers a header block too large before Fastify sees it. */
async function raw (port: number, text: string): Promise<Answer> {
  return await new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, () => socket.write(text))
    let got = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { got += chunk })
    socket.on('error', reject)
    socket.on('close', () => {
      const [head, ...rest] = got.split('\r\n\r\n')
      const statusCode = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1])
      resolve({ statusCode, headers: {}, body: rest.join('\r\n\r\n') })
    })
  })
}

t.test('every status the gateway answers is in the document, with a schema its body validates against', async (t) => {
  const ctx = await build(t)
  const admin = ctx.auth(ctx.adminToken)
  const doc = (await ctx.app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as { info: Json, paths: Record<string, Record<string, Json>>, components: Json }
  const ajv = addFormats.default(new Ajv.default({ strict: false, allErrors: true }))
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers: admin, payload: { materialNumber: 'E-1', name: 'Error' } })
  const id = created.json().id as number
  const big = `{"name":"${'x'.repeat(1024 * 1024)}"}`
  const json = { 'content-type': 'application/json' }
  const longId = '1'.repeat(101)

  const samples: Sample[] = [
    { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', op: ['/api/users/login', 'post'], request: { method: 'POST', url: '/api/users/login', headers: { 'content-type': 'text/plain' }, payload: 'admin' } },
    { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', op: ['/api/users/login', 'post'], request: { method: 'POST', url: '/api/users/login', headers: { ...json, 'content-encoding': 'gzip' }, payload: '{}' } },
    { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', op: ['/api/materials', 'post'], request: { method: 'POST', url: '/api/materials', headers: { ...admin, 'content-type': 'application/json; charset=latin1' }, payload: '{}' } },
    { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', op: ['/api/materials/{id}', 'patch'], request: { method: 'PATCH', url: `/api/materials/${id}`, headers: { ...admin, 'content-type': 'application/xml' }, payload: '<a/>' } },
    { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', op: ['/api/materials/{id}', 'delete'], request: { method: 'DELETE', url: `/api/materials/${id}`, headers: { ...admin, 'content-type': 'text/plain' }, payload: 'x' } },
    { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', op: ['/api/events/ticket', 'post'], request: { method: 'POST', url: '/api/events/ticket', headers: { ...admin, 'content-type': 'text/plain' }, payload: 'x' } },
    { status: 413, code: 'BODY_TOO_LARGE', op: ['/api/users/login', 'post'], request: { method: 'POST', url: '/api/users/login', headers: json, payload: big } },
    { status: 413, code: 'BODY_TOO_LARGE', op: ['/api/stations/{id}', 'post'], request: { method: 'POST', url: '/api/stations/1', headers: { ...admin, ...json }, payload: big } },
    { status: 414, code: 'URI_TOO_LONG', op: ['/api/materials/{id}', 'get'], request: { method: 'GET', url: `/api/materials/${longId}`, headers: admin } },
    { status: 414, code: 'URI_TOO_LONG', op: ['/api/users/sso/{id}/login', 'get'], request: { method: 'GET', url: `/api/users/sso/${'a'.repeat(101)}/login` } },
    { status: 414, code: 'URI_TOO_LONG', op: ['/api/stations/{id}/commands', 'post'], request: { method: 'POST', url: `/api/stations/${longId}/commands`, headers: { ...admin, ...json }, payload: '{"command":"status"}' } },
    { status: 400, code: 'BAD_URL', op: ['/api/users/sso/{id}/login', 'get'], request: { method: 'GET', url: '/api/users/sso/%zz/login' } },
    { status: 400, code: 'VALIDATION_ERROR', op: ['/api/users/sso/{id}/login', 'get'], request: { method: 'GET', url: `/api/users/sso/${'a'.repeat(33)}/login` } },
    // an id of '?' sent unencoded: the path ends at /api/users/sso, a user's record
    { status: 401, code: 'TOKEN_MISSING', op: ['/api/users/sso/{id}/login', 'get'], request: { method: 'GET', url: '/api/users/sso/?/login' } }
  ]

  /** the schema the document gives for this status of this operation, or undefined */
  const listed = (path: string, method: string, status: number): Json | undefined =>
    doc.paths[path]?.[method]?.responses?.[String(status)]?.content?.['application/json']?.schema

  const check = (sample: Sample, res: Answer): void => {
    const name = `${sample.request.method} ${sample.request.url.slice(0, 60)}`
    t.equal(res.statusCode, sample.status, `${name}: ${res.body.slice(0, 200)}`)
    const body = JSON.parse(res.body) as Json
    t.equal(body.code, sample.code, name)
    const schema = listed(...sample.op, sample.status)
    if (schema === undefined) {
      t.fail(`${sample.op[1].toUpperCase()} ${sample.op[0]} does not list ${sample.status}`)
      return
    }
    const validate = ajv.compile(schema)
    t.ok(validate(body), `${name}: the body validates against ${sample.op[1].toUpperCase()} ${sample.op[0]} ${sample.status}: ${ajv.errorsText(validate.errors)}`)
  }

  for (const sample of samples) check(sample, await ctx.app.inject(sample.request))

  // 500: a fault the handler did not expect
  const materials = ctx.app.repos.materials
  const get = materials.get.bind(materials)
  materials.get = async () => { throw new Error('boom: SELECT * FROM secret') }
  const broken = await ctx.app.inject({ method: 'GET', url: `/api/materials/${id}`, headers: admin })
  materials.get = get
  check({ status: 500, code: 'INTERNAL_ERROR', op: ['/api/materials/{id}', 'get'], request: { method: 'GET', url: `/api/materials/${id}` } }, broken)
  t.notMatch(broken.body, /secret/, 'no internals in the body')

  // 431: Node's parser, before any route, on a real socket
  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  const port = (ctx.app.server.address() as AddressInfo).port
  for (const [path, method, url] of [['/api/materials', 'get', '/api/materials'], ['/api/users/login', 'post', '/api/users/login']]) {
    const res = await raw(port, `${method.toUpperCase()} ${url} HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`)
    check({ status: 431, code: 'HEADERS_TOO_LARGE', op: [path, method], request: { method: method.toUpperCase(), url } }, res)
    // 417: an Expect the server does not take, answered before any route too
    const expect = await raw(port, `${method.toUpperCase()} ${url} HTTP/1.1\r\nHost: localhost\r\nExpect: something-else\r\n\r\n`)
    check({ status: 417, code: 'EXPECTATION_FAILED', op: [path, method], request: { method: method.toUpperCase(), url } }, expect)
  }

  // the walk: every operation lists what any request to it may get
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const codes = Object.keys(op.responses as Json)
      // a route that takes an access token answers 403 to a user whose type gives it no rights (an identity provider's
      // token without a usable type claim, a stored role code no map knows) and 503 when that provider is away
      const takesAccessToken = (op.security as Json[] | undefined)?.some((s) => 'identityProvider' in s) === true
      const expected = ['408', '417', '431', '500', ...(path.includes('{') ? ['414'] : []), ...(['post', 'put', 'patch', 'delete'].includes(method) ? ['413', '415'] : []),
        ...(takesAccessToken ? ['401', '403', '503'] : [])]
      t.same(expected.filter((code) => !codes.includes(code)), [], `${method.toUpperCase()} ${path} lists ${expected.join(', ')}`)
      // every error is JSON, on the event stream's operation too (only its 200 is text/event-stream)
      for (const code of Object.keys(op.responses as Json).filter((code) => code >= '400')) {
        t.same(Object.keys(op.responses[code].content as Json), ['application/json'], `${method.toUpperCase()} ${path} ${code} is JSON`)
      }
      for (const code of expected) t.match(op.responses[code].content['application/json'].schema, { required: ['statusCode', 'code', 'error', 'message'] })
    }
  }

  t.same(Object.keys(doc.paths['/api/events'].get.responses['200'].content as Json), ['text/event-stream'], 'the stream itself is text/event-stream')

  // no operation was reached: the answers are components, named in the document's description
  const unrouted: Array<[string, string, Answer]> = [
    ['RouteNotFound', 'ROUTE_NOT_FOUND', await ctx.app.inject({ method: 'GET', url: '/api/nothing-here', headers: admin })],
    ['RouteNotFound', 'ROUTE_NOT_FOUND', await ctx.app.inject({ method: 'GET', url: `/api/${'a'.repeat(200)}` })],
    ['MethodNotAllowed', 'METHOD_NOT_ALLOWED', await ctx.app.inject({ method: 'PUT', url: `/api/materials/${id}`, headers: { ...admin, ...json }, payload: '{}' })],
    ['MethodNotAllowed', 'METHOD_NOT_ALLOWED', await ctx.app.inject({ method: 'DELETE', url: '/api/materials', headers: admin })],
    ['BadUrl', 'BAD_URL', await ctx.app.inject({ method: 'GET', url: '/health/%zz' })]
  ]
  for (const [name, code, res] of unrouted) {
    const response = doc.components.responses?.[name] as Json | undefined
    if (response === undefined) {
      t.fail(`components.responses.${name} is missing`)
      continue
    }
    t.ok(response.description.startsWith(String(res.statusCode)), `${name}: ${res.statusCode}`)
    const body = JSON.parse(res.body) as Json
    t.equal(body.code, code)
    const validate = ajv.compile(response.content['application/json'].schema)
    t.ok(validate(body), `${name}: ${ajv.errorsText(validate.errors)}`)
    if (name === 'MethodNotAllowed') t.ok(typeof res.headers.allow === 'string' && response.headers.Allow !== undefined, 'Allow sent and documented')
    t.match(doc.info.description, new RegExp(`components\\.responses [^)]*\\b${name}\\b`), `${name} is named in the description`)
    t.match(doc.info.description, code)
  }
})
