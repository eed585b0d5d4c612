// The SQL Server dialect's pure parts (no server here) and its behaviour when the server cannot be reached.
import { EventEmitter } from 'node:events'
import { createServer } from 'node:net'
import sql from 'mssql'
import t from 'tap'
import { ConflictError, DatabaseUnavailableError, missingName } from '../../src/db/errors.js'
import { openDatabase } from '../../src/db/index.js'
import { inspectStorage, mappingFit } from '../../src/db/storage.js'
import { Repository } from '../../src/db/repository.js'
import { createReferenceTables, referenceColumns } from '../../src/db/init.js'
import { isMissingTable, materials, referenceMappings, resources } from '../../src/db/resources.js'
import type { ColumnInfo, Database, Executor, Statement, TableMapping } from '../../src/db/types.js'
import {
  backoffDelay, classifyMssqlError, CLOCK_STATEMENT, columnsStatement, queryKeepingRaised, mssqlColumnInfo, ConnectionSupervisor, mssqlType, openMssql, parseMssqlUrl, retryDeadlocks, shortReal, statementRows, toDbError, versionProblem, wideDecimal
} from '../../src/db/mssql.js'
import { readUNumeric128LE } from 'tedious/lib/token/helpers.js'
import { trackResources } from '../helpers/resources.js'
import { settledThisTurn } from '../helpers/wait.js'

/** an error as tedious raises it for SQL Server error `number` */
const tedious = (number: number, message = 'x'): Error => Object.assign(new Error(message), { info: { number, message } })

interface LogLine { level: string, obj: object, msg?: string }
function recorder (): { lines: LogLine[], logger: { info: (o: object, m?: string) => void, warn: (o: object, m?: string) => void, error: (o: object, m?: string) => void } } {
  const lines: LogLine[] = []
  const at = (level: string) => (obj: object, msg?: string) => { lines.push({ level, obj, msg }) }
  return { lines, logger: { info: at('info'), warn: at('warn'), error: at('error') } }
}

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

t.test('parseMssqlUrl', async (t) => {
  const config = parseMssqlUrl('mssql://pick%40gate:p%40ss%3Aw%2Frd@db.example.local:1444/Power%20Pick?encrypt=true&trustServerCertificate=false&instanceName=SQLEXPRESS&packetSize=8192&pool.max=20&appName=erp-sync')
  t.same(config, {
    server: 'db.example.local',
    port: 1444,
    database: 'Power Pick',
    user: 'pick@gate',
    password: 'p@ss:w/rd',
    connectionTimeout: 5000,
    requestTimeout: 15000,
    options: { appName: 'erp-sync', encrypt: true, trustServerCertificate: false, instanceName: 'SQLEXPRESS', packetSize: 8192 },
    pool: { max: 20 }
  })
  const minimal = parseMssqlUrl('mssql://sa:secret@[::1]/picking', { password: 'from-credential', connectTimeoutMs: 2000, requestTimeoutMs: 3000 })
  t.equal(minimal.server, '::1')
  t.equal(minimal.port, undefined, 'driver default port')
  t.equal(minimal.password, 'from-credential', 'an explicit password wins over the URL')
  t.equal(minimal.connectionTimeout, 2000)
  t.equal(minimal.requestTimeout, 3000)
  t.same(minimal.options, { appName: 'picking-gateway' })
  t.equal(parseMssqlUrl('mssql://host/db').user, undefined)
  t.equal(parseMssqlUrl('mssql://host/db', { password: 'x' }).password, 'x')

  for (const [url, message] of [
    ['not a url', /not a valid mssql:\/\/ URL/],
    ['postgres://u:p@host/db', /expected the mssql: scheme/],
    ['mssql://u:p@host', /exactly one path segment/],
    ['mssql://u:p@host/a/b', /exactly one path segment/],
    ['mssql://u:topsecret@/db', /./]
  ] as const) {
    t.throws(() => parseMssqlUrl(url), { message }, url)
    try { parseMssqlUrl(url) } catch (err) { t.notMatch((err as Error).message, /topsecret/, 'the password is never repeated') }
  }
})

t.test('mssqlType: explicit SQL types per kind', async (t) => {
  const type = (kind: 'string' | 'integer' | 'number' | 'boolean' | 'datetime', value: string | number | boolean | Date | null): unknown => mssqlType({ name: 'p', kind, value })
  t.same(type('string', 'abc'), { type: sql.NVarChar, length: 4000 })
  t.same(type('string', null), { type: sql.NVarChar, length: 4000 })
  t.same(type('string', 'x'.repeat(4000)), { type: sql.NVarChar, length: 4000 })
  t.same(type('string', 'x'.repeat(4001)), { type: sql.NVarChar, length: sql.MAX })
  t.equal((type('integer', 5) as { type: unknown }).type, sql.Int)
  t.equal((type('integer', 2147483647) as { type: unknown }).type, sql.Int)
  t.equal((type('integer', -2147483648) as { type: unknown }).type, sql.Int)
  t.equal((type('integer', 2147483648) as { type: unknown }).type, sql.BigInt)
  t.equal((type('integer', null) as { type: unknown }).type, sql.Int)
  t.equal((type('number', 1.5) as { type: unknown }).type, sql.Float)
  t.equal((type('boolean', true) as { type: unknown }).type, sql.Bit)
  t.same(type('datetime', new Date()), { type: sql.DateTime2, scale: 3 })
})

t.test('classifyMssqlError and toDbError', async (t) => {
  const unique = new sql.RequestError(tedious(2627, "Violation of UNIQUE KEY constraint 'UQ_materials_material_number'. Cannot insert duplicate key in object 'dbo.materials'."), 'EREQUEST')
  t.equal(classifyMssqlError(unique), 'conflict')
  t.equal(classifyMssqlError(new sql.RequestError(tedious(2601), 'EREQUEST')), 'conflict')
  const conflict = toDbError(unique)
  t.type(conflict, ConflictError)
  t.notMatch((conflict as Error).message, /dbo|UQ_/, 'no table or constraint names in the message')
  const deadlock = new sql.RequestError(tedious(1205, 'Transaction (Process ID 53) was deadlocked'), 'EREQUEST')
  t.equal(classifyMssqlError(deadlock), 'deadlock')
  t.type(toDbError(deadlock), DatabaseUnavailableError)
  const aborted = Object.assign(new sql.TransactionError('Transaction has been aborted.', 'EABORT'), { originalError: deadlock })
  t.equal(classifyMssqlError(aborted), 'deadlock', 'an aborted transaction is classified by its reason')

  for (const code of ['ESOCKET', 'ETIMEOUT', 'ELOGIN', 'ECONNCLOSED', 'ENOTOPEN', 'EINSTLOOKUP']) {
    t.equal(classifyMssqlError(new sql.ConnectionError(Object.assign(new Error('x'), { code }))), 'connection', `ConnectionError ${code}`)
  }
  t.equal(classifyMssqlError(new sql.ConnectionError('Connection is closed.', 'ECONNCLOSED')), 'connection')
  t.equal(classifyMssqlError(new sql.RequestError(tedious(4060, 'Cannot open database "picking" requested by the login.'), 'EREQUEST')), 'connection')
  t.equal(classifyMssqlError(new sql.RequestError(tedious(40613), 'EREQUEST')), 'connection', 'Azure SQL: database not currently available')
  // Always On: the availability database is not accessible on this replica, or is between roles in a failover (before: 500)
  for (const number of [976, 978, 983]) t.equal(classifyMssqlError(new sql.RequestError(tedious(number), 'EREQUEST')), 'connection', `availability group error ${number}`)
  const timeout = new sql.RequestError(Object.assign(new Error('Timeout: Request failed to complete in 15000ms'), { code: 'ETIMEOUT' }), 'EREQUEST')
  t.equal(classifyMssqlError(timeout), 'unavailable', 'a slow request does not mark the server down')
  t.equal(classifyMssqlError(new sql.RequestError(Object.assign(new Error('socket hang up'), { code: 'ESOCKET' }), 'EREQUEST')), 'unavailable')
  t.equal(classifyMssqlError(new sql.RequestError(tedious(1222, 'Lock request time out period exceeded.'), 'EREQUEST')), 'unavailable')
  t.equal(classifyMssqlError(new sql.RequestError('Canceled.', 'ECANCEL')), 'unavailable')
  t.match(toDbError(timeout), { name: 'DatabaseUnavailableError', statusCode: 503, message: 'The database did not answer in time' })
  t.match(toDbError(new sql.ConnectionError('x', 'ESOCKET')), { name: 'DatabaseUnavailableError', message: 'The database is unavailable' })

  // a column or table of the mapping gone while serving: 503 in the server's own words, also from an aborted transaction
  const column = new sql.RequestError(tedious(207, "Invalid column name 'Bez'."), 'EREQUEST')
  t.equal(classifyMssqlError(column), 'schema')
  t.match(toDbError(column), { name: 'MappingGoneError', statusCode: 503, code: 'SCHEMA_MISMATCH', message: /^A table or column the request needs is missing from the database/, detail: "Invalid column name 'Bez'" })
  t.notMatch((toDbError(column) as Error).message, /Bez/, 'the answer names no column')
  const table = new sql.RequestError(tedious(208, "Invalid object name 'dbo.Artikel'."), 'EREQUEST')
  t.match(toDbError(table), { statusCode: 503, detail: "Invalid object name 'dbo.Artikel'" })
  t.match(toDbError(Object.assign(new sql.TransactionError('Transaction has been aborted.', 'EABORT'), { originalError: column })), { statusCode: 503, detail: "Invalid column name 'Bez'" })

  // a grant revoked or the database set read-only: 503 saying which, the object only in the log (before: 500)
  const denied = new sql.RequestError(tedious(229, "The SELECT permission was denied on the object 'Artikel', database 'WMS', schema 'dbo'."), 'EREQUEST')
  t.equal(classifyMssqlError(denied), 'refused')
  t.equal(classifyMssqlError(new sql.RequestError(tedious(230, "The UPDATE permission was denied on the column 'Bestand' of the object 'Artikel'."), 'EREQUEST')), 'refused')
  // a login that reaches the server but may not use the database, or create a table (db init)
  t.equal(classifyMssqlError(new sql.RequestError(tedious(916, 'The server principal "gw" is not able to access the database "WMS" under the current security context.'), 'EREQUEST')), 'refused')
  t.equal(classifyMssqlError(new sql.RequestError(tedious(262, "CREATE TABLE permission denied in database 'WMS'."), 'EREQUEST')), 'refused')
  t.match(toDbError(denied), { name: 'DatabaseUnavailableError', statusCode: 503, code: 'DATABASE_UNAVAILABLE', message: /permission denied/ })
  t.notMatch((toDbError(denied) as Error).message, /Artikel|WMS/, 'the answer names no object')
  const readOnly = new sql.RequestError(tedious(3906, 'Failed to update database "WMS" because the database is read-only.'), 'EREQUEST')
  t.match(toDbError(readOnly), { statusCode: 503, message: 'The database is read-only: it takes no changes until it is writable again' })
  t.match(toDbError(Object.assign(new sql.TransactionError('Transaction has been aborted.', 'EABORT'), { originalError: readOnly })), { statusCode: 503, message: /read-only/ }, 'inside an aborted transaction too')

  // a trigger's INSERT into another table hit a unique key, and the server ended the batch (3616): node-mssql throws the 3616
  const ended = Object.assign(new sql.RequestError(tedious(3616, 'An error was raised during trigger execution. The batch has been aborted and the user transaction, if any, has been rolled back.'), 'EREQUEST'), {
    precedingErrors: [new sql.RequestError(tedious(2627, "Violation of PRIMARY KEY constraint 'PK_ArtHist'. Cannot insert duplicate key in object 'dbo.ArtHist'."), 'EREQUEST')]
  })
  t.equal(classifyMssqlError(ended), 'conflict', 'before: other, a 500')
  t.type(toDbError(ended), ConflictError)
  const victim = Object.assign(new sql.RequestError(tedious(3616, 'An error was raised during trigger execution.'), 'EREQUEST'), { precedingErrors: [deadlock] })
  t.equal(classifyMssqlError(victim), 'deadlock', 'a deadlock inside a trigger is retried as any')
  const raised = Object.assign(new sql.RequestError(tedious(3609, 'The transaction ended in the trigger. The batch has been aborted.'), 'EREQUEST'), { precedingErrors: [new sql.RequestError(tedious(50000, 'Artikel gesperrt'), 'EREQUEST')] })
  t.equal(classifyMssqlError(raised), 'other', "a trigger's own RAISERROR stays the data fault's (mssqlDataFault)")
  const syntax = new sql.RequestError(tedious(102, "Incorrect syntax near 'x'."), 'EREQUEST')
  t.equal(classifyMssqlError(syntax), 'other')
  t.equal(toDbError(syntax), syntax, 'other errors pass through unchanged (the error handler hides them)')
  t.equal(classifyMssqlError(new Error('plain')), 'other')
  t.equal(classifyMssqlError(null), 'other')
  t.equal(classifyMssqlError('text'), 'other')
})

t.test('retryDeadlocks', async (t) => {
  const deadlock = (): Error => new sql.RequestError(Object.assign(new Error('deadlocked'), { info: { number: 1205 } }), 'EREQUEST')
  const pauses: number[] = []
  const pause = async (attempt: number): Promise<void> => { pauses.push(attempt) }
  let calls = 0
  t.equal(await retryDeadlocks(async () => { if (++calls < 4) throw deadlock(); return 'done' }, 3, pause), 'done', 'third retry succeeds')
  t.equal(calls, 4)
  t.same(pauses, [1, 2, 3])
  calls = 0
  await t.rejects(retryDeadlocks(async () => { calls++; throw deadlock() }, 3, pause), { message: 'deadlocked' }, 'gives up after 3 retries')
  t.equal(calls, 4)
  calls = 0
  await t.rejects(retryDeadlocks(async () => { calls++; throw new Error('syntax') }, 3, pause), { message: 'syntax' })
  t.equal(calls, 1, 'other errors are not retried')
  calls = 0
  t.equal(await retryDeadlocks(async () => { if (++calls < 2) throw deadlock(); return 1 }), 1, 'default pause')
})

t.test('statementRows: the batch\'s last result set, after any a trigger returned', async (t) => {
  const ours = [{ id: 7, name: 'created' }]
  const audit = [{ AuditId: 1, Aktion: 'INSERT' }]
  t.equal(statementRows({ recordset: ours, recordsets: [ours] }), ours)
  t.equal(statementRows({ recordset: audit, recordsets: [audit, ours] }), ours, 'an AFTER INSERT trigger that SELECTs: its rows come first')
  t.same(statementRows({ recordset: audit, recordsets: [audit, []] }), [], 'the read-back found nothing: nothing, not the trigger\'s rows')
  t.same(statementRows({ recordsets: [] }), [])
  t.same(statementRows({}), [])
})

/** What tedious reads for `digits` (a decimal text) stored in a decimal(38, scale): its own word sum, divided. */
function tediousDecimal38 (digits: string, scale: number): number {
  // the sign travels in a byte of its own, the magnitude in four words
  const sign = digits.startsWith('-') ? -1 : 1
  const [whole, fraction = ''] = digits.replace(/^-/, '').split('.')
  let k = BigInt(whole + fraction.padEnd(scale, '0'))
  const bytes = Buffer.alloc(16)
  for (let i = 0; i < 4; i++, k >>= 32n) bytes.writeUInt32LE(Number(k & 0xffffffffn), i * 4)
  return readUNumeric128LE(bytes, 0).value * sign / Math.pow(10, scale)
}

t.test('statementRows: a decimal of 16 digits or more and a real read as stored, not as the driver widened them', async (t) => {
  t.equal(tediousDecimal38('23.63', 20), 23.630000000000003, 'the driver\'s own reading (a decimal(38,20), as Dynamics NAV declares every decimal)')
  t.equal(tediousDecimal38('99.99', 20), 99.99000000000001)
  const raw = [{ qty: tediousDecimal38('23.63', 20), small: 23.63, narrow: 12.345, weight: Math.fround(1.1), name: 'x' }]
  Object.defineProperty(raw, 'columns', {
    value: {
      qty: { type: sql.Decimal, precision: 38, scale: 20 },
      small: { type: sql.Numeric, precision: 38, scale: 20 },
      narrow: { type: sql.Decimal, precision: 15, scale: 3 },
      weight: { type: sql.Real },
      name: { type: sql.NVarChar }
    },
    enumerable: false
  })
  t.same(statementRows({ recordset: raw, recordsets: [raw] }), [{ qty: 23.63, small: 23.63, narrow: 12.345, weight: 1.1, name: 'x' }],
    'before: 23.630000000000003, which the API showed, an update of 23.63 took for a change, and a cursor carried as decimal(38,15) 23.630000000000004, equal to no stored 23.63 (its ties skipped)')
  // every value the driver reads off by up to 2 units in the last place comes back as the nearest double of its digits
  for (const digits of ['0.07', '12.345', '23.69', '1234.5678', '-5.25', '0', '99999999.99999']) t.equal(wideDecimal(tediousDecimal38(digits, 20)), Number(digits), digits)
  t.equal(wideDecimal(1.2345678901234567), 1.2345678901234567, 'a value of 17 digits stays as read')
  t.equal(wideDecimal(0.1 + 0.2), 0.3, 'within 4 units in the last place of 15 digits')
  for (const n of [1.1, 0.1, 2.5, 3.4e38, -7.3, 1e-10, 123456.7]) t.equal(shortReal(Math.fround(n)), n, `real ${n}`)
  t.equal(shortReal(Math.fround(16777217)), 16777216, 'beyond 2^24 a real holds the nearest even number')
})

t.test('statementRows: a whole number in a decimal of scale 0 stays as read, all 16 digits of it', async (t) => {
  // the driver reads a decimal(18,0) exactly up to 2^53; 15 significant digits would move a key to another row's
  const raw = [{ id: 2024010112000011, big: 9007199254740991 }]
  Object.defineProperty(raw, 'columns', {
    value: { id: { type: sql.Decimal, precision: 18, scale: 0 }, big: { type: sql.Numeric, precision: 19, scale: 0 } },
    enumerable: false
  })
  t.same(statementRows({ recordset: raw, recordsets: [raw] }), [{ id: 2024010112000011, big: 9007199254740991 }])
})

t.test('a create on SQL Server runs in a transaction, so that a trigger\'s RAISERROR without ROLLBACK leaves no row behind a refusal', async (t) => {
  const seen: string[] = []
  const row = { id: 1, materialNumber: 'M-1', name: 'x', createdAt: new Date(), modifiedAt: new Date() }
  const executor = (where: string): Executor => ({
    query: async (stmt: Statement) => { seen.push(`${where}: ${stmt.text.slice(0, 40)}`); return [row] },
    execute: async () => 0
  })
  const db = { dialect: 'mssql', ...executor('alone'), queryValues: undefined, transaction: async <T>(fn: (tx: Executor) => Promise<T>) => await fn(executor('in a transaction')) } as unknown as Database
  const column = (name: string): ColumnInfo => ({ name, type: name === 'id' ? 'int' : name.endsWith('_at') ? 'datetime2' : 'nvarchar', nullable: !['id', 'material_number', 'name'].includes(name), hasDefault: name === 'id', identity: name === 'id', computed: false, unique: ['id', 'material_number'].includes(name) })
  const repo = new Repository(db, materials, referenceMappings.materials, { columns: Object.values(referenceMappings.materials.columns).map((c) => column(c as string)) })
  await repo.create({ materialNumber: 'M-1', name: 'x' })
  t.same(seen, ['in a transaction: DECLARE @inserted TABLE ([id] int); INSE'])

  // an INSTEAD OF INSERT trigger inserts the row itself: the read-back by the OUTPUT id finds nothing, the unique number finds it
  seen.length = 0
  const insteadOf = { ...db, transaction: async <T>(fn: (tx: Executor) => Promise<T>) => await fn({
    query: async (stmt: Statement) => { seen.push(stmt.text.slice(0, 40)); return stmt.text.startsWith('DECLARE') ? [] : [{ ...row, id: 42 }] },
    execute: async () => 0
  }) } as unknown as Database
  const viaTrigger = new Repository(insteadOf, materials, referenceMappings.materials, { columns: Object.values(referenceMappings.materials.columns).map((c) => column(c as string)) })
  t.match(await viaTrigger.create({ materialNumber: 'M-1', name: 'x' }), { id: 42, materialNumber: 'M-1' }, 'before: 500, the insert returned no row')
  t.equal(seen.length, 2)
  t.match(seen[1], /^SELECT \[id\] AS \[id\]/)
})

t.test('SQL Server: a unique value no index guards is locked (per field, or per value under a binary collation), then looked for; a lock not granted in time is a 503', async (t) => {
  const row = { id: 1, materialNumber: 'M-1', name: 'x', createdAt: new Date(), modifiedAt: new Date() }
  const seen: string[] = []
  let rc = 0
  const tx: Executor = {
    query: async (stmt: Statement) => {
      seen.push(stmt.text.includes('sp_getapplock') ? `lock ${String(stmt.params[0].value)}` : stmt.text.slice(0, 20))
      if (stmt.text.includes('sp_getapplock')) return [{ rc }]
      return stmt.text.startsWith('DECLARE @inserted') ? [row] : []
    },
    execute: async () => 0
  }
  const db = { dialect: 'mssql', query: tx.query, execute: tx.execute, queryValues: undefined, transaction: async <T>(fn: (tx: Executor) => Promise<T>) => await fn(tx) } as unknown as Database
  // material_number has no unique index of its own (a legacy table's plain index)
  const columns = Object.values(referenceMappings.materials.columns).map((c): ColumnInfo => ({ name: c as string, type: c === 'id' ? 'int' : 'nvarchar', nullable: c !== 'id', hasDefault: c === 'id', identity: c === 'id', computed: false, unique: c === 'id' }))
  const repo = new Repository(db, materials, referenceMappings.materials, { columns })
  await repo.create({ materialNumber: 'Ab-1', name: 'x' })
  t.same(seen, ['lock picking-gateway:dbo.materials:materialNumber', 'SELECT [id] AS [id],', 'DECLARE @inserted TA'], 'the lock first: the field\'s, whose collation is not known')
  // under a collation that compares as no text function of the gateway does, every value takes the field's lock:
  // before, 'Müller' and 'Muller' (accent-insensitive), 'Maß' and 'Mass' (a Windows collation) took two locks and both passed
  const collated = (collation: string): Repository => new Repository(db, materials, referenceMappings.materials, { columns: columns.map((c) => c.name === 'material_number' ? { ...c, collation } : c) })
  for (const collation of ['Latin1_General_CI_AI', 'Latin1_General_100_CI_AS_WS', 'Latin1_General_CS_AS', 'SQL_Latin1_General_CP1_CI_AS']) {
    seen.length = 0
    await collated(collation).create({ materialNumber: 'Müller', name: 'x' })
    await collated(collation).create({ materialNumber: 'Muller', name: 'x' })
    await collated(collation).create({ materialNumber: 'Maß', name: 'x' })
    t.same(seen.filter((s) => s.startsWith('lock')), Array(3).fill('lock picking-gateway:dbo.materials:materialNumber'), `${collation}: one lock for all`)
  }
  // a binary collation compares code points (trailing blanks aside): the value, trimmed and in any case, names its lock
  for (const collation of ['Latin1_General_BIN2', 'Latin1_General_100_BIN2_UTF8', 'Latin1_General_BIN']) {
    seen.length = 0
    await collated(collation).create({ materialNumber: 'Ab-1', name: 'x' })
    t.same(seen[0], 'lock picking-gateway:dbo.materials:materialNumber:ab-1', collation)
  }
  rc = -1
  await t.rejects(repo.create({ materialNumber: 'Ab-2', name: 'x' }), { name: 'DatabaseUnavailableError', message: 'Another write of materialNumber is still running; try again' }, 'the field\'s lock: the other write may be of another value')
  await t.rejects(collated('Latin1_General_BIN2').create({ materialNumber: 'Ab-2', name: 'x' }), { name: 'DatabaseUnavailableError', message: "Another write of materialNumber 'Ab-2' is still running; try again" })
})

t.test('SQL Server, newIds max+1: a key column at its type\'s last value is a 503 naming it, not an INSERT that fails with error 220 (a 400 blaming the request)', async (t) => {
  const seen: Statement[] = []
  let max: unknown = 32767
  const tx: Executor = {
    query: async (stmt: Statement) => {
      seen.push(stmt)
      if (stmt.text.startsWith('SELECT MAX(')) return [{ max }]
      return stmt.text.startsWith('DECLARE @inserted') ? [{ id: stmt.params.at(-1)?.value, materialNumber: 'M-1', name: 'x' }] : []
    },
    execute: async () => 0
  }
  const db = { dialect: 'mssql', query: tx.query, execute: tx.execute, queryValues: undefined, transaction: async <T>(fn: (tx: Executor) => Promise<T>) => await fn(tx) } as unknown as Database
  const keyed = (type: string, o: Partial<ColumnInfo> = {}): ColumnInfo[] => Object.values(referenceMappings.materials.columns).map((c): ColumnInfo =>
    c === 'id' ? { name: 'id', type, nullable: false, hasDefault: false, identity: false, computed: false, unique: true, ...o } : { name: c as string, type: 'nvarchar', nullable: c !== 'material_number' && c !== 'name', hasDefault: false, identity: false, computed: false, unique: c === 'material_number' })
  const repo = new Repository(db, materials, { ...referenceMappings.materials, newIds: 'max+1' }, { columns: keyed('smallint', { precision: 5, scale: 0 }) })
  await t.rejects(repo.create({ materialNumber: 'M-1', name: 'x' }), { name: 'DatabaseUnavailableError', message: 'New materials cannot be numbered (mapping.materials.newIds is max+1): the largest id stored, 32767, is the last one its column (smallint) holds, and it takes no new rows until an administrator widens it' })
  t.same(seen.map((st) => st.text.slice(0, 11)), ['SELECT MAX('], 'before: an INSERT of 32768 as bigint into the smallint, error 220')
  max = 32766
  seen.length = 0
  t.match(await repo.create({ materialNumber: 'M-1', name: 'x' }), { id: 32767 }, 'the last value itself is given')
  const insert = seen.find((st) => st.text.startsWith('DECLARE @inserted'))!
  t.match(insert.text, /^DECLARE @inserted TABLE \(\[id\] smallint\); INSERT INTO \[dbo\]\.\[materials\] \(.*, \[id\]\) OUTPUT INSERTED\.\[id\] INTO @inserted VALUES \(.*, @p7\);/)
  t.same([insert.params.at(-1)?.value, insert.params.at(-1)?.type], [32767, 'smallint'])
  // a decimal(p,0) key ends at p nines
  max = 9999
  const decimal = new Repository(db, materials, { ...referenceMappings.materials, newIds: 'max+1' }, { columns: keyed('decimal', { precision: 4, scale: 0 }) })
  await t.rejects(decimal.create({ materialNumber: 'M-2', name: 'y' }), { message: /the largest id stored, 9999, is the last one its column \(decimal\) holds/ })
})

t.test('SQL Server: a foreign key a write breaks names its field, from the constraint the message names (547 names the parent\'s column)', async (t) => {
  const fk = new sql.RequestError(tedious(547, 'The INSERT statement conflicted with the FOREIGN KEY constraint "FK_Artikel_Einheit". The conflict occurred in database "WMS", table "dbo.Einheit", column \'ME\'.'), 'EREQUEST')
  const seen: Statement[] = []
  const db = {
    dialect: 'mssql',
    query: async (stmt: Statement) => { seen.push(stmt); return stmt.text.includes('sys.foreign_key_columns') ? [{ c: 'unit' }] : [] },
    execute: async () => 0,
    queryValues: undefined,
    transaction: async () => { throw toDbError(fk) }
  } as unknown as Database
  const columns = Object.values(referenceMappings.materials.columns).map((c): ColumnInfo => ({ name: c as string, type: c === 'id' ? 'int' : 'nvarchar', nullable: c !== 'id', hasDefault: c === 'id', identity: c === 'id', computed: false, unique: c === 'id' || c === 'material_number' }))
  const repo = new Repository(db, materials, referenceMappings.materials, { columns })
  await t.rejects(repo.create({ materialNumber: 'M-1', name: 'x', unit: 'XX' }), { name: 'ConstraintViolationError', message: "'unit' refers to a record that does not exist in the picking system" }, 'before: "A value …"')
  t.same(seen.map((st) => [st.text, st.params.map((p) => [p.name, p.value, p.type])]), [[
    'SELECT COL_NAME([k].[parent_object_id], [k].[parent_column_id]) AS [c] FROM sys.foreign_key_columns AS [k] ' +
      'JOIN sys.foreign_keys AS [f] ON [f].[object_id] = [k].[constraint_object_id] ' +
      'WHERE [f].[name] = @name AND [f].[parent_object_id] = OBJECT_ID(@table) ORDER BY [k].[constraint_column_id]',
    [['name', 'FK_Artikel_Einheit', 'nvarchar(128)'], ['table', '[dbo].[materials]', 'nvarchar(600)']]
  ]])
  await t.rejects(repo.create({ materialNumber: 'M-1', name: 'x' }), { message: "'unit' refers to a record that does not exist in the picking system; the request gave no unit, so the API's default was written (unit \"pcs\"): send a value the picking system knows" })
})

t.test('SQL Server: a foreign key of mapping.defaults\' columns alone is a 503 naming the configuration, whatever the language of 547 and the case of its columns', async (t) => {
  const messages = [
    'The INSERT statement conflicted with the FOREIGN KEY constraint "FK_Artikel_Lagerort". The conflict occurred in database "WMS", table "wms.Lagerort", column \'Ort\'.',
    'Die INSERT-Anweisung steht in Konflikt mit der FOREIGN KEY-Einschränkung "FK_Artikel_Lagerort". Der Konflikt trat in der WMS-Datenbank, Tabelle "wms.Lagerort", column \'Ort\' auf.',
    'L\'instruction INSERT est en conflit avec la contrainte FOREIGN KEY "FK_Artikel_Lagerort". Le conflit s\'est produit dans la base de données "WMS", table "wms.Lagerort", column \'Ort\'.'
  ]
  let message = messages[0]
  let keyColumns = [{ c: 'LAGERORT' }]
  const seen: Statement[] = []
  const db = {
    dialect: 'mssql',
    query: async (stmt: Statement) => { seen.push(stmt); return stmt.text.includes('sys.foreign_key_columns') ? keyColumns : [] },
    execute: async () => 0,
    queryValues: undefined,
    transaction: async () => { throw toDbError(new sql.RequestError(tedious(547, message), 'EREQUEST')) }
  } as unknown as Database
  const mapping: TableMapping = { ...referenceMappings.materials, schema: 'wms', table: 'Artikel', defaults: { Lagerort: 7 } }
  const columns = [...Object.values(referenceMappings.materials.columns), 'Lagerort'].map((c): ColumnInfo => ({ name: c as string, type: c === 'id' || c === 'Lagerort' ? 'int' : 'nvarchar', nullable: c !== 'id', hasDefault: c === 'id', identity: c === 'id', computed: false, unique: c === 'id' || c === 'material_number' }))
  const repo = new Repository(db, materials, mapping, { columns })
  const unavailable = { name: 'DatabaseUnavailableError', message: 'New materials cannot be created: a value mapping.materials.defaults writes into every new row refers to a record that does not exist in the picking system; correct the default or add the record (the log has it)' }
  for (const m of messages) {
    message = m
    seen.length = 0
    const err = await repo.create({ materialNumber: 'M-1', name: 'x' }).then(() => undefined, (e: unknown) => e as Error & { cause?: Error })
    t.match(err, unavailable, m)
    t.equal(err?.cause?.message, "materials: mapping.materials.defaults 'Lagerort' = 7 refers to no row of the table its foreign key names", 'the log has column and value')
    t.same(seen.map((st) => st.params.map((p) => p.value)), [['FK_Artikel_Lagerort', '[wms].[Artikel]']], 'the constraint the message names, of the mapped table (schema-qualified, bracketed)')
  }
  // a key of a default's column and a field's: the request's value may be the one missing
  message = messages[0]
  keyColumns = [{ c: 'Lagerort' }, { c: 'unit' }]
  await t.rejects(repo.create({ materialNumber: 'M-1', name: 'x', unit: 'XX' }), { name: 'ConstraintViolationError' })
  // the constraint is not the mapped table's (a trigger's insert elsewhere): the catalog finds no columns, no blame on the configuration
  keyColumns = []
  await t.rejects(repo.create({ materialNumber: 'M-1', name: 'x' }), { name: 'ConstraintViolationError', message: 'A value refers to a record that does not exist in the picking system' })
})

t.test('columnsStatement', async (t) => {
  t.same(columnsStatement({ table: 'MaterialBase', columns: {} }), {
    text: 'SELECT [COLUMN_NAME] AS [name], [DATA_TYPE] AS [type], [CHARACTER_MAXIMUM_LENGTH] AS [maxLength], ' +
      '[NUMERIC_PRECISION] AS [precision], [NUMERIC_SCALE] AS [scale], [DATETIME_PRECISION] AS [timeScale], ' +
      '[IS_NULLABLE] AS [nullable], ' +
      "CASE WHEN [COLUMN_DEFAULT] IS NOT NULL THEN CASE WHEN REPLACE(REPLACE([COLUMN_DEFAULT], '(', ''), ')', '') = 'NULL' THEN 0 ELSE 1 END " +
      'WHEN EXISTS (SELECT 1 FROM sys.columns AS [c] WHERE [c].[object_id] = OBJECT_ID(QUOTENAME([TABLE_SCHEMA]) + N\'.\' + QUOTENAME([TABLE_NAME])) AND [c].[name] = [COLUMN_NAME] AND [c].[default_object_id] <> 0) THEN 1 ELSE 0 END AS [hasDefault], ' +
      "COLUMNPROPERTY(OBJECT_ID(QUOTENAME([TABLE_SCHEMA]) + N'.' + QUOTENAME([TABLE_NAME])), [COLUMN_NAME], 'IsIdentity') AS [identity], " +
      // GENERATED ALWAYS (temporal, ledger) counts as computed: before, start-up refused a temporal table's NOT NULL period columns
      "CASE WHEN COLUMNPROPERTY(OBJECT_ID(QUOTENAME([TABLE_SCHEMA]) + N'.' + QUOTENAME([TABLE_NAME])), [COLUMN_NAME], 'IsComputed') = 1 " +
      "OR COLUMNPROPERTY(OBJECT_ID(QUOTENAME([TABLE_SCHEMA]) + N'.' + QUOTENAME([TABLE_NAME])), [COLUMN_NAME], 'GeneratedAlwaysType') <> 0 THEN 1 ELSE 0 END AS [computed], " +
      'CASE WHEN EXISTS (SELECT 1 FROM sys.indexes AS [i] ' +
      'JOIN sys.index_columns AS [ic] ON [ic].[object_id] = [i].[object_id] AND [ic].[index_id] = [i].[index_id] AND [ic].[key_ordinal] > 0 ' +
      'JOIN sys.columns AS [k] ON [k].[object_id] = [ic].[object_id] AND [k].[column_id] = [ic].[column_id] ' +
      "WHERE [i].[object_id] = OBJECT_ID(QUOTENAME([TABLE_SCHEMA]) + N'.' + QUOTENAME([TABLE_NAME])) AND [i].[is_unique] = 1 AND [i].[has_filter] = 0 AND [i].[is_disabled] = 0 AND [i].[is_hypothetical] = 0 AND [i].[ignore_dup_key] = 0 AND [k].[name] = [COLUMN_NAME] " +
      'AND NOT EXISTS (SELECT 1 FROM sys.index_columns AS [o] WHERE [o].[object_id] = [i].[object_id] AND [o].[index_id] = [i].[index_id] ' +
      'AND [o].[key_ordinal] > 0 AND [o].[column_id] <> [ic].[column_id])) THEN 1 ELSE 0 END AS [unique], ' +
      "[COLLATION_NAME] AS [collation], CONVERT(int, COLLATIONPROPERTY([COLLATION_NAME], 'CodePage')) AS [codePage], " +
      'CASE WHEN EXISTS (SELECT 1 FROM sys.triggers AS [tr] JOIN sys.trigger_events AS [te] ON [te].[object_id] = [tr].[object_id] ' +
      "WHERE [tr].[parent_id] = OBJECT_ID(QUOTENAME([TABLE_SCHEMA]) + N'.' + QUOTENAME([TABLE_NAME])) AND [tr].[is_instead_of_trigger] = 1 AND [tr].[is_disabled] = 0 AND [te].[type_desc] = N'INSERT') THEN 1 ELSE 0 END AS [insteadOf] " +
      'FROM INFORMATION_SCHEMA.COLUMNS WHERE [TABLE_SCHEMA] = @schema AND [TABLE_NAME] = @table ORDER BY [ORDINAL_POSITION]',
    params: [{ name: 'schema', kind: 'string', value: 'dbo' }, { name: 'table', kind: 'string', value: 'MaterialBase' }]
  })
  t.equal(columnsStatement({ schema: 'pp', table: 'x', columns: {} }).params[0].value, 'pp')
})

t.test('a mapped table spelled in another case than a case-sensitive database spells it, or a synonym: said so, and db init creates no table', async (t) => {
  // under Latin1_General_CS_AS (or a _BIN2 collation) [wms].[artikel] is not [wms].[Artikel]: columnsStatement finds no column
  const seen: Statement[] = []
  const executed: string[] = []
  let tables: Array<Record<string, unknown>> = [{ schema: 'wms', table: 'Artikel' }]
  let synonyms: Array<Record<string, unknown>> = []
  const db = {
    dialect: 'mssql',
    columns: async () => [],
    query: async (stmt: Statement) => { seen.push(stmt); return stmt.text.includes('sys.synonyms') ? synonyms : tables },
    execute: async (stmt: Statement) => { executed.push(stmt.text); return 0 }
  } as unknown as Database
  const mapping = { ...referenceMappings.materials, schema: 'WMS', table: 'artikel' }
  const fit = await mappingFit(db, materials, mapping)
  t.same(fit.problems, ["materials: table 'WMS.artikel' is not there as spelled, but the database has 'wms.Artikel': its collation tells names apart by case, so write schema and table in the mapping as the database does"],
    "before: table 'WMS.artikel' does not exist, which told to run db init")
  t.notOk(isMissingTable(fit.problems[0]), 'not a table db init may create')
  t.same(seen.map((st) => [st.text, st.params.map((p) => [p.name, p.value, p.type])]), [[
    'SELECT [TABLE_SCHEMA] AS [schema], [TABLE_NAME] AS [table] FROM INFORMATION_SCHEMA.TABLES ' +
      'WHERE UPPER([TABLE_SCHEMA]) = UPPER(@schema) AND UPPER([TABLE_NAME]) = UPPER(@table) ORDER BY [TABLE_SCHEMA], [TABLE_NAME]',
    [['schema', 'WMS', undefined], ['table', 'artikel', undefined]]
  ]])
  const mappings = { ...referenceMappings, materials: mapping }
  await t.rejects(createReferenceTables(db, mappings), { name: 'SchemaMismatchError', message: /'wms\.Artikel'/ })
  t.same(executed, [], 'before: CREATE TABLE [WMS].[artikel] beside the picking system\'s [wms].[Artikel] (and CREATE SCHEMA [WMS])')
  // a synonym (of a table in another database): SQL Server lists no columns for it, and db init's CREATE TABLE would fail (2714)
  tables = []
  synonyms = [{ schema: 'wms', table: 'Artikel', target: '[WMS_Alt].[dbo].[Artikel]' }]
  seen.length = 0
  const synonym = await mappingFit(db, materials, mapping)
  t.same(synonym.problems, ["materials: 'wms.Artikel' is a synonym (of [WMS_Alt].[dbo].[Artikel]), whose columns SQL Server does not list: map the table or view it stands for, or, where that lies in another database, a view in this one over it (CREATE VIEW … AS SELECT … FROM [WMS_Alt].[dbo].[Artikel])"],
    'before: does not exist, run db init')
  t.notOk(isMissingTable(synonym.problems[0]))
  t.same(seen.slice(1).map((st) => [st.text, st.params.map((p) => [p.name, p.value, p.type])]), [[
    'SELECT SCHEMA_NAME([schema_id]) AS [schema], [name] AS [table], [base_object_name] AS [target] FROM sys.synonyms ' +
      'WHERE UPPER(SCHEMA_NAME([schema_id])) = UPPER(@schema) AND UPPER([name]) = UPPER(@table) ORDER BY [schema], [table]',
    [['schema', 'WMS', undefined], ['table', 'artikel', undefined]]
  ]])
  // a table that is not there in any spelling, nor a synonym, is one db init creates, as before
  synonyms = []
  const missing = (await mappingFit(db, materials, mapping)).problems
  t.same(missing, ["materials: table 'WMS.artikel' does not exist, or the gateway's login may not use it (SQL Server lists only the tables and columns a login has a permission on: grant it SELECT, INSERT, UPDATE and DELETE there)"])
  t.ok(isMissingTable(missing[0]), 'one db init creates')
})

t.test('SQL Server: a table or column the catalog does not show may be one the login has no permission on, and the problem says so', async (t) => {
  // INFORMATION_SCHEMA.COLUMNS (and TABLES) list only what the login may use: a login with SELECT, INSERT, UPDATE and
  // DELETE on the picking system's tables alone sees no gateway_users that db init made with another login, and a
  // column-level DENY (the picking system's own password column) hides that column
  const visible = referenceColumns('mssql', materials, referenceMappings.materials).filter((c) => c.name !== 'barcode')
  let columns: ColumnInfo[] = []
  const db = { dialect: 'mssql', columns: async () => columns, query: async () => [] } as unknown as Database
  const table = (await mappingFit(db, materials, referenceMappings.materials)).problems
  t.same(table, ["materials: table 'dbo.materials' does not exist, or the gateway's login may not use it (SQL Server lists only the tables and columns a login has a permission on: grant it SELECT, INSERT, UPDATE and DELETE there)"],
    "before: table 'dbo.materials' does not exist, and nothing about the login")
  t.ok(isMissingTable(table[0]), 'db init still creates a table that is missing')
  columns = visible
  t.same((await mappingFit(db, materials, referenceMappings.materials)).problems, [
    "materials.barcode: column 'barcode' does not exist in table 'dbo.materials', or the gateway's login may not read it (SQL Server lists only the tables and columns a login has a permission on: grant it SELECT, INSERT, UPDATE and DELETE there)"
  ])
  // SQLite's catalog has no permissions: as before
  const lite = { dialect: 'sqlite', columns: async () => [], query: async () => [] } as unknown as Database
  t.same((await mappingFit(lite, materials, referenceMappings.materials)).problems, ["materials: table 'materials' does not exist"])
})

t.test('SQL Server: a readOnly mapping the catalog does not show asks for SELECT alone, the only permission the gateway uses there', async (t) => {
  let columns: ColumnInfo[] = []
  const db = { dialect: 'mssql', columns: async () => columns, query: async () => [] } as unknown as Database
  const view = { ...referenceMappings.materials, readOnly: true }
  t.same((await mappingFit(db, materials, view)).problems, [
    "materials: table 'dbo.materials' does not exist, or the gateway's login may not use it (SQL Server lists only the tables and columns a login has a permission on: grant it SELECT there)"
  ], 'before: SELECT, INSERT, UPDATE and DELETE, on a table or view the gateway never writes')
  columns = referenceColumns('mssql', materials, referenceMappings.materials).filter((c) => c.name !== 'barcode')
  t.same((await mappingFit(db, materials, view)).problems, [
    "materials.barcode: column 'barcode' does not exist in table 'dbo.materials', or the gateway's login may not read it (SQL Server lists only the tables and columns a login has a permission on: grant it SELECT there)"
  ])
})

t.test('SQL Server 2008 (R2), whose catalog queries pass but which has no OFFSET … FETCH: a start-up and check-config problem, not a 500 at every list', async (t) => {
  let version: unknown = '10.50.6000.34'
  const seen: string[] = []
  const db = {
    dialect: 'mssql',
    columns: async (mapping: TableMapping) => {
      const name = (Object.keys(referenceMappings) as Array<keyof typeof referenceMappings>).find((n) => referenceMappings[n].table === mapping.table)!
      return referenceColumns('mssql', resources[name], mapping)
    },
    query: async (stmt: Statement) => { seen.push(stmt.text); return [{ version }] },
    execute: async () => 0
  } as unknown as Database
  t.same((await inspectStorage(db, referenceMappings)).problems, [
    "SQL Server 10.50.6000.34 is older than the gateway needs: it pages its lists with OFFSET … FETCH, which SQL Server 2012 (version 11) and later understand, so every list would fail (error 102, incorrect syntax near 'OFFSET'); upgrade the server"
  ], 'before: none, and every list answered 500')
  t.same(seen, ["SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)) AS [version]"])
  for (const v of ['11.0.2100.60', '16.0.1000.6', '12.0.2000.8', null, undefined]) {
    version = v
    t.same((await inspectStorage(db, referenceMappings)).problems, [], `${String(v)}: fine (or not known)`)
  }
  t.equal(versionProblem('9.00.5000.00')?.startsWith('SQL Server 9.00.5000.00 is older'), true, 'SQL Server 2005 too')
})

t.test('mssqlColumnInfo reads what INFORMATION_SCHEMA and COLUMNPROPERTY report', async (t) => {
  const row = (over: Record<string, unknown>): Record<string, unknown> => ({
    name: 'c', type: 'int', maxLength: null, precision: 10, scale: 0, timeScale: null, nullable: 'YES', hasDefault: 0, identity: 0, computed: 0, collation: null, codePage: null, ...over
  })
  t.same(mssqlColumnInfo(row({ name: 'MatID', nullable: 'NO', identity: 1 })),
    { name: 'MatID', type: 'int', nullable: false, hasDefault: true, identity: true, computed: false, precision: 10, scale: 0 })
  t.same(mssqlColumnInfo(row({ name: 'ArtNr', type: 'varchar', maxLength: 40, precision: null, scale: null, nullable: 'NO', collation: 'Latin1_General_CI_AS', codePage: 1252 })),
    { name: 'ArtNr', type: 'varchar', nullable: false, hasDefault: false, identity: false, computed: false, maxLength: 40, codePage: 1252, collation: 'Latin1_General_CI_AS' })
  t.equal(mssqlColumnInfo(row({ type: 'char', maxLength: 4, collation: 'Japanese_CI_AS', codePage: 932 })).codePage, 932, 'char columns have a code page too')
  t.equal(mssqlColumnInfo(row({ insteadOf: 1 })).insteadOf, true, 'an INSTEAD OF trigger on the table or view')
  t.equal(mssqlColumnInfo(row({ insteadOf: 0 })).insteadOf, undefined)
  t.equal(mssqlColumnInfo(row({ unique: 1 })).unique, true, 'a unique index on the column alone')
  t.notOk('unique' in mssqlColumnInfo(row({ unique: 0 })))
  // a temporal table's GENERATED ALWAYS period column, reported computed (columnsStatement): the server fills it, so no create must
  t.match(mssqlColumnInfo(row({ name: 'ValidFrom', type: 'datetime2', precision: null, scale: null, timeScale: 7, nullable: 'NO', computed: 1 })), { nullable: false, computed: true, hasDefault: true })
  t.equal(mssqlColumnInfo(row({ type: 'text', maxLength: 2147483647, collation: 'Cyrillic_General_CI_AS', codePage: 1251 })).codePage, 1251, 'so do text columns')
  t.same(mssqlColumnInfo(row({ type: 'nvarchar', maxLength: 40, collation: 'Latin1_General_CI_AS', codePage: 1252 })).codePage, undefined, 'nvarchar holds every character, whatever its collation')
  t.same(mssqlColumnInfo(row({ type: 'varchar', maxLength: 40, collation: 'Latin1_General_100_CI_AS_SC_UTF8', codePage: 65001 })).codePage, undefined, 'UTF-8 holds every character')
  t.same(mssqlColumnInfo(row({ type: 'varchar', maxLength: 40, collation: 'Latin1_General_100_CI_AS_SC_UTF8', codePage: 65001 })).utf8, true)
  t.same(mssqlColumnInfo(row({ type: 'varchar', maxLength: 40, collation: 'Odd_CI_AS', codePage: 12345 })).codePage, undefined, 'a code page the gateway does not know is not checked')
  t.same(['Latin1_General_CS_AS', 'Latin1_General_100_CS_AS_SC_UTF8', 'Latin1_General_BIN2', 'Latin1_General_BIN', 'SQL_Latin1_General_CP1_CS_AS', 'Latin1_General_100_BIN2_UTF8', 'Latin1_General_CI_AS', 'SQL_Latin1_General_CP1_CI_AS', 'Latin1_General_100_CI_AS_KS_WS', 'Latin1_General_100_CI_AS_SC_UTF8', null].map((collation) => mssqlColumnInfo(row({ type: 'char', maxLength: 1, collation, codePage: 1252 })).caseSensitive),
    [true, true, true, true, true, true, undefined, undefined, undefined, undefined, undefined], 'case-sensitive and binary collations (before: BIN2_UTF8 read as case-insensitive)')
  t.same(mssqlColumnInfo(row({ type: 'varchar', maxLength: 40, precision: null, scale: null, collation: 'Latin1_General_100_CI_AS_SC_UTF8' })).utf8, true, 'UTF-8 collations count bytes')
  t.same(mssqlColumnInfo(row({ type: 'nvarchar', maxLength: -1, precision: null, scale: null })).maxLength, -1, 'nvarchar(max)')
  t.same(mssqlColumnInfo(row({ type: 'decimal', precision: 18, scale: 3 })), { name: 'c', type: 'decimal', nullable: true, hasDefault: false, identity: false, computed: false, precision: 18, scale: 3 })
  t.same(mssqlColumnInfo(row({ type: 'datetime2', precision: null, scale: null, timeScale: 7 })).scale, 7)
  t.same(mssqlColumnInfo(row({ type: 'datetime', precision: null, scale: null, timeScale: 3 })).scale, undefined, 'datetime has no scale of its own')
  t.same(mssqlColumnInfo(row({ type: 'timestamp', precision: null, scale: null, nullable: 'NO' })).hasDefault, true, 'rowversion is filled by the server')
  t.same(mssqlColumnInfo(row({ computed: 1 })).hasDefault, true)
  t.same(mssqlColumnInfo(row({ type: 'DateTime', precision: null, scale: null, hasDefault: 1 })).type, 'datetime')
})

t.test('backoffDelay: capped exponential with jitter', async (t) => {
  const mid = (): number => 0.5
  t.same([1, 2, 3, 4, 5, 6, 7, 8, 60].map((n) => backoffDelay(n, 500, 30000, mid)), [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000])
  t.equal(backoffDelay(1, 1000, 30000, () => 0), 900, 'jitter -10%')
  t.equal(backoffDelay(1, 1000, 30000, () => 1), 1100, 'jitter +10%')
  t.equal(backoffDelay(0, 1000, 30000, mid), 1000)
})

t.test('ConnectionSupervisor', async (t) => {
  t.test('down at start: callers wait for the first attempt only, then are refused at once until a retry succeeds', async (t) => {
    const { lines, logger } = recorder()
    let calls = 0
    let failures = 2
    const sup = new ConnectionSupervisor({
      logger,
      initialMs: 10,
      maxMs: 20,
      random: () => 0.5,
      connect: async () => {
        calls++
        await sleep(5)
        if (failures-- > 0) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ESOCKET' })
      }
    })
    t.equal(sup.state, 'starting')
    sup.start()
    sup.start()
    await t.rejects(sup.ready(), { name: 'DatabaseUnavailableError', cause: { code: 'ESOCKET' } }, 'the first attempt failed')
    t.equal(sup.state, 'down')
    const refused = sup.ready()
    t.equal(await settledThisTurn(refused), 'rejected', 'refused at once while down: no wait for the retry')
    await t.rejects(refused, { name: 'DatabaseUnavailableError' })
    for (let i = 0; i < 100 && sup.state !== 'up'; i++) await sleep(5)
    t.equal(sup.state, 'up', 'recovered by itself')
    await sup.ready()
    t.equal(calls, 3)
    t.same(lines.map((l) => [l.level, l.msg]), [
      ['error', 'database unreachable; retrying in the background'],
      ['warn', 'database unreachable; retrying in the background'],
      ['info', 'database connection established']
    ])
    t.match(lines[1].obj, { attempt: 2, retryInMs: 20 })
    await sup.close()
  })

  t.test('up, then lost: markDown refuses at once and probes until back', async (t) => {
    const { lines, logger } = recorder()
    let healthy = true
    let calls = 0
    const sup = new ConnectionSupervisor({ logger, initialMs: 5, maxMs: 10, connect: async () => { calls++; if (!healthy) throw new Error('down') } })
    sup.start()
    await sup.ready()
    t.equal(sup.state, 'up')
    t.equal(lines.length, 0, 'a first-time success logs nothing here')
    healthy = false
    sup.markDown(new Error('ESOCKET'))
    sup.markDown(new Error('again'))
    t.equal(sup.state, 'down')
    await t.rejects(sup.ready(), { name: 'DatabaseUnavailableError' })
    await sleep(40)
    t.equal(sup.state, 'down')
    t.ok(calls >= 3, `kept probing (${calls} calls)`)
    healthy = true
    for (let i = 0; i < 100 && sup.state !== 'up'; i++) await sleep(5)
    t.equal(sup.state, 'up')
    t.equal(lines[0].msg, 'database connection lost; retrying in the background')
    t.equal(lines.filter((l) => l.msg === 'database connection lost; retrying in the background').length, 1, 'logged once')
    t.equal(lines.at(-1)?.msg, 'database connection established')
    await sup.close()
  })

  t.test('100 outages and recoveries leave no timer or waiting caller behind', async (t) => {
    const tracker = trackResources()
    t.teardown(() => tracker.stop())
    let healthy = true
    let calls = 0
    const sup = new ConnectionSupervisor({ logger: recorder().logger, initialMs: 1, maxMs: 2, connect: async () => { calls++; if (!healthy) throw new Error('down') } })
    sup.start()
    await sup.ready()
    for (let i = 0; i < 100; i++) {
      healthy = false
      sup.markDown(new Error('ESOCKET'))
      // callers during the outage are refused, not queued: nothing waits for its end
      const refused = await Promise.allSettled(Array.from({ length: 10 }, async () => { await sup.ready() }))
      t.equal(refused.filter((r) => r.status === 'rejected').length, 10)
      for (let n = calls; calls < n + 2;) await new Promise((resolve) => setImmediate(resolve))
      healthy = true
      for (let n = 0; n < 1000 && sup.state !== 'up'; n++) await sleep(1)
      t.equal(sup.state, 'up', `outage ${i + 1}: recovered`)
      // up: the retry timer gone, none scheduled
      t.same(await tracker.settled(), { Timeout: 0, TCPWRAP: 0, TCPCONNECTWRAP: 0 }, `outage ${i + 1}: no timer left once it is over`)
    }
    healthy = false
    sup.markDown(new Error('ESOCKET'))
    await sup.close()
    t.same(await tracker.settled(), { Timeout: 0, TCPWRAP: 0, TCPCONNECTWRAP: 0 }, 'closed during an outage: its retry timer gone')
  })

  t.test('a login failure says so; close stops the retries', async (t) => {
    const { lines, logger } = recorder()
    let calls = 0
    const sup = new ConnectionSupervisor({ logger, initialMs: 5, maxMs: 5, connect: async () => { calls++; throw Object.assign(new Error('Login failed'), { code: 'ELOGIN' }) } })
    sup.start()
    await t.rejects(sup.ready())
    t.match(lines[0], { level: 'error', msg: 'database login failed; check the user and password; retrying' })
    await sup.close()
    const after = calls
    await sleep(30)
    t.equal(calls, after, 'no attempts after close')
    t.equal(sup.state, 'closed')
    await t.rejects(sup.ready(), { name: 'DatabaseClosedError', statusCode: 503, code: 'DATABASE_UNAVAILABLE' }, 'closed: still a 503')
  })

  t.test('close while the first attempt is running waits for it', async (t) => {
    let release: () => void = () => {}
    const sup = new ConnectionSupervisor({ logger: recorder().logger, connect: async () => { await new Promise<void>((resolve) => { release = resolve }) } })
    sup.start()
    // a start-up's mapping check waiting for the attempt when a stop closes the pool
    const waiting = sup.ready()
    waiting.catch(() => {})
    let closed = false
    const closing = sup.close().then(() => { closed = true })
    await sleep(5)
    t.equal(closed, false)
    release()
    await closing
    t.equal(sup.state, 'closed', 'a success after close does not reopen')
    await t.rejects(waiting, { name: 'DatabaseClosedError' }, 'the wait ends as closed, not as the server unavailable (which the start-up would report as an outage)')
  })
})

t.test('the real driver against a port nobody listens on: 503 at once, no crash, clean close', async (t) => {
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => { resolve(port) })
    })
  })
  const { lines, logger } = recorder()
  const db = openDatabase(`mssql://sa:Secret%21@127.0.0.1:${port}/picking?encrypt=false`, { logger, connectTimeoutMs: 2000 })
  t.equal(db.dialect, 'mssql')
  const t0 = Date.now()
  await t.rejects(db.ping(), { name: 'DatabaseUnavailableError', statusCode: 503 })
  t.ok(Date.now() - t0 < 2500, 'answered within the connect timeout')
  // refused at once while down (the connect timeout is 2000 ms)
  const query = db.query({ text: 'SELECT 1', params: [] })
  const transaction = db.transaction(async () => 1)
  const fit = mappingFit(db, { name: 'x', fields: { id: { kind: 'integer', id: true } } }, { table: 'x', columns: { id: 'id' } })
  t.same(await Promise.all([query, transaction, fit].map(settledThisTurn)), ['rejected', 'rejected', 'rejected'], 'query, transaction and mapping check refused at once while down')
  await t.rejects(query, { name: 'DatabaseUnavailableError' })
  await t.rejects(transaction, { name: 'DatabaseUnavailableError' })
  await t.rejects(fit, { name: 'DatabaseUnavailableError' })
  t.match(lines[0], { level: 'error', msg: 'database unreachable; retrying in the background' })
  t.notMatch(JSON.stringify(lines.map((l) => l.msg)), /Secret/)
  await db.close()

  const mapped = openMssql('mssql://sa:x@127.0.0.1:1/picking', { logger })
  t.same((await mappingFit(mapped, { name: 'x', fields: { id: { kind: 'integer', id: true }, a: { kind: 'string' } } }, { table: 'x', columns: { id: 'id' } })).problems,
    ['x.a: no column configured (map it to null if the table has none)'], 'mapping problems are found without a round trip')
  await mapped.close()
})

t.test('missingName: the table or column a driver message names, without schema, table or quotes', async (t) => {
  for (const [detail, name] of [
    ['no such column: "name"', 'name'], ['no such column: title', 'title'], ['no such column: "T"."na.me"', 'na.me'], ['no such table: main.audit_log', 'audit_log'],
    ['table materials has no column named name', 'name'], ["Invalid column name 'Bez'", 'Bez'], ["Invalid object name 'dbo.Artikel'", 'Artikel'], ["Invalid object name '[wms].[Arti]]kel]'", 'Arti]kel'],
    // a login whose language is not English (SET LANGUAGE, or its default language): before, no name, so a renamed
    // mapped column was logged as the picking system's own fault and readiness stayed ready
    ["Ungültiger Spaltenname 'Bez'", 'Bez'], ["Ungültiger Objektname 'dbo.Artikel'", 'Artikel'], ["Nom d'objet 'dbo.Artikel' non valide", 'Artikel'],
    ["Nom de colonne non valide : 'Bez'", 'Bez'],
    ['something else', undefined]
  ] as const) t.equal(missingName(detail), name, detail)
})

t.test('a full file group or transaction log (1101, 1105, 9002; Azure SQL\'s quota 40544): 503 storage full, not a 500', async (t) => {
  for (const [number, message] of [
    [1105, "Could not allocate space for object 'dbo.Artikel' in database 'WMS' because the 'PRIMARY' filegroup is full."],
    [9002, "The transaction log for database 'WMS' is full due to 'LOG_BACKUP'."],
    [1101, "Could not allocate a new page for database 'WMS' because of insufficient disk space in filegroup 'PRIMARY'."],
    [40544, "The database 'WMS' has reached its size quota."]
  ] as const) {
    const err = new sql.RequestError(tedious(number, message), 'EREQUEST')
    t.equal(classifyMssqlError(err), 'full', String(number))
    t.match(toDbError(err), { name: 'DatabaseUnavailableError', statusCode: 503, message: "The database's storage is full: it takes no changes until space is freed (the log says what is full)" })
    t.notMatch((toDbError(err) as Error).message, /WMS|Artikel/, 'the answer names no object')
  }
})

t.test('an identity column at its type\'s last value (8115 converting IDENTITY): 503, not a 400 blaming the request\'s values', async (t) => {
  // every value a create sends is checked against its column before any SQL runs: this is the table's own counter
  for (const message of [
    'Arithmetic overflow error converting IDENTITY to data type int.',
    'Arithmetic overflow error converting IDENTITY to data type smallint.',
    'Arithmetischer Überlauffehler beim Konvertieren von IDENTITY in den int-Datentyp.'
  ]) {
    const err = new sql.RequestError(tedious(8115, message), 'EREQUEST')
    t.equal(classifyMssqlError(err), 'identity', message)
    t.match(toDbError(err), { name: 'DatabaseUnavailableError', statusCode: 503, message: /^A table of the picking system has used up its ids/ }, 'before: DataFaultError overflow, a 400')
    const aborted = Object.assign(new sql.TransactionError('Transaction has been aborted.', 'EABORT'), { originalError: err })
    t.equal(classifyMssqlError(aborted), 'identity', 'inside an aborted transaction too')
  }
  // merge replication: this server's identity range is used up (before: a 500)
  const range = new sql.RequestError(tedious(548, "The insert failed. It conflicted with an identity range check constraint in database 'WMS', replicated table 'dbo.Artikel', column 'ArtID'. If the identity column is automatically managed by replication, update the range as follows: for the Publisher, execute sp_adjustpublisheridentityrange; for the Subscriber, run the Distribution Agent or the Merge Agent."), 'EREQUEST')
  t.equal(classifyMssqlError(range), 'identity')
  t.match(toDbError(range), { name: 'DatabaseUnavailableError', statusCode: 503, message: /^A table of the picking system has used up its ids/ })
  t.notMatch((toDbError(range) as Error).message, /WMS|Artikel|ArtID/, 'the answer names no object')
  // any other overflow is still the value's (a trigger's arithmetic, a conversion)
  const value = new sql.RequestError(tedious(8115, 'Arithmetic overflow error converting numeric to data type numeric.'), 'EREQUEST')
  t.equal(classifyMssqlError(value), 'other')
  t.match(toDbError(value), { name: 'DataFaultError', fault: { kind: 'overflow' } })
})

t.test('a write through a mapped view the server cannot write through (4403, 4405, 4406): 503 saying what to map instead, not a 500', async (t) => {
  for (const [number, message] of [
    [4405, "View or function 'dbo.vArtikel' is not updatable because the modification affects multiple base tables."],
    [4406, "Update or insert of view or function 'dbo.vArtikel' failed because it contains a derived or constant field."],
    [4403, "Cannot update the view or function 'dbo.vArtikel' because it contains aggregates, or a DISTINCT or GROUP BY clause, or PIVOT or UNPIVOT operator."]
  ] as const) {
    const err = new sql.RequestError(tedious(number, message), 'EREQUEST')
    t.equal(classifyMssqlError(err), 'view', String(number))
    t.match(toDbError(err), { name: 'DatabaseUnavailableError', statusCode: 503, message: /^The mapped view cannot take this change: .*map the view's base table, or give the view INSTEAD OF triggers/ }, `${number}: before, no class: a 500`)
    t.notMatch((toDbError(err) as Error).message, /vArtikel/, 'the answer names no object')
    const aborted = Object.assign(new sql.TransactionError('Transaction has been aborted.', 'EABORT'), { originalError: err })
    t.equal(classifyMssqlError(aborted), 'view', 'inside an aborted transaction too')
  }
})

t.test('queryKeepingRaised: the messages a failed batch raised below severity 11 with numbers of its own go with its error', async (t) => {
  const text = 'UPDATE [dbo].[Artikel] SET [Bez] = @p1 WHERE [ArtID] = @id'
  const ended = new sql.RequestError(tedious(3609, 'The transaction ended in the trigger. The batch has been aborted.'), 'EREQUEST')
  /** a request whose batch raises two messages as information (as node-mssql's 'info' event gives them), then fails or not */
  const request = (fail: boolean): EventEmitter & { query: (text: string) => Promise<unknown> } => {
    const req = Object.assign(new EventEmitter(), {
      query: async (sent: string) => {
        t.equal(sent, text)
        req.emit('info', { number: 8153, message: 'Warning: Null value is eliminated by an aggregate or other SET operation.', class: 10 })
        req.emit('info', { number: 50000, message: 'Lagerplatz gesperrt', class: 10 })
        if (fail) throw ended
        return { recordsets: [], output: {}, rowsAffected: [1] }
      }
    })
    return req
  }
  await t.rejects(queryKeepingRaised(request(true) as never, text), ended)
  t.same((ended as unknown as { raisedInfo: unknown }).raisedInfo, [{ number: 50000, message: 'Lagerplatz gesperrt' }], 'its own numbers only, not the server\'s warnings')
  t.match(toDbError(ended), { name: 'DataFaultError', fault: { kind: 'rejected', message: 'Lagerplatz gesperrt' } }, 'before: a rejection without the trigger\'s words')
  t.same((await queryKeepingRaised(request(false) as never, text)).rowsAffected, [1], 'a batch that succeeds is answered as before')
})

t.test('SQL Server: a NOT NULL or length fault in another table (a trigger\'s history row) is not blamed on the field whose column has the same name', async (t) => {
  let fault = new sql.RequestError(tedious(515, "Cannot insert the value NULL into column 'name', table 'WMS.dbo.materials_history'; column does not allow nulls. INSERT fails."), 'EREQUEST')
  const db = {
    dialect: 'mssql',
    query: async () => [],
    execute: async () => 0,
    queryValues: undefined,
    transaction: async () => { throw toDbError(fault) }
  } as unknown as Database
  const columns = Object.values(referenceMappings.materials.columns).map((c): ColumnInfo => ({ name: c as string, type: c === 'id' ? 'int' : 'nvarchar', nullable: c !== 'id', hasDefault: c === 'id', identity: c === 'id', computed: false, unique: c === 'id' || c === 'material_number' }))
  const repo = new Repository(db, materials, referenceMappings.materials, { columns })
  await t.rejects(repo.create({ materialNumber: 'M-1', name: 'Ventil' }), { name: 'InvalidValueError', message: "The picking system's table requires a value the gateway's mapping does not supply (a NOT NULL column without a default); map that column or give it a default" },
    "before: \"Field 'name' must have a value\", for a name the request gave")
  fault = new sql.RequestError(tedious(2628, "String or binary data would be truncated in table 'WMS.dbo.materials_history', column 'name'. Truncated value: 'Ventil'."), 'EREQUEST')
  await t.rejects(repo.update(1, { name: 'Ventil' }), { name: 'InvalidValueError', message: 'A value is too long for the database column' }, "before: \"Field 'name' is too long\"")
  // the mapped table's own column is still the field's, in its schema, with or without the database's name
  fault = new sql.RequestError(tedious(515, "Cannot insert the value NULL into column 'name', table 'WMS.dbo.materials'; column does not allow nulls. UPDATE fails."), 'EREQUEST')
  await t.rejects(repo.update(1, { name: 'Ventil' }), { message: "Field 'name' must have a value: the database does not allow it to be empty" })
  fault = new sql.RequestError(tedious(513, "A column insert or update conflicts with a rule imposed by a previous CREATE RULE statement. The statement was terminated. The conflict occurred in database 'WMS', table 'dbo.materials', column 'name'."), 'EREQUEST')
  await t.rejects(repo.update(1, { name: 'Ventil' }), { message: "The picking system's database refused the value of 'name' (a rule bound to a column of its table)" })
  fault = new sql.RequestError(tedious(513, "A column insert or update conflicts with a rule imposed by a previous CREATE RULE statement. The statement was terminated. The conflict occurred in database 'WMS', table 'archiv.materials', column 'name'."), 'EREQUEST')
  await t.rejects(repo.update(1, { name: 'Ventil' }), { message: "The picking system's database refused the values (a rule bound to a column of its table)" }, 'a table of that name in another schema is another table')
})

t.test("the server's clock: SYSUTCDATETIME() as ISO text to the millisecond, whatever the connection's useUTC", async (t) => {
  t.equal(CLOCK_STATEMENT, 'SELECT CONVERT(varchar(23), SYSUTCDATETIME(), 126) AS [now]')
})

t.test('SQL Server: where rows share an id (one column of a composite key), a list page ends before every id the server takes for the last one (another case, trailing blanks, accents), not only before the same text', async (t) => {
  // the rows in the order Latin1_General_CI_AI sorts them (trailing blanks ignored): 'A-1', 'a-1 ' and 'Ä-1' are one id to it
  const stored = ['A-1', 'a-1 ', 'Ä-1', 'B-1', 'b-1', 'C-1'].map((id, i) => ({ id, materialNumber: `M-${i}`, name: `row ${i}` }))
  const seen: Statement[] = []
  const tx: Executor = {
    query: async (stmt: Statement) => {
      seen.push(stmt)
      const limit = Number(stmt.params.find((p) => p.name === 'limit')?.value)
      return stored.slice(0, limit)
    },
    execute: async () => 0
  }
  const db = { dialect: 'mssql', query: tx.query, execute: tx.execute, queryValues: undefined, transaction: async <T>(fn: (tx: Executor) => Promise<T>) => await fn(tx) } as unknown as Database
  // the id is text in a column unique only together with another (PRIMARY KEY (Mandant, id))
  const columns = Object.values(referenceMappings.materials.columns).map((c): ColumnInfo => ({ name: c as string, type: c === 'id' ? 'varchar' : 'nvarchar', nullable: c !== 'id', hasDefault: false, identity: false, computed: false, unique: false, maxLength: 20 }))
  const repo = new Repository(db, materials, referenceMappings.materials, { columns })
  const page = await repo.list({ limit: 1, sort: [{ field: 'id', desc: false }], count: false, filters: [] })
  // before: the page was 'A-1' alone with its cursor, and the next page's [id] > 'A-1' passed over 'a-1 '
  t.same(page.rows.map((r) => r.name), ['row 0', 'row 1', 'row 2'], 'the page holds all three rows the server takes for one id')
  t.ok(page.next !== undefined)
  t.same(seen.map((s) => s.params.find((p) => p.name === 'limit')?.value), [2, 3, 5], 'read again with more rows, as for rows of one spelling')
  const second = await repo.list({ limit: 4, sort: [{ field: 'id', desc: false }], count: false, filters: [] })
  t.same(second.rows.map((r) => r.name), ['row 0', 'row 1', 'row 2'], "the page ends before 'B-1' and 'b-1', not between them")
})
