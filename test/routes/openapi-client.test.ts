// The live OpenAPI document generates a working typed client: openapi-typescript types, type-checked, then called through openapi-fetch.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import openapiTS, { astToString } from 'openapi-typescript'
import t from 'tap'
import ts from 'typescript'
import { packageRoot } from '../../src/config.js'
import { build } from '../helpers/build.js'

const OPERATORS = ['[gt]', '[gte]', '[lt]', '[lte]', '[not]', '[like]', '[notlike]', '[or]', '[nor]', '[null]', '[notnull]']

// A client as an integrator would write it against the generated types.
const CLIENT = `import createClient from 'openapi-fetch'
import type { paths } from './api.js'

export async function run (baseUrl: string, token: string) {
  const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${token}\` } })
  const valve = await client.POST('/api/materials', { body: { materialNumber: 'M-100', name: 'Valve', minStock: 2 } })
  const pump = await client.POST('/api/materials', { body: { materialNumber: 'M-200', name: 'Pump', blocked: true } })
  if (valve.data === undefined || pump.data === undefined) throw new Error('create failed')
  const id: number = valve.data.id
  const updated = await client.POST('/api/materials/{id}', { params: { path: { id } }, body: { name: 'Ball valve', maxStock: 40 } })
  const read = await client.GET('/api/materials/{id}', { params: { path: { id } } })
  const all = await client.GET('/api/materials', { params: { query: { limit: 10, offset: 0, count: true, sort: '-materialNumber' } } })
  const filtered = await client.GET('/api/materials', { params: { query: { name: '[like]valve', blocked: 'false', materialNumber: '[or]M-100;M-300' } } })
  const range = await client.GET('/api/materials', { params: { query: { materialNumber: ['[gte]M-100', '[lt]M-200'] } } })
  const bad = await client.GET('/api/materials', { params: { query: { limit: 5000 } } })
  const name: string = updated.data?.name ?? ''
  return {
    created: valve.data,
    createdStatus: valve.response.status,
    updated: updated.data,
    name,
    read: read.data,
    all: all.data,
    total: all.response.headers.get('x-total-count'),
    filtered: filtered.data,
    range: range.data,
    bad: { status: bad.response.status, error: bad.error }
  }
}
`

// Lines 5 to 9 must each fail to compile: a misspelt body field, a filter on no field, a limit as text,
// a read-only field in an update body, a misspelt response field.
const WRONG = `import createClient from 'openapi-fetch'
import type { paths } from './api.js'

const client = createClient<paths>({ baseUrl: 'http://localhost' })
export const a = client.POST('/api/materials', { body: { materialNumbr: 'M-1', name: 'x' } })
export const b = client.GET('/api/materials', { params: { query: { nmae: '[like]x' } } })
export const c = client.GET('/api/materials', { params: { query: { limit: '10' } } })
export const d: paths['/api/materials/{id}']['post']['requestBody']['content']['application/json'] = { name: 'x', stockQuantity: 3 }
export const e = async () => (await client.GET('/api/materials/{id}', { params: { path: { id: 1 } } })).data?.materialNumbr
`

t.test('the document describes a client: no trailing slashes, typed list parameters, filters, operationIds, security', async (t) => {
  const { app } = await build(t)
  const spec = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const paths = Object.keys(spec.paths)
  t.same(paths.filter((path) => path.length > 1 && path.endsWith('/')), [], 'no path ends in /')
  t.ok(spec.paths['/api/materials'] && spec.paths['/api/events'], 'collections without the slash')

  const ids: string[] = []
  for (const [path, item] of Object.entries<Record<string, any>>(spec.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      t.type(op.operationId, 'string', `${method} ${path} has an operationId`)
      ids.push(op.operationId)
      const open = path.startsWith('/health') || path === '/api/users/login' || path.startsWith('/api/users/sso/')
      if (open) t.same(op.security, [], `${method} ${path} is public`)
      else t.ok(op.security.some((s: object) => 'bearer' in s), `${method} ${path} needs the bearer token`)
    }
  }
  t.equal(new Set(ids).size, ids.length, 'operationIds are unique')
  // a shared schema by its own name: a generated client called the error body's type Def0
  t.same(Object.keys(spec.components.schemas ?? {}), ['ErrorResponse'], 'the error body is components.schemas.ErrorResponse')
  t.match(JSON.stringify(spec.paths['/health/ready'].get.responses['503']), '"$ref":"#/components/schemas/ErrorResponse"', 'readiness\'s 503 refers to it by that name')
  const op = (path: string, method: string) => spec.paths[path][method].operationId
  t.same([op('/api/materials', 'get'), op('/api/materials', 'post'), op('/api/materials/{id}', 'get'), op('/api/materials/{id}', 'post'), op('/api/materials/{id}', 'delete')],
    ['listMaterials', 'createMaterial', 'getMaterial', 'updateMaterial', 'deleteMaterial'])
  t.equal(op('/api/stations', 'get'), 'listStations')
  t.same([op('/api/users', 'get'), op('/api/users', 'post'), op('/api/users/{id}', 'get'), op('/api/users/{id}', 'post'), op('/api/users/{id}', 'patch'), op('/api/users/{id}', 'delete')],
    ['listUsers', 'createUser', 'getUser', 'updateUser', 'patchUser', 'deleteUser'], 'users named as materials are')
  t.same([op('/api/users/login', 'post'), op('/api/users/refresh', 'post'), op('/api/users/refresh', 'get'), op('/api/users/application-token', 'post'), op('/api/stations/{id}/commands', 'post'), op('/api/users/sso/{id}/login', 'get'), op('/api/users/sso/{id}/callback', 'get')],
    ['login', 'refreshToken', 'refreshTokenByGet', 'createApplicationToken', 'sendStationCommand', 'startBrowserLogin', 'finishBrowserLogin'])
  t.same(spec.paths['/api/events'].get.security, [{ bearer: [] }, { identityProvider: [] }, { eventTicket: [] }])
  t.match(spec.components.securitySchemes, { bearer: { type: 'http', scheme: 'bearer' }, identityProvider: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, eventTicket: { type: 'apiKey', in: 'query', name: 'ticket' } })
  t.same(spec.paths['/api/materials'].get.security, [{ bearer: [] }, { identityProvider: [] }], 'access routes take either kind of token')
  t.same(spec.paths['/api/users/refresh'].post.security, [{ bearer: [] }], 'refresh takes only the gateway\'s own')
  t.same(spec.paths['/api/users/application-token'].post.security, [{ bearer: [] }])
  t.ok(spec.paths['/api/users/sso/{id}/login'].get.responses['302'], 'the browser login redirects')
  t.ok(spec.paths['/api/users/sso/{id}/callback'].get.responses['200'], 'and its callback answers like a login')

  const list = spec.paths['/api/materials'].get
  const param = (name: string) => list.parameters.find((p: any) => p.name === name && p.in === 'query')
  t.match(param('limit').schema, { type: 'integer', minimum: 1, maximum: 1000 })
  t.match(param('offset').schema, { type: 'integer', minimum: 0 })
  t.match(param('count').schema, { type: 'boolean' })
  const fields = ['id', 'materialNumber', 'name', 'description', 'unit', 'barcode', 'minStock', 'maxStock', 'weight', 'blocked', 'blockReason', 'stockQuantity', 'createdAt', 'modifiedAt']
  for (const field of fields) {
    const p = param(field)
    t.ok(p, `filter ${field} documented`)
    t.same([p.required, p.schema.anyOf, typeof p.example], [false, [{ type: 'string' }, { type: 'array', items: { type: 'string' } }], 'string'],
      `filter ${field}: optional text with an example, or several to AND (the parameter repeated)`)
    for (const operator of OPERATORS) t.ok(p.description.includes(operator), `filter ${field} names ${operator}`)
  }
  t.same(list.parameters.filter((p: any) => p.description?.startsWith('Filter on')).map((p: any) => p.name), fields, 'exactly the stored fields')
  t.ok(spec.paths['/api/stations'].get.parameters.some((p: any) => p.name === 'controllerId'), 'stations: their own fields')
  t.match(spec.paths['/api/stations'].get.parameters.find((p: any) => p.name === 'type'), { example: '[or]vlm;carousel' })
  // the filters the lists take on fields no column holds: a generated client offers them too
  const stationParam = (name: string) => spec.paths['/api/stations'].get.parameters.find((p: any) => p.name === name && p.in === 'query')
  for (const field of ['connected', 'status', 'lastSeenAt']) t.ok(stationParam(field)?.description?.startsWith(`Filter on ${field}`), `stations: live filter ${field} documented`)
  t.match(stationParam('status'), { example: '[or]offline;idle', description: /offline, idle, busy, error, disabled/ })
  t.notOk(stationParam('status').description.includes('[like]'), 'live fields take no [like]')
  t.match(spec.paths['/api/users'].get.parameters.find((p: any) => p.name === 'source' && p.in === 'query'), { schema: { enum: ['sso', 'local'] } }, 'users: source documented')
  t.ok(list.responses['304'] && spec.paths['/api/materials/{id}'].get.responses['304'], '304 documented')
  t.ok(['400', '401', '503'].every((code) => list.responses[code]), '4xx and 503 documented')
})

t.test('run time: both URLs of a collection answer; a bad limit still names the parameter', async (t) => {
  const ctx = await build(t)
  for (const url of ['/api/materials', '/api/materials/']) {
    t.equal((await ctx.app.inject({ method: 'GET', url, headers: ctx.auth(ctx.adminToken) })).statusCode, 200, url)
  }
  for (const url of ['/api/materials?limit=abc', '/api/materials?limit=1001', '/api/materials?count=yes']) {
    const res = await ctx.app.inject({ method: 'GET', url, headers: ctx.auth(ctx.adminToken) })
    t.equal(res.statusCode, 400, url)
    t.equal(res.json().code, 'BAD_QUERY')
    t.match(res.json().message, /'(limit|count)'/)
  }
})

t.test('openapi-typescript types from the live document compile a client, refuse a wrong one, and openapi-fetch runs it', async (t) => {
  // the compiler below blocks the event loop in this process: no overload answers because of it
  const ctx = await build(t, { server: { maxEventLoopDelayMs: 0 } })
  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`
  const spec = await (await fetch(`${baseUrl}/api/openapi.json`)).json() as Parameters<typeof openapiTS>[0]

  // Under node_modules so that both the compiler and Node resolve 'openapi-fetch'; outside tsconfig's includes.
  const cache = join(packageRoot, 'node_modules', '.cache')
  mkdirSync(cache, { recursive: true })
  const dir = mkdtempSync(join(cache, 'openapi-client-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'api.d.ts'), astToString(await openapiTS(spec)))
  writeFileSync(join(dir, 'client.mts'), CLIENT)
  writeFileSync(join(dir, 'wrong.mts'), WRONG)

  // The client, run: create, update, read, list and filter through openapi-fetch.
  const compiled = ts.transpileModule(CLIENT, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText
  writeFileSync(join(dir, 'client.mjs'), compiled)
  const client = await import(pathToFileURL(join(dir, 'client.mjs')).href) as { run: (baseUrl: string, token: string) => Promise<Record<string, any>> }
  const result = await client.run(baseUrl, ctx.adminToken)

  // Then compiled: the compiler holds the event loop for seconds, so after the requests.
  const program = ts.createProgram([join(dir, 'client.mts'), join(dir, 'wrong.mts')], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
    types: [],
    skipLibCheck: true
  })
  const problems = (file: string) => ts.getPreEmitDiagnostics(program, program.getSourceFile(join(dir, file)))
    .map((d) => ({ line: d.file!.getLineAndCharacterOfPosition(d.start!).line + 1, text: ts.flattenDiagnosticMessageText(d.messageText, '\n') }))
  t.same(problems('client.mts'), [], 'the client compiles against the generated types')
  const wrong = problems('wrong.mts')
  t.same([...new Set(wrong.map((d) => d.line))], [5, 6, 7, 8, 9], 'every wrong line fails to compile')
  const on = (line: number) => wrong.filter((d) => d.line === line).map((d) => d.text).join('\n')
  t.match(on(5), /materialNumbr/)
  t.match(on(6), /nmae/)
  t.match(on(7), /'string' is not assignable to type 'number'/)
  t.match(on(8), /stockQuantity/, 'read-only fields are not in the update body')
  t.match(on(9), /materialNumbr/)

  // What the run returned.
  t.equal(result.createdStatus, 201)
  t.match(result.created, { id: Number, materialNumber: 'M-100', name: 'Valve', unit: 'pcs', minStock: 2, blocked: false })
  t.match(result.updated, { id: result.created.id, materialNumber: 'M-100', name: 'Ball valve', minStock: 2, maxStock: 40 })
  t.equal(result.name, 'Ball valve')
  t.same(result.read, result.updated)
  t.same(result.all.data.map((m: any) => m.materialNumber), ['M-200', 'M-100'], 'sorted as asked')
  t.match(result.all.meta, { limit: 10, offset: 0, total: 2 })
  t.equal(result.total, '2', 'count=true sent as a boolean adds X-Total-Count')
  t.same(result.filtered.data.map((m: any) => m.materialNumber), ['M-100'], 'filters sent as query parameters')
  t.same(result.range.data.map((m: any) => m.materialNumber), ['M-100'], 'two conditions on one field, sent as the parameter repeated, both apply')
  t.match(result.bad, { status: 400, error: { code: 'BAD_QUERY', message: /'limit'/ } })
})
