// The README's reference sections that name files and packages: "Dependencies and why" against
// package.json, and the source layout in "Development" against the directories in the repository.
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { README, ROOT } from './helpers/documented.js'
import { fenced, section } from './helpers/markdown.js'

t.test('"Dependencies and why" names every package in package.json, and only those', async (t) => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string>>
  const installed = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)]
  const named = section(README, 'Dependencies and why').split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| package'))
    .flatMap((line) => line.split('|')[1].split(',').map((name) => name.trim()))
  const covers = (name: string, pattern: string) => pattern.endsWith('/*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern
  t.same(installed.filter((name) => !named.some((pattern) => covers(name, pattern))), [], 'every package has its reason')
  t.same(named.filter((pattern) => !installed.some((name) => covers(name, pattern))), [], 'no package named there is gone')
})

t.test('"Development" lists every source directory', async (t) => {
  const layout = fenced(section(README, 'Development'), '')[0]
  const listed = new Set(layout.split('\n').map((line) => line.split(/\s+/)[0]))
  const subdirs = (dir: string) => readdirSync(join(ROOT, dir), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => `${dir}/${e.name}/`)
  const topDirs = ['src/', 'plugins/', 'schemas/', 'test/', 'bench/', 'systemd/']
  const sourceDirs = [...subdirs('src'), ...subdirs('plugins')]
  for (const dir of [...topDirs, ...sourceDirs]) t.ok(listed.has(dir), `${dir} is listed`)
})
