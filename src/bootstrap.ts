// Creates the reference tables, the demo data and the first admin: used by `db init` and by the embedded demo's first start.
import { randomBytes } from 'node:crypto'
import { PASSWORD_LENGTH } from '../schemas/users.js'
import { createPasswords, type Argon2Params } from './auth/passwords.js'
import { seedDemoData } from './db/demo-data.js'
import { createReferenceTables } from './db/init.js'
import { Repository } from './db/repository.js'
import { resources, type ResourceName } from './db/resources.js'
import { ConflictError } from './db/errors.js'
import type { Database, Row, TableMapping } from './db/types.js'
import { firstTokenVersion } from './users.js'

export interface InitOptions {
  demo: boolean
  mappings: Record<ResourceName, TableMapping>
  argon2: Argon2Params
  /** PICKING_GATEWAY_ADMIN_PASSWORD; a password is generated when absent */
  adminPassword?: string
  /** where a generated password is printed: standard output (a terminal, or a pipe, a file, the journal), never the logger */
  print: (line: string) => void
}

export interface InitResult {
  adminCreated: boolean
  seeded: boolean
}

export async function initDatabase (db: Database, opts: InitOptions): Promise<InitResult> {
  await createReferenceTables(db, opts.mappings)
  // learned: a user table keyed by the login name (id and username one text column) takes 'admin' as its id
  const users = await new Repository(db, resources.users, opts.mappings.users).learn()
  const adminCreated = await ensureAdmin(users, opts)
  let seeded = false
  if (opts.demo) {
    const materials = new Repository(db, resources.materials, opts.mappings.materials)
    if (await materials.count([]) === 0) {
      try {
        await seedDemoData(db, opts.mappings)
        seeded = true
      } catch (err) {
        // another `db init --demo` (a second host's, started with this one) seeded it since the count: its data stays, this one's rolled back
        if (!(err instanceof ConflictError) || await materials.count([]) === 0) throw err
      }
    }
  }
  return { adminCreated, seeded }
}

/**
 * Why PICKING_GATEWAY_ADMIN_PASSWORD cannot be the admin's password: the API's rule, counted as it
 * counts (a longer password would be stored, but no login could send it). Checked before the
 * database is opened, so that a refused value leaves no new database behind.
 */
export function adminPasswordProblem (given: string | undefined): string | undefined {
  const length = given === undefined ? 0 : [...given].length
  if (given === undefined || (length >= PASSWORD_LENGTH.min && length <= PASSWORD_LENGTH.max)) return undefined
  return `PICKING_GATEWAY_ADMIN_PASSWORD must be ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters long, got ${length}`
}

/** Creates user `admin` when the user table is empty. */
async function ensureAdmin (users: Repository, opts: InitOptions): Promise<boolean> {
  if (await users.count([]) > 0) return false
  const given = opts.adminPassword
  const problem = adminPasswordProblem(given)
  if (problem !== undefined) throw new Error(problem)
  const password = given ?? randomBytes(15).toString('base64url')
  const passwords = await createPasswords(opts.argon2)
  let row: Row
  try {
    row = await users.create({
      username: 'admin',
      passwordHash: await passwords.hash(password),
      type: 'admin',
      displayName: 'Administrator',
      enabled: true,
      // random, as every new user's: an admin made again in a table emptied (its key 'admin' again) gets no old token back
      tokenVersion: firstTokenVersion(users)
    })
  } catch (err) {
    // another `db init` (a second host's, started with this one) created it since the count: that one printed its
    // password. Only if the table holds a row now: else the key was another table's (a trigger's history row)
    if (err instanceof ConflictError && await users.count([]) > 0) return false
    throw err
  }
  if (given === undefined) {
    opts.print('')
    opts.print('  Created user "admin" with the generated password:')
    opts.print('')
    opts.print(`      ${password}`)
    opts.print('')
    opts.print(`  It is shown only this once. Change it with POST /api/users/${encodeURIComponent(String(row.id))} {"password": "..."}`)
    opts.print('')
  } else {
    opts.print('Created user "admin" with the password from PICKING_GATEWAY_ADMIN_PASSWORD.')
  }
  return true
}
