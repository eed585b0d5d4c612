// The router's query string parser: what Fastify's default parser reads, plus the mark on a query that does not decode.
import t from 'tap'
import { MALFORMED_QUERY, malformedQueryMessage, parseQuery } from '../src/query-string.js'

t.test('reads a query as fast-querystring does', async (t) => {
  t.same({ ...parseQuery('') }, {})
  t.same({ ...parseQuery('a=1&b=2&a=3&a=4') }, { a: ['1', '3', '4'], b: '2' }, 'a repeated name: every value, in order')
  t.same({ ...parseQuery('flag&empty=&=x&&') }, { flag: '', empty: '', '': 'x' }, 'no value, an empty value, an empty name')
  t.same({ ...parseQuery('name=a+b&x+y=%2B&q=a=b') }, { name: 'a b', 'x y': '+', q: 'a=b' }, "'+' is a space, %2B a plus, a second '=' part of the value")
  t.same({ ...parseQuery('name=%C3%A9crou%20M8&%E2%82%AC=%F0%9F%98%80&k=%25') }, { name: 'écrou M8', '€': '😀', k: '%' })
  const odd = parseQuery('__proto__=x&constructor=y')
  t.equal(Object.getPrototypeOf(Object.getPrototypeOf(odd)), null, 'no Object.prototype behind it')
  t.same(Object.keys(odd), ['__proto__', 'constructor'], '__proto__ is a parameter like any other')
  t.equal(parseQuery('a=%C3%A9')[MALFORMED_QUERY], undefined, 'a query that decodes is not marked')
})

t.test('marks the first parameter whose value or name is not valid percent-encoded UTF-8, keeping it as sent', async (t) => {
  const cases: Array<[string, string, 'name' | 'value']> = [
    ['name=%FF', 'name', 'value'], // no UTF-8 byte
    ['name=%ED%A0%80', 'name', 'value'], // half of a surrogate pair
    ['name=%C0%80', 'name', 'value'], // an overlong NUL
    ['name=%E0%A4%A', 'name', 'value'], // a sequence cut short
    ['a=1&name=%FF&other=%FE', 'name', 'value'],
    ['na%FFme=1', 'na%FFme', 'name'],
    ['na%C3%A9me=%FF', 'naéme', 'value']
  ]
  for (const [query, name, part] of cases) {
    const parsed = parseQuery(query)
    t.same(parsed[MALFORMED_QUERY], { name, part }, query)
  }
  t.same(Object.entries(parseQuery('a=%FF&b=2')), [['a', '%FF'], ['b', '2']], 'kept as sent, as the default parser does')
  // a '%' that starts no escape is a literal percent, as URL parsers read it (curl 'name=[like]%valve%')
  for (const [query, value] of [['name=%zz', '%zz'], ['name=%', '%'], ['name=50%off', '50%off'], ['name=[like]%valve%', '[like]%valve%'], ['name=%25%zz', '%%zz']]) {
    const parsed = parseQuery(query)
    t.equal(parsed[MALFORMED_QUERY], undefined, `${query}: not marked`)
    t.equal(parsed.name, value, `${query}: a literal '%'`)
  }
  t.same(Object.entries(parseQuery('%=1')), [['%', '1']])
  t.equal(malformedQueryMessage({ name: 'name', part: 'value' }), "The value of query parameter 'name' is not valid percent-encoded UTF-8: percent-encode text as UTF-8 (é is %C3%A9, a literal '%' before two hex digits %25)")
  t.match(malformedQueryMessage({ name: 'x'.repeat(500), part: 'name' }), /^The query parameter name 'x{100}…' is not valid/, 'a long name is cut')
})
