import { Type, type Static } from '@sinclair/typebox'
import { NOT_BLANK, NullableNumber, NullableString, Timestamp, VISIBLE_KEY } from './common.js'

const writable = {
  materialNumber: Type.String({ minLength: 1, maxLength: 64, description: 'Unique material number' }),
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: NullableString({ maxLength: 2000 }),
  unit: Type.String({ minLength: 1, maxLength: 16, description: 'Default pcs' }),
  barcode: NullableString({ maxLength: 64 }),
  minStock: NullableNumber({ minimum: 0 }),
  maxStock: NullableNumber({ minimum: 0 }),
  weight: NullableNumber({ minimum: 0, description: 'kg per unit' }),
  blocked: Type.Boolean({ description: 'Default false' }),
  blockReason: NullableString({ maxLength: 500 })
}

export const Material = Type.Object({
  id: Type.Integer(),
  ...writable,
  stockQuantity: Type.Union([Type.Number(), Type.Null()], { description: 'Read-only: owned by the picking system' }),
  createdAt: Timestamp,
  modifiedAt: Timestamp
}, { additionalProperties: false })
export type Material = Static<typeof Material>

export const MaterialCreate = Type.Object({
  materialNumber: Type.String({ ...writable.materialNumber, pattern: VISIBLE_KEY }),
  name: Type.String({ ...writable.name, pattern: NOT_BLANK }),
  description: Type.Optional(writable.description),
  unit: Type.Optional(writable.unit),
  barcode: Type.Optional(writable.barcode),
  minStock: Type.Optional(writable.minStock),
  maxStock: Type.Optional(writable.maxStock),
  weight: Type.Optional(writable.weight),
  blocked: Type.Optional(writable.blocked),
  blockReason: Type.Optional(writable.blockReason)
}, { additionalProperties: false })
export type MaterialCreate = Static<typeof MaterialCreate>

// the number as a read shows it is taken back (an ERP sends its master data again), even one the picking
// system stored with an invisible character: the repository refuses that only in a new number (VISIBLE_KEY)
export const MaterialUpdate = Type.Partial(Type.Object({ ...MaterialCreate.properties, materialNumber: Type.String({ ...writable.materialNumber, pattern: NOT_BLANK }) }), { additionalProperties: false, minProperties: 1 })
export type MaterialUpdate = Static<typeof MaterialUpdate>
