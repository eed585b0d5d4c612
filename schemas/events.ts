import { Type, type Static } from '@sinclair/typebox'

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

export const EventsQuery = Type.Object({
  station: Type.Optional(Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER, description: 'only events of this station id' })),
  ticket: Type.Optional(Type.String({ maxLength: 128, description: 'a stream ticket from POST /api/events/ticket, for clients that cannot send an Authorization header (EventSource)' })),
  lastEventId: Type.Optional(Type.Integer({ minimum: 0, description: 'as the Last-Event-ID header, for EventSource polyfills that cannot send it' }))
}, { additionalProperties: false })
export type EventsQuery = Static<typeof EventsQuery>

export const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(Type.Integer({ minimum: 0, description: 'the last event id received: the held events after it are sent first' }))
})

export const EventTicket = Type.Object({
  ticket: Type.String({ description: 'opens one event stream as `GET /api/events?ticket=…`' }),
  expiresIn: Type.Integer({ description: 'seconds the ticket stays valid' })
})
export type EventTicket = Static<typeof EventTicket>
