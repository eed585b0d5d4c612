// The README a newcomer copies from: its quick start's commands (curl, Python, PowerShell) and the
// curl walk-throughs for users and materials, run as written against a real gateway started the way
// the quick start says (the CLI's serve, the embedded demo, PORT and HOST from the environment).
//
// The demo keeps its files under data/ beside package.json (src/config.ts: demoDataDir), so the
// gateway runs from a copy of the package in a temporary directory (src, plugins, schemas,
// package.json, tsconfig.json; node_modules linked): the checkout gets no data/. It runs the
// TypeScript entry through tap's loader, as the other process tests do; `npm start` would run the
// same `serve` command from dist/ after building. Only loopback is used. Every process started here
// is stopped, and the last test checks that none is left.
import t from 'tap'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { has, packageCopy, Processes, processesNaming, README, refused, ROOT, type Done } from './helpers/documented.js'
import { freePort } from './helpers/ports.js'
import { fenced, section } from './helpers/markdown.js'
import { until } from './helpers/wait.js'
import { syncPoint } from '../src/http.js'

const DOCUMENTED_BASE = 'http://127.0.0.1:3000'
const PASSWORD_PLACEHOLDER = '<the printed password>'

const quickStart = section(README, 'Quick start')
const tryCurl = section(README, 'Try it with curl')

const processes = new Processes()

/** A documented block, pointed at the test's gateway: the reader changes the URL and the password alike. */
function pointed (code: string, base: string, password: string): string {
  const out = code.replaceAll(DOCUMENTED_BASE, base).replaceAll(PASSWORD_PLACEHOLDER, password)
  if (out.includes('127.0.0.1:3000')) throw new Error('a command still names 127.0.0.1:3000 in another form')
  return out
}

/** Runs sh blocks as one script (shared variables) and splits the output by block. */
async function runShell (dir: string, name: string, blocks: string[], base: string, password: string): Promise<{ outputs: string[], probes: Record<string, string>, done: Done }> {
  const script = [
    ...blocks.map((b, i) => `printf '\\n@@block ${i}\\n'\n${pointed(b, base, password)}`),
    "printf '\\n@@probes\\n'",
    'printf \'ACCESS=%s\\nETAG=%s\\nSINCE=%s\\n\' "${#ACCESS}" "$ETAG" "$SINCE"'
  ].join('\n')
  const file = join(dir, name)
  writeFileSync(file, script + '\n')
  const done = await processes.run('sh', [file], dir, {}, 60000)
  const [before, probeText = ''] = done.stdout.split('\n@@probes\n')
  const outputs: string[] = []
  before.split(/\n@@block \d+\n/).slice(1).forEach((o) => outputs.push(o))
  const probes = Object.fromEntries(probeText.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]))
  return { outputs, probes, done }
}

interface RequestLine { time: number, method: string, url: string, responseTimeMs: number }

/**
 * Whether `since` is the meta.serverTime of the first page of a sync walk that started after `after`:
 * the gateway's request log gives when that request was received and answered (serverTime is set
 * in between), so a time taken from the client's clock, or from a later page, does not pass.
 */
function keptFirstServerTime (log: string, since: string | undefined, after: number): boolean {
  if (!since || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(since)) return false
  const first = log.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as RequestLine & { msg: string })
    .find((l) => l.msg === 'request' && l.time >= after && l.method === 'GET' && /^\/api\/materials\?(.*&)?sort=modifiedAt/.test(l.url) && !l.url.includes('cursor='))
  if (!first) return false
  // serverTime is syncPoint of the moment the page's query began, between receiving and answering
  const ms = Date.parse(since)
  return ms >= Date.parse(syncPoint(first.time - first.responseTimeMs - 2, 1)) && ms <= Date.parse(syncPoint(first.time + 1, 1))
}

t.test('the quick start documents the start commands, PORT and HOST, and needs no jq', async (t) => {
  const sh = fenced(quickStart, 'sh').join('\n')
  t.match(sh, /^npm install && npm start\b/m, 'npm install && npm start')
  t.match(sh, /^npm install && npm test\b/m, 'npm install && npm test')
  t.match(sh, /^PORT=8080 HOST=0\.0\.0\.0 npm start\b/m, 'PORT=8080 HOST=0.0.0.0 npm start')
  t.notMatch(fenced(tryCurl, 'sh').join('\n'), /\bjq\b/, 'the curl commands need nothing beyond curl, sed, awk and sh')
  t.notMatch(README, /tee login\.json|login\.json/, 'no tokens written to files in the checkout')
  t.match(quickStart, /EBADENGINE/, 'the EBADENGINE warnings are explained')
})

// The gateway, started as `PORT=8080 HOST=0.0.0.0 npm start` says, on a free port and on a
// loopback address that is not the default 127.0.0.1, so that HOST is seen to be read (this test
// listens on no other interface).
const pkg = packageCopy('pg-readme-')
const dataBefore = existsSync(join(ROOT, 'data'))
const port = await freePort()
// after the first await: set before it, tap 21 ended the file's root test with the first subtest
t.teardown(async () => await processes.end(pkg))
const startedAt = Date.now()
const gateway = await processes.serve(pkg, { PORT: String(port), HOST: '127.0.0.2' })
const base = `http://127.0.0.2:${port}`
const out = (): string => gateway.out()
await until(() => (out().match(/"controller connected"/g) ?? []).length >= 2, 'both demo controllers connected', 15000)
const printed = /Created user "admin" with the generated password:\n\n\s+(\S+)\n/.exec(out())
const password = printed?.[1] ?? ''

t.test('the demo starts as documented', async (t) => {
  t.match(out(), `Server listening at ${base}`, 'PORT and HOST from the environment choose the address')
  t.ok(password, 'the generated admin password is printed once on the terminal, as the quick start shows')
  t.ok(existsSync(join(pkg, 'data', 'picking-gateway.db')), 'the demo database is under data/ beside package.json')
  t.equal(existsSync(join(ROOT, 'data')), dataBefore, 'the checkout got no data/ from this test')
  t.comment(`gateway ready ${Date.now() - startedAt} ms after the start`)
})

t.test('quick start: the curl commands', async (t) => {
  const blocks = fenced(tryCurl, 'sh')
  t.equal(blocks.length, 4, 'login, list, ETag, sync')
  const before = Date.now()
  const { outputs, probes, done } = await runShell(pkg, 'quickstart.sh', blocks, base, password)
  t.notOk(done.timedOut, 'the commands end by themselves (the sync loop terminates)')
  t.equal(done.code, 0, `sh exits 0${done.stderr ? `; stderr: ${done.stderr}` : ''}`)
  const [login = '', list = '', etag = '', sync = ''] = outputs
  t.equal(login.trim(), 'logged in', 'login gives a token')
  t.ok(Number(probes.ACCESS) > 100, 'the access token is in $ACCESS')

  const page = JSON.parse(list.trim()) as { data: Array<Record<string, unknown>>, meta: Record<string, unknown> }
  t.equal(page.data.length, 2, 'the list answers 200 with two materials')
  t.ok(page.data.every((m) => /valve/i.test(String(m.name)) && m.blocked === false), 'valves, not blocked')
  t.ok(Number(page.data[0].stockQuantity) >= Number(page.data[1].stockQuantity), 'most stock first')
  t.match(page.meta.next, /^\/api\/materials\?.*cursor=/, 'meta.next links the next page')
  const shown = [...(fenced(tryCurl, 'json')[0] ?? '').matchAll(/"materialNumber":"(M-\d+)"/g)].map((m) => m[1])
  t.same(page.data.map((m) => m.materialNumber), shown, 'the materials the README shows')

  t.equal(etag.trim(), '304', 'If-None-Match with the captured ETag answers 304')
  t.match(probes.ETAG, /^"[^"\s]+"$/, 'the ETag is captured with its quotes, without a carriage return')

  const lines = sync.trim().split('\n').map((l) => l.trim())
  t.same(lines.slice(0, -1), ['500', '500', '200'], 'three pages by meta.next: 1,200 rows, as the comment says')
  const next = /^next run: modifiedSince=(\S+)$/.exec(lines.at(-1) ?? '')
  t.ok(keptFirstServerTime(out(), next?.[1], before), `the first page's meta.serverTime becomes the next SINCE (${next?.[1]})`)
  t.equal(probes.SINCE, next?.[1], '$SINCE holds it')
})

const python = fenced(section(README, 'Python'), 'python')
const powershell = fenced(section(README, 'PowerShell'), 'powershell')
const usersWalk = fenced(section(README, 'Walk-through: authentication and users'), 'sh')
const materialsSection = section(README, 'Walk-through for ERP integrators: materials')
const materialsWalk = fenced(materialsSection, 'sh')

t.test('the examples to run are where the test looks for them', async (t) => {
  t.equal(python.length, 1, 'one Python block')
  t.equal(powershell.length, 1, 'one PowerShell block')
  t.same([usersWalk.length, materialsWalk.length], [1, 4], 'one block for users; list, sync, ETag and writes for materials')
})

t.test('quick start: the Python example', { skip: has('python3', ['-c', 'import requests']) ? false : 'python3 with requests is not installed here' }, async (t) => {
  const code = python
  const file = join(pkg, 'example.py')
  writeFileSync(file, pointed(code[0], base, password))
  const before = Date.now()
  const done = await processes.run('python3', [file], pkg, {}, 30000)
  t.equal(done.code, 0, `python3 exits 0${done.stderr ? `; stderr: ${done.stderr}` : ''}`)
  const lines = done.stdout.trim().split('\n')
  t.match(lines[0], /^M-103472 Solenoid valve/, 'the filtered list')
  t.match(lines[1], /^M-\d+ .*valve/i)
  t.equal(lines[2], '304', 'the conditional read')
  const sync = /^1200 rows; next run: modifiedSince = (\S+)$/.exec(lines[3] ?? '')
  t.ok(sync, 'the sync loop walks all 1,200 rows')
  t.ok(keptFirstServerTime(out(), sync?.[1], before), 'and keeps the first page\'s meta.serverTime')
  t.match(lines[4], /^200 \{'ack': True, 'seq': \d+\}$/, 'the station command is acknowledged')
})

t.test('quick start: the PowerShell example', { skip: has('pwsh', ['-NoProfile', '-Command', 'exit 0']) ? false : 'pwsh (PowerShell 7) is not installed here: the PowerShell example is not run' }, async (t) => {
  const code = powershell
  const file = join(pkg, 'example.ps1')
  writeFileSync(file, pointed(code[0], base, password))
  const before = Date.now()
  const done = await processes.run('pwsh', ['-NoProfile', '-NonInteractive', '-File', file], pkg, {}, 60000)
  t.equal(done.code, 0, `pwsh exits 0${done.stderr ? `; stderr: ${done.stderr}` : ''}`)
  t.match(done.stdout, /M-103472/, 'the filtered list')
  t.match(done.stdout, /^304$/m, 'the conditional read')
  const sync = /^1200 rows; next run: modifiedSince = (\S+)$/m.exec(done.stdout)
  t.ok(sync, 'the sync loop walks all 1,200 rows')
  // PowerShell 7 writes the [datetime] back with 7 fractional digits: compare at milliseconds
  t.ok(keptFirstServerTime(out(), sync?.[1].replace(/^(.*\.\d{3})\d*Z$/, '$1Z'), before), 'and keeps the first page\'s meta.serverTime')
  t.match(done.stdout, /True/, 'the station command is acknowledged')
})

t.test('the curl walk-throughs: users and materials', { skip: has('jq', ['--version']) ? false : 'jq is not installed here (the walk-throughs use it)' }, async (t) => {
  const users = usersWalk
  const materials = materialsWalk
  const before = Date.now()
  const { outputs, done } = await runShell(pkg, 'walkthrough.sh', [...users, ...materials], base, password)
  t.notOk(done.timedOut, 'the commands end by themselves')
  t.equal(done.code, 0, `sh exits 0${done.stderr ? `; stderr: ${done.stderr}` : ''}`)
  const [auth = '', list = '', sync = '', etag = '', writes = ''] = outputs

  t.match(auth, /\{"data":\[\{"id":1,"username":"admin"/, 'the access token lists the users')
  t.match(auth, /\{"accessToken":"eyJ[^"]+","expiresIn":900\}/, 'the refresh token gives a new access token')
  t.match(auth, /"username":"erp","type":"application"/, 'the ERP account is created')
  t.notMatch(auth, /password/i, 'no password in any answer')
  t.match(auth, /\{"token":"eyJ[^"]+"\}/, 'the ERP gets an application token')
  t.match(auth, /"id":2,"username":"erp"[^}]*"enabled":false/, 'the account is disabled')
  t.match(auth.trim(), /204$/, 'and deleted')

  const page = JSON.parse(list.trim()) as { data: Array<Record<string, unknown>> }
  const shown = /"materialNumber": "(M-\d+)"/.exec(fenced(materialsSection, 'json')[0] ?? '')
  t.equal(page.data[0]?.materialNumber, shown?.[1], 'the first material is the one the README shows')

  const syncLines = sync.trim().split('\n')
  const since = /^SINCE=(\S+)/m.exec(materials[1])?.[1] ?? ''
  t.ok(syncLines.slice(0, -1).every((l) => String((JSON.parse(l) as { modifiedAt: string }).modifiedAt) >= since), 'only rows modified since SINCE')
  t.comment(`walk-through sync: ${syncLines.length - 1} rows modified since ${since}`)
  const next = /^next run: modifiedSince=(\S+)$/.exec(syncLines.at(-1) ?? '')
  t.ok(keptFirstServerTime(out(), next?.[1], before), 'the loop ends and keeps the first page\'s meta.serverTime')

  t.equal(etag.trim(), '304', 'If-None-Match answers 304')
  // curl -s prints a body without a newline: the update's body and the 412 share a line
  const [id = '', updated = '', deleted = ''] = writes.trim().split('\n')
  t.match(id, /^\d+$/, 'the created material\'s id')
  t.match(updated, /"blocked":true,"blockReason":"Quality hold"/, 'the update with If-Match')
  t.match(updated, /\}412$/, 'the same ETag again: 412')
  t.equal(deleted, '204', 'the delete with the current ETag: 204')
})

t.test('every process started here ends; the checkout is left alone', async (t) => {
  t.same(await processes.stop(gateway), [0, null], 'the gateway exits 0 on SIGTERM')
  t.ok(await refused(port), 'nothing listens on its port any more')
  t.same(processes.running().map((child) => child.pid), [], 'every process started here has ended')
  t.same(processesNaming(pkg), [], 'no process names the temporary package directory')
  t.equal(existsSync(join(ROOT, 'data')), dataBefore, 'no data/ in the checkout')
})
