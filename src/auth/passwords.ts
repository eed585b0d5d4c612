// argon2id hashing with one set of parameters, and a decoy hash so unknown users cost the same time as known ones.
import argon2 from 'argon2'

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
}

export async function createPasswords (params: Argon2Params = DEFAULT_ARGON2): Promise<Passwords> {
  const options = { type: argon2.argon2id as 2, ...params }
  const hash = (password: string): Promise<string> => argon2.hash(password, options)
  const decoy = await hash(`decoy-${Math.random()}`)
  return {
    hash,
    async verify (storedHash, password) {
      if (!storedHash || !storedHash.startsWith('$argon2')) {
        await argon2.verify(decoy, password).catch(() => false)
        return false
      }
      try {
        return await argon2.verify(storedHash, password)
      } catch {
        return false
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

/** Usernames are case-insensitive and compared trimmed (SQL Server compares 'admin' and 'Admin  ' as equal). */
export function normalizeUsername (username: string): string {
  return username.normalize('NFKC').trim().toLowerCase()
}
