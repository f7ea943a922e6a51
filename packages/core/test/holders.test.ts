import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { HolderSets, NodeSet } from '../src/index.ts'

const setOf = (members: readonly number[], width = 32): NodeSet => {
  const s = new NodeSet(width)
  for (const m of members) s.add(m)
  return s
}
const membersOf = (s: NodeSet): number[] => {
  const out: number[] = []
  s.forEach((i) => out.push(i))
  return out
}
const sorted = (xs: Iterable<number>): number[] => [...new Set(xs)].sort((p, q) => p - q)
// Up to 100 crosses three words and bit 31 of each (the sign bit of an int32).
const members = fc.array(fc.integer({ min: 0, max: 100 }), { maxLength: 30 })

describe('HolderSets: interned rcpt sets', () => {
  it('union(a, holder, b) has exactly the members of a ∪ {holder} ∪ b, and equal contents give one frozen object', () => {
    fc.assert(
      fc.property(members, fc.integer({ min: -1, max: 100 }), fc.option(members, { nil: undefined }), fc.integer({ min: 1, max: 200 }), (a, holder, b, width) => {
        const holders = new HolderSets(1_000)
        const u = holders.union(setOf(a, width), holder, b === undefined ? undefined : setOf(b))
        const expected = sorted([...a, ...(holder >= 0 ? [holder] : []), ...(b ?? [])])
        expect(membersOf(u)).toEqual(expected)
        expect(u.frozen).toBe(true)
        // The same content reached another way (other widths, other split) is the same object.
        expect(holders.union(setOf(expected, 200), -1, undefined)).toBe(u)
        expect(holders.union(new NodeSet(), -1, setOf(expected))).toBe(u)
      }),
    )
  })

  it('different contents are different sets, even when their hashes collide in one bucket', () => {
    fc.assert(
      fc.property(members, members, (a, b) => {
        const holders = new HolderSets(1_000)
        const x = holders.union(setOf(a), -1, undefined)
        const y = holders.union(setOf(b), -1, undefined)
        expect(x === y).toBe(sorted(a).join() === sorted(b).join())
      }),
    )
  })

  it('without(set, slot) is the set minus slot, interned; the set itself when it lacks the slot', () => {
    const holders = new HolderSets(1_000)
    const s = holders.union(setOf([1, 31, 63]), -1, undefined)
    expect(holders.without(s, 5)).toBe(s)
    const t = holders.without(s, 31)
    expect(membersOf(t)).toEqual([1, 63])
    expect(membersOf(s)).toEqual([1, 31, 63])
    expect(holders.union(setOf([63]), 1, undefined)).toBe(t)
  })

  it('stays within its limit: past max distinct sets it starts afresh (old sets stay valid)', () => {
    const holders = new HolderSets(3)
    const first = holders.union(setOf([0]), -1, undefined)
    for (let i = 1; i < 10; i++) holders.union(setOf([i]), -1, undefined)
    expect(holders.size).toBeLessThanOrEqual(3)
    expect(membersOf(first)).toEqual([0])
  })
})
