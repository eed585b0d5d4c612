import { Type, type Static } from '@sinclair/typebox'
import { NOT_BLANK, NullableString, Timestamp, VISIBLE_KEY } from './common.js'

export const StationType = Type.Union([Type.Literal('vlm'), Type.Literal('carousel'), Type.Literal('ptl'), Type.Literal('manual')])

const writable = {
  name: Type.String({ minLength: 1, maxLength: 100, description: 'Unique station name' }),
  description: NullableString({ maxLength: 2000 }),
  type: Type.Union(StationType.anyOf, { description: 'Default manual' }),
  warehouse: NullableString({ maxLength: 100 }),
  controllerId: NullableString({ maxLength: 64, description: 'Id of the configured controller that drives this station' }),
  address: Type.Union([Type.Integer({ minimum: 0, maximum: 65535 }), Type.Null()], { description: 'Address on that controller' }),
  enabled: Type.Boolean({ description: 'Default true' })
}

export const Station = Type.Object({
  id: Type.Integer(),
  ...writable,
  connected: Type.Boolean({ description: 'Live, read-only: the controller link is up' }),
  status: Type.Union([Type.Literal('offline'), Type.Literal('idle'), Type.Literal('busy'), Type.Literal('error'), Type.Literal('disabled')], { description: 'Live, read-only' }),
  lastSeenAt: Type.Union([Timestamp, Type.Null()], { description: 'Live, read-only: last frame from the controller' }),
  createdAt: Timestamp,
  modifiedAt: Timestamp
}, { additionalProperties: false })
export type Station = Static<typeof Station>

export const StationCreate = Type.Object({
  name: Type.String({ ...writable.name, pattern: VISIBLE_KEY }),
  description: Type.Optional(writable.description),
  type: Type.Optional(writable.type),
  warehouse: Type.Optional(writable.warehouse),
  controllerId: Type.Optional(NullableString({ maxLength: 64, pattern: NOT_BLANK, description: 'Id of the configured controller that drives this station; null for none' })),
  address: Type.Optional(writable.address),
  enabled: Type.Optional(writable.enabled)
}, { additionalProperties: false })
export type StationCreate = Static<typeof StationCreate>

// the name as a read shows it is taken back (an edit form), even one stored with an invisible character: the repository refuses that only in a new name (VISIBLE_KEY)
export const StationUpdate = Type.Partial(Type.Object({ ...StationCreate.properties, name: Type.String({ ...writable.name, pattern: NOT_BLANK }) }), { additionalProperties: false, minProperties: 1 })
export type StationUpdate = Static<typeof StationUpdate>
