// buildApp: the one Fastify instance, used by the server and by every test.
import { readFileSync } from 'node:fs'
import { getHeapStatistics } from 'node:v8'
import rateLimit from '@fastify/rate-limit'
import underPressure from '@fastify/under-pressure'
import sensible from '@fastify/sensible'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Ajv, { type ErrorObject } from 'ajv'
import addFormats from 'ajv-formats'
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Config } from '../schemas/config.js'
import { Material, MaterialCreate } from '../schemas/materials.js'
import { Station, StationCreate } from '../schemas/stations.js'
import { User, UserCreate } from '../schemas/users.js'
import { mappingsOf, signingKeys } from './config.js'
import authPlugin from '../plugins/auth.js'
import databasePlugin from '../plugins/database.js'
import errorHandler from '../plugins/error-handler.js'
import hardwarePlugin, { type HardwarePluginOptions } from '../plugins/hardware.js'
import openapi from '../plugins/openapi.js'
import healthRoutes from '../plugins/routes/health.js'
import materialRoutes from '../plugins/routes/materials.js'
import stationRoutes from '../plugins/routes/stations.js'
import stationCommandRoutes from '../plugins/routes/station-commands.js'
import eventRoutes from '../plugins/routes/events.js'
import userRoutes from '../plugins/routes/users.js'
import type { Database } from './db/types.js'
import { loggerOptions } from './logger.js'

export interface BuildOptions {
  db: Database
  /** a pino instance or options; defaults to the configured level */
  logger?: FastifyServerOptions['logger'] | FastifyServerOptions['loggerInstance']
  hardware?: Partial<HardwarePluginOptions>
}

export type App = FastifyInstance

/** Fields a client may read but never write (in a resource but not in its create body); named as such in 400 messages. */
const READ_ONLY_FIELDS = new Set([[Material, MaterialCreate], [Station, StationCreate], [User, UserCreate]]
  .flatMap(([item, create]) => Object.keys(item.properties).filter((field) => !(field in create.properties))))

/**
 * Bodies are validated strictly: no coercion ("5" is not a number, ["a"] is not a string) and
 * unknown fields refused, where Fastify's default Ajv coerces and strips (DESIGN §10).
 * Query strings and path parameters are text by nature and are coerced.
 */
function validatorCompiler () {
  const base = { allErrors: false, useDefaults: true, strict: false, removeAdditional: false as const }
  const body = addFormats.default(new Ajv.default({ ...base, coerceTypes: false }))
  const text = addFormats.default(new Ajv.default({ ...base, coerceTypes: 'array' }))
  return ({ schema, httpPart }: { schema: object, httpPart?: string }) =>
    (httpPart === 'body' ? body : text).compile(schema)
}

function describeValidation (errors: ErrorObject[], dataVar: string): Error {
  const [first] = errors
  const path = `${dataVar}${first.instancePath}`
  const params = first.params as Record<string, unknown>
  let message: string
  if (first.keyword === 'additionalProperties') {
    const field = params.additionalProperty as string
    message = READ_ONLY_FIELDS.has(field) ? `${path}/${field} is read-only` : `${path} has unknown field '${field}'`
  } else if (first.keyword === 'required') {
    message = `${path} must have required field '${params.missingProperty as string}'`
  } else {
    // A union of literals (an enum written with TypeBox) reports one `const` error per branch.
    const allowed = errors.filter((e) => e.keyword === 'const' && e.instancePath === first.instancePath)
      .map((e) => (e.params as { allowedValue: unknown }).allowedValue)
    message = allowed.length > 1
      ? `${path} must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`
      : `${path} ${first.message ?? 'is invalid'}`
  }
  return new Error(message)
}

export async function buildApp (config: Config, options: BuildOptions): Promise<App> {
  const { server } = config
  const fastifyOptions: FastifyServerOptions & Record<string, unknown> = {
    bodyLimit: server.bodyLimit,
    trustProxy: server.trustProxy as FastifyServerOptions['trustProxy'],
    // Slow clients (slowloris, 1 byte/s bodies) are cut off; Node checks every connectionsCheckingInterval.
    requestTimeout: server.requestTimeoutMs,
    keepAliveTimeout: server.keepAliveTimeoutMs,
    connectionTimeout: server.requestTimeoutMs + server.headersTimeoutMs,
    http: { headersTimeout: server.headersTimeoutMs, connectionsCheckingInterval: 1000 },
    // While closing, answer with Connection: close so keep-alive clients do not hold shutdown (DESIGN §10).
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    pluginTimeout: Math.max(10000, config.database.connectTimeoutMs * 2),
    schemaErrorFormatter: describeValidation,
    // One line per request, written when it ends (see the onResponse hook), instead of two.
    logController: new LogController({ disableRequestLogging: true }),
    ajv: { customOptions: { strict: false } }
  }
  if (server.tls) {
    fastifyOptions.https = { cert: readFileSync(server.tls.cert), key: readFileSync(server.tls.key) }
  }
  if (options.logger && typeof (options.logger as { info?: unknown }).info === 'function') {
    fastifyOptions.loggerInstance = options.logger as FastifyServerOptions['loggerInstance']
  } else {
    fastifyOptions.logger = (options.logger as FastifyServerOptions['logger']) ?? loggerOptions(config.logging.level) as FastifyServerOptions['logger']
  }

  const app = Fastify(fastifyOptions).withTypeProvider<TypeBoxTypeProvider>()
  app.setValidatorCompiler(validatorCompiler())

  app.addHook('onResponse', async (request, reply) => {
    request.log.info({
      method: request.method,
      url: request.url,
      route: request.routeOptions.url,
      statusCode: reply.statusCode,
      responseTimeMs: Math.round(reply.elapsedTime * 10) / 10,
      user: request.identity?.id
    }, 'request')
  })

  const mappings = mappingsOf(config)

  await app.register(errorHandler)
  await app.register(sensible)
  await app.register(rateLimit, { global: false })
  await app.register(underPressure, {
    maxEventLoopDelay: server.maxEventLoopDelayMs,
    maxHeapUsedBytes: server.maxHeapUsedRatio > 0 ? Math.floor(getHeapStatistics().heap_size_limit * server.maxHeapUsedRatio) : 0,
    retryAfter: 10,
    exposeStatusRoute: false
  })
  await app.register(openapi)
  await app.register(databasePlugin, { db: options.db, mappings, recheckMs: config.database.recheckMs })
  await app.register(authPlugin, { ...config.auth, keys: signingKeys(config) })
  await app.register(hardwarePlugin, { ...config.hardware, ...options.hardware })

  await app.register(healthRoutes)
  await app.register(async function api (scope) {
    scope.addHook('onRequest', scope.authenticate)
    await scope.register(userRoutes, {
      prefix: '/users',
      licenceLogins: config.licence.logins,
      loginAttemptsPerAddress: config.auth.loginThrottle.maxAttemptsPerAddress,
      loginAddressWindowMs: config.auth.loginThrottle.addressWindowMs
    })
    await scope.register(materialRoutes, { prefix: '/materials' })
    await scope.register(stationRoutes, { prefix: '/stations' })
    await scope.register(stationCommandRoutes, { prefix: '/stations' })
    await scope.register(eventRoutes, { prefix: '/events', ...config.events })
  }, { prefix: '/api' })

  return app as unknown as App
}
