// The picking-gateway commands: serve, db init, db introspect, user, check-config, simulate. Exit codes follow sysexits.h.
import { lookup } from 'node:dns/promises'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'
import { dirname, join } from 'node:path'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { setFlagsFromString } from 'node:v8'
import { argon2HashLength, createPasswords, normalizeUsername, spelledUsername } from './auth/passwords.js'
import { adminPasswordProblem, initDatabase } from './bootstrap.js'
import { ConfigError, EXIT_CONFIG, loadConfig, mappingsOf, packageRoot, readTls, tlsValidityWarning, type LoadedConfig } from './config.js'
import { openDatabaseWaiting, readServerClock, sqlitePath, type DbLogger } from './db/index.js'
import { sqliteFileError } from './db/sqlite.js'
import { foreignKeysTo } from './db/data-errors.js'
import { dialectFor } from './db/dialect.js'
import { categoryOf, columnNamed, describeType, inspectStorage, ResourceStorage, sqliteUntyped } from './db/storage.js'
import { DatabaseUnavailableError, SchemaMismatchError } from './db/errors.js'
import { formatReport, introspect, mappingConfig } from './db/introspect.js'
import { idField, isMissingTable, resources, stationInUse, type ResourceName } from './db/resources.js'
import { Repository, type Id } from './db/repository.js'
import { isFixedWidthText, type ColumnInfo, type Database, type Row, type TableMapping } from './db/types.js'
import { EXIT_IOERR, StoppedError, type Stop } from './lifecycle.js'
import { countLicensed, toUser, UserService } from './users.js'
import { SSO_MARKER_PREFIX } from './auth/sso.js'
import { PASSWORD_LENGTH, USERNAME_RULE, VISIBLE_USERNAME_RE, type UserType } from '../schemas/users.js'
import { hiddenCharacter } from '../schemas/common.js'

export const EXIT_OK = 0
export const EXIT_FAILURE = 1
export const EXIT_USAGE = 64
/** check-config: the file is valid, but the database could not be reached or opened, so the mapping was not checked (sysexits' EX_UNAVAILABLE) */
export const EXIT_UNCHECKED = 69
/** serve and simulate keep running; the process exits on a signal */
export const KEEP_RUNNING = -1

/**
 * V8 flags the server sets for itself. `--no-parallel-scavenge`: young-generation collections run
 * on the main thread alone. V8's helper threads for them share the cores with password hashes and
 * everything else on a small machine; when one is not running, the main thread waits for it
 * (npm run bench on 2 cores: README, Performance). `node --parallel-scavenge` keeps V8's way. Set
 * at run time, as a flag V8 no longer knows is then ignored, where the command line would refuse to start.
 */
export function serveV8Flags (execArgv: readonly string[]): string[] {
  return execArgv.some((arg) => /^--(no-)?parallel[-_]scavenge$/.test(arg)) ? [] : ['--no-parallel-scavenge']
}

export interface Io {
  out (line: string): void
  err (line: string): void
  /** reads the whole of standard input (for --password-stdin) */
  readStdin (): Promise<string>
  /** standard input is a terminal: --password-stdin reads a line from it without echo (readHidden) */
  terminal?: { readHidden (prompt: string): Promise<string> }
  env: NodeJS.ProcessEnv
  /** once what `out` wrote has gone out: why standard output took none of it or not all (EPIPE, ENOSPC), else undefined */
  outputFailure?: () => Promise<string | undefined>
}

/** What readHidden needs of standard input: a terminal's stream (process.stdin). */
export interface HiddenInput {
  setRawMode (mode: boolean): unknown
  setEncoding (encoding: BufferEncoding): unknown
  on (event: 'data', listener: (chunk: string) => void): unknown
  on (event: 'end', listener: () => void): unknown
  off (event: 'data', listener: (chunk: string) => void): unknown
  off (event: 'end', listener: () => void): unknown
  resume (): unknown
  pause (): unknown
}

/**
 * One line typed at a terminal, not echoed (a password typed after --password-stdin used to show on
 * the screen, and needed Ctrl-D after it). Enter or Ctrl-D ends it, Backspace takes back a character,
 * Ctrl-C restores the terminal and raises SIGINT as the terminal would have (exit 130). A terminal that
 * goes away meanwhile (its input ends) is an error: the command did nothing, and must not exit 0.
 */
export async function readHidden (input: HiddenInput, output: { write (text: string): unknown }, prompt: string, interrupt = () => { process.kill(process.pid, 'SIGINT') }): Promise<string> {
  return await new Promise((resolve, reject) => {
    let text = ''
    const end = (): void => {
      process.off('SIGHUP', onHangup)
      input.off('data', onData)
      input.off('end', onEnd)
      try { input.setRawMode(false) } catch {}
      input.pause()
      output.write('\n')
    }
    // without this, nothing was left for the event loop and the process ended with exit 0, having done nothing
    const onEnd = (): void => {
      end()
      reject(new Error('the terminal closed before a password was typed; nothing was changed'))
    }
    const onData = (chunk: string): void => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          end()
          return resolve(text)
        }
        if (ch === '\u0003') {
          end()
          return interrupt()
        }
        if (ch === '\u007f' || ch === '\b') text = [...text].slice(0, -1).join('')
        else text += ch
      }
    }
    // Node gives a terminal its mode back when SIGINT or SIGTERM ends the process, not on SIGHUP (a
    // `kill -HUP` while the terminal stays): without this the shell was left without echo. Listening
    // before the mode changes: a SIGHUP as soon as the prompt shows finds the listener there.
    const onHangup = (): void => {
      end()
      process.kill(process.pid, 'SIGHUP')
    }
    process.once('SIGHUP', onHangup)
    // echo off before the prompt shows: what is typed once it shows is never echoed
    input.setEncoding('utf8')
    input.setRawMode(true)
    output.write(prompt)
    input.on('data', onData)
    input.on('end', onEnd)
    input.resume()
  })
}

export const processIo: Io = {
  out: (line) => { process.stdout.write(line + '\n') },
  err: (line) => { process.stderr.write(line + '\n') },
  readStdin: async () => {
    const chunks: Buffer[] = []
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks).toString('utf8')
  },
  terminal: process.stdin.isTTY ? { readHidden: async (prompt) => await readHidden(process.stdin, process.stderr, prompt) } : undefined,
  env: process.env,
  outputFailure: async () => await new Promise((resolve) => {
    // a stream that failed is destroyed: later writes fail alike, its first error says why
    process.stdout.write('', (err) => {
      const failed = (process.stdout.errored ?? err) as NodeJS.ErrnoException | null | undefined
      resolve(failed == null ? undefined : failed.code ?? failed.message)
    })
  })
}

export const version = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version

const HELP = `picking-gateway ${version}: REST gateway over a warehouse picking system

Usage: picking-gateway <command> [options]

Commands:
  serve                       run the gateway (the embedded demo when neither
                              DATABASE_URL nor PICKING_GATEWAY_CONFIG is set)
  db init [--demo]            create the reference tables and user admin
  db introspect [--json]      propose a mapping for an existing database
  user add <name> [--type T]  create a user (type admin, user or application)
  user passwd <name>          set a user's password (revokes its tokens)
  user disable <name>         disable a user (revokes its tokens)
  user enable <name>          enable a user again
  user list                   list the users
  check-config [file]         validate a configuration file; exit 78 if invalid
  simulate --port N           run simulated picking controllers

Options:
  -h, --help                  help (also after any command)
  -v, --version               print the version

Environment: HOST, PORT, DATABASE_URL, PICKING_GATEWAY_CONFIG,
PICKING_GATEWAY_JWT_SECRET, PICKING_GATEWAY_ADMIN_PASSWORD, LOG_LEVEL.
Exit codes: 0 ok, 1 failure, 64 usage error, 69 check-config could not reach
the database (the mapping was not checked), 74 standard output gone (serve,
simulate: systemd restarts; other commands: their output is incomplete), 78
configuration error, 129 serve or simulate stopped by SIGHUP.`

const COMMAND_HELP: Record<string, string> = {
  serve: `Usage: picking-gateway serve

Runs the gateway until SIGTERM or SIGINT (exit 0) or SIGHUP (exit 129: under
systemd a restart, as there is no reload), or until its standard
output's reader is gone (exit 74). It takes no options: configuration comes from the file named by
PICKING_GATEWAY_CONFIG, then the environment (HOST, PORT, DATABASE_URL,
PICKING_GATEWAY_JWT_SECRET, LOG_LEVEL), then systemd credentials (jwt-secret,
database-password). With none of them it runs the embedded demo under data/.`,
  db: `Usage: picking-gateway db init [--demo]
       picking-gateway db introspect [--json]

db init creates the tables materials, stations and the gateway's user table (names
from the configured mapping) where they do not exist, and user "admin" when the user
table is empty. Its password comes from PICKING_GATEWAY_ADMIN_PASSWORD or is generated
and printed once. --demo also fills in demo materials and stations. Existing tables
are never altered; one that does not match the mapping is reported.

db introspect reads the configured database's tables and views (every schema) and
proposes a mapping for materials, stations and users: the table whose name and columns
fit best, a column per field by name and type, value maps for code columns (J/N,
V/K/P/M). It reports the fields it could not match and the NOT NULL columns without a
default an insert would miss, then prints {"mapping": ...} to paste into the
configuration file. --json prints only that JSON. It reads, never changes, the database,
and needs no JWT secret (DATABASE_URL alone will do; a secret given is still checked);
nor does db init.`,
  user: `Usage: picking-gateway user <add|passwd|disable|enable|list> [name] [options]

  user add <name> [--type admin|user|application] [--display-name TEXT] --password-stdin
  user passwd <name> --password-stdin
  user disable <name>
  user enable <name>
  user list

The password is read from standard input with --password-stdin (one line; when standard
input is a terminal it prompts for it twice, without echo):
read -rs PW; printf %s "$PW" | picking-gateway user add alice --password-stdin
keeps it out of ps and the shell history. Changing the password or disabling a user revokes all of its
tokens, application tokens included. Works on the database the configuration names,
and needs no JWT secret (a secret given is still checked).`,
  'check-config': `Usage: picking-gateway check-config [file]

Validates the configuration (the file given, or PICKING_GATEWAY_CONFIG, plus the
environment) and lists every problem with its key, what was expected and what was
found (never a secret's value); when it can reach the database, it also checks the
mapping against its tables and columns. Exit 0 when valid, 78 when not, 69 when
the database could not be reached or opened (the file is valid, the mapping was
not checked).`
}

class UsageError extends Error {}

interface Parsed { values: Record<string, string | boolean | undefined>, positionals: string[] }

function parse (argv: string[], options: ParseArgsConfig['options']): Parsed {
  try {
    return parseArgs({ args: argv, allowPositionals: true, options: { ...options, help: { type: 'boolean', short: 'h' } } }) as Parsed
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
}

/**
 * Runs one command and resolves with its exit code. `stop` (cli.ts) is the process's stop request
 * for serve and simulate: a signal, or standard output gone.
 */
export async function main (argv: string[], io: Io = processIo, stop?: Stop): Promise<number> {
  const [command, ...rest] = argv
  try {
    if (command === undefined) {
      io.err(HELP)
      return EXIT_USAGE
    }
    if (command === '-h' || command === '--help' || command === 'help') {
      io.out(HELP)
      return EXIT_OK
    }
    if (command === '-v' || command === '--version') {
      io.out(version)
      return EXIT_OK
    }
    if (rest.includes('--help') || rest.includes('-h')) {
      if (command === 'simulate') return await simulate(rest, stop)
      if (COMMAND_HELP[command] === undefined) throw new UsageError(`unknown command '${command}'`)
      io.out(COMMAND_HELP[command])
      return EXIT_OK
    }
    switch (command) {
      case 'serve': {
        serveArguments(rest)
        for (const flag of serveV8Flags(process.execArgv)) setFlagsFromString(flag)
        const { serve } = await import('./server.js')
        await serve({ env: io.env, stop, signals: stop !== undefined })
        return KEEP_RUNNING
      }
      case 'db': return await dbCommand(rest, io)
      case 'user': return await userCommand(rest, io)
      case 'check-config': return await checkConfig(rest, io)
      case 'simulate': return await simulate(rest, stop)
      default: throw new UsageError(`unknown command '${command}'`)
    }
  } catch (err) {
    if (err instanceof StoppedError) {
      io.err(`picking-gateway: ${err.message}`)
      return err.code
    }
    if (err instanceof UsageError) {
      io.err(`picking-gateway: ${err.message}\nRun 'picking-gateway --help' for usage.`)
      return EXIT_USAGE
    }
    if (err instanceof ConfigError) {
      io.err(err.message)
      return EXIT_CONFIG
    }
    io.err(`picking-gateway: ${(err as Error).message ?? String(err)}`)
    // a table that does not fit the mapping is configuration too: systemd must not restart on it
    return err instanceof SchemaMismatchError ? EXIT_CONFIG : EXIT_FAILURE
  }
}

async function simulate (argv: string[], stop?: Stop): Promise<number> {
  const { runSimulateCommand } = await import('./hardware/simulate-cli.js')
  return await runSimulateCommand(argv, { stop })
}

/** The environment variable and the configuration key that set what someone may try as a serve option. */
const SERVE_SETTINGS: Record<string, [env: string, key: string | undefined]> = {
  port: ['PORT', 'server.port'],
  host: ['HOST', 'server.host'],
  config: ['PICKING_GATEWAY_CONFIG', undefined],
  database: ['DATABASE_URL', 'database.url'],
  'database-url': ['DATABASE_URL', 'database.url'],
  'log-level': ['LOG_LEVEL', 'logging.level']
}

/** serve takes neither options nor arguments: its configuration comes from the environment and the file. */
function serveArguments (argv: string[]): void {
  const [first, next] = argv
  if (first === undefined) return
  if (!first.startsWith('-') || first === '-') throw new UsageError(`unexpected argument '${first}': serve takes no arguments (see picking-gateway serve --help)`)
  const eq = first.indexOf('=')
  const name = (eq < 0 ? first : first.slice(0, eq)).replace(/^-+/, '')
  const value = eq >= 0 ? first.slice(eq + 1) : next !== undefined && !next.startsWith('-') ? next : '…'
  const setting = SERVE_SETTINGS[name.toLowerCase()]
  const hint = setting === undefined
    ? 'serve takes no options: its configuration comes from the environment and the configuration file, see picking-gateway serve --help'
    : `use ${setting[0]}=${value}${setting[1] === undefined ? '' : ` (environment) or ${setting[1]} (configuration file)`}`
  throw new UsageError(`Unknown option '${eq < 0 ? first : first.slice(0, eq)}' (${hint})`)
}

async function checkConfig (argv: string[], io: Io): Promise<number> {
  const { positionals } = parse(argv, {})
  if (positionals.length > 1) throw new UsageError('check-config takes at most one file')
  const env = positionals[0] ? { ...io.env, PICKING_GATEWAY_CONFIG: positionals[0] } : io.env
  const { config, source, demo }: LoadedConfig = loadConfig({ env })
  // what serve refuses when it builds the server: a certificate or key it cannot read or use
  const expired = config.server.tls === undefined ? undefined : tlsValidityWarning(config.server.tls.cert, readTls(config.server.tls).cert)
  if (expired !== undefined) io.err(`Warning: ${expired}`)
  const elsewhere = await hostWarning(config.server.host)
  if (elsewhere !== undefined) io.err(`Warning: ${elsewhere}`)
  // up to the last '@': a password's own '@' (not percent-encoded) is taken as the password's by the URL, and so by the connection
  const db = config.database.url.replace(/\/\/.*@/, '//<credentials>@')
  // the embedded demo runs its simulated controllers (one per two stations) when none are configured
  // an instance without the hardware has none of its controllers: "0 controller(s)" beside a list of them read as a lost list
  const listed = config.hardware.controllers.length
  const controllers = config.hardware.enabled
    ? `${demo && listed === 0 ? 2 : listed} controller(s)`
    : `hardware disabled${listed === 0 ? '' : ` (${listed} controller(s) configured, not connected by this instance)`}`
  // what serve refuses at start (exit 78), said the same way, and before the line that calls the
  // configuration OK: a missing SQLite file printed that line and then "Invalid configuration"
  const path = sqlitePath(config.database.url)
  const demoToCreate = path !== undefined && path !== ':memory:' && !existsSync(path) && demo
  const fileError = path === undefined || demoToCreate ? undefined : sqliteFileError(path, false)
  if (fileError !== undefined) {
    io.err(new ConfigError([fileError]).message)
    return EXIT_CONFIG
  }
  io.out(`Configuration file OK (${source}): database ${db}, listen ${config.server.host}:${config.server.port}` +
    `${config.server.tls ? ' (HTTPS)' : ''}, ${controllers}, licence ${config.licence.logins} login(s)`)
  if (demoToCreate) {
    io.out('Database: the embedded demo database is created on first start.')
    return EXIT_OK
  }
  return await checkDatabase(config, demo, io)
}

/**
 * An unavailable database's message with the driver's own reason, for the operator at the console:
 * "The database is unavailable" alone did not tell a host name that does not resolve from a refused
 * connection, a login the server refuses or a database that is not there. The API's 503 keeps the
 * short words; the service's log has the cause as well. A password is never in the driver's words
 * (the URL's credentials are not), and the text is cut to one line.
 */
export function withDriverReason (err: Error): string {
  const reasons: string[] = []
  const add = (text: string): void => {
    text = text.replace(/\s+/g, ' ').trim()
    // each wrapper repeats its cause's words: only what no earlier one said
    if (text !== '' && !err.message.includes(text) && !reasons.some((r) => r.includes(text))) reasons.push(text)
  }
  // mssql keeps tedious's error as originalError, tedious the socket's as cause
  const next = (e: Error): unknown => e.cause ?? (e as { originalError?: unknown }).originalError
  for (let cause = next(err); cause instanceof Error && reasons.length < 3; cause = next(cause)) {
    add(cause.message)
    // tedious tries each address of the name in turn: "Could not connect (sequence)" with each one's error inside
    if (cause instanceof AggregateError) add([...new Set(cause.errors.map((e: unknown) => e instanceof Error ? e.message : String(e)))].join('; '))
  }
  return reasons.length === 0 ? err.message : `${err.message}: ${reasons.join(': ')}`
}

/**
 * A listen address this machine does not have now: serve would fail to start (EADDRNOTAVAIL,
 * ENOTFOUND) and systemd would start it again until the address is there, as at boot before the
 * network is up. Only a warning: the address may be on its way (a VRRP address, an interface
 * configured later); the configuration itself is right.
 */
export async function hostWarning (host: string, interfaces = networkInterfaces(), resolve = lookup): Promise<string | undefined> {
  const set = `server.host (or HOST) ${host}`
  let addresses: string[]
  try {
    addresses = isIP(host) !== 0
      ? [host]
      : (await Promise.race([
          resolve(host, { all: true, verbatim: true }),
          new Promise<never>((_resolve, reject) => setTimeout(() => reject(Object.assign(new Error('no answer within 5 s'), { code: 'ETIMEOUT' })), 5000).unref())
        ])).map((a) => a.address)
  } catch (err) {
    return `${set} does not resolve here (${(err as NodeJS.ErrnoException).code ?? 'error'}): serve cannot listen until it does; set an address of this machine`
  }
  const own = new Set(Object.values(interfaces).flatMap((list) => (list ?? []).map((i) => i.address.toLowerCase())))
  const local = (address: string): boolean => {
    // an IPv4-mapped IPv6 address (::ffff:10.1.2.3) is listened on as its IPv4 address
    const plain = address.toLowerCase().replace(/%.*$/, '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '')
    // the whole of 127.0.0.0/8 is the loopback's, though it lists 127.0.0.1 alone (Debian names the machine 127.0.1.1)
    return plain === '0.0.0.0' || plain === '::' || own.has(plain) || (/^127\./.test(plain) && own.has('127.0.0.1'))
  }
  // serve listens on the first address the name resolves to (Node's listen looks it up once), not on any of them
  if (addresses.length > 0 && local(addresses[0])) return undefined
  return `${set}${addresses.length === 1 && addresses[0] === host ? '' : ` (${addresses.join(', ')}${addresses.length > 1 ? ': serve listens on the first' : ''})`} is no address of this machine's network interfaces now: serve cannot listen there (EADDRNOTAVAIL) until it is; use one of them, or 0.0.0.0 for all`
}

/**
 * The mapping against the database, when check-config can reach it: what `serve` would refuse
 * at start (a missing column, a type that does not fit, an unmapped NOT NULL column) is found here.
 */
async function checkDatabase (config: LoadedConfig['config'], demo: boolean, io: Io): Promise<number> {
  let database: Database
  try {
    // read-only: checking changes nothing, not even the SQLite file's journal mode
    database = await openDatabaseWaiting(config.database.url, {
      readonly: true,
      password: config.database.password,
      connectTimeoutMs: Math.min(config.database.connectTimeoutMs, 10000),
      requestTimeoutMs: config.database.requestTimeoutMs,
      logger: { info: () => {}, warn: () => {}, error: () => {} }
    })
  } catch (err) {
    io.out(`Database: cannot open it (${(err as Error).message}); mapping not checked.`)
    return EXIT_UNCHECKED
  }
  try {
    const mappings = mappingsOf(config)
    const { problems, columns } = await inspectStorage(database, mappings, { passwordHashLength: argon2HashLength(config.auth.argon2) })
    if (problems.length === 0) {
      io.out('Database: reachable; every mapped table and column fits.')
      const notes = [
        ...await numericTimeNotes(database, mappings, columns), ...await emptyModifiedNotes(database, mappings, columns), ...await textInNumberNotes(database, mappings, columns),
        ...await idRangeNotes(database, mappings, columns), ...await nullIdNotes(database, mappings, columns), ...await duplicateIdNotes(database, mappings, columns), ...await usernameNotes(database, mappings, columns.users), ...await passwordNotes(database, mappings, columns.users),
        ...newIdsNotes(database.dialect, mappings, columns), ...paddingNotes(database.dialect, mappings, columns), ...timeTextNotes(database.dialect, mappings, columns), ...apiDefaultNotes(database.dialect, mappings, columns), ...await foreignKeyNotes(database, mappings), ...await defaultsForeignKeyNotes(database, mappings), ...(demo ? [] : await controllerNotes(database, mappings, columns.stations, config.hardware)),
        ...await sharedAddressNotes(database, mappings, config.hardware), ...await licenceNotes(database, mappings, config.licence.logins),
        ...await clockNotes(database)
      ]
      for (const note of notes) io.out(`Note: ${note}`)
      return EXIT_OK
    }
    const advice = mismatchAdvice(problems)
    io.err(`The database does not match the configured mapping:\n${problems.map((p) => `  - ${p}`).join('\n')}${advice === undefined ? '' : `\n${advice}`}`)
    return EXIT_CONFIG
  } catch (err) {
    if (!(err instanceof DatabaseUnavailableError)) throw err
    io.out(`Database: not reachable (${withDriverReason(err)}); mapping not checked.`)
    // not 0: a deploy gated on check-config would pass a mapping nobody checked
    return EXIT_UNCHECKED
  } finally {
    await database.close()
  }
}

/**
 * check-config's closing advice for the problems found: db init only where a table is missing (it
 * creates missing tables and never alters one, so a missing column, a "pad" or "newIds" to remove
 * are nothing it helps with), db introspect where the mapping has to be made to fit the tables, and
 * nothing where every problem already says its fix (remove a setting, upgrade the server).
 */
export function mismatchAdvice (problems: string[]): string | undefined {
  const tables = problems.filter(isMissingTable).length
  if (tables > 0) {
    return `Create the missing table${tables === 1 ? '' : 's'} with 'picking-gateway db init' (it creates only tables that do not exist, and leaves them empty), ` +
      "or, where the picking system keeps the data in a table of its own, map that one: 'picking-gateway db introspect' proposes a mapping."
  }
  if (problems.every((p) => /; (?:remove|upgrade the server)\b[^;]*$/.test(p))) return undefined
  return "Run 'picking-gateway db introspect' for a proposed mapping of the tables and columns the database has."
}

/**
 * "newIds" where no create is made: a readOnly resource, or a SQLite view without an INSTEAD OF INSERT
 * trigger (its creates answer 405). Not a problem, the gateway works, but the setting was accepted
 * without a word, as if it numbered something.
 */
export function newIdsNotes (dialect: Database['dialect'], mappings: Record<ResourceName, TableMapping>, columns: Record<ResourceName, ColumnInfo[]>): string[] {
  const notes: string[] = []
  for (const { name, mapping, storage } of storagesOf(dialect, mappings, columns)) {
    if (mapping.newIds === undefined || storage.writes.includes('insert')) continue
    const why = storage.readOnly
      ? `mapping.${name} is "readOnly": true`
      : `'${mapping.table}' is a view without an INSTEAD OF INSERT trigger`
    notes.push(`${name}.newIds: ${why}, so the gateway creates no ${name} and numbers none: "newIds" does nothing there; remove it`)
  }
  return notes
}

/**
 * SQLite: the time fields whose column's stored times are ISO 8601 text with a T (ColumnInfo.isoTimeText),
 * which the gateway writes so too (FieldStorage.timeText), in place of CURRENT_TIMESTAMP's form: decided at start from the values.
 */
export function timeTextNotes (dialect: Database['dialect'], mappings: Record<ResourceName, TableMapping>, columns: Record<ResourceName, ColumnInfo[]>): string[] {
  if (dialect !== 'sqlite') return []
  const notes: string[] = []
  for (const { name, storage } of storagesOf(dialect, mappings, columns)) {
    for (const s of Object.values(storage.fields)) {
      // the form the column's times show (the format 'yyyy-mm-dd hh:mm:ss' has a blank for its T, and is the mapping's choice)
      const text = s.timeText
      if (text === undefined || text.sep !== 'T' || s.absent) continue
      const utc = text.zone === 'Z'
      const example = '2026-11-26T05:30:01.111'.slice(0, text.length) + text.zone + (text.length === 19 ? ', in whole seconds' : '')
      notes.push(`${name}.${s.field}: column '${s.column}' (${describeType(s.info!)}) is written as ${example}, as the times it holds are written (ISO 8601 with a T, ${utc ? 'in UTC with a Z' : 'no zone'}), not as SQLite's CURRENT_TIMESTAMP writes them`)
    }
  }
  return notes
}

/**
 * SQLite: how the gateway writes each field on a CHAR(n)/NCHAR(n) column (n > 1, or padded): padded
 * to n, as the picking system keeps its values there (and SQL Server would), or as sent. Decided at
 * start from the column's values (ColumnInfo.padsToWidth) unless the mapping's `pad` says.
 */
export function paddingNotes (dialect: Database['dialect'], mappings: Record<ResourceName, TableMapping>, columns: Record<ResourceName, ColumnInfo[]>): string[] {
  if (dialect !== 'sqlite') return []
  const notes: string[] = []
  for (const { name, mapping, storage } of storagesOf(dialect, mappings, columns)) {
    for (const s of Object.values(storage.fields)) {
      if (s.info === undefined || s.absent || !s.padded || s.info.maxLength === undefined || s.info.maxLength <= 0) continue
      // only text is padded (a field's own or a value map's codes): a time in digits or a number is written as it is
      if (s.def.kind !== 'string' && s.map === undefined) continue
      const col = `column '${s.column}' (${describeType(s.info)})`
      const configured = mapping.pads?.[s.field] !== undefined
      if (s.padsTo !== undefined) {
        notes.push(`${name}.${s.field}: ${col} is written padded with blanks to ${s.padsTo} characters, as SQL Server stores a char column's values (${configured ? 'the mapping\'s "pad": true' : 'every value it holds is padded so'})`)
      } else if (s.info.maxLength > 1) {
        notes.push(`${name}.${s.field}: ${col} is written as sent, without padding (${configured ? 'the mapping\'s "pad": false' : 'its values do not show it: not all are as long as the column is wide, or none ends in a blank'}); if the picking system pads its values there (SQL Server does), set "pad": true on the column's mapping`)
      }
    }
  }
  return notes
}

/**
 * An API default (resources.ts) that its field's column cannot take, where the column has no default of
 * its own: every create that leaves the field out is a 400 (unit "pcs" in a picking system's CHAR(2)
 * unit column), which nothing says before the first create.
 */
export function apiDefaultNotes (dialect: Database['dialect'], mappings: Record<ResourceName, TableMapping>, columns: Record<ResourceName, ColumnInfo[]>): string[] {
  const notes: string[] = []
  for (const { name, storage } of storagesOf(dialect, mappings, columns)) {
    if (storage.readOnly) continue
    for (const s of storage.apiDefaulted()) {
      const value = s.def.default!
      if (s.info === undefined) continue
      const refusal = storage.refusal(s, value)
      if (refusal === undefined) continue
      notes.push(`${name}.${s.field}: column '${s.column}' (${describeType(s.info)}) cannot take the API's default ${JSON.stringify(value)} (${refusal}): ` +
        `every create that gives no ${s.field} is a 400; give the column a default in the database, or ${s.map === undefined ? 'map the field with a value map' : 'add a code to the value map'} that writes the picking system's code for ${JSON.stringify(value)}`)
    }
  }
  return notes
}

/**
 * Stations wired to a controller id that hardware.controllers does not list (a typing error, a
 * controller not added yet): they stay offline and every command to them answers 409
 * CONTROLLER_NOT_CONFIGURED, which nothing says before the first command. Not for an instance with
 * hardware.enabled false, which drives no controllers by design, nor for the demo, which adds its own.
 */
export async function controllerNotes (db: Database, mappings: Record<ResourceName, TableMapping>, columns: ColumnInfo[], hardware: LoadedConfig['config']['hardware']): Promise<string[]> {
  const mapping = mappings.stations
  const column = catalogName(columns, mapping.columns.controllerId)
  if (!hardware.enabled || column === undefined) return []
  const d = dialectFor(db.dialect)
  let rows: Row[]
  try {
    // not GROUP BY: the column's collation would fold 'CTL-1' (and on SQL Server 'ctl-1 ') into ctl-1
    rows = await db.query({ text: `SELECT ${d.ident(column)} AS ${d.ident('controller')} FROM ${d.table(mapping)} WHERE ${d.ident(column)} IS NOT NULL`, params: [] })
  } catch {
    // best effort, as the other notes: a legacy text column SQL Server does not group
    return []
  }
  const configured = new Set(hardware.controllers.map((c) => c.id))
  // read as the API reads it (a value map's code as its id, a CHAR's padding gone, a varchar's
  // trailing spaces kept): a station command looks for the link by that exact id
  const storage = new ResourceStorage(db.dialect, resources.stations, mapping, columns)
  const field = storage.field('controllerId')
  const unknown = new Map<string, number>()
  for (const row of rows) {
    const id = storage.fromDb(field, row.controller)
    if (typeof id === 'string' && !configured.has(id)) unknown.set(id, (unknown.get(id) ?? 0) + 1)
  }
  if (unknown.size === 0) return []
  const stations = [...unknown.values()].reduce((sum, n) => sum + n, 0)
  // the ids most stations name first: those the note can show are the ones that matter most
  const names = [...unknown].sort(([a, m], [b, n]) => n - m || (a < b ? -1 : 1)).slice(0, 5).map(([id, n]) => `'${id}' (${n} station${n === 1 ? '' : 's'})`).join(', ')
  return [`stations.controllerId: ${stations} station${stations === 1 ? ' names a controller' : 's name controllers'} that hardware.controllers does not list (${names}${unknown.size > 5 ? ', …' : ''}): they stay offline and their commands answer 409 CONTROLLER_NOT_CONFIGURED; add the controller to hardware.controllers or correct the station's controllerId`]
}

/**
 * Controller addresses that several enabled stations share (rows the picking system keeps so, which
 * the API refuses to create): commands to them answer 409 STATION_ADDRESS_SHARED, and events there
 * name none of them, which nothing says before the first command. Read as the API reads the rows.
 */
export async function sharedAddressNotes (db: Database, mappings: Record<ResourceName, TableMapping>, hardware: LoadedConfig['config']['hardware']): Promise<string[]> {
  if (!hardware.enabled) return []
  let wired: Row[]
  try {
    const repo = await new Repository(db, resources.stations, mappings.stations).learn()
    const { fields } = repo.storage
    if (fields.controllerId.absent || fields.address.absent) return []
    const filters = [{ field: 'controllerId', op: 'notnull' as const, values: [] }, { field: 'address', op: 'notnull' as const, values: [] }]
    const { rows } = await repo.list({ limit: 10000, sort: [{ field: 'id', desc: false }], filters, count: false })
    // the stations commands reach, as the hardware plugin tells them
    wired = rows.filter((row) => stationInUse(row, fields.enabled.absent) && typeof row.controllerId === 'string' && typeof row.address === 'number')
  } catch {
    // best effort, as the other notes
    return []
  }
  const shared = grouped(wired, (row) => `${row.controllerId as string}\u0000${row.address as number}`).filter((rows) => rows.length > 1)
  if (shared.length === 0) return []
  const named = shared.slice(0, 5).map((rows) => `controllerId '${rows[0].controllerId as string}' address ${rows[0].address as number}: stations ${rows.slice(0, 5).map((row) => `${String(row.id)} (${JSON.stringify(row.name)})`).join(', ')}${rows.length > 5 ? ', …' : ''}`).join('; ')
  return [`stations.address: ${shared.length} controller address${shared.length === 1 ? ' is' : 'es are'} held by more than one enabled station (${named}${shared.length > 5 ? '; …' : ''}): commands to them answer 409 STATION_ADDRESS_SHARED and events there name none of them; give each station its own address, or disable the rows not in use`]
}

/**
 * More enabled user and application accounts than licence.logins: the licence is checked where an
 * account is created or enabled (API, user add, user enable, single sign-on), so rows the picking
 * system's own program enabled, or a licence lowered since, all go on logging in, which nothing said.
 */
/**
 * SQL Server: the database server's clock against this host's. The picking system's triggers stamp
 * rows with the server's; serve sets meta.serverTime back by as far as it is behind (README,
 * "Incremental sync"), and this says so before the first sync run does.
 */
export async function clockNotes (db: Pick<Database, 'clock'>, now: () => number = Date.now): Promise<string[]> {
  // only what the reading surely shows counts (a slow query is no clock)
  const reading = await readServerClock(db, now)
  if (reading === undefined) return []
  const behind = reading.behindAtLeast > 1000 ? reading.behindAtLeast : reading.behindAtMost < -1000 ? reading.behindAtMost : 0
  if (behind === 0) return []
  const by = `${(Math.abs(behind) / 1000).toFixed(1)} s`
  return [behind > 0
    ? `the database server's clock is ${by} behind this host's: serve sets meta.serverTime back by as much, so that incremental syncs miss no change the picking system stamps, and each run brings more rows again; set both clocks by NTP`
    : `the database server's clock is ${by} ahead of this host's: the picking system's stamps lie later than the gateway's own (nothing is missed by a sync); set both clocks by NTP`]
}

export async function licenceNotes (db: Database, mappings: Record<ResourceName, TableMapping>, logins: number): Promise<string[]> {
  let used: number
  try {
    used = await countLicensed(await new Repository(db, resources.users, mappings.users).learn())
  } catch {
    // best effort, as the other notes
    return []
  }
  if (used <= logins) return []
  return [`licence.logins: ${used} user and application accounts are enabled, but the licence allows ${logins}: the gateway checks the licence only when an account is created or enabled, so all of them can log in; disable ${used - logins} (picking-gateway user disable <name>, or {"enabled": false} through the API), or set licence.logins to the logins licensed`]
}

/**
 * Usernames a legacy user table holds twice in different case (JSmith and jsmith, under a
 * case-sensitive index): the gateway compares them without regard to case, so a login and
 * `user passwd` reach the one spelled as given, and any other spelling the one with the lower id.
 */
export async function usernameNotes (db: Database, mappings: Record<ResourceName, TableMapping>, columns: ColumnInfo[]): Promise<string[]> {
  const d = dialectFor(db.dialect)
  const mapping = mappings.users
  const column = catalogName(columns, mapping.columns.username)
  if (column === undefined) return []
  // as the gateway compares them: SQLite through unicode_fold (sqlite.ts), SQL Server regardless of case and trailing blanks
  const folded = db.dialect === 'sqlite' ? `unicode_fold(RTRIM(${d.ident(column)}, ' '))` : `UPPER(RTRIM(${d.ident(column)}))`
  let rows: Row[]
  try {
    rows = await db.query({ text: `SELECT MIN(${d.ident(column)}) AS ${d.ident('name')}, COUNT(*) AS ${d.ident('n')} FROM ${d.table(mapping)} GROUP BY ${folded} HAVING COUNT(*) > 1`, params: [] })
  } catch {
    // best effort: a legacy text column (which SQL Server does not group) or a table not there yet
    return []
  }
  if (rows.length === 0) return []
  const names = rows.slice(0, 5).map((r) => `'${String(r.name)}' (${Number(r.n)} rows)`).join(', ')
  return [`users.username: ${rows.length} name${rows.length === 1 ? ' is' : 's are'} held more than once in different case or with trailing blanks (${names}${rows.length > 5 ? ', …' : ''}): the gateway compares usernames without regard to case or trailing blanks, so a login and user passwd reach the row spelled exactly as given, and any other spelling the row with the lower id; rename the others in the picking system`]
}

/**
 * Users whose password column holds no hash the gateway can check: the picking system's own (MD5,
 * SHA-1, bcrypt, plain text) or none. They cannot log in through the gateway (the same 401 as a wrong
 * password) until a password is set through it, which replaces the picking system's value.
 */
export async function passwordNotes (db: Database, mappings: Record<ResourceName, TableMapping>, columns: ColumnInfo[]): Promise<string[]> {
  const d = dialectFor(db.dialect)
  const mapping = mappings.users
  const hash = catalogName(columns, mapping.columns.passwordHash)
  const name = catalogName(columns, mapping.columns.username)
  if (hash === undefined || name === undefined) return []
  // verify() checks argon2 hashes; the single sign-on marker is no password either, and no note
  const where = `WHERE ${d.ident(hash)} IS NULL OR (${d.ident(hash)} NOT LIKE '$argon2%' AND ${d.ident(hash)} NOT LIKE '${SSO_MARKER_PREFIX}%')`
  let count: number
  let names: string[]
  try {
    const [row] = await db.query({ text: `SELECT COUNT(*) AS ${d.ident('n')} FROM ${d.table(mapping)} ${where}`, params: [] })
    count = Number(row?.n ?? 0)
    if (count === 0) return []
    names = (await db.query({
      text: `SELECT ${d.ident(name)} AS ${d.ident('name')} FROM ${d.table(mapping)} ${where} ORDER BY ${d.ident(name)} ${d.paging('limit', 'offset')}`,
      params: [{ name: 'limit', kind: 'integer', value: 5 }, { name: 'offset', kind: 'integer', value: 0 }]
    })).map((r) => `'${String(r.name)}'`)
  } catch {
    // best effort, as the other notes: a legacy column type LIKE does not take
    return []
  }
  return [`users.passwordHash: ${count} user${count === 1 ? ' has' : 's have'} no password the gateway can check (${names.join(', ')}${count > 5 ? ', …' : ''}): the column holds none, or the picking system's own hash or plain text, and the gateway checks only the argon2id hashes it writes. ${count === 1 ? 'It' : 'They'} cannot log in through the gateway until a password is set through it (picking-gateway user passwd <name>), which replaces the value the picking system's own login reads`]
}

/**
 * Numeric ids beyond 2^53 - 1 in magnitude: JSON numbers do not hold them exactly, so the API shows
 * them rounded and a path cannot name them (walks by meta.next keep the exact value in the cursor).
 * On SQLite also ids that are not whole numbers. `columns`: every mapped table's, as inspectStorage read them.
 */
export async function idRangeNotes (db: Database, mappings: Record<ResourceName, TableMapping>, columns: Record<ResourceName, ColumnInfo[]>): Promise<string[]> {
  const notes: string[] = []
  const d = dialectFor(db.dialect)
  const rows = (n: number, what: string): string => `${n} row${n === 1 ? ` has an id ${what}` : `s have ids ${what.replace(' is ', ' are ').replace(' a whole number', ' whole numbers')}`}`
  const them = (n: number): string => n === 1 ? 'it' : 'them'
  for (const { name, mapping, info } of idColumns(mappings, columns)) {
    const category = info === undefined ? undefined : categoryOf(db.dialect, info, 'integer')
    // SQLite's key columns of another type (NUMERIC) may hold fractions or text another program left
    const odd = db.dialect === 'sqlite' && (category === 'decimal' || category === 'float' || category === 'integer')
    // SQL Server's int, smallint and tinyint hold nothing beyond 2^53; a decimal(p,0) or numeric(p,0) of 16 digits or more does
    // (a numeric(18,0) identity), but the driver reads it as a double: its cursors are not exact either
    const decimalKey = db.dialect === 'mssql' && category === 'decimal' && (info!.scale ?? 0) === 0 && (info!.precision ?? 18) > 15
    const wide = decimalKey || (category === 'integer' && (db.dialect === 'sqlite' || info!.type.toLowerCase() === 'bigint'))
    if (info === undefined || (!odd && !wide)) continue
    // as the catalog spells it: under a case-sensitive collation another spelling is error 207, which ended check-config
    const c = d.ident(info.name)
    const count = (condition: string): string => `SUM(CASE WHEN ${condition} THEN 1 ELSE 0 END)`
    const beyond = `${c} > ${Number.MAX_SAFE_INTEGER} OR ${c} < -${Number.MAX_SAFE_INTEGER}`
    const [row] = await db.query({
      // SQLite orders every text and BLOB above every number: only numbers count as beyond 2^53 (text is an odd id below)
      text: `SELECT ${count(!wide ? '1 = 0' : db.dialect === 'sqlite' ? `typeof(${c}) IN ('integer', 'real') AND (${beyond})` : beyond)} AS ${d.ident('wide')}, ` +
        `${count(odd ? `typeof(${c}) NOT IN ('integer', 'null') AND NOT (typeof(${c}) = 'real' AND ${c} = CAST(${c} AS INTEGER))` : '1 = 0')} AS ${d.ident('odd')} FROM ${d.table(mapping)}`,
      params: []
    })
    const n = Number(row?.wide ?? 0)
    if (n > 0 && decimalKey) notes.push(`${name}.id: ${rows(n, 'beyond 9007199254740991 in magnitude')}, which JSON numbers do not hold exactly: the API shows ${them(n)} rounded and a path cannot name ${them(n)}; the driver reads a ${info!.type.toLowerCase()} column as a double, so a list cursor does not keep ${them(n)} exact either, and a walk by meta.next sorted by id may return ${n === 1 ? 'it' : 'each'} more than once or skip rows next to ${them(n)} (a bigint column keeps such ids exact in cursors; README, "Tokens and errors")`)
    else if (n > 0) notes.push(`${name}.id: ${rows(n, 'beyond 9007199254740991 in magnitude')}, which JSON numbers do not hold exactly: the API shows ${them(n)} rounded (a walk by meta.next still returns ${them(n)} once), and a path cannot name ${them(n)} (README, "Tokens and errors")`)
    const m = Number(row?.odd ?? 0)
    // a REAL or NUMERIC key: lists leave such rows out (SqlBuilder.keyed); in an INTEGER one they show as 0
    const shown = category === 'integer' ? `${m === 1 ? 'it is' : 'they are'} shown with the id 0, which ${m === 1 ? 'it does' : 'they do'} not have` : `the API does not list ${them(m)}`
    if (m > 0) notes.push(`${name}.id: ${rows(m, 'that is not a whole number (2.5, text)')}: the API's ids are whole numbers, so ${shown}, and no path names ${them(m)}; give ${m === 1 ? 'it a whole-number id' : 'them whole-number ids'} in the picking system`)
  }
  return notes
}

/**
 * SQLite: time columns where other programs stored numbers (Unix time, 20240101). The API shows
 * their time, but SQLite's strftime, which filters and sorting compare, does not read them: an
 * incremental sync by modifiedSince would miss those rows. Julian days (julianday(), storage.ts
 * isJulianDay) are left out: strftime reads them as the API shows them. Text strftime does not read
 * ('02.04.2024 10:00', ''), which the API shows as null, is counted apart: no filter finds it either; so are
 * digits of no real date ('20240230', '20241301'), which the reads do not take for one (compactTime) and show as null.
 */
async function numericTimeNotes (db: Database, mappings: Record<ResourceName, TableMapping>, columns: Record<ResourceName, ColumnInfo[]>): Promise<string[]> {
  if (db.dialect !== 'sqlite') return []
  const notes: string[] = []
  const d = dialectFor('sqlite')
  for (const [name, mapping] of Object.entries(mappings) as Array<[ResourceName, TableMapping]>) {
    for (const [field, def] of Object.entries(resources[name].fields)) {
      const column = mapping.columns[field]
      if (def.kind !== 'datetime' || column === undefined) continue
      const c = d.ident(column)
      // a column mapped with a format keeps its time as a number on purpose, and is compared as one; but values
      // the reads take for no time in it (20240230, 20241301, text that is no number) show as null, while filters compare them as numbers
      const format = mapping.timeFormats?.[field]
      // 'yyyy-mm-dd hh:mm:ss' is read as a column without a format is: the same rows are no time to its filters
      if (format !== undefined && format !== 'yyyy-mm-dd hh:mm:ss') {
        if (format === 'julianday') continue
        // not the legacy "no date" of a digit format (0, blanks), which emptyModifiedNotes counts with NULL
        const noDate = format === 'yyyymmdd' || format === 'yyyymmddhhmmss' ? ` AND trim(${c}) NOT IN ('', '0', '00000000', '00000000000000')` : ''
        const bad = `${c} IS NOT NULL AND formatted_time(${c}, '${format}') = 0${noDate}`
        const [row] = await db.query({ text: `SELECT COUNT(*) AS n, MIN(${c}) AS example FROM ${d.table(mapping)} WHERE ${bad}`, params: [] })
        const n = Number(row?.n ?? 0)
        if (n > 0) notes.push(`${name}.${field}: ${n} row${n === 1 ? ' holds' : 's hold'} a value that is no time in the format ${format} (such as ${JSON.stringify(String(row?.example).slice(0, 40))}, no real date or no number): the API shows null, but the time filters on ${field} compare the stored ${format === 'unix' || format === 'unix-ms' ? 'value' : 'digits'} and may find ${n === 1 ? 'it' : 'them'} (${field}=[null] does not); correct or clear these values in the picking system (README, "Values the declared type does not bind")`)
        continue
      }
      // text of date digits ('20240101', '20240402120530') reads as that date too, and strftime does not read it either
      const digitText = `(typeof(${c}) = 'text' AND (rtrim(${c}) GLOB '${'[0-9]'.repeat(8)}' OR rtrim(${c}) GLOB '${'[0-9]'.repeat(14)}'))`
      // but only a real date ('20240230120000', '20241301' are none): the reads' own rule (compactTime, the SQL function compact_time)
      const digits = `(${digitText} AND compact_time(${c}) = 1)`
      // text strftime does not read at all ('02.04.2024 10:00', ''), and digits of no real date: shown as null, and no filter finds it either
      const unreadable = `(typeof(${c}) = 'text' AND NOT ${digits} AND (strftime('%Y-%m-%dT%H:%M:%fZ', ${c}) IS NULL OR ${digitText}))`
      // a number shaped as date digits that is no real date (20240230120000): shown as null, not as Unix time, and no filter finds it
      const broken = `broken_compact_time(${c}) = 1`
      // text of whole seconds, as CURRENT_TIMESTAMP writes it ('2026-11-28 03:29:26'), where the gateway writes milliseconds
      const seconds = `(typeof(${c}) = 'text' AND ${c} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]')`
      const [row] = await db.query({
        text: `SELECT SUM(CASE WHEN (typeof(${c}) IN ('integer', 'real') AND NOT (${c} >= 1721425.5 AND ${c} < 5373484.5) AND NOT ${broken}) OR ${digits} THEN 1 ELSE 0 END) AS n, ` +
          `SUM(CASE WHEN ${seconds} THEN 1 ELSE 0 END) AS s, COUNT(${c}) AS "held", ` +
          `SUM(CASE WHEN ${unreadable} THEN 1 ELSE 0 END) AS u, MAX(CASE WHEN ${unreadable} THEN ${c} END) AS example, ` +
          `SUM(CASE WHEN ${broken} THEN 1 ELSE 0 END) AS b, MIN(CASE WHEN ${broken} THEN ${c} END) AS "brokenExample" FROM ${d.table(mapping)}`,
        params: []
      })
      const b = Number(row?.b ?? 0)
      if (b > 0) notes.push(`${name}.${field}: ${b} row${b === 1 ? ' holds' : 's hold'} a number shaped as date digits that is no real date (such as ${String(row?.brokenExample)}): the API shows null (not Unix time), and ${field === 'modifiedAt' ? 'modifiedSince and ' : ''}the time filters on ${field} never find ${b === 1 ? 'it' : 'them'}; correct or clear these values in the picking system (README, "Values the declared type does not bind")`)
      const u = Number(row?.u ?? 0)
      if (u > 0) notes.push(`${name}.${field}: ${u} row${u === 1 ? ' holds' : 's hold'} text that is no time SQLite reads (such as ${JSON.stringify(String(row?.example).slice(0, 40))}): the API shows null, and ${field === 'modifiedAt' ? 'modifiedSince and ' : ''}the time filters on ${field} never find ${u === 1 ? 'it' : 'them'} (sorting puts ${u === 1 ? 'it' : 'them'} with the rows without a time)${field === 'modifiedAt' ? `, so an incremental sync misses ${u === 1 ? 'it' : 'them'}` : ''}; have the picking system write ISO 8601 text, and correct or clear these values (README, "Values the declared type does not bind")`)
      const n = Number(row?.n ?? 0)
      // a column without a declared type takes no format (its numbers and text compare in no one order): serve would refuse it
      const info = columnNamed(columns[name], column)
      const formattable = info !== undefined && !sqliteUntyped(info.type.toLowerCase())
      const remedy = formattable ? 'where the column holds nothing else, map it with "format": "unix" (or the format its digits show); otherwise ' : ''
      if (n > 0) notes.push(`${name}.${field}: ${n} row${n === 1 ? ' holds its' : 's hold their'} time as a number or as digits (Unix time, YYYYMMDD): the API shows it, but modifiedSince, the other time filters and sorting by it do not see it; ${remedy}have the picking system write ISO 8601 text, or convert the column once (README, "Values the declared type does not bind")`)
      // every time the column holds is in the picking system's form, where the gateway would write its milliseconds
      const s = Number(row?.s ?? 0)
      if (format === undefined && s > 0 && s === Number(row?.held ?? 0)) notes.push(`${name}.${field}: column '${column}' holds ${s === 1 ? 'its time' : `all ${s} of its times`} as text of whole seconds, 'YYYY-MM-DD HH:MM:SS' (as SQLite's CURRENT_TIMESTAMP writes them), where the gateway writes milliseconds ('2026-11-28 03:29:26.262'); if a program of the picking system reads that form alone, map the field with "format": "yyyy-mm-dd hh:mm:ss" (README, "Day one: mapping the gateway onto the picking system's tables")`)
    }
  }
  return notes
}

/** Each resource's mapping and its storage (as the repository would build it), for the notes that read the fields. */
function storagesOf (dialect: Database['dialect'], mappings: Record<ResourceName, TableMapping>, columns: Record<ResourceName, ColumnInfo[]>): Array<{ name: ResourceName, mapping: TableMapping, storage: ResourceStorage }> {
  return (Object.keys(resources) as ResourceName[]).map((name) => ({ name, mapping: mappings[name], storage: new ResourceStorage(dialect, resources[name], mappings[name], columns[name]) }))
}

/** Each mapped table with the column its id is mapped to, as the database declares it (undefined: not found). */
function idColumns (mappings: Record<ResourceName, TableMapping>, columns: Record<ResourceName, ColumnInfo[]>): Array<{ name: ResourceName, mapping: TableMapping, info: ColumnInfo | undefined }> {
  return (Object.entries(mappings) as Array<[ResourceName, TableMapping]>).map(([name, mapping]) => {
    const column = mapping.columns[idField(resources[name])]
    return { name, mapping, info: column === undefined ? undefined : columnNamed(columns[name], column) }
  })
}

/**
 * Rows without an id, where the id column may hold NULL (a nullable unique column; on SQLite a key not
 * declared NOT NULL, ColumnInfo.nullKey): lists leave them out, as no id shows or names them.
 * `columns`: every mapped table's, as inspectStorage read them.
 */
async function nullIdNotes (db: Database, mappings: Record<ResourceName, TableMapping>, columns: Record<ResourceName, ColumnInfo[]>): Promise<string[]> {
  const notes: string[] = []
  const d = dialectFor(db.dialect)
  for (const { name, mapping, info } of idColumns(mappings, columns)) {
    if (info === undefined || (!info.nullable && info.nullKey !== true)) continue
    const [row] = await db.query({ text: `SELECT COUNT(*) AS ${d.ident('n')} FROM ${d.table(mapping)} WHERE ${d.ident(info.name)} IS NULL`, params: [] })
    const n = Number(row?.n ?? 0)
    if (n > 0) notes.push(`${name}.id: ${n} row${n === 1 ? ' has' : 's have'} no id (NULL in column '${info.name}'): the API does not list ${n === 1 ? 'it' : 'them'}, as no id could show or name ${n === 1 ? 'it' : 'them'}; give ${n === 1 ? 'it a key' : 'them keys'} in the picking system (README, "Day one: mapping")`)
  }
  return notes
}

/**
 * Ids several rows hold, where the id column has no unique index of its own (one column of a composite
 * key: ArtNr of (Mandant, ArtNr)): a read, update or delete of such an id is a 409.
 * `columns`: every mapped table's, as inspectStorage read them.
 */
async function duplicateIdNotes (db: Database, mappings: Record<ResourceName, TableMapping>, columns: Record<ResourceName, ColumnInfo[]>): Promise<string[]> {
  const notes: string[] = []
  const d = dialectFor(db.dialect)
  for (const { name, mapping, info } of idColumns(mappings, columns)) {
    if (info === undefined || info.unique === true) continue
    const c = d.ident(info.name)
    let rows: Row[]
    try {
      rows = await db.query({ text: `SELECT MIN(${c}) AS ${d.ident('id')}, COUNT(*) AS ${d.ident('n')} FROM ${d.table(mapping)} WHERE ${c} IS NOT NULL GROUP BY ${c} HAVING COUNT(*) > 1`, params: [] })
    } catch {
      // best effort: a legacy text column, which SQL Server does not group
      continue
    }
    if (rows.length === 0) continue
    // as the API shows them: a char column's id without its padding ('100200      ' is 100200)
    const shown = (id: unknown): unknown => isFixedWidthText(info.type) && typeof id === 'string' ? id.trimEnd() : id
    const ids = rows.slice(0, 5).map((r) => `${JSON.stringify(shown(r.id))} (${Number(r.n)} rows)`).join(', ')
    notes.push(`${name}.id: ${rows.length} id${rows.length === 1 ? ' is' : 's are'} held by more than one row in column '${info.name}', which is not unique by itself (${ids}${rows.length > 5 ? ', …' : ''}): a read, update or delete of such an id is a 409 that shows and changes none of them; map id to a column that is unique by itself (README, "Day one: mapping")`)
  }
  return notes
}

/**
 * SQLite: rows whose number column (a declared number type: INTEGER, REAL, NUMERIC, DECIMAL) holds text its
 * affinity could not make a number of ('12,500', 'n/a'): the API shows null there, but filters and sorting
 * compare the stored text, so [null] does not find such a row and [gt]17.5 does. A column without a declared
 * type is left out: its filters read its text as the API does (SqlBuilder's number_text), so they agree.
 * `columns`: as inspectStorage read them.
 */
async function textInNumberNotes (db: Database, mappings: Record<ResourceName, TableMapping>, columns: Record<ResourceName, ColumnInfo[]>): Promise<string[]> {
  if (db.dialect !== 'sqlite') return []
  const notes: string[] = []
  const d = dialectFor('sqlite')
  for (const [name, mapping] of Object.entries(mappings) as Array<[ResourceName, TableMapping]>) {
    for (const [field, def] of Object.entries(resources[name].fields)) {
      const info = mapping.columns[field] === undefined ? undefined : columnNamed(columns[name], mapping.columns[field])
      // an id's text is idRangeNotes' (the API shows it as the id 0, not null)
      if ((def.kind !== 'number' && def.kind !== 'integer') || def.id === true || info === undefined || mapping.values?.[field] !== undefined) continue
      if (sqliteUntyped(info.type.toLowerCase()) || !['integer', 'float', 'decimal'].includes(categoryOf('sqlite', info, def.kind))) continue
      const c = d.ident(info.name)
      const [row] = await db.query({ text: `SELECT SUM(CASE WHEN typeof(${c}) IN ('text', 'blob') THEN 1 ELSE 0 END) AS n, MAX(CASE WHEN typeof(${c}) = 'text' THEN ${c} END) AS example FROM ${d.table(mapping)}`, params: [] })
      const n = Number(row?.n ?? 0)
      if (n > 0) notes.push(`${name}.${field}: ${n} row${n === 1 ? ' holds' : 's hold'} text that is no number in column '${info.name}' (${info.type.toLowerCase()})${row?.example === null || row?.example === undefined ? '' : `, such as ${JSON.stringify(String(row.example).slice(0, 40))}`}: the API shows null, but filters and sorting compare the stored text (${field}=[null] does not find ${n === 1 ? 'it' : 'them'}, [gt] may); have the picking system write numbers, and correct these values (README, "Values the declared type does not bind")`)
    }
  }
  return notes
}

/**
 * A mapped column as the table's catalog spells it (columnNamed): a database with a case-sensitive
 * collation refuses another spelling (error 207). The mapping's own spelling where the catalog has none.
 */
function catalogName (columns: readonly ColumnInfo[], column: string | undefined): string | undefined {
  return column === undefined ? undefined : columnNamed(columns, column)?.name ?? column
}

/** Rows in groups by a key, in the order the keys first come (Object.groupBy is Node 21's). */
function grouped (rows: Row[], key: (row: Row) => string): Row[][] {
  const groups = new Map<string, Row[]>()
  for (const row of rows) groups.set(key(row), [...groups.get(key(row)) ?? [], row])
  return [...groups.values()]
}

/**
 * SQLite: foreign keys that refer to a mapped table's columns which no unique index covers (nor its
 * primary key). The picking system may run without foreign keys and never meet them; the gateway
 * runs with them on, and then every create, delete and key change of that table fails (503).
 */
async function foreignKeyNotes (db: Database, mappings: Record<ResourceName, TableMapping>): Promise<string[]> {
  if (db.dialect !== 'sqlite') return []
  const notes: string[] = []
  for (const [name, mapping] of Object.entries(mappings) as Array<[ResourceName, TableMapping]>) {
    const table = { name: 'table', kind: 'string' as const, value: mapping.table }
    const keys = await db.query(foreignKeysTo(mapping.table))
    if (keys.length === 0) continue
    const primary = (await db.query({ text: 'SELECT name AS col FROM pragma_table_info(@table) WHERE pk > 0 ORDER BY pk', params: [table] })).map((r) => String(r.col).toLowerCase())
    const indexed = await db.query({
      text: 'SELECT il.name AS ix, ii.name AS col FROM pragma_index_list(@table) AS il JOIN pragma_index_info(il.name) AS ii WHERE il."unique" = 1 AND il.partial = 0',
      params: [table]
    })
    const unique = [primary.slice().sort().join(','), ...grouped(indexed, (r) => String(r.ix)).map((rows) => rows.map((r) => String(r.col).toLowerCase()).sort().join(','))]
    for (const rows of grouped(keys, (r) => `${String(r.child)}\u0000${String(r.id)}`)) {
      // no "to": the parent's primary key
      const named = rows.every((r) => r.col === null) ? primary : rows.map((r) => String(r.col))
      const cols = named.map((c) => c.toLowerCase())
      if (cols.length > 0 && unique.includes(cols.slice().sort().join(','))) continue
      notes.push(`${name}: table '${String(rows[0].child)}' declares a foreign key to '${mapping.table}'${named.length > 0 ? ` (${named.join(', ')})` : ''} that SQLite cannot check, as no unique index covers those columns: the gateway runs with foreign keys on, and every create and delete of ${name}, and every change of those columns, answers 503 until the key is fixed (a unique index on the columns, or the key dropped)`)
    }
  }
  return notes
}

/**
 * SQLite: mapping.defaults values that a foreign key of the table's (of their columns alone) finds in no row of
 * the table it refers to: every create would answer 503 until the default is corrected or the row added. A note,
 * not a problem: the parent table is data, and the row may be added before the first create.
 */
async function defaultsForeignKeyNotes (db: Database, mappings: Record<ResourceName, TableMapping>): Promise<string[]> {
  if (db.dialect !== 'sqlite') return []
  const notes: string[] = []
  const d = dialectFor('sqlite')
  for (const [name, mapping] of Object.entries(mappings) as Array<[ResourceName, TableMapping]>) {
    const defaults = Object.entries(mapping.defaults ?? {})
    if (defaults.length === 0 || mapping.readOnly === true) continue
    const valueOf = (column: string) => defaults.find(([c]) => c.toLowerCase() === column.toLowerCase())?.[1]
    const keys = await db.query({ text: 'SELECT "id" AS id, "table" AS parent, "from" AS c, "to" AS t FROM pragma_foreign_key_list(@table) ORDER BY "id", "seq"', params: [{ name: 'table', kind: 'string', value: mapping.table }] })
    for (const key of grouped(keys, (r) => String(r.id))) {
      const values = key.map((k) => valueOf(String(k.c)))
      if (values.some((v) => v === undefined)) continue
      const parent = String(key[0].parent)
      const named = key.map((k, i) => `'${String(k.c)}' ${JSON.stringify(values[i])}`).join(', ')
      // SQLite takes a key to a table it does not have (and fails every insert that checks it)
      const [table] = await db.query({ text: "SELECT name AS n FROM sqlite_schema WHERE type IN ('table', 'view') AND name = @parent COLLATE NOCASE", params: [{ name: 'parent', kind: 'string', value: parent }] })
      if (table === undefined) {
        notes.push(`${name}.defaults: ${named} is checked by a foreign key against table '${parent}', which the database does not have: every create of ${name} fails until that table is there (or the key is dropped)`)
        continue
      }
      // no "to": the parent's primary key
      const to = key.some((k) => k.t === null)
        ? (await db.query({ text: 'SELECT name AS n FROM pragma_table_info(@parent) WHERE pk > 0 ORDER BY pk', params: [{ name: 'parent', kind: 'string', value: parent }] })).map((r) => String(r.n))
        : key.map((k) => String(k.t))
      if (to.length !== key.length) continue
      const where = to.map((t, i) => `${d.ident(t)} = @v${i}`).join(' AND ')
      const found = await db.query({ text: `SELECT 1 AS x FROM ${d.ident(parent)} WHERE ${where} LIMIT 1`, params: values.map((v, i) => ({ name: `v${i}`, kind: 'string' as const, value: typeof v === 'boolean' ? (v ? 1 : 0) : v! })) })
      if (found.length > 0) continue
      notes.push(`${name}.defaults: ${named} refers to no row of table '${parent}' (its foreign key): every create of ${name} answers 503 until the default is corrected or the row added`)
    }
  }
  return notes
}

/**
 * Rows whose modified-time column holds no time (NULL): many picking systems leave it empty until a
 * row is first changed. No time filter finds them, not even modifiedSince=1970-01-01, so an
 * incremental sync that starts there never sees them. `columns`: as inspectStorage read them.
 */
async function emptyModifiedNotes (db: Database, mappings: Record<ResourceName, TableMapping>, columns: Record<ResourceName, ColumnInfo[]>): Promise<string[]> {
  const notes: string[] = []
  const d = dialectFor(db.dialect)
  for (const [name, mapping] of Object.entries(mappings) as Array<[ResourceName, TableMapping]>) {
    const column = mapping.columns.modifiedAt
    const info = column === undefined ? undefined : columnNamed(columns[name], column)
    // a digit format's legacy "no date" (0, blanks) reads as null too, and is compared as the number it is: below every time
    const format = mapping.timeFormats?.modifiedAt
    const digits = format === 'yyyymmdd' || format === 'yyyymmddhhmmss'
    if (column === undefined || info === undefined || (!info.nullable && !digits)) continue
    const c = d.ident(info.name)
    const text = ['text', 'ntext'].includes(categoryOf(db.dialect, info, 'datetime'))
    const noDate = !digits ? '' : text ? ` OR RTRIM(LTRIM(${c})) IN ('', '0', '00000000', '00000000000000')` : ` OR ${c} = 0`
    const [row] = await db.query({ text: `SELECT COUNT(*) AS ${d.ident('n')} FROM ${d.table(mapping)} WHERE ${c} IS NULL${noDate}`, params: [] })
    const n = Number(row?.n ?? 0)
    if (n > 0) {
      notes.push(`${name}.modifiedAt: ${n} row${n === 1 ? ' has' : 's have'} no time in column '${info.name}' (NULL${digits ? `, or 0 or blank, which "format": "${format}" reads as no date` : ''}): modifiedSince and the other time filters never find ${n === 1 ? 'it' : 'them'}, not even modifiedSince=1970-01-01T00:00:00Z, so an incremental sync started that way misses ${n === 1 ? 'it' : 'them'}; make a sync's first run a walk without modifiedSince, or have the picking system fill the column (README, "Incremental sync")`)
    }
  }
  return notes
}

/** One-shot commands report the database's state to the terminal; driver errors carry no secrets. */
function consoleLogger (io: Io): DbLogger {
  // a one-shot command does not wait for the pool's retries: it fails with the first error, so it does not say it retries
  const line = (obj: object, msg?: string) => io.err(`${(msg ?? '').replace(/; retrying( in the background)?$/, '')}${(obj as { err?: Error }).err ? `: ${(obj as { err: Error }).err.message}` : ''}`)
  return { info: () => {}, warn: line, error: line }
}

/**
 * Runs fn on the configured database. 'existing': a SQLite file that is not there is an error
 * saying how to make it, not a new empty database (user commands need db init's table); 'read': the
 * same, opened read-only; 'readonly': read-only, whatever is at the path.
 * `secretNeeded` false: the configuration may lack a JWT secret (LoadOptions.secretNeeded).
 */
async function withDatabase<T> (io: Io, fn: (db: Database, loaded: LoadedConfig, mappings: Record<ResourceName, TableMapping>) => Promise<T>, access: 'create' | 'existing' | 'read' | 'readonly' = 'create', secretNeeded = true): Promise<T> {
  const loaded = loadConfig({ env: io.env, secretNeeded })
  const { config } = loaded
  const mappings = mappingsOf(config)
  const path = sqlitePath(config.database.url)
  const file = path === undefined || path === ':memory:' ? undefined : path
  // the demo's data directory was made with its secret, which a command needing none does not make: db init
  // makes it as the demo does, its own user's alone (demoSecret), for the database that keeps password hashes
  if (loaded.demo && access === 'create' && file !== undefined) mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  const exists = file === undefined || existsSync(file)
  // a path that holds no SQLite database (a directory, another file) is a configuration error (78), as serve and
  // check-config say: every command refuses it alike (before: exit 1 from the user and db commands)
  const fileError = file === undefined || !exists ? undefined : sqliteFileError(file, false)
  if (fileError !== undefined) throw new ConfigError([fileError])
  // a file that is not there is said as such, and no empty database is left behind; for db introspect, which
  // needs no table of db init's, a mistyped path in the configuration, as serve and check-config say (before: exit 1)
  if (!exists && access === 'readonly' && !loaded.demo) throw new ConfigError([sqliteFileError(file!, false)!])
  if (!exists && (access === 'existing' || access === 'read' || access === 'readonly')) {
    throw new Error(loaded.demo
      ? 'no configuration (PICKING_GATEWAY_CONFIG) and the embedded demo database is not set up yet: start the demo once (npm start), or point PICKING_GATEWAY_CONFIG at the configuration'
      : `the database '${file!}' does not exist: create it with 'picking-gateway db init'`)
  }
  const db = await openDatabaseWaiting(config.database.url, {
    create: access === 'create' || access === 'existing',
    readonly: access === 'readonly' || access === 'read',
    password: config.database.password,
    connectTimeoutMs: config.database.connectTimeoutMs,
    requestTimeoutMs: config.database.requestTimeoutMs,
    logger: consoleLogger(io)
  })
  try {
    return await fn(db, loaded, mappings)
  } finally {
    await db.close()
  }
}

async function dbCommand (argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(argv, { demo: { type: 'boolean' }, json: { type: 'boolean' } })
  const [action, ...extra] = positionals
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`)
  if (action === 'init' && values.json === undefined) return await dbInit(values, io)
  if (action === 'introspect' && values.demo === undefined) return await dbIntrospect(values.json === true, io)
  throw new UsageError("expected 'db init [--demo]' or 'db introspect [--json]'")
}

async function dbIntrospect (json: boolean, io: Io): Promise<number> {
  // read-only: a mistyped SQLite path must fail, not come back as an empty database, and
  // introspecting changes nothing (not the journal mode either) and needs no write permission;
  // it signs no token, so a first look at a database needs no JWT secret yet (one given is still checked)
  return await withDatabase(io, async (db, _loaded, mappings) => {
    const result = await introspect(db, mappings)
    const config = JSON.stringify(mappingConfig(result), null, 2)
    if (json) {
      io.out(config)
      return EXIT_OK
    }
    for (const line of formatReport(result)) io.out(line)
    io.out('')
    io.out('Proposed mapping (paste into the configuration file; check every line above first):')
    io.out(config)
    return EXIT_OK
  }, 'readonly', false)
}

async function dbInit (values: Parsed['values'], io: Io): Promise<number> {
  // a value the admin's password cannot be: a configuration error, with no database made for it
  const refused = adminPasswordProblem(io.env.PICKING_GATEWAY_ADMIN_PASSWORD)
  if (refused !== undefined) throw new ConfigError([refused])
  return await withDatabase(io, async (db, { config, demo }, mappings) => {
    const result = await initDatabase(db, {
      demo: values.demo === true,
      mappings,
      argon2: config.auth.argon2,
      adminPassword: io.env.PICKING_GATEWAY_ADMIN_PASSWORD,
      print: io.out
    })
    io.out(`Tables ready on ${db.dialect}${demo ? ' (embedded demo database)' : ''}.` +
      (result.adminCreated ? '' : ' The user table is not empty: no admin created.') +
      (values.demo === true ? (result.seeded ? ' Demo data added.' : ' Materials already present: demo data not added.') : ''))
    // the picking system's own user table: its rows may hold no password the gateway checks, and then
    // nobody can log in after step 4 of "Day one" unless told how to give one a password
    if (!result.adminCreated) for (const note of await passwordNotes(db, mappings, await db.columns(mappings.users))) io.out(`Note: ${note}`)
    // the generated password is shown only on standard output, once: a reader gone or a full disk (`db init | head`,
    // `> init.log`) lost it, and the next db init finds the user table not empty. Say so, and how to set one.
    const failed = await io.outputFailure?.()
    if (failed !== undefined && result.adminCreated && io.env.PICKING_GATEWAY_ADMIN_PASSWORD === undefined) {
      io.err(`picking-gateway: standard output failed (${failed}): user "admin" was created, but its generated password could not be shown; ` +
        'set one: read -rs PW; printf %s "$PW" | picking-gateway user passwd admin --password-stdin')
      return EXIT_IOERR
    }
    // (`db init | head -c 10`): "the output is incomplete" alone left open whether the tables were made, and 74 reads as a failure
    if (failed !== undefined) {
      io.err(`picking-gateway: standard output failed (${failed}): the tables are ready (db init is done); only its output could not all be written`)
      return EXIT_IOERR
    }
    return EXIT_OK
  // it signs no token: setting up the database needs no JWT secret yet (one given is still checked)
  }, 'create', false)
}

/** A password typed at the terminal, without echo, and again to catch a typing error. */
async function typedTwice (terminal: NonNullable<Io['terminal']>, command: string): Promise<string> {
  const password = await terminal.readHidden(`Password (${command}): `)
  if (password === '') return password
  if (await terminal.readHidden('The same password again: ') !== password) throw new Error('the two passwords typed differ; nothing was changed')
  return password
}

async function readPassword (io: Io, fromStdin: boolean, command: string): Promise<string> {
  if (!fromStdin) throw new UsageError(`give the password on standard input with --password-stdin (for example: read -rs PW; printf %s "$PW" | picking-gateway ${command} --password-stdin)`)
  const password = io.terminal === undefined ? (await io.readStdin()).replace(/\r?\n$/, '') : await typedTwice(io.terminal, command)
  if (password === '' && io.terminal !== undefined) throw new UsageError('no password was typed; nothing was changed')
  if (password === '') throw new UsageError(`no password was read from standard input (it was empty or closed); pipe the password in, for example: printf %s "$PW" | picking-gateway ${command} --password-stdin`)
  // a value the rules refuse is bad input, not bad usage: exit 1, as a taken name or a full licence
  // (64 is for the command line itself; an empty input above is a pipe that was never set up)
  const length = [...password].length
  if (length < PASSWORD_LENGTH.min || length > PASSWORD_LENGTH.max) {
    throw new Error(`the password must be ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters long, got ${length}; nothing was changed`)
  }
  return password
}

async function userCommand (argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(argv, {
    type: { type: 'string' },
    'display-name': { type: 'string' },
    'password-stdin': { type: 'boolean' }
  })
  const [action, name, ...extra] = positionals
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`)
  const needsName = ['add', 'passwd', 'disable', 'enable']
  if (action === undefined || (!needsName.includes(action) && action !== 'list')) throw new UsageError("expected 'user add|passwd|disable|enable|list'")
  if (needsName.includes(action) && !name) throw new UsageError(`'user ${action}' needs a username`)
  if (action === 'list' && name !== undefined) throw new UsageError(`unexpected argument '${name}': 'user list' takes none`)
  // the API's rule for a new name (schemas/users.ts), so that the command line cannot create what a login never finds
  if (action === 'add' && (name.length > 64 || !VISIBLE_USERNAME_RE.test(name))) {
    const hidden = hiddenCharacter(name, true)
    throw new UsageError(`the username ${JSON.stringify(name)} ${name.length > 64 ? 'is longer than 64 characters' : `${USERNAME_RULE}${hidden === undefined ? '' : `, got ${hidden}`}`}`)
  }
  const allowed: Record<string, string[]> = { add: ['type', 'display-name', 'password-stdin'], passwd: ['password-stdin'] }
  const misplaced = Object.keys(values).find((option) => option !== 'help' && !(allowed[action] ?? []).includes(option))
  if (misplaced !== undefined) throw new UsageError(`option '--${misplaced}' does not apply to 'user ${action}'`)
  const type = (values.type as string | undefined) ?? 'user'
  if (!['admin', 'user', 'application'].includes(type)) throw new UsageError(`--type must be admin, user or application, not '${type}'`)
  const password = action === 'add' || action === 'passwd' ? await readPassword(io, values['password-stdin'] === true, `user ${action} ${name!}`) : undefined

  return await withDatabase(io, async (db, { config }, mappings) => {
    const repo = await new Repository(db, resources.users, mappings.users).learn()
    const service = new UserService({ repo, passwords: await createPasswords(config.auth.argon2), licenceLogins: config.licence.logins, onChange: () => {} })
    // The command line acts as the machine's administrator, not as any user account.
    // the shell's operator is no user row: no record is its own (a legacy login '0' included)
    const operator = { id: null, type: 'admin' as const }
    if (action === 'list') {
      const { rows } = await repo.list({ limit: 1000, sort: [{ field: 'username', desc: false }, { field: 'id', desc: false }], filters: [], count: false })
      io.out(['ID', 'USERNAME', 'TYPE', 'ENABLED', 'LAST LOGIN'].join('\t'))
      for (const user of rows.map(toUser)) io.out([user.id, user.username, user.type, user.enabled ? 'yes' : 'no', user.lastLoginAt ?? '-'].join('\t'))
      return EXIT_OK
    }
    if (action === 'add') {
      const user = await service.create({ username: name, password: password!, type: type as UserType, displayName: values['display-name'] as string | undefined })
      io.out(`Created ${user.type} '${user.username}' (id ${user.id}).`)
      return EXIT_OK
    }
    const row = await repo.findSpelled('username', spelledUsername(name), normalizeUsername)
    if (!row) {
      io.err(`picking-gateway: no user '${normalizeUsername(name)}'`)
      return EXIT_FAILURE
    }
    const id = row.id as Id
    // the API keeps an admin from disabling itself; here, keep the last one: without it no one manages users but from this shell
    if (action === 'disable' && row.type === 'admin' && row.enabled === true) {
      const admins = await repo.list({ limit: 1, sort: [{ field: 'id', desc: false }], filters: [{ field: 'type', op: 'eq', values: ['admin'] }, { field: 'enabled', op: 'eq', values: [true] }], count: true })
      if ((admins.total ?? 0) <= 1) {
        io.err(`picking-gateway: '${row.username as string}' is the only enabled admin; add or enable another admin first (user add <name> --type admin)`)
        return EXIT_FAILURE
      }
    }
    if (action === 'passwd') await service.update(id, { password }, operator)
    else await service.update(id, { enabled: action === 'enable' }, operator)
    io.out(action === 'passwd'
      ? `Password of '${row.username as string}' changed; its tokens are revoked.`
      : `User '${row.username as string}' ${action}d${action === 'disable' ? '; its tokens are revoked' : ''}.`)
    return EXIT_OK
  // 'user list' only reads: a file the command's user may not write (a copy, a backup, a file in WAL mode owned by the service) is listed all the same
  // a user's password, type or state is kept in the database and signs no token: no JWT secret needed (one given is still checked)
  }, action === 'list' ? 'read' : 'existing', false)
}
