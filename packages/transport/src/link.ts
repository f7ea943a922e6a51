import type { Logger, Stream } from '@libp2p/interface'
import { WIRE_LIMITS, encodeFrame, type ProbeFrame } from '@phoenix-overlay/wire'
import * as varint from 'uint8-varint'
import { Uint8ArrayList } from 'uint8arraylist'
import { drained } from './drain.ts'
import { FrameDecoder } from './frame-decoder.ts'
import { Liveness, type LivenessTiming } from './liveness.ts'
import { resumeReading } from './stream-resume.ts'

/** An encoded frame: one piece, or (a frame that arrived in several pieces, passed on as it came) a list of them. */
export type FrameBytes = Uint8Array | Uint8ArrayList

/** The frame as one Uint8Array if it is in one piece (or empty), without copying; else undefined. */
export function onePiece(frame: FrameBytes): Uint8Array | undefined {
  if (frame instanceof Uint8Array) return frame
  const pieces = frame[Symbol.iterator]()
  const first = pieces.next()
  if (first.done === true) return new Uint8Array(0)
  return pieces.next().done === true ? first.value : undefined
}

/** The first piece of a frame. */
export function firstPiece(frame: FrameBytes): Uint8Array | undefined {
  if (frame instanceof Uint8Array) return frame
  const first = frame[Symbol.iterator]().next()
  return first.done === true ? undefined : first.value
}

const firstByte = (frame: FrameBytes): number | undefined => (frame instanceof Uint8Array ? frame[0] : frame.byteLength > 0 ? frame.get(0) : undefined)

export interface LinkLimits {
  readonly outboundBytesMax: number
  readonly outboundFramesMax: number
  readonly inboundBytesMax: number
}

export interface LinkLiveness {
  readonly timing: LivenessTiming
  /** The neighbour stopped answering (the link is closed already, with `reason`): close its connection too. */
  readonly onUnresponsive: (link: NeighbourLink, reason: string) => void
}

/**
 * The one long-lived stream to a neighbour: length-prefixed frames out through a bounded queue
 * that respects the stream's backpressure, and frames in, one callback each. The reader can be
 * paused (the core's inbox is full) and resumed; while paused the stream buffers, and libp2p
 * stops reading from the socket once its buffer is full.
 */
export class NeighbourLink {
  /**
   * Two outbound queues, each bounded by `outboundBytesMax` and `outboundFramesMax`: control
   * frames (routing updates, acks, notices, credit, probes) are always written before data, so
   * routing is never starved by data however much is queued; data frames wait in their own.
   */
  private readonly control = new FrameQueue()
  private readonly data = new FrameQueue()
  /** Tags of frames that were queued and never handed to the stream, once the link closed (`takeUnsent`). */
  private unsent: unknown[] = []
  /** Waiting for a 'drain' before writing more. */
  private writing = false
  /** A write went out in this pass of the event loop: frames queued after it wait for its check phase (setImmediate), to go in one write. */
  private holdingBurst = false
  private closed = false
  private readonly decoder: FrameDecoder
  /**
   * Frames decoded but not yet accepted by `onFrame` (it returned false): retried on resume, from
   * `heldFrom` on. Taken by index, not `shift()`: one delivery can hold thousands of small frames
   * (the rest of it once the core's inbox is full), and shifting each off the front was quadratic:
   * a flood of 3-byte updates kept a hub at 100% CPU, 73% of it here (an adversarial audit).
   */
  private held: (FrameBytes | undefined)[] = []
  private heldFrom = 0
  /** Wakes the writer waiting for a 'drain' (the link closed meanwhile). */
  private wakeWriter: (() => void) | undefined
  private readonly liveness: Liveness | undefined
  private livenessTimer: ReturnType<typeof setInterval> | undefined
  bytesSent = 0
  bytesReceived = 0

  constructor(
    readonly peer: string,
    readonly stream: Stream,
    private readonly limits: LinkLimits,
    private readonly log: Logger,
    /** Handles one frame; false = cannot take it now (pause and retry it on `resume`). */
    private readonly onFrame: (frame: FrameBytes) => boolean,
    private readonly onClose: (link: NeighbourLink, reason: string) => void,
    /** The byte stream cannot be split into frames (bad length prefix): the neighbour misbehaves. */
    private readonly onBadFraming: (link: NeighbourLink, reason: string) => void,
    /** The outbound queue emptied: frames held elsewhere for want of room here may move now. */
    private readonly onDrained: () => void = () => {},
    /** Probe the neighbour when it is silent and close the link when it stops answering (liveness.ts); absent = never. */
    liveness?: LinkLiveness,
    /** Holds the neighbour's end-of-stream back from the link while a leave needs it held (StreamTap); absent = never. */
    remoteClose?: { gate(listener: (event: Event) => void): (event: Event) => void },
  ) {
    // One delivery can carry a whole flow-control window; the decoder keeps that plus a partial frame.
    this.decoder = new FrameDecoder(WIRE_LIMITS.frameBytesMax, limits.inboundBytesMax + WIRE_LIMITS.frameBytesMax)
    stream.maxReadBufferLength = limits.inboundBytesMax
    stream.addEventListener('message', (event) => this.receive(event.data))
    stream.addEventListener('close', (event) => this.shutDown(event.error?.message ?? 'stream closed'))
    const remoteClosed = () => this.shutDown('neighbour closed its side')
    stream.addEventListener('remoteCloseWrite', remoteClose === undefined ? remoteClosed : remoteClose.gate(remoteClosed))
    if (liveness !== undefined) {
      const alive = new Liveness(liveness.timing, performance.now())
      this.liveness = alive
      // A drain means the neighbour granted flow-control window: it is reading, so it is alive.
      stream.addEventListener('drain', () => alive.heard(performance.now()))
      this.livenessTimer = setInterval(() => this.checkLiveness(liveness), liveness.timing.livenessCheckEveryMs)
      this.livenessTimer.unref?.()
    }
  }

  get isOpen(): boolean {
    return !this.closed
  }

  get queuedFrames(): number {
    return this.control.length + this.data.length
  }

  get queuedDataFrames(): number {
    return this.data.length
  }

  /** True if a data frame of `bytes` would fit in the data queue now. */
  hasRoomFor(bytes: number): boolean {
    return !this.closed && this.fits(this.data, bytes + 8)
  }

  private fits(queue: FrameQueue, bytes: number): boolean {
    return queue.length < this.limits.outboundFramesMax && queue.bytes + bytes <= this.limits.outboundBytesMax
  }

  /**
   * Queues a frame (a data frame behind the data, anything else behind the control frames);
   * false if its queue is full (the caller decides what that means). `tag` comes back from
   * `takeUnsent` if the link closes before the frame was handed to the stream.
   */
  send(frame: FrameBytes, tag?: unknown): boolean {
    if (this.closed) return false
    const queue = firstByte(frame) === DATA_FRAME_FIRST_BYTE ? this.data : this.control
    if (!this.fits(queue, frame.byteLength)) return false
    queue.push(frame, tag)
    this.flush()
    return true
  }

  /**
   * Writes what is queued, a batch per `stream.send`, at once: a frame queued while nothing is
   * being written goes out in the same call (no wait, so a lone frame adds no latency); frames
   * queued after it in the same pass of the event loop (a burst of sends, even one whose sends are
   * separated by awaits, as a loop awaiting each `send` is) go together in its check phase. Frames
   * queued during a delivery from any neighbour (`corked`: all those decoded from one delivery of
   * the previous hop, and what credit that delivery released) are written when the delivery ends,
   * together: one yamux frame, one Noise encryption per 64 KiB and one socket write instead of
   * one each per frame (for 4 KiB frames, 16 times fewer). While the stream waits for a 'drain',
   * frames gather in the queue and go in the writes that follow it.
   */
  private flush(): void {
    if (this.writing || this.holdingBurst || this.closed || this.queuedFrames === 0) return
    if (deliveryDepth > 0) {
      corked.add(this)
      return
    }
    // The frames queued after this write in this pass of the event loop (a burst of sends) gather
    // for one write in its check phase. One microtask later, as it was, ended a burst at the
    // first await between two sends: a loop awaiting each send (the control endpoint's streaming
    // send, any application's) wrote each message alone, one yamux frame, Noise encryption and
    // socket write each. Measured (bench `run control`, 4 KiB): the streaming send went from 45
    // to 16 ms of its node's CPU per MiB; `run interleaved`, Phoenix through one relay at 4 KiB
    // 1.30x (all processes' CPU per MiB 75 -> 54), 64 KiB unchanged.
    // Held from before the write (a drain it causes may call back into flush); its check phase is
    // asked for after the write, so the frame goes first.
    this.holdingBurst = true
    const drained = this.writeAll()
    setImmediate(this.endBurst)
    // What `onDrained` queues (frames that waited for room) is written when it returns, in one batch.
    if (drained && this.queuedFrames === 0 && !this.closed) corkedWhile(this.onDrained)
  }

  /** Hands the queue to the stream, a batch per `send`; false if it stopped (the stream wants a 'drain', or refused and the link closed). */
  private writeAll(): boolean {
    while (this.queuedFrames > 0 && !this.closed) {
      const batch = this.takeBatch()
      let taken: boolean
      try {
        taken = this.stream.send(batch.bytes)
      } catch (error) {
        // Refused (the stream is closing): never written, so their senders hear of it.
        this.unsent.push(...batch.tags)
        this.shutDown(`write failed: ${(error as Error).message}`)
        return false
      }
      this.bytesSent += batch.bytes.byteLength
      if (!taken) {
        void this.waitForDrain()
        return false
      }
    }
    return true
  }

  private readonly endBurst = (): void => {
    this.holdingBurst = false
    this.flush()
  }

  /** The stream holds more than it wants: write nothing until its 'drain' (or until the link closes). */
  private async waitForDrain(): Promise<void> {
    this.writing = true
    try {
      await drained(this.stream, () => this.closed, (wake) => (this.wakeWriter = wake))
    } finally {
      this.wakeWriter = undefined
      this.writing = false
    }
    this.flush()
  }

  /**
   * The next write: control frames first, then data, each with its length prefix, up to
   * BATCH_BYTES_MAX (a larger frame goes alone). Frames of COPY_BELOW_BYTES or more are handed
   * on as they are (a forwarded frame's payload is not copied on its way through this node), the
   * prefix joined with a short first piece (`appendPrefixed`);
   * smaller ones are copied into one buffer with their prefixes, since the cipher and the socket
   * cost per piece of a write (a piece each for every prefix and frame otherwise).
   */
  private takeBatch(): { bytes: FrameBytes; tags: unknown[] } {
    // One small frame (a quiet link: a lone message, a probe, an ack) is one buffer with its prefix, no list.
    if (this.queuedFrames === 1) {
      const queue = this.control.length === 1 ? this.control : this.data
      const frame = queue.peek()
      if (frame.byteLength < COPY_BELOW_BYTES) {
        const bytes = withPrefixes([frame], varint.encodingLength(frame.byteLength) + frame.byteLength)
        return { bytes, tags: [queue.shift()] }
      }
    }
    const bytes = new Uint8ArrayList()
    const tags: unknown[] = []
    let small: FrameBytes[] = []
    let smallBytes = 0
    const flushSmall = () => {
      if (small.length === 0) return
      bytes.append(withPrefixes(small, smallBytes))
      small = []
      smallBytes = 0
    }
    for (const queue of [this.control, this.data]) {
      while (queue.length > 0) {
        const frame = queue.peek()
        const size = varint.encodingLength(frame.byteLength) + frame.byteLength
        if (tags.length > 0 && bytes.byteLength + smallBytes + size > BATCH_BYTES_MAX) break
        tags.push(queue.shift())
        if (frame.byteLength < COPY_BELOW_BYTES) {
          small.push(frame)
          smallBytes += size
        } else {
          flushSmall()
          appendPrefixed(bytes, frame)
        }
      }
    }
    flushSmall()
    return { bytes, tags }
  }

  /** Buffered in the stream (taken from our queue, not yet handed to the muxer): bounded by one batch (BATCH_BYTES_MAX, or one larger frame) when backpressure holds. */
  get streamBufferedBytes(): number {
    return this.stream.writeBufferLength
  }

  get queuedBytesTotal(): number {
    return this.control.bytes + this.data.bytes
  }

  /** A probe frame from the neighbour: a question is answered at once, an answer needs nothing more (hearing it was the point). */
  onProbe(probe: ProbeFrame): void {
    if (!probe.reply) this.send(encodeFrame({ kind: 'probe', probe: { nonce: probe.nonce, reply: true } }))
  }

  private checkLiveness(liveness: LinkLiveness): void {
    if (this.closed || this.liveness === undefined) return
    const decision = this.liveness.check(performance.now(), this.heldFrom < this.held.length)
    if (decision.action === 'probe') this.send(encodeFrame({ kind: 'probe', probe: { nonce: decision.nonce, reply: false } }))
    else if (decision.action === 'dead') {
      const reason = `neighbour unresponsive: ${decision.reason}`
      this.abort(reason)
      liveness.onUnresponsive(this, reason)
    }
  }

  get probesSent(): number {
    return this.liveness?.probesSent ?? 0
  }

  /** A delivery from the stream, corked as `corkedWhile` does (without a closure per delivery). */
  private receive(data: Uint8Array | Uint8ArrayList): void {
    deliveryDepth++
    try {
      this.deliver(data)
    } finally {
      deliveryDepth--
      if (deliveryDepth === 0) uncork()
    }
  }

  private deliver(data: Uint8Array | Uint8ArrayList): void {
    // A neighbour dropped for a bad frame is heard no more, not even the rest of the same delivery.
    if (this.closed) return
    this.liveness?.heard(performance.now())
    this.bytesReceived += data.byteLength
    try {
      // A quiet link's delivery is one whole frame: handled without the decoder's generators.
      const only = this.decoder.onlyFrame(data)
      if (only !== undefined) return this.take(only)
      for (const frame of this.decoder.decode(data)) {
        if (this.closed) return
        // A frame that arrived in several pieces stays in them (joining them copies it): the
        // handler passes a data frame on as it is and joins the rest.
        this.take(onePiece(frame) ?? frame)
      }
    } catch (error) {
      this.onBadFraming(this, `undecodable framing: ${(error as Error).message}`)
    }
  }

  /** One frame in: to the handler, or held (and the stream paused) behind frames it could not take. */
  private take(bytes: FrameBytes): void {
    if (this.heldFrom < this.held.length || !this.onFrame(bytes)) {
      this.held.push(bytes)
      this.stream.pause()
    }
  }

  /** Writes what a delivery queued (after it ended). */
  writeQueued(): void {
    this.flush()
  }

  /** Retries the frames held back while paused; resumes reading once all are taken. */
  resume(): void {
    corkedWhile(() => this.retryHeld())
  }

  private retryHeld(): void {
    while (this.heldFrom < this.held.length && !this.closed) {
      if (!this.onFrame(this.held[this.heldFrom]!)) return
      this.held[this.heldFrom++] = undefined // taken: its bytes may go
    }
    this.held = []
    this.heldFrom = 0
    if (this.closed) return
    try {
      // Not `stream.resume()`: it tells the muxer to resume after handing the data read while
      // paused to `take`, which may pause again; the neighbour would be granted window while
      // nothing is read, and the stream reset past its read buffer's limit (stream-resume.ts).
      resumeReading(this.stream)
    } catch (error) {
      // The neighbour's stream is closing (a leave) before its 'close' event reached us: the link
      // closes, as it would at that event. Thrown on, it dropped the neighbour as an internal
      // error (`StreamStateError`, once in 392 graceful leaves in a churn audit).
      this.shutDown(`stream closing: ${(error as Error).message}`)
    }
  }

  /** Closes gracefully once queued frames are written (a leave's farewell goes out first). */
  async close(reason: string): Promise<void> {
    while (this.queuedFrames > 0 && !this.closed) await new Promise((r) => setTimeout(r, 5))
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
    clearInterval(this.livenessTimer)
    this.wakeWriter?.()
    this.unsent.push(...this.control.clear(), ...this.data.clear())
    this.held = []
    this.heldFrom = 0
    this.onClose(this, reason)
  }

  /** The tags of frames queued and never handed to the stream (defined ones only), once closed; forgets them. */
  takeUnsent(): unknown[] {
    if (!this.closed) throw new Error('invariant: takeUnsent before the link closed')
    const unsent = this.unsent.filter((tag) => tag !== undefined)
    this.unsent = []
    return unsent
  }
}

/**
 * Deliveries under way (a 'message' handler, or a drained queue's callback, that may queue frames
 * on any link): while more than 0, `flush` only notes the link in `corked`, and the outermost
 * delivery writes them all when it ends. `corked` holds open links, at most one entry each.
 */
let deliveryDepth = 0
const corked = new Set<NeighbourLink>()

/** Runs `fn` as a delivery: the frames it queues on any link are written when it returns, a batch per link. */
export function corkedWhile(fn: () => void): void {
  deliveryDepth++
  try {
    fn()
  } finally {
    deliveryDepth--
    if (deliveryDepth === 0) uncork()
  }
}

function uncork(): void {
  for (const link of corked) {
    corked.delete(link)
    link.writeQueued()
  }
}

/** The first byte of every data frame: the tag of `Frame.data` (field 2, length-delimited); see isDataFrameBytes in the wire package. */
const DATA_FRAME_FIRST_BYTE = 0x12

/**
 * Bytes handed to the stream in one write at most (one frame larger than this goes alone): what
 * the stream may hold beyond our queue while it waits for a 'drain', and four Noise messages.
 */
export const BATCH_BYTES_MAX = 256 * 1024
/** Frames shorter than this are copied into their batch (with the prefixes) instead of handed on as pieces. */
const COPY_BELOW_BYTES = 16 * 1024

/**
 * A frame's first piece of at most this many bytes is copied into one buffer with the frame's
 * length prefix: a data frame sent with `transfer` (its header, then the payload itself) or
 * passed on in the pieces it arrived in. The cipher encrypts a write a piece at a time and the
 * socket is written once per piece (bench/REPORT.md, "Pieces per MiB"), so the prefix alone was
 * an update and a system call of 1-3 bytes per frame. Kept small: the copy is of a header, never
 * of a payload.
 */
export const PREFIX_JOINS_FIRST_PIECE_MAX_BYTES = 1024

/** A large frame behind its length prefix, the prefix and a short first piece in one buffer (PREFIX_JOINS_FIRST_PIECE_MAX_BYTES). */
function appendPrefixed(batch: Uint8ArrayList, frame: FrameBytes): void {
  const first = frame instanceof Uint8Array ? undefined : firstPiece(frame)
  if (first === undefined || first.byteLength > PREFIX_JOINS_FIRST_PIECE_MAX_BYTES || frame instanceof Uint8Array) return batch.append(varint.encode(frame.byteLength), frame)
  const prefixBytes = varint.encodingLength(frame.byteLength)
  const joined = new Uint8Array(prefixBytes + first.byteLength)
  varint.encode(frame.byteLength, joined, 0)
  joined.set(first, prefixBytes)
  batch.append(joined)
  let rest = false
  for (const piece of frame) {
    if (rest) batch.append(piece)
    rest = true
  }
}

/** `frames`, each after its length prefix, copied into one buffer of `totalBytes`. */
function withPrefixes(frames: readonly FrameBytes[], totalBytes: number): Uint8Array {
  const out = new Uint8Array(totalBytes)
  let at = 0
  for (const frame of frames) {
    varint.encode(frame.byteLength, out, at)
    at += varint.encodingLength(frame.byteLength)
    if (frame instanceof Uint8Array) {
      out.set(frame, at)
      at += frame.byteLength
    } else {
      for (const piece of frame) {
        out.set(piece, at)
        at += piece.byteLength
      }
    }
  }
  if (at !== totalBytes) throw new Error(`invariant: a batch of ${totalBytes} bytes got ${at}`)
  return out
}

/** One outbound queue of a link: encoded frames (without their length prefixes), and beside each its tag. */
class FrameQueue {
  private readonly frames: FrameBytes[] = []
  /**
   * Beside each queued frame, what its sender asked to hear about if it is never written (a data
   * frame, to bounce it `neighbour-down`); undefined for frames nobody needs back (updates, probes).
   */
  private readonly tags: unknown[] = []
  bytes = 0

  get length(): number {
    return this.frames.length
  }

  push(frame: FrameBytes, tag: unknown): void {
    this.frames.push(frame)
    this.tags.push(tag)
    this.bytes += frame.byteLength
  }

  peek(): FrameBytes {
    const frame = this.frames[0]
    if (frame === undefined) throw new Error('invariant: peek at an empty frame queue')
    return frame
  }

  /** Takes the first frame off the queue (peek has it); its tag. */
  shift(): unknown {
    const frame = this.frames.shift()
    if (frame === undefined) throw new Error('invariant: shift from an empty frame queue')
    this.bytes -= frame.byteLength
    return this.tags.shift()
  }

  /** Empties the queue; the tags of what it held. */
  clear(): unknown[] {
    const tags = this.tags.splice(0)
    this.frames.length = 0
    this.bytes = 0
    return tags
  }
}
