import { EVENT_QUEUE_MAX } from './constants.ts'
import { SimulationError } from './errors.ts'

/**
 * A binary min-heap of events ordered by (time, insertion number). The tie-break on insertion
 * order makes simultaneous events run in the order they were scheduled, so runs are
 * deterministic and causality at equal times is preserved.
 */
export class EventQueue<T> {
  private times: number[] = []
  private orders: number[] = []
  private items: T[] = []
  private inserted = 0

  get size(): number {
    return this.items.length
  }

  push(timeMs: number, item: T): void {
    if (this.items.length >= EVENT_QUEUE_MAX) {
      throw new SimulationError('LIMIT_EXCEEDED', `event queue holds ${EVENT_QUEUE_MAX} events (EVENT_QUEUE_MAX); the scenario is too large for one process`)
    }
    const order = this.inserted++
    let i = this.items.length
    this.times.push(timeMs)
    this.orders.push(order)
    this.items.push(item)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!this.less(timeMs, order, this.times[parent]!, this.orders[parent]!)) break
      this.move(parent, i)
      i = parent
    }
    this.set(i, timeMs, order, item)
  }

  peekTime(): number | undefined {
    return this.times[0]
  }

  /** Removes the earliest event; call only when size > 0. */
  pop(): { timeMs: number; item: T } {
    const timeMs = this.times[0]!
    const item = this.items[0]!
    const lastTime = this.times.pop()!
    const lastOrder = this.orders.pop()!
    const lastItem = this.items.pop()!
    const n = this.items.length
    if (n > 0) {
      let i = 0
      for (;;) {
        const left = 2 * i + 1
        if (left >= n) break
        const right = left + 1
        const child = right < n && this.less(this.times[right]!, this.orders[right]!, this.times[left]!, this.orders[left]!) ? right : left
        if (!this.less(this.times[child]!, this.orders[child]!, lastTime, lastOrder)) break
        this.move(child, i)
        i = child
      }
      this.set(i, lastTime, lastOrder, lastItem)
    }
    return { timeMs, item }
  }

  private less(t1: number, o1: number, t2: number, o2: number): boolean {
    return t1 < t2 || (t1 === t2 && o1 < o2)
  }

  private move(from: number, to: number): void {
    this.times[to] = this.times[from]!
    this.orders[to] = this.orders[from]!
    this.items[to] = this.items[from]!
  }

  private set(i: number, t: number, o: number, item: T): void {
    this.times[i] = t
    this.orders[i] = o
    this.items[i] = item
  }
}
