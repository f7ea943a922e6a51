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
 *
 * Events pushed one after another at the same time (a step's sends over links that are free: a
 * one-subnet hello burst is N − 1 of them per node) share one heap slot, an `EventQueueRun` of
 * their tags and items, popped in push order. Their insertion numbers are consecutive, so no
 * other event's key falls between theirs and the heap pops everything in the same order as with
 * a slot each. A run forms only from pushes with no pop or peek between them: the last push waits
 * outside the heap (`staged*`) until a push at another time or a look at the queue. At 10,000
 * processes in one subnet, the ~100 M deliveries of the burst were ~28 bytes each in the heap's
 * columns (and the columns stayed that large after); in runs they are 12 (tag and reference) and
 * freed as they are delivered.
 */
export class EventQueue<T> {
  /** Slot i's time at 2i, its insertion number at 2i + 1. */
  private keys = new Float64Array(2 * SLOTS_INITIAL)
  /** Slot i's tag: a number the caller gives with the item (0 unless it does). */
  private tags = new Int32Array(SLOTS_INITIAL)
  /** Slot i's item, or the run of same-time items it holds (then its tag is unused). */
  private readonly items: (T | EventQueueRun<T>)[] = []
  private inserted = 0
  /** Events queued, in the heap, in its runs and staged. */
  private count = 0
  /** The last push, not in the heap yet: a single event (`stagedRun` undefined) or a run. */
  private staged = false
  private stagedTimeMs = 0
  private stagedOrder = 0
  private stagedTag = 0
  private stagedItem: T | undefined
  private stagedRun: EventQueueRun<T> | undefined

  get size(): number {
    return this.count
  }

  /** Slots the heap holds, each an event or a run of them (the staged push not counted): for tests. */
  get slotsInHeap(): number {
    return this.items.length
  }

  /** Schedules `item` at `timeMs`, with `tag` (an int32 the caller reads back with `peekTag`: a kind of item that needs no object of its own). */
  push(timeMs: number, item: T, tag = 0): void {
    if (this.count >= EVENT_QUEUE_MAX) {
      throw new SimulationError('LIMIT_EXCEEDED', `event queue holds ${EVENT_QUEUE_MAX} events (EVENT_QUEUE_MAX); the scenario is too large for one process`)
    }
    this.count++
    const order = this.inserted++
    if (this.staged && this.stagedTimeMs === timeMs) {
      // The staged push's insertion number is order − 1: a run of consecutive numbers.
      let run = this.stagedRun
      if (run === undefined) {
        run = this.stagedRun = new EventQueueRun<T>()
        run.add(this.stagedTag, this.stagedItem as T)
        this.stagedItem = undefined
      }
      run.add(tag, item)
      return
    }
    this.flush()
    this.staged = true
    this.stagedTimeMs = timeMs
    this.stagedOrder = order
    this.stagedTag = tag
    this.stagedItem = item
  }

  /** Puts the staged push into the heap. */
  private flush(): void {
    if (!this.staged) return
    this.staged = false
    const run = this.stagedRun
    this.stagedRun = undefined
    if (run !== undefined) this.insert(this.stagedTimeMs, this.stagedOrder, run, 0)
    else {
      this.insert(this.stagedTimeMs, this.stagedOrder, this.stagedItem as T, this.stagedTag)
      this.stagedItem = undefined
    }
  }

  private insert(timeMs: number, order: number, item: T | EventQueueRun<T>, tag: number): void {
    const n = this.items.length
    if (2 * n + 2 > this.keys.length) this.grow()
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
    this.flush()
    return this.items.length > 0 ? this.keys[0] : undefined
  }

  /** The earliest event's tag (`push`); call only when size > 0. */
  peekTag(): number {
    this.flush()
    const top = this.items[0]
    return top instanceof EventQueueRun ? top.tagAtHead() : this.tags[0]!
  }

  /** Removes the earliest event; call only when size > 0. */
  pop(): { timeMs: number; item: T } {
    this.flush()
    const timeMs = this.keys[0]!
    return { timeMs, item: this.take() }
  }

  /** Removes the earliest event and returns it (its time is `peekTime()` before the call); call only when size > 0. */
  take(): T {
    this.flush()
    this.count--
    const top = this.items[0]!
    if (!(top instanceof EventQueueRun)) return this.removeTop() as T
    const item = top.takeHead()
    if (top.empty) this.removeTop()
    return item
  }

  /** Removes the heap's top slot and returns what it held. */
  private removeTop(): T | EventQueueRun<T> {
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

/** Tags a run starts with room for (grown by doubling). */
const RUN_SLOTS_INITIAL = 16

/**
 * Events pushed one after another at one time (`EventQueue`), in push order: each one's tag and
 * item, taken from the head; a taken item's reference is dropped at once. At most the events of
 * one run of pushes (EVENT_QUEUE_MAX in all).
 */
class EventQueueRun<T> {
  private tags = new Int32Array(RUN_SLOTS_INITIAL)
  private readonly items: (T | undefined)[] = []
  private head = 0

  add(tag: number, item: T): void {
    const n = this.items.length
    if (n === this.tags.length) {
      const grown = new Int32Array(2 * n)
      grown.set(this.tags)
      this.tags = grown
    }
    this.tags[n] = tag
    this.items.push(item)
  }

  get empty(): boolean {
    return this.head === this.items.length
  }

  tagAtHead(): number {
    return this.tags[this.head]!
  }

  takeHead(): T {
    const item = this.items[this.head] as T
    this.items[this.head++] = undefined
    return item
  }
}
