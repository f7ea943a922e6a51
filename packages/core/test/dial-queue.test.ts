import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { DialQueue } from '../src/dial-queue.ts'

// The seed is fast-check's global one (vitest.setup.ts prints it; replay with PHOENIX_SEED=<n>).

/** The queue as it was: one list, sorted again whole (stably, nearest first) at each take after rows were queued. */
class SortedListModel {
  private list: number[] = []
  private unsorted = false

  constructor(private readonly nearness: number[]) {}

  push(row: number): void {
    this.list.push(row)
    this.unsorted = true
  }

  putBack(rows: readonly number[]): void {
    this.list.push(...rows)
  }

  resortAll(): void {
    this.unsorted = true
  }

  sort(): void {
    if (!this.unsorted) return
    this.unsorted = false
    const near = this.list.map((row) => this.nearness[row]!)
    const order = this.list.map((_, i) => i).sort((i, j) => near[j]! - near[i]!)
    this.list = order.map((i) => this.list[i]!)
  }

  take(): number {
    return this.list.shift() ?? -1
  }

  get pending(): number {
    return this.list.length
  }
}

describe('DialQueue', () => {
  it('takes rows in the order of a stable sort by nearness of the whole queue at each take after rows were queued', () => {
    const op = fc.oneof(
      { arbitrary: fc.record({ k: fc.constant('push' as const), near: fc.nat({ max: 5 }) }), weight: 4 },
      { arbitrary: fc.record({ k: fc.constant('take' as const), n: fc.integer({ min: 1, max: 8 }), back: fc.nat({ max: 2 }) }), weight: 3 },
      // setOwnAddresses: every row's nearness may change.
      { arbitrary: fc.record({ k: fc.constant('renear' as const), seed: fc.nat({ max: 1000 }) }), weight: 1 },
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const nearness: number[] = []
        const queue = new DialQueue((row) => nearness[row]!)
        const model = new SortedListModel(nearness)
        for (const o of ops) {
          if (o.k === 'push') {
            nearness.push(o.near)
            queue.push(nearness.length - 1)
            model.push(nearness.length - 1)
          } else if (o.k === 'renear') {
            for (let row = 0; row < nearness.length; row++) nearness[row] = (row * 7 + o.seed) % 4
            queue.resortAll()
            model.resortAll()
          } else {
            // A take as `AddressBook.takeDials` makes it: sorted first, some taken, the last few put back (waiting for their owner's dial).
            queue.sort()
            model.sort()
            const taken: number[] = []
            const expected: number[] = []
            for (let i = 0; i < o.n; i++) {
              taken.push(queue.take())
              expected.push(model.take())
            }
            expect(taken).toEqual(expected)
            const back = taken.filter((row) => row >= 0).slice(-o.back)
            queue.putBack(back)
            model.putBack(back)
            queue.compact()
          }
        }
        queue.sort()
        model.sort()
        const rest: number[] = []
        const expectedRest: number[] = []
        while (model.pending > 0) {
          rest.push(queue.take())
          expectedRest.push(model.take())
        }
        expect(rest).toEqual(expectedRest)
        expect(queue.take()).toBe(-1)
      }),
    )
  })
})
