// argon2id hashing with one set of parameters, and a decoy hash so unknown users cost the same time as known ones.
import argon2 from 'argon2'
import { availableParallelism } from 'node:os'
import { spelledCaseless } from '../db/resources.js'
import { ApiError } from '../errors.js'

export interface Argon2Params {
  memoryCost: number
  timeCost: number
  parallelism: number
}

/** OWASP's argon2id floor: 19 MiB, 2 passes, 1 lane (DESIGN §10: the library default took ~360 ms here). */
export const DEFAULT_ARGON2: Argon2Params = { memoryCost: 19456, timeCost: 2, parallelism: 1 }

/**
 * How many characters an argon2id hash made with `params` takes ('$argon2id$v=19$m=19456,t=2,p=1$'
 * with the salt's 22 and the hash's 43 in base64): what the user table's password column must hold.
 */
export function argon2HashLength (params: Argon2Params): number {
  return `$argon2id$v=19$m=${params.memoryCost},t=${params.timeCost},p=${params.parallelism}$`.length + 22 + 1 + 43
}

/** Whether a stored password hash is one verify() can check (an argon2 hash), not another program's (MD5, bcrypt, plain text) or none. */
export function isCheckableHash (storedHash: unknown): storedHash is string {
  return typeof storedHash === 'string' && storedHash.startsWith('$argon2')
}

export interface Passwords {
  hash (password: string): Promise<string>
  /** Verifies against the stored hash, or against a decoy when there is none, so timing does not tell. */
  verify (storedHash: string | null | undefined, password: string): Promise<boolean>
  needsRehash (storedHash: string): boolean
}

export interface HashingLimits {
  /** argon2 computations at once; default: one core less than the machine has (at least 1) */
  concurrency?: number
  /** computations waiting beyond that; one more is a 503 OVERLOADED (default 256) */
  queue?: number
}

/**
 * Runs at most `concurrency` tasks at once, first come first served. argon2 runs on libuv's
 * threadpool (4 threads): unlimited, a burst of logins takes every core and the event loop,
 * which serves everyone else, waits behind it. One core less than the machine has keeps one
 * for the event loop; waiting logins queue instead (bounded).
 */
export class Limiter {
  private running = 0
  private readonly waiting: Array<() => void> = []
  constructor (readonly concurrency: number, readonly queue: number) {}

  async run<T> (task: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.queue) {
        throw new ApiError(503, 'OVERLOADED', 'Too many password checks at once; try again shortly', { headers: { 'retry-after': '1' }, expected: true })
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve))
    } else {
      this.running++
    }
    try {
      return await task()
    } finally {
      // hand the slot to the next in line, or give it back
      const next = this.waiting.shift()
      if (next !== undefined) next()
      else this.running--
    }
  }
}

export async function createPasswords (params: Argon2Params = DEFAULT_ARGON2, limits: HashingLimits = {}): Promise<Passwords> {
  const options = { type: argon2.argon2id as 2, ...params }
  const limiter = new Limiter(limits.concurrency ?? Math.max(1, availableParallelism() - 1), limits.queue ?? 256)
  const hash = (password: string): Promise<string> => limiter.run(() => argon2.hash(password, options))
  const check = (stored: string, password: string): Promise<boolean> => limiter.run(() => argon2.verify(stored, password))
  const decoy = await hash(`decoy-${Math.random()}`)
  return {
    hash,
    async verify (storedHash, password) {
      if (!isCheckableHash(storedHash)) {
        await check(decoy, password).catch(rethrowOverload)
        return false
      }
      try {
        return await check(storedHash, password)
      } catch (err) {
        return rethrowOverload(err)
      }
    },
    needsRehash (storedHash) {
      try {
        return argon2.needsRehash(storedHash, options)
      } catch {
        return true
      }
    }
  }
}

/** A hash that does not parse is a failed check; a full queue stays a 503. */
function rethrowOverload (err: unknown): false {
  if (err instanceof ApiError) throw err
  return false
}

/** Usernames are case-insensitive and compared trimmed (SQL Server compares 'admin' and 'Admin  ' as equal). */
export function normalizeUsername (username: string): string {
  return spelledUsername(username).toLowerCase()
}

/**
 * A username as the gateway stores it: normalizeUsername's lower case, but İ (U+0130), the one
 * letter whose lower case is two characters (i and a combining dot U+0307, which a code-page column
 * cannot store and nobody types), stays İ. Its normalizeUsername is the given name's, so it
 * compares as before: 'İlker' and 'İLKER' are one name, 'ilker' another.
 */
export function storedUsername (username: string): string {
  return spelledUsername(username).replace(/[^\u0130]+/g, (part) => part.toLowerCase())
}

/** A username as given, in its case: what picks one of a legacy table's spellings of it (Repository.findSpelled). */
export function spelledUsername (username: string): string {
  return spelledCaseless(username)
}
