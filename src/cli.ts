#!/usr/bin/env node
// Entry of the picking-gateway command; the commands live in commands.ts.
import { KEEP_RUNNING, main } from './commands.js'

main(process.argv.slice(2)).then((code) => {
  if (code !== KEEP_RUNNING) process.exitCode = code
}, (err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
