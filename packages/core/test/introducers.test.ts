import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Introducers } from '../src/introducers.ts'

describe('Introducers: who introduced each row, numbered', () => {
  it('reads back the introducer each row was given (an array of ids before), and holds exactly the introducers some row names', () => {
    // Each step gives row `row` introducer `id` (-1: none).
    const steps = fc.array(fc.tuple(fc.nat({ max: 11 }), fc.integer({ min: -1, max: 5 })), { maxLength: 200, size: 'max' })
    fc.assert(
      fc.property(steps, (ops) => {
        const introducers = new Introducers()
        introducers.grow(12)
        const model: (string | undefined)[] = Array.from({ length: 12 }, () => undefined)
        for (const [row, id] of ops) {
          const introducer = id < 0 ? undefined : `n${id}`
          introducers.set(row, introducer)
          model[row] = introducer
          expect(model.map((_, r) => introducers.of(r))).toEqual(model)
          expect(introducers.size).toBe(new Set(model.filter((m) => m !== undefined)).size)
        }
      }),
    )
  })

  it('keeps every row past 65,535 introducers held at once (the column widens to 4 bytes), and rows kept across growth', () => {
    const introducers = new Introducers()
    const rows = 70_000
    introducers.grow(16)
    for (let row = 0; row < rows; row++) {
      if (row >= introducers.capacity) introducers.grow(introducers.capacity * 2)
      introducers.set(row, `n${row}`)
    }
    expect(introducers.size).toBe(rows)
    expect([0, 65_534, 65_535, 65_536, rows - 1].map((row) => introducers.of(row))).toEqual(['n0', 'n65534', 'n65535', 'n65536', `n${rows - 1}`])
    // Freed numbers are reused: the row now names an introducer another row names too.
    introducers.set(5, 'n6')
    introducers.set(70, undefined)
    expect([introducers.of(5), introducers.of(6), introducers.of(70), introducers.size]).toEqual(['n6', 'n6', undefined, rows - 2])
  })
})
