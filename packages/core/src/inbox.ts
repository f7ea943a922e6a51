import type { NodeId, UpdateMessage } from './types.ts'

export interface InboxItem {
  readonly from: NodeId
  /** `from`'s number when it arrived (the connection below tells whether it is still that neighbour). */
  readonly index: number
  /** Which connection to `from` it arrived on: news from a closed connection is stale. */
  readonly connection: number
  readonly message: UpdateMessage
}

/**
 * Items whose room is kept once the inbox empties: past this, its column goes (a burst's room is
 * not kept for a trickle). Room for 1,024 kept 8 KiB a core: 4.4 bytes a (node, destination) pair
 * at the end of a one-subnet run of 1,500 processes (heap snapshot).
 */
const KEPT_ITEMS_MAX = 64

/**
 * Received updates waiting for the apply step, oldest first (bounded by `inboxMessagesMax`: the
 * core refuses past it), in columns: a sender, a message and two numbers an update. An object per
 * update (`InboxItem`, ~64 bytes with its reference) held 21.8 bytes a (node, destination) pair at
 * the peak of a one-subnet run, each node's inbox full of the hello burst (heap snapshot at 1,000
 * processes, `simulations/heap-owners.ts --at-events`); here ~24. `take` makes the item, short-lived.
 */
export class Inbox {
  private readonly senders: (NodeId | undefined)[] = []
  private readonly messages: (UpdateMessage | undefined)[] = []
  /** Item i's sender's number at 2i, its connection at 2i + 1. */
  private numbers = new Int32Array(0)
  private head = 0

  get length(): number {
    return this.messages.length - this.head
  }

  push(from: NodeId, index: number, connection: number, message: UpdateMessage): void {
    const i = this.messages.length
    if (2 * i + 2 > this.numbers.length) {
      const grown = new Int32Array(Math.max(32, 2 * this.numbers.length))
      grown.set(this.numbers)
      this.numbers = grown
    }
    this.numbers[2 * i] = index
    this.numbers[2 * i + 1] = connection
    this.senders.push(from)
    this.messages.push(message)
  }

  /** The oldest item, removed; undefined when empty. */
  take(): InboxItem | undefined {
    const i = this.head
    if (i === this.messages.length) return undefined
    const item: InboxItem = { from: this.senders[i]!, index: this.numbers[2 * i]!, connection: this.numbers[2 * i + 1]!, message: this.messages[i]! }
    this.senders[i] = undefined
    this.messages[i] = undefined
    this.head++
    if (this.head === this.messages.length) {
      this.senders.length = 0
      this.messages.length = 0
      this.head = 0
      if (this.numbers.length > 2 * KEPT_ITEMS_MAX) this.numbers = new Int32Array(0)
    }
    return item
  }
}
