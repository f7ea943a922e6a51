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
 * `no-consumer`), as before.
 *
 * Bounded: the per-source tallies hold only sources with a message here, so at most
 * `receiveBufferMax` of them.
 */
export class HeldMessages {
  private items: ReceivedMessage[] = []
  private heldBytes = 0
  private readonly shares = new Map<string, Share>()

  get length(): number {
    return this.items.length
  }

  /** The payload bytes held. */
  get bytes(): number {
    return this.heldBytes
  }

  /** Sources with a message here. */
  get sourceCount(): number {
    return this.shares.size
  }

  /** Whether a message of `adding` bytes from `from` may join: an empty buffer takes any; otherwise both bounds hold after it, and the source is under its share. */
  admits(from: string, adding: number, limits: BufferLimits): boolean {
    if (this.items.length === 0) return true
    if (this.items.length >= limits.receiveBufferMax || this.heldBytes + adding > limits.receiveBufferBytesMax) return false
    const share = this.shares.get(from)
    if (share === undefined) return true
    return share.count < limits.receiveBufferMax - this.items.length && share.bytes < limits.receiveBufferBytesMax - this.heldBytes
  }

  push(message: ReceivedMessage): void {
    this.items.push(message)
    this.count(message, 1)
  }

  shift(): ReceivedMessage | undefined {
    const message = this.items.shift()
    if (message !== undefined) this.count(message, -1)
    return message
  }

  /** Everything held, in order, leaving this buffer empty. */
  takeAll(): ReceivedMessage[] {
    const all = this.items
    this.items = []
    this.heldBytes = 0
    this.shares.clear()
    return all
  }

  /** Puts `earlier` in front of what is held (they arrived first). */
  prepend(earlier: readonly ReceivedMessage[]): void {
    this.items = [...earlier, ...this.items]
    for (const message of earlier) this.count(message, 1)
  }

  private count(message: ReceivedMessage, sign: 1 | -1): void {
    const bytes = message.payloadList.byteLength
    this.heldBytes += sign * bytes
    const share = this.shares.get(message.from) ?? { count: 0, bytes: 0 }
    share.count += sign
    share.bytes += sign * bytes
    invariant(share.count >= 0 && share.bytes >= 0 && this.heldBytes >= 0, 'a receive buffer never holds less than nothing of a source')
    if (share.count === 0) this.shares.delete(message.from)
    else this.shares.set(message.from, share)
  }
}
