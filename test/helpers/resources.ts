// Counts the timers and sockets alive in this process, unref'd ones included: process.getActiveResourcesInfo() lists only those that keep it running.
import { createHook } from 'node:async_hooks'

/** Resource types counted: timers (setTimeout, setInterval) and TCP sockets, connected or connecting. */
const COUNTED = new Set(['Timeout', 'TCPWRAP', 'TCPCONNECTWRAP'])

export interface ResourceTracker {
  /** how many of each counted type are alive now (created and neither cleared, fired once, nor closed) */
  counts (): Record<string, number>
  /** counts() once the destroy hooks Node queues have run (a timer that just fired is counted until then) */
  settled (): Promise<Record<string, number>>
  stop (): void
}

/** Starts counting: only resources made from now on are seen. */
export function trackResources (): ResourceTracker {
  const alive = new Map<number, string>()
  const hook = createHook({
    init (id, type) { if (COUNTED.has(type)) alive.set(id, type) },
    destroy (id) { alive.delete(id) }
  }).enable()
  return {
    counts () {
      const out: Record<string, number> = {}
      for (const type of COUNTED) out[type] = 0
      for (const type of alive.values()) out[type]++
      return out
    },
    async settled () {
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve))
      return this.counts()
    },
    stop () { hook.disable() }
  }
}
