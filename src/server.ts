// Entry of `picking-gateway serve`: load configuration, open the database, build the app, listen, stop on request.
import { buildApp, type App } from './app.js'
import { adminPasswordProblem, initDatabase } from './bootstrap.js'
import { ConfigError, loadConfig, mappingsOf, type LoadOptions } from './config.js'
import { openDatabaseWaiting, sqlitePath, type Database } from './db/index.js'
import { sqliteFileError, sqliteReadOnlyError } from './db/sqlite.js'
import { createStop, describeStop, shutdown, StoppedError, watchProcess, type Stop } from './lifecycle.js'
import { serviceLogger } from './logger.js'
import { startSimulator, type Simulator } from './hardware/index.js'

const DEMO_CONTROLLERS = ['ctl-1', 'ctl-2']

export interface ServeOptions extends LoadOptions {
  /** install SIGTERM/SIGINT/SIGHUP and standard-output handling when no `stop` is given (false in tests) */
  signals?: boolean
  /** the process's stop request, installed by cli.ts before anything else loads */
  stop?: Stop
  /** ends the process once stopped (process.exit) */
  exit?: (code: number) => void
}

export async function serve (options: ServeOptions = {}): Promise<App> {
  const env = options.env ?? process.env
  const exit = options.exit ?? ((code: number) => process.exit(code))
  let stop = options.stop
  if (stop === undefined && options.signals !== false) {
    stop = createStop()
    watchProcess(stop, { stdout: process.stdout, exit, warn: (line) => process.stderr.write(line + '\n') })
  }
  // A stop during start-up ends it: the step under way is no longer waited for, what was opened is closed.
  const stopped = stop === undefined
    ? undefined
    : new Promise<never>((_resolve, reject) => {
      const abort = () => reject(new StoppedError(stop.reason!))
      if (stop.signal.aborted) abort()
      else stop.signal.addEventListener('abort', abort, { once: true })
    })
  stopped?.catch(() => {})
  const untilStopped = async <T>(work: Promise<T>): Promise<T> => stopped === undefined ? await work : await Promise.race([work, stopped])
  if (stop?.reason !== undefined) throw new StoppedError(stop.reason)

  const { config, demo, source } = loadConfig(options)
  const mappings = mappingsOf(config)
  // a SQLite file that is not there (or a directory) is a configuration error: a restart would not find it either
  const file = sqlitePath(config.database.url)
  const fileError = file === undefined ? undefined : sqliteFileError(file, demo)
  if (fileError !== undefined) throw new ConfigError([fileError])
  // the demo makes its admin from PICKING_GATEWAY_ADMIN_PASSWORD: a value it cannot be stops the start before a database is made
  const refused = demo ? adminPasswordProblem(env.PICKING_GATEWAY_ADMIN_PASSWORD) : undefined
  if (refused !== undefined) throw new ConfigError([refused])
  const logger = await untilStopped(serviceLogger(config.logging.level))
  let db: Database
  try {
    db = await openService(config.database.url, {
      logger: logger.child({ component: 'database' }),
      create: demo,
      password: config.database.password,
      connectTimeoutMs: config.database.connectTimeoutMs,
      requestTimeoutMs: config.database.requestTimeoutMs
    }, file, stop?.signal)
  } catch (err) {
    // another process's lock on the SQLite file is waited for on timers (openDatabaseWaiting): a stop
    // meanwhile ends that wait at once, and is a stop, not a failure
    if (stop?.reason !== undefined) {
      logger.info({ reason: describeStop(stop.reason) }, 'stopped during start-up')
      throw new StoppedError(stop.reason)
    }
    throw err
  }
  let app: App
  let simulator: Simulator | undefined
  let building: Promise<App> | undefined
  try {
    if (demo) {
      const result = await untilStopped(initDatabase(db, {
        demo: true,
        mappings,
        argon2: config.auth.argon2,
        adminPassword: env.PICKING_GATEWAY_ADMIN_PASSWORD,
        print: (line) => process.stdout.write(line + '\n')
      }))
      if (result.seeded) process.stdout.write('Embedded demo database created and filled with demo data.\n')
    }
    if (demo && config.hardware.enabled && config.hardware.controllers.length === 0) {
      // The demo's stations are wired to ctl-1 and ctl-2: simulate them in-process.
      const starting = startSimulator({ host: '127.0.0.1', controllers: DEMO_CONTROLLERS.map((id) => ({ id, port: 0 })), logger: logger.child({ component: 'simulator' }) })
      starting.catch(() => {})
      simulator = await untilStopped(starting).catch(async (err: unknown) => {
        await starting.then((s) => s.close(), () => {})
        throw err
      })
      config.hardware.controllers = [...simulator.controllers.values()].map((c) => ({ id: c.id, host: '127.0.0.1', port: c.port }))
    }
    building = buildApp(config, { db, logger })
    app = await untilStopped(building)
  } catch (err) {
    if (err instanceof StoppedError) logger.info({ reason: describeStop(err.reason) }, 'stopped during start-up')
    // An app still being built when the stop came (waiting for SQL Server's connect timeout) is not
    // waited for: the pool closes now, the app (its links) once it is built, all within the grace period.
    const closing = Promise.all([
      db.close().catch(() => {}),
      building?.then((a) => a.close(), () => {}).catch(() => {}),
      simulator?.close()
    ])
    await (err instanceof StoppedError ? within(closing.then(() => {}), config.server.closeGraceMs) : closing)
    throw err
  }
  // The simulator stops after the app, so after the controller links: as an onClose hook it would
  // run first (the last added runs first) and each link would log an outage and try to reconnect.
  const sim = simulator
  const close = async (): Promise<void> => {
    try {
      await app.close()
    } finally {
      await sim?.close()
    }
  }

  const { host, port } = config.server
  try {
    await app.listen({ host, port })
  } catch (err) {
    // Without a listener the process must end (systemd restarts it), not idle with its controller links open.
    await within(close(), config.server.closeGraceMs)
    throw listenError(err as NodeJS.ErrnoException, host, port)
  }
  app.log.info({ config: source, demo, database: db.dialect }, 'picking-gateway ready')
  const plain = demo ? undefined : plainHttpWarning(config.server)
  if (plain !== undefined) app.log.warn({ host, port }, plain)
  if (stop !== undefined) stopOnRequest(app, stop, close, config.server.closeGraceMs, exit)
  return app
}

/**
 * Once serving: a stop request (a signal, standard output gone) or an error nothing caught closes the
 * app within the grace period, then ends the process with the stop's code (lifecycle.ts, shutdown).
 */
function stopOnRequest (app: App, stop: Stop, close: () => Promise<void>, graceMs: number, exit: (code: number) => void): void {
  const fatal = (err: unknown): void => {
    if (stop.reason !== undefined) {
      // the shutdown itself failed: nothing left to wait for
      app.log.error({ err }, 'fatal error while stopping')
      exit(1)
      return
    }
    stop.request({ error: err })
  }
  process.on('uncaughtException', fatal)
  process.on('unhandledRejection', fatal)
  // A second signal ends the process at once: a station command still waiting for its controller's ACK gets its
  // 504 first, as at the end of the grace period, where the exit otherwise reset its connection (and the events
  // still waiting for their station lookup go out to the open streams). The answers are written as the
  // rejections run through the error handler, which awaits no I/O: one turn of the loop.
  stop.beforeForcedExit(async () => {
    const commands = app.hardware.abandon('a second signal ended the stop')
    if (commands > 0) app.log.warn({ commands }, `second signal: ${commands} station command(s) still waiting for an ACK answered 504`)
    await new Promise((resolve) => setImmediate(resolve))
  })
  const run = (): void => {
    const reason = stop.reason!
    if ('signal' in reason) app.log.info({ signal: reason.signal }, 'closing: no new connections, finishing requests in flight')
    else if ('parent' in reason) app.log.warn({ parent: reason.parent }, `${describeStop(reason)} (npm stopped or killed): closing, as on SIGTERM`)
    else if ('output' in reason) app.log.error({ reason: describeStop(reason) }, `${describeStop(reason)}: its reader went away; stopping, exit 74 (systemd restarts the service)`)
    else app.log.error({ err: reason.error }, 'fatal error, closing')
    shutdown(reason, {
      close,
      cut: async () => {
        // a station command still waiting for its controller's ACK gets its 504 before its connection goes (a reset
        // would leave its client guessing too, without saying so)
        const commands = app.hardware.abandon()
        if (commands > 0) await new Promise((resolve) => setTimeout(resolve, 100))
        const connections = await new Promise<number>((resolve) => app.server.getConnections((err, n) => resolve(err ? 0 : n)))
        app.server.closeAllConnections()
        return { commands, connections }
      },
      graceMs,
      log: app.log
    }).then(exit, () => exit(1))
  }
  if (stop.signal.aborted) run()
  else stop.signal.addEventListener('abort', run, { once: true })
}

/** openDatabaseWaiting; a SQLite file the gateway may not write is a configuration error (exit 78), not a failure systemd restarts. */
async function openService (url: string, options: Parameters<typeof openDatabaseWaiting>[1], file: string | undefined, signal: AbortSignal | undefined): Promise<Database> {
  try {
    return await openDatabaseWaiting(url, options, signal)
  } catch (err) {
    const readOnly = file === undefined ? undefined : sqliteReadOnlyError(file, err)
    throw readOnly === undefined ? err : new ConfigError([readOnly])
  }
}

async function within (work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([
    work.catch(() => {}),
    new Promise<void>((resolve) => { timer = setTimeout(resolve, ms).unref() })
  ])
  clearTimeout(timer)
}

/**
 * A warning when passwords and tokens would cross the network unencrypted: plain HTTP on an address
 * other machines reach, with neither HTTPS here nor a proxy in front (trustProxy).
 */
export function plainHttpWarning (server: { host: string, tls?: unknown, trustProxy?: unknown }): string | undefined {
  const loopback = server.host === 'localhost' || server.host === '::1' || /^(?:::ffff:)?127\./i.test(server.host)
  if (loopback || server.tls !== undefined || (server.trustProxy !== undefined && server.trustProxy !== false)) return undefined
  return `serving plain HTTP on ${server.host}: passwords and tokens cross the network unencrypted; set server.tls, or put a proxy with HTTPS in front (server.host 127.0.0.1 and server.trustProxy)`
}

/**
 * Why the gateway cannot listen, and what to change. A port that needs privileges is a
 * configuration error (exit 78: systemd does not restart); an address in use or not (yet) on this
 * machine may clear up, so that is a failure systemd restarts (exit 1).
 */
export function listenError (err: NodeJS.ErrnoException, host: string, port: number): Error {
  const address = `${host.includes(':') ? `[${host}]` : host}:${port}`
  const choosePort = 'choose another port with PORT (environment) or server.port (configuration file)'
  switch (err.code) {
    case 'EADDRINUSE':
      return new Error(`cannot listen on ${address}: the address is already in use (EADDRINUSE), by another process or another picking-gateway. Stop that process, or ${choosePort}.`)
    case 'EACCES':
      return new ConfigError([`server.port: cannot listen on ${address}: permission denied (EACCES). Ports below 1024 need privileges (CAP_NET_BIND_SERVICE): ${choosePort}, 1024 or above.`])
    case 'EADDRNOTAVAIL':
      return new Error(`cannot listen on ${address}: no network interface of this machine has the address ${host} (EADDRNOTAVAIL). Choose one of its addresses, or 0.0.0.0 for all, with HOST (environment) or server.host (configuration file).`)
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new Error(`cannot listen on ${address}: the host name ${host} does not resolve (${err.code}). Set HOST (environment) or server.host (configuration file) to an address of this machine.`)
    default:
      return new Error(`cannot listen on ${address}: ${err.message}${err.code ? ` (${err.code})` : ''}. Check HOST and PORT (environment) or server.host and server.port (configuration file).`)
  }
}
