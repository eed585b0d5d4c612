// Converts between UTC instants and "wall Dates" (local wall-clock time held in a Date's UTC fields) for legacy datetime columns.

const HOUR = 3_600_000
const DAY = 86_400_000
/** a zone's offset map is cleared past this size, so a long-running import cannot grow it without bound */
const MAX_CACHED_HOURS = 50_000

// Zones whose offset is always 0: no formatter, no lookup.
const UTC_ZONES = new Set(['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT'])

interface Zone {
  format: Intl.DateTimeFormat
  /**
   * offset (wall minus UTC, ms) per UTC hour; NaN marks an hour in which the offset changes, since
   * transitions are not always on a UTC hour (St. John's switches at 05:30Z, old LMT ones at odd seconds)
   */
  hours: Map<number, number>
}

const zones = new Map<string, Zone>()

function zone (tz: string): Zone {
  let z = zones.get(tz)
  if (z === undefined) {
    // throws a RangeError for a name the runtime does not know
    const format = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric'
    })
    z = { format, hours: new Map() }
    zones.set(tz, z)
  }
  return z
}

/** a zone whose offset is always 0: its columns hold UTC and need no conversion */
export const isUtcZone = (name: string): boolean => UTC_ZONES.has(name)

export function isTimeZone (name: string): boolean {
  if (UTC_ZONES.has(name)) return true
  if (name === '') return false
  try {
    zone(name)
    return true
  } catch {
    return false
  }
}

/** ms since the epoch of a UTC calendar time; Date.UTC would map years 0-99 to 1900-1999 */
function utcMs (year: number, month: number, day: number, hour: number, minute: number, second: number): number {
  const ms = Date.UTC(year, month - 1, day, hour, minute, second)
  if (year >= 100) return ms
  const d = new Date(ms)
  d.setUTCFullYear(year)
  return d.getTime()
}

/** the exact offset at an instant, from the formatter (whole seconds: the formatter shows no ms) */
function exactOffset (z: Zone, ms: number): number {
  const seconds = Math.floor(ms / 1000) * 1000
  let year = 0; let month = 1; let day = 1; let hour = 0; let minute = 0; let second = 0
  for (const part of z.format.formatToParts(seconds)) {
    switch (part.type) {
      case 'year': year = Number(part.value); break
      case 'month': month = Number(part.value); break
      case 'day': day = Number(part.value); break
      case 'hour': hour = Number(part.value); break
      case 'minute': minute = Number(part.value); break
      case 'second': second = Number(part.value); break
    }
  }
  return utcMs(year, month, day, hour, minute, second) - seconds
}

/** the offset (wall minus UTC, ms) of tz at a UTC instant */
function offsetAt (z: Zone, ms: number): number {
  const hour = Math.floor(ms / HOUR)
  let offset = z.hours.get(hour)
  if (offset === undefined) {
    const start = exactOffset(z, hour * HOUR)
    offset = start === exactOffset(z, hour * HOUR + HOUR - 1000) ? start : NaN
    if (z.hours.size >= MAX_CACHED_HOURS) z.hours.clear()
    z.hours.set(hour, offset)
  }
  return Number.isNaN(offset) ? exactOffset(z, ms) : offset
}

/** a new Date carrying the sub-millisecond part the tedious driver attached to the input */
function withDelta (ms: number, from: Date): Date {
  const d = new Date(ms)
  const own = from as Date & { nanosecondsDelta?: unknown, nanosecondDelta?: unknown }
  const delta = Object.hasOwn(from, 'nanosecondsDelta') ? own.nanosecondsDelta : Object.hasOwn(from, 'nanosecondDelta') ? own.nanosecondDelta : undefined
  if (typeof delta === 'number') {
    // tedious reads nanosecondsDelta and writes nanosecondDelta; non-enumerable as tedious makes it
    Object.defineProperty(d, 'nanosecondsDelta', { value: delta, enumerable: false })
    Object.defineProperty(d, 'nanosecondDelta', { value: delta, enumerable: false })
  }
  return d
}

export function utcToWall (utc: Date, tz: string): Date {
  const ms = utc.getTime()
  if (UTC_ZONES.has(tz) || Number.isNaN(ms)) return withDelta(ms, utc)
  return withDelta(ms + offsetAt(zone(tz), ms), utc)
}

/**
 * A gap takes the offset before the transition (Temporal's 'compatible'); an overlap takes the
 * earlier instant. Assumes at most one transition within a day of the time, true of every zone
 * in use since 1900.
 */
export function wallToUtc (wall: Date, tz: string): Date {
  const ms = wall.getTime()
  if (UTC_ZONES.has(tz) || Number.isNaN(ms)) return withDelta(ms, wall)
  const z = zone(tz)
  const before = offsetAt(z, ms - DAY)
  const after = offsetAt(z, ms + DAY)
  if (before === after) return withDelta(ms - before, wall)
  const early = ms - Math.max(before, after)
  const late = ms - Math.min(before, after)
  if (offsetAt(z, early) === Math.max(before, after)) return withDelta(early, wall)
  if (offsetAt(z, late) === Math.min(before, after)) return withDelta(late, wall)
  // no instant shows this wall time: a gap, moved forward by its length
  return withDelta(ms - before, wall)
}

/**
 * The earliest instant that any moment from `ms` on shows as, once its wall-clock time is read
 * back (wallToUtc: the first occurrence in the autumn's repeated hour). Usually `ms` itself; but
 * from within the repeated hour (either occurrence) the wall times of the second occurrence are
 * shown an hour early, back to the start of the first one. A sync point must not lie later than
 * that, or a change stamped in the second occurrence is before it and never synced.
 */
export function earliestShownFrom (ms: number, tz: string): number {
  if (UTC_ZONES.has(tz) || Number.isNaN(ms)) return ms
  const shown = (t: number): number => wallToUtc(utcToWall(new Date(t), tz), tz).getTime()
  let earliest = Math.min(ms, shown(ms))
  const z = zone(tz)
  const before = offsetAt(z, ms)
  if (offsetAt(z, ms + DAY) < before) {
    // a clock set back within the day: its moment (to the second), whose wall time repeats earlier ones
    let lo = Math.floor(ms / 1000) * 1000
    let hi = lo + DAY
    while (hi - lo > 1000) {
      const mid = lo + Math.floor((hi - lo) / 2000) * 1000
      if (offsetAt(z, mid) === before) lo = mid
      else hi = mid
    }
    earliest = Math.min(earliest, shown(hi))
  }
  return earliest
}
