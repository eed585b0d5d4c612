#!/usr/bin/env node
// picking-gateway <command>: serve, db init, simulate.
import { parseArgs } from 'node:util'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { initDatabase } from './bootstrap.js'
import { ConfigError, EXIT_CONFIG, loadConfig, packageRoot } from './config.js'
import { openDatabase } from './db/index.js'
import { referenceMappings, type ResourceName } from './db/resources.js'
import type { TableMapping } from './db/types.js'
import { serve, startupExitCode } from './server.js'
import type { DbLogger } from './db/index.js'

/** The CLI's one-shot commands report to the terminal, without secrets: the driver errors carry none. */
const consoleLogger: DbLogger = {
  info: (_obj, msg) => console.error(msg),
  warn: (obj, msg) => console.error(`${msg}: ${(obj as { err?: Error }).err?.message ?? ''}`),
  error: (obj, msg) => console.error(`${msg}: ${(obj as { err?: Error }).err?.message ?? ''}`)
}

const version = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version

const HELP = `picking-gateway ${version}: REST gateway over a warehouse picking system

Usage: picking-gateway <command> [options]

Commands:
  serve                 run the gateway (the embedded demo when neither DATABASE_URL
                        nor PICKING_GATEWAY_CONFIG is set)
  db init [--demo]      create the reference tables and the admin user on the
                        database DATABASE_URL or the configuration names;
                        --demo adds demo materials and stations
  simulate --port N     run simulated picking controllers

Options:
  -h, --help            help for a command
  -v, --version         print the version

Environment: HOST, PORT, DATABASE_URL, PICKING_GATEWAY_CONFIG,
PICKING_GATEWAY_JWT_SECRET, PICKING_GATEWAY_ADMIN_PASSWORD, LOG_LEVEL`

const DB_INIT_HELP = `Usage: picking-gateway db init [--demo]

Creates the tables materials, stations and the gateway's user table (names from
the configured mapping) where they do not exist, and user "admin" when the user
table is empty. Its password comes from PICKING_GATEWAY_ADMIN_PASSWORD or is
generated and printed once. --demo also fills in demo materials and stations.
Run it once against a new database; it never alters existing tables.`

export async function main (argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
    console.log(HELP)
    return command === undefined ? 64 : 0
  }
  if (command === '-v' || command === '--version') {
    console.log(version)
    return 0
  }
  switch (command) {
    case 'serve': {
      if (rest.includes('--help') || rest.includes('-h')) {
        console.log('Usage: picking-gateway serve\n\nRuns the gateway. Configuration: see picking-gateway --help and the README.')
        return 0
      }
      await serve()
      return -1
    }
    case 'db': return await dbCommand(rest)
    case 'simulate': {
      const { runSimulateCommand } = await import('./hardware/simulate-cli.js')
      return await runSimulateCommand(rest)
    }
    default:
      console.error(`picking-gateway: unknown command '${command}'\n\n${HELP}`)
      return 64
  }
}

async function dbCommand (argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { demo: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } })
  if (values.help || positionals[0] !== 'init' || positionals.length > 1) {
    console.log(DB_INIT_HELP)
    return values.help ? 0 : 64
  }
  const { config, demo } = loadConfig()
  const mappings = { ...referenceMappings, ...config.mapping } as Record<ResourceName, TableMapping>
  const db = openDatabase(config.database.url, { create: true, password: config.database.password, connectTimeoutMs: config.database.connectTimeoutMs, requestTimeoutMs: config.database.requestTimeoutMs, logger: consoleLogger })
  try {
    const result = await initDatabase(db, {
      demo: values.demo === true,
      mappings,
      argon2: config.auth.argon2,
      adminPassword: process.env.PICKING_GATEWAY_ADMIN_PASSWORD,
      print: (line) => console.log(line)
    })
    console.log(`Tables ready on ${db.dialect}${demo ? ' (embedded demo database)' : ''}.` +
      (result.adminCreated ? '' : ' User table not empty: no admin created.') +
      (values.demo === true ? (result.seeded ? ' Demo data added.' : ' Materials already present: demo data not added.') : ''))
    return 0
  } finally {
    await db.close()
  }
}

function reportFatal (err: unknown): number {
  if (err instanceof ConfigError) {
    console.error(err.message)
    return EXIT_CONFIG
  }
  const code = startupExitCode(err)
  console.error(`picking-gateway: ${(err as Error).message ?? String(err)}`)
  return code
}

main(process.argv.slice(2)).then((code) => {
  if (code >= 0) process.exitCode = code
}, (err) => {
  process.exitCode = reportFatal(err)
})
