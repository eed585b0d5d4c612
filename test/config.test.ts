import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { referenceMappings } from '../src/db/resources.js'
import { Config, ConfigError, isWeakSecret, loadConfig, mappingsOf, readTls, validateConfig } from '../src/config.js'
import { tempDir } from './helpers/temp.js'

const SECRET = 'k7Jq2vX9pL4mN8rT1wY6zB3cF5hD0gSa'

function problemsOf (fn: () => unknown): string[] {
  try {
    fn()
  } catch (err) {
    if (err instanceof ConfigError) return err.problems
    throw err
  }
  return []
}

t.test('the embedded demo when nothing is configured', async (t) => {
  const dataDir = tempDir(t, 'pg-config-')
  const { config, demo, source } = loadConfig({ env: {}, dataDir })
  t.equal(demo, true)
  t.equal(source, 'embedded demo')
  t.equal(config.database.url, `sqlite:${join(dataDir, 'picking-gateway.db')}`)
  t.equal(config.licence.logins, 5, 'the demo licences 5 logins')
  t.equal(config.server.host, '127.0.0.1')
  t.equal(config.server.port, 3000)
  const secretFile = join(dataDir, 'jwt-secret')
  t.equal(readFileSync(secretFile, 'utf8').trim(), config.auth.jwtSecret, 'generated secret kept under data/')
  t.equal(statSync(secretFile).mode & 0o777, 0o600)
  t.equal(loadConfig({ env: {}, dataDir }).config.auth.jwtSecret, config.auth.jwtSecret, 'and reused on the next start')
})

t.test('the demo creates its data directory for its own user alone: the database there keeps password hashes', async (t) => {
  const dataDir = join(tempDir(t, 'pg-config-'), 'data')
  loadConfig({ env: {}, dataDir })
  // before: 0755 with the usual umask, and picking-gateway.db (with the admin's argon2 hash) 0644 inside
  t.equal(statSync(dataDir).mode & 0o777, 0o700)
})

t.test('the demo\'s kept secret empty or a directory: a problem naming the file and what to do (before: "auth.jwtSecret: missing", or EISDIR and exit 1)', async (t) => {
  const empty = tempDir(t, 'pg-config-')
  writeFileSync(join(empty, 'jwt-secret'), '\n', { mode: 0o600 })
  t.same(problemsOf(() => loadConfig({ env: {}, dataDir: empty })), [`${join(empty, 'jwt-secret')}: the demo's JWT secret is empty; delete the file, and the demo generates a new one (tokens it signed before are then refused)`])
  const directory = tempDir(t, 'pg-config-')
  mkdirSync(join(directory, 'jwt-secret'))
  t.same(problemsOf(() => loadConfig({ env: {}, dataDir: directory })), [`${join(directory, 'jwt-secret')}: the demo's JWT secret cannot be read (EISDIR); delete it, and the demo generates a new one (tokens it signed before are then refused)`])
  t.equal(loadConfig({ env: {}, dataDir: empty, secretNeeded: false }).config.auth.jwtSecret, undefined, 'a command that needs no secret does not read it')
})

t.test('a command that signs no token (db introspect) loads the configuration without a secret', async (t) => {
  const dataDir = tempDir(t, 'pg-config-')
  const demo = loadConfig({ env: {}, dataDir, secretNeeded: false })
  t.equal(demo.config.auth.jwtSecret, undefined)
  t.notOk(existsSync(join(dataDir, 'jwt-secret')), 'the demo generates no secret for it')
  t.equal(loadConfig({ env: { DATABASE_URL: 'sqlite:/tmp/x.db' }, secretNeeded: false }).config.database.url, 'sqlite:/tmp/x.db')
  t.same(problemsOf(() => loadConfig({ env: { DATABASE_URL: 'sqlite:/tmp/x.db', PICKING_GATEWAY_JWT_SECRET: 'secret' }, secretNeeded: false })),
    ['PICKING_GATEWAY_JWT_SECRET: expected at least 32 bytes, got 6 (generate one with: openssl rand -base64 48)'], 'a secret given is still checked')
  t.match(problemsOf(() => loadConfig({ env: { DATABASE_URL: 'sqlite:/tmp/x.db' } })), [/^auth\.jwtSecret: missing/], 'everything else still needs one')
})

t.test('environment overrides the file', async (t) => {
  const dir = tempDir(t, 'pg-config-')
  const file = join(dir, 'config.json')
  writeFileSync(file, JSON.stringify({ server: { port: 4000 }, database: { url: 'sqlite:/tmp/x.db' }, auth: { jwtSecret: SECRET }, licence: { logins: 3 } }))
  const { config, demo } = loadConfig({ env: { PICKING_GATEWAY_CONFIG: file, PORT: '5000', HOST: '0.0.0.0', DATABASE_URL: 'sqlite:/tmp/y.db' } })
  t.equal(demo, false)
  t.equal(config.server.port, 5000)
  t.equal(config.server.host, '0.0.0.0')
  t.equal(config.database.url, 'sqlite:/tmp/y.db')
  t.equal(config.licence.logins, 3)
  t.equal(config.licence.logins, 3)
  t.equal(validateConfig({ auth: { jwtSecret: SECRET } }).licence.logins, 1, 'one login by default, as the interface says')
})

t.test('secrets from systemd credentials', async (t) => {
  const creds = tempDir(t, 'pg-creds-')
  writeFileSync(join(creds, 'jwt-secret'), SECRET + '\n')
  writeFileSync(join(creds, 'database-password'), 'db-pass\n')
  const { config } = loadConfig({ env: { DATABASE_URL: 'mssql://gw@db/Picking', CREDENTIALS_DIRECTORY: creds } })
  t.equal(config.auth.jwtSecret, SECRET)
  t.equal(config.database.password, 'db-pass')
  // a weak secret is named where it came from (before: auth.jwtSecret, which the configuration file did not hold)
  writeFileSync(join(creds, 'jwt-secret'), 'changeme\n')
  t.match(problemsOf(() => loadConfig({ env: { DATABASE_URL: 'mssql://gw@db/Picking', CREDENTIALS_DIRECTORY: creds } })), [/^credential jwt-secret: expected at least 32 bytes, got 8/])
  t.match(problemsOf(() => loadConfig({ env: { DATABASE_URL: 'mssql://gw@db/Picking', PICKING_GATEWAY_JWT_SECRET: 'short' } })), [/^PICKING_GATEWAY_JWT_SECRET: expected at least 32 bytes, got 5/])
})

t.test('bad configurations name the key and never show secrets', async (t) => {
  t.match(problemsOf(() => loadConfig({ env: { DATABASE_URL: 'sqlite:/tmp/x.db' } })), [/auth.jwtSecret: missing/], 'outside the demo a secret is required')
  t.match(problemsOf(() => loadConfig({ env: { DATABASE_URL: 'sqlite:/tmp/x.db', PORT: 'eighty', PICKING_GATEWAY_JWT_SECRET: SECRET } })), [/PORT: expected an integer/])
  t.match(problemsOf(() => loadConfig({ env: { DATABASE_URL: 'postgres://x', PICKING_GATEWAY_JWT_SECRET: SECRET } })), [/^DATABASE_URL: expected sqlite:<path> or mssql:/], 'named as set, as PORT is')
  const short = problemsOf(() => validateConfig({ auth: { jwtSecret: 'hunter2' } }))
  t.match(short, [/auth.jwtSecret: expected at least 32 bytes, got 7/])
  t.notMatch(short.join(), /hunter2/)
  t.match(problemsOf(() => validateConfig({ auth: { jwtSecret: 'changeme'.repeat(4) } })), [/well-known default/])
  const many = problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, server: { port: 'x', host: 5 }, hardware: { controllers: [{ id: 'c', host: 'h' }] }, extra: true }))
  t.ok(many.some((p) => /^server.port: .*got "x"/.test(p)), 'server.port named with what it got')
  t.ok(many.some((p) => /^server.host: /.test(p)))
  t.ok(many.some((p) => /^hardware.controllers.0.port/.test(p) || /^hardware.controllers.0: /.test(p)))
  t.ok(many.some((p) => /^extra: unknown key/.test(p)))
  const url = problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, database: { url: 42 } }))
  t.match(url, [/database.url: .*<hidden>/], 'the database URL may hold a password')
  // a secret one level too high: where an object was expected (before: 'auth.keys.0: expected object, got "<the secret>"')
  const keyText = 'a-signing-key-written-as-a-plain-string-0123456789'
  for (const [raw, key] of [
    [{ auth: { keys: [keyText] } }, 'auth.keys.0'],
    [{ auth: { keys: keyText } }, 'auth.keys'],
    [{ auth: keyText }, 'auth'],
    [{ auth: { jwtSecret: SECRET, sso: [keyText] } }, 'auth.sso.0'],
    [{ auth: { jwtSecret: SECRET }, database: `mssql://gw:${keyText}@db/Picking` }, 'database'],
    [keyText, '(root)']
  ] as Array<[unknown, string]>) {
    const problems = problemsOf(() => validateConfig(raw))
    t.ok(problems.some((p) => p.startsWith(`${key}: expected`) && p.endsWith('<hidden>')), `${key}: the problem is named, the value hidden`)
    t.notMatch(problems.join('\n'), keyText, `${key}: the value is not shown`)
  }
  const mapping = problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, mapping: { materials: { table: 'MaterialBase', columns: { id: 'MatID' } } } }))
  t.match(mapping.join('\n'), /mapping\.materials\.columns\.name: no column configured/)
  t.match(mapping.join('\n'), /mapping\.materials\.columns\.barcode: no column configured \(map it to null if the table has none\)/)
  // a legacy operator table without a modified time: what to do, not only what is missing
  const users = problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, mapping: { users: { table: 'Uzytkownicy', columns: { id: 'Id', username: 'Login' } } } }))
  t.match(users.join('\n'), /mapping\.users\.columns\.modifiedAt: no column configured; the user table needs a column for every field: add one to the table and map it/)
  const pattern = problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, hardware: { controllers: [{ id: 'Line A!', host: 'h', port: 1 }] } }))
  t.same(pattern, [`hardware.controllers.0.id: expected string to match '^[A-Za-z0-9_.-]+$', got "Line A!"`], 'the pattern keeps its case')
  const twice = problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, hardware: { controllers: [{ id: 'ctl-1', host: 'a', port: 1 }, { id: 'ctl-2', host: 'b', port: 1 }, { id: 'ctl-1', host: 'c', port: 1 }] } }))
  const timings = problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, hardware: { timings: { heartbeatIdle: 10000, deadAfter: 10000, ackTimeout: 2 ** 31 } } }))
  t.same(timings, [
    'hardware.timings.ackTimeout: expected integer to be less or equal to 2147483647, got 2147483648',
    'hardware.timings.deadAfter: must be greater than hardware.timings.heartbeatIdle (10000), got 10000; the defaults are 30000 and 10000'
  ], 'timings that cannot work')
  t.same(problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, hardware: { timings: { heartbeatIdle: 40000 } } })), ['hardware.timings.deadAfter: must be greater than hardware.timings.heartbeatIdle (40000), got 30000; the defaults are 30000 and 10000'], 'against the default too')
  t.equal(validateConfig({ auth: { jwtSecret: SECRET }, hardware: { timings: { backoffMax: 2147483647 } } }).hardware.timings.backoffMax, 2147483647, 'the largest timer is fine')
  const overflow = problemsOf(() => validateConfig({ server: { closeGraceMs: 2 ** 31 }, database: { recheckMs: 2 ** 32 }, events: { heartbeatMs: 1e12 }, auth: { jwtSecret: SECRET, loginThrottle: { userWindowMs: 2 ** 31 } } }))
  t.same(overflow.map((p) => p.split(':')[0]).sort(), ['auth.loginThrottle.userWindowMs', 'database.recheckMs', 'events.heartbeatMs', 'server.closeGraceMs'], 'every ms setting has the timer limit')
  t.same(twice, ["hardware.controllers.2.id: 'ctl-1' appears twice; one entry per controller"], 'a duplicate controller id is not silently dropped')
})

t.test('an mssql URL the connection could not decode is a problem naming DATABASE_URL (or database.url, where it was set), never the password', async (t) => {
  const problems = (url: string) => problemsOf(() => loadConfig({ env: { DATABASE_URL: url, PICKING_GATEWAY_JWT_SECRET: SECRET } }))
  // a password with a literal '%' (not written %25): 'URI malformed' at connect, exit 1, and check-config said OK
  const percent = problems('mssql://gw:50%off-hunter2@db/Picking')
  t.match(percent, [/^DATABASE_URL: the password holds a '%' that starts no percent-escape/])
  t.notMatch(percent.join(), /hunter2/)
  t.match(problems('mssql://g%w:p%@db/Picking'), [/^DATABASE_URL: the user and password hold a '%'/])
  t.match(problems('mssql://gw@db/Pick%ing'), [/^DATABASE_URL: the database name holds a '%'/])
  const port = problems('mssql://gw:hunter2@db:99999/Picking')
  t.match(port, [/^DATABASE_URL: not a valid URL/])
  t.notMatch(port.join(), /hunter2/)
  t.same(problems('mssql://gw:50%25off@db/Picking'), [], 'a percent-encoded one is fine')
  // named where it was set, as HOST, PORT and LOG_LEVEL are: 'database.url' sent people to a file that has none
  t.match(problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, database: { url: 'mssql://gw:50%off@db/Picking' } })), [/^database.url: the password holds a '%'/], 'from the file: database.url')
  // database.password (or the credential database-password) replaces the URL's, which is then not decoded at all
  t.same(problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, database: { url: 'mssql://gw:50%off@db/Picking', password: 'from-the-credential' } })), [], 'a password the URL\'s is not used for')
})

t.test('a mapping without its columns: one line that names the fields to map', async (t) => {
  t.same(problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, mapping: { users: { table: 'Benutzer' } } })),
    ['mapping.users.columns: missing; map each field of users to its column, or to null where the table has none: id, username, passwordHash, type, displayName, enabled, tokenVersion, lastLoginAt, createdAt, modifiedAt'])
  t.same(problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, mapping: { materials: { columns: {} } } })).filter((p) => p.startsWith('mapping.materials.table')), ['mapping.materials.table: missing'])
})

t.test('mapping extras: value maps, time zones, fields mapped to null, readOnly', async (t) => {
  const columns = Object.fromEntries(Object.entries(referenceMappings.materials.columns))
  const ok = validateConfig({
    auth: { jwtSecret: SECRET },
    mapping: {
      materials: { schema: 'wms', table: 'Artikel', timeZone: 'Europe/Berlin', readOnly: true, columns: { ...columns, barcode: null, blocked: { column: 'Gesperrt', values: { true: ['J', 'Y'], false: 'N' } }, createdAt: { column: 'Angelegt', timeZone: 'UTC', format: 'yyyymmdd' }, modifiedAt: { column: 'LastChange', format: 'unix' } } }
    }
  })
  const m = mappingsOf(ok).materials
  t.same(m.absent, ['barcode'])
  t.equal(m.columns.barcode, undefined)
  t.equal(m.columns.blocked, 'Gesperrt')
  t.same(m.values, { blocked: { true: ['J', 'Y'], false: 'N' } })
  t.same(m.timeZones, { createdAt: 'UTC' })
  t.same(m.timeFormats, { createdAt: 'yyyymmdd', modifiedAt: 'unix' })
  t.equal(m.timeZone, 'Europe/Berlin')
  t.equal(m.readOnly, true)
  t.equal(mappingsOf(ok).stations, referenceMappings.stations, 'unconfigured resources keep the reference mapping')

  const problems = problemsOf(() => validateConfig({
    auth: { jwtSecret: SECRET },
    mapping: {
      materials: { table: 'Artikel', timeZone: 'Mars/Olympus', columns: { ...columns, name: null, blocked: { column: 'Gesperrt', values: { true: 'J' } }, weight: { column: 'Gew', values: { heavy: 'H' } }, createdAt: { column: 'Angelegt', values: { x: 1 } }, minStock: { column: 'MinB', format: 'unix' }, barcode: { column: 'EAN', timeZone: 'Europe/Berlin' }, modifiedAt: { column: 'LastChange', format: 'unix', timeZone: 'Europe/Berlin' } } },
      stations: { table: 'Wp', columns: { ...referenceMappings.stations.columns, type: { column: 'T', values: { vlm: 'V', ptl: 'V' } } } },
      users: { table: 'U', readOnly: true, columns: { ...referenceMappings.users.columns, type: { column: 'Typ', values: { admin: 'A', robot: 'R', Scanner: 'S' } } } }
    }
  })).join('\n')
  t.match(problems, /mapping\.materials\.columns\.name: cannot be null; the gateway needs a column for it/)
  t.match(problems, /mapping.materials.columns.blocked.values: a boolean's value map needs both 'true' and 'false'/)
  t.match(problems, /mapping.materials.columns.weight.values: 'heavy' is not a valid number/)
  t.match(problems, /mapping.materials.columns.createdAt.values: a date-time field cannot have a value map/)
  t.match(problems, /mapping.materials.columns.minStock.format: only a date-time field has a format \(minStock is a number\)/)
  t.match(problems, /mapping.materials.columns.modifiedAt: Unix time is an instant, in no time zone; remove timeZone/)
  t.match(problems, /mapping\.materials\.columns\.barcode\.timeZone: only a date-time field has a time zone \(barcode is a string\)/, 'not ignored in silence')
  const inside = problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, mapping: { materials: { table: 'A', columns: { ...columns, modifiedAt: { column: 'X', format: 'unix-s' }, createdAt: { column: 'Y', timezone: 'UTC' }, weight: 5 } } } }))
  t.ok(inside.includes('mapping.materials.columns.modifiedAt.format: expected one of unix, unix-ms, yyyymmdd, yyyymmddhhmmss, julianday, yyyy-mm-dd hh:mm:ss, got "unix-s"'), 'what is wrong inside a column\'s object, not "expected union value"')
  t.ok(inside.includes('mapping.materials.columns.createdAt.timezone: unknown key'))
  const nothing = problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, mapping: { materials: { table: 'A', columns: { ...columns, modifiedAt: { column: 'X', format: null } } } } }))
  t.match(nothing.join('\n'), /mapping\.materials\.columns\.modifiedAt\.format: expected one of unix, unix-ms, yyyymmdd, yyyymmddhhmmss, julianday, yyyy-mm-dd hh:mm:ss, got null/, 'a configuration error, not a crash')
  t.ok(inside.includes('mapping.materials.columns.weight: expected a column name, {"column": …} or null, got 5'))
  t.match(problems, /mapping.materials.timeZone: unknown time zone "Mars\/Olympus"/)
  t.match(problems, /mapping.stations.columns.type.values: the stored code "V" is given for two values, "vlm" and "ptl"/)
  // one value listing a code twice (the same without trailing blanks): said so, not "two values"
  const twice = problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, mapping: { stations: { table: 'Wp', columns: { ...referenceMappings.stations.columns, type: { column: 'T', values: { ptl: ['P', 'P '] } } } } } }))
  t.match(twice.join('\n'), /mapping.stations.columns.type.values: the stored code "P " is listed twice for "ptl" \(codes compare without trailing blanks\): list it once/)
  t.match(problems, /mapping.users.readOnly: the gateway writes its user table/)
  t.match(problems, /mapping.users.columns.type.values: "robot", "Scanner" are not values of type; expected admin, user, application/)
  const dir = tempDir(t, 'pg-config-')
  writeFileSync(join(dir, 'broken.json'), '{ "server": ')
  t.match(problemsOf(() => loadConfig({ env: { PICKING_GATEWAY_CONFIG: join(dir, 'broken.json') } })), [/not valid JSON/])
  t.match(problemsOf(() => loadConfig({ env: { PICKING_GATEWAY_CONFIG: join(dir, 'missing.json') } })), [/cannot read .*ENOENT/])
})

t.test('a configuration file that is not valid JSON: the problem names where, never the text around it (V8 quotes 10 characters either side of an unexpected token: a secret written without quotes)', async (t) => {
  const dir = tempDir(t, 'pg-config-')
  const cases: Array<[string, string, RegExp]> = [
    // the token in the middle of the file, at its start, at its end, and a file shorter than V8's context (quoted whole)
    ['middle', `{\n  "server": { "port": 3000 },\n  "auth": { "jwtSecret": ${SECRET} },\n  "database": { "url": "sqlite:/tmp/x.db" }\n}\n`, /at line 3, column 26/],
    ['start', `${SECRET}`, /at line 1, column 1/],
    ['end', `{\n  "server": { "port": 3000 },\n  "auth": { "jwtSecret": ${SECRET}`, /at line 3, column 26/],
    ['short', 'k7Jq2v', /Unexpected token \(/]
  ]
  for (const [name, text, where] of cases) {
    writeFileSync(join(dir, `${name}.json`), text)
    const [problem] = problemsOf(() => loadConfig({ env: { PICKING_GATEWAY_CONFIG: join(dir, `${name}.json`) } }))
    t.match(problem, /not valid JSON \(Unexpected token/, `${name}: said so`)
    t.notMatch(problem, /k7J|Jq2|'k'/, `${name}: no piece of the secret, nor its first letter`)
    t.match(problem, where, `${name}: where it is`)
  }
  // punctuation is named, and the parser's other words (with their position) stay as they were
  writeFileSync(join(dir, 'comma.json'), '{ "server": , "auth": {} }')
  t.match(problemsOf(() => loadConfig({ env: { PICKING_GATEWAY_CONFIG: join(dir, 'comma.json') } }))[0], /not valid JSON \(Unexpected token ','/)
  writeFileSync(join(dir, 'quote.json'), `{ "auth": { "jwtSecret": "${SECRET}" "x" } }`)
  t.match(problemsOf(() => loadConfig({ env: { PICKING_GATEWAY_CONFIG: join(dir, 'quote.json') } }))[0], /not valid JSON \(Expected ',' or '}' after property value in JSON at position 60\)/)
})

t.test('weak secrets', async (t) => {
  t.equal(isWeakSecret('secretsecretsecretsecretsecretsecret'), true)
  t.equal(isWeakSecret('a'.repeat(40)), true)
  t.equal(isWeakSecret(SECRET), false)
})

t.test('auth.sso: providers checked with errors naming the key, client secrets never from the file', async (t) => {
  const base = { database: { url: 'sqlite:/tmp/x.db' }, auth: { jwtSecret: SECRET } }
  const provider = { id: 'entra', issuer: 'https://login.microsoftonline.com/tenant/v2.0', audience: 'api://picking-gateway', typeMap: { 'Gateway.Admin': 'admin' } }
  const ok = validateConfig({ ...base, auth: { ...base.auth, sso: [provider] } })
  t.match(ok.auth.sso[0], { typeClaim: 'roles', timeoutMs: 5000, scope: 'openid profile email' }, 'defaults')
  const keycloakRoles = ['realm_access.roles', 'resource_access.picking-gateway.roles']
  t.same(validateConfig({ ...base, auth: { ...base.auth, sso: [{ ...provider, typeClaim: keycloakRoles }] } }).auth.sso[0].typeClaim, keycloakRoles, 'typeClaim: a list of claims')
  t.same(problemsOf(() => validateConfig({ ...base, auth: { ...base.auth, sso: [{ ...provider, typeClaim: [] }, { ...provider, id: 'b', issuer: 'https://idp.example.com/b', typeClaim: ['roles', ''] }, { ...provider, id: 'c', issuer: 'https://idp.example.com/c', audience: 5 }] } })),
    ['auth.sso.0.typeClaim: expected a non-empty string or a non-empty list of non-empty strings, got []', 'auth.sso.1.typeClaim: expected a non-empty string or a non-empty list of non-empty strings, got ["roles",""]', 'auth.sso.2.audience: expected a non-empty string or a non-empty list of non-empty strings, got 5'],
    'a claim or a list of claims: the message says so (before: "expected union value")')
  t.same(validateConfig(base).auth.sso, [], 'no provider unless configured')
  t.same(loadConfig({ env: {}, dataDir: tempDir(t, 'pg-config-') }).config.auth.sso, [], 'the demo has none')
  t.equal(validateConfig({ ...base, auth: { ...base.auth, sso: [{ ...provider, issuer: 'http://127.0.0.1:8080/realms/test', jwksUri: 'http://[::1]:8080/keys' }] } }).auth.sso?.[0].jwksUri, 'http://[::1]:8080/keys', 'http on loopback')
  const adfs = { ...provider, id: 'adfs', issuer: 'http://adfs.example.com/adfs/services/trust', jwksUri: 'https://adfs.example.com/adfs/discovery/keys' }
  t.equal(validateConfig({ ...base, auth: { ...base.auth, sso: [adfs] } }).auth.sso?.[0].issuer, adfs.issuer, 'an http issuer only compared with the tokens\' iss (ADFS access tokens), its keys from an https jwksUri')
  const adfsWeb = { ...provider, id: 'adfs', issuer: 'https://adfs.example.com/adfs', accessTokenIssuer: 'http://adfs.example.com/adfs/services/trust', clientId: 'web', redirectUri: 'https://gw.example.com/api/users/sso/adfs/callback' }
  t.equal(validateConfig({ ...base, auth: { ...base.auth, sso: [adfsWeb] } }).auth.sso?.[0].accessTokenIssuer, adfsWeb.accessTokenIssuer, 'an http accessTokenIssuer beside an https issuer with a browser login: only compared, never fetched')
  // before: 'appears twice; one entry per provider', of an entry that is one
  t.same(problemsOf(() => validateConfig({ ...base, auth: { ...base.auth, sso: [{ ...adfsWeb, accessTokenIssuer: adfsWeb.issuer }] } })),
    ['auth.sso.0.accessTokenIssuer: "https://adfs.example.com/adfs" is the entry\'s own issuer; leave accessTokenIssuer out where the access tokens name the issuer'], 'accessTokenIssuer the entry\'s own issuer')
  const issuers = problemsOf(() => validateConfig({ ...base, auth: { ...base.auth, sso: [adfsWeb, { ...provider, issuer: adfsWeb.accessTokenIssuer, jwksUri: 'https://adfs.example.com/adfs/discovery/keys' }, { ...provider, id: 'bad', issuer: 'https://idp.example.com/x', accessTokenIssuer: 'not a url' }] } }))
  t.same(issuers, ['auth.sso.1.issuer: "http://adfs.example.com/adfs/services/trust" appears twice; one entry per provider', 'auth.sso.2.accessTokenIssuer: expected an absolute URL without query or fragment, got "not a url"'], 'an access-token issuer is one of the entry\'s issuers: no other entry may have it, and it is a URL')

  const problems = problemsOf(() => validateConfig({
    ...base,
    auth: {
      ...base.auth,
      sso: [
        { ...provider, issuer: 'http://idp.example.com/realms/w', algorithms: ['HS256'] },
        { ...provider, issuer: 'not a url', typeMap: { x: 'root' }, clientId: 'web' },
        { ...provider, id: 'Bad Id', issuer: 'https://kc.example.com/realms/w?x=1', redirectUri: 'https://gw.example.com/wrong', clientId: 'web', clientSecret: 'hunter2-hunter2' },
        { ...provider, clientSecret: 'never-shown-secret' },
        { ...provider, id: 'no-openid', issuer: 'https://idp.example.com/4', clientId: 'web', redirectUri: 'https://gw.example.com/api/users/sso/no-openid/callback', scope: 'profile email openid-like' },
        { ...provider, id: 'adfs-web', issuer: 'http://adfs.example.com/adfs/services/trust', jwksUri: 'ftp://idp/keys', clientId: 'web', redirectUri: 'https://gw.example.com/api/users/sso/adfs-web/callback' }
      ]
    }
  }))
  const text = problems.join('\n')
  t.match(text, /auth\.sso\.0\.issuer: expected https:\/\/ \(plain http only on loopback/)
  t.match(text, /auth\.sso\.0\.issuer: .*or with a jwksUri and no browser login, where the issuer is only compared with the tokens' iss/, 'the way out for an issuer that is only compared')
  t.match(text, /auth\.sso\.5\.jwksUri: expected https:\/\//)
  t.match(text, /auth\.sso\.5\.issuer: expected https:\/\//, 'a browser login fetches the discovery document from the issuer')
  t.match(text, /auth\.sso\.5\.issuer: .*as accessTokenIssuer beside the https issuer/, 'and how AD FS has both')
  t.match(text, /auth\.sso\.0\.algorithms\.0/, 'HS256 is not an identity-provider algorithm')
  t.match(text, /auth\.sso\.1\.issuer: expected an absolute URL/)
  t.match(text, /auth\.sso\.1\.typeMap\.x/)
  t.match(text, /auth\.sso\.1: browser login needs both clientId and redirectUri/)
  t.match(text, /auth\.sso\.2\.id/)
  t.match(text, /auth\.sso\.2\.issuer: expected an absolute URL without query/)
  t.match(text, /auth\.sso\.2\.redirectUri: must be the gateway's \/api\/users\/sso\/Bad Id\/callback/)
  t.match(text, /auth\.sso\.3\.id: 'entra' appears twice/)
  t.match(text, /auth\.sso\.3: a client secret without clientId/)
  t.match(text, /auth\.sso\.4\.scope: the browser login needs the scope 'openid' \(it reads the ID token\), got "profile email openid-like"/)
  t.notMatch(text, /auth\.sso\.[0-3]\.scope/, 'the default scope, and a provider without browser login, need no change')
  t.notMatch(text, /hunter2|never-shown-secret/, 'no secret value in any message')
  const typed = problemsOf(() => validateConfig({ ...base, auth: { ...base.auth, sso: [{ ...provider, clientSecret: 42, clientPassword: 'pw-value' }] } })).join('\n')
  t.match(typed, /auth\.sso\.0\.clientSecret: .*got <hidden>/, 'a wrongly typed secret is not shown either')
  t.notMatch(typed, /pw-value/)

  const dir = tempDir(t, 'pg-config-')
  const file = join(dir, 'config.json')
  const browser = { ...provider, clientId: 'web', redirectUri: 'https://gw.example.com/api/users/sso/entra/callback' }
  writeFileSync(file, JSON.stringify({ ...base, auth: { ...base.auth, sso: [{ ...browser, clientSecret: 'file-secret-value' }] } }))
  const inFile = problemsOf(() => loadConfig({ env: { PICKING_GATEWAY_CONFIG: file } })).join('\n')
  t.match(inFile, /auth\.sso\.0\.clientSecret: the client secret does not belong in the configuration file; use the systemd credential sso-entra-client-secret or PICKING_GATEWAY_SSO_ENTRA_CLIENT_SECRET/)
  t.notMatch(inFile, /file-secret-value/)

  writeFileSync(file, JSON.stringify({ ...base, auth: { ...base.auth, sso: [browser, { ...browser, id: 'key-cloak', issuer: 'https://kc.example.com/realms/w', redirectUri: 'https://gw.example.com/api/users/sso/key-cloak/callback' }] } }))
  const creds = tempDir(t, 'pg-creds-')
  writeFileSync(join(creds, 'sso-entra-client-secret'), 'from-credential\n')
  writeFileSync(join(creds, 'sso-key-cloak-client-secret'), 'kc-from-credential\n')
  const fromCredential = loadConfig({ env: { PICKING_GATEWAY_CONFIG: file, CREDENTIALS_DIRECTORY: creds } }).config.auth.sso
  t.equal(fromCredential[0].clientSecret, 'from-credential')
  t.equal(fromCredential[1].clientSecret, 'kc-from-credential')
  const fromEnv = loadConfig({ env: { PICKING_GATEWAY_CONFIG: file, CREDENTIALS_DIRECTORY: creds, PICKING_GATEWAY_SSO_KEY_CLOAK_CLIENT_SECRET: 'from-env' } }).config.auth.sso
  t.equal(fromEnv[1].clientSecret, 'from-env', 'the environment wins, as for the JWT secret')
  t.equal(fromEnv[0].clientSecret, 'from-credential')
})

t.test('server.tls (read by serve and check-config) and server.trustProxy (checked at load) name the key, not Node\'s or OpenSSL\'s words alone', async (t) => {
  const dir = tempDir(t, 'pg-config-tls-')
  const pair = (name: string): { cert: string, key: string } => {
    const cert = join(dir, `${name}.crt`)
    const key = join(dir, `${name}.key`)
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' })
    return { cert, key }
  }
  const a = pair('a')
  const b = pair('b')
  const tls = (value: { cert: string, key: string }): string[] => problemsOf(() => readTls(value))
  t.same(tls(a), [], 'a certificate with its key')
  t.doesNotThrow(() => validateConfig({ auth: { jwtSecret: SECRET }, server: { tls: { cert: join(dir, 'none.crt'), key: join(dir, 'none.key') } } }), 'loading reads no TLS file: the one-shot commands need none')
  const missing = tls({ cert: join(dir, 'none.crt'), key: join(dir, 'none.key') })
  t.same(missing.map((p) => p.split(':')[0]), ['server.tls.cert', 'server.tls.key'], 'each file that cannot be read is named by its key')
  t.match(missing[0], /cannot read ".*none\.crt" \(ENOENT\)/)
  const mismatch = tls({ cert: a.cert, key: b.key })
  t.equal(mismatch.length, 1)
  t.match(mismatch[0], /^server\.tls: ".*a\.crt" and ".*b\.key" are not a PEM certificate and its private key/, 'a key of another certificate')
  const swapped = tls({ cert: a.key, key: a.cert })
  t.match(swapped, [/^server\.tls: /], 'the two files swapped')
  t.notMatch(swapped.join(), /PRIVATE KEY|BEGIN/, 'no piece of a file is quoted')

  const proxy = (value: unknown): string[] => problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, server: { trustProxy: value } }))
  for (const ok of [false, true, 0, '127.0.0.1', '10.0.0.0/8, ::1', '192.168.0.0/255.255.0.0', 'loopback,uniquelocal', 'fd00::/8']) {
    t.same(proxy(ok), [], `${JSON.stringify(ok)} is taken`)
  }
  t.same(proxy('nginx.local'), ['server.trustProxy: "nginx.local" is not an IP address, address/prefix or address/netmask, nor loopback, linklocal or uniquelocal; expected for example "127.0.0.1" or "10.0.0.0/8, ::1"'])
  t.match(proxy('127.0.0.1, 10.0.0.0/33, 10.0.0.0/255.0.255.0, ::1/0'), [/^server\.trustProxy: "10\.0\.0\.0\/33", "10\.0\.0\.0\/255\.0\.255\.0", "::1\/0" are not /], 'every bad entry is named')
  t.match(proxy(1), [/^server\.trustProxy: a hop count \(1\) makes the gateway trust no proxy at all; give the proxy's address instead/])
})

t.test('a listen address with a scheme, a port, brackets or blanks is refused at load, named as set (HOST or server.host)', async (t) => {
  // before: check-config said OK and serve failed at every start with ENOTFOUND, an exit 1 systemd restarts for good
  const host = (value: string): string[] => problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, server: { host: value } }))
  for (const ok of ['127.0.0.1', '0.0.0.0', '::', '::1', 'fe80::1%eth0', 'localhost', 'gw.example.com', 'gw.example.com.', 'PICK_SRV01', 'host-1', 'lager-süd.example', 'xn--lager-sd-d6a.example']) {
    t.same(host(ok), [], `${ok} is taken`)
  }
  t.same(host('http://gw.example.com'), ['server.host: expected an IP address or host name without a scheme (the gateway serves HTTPS when server.tls is set), got "http://gw.example.com"'])
  t.same(host('0.0.0.0:8080'), ['server.host: expected an IP address or host name without a port (the port is server.port, or PORT in the environment), got "0.0.0.0:8080"'])
  t.same(host('gw.example.com:443'), ['server.host: expected an IP address or host name without a port (the port is server.port, or PORT in the environment), got "gw.example.com:443"'])
  t.same(host('[::1]'), ['server.host: expected an IPv6 address without brackets (::1), got "[::1]"'])
  for (const bad of ['my host', ' 127.0.0.1', '-gw', 'gw..example', 'a'.repeat(64) + '.example', '', 'lager süd.example']) {
    t.match(host(bad), [bad === '' ? /^server\.host: / : /^server\.host: expected an IP address \(0\.0\.0\.0 for every interface of this machine, 127\.0\.0\.1 for itself alone\) or a host name, got /], JSON.stringify(bad))
  }
  const fromEnv = (env: NodeJS.ProcessEnv): string => {
    try {
      loadConfig({ env: { PICKING_GATEWAY_JWT_SECRET: SECRET, DATABASE_URL: 'sqlite::memory:', ...env } })
      return ''
    } catch (err) {
      return (err as Error).message
    }
  }
  t.match(fromEnv({ HOST: '0.0.0.0:3000' }), /^Invalid configuration:\n  - HOST: expected an IP address or host name without a port/, 'the environment variable is named, not the file\'s key')
  t.equal(fromEnv({ HOST: '0.0.0.0' }), '')
})

t.test('config.example.json is valid and shows every setting that has a default', async (t) => {
  const example = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'config.example.json'), 'utf8')) as Record<string, unknown>
  t.same(problemsOf(() => validateConfig({ ...example, auth: { ...example.auth as object, jwtSecret: SECRET } })), [], 'it loads (with a secret, which the file leaves out)')
  // the README's Configuration table names these keys; an installation starts from this file, so a
  // tunable missing from it (events.*, server.maxEventLoopDelayMs, …) is one its admin never sees
  const missing: string[] = []
  const walk = (schema: { properties?: Record<string, { default?: unknown, properties?: unknown }> }, value: unknown, path: string): void => {
    for (const [key, sub] of Object.entries(schema.properties ?? {})) {
      const here = (value as Record<string, unknown> | undefined)?.[key]
      if (sub.properties !== undefined && key !== 'mapping') walk(sub as typeof schema, here, `${path}${key}.`)
      else if (sub.default !== undefined && here === undefined) missing.push(`${path}${key}`)
    }
  }
  walk(Config as unknown as Parameters<typeof walk>[0], example, '')
  t.same(missing, [], 'every setting with a default is in the example')
})

t.test('a list written as an object, or an object as a list, is refused naming the key, not replaced by the default', async (t) => {
  // before: "controllers": {…} without brackets ran with no controllers, "server": [] on 127.0.0.1:3000, check-config OK
  const problems = problemsOf(() => validateConfig({
    auth: { jwtSecret: SECRET, sso: { id: 'x' }, argon2: [] },
    server: [],
    hardware: { controllers: { id: 'ctl-1', host: '10.0.20.11', port: 4001 }, timings: [1] }
  }))
  t.same(problems, [
    'auth.sso: expected array, got <hidden>',
    'auth.argon2: expected object, got []',
    'server: expected object, got []',
    'hardware.controllers: expected array, got {"id":"ctl-1","host":"10.0.20.11","port":4001}',
    'hardware.timings: expected object, got [1]'
  ])
  t.same(problemsOf(() => validateConfig({ auth: { jwtSecret: SECRET }, hardware: { controllers: [{ id: 'ctl-1', host: 'h', port: 1 }] } })), [], 'a list as a list passes')
})

/** existsSync as the demo sees it when another instance writes `secret` to `file` between this one's look for it and its write */
function racedExistsSync (file: string, secret: string): { existsSync: typeof existsSync, looked: () => boolean } {
  let looked = false
  const raced = ((path: string) => {
    if (path !== file || looked) return existsSync(path)
    looked = true
    writeFileSync(file, secret + '\n', { mode: 0o600 })
    return false
  }) as typeof existsSync
  return { existsSync: raced, looked: () => looked }
}

t.test('two demo instances started at once on one data directory keep one secret, whichever generates it first', async (t) => {
  const dataDir = tempDir(t, 'pg-config-')
  const secretFile = join(dataDir, 'jwt-secret')
  const other = 'the-other-instance-secret-0123456789abcdefghij'
  const fs = await import('node:fs')
  const race = racedExistsSync(secretFile, other)
  const { loadConfig: load } = await t.mockImport<typeof import('../src/config.js')>('../src/config.js', { 'node:fs': { ...fs, existsSync: race.existsSync } })
  const { config } = load({ env: {}, dataDir })
  t.ok(race.looked(), 'the race was staged')
  // before: this one wrote its own over the other's, and each refused the other's tokens
  t.equal(readFileSync(secretFile, 'utf8').trim(), other, 'the first secret written stays')
  t.equal(config.auth.jwtSecret, other, 'and this instance signs with it too')
  t.same(fs.readdirSync(dataDir), ['jwt-secret'], 'no temporary file left behind')
})

t.test('on a file system without hard links (FAT, some network mounts) the demo still makes its secret, and still keeps one written first', async (t) => {
  const fs = await import('node:fs')
  const linkSync = (() => { throw Object.assign(new Error('EPERM: operation not permitted, link'), { code: 'EPERM' }) }) as typeof fs.linkSync
  const { loadConfig: load } = await t.mockImport<typeof import('../src/config.js')>('../src/config.js', { 'node:fs': { ...fs, linkSync } })
  const dataDir = tempDir(t, 'pg-config-')
  const { config } = load({ env: {}, dataDir })
  t.equal(readFileSync(join(dataDir, 'jwt-secret'), 'utf8').trim(), config.auth.jwtSecret, 'written in place, and signed with')
  t.equal(fs.statSync(join(dataDir, 'jwt-secret')).mode & 0o777, 0o600)
  t.same(fs.readdirSync(dataDir), ['jwt-secret'], 'no temporary file left behind')
  // the race as above: the other instance's file is there by the time this one writes
  const raced = tempDir(t, 'pg-config-')
  const secretFile = join(raced, 'jwt-secret')
  const other = 'the-other-instance-secret-0123456789abcdefghij'
  const race = racedExistsSync(secretFile, other)
  const { loadConfig: loadRaced } = await t.mockImport<typeof import('../src/config.js')>('../src/config.js', { 'node:fs': { ...fs, linkSync, existsSync: race.existsSync } })
  t.equal(loadRaced({ env: {}, dataDir: raced }).config.auth.jwtSecret, other, 'the first secret written is used')
  t.equal(readFileSync(secretFile, 'utf8').trim(), other, 'and stays')
})

t.test('a demo start removes the temporary secret files that demos killed between writing and removing theirs left, but not one being written now', async (t) => {
  // above Linux's highest pid (4194304): no process has it
  const gone = 'jwt-secret.99999999.0123456789ab'
  // the test runner that started this test: running, as a demo starting at this moment
  const writing = `jwt-secret.${process.ppid}.ba9876543210`
  const stale = `jwt-secret.${process.ppid}.00000000cafe`
  const leave = (dataDir: string): void => {
    for (const name of [gone, writing, stale, 'jwt-secret.bak']) writeFileSync(join(dataDir, name), 'x\n', { mode: 0o600 })
    // a pid taken since by another process, as pid 1 in a container
    const old = new Date(Date.now() - 120_000)
    utimesSync(join(dataDir, stale), old, old)
  }
  const generating = tempDir(t, 'pg-config-')
  leave(generating)
  const { config } = loadConfig({ env: {}, dataDir: generating })
  t.same(readdirSync(generating).sort(), ['jwt-secret', 'jwt-secret.bak', writing].sort(), 'the gone and the stale one removed; before, every one stayed for ever')
  t.equal(readFileSync(join(generating, 'jwt-secret'), 'utf8').trim(), config.auth.jwtSecret)
  // a demo killed after linking its file into place: the secret is there, and its temporary link too
  const kept = tempDir(t, 'pg-config-')
  writeFileSync(join(kept, 'jwt-secret'), SECRET + '\n', { mode: 0o600 })
  leave(kept)
  t.equal(loadConfig({ env: {}, dataDir: kept }).config.auth.jwtSecret, SECRET)
  t.same(readdirSync(kept).sort(), ['jwt-secret', 'jwt-secret.bak', writing].sort(), 'removed where the secret is kept too')
})
