// Property-based tests of the mapping layer for users: fast-check generates a picking system's own SQLite user
// tables within what the README's "Day one" section says a mapping supports (other column names, declared types,
// NULLs, CHAR padding of usernames, type as codes, enabled as a flag code, text or integer ids, a username shared
// with the id, lastLoginAt in the README's time formats, rows with no password the gateway can check, unmapped
// columns, NOT NULL columns with defaults), builds the mapping for each and checks the API over it: no 500; a 4xx
// changes nothing and says something; a user created through the API reads back as sent, logs in and its token
// works; a wrong password, a disabled user and a row without a usable hash are a 401 that changes nothing; a
// password change revokes the old tokens; the list parameters agree with the values reads show (each equality
// filter, modifiedSince, sort=f and sort=-f on every field, a walk by meta.next: every row once, in that order; an
// enabled flag without a declared type holds 0, 1, -1 and '1', '0' too); sending a row back as shown writes nothing.
// Deterministic: fast-check's seed is fixed (20261127 below, 30 schemas: about 30 s); on a failure it prints the seed,
// the path and the counterexample shrunk for up to 20 s (PROPERTY_SHRINK_MS), which PROPERTY_SEED=<seed>
// PROPERTY_PATH=<path> replays. PROPERTY_SEED
// and PROPERTY_RUNS explore other schemas; PROPERTY_STATS=1 lists the answers seen.
import t from 'tap'
import fc from 'fast-check'
import type { TableMappingConfig } from '../../schemas/config.js'
import { createPasswords, normalizeUsername } from '../../src/auth/passwords.js'
import { ADMIN_PASSWORD, TEST_ARGON2 } from '../helpers/build.js'
import {
  PROPERTY_TEST, checkListParameters, checkProperty, checkWalk, columnArb, createTable, distinctNames, dump, fill, flagOrUntypedType, gateway, list,
  listAll, lit, orNull, overTable, pad, rowsArb, stat, storedFlag, tableMapping, textType, timeType, timeValue, trueCode, untypedFlagOdd, valuesArb,
  withDefault, withOdd, write, type Body, type Gateway, type Kind, type LegacyColumn, type LegacyTable
} from '../helpers/legacy-properties.js'

/** the password of every legacy row whose hash is the gateway's own */
const PASSWORD = 'legacy-password-1'

type Codes = { admin: string | number, user: Array<string | number>, application: string | number }

interface Column extends LegacyColumn {
  /** type: stored as the API's words (no map), or as codes */
  codes?: Codes
  integer?: boolean
}

interface Schema extends LegacyTable<Column> {
  /** id on its own INTEGER PRIMARY KEY, or on the username column (a table keyed by the login name) */
  key: 'own' | 'username'
}

// ---- names: mixed case, spaces, reserved words and quote characters, as the README allows ----

const BASES: Record<string, string[]> = {
  username: ['Login', 'USER_NAME', 'User', 'Anmelde "Name"'],
  passwordHash: ['PwHash', 'PASSWD', 'Password', 'Kenn wort'],
  type: ['Rolle', 'USER_TYPE', 'Type', 'Benutzer typ'],
  displayName: ['Name', 'FULL_NAME', 'Select', 'Name [voll]'],
  enabled: ['Aktiv', 'ACTIVE_FLAG', 'Check', 'Aktiv?'],
  tokenVersion: ['TokVer', 'TOKEN_VERSION', 'Version', 'Token Version'],
  lastLoginAt: ['LetzterLogin', 'LAST_LOGIN', 'Order', "Letzte 'Anmeldung'"],
  createdAt: ['Angelegt', 'CREATED', 'Default', 'Angelegt am'],
  modifiedAt: ['Geaendert', 'LAST_UPD', 'Update', 'Letzte Änderung']
}

const column = columnArb<Column>(BASES)

// ---- column types ----

const typeType: fc.Arbitrary<Pick<Column, 'type' | 'codes' | 'dflt'>> = fc.oneof(
  // the API's own words, in a text column
  fc.constantFrom('VARCHAR(16)', 'TEXT').chain((type) => fc.option(fc.constant(`'user'`), { nil: undefined }).map((dflt) => ({ type, dflt }))),
  // letters, some types with more than one
  fc.constantFrom<Codes>({ admin: 'A', user: ['U'], application: 'S' }, { admin: 'A', user: ['B', 'U'], application: 'S' }, { admin: 'ADM', user: ['USR'], application: 'APP' })
    .chain((codes) => fc.constantFrom(String(codes.admin).length === 1 ? 'CHAR(1)' : 'CHAR(3)', 'VARCHAR(3)').chain((type) =>
      fc.option(fc.constant(lit(codes.user[0])), { nil: undefined }).map((dflt) => ({ type, codes, dflt })))),
  // numbers
  fc.constantFrom<Codes>({ admin: 1, user: [2], application: 3 }, { admin: 9, user: [0, 1], application: 5 })
    .chain((codes) => fc.constantFrom('INTEGER', 'SMALLINT').chain((type) =>
      fc.option(fc.constant(lit(codes.user[0])), { nil: undefined }).map((dflt) => ({ type, codes, dflt }))))
)

const schemaArb: fc.Arbitrary<Schema> = fc.record({
  table: fc.constantFrom('Benutzer', 'OPERATOR', 'User', 'login daten'),
  key: fc.constantFrom<Schema['key']>('own', 'username'),
  // under SQLite's NOCASE too, as a table keyed by the login name may be (README: a user table keyed by the login name)
  username: column('username', textType(24, 64).chain((t) => fc.constantFrom('', ' COLLATE NOCASE').map((collate) => ({ ...t, type: `${t.type}${collate}` }))), true),
  // at least the 97 characters of the gateway's hashes (README: a narrower column stops the start)
  passwordHash: column('passwordHash', fc.oneof(
    fc.constantFrom('TEXT', '', 'VARCHAR(255)', 'NVARCHAR(128)').map((type) => ({ type, text: { char: false } })),
    fc.constant({ type: 'CHAR(128)', text: { char: true, n: 128 } })
  )),
  type: column('type', typeType).map((c) => c.dflt === undefined ? c : { ...c, notNull: true }),
  displayName: column('displayName', textType(8, 60)).chain((c) => !c.notNull ? fc.constant(c) : fc.constant({ ...c, dflt: `''` })),
  enabled: column('enabled', flagOrUntypedType).chain(withDefault((c) => trueCode(c.flag!))),
  tokenVersion: column('tokenVersion', fc.constantFrom('INTEGER', 'SMALLINT', 'TINYINT', 'INT').map((type) => ({ type, integer: true }))).map((c) => c.notNull ? { ...c, dflt: '0' } : c),
  lastLoginAt: column('lastLoginAt', timeType.map((time) => ({ type: time.type, time })), false),
  createdAt: fc.oneof(
    column('createdAt', fc.constant({ type: 'DATETIME', dflt: 'CURRENT_TIMESTAMP', time: { type: 'DATETIME' } })),
    column('createdAt', timeType.map((time) => ({ type: time.type, time })), false)
  ),
  modifiedAt: column('modifiedAt', timeType.map((time) => ({ type: time.type, time })), false),
  extra: fc.option(fc.record({ name: fc.constantFrom('Mandant', 'Lager Zone'), kind: fc.constantFrom<NonNullable<Schema['extra']>['kind']>('default', 'viaDefaults', 'nullable') }), { nil: undefined })
}).map(({ table, key, extra, ...cols }): Schema => {
  // copies: fast-check replays generated values while shrinking, so they are not changed in place
  return { table, key, columns: distinctNames(Object.values(cols).map((c): Column => ({ ...c }))), extra }
})

const ID_COLUMN = 'BenID'

function ddl (s: Schema): string {
  return createTable(s, { own: s.key === 'own' ? ID_COLUMN : undefined, field: 'username', sql: s.key === 'username' ? ' NOT NULL PRIMARY KEY' : ' NOT NULL UNIQUE' })
}

function mappingOf (s: Schema): TableMappingConfig {
  const id = s.key === 'own' ? ID_COLUMN : s.columns.find((c) => c.field === 'username')!.name
  return tableMapping(s, id, [], (c) => c.codes === undefined ? undefined : { admin: c.codes.admin, user: c.codes.user.length === 1 ? c.codes.user[0] : c.codes.user, application: c.codes.application })
}

// ---- data rows the picking system wrote: NULLs, padding, odd codes, its own password hashes ----

interface Hashes { password: string, admin: string }

/** what a legacy row's password column holds: the gateway's hash of PASSWORD, or the picking system's own */
type Secret = 'argon2' | 'md5' | 'sha1' | 'bcrypt' | 'plain' | 'empty' | 'null'
const SECRETS: Record<Exclude<Secret, 'argon2' | 'null'>, string> = {
  md5: 'e10adc3949ba59abbe56e057f20f883e',
  sha1: '7c4a8d09ca3762af61e59520943dc26494f8941b',
  bcrypt: '$2y$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy',
  plain: PASSWORD,
  empty: ''
}

interface Row { values: Record<string, unknown>, secret: Secret }

function codesOf (c: Column, type: 'admin' | 'user' | 'application'): Array<string | number> {
  if (c.codes === undefined) return [type]
  return type === 'user' ? c.codes.user : [c.codes[type]]
}

function storedValue (c: Column, i: number): fc.Arbitrary<unknown> {
  const nullable = !c.notNull
  let v: fc.Arbitrary<unknown>
  if (c.field === 'username') {
    // a trailing blank the picking system's program stored in a VARCHAR; mixed case; non-ASCII letters; a digit-only name
    v = fc.constantFrom<unknown>(`Op${i}`, `op${i}`, `JSmith${i}`, `Müller${i}`, `ÖZTÜRK${i}`, `Lager ${i}`, `Schulz${i} `, `${100 + i}`).map((x) => pad(c, x))
  } else if (c.field === 'displayName') v = fc.string({ maxLength: Math.min(c.text?.n ?? 12, 12) }).map((x) => pad(c, x))
  else if (c.field === 'type') {
    const known = [...codesOf(c, 'admin'), ...codesOf(c, 'user'), ...codesOf(c, 'application')]
    // a role no map knows: shown as stored, no rights
    v = fc.constantFrom<unknown>(...known, c.codes === undefined || typeof c.codes.admin === 'string' ? 'L' : 7).map((x) => pad(c, x))
  } else if (c.flag) v = storedFlag(c.flag, { int: [2, ...untypedFlagOdd(c).int], map: ['X', ...untypedFlagOdd(c).map] })
  else if (c.field === 'tokenVersion') v = fc.constantFrom(0, 3, 255)
  else if (c.time) v = timeValue(c.time)
  else v = fc.constant(null)
  return orNull(v, nullable)
}

function secretArb (c: Column): fc.Arbitrary<Secret> {
  return fc.constantFrom<Secret>('argon2', 'argon2', 'md5', 'sha1', 'bcrypt', 'plain', 'empty', ...(c.notNull ? [] : ['null' as const]))
}

/** the legacy rows: an admin the tests log in as (the table is not empty, so db init adds none), then up to 6 others */
function rowsOf (s: Schema): fc.Arbitrary<Row[]> {
  const col = (field: string): Column => s.columns.find((c) => c.field === field)!
  const others = s.columns.filter((c) => c.field !== 'passwordHash')
  const admin = fc.record({
    username: fc.constantFrom('admin', 'Admin', 'ADMIN').map((x) => pad(col('username'), x)),
    type: fc.constant(pad(col('type'), codesOf(col('type'), 'admin')[0])),
    enabled: fc.constant(col('enabled').flag!.kind === 'int' ? 1 : (col('enabled').flag as { t: string | number }).t)
  }).chain((fixed) => valuesArb(others, (c) => c.field in fixed ? fc.constant(fixed[c.field as keyof typeof fixed]) : storedValue(c, 0)))
    .map((values): Row => ({ values, secret: 'argon2' }))
  const row = (i: number): fc.Arbitrary<Row> => fc.record({
    values: valuesArb(others, (c) => storedValue(c, i)),
    secret: secretArb(col('passwordHash'))
  })
  // the username is unique: compared as logins do, without padding and case
  const name = col('username').name
  return rowsArb(6, row, (r) => normalizeUsername(String(r.values[name])), admin)
}

/** the rows' values with the password column: the gateway's hash of the admin's or of PASSWORD, or the picking system's own */
function withSecrets (s: Schema, rows: Row[], hashes: Hashes): Array<Record<string, unknown>> {
  const hashCol = s.columns.find((c) => c.field === 'passwordHash')!
  return rows.map((r, i) => {
    const secret = r.secret === 'argon2' ? (i === 0 ? hashes.admin : hashes.password) : r.secret === 'null' ? null : SECRETS[r.secret]
    return { ...r.values, [hashCol.name]: pad(hashCol, secret) }
  })
}

// ---- request bodies: valid creates, and odd ones ----

function usernameArb (c: Column, key: Schema['key']): fc.Arbitrary<string> {
  const max = Math.min(c.text?.n ?? 64, 64)
  return fc.string({ unit: fc.constantFrom('a', 'Z', 'é', 'ß', 'Ö', '-', '.', '_', '0', '@', ' ', '😀'), minLength: 1, maxLength: Math.min(max, 12) })
    .filter((x) => x.trim() === x && x.trim() !== '' && x.normalize('NFKC') === x &&
      // a username that is the id must be one a URL can name (README: a table keyed by the login name)
      (key !== 'username' || (x !== '.' && x !== '..')))
}

const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, '', ' ', 'x'.repeat(300), -0, 1e300, true, 'J', 'N', '0', '1', [], {}, 'null', 'robot', 'ADMIN', ' admin', 'a\u0000b', 'a\u200bb', 'short'),
  fc.string({ maxLength: 5 }), fc.integer()
)

function bodyArb (s: Schema): fc.Arbitrary<Body> {
  const username = s.columns.find((c) => c.field === 'username')!
  const displayName = s.columns.find((c) => c.field === 'displayName')!
  const valid = fc.record({
    username: usernameArb(username, s.key),
    password: fc.string({ unit: fc.constantFrom('a', 'B', '1', ' ', 'é', '😀', '$'), minLength: 8, maxLength: 20 }),
    type: fc.constantFrom('admin', 'user', 'application'),
    // null only where the column takes it: a NOT NULL column's schema refuses it (a 400 naming the field)
    displayName: ((name: fc.Arbitrary<string>) => displayName.notNull ? name : fc.option(name, { nil: null }))(fc.string({ unit: fc.constantFrom('a', 'Z', ' ', '-', 'é', 'ß', '€', '"', '%'), maxLength: Math.min(displayName.text?.n ?? 20, 20) })),
    enabled: fc.boolean()
  }, { requiredKeys: ['username', 'password'] }).map((body) => ({ body: body as Record<string, unknown>, valid: true }))
  return withOdd(valid, ['username', 'password', 'type', 'displayName', 'enabled', 'passwordHash', 'tokenVersion', 'id', 'lastLoginAt', 'source'], oddValue)
}

// ---- checks ----

interface User { id: number | string, username: string, type: string, displayName: string | null, enabled: boolean, [field: string]: unknown }

const path = (id: number | string): string => `/api/users/${encodeURIComponent(String(id))}`

const SORTABLE = ['id', 'username', 'type', 'displayName', 'enabled', 'lastLoginAt', 'createdAt', 'modifiedAt']

/** how the fields' shown values compare (README "List parameters"); every field is mapped */
const KINDS: Record<string, Kind> = {
  id: 'id', username: 'text', type: 'text', displayName: 'text', enabled: 'flag', lastLoginAt: 'time', createdAt: 'time', modifiedAt: 'time', source: 'text'
}

/** the column whose numbers a text field shows as their text: a text field's (a type code no map knows), the id's where it is the username's */
function numericColumn (s: Schema, field: string): string | undefined {
  if (field === 'id') return s.key === 'own' ? undefined : s.columns.find((c) => c.field === 'username')!.name
  return KINDS[field] === 'text' ? s.columns.find((c) => c.field === field)?.name : undefined
}

async function checks (g: Gateway, s: Schema, rows: Row[], bodies: Body[], sortPick: number, desc: boolean, since: number): Promise<void> {
  const { ctx, headers, fail } = g
  const login = async (username: string, password: string): Promise<{ statusCode: number, body: string, json: () => any }> =>
    await ctx.app.inject({ method: 'POST', url: '/api/users/login', payload: { username, password } })
  /** a login that must be refused: 401, and the table as it was */
  const refused = async (username: string, password: string, why: string): Promise<void> => {
    const before = await dump(g)
    const res = await login(username, password)
    stat(`refused login (${why}) ${res.statusCode}`)
    if (res.statusCode !== 401) fail(`a login with ${why} answered ${res.statusCode} ${res.body}`, { username })
    if (JSON.stringify(await dump(g)) !== JSON.stringify(before)) fail(`a refused login with ${why} changed the table`, { username, before, after: await dump(g) })
  }

  // creates: never a 500; a 4xx changes nothing and says something; a 201 reads back as sent, logs in, its token works
  const created: Array<{ user: User, password: string }> = []
  for (const { body, valid } of bodies) {
    const { res, refused: refusedCreate } = await write(g, { method: 'POST', url: '/api/users', payload: body }, { detail: body, valid })
    if (refusedCreate) continue
    if (res.statusCode !== 201) fail(`create answered ${res.statusCode}`, { body, res: res.body })
    const user = res.json() as User
    const read = await ctx.app.inject({ method: 'GET', url: path(user.id), headers })
    if (read.statusCode !== 200) fail(`GET of a created user answered ${read.statusCode} ${read.body}`, body)
    const shown = read.json() as User
    // a displayName not sent is the column's default ('' where the picking system's column is NOT NULL), else null
    const nameColumn = s.columns.find((c) => c.field === 'displayName')!
    const want = { username: normalizeUsername(String(body.username)), type: body.type ?? 'user', displayName: 'displayName' in body ? body.displayName : nameColumn.dflt === undefined ? null : '', enabled: body.enabled ?? true }
    const char = nameColumn.text?.char === true
    if (char && typeof want.displayName === 'string') want.displayName = want.displayName.trimEnd()
    for (const [field, value] of Object.entries(want)) {
      if (JSON.stringify(shown[field]) !== JSON.stringify(value)) fail(`created ${field} reads back as ${JSON.stringify(shown[field])}`, body)
    }
    const password = String(body.password)
    if (shown.enabled) {
      const res = await login(String(body.username), password)
      if (res.statusCode !== 200) fail(`a created user's login answered ${res.statusCode} ${res.body}`, body)
      const own = await ctx.app.inject({ method: 'GET', url: path(user.id), headers: ctx.auth(res.json().accessToken) })
      if (own.statusCode !== 200 || own.json().username !== shown.username) fail(`a created user's token reads its own record as ${own.statusCode} ${own.body}`, body)
      created.push({ user: shown, password })
    } else {
      await refused(String(body.username), password, 'the right password of a disabled user')
    }
    await refused(String(body.username), `${password}x`, 'a wrong password')
  }

  // a password change revokes the old tokens: the user's own change (an application account may not make one), then an admin's
  for (const { user, password } of created) {
    let current = password
    if (user.type !== 'application') {
      const old = (await login(user.username, current)).json()
      const own = await ctx.app.inject({ method: 'PATCH', url: path(user.id), headers: ctx.auth(old.accessToken), payload: { password: 'changed-password-1' } })
      if (own.statusCode !== 200) fail(`a user's own password change answered ${own.statusCode} ${own.body}`, user)
      const after = await ctx.app.inject({ method: 'GET', url: path(user.id), headers: ctx.auth(old.accessToken) })
      if (after.statusCode !== 401) fail(`a token from before the user's own password change answered ${after.statusCode}`, user)
      await refused(user.username, current, 'the password before a change')
      current = 'changed-password-1'
    }
    const old = await login(user.username, current)
    if (old.statusCode !== 200) fail(`a login with the current password answered ${old.statusCode} ${old.body}`, user)
    const byAdmin = await ctx.app.inject({ method: 'PATCH', url: path(user.id), headers, payload: { password: 'changed-password-2' } })
    if (byAdmin.statusCode !== 200) fail(`an admin's password change answered ${byAdmin.statusCode} ${byAdmin.body}`, user)
    if ((await ctx.app.inject({ method: 'GET', url: path(user.id), headers: ctx.auth(old.json().accessToken) })).statusCode !== 401) fail('an access token from before an admin\'s password change still works', user)
    if ((await ctx.app.inject({ method: 'POST', url: '/api/users/refresh', headers: ctx.auth(old.json().refreshToken) })).statusCode !== 401) fail('a refresh token from before an admin\'s password change still works', user)
    await refused(user.username, current, 'the password before an admin\'s change')
    if ((await login(user.username, 'changed-password-2')).statusCode !== 200) fail('the password an admin set does not log in', user)
  }

  // the list shows every row of the table
  const users = await listAll<User>(g, 'users')
  const allIds = users.map((u) => String(u.id)).sort()

  // the legacy rows log in as the README says: with the gateway's own hash while enabled, never with the picking
  // system's own hash or none (the same 401 as a wrong password, and nothing written)
  const nameCol = s.columns.find((c) => c.field === 'username')!.name
  for (const [i, r] of rows.entries()) {
    if (i === 0) continue
    const shown = users.find((u) => normalizeUsername(u.username) === normalizeUsername(String(r.values[nameCol])))
    if (shown === undefined) fail('a legacy row is not in the list', r.values)
    const username = shown!.username.trim()
    if (r.secret !== 'argon2') await refused(username, PASSWORD, `a ${r.secret} password column`)
    else if (!shown!.enabled) await refused(username, PASSWORD, 'the right password of a disabled legacy user')
    else {
      await refused(username, 'wrong-password-1', 'a wrong password of a legacy user')
      const res = await login(username, PASSWORD)
      stat(`legacy login ${res.statusCode}`)
      if (res.statusCode !== 200) fail(`an enabled legacy user with the gateway's hash logs in as ${res.statusCode} ${res.body}`, shown)
    }
  }

  // each equality filter, modifiedSince and each sort agree with the values reads show (the logins above moved lastLoginAt)
  const orders = await checkListParameters(g, 'users', await list<User>(g, 'users'), KINDS, since, (f) => numericColumn(s, f),
    (f) => f === 'type' && s.columns.find((c) => c.field === 'type')!.codes !== undefined ? ['admin', 'user', 'application'] : undefined, ['source'], {
      username: (v) => normalizeUsername(String(v)),
      // a username key under SQLite's NOCASE sorts and compares as that folds: A to Z only
      ...(s.key === 'username' && s.columns.find((c) => c.field === 'username')!.type.endsWith('COLLATE NOCASE') ? { id: (v: unknown) => String(v).replace(/[A-Z]/g, (c) => c.toLowerCase()) } : {})
    })

  // a walk by meta.next: every row once, in any sort (in the shown values' order), with and without a filter
  const sortField = SORTABLE[sortPick % SORTABLE.length]
  const sort = `${desc ? '-' : ''}${sortField}`
  for (const filter of ['', '&enabled=false', '&type=user', '&username=[like]%25a%25', '&source=local']) {
    const expectedIds = filter === '' ? allIds : (await list<User>(g, 'users', filter)).map((u) => String(u.id)).sort()
    await checkWalk(g, 'users', sort, filter, expectedIds, 30, rows, orders.get(sort))
  }

  // an update sending what each row shows: no 500; a 4xx changes nothing; a 200 writes nothing
  for (const u of await list<User>(g, 'users')) {
    const body = { username: u.username, type: u.type, displayName: u.displayName, enabled: u.enabled }
    const { res, refused: refusedUpdate, before } = await write(g, { method: 'PATCH', url: path(u.id), payload: body }, { what: 'an update sending the row as shown', stat: 'same-values update', detail: { user: u } })
    if (refusedUpdate) continue
    if (res.statusCode !== 200) fail(`update answered ${res.statusCode}`, res.body)
    if (JSON.stringify(await dump(g)) !== JSON.stringify(before)) fail('an update sending the row as shown wrote to the table', { user: u, after: await dump(g), before })
  }
}

t.test('the mapping over generated legacy user tables', PROPERTY_TEST, async (t) => {
  const passwords = await createPasswords(TEST_ARGON2)
  const hashes: Hashes = { password: await passwords.hash(PASSWORD), admin: await passwords.hash(ADMIN_PASSWORD) }
  await checkProperty(t,
    schemaArb.chain((s) => fc.record({ s: fc.constant(s), rows: rowsOf(s), bodies: fc.array(bodyArb(s), { minLength: 1, maxLength: 4 }), sortPick: fc.nat(), desc: fc.boolean(), since: fc.nat() })),
    async ({ s, rows, bodies, sortPick, desc, since }) => {
      await overTable(t, {
        mapping: { users: mappingOf(s) },
        licence: { logins: 100 },
        // many logins from one address in a few milliseconds: the throttle is auth-throttle.test.ts's business
        auth: { loginThrottle: { maxAttemptsPerAddress: 10000, maxFailuresPerUser: 1000, maxFailuresPerUserTotal: 1000 } }
      }, async (db) => { await fill(db, s, ddl(s), withSecrets(s, rows, hashes)) },
      async (ctx) => { await checks(gateway(ctx, s, ddl(s), mappingOf(s)), s, rows, bodies, sortPick, desc, since) })
    },
    // fixed, so that every run checks the same schemas
    { seed: 20261127, runs: 30 })
})
