// The five endpoints of a plain resource (list, create, read, update by POST or PATCH, delete) over one repository.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type TObject } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastJson from 'fast-json-stringify'
import { errorResponses, IdParams, ListEnvelope, ListQuery, textIdParams } from '../../schemas/common.js'
import type { UserType } from '../../schemas/users.js'
import { InvalidValueError, NotFoundError } from '../../src/db/errors.js'
import type { Filter } from '../../src/db/list-query.js'
import { idField, isPathId } from '../../src/db/resources.js'
import type { Id, Repository } from '../../src/db/repository.js'
import type { Executor, Row, SqlValue, Write } from '../../src/db/types.js'
import { resourceSchemas } from '../../src/column-schemas.js'
import { ApiError } from '../../src/errors.js'
import { ifMatchCheck, ListPageCache, sendItem, sendList, sendOne, type ListBody, type SendListOptions, type Serialize } from '../../src/http.js'

/** How a 405 names a write a view does not take. */
const VIEW_WRITE: Record<Write, string> = { insert: 'a create', update: 'an update', delete: 'a delete' }

export interface ResourceRoutesOptions {
  /** singular noun for messages and summaries */
  noun: string
  tag: string
  repo: (fastify: FastifyInstance) => Repository
  item: TObject
  create: TObject
  update: TObject
  toPublic: (fastify: FastifyInstance) => (row: Row) => Record<string, unknown>
  /** user types allowed to create, update and delete (everyone authenticated may read) */
  writers: UserType[]
  /** the public rows carry only stored fields (no live hardware state): lists may answer 304 from a cache */
  storedOnly?: boolean
  /**
   * Fields that together name one thing when all are set (a station's controller and address), kept
   * unique by the gateway inside the write's transaction: a picking system's table may have no index for it.
   */
  uniqueTogether?: string[]
  /** [low, high] pairs of number fields: when both are set, low may not be above high (minStock, maxStock) */
  ordered?: Array<[string, string]>
  /** the query parameters of filters on fields no column holds (stations' live fields), for the OpenAPI document */
  filters?: Record<string, unknown>
  /** after a delete through the API, with the row as it was (stations: the event streams filtered to it end) */
  deleted?: (fastify: FastifyInstance, row: Row) => void
  /** answers GET / instead of the plain list (stations: filters and sorts on live fields) */
  list?: (fastify: FastifyInstance, repo: Repository, toPublic: (row: Row) => Record<string, unknown>) => ListHandler
}

export type ListHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<ListBody<Record<string, unknown>> | FastifyReply>


/**
 * The `:id` of a resource's paths as its table keys it (ResourceStorage.idType): the params schema
 * checks the path (decimal digits, or text a URL can name), and idOf gives the id to look up.
 */
export function pathIds (repo: Repository, notFound: (id: Id) => Error): { params: TObject, idOf: (request: FastifyRequest) => Id } {
  const idName = idField(repo.def)
  const info = repo.storage.field(idName).info
  const params = repo.storage.idType !== 'integer' ? textIdParams(info?.maxLength !== undefined && info.maxLength > 0 ? info.maxLength : undefined, repo.storage.sharedKey) : IdParams
  const idOf = (request: FastifyRequest): Id => idFromText(repo, (request.params as { id: Id }).id, notFound)
  return { params, idOf }
}

/**
 * An id as a path or query gives it, as the table keys its rows now (the database may have been down
 * when the routes were made): text where the id column holds text, else a number; text that is no such
 * number names no row (`notFound`).
 */
export function idFromText (repo: Repository, id: Id, notFound: (id: Id) => Error): Id {
  if (typeof id !== 'string' || repo.def.fields[idField(repo.def)].kind === 'string') return id
  if (!isPathId(id)) throw notFound(id)
  return Number(id)
}

export function resourceRoutes (opts: ResourceRoutesOptions): FastifyPluginAsyncTypebox {
  return async function (fastify) {
    const repo = opts.repo(fastify)
    const toPublic = opts.toPublic(fastify)
    // the schemas as this installation's columns are (limits, nullability, stored codes)
    const schemas = resourceSchemas(repo.storage, opts.item, opts.create, opts.update)
    const item = schemas.item as TObject
    const create = schemas.create as TObject
    const update = schemas.update as TObject
    const writers = fastify.requireType(...opts.writers)
    const who = opts.writers.length === 3 ? '' : ` (${opts.writers.join(', ')})`
    const listOptions: SendListOptions = opts.storedOnly === true ? { stored: { cache: new ListPageCache(), mark: () => fastify.db.changeMark() } } : {}
    // Items of stored fields only are serialized once, by the item schema's compiled serializer: their ETag is the hash of the text sent.
    const serialize: Serialize | undefined = opts.storedOnly === true ? fastJson(item) : undefined
    const list: ListHandler = opts.list?.(fastify, repo, toPublic) ?? (async (request, reply) => await sendList(request, reply, repo, toPublic, listOptions))
    const notFound = (id: Id) => new NotFoundError(`${opts.noun[0].toUpperCase()}${opts.noun.slice(1)} ${id} not found`)
    const named = (id: Id) => (err: unknown) => { throw err instanceof NotFoundError ? notFound(id) : err }
    const idName = idField(repo.def)
    const { params, idOf } = pathIds(repo, notFound)
    // operationIds for generated clients: listMaterials, createMaterial, getMaterial, updateMaterial (patchMaterial), deleteMaterial
    const Noun = `${opts.noun[0].toUpperCase()}${opts.noun.slice(1)}`
    // where a created row is read: this plugin's prefix (/api/materials), whichever of its forms the create was sent to
    const created = `${fastify.prefix}/`
    const operationId = { GET: `get${Noun}`, POST: `update${Noun}`, PATCH: `patch${Noun}`, DELETE: `delete${Noun}` }
    const together = opts.uniqueTogether ?? []
    /** 409 when another row holds the same values of uniqueTogether (counted with a lock: two writes cannot both pass) */
    const assertUnique = async (tx: Executor, row: Row, id?: Id): Promise<void> => {
      if (together.length === 0 || together.some((field) => row[field] === null || row[field] === undefined)) return
      const filters: Filter[] = together.map((field) => ({ field, op: 'eq', values: [row[field] as SqlValue] }))
      if (id !== undefined) filters.push({ field: idName, op: 'not', values: [id] })
      if (await repo.count(filters, { tx, lock: true }) > 0) {
        // which one, so that the client can look at it: read in the transaction that holds the count's locks
        const holder = await repo.findFirst(filters, tx)
        const name = holder === undefined ? undefined : holder.name
        const who = holder === undefined
          ? `Another ${opts.noun}`
          : `${Noun} ${String(holder[idName])}${typeof name === 'string' && String(name) !== String(holder[idName]) ? ` (${JSON.stringify(name)})` : ''}`
        // an ApiError, not the driver's ConflictError, which the repository would explain as a unique column's
        throw new ApiError(409, 'CONFLICT', `${who} already has ${together.map((field) => `${field} ${JSON.stringify(row[field])}`).join(' and ')}; nothing was written`)
      }
    }

    const ordered = opts.ordered ?? []
    /**
     * 400 when a write would leave an ordered pair out of order. Only pairs the write sets a half of
     * are checked: a row the picking system already holds out of order stays editable otherwise.
     */
    const assertOrdered = (next: Row, sent: Row): void => {
      for (const [low, high] of ordered) {
        if (!Object.hasOwn(sent, low) && !Object.hasOwn(sent, high)) continue
        const a = next[low]
        const b = next[high]
        if (typeof a !== 'number' || typeof b !== 'number' || a <= b) continue
        const kept = Object.hasOwn(sent, low) ? (Object.hasOwn(sent, high) ? undefined : high) : low
        const show = (field: string, value: number): string => `'${field}' (${value}${field === kept ? `, the ${opts.noun}'s current value` : ''})`
        throw new InvalidValueError(`${show(low, a)} may not be above ${show(high, b)}; nothing was written`)
      }
    }
    const sets = (body: Row, fields: string[]): boolean => fields.some((field) => Object.hasOwn(body, field))

    fastify.get('/', {
      schema: {
        operationId: `list${opts.tag[0].toUpperCase()}${opts.tag.slice(1)}`,
        summary: `List ${opts.tag}`,
        tags: [opts.tag],
        querystring: ListQuery,
        queryFilters: { ...schemas.filters, ...opts.filters },
        response: { 200: ListEnvelope(item), 304: Type.Null(), ...errorResponses(400, 401, 403, 503) }
      }
    }, async (request, reply) => await list(request, reply))

    fastify.get('/:id', {
      schema: {
        operationId: operationId.GET,
        summary: `Read a ${opts.noun}`,
        tags: [opts.tag],
        params,
        response: { 200: item, 304: Type.Null(), ...errorResponses(401, 403, 404, 409, 503) }
      }
    }, async (request, reply) => {
      const id = idOf(request)
      const row = await repo.get(id)
      if (!row) throw notFound(id)
      return sendOne(request, reply, toPublic(row), serialize)
    })

    if (repo.readOnly) {
      // a view, or a table the picking system owns alone: say so, and which methods work
      const refusal = (): ApiError => new ApiError(405, 'METHOD_NOT_ALLOWED', `${opts.tag[0].toUpperCase()}${opts.tag.slice(1)} are read-only in this installation`, { headers: { allow: 'GET, HEAD' } })
      // refused before the body or the query is read, and without a token as with one (there is nothing
      // to protect): the method is what is wrong, not a form post's content type, a stray parameter or
      // a missing token (the 405 a fixed path's wrong method gets too)
      const onRequest = (_request: FastifyRequest, _reply: unknown, done: (err?: Error) => void): void => done(refusal())
      const refuse = async (): Promise<never> => { throw refusal() }
      const readOnly = { summary: `Not available: ${opts.tag} are read-only in this installation`, tags: [opts.tag], response: errorResponses(405) }
      // config.refuses: the 405 of a method no route has (PUT) says Allow: GET, HEAD too
      const config = { refuses: true as const, auth: 'none' as const }
      fastify.post('/', { schema: { ...readOnly, operationId: `create${Noun}` }, config, onRequest }, refuse)
      for (const method of ['POST', 'PATCH', 'DELETE'] as const) fastify.route({ method, url: '/:id', schema: { ...readOnly, operationId: operationId[method] }, config, onRequest, handler: refuse })
      return
    }

    // A SQLite view takes only the writes its INSTEAD OF triggers do (ResourceStorage.writes, known once
    // its columns are read, which may be after the routes are made): any other is refused before its
    // body is looked at, with the methods the path does take (RFC 9110: a 405 has Allow). A table known
    // as such gets no hook: nothing on its writes' path.
    // and the document lists that 405 on the writes of what is not known to be a table
    const viewRefusal = repo.storage.isTable ? {} : errorResponses(405)
    const viewTakes = (op: Write) => repo.storage.isTable ? [] : (_request: FastifyRequest, _reply: unknown, done: (err?: Error) => void): void => {
      const { writes } = repo.storage
      if (writes.includes(op)) return done()
      // the collection takes creates; an item updates (PATCH, POST) and deletes
      const path: Array<[Write, string[]]> = op === 'insert' ? [['insert', ['POST']]] : [['update', ['PATCH', 'POST']], ['delete', ['DELETE']]]
      const allow = ['GET', 'HEAD', ...path.flatMap(([write, methods]) => writes.includes(write) ? methods : [])].sort()
      done(new ApiError(405, 'METHOD_NOT_ALLOWED', `'${repo.storage.mapping.table}' is a view whose INSTEAD OF triggers do not take ${VIEW_WRITE[op]}; the picking system's database has to give it one`, { headers: { allow: allow.join(', ') } }))
    }

    fastify.post('/', {
      preValidation: viewTakes('insert'),
      preHandler: writers,
      schema: {
        operationId: `create${Noun}`,
        summary: `Create a ${opts.noun}${who}`,
        tags: [opts.tag],
        body: create,
        response: { 201: item, ...errorResponses(400, 401, 403, 409, 503), ...viewRefusal }
      }
    }, async (request, reply) => {
      const body = request.body as Row
      assertOrdered(body, body)
      const guard = together.length > 0 ? async (tx: Executor) => { await assertUnique(tx, body) } : undefined
      const row = await repo.create(body, { guard })
      // with the ETag a read of it gives, as an update's answer has: an If-Match needs no read first
      return sendItem(reply.code(201).header('location', created + encodeURIComponent(String(row.id))), toPublic(row), serialize)
    })

    for (const method of ['POST', 'PATCH'] as const) {
      fastify.route({
        method,
        url: '/:id',
        preValidation: viewTakes('update'),
        preHandler: writers,
        schema: {
          operationId: operationId[method],
          summary: `Update a ${opts.noun}: only the fields sent change${who}`,
          tags: [opts.tag],
          params,
          body: update,
          response: { 200: item, ...errorResponses(400, 401, 403, 404, 409, 412, 503), ...viewRefusal }
        },
        handler: async (request, reply) => {
          const id = idOf(request)
          const body = request.body as Row
          // only a write that sets one of them is checked: rows a picking system already holds twice stay editable otherwise
          const guard = sets(body, together) || ordered.some((pair) => sets(body, pair))
            ? async (current: Row, tx: Executor) => {
              const next = Object.assign({}, current, body)
              // against the locked row: the other half of a pair may have changed since the client read it
              assertOrdered(next, body)
              // sent unchanged (a form sends every field): nothing new is claimed
              if (together.some((field) => next[field] !== current[field])) await assertUnique(tx, next, id)
            }
            : undefined
          const row = await repo.update(id, body, { check: ifMatchCheck(request, toPublic, serialize), guard })
            .catch(named(id))
          return sendItem(reply, toPublic(row), serialize)
        }
      })
    }

    fastify.delete('/:id', {
      preValidation: viewTakes('delete'),
      preHandler: writers,
      schema: {
        operationId: operationId.DELETE,
        summary: `Delete a ${opts.noun}${who}`,
        tags: [opts.tag],
        params,
        // 400: a trigger skipped it; 409: other records still reference it
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 409, 412, 503), ...viewRefusal }
      }
    }, async (request, reply) => {
      const id = idOf(request)
      const row = await repo.delete(id, { check: ifMatchCheck(request, toPublic, serialize) }).catch(named(id))
      opts.deleted?.(fastify, row)
      return reply.code(204).send(null)
    })
  }
}
