// Owns the database for the app's lifetime: checks the mapping at start, exposes one repository per resource, closes the pool.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { DatabaseClosedError, DatabaseUnavailableError, FileUncheckableError, MappingGoneError, SchemaMismatchError, STORAGE_FAULTS } from '../src/db/errors.js'
import { readServerClock } from '../src/db/index.js'
import { Repository } from '../src/db/repository.js'
import { isMissingTable, resources, type ResourceName } from '../src/db/resources.js'
import { inspectStorage } from '../src/db/storage.js'
import type { ColumnInfo, Database, TableMapping } from '../src/db/types.js'

export interface DatabasePluginOptions {
  db: Database
  mappings: Record<ResourceName, TableMapping>
  /** how often the mapping is checked again while it cannot be (the database down at start) or does not fit (a mapped column gone); SQLite: how often its file is checked (Database.recheck) */
  recheckMs: number
  /** the length of the password hashes the auth plugin writes (argon2HashLength of auth.argon2) */
  passwordHashLength?: number
}

export type Repositories = Record<ResourceName, Repository>

export interface DatabaseStatus {
  /**
   * set while the mapping does not fit the database: found by the check after a late start, after a
   * file was replaced (SQLite), or after a request met a mapped table or column that is gone. What
   * /health/ready shows, without a stack, to anyone: the problems themselves are in the log.
   */
  mappingProblem: string | null
  /**
   * The last storage fault a request met (a full disk, a read-only, damaged or unreadable file): what it
   * said, when (ISO), and when on the monotonic clock. /health/ready shows it for STORAGE_FAULT_SHOWN_MS
   * after the last request it refused, without changing the status: reads go on, and every instance
   * shares the storage, so taking this one out of a load balancer's rotation would help nothing.
   */
  storageFault: { error: string, lastSeenAt: string, seen: number } | null
}

const NOT_FITTING = 'The database does not match the configured mapping; the log names what differs (so does picking-gateway check-config)'

declare module 'fastify' {
  interface FastifyInstance {
    db: Database
    repos: Repositories
    databaseStatus: DatabaseStatus
  }
}

// db init helps only where a table is missing (a new database); not with the picking system's own tables
const mismatch = (problems: string[]): string => `The database does not match the configured mapping: ${problems.join('; ')}. ` +
  (problems.some(isMissingTable)
    ? 'Fix the mapping in the configuration, or create the reference tables with: picking-gateway db init'
    : 'Fix the mapping in the configuration (picking-gateway db introspect proposes one)')

/** How often the database server's clock is read (SQL Server), and from how far behind the gateway's a warning says so. */
export const CLOCK_CHECK_MS = 60_000
const CLOCK_BEHIND_WARN_MS = 1000

async function database (fastify: FastifyInstance, opts: DatabasePluginOptions): Promise<void> {
  const { db, mappings } = opts
  const names = Object.keys(resources) as ResourceName[]
  const status: DatabaseStatus = { mappingProblem: null, storageFault: null }
  const timers = new Set<NodeJS.Timeout>()
  fastify.addHook('onClose', async () => {
    for (const timer of timers) clearInterval(timer)
    await db.close()
  })

  /**
   * Runs `check` every recheckMs, one run at a time, until it resolves true or the app closes.
   * It handles its own errors: what failed is the check's to log.
   */
  function every (check: () => Promise<boolean>): void {
    let running = false
    const timer = setInterval(() => {
      if (running) return
      running = true
      check().then((done) => {
        if (!done) return
        clearInterval(timer)
        timers.delete(timer)
      }).finally(() => { running = false })
    }, opts.recheckMs)
    timer.unref()
    timers.add(timer)
  }

  /** The mapping's problems and the columns as declared, or DatabaseUnavailableError. */
  async function inspect (): Promise<{ problems: string[], declared: Record<ResourceName, ColumnInfo[]> }> {
    const { problems, columns } = await inspectStorage(db, mappings, { passwordHashLength: opts.passwordHashLength })
    return { problems, declared: columns }
  }

  const log = fastify.log.child({ plugin: 'database' })
  const warn = (obj: object, msg: string): void => log.warn(obj, msg)
  // Until the columns are known every field counts as nullable and no column limit is checked
  // before SQL runs: always correct, only slower and with the database's own errors.
  const repos = Object.fromEntries(names.map((name) => [name, new Repository(db, resources[name], mappings[name], { warn })])) as Repositories
  const adopt = (declared: Record<ResourceName, ColumnInfo[]>): void => {
    for (const name of names) repos[name].adopt(declared[name])
  }

  // SQL Server: the picking system's triggers stamp its rows with the database server's clock, and
  // serverTime is the gateway's. A server clock behind this host's sets serverTime back by as much, or
  // a change stamped then would lie before the next run's modifiedSince (README, "Incremental sync").
  let clockWarned = false
  const measureClock = async (): Promise<void> => {
    // unreachable: the last measurement stands, and the outage is logged where requests meet it
    const reading = await readServerClock(db).catch(() => undefined)
    if (reading === undefined) return
    // serverTime is set back by the most it can be behind; the warning goes by the least (a slow round
    // trip, a busy event loop, is no clock to set by NTP)
    const behind = Math.max(0, Math.ceil(reading.behindAtMost))
    for (const name of names) repos[name].clockBehindMs = behind
    const off = reading.behindAtLeast > CLOCK_BEHIND_WARN_MS
    if (off && !clockWarned) {
      log.warn({ behindMs: behind }, "the database server's clock is behind this host's: meta.serverTime is set back by as much, so that no change stamped by the picking system is missed (more rows come again in each sync run); set both clocks by NTP")
    } else if (!off && clockWarned) log.info({ behindMs: behind }, "the database server's clock is in step with this host's again")
    clockWarned = off
  }
  if (db.clock !== undefined) {
    const timer = setInterval(() => { void measureClock() }, CLOCK_CHECK_MS)
    timer.unref()
    timers.add(timer)
  }

  // A mapping that does not fit the database is a start-up error; a database that is
  // down at start is not: the gateway serves 503 until it is back (DESIGN §10), then checks.
  try {
    const { problems, declared } = await inspect()
    if (problems.length > 0) throw new SchemaMismatchError(mismatch(problems))
    adopt(declared)
    await measureClock()
  } catch (err) {
    // closed under the start-up (a stop while SQL Server's connect attempt was under way): no outage to wait out
    if (!(err instanceof DatabaseUnavailableError) || err instanceof DatabaseClosedError) throw err
    fastify.log.warn({ err }, 'database unavailable at start; requests answer 503 until it is back, then the mapping is checked')
    every(async () => {
      try {
        const { problems, declared } = await inspect()
        // the server's clock, as a start that found the database reads it: not the gateway's own until the minute's reading
        await measureClock()
        if (problems.length > 0) {
          status.mappingProblem = NOT_FITTING
          fastify.log.error({ problems }, 'the database is back but does not match the configured mapping')
        } else {
          adopt(declared)
          fastify.log.info('the database is back; mapping checked')
        }
        return true
      } catch (err) {
        if (!(err instanceof DatabaseUnavailableError)) fastify.log.error({ err }, 'mapping check failed')
        return false
      }
    })
  }

  // SQLite: a file deleted or replaced under the running gateway (README, "SQLite: locks, journal mode and the database file")
  const recheckFile = db.recheck?.bind(db)
  if (recheckFile !== undefined) {
    // the path could not be looked at while the open file served on: said once, not at every check
    let uncheckable = false
    every(async () => {
      try {
        const found = await recheckFile()
        if (uncheckable) log.warn('the database file\'s path can be checked again')
        uncheckable = false
        if (found === 'missing') log.error('the database file is gone: closed the connection; requests answer 503 until a file is back at its path (none is created)')
        else if (found === 'diverged') log.error(`the database file's -wal or -shm file was removed while the gateway had it open, and another process has opened the file since: the gateway's commits since the removal are in its own -wal, the other process's in the new one, and neither is written into the file (either could overwrite the other's pages); requests answer 503 until a restart. Stop the gateway while the other process still has the file open (the gateway's writes since the removal are lost, the other's are kept), then start it again`)
        else if (found === 'sidecars') log.warn("the database file's -wal or -shm file was removed while the gateway had it open: wrote the gateway's commits into the file and opened it again; serving")
        else if (found !== 'unchanged') {
          log.warn(found === 'back'
            ? 'a database file is back at its path: opened it; serving again'
            : found === 'readonly'
              ? "a database file at its path (back, or another) was opened, but the gateway's user may not write it, its -wal or -shm file or its directory (their modes or owner, or a read-only file system): reads are served, writes answer 503 until it is writable again (checked every database.recheckMs)"
              : found === 'writable'
                ? 'the database file is writable again: opened it anew; writes are served again'
                : 'the database file was replaced by another file: closed the old connection and opened the new file')
          // the new file's tables decide from now on, as at start
          const { problems, declared } = await inspect()
          status.mappingProblem = problems.length > 0 ? NOT_FITTING : null
          if (problems.length > 0) log.error({ problems }, 'the new database file does not match the configured mapping')
          else adopt(declared)
        }
      } catch (err) {
        if (err instanceof FileUncheckableError) {
          if (!uncheckable) log.warn({ reason: err.message }, 'the database file\'s path cannot be checked (its directory\'s permissions?): serving on the file already open; a file deleted or replaced there is not noticed until it can be')
          uncheckable = true
        } else log.error({ err }, 'the database file could not be checked or opened; requests answer 503, trying again')
      }
      return false
    })
  }

  // A mapped table or column gone while serving (a request got MappingGoneError, 503): readiness
  // says so, and the mapping is checked again until it fits, then the columns are read anew. A name
  // the mapping does not have (a trigger's table) is the picking system's own fault: logged once,
  // and readiness left alone, since every instance would fail the same way.
  const mapped = new Set(Object.values(mappings).flatMap((m) => [m.table, ...Object.values(m.columns), ...Object.keys(m.defaults ?? {})]).map((name) => name.toLowerCase()))
  const unmappedSeen = new Set<string>()
  let checkingMapping = false
  // A storage fault (a full disk, a read-only or damaged file): each request refused by it logs a warning,
  // and the fault itself an error, which `journalctl -p err` shows, once and then every ten minutes while it lasts.
  const faultLogged = new Map<string, number>()
  fastify.addHook('onError', async (_request, _reply, err) => {
    if (err instanceof DatabaseUnavailableError && STORAGE_FAULTS.has(err.message)) {
      const now = performance.now()
      status.storageFault = { error: err.message, lastSeenAt: new Date().toISOString(), seen: now }
      const last = faultLogged.get(err.message)
      if (last !== undefined && now - last < STORAGE_FAULT_LOG_MS) return
      faultLogged.set(err.message, now)
      log.error({ err: err.cause ?? err }, `${err.message.replace(/ \(the log has the details\)$|; the log has the details$|\.$/, '')}: requests that need it answer 503 until it is mended (logged again every ${STORAGE_FAULT_LOG_MS / 60000} minutes while it lasts)`)
      return
    }
    if (!(err instanceof MappingGoneError) || checkingMapping) return
    if (err.missing === undefined || !mapped.has(err.missing.toLowerCase())) {
      if (unmappedSeen.has(err.detail) || unmappedSeen.size >= 100) return
      unmappedSeen.add(err.detail)
      log.error({ database: err.detail }, 'a statement named a table or column that the database does not have and the mapping does not name (a trigger or view of the picking system?); such requests answer 503 until the database is fixed')
      return
    }
    checkingMapping = true
    status.mappingProblem = NOT_FITTING
    log.error({ database: err.detail }, 'a table or column of the mapping is gone from the database; requests that need it answer 503 until it is back')
    let logged = false
    every(async () => {
      try {
        const { problems, declared } = await inspect()
        if (problems.length > 0) {
          if (!logged) log.error({ problems }, 'the database does not match the configured mapping')
          logged = true
          return false
        }
        adopt(declared)
        status.mappingProblem = null
        checkingMapping = false
        log.warn('the database matches the configured mapping again; serving')
        return true
      } catch (err) {
        if (!(err instanceof DatabaseUnavailableError)) log.error({ err }, 'mapping check failed')
        return false
      }
    })
  })

  fastify.decorate('db', db)
  fastify.decorate('repos', repos)
  fastify.decorate('databaseStatus', status)
}

/** how often a storage fault that lasts is logged again as an error */
const STORAGE_FAULT_LOG_MS = 10 * 60 * 1000
/** how long /health/ready shows a storage fault after the last request it refused */
export const STORAGE_FAULT_SHOWN_MS = STORAGE_FAULT_LOG_MS

export default fp(database, { name: 'database', fastify: '5.x' })
