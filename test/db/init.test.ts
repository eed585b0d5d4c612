// db init and the demo data: tables created idempotently, demo data deterministic, plausible and fast to seed.
import { join } from 'node:path'
import t from 'tap'
import { demoMaterials, demoStations, ean13CheckDigit, prng, seedDemoData } from '../../src/db/demo-data.js'
import { createReferenceTables } from '../../src/db/init.js'
import { mappingFit } from '../../src/db/storage.js'
import { parseListQuery } from '../../src/db/list-query.js'
import { Repository } from '../../src/db/repository.js'
import { materials, referenceMappings, resources, stations, users, type ResourceName } from '../../src/db/resources.js'
import { openSqlite } from '../../src/db/sqlite.js'
import { initDatabase } from '../../src/bootstrap.js'
import { ConflictError } from '../../src/db/errors.js'
import type { Database, Executor, Statement } from '../../src/db/types.js'
import { tempDir } from '../helpers/temp.js'

const dir = tempDir(t, 'pg-init-')

const NOW = new Date('2025-06-01T12:00:00.000Z')

/** EAN-13 validity computed the other way round: weights 3,1,3,… from the right over all 13 digits must sum to a multiple of 10. */
function validEan13 (code: string): boolean {
  if (!/^\d{13}$/.test(code)) return false
  let sum = 0
  for (let i = 0; i < 13; i++) sum += Number(code[12 - i]) * (i % 2 === 0 ? 1 : 3)
  return sum % 10 === 0
}

t.test('ean13CheckDigit', async (t) => {
  t.equal(ean13CheckDigit('400638133393'), 1)
  t.equal(ean13CheckDigit('590123412345'), 7)
  t.equal(ean13CheckDigit('000000000000'), 0)
  t.ok(validEan13('4006381333931'))
  t.notOk(validEan13('4006381333932'))
  t.throws(() => ean13CheckDigit('123'), /12 digits/)
})

t.test('prng is deterministic per seed', async (t) => {
  const a = prng(1)
  const b = prng(1)
  const c = prng(2)
  const xs = [a(), a(), a()]
  t.same([b(), b(), b()], xs)
  t.notSame([c(), c(), c()], xs)
  t.ok(xs.every((x) => x >= 0 && x < 1))
})

t.test('demo materials', async (t) => {
  const rows = demoMaterials({ now: NOW })
  t.equal(rows.length, 1200)
  t.same(demoMaterials({ now: NOW }), rows, 'same seed and time: identical')
  t.notSame(demoMaterials({ now: NOW, seed: 7 }).map((r) => r.name), rows.map((r) => r.name), 'another seed: other data')
  t.equal(demoMaterials({ now: NOW, count: 3 }).length, 3)

  const numbers = rows.map((r) => r.materialNumber as string)
  t.equal(new Set(numbers).size, 1200, 'material numbers are unique')
  t.ok(numbers.every((n) => /^M-1\d{5}$/.test(n)), 'numbers like M-100042')
  const barcodes = rows.map((r) => r.barcode).filter((b) => b !== null) as string[]
  t.ok(barcodes.length > 1000 && barcodes.length < 1200, `most have a barcode (${barcodes.length})`)
  t.ok(barcodes.every(validEan13), 'every barcode is a valid EAN-13')
  t.same(new Set(rows.map((r) => r.unit)), new Set(['pcs', 'kg', 'm', 'l', 'box']), 'every unit appears')
  t.ok(rows.every((r) => (r.minStock as number) <= (r.maxStock as number)))
  t.ok(rows.every((r) => typeof r.stockQuantity === 'number' && r.stockQuantity >= 0))
  const blocked = rows.filter((r) => r.blocked === true)
  t.ok(blocked.length > 5 && blocked.length < 60, `a few blocked (${blocked.length})`)
  t.ok(blocked.every((r) => typeof r.blockReason === 'string' && r.blockReason.length > 0), 'blocked ones say why')
  t.ok(rows.filter((r) => r.blocked === false).every((r) => r.blockReason === null))
  const monthAgo = NOW.getTime() - 30 * 86400000
  t.ok(rows.every((r) => {
    const created = (r.createdAt as Date).getTime()
    const modified = (r.modifiedAt as Date).getTime()
    return created <= monthAgo && created <= modified && modified <= NOW.getTime()
  }), 'created at least a month ago, modified since, never in the future')
  const months = new Set(rows.map((r) => (r.modifiedAt as Date).toISOString().slice(0, 7)))
  t.ok(months.size >= 6, `modifications spread over months (${months.size})`)
  const names = rows.map((r) => r.name as string)
  for (const word of ['valve', 'bearing', 'Cable', 'gloves', 'bolt']) t.ok(names.some((n) => n.includes(word)), `some ${word}`)
  t.ok(new Set(names).size > 400, 'varied names')
})

t.test('demo stations', async (t) => {
  const rows = demoStations({ now: NOW })
  t.equal(rows.length, 8)
  t.same(new Set(rows.map((r) => r.type)), new Set(['vlm', 'carousel', 'ptl', 'manual']))
  t.equal(rows.filter((r) => r.enabled === false).length, 1, 'one disabled')
  for (const ctl of ['ctl-1', 'ctl-2']) {
    const addresses = rows.filter((r) => r.controllerId === ctl).map((r) => r.address).sort()
    t.ok(addresses.length >= 2, `${ctl} drives several stations`)
    t.same(addresses, Array.from({ length: addresses.length }, (_, i) => i + 1), `${ctl}: addresses 1..n`)
  }
  t.equal(new Set(rows.map((r) => r.name)).size, 8)
})

t.test('createReferenceTables and seedDemoData on SQLite', async (t) => {
  const db = openSqlite(join(dir, 'demo.db'), { create: true })
  t.teardown(() => db.close())
  await createReferenceTables(db, referenceMappings)
  await createReferenceTables(db, referenceMappings)
  for (const name of Object.keys(resources) as ResourceName[]) {
    t.same((await mappingFit(db, resources[name], referenceMappings[name])).problems, [], `${name} table fits its mapping`)
  }
  const started = Date.now()
  t.same(await seedDemoData(db, referenceMappings, { now: NOW }), { materials: 1200, stations: 8 })
  t.ok(Date.now() - started < 3000, `seeded in ${Date.now() - started} ms`)

  const mats = new Repository(db, materials, referenceMappings.materials)
  const stas = new Repository(db, stations, referenceMappings.stations)
  t.equal(await mats.count(), 1200)
  t.equal(await stas.count(), 8)
  const expected = demoMaterials({ now: NOW })[0]
  const first = await mats.findOne('materialNumber', expected.materialNumber)
  t.same(first, {
    id: 1,
    ...expected,
    createdAt: (expected.createdAt as Date).toISOString(),
    modifiedAt: (expected.modifiedAt as Date).toISOString()
  }, 'stored as generated, read back in API shape')
  t.ok((await mats.list(parseListQuery({ name: '[like]valve', count: 'true' }, materials))).total! > 10)
  t.equal((await stas.list(parseListQuery({ enabled: 'false' }, stations))).rows.length, 1)

  await t.rejects(seedDemoData(db, referenceMappings, { now: NOW }), { name: 'ConflictError' }, 'seeding twice hits the unique key')
  t.equal(await mats.count(), 1200, 'and the whole second seed rolled back')
})

t.test('db init stopped between a table and its index: neither is left, and the next db init creates both', async (t) => {
  const db = openSqlite(join(dir, 'index-cut.db'), { create: true })
  t.teardown(() => db.close())
  // the stop (a SIGTERM, a dropped connection) as the statement after CREATE TABLE fails
  const cut = (stmt: Statement): void => { if (/^CREATE INDEX/.test(stmt.text)) throw new Error('stopped') }
  const stopping = new Proxy(db, {
    get (target, prop) {
      if (prop === 'execute') return async (stmt: Statement) => { cut(stmt); return await target.execute(stmt) }
      if (prop === 'transaction') {
        return async <T>(fn: (tx: Executor) => Promise<T>) => await target.transaction(async (tx) =>
          await fn({ ...tx, query: tx.query.bind(tx), queryValues: tx.queryValues?.bind(tx), execute: async (stmt: Statement) => { cut(stmt); return await tx.execute(stmt) } }))
      }
      const value = Reflect.get(target, prop) as unknown
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
    }
  }) as Database
  await t.rejects(createReferenceTables(stopping, referenceMappings), { message: 'stopped' })
  const objects = async () => (await db.query({ text: "SELECT type AS type, name AS name FROM sqlite_schema WHERE tbl_name = 'materials' AND name NOT LIKE 'sqlite_%' ORDER BY type, name", params: [] })).map((r) => `${String(r.type)} ${String(r.name)}`)
  // before: the table stayed without its index, and db init, finding the table there, never added it
  t.same(await objects(), [], 'no materials table without its index')
  await createReferenceTables(db, referenceMappings)
  t.same(await objects(), ['index IX_materials_modified_at', 'table materials'])
})

t.test('the users table keeps internal fields', async (t) => {
  const db = openSqlite(join(dir, 'users.db'), { create: true })
  t.teardown(() => db.close())
  await createReferenceTables(db, referenceMappings)
  const repo = new Repository(db, users, referenceMappings.users)
  const user = await repo.create({ username: 'admin', passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$x$y', type: 'admin' })
  t.match(user, { username: 'admin', passwordHash: /^\$argon2id\$/, type: 'admin', enabled: true, tokenVersion: 0, lastLoginAt: null, displayName: null })
  const login = new Date('2025-01-02T03:04:05.678Z')
  const after = await repo.update(user.id as number, { lastLoginAt: login, tokenVersion: 3 }, { touch: false })
  t.match(after, { lastLoginAt: '2025-01-02T03:04:05.678Z', tokenVersion: 3, modifiedAt: user.modifiedAt })
  t.same(await repo.findOne('username', 'admin'), after)
  await t.rejects(repo.create({ username: 'admin', passwordHash: 'x' }), { name: 'ConflictError', message: "username 'admin' already exists" })
  await t.rejects(async () => repo.list(parseListQuery({ passwordHash: 'x' }, users)), { message: "Unknown query parameter 'passwordHash'" })
})

t.test('PICKING_GATEWAY_ADMIN_PASSWORD follows the API\'s password rule: 8 to 1024 characters as it counts them', async (t) => {
  const init = async (name: string, adminPassword: string) => {
    const db = openSqlite(join(dir, name), { create: true })
    t.teardown(() => db.close())
    return await initDatabase(db, { demo: false, mappings: referenceMappings, argon2: { memoryCost: 1024, timeCost: 1, parallelism: 1 }, adminPassword, print: () => {} })
  }
  await t.rejects(init('short.db', 'seven77'), { message: 'PICKING_GATEWAY_ADMIN_PASSWORD must be 8 to 1024 characters long, got 7' })
  // before: stored, and no login could ever send it (the API takes at most 1024)
  await t.rejects(init('long.db', 'x'.repeat(1025)), { message: 'PICKING_GATEWAY_ADMIN_PASSWORD must be 8 to 1024 characters long, got 1025' })
  await t.rejects(init('emoji.db', '🔑🔑🔑🔑'), { message: /got 4$/ }, 'four emoji are four characters, as the API counts')
  await init('ok.db', '🔑'.repeat(8))
})

t.test('db init run on two hosts at once: one creates the admin and seeds, the other finds them there and succeeds too', async (t) => {
  // before: the second failed (exit 1) with "username 'admin' already exists" or a unique-key error of the demo data
  for (let round = 0; round < 3; round++) {
    const path = join(dir, `twice-${round}.db`)
    const first = openSqlite(path, { create: true })
    t.teardown(() => first.close())
    await createReferenceTables(first, referenceMappings)
    const second = openSqlite(path, { create: false })
    t.teardown(() => second.close())
    const printed: string[] = []
    const init = async (db: typeof first) => await initDatabase(db, { demo: true, mappings: referenceMappings, argon2: { memoryCost: 1024, timeCost: 1, parallelism: 1 }, print: (line) => { printed.push(line) } })
    const results = await Promise.all([init(first), init(second)])
    t.same(results.map((r) => r.adminCreated).sort(), [false, true], 'one admin created')
    t.equal(results.filter((r) => r.seeded).length, 1, 'seeded once')
    t.equal(printed.filter((line) => line.includes('Created user "admin"')).length, 1, 'one password printed: the one that is stored')
    t.equal(await new Repository(first, users, referenceMappings.users).count(), 1)
    t.equal(await new Repository(first, materials, referenceMappings.materials).count(), 1200)
    t.equal(await new Repository(first, stations, referenceMappings.stations).count(), 8)
  }
  // the user table already filled (a first db init without --demo): both go straight to the demo data
  const path = join(dir, 'twice-seed.db')
  const first = openSqlite(path, { create: true })
  t.teardown(() => first.close())
  await createReferenceTables(first, referenceMappings)
  await new Repository(first, users, referenceMappings.users).create({ username: 'admin', passwordHash: 'x', type: 'admin' })
  const second = openSqlite(path, { create: false })
  t.teardown(() => second.close())
  const init = async (db: typeof first) => await initDatabase(db, { demo: true, mappings: referenceMappings, argon2: { memoryCost: 1024, timeCost: 1, parallelism: 1 }, print: () => {} })
  const results = await Promise.all([init(first), init(second)])
  t.same(results.map((r) => r.seeded).sort(), [false, true], 'seeded once, and the other one succeeds')
  t.equal(await new Repository(first, materials, referenceMappings.materials).count(), 1200)
})

t.test('db init: a unique key that refuses the admin in an empty user table (a trigger\'s history row) is an error, not an admin another run created', async (t) => {
  const path = join(dir, 'refused-admin.db')
  const db = openSqlite(path, { create: true })
  t.teardown(() => db.close())
  await createReferenceTables(db, referenceMappings)
  // an audit trigger whose history table already holds the row it writes
  await db.execute({ text: 'CREATE TABLE user_audit (what TEXT UNIQUE)', params: [] })
  await db.execute({ text: "INSERT INTO user_audit VALUES ('created')", params: [] })
  await db.execute({ text: `CREATE TRIGGER user_audit_insert AFTER INSERT ON ${referenceMappings.users.table} BEGIN INSERT INTO user_audit VALUES ('created'); END`, params: [] })
  const init = initDatabase(db, { demo: false, mappings: referenceMappings, argon2: { memoryCost: 1024, timeCost: 1, parallelism: 1 }, print: () => {} })
  await t.rejects(init, ConflictError, "before: resolved { adminCreated: false }, which db init reports as 'The user table is not empty: no admin created.', with no user at all")
  t.equal(await new Repository(db, users, referenceMappings.users).count(), 0)
})
