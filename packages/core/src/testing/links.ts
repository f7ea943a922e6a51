import { invariant, type UpdateMessage } from '../index.ts'

/**
 * TestNet's links: one FIFO queue of messages in flight per direction (`from>to`), and which of
 * them are busy in the order the queues were made. That order is the one TestNet has always
 * picked in (a Map's insertion order), so traces stay as they were; keeping the busy ones apart
 * spares filtering every link after every event, which a dense 40-node run (1,560 links) felt.
 */
export class LinkQueues {
  private readonly queues = new Map<string, { order: number; messages: UpdateMessage[] }>()
  /** Keys of the non-empty queues, sorted by `order`. */
  private readonly busyKeys: string[] = []
  private ordersMade = 0

  push(key: string, message: UpdateMessage): void {
    let queue = this.queues.get(key)
    if (queue === undefined) this.queues.set(key, (queue = { order: this.ordersMade++, messages: [] }))
    if (queue.messages.length === 0) this.markBusy(key, queue.order)
    queue.messages.push(message)
  }

  /** Removes the queue (the connection closed): what it held is lost. */
  delete(key: string): void {
    const queue = this.queues.get(key)
    if (queue === undefined) return
    if (queue.messages.length > 0) this.markIdle(key)
    this.queues.delete(key)
  }

  /** The non-empty queues, oldest queue first. */
  busy(): [string, UpdateMessage[]][] {
    return this.busyKeys.map((key) => [key, this.queues.get(key)!.messages])
  }

  /** Call after taking messages out of (or putting back into) `key`'s queue. */
  changed(key: string): void {
    const queue = this.queues.get(key)
    invariant(queue !== undefined, `link ${key} exists`)
    const listed = this.indexOf(key, queue.order)
    if (queue.messages.length === 0 && listed >= 0) this.busyKeys.splice(listed, 1)
    else if (queue.messages.length > 0 && listed < 0) this.markBusy(key, queue.order)
  }

  private markBusy(key: string, order: number): void {
    this.busyKeys.splice(this.firstAtOrAfter(order), 0, key)
  }

  private markIdle(key: string): void {
    const index = this.busyKeys.indexOf(key)
    invariant(index >= 0, `busy link ${key} is listed`)
    this.busyKeys.splice(index, 1)
  }

  private indexOf(key: string, order: number): number {
    const at = this.firstAtOrAfter(order)
    return this.busyKeys[at] === key ? at : -1
  }

  /** Where in `busyKeys` the first queue made at or after `order` is (binary search). */
  private firstAtOrAfter(order: number): number {
    let low = 0
    let high = this.busyKeys.length
    while (low < high) {
      const mid = (low + high) >> 1
      if (this.queues.get(this.busyKeys[mid]!)!.order < order) low = mid + 1
      else high = mid
    }
    return low
  }
}
