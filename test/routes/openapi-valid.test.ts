// The live OpenAPI document is valid OpenAPI 3.1, as client generators and API gateways check it: against the
// specification's own JSON Schema (and every $ref resolving), every Schema Object against JSON Schema 2020-12, and
// what that schema lets through but generators choke on. For the demo, a legacy table keyed by text, and single sign-on.
import { Validator } from '@seriousme/openapi-schema-validator'
import Ajv2020 from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import t from 'tap'
import type { Config } from '../../src/config.js'
import type { Database } from '../../src/db/types.js'
import { build } from '../helpers/build.js'
import { narrowMaterials } from '../helpers/legacy-fixture.js'

type Json = Record<string, any>

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
/** OpenAPI: a header parameter of one of these names is ignored (the request's own media types and security say it). */
const IGNORED_HEADERS = ['accept', 'content-type', 'authorization']

/** Everything wrong with the document, one line each; empty when it is valid. */
async function problems (doc: Json): Promise<string[]> {
  const found: string[] = []
  const result = await new Validator().validate(doc)
  if (!result.valid) {
    const errors = typeof result.errors === 'string' ? [result.errors] : (result.errors ?? []).map((e) => `${e.instancePath}: ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`)
    found.push(...errors.map((e) => `OpenAPI 3.1 schema: ${e}`))
  }

  // The specification's schema leaves Schema Objects to the dialect (JSON Schema 2020-12): checked here, each where it sits.
  const ajv = addFormats.default(new Ajv2020.default({ strict: false }))
  const schemas: Array<[string, unknown]> = Object.entries(doc.components?.schemas ?? {}).map(([name, schema]) => [`components.schemas.${name}`, schema])
  for (const [name, response] of Object.entries<Json>(doc.components?.responses ?? {})) {
    for (const [type, media] of Object.entries<Json>(response.content ?? {})) schemas.push([`components.responses.${name} ${type}`, media.schema])
    for (const [header, value] of Object.entries<Json>(response.headers ?? {})) schemas.push([`components.responses.${name} header ${header}`, value.schema])
  }
  const ids = new Map<string, string>()
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1])
    for (const method of METHODS.filter((m) => m in item)) {
      const op = item[method] as Json
      const where = `${method.toUpperCase()} ${path}`
      const other = ids.get(op.operationId)
      if (other !== undefined) found.push(`${where}: operationId ${op.operationId} is also ${other}'s`)
      ids.set(op.operationId, where)
      for (const requirement of op.security ?? doc.security ?? []) {
        for (const scheme of Object.keys(requirement)) if (doc.components?.securitySchemes?.[scheme] === undefined) found.push(`${where}: security scheme ${scheme} is not in components.securitySchemes`)
      }
      const parameters = [...item.parameters ?? [], ...op.parameters ?? []] as Json[]
      for (const p of parameters) {
        schemas.push([`${where} parameter ${p.name}`, p.schema])
        if (p.in === 'header' && IGNORED_HEADERS.includes(String(p.name).toLowerCase())) found.push(`${where}: header parameter ${p.name}, which OpenAPI ignores`)
        if (p.in === 'path' && !templated.includes(p.name)) found.push(`${where}: path parameter ${p.name} is not in the path`)
        if ('example' in p && p.schema !== undefined && !ajv.validate(p.schema, p.example)) found.push(`${where}: parameter ${p.name}'s example ${JSON.stringify(p.example)} does not fit its schema`)
      }
      for (const name of templated) if (!parameters.some((p) => p.in === 'path' && p.name === name)) found.push(`${where}: {${name}} has no path parameter`)
      for (const [type, media] of Object.entries<Json>(op.requestBody?.content ?? {})) schemas.push([`${where} body ${type}`, media.schema])
      for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
        for (const [type, media] of Object.entries<Json>(response.content ?? {})) schemas.push([`${where} ${status} ${type}`, media.schema])
        for (const [name, header] of Object.entries<Json>(response.headers ?? {})) schemas.push([`${where} ${status} header ${name}`, header.schema])
      }
    }
  }
  for (const [where, schema] of schemas) {
    if (schema === undefined) continue
    if (!ajv.validateSchema(schema as object)) found.push(`${where}: not a JSON Schema 2020-12 schema: ${ajv.errorsText(ajv.errors)}`)
    // OpenAPI 3.0's nullable means nothing in 3.1 (a type list with "null" does): a 3.1 generator drops it silently
    const walk = (node: unknown, at: string): void => {
      if (node === null || typeof node !== 'object') return
      if (!Array.isArray(node) && 'nullable' in node && !at.endsWith('/properties')) found.push(`${where}${at}: nullable (OpenAPI 3.0) in a 3.1 schema`)
      for (const [key, value] of Object.entries(node)) walk(value, `${at}/${key}`)
    }
    walk(schema, '')
  }
  return found
}

async function createArticles (db: Database): Promise<void> {
  await db.execute({ text: 'CREATE TABLE "ArtStamm" ("ArtikelNr" VARCHAR(20) NOT NULL PRIMARY KEY, "Bez" VARCHAR(80) NOT NULL, "Geaendert" DATETIME)', params: [] })
}

const SSO = [
  { id: 'warehouse', issuer: 'https://login.example.com/realms/warehouse', audience: 'https://gateway.example.com/api', typeMap: { 'gateway-user': 'user' }, clientId: 'gateway-web', clientSecret: 'a-client-secret-of-forty-characters-0123', redirectUri: 'https://gateway.example.com/api/users/sso/warehouse/callback' },
  { id: 'tokens-only', issuer: 'https://login.example.com/realms/machines', audience: 'https://gateway.example.com/api', typeMap: { 'gateway-app': 'application' } }
] as unknown as Config['auth']['sso']

const SETUPS = [
  { name: 'the demo configuration', overrides: {} },
  { name: 'a legacy article table keyed by its text article number', overrides: { mapping: { materials: narrowMaterials('ArtStamm', { id: 'ArtikelNr', materialNumber: 'ArtikelNr', name: 'Bez', modifiedAt: 'Geaendert' }) } }, prepare: createArticles },
  { name: 'single sign-on providers configured (browser login and tokens only)', overrides: { auth: { sso: SSO } } }
]

for (const setup of SETUPS) {
  t.test(`the document is valid OpenAPI 3.1: ${setup.name}`, async (t) => {
    const { app } = await build(t, setup.overrides, setup.prepare)
    const res = await app.inject({ method: 'GET', url: '/api/openapi.json' })
    t.equal(res.statusCode, 200, 'the document is served')
    const doc = res.json() as Json
    t.equal(doc.openapi, '3.1.0')
    t.same(await problems(doc), [], 'no problem found')
  })
}

t.test('the checks find what they look for', async (t) => {
  const { app } = await build(t)
  const valid = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as Json
  const broken = (change: (doc: Json) => void): Json => { const doc = structuredClone(valid); change(doc); return doc }
  const byId = (doc: Json): Json => doc.paths['/api/materials/{id}'].get
  const cases: Array<[string, (doc: Json) => void, RegExp]> = [
    ['a path parameter not required', (doc) => { byId(doc).parameters.find((p: Json) => p.in === 'path').required = false }, /OpenAPI 3\.1 schema: .*required/],
    ['a $ref that does not resolve', (doc) => { byId(doc).responses['404'].content['application/json'].schema = { $ref: '#/components/schemas/Nothing' } }, /OpenAPI 3\.1 schema: .*Nothing/],
    ['a status that is no status', (doc) => { byId(doc).responses['2000'] = byId(doc).responses['200'] }, /OpenAPI 3\.1 schema: .*2000/],
    ['a duplicate operationId', (doc) => { byId(doc).operationId = 'listMaterials' }, /operationId listMaterials is also GET \/api\/materials's/],
    ['nullable', (doc) => { byId(doc).responses['200'].content['application/json'].schema.properties.name.nullable = true }, /200 application\/json\/properties\/name: nullable/],
    ['a schema that is none', (doc) => { byId(doc).parameters[0].schema.type = 'int' }, /parameter id: not a JSON Schema 2020-12 schema/],
    ['a header parameter OpenAPI ignores', (doc) => { byId(doc).parameters.push({ in: 'header', name: 'Authorization', schema: { type: 'string' } }) }, /header parameter Authorization/],
    ['a templated name without its parameter', (doc) => { byId(doc).parameters = byId(doc).parameters.filter((p: Json) => p.in !== 'path') }, /\{id\} has no path parameter/],
    ['a security scheme that is not there', (doc) => { byId(doc).security = [{ apiKey: [] }] }, /security scheme apiKey is not in components/],
    ['an example that does not fit', (doc) => { doc.paths['/api/materials'].get.parameters.find((p: Json) => p.name === 'name').example = 17 }, /parameter name's example 17/]
  ]
  for (const [what, change, expected] of cases) t.match((await problems(broken(change))).join('\n'), expected, what)
})
