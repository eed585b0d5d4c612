// The controller wire protocol (DESIGN §8): STX + `SEQ|KIND|CMD|ARGS` + ETX.

export const STX = 0x02
export const ETX = 0x03
export const MAX_SEQ = 9999
/**
 * 64 KiB: a STATUS answer names every lit position (`addrN=lit:Q;` about 15 bytes each), so a controller
 * with hundreds lit at once sends several KiB (4 KiB, the limit before, held about 270 and reset the
 * connection at every reconnect); the limit is there so that garbage without an ETX cannot grow a buffer.
 */
export const DEFAULT_MAX_FRAME_BYTES = 65536

export const FRAME_KINDS = ['REQ', 'ACK', 'NAK', 'EVT', 'HBT'] as const
export type FrameKind = typeof FRAME_KINDS[number]

/** Decoded arguments: always strings, as they travel on the wire. */
export type FrameArgs = Record<string, string>
/** Arguments accepted for encoding; `null`/`undefined` values are left out. */
export type FrameArgsInput = Record<string, string | number | boolean | null | undefined>

export interface Frame {
  seq: number
  kind: FrameKind
  cmd: string
  args: FrameArgs
  /**
   * set when SEQ, KIND and CMD read but the ARGS do not (a duplicate key, a bad %-escape): why. The
   * frame's bytes count as dropped; the receiver answers a REQ or EVT with a NAK saying so (DESIGN §8:
   * every one is answered), so the sender learns why instead of sending it again unanswered.
   */
  invalid?: string
}

export interface FrameInput {
  seq: number
  kind: FrameKind
  cmd: string
  args?: FrameArgsInput
}

const NAME = /^[A-Za-z0-9_]+$/
const SEQ = /^[0-9]{4}$/
const HEX = '0123456789ABCDEF'

/** CR, LF, space and tab: a controller that ends each frame with CR LF sends them between frames. */
const isBlank = (byte: number): boolean => byte === 0x0d || byte === 0x0a || byte === 0x20 || byte === 0x09

/** The SEQ after `seq`: 0001–9999, wrapping to 0001. */
export function nextSeq (seq: number): number {
  return seq >= MAX_SEQ || seq < 1 ? 1 : seq + 1
}

/** A frame that breaks the protocol; the decoder counts and drops it. */
export class FrameFormatError extends Error {
  /** the frame's SEQ, KIND and CMD when they read and only its ARGS did not */
  header?: { seq: number, kind: FrameKind, cmd: string }
  constructor (message: string) {
    super(message)
    this.name = 'FrameFormatError'
  }
}

/** A frame grew past maxFrameBytes; the connection must be reset. */
export class FrameTooLongError extends Error {
  readonly maxFrameBytes: number
  constructor (maxFrameBytes: number) {
    super(`frame longer than ${maxFrameBytes} bytes`)
    this.name = 'FrameTooLongError'
    this.maxFrameBytes = maxFrameBytes
  }
}

/**
 * Percent-encodes the protocol's separators, `%`, control bytes and, to keep
 * the payload ASCII, every byte of a non-ASCII character (as UTF-8).
 */
export function escapeValue (value: string): string {
  let plain = true
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    if (c < 0x20 || c >= 0x7f || c === 0x7c || c === 0x3b || c === 0x3d || c === 0x25) { plain = false; break }
  }
  if (plain) return value
  let out = ''
  for (const byte of Buffer.from(value, 'utf8')) {
    if (byte < 0x20 || byte >= 0x7f || byte === 0x7c || byte === 0x3b || byte === 0x3d || byte === 0x25) {
      out += '%' + HEX[byte >> 4] + HEX[byte & 15]
    } else {
      out += String.fromCharCode(byte)
    }
  }
  return out
}

/** Reverses escapeValue; accepts lower-case hex too. Throws FrameFormatError on a broken escape. */
export function unescapeValue (value: string): string {
  if (!value.includes('%')) return value
  const bytes: number[] = []
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    if (c !== 0x25) { bytes.push(c); continue }
    const hex = value.slice(i + 1, i + 3)
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) throw new FrameFormatError(`bad escape at ${i}`)
    bytes.push(parseInt(hex, 16))
    i += 2
  }
  const decoded = Buffer.from(bytes)
  const text = decoded.toString('utf8')
  // A lone byte that is not valid UTF-8 would silently become U+FFFD.
  if (!Buffer.from(text, 'utf8').equals(decoded)) throw new FrameFormatError('escaped bytes are not UTF-8')
  return text
}

export function encodeArgs (args: FrameArgsInput = {}): string {
  const pairs: string[] = []
  for (const [key, value] of Object.entries(args)) {
    if (value === undefined || value === null) continue
    if (!NAME.test(key)) throw new TypeError(`invalid argument key ${JSON.stringify(key)}`)
    pairs.push(`${key}=${escapeValue(String(value))}`)
  }
  return pairs.join(';')
}

export function decodeArgs (text: string): FrameArgs {
  if (text === '') return {}
  const entries: Array<[string, string]> = []
  const seen = new Set<string>()
  for (const pair of text.split(';')) {
    const eq = pair.indexOf('=')
    if (eq === -1) throw new FrameFormatError(`argument without "=": ${JSON.stringify(pair)}`)
    const key = pair.slice(0, eq)
    if (!NAME.test(key)) throw new FrameFormatError(`invalid argument key ${JSON.stringify(key)}`)
    if (seen.has(key)) throw new FrameFormatError(`duplicate argument key ${key}`)
    seen.add(key)
    entries.push([key, unescapeValue(pair.slice(eq + 1))])
  }
  // fromEntries defines own properties, so a key such as `__proto__` stays data.
  return Object.fromEntries(entries)
}

/** Builds a frame; throws TypeError/RangeError for what the protocol cannot carry. */
export function encodeFrame (frame: FrameInput, maxFrameBytes = DEFAULT_MAX_FRAME_BYTES): Buffer {
  if (!Number.isInteger(frame.seq) || frame.seq < 1 || frame.seq > MAX_SEQ) throw new RangeError(`invalid SEQ ${frame.seq}`)
  if (!FRAME_KINDS.includes(frame.kind)) throw new TypeError(`invalid KIND ${String(frame.kind)}`)
  if (!NAME.test(frame.cmd)) throw new TypeError(`invalid CMD ${JSON.stringify(frame.cmd)}`)
  const payload = `${String(frame.seq).padStart(4, '0')}|${frame.kind}|${frame.cmd}|${encodeArgs(frame.args)}`
  // escapeValue leaves only printable ASCII, so one character is one byte.
  if (payload.length + 2 > maxFrameBytes) throw new RangeError(`frame of ${payload.length + 2} bytes exceeds ${maxFrameBytes}`)
  const out = Buffer.allocUnsafe(payload.length + 2)
  out[0] = STX
  out.write(payload, 1, 'latin1')
  out[out.length - 1] = ETX
  return out
}

/** Parses the bytes between STX and ETX. Throws FrameFormatError. */
export function decodePayload (payload: Buffer): Frame {
  let bad: string | undefined
  for (const byte of payload) {
    if (byte < 0x20 || byte >= 0x7f) {
      bad = `byte 0x${byte.toString(16).padStart(2, '0')} in payload`
      break
    }
  }
  const text = payload.toString('latin1')
  const parts = text.split('|')
  if (parts.length < 4) throw new FrameFormatError(bad ?? `expected 4 fields, got ${parts.length}`)
  const [seqText, kind, cmd] = parts as [string, string, string]
  // more than 4: a "|" the sender did not encode in a value (text=A|B); the header still reads, for the NAK
  if (parts.length > 4) bad ??= `expected 4 fields, got ${parts.length} (a "|" in ARGS must be sent as %7C)`
  const argsText = parts[3]!
  if (!SEQ.test(seqText) || seqText === '0000') throw new FrameFormatError(bad ?? `invalid SEQ ${JSON.stringify(seqText)}`)
  if (!(FRAME_KINDS as readonly string[]).includes(kind)) throw new FrameFormatError(bad ?? `invalid KIND ${JSON.stringify(kind)}`)
  if (!NAME.test(cmd)) throw new FrameFormatError(bad ?? `invalid CMD ${JSON.stringify(cmd)}`)
  // the header reads: a fault in the ARGS (a raw byte, a bad %-escape, a duplicate key) keeps it for the NAK
  const header = { seq: Number(seqText), kind: kind as FrameKind, cmd }
  try {
    if (bad !== undefined) throw new FrameFormatError(bad)
    return { ...header, args: decodeArgs(argsText) }
  } catch (err) {
    if (err instanceof FrameFormatError) err.header = header
    throw err
  }
}

export type DiscardReason = 'garbage' | 'malformed'

export interface FrameDecoderOptions {
  maxFrameBytes?: number
  /** Told about every discarded run of bytes so the owner can log it. */
  onDiscard?: (reason: DiscardReason, bytes: number, detail: string) => void
}

/**
 * Streaming decoder. Bytes outside STX…ETX (except CR, LF, space and tab, which
 * are ignored) and frames that do not parse are dropped and counted; a frame longer than maxFrameBytes throws
 * FrameTooLongError from push() (frames completed earlier in the same chunk
 * are lost with it, as the connection is reset anyway). The buffer never
 * holds more than one partial frame, so it never grows past maxFrameBytes.
 */
export class FrameDecoder {
  readonly maxFrameBytes: number
  /** Bytes dropped: garbage between frames, unterminated and malformed frames. */
  droppedBytes = 0
  /** Frames dropped because their payload did not parse. */
  malformed = 0
  private readonly onDiscard: FrameDecoderOptions['onDiscard']
  private inFrame = false
  private parts: Buffer[] = []
  private length = 0

  constructor (options: FrameDecoderOptions = {}) {
    this.maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES
    if (!Number.isInteger(this.maxFrameBytes) || this.maxFrameBytes < 16) throw new RangeError('maxFrameBytes must be an integer >= 16')
    this.onDiscard = options.onDiscard
  }

  /** Bytes of the partial frame being held. */
  get pendingBytes (): number {
    return this.inFrame ? this.length + 1 : 0
  }

  push (chunk: Buffer): Frame[] {
    const frames: Frame[] = []
    let i = 0
    while (i < chunk.length) {
      if (!this.inFrame) {
        const start = chunk.indexOf(STX, i)
        const end = start === -1 ? chunk.length : start
        // blanks between frames are ignored, not dropped: they are no fault of the controller
        let garbage = 0
        for (let k = i; k < end; k++) if (!isBlank(chunk[k]!)) garbage++
        if (garbage > 0) this.discard('garbage', garbage, 'bytes outside a frame')
        if (start === -1) break
        this.begin()
        i = start + 1
        continue
      }
      let j = i
      while (j < chunk.length && chunk[j] !== ETX && chunk[j] !== STX) j++
      if (this.length + (j - i) + 2 > this.maxFrameBytes) {
        this.reset()
        throw new FrameTooLongError(this.maxFrameBytes)
      }
      if (j > i) {
        this.parts.push(chunk.subarray(i, j))
        this.length += j - i
      }
      if (j === chunk.length) break
      if (chunk[j] === STX) {
        this.discard('garbage', this.length + 1, 'unterminated frame')
        this.begin()
      } else {
        const payload = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.length)
        this.inFrame = false
        const size = this.length + 2
        this.parts = []
        this.length = 0
        try {
          frames.push(decodePayload(payload))
        } catch (err) {
          this.malformed++
          this.discard('malformed', size, (err as Error).message)
          const header = err instanceof FrameFormatError ? err.header : undefined
          if (header !== undefined) frames.push({ ...header, args: {}, invalid: err instanceof Error ? err.message : String(err) })
        }
      }
      i = j + 1
    }
    return frames
  }

  /** Forgets a partial frame, e.g. when the connection is replaced. */
  reset (): void {
    this.inFrame = false
    this.parts = []
    this.length = 0
  }

  private begin (): void {
    this.inFrame = true
    this.parts = []
    this.length = 0
  }

  private discard (reason: DiscardReason, bytes: number, detail: string): void {
    this.droppedBytes += bytes
    this.onDiscard?.(reason, bytes, detail)
  }
}
