import { Uint8ArrayList } from 'uint8arraylist'
import { DuplicateWindow } from './duplicate-window.ts'
import { HeldMessages, type BufferLimits } from './held-messages.ts'
import type { ReceivedMessage } from './api.ts'

/**
 * A message for the application: its payload as it arrived (one array, or the pieces of a frame
 * that spanned several reads). Pieces are joined only when `payload` is first read, through own
 * enumerable getters (not a class's: a spread or a structured clone of the message still has
 * them). A payload in one piece needs no getter: an object literal with accessors costs ~1 µs
 * to make, against ~0.1 µs for this one with its list made at once.
 */
export function receivedMessage(fields: Omit<ReceivedMessage, 'payload' | 'payloadList'>, arrived: Uint8Array | Uint8ArrayList): ReceivedMessage {
  const { from, name, hops, messageId } = fields
  if (arrived instanceof Uint8Array) return { from, name, hops, messageId, payload: arrived, payloadList: new Uint8ArrayList(arrived) }
  let joined: Uint8Array | undefined
  return {
    from,
    name,
    hops,
    messageId,
    get payload(): Uint8Array {
      joined ??= arrived.subarray()
      return joined
    },
    payloadList: arrived,
  }
}

/** What became of a message handed to the inbox. */
export type Delivery = 'delivered' | 'duplicate' | 'receiver-too-slow' | 'no-consumer'

interface Consumer {
  /** Bounded by receiveBufferMax and receiveBufferBytesMax, each source to its share (held-messages.ts). */
  readonly buffer: HeldMessages
  /** Every `next()` waiting for a message (an application may call it again before one settles): all wake, the first takes it. */
  readonly waiters: (() => void)[]
  ended: boolean
  /** Left early (`return()`): what it held went back to the node's receive buffer. */
  left: boolean
}

function wake(consumer: Consumer): void {
  for (const waiter of consumer.waiters.splice(0)) waiter()
}

/**
 * Where messages for this node meet the application, and the rule that makes an ack mean
 * "the application has it, or will be handed it when it reads":
 * - the consumers are the `messages()` iterators and the `'message'` listeners; each gets every
 *   message;
 * - a message is delivered only if every iterator has room for it (`receiveBufferMax` messages,
 *   `receiveBufferBytesMax` payload bytes) and its source is under its share of that room (it
 *   holds less than is free: `HeldMessages`, so one flooding source leaves room for the others);
 *   if not, no consumer gets it and the sender hears `receiver-too-slow`;
 * - before the application has any consumer, messages wait in the node's own receive buffer
 *   (the same two bounds), as if an iterator had been opened at start: the first iterator
 *   opened, or the first `'message'` listener added, is handed them in order (each source's in
 *   its order, sources taking turns, as an iterator hands out what it holds). Once that buffer
 *   is full, a message is refused as `no-consumer`;
 * - a (source, message id) delivered within the last `duplicateWindowMax` messages is a retry
 *   whose first copy arrived: it is not delivered again (but it is acknowledged again).
 * Only a delivered message is acknowledged.
 */
export class Inbox {
  private readonly consumers = new Set<Consumer>()
  /** The (source, message id) pairs of the last `duplicateWindowMax` delivered messages. */
  private readonly seen: DuplicateWindow
  /** Messages that arrived while the application had no consumer yet (the same bounds and shares as an iterator's). */
  private unclaimed = new HeldMessages()
  /** The node stopped and has not started again: an iterator opened now hands out what waits and ends (it would wait for a start that may never come). */
  private stopped = false

  constructor(
    private readonly limits: BufferLimits & { readonly duplicateWindowMax: number },
    private readonly listenerCount: () => number,
    private readonly emit: (message: ReceivedMessage) => void,
  ) {
    this.seen = new DuplicateWindow(limits.duplicateWindowMax)
  }

  accept(message: ReceivedMessage): Delivery {
    if (this.seen.has(message.from, message.messageId)) return 'duplicate'
    const bytes = message.payloadList.byteLength
    if (this.consumers.size === 0 && this.listenerCount() === 0) {
      if (!this.unclaimed.admits(message.from, bytes, this.limits)) return 'no-consumer'
      this.seen.remember(message.from, message.messageId)
      this.unclaimed.push(message)
      return 'delivered'
    }
    for (const consumer of this.consumers) if (!consumer.buffer.admits(message.from, bytes, this.limits)) return 'receiver-too-slow'
    this.seen.remember(message.from, message.messageId)
    for (const consumer of this.consumers) {
      consumer.buffer.push(message)
      wake(consumer)
    }
    // Only for a listener: an event made and dispatched for nobody (a reader of `messages()`
    // alone) cost an event object and a dispatch per delivered message.
    if (this.listenerCount() > 0) this.emit(message)
    return 'delivered'
  }

  /** Messages waiting for the application's first consumer. */
  get unclaimedCount(): number {
    return this.unclaimed.length
  }

  /** A `'message'` listener was added: it is handed what waited for a consumer, in order. */
  listenerAdded(): void {
    if (this.unclaimed.length === 0) return
    queueMicrotask(() => {
      if (this.listenerCount() === 0) return
      for (const message of this.unclaimed.takeAll()) {
        for (const consumer of this.consumers) {
          consumer.buffer.push(message)
          wake(consumer)
        }
        this.emit(message)
      }
    })
  }

  /** Ends every iterator once it has handed out what it holds (the node stopped). */
  endAll(): void {
    this.stopped = true
    for (const consumer of this.consumers) {
      consumer.ended = true
      wake(consumer)
    }
    this.consumers.clear()
  }

  /** The node started (again): iterators opened from now on wait for messages. */
  reopen(): void {
    this.stopped = false
  }

  /**
   * An iterator ends early (`break`, `return()`): a `next()` still waiting settles as done, and
   * what it held and had not handed out goes back to the node's receive buffer if no other
   * consumer is left to have it, for the next one opened. Those messages were acknowledged: an
   * ack means the application has the message or will be handed it when it reads.
   */
  private leave(consumer: Consumer): void {
    // A consumer the stop ended (or opened on a stopped node) is no longer in the set, but what it
    // still holds was acknowledged all the same: it goes back too.
    if (!this.consumers.delete(consumer) && (consumer.left || consumer.buffer.length === 0)) return
    consumer.left = true
    consumer.ended = true
    const held = consumer.buffer.takeAll()
    if (this.consumers.size === 0 && this.listenerCount() === 0) this.unclaimed.prepend(held)
    wake(consumer)
  }

  messages(): AsyncIterableIterator<ReceivedMessage> {
    // The first consumer takes over what waited for one.
    const first = this.consumers.size === 0 && this.listenerCount() === 0
    const consumer: Consumer = { buffer: first ? this.unclaimed : new HeldMessages(), waiters: [], ended: this.stopped, left: false }
    if (first) this.unclaimed = new HeldMessages()
    if (!this.stopped) this.consumers.add(consumer)
    const leave = () => this.leave(consumer)
    return {
      [Symbol.asyncIterator]() {
        return this
      },
      async next(): Promise<IteratorResult<ReceivedMessage>> {
        while (consumer.buffer.length === 0) {
          if (consumer.ended) return { value: undefined, done: true }
          await new Promise<void>((resolve) => consumer.waiters.push(resolve))
        }
        const message = consumer.buffer.shift()!
        return { value: message, done: false }
      },
      async return(): Promise<IteratorResult<ReceivedMessage>> {
        leave()
        return { value: undefined, done: true }
      },
    }
  }
}
