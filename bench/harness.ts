// The machinery of `npm run bench`: server processes that always end, autocannon rounds, statistics, tables.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process'
import { closeSync, existsSync, openSync, readFileSync, rmSync } from 'node:fs'
import { Agent, get } from 'node:http'
import { createServer } from 'node:net'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { isMainThread, Worker, workerData } from 'node:worker_threads'
import autocannon from 'autocannon'
import { DEFAULT_ARGON2 } from '../src/auth/passwords.js'
import { initDatabase } from '../src/bootstrap.js'
import { openDatabase, referenceMappings, seedDemoData } from '../src/db/index.js'
import type { Database } from '../src/db/types.js'

const children = new Set<ChildProcess>()
const tempDirs = new Set<string>()

/** Kills every server still running and removes the temporary files, however the bench ends. */
export function installCleanup (): void {
  process.on('exit', () => {
    for (const child of children) child.kill('SIGKILL')
    // a fill's worker thread may still be opening its file: a directory left is better than a stack at exit
    for (const dir of tempDirs) try { rmSync(dir, { recursive: true, force: true }) } catch {}
  })
  // SIGHUP too: a terminal closed under the bench would otherwise kill it by the signal, which runs
  // no exit handler, and leave its servers running
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping the servers\n`)
      process.exit(code) // the exit handler above does the rest
    })
  }
  // Run by npm (npm run bench execs it: npm is its parent), the end of npm is a stop too: npm passes on SIGTERM and
  // SIGINT but dies of a SIGHUP sent to it alone, and passes nothing on when killed; the bench ran on for its
  // 7 minutes, at full load. An orphan is given to init (or a subreaper): its parent pid changes.
  if (process.env.npm_lifecycle_event !== undefined) {
    const npm = process.ppid
    setInterval(() => {
      if (process.ppid === npm) return
      process.stderr.write(`\nthe process that started the bench (pid ${npm}) is gone: stopping the servers\n`)
      process.exit(143) // as the SIGTERM npm would have passed on
    }, 500).unref()
  }
  // Its output's reader gone (`npm run bench | head`): the next write was an unhandled EPIPE, a stack
  // and exit 1. It stops as a shell pipeline's command does, exit 141 (128 + SIGPIPE) for a closed
  // pipe, 74 (EX_IOERR) for another failure, saying so in one line on standard error if that still
  // takes it. Node ignores SIGPIPE, so dying by it is not on offer.
  let failed = false
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (failed) return
      failed = true
      const name = stream === process.stdout ? 'standard output' : 'standard error'
      if (stream === process.stdout && !process.stderr.destroyed) process.stderr.write(`npm run bench: ${name} failed (${err.code ?? err.message}): stopping the servers\n`)
      process.exit(err.code === 'EPIPE' ? 141 : 74)
    })
  }
}

/**
 * The variables a systemd unit's Environment= lines set, in systemd's forms: NAME=value, and
 * "NAME=value with spaces"; several on one line; a later one wins.
 */
export function unitFileEnvironment (unit: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [, line] of unit.matchAll(/^Environment=(.*)$/gm)) {
    for (const [, quoted, bare] of line.matchAll(/"([^"]*)"|(\S+)/g)) {
      const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(quoted ?? bare)
      if (m !== null) env[m[1]] = m[2]
    }
  }
  return env
}

export function trackTempDir (dir: string): void {
  tempDirs.add(dir)
}

export function removeTempDir (dir: string): void {
  rmSync(dir, { recursive: true, force: true })
  tempDirs.delete(dir)
}

/** The bench's data: the reference tables, the admin and `rows` materials, built by the gateway's own code (no demo seed, that count instead). */
export async function fillDatabase (db: Database, adminPassword: string, rows: number): Promise<void> {
  await initDatabase(db, { demo: false, mappings: referenceMappings, argon2: DEFAULT_ARGON2, adminPassword, print: () => {} })
  await seedDemoData(db, referenceMappings, { count: rows })
}

interface FillJob { file: string, adminPassword: string, rows: number }

/**
 * fillDatabase on a new SQLite file, in a worker thread. better-sqlite3 is synchronous, the seed's
 * transaction awaits only settled promises and the rows are generated in one go, so in the bench's
 * own thread 100,000 rows (2 s on a quiet machine, about 12 s on a busy one) took no turn of the
 * event loop, and a SIGINT or SIGTERM waited for their end. The worker ends with the process.
 */
export async function fillSqliteInWorker (file: string, adminPassword: string, rows: number): Promise<void> {
  const job: FillJob = { file, adminPassword, rows }
  const worker = new Worker(new URL(import.meta.url), { workerData: { benchFill: job }, stdout: false, stderr: false })
  await new Promise<void>((resolve, reject) => {
    worker.once('error', reject)
    worker.once('exit', (code) => { if (code === 0) resolve(); else reject(new Error(`the fill's worker ended with ${code}`)) })
  })
}

// this module as the worker of fillSqliteInWorker
const fillJob = isMainThread ? undefined : (workerData as { benchFill?: FillJob } | null)?.benchFill
if (fillJob !== undefined) {
  const db = openDatabase(`sqlite:${fillJob.file}`, { create: true, logger: { info () {}, warn () {}, error () {} } })
  try {
    await fillDatabase(db, fillJob.adminPassword, fillJob.rows)
  } finally {
    await db.close() // checkpoints the WAL into the file
  }
}

async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
}

export interface Server {
  name: string
  base: string
  pid: number
  /** where its stdout and stderr go */
  log: string
  /** resident set size in bytes (Linux /proc), undefined elsewhere */
  rss (): number | undefined
  /** user + system CPU seconds so far (Linux /proc), undefined elsewhere */
  cpuSeconds (): number | undefined
  stop (): Promise<void>
}

function tail (file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
  } catch {
    return '(no output)'
  }
}

/**
 * `node <script> <args>` with only PATH, HOME and the given environment, killed however the bench ends.
 * npm_lifecycle_event, which npm run bench gives every process under it, is kept: the gateway run by npm
 * stops once its parent is gone (cli.ts), so a bench killed with SIGKILL, whose exit handler never runs,
 * does not leave it behind (the naive servers and helpers end when their stdin does).
 */
function spawnNode (script: string, args: string[], env: Record<string, string>, stdio: StdioOptions): ChildProcess {
  const base = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', npm_lifecycle_event: process.env.npm_lifecycle_event ?? 'bench' }
  const child = spawn(process.execPath, [script, ...args], { env: { ...base, ...env }, stdio })
  children.add(child)
  child.once('exit', () => children.delete(child))
  return child
}

/** How long the bench waits for a server's whole answer to one of its own requests (login, probes, walk pages), as autocannon's rounds do. */
export const ANSWER_MS = 10_000

export interface Answer { status: number, headers: Headers, text: string }

/**
 * fetch, its answer read to the end within `ms`: fetch alone waits up to undici's 300 s for the
 * headers (and longer for a body that stalls), so a server that hung or was stopped (SIGSTOP)
 * held the bench that long on every request. Past `ms` it rejects, naming the request.
 */
export async function fetchWithin (url: string, init: RequestInit = {}, ms = ANSWER_MS): Promise<Answer> {
  const signal = AbortSignal.timeout(ms)
  try {
    const res = await fetch(url, { ...init, signal })
    return { status: res.status, headers: res.headers, text: await res.text() }
  } catch (err) {
    if (signal.aborted) throw new Error(`${init.method ?? 'GET'} ${url}: no answer within ${ms / 1000} s`)
    throw err
  }
}

/**
 * `node <script> <args>` on a free port with only the given environment, ready once GET /health
 * answers 200; one that does not within readyWithinMs (30 s), answering or not, is stopped and the
 * bench fails saying so.
 */
export async function startServer (name: string, script: string, args: string[], env: Record<string, string>, log: string, readyWithinMs = 30_000): Promise<Server> {
  const port = await freePort()
  const fd = openSync(log, 'a')
  const child = spawnNode(script, args, { ...env, PORT: String(port), HOST: '127.0.0.1' }, ['pipe', fd, fd])
  closeSync(fd)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let spawnError: Error | undefined
  child.once('error', (err) => { spawnError = err })
  const alive = () => child.exitCode === null && child.signalCode === null && spawnError === undefined
  const base = `http://127.0.0.1:${port}`
  const server: Server = {
    name,
    base,
    pid: child.pid ?? -1,
    log,
    rss: () => procStatus(child.pid, 'VmRSS'),
    cpuSeconds: () => procCpu(child.pid),
    async stop () {
      if (!alive()) return await exited
      child.kill('SIGTERM')
      const stopped = await Promise.race([exited.then(() => true), sleep(8000).then(() => false)])
      if (!stopped) child.kill('SIGKILL')
      await exited
    }
  }
  const deadline = Date.now() + readyWithinMs
  for (;;) {
    if (!alive()) throw new Error(`${name} ended while starting (${spawnError?.message ?? child.exitCode ?? child.signalCode}):\n${tail(log)}`)
    try {
      // no longer than the deadline: a server that accepts and never answers is not waited for past it
      const res = await fetchWithin(`${base}/health`, {}, Math.max(1, Math.min(ANSWER_MS, deadline - Date.now())))
      if (res.status === 200) return server
    } catch {}
    if (Date.now() >= deadline) {
      await server.stop()
      throw new Error(`${name}: GET /health did not answer 200 within ${readyWithinMs / 1000} s:\n${tail(log)}`)
    }
    await sleep(100)
  }
}

/**
 * A helper process of the bench (a load client, not a server), with only the given environment:
 * ready once it prints "ready"; stop() closes its stdin and gives the last line it printed. Killed
 * with the servers however the bench ends, and it ends by itself when its stdin does. One that is
 * not ready within readyWithinMs (30 s) is killed, and the bench fails saying so.
 */
export async function startHelper (name: string, script: string, env: Record<string, string>, readyWithinMs = 30_000): Promise<{ stop: () => Promise<string> }> {
  const child = spawnNode(script, [], env, ['pipe', 'pipe', 'inherit'])
  let out = ''
  // 'close', not 'exit': the last line may still be on its way through the pipe at exit
  const ended = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
  let timer: NodeJS.Timeout | undefined
  await new Promise<void>((resolve, reject) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${name} did not print "ready" within ${readyWithinMs / 1000} s`))
    }, readyWithinMs)
    child.once('error', reject)
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      if (out.startsWith('ready\n')) resolve()
    })
    void ended.then((code) => reject(new Error(`${name} ended while starting (${code ?? child.signalCode})`)))
  }).finally(() => clearTimeout(timer))
  return {
    async stop () {
      child.stdin?.end()
      const code = await ended
      if (code !== 0) throw new Error(`${name} ended with ${code ?? child.signalCode}`)
      return out.trim().split('\n').pop() ?? ''
    }
  }
}

function procStatus (pid: number | undefined, key: string): number | undefined {
  if (pid === undefined || !existsSync(`/proc/${pid}/status`)) return undefined
  const match = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return match ? Number(match[1]) * 1024 : undefined
}

/** utime + stime from /proc/<pid>/stat, at the kernel's usual 100 ticks per second. */
function procCpu (pid: number | undefined): number | undefined {
  if (pid === undefined || !existsSync(`/proc/${pid}/stat`)) return undefined
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

export type Request = autocannon.Request

export interface Round {
  phase: string
  side: string
  round: string
  rps: number
  p50: number
  p99: number
  /** responses with the expected status, as a share of all */
  expectedShare: number
  statuses: Record<string, number>
  errors: number
  /** the server's CPU use during the round, in percent of one core */
  serverCpu: number | null
  /** the bench process's (autocannon's) CPU use, in percent of one core: near 100 means the client was the limit */
  clientCpu: number
}

export interface LoadOptions {
  connections: number
  seconds: number
  /** the status every response should have */
  expect: number
}

type Label = Pick<Round, 'phase' | 'side' | 'round'>
type Load = Pick<Round, 'rps' | 'p50' | 'p99' | 'statuses' | 'errors'>

/** Runs one round of load and adds what both kinds of round report: the share of expected statuses and the CPU of server and client. */
async function measured (server: Server, expect: number, label: Label, load: () => Promise<Load>): Promise<Round> {
  const cpu0 = server.cpuSeconds()
  const client0 = process.cpuUsage()
  const t0 = performance.now()
  const result = await load()
  const wall = (performance.now() - t0) / 1000
  const cpu1 = server.cpuSeconds()
  const client = process.cpuUsage(client0)
  const total = Object.values(result.statuses).reduce((a, b) => a + b, 0)
  return {
    ...label,
    ...result,
    expectedShare: total === 0 ? 0 : (result.statuses[String(expect)] ?? 0) / total,
    serverCpu: cpu0 === undefined || cpu1 === undefined ? null : Math.round((cpu1 - cpu0) / wall * 100),
    clientCpu: Math.round((client.user + client.system) / 1e6 / wall * 100)
  }
}

/** One autocannon round against a server; requests carry their own headers and bodies. */
export async function loadRound (server: Server, requests: Request[], opts: LoadOptions, label: Label): Promise<Round> {
  return await measured(server, opts.expect, label, async () => {
    const result = await autocannon({ url: server.base, connections: opts.connections, duration: opts.seconds, requests })
    const statuses: Record<string, number> = {}
    for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = stat.count ?? 0
    return { rps: Math.round(result.requests.total / result.duration), p50: result.latency.p50, p99: result.latency.p99, statuses, errors: result.errors }
  })
}

export interface PacedOptions {
  /** requests per second, one every 1/rate s */
  rate: number
  seconds: number
  /** at most this many requests in flight; a request that finds them all busy waits, and its wait counts */
  connections: number
  expect: number
  /** a request without an answer this long after it was issued counts as an error (10 s, autocannon's default), so a server that hangs fails the round instead of holding the bench forever */
  timeoutMs?: number
}

/**
 * Requests at a steady rate, one every 1/rate seconds whatever the answers do (an open loop, as
 * clients polling on a timer are). autocannon's rate limit is not that: each connection sends its
 * share of the second back to back and then waits for the next second, so "200 req/s" was a burst
 * at full speed once a second. Latency is counted from when a request was due, not from when it
 * was sent, so a client held up by a slow server does not hide the delay (or from when it was sent,
 * if that was earlier).
 */
export async function pacedRound (server: Server, path: (n: number) => string, headers: Record<string, string>, opts: PacedOptions, label: Label): Promise<Round> {
  const url = new URL(server.base)
  const count = Math.round(opts.rate * opts.seconds)
  const interval = 1000 / opts.rate
  return await measured(server, opts.expect, label, async () => {
    // fifo: every open socket takes its turn. Node's default (lifo) reuses the last one and leaves the others idle,
    // and one idle past the gateway's keepAliveTimeout (5 s) can be closed by it just as a request goes out on it,
    // an error of the client's pool, not of the server (the likely cause of the one error in the ninth session's goal 5)
    const agent = new Agent({ keepAlive: true, maxSockets: opts.connections, scheduling: 'fifo' })
    const latencies: number[] = []
    const statuses: Record<string, number> = {}
    let errors = 0
    const one = (n: number, due: number): Promise<void> => new Promise((resolve) => {
      // a request cut midway (the timer below) may fail on both the request and the response: one error
      let failed = false
      const fail = (): void => {
        if (!failed) errors++
        failed = true
        clearTimeout(timer)
        resolve()
      }
      // from when it was issued, waiting for a free connection included: requests queued behind hung ones end too
      const timer = setTimeout(() => req.destroy(new Error('no answer in time')), opts.timeoutMs ?? 10_000)
      const req = get({ host: url.hostname, port: url.port, path: path(n), headers, agent }, (res) => {
        res.on('data', () => {})
        res.on('end', () => {
          latencies.push(performance.now() - due)
          statuses[String(res.statusCode)] = (statuses[String(res.statusCode)] ?? 0) + 1
          clearTimeout(timer)
          resolve()
        })
        res.on('error', fail)
      })
      req.on('error', fail)
    })
    const t0 = performance.now()
    const inFlight: Array<Promise<void>> = []
    try {
      for (let n = 0; n < count; n++) {
        const due = t0 + n * interval
        const wait = due - performance.now()
        if (wait > 0) await sleep(wait)
        // a timer may fire up to a millisecond early (libuv counts whole ms): such a request counts from when it went out
        inFlight.push(one(n, Math.min(due, performance.now())))
      }
      await Promise.all(inFlight)
    } finally {
      agent.destroy()
    }
    const at = percentiles(latencies)
    return { rps: Math.round(latencies.length / ((performance.now() - t0) / 1000)), p50: at.p50, p99: at.p99, statuses, errors }
  })
}

export function median (xs: number[]): number {
  if (xs.length === 0) return NaN
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

export function percentiles (samples: number[]): { p50: number, p95: number, p99: number, max: number } {
  const s = [...samples].sort((a, b) => a - b)
  const at = (q: number) => round2(s[Math.min(s.length - 1, Math.floor(q * s.length))])
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99), max: round2(s[s.length - 1]) }
}

export const round2 = (n: number) => Math.round(n * 100) / 100

export async function timeIt (fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}

/** A plain text table, columns padded to their widest cell. */
export function table (header: string[], rows: Array<Array<string | number>>): string {
  const cells = [header, ...rows.map((r) => r.map(String))]
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)))
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i])).join(' | ').trimEnd()
  return [line(header), widths.map((w) => '-'.repeat(w)).join('-|-'), ...cells.slice(1).map(line)].join('\n')
}
