// Path ids are decimal digits only: every other numeral JavaScript would read is a 400 naming the parameter.
import t from 'tap'
import { build } from '../helpers/build.js'

/** the path segment as sent, and the text the route sees after decoding */
const FORMS: Array<[string, string]> = [
  ['0x10', '0x10'],
  ['1e1', '1e1'],
  ['+16', '+16'],
  ['16.0', '16.0'],
  ['%2016', ' 16'],
  ['16%20', '16 '],
  ['016', '016'],
  ['0', '0'],
  ['-1', '-1'],
  ['0b10000', '0b10000'],
  ['1_6', '1_6'],
  ['abc', 'abc']
]

t.test('path ids: decimal digits only, on every route that takes one', async (t) => {
  const ctx = await build(t)
  const { app } = ctx
  const admin = ctx.auth(ctx.adminToken)
  for (let i = 1; i <= 16; i++) {
    t.equal((await app.inject({ method: 'POST', url: '/api/materials', headers: admin, payload: { materialNumber: `M-${i}`, name: `Material ${i}` } })).statusCode, 201)
    t.equal((await app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload: { name: `Station ${i}` } })).statusCode, 201)
    if (i > 1) t.equal((await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { username: `admin-${i}`, password: 'long-enough', type: 'admin' } })).statusCode, 201)
  }
  const snapshot = async (): Promise<string[]> => Promise.all(['materials', 'stations', 'users'].map(async (resource) =>
    (await app.inject({ method: 'GET', url: `/api/${resource}?sort=id&count=true`, headers: admin })).json().data.map((row: { modifiedAt: string }) => row.modifiedAt).join()))
  const before = await snapshot()

  const updates: Record<string, object> = { materials: { name: 'changed' }, stations: { name: 'changed' }, users: { displayName: 'changed' } }
  for (const resource of ['materials', 'stations', 'users']) {
    for (const [segment, seen] of FORMS) {
      for (const method of ['GET', 'POST', 'PATCH', 'DELETE'] as const) {
        const res = await app.inject({ method, url: `/api/${resource}/${segment}`, headers: admin, ...(method === 'POST' || method === 'PATCH' ? { payload: updates[resource] } : {}) })
        t.equal(res.statusCode, 400, `${method} /api/${resource}/${segment}`)
        t.same(res.json(), {
          statusCode: 400,
          code: 'VALIDATION_ERROR',
          error: 'Bad Request',
          message: `params/id must be decimal digits without sign, spaces or leading zero (1 to 2147483647), got '${seen}'`
        }, `${method} /api/${resource}/${segment}`)
      }
    }
    const tooLarge = await app.inject({ method: 'GET', url: `/api/${resource}/2147483648`, headers: admin })
    t.same(tooLarge.json(), { statusCode: 400, code: 'VALIDATION_ERROR', error: 'Bad Request', message: 'params/id must be <= 2147483647' })
    const plain = await app.inject({ method: 'GET', url: `/api/${resource}/16`, headers: admin })
    t.equal(plain.statusCode, 200, `GET /api/${resource}/16 still works`)
    t.equal(plain.json().id, 16)
  }
  const command = await app.inject({ method: 'POST', url: '/api/stations/1e1/commands', headers: admin, payload: { command: 'clear' } })
  t.equal(command.statusCode, 400)
  t.match(command.json(), { code: 'VALIDATION_ERROR', message: /^params\/id must be decimal digits/ })

  t.same(await snapshot(), before, 'nothing was read as 10 or 16 and changed or deleted')
  t.equal((await app.inject({ method: 'GET', url: '/api/materials/10', headers: admin })).json().name, 'Material 10', 'DELETE /api/materials/1e1 did not delete material 10')
})
