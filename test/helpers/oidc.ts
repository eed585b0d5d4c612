// A real OpenID Connect provider (oidc-provider) on a random loopback port, its issuer under a path as
// Keycloak's realms are: generated keys, a browser client and machine clients, claims the tests set.
// The tests also hold its private keys, to sign the token shapes it will not mint (expired, no exp, …).
import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload, type CryptoKey } from 'jose'
import Provider, { type ClientMetadata } from 'oidc-provider'

export const REALM_PATH = '/realms/warehouse'
export const AUDIENCE = 'https://gateway.test/api'
export const CLIENT_SECRET = 'test-client-secret-0123456789abcdefghijkl'
export const BROWSER_CLIENT = 'gateway-web'
/** machine clients (client credentials): each is its own identity (sub = client id) */
export const MACHINE_CLIENTS = ['erp', 'erp-2', 'erp-3', 'erp-4', 'erp-5', 'erp-6', 'erp-7', 'erp-8', 'erp-9', 'scanner']

export interface TestKey { kid: string, privateKey: CryptoKey, publicJwk: JWK, privateJwk: JWK }

export interface TestProvider {
  issuer: string
  port: number
  /** claims added to the tokens (access and ID) of a subject: a client id or an account id */
  claims: Map<string, Record<string, unknown>>
  /** the account the next browser login signs in as */
  loginAs: string
  keys: TestKey[]
  /** requests for the key set since start */
  jwksRequests: number
  /** requests for the discovery document since start */
  discoveryRequests: number
  /** requests held unanswered now (mode 'hang') */
  readonly hung: number
  /** 'up' answers, 'hang' accepts requests and never answers */
  mode: 'up' | 'hang'
  /** when set, the token endpoint gives this answer instead of its own (another provider's words) */
  tokenAnswer?: { status: number, body: Record<string, unknown>, headers?: Record<string, string> }
  /** when set, the key set's address gives this body instead of the provider's keys (a provider's faulty answer) */
  jwksAnswer?: Record<string, unknown>
  /** a client-credentials access token, minted by the provider */
  clientCredentials (clientId: string): Promise<string>
  /** signs any payload with one of the provider's private keys (default: the current one) */
  sign (payload: JWTPayload, options?: { key?: TestKey, alg?: string, header?: Record<string, unknown> }): Promise<string>
  /** a new signing key in front (the old one stays published), without restarting the server */
  rotate (): Promise<TestKey>
  /** new key material under the current key's kid (a provider restarted with generated keys), the old key no longer published */
  rekey (): Promise<TestKey>
  /** stops publishing a key (withdrawn after a leak), without restarting the server */
  withdraw (key: TestKey): void
  /** stops listening (connections refused) */
  stop (): Promise<void>
  /** listens again on the same port */
  start (): Promise<void>
  close (): Promise<void>
}

async function newKey (n: number, kid = `test-key-${n}-${Date.now().toString(36)}`): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  return {
    kid,
    privateKey,
    publicJwk: { ...await exportJWK(publicKey), kid, alg: 'RS256', use: 'sig' },
    privateJwk: { ...await exportJWK(privateKey), kid, alg: 'RS256', use: 'sig' }
  }
}

export async function startProvider (options: { redirectUri?: string } = {}): Promise<TestProvider> {
  const sockets = new Set<Socket>()
  const hanging = new Set<ServerResponse>()
  let provider: Provider | undefined
  let callback: ((req: IncomingMessage, res: ServerResponse) => void) | undefined

  const server: Server = createServer((req, res) => {
    const url = req.url ?? '/'
    if (state.mode === 'hang') {
      hanging.add(res)
      return
    }
    if (state.tokenAnswer !== undefined && req.method === 'POST' && url === `${REALM_PATH}/token`) {
      res.writeHead(state.tokenAnswer.status, { 'content-type': 'application/json', ...state.tokenAnswer.headers }).end(JSON.stringify(state.tokenAnswer.body))
      return
    }
    if (url.startsWith(`${REALM_PATH}/jwks`)) state.jwksRequests++
    if (state.jwksAnswer !== undefined && url.startsWith(`${REALM_PATH}/jwks`)) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(state.jwksAnswer))
      return
    }
    if (url.startsWith(`${REALM_PATH}/.well-known/openid-configuration`)) state.discoveryRequests++
    if (url.startsWith('/interaction/')) {
      void interaction(req, res)
      return
    }
    if (!url.startsWith(REALM_PATH)) {
      res.writeHead(404).end()
      return
    }
    // mounted under the issuer's path: oidc-provider takes the mount path from originalUrl
    ;(req as IncomingMessage & { originalUrl?: string }).originalUrl = url
    req.url = url.slice(REALM_PATH.length) || '/'
    callback!(req, res)
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const port = (server.address() as AddressInfo).port
  const issuer = `http://127.0.0.1:${port}${REALM_PATH}`

  /** The login page: signs in as `loginAs` at once (the provider's own consent is granted by loadExistingGrant). */
  async function interaction (req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const details = await provider!.interactionDetails(req, res)
      if (details.prompt.name !== 'login') throw new Error(`unexpected prompt ${details.prompt.name}`)
      await provider!.interactionFinished(req, res, { login: { accountId: state.loginAs } }, { mergeWithLastSubmission: false })
    } catch (err) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err))
    }
  }

  function build (): void {
    const claimsOf = (id: string | undefined): Record<string, unknown> => (id === undefined ? undefined : state.claims.get(id)) ?? {}
    const clients: ClientMetadata[] = [
        ...(options.redirectUri === undefined
          ? []
          : [{
              client_id: BROWSER_CLIENT,
              client_secret: CLIENT_SECRET,
              redirect_uris: [options.redirectUri],
              grant_types: ['authorization_code'],
              response_types: ['code' as const],
              token_endpoint_auth_method: 'client_secret_post' as const
            }]),
        ...MACHINE_CLIENTS.map((id) => ({
          client_id: id,
          client_secret: CLIENT_SECRET,
          redirect_uris: [],
          grant_types: ['client_credentials'],
          response_types: [] as Array<'code'>,
          token_endpoint_auth_method: 'client_secret_post' as const
        }))
    ]
    provider = new Provider(issuer, {
      clients,
      jwks: { keys: state.keys.map((key) => key.privateJwk) },
      cookies: { keys: ['test-cookie-key-0123456789abcdefghijklmnop'] },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: async (_ctx, client) => client.clientId === BROWSER_CLIENT ? undefined : AUDIENCE,
          useGrantedResource: async () => true,
          getResourceServerInfo: async () => ({ scope: 'api', audience: AUDIENCE, accessTokenFormat: 'jwt', accessTokenTTL: 300, jwt: { sign: { alg: 'RS256' } } })
        }
      },
      // realm_access, resource_access: Keycloak's realm and client roles, in the ID token when their mappers' "Add to ID token" is on
      claims: { openid: ['sub'], profile: ['name', 'preferred_username', 'upn', 'roles', 'groups', 'realm_access', 'resource_access'], email: ['email', 'email_verified'] },
      conformIdTokenClaims: false,
      findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub, ...claimsOf(sub) }) }),
      extraTokenClaims: async (_ctx, token) => claimsOf((token as { accountId?: string }).accountId ?? (token as { clientId?: string }).clientId),
      loadExistingGrant: async (ctx) => {
        const grantId = ctx.oidc.result?.consent?.grantId ?? ctx.oidc.session!.grantIdFor(ctx.oidc.client!.clientId)
        if (grantId) return await ctx.oidc.provider.Grant.find(grantId)
        const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId })
        grant.addOIDCScope('openid profile email')
        await grant.save()
        return grant
      },
      interactions: { url: async (_ctx, interaction) => `/interaction/${interaction.uid}` },
      pkce: { required: () => true },
      ttl: { AccessToken: 300, ClientCredentials: 300, IdToken: 300, Interaction: 300, Session: 600, Grant: 600, AuthorizationCode: 60 }
    })
    callback = provider.callback()
  }

  const state: TestProvider = {
    issuer,
    port,
    claims: new Map(),
    loginAs: 'alice',
    keys: [await newKey(1)],
    jwksRequests: 0,
    discoveryRequests: 0,
    get hung () { return hanging.size },
    mode: 'up',
    async clientCredentials (clientId) {
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: CLIENT_SECRET, scope: 'api' })
      })
      const body = await res.json() as { access_token?: string }
      if (res.status !== 200 || typeof body.access_token !== 'string') throw new Error(`client credentials for ${clientId}: ${res.status} ${JSON.stringify(body)}`)
      return body.access_token
    },
    async sign (payload, opts = {}) {
      const key = opts.key ?? state.keys[0]
      return await new SignJWT(payload).setProtectedHeader({ alg: opts.alg ?? 'RS256', kid: key.kid, typ: 'at+jwt', ...opts.header }).sign(key.privateKey)
    },
    async rotate () {
      const key = await newKey(state.keys.length + 1)
      state.keys = [key, ...state.keys]
      build()
      return key
    },
    async rekey () {
      const key = await newKey(0, state.keys[0].kid)
      state.keys = [key, ...state.keys.slice(1)]
      build()
      return key
    },
    withdraw (key) {
      state.keys = state.keys.filter((k) => k !== key)
      build()
    },
    async stop () {
      const closed = new Promise((resolve) => server.close(resolve))
      for (const res of hanging) res.destroy()
      hanging.clear()
      for (const socket of sockets) socket.destroy()
      await closed
    },
    async start () {
      server.listen(port, '127.0.0.1')
      await once(server, 'listening')
    },
    async close () {
      if (server.listening) await state.stop()
    }
  }
  build()
  return state
}

/** Cookies by name, as a browser would keep them for one host (paths ignored: one test, one provider). */
export class CookieJar {
  private readonly cookies = new Map<string, string>()
  store (headers: Headers): void {
    for (const line of headers.getSetCookie()) {
      const [pair] = line.split(';')
      const at = pair.indexOf('=')
      const name = pair.slice(0, at).trim()
      const value = pair.slice(at + 1).trim()
      if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }

  header (): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }
}

/**
 * Follows a browser's redirects from the authorization URL through the provider's login until it
 * points at the gateway's redirect URI; returns that URL (with code, state and iss).
 */
export async function browserLogin (authorizationUrl: string, redirectUri: string, jar = new CookieJar()): Promise<URL> {
  let url = authorizationUrl
  for (let hop = 0; hop < 10; hop++) {
    if (url.startsWith(redirectUri)) return new URL(url)
    const res = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } })
    jar.store(res.headers)
    const location = res.headers.get('location')
    if (location === null) throw new Error(`${url}: ${res.status} without a redirect: ${await res.text()}`)
    await res.arrayBuffer()
    url = new URL(location, url).href
  }
  throw new Error('too many redirects')
}
