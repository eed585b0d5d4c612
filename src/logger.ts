// Logger options: JSON lines for journald, pretty only on a terminal; secrets redacted wherever they can appear.
import type { FastifyServerOptions } from 'fastify'

/**
 * pino's redaction works on paths. These cover every place a secret can reach a log line:
 * request headers, bodies logged on error, and service objects logged by plugins.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'password', '*.password', '*.*.password',
  'passwordHash', '*.passwordHash', '*.*.passwordHash',
  'accessToken', '*.accessToken', '*.*.accessToken',
  'refreshToken', '*.refreshToken', '*.*.refreshToken',
  'token', '*.token', '*.*.token',
  'jwtSecret', '*.jwtSecret', '*.*.jwtSecret',
  'secret', '*.secret', '*.*.secret'
]

export function loggerOptions (level: string, stream: 'auto' | 'json' = 'auto'): FastifyServerOptions['logger'] {
  const pretty = stream === 'auto' && process.stdout.isTTY === true
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } } : {})
  }
}
