// Logger options: JSON lines for journald, pretty only on a terminal; secrets scrubbed at every depth.
import { fstatSync } from 'node:fs'
import { pino, type Logger, type LoggerOptions } from 'pino'

const SECRET_KEYS = /^(authorization|cookie|set-cookie|password|passwordhash|newpassword|token|accesstoken|refreshtoken|jwtsecret|secret|credentials?)$/i
/** A Bearer credential anywhere in a string. */
const BEARER_TEXT = /Bearer\s+\S+/g
/** the same, without the global flag's lastIndex state: for a test before replacing */
const HAS_BEARER_TEXT = /Bearer\s+\S/
const WORD = /[\w-]/

/**
 * Where the first JWT (three base64url parts, the first starting with eyJ) at or after `from` lies,
 * anywhere in a string, also right after a letter (`%20eyJ…` in a URL): [start, end), or undefined.
 * One pass: a run of base64url characters that is not followed by the right dots is skipped whole,
 * since no "eyJ" inside it can start a JWT either. (A regular expression retried every "eyJ" of a
 * long dotless word and rescanned the rest of it: a crafted 16 KB URL cost 42 ms per request.)
 */
function findJwt (text: string, from: number): [number, number] | undefined {
  const run = (at: number): number => { while (at < text.length && WORD.test(text[at])) at++; return at }
  for (let start = text.indexOf('eyJ', from); start >= 0; start = text.indexOf('eyJ', start)) {
    const header = run(start + 3)
    if (text[header] !== '.') { start = header; continue }
    const payload = run(header + 1)
    if (payload === header + 1 || text[payload] !== '.') { start = payload; continue }
    return [start, run(payload + 1)]
  }
  return undefined
}

/** A password hash (argon2, as the gateway stores them) that a driver's message may quote (SQL Server's truncated value). */
const HASH_TEXT = /\$argon2(?:id|i|d)\$[^\s'"]*/g

/** The string with every JWT in it replaced by `mark`; the same string when it holds none. */
export function replaceTokens (text: string, mark: string): string {
  let out = text
  let found = findJwt(out, 0)
  while (found !== undefined) {
    out = out.slice(0, found[0]) + mark + out.slice(found[1])
    found = findJwt(out, found[0] + mark.length)
  }
  return out
}

/** The string with every Bearer credential, JWT and password hash replaced; the same string when it holds none. */
export function redactText (text: string): string {
  let out = HAS_BEARER_TEXT.test(text) ? text.replace(BEARER_TEXT, REDACTED) : text
  if (out.includes('$argon2')) out = out.replace(HASH_TEXT, REDACTED)
  return replaceTokens(out, REDACTED)
}
const MAX_DEPTH = 8

export const REDACTED = '[redacted]'

/** query parameters that carry credentials, by name without case, '_' or '-': their values never reach a log */
const SECRET_PARAMS = new Set(['ticket', 'password', 'newpassword', 'pass', 'passwd', 'pwd', 'token', 'accesstoken', 'refreshtoken', 'idtoken', 'secret', 'clientsecret', 'apikey', 'apitoken', 'credentials', 'authorization', 'auth', 'jwt', 'passphrase', 'privatekey'])

/** A query parameter's name names a credential, also as part of a bracketed name (`password[]`, `user[password]`). */
function namesSecret (name: string): boolean {
  const lower = name.toLowerCase()
  // every request line of a list passes here: a plain name (limit, sort) is looked up without splitting it
  if (!lower.includes('[') && !lower.includes(']')) return SECRET_PARAMS.has(lower.trim().replace(/[-_]/g, ''))
  return lower.split(/[[\]]+/).some((part) => SECRET_PARAMS.has(part.trim().replace(/[-_]/g, '')))
}

/**
 * A URL for the log: the value of every query parameter that names a credential (an event stream's
 * `ticket`, a `password` or `access_token` someone put in a query string) replaced, also when the
 * name is percent-encoded or in another case. The gateway takes none of them from a query but the
 * stream ticket; the others are refused, and still logged without their value.
 */
export function redactUrl (url: string): string {
  const query = url.indexOf('?')
  if (query < 0) return url
  return url.slice(0, query) + url.slice(query).replace(/([?&])([^=&#]*)=([^&#]*)/g, (all, sep: string, name: string) => {
    let decoded = name
    try { decoded = decodeURIComponent(name.replaceAll('+', ' ')) } catch {}
    return namesSecret(decoded) ? `${sep}${name}=${REDACTED}` : all
  })
}

/**
 * A log object with every secret-named field and every token-like string replaced, however deep
 * it sits: the object itself when nothing needed it (the usual case: no copy per log line), else a
 * copy with the replacements. Errors are kept as they are (pino serializes them) but their message
 * is scrubbed.
 */
export function scrub (value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactText(value)
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return value
  if (value instanceof Error) {
    // pino's serializer writes the causes' messages too (a database error behind the API's words)
    for (let e: unknown = value, i = 0; e instanceof Error && i < MAX_DEPTH; e = e.cause, i++) {
      const message = redactText(e.message)
      if (message !== e.message) e.message = message
    }
    return value
  }
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined
    for (let i = 0; i < value.length; i++) {
      const v = scrub(value[i], depth + 1)
      if (v !== value[i]) (copy ??= [...value])[i] = v
    }
    return copy ?? value
  }
  // Class instances (requests, sockets, dates) are left to pino's serializers.
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return value
  let copy: Record<string, unknown> | undefined
  for (const key of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[key]
    const clean = SECRET_KEYS.test(key) && v !== undefined && v !== null ? REDACTED : scrub(v, depth + 1)
    if (clean !== v) (copy ??= { ...value })[key] = clean
  }
  return copy ?? value
}

/** JSON lines with secrets scrubbed; pretty printing is serviceLogger's, on a terminal only. */
export function loggerOptions (level: string): LoggerOptions {
  return {
    level,
    // Fastify's request serializer leaves headers out; these paths are a second guard for its req/res objects.
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'], censor: REDACTED },
    formatters: { log: (object) => scrub(object) as Record<string, unknown> }
  }
}

/** What the log sink writes to: process.stdout and process.stderr, or a test's stream. */
export interface SinkStream {
  write (chunk: string): unknown
  on (event: 'error', listener: (err: Error) => void): unknown
  readonly writableLength: number
  readonly destroyed: boolean
  readonly writable: boolean
  /** the error that destroyed the stream (its 'error' event comes a tick later) */
  readonly errored?: Error | null
}

export interface LogSinkOptions {
  /** tried in order: when one fails (EPIPE, EIO), logging moves to the next; after the last, it stops */
  streams: SinkStream[]
  /** turns a JSON line into the text written (pretty printing); JSON as it is when absent */
  format?: (line: string) => string
  /** bytes a stream may hold unwritten (its reader is slow or stalled) before lines are dropped */
  maxPendingBytes?: number
}

export interface LogSink {
  /** takes a line; it is written with the others of this event-loop turn (see logSink) */
  write (line: string): void
  /** writes what is held now (at exit: the lines of the last turn); pino's logger.flush(cb) lands here */
  flush (done?: () => void): void
  /** lines dropped because the reader did not keep up */
  readonly dropped: number
  /** no stream left: every line is discarded */
  readonly stopped: boolean
}

const MAX_PENDING_BYTES = 4 * 1024 * 1024
/** a batch larger than this is written at once instead of at the end of the turn */
const MAX_BATCH_CHARS = 64 * 1024

/**
 * The service's log destination. A log write never blocks, never retries and never throws: a
 * stream that does not keep up loses lines (counted, then reported), a stream that fails (its
 * reader went away: a journald restart, a closed pipe, a terminal hung up) is given up for the
 * next one. Lines written in one turn of the event loop go out together at its end, in one
 * write (under load, one syscall for dozens of request lines instead of one each: npm run bench);
 * `flush` writes them at once, and serviceLogger calls it at exit. That flush is one attempt, like
 * every write: what the stream does not take is lost, and exiting never waits on a reader (pino's
 * own destination retries a failed write at exit forever).
 */
export function logSink (options: LogSinkOptions): LogSink {
  const streams = [...options.streams]
  const format = options.format ?? ((line: string) => line)
  const maxPending = options.maxPendingBytes ?? MAX_PENDING_BYTES
  let current = 0
  let dropped = 0
  let droppedSince = 0

  const fail = (stream: SinkStream, err: Error | undefined) => {
    if (streams[current] !== stream) return
    current++
    const next = streams[current]
    if (next !== undefined) {
      const code = (err as NodeJS.ErrnoException | undefined)?.code ?? 'closed'
      send(next, format(JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, msg: `log output failed (${code}): logging continues here` }) + '\n'))
    }
  }
  const send = (stream: SinkStream, text: string): boolean => {
    if (stream.destroyed || !stream.writable) {
      fail(stream, stream.errored ?? undefined)
      return false
    }
    try {
      stream.write(text)
      return true
    } catch (err) {
      fail(stream, err as Error)
      return false
    }
  }
  for (const stream of streams) stream.on('error', (err) => fail(stream, err))

  /** formatted lines of this turn, and how many */
  let batch = ''
  let lines = 0
  let scheduled: NodeJS.Immediate | undefined

  const writeBatch = (): void => {
    if (scheduled !== undefined) clearImmediate(scheduled)
    scheduled = undefined
    const text = batch
    const count = lines
    batch = ''
    lines = 0
    while (count > 0 && current < streams.length) {
      const stream = streams[current]
      if (stream.writableLength > maxPending) {
        dropped += count
        droppedSince += count
        return
      }
      if (droppedSince > 0) {
        const notice = JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, msg: `${droppedSince} log lines dropped: the log reader did not keep up` }) + '\n'
        if (!send(stream, format(notice))) continue
        droppedSince = 0
      }
      if (send(stream, text)) return
    }
  }

  return {
    write (line) {
      if (current >= streams.length) return
      batch += format(line)
      lines++
      if (batch.length >= MAX_BATCH_CHARS) writeBatch()
      else scheduled ??= setImmediate(writeBatch)
    },
    flush (done) {
      writeBatch()
      done?.()
    },
    get dropped () { return dropped },
    get stopped () { return current >= streams.length }
  }
}

/**
 * The logger of `picking-gateway serve`: JSON lines on stdout (journald), pretty on a terminal,
 * both through logSink. Pretty printing runs in this thread: pino's transport would run it in a
 * worker thread that pino flushes synchronously at exit, waiting on a terminal that may be gone.
 */
export async function serviceLogger (level: string): Promise<Logger> {
  let format: ((line: string) => string) | undefined
  if (process.stdout.isTTY === true) {
    const { prettyFactory } = await import('pino-pretty')
    format = prettyFactory({ translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', colorize: process.stdout.hasColors?.() ?? false })
  } else if (toJournal(process.env.JOURNAL_STREAM)) {
    format = withSyslogPriority
  }
  const sink = logSink({ streams: [process.stdout, process.stderr], format })
  process.on('exit', () => { sink.flush() })
  return sinkLogger(level, sink)
}

/**
 * Standard output is journald's stream: systemd sets JOURNAL_STREAM to its device and inode
 * (sd_journal_stream_fd(3)); a pipe the unit's output was redirected to is not.
 */
export function toJournal (stream: string | undefined, fd = 1): boolean {
  const m = /^(\d+):(\d+)$/.exec(stream ?? '')
  if (m === null) return false
  try {
    const stat = fstatSync(fd)
    return String(stat.dev) === m[1] && String(stat.ino) === m[2]
  } catch {
    return false
  }
}

/** pino's levels as syslog priorities: trace and debug 7, info 6, warn 4, error 3, fatal 2 */
const SYSLOG_PRIORITY: Record<string, string> = { 10: '<7>', 20: '<7>', 30: '<6>', 40: '<4>', 50: '<3>', 60: '<2>' }

/**
 * A JSON line with the priority journald reads from a `<N>` before it (SyslogLevelPrefix, on by
 * default): `journalctl -p warning` then finds warnings and errors. journald keeps the line without it.
 */
export function withSyslogPriority (line: string): string {
  const m = /^\{"level":(\d+)/.exec(line)
  return `${(m !== null ? SYSLOG_PRIORITY[m[1]] : undefined) ?? '<6>'}${line}`
}

/** A pino logger with loggerOptions writing to sink; requestLineWriter writes beside it. */
export function sinkLogger (level: string, sink: LogSink): Logger {
  const logger = pino(loggerOptions(level), sink)
  sinks.set(logger, sink)
  return logger
}

/** the sink of each logger sinkLogger made */
const sinks = new WeakMap<Logger, LogSink>()

/** The fields of the one line a request logs when it ends. */
export interface RequestLine {
  reqId: string
  method: string
  url: string
  route: string | undefined
  statusCode: number
  responseTimeMs: number
  user: string | number | undefined
}

/**
 * Writes a request's line straight to sinkLogger's sink, built by one JSON.stringify: the bytes
 * `log.info({ method, … }, 'request')` writes through pino (its info level, time, pid and hostname,
 * the request's id, the fields, the message; the URL scrubbed), about 0.8 µs a request less (README,
 * Performance: pino builds a line from many small strings, and flattening them costs again).
 * Undefined for any other logger than sinkLogger's (a test's own): those lines go through pino.
 */
export function requestLineWriter (logger: unknown): ((log: { level: string }, line: RequestLine) => void) | undefined {
  const sink = sinks.get(logger as Logger)
  if (sink === undefined) return undefined
  const root = logger as Logger
  // what pino writes after the time: its base bindings as JSON (bindings() leaves pid and hostname out)
  const chindings = (root as unknown as Record<symbol, string>)[pino.symbols.chindingsSym]
  const { pid, hostname } = JSON.parse(`{${chindings.slice(1)}}`) as Record<string, unknown>
  const values = root.levels.values
  const level = values.info
  return (log, line) => {
    // the request's logger: a route's own log level applies ('silent' has no value)
    if ((values[log.level] ?? Infinity) > level) return
    sink.write(JSON.stringify({
      level,
      time: Date.now(),
      pid,
      hostname,
      reqId: line.reqId,
      method: line.method,
      url: scrub(line.url),
      route: line.route,
      statusCode: line.statusCode,
      responseTimeMs: line.responseTimeMs,
      user: line.user,
      msg: 'request'
    }) + '\n')
  }
}
