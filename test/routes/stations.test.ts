import t from 'tap'
import { startSimulator } from '../../src/hardware/index.js'
import { LIVE_LIST_CAP } from '../../src/live-list.js'
import { build } from '../helpers/build.js'
import { until } from '../helpers/wait.js'

const FAST = { ackTimeout: 150, heartbeatIdle: 200, deadAfter: 600, backoffInitial: 20, backoffMax: 100, stableAfter: 1000, connectTimeout: 500 }

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
  t.equal(created.headers.etag, read.headers.etag, 'the create answers with the ETag a read gives')
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
    [{ type: 'vlm' }, /required field 'name'/],
    [{ name: '   ' }, /^body\/name must hold a character other than spaces, and no control or invisible characters \(zero-width spaces, direction marks\) nor spaces other than U\+0020$/],
    // before: a second station that looks like PTL-01 in every list
    [{ name: 'PTL-01\u200b' }, /^body\/name must hold a character other than spaces, and no control or invisible characters/],
    [{ name: 'PTL\t01' }, /^body\/name must hold a character other than spaces, and no control or invisible characters/],
    // beyond the BMP (a tag character), or a space that looks like U+0020 (before: 201, a second PTL-01 or PTL 01)
    [{ name: 'PTL-01\u{e0001}' }, /^body\/name must hold .* nor spaces other than U\+0020, got U\+E0001$/],
    [{ name: 'PTL\u00a001' }, /^body\/name must hold .* nor spaces other than U\+0020, got U\+00A0$/],
    [{ name: 'X', controllerId: '' }, /^body\/controllerId must hold a character other than spaces$/]
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

t.test('stations: the live fields filter and sort like any other, paged in memory', async (t) => {
  // confirmations never come during the test: a lit position keeps its station busy
  const sim = await startSimulator({ host: '127.0.0.1', controllers: [{ id: 'ctl-1', port: 0 }], timings: { confirmDelay: 600000, trayDelay: 600000 } })
  t.teardown(() => sim.close())
  const before = new Date(Date.now() - 1).toISOString()
  const ctx = await build(t, { hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port: sim.controllers.get('ctl-1')!.port }], timings: FAST } })
  const { app } = ctx
  const admin = ctx.auth(ctx.adminToken)
  const ids: Record<string, number> = {}
  for (const payload of [
    { name: 'PTL-1', type: 'ptl', controllerId: 'ctl-1', address: 1 },
    { name: 'PTL-2', type: 'ptl', controllerId: 'ctl-1', address: 2 },
    { name: 'PTL-3', type: 'ptl', controllerId: 'ctl-1', address: 3 },
    { name: 'Bench-1' },
    { name: 'Bench-2', enabled: false },
    { name: 'VLM-1', type: 'vlm', controllerId: 'ctl-9', address: 1 }
  ]) {
    const res = await app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload })
    ids[payload.name] = res.json().id
  }
  const get = (url: string) => app.inject({ method: 'GET', url, headers: admin })
  await until(async () => (await get(`/api/stations/${ids['PTL-1']}`)).json().connected === true, 'controller connected')
  const idle = await get(`/api/stations/${ids['PTL-2']}`)
  t.equal(idle.json().status, 'idle')
  t.match(idle.headers.etag, /^"[\w-]{27}\.[\w-]{8}"$/, 'a station\'s ETag: its stored fields\' tag, then its live state\'s')
  const lit = await app.inject({ method: 'POST', url: `/api/stations/${ids['PTL-2']}/commands`, headers: admin, payload: { command: 'light', quantity: 1 } })
  t.equal(lit.statusCode, 200)
  const busy = await app.inject({ method: 'GET', url: `/api/stations/${ids['PTL-2']}`, headers: { ...admin, 'if-none-match': idle.headers.etag as string } })
  t.equal(busy.statusCode, 200, 'the status moved on: the idle ETag is not the current representation')
  t.equal(busy.json().status, 'busy')
  t.not(busy.headers.etag, idle.headers.etag)
  const edit = (etag: string, description: string) => app.inject({ method: 'PATCH', url: `/api/stations/${ids['PTL-2']}`, headers: { ...admin, 'if-match': etag }, payload: { description } })
  const edited = await edit(idle.headers.etag as string, 'left rack')
  t.equal(edited.statusCode, 200, 'but an update with it works: nothing stored changed (before: 412 while the station was busy)')
  t.equal((await edit(idle.headers.etag as string, 'right rack')).statusCode, 412, 'once the description changed, it is stale')
  t.equal((await edit(`W/${edited.headers.etag as string}`, 'back')).statusCode, 200, 'the update\'s own tag, weak as a proxy may make it')
  const names = async (query: string): Promise<string[]> => {
    const res = await get(`/api/stations?${query}`)
    t.equal(res.statusCode, 200, `${query}: ${res.body}`)
    return res.json().data.map((s: { name: string }) => s.name)
  }

  t.same(await names('status=[or]idle;busy&sort=name'), ['PTL-1', 'PTL-2', 'PTL-3'])
  t.same(await names('status=[OR]busy'), ['PTL-2'], 'operators are case-insensitive')
  t.same(await names('status=[not]idle&sort=name'), ['Bench-1', 'Bench-2', 'PTL-2', 'VLM-1'])
  t.same(await names('status=[nor]idle;offline'), ['PTL-2', 'Bench-2'], 'by id without a sort')
  t.same(await names('connected=false&sort=-name'), ['VLM-1', 'Bench-2', 'Bench-1'])
  t.same(await names('connected=true&type=ptl&name=[not]PTL-3'), ['PTL-1', 'PTL-2'], 'live and stored filters together')
  t.same(await names('lastSeenAt=[null]&sort=name'), ['Bench-1', 'Bench-2', 'VLM-1'])
  t.same(await names('lastSeenAt=[notnull]&sort=name'), ['PTL-1', 'PTL-2', 'PTL-3'])
  t.same(await names(`lastSeenAt=[gte]${before}&sort=name`), ['PTL-1', 'PTL-2', 'PTL-3'])
  t.same(await names(`lastSeenAt=[lt]${before}`), [])
  t.same(await names('sort=-lastSeenAt,name'), ['PTL-1', 'PTL-2', 'PTL-3', 'Bench-1', 'Bench-2', 'VLM-1'], 'descending: no time (null) last')
  t.same(await names('sort=lastSeenAt,-name'), ['VLM-1', 'Bench-2', 'Bench-1', 'PTL-3', 'PTL-2', 'PTL-1'], 'ascending: null first')
  t.same(await names('sort=status,-name'), ['PTL-2', 'Bench-2', 'PTL-3', 'PTL-1', 'VLM-1', 'Bench-1'], 'busy, disabled, idle, offline')

  const counted = await get('/api/stations?status=offline&count=true&limit=1&sort=name')
  t.same(counted.json().data.map((s: { name: string }) => s.name), ['Bench-1'])
  t.equal(counted.json().meta.total, 2, 'counted after the live filter')
  t.equal(counted.headers['x-total-count'], '2')
  t.match(counted.json().meta.next, /^\/api\/stations\?status=offline&count=true&limit=1&sort=name&cursor=[\w-]+$/)
  const second = await get(counted.json().meta.next)
  t.same(second.json().data.map((s: { name: string }) => s.name), ['VLM-1'])
  t.notOk('next' in second.json().meta, 'the last page has no next')

  // meta.next walks every station exactly once, in the order of one big page
  const all = await names('sort=status,-lastSeenAt&limit=100')
  const walked: string[] = []
  let url: string | undefined = '/api/stations?sort=status,-lastSeenAt&limit=2'
  while (url !== undefined) {
    const res = await get(url)
    t.equal(res.statusCode, 200)
    walked.push(...res.json().data.map((s: { name: string }) => s.name))
    url = res.json().meta.next
  }
  t.same(walked, all)
  const offset = await get('/api/stations?sort=status,-name&limit=2&offset=2')
  t.same(offset.json().data.map((s: { name: string }) => s.name), ['PTL-3', 'PTL-1'])
  t.equal(offset.json().meta.offset, 2)
  t.notMatch(offset.json().meta.next, /offset/, 'the next page goes by cursor')
  t.same((await get(offset.json().meta.next)).json().data.map((s: { name: string }) => s.name), ['VLM-1', 'Bench-1'])

  const list = await get('/api/stations?status=busy')
  const cached = await app.inject({ method: 'GET', url: '/api/stations?status=busy', headers: { ...admin, 'if-none-match': list.headers.etag as string } })
  t.equal(cached.statusCode, 304, 'ETag and If-None-Match as for any list')

  const bad = async (query: string, message: string | RegExp): Promise<void> => {
    const res = await get(`/api/stations?${query}`)
    t.equal(res.statusCode, 400, query)
    t.match(res.json(), { statusCode: 400, code: 'BAD_QUERY', error: 'Bad Request', message }, query)
  }
  await bad('status=[like]idle', "Filter 'status': [like] does not work on a live field; use [or] with the values")
  await bad('connected=maybe', "Invalid value for 'connected': expected true or false, got 'maybe'")
  await bad('lastSeenAt=[gte]soon', "Invalid value for 'lastSeenAt': expected an ISO 8601 date-time, got 'soon'")
  await bad('status=[is]idle', /^Filter 'status': unknown operator '\[is\]'/)
  await bad('status=bogus', "Invalid value for 'status': expected one of offline, idle, busy, error, disabled, got 'bogus'")
  await bad('status=[or]idle;Busy', "Invalid value for 'status': expected one of offline, idle, busy, error, disabled, got 'Busy'")
  await bad('status=[not]ofline', /got 'ofline'$/)
  await bad('sort=state', "Unknown sort field 'state' in 'sort'")
  const stored = (await get('/api/stations?limit=1&sort=name')).json().meta.next as string
  await bad(`${stored.split('?')[1]}&status=offline`, /'cursor' does not match this query/)
})

t.test('stations: a live filter reads at most 10000 stations, and says so beyond', async (t) => {
  const ctx = await build(t)
  const repo = ctx.app.repos.stations
  const fields = ['name', 'type', 'enabled', 'createdAt', 'modifiedAt']
  const now = new Date()
  for (let from = 0; from < LIVE_LIST_CAP + 1; from += 400) {
    const rows = Array.from({ length: Math.min(400, LIVE_LIST_CAP + 1 - from) }, (_, i) => ({ name: `S-${from + i}`, type: 'manual', enabled: true, createdAt: now, modifiedAt: now }))
    await ctx.db.execute(repo.sql.insertMany(fields, rows.map((row) => Object.fromEntries(fields.map((f) => [f, repo.storage.toDb(repo.storage.field(f), row[f as keyof typeof row])])))))
  }
  const admin = ctx.auth(ctx.adminToken)
  const over = await ctx.app.inject({ method: 'GET', url: '/api/stations?status=offline', headers: admin })
  t.equal(over.statusCode, 400)
  t.same(over.json(), {
    statusCode: 400,
    code: 'BAD_QUERY',
    error: 'Bad Request',
    message: 'Filtering or sorting stations by connected, status, lastSeenAt works on at most 10000 stations, and more match the other filters: narrow the list with filters on stored fields'
  })
  const narrowed = await ctx.app.inject({ method: 'GET', url: '/api/stations?status=offline&name=[like]S-100_&count=true&limit=1', headers: admin })
  t.equal(narrowed.statusCode, 200)
  t.equal(narrowed.json().meta.total, 10, 'a stored filter narrows the read')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/api/stations?limit=1', headers: admin })).statusCode, 200, 'without a live field the database pages as usual')
})

t.test('stations: one controller address is one station (before: two stations on it each reported every pick)', async (t) => {
  const ctx = await build(t)
  const admin = ctx.auth(ctx.adminToken)
  const post = (payload: object) => ctx.app.inject({ method: 'POST', url: '/api/stations', headers: admin, payload })
  const patch = (id: number, payload: object) => ctx.app.inject({ method: 'PATCH', url: `/api/stations/${id}`, headers: admin, payload })
  const count = async () => (await ctx.app.inject({ method: 'GET', url: '/api/stations?count=true', headers: admin })).json().meta.total as number
  const first = (await post({ name: 'PTL-A', controllerId: 'ctl-1', address: 1 })).json()
  const before = await count()
  const taken = await post({ name: 'PTL-B', controllerId: 'ctl-1', address: 1 })
  t.equal(taken.statusCode, 409)
  t.same(taken.json(), { statusCode: 409, code: 'CONFLICT', error: 'Conflict', message: `Station ${first.id as number} ("PTL-A") already has controllerId "ctl-1" and address 1; nothing was written` }, 'the station that holds them named')
  t.equal(await count(), before, 'nothing created')
  const other = await post({ name: 'PTL-B', controllerId: 'ctl-2', address: 1 })
  t.equal(other.statusCode, 201, 'the same address on another controller')
  const second = other.json()
  t.equal((await post({ name: 'Bench-1' })).statusCode, 201)
  t.equal((await post({ name: 'Bench-2', controllerId: 'ctl-1' })).statusCode, 201, 'no address: not wired, nothing to share')
  t.equal((await post({ name: 'Bench-3', controllerId: 'ctl-1' })).statusCode, 201)

  const moved = await patch(second.id, { controllerId: 'ctl-1' })
  t.equal(moved.statusCode, 409, 'moving onto a taken address')
  t.match((await ctx.app.inject({ method: 'GET', url: `/api/stations/${second.id}`, headers: admin })).json(), { controllerId: 'ctl-2', address: 1 }, 'unchanged')
  t.equal((await patch(first.id, { address: 1, description: 'same place' })).statusCode, 200, 'a station keeps its own address')
  t.equal((await patch(second.id, { address: 2, controllerId: 'ctl-1' })).statusCode, 200)

  // two rows the picking system already holds on one address: other fields stay editable, the address cannot be taken again
  const dup = await ctx.app.repos.stations.create({ name: 'Legacy twin', controllerId: 'ctl-1', address: 1, type: 'ptl', enabled: true })
  t.equal((await patch(dup.id as number, { description: 'found twice' })).statusCode, 200)
  t.equal((await patch(dup.id as number, { controllerId: 'ctl-1', address: 1, description: 'as a form sends it' })).statusCode, 200, 'its own pair sent unchanged claims nothing new')
  t.equal((await patch(first.id, { address: 1 })).statusCode, 200, 'the other of the two as well')
  t.equal((await patch(dup.id as number, { address: 2 })).statusCode, 409, 'onto another station\'s address: refused')
  t.equal((await patch(dup.id as number, { address: 3 })).statusCode, 200, 'moved off it')

  // concurrent creates for one free address: exactly one gets it
  const racers = await Promise.all([1, 2, 3, 4].map((n) => post({ name: `Race-${n}`, controllerId: 'ctl-3', address: 9 })))
  t.same(racers.map((r) => r.statusCode).sort(), [201, 409, 409, 409])
})

t.test('stations: a type map without a code for some types (a picking system without carousels): bodies and the document take the mapped types only', async (t) => {
  const ctx = await build(t, {
    mapping: {
      stations: {
        table: 'Platz',
        columns: { id: 'Nr', name: 'Bez', type: { column: 'Art', values: { ptl: 'K', vlm: 'L', manual: 'M' } }, description: null, warehouse: null, controllerId: null, address: null, enabled: null, createdAt: null, modifiedAt: null }
      }
    }
  }, async (db) => {
    await db.execute({ text: 'CREATE TABLE "Platz" ("Nr" INTEGER PRIMARY KEY AUTOINCREMENT, "Bez" TEXT NOT NULL UNIQUE, "Art" TEXT NOT NULL DEFAULT \'M\' CHECK ("Art" IN (\'K\', \'L\', \'M\')))', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  const created = await ctx.app.inject({ method: 'POST', url: '/api/stations', headers, payload: { name: 'Kommissionierplatz 1', type: 'ptl' } })
  t.equal(created.statusCode, 201)
  // before: 'body/type must be one of "vlm", "carousel", "ptl", "manual"', and then carousel a 400 of its own
  for (const [method, url] of [['POST', '/api/stations'], ['POST', `/api/stations/${String(created.json().id)}`]] as const) {
    const res = await ctx.app.inject({ method, url, headers, payload: { name: 'Platz 9', type: 'K' } })
    t.equal(res.statusCode, 400)
    t.equal(res.json().message, 'body/type must be one of "vlm", "ptl", "manual"', `${url}: the types this picking system has`)
  }
  const doc = (await ctx.app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const types = (path: string): unknown => doc.paths[path].post.requestBody.content['application/json'].schema.properties.type.anyOf.map((b: { enum: string[] }) => b.enum[0])
  t.same(types('/api/stations'), ['vlm', 'ptl', 'manual'], 'the document of a create')
  t.same(types('/api/stations/{id}'), ['vlm', 'ptl', 'manual'], 'and of an update')
  const rows = await ctx.db.query({ text: 'SELECT "Bez" AS b, "Art" AS a FROM "Platz"', params: [] })
  t.same(rows, [{ b: 'Kommissionierplatz 1', a: 'K' }], 'nothing else written')
})
