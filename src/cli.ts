#!/usr/bin/env node
// Entry of the picking-gateway command; the commands live in commands.ts.
import { closeSync, openSync } from 'node:fs'
import { isatty } from 'node:tty'
import { createStop, npmBehindShells, watchProcess, type Stop } from './lifecycle.js'

/** How long a finished command may wait for leftover handles before it exits anyway. */
const LINGER_MS = 2000

// A reader that went away (a closed pipe, a restarted journald, a hung-up terminal) must not turn
// the next write into an uncaught exception: writes to it are dropped (the logger moves on, see logSink).
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {})
/** Why standard output took no more (EPIPE, ENOSPC): a one-shot command's output is then incomplete. */
let outputFailed: string | undefined
process.stdout.on('error', (err: NodeJS.ErrnoException) => { outputFailed ??= err.code ?? err.message })

const argv = process.argv.slice(2)
// serve and simulate run until stopped: a signal or the loss of standard output asks them to stop
// from the first moment on, before the commands (and their dependencies, half a second) load.
let stop: Stop | undefined
if (argv[0] === 'serve' || argv[0] === 'simulate') {
  stop = createStop()
  // Run by npm (npm start, npx picking-gateway): npm going away, killed or having killed only the shell
  // between it and this process, leaves this process an orphan that nobody would stop.
  // Under npx a shell stands between npm and this process: npm killed leaves the shell, so npm is watched too.
  const parent = process.env.npm_lifecycle_event !== undefined ? process.ppid : undefined
  const npm = parent !== undefined ? npmBehindShells(parent) : undefined
  watchProcess(stop, { stdout: process.stdout, parent, npm, warn: (line) => process.stderr.write(`picking-gateway: ${line}\n`) })
}
const { KEEP_RUNNING, main, processIo } = await import('./commands.js')

// Node 20 aborts at exit when it cannot restore the mode of a terminal that hung up (an SSH
// session dropped; nodejs/node#51519): stdio that was a terminal and is no longer one (the
// hung-up terminal fails the check) is pointed at /dev/null first, which Node then leaves alone.
const terminals = [0, 1, 2].filter((fd) => isatty(fd))
if (terminals.length > 0) {
  process.on('exit', () => {
    for (const fd of terminals) {
      if (isatty(fd)) continue
      try {
        closeSync(fd)
        const reopened = openSync('/dev/null', 'r+')
        if (reopened !== fd) closeSync(reopened)
      } catch {}
    }
  })
}

main(argv, processIo, stop).then((code) => {
  if (code === KEEP_RUNNING) return
  // stopped (during start-up, or simulate): what it opened is closed or given up within the grace
  // period; a driver still trying to connect must not hold the exit
  if (stop?.reason !== undefined) process.exit(code)
  process.exitCode = code
  exitAfterLinger(code)
}, (err: unknown) => {
  console.error(err)
  process.exitCode = 1
  exitAfterLinger(1)
})

/**
 * A command that has returned its exit code ends even if something it opened lingers (a socket,
 * a timer): systemd waits for the exit before it restarts the service. Output still being
 * written to a slow reader is waited for.
 */
function exitAfterLinger (code: number): void {
  const exit = (): void => {
    // its output is all a command like db introspect or user list gives: a reader gone or a full disk
    // (`> mapping.json`) must not look like success
    if (code === 0 && outputFailed !== undefined) {
      process.stderr.write(`picking-gateway: standard output failed (${outputFailed}): the output is incomplete\n`)
      process.exit(74)
    }
    process.exit(code)
  }
  process.once('beforeExit', exit)
  setTimeout(function check () {
    const writing = [process.stdout, process.stderr].some((s) => s.writableLength > 0 && !s.destroyed)
    if (writing) setTimeout(check, LINGER_MS).unref()
    else exit()
  }, LINGER_MS).unref()
}
