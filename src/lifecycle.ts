// How the long-running commands (serve, simulate) stop: what asks them to (a signal, standard output gone),
// the shutdown with its grace period, and the exit code. Imports nothing heavy: cli.ts installs it first.
import { readFileSync } from 'node:fs'

/** sysexits.h EX_IOERR: standard output is gone. Not 0 and not 78, so systemd (Restart=on-failure) restarts. */
export const EXIT_IOERR = 74

/**
 * Why a process stops: a signal asked it to (exit 0), the process that ran it for someone went away
 * without passing a signal on (exit 0, see WatchOptions.parent), its standard output's reader went
 * away (exit 74), or an error nothing caught (exit 1).
 */
export type StopReason = { signal: NodeJS.Signals } | { parent: number } | { output: string } | { error: unknown }

export const STOP_SIGNALS: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP']

/**
 * A repeat of the signal that asked for the stop within this many ms is that request again, not a
 * second one that ends the process at once (npm start, Ctrl-C: one SIGINT from the terminal, one from npm).
 */
export const REPEAT_MS = 1000

/** 128 + SIGHUP's number, as a shell reports a process it hung up */
export const EXIT_HANGUP = 129

/**
 * A stop that was asked for ends with 0; SIGHUP with 129, so that systemd's Restart=on-failure starts
 * the service again (a `kill -HUP` meant as "reload" must not leave it down; there is no reload); one
 * forced by a lost output with 74 (a restart under systemd).
 */
export function stopExitCode (reason: StopReason): number {
  if ('signal' in reason) return reason.signal === 'SIGHUP' ? EXIT_HANGUP : 0
  return 'parent' in reason ? 0 : 'output' in reason ? EXIT_IOERR : 1
}

export function describeStop (reason: StopReason): string {
  if ('signal' in reason) return reason.signal
  if ('parent' in reason) return `the process that started it (pid ${reason.parent}) is gone`
  return 'output' in reason ? `standard output is gone (${reason.output})` : 'a fatal error'
}

/**
 * How long a second signal's exit waits for the last work registered with Stop.beforeForcedExit: the one
 * who sent it does not want to wait, and that work only writes answers already due.
 */
export const FORCED_EXIT_MS = 20

/** One process's stop request: the first reason wins, later ones are ignored. */
export interface Stop {
  /** aborted at the first request */
  readonly signal: AbortSignal
  readonly reason: StopReason | undefined
  request (reason: StopReason): void
  /**
   * What a second signal still does before the process ends at once (replaces what was set before): answers
   * that would otherwise be cut with the connections (a station command waiting for its controller's ACK).
   */
  beforeForcedExit (work: () => Promise<void>): void
  /** Runs that work; resolves when it is done, failed, or has taken FORCED_EXIT_MS. */
  forcedExit (): Promise<void>
}

export function createStop (): Stop {
  const controller = new AbortController()
  let reason: StopReason | undefined
  let last: (() => Promise<void>) | undefined
  return {
    signal: controller.signal,
    get reason () { return reason },
    request (r) {
      if (reason !== undefined) return
      reason = r
      controller.abort()
    },
    beforeForcedExit (work) {
      last = work
    },
    async forcedExit () {
      if (last === undefined) return
      await race(last().catch(() => {}), FORCED_EXIT_MS, undefined)
    }
  }
}

/** Thrown by a start-up that a stop request ended before it was done; carries the stop's exit code. */
export class StoppedError extends Error {
  readonly code: number
  constructor (readonly reason: StopReason) {
    super(`stopped during start-up: ${describeStop(reason)}`)
    this.code = stopExitCode(reason)
  }
}

/** A stream whose failure means that its reader went away. */
export interface WatchedOutput {
  readonly isTTY?: boolean
  on (event: 'error', listener: (err: Error) => void): unknown
  on (event: 'close', listener: () => void): unknown
  off (event: 'error', listener: (err: Error) => void): unknown
  off (event: 'close', listener: () => void): unknown
}

export interface WatchOptions {
  /** the output whose loss stops the process (process.stdout) */
  stdout?: WatchedOutput
  /** a second signal while stopping: the process ends at once with this code (the first reason's) */
  exit?: (code: number) => void
  /** where the second signal is reported */
  warn?: (line: string) => void
  /**
   * The pid of the parent process whose end is a stop request (checked every PARENT_CHECK_MS). For a
   * command npm runs (npm start, npx): npm passes a SIGTERM on to its child, and under npx that child is
   * a shell that dies of it without passing it on; npm killed (SIGKILL) passes nothing on at all.
   */
  parent?: number
  /**
   * npm itself where a shell stands between it and this process (npx runs a bin through `sh -c`, which
   * does not exec it): npm killed with SIGKILL leaves that shell waiting, so the parent never changes.
   * Its end is a stop request too (see npmBehindShells).
   */
  npm?: ProcessStart
}

/** A process as /proc shows it at one moment: its pid and start time (a pid used again starts later). */
export interface ProcessStart { pid: number, start: string }

interface ProcStat { comm: string, state: string, ppid: number, start: string }

/** /proc/<pid>/stat (Linux): the name, state, parent and start time; undefined where there is none. */
function procStat (pid: number): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const close = stat.lastIndexOf(')')
    const fields = stat.slice(close + 2).split(' ')
    // fields 3 (state), 4 (ppid) and 22 (starttime) of proc(5), counted from the one after the name
    return { comm: stat.slice(stat.indexOf('(') + 1, close), state: fields[0], ppid: Number(fields[1]), start: fields[19] }
  } catch {
    return undefined
  }
}

const SHELLS = new Set(['sh', 'dash', 'bash', 'ash', 'ksh', 'mksh', 'zsh', 'busybox'])

/**
 * The process above the shells between this process's parent and it (npx: npm, a shell, this process),
 * or undefined where the parent is no shell (npm start execs the command) or /proc cannot tell.
 */
export function npmBehindShells (parent: number, stat: (pid: number) => ProcStat | undefined = procStat): ProcessStart | undefined {
  let pid = parent
  for (let depth = 0; depth < 4; depth++) {
    const shell = stat(pid)
    if (shell === undefined || !SHELLS.has(shell.comm) || shell.ppid <= 1) break
    pid = shell.ppid
  }
  if (pid === parent) return undefined
  const npm = stat(pid)
  return npm === undefined ? undefined : { pid, start: npm.start }
}

/** Whether a process seen before still runs: there, not a zombie, and the same process (its start time). */
function stillRunning (proc: ProcessStart): boolean {
  const now = procStat(proc.pid)
  return now !== undefined && now.state !== 'Z' && now.start === proc.start
}

/** How often a watched parent process is looked for. */
export const PARENT_CHECK_MS = 500

/**
 * Makes SIGTERM, SIGINT and SIGHUP and the loss of standard output (EPIPE, EIO, the stream closed)
 * requests to stop. Node's default for those signals is to die by them (exit 143 and the like); from
 * here on they are a clean stop. Returns a function that removes the listeners.
 */
export function watchProcess (stop: Stop, opts: WatchOptions = {}): () => void {
  const exit = opts.exit ?? ((code: number) => process.exit(code))
  let first: { signal: NodeJS.Signals, at: number } | undefined
  let forcing = false
  const onSignal = (signal: NodeJS.Signals): void => {
    const at = performance.now()
    if (stop.reason === undefined) {
      first = { signal, at }
      return stop.request({ signal })
    }
    // The same signal again at once is the same request arriving twice, not an impatient sender: a
    // terminal's Ctrl-C goes to npm and the gateway alike, and npm passes its copy on to the gateway.
    if (first !== undefined && signal === first.signal && at - first.at < REPEAT_MS) return
    // a second signal: the one who sent it does not want to wait for the grace period. What is due at once is
    // still written (a few ms at most); a third signal does not wait for that either.
    const code = stopExitCode(stop.reason)
    if (forcing) return exit(code)
    forcing = true
    opts.warn?.(`second ${signal} while stopping: exiting now`)
    void stop.forcedExit().then(() => exit(code))
  }
  // A terminal that fails has hung up (EIO; the SIGHUP may come a moment later): the person at it left,
  // which is a stop like SIGHUP, not a lost log (systemd never runs the service on a terminal).
  const lost = (output: string): void => stop.request(opts.stdout?.isTTY === true ? { signal: 'SIGHUP' } : { output })
  const onError = (err: Error): void => lost((err as NodeJS.ErrnoException).code ?? 'error')
  const onClose = (): void => lost('closed')
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal)
  opts.stdout?.on('error', onError)
  opts.stdout?.on('close', onClose)
  const { parent, npm } = opts
  // an orphan is given to init (or a subreaper): its parent pid changes
  const orphaned = parent === undefined
    ? undefined
    : setInterval(() => {
      if (process.ppid !== parent) stop.request({ parent })
      else if (npm !== undefined && !stillRunning(npm)) stop.request({ parent: npm.pid })
    }, PARENT_CHECK_MS).unref()
  return () => {
    clearInterval(orphaned)
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal)
    opts.stdout?.off('error', onError)
    opts.stdout?.off('close', onClose)
  }
}

export interface ShutdownLog {
  info (obj: object, msg: string): void
  warn (obj: object, msg: string): void
  error (obj: object, msg: string): void
}

export interface ShutdownOptions {
  /** stops accepting, lets requests in flight finish, closes everything; resolves when done */
  close: () => Promise<void>
  /**
   * Once the grace period is over: answers the station commands still waiting for their controller's ACK
   * (504), then cuts the connections still open; resolves with how many of each
   */
  cut: () => Promise<{ commands: number, connections: number }>
  graceMs: number
  /** how long closing may take after the cut (the links and the pool) before the shutdown counts as failed */
  afterCutMs?: number
  log: ShutdownLog
}

/**
 * The shutdown after a stop request: close within the grace period; past it, cut the connections
 * still open (a slow upload) and finish closing. Resolves with the exit code: the stop's own (0 for a
 * signal, 74 for a lost output) however many connections were cut, 1 only when closing failed or
 * did not finish.
 */
export async function shutdown (reason: StopReason, opts: ShutdownOptions): Promise<number> {
  const code = stopExitCode(reason)
  const closing = opts.close().then(() => true, (err: unknown) => {
    opts.log.error({ err }, 'shutdown failed')
    return false
  })
  const over = Symbol('over')
  const first = await race(closing, opts.graceMs, over)
  if (first !== over) return first ? code : 1
  let cut = { commands: 0, connections: 0 }
  try {
    cut = await opts.cut()
  } catch (err) {
    opts.log.error({ err }, 'could not cut the connections left')
  }
  // a warning only for clients really cut off: a command answered 504 has its own warning, and its client its answer
  const { commands, connections } = cut
  const msg = `grace period over: ${commands > 0 ? `${commands} station command(s) still waiting for an ACK answered 504, ` : ''}${connections > 0 ? `${connections} connection(s) still open cut` : 'no connection cut'}`
  if (connections > 0) opts.log.warn({ commands, connections, graceMs: opts.graceMs }, msg)
  else opts.log.info({ commands, connections, graceMs: opts.graceMs }, msg)
  const afterCut = await race(closing, opts.afterCutMs ?? 3000, over)
  if (afterCut === over) {
    opts.log.error({ afterCutMs: opts.afterCutMs ?? 3000 }, 'shutdown did not finish after the connections were cut: exiting anyway')
    return 1
  }
  return afterCut ? code : 1
}

async function race<T, O> (work: Promise<T>, ms: number, over: O): Promise<T | O> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([work, new Promise<O>((resolve) => { timer = setTimeout(() => resolve(over), ms) })])
  } finally {
    clearTimeout(timer)
  }
}
