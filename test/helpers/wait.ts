// Waiting helpers for tests that watch sockets and processes: poll a condition, expect a rejection.

export const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

/** Polls until cond() holds; throws naming what it waited for after `ms` (generous: CI machines are loaded). */
export async function until (cond: () => boolean | Promise<boolean>, what: string, ms = 10000): Promise<void> {
  const end = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(5)
  }
}

/** The error a promise rejects with; throws when it resolves instead. */
export async function rejection<E = Error> (p: Promise<unknown>): Promise<E> {
  try {
    await p
  } catch (err) {
    return err as E
  }
  throw new Error('expected a rejection')
}

/**
 * How a promise stands once the current event-loop turn is over (its microtasks and nextTicks run, no timer, no I/O):
 * 'rejected' or 'resolved' means it settled "at once", without waiting for a socket, a timer or a retry. A check
 * of "at once" that does not depend on how fast a loaded CI machine is, as a `Date.now()` bound does.
 */
export async function settledThisTurn (p: Promise<unknown>): Promise<'resolved' | 'rejected' | 'pending'> {
  let state: 'resolved' | 'rejected' | 'pending' = 'pending'
  p.then(() => { state = 'resolved' }, () => { state = 'rejected' })
  await new Promise((resolve) => setImmediate(resolve))
  return state
}
