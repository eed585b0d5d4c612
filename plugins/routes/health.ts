// Liveness and readiness, public: they carry no data.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ErrorResponse } from '../../schemas/common.js'
import { STORAGE_FAULT_SHOWN_MS, type DatabaseStatus } from '../database.js'

const Health = Type.Object({ status: Type.Literal('ok') })

const Ready = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('unavailable')]),
  database: Type.Object({
    ok: Type.Boolean(),
    latencyMs: Type.Optional(Type.Number()),
    error: Type.Optional(Type.String()),
    fault: Type.Optional(Type.Object({
      error: Type.String(),
      lastSeenAt: Type.String({ format: 'date-time' })
    }, { description: 'a fault of the storage (a full disk, a read-only, damaged or unreadable file) that refused a request in the last 10 minutes: writes answer 503 while it lasts, reads go on, and the status stays ready' }))
  }),
  controllers: Type.Array(Type.Object({
    id: Type.String(),
    connected: Type.Boolean(),
    lastSeenAt: Type.Union([Type.String(), Type.Null()]),
    droppedBytes: Type.Integer({ description: 'bytes from the controller dropped since the start (garbage between frames, malformed frames)' }),
    error: Type.Optional(Type.String({ description: 'why the link is refused (the controller answered as another id), or, while it is down, how its last connection ended or its last connect failed' }))
  }))
})

/** The storage fault to show: one that refused a request within STORAGE_FAULT_SHOWN_MS. */
function recentFault (status: DatabaseStatus): { fault?: { error: string, lastSeenAt: string } } {
  const fault = status.storageFault
  if (fault === null || performance.now() - fault.seen > STORAGE_FAULT_SHOWN_MS) return {}
  return { fault: { error: fault.error, lastSeenAt: fault.lastSeenAt } }
}

/** under-pressure's handler for liveness: a busy process is alive (a supervisor would restart it for nothing) */
const alive = (): undefined => undefined

const health: FastifyPluginAsyncTypebox = async (fastify) => {
  // a monitor polls readiness every few seconds: an outage is one warning, without a stack, not one per poll
  let reachable = true
  fastify.get('/health', {
    logLevel: 'warn',
    config: { pressureHandler: alive },
    schema: { summary: 'Liveness', tags: ['health'], security: [], response: { 200: Health } }
  }, async () => ({ status: 'ok' as const }))

  fastify.get('/health/ready', {
    logLevel: 'warn',
    schema: { summary: 'Readiness: database round trip and controller links', tags: ['health'], security: [], response: { 200: Ready, 503: Type.Union([Ready, ErrorResponse], { description: 'the database unreachable or the mapping not fitting (the readiness body), or overloaded (503 OVERLOADED, the error body)' }) } }
  }, async (request, reply) => {
    const controllers = fastify.hardware.controllerStates()
    const started = performance.now()
    try {
      await fastify.db.ping()
      const latencyMs = Math.round((performance.now() - started) * 100) / 100
      reachable = true
      const problem = fastify.databaseStatus.mappingProblem
      if (problem !== null) {
        return reply.code(503).send({ status: 'unavailable' as const, database: { ok: false, latencyMs, error: problem }, controllers })
      }
      return { status: 'ready' as const, database: { ok: true, latencyMs, ...recentFault(fastify.databaseStatus) }, controllers }
    } catch (err) {
      if (reachable) request.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'readiness: database unreachable')
      reachable = false
      return reply.code(503).header('retry-after', '5').send({
        status: 'unavailable' as const, database: { ok: false, error: 'database unreachable' }, controllers
      })
    }
  })
}

export default health
