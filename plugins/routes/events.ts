// GET /api/events: Server-Sent Events of what the controllers report, optionally for one station.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ErrorResponse } from '../../schemas/common.js'
import { EventsQuery } from '../../schemas/events.js'
import type { StationEvent } from '../hardware.js'

export interface EventRoutesOptions {
  heartbeatMs: number
  maxBufferedBytes: number
}

const events: FastifyPluginAsyncTypebox<EventRoutesOptions> = async (fastify, opts) => {
  const open = new Set<() => void>()
  // app.close() waits for open connections: end the streams first.
  fastify.addHook('preClose', async () => { for (const end of [...open]) end() })

  fastify.get('/', {
    schema: {
      summary: 'Stream station events (text/event-stream)',
      description: 'Events: station.connected, station.disconnected, pick.confirmed, pick.shortage, tray.ready, station.fault. ' +
        'Each is `event: <type>`, `id: <n>` and one `data:` line of JSON ({stationId, controllerId, address, quantity?, tray?, ref?, code?, message?, at}). ' +
        'Comment lines (`: heartbeat`) keep idle proxies open.',
      tags: ['events'],
      querystring: EventsQuery,
      produces: ['text/event-stream'],
      response: { 200: Type.String({ description: 'an endless text/event-stream' }), 400: ErrorResponse, 401: ErrorResponse }
    }
  }, async (request, reply) => {
    const station = request.query.station
    const raw = reply.raw
    reply.hijack()
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no'
    })
    raw.write(': connected\n\n')

    const send = (chunk: string): void => {
      // A client that stopped reading is dropped rather than buffered without bound.
      if (raw.writableLength > opts.maxBufferedBytes) {
        request.log.warn({ buffered: raw.writableLength }, 'event stream client too slow; disconnecting')
        end()
        return
      }
      raw.write(chunk)
    }
    const unsubscribe = fastify.hardware.subscribe((event: StationEvent) => {
      if (station !== undefined && event.data.stationId !== station) return
      send(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`)
    })
    const heartbeat = setInterval(() => send(': heartbeat\n\n'), opts.heartbeatMs)
    heartbeat.unref()
    let ended = false
    function end (): void {
      if (ended) return
      ended = true
      clearInterval(heartbeat)
      unsubscribe()
      open.delete(end)
      if (!raw.destroyed) raw.end()
      raw.destroy()
    }
    open.add(end)
    request.raw.on('close', end)
    raw.on('error', end)
    raw.on('close', end)
    return reply
  })
}

export default events
