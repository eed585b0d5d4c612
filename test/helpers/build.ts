// Builds the app exactly as production does (buildApp), on a fresh database per test file.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { pino } from 'pino'
import { buildApp, type App, type BuildOptions } from '../../src/app.js'
import { loggerOptions } from '../../src/logger.js'
import { initDatabase } from '../../src/bootstrap.js'
import { mappingsOf, validateConfig, type Config } from '../../src/config.js'
import { openDatabase } from '../../src/db/index.js'
import type { ResourceName } from '../../src/db/resources.js'
import type { TableMappingConfig } from '../../schemas/config.js'
import type { Database } from '../../src/db/types.js'

const silentLogger = { info () {}, warn () {}, error () {} }

export const ADMIN_PASSWORD = 'admin-password-1'

/** Cheap argon2 parameters: the tests check behaviour, the benchmark checks cost. */
export const TEST_ARGON2 = { memoryCost: 1024, timeCost: 1, parallelism: 1 }

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] }

export interface TestContext {
  app: App
  db: Database
  config: Config
  /** logs in and returns the token pair */
  login (username: string, password: string): Promise<{ accessToken: string, refreshToken: string }>
  /** an access token of the bootstrapped admin */
  adminToken: string
  /** creates a user through the API and logs it in */
  createUser (type: 'admin' | 'user' | 'application', username?: string): Promise<{ id: number, username: string, password: string, accessToken: string, refreshToken: string }>
  auth (token: string): { authorization: string }
}

let counter = 0

/** The database the suite runs on: SQLite by default, SQL Server when GATEWAY_TEST_DB=mssql and MSSQL_TEST_URL are set. */
export function testDatabaseUrl (dir: string): string {
  if (process.env.GATEWAY_TEST_DB === 'mssql' && process.env.MSSQL_TEST_URL) return process.env.MSSQL_TEST_URL
  return `sqlite:${join(dir, 'test.db')}`
}

export interface BuildExtras {
  /** identity-provider timings shorter than the production minute */
  timing?: BuildOptions['ssoTiming']
  /** where the app's log lines go (the production logger options: redaction included) */
  logStream?: { write: (line: string) => void }
  /** SQLite: how long a write waits for another process's lock before 503 (production: 5 s) */
  busyTimeoutMs?: number
}

export async function build (t: Test, overrides: DeepPartial<Config> & { mapping?: Partial<Record<ResourceName, TableMappingConfig>> } = {}, prepare?: (db: Database) => Promise<void>, extras: BuildExtras = {}): Promise<TestContext> {
  const dir = mkdtempSync(join(tmpdir(), 'pg-test-'))
  const url = testDatabaseUrl(dir)
  const config = validateConfig({
    ...overrides,
    // a loaded CI machine stalls the event loop for a second at times: overload answers (503) are tested on their own
    server: { maxEventLoopDelayMs: 0, ...overrides.server },
    database: { url, ...overrides.database },
    auth: { jwtSecret: randomBytes(32).toString('hex'), argon2: TEST_ARGON2, ...overrides.auth },
    licence: { logins: 10, ...overrides.licence },
    logging: { level: 'silent', ...overrides.logging }
  })
  const db = openDatabase(url, { create: true, connectTimeoutMs: 5000, requestTimeoutMs: 15000, busyTimeoutMs: extras.busyTimeoutMs, logger: silentLogger })
  const mappings = mappingsOf(config)
  if (url.startsWith('mssql:')) {
    // One shared test database: start every test file from empty reference tables.
    for (const name of ['materials', 'stations', 'users'] as ResourceName[]) {
      const m = mappings[name]
      await db.execute({ text: `DROP TABLE IF EXISTS [${m.schema ?? 'dbo'}].[${m.table}]`, params: [] })
    }
  }
  if (prepare) await prepare(db)
  await initDatabase(db, { demo: false, mappings, argon2: TEST_ARGON2, adminPassword: ADMIN_PASSWORD, print: () => {} })
  let app: App
  try {
    const logger = extras.logStream === undefined ? undefined : pino(loggerOptions(config.logging.level), extras.logStream)
    app = await buildApp(config, { db, logger, ssoTiming: extras.timing })
    await app.ready()
  } catch (err) {
    // a start-up error must not leave the database (an mssql pool keeps the process alive) or the files behind
    await db.close()
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
  t.teardown(async () => {
    await app.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const auth = (token: string) => ({ authorization: `Bearer ${token}` })
  const login = async (username: string, password: string) => {
    const res = await app.inject({ method: 'POST', url: '/api/users/login', payload: { username, password } })
    if (res.statusCode !== 200) throw new Error(`login ${username} failed: ${res.statusCode} ${res.body}`)
    return res.json() as { accessToken: string, refreshToken: string }
  }
  const admin = await login('admin', ADMIN_PASSWORD)
  return {
    app,
    db,
    config,
    login,
    auth,
    adminToken: admin.accessToken,
    async createUser (type, username) {
      const name = username ?? `${type}-${++counter}`
      const password = `pw-${name}-secret`
      const res = await app.inject({ method: 'POST', url: '/api/users', headers: auth(admin.accessToken), payload: { username: name, password, type } })
      if (res.statusCode !== 201) throw new Error(`create ${name} failed: ${res.statusCode} ${res.body}`)
      const tokens = await login(name, password)
      return { id: res.json().id, username: name, password, ...tokens }
    }
  }
}

/**
 * Follows `meta.next` from `url` (at most `maxPages` pages, so a walk that never ends fails instead of
 * hanging), asserting each page is a 200; the materialNumber (or `key`) of every row, in order.
 */
export async function walkPages (t: Test, ctx: TestContext, url: string, maxPages = 10, key = 'materialNumber'): Promise<string[]> {
  const seen: string[] = []
  let next: string | undefined = url
  for (let pages = 0; next !== undefined && pages < maxPages; pages++) {
    const page: string = next
    const res = await ctx.app.inject({ method: 'GET', url: page, headers: ctx.auth(ctx.adminToken) })
    t.equal(res.statusCode, 200, res.body)
    const body: { data: Array<Record<string, string>>, meta: { next?: string | null } } = res.json()
    seen.push(...body.data.map((row) => row[key]))
    next = body.meta.next ?? undefined
  }
  return seen
}
