// /api/stations: picking stations, with live state from the hardware plugin. Written by admins only.
import { Station, StationCreate, StationUpdate } from '../../schemas/stations.js'
import type { Row } from '../../src/db/types.js'
import type { Hardware } from '../hardware.js'
import { resourceRoutes } from './resource.js'

const STORED = Object.keys(Station.properties).filter((field) => !['connected', 'status', 'lastSeenAt'].includes(field))

export const stationView = (hardware: Hardware) => (row: Row): Station => {
  const stored = Object.fromEntries(STORED.map((field) => [field, row[field] ?? null]))
  return { ...stored, ...hardware.stationState(row) } as Station
}

export default resourceRoutes({
  noun: 'station',
  tag: 'stations',
  repo: (fastify) => fastify.repos.stations,
  item: Station,
  create: StationCreate,
  update: StationUpdate,
  defaults: { type: 'manual', enabled: true },
  toPublic: (fastify) => stationView(fastify.hardware),
  writers: ['admin']
})
