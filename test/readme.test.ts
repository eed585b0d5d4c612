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
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createConnection, createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fenced, section } from './helpers/markdown.js'
import { until } from './helpers/wait.js'

const ROOT = join(import.meta.dirname, '..')
const README = readFileSync(join(ROOT, 'README.md'), 'utf8')
const DOCUMENTED_BASE = 'http://127.0.0.1:3000'
const PASSWORD_PLACEHOLDER = '<the printed password>'
/** a process still running this long after SIGTERM is hung */
const STOP_MS = 15000

const quickStart = section(README, 'Quick start')
const tryCurl = section(README, 'Try it with curl')

interface Done { code: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string, timedOut: boolean, pid: number | undefined }

/** Every process this file started, to prove at the end that none is left. */
const started: ChildProcess[] = []

/** The environment for the documented commands: no proxy between them and loopback. */
function clientEnv (): NodeJS.ProcessEnv {
  const env = { ...process.env }
  for (const key of Object.keys(env)) if (/^(https?|all|no)_proxy$/i.test(key)) delete env[key]
  return { ...env, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' }
}

/** Runs a command to its end (killed after timeoutMs). */
async function run (cmd: string, args: string[], timeoutMs: number, cwd: string): Promise<Done> {
  const child = spawn(cmd, args, { cwd, env: clientEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  started.push(child)
  let stdout = ''
  let stderr = ''
  child.stdout!.setEncoding('utf8').on('data', (c: string) => { stdout += c })
  child.stderr!.setEncoding('utf8').on('data', (c: string) => { stderr += c })
  let timedOut = false
  const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL') }, timeoutMs)
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (c, s) => resolve([c, s]))
  })
  clearTimeout(timer)
  return { code, signal, stdout, stderr, timedOut, pid: child.pid }
}

const has = (cmd: string, args: string[]): boolean => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

async function refused (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    socket.once('connect', () => { socket.destroy(); resolve(false) })
    socket.once('error', () => resolve(true))
  })
}

/** Processes whose command line names this directory (Linux: /proc), the test's own excluded. */
function processesNaming (dir: string): string[] {
  if (!existsSync('/proc/self/cmdline')) return []
  const found: string[] = []
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    if (Number(pid) === process.pid) continue
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')
      if (cmdline.includes(dir)) found.push(`${pid}: ${cmdline}`)
    } catch {}
  }
  return found
}

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
  const done = await run('sh', [file], 60000, dir)
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
    .find((l) => l.msg === 'request' && l.time >= after && l.method === 'GET' && /^\/api\/materials\?(.*&)?modifiedSince=/.test(l.url) && !l.url.includes('cursor='))
  if (!first) return false
  const ms = Date.parse(since)
  return ms >= first.time - first.responseTimeMs - 2 && ms <= first.time + 1
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

// The gateway, started as `PORT=8080 HOST=0.0.0.0 npm start` says, on a free port and on loopback
// (this test listens on no other interface).
const documented = /^PORT=(\d+) HOST=(\S+) npm start/m.exec(fenced(quickStart, 'sh').join('\n'))
const pkg = mkdtempSync(join(tmpdir(), 'pg-readme-'))
const dataBefore = existsSync(join(ROOT, 'data'))
for (const dir of ['src', 'plugins', 'schemas']) cpSync(join(ROOT, dir), join(pkg, dir), { recursive: true })
for (const file of ['package.json', 'tsconfig.json']) cpSync(join(ROOT, file), join(pkg, file))
symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'), 'dir')
const port = await freePort()
const env = clientEnv()
for (const key of ['PICKING_GATEWAY_CONFIG', 'DATABASE_URL', 'PICKING_GATEWAY_JWT_SECRET', 'PICKING_GATEWAY_ADMIN_PASSWORD', 'CREDENTIALS_DIRECTORY', 'LOG_LEVEL', 'HOST', 'PORT']) delete env[key]
const startedAt = Date.now()
const gateway = spawn(process.execPath, [...process.execArgv, join(pkg, 'src', 'cli.ts'), 'serve'], {
  cwd: pkg,
  env: { ...env, PORT: String(port), HOST: '127.0.0.1' },
  stdio: ['ignore', 'pipe', 'pipe']
})
started.push(gateway)
let out = ''
let err = ''
gateway.stdout!.setEncoding('utf8').on('data', (c: string) => { out += c })
gateway.stderr!.setEncoding('utf8').on('data', (c: string) => { err += c })
const gatewayExit = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => gateway.on('exit', (c, s) => resolve([c, s])))
t.teardown(async () => {
  for (const child of started) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await new Promise((resolve) => child.once('exit', resolve))
    }
  }
  rmSync(pkg, { recursive: true, force: true })
})
const base = `http://127.0.0.1:${port}`
await until(() => out.includes('picking-gateway ready') || gateway.exitCode !== null, 'the gateway to start', 60000)
if (!out.includes('picking-gateway ready')) throw new Error(`the gateway did not start:\n${out}\n${err}`)
await until(() => (out.match(/"controller connected"/g) ?? []).length >= 2, 'both demo controllers connected', 15000)
const printed = /Created user "admin" with the generated password:\n\n\s+(\S+)\n/.exec(out)
const password = printed?.[1] ?? ''

t.test('the demo starts as documented', async (t) => {
  t.ok(documented, 'the quick start shows PORT=<port> HOST=<address> npm start')
  t.match(out, `Server listening at ${base}`, 'PORT from the environment chooses the port')
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
  t.ok(keptFirstServerTime(out, next?.[1], before), `the first page's meta.serverTime becomes the next SINCE (${next?.[1]})`)
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
  const done = await run('python3', [file], 30000, pkg)
  t.equal(done.code, 0, `python3 exits 0${done.stderr ? `; stderr: ${done.stderr}` : ''}`)
  const lines = done.stdout.trim().split('\n')
  t.match(lines[0], /^M-103472 Solenoid valve/, 'the filtered list')
  t.match(lines[1], /^M-\d+ .*valve/i)
  t.equal(lines[2], '304', 'the conditional read')
  const sync = /^1200 rows; next run: modifiedSince = (\S+)$/.exec(lines[3] ?? '')
  t.ok(sync, 'the sync loop walks all 1,200 rows')
  t.ok(keptFirstServerTime(out, sync?.[1], before), 'and keeps the first page\'s meta.serverTime')
  t.match(lines[4], /^200 \{'ack': True, 'seq': \d+\}$/, 'the station command is acknowledged')
})

t.test('quick start: the PowerShell example', { skip: has('pwsh', ['-NoProfile', '-Command', 'exit 0']) ? false : 'pwsh (PowerShell 7) is not installed here: the PowerShell example is not run' }, async (t) => {
  const code = powershell
  const file = join(pkg, 'example.ps1')
  writeFileSync(file, pointed(code[0], base, password))
  const before = Date.now()
  const done = await run('pwsh', ['-NoProfile', '-NonInteractive', '-File', file], 60000, pkg)
  t.equal(done.code, 0, `pwsh exits 0${done.stderr ? `; stderr: ${done.stderr}` : ''}`)
  t.match(done.stdout, /M-103472/, 'the filtered list')
  t.match(done.stdout, /^304$/m, 'the conditional read')
  const sync = /^1200 rows; next run: modifiedSince = (\S+)$/m.exec(done.stdout)
  t.ok(sync, 'the sync loop walks all 1,200 rows')
  // PowerShell 7 writes the [datetime] back with 7 fractional digits: compare at milliseconds
  t.ok(keptFirstServerTime(out, sync?.[1].replace(/^(.*\.\d{3})\d*Z$/, '$1Z'), before), 'and keeps the first page\'s meta.serverTime')
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
  t.ok(keptFirstServerTime(out, next?.[1], before), 'the loop ends and keeps the first page\'s meta.serverTime')

  t.equal(etag.trim(), '304', 'If-None-Match answers 304')
  // curl -s prints a body without a newline: the update's body and the 412 share a line
  const [id = '', updated = '', deleted = ''] = writes.trim().split('\n')
  t.match(id, /^\d+$/, 'the created material\'s id')
  t.match(updated, /"blocked":true,"blockReason":"Quality hold"/, 'the update with If-Match')
  t.match(updated, /\}412$/, 'the same ETag again: 412')
  t.equal(deleted, '204', 'the delete with the current ETag: 204')
})

t.test('every process started here ends; the checkout is left alone', async (t) => {
  gateway.kill('SIGTERM')
  const exit = await Promise.race([gatewayExit, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), STOP_MS).unref())])
  t.same(exit, [0, null], 'the gateway exits 0 on SIGTERM')
  t.ok(await refused(port), 'nothing listens on its port any more')
  for (const child of started) t.ok(child.exitCode !== null || child.signalCode !== null, `process ${child.pid} has ended`)
  t.same(processesNaming(pkg), [], 'no process names the temporary package directory')
  t.equal(existsSync(join(ROOT, 'data')), dataBefore, 'no data/ in the checkout')
})
