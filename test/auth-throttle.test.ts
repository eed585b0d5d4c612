import t from 'tap'
import { FailureThrottle } from '../src/auth/throttle.js'

t.test('failures per key in a sliding window', async (t) => {
  let now = 1_000_000
  const throttle = new FailureThrottle(3, 60_000, () => now)
  t.equal(throttle.retryAfter('alice'), 0)
  for (let i = 0; i < 3; i++) { throttle.fail('alice'); now += 1000 }
  t.equal(throttle.retryAfter('alice'), 57, 'until the oldest failure leaves the window')
  t.equal(throttle.retryAfter('bob'), 0, 'other users are not affected')
  now += 58_000
  t.equal(throttle.retryAfter('alice'), 0)
  throttle.fail('alice')
  throttle.reset('alice')
  t.equal(throttle.retryAfter('alice'), 0, 'a success resets')
})

t.test('memory stays bounded when many usernames are tried', async (t) => {
  const throttle = new FailureThrottle(5, 900_000)
  for (let i = 0; i < 25_000; i++) throttle.fail(`user-${i}`)
  const size = (throttle as unknown as { failures: Map<string, number[]> }).failures.size
  t.ok(size <= 10_000, `${size} keys kept`)
  throttle.fail('user-24999')
  t.equal(throttle.retryAfter('user-24999'), 0, 'recent keys are kept')
})
