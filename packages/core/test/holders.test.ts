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

describe('HolderSets: the memo of recent operations', () => {
  const op = fc.record({ pick: fc.nat(), other: fc.option(fc.nat(), { nil: undefined }), holder: fc.integer({ min: -1, max: 100 }), remove: fc.boolean() })
  it('a remembered union or removal is the very set the buckets give, across collisions and fresh starts', () => {
    fc.assert(
      fc.property(fc.array(members, { minLength: 1, maxLength: 6 }), fc.array(op, { maxLength: 60 }), fc.constantFrom(1, 2, 8), fc.integer({ min: 2, max: 12 }), (seeds, ops, memoSlots, max) => {
        const holders = new HolderSets(max, memoSlots)
        // Operands from a few sets, the operations twice over: the second pass asks the memo again, after fresh starts.
        const pool = seeds.map((m) => holders.union(setOf(m), -1, undefined))
        for (const { pick, other, holder, remove } of [...ops, ...ops]) {
          const a = pool[pick % pool.length]!
          const b = other === undefined ? undefined : pool[other % pool.length]!
          const expected = remove ? membersOf(a).filter((m) => m !== holder) : sorted([...membersOf(a), ...(holder >= 0 ? [holder] : []), ...(b === undefined ? [] : membersOf(b))])
          const got = remove ? holders.without(a, Math.max(holder, 0)) : holders.union(a, holder, b)
          if (remove && holder < 0) continue
          expect(membersOf(got)).toEqual(expected)
          // The same content asked for again, without the memo (an unfrozen set is never a memo key).
          if (got !== a) expect(holders.union(setOf(expected, 200), -1, undefined)).toBe(got)
        }
      }),
    )
  })

  it('a memo size that is not a power of two is refused', () => {
    expect(() => new HolderSets(10, 3)).toThrow(/memoSlots/)
  })
})
