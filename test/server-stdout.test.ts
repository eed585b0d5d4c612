// picking-gateway serve ends on SIGTERM and SIGHUP within its grace period whatever became of its
// stdout (a reader gone, stalled, a terminal hung up), and a log write never blocks, spins or throws.
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { Writable } from 'node:stream'
import t from 'tap'
import { pino } from 'pino'
import { logSink, requestLineWriter, sinkLogger, type RequestLine, type SinkStream } from '../src/logger.js'
import { GRACE_MS, HUNG_MS, START_MS, connectedBoth, gatewaySetup, jsonLines, listening, startCli, startCommand } from './helpers/process.js'
import { moduleUrl, nodeArgs, scriptLoaders } from './helpers/built.js'
import { until } from './helpers/wait.js'

// gateway processes one after another, some waiting out a grace period: on a busy machine (CI beside other
// work) past .taprc's 120 s, which cut the file off midway
t.setTimeout(8 * START_MS)

t.test('the stdout reader goes away: the gateway shuts down by itself within the grace period, exit 74 (systemd restarts it)', async (t) => {
  const { env } = await gatewaySetup(t, { maxEventLoopDelayMs: 0 })
  const run = startCli(t, ['serve'], env)
  const port = await listening(run)
  await until(() => connectedBoth(run.out()), 'controllers connected', 15000)
  run.child.stdout!.destroy()
  const gone = Date.now()
  // the next log line (this request's, if no other comes first) meets the closed pipe (EPIPE)
  await fetch(`http://127.0.0.1:${port}/api/materials`).catch(() => {})
  const exit = await run.exitWithin(HUNG_MS)
  t.ok(exit, `exited by itself${exit ? '' : ' (before: served on, its log on stderr)'}`)
  if (!exit) return
  t.equal(exit.signal, null)
  t.equal(exit.code, 74, 'EX_IOERR: not 0 and not 78, so Restart=on-failure restarts the service')
  t.ok(exit.at - gone < GRACE_MS, `exited ${exit.at - gone} ms after stdout went away (grace ${GRACE_MS} ms)`)
  t.comment(`dead stdout: exit ${exit.at - gone} ms after the reader went away`)
  const messages = jsonLines(run.err()).map((l) => l.msg)
  t.ok(messages.some((m) => /^standard output is gone \(EPIPE\): its reader went away; stopping, exit 74/.test(m)), 'the last lines on stderr say why')
  t.ok(messages.includes('controller disconnected'), 'a graceful shutdown: the controller links closed')
})

t.test('serve 2>&1 into one pipe whose reader goes away: exits 74 with no output left', async (t) => {
  const { env } = await gatewaySetup(t, { maxEventLoopDelayMs: 0 })
  const script = `const { spawn } = require('node:child_process')
const child = spawn(process.execPath, ${JSON.stringify([...nodeArgs('src/cli.ts'), 'serve'])}, { stdio: ['ignore', 'pipe', 'pipe'] })
let seen = false
// the first lines, then both outputs go; a request's log line meets them (EPIPE)
const first = (c) => {
  const port = parseInt(String(c).split('Server listening at http://127.0.0.1:')[1])
  if (seen || !(port > 0)) return
  seen = true
  child.stdout.destroy()
  child.stderr.destroy()
  // its time to end counts from here: a start-up slowed by a loaded machine is not the point
  killer = setTimeout(() => child.kill('SIGKILL'), ${HUNG_MS})
  setTimeout(() => fetch('http://127.0.0.1:' + port + '/api/materials').catch(() => {}), 200)
}
child.stdout.on('data', first)
child.stderr.on('data', first)
child.stdout.on('error', () => {}); child.stderr.on('error', () => {})
let killer
// a gateway that never gets as far as listening does not outlive the test either
const overall = setTimeout(() => child.kill('SIGKILL'), 60000)
child.on('exit', (code, signal) => { clearTimeout(killer); clearTimeout(overall); console.log(JSON.stringify({ code, signal })) })`
  const run = startCommand(t, process.execPath, ['-e', script], env)
  const exit = await run.exitWithin(HUNG_MS + 60000)
  t.equal(exit?.code, 0, `helper ran: ${run.err()}`)
  t.same(JSON.parse(run.out()), { code: 74, signal: null }, 'the gateway ended by itself (before: served on, logging nowhere)')
})

t.test('SIGTERM with a stalled stdout reader that goes away during shutdown: exits within the grace period', async (t) => {
  const { env } = await gatewaySetup(t, { maxEventLoopDelayMs: 0 })
  const run = startCli(t, ['serve'], env)
  const port = await listening(run)
  await until(() => connectedBoth(run.out()), 'controllers connected', 15000)
  const stdout = run.child.stdout!
  stdout.pause()
  // About 300 kB of request lines: more than this side's buffer and the pipe hold, so the gateway's writes wait.
  const pad = 'x'.repeat(12000)
  for (let i = 0; i < 25; i++) t.equal((await fetch(`http://127.0.0.1:${port}/api/materials?pad=${pad}`)).status, 401)
  t.ok(stdout.readableLength >= stdout.readableHighWaterMark, `the reader stopped reading (${stdout.readableLength} bytes unread)`)
  const sent = Date.now()
  run.child.kill('SIGTERM')
  await new Promise((resolve) => setTimeout(resolve, 300))
  stdout.destroy()
  const exit = await run.exitWithin(HUNG_MS)
  t.ok(exit, `exited${exit ? '' : ' (still running: spinning on its log output)'}`)
  if (!exit) return
  t.equal(exit.code, 0)
  t.ok(exit.at - sent < GRACE_MS, `exited ${exit.at - sent} ms after SIGTERM (grace ${GRACE_MS} ms)`)
  t.comment(`stalled then dead stdout: exit ${exit.at - sent} ms after SIGTERM`)
})

t.test('SIGHUP ends it like SIGTERM, with exit 129 (systemd restarts it: no reload, and not left down)', async (t) => {
  const { env } = await gatewaySetup(t, { maxEventLoopDelayMs: 0 })
  const run = startCli(t, ['serve'], env)
  await listening(run)
  await until(() => connectedBoth(run.out()), 'controllers connected', 15000)
  const sent = Date.now()
  run.child.kill('SIGHUP')
  const exit = await run.exitWithin(HUNG_MS)
  t.equal(exit?.code, 129)
  t.ok(exit !== undefined && exit.at - sent < GRACE_MS, 'within the grace period')
  t.match(run.out(), /"signal":"SIGHUP","msg":"closing: no new connections/)
  // configured controllers: the plugin and the link each logged these before
  const lines = jsonLines(run.out())
  t.same(lines.filter((l) => l.msg === 'controller connected').map((l) => [l.controllerId, l.level]).sort(), [['ctl-1', 30], ['ctl-2', 30]], 'one line per connect')
  t.same(lines.filter((l) => l.msg === 'controller disconnected').map((l) => [l.controllerId, l.level]).sort(), [['ctl-1', 30], ['ctl-2', 30]], 'one line per disconnect, at info')
})

// A terminal that goes away (an SSH session dropped): the kernel hangs it up and sends SIGHUP.
// Python's pty module gives the gateway a terminal, then closes it and reports how the gateway ended.
const PTY_RUN = `
import json, os, pty, sys, time
argv, deadline = json.loads(sys.argv[1]), float(sys.argv[2])
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
out = b''
begin = time.time()
while out.count(b'controller connected') < 2 and time.time() - begin < 60:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
os.close(fd)
closed = time.time()
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.time() - closed > deadline:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        status = None
        break
    time.sleep(0.01)
print(json.dumps({
    'hung': status is None,
    'code': os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None,
    'signal': os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None,
    'ms': round((time.time() - closed) * 1000),
    'output': out.decode('utf8', 'replace')[-3000:]
}))
`

const python = spawnSync('python3', ['-c', 'import pty'], { stdio: 'ignore' }).status === 0

t.test('the terminal goes away: the gateway ends within the grace period, exit 129 (hung up)', { skip: python ? false : 'needs python3 (pty)' }, async (t) => {
  const { env } = await gatewaySetup(t, { maxEventLoopDelayMs: 0 })
  const argv = [process.execPath, ...nodeArgs('src/cli.ts'), 'serve']
  const helper = spawn('python3', ['-c', PTY_RUN, JSON.stringify(argv), String(HUNG_MS / 1000)], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  helper.stdout.setEncoding('utf8').on('data', (c: string) => { out += c })
  helper.stderr.setEncoding('utf8').on('data', (c: string) => { err += c })
  const [code] = await once(helper, 'exit') as [number | null]
  t.equal(code, 0, `helper ran: ${err}`)
  const result = JSON.parse(out) as { hung: boolean, code: number | null, signal: number | null, ms: number, output: string }
  t.match(result.output, /Server listening at http/, 'the gateway ran on the terminal (pretty logs)')
  t.equal(result.hung, false, 'ended by itself (before: spinning at full CPU, deaf to SIGTERM)')
  t.equal(result.signal, null, 'not killed by a signal (before: SIGABRT from Node restoring the lost terminal)')
  t.equal(result.code, 129)
  t.ok(result.ms < GRACE_MS, `ended ${result.ms} ms after the hangup`)
  t.comment(`terminal hung up: exit ${result.ms} ms after the hangup`)
})

/** A stream double: records what is written, can fail or stall. */
function fakeStream () {
  const written: string[] = []
  const stream = Object.assign(new Writable({ write (chunk, _enc, cb) { written.push(String(chunk)); cb() } }), { pending: 0 })
  Object.defineProperty(stream, 'writableLength', { get: () => stream.pending })
  return { stream: stream as unknown as SinkStream & Writable & { pending: number }, written }
}

t.test('log sink: a failing stream is given up for the next one, a stalled one loses lines, nothing throws', async (t) => {
  const a = fakeStream()
  const b = fakeStream()
  const sink = logSink({ streams: [a.stream, b.stream], maxPendingBytes: 100 })
  sink.write('{"msg":"one"}\n')
  sink.flush()
  t.same(a.written, ['{"msg":"one"}\n'])

  a.stream.pending = 1000
  sink.write('{"msg":"lost"}\n')
  sink.flush()
  sink.write('{"msg":"lost too"}\n')
  sink.flush()
  t.equal(sink.dropped, 2, 'a reader that does not keep up loses lines instead of growing memory')
  a.stream.pending = 0
  sink.write('{"msg":"two"}\n')
  sink.flush()
  t.match(a.written[1], /"level":40,.*"msg":"2 log lines dropped: the log reader did not keep up"/)
  t.equal(a.written[2], '{"msg":"two"}\n')

  a.stream.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))
  sink.write('{"msg":"three"}\n')
  sink.flush()
  t.match(b.written[0], /"msg":"log output failed \(EPIPE\): logging continues here"/)
  t.equal(b.written[1], '{"msg":"three"}\n')

  b.stream.destroy()
  sink.write('{"msg":"nowhere"}\n')
  sink.flush()
  t.equal(sink.stopped, true, 'no stream left: logging is off')
  t.doesNotThrow(() => { sink.write('{"msg":"still nowhere"}\n'); sink.flush() })

  const throwing = fakeStream()
  throwing.stream.write = () => { throw new Error('EBADF') }
  const formatted = fakeStream()
  const sink2 = logSink({ streams: [throwing.stream, formatted.stream], format: (line) => `> ${line}` })
  sink2.write('{"msg":"x"}\n')
  sink2.write('{"msg":"y"}\n')
  sink2.flush()
  t.match(formatted.written, [/^> \{"level":40,.*"log output failed \(closed\)/, '> {"msg":"x"}\n> {"msg":"y"}\n'], 'a throwing write moves on too, the batch with it; lines are formatted')
})

t.test('log sink: the lines of one event-loop turn go out in one write at its end', async (t) => {
  const a = fakeStream()
  const sink = logSink({ streams: [a.stream] })
  sink.write('{"msg":"one"}\n')
  sink.write('{"msg":"two"}\n')
  t.same(a.written, [], 'held until the turn ends')
  await new Promise((resolve) => setImmediate(resolve))
  t.same(a.written, ['{"msg":"one"}\n{"msg":"two"}\n'], 'one write for both, in order')
  sink.write('{"msg":"three"}\n')
  let called = false
  sink.flush(() => { called = true })
  t.same(a.written[1], '{"msg":"three"}\n', 'flush writes at once')
  t.ok(called, "pino's logger.flush(cb) gets its callback")
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(a.written.length, 2, 'and nothing is written twice')

  const big = `{"msg":"${'x'.repeat(40 * 1024)}"}\n`
  sink.write(big)
  t.equal(a.written.length, 2)
  sink.write(big)
  t.equal(a.written.length, 3, 'a batch past 64 KiB is written without waiting for the turn to end')
  t.equal(a.written[2], big + big)
})

t.test('log sink: the last lines before an exit are written (the exit flush of serviceLogger)', async (t) => {
  // a fatal path logs and exits in the same turn: the line must still reach stdout
  const script = `
    import { serviceLogger } from ${JSON.stringify(moduleUrl('src/logger.ts'))}
    const log = await serviceLogger('info')
    log.error('last words')
    process.exit(3)
  `
  const child = spawn(process.execPath, [...scriptLoaders(), '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => { out += c })
  const [code] = await once(child, 'exit') as [number | null]
  t.equal(code, 3)
  t.match(out, /"msg":"last words"/)
})

t.test('a request line written straight to the sink is the line pino writes for it', async (t) => {
  const out = fakeStream()
  const sink = logSink({ streams: [out.stream] })
  const logger = sinkLogger('info', sink)
  const write = requestLineWriter(logger)
  if (write === undefined) return t.fail('sinkLogger\'s logger has a writer')
  const cases: RequestLine[] = [
    { reqId: 'req-1', method: 'GET', url: '/api/materials?limit=5', route: '/api/materials', statusCode: 200, responseTimeMs: 1.2, user: 7 },
    { reqId: 'req-2', method: 'POST', url: '/nope?x="quoted"\\ü\u2028', route: undefined, statusCode: 404, responseTimeMs: 0, user: undefined },
    { reqId: 'req-3', method: 'GET', url: '/api/x?access_token=eyJa.eyJb.c', route: '/api/x', statusCode: 401, responseTimeMs: 12345.6, user: 'sso-user' }
  ]
  for (const line of cases) {
    // what the onResponse hook wrote before: the request's child logger (Fastify binds reqId)
    const { reqId, ...fields } = line
    const child = logger.child({ reqId })
    child.info(fields, 'request')
    write(child, line)
  }
  sink.flush()
  const lines = out.written.join('').split('\n').filter((l) => l !== '').map((l) => l.replace(/"time":\d+,/, '"time":0,'))
  t.equal(lines.length, 6)
  for (let i = 0; i < lines.length; i += 2) t.equal(lines[i + 1], lines[i], `request ${i / 2 + 1}: the same bytes but the time`)
  t.notMatch(lines[5], /eyJa/, 'a token in the URL is scrubbed')
  t.match(lines[5], /access_token=\[redacted\]/)
  t.notMatch(lines[3], /"route"|"user"/, 'absent fields are left out, as pino does')

  write(logger.child({ reqId: 'q' }, { level: 'warn' }), cases[0])
  write(logger.child({ reqId: 's' }, { level: 'silent' }), cases[0])
  sink.flush()
  t.equal(out.written.join('').split('\n').filter((l) => l !== '').length, 6, 'a request logging at warn or silent writes no line')
  t.equal(requestLineWriter(pino()), undefined, 'another logger (a test\'s own) gets none: its lines go through pino')
  t.equal(requestLineWriter(logger.child({ component: 'x' })), undefined, 'nor does a child of sinkLogger\'s (its bindings would be left out)')
})
