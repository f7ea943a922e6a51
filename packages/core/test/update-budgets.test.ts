import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { NeighbourTable } from '../src/neighbours.ts'
import { NodeIndex } from '../src/nodeindex.ts'
import { UpdateBudgets } from '../src/update-budgets.ts'

const RATE = 50_000
const BURST = 70_000

/** The charge of `NeighbourTable.chargeUpdateBudget` over a Float64 a slot (the column `UpdateBudgets` replaced). */
function chargeColumn(full: Float64Array, slot: number, entries: number, nowMs: number): number {
  const owedMs = full[slot]! - nowMs
  const left = (owedMs > 0 ? BURST - (owedMs * RATE) / 1000 : BURST) - entries
  full[slot] = nowMs + ((BURST - left) * 1000) / RATE
  return left
}

describe('UpdateBudgets: the token buckets as codes into a list of times', () => {
  it('charges every bucket to the same tokens, to the last bit, as a Float64 a slot, through compactions and widenings', () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant('charge' as const), slot: fc.nat(), entries: fc.integer({ min: 1, max: 3_000 }), advanceMs: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 50, noNaN: true })) }),
      // Many charges of one size at one time (a burst of hellos), or of sizes all different (forcing the list to widen).
      fc.record({ k: fc.constant('burst' as const), from: fc.nat(), count: fc.integer({ min: 1, max: 700 }), distinct: fc.boolean() }),
      fc.record({ k: fc.constant('open' as const), slot: fc.nat() }),
    )
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 900 }), fc.array(op, { maxLength: 60 }), (slots, ops) => {
        const numbering = new NodeIndex(slots)
        const table = new NeighbourTable(numbering)
        const views = Array.from({ length: slots }, (_, i) => table.add(`n${i}`, numbering.intern(`n${i}`)!, 'optimized'))
        const column = new Float64Array(slots).fill(Number.NEGATIVE_INFINITY)
        let nowMs = 0
        const charge = (slot: number, entries: number) => {
          const view = views[slot]!
          expect(table.chargeUpdateBudget(view, entries, nowMs, RATE, BURST)).toBe(chargeColumn(column, slot, entries, nowMs))
        }
        for (const o of ops) {
          if (o.k === 'charge') {
            nowMs += o.advanceMs
            charge(o.slot % slots, o.entries)
          } else if (o.k === 'burst') {
            for (let i = 0; i < o.count; i++) charge((o.from + i) % slots, o.distinct ? 1 + i : 1)
          } else {
            // A connection closed and another opened in its slot: its bucket starts full.
            const slot = o.slot % slots
            const id = views[slot]!.id
            table.remove(id)
            views[slot] = table.add(id, numbering.intern(id)!, 'optimized')
            column[slot] = Number.NEGATIVE_INFINITY
          }
        }
      }),
    )
  })

  it('keeps a byte a slot while few times are in use, and widens to 2 bytes, then 8, only when more than half the list is in use at once', () => {
    const budgets = new UpdateBudgets()
    budgets.grow(100_000)
    // A burst: every slot charged the same at one time shares one code.
    for (let slot = 0; slot < 100_000; slot++) budgets.set(slot, 1.02, 1)
    // Times that pass: each compaction drops them, so the list never fills with times in use.
    for (let i = 0; i < 10_000; i++) budgets.set(i % 100, 2 + i * 0.001 + 0.0005, 2 + i * 0.001)
    expect(budgets.bytesPerSlot).toBe(1)
    expect(budgets.fullAtMs(99_999)).toBe(Number.NEGATIVE_INFINITY) // 1.02 is past: read as full
    // 300 times in use at once: past half of 256 codes.
    for (let slot = 0; slot < 300; slot++) budgets.set(slot, 100 + slot, 50)
    expect(budgets.bytesPerSlot).toBe(2)
    for (let slot = 0; slot < 70_000; slot++) budgets.set(slot, 1_000 + slot, 60)
    expect(budgets.bytesPerSlot).toBe(8)
    expect([budgets.fullAtMs(0), budgets.fullAtMs(69_999), budgets.fullAtMs(70_000)]).toEqual([1_000, 70_999, Number.NEGATIVE_INFINITY])
  })
})
