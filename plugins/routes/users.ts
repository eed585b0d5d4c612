// /api/users: login, token refresh, application tokens, and user management.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type TObject } from '@sinclair/typebox'
import { errorResponses, ListEnvelope, ListQuery } from '../../schemas/common.js'
import {
  ApplicationTokenResponse, LoginBody, LoginResponse, RefreshResponse, User, UserCreate, UserUpdate
} from '../../schemas/users.js'
import { resourceSchemas } from '../../src/column-schemas.js'
import { NotFoundError } from '../../src/db/errors.js'
import { forbidden } from '../../src/errors.js'
import { ifMatchCheck, sendItem, sendList, sendOne } from '../../src/http.js'
import { toUser, userFilters, UserService } from '../../src/users.js'
import { pathIds } from './resource.js'

export interface UserRoutesOptions {
  licenceLogins: number
  loginAttemptsPerAddress: number
  loginAddressWindowMs: number
}

const NO_STORE = 'no-store'

const users: FastifyPluginAsyncTypebox<UserRoutesOptions> = async (fastify, opts) => {
  const service = new UserService({
    repo: fastify.repos.users,
    passwords: fastify.auth.passwords,
    licenceLogins: opts.licenceLogins,
    onChange: (id) => fastify.auth.forget(id)
  })
  const admin = fastify.requireType('admin')
  // as the user table's columns are: NULL times as null, a type code no map knows as stored, the columns' limits
  const schemas = resourceSchemas(fastify.repos.users.storage, User, UserCreate, UserUpdate)
  const item = schemas.item as TObject
  // a user table keyed by the login name has text ids (ResourceStorage.idType)
  const { params, idOf } = pathIds(fastify.repos.users, (id) => new NotFoundError(`User ${id} not found`))

  fastify.post('/login', {
    config: {
      auth: 'none',
      // @fastify/rate-limit counts an IPv6 client by its /64 by itself, as the failure count does (addressKey).
      // Counted once the body has passed (preHandler, not onRequest): a request refused for its body (a form post's
      // 415, a 400 without a password) checks no password, and a client stuck on a wrong Content-Type locked its own
      // address out for the window; every attempt that reaches the password check still counts.
      rateLimit: { max: opts.loginAttemptsPerAddress, timeWindow: opts.loginAddressWindowMs, hook: 'preHandler' }
    },
    schema: {
      summary: 'Log in with username and password',
      operationId: 'login',
      tags: ['auth'],
      security: [],
      body: LoginBody,
      response: { 200: LoginResponse, ...errorResponses(400, 401, 409, 429, 503) }
    }
  }, async (request, reply) => {
    const tokens = await fastify.auth.login(request.body.username, request.body.password, request.ip)
    reply.header('cache-control', NO_STORE)
    return { login: true as const, ...tokens }
  })

  const refreshSchema = {
    summary: 'Get a new access token with the refresh token as Bearer credential',
    tags: ['auth'],
    response: { 200: RefreshResponse, ...errorResponses(401, 503) }
  }
  // operationIds for generated clients, as the materials' are: refreshToken (refreshTokenByGet), createApplicationToken,
  // listUsers, createUser, getUser, updateUser (patchUser), deleteUser
  const byGet = (method: 'GET' | 'POST', name: string): string => method === 'GET' ? `${name}ByGet` : name
  for (const method of ['GET', 'POST'] as const) {
    fastify.route({
      method,
      url: '/refresh',
      config: { auth: 'refresh' },
      schema: { ...refreshSchema, operationId: byGet(method, 'refreshToken') },
      handler: async (request, reply) => {
        reply.header('cache-control', NO_STORE)
        return { accessToken: fastify.auth.issue(request.identity!, 'access'), expiresIn: fastify.auth.accessTokenTtlSeconds }
      }
    })
    fastify.route({
      method,
      url: '/application-token',
      config: { auth: 'refresh' },
      schema: {
        summary: 'Exchange the refresh token of an application user for a non-expiring access token',
        operationId: byGet(method, 'createApplicationToken'),
        tags: ['auth'],
        response: { 200: ApplicationTokenResponse, ...errorResponses(401, 403, 503) }
      },
      handler: async (request, reply) => {
        if (request.identity!.type !== 'application') throw forbidden('Only users of type application may create an application token')
        reply.header('cache-control', NO_STORE)
        return { token: fastify.auth.issue(request.identity!, 'application') }
      }
    })
  }

  fastify.get('/', {
    preHandler: admin,
    schema: {
      summary: 'List users (admin)',
      operationId: 'listUsers',
      tags: ['users'],
      querystring: ListQuery,
      queryFilters: { ...schemas.filters, source: { type: 'string', enum: ['sso', 'local'], description: 'Only the users a single sign-on created (sso), or the others (local)' } },
      response: { 200: ListEnvelope(item), 304: Type.Null(), ...errorResponses(400, 401, 403, 503) }
    }
  }, async (request, reply) => sendList(request, reply, fastify.repos.users, toUser, { derived: userFilters }))

  fastify.post('/', {
    preHandler: admin,
    schema: {
      summary: 'Create a user (admin)',
      operationId: 'createUser',
      tags: ['users'],
      body: schemas.create as typeof UserCreate,
      response: { 201: item, ...errorResponses(400, 401, 403, 409, 503) }
    }
  }, async (request, reply) => {
    const user = await service.create(request.body)
    return sendItem(reply.code(201).header('location', `/api/users/${encodeURIComponent(String(user.id))}`), user)
  })

  fastify.get('/:id', {
    schema: {
      summary: 'Read a user (admin, or your own record)',
      operationId: 'getUser',
      tags: ['users'],
      params,
      response: { 200: item, 304: Type.Null(), ...errorResponses(401, 403, 404, 409, 503) }
    }
  }, async (request, reply) => {
    const id = idOf(request)
    const row = await service.read(id, request.identity!)
    if (!row) throw new NotFoundError(`User ${id} not found`)
    return sendOne(request, reply, toUser(row))
  })

  for (const method of ['POST', 'PATCH'] as const) {
    fastify.route({
      method,
      url: '/:id',
      schema: {
        summary: 'Update a user: admins any field of others; a user its own password',
        operationId: method === 'POST' ? 'updateUser' : 'patchUser',
        tags: ['users'],
        params,
        body: schemas.update as typeof UserUpdate,
        response: { 200: item, ...errorResponses(400, 401, 403, 404, 409, 412, 503) }
      },
      handler: async (request, reply) => {
        const user = await service.update(idOf(request), request.body as UserUpdate, request.identity!, ifMatchCheck(request, toUser))
        return sendItem(reply, user)
      }
    })
  }

  fastify.delete('/:id', {
    preHandler: admin,
    schema: {
      summary: 'Delete a user (admin); revokes all its tokens',
      operationId: 'deleteUser',
      tags: ['users'],
      params,
      response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409, 412, 503) }
    }
  }, async (request, reply) => {
    await service.delete(idOf(request), request.identity!, ifMatchCheck(request, toUser))
    return reply.code(204).send(null)
  })
}

export default users
