// The naive baseline of goal 7 (`npm run bench` with MSSQL_TEST_URL): bare Fastify + @fastify/jwt + the mssql driver,
// the first page of materials in one inline statement, serialized with JSON.stringify, logging nothing.
// Started as `node dist/bench/naive-mssql.js` with MSSQL_URL, PICKING_GATEWAY_JWT_SECRET, PORT and HOST in the environment.
import fastifyJwt from '@fastify/jwt'
import Fastify from 'fastify'
import mssql from 'mssql'
import { parseMssqlUrl } from '../src/db/mssql.js'

const url = process.env.MSSQL_URL
const secret = process.env.PICKING_GATEWAY_JWT_SECRET
if (!url || !secret) {
  process.stderr.write('naive-mssql: MSSQL_URL and PICKING_GATEWAY_JWT_SECRET are required\n')
  process.exit(2)
}

// the gateway's own reading of the URL (driver options, pool size), so both sides connect alike
const pool = new mssql.ConnectionPool(parseMssqlUrl(url))
try {
  await pool.connect()
} catch (err) {
  process.stderr.write(`naive-mssql: cannot connect: ${(err as Error).message}\n`)
  process.exit(1)
}

const PAGE = 'SELECT * FROM [dbo].[materials] ORDER BY [id] OFFSET 0 ROWS FETCH NEXT 100 ROWS ONLY'

const app = Fastify({ logger: false })
await app.register(fastifyJwt, { secret, verify: { algorithms: ['HS256'] } })

app.get('/health', async () => ({ status: 'ok' }))

await app.register(async (api) => {
  api.addHook('onRequest', async (request) => { await request.jwtVerify() })
  api.get('/materials', async (_request, reply) => {
    const result = await pool.request().query(PAGE)
    reply.type('application/json')
    return JSON.stringify({ data: result.recordset, meta: { limit: 100 } })
  })
}, { prefix: '/api' })

async function shutdown (): Promise<void> {
  await app.close()
  await pool.close()
  process.exit(0)
}
process.once('SIGTERM', () => { void shutdown() })
process.once('SIGINT', () => { void shutdown() })
// the bench holds our stdin open: if it dies without stopping us, we go too
if (process.env.EXIT_ON_STDIN_END === '1') process.stdin.on('end', () => { void shutdown() }).resume()

await app.listen({ host: process.env.HOST ?? '127.0.0.1', port: Number(process.env.PORT ?? 0) })
