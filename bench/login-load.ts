// Goal 5's background logins, in a process of their own: the paced list client then measures the
// gateway, not its own event loop busy with login answers (a login client is another program anyway).
// Started by bench/run.ts with GATEWAY_URL, LOGIN_USERNAME, LOGIN_PASSWORD and LOGINS_PER_SECOND in the
// environment. Prints "ready", logs in at that rate until its stdin ends (the bench closes it, or
// dies), waits for the logins in flight, prints one JSON line of what it saw and exits.
import { performance } from 'node:perf_hooks'

const base = process.env.GATEWAY_URL
const username = process.env.LOGIN_USERNAME
const password = process.env.LOGIN_PASSWORD
const rate = Number(process.env.LOGINS_PER_SECOND)
if (!base || !username || !password || !(rate > 0)) {
  process.stderr.write('login-load: GATEWAY_URL, LOGIN_USERNAME, LOGIN_PASSWORD and LOGINS_PER_SECOND (> 0) are required\n')
  process.exit(2)
}

export interface LoginLoadResult {
  /** responses by status; "error" for a login that got none */
  statuses: Record<string, number>
  /** each answered login's time, ms */
  ms: number[]
  /** from the first login to the stop */
  seconds: number
}

const statuses: Record<string, number> = {}
const ms: number[] = []
const inFlight = new Set<Promise<void>>()
const body = JSON.stringify({ username, password })

function fire (): void {
  const t0 = performance.now()
  // a login without an answer in 10 s is an error, not a wait of undici's 300 s that the bench's stop() would sit through
  const login = fetch(`${base}/api/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(10_000) })
    .then(async (res) => {
      await res.arrayBuffer()
      statuses[res.status] = (statuses[res.status] ?? 0) + 1
      ms.push(performance.now() - t0)
    })
    .catch(() => { statuses.error = (statuses.error ?? 0) + 1 })
    .finally(() => inFlight.delete(login))
  inFlight.add(login)
}

const started = performance.now()
const timer = setInterval(fire, 1000 / rate)
fire()
process.stdout.write('ready\n')

let stopping = false
async function stop (): Promise<void> {
  if (stopping) return
  stopping = true
  clearInterval(timer)
  const seconds = (performance.now() - started) / 1000
  await Promise.all(inFlight)
  const result: LoginLoadResult = { statuses, ms, seconds }
  // an exit code of 0 only once the line is out (a closed pipe is no reason to hang)
  process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0))
  setTimeout(() => process.exit(0), 1000).unref()
}
process.stdin.on('end', () => { void stop() }).on('error', () => { void stop() }).resume()
process.once('SIGTERM', () => { void stop() })
process.stdout.on('error', () => process.exit(0))
