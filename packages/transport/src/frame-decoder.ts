import { Uint8ArrayList } from 'uint8arraylist'

/** A length prefix is at most this many bytes (what uint8-varint, and so libp2p's decoder, reads). */
const PREFIX_BYTES_MAX = 8
/** How the error for a prefix past PREFIX_BYTES_MAX begins. */
export const PREFIX_TOO_LONG = 'Invalid message length: a length prefix that does not end'

/** Bytes a varint of `value` takes (uint8-varint's encodingLength, for the values a frame length can have). */
const varintWidth = (value: number): number => {
  let width = 1
  for (let rest = value; rest >= 0x80 && width < PREFIX_BYTES_MAX; rest = Math.floor(rest / 128)) width++
  return width
}

/**
 * Splits a byte stream into varint-length-prefixed frames, as `LengthPrefixedDecoder` from
 * @libp2p/utils does (the same frames from the same bytes, the same errors for the same faults),
 * without its cost: that decoder learns that the buffer holds no further complete prefix from a
 * `RangeError` thrown by the varint reader, so every delivery, in which the last frame was
 * complete, ends with an exception and its stack trace: 5.3 µs of CPU per delivery of one small
 * frame against 0.2 µs here (bench/frame-decoder.ts; a relay spends some 15 µs per small frame in
 * all). The same pattern in mplex: ChainSafe/lodestar
 * issue 3467. js-libp2p's main still throws (packages/utils/src/length-prefixed-decoder.ts at
 * commit 59ccecc4); no upstream issue or fix was found (searched js-libp2p issues and PRs).
 */
export class FrameDecoder {
  private readonly buffer = new Uint8ArrayList()

  constructor(
    /** A longer frame is a protocol error (`Invalid message length`). */
    private readonly frameBytesMax: number,
    /** Bytes buffered while a frame is incomplete; more is an error (the neighbour overran its window). */
    private readonly bufferBytesMax: number,
  ) {}

  /**
   * The frames completed by `data`, each a view of the delivery it arrived in if it came in one,
   * else a list of the pieces it arrived in (no copy either way).
   */
  *decode(data: Uint8Array | Uint8ArrayList): Generator<Uint8Array | Uint8ArrayList> {
    const whole = this.buffer.byteLength === 0 ? onlyPiece(data) : undefined
    if (whole !== undefined) {
      yield* this.decodeWhole(whole)
      return
    }
    this.buffer.append(data)
    if (this.buffer.byteLength > this.bufferBytesMax) throw new Error(`Buffer length limit exceeded - ${this.buffer.byteLength}/${this.bufferBytesMax}`)
    for (;;) {
      const length = this.readPrefix()
      if (length === undefined) return
      if (length > this.frameBytesMax) throw new Error('Invalid message length')
      // As libp2p's decoder: the prefix is taken to be as wide as the shortest encoding of its value.
      const start = varintWidth(length)
      if (this.buffer.byteLength < start + length) return
      const frame = this.buffer.sublist(start, start + length)
      this.buffer.consume(start + length)
      if (frame.byteLength > 0) yield frame
    }
  }

  /**
   * The frame `data` is, when it is exactly one whole frame and nothing is buffered (a quiet
   * link's every delivery: a lone message, a probe, an ack), read without `decode`'s generators;
   * undefined otherwise (then `decode` it: this reads nothing and buffers nothing). The frame
   * `decode` would give, a view of `data`.
   */
  onlyFrame(data: Uint8Array | Uint8ArrayList): Uint8Array | undefined {
    if (this.buffer.byteLength !== 0) return undefined
    const bytes = data instanceof Uint8Array ? data : onlyPiece(data)
    if (bytes === undefined || bytes.byteLength > this.bufferBytesMax) return undefined
    const length = readPrefixAt(bytes, 0)
    if (length === undefined || length === 0 || length > this.frameBytesMax) return undefined
    const start = varintWidth(length)
    return start + length === bytes.byteLength ? bytes.subarray(start) : undefined
  }

  /**
   * `decode` of a delivery in one piece with nothing buffered (a quiet link's every delivery):
   * the same frames and errors, read off the bytes without a list; what is left of an incomplete
   * frame is buffered for the next delivery.
   */
  private *decodeWhole(bytes: Uint8Array): Generator<Uint8Array> {
    if (bytes.byteLength > this.bufferBytesMax) throw new Error(`Buffer length limit exceeded - ${bytes.byteLength}/${this.bufferBytesMax}`)
    let at = 0
    while (at < bytes.byteLength) {
      const length = readPrefixAt(bytes, at)
      if (length === undefined) break
      if (length > this.frameBytesMax) throw new Error('Invalid message length')
      const start = at + varintWidth(length)
      if (bytes.byteLength < start + length) break
      at = start + length
      if (length > 0) yield bytes.subarray(start, at)
    }
    if (at < bytes.byteLength) this.buffer.append(bytes.subarray(at))
  }

  /**
   * The length prefix at the buffer's start; undefined while it is incomplete. One that runs past
   * PREFIX_BYTES_MAX is an error: libp2p's decoder waits on it for good, so a neighbour that sent
   * eight continuation bytes stalled its stream and was never dropped, however long it stayed
   * (found by an adversarial audit).
   */
  private readPrefix(): number | undefined {
    const available = Math.min(this.buffer.byteLength, PREFIX_BYTES_MAX)
    let value = 0
    for (let i = 0; i < available; i++) {
      const byte = this.buffer.get(i)
      value += (byte & 0x7f) * 2 ** (7 * i)
      if (byte < 0x80) return value
    }
    if (available === PREFIX_BYTES_MAX) throw new Error(`${PREFIX_TOO_LONG} (more than ${PREFIX_BYTES_MAX} bytes)`)
    return undefined
  }
}

/** The delivery as one Uint8Array if it is one piece, without copying; else undefined. */
function onlyPiece(data: Uint8Array | Uint8ArrayList): Uint8Array | undefined {
  if (data instanceof Uint8Array) return data
  const pieces = data[Symbol.iterator]()
  const first = pieces.next()
  return first.done !== true && pieces.next().done === true ? first.value : undefined
}

/** `readPrefix` of bytes in one piece, at `at`: the same value, the same error past PREFIX_BYTES_MAX. */
function readPrefixAt(bytes: Uint8Array, at: number): number | undefined {
  const available = Math.min(bytes.byteLength - at, PREFIX_BYTES_MAX)
  let value = 0
  for (let i = 0; i < available; i++) {
    const byte = bytes[at + i]!
    value += (byte & 0x7f) * 2 ** (7 * i)
    if (byte < 0x80) return value
  }
  if (available === PREFIX_BYTES_MAX) throw new Error(`${PREFIX_TOO_LONG} (more than ${PREFIX_BYTES_MAX} bytes)`)
  return undefined
}
