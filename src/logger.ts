// Logger options: JSON lines for journald, pretty only on a terminal; secrets scrubbed at every depth.
import type { LoggerOptions } from 'pino'

const SECRET_KEYS = /^(authorization|cookie|set-cookie|password|passwordhash|newpassword|token|accesstoken|refreshtoken|jwtsecret|secret|credentials?)$/i
/** A JWT (three base64url parts, the first starting with eyJ) or a Bearer credential anywhere in a string. */
const SECRET_TEXT = /(Bearer\s+)?eyJ[\w-]*\.[\w-]+\.[\w-]*|Bearer\s+\S+/g
const MAX_DEPTH = 8

export const REDACTED = '[redacted]'

/**
 * Returns a copy of a log object with every secret-named field and every token-like
 * string replaced, however deep it sits. Errors are kept as they are (pino serializes
 * them) but their message is scrubbed.
 */
export function scrub (value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.replace(SECRET_TEXT, REDACTED)
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return value
  if (value instanceof Error) {
    if (SECRET_TEXT.test(value.message)) value.message = value.message.replace(SECRET_TEXT, REDACTED)
    SECRET_TEXT.lastIndex = 0
    return value
  }
  if (Array.isArray(value)) return value.map((item) => scrub(item, depth + 1))
  // Class instances (requests, sockets, dates) are left to pino's serializers.
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return value
  const out: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(value)) {
    out[key] = SECRET_KEYS.test(key) && v !== undefined && v !== null ? REDACTED : scrub(v, depth + 1)
  }
  return out
}

export function loggerOptions (level: string, stream: 'auto' | 'json' = 'auto'): LoggerOptions {
  const pretty = stream === 'auto' && process.stdout.isTTY === true
  return {
    level,
    // Fastify's request serializer leaves headers out; these paths are a second guard for its req/res objects.
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'], censor: REDACTED },
    formatters: { log: (object) => scrub(object) as Record<string, unknown> },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } } : {})
  }
}
