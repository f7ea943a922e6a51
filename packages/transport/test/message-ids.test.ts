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

  it('knows the ids it handed out, and not others: the permutation runs backwards', () => {
    const ids = new MessageIds()
    const handed = Array.from({ length: 3_000 }, () => ids.next())
    expect(handed.every((id) => ids.issued(id))).toBe(true)
    // The ids the next 3,000 counter values will give are not issued yet.
    const ahead = new MessageIds(new Uint8Array(16))
    const aheadHanded = Array.from({ length: 3_000 }, () => ahead.next())
    const fresh = new MessageIds(new Uint8Array(16))
    expect(aheadHanded.filter((id) => fresh.issued(id))).toEqual([])
    fresh.next()
    expect(aheadHanded.filter((id) => fresh.issued(id))).toEqual([aheadHanded[0]])
    // Other ids: issued exactly when handed out (a random one is, with probability 3,000 / 2^32).
    const handedSet = new Set(handed)
    let random = 0x9e3779b9
    for (let i = 0; i < 10_000; i++) {
      random = (Math.imul(random, 1_664_525) + 1_013_904_223) >>> 0
      const id = random || 1
      expect(ids.issued(id)).toBe(handedSet.has(id))
    }
    expect([0, -1, 2 ** 32, 1.5].map((id) => ids.issued(id))).toEqual([false, false, false, false])
  })
})
