// Property-based tests of the mapping layer for stations: fast-check generates legacy SQLite station tables
// within what the README's "Day one" section says a mapping supports (other column names, declared types,
// NULLs, CHAR padding, type codes as letters or numbers, flags as codes, text or integer ids, the name shared
// with the id, unmapped columns, NOT NULL columns with defaults), builds the mapping for each and checks the
// API over it: no 5xx, a 4xx changes nothing and says what, a create or update reads back as sent, each filter
// finds the rows that show its value, the list parameters agree with the values reads show (each equality filter,
// modifiedSince, sort=f and sort=-f on every field, the live ones too, a walk by meta.next: every row once, in
// that order; an enabled flag without a declared type holds 0, 1, -1 and '1', '0' too), an update sending a row as shown writes nothing, a conditional GET after a write
// behind the gateway's back is a 200, one controller address is one station, and a command answers what the
// station's row says (disabled, unwired, not configured, shared address, else offline: the controller is
// configured on a port where nothing listens, so no frame is ever sent: its 503 is the one 5xx expected).
// Deterministic: fast-check's seed is fixed (4 below, 30 schemas after the hand-made SHARED: about 20 s);
// on a failure it prints the seed, the path and the counterexample shrunk for up to 20 s (PROPERTY_SHRINK_MS),
// which PROPERTY_SEED=<seed> PROPERTY_PATH=<path> replays.
// PROPERTY_SEED and PROPERTY_RUNS explore other schemas; PROPERTY_STATS=1 lists the answers seen.
// Its generators and checks share test/helpers/legacy-properties.ts with the materials' and users' tests.
import t from 'tap'
import fc from 'fast-check'
import type { TableMappingConfig } from '../../schemas/config.js'
import { freePort } from '../helpers/ports.js'
import {
  PROPERTY_TEST, checkListParameters, checkProperty, checkReadBack, checkWalk, checkWriteBehind, columnArb, createTable, distinctNames, dump, fill,
  flagOrUntypedType, gateway, keyedRows, list, listAll, lit, optional, orNull, overTable, pad, stat, storedFlag, tableMapping, textType, timeType,
  timeValue, trueCode, untypedFlagOdd, validBody, withDefault, withOdd, write, type Body, type Gateway, type Kind, type LegacyColumn, type LegacyTable
} from '../helpers/legacy-properties.js'

/** a station type: API values as stored, or a value map to letters or numbers */
type TypeCodes = { kind: 'plain' } | { kind: 'letters' } | { kind: 'numbers' }

interface Column extends LegacyColumn {
  /** the address: digits the column takes (DECIMAL(p,0)), asText for a TEXT column or none declared */
  number?: { digits?: number, asText?: boolean, untyped?: boolean }
  codes?: TypeCodes
}

interface Schema extends LegacyTable<Column> {
  /** id on its own INTEGER PRIMARY KEY, or on the name column (a station table keyed by its code) */
  key: 'own' | 'text'
  /** the name column has a unique index (else the gateway's own check is all there is) */
  nameUnique: boolean
}

// ---- names: mixed case, spaces, reserved words and quote characters, as the README allows ----

const BASES: Record<string, string[]> = {
  id: ['PlatzID', 'ID', 'Order', 'Platz Id'],
  name: ['Platz', 'STATION_CODE', 'Key', 'Name [de]'],
  description: ['Bezeichnung', 'DESCR', 'Where', 'Beschreibung (lang)'],
  type: ['WpType', 'TYPE', 'Group', 'Platz "Typ"'],
  warehouse: ['Lager', 'WHSE', 'From', 'Lager Ort'],
  controllerId: ['Steuerung', 'CTRL_ID', 'Index', "Steuerung 'ID'"],
  address: ['Adresse', 'ADDR', 'Limit', 'Adresse (Bus)'],
  enabled: ['Aktiv', 'ACTIVE_FLAG', 'Check', 'Aktiv?'],
  createdAt: ['Angelegt', 'CREATED', 'Default', 'Angelegt am'],
  modifiedAt: ['LastChange', 'LAST_UPD', 'Update', 'Letzte Änderung']
}

const column = columnArb<Column>(BASES)

// ---- column types ----

const addressType: fc.Arbitrary<Pick<Column, 'type' | 'number'>> = fc.oneof(
  fc.constantFrom('INTEGER', 'INT', 'SMALLINT', 'BIGINT').map((type) => ({ type, number: {} })),
  fc.integer({ min: 5, max: 9 }).map((p) => ({ type: `DECIMAL(${p},0)`, number: { digits: p } })),
  // numbers a legacy program keeps as text, or in a column without a declared type
  fc.constant({ type: 'TEXT', number: { asText: true } }),
  fc.constant({ type: '', number: { asText: true, untyped: true } })
)

const LETTERS = { vlm: 'V', carousel: 'K', ptl: 'P', manual: ['M', 'H'] }
const NUMBERS = { vlm: 1, carousel: 2, ptl: 3, manual: 4 }

const typeType: fc.Arbitrary<Pick<Column, 'type' | 'codes' | 'text'>> = fc.oneof(
  // the API's own words; a number column without a map is refused at start, so text only
  textType(8).map((t) => ({ ...t, codes: { kind: 'plain' } as TypeCodes })),
  fc.constantFrom('CHAR(1)', 'VARCHAR(1)', 'TEXT', '').map((type) => ({ type, codes: { kind: 'letters' } as TypeCodes })),
  fc.constantFrom('INTEGER', 'SMALLINT').map((type) => ({ type, codes: { kind: 'numbers' } as TypeCodes }))
)

const schemaArb: fc.Arbitrary<Schema> = fc.record({
  table: fc.constantFrom('Arbeitsplatz', 'STATION LIST', 'Order', 'plaetze'),
  key: fc.constantFrom<Schema['key']>('own', 'text'),
  nameUnique: fc.boolean(),
  name: column('name', textType(8), true),
  // on a table keyed by the name, the write behind the gateway's back changes the description
  description: optional(column('description', textType(1))),
  type: optional(column('type', typeType)).chain(withDefault<Column>((c) => c.codes?.kind === 'numbers' ? '4' : c.codes?.kind === 'letters' ? lit('M') : lit('manual'))),
  warehouse: optional(column('warehouse', textType(1))),
  controllerId: optional(column('controllerId', textType(5))),
  address: optional(column('address', addressType)),
  enabled: optional(column('enabled', flagOrUntypedType)).chain(withDefault((c) => trueCode(c.flag!))),
  createdAt: optional(column('createdAt', fc.constant({ type: 'DATETIME', dflt: 'CURRENT_TIMESTAMP', time: { type: 'DATETIME' } }))),
  modifiedAt: optional(column('modifiedAt', timeType.map((time) => ({ type: time.type, time })))),
  extra: fc.option(fc.record({ name: fc.constantFrom('Mandant', 'Lager Zone'), viaDefaults: fc.boolean() }), { nil: undefined })
}).map(({ table, key, nameUnique, extra, ...cols }): Schema => {
  // copies: fast-check replays generated values while shrinking, so they are not changed in place
  const columns = Object.values(cols).filter((c): c is Column => c !== undefined).map((c): Column => ({ ...c }))
  // on a table keyed by the name, the write behind the gateway's back changes the description
  if (key === 'text' && !columns.some((c) => c.field === 'description')) columns.push({ field: 'description', name: 'Bemerkung', type: 'TEXT', notNull: false, text: { char: false } })
  return { table, key, nameUnique, columns: distinctNames(columns), extra: extra && { name: extra.name, kind: extra.viaDefaults ? 'viaDefaults' : 'default' } }
})

const ID_COLUMN = 'PK'

/** the column of the id: its own, or the name's */
const idColumn = (s: Schema): string => s.key === 'own' ? ID_COLUMN : s.columns.find((c) => c.field === 'name')!.name

function ddl (s: Schema): string {
  return createTable(s, { own: s.key === 'own' ? ID_COLUMN : undefined, field: 'name', sql: s.key === 'text' ? ' NOT NULL PRIMARY KEY' : s.nameUnique ? ' NOT NULL UNIQUE' : ' NOT NULL' })
}

const FIELDS = Object.keys(BASES)

function mappingOf (s: Schema): TableMappingConfig {
  return tableMapping(s, idColumn(s), FIELDS, (c) => c.codes?.kind === 'letters' ? LETTERS : c.codes?.kind === 'numbers' ? NUMBERS : undefined)
}

// ---- data rows the picking system wrote: NULLs, padding, odd codes, shared addresses ----

function storedValue (c: Column, i: number): fc.Arbitrary<unknown> {
  const nullable = !c.notNull && c.field !== 'name'
  let v: fc.Arbitrary<unknown>
  // a column without a declared type keeps a number another program stored as a number
  if (c.field === 'name') v = fc.constantFrom<unknown>(`PTL-${i}`, `lift ${i}`, `P-${i} `, `${100 + i}`, `0${i}`, ...(c.type === '' ? [100 + i] : [])).map((x) => pad(c, x))
  else if (c.codes?.kind === 'plain') v = fc.constantFrom('vlm', 'carousel', 'ptl', 'manual', 'VLM', 'robot').map((x) => pad(c, x))
  else if (c.codes?.kind === 'letters') v = fc.constantFrom('V', 'K', 'P', 'M', 'H', 'v', 'P ', 'S')
  else if (c.codes?.kind === 'numbers') v = fc.constantFrom(1, 2, 3, 4, 9)
  else if (c.field === 'controllerId') v = fc.constantFrom('ctl-1', 'ctl-1', 'ctl-1', 'ctl-2', 'CTL-1', 'ctl-1 ', '').map((x) => pad(c, x))
  // few addresses, so that rows share them; one the protocol cannot carry
  else if (c.number) v = fc.oneof({ arbitrary: fc.integer({ min: 0, max: 2 }), weight: 8 }, { arbitrary: fc.constant(70000), weight: 1 }).chain((n) => c.number!.asText ? fc.constantFrom<unknown>(n, String(n), `0${n}`, ` ${n}`) : fc.constant(n))
  else if (c.text) v = fc.string({ maxLength: Math.min(c.text.n ?? 12, 12) }).map((x) => pad(c, x))
  else if (c.flag) v = storedFlag(c.flag, untypedFlagOdd(c))
  else if (c.time) v = timeValue(c.time)
  else v = fc.constant(null)
  return orNull(v, nullable)
}

// ---- request bodies: valid ones the schema takes, and odd ones ----

function validValue (c: Column): fc.Arbitrary<unknown> {
  if (c.field === 'name') {
    return fc.oneof(fc.constantFrom('PTL-1', 'lift 2', '0099', '101'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 })).filter((x) => x.trim() === x && x !== '.' && x !== '..' && [...x].length <= (c.text?.n ?? 100) && x.normalize('NFC') === x &&
      // the API takes no control or invisible characters and no space but U+0020 in a station's name
      !/[\p{C}\p{Z}]/u.test(x.replaceAll(' ', '')))
  }
  if (c.codes) return fc.constantFrom('vlm', 'carousel', 'ptl', 'manual')
  if (c.field === 'controllerId') return fc.constantFrom<unknown>('ctl-1', 'ctl-2', 'ctl-3', ...(c.notNull ? [] : [null])).filter((x) => x === null || (x as string).length <= (c.text?.n ?? 64))
  if (c.number) {
    const max = Math.min(65535, c.number.digits === undefined ? 65535 : 10 ** c.number.digits - 1, c.type === 'SMALLINT' ? 32767 : 65535)
    return fc.oneof(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max }), ...(c.notNull ? [] : [fc.constant(null)]))
  }
  if (c.text) return fc.string({ unit: fc.constantFrom('a', 'Z', ' ', '-', 'é', 'ß', '€', '😀', '%', '_', '"'), maxLength: Math.min(c.text.n ?? 20, 20) })
  if (c.flag) return fc.boolean()
  return fc.constant(undefined)
}

const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, '', ' ', 'x'.repeat(300), -0, -1, 65536, 1e300, 2 ** 53, 0.5, true, 'J', 'N', 'V', 'vlm ', 'VLM', 'robot', '0', '1', [], {}, 'null', '2024-01-01', 'ctl-1'),
  fc.string({ maxLength: 5 }), fc.double(), fc.integer()
)

const WRITABLE = new Set(['name', 'description', 'type', 'warehouse', 'controllerId', 'address', 'enabled'])

function bodyArb (s: Schema): fc.Arbitrary<Body> {
  const writable = s.columns.filter((c) => WRITABLE.has(c.field))
  const valid = validBody(writable, validValue, writable.filter((c) => c.field === 'name' || (c.notNull && c.dflt === undefined && c.field !== 'type' && c.field !== 'enabled')).map((c) => c.field))
  return withOdd(valid, [...FIELDS, 'connected', 'status', 'nonsense'], oddValue)
}

/** an update: any of the writable fields, valid or one odd */
function updateArb (s: Schema): fc.Arbitrary<Update> {
  const writable = s.columns.filter((c) => WRITABLE.has(c.field))
  const valid = validBody(writable, validValue, []).filter(({ body }) => Object.keys(body).length > 0)
  return fc.tuple(fc.nat(), withOdd(valid, [...FIELDS, 'connected', 'status', 'nonsense'], oddValue)).map(([pick, u]) => ({ pick, ...u }))
}

// ---- checks ----

interface Station { id: number | string, name: string, enabled?: boolean | null, controllerId?: unknown, address?: unknown, modifiedAt?: string | null, [field: string]: unknown }

const path = (id: number | string): string => `/api/stations/${encodeURIComponent(String(id))}`

const SORTABLE = ['id', 'name', 'description', 'type', 'warehouse', 'controllerId', 'address', 'enabled', 'createdAt', 'modifiedAt', 'connected', 'status', 'lastSeenAt']
const LIVE = new Set(['connected', 'status', 'lastSeenAt'])

/** how the fields' shown values compare (README "List parameters"; the live ones too) */
const KINDS: Record<string, Kind> = {
  id: 'id', name: 'text', description: 'text', type: 'text', warehouse: 'text', controllerId: 'text', address: 'number', enabled: 'flag',
  createdAt: 'time', modifiedAt: 'time', connected: 'flag', status: 'text', lastSeenAt: 'time'
}

/** the column whose numbers a text field shows as their text: the name's (the id's too, on a table keyed by it) in a column without a declared type */
function numericColumn (s: Schema, field: string): string | undefined {
  if (field === 'id') return s.key === 'own' ? undefined : idColumn(s)
  return KINDS[field] === 'text' && !LIVE.has(field) ? s.columns.find((c) => c.field === field)?.name : undefined
}

/** the answer to a command, from the station's row as the API shows it (README "Picking controllers") */
function commandAnswer (s: Schema, station: Station, all: Station[]): string {
  const enabledMapped = s.columns.some((c) => c.field === 'enabled')
  const inUse = (x: Station): boolean => !enabledMapped || x.enabled === true
  if (!inUse(station)) return '409 STATION_DISABLED'
  if (typeof station.controllerId !== 'string' || typeof station.address !== 'number') return '409 STATION_NOT_WIRED'
  if (station.address < 0 || station.address > 65535) return '409 STATION_NOT_WIRED'
  if (station.controllerId !== 'ctl-1') return '409 CONTROLLER_NOT_CONFIGURED'
  if (all.some((x) => String(x.id) !== String(station.id) && inUse(x) && x.controllerId === station.controllerId && x.address === station.address)) return '409 STATION_ADDRESS_SHARED'
  return '503 CONTROLLER_OFFLINE'
}

/** an update of the row `pick` picks from the list */
interface Update extends Body { pick: number }

async function checks (g: Gateway, s: Schema, bodies: Body[], updates: Update[], sortPick: number, desc: boolean, since: number): Promise<void> {
  const { ctx, headers, fail } = g
  const columnOf = new Map(s.columns.map((c) => [c.field, c]))

  // creates: never a 5xx; a 4xx changes nothing and says something; a 201 reads back as sent
  for (const { body, valid } of bodies) {
    const shownBefore = await list<Station>(g, 'stations')
    const { res, refused } = await write(g, { method: 'POST', url: '/api/stations', payload: body }, { detail: body, valid })
    if (refused) {
      const message = res.json().message
      if (res.statusCode === 409) {
        // a conflict is one the rows hold: the name (in any case, as the key compares), or the controller address
        const taken = shownBefore.some((x) => x.name.toLowerCase() === String(body.name).toLowerCase())
        const pair = typeof body.controllerId === 'string' && typeof body.address === 'number' && shownBefore.some((x) => x.controllerId === body.controllerId && x.address === body.address)
        if (!taken && !pair) fail(`a 409 for a name and an address no row holds (${res.body})`, { body, shownBefore })
        if (!taken && pair && !(message as string).includes(`controllerId ${JSON.stringify(body.controllerId)} and address ${String(body.address)}`)) fail(`a 409 for the address that does not name it (${res.body})`, body)
      }
      continue
    }
    if (res.statusCode !== 201) fail(`create answered ${res.statusCode}`, { body, res: res.body })
    // one controller address is one station, also where the table has no index for it (README "Create, update, delete")
    if (typeof body.controllerId === 'string' && typeof body.address === 'number' && shownBefore.some((x) => x.controllerId === body.controllerId && x.address === body.address)) fail('a create gave a second station the same controller address', { body, shownBefore })
    if (shownBefore.some((x) => x.name === body.name)) fail('a create gave a second station the same name', { body, shownBefore })
    const created = res.json() as Station
    const read = await ctx.app.inject({ method: 'GET', url: path(created.id), headers })
    if (read.statusCode !== 200) fail(`GET of a created station answered ${read.statusCode} ${read.body}`, body)
    const shown = read.json() as Station
    checkReadBack(g, columnOf, body, shown, 'created', body)
    // the API's defaults: manual, enabled
    if (columnOf.has('type') && body.type === undefined && shown.type !== 'manual') fail(`a create without a type reads back as ${JSON.stringify(shown.type)}`, body)
    if (columnOf.has('enabled') && body.enabled === undefined && shown.enabled !== true) fail(`a create without enabled reads back as ${JSON.stringify(shown.enabled)}`, body)
  }

  // a walk by meta.next: every row once, in any sort the mapping allows, with and without a filter
  const mapped = SORTABLE.filter((f) => f === 'id' || LIVE.has(f) || columnOf.has(f))
  const sortField = mapped[sortPick % mapped.length]
  const stations = await listAll<Station>(g, 'stations')
  // each equality filter, modifiedSince and each sort agree with the values reads show
  const orders = await checkListParameters(g, 'stations', stations, Object.fromEntries(Object.entries(KINDS).filter(([f]) => mapped.includes(f))), since, (f) => numericColumn(s, f),
    (f) => f === 'type' && columnOf.get('type')?.codes?.kind !== 'plain' ? Object.keys(NUMBERS) : undefined)
  // each filter finds the rows whose shown value matches it (values in the usual formats: README "Values the declared type does not bind")
  const filters: Array<[string, (x: Station) => boolean]> = [['', () => true]]
  if (columnOf.has('enabled')) filters.push(['&enabled=true', (x) => x.enabled === true])
  if (columnOf.has('type')) filters.push(['&type=[or]vlm;manual', (x) => x.type === 'vlm' || x.type === 'manual'])
  if (columnOf.has('controllerId')) filters.push(['&controllerId=ctl-1', (x) => x.controllerId === 'ctl-1'])
  if (columnOf.has('address')) filters.push(['&address=[lte]2', (x) => typeof x.address === 'number' && x.address <= 2])
  filters.push(['&name=[like]%25l%25', (x) => /l/i.test(x.name)], ['&status=offline', (x) => x.status === 'offline'])
  for (const [filter, matches] of filters) {
    const expectedIds = stations.filter(matches).map((m) => String(m.id)).sort()
    const foundIds = (await list<Station>(g, 'stations', filter)).map((m) => String(m.id)).sort()
    if (JSON.stringify(foundIds) !== JSON.stringify(expectedIds)) fail(`the list ${filter} found ${JSON.stringify(foundIds)}, the rows that show it are ${JSON.stringify(expectedIds)}`, stations)
    // in the shown values' order: null first (SQLite's order), false before true, addresses as numbers (also '02' kept as text)
    await checkWalk<Station>(g, 'stations', `${desc ? '-' : ''}${sortField}`, filter, expectedIds, 20, stations, orders.get(`${desc ? '-' : ''}${sortField}`))
  }

  // a command answers what the station's row says, and changes nothing
  for (const station of stations) {
    const before = await dump(g)
    const res = await ctx.app.inject({ method: 'POST', url: `${path(station.id)}/commands`, headers, payload: { command: 'clear' } })
    const answer = `${res.statusCode} ${String(res.json().code)}`
    stat(`command ${answer}`)
    if (answer !== commandAnswer(s, station, stations)) fail(`a command to station ${JSON.stringify(station.id)} answered ${answer} ${res.body}, not ${commandAnswer(s, station, stations)}`, { station, stations })
    if (JSON.stringify(await dump(g)) !== JSON.stringify(before)) fail('a command changed the table', { station })
  }

  // an update sending what each row shows: no 5xx; a 200 writes nothing and leaves modifiedAt as it was; a 4xx changes nothing
  for (const m of stations) {
    const body = Object.fromEntries(Object.entries(m).filter(([f]) => WRITABLE.has(f) && columnOf.has(f)))
    const { res, refused, before } = await write(g, { method: 'PATCH', url: path(m.id), payload: body }, { what: 'an update sending the row as shown', stat: 'same-values update', detail: { row: m } })
    if (refused) {
      // rows that already share an address stay editable and may send their own pair unchanged
      if (res.statusCode === 409) fail(`an update sending the row as shown answered 409 ${res.body}`, { row: m })
      continue
    }
    if (res.statusCode !== 200) fail(`update answered ${res.statusCode}`, res.body)
    if (JSON.stringify(await dump(g)) !== JSON.stringify(before)) fail('an update sending the row as shown wrote to the table', { row: m, after: await dump(g), before })
    if ((res.json() as Station).modifiedAt !== m.modifiedAt) fail('an update sending the row as shown moved modifiedAt', { row: m, after: res.json() })
  }

  // one controller address is one station: an update giving a row another's pair is a 409 naming it,
  // while a row that already shares it may send it unchanged (README "Create, update, delete")
  const wired = stations.filter((x) => typeof x.controllerId === 'string' && x.controllerId.trim() !== '' && typeof x.address === 'number' && x.address >= 0 && x.address <= 65535 &&
    [...columnOf.get('controllerId')?.text?.n === undefined ? [] : [columnOf.get('controllerId')!.text!.n!]].every((n) => (x.controllerId as string).length <= n))
  for (const [a, b] of wired.flatMap((a) => wired.filter((b) => String(b.id) !== String(a.id)).slice(0, 1).map((b) => [a, b]))) {
    const body = { controllerId: b.controllerId, address: b.address }
    const before = await dump(g)
    const res = await ctx.app.inject({ method: 'PATCH', url: path(a.id), headers, payload: body })
    stat(`pair update ${res.statusCode}`)
    const same = a.controllerId === b.controllerId && a.address === b.address
    if (same && res.statusCode !== 200) fail(`a station sending the pair it shares with another answered ${res.statusCode} ${res.body}`, { a, b })
    if (!same && res.statusCode !== 409) fail(`an update giving station ${JSON.stringify(a.id)} the pair of ${JSON.stringify(b.id)} answered ${res.statusCode} ${res.body}`, { a, b })
    if (!same && !String(res.json().message).includes(`controllerId ${JSON.stringify(b.controllerId)} and address ${String(b.address)}`)) fail(`the 409 does not name the pair (${res.body})`, { a, b })
    if (JSON.stringify(await dump(g)) !== JSON.stringify(before)) fail(`an update giving a station another's pair (${res.statusCode}) changed the table`, { a, b })
  }

  // updates: never a 5xx; a 4xx changes nothing and says something; a 200 reads back as sent and takes no name or pair another row holds
  for (const { pick, body, valid } of updates) {
    const shownBefore = await list<Station>(g, 'stations')
    if (shownBefore.length === 0) break
    const row = shownBefore[pick % shownBefore.length]
    const { res, refused } = await write(g, { method: 'PATCH', url: path(row.id), payload: body }, { detail: { row, body } })
    if (refused) {
      // a valid body is refused only for a name or pair another row holds, a key that cannot change, or a field of the row the body keeps (an address beyond 65535 it does not send is no reason)
      if (valid && res.statusCode === 400 && !(s.key === 'text' && body.name !== undefined && body.name !== row.name)) fail(`a valid update answered ${res.statusCode} ${res.body}`, { row, body })
      continue
    }
    if (res.statusCode !== 200) fail(`update answered ${res.statusCode}`, { row, body, res: res.body })
    if (s.key === 'text' && body.name !== undefined && body.name !== row.name) fail('an update changed the name a table keyed by it uses as the id', { row, body })
    const shown = res.json() as Station
    checkReadBack(g, columnOf, body, shown, 'updated', { row, body })
    const others = shownBefore.filter((x) => String(x.id) !== String(row.id))
    if (body.name !== undefined && body.name !== row.name && others.some((x) => x.name === body.name)) fail('an update gave a second station the same name', { row, body })
    const pairSet = body.controllerId !== undefined || body.address !== undefined
    const pairChanged = shown.controllerId !== row.controllerId || shown.address !== row.address
    if (pairSet && pairChanged && typeof shown.controllerId === 'string' && typeof shown.address === 'number' && others.some((x) => x.controllerId === shown.controllerId && x.address === shown.address)) fail('an update gave a second station the same controller address', { row, body, others })
  }

  // a conditional GET after a write behind the gateway's back: 200 with the new row, not 304 (a table keyed by the
  // name: the name is the id, so the description changes)
  const first = stations[0]
  const field = s.key === 'own' ? 'name' : 'description'
  if (first !== undefined) await checkWriteBehind(g, path(first.id), first, idColumn(s), field, columnOf.get(field)!.name)
}

/**
 * Run before the generated ones: a table whose enabled stations share controller addresses, kept as another
 * program writes them ('02' beside 2 in an untyped column, 'ctl-1 ' with its blank, True as -1), which random
 * schemas reach only now and then: commands, the pair's uniqueness and a walk by address meet them every run.
 */
const SHARED: { s: Schema, rows: Array<Record<string, unknown>>, bodies: Body[], updates: Update[], sortPick: number, desc: boolean, since: number } = {
  s: {
    table: 'Arbeitsplatz',
    key: 'own',
    nameUnique: true,
    columns: [
      { field: 'name', name: 'Platz', type: 'TEXT', notNull: true, text: { char: false } },
      { field: 'controllerId', name: 'Steuerung', type: 'VARCHAR(20)', notNull: false, text: { char: false, n: 20 } },
      { field: 'address', name: 'Adresse', type: '', notNull: false, number: { asText: true, untyped: true } },
      { field: 'enabled', name: 'Aktiv', type: 'BIT', notNull: true, flag: { kind: 'int' } }
    ]
  },
  rows: [
    { Platz: 'PTL-1', Steuerung: 'ctl-1', Adresse: '02', Aktiv: -1 },
    { Platz: 'PTL-2', Steuerung: 'ctl-1', Adresse: 2, Aktiv: 1 },
    { Platz: 'PTL-3', Steuerung: 'ctl-1 ', Adresse: 2, Aktiv: 1 },
    { Platz: 'PTL-4', Steuerung: 'ctl-1', Adresse: ' 3', Aktiv: 0 },
    { Platz: 'PTL-5', Steuerung: 'ctl-1', Adresse: 3, Aktiv: 1 },
    { Platz: 'PTL-6', Steuerung: 'ctl-2', Adresse: 2, Aktiv: 1 }
  ],
  bodies: [{ body: { name: 'PTL-7', controllerId: 'ctl-1', address: 3 }, valid: true }, { body: { name: 'PTL-8', controllerId: 'ctl-1', address: 4 }, valid: true }],
  updates: [{ pick: 3, body: { enabled: true }, valid: true }, { pick: 6, body: { address: 2 }, valid: true }],
  // sort=address
  sortPick: 3,
  desc: false,
  since: 0
}

t.test('the mapping over generated legacy station tables', PROPERTY_TEST, async (t) => {
  // a port on which nothing listens: the controller stays offline, and no frame is ever sent
  const deadPort = await freePort()
  await checkProperty(t,
    schemaArb.chain((s) => fc.record({ s: fc.constant(s), rows: keyedRows(s, 'name', storedValue), bodies: fc.array(bodyArb(s), { minLength: 1, maxLength: 4 }), updates: fc.array(updateArb(s), { maxLength: 4 }), sortPick: fc.nat(), desc: fc.boolean(), since: fc.nat() })),
    async ({ s, rows, bodies, updates, sortPick, desc, since }) => {
      await overTable(t, { mapping: { stations: mappingOf(s) }, hardware: { controllers: [{ id: 'ctl-1', host: '127.0.0.1', port: deadPort }] } }, async (db) => { await fill(db, s, ddl(s), rows) },
        async (ctx) => { await checks(gateway(ctx, s, ddl(s), mappingOf(s), rows), s, bodies, updates, sortPick, desc, since) })
    },
    // fixed, so that every run checks the same schemas
    { seed: 4, runs: 30, examples: [SHARED] })
})
