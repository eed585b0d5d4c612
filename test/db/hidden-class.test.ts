// The objects a request builds keep one hidden class from request to request. On Node 20 (V8 11),
// a `{...x}` clone that then gains a key can get a hidden class of its own (as V8's inline caches
// happen to stand; seen in the benchmark, not reproducible on demand): every access to it is
// megamorphic and its map is old-space garbage (creates ran at 0.75-0.82 of the naive baseline
// for it, README "Performance"). V8's own %HaveSameMap tells; the flag only lets this file call it.
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import t from 'tap'
import { stationView } from '../../plugins/routes/stations.js'
import type { Hardware } from '../../plugins/hardware.js'
import { openDatabase } from '../../src/db/index.js'
import { createReferenceTables } from '../../src/db/init.js'
import { parseListQuery } from '../../src/db/list-query.js'
import { Repository } from '../../src/db/repository.js'
import { materials, referenceMappings } from '../../src/db/resources.js'
import type { Row } from '../../src/db/types.js'
import { tempDir } from '../helpers/temp.js'

setFlagsFromString('--allow-natives-syntax')
// compiled after the flag is set, so V8 parses the intrinsic
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean

const dir = tempDir(t, 'pg-hidden-class-')
const silent = { info () {}, warn () {}, error () {} }

t.test('the check itself tells two hidden classes apart, and copies made by Object.assign share one', async (t) => {
  // what the rule guards against, so a pass below means something on this Node
  const make = (spread: boolean, n: number): Row => {
    const source: Row = JSON.parse(`{"materialNumber":"M-${n}","name":"n${n}"}`)
    const copy: Row = spread ? { ...source } : Object.assign({}, source)
    copy.createdAt = n
    return copy
  }
  t.ok(sameMap(make(false, 1), make(false, 2)), 'Object.assign copies share one')
  t.notOk(sameMap(JSON.parse('{"a":1,"b":2}'), JSON.parse('{"b":2,"a":1}')), 'objects of another shape: told apart')
  // what V8 11 does to spread clones depends on its inline caches' state (it failed once under a loaded
  // full run): reported, not asserted; the tests below assert the gateway's own objects instead
  t.comment(`spread clones that gained a key share a hidden class here: ${String(sameMap(make(true, 1), make(true, 2)))}`)
})

t.test('a create works on rows of one hidden class', async (t) => {
  const db = openDatabase(`sqlite:${join(dir, 'create.db')}`, { create: true, logger: silent })
  t.teardown(() => db.close())
  await createReferenceTables(db, referenceMappings)
  const repo = await new Repository(db, materials, referenceMappings.materials).learn()
  const seen: Row[] = []
  const input = (repo as unknown as { input: (values: Row) => unknown }).input.bind(repo)
  ;(repo as unknown as { input: (values: Row) => unknown }).input = (values: Row) => { seen.push(values); return input(values) }
  for (let n = 1; n <= 3; n++) {
    // a request body as Fastify hands it over (parsed JSON)
    await repo.create(JSON.parse(`{"materialNumber":"HC-${n}","name":"Hidden class ${n}","weight":${n}}`))
  }
  t.equal(seen.length, 3, 'three creates')
  t.ok(sameMap(seen[1], seen[2]), 'the second and third create: one hidden class')
  t.equal(seen[2].unit, undefined, 'no API default where the column has its own (the reference table: DEFAULT \'pcs\')')
  t.ok(seen[2].createdAt instanceof Date, 'and the time stamps')
})

t.test('list statements are built from queries of one hidden class', async (t) => {
  const db = openDatabase(`sqlite:${join(dir, 'list.db')}`, { create: true, logger: silent })
  t.teardown(() => db.close())
  await createReferenceTables(db, referenceMappings)
  const repo = await new Repository(db, materials, referenceMappings.materials).learn()
  for (let n = 1; n <= 5; n++) await repo.create({ materialNumber: `L-${n}`, name: `List ${n}` })
  const queries: object[] = []
  const list = repo.sql.list.bind(repo.sql)
  repo.sql.list = (q) => { queries.push(q); return list(q) }
  let cursor: string | undefined
  for (let page = 0; page < 3; page++) {
    const result = await repo.list(parseListQuery({ limit: '2', ...(cursor !== undefined && { cursor }) }, materials))
    cursor = result.next ?? undefined
  }
  t.equal(queries.length, 3, 'three pages')
  t.ok(sameMap(queries[1], queries[2]), 'two pages by cursor: one hidden class')
  // the usual poll: a filter, no cursor (the query has no `after` of its own)
  await repo.list(parseListQuery({ limit: '2', id: '[gt]1' }, materials))
  await repo.list(parseListQuery({ limit: '2', id: '[gt]2' }, materials))
  t.equal(queries.length, 5, 'two more pages')
  t.ok(sameMap(queries[3], queries[4]), 'two filtered pages: one hidden class')
})

t.test('station views share one hidden class', async (t) => {
  const hardware = { stationState: () => ({ status: 'idle', lastSeenAt: null }) } as unknown as Hardware
  const view = stationView(hardware)
  const row = (n: number): Row => ({ id: n, name: `S${n}`, type: 'pickToLight', host: 'h', port: 4000 + n, enabled: true, createdAt: 'a', modifiedAt: 'b' })
  const a = view(row(1))
  const b = view(row(2))
  t.ok(sameMap(a, b), 'two stations: one hidden class')
  t.equal(a.status, 'idle', 'with the live fields')
})
