// npm run bench: the gateway against naive baselines in the same run, as ratios against the goals of issue 9; exit code 1 when a goal is missed.
import { randomBytes } from 'node:crypto'
import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { createPasswords, DEFAULT_ARGON2 } from '../src/auth/passwords.js'
import { openDatabase, referenceMappings } from '../src/db/index.js'
import type { Database } from '../src/db/types.js'
import {
  fetchWithin, fillDatabase, fillSqliteInWorker, installCleanup, loadRound, median, pacedRound, percentiles, removeTempDir, round2, startHelper, startServer, table, timeIt, trackTempDir,
  unitFileEnvironment, type Request, type Round, type Server
} from './harness.js'
import type { LoginLoadResult } from './login-load.js'

const int = (name: string, def: number) => {
  const v = process.env[name]
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : def
}

/** Round lengths fit the whole run in about 6 minutes on 2 cores; the BENCH_* variables shorten it for a smoke test. */
const settings = {
  // 50 connections: enough to keep one server core busy without the client (autocannon, one core) saturating first
  connections: int('BENCH_CONNECTIONS', 50),
  roundSeconds: int('BENCH_ROUND_SECONDS', 4),
  warmupSeconds: int('BENCH_WARMUP_SECONDS', 2),
  // five rounds a side: the median of five shrugs off two rounds that another process on the machine disturbed
  rounds: int('BENCH_ROUNDS', 5),
  rows: int('BENCH_ROWS', 100_000),
  /** list load after each walk of the memory rounds: three rounds make the minute */
  memoryLoadSeconds: int('BENCH_MEMORY_LOAD_SECONDS', 20),
  memoryRounds: 3,
  loginsPerSecond: 20,
  /**
   * Goal 5 loads the list at a steady rate well below what the server can do: at saturation p99 is
   * the length of the queue, which any extra work stretches, not the latency a client sees.
   */
  loginListRate: int('BENCH_LOGIN_LIST_RATE', 200),
  loginListConnections: 10,
  /** p99 of one round at 200 req/s is its 20th-slowest request at 10 s (8th at 4 s, which one stall of the machine decides) */
  loginRoundSeconds: int('BENCH_LOGIN_ROUND_SECONDS', 10),
  walkLimit: 1000
}

/**
 * BENCH_ONLY=1,2,3,4,5,6,7 runs only those goals (4 and 6 share a phase); a partial run says so and
 * cannot pass as a whole: the README's figures come from full runs.
 */
const only = (process.env.BENCH_ONLY ?? '').split(',').map((g) => g.trim()).filter((g) => g !== '')
if (only.some((g) => !/^[1-7]$/.test(g))) {
  console.error(`BENCH_ONLY: expected goal numbers 1 to 7 separated by commas, got ${JSON.stringify(process.env.BENCH_ONLY)}`)
  process.exit(2)
}
const runs = (goal: string): boolean => only.length === 0 || only.includes(goal)

const here = fileURLToPath(new URL('.', import.meta.url))
const GATEWAY = join(here, '..', 'src', 'cli.js')
const NAIVE = join(here, 'naive-server.js')
const NAIVE_MSSQL = join(here, 'naive-mssql.js')
const LOGIN_LOAD = join(here, 'login-load.js')
const quiet = { info () {}, warn () {}, error () {} }
const mib = (n: number | undefined) => n === undefined ? NaN : Math.round(n / 1048576)

interface Goal {
  id: string
  figure: string
  gateway: string
  baseline: string
  value: number | null
  goal: string
  /** null: not measured here */
  pass: boolean | null
  /** a figure for the record, beside a goal: never fails the run */
  info?: boolean
  note?: string
}

const goals: Goal[] = []
const rounds: Round[] = []
const info: Record<string, unknown> = {}

function record (round: Round): Round {
  rounds.push(round)
  const odd = round.expectedShare < 1 ? `  statuses ${JSON.stringify(round.statuses)} errors ${round.errors}` : ''
  console.log(`  ${round.phase.padEnd(16)} ${round.side.padEnd(8)} ${round.round.padEnd(7)} ${String(round.rps).padStart(6)} req/s  p99 ${String(round.p99).padStart(4)} ms  server cpu ${round.serverCpu ?? '?'}%  client cpu ${round.clientCpu}%${odd}`)
  return round
}

/** A goal is only as good as its responses: anything but the expected status in a measured round fails it. */
function clean (rs: Round[]): string | undefined {
  const bad = rs.filter((r) => r.expectedShare < 0.999 || r.errors > 0)
  return bad.length === 0 ? undefined : `unexpected responses: ${bad.map((r) => `${r.side} ${r.round} ${JSON.stringify(r.statuses)} errors ${r.errors}`).join('; ')}`
}

interface Side { server: Server, requests: Request[], expect: number }

/** Warm-up each, then rounds alternating A B B A A B…, so drift on a shared machine hits both sides alike. */
async function compare (phase: string, gateway: Side, baseline: Side): Promise<{ gateway: Round[], baseline: Round[] }> {
  const run = (side: Side, name: string, round: string, seconds: number) =>
    loadRound(side.server, side.requests, { connections: settings.connections, seconds, expect: side.expect }, { phase, side: name, round })
  record(await run(gateway, 'gateway', 'warm-up', settings.warmupSeconds))
  record(await run(baseline, 'naive', 'warm-up', settings.warmupSeconds))
  const out = { gateway: [] as Round[], baseline: [] as Round[] }
  for (let i = 1; i <= settings.rounds; i++) {
    const order = i % 2 === 1 ? ['gateway', 'naive'] as const : ['naive', 'gateway'] as const
    for (const name of order) {
      const side = name === 'gateway' ? gateway : baseline
      const r = record(await run(side, name, String(i), settings.roundSeconds))
      ;(name === 'gateway' ? out.gateway : out.baseline).push(r)
    }
  }
  return out
}

function ratioGoal (id: string, figure: string, result: { gateway: Round[], baseline: Round[] }, min: number, stretch?: number, info = false): void {
  const gw = median(result.gateway.map((r) => r.rps))
  const base = median(result.baseline.map((r) => r.rps))
  const ratio = round2(gw / base)
  const note = clean([...result.gateway, ...result.baseline])
  goals.push({
    id,
    figure,
    gateway: `${gw} req/s, p99 ${median(result.gateway.map((r) => r.p99))} ms`,
    baseline: `${base} req/s, p99 ${median(result.baseline.map((r) => r.p99))} ms`,
    value: ratio,
    goal: info ? 'for the record' : `>= ${min}x${stretch ? ` (stretch ${stretch}x${ratio >= stretch ? ' met' : ' not met'})` : ''}`,
    pass: info ? null : note === undefined && ratio >= min,
    info,
    note
  })
}

const json = (body: unknown, headers: Record<string, string>) => ({ headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) })

async function login (base: string, password: string): Promise<string> {
  const res = await fetchWithin(`${base}/api/users/login`, { method: 'POST', ...json({ username: 'admin', password }, {}) })
  if (res.status !== 200) throw new Error(`login: ${res.status} ${res.text}`)
  return (JSON.parse(res.text) as { accessToken: string }).accessToken
}

async function getJson (base: string, path: string, headers: Record<string, string>): Promise<{ status: number, etag: string | null, body: any }> {
  const res = await fetchWithin(base + path, { headers })
  return { status: res.status, etag: res.headers.get('etag'), body: res.text === '' ? undefined : JSON.parse(res.text) }
}

/** A database the gateway and the baselines can each get a copy of. */
interface Backend {
  name: string
  /** the naive server's script */
  naive: string
  /** builds the data once */
  prepare (adminPassword: string): Promise<void>
  /** a fresh copy of the data for one server: the gateway's and the naive server's environment */
  copy (tag: string): { gateway: Record<string, string>, naive: Record<string, string> }
}

/** The reference tables, the admin and the data, built by the gateway's own code: no demo seed, our count instead. */
async function fill (db: Database, adminPassword: string): Promise<void> {
  await fillDatabase(db, adminPassword, settings.rows)
}

function sqliteBackend (dir: string): Backend {
  const master = join(dir, 'master.db')
  return {
    name: 'SQLite',
    naive: NAIVE,
    async prepare (adminPassword) {
      // in a worker thread, so that a stop is prompt while it builds the rows (the worker closes the file, checkpointing the WAL)
      await fillSqliteInWorker(master, adminPassword, settings.rows)
    },
    copy (tag) {
      const file = join(dir, `${tag}.db`)
      copyFileSync(master, file)
      if (existsSync(`${master}-wal`)) copyFileSync(`${master}-wal`, `${file}-wal`)
      return { gateway: { DATABASE_URL: `sqlite:${file}` }, naive: { DATABASE_FILE: file } }
    }
  }
}

/**
 * The database of MSSQL_TEST_URL, taken as the tests take it (GATEWAY_TEST_DB=mssql): the reference
 * tables are dropped and built again by the gateway's own code. Goal 7 only reads, so the gateway
 * and the naive server share the one database.
 */
function mssqlBackend (url: string): Backend {
  return {
    name: 'SQL Server',
    naive: NAIVE_MSSQL,
    async prepare (adminPassword) {
      const db = openDatabase(url, { create: true, connectTimeoutMs: 15_000, requestTimeoutMs: 600_000, logger: quiet })
      try {
        for (const m of Object.values(referenceMappings)) {
          await db.execute({ text: `DROP TABLE IF EXISTS [${m.schema ?? 'dbo'}].[${m.table}]`, params: [] })
        }
        await fill(db, adminPassword)
      } finally {
        await db.close()
      }
    },
    copy: () => ({ gateway: { DATABASE_URL: url }, naive: { MSSQL_URL: url } })
  }
}

interface Context {
  dir: string
  secret: string
  adminPassword: string
  /** PICKING_GATEWAY_CONFIG: production defaults, except the per-address login limit that 20 logins/s from one address would hit */
  configFile: string
}

/** The Environment= settings of systemd/picking-gateway.service, but the configuration file's path. */
function unitEnvironment (): Record<string, string> {
  const env = unitFileEnvironment(readFileSync(join(here, '..', '..', 'systemd', 'picking-gateway.service'), 'utf8'))
  delete env.PICKING_GATEWAY_CONFIG
  return env
}

function gatewayEnv (ctx: Context, db: Record<string, string>): Record<string, string> {
  // LOG_LEVEL info: production logs every request, so the measurement includes it (to a file)
  const experiment = process.env.BENCH_GATEWAY_NODE_OPTIONS
  return {
    // what the production unit sets for the process (NODE_ENV, malloc settings)
    ...unitEnvironment(),
    ...db,
    PICKING_GATEWAY_CONFIG: ctx.configFile,
    PICKING_GATEWAY_JWT_SECRET: ctx.secret,
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
    // BENCH_GATEWAY_NODE_OPTIONS: Node flags for the gateway alone, to try one out against the same baseline
    ...(experiment === undefined ? {} : { NODE_OPTIONS: experiment })
  }
}

async function startPair (ctx: Context, backend: Backend): Promise<{ gateway: Server, naive: Server }> {
  const gw = backend.copy('gateway')
  const nv = backend.copy('naive')
  const gateway = await startServer('gateway', GATEWAY, ['serve'], gatewayEnv(ctx, gw.gateway), join(ctx.dir, 'gateway.log'))
  try {
    const naive = await startServer('naive', backend.naive, [], { ...nv.naive, PICKING_GATEWAY_JWT_SECRET: ctx.secret, NODE_ENV: 'production', EXIT_ON_STDIN_END: '1' }, join(ctx.dir, 'naive.log'))
    return { gateway, naive }
  } catch (err) {
    await gateway.stop()
    throw err
  }
}

async function throughputPhases (ctx: Context, gateway: Server, naive: Server): Promise<void> {
  const token = await login(gateway.base, ctx.adminPassword)
  const auth = { authorization: `Bearer ${token}` }
  for (const s of [gateway, naive]) {
    const probe = await getJson(s.base, '/api/materials?limit=100', auth)
    if (probe.status !== 200 || probe.body.data.length !== 100) throw new Error(`${s.name}: GET /api/materials?limit=100 answered ${probe.status} with the gateway's token`)
  }

  // Latency one request at a time (no load): the figures the README quotes.
  const sequential = async (s: Server, path: string, n: number) => {
    for (let i = 0; i < 30; i++) await getJson(s.base, path, auth)
    const samples: number[] = []
    for (let i = 0; i < n; i++) samples.push(await timeIt(() => getJson(s.base, path, auth)))
    return percentiles(samples)
  }
  info.list100SequentialMs = { gateway: await sequential(gateway, '/api/materials?limit=100', 300), naive: await sequential(naive, '/api/materials?limit=100', 300) }
  info.list100FilteredCountSequentialMs = { gateway: await sequential(gateway, '/api/materials?limit=100&name=%5Blike%5Dvalve&count=true', 50) }

  const get = (path: string): Request[] => [{ method: 'GET', path, headers: auth }]
  /** Requests that differ one from the next: the n-th (from 0) is `make(n)`; each side gets its own sequence, the same one. */
  const sequence = (method: 'GET' | 'POST', make: (n: number) => { path: string, body?: string, headers?: Record<string, string> }): Request[] => {
    let n = 0
    return [{ method, path: '/', headers: auth, setupRequest: (req) => ({ ...req, ...make(n++) }) }]
  }
  // 900 pages of 100 in turn: more than the gateway's page cache holds, so every request runs its query
  const page = (base: string, query: (after: number) => string) => (n: number) => `${base}?${query((n % 900) * 100)}`
  const pages = (path: (n: number) => string): Request[] => sequence('GET', (n) => ({ path: path(n) }))
  const uncachedPage = page('/api/materials', (after) => `limit=100&sort=id&id=%5Bgt%5D${after}`)
  const uncachedPages = (): Request[] => pages(uncachedPage)

  if (runs('1')) {
    console.log('\n1. GET /api/materials?limit=100')
    ratioGoal('1', 'list limit=100, req/s', await compare('list', { server: gateway, requests: get('/api/materials?limit=100'), expect: 200 }, { server: naive, requests: get('/api/materials'), expect: 200 }), 1.0, 1.3)
    // The same page size, but another page on every request: what a list costs when the page
    // cache cannot answer, for the record.
    console.log('\n1u. GET /api/materials?limit=100, another page each time (no cache hit)')
    ratioGoal('1u', 'list limit=100, another page each time, req/s', await compare('list-uncached',
      { server: gateway, requests: uncachedPages(), expect: 200 },
      { server: naive, requests: pages(page('/api/materials', (after) => `after=${after}`)), expect: 200 }), 1.0, undefined, true)
  }

  if (runs('2')) {
    console.log('\n2. conditional GET answered 304')
    const first = await getJson(gateway.base, '/api/materials?limit=100', auth)
    if (first.etag === null) throw new Error('GET /api/materials?limit=100 answered without an ETag')
    const conditional = [{ method: 'GET' as const, path: '/api/materials?limit=100', headers: { ...auth, 'if-none-match': first.etag } }]
    ratioGoal('2', '304 for If-None-Match, req/s', await compare('not-modified', { server: gateway, requests: conditional, expect: 304 }, { server: naive, requests: get('/api/not-modified'), expect: 304 }), 0.3)
  }

  if (runs('5')) {
    console.log(`\n5. list p99 at ${settings.loginListRate} req/s with ${settings.loginsPerSecond} logins/s in the background`)
    // the list a page cache cannot answer, so that the logins compete with real work
    await loginInterference(ctx, gateway, uncachedPage, auth)
  }

  // Writes change the data, so they come after every list figure. Both sides get the same request sequence.
  if (!runs('3')) return
  console.log('\n3. read by id, create, update')
  const byId = (): Request[] => sequence('GET', (n) => ({ path: `/api/materials/${(n % 1000) + 1}` }))
  const create = (): Request[] => sequence('POST', (n) => ({
    path: '/api/materials',
    ...json({ materialNumber: `BENCH-${n + 1}`, name: `Bench material ${n + 1}`, unit: 'pcs', weight: (n + 1) % 100, description: 'created by npm run bench' }, auth)
  }))
  const update = (): Request[] => sequence('POST', (n) => ({ path: `/api/materials/${((n + 1) % 1000) + 1}`, ...json({ name: `Bench update ${n + 1}`, weight: (n + 1) % 100 }, auth) }))
  ratioGoal('3a', 'read by id, req/s', await compare('read-by-id', { server: gateway, requests: byId(), expect: 200 }, { server: naive, requests: byId(), expect: 200 }), 0.9)
  ratioGoal('3b', 'create, req/s', await compare('create', { server: gateway, requests: create(), expect: 201 }, { server: naive, requests: create(), expect: 201 }), 0.9)
  ratioGoal('3c', 'update, req/s', await compare('update', { server: gateway, requests: update(), expect: 200 }, { server: naive, requests: update(), expect: 200 }), 0.9)
}

async function loginInterference (ctx: Context, gateway: Server, list: (n: number) => string, auth: Record<string, string>): Promise<void> {
  const opts = { connections: settings.loginListConnections, seconds: settings.loginRoundSeconds, expect: 200, rate: settings.loginListRate }
  const loginStatuses: Record<string, number> = {}
  const loginMs: number[] = []
  let loginSeconds = 0
  const withLogins = async (round: string): Promise<Round> => {
    // from a process of their own, as from another client: answering them is not the list client's work
    const logins = await startHelper('login-load', LOGIN_LOAD, {
      GATEWAY_URL: gateway.base, LOGIN_USERNAME: 'admin', LOGIN_PASSWORD: ctx.adminPassword, LOGINS_PER_SECOND: String(settings.loginsPerSecond)
    })
    try {
      return record(await pacedRound(gateway, list, auth, opts, { phase: 'list+logins', side: 'gateway', round }))
    } finally {
      // the logins in flight are waited for: none is left to disturb the next quiet round
      const seen = JSON.parse(await logins.stop()) as LoginLoadResult
      for (const [status, n] of Object.entries(seen.statuses)) loginStatuses[status] = (loginStatuses[status] ?? 0) + n
      loginMs.push(...seen.ms)
      loginSeconds += seen.seconds
    }
  }
  const quietRound = async (round: string) => record(await pacedRound(gateway, list, auth, opts, { phase: 'list-quiet', side: 'gateway', round }))
  record(await pacedRound(gateway, list, auth, { ...opts, seconds: settings.warmupSeconds }, { phase: 'list-quiet', side: 'gateway', round: 'warm-up' }))
  const quiet: Round[] = []
  const busy: Round[] = []
  for (let i = 1; i <= settings.rounds; i++) {
    if (i % 2 === 1) {
      quiet.push(await quietRound(String(i)))
      busy.push(await withLogins(String(i)))
    } else {
      busy.push(await withLogins(String(i)))
      quiet.push(await quietRound(String(i)))
    }
  }
  const p99Quiet = median(quiet.map((r) => r.p99))
  const p99Busy = median(busy.map((r) => r.p99))
  const ratio = round2(p99Busy / p99Quiet)
  const ok = loginStatuses['200'] ?? 0
  const attempted = Object.values(loginStatuses).reduce((a, b) => a + b, 0)
  const note = clean([...quiet, ...busy]) ?? (ok !== attempted ? `logins: ${JSON.stringify(loginStatuses)}` : undefined)
  info.backgroundLogins = { statuses: loginStatuses, perSecond: round2(ok / loginSeconds), latencyMs: percentiles(loginMs) }
  goals.push({
    id: '5',
    figure: `list p99 with ${settings.loginsPerSecond} logins/s / without`,
    gateway: `p99 ${p99Busy} ms with (${round2(ok / loginSeconds)} logins/s done), ${median(busy.map((r) => r.rps))} req/s`,
    baseline: `p99 ${p99Quiet} ms without, ${median(quiet.map((r) => r.rps))} req/s`,
    value: ratio,
    goal: '<= 1.25x',
    pass: note === undefined && ratio <= 1.25,
    note
  })
}

const GOAL_7 = 'SQL Server list limit=100: gateway CPU per request less the naive server (same driver, same page), ms'

/**
 * Goal 7: the polled list on SQL Server, where every request runs its page query (there is no
 * commit counter to cache by). The database server and the network set the request rate there,
 * so the figure is CPU: the gateway's CPU time per request less the naive server's, which runs
 * the same page through the same driver. What is left is what the gateway's own layers cost.
 */
async function sqlServerList (ctx: Context, gateway: Server, naive: Server): Promise<void> {
  const auth = { authorization: `Bearer ${await login(gateway.base, ctx.adminPassword)}` }
  for (const s of [gateway, naive]) {
    const probe = await getJson(s.base, '/api/materials?limit=100', auth)
    if (probe.status !== 200 || probe.body.data.length !== 100) throw new Error(`${s.name}: GET /api/materials?limit=100 answered ${probe.status} on SQL Server`)
  }
  console.log('\n7. GET /api/materials?limit=100 on SQL Server: CPU per request')
  const get = (path: string): Request[] => [{ method: 'GET', path, headers: auth }]
  const result = await compare('mssql-list', { server: gateway, requests: get('/api/materials?limit=100'), expect: 200 }, { server: naive, requests: get('/api/materials'), expect: 200 })
  /** CPU milliseconds per request of each round, its median */
  const cpuMs = (rs: Round[]) => median(rs.map((r) => r.serverCpu === null || r.rps === 0 ? NaN : r.serverCpu * 10 / r.rps))
  const gw = cpuMs(result.gateway)
  const base = cpuMs(result.baseline)
  const extra = Math.round((gw - base) * 1000) / 1000
  const note = clean([...result.gateway, ...result.baseline]) ?? (Number.isNaN(extra) ? 'no CPU figures: they come from Linux /proc' : undefined)
  const side = (ms: number, rs: Round[]) => `${Math.round(ms * 1000) / 1000} ms CPU per request, ${median(rs.map((r) => r.rps))} req/s`
  goals.push({
    id: '7',
    figure: GOAL_7,
    gateway: side(gw, result.gateway),
    baseline: side(base, result.baseline),
    value: Number.isNaN(extra) ? null : extra,
    goal: '<= 0.2 ms',
    pass: note === undefined && extra <= 0.2,
    note
  })
}

interface Walk { rows: number, pages: Array<{ ms: number, rows: number }>, totalMs: number }

/** A full incremental sync by meta.next, timing each page to its last byte. */
async function walk (base: string, headers: Record<string, string>): Promise<Walk> {
  let next: string | undefined = `/api/materials?limit=${settings.walkLimit}&sort=modifiedAt`
  const pages: Walk['pages'] = []
  let rows = 0
  const t0 = performance.now()
  while (next !== undefined) {
    const p0 = performance.now()
    const res = await fetchWithin(next.startsWith('http') ? next : base + next, { headers })
    const text = res.text
    const ms = performance.now() - p0
    if (res.status !== 200) throw new Error(`walk: ${next} answered ${res.status}: ${text.slice(0, 200)}`)
    const page = JSON.parse(text) as { data: unknown[], meta: { next?: string | null } }
    pages.push({ ms, rows: page.data.length })
    rows += page.data.length
    next = page.meta.next ?? undefined
  }
  return { rows, pages, totalMs: round2(performance.now() - t0) }
}

/** Goals 4 and 6 on a fresh gateway process: a walk plus list load per round, RSS after each. */
async function memoryAndWalk (ctx: Context, backend: Backend): Promise<void> {
  const gateway = await startServer('gateway', GATEWAY, ['serve'], gatewayEnv(ctx, backend.copy('walk').gateway), join(ctx.dir, 'gateway-walk.log'))
  try {
    const auth = { authorization: `Bearer ${await login(gateway.base, ctx.adminPassword)}` }
    // varied lists, so caches keyed by URL fill up as they would in production
    const words = ['valve', 'bolt', 'nut', 'bearing', 'cable', 'glove', 'hose', 'ring', 'fuse', 'filter', 'tape', 'grease']
    let n = 0
    const variedList: Request[] = [{
      method: 'GET',
      path: '/api/materials?limit=100',
      headers: auth,
      setupRequest: (req) => {
        const k = n++
        const variant = k % 4 === 0
          ? `limit=100`
          : k % 4 === 1
            ? `limit=${10 + (k % 91)}&sort=-modifiedAt`
            : k % 4 === 2 ? `limit=100&name=%5Blike%5D${words[k % words.length]}` : `limit=50&minStock=%5Bgte%5D${k % 300}`
        return { ...req, path: `/api/materials?${variant}` }
      }
    }]
    const walks: Walk[] = []
    const rss: number[] = []
    info.gatewayRssAtStartMiB = mib(gateway.rss())
    for (let i = 1; i <= settings.memoryRounds; i++) {
      const w = await walk(gateway.base, auth)
      walks.push(w)
      console.log(`  walk ${i}: ${w.rows} rows, ${w.pages.length} pages, ${w.totalMs} ms, RSS ${mib(gateway.rss())} MiB`)
      record(await loadRound(gateway, variedList, { connections: settings.connections, seconds: settings.memoryLoadSeconds, expect: 200 }, { phase: 'memory-list', side: 'gateway', round: String(i) }))
      rss.push(gateway.rss() ?? NaN)
      console.log(`  RSS after round ${i}: ${mib(rss[i - 1])} MiB`)
    }
    info.walks = walks.map((w) => ({ rows: w.rows, pages: w.pages.length, totalMs: w.totalMs }))
    const memoryNote = clean(rounds.filter((r) => r.phase === 'memory-list'))
    const last = rss[rss.length - 1]
    goals.push({
      id: '4a',
      figure: `gateway RSS after ${settings.memoryRounds} x (walk + ${settings.memoryLoadSeconds} s list load)`,
      gateway: `${mib(last)} MiB`,
      baseline: '-',
      value: mib(last),
      goal: '<= 150 MiB',
      pass: memoryNote === undefined && mib(last) <= 150,
      note: memoryNote
    })
    goals.push({
      id: '4b',
      figure: 'RSS growth, last round / first',
      gateway: rss.map((b) => `${mib(b)}`).join(' -> ') + ' MiB',
      baseline: '-',
      value: round2(last / rss[0]),
      goal: '<= 1.05x',
      pass: last <= rss[0] * 1.05
    })

    // Goal 6: per page position the median over the walks, then the median of the first 5 full pages against the last 5.
    const expected = settings.rows
    const full = Math.min(...walks.map((w) => w.pages.filter((p) => p.rows === settings.walkLimit).length))
    const perPage = Array.from({ length: full }, (_, i) => median(walks.map((w) => w.pages[i].ms)))
    // each position's time in the report (and each walk's, 0.1 ms), so that what moves the ratio can be seen: a
    // scavenge falls on every third page of 1,000 rows with 8 MiB semi-spaces (README, Performance)
    info.walkPageMs = { median: perPage.map((ms) => Math.round(ms * 10) / 10), walks: walks.map((w) => w.pages.map((p) => Math.round(p.ms * 10) / 10)) }
    const firstMs = round2(median(perPage.slice(0, 5)))
    const lastMs = round2(median(perPage.slice(-5)))
    const rowsOk = walks.every((w) => w.rows === expected)
    goals.push({
      id: '6',
      figure: `walk of ${expected} rows, limit ${settings.walkLimit}: last 5 pages / first 5 (median of ${walks.length} walks)`,
      gateway: `first ${firstMs} ms, last ${lastMs} ms, walk ${round2(median(walks.map((w) => w.totalMs)) / 1000)} s`,
      baseline: '-',
      value: round2(lastMs / firstMs),
      goal: '<= 1.2x',
      pass: rowsOk && full >= 10 && lastMs <= firstMs * 1.2,
      note: rowsOk ? undefined : `walks returned ${walks.map((w) => w.rows).join(', ')} rows, expected ${expected}`
    })
  } finally {
    await gateway.stop()
  }
}

async function main (): Promise<void> {
  const started = performance.now()
  installCleanup()
  const cpu = cpus()
  const machine = { cpu: cpu[0]?.model ?? 'unknown', cores: cpu.length, node: process.version, platform: `${process.platform} ${process.arch}`, loadAverageAtStart: loadavg().map(round2), loadAverageAtEnd: [] as number[] }
  // a load average above the core count means something else shares the machine: read the ratios, not the absolute figures
  console.log(`picking-gateway bench: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}, load average ${machine.loadAverageAtStart.join(' ')}`)
  console.log(`settings: ${JSON.stringify(settings)}`)
  console.log('The gateway logs every request at info level to a file, as in production; the naive baseline logs nothing.')
  console.log(`The gateway runs with the systemd unit's environment: ${JSON.stringify(unitEnvironment())}`)

  // Password hashing cost, in this process: what one login costs the gateway's threadpool.
  const passwords = await createPasswords(DEFAULT_ARGON2)
  const hash = await passwords.hash('correct horse battery staple')
  const verifies: number[] = []
  for (let i = 0; i < 10; i++) verifies.push(await timeIt(() => passwords.verify(hash, 'correct horse battery staple')))
  info.argon2 = DEFAULT_ARGON2
  info.argon2VerifyMs = percentiles(verifies)
  info.argon2Verify16ConcurrentMs = round2(await timeIt(() => Promise.all(Array.from({ length: 16 }, () => passwords.verify(hash, 'x')))))

  const dir = mkdtempSync(join(tmpdir(), 'pg-bench-'))
  trackTempDir(dir)
  const ctx: Context = {
    dir,
    secret: randomBytes(48).toString('base64'),
    adminPassword: randomBytes(18).toString('base64url'),
    configFile: join(dir, 'gateway.json')
  }
  writeFileSync(ctx.configFile, JSON.stringify({ auth: { loginThrottle: { maxAttemptsPerAddress: 1_000_000 } } }))
  const skipped: string[] = []
  try {
    if (['1', '2', '3', '4', '5', '6'].some(runs)) {
      const backend = sqliteBackend(dir)
      console.log(`\n${backend.name}: building ${settings.rows} materials with the gateway's own code…`)
      info.seedMs = round2(await timeIt(() => backend.prepare(ctx.adminPassword)))
      if (runs('1') || runs('2') || runs('3') || runs('5')) {
        const { gateway, naive } = await startPair(ctx, backend)
        try {
          await throughputPhases(ctx, gateway, naive)
        } finally {
          await Promise.all([gateway.stop(), naive.stop()])
        }
      }
      if (runs('4') || runs('6')) {
        console.log('\n4 + 6. memory and full walks, fresh gateway process')
        await memoryAndWalk(ctx, backend)
      }
    }
    if (runs('7')) {
      const url = process.env.MSSQL_TEST_URL
      if (!url) {
        console.log('\nSQL Server: skipped: MSSQL_TEST_URL not set')
        skipped.push('SQL Server: MSSQL_TEST_URL not set')
        goals.push({ id: '7', figure: GOAL_7, gateway: '-', baseline: '-', value: null, goal: '<= 0.2 ms', pass: null, note: 'skipped: MSSQL_TEST_URL not set' })
      } else {
        const backend = mssqlBackend(url)
        // a SQL Server that cannot be reached fails goal 7 with the reason, and the figures of the other goals still print
        try {
          console.log(`\n${backend.name}: building ${settings.rows} materials with the gateway's own code…`)
          info.mssqlSeedMs = round2(await timeIt(() => backend.prepare(ctx.adminPassword)))
          const { gateway, naive } = await startPair(ctx, backend)
          try {
            await sqlServerList(ctx, gateway, naive)
          } finally {
            await Promise.all([gateway.stop(), naive.stop()])
          }
        } catch (err) {
          const cause = (err as Error).cause
          const reason = `${(err as Error).message}${cause instanceof Error ? `: ${cause.message}` : ''}`
          console.log(`\n${backend.name}: ${reason}`)
          goals.push({ id: '7', figure: GOAL_7, gateway: '-', baseline: '-', value: null, goal: '<= 0.2 ms', pass: false, note: reason })
        }
      }
    }
  } finally {
    removeTempDir(dir)
  }

  const totalSeconds = Math.round((performance.now() - started) / 1000)
  machine.loadAverageAtEnd = loadavg().map(round2)
  console.log('\nRounds (median of the numbered rounds counts; warm-ups are not counted):')
  console.log(table(
    ['phase', 'side', 'round', 'req/s', 'p50 ms', 'p99 ms', 'expected status', 'server cpu %', 'client cpu %'],
    rounds.map((r) => [r.phase, r.side, r.round, r.rps, r.p50, r.p99, `${round2(r.expectedShare * 100)}%`, r.serverCpu ?? '?', r.clientCpu])
  ))
  console.log('\nOther figures:')
  for (const [key, value] of Object.entries(info)) console.log(`  ${key}: ${JSON.stringify(value)}`)
  console.log(`\nGoals (gateway / baseline, same run, ${settings.connections} connections, ${settings.rounds} alternating rounds of ${settings.roundSeconds} s after a warm-up):`)
  console.log(table(
    ['goal', 'figure', 'gateway', 'baseline', 'ratio', 'goal', 'result'],
    goals.map((g) => [g.id, g.figure, g.gateway, g.baseline, g.value ?? '-', g.goal, g.info === true ? 'INFO' : g.pass === null ? 'SKIP' : g.pass ? 'PASS' : 'FAIL'])
  ))
  for (const g of goals) if (g.note !== undefined && g.pass !== null) console.log(`  goal ${g.id}: ${g.note}`)
  const failed = goals.filter((g) => g.pass === false).map((g) => g.id)
  const unmeasured = goals.filter((g) => g.pass === null && g.info !== true).map((g) => g.id)
  const verdict = failed.length === 0 ? `All goals ${unmeasured.length === 0 ? '' : 'measured '}met` : `Goals missed: ${failed.join(', ')}`
  console.log(`\n${verdict}${unmeasured.length === 0 ? '' : ` (not measured: ${unmeasured.join(', ')})`}; ${totalSeconds} s in all; load average at the end ${machine.loadAverageAtEnd.join(' ')}.`)
  console.log(JSON.stringify({ machine, settings, totalSeconds, skipped, goals, info, rounds }))
  if (only.length > 0) console.log(`Partial run (BENCH_ONLY=${only.join(',')}): goals ${['1', '2', '3', '4', '5', '6', '7'].filter((g) => !goals.some((m) => m.id.startsWith(g))).join(', ')} were not measured.`)
  if (failed.length > 0 || only.length > 0) process.exitCode = 1
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
