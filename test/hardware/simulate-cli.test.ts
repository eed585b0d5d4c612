import net from 'node:net'
import { once } from 'node:events'
import { PassThrough } from 'node:stream'
import t from 'tap'
import { ControllerLink, type ControllerEvent } from '../../src/hardware/controller-link.js'
import { runControlLine, runSimulateCommand, SIMULATE_USAGE } from '../../src/hardware/simulate-cli.js'
import { startSimulator } from '../../src/hardware/simulator.js'
import { until } from '../helpers/wait.js'


function io (): { stdin: PassThrough, stdout: PassThrough, stderr: PassThrough, out: () => string, err: () => string } {
  const stdin = new PassThrough()
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  let out = ''
  let err = ''
  stdout.on('data', (d: Buffer) => { out += String(d) })
  stderr.on('data', (d: Buffer) => { err += String(d) })
  return { stdin, stdout, stderr, out: () => out, err: () => err }
}


/** Two consecutive free ports (the simulator puts controller i on port N+i). */
async function freePorts (): Promise<number> {
  for (;;) {
    const a = net.createServer().listen(0, '127.0.0.1')
    await once(a, 'listening')
    const port = (a.address() as net.AddressInfo).port
    const b = net.createServer().listen(port + 1, '127.0.0.1')
    const ok = await new Promise<boolean>(resolve => { b.once('listening', () => resolve(true)).once('error', () => resolve(false)) })
    await new Promise(resolve => a.close(resolve))
    if (ok) {
      await new Promise(resolve => b.close(resolve))
      return port
    }
  }
}

t.test('--help prints usage and exits 0', async t => {
  const s = io()
  t.equal(await runSimulateCommand(['--help'], s), 0)
  t.equal(s.out(), SIMULATE_USAGE)
  t.match(SIMULATE_USAGE, /--port/)
})

t.test('bad arguments exit 64 with a message', async t => {
  for (const argv of [['--nope'], ['--port', 'x'], ['--port', '70000'], ['--controllers', 'a,a'], ['--controllers', ','], ['--confirm-delay', '-1'], ['--tray-delay', 'soon'], ['extra']]) {
    const s = io()
    t.equal(await runSimulateCommand(argv, s), 64, argv.join(' '))
    t.match(s.err(), /Usage:/)
  }
  // ids no hardware.controllers entry can hold, so no gateway could ever drive them (they ran all the same);
  // the signal ends a simulator that starts
  for (const id of ['a b', 'ctl-1|x', 'x'.repeat(65), 'ctl-ü']) {
    const s = io()
    t.equal(await runSimulateCommand(['--port', '0', '--controllers', `ctl-1,${id}`], { ...s, signal: AbortSignal.timeout(2000) }), 64, `--controllers ctl-1,${id}`)
    t.match(s.err(), `--controllers: ${JSON.stringify(id)} is not a controller id`)
  }
  const none = io()
  t.equal(await runSimulateCommand(['--controllers', ','], none), 64)
  t.match(none.err(), '--controllers must list at least one id')
})

t.test('a taken port exits 1', async t => {
  const blocker = net.createServer().listen(0, '127.0.0.1')
  await once(blocker, 'listening')
  t.teardown(() => { blocker.close() })
  const s = io()
  t.equal(await runSimulateCommand(['--port', String((blocker.address() as net.AddressInfo).port)], s), 1)
  t.match(s.err(), /cannot start the simulator/)
})

t.test('runs controllers on N+i, takes commands on stdin, stops on abort', async t => {
  const port = await freePorts()
  const s = io()
  const stop = new AbortController()
  const run = runSimulateCommand(['--port', String(port), '--controllers', 'a,b', '--confirm-delay', '20', '-v'], { ...s, signal: stop.signal })
  await until(() => s.out().includes(`b listening on 127.0.0.1:${port + 1}`), 'listening lines')
  t.match(s.out(), `a listening on 127.0.0.1:${port}`)

  const link = new ControllerLink({ id: 'a', host: '127.0.0.1', port }, { timings: { backoffInitial: 10, backoffMax: 50 } })
  t.teardown(() => link.close())
  const events: ControllerEvent[] = []
  link.on('event', e => events.push(e))
  const status = once(link, 'status')
  link.start()
  await status

  const reply = async (line: string): Promise<string> => {
    const before = s.out().length
    s.stdin.write(line + '\n')
    await until(() => /\n(ok|error: .*)\n/.test(s.out().slice(before - 1)), `reply to ${line}`)
    return s.out().slice(before)
  }
  t.match(await reply('mode a nak'), /ok/)
  t.match(await link.send('STATUS').catch((e: Error) => e), { code: 'NAK', controllerCode: 'E42' })
  t.match(await reply('mode a normal'), /ok/)
  await link.send('LIGHT', { addr: 1, qty: 1, ref: 'r' })
  await until(() => events.some(e => e.cmd === 'CONFIRM'), 'CONFIRM')
  t.match(await reply('event a SHORTAGE addr=3;qty=1;ref=x y'), /ok/)
  await until(() => events.some(e => e.cmd === 'SHORTAGE'), 'SHORTAGE')
  t.same(events.find(e => e.cmd === 'SHORTAGE')?.args, { addr: '3', qty: '1', ref: 'x y' })
  t.match(await reply('mode a delay 10'), /ok/)
  await link.send('CLEAR', { addr: 1 })
  t.match(await reply('mode a delay'), /error: usage/)
  t.match(await reply('mode a fast'), /error: usage/)
  t.match(await reply('drop zz'), /error: unknown controller "zz"/)
  t.match(await reply('fly a'), /error: unknown command/)
  t.match(await reply('refuse a maybe'), /error: usage/)
  const down = once(link, 'disconnected')
  const back = once(link, 'connected')
  t.match(await reply('drop a'), /ok/)
  await down
  await back

  s.stdin.write('status\n')
  await until(() => s.out().includes('b port='), 'status lines')
  t.match(s.out(), new RegExp(`a port=${port} mode=delay connections=1 state=idle`))
  s.stdin.write('help\n')
  await until(() => s.out().includes('Commands on stdin:'), 'help')

  const gone = once(link, 'disconnected')
  stop.abort()
  t.equal(await run, 0)
  t.match(s.out(), /simulator stopped/)
  await gone
})

t.test('an already aborted signal stops it at once and removes its signal handlers', async t => {
  const port = await freePorts()
  const listeners = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]
  const s = io()
  t.equal(await runSimulateCommand(['-p', String(port)], { ...s, signal: AbortSignal.abort() }), 0)
  t.match(s.out(), /listening[\s\S]*simulator stopped/)
  t.same([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')], listeners)
})

t.test('runControlLine: refuse and event argument errors', async t => {
  const sim = await startSimulator({ controllers: [{ id: 'c', port: 0 }] })
  t.teardown(() => sim.close())
  t.equal(await runControlLine(sim, '   '), '')
  t.equal(await runControlLine(sim, 'refuse c on'), 'ok')
  const c = sim.controllers.get('c')!
  await t.rejects(new Promise((resolve, reject) => net.connect(c.port, c.host).once('connect', resolve).once('error', reject)), { code: 'ECONNREFUSED' })
  t.equal(await runControlLine(sim, 'refuse c off'), 'ok')
  await t.rejects(runControlLine(sim, 'event c'), /usage/)
  await t.rejects(runControlLine(sim, 'event c SHORTAGE addr'), /key=value/)
  await t.rejects(runControlLine(sim, 'event c SHORTAGE bad-key=1'), /invalid argument key/)
  t.equal(await runControlLine(sim, 'mode c silent'), 'ok')
  t.equal(c.mode, 'silent')
})
