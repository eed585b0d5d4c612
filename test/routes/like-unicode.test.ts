// [like] ignores case for every letter, as SQL Server's usual collations do, also on SQLite (whose LIKE folds A to Z only).
import t from 'tap'
import { likeRegExp } from '../../src/db/sqlite.js'
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

t.test('likeRegExp: the LIKE pattern as escaped by the gateway', async (t) => {
  t.ok(likeRegExp('%50\\%%').test('Vis 50%'))
  t.notOk(likeRegExp('%50\\%%').test('Vis 500'))
  t.ok(likeRegExp('a\\_b').test('A_B'))
  t.notOk(likeRegExp('a\\_b').test('axb'))
  t.ok(likeRegExp('(x).*[y]').test('(X).*[Y]'), 'regular expression characters are plain')
  t.ok(likeRegExp('%😀_').test('ein 😀x'), 'a character beyond the BMP is one')
})
