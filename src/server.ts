// Entry of `picking-gateway serve`: load configuration, open the database, build the app, listen, close on signals.
import closeWithGrace from 'close-with-grace'
import { buildApp, type App } from './app.js'
import { initDatabase } from './bootstrap.js'
import { ConfigError, loadConfig, mappingsOf, type LoadOptions } from './config.js'
import { openDatabase } from './db/index.js'
import { serviceLogger } from './logger.js'
import { startSimulator, type Simulator } from './hardware/index.js'

const DEMO_CONTROLLERS = ['ctl-1', 'ctl-2']

/**
 * Signals of a fault in this process (close-with-grace listens to them by default). A JavaScript
 * listener cannot repair the fault: the faulting instruction runs again, faults again, and the
 * process spins at full CPU, deaf to SIGTERM. Left to their default action, they end the process.
 */
const FAULT_SIGNALS: Array<'SIGSEGV' | 'SIGBUS' | 'SIGFPE' | 'SIGILL' | 'SIGTRAP' | 'SIGABRT'> = ['SIGSEGV', 'SIGBUS', 'SIGFPE', 'SIGILL', 'SIGTRAP', 'SIGABRT']

export interface ServeOptions extends LoadOptions {
  /** install SIGTERM/SIGINT handlers (false in tests) */
  signals?: boolean
}

export async function serve (options: ServeOptions = {}): Promise<App> {
  const env = options.env ?? process.env
  const { config, demo, source } = loadConfig(options)
  const mappings = mappingsOf(config)
  const logger = await serviceLogger(config.logging.level)
  const db = openDatabase(config.database.url, {
    logger: logger.child({ component: 'database' }),
    create: demo,
    password: config.database.password,
    connectTimeoutMs: config.database.connectTimeoutMs,
    requestTimeoutMs: config.database.requestTimeoutMs
  })
  let app: App
  let simulator: Simulator | undefined
  try {
    if (demo) {
      const result = await initDatabase(db, {
        demo: true,
        mappings,
        argon2: config.auth.argon2,
        adminPassword: env.PICKING_GATEWAY_ADMIN_PASSWORD,
        print: (line) => process.stdout.write(line + '\n')
      })
      if (result.seeded) process.stdout.write('Embedded demo database created and filled with demo data.\n')
    }
    if (demo && config.hardware.enabled && config.hardware.controllers.length === 0) {
      // The demo's stations are wired to ctl-1 and ctl-2: simulate them in-process.
      simulator = await startSimulator({ host: '127.0.0.1', controllers: DEMO_CONTROLLERS.map((id) => ({ id, port: 0 })), logger: logger.child({ component: 'simulator' }) })
      config.hardware.controllers = [...simulator.controllers.values()].map((c) => ({ id: c.id, host: '127.0.0.1', port: c.port }))
    }
    app = await buildApp(config, { db, logger })
  } catch (err) {
    await db.close().catch(() => {})
    await simulator?.close()
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

  // close-with-grace ends the process with exit 0 once closed, or 1 when closing takes longer than closeGraceMs.
  const grace = options.signals === false
    ? undefined
    : closeWithGrace({ delay: config.server.closeGraceMs, skip: FAULT_SIGNALS, logger: { error: (msg: unknown) => app.log.error(msg) } }, async ({ signal, err }) => {
      if (err) app.log.error({ err }, 'fatal error, closing')
      else app.log.info({ signal }, 'closing: no new connections, finishing requests in flight')
      await close()
    })
  const { host, port } = config.server
  try {
    await app.listen({ host, port })
  } catch (err) {
    // Without a listener the process must end (systemd restarts it), not idle with its controller links open.
    grace?.uninstall()
    await within(close(), config.server.closeGraceMs)
    throw listenError(err as NodeJS.ErrnoException, host, port)
  }
  app.log.info({ config: source, demo, database: db.dialect }, 'picking-gateway ready')
  return app
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
