// Counts failed logins per normalized username in a sliding window.

const MAX_KEYS = 10000
export class FailureThrottle {
  private readonly failures = new Map<string, number[]>()
  constructor (private readonly max: number, private readonly windowMs: number, private readonly now: () => number = Date.now) {}

  /** Seconds until the next attempt is allowed, or 0 when it is allowed now. */
  retryAfter (key: string): number {
    const recent = this.recent(key)
    if (recent.length < this.max) return 0
    return Math.max(1, Math.ceil((recent[recent.length - this.max] + this.windowMs - this.now()) / 1000))
  }

  fail (key: string): void {
    const recent = this.recent(key)
    recent.push(this.now())
    this.failures.set(key, recent)
    if (this.failures.size > MAX_KEYS) this.prune()
  }

  reset (key: string): void {
    this.failures.delete(key)
  }

  private recent (key: string): number[] {
    const cutoff = this.now() - this.windowMs
    const list = (this.failures.get(key) ?? []).filter((at) => at > cutoff)
    if (list.length === 0) this.failures.delete(key)
    return list
  }

  /** Bounds memory when many different usernames are tried: expired entries first, then the oldest. */
  private prune (): void {
    for (const key of [...this.failures.keys()]) this.recent(key)
    for (const key of this.failures.keys()) {
      if (this.failures.size <= MAX_KEYS / 2) break
      this.failures.delete(key)
    }
  }
}
