// Conditional list GETs answered from the ETag cache must never hide a change, whoever made it.
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { sqlitePath } from '../../src/db/index.js'
import { build } from '../helpers/build.js'

t.test('a 304 never hides a change made behind the gateway\'s back', async (t) => {
  const ctx = await build(t)
  const { app, db } = ctx
  const headers = ctx.auth(ctx.adminToken)
  for (let i = 1; i <= 30; i++) {
    const res = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: `C-${i}`, name: `Part ${i}` } })
    t.equal(res.statusCode, 201)
  }
  const url = '/api/materials?limit=10&sort=materialNumber&count=true'
  const first = await app.inject({ method: 'GET', url, headers })
  t.equal(first.statusCode, 200)
  const etag = first.headers.etag as string
  t.match(etag, /^"[\w-]{27}"$/)
  t.equal(first.json().data.length, 10)
  t.equal(first.headers['content-type'], 'application/json; charset=utf-8')

  // an unchanged database: 304, and without running the page query
  let queries = 0
  const query = db.query.bind(db)
  db.query = async (stmt) => { queries++; return await query(stmt) }
  const again = await app.inject({ method: 'GET', url, headers: { ...headers, 'if-none-match': etag } })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')
  t.equal(again.headers.etag, etag)
  const sqlite = db.dialect === 'sqlite'
  if (sqlite) t.equal(queries, 0, 'answered from the cache: no query ran')

  // a second body of the same data has the same ETag (serverTime is not part of it)
  const same = await app.inject({ method: 'GET', url, headers })
  t.equal(same.headers.etag, etag)
  t.not(same.json().meta.serverTime, undefined)
  t.same(same.json().data, first.json().data)

  // the picking system renames a material directly, leaving the modified-time column alone
  const id = first.json().data[3].id as number
  const table = db.dialect === 'mssql' ? '[dbo].[materials]' : '"materials"'
  await db.execute({ text: `UPDATE ${table} SET name = @name WHERE id = @id`, params: [{ name: 'name', kind: 'string', value: 'Renamed behind the back' }, { name: 'id', kind: 'integer', value: id }] })
  const changed = await app.inject({ method: 'GET', url, headers: { ...headers, 'if-none-match': etag } })
  t.equal(changed.statusCode, 200, 'the outside write turns the conditional GET into a 200')
  t.equal(changed.json().data[3].name, 'Renamed behind the back')
  t.not(changed.headers.etag, etag)
  const etag2 = changed.headers.etag as string
  t.equal((await app.inject({ method: 'GET', url, headers: { ...headers, 'if-none-match': etag2 } })).statusCode, 304)

  if (sqlite) {
    // another process's connection (the picking system): PRAGMA data_version sees its commit
    const other = new BetterSqlite3(sqlitePath(ctx.config.database.url)!)
    t.teardown(() => other.close())
    other.prepare('UPDATE materials SET unit = ? WHERE id = ?').run('box', id)
    const outside = await app.inject({ method: 'GET', url, headers: { ...headers, 'if-none-match': etag2 } })
    t.equal(outside.statusCode, 200, 'a commit by another connection is seen')
    t.equal(outside.json().data[3].unit, 'box')
    const etag3 = outside.headers.etag as string
    t.equal((await app.inject({ method: 'GET', url, headers: { ...headers, 'if-none-match': etag3 } })).statusCode, 304)
    // a row outside the page appearing changes the total, so the page's ETag too
    other.prepare("INSERT INTO materials (material_number, name, created_at, modified_at) VALUES ('ZZ-1', 'late', '2026-01-01 00:00:00', '2026-01-01 00:00:00')").run()
    const grown = await app.inject({ method: 'GET', url, headers: { ...headers, 'if-none-match': etag3 } })
    t.equal(grown.statusCode, 200)
    t.equal(grown.json().meta.total, 31)
  }

  // a write through the gateway
  const etag4 = (await app.inject({ method: 'GET', url, headers })).headers.etag as string
  const upd = await app.inject({ method: 'POST', url: `/api/materials/${id}`, headers, payload: { description: 'through the API' } })
  t.equal(upd.statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url, headers: { ...headers, 'if-none-match': etag4 } })).statusCode, 200)

  // the ETag of a list still depends on its query: another page has another ETag
  const page2 = await app.inject({ method: 'GET', url: `${url}&offset=10`, headers })
  t.not(page2.headers.etag, etag4)
  t.equal((await app.inject({ method: 'GET', url: `${url}&offset=10`, headers: { ...headers, 'if-none-match': etag4 } })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: `${url}&offset=10`, headers: { ...headers, 'if-none-match': '*' } })).statusCode, 304)
})
