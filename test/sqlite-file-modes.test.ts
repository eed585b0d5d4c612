// picking-gateway serve on a SQLite file that becomes one its user may not write while it runs, and writable again:
// a real process under another user than root, which writes whatever the modes.
import { chmodSync, chownSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { ADMIN_PASSWORD } from './helpers/build.js'
import { HUNG_MS, START_MS, gatewaySetup, jsonLines, listening, startCommand } from './helpers/process.js'
import { nodeArgs } from './helpers/built.js'
import { until } from './helpers/wait.js'

t.setTimeout(4 * START_MS)

// root writes anyway: the gateway runs as nobody then (setpriv), without tap's coverage hook, which would write as nobody too
const ROOT_USER = process.getuid?.() === 0
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p))
const NOBODY = 65534

t.test('the database file replaced by one the gateway may not write: reads go on, writes 503, and writes work again once it is writable, without a restart', { skip: ROOT_USER && SETPRIV === undefined ? 'running as root without setpriv' : false }, async (t) => {
  const { env, dir } = await gatewaySetup(t)
  const file = join(dir, 'g.db')
  const config = join(dir, 'config.json')
  writeFileSync(config, JSON.stringify({ ...JSON.parse(readFileSync(config, 'utf8')), database: { url: `sqlite:${file}`, recheckMs: 50 } }))
  chmodSync(config, 0o644)
  if (ROOT_USER) {
    chownSync(dir, NOBODY, NOBODY)
    chownSync(file, NOBODY, NOBODY)
  }
  const node = [process.execPath, ...nodeArgs('src/cli.ts', { withCoverage: false }), 'serve']
  const run = ROOT_USER
    ? startCommand(t, SETPRIV!, ['--reuid=65534', '--regid=65534', '--clear-groups', ...node], env)
    : startCommand(t, node[0]!, node.slice(1), env)
  const base = `http://127.0.0.1:${await listening(run)}`
  const { accessToken } = await (await fetch(`${base}/api/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }) })).json() as { accessToken: string }
  const headers = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' }
  const created = await fetch(`${base}/api/materials`, { method: 'POST', headers, body: JSON.stringify({ materialNumber: 'RO-1', name: 'before' }) })
  const body = await created.text()
  t.equal(created.status, 201, created.status === 201 ? 'created' : body)
  const { id } = JSON.parse(body) as { id: number }
  const update = async (name: string) => {
    const res = await fetch(`${base}/api/materials/${id}`, { method: 'PATCH', headers, body: JSON.stringify({ name }) })
    return { status: res.status, body: await res.json() as Record<string, unknown> }
  }

  /** a consistent copy of the file, as a backup is, owned by the gateway's user */
  const backup = async (name: string, mode: number): Promise<string> => {
    const copy = `${file}.${name}`
    const source = new BetterSqlite3(file, { readonly: true })
    await source.backup(copy)
    source.close()
    if (ROOT_USER) chownSync(copy, NOBODY, NOBODY)
    chmodSync(copy, mode)
    return copy
  }
  let refused: Awaited<ReturnType<typeof update>> | undefined
  const readOnly = async (): Promise<void> => {
    await until(async () => {
      refused = await update('while read-only')
      return refused.status === 503
    }, 'writes to answer 503 on the read-only file')
  }

  // a backup moved in with the wrong mode: SQLite opens it read-only without a word, its new -wal and -shm as read-only
  renameSync(await backup('restored', 0o444), file)
  await readOnly()
  t.match(refused?.body, { code: 'DATABASE_UNAVAILABLE', message: 'The database is read-only: it takes no changes until it is writable again' })
  const read = await fetch(`${base}/api/materials/${id}`, { headers })
  t.equal(read.status, 200, 'reads go on')
  t.equal((await read.json() as { name: string }).name, 'before')
  await until(() => run.out().includes('may not write it'), 'the warning')

  // the operator corrects the modes: the file and the -wal and -shm made beside it
  for (const suffix of ['', '-wal', '-shm']) if (existsSync(`${file}${suffix}`)) chmodSync(`${file}${suffix}`, 0o600)
  await until(async () => (await update('writable again')).status === 200, 'writes to work again (before: 503 read-only until a restart: the connection SQLite had opened read-only stayed so)')
  // the log's lines are written at the end of the event loop's turn, maybe after the answer
  await until(() => run.out().includes('is writable again: opened'), 'the warning that it is writable again')
  const check = new BetterSqlite3(file, { readonly: true })
  t.teardown(() => check.close())
  t.equal(check.prepare('SELECT name FROM materials WHERE id = ?').pluck().get(id), 'writable again', 'the write is in the file')
  // the file check's warnings (beside them, the refused writes' storage fault is an error line of its own)
  const said = jsonLines(run.out()).filter((l) => l.plugin === 'database' && l.level === 40 && /may not write it|writable again/.test(l.msg))
  t.equal(said.length, 2, 'one warning each way, not one per check')
  t.match(said, [{ level: 40, msg: /may not write it/ }, { level: 40, msg: /writable again/ }])

  // read-only again, then a writable backup moved in instead: the -wal the read-only connection left, read-only
  // too, would make the new one read-only as well; the check after opens it anew (before: 503 until a restart)
  renameSync(await backup('restored-again', 0o444), file)
  await readOnly()
  renameSync(await backup('writable', 0o600), file)
  await until(async () => (await update('on the writable backup')).status === 200, 'writes to work on the writable file moved in')

  // the storage fault's own error line: once for both read-only spells, within its ten minutes
  t.equal(jsonLines(run.out()).filter((l) => l.level === 50 && /^The database is read-only/.test(String(l.msg))).length, 1, 'one error line for the read-only file')

  // ended promptly (not its exit code: under tap's loaders as nobody, a plain start and SIGTERM exits 1 too)
  run.child.kill('SIGTERM')
  t.ok(await run.exitWithin(HUNG_MS), 'SIGTERM ends it')
})
