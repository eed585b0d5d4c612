// What the tedious driver makes of a parameter without a server: its own validation and encoding, which throw where a value does not fit the declared type.
import { TYPES } from 'tedious'
import { mssqlType, mssqlValue } from '../../src/db/mssql.js'
import type { Param } from '../../src/db/types.js'

/**
 * The bytes tedious writes for `p`, validated and encoded as a request would (varchar in code page 1252,
 * times in UTC as the driver's default useUTC has them); throws what tedious throws.
 */
export function driverBytes (p: Param): Buffer {
  const declared = mssqlType(p) as { type: { name: string }, length?: number, precision?: number, scale?: number }
  const type = (TYPES as Record<string, (typeof TYPES)[keyof typeof TYPES]>)[declared.type.name]
  if (type === undefined) throw new Error(`no tedious type ${declared.type.name}`)
  const value: unknown = type.validate(mssqlValue(p), { codepage: 'CP1252' } as never, { useUTC: true } as never)
  return Buffer.concat([...type.generateParameterData({ value, length: declared.length, precision: declared.precision, scale: declared.scale }, { useUTC: true } as never)])
}

/** driverBytes for a parameter that only has to pass. */
export function driverWrites (p: Param): void {
  driverBytes(p)
}
