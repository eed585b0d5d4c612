// A model of an ERP's incremental sync (README, "Incremental sync"): random API writes, writes of the picking system behind
// the gateway's back (stamped with its own clock, in its column's form) and the pages of a sync, interleaved; after a last
// sync the ERP's copy holds every row of the table as it is now, whatever the modified-time column's kind.
import BetterSqlite3 from 'better-sqlite3'
import fc from 'fast-check'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { sqlitePath } from '../../src/db/index.js'
import { referenceMappings } from '../../src/db/resources.js'
import type { TableMappingConfig } from '../../schemas/config.js'
import type { Database } from '../../src/db/types.js'
import { build } from '../helpers/build.js'
import { narrowMaterials } from '../helpers/legacy-fixture.js'
import { PROPERTY_TEST, checkProperty, stat } from '../helpers/legacy-properties.js'

// ---- the clock: the gateway's and the picking system's, moved on by the model's ticks ----

// Date.now() and new Date() of the gateway (its stamps, serverTime, tokens) read the real clock plus `offset`: a run can
// start just before a DST change, and a tick passes a second without waiting for it. The picking system's writes read
// the same clock (its CURRENT_TIMESTAMP is strftime(…, <that clock>, 'unixepoch')), as NTP keeps both in step.
const RealDate = Date
let offset = 0
class ClockDate extends RealDate {
  constructor (...args: unknown[]) {
    if (args.length === 0) super(RealDate.now() + offset)
    else super(...(args as [string]))
  }

  static override now (): number { return RealDate.now() + offset }
}

// ---- the modified-time column's kinds ----

/** how the picking system writes its stamp: CURRENT_TIMESTAMP's text, ISO 8601 with a T (whole seconds), Unix seconds, digits */
type Form = 'text' | 'iso' | 'unix' | 'digits' | 'digitsText'

interface Kind {
  /** undefined: the demo's reference table */
  type?: string
  format?: 'yyyy-mm-dd hh:mm:ss' | 'unix' | 'yyyymmddhhmmss'
  zone?: string
  form: Form
}

const ZONE = 'Europe/Berlin'

const kindArb: fc.Arbitrary<Kind> = fc.oneof(
  fc.constant<Kind>({ form: 'text' }),
  fc.record({ type: fc.constantFrom('DATETIME', 'TEXT'), zone: fc.constantFrom(undefined, ZONE), form: fc.constant<Form>('text') }),
  fc.record({ type: fc.constant('TEXT'), zone: fc.constantFrom(undefined, ZONE), form: fc.constant<Form>('iso') }),
  fc.record({ type: fc.constantFrom('DATETIME', 'TEXT'), format: fc.constant('yyyy-mm-dd hh:mm:ss' as const), zone: fc.constantFrom(undefined, ZONE), form: fc.constant<Form>('text') }),
  fc.record({ type: fc.constant('INTEGER'), format: fc.constant('unix' as const), form: fc.constant<Form>('unix') }),
  fc.record({ type: fc.constant('BIGINT'), format: fc.constant('yyyymmddhhmmss' as const), zone: fc.constantFrom(undefined, ZONE), form: fc.constant<Form>('digits') }),
  fc.record({ type: fc.constant('CHAR(14)'), format: fc.constant('yyyymmddhhmmss' as const), zone: fc.constantFrom(undefined, ZONE), form: fc.constant<Form>('digitsText') })
).map((k) => JSON.parse(JSON.stringify(k)) as Kind)

/** where a run's clock starts: now, or a few seconds before Berlin's clocks change (the autumn's hour comes twice) */
const STARTS = [
  undefined,
  '2026-10-25T01:00:00.000Z', // 03:00 CEST becomes 02:00 CET: the repeated hour's second occurrence begins
  '2026-10-25T00:00:00.000Z', // 02:00 CEST: the repeated hour's first occurrence begins
  '2026-10-25T02:00:00.000Z', // 03:00 CET: after the repeated hour
  '2026-03-29T01:00:00.000Z' // 02:00 CET becomes 03:00 CEST
]

const wallText = (ms: number, zone: string): string =>
  new RealDate(ms).toLocaleString('sv-SE', { timeZone: zone, hourCycle: 'h23' })

/** SQL for the picking system's stamp at its clock `ms`, and its parameters */
function stampSql (kind: Kind, ms: number, fraction = false): { sql: string, params: unknown[] } {
  const seconds = ms / 1000
  // another of its programs writes its time text with milliseconds
  const milli = fraction ? `.${String(ms % 1000).padStart(3, '0')}` : ''
  if (kind.zone !== undefined) {
    // a local clock: the picking system's own time text (GETDATE() of a Windows server in Berlin)
    const wall = wallText(ms, kind.zone)
    switch (kind.form) {
      case 'text': return { sql: '?', params: [wall + milli] }
      case 'iso': return { sql: '?', params: [wall.replace(' ', 'T') + milli] }
      case 'digits': return { sql: '?', params: [Number(wall.replace(/\D/g, ''))] }
      default: return { sql: '?', params: [wall.replace(/\D/g, '')] }
    }
  }
  switch (kind.form) {
    case 'text': return { sql: fraction ? "strftime('%Y-%m-%d %H:%M:%f', ?, 'unixepoch')" : "strftime('%Y-%m-%d %H:%M:%S', ?, 'unixepoch')", params: [seconds] }
    case 'iso': return { sql: fraction ? "strftime('%Y-%m-%dT%H:%M:%f', ?, 'unixepoch')" : "strftime('%Y-%m-%dT%H:%M:%S', ?, 'unixepoch')", params: [seconds] }
    case 'unix': return { sql: "CAST(strftime('%s', ?, 'unixepoch') AS INTEGER)", params: [seconds] }
    case 'digits': return { sql: "CAST(strftime('%Y%m%d%H%M%S', ?, 'unixepoch') AS INTEGER)", params: [seconds] }
    default: return { sql: "strftime('%Y%m%d%H%M%S', ?, 'unixepoch')", params: [seconds] }
  }
}

const TABLE = 'Art'

function mappingOf (kind: Kind): TableMappingConfig {
  if (kind.type === undefined) return referenceMappings.materials
  const modifiedAt = kind.format === undefined ? 'Geaendert' : { column: 'Geaendert', format: kind.format }
  return { ...narrowMaterials(TABLE, { id: 'ArtID', materialNumber: 'ArtNr', name: 'Bez', modifiedAt } as unknown as Record<string, string>), ...(kind.zone === undefined ? {} : { timeZone: kind.zone }) }
}

const tableOf = (kind: Kind): { table: string, id: string, number: string, name: string, modified: string } => kind.type === undefined
  ? { table: 'materials', id: 'id', number: 'material_number', name: 'name', modified: 'modified_at' }
  : { table: TABLE, id: 'ArtID', number: 'ArtNr', name: 'Bez', modified: 'Geaendert' }

// ---- the model's steps ----

type Step =
  | { op: 'create', name: string, wait: Wait }
  | { op: 'update', pick: number, name: string, wait: Wait }
  | { op: 'delete', pick: number, wait: Wait }
  | { op: 'outsideInsert', name: string, fraction: boolean }
  | { op: 'outsideUpdate', pick: number, name: string, fraction: boolean }
  | { op: 'page', limit: number, sort: string }
  | { op: 'tick', ms: number }
  | { op: 'outsideBegin' }
  | { op: 'outsideCommit' }

// a new run's order: the README's sort=modifiedAt mostly; any order is to lose nothing (an updated row moves, and the next run brings it)
const SORTS = fc.constantFrom('sort=modifiedAt', 'sort=modifiedAt', 'sort=modifiedAt', 'sort=-modifiedAt', 'sort=id', 'sort=name', '')
// now and then a time text with milliseconds (another of the picking system's programs), in a column of whole seconds too
const FRACTION = fc.constantFrom(false, false, false, true)
const nameArb = fc.constantFrom('a', 'b', 'c', 'd')
/** what happens while an API write waits for the picking system's transaction: time passes, and pages of the sync may be read */
interface Wait { ms: number, pages: number, limit: number }
const waitArb: fc.Arbitrary<Wait> = fc.record({ ms: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3000 })), pages: fc.nat({ max: 5 }), limit: fc.integer({ min: 1, max: 4 }) })

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('create' as const), name: nameArb, wait: waitArb }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('update' as const), pick: fc.nat(), name: nameArb, wait: waitArb }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('delete' as const), pick: fc.nat(), wait: waitArb }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('outsideInsert' as const), name: nameArb, fraction: FRACTION }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('outsideUpdate' as const), pick: fc.nat(), name: nameArb, fraction: FRACTION }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('page' as const), limit: fc.integer({ min: 1, max: 4 }), sort: SORTS }), weight: 5 },
  // mostly within the second: a page right after a write in the same second is the case whole-second columns meet
  { arbitrary: fc.record({ op: fc.constant('tick' as const), ms: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 300, max: 2500 })) }), weight: 2 },
  // the picking system's writes in a transaction it commits a moment later (within commitLagMs, as the README requires)
  { arbitrary: fc.constant({ op: 'outsideBegin' as const }), weight: 2 },
  { arbitrary: fc.constant({ op: 'outsideCommit' as const }), weight: 1 }
)

interface Run { kind: Kind, start: string | undefined, startJitter: number, commitLagMs: number | undefined, steps: Step[], lastLimit: number }

const runArb: fc.Arbitrary<Run> = fc.record({
  kind: kindArb,
  start: fc.constantFrom(...STARTS),
  startJitter: fc.integer({ min: 0, max: 4000 }),
  commitLagMs: fc.constantFrom(undefined, 3000),
  steps: fc.array(stepArb, { minLength: 5, maxLength: 40 }),
  lastLimit: fc.integer({ min: 1, max: 4 })
})

interface Material { id: number, [field: string]: unknown }
interface Page { data: Material[], meta: { next?: string, serverTime: string } }

async function syncModel (t: Test, run: Run): Promise<void> {
  const { kind } = run
  const cols = tableOf(kind)
  offset = run.start === undefined || kind.zone === undefined ? 0 : RealDate.parse(run.start) - run.startJitter - RealDate.now()
  const log: string[] = [`kind ${JSON.stringify(kind)}, clock from ${new RealDate(RealDate.now() + offset).toISOString()}`]
  const fail = (what: string): never => { throw new Error(`${what}\n${log.join('\n')}`) }
  const seeds = 3
  stat(`kind ${kind.type ?? 'reference'}${kind.format === undefined ? '' : ` ${kind.format}`}${kind.zone === undefined ? '' : ' local'} ${kind.form}${offset === 0 ? '' : ` from ${String(run.start)}`}`)
  const ctx = await build(t, { mapping: { materials: { ...mappingOf(kind), ...(run.commitLagMs === undefined ? {} : { commitLagMs: run.commitLagMs }) } } }, kind.type === undefined
    ? undefined
    : async (db: Database) => {
      await db.execute({ text: `CREATE TABLE "${TABLE}" ("ArtID" INTEGER PRIMARY KEY, "ArtNr" VARCHAR(20) NOT NULL UNIQUE, "Bez" VARCHAR(40) NOT NULL, "Geaendert" ${kind.type})`, params: [] })
      // the rows the picking system wrote an hour ago, in its column's form (ISO 8601 text: so the gateway writes that form too)
      for (let i = 1; i <= seeds; i++) {
        const stamp = stampSql(kind, Date.now() - 3_600_000 + i * 1000)
        const params = [`S-${i}`, 'seed', ...stamp.params].map((value, n) => typeof value === 'number'
          ? { name: `p${n}`, kind: Number.isInteger(value) ? 'integer' as const : 'number' as const, value }
          : { name: `p${n}`, kind: 'string' as const, value: String(value) })
        await db.execute({ text: `INSERT INTO "${TABLE}" ("ArtNr", "Bez", "Geaendert") VALUES (@p0, @p1, ${stamp.sql.replace('?', '@p2')})`, params })
      }
    })
  const other = new BetterSqlite3(sqlitePath(ctx.config.database.url)!)
  try {
    const headers = ctx.auth(ctx.adminToken)
    const live: number[] = kind.type === undefined ? [] : [1, 2, 3]
    let counter = 0
    // the ERP: its copy, the SINCE it keeps, and the walk under way
    const copy = new Map<number, Material>()
    let since: string | undefined
    let walk: { next: string, serverTime?: string } | undefined
    let pages = 0
    const page = async (limit: number, sort = 'sort=modifiedAt'): Promise<void> => {
      walk ??= { next: `/api/materials?${[sort, `limit=${limit}`, ...(since === undefined ? [] : [`modifiedSince=${encodeURIComponent(since)}`])].filter((p) => p !== '').join('&')}` }
      const res = await ctx.app.inject({ method: 'GET', url: walk.next, headers })
      pages++
      if (res.statusCode !== 200) fail(`a page of the sync answered ${res.statusCode} ${res.body} (${walk.next})`)
      const body = res.json() as Page
      log.push(`  page ${walk.next} at ${new Date().toISOString()}: ${body.data.map((m) => `${m.id}@${String(m.modifiedAt)}`).join(' ')}, serverTime ${body.meta.serverTime}`)
      walk.serverTime ??= body.meta.serverTime
      for (const m of body.data) copy.set(m.id, m)
      if (body.meta.next !== undefined) walk.next = body.meta.next
      else {
        since = walk.serverTime
        walk = undefined
      }
    }
    const pick = (n: number): number | undefined => live.length === 0 ? undefined : live[n % live.length]
    // the picking system's open transaction: when it began, by its clock, and whether it has stamped a row yet
    let began: number | undefined
    let stampedInTransaction = false
    const commit = (): void => {
      if (began === undefined) return
      other.exec('COMMIT')
      log.push(`outside commit of the transaction begun ${new Date(began).toISOString()}, at ${new Date().toISOString()}`)
      began = undefined
      stampedInTransaction = false
    }
    const outside = (sql: string, params: unknown[]): BetterSqlite3.RunResult => {
      if (began !== undefined) stampedInTransaction = true
      return other.prepare(sql).run(...params)
    }
    // an API write: while the picking system's transaction holds the write lock it waits (time passes, a page may be
    // read meanwhile), and goes on once that commits, its stamps within commitLagMs of the commit
    const write = async (options: InjectOptions, wait: Wait): Promise<LightMyRequestResponse> => {
      const res = ctx.app.inject(options)
      if (began !== undefined) {
        stat('an API write meets the picking system\'s open transaction')
        await new Promise((resolve) => setTimeout(resolve, 20))
        offset += stampedInTransaction ? Math.max(0, Math.min(wait.ms, began + (run.commitLagMs ?? 1000) - 200 - Date.now())) : wait.ms
        for (let n = 0; n < wait.pages; n++) {
          stat('a page is read while an API write waits')
          await page(wait.limit)
        }
        log.push(`  (an API write waited until ${new Date().toISOString()})`)
        commit()
      }
      return await res
    }
    for (const step of run.steps) {
      switch (step.op) {
        case 'create': {
          const res = await write({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: `N-${++counter}`, name: step.name } }, step.wait)
          if (res.statusCode !== 201) fail(`create answered ${res.statusCode} ${res.body}`)
          live.push(res.json().id as number)
          // ISO 8601 text of whole seconds (ColumnInfo.isoTimeText): the gateway writes that form too
          const stored: unknown = other.prepare(`SELECT "${cols.modified}" FROM "${cols.table}" WHERE "${cols.id}" = ?`).pluck().get(res.json().id)
          if (kind.form === 'iso' && !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/.test(String(stored))) fail(`the gateway wrote ${String(stored)} beside the picking system's ISO 8601 text`)
          log.push(`create ${res.json().id as number} @${String(res.json().modifiedAt)}`)
          break
        }
        case 'update': {
          const id = pick(step.pick)
          if (id === undefined) break
          const res = await write({ method: 'PATCH', url: `/api/materials/${id}`, headers, payload: { name: step.name } }, step.wait)
          if (res.statusCode !== 200) fail(`update answered ${res.statusCode} ${res.body}`)
          log.push(`update ${id} name ${step.name} @${String(res.json().modifiedAt)}`)
          break
        }
        case 'delete': {
          const id = pick(step.pick)
          if (id === undefined) break
          const res = await write({ method: 'DELETE', url: `/api/materials/${id}`, headers }, step.wait)
          if (res.statusCode !== 204 && res.statusCode !== 200) fail(`delete answered ${res.statusCode} ${res.body}`)
          live.splice(live.indexOf(id), 1)
          log.push(`delete ${id}`)
          break
        }
        case 'outsideInsert': {
          const stamp = stampSql(kind, Date.now(), step.fraction)
          const r = outside(`INSERT INTO "${cols.table}" ("${cols.number}", "${cols.name}", "${cols.modified}") VALUES (?, ?, ${stamp.sql})`, [`O-${++counter}`, step.name, ...stamp.params])
          live.push(Number(r.lastInsertRowid))
          log.push(`outside insert ${Number(r.lastInsertRowid)} stamped ${JSON.stringify(stamp.params)} at ${new Date().toISOString()}`)
          break
        }
        case 'outsideUpdate': {
          const id = pick(step.pick)
          if (id === undefined) break
          const stamp = stampSql(kind, Date.now(), step.fraction)
          outside(`UPDATE "${cols.table}" SET "${cols.name}" = ?, "${cols.modified}" = ${stamp.sql} WHERE "${cols.id}" = ?`, [step.name, ...stamp.params, id])
          log.push(`outside update ${id} name ${step.name} stamped ${JSON.stringify(stamp.params)} at ${new Date().toISOString()}`)
          break
        }
        case 'page':
          await page(step.limit, step.sort)
          break
        case 'tick':
          // committed before it would be later than commitLagMs (default 1000 ms) after its stamps
          if (began !== undefined && Date.now() + step.ms - began > (run.commitLagMs ?? 1000) - 200) commit()
          offset += step.ms
          break
        case 'outsideBegin':
          if (began !== undefined) break
          other.exec('BEGIN IMMEDIATE')
          began = Date.now()
          log.push(`outside begin at ${new Date(began).toISOString()}`)
          break
        case 'outsideCommit':
          commit()
          break
      }
    }
    commit()
    // the last sync: the walk under way to its end, then a whole run after every write
    while (walk !== undefined) await page(run.lastLimit)
    log.push('last run')
    await page(run.lastLimit)
    while (walk !== undefined) await page(run.lastLimit)
    if (pages > 1000) fail(`${pages} pages`)
    const res = await ctx.app.inject({ method: 'GET', url: '/api/materials?sort=id&limit=1000', headers })
    if (res.statusCode !== 200) fail(`the full list answered ${res.statusCode}`)
    const now = (res.json() as Page).data
    if (now.length !== live.length) fail(`the table holds ${now.length} rows, the model ${live.length}`)
    for (const m of now) {
      const kept = copy.get(m.id)
      if (kept === undefined) fail(`row ${m.id} (modifiedAt ${String(m.modifiedAt)}) never reached the ERP`)
      if (JSON.stringify(kept) !== JSON.stringify(m)) fail(`the ERP holds row ${m.id} as ${JSON.stringify(kept)}, the table ${JSON.stringify(m)}`)
    }
  } finally {
    if (other.inTransaction) other.exec('ROLLBACK')
    other.close()
    await ctx.app.close()
  }
}

t.test('an incremental sync by meta.serverTime loses no row, whoever writes it and whatever the modified-time column', PROPERTY_TEST, async (t) => {
  globalThis.Date = ClockDate as DateConstructor
  t.teardown(() => { globalThis.Date = RealDate; offset = 0 })
  // the case found with 100 runs, checked in every run: a run begins and ends while an API create waits for the picking
  // system's transaction (2.5 s), and must still find the row once it is committed
  const waited = (kind: Kind): Run => ({
    kind,
    start: undefined,
    startJitter: 0,
    commitLagMs: undefined,
    steps: [{ op: 'page', limit: 4, sort: 'sort=modifiedAt' }, { op: 'outsideBegin' }, { op: 'create', name: 'a', wait: { ms: 2500, pages: 2, limit: 4 } }],
    lastLimit: 4
  })
  await checkProperty(t, runArb, async (run) => { await syncModel(t, run) }, { seed: 20261128, runs: 30, examples: [waited({ form: 'text' }), waited({ type: 'DATETIME', form: 'text' })] })
})
