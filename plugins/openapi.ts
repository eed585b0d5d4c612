// OpenAPI document at /api/openapi.json, generated from the route schemas, and a docs page at /api/docs. Both public.
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { packageRoot } from '../src/config.js'

const version = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version

async function openapi (fastify: FastifyInstance): Promise<void> {
  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'picking-gateway',
        version,
        description: 'REST gateway over a warehouse picking system: materials, stations, users, controller commands and events.'
      },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } }
      },
      security: [{ bearer: [] }]
    },
    hideUntagged: false
  })
  await fastify.register(swaggerUi, { routePrefix: '/api/docs', staticCSP: true })
  fastify.get('/api/openapi.json', { schema: { hide: true } }, async () => fastify.swagger())
}

export default fp(openapi, { name: 'openapi', fastify: '5.x' })
