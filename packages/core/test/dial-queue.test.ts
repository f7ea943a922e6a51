import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { DialQueue } from '../src/dial-queue.ts'
import { AddressBook } from '../src/discovery.ts'

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

describe('AddressBook: back-offs walked only when one ended or changed', () => {
  const timing = { dialBackoffInitialMs: 100, dialBackoffMaxMs: 10_000, redialBackoffMaxMs: 1_000, lostRedialsPerSecondMax: 2 }

  it('answers as a full walk would, after any sequence of dials, failures, losses and re-dials', () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant('want' as const), a: fc.nat({ max: 11 }) }),
      fc.record({ k: fc.constant('defer' as const), a: fc.nat({ max: 11 }), inMs: fc.nat({ max: 500 }) }),
      fc.record({ k: fc.constant('take' as const), n: fc.integer({ min: 1, max: 4 }), fail: fc.boolean() }),
      fc.record({ k: fc.constant('lost' as const), owner: fc.nat({ max: 5 }), livedMs: fc.nat({ max: 20_000 }) }),
      fc.record({ k: fc.constant('redial' as const), a: fc.nat({ max: 11 }) }),
      fc.record({ k: fc.constant('forget' as const), owner: fc.nat({ max: 5 }) }),
      fc.record({ k: fc.constant('wait' as const), ms: fc.nat({ max: 3_000 }) }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
        // Two owners per address pair, two addresses each; the twin answers from full walks only.
        const books = [new AddressBook(64, 4, timing), new AddressBook(64, 4, timing)]
        for (const book of books) {
          for (let a = 0; a < 12; a++) book.learn(`/a/${a}`, `n${a % 6}`)
          book.keep('/a/0', 'hub')
        }
        let nowMs = 0
        for (const o of ops) {
          const answers = books.map((book, i) => {
            if (i === 1) book.forgetBackoffPass()
            const earliest = book.releaseBackoffs(nowMs)
            if (i === 1) book.forgetBackoffPass()
            const next = book.nextRetryAfter(nowMs)
            if (i === 1) book.forgetBackoffPass()
            return { earliest, next, ready: book.hasDialReady(nowMs) }
          })
          expect(answers[0]).toEqual(answers[1])
          const dials = books.map((book) => {
            if (o.k === 'want') book.want(`/a/${o.a}`)
            else if (o.k === 'defer') book.wantDeferred(`/a/${o.a}`, nowMs + o.inMs)
            else if (o.k === 'redial') book.redialNow(`/a/${o.a}`)
            else if (o.k === 'lost') book.connectionLost(`n${o.owner}`, book.addressesOf(`n${o.owner}`), nowMs, o.livedMs)
            else if (o.k === 'forget') book.forgetLost(`n${o.owner}`)
            else if (o.k === 'take') {
              const taken = book.takeDials(nowMs, () => false, o.n)
              for (const { address } of taken) {
                if (o.fail) book.dialFailed(address, nowMs)
                else book.dialSucceeded(address, `n${Number(address.slice(3)) % 6}`)
              }
              return taken.map((d) => d.address)
            }
            return []
          })
          expect(dials[0]).toEqual(dials[1])
          if (o.k === 'wait') nowMs += o.ms
        }
      }),
    )
  })

  it('walks the back-offs again only when one of them ends or changes', () => {
    const book = new AddressBook(64, 64, timing)
    for (let a = 0; a < 40; a++) book.learn(`/a/${a}`, `n${a}`)
    for (let a = 0; a < 40; a++) book.want(`/a/${a}`)
    for (const { address } of book.takeDials(0, () => false)) book.dialFailed(address, 0)
    // Every one backed off until 100 ms: one walk finds that, and the steps before it walk none.
    expect(book.releaseBackoffs(0)).toBe(100)
    const walks = book.backoffWalks
    for (let ms = 1; ms < 100; ms++) {
      expect(book.releaseBackoffs(ms)).toBe(100)
      expect(book.nextRetryAfter(ms)).toBe(100)
      expect(book.hasDialReady(ms)).toBe(false)
    }
    expect(book.backoffWalks).toBe(walks)
    // Wanting a backed-off address again (each record of it adopted) changes nothing.
    book.want('/a/5')
    expect(book.releaseBackoffs(60)).toBe(100)
    expect(book.backoffWalks).toBe(walks)
    // A change (a re-dial now) or the end of a back-off makes the next step walk again.
    book.redialNow('/a/3')
    expect(book.releaseBackoffs(50)).toBe(100)
    expect(book.backoffWalks).toBe(walks + 1)
    expect(book.takeDials(50, () => false).map((d) => d.address)).toEqual(['/a/3'])
    expect(book.releaseBackoffs(100)).toBe(undefined)
    expect(book.backoffWalks).toBe(walks + 2)
    expect(book.takeDials(100, () => false)).toHaveLength(39)
  })
})
