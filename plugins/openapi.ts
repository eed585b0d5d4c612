// OpenAPI document at /api/openapi.json, generated from the route schemas, and a docs page at /api/docs. Both public.
import swagger, { type SwaggerTransform } from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifySchema } from 'fastify'
import fp from 'fastify-plugin'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { packageRoot } from '../src/config.js'
import { DEFAULT_LIMIT, MAX_LIMIT } from '../src/db/list-query.js'

const version = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version

declare module 'fastify' {
  interface FastifySchema {
    /** For the document only: a list's filter parameters by field name (the list parser checks them at run time). */
    queryFilters?: Record<string, unknown>
  }
}

type Json = Record<string, any>

/**
 * The list query's control parameters are text at run time, so that the list parser names a bad
 * value in its own words; the document gives their real types, so generated clients send numbers.
 */
const LIST_CONTROLS: Record<string, Json> = {
  limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
  offset: { type: 'integer', minimum: 0 },
  count: { type: 'boolean' }
}

/** A list's query as documented: control parameters typed, filters listed instead of "any other parameter". */
function documentedQuery (querystring: Json | undefined, filters: Record<string, unknown> | undefined): Json | undefined {
  const properties = querystring?.properties as Record<string, Json> | undefined
  if (querystring === undefined || properties === undefined || !Object.keys(LIST_CONTROLS).every((name) => name in properties)) return querystring
  const documented: Record<string, unknown> = { ...properties }
  for (const [name, schema] of Object.entries(LIST_CONTROLS)) documented[name] = { ...schema, description: properties[name].description }
  for (const [name, schema] of Object.entries(filters ?? {})) if (!(name in documented)) documented[name] = schema
  const { additionalProperties: _, ...rest } = querystring
  return { ...rest, properties: documented }
}

const word = (text: string): string => text.split('-').map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('')

/** `getUsersById` for GET /api/users/:id: routes that name no operationId still get a stable, unique one. */
function operationIdOf (method: string, url: string): string {
  const words = url.split('/').filter((part) => part !== '' && part !== 'api')
    .map((part) => part.startsWith(':') ? `By${word(part.slice(1))}` : word(part))
  return method.toLowerCase() + words.join('')
}

/**
 * Per route: no trailing slash (a resource's `/` under its prefix answers with and without one),
 * an operationId, the security the route really has, and the list query as documented.
 */
const transform: SwaggerTransform = ({ schema, url, route }) => {
  const path = url.length > 1 && url.endsWith('/') ? url.slice(0, -1) : url
  const method = typeof route.method === 'string' ? route.method : route.method[0]
  const open = !path.startsWith('/api/') || route.config?.auth === 'none'
  // Refresh and application-token start from the gateway's own login: an identity provider's token is never taken there.
  const secured: Array<Record<string, string[]>> = route.config?.auth === 'refresh' ? [{ bearer: [] }] : [{ bearer: [] }, { identityProvider: [] }]
  const { queryFilters, ...rest } = schema ?? {} as FastifySchema
  return {
    url: path,
    schema: {
      ...rest,
      operationId: rest.operationId ?? operationIdOf(method, path),
      security: rest.security ?? (open ? [] : secured),
      ...(rest.querystring !== undefined && { querystring: documentedQuery(rest.querystring as Json, queryFilters) })
    }
  }
}

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
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'the gateway\'s own token: from POST /api/users/login (or a browser login at an identity provider), /api/users/refresh or /api/users/application-token' },
          identityProvider: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'an access token from an OpenID Connect provider configured in auth.sso (its iss and aud), for example a client-credentials token of Entra ID or Keycloak; never taken at /api/users/refresh or /api/users/application-token'
          },
          eventTicket: { type: 'apiKey', in: 'query', name: 'ticket', description: 'single-use, from POST /api/events/ticket; only GET /api/events takes it' }
        }
      }
    },
    hideUntagged: false,
    transform
  })
  await fastify.register(swaggerUi, { routePrefix: '/api/docs', staticCSP: true })
  fastify.get('/api/openapi.json', { schema: { hide: true } }, async () => fastify.swagger())
}

export default fp(openapi, { name: 'openapi', fastify: '5.x' })
