// Claims of tokens whose signature was checked, kept by the exact token text.

interface Entry<C> { claims: C, until: number }

/**
 * The same text is the same signature over the same claims, so a client that sends one token over
 * and over needs one check. An entry answers until its time (by default the token's `exp`, with
 * fast-jwt's rule: valid while now <= exp); the map is emptied when full, which costs one check per
 * token again.
 */
export class VerifiedTokens<C extends { exp?: number }> {
  private readonly entries = new Map<string, Entry<C>>()
  /**
   * The header text each connection sent last, with its token's entry. A keep-alive client sends
   * the same header on every request: comparing it with the last one costs less than hashing the
   * token to find it in the map (0.5 µs a request in a profile; README, Performance).
   */
  private readonly lastSent = new WeakMap<object, { text: string, entry: Entry<C> }>()
  constructor (private readonly max: number) {}

  /** the claims, 'expired' once past the entry's time, or undefined when the token was not checked here */
  get (token: string, now: number): C | 'expired' | undefined {
    const entry = this.entries.get(token)
    if (entry === undefined || now <= entry.until) return entry?.claims
    this.entries.delete(token)
    return 'expired'
  }

  /** As get, for the exact text (a whole header) that `connection` sent last time, when it was remembered. */
  recall (connection: object, text: string, now: number): C | 'expired' | undefined {
    const last = this.lastSent.get(connection)
    if (last === undefined || last.text !== text) return undefined
    if (now <= last.entry.until) return last.entry.claims
    this.lastSent.delete(connection)
    return 'expired'
  }

  /** Remembers that `connection` sent `text`, which carries `token`: its entry, when the token was checked here. */
  remember (connection: object, text: string, token: string): void {
    const entry = this.entries.get(token)
    if (entry !== undefined) this.lastSent.set(connection, { text, entry })
  }

  set (token: string, claims: C, until = claims.exp === undefined ? Number.POSITIVE_INFINITY : claims.exp * 1000): void {
    if (this.entries.size >= this.max) this.entries.clear()
    this.entries.set(token, { claims, until })
  }

  get size (): number {
    return this.entries.size
  }
}
