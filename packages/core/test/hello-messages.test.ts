import { describe, expect, it } from 'vitest'
import { HELLO_SHARED_SEQ_MAX, helloOnlyMessage } from '../src/hello-messages.ts'
import { PhoenixCore, SharedNumbering, type Effect, type UpdateMessage } from '../src/index.ts'

function drain(core: PhoenixCore, nowMs = 0): Effect[] {
  const sent: Effect[] = []
  for (let i = 0; i < 100 && core.hasWork(nowMs); i++) sent.push(...core.step(nowMs).effects)
  return sent
}

const messagesTo = (sent: readonly Effect[], peers: readonly string[]): UpdateMessage[] =>
  sent.flatMap((e) => (e.type === 'send' && peers.includes(e.to) ? [e.message] : []))

// That the hellos of a burst are shared: packages/sim/test/burst.test.ts (a one-subnet run).
describe('hello-only messages: one frozen object per receiver seq', () => {
  it('a receiver applies a shared hello like its own copy (it writes nothing to it) and answers with the record the sender lacks', () => {
    const numbering = new SharedNumbering(100)
    const q = new PhoenixCore({ id: 'q', addresses: ['addr:q'] }, numbering)
    drain(q)
    const answers = ['a', 'b'].map((from) => {
      q.connectionUp(from, 0)
      q.receive(from, helloOnlyMessage({ receiverSeq: undefined }), 0)
      return drain(q).filter((e) => e.type === 'send' && e.to === from)
    })
    for (const sent of answers) expect(messagesTo(sent, ['a', 'b']).some((m) => m.entries.some((a) => a.destination === 'q'))).toBe(true)
    q.checkInvariants()
  })

  it('past HELLO_SHARED_SEQ_MAX a hello-only message is a fresh object per send, with the same content', () => {
    const seq = HELLO_SHARED_SEQ_MAX
    const [x, y] = [helloOnlyMessage({ receiverSeq: seq }), helloOnlyMessage({ receiverSeq: seq })]
    expect(x).not.toBe(y)
    expect(x).toEqual({ neighbourSlots: [], transSets: [], entries: [], hello: { receiverSeq: seq } })
    expect(helloOnlyMessage({ receiverSeq: seq - 1 })).toBe(helloOnlyMessage({ receiverSeq: seq - 1 }))
  })
})
