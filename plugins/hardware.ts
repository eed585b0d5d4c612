// Live station state from the picking controllers. Until controller links exist, everything is honestly offline.
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../schemas/config.js'

export type StationStatus = 'offline' | 'idle' | 'busy' | 'error' | 'disabled'

export interface LiveState {
  connected: boolean
  status: StationStatus
  lastSeenAt: string | null
}

export interface ControllerState {
  id: string
  connected: boolean
  lastSeenAt: string | null
}

export interface Hardware {
  /** the live fields of a station, from its controller's link */
  stationState (station: { enabled?: unknown, controllerId?: unknown, address?: unknown }): LiveState
  controllerStates (): ControllerState[]
}

export type HardwarePluginOptions = Config['hardware']

declare module 'fastify' {
  interface FastifyInstance {
    hardware: Hardware
  }
}

async function hardware (fastify: FastifyInstance, opts: HardwarePluginOptions): Promise<void> {
  const controllers = opts.controllers ?? []
  fastify.decorate('hardware', {
    stationState (station) {
      if (station.enabled === false) return { connected: false, status: 'disabled', lastSeenAt: null }
      return { connected: false, status: 'offline', lastSeenAt: null }
    },
    controllerStates () {
      return controllers.map((c) => ({ id: c.id, connected: false, lastSeenAt: null }))
    }
  } satisfies Hardware)
}

export default fp(hardware, { name: 'hardware', fastify: '5.x' })
