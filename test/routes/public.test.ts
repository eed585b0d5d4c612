import t from 'tap'
import { build } from '../helpers/build.js'

t.test('OpenAPI document and docs page are public and describe the API', async (t) => {
  const { app } = await build(t)
  const doc = await app.inject({ method: 'GET', url: '/api/openapi.json' })
  t.equal(doc.statusCode, 200)
  const spec = doc.json()
  t.equal(spec.openapi, '3.1.0')
  for (const path of ['/api/users/login', '/api/users/refresh', '/api/users/application-token', '/api/users/{id}', '/api/materials/', '/api/materials/{id}', '/api/stations/{id}/commands', '/api/events/']) {
    t.ok(spec.paths[path] ?? spec.paths[path.replace(/\/$/, '')], `documents ${path}`)
  }
  const login = spec.paths['/api/users/login'].post
  t.same(login.security, [], 'login needs no token')
  t.ok(login.requestBody.content['application/json'].schema.properties.password)
  const user = spec.paths['/api/users/{id}'].get.responses['200'].content['application/json'].schema
  t.notOk(user.properties.passwordHash, 'the hash is not part of any response schema')
  const page = await app.inject({ method: 'GET', url: '/api/docs/' })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /text\/html/)
  // a gateway served in plain HTTP on the network: a page that asks the browser to load its scripts over https stays blank there
  for (const url of ['/api/docs', '/api/docs/', '/api/docs/static/index.html', '/api/docs/static/swagger-ui-bundle.js']) {
    const csp = (await app.inject({ method: 'GET', url })).headers['content-security-policy'] as string
    t.match(csp, /script-src 'self'/, `${url} keeps its policy`)
    t.notMatch(csp, /upgrade-insecure-requests/, `${url} loads over the scheme it is served with`)
  }
})

t.test('a 500 carries no SQL, stack or internal names', async (t) => {
  const ctx = await build(t)
  const res = await ctx.app.inject({ method: 'GET', url: '/api/materials?limit=1', headers: { ...ctx.auth(ctx.adminToken) } })
  t.equal(res.statusCode, 200)
  // Break the query under the app: the driver's message names the table and its SQL.
  await ctx.db.execute({
    text: ctx.db.dialect === 'mssql'
      ? "EXEC sp_rename 'dbo.materials.material_number', 'mat_no_gone', 'COLUMN'"
      : 'ALTER TABLE "materials" RENAME COLUMN "material_number" TO "mat_no_gone"',
    params: []
  })
  // a column gone is a 503 (the mapping no longer fits), whose answer names no column either
  const gone = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(ctx.adminToken) })
  t.equal(gone.statusCode, 503)
  t.equal(gone.json().code, 'SCHEMA_MISMATCH')
  t.notMatch(gone.body, /material_number|mat_no_gone|SELECT|SQLITE|materials"|Invalid column|at .*\.ts/i)
  // an error nothing expects: a trigger calling a function (SQL Server: a procedure) the database does not have
  const mssql = ctx.db.dialect === 'mssql'
  await ctx.db.execute({ text: mssql ? "EXEC sp_rename 'dbo.materials.mat_no_gone', 'material_number', 'COLUMN'" : 'ALTER TABLE "materials" RENAME COLUMN "mat_no_gone" TO "material_number"', params: [] })
  await ctx.db.execute({
    text: mssql
      ? 'CREATE TRIGGER [materials_broken] ON [dbo].[materials] AFTER UPDATE AS EXEC [dbo].[no_such_function]'
      : 'CREATE TRIGGER "materials_broken" BEFORE UPDATE ON "materials" BEGIN SELECT no_such_function(NEW."material_number"); END',
    params: []
  })
  const id = (await ctx.app.inject({ method: 'POST', url: '/api/materials', headers: ctx.auth(ctx.adminToken), payload: { materialNumber: 'B-1', name: 'broken' } })).json().id as number
  const broken = await ctx.app.inject({ method: 'POST', url: `/api/materials/${id}`, headers: ctx.auth(ctx.adminToken), payload: { name: 'x' } })
  t.equal(broken.statusCode, 500)
  t.same(Object.keys(broken.json()).sort(), ['code', 'error', 'message', 'statusCode'])
  t.equal(broken.json().code, 'INTERNAL_ERROR')
  t.match(broken.json().message, /request id req-/)
  t.notMatch(broken.body, /material_number|no_such_function|UPDATE|SQLITE|materials"|at .*\.ts/i)
})
