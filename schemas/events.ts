import { Type, type Static, type TObject } from '@sinclair/typebox'
import { MAX_PATH_PARAM_LENGTH } from '../src/db/resources.js'

export const StationCommand = Type.Object({
  command: Type.Union([Type.Literal('light'), Type.Literal('clear'), Type.Literal('callTray'), Type.Literal('status')], {
    description: '`light` a position (quantity, text, ref), `clear` it, `callTray` (tray, ref), or ask the controller for its `status`'
  }),
  quantity: Type.Optional(Type.Integer({ minimum: 0, maximum: 99999, description: 'light: quantity to show (default 1)' })),
  text: Type.Optional(Type.String({ maxLength: 64, description: 'light: text for the display' })),
  ref: Type.Optional(Type.String({ maxLength: 64, description: 'your reference, echoed in pick.confirmed / tray.ready events' })),
  tray: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'callTray: the tray to bring (required)' }))
}, { additionalProperties: false })
export type StationCommand = Static<typeof StationCommand>

export const CommandAck = Type.Object({
  ack: Type.Literal(true),
  seq: Type.Integer({ description: 'SEQ of the REQ frame the controller acknowledged' }),
  state: Type.Optional(Type.String({ description: 'status: the controller state (idle, busy, error)' }))
})

const eventsQueryFields = {
  ticket: Type.Optional(Type.String({ maxLength: 128, description: 'a stream ticket from POST /api/events/ticket, for clients that cannot send an Authorization header (EventSource)' })),
  lastEventId: Type.Optional(Type.Integer({ minimum: 0, description: 'as the Last-Event-ID header, for EventSource polyfills that cannot send it' }))
}

export const EventsQuery = Type.Object({
  station: Type.Optional(Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER, description: 'only events of this station id' })),
  ...eventsQueryFields
}, { additionalProperties: false })

/**
 * The stream's query as the station table keys its rows (ResourceStorage.idType): a station id is a
 * number, or text where the table is keyed by the station's code (or not yet known: the database was
 * down at start, and the handler reads it as the table turns out to be).
 */
export function eventsQuery (idType: 'integer' | 'text' | 'either'): TObject {
  if (idType === 'integer') return EventsQuery
  return Type.Object({
    station: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_PATH_PARAM_LENGTH, description: "only events of this station id (this installation's station table is keyed by text)" })),
    ...eventsQueryFields
  }, { additionalProperties: false })
}
export interface EventsQuery { station?: number | string, ticket?: string, lastEventId?: number }

export const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(Type.Integer({ minimum: 0, description: 'the last event id received: the held events after it are sent first' }))
})

export const EventTicket = Type.Object({
  ticket: Type.String({ description: 'opens one event stream as `GET /api/events?ticket=…`' }),
  expiresIn: Type.Integer({ description: 'seconds the ticket stays valid' })
})
export type EventTicket = Static<typeof EventTicket>
