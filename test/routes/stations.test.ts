import t from 'tap'
import { build } from '../helpers/build.js'

t.test('stations: admins write, everyone reads, live fields are read-only', async (t) => {
  const ctx = await build(t)
  const { app, auth } = ctx
  const admin = auth(ctx.adminToken)
  const user = await ctx.createUser('user')
  const erp = await ctx.createUser('application')

  for (const [method, url] of [['GET', '/api/stations'], ['POST', '/api/stations'], ['GET', '/api/stations/1'], ['POST', '/api/stations/1'], ['DELETE', '/api/stations/1']]) {
    t.equal((await app.inject({ method: method as 'GET', url })).statusCode, 401, `${method} ${url} needs a token`)
  }

  const payload = { name: 'PTL-Z1', type: 'ptl', warehouse: 'WH9', controllerId: 'ctl-9', address: 4 }
  const forbidden = await app.inject({ method: 'POST', url: '/api/stations', headers: auth(user.accessToken), payload })
  t.equal(forbidden.statusCode, 403)
  t.equal(forbidden.json().code, 'FORBIDDEN')
  t.equal((await app.inject({ method: 'POST', url: '/api/stations', headers: auth(erp.accessToken), payload })).statusCode, 403)

  const created = await app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload })
  t.equal(created.statusCode, 201)
  const s = created.json()
  t.equal(created.headers.location, `/api/stations/${s.id}`)
  t.match(s, { ...payload, enabled: true, description: null, connected: false, status: 'offline', lastSeenAt: null })

  const minimal = await app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'Bench 1' } })
  t.match(minimal.json(), { name: 'Bench 1', type: 'manual', enabled: true, controllerId: null, address: null })

  const read = await app.inject({ method: 'GET', url: `/api/stations/${s.id}`, headers: auth(user.accessToken) })
  t.equal(read.statusCode, 200)
  t.same(read.json(), s)
  const list = await app.inject({ method: 'GET', url: '/api/stations?type=ptl', headers: auth(erp.accessToken) })
  t.same(list.json().data.map((x: { name: string }) => x.name), ['PTL-Z1'])

  const disabled = await app.inject({ method: 'POST', url: `/api/stations/${s.id}`, headers: admin, payload: { enabled: false } })
  t.equal(disabled.statusCode, 200)
  t.match(disabled.json(), { enabled: false, status: 'disabled', connected: false })

  const cases: Array<[object, RegExp]> = [
    [{ name: 'X', type: 'robot' }, /body\/type/],
    [{ name: 'X', connected: true }, /connected is read-only/],
    [{ name: 'X', status: 'idle' }, /status is read-only/],
    [{ name: 'X', address: '3' }, /body\/address/],
    [{ name: 'X', address: 1.5 }, /body\/address/],
    [{ type: 'vlm' }, /required field 'name'/]
  ]
  for (const [body, message] of cases) {
    const res = await app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: body })
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.match(res.json().message, message)
  }
  const dup = await app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: 'PTL-Z1' } })
  t.equal(dup.statusCode, 409)
  t.match(dup.json().message, /name/)

  t.equal((await app.inject({ method: 'DELETE', url: `/api/stations/${s.id}`, headers: auth(user.accessToken) })).statusCode, 403)
  t.equal((await app.inject({ method: 'DELETE', url: `/api/stations/${s.id}`, headers: admin })).statusCode, 204)
  t.equal((await app.inject({ method: 'GET', url: `/api/stations/${s.id}`, headers: admin })).statusCode, 404)
  t.equal((await app.inject({ method: 'GET', url: '/api/stations?count=true', headers: admin })).json().meta.total, 1)
})
