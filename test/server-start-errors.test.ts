// picking-gateway serve refusing to start on a fault of the installation that a restart would meet again:
// a TLS certificate or key it cannot read or use, a SQLite file it may not write. Exit 78 (systemd does
// not restart), naming the key or the path.
import { execFileSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { main } from '../src/commands.js'
import { LISTENING, START_MS, gatewaySetup, startCli, startCommand } from './helpers/process.js'
import { nodeArgs } from './helpers/built.js'
import { tempDir } from './helpers/temp.js'

// gateway processes one after another, some waiting out a grace period: on a busy machine (CI beside other
// work) past .taprc's 120 s, which cut the file off midway
t.setTimeout(8 * START_MS)

// root writes anyway: the gateway runs as nobody then (setpriv), without tap's coverage hook, which would write as nobody too
const ROOT_USER = process.getuid?.() === 0
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p))

/** The CLI with `args` as nobody when the tests run as root (setpriv), else as the tests' own user; without tap's coverage hook. */
function asNobody (t: Parameters<typeof startCommand>[0], env: NodeJS.ProcessEnv, args: string[]): ReturnType<typeof startCommand> {
  const node = [process.execPath, ...nodeArgs('src/cli.ts', { withCoverage: false }), ...args]
  return ROOT_USER
    ? startCommand(t, SETPRIV!, ['--reuid=65534', '--regid=65534', '--clear-groups', ...node], env)
    : startCommand(t, node[0]!, node.slice(1), env)
}

t.test('a SQLite file the gateway may not write: a configuration error (78) naming the path and what to make writable', { skip: ROOT_USER && SETPRIV === undefined ? 'running as root without setpriv' : false }, async (t) => {
  const { env, dir } = await gatewaySetup(t)
  const file = join(dir, 'g.db')
  chmodSync(join(dir, 'config.json'), 0o644)
  chmodSync(file, 0o444)
  chmodSync(dir, 0o555)
  t.teardown(() => chmodSync(dir, 0o700))
  const run = asNobody(t, env, ['serve'])
  const exit = await run.exitWithin(START_MS)
  t.equal(exit?.code, 78, 'exit 78, systemd does not restart (before: exit 1, "it takes no changes until it is writable again")')
  t.match(run.err(), `database.url: the SQLite database file '${file}' cannot be written: the gateway writes to it and creates '${file}-wal' and '${file}-shm' beside it, so the file, its directory and any -wal and -shm file there must be writable for the user the gateway runs as (uid ${ROOT_USER ? 65534 : process.getuid!()})`)
  t.notMatch(run.out(), LISTENING)
})

t.test('a SQLite file in WAL mode (as after every first start) that the gateway may not write, in a directory it may: exit 78 too, not serving read-only', { skip: ROOT_USER && SETPRIV === undefined ? 'running as root without setpriv' : false }, async (t) => {
  const { env, dir } = await gatewaySetup(t)
  const file = join(dir, 'g.db')
  // the header's read and write versions: 2 is WAL (https://sqlite.org/fileformat.html)
  t.same([...readFileSync(file).subarray(18, 20)], [2, 2], 'db init left it in WAL mode, which opening it needs no write for')
  chmodSync(join(dir, 'config.json'), 0o644)
  // its own file, made read-only (root's would not open at all for nobody: SQLite cannot make its -wal for it)
  if (ROOT_USER) chownSync(file, 65534, 65534)
  chmodSync(file, 0o444)
  chmodSync(dir, 0o777)
  t.teardown(() => chmodSync(dir, 0o700))
  const run = asNobody(t, env, ['serve'])
  const exit = await run.exitWithin(START_MS)
  t.equal(exit?.code, 78, 'exit 78 (before: SQLite opened it read-only without a word, and the gateway served, every write a 503)')
  t.match(run.err(), `database.url: the SQLite database file '${file}' cannot be written`)
  t.notMatch(run.out(), LISTENING)
  t.notOk(existsSync(`${file}-shm`), 'no -shm left beside it, as read-only as the file, for the next start to meet once the file is writable')
})

t.test('user list on a SQLite file its user may not write lists it, read-only: it only reads (before: exit 1, "the database is read-only")', { skip: ROOT_USER && SETPRIV === undefined ? 'running as root without setpriv' : false }, async (t) => {
  const { env, dir } = await gatewaySetup(t)
  const file = join(dir, 'g.db')
  chmodSync(join(dir, 'config.json'), 0o644)
  if (ROOT_USER) chownSync(file, 65534, 65534)
  chmodSync(file, 0o444)
  chmodSync(dir, 0o777)
  t.teardown(() => chmodSync(dir, 0o700))
  const run = asNobody(t, env, ['user', 'list'])
  // its exit code is not looked at: under tap's loaders as nobody, the coverage hook's own write at exit may fail
  t.ok(await run.exitWithin(START_MS), 'it ends')
  t.notMatch(run.err(), /read-only/)
  t.match(run.out(), /^ID\tUSERNAME\tTYPE\tENABLED\tLAST LOGIN\n1\tadmin\tadmin\tyes\t/)
})

t.test('user list on a SQLite file in WAL mode without its -wal and -shm, in a directory its user may not write: says why SQLite cannot read it, not "read-only"', { skip: ROOT_USER && SETPRIV === undefined ? 'running as root without setpriv' : false }, async (t) => {
  const { env, dir } = await gatewaySetup(t)
  const file = join(dir, 'g.db')
  t.same([...readFileSync(file).subarray(18, 20)], [2, 2], 'db init left it in WAL mode')
  // as when the gateway has stopped: no process has it open, so no -wal and -shm are there
  for (const suffix of ['-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true })
  chmodSync(join(dir, 'config.json'), 0o644)
  if (ROOT_USER) chownSync(file, 65534, 65534)
  chmodSync(dir, 0o555)
  t.teardown(() => chmodSync(dir, 0o700))
  const run = asNobody(t, env, ['user', 'list'])
  t.ok(await run.exitWithin(START_MS), 'it ends')
  t.notMatch(run.err(), /it takes no changes/, 'before: "The database is read-only: it takes no changes until it is writable again", for a command that writes nothing')
  t.match(run.err(), `the SQLite database file '${file}' is in WAL mode and its -wal and -shm files are not beside it (no process has it open now), so SQLite reads it only for a user that may write its directory '${dir}'`)
})

t.test('server.tls with a file it cannot read or a key that is not the certificate\'s: exit 78 naming the key, as check-config says', async (t) => {
  const dir = tempDir(t, 'pg-tls-')
  const pem = (name: string) => join(dir, name)
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', pem('key.pem'), '-out', pem('cert.pem'), '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' })
  execFileSync('openssl', ['genrsa', '-out', pem('other-key.pem'), '2048'], { stdio: 'ignore' })
  const cases: Array<[string, { cert: string, key: string }, RegExp[]]> = [
    ['missing files', { cert: pem('missing-cert.pem'), key: pem('missing-key.pem') }, [/server\.tls\.cert: cannot read ".*missing-cert\.pem" \(ENOENT\)/, /server\.tls\.key: cannot read ".*missing-key\.pem" \(ENOENT\)/]],
    ['a directory as the key', { cert: pem('cert.pem'), key: dir }, [/server\.tls\.key: cannot read ".*" \(EISDIR\)/]],
    ['the key of another certificate', { cert: pem('cert.pem'), key: pem('other-key.pem') }, [/server\.tls: ".*cert\.pem" and ".*other-key\.pem" are not a PEM certificate and its private key \(.*key values mismatch\)/]]
  ]
  for (const [what, tls, messages] of cases) {
    const { env } = await gatewaySetup(t, { tls })
    const run = startCli(t, ['serve'], env)
    // from the spawn, start-up included: under the coverage loader beside other work it took over 10 s (HUNG_MS) once
    const exit = await run.exitWithin(START_MS)
    t.ok(exit, `${what}: exited`)
    t.equal(exit?.code, 78, `${what}: a configuration error, which systemd does not restart (before: exit 1)`)
    for (const message of messages) t.match(run.err(), message, `${what}: names the key and the file`)
    t.notMatch(run.out(), LISTENING, `${what}: never listened`)
    const err: string[] = []
    const code = await main(['check-config'], { out: () => {}, err: (line) => { err.push(line) }, readStdin: async () => '', env })
    t.equal(code, 78, `${what}: check-config refuses it too (before: "Configuration file OK")`)
    for (const message of messages) t.match(err.join('\n'), message)
  }
  const { env } = await gatewaySetup(t, { tls: { cert: pem('cert.pem'), key: pem('key.pem') } })
  t.equal(await main(['check-config'], { out: () => {}, err: () => {}, readStdin: async () => '', env }), 0, 'a certificate with its key passes')
})
