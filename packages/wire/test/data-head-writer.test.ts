import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { readVarint32, varint32Width, varintEnd, writeVarint32 } from '../src/data-format.ts'
import { writeDataFrame } from '../src/data-head-writer.ts'
import { Data as DataMessage, Frame as FrameMessage } from '../src/frames.generated.ts'
import { WIRE_LIMITS, WireError, decodeDataHeader, decodeFrame, encodeDataFramePieces, encodeFrame, type DataFrame } from '../src/index.ts'

// The seed is fast-check's global one (vitest.setup.ts prints it; replay with PHOENIX_SEED=<n>).

/** The frame as protons encodes it: what every node's decoder was written against. */
const protonsFrame = (data: DataFrame): Uint8Array => FrameMessage.encode({ data: { ...data, payload: data.payload as Uint8Array<ArrayBuffer>, initialHopLimit: data.initialHopLimit ?? 0 } })

const uint32 = fc.oneof(fc.constantFrom(0, 1, 127, 128, 255, 16_383, 16_384, 2 ** 21 - 1, 2 ** 21, 2 ** 28 - 1, 2 ** 28, 2 ** 32 - 1), fc.integer({ min: 0, max: 2 ** 32 - 1 }))
const ascii = fc.string({ unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)), maxLength: 200 })
/** Any string: ASCII, other characters, unpaired surrogates (which protons writes its own way). */
const anyString = fc.oneof(ascii, fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 40 }))
const payload = fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.constantFrom(0, 1, 127, 128, 16_383, 16_384, 65_536).map((n) => new Uint8Array(n).fill(n % 251)))
const header = (text: fc.Arbitrary<string>) => fc.record({ source: text, destination: text, name: text, hopLimit: uint32, messageId: uint32, ackRequested: fc.boolean() })
/** With an initial hop limit now and then (a source whose hop limit is not the default; 0 as if absent). */
const frameOf = (text: fc.Arbitrary<string>): fc.Arbitrary<DataFrame> => fc.tuple(header(text), payload, fc.option(uint32, { freq: 3 })).map(([h, p, initial]) => ({ ...h, payload: p, ...(initial !== null ? { initialHopLimit: initial } : {}) }))
/**
 * The bytes the writer must give: protons', but for an initial hop limit (field 8), written before
 * the payload (field 7) so that the payload stays last; protons would write it after.
 */
function referenceFrame(data: DataFrame): Uint8Array {
  if (data.initialHopLimit === undefined || data.initialHopLimit === 0) return protonsFrame(data)
  const fields = DataMessage.encode({ ...data, payload: new Uint8Array(0), initialHopLimit: data.initialHopLimit })
  const varint = (n: number) => {
    const out = new Uint8Array(5)
    return [...out.subarray(0, writeVarint32(out, 0, n))]
  }
  const payloadHead = data.payload.length === 0 ? [] : [0x3a, ...varint(data.payload.length)]
  const inner = new Uint8Array([...fields, ...payloadHead, ...data.payload])
  return new Uint8Array([0x12, ...varint(inner.length), ...inner])
}

const isAscii = (s: string) => [...s].every((c) => c.charCodeAt(0) < 0x80)

describe('writeDataFrame: a data frame written by hand, the mirror of the header reader', () => {
  it('writes every header of ASCII strings and unsigned 32-bit numbers byte for byte as protons does', () => {
    fc.assert(
      fc.property(frameOf(ascii), (data) => {
        const expected = referenceFrame(data)
        const whole = writeDataFrame(data, Number.MAX_SAFE_INTEGER, true)
        expect(whole).toEqual(expected)
        const head = writeDataFrame(data, Number.MAX_SAFE_INTEGER, false)
        expect(head).toEqual(expected.subarray(0, expected.length - data.payload.length))
      }),
      { numRuns: 400 },
    )
  })

  it('leaves any other header to protons, and encodeFrame and encodeDataFramePieces give protons\' bytes for every header', () => {
    fc.assert(
      fc.property(frameOf(anyString), (data) => {
        const written = writeDataFrame(data, WIRE_LIMITS.frameBytesMax, true)
        if (isAscii(data.source) && isAscii(data.destination) && isAscii(data.name)) expect(written).toBeDefined()
        else expect(written).toBeUndefined()
        const expected = referenceFrame(data)
        expect(encodeFrame({ kind: 'data', data })).toEqual(expected)
        const [head, second] = encodeDataFramePieces(data)
        expect(second).toBe(data.payload)
        expect(new Uint8Array([...head, ...second])).toEqual(expected)
      }),
      { numRuns: 300 },
    )
  })

  it('leaves a hop limit or message id that is not an unsigned 32-bit integer to protons', () => {
    const data: DataFrame = { source: 's', destination: 'd', name: '', hopLimit: 3, messageId: 7, ackRequested: false, payload: new Uint8Array(2) }
    for (const odd of [-1, 2 ** 32, 1.5, Number.NaN]) {
      expect(writeDataFrame({ ...data, hopLimit: odd }, WIRE_LIMITS.frameBytesMax, true)).toBeUndefined()
      expect(writeDataFrame({ ...data, messageId: odd }, WIRE_LIMITS.frameBytesMax, true)).toBeUndefined()
      expect(encodeFrame({ kind: 'data', data: { ...data, messageId: odd } })).toEqual(protonsFrame({ ...data, messageId: odd }))
    }
  })

  it('refuses a frame over the limit as the protons path does, whole or in pieces', () => {
    const data: DataFrame = { source: 's', destination: 'd', name: 'n', hopLimit: 3, messageId: 7, ackRequested: true, payload: new Uint8Array(1000) }
    const bytes = protonsFrame(data).length
    expect(encodeFrame({ kind: 'data', data }, bytes).length).toBe(bytes)
    const error = (f: () => unknown) => {
      try {
        f()
      } catch (e) {
        return e
      }
      return undefined
    }
    for (const refused of [error(() => encodeFrame({ kind: 'data', data }, bytes - 1)), error(() => encodeDataFramePieces(data, bytes - 1))]) {
      expect(refused).toBeInstanceOf(WireError)
      expect(refused).toMatchObject({ code: 'FRAME_TOO_LARGE', message: `data frame is ${bytes} bytes, more than frameBytesMax (${bytes - 1})` })
    }
  })
})

describe('readVarint32: the one varint reader of the wire package', () => {
  it('reads back what writeVarint32 writes, in the width varint32Width says', () => {
    fc.assert(
      fc.property(uint32, fc.nat(3), (value, offset) => {
        const bytes = new Uint8Array(offset + 6)
        const end = writeVarint32(bytes, offset, value)
        expect(end - offset).toBe(varint32Width(value))
        expect(readVarint32(bytes, offset, bytes.length)).toBe(value)
        expect(varintEnd).toBe(end)
        // Cut short, it is not read.
        expect(readVarint32(bytes, offset, end - 1)).toBe(-1)
      }),
      { numRuns: 300 },
    )
  })

  it('reads a fifth byte of 0x00-0x0f exactly and refuses any other (2^32 and more, or a sixth byte)', () => {
    expect(readVarint32(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0x0f), 0, 5)).toBe(2 ** 32 - 1)
    expect(readVarint32(Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x00), 0, 5)).toBe(0)
    expect(varintEnd).toBe(5)
    expect(readVarint32(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0x10), 0, 5)).toBe(-1)
    expect(readVarint32(Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x00), 0, 6)).toBe(-1)
  })

  it('leaves a hop limit protons truncates (a fifth byte past 32 bits) to decodeFrame, which reads it as protons does', () => {
    // Data { source 's', destination 'd', hop_limit = 2^32 + 5 as 5 bytes, payload [1, 2] }: protons keeps the low 32 bits.
    const inner = [0x0a, 1, 0x73, 0x12, 1, 0x64, 0x20, 0x85, 0x80, 0x80, 0x80, 0x10, 0x3a, 2, 1, 2]
    const frame = Uint8Array.of(0x12, inner.length, ...inner)
    const decoded = decodeFrame(frame)
    expect(decoded).toMatchObject({ kind: 'data', data: { hopLimit: 5 } })
    // Not read from the first piece: the transport joins the frame and decodes it whole (received-data.ts).
    expect(decodeDataHeader(frame, frame.length)).toBeUndefined()
    expect(decodeDataHeader(frame.subarray(0, 8), frame.length)).toBeUndefined()
  })
})
