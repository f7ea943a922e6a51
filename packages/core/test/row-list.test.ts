import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RowList } from '../src/row-list.ts'

describe('RowList: row numbers in push order, 2 bytes a row while they fit', () => {
  it('reads back every push in order through growth, widening past 32,767 and clears that let a large column go', () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant('push' as const), row: fc.oneof(fc.nat({ max: 40_000 }), fc.nat({ max: 100 })) }),
      // A burst: a whole table's rows dirty at once, past the room kept after a clear.
      fc.record({ k: fc.constant('burst' as const), count: fc.integer({ min: 1, max: 1_500 }) }),
      fc.record({ k: fc.constant('clear' as const) }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
        const list = new RowList()
        let model: number[] = []
        for (const o of ops) {
          if (o.k === 'push') {
            list.push(o.row)
            model.push(o.row)
          } else if (o.k === 'burst') {
            for (let i = 0; i < o.count; i++) {
              list.push(i)
              model.push(i)
            }
          } else {
            list.clear()
            model = []
          }
          expect(list.length).toBe(model.length)
          expect(Array.from({ length: list.length }, (_, i) => list.at(i))).toEqual(model)
        }
      }),
    )
  })
})
