import { CORE_CONSTANTS } from './constants.ts'
import { invariant } from './errors.ts'

/**
 * A FIFO of address-book rows whose consumed prefix is dropped as it is taken: at once when
 * nothing is pending, else once it is over dialQueueCompactAfter and over a quarter of the list (a
 * copy of the rest, so at most 3 moves per row taken). Kept, the prefix at the end of a
 * 1,000-process run was 10 bytes a (node, destination) pair on one subnet (heap snapshot).
 */
class RowFifo {
  items: number[] = []
  head = 0

  get pending(): number {
    return this.items.length - this.head
  }

  /** The next row, or -1 when none is pending. */
  take(): number {
    return this.head < this.items.length ? this.items[this.head++]! : -1
  }

  compact(): void {
    if (this.head === this.items.length) {
      this.items = []
      this.head = 0
    } else if (this.head > CORE_CONSTANTS.dialQueueCompactAfter && this.head * 4 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
  }
}

/**
 * The address book's dial queue (discovery.ts `AddressBook`): rows to dial, nearest first and in
 * the order they were queued among equals, as a stable sort by nearness of the queue at each take
 * after new rows were queued. Sorted rows wait in one FIFO per nearness; rows queued since the last
 * sort wait in `tail` in the order queued, and a sort moves them to the ends of their FIFOs, which
 * is that stable sort's order without sorting again what is sorted. The whole queue was sorted
 * before, each time an address was queued: at 5,000 processes (three subnets) a core's queue held
 * thousands of addresses, sorted again after each message that taught new ones, the row of each
 * looked up by its text (3.9 s of the run, growing ×15 from 2,000 processes).
 *
 * Rows returned to the queue (`putBack`: a dial waiting for another to its owner) go to the tail
 * and are not sorted until a row is queued again, as before. Bounds: each row at most once
 * (`AddressState.queued`), so at most the book's rows; nearness levels at most 65,536 (a
 * Uint16Array's values), in practice the lengths of the addresses' common prefixes.
 */
export class DialQueue {
  /** Sorted rows by nearness; only levels with rows pending. */
  private readonly byNearness = new Map<number, RowFifo>()
  /** The nearness levels of `byNearness`, nearest first. */
  private levels: number[] = []
  private readonly tail = new RowFifo()
  /** Rows were queued since the last sort. */
  private unsorted = false
  /** Every row's nearness changed (`resortAll`): the next sort places them all again. */
  private resort = false

  /** `nearnessOf`: a row's nearness now (the book's column). */
  constructor(private readonly nearnessOf: (row: number) => number) {}

  /** Rows held, taken ones not yet dropped included (the book's `dialQueueHeld`). */
  get held(): number {
    let held = this.tail.items.length
    for (const fifo of this.byNearness.values()) held += fifo.items.length
    return held
  }

  /** Queues `row`, placed by nearness at the next sort. */
  push(row: number): void {
    this.tail.items.push(row)
    this.unsorted = true
  }

  /** Returns `rows` to the end of the queue, not sorted until a row is queued again. */
  putBack(rows: readonly number[]): void {
    for (const row of rows) this.tail.items.push(row)
  }

  /** Every row's nearness may have changed: the next sort places every pending row again, in its present order. */
  resortAll(): void {
    this.resort = true
    this.unsorted = true
  }

  /**
   * Puts the rows queued since the last sort in nearness order. A book without addresses of its own
   * has every nearness 0 (one FIFO: the order queued), as the sort it replaces left it.
   */
  sort(): void {
    if (!this.unsorted) return
    this.unsorted = false
    if (this.resort) {
      this.resort = false
      const all: number[] = []
      this.forEachPending((row) => void all.push(row))
      this.byNearness.clear()
      this.levels = []
      this.tail.items = all
      this.tail.head = 0
    }
    for (let row = this.tail.take(); row >= 0; row = this.tail.take()) this.fifoAt(this.nearnessOf(row)).items.push(row)
    this.tail.compact()
  }

  /** The next row in order, or -1 when none is pending. */
  take(): number {
    while (this.levels.length > 0) {
      const level = this.levels[0]!
      const fifo = this.byNearness.get(level)!
      const row = fifo.take()
      if (row >= 0) return row
      this.byNearness.delete(level)
      this.levels.shift()
    }
    return this.tail.take()
  }

  /** Drops the taken prefixes (after a batch of takes). */
  compact(): void {
    for (const fifo of this.byNearness.values()) fifo.compact()
    this.tail.compact()
  }

  /** Whether some pending row passes `test`. */
  some(test: (row: number) => boolean): boolean {
    for (const fifo of this.byNearness.values()) {
      for (let i = fifo.head; i < fifo.items.length; i++) if (test(fifo.items[i]!)) return true
    }
    for (let i = this.tail.head; i < this.tail.items.length; i++) if (test(this.tail.items[i]!)) return true
    return false
  }

  /** Each pending row, in the order `take` gives them. */
  private forEachPending(visit: (row: number) => void): void {
    for (const level of this.levels) {
      const fifo = this.byNearness.get(level)!
      for (let i = fifo.head; i < fifo.items.length; i++) visit(fifo.items[i]!)
    }
    for (let i = this.tail.head; i < this.tail.items.length; i++) visit(this.tail.items[i]!)
  }

  private fifoAt(level: number): RowFifo {
    let fifo = this.byNearness.get(level)
    if (fifo === undefined) {
      invariant(level >= 0 && level <= 0xffff, 'a nearness is a Uint16')
      this.byNearness.set(level, (fifo = new RowFifo()))
      let at = 0
      while (at < this.levels.length && this.levels[at]! > level) at++
      this.levels.splice(at, 0, level)
    }
    return fifo
  }
}
