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
  // a page is kept from its second request on
  t.equal((await app.inject({ method: 'GET', url, headers })).headers.etag, etag)

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

t.test('a page answered from the cache (200) is exactly the page the query would return now', async (t) => {
  const ctx = await build(t)
  const { app, db } = ctx
  const headers = ctx.auth(ctx.adminToken)
  for (let i = 1; i <= 12; i++) {
    t.equal((await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: `P-${i}`, name: `Page part ${i}` } })).statusCode, 201)
  }
  const url = '/api/materials?limit=5&sort=materialNumber&count=true'
  const first = await app.inject({ method: 'GET', url, headers })
  t.equal(first.statusCode, 200)
  let queries = 0
  const query = db.query.bind(db)
  db.query = async (stmt) => { queries++; return await query(stmt) }
  // a page asked for once is not kept (a walk's pages are asked for once); the second request keeps it
  t.equal((await app.inject({ method: 'GET', url, headers })).headers.etag, first.headers.etag)
  const sqlite = db.dialect === 'sqlite'
  if (sqlite) t.ok(queries > 0, 'the second request ran the query')
  queries = 0
  // serverTime moves on (it counts in whole seconds): the clock two seconds later
  const realNow = Date.now
  Date.now = () => realNow() + 2000
  t.teardown(() => { Date.now = realNow })
  const cached = await app.inject({ method: 'GET', url, headers })
  Date.now = realNow
  if (sqlite) t.equal(queries, 0, 'a repeated page of unchanged data runs no query')
  t.equal(cached.statusCode, 200)
  t.equal(cached.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(cached.headers.etag, first.headers.etag)
  t.equal(cached.headers['x-total-count'], '12', 'X-Total-Count comes with a cached page')
  const a = first.json()
  const b = cached.json()
  t.same(b.data, a.data)
  t.same({ ...b.meta, serverTime: 0 }, { ...a.meta, serverTime: 0 }, 'the same meta (limit, total, next)')
  t.ok(Date.parse(b.meta.serverTime) > Date.parse(a.meta.serverTime), 'serverTime is the time of this request, not of the cached one')
  t.ok(Date.parse(b.meta.serverTime) <= Date.now() + 2000 - 1000, 'a second before the (shifted) clock')

  // the next page by its link, three times: the third comes from the cache and is the same
  const next = await app.inject({ method: 'GET', url: a.meta.next, headers })
  await app.inject({ method: 'GET', url: a.meta.next, headers })
  queries = 0
  const nextAgain = await app.inject({ method: 'GET', url: a.meta.next, headers })
  if (sqlite) t.equal(queries, 0, 'the third request of the next page runs no query')
  t.same(nextAgain.json().data, next.json().data)
  t.equal(nextAgain.json().data[0].materialNumber, 'P-3', 'the walk goes on where page one ended (P-1, P-10, P-11, P-12, P-2; then P-3)')

  // a change behind the gateway's back, modified time left alone: the next plain GET has it
  const id = a.data[2].id as number
  const table = db.dialect === 'mssql' ? '[dbo].[materials]' : '"materials"'
  await db.execute({ text: `UPDATE ${table} SET name = @name WHERE id = @id`, params: [{ name: 'name', kind: 'string', value: 'Changed directly' }, { name: 'id', kind: 'integer', value: id }] })
  const after = await app.inject({ method: 'GET', url, headers })
  t.equal(after.json().data[2].name, 'Changed directly', 'the cached page is not served after a write')
  t.not(after.headers.etag, first.headers.etag)

  if (sqlite) {
    const other = new BetterSqlite3(sqlitePath(ctx.config.database.url)!)
    t.teardown(() => other.close())
    other.prepare('UPDATE materials SET weight = ? WHERE id = ?').run(4.25, id)
    const outside = await app.inject({ method: 'GET', url, headers })
    t.equal(outside.json().data[2].weight, 4.25, 'a commit by another connection: the page is read again')
    other.prepare('DELETE FROM materials WHERE id = ?').run(id)
    const gone = await app.inject({ method: 'GET', url, headers })
    t.equal(gone.headers['x-total-count'], '11', 'and a row deleted by another connection is gone from the page and the total')
    t.notOk(gone.json().data.some((m: { id: number }) => m.id === id))
  }
})

t.test('the page cache is bounded by size, least recently used out first', async (t) => {
  const { ListPageCache } = await import('../../src/http.js')
  const cache = new ListPageCache(8000)
  const page = (n: number) => ({ etag: `"${n}"`, text: 'x'.repeat(900), at: 0 })
  // a page is kept from its second request on
  const keep = (url: string, p: ReturnType<typeof page>) => { cache.set(url, 'm1', p); cache.set(url, 'm1', p) }
  for (let i = 0; i < 10; i++) keep(`/p${i}`, page(i))
  t.ok(cache.held <= 8000, `held ${cache.held} of 8000`)
  t.equal(cache.get('/p0', 'm1'), undefined, 'the oldest went first')
  t.equal(cache.get('/p9', 'm1')?.etag, '"9"')
  t.equal(cache.get('/p9', 'm2'), undefined, 'another change mark: stale')
  t.equal(cache.get('/p9', 'm1'), undefined, 'and the stale entry is dropped')
  const before = cache.size
  keep('/big', { etag: '"big"', text: 'x'.repeat(1001), at: 0 })
  t.equal(cache.size, before, 'a page over an eighth of the budget is not kept')
  // a read keeps an entry: the least recently used goes instead
  const oldest = ['/p2', '/p3'].filter((u) => cache.get(u, 'm1') !== undefined)
  t.ok(oldest.length > 0)
  cache.get(oldest[0], 'm1')
  for (let i = 10; i < 14; i++) keep(`/p${i}`, page(i))
  t.not(cache.get(oldest[0], 'm1'), undefined, 'the page read recently is still there')
  t.ok(cache.held <= 8000)

  // the default: polled pages of 100 rows (about 40 KB) stay, a full sync's pages of 1,000 rows do not push them out
  const production = new ListPageCache()
  const poll = { etag: '"poll"', text: 'x'.repeat(40 * 1024), at: 0 }
  production.set('/api/materials?limit=100', 'm', poll)
  production.set('/api/materials?limit=100', 'm', poll)
  for (let i = 0; i < 20; i++) {
    const walk = { etag: `"${i}"`, text: 'x'.repeat(400 * 1024), at: 0 }
    production.set(`/api/materials?limit=1000&cursor=${i}`, 'm', walk)
    production.set(`/api/materials?limit=1000&cursor=${i}`, 'm', walk)
  }
  t.equal(production.size, 1, 'no walk page was kept')
  t.equal(production.get('/api/materials?limit=100', 'm')?.etag, '"poll"', 'the polled page is still there')
})

t.test('the page cache keeps a page from its second request on', async (t) => {
  const { ListPageCache } = await import('../../src/http.js')
  // room for eight pages of 200 characters (with their URLs of 2 to 6: 202 to 206 each)
  const cache = new ListPageCache(1700)
  const page = (n: number) => ({ etag: `"${n}"`, text: 'x'.repeat(200), at: 0 })
  // a walk: every page asked for once, none kept
  for (let i = 0; i < 4; i++) cache.set(`/walk${i}`, 'm1', page(i))
  t.equal(cache.size, 0, 'a page asked for once is not kept')
  t.equal(cache.held, 0)
  // a poll: the second request keeps it
  cache.set('/poll', 'm1', page(1))
  t.equal(cache.get('/poll', 'm1'), undefined)
  cache.set('/poll', 'm1', page(2))
  t.equal(cache.get('/poll', 'm1')?.etag, '"2"', 'kept from the second request on')
  // a change: the stale entry goes, and the page read again is kept at once (it is still polled)
  t.equal(cache.get('/poll', 'm2'), undefined)
  cache.set('/poll', 'm2', page(3))
  t.equal(cache.get('/poll', 'm2')?.etag, '"3"', 'a polled page is kept again at its first read after a change')
  // asked for again after more pages than the cache holds: it would have been pushed out, so it counts as once
  for (const u of ['/a', '/b', '/c', '/d', '/e', '/f', '/g', '/h', '/i']) cache.set(u, 'm2', page(4))
  t.equal(cache.size, 1, 'only the polled page is kept')
  cache.set('/a', 'm2', page(5))
  t.equal(cache.get('/a', 'm2'), undefined, 'nine pages later, /a counts as asked for once')
  cache.set('/i', 'm2', page(6))
  t.equal(cache.get('/i', 'm2')?.etag, '"6"', 'a page asked for again within the budget is kept')
  t.equal(cache.get('/poll', 'm2')?.etag, '"3"', 'and the polled page is still there')
  // a page over the size limit is never kept, however often it is asked for
  const big = { etag: '"big"', text: 'x'.repeat(300), at: 0 }
  for (let i = 0; i < 3; i++) cache.set('/big', 'm2', big)
  t.equal(cache.get('/big', 'm2'), undefined)
})

t.test('an answer to a credential is private and asked for again: no shared cache keeps it, no copy is reused unchecked', async (t) => {
  const ctx = await build(t)
  const { app } = ctx
  const headers = ctx.auth(ctx.adminToken)
  const created = await app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'CC-1', name: 'Cached' } })
  t.equal(created.headers['cache-control'], 'private, no-cache', 'a create')
  const id = created.json().id as number
  const station = (await app.inject({ method: 'POST', url: '/api/stations', headers, payload: { name: 'CC station' } })).json().id as number
  const user = await ctx.createUser('user')
  const mine = ctx.auth(user.accessToken)
  for (const [url, auth] of [['/api/materials?limit=5', headers], [`/api/materials/${id}`, headers], ['/api/stations', headers], [`/api/stations/${station}`, headers],
    ['/api/users', headers], [`/api/users/${user.id}`, mine]] as const) {
    // twice: the second page of a list may come from the page cache
    for (let i = 0; i < 2; i++) {
      const res = await app.inject({ method: 'GET', url, headers: auth })
      t.equal(res.statusCode, 200, url)
      t.equal(res.headers['cache-control'], 'private, no-cache', `GET ${url}`)
      const again = await app.inject({ method: 'GET', url, headers: { ...auth, 'if-none-match': res.headers.etag as string } })
      t.equal(again.statusCode, 304, url)
      t.equal(again.headers['cache-control'], 'private, no-cache', `a 304 of GET ${url} says so too`)
    }
  }
  t.equal((await app.inject({ method: 'PATCH', url: `/api/materials/${id}`, headers, payload: { name: 'Cached 2' } })).headers['cache-control'], 'private, no-cache', 'an update')
  // token answers keep their no-store
  const login = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username: user.username, password: user.password } })
  t.equal(login.headers['cache-control'], 'no-store')
  t.equal((await app.inject({ method: 'POST', url: '/api/users/refresh', headers: ctx.auth(login.json().refreshToken) })).headers['cache-control'], 'no-store')
})
