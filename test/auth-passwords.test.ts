// Password hashing: argon2id, and at most `concurrency` computations at once so logins cannot take every core.
import t from 'tap'
import { createPasswords, HashProcess, Limiter } from '../src/auth/passwords.js'
import { ApiError } from '../src/errors.js'

const FAST = { memoryCost: 1024, timeCost: 1, parallelism: 1 }

t.test('the limiter runs at most `concurrency` tasks at once, in arrival order', async (t) => {
  const limiter = new Limiter(2, 10)
  let running = 0
  let peak = 0
  const order: number[] = []
  const task = (n: number) => limiter.run(async () => {
    running++
    peak = Math.max(peak, running)
    await new Promise((resolve) => setTimeout(resolve, 5))
    order.push(n)
    running--
    return n
  })
  const results = await Promise.all([1, 2, 3, 4, 5, 6].map(task))
  t.same(results, [1, 2, 3, 4, 5, 6])
  t.equal(peak, 2, 'never more than two at once')
  t.same(order.slice(2), [3, 4, 5, 6], 'the waiting ones in arrival order')
})

t.test('a task that fails frees its slot; a full queue is a 503 OVERLOADED', async (t) => {
  const limiter = new Limiter(1, 1)
  let release!: () => void
  const first = limiter.run(() => new Promise<void>((resolve) => { release = resolve }))
  const second = limiter.run(async () => { throw new Error('boom') })
  const err = await limiter.run(async () => 'never').catch((e: unknown) => e)
  t.ok(err instanceof ApiError)
  t.match(err, { statusCode: 503, code: 'OVERLOADED', message: /password checks/ })
  t.same((err as ApiError).headers, { 'retry-after': '1' })
  release()
  await first
  await t.rejects(second, /boom/)
  t.equal(await limiter.run(async () => 'after'), 'after', 'the slot is free again after a failure')
})

t.test('hashing and verifying go through the limiter', async (t) => {
  const passwords = await createPasswords(FAST, { concurrency: 1, queue: 2 })
  const hash = await passwords.hash('correct horse')
  t.match(hash, /^\$argon2id\$/)
  t.equal(await passwords.verify(hash, 'correct horse'), true)
  t.equal(await passwords.verify(hash, 'wrong'), false)
  t.equal(await passwords.verify('not a hash', 'x'), false, 'a stored value that is no argon2 hash is a failed check (after a decoy)')
  t.equal(await passwords.verify('$argon2id$broken', 'x'), false, 'a broken hash is a failed check')
  // one running, two waiting: the fourth at once is refused, and the others still answer
  const burst = await Promise.allSettled([1, 2, 3, 4].map(() => passwords.verify(hash, 'correct horse')))
  t.same(burst.map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled', 'rejected'])
  t.match((burst[3] as PromiseRejectedResult).reason, { statusCode: 503, code: 'OVERLOADED' })
  const unknown = await Promise.allSettled([1, 2, 3, 4].map(() => passwords.verify(undefined, 'x')))
  t.match((unknown[3] as PromiseRejectedResult).reason, { code: 'OVERLOADED' }, 'the decoy check is limited the same way')
})

/** whether a process is running (signal 0 only checks) */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
const until = async (check: () => boolean, ms: number): Promise<boolean> => {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (check()) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return check()
}

t.test('isolated: the same answers from a process of its own', async (t) => {
  const passwords = await createPasswords(FAST, { concurrency: 1, queue: 2, isolate: true })
  t.teardown(() => passwords.close())
  const hash = await passwords.hash('correct horse')
  t.match(hash, /^\$argon2id\$/)
  t.equal(await passwords.verify(hash, 'correct horse'), true)
  t.equal(await passwords.verify(hash, 'wrong'), false)
  t.equal(await passwords.verify(undefined, 'x'), false, 'an unknown user: checked against the decoy, false')
  t.equal(await passwords.verify('not a hash', 'x'), false)
  t.equal(await passwords.verify('$argon2id$broken', 'x'), false, 'a broken hash is a failed check')
  const burst = await Promise.allSettled([1, 2, 3, 4].map(() => passwords.verify(hash, 'correct horse')))
  t.same(burst.map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled', 'rejected'], 'the limiter stays in the gateway')
  t.match((burst[3] as PromiseRejectedResult).reason, { statusCode: 503, code: 'OVERLOADED' })
})

t.test('isolated: the hashing process runs at nice 19, ends when idle, and starts again', { skip: process.platform !== 'linux' && '/proc' }, async (t) => {
  const proc = new HashProcess(300)
  t.teardown(() => proc.close())
  const options = { type: 2 as const, ...FAST }
  const hash = await proc.run({ op: 'hash', password: 'pw-123456', options }) as string
  const pid = proc.pid!
  const { readFileSync } = await import('node:fs')
  // /proc/<pid>/stat: the 19th field is the nice value (after the command in parentheses)
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  t.equal(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]), 19, 'the lowest CPU priority')
  t.ok(await until(() => !alive(pid), 3000), 'ended after 300 ms without a check')
  t.equal(proc.pid, undefined)
  t.equal(await proc.run({ op: 'verify', password: 'pw-123456', stored: hash, options }), true, 'the next check starts it again')
  t.not(proc.pid, pid)
})

t.test('isolated: a hashing process that dies answers 503, never a failed login, and the next check works', async (t) => {
  const passwords = await createPasswords(FAST, { isolate: true, concurrency: 2 })
  t.teardown(() => passwords.close())
  // a check that takes long enough to be killed in the middle
  const slow = createPasswords({ memoryCost: 65536, timeCost: 20, parallelism: 1 }, { isolate: true })
  const heavy = await slow
  t.teardown(() => heavy.close())
  const heavyHash = await heavy.hash('x')
  const inFlight = heavy.verify(heavyHash, 'x')
  await new Promise((resolve) => setTimeout(resolve, 50))
  const { execFileSync } = await import('node:child_process')
  // the only hasher child of this test process still working: the heavy one
  const pids = execFileSync('pgrep', ['-P', String(process.pid)], { encoding: 'utf8' }).trim().split('\n').map(Number)
  for (const pid of pids) {
    const cmd = execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' })
    if (/hasher/.test(cmd)) process.kill(pid, 'SIGKILL')
  }
  await t.rejects(inFlight, { statusCode: 503, code: 'UNAVAILABLE' }, 'the check in flight: 503, not "wrong password"')
  t.equal(await passwords.verify(await passwords.hash('again'), 'again'), true, 'a new process answers the next check')
  t.equal(await heavy.verify(heavyHash, 'y'), false)
})

t.test('isolated: the hashing process never outlives the gateway, and never keeps it alive', async (t) => {
  const { spawn } = await import('node:child_process')
  const { fileURLToPath } = await import('node:url')
  const module = JSON.stringify(fileURLToPath(new URL('../src/auth/passwords.ts', import.meta.url)))
  const run = (tail: string) => {
    const script = `import { createPasswords } from ${module}
const p = await createPasswords({ memoryCost: 1024, timeCost: 1, parallelism: 1 }, { isolate: true })
await p.verify(await p.hash('pw-123456'), 'pw-123456')
const { execFileSync } = await import('node:child_process')
console.log(execFileSync('pgrep', ['-P', String(process.pid)], { encoding: 'utf8' }).trim())
${tail}`
    const child = spawn(process.execPath, [...process.execArgv, '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (c: string) => { out += c })
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    return { child, exited, hasher: async () => { await until(() => /^\d+/.test(out), 20000); return Number(out.trim().split('\n')[0]) } }
  }
  // a command that checks a password and is done: it ends by itself, and so does its hasher
  const done = run('')
  const doneHasher = await done.hasher()
  t.ok(doneHasher > 0)
  t.equal(await Promise.race([done.exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 10000))]), 0, 'the idle hasher kept nothing alive')
  t.ok(await until(() => !alive(doneHasher), 3000), 'and ended with it')
  // a gateway killed outright: its hasher sees the channel close and ends
  const killed = run('setInterval(() => {}, 1000)')
  const hasher = await killed.hasher()
  t.ok(alive(hasher))
  killed.child.kill('SIGKILL')
  await killed.exited
  t.ok(await until(() => !alive(hasher), 3000), 'ended when its gateway was killed')
})

t.test('isolated: where the hashing process cannot start, passwords are checked in the gateway\'s own process', async (t) => {
  const proc = new HashProcess(1000, '/nonexistent/hasher.js')
  const passwords = await createPasswords(FAST, { isolate: true, process: proc })
  t.teardown(() => passwords.close())
  // three starts that end before answering: 503s (try again), then the gateway's own process answers
  for (let i = 0; i < 3; i++) await t.rejects(passwords.hash('pw-123456'), { statusCode: 503, code: 'UNAVAILABLE' })
  t.ok(proc.broken)
  const hash = await passwords.hash('pw-123456')
  t.equal(await passwords.verify(hash, 'pw-123456'), true)
  t.equal(await passwords.verify(hash, 'nope'), false)
  t.equal(await passwords.verify(undefined, 'nope'), false, 'the decoy too')
})
