// npm run bench's helper processes end: when ready and told to stop, and when they never get ready.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { startHelper } from '../bench/harness.js'
import { tempDir } from './helpers/temp.js'

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

t.test('a helper that never prints "ready" is killed at its deadline, and the bench is told why', async (t) => {
  const dir = tempDir(t, 'pg-helper-')
  const script = join(dir, 'stuck.mjs')
  writeFileSync(script, `import { writeFileSync } from 'node:fs'\nwriteFileSync(${JSON.stringify(join(dir, 'pid'))}, String(process.pid))\nsetInterval(() => {}, 1000)\n`)
  const started = Date.now()
  await t.rejects(startHelper('stuck', script, {}, 1000), { message: 'stuck did not print "ready" within 1 s' })
  t.ok(Date.now() - started < 5000, 'within its deadline')
  const pid = Number(readFileSync(join(dir, 'pid'), 'utf8'))
  const gone = Date.now() + 5000
  while (alive(pid) && Date.now() < gone) await new Promise((resolve) => setTimeout(resolve, 50))
  t.notOk(alive(pid), 'the process is gone')
})

t.test('a helper that gets ready ends when its stdin does, giving its last line', async (t) => {
  const dir = tempDir(t, 'pg-helper-')
  const script = join(dir, 'ok.mjs')
  writeFileSync(script, `process.stdout.write('ready\\n')\nprocess.stdin.resume().on('end', () => process.stdout.write('done 42\\n'))\n`)
  const helper = await startHelper('ok', script, {})
  t.equal(await helper.stop(), 'done 42')
})

t.test('a helper that ends before it is ready fails the start with its exit code', async (t) => {
  const dir = tempDir(t, 'pg-helper-')
  const script = join(dir, 'fails.mjs')
  writeFileSync(script, 'process.exit(3)\n')
  await t.rejects(startHelper('fails', script, {}), { message: 'fails ended while starting (3)' })
})
