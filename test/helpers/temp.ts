// Temporary directories for tests, removed when the test ends.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'

/** A new directory under the OS's temporary directory, removed with everything in it when `t` ends. */
export function tempDir (t: Test, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}
