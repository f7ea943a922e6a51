import { describe, expect, it } from 'vitest'
import { MessageIds } from '../src/message-ids.ts'

describe('message ids: a secret permutation of a counter', () => {
  it('never repeats or gives 0, and the next id cannot be told from the last (it was last + 1)', () => {
    // An adversarial audit injected a message under another node's source with its next id (the
    // receiver then dropped the real one as a repeat, and acknowledged it).
    const ids = new MessageIds()
    const seen = new Set<number>()
    let successors = 0
    let previous = ids.next()
    seen.add(previous)
    for (let i = 0; i < 200_000; i++) {
      const id = ids.next()
      expect(Number.isInteger(id) && id > 0 && id < 2 ** 32).toBe(true)
      if (id === previous + 1) successors++
      seen.add(id)
      previous = id
    }
    expect(seen.size).toBe(200_001)
    // A random 32-bit pair is consecutive with probability 2^-32: none expected in 200,000.
    expect(successors).toBe(0)
  })

  it('is a function of its key: the same key gives the same ids, another key others', () => {
    const key = new Uint8Array(16).fill(7)
    const take = (ids: MessageIds) => Array.from({ length: 2_000 }, () => ids.next())
    const a = take(new MessageIds(key))
    expect(take(new MessageIds(key))).toEqual(a)
    const b = take(new MessageIds(new Uint8Array(16).fill(8)))
    expect(b.filter((id, i) => id === a[i]).length).toBe(0)
  })
})
