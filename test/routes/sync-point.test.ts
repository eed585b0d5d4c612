// meta.serverTime as the next run's modifiedSince loses no change, however coarse the writer's clock.
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { sqlitePath } from '../../src/db/index.js'
import { referenceMappings } from '../../src/db/resources.js'
import { serverTimeOf, syncPoint } from '../../src/http.js'
import type { Repository } from '../../src/db/repository.js'
import type { Database } from '../../src/db/types.js'
import { build, testDatabaseUrl } from '../helpers/build.js'
import { narrowMaterials } from '../helpers/legacy-fixture.js'

t.test('syncPoint: a step of the column (a second at least) before the query, rounded down', async (t) => {
  const at = Date.parse('2026-11-25T21:09:46.069Z')
  t.equal(syncPoint(at, 1), '2026-11-25T21:09:45.000Z', 'millisecond columns: a second back, to the second')
  t.equal(syncPoint(at, 0), '2026-11-25T21:09:45.000Z', 'finer than milliseconds (datetime2(7))')
  t.equal(syncPoint(at, -1), '2026-11-25T21:09:45.000Z', 'datetime (1/300 s)')
  t.equal(syncPoint(at, 10), '2026-11-25T21:09:45.000Z', 'datetime2(2)')
  t.equal(syncPoint(at, 60_000), '2026-11-25T21:08:00.000Z', 'smalldatetime: a minute back, to the minute')
  t.equal(syncPoint(at, 86_400_000), '2026-11-23T21:09:00.000Z', 'date: two days back, to the minute (a local day is not a UTC day)')
  t.equal(syncPoint(Date.parse('2026-11-25T21:09:46.000Z'), 1), '2026-11-25T21:09:45.000Z', 'on a whole second')
  // the mapping's commitLagMs: a picking system that commits its stamped rows later
  t.equal(syncPoint(at, 1, 30_000), '2026-11-25T21:09:16.000Z', 'thirty seconds back, to the second')
  t.equal(syncPoint(at, 60_000, 300_000), '2026-11-25T21:04:00.000Z', 'smalldatetime: five minutes back, to the minute')
  t.equal(syncPoint(at, 1, 0), '2026-11-25T21:09:45.000Z', 'never less than a second')
})

t.test('syncPoint on local wall-clock stamps: from within the autumn\'s repeated hour, back to its start', async (t) => {
  // Berlin sets its clocks back at 2026-10-25T01:00:00Z: 02:00-03:00 comes twice, read as its first occurrence
  const at = (iso: string): number => Date.parse(iso)
  t.equal(syncPoint(at('2026-10-25T00:59:30.500Z'), 1, 1000, 'Europe/Berlin'), '2026-10-25T00:00:00.000Z', 'in the first occurrence: its start, which the second one\'s stamps are shown from')
  t.equal(syncPoint(at('2026-10-25T01:30:30.000Z'), 1, 1000, 'Europe/Berlin'), '2026-10-25T00:30:29.000Z', 'in the second occurrence: the time its wall clock is shown as')
  t.equal(syncPoint(at('2026-10-24T23:59:30.000Z'), 1, 1000, 'Europe/Berlin'), '2026-10-24T23:59:29.000Z', 'before the repeated hour: unchanged')
  t.equal(syncPoint(at('2026-10-25T02:00:30.000Z'), 1, 1000, 'Europe/Berlin'), '2026-10-25T02:00:29.000Z', 'after it: unchanged')
  t.equal(syncPoint(at('2026-03-29T01:00:30.000Z'), 1, 1000, 'Europe/Berlin'), '2026-03-29T01:00:29.000Z', 'the spring change repeats nothing')
  t.equal(syncPoint(at('2026-10-25T00:59:30.000Z'), 60_000, 1000, 'Europe/Berlin'), '2026-10-25T00:00:00.000Z', 'smalldatetime too')
  t.equal(syncPoint(at('2026-11-01T05:30:00.000Z'), 1, 1000, 'America/New_York'), '2026-11-01T05:00:00.000Z', 'New York: 01:00-02:00 comes twice')
  t.equal(syncPoint(at('2026-04-04T14:50:00.000Z'), 1, 1000, 'Australia/Lord_Howe'), '2026-04-04T14:30:00.000Z', 'Lord Howe: half an hour repeated')
  t.equal(syncPoint(at('2026-10-25T00:59:30.500Z'), 1, 1000, 'UTC'), '2026-10-25T00:59:29.000Z', 'UTC: no change')
})

t.test('local wall-clock stamps: a change in the autumn\'s repeated hour is found with the serverTime of a page before it', { skip: testDatabaseUrl('/tmp').startsWith('mssql:') && 'the table is made with SQLite\'s text times' }, async (t) => {
  const ctx = await build(t, {
    mapping: { materials: { ...narrowMaterials('ArtDst', { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', modifiedAt: 'Geaendert' }), timeZone: 'Europe/Berlin' } }
  }, async (db: Database) => {
    await db.execute({ text: 'CREATE TABLE "ArtDst" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(20) NOT NULL UNIQUE, "Bez" VARCHAR(40) NOT NULL, "Geaendert" DATETIME)', params: [] })
  })
  const headers = ctx.auth(ctx.adminToken)
  // polls at these instants, each followed by a change a picking system stamps with its local clock (GETDATE())
  const rounds: Array<[string, string, string]> = [
    ['2026-10-25T00:59:30.000Z', '2026-10-25 02:00:10', 'a poll in the first occurrence, a change in the second'],
    ['2026-10-25T01:30:30.000Z', '2026-10-25 02:31:00', 'a poll and a change in the second occurrence']
  ]
  const realNow = Date.now
  t.teardown(() => { Date.now = realNow })
  let n = 0
  for (const [pollAt, stamp, what] of rounds) {
    n++
    Date.now = () => Date.parse(pollAt)
    const page = await ctx.app.inject({ method: 'GET', url: '/api/materials?limit=1', headers })
    Date.now = realNow
    const since = page.json().meta.serverTime as string
    await ctx.db.execute({ text: `INSERT INTO "ArtDst" VALUES (${n}, 'DST-${n}', 'x', '${stamp}')`, params: [] })
    const next = await ctx.app.inject({ method: 'GET', url: `/api/materials?modifiedSince=${since}`, headers })
    t.ok(next.json().data.some((m: { id: number }) => m.id === n), `${what}: stamped ${stamp} in Berlin, found with modifiedSince=${since}`)
  }
})

const ON_SQLITE = !(process.env.GATEWAY_TEST_DB === 'mssql' && process.env.MSSQL_TEST_URL)

t.test('commitLagMs: a row stamped before a page and committed after it is found by the next run', { skip: !ON_SQLITE && 'the writer behind the back is a SQLite connection' }, async (t) => {
  const ctx = await build(t, { mapping: { materials: { ...referenceMappings.materials, commitLagMs: 10_000 } } })
  const file = sqlitePath(ctx.config.database.url)!
  const headers = ctx.auth(ctx.adminToken)
  const id = (await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'LAG-1', name: 'Lag' } })).json().id as number
  const other = new BetterSqlite3(file)
  t.teardown(() => other.close())
  // a posting batch stamps the row, and commits five seconds later (here: the stamp set five seconds back)
  const page = await ctx.app.inject({ method: 'GET', url: '/api/materials?limit=1', headers })
  const since = page.json().meta.serverTime as string
  t.ok(Date.parse(since) <= Date.now() - 10_000, `serverTime is ten seconds or more back: ${since}`)
  other.prepare("UPDATE materials SET modified_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-5 seconds') WHERE id = ?").run(id)
  const next = await ctx.app.inject({ method: 'GET', url: `/api/materials?modifiedSince=${since}`, headers })
  t.ok(next.json().data.some((m: { id: number }) => m.id === id), 'the late commit is in the next run')
})

t.test('a change stored to the second right after a page is found by modifiedSince=serverTime', async (t) => {
  const ctx = await build(t)
  const file = sqlitePath(ctx.config.database.url)
  if (file === null || file === undefined) return t.pass('the writer behind the back is a SQLite connection')
  const headers = ctx.auth(ctx.adminToken)
  const created: number[] = []
  for (let i = 1; i <= 5; i++) {
    const res = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: `SP-${i}`, name: `Part ${i}` } })
    t.equal(res.statusCode, 201)
    created.push(res.json().id as number)
  }
  const other = new BetterSqlite3(file)
  t.teardown(() => other.close())
  const ids = (body: { data: Array<{ id: number }> }): number[] => body.data.map((m) => m.id)
  // five rounds: each is a page, then a write behind the gateway's back in the same second,
  // stamped as CURRENT_TIMESTAMP stamps (whole seconds; the gateway's own writes keep milliseconds)
  for (let round = 1; round <= 5; round++) {
    const page = await ctx.app.inject({ method: 'GET', url: '/api/materials?limit=1', headers })
    t.equal(page.statusCode, 200)
    const since = page.json().meta.serverTime as string
    t.ok(Date.parse(since) <= Date.now() - 1000, 'serverTime is a second or more behind the clock')
    other.prepare("UPDATE materials SET stock_quantity = stock_quantity + 1, modified_at = strftime('%Y-%m-%d %H:%M:%S', 'now') WHERE id = ?").run(created[round - 1])
    const changed = await ctx.app.inject({ method: 'GET', url: `/api/materials?modifiedSince=${since}&limit=1000`, headers })
    t.equal(changed.statusCode, 200)
    t.ok(ids(changed.json()).includes(created[round - 1]), `round ${round}: the change made after the page (stamped ${String(other.prepare('SELECT modified_at FROM materials WHERE id = ?').pluck().get(created[round - 1]))}) comes with modifiedSince=${since}`)
  }
})

t.test('a stored time the API shows is one modifiedSince finds: text SQLite cannot read is shown as null', async (t) => {
  const ctx = await build(t)
  const file = sqlitePath(ctx.config.database.url)
  if (file === null || file === undefined) return t.pass('the writer behind the back is a SQLite connection')
  const headers = ctx.auth(ctx.adminToken)
  const id = (await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'FMT-1', name: 'Formats' } })).json().id as number
  const other = new BetterSqlite3(file)
  t.teardown(() => other.close())
  const read = async (): Promise<string | null> => (await ctx.app.inject({ method: 'GET', url: `/api/materials/${id}`, headers })).json().modifiedAt
  const found = async (since: string): Promise<boolean> =>
    (await ctx.app.inject({ method: 'GET', url: `/api/materials?id=${id}&modifiedSince=${encodeURIComponent(since)}`, headers })).json().data.length === 1
  // what other programs write: CURRENT_TIMESTAMP, ISO 8601 with and without an offset, and
  // the offsets without a colon that Java's and Python's %z write, which SQLite's strftime does not read
  const stored: Array<[string, string | null]> = [
    ['2026-11-20 10:00:00', '2026-11-20T10:00:00.000Z'],
    ['2026-11-20T11:00:00+01:00', '2026-11-20T10:00:00.000Z'],
    ['2026-11-20 10:00:00.123456', '2026-11-20T10:00:00.123Z'],
    ['2026-11-20T10:00:00.000z', '2026-11-20T10:00:00.000Z'],
    ['2026-11-20 10:00:00+0100', null],
    ['2026-11-20 10:00:00-0130', null],
    ['2026-11-20t10:00:00Z', null],
    ['2026-11-20T10:00:00 0100', null]
  ]
  for (const [text, shown] of stored) {
    other.prepare('UPDATE materials SET modified_at = ? WHERE id = ?').run(text, id)
    const time = await read()
    t.equal(time, shown, `'${text}' is shown as ${String(shown)}`)
    if (time !== null) t.ok(await found(time), `'${text}': modifiedSince=${time} finds the row`)
  }
})

t.test("a database server whose clock is behind the gateway's: serverTime is set back by as much, so a change it stamps after a page is found", async (t) => {
  const BEHIND = 5000
  // SQL Server's clock, read by the database plugin (SQLite has none of its own): five seconds behind this host's
  const ctx = await build(t, {}, async (db) => { (db as Database & { clock: () => Promise<number> }).clock = async () => Date.now() - BEHIND })
  const file = sqlitePath(ctx.config.database.url)
  if (file === null || file === undefined) return t.pass('the writer behind the back is a SQLite connection')
  const headers = ctx.auth(ctx.adminToken)
  const id = (await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'CLK-1', name: 'Clock' } })).json().id as number
  const before = Date.now()
  const page = await ctx.app.inject({ method: 'GET', url: '/api/materials?limit=1', headers })
  const since = page.json().meta.serverTime as string
  // before: a second behind the gateway's clock, four seconds after what the server's clock stamps now
  t.ok(Date.parse(since) <= before - BEHIND - 1000 + 5, `serverTime ${since} lies a second before the database server's clock`)
  // the picking system's trigger stamps by its server's clock, to the second, after the page
  const other = new BetterSqlite3(file)
  t.teardown(() => other.close())
  other.prepare("UPDATE materials SET stock_quantity = 7, modified_at = strftime('%Y-%m-%d %H:%M:%S', ?, 'unixepoch') WHERE id = ?").run(Math.floor((Date.now() - BEHIND) / 1000), id)
  const changed = await ctx.app.inject({ method: 'GET', url: `/api/materials?modifiedSince=${since}&limit=1000`, headers })
  t.ok(changed.json().data.some((m: { id: number }) => m.id === id), 'the change comes with modifiedSince=serverTime')
})

t.test("the warning about the database server's clock goes by how far behind it surely is: a slow round trip is no clock to set by NTP, though serverTime allows for it", async (t) => {
  const warnings = async (clock: () => Promise<number>): Promise<{ said: unknown[], behindMs: number }> => {
    const lines: string[] = []
    const ctx = await build(t, { logging: { level: 'info' } }, async (db) => { (db as Database & { clock: () => Promise<number> }).clock = clock }, { logStream: { write: (line) => { lines.push(line) } } })
    const said = lines.map((l) => JSON.parse(l)).filter((l) => String(l.msg).startsWith("the database server's clock")).map((l) => [l.level, l.behindMs])
    return { said, behindMs: ctx.app.repos.materials.clockBehindMs }
  }
  // in step, but the answer took 1.5 s (a busy server, a busy event loop here)
  const slow = await warnings(async () => { const at = Date.now(); await new Promise((resolve) => setTimeout(resolve, 1500)); return at })
  t.same(slow.said, [], 'before: "the database server\'s clock is behind this host\'s" with behindMs 1500')
  // a 1.5 s timer may fire a millisecond early: past the second the warning would have gone by is what counts
  t.ok(slow.behindMs > 1000, `serverTime is still set back by as much as it could be behind (${slow.behindMs} ms)`)
  const behind = await warnings(async () => Date.now() - 5000)
  t.equal(behind.said.length, 1)
  t.match(behind.said[0], [40, Number])
  t.ok(behind.behindMs >= 5000)
})

t.test("SQL Server's clock reads as an instant near the gateway's", { skip: ON_SQLITE && 'SQLite has no server clock' }, async (t) => {
  const ctx = await build(t)
  const clock = ctx.db.clock?.bind(ctx.db)
  if (clock === undefined) return t.fail('the SQL Server database reads its clock')
  const at = await clock()
  // the CI server and the test host may differ by a little, not by hours (a time zone read as UTC)
  t.ok(Math.abs(at - Date.now()) < 5 * 60_000, `SYSUTCDATETIME() read as ${new Date(at).toISOString()}, this host ${new Date().toISOString()}`)
})

t.test('serverTimeOf, remembered while its step lasts, is syncPoint of the moment: across seconds, the autumn change, a zone or a lag changed', async (t) => {
  const realNow = Date.now
  t.teardown(() => { Date.now = realNow })
  let now = Date.parse('2026-10-25T00:58:00.000Z')
  Date.now = () => now
  const repo = { modifiedResolutionMs: 1, modifiedTimeZone: 'Europe/Berlin' as string | undefined, clockBehindMs: 0, storage: { mapping: { commitLagMs: undefined as number | undefined } } }
  const serverTime = (): string => serverTimeOf(repo as unknown as Repository)
  const expected = (): string => syncPoint(now - repo.clockBehindMs, repo.modifiedResolutionMs, repo.storage.mapping.commitLagMs, repo.modifiedTimeZone)
  let differ = 0
  // through the first occurrence of the repeated hour and past the change, in uneven steps
  for (; now < Date.parse('2026-10-25T01:03:00.000Z'); now += 137) if (serverTime() !== expected()) differ++
  t.equal(differ, 0, 'the same as syncPoint at every step of five minutes')
  // within the repeated hour, where the zone moves serverTime back to its start
  now = Date.parse('2026-10-25T00:59:30.500Z')
  t.equal(serverTime(), '2026-10-25T00:00:00.000Z')
  repo.modifiedTimeZone = undefined
  t.equal(serverTime(), expected(), 'the zone taken away')
  repo.storage.mapping.commitLagMs = 30_000
  t.equal(serverTime(), expected(), 'a commit lag')
  repo.clockBehindMs = 5000
  t.equal(serverTime(), expected(), 'a database clock behind')
  repo.modifiedResolutionMs = 60_000
  t.equal(serverTime(), expected(), 'a smalldatetime column')
})
