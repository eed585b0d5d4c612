// Password hashing: argon2id, and at most `concurrency` computations at once so logins cannot take every core.
import t from 'tap'
import { createPasswords, Limiter } from '../src/auth/passwords.js'
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
