// argon2id hashing with one set of parameters, and a decoy hash so unknown users cost the same time as known ones.
import argon2 from 'argon2'
import { fork, type ChildProcess } from 'node:child_process'
import { availableParallelism, setPriority } from 'node:os'
import { extname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ApiError } from '../errors.js'
import type { HashReply, HashRequest } from './hasher.js'

export interface Argon2Params {
  memoryCost: number
  timeCost: number
  parallelism: number
}

/** OWASP's argon2id floor: 19 MiB, 2 passes, 1 lane (DESIGN §10: the library default took ~360 ms here). */
export const DEFAULT_ARGON2: Argon2Params = { memoryCost: 19456, timeCost: 2, parallelism: 1 }

export interface Passwords {
  hash (password: string): Promise<string>
  /** Verifies against the stored hash, or against a decoy when there is none, so timing does not tell. */
  verify (storedHash: string | null | undefined, password: string): Promise<boolean>
  needsRehash (storedHash: string): boolean
  /** ends the hashing process, if there is one */
  close (): Promise<void>
}

export interface HashingLimits {
  /** argon2 computations at once; default: one core less than the machine has (at least 1) */
  concurrency?: number
  /** computations waiting beyond that; one more is a 503 OVERLOADED (default 256) */
  queue?: number
  /** hash in a process of its own at the lowest CPU priority (the server does); default: in this process */
  isolate?: boolean
  /** isolate: the process ends after this long without a password check (default 10 s), and starts again with the next */
  idleMs?: number
  /** isolate: this HashProcess instead of a new one */
  process?: HashProcess
}

const unavailable = (): ApiError => new ApiError(503, 'UNAVAILABLE', 'Password checks are not available for a moment; try again', { headers: { 'retry-after': '1' } })

/**
 * argon2 in a child process (hasher.ts) at nice 19, started at the first password check and ended
 * after `idleMs` without one (its 42 MiB are Node's own floor, so it does not stay for nothing).
 * When it cannot be started at all (three starts in a row end before answering), `broken` is set
 * and the caller hashes in its own process instead. A hash beside the event loop in one process made the API's p99 under
 * 20 logins a second about 20 % worse than in a process of its own at the lowest priority, whose
 * memory (19 MiB a check) the kernel maps and unmaps apart from the gateway's (README, Performance).
 * It never keeps the gateway alive: referenced only while a check is in flight, and it ends when its
 * channel closes, which also happens when the gateway dies.
 */
export class HashProcess {
  private child: ChildProcess | undefined
  private seq = 0
  private readonly pending = new Map<number, { resolve: (value: string | boolean) => void, reject: (err: unknown) => void }>()
  private idle: NodeJS.Timeout | undefined
  /** starts in a row that ended before their process answered anything */
  private failedStarts = 0
  private answered = false

  /** `file`: the process's script (default hasher.ts beside this file; tests name one that cannot start) */
  constructor (private readonly idleMs = 10_000, private readonly file?: string) {}

  /** the process cannot be started here: hash in the caller's process */
  get broken (): boolean {
    return this.failedStarts >= 3
  }

  /** the running process's id, if one runs */
  get pid (): number | undefined {
    return this.child?.pid
  }

  async run (request: Omit<HashRequest, 'id'>): Promise<string | boolean> {
    const child = this.child ?? this.start()
    clearTimeout(this.idle)
    const id = ++this.seq
    return await new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.hold(child, true)
      child.send({ id, ...request } satisfies HashRequest, (err) => { if (err !== null) this.settle(id, undefined, unavailable()) })
    })
  }

  async close (): Promise<void> {
    clearTimeout(this.idle)
    const child = this.child
    if (child === undefined) return
    this.child = undefined
    this.failAll()
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    if (child.connected) child.disconnect()
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000)
    await exited
    clearTimeout(timer)
  }

  private start (): ChildProcess {
    // hasher.ts beside this file: .js when built, .ts under the tests' loader (which execArgv passes on)
    const file = this.file ?? fileURLToPath(new URL(`./hasher${extname(fileURLToPath(import.meta.url))}`, import.meta.url))
    // of the gateway's own Node options only the module loaders (the tests' TypeScript), not an -e script
    const execArgv = process.execArgv.filter((a) => /^--(import|loader|experimental-loader|require|enable-source-maps)\b/.test(a))
    const child = fork(file, [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    try {
      // the lowest priority: a check waits for a free core, not the requests the event loop serves
      if (child.pid !== undefined) setPriority(child.pid, 19)
    } catch {
      // not allowed here (a container's seccomp): the process still isolates the hash's memory
    }
    this.answered = false
    child.on('message', (m: HashReply) => {
      this.answered = true
      this.failedStarts = 0
      this.settle(m.id, m.ok ? m.value : undefined, m.ok ? undefined : new Error(m.error))
    })
    const gone = (): void => {
      if (this.child !== child) return
      this.child = undefined
      if (!this.answered) this.failedStarts++
      this.failAll()
    }
    child.on('error', gone)
    child.on('exit', gone)
    this.child = child
    return child
  }

  private settle (id: number, value: string | boolean | undefined, err: unknown): void {
    const p = this.pending.get(id)
    if (p === undefined) return
    this.pending.delete(id)
    if (err === undefined) p.resolve(value!)
    else p.reject(err)
    if (this.pending.size === 0 && this.child !== undefined) {
      this.hold(this.child, false)
      const child = this.child
      this.idle = setTimeout(() => { if (this.child === child && this.pending.size === 0) void this.close() }, this.idleMs).unref()
    }
  }

  /** checks in flight keep the gateway's event loop alive (a command waits for its hash); an idle process does not */
  private hold (child: ChildProcess, on: boolean): void {
    const channel = (child as ChildProcess & { channel?: { ref: () => void, unref: () => void } }).channel
    if (on) { child.ref(); channel?.ref() } else { child.unref(); channel?.unref() }
  }

  private failAll (): void {
    const pending = [...this.pending.values()]
    this.pending.clear()
    for (const p of pending) p.reject(unavailable())
  }
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
        throw new ApiError(503, 'OVERLOADED', 'Too many password checks at once; try again shortly', { headers: { 'retry-after': '1' } })
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
  if (limits.isolate === true) return isolated(options, limiter, limits.process ?? new HashProcess(limits.idleMs))
  const hash = (password: string): Promise<string> => limiter.run(() => argon2.hash(password, options))
  const check = (stored: string, password: string): Promise<boolean> => limiter.run(() => argon2.verify(stored, password))
  const decoy = await hash(`decoy-${Math.random()}`)
  return {
    hash,
    close: async () => {},
    async verify (storedHash, password) {
      if (!storedHash || !storedHash.startsWith('$argon2')) {
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

/**
 * Passwords hashed and checked by a HashProcess (the decoy lives there), or in this process once
 * the HashProcess cannot be started here.
 */
function isolated (options: HashRequest['options'], limiter: Limiter, process: HashProcess): Passwords {
  let decoy: Promise<string> | undefined
  const local = async (request: Omit<HashRequest, 'id'>): Promise<string | boolean> => {
    if (request.op === 'hash') return await argon2.hash(request.password, options)
    if (request.stored === undefined) {
      decoy ??= argon2.hash(`decoy-${Math.random()}`, options)
      await argon2.verify(await decoy, request.password)
      return false
    }
    return await argon2.verify(request.stored, request.password).catch(() => false)
  }
  const run = async (request: Omit<HashRequest, 'id'>): Promise<string | boolean> => {
    if (process.broken) return await local(request)
    return await process.run(request)
  }
  return {
    hash: async (password) => await limiter.run(async () => await run({ op: 'hash', password, options }) as string),
    async verify (storedHash, password) {
      const stored = storedHash !== null && storedHash !== undefined && storedHash.startsWith('$argon2') ? storedHash : undefined
      try {
        return await limiter.run(async () => await run({ op: 'verify', password, stored, options }) as boolean)
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
    },
    close: async () => { await process.close() }
  }
}

/** A hash that does not parse is a failed check; a full queue stays a 503. */
function rethrowOverload (err: unknown): false {
  if (err instanceof ApiError) throw err
  return false
}

/** Usernames are case-insensitive and compared trimmed (SQL Server compares 'admin' and 'Admin  ' as equal). */
export function normalizeUsername (username: string): string {
  return username.normalize('NFKC').trim().toLowerCase()
}
