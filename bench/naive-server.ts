// The naive baseline of `npm run bench`: bare Fastify + @fastify/jwt + better-sqlite3, SQL inline, no schemas, no logging.
// Started as `node dist/bench/naive-server.js` with DATABASE_FILE, PICKING_GATEWAY_JWT_SECRET, PORT and HOST in the environment.
import fastifyJwt from '@fastify/jwt'
import BetterSqlite3 from 'better-sqlite3'
import Fastify from 'fastify'

const file = process.env.DATABASE_FILE
const secret = process.env.PICKING_GATEWAY_JWT_SECRET
if (!file || !secret) {
  process.stderr.write('naive-server: DATABASE_FILE and PICKING_GATEWAY_JWT_SECRET are required\n')
  process.exit(2)
}

const db = new BetterSqlite3(file, { fileMustExist: true })
// the gateway's own pragmas, so writes cost the same on both sides
db.pragma('journal_mode = WAL')
db.pragma('busy_timeout = 5000')
db.pragma('synchronous = NORMAL')

const NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
const COLUMNS: Record<string, string> = {
  materialNumber: 'material_number',
  name: 'name',
  description: 'description',
  unit: 'unit',
  barcode: 'barcode',
  minStock: 'min_stock',
  maxStock: 'max_stock',
  weight: 'weight',
  blocked: 'blocked',
  blockReason: 'block_reason'
}

const list = db.prepare('SELECT * FROM materials ORDER BY id LIMIT 100')
const listAfter = db.prepare('SELECT * FROM materials WHERE id > ? ORDER BY id LIMIT 100')
const byId = db.prepare('SELECT * FROM materials WHERE id = ?')
const insert = db.prepare(`INSERT INTO materials (material_number, name, description, unit, barcode, min_stock, max_stock, weight, blocked, block_reason)
  VALUES (@materialNumber, @name, @description, @unit, @barcode, @minStock, @maxStock, @weight, @blocked, @blockReason) RETURNING *`)
const updates = new Map<string, BetterSqlite3.Statement>()

type Body = Record<string, string | number | boolean | null>
const bind = (v: unknown) => typeof v === 'boolean' ? (v ? 1 : 0) : (v ?? null) as string | number | null

const app = Fastify({ logger: false })
await app.register(fastifyJwt, { secret, verify: { algorithms: ['HS256'] } })

app.get('/health', async () => ({ status: 'ok' }))

await app.register(async (api) => {
  api.addHook('onRequest', async (request) => { await request.jwtVerify() })

  api.get<{ Querystring: { after?: string } }>('/materials', async (request, reply) => {
    reply.type('application/json')
    const after = request.query.after
    return JSON.stringify({ data: after === undefined ? list.all() : listAfter.all(Number(after)), meta: { limit: 100 } })
  })

  api.get<{ Params: { id: string } }>('/materials/:id', async (request, reply) => {
    const row = byId.get(Number(request.params.id))
    if (row === undefined) return reply.code(404).send({ message: 'not found' })
    return row
  })

  api.post<{ Body: Body }>('/materials', async (request, reply) => {
    const b = request.body
    try {
      // all(), not get(): get() stops at the first row of INSERT … RETURNING, so the statement never
      // reaches its end, where SQLite runs the WAL checkpoint: the WAL then grows without bound
      // (180 MB after 10,000 inserts) and every insert skips the checkpoint work the gateway does.
      const [row] = insert.all({
        materialNumber: bind(b.materialNumber),
        name: bind(b.name),
        description: bind(b.description),
        unit: bind(b.unit ?? 'pcs'),
        barcode: bind(b.barcode),
        minStock: bind(b.minStock),
        maxStock: bind(b.maxStock),
        weight: bind(b.weight),
        blocked: bind(b.blocked ?? false),
        blockReason: bind(b.blockReason)
      })
      return reply.code(201).send(row)
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') return reply.code(409).send({ message: 'conflict' })
      throw err
    }
  })

  api.post<{ Params: { id: string }, Body: Body }>('/materials/:id', async (request, reply) => {
    const fields = Object.keys(request.body).filter((f) => COLUMNS[f] !== undefined)
    if (fields.length === 0) return reply.code(400).send({ message: 'nothing to update' })
    const key = fields.join(',')
    let stmt = updates.get(key)
    if (stmt === undefined) {
      stmt = db.prepare(`UPDATE materials SET ${fields.map((f) => `${COLUMNS[f]} = @${f}`).join(', ')}, modified_at = ${NOW} WHERE id = @id`)
      updates.set(key, stmt)
    }
    const params: Record<string, string | number | null> = { id: Number(request.params.id) }
    for (const f of fields) params[f] = bind(request.body[f])
    if (stmt.run(params).changes === 0) return reply.code(404).send({ message: 'not found' })
    return byId.get(params.id)
  })

  // what a 304 costs when nothing but the token check runs
  api.get('/not-modified', async (_request, reply) => reply.code(304).send())
}, { prefix: '/api' })

async function shutdown (): Promise<void> {
  await app.close()
  db.close()
  process.exit(0)
}
process.once('SIGTERM', () => { void shutdown() })
process.once('SIGINT', () => { void shutdown() })
// the bench holds our stdin open: if it dies without stopping us, we go too
if (process.env.EXIT_ON_STDIN_END === '1') process.stdin.on('end', () => { void shutdown() }).resume()

await app.listen({ host: process.env.HOST ?? '127.0.0.1', port: Number(process.env.PORT ?? 0) })
