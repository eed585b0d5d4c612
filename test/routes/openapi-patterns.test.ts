// The document's patterns compile in the languages client generators write (JavaScript with and without
// the 'u' flag, Python, Java) and answer there as the gateway does for every character of the BMP.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { NOT_BLANK, portablePatterns, VISIBLE_KEY, VISIBLE_USERNAME } from '../../schemas/common.js'
import { build } from '../helpers/build.js'

/** Every `pattern` of the document, by where it is */
function patternsOf (node: unknown, at = '', found: Array<{ at: string, pattern: string }> = []): Array<{ at: string, pattern: string }> {
  if (node === null || typeof node !== 'object') return found
  for (const [key, value] of Object.entries(node)) {
    if (key === 'pattern' && typeof value === 'string') found.push({ at, pattern: value })
    else patternsOf(value, `${at}/${key}`, found)
  }
  return found
}

const code = (c: number): string => `U+${c.toString(16).toUpperCase().padStart(4, '0')}`

t.test('the document gives each pattern in a form that Java, Python and JavaScript without the u flag compile', async (t) => {
  const { app } = await build(t)
  const spec = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const found = patternsOf(spec.paths)
  const published = portablePatterns()
  t.same([...new Set(found.map((p) => p.pattern))].sort(), Object.values(published).sort(), 'the three portable patterns, and nothing else')
  t.ok(found.some((p) => p.at.includes('/api/materials/post/requestBody') && p.pattern === published[VISIBLE_KEY]), 'a new material number')
  t.ok(found.some((p) => p.at.includes('/api/users/login/post/requestBody') && p.pattern === published[VISIBLE_USERNAME]), 'a login\'s username')
  for (const { at, pattern } of found) {
    t.notMatch(pattern, /\\[pP]\{/, `${at}: no Unicode property class`)
    t.doesNotThrow(() => new RegExp(pattern), `${at}: compiles without the u flag`)
  }
  // what a client generated from it would say of a plain key: before, JavaScript without the u flag read
  // \p{Cc} as the letters p, {, C, c and }, and refused PTL-01
  for (const pattern of Object.values(published)) {
    t.ok(new RegExp(pattern).test('PTL-01'), 'PTL-01 is taken without the u flag')
  }
})

t.test('a portable pattern answers as the gateway\'s own, for every BMP character, with and without the u flag', async (t) => {
  for (const [original, portable] of Object.entries(portablePatterns())) {
    const server = new RegExp(original, 'u')
    const unicode = new RegExp(portable, 'u')
    const units = new RegExp(portable)
    const differ: string[] = []
    for (let c = 0; c <= 0xffff; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue
      const ch = String.fromCharCode(c)
      for (const value of [`A${ch}B`, ch, ` ${ch}`, `${ch} `, `A${ch}`]) {
        const want = server.test(value)
        if (unicode.test(value) !== want || units.test(value) !== want) differ.push(`${code(c)} in ${JSON.stringify(value)}`)
      }
    }
    t.same(differ.slice(0, 10), [], `${original === NOT_BLANK ? 'NOT_BLANK' : original === VISIBLE_KEY ? 'VISIBLE_KEY' : 'VISIBLE_USERNAME'}: the same answers`)
    // beyond the BMP: visible characters are taken by all three; the gateway alone refuses invisible ones
    for (const value of ['\u{1F4E6}-1', 'M-\u{20000}']) {
      t.same([server.test(value), unicode.test(value), units.test(value)], [true, true, true], `${JSON.stringify(value)} taken`)
    }
    if (original !== NOT_BLANK) {
      t.same([server.test('PTL-01\u{E0001}'), unicode.test('PTL-01\u{E0001}'), units.test('PTL-01\u{E0001}')], [false, true, true],
        'a tag character: the document lets it pass, the gateway refuses it (the README says so)')
    }
  }
})

t.test('the gateway still refuses what the document lets pass beyond the BMP', async (t) => {
  const ctx = await build(t)
  const res = await ctx.app.inject({ method: 'POST', url: '/api/materials', headers: ctx.auth(ctx.adminToken), payload: { materialNumber: 'PTL-01\u{E0001}', name: 'Tagged' } })
  t.equal(res.statusCode, 400)
  t.match(res.json().message, /U\+E0001/)
})

t.test('Python and Java compile the patterns and answer as the gateway does', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pg-patterns-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const cases = Object.values(portablePatterns()).map((pattern) => ({
    pattern,
    values: ['PTL-01', 'A\u200bB', '   ', 'A\u00a0B', 'Müller', '\u{1F4E6}-1', 'x\u0000', 'PTL-01\n', '\u00a0']
  }))
  const expected = cases.map(({ pattern, values }) => values.map((value) => new RegExp(pattern, 'u').test(value)))
  writeFileSync(join(dir, 'cases.json'), JSON.stringify(cases))

  const python = spawnSync('python3', ['-c', `import json, re, sys
cases = json.load(open(sys.argv[1], encoding='utf-8'))
print(json.dumps([[re.search(c['pattern'], v) is not None for v in c['values']] for c in cases]))`, join(dir, 'cases.json')], { encoding: 'utf8' })
  if (python.error !== undefined) t.pass('Python\'s re', { skip: `no python3 here: ${python.error.message}` })
  else {
    t.equal(python.status, 0, python.stderr)
    t.same(JSON.parse(python.stdout), expected, 'Python\'s re')
  }

  // Java reads the cases line by line: the pattern, then each value, as JSON strings without quotes escaped away
  const lines = cases.flatMap(({ pattern, values }) => [pattern, ...values.map((value) => JSON.stringify(value))])
  writeFileSync(join(dir, 'cases.txt'), `${cases.length}\n${cases[0].values.length}\n${lines.join('\n')}\n`)
  writeFileSync(join(dir, 'Check.java'), `import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import java.util.regex.*;
public class Check {
  static String unquote (String json) {
    StringBuilder out = new StringBuilder();
    for (int i = 1; i < json.length() - 1; i++) {
      char c = json.charAt(i);
      if (c != '\\\\') { out.append(c); continue; }
      char e = json.charAt(++i);
      if (e == 'u') { out.append((char) Integer.parseInt(json.substring(i + 1, i + 5), 16)); i += 4; }
      else out.append(e == 'n' ? '\\n' : e == 't' ? '\\t' : e);
    }
    return out.toString();
  }
  public static void main (String[] args) throws Exception {
    List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
    int patterns = Integer.parseInt(lines.get(0)), values = Integer.parseInt(lines.get(1)), at = 2;
    StringBuilder out = new StringBuilder("[");
    for (int p = 0; p < patterns; p++) {
      Pattern pattern = Pattern.compile(lines.get(at++));
      out.append(p == 0 ? "[" : ",[");
      for (int v = 0; v < values; v++) out.append(v == 0 ? "" : ",").append(pattern.matcher(unquote(lines.get(at++))).find());
      out.append("]");
    }
    System.out.println(out.append("]"));
  }
}
`)
  const java = spawnSync('java', [join(dir, 'Check.java'), join(dir, 'cases.txt')], { encoding: 'utf8', timeout: 60_000 })
  if (java.error !== undefined) t.pass('Java\'s java.util.regex', { skip: `no java here: ${java.error.message}` })
  else {
    t.equal(java.status, 0, java.stderr)
    t.same(JSON.parse(java.stdout), expected, 'Java\'s java.util.regex')
  }
})
