// [like] ignores case for every letter, as SQL Server's usual collations do, also on SQLite (whose LIKE folds A to Z only).
import t from 'tap'
import { likeMatches } from '../../src/db/sqlite.js'
import { build } from '../helpers/build.js'

t.test('[like] and [notlike] with letters beyond ASCII, in any case', async (t) => {
  const ctx = await build(t)
  const headers = ctx.auth(ctx.adminToken)
  for (const [nr, name] of [['F-1', 'Écrou M8'], ['F-2', 'écrou à oreilles'], ['F-3', 'Vis 50%'], ['F-4', 'Ölfilter'], ['F-5', 'ÖLFILTER groß']]) {
    t.equal((await ctx.app.inject({ method: 'POST', url: '/api/materials', headers, payload: { materialNumber: nr, name } })).statusCode, 201)
  }
  const names = async (filter: string): Promise<string[]> =>
    ((await ctx.app.inject({ method: 'GET', url: `/api/materials?sort=materialNumber&name=${encodeURIComponent(filter)}`, headers })).json().data as Array<{ materialNumber: string }>).map((m) => m.materialNumber)
  t.same(await names('[like]écrou'), ['F-1', 'F-2'], 'a substring, É and é alike')
  t.same(await names('[like]ÉCROU%'), ['F-1', 'F-2'], 'a prefix')
  t.same(await names('[like]é_rou%'), ['F-1', 'F-2'], '_ is one character')
  t.same(await names('[notlike]ölfilter%'), ['F-1', 'F-2', 'F-3'])
  t.same(await names('[like]vis'), ['F-3'], 'ASCII as before')
  // SQL Server's collations may also take ß for ss; SQLite folds case only
  if (ctx.db.dialect === 'sqlite') t.same(await names('[like]GROSS'), [], 'ß is not ss: case, not spelling')
  t.same(await names('[like]groß'), ['F-5'])
})

t.test('likeMatches: the LIKE pattern as escaped by the gateway', async (t) => {
  t.ok(likeMatches('Vis 50%', '%50\\%%'))
  t.notOk(likeMatches('Vis 500', '%50\\%%'))
  t.ok(likeMatches('A_B', 'a\\_b'))
  t.notOk(likeMatches('axb', 'a\\_b'))
  t.ok(likeMatches('(X).*[Y]', '(x).*[y]'), 'regular expression characters are plain')
  t.ok(likeMatches('ein 😀x', '%😀_'), 'a character beyond the BMP is one')
  t.ok(likeMatches('ÉCROU', 'écrou'))
  t.notOk(likeMatches('écrous', 'écrou'), 'the whole value')
  t.ok(likeMatches('', '%'))
  t.notOk(likeMatches('', '_'))
  t.ok(likeMatches('abcabd', '%ab_'), 'back to the last %')
  // many wildcards on a long value that nearly matches: a backtracking regular expression would not
  // end (the test would time out); the wildcard walk answers at once
  t.notOk(likeMatches('a'.repeat(5000), '%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%é'))
})
