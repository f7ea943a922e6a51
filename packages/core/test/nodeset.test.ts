import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { NodeSet, forEachBit } from '../src/index.ts'
import { membersOf, setOf } from './nodesets.ts'

// Indices up to 100 cross three 32-bit words, and bit 31 of each (the sign bit of an int32).
const members = fc.array(fc.integer({ min: 0, max: 100 }), { maxLength: 30 })

describe('NodeSet against a model (Set<number>)', () => {
  it('containsAll holds exactly when every member is in the set, bit 31 of a word included', () => {
    expect(setOf([31]).containsAll(setOf([31]))).toBe(true)
    expect(setOf([31, 63]).containsAll(setOf([63]))).toBe(true)
    expect(setOf([30]).containsAll(setOf([31]))).toBe(false)
    fc.assert(
      fc.property(members, members, (a, b) => {
        const model = new Set(a)
        expect(setOf(a).containsAll(setOf(b))).toBe(b.every((m) => model.has(m)))
        expect(setOf([...a, ...b]).containsAll(setOf(b))).toBe(true)
      }),
    )
  })

  it('add, delete, has, addAll, without, size and forEach agree with the model', () => {
    fc.assert(
      fc.property(members, members, fc.integer({ min: 0, max: 100 }), (a, b, x) => {
        const s = setOf(a)
        const model = new Set(a)
        expect(membersOf(s)).toEqual([...model].sort((p, q) => p - q))
        expect(s.size()).toBe(model.size)
        const union = s.clone()
        union.addAll(setOf(b))
        expect(membersOf(union)).toEqual([...new Set([...a, ...b])].sort((p, q) => p - q))
        const frozen = s.clone().freeze()
        expect(frozen.without(x).has(x)).toBe(false)
        expect(membersOf(frozen.without(x))).toEqual([...model].filter((m) => m !== x).sort((p, q) => p - q))
        expect(frozen.has(x)).toBe(model.has(x))
        s.delete(x)
        expect(s.has(x)).toBe(false)
      }),
    )
  })

  it('forEachMissing visits universe \\ (a ∪ b); the wire form round-trips through translate', () => {
    fc.assert(
      fc.property(members, members, members, (u, a, b) => {
        const missing: number[] = []
        NodeSet.forEachMissing(setOf(u), setOf(a), setOf(b), (i) => missing.push(i))
        const covered = new Set([...a, ...b])
        expect(missing).toEqual([...new Set(u)].filter((m) => !covered.has(m)).sort((p, q) => p - q))
        // Slots map to node indices (here slot i -> 100 - i): translate(toBytes(s)) is the mapped set.
        const map = Int32Array.from({ length: 101 }, (_, i) => 100 - i)
        const translated = NodeSet.translate(setOf(u).toBytes(), map, 8)
        expect(membersOf(translated)).toEqual([...new Set(u)].map((m) => 100 - m).sort((p, q) => p - q))
        const bits: number[] = []
        forEachBit(setOf(u).toBytes(), (i) => bits.push(i))
        expect(bits).toEqual([...new Set(u)].sort((p, q) => p - q))
      }),
    )
  })
})
