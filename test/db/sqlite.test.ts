// The repository against real SQLite files: the reference schema and a customer-style foreign schema must behave the same.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t, { type Test } from 'tap'
import { ConflictError, DatabaseUnavailableError } from '../../src/db/errors.js'
import { openDatabase } from '../../src/db/index.js'
import { createReferenceTables } from '../../src/db/init.js'
import { parseListQuery, parseSort, type QueryString } from '../../src/db/list-query.js'
import { compileMapper, Repository } from '../../src/db/repository.js'
import { materials, referenceMappings, stations } from '../../src/db/resources.js'
import { compileBinder, declaredCollation, mapSqliteError, openSqlite, openSqliteWaiting, toSqliteParams } from '../../src/db/sqlite.js'
import { mappingFit } from '../../src/db/storage.js'
import type { Database, Executor, Param, ResourceDef, Row, TableMapping } from '../../src/db/types.js'
import { tempDir } from '../helpers/temp.js'

const problemsOf = async (db: Database, def: ResourceDef, mapping: TableMapping): Promise<string[]> => (await mappingFit(db, def, mapping)).problems

const dir = tempDir(t, 'pg-sqlite-')

const silent = { info () {}, warn () {}, error () {} }

const foreignMapping: TableMapping = {
  table: 'MaterialBase',
  columns: {
    id: 'MatID',
    materialNumber: 'MatNo',
    name: 'MatName',
    description: 'MatDesc',
    unit: 'UoM',
    barcode: 'EAN',
    minStock: 'ReorderPoint',
    maxStock: 'MaxQty',
    weight: 'GrossWeight',
    blocked: 'Locked',
    blockReason: 'LockText',
    stockQuantity: 'QtyOnHand',
    createdAt: 'Created',
    modifiedAt: 'LastChange'
  }
}

// What a picking system's own table looks like: other names, other types, an unmapped column, audit triggers.
const foreignDdl = [
  'CREATE TABLE MaterialBase (MatID INTEGER PRIMARY KEY, MatNo VARCHAR(40) NOT NULL, MatName VARCHAR(80) NOT NULL, ' +
    'MatDesc VARCHAR(255), UoM VARCHAR(10), EAN VARCHAR(20), ReorderPoint NUMERIC, MaxQty NUMERIC, GrossWeight REAL, ' +
    "Locked BOOLEAN NOT NULL DEFAULT 0, LockText VARCHAR(100), QtyOnHand REAL NOT NULL DEFAULT 0, Created DATETIME, LastChange DATETIME, Zone TEXT DEFAULT 'A')",
  'CREATE UNIQUE INDEX UX_MaterialBase_MatNo ON MaterialBase (MatNo)',
  'CREATE TABLE MaterialAudit (MatID INTEGER, Action TEXT)',
  "CREATE TRIGGER MaterialBase_ins AFTER INSERT ON MaterialBase BEGIN INSERT INTO MaterialAudit (MatID, Action) VALUES (NEW.MatID, 'I'); END",
  "CREATE TRIGGER MaterialBase_upd AFTER UPDATE ON MaterialBase BEGIN INSERT INTO MaterialAudit (MatID, Action) VALUES (NEW.MatID, 'U'); END"
]

async function open (name: string, variant: 'reference' | 'foreign'): Promise<{ db: Database, repo: Repository }> {
  const db = openDatabase(`sqlite:${join(dir, name)}`, { create: true, logger: silent })
  await createReferenceTables(db, referenceMappings)
  if (variant === 'foreign') for (const text of foreignDdl) await db.execute({ text, params: [] })
  const repo = await new Repository(db, materials, variant === 'foreign' ? foreignMapping : referenceMappings.materials).learn()
  return { db, repo }
}

const list = async (repo: Repository, query: QueryString): Promise<Row[]> => (await repo.list(parseListQuery(query, materials))).rows
const numbers = async (repo: Repository, query: QueryString): Promise<unknown[]> => (await list(repo, query)).map((r) => r.materialNumber)

const fixture = [
  { materialNumber: 'M-1', name: 'Ball valve DN25', description: 'brass', weight: 1.5, minStock: 10, modifiedAt: '2024-01-01T00:00:00.000Z' },
  { materialNumber: 'M-2', name: 'Check valve DN15', description: null, weight: 0.5, minStock: 5, modifiedAt: '2024-01-15T12:00:00.000Z' },
  { materialNumber: 'M-3', name: 'Hex bolt M8x40', description: 'zinc', weight: null, minStock: 100, modifiedAt: '2024-02-01T00:00:00.000Z' },
  { materialNumber: 'M-4', name: 'Nitrile gloves L', description: 'box of 100', weight: 0.3, minStock: null, blocked: true, blockReason: 'Recall', modifiedAt: '2024-02-01T00:00:00.000Z' },
  { materialNumber: 'M-5', name: 'Cable H07RN-F', description: 'by the metre', weight: 2, minStock: 10, modifiedAt: '2024-03-01T00:00:00.000Z' }
]

for (const variant of ['reference', 'foreign'] as const) {
  t.test(`${variant} schema`, async (t) => {
    const { db, repo } = await open(`${variant}.db`, variant)
    t.teardown(() => db.close())
    for (const row of fixture) await repo.create(row)

    t.test('create returns the stored row in API shape', async (t) => {
      const row = await repo.create({ materialNumber: 'X-1', name: 'Test', blocked: false, weight: 1.25, createdAt: '2020-01-01T00:00:00+01:00' })
      t.match(row, {
        id: Number,
        materialNumber: 'X-1',
        name: 'Test',
        description: null,
        unit: 'pcs',
        blocked: false,
        weight: 1.25,
        stockQuantity: 0,
        createdAt: '2019-12-31T23:00:00.000Z',
        modifiedAt: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
      })
      t.same(Object.keys(row), Object.keys(materials.fields), 'every field, in definition order')
      t.same(await repo.get(row.id as number), row)
      t.same(await repo.findOne('materialNumber', 'X-1'), row)
      t.equal(await repo.findOne('materialNumber', 'nope'), undefined)
      t.equal(await repo.get(999999), undefined)
      await repo.delete(row.id as number)
      t.equal(await repo.get(row.id as number), undefined)
      await t.rejects(repo.create({ materialNumber: 'X-2', name: 'x', colour: 'red' }), { name: 'BadQueryError', message: "Unknown field 'colour'" })
      await t.rejects(repo.create({ materialNumber: 'X-2', name: 'x', id: 5 }), { name: 'BadQueryError', message: "Field 'id' cannot be set" })
      await t.rejects(repo.create({ materialNumber: 'X-2', name: 'x', weight: '5' }), { name: 'InvalidValueError', message: "Invalid value for 'weight': expected number" })
      await t.rejects(repo.create({ materialNumber: 'X-2', name: 'x', blocked: 1 }), { name: 'InvalidValueError', message: /'blocked'/ })
      await t.rejects(repo.create({ materialNumber: 'X-2', name: 'x', createdAt: 'today' }), { name: 'InvalidValueError', message: /'createdAt'/ })
      if (variant === 'foreign') {
        const audit = await db.query({ text: 'SELECT COUNT(*) AS n FROM MaterialAudit', params: [] })
        t.ok(Number(audit[0].n) >= fixture.length + 1, 'the insert trigger fired for every row')
      }
    })

    t.test('every operator on a string field', async (t) => {
      t.same(await numbers(repo, { name: 'Hex bolt M8x40' }), ['M-3'])
      t.same(await numbers(repo, { name: 'hex bolt m8x40' }), [], 'SQLite equality is case-sensitive')
      t.same(await numbers(repo, { materialNumber: '[gt]M-3' }), ['M-4', 'M-5'])
      t.same(await numbers(repo, { materialNumber: '[gte]M-3' }), ['M-3', 'M-4', 'M-5'])
      t.same(await numbers(repo, { materialNumber: '[lt]M-2' }), ['M-1'])
      t.same(await numbers(repo, { materialNumber: '[lte]M-2' }), ['M-1', 'M-2'])
      t.same(await numbers(repo, { description: '[not]brass' }), ['M-2', 'M-3', 'M-4', 'M-5'], '[not] includes the NULL description (M-2)')
      t.same(await numbers(repo, { name: '[like]valve' }), ['M-1', 'M-2'], 'substring')
      t.same(await numbers(repo, { name: '[like]C%' }), ['M-2', 'M-5'], 'prefix pattern')
      t.same(await numbers(repo, { name: '[like]Hex bolt M_x40' }), ['M-3'], '_ matches one character')
      t.same(await numbers(repo, { name: '[notlike]valve' }), ['M-3', 'M-4', 'M-5'])
      t.same(await numbers(repo, { description: '[notlike]o' }), ['M-1', 'M-2', 'M-3', 'M-5'], '[notlike] includes NULL')
      t.same(await numbers(repo, { materialNumber: '[or]M-1;M-3;M-99' }), ['M-1', 'M-3'])
      t.same(await numbers(repo, { description: '[nor]brass;zinc' }), ['M-2', 'M-4', 'M-5'], '[nor] includes NULL')
      t.same(await numbers(repo, { description: '[null]' }), ['M-2'])
      t.same(await numbers(repo, { description: '[notnull]' }), ['M-1', 'M-3', 'M-4', 'M-5'])
      t.same(await numbers(repo, { name: ['[like]valve', '[like]DN2'] }), ['M-1'], 'repeated keys AND')
    })

    t.test('every operator on a numeric field', async (t) => {
      t.same(await numbers(repo, { weight: '0.5' }), ['M-2'])
      t.same(await numbers(repo, { weight: '[gt]1' }), ['M-1', 'M-5'])
      t.same(await numbers(repo, { weight: '[gte]1.5' }), ['M-1', 'M-5'])
      t.same(await numbers(repo, { weight: '[lt]1' }), ['M-2', 'M-4'])
      t.same(await numbers(repo, { weight: '[lte]0.5' }), ['M-2', 'M-4'])
      t.same(await numbers(repo, { weight: '[not]2' }), ['M-1', 'M-2', 'M-3', 'M-4'], '[not] includes the NULL weight (M-3)')
      t.same(await numbers(repo, { weight: '[or]0.5;2' }), ['M-2', 'M-5'])
      t.same(await numbers(repo, { weight: '[nor]0.5;2' }), ['M-1', 'M-3', 'M-4'])
      t.same(await numbers(repo, { weight: '[null]' }), ['M-3'])
      t.same(await numbers(repo, { weight: '[notnull]' }), ['M-1', 'M-2', 'M-4', 'M-5'])
      t.same(await numbers(repo, { minStock: ['[gte]5', '[lt]100'] }), ['M-1', 'M-2', 'M-5'])
      t.same(await numbers(repo, { blocked: 'true' }), ['M-4'])
      t.same(await numbers(repo, { blocked: '[not]true' }), ['M-1', 'M-2', 'M-3', 'M-5'])
      t.same(await numbers(repo, { id: '[lte]2' }), ['M-1', 'M-2'])
    })

    t.test('every operator on a date field', async (t) => {
      t.same(await numbers(repo, { modifiedAt: '2024-02-01' }), ['M-3', 'M-4'])
      t.same(await numbers(repo, { modifiedAt: '2024-01-15T13:00:00+01:00' }), ['M-2'], 'offsets are converted to UTC')
      t.same(await numbers(repo, { modifiedAt: '[gt]2024-02-01' }), ['M-5'])
      t.same(await numbers(repo, { modifiedAt: '[gte]2024-02-01' }), ['M-3', 'M-4', 'M-5'])
      t.same(await numbers(repo, { modifiedAt: '[lt]2024-01-15T12:00:00Z' }), ['M-1'])
      t.same(await numbers(repo, { modifiedAt: '[lte]2024-01-15T12:00:00Z' }), ['M-1', 'M-2'])
      t.same(await numbers(repo, { modifiedAt: '[not]2024-02-01T00:00:00.000Z' }), ['M-1', 'M-2', 'M-5'])
      t.same(await numbers(repo, { modifiedAt: '[or]2024-01-01;2024-03-01' }), ['M-1', 'M-5'])
      t.same(await numbers(repo, { modifiedAt: '[nor]2024-01-01;2024-03-01' }), ['M-2', 'M-3', 'M-4'])
      t.same(await numbers(repo, { modifiedAt: ['[gte]2024-01-10', '[lt]2024-02-15'] }), ['M-2', 'M-3', 'M-4'], 'a date range')
      t.same(await numbers(repo, { modifiedSince: '2024-02-01T00:00:00Z' }), ['M-3', 'M-4', 'M-5'])
      t.same(await numbers(repo, { modifiedAt: '[notnull]' }), ['M-1', 'M-2', 'M-3', 'M-4', 'M-5'])
      t.same(await numbers(repo, { modifiedAt: '[null]' }), [])
    })

    t.test('sorting: NULLs first ascending, last descending, ties by id', async (t) => {
      t.same(await numbers(repo, { sort: 'weight' }), ['M-3', 'M-4', 'M-2', 'M-1', 'M-5'])
      t.same(await numbers(repo, { sort: '-weight' }), ['M-5', 'M-1', 'M-2', 'M-4', 'M-3'])
      t.same(await numbers(repo, { sort: '-modifiedAt,materialNumber' }), ['M-5', 'M-3', 'M-4', 'M-2', 'M-1'])
      t.same(await numbers(repo, { sort: '-modifiedAt,-materialNumber' }), ['M-5', 'M-4', 'M-3', 'M-2', 'M-1'])
      t.same(await numbers(repo, { sort: 'minStock' }), ['M-4', 'M-2', 'M-1', 'M-5', 'M-3'])
      t.same(await numbers(repo, { sort: '-minStock' }), ['M-3', 'M-1', 'M-5', 'M-2', 'M-4'])
      t.same(await numbers(repo, { sort: '-id' }), ['M-5', 'M-4', 'M-3', 'M-2', 'M-1'])
    })

    t.test('paging: limit, offset, count, next', async (t) => {
      const first = await repo.list(parseListQuery({ limit: '2', count: 'true', weight: '[notnull]' }, materials))
      t.same(first.rows.map((r) => r.materialNumber), ['M-1', 'M-2'])
      t.equal(first.total, 4)
      t.type(first.next, 'string')
      const offset = await repo.list(parseListQuery({ limit: '2', offset: '2', weight: '[notnull]' }, materials))
      t.same(offset.rows.map((r) => r.materialNumber), ['M-4', 'M-5'])
      t.equal(offset.total, undefined, 'no total unless count=true')
      t.equal(offset.next, undefined, 'no next on the last page')
      const second = await repo.list(parseListQuery({ limit: '2', weight: '[notnull]', cursor: first.next }, materials))
      t.same(second.rows.map((r) => r.materialNumber), ['M-4', 'M-5'])
      t.equal(second.next, undefined)
      const exact = await repo.list(parseListQuery({ limit: '5', materialNumber: '[like]M-%' }, materials))
      t.equal(exact.rows.length, 5)
      t.equal(exact.next, undefined, 'a full last page has no next')
      t.equal(await repo.count(), 5)
      t.equal(await repo.count(parseListQuery({ blocked: 'false' }, materials).filters), 4)
    })

    t.test('bad list queries reach the caller as BadQueryError naming the parameter', async (t) => {
      await t.rejects(async () => repo.list(parseListQuery({ colour: 'red' }, materials)), { name: 'BadQueryError', statusCode: 400, message: "Unknown query parameter 'colour'" })
      await t.rejects(async () => repo.list(parseListQuery({ weight: '[gt]heavy' }, materials)), { statusCode: 400, message: /'weight'/ })
      await t.rejects(async () => repo.list(parseListQuery({ limit: '5000' }, materials)), { statusCode: 400, message: /'limit' must be an integer from 1 to 1000, got '5000'/ })
      await t.rejects(repo.findOne('colour', 'x'), { name: 'BadQueryError', message: "Unknown field 'colour'" })
    })

    t.test('SQL metacharacters are stored and matched literally', async (t) => {
      const nasty = [
        "O'Brien \"quoted\"; DROP TABLE materials; --",
        '50% off',
        'a_b',
        'axb',
        '[x] bracket',
        'back\\slash',
        "'; DELETE FROM materials WHERE '1'='1"
      ]
      const ids: number[] = []
      for (const [i, name] of nasty.entries()) ids.push((await repo.create({ materialNumber: `Q-${i}`, name, description: name })).id as number)
      for (const [i, name] of nasty.entries()) {
        t.equal((await repo.get(ids[i]))?.name, name, `stored: ${name}`)
        // a value that starts with [ is written after [eq], so it is not read as an operator
        t.same(await numbers(repo, { name: name.startsWith('[') ? `[eq]${name}` : name }), [`Q-${i}`], `equality: ${name}`)
      }
      t.same(await numbers(repo, { name: "[like]'" }), ['Q-0', 'Q-6'])
      t.same(await numbers(repo, { name: '[like]"quoted";' }), ['Q-0'])
      t.same(await numbers(repo, { name: '[like]--' }), ['Q-0'])
      t.same(await numbers(repo, { name: '[like]50%' }), ['Q-1'], '% is a wildcard: prefix')
      t.same(await numbers(repo, { name: '[like]a_b' }), ['Q-2', 'Q-3'], '_ is a wildcard')
      t.same(await numbers(repo, { name: '[like][x]' }), ['Q-4'], '[ is literal')
      t.same(await numbers(repo, { name: '[like]\\' }), ['Q-5'], 'backslash is literal')
      t.same(await numbers(repo, { name: '[like]k\\s' }), ['Q-5'])
      t.same(await numbers(repo, { name: '[like]k\\\\s' }), ['Q-5'], '\\\\ is one literal backslash')
      t.same(await numbers(repo, { name: '[like]%\\%' }), [], '\\% is a literal percent: no name ends in %')
      t.same(await numbers(repo, { name: '[like]50\\%' }), ['Q-1'], 'a literal percent, as a substring')
      t.same(await numbers(repo, { name: '[like]50\\% %' }), ['Q-1'], 'a literal percent, then a wildcard')
      t.same(await numbers(repo, { name: '[like]5_\\%%' }), ['Q-1'])
      t.same(await numbers(repo, { name: '[like]a\\_b' }), ['Q-2'], '\\_ is a literal underscore: axb does not match')
      t.same(await numbers(repo, { name: '[notlike]a\\_b', materialNumber: '[like]Q-%' }), ['Q-0', 'Q-1', 'Q-3', 'Q-4', 'Q-5', 'Q-6'])
      t.same(await numbers(repo, { materialNumber: '[like]Q-%', name: '[notlike]%_%' }), [], 'every name has a character')
      t.same(await numbers(repo, { materialNumber: '[like]Q-%', name: '[notlike]___' }), ['Q-0', 'Q-1', 'Q-4', 'Q-5', 'Q-6'], 'a pattern with a wildcard is not a substring search')
      t.same(await numbers(repo, { description: "[or]50% off;a_b;O'Brien" }), ['Q-1', 'Q-2'])
      t.equal(await repo.count(), 5 + nasty.length, 'nothing was dropped or deleted')
      for (const id of ids) await repo.delete(id)
    })

    t.test('a unique violation is a 409 naming the API field', async (t) => {
      await t.rejects(repo.create({ materialNumber: 'M-1', name: 'dup' }), { name: 'ConflictError', statusCode: 409, message: "materialNumber 'M-1' already exists" })
      await t.rejects(repo.update(2, { materialNumber: 'M-1' }), { name: 'ConflictError', message: "materialNumber 'M-1' already exists" })
      t.equal((await repo.get(2))?.materialNumber, 'M-2', 'the failed update rolled back')
      t.equal(await repo.count(), 5)
    })

    t.test('update and delete: 404, 412 by check, modifiedAt', async (t) => {
      const before = await repo.get(1) as Row
      await t.rejects(repo.update(1, { name: 'changed' }, { check: (cur) => cur.modifiedAt === 'stale' }), { name: 'PreconditionFailedError', statusCode: 412 })
      t.same(await repo.get(1), before, 'unchanged after a failed check')
      let seen: Row | undefined
      const updated = await repo.update(1, { name: 'Ball valve DN25 PN40', description: null, weight: 1.75 }, { check: (cur) => { seen = cur; return cur.modifiedAt === before.modifiedAt } })
      t.same(seen, before, 'check sees the current row')
      t.match(updated, { id: 1, name: 'Ball valve DN25 PN40', description: null, weight: 1.75, materialNumber: 'M-1', createdAt: before.createdAt })
      t.ok(Date.parse(updated.modifiedAt as string) > Date.parse(before.modifiedAt as string), 'modifiedAt moved on')
      const again = await repo.update(1, { weight: 1.8 })
      t.ok(Date.parse(again.modifiedAt as string) > Date.parse(updated.modifiedAt as string), 'modifiedAt strictly increases, even within one millisecond')
      const quiet = await repo.update(1, { stockQuantity: 12 }, { touch: false })
      t.equal(quiet.modifiedAt, again.modifiedAt, 'touch: false keeps modifiedAt')
      t.equal(quiet.stockQuantity, 12)
      t.same(await repo.update(1, {}, { touch: false }), quiet, 'nothing to change: the current row')
      await t.rejects(repo.update(424242, { name: 'x' }), { name: 'NotFoundError', statusCode: 404 })
      await t.rejects(repo.delete(424242), { name: 'NotFoundError', statusCode: 404 })
      const extra = await repo.create({ materialNumber: 'D-1', name: 'to delete' })
      await t.rejects(repo.delete(extra.id as number, { check: () => false }), { name: 'PreconditionFailedError' })
      t.ok(await repo.get(extra.id as number), 'still there after a failed check')
      t.same(await repo.delete(extra.id as number, { check: (cur) => cur.materialNumber === 'D-1' }), extra, 'delete returns the deleted row')
      t.equal(await repo.get(extra.id as number), undefined)
    })

    t.test('the cursor walk returns every row exactly once', async (t) => {
      // 200 more rows with duplicate and NULL sort keys
      const rows = Array.from({ length: 200 }, (_, i) => ({
        materialNumber: `W-${String(i).padStart(3, '0')}`,
        name: `Walk ${i % 13}`,
        description: i % 5 === 0 ? null : `d${i % 7}`,
        weight: i % 9 === 0 ? null : (i * 37) % 11,
        modifiedAt: new Date(Date.UTC(2024, 0, 1 + (i % 17))).toISOString()
      }))
      for (const row of rows) await repo.create(row)
      const total = await repo.count()
      for (const sort of ['-modifiedAt,materialNumber', 'weight,-description', '-weight,description,-name', 'description', '-id', '']) {
        const query: QueryString = { sort, limit: '7' }
        const all = (await repo.list(parseListQuery({ sort, limit: '1000' }, materials))).rows.map((r) => r.id)
        t.equal(all.length, total)
        const walked: unknown[] = []
        let cursor: string | undefined
        let pages = 0
        do {
          const page = await repo.list(parseListQuery(cursor === undefined ? query : { ...query, cursor }, materials))
          walked.push(...page.rows.map((r) => r.id))
          cursor = page.next
          pages++
        } while (cursor !== undefined && pages < 1000)
        t.same(walked, all, `sort '${sort}': same rows in the same order as one big page`)
        t.equal(pages, Math.ceil(total / 7), `sort '${sort}': ${pages} pages`)
      }
    })

    t.test('the cursor walk survives inserts and updates of non-key fields', async (t) => {
      const sort = 'weight,-description'
      const original = new Set((await repo.list(parseListQuery({ sort, limit: '1000' }, materials))).rows.map((r) => r.id))
      const seen = new Map<unknown, number>()
      let cursor: string | undefined
      let n = 0
      do {
        const page = await repo.list(parseListQuery({ sort, limit: '9', ...(cursor !== undefined && { cursor }) }, materials))
        for (const r of page.rows) seen.set(r.id, (seen.get(r.id) ?? 0) + 1)
        // meanwhile: new rows arrive and existing rows change (not in their sort keys)
        await repo.create({ materialNumber: `N-${n}`, name: 'new', weight: n % 4, description: `d${n % 3}` })
        await repo.create({ materialNumber: `N-${n}b`, name: 'new', weight: null })
        const victim = [...original][(n * 31) % original.size] as number
        await repo.update(victim, { name: `renamed ${n}`, stockQuantity: n })
        n++
        cursor = page.next
      } while (cursor !== undefined && n < 1000)
      for (const id of original) t.equal(seen.get(id), 1, `row ${String(id)} seen exactly once`)
      t.ok([...seen.values()].every((c) => c === 1), 'no row (old or new) seen twice')
      t.ok(seen.size > original.size, 'rows inserted behind the cursor show up')
    })

    t.test('a page after a cursor seeks on the index instead of scanning from the top', { skip: variant === 'foreign' && 'no index on the foreign table' }, async (t) => {
      for (const sort of ['', 'modifiedAt', '-modifiedAt', '-modifiedAt,materialNumber', '-materialNumber']) {
        const first = await repo.list(parseListQuery({ sort, limit: '10' }, materials))
        const stmt = repo.listStatement({ ...parseListQuery({ sort, limit: '10', cursor: first.next }, materials), limit: 11 })
        const plan = (await db.query({ text: `EXPLAIN QUERY PLAN ${stmt.text}`, params: stmt.params })).map((r) => String(r.detail))
        t.match(plan[0], /^SEARCH materials USING (INTEGER PRIMARY KEY|INDEX)/, `sort '${sort}': ${plan.join('; ')}`)
      }
    })

    t.test('mappingFit', async (t) => {
      const mapping = variant === 'foreign' ? foreignMapping : referenceMappings.materials
      t.same(await problemsOf(db, materials, mapping), [])
      t.same(await problemsOf(db, stations, referenceMappings.stations), [])
      t.same(await problemsOf(db, materials, { ...mapping, table: 'NoSuchTable' }), ["materials: table 'NoSuchTable' does not exist"])
      t.same(await problemsOf(db, materials, { ...mapping, columns: { ...mapping.columns, weight: 'Gewicht' } }),
        [`materials.weight: column 'Gewicht' does not exist in table '${mapping.table}'`])
      const { barcode: _, ...fewer } = mapping.columns
      t.same(await problemsOf(db, materials, { ...mapping, columns: { ...fewer, colour: 'Colour' } }),
        ['materials.barcode: no column configured (map it to null if the table has none)', "materials: unknown field 'colour' in the column mapping"])
      // one column for two fields: an insert would name it twice (SQL Server error 264)
      const twice = await problemsOf(db, materials, { ...mapping, columns: { ...mapping.columns, createdAt: mapping.columns.modifiedAt.toLowerCase() } })
      t.equal(twice.length, 1)
      t.match(twice[0], /^materials\.modifiedAt: column '[^']+' is already createdAt's; one column serves one field/, "the second field of one column (names compare without case)")
      t.same(await problemsOf(db, materials, { ...mapping, readOnly: true, columns: { ...mapping.columns, createdAt: mapping.columns.modifiedAt } }), [], 'a read-only view may show one time stamp as both')
      const upper = Object.fromEntries(Object.entries(mapping.columns).map(([f, c]) => [f, c.toUpperCase()]))
      t.same(await problemsOf(db, materials, { ...mapping, columns: upper }), [], 'SQLite column names are case-insensitive')
    })
  })
}

t.test('a resource with two unique fields: the conflict names the right one', async (t) => {
  const db = openSqlite(join(dir, 'two-unique.db'), { create: true })
  t.teardown(() => db.close())
  await db.execute({ text: 'CREATE TABLE things (id INTEGER PRIMARY KEY, code TEXT UNIQUE, label TEXT UNIQUE, note TEXT)', params: [] })
  const def: ResourceDef = {
    name: 'things',
    fields: { id: { kind: 'integer', id: true }, code: { kind: 'string', unique: true }, label: { kind: 'string', unique: true }, note: { kind: 'string' } }
  }
  const repo = new Repository(db, def, { table: 'things', columns: { id: 'id', code: 'code', label: 'label', note: 'note' } })
  const a = await repo.create({ code: 'A', label: 'Alpha' })
  await repo.create({ code: 'B', label: 'Beta' })
  await t.rejects(repo.create({ code: 'C', label: 'Alpha' }), { name: 'ConflictError', message: "label 'Alpha' already exists" })
  await t.rejects(repo.create({ code: 'A', label: 'Gamma' }), { name: 'ConflictError', message: "code 'A' already exists" })
  await t.rejects(repo.update(a.id as number, { code: 'A', label: 'Beta' }), { name: 'ConflictError', message: "label 'Beta' already exists" }, 'its own code is no conflict')
  await t.rejects(repo.update(a.id as number, { note: 'x', id: 2 }), { name: 'BadQueryError' })
  // a unique index of the table's own on a field the resource does not call unique: SQLite's message names its column
  await db.execute({ text: 'CREATE UNIQUE INDEX ux_note ON things (note)', params: [] })
  await repo.update(a.id as number, { note: 'same' })
  await t.rejects(repo.create({ code: 'N', label: 'N', note: 'same' }), { name: 'ConflictError', message: "note 'same' already exists" })
})

t.test('a field named like another field\'s column: ORDER BY sorts by the right column (a bare name binds to an alias first)', async (t) => {
  const db = openSqlite(join(dir, 'crossed.db'), { create: true })
  t.teardown(() => db.close())
  await db.execute({ text: 'CREATE TABLE Wp (Id INTEGER PRIMARY KEY, Code TEXT NOT NULL, Name TEXT)', params: [] })
  const def: ResourceDef = { name: 'wp', fields: { id: { kind: 'integer', id: true }, name: { kind: 'string' }, description: { kind: 'string' } } }
  // the API's name is the column Code, its description the column Name
  const repo = await new Repository(db, def, { table: 'Wp', columns: { id: 'Id', name: 'Code', description: 'Name' } }).learn()
  for (const [code, name] of [['A', 'zulu'], ['B', 'yankee'], ['C', 'xray'], ['D', 'whiskey']]) await repo.create({ name: code, description: name })
  const walk = async (sort: string): Promise<string[]> => {
    const seen: string[] = []
    let cursor: string | undefined
    for (;;) {
      const page = await repo.list({ limit: 1, sort: parseSort(def, sort), filters: [], count: false, cursor })
      seen.push(...page.rows.map((r) => `${String(r.name)}/${String(r.description)}`))
      if (page.next === undefined) return seen
      cursor = page.next
    }
  }
  t.same(await walk('description'), ['D/whiskey', 'C/xray', 'B/yankee', 'A/zulu'], 'by the column Name (before: by Code, and the walk lost rows)')
  t.same(await walk('-name'), ['D/whiskey', 'C/xray', 'B/yankee', 'A/zulu'], 'by the column Code')
})

t.test('transactions: serialized, rolled back on error', async (t) => {
  const db = openSqlite(join(dir, 'tx.db'), { create: true })
  t.teardown(() => db.close())
  await createReferenceTables(db, referenceMappings)
  const repo = new Repository(db, stations, referenceMappings.stations)
  const row = await repo.create({ name: 'S-1', type: 'vlm' })
  t.match(row, { name: 'S-1', type: 'vlm', enabled: true, address: null, controllerId: null })

  const order: string[] = []
  const slow = db.transaction(async (tx) => {
    await tx.execute(repo.sql.update(row.id as number, { address: 1 }))
    order.push('tx wrote')
    await new Promise((resolve) => setTimeout(resolve, 30))
    await tx.execute(repo.sql.update(row.id as number, { address: 2 }))
    order.push('tx done')
    return 'result'
  })
  const read = repo.get(row.id as number).then((r) => { order.push(`read ${String(r?.address)}`) })
  t.equal(await slow, 'result')
  await read
  t.same(order, ['tx wrote', 'tx done', 'read 2'], 'a read waits for the open transaction instead of seeing inside it')

  await t.rejects(db.transaction(async (tx) => {
    await tx.execute(repo.sql.update(row.id as number, { address: 99 }))
    throw new Error('boom')
  }), { message: 'boom' })
  t.equal((await repo.get(row.id as number))?.address, 2, 'rolled back')

  let leaked: Parameters<Parameters<Database['transaction']>[0]>[0] | undefined
  await db.transaction(async (tx) => { leaked = tx })
  await t.rejects(leaked!.query(repo.sql.selectById(1)), { message: 'transaction already finished' })

  // concurrent updates of one row: none is lost
  await Promise.all(Array.from({ length: 20 }, async (_, i) => repo.update(row.id as number, { description: `u${i}` })))
  const all = await Promise.all(Array.from({ length: 10 }, async () => repo.get(row.id as number)))
  t.ok(all.every((r) => typeof r?.description === 'string' && r.description.startsWith('u')))

  // with nothing queued (every transaction above ended, one by an error) a statement runs at once
  const mark = db.changeMark()
  const write = db.execute(repo.sql.update(row.id as number, { address: 3 }))
  t.not(db.changeMark(), mark, 'written before the call returned: no queue left behind')
  await write

  // and so does a transaction: it begins before the call returns, not a microtask later
  const steps: string[] = []
  const begun = db.transaction(async () => { steps.push('began') })
  steps.push('call returned')
  await begun
  t.same(steps, ['began', 'call returned'], 'a transaction with nothing queued begins at once')
  // while one is open, the next waits for it
  const first = db.transaction(async () => { steps.push('first'); await new Promise((resolve) => setTimeout(resolve, 10)) })
  const second = db.transaction(async () => { steps.push('second') })
  steps.push('both called')
  await Promise.all([first, second])
  t.same(steps.slice(2), ['first', 'both called', 'second'], 'a second transaction waits for the open one')
})

t.test('a locked database answers DatabaseUnavailableError, not a hang', async (t) => {
  const file = join(dir, 'busy.db')
  const db = openSqlite(file, { create: true, busyTimeoutMs: 50 })
  t.teardown(() => db.close())
  await createReferenceTables(db, referenceMappings)
  const repo = new Repository(db, stations, referenceMappings.stations)
  const other = new BetterSqlite3(file)
  other.exec('BEGIN IMMEDIATE')
  const started = Date.now()
  await t.rejects(repo.create({ name: 'S', type: 'ptl' }), { name: 'DatabaseBusyError', code: 'DATABASE_UNAVAILABLE', statusCode: 503 })
  await t.rejects(repo.update(1, { name: 'S' }), { name: 'DatabaseBusyError' }, 'BEGIN IMMEDIATE too')
  t.ok(Date.now() - started < 2000, 'within the busy timeout')
  other.exec('ROLLBACK')
  other.close()
  t.match(await repo.create({ name: 'S', type: 'ptl' }), { name: 'S' }, 'works again once the lock is gone')
})

t.test('a file another process keeps locked while it is opened: an error naming the file and the lock, not a bare "The database is busy"', async (t) => {
  const file = join(dir, 'locked-open.db')
  const other = new BetterSqlite3(file)
  t.teardown(() => { other.close() })
  // a rollback journal, as a picking system's own file may have: its write lock keeps every other connection out, readers too
  other.pragma('journal_mode = DELETE')
  other.exec('CREATE TABLE t (x INTEGER)')
  other.exec('BEGIN EXCLUSIVE')
  other.exec('INSERT INTO t VALUES (1)')
  const locked = {
    name: 'DatabaseUnavailableError',
    statusCode: 503,
    message: `the SQLite database file '${file}' is locked by another process (a write transaction in progress, or a program that keeps it locked) and was not released within 0.05 s; try again once that process has finished its write`
  }
  for (const readonly of [false, true]) {
    const started = Date.now()
    t.throws(() => openSqlite(file, { create: false, readonly, busyTimeoutMs: 50 }), locked, `${readonly ? 'read-only' : 'read-write'} open (before: 'The database is busy')`)
    t.ok(Date.now() - started < 2000, 'within the busy timeout')
    // serve's and the commands' open: the same error once its wait on timers is used up
    await t.rejects(openSqliteWaiting(file, { create: false, readonly, busyTimeoutMs: 50 }), locked, `${readonly ? 'read-only' : 'read-write'} open waiting on timers`)
  }
  other.exec('ROLLBACK')
  const db = openSqlite(file, { create: false, busyTimeoutMs: 50 })
  t.teardown(() => db.close())
  t.same(await db.query({ text: 'SELECT COUNT(*) AS n FROM t', params: [] }), [{ n: 0 }], 'opens once the lock is gone')
})

t.test('an open waiting for another process\'s lock on the file waits on timers: the event loop turns meanwhile, a lock released within the wait opens, an abort ends the wait at once', async (t) => {
  // a picking system's file in rollback-journal mode, held in the middle of a write: its lock keeps readers out too
  const lockedFile = (name: string) => {
    const other = new BetterSqlite3(join(dir, name))
    t.teardown(() => { if (other.open) other.close() })
    other.pragma('journal_mode = DELETE')
    other.exec('CREATE TABLE t (x INTEGER)')
    other.exec('BEGIN EXCLUSIVE')
    other.exec('INSERT INTO t VALUES (1)')
    return { file: join(dir, name), other }
  }
  for (const readonly of [false, true]) {
    const { file, other } = lockedFile(`locked-open-waiting-${readonly ? 'ro' : 'rw'}.db`)
    // the lock is released by a timer of this process: only an open that lets the event loop turn sees it
    // released (before: SQLite waited inside the driver, and the open failed after 5 s with the lock still held)
    let ticks = 0
    const timer = setInterval(() => { if (++ticks === 3) other.exec('COMMIT') }, 1)
    const db = await openSqliteWaiting(file, { create: false, readonly }).finally(() => clearInterval(timer))
    t.teardown(() => db.close())
    t.ok(ticks >= 3, `${readonly ? 'read-only' : 'read-write'}: opened once the lock was released, ${ticks} timer ticks later`)
    t.same(await db.query({ text: 'SELECT COUNT(*) AS n FROM t', params: [] }), [{ n: 1 }], 'the committed row is read')
    t.same(await db.query({ text: 'PRAGMA journal_mode', params: [] }), [{ journal_mode: readonly ? 'delete' : 'wal' }], readonly ? 'a read-only open changes nothing' : 'switched to WAL once it got the lock')
  }

  // a stop during start-up: the wait ends at its next timer, the lock still held, long before its deadline
  const { file, other } = lockedFile('locked-open-abort.db')
  const stop = new AbortController()
  let ticks = 0
  const timer = setInterval(() => { if (++ticks === 3) stop.abort() }, 1)
  t.teardown(() => clearInterval(timer))
  const waits: number[] = []
  await t.rejects(openSqliteWaiting(file, { create: false, busyTimeoutMs: 600_000 }, stop.signal, (ms) => waits.push(ms)), { name: 'DatabaseUnavailableError', message: /is locked by another process/ }, 'aborted: the lock\'s error')
  t.same(waits, [600_000], 'the wait was announced once, as it began (serve and the commands log it)')
  t.ok(other.inTransaction, 'the lock was still held')
  other.exec('ROLLBACK')
})

/** A station in a new file, and a second connection (the picking system) that holds the write lock over a change to it. */
async function lockedStation (t: Test, name: string, options: { busyTimeoutMs?: number }, begin: string, description: string) {
  const file = join(dir, name)
  const db = openSqlite(file, { create: true, ...options })
  t.teardown(() => db.close())
  await createReferenceTables(db, referenceMappings)
  const repo = new Repository(db, stations, referenceMappings.stations)
  const row = await repo.create({ name: 'S-1', type: 'vlm' })
  const other = new BetterSqlite3(file)
  t.teardown(() => { if (other.open) other.close() })
  other.exec(begin)
  other.prepare('UPDATE stations SET description = ? WHERE id = ?').run(description, row.id)
  return { file, db, repo, row, other }
}

t.test('a write waiting for another process\'s lock waits on timers, outside the queue: reads go on, our transactions keep their order', async (t) => {
  const { db, repo, row, other } = await lockedStation(t, 'lock-wait.db', {}, 'BEGIN EXCLUSIVE', 'the picking system')

  const order: string[] = []
  const first = repo.update(row.id as number, { address: 1 }).then((r) => { order.push('update 1'); return r })
  const second = repo.update(row.id as number, { address: 2 }).then((r) => { order.push('update 2'); return r })
  const insert = db.execute({ text: "INSERT INTO stations (name, type, enabled, created_at, modified_at) VALUES ('S-2', 'ptl', 1, '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z')", params: [] })
    .then(() => { order.push('insert') })
  let ticks = 0
  const timer = setInterval(() => { ticks++ }, 5)
  t.teardown(() => clearInterval(timer))
  const read = await repo.get(row.id as number)
  t.equal(read?.address, null, 'a read answers while the updates wait, with the committed row')
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.same(order, [], 'nothing written while the other process holds the lock')
  t.ok(ticks >= 10, `the event loop kept turning (${ticks} timer ticks in 200 ms)`)
  t.equal((await repo.get(row.id as number))?.address, null, 'reads still answer')
  other.exec('COMMIT')
  other.close()
  const [a, b] = await Promise.all([first, second, insert])
  t.equal(a.address, 1)
  t.equal(b.address, 2, 'our second transaction ran after our first')
  t.equal(order.indexOf('update 1') < order.indexOf('update 2'), true, `in the order they were called (${order.join(', ')})`)
  t.equal((await repo.get(row.id as number))?.description, 'the picking system', "the other process's write is kept")
})

t.test('a lock held past the deadline: DatabaseUnavailableError after it, the row unchanged', async (t) => {
  const { file, repo, row, other } = await lockedStation(t, 'lock-deadline.db', { busyTimeoutMs: 200 }, 'BEGIN IMMEDIATE', 'held')
  const started = performance.now()
  await t.rejects(repo.update(row.id as number, { address: 7 }), { name: 'DatabaseBusyError', statusCode: 503, code: 'DATABASE_UNAVAILABLE', message: 'The database is busy' }, 'a transaction')
  const waited = performance.now() - started
  t.ok(waited >= 190 && waited < 1500, `after the deadline (${Math.round(waited)} ms)`)
  await t.rejects(repo.create({ name: 'S-2', type: 'ptl' }), { name: 'DatabaseBusyError', message: 'The database is busy' }, 'a create: its INSERT met the lock, then its transaction waited for it')
  other.exec('ROLLBACK')
  other.close()
  t.equal((await repo.get(row.id as number))?.address, null, 'unchanged')
  t.equal(await repo.count(), 1, 'nothing inserted')

  // a deadline of 0: the first BUSY is the answer
  const now = openSqlite(file, { create: false, busyTimeoutMs: 0 })
  t.teardown(() => now.close())
  const holder = new BetterSqlite3(file)
  holder.exec('BEGIN IMMEDIATE')
  await t.rejects(now.execute({ text: 'DELETE FROM stations', params: [] }), { message: 'The database is busy' })
  holder.exec('ROLLBACK')
  holder.close()
})

t.test('read-only: nothing persists in the file, writes are refused', async (t) => {
  const file = join(dir, 'delete-mode.db')
  const setup = new BetterSqlite3(file)
  setup.exec('CREATE TABLE t (a INTEGER)')
  setup.exec('INSERT INTO t VALUES (1)')
  t.equal(setup.pragma('journal_mode', { simple: true }), 'delete')
  setup.close()
  const db = openSqlite(file, { create: false, readonly: true })
  t.same(await db.query({ text: 'SELECT a FROM t', params: [] }), [{ a: 1 }])
  await t.rejects(db.execute({ text: 'INSERT INTO t VALUES (2)', params: [] }), { name: 'DatabaseUnavailableError', statusCode: 503, message: /read-only/, cause: { code: 'SQLITE_READONLY' } }, 'this connection cannot write, whoever runs it')
  await db.close()
  const check = new BetterSqlite3(file)
  t.equal(check.pragma('journal_mode', { simple: true }), 'delete', 'the journal mode is as it was')
  t.same(check.prepare('SELECT a FROM t').pluck().all(), [1])
  check.close()
  t.throws(() => openSqlite(join(dir, 'absent.db'), { create: true, readonly: true }), { name: 'DatabaseUnavailableError' }, 'read-only never creates a file')

  const rw = openSqlite(file, { create: false })
  await rw.close()
  const after = new BetterSqlite3(file)
  t.equal(after.pragma('journal_mode', { simple: true }), 'wal', 'serve and db init switch the file to WAL (README)')
  after.close()
})

t.test('recheck: a missing file refuses calls until it is back; the same file back is opened again', async (t) => {
  const file = join(dir, 'recheck.db')
  const db = openSqlite(file, { create: true })
  t.teardown(() => db.close())
  await db.execute({ text: 'CREATE TABLE t (a INTEGER)', params: [] })
  await db.execute({ text: 'INSERT INTO t VALUES (1)', params: [] })
  t.equal(await db.recheck!(), 'unchanged')
  // a transaction in flight when the file goes: it ends whole before the connection is closed
  const { renameSync } = await import('node:fs')
  let release!: () => void
  const gate = new Promise<void>((resolve) => { release = resolve })
  const tx = db.transaction(async (ex) => { await gate; await ex.execute({ text: 'INSERT INTO t VALUES (2)', params: [] }); return 'committed' })
  renameSync(file, `${file}.aside`)
  const checking = db.recheck!()
  await t.rejects(db.query({ text: 'SELECT a FROM t', params: [] }), { name: 'DatabaseUnavailableError', message: 'The database file is missing' }, 'refused at once')
  release()
  t.equal(await tx, 'committed')
  t.equal(await checking, 'missing')
  t.equal(db.changeMark(), undefined, 'nothing may be cached meanwhile')
  t.equal(await db.recheck!(), 'unchanged', 'still missing: nothing new')
  renameSync(`${file}.aside`, file)
  t.equal(await db.recheck!(), 'back')
  t.same((await db.query({ text: 'SELECT a FROM t ORDER BY a', params: [] })).map((r) => r.a), [1, 2], 'the transaction in flight is in the file')
  const mem = openSqlite(':memory:', { create: true })
  t.equal(await mem.recheck!(), 'unchanged', 'nothing to check in memory')
  await mem.close()
  await db.close()
  t.equal(await db.recheck!(), 'unchanged', 'closed: nothing to do')
})

/** What another process sees in a SQLite file: the rows of a query, read by a node of its own (a process shares no lock or -shm with this one). */
function readInOtherProcess (file: string, sql: string): unknown[] {
  const script = 'const D = require("better-sqlite3"); const db = new D(process.argv[1], { fileMustExist: true }); process.stdout.write(JSON.stringify(db.prepare(process.argv[2]).raw().all())); db.close()'
  return JSON.parse(execFileSync(process.execPath, ['-e', script, file, sql], { encoding: 'utf8' })) as unknown[]
}

t.test('recheck: the -wal and -shm removed under the connection: its commits are written into the file and it is opened again', async (t) => {
  const file = join(dir, 'sidecars.db')
  const db = openSqlite(file, { create: true })
  t.teardown(() => db.close())
  await db.execute({ text: 'CREATE TABLE t (a INTEGER)', params: [] })
  await db.execute({ text: 'INSERT INTO t VALUES (1)', params: [] })
  t.equal(await db.recheck!(), 'unchanged')
  // a clean-up script, or someone who took them for leftovers: the commit of 1 is in the removed -wal
  for (const suffix of ['-wal', '-shm']) rmSync(`${file}${suffix}`)
  await db.execute({ text: 'INSERT INTO t VALUES (2)', params: [] })
  t.equal(await db.recheck!(), 'sidecars', 'noticed (before: unchanged, and the commits went to a -wal no other process could see)')
  await db.execute({ text: 'INSERT INTO t VALUES (3)', params: [] })
  t.same(readInOtherProcess(file, 'SELECT a FROM t ORDER BY a'), [[1], [2], [3]], 'another process sees every commit, those before and after the check')
  t.ok(existsSync(`${file}-wal`) && existsSync(`${file}-shm`), 'new -wal and -shm at the path')
  t.equal(await db.recheck!(), 'unchanged', 'the new ones are the connection\'s own')
})

t.test('recheck: the -wal and -shm removed and another process opened the file since: calls are refused, nothing is merged', async (t) => {
  const file = join(dir, 'diverged.db')
  const db = openSqlite(file, { create: true })
  t.teardown(() => db.close())
  await db.execute({ text: 'CREATE TABLE t (a INTEGER)', params: [] })
  await db.execute({ text: 'INSERT INTO t VALUES (1)', params: [] })
  // the table in the file itself, not only in the -wal about to be removed
  await db.query({ text: 'PRAGMA wal_checkpoint(TRUNCATE)', params: [] })
  t.equal(await db.recheck!(), 'unchanged')
  for (const suffix of ['-wal', '-shm']) rmSync(`${file}${suffix}`)
  // the picking system opens the file and keeps it open: a -wal and -shm of its own
  const script = 'const D = require("better-sqlite3"); const db = new D(process.argv[1], { fileMustExist: true }); db.exec("INSERT INTO t VALUES (10)"); process.stdout.write("ready"); process.stdin.on("end", () => { db.close() }); process.stdin.resume()'
  const other = spawn(process.execPath, ['-e', script, file], { stdio: ['pipe', 'pipe', 'inherit'] })
  t.teardown(() => { other.stdin.end() })
  await new Promise<void>((resolve, reject) => { other.stdout.once('data', () => { resolve() }); other.once('exit', reject) })
  t.equal(await db.recheck!(), 'diverged')
  await t.rejects(db.execute({ text: 'INSERT INTO t VALUES (2)', params: [] }), { name: 'DatabaseUnavailableError', message: /-wal or -shm file was removed while the gateway had it open, and another process has opened the file since/ }, 'a write is refused, not acknowledged into a -wal no one else reads')
  await t.rejects(db.query({ text: 'SELECT a FROM t', params: [] }), { name: 'DatabaseUnavailableError' }, 'reads too')
  t.equal(await db.recheck!(), 'unchanged', 'said once')
  t.same(readInOtherProcess(file, 'SELECT a FROM t ORDER BY a'), [[1], [10]], "the other process's commit is kept")
})

t.test('column defaults: DEFAULT NULL is none, so a NOT NULL column with it must be given', async (t) => {
  const db = openDatabase('sqlite::memory:', { logger: silent })
  t.teardown(() => db.close())
  await db.execute({ text: 'CREATE TABLE "T" ("id" INTEGER PRIMARY KEY, "a" TEXT DEFAULT \'ST\', "b" TEXT DEFAULT NULL, "c" TEXT NOT NULL DEFAULT (NULL), "d" TEXT DEFAULT (0), "e" TEXT)', params: [] })
  const columns = await db.columns({ table: 'T', columns: {} } as unknown as TableMapping)
  t.same(Object.fromEntries(columns.map((c) => [c.name, c.hasDefault])), { id: true, a: true, b: false, c: false, d: true, e: false })
})

t.test('a STRICT table: its columns say so, and its ANY column counts as one without a declared type', async (t) => {
  const db = openDatabase('sqlite::memory:', { logger: silent })
  t.teardown(() => db.close())
  await db.execute({ text: 'CREATE TABLE "S" ("id" INTEGER PRIMARY KEY, "a" ANY, "b" INTEGER) STRICT', params: [] })
  await db.execute({ text: 'CREATE TABLE "L" ("id" INTEGER PRIMARY KEY, "a" ANY, "b" INTEGER)', params: [] })
  const strict = await db.columns({ table: 'S', columns: {} } as unknown as TableMapping)
  t.same(strict.map((c) => [c.name, c.type, c.strict]), [['id', 'integer', true], ['a', '', true], ['b', 'integer', true]])
  const loose = await db.columns({ table: 'L', columns: {} } as unknown as TableMapping)
  t.same(loose.map((c) => [c.name, c.type, c.strict]), [['id', 'integer', undefined], ['a', 'any', undefined], ['b', 'integer', undefined]], 'elsewhere ANY is NUMERIC affinity')
})

t.test('the resource\'s defaults fill what a create leaves out, where the column has no default of its own', async (t) => {
  const db = openDatabase('sqlite::memory:', { logger: silent })
  t.teardown(() => db.close())
  await db.execute({ text: 'CREATE TABLE materials (id INTEGER PRIMARY KEY, material_number TEXT NOT NULL, name TEXT NOT NULL, description TEXT, unit TEXT, ' +
    'barcode TEXT, min_stock REAL, max_stock REAL, weight REAL, blocked INTEGER NOT NULL, block_reason TEXT, stock_quantity REAL NOT NULL DEFAULT 7, created_at TEXT NOT NULL, modified_at TEXT NOT NULL)', params: [] })
  const repo = await new Repository(db, materials, referenceMappings.materials).learn()
  t.match(await repo.create({ materialNumber: 'D-1', name: 'defaults' }), { unit: 'pcs', blocked: false, stockQuantity: 7 }, 'pcs and false from resources.ts; the stock from the column')
  t.match(await repo.create({ materialNumber: 'D-2', name: 'given', unit: 'kg', blocked: true }), { unit: 'kg', blocked: true })
})

t.test('driver plumbing', async (t) => {
  t.same(toSqliteParams([
    { name: 'a', kind: 'boolean', value: true },
    { name: 'b', kind: 'boolean', value: false },
    { name: 'c', kind: 'datetime', value: new Date('2024-01-02T03:04:05.006Z') },
    { name: 'd', kind: 'string', value: null },
    { name: 'e', kind: 'number', value: 1.5 }
  ]), { a: 1, b: 0, c: '2024-01-02T03:04:05.006Z', d: null, e: 1.5 })
  const params: Param[] = [
    { name: 'p1', kind: 'boolean', value: true },
    { name: 'p2', kind: 'datetime', value: new Date('2024-01-02T03:04:05.006Z') },
    { name: 'it"s', kind: 'string', value: 'x' },
    { name: 'id', kind: 'integer', value: 7, type: 'bigint' }
  ]
  const bind = compileBinder(params.map((p) => p.name))
  t.same(bind(params), { p1: 1, p2: '2024-01-02T03:04:05.006Z', 'it"s': 'x', id: 7 }, 'a compiled binder binds as toSqliteParams does')
  t.same(Object.keys(bind(params)), ['p1', 'p2', 'it"s', 'id'], 'quoted names are keys, in order')
  t.same(bind([params[0], params[1], params[3], params[2]]), toSqliteParams(params), 'other names or order: bound the plain way')
  t.same(bind(params.slice(1)), toSqliteParams(params.slice(1)), 'fewer parameters: the plain way')
  t.same(compileBinder([])([]), {})
  t.type(mapSqliteError(Object.assign(new Error('x'), { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' })), ConflictError)
  t.type(mapSqliteError(Object.assign(new Error('x'), { code: 'SQLITE_BUSY_SNAPSHOT' })), DatabaseUnavailableError)
  // faults of the machine, not of the request: 503 with what it is, never a 500 (the log keeps SQLite's words)
  for (const [code, message] of [['SQLITE_FULL', /storage is full/], ['SQLITE_IOERR_WRITE', /could not be read or written \(an I\/O error\)/], ['SQLITE_IOERR', /I\/O error/], ['SQLITE_NOMEM', /I\/O error/], ['SQLITE_CORRUPT', /damaged/], ['SQLITE_NOTADB', /not a SQLite database/]] as const) {
    t.match(mapSqliteError(Object.assign(new Error('disk I/O error'), { code })), { name: 'DatabaseUnavailableError', statusCode: 503, message }, code)
  }
  const other = Object.assign(new Error('x'), { code: 'SQLITE_ERROR' })
  t.equal(mapSqliteError(other), other)
  t.equal(mapSqliteError('str'), 'str')

  t.throws(() => openSqlite(join(dir, 'missing.db'), { create: false }), { name: 'DatabaseUnavailableError', message: /does not exist/ })
  t.throws(() => openDatabase('postgres://x', { logger: silent }), /expected sqlite:<path> or mssql:/)
  const mem = openDatabase('sqlite::memory:', { logger: silent })
  t.equal(mem.dialect, 'sqlite')
  await mem.ping()
  await t.rejects(mem.query({ text: 'SELECT 1 +', params: [] }), { code: 'SQLITE_ERROR' }, 'other errors pass through')
  await t.rejects(mem.query({ text: 'SELECT nope FROM nowhere', params: [] }), { name: 'MappingGoneError', statusCode: 503, detail: 'no such table: nowhere' }, 'a table that is not there: the mapping no longer fits')
  const pair = 'SELECT @a AS a, @b AS b'
  t.same(await mem.query({ text: pair, params: [{ name: 'a', kind: 'integer', value: 1 }, { name: 'b', kind: 'boolean', value: true }] }), [{ a: 1, b: 1 }])
  t.same(await mem.query({ text: pair, params: [{ name: 'b', kind: 'string', value: 'x' }, { name: 'a', kind: 'integer', value: 2 }] }), [{ a: 2, b: 'x' }],
    'the same text with its parameters in another order binds each by its name')
  const queued = mem.query({ text: 'SELECT 42 AS answer', params: [] })
  const closing = mem.close()
  await t.rejects(mem.ping(), { name: 'DatabaseClosedError', statusCode: 503, code: 'DATABASE_UNAVAILABLE' }, 'refused once closing: still a 503, and no outage (a stop)')
  t.same(await queued, [{ answer: 42 }], 'a call queued before close still runs')
  await closing
  await mem.close()
  await t.rejects(mem.ping(), { name: 'DatabaseClosedError' }, 'closed')
})

t.test('the compiled row mapper: fields in order, each through its reader, names kept as data', async (t) => {
  const map = compileMapper<Row>([
    ['id', (raw) => Number(raw), 'id'],
    ['name', (raw) => raw ?? null, 'name'],
    // names that would break out of a hand-written literal stay plain property names
    ['a"b', (raw) => raw, 'a"b'],
    ['}; throw new Error("x"); ({', (raw) => raw, '}; throw new Error("x"); ({'],
    ['line\u2028sep', (raw) => raw, 'line\u2028sep']
  ])
  const out = map({ id: '7', name: undefined, 'a"b': 1, '}; throw new Error("x"); ({': 2, 'line\u2028sep': 3, extra: 'not mapped' })
  t.same(Object.keys(out), ['id', 'name', 'a"b', '}; throw new Error("x"); ({', 'line\u2028sep'])
  t.strictSame(out, { id: 7, name: null, 'a"b': 1, '}; throw new Error("x"); ({': 2, 'line\u2028sep': 3 })
  t.equal(Object.getPrototypeOf(out), Object.prototype)
  t.not(map({ id: 1 }), map({ id: 1 }), 'a new object per row')
  t.throws(() => compileMapper([['__proto__', (raw) => raw, '__proto__']]), /__proto__/)

  // a row of values: each field read by its place
  const byPlace = compileMapper<unknown[]>([['name', (raw) => raw, 1], ['id', (raw) => Number(raw), 0]])
  t.strictSame(byPlace(['3', 'bolt', 'sort value']), { name: 'bolt', id: 3 })
})

t.test('rows read as values (SQLite) and as objects (a driver without queryValues, as SQL Server) give the same results', async (t) => {
  const { db, repo } = await open('shapes.db', 'foreign')
  t.teardown(() => db.close())
  for (const row of fixture) await repo.create(row)
  t.type(db.queryValues, 'function')
  // the same connection, with queryValues hidden, in transactions too
  const objectsOnly = new Proxy(db, {
    get (target, key) {
      if (key === 'queryValues') return undefined
      if (key === 'transaction') return async <T>(fn: (tx: Executor) => Promise<T>) => await target.transaction(async (tx) => await fn({ query: tx.query, execute: tx.execute }))
      const value = Reflect.get(target, key, target) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
  const other = await new Repository(objectsOnly, materials, foreignMapping).learn()

  const walk = async (r: Repository, query: QueryString): Promise<{ rows: Row[], cursors: string[] }> => {
    const rows: Row[] = []
    const cursors: string[] = []
    let cursor: string | undefined
    do {
      const page = await r.list(parseListQuery({ ...query, limit: '2', ...(cursor === undefined ? {} : { cursor }) }, materials))
      rows.push(...page.rows)
      cursor = page.next
      if (cursor !== undefined) cursors.push(cursor)
    } while (cursor !== undefined)
    return { rows, cursors }
  }
  // sort keys whose cursor value is the column, and time text selected after the select list
  for (const sort of ['id', '-weight,name', 'modifiedAt', 'blocked,-modifiedAt', '-modifiedAt,minStock']) {
    const values = await walk(repo, { sort })
    t.equal(values.rows.length, fixture.length, `sort=${sort}: every row`)
    t.ok(values.cursors.length >= 2, `sort=${sort}: several pages`)
    t.strictSame(await walk(other, { sort }), values, `sort=${sort}: the same rows and cursors`)
  }
  const first = await repo.findOne('materialNumber', 'M-2')
  t.equal(first?.name, 'Check valve DN15')
  t.strictSame(await other.findOne('materialNumber', 'M-2'), first)
  t.strictSame(await other.get(first!.id as number), await repo.get(first!.id as number))

  const created = await other.create({ materialNumber: 'O-1', name: 'Made through objects' })
  t.strictSame(await repo.get(created.id as number), created)
  const updated = await other.update(created.id as number, { name: 'Changed through objects' })
  t.equal(updated.name, 'Changed through objects')
  t.strictSame(await repo.get(created.id as number), updated)
  await t.rejects(other.update(999999, { name: 'x' }), { name: 'NotFoundError' })
  t.strictSame(await other.delete(created.id as number), updated)
  t.equal(await repo.get(created.id as number), undefined)
})

t.test('recheck: a path that cannot be looked at (its directory made unreadable) while the open file serves on', async (t) => {
  const fs = await import('node:fs')
  let denied = false
  const statSync: typeof fs.statSync = ((path: string, opts?: object) => {
    if (denied) throw Object.assign(new Error(`EACCES: permission denied, stat '${path}'`), { code: 'EACCES' })
    return fs.statSync(path, opts)
  }) as typeof fs.statSync
  // root may stat anything whatever the modes: the refusal is stood in for
  const { openSqlite: open } = await t.mockImport<typeof import('../../src/db/sqlite.js')>('../../src/db/sqlite.js', { 'node:fs': { ...fs, statSync } })
  const file = join(dir, 'unchecked.db')
  const db = open(file, { create: true })
  t.teardown(() => db.close())
  await db.execute({ text: 'CREATE TABLE t (a INTEGER)', params: [] })
  denied = true
  await t.rejects(db.recheck!(), { name: 'FileUncheckableError', message: /cannot be looked at: EACCES/ }, 'told apart from a file that cannot be opened (whose calls answer 503)')
  await db.execute({ text: 'INSERT INTO t VALUES (1)', params: [] })
  t.same(await db.query({ text: 'SELECT a FROM t', params: [] }), [{ a: 1 }], 'calls go on on the open file')
  denied = false
  t.equal(await db.recheck!(), 'unchanged')
  fs.renameSync(file, `${file}.aside`)
  t.equal(await db.recheck!(), 'missing')
  denied = true
  await t.rejects(db.recheck!(), { code: 'EACCES' }, 'with calls refused (the file gone), the error as it is')
  denied = false
})

t.test('recheck: the -wal and -shm removed, and their commits cannot be written into the file at once (a full disk): the connection stays open, calls are refused, and the next check writes them', async (t) => {
  let failCheckpoint = false
  class Failing extends BetterSqlite3 {
    override pragma (source: string, options?: BetterSqlite3.PragmaOptions): unknown {
      if (failCheckpoint && source.startsWith('wal_checkpoint')) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })
      return super.pragma(source, options)
    }
  }
  const { openSqlite: open } = await t.mockImport<typeof import('../../src/db/sqlite.js')>('../../src/db/sqlite.js', { 'better-sqlite3': Failing })
  const file = join(dir, 'sidecars-full.db')
  const db = open(file, { create: true })
  t.teardown(() => db.close())
  await db.execute({ text: 'CREATE TABLE t (a INTEGER)', params: [] })
  await db.query({ text: 'PRAGMA wal_checkpoint(TRUNCATE)', params: [] })
  t.equal(await db.recheck!(), 'unchanged')
  for (const suffix of ['-wal', '-shm']) rmSync(`${file}${suffix}`)
  await db.execute({ text: 'INSERT INTO t VALUES (1)', params: [] })
  failCheckpoint = true
  await t.rejects(db.recheck!(), /could not be written into the file/)
  await t.rejects(db.query({ text: 'SELECT a FROM t', params: [] }), { name: 'DatabaseUnavailableError' }, 'refused meanwhile: nothing goes on into a -wal only the gateway sees')
  failCheckpoint = false
  t.equal(await db.recheck!(), 'sidecars')
  t.same(readInOtherProcess(file, 'SELECT a FROM t'), [[1]], 'before: the connection was closed with its commit, which was gone')
})

t.test('ids beyond 2^53: only numbers count, not text another program left in an INT PRIMARY KEY (SQLite sorts text above every number)', async (t) => {
  const db = openDatabase('sqlite::memory:', { logger: silent })
  t.teardown(() => db.close())
  await db.execute({ text: 'CREATE TABLE "H" ("id" INT PRIMARY KEY, "n" TEXT)', params: [] })
  await db.execute({ text: "INSERT INTO \"H\" VALUES (1, 'a'), ('G-7', 'b'), (x'01', 'c')", params: [] })
  const mapping = { table: 'H', columns: { id: 'id' } } as unknown as TableMapping
  const wide = async (): Promise<boolean | undefined> => (await db.columns(mapping)).find((c) => c.name === 'id')?.wideValues
  t.equal(await wide(), undefined, 'text and a BLOB are no id beyond 2^53')
  await db.execute({ text: "INSERT INTO \"H\" VALUES (9007199254740993, 'd')", params: [] })
  t.equal(await wide(), true, 'a number beyond it is')
  await db.execute({ text: 'DELETE FROM "H" WHERE "id" = 9007199254740993', params: [] })
  await db.execute({ text: "INSERT INTO \"H\" VALUES (-9007199254740993, 'e')", params: [] })
  t.equal(await wide(), true, 'and one below its negative')
})

t.test('a unique index in another collation than its column declares: the column says which (ids compare as the index does)', async (t) => {
  t.equal(declaredCollation('CREATE TABLE "A" ("Nr" TEXT COLLATE NOCASE NOT NULL, b TEXT)', 'nr'), 'NOCASE')
  t.equal(declaredCollation('CREATE TABLE A([my col] varchar(10) collate "rtrim", x DECIMAL(10, 2) COLLATE nocase)', 'my col'), 'RTRIM')
  t.equal(declaredCollation('CREATE TABLE A(a, x DECIMAL(10, 2) COLLATE nocase)', 'x'), 'NOCASE', 'past the comma in parentheses')
  t.equal(declaredCollation('CREATE TABLE A(a TEXT DEFAULT \'x, y COLLATE nocase\', y TEXT)', 'y'), 'BINARY', 'not from a quoted default')
  t.equal(declaredCollation('CREATE TABLE A(a, x, PRIMARY KEY(a COLLATE nocase))', 'a'), 'BINARY', 'SQLite\'s default where the column declares none')
  const db = openDatabase('sqlite::memory:', { logger: silent })
  t.teardown(() => db.close())
  await db.execute({ text: 'CREATE TABLE "C" ("a" TEXT COLLATE NOCASE UNIQUE, "b" TEXT COLLATE NOCASE, "c" TEXT UNIQUE, "d" TEXT)', params: [] })
  await db.execute({ text: 'CREATE UNIQUE INDEX "ix_b" ON "C" ("b" COLLATE BINARY)', params: [] })
  await db.execute({ text: 'CREATE UNIQUE INDEX "ix_d" ON "C" ("d" COLLATE NOCASE)', params: [] })
  const columns = await db.columns({ table: 'C', columns: {} } as unknown as TableMapping)
  t.same(columns.map((c) => [c.name, c.unique, c.uniqueCollation]), [['a', true, undefined], ['b', true, 'BINARY'], ['c', true, undefined], ['d', true, 'NOCASE']])
})

t.test('the collation a column declares, from DDL with comments, quoted names with parentheses or commas, and COLLATE inside a CHECK, DEFAULT or generated expression', async (t) => {
  // before: the first '(' (the table name's) began the column list, a comment's apostrophe or comma split it, and any COLLATE in the definition counted
  t.equal(declaredCollation('CREATE TABLE Art ( -- articles (per client)\n  "Nr" TEXT COLLATE NOCASE, b TEXT)', 'Nr'), 'NOCASE', 'after a comment')
  t.equal(declaredCollation('CREATE TABLE Art (a TEXT, -- the client\'s own number\n "Nr" TEXT COLLATE NOCASE)', 'Nr'), 'NOCASE', 'after a comment with an apostrophe')
  t.equal(declaredCollation('CREATE TABLE Art (/* a, b ( */ "Nr" TEXT COLLATE NOCASE)', 'Nr'), 'NOCASE', 'after a block comment')
  t.equal(declaredCollation('CREATE TABLE "Art(1,2)" ("Nr" TEXT COLLATE NOCASE, b TEXT)', 'Nr'), 'NOCASE', 'a quoted table name with parentheses')
  t.equal(declaredCollation('CREATE TABLE [Art(x] ("Nr" TEXT COLLATE NOCASE, b TEXT)', 'Nr'), 'NOCASE', 'a bracketed one')
  t.equal(declaredCollation('CREATE TABLE Art(Nr TEXT COLLATE"NOCASE", b TEXT)', 'Nr'), 'NOCASE', 'a quoted collation without a blank')
  t.equal(declaredCollation('CREATE TABLE Art (Nr TEXT CHECK (Nr <> \'x\' COLLATE NOCASE), b TEXT)', 'Nr'), 'BINARY', 'not from a CHECK')
  t.equal(declaredCollation('CREATE TABLE Art (Nr TEXT GENERATED ALWAYS AS (lower(b) COLLATE NOCASE) STORED, b TEXT)', 'Nr'), 'BINARY', 'not from a generated column\'s expression')
  t.equal(declaredCollation('CREATE TABLE Art (Nr TEXT DEFAULT (\'a\' COLLATE NOCASE) COLLATE RTRIM)', 'Nr'), 'RTRIM', 'its own past a DEFAULT\'s')
  t.equal(declaredCollation('CREATE TABLE Art (Nr TEXT CONSTRAINT "c COLLATE NOCASE" NOT NULL)', 'Nr'), 'BINARY', 'not from a constraint name')
  const db = openDatabase('sqlite::memory:', { logger: silent })
  t.teardown(() => db.close())
  for (const ddl of ['CREATE TABLE "K" ( -- article master\n "Nr" TEXT COLLATE NOCASE NOT NULL, "Bez" TEXT)', 'CREATE TABLE "K" ("Nr" TEXT NOT NULL CHECK ("Nr" <> \'\' COLLATE NOCASE), "Bez" TEXT)']) {
    await db.execute({ text: 'DROP TABLE IF EXISTS "K"', params: [] })
    await db.execute({ text: ddl, params: [] })
    await db.execute({ text: 'CREATE UNIQUE INDEX "ix_K" ON "K" ("Nr" COLLATE BINARY)', params: [] })
    await db.execute({ text: 'INSERT INTO "K" VALUES (\'a\', \'klein\'), (\'A\', \'gross\')', params: [] })
    // as SQLite itself compares the column ('a' = 'A' under NOCASE)
    const [own] = await db.query({ text: 'SELECT COUNT(*) AS n FROM "K" WHERE "Nr" = \'a\'', params: [] })
    const info = (await db.columns({ table: 'K', columns: {} } as unknown as TableMapping)).find((c) => c.name === 'Nr')
    t.equal(info?.uniqueCollation, Number(own?.n) === 2 ? 'BINARY' : undefined, `${ddl}: compared as the index does where the column compares otherwise`)
  }
})
