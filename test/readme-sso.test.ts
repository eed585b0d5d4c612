// The README's single sign-on walk-through, run as a reader would run it against a real OpenID
// provider (test/helpers/oidc.ts: oidc-provider on loopback, its issuer under /realms/warehouse as
// Keycloak's are). The gateway is a separate process (`src/cli.ts serve` through tap's loader, from a
// temporary copy of the package as test/readme.test.ts does) with the README's Keycloak `auth.sso`
// entry, parsed from the README: only issuer, audience, clientId and redirectUri are the test
// provider's; the client secret comes from PICKING_GATEWAY_SSO_<ID>_CLIENT_SECRET as documented.
// Then: the documented curl with a client-credentials token, the browser login as far as it goes
// without a browser, and withdrawing access by disabling the row. Every process and server started
// here is stopped, and the last test checks that none is left.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { has, packageCopy, Processes, processesNaming, README, refused, type Done, type Gateway } from './helpers/documented.js'
import { freePort } from './helpers/ports.js'
import { fenced, section } from './helpers/markdown.js'
import { ADMIN_PASSWORD, TEST_ARGON2 } from './helpers/build.js'
import { AUDIENCE, BROWSER_CLIENT, browserLogin, CLIENT_SECRET, CookieJar, REALM_PATH, startProvider } from './helpers/oidc.js'
import { until } from './helpers/wait.js'
import { validateConfig } from '../src/config.js'

/** the gateway's address in the SSO section's examples */
const DOCUMENTED_GATEWAY = 'https://gateway.example.com'
/** the users walk-through's address and password placeholder (the admin part of the walk-through) */
const DOCUMENTED_BASE = 'http://127.0.0.1:3000'
const PASSWORD_PLACEHOLDER = '<the printed password>'
/** the keys the README's Keycloak entry shows; the test replaces the values of the first four */
const REPLACED = ['issuer', 'audience', 'clientId', 'redirectUri']
const DOCUMENTED_KEYS = ['id', ...REPLACED, 'typeClaim', 'typeMap']

const ssoSection = section(README, 'Single sign-on with an OpenID Connect provider')
const keycloakSection = section(ssoSection, 'Configuration: Keycloak')
const callingSection = section(ssoSection, 'Calling the gateway with the provider\'s token')
const browserSection = section(ssoSection, 'Browser login')
const rowsSection = section(ssoSection, 'The user rows single sign-on creates')
const usersWalk = fenced(section(README, 'Walk-through: authentication and users'), 'sh')

/** The README's Keycloak `auth.sso` entry; throws, saying what changed, when the block is no longer one. */
function documentedKeycloak (): Record<string, unknown> {
  const blocks = fenced(keycloakSection, 'json')
  if (blocks.length !== 1) throw new Error(`README "Configuration: Keycloak" should have one json block (the "auth" fragment), found ${blocks.length}`)
  let parsed: { auth?: { sso?: unknown } }
  try {
    parsed = JSON.parse(`{${blocks[0]}}`)
  } catch (err) {
    throw new Error(`README "Configuration: Keycloak": the json block is no longer an "auth": {…} fragment of a configuration file: ${(err as Error).message}`)
  }
  const keys = Object.keys(parsed)
  if (keys.length !== 1 || keys[0] !== 'auth' || Object.keys(parsed.auth ?? {}).join() !== 'sso') {
    throw new Error(`README "Configuration: Keycloak": expected exactly "auth": {"sso": […]}, found top-level keys ${JSON.stringify(keys)} and auth keys ${JSON.stringify(Object.keys(parsed.auth ?? {}))}`)
  }
  const list = parsed.auth!.sso
  if (!Array.isArray(list) || list.length !== 1 || list[0] === null || typeof list[0] !== 'object') {
    throw new Error('README "Configuration: Keycloak": auth.sso should be a list with one provider entry')
  }
  const entry = list[0] as Record<string, unknown>
  const missing = DOCUMENTED_KEYS.filter((key) => !(key in entry))
  const extra = Object.keys(entry).filter((key) => !DOCUMENTED_KEYS.includes(key))
  if (missing.length > 0 || extra.length > 0) {
    throw new Error(`README "Configuration: Keycloak": the auth.sso entry's keys changed (missing ${JSON.stringify(missing)}, new ${JSON.stringify(extra)}); update test/readme-sso.test.ts to say which of them the test provider replaces`)
  }
  return entry
}

/** The Keycloak part of "Calling the gateway with the provider's token": BASE, the token request, the call. */
function documentedCall (): { baseLine: string, tokenLines: string[], callLine: string } {
  const blocks = fenced(callingSection, 'sh')
  if (blocks.length !== 1) throw new Error(`README "Calling the gateway with the provider's token" should have one sh block, found ${blocks.length}`)
  const lines = blocks[0].split('\n')
  const baseLine = lines.find((l) => /^BASE=/.test(l))
  const from = lines.findIndex((l) => l.trim() === '# Keycloak')
  const to = from === -1 ? -1 : lines.findIndex((l, i) => i > from && (l.trim() === '' || l.startsWith('#')))
  const tokenLines = from === -1 ? [] : lines.slice(from + 1, to === -1 ? undefined : to)
  const callLine = lines.filter((l) => /^curl .*\$BASE\/api\/.*\$TOKEN/.test(l)).at(-1)
  if (baseLine !== `BASE=${DOCUMENTED_GATEWAY}` || tokenLines.length === 0 || !/^TOKEN=\$\(curl /.test(tokenLines[0]) || callLine === undefined) {
    throw new Error(`README "Calling the gateway with the provider's token": expected BASE=${DOCUMENTED_GATEWAY}, a "# Keycloak" comment followed by TOKEN=$(curl …), and a final curl to $BASE/api/… with $TOKEN`)
  }
  return { baseLine, tokenLines, callLine }
}

const processes = new Processes()

/** Runs documented lines as one sh script; `@@name` markers split the output. */
async function sh (name: string, parts: Array<[string, string]>, env: NodeJS.ProcessEnv = {}): Promise<{ out: Record<string, string>, done: Done }> {
  const script = parts.map(([label, code]) => `printf '\\n@@${label}\\n'\n${code}`).join('\n') + '\nprintf \'\\n@@end\\n\'\n'
  const file = join(pkg, name)
  writeFileSync(file, script)
  const done = await processes.run('sh', [file], pkg, env)
  const out: Record<string, string> = {}
  const pieces = done.stdout.split(/\n@@(\S+)\n/)
  for (let i = 1; i + 1 < pieces.length; i += 2) out[pieces[i]] = pieces[i + 1]
  return { out, done }
}

const toolsMissing = has('curl', ['--version']) && has('jq', ['--version']) ? false : 'curl and jq are needed by the README\'s commands and one of them is not installed here'

const decode = (token: string): Record<string, unknown> => JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString())
const json = (text: string | undefined): any => {
  try {
    return JSON.parse((text ?? '').trim())
  } catch {
    return { unparsable: text }
  }
}

// --- the documented pieces, read before anything starts (a README that changed shape fails here) ---
const documented = documentedKeycloak()
const call = documentedCall()
const id = String(documented.id)
const secretEnv = `PICKING_GATEWAY_SSO_${id.toUpperCase().replaceAll('-', '_')}_CLIENT_SECRET`
const loginPath = /`https:\/\/gateway\.example\.com(\/api\/users\/sso\/<id>\/login)`/.exec(browserSection)?.[1]
const adminLogin = (usersWalk[0] ?? '').split('\n').filter((l, i, all) => i <= all.findIndex((x) => x.startsWith('ACCESS=')))
const listUsersLine = (usersWalk[0] ?? '').split('\n').find((l) => /^curl -s \$BASE\/api\/users -H "authorization: Bearer \$ACCESS"$/.test(l))
const disableLine = (usersWalk[0] ?? '').split('\n').find((l) => /^curl -s -X PATCH \$BASE\/api\/users\/2 .*'\{"enabled": false\}'$/.test(l))

// --- the provider, the package copy, the configuration, the gateway ---
const pkg = packageCopy('pg-readme-sso-')
const port = await freePort()
const base = `http://127.0.0.1:${port}`
const redirectUri = `${base}${new URL(String(documented.redirectUri)).pathname}`
const idp = await startProvider({ redirectUri })
t.teardown(async () => {
  await processes.end(pkg)
  await idp.close()
})

// The README's entry with the test provider's issuer, audience, client and redirect URI; the rest as documented.
const entry = { ...documented, issuer: idp.issuer, audience: AUDIENCE, clientId: BROWSER_CLIENT, redirectUri }
const configFile = join(pkg, 'config.json')
writeFileSync(configFile, JSON.stringify({
  // no overload check, as in build(): a busy machine's 503 OVERLOADED is not what the README's steps show
  server: { host: '127.0.0.1', port, maxEventLoopDelayMs: 0 },
  database: { url: `sqlite:${join(pkg, 'gateway.db')}` },
  auth: { argon2: TEST_ARGON2, sso: [entry] },
  licence: { logins: 5 }
}, null, 2))
const gatewayEnv = {
  PICKING_GATEWAY_CONFIG: configFile,
  PICKING_GATEWAY_JWT_SECRET: randomBytes(48).toString('base64url'),
  [secretEnv]: CLIENT_SECRET
}
const init = await processes.cli(pkg, ['db', 'init'], { ...gatewayEnv, PICKING_GATEWAY_ADMIN_PASSWORD: ADMIN_PASSWORD })
if (init.code !== 0) throw new Error(`picking-gateway db init failed (${init.code}):\n${init.stdout}\n${init.stderr}`)
const gateway: Gateway = await processes.serve(pkg, { ...gatewayEnv, LOG_LEVEL: 'info' })

// Keycloak-like claims: a service account's token and a person's, realm roles under realm_access.roles
idp.claims.set('erp', { preferred_username: 'service-account-erp', realm_access: { roles: ['default-roles-warehouse', 'gateway-app'] } })
idp.claims.set('alice', { preferred_username: 'Alice', name: 'Alice Example', email: 'alice@example.com', realm_access: { roles: ['default-roles-warehouse', 'gateway-user'] } })
idp.loginAs = 'alice'

/** The documented admin login of the users walk-through, pointed at this gateway. */
const asAdmin = (code: string): string => code.replaceAll(DOCUMENTED_BASE, base).replaceAll(PASSWORD_PLACEHOLDER, ADMIN_PASSWORD)

t.test('the walk-through\'s pieces are where the test reads them', async (t) => {
  t.equal(new URL(String(documented.issuer)).pathname, REALM_PATH, 'the documented issuer has the realm path the test provider has')
  t.equal(new URL(String(documented.redirectUri)).pathname, `/api/users/sso/${id}/callback`, 'the documented redirect URI is the callback of the documented id')
  t.equal(loginPath, '/api/users/sso/<id>/login', 'the browser login URL')
  t.match(ssoSection, secretEnv.replace(id.toUpperCase(), '<ID>'), 'the client secret\'s variable is documented')
  t.ok(adminLogin.length >= 2 && listUsersLine !== undefined && disableLine !== undefined, 'the users walk-through has the admin login, the user list and the PATCH that disables')
  t.match(rowsSection, /To withdraw access, disable the row\*\* \(`PATCH \/api\/users\/<id>\s+\{"enabled": false\}`\)/, 'disabling is the documented way to withdraw access')
  t.comment(`provider ${idp.issuer}; gateway ${base}`)
})

t.test('both documented configuration blocks pass the gateway\'s configuration check once their placeholders are filled', async (t) => {
  for (const heading of ['Configuration: Entra ID (Azure AD)', 'Configuration: Keycloak']) {
    const [block] = fenced(section(ssoSection, heading), 'json')
    const filled = (block ?? '').replaceAll('<tenant-id>', '6f1c3b2a-0000-4000-8000-000000000001').replaceAll('<application-client-id>', '6f1c3b2a-0000-4000-8000-000000000002')
    t.notMatch(filled, /<[^>]+>/, `${heading}: no other placeholder`)
    const problems: string[] = []
    const { auth } = JSON.parse(`{${filled}}`) as { auth: Record<string, unknown> }
    try {
      validateConfig({ database: { url: 'sqlite::memory:' }, auth: { ...auth, jwtSecret: randomBytes(48).toString('base64url') } }, problems)
    } catch {} // a ConfigError lists the same problems
    t.same(problems, [], `${heading}: accepted as written`)
  }
})

/** The provider token of the first test, for the withdrawal test. */
let erpToken = ''
let erpId = 0
let aliceId = 0
let aliceAccess = ''

t.test('"Calling the gateway with the provider\'s token", Keycloak: a client-credentials token works', { skip: toolsMissing }, async (t) => {
  const discovery = await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json() as { token_endpoint: string }
  const tokenLines = call.tokenLines.join('\n')
  const documentedEndpoint = /https:\/\/\S+\/token\b/.exec(tokenLines)?.[0] ?? ''
  t.ok(documentedEndpoint.startsWith(`${String(documented.issuer)}/`), `the documented token endpoint (${documentedEndpoint}) is under the documented issuer`)
  const script = [
    `BASE=${base}`,
    tokenLines.replace(documentedEndpoint, discovery.token_endpoint)
  ].join('\n')
  const { out: o, done } = await sh('sso-call.sh', [
    ['token', script],
    ['call', call.callLine],
    ['probe', 'printf \'%s\' "$TOKEN"']
  ], { ERP_CLIENT_SECRET: CLIENT_SECRET })
  t.notOk(done.timedOut, 'the commands end by themselves')
  t.equal(done.code, 0, `sh exits 0${done.stderr ? `; stderr: ${done.stderr}` : ''}`)
  erpToken = (o.probe ?? '').trim()
  t.match(erpToken, /^eyJ[\w-]+\.[\w-]+\.[\w-]+$/, 'the provider gave an access token (jq -r .access_token)')
  t.equal(o.token?.trim(), '', 'getting the token prints nothing')
  const claims = decode(erpToken)
  t.equal(claims.iss, idp.issuer, 'issued by the test provider')
  t.equal(claims.aud, AUDIENCE, 'for the gateway\'s audience')

  const page = json(o.call)
  t.ok(Array.isArray(page.data), `the API answers the list (${(o.call ?? '').slice(0, 200)})`)
  t.equal(page.meta?.limit, 5, 'with the limit of the documented call')
  // the request log line is written once the answer is sent: it may reach us a moment after curl ended
  const logged = (): Record<string, any> | undefined => gateway.out().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, any>)
    .find((l) => l.msg === 'request' && String(l.url).startsWith('/api/materials?limit=5'))
  await until(() => logged() !== undefined, 'the request\'s log line', 5000).catch(() => {})
  t.equal(logged()?.statusCode, 200, 'the gateway\'s request log shows 200')

  // the admin's view, with the users walk-through's commands
  const users = await sh('sso-users.sh', [['login', asAdmin(adminLogin.join('\n'))], ['users', asAdmin(listUsersLine!)]])
  t.equal(users.done.code, 0, `sh exits 0${users.done.stderr ? `; stderr: ${users.done.stderr}` : ''}`)
  const row = (json(users.out.users).data ?? []).find((u: Record<string, unknown>) => u.username === 'service-account-erp')
  t.match(row, { type: 'application', source: 'sso', enabled: true }, 'the first token created the row: the type from realm_access.roles, the username from preferred_username, source "sso"')
  erpId = Number(row?.id)
})

t.test('"Browser login": the login URL, the provider\'s sign-in, the callback\'s body', async (t) => {
  const login = await fetch(`${base}${loginPath!.replace('<id>', id)}`, { redirect: 'manual' })
  t.equal(login.status, 302, 'the login URL redirects')
  await login.arrayBuffer()
  const location = login.headers.get('location') ?? ''
  const discovery = await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json() as { authorization_endpoint: string }
  t.ok(location.startsWith(`${discovery.authorization_endpoint}?`), 'to the provider\'s authorization endpoint')
  const q = new URL(location).searchParams
  t.equal(q.get('code_challenge_method'), 'S256', 'with PKCE')
  t.ok(q.get('state') !== null && q.get('nonce') !== null, 'state and nonce')
  t.equal(q.get('redirect_uri'), redirectUri, 'back to the configured redirect URI')

  // the gateway's cookie for this login, which the browser sends back with the callback
  const cookie = (login.headers.getSetCookie()[0] ?? '').split(';')[0]
  t.match(cookie, /^sso-login-[\w-]+=[\w-]+$/, 'the login sets a cookie that binds it to this browser')

  const jar = new CookieJar()
  const callback = await browserLogin(location, redirectUri, jar)
  const elsewhere = await fetch(callback, { redirect: 'manual' })
  t.equal(elsewhere.status, 400, 'the callback URL opened without the login\'s cookie (another browser) is a 400')
  t.match(await elsewhere.json(), { code: 'SSO_STATE_INVALID', message: /must come back to the browser that started the login/ }, 'SSO_STATE_INVALID, saying why')
  const res = await fetch(callback, { redirect: 'manual', headers: { cookie } })
  const text = await res.text()
  t.equal(res.status, 200, `the callback answers 200 (${text.slice(0, 300)})`)
  const body = json(text)
  const shown = /`(\{"login":[^`]*\})`/.exec(browserSection)?.[1] ?? ''
  const keys = [...shown.matchAll(/"(\w+)"/g)].map((m) => m[1])
  t.same(keys, ['login', 'accessToken', 'refreshToken', 'expiresIn'], 'the README names the body\'s fields')
  t.same(Object.keys(body).sort(), [...keys].sort(), 'the callback\'s body has exactly those fields')
  t.equal(body.login, true, 'login: true')
  t.equal(body.expiresIn, Number(/"expiresIn": (\d+)/.exec(shown)?.[1]), 'expiresIn as documented')
  t.equal(decode(body.accessToken).typ, 'access', 'the gateway\'s own access token')
  aliceAccess = body.accessToken
  aliceId = Number(decode(body.accessToken).sub)

  const me = await fetch(`${base}/api/users/${aliceId}`, { headers: { authorization: `Bearer ${body.accessToken}` } })
  t.match(await me.json(), { username: 'alice', displayName: 'Alice Example', type: 'user', source: 'sso', enabled: true }, 'the person\'s row: type from realm_access.roles in the ID token')
  const refreshed = await fetch(`${base}/api/users/refresh`, { method: 'POST', headers: { authorization: `Bearer ${body.refreshToken}` } })
  t.equal(refreshed.status, 200, 'refresh works as for a password login')
  await refreshed.arrayBuffer()

  const replay = await fetch(callback, { redirect: 'manual', headers: { cookie } })
  t.equal(replay.status, 400, 'a replayed callback is a 400')
  t.equal((await replay.json() as { code?: string }).code, 'SSO_STATE_INVALID', 'SSO_STATE_INVALID, as documented')
})

t.test('withdrawing access: disabling the row refuses the provider\'s token and the gateway\'s', { skip: toolsMissing }, async (t) => {
  t.ok(erpId > 0 && erpToken !== '' && aliceId > 0, 'the rows of the earlier tests')
  const before = await sh('sso-before.sh', [['call', call.callLine.replace('curl -s', 'curl -s -o /dev/null -w \'%{http_code}\'')]], { BASE: base, TOKEN: erpToken })
  t.equal(before.out.call, '200', 'the provider\'s token works before')
  const disable = (userId: number): string => asAdmin(disableLine!).replace('/api/users/2 ', `/api/users/${userId} `)
  const { out: o, done } = await sh('sso-withdraw.sh', [
    ['login', asAdmin(adminLogin.join('\n'))],
    ['disable-erp', disable(erpId)],
    ['call', call.callLine],
    ['disable-alice', disable(aliceId)],
    ['alice', `curl -s $BASE/api/materials -H "authorization: Bearer ${aliceAccess}"`]
  ], { TOKEN: erpToken })
  t.equal(done.code, 0, `sh exits 0${done.stderr ? `; stderr: ${done.stderr}` : ''}`)
  t.match(json(o['disable-erp']), { id: erpId, enabled: false, source: 'sso' }, 'the PATCH disables the ERP\'s row')
  t.match(json(o.call), { statusCode: 401, code: 'TOKEN_INVALID' }, 'the same provider token is refused at once (on the instance that made the change)')
  t.match(json(o['disable-alice']), { id: aliceId, enabled: false, source: 'sso' }, 'the PATCH disables the person\'s row')
  t.match(json(o.alice), { statusCode: 401, code: 'TOKEN_INVALID' }, 'the gateway token from her browser login is refused')

  const fresh = await idp.clientCredentials('erp')
  const again = await fetch(`${base}/api/materials`, { headers: { authorization: `Bearer ${fresh}` } })
  t.equal(again.status, 401, 'a new provider token of the disabled identity is refused too (no new row)')
  t.equal((await again.json() as { code?: string }).code, 'TOKEN_INVALID', 'TOKEN_INVALID')
})

t.test('every process and server started here ends', async (t) => {
  t.same(await processes.stop(gateway), [0, null], 'the gateway exits 0 on SIGTERM')
  t.ok(await refused(port), 'nothing listens on the gateway\'s port any more')
  await idp.close()
  t.ok(await refused(idp.port), 'the provider no longer listens')
  t.same(processes.running().map((child) => child.pid), [], 'every process started here has ended')
  t.same(processesNaming(pkg), [], 'no process names the temporary package directory')
  t.notMatch(gateway.out() + gateway.err(), new RegExp(CLIENT_SECRET), 'the client secret is never logged')
})
