// npm run bench: password hashing cost, list latency and throughput over real HTTP, a full sync walk, memory.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { buildApp } from '../src/app.js'
import { createPasswords, DEFAULT_ARGON2 } from '../src/auth/passwords.js'
import { initDatabase } from '../src/bootstrap.js'
import { validateConfig } from '../src/config.js'
import { openDatabase, referenceMappings } from '../src/db/index.js'

const quiet = { info () {}, warn () {}, error () {} }

function stats (samples: number[]): { p50: number, p95: number, max: number } {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
  return { p50: round(at(0.5)), p95: round(at(0.95)), max: round(sorted[sorted.length - 1]) }
}
const round = (n: number) => Math.round(n * 100) / 100
const mib = (n: number) => Math.round(n / 1048576)

async function timeIt (fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}

async function main (): Promise<void> {
  const results: Record<string, unknown> = { node: process.version, argon2: DEFAULT_ARGON2 }

  // 1. Password hashing: what a login costs, alone and with 16 at once.
  const passwords = await createPasswords(DEFAULT_ARGON2)
  const hash = await passwords.hash('correct horse battery staple')
  const verifies: number[] = []
  for (let i = 0; i < 10; i++) verifies.push(await timeIt(() => passwords.verify(hash, 'correct horse battery staple')))
  results.argon2VerifyMs = stats(verifies)
  results.argon2Verify16ConcurrentMs = round(await timeIt(() => Promise.all(Array.from({ length: 16 }, () => passwords.verify(hash, 'x')))))

  // 2. The API over real HTTP on the demo data set.
  const dir = mkdtempSync(join(tmpdir(), 'pg-bench-'))
  const url = `sqlite:${join(dir, 'bench.db')}`
  const db = openDatabase(url, { create: true, logger: quiet })
  await initDatabase(db, { demo: true, mappings: referenceMappings, argon2: DEFAULT_ARGON2, adminPassword: 'bench-password', print: () => {} })
  const config = validateConfig({ database: { url }, auth: { jwtSecret: randomBytes(32).toString('hex') }, logging: { level: 'warn' }, hardware: { enabled: false }, server: { maxEventLoopDelayMs: 0 } })
  const app = await buildApp(config, { db })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const login = await fetch(`${base}/api/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: 'bench-password' }) })
  const headers = { authorization: `Bearer ${((await login.json()) as { accessToken: string }).accessToken}` }
  const get = async (path: string) => {
    const res = await fetch(base + path, { headers })
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`)
    return await res.json() as { data: unknown[], meta: { next?: string } }
  }

  for (let i = 0; i < 50; i++) await get('/api/materials?limit=100') // warm-up
  const sequential: number[] = []
  for (let i = 0; i < 300; i++) sequential.push(await timeIt(() => get('/api/materials?limit=100&sort=-modifiedAt')))
  results.list100SequentialMs = stats(sequential)
  const filtered: number[] = []
  for (let i = 0; i < 200; i++) filtered.push(await timeIt(() => get('/api/materials?limit=100&name=%5Blike%5Dvalve&count=true')))
  results.list100FilteredCountMs = stats(filtered)

  const concurrency = 16
  const perWorker = 50
  const wall = await timeIt(() => Promise.all(Array.from({ length: concurrency }, async () => {
    for (let i = 0; i < perWorker; i++) await get('/api/materials?limit=100')
  })))
  results.list100Concurrent16RequestsPerSecond = Math.round(concurrency * perWorker / (wall / 1000))

  // 3. A full incremental-sync walk: every page should cost about the same (keyset paging).
  for (const limit of [100, 1000]) {
    const pages: number[] = []
    let next: string | undefined = `/api/materials?limit=${limit}&sort=modifiedAt`
    let rows = 0
    const total = await timeIt(async () => {
      while (next) {
        const t0 = performance.now()
        const page = await get(next)
        pages.push(performance.now() - t0)
        rows += page.data.length
        next = page.meta.next
      }
    })
    results[`walkLimit${limit}`] = { rows, pages: pages.length, totalMs: round(total), firstPageMs: round(pages[0]), lastPageMs: round(pages[pages.length - 1]) }
  }

  const memory = process.memoryUsage()
  results.memoryMiB = { rss: mib(memory.rss), heapUsed: mib(memory.heapUsed) }
  await app.close()
  rmSync(dir, { recursive: true, force: true })

  console.log(JSON.stringify(results, null, 2))
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
