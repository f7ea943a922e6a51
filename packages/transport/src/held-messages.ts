import { invariant } from '@phoenix-overlay/core'
import type { ReceivedMessage } from './api.ts'

/** The two bounds of a receive buffer (`TRANSPORT_LIMITS`). */
export interface BufferLimits {
  readonly receiveBufferMax: number
  readonly receiveBufferBytesMax: number
}

interface Share {
  count: number
  bytes: number
}

interface Source extends Share {
  readonly from: string
  readonly queue: ReceivedMessage[]
}

/**
 * One receive buffer (an iterator's, or the one waiting for a first consumer): its messages in
 * order, their payload bytes, and what each source holds of them, so that one source cannot take
 * the room every other source needs.
 *
 * The share rule is the dynamic threshold of shared-memory switches (Choudhury and Hahne, 1998,
 * with α = 1): a source may add a message while what it holds is below what the buffer has free,
 * in messages and in bytes. A source alone fills at most half the buffer; k sources that all send
 * faster than the application reads settle at 1/(k+1) of it each, and the free 1/(k+1) is there
 * for a source that sends now and then, which is never refused while the buffer has room for it
 * (a source holding nothing is always under its share). Before, one flooding source filled the
 * buffer and every other source's message was refused `receiver-too-slow` as long as it kept
 * sending. A refused message is never dropped silently: its sender hears `receiver-too-slow` (or
 * `no-consumer`), as before. A source is the id a data frame names, which is not signed: a member
 * that sends under many made-up ids gets a share per id, so it can still fill the buffer, as
 * before, but no more (both bounds hold whatever the ids).
 *
 * Sources take turns in what is handed out (`shift`), each source's messages in their order: a
 * message of a source that sends now and then is not read after the half of the buffer a
 * flooding source holds.
 *
 * Bounded: the per-source tallies hold only sources with a message here, so at most
 * `receiveBufferMax` of them.
 */
export class HeldMessages {
  /** Each source with a message here: its messages, oldest first, and its tallies. */
  private readonly sources = new Map<string, Source>()
  /** The same sources in turn order: the next message handed out is the oldest of the first, which then goes to the back. */
  private readonly turns: Source[] = []
  private heldCount = 0
  private heldBytes = 0

  get length(): number {
    return this.heldCount
  }

  /** The payload bytes held. */
  get bytes(): number {
    return this.heldBytes
  }

  /** Whether a message of `adding` bytes from `from` may join: an empty buffer takes any; otherwise both bounds hold after it, and the source is under its share. */
  admits(from: string, adding: number, limits: BufferLimits): boolean {
    if (this.heldCount === 0) return true
    if (this.heldCount >= limits.receiveBufferMax || this.heldBytes + adding > limits.receiveBufferBytesMax) return false
    const share = this.sources.get(from)
    if (share === undefined) return true
    return share.count < limits.receiveBufferMax - this.heldCount && share.bytes < limits.receiveBufferBytesMax - this.heldBytes
  }

  push(message: ReceivedMessage): void {
    let source = this.sources.get(message.from)
    if (source === undefined) {
      this.sources.set(message.from, (source = { from: message.from, count: 0, bytes: 0, queue: [] }))
      this.turns.push(source)
    }
    source.queue.push(message)
    this.count(source, message, 1)
  }

  /**
   * The next message: sources take turns, each its messages in the order they came. A reader
   * slower than a flooding source gets a message of every other source between two of the
   * flooder's, instead of after everything the flooder has here (half the buffer).
   */
  shift(): ReceivedMessage | undefined {
    const source = this.turns[0]
    if (source === undefined) return undefined
    const message = source.queue.shift()!
    this.count(source, message, -1)
    if (source.count === 0) {
      this.turns.shift()
      this.sources.delete(source.from)
      invariant(this.turns.length === this.sources.size, 'every source with a message here has its turn')
    } else if (this.turns.length > 1) this.turns.push(this.turns.shift()!) // to the back of the turn
    return message
  }

  /** Everything held, in the order `shift` would hand it out, leaving this buffer empty. */
  takeAll(): ReceivedMessage[] {
    const all: ReceivedMessage[] = []
    for (let message = this.shift(); message !== undefined; message = this.shift()) all.push(message)
    return all
  }

  /** Puts `earlier` (handed out before anything held, in that order) in front of what is held. */
  prepend(earlier: readonly ReceivedMessage[]): void {
    const after = this.takeAll()
    for (const message of earlier) this.push(message)
    for (const message of after) this.push(message)
  }

  private count(source: Share, message: ReceivedMessage, sign: 1 | -1): void {
    const bytes = message.payloadList.byteLength
    this.heldCount += sign
    this.heldBytes += sign * bytes
    source.count += sign
    source.bytes += sign * bytes
    invariant(source.count >= 0 && source.bytes >= 0 && this.heldBytes >= 0, 'a receive buffer never holds less than nothing of a source')
  }
}
