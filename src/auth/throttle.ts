// Counts failed logins per normalized username in a sliding window, attempts in flight included.

const MAX_KEYS = 10000

interface Entry {
  /** times of the failures in the window, oldest first */
  failures: number[]
  /** attempts reserved and not yet settled: each one may still become a failure */
  pending: number
  /** attempts waiting for one in flight to settle */
  waiting: Array<() => void>
}

/** nothing counted, nothing in flight, nobody waiting: the entry can go */
const idle = (entry: Entry): boolean => entry.failures.length === 0 && entry.pending === 0 && entry.waiting.length === 0

/**
 * An attempt is reserved before its password is checked and settled after (fail, succeed or
 * release), so that failures plus attempts in flight never exceed the limit: a burst sent at once
 * gets at most `max` passwords checked, however long the checks queue. An attempt that finds every
 * remaining try in flight waits for one of them to settle rather than being refused, so that
 * clients of one account logging in at once with the right password are not throttled.
 */
export class FailureThrottle {
  private readonly entries = new Map<string, Entry>()
  /**
   * `now`: by default the monotonic clock, so that a system clock set back (NTP) does not keep the
   * failures before it in the window, and their refusal, for as long as it went back.
   */
  constructor (private readonly max: number, private readonly windowMs: number, private readonly now: () => number = () => performance.now()) {}

  /**
   * 0 once an attempt is reserved (exactly one of fail, succeed or release must follow), or the
   * seconds until the next attempt may be made (nothing reserved).
   */
  async reserve (key: string): Promise<number> {
    for (;;) {
      const entry = this.entry(key)
      if (entry.failures.length >= this.max) return this.wait(entry)
      if (entry.failures.length + entry.pending < this.max) {
        entry.pending++
        return 0
      }
      // Every try left is in flight: whether one is left after them depends on how they end.
      await new Promise<void>((resolve) => entry.waiting.push(resolve))
    }
  }

  /** A reserved attempt failed: it counts for the window. */
  fail (key: string): void {
    const entry = this.entry(key)
    entry.failures.push(this.now())
    this.settle(key, entry)
    if (this.entries.size > MAX_KEYS) this.prune()
  }

  /** A reserved attempt succeeded: the failures so far are forgotten (attempts still in flight are not). */
  succeed (key: string): void {
    const entry = this.entry(key)
    entry.failures = []
    this.settle(key, entry)
  }

  /** A reserved attempt ended without a verdict (the database or the hasher failed): it counts for nothing. */
  release (key: string): void {
    this.settle(key, this.entry(key))
  }

  private settle (key: string, entry: Entry): void {
    if (entry.pending > 0) entry.pending--
    // Each waiter looks again, in the order they came; those that still find no room queue again, in that order.
    const waiting = entry.waiting.splice(0)
    for (const wake of waiting) wake()
    if (idle(entry) && waiting.length === 0) this.entries.delete(key)
  }

  /** The key's entry, created when missing, without failures older than the window. */
  private entry (key: string): Entry {
    let entry = this.entries.get(key)
    if (entry === undefined) {
      entry = { failures: [], pending: 0, waiting: [] }
      this.entries.set(key, entry)
    } else {
      this.expire(entry)
    }
    return entry
  }

  private expire (entry: Entry): void {
    const cutoff = this.now() - this.windowMs
    if (entry.failures.length > 0 && entry.failures[0] <= cutoff) entry.failures = entry.failures.filter((at) => at > cutoff)
  }

  private wait (entry: Entry): number {
    const failures = entry.failures
    return Math.max(1, Math.ceil((failures[failures.length - this.max] + this.windowMs - this.now()) / 1000))
  }

  /**
   * Bounds memory when many different usernames are tried: expired entries first, then those with
   * the fewest failures, the oldest among equals. The oldest first let a guesser who had used up an
   * account's tries (or the account's cap over all addresses) get them back by trying 10000 other
   * names: the locked count, among the oldest, went first. Now flooding the map pushes out counts
   * of one failure, such as the flood's own. Entries with attempts in flight stay (their count must
   * not be lost); there are at most as many as logins in flight.
   */
  private prune (): void {
    for (const [key, entry] of this.entries) {
      this.expire(entry)
      if (idle(entry)) this.entries.delete(key)
    }
    if (this.entries.size <= MAX_KEYS / 2) return
    // a stable sort: insertion order (the oldest first) among equal counts
    const evictable = [...this.entries].filter(([, entry]) => entry.pending === 0 && entry.waiting.length === 0)
      .sort(([, a], [, b]) => a.failures.length - b.failures.length)
    for (const [key] of evictable) {
      if (this.entries.size <= MAX_KEYS / 2) break
      this.entries.delete(key)
    }
  }
}

/**
 * Login failures counted per username and client address (`perPair`), and per username over all
 * addresses (`perUser`, a higher cap). Counted per username alone, five wrong passwords from one
 * machine locked the account out for everyone, the admin included, for as long as they were sent
 * again; now they lock out that machine, and only many addresses together reach the account's cap.
 */
export class LoginThrottle {
  private readonly pairs: FailureThrottle
  private readonly users: FailureThrottle
  constructor (perPair: number, perUser: number, windowMs: number, now: () => number = () => performance.now()) {
    this.pairs = new FailureThrottle(perPair, windowMs, now)
    this.users = new FailureThrottle(perUser, windowMs, now)
  }

  /**
   * As FailureThrottle.reserve, for both counts: wait 0 once both are reserved, else the seconds to wait
   * and which count refused (nothing reserved).
   */
  async reserve (user: string, address: string | undefined): Promise<{ wait: number, scope?: 'address' | 'user' }> {
    // the address's count first: a burst from one address waits there, holding none of the account's tries
    const pairWait = await this.pairs.reserve(pairKey(user, address))
    if (pairWait > 0) return { wait: pairWait, scope: 'address' }
    const wait = await this.users.reserve(user)
    if (wait === 0) return { wait: 0 }
    this.pairs.release(pairKey(user, address))
    return { wait, scope: 'user' }
  }

  fail (user: string, address: string | undefined): void {
    this.pairs.fail(pairKey(user, address))
    this.users.fail(user)
  }

  /** The right password: this address's failures and the account's are forgotten (as FailureThrottle.succeed). */
  succeed (user: string, address: string | undefined): void {
    this.pairs.succeed(pairKey(user, address))
    this.users.succeed(user)
  }

  release (user: string, address: string | undefined): void {
    this.pairs.release(pairKey(user, address))
    this.users.release(user)
  }
}

const pairKey = (user: string, address: string | undefined): string => `${user}\u0000${address === undefined ? '' : addressKey(address)}`

/**
 * The address a login is counted under: an IPv4 address as it is (also written IPv4-mapped,
 * ::ffff:10.0.0.5), an IPv6 address by its /64 network. One IPv6 host is given a whole /64 and may
 * use any address in it: counted per address, it would have 2^64 fresh counts, enough to reach the
 * account's cap alone and keep the admin out everywhere.
 */
export function addressKey (ip: string): string {
  const address = ip.replace(/%.*$/, '')
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped !== null) return mapped[1]
  if (!address.includes(':')) return address
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined]
  const groups = (text: string): string[] => text === '' ? [] : text.split(':')
  const first = groups(head)
  const last = tail === undefined ? [] : groups(tail)
  // a trailing dotted quad (::ffff:… handled above; 64:ff9b::1.2.3.4) stands for the last two groups
  const width = last.length > 0 && last[last.length - 1].includes('.') ? 7 : 8
  const all = tail === undefined ? first : [...first, ...Array(Math.max(0, width - first.length - last.length)).fill('0'), ...last]
  const network = all.slice(0, 4).map((g) => (Number.parseInt(g, 16) || 0).toString(16))
  while (network.length < 4) network.push('0')
  return `${network.join(':')}::/64`
}
