// Owns the database for the app's lifetime: checks the mapping at start, exposes one repository per resource, closes the pool.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { DatabaseUnavailableError, SchemaMismatchError } from '../src/db/errors.js'
import { Repository } from '../src/db/repository.js'
import { resources, withDeclaredNullability, type ResourceName } from '../src/db/resources.js'
import type { ColumnInfo, Database, TableMapping } from '../src/db/types.js'

export interface DatabasePluginOptions {
  db: Database
  mappings: Record<ResourceName, TableMapping>
}

export type Repositories = Record<ResourceName, Repository>

declare module 'fastify' {
  interface FastifyInstance {
    db: Database
    repos: Repositories
  }
}

async function database (fastify: FastifyInstance, opts: DatabasePluginOptions): Promise<void> {
  const { db, mappings } = opts
  const names = Object.keys(resources) as ResourceName[]
  fastify.addHook('onClose', async () => { await db.close() })

  // A mapping that does not fit the database is a start-up error; a database that is
  // down at start is not: the gateway serves 503 until it is back (DESIGN §10).
  const declared: Partial<Record<ResourceName, ColumnInfo[]>> = {}
  try {
    const problems: string[] = []
    for (const name of names) {
      problems.push(...await db.checkMapping(resources[name], mappings[name]))
      declared[name] = await db.columns(mappings[name])
    }
    if (problems.length > 0) {
      throw new SchemaMismatchError(`The database does not match the configured mapping: ${problems.join('; ')}. ` +
        'Fix the mapping in the configuration, or create the reference tables with: picking-gateway db init')
    }
  } catch (err) {
    if (!(err instanceof DatabaseUnavailableError)) throw err
    fastify.log.warn({ err }, 'database unavailable at start; mapping not checked, requests answer 503 until it is back')
  }

  const repos = Object.fromEntries(names.map((name) => {
    const def = withDeclaredNullability(resources[name], mappings[name], declared[name])
    return [name, new Repository(db, def, mappings[name])]
  })) as Repositories
  fastify.decorate('db', db)
  fastify.decorate('repos', repos)
}

export default fp(database, { name: 'database', fastify: '5.x' })
