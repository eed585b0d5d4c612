// UTC <-> wall-clock conversion across DST changes, in both hemispheres and in odd-offset zones.
import t, { type Test } from 'tap'
import { isTimeZone, utcToWall, wallToUtc } from '../../src/db/time-zone.js'

/** an ISO text without zone read as UTC fields: how a wall Date is written in these tests */
const d = (iso: string): Date => new Date(iso.endsWith('Z') ? iso : iso + 'Z')
const iso = (date: Date): string => date.toISOString()
const MIN = 60_000
const HOUR = 60 * MIN

t.test('isTimeZone', async (t) => {
  t.equal(isTimeZone('Europe/Berlin'), true)
  t.equal(isTimeZone('America/New_York'), true)
  t.equal(isTimeZone('UTC'), true)
  t.equal(isTimeZone('Etc/UTC'), true)
  t.equal(isTimeZone('Mars/Olympus'), false)
  t.equal(isTimeZone(''), false)
  t.equal(isTimeZone('Europe/Berlin '), false)
  t.equal(isTimeZone('Mars/Olympus'), false, 'an unknown name is not remembered as known')
})

t.test('an unknown zone throws, an invalid Date stays invalid', async (t) => {
  t.throws(() => utcToWall(d('2026-01-01T00:00:00'), 'Mars/Olympus'), RangeError)
  t.throws(() => wallToUtc(d('2026-01-01T00:00:00'), 'Mars/Olympus'), RangeError)
  t.ok(Number.isNaN(utcToWall(new Date(NaN), 'Europe/Berlin').getTime()))
  t.ok(Number.isNaN(wallToUtc(new Date(NaN), 'Europe/Berlin').getTime()))
})

t.test('UTC is the identity, on a new Date', async (t) => {
  for (const tz of ['UTC', 'Etc/UTC']) {
    const u = d('2026-03-29T01:30:00.123')
    const w = utcToWall(u, tz)
    t.equal(iso(w), '2026-03-29T01:30:00.123Z')
    t.not(w, u, 'a copy: the caller may change it')
    t.equal(iso(wallToUtc(u, tz)), '2026-03-29T01:30:00.123Z')
  }
})

interface Case { utc: string, wall: string }
function pairs (t: Test, tz: string, cases: Case[]): void {
  for (const c of cases) {
    t.equal(iso(utcToWall(d(c.utc), tz)), d(c.wall).toISOString(), `${tz}: ${c.utc} -> wall ${c.wall}`)
    t.equal(iso(wallToUtc(d(c.wall), tz)), d(c.utc).toISOString(), `${tz}: wall ${c.wall} -> ${c.utc}`)
  }
}

t.test('Europe/Berlin 2026', async (t) => {
  const tz = 'Europe/Berlin'
  pairs(t, tz, [
    { utc: '2026-01-15T12:00:00.000', wall: '2026-01-15T13:00:00.000' }, // CET
    { utc: '2026-07-15T12:00:00.000', wall: '2026-07-15T14:00:00.000' }, // CEST
    { utc: '2026-03-29T00:59:59.999', wall: '2026-03-29T01:59:59.999' }, // last CET instant
    { utc: '2026-03-29T01:00:00.000', wall: '2026-03-29T03:00:00.000' }, // first CEST instant
    { utc: '2026-10-25T00:59:59.999', wall: '2026-10-25T02:59:59.999' }, // last CEST instant
    { utc: '2026-10-25T02:00:00.000', wall: '2026-10-25T03:00:00.000' },
    { utc: '2026-10-24T23:59:00.000', wall: '2026-10-25T01:59:00.000' }
  ])
  t.test('spring-forward gap: moved forward by the gap', async (t) => {
    t.equal(iso(wallToUtc(d('2026-03-29T02:30:00.250'), tz)), '2026-03-29T01:30:00.250Z', '02:30 -> 01:30Z = 03:30 CEST')
    t.equal(iso(wallToUtc(d('2026-03-29T02:00:00.000'), tz)), '2026-03-29T01:00:00.000Z')
    t.equal(iso(wallToUtc(d('2026-03-29T02:59:59.999'), tz)), '2026-03-29T01:59:59.999Z')
    t.equal(iso(utcToWall(wallToUtc(d('2026-03-29T02:30:00'), tz), tz)), '2026-03-29T03:30:00.000Z', 'shows as 03:30')
  })
  t.test('fall-back overlap: both instants show the same wall time, the earlier one wins', async (t) => {
    t.equal(iso(utcToWall(d('2026-10-25T00:30:00'), tz)), '2026-10-25T02:30:00.000Z', 'CEST occurrence')
    t.equal(iso(utcToWall(d('2026-10-25T01:30:00'), tz)), '2026-10-25T02:30:00.000Z', 'CET occurrence')
    t.equal(iso(wallToUtc(d('2026-10-25T02:30:00.007'), tz)), '2026-10-25T00:30:00.007Z')
    t.equal(iso(wallToUtc(d('2026-10-25T02:00:00'), tz)), '2026-10-25T00:00:00.000Z')
  })
})

t.test('America/New_York 2026', async (t) => {
  const tz = 'America/New_York'
  pairs(t, tz, [
    { utc: '2026-01-15T12:00:00.000', wall: '2026-01-15T07:00:00.000' }, // EST
    { utc: '2026-07-15T12:00:00.000', wall: '2026-07-15T08:00:00.000' }, // EDT
    { utc: '2026-03-08T06:59:59.999', wall: '2026-03-08T01:59:59.999' },
    { utc: '2026-03-08T07:00:00.000', wall: '2026-03-08T03:00:00.000' },
    { utc: '2026-11-01T05:59:59.999', wall: '2026-11-01T01:59:59.999' },
    { utc: '2026-11-01T07:00:00.000', wall: '2026-11-01T02:00:00.000' }
  ])
  t.equal(iso(wallToUtc(d('2026-03-08T02:30:00'), tz)), '2026-03-08T07:30:00.000Z', 'gap: 02:30 -> 03:30 EDT')
  t.equal(iso(utcToWall(d('2026-11-01T05:30:00'), tz)), '2026-11-01T01:30:00.000Z', 'EDT occurrence')
  t.equal(iso(utcToWall(d('2026-11-01T06:30:00'), tz)), '2026-11-01T01:30:00.000Z', 'EST occurrence')
  t.equal(iso(wallToUtc(d('2026-11-01T01:30:00'), tz)), '2026-11-01T05:30:00.000Z', 'overlap: the EDT one')
})

t.test('Australia/Sydney 2026: DST ends in April, starts in October', async (t) => {
  const tz = 'Australia/Sydney'
  pairs(t, tz, [
    { utc: '2026-01-15T00:00:00.000', wall: '2026-01-15T11:00:00.000' }, // AEDT, southern summer
    { utc: '2026-07-15T00:00:00.000', wall: '2026-07-15T10:00:00.000' }, // AEST
    { utc: '2026-10-03T16:00:00.000', wall: '2026-10-04T03:00:00.000' }
  ])
  t.equal(iso(utcToWall(d('2026-04-04T15:30:00'), tz)), '2026-04-05T02:30:00.000Z', 'AEDT occurrence')
  t.equal(iso(utcToWall(d('2026-04-04T16:30:00'), tz)), '2026-04-05T02:30:00.000Z', 'AEST occurrence')
  t.equal(iso(wallToUtc(d('2026-04-05T02:30:00'), tz)), '2026-04-04T15:30:00.000Z', 'overlap: the earlier, AEDT one')
  t.equal(iso(wallToUtc(d('2026-10-04T02:30:00'), tz)), '2026-10-03T16:30:00.000Z', 'gap: 02:30 -> 03:30 AEDT')
})

t.test('Asia/Kolkata: +05:30 all year', async (t) => {
  pairs(t, 'Asia/Kolkata', [
    { utc: '2026-01-15T00:00:00.000', wall: '2026-01-15T05:30:00.000' },
    { utc: '2026-07-15T20:45:30.500', wall: '2026-07-16T02:15:30.500' }
  ])
})

t.test('America/St_Johns: a change in the middle of a UTC hour', async (t) => {
  // 02:00 NST (-03:30) = 05:30Z becomes 03:00 NDT (-02:30)
  const tz = 'America/St_Johns'
  pairs(t, tz, [
    { utc: '2026-03-08T05:00:00.000', wall: '2026-03-08T01:30:00.000' },
    { utc: '2026-03-08T05:29:59.999', wall: '2026-03-08T01:59:59.999' },
    { utc: '2026-03-08T05:30:00.000', wall: '2026-03-08T03:00:00.000' },
    { utc: '2026-03-08T05:59:00.000', wall: '2026-03-08T03:29:00.000' }
  ])
})

t.test('old dates do not throw: SQL Server datetime minimum, local mean time', async (t) => {
  // Berlin kept local mean time (+00:53:28) until 1893
  t.equal(iso(utcToWall(d('1753-01-01T00:00:00.000'), 'Europe/Berlin')), '1753-01-01T00:53:28.000Z')
  t.equal(iso(wallToUtc(d('1753-01-01T00:00:00.000'), 'Europe/Berlin')), '1752-12-31T23:06:32.000Z')
  t.equal(iso(utcToWall(d('1753-01-01T00:00:00.000'), 'America/New_York')), '1752-12-31T19:03:58.000Z')
  const early = new Date(0)
  early.setUTCFullYear(50, 5, 1)
  t.equal(iso(utcToWall(early, 'Europe/Berlin')), '0050-06-01T00:53:28.000Z', 'two-digit years are not taken for 19xx')
})

/** every `step` from `from` for `hours`, with odd milliseconds so their loss would show */
function* instants (from: string, hours: number, step = 7 * MIN): Generator<Date> {
  const start = d(from).getTime()
  for (let ms = start; ms < start + hours * HOUR; ms += step) yield new Date(ms + 123)
}

const transitions: Array<{ tz: string, days: string[], overlap: [string, string] }> = [
  { tz: 'Europe/Berlin', days: ['2026-03-28T12:00', '2026-10-24T12:00'], overlap: ['2026-10-25T01:00', '2026-10-25T02:00'] },
  { tz: 'America/New_York', days: ['2026-03-07T12:00', '2026-10-31T12:00'], overlap: ['2026-11-01T06:00', '2026-11-01T07:00'] },
  { tz: 'Australia/Sydney', days: ['2026-04-04T00:00', '2026-10-03T00:00'], overlap: ['2026-04-04T16:00', '2026-04-04T17:00'] }
]

t.test('round trip from UTC: exact except for the second occurrence in an overlap', async (t) => {
  for (const { tz, days, overlap } of transitions) {
    const [from, to] = overlap.map((s) => d(s).getTime())
    let moved = 0
    for (const day of days) {
      for (const u of instants(day, 36)) {
        const w = utcToWall(u, tz)
        const back = wallToUtc(w, tz)
        if (u.getTime() >= from && u.getTime() < to) {
          moved++
          t.equal(back.getTime(), u.getTime() - HOUR, `${tz} ${iso(u)}: the first occurrence, an hour earlier`)
          t.equal(iso(utcToWall(back, tz)), iso(w))
        } else if (back.getTime() !== u.getTime()) {
          t.fail(`${tz} ${iso(u)} -> ${iso(w)} -> ${iso(back)}`)
        }
      }
    }
    t.ok(moved > 5, `${tz}: the overlap was crossed (${moved} instants)`)
  }
})

t.test('round trip from wall time: exact except in the gap', async (t) => {
  const gaps: Record<string, [string, string]> = {
    'Europe/Berlin': ['2026-03-29T02:00', '2026-03-29T03:00'],
    'America/New_York': ['2026-03-08T02:00', '2026-03-08T03:00'],
    'Australia/Sydney': ['2026-10-04T02:00', '2026-10-04T03:00']
  }
  for (const { tz, days } of transitions) {
    const [from, to] = gaps[tz].map((s) => d(s).getTime())
    let skipped = 0
    for (const day of days) {
      for (const w of instants(day, 36)) {
        const back = utcToWall(wallToUtc(w, tz), tz)
        if (w.getTime() >= from && w.getTime() < to) {
          skipped++
          t.equal(back.getTime(), w.getTime() + HOUR, `${tz} ${iso(w)}: moved forward by the gap`)
        } else if (back.getTime() !== w.getTime()) {
          t.fail(`${tz} wall ${iso(w)} -> ${iso(back)}`)
        }
      }
    }
    t.ok(skipped > 5, `${tz}: the gap was crossed (${skipped} wall times)`)
  }
})

t.test('the offset cache stays right after it is emptied', async (t) => {
  // more distinct UTC hours than the cache keeps, in a zone no other test touched
  const tz = 'Europe/Paris'
  const start = d('2000-01-01T00:30:00').getTime()
  for (let h = 0; h < 50_001; h++) utcToWall(new Date(start + h * HOUR), tz)
  t.equal(iso(utcToWall(d('2026-07-01T10:00:00'), tz)), '2026-07-01T12:00:00.000Z')
  t.equal(iso(utcToWall(d('2000-01-01T10:00:00'), tz)), '2000-01-01T11:00:00.000Z')
  t.equal(iso(wallToUtc(d('2026-03-29T02:30:00'), tz)), '2026-03-29T01:30:00.000Z')
})

t.test('nanosecondsDelta from tedious is carried over under both names', async (t) => {
  const withDelta = (iso: string, name: string, value: unknown): Date => {
    const date = d(iso)
    Object.defineProperty(date, name, { value, enumerable: false })
    return date
  }
  type Delta = Date & { nanosecondsDelta?: number, nanosecondDelta?: number }
  for (const tz of ['Europe/Berlin', 'UTC']) {
    for (const convert of [utcToWall, wallToUtc]) {
      const out = convert(withDelta('2026-07-01T10:00:00.123', 'nanosecondsDelta', 0.0004567), tz) as Delta
      t.equal(out.nanosecondsDelta, 0.0004567, `${tz} ${convert.name}: nanosecondsDelta`)
      t.equal(out.nanosecondDelta, 0.0004567, `${tz} ${convert.name}: nanosecondDelta, which tedious writes`)
      t.same(Object.keys(out), [], 'not enumerable, as tedious makes it')
      t.equal(out.getUTCMilliseconds(), 123)
    }
  }
  const fromWriteName = utcToWall(withDelta('2026-07-01T10:00:00', 'nanosecondDelta', 0.0001), 'Europe/Berlin') as Delta
  t.equal(fromWriteName.nanosecondsDelta, 0.0001, 'a Date that already went through once keeps it')
  const plain = utcToWall(d('2026-07-01T10:00:00'), 'Europe/Berlin')
  t.notOk(Object.hasOwn(plain, 'nanosecondsDelta'))
  t.notOk(Object.hasOwn(plain, 'nanosecondDelta'))
  const wrongType = utcToWall(withDelta('2026-07-01T10:00:00', 'nanosecondsDelta', '5'), 'Europe/Berlin')
  t.notOk(Object.hasOwn(wrongType, 'nanosecondDelta'), 'only a number is copied')
})
