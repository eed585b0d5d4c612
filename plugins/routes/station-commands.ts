// POST /api/stations/:id/commands: light a position, clear it, call a tray, or ask for the controller's status.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { CommandAck, StationCommand } from '../../schemas/events.js'
import { AmbiguousIdError, NotFoundError } from '../../src/db/errors.js'
import { badRequest } from '../../src/errors.js'
import { pathIds } from './resource.js'


const stationCommands: FastifyPluginAsyncTypebox = async (fastify) => {
  // a station table keyed by its code has text ids (ResourceStorage.idType)
  const { params, idOf } = pathIds(fastify.repos.stations, (id) => new NotFoundError(`Station ${id} not found`))
  fastify.post('/:id/commands', {
    schema: {
      summary: 'Send a command to the station\'s controller and wait for its acknowledgement',
      description: '200 once the controller ACKs; 502 on a NAK (controllerCode), 503 when the controller is offline or its queue is full, ' +
        '504 when no ACK came (the frame was sent twice), 409 for a disabled or unwired station, one that shares its controller address with another (STATION_ADDRESS_SHARED), a controller not configured ' +
        'on this gateway (CONTROLLER_NOT_CONFIGURED) or hardware.enabled false (HARDWARE_DISABLED).',
      operationId: 'sendStationCommand',
      tags: ['stations'],
      params,
      body: StationCommand,
      response: { 200: CommandAck, ...errorResponses(400, 401, 403, 404, 409, 502, 503, 504) }
    }
  }, async (request, reply) => {
    const { body } = request
    if (body.command === 'callTray' && body.tray === undefined) throw badRequest("body/tray is required for command 'callTray'", 'VALIDATION_ERROR')
    const extra = Object.keys(body).filter((key) => key !== 'command' && !ALLOWED[body.command].includes(key))
    if (extra.length > 0) throw badRequest(`body/${extra[0]} does not apply to command '${body.command}'`, 'VALIDATION_ERROR')
    const id = idOf(request)
    const station = await fastify.repos.stations.get(id).catch((err: unknown) => {
      // several rows hold the id: said as the other refusals of a command say it, not as a read's 409
      throw err instanceof AmbiguousIdError ? err.instead('the command was not sent to its controller') : err
    })
    if (!station) throw new NotFoundError(`Station ${id} not found`)
    // the client closed the connection before its answer (its own timeout): a command still queued is not sent
    const gone = new AbortController()
    const onClose = (): void => { if (!reply.raw.writableEnded) gone.abort() }
    reply.raw.once('close', onClose)
    if (request.raw.socket?.destroyed === true) gone.abort()
    const ack = await fastify.hardware.command(station, body, gone.signal).finally(() => reply.raw.off('close', onClose))
    request.log.info({ stationId: station.id, command: body.command, seq: ack.seq, ref: body.ref }, 'station command acknowledged')
    return ack
  })
}

const ALLOWED: Record<StationCommand['command'], string[]> = {
  light: ['quantity', 'text', 'ref'],
  clear: [],
  callTray: ['tray', 'ref'],
  status: []
}

export default stationCommands
