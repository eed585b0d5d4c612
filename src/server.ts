// Entry of `picking-gateway serve`: load configuration, open the database, build the app, listen, close on signals.
import closeWithGrace from 'close-with-grace'
import { pino } from 'pino'
import { buildApp, type App } from './app.js'
import { initDatabase } from './bootstrap.js'
import { loadConfig, mappingsOf, type LoadOptions } from './config.js'
import { openDatabase } from './db/index.js'
import { loggerOptions } from './logger.js'
import { startSimulator, type Simulator } from './hardware/index.js'

const DEMO_CONTROLLERS = ['ctl-1', 'ctl-2']

export interface ServeOptions extends LoadOptions {
  /** install SIGTERM/SIGINT handlers (false in tests) */
  signals?: boolean
}

export async function serve (options: ServeOptions = {}): Promise<App> {
  const env = options.env ?? process.env
  const { config, demo, source } = loadConfig(options)
  const mappings = mappingsOf(config)
  const logger = pino(loggerOptions(config.logging.level))
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
    if (simulator) {
      const sim = simulator
      app.addHook('onClose', async () => { await sim.close() })
    }
  } catch (err) {
    await db.close().catch(() => {})
    await simulator?.close()
    throw err
  }

  if (options.signals !== false) {
    closeWithGrace({ delay: config.server.closeGraceMs }, async ({ signal, err }) => {
      if (err) app.log.error({ err }, 'fatal error, closing')
      else app.log.info({ signal }, 'closing: no new connections, finishing requests in flight')
      await app.close()
    })
  }
  await app.listen({ host: config.server.host, port: config.server.port })
  app.log.info({ config: source, demo, database: db.dialect }, 'picking-gateway ready')
  return app
}
