// Claims of tokens whose signature was checked, kept by the exact token text.

/**
 * The same text is the same signature over the same claims, so a client that sends one token over
 * and over needs one check. An entry answers until its time (by default the token's `exp`, with
 * fast-jwt's rule: valid while now <= exp); the map is emptied when full, which costs one check per
 * token again.
 */
export class VerifiedTokens<C extends { exp?: number }> {
  private readonly entries = new Map<string, { claims: C, until: number }>()
  constructor (private readonly max: number) {}

  /** the claims, 'expired' once past the entry's time, or undefined when the token was not checked here */
  get (token: string, now: number): C | 'expired' | undefined {
    const entry = this.entries.get(token)
    if (entry === undefined || now <= entry.until) return entry?.claims
    this.entries.delete(token)
    return 'expired'
  }

  set (token: string, claims: C, until = claims.exp === undefined ? Number.POSITIVE_INFINITY : claims.exp * 1000): void {
    if (this.entries.size >= this.max) this.entries.clear()
    this.entries.set(token, { claims, until })
  }

  get size (): number {
    return this.entries.size
  }
}
