import { EVENT_QUEUE_MAX } from './constants.ts'
import { SimulationError } from './errors.ts'

/** Children per node of the heap: four keys of two numbers fill one 64-byte cache line. */
const ARITY = 4
/** Slots the key column starts with (grown by doubling). */
const SLOTS_INITIAL = 1_024

/**
 * A 4-ary min-heap of events ordered by (time, insertion number). The tie-break on insertion
 * order makes simultaneous events run in the order they were scheduled, so runs are
 * deterministic and causality at equal times is preserved: every key is distinct, so any heap
 * pops them in the same order.
 *
 * The keys sit in one column, time and insertion number side by side, and a node's four children
 * side by side: a pop reads one cache line per level, over half as many levels as a binary heap's
 * (whose three columns were three lines per level). A one-subnet run holds every hello of the
 * burst at once (1,000 processes: 998,470 events, N(N−1) of them deliveries), so the queue is far
 * larger than the processor's caches and its levels are its cost.
 */
export class EventQueue<T> {
  /** Slot i's time at 2i, its insertion number at 2i + 1. */
  private keys = new Float64Array(2 * SLOTS_INITIAL)
  /** Slot i's tag: a number the caller gives with the item (0 unless it does). */
  private tags = new Int32Array(SLOTS_INITIAL)
  private readonly items: T[] = []
  private inserted = 0

  get size(): number {
    return this.items.length
  }

  /** Schedules `item` at `timeMs`, with `tag` (an int32 the caller reads back with `peekTag`: a kind of item that needs no object of its own). */
  push(timeMs: number, item: T, tag = 0): void {
    const n = this.items.length
    if (n >= EVENT_QUEUE_MAX) {
      throw new SimulationError('LIMIT_EXCEEDED', `event queue holds ${EVENT_QUEUE_MAX} events (EVENT_QUEUE_MAX); the scenario is too large for one process`)
    }
    if (2 * n + 2 > this.keys.length) this.grow()
    const order = this.inserted++
    const keys = this.keys
    const tags = this.tags
    const items = this.items
    items.push(item)
    let i = n
    while (i > 0) {
      const parent = ((i - 1) / ARITY) | 0
      const pt = keys[2 * parent]!
      if (pt < timeMs || (pt === timeMs && keys[2 * parent + 1]! < order)) break
      keys[2 * i] = pt
      keys[2 * i + 1] = keys[2 * parent + 1]!
      tags[i] = tags[parent]!
      items[i] = items[parent]!
      i = parent
    }
    keys[2 * i] = timeMs
    keys[2 * i + 1] = order
    tags[i] = tag
    items[i] = item
  }

  peekTime(): number | undefined {
    return this.items.length > 0 ? this.keys[0] : undefined
  }

  /** The earliest event's tag (`push`); call only when size > 0. */
  peekTag(): number {
    return this.tags[0]!
  }

  /** Removes the earliest event; call only when size > 0. */
  pop(): { timeMs: number; item: T } {
    const timeMs = this.keys[0]!
    return { timeMs, item: this.take() }
  }

  /** Removes the earliest event and returns it (its time is `peekTime()` before the call); call only when size > 0. */
  take(): T {
    const items = this.items
    const keys = this.keys
    const tags = this.tags
    const top = items[0]!
    const lastItem = items.pop()!
    const n = items.length
    if (n === 0) return top
    const lastTime = keys[2 * n]!
    const lastOrder = keys[2 * n + 1]!
    const lastTag = tags[n]!
    let i = 0
    for (;;) {
      const first = ARITY * i + 1
      if (first >= n) break
      // The least of the (up to four) children.
      let child = first
      let ct = keys[2 * first]!
      let co = keys[2 * first + 1]!
      const end = Math.min(first + ARITY, n)
      for (let c = first + 1; c < end; c++) {
        const t = keys[2 * c]!
        if (t < ct || (t === ct && keys[2 * c + 1]! < co)) {
          child = c
          ct = t
          co = keys[2 * c + 1]!
        }
      }
      if (ct > lastTime || (ct === lastTime && co > lastOrder)) break
      keys[2 * i] = ct
      keys[2 * i + 1] = co
      tags[i] = tags[child]!
      items[i] = items[child]!
      i = child
    }
    keys[2 * i] = lastTime
    keys[2 * i + 1] = lastOrder
    tags[i] = lastTag
    items[i] = lastItem
    return top
  }

  private grow(): void {
    const grown = new Float64Array(2 * this.keys.length)
    grown.set(this.keys)
    this.keys = grown
    const tags = new Int32Array(2 * this.tags.length)
    tags.set(this.tags)
    this.tags = tags
  }
}
