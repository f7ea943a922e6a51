import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { DuplicateWindow } from '../src/duplicate-window.ts'

/** The model: every remembered pair in order; a pair is in the window if it is among the last windowMax. */
function check(windowMax: number, arrivals: readonly [string, number][]): void {
  const window = new DuplicateWindow(windowMax)
  const remembered: string[] = []
  const lastAt = new Map<string, number>() // key -> its position in `remembered`
  const pairsOf = new Map<string, number>() // source -> its pairs among the last windowMax
  for (const [source, id] of arrivals) {
    const key = `${source}/${id}`
    const at = lastAt.get(key)
    const inModel = at !== undefined && remembered.length - at <= windowMax
    if (window.has(source, id) !== inModel) expect.fail(`${key}: has() ${!inModel}, model ${inModel}, window ${windowMax}, after ${remembered.length} pairs`)
    if (inModel) continue
    window.remember(source, id)
    if (windowMax > 0) {
      const leaving = remembered.length >= windowMax ? remembered[remembered.length - windowMax]! : undefined
      if (leaving !== undefined) pairsOf.set(leaving.split('/')[0]!, pairsOf.get(leaving.split('/')[0]!)! - 1)
      pairsOf.set(source, (pairsOf.get(source) ?? 0) + 1)
    }
    lastAt.set(key, remembered.length)
    remembered.push(key)
    if (window.size !== Math.min(windowMax, remembered.length)) expect.fail(`size ${window.size} after ${remembered.length} pairs, window ${windowMax}`)
    const sources = [...pairsOf.values()].filter((n) => n > 0).length
    if (window.sources !== sources) expect.fail(`${window.sources} sources numbered, model ${sources}`)
  }
}

describe('the duplicate window (fast-check seed printed at the start of the run)', () => {
  it('holds exactly the last windowMax pairs, across growth and the table wrapping round', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2_500 }),
        // Long enough to grow the arrays past their first 1,024 pairs and wrap the ring several times.
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c', 'd', 'e'), fc.integer({ min: 1, max: 3_000 })), { minLength: 3_000, maxLength: 8_000 }),
        (windowMax, arrivals) => check(windowMax, arrivals),
      ),
      { numRuns: 40 },
    )
  })

  it('tells message ids apart across the whole uint32 range and many sources', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }).map((n) => `12D3KooW${n}`), fc.oneof(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 2 ** 31 - 3, max: 2 ** 32 - 1 }))), { maxLength: 400 }),
        (windowMax, arrivals) => check(windowMax, arrivals),
      ),
    )
  })

  it('forgets a source once its last pair leaves: a stream of one-off senders keeps its memory bounded', () => {
    const window = new DuplicateWindow(100)
    for (let i = 0; i < 10_000; i++) window.remember(`sender-${i}`, 1)
    expect(window.size).toBe(100)
    expect(window.sources).toBe(100)
    expect(window.has('sender-9999', 1)).toBe(true)
    expect(window.has('sender-9900', 1)).toBe(true)
    expect(window.has('sender-9899', 1)).toBe(false)
    // Numbers of forgotten sources are reused: the per-source arrays never outgrow the window.
    expect((window as unknown as { sourceRefs: number[] }).sourceRefs.length).toBeLessThanOrEqual(101)
  })

  it('remembers nothing with a window of 0', () => {
    const window = new DuplicateWindow(0)
    window.remember('a', 1)
    expect(window.has('a', 1)).toBe(false)
    expect(window.size).toBe(0)
  })
})
