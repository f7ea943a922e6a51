import type { Logger, Stream } from '@libp2p/interface'
import { LengthPrefixedDecoder } from '@libp2p/utils'
import { WIRE_LIMITS } from '@phoenix-overlay/wire'
import * as varint from 'uint8-varint'
import { Uint8ArrayList } from 'uint8arraylist'

export interface LinkLimits {
  readonly outboundBytesMax: number
  readonly outboundFramesMax: number
  readonly inboundBytesMax: number
}

/**
 * The one long-lived stream to a neighbour: length-prefixed frames out through a bounded queue
 * that respects the stream's backpressure, and frames in, one callback each. The reader can be
 * paused (the core's inbox is full) and resumed; while paused the stream buffers, and libp2p
 * stops reading from the socket once its buffer is full.
 */
export class NeighbourLink {
  private readonly queue: Uint8Array[] = []
  private queuedBytes = 0
  private writing = false
  private closed = false
  private readonly decoder: LengthPrefixedDecoder
  /** Frames decoded but not yet accepted by `onFrame` (it returned false): retried on resume. */
  private readonly held: Uint8Array[] = []
  bytesSent = 0
  bytesReceived = 0

  constructor(
    readonly peer: string,
    readonly stream: Stream,
    private readonly limits: LinkLimits,
    private readonly log: Logger,
    /** Handles one frame; false = cannot take it now (pause and retry it on `resume`). */
    private readonly onFrame: (frame: Uint8Array) => boolean,
    private readonly onClose: (link: NeighbourLink, reason: string) => void,
    /** The byte stream cannot be split into frames (bad length prefix): the neighbour misbehaves. */
    private readonly onBadFraming: (link: NeighbourLink, reason: string) => void,
    /** The outbound queue emptied: frames held elsewhere for want of room here may move now. */
    private readonly onDrained: () => void = () => {},
  ) {
    // One delivery can carry a whole flow-control window; the decoder keeps that plus a partial frame.
    this.decoder = new LengthPrefixedDecoder({ maxDataLength: WIRE_LIMITS.frameBytesMax, maxBufferSize: limits.inboundBytesMax + WIRE_LIMITS.frameBytesMax })
    stream.maxReadBufferLength = limits.inboundBytesMax
    stream.addEventListener('message', (event) => this.receive(event.data))
    stream.addEventListener('close', (event) => this.shutDown(event.error?.message ?? 'stream closed'))
    stream.addEventListener('remoteCloseWrite', () => this.shutDown('neighbour closed its side'))
  }

  get isOpen(): boolean {
    return !this.closed
  }

  get queuedFrames(): number {
    return this.queue.length
  }

  /** True if a frame of `bytes` would fit in the outbound queue now. */
  hasRoomFor(bytes: number): boolean {
    return !this.closed && this.queue.length < this.limits.outboundFramesMax && this.queuedBytes + bytes + 8 <= this.limits.outboundBytesMax
  }

  /** Queues a frame; false if the queue is full (the caller decides what that means). */
  send(frame: Uint8Array): boolean {
    if (this.closed) return false
    if (this.queue.length >= this.limits.outboundFramesMax || this.queuedBytes + frame.length > this.limits.outboundBytesMax) return false
    const prefix = varint.encode(frame.length)
    const bytes = new Uint8Array(prefix.length + frame.length)
    bytes.set(prefix)
    bytes.set(frame, prefix.length)
    this.queue.push(bytes)
    this.queuedBytes += bytes.length
    void this.flush()
    return true
  }

  private async flush(): Promise<void> {
    if (this.writing) return
    this.writing = true
    try {
      while (this.queue.length > 0 && !this.closed) {
        const bytes = this.queue.shift()!
        this.queuedBytes -= bytes.length
        this.bytesSent += bytes.length
        if (!this.stream.send(bytes)) await this.stream.onDrain()
      }
      if (this.queue.length === 0) this.onDrained()
    } catch (error) {
      this.shutDown(`write failed: ${(error as Error).message}`)
    } finally {
      this.writing = false
    }
  }

  private receive(data: Uint8Array | Uint8ArrayList): void {
    // A neighbour dropped for a bad frame is heard no more, not even the rest of the same delivery.
    if (this.closed) return
    this.bytesReceived += data.byteLength
    try {
      for (const frame of this.decoder.decode(data)) {
        if (this.closed) return
        const bytes = frame.subarray()
        if (this.held.length > 0 || !this.onFrame(bytes)) {
          this.held.push(bytes)
          this.stream.pause()
        }
      }
    } catch (error) {
      this.onBadFraming(this, `undecodable framing: ${(error as Error).message}`)
    }
  }

  /** Retries the frames held back while paused; resumes reading once all are taken. */
  resume(): void {
    if (this.closed) {
      this.held.length = 0
      return
    }
    while (this.held.length > 0 && !this.closed) {
      if (!this.onFrame(this.held[0]!)) return
      this.held.shift()
    }
    if (!this.closed) this.stream.resume()
  }

  /** Closes gracefully once queued frames are written (a leave's farewell goes out first). */
  async close(reason: string): Promise<void> {
    while (this.queue.length > 0 && !this.closed) await new Promise((r) => setTimeout(r, 5))
    this.shutDown(reason)
    await this.stream.close().catch(() => undefined)
  }

  abort(reason: string): void {
    this.log('closing link to %s: %s', this.peer, reason)
    this.shutDown(reason)
    this.stream.abort(new Error(reason))
  }

  private shutDown(reason: string): void {
    if (this.closed) return
    this.closed = true
    this.queue.length = 0
    this.queuedBytes = 0
    this.held.length = 0
    this.onClose(this, reason)
  }
}
