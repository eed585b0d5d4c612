// close() must leave nothing that keeps a process alive: run a real process and see it exit on its own.

import { spawn } from 'node:child_process'
import t from 'tap'
import { moduleUrl, runnable, scriptLoaders } from '../helpers/built.js'

const index = moduleUrl('src/hardware/index.ts')
const cli = moduleUrl('src/hardware/simulate-cli.ts')
// the TypeScript loader alone (no coverage hook) when dist/ is not current
const loader = scriptLoaders().filter(a => a.includes('@tapjs/typescript'))

const script = `
import { once } from 'node:events'
import { ControllerLink, startSimulator } from ${JSON.stringify(index)}
const timings = { heartbeatIdle: 20, deadAfter: 5000, backoffInitial: 10, backoffMax: 20, ackTimeout: 5000 }
const sim = await startSimulator({ controllers: [{ id: 'c', port: 0 }], timings: { confirmDelay: 10, trayDelay: 10, eventRetry: 20 } })
const c = sim.controllers.get('c')
const link = new ControllerLink({ id: 'c', host: c.host, port: c.port }, { timings })
link.start()
await once(link, 'status')
await link.send('LIGHT', { addr: 1, qty: 1 })
await once(link, 'event')
c.setMode('silent')
const pending = link.send('LIGHT', { addr: 2, qty: 1 }).catch(err => err.code)
const offline = new ControllerLink({ id: 'x', host: '127.0.0.1', port: 1 }, { timings })
offline.start()
await new Promise(resolve => setTimeout(resolve, 50))
await link.close()
await offline.close()
console.log(await pending)
await sim.close()
console.log('closed')
`

t.test('a process using the link and the simulator exits by itself after close()', async t => {
  const child = spawn(process.execPath, [...loader, '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => { out += String(d) })
  child.stderr.on('data', (d: Buffer) => { err += String(d) })
  const killer = setTimeout(() => child.kill('SIGKILL'), 15000)
  const [code, signal] = await new Promise<[number | null, string | null]>(resolve => child.on('exit', (c, s) => resolve([c, s])))
  clearTimeout(killer)
  t.equal(signal, null, 'exited on its own, not killed')
  t.equal(code, 0, err)
  t.equal(out, 'LINK_DROPPED\nclosed\n')
})

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`picking-gateway simulate exits cleanly on ${signal}, stdin still open`, async t => {
    const child = spawn(process.execPath, [
      ...loader, '--input-type=module', '-e',
      `import { runSimulateCommand } from ${JSON.stringify(cli)}
      process.exitCode = await runSimulateCommand(['--port', '0'])`
    ], { stdio: ['pipe', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stderr.on('data', (d: Buffer) => { err += String(d) })
    const killer = setTimeout(() => child.kill('SIGKILL'), 15000)
    const exited = new Promise<[number | null, string | null]>(resolve => child.on('exit', (c, s) => resolve([c, s])))
    const early = exited.then(([c]) => { throw new Error(`exited early with ${c}: ${err}`) })
    await Promise.race([early, new Promise<void>(resolve => child.stdout.on('data', (d: Buffer) => {
      out += String(d)
      if (out.includes('listening')) resolve()
    }))])
    child.stdin.write('status\n')
    await Promise.race([early, new Promise<void>(resolve => child.stdout.on('data', () => { if (out.includes('mode=normal')) resolve() }))])
    early.catch(() => {})
    child.kill(signal)
    const [code, sig] = await exited
    clearTimeout(killer)
    t.equal(sig, null, 'exited on its own')
    t.equal(code, 0, err)
    t.match(out, /ctl-1 listening on 127\.0\.0\.1:\d+[\s\S]*simulator stopped/)
  })
}

t.test('picking-gateway simulate whose stdout reader went away ends at its next line, exit 74, saying why on stderr', async t => {
  const child = spawn(process.execPath, [...loader, runnable('src/cli.ts'), 'simulate', '--port', '0'], { stdio: ['pipe', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stderr.on('data', (d: Buffer) => { err += String(d) })
  child.stdout.on('error', () => {})
  child.stdin.on('error', () => {})
  const killer = setTimeout(() => child.kill('SIGKILL'), 15000)
  t.teardown(() => clearTimeout(killer))
  const exited = new Promise<[number | null, string | null]>(resolve => child.on('exit', (c, s) => resolve([c, s])))
  await new Promise<void>(resolve => child.stdout.on('data', (d: Buffer) => {
    out += String(d)
    if (out.includes('type "help"')) resolve()
  }))
  child.stdout.destroy()
  // its answer meets the closed pipe (EPIPE)
  child.stdin.write('status\n')
  const [code, sig] = await exited
  t.equal(sig, null, 'exited on its own (before: it kept running)')
  t.equal(code, 74)
  t.match(err, /standard output is gone \((EPIPE|ECONNRESET)\): its reader went away; simulator stopped \(exit 74\)/)
})
