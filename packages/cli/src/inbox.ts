import { invariant } from '@phoenix-overlay/core'

/** A message delivered to this node, as the CLI keeps it for its readers. */
export interface InboxMessage {
  /** Peer id of the sender. */
  readonly from: string
  /** Which of our names it was sent to. */
  readonly name: string
  /** The sender's message id, when the transport gives one. */
  readonly id: number | undefined
  readonly hops: number
  readonly payload: Uint8Array
}

/** Someone who takes messages out of the inbox: a `phoenix recv` connection, or the node's stdout (`--print`). */
export interface InboxReader {
  /** The names it takes; undefined: every name. */
  readonly names: ReadonlySet<string> | undefined
  /** Takes a message only when no other reader does (stdout under `--print`). */
  readonly fallback: boolean
  /** Hands one message over; false: the reader is full, hand it nothing more until `ready()`. */
  take(message: InboxMessage): boolean
  /** False once the reader is going away (its connection closed) and must be handed nothing; absent: always true. */
  accepting?(): boolean
}

/**
 * The node's bounded buffer of received messages. Each message goes to exactly one reader: the
 * ready non-fallback reader that takes its name and has waited longest (readers take turns), else
 * a ready fallback reader; with none it waits here until one comes. What waits is handed out with
 * its sources taking turns, each source's messages in arrival order (`inTurns`): behind a flooding
 * sender's 10,000 messages, another sender's message is read next, not 10,000 reads later.
 */
export class Inbox {
  private readonly held: InboxMessage[] = []
  private heldBytes = 0
  /** Readers in turn order; a reader that takes a message moves to the back. */
  private readonly readers: { reader: InboxReader; ready: boolean }[] = []
  private roomWaiters: (() => void)[] = []
  private closed = false
  /** Messages no reader took once the inbox closed (`close`): bounded by what the transport held. */
  private unreadAtClose = 0

  constructor(
    readonly messagesMax: number,
    readonly bytesMax: number,
  ) {
    invariant(messagesMax > 0 && bytesMax > 0, 'an inbox holds at least one message')
  }

  get size(): number {
    return this.held.length
  }

  get bytes(): number {
    return this.heldBytes
  }

  /** True while another message fits (an empty inbox takes any one message, however large). */
  hasRoom(): boolean {
    return this.held.length === 0 || (this.held.length < this.messagesMax && this.heldBytes < this.bytesMax)
  }

  /** Resolves once `hasRoom()`. */
  async waitForRoom(): Promise<void> {
    while (!this.hasRoom()) await new Promise<void>((resolve) => this.roomWaiters.push(resolve))
  }

  push(message: InboxMessage): void {
    invariant(this.hasRoom(), 'a message is pushed only when the inbox has room')
    if (this.handOver(message)) return
    if (this.closed) {
      this.unreadAtClose++
      return
    }
    this.held.push(message)
    this.heldBytes += message.payload.length
  }

  /** Adds a reader (it is handed what waits for it at once); returns its removal. */
  attach(reader: InboxReader): () => void {
    const entry = { reader, ready: true }
    this.readers.push(entry)
    this.dispatch()
    return () => {
      const at = this.readers.indexOf(entry)
      if (at >= 0) this.readers.splice(at, 1)
    }
  }

  /** A reader that answered `false` can take messages again. */
  ready(reader: InboxReader): void {
    const entry = this.readers.find((r) => r.reader === reader)
    if (entry === undefined || entry.ready) return
    entry.ready = true
    this.dispatch()
  }

  /**
   * Messages a reader took but could not pass on (stdout failed under them) go back to the front,
   * in their order, for the next reader: they were acknowledged, so they must not be lost. They
   * were counted in the inbox before, so they may take it past its limits for a while.
   */
  putBack(messages: readonly InboxMessage[]): void {
    if (messages.length === 0) return
    if (this.closed) {
      this.unreadAtClose += messages.length
      return
    }
    this.held.unshift(...messages)
    for (const message of messages) this.heldBytes += message.payload.length
    this.dispatch()
  }

  /**
   * Empties the inbox (the node is leaving); returns how many messages no reader took. A message
   * pushed after this (the transport handing out what it still held) goes to a reader that still
   * takes one (`--print`'s stdout), or is counted in `unread` and dropped.
   */
  close(): number {
    this.closed = true
    const unread = this.held.length
    this.unreadAtClose += unread
    this.held.length = 0
    this.heldBytes = 0
    this.wakeRoomWaiters()
    return unread
  }

  /** Messages no reader took, once closed: those it held, and those pushed after. */
  get unread(): number {
    return this.unreadAtClose
  }

  private pick(name: string): { reader: InboxReader; ready: boolean } | undefined {
    const takes = (r: { reader: InboxReader; ready: boolean }) => r.ready && (r.reader.names === undefined || r.reader.names.has(name)) && (r.reader.accepting?.() ?? true)
    return this.readers.find((r) => !r.reader.fallback && takes(r)) ?? this.readers.find((r) => r.reader.fallback && takes(r))
  }

  private handOver(message: InboxMessage): boolean {
    const entry = this.pick(message.name)
    if (entry === undefined) return false
    this.readers.splice(this.readers.indexOf(entry), 1)
    this.readers.push(entry)
    entry.ready = entry.reader.take(message)
    return true
  }

  private dispatch(): void {
    this.inTurns()
    let kept = 0
    for (const message of this.held) {
      if (this.handOver(message)) this.heldBytes -= message.payload.length
      else this.held[kept++] = message
    }
    if (kept === this.held.length) return
    this.held.length = kept
    this.wakeRoomWaiters()
  }

  /**
   * Orders what waits so that sources take turns: the first message of each source (in the order
   * the sources first appear), then the second of each, and so on; a source's own messages keep
   * their order. Applied again to its own result it changes nothing, so what came later joins the
   * turns where its source's next turn is.
   */
  private inTurns(): void {
    if (this.held.length < 2) return
    const bySource = new Map<string, InboxMessage[]>()
    for (const message of this.held) {
      const queue = bySource.get(message.from)
      if (queue === undefined) bySource.set(message.from, [message])
      else queue.push(message)
    }
    if (bySource.size < 2) return
    // Each turn walks only the sources with a message left: linear in what waits.
    let active = [...bySource.values()]
    let at = 0
    for (let turn = 0; active.length > 0; turn++) {
      const next: InboxMessage[][] = []
      for (const queue of active) {
        this.held[at++] = queue[turn]!
        if (turn + 1 < queue.length) next.push(queue)
      }
      active = next
    }
    invariant(at === this.held.length, 'taking turns keeps every waiting message')
  }

  private wakeRoomWaiters(): void {
    const waiters = this.roomWaiters
    this.roomWaiters = []
    for (const wake of waiters) wake()
  }
}
