// How a test starts picking-gateway (or a bench script) in a child process: the compiled JavaScript in dist/, as
// production runs it, when it is current; the TypeScript source under the test's own loaders otherwise.
//
// Compiling the sources again in every child (tap's ts-node loader) cost 3 to 11 s of CPU per process against 0.3 s
// for dist/ (measured: `--help` of the CLI, 4.2 s of user time under the loader, transpile only, against 0.33 s), and
// the process tests start a few hundred: on a loaded CI machine their files ran into tap's per-file timeout.
// `npm ci` and `npm run build` make dist/; after an edit without a build the tests fall back to the sources, slower but
// never stale. PG_TEST_FROM_SOURCE=1 forces the sources (and with them coverage of the child processes).
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

export const ROOT = join(import.meta.dirname, '..', '..')

/** The directories tsconfig.build.json compiles into dist/. */
const SOURCES = ['src', 'plugins', 'schemas', 'bench']

const current = new Map<string, boolean>()

/** Whether dist/ under `root` holds a compiled file for every TypeScript source there, none older than its source. */
export function builtIsCurrent (root = ROOT): boolean {
  let known = current.get(root)
  if (known === undefined) {
    known = process.env.PG_TEST_FROM_SOURCE !== '1' && SOURCES.every((dir) => !existsSync(join(root, dir)) || treeIsBuilt(root, dir))
    current.set(root, known)
  }
  return known
}

function treeIsBuilt (root: string, dir: string): boolean {
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (!treeIsBuilt(root, path)) return false
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
      const built = join(root, 'dist', path.replace(/\.ts$/, '.js'))
      if (!existsSync(built) || statSync(built).mtimeMs < statSync(join(root, path)).mtimeMs) return false
    }
  }
  return true
}

/** The file that runs `file`, a TypeScript file named from the package root ('src/cli.ts'): its compiled one when dist/ is current. */
export function runnable (file: string, root = ROOT): string {
  return builtIsCurrent(root) ? join(root, 'dist', file.replace(/\.ts$/, '.js')) : join(root, file)
}

/** The URL a script (`node -e`) imports `file` ('src/server.ts') by. */
export function moduleUrl (file: string, root = ROOT): string {
  return pathToFileURL(runnable(file, root)).href
}

/**
 * node's loaders for a file or script that imports one: none when dist/ is current, else this process's
 * (`process.execArgv`; `withCoverage: false` leaves out tap's coverage hook, for a child whose own exit the test watches).
 */
export function scriptLoaders (options: { root?: string, withCoverage?: boolean } = {}): string[] {
  if (builtIsCurrent(options.root ?? ROOT)) return []
  return options.withCoverage === false ? process.execArgv.filter((a) => !a.includes('processinfo')) : process.execArgv
}

/** node's arguments that run `file`: its loaders (`scriptLoaders`), then the file (`runnable`). */
export function nodeArgs (file: string, options: { root?: string, withCoverage?: boolean } = {}): string[] {
  return [...scriptLoaders(options), runnable(file, options.root)]
}
