import net from 'node:net'
import { once } from 'node:events'
import t from 'tap'
import {
  decodeArgs,
  decodePayload,
  encodeArgs,
  encodeFrame,
  escapeValue,
  FrameDecoder,
  FrameFormatError,
  FrameTooLongError,
  nextSeq,
  unescapeValue,
  type Frame
} from '../../src/hardware/codec.js'

const STX = '\x02'
const ETX = '\x03'
const raw = (payload: string): Buffer => Buffer.from(STX + payload + ETX, 'latin1')

t.test('encodes the example frame from the design exactly', async t => {
  const buf = encodeFrame({ seq: 42, kind: 'REQ', cmd: 'LIGHT', args: { addr: 3, qty: 2, text: 'M-100', ref: 'order-7' } })
  t.same(buf, raw('0042|REQ|LIGHT|addr=3;qty=2;text=M-100;ref=order-7'))
  t.same(encodeFrame({ seq: 1, kind: 'HBT', cmd: 'PING' }), raw('0001|HBT|PING|'), 'the third | is always there')
  t.same(encodeFrame({ seq: 9999, kind: 'ACK', cmd: 'X', args: { a: undefined, b: null, c: true } }), raw('9999|ACK|X|c=true'),
    'null/undefined values are left out')
})

t.test('escapes every reserved character with upper-case hex', async t => {
  t.equal(escapeValue('a|b;c=d%e'), 'a%7Cb%3Bc%3Dd%25e')
  for (let c = 0; c < 0x20; c++) {
    t.equal(escapeValue(String.fromCharCode(c)), '%' + c.toString(16).toUpperCase().padStart(2, '0'), `control byte ${c}`)
  }
  t.equal(escapeValue('\x7f'), '%7F')
  t.equal(escapeValue('Müller'), 'M%C3%BCller', 'non-ASCII goes as percent-encoded UTF-8')
  t.equal(escapeValue('plain text, (ok) & "quotes" / ~'), 'plain text, (ok) & "quotes" / ~', 'printable ASCII stays as is')
  t.equal(unescapeValue('%7c%3b'), '|;', 'lower-case hex is accepted on input')
  t.throws(() => unescapeValue('%G1'), FrameFormatError)
  t.throws(() => unescapeValue('abc%4'), FrameFormatError)
  t.throws(() => unescapeValue('%FF'), FrameFormatError, 'bytes that are not UTF-8')
})

t.test('round-trips every escaped character and non-ASCII text', async t => {
  let all = ''
  for (let c = 0; c < 0x20; c++) all += String.fromCharCode(c)
  const values = ['|', ';', '=', '%', '%25', all, '\x7f', 'a|b;c=d%e', 'Grüße 😀 ∑', '', ' spaces  ', 'x'.repeat(500)]
  for (const [i, value] of values.entries()) {
    const frame: Frame = { seq: i + 1, kind: 'EVT', cmd: 'CONFIRM', args: { v: value, k_2: 'x' } }
    const buf = encodeFrame(frame)
    for (const byte of buf.subarray(1, -1)) t.ok(byte >= 0x20 && byte < 0x7f, 'payload is printable ASCII')
    const decoder = new FrameDecoder()
    t.same(decoder.push(buf), [frame], JSON.stringify(value).slice(0, 40))
  }
})

t.test('argument helpers', async t => {
  t.same(decodeArgs(''), {})
  t.equal(encodeArgs({}), '')
  t.equal(encodeArgs(), '')
  const args = decodeArgs('__proto__=x;constructor=y')
  t.ok(Object.hasOwn(args, '__proto__'), '__proto__ is an own data property')
  t.equal(args.__proto__, 'x')
  t.equal(Object.getPrototypeOf(args), Object.prototype)
  t.throws(() => decodeArgs('a=1;a=2'), FrameFormatError, 'duplicate keys')
  t.throws(() => decodeArgs('a'), FrameFormatError, 'no =')
  t.throws(() => decodeArgs('a=1;'), FrameFormatError, 'empty pair')
  t.throws(() => decodeArgs('a-b=1'), FrameFormatError, 'bad key')
  t.throws(() => encodeArgs({ 'a-b': 1 }), TypeError)
  t.throws(() => encodeArgs({ '': 1 }), TypeError)
})

t.test('refuses frames the protocol cannot carry', async t => {
  t.throws(() => encodeFrame({ seq: 0, kind: 'REQ', cmd: 'A' }), RangeError)
  t.throws(() => encodeFrame({ seq: 10000, kind: 'REQ', cmd: 'A' }), RangeError)
  t.throws(() => encodeFrame({ seq: 1.5, kind: 'REQ', cmd: 'A' }), RangeError)
  t.throws(() => encodeFrame({ seq: 1, kind: 'FOO' as 'REQ', cmd: 'A' }), TypeError)
  t.throws(() => encodeFrame({ seq: 1, kind: 'REQ', cmd: 'A|B' }), TypeError)
  t.throws(() => encodeFrame({ seq: 1, kind: 'REQ', cmd: '' }), TypeError)
  t.throws(() => encodeFrame({ seq: 1, kind: 'REQ', cmd: 'A', args: { text: 'x'.repeat(100) } }, 64), RangeError)
  t.equal(encodeFrame({ seq: 1, kind: 'REQ', cmd: 'A', args: { t: 'x'.repeat(49) } }, 64).length, 64, 'exactly maxFrameBytes is fine')
})

t.test('SEQ counts 0001-9999 and wraps to 0001', async t => {
  t.equal(nextSeq(0), 1)
  t.equal(nextSeq(1), 2)
  t.equal(nextSeq(9998), 9999)
  t.equal(nextSeq(9999), 1)
})

t.test('decodePayload rejects malformed payloads', async t => {
  const bad = [
    '', '0001|REQ|A', '0001|REQ|A|x|y', '1|REQ|A|', '00001|REQ|A|', '0000|REQ|A|', 'abcd|REQ|A|',
    '0001|FOO|A|', '0001|req|A|', '0001|REQ||', '0001|REQ|A B|', '0001|REQ|A|k=%ZZ', '0001|REQ|A|k=\x01'
  ]
  for (const payload of bad) t.throws(() => decodePayload(Buffer.from(payload, 'latin1')), FrameFormatError, JSON.stringify(payload))
  t.throws(() => decodePayload(Buffer.from('0001|REQ|A|text=Mü', 'utf8')), FrameFormatError, 'raw non-ASCII')
  t.same(decodePayload(Buffer.from('0007|NAK|LIGHT|code=E42;msg=jam%3B bad')), { seq: 7, kind: 'NAK', cmd: 'LIGHT', args: { code: 'E42', msg: 'jam; bad' } })
})

t.test('decoder: frames split at every byte', async t => {
  const frames: Frame[] = [
    { seq: 1, kind: 'REQ', cmd: 'LIGHT', args: { addr: '3', text: 'a|b' } },
    { seq: 2, kind: 'HBT', cmd: 'PING', args: {} },
    { seq: 3, kind: 'EVT', cmd: 'CONFIRM', args: { ref: 'Ü;=' } }
  ]
  const stream = Buffer.concat(frames.map(f => encodeFrame(f)))
  const decoder = new FrameDecoder()
  const out: Frame[] = []
  for (let i = 0; i < stream.length; i++) out.push(...decoder.push(stream.subarray(i, i + 1)))
  t.same(out, frames)
  t.equal(decoder.droppedBytes, 0)
  t.equal(decoder.pendingBytes, 0)
  t.same(new FrameDecoder().push(stream), frames, 'several frames in one chunk')
  t.same(new FrameDecoder().push(Buffer.alloc(0)), [])
})

t.test('decoder: garbage is dropped, counted and reported', async t => {
  const reports: Array<[string, number]> = []
  const decoder = new FrameDecoder({ onDiscard: (reason, bytes) => reports.push([reason, bytes]) })
  const good = encodeFrame({ seq: 5, kind: 'ACK', cmd: 'STATUS', args: { state: 'idle' } })
  const chunk = Buffer.concat([Buffer.from('noise'), good, Buffer.from([0xff, 0x00, 0x03]), good, Buffer.from('tail')])
  t.same(decoder.push(chunk).map(f => f.seq), [5, 5])
  t.equal(decoder.droppedBytes, 5 + 3 + 4)
  t.equal(decoder.malformed, 0)
  t.same(reports, [['garbage', 5], ['garbage', 3], ['garbage', 4]])

  // A frame cut off by a new STX is dropped; the new frame is kept.
  const d2 = new FrameDecoder()
  t.same(d2.push(Buffer.concat([Buffer.from('\x020001|REQ|LIG'), good])).map(f => f.cmd), ['STATUS'])
  t.equal(d2.droppedBytes, 13)
})

t.test('decoder: CR, LF, space and tab between frames are ignored, not dropped', async t => {
  const reports: Array<[string, number]> = []
  const decoder = new FrameDecoder({ onDiscard: (reason, bytes) => reports.push([reason, bytes]) })
  const good = encodeFrame({ seq: 5, kind: 'ACK', cmd: 'STATUS', args: { state: 'idle' } })
  const crlf = Buffer.from('\r\n')
  t.same(decoder.push(Buffer.concat([good, crlf, good, crlf, Buffer.from(' \t'), good, crlf])).map(f => f.seq), [5, 5, 5])
  t.equal(decoder.droppedBytes, 0)
  t.same(reports, [])
  t.same(decoder.push(Buffer.from('\r\nxy\r\n')), [])
  t.equal(decoder.droppedBytes, 2, 'only the other bytes count')
  t.same(reports, [['garbage', 2]])
})

t.test('decoder: malformed frames are counted and the stream goes on', async t => {
  const reports: string[] = []
  const decoder = new FrameDecoder({ onDiscard: (reason, _bytes, detail) => reports.push(`${reason}: ${detail}`) })
  const good = encodeFrame({ seq: 9, kind: 'EVT', cmd: 'HELLO', args: { id: 'ctl-1' } })
  const chunk = Buffer.concat([
    raw('0001|REQ|A'), good, raw('xx|REQ|A|'), Buffer.from('\x020001|REQ|A|t=Grüße\x03', 'utf8'), raw('0001|REQ|A|k=%4'), good
  ])
  // a frame whose SEQ, KIND and CMD read and only its ARGS do not comes out marked invalid, for the NAK every REQ and EVT gets
  t.same(decoder.push(chunk).map(f => [f.cmd, f.invalid]), [['HELLO', undefined], ['A', 'byte 0xc3 in payload'], ['A', 'bad escape at 0'], ['HELLO', undefined]])
  t.equal(decoder.malformed, 4)
  t.equal(reports.length, 4)
  t.ok(reports.every(r => r.startsWith('malformed: ')))
  t.equal(decoder.droppedBytes, chunk.length - 2 * good.length)
})

t.test('decoder: an oversize frame throws instead of buffering', async t => {
  const decoder = new FrameDecoder({ maxFrameBytes: 64 })
  t.throws(() => decoder.push(Buffer.concat([Buffer.from([2]), Buffer.alloc(100, 0x41), Buffer.from([3])])), FrameTooLongError)

  // Arriving in small pieces without an ETX: fails as soon as it passes the limit.
  const d2 = new FrameDecoder({ maxFrameBytes: 64 })
  d2.push(Buffer.from([2]))
  let threw = false
  for (let i = 0; i < 100 && !threw; i++) {
    try {
      d2.push(Buffer.alloc(10, 0x41))
      t.ok(d2.pendingBytes <= 64, 'never holds more than maxFrameBytes')
    } catch (err) {
      t.type(err, FrameTooLongError)
      t.equal((err as FrameTooLongError).maxFrameBytes, 64)
      threw = true
    }
  }
  t.ok(threw)
  t.equal(d2.pendingBytes, 0, 'the partial frame is forgotten')
  t.same(d2.push(encodeFrame({ seq: 1, kind: 'HBT', cmd: 'PONG' })).length, 1, 'usable again after the error')

  // Exactly at the limit is fine.
  const atLimit = encodeFrame({ seq: 1, kind: 'REQ', cmd: 'A', args: { t: 'x'.repeat(49) } }, 64)
  t.equal(new FrameDecoder({ maxFrameBytes: 64 }).push(atLimit).length, 1)
  t.throws(() => new FrameDecoder({ maxFrameBytes: 2 }), RangeError)
})

t.test('decoder: a flood of bytes without STX is not buffered', async t => {
  const decoder = new FrameDecoder({ maxFrameBytes: 64 })
  for (let i = 0; i < 100; i++) decoder.push(Buffer.alloc(1000, 0x41))
  t.equal(decoder.pendingBytes, 0)
  t.equal(decoder.droppedBytes, 100000)
  decoder.reset()
  t.equal(decoder.push(encodeFrame({ seq: 1, kind: 'HBT', cmd: 'PING' })).length, 1)
})

t.test('decoder over a real socket with random chunking', async t => {
  const frames: Frame[] = []
  for (let i = 1; i <= 300; i++) {
    frames.push({ seq: i, kind: i % 2 === 0 ? 'EVT' : 'ACK', cmd: 'CONFIRM', args: { addr: String(i), ref: `ord|${i};=%\n`, text: 'Ä'.repeat(i % 7) } })
  }
  const payload = Buffer.concat(frames.flatMap(f => [encodeFrame(f), Buffer.from('junk')]))
  const server = net.createServer(async socket => {
    socket.setNoDelay(true)
    let offset = 0
    while (offset < payload.length) {
      const size = 1 + Math.floor(Math.random() * 97)
      socket.write(payload.subarray(offset, offset + size))
      offset += size
      if (Math.random() < 0.1) await new Promise(resolve => setImmediate(resolve))
    }
    socket.end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const { port } = server.address() as net.AddressInfo
  const socket = net.connect(port, '127.0.0.1')
  const decoder = new FrameDecoder()
  const received: Frame[] = []
  socket.on('data', (chunk: Buffer) => received.push(...decoder.push(chunk)))
  await once(socket, 'close')
  t.same(received, frames)
  t.equal(decoder.droppedBytes, 4 * 300)
})
