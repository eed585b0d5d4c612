// Errors a controller command can fail with; each code maps to one HTTP status (DESIGN §8).

export type HardwareErrorCode = 'NAK' | 'TIMEOUT' | 'OFFLINE' | 'QUEUE_FULL' | 'LINK_DROPPED' | 'INVALID_COMMAND' | 'SHUTTING_DOWN' | 'CANCELLED'

export const HARDWARE_ERROR_STATUS: Readonly<Record<HardwareErrorCode, number>> = {
  NAK: 502,
  TIMEOUT: 504,
  OFFLINE: 503,
  QUEUE_FULL: 503,
  LINK_DROPPED: 503,
  INVALID_COMMAND: 400,
  SHUTTING_DOWN: 503,
  /** its caller gave up while it waited in the queue: never sent (nobody reads the answer) */
  CANCELLED: 503
}

export interface HardwareErrorDetails {
  controllerId?: string
  /** The SEQ the command was sent with, when it was sent. */
  seq?: number
  /** From a NAK's `code=`. */
  controllerCode?: string
  /** From a NAK's `msg=`. */
  controllerMessage?: string
  cause?: unknown
}

export class HardwareError extends Error {
  readonly code: HardwareErrorCode
  readonly statusCode: number
  readonly controllerId: string | undefined
  readonly seq: number | undefined
  readonly controllerCode: string | undefined
  readonly controllerMessage: string | undefined

  constructor (code: HardwareErrorCode, message: string, details: HardwareErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause })
    this.name = 'HardwareError'
    this.code = code
    this.statusCode = HARDWARE_ERROR_STATUS[code]
    this.controllerId = details.controllerId
    this.seq = details.seq
    this.controllerCode = details.controllerCode
    this.controllerMessage = details.controllerMessage
  }
}
