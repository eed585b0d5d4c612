// User management rules: who may change what, the licence cap, and revocation by token version.
import { ApiError, badRequest, forbidden, licenceLimit } from './errors.js'
import { BadQueryError, ConflictError, NotFoundError, PreconditionFailedError } from './db/errors.js'
import { isSsoMarker, SSO_MARKER_PREFIX, type SsoIdentity } from './auth/sso.js'
import { normalizeUsername, storedUsername, type Passwords } from './auth/passwords.js'
import { parseFilter, parseListQuery, type DerivedFilters, type Filter } from './db/list-query.js'
import { users as usersDef } from './db/resources.js'
import type { Id, Repository } from './db/repository.js'
import type { Executor, Row } from './db/types.js'
import { randomInt } from 'node:crypto'
import { hiddenCharacter } from '../schemas/common.js'
import { INTEGER_RANGES } from './db/storage.js'
import { VISIBLE_USERNAME_RE, type User, type UserCreate, type UserType, type UserUpdate } from '../schemas/users.js'

/**
 * Who acts: the user a token names (its id as the user table keys it, a number or a login name), or
 * the operator at the server's shell (`picking-gateway user`), who is no user row (id null).
 */
export interface Actor { id: Id | null, type: UserType }

/** Whether the path's id names the actor, as written (the checks before the row is read). */
function names (actor: Actor, id: Id): boolean {
  return actor.id !== null && String(actor.id) === String(id)
}

/**
 * Whether a row is the actor's own. Compared with the row read, not the path: a user table keyed by
 * the login name is found under another case in a case-insensitive collation ('/api/users/ADMIN').
 */
function isOwn (actor: Actor, row: Row): boolean {
  return actor.id !== null && String(row.id) === String(actor.id)
}

/**
 * The token version a new user row starts at: random, so that the tokens of a deleted user do not fit
 * a new row that takes its key again (a table keyed by the login name, where the same name is the same
 * id; a rowid SQLite gives again), which the token's id and name alone cannot tell apart. In the lower
 * half of what the column holds (an int unless it says less), so that revocations, one up each, stay in it.
 */
export function firstTokenVersion (repo: Repository): number {
  const most = Math.min(lastTokenVersion(repo) ?? INTEGER_RANGES.int[1], INTEGER_RANGES.int[1])
  return randomInt(1, Math.max(2, Math.floor(most / 2)))
}

/**
 * The largest token version the column holds on SQL Server: a tinyint's 255, a smallint's 32767, a
 * decimal(p,0)'s 10^p - 1 (numeric(5,0): 99999); undefined where its type sets no such bound (SQLite).
 */
function lastTokenVersion (repo: Repository): number | undefined {
  const info = repo.storage.field('tokenVersion').info
  if (repo.storage.dialect !== 'mssql' || info === undefined) return undefined
  const type = info.type.toLowerCase()
  if (type === 'decimal' || type === 'numeric') return info.precision === undefined ? undefined : 10 ** (info.precision - (info.scale ?? 0)) - 1
  return INTEGER_RANGES[type]?.[1]
}

/**
 * The token version a revocation writes: one up, or 0 past the last value the column holds. A legacy
 * table's tinyint (or smallint, decimal(2,0)) reaches its end after so many password changes and
 * disables, and one more would be refused (error 220, or the 400 before it) at every revocation of that
 * user for good: no disable, no new password. Coming round to 0 revives only tokens of a version that many
 * revocations old; a user the gateway creates starts higher (firstTokenVersion), so its first round
 * meets none of its own.
 */
export function nextTokenVersion (repo: Repository, current: unknown): number {
  const next = Number(current ?? 0) + 1
  const last = lastTokenVersion(repo)
  return last !== undefined && next > last ? 0 : next
}

/** Account types that use a licence login (admins do not). */
const LICENSED: UserType[] = ['user', 'application']

/** The accounts that use a licence login: enabled, of a type in LICENSED. */
export async function countLicensed (repo: Repository, opts: { tx?: Executor, lock?: boolean } = {}): Promise<number> {
  const { filters } = parseListQuery({ enabled: 'true', type: `[or]${LICENSED.join(';')}` }, repo.def)
  return await repo.count(filters, opts)
}

export interface UserServiceOptions {
  repo: Repository
  passwords: Passwords
  licenceLogins: number
  /**
   * called after a user row was changed or deleted: a copy kept for token checks is stale, whether
   * the change revoked tokens (disabled, deleted, version bumped) or gave access back (enabled)
   */
  onChange: (userId: Id) => void
  /** what single sign-on did to user rows (created, type changed): the log's audit trail */
  audit?: (fields: object, message: string) => void
}

function usernameTaken (username: string, taken: Row, marker: string): ApiError {
  // the provider's part of the marker (its id has no ':'): a row of the same provider under another subject is
  // most likely the same person, keyed by another claim before subjectClaim changed (README: choose it once)
  const provider = marker.slice(0, marker.indexOf(':', SSO_MARKER_PREFIX.length) + 1)
  const whose = !isSsoMarker(taken.passwordHash)
    ? 'a local account'
    : (taken.passwordHash as string).startsWith(provider)
        ? "another single sign-on account of this provider, under another subject (one keyed by another claim before auth.sso subjectClaim changed, or the person's former account there)"
        : 'another single sign-on account'
  return forbidden(`The username '${username}' is already taken by ${whose}; an identity provider's user is never linked to it. Rename that account or map another claim to the username (auth.sso usernameClaim); no user was created`)
}

/**
 * `source=sso` and `source=local` on the user list: whether the password-hash column holds the
 * single sign-on marker (toUser's test, as a LIKE on its fixed prefix).
 */
export const userFilters: DerivedFilters = {
  source: (raw) => {
    if (raw !== 'sso' && raw !== 'local') throw new BadQueryError(`Invalid value for 'source': expected sso or local, got '${raw}'`)
    return { field: 'passwordHash', op: raw === 'sso' ? 'like' : 'notlike', values: [`${SSO_MARKER_PREFIX}%`] }
  },
  enabled: (raw) => shownEnabled(parseFilter('enabled', usersDef.fields.enabled, raw))
}

/**
 * An `enabled` filter as the user list shows the flag (toUser): true only where the row holds true; a
 * NULL or a code no value map knows (another program's row) reads false and is not enabled, so
 * `enabled=false` (or `[not]true`, `[lt]true`) is "not true" and finds those rows too. A filter
 * that takes both values or neither is left as it is.
 */
function shownEnabled (filter: Filter): Filter {
  const values = new Set(filter.values)
  const has = (v: boolean): boolean => values.has(v)
  let shown: boolean[]
  switch (filter.op) {
    case 'eq': case 'or': shown = [true, false].filter(has); break
    case 'not': case 'nor': shown = [true, false].filter((v) => !has(v)); break
    case 'gt': shown = has(false) ? [true] : []; break
    case 'gte': shown = has(true) ? [true] : [true, false]; break
    case 'lt': shown = has(true) ? [false] : []; break
    case 'lte': shown = has(false) ? [false] : [true, false]; break
    default: return filter
  }
  if (shown.length !== 1) return filter
  return shown[0] ? { field: 'enabled', op: 'eq', values: [true] } : { field: 'enabled', op: 'not', values: [true] }
}

/** The public shape: never the hash or the token version, whatever the row holds. */
export function toUser (row: Row): User {
  return {
    id: row.id as User['id'],
    username: row.username as string,
    type: row.type as UserType,
    displayName: (row.displayName as string | null) ?? null,
    enabled: row.enabled === true,
    source: isSsoMarker(row.passwordHash) ? 'sso' : 'local',
    lastLoginAt: (row.lastLoginAt as string | null) ?? null,
    createdAt: row.createdAt as string,
    modifiedAt: row.modifiedAt as string
  }
}

/**
 * A username as stored (storedUsername), refused with a 400 when Unicode NFKC has made it longer than
 * the API's 64 characters: the schema counts what was typed, and NFKC writes some characters as
 * several (the ligature U+FDFA as 18), which the column's own limit then refused in other words.
 */
function storableUsername (name: string): string {
  const stored = storedUsername(name)
  if (stored.length > 64) throw badRequest(`'username' would be stored as ${stored.length} characters (Unicode NFKC writes some characters as several), more than 64`, 'VALIDATION_ERROR')
  return stored
}

export class UserService {
  constructor (private readonly opts: UserServiceOptions) {}

  async create (input: UserCreate): Promise<User> {
    const type = input.type ?? 'user'
    const enabled = input.enabled ?? true
    const username = storableUsername(input.username)
    // hashed before the transaction: argon2 is slow on purpose, and the licence lock must be short
    const passwordHash = await this.opts.passwords.hash(input.password)
    const row = await this.opts.repo.create({
      username,
      passwordHash,
      type,
      // left out when not given: the column's default (a picking system's NOT NULL DEFAULT ''), else NULL
      displayName: input.displayName,
      enabled,
      tokenVersion: firstTokenVersion(this.opts.repo)
    }, enabled && LICENSED.includes(type) ? { guard: async (tx) => { await this.assertLicence(tx) } } : {})
    return toUser(row)
  }

  /** Reading a user record: admins any, others only their own. */
  async read (id: Id, actor: Actor): Promise<Row | undefined> {
    if (actor.type === 'admin' || names(actor, id)) return await this.opts.repo.get(id)
    // the path may spell the actor's own key otherwise (another case, a GUID's braces): the row decides.
    // Another user's record, or none, is the same 403 as before: a path tells nothing of who exists.
    const row = await this.othersRow(id)
    if (row === undefined || !isOwn(actor, row)) throw forbidden('You may only read your own user record')
    return row
  }

  /**
   * The row a path names for an actor that is no admin and does not name itself: an id several rows hold
   * is no row of its own (its token names none of them), and a 409 would tell it that the id exists
   */
  private async othersRow (id: Id): Promise<Row | undefined> {
    try {
      return await this.opts.repo.get(id)
    } catch (err) {
      if (err instanceof ConflictError) return undefined
      throw err
    }
  }

  async update (id: Id, patch: UserUpdate, actor: Actor, check?: (current: Row) => boolean): Promise<User> {
    // another revocation committed between the read of the row and its lock (a second admin, the user's own
    // new password): the change is made again from the row as it is then, as if it had come a moment later,
    // not answered with a 412 about an ETag the client never sent (a few times: then the 412 stands). Not a
    // change of the actor's own row: the version that moved revoked the actor's token
    for (let attempt = 1; ; attempt++) {
      const user = await this.updateOnce(id, patch, actor, check, attempt < 3)
      if (user !== undefined) return user
    }
  }

  /** update(), or undefined when `retry` and the token version moved between the read and the lock. */
  private async updateOnce (id: Id, patch: UserUpdate, actor: Actor, check: ((current: Row) => boolean) | undefined, retry: boolean): Promise<User | undefined> {
    const current = actor.type === 'admin' || names(actor, id) ? await this.opts.repo.get(id) : await this.othersRow(id)
    this.assertMayUpdate(id, actor, current)
    if (!current) throw new NotFoundError(`User ${id} not found`)
    this.assertOwnChanges(id, patch, actor, current)
    if (isOwn(actor, current) && ((patch.type !== undefined && patch.type !== current.type) || (patch.enabled !== undefined && patch.enabled !== current.enabled))) {
      throw forbidden('You cannot change your own type or enabled state')
    }
    if (isSsoMarker(current.passwordHash)) {
      // The identity provider is the source of truth for these; a password here would be a second way in.
      if (patch.password !== undefined) throw badRequest(`User ${id} signs in through single sign-on: it has no password here`, 'SSO_USER')
      if (patch.type !== undefined && patch.type !== current.type) {
        throw badRequest(`User ${id} signs in through single sign-on: its type follows the identity provider's claim; change it there`, 'SSO_USER')
      }
    }
    const changes: Row = {}
    // a name sent back as the row holds it ('JSmith', 'Schulz ' of the picking system's own table), or by
    // a user (who may not rename itself) in another case, is no change: its spelling stays as stored
    const sameName = patch.username !== undefined && (patch.username === String(current.username) ||
      (actor.type !== 'admin' && normalizeUsername(patch.username) === normalizeUsername(String(current.username))))
    if (patch.username !== undefined && !sameName) changes.username = storableUsername(patch.username)
    if (patch.displayName !== undefined) changes.displayName = patch.displayName
    if (patch.type !== undefined) changes.type = patch.type
    if (patch.enabled !== undefined) changes.enabled = patch.enabled
    if (patch.password !== undefined) changes.passwordHash = await this.opts.passwords.hash(patch.password)
    // a rename too: a token names its user by id and name (another user's row may take a deleted one's
    // id), and a new version makes every instance read the renamed row again rather than refuse new tokens
    const revoked = patch.password !== undefined || (patch.enabled === false && current.enabled === true) ||
      (patch.type !== undefined && patch.type !== current.type) ||
      (changes.username !== undefined && normalizeUsername(String(changes.username)) !== normalizeUsername(String(current.username)))
    if (revoked) changes.tokenVersion = nextTokenVersion(this.opts.repo, current.tokenVersion)
    // The version read above must still be current, or a concurrent revocation could be undone.
    // The licence is checked inside the update's transaction, on the locked row, so that two
    // concurrent enables cannot both take the last free login.
    let moved = false
    const row = await this.opts.repo.update(id, changes, {
      check: (row) => {
        if (row.tokenVersion !== current.tokenVersion) {
          // not the user's own change: the version that moved revoked the token this request came with
          // (an admin's disable, type change or new password): it is no later request's to make
          moved = retry && !isOwn(actor, current)
          return false
        }
        return check === undefined || check(row)
      },
      guard: async (locked, tx) => {
        const willCount = (changes.enabled ?? locked.enabled) === true && LICENSED.includes((changes.type ?? locked.type) as UserType)
        const counted = locked.enabled === true && LICENSED.includes(locked.type as UserType)
        if (willCount && !counted) await this.assertLicence(tx)
      }
    }).catch((err: unknown) => {
      if (moved && err instanceof PreconditionFailedError) return undefined
      throw err
    })
    if (row === undefined) return undefined
    // the row's own id: the path may spell a login name in another case (isOwn)
    this.opts.onChange(row.id as Id)
    return toUser(row)
  }

  async delete (id: Id, actor: Actor, check?: (current: Row) => boolean): Promise<void> {
    const selfDelete = (): ApiError => new ApiError(409, 'SELF_DELETE', 'You cannot delete your own account')
    if (names(actor, id)) throw selfDelete()
    // the row found may be the actor's under another spelling of its login name (isOwn)
    const own = (row: Row): boolean => { if (isOwn(actor, row)) throw selfDelete(); return check === undefined || check(row) }
    const row = await this.opts.repo.delete(id, { check: own }).catch((err: unknown) => {
      throw err instanceof NotFoundError ? new NotFoundError(`User ${id} not found`) : err
    })
    this.opts.onChange(row.id as Id)
  }

  /**
   * The user row of an identity provider's user: found by provider and subject (the marker in the
   * password-hash column), created on its first sign-in, its type kept equal to what the provider
   * says. Never linked to a local account. Throws 403 (FORBIDDEN, LICENCE_LIMIT) with a message
   * saying why; the caller logs it.
   */
  async ssoUser (identity: SsoIdentity, stale?: (row: Row) => boolean): Promise<Row> {
    // exactly: under a collation that ignores case, a subject 'Jane' must not find the row of 'jane'
    const row = await this.opts.repo.findExact('passwordHash', identity.marker)
    if (row === undefined) {
      const created = await this.createSso(identity)
      this.opts.audit?.({ userId: created.id, username: created.username, type: created.type }, 'single sign-on: user created by its first token')
      return created
    }
    // a token older than the row's type (stale) authenticates, with the row's type: it cannot set it back
    if (row.enabled !== true || row.type === identity.type || stale?.(row) === true) return row
    const updated = await this.opts.repo.update(row.id as Id, { type: identity.type, tokenVersion: nextTokenVersion(this.opts.repo, row.tokenVersion) }, {
      check: (locked) => locked.passwordHash === identity.marker,
      guard: async (locked, tx) => {
        const counted = locked.enabled === true && LICENSED.includes(locked.type as UserType)
        if (locked.enabled === true && LICENSED.includes(identity.type) && !counted) await this.assertLicence(tx)
      }
    })
    this.opts.onChange(row.id as Id)
    this.opts.audit?.({ userId: row.id, username: row.username, from: row.type, to: updated.type }, "single sign-on: the provider's claim changed the user's type; its gateway tokens are revoked")
    return updated
  }

  private async createSso (identity: SsoIdentity): Promise<Row> {
    if ('problem' in identity.username) throw forbidden(`${identity.username.problem}; no user was created`)
    const username = identity.username.name
    if (username.length > 64) throw forbidden('The username from the identity provider is longer than 64 characters; no user was created')
    // the rest of the rule of the API's own usernames (schemas/users.ts), not a second copy of it
    if (!VISIBLE_USERNAME_RE.test(username)) {
      const hidden = hiddenCharacter(username, true)
      throw forbidden(`The username from the identity provider ${hidden === undefined ? 'holds spaces alone' : `holds control or invisible characters (${hidden})`}; no user was created`)
    }
    // the picking system's column may be narrower than the API's 64, or a code page without its letters
    const unfit = this.unfit('username', username)
    if (unfit !== undefined) throw forbidden(`The username '${username}' from the identity provider does not fit the user table (${unfit}); map another claim to the username (auth.sso usernameClaim); no user was created`)
    const taken = await this.opts.repo.findOne('username', username)
    if (taken !== undefined) throw usernameTaken(username, taken, identity.marker)
    try {
      return await this.opts.repo.create({
        username,
        passwordHash: identity.marker,
        type: identity.type,
        // no name (or none that fits) is left out: the column's default (a NOT NULL DEFAULT '')
        displayName: this.fittedDisplayName(identity.displayName),
        enabled: true,
        tokenVersion: firstTokenVersion(this.opts.repo),
        lastLoginAt: new Date()
      }, LICENSED.includes(identity.type) ? { guard: async (tx) => { await this.assertLicence(tx) } } : {})
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err
      // Another request created it (or took the name) in the meantime.
      const again = await this.opts.repo.findExact('passwordHash', identity.marker)
      if (again !== undefined) return again
      const other = await this.opts.repo.findOne('username', username)
      throw other === undefined ? err : usernameTaken(username, other, identity.marker)
    }
  }

  /** Why the user table's column for `field` cannot store `value` as it is (its length, its code page), or undefined. */
  private unfit (field: string, value: string): string | undefined {
    const storage = this.opts.repo.storage
    return storage.refusal(storage.field(field), value)
  }

  /**
   * The provider's `name` as the display-name column can keep it: cut to the column's length, or none
   * where its characters do not fit (a code page without them). It is only shown; a name that does not
   * fit must not keep the person out. None (undefined) leaves the column's default, as an API create without one.
   */
  private fittedDisplayName (name: string | null): string | undefined {
    if (name === null) return undefined
    if (this.unfit('displayName', name) === undefined) return name
    const max = this.opts.repo.storage.field('displayName').info?.maxLength
    if (max === undefined || max <= 0) return undefined
    const chars = [...name].slice(0, max)
    if (chars.some((ch) => this.unfit('displayName', ch) !== undefined)) return undefined
    // the column's length may count bytes (UTF-8, a double-byte code page) or UTF-16 code units (an
    // emoji counts two), not characters: the longest start that fits
    let fits = 0
    for (let low = 1, high = chars.length; low <= high;) {
      const mid = (low + high) >> 1
      if (this.unfit('displayName', chars.slice(0, mid).join('')) === undefined) {
        fits = mid
        low = mid + 1
      } else high = mid - 1
    }
    const cut = chars.slice(0, fits).join('').trimEnd()
    return cut === '' ? undefined : cut
  }

  private assertMayUpdate (id: Id, actor: Actor, current: Row | undefined): void {
    // an admin may send its own type and enabled state unchanged (a form sends every field); update() refuses a change
    if (actor.type === 'admin') return
    // the path as written, or the row it found (its own key in another spelling); none is a 403, as another's
    if (!names(actor, id) && (current === undefined || !isOwn(actor, current))) throw forbidden('You may only change your own user record')
    if (actor.type !== 'user') throw forbidden('Application accounts cannot change their user record; ask an admin')
  }

  /** A user (not an admin) changes its own password only; the other fields of its record it may send back unchanged, as a form does. */
  private assertOwnChanges (id: Id, patch: UserUpdate, actor: Actor, current: Row): void {
    if (actor.type === 'admin') return
    const shown = toUser(current) as unknown as Record<string, unknown>
    // a name the picking system stored in mixed case or with a trailing blank ('JSmith') is sent back as shown: the same name
    const same = (key: string, value: unknown): boolean => key === 'username' && typeof value === 'string' ? normalizeUsername(value) === normalizeUsername(String(shown.username)) : value === shown[key]
    const fields = Object.entries(patch).filter(([key, value]) => key !== 'password' && !same(key, value)).map(([key]) => key)
    if (fields.length > 0) throw forbidden(`You may only change your own password, not ${fields.join(', ')}`)
  }

  /** Inside the write's transaction, with the counted rows locked until it ends (SQL Server: UPDLOCK, HOLDLOCK). */
  private async assertLicence (tx: Executor): Promise<void> {
    const used = await countLicensed(this.opts.repo, { tx, lock: true })
    if (used >= this.opts.licenceLogins) throw licenceLimit(this.opts.licenceLogins)
  }
}
