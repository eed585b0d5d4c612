// Runs the route tests against a real SQL Server when MSSQL_TEST_URL is set; skipped (and says so) otherwise.
import { spawnSync } from 'node:child_process'
import t from 'tap'

const url = process.env.MSSQL_TEST_URL

if (!url) {
  t.test('route tests against SQL Server', { skip: 'MSSQL_TEST_URL is not set: the route tests ran on SQLite only' }, async () => {})
} else if (process.env.GATEWAY_TEST_DB === 'mssql') {
  t.pass('nested run')
} else {
  t.test('route tests against SQL Server', { timeout: 600000 }, async (t) => {
    const run = spawnSync(process.execPath, ['node_modules/.bin/tap', '--disable-coverage', '--jobs=1', '--reporter=terse', 'test/routes/'], {
      env: { ...process.env, GATEWAY_TEST_DB: 'mssql' },
      encoding: 'utf8',
      timeout: 590000
    })
    t.comment(run.stdout.slice(-4000))
    t.equal(run.status, 0, 'every route test passes on SQL Server')
  })
}
