// Pins the generated SQL text exactly: no SQL Server here, and npm's T-SQL parsers reject OUTPUT and parameterized OFFSET.
import t from 'tap'
import { mssqlDialect, sqliteDialect, type Dialect } from '../../src/db/dialect.js'
import { createTableStatements, referenceColumns } from '../../src/db/init.js'
import { parseListQuery } from '../../src/db/list-query.js'
import { materials, referenceMappings, users } from '../../src/db/resources.js'
import { simpleUpper, SqlBuilder } from '../../src/db/sql.js'
import { ResourceStorage, storageProblems } from '../../src/db/storage.js'
import type { ColumnInfo, ResourceDef, TableMapping } from '../../src/db/types.js'
import { driverBytes, driverWrites } from '../helpers/tedious.js'

const MS_COLS = '[id] AS [id], [material_number] AS [materialNumber], [name] AS [name], [description] AS [description], ' +
  '[unit] AS [unit], [barcode] AS [barcode], [min_stock] AS [minStock], [max_stock] AS [maxStock], [weight] AS [weight], ' +
  '[blocked] AS [blocked], [block_reason] AS [blockReason], [stock_quantity] AS [stockQuantity], ' +
  '[created_at] AS [createdAt], [modified_at] AS [modifiedAt]'
const LITE_COLS = '"id" AS "id", "material_number" AS "materialNumber", "name" AS "name", "description" AS "description", ' +
  '"unit" AS "unit", "barcode" AS "barcode", "min_stock" AS "minStock", "max_stock" AS "maxStock", "weight" AS "weight", ' +
  '"blocked" AS "blocked", "block_reason" AS "blockReason", "stock_quantity" AS "stockQuantity", ' +
  '"created_at" AS "createdAt", "modified_at" AS "modifiedAt"'

/** builders over the reference tables as `db init` creates them (column types and NOT NULL known) */
const reference = (dialect: Dialect, def: ResourceDef = materials, mapping: TableMapping = referenceMappings.materials): SqlBuilder =>
  new SqlBuilder(dialect, new ResourceStorage(dialect.name, def, mapping, referenceColumns(dialect, def, mapping)))
const ms = reference(mssqlDialect)
const lite = reference(sqliteDialect)

const listQuery = (): ReturnType<typeof parseListQuery> => {
  const q = parseListQuery({
    name: '[like]50%_[x]\\y',
    minStock: ['[gte]5', '[lt]100'],
    unit: '[or]pcs;box',
    barcode: '[nor]1;2',
    description: '[not]old',
    blockReason: '[null]',
    blocked: 'false',
    sort: '-modifiedAt,materialNumber'
  }, materials)
  q.after = [new Date('2024-01-02T03:04:05.678Z'), null, 7]
  return q
}

const FILTERS_MS = "[name] LIKE @p1 ESCAPE '\\' AND [min_stock] >= @p2 AND [min_stock] < @p3 AND [unit] IN (@p4, @p5) AND " +
  '([barcode] NOT IN (@p6, @p7) OR [barcode] IS NULL) AND ([description] <> @p8 OR [description] IS NULL) AND ' +
  '[block_reason] IS NULL AND [blocked] = @p9'
// SQLite's reference table keeps the flag in an INTEGER column: false is 0, true any other value, as it reads
const FILTERS_LITE = FILTERS_MS.replace(/\[([a-z_]+)\]/g, '"$1"').replace('"blocked" = @p9', '"blocked" = 0')

t.test('T-SQL list: filters, mixed sort, keyset after a NULL key, paging', async (t) => {
  const stmt = ms.list(listQuery())
  t.equal(stmt.text,
    `SELECT ${MS_COLS} FROM [dbo].[materials] WHERE ${FILTERS_MS} AND ` +
    '[modified_at] <= @p10 AND ([modified_at] < @p10 OR ([modified_at] = @p10 AND [material_number] IS NOT NULL) OR ' +
    '([modified_at] = @p10 AND [material_number] IS NULL AND [id] > @p11)) ' +
    // ORDER BY names plain columns by their select-list alias: a bare name binds to an alias first
    'ORDER BY [modifiedAt] DESC, [materialNumber] ASC, [id] ASC OFFSET @offset ROWS FETCH NEXT @limit ROWS ONLY')
  // every parameter declared as its column is (db init's types), so SQL Server neither converts nor rounds
  t.same(stmt.params.map((p) => [p.name, p.kind, p.value, p.type]), [
    ['p1', 'string', '50%_\\[x]\\\\y', 'nvarchar(4000)'],
    ['p2', 'number', 5, 'float'],
    ['p3', 'number', 100, 'float'],
    ['p4', 'string', 'pcs', 'nvarchar(4000)'],
    ['p5', 'string', 'box', 'nvarchar(4000)'],
    ['p6', 'string', '1', 'nvarchar(4000)'],
    ['p7', 'string', '2', 'nvarchar(4000)'],
    ['p8', 'string', 'old', 'nvarchar(4000)'],
    ['p9', 'boolean', false, 'bit'],
    ['p10', 'datetime', new Date('2024-01-02T03:04:05.678Z'), 'datetime2(3)'],
    ['p11', 'integer', 7, 'int'],
    ['limit', 'integer', 100, undefined],
    ['offset', 'integer', 0, undefined]
  ])
})

t.test('T-SQL count uses the same filters, no paging, no keyset', async (t) => {
  const stmt = ms.count(listQuery().filters)
  t.equal(stmt.text, `SELECT COUNT(*) AS [total] FROM [dbo].[materials] WHERE ${FILTERS_MS}`)
  t.equal(stmt.params.length, 9)
})

t.test('the licence count locks the range it counted on SQL Server (inside the write transaction)', async (t) => {
  const { filters } = parseListQuery({ enabled: 'true', type: '[or]user;application' }, users)
  const msUsers = reference(mssqlDialect, users, referenceMappings.users)
  t.equal(msUsers.count(filters, { lock: true }).text,
    'SELECT COUNT(*) AS [total] FROM [dbo].[gateway_users] WITH (UPDLOCK, HOLDLOCK) WHERE [enabled] = @p1 AND [type] IN (@p2, @p3)')
  t.equal(msUsers.count(filters).text, 'SELECT COUNT(*) AS [total] FROM [dbo].[gateway_users] WHERE [enabled] = @p1 AND [type] IN (@p2, @p3)', 'no lock unless asked')
  t.equal(reference(sqliteDialect, users, referenceMappings.users).count(filters, { lock: true }).text,
    'SELECT COUNT(*) AS "total" FROM "gateway_users" WHERE "enabled" <> 0 AND "type" IN (@p1, @p2)', 'SQLite: BEGIN IMMEDIATE already serializes writers')
})

t.test('the duplicate check of a unique value no index guards takes an application lock on the value (SQL Server)', async (t) => {
  t.same(ms.appLock('picking-gateway:dbo.materials:materialNumber:a-1', 10000), {
    text: "DECLARE @rc int; EXEC @rc = sp_getapplock @Resource = @resource, @LockMode = N'Exclusive', @LockOwner = N'Transaction', @LockTimeout = @timeout; SELECT @rc AS [rc]",
    params: [{ name: 'resource', kind: 'string', value: 'picking-gateway:dbo.materials:materialNumber:a-1', type: 'nvarchar(255)' }, { name: 'timeout', kind: 'integer', value: 10000, type: 'int' }]
  })
})

t.test('usernames compare without regard to case on every database', async (t) => {
  const { filters } = parseListQuery({ username: 'jsmith' }, users)
  const q = { filters, sort: [{ field: 'id', desc: false }], limit: 1 }
  const where = (text: string): string => text.slice(text.indexOf(' WHERE ') + 7, text.indexOf(' ORDER BY '))
  t.equal(where(reference(sqliteDialect, users, referenceMappings.users).list(q).text), 'unicode_fold(RTRIM("username", \' \')) = @p1', 'SQLite: a legacy \'JSmith\' (or \'ÖZTÜRK\', or \'jsmith \') is found as jsmith')
  const ci = reference(mssqlDialect, users, referenceMappings.users).list(q)
  t.equal(where(ci.text), '[username] = @p1', 'SQL Server under a CI collation: as it is (and on its index)')
  const columns = referenceColumns('mssql', users, referenceMappings.users).map((c) => c.name === 'username' ? { ...c, caseSensitive: true } : c)
  const cs = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', users, referenceMappings.users, columns)).list(q)
  t.equal(where(cs.text), 'UPPER([username]) = @p1', 'under a CS collation: both sides upper-cased')
  t.equal(cs.params[0].value, 'JSMITH')
  // UPPER maps each character to one, as Unicode's simple mapping does: UPPER(N'weiß') is 'WEIß', not JavaScript's 'WEISS'
  const weiss = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', users, referenceMappings.users, columns)).list({ ...q, filters: parseListQuery({ username: 'weiß' }, users).filters })
  t.equal(where(weiss.text), 'UPPER([username]) = @p1')
  t.same(weiss.params.slice(0, 1).map((p) => [p.value, p.type]), [['WEIß', 'nvarchar(4000)']], 'before: WEISS, which no UPPER([username]) equals: the user weiß could not log in')
  t.equal(simpleUpper('straße ﬁx ŉ öl 𐐨'), 'STRAßE ﬁX ŉ ÖL 𐐀', 'a character JavaScript would write as two stays as it is; one beyond the BMP is upper-cased')
  t.equal(where(reference(sqliteDialect, users, referenceMappings.users).list({ ...q, filters: parseListQuery({ username: '[like]js%' }, users).filters }).text), '"username" LIKE @p1 ESCAPE \'\\\'', '[like] as it is (SQLite\'s LIKE already ignores ASCII case)')
})

t.test('[like] escapes reach the SQL: \\% and \\_ as escaped wildcards, \\\\ as an escaped backslash, [ escaped for T-SQL', async (t) => {
  const pattern = (dialect: Dialect, raw: string): unknown => {
    const stmt = reference(dialect).list(parseListQuery({ name: `[like]${raw}` }, materials))
    t.match(stmt.text, /WHERE \[?"?name"?\]? LIKE @p1 ESCAPE '\\' ORDER BY/)
    return stmt.params[0].value
  }
  t.equal(pattern(mssqlDialect, '50\\%'), '%50\\%%', 'a literal percent stays escaped, the substring wildcards are bare')
  t.equal(pattern(sqliteDialect, '50\\%'), '%50\\%%')
  t.equal(pattern(mssqlDialect, 'a\\_b%'), 'a\\_b%')
  t.equal(pattern(mssqlDialect, '[x]\\\\y_'), '\\[x]\\\\y_', 'T-SQL: [ escaped; an escaped backslash stays one escaped backslash')
  t.equal(pattern(sqliteDialect, '[x]\\\\y_'), '[x]\\\\y_', 'SQLite: [ is not special')
  t.equal(pattern(sqliteDialect, 'C:\\temp'), '%C:\\\\temp%', 'a lone backslash is literal, so it is escaped')
})

t.test('T-SQL offset-paged list with the default sort', async (t) => {
  const q = parseListQuery({ limit: '20', offset: '40', materialNumber: '[notlike]M-1%' }, materials)
  const stmt = ms.list(q)
  t.equal(stmt.text,
    `SELECT ${MS_COLS} FROM [dbo].[materials] WHERE ([material_number] NOT LIKE @p1 ESCAPE '\\' OR [material_number] IS NULL) ` +
    'ORDER BY [id] ASC OFFSET @offset ROWS FETCH NEXT @limit ROWS ONLY')
  t.same(stmt.params.map((p) => [p.name, p.value]), [['p1', 'M-1%'], ['limit', 20], ['offset', 40]])
})

t.test('T-SQL keyset: NULL handling for nullable keys, a seekable bound on the first key', async (t) => {
  const q = parseListQuery({ sort: 'name,-weight' }, materials)
  q.after = ['Valve', 1.5, 3]
  t.equal(ms.list(q).text,
    `SELECT ${MS_COLS} FROM [dbo].[materials] WHERE [name] >= @p1 AND ([name] > @p1 OR ([name] = @p1 AND ([weight] < @p2 OR [weight] IS NULL)) OR ` +
    '([name] = @p1 AND [weight] = @p2 AND [id] > @p3)) ORDER BY [name] ASC, [weight] DESC, [id] ASC OFFSET @offset ROWS FETCH NEXT @limit ROWS ONLY')
  // after a NULL in a descending key nothing follows on that key: the disjunct disappears
  q.after = ['Valve', null, 3]
  t.equal(ms.list(q).text,
    `SELECT ${MS_COLS} FROM [dbo].[materials] WHERE [name] >= @p1 AND ([name] > @p1 OR ([name] = @p1 AND [weight] IS NULL AND [id] > @p2)) ` +
    'ORDER BY [name] ASC, [weight] DESC, [id] ASC OFFSET @offset ROWS FETCH NEXT @limit ROWS ONLY')
  const d = parseListQuery({ sort: '-weight,name' }, materials)
  d.after = [2, 'Valve', 3]
  t.equal(ms.list(d).text,
    `SELECT ${MS_COLS} FROM [dbo].[materials] WHERE ([weight] <= @p1 OR [weight] IS NULL) AND (([weight] < @p1 OR [weight] IS NULL) OR ` +
    '([weight] = @p1 AND [name] > @p2) OR ([weight] = @p1 AND [name] = @p2 AND [id] > @p3)) ' +
    'ORDER BY [weight] DESC, [name] ASC, [id] ASC OFFSET @offset ROWS FETCH NEXT @limit ROWS ONLY')
  d.after = [null, 'Valve', 3]
  t.equal(ms.list(d).text,
    `SELECT ${MS_COLS} FROM [dbo].[materials] WHERE [weight] IS NULL AND (([weight] IS NULL AND [name] > @p1) OR ([weight] IS NULL AND [name] = @p1 AND [id] > @p2)) ` +
    'ORDER BY [weight] DESC, [name] ASC, [id] ASC OFFSET @offset ROWS FETCH NEXT @limit ROWS ONLY')
  const a = parseListQuery({ sort: 'weight' }, materials)
  a.after = [null, 3]
  t.equal(ms.list(a).text,
    `SELECT ${MS_COLS} FROM [dbo].[materials] WHERE ([weight] IS NOT NULL OR ([weight] IS NULL AND [id] > @p1)) ` +
    'ORDER BY [weight] ASC, [id] ASC OFFSET @offset ROWS FETCH NEXT @limit ROWS ONLY', 'after a NULL ascending: no bound on the first key')
  // id only: a single condition, no OR
  const byId = parseListQuery({}, materials)
  byId.after = [41]
  t.equal(ms.list(byId).text, `SELECT ${MS_COLS} FROM [dbo].[materials] WHERE [id] > @p1 ORDER BY [id] ASC OFFSET @offset ROWS FETCH NEXT @limit ROWS ONLY`)
})

t.test('T-SQL insert captures the id with OUTPUT INTO and reads the row back', async (t) => {
  const stmt = ms.insert({ materialNumber: 'M-1', name: 'Valve', blocked: false })
  t.equal(stmt.text,
    'DECLARE @inserted TABLE ([id] int); ' +
    'INSERT INTO [dbo].[materials] ([material_number], [name], [blocked]) OUTPUT INSERTED.[id] INTO @inserted VALUES (@p1, @p2, @p3); ' +
    `SELECT ${MS_COLS} FROM [dbo].[materials] WHERE [id] = (SELECT TOP (1) [id] FROM @inserted)`)
  t.same(stmt.params.map((p) => [p.name, p.kind, p.value]), [['p1', 'string', 'M-1'], ['p2', 'string', 'Valve'], ['p3', 'boolean', false]])
  t.equal(ms.insert({}).text.split('; ')[1], 'INSERT INTO [dbo].[materials] OUTPUT INSERTED.[id] INTO @inserted DEFAULT VALUES')
})

t.test('mapping.defaults: a create also writes the unmapped columns, each parameter typed as its column', async (t) => {
  const mapping: TableMapping = { ...referenceMappings.materials, defaults: { mandant: 7, Zone: 'Ä1', aktiv: true } }
  const columns = [
    ...referenceColumns(mssqlDialect, materials, referenceMappings.materials),
    { name: 'Mandant', type: 'smallint', nullable: false, hasDefault: false, identity: false, computed: false },
    { name: 'Zone', type: 'varchar', maxLength: 4, nullable: false, hasDefault: false, identity: false, computed: false, codePage: 1252 },
    { name: 'Aktiv', type: 'bit', nullable: false, hasDefault: false, identity: false, computed: false }
  ]
  const b = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, mapping, columns))
  const stmt = b.insert({ materialNumber: 'M-1' })
  t.equal(stmt.text.split('; ')[1], 'INSERT INTO [dbo].[materials] ([material_number], [Mandant], [Zone], [Aktiv]) OUTPUT INSERTED.[id] INTO @inserted VALUES (@p1, @p2, @p3, @p4)', 'named as the catalog spells them')
  t.same(stmt.params.map((p) => [p.name, p.kind, p.value, p.type]), [
    ['p1', 'string', 'M-1', 'nvarchar(4000)'],
    ['p2', 'integer', 7, 'smallint'],
    ['p3', 'string', 'Ä1', 'nvarchar(4000)'],
    ['p4', 'boolean', true, 'bit']
  ])
  t.equal(b.insert({}).text.split('; ')[1], 'INSERT INTO [dbo].[materials] ([Mandant], [Zone], [Aktiv]) OUTPUT INSERTED.[id] INTO @inserted VALUES (@p1, @p2, @p3)', 'no DEFAULT VALUES then')
  const lite = new SqlBuilder(sqliteDialect, new ResourceStorage('sqlite', materials, mapping, undefined))
  t.equal(lite.insert({ name: 'x' }).text, `INSERT INTO "materials" ("name", "mandant", "Zone", "aktiv") VALUES (@p1, @p2, @p3, @p4) RETURNING ${LITE_COLS}`, 'as configured while the columns are unknown')
})

t.test('mapping.defaults: a number or flag for a text column is written as text, so its varchar parameter holds a string', async (t) => {
  const mapping: TableMapping = { ...referenceMappings.materials, defaults: { Kostenstelle: 4711, Gesperrt: true, Faktor: 2.5, Aus: false } }
  const text = (name: string, type: string, maxLength: number): ColumnInfo => ({ name, type, maxLength, nullable: false, hasDefault: false, identity: false, computed: false })
  const extra = [text('Kostenstelle', 'varchar', 10), text('Gesperrt', 'char', 1), text('Faktor', 'nvarchar', 8), text('Aus', 'varchar', 1)]
  const b = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, mapping, [...referenceColumns(mssqlDialect, materials, referenceMappings.materials), ...extra]))
  const stmt = b.insert({})
  // before: [4711, 'varchar(8000)'], which tedious refuses ('Invalid string.'): every create a 500
  t.strictSame(stmt.params.map((p) => [p.value, p.type]), [['4711', 'varchar(8000)'], ['1', 'varchar(8000)'], ['2.5', 'nvarchar(4000)'], ['0', 'varchar(8000)']], 'true as 1, as CAST(1 AS bit) to text gives')
  for (const p of stmt.params) t.doesNotThrow(() => { driverWrites(p) }, `${p.name} passes the driver`)
  t.throws(() => { driverWrites({ name: 'p', kind: 'integer', value: 4711, type: 'varchar(8000)' }) }, /Invalid string/, 'what the driver did with the number')
  // checked as text: the column's length counts
  const short = new ResourceStorage('mssql', materials, { ...mapping, defaults: { Kostenstelle: 12345678901 } }, [...referenceColumns(mssqlDialect, materials, referenceMappings.materials), ...extra])
  t.match(storageProblems(short), [/materials\.defaults\.Kostenstelle: must be at most 10 characters long/])
  // SQLite: the same text, not a number TEXT affinity would store as '2.5' by chance and a flag as 1
  const lite = new SqlBuilder(sqliteDialect, new ResourceStorage('sqlite', materials, mapping, [...referenceColumns(sqliteDialect, materials, referenceMappings.materials), ...extra]))
  t.strictSame(lite.insert({}).params.map((p) => p.value), ['4711', '1', '2.5', '0'])
})

t.test('SQL Server: mapping.defaults for a time column is read as ISO 8601, as written, not by the driver in the host\'s time zone', async (t) => {
  const column = (name: string, type: string, timeScale?: number): ColumnInfo => ({ name, type, nullable: false, hasDefault: false, identity: false, computed: false, ...(timeScale === undefined ? {} : { scale: timeScale }) })
  const extra = [column('ErfDat', 'datetime'), column('Inventur', 'date'), column('Stempel', 'datetime2', 7), column('Alt', 'smalldatetime')]
  const storage = (defaults: Record<string, string | number | boolean>): ResourceStorage => new ResourceStorage('mssql', materials, { ...referenceMappings.materials, defaults },
    [...referenceColumns(mssqlDialect, materials, referenceMappings.materials), ...extra])
  const given = storage({ ErfDat: '1900-01-01T00:00:00', Inventur: '2024-01-02', Stempel: '2024-01-02 10:00:00.5', Alt: '1900-01-01' })
  t.same(storageProblems(given), [])
  const stmt = new SqlBuilder(mssqlDialect, given).insert({})
  // before: the text itself (kind 'string'), which tedious parsed with Date.parse: '1900-01-01T00:00:00' in the host's zone
  t.strictSame(stmt.params.map((p) => [p.kind, p.value instanceof Date ? p.value.toISOString() : p.value, p.type]), [
    ['datetime', '1900-01-01T00:00:00.000Z', 'datetime'],
    ['datetime', '2024-01-02T00:00:00.000Z', 'date'],
    ['datetime', '2024-01-02T10:00:00.500Z', 'datetime2(7)'],
    ['datetime', '1900-01-01T00:00:00.000Z', 'smalldatetime']
  ])
  // what the driver writes, on a host in Berlin: the time as configured (useUTC), not an hour before it
  const zone = process.env.TZ
  process.env.TZ = 'Europe/Berlin'
  try {
    t.same(driverBytes(stmt.params[0]), driverBytes({ name: 'p', kind: 'datetime', value: new Date(Date.UTC(1900, 0, 1)), type: 'datetime' }), 'datetime 1900-01-01 00:00')
  } finally {
    if (zone === undefined) delete process.env.TZ
    else process.env.TZ = zone
  }
  // before: '02.01.2024' was 1 February (Date.parse reads it month first), '2024-02-30' the 1st of March, 1899 on a
  // smalldatetime and a number failed every create in the driver ('Out of range.', 'Invalid date.')
  t.same(storageProblems(storage({ ErfDat: '02.01.2024', Inventur: '2024-02-30', Stempel: 0, Alt: '1899-12-31' })), [
    'materials.defaults.ErfDat: the column (datetime) holds times; give one in ISO 8601 as it is to be stored, \'2024-01-02\' or \'2024-01-02T10:00:00\', got "02.01.2024"',
    'materials.defaults.Inventur: the column (date) holds times; give one in ISO 8601 as it is to be stored, \'2024-01-02\' or \'2024-01-02T10:00:00\', got "2024-02-30"',
    'materials.defaults.Stempel: the column (datetime2(7)) holds times; give one in ISO 8601 as it is to be stored, \'2024-01-02\' or \'2024-01-02T10:00:00\', got 0',
    "materials.defaults.Alt: must be between 1900-01-01T00:00:00.000Z and 2079-06-06T23:59:00.000Z (its database column's range)"
  ])
})

t.test('mapping.defaults for a column SQL Server fills (rowversion) or that holds bytes (varbinary, image): a problem at start, not a failed create each time', async (t) => {
  const column = (name: string, type: string, o: Partial<ColumnInfo> = {}): ColumnInfo => ({ name, type, nullable: true, hasDefault: false, identity: false, computed: false, ...o })
  const extra = [column('Bild', 'varbinary', { maxLength: -1 }), column('Sig', 'binary', { maxLength: 16 }), column('Foto', 'image', { maxLength: 2147483647 }), column('RV', 'timestamp', { hasDefault: true }), column('Kst', 'varchar', { maxLength: 10 })]
  const storage = (dialect: 'mssql' | 'sqlite', defaults: Record<string, string | number | boolean>): ResourceStorage => new ResourceStorage(dialect, materials, { ...referenceMappings.materials, defaults },
    [...referenceColumns(dialect === 'mssql' ? mssqlDialect : sqliteDialect, materials, referenceMappings.materials), ...extra])
  // before: every create failed, error 257 (nvarchar to varbinary is an explicit conversion only) or 273 (an explicit value for a timestamp column)
  t.same(storageProblems(storage('mssql', { Bild: '', Sig: 0, Foto: 'x', RV: 0, Kst: '1' })), [
    "materials.defaults.Bild: the column (varbinary(max)) holds bytes, which no value of the configuration is; give it a default in the database (ALTER TABLE … ADD DEFAULT 0x FOR [Bild]) and remove it from defaults",
    "materials.defaults.Sig: the column (binary(16)) holds bytes, which no value of the configuration is; give it a default in the database (ALTER TABLE … ADD DEFAULT 0x FOR [Sig]) and remove it from defaults",
    "materials.defaults.Foto: the column (image(2147483647)) holds bytes, which no value of the configuration is; give it a default in the database (ALTER TABLE … ADD DEFAULT 0x FOR [Foto]) and remove it from defaults",
    "materials.defaults: column 'RV' is filled by the database; remove it from defaults"
  ])
  t.same(storageProblems(storage('mssql', { Kst: '1' })), [], 'a text column takes its text')
  // SQLite: a BLOB column keeps any value, and TIMESTAMP is a time type there
  t.same(storageProblems(storage('sqlite', { Bild: '', RV: '2024-01-01 00:00:00' })), [])
  // nor does the NOT NULL check advise a value from the configuration for bytes
  const required = new ResourceStorage('mssql', materials, referenceMappings.materials, [...referenceColumns(mssqlDialect, materials, referenceMappings.materials), column('Bild', 'varbinary', { maxLength: -1, nullable: false }), column('Kst', 'varchar', { maxLength: 10, nullable: false })])
  t.same(storageProblems(required), [
    "materials: column 'Bild' is NOT NULL without a default and not mapped, so inserts through the gateway would fail; map it, give it a default in the database, or set mapping.materials.readOnly to true",
    "materials: column 'Kst' is NOT NULL without a default and not mapped, so inserts through the gateway would fail; map it, give it a value every create writes (mapping.materials.defaults: {\"Kst\": …}), give it a default in the database, or set mapping.materials.readOnly to true"
  ])
})

t.test('T-SQL update, delete, select by id and for update', async (t) => {
  const upd = ms.update(5, { name: "O'Brien", modifiedAt: new Date(0) })
  t.equal(upd.text, 'UPDATE [dbo].[materials] SET [name] = @p1, [modified_at] = @p2 WHERE [id] = @id')
  t.same(upd.params.map((p) => [p.name, p.kind, p.value]), [['p1', 'string', "O'Brien"], ['p2', 'datetime', new Date(0)], ['id', 'integer', 5]])
  t.throws(() => ms.update(5, {}), /without fields/)
  t.equal(ms.delete(5).text, 'DELETE FROM [dbo].[materials] WHERE [id] = @id')
  t.equal(ms.selectById(5).text, `SELECT ${MS_COLS} FROM [dbo].[materials] WHERE [id] = @id`)
  t.equal(ms.selectById(5, { forUpdate: true }).text, `SELECT ${MS_COLS} FROM [dbo].[materials] WITH (UPDLOCK, ROWLOCK) WHERE [id] = @id`)
  // mapping.newIds 'max+1': the serializable update lock holds off other inserts past the largest id until the commit
  t.same(ms.maxId(), { text: 'SELECT MAX([id]) AS [max] FROM [dbo].[materials] WITH (UPDLOCK, HOLDLOCK)', params: [] })
  t.same(lite.maxId(), { text: 'SELECT MAX("id") AS "max" FROM "materials"', params: [] }, 'SQLite: BEGIN IMMEDIATE serializes writers')
})

t.test('texts are built once per shape: the same fields give the same text, with this call\'s values and types', async (t) => {
  const b = new SqlBuilder(mssqlDialect, materials, referenceMappings.materials)
  const first = b.insert({ materialNumber: 'M-1', name: 'Valve' })
  const other = b.insert({ name: 'Valve', materialNumber: 'M-2' })
  const again = b.insert({ materialNumber: 'M-3', name: 'Bolt' })
  t.equal(again.text, first.text, 'the same fields in the same order: one text')
  t.not(other.text, first.text, 'another order is another shape')
  const built = (b as unknown as { texts: Map<string, string> }).texts
  t.same([...built.keys()], ['insert materialNumber,name', 'insert name,materialNumber'], 'three inserts, two shapes: two texts built')
  t.match(other.text, /\(\[name\], \[material_number\]\)/)
  t.same(again.params.map((p) => [p.name, p.value]), [['p1', 'M-3'], ['p2', 'Bolt']], 'parameters are this call\'s')
  t.equal(b.update(1, { name: 'plain' }).text, b.update(2, { name: 'Größe' }).text)
  t.same(b.update(9, { name: 'x' }).params.map((p) => [p.name, p.value]), [['p1', 'x'], ['id', 9]])
  t.equal(b.selectById(1).text, b.selectById(2).text)
  t.not(b.selectById(1).text, b.selectById(1, { forUpdate: true }).text, 'the lock hint is part of the shape')
  t.throws(() => b.insert({ nope: 1 } as never), /nope/, 'an unknown field fails every time, cached or not')
  t.throws(() => b.insert({ nope: 1 } as never), /nope/)
})

t.test('T-SQL multi-row insert for seeding', async (t) => {
  const stmt = ms.insertMany(['materialNumber', 'name'], [{ materialNumber: 'A', name: 'a' }, { materialNumber: 'B', name: null }])
  t.equal(stmt.text, 'INSERT INTO [dbo].[materials] ([material_number], [name]) VALUES (@p1, @p2), (@p3, @p4)')
  t.same(stmt.params.map((p) => p.value), ['A', 'a', 'B', null])
})

t.test('identifiers are quoted per dialect, with their quote characters doubled', async (t) => {
  const odd = { schema: 'pick]ing', table: 'mat"erials]', columns: { ...referenceMappings.materials.columns, name: 'na]me"x' } }
  const b = new SqlBuilder(mssqlDialect, materials, odd)
  t.equal(b.delete(1).text, 'DELETE FROM [pick]]ing].[mat"erials]]] WHERE [id] = @id')
  t.equal(b.update(1, { name: 'x' }).text, 'UPDATE [pick]]ing].[mat"erials]]] SET [na]]me"x] = @p1 WHERE [id] = @id')
  const l = new SqlBuilder(sqliteDialect, materials, odd)
  t.equal(l.update(1, { name: 'x' }).text, 'UPDATE "mat""erials]" SET "na]me""x" = @p1 WHERE "id" = @id')
  t.throws(() => b.col('nope'), /no column for field 'nope'/)
})

const LITE_TIME = 'strftime(\'%Y-%m-%dT%H:%M:%fZ\', "modified_at")'

t.test('SQLite texts', async (t) => {
  const q = listQuery()
  q.after = ['2024-01-02T03:04:05.678Z', null, 7]
  const list = lite.list(q)
  t.equal(list.text,
    `SELECT ${LITE_COLS}, ${LITE_TIME} AS "__s0" FROM "materials" WHERE ${FILTERS_LITE} AND ` +
    `${LITE_TIME} <= @p9 AND (${LITE_TIME} < @p9 OR (${LITE_TIME} = @p9 AND "material_number" IS NOT NULL) OR ` +
    `(${LITE_TIME} = @p9 AND "material_number" IS NULL AND "id" > @p10)) ` +
    `ORDER BY "__s0" DESC, "materialNumber" ASC, "id" ASC LIMIT @limit OFFSET @offset`)
  // SQLite keeps times as text; the keyset compares the canonical text SQLite itself computes (the cursor carries it)
  t.equal(list.params[8].value, '2024-01-02T03:04:05.678Z')
  // SQLite's LIKE has no [ class: only the escape character itself is escaped
  t.equal(list.params[0].value, '50%_[x]\\\\y')
  t.equal(lite.count([]).text, 'SELECT COUNT(*) AS "total" FROM "materials"')
  t.equal(lite.insert({ materialNumber: 'M-1' }).text, `INSERT INTO "materials" ("material_number") VALUES (@p1) RETURNING ${LITE_COLS}`)
  t.equal(lite.insert({}).text, `INSERT INTO "materials" DEFAULT VALUES RETURNING ${LITE_COLS}`)
  t.equal(lite.update(3, { blocked: true }).text, 'UPDATE "materials" SET "blocked" = @p1 WHERE "id" = @id')
  t.equal(lite.delete(3).text, 'DELETE FROM "materials" WHERE "id" = @id')
  t.equal(lite.selectById(3, { forUpdate: true }).text, `SELECT ${LITE_COLS} FROM "materials" WHERE "id" = @id`)
})

t.test('T-SQL DDL', async (t) => {
  t.same(createTableStatements('mssql', materials, referenceMappings.materials), [
    "IF OBJECT_ID(N'[dbo].[materials]', N'U') IS NULL\n" +
    'CREATE TABLE [dbo].[materials] (\n' +
    '  [id] int IDENTITY(1,1) NOT NULL CONSTRAINT [PK_materials] PRIMARY KEY,\n' +
    '  [material_number] nvarchar(64) NOT NULL CONSTRAINT [UQ_materials_material_number] UNIQUE,\n' +
    '  [name] nvarchar(200) NOT NULL,\n' +
    '  [description] nvarchar(2000),\n' +
    "  [unit] nvarchar(16) CONSTRAINT [DF_materials_unit] DEFAULT N'pcs',\n" +
    '  [barcode] nvarchar(64),\n' +
    '  [min_stock] float,\n' +
    '  [max_stock] float,\n' +
    '  [weight] float,\n' +
    '  [blocked] bit NOT NULL CONSTRAINT [DF_materials_blocked] DEFAULT 0,\n' +
    '  [block_reason] nvarchar(500),\n' +
    '  [stock_quantity] float NOT NULL CONSTRAINT [DF_materials_stock_quantity] DEFAULT 0,\n' +
    '  [created_at] datetime2(3) NOT NULL CONSTRAINT [DF_materials_created_at] DEFAULT SYSUTCDATETIME(),\n' +
    '  [modified_at] datetime2(3) NOT NULL CONSTRAINT [DF_materials_modified_at] DEFAULT SYSUTCDATETIME()\n' +
    ')',
    "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE [name] = N'IX_materials_modified_at' AND [object_id] = OBJECT_ID(N'[dbo].[materials]'))\n" +
    'CREATE INDEX [IX_materials_modified_at] ON [dbo].[materials] ([modified_at])'
  ])
  const usersDdl = createTableStatements('mssql', users, { ...referenceMappings.users, schema: "gate'way" })
  t.equal(usersDdl[0], "IF SCHEMA_ID(N'gate''way') IS NULL EXEC(N'CREATE SCHEMA [gate''way]')")
  t.match(usersDdl[1], /^IF OBJECT_ID\(N'\[gate''way\]\.\[gateway_users\]', N'U'\) IS NULL\nCREATE TABLE \[gate'way\]\.\[gateway_users\] \(\n/)
  t.match(usersDdl[1], /\n {2}\[last_login_at\] datetime2\(3\),\n/)
  t.match(usersDdl[1], /\n {2}\[token_version\] int NOT NULL CONSTRAINT \[DF_gateway_users_token_version\] DEFAULT 0,\n/)
  t.match(usersDdl[1], /\n {2}\[enabled\] bit NOT NULL CONSTRAINT \[DF_gateway_users_enabled\] DEFAULT 1,\n/)

  // SQL Server takes names of at most 128 characters: a long table and column name still make valid constraint names
  const long = { ...referenceMappings.materials, table: `Materialstammdaten_${'x'.repeat(100)}`, columns: { ...referenceMappings.materials.columns, materialNumber: `Materialnummer_${'y'.repeat(100)}` } }
  const ddl = createTableStatements('mssql', materials, long).join('\n')
  const names = [...ddl.matchAll(/CONSTRAINT \[([^\]]+)\]|CREATE INDEX \[([^\]]+)\]|\[name\] = N'([^']+)'/g)].map((m) => m[1] ?? m[2] ?? m[3])
  t.ok(names.length >= 4, names.join(', '))
  for (const name of names) t.ok(name.length <= 128, `${name.length} characters: ${name}`)
  t.equal(new Set(names).size, names.filter((n) => !n.startsWith('IX_')).length + 1, 'each constraint its own name (the index is named twice: checked, then made)')
  t.match(ddl, /CONSTRAINT \[UQ_Materialstammdaten_x{97}_[0-9a-f]{8}\] UNIQUE/, 'the start kept, a hash of the whole name at the end')
})

t.test('SQLite DDL', async (t) => {
  t.same(createTableStatements('sqlite', materials, referenceMappings.materials), [
    'CREATE TABLE IF NOT EXISTS "materials" (\n' +
    '  "id" INTEGER PRIMARY KEY AUTOINCREMENT,\n' +
    '  "material_number" VARCHAR(64) NOT NULL UNIQUE,\n' +
    '  "name" VARCHAR(200) NOT NULL,\n' +
    '  "description" VARCHAR(2000),\n' +
    "  \"unit\" VARCHAR(16) DEFAULT 'pcs',\n" +
    '  "barcode" VARCHAR(64),\n' +
    '  "min_stock" REAL,\n' +
    '  "max_stock" REAL,\n' +
    '  "weight" REAL,\n' +
    '  "blocked" INTEGER NOT NULL DEFAULT 0,\n' +
    '  "block_reason" VARCHAR(500),\n' +
    '  "stock_quantity" REAL NOT NULL DEFAULT 0,\n' +
    "  \"created_at\" TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),\n" +
    "  \"modified_at\" TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))\n" +
    ')',
    'CREATE INDEX IF NOT EXISTS "IX_materials_modified_at" ON "materials" (strftime(\'%Y-%m-%dT%H:%M:%fZ\', "modified_at"))'
  ])
})

t.test('T-SQL insert into a table keyed by text: the captured key has the column\'s collation', async (t) => {
  const mapping: TableMapping = { ...referenceMappings.materials, columns: { ...referenceMappings.materials.columns, id: 'material_number' } }
  const columns = referenceColumns(mssqlDialect, materials, referenceMappings.materials)
    .filter((c) => c.name !== 'id')
    .map((c) => c.name === 'material_number' ? { ...c, type: 'varchar', collation: 'Finnish_Swedish_CS_AS' } : c)
  const b = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, mapping, columns))
  t.equal(b.insert({ materialNumber: 'Å-1', name: 'x' }).text.split('; ')[0], 'DECLARE @inserted TABLE ([id] varchar(8000) COLLATE Finnish_Swedish_CS_AS)')
  t.equal(ms.insert({ name: 'x' }).text.split('; ')[0], 'DECLARE @inserted TABLE ([id] int)', 'a number key needs none')
})

t.test('T-SQL reads, updates and deletes by a non-ASCII text key cast it to the varchar column\'s code page, so the key\'s index is sought', async (t) => {
  const mapping: TableMapping = { ...referenceMappings.materials, columns: { ...referenceMappings.materials.columns, id: 'material_number' } }
  const columns = referenceColumns(mssqlDialect, materials, referenceMappings.materials)
    .filter((c) => c.name !== 'id')
    .map((c) => c.name === 'material_number' ? { ...c, type: 'varchar', collation: 'SQL_Latin1_General_CP1_CI_AS', codePage: 1252 } : c)
  const b = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, mapping, columns))
  const cast = '[material_number] = CAST(@id COLLATE SQL_Latin1_General_CP1_CI_AS AS varchar(8000))'
  const where = (s: { text: string }): string => s.text.slice(s.text.indexOf(' WHERE ') + 7)
  // before: [material_number] = @id with @id nvarchar(4000), which converts the column (CONVERT_IMPLICIT) and scans
  t.equal(where(b.selectById('Ventil-Müller')), cast)
  t.equal(where(b.selectById('Ventil-Müller', { forUpdate: true })), cast, 'the write\'s locking read too')
  t.equal(b.update('Ventil-Müller', { name: 'x' }).text, `UPDATE [dbo].[materials] SET [name] = @p1 WHERE ${cast}`)
  t.equal(b.delete('Ventil-Müller').text, `DELETE FROM [dbo].[materials] WHERE ${cast}`)
  t.same(b.delete('Ventil-Müller').params, [{ name: 'id', kind: 'string', value: 'Ventil-Müller', type: 'nvarchar(4000)' }])
  // texts are kept per shape: an ASCII key after it compares plainly again, a key the code page cannot hold stays nvarchar
  t.equal(where(b.selectById('M-1')), '[material_number] = @id')
  t.equal(b.delete('M-1').text, 'DELETE FROM [dbo].[materials] WHERE [material_number] = @id')
  t.equal(where(b.selectById('Ω-1')), '[material_number] = @id', 'no varchar holds it: it equals no stored key')
})

t.test('a table keyed by its material number: a sort key on the column an earlier one sorts is left out (T-SQL error 169)', async (t) => {
  const mapping: TableMapping = { ...referenceMappings.materials, columns: { ...referenceMappings.materials.columns, id: 'material_number' } }
  const keyed = (dialect: Dialect): SqlBuilder => new SqlBuilder(dialect, new ResourceStorage(dialect.name, materials, mapping,
    referenceColumns(dialect, materials, referenceMappings.materials).filter((c) => c.name !== 'id').map((c) => c.name === 'material_number' ? { ...c, nullable: false } : c)))
  const b = keyed(mssqlDialect)
  const orderBy = (s: { text: string }): string => /ORDER BY (.*?) (?:OFFSET|LIMIT) /.exec(s.text)![1]
  const q = (sort: string, after?: Array<string | null>): ReturnType<typeof parseListQuery> => ({ ...parseListQuery({ sort }, materials), ...(after === undefined ? {} : { after }) })
  // before: ORDER BY [materialNumber] ASC, [id] ASC, both [material_number]: Msg 169
  t.equal(orderBy(b.list(q('materialNumber'))), '[materialNumber] ASC')
  t.equal(orderBy(b.list(q('-materialNumber'))), '[materialNumber] DESC')
  t.equal(orderBy(b.list(q('name'))), '[name] ASC, [id] ASC', 'another column keeps the tie-breaker')
  t.equal(orderBy(b.list(q('materialNumber,name'))), '[materialNumber] ASC, [name] ASC', 'the id after both')
  const paged = b.list(q('materialNumber', ['M-7', 'M-7']))
  t.equal(paged.text.slice(paged.text.indexOf(' WHERE ') + 7, paged.text.indexOf(' ORDER BY ')), '[material_number] > @p1', 'the cursor keeps both values; the keyset compares one')
  t.same(paged.params.map((p) => p.value), ['M-7', 100, 0])
  t.equal(orderBy(keyed(sqliteDialect).list(q('materialNumber'))), '"materialNumber" ASC', 'SQLite the same')
})

t.test('a keyset after NULL in every key it compares, each descending, matches no row instead of being `WHERE ()` (a syntax error)', async (t) => {
  // a table keyed by a nullable material number: ORDER BY keeps one key, and the cursor holds NULL for it
  // (lists leave out the rows without an id, so the first condition is [material_number] IS NOT NULL)
  const mapping: TableMapping = { ...referenceMappings.materials, columns: { ...referenceMappings.materials.columns, id: 'material_number' } }
  const keyed = (dialect: Dialect): SqlBuilder => new SqlBuilder(dialect, new ResourceStorage(dialect.name, materials, mapping,
    referenceColumns(dialect, materials, referenceMappings.materials).filter((c) => c.name !== 'id').map((c) => c.name === 'material_number' ? { ...c, nullable: true } : c)))
  const cols = MS_COLS.replace('[id] AS [id]', '[material_number] AS [id]')
  const q = (sort: string, after: Array<string | null>): ReturnType<typeof parseListQuery> => ({ ...parseListQuery({ sort }, materials), after })
  t.equal(keyed(mssqlDialect).list(q('-materialNumber', [null, 'M-7'])).text,
    `SELECT ${cols} FROM [dbo].[materials] WHERE [material_number] IS NOT NULL AND 1 = 0 ORDER BY [materialNumber] DESC OFFSET @offset ROWS FETCH NEXT @limit ROWS ONLY`, 'before: WHERE ()')
  t.equal(keyed(mssqlDialect).list(q('-description,-materialNumber', [null, null, 'M-7'])).text,
    `SELECT ${cols} FROM [dbo].[materials] WHERE [material_number] IS NOT NULL AND 1 = 0 ORDER BY [description] DESC, [materialNumber] DESC OFFSET @offset ROWS FETCH NEXT @limit ROWS ONLY`, 'before: [description] IS NULL AND ()')
  t.match(keyed(sqliteDialect).list(q('-materialNumber', [null, 'M-7'])).text, / WHERE "material_number" IS NOT NULL AND 1 = 0 ORDER BY "materialNumber" DESC LIMIT /, 'SQLite the same')
  t.equal(keyed(mssqlDialect).list(q('materialNumber', [null, 'M-7'])).text.includes(' WHERE [material_number] IS NOT NULL AND [material_number] IS NOT NULL ORDER BY '), true, 'ascending: the non-NULL rows follow')
})

t.test('T-SQL: a legacy text key compares through varchar(max) (= on text is error 402)', async (t) => {
  const mapping: TableMapping = { ...referenceMappings.materials, columns: { ...referenceMappings.materials.columns, id: 'material_number' } }
  const columns = referenceColumns(mssqlDialect, materials, referenceMappings.materials)
    .filter((c) => c.name !== 'id')
    .map((c) => c.name === 'material_number' ? { ...c, type: 'text', maxLength: 2147483647 } : c)
  const b = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', materials, mapping, columns))
  t.match(b.selectById('M-1').text, / WHERE CAST\(\[material_number\] AS varchar\(max\)\) = @id$/, 'before: [material_number] = @id')
  t.match(b.delete('M-1').text, /^DELETE FROM \[dbo\]\.\[materials\] WHERE CAST\(\[material_number\] AS varchar\(max\)\) = @id$/)
  t.match(b.insert({ materialNumber: 'M-1', name: 'x' }).text, /WHERE CAST\(\[material_number\] AS varchar\(max\)\) = \(SELECT TOP \(1\) \[id\] FROM @inserted\)$/)
  t.match(ms.selectById(1).text, / WHERE \[id\] = @id$/, 'other keys as they are')
})

t.test('users.enabled in a SQL Server int column without a value map: NULL (shown as false) sorts among the 0 rows', async (t) => {
  const columns = referenceColumns('mssql', users, referenceMappings.users).map((c) => c.name === 'enabled' ? { ...c, type: 'int', nullable: true } : c)
  const b = new SqlBuilder(mssqlDialect, new ResourceStorage('mssql', users, referenceMappings.users, columns))
  const text = b.list({ filters: [], sort: [{ field: 'enabled', desc: true }, { field: 'id', desc: false }], limit: 2 }).text
  t.equal(text.slice(text.indexOf(' ORDER BY ')), ' ORDER BY [__s0] DESC, [id] ASC OFFSET @offset ROWS FETCH NEXT @limit ROWS ONLY')
  t.match(text, 'CASE WHEN [enabled] IS NULL OR [enabled] = 0 THEN 0 ELSE 1 END AS [__s0]', 'before: CASE WHEN [enabled] = 0 THEN 0 WHEN [enabled] IS NOT NULL THEN 1 END, NULL apart from false')
})
