/**
 * Messages on the baselines' raw libp2p streams: a 4-byte big-endian length, then the message,
 * whose first 8 bytes are the send time (`process.hrtime.bigint()`, nanoseconds of the machine's
 * monotonic clock, which every process on the machine shares). A Phoenix message is the same
 * message without the length (the overlay frames it).
 */
import type { Uint8ArrayList } from 'uint8arraylist'

export const LENGTH_BYTES = 4
export const STAMP_BYTES = 8
/** The smallest message: its send time. */
export const MESSAGE_BYTES_MIN = STAMP_BYTES

export function nowNs(): bigint {
  return process.hrtime.bigint()
}

/** A message of `messageBytes` stamped `stampNs`, with the length prefix when `framed`. */
export function makeMessage(messageBytes: number, stampNs: bigint, framed: boolean): Uint8Array {
  if (messageBytes < MESSAGE_BYTES_MIN) throw new Error(`message size must be at least ${MESSAGE_BYTES_MIN} bytes, got ${messageBytes}`)
  const offset = framed ? LENGTH_BYTES : 0
  const bytes = new Uint8Array(offset + messageBytes)
  const view = new DataView(bytes.buffer)
  if (framed) view.setUint32(0, messageBytes)
  view.setBigUint64(offset, stampNs)
  return bytes
}

/** The send time of an unframed message. */
export function stampOf(message: Uint8Array): bigint {
  return new DataView(message.buffer, message.byteOffset, message.byteLength).getBigUint64(0)
}

/**
 * Splits a raw byte stream into messages without copying them: only the length and the stamp
 * are read (they may straddle chunks); `onMessage` runs when a message's last byte arrives.
 */
export class MessageReader {
  private readonly head = new Uint8Array(LENGTH_BYTES + STAMP_BYTES)
  private readonly headView = new DataView(this.head.buffer)
  private headFilled = 0
  private bodyRemaining = 0
  private stampNs = 0n
  private messageBytes = 0

  constructor(private readonly onMessage: (stampNs: bigint, messageBytes: number) => void) {}

  push(data: Uint8Array | Uint8ArrayList): void {
    if (data instanceof Uint8Array) this.pushChunk(data)
    else for (const chunk of data) this.pushChunk(chunk)
  }

  private pushChunk(chunk: Uint8Array): void {
    let offset = 0
    while (offset < chunk.length) {
      if (this.bodyRemaining === 0) {
        const take = Math.min(this.head.length - this.headFilled, chunk.length - offset)
        this.head.set(chunk.subarray(offset, offset + take), this.headFilled)
        this.headFilled += take
        offset += take
        if (this.headFilled < this.head.length) return
        this.headFilled = 0
        this.messageBytes = this.headView.getUint32(0)
        if (this.messageBytes < MESSAGE_BYTES_MIN) throw new Error(`bad frame: message of ${this.messageBytes} bytes`)
        this.stampNs = this.headView.getBigUint64(LENGTH_BYTES)
        this.bodyRemaining = this.messageBytes - STAMP_BYTES
        if (this.bodyRemaining === 0) this.onMessage(this.stampNs, this.messageBytes)
      } else {
        const take = Math.min(this.bodyRemaining, chunk.length - offset)
        this.bodyRemaining -= take
        offset += take
        if (this.bodyRemaining === 0) this.onMessage(this.stampNs, this.messageBytes)
      }
    }
  }
}
