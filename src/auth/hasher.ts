// The password-hashing process (HashProcess in passwords.ts): argon2 hashes and checks, asked for over
// the IPC channel. It holds nothing but the decoy; it ends when its parent goes (channel closed) or says so.
import argon2 from 'argon2'

export interface HashRequest {
  id: number
  op: 'hash' | 'verify'
  password: string
  /** verify: the stored hash; undefined checks against the decoy (unknown users cost the same time) */
  stored?: string
  options: { type: 2, memoryCost: number, timeCost: number, parallelism: number }
}

export type HashReply = { id: number, ok: true, value: string | boolean } | { id: number, ok: false, error: string }

let decoy: Promise<string> | undefined

async function answer (m: HashRequest): Promise<string | boolean> {
  if (m.op === 'hash') return await argon2.hash(m.password, m.options)
  if (m.stored === undefined) {
    decoy ??= argon2.hash(`decoy-${Math.random()}`, m.options)
    await argon2.verify(await decoy, m.password)
    return false
  }
  // a hash that does not parse is a failed check, as in-process
  return await argon2.verify(m.stored, m.password).catch(() => false)
}

process.on('message', (m: HashRequest) => {
  answer(m).then(
    (value) => { process.send?.({ id: m.id, ok: true, value } satisfies HashReply) },
    (err: unknown) => { process.send?.({ id: m.id, ok: false, error: err instanceof Error ? err.message : String(err) } satisfies HashReply) }
  )
})
// the gateway closed the channel (idle, shutting down) or is gone: nothing left to do
process.on('disconnect', () => process.exit(0))
