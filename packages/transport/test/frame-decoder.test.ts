import { LengthPrefixedDecoder } from '@libp2p/utils'
import fc from 'fast-check'
import * as varint from 'uint8-varint'
import { describe, expect, it } from 'vitest'
import { FrameDecoder, PREFIX_TOO_LONG } from '../src/frame-decoder.ts'

const seed = Number(process.env.PHOENIX_SEED ?? Date.now() % 2 ** 31)
const FRAME_BYTES_MAX = 300
const BUFFER_BYTES_MAX = 2_000

/** What a decoder made of a byte stream delivered in pieces: the frames, and the error that ended it, if any. */
function run(decode: (piece: Uint8Array) => Iterable<{ subarray(): Uint8Array }>, pieces: readonly Uint8Array[]): { frames: number[][]; error?: string } {
  const frames: number[][] = []
  try {
    for (const piece of pieces) for (const frame of decode(piece)) frames.push([...frame.subarray()])
  } catch (error) {
    return { frames, error: (error as Error).message }
  }
  return { frames }
}

describe('FrameDecoder: frames out of a byte stream, without an exception per delivery', () => {
  it('gives the frames and the errors libp2p’s LengthPrefixedDecoder gives, however the bytes are cut', () => {
    console.log(`frame decoder equivalence: PHOENIX_SEED=${seed}`)
    // Valid frames, bad lengths, long and non-minimal prefixes, and noise, cut anywhere.
    // Some longer than 127 bytes: a two-byte prefix, read off a delivery in one piece or the buffer.
    const frame = fc.oneof({ weight: 4, arbitrary: fc.uint8Array({ minLength: 0, maxLength: 40 }) }, { weight: 1, arbitrary: fc.uint8Array({ minLength: 128, maxLength: 200 }) }).map((bytes) => [...varint.encode(bytes.length), ...bytes])
    const oddPrefix = fc.constantFrom([0x80, 0x00], [0x85, 0x00], [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], [0xff, 0x7f], [0xac, 0x02])
    const stream = fc.array(fc.oneof(frame, frame, oddPrefix, fc.uint8Array({ maxLength: 12 }).map((b) => [...b])), { maxLength: 30 }).map((parts) => Uint8Array.from(parts.flat()))
    fc.assert(
      fc.property(stream, fc.array(fc.nat(), { maxLength: 8 }), (bytes, cuts) => {
        const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
        const pieces = [...at, bytes.length].map((end, i, all) => bytes.subarray(i === 0 ? 0 : all[i - 1]!, end))
        const ours = new FrameDecoder(FRAME_BYTES_MAX, BUFFER_BYTES_MAX)
        const theirs = new LengthPrefixedDecoder({ maxDataLength: FRAME_BYTES_MAX, maxBufferSize: BUFFER_BYTES_MAX })
        // As the link reads: a delivery that is one whole frame through onlyFrame, any other through decode.
        const linkWise = new FrameDecoder(FRAME_BYTES_MAX, BUFFER_BYTES_MAX)
        const mine = run((p) => ours.decode(p), pieces)
        const link = run((p) => {
          const only = linkWise.onlyFrame(p)
          return only !== undefined ? [only] : linkWise.decode(p)
        }, pieces)
        const libp2ps = run((p) => theirs.decode(p), pieces)
        expect(link).toEqual(mine)
        // Where libp2p's decoder waits for good on a prefix past 8 bytes, ours refuses it.
        if (mine.error?.startsWith(PREFIX_TOO_LONG) === true) expect({ frames: mine.frames }).toEqual(libp2ps)
        else expect(mine).toEqual(libp2ps)
      }),
      { seed, numRuns: 3_000 },
    )
  })

  it('keeps a frame in the pieces it arrived in, and refuses a length beyond the limit or an overfull buffer', () => {
    const decoder = new FrameDecoder(FRAME_BYTES_MAX, BUFFER_BYTES_MAX)
    const body = Uint8Array.from({ length: 200 }, (_, i) => i)
    const bytes = Uint8Array.from([...varint.encode(body.length), ...body])
    expect([...decoder.decode(bytes.subarray(0, 100))]).toEqual([])
    const [frame] = [...decoder.decode(bytes.subarray(100))]
    expect([...frame!].length).toBe(2)
    expect(frame!.subarray()).toEqual(body)
    expect(() => [...new FrameDecoder(FRAME_BYTES_MAX, BUFFER_BYTES_MAX).decode(Uint8Array.from(varint.encode(FRAME_BYTES_MAX + 1)))]).toThrow('Invalid message length')
    expect(() => [...new FrameDecoder(FRAME_BYTES_MAX, 10).decode(new Uint8Array(11))]).toThrow('Buffer length limit exceeded - 11/10')
    // Eight continuation bytes: libp2p's decoder waits for good (a stalled stream); ours refuses.
    const stalling = new FrameDecoder(FRAME_BYTES_MAX, BUFFER_BYTES_MAX)
    expect([...stalling.decode(new Uint8Array(7).fill(0x80))]).toEqual([])
    expect(() => [...stalling.decode(Uint8Array.of(0x80))]).toThrow(PREFIX_TOO_LONG)
  })
})
