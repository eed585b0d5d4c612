// `picking-gateway simulate`: runs simulated controllers and takes fault commands on stdin.

import { once } from 'node:events'
import readline from 'node:readline'
import { parseArgs } from 'node:util'
import { Value } from '@sinclair/typebox/value'
import { ControllerConfig } from '../../schemas/config.js'
import { createStop, describeStop, stopExitCode, watchProcess, type Stop } from '../lifecycle.js'
import type { Logger } from './controller-link.js'
import { startSimulator, type SimController, type SimMode, type Simulator } from './simulator.js'

export const SIMULATE_USAGE = `Usage: picking-gateway simulate [options]

Runs simulated picking controllers; controller i listens on port N+i.

Options:
  -p, --port <N>            first port (default 9100; 0: any free ports)
      --host <addr>         address to listen on (default 127.0.0.1)
  -c, --controllers <ids>   comma-separated controller ids (default ctl-1)
      --confirm-delay <ms>  LIGHT to CONFIRM (default 1500)
      --tray-delay <ms>     CALLTRAY to TRAYREADY (default 2000)
  -v, --verbose             log every command
  -h, --help                show this help

Commands on stdin:
  drop <id>                         destroy the controller's connections
  refuse <id> on|off                refuse connections / accept them again
  mode <id> normal|silent|nak       answer normally / never / with NAK E42
  mode <id> delay <ms>              acknowledge after <ms>
  event <id> <CMD> [k=v;k=v]        send an event, e.g. event ctl-1 SHORTAGE addr=3;qty=1;ref=x
  status                            list controllers
  help                              show these commands
`

export interface SimulateIo {
  stdin?: NodeJS.ReadableStream
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
  /** Stops the simulator, like SIGINT/SIGTERM. */
  signal?: AbortSignal
  /**
   * The process's stop request (cli.ts installs it first thing); without it the simulator makes its own
   * from SIGTERM, SIGINT, SIGHUP and the loss of stdout.
   */
  stop?: Stop
}

/**
 * Usage errors exit with 64 (EX_USAGE); a port that cannot be bound with 1; a stop by a signal with 0;
 * standard output gone (its reader went away: `simulate | head -1`) ends it too, with 74 (EX_IOERR).
 */
export async function runSimulateCommand (argv: string[], io: SimulateIo = {}): Promise<number> {
  const stdout = io.stdout ?? process.stdout
  const stderr = io.stderr ?? process.stderr
  const own = io.stop === undefined ? createStop() : undefined
  const stop = io.stop ?? own!
  const unwatch = own !== undefined ? watchProcess(own, { stdout: stdout as unknown as NodeJS.WriteStream, warn: (line) => { stderr.write(line + '\n') } }) : undefined
  const print = (line: string): void => {
    const out = stdout as NodeJS.WritableStream & { destroyed?: boolean, writable?: boolean }
    // a stream already gone throws no error again: its loss is a stop request all the same
    if (out.destroyed === true || out.writable === false) return stop.request({ output: 'closed' })
    out.write(line + '\n')
  }
  try {
    return await simulateUntilStopped(argv, stop, print, { stdin: io.stdin ?? process.stdin, stdout, stderr, signal: io.signal })
  } finally {
    unwatch?.()
  }
}

async function simulateUntilStopped (argv: string[], stop: Stop, print: (line: string) => void, io: Required<Omit<SimulateIo, 'signal' | 'stop'>> & { signal?: AbortSignal }): Promise<number> {
  const { stdin, stdout, stderr, signal: external } = io
  let values
  try {
    values = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        port: { type: 'string', short: 'p', default: '9100' },
        host: { type: 'string', default: '127.0.0.1' },
        controllers: { type: 'string', short: 'c', default: 'ctl-1' },
        'confirm-delay': { type: 'string', default: '1500' },
        'tray-delay': { type: 'string', default: '2000' },
        verbose: { type: 'boolean', short: 'v', default: false },
        help: { type: 'boolean', short: 'h', default: false }
      }
    }).values
  } catch (err) {
    stderr.write(`${(err as Error).message}\n\n${SIMULATE_USAGE}`)
    return 64
  }
  if (values.help) {
    stdout.write(SIMULATE_USAGE)
    return 0
  }
  const usageError = (msg: string): number => {
    stderr.write(`${msg}\n\n${SIMULATE_USAGE}`)
    return 64
  }
  const port = integer(values.port)
  const ids = values.controllers.split(',').map(s => s.trim()).filter(s => s !== '')
  const confirmDelay = integer(values['confirm-delay'])
  const trayDelay = integer(values['tray-delay'])
  if (port === undefined || port + ids.length - 1 > 65535) return usageError(`--port must be a port number, got ${values.port}`)
  if (ids.length === 0) return usageError('--controllers must list at least one id')
  if (new Set(ids).size !== ids.length) return usageError('--controllers must list distinct ids')
  // an id hardware.controllers cannot hold could never be driven: every gateway refuses its HELLO
  const badId = ids.find((id) => !Value.Check(ControllerConfig.properties.id, id))
  if (badId !== undefined) return usageError(`--controllers: ${JSON.stringify(badId)} is not a controller id: 1 to 64 letters, digits, '_', '.' or '-', as hardware.controllers takes them`)
  if (confirmDelay === undefined) return usageError('--confirm-delay must be a number of ms')
  if (trayDelay === undefined) return usageError('--tray-delay must be a number of ms')

  const logger = lineLogger(print, values.verbose)
  let sim: Simulator
  try {
    sim = await startSimulator({
      host: values.host,
      controllers: ids.map((id, i) => ({ id, port: port === 0 ? 0 : port + i })),
      timings: { confirmDelay, trayDelay },
      logger
    })
  } catch (err) {
    stderr.write(`cannot start the simulator: ${(err as Error).message}\n`)
    return 1
  }
  for (const c of sim.controllers.values()) print(`${c.id} listening on ${c.host}:${c.port}`)
  print('type "help" for commands')

  const onSignal = (): void => stop.request({ signal: 'SIGTERM' })
  external?.addEventListener('abort', onSignal, { once: true })
  if (external?.aborted === true) onSignal()

  const rl = readline.createInterface({ input: stdin, terminal: false })
  rl.on('line', (line) => {
    runControlLine(sim, line).then(
      (reply) => { if (reply !== '') print(reply) },
      (err: Error) => print(`error: ${err.message}`)
    )
  })
  try {
    if (!stop.signal.aborted) await once(stop.signal, 'abort')
  } finally {
    external?.removeEventListener('abort', onSignal)
    rl.close()
    await sim.close()
  }
  const reason = stop.reason!
  if ('output' in reason) {
    // the last word goes to stderr, if it is still there
    stderr.once('error', () => {})
    stderr.write(`picking-gateway simulate: ${describeStop(reason)}: its reader went away; simulator stopped (exit ${stopExitCode(reason)})\n`)
  } else {
    print('simulator stopped')
  }
  return stopExitCode(reason)
}

/** Executes one stdin command; resolves with the line to print. Exported for tests. */
export async function runControlLine (sim: Simulator, line: string): Promise<string> {
  const words = line.trim().split(/\s+/)
  const [verb = '', id = ''] = words
  const find = (): SimController => {
    const c = sim.controllers.get(id)
    if (c === undefined) throw new Error(`unknown controller "${id}" (known: ${[...sim.controllers.keys()].join(', ')})`)
    return c
  }
  switch (verb) {
    case '':
      return ''
    case 'help':
      return SIMULATE_USAGE.slice(SIMULATE_USAGE.indexOf('Commands on stdin:')).trimEnd()
    case 'status':
      return [...sim.controllers.values()]
        .map(c => `${c.id} port=${c.port} mode=${c.mode} connections=${c.connectionCount} state=${c.state}`)
        .join('\n')
    case 'drop':
      find().drop()
      return 'ok'
    case 'refuse': {
      const c = find()
      if (words[2] !== 'on' && words[2] !== 'off') throw new Error('usage: refuse <id> on|off')
      await c.refuse(words[2] === 'on')
      return 'ok'
    }
    case 'mode': {
      const c = find()
      const mode = words[2] as SimMode
      if (mode === 'delay') {
        const delayMs = integer(words[3] ?? '')
        if (delayMs === undefined) throw new Error('usage: mode <id> delay <ms>')
        c.setMode(mode, { delayMs })
      } else if (mode === 'normal' || mode === 'silent' || mode === 'nak') {
        c.setMode(mode)
      } else {
        throw new Error('usage: mode <id> normal|silent|nak|delay <ms>')
      }
      return 'ok'
    }
    case 'event': {
      const c = find()
      const cmd = words[2]
      if (cmd === undefined) throw new Error('usage: event <id> <CMD> [k=v;k=v]')
      c.emitEvent(cmd, parsePairs(words.slice(3).join(' ')))
      return 'ok'
    }
    default:
      throw new Error(`unknown command "${verb}", type "help"`)
  }
}

/** `addr=3;qty=1;ref=x` as typed by a person: nothing escaped, split at `;` and the first `=`. */
function parsePairs (text: string): Record<string, string> {
  const entries: Array<[string, string]> = []
  for (const pair of text.split(';')) {
    if (pair.trim() === '') continue
    const eq = pair.indexOf('=')
    if (eq < 1) throw new Error(`expected key=value, got "${pair}"`)
    entries.push([pair.slice(0, eq).trim(), pair.slice(eq + 1)])
  }
  return Object.fromEntries(entries)
}

function integer (text: string): number | undefined {
  return /^[0-9]{1,9}$/.test(text) ? Number(text) : undefined
}

function lineLogger (print: (line: string) => void, verbose: boolean): Logger {
  const line = (level: string) => (obj: object, msg?: string): void => {
    const fields = Object.entries(obj)
      .map(([k, v]) => `${k}=${v instanceof Error ? v.message : typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ')
    print(`${new Date().toISOString()} ${level} ${msg ?? ''} ${fields}`.trimEnd())
  }
  return { debug: verbose ? line('debug') : () => {}, info: line('info'), warn: line('warn'), error: line('error') }
}
