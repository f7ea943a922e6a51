/**
 * The streaming send's framing (`POST /send-stream`): many messages in one request body, each a
 * 4-byte big-endian length followed by that many bytes. Length-prefixed rather than NDJSON so a
 * payload is any bytes, carried as is (no base64, no escaping), and a frame is found without
 * scanning its bytes. See the README's "Streaming send".
 */

/** Bytes of a frame's length field (unsigned, big-endian). */
export const FRAME_HEADER_BYTES = 4

/** A frame: the length, then the payload, copied into one buffer (one write, one chunk). */
export function encodeFrame(payload: Uint8Array): Uint8Array {
  const frame = new Uint8Array(FRAME_HEADER_BYTES + payload.length)
  new DataView(frame.buffer).setUint32(0, payload.length)
  frame.set(payload, FRAME_HEADER_BYTES)
  return frame
}

/** A frame the reader refuses: `index` is the 1-based number of the message it would have been. */
export class FrameError extends Error {
  constructor(
    readonly index: number,
    message: string,
  ) {
    super(message)
  }
}

/**
 * Cuts a byte stream into frames. It holds at most one unfinished frame (≤ `payloadBytesMax` +
 * the header): a length over `payloadBytesMax` is refused before its bytes are read, so a client
 * cannot make the node buffer more than one message's worth.
 */
export class FrameReader {
  private readonly pending: Uint8Array[] = []
  private pendingBytes = 0
  private frames = 0
  private refused: FrameError | undefined

  constructor(private readonly payloadBytesMax: number) {}

  /**
   * The payloads completed by `chunk`, in order (views into the chunks where a payload lies within
   * one). A refused frame is thrown only once the frames before it were returned (by the next
   * `push` or `end`), so the messages ahead of a bad one are still sent.
   */
  push(chunk: Uint8Array): Uint8Array[] {
    if (this.refused !== undefined) throw this.refused
    this.pending.push(chunk)
    this.pendingBytes += chunk.length
    const payloads: Uint8Array[] = []
    for (;;) {
      if (this.pendingBytes < FRAME_HEADER_BYTES) return payloads
      const length = this.peekLength()
      if (length > this.payloadBytesMax) {
        this.refused = new FrameError(this.frames + 1, `message ${this.frames + 1} is ${length} bytes, more than the control endpoint's ${this.payloadBytesMax} (CONTROL_BODY_BYTES_MAX)`)
        if (payloads.length === 0) throw this.refused
        return payloads
      }
      if (this.pendingBytes < FRAME_HEADER_BYTES + length) return payloads
      this.take(FRAME_HEADER_BYTES)
      payloads.push(this.take(length))
      this.frames++
    }
  }

  /**
   * Checks that the stream ended on a frame boundary. The count is of the message's payload bytes
   * that came, as the client wrote them: it counted the 4-byte length too, so 3 of 5 read "7".
   */
  end(): void {
    if (this.refused !== undefined) throw this.refused
    if (this.pendingBytes === 0) return
    const index = this.frames + 1
    if (this.pendingBytes < FRAME_HEADER_BYTES) throw new FrameError(index, `the body ends inside message ${index}'s ${FRAME_HEADER_BYTES}-byte length (${this.pendingBytes} of its bytes came)`)
    throw new FrameError(index, `the body ends inside message ${index}: ${this.pendingBytes - FRAME_HEADER_BYTES} of its ${this.peekLength()} payload bytes came`)
  }

  private peekLength(): number {
    const head = this.pendingBytes >= FRAME_HEADER_BYTES && this.pending[0]!.length >= FRAME_HEADER_BYTES ? this.pending[0]! : this.copyOut(FRAME_HEADER_BYTES, false)
    return new DataView(head.buffer, head.byteOffset, FRAME_HEADER_BYTES).getUint32(0)
  }

  /** Removes the first `bytes` bytes: a view when they lie in the first chunk, else a copy. */
  private take(bytes: number): Uint8Array {
    const first = this.pending[0]
    if (first !== undefined && first.length >= bytes) {
      const view = first.subarray(0, bytes)
      if (first.length === bytes) this.pending.shift()
      else this.pending[0] = first.subarray(bytes)
      this.pendingBytes -= bytes
      return view
    }
    return this.copyOut(bytes, true)
  }

  private copyOut(bytes: number, consume: boolean): Uint8Array {
    const out = new Uint8Array(bytes)
    let filled = 0
    let i = 0
    while (filled < bytes) {
      const chunk = this.pending[i]!
      const n = Math.min(chunk.length, bytes - filled)
      out.set(chunk.subarray(0, n), filled)
      filled += n
      if (consume && n === chunk.length) this.pending.shift()
      else if (consume) this.pending[0] = chunk.subarray(n)
      else i++
    }
    if (consume) this.pendingBytes -= bytes
    return out
  }
}
