// Two gateway instances and the picking system's own writer on one SQLite file, under contention: nothing lost, nothing doubled, no 500.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import BetterSqlite3 from 'better-sqlite3'
import t, { type Test } from 'tap'
import { buildApp, type App } from '../../src/app.js'
import { mappingsOf } from '../../src/config.js'
import { openDatabase, sqlitePath } from '../../src/db/index.js'
import { seedDemoData } from '../../src/db/demo-data.js'
import { main } from '../../src/commands.js'
import { ADMIN_PASSWORD, build, TEST_ARGON2, testDatabaseUrl, type TestContext } from '../helpers/build.js'
import { listening, startCli } from '../helpers/process.js'
import { tempDir } from '../helpers/temp.js'

const ON_SQLITE = !testDatabaseUrl('/tmp').startsWith('mssql:')

/** A small seeded generator (mulberry32): the same choices on every run, whatever the timing. */
function random (seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

interface Answer { status: number, body: string, headers: Record<string, unknown>, json: () => any }

/** One gateway instance as a client sees it. */
type Target = (method: string, url: string, payload?: unknown, headers?: Record<string, string>) => Promise<Answer>

interface Instances {
  ctx: TestContext
  apps: App[]
  file: string
  /** every answer's trouble: a 5xx other than a 503 that says so with Retry-After */
  faults: string[]
  call: (app: App, method: string, url: string, payload?: unknown, headers?: Record<string, string>) => Promise<Answer>
}

/** Notes an answer that is a 500, or another 5xx than a 503 DATABASE_UNAVAILABLE (or OVERLOADED) with Retry-After. */
function checked (faults: string[], method: string, url: string, answer: Answer): Answer {
  if (answer.status >= 500) {
    const explained = answer.status === 503 && answer.headers['retry-after'] !== undefined && /"code":"(?:DATABASE_UNAVAILABLE|OVERLOADED)"/.test(answer.body)
    if (!explained) faults.push(`${method} ${url}: ${answer.status} ${answer.body}`)
  }
  return answer
}

/** Instance A (the test context's) and instance B (its own connection to the same file), the demo data in it. */
async function instances (t: Test, busyTimeoutMs?: number): Promise<Instances> {
  const ctx = await build(t, {}, undefined, { busyTimeoutMs })
  await seedDemoData(ctx.db, mappingsOf(ctx.config))
  const file = sqlitePath(ctx.config.database.url)!
  const second = await buildApp(ctx.config, { db: openDatabase(ctx.config.database.url, { create: false, busyTimeoutMs, logger: { info () {}, warn () {}, error () {} } }) })
  await second.ready()
  t.teardown(() => second.close())
  const faults: string[] = []
  const call = async (app: App, method: string, url: string, payload?: unknown, headers: Record<string, string> = {}): Promise<Answer> => {
    const res = await app.inject({ method: method as 'GET', url, payload: payload as Record<string, unknown>, headers: { ...ctx.auth(ctx.adminToken), ...headers } })
    return checked(faults, method, url, { status: res.statusCode, body: res.body, headers: res.headers, json: () => res.json() })
  }
  return { ctx, apps: [ctx.app, second], file, faults, call }
}

/** The picking system's own connection: BEGIN IMMEDIATE, its statements, a pause holding the lock, COMMIT. */
function directWriter (file: string) {
  const db = new BetterSqlite3(file)
  // the picking system waits for the gateway's lock as SQLite programs usually do
  db.pragma('busy_timeout = 5000')
  return {
    db,
    async transaction<T> (fn: () => T, holdMs: number): Promise<T> {
      db.prepare('BEGIN IMMEDIATE').run()
      try {
        const result = fn()
        if (holdMs > 0) await delay(holdMs)
        db.prepare('COMMIT').run()
        return result
      } catch (err) {
        if (db.inTransaction) db.prepare('ROLLBACK').run()
        throw err
      }
    },
    close: () => db.close()
  }
}

t.test('concurrent creates of one materialNumber on two instances: exactly one 201, the others 409, one row', { skip: !ON_SQLITE && 'two SQLite connections to one file' }, async (t) => {
  const { apps, call, faults } = await instances(t)
  for (let round = 0; round < 10; round++) {
    const number = `DUP-${round}`
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => call(apps[i % 2], 'POST', '/api/materials', { materialNumber: number, name: `Try ${i}` })))
    const statuses = answers.map((a) => a.status).sort()
    t.same(statuses, [201, 409, 409, 409, 409, 409, 409, 409], `${number}: ${statuses.join(' ')}`)
    for (const a of answers.filter((a) => a.status === 409)) t.equal(a.json().code, 'CONFLICT')
    const list = await call(apps[round % 2], 'GET', `/api/materials?materialNumber=${number}&count=true`)
    t.equal(list.json().meta.total, 1, 'one row')
    t.equal(list.json().data[0].id, answers.find((a) => a.status === 201)!.json().id, 'the 201\'s row')
  }
  t.same(faults, [])
})

t.test('If-Match under contention: of updates sent with one ETag at most one wins; the others are 412 and change nothing', { skip: !ON_SQLITE && 'two SQLite connections to one file' }, async (t) => {
  const { apps, call, faults } = await instances(t)
  for (let id = 1; id <= 10; id++) {
    const read = await call(apps[0], 'GET', `/api/materials/${id}`)
    const etag = read.headers.etag as string
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) =>
      call(apps[i % 2], 'POST', `/api/materials/${id}`, { description: `writer ${i}` }, { 'if-match': etag })))
    const won = answers.filter((a) => a.status === 200)
    t.equal(won.length, 1, `material ${id}: one 200 (${answers.map((a) => a.status).join(' ')})`)
    t.equal(answers.filter((a) => a.status === 412).length, 5, 'the others 412')
    const now = await call(apps[1], 'GET', `/api/materials/${id}`)
    t.equal(now.json().description, won[0].json().description, 'the row holds the winner\'s value')
    t.equal(now.headers.etag, won[0].headers.etag)
  }
  t.same(faults, [])
})

t.test('concurrent creates of one station address, and of one username in two spellings, on two instances: one 201, the others 409', { skip: !ON_SQLITE && 'two SQLite connections to one file' }, async (t) => {
  const { apps, call, faults } = await instances(t)
  for (let address = 1; address <= 5; address++) {
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => call(apps[i % 2], 'POST', '/api/stations', { name: `S-${address}-${i}`, controllerId: 'ctl-9', address })))
    t.same(answers.map((a) => a.status).sort(), [201, 409, 409, 409, 409, 409], `address ${address}: ${answers.map((a) => a.status).join(' ')}`)
    const list = await call(apps[1], 'GET', `/api/stations?controllerId=ctl-9&address=${address}&count=true`)
    t.equal(list.json().meta.total, 1, 'one station holds it')
  }
  for (let n = 1; n <= 5; n++) {
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => call(apps[i % 2], 'POST', '/api/users', { username: i % 2 === 0 ? `clerk-${n}` : `CLERK-${n}`, password: `pw-clerk-${n}-${i}`, type: 'user' })))
    t.same(answers.map((a) => a.status).sort(), [201, 409, 409, 409, 409, 409], `clerk-${n}: ${answers.map((a) => a.status).join(' ')}`)
  }
  const users = await call(apps[0], 'GET', '/api/users?count=true&limit=100')
  t.equal(users.json().meta.total, 6, 'admin and five clerks')
  t.same(faults, [])
})

t.test('the picking system holding the lock longer than the wait: every write on both instances is a 503 with Retry-After and changes nothing; reads go on', { skip: !ON_SQLITE && 'two SQLite connections to one file' }, async (t) => {
  const { apps, call, faults, file } = await instances(t, 300)
  const writer = directWriter(file)
  t.teardown(() => writer.close())
  const before = writer.db.prepare('SELECT * FROM materials ORDER BY id').all()
  const held = writer.transaction(() => writer.db.prepare('UPDATE materials SET stock_quantity = stock_quantity WHERE id = 1').run(), 1000)
  const answers = await Promise.all(apps.flatMap((app, i) => [
    call(app, 'POST', '/api/materials', { materialNumber: `HELD-${i}`, name: 'Held' }),
    call(app, 'POST', `/api/materials/${2 + i}`, { description: 'held' }),
    call(app, 'DELETE', `/api/materials/${4 + i}`)
  ]))
  const read = await call(apps[1], 'GET', '/api/materials/4')
  await held
  for (const a of answers) {
    t.equal(a.status, 503, a.body)
    t.equal(a.headers['retry-after'], '5')
    t.match(a.json(), { code: 'DATABASE_UNAVAILABLE', message: 'The database is busy' })
  }
  t.equal(read.status, 200, 'a read during the lock is answered')
  t.same(writer.db.prepare('SELECT * FROM materials ORDER BY id').all(), before, 'nothing changed')
  t.same(faults, [], 'the 503s are the explained kind')
  // sent again once the lock is gone, each succeeds: the 503 said it was safe to
  t.same((await Promise.all(apps.map((app, i) => call(app, 'POST', '/api/materials', { materialNumber: `HELD-${i}`, name: 'Held' })))).map((a) => a.status), [201, 201])
})

/** a write answered with a 2xx (or committed by the picking system): sent at `began`, answered at `at`, stamped `modifiedAt` as the API shows it */
interface Written { id: number, modifiedAt: string, description?: string, began: number, at: number }

/** a stamp as the API shows it: the picking system's 'YYYY-MM-DD HH:MM:SS' (CURRENT_TIMESTAMP) is UTC */
const shownTime = (stored: string): string => new Date(stored.includes('T') ? stored : `${stored.replace(' ', 'T')}Z`).toISOString()

/**
 * Twelve clients doing random creates (some of one materialNumber), updates with and without
 * If-Match, deletes and list walks on the given instances, the picking system writing beside them
 * and an ERP syncing incrementally all along; then the invariants.
 */
async function workload (t: Test, targets: Target[], file: string, faults: string[], rounds = 40): Promise<void> {
  const writer = directWriter(file)
  t.teardown(() => writer.close())
  const stock = new Map((writer.db.prepare('SELECT id, stock_quantity AS q FROM materials').all() as Array<{ id: number, q: number }>).map((m) => [m.id, m.q]))
  const seeded = [...stock.keys()]
  t.ok(seeded.length > 100, `${seeded.length} demo materials`)
  const live = new Set<number>(seeded)
  const deleted = new Set<number>()
  /** rows a delete was sent for, answered or not yet: a walk meanwhile may rightly miss them */
  const deleting = new Set<number>()
  /** every 2xx write's row as answered: the last one per id (by modifiedAt) is what the table must hold */
  const gatewayWrites: Written[] = []
  const created = new Map<number, string>()
  let stop = false
  const tally = new Map<number, number>()
  const count = (a: Answer) => tally.set(a.status, (tally.get(a.status) ?? 0) + 1)

  const client = async (n: number) => {
    const rnd = random(1000 + n)
    const pick = <T>(items: T[]): T => items[Math.floor(rnd() * items.length)]
    // most updates and deletes go to a few hot rows, so that they meet
    const row = (): number => {
      const hot = seeded.slice(0, 25).filter((id) => live.has(id)).concat([...created.keys()].slice(-5))
      return rnd() < 0.8 && hot.length > 0 ? pick(hot) : pick([...live])
    }
    for (let i = 0; i < rounds; i++) {
      const target = pick(targets)
      const op = rnd()
      if (op < 0.25) {
        // some numbers are taken by several clients at once
        const number = rnd() < 0.5 ? `SHARED-${Math.floor(rnd() * 20)}` : `C${n}-${i}`
        const began = Date.now()
        const a = await target('POST', '/api/materials', { materialNumber: number, name: `Client ${n} #${i}` })
        count(a)
        if (a.status === 201) {
          const row = a.json()
          t.notOk(created.has(row.id), `id ${row.id} created once`)
          mark(began, row.id)
          stock.set(row.id, row.stockQuantity)
          created.set(row.id, number)
          live.add(row.id)
          gatewayWrites.push({ id: row.id, modifiedAt: row.modifiedAt, description: row.description ?? undefined, began, at: Date.now() })
        } else if (a.status !== 409 && a.status !== 503) t.fail(`create: ${a.status} ${a.body}`)
      } else if (op < 0.65) {
        const id = row()
        const withEtag = rnd() < 0.6
        let etag: string | undefined
        if (withEtag) {
          const r = await pick(targets)('GET', `/api/materials/${id}`)
          if (r.status !== 200) continue
          etag = r.headers.etag as string
          // a user's think time: others may change the row meanwhile
          await delay(Math.floor(rnd() * 20))
        }
        const description = `c${n}-${i}`
        const began = Date.now()
        const a = await target('POST', `/api/materials/${id}`, { description }, etag === undefined ? {} : { 'if-match': etag })
        count(a)
        if (a.status === 200) {
          t.equal(a.json().description, description)
          gatewayWrites.push({ id, modifiedAt: a.json().modifiedAt, description, began, at: Date.now() })
        } else if (a.status !== 404 && a.status !== 412 && a.status !== 503) t.fail(`update: ${a.status} ${a.body}`)
      } else if (op < 0.72) {
        const id = row()
        let etag: string | undefined
        if (rnd() < 0.5) {
          const r = await pick(targets)('GET', `/api/materials/${id}`)
          if (r.status !== 200) continue
          etag = r.headers.etag as string
          await delay(Math.floor(rnd() * 20))
        }
        deleting.add(id)
        const a = await target('DELETE', `/api/materials/${id}`, undefined, etag === undefined ? {} : { 'if-match': etag })
        count(a)
        if (a.status === 412) {
          const now = await target('GET', `/api/materials/${id}`)
          t.ok(now.status === 404 || (now.status === 200 && now.headers.etag !== etag), `material ${id}: a 412 to a delete means the row changed (or went) since`)
        }
        if (a.status === 204) {
          t.notOk(deleted.has(id), `material ${id} deleted once`)
          deleted.add(id)
          live.delete(id)
        } else if (a.status !== 404 && a.status !== 412 && a.status !== 503) t.fail(`delete: ${a.status} ${a.body}`)
      } else {
        // a list walk by id while everything else writes: no row twice, every row there throughout found
        const before = new Set(live)
        const seen = new Set<number>()
        // sorted by fields no write here changes (null in every new row, ties broken by id), or by id
        let next: string | undefined = `/api/materials?limit=97${pick(['', '&sort=materialNumber', '&sort=-barcode', '&sort=weight,-unit', '&sort=unit', '&sort=-id'])}`
        let pages = 0
        while (next !== undefined && pages++ < 40) {
          // page by page on either instance, as a round-robin load balancer sends them
          let page = await pick(targets)('GET', next)
          // a 503 (busy database, overload: both with Retry-After) is asked again, as an ERP's walk does, not given up
          for (let retry = 0; page.status === 503 && retry < 20; retry++) {
            await delay(50)
            page = await pick(targets)('GET', next)
          }
          if (page.status !== 200) {
            t.fail(`walk: ${page.status} ${page.body}`)
            break
          }
          for (const { id } of page.json().data as Array<{ id: number }>) {
            if (seen.has(id)) t.fail(`walk: material ${id} twice`)
            seen.add(id)
          }
          next = page.json().meta.next ?? undefined
        }
        const missing = [...before].filter((id) => live.has(id) && !deleting.has(id) && !seen.has(id))
        t.same(missing, [], 'walk: every row there before and after the walk found')
      }
    }
  }

  /** the picking system: stock postings that stamp the time (two formats), some that do not, inserts, and locks held a while */
  const direct: Written[] = []
  const pickingSystem = async () => {
    const rnd = random(7)
    const posts = writer.db.prepare('UPDATE materials SET stock_quantity = stock_quantity + 1, modified_at = ? WHERE id = ?')
    const silent = writer.db.prepare('UPDATE materials SET stock_quantity = stock_quantity + 1 WHERE id = ?')
    const insert = writer.db.prepare('INSERT INTO materials (material_number, name, unit, blocked, stock_quantity, created_at, modified_at) VALUES (?, ?, \'pcs\', 0, 0, ?, ?)')
    let k = 0
    while (!stop) {
      const op = rnd()
      const ids = [...live]
      const id = ids[Math.floor(rnd() * ids.length)]
      const began = Date.now()
      let stamp = ''
      const { posted, inserted } = await writer.transaction((): { posted?: number, inserted?: number } => {
        stamp = rnd() < 0.5 ? new Date().toISOString() : new Date().toISOString().slice(0, 19).replace('T', ' ')
        if (op < 0.5) {
          if (posts.run(stamp, id).changes === 1) {
            stock.set(id, (stock.get(id) ?? 0) + 1)
            return { posted: id }
          }
        } else if (op < 0.8) {
          if (silent.run(id).changes === 1) stock.set(id, (stock.get(id) ?? 0) + 1)
        } else {
          return { inserted: Number(insert.run(`PS-${k++}`, 'Posted by the picking system', stamp, stamp).lastInsertRowid) }
        }
        return {}
      }, rnd() < 0.2 ? 20 + Math.floor(rnd() * 100) : 0)
      // the times a client could know: committed now
      if (posted !== undefined) direct.push({ id: posted, modifiedAt: shownTime(stamp), began, at: Date.now() })
      if (inserted !== undefined) {
        // committed: from now on every walk must find it
        live.add(inserted)
        stock.set(inserted, 0)
        direct.push({ id: inserted, modifiedAt: shownTime(stamp), began, at: Date.now() })
        mark(began, inserted)
      }
      await delay(2)
    }
  }

  /** an ERP's incremental sync: each run follows meta.next and keeps the first page's serverTime */
  const synced = new Map<number, Set<string>>()
  /** each complete run: the since it was given, the serverTime it kept, when it sent its first page, what it saw */
  const log: Array<{ since: string | undefined, serverTime: string | undefined, sent: number, seen: Map<number, string> }> = []
  let runs = 0
  const syncRun = async (since: string | undefined, first: number): Promise<string | undefined> => {
    let next: string | undefined = `/api/materials?sort=modifiedAt&limit=200${since === undefined ? '' : `&modifiedSince=${since}`}`
    let serverTime: string | undefined
    let pages = 0
    const sent = Date.now()
    const seen = new Map<number, string>()
    while (next !== undefined && pages++ < 100) {
      const page = await targets[(first + pages) % targets.length]('GET', next)
      // a failed request ends the run and keeps its since
      if (page.status !== 200) return since
      serverTime ??= page.json().meta.serverTime
      for (const { id, modifiedAt } of page.json().data as Array<{ id: number, modifiedAt: string | null }>) {
        let times = synced.get(id)
        if (times === undefined) synced.set(id, times = new Set())
        if (modifiedAt !== null) {
          times.add(modifiedAt)
          // the newest the run saw (a row changed during the run comes again, later)
          if (!(seen.get(id)! >= modifiedAt)) seen.set(id, modifiedAt)
        }
      }
      next = page.json().meta.next ?? undefined
    }
    runs++
    log.push({ since, serverTime, sent, seen })
    return serverTime
  }
  const erp = async () => {
    let since: string | undefined
    let k = 0
    while (!stop) {
      since = await syncRun(since, k++)
      await delay(20)
    }
    return since
  }

  /**
   * a poll of the newest material with If-None-Match, on either instance in turn: a create sent
   * after the answer that gave the tag held and answered (or committed by the picking system) before this poll
   * was sent has a higher id than that answer's (AUTOINCREMENT), so unless it was deleted since, a
   * 304 to this poll hid it
   */
  const creates: Array<{ began: number, done: number, id: number }> = []
  const mark = (began: number, id: number) => { creates.push({ began, done: Date.now(), id }) }
  const notModified: Array<{ answered: number, sent: number }> = []
  let polls = 0
  const poller = async () => {
    let etag: string | undefined
    let answered = 0
    let k = 0
    while (!stop) {
      const sent = Date.now()
      const a = await targets[k++ % targets.length]('GET', '/api/materials?sort=-id&limit=1', undefined, etag === undefined ? {} : { 'if-none-match': etag })
      if (a.status === 304) notModified.push({ answered, sent })
      if (a.status === 200) {
        // the page of the tag held was read before this: what is created after it changes the page
        etag = a.headers.etag as string
        answered = Date.now()
      }
      polls++
      await delay(3)
    }
  }

  const polling = poller()
  const syncing = erp()
  const posting = pickingSystem()
  await Promise.all(Array.from({ length: 12 }, (_, n) => client(n)))
  stop = true
  await posting
  await polling
  t.ok(polls > 10, `${polls} polls, ${notModified.length} answered 304`)
  const since = await syncing
  // after the writes: one more run, after the commit lag, as the next poll would be
  await delay(1100)
  await syncRun(since, 0)
  t.ok(runs > 3, `${runs} sync runs`)
  t.comment(`answers: ${JSON.stringify(Object.fromEntries(tally))}; ${gatewayWrites.length} gateway writes, ${direct.length} stamped direct writes`)

  t.same(faults, [], 'no 500 and no unexplained 5xx')

  // the table agrees with every 2xx answer
  const final = new Map<number, { description: string | null, modifiedAt: string | null, stock: number }>()
  for (const row of writer.db.prepare('SELECT id, description, modified_at AS modifiedAt, stock_quantity AS stock FROM materials').all() as Array<{ id: number, description: string | null, modifiedAt: string | null, stock: number }>) final.set(row.id, row)
  t.same([...final].filter(([id, row]) => stock.has(id) && row.stock !== stock.get(id)).map(([id, row]) => `${id}: ${row.stock}, posted ${stock.get(id)}`), [], 'the picking system\'s stock postings are all there: no gateway write overwrote one')
  t.same([...deleted].filter((id) => final.has(id)), [], 'every material deleted with a 204 is gone')
  t.same([...created.keys()].filter((id) => !deleted.has(id) && !final.has(id)), [], 'every material created with a 201 (and not deleted) is there')
  t.same(writer.db.prepare('SELECT material_number AS n, COUNT(*) AS c FROM materials GROUP BY material_number HAVING c > 1').all(), [], 'no materialNumber twice')
  const last = new Map<number, Written>()
  for (const w of gatewayWrites) {
    const before = last.get(w.id)
    if (before === undefined || w.modifiedAt > before.modifiedAt) last.set(w.id, w)
  }
  const lost: string[] = []
  for (const [id, w] of last) {
    if (deleted.has(id) || w.description === undefined) continue
    if (final.get(id)?.description !== w.description) lost.push(`${id}: ${final.get(id)?.description} where the last 200 said ${w.description}`)
  }
  t.same(lost, [], 'every row holds its last 200\'s values')

  const hidden = notModified.flatMap(({ answered, sent }) => creates.filter((c) => c.began > answered && c.done < sent && !deleted.has(c.id) && final.has(c.id)).map((c) => c.id))
  t.same(hidden, [], 'no 304 hid a material created before the poll')

  // a run given the serverTime of the run before sees every change made after that run's first request was sent
  // and answered before this run began, as that change or a later one (rows ever deleted aside), unless the run
  // before saw it already (its first query began more than a second after it was sent: a loaded machine)
  const unseen: string[] = []
  for (let j = 1; j < log.length; j++) {
    const [before, run] = [log[j - 1], log[j]]
    if (run.since === undefined || run.since !== before.serverTime) continue
    for (const w of [...gatewayWrites, ...direct]) {
      if (w.began <= before.sent || w.at >= run.sent || deleted.has(w.id)) continue
      if (!(run.seen.get(w.id)! >= w.modifiedAt) && !(before.seen.get(w.id)! >= w.modifiedAt)) unseen.push(`${w.id} stamped ${w.modifiedAt}: not in the run with modifiedSince=${run.since} (saw ${run.seen.get(w.id)})`)
    }
  }
  t.same(unseen, [], 'each sync run sees every change made since the run before began')

  // every row changed or created with a stamp during the test was synced in its final state
  const missed: string[] = []
  const changed = new Set([...gatewayWrites.map((w) => w.id), ...direct.map((w) => w.id)])
  for (const id of changed) {
    const row = final.get(id)
    if (row === undefined || row.modifiedAt === null) continue
    if (!synced.get(id)?.has(shownTime(row.modifiedAt))) missed.push(`${id} at ${row.modifiedAt} (synced: ${[...synced.get(id) ?? []].join(', ')})`)
  }
  t.same(missed, [], 'no change missed by the incremental sync')
}

t.test('two in-process instances and the picking system writing at once: no 500, no lost or doubled row, every change synced, no row twice in a walk', { skip: !ON_SQLITE && 'two SQLite connections to one file' }, async (t) => {
  const { apps, call, faults, file } = await instances(t)
  await workload(t, apps.map((app): Target => (method, url, payload, headers) => call(app, method, url, payload, headers)), file, faults)
})

t.test('two gateway processes (picking-gateway serve, the compiled one when dist/ is current) and the picking system writing at once: the same invariants', { skip: !ON_SQLITE && 'two SQLite connections to one file' }, async (t) => {
  const dir = tempDir(t, 'pg-concurrency-')
  const config = join(dir, 'config.json')
  writeFileSync(config, JSON.stringify({
    // the production overload guard: its 503 OVERLOADED carries Retry-After too ("Health, overload, shutdown and timeouts")
    server: { port: 0 },
    database: { url: `sqlite:${join(dir, 'picking.db')}` },
    auth: { jwtSecret: 'concurrency-test-secret-0123456789abcdef', argon2: TEST_ARGON2 },
    hardware: { enabled: false, controllers: [] },
    logging: { level: 'info' }
  }))
  const env = { PICKING_GATEWAY_CONFIG: config, PICKING_GATEWAY_ADMIN_PASSWORD: ADMIN_PASSWORD }
  t.equal(await main(['db', 'init', '--demo'], { out: () => {}, err: () => {}, readStdin: async () => '', env }), 0, 'db init --demo')
  const faults: string[] = []
  const targets: Target[] = []
  for (let i = 0; i < 2; i++) {
    const run = startCli(t, ['serve'], env)
    const base = `http://127.0.0.1:${await listening(run)}`
    // a gateway just started on a loaded machine may answer 503 OVERLOADED (Retry-After) at first: tried again, as a
    // client does (before: the 503's body had no token, and every request of this instance was a 401 TOKEN_INVALID)
    let login: Response
    for (let attempt = 1; ; attempt++) {
      login = await fetch(`${base}/api/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }) })
      if (login.status !== 503 || attempt === 20) break
      await delay(250)
    }
    t.equal(login.status, 200, `instance ${i}: logged in`)
    const { accessToken } = await login.json() as { accessToken: string }
    targets.push(async (method, url, payload, headers = {}) => {
      const res = await fetch(`${base}${url}`, {
        method,
        headers: { authorization: `Bearer ${accessToken}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: payload === undefined ? undefined : JSON.stringify(payload)
      })
      const body = await res.text()
      return checked(faults, method, url, { status: res.status, body, headers: Object.fromEntries(res.headers), json: () => JSON.parse(body) })
    })
    t.teardown(async () => {
      run.child.kill('SIGTERM')
      await run.exitWithin(10_000)
    })
  }
  await workload(t, targets, join(dir, 'picking.db'), faults)
})
