// Requests to the identity provider go through HTTP(S)_PROXY unless NO_PROXY names the host (its own process: it sets the environment).
import { once } from 'node:events'
import { createServer, request as httpRequest, type Server } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import t from 'tap'
import { build } from '../helpers/build.js'
import { AUDIENCE, startProvider } from '../helpers/oidc.js'

const PROXY_KEYS = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy', 'ALL_PROXY', 'all_proxy']

/** A forward proxy on loopback (CONNECT tunnels and absolute-form requests) that records what it was asked for. */
async function startProxy (): Promise<{ url: string, seen: string[], close: () => Promise<void> }> {
  const seen: string[] = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((req, res) => {
    seen.push(req.url ?? '')
    const target = new URL(req.url ?? '')
    const upstream = httpRequest({ host: target.hostname, port: target.port, path: `${target.pathname}${target.search}`, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    upstream.on('error', () => res.destroy())
    req.pipe(upstream)
  })
  server.on('connect', (req, client: Socket) => {
    seen.push(`CONNECT ${req.url}`)
    const [host, port] = (req.url ?? '').split(':')
    const upstream = connect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      upstream.pipe(client)
      client.pipe(upstream)
    })
    upstream.on('error', () => client.destroy())
    client.on('error', () => upstream.destroy())
    sockets.add(upstream)
  })
  server.on('connection', (socket) => { sockets.add(socket) })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: async () => {
      const closed = new Promise((resolve) => server.close(resolve))
      for (const socket of sockets) socket.destroy()
      await closed
    }
  }
}

t.test('provider requests honour HTTP_PROXY and NO_PROXY', async (t) => {
  const saved = Object.fromEntries(PROXY_KEYS.map((key) => [key, process.env[key]]))
  t.teardown(() => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key]
      else process.env[key] = value
    }
  })
  for (const key of PROXY_KEYS) delete process.env[key]
  const idp = await startProvider()
  t.teardown(() => idp.close())
  const proxy = await startProxy()
  t.teardown(() => proxy.close())
  idp.claims.set('erp', { roles: ['gateway-app'], preferred_username: 'erp' })
  const token = await idp.clientCredentials('erp')
  const sso = [{ id: 'warehouse', issuer: idp.issuer, audience: AUDIENCE, typeMap: { 'gateway-app': 'application' as const } }]

  process.env.HTTP_PROXY = proxy.url
  const proxied = await build(t, { auth: { sso } })
  const res = await proxied.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${token}` } })
  t.equal(res.statusCode, 200)
  const target = `127.0.0.1:${idp.port}`
  // undici tunnels through CONNECT, for http targets too
  t.ok(proxy.seen.length >= 1 && proxy.seen.every((line) => line === `CONNECT ${target}` || line.startsWith(`http://${target}/`)), `discovery and keys went through the proxy: ${proxy.seen.join(', ')}`)

  const before = proxy.seen.length
  process.env.NO_PROXY = '127.0.0.1'
  const direct = await build(t, { auth: { sso } })
  t.equal((await direct.app.inject({ method: 'GET', url: '/api/materials', headers: { authorization: `Bearer ${token}` } })).statusCode, 200)
  t.equal(proxy.seen.length, before, 'NO_PROXY: straight to the provider')
})
