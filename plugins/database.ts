// Owns the database for the app's lifetime: checks the mapping at start, exposes one repository per resource, closes the pool.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { DatabaseUnavailableError, SchemaMismatchError } from '../src/db/errors.js'
import { Repository } from '../src/db/repository.js'
import { resources, type ResourceName } from '../src/db/resources.js'
import { inspectStorage } from '../src/db/storage.js'
import type { ColumnInfo, Database, TableMapping } from '../src/db/types.js'

export interface DatabasePluginOptions {
  db: Database
  mappings: Record<ResourceName, TableMapping>
  /** when the database is down at start: how often to try the mapping check again */
  recheckMs: number
}

export type Repositories = Record<ResourceName, Repository>

export interface DatabaseStatus {
  /** set when a check after a late start found that the mapping does not fit the database */
  mappingProblem: string | null
}

declare module 'fastify' {
  interface FastifyInstance {
    db: Database
    repos: Repositories
    databaseStatus: DatabaseStatus
  }
}

const mismatch = (problems: string[]): string => `The database does not match the configured mapping: ${problems.join('; ')}. ` +
  'Fix the mapping in the configuration, or create the reference tables with: picking-gateway db init'

async function database (fastify: FastifyInstance, opts: DatabasePluginOptions): Promise<void> {
  const { db, mappings } = opts
  const names = Object.keys(resources) as ResourceName[]
  const status: DatabaseStatus = { mappingProblem: null }
  let recheck: NodeJS.Timeout | undefined
  fastify.addHook('onClose', async () => {
    clearInterval(recheck)
    await db.close()
  })

  /** The mapping's problems and the columns as declared, or DatabaseUnavailableError. */
  async function inspect (): Promise<{ problems: string[], declared: Record<ResourceName, ColumnInfo[]> }> {
    const { problems, columns } = await inspectStorage(db, mappings)
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

  // A mapping that does not fit the database is a start-up error; a database that is
  // down at start is not: the gateway serves 503 until it is back (DESIGN §10), then checks.
  try {
    const { problems, declared } = await inspect()
    if (problems.length > 0) throw new SchemaMismatchError(mismatch(problems))
    adopt(declared)
  } catch (err) {
    if (!(err instanceof DatabaseUnavailableError)) throw err
    fastify.log.warn({ err }, 'database unavailable at start; requests answer 503 until it is back, then the mapping is checked')
    let busy = false
    recheck = setInterval(() => {
      if (busy) return
      busy = true
      inspect().then(({ problems, declared }) => {
        clearInterval(recheck)
        if (problems.length > 0) {
          status.mappingProblem = mismatch(problems)
          fastify.log.error({ problems }, 'the database is back but does not match the configured mapping')
        } else {
          adopt(declared)
          fastify.log.info('the database is back; mapping checked')
        }
      }, (err: unknown) => {
        if (!(err instanceof DatabaseUnavailableError)) fastify.log.error({ err }, 'mapping check failed')
      }).finally(() => { busy = false })
    }, opts.recheckMs)
    recheck.unref()
  }

  fastify.decorate('db', db)
  fastify.decorate('repos', repos)
  fastify.decorate('databaseStatus', status)
}

export default fp(database, { name: 'database', fastify: '5.x' })
