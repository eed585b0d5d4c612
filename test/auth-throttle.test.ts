import t from 'tap'
import { addressKey, FailureThrottle, LoginThrottle } from '../src/auth/throttle.js'

const entries = (throttle: FailureThrottle) => (throttle as unknown as { entries: Map<string, unknown> }).entries

t.test('failures per key in a sliding window', async (t) => {
  let now = 1_000_000
  const throttle = new FailureThrottle(3, 60_000, () => now)
  for (let i = 0; i < 3; i++) {
    t.equal(await throttle.reserve('alice'), 0)
    throttle.fail('alice')
    now += 1000
  }
  t.equal(await throttle.reserve('alice'), 57, 'until the oldest failure leaves the window')
  t.equal(await throttle.reserve('bob'), 0, 'other users are not affected')
  throttle.release('bob')
  now += 58_000
  t.equal(await throttle.reserve('alice'), 0)
  throttle.fail('alice')
  t.equal(await throttle.reserve('alice'), 0)
  throttle.succeed('alice')
  t.equal(entries(throttle).size, 0, 'a success forgets the failures; nothing is left behind')
})

t.test('attempts in flight count: failures plus attempts in flight never exceed the limit', async (t) => {
  let now = 1_000_000
  const throttle = new FailureThrottle(3, 60_000, () => now)
  const first = await Promise.all([throttle.reserve('alice'), throttle.reserve('alice'), throttle.reserve('alice')])
  t.same(first, [0, 0, 0], 'three reserved')
  let fourth: number | undefined
  const waiting = throttle.reserve('alice').then((wait) => { fourth = wait })
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(fourth, undefined, 'the fourth waits while the three are in flight')
  throttle.fail('alice')
  throttle.fail('alice')
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(fourth, undefined, 'still waiting: the last one in flight may fail too')
  now += 5000
  throttle.fail('alice')
  await waiting
  t.equal(fourth, 55, 'refused once the third failed, until the oldest failure leaves the window')

  // A success among attempts in flight lets the waiting in; a release gives the try back.
  now += 61_000
  await Promise.all([throttle.reserve('bob'), throttle.reserve('bob'), throttle.reserve('bob')])
  const late = [throttle.reserve('bob'), throttle.reserve('bob')]
  throttle.release('bob')
  t.equal(await late[0], 0, 'a released attempt makes room for one')
  throttle.succeed('bob')
  t.equal(await late[1], 0, 'a success makes room')
  throttle.fail('bob')
  throttle.fail('bob')
  throttle.fail('bob')
  t.equal(await throttle.reserve('bob'), 60, 'the attempts in flight during the success still counted')
})

t.test('memory stays bounded when many usernames are tried; attempts in flight are kept', async (t) => {
  const throttle = new FailureThrottle(5, 900_000)
  t.equal(await throttle.reserve('target'), 0)
  for (let i = 0; i < 25_000; i++) throttle.fail(`user-${i}`)
  const size = entries(throttle).size
  t.ok(size <= 10_000, `${size} keys kept`)
  throttle.fail('user-24999')
  for (let i = 0; i < 2; i++) throttle.fail('user-24999')
  t.equal(await throttle.reserve('user-24999'), 0, 'recent keys are kept')
  throttle.fail('user-24999')
  t.ok(await throttle.reserve('user-24999') > 0, 'and keep counting')
  t.ok(entries(throttle).has('target'), 'an attempt in flight is never pruned')
})

t.test('many other usernames tried do not push out a count that refuses attempts: a guesser gets no tries back by flooding', async (t) => {
  let now = 1_000_000
  const throttle = new FailureThrottle(5, 900_000, () => now)
  for (let i = 0; i < 5; i++) throttle.fail('admin')
  for (let i = 0; i < 4; i++) throttle.fail('almost')
  t.ok(await throttle.reserve('admin') > 0, 'locked')
  // 25000 names of one failure each (the flood), older ones of the window first
  for (let i = 0; i < 25_000; i++) {
    throttle.fail(`junk-${i}`)
    now += 10
  }
  t.ok(entries(throttle).size <= 10_000, `${entries(throttle).size} keys kept`)
  t.ok(await throttle.reserve('admin') > 0, 'still locked: the flood went before the locked count')
  t.equal(await throttle.reserve('almost'), 0, 'one try left, as before the flood')
  throttle.fail('almost')
  t.ok(await throttle.reserve('almost') > 0, 'its four failures were kept')
})

t.test('per username and address, under a cap per username: a refusal by either reserves nothing', async (t) => {
  let now = 1_000_000
  const throttle = new LoginThrottle(2, 3, 60_000, () => now)
  const inner = (name: 'pairs' | 'users') => entries((throttle as unknown as Record<string, FailureThrottle>)[name])
  for (let i = 0; i < 2; i++) {
    t.same(await throttle.reserve('alice', '10.0.0.1'), { wait: 0 })
    throttle.fail('alice', '10.0.0.1')
  }
  t.same(await throttle.reserve('alice', '10.0.0.1'), { wait: 60, scope: 'address' }, 'this address has used its tries')
  t.same(await throttle.reserve('alice', '10.0.0.2'), { wait: 0 }, 'another address has its own')
  throttle.fail('alice', '10.0.0.2')
  now += 1000
  t.same(await throttle.reserve('alice', '10.0.0.3'), { wait: 59, scope: 'user' }, "the account's cap: three failures in all")
  // nothing was left reserved by the refusals: once the window passes, every count is empty again
  now += 60_000
  t.same(await throttle.reserve('alice', '10.0.0.1'), { wait: 0 })
  throttle.succeed('alice', '10.0.0.1')
  t.equal(inner('users').size, 0)
  t.equal(inner('pairs').size, 1, "the other address's failure stays until its window passes")
})

t.test('attempts waiting on their address hold none of the account\'s tries: another address is not kept waiting', async (t) => {
  const throttle = new LoginThrottle(2, 3, 60_000)
  t.same(await throttle.reserve('alice', '10.0.0.1'), { wait: 0 })
  t.same(await throttle.reserve('alice', '10.0.0.1'), { wait: 0 })
  // both of this address's tries are in flight: the next waits for them
  let third: { wait: number } | undefined
  const waiting = throttle.reserve('alice', '10.0.0.1').then((r) => { third = r })
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(third, undefined, 'waiting')
  const other = await Promise.race([throttle.reserve('alice', '10.0.0.2'), new Promise((resolve) => setTimeout(() => resolve('kept waiting'), 200))])
  t.same(other, { wait: 0 }, 'before (the account counted first): kept waiting behind the other address\'s burst')
  throttle.fail('alice', '10.0.0.1')
  throttle.fail('alice', '10.0.0.1')
  await waiting
  t.same(third, { wait: 60, scope: 'address' })
})

t.test('addressKey: IPv4 as it is, IPv6 by its /64 network, however it is written', async (t) => {
  t.equal(addressKey('10.0.0.5'), '10.0.0.5')
  t.equal(addressKey('::ffff:10.0.0.5'), '10.0.0.5', 'IPv4-mapped')
  t.equal(addressKey('::FFFF:10.0.0.5'), '10.0.0.5')
  for (const written of ['2001:db8:abcd:12::1', '2001:0db8:abcd:0012:ffff:ffff:ffff:ffff', '2001:db8:abcd:12:1:2:3:4', '2001:DB8:ABCD:12::', '2001:db8:abcd:12::1%eth0']) {
    t.equal(addressKey(written), '2001:db8:abcd:12::/64', written)
  }
  t.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64')
  t.equal(addressKey('::1'), '0:0:0:0::/64')
  t.equal(addressKey('fe80::1:2:3:4'), 'fe80:0:0:0::/64')
  t.equal(addressKey('64:ff9b::1.2.3.4'), '64:ff9b:0:0::/64')
  t.not(addressKey('2001:db8:abcd:12::1'), addressKey('2001:db8:abcd:13::1'), 'another /64')
})

t.test('a system clock set back (NTP) does not keep failures in the window for as long as it went back', async (t) => {
  // the system clock as Date.now reads it, stepped below
  const realNow = Date.now
  let step = 0
  Date.now = () => realNow() + step
  t.teardown(() => { Date.now = realNow })
  const throttle = new LoginThrottle(2, 50, 200)
  for (let i = 0; i < 2; i++) {
    t.same(await throttle.reserve('alice', '10.0.0.5'), { wait: 0 })
    throttle.fail('alice', '10.0.0.5')
  }
  t.equal((await throttle.reserve('alice', '10.0.0.5')).wait, 1, 'refused')
  step = -3600 * 1000
  await new Promise((resolve) => setTimeout(resolve, 250))
  t.same(await throttle.reserve('alice', '10.0.0.5'), { wait: 0 }, 'the window has passed (before: refused for the hour, Retry-After some 3600 s)')
})
