import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Inbox, type InboxMessage, type InboxReader } from '../src/inbox.ts'

const message = (name: string, text: string, from = 'peer'): InboxMessage => ({ from, name, id: undefined, hops: 1, payload: new TextEncoder().encode(text) })
const textOf = (m: InboxMessage) => new TextDecoder().decode(m.payload)

/** A reader that records what it takes and answers `false` (full) after `room` messages. */
function reader(names?: string[], options: { fallback?: boolean; room?: number } = {}): InboxReader & { got: string[] } {
  const got: string[] = []
  return {
    got,
    names: names === undefined ? undefined : new Set(names),
    fallback: options.fallback ?? false,
    take: (m) => (got.push(textOf(m)), got.length < (options.room ?? Infinity)),
  }
}

describe('the inbox', () => {
  it('holds messages until a reader comes, then hands them over in order', () => {
    const inbox = new Inbox(10, 1024)
    inbox.push(message('a', '1'))
    inbox.push(message('a', '2'))
    expect(inbox.size).toBe(2)
    const r = reader()
    inbox.attach(r)
    expect(r.got).toEqual(['1', '2'])
    expect([inbox.size, inbox.bytes]).toEqual([0, 0])
  })

  it('takes back, at the front and in order, what a reader could not pass on; the next reader gets it first', () => {
    const inbox = new Inbox(10, 1024)
    const printer = reader(undefined, { fallback: true })
    const detach = inbox.attach(printer)
    const [m1, m2, m3] = [message('a', '1'), message('a', '2'), message('a', '3')]
    inbox.push(m1)
    inbox.push(m2)
    detach()
    inbox.push(m3)
    inbox.putBack([m1, m2])
    expect([inbox.size, inbox.bytes]).toEqual([3, 3])
    const next = reader()
    inbox.attach(next)
    expect(next.got).toEqual(['1', '2', '3'])
  })

  it('is bounded by messages and by bytes, and says when it has room again', async () => {
    const inbox = new Inbox(2, 1024)
    inbox.push(message('a', '1'))
    inbox.push(message('a', '2'))
    expect(inbox.hasRoom()).toBe(false)
    expect(() => inbox.push(message('a', '3'))).toThrow(/only when the inbox has room/)
    let roomy = false
    const waiting = inbox.waitForRoom().then(() => (roomy = true))
    await Promise.resolve()
    expect(roomy).toBe(false)
    inbox.attach(reader())
    await waiting
    expect(roomy).toBe(true)
    const bytes = new Inbox(100, 10)
    bytes.push(message('a', 'x'.repeat(20)))
    expect(bytes.hasRoom()).toBe(false)
  })

  it('gives each message to one reader: by name, taking turns, stdout (fallback) only when no one else takes it', () => {
    const inbox = new Inbox(100, 1 << 20)
    const a1 = reader(['a'])
    const a2 = reader(['a'])
    const print = reader(undefined, { fallback: true })
    inbox.attach(print)
    inbox.attach(a1)
    inbox.attach(a2)
    for (const [name, text] of [['a', '1'], ['a', '2'], ['b', '3'], ['a', '4']] as const) inbox.push(message(name, text))
    expect([a1.got, a2.got, print.got]).toEqual([['1', '4'], ['2'], ['3']])
  })

  it('hands a full reader nothing until it is ready again', () => {
    const inbox = new Inbox(100, 1 << 20)
    const slow = reader(undefined, { room: 1 })
    inbox.attach(slow)
    inbox.push(message('a', '1'))
    inbox.push(message('a', '2'))
    expect(slow.got).toEqual(['1'])
    expect(inbox.size).toBe(1)
    inbox.ready(slow)
    expect(slow.got).toEqual(['1', '2'])
  })

  it('hands nothing to a reader that is going away', () => {
    const inbox = new Inbox(100, 1 << 20)
    let open = true
    const closing = { ...reader(), accepting: () => open }
    inbox.attach(closing)
    inbox.push(message('a', '1'))
    open = false
    inbox.push(message('a', '2'))
    expect(closing.got).toEqual(['1'])
    expect(inbox.size).toBe(1)
  })

  it('hands out what waits with its sources taking turns, each source in its order: another sender is not read after the backlog of a flooder', () => {
    const inbox = new Inbox(100, 1 << 20)
    for (let i = 1; i <= 50; i++) inbox.push(message('w', `f${i}`, 'flooder'))
    inbox.push(message('w', 'o1', 'other'))
    inbox.push(message('w', 'o2', 'other'))
    const slow = reader(undefined, { room: 3 })
    inbox.attach(slow)
    expect(slow.got).toEqual(['f1', 'o1', 'f2'])
    inbox.push(message('w', 't1', 'third')) // joins the first round of turns still going: after f3, not after f50
    const rest = reader()
    inbox.attach(rest)
    expect(rest.got.slice(0, 5)).toEqual(['o2', 'f3', 't1', 'f4', 'f5'])
    expect(rest.got).toHaveLength(50)
  })

  it("never loses, duplicates or reorders a message (property: three sources, each source's order kept)", () => {
    const seed = Number(process.env.PHOENIX_SEED ?? Date.now() % 2 ** 31)
    console.log(`inbox property seed ${seed} (replay with PHOENIX_SEED=${seed})`)
    const op = fc.oneof(fc.record({ push: fc.constantFrom('a', 'b'), from: fc.constantFrom('p', 'q', 'r') }), fc.record({ attach: fc.constantFrom('a', 'b', '*'), room: fc.integer({ min: 1, max: 4 }) }), fc.record({ ready: fc.nat(5) }), fc.record({ detach: fc.nat(5) }))
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const inbox = new Inbox(8, 1 << 20)
        const readers: { r: InboxReader & { got: string[] }; detach: () => void }[] = []
        const sent: Record<string, string[]> = { a: [], b: [] }
        let n = 0
        for (const o of ops) {
          if ('push' in o && inbox.hasRoom()) {
            const text = `${o.push}${o.from}${n++}`
            sent[o.push]!.push(text)
            inbox.push(message(o.push, text, o.from))
          } else if ('attach' in o) {
            const r = reader(o.attach === '*' ? undefined : [o.attach], { room: o.room })
            readers.push({ r, detach: inbox.attach(r) })
          } else if ('ready' in o && readers[o.ready] !== undefined) inbox.ready(readers[o.ready]!.r)
          else if ('detach' in o && readers[o.detach] !== undefined) readers[o.detach]!.detach()
        }
        const everyone = reader()
        inbox.attach(everyone)
        expect(inbox.size).toBe(0)
        const all = [...readers.map((x) => x.r.got), everyone.got].flat()
        for (const name of ['a', 'b']) {
          const taken = all.filter((t) => t.startsWith(name))
          expect([...taken].sort()).toEqual([...sent[name]!].sort())
          // Each reader sees one source's messages to one name in the order they were sent.
          for (const got of [...readers.map((x) => x.r.got), everyone.got]) {
            for (const key of ['p', 'q', 'r'].map((from) => name + from)) {
              const mine = got.filter((t) => t.startsWith(key))
              expect(mine).toEqual(sent[name]!.filter((t) => mine.includes(t)))
            }
          }
        }
      }),
      { seed },
    )
  })
})
