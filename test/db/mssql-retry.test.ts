// Regression: with the server unreachable, the background reconnect must back off, not spin.
import t from 'tap'
import { DatabaseUnavailableError } from '../../src/db/errors.js'
import { openDatabase } from '../../src/db/index.js'
import { settledThisTurn } from '../helpers/wait.js'

t.test('an unreachable SQL Server is retried with backoff and answers 503 at once', async (t) => {
  const lines: Array<{ retryInMs?: unknown }> = []
  const logger = { info () {}, warn: (obj: object) => { lines.push(obj) }, error: (obj: object) => { lines.push(obj) } }
  // Port 1 on loopback: connection refused at once, as when SQL Server is stopped.
  const db = openDatabase('mssql://gw:secret@127.0.0.1:1/Picking?encrypt=false', { logger, connectTimeoutMs: 500 })
  t.teardown(() => db.close())
  await t.rejects(db.ping(), DatabaseUnavailableError)
  await new Promise((resolve) => setTimeout(resolve, 1500))
  t.ok(lines.length >= 1 && lines.length <= 6, `${lines.length} retry log lines in 1.5 s`)
  t.ok(lines.every((l) => typeof l.retryInMs === 'number' && l.retryInMs > 0), 'every retry is scheduled with a delay')
  const query = db.query({ text: 'SELECT 1', params: [] })
  t.equal(await settledThisTurn(query), 'rejected', 'queries while it is down fail at once')
  await t.rejects(query, DatabaseUnavailableError)
})
