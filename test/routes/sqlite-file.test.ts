// The API while another process holds SQLite's write lock, and while the database file is deleted or replaced under it.
import { randomBytes } from 'node:crypto'
import { copyFileSync, existsSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import BetterSqlite3 from 'better-sqlite3'
import t, { type Test } from 'tap'
import { FileUncheckableError } from '../../src/db/errors.js'
import { sqlitePath } from '../../src/db/index.js'
import type { Database } from '../../src/db/types.js'
import { ADMIN_PASSWORD, build, type TestContext } from '../helpers/build.js'
import { jsonLines } from '../helpers/process.js'
import { sleep, until } from '../helpers/wait.js'

// SQLite's file and locks only: on SQL Server (GATEWAY_TEST_DB=mssql) there is nothing to test here
const onSqlite = !(process.env.GATEWAY_TEST_DB === 'mssql' && process.env.MSSQL_TEST_URL)

interface Tracked { done: boolean, res: Promise<{ statusCode: number, json: () => any, headers: Record<string, unknown> }> }

/** A request whose completion can be looked at without awaiting it. */
function track (ctx: TestContext, opts: { method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object }): Tracked {
  const tracked: Tracked = { done: false, res: undefined as unknown as Tracked['res'] }
  tracked.res = ctx.app.inject({ ...opts, headers: ctx.auth(ctx.adminToken) }).then((res) => { tracked.done = true; return res })
  return tracked
}

async function material (ctx: TestContext, materialNumber: string): Promise<number> {
  const res = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers: ctx.auth(ctx.adminToken), payload: { materialNumber, name: materialNumber } })
  t.equal(res.statusCode, 201, res.body)
  return res.json().id as number
}

/**
 * A full disk as SQLite meets it: no page beyond the file's present ones (SQLITE_FULL). Creates (numbered
 * from 0) until one is refused; `create(n)` makes more, numbered from 1000 on to stay clear of those.
 */
async function fillDisk (ctx: TestContext, prefix: string) {
  const count = (await ctx.app.db.query({ text: 'PRAGMA page_count', params: [] }))[0] as Record<string, number>
  await ctx.app.db.query({ text: `PRAGMA max_page_count = ${Object.values(count)[0]}`, params: [] })
  const create = async (n: number) => await ctx.app.inject({ method: 'POST', url: '/api/materials', headers: ctx.auth(ctx.adminToken), payload: { materialNumber: `${prefix}-${n}`, name: 'x'.repeat(200), description: 'y'.repeat(2000) } })
  let n = 0
  let refused = await create(n++)
  while (refused.statusCode === 201 && n < 500) refused = await create(n++)
  return { create, refused }
}

/** Another process's connection holding the write lock, as the picking system's BEGIN EXCLUSIVE; UPDATE … does. */
function holdLock (file: string): BetterSqlite3.Database {
  const other = new BetterSqlite3(file)
  other.exec('BEGIN EXCLUSIVE')
  other.prepare('UPDATE materials SET description = ? WHERE material_number = ?').run('by the picking system', 'M-OTHER')
  return other
}

/** Materials M-A (its id) and M-OTHER, and a second connection that holds the write lock over a change to M-OTHER. */
async function lockedWithMaterial (t: Test, ctx: TestContext): Promise<{ a: number, other: BetterSqlite3.Database }> {
  const file = sqlitePath(ctx.config.database.url)!
  const a = await material(ctx, 'M-A')
  await material(ctx, 'M-OTHER')
  const other = holdLock(file)
  t.teardown(() => { if (other.open) other.close() })
  return { a, other }
}

t.test('a write lock held by another process: writes wait on timers, reads and /health answer at once', { skip: !onSqlite }, async (t) => {
  const ctx = await build(t)
  const { a, other } = await lockedWithMaterial(t, ctx)

  const started = Date.now()
  const update = track(ctx, { method: 'PATCH', url: `/api/materials/${a}`, payload: { description: 'while locked' } })
  const create = track(ctx, { method: 'POST', url: '/api/materials', payload: { materialNumber: 'M-NEW', name: 'created while locked' } })
  const login = ctx.app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: 'admin-password-1' } })
    .then((res) => { loginDone = true; return res })
  let loginDone = false
  // by now the writes have met the lock: before, each one held the event loop inside SQLite for up to 5 s
  await sleep(100)

  const health = await ctx.app.inject({ method: 'GET', url: '/health' })
  t.equal(health.statusCode, 200, '/health answers while the writes wait')
  const read = await ctx.app.inject({ method: 'GET', url: `/api/materials/${a}`, headers: ctx.auth(ctx.adminToken) })
  t.equal(read.statusCode, 200, 'a read answers while the writes wait (WAL)')
  t.equal(read.json().description, null, 'and sees the row as committed')
  const list = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(ctx.adminToken) })
  t.equal(list.statusCode, 200)
  t.ok(Date.now() - started < 1000, `the event loop kept turning and the reads answered promptly (${Date.now() - started} ms)`)
  await sleep(300)
  t.notOk(update.done || create.done || loginDone, 'the writes are still waiting for the lock, not failed and not done')
  const ready = await ctx.app.inject({ method: 'GET', url: '/health/ready' })
  t.equal(ready.statusCode, 200, 'readiness too')

  other.exec('COMMIT')
  other.close()
  const updated = await update.res
  t.equal(updated.statusCode, 200)
  t.equal(updated.json().description, 'while locked')
  const created = await create.res
  t.equal(created.statusCode, 201)
  t.equal((await login).statusCode, 200, 'login (it writes lastLoginAt) waited too, and succeeded')
  t.ok(Date.now() - started < 4500, 'each write went through soon after the lock was released')
  const stored = await ctx.app.inject({ method: 'GET', url: `/api/materials/${created.json().id as number}`, headers: ctx.auth(ctx.adminToken) })
  t.equal(stored.json().name, 'created while locked', 'the create is stored')
  const again = await ctx.app.inject({ method: 'GET', url: `/api/materials/${a}`, headers: ctx.auth(ctx.adminToken) })
  t.equal(again.json().description, 'while locked', 'the update is stored')
})

t.test('a create that waited for another process\'s lock is stamped when it got the lock, so a sync that began meanwhile finds it', { skip: !onSqlite }, async (t) => {
  // a busy timeout far beyond the 2.7 s the lock is held here: the create waits, it does not give up
  const ctx = await build(t, {}, undefined, { busyTimeoutMs: 20000 })
  const headers = ctx.auth(ctx.adminToken)
  const { other } = await lockedWithMaterial(t, ctx)
  const create = track(ctx, { method: 'POST', url: '/api/materials', payload: { materialNumber: 'M-LATE', name: 'waited' } })
  // past serverTime's margin (a second, commitLagMs, rounded down to the second)
  await sleep(2500)
  // an ERP's sync run while the create waits: the next run asks for what changed since its serverTime
  const run = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers })
  const serverTime = run.json().meta.serverTime as string
  await sleep(200)
  t.notOk(create.done, 'still waiting for the lock')
  other.exec('COMMIT')
  other.close()
  const created = await create.res
  t.equal(created.statusCode, 201)
  // before: stamped when the request came, 2.7 s before its commit and before serverTime: never synced
  t.ok(Date.parse(created.json().modifiedAt) >= Date.parse(serverTime), `modifiedAt ${created.json().modifiedAt} is not before the run's serverTime ${serverTime}`)
  t.equal(created.json().createdAt, created.json().modifiedAt)
  const next = await ctx.app.inject({ method: 'GET', url: `/api/materials?modifiedSince=${encodeURIComponent(serverTime)}`, headers })
  t.same(next.json().data.map((m: { materialNumber: string }) => m.materialNumber).filter((n: string) => n === 'M-LATE'), ['M-LATE'], 'the next run finds it')
})

t.test('a lock held past the deadline: 503 DATABASE_UNAVAILABLE, nothing changed', { skip: !onSqlite }, async (t) => {
  const ctx = await build(t, {}, undefined, { busyTimeoutMs: 300 })
  const { a, other } = await lockedWithMaterial(t, ctx)

  const started = Date.now()
  const update = track(ctx, { method: 'POST', url: `/api/materials/${a}`, payload: { description: 'too late' } })
  const create = track(ctx, { method: 'POST', url: '/api/materials', payload: { materialNumber: 'M-LATE', name: 'too late' } })
  const login = ctx.app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })
  const wrong = ctx.app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: 'not-the-password' } })
  const health = await ctx.app.inject({ method: 'GET', url: '/health' })
  t.equal(health.statusCode, 200)
  t.notOk(update.done || create.done, 'still waiting when /health answered')
  // a right password gets its tokens though its last login time could not be written (before: 503, which
  // told a right password from a wrong one and kept everyone out for as long as the lock lasted)
  const loggedIn = await login
  t.equal(loggedIn.statusCode, 200, loggedIn.body)
  t.ok((await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(loggedIn.json().accessToken as string) })).statusCode === 200, 'and its token works')
  t.equal((await wrong).statusCode, 401, 'a wrong one its 401')
  for (const [what, write] of [['update', update], ['create', create]] as const) {
    const res = await write.res
    t.equal(res.statusCode, 503, what)
    t.same(res.json(), { statusCode: 503, code: 'DATABASE_UNAVAILABLE', error: 'Service Unavailable', message: 'The database is busy' }, `${what}: the busy database's body`)
    t.equal(res.headers['retry-after'], '5')
  }
  const waited = Date.now() - started
  t.ok(waited >= 280 && waited < 3000, `failed after the deadline (${waited} ms)`)
  other.exec('ROLLBACK')
  other.close()

  const row = await ctx.app.inject({ method: 'GET', url: `/api/materials/${a}`, headers: ctx.auth(ctx.adminToken) })
  t.equal(row.json().description, null, 'the row is unchanged')
  const late = await ctx.app.inject({ method: 'GET', url: '/api/materials?materialNumber=M-LATE', headers: ctx.auth(ctx.adminToken) })
  t.same(late.json().data, [], 'nothing was created')
  const retry = await ctx.app.inject({ method: 'POST', url: `/api/materials/${a}`, headers: ctx.auth(ctx.adminToken), payload: { description: 'now' } })
  t.equal(retry.statusCode, 200, 'the same write succeeds once the lock is gone')
})

/** A gateway that checks its file every 50 ms, its warnings kept, and material M-A (its id). */
async function watchedFile (t: Test): Promise<{ lines: string[], ctx: TestContext, file: string, a: number }> {
  const lines: string[] = []
  const ctx = await build(t, { database: { recheckMs: 50 }, logging: { level: 'warn' } }, undefined, { logStream: { write: (line: string) => { lines.push(line) } } })
  const file = sqlitePath(ctx.config.database.url)!
  const a = await material(ctx, 'M-A')
  return { lines, ctx, file, a }
}

t.test('the database file deleted: 503 and not ready until it is back, never a new empty file', { skip: !onSqlite }, async (t) => {
  const { lines, ctx, file, a } = await watchedFile(t)
  // a consistent copy of the file, as a backup would be
  const backup = `${file}.backup`
  const db = new BetterSqlite3(file)
  await db.backup(backup)
  db.close()

  // moved away (its -wal and -shm stay: the gateway's connection, closed, writes them back into it)
  const aside = `${file}.aside`
  renameSync(file, aside)
  await until(async () => (await ctx.app.inject({ method: 'GET', url: '/health/ready' })).statusCode === 503, 'readiness to notice the missing file')
  const create = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers: ctx.auth(ctx.adminToken), payload: { materialNumber: 'M-LOST', name: 'would be lost' } })
  t.equal(create.statusCode, 503, 'a write is refused, not acknowledged and lost')
  t.equal(create.json().code, 'DATABASE_UNAVAILABLE')
  const read = await ctx.app.inject({ method: 'GET', url: `/api/materials/${a}`, headers: ctx.auth(ctx.adminToken) })
  t.equal(read.statusCode, 503)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/health' })).statusCode, 200, 'the process itself is alive')
  await sleep(150)
  t.notOk(existsSync(file), 'no new empty file was created at the path')
  t.ok(lines.some((line) => line.includes('"level":50') && line.includes('the database file is gone')), 'the log says so, as an error')
  for (let i = 0; i < 3; i++) t.equal((await ctx.app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 503)
  const unready = lines.filter((line) => line.includes('readiness: database unreachable'))
  t.equal(unready.length, 1, 'polls of readiness during the outage: one warning')
  t.notMatch(unready[0], /stack/, 'without a stack')

  // the same file back (moved back): served again
  renameSync(aside, file)
  await until(async () => (await ctx.app.inject({ method: 'GET', url: '/health/ready' })).statusCode === 200, 'readiness once the file is back')
  const back = await ctx.app.inject({ method: 'GET', url: `/api/materials/${a}`, headers: ctx.auth(ctx.adminToken) })
  t.equal(back.statusCode, 200)
  t.equal(back.json().materialNumber, 'M-A')

  // deleted for good, then a backup copied to the path: the gateway opens the copy
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true })
  await until(async () => (await ctx.app.inject({ method: 'GET', url: '/health/ready' })).statusCode === 503, 'readiness to notice the deletion')
  // a file that is no database put there: the answers say so (before: "being reopened", for as long as it lay there)
  writeFileSync(file, randomBytes(5000))
  await until(async () => (await ctx.app.inject({ method: 'GET', url: `/api/materials/${a}`, headers: ctx.auth(ctx.adminToken) })).json().message === 'The file at the database path is not a SQLite database', 'the answers to name the fault')
  rmSync(file)
  copyFileSync(backup, file)
  await until(async () => (await ctx.app.inject({ method: 'GET', url: '/health/ready' })).statusCode === 200, 'readiness on the restored backup')
  const created = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers: ctx.auth(ctx.adminToken), payload: { materialNumber: 'M-AFTER', name: 'after the restore' } })
  t.equal(created.statusCode, 201)
  const check = new BetterSqlite3(file, { readonly: true })
  t.teardown(() => check.close())
  t.equal(check.prepare('SELECT name FROM materials WHERE material_number = ?').pluck().get('M-AFTER'), 'after the restore', 'the write is in the file at the path')
})

t.test('the database file replaced by another: the new file is opened, its data visible', { skip: !onSqlite }, async (t) => {
  const { lines, ctx, file, a } = await watchedFile(t)
  const copy = `${file}.new`
  const old = `${file}.old`
  const db = new BetterSqlite3(file)
  await db.backup(copy)
  db.close()
  const other = new BetterSqlite3(copy)
  other.prepare('UPDATE materials SET name = ? WHERE id = ?').run('from the new file', a)
  other.close()

  // a list cached on the old file must not be served from the new one
  const before = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(ctx.adminToken) })
  t.equal(before.json().data[0].name, 'M-A')
  // the last write to the old file is still in its -wal (not checkpointed) when the file is swapped
  const last = await ctx.app.inject({ method: 'POST', url: `/api/materials/${a}`, headers: ctx.auth(ctx.adminToken), payload: { description: 'last on the old file' } })
  t.equal(last.statusCode, 200)
  renameSync(file, old)
  renameSync(copy, file)
  await until(async () => {
    const res = await ctx.app.inject({ method: 'GET', url: `/api/materials/${a}`, headers: ctx.auth(ctx.adminToken) })
    return res.statusCode === 200 && res.json().name === 'from the new file'
  }, 'the new file to be opened')
  const row = await ctx.app.inject({ method: 'GET', url: `/api/materials/${a}`, headers: ctx.auth(ctx.adminToken) })
  t.equal(row.json().description, null, "the new file's row, not the old file's last write")
  const list = await ctx.app.inject({ method: 'GET', url: '/api/materials', headers: ctx.auth(ctx.adminToken) })
  t.equal(list.json().data[0].name, 'from the new file', 'lists come from the new file')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200)
  t.ok(lines.some((line) => line.includes('"level":40') && line.includes('replaced by another file')), 'a warning says so')
  const write = await ctx.app.inject({ method: 'POST', url: `/api/materials/${a}`, headers: ctx.auth(ctx.adminToken), payload: { description: 'on the new file' } })
  t.equal(write.statusCode, 200)
  const check = new BetterSqlite3(file, { readonly: true })
  t.teardown(() => check.close())
  t.equal(check.prepare('SELECT description FROM materials WHERE id = ?').pluck().get(a), 'on the new file')
  const before2 = new BetterSqlite3(old, { readonly: true })
  t.teardown(() => before2.close())
  t.equal(before2.prepare('SELECT description FROM materials WHERE id = ?').pluck().get(a), 'last on the old file', "the old file, moved away, holds its last commit: its -wal was written into it, not read as the new file's")
})

t.test('the database file\'s path cannot be looked at (its directory made unreadable): served on, one warning, not an error at every check', { skip: !onSqlite }, async (t) => {
  const lines: string[] = []
  let denied = false
  // root may look at any path whatever the modes: the file check's refusal is stood in for
  const deny = async (db: Database): Promise<void> => {
    const real = db.recheck!.bind(db)
    db.recheck = async () => {
      if (denied) throw new FileUncheckableError('the path cannot be looked at: EACCES: permission denied')
      return await real()
    }
  }
  const ctx = await build(t, { database: { recheckMs: 50 }, logging: { level: 'warn' } }, deny, { logStream: { write: (line: string) => { lines.push(line) } } })
  const a = await material(ctx, 'M-A')
  denied = true
  await sleep(400)
  const update = await ctx.app.inject({ method: 'POST', url: `/api/materials/${a}`, headers: ctx.auth(ctx.adminToken), payload: { description: 'while unchecked' } })
  t.equal(update.statusCode, 200, 'the open file serves on')
  t.equal((await ctx.app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200)
  const said = lines.filter((line) => line.includes("the database file's path cannot be checked"))
  t.equal(said.length, 1, 'one warning for the whole time')
  t.match(said[0], /"level":40/)
  t.notOk(lines.some((line) => line.includes('"level":50')), 'before: an error with a stack at every check, saying requests answer 503')
  denied = false
  await until(() => lines.some((line) => line.includes("the database file's path can be checked again")), 'the warning that it can be')
})

t.test('a mapped column renamed while serving: 503 naming it and not ready, then served again once it is back', { skip: !onSqlite }, async (t) => {
  const { lines, ctx, file, a } = await watchedFile(t)
  const headers = ctx.auth(ctx.adminToken)
  const other = new BetterSqlite3(file)
  t.teardown(() => other.close())
  // an upgrade of the picking system renames a column the mapping names
  other.exec('ALTER TABLE materials RENAME COLUMN name TO title')
  for (const [method, url, payload] of [['GET', '/api/materials'], ['GET', `/api/materials/${a}`], ['POST', `/api/materials/${a}`, { description: 'lost?' }], ['POST', '/api/materials', { materialNumber: 'M-NEW', name: 'new' }]] as const) {
    const res = await ctx.app.inject({ method, url, headers, payload })
    t.equal(res.statusCode, 503, `${method} ${url}: ${res.body}`)
    t.equal(res.json().code, 'SCHEMA_MISMATCH')
    t.match(res.json().message, /^A table or column the request needs is missing from the database \(renamed or dropped\).*check-config/)
    t.notMatch(res.body, /name"|title|SQLITE|no such/i, 'no table, column or driver words in the answer')
    t.equal(res.headers['retry-after'], '5')
  }
  const ready = await ctx.app.inject({ method: 'GET', url: '/health/ready' })
  t.equal(ready.statusCode, 503, 'readiness says so: a load balancer takes the instance out')
  t.notMatch(ready.body, /'name'|"name"|title/, 'public readiness names no column')
  await until(() => lines.some((line) => line.includes('the database does not match the configured mapping') && line.includes("column 'name'")), 'the check to name the column in the log')
  t.ok(lines.some((line) => line.includes('"level":50') && line.includes('a table or column of the mapping is gone') && /no such column|has no column named/.test(line)), 'the log says so, as an error, in the database\'s words')
  t.equal(other.prepare('SELECT description FROM materials WHERE id = ?').pluck().get(a), null, 'the write changed nothing')
  t.equal(other.prepare("SELECT COUNT(*) FROM materials WHERE material_number = 'M-NEW'").pluck().get(), 0, 'nor did the create')

  other.exec('ALTER TABLE materials RENAME COLUMN title TO name')
  await until(async () => (await ctx.app.inject({ method: 'GET', url: '/health/ready' })).statusCode === 200, 'readiness once the column is back')
  t.equal((await ctx.app.inject({ method: 'GET', url: `/api/materials/${a}`, headers })).json().name, 'M-A')
  t.equal((await ctx.app.inject({ method: 'POST', url: `/api/materials/${a}`, headers, payload: { description: 'now' } })).statusCode, 200)
  t.ok(lines.some((line) => line.includes('matches the configured mapping again')))
})

t.test('a trigger naming a table the database lacks: 503 for its writes, readiness untouched, the log says it is no mapped name', { skip: !onSqlite }, async (t) => {
  const { lines, ctx, file, a } = await watchedFile(t)
  const headers = ctx.auth(ctx.adminToken)
  const other = new BetterSqlite3(file)
  t.teardown(() => other.close())
  other.exec('CREATE TABLE audit_log (id INTEGER); CREATE TRIGGER materials_audit AFTER UPDATE ON materials BEGIN INSERT INTO audit_log VALUES (NEW.id); END; DROP TABLE audit_log')
  const res = await ctx.app.inject({ method: 'POST', url: `/api/materials/${a}`, headers, payload: { description: 'audited' } })
  t.equal(res.statusCode, 503, res.body)
  t.equal(res.json().code, 'SCHEMA_MISMATCH')
  t.notMatch(res.body, /audit/)
  await sleep(150)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200, 'every instance would fail the same: no reason to take this one out')
  t.ok(lines.some((line) => line.includes('the mapping does not name') && line.includes('audit_log')), 'the log names the table')
  t.equal((await ctx.app.inject({ method: 'GET', url: `/api/materials/${a}`, headers })).statusCode, 200, 'reads go on')
})

t.test('a database that became read-only: writes answer 503 saying so and change nothing, reads go on, writes work again once it is writable', { skip: !onSqlite }, async (t) => {
  const lines: string[] = []
  const ctx = await build(t, { logging: { level: 'warn' } }, undefined, { logStream: { write: (line: string) => { lines.push(line) } } })
  const id = await material(ctx, 'RO-1')
  const headers = ctx.auth(ctx.adminToken)
  // as a file system remounted read-only would, on the gateway's own connection (before: 500 INTERNAL_ERROR)
  await ctx.db.execute({ text: 'PRAGMA query_only = ON', params: [] })
  const refused = await ctx.app.inject({ method: 'POST', url: `/api/materials/${id}`, headers, payload: { name: 'changed' } })
  t.equal(refused.statusCode, 503, refused.body)
  t.match(refused.json(), { code: 'DATABASE_UNAVAILABLE', message: 'The database is read-only: it takes no changes until it is writable again' })
  t.ok(refused.headers['retry-after'], 'with Retry-After')
  const logged = jsonLines(lines.join('')).filter((l) => l.msg === refused.json().message)
  t.match(logged, [{ database: 'attempt to write a readonly database' }], 'the log has the database\'s words, without a stack')
  t.notOk(logged[0]?.err)
  const create = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'RO-2', name: 'x' } })
  t.equal(create.statusCode, 503)
  const read = await ctx.app.inject({ method: 'GET', url: `/api/materials/${id}`, headers })
  t.equal(read.statusCode, 200)
  t.equal(read.json().name, 'RO-1', 'unchanged')
  await ctx.db.execute({ text: 'PRAGMA query_only = OFF', params: [] })
  const again = await ctx.app.inject({ method: 'POST', url: `/api/materials/${id}`, headers, payload: { name: 'changed' } })
  t.equal(again.statusCode, 200, 'writable again: the next write goes through')
  t.equal(again.json().name, 'changed')
})

t.test('a full disk (SQLITE_FULL): writes answer 503 saying so and change nothing, reads and logins go on, writes work again once there is room', { skip: !onSqlite }, async (t) => {
  const lines: string[] = []
  const ctx = await build(t, { logging: { level: 'warn' } }, undefined, { logStream: { write: (line: string) => { lines.push(line) } } })
  const id = await material(ctx, 'FULL-1')
  const headers = ctx.auth(ctx.adminToken)
  const count = async () => (await ctx.app.inject({ method: 'GET', url: '/api/materials?count=true&limit=1', headers })).json().meta.total as number
  const before = await count()
  // as a disk without free space would, on the gateway's own connection: the file may grow no further (before: 500 INTERNAL_ERROR)
  const [{ page_count: pages }] = await ctx.db.query({ text: 'PRAGMA page_count', params: [] }) as Array<{ page_count: number }>
  await ctx.db.query({ text: `PRAGMA max_page_count = ${pages}`, params: [] })
  const big = 'x'.repeat(1900)
  let refused: Awaited<ReturnType<typeof ctx.app.inject>> | undefined
  let created = 0
  // the free pages left in the file take a few rows first
  for (let i = 0; i < 500 && refused === undefined; i++) {
    const res = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: `FULL-N${i}`, name: 'x', description: big } })
    if (res.statusCode === 201) created++
    else refused = res
  }
  t.equal(refused?.statusCode, 503, refused?.body ?? 'no create was refused')
  t.match(refused?.json(), { code: 'DATABASE_UNAVAILABLE', message: "The database's storage is full: it takes no changes until space is freed (the log says what is full)" })
  t.ok(refused?.headers['retry-after'], 'with Retry-After')
  t.match(jsonLines(lines.join('')).filter((l) => l.msg === refused?.json().message), [{ database: /full/ }], 'the log has the database\'s words')
  const written = await count()
  t.equal(written, before + created, 'the creates answered 201 are there, the refused one is not')
  const read = await ctx.app.inject({ method: 'GET', url: `/api/materials/${id}`, headers })
  t.equal(read.statusCode, 200, 'reads go on')
  const login = await ctx.app.inject({ method: 'POST', url: '/api/users/login', payload: { username: 'admin', password: ADMIN_PASSWORD } })
  t.equal(login.statusCode, 200, 'a login too: its last-login time is not recorded, its tokens are issued')
  await ctx.db.query({ text: 'PRAGMA max_page_count = 1073741823', params: [] })
  const again = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: 'FULL-AGAIN', name: 'x', description: big } })
  t.equal(again.statusCode, 201, 'room again: the next write goes through')
  t.equal(await count(), written + 1, 'the refused create left nothing behind')
})

t.test('a storage fault (the disk full) is logged as an error once, beside each refused request\'s warning, and the writes work again once there is room (before: warnings only, and journalctl -p err showed nothing)', async (t) => {
  const lines: Array<Record<string, unknown>> = []
  const ctx = await build(t, { logging: { level: 'warn' } }, undefined, { logStream: { write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>) } } })
  if (ctx.app.db.dialect !== 'sqlite') {
    t.pass('SQLite only')
    return
  }
  const { create, refused: res } = await fillDisk(ctx, 'FULL')
  let n = 1000
  t.equal(res.statusCode, 503, 'the disk is full')
  t.match(res.json(), { code: 'DATABASE_UNAVAILABLE', message: /storage is full/ })
  for (let i = 0; i < 3; i++) t.equal((await create(n++)).statusCode, 503)
  const errors = lines.filter((line) => line.level === 50)
  t.equal(errors.length, 1, 'one error for the fault')
  t.match(errors[0], { msg: /^The database's storage is full.*: requests that need it answer 503 until it is mended \(logged again every 10 minutes while it lasts\)$/, err: { message: /full/ } })
  t.equal(lines.filter((line) => line.level === 40 && /storage is full/.test(String(line.msg))).length, 4, 'and a warning per refused request')
  // space freed: the next write works, without a restart
  await ctx.app.db.query({ text: 'PRAGMA max_page_count = 1073741823', params: [] })
  t.equal((await create(n++)).statusCode, 201)
})

t.test('a storage fault shows in /health/ready for 10 minutes after the last request it refused, and the status stays ready (before: nothing there, only the log said so)', { skip: !onSqlite }, async (t) => {
  const ctx = await build(t, { logging: { level: 'fatal' } })
  const ready = async () => await ctx.app.inject({ method: 'GET', url: '/health/ready' })
  const healthy = await ready()
  t.equal(healthy.statusCode, 200)
  t.notOk('fault' in healthy.json().database, 'no fault before one happened')
  const { create, refused: res } = await fillDisk(ctx, 'SHOWN')
  t.equal(res.statusCode, 503, 'the disk is full')
  const before = Date.now()
  const faulty = await ready()
  t.equal(faulty.statusCode, 200, 'still ready: reads go on')
  t.match(faulty.json(), { status: 'ready', database: { ok: true, fault: { error: res.json().message } } })
  const seen = Date.parse(faulty.json().database.fault.lastSeenAt)
  t.ok(seen <= before && seen > before - 60_000, 'lastSeenAt is when the request was refused')
  // space freed: shown on until 10 minutes after the last refusal, then gone (the monotonic clock moved on)
  await ctx.app.db.query({ text: 'PRAGMA max_page_count = 1073741823', params: [] })
  t.equal((await create(1000)).statusCode, 201)
  t.ok('fault' in (await ready()).json().database, 'within the 10 minutes')
  const now = performance.now.bind(performance)
  performance.now = () => now() + 10 * 60_000 + 1000
  try {
    const later = await ready()
    t.equal(later.statusCode, 200)
    t.notOk('fault' in later.json().database, 'gone 10 minutes after the last refusal')
  } finally {
    performance.now = now
  }
})
