// Pins what legacy column types make of statements: each parameter declared as its column, time windows, value maps.
import sql from 'mssql'
import t from 'tap'
import { mssqlDialect, sqliteDialect } from '../../src/db/dialect.js'
import { encodeCursor, parseListQuery, type QueryString } from '../../src/db/list-query.js'
import { mssqlType, sqlTypeOf } from '../../src/db/mssql.js'
import { referenceColumns } from '../../src/db/init.js'
import { materials, referenceMappings, stations, users } from '../../src/db/resources.js'
import { SqlBuilder } from '../../src/db/sql.js'
import { ODD_VALUES_LOGGED, plainNumber, ResourceStorage, storageProblems } from '../../src/db/storage.js'
import { Repository } from '../../src/db/repository.js'
import { firstTokenVersion, UserService } from '../../src/users.js'
import { argon2HashLength, createPasswords, type Passwords } from '../../src/auth/passwords.js'
import type { ColumnInfo, Database, Param, Row, SqlValue, TableMapping } from '../../src/db/types.js'
import { driverBytes, driverWrites } from '../helpers/tedious.js'

const col = (name: string, type: string, o: Partial<ColumnInfo> = {}): ColumnInfo =>
  ({ name, type, nullable: true, hasDefault: false, identity: false, computed: false, ...o })

// A legacy material table on SQL Server: every column type a picking database uses.
const matMapping: TableMapping = {
  schema: 'wms',
  table: 'Artikel',
  columns: {
    id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', description: 'Txt', unit: 'ME', barcode: 'EAN', minStock: 'MinB', maxStock: 'MaxB',
    weight: 'Gew', blocked: 'Gesperrt', blockReason: 'Grund', stockQuantity: 'Bestand', createdAt: 'Angelegt', modifiedAt: 'LastChange'
  }
}
const matColumns = [
  col('ArtID', 'bigint', { identity: true, nullable: false, precision: 19, scale: 0 }),
  col('ArtNr', 'varchar', { maxLength: 40, nullable: false }),
  col('Bez', 'nvarchar', { maxLength: 80, nullable: false }),
  col('Txt', 'nvarchar', { maxLength: -1 }),
  col('ME', 'char', { maxLength: 3 }),
  col('EAN', 'varchar', { maxLength: 20 }),
  col('MinB', 'decimal', { precision: 18, scale: 3 }),
  col('MaxB', 'int', { precision: 10, scale: 0 }),
  col('Gew', 'real'),
  col('Gesperrt', 'bit', { nullable: false, hasDefault: true }),
  col('Grund', 'varchar', { maxLength: 100 }),
  col('Bestand', 'money', { nullable: false, hasDefault: true }),
  col('Angelegt', 'datetime2', { scale: 7 }),
  col('LastChange', 'datetime', { nullable: false, hasDefault: true })
]

const msMat = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, matMapping, matColumns))
const types = (params: Param[]): Array<[string, SqlValue, string | undefined]> => params.map((p) => [p.name, p.value, p.type])
const list = (b: SqlBuilder, query: QueryString, def = materials): ReturnType<SqlBuilder['list']> => b.list(parseListQuery(query, def))
const where = (text: string): string => text.slice(text.indexOf(' WHERE ') + 7, text.indexOf(' ORDER BY '))

t.test('every parameter is declared as its column is', async (t) => {
  const s = list(msMat, {
    materialNumber: 'M-100', name: 'Ventil', unit: 'pcs', minStock: '[gte]2.5', maxStock: '[lt]10', weight: '[gt]1', blocked: 'true', stockQuantity: '[lte]9.5'
  })
  t.equal(where(s.text), '[ArtNr] = @p1 AND [Bez] = @p2 AND [ME] = @p3 AND [MinB] >= @p4 AND [MaxB] < @p5 AND [Gew] > @p6 AND [Gesperrt] = @p7 AND [Bestand] <= CAST(@p8 AS money)')
  t.same(types(s.params).slice(0, 8), [
    // varchar columns get varchar parameters: an nvarchar one would convert the column and scan its index
    ['p1', 'M-100', 'varchar(8000)'],
    ['p2', 'Ventil', 'nvarchar(4000)'],
    ['p3', 'pcs', 'varchar(8000)'],
    ['p4', 2.5, 'decimal(18,3)'],
    ['p5', 10, 'int'],
    ['p6', 1, 'real'],
    ['p7', true, 'bit'],
    // tedious truncates a money parameter (19.99 arrives as 19.9899): a decimal, which it rounds, cast to money in the SQL
    ['p8', 9.5, 'decimal(19,4)']
  ])
})

t.test('a case-sensitive database: the column spelled as mapped, where two names differ only in case', async (t) => {
  // under Latin1_General_CS_AS, Bez (the name, nvarchar(80)) and BEZ (an old short name, varchar(10)) are two columns
  const columns = matColumns.flatMap((c) => c.name === 'Bez' ? [c, col('BEZ', 'varchar', { maxLength: 10 })] : [c])
  const storage = new ResourceStorage('mssql', materials, matMapping, columns)
  t.equal(storage.field('name').info?.name, 'Bez', 'before: BEZ, the last one of either spelling')
  const s = new SqlBuilder(mssqlDialect, storage).update(7, { name: storage.toDb(storage.field('name'), 'Ventilgehäuse DN 50') })
  t.equal(s.text, 'UPDATE [wms].[Artikel] SET [Bez] = @p1 WHERE [ArtID] = @id')
  t.same(types(s.params), [['p1', 'Ventilgehäuse DN 50', 'nvarchar(4000)'], ['id', 7, 'bigint']], 'its type and length, not BEZ\'s varchar(10)')
  // spelled as neither: the first of them, as before a database had both
  const other = new ResourceStorage('mssql', materials, { ...matMapping, columns: { ...matMapping.columns, name: 'bez' } }, columns)
  t.equal(other.field('name').info?.name, 'Bez')
  t.equal(new SqlBuilder(mssqlDialect, other).update(7, { name: 'Ventil' }).text, 'UPDATE [wms].[Artikel] SET [Bez] = @p1 WHERE [ArtID] = @id')
  const mapped = new ResourceStorage('mssql', materials, { ...matMapping, columns: { ...matMapping.columns, name: 'BEZ' } }, columns)
  t.equal(mapped.field('name').info?.name, 'BEZ', 'the other one when the mapping names it')
  t.throws(() => mapped.toDb(mapped.field('name'), 'Ventilgehäuse DN 50'), { message: "'name' must be at most 10 characters long (its database column's limit), got 19" })
})

t.test('a case-sensitive database: an unmapped column whose name differs from a mapped one\'s only in case is another column', async (t) => {
  // BEZ NOT NULL without a default, beside the mapped Bez: every create fails on it (515), which start-up must say
  const columns = matColumns.flatMap((c) => c.name === 'Bez' ? [c, col('BEZ', 'varchar', { maxLength: 10, nullable: false })] : [c])
  const storage = new ResourceStorage('mssql', materials, matMapping, columns)
  t.match(storageProblems(storage), [/^materials: column 'BEZ' is NOT NULL without a default and not mapped/], 'before: none, BEZ counted as mapped')
  // and its 515 names no field: the server's message spells the column as the catalog does
  t.equal(storage.fieldOf('BEZ'), undefined, 'before: name')
  t.equal(storage.fieldOf('Bez'), 'name')
  t.equal(storage.fieldOf('bez'), 'name', 'a spelling no column has: regardless of case, as before')
})

t.test('non-ASCII text for a varchar column compares in the column\'s collation, as its ORDER BY sorts', async (t) => {
  // a US server's default: SQL_ collations sort varchar by the code page's rules and nvarchar by Unicode's
  // (hyphens, apostrophes): a cursor compared as nvarchar skipped or repeated rows at a page's edge
  const named = (o: Partial<ColumnInfo>) => new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, matMapping,
    matColumns.map((c) => c.name === 'ArtNr' ? { ...c, collation: 'SQL_Latin1_General_CP1_CI_AS', codePage: 1252, ...o } : c)))
  const cp1252 = named({})
  const q = parseListQuery({ sort: 'materialNumber', limit: '2' }, materials)
  q.after = ['Ventil-Satz Müller', 7]
  const page = cp1252.list(q)
  t.match(page.text, '[ArtNr] > CAST(@p1 COLLATE SQL_Latin1_General_CP1_CI_AS AS varchar(8000))', 'the cursor\'s value as the column\'s type and collation')
  t.same(types(page.params).slice(0, 1), [['p1', 'Ventil-Satz Müller', 'nvarchar(4000)']], 'sent as nvarchar: the driver would encode varchar in the database\'s code page')
  t.equal(where(list(cp1252, { materialNumber: 'Größe – ½' }).text), '[ArtNr] = CAST(@p1 COLLATE SQL_Latin1_General_CP1_CI_AS AS varchar(8000))', 'a filter too (it seeks the index)')
  t.equal(where(list(cp1252, { materialNumber: 'M-100' }).text), '[ArtNr] = @p1', 'ASCII goes as varchar, as before')
  t.equal(where(list(cp1252, { materialNumber: 'Widerstand 10 Ω' }).text), '[ArtNr] = @p1', 'text code page 1252 cannot hold stays nvarchar (it equals no stored value)')
  t.equal(where(list(cp1252, { name: 'Größe' }).text), '[Bez] = @p1', 'an nvarchar column takes nvarchar')
  const utf8 = named({ collation: 'Latin1_General_100_CI_AS_SC_UTF8', codePage: 65001, utf8: true })
  t.equal(where(list(utf8, { materialNumber: 'Ω🔑' }).text), '[ArtNr] = CAST(@p1 COLLATE Latin1_General_100_CI_AS_SC_UTF8 AS varchar(8000))', 'a UTF-8 column holds every character')
  t.equal(where(list(utf8, { materialNumber: 'ü'.repeat(4001) }).text), '[ArtNr] = CAST(@p1 COLLATE Latin1_General_100_CI_AS_SC_UTF8 AS varchar(max))', 'beyond 8000 bytes: max')
  t.equal(where(list(named({ collation: undefined }), { materialNumber: 'Größe' }).text), '[ArtNr] = @p1', 'a collation not known: nvarchar as before')
  // a write's text is kept per shape (the fields written): the value may not change it. The cast of a first,
  // short value kept for a later one of more than 8000 bytes would cut that one off at 8000, without an error
  const writes = named({ maxLength: -1 })
  t.equal(writes.update(1, { materialNumber: 'Müller' }).text, 'UPDATE [wms].[Artikel] SET [ArtNr] = @p1 WHERE [ArtID] = @id', 'an update sets the parameter itself: the column converts it')
  const long = 'ü' + 'a'.repeat(9000)
  t.equal(writes.update(1, { materialNumber: long }).text, 'UPDATE [wms].[Artikel] SET [ArtNr] = @p1 WHERE [ArtID] = @id', 'a longer value after it: no varchar(8000) kept from the first')
  t.notMatch(writes.insert({ materialNumber: 'Müller', name: 'x' }).text, /CAST\(@p1/, 'an insert too')
})

t.test('a value the column type cannot hold is compared with a wider type, never a driver error', async (t) => {
  const s = list(msMat, { materialNumber: '[or]Schlüssel;M-1', maxStock: '[or]5;3000000000;1.5', minStock: '[or]1.2345;1e20' })
  t.same(types(s.params).slice(0, 7), [
    ['p1', 'Schlüssel', 'nvarchar(4000)'], // not ASCII: a varchar parameter could turn ü into ?
    ['p2', 'M-1', 'varchar(8000)'],
    ['p3', 5, 'int'],
    ['p4', 3000000000, 'bigint'],
    ['p5', 1.5, 'float'],
    ['p6', 1.2345, 'float'],
    ['p7', 1e20, 'float']
  ])
  t.equal(msMat.paramType(msMat.storage.field('materialNumber'), 'x'.repeat(8001)), 'varchar(max)')
  t.equal(msMat.paramType(msMat.storage.field('description'), 'x'.repeat(4001)), 'nvarchar(max)')
  // one text for both (the same shape), but each call's types follow its own values
  const plain = msMat.update(1, { materialNumber: 'M-1' })
  const wide = msMat.update(1, { materialNumber: 'Schlüssel' })
  t.equal(wide.text, plain.text)
  t.same([plain.params[0].type, wide.params[0].type], ['varchar(8000)', 'nvarchar(4000)'])
  t.equal(msMat.insert({ maxStock: 5 }).params[0].type, 'int')
  t.equal(msMat.insert({ maxStock: 3000000000 }).params[0].type, 'bigint', 'after an insert of the same shape with an int')
})

t.test('a whole number beyond what a 64-bit integer holds, against an integer column, compares as a float: the driver refuses it as a bigint', async (t) => {
  // maxStock is a number field on an int column: 1e20 is a whole number, and more than bigint holds (9223372036854775807)
  const s = list(msMat, { maxStock: '[or]3000000000;1e20;-1e19;9223372036854775807' })
  t.equal(where(s.text), '[MaxB] IN (@p1, @p2, @p3, @p4)')
  t.same(types(s.params).slice(0, 4), [
    ['p1', 3000000000, 'bigint'],
    ['p2', 1e20, 'float'],
    ['p3', -1e19, 'float'],
    // as a double 2^63, one past bigint's last value
    ['p4', 9223372036854775807, 'float']
  ])
  for (const p of s.params) t.doesNotThrow(() => { driverWrites(p) }, `${p.name} (${String(p.value)} as ${p.type ?? ''}) passes the driver`)
  t.equal(msMat.paramType(msMat.storage.field('maxStock'), -(2 ** 63)), 'bigint', "bigint's first value is one")
})

t.test('decimals of more than 19 digits: a parameter type the driver can write (it encodes round(|v| * 10^scale) in 64 bits)', async (t) => {
  // Dynamics NAV declares every decimal as decimal(38,20); others decimal(28,8)
  const nav = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, matMapping, matColumns.map((c) =>
    c.name === 'MinB' ? col('MinB', 'decimal', { precision: 38, scale: 20 }) : c.name === 'Gew' ? col('Gew', 'decimal', { precision: 28, scale: 8 }) : c)))
  const s = list(nav, { minStock: '[or]1.5;0;-2.25;123456789.123;1e17;0.00000000000000000001', weight: '[or]1e19;5e19;0.12345678' })
  t.same(types(s.params).slice(0, 9), [
    ['p1', 1.5, 'decimal(38,1)'], // before: decimal(38,20), RangeError in the driver
    ['p2', 0, 'decimal(38,0)'],
    ['p3', -2.25, 'decimal(38,2)'],
    ['p4', 123456789.123, 'decimal(38,3)'],
    ['p5', 1e17, 'decimal(38,0)'],
    ['p6', 1e-20, 'decimal(38,20)'],
    ['p7', 1e19, 'decimal(28,0)'],
    ['p8', 5e19, 'float'], // past 2^64 even without decimals
    ['p9', 0.12345678, 'decimal(28,8)']
  ])
  for (const p of s.params) t.doesNotThrow(() => { driverWrites(p) }, `${p.name} (${String(p.value)} as ${p.type ?? ''}) passes the driver`)
  t.throws(() => { driverWrites({ name: 'p', kind: 'number', value: 1.5, type: 'decimal(38,20)' }) }, RangeError, 'the column\'s own type does not')
  const write = nav.update(1, { minStock: 0.125, weight: 7 })
  t.same(types(write.params).slice(0, 2), [['p1', 0.125, 'decimal(38,3)'], ['p2', 7, 'decimal(28,0)']], 'writes too')
  t.equal(list(msMat, { minStock: '1.5' }).params[0].type, 'decimal(18,3)', 'up to 19 digits the column\'s own type, as before')
})

/** The decimal a decimal or numeric parameter arrives as on the server: tedious's bytes (sign, then the integer little-endian) as text. */
function arrives (p: Param): string {
  const bytes = driverBytes(p)
  const scale = Number(/,(\d+)\)$/.exec(p.type ?? '')?.[1] ?? 0)
  let units = 0n
  for (let i = bytes.length - 1; i >= 1; i--) units = units * 256n + BigInt(bytes[i])
  const digits = units.toString().padStart(scale + 1, '0')
  return (bytes[0] === 0 ? '-' : '') + (scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`)
}

t.test('a decimal write arrives as sent or is refused naming the field: 15 significant digits, a parameter scale the driver encodes exactly', async (t) => {
  const withColumn = (c: ColumnInfo): SqlBuilder => new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, matMapping, matColumns.map((m) => m.name === c.name ? c : m)))
  const d184 = withColumn(col('MinB', 'decimal', { precision: 18, scale: 4 }))
  const d3810 = withColumn(col('MinB', 'decimal', { precision: 38, scale: 10 }))
  const d194 = withColumn(col('MinB', 'decimal', { precision: 19, scale: 4 }))
  const d200 = withColumn(col('MinB', 'numeric', { precision: 20, scale: 0 }))
  const write = (b: SqlBuilder, n: number): Param => b.update(1, { minStock: b.storage.toDb(b.storage.field('minStock'), n) }).params[0]
  const refused = (b: SqlBuilder, n: number): void => {
    t.throws(() => b.storage.toDb(b.storage.field('minStock'), n), { name: 'InvalidValueError', message: /^'minStock' must have at most 15 significant digits, all a JSON number carries exactly \(its database column, (decimal|numeric)\(\d+,\d+\), would keep another number than the one sent\)/ }, `${n} in ${b.storage.field('minStock').info?.precision ?? ''}`)
  }
  // before, each passed and arrived changed: what the body's JSON parser and tedious's round(|v| * 10^scale) in doubles make of it
  refused(msMat, 12345678901234.567) // arrived as 12345678901234.566
  refused(msMat, 9007199254740.993) // 9007199254740.992
  // 17 digits within 4 units in the last place of its 15: the noise of a sum in doubles, written as the 15 digits a
  // read of a column of more than 15 digits shows (wideDecimal), not refused: an ERP computing in doubles sends such values
  // (a column of fewer decimals refuses them for its scale, as before)
  const nav = withColumn(col('MinB', 'decimal', { precision: 38, scale: 20 }))
  t.equal(nav.storage.toDb(nav.storage.field('minStock'), 1.1 * 1.1), 1.21, '1.2100000000000002 is 1.21')
  refused(nav, 1234567890123456.1) // 17 digits, but no noise: the digits after the 15th are the value's
  t.equal(nav.storage.toDb(nav.storage.field('minStock'), 0.1 + 0.2), 0.3, 'Dynamics NAV\'s decimal(38,20): 0.30000000000000004 is 0.3')
  t.equal(arrives(write(nav, 3.3000000000000003)), '3.3')
  // SQLite keeps the double itself, as sent and as a read shows it: nothing to refuse
  const lite = new ResourceStorage('sqlite', materials, matMapping, matColumns.map((m) => m.name === 'MinB' ? col('MinB', 'decimal', { precision: 18, scale: 3 }) : m))
  t.equal(lite.toDb(lite.field('minStock'), 12345678901234.567), 12345678901234.567)
  refused(d184, 12345678901234.5678) // 12345678901234.5680
  refused(d3810, 1234567890123456.1234567891) // 1234567890123456, as decimal(38,0)
  refused(d3810, 1234567890123456)
  // up to 15 significant digits every value arrives as sent
  t.equal(arrives(write(msMat, 123456789012.345)), '123456789012.345')
  t.equal(arrives(write(msMat, -0.001)), '-0.001')
  t.equal(arrives(write(d184, 99999999999.9999)), '99999999999.9999')
  t.equal(arrives(write(d3810, 12345.123456789)), '12345.123456789')
  // before: decimal(19,4), which arrived as 123456789012345.0112 (the product 1234567890123450000 is no double)
  t.same(types([write(d194, 123456789012345)]), [['p1', 123456789012345, 'decimal(19,0)']])
  t.equal(arrives(write(d194, 123456789012345)), '123456789012345')
  t.equal(arrives(write(d194, 12345678901.2345)), '12345678901.2345', 'the column\'s own scale where that is exact')
  t.equal(write(d194, 12345678901.2345).type, 'decimal(19,4)')
  // a whole number within 2^53 is exact for a column without decimals (a numeric(20,0) key of 16 digits)
  t.equal(arrives(write(d200, 9007199254740991)), '9007199254740991')
  // money goes as a decimal cast to money: before, 922337203685477 went as decimal(19,4) and arrived as 922337203685477.0016
  const money = msMat.update(1, { stockQuantity: msMat.storage.toDb(msMat.storage.field('stockQuantity'), 922337203685477) })
  t.match(money.text, /CAST\(@p1 AS money\)/)
  t.equal(arrives(money.params[0]), '922337203685477')
  t.equal(arrives(msMat.update(1, { stockQuantity: 12345678901.2345 }).params[0]), '12345678901.2345')
  t.throws(() => msMat.storage.toDb(msMat.storage.field('stockQuantity'), 922337203685477.5), /'stockQuantity' must have at most 15 significant digits/)
})

t.test('an update that sends back a decimal as a read showed it passes, though it has more than 15 digits; another such value is a 400', async (t) => {
  const row = { id: 5, materialNumber: 'M-1', name: 'Ventil', description: null, unit: 'ST ', barcode: null, minStock: 12345678901234.566, maxStock: null, weight: null, blocked: false, blockReason: null, stockQuantity: 0, createdAt: null, modifiedAt: new Date('2024-01-01T00:00:00Z') }
  const written: Array<{ text: string, params: Param[] }> = []
  const tx = {
    query: async () => [row],
    execute: async (stmt: { text: string, params: Param[] }) => { written.push(stmt); return 1 }
  }
  const db = { dialect: 'mssql', query: tx.query, execute: tx.execute, transaction: async <T>(fn: (ex: typeof tx) => Promise<T>): Promise<T> => await fn(tx) } as unknown as Database
  const repo = new Repository(db, materials, matMapping, { columns: matColumns })
  await repo.update(5, { minStock: 12345678901234.566, name: 'Ventil' })
  t.equal(written.length, 0, 'the edit form\'s copy of the row: nothing written')
  await t.rejects(repo.update(5, { minStock: 9007199254740.993 }), { name: 'InvalidValueError', message: /^'minStock' must have at most 15 significant digits/ })
  t.equal(written.length, 0, 'nothing changed')
  await repo.update(5, { minStock: 12345678901234.5 })
  const changed = written[0].params.find((p) => p.value === 12345678901234.5)!
  t.same([changed.type, arrives(changed)], ['decimal(18,1)', '12345678901234.5'], 'a change of 15 digits is written, as sent')
})

t.test('money, smallmoney and real: writes within the type\'s range, filter values beyond it compared as float', async (t) => {
  const small = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, matMapping, matColumns.map((c) => c.name === 'Bestand' ? col('Bestand', 'smallmoney', { precision: 10, scale: 4 }) : c)))
  const money = msMat.storage
  const stock = (st: ResourceStorage, n: number): SqlValue => st.toDb(st.field('stockQuantity'), n)
  // before: 922337203685478 passed (less than 10^15) and the driver refused it, a 500
  t.throws(() => stock(money, 922337203685478), { name: 'InvalidValueError', message: "'stockQuantity' must be between -922337203685477.5808 and 922337203685477.5807 (its database column's range, money), got 922337203685478" })
  t.throws(() => stock(money, -922337203685477.6), /must be between -922337203685477\.5808 and/)
  // 922337203685477.5 has 16 digits, more than a JSON number carries for sure (it arrived as 922337203685477.4784)
  t.equal(stock(money, 922337203685477), 922337203685477)
  t.throws(() => stock(small.storage, 500000), { name: 'InvalidValueError', message: "'stockQuantity' must be between -214748.3648 and 214748.3647 (its database column's range, smallmoney), got 500000" })
  t.throws(() => stock(small.storage, 214748.3648), /smallmoney/)
  t.equal(stock(small.storage, -214748.3648), -214748.3648)
  for (const [st, n] of [[money, 922337203685477], [money, -922337203685477], [small.storage, 214748.3647], [small.storage, -214748.3648]] as const) {
    t.doesNotThrow(() => { driverWrites({ name: 'p', kind: 'number', value: stock(st, n), type: st.field('stockQuantity').paramType }) }, `${n} passes the driver`)
  }
  const ms = list(msMat, { stockQuantity: '[or]9.5;1e15;9.12345', weight: '[or]1;1e39' })
  t.same(types(ms.params).slice(0, 5), [['p1', 9.5, 'decimal(19,4)'], ['p2', 1e15, 'float'], ['p3', 9.12345, 'float'], ['p4', 1, 'real'], ['p5', 1e39, 'float']])
  t.same(types(list(small, { stockQuantity: '[or]214748.3647;300000' }).params).slice(0, 2), [['p1', 214748.3647, 'decimal(10,4)'], ['p2', 300000, 'float']])
  for (const p of ms.params.slice(0, 5)) t.doesNotThrow(() => { driverWrites(p) }, `${p.name} passes the driver`)
  t.throws(() => { driverWrites({ name: 'p', kind: 'number', value: 1e15, type: 'money' }) }, /Value must be between/, 'as money it did not')
  t.throws(() => { driverWrites({ name: 'p', kind: 'number', value: 300000, type: 'smallmoney' }) }, /Value must be between/)
  // what arrives: tedious writes money as value * 10000 truncated, a decimal rounded
  const asMoney = driverBytes({ name: 'p', kind: 'number', value: 19.99, type: 'money' })
  t.equal(asMoney.readInt32LE(0) * 2 ** 32 + asMoney.readUInt32LE(4), 199899, 'as money: 19.9899')
  const asDecimal = driverBytes({ name: 'p', kind: 'number', value: 19.99, type: 'decimal(19,4)' })
  t.equal(asDecimal.readBigUInt64LE(asDecimal.length - 8), 199900n, 'as decimal(19,4): 19.9900')
  t.match(list(msMat, { stockQuantity: '19.99' }).text, /\[Bestand\] = CAST\(@p1 AS money\)/, 'the column itself is compared (its index seeks), the value cast to it')
})

t.test('[like] on a padded column compares it without its trailing blanks, as reads show it', async (t) => {
  // before: [ME] LIKE @p1, and SQL Server keeps nchar's padding in LIKE: %c missed 'pc '
  t.equal(where(list(msMat, { unit: '[like]%c' }).text), "RTRIM([ME]) LIKE @p1 ESCAPE '\\'")
  t.equal(where(list(msMat, { unit: '[notlike]%c' }).text), "(RTRIM([ME]) NOT LIKE @p1 ESCAPE '\\' OR [ME] IS NULL)")
  const nchar = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, matMapping, matColumns.map((c) => c.name === 'ME' ? col('ME', 'nchar', { maxLength: 3 }) : c)))
  t.equal(where(list(nchar, { unit: '[like]%c' }).text), "RTRIM([ME]) LIKE @p1 ESCAPE '\\'")
  t.equal(where(list(nchar, { unit: 'pc' }).text), '[ME] = @p1', '= ignores the padding by itself: the column as it is, which an index seeks')
  t.equal(where(list(msMat, { materialNumber: '[like]M%' }).text), "[ArtNr] LIKE @p1 ESCAPE '\\'", 'a varchar column as it is')
})

t.test('legacy text and ntext columns compare and sort through (n)varchar(max); names as the catalog spells them', async (t) => {
  const legacy = (type: string, name = 'Txt'): SqlBuilder => new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, matMapping,
    matColumns.map((c) => c.name === 'Txt' ? col(name, type, { maxLength: 2147483647 }) : c)))
  // = on text is error 402, ORDER BY on it error 306: before, a 500 on description=… or sort=description
  const text = list(legacy('text'), { description: 'Schraube', sort: 'description' })
  t.equal(where(text.text), 'CAST([Txt] AS varchar(max)) = @p1')
  t.match(text.text, / ORDER BY CAST\(\[Txt\] AS varchar\(max\)\) ASC, \[id\] ASC OFFSET/)
  t.match(list(legacy('ntext'), { description: '[or]a;b' }).text, /WHERE CAST\(\[Txt\] AS nvarchar\(max\)\) IN \(@p1, @p2\) ORDER BY/)
  t.match(list(legacy('ntext'), { description: '[like]Schr' }).text, /WHERE CAST\(\[Txt\] AS nvarchar\(max\)\) LIKE @p1/)
  t.match(list(legacy('nvarchar'), { description: 'x', sort: 'description' }).text, /WHERE \[Txt\] = @p1 ORDER BY \[description\] ASC/, 'nvarchar(max) is compared as it is')
  // a case-sensitive catalog knows the column as TXT; the configuration said Txt: the catalog's spelling is used
  const upper = list(legacy('nvarchar', 'TXT'), { description: 'x' }).text
  t.match(upper, /\[TXT\] AS \[description\]/)
  t.match(upper, /WHERE \[TXT\] = @p1/)
})

t.test('a flag in a number column: any value but 0 is true, in filters as in reading (legacy True = -1)', async (t) => {
  const flags = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, matMapping,
    matColumns.map((c) => c.name === 'Gesperrt' ? col('Gesperrt', 'smallint', { nullable: true }) : c)))
  const at = (q: string): string => where(list(flags, { blocked: q }).text)
  t.equal(at('true'), '[Gesperrt] <> 0', 'before: = 1, which missed the rows holding -1')
  t.equal(at('false'), '[Gesperrt] = 0')
  t.equal(at('[not]true'), '([Gesperrt] = 0 OR [Gesperrt] IS NULL)')
  t.equal(at('[not]false'), '([Gesperrt] <> 0 OR [Gesperrt] IS NULL)')
  t.equal(at('[or]true;false'), '[Gesperrt] IS NOT NULL')
  t.equal(at('[nor]true;false'), '[Gesperrt] IS NULL')
  t.equal(at('[or]true'), '[Gesperrt] <> 0')
  t.equal(at('[null]'), '[Gesperrt] IS NULL')
  // the order operators as the API orders flags (false < true): before, -1 compared below false
  t.equal(at('[gt]false'), '[Gesperrt] <> 0')
  t.equal(at('[gt]true'), '1 = 0')
  t.equal(at('[gte]true'), '[Gesperrt] <> 0')
  t.equal(at('[gte]false'), '[Gesperrt] IS NOT NULL')
  t.equal(at('[lt]true'), '[Gesperrt] = 0')
  t.equal(at('[lt]false'), '1 = 0')
  t.equal(at('[lte]true'), '[Gesperrt] IS NOT NULL')
  t.equal(at('[lte]false'), '[Gesperrt] = 0')
  // sorted by the same order, the cursor keeping 0 or 1
  const sorted = list(flags, { sort: '-blocked' })
  t.match(sorted.text, /CASE WHEN \[Gesperrt\] = 0 THEN 0 WHEN \[Gesperrt\] IS NOT NULL THEN 1 END AS \[__s0\]/)
  t.match(sorted.text, /ORDER BY \[__s0\] DESC, \[id\] ASC/)
  t.equal(where(list(msMat, { blocked: 'true' }).text), '[Gesperrt] = @p1', 'a bit column as before')
})

t.test('a computed or identity column under a field the gateway writes stops the start; under a read-only field it is fine', async (t) => {
  const withCols = (change: (c: ColumnInfo) => ColumnInfo, readOnly = false) => storageProblems(new ResourceStorage('mssql', materials, { ...matMapping, readOnly }, matColumns.map(change)))
  t.same(withCols((c) => c), [])
  t.same(withCols((c) => c.name === 'Bestand' ? { ...c, computed: true } : c), [], 'stockQuantity is the picking system\'s: a computed stock is fine')
  t.same(withCols((c) => c.name === 'Txt' ? { ...c, computed: true } : c), [
    "materials.description: column 'Txt' (nvarchar(max)) is computed, so the gateway cannot write it; map the field to another column, to null, or set mapping.materials.readOnly to true"
  ], 'before: every write that set it failed with error 271')
  t.match(withCols((c) => c.name === 'LastChange' ? { ...c, computed: true } : c), [/materials\.modifiedAt: .* is computed/], 'the gateway stamps modifiedAt')
  t.match(withCols((c) => c.name === 'MaxB' ? { ...c, identity: true } : c), [/materials\.maxStock: .* is an identity column/])
  t.same(withCols((c) => c.name === 'Txt' ? { ...c, computed: true } : c, true), [], 'a read-only mapping writes nothing')
  // a column that cannot hold the field's kind: a value map is offered only where one can help
  t.same(withCols((c) => c.name === 'LastChange' ? { ...c, type: 'int' } : c), ["materials.modifiedAt: column 'LastChange' (int) cannot hold a datetime; if it holds Unix time or a date as digits, map it as {\"column\": \"LastChange\", \"format\": \"unix\"} (or unix-ms, yyyymmdd, yyyymmddhhmmss)"], 'no value map for times, but a format')
  t.same(withCols((c) => c.name === 'MinB' ? { ...c, type: 'varchar', maxLength: 10 } : c), ["materials.minStock: column 'MinB' (varchar(10)) cannot hold a number; a value map may translate its codes"])
  // SQL Server types no field can use say why: "(timestamp) cannot hold a datetime" read as if a time column were refused
  t.same([
    withCols((c) => c.name === 'LastChange' ? col('LastChange', 'timestamp', { nullable: false, hasDefault: true }) : c),
    withCols((c) => c.name === 'Angelegt' ? col('Angelegt', 'time', { scale: 7 }) : c),
    withCols((c) => c.name === 'Txt' ? col('Txt', 'xml', { maxLength: -1 }) : c),
    withCols((c) => c.name === 'Bez' ? col('Bez', 'hierarchyid', { maxLength: 892 }) : c)
  ], [
    ["materials.modifiedAt: column 'LastChange' (timestamp) cannot hold a datetime: SQL Server's timestamp is a rowversion, a binary counter the server raises at every change of the row, not a time; map the field to a column of a time type (datetime, datetime2, date, …)"],
    ["materials.createdAt: column 'Angelegt' (time(7)) cannot hold a datetime: it holds a time of day without a date; map the field to a column that holds both (datetime, datetime2, …)"],
    ["materials.description: column 'Txt' (xml(max)) cannot hold a string: the gateway reads and writes text, number, bit and date-time columns, not SQL Server's xml type (nor other binary, xml, sql_variant, hierarchyid or spatial ones); map the field to another column"],
    ["materials.name: column 'Bez' (hierarchyid(892)) cannot hold a string: the gateway reads and writes text, number, bit and date-time columns, not SQL Server's hierarchyid type (nor other binary, xml, sql_variant, hierarchyid or spatial ones); map the field to another column"]
  ], 'before: only "cannot hold a datetime" (a string)')
  // a time column is the advice for a time field only: a text field on one needs another column, not a datetime2
  t.same([
    withCols((c) => c.name === 'Bez' ? col('Bez', 'timestamp', { nullable: false, hasDefault: true }) : c),
    withCols((c) => c.name === 'Txt' ? col('Txt', 'time', { scale: 7 }) : c)
  ], [
    ["materials.name: column 'Bez' (timestamp) cannot hold a string: SQL Server's timestamp is a rowversion, a binary counter the server raises at every change of the row, not a time; map the field to another column"],
    ["materials.description: column 'Txt' (time(7)) cannot hold a string: it holds a time of day, which the gateway neither reads nor writes; map the field to another column"]
  ], 'before: "map the field to a column of a time type" for a name, "a column that holds both (datetime, …)" for a description')
  // SQLite's julianday() numbers are no SQL Server format: the float column is refused, naming what to do
  const julian = storageProblems(new ResourceStorage('mssql', materials, { ...matMapping, timeFormats: { modifiedAt: 'julianday' } }, matColumns.map((c) => c.name === 'LastChange' ? { ...c, type: 'float' } : c)))
  t.same(julian, ["materials.modifiedAt: column 'LastChange' (float) cannot take the format julianday, which is SQLite's julianday() number; on SQL Server map a time column without a format, or Unix time with \"format\": \"unix\""])
  // SQLite's text of whole seconds neither: a varchar column is refused once, naming the time type that keeps whole seconds; a datetime too
  for (const type of ['varchar', 'datetime']) {
    const seconds = storageProblems(new ResourceStorage('mssql', materials, { ...matMapping, timeFormats: { modifiedAt: 'yyyy-mm-dd hh:mm:ss' } }, matColumns.map((c) => c.name === 'LastChange' ? { ...c, type, ...(type === 'varchar' ? { maxLength: 19 } : {}) } : c)))
    t.same(seconds, [`materials.modifiedAt: column 'LastChange' (${type === 'varchar' ? 'varchar(19)' : 'datetime'}) cannot take the format yyyy-mm-dd hh:mm:ss, which is SQLite's text of whole seconds; on SQL Server map a column of a time type (datetime2(0) keeps whole seconds) without a format`])
  }
  // a text id column that nothing fills: the hint is the table keyed by its code or login, never a value map
  for (const def of [stations, users]) {
    const key = def.naturalKey!
    t.same(storageProblems(new ResourceStorage('sqlite', def, referenceMappings[def.name as 'stations' | 'users'], referenceColumns('sqlite', def, referenceMappings[def.name as 'stations' | 'users']).map((c) => c.name === 'id' ? { ...c, type: 'varchar', maxLength: 20, identity: false, hasDefault: false } : c))),
      [`${def.name}.id: column 'id' (varchar(20)) is neither an identity column nor has a default, so the gateway cannot create rows; map ${key} to the same column if it holds the ${key} (a table keyed by it), ${def.name === 'users' ? 'or map another table' : 'or set mapping.stations.readOnly to true'}`])
  }
})

t.test('keyset on a DATETIME column: the stored value with a datetime parameter, so ties compare equal', async (t) => {
  const q = parseListQuery({ sort: 'modifiedAt', limit: '123' }, materials)
  // what the driver returned for …05.997 (stored as .9966667); a datetime2(3) parameter .997 would not be equal
  q.after = [new Date('2021-03-15T14:22:05.997Z'), 106]
  const s = msMat.list(q)
  t.equal(where(s.text), '[LastChange] >= @p1 AND ([LastChange] > @p1 OR ([LastChange] = @p1 AND [ArtID] > @p2))', 'NOT NULL: no IS NULL branches')
  t.same(types(s.params), [['p1', new Date('2021-03-15T14:22:05.997Z'), 'datetime'], ['p2', 106, 'bigint'], ['limit', 123, undefined], ['offset', 0, undefined]])
  const desc = parseListQuery({ sort: '-createdAt' }, materials)
  desc.after = [null, 7]
  t.equal(where(msMat.list(desc).text), '[Angelegt] IS NULL AND ([Angelegt] IS NULL AND [ArtID] > @p1)', 'after a NULL descending: only the NULLs left')
})

t.test('time filters compare what the API shows, on every time type', async (t) => {
  // datetime keeps 1/300 s: …05.997 is tick 299 (.99667); the API (the driver) shows it as .997
  const exact = list(msMat, { modifiedAt: '2021-03-15T14:22:05.997Z' })
  t.equal(where(exact.text), '([LastChange] >= @p1 AND [LastChange] < @p2)', 'datetime: the ticks the API shows as that millisecond')
  t.same(types(exact.params).slice(0, 2), [['p1', new Date('2021-03-15T14:22:05.997Z'), 'datetime'], ['p2', new Date('2021-03-15T14:22:06.000Z'), 'datetime']])
  const after = list(msMat, { modifiedSince: '2021-03-15T14:22:05.001Z' })
  t.same(types(after.params)[0], ['p1', new Date('2021-03-15T14:22:05.003Z'), 'datetime'], '.001 is no tick: the first one at or after it is .00333, shown as .003')
  const firstAt = (ms: string): string => msMat.storage.firstStoredAtOrAfter(msMat.storage.field('modifiedAt'), Date.parse(`2021-03-15T14:22:05.${ms}Z`))!.toISOString().slice(20, 23)
  t.same(['000', '001', '003', '004', '007', '010', '500', '998'].map(firstAt), ['000', '003', '003', '007', '007', '010', '500', '000'])
  t.equal(msMat.storage.firstStoredAtOrAfter(msMat.storage.field('modifiedAt'), Date.parse('2021-03-15T23:59:59.999Z'))!.toISOString(), '2021-03-16T00:00:00.000Z', 'the last tick of a day rounds into the next')

  // datetime2(7) holds 100 ns: the API shows milliseconds, so t stands for [t, t + 1 ms)
  const fine = list(msMat, { createdAt: '2021-03-15T14:22:05.123Z' })
  t.equal(where(fine.text), '([Angelegt] >= @p1 AND [Angelegt] < @p2)')
  t.same(types(fine.params).slice(0, 2), [['p1', new Date('2021-03-15T14:22:05.123Z'), 'datetime2(7)'], ['p2', new Date('2021-03-15T14:22:05.124Z'), 'datetime2(7)']])
  const ops = (op: string): string => where(list(msMat, { createdAt: `[${op}]2021-03-15T14:22:05.123Z` }).text)
  t.equal(ops('gt'), '[Angelegt] >= @p1', 'after the whole millisecond')
  t.equal(ops('gte'), '[Angelegt] >= @p1')
  t.equal(ops('lt'), '[Angelegt] < @p1')
  t.equal(ops('lte'), '[Angelegt] < @p1', 'up to the end of the millisecond')
  t.equal(ops('not'), '([Angelegt] < @p1 OR [Angelegt] >= @p2 OR [Angelegt] IS NULL)')
  t.equal(where(list(msMat, { createdAt: '[or]2021-01-01;2021-01-02' }).text), '(([Angelegt] >= @p1 AND [Angelegt] < @p2) OR ([Angelegt] >= @p3 AND [Angelegt] < @p4))')
  t.equal(where(list(msMat, { createdAt: '[nor]2021-01-01' }).text), '(([Angelegt] < @p1 OR [Angelegt] >= @p2 OR [Angelegt] IS NULL))')
  t.equal(where(list(msMat, { createdAt: '[null]' }).text), '[Angelegt] IS NULL')
  t.throws(() => list(msMat, { createdAt: '[like]2021' }), /works only on text fields/)

  // coarser columns hold only some milliseconds: bounds move to values the column holds
  const coarse = (type: string, extra: Partial<ColumnInfo> = {}): SqlBuilder => new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, matMapping,
    matColumns.map((c) => c.name === 'Angelegt' ? col('Angelegt', type, extra) : c)))
  const small = coarse('smalldatetime')
  const at = (b: SqlBuilder, q: string): [string, Array<[string, SqlValue, string | undefined]>] => {
    const s = list(b, { createdAt: q })
    return [where(s.text), types(s.params).slice(0, -2)]
  }
  t.same(at(small, '[gt]2021-03-15T14:22:40Z'), ['[Angelegt] >= @p1', [['p1', new Date('2021-03-15T14:23:00Z'), 'smalldatetime']]], 'later than 14:22:40 is from 14:23 on')
  t.same(at(small, '[lte]2021-03-15T14:22:40Z'), ['[Angelegt] < @p1', [['p1', new Date('2021-03-15T14:23:00Z'), 'smalldatetime']]])
  t.same(at(small, '[gte]2021-03-15T14:22:00Z'), ['[Angelegt] >= @p1', [['p1', new Date('2021-03-15T14:22:00Z'), 'smalldatetime']]])
  t.same(at(small, '2021-03-15T14:22:00Z'), ['([Angelegt] >= @p1 AND [Angelegt] < @p2)', [['p1', new Date('2021-03-15T14:22:00Z'), 'smalldatetime'], ['p2', new Date('2021-03-15T14:23:00Z'), 'smalldatetime']]])
  t.same(at(small, '2021-03-15T14:22:30Z'), ['1 = 0', []], 'a time the column cannot hold equals nothing')
  // outside the type's range (.NET's DateTime.MinValue, a far "forever"): its first or last value, never a parameter SQL Server refuses
  const min = (type: string) => Date.UTC(type === 'datetime' ? 1753 : 1900, 0, 1)
  for (const type of ['datetime', 'smalldatetime']) {
    t.same(at(coarse(type), '[gte]0001-01-01T00:00:00Z'), ['[Angelegt] >= @p1', [['p1', new Date(min(type)), type]]], `${type}: since the year 1 is since its first value`)
    t.same(at(coarse(type), '[lt]0001-01-01T00:00:00Z'), ['[Angelegt] < @p1', [['p1', new Date(min(type)), type]]], 'before it: nothing')
    t.same(at(coarse(type), '0001-01-01T00:00:00Z'), ['1 = 0', []])
  }
  // past the type's last value no stored value is later: before, the bound was that last value, so [lt] left out and [gt]
  // took in the rows holding it, the "no date" sentinel of legacy tables (9999-12-31, 2079-06-06)
  t.same(at(small, '[lt]2099-12-31T00:00:00Z'), ['[Angelegt] IS NOT NULL', []], 'before a time past its last value: every row with a time')
  t.same(at(small, '[gt]2100-01-01T00:00:00Z'), ['1 = 0', []], 'after it: none (before: the rows holding 2079-06-06 23:59)')
  t.same(at(small, '[gte]2079-06-06T23:59:00Z'), ['[Angelegt] >= @p1', [['p1', new Date('2079-06-06T23:59:00Z'), 'smalldatetime']]], 'its last value itself')
  t.same(at(small, '2079-06-06T23:59:00Z'), ['[Angelegt] >= @p1', [['p1', new Date('2079-06-06T23:59:00Z'), 'smalldatetime']]], 'equal to its last value: nothing later to bound it')
  t.same(at(small, '[not]2079-06-06T23:59:00Z'), ['([Angelegt] < @p1 OR [Angelegt] IS NULL)', [['p1', new Date('2079-06-06T23:59:00Z'), 'smalldatetime']]])
  const datetime = coarse('datetime')
  t.same(at(datetime, '[lte]9999-12-31T23:59:59.999Z'), ['[Angelegt] IS NOT NULL', []], 'datetime: up to the last millisecond of 9999 is every row with a time (before: all but those at .997)')
  t.same(at(datetime, '[gt]9999-12-31T23:59:59.997Z'), ['1 = 0', []])
  t.same(at(datetime, '9999-12-31T23:59:59.997Z'), ['[Angelegt] >= @p1', [['p1', new Date('9999-12-31T23:59:59.997Z'), 'datetime']]], 'before: 1 = 0, the sentinel rows not found')
  t.same(at(datetime, '[not]9999-12-31T23:59:59.998Z'), ['1 = 1', []], 'a time it cannot hold: every row differs')
  t.same(at(coarse('date'), '[lt]2021-03-15T12:00:00Z'), ['[Angelegt] < @p1', [['p1', new Date('2021-03-16T00:00:00Z'), 'date']]])
  t.same(at(coarse('datetime2', { scale: 0 }), '[gt]2021-03-15T14:22:05.500Z'), ['[Angelegt] >= @p1', [['p1', new Date('2021-03-15T14:22:06Z'), 'datetime2(0)']]])
  t.same(at(coarse('datetime2', { scale: 3 }), '[gt]2021-03-15T14:22:05.500Z'), ['[Angelegt] > @p1', [['p1', new Date('2021-03-15T14:22:05.500Z'), 'datetime2(3)']]])
  t.same(at(coarse('datetimeoffset', { scale: 7 }), '2021-03-15T14:22:05.500Z')[1].map((p) => p[2]), ['datetimeoffset(7)', 'datetimeoffset(7)'])
})

t.test('date, datetime2 and datetimeoffset end with the year 9999: a filter bound past it (rounded up, or moved by the zone) is none, never a parameter the driver refuses', async (t) => {
  const built = (type: string, extra: Partial<ColumnInfo> = {}, timeZone?: string): SqlBuilder => new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials,
    { ...matMapping, ...(timeZone === undefined ? {} : { timeZone }) }, matColumns.map((c) => c.name === 'Angelegt' ? col('Angelegt', type, extra) : c)))
  const at = (b: SqlBuilder, q: string): [string, Array<[string, SqlValue, string | undefined]>] => {
    const s = list(b, { createdAt: q })
    for (const p of s.params) t.doesNotThrow(() => { driverWrites(p) }, `${q}: ${p.name} (${p.value instanceof Date ? p.value.toISOString() : String(p.value)} as ${p.type ?? ''}) passes the driver`)
    return [where(s.text), types(s.params).slice(0, -2)]
  }
  // .NET's DateTime.MaxValue (9999-12-31T23:59:59.9999999) as an upper bound: up to the end of its millisecond is every row with a time
  const fine = built('datetime2', { scale: 7 })
  t.same(at(fine, '[lte]9999-12-31T23:59:59.999Z'), ['[Angelegt] IS NOT NULL', []], 'datetime2(7): before, a bound of 10000-01-01')
  t.same(at(fine, '[gt]9999-12-31T23:59:59.999Z'), ['1 = 0', []])
  t.same(at(fine, '[lte]9999-12-31T23:59:59.9999999Z'), ['[Angelegt] IS NOT NULL', []], 'as .NET writes it, seven digits')
  t.same(at(fine, '9999-12-31T23:59:59.999Z'), ['[Angelegt] >= @p1', [['p1', new Date('9999-12-31T23:59:59.999Z'), 'datetime2(7)']]], 'equal: nothing later to bound it')
  t.same(at(fine, '[not]9999-12-31T23:59:59.999Z'), ['([Angelegt] < @p1 OR [Angelegt] IS NULL)', [['p1', new Date('9999-12-31T23:59:59.999Z'), 'datetime2(7)']]])
  t.same(at(built('datetimeoffset', { scale: 7 }), '[lte]9999-12-31T23:59:59.999Z'), ['[Angelegt] IS NOT NULL', []], 'datetimeoffset(7)')
  // rounded up to what the column holds
  t.same(at(built('datetime2', { scale: 0 }), '[gt]9999-12-31T23:59:59.500Z'), ['1 = 0', []], 'datetime2(0): the next second is the year 10000')
  t.same(at(built('datetime2', { scale: 0 }), '[gte]9999-12-31T23:59:59Z'), ['[Angelegt] >= @p1', [['p1', new Date('9999-12-31T23:59:59Z'), 'datetime2(0)']]], 'its last second itself')
  t.same(at(built('date'), '[gt]9999-12-31T00:00:00Z'), ['1 = 0', []], 'date: the next day is the year 10000')
  t.same(at(built('date'), '[lt]9999-12-31T12:00:00Z'), ['[Angelegt] IS NOT NULL', []])
  t.same(at(built('date'), '9999-12-31T00:00:00Z'), ['[Angelegt] >= @p1', [['p1', new Date('9999-12-31T00:00:00Z'), 'date']]])
  // a local-time column: the last hours of 9999 in UTC are already the year 10000 in Berlin, which no column holds
  const berlin = built('datetime2', { scale: 3 }, 'Europe/Berlin')
  t.same(at(berlin, '[gte]9999-12-31T23:30:00Z'), ['1 = 0', []], 'Berlin: 10000-01-01T00:30 local')
  t.same(at(berlin, '[lt]9999-12-31T23:30:00Z'), ['[Angelegt] IS NOT NULL', []])
  t.same(at(berlin, '[gte]9999-12-31T22:30:00Z'), ['[Angelegt] >= @p1', [['p1', new Date('9999-12-31T23:30:00Z'), 'datetime2(3)']]], 'an hour earlier is 23:30 local, which it holds')
})

t.test('a time written to a datetime2 or datetimeoffset of scale 0 to 2 goes as the column holds it: the day\'s last half second is the next day\'s midnight, not 24:00:00 (error 8023)', async (t) => {
  // tedious writes the time as units of the day (3 bytes at scales 0 to 2, 4 at 3 and 4), then the days since 0001-01-01
  // (3 bytes); it rounds the units and did not carry into the date, which SQL Server refuses as no valid datetime2
  const decoded = (bytes: Buffer, width = 3): { units: number, days: number } => ({ units: bytes.readUIntLE(0, width), days: bytes.readUIntLE(width, 3) })
  const sent = (type: string, iso: string): { units: number, days: number } =>
    decoded(driverBytes({ name: 'p', kind: 'datetime', value: new Date(iso), type }), /\([34]\)$/.test(type) ? 4 : 3)
  const nov27 = (Date.parse('2026-11-27T00:00:00Z') + 62135596800000) / 86400000
  t.same(sent('datetime2(0)', '2026-11-26T23:59:59.600Z'), { units: 0, days: nov27 }, 'datetime2(0): the next day at 00:00:00 (before: 86400 seconds into the 26th)')
  t.same(sent('datetime2(1)', '2026-11-26T23:59:59.950Z'), { units: 0, days: nov27 })
  t.same(sent('datetimeoffset(2)', '2026-11-26T23:59:59.995Z').units, 0, 'datetimeoffset the same')
  t.same(sent('datetime2(0)', '2026-11-26T23:59:59.400Z'), { units: 86399, days: nov27 - 1 }, 'below the half: the day\'s last second')
  t.same(sent('datetime2(0)', '2026-11-26T12:00:00.500Z').units, 43201, 'as SQL Server converts: half a second up')
  t.same(sent('datetime2(3)', '2026-11-26T23:59:59.999Z'), { units: 86399999, days: nov27 - 1 }, 'scale 3 and finer hold the millisecond: as given')
  t.same(sent('datetime2(0)', '9999-12-31T23:59:59.700Z'), { units: 86399, days: 3652058 }, 'past 9999-12-31: its last second, not the year 10000')
  // a stamp a write takes in that half second reaches the driver this way (modifiedAt on a datetime2(0) column)
  const b = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, matMapping, matColumns.map((c) => c.name === 'LastChange' ? { ...c, type: 'datetime2', scale: 0 } : c)))
  const stamp = b.update(5, { modifiedAt: b.storage.toDb(b.storage.field('modifiedAt'), new Date('2026-11-26T23:59:59.750Z')) }).params[0]
  t.equal(stamp.type, 'datetime2(0)')
  t.same(decoded(driverBytes(stamp)), { units: 0, days: nov27 })
})

t.test('local-time columns: filters and writes in wall-clock time, the API in UTC', async (t) => {
  const berlin = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, { ...matMapping, timeZone: 'Europe/Berlin' }, matColumns))
  const s = list(berlin, { modifiedSince: '2026-07-01T10:00:00Z' })
  t.equal(where(s.text), '[LastChange] >= @p1')
  t.same(types(s.params)[0], ['p1', new Date('2026-07-01T12:00:00Z'), 'datetime'], 'summer: UTC+2 as wall-clock time')
  const storage = berlin.storage
  const lastChange = storage.field('modifiedAt')
  t.same(storage.toDb(lastChange, new Date('2026-01-10T10:00:00Z')), new Date('2026-01-10T11:00:00Z'), 'winter: UTC+1')
  t.equal(storage.fromDb(lastChange, new Date('2026-01-10T11:00:00Z')), '2026-01-10T10:00:00.000Z')
  t.equal(storage.fromDb(lastChange, new Date('2026-03-29T02:30:00Z')), '2026-03-29T01:00:00.000Z', 'a wall time in the spring gap reads as the moment the clock jumped: the order of stored times is kept')
  t.equal(storage.fromDb(lastChange, new Date('2026-10-25T02:30:00Z')), '2026-10-25T00:30:00.000Z', 'a wall time in the autumn overlap takes the earlier instant')
  // a filter time t becomes the first wall-clock value the API shows as t or later
  const first = (iso: string): string => storage.firstStoredAtOrAfter(lastChange, Date.parse(iso))!.toISOString()
  t.equal(first('2026-03-29T00:59:59Z'), '2026-03-29T01:59:59.000Z', 'before the spring jump: CET')
  t.equal(first('2026-03-29T01:00:00Z'), '2026-03-29T02:00:00.000Z', 'the jump itself: the skipped wall times stand for it too')
  t.equal(first('2026-03-29T01:00:00.001Z'), '2026-03-29T03:00:00.003Z', 'after it: CEST (datetime ticks)')
  t.equal(first('2026-10-25T00:30:00Z'), '2026-10-25T02:30:00.000Z', 'autumn, first occurrence: CEST')
  t.equal(first('2026-10-25T01:30:00Z'), '2026-10-25T03:00:00.000Z', 'autumn, second occurrence: no wall time shows it; the first after the repeated hour')
  t.equal(first('2026-10-25T02:00:00Z'), '2026-10-25T03:00:00.000Z', 'CET again')
  const warned: Array<Record<string, unknown>> = []
  const lite = new ResourceStorage('sqlite', materials, { table: 'Artikel', columns: matMapping.columns, timeZone: 'Europe/Berlin' },
    [col('LastChange', 'datetime'), ...matColumns.filter((c) => c.name !== 'LastChange')], { warn: (obj) => warned.push(obj as Record<string, unknown>) })
  t.equal(lite.toDb(lite.field('modifiedAt'), new Date('2026-07-01T10:00:00.123Z')), '2026-07-01 12:00:00.123', 'SQLite: local text without an offset')
  t.equal(lite.fromDb(lite.field('modifiedAt'), '2026-07-01 12:00:00'), '2026-07-01T10:00:00.000Z')
  t.equal(lite.fromDb(lite.field('modifiedAt'), '2026-07-01T12:00:00Z'), '2026-07-01T12:00:00.000Z', 'text with an offset is an instant whatever the zone')
  // which SQLite's filters, seeing only the text, compare as local time: said once in the log
  t.same(warned, [{ resource: 'materials', field: 'modifiedAt', value: '2026-07-01T12:00:00Z', timeZone: 'Europe/Berlin' }])
  lite.fromDb(lite.field('modifiedAt'), '2026-07-01T13:00:00+01:00')
  t.equal(warned.length, 1, 'once per field')
})

t.test('a zone whose offset is always 0 is UTC: no conversion', async (t) => {
  for (const timeZone of ['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT']) {
    t.equal(new ResourceStorage('mssql', materials, { ...matMapping, timeZone }, matColumns).field('modifiedAt').timeZone, undefined, timeZone)
  }
})

// A legacy station table: type codes, a J/N flag, a warehouse kept as a number.
const stMapping: TableMapping = {
  schema: 'wms',
  table: 'Arbeitsplatz',
  columns: { id: 'WpID', name: 'WpName', description: 'Txt', type: 'WpType', warehouse: 'Lager', controllerId: 'Sps', address: 'Adr', enabled: 'Aktiv', createdAt: 'Angelegt', modifiedAt: 'LastChange' },
  values: { type: { vlm: 'V', carousel: 'K', ptl: 'P', manual: ['M', 'H'] }, enabled: { true: 'J', false: 'N' } }
}
const stColumns = [
  col('WpID', 'int', { identity: true, nullable: false }), col('WpName', 'varchar', { maxLength: 40, nullable: false }), col('Txt', 'nvarchar', { maxLength: -1 }),
  col('WpType', 'char', { maxLength: 1, nullable: false }), col('Lager', 'smallint'), col('Sps', 'varchar', { maxLength: 20 }), col('Adr', 'tinyint'),
  col('Aktiv', 'char', { maxLength: 1, nullable: false, hasDefault: true }), col('Angelegt', 'smalldatetime'), col('LastChange', 'datetime')
]
const msSt = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', stations, stMapping, stColumns))
const RANK = (p: number[]): string => `CASE WHEN [WpType] = @p${p[0]} THEN 1 WHEN [WpType] IN (@p${p[1]}, @p${p[2]}) THEN 2 WHEN [WpType] = @p${p[3]} THEN 3 ` +
  `WHEN [WpType] = @p${p[4]} THEN 4 WHEN [WpType] IS NULL THEN NULL ELSE 5 END`

t.test('value maps: filters compare stored codes, sorting follows the API values', async (t) => {
  const s = list(msSt, { type: '[or]vlm;manual', enabled: 'true', warehouse: '3' }, stations)
  t.equal(where(s.text), '[WpType] IN (@p1, @p2, @p3) AND [Aktiv] = @p4 AND [Lager] = @p5')
  t.same(types(s.params).slice(0, 5), [['p1', 'V', 'varchar(8000)'], ['p2', 'M', 'varchar(8000)'], ['p3', 'H', 'varchar(8000)'], ['p4', 'J', 'varchar(8000)'], ['p5', 3, 'smallint']])
  t.equal(where(list(msSt, { type: 'S' }, stations).text), '[WpType] = @p1', 'a code no map knows is compared as it is: rows holding it can be found')
  t.equal(where(list(msSt, { type: '[not]vlm' }, stations).text), '([WpType] NOT IN (@p1) OR [WpType] IS NULL)')
  t.equal(where(list(msSt, { type: '[nor]manual' }, stations).text), '([WpType] NOT IN (@p1, @p2) OR [WpType] IS NULL)')
  t.equal(where(list(msSt, { type: '[gte]ptl' }, stations).text), `${RANK([1, 2, 3, 4, 5])} >= @p6`)
  t.throws(() => list(msSt, { type: '[gt]shuttle' }, stations), /compares in the order carousel < manual < ptl < vlm; 'shuttle' is not one of them/)
  t.throws(() => list(msSt, { type: '[like]v%' }, stations), /translated from codes/)
  t.throws(() => list(msSt, { warehouse: 'north' }, stations), /keeps it as a number/)

  const sorted = parseListQuery({ sort: 'type' }, stations)
  sorted.after = [2, 5]
  const k = msSt.list(sorted)
  t.equal(k.text.slice(k.text.indexOf(', CASE'), k.text.indexOf(' FROM ')), `, ${RANK([1, 2, 3, 4, 5])} AS [__s0]`, 'the rank is selected for the cursor')
  t.equal(where(k.text), `${RANK([8, 9, 10, 11, 12])} >= @p6 AND (${RANK([8, 9, 10, 11, 12])} > @p6 OR (${RANK([8, 9, 10, 11, 12])} = @p6 AND [WpID] > @p7))`)
  t.match(k.text, /ORDER BY \[__s0\] ASC, \[id\] ASC OFFSET/, 'ORDER BY names the selected rank and the id by their aliases')
  t.same(types(k.params).slice(5, 7), [['p6', 2, 'int'], ['p7', 5, 'int']])
})

t.test('value maps on a legacy text or ntext column compare and sort through (n)varchar(max): = on text is error 402', async (t) => {
  for (const [type, cast] of [['text', 'varchar(max)'], ['ntext', 'nvarchar(max)']]) {
    const legacy = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', stations, stMapping, stColumns.map((c) => c.name === 'WpType' ? col('WpType', type, { maxLength: -1, nullable: false }) : c)))
    const typeCol = `CAST([WpType] AS ${cast})`
    t.equal(where(list(legacy, { type: '[or]vlm;manual' }, stations).text), `${typeCol} IN (@p1, @p2, @p3)`, `${type}: a filter`)
    t.equal(where(list(legacy, { type: '[not]vlm' }, stations).text), `(${typeCol} NOT IN (@p1) OR ${typeCol} IS NULL)`)
    t.match(list(legacy, { type: '[gte]ptl' }, stations).text, `CASE WHEN ${typeCol} = @p1 THEN 1`, `${type}: the rank of an order operator`)
    t.match(list(legacy, { sort: 'type' }, stations).text, `CASE WHEN ${typeCol} = @p1 THEN 1`, `${type}: the rank sorting uses`)
  }
})

t.test('value maps: each stored code once, and never more parameters than SQL Server takes (error 8003)', async (t) => {
  const s = list(msSt, { type: '[or]manual;manual;vlm;manual' }, stations)
  t.equal(where(s.text), '[WpType] IN (@p1, @p2, @p3)', 'before: 7 parameters, M and H three times')
  t.same(s.params.slice(0, 3).map((p) => p.value), ['M', 'H', 'V'])
  t.equal(where(list(msSt, { type: '[nor]manual;manual' }, stations).text), '([WpType] NOT IN (@p1, @p2) OR [WpType] IS NULL)')
  // five codes a value: 500 filters (parseListQuery's bound) stand for 2500 parameters
  const many = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', stations, { ...stMapping, values: { ...stMapping.values, type: { ...stMapping.values!.type, manual: ['M', 'H', 'X', 'Y', 'Z'] } } }, stColumns))
  const q = { type: Array.from({ length: 500 }, () => 'manual') }
  t.throws(() => list(many, q, stations), { name: 'BadQueryError', message: 'Too many filter values: with the stored codes their value maps stand for, they need 2502 parameters, and SQL Server takes at most 2098' })
  t.throws(() => many.count(parseListQuery(q, stations).filters), { name: 'BadQueryError', message: /2500 parameters, and SQL Server takes at most 2098/ })
  t.equal(list(many, { type: Array.from({ length: 400 }, () => 'manual') }, stations).params.length, 2002, 'within the limit')
})

t.test('value maps: filters and sorting compare codes as reads do (no trailing spaces, any case)', async (t) => {
  // SQL Server with its usual CI collation ignores both by itself: the column as it is (above)
  // a CS or binary collation: UPPER(col) against upper-cased codes
  const cs = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', stations, stMapping, stColumns.map((c) => c.name === 'WpType' ? { ...c, caseSensitive: true } : c)))
  const q = list(cs, { type: '[or]vlm;manual', enabled: 'true' }, stations)
  t.equal(where(q.text), 'UPPER([WpType]) IN (@p1, @p2, @p3) AND [Aktiv] = @p4', 'only the case-sensitive column')
  t.same(types(q.params).slice(0, 3), [['p1', 'V', 'varchar(8000)'], ['p2', 'M', 'varchar(8000)'], ['p3', 'H', 'varchar(8000)']])
  t.equal(where(list(cs, { type: '[not]vlm' }, stations).text), '(UPPER([WpType]) NOT IN (@p1) OR [WpType] IS NULL)')
  const lower = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', stations, { ...stMapping, values: { ...stMapping.values, type: { vlm: 'v', carousel: 'k', ptl: 'p', manual: 'm' } } }, stColumns.map((c) => c.name === 'WpType' ? { ...c, caseSensitive: true } : c)))
  t.same(list(lower, { type: 'vlm' }, stations).params[0].value, 'V', 'codes configured in lower case are upper-cased too')
  const rank = list(cs, { type: '[gte]ptl' }, stations).text
  t.match(rank, /CASE WHEN UPPER\(\[WpType\]\) = @p1 THEN 1 WHEN UPPER\(\[WpType\]\) IN \(@p2, @p3\) THEN 2 .* WHEN \[WpType\] IS NULL THEN NULL ELSE 5 END >= @p6/, 'the rank the same way')
  // SQLite compares exactly: RTRIM and NOCASE
  const lite = new SqlBuilder(sqliteDialect, new ResourceStorage('sqlite', stations, stMapping, [col('WpType', 'char', { maxLength: 1, nullable: false }), col('Aktiv', 'integer', { nullable: false })]))
  t.equal(where(list(lite, { type: '[or]vlm;manual' }, stations).text), "RTRIM(\"WpType\", ' ') COLLATE NOCASE IN (@p1, @p2, @p3)")
  t.equal(where(list(lite, { type: '[nor]vlm' }, stations).text), "(RTRIM(\"WpType\", ' ') COLLATE NOCASE NOT IN (@p1) OR \"WpType\" IS NULL)")
  // SQLite keeps the text 'j' or 'J ' in an INTEGER column too, which reads take for 'J'
  t.equal(where(list(lite, { enabled: 'true' }, stations).text), '(CASE WHEN typeof("Aktiv") = \'text\' THEN RTRIM("Aktiv", \' \') ELSE "Aktiv" END) COLLATE NOCASE = @p1', 'a number column with text codes: its text as in a text column')
  const liteNumbers = new SqlBuilder(sqliteDialect, new ResourceStorage('sqlite', stations, { ...stMapping, values: { ...stMapping.values, enabled: { true: [1, -1], false: 0 } } }, [col('WpType', 'char', { maxLength: 1, nullable: false }), col('Aktiv', 'integer', { nullable: false })]))
  t.equal(where(list(liteNumbers, { enabled: 'true' }, stations).text), '"Aktiv" IN (@p1, @p2)', 'a number column with number codes: as it is')
  // a column without a declared type keeps '1' as text too, which reads take for the code 1
  const untyped = new SqlBuilder(sqliteDialect, new ResourceStorage('sqlite', stations, { ...stMapping, values: { ...stMapping.values, enabled: { true: [1, -1], false: 0 } } }, [col('WpType', 'char', { maxLength: 1, nullable: false }), col('Aktiv', '', { nullable: false })]))
  const untypedTrue = list(untyped, { enabled: 'true' }, stations)
  t.equal(where(untypedTrue.text), '(CASE WHEN typeof("Aktiv") = \'text\' THEN RTRIM("Aktiv", \' \') ELSE "Aktiv" END) COLLATE NOCASE IN (@p1, @p2, @p3, @p4)', 'no declared type: number codes as numbers and as text')
  t.same(untypedTrue.params.slice(0, 4).map((p) => p.value), [1, '1', -1, '-1'])
  t.match(list(lite, { sort: 'type' }, stations).text, /CASE WHEN RTRIM\("WpType", ' '\) COLLATE NOCASE = @p1 THEN 1/)
  // a code configured with its padding ('K ' from a CHAR(2) column) is compared trimmed, as the column is
  const padded = new SqlBuilder(sqliteDialect, new ResourceStorage('sqlite', stations, { ...stMapping, values: { ...stMapping.values, type: { vlm: 'V ', carousel: 'K ', ptl: 'P ', manual: 'M ' } } }, [col('WpType', 'char', { maxLength: 2, nullable: false })]))
  t.same(list(padded, { type: 'carousel' }, stations).params[0].value, 'K')
  // two values whose codes differ only in case: case counts, in reads and filters alike
  const exact = new ResourceStorage('sqlite', stations, { ...stMapping, values: { ...stMapping.values, type: { vlm: 'V', carousel: 'v', ptl: 'P', manual: 'M' } } }, [col('WpType', 'char', { maxLength: 1, nullable: false })])
  t.equal(where(list(new SqlBuilder(sqliteDialect, exact), { type: 'vlm' }, stations).text), "RTRIM(\"WpType\", ' ') = @p1")
  t.same([exact.fromDb(exact.field('type'), 'V'), exact.fromDb(exact.field('type'), 'v '), exact.fromDb(exact.field('type'), 'p')], ['vlm', 'carousel', 'p'])
  t.same(lite.storage.fromDb(lite.storage.field('type'), 'p  '), 'ptl', 'otherwise any case reads')
  const csExact = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', stations, exact.mapping, stColumns.map((c) => c.name === 'WpType' ? { ...c, caseSensitive: true } : c)))
  t.equal(where(list(csExact, { type: 'vlm' }, stations).text), '[WpType] = @p1')
})

t.test('a mapped flag filtered by a code no map knows: compared as stored, where the column can hold it', async (t) => {
  const coded = (b: SqlBuilder, query: QueryString): ReturnType<SqlBuilder['list']> => b.list(parseListQuery(query, stations, b.storage.coded))
  // SQL Server, a char(1) column: a varchar parameter, as for the known codes
  const x = coded(msSt, { enabled: '[or]false;X' })
  t.equal(where(x.text), '[Aktiv] IN (@p1, @p2)')
  t.same(types(x.params).slice(0, 2), [['p1', 'N', 'varchar(8000)'], ['p2', 'X', 'varchar(8000)']])
  t.equal(where(coded(msSt, { enabled: '[nor]X' }).text), '([Aktiv] NOT IN (@p1) OR [Aktiv] IS NULL)')
  t.equal(where(coded(msSt, { enabled: '[null]' }).text), '[Aktiv] IS NULL')
  // an int column with codes 1/0: SQL Server's holds no text, so text matches nothing (and no text parameter meets the column)
  const numeric: TableMapping = { ...stMapping, values: { enabled: { true: 1, false: 0 } } }
  const msNum = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', stations, numeric, stColumns.map((c) => c.name === 'Aktiv' ? { ...c, type: 'int' } : c)))
  t.equal(where(coded(msNum, { enabled: 'X' }).text), '1 = 0')
  const mixed = coded(msNum, { enabled: '[or]true;X;7' })
  t.equal(where(mixed.text), '[Aktiv] IN (@p1, @p2)')
  t.same(types(mixed.params).slice(0, 2), [['p1', 1, 'int'], ['p2', 7, 'int']])
  t.equal(where(coded(msNum, { enabled: '[nor]X' }).text), '1 = 1')
  // SQLite's INTEGER column may hold 'X' all the same: compared as stored
  const liteNum = new SqlBuilder(sqliteDialect, new ResourceStorage('sqlite', stations, numeric, [col('Aktiv', 'integer', { nullable: false })]))
  const lx = coded(liteNum, { enabled: 'X' })
  t.equal(where(lx.text), '"Aktiv" = @p1')
  t.same(lx.params[0].value, 'X')
})

t.test('stored values the field cannot show read as null', async (t) => {
  const warned: unknown[] = []
  const lite = new ResourceStorage('sqlite', stations, stMapping, [
    col('WpID', 'integer', { identity: true, nullable: false }), col('Adr', 'smallint'), col('Angelegt', 'datetime', { nullable: false })
  ], { warn: (obj) => warned.push(obj) })
  const read = (field: string, raw: unknown): unknown => lite.reader(lite.field(field))(raw)
  t.equal(read('address', 3), 3)
  t.equal(read('address', '12'), 12, 'a number written as text (an untyped column)')
  t.equal(read('address', ' 1e2 '), 100)
  t.equal(read('address', 2.5), null, 'a fraction is no address: null (the response schema says integer)')
  t.same(warned.at(-1), { resource: 'stations', field: 'address', value: 2.5 })
  t.equal(read('address', '7.0'), 7, 'a whole number written as text with a point')
  t.equal(read('address', 5n), 5)
  for (const raw of ['1,5', '', '0x10', 'abc', Infinity, -Infinity, Buffer.from('ab')]) t.equal(read('address', raw), null, String(raw))
  t.same(warned.at(-1), { resource: 'stations', field: 'address', value: '<2 bytes>' })
  const time = (raw: unknown): unknown => read('createdAt', raw)
  t.equal(time(1712052000), '2024-04-02T10:00:00.000Z', 'Unix seconds')
  t.equal(time(-1712052000), '1915-10-01T14:00:00.000Z', 'before 1970')
  t.equal(time(99999999999), '5138-11-16T09:46:39.000Z', 'seconds up to 1e11')
  t.equal(time(100000000000), '1973-03-03T09:46:40.000Z', 'milliseconds from 1e11 on')
  t.equal(time(1712052000123n), '2024-04-02T10:00:00.123Z')
  t.equal(time('2024-04-02 10:00:00 '), '2024-04-02T10:00:00.000Z', 'trailing white space, which SQLite\'s strftime ignores too')
  t.equal(time('2024-04-02T10:00:00Z\t'), '2024-04-02T10:00:00.000Z')
  t.equal(time(' 2024-04-02 10:00:00'), null, 'leading white space: not a time to strftime either')
  for (const raw of ['02.04.2024 10:00', '', 1e20, true]) t.equal(time(raw), null, String(raw))
  const flags = new ResourceStorage('sqlite', stations, { ...stMapping, values: {} }, [col('Aktiv', 'integer', { nullable: false })], { warn: (obj) => warned.push(obj) })
  const flag = (raw: unknown): unknown => flags.reader(flags.field('enabled'))(raw)
  t.same([flag(1), flag(0), flag(2), flag(0n), flag(true), flag('1'), flag('TRUE'), flag('false'), flag('0')], [true, false, true, false, true, true, true, false, false])
  t.same([flag('J'), flag(''), flag(Buffer.from('1'))], [null, null, null], 'text that is no flag')
  t.ok(flags.field('enabled').showsNull, 'a NOT NULL SQLite column may still show null')
  t.notOk(msSt.storage.field('enabled').showsNull, 'a mapped NOT NULL SQL Server column does not')
  t.notOk(new ResourceStorage('mssql', stations, { ...stMapping, values: {} }, [col('Aktiv', 'bit', { nullable: false })]).field('enabled').showsNull, 'nor a bit NOT NULL')
})

t.test('odd stored values are logged once each, up to ODD_VALUES_LOGGED per field; the notices of a field and other fields are not crowded out', async (t) => {
  const warned: Array<{ obj: Record<string, unknown>, msg: string }> = []
  const lite = new ResourceStorage('sqlite', stations, stMapping, [
    col('WpID', 'integer', { identity: true, nullable: false }), col('WpType', 'char', { maxLength: 1 }), col('Adr', 'smallint'), col('Angelegt', 'datetime', { nullable: false })
  ], { warn: (obj, msg) => warned.push({ obj: obj as Record<string, unknown>, msg }) })
  const read = (field: string, raw: unknown): unknown => lite.reader(lite.field(field))(raw)
  for (let i = 0; i < ODD_VALUES_LOGGED + 500; i++) read('address', `x${i}`)
  read('address', 'x0')
  const address = warned.filter((w) => w.obj.field === 'address')
  t.equal(address.length, ODD_VALUES_LOGGED + 1, 'each value once, up to the budget, then one line saying so')
  t.same(address.at(-1), { obj: { resource: 'stations', field: 'address' }, msg: `${ODD_VALUES_LOGGED} different stored values of this field were logged as above: further ones are not, until the gateway restarts` })
  // before: one set of about 1000 keys for the whole table, full now, and these were dropped
  read('type', 'S')
  t.same(warned.at(-1)?.obj, { resource: 'stations', field: 'type', value: 'S' }, "another field's unknown code has its own budget")
  t.equal(read('createdAt', 1712052000), '2024-04-02T10:00:00.000Z')
  t.same(warned.at(-1)?.obj, { resource: 'stations', field: 'createdAt', value: 1712052000 }, 'a once-per-field notice is no value: never crowded out')
  read('address', 'y')
  read('createdAt', 1712052001)
  t.equal(warned.length, ODD_VALUES_LOGGED + 3, 'nothing more: the address budget is spent, the notice given')
})

t.test('a long odd stored value is logged by its first 200 characters, and remembered by a digest', async (t) => {
  const warned: Array<Record<string, unknown>> = []
  const lite = new ResourceStorage('sqlite', stations, stMapping, [col('WpID', 'integer', { identity: true, nullable: false }), col('Adr', 'smallint')], { warn: (obj) => warned.push(obj as Record<string, unknown>) })
  const read = (raw: unknown): unknown => lite.reader(lite.field('address'))(raw)
  const long = 'n/a '.repeat(250_000)
  read(long)
  read(long)
  t.equal(warned.length, 1, 'once')
  t.equal(warned[0].value, `${long.slice(0, 200)}… (1000000 characters)`, 'not a megabyte in the log line')
  read(`${long}!`)
  t.equal(warned.length, 2, 'another long value is another value')
})

t.test('values checked against the column before any SQL runs', async (t) => {
  const st = msMat.storage
  const bad = (field: string, value: SqlValue, re: RegExp): void => { t.throws(() => st.toDb(st.field(field), value), { name: 'InvalidValueError', message: re }) }
  bad('materialNumber', 'x'.repeat(41), /'materialNumber' must be at most 40 characters long .*got 41/)
  bad('name', '🛢'.repeat(41), /'name' must be at most 80 UTF-16 code units \(an emoji or another character beyond the BMP counts two\) long .*got 82/)
  t.equal(st.toDb(st.field('name'), '🛢'.repeat(40)), '🛢'.repeat(40), 'nvarchar(80) holds 40 emoji')
  t.equal(st.toDb(st.field('materialNumber'), 'x'.repeat(40)), 'x'.repeat(40))
  bad('minStock', 1e15, /'minStock' must be less than 1000000000000000 in magnitude \(its database column is decimal\(18,3\)\)/)
  bad('minStock', 1.2345, /'minStock' must have at most 3 decimal places/)
  // before: passed, and arrived as 999999999999999.872 (tedious's round(|v| * 1000) in doubles)
  bad('minStock', 999999999999999.9, /'minStock' must have at most 15 significant digits/)
  t.equal(st.toDb(st.field('minStock'), 99999999999999.9), 99999999999999.9)
  bad('maxStock', 2147483648, /'maxStock' must be between -2147483648 and 2147483647/)
  bad('maxStock', 1.5, /'maxStock' must be a whole number/)
  bad('stockQuantity', 1.23456, /at most 4 decimal places/)
  bad('name', null, /'name' cannot be null/)
  const legacyDate = new ResourceStorage('mssql', materials, matMapping, matColumns)
  t.throws(() => legacyDate.toDb(legacyDate.field('modifiedAt'), new Date('1700-01-01T00:00:00Z')), /must be between 1753-01-01T00:00:00\.000Z and 9999-12-31T23:59:59\.997Z/)
  // the same table of ranges as the filters' clamp: smalldatetime holds 2079 up to June 6th (before: refused from 2079 on)
  const small = new ResourceStorage('mssql', materials, matMapping, matColumns.map((c) => c.name === 'LastChange' ? col('LastChange', 'smalldatetime', { nullable: false }) : c))
  t.ok(small.toDb(small.field('modifiedAt'), new Date('2079-06-06T12:00:00Z')) instanceof Date)
  t.throws(() => small.toDb(small.field('modifiedAt'), new Date('2079-06-07T00:00:00Z')), /must be between 1900-01-01T00:00:00\.000Z and 2079-06-06T23:59:00\.000Z/)
  const utf8 = new ResourceStorage('mssql', materials, matMapping, matColumns.map((c) => c.name === 'ArtNr' ? { ...c, utf8: true } : c))
  t.throws(() => utf8.toDb(utf8.field('materialNumber'), 'ü'.repeat(21)), /at most 40 bytes long .*got 42/, 'UTF-8 collations count bytes')
  t.equal(utf8.toDb(utf8.field('materialNumber'), 'Ω🔑'), 'Ω🔑', 'and hold every character')
  // a varchar column in code page 1252 stores '?' for what 1252 lacks, without an error: refused first
  const latin1 = new ResourceStorage('mssql', materials, matMapping, matColumns.map((c) => c.name === 'ArtNr' ? { ...c, codePage: 1252 } : c))
  const latinNumber = latin1.field('materialNumber')
  t.equal(latin1.toDb(latinNumber, 'Größe 10 µm – ½'), 'Größe 10 µm – ½', 'what 1252 has passes')
  t.throws(() => latin1.toDb(latinNumber, 'Widerstand 10 Ω'), { name: 'InvalidValueError', message: /^'materialNumber' holds 'Ω' \(U\+03A9\), which its database column \(varchar, code page 1252\) cannot store$/ })
  t.throws(() => latin1.toDb(latinNumber, 'ok 🔑'), /holds '🔑' \(U\+1F511\)/, 'a character beyond the BMP is named whole')
  t.throws(() => latin1.toDb(latinNumber, 'ü'.repeat(41)), /at most 40 characters long .*got 41/, 'one byte per character in 1252')
  t.equal(latin1.toDb(latinNumber, 'ü'.repeat(40)), 'ü'.repeat(40))
  // Japanese (932): varchar(n) holds n bytes, most characters two
  const shiftJis = new ResourceStorage('mssql', materials, matMapping, matColumns.map((c) => c.name === 'ArtNr' ? { ...c, codePage: 932 } : c))
  const jpNumber = shiftJis.field('materialNumber')
  t.equal(shiftJis.toDb(jpNumber, 'データ'.repeat(6) + 'AB'), 'データ'.repeat(6) + 'AB', '38 bytes fit')
  t.throws(() => shiftJis.toDb(jpNumber, 'データ'.repeat(7)), /at most 40 bytes long .*got 42/)
  t.throws(() => shiftJis.toDb(jpNumber, 'Größe'), /holds 'ö' \(U\+00F6\), which its database column \(varchar, code page 932\)/)
  const flags = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', stations, stMapping, stColumns)).storage
  t.equal(flags.toDb(flags.field('enabled'), false), 'N')
  t.equal(flags.toDb(flags.field('type'), 'manual'), 'M', 'the first of several codes is written')
  t.equal(flags.fromDb(flags.field('type'), 'H'), 'manual')
  t.equal(flags.fromDb(flags.field('type'), 'v  '), 'vlm', 'padding and case as SQL Server compares them')
  t.equal(flags.fromDb(flags.field('type'), Buffer.from([0x41, 0x00, 0xff])), null, 'a BLOB is no code (before: its bytes as text, a NUL in the JSON)')
  t.equal(flags.toDb(flags.field('warehouse'), '12'), 12, 'a text field kept as a number')
  t.throws(() => flags.toDb(flags.field('address'), 256), /between 0 and 255/)
})

t.test('SQLite: declared types give the same limits; times compare as canonical text', async (t) => {
  const lite = new SqlBuilder(sqliteDialect, new ResourceStorage('sqlite', materials, { table: 'Artikel', columns: matMapping.columns }, [
    col('ArtID', 'integer', { identity: true, nullable: false }), col('ArtNr', 'varchar', { maxLength: 40, nullable: false }), col('LastChange', 'datetime', { nullable: false })
  ]))
  t.throws(() => lite.storage.toDb(lite.storage.field('materialNumber'), 'x'.repeat(41)), /at most 40 characters/)
  t.equal(lite.storage.toDb(lite.storage.field('materialNumber'), '🛢'.repeat(40)), '🛢'.repeat(40), 'SQLite counts characters: 40 emoji fit VARCHAR(40)')
  t.throws(() => lite.storage.toDb(lite.storage.field('materialNumber'), '🛢'.repeat(41)), /must be at most 40 characters long \(its database column's limit\), got 41/)
  const s = list(lite, { modifiedSince: '2026-11-23T07:00:00Z' })
  t.equal(where(s.text), 'strftime(\'%Y-%m-%dT%H:%M:%fZ\', "LastChange") >= @p1', "text written as '2026-11-23 07:06:04' is found")
  t.same(s.params[0].value, '2026-11-23T07:00:00.000Z')
  t.equal(lite.storage.fromDb(lite.storage.field('modifiedAt'), '2026-11-23 07:06:04'), '2026-11-23T07:06:04.000Z')
  const stock = new ResourceStorage('sqlite', materials, { table: 'Artikel', columns: matMapping.columns }, [col('MinB', 'INTEGER')])
  t.throws(() => stock.toDb(stock.field('minStock'), 1e20), /'minStock' must be between -9007199254740991 and 9007199254740991 \(the whole numbers its integer column and JSON hold exactly\), got 100000000000000000000/, 'not stored as the REAL 1.0e+20')
  t.equal(stock.toDb(stock.field('minStock'), Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER)
})

t.test('T-SQL type texts become the driver types', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['varchar(8000)', sql.VarChar(8000)], ['varchar(max)', sql.VarChar(sql.MAX)], ['nvarchar(4000)', sql.NVarChar(4000)],
    ['tinyint', sql.TinyInt()], ['smallint', sql.SmallInt()], ['int', sql.Int()], ['bigint', sql.BigInt()],
    ['decimal(18,3)', sql.Decimal(18, 3)], ['money', sql.Money()], ['smallmoney', sql.SmallMoney()], ['float', sql.Float()], ['real', sql.Real()],
    ['bit', sql.Bit()], ['datetime', sql.DateTime()], ['smalldatetime', sql.SmallDateTime()], ['datetime2(7)', sql.DateTime2(7)],
    ['datetimeoffset(3)', sql.DateTimeOffset(3)], ['date', sql.Date()]
  ]
  for (const [text, type] of cases) t.same(sqlTypeOf(text), type, text)
  t.equal(sqlTypeOf('geography'), undefined)
  t.same(mssqlType({ name: 'p', kind: 'string', value: 'x', type: 'xml' }), sql.NVarChar(4000), 'an unknown type text falls back to the kind')
  t.same(mssqlType({ name: 'p', kind: 'datetime', value: new Date(0), type: 'datetime' }), sql.DateTime())
})

t.test('a field mapped to null: selected as NULL, never written, not filterable', async (t) => {
  const mapping: TableMapping = { ...matMapping, columns: { ...matMapping.columns }, absent: ['barcode', 'weight'] }
  delete mapping.columns.barcode
  delete mapping.columns.weight
  const b = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, mapping, matColumns.filter((c) => c.name !== 'EAN' && c.name !== 'Gew')))
  const s = list(b, { name: 'x' })
  t.match(s.text, /\[ME\] AS \[unit\], NULL AS \[barcode\], \[MinB\] AS \[minStock\], \[MaxB\] AS \[maxStock\], NULL AS \[weight\], /)
  t.throws(() => list(b, { barcode: '[null]' }), { name: 'BadQueryError', message: "'barcode' is not stored in this installation: it cannot be filtered or sorted" })
  t.throws(() => list(b, { sort: 'weight' }), { name: 'BadQueryError', message: /'weight' is not stored/ })
  const st = b.storage
  t.equal(st.toDb(st.field('barcode'), null), null)
  t.throws(() => st.toDb(st.field('barcode'), '4006381333931'), { name: 'InvalidValueError', message: /'barcode' is not stored in this installation/ })
  t.equal(st.fromDb(st.field('barcode'), 'ignored'), null)
})

t.test('SQL Server: times kept as numbers or digits (format): the column\'s own type in every statement', async (t) => {
  const formatted = (angelegt: ColumnInfo, change: ColumnInfo, formats: Record<string, 'unix' | 'unix-ms' | 'yyyymmdd' | 'yyyymmddhhmmss'>, zone?: string) =>
    new ResourceStorage('mssql', materials, { ...matMapping, ...(zone === undefined ? {} : { timeZone: zone }), timeFormats: formats },
      matColumns.map((c) => c.name === 'Angelegt' ? angelegt : c.name === 'LastChange' ? change : c))
  const storage = formatted(col('Angelegt', 'int', { precision: 10, scale: 0 }), col('LastChange', 'bigint', { nullable: false, precision: 19, scale: 0 }), { createdAt: 'yyyymmdd', modifiedAt: 'unix' }, 'Europe/Berlin')
  t.same(storageProblems(storage), [])
  const b = new SqlBuilder(mssqlDialect, storage)
  const s = list(b, { modifiedSince: '2024-04-02T10:00:00.001Z', createdAt: '[lt]2024-01-01T00:00:00Z' })
  t.equal(where(s.text), '[LastChange] >= @p1 AND [Angelegt] < @p2', 'the columns themselves: an index seeks')
  t.same(types(s.params).slice(0, 2), [['p1', 1712052001, 'bigint'], ['p2', 20240102, 'int']], 'the next whole second; 1 January (from 23:00 UTC the day before in Berlin) is before midnight UTC')
  t.same(s.params.slice(0, 2).map((p) => p.kind), ['integer', 'integer'])
  // beyond the year 2038 an int column of Unix time still compares: the parameter is widened
  const small = new SqlBuilder(mssqlDialect, formatted(col('Angelegt', 'datetime2', { scale: 7 }), col('LastChange', 'int', { precision: 10, scale: 0 }), { modifiedAt: 'unix' }))
  t.same(types(list(small, { modifiedSince: '2040-01-01T00:00:00Z' }).params).slice(0, 1), [['p1', 2208988800, 'bigint']])
  // digits in a varchar column compare as text
  const text = new SqlBuilder(mssqlDialect, formatted(col('Angelegt', 'varchar', { maxLength: 14 }), matColumns.at(-1)!, { createdAt: 'yyyymmddhhmmss' }))
  t.same(types(list(text, { createdAt: '[gte]2024-04-02T10:30:00.500Z' }).params).slice(0, 1), [['p1', '20240402103001', 'varchar(8000)']])
  // past the year 9999 a bound is no longer 14 digits: one that sorts after every stored value stands for it
  t.same(types(list(text, { createdAt: '[gt]9999-12-31T23:59:59Z' }).params).slice(0, 1), [['p1', '99999999999999:', 'varchar(8000)']], 'later than the last second: nothing')
  // east of UTC the last hour of 9999 (UTC) is already the year 10000 on the wall
  const berlin = new SqlBuilder(mssqlDialect, formatted(col('Angelegt', 'varchar', { maxLength: 14 }), matColumns.at(-1)!, { createdAt: 'yyyymmddhhmmss' }, 'Europe/Berlin'))
  t.same(types(list(berlin, { createdAt: '[lt]9999-12-31T23:59:59Z' }).params).slice(0, 1), [['p1', '99999999999999:', 'varchar(8000)']], 'before it: every stored value')
  // writes: numbers of the column's type
  const ins = b.insert({ materialNumber: 'M-1', name: 'n', createdAt: storage.toDb(storage.field('createdAt'), new Date('2024-06-30T22:30:00Z')), modifiedAt: storage.toDb(storage.field('modifiedAt'), new Date('2024-06-30T22:30:00.999Z')) })
  t.same(types(ins.params).slice(-2), [['p3', 20240701, 'int'], ['p4', 1719786600, 'bigint']], 'the date in Berlin; whole seconds, rounded down')
  t.throws(() => storage.toDb(storage.field('createdAt'), new Date('3000-01-01T12:00:00Z')), /'createdAt' must be in the years 1900 to 2999/)
  // modifiedAt on every update: a second on for Unix time; today for a column of days, not a day on at each update
  const now = Date.parse('2024-06-30T10:00:00.300Z')
  t.same(storage.nextTime(storage.field('modifiedAt'), '2024-06-30T10:00:00.000Z', now), new Date('2024-06-30T10:00:01.000Z'))
  t.same(storage.nextTime(storage.field('modifiedAt'), '2024-06-30T09:00:00.000Z', now), new Date(now))
  t.same(storage.nextTime(storage.field('createdAt'), '2024-06-30T00:00:00.000Z', now), new Date(now), 'yyyymmdd: today again')
  const int = formatted(col('Angelegt', 'int', { precision: 10, scale: 0 }), col('LastChange', 'int', { precision: 10, scale: 0 }), { createdAt: 'yyyymmdd', modifiedAt: 'unix' })
  t.throws(() => int.toDb(int.field('modifiedAt'), new Date('2040-01-01T00:00:00Z')), /'modifiedAt' must be between -2147483648 and 2147483647/, 'past 2038 an int column of Unix time is full')

  const problems = (type: ColumnInfo, format: 'unix' | 'unix-ms' | 'yyyymmdd' | 'yyyymmddhhmmss') => storageProblems(formatted(matColumns.at(-2)!, { ...type, name: 'LastChange' }, { modifiedAt: format }))
  t.same(problems(col('x', 'int'), 'unix-ms'), ["materials.modifiedAt: column 'LastChange' (int) is too small for unix-ms (13 digits)"])
  t.same(problems(col('x', 'int'), 'yyyymmddhhmmss'), ["materials.modifiedAt: column 'LastChange' (int) is too small for yyyymmddhhmmss (14 digits)"])
  t.same(problems(col('x', 'smallint'), 'yyyymmdd'), ["materials.modifiedAt: column 'LastChange' (smallint) is too small for yyyymmdd (8 digits)"])
  t.same(problems(col('x', 'decimal', { precision: 14, scale: 0 }), 'yyyymmddhhmmss'), [])
  t.same(problems(col('x', 'decimal', { precision: 12, scale: 0 }), 'yyyymmddhhmmss'), ["materials.modifiedAt: column 'LastChange' (decimal(12,0)) is too small for yyyymmddhhmmss (14 digits)"])
  t.same(problems(col('x', 'char', { maxLength: 8 }), 'yyyymmdd'), [])
  t.same(problems(col('x', 'datetime'), 'unix'), ["materials.modifiedAt: column 'LastChange' (datetime) holds times itself; remove \"format\": \"unix\""])
  t.same(problems(col('x', 'bit'), 'unix'), ["materials.modifiedAt: column 'LastChange' (bit) cannot hold a time in the format unix"])
  t.same(problems(col('x', 'real'), 'unix'), ["materials.modifiedAt: column 'LastChange' (real) is a real (4 bytes), too coarse for unix: neighbouring values there are minutes apart; use float, bigint or decimal"])
  t.same(problems(col('x', 'float'), 'unix'), [])
})

t.test('stations.type in a number column without a value map stops the start: no station could be written', async (t) => {
  const numbered = stColumns.map((c) => c.name === 'WpType' ? col('WpType', 'tinyint', { nullable: false }) : c)
  const { type: _, ...values } = stMapping.values!
  t.same(storageProblems(new ResourceStorage('mssql', stations, { ...stMapping, values }, numbered)), [
    'stations.type: column \'WpType\' (tinyint) holds numbers, and type is one of vlm, carousel, ptl, manual: give it a value map from its codes to those values, ' +
    'such as {"column": "WpType", "values": {"vlm": …, "carousel": …, "ptl": …, "manual": …}} (db introspect lists the codes the column holds), or set mapping.stations.readOnly to true'
  ])
  t.same(storageProblems(new ResourceStorage('mssql', stations, { ...stMapping, values: { ...values, type: { vlm: 1, carousel: 2, ptl: 3, manual: 4 } } }, numbered)), [], 'with a map it starts')
  t.same(storageProblems(new ResourceStorage('mssql', stations, { ...stMapping, values, readOnly: true }, numbered)), [], 'read-only: the codes are shown as stored')
  t.same(storageProblems(new ResourceStorage('mssql', stations, { ...stMapping, values }, stColumns)), [], 'codes in a text column are shown and written as they are')
  const withDefault = stColumns.map((c) => c.name === 'WpType' ? col('WpType', 'tinyint', { nullable: false, hasDefault: true }) : c)
  t.same(storageProblems(new ResourceStorage('mssql', stations, { ...stMapping, values }, withDefault)), [], 'a column with a default of its own: creates that leave the type out work, as before')
  // a user's type, though: every create gives it, and no stored number is admin, user or application
  const userColumns = referenceColumns(mssqlDialect, users, referenceMappings.users).map((c) => c.name === 'type' ? col('type', 'tinyint', { nullable: false, hasDefault: true }) : c)
  t.same(storageProblems(new ResourceStorage('mssql', users, referenceMappings.users, userColumns)), [
    'users.type: column \'type\' (tinyint) holds numbers, and type is one of admin, user, application: give it a value map from its codes to those values, ' +
    'such as {"column": "type", "values": {"admin": …, "user": …, "application": …}} (db introspect lists the codes the column holds), or map another table'
  ], 'before: none, and then every user create was a 400 (\'type\' must be a number written as text) and every user, admins too, had no rights')
  t.same(storageProblems(new ResourceStorage('mssql', users, { ...referenceMappings.users, values: { type: { admin: 1, user: 2, application: 3 } } }, userColumns)), [], 'with a map it starts')
})

t.test('a value map whose written code the column cannot take stops the start: SQLite stored it past the column, SQL Server refuses every such write', async (t) => {
  const long = { ...stMapping, values: { ...stMapping.values, type: { vlm: 'VL', carousel: 'K', ptl: 'P', manual: ['M', 'HAND'] } } }
  for (const dialect of ['sqlite', 'mssql'] as const) {
    t.same(storageProblems(new ResourceStorage(dialect, stations, long, stColumns)), ["stations.type: the value map writes \"VL\" for \"vlm\", which column 'WpType' (char(1)) cannot take ('type' must be at most 1 characters long (its database column's limit), got 2)"], `${dialect}: the first code is written; 'HAND' is only read`)
    t.same(storageProblems(new ResourceStorage(dialect, stations, { ...long, readOnly: true }, stColumns)), [], `${dialect}: read-only writes no code`)
  }
  const numbered = stColumns.map((c) => c.name === 'Aktiv' ? col('Aktiv', 'int', { nullable: false, hasDefault: true }) : c)
  t.same(storageProblems(new ResourceStorage('mssql', stations, stMapping, numbered)), ['stations.enabled: column \'Aktiv\' (int) holds numbers, but the value map writes "N" for false; give number codes', 'stations.enabled: column \'Aktiv\' (int) holds numbers, but the value map writes "J" for true; give number codes'])
  t.same(storageProblems(new ResourceStorage('sqlite', stations, stMapping, numbered)), [], 'SQLite keeps text in a number column')
  const strict = stColumns.map((c) => c.name === 'Aktiv' ? col('Aktiv', 'integer', { nullable: false, hasDefault: true, strict: true }) : c)
  t.same(storageProblems(new ResourceStorage('sqlite', stations, stMapping, strict)), ['stations.enabled: column \'Aktiv\' (integer) holds numbers, but the value map writes "N" for false; give number codes', 'stations.enabled: column \'Aktiv\' (integer) holds numbers, but the value map writes "J" for true; give number codes'],
    "but not a STRICT table's (before: passed, and every write of the flag was a 400)")
  // a STRICT table's ANY column (read as one without a declared type) keeps text as given, as elsewhere
  const strictAny = stColumns.map((c) => c.name === 'Aktiv' ? col('Aktiv', '', { nullable: false, hasDefault: true, strict: true }) : c)
  t.same(storageProblems(new ResourceStorage('sqlite', stations, stMapping, strictAny)), [], "a STRICT table's ANY column takes the text codes (before: \"holds numbers\", a start-up error)")
  // a STRICT table's BLOB column takes bytes alone: text, numbers and codes are refused by SQLite on every write
  const strictBlob = stColumns.map((c) => c.name === 'Aktiv' || c.name === 'Txt' ? col(c.name, 'BLOB', { nullable: true, strict: true }) : c)
  t.same(storageProblems(new ResourceStorage('sqlite', stations, stMapping, strictBlob)).filter((p) => /BLOB column/.test(p)).map((p) => p.split(':')[0]), ['stations.description', 'stations.enabled'],
    'before: passed, and every write of the field was a 400 "outside what the database column can hold"')
  t.match(storageProblems(new ResourceStorage('sqlite', stations, stMapping, strictBlob)), [/is a BLOB column of a STRICT table, which takes nothing but bytes/])
  const looseBlob = stColumns.map((c) => c.name === 'Txt' ? col('Txt', 'BLOB', { nullable: true }) : c)
  t.same(storageProblems(new ResourceStorage('sqlite', stations, stMapping, looseBlob)), [], 'a BLOB column of a table that is not STRICT stores any value as given')
  // number codes: each as any number written to the column is checked (its type's range, whole numbers, the scale)
  const codes = { ...stMapping, values: { ...stMapping.values, type: { vlm: 1, carousel: 2, ptl: 300, manual: [4, 1000] }, enabled: { true: 1.5, false: 0 } } }
  const tiny = stColumns.map((c) => c.name === 'WpType' ? col('WpType', 'tinyint', { nullable: false, precision: 3, scale: 0 }) : c.name === 'Aktiv' ? col('Aktiv', 'int', { nullable: false, hasDefault: true, precision: 10, scale: 0 }) : c)
  t.same(storageProblems(new ResourceStorage('mssql', stations, codes, tiny)), [
    "stations.type: the value map writes 300 for \"ptl\", which column 'WpType' (tinyint) cannot take ('type' must be between 0 and 255 (its database column's range), got 300)",
    "stations.enabled: the value map writes 1.5 for true, which column 'Aktiv' (int) cannot take ('enabled' must be a whole number (its database column holds no fractions), got 1.5)"
  ], 'before: none; every create of a ptl station failed (error 220), and true was stored as 1 by the server\'s conversion')
  const decimal = tiny.map((c) => c.name === 'WpType' ? col('WpType', 'decimal', { nullable: false, precision: 3, scale: 1 }) : c)
  t.same(storageProblems(new ResourceStorage('mssql', stations, { ...codes, values: { ...codes.values, type: { vlm: 1.5, carousel: 2.25, ptl: 3, manual: 4 }, enabled: { true: 1, false: 0 } } }, decimal)), [
    "stations.type: the value map writes 2.25 for \"carousel\", which column 'WpType' (decimal(3,1)) cannot take ('type' must have at most 1 decimal place (its database column's scale), got 2.25)"
  ], 'a code past the scale would be rounded to 2.3')
  t.same(storageProblems(new ResourceStorage('mssql', stations, { ...codes, readOnly: true }, tiny)), [], 'read-only writes no code')
  t.same(storageProblems(new ResourceStorage('mssql', stations, { ...codes, values: { ...codes.values, type: { vlm: 1, carousel: 2, ptl: 255, manual: [4, 1000] }, enabled: { true: -1, false: 0 } } }, tiny)), [], 'a code only read (1000) may be anything; -1 fits an int')
  t.same(storageProblems(new ResourceStorage('sqlite', stations, codes, tiny)), [], 'SQLite keeps any number in any column, as before')
  // SQL Server: the column's length counts bytes in a UTF-8 collation, and a code page holds only its own letters
  const flags = { ...stMapping, values: { ...stMapping.values, type: { vlm: 'Ü', carousel: 'K', ptl: 'P', manual: 'Л' } } }
  const utf8 = stColumns.map((c) => c.name === 'WpType' ? col('WpType', 'char', { maxLength: 1, nullable: false, utf8: true, collation: 'Latin1_General_100_CI_AS_SC_UTF8' }) : c)
  t.same(storageProblems(new ResourceStorage('mssql', stations, flags, utf8)), [
    "stations.type: the value map writes \"Л\" for \"manual\", which column 'WpType' (char(1)) cannot take ('type' must be at most 1 bytes long (its database column's limit), got 2)",
    "stations.type: the value map writes \"Ü\" for \"vlm\", which column 'WpType' (char(1)) cannot take ('type' must be at most 1 bytes long (its database column's limit), got 2)"
  ], 'UTF-8: two bytes each, where the char(1) holds one (before: passed, and every such write was refused as too long)')
  const latin1 = stColumns.map((c) => c.name === 'WpType' ? col('WpType', 'char', { maxLength: 1, nullable: false, codePage: 1252, collation: 'Latin1_General_CI_AS' }) : c)
  t.same(storageProblems(new ResourceStorage('mssql', stations, flags, latin1)), [
    "stations.type: the value map writes \"Л\" for \"manual\", which column 'WpType' (char(1)) cannot take ('type' holds 'Л' (U+041B), which its database column (char, code page 1252) cannot store)"
  ], 'code page 1252: Ü is one of its letters, Л is not (before: passed, and SQL Server would store \'?\' for it)')
})

t.test("a real column's range is SQL Server's 4-byte real; SQLite's REAL is a double", async (t) => {
  const withReal = (dialect: 'mssql' | 'sqlite'): ResourceStorage => new ResourceStorage(dialect, materials, matMapping, matColumns.map((c) => c.name === 'Gewicht' ? col('Gewicht', 'real') : c))
  const ms = withReal('mssql')
  t.throws(() => ms.toDb(ms.field('weight'), 3.5e38), /'weight' is too large for its database column \(real\), got 3\.5e\+38/)
  t.equal(ms.toDb(ms.field('weight'), 3.4e38), 3.4e38)
  const lite = withReal('sqlite')
  t.equal(lite.toDb(lite.field('weight'), 1e308), 1e308, 'before: refused as too large for a real')
})

t.test('numbers written to a SQLite text column are plain decimals, never in exponent form', async (t) => {
  for (const [n, text] of [[1e-7, '0.0000001'], [-1.5e-7, '-0.00000015'], [1e21, '1000000000000000000000'], [1.25e22, '12500000000000000000000'], [12.5, '12.5'], [12, '12'], [0, '0'], [-3, '-3'], [1.2345e-10, '0.00000000012345']] as const) {
    t.equal(plainNumber(n), text, String(n))
    t.equal(Number(plainNumber(n)), n, `${text} reads back as ${n}`)
  }
  const lite = new ResourceStorage('sqlite', materials, matMapping, matColumns.map((c) => c.name === 'MaxB' ? col('MaxB', 'text') : c))
  t.equal(lite.toDb(lite.field('maxStock'), 1e-7), '0.0000001', "before: '1e-7'")
})

t.test('a stored time outside the years 0000 to 9999 reads as null, logged once: RFC 3339 has no other way to write it', async (t) => {
  const warned: Array<{ obj: Record<string, unknown>, msg: string }> = []
  const warn = (obj: object, msg: string): void => { warned.push({ obj: obj as Record<string, unknown>, msg }) }
  const storage = (change: ColumnInfo, formats: TableMapping['timeFormats'], zone?: string, dialect: 'mssql' | 'sqlite' = 'mssql') =>
    new ResourceStorage(dialect, materials, { ...matMapping, ...(zone === undefined ? {} : { timeZone: zone }), timeFormats: formats },
      matColumns.map((c) => c.name === 'LastChange' ? change : c), { warn })
  const unix = storage(col('LastChange', 'bigint', { nullable: false, precision: 19, scale: 0 }), { modifiedAt: 'unix' })
  const read = (st: ResourceStorage, raw: unknown): unknown => st.fromDb(st.field('modifiedAt'), raw)
  t.equal(read(unix, 253402300799), '9999-12-31T23:59:59.000Z', 'the last second of 9999')
  t.equal(read(unix, 253402300800), null, 'not +010000-01-01T00:00:00.000Z')
  t.equal(read(unix, 253402300800), null)
  t.equal(read(unix, -62167219200), '0000-01-01T00:00:00.000Z', 'the year 0 has four digits')
  t.equal(read(unix, -62167219201), null, 'not -000001-12-31T23:59:59.000Z')
  const beyond = warned.filter((w) => /outside the years 0000 to 9999/.test(w.msg))
  t.same(beyond.map((w) => w.obj), [{ resource: 'materials', field: 'modifiedAt', value: '253402300800' }, { resource: 'materials', field: 'modifiedAt', value: '-62167219201' }], 'once per value, as every odd value')
  t.match(beyond[0].msg, /returned as null/)
  t.ok(unix.field('modifiedAt').showsNull, 'so the response schema of a NOT NULL column with a format allows null')

  // 9999-12-31 23:00 (a legacy "no date") on a clock west of UTC is an instant of the year 10000
  const local = (zone: string) => storage(col('LastChange', 'datetime', { nullable: false, hasDefault: true }), {}, zone)
  const newYork = local('America/New_York')
  t.equal(read(newYork, new Date(Date.UTC(9999, 11, 31, 18, 0))), '9999-12-31T23:00:00.000Z')
  t.equal(read(newYork, new Date(Date.UTC(9999, 11, 31, 23, 0))), null)
  t.ok(newYork.field('modifiedAt').showsNull, 'NOT NULL, but may read as null')
  t.notOk(local('Europe/Berlin').field('modifiedAt').showsNull, 'east of UTC the last day stays in 9999')
  t.notOk(local('UTC').field('modifiedAt').showsNull)
  t.notOk(new ResourceStorage('mssql', materials, matMapping, matColumns).field('modifiedAt').showsNull, 'nor a UTC datetime column')

  // SQLite: milliseconds past 9999 (|n| >= 1e11)
  const lite = storage(col('LastChange', 'integer'), {}, undefined, 'sqlite')
  t.equal(read(lite, 253402300800000), null)
  t.equal(read(lite, 253402300799999), '9999-12-31T23:59:59.999Z')
})

t.test('a station table keyed by GUIDs (uniqueidentifier DEFAULT NEWID()): text ids, only GUIDs compared with the key, never error 8169', async (t) => {
  const guidMapping: TableMapping = {
    table: 'Platz',
    columns: { id: 'PlatzGuid', name: 'Name', description: 'Bez', type: 'Art', warehouse: 'Lager', controllerId: 'Ctl', address: 'Adr', enabled: 'Aktiv', createdAt: 'Angelegt', modifiedAt: 'Geaendert' }
  }
  const guidColumns = (key: Partial<ColumnInfo>): ColumnInfo[] => [
    col('PlatzGuid', 'uniqueidentifier', { nullable: false, ...key }),
    col('Name', 'nvarchar', { maxLength: 40, nullable: false }),
    col('Bez', 'nvarchar', { maxLength: 200 }),
    col('Art', 'varchar', { maxLength: 16, nullable: false, hasDefault: true }),
    col('Lager', 'varchar', { maxLength: 64 }),
    col('Ctl', 'varchar', { maxLength: 64 }),
    col('Adr', 'int'),
    col('Aktiv', 'bit', { nullable: false, hasDefault: true }),
    col('Angelegt', 'datetime2', { scale: 3 }),
    col('Geaendert', 'datetime2', { scale: 3 })
  ]
  const storage = new ResourceStorage('mssql', stations, guidMapping, guidColumns({ hasDefault: true }))
  t.equal(storage.idType, 'text', 'the ids are the GUIDs as text')
  t.same(storageProblems(storage), [], 'a key the database fills (NEWID()) takes creates')
  const b = new SqlBuilder(mssqlDialect, storage)
  const GUID = '6F9619FF-8B86-D011-B42D-00C04FC964FF'

  // a create: the GUID the default gave, captured and read back by it
  const created = b.insert({ name: 'PTL-1' })
  t.equal(created.text.split('; ')[0], 'DECLARE @inserted TABLE ([id] varchar(8000))')
  t.equal(created.text.split('; ')[1], 'INSERT INTO [dbo].[Platz] ([Name]) OUTPUT INSERTED.[PlatzGuid] INTO @inserted VALUES (@p1)')
  t.match(created.text.split('; ')[2], / WHERE \[PlatzGuid\] = \(SELECT TOP \(1\) \[id\] FROM @inserted\)$/)
  // read by id: a varchar parameter, which the server converts to the key's type (the index is sought)
  const read = b.selectById(GUID.toLowerCase())
  t.match(read.text, / WHERE \[PlatzGuid\] = @id$/)
  t.same(types(read.params), [['id', GUID.toLowerCase(), 'varchar(8000)']])
  // filters: GUIDs as they are; [like] compares the text; anything else compared with the key is a 400 before any SQL runs
  const byList = list(b, { id: `[or]${GUID};{${GUID}}` }, storage.def)
  t.equal(where(byList.text), '[PlatzGuid] IN (@p1, @p2)')
  t.equal(where(list(b, { id: '[like]6F96' }, storage.def).text), '[PlatzGuid] LIKE @p1 ESCAPE \'\\\'')
  t.throws(() => list(b, { id: 'PTL-1' }, storage.def), { name: 'BadQueryError', message: /^Invalid value for 'id': must be a GUID in this installation \(32 hexadecimal digits as 8-4-4-4-12, such as 6F9619FF-8B86-D011-B42D-00C04FC964FF\), got "PTL-1"$/ })
  t.throws(() => list(b, { id: `[gt]${GUID.slice(1)}` }, storage.def), { name: 'BadQueryError' })
  t.doesNotThrow(() => list(b, { id: '[null]' }, storage.def))

  // a key without a default cannot number creates; newIds cannot count GUIDs
  t.same(storageProblems(new ResourceStorage('mssql', stations, guidMapping, guidColumns({}))), ["stations.id: column 'PlatzGuid' (uniqueidentifier) is neither an identity column nor has a default, so the gateway cannot create rows; give the column a default (ALTER TABLE … ADD DEFAULT NEWID() FOR PlatzGuid), or set mapping.stations.readOnly to true"])
  // SQLite (a database moved from SQL Server): it has no NEWID() and adds no default to a column after CREATE TABLE
  const lite = storageProblems(new ResourceStorage('sqlite', stations, guidMapping, guidColumns({})))
  t.equal(lite.length, 1)
  t.notMatch(lite[0], /NEWID|ALTER TABLE/, "before: SQL Server's statement, which SQLite cannot run")
  t.match(lite[0], /^stations\.id: column 'PlatzGuid' \(uniqueidentifier\) is neither an identity column nor has a default, so the gateway cannot create rows; give the column a default that makes a GUID, which SQLite takes only in its CREATE TABLE \(DEFAULT \(lower\(hex\(randomblob\(4\)\)/)
  t.same(storageProblems(new ResourceStorage('mssql', stations, { ...guidMapping, newIds: 'max+1' }, guidColumns({}))), ["stations.newIds: column 'PlatzGuid' (uniqueidentifier) holds text, which \"max+1\" cannot count on from; remove newIds"])
})

t.test('a GUID column takes only GUIDs as writes, and a repository reads no row for a path id that is none (404, no query)', async (t) => {
  const guidMapping: TableMapping = { ...matMapping, columns: { ...matMapping.columns, id: 'ArtGuid' } }
  const columns = [col('ArtGuid', 'uniqueidentifier', { nullable: false, hasDefault: true }), ...matColumns.slice(1)]
  const storage = new ResourceStorage('mssql', materials, guidMapping, columns)
  const key = storage.field('id')
  t.equal(storage.toDb(key, '{6f9619ff-8b86-d011-b42d-00c04fc964ff}'), '6F9619FF-8B86-D011-B42D-00C04FC964FF', 'written as SQL Server reads it back')
  t.throws(() => storage.toDb(key, '6f9619ff8b86d011b42d00c04fc964ff'), { name: 'InvalidValueError', message: /^'id' must be a GUID in this installation/ })
  const queries: string[] = []
  const db = { dialect: 'mssql', query: async (stmt: { text: string }) => { queries.push(stmt.text); return [] } } as unknown as Database
  const repo = new Repository(db, materials, guidMapping, { columns })
  t.equal(await repo.get('M-100'), undefined)
  t.same(queries, [], 'no statement for an id no GUID column holds: SQL Server would refuse its conversion (error 8169)')
  t.equal(await repo.get('6F9619FF-8B86-D011-B42D-00C04FC964FF'), undefined)
  t.equal(queries.length, 1, 'a GUID is looked up')
  // a cursor comes back from the client: one that holds no GUID for the key is the cursor's 400, before SQL Server's error 8169
  const sort = [{ field: 'id', desc: false }]
  await t.rejects(repo.list({ limit: 10, sort, filters: [], count: false, cursor: encodeCursor(sort, ['PTL-1']) }), { name: 'BadQueryError', message: "Query parameter 'cursor' is not a valid cursor" })
  t.equal(queries.length, 1, 'no statement for it')
  await repo.list({ limit: 10, sort, filters: [], count: false, cursor: encodeCursor(sort, ['6F9619FF-8B86-D011-B42D-00C04FC964FF']) })
  t.equal(queries.length, 2, 'a GUID cursor pages on')
})

t.test("a cursor whose time lies outside its column's range, or whose rank is beyond an int, is no cursor (400): the driver would refuse its parameter (a 500)", async (t) => {
  const queries: Array<{ text: string, params: Param[] }> = []
  const db = { dialect: 'mssql', query: async (stmt: { text: string, params: Param[] }) => { queries.push(stmt); return [] } } as unknown as Database
  // LastChange is a datetime (1753 to 9999); Angelegt a datetime2(7); Gesperrt a bit, mapped to codes below
  const repo = new Repository(db, materials, matMapping, { columns: matColumns })
  const page = (sortText: string, values: unknown[]): Promise<unknown> => {
    const sort = parseListQuery({ sort: sortText }, materials).sort
    return repo.list({ limit: 10, sort, filters: [], count: false, cursor: encodeCursor(sort, values) })
  }
  const invalid = { name: 'BadQueryError', message: "Query parameter 'cursor' is not a valid cursor" }
  await t.rejects(page('modifiedAt', [new Date('1000-01-01T00:00:00Z'), 1]), invalid, 'the year 1000 on a datetime')
  await t.rejects(page('modifiedAt', [new Date('9999-12-31T23:59:59.999Z'), 1]), invalid, "past a datetime's last tick (.997)")
  t.equal(queries.length, 0, 'no statement for them')
  await page('modifiedAt', [new Date('1753-01-01T00:00:00Z'), 1])
  await page('modifiedAt', [new Date('9999-12-31T23:59:59.997Z'), 1])
  await page('createdAt', [new Date('0001-01-01T00:00:00Z'), 1])
  t.equal(queries.length, 3, "the column's first and last values page on")
  for (const q of queries) for (const p of q.params) t.doesNotThrow(() => { driverWrites(p) }, `${p.name} passes the driver`)
  const small = new Repository(db, materials, matMapping, { columns: matColumns.map((c) => c.name === 'LastChange' ? col('LastChange', 'smalldatetime', { nullable: false }) : c) })
  const sort = parseListQuery({ sort: 'modifiedAt' }, materials).sort
  await t.rejects(small.list({ limit: 10, sort, filters: [], count: false, cursor: encodeCursor(sort, [new Date('2100-01-01T00:00:00Z'), 1]) }), invalid, 'past 2079-06-06 on a smalldatetime')
  // a value map's rank and a flag's 0 or 1 go as int parameters
  const coded = new Repository(db, materials, { ...matMapping, values: { blocked: { true: 'J', false: 'N' } } }, { columns: matColumns.map((c) => c.name === 'Gesperrt' ? col('Gesperrt', 'char', { maxLength: 1, nullable: false }) : c) })
  const byBlocked = parseListQuery({ sort: 'blocked' }, materials).sort
  await t.rejects(coded.list({ limit: 10, sort: byBlocked, filters: [], count: false, cursor: encodeCursor(byBlocked, [3000000000, 1]) }), invalid, 'a rank beyond an int')
  const before = queries.length
  await coded.list({ limit: 10, sort: byBlocked, filters: [], count: false, cursor: encodeCursor(byBlocked, [2, 1]) })
  t.equal(queries.length, before + 1, 'a rank pages on')
  // digits beyond 2^53 (a bigint's exact value, kept as text) for an int column (MaxB)
  const byMax = parseListQuery({ sort: 'maxStock' }, materials).sort
  await t.rejects(repo.list({ limit: 10, sort: byMax, filters: [], count: false, cursor: encodeCursor(byMax, [9007199254740993n, 1]) }), invalid, 'an int holds no 9007199254740993')
  t.throws(() => { driverWrites({ name: 'p1', kind: 'number', value: '9007199254740993', type: 'int' }) }, TypeError, 'what the driver did with it')
  const byId = parseListQuery({}, materials).sort
  await repo.list({ limit: 10, sort: byId, filters: [], count: false, cursor: encodeCursor(byId, [9007199254740993n]) })
  const last = queries[queries.length - 1]
  t.same(types(last.params)[0], ['p1', '9007199254740993', 'bigint'], 'the bigint key (ArtID) takes it exactly')
  t.doesNotThrow(() => { driverWrites(last.params[0]) })
})

t.test('SQL Server reads a GUID back upper-case without braces: an update sending it in another spelling writes nothing, and modifiedAt stays', async (t) => {
  // a material's barcode kept in a uniqueidentifier column; .NET's Guid.ToString() writes lower case
  const columns = matColumns.map((c) => c.name === 'EAN' ? col('EAN', 'uniqueidentifier') : c)
  const GUID = '6F9619FF-8B86-D011-B42D-00C04FC964FF'
  const row = { id: '5', materialNumber: 'M-1', name: 'Ventil', description: null, unit: 'ST ', barcode: GUID, minStock: null, maxStock: null, weight: null, blocked: false, blockReason: null, stockQuantity: 0, createdAt: null, modifiedAt: new Date('2024-01-01T00:00:00Z') }
  const written: Array<{ text: string, params: Param[] }> = []
  const tx = {
    query: async () => [row],
    execute: async (stmt: { text: string, params: Param[] }) => { written.push(stmt); return 1 }
  }
  const db = { dialect: 'mssql', query: tx.query, execute: tx.execute, transaction: async <T>(fn: (ex: typeof tx) => Promise<T>): Promise<T> => await fn(tx) } as unknown as Database
  const repo = new Repository(db, materials, matMapping, { columns })
  // before, each was written again, with a new modifiedAt that the next incremental sync took for a change
  for (const spelled of [GUID.toLowerCase(), `{${GUID}}`, `{${GUID.toLowerCase()}}`]) {
    await repo.update(5, { barcode: spelled })
    t.equal(written.length, 0, `${spelled}: the row's own GUID, no UPDATE (modifiedAt stays)`)
  }
  await repo.update(5, { barcode: '{7f9619ff-8b86-d011-b42d-00c04fc964ff}' })
  t.equal(written.length, 1, 'another GUID is a change')
  t.same(written[0].params.find((p) => p.name === 'p1')?.value, '7F9619FF-8B86-D011-B42D-00C04FC964FF', 'written as SQL Server reads it back')
})

t.test("a provider's name for a display-name column that counts bytes or UTF-16 code units: cut to what the column holds, not to as many characters", async (t) => {
  const named = async (column: ColumnInfo, name: string): Promise<unknown> => {
    const columns = referenceColumns(mssqlDialect, users, referenceMappings.users).map((c) => c.name === 'display_name' ? column : c)
    const repo = new Repository({ dialect: 'mssql' } as unknown as Database, users, referenceMappings.users, { columns })
    let written: Row | undefined
    Object.assign(repo, { findOne: async () => undefined, findExact: async () => undefined, create: async (row: Row) => (written = row) })
    const service = new UserService({ repo, passwords: {} as unknown as Passwords, licenceLogins: 5, onChange: () => {} })
    await service.ssoUser({ marker: '!sso:warehouse:erp', type: 'admin', username: { name: 'erp' }, displayName: name })
    return written?.displayName
  }
  // varchar(12) with a UTF-8 collation: 12 bytes, and ü and ß take two
  t.equal(await named(col('display_name', 'varchar', { maxLength: 12, utf8: true, collation: 'Latin1_General_100_CI_AS_SC_UTF8' }), 'Jürgen Weiß-Großmann'), 'Jürgen Wei', 'UTF-8: the longest start within 12 bytes (before: none, as its first 12 characters are 14 bytes)')
  // nvarchar(8): 8 UTF-16 code units, an emoji takes two
  t.equal(await named(col('display_name', 'nvarchar', { maxLength: 8 }), '📦📦 Lager Nord'), '📦📦 Lag', 'nvarchar: an emoji counts two')
  t.equal(await named(col('display_name', 'nvarchar', { maxLength: 8 }), 'Lager Nord'), 'Lager No', 'characters as before')
  t.equal(await named(col('display_name', 'varchar', { maxLength: 20, codePage: 1252, collation: 'Latin1_General_CI_AS' }), 'Łukasz'), undefined, 'a letter its code page lacks: left out, so the column keeps its default (NULL, or a NOT NULL column\'s \'\')')
})

t.test("a new user's first token version fits its column: an int's lower half, or a decimal(p,0)'s (numeric(5,0) holds 99999)", async (t) => {
  const userColumns = (version: ColumnInfo): ColumnInfo[] => referenceColumns(mssqlDialect, users, referenceMappings.users).map((c) => c.name === 'token_version' ? version : c)
  const first = (version: ColumnInfo): number[] => {
    const repo = new Repository({ dialect: 'mssql' } as unknown as Database, users, referenceMappings.users, { columns: userColumns(version) })
    return Array.from({ length: 200 }, () => firstTokenVersion(repo))
  }
  for (const [type, most] of [[col('token_version', 'int', { nullable: false, hasDefault: true }), 1073741823], [col('token_version', 'tinyint', { nullable: false, hasDefault: true }), 127], [col('token_version', 'numeric', { nullable: false, hasDefault: true, precision: 5, scale: 0 }), 49999]] as const) {
    const values = first(type)
    t.ok(values.every((v) => Number.isInteger(v) && v >= 1 && v < most), `${type.type}${type.precision === undefined ? '' : `(${type.precision},0)`}: 1 to ${most - 1} (before: up to an int's half for numeric(5,0), which it cannot hold)`)
    t.ok(new Set(values).size > 20, 'random')
  }
})

t.test("a revocation past the last token version a legacy tinyint column holds comes round to 0: not a 400 at every disable and password change of that user for good", async (t) => {
  const run = async (type: ColumnInfo, stored: number | null, change: (service: UserService) => Promise<unknown>, passwordHash = '$argon2id$v=19$old'): Promise<Param | undefined> => {
    const columns = referenceColumns(mssqlDialect, users, referenceMappings.users).map((c) => c.name === 'token_version' ? type : c)
    const row = { id: 7, username: 'jsmith', passwordHash, type: 'user', displayName: null, enabled: true, tokenVersion: stored, lastLoginAt: null, createdAt: new Date('2024-01-01T00:00:00Z'), modifiedAt: new Date('2024-01-01T00:00:00Z') }
    const updates: Array<{ text: string, params: Param[] }> = []
    const tx = {
      query: async (stmt: { text: string }) => stmt.text.startsWith('SELECT COUNT') ? [{ total: 0 }] : [row],
      execute: async (stmt: { text: string, params: Param[] }) => { updates.push(stmt); return 1 }
    }
    const db = { dialect: 'mssql', query: tx.query, execute: tx.execute, transaction: async <T>(fn: (ex: typeof tx) => Promise<T>): Promise<T> => await fn(tx) } as unknown as Database
    const repo = new Repository(db, users, referenceMappings.users, { columns })
    await change(new UserService({ repo, passwords: { hash: async () => '$argon2id$v=19$new' } as unknown as Passwords, licenceLogins: 5, onChange: () => {} }))
    t.equal(updates.length, 1)
    t.match(updates[0].text, /^UPDATE \[dbo\]\.\[gateway_users\] SET .*\[token_version\] = @p\d+/)
    const p = updates[0].params.find((param) => updates[0].text.includes(`[token_version] = @${param.name}`))
    if (p !== undefined) driverWrites(p)
    return p
  }
  const admin = { id: 1, type: 'admin' as const }
  const tinyint = col('token_version', 'tinyint', { nullable: false, hasDefault: true, precision: 3, scale: 0 })
  const disable = async (s: UserService): Promise<unknown> => await s.update(7, { enabled: false }, admin)
  t.match(await run(tinyint, 255, disable), { value: 0, type: 'tinyint' }, 'disabled at 255: 0 (before: a 400 naming tokenVersion, 256 being past the column)')
  t.match(await run(tinyint, 254, disable), { value: 255, type: 'tinyint' }, 'one up while the column holds it')
  t.match(await run(tinyint, 255, async (s) => await s.update(7, { password: 'a-new-password' }, admin)), { value: 0, type: 'tinyint' }, 'a password change too')
  // a single sign-on user's type changed by the provider's claim revokes the same way
  t.match(await run(tinyint, 255, async (s) => await s.ssoUser({ marker: '!sso:warehouse:jsmith', type: 'application', username: { name: 'jsmith' }, displayName: null }), '!sso:warehouse:jsmith'), { value: 0, type: 'tinyint' })
  t.match(await run(col('token_version', 'decimal', { nullable: true, precision: 2, scale: 0 }), 99, disable), { value: 0, type: 'decimal(2,0)' }, 'a decimal(2,0) ends at 99')
  t.match(await run(col('token_version', 'smallint', { nullable: true }), null, disable), { value: 1, type: 'smallint' }, 'NULL counts as 0')
  t.match(await run(col('token_version', 'int', { nullable: false, hasDefault: true }), 255, disable), { value: 256, type: 'int' }, 'an int goes on')
})

t.test('a password column too narrow for the argon2id hashes the gateway writes (the picking system\'s own, sized for MD5 hex) is a problem, not a 400 at every password', async (t) => {
  const columns = (type: string, maxLength: number): ColumnInfo[] => referenceColumns('mssql', users, referenceMappings.users).map((c) => c.name === 'password_hash' ? { ...c, type, maxLength } : c)
  const problems = (type: string, maxLength: number, passwordHashLength?: number): string[] =>
    storageProblems(new ResourceStorage('mssql', users, referenceMappings.users, columns(type, maxLength)), passwordHashLength === undefined ? {} : { passwordHashLength })
  t.match(problems('char', 32), [/^users\.passwordHash: column 'password_hash' \(char\(32\)\) holds at most 32 characters, but the argon2id hashes the gateway stores \(auth\.argon2\) take 97: /])
  t.same(problems('varchar', 97), [], 'the default parameters\' hash fits 97')
  t.same(problems('nvarchar', -1), [], 'nvarchar(max)')
  t.match(problems('varchar', 97, argon2HashLength({ memoryCost: 1048576, timeCost: 10, parallelism: 4 })), [/take 100:/], 'larger auth.argon2 parameters take more digits')
  const hash = await (await createPasswords({ memoryCost: 1048, timeCost: 1, parallelism: 1 })).hash('x-password')
  t.equal(argon2HashLength({ memoryCost: 1048, timeCost: 1, parallelism: 1 }), hash.length, 'the length is the one argon2 writes')
})
