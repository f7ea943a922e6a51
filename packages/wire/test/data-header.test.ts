import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decodeDataHeaderFields } from '../src/codec.ts'
import { readCanonicalDataHeader } from '../src/data-header.ts'
import { WIRE_LIMITS, WireError, decodeDataHeader, decodeFrame, encodeDataFramePieces, encodeFrame, rewriteDataHopLimit, type DataFrame } from '../src/index.ts'

const seed = Number(process.env.PHOENIX_SEED ?? Date.now() % 1_000_000)
let state = seed
const random = (n: number) => {
  state = (state * 1103515245 + 12345) % 2 ** 31
  return Math.floor(state / 65536) % n
}
const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(97 + random(26))).join('')
const randomData = (): DataFrame => ({
  source: text(52),
  destination: text(52),
  name: text(random(20)),
  hopLimit: 1 + random(255),
  messageId: random(2 ** 31),
  ackRequested: random(2) === 0,
  payload: new Uint8Array(Array.from({ length: 1 + random(3000) }, () => random(256))),
  // From a source whose hop limit is not the default, now and then.
  ...(random(3) === 0 ? { initialHopLimit: 1 + random(255) } : {}),
})

/** Where the varint of the last hop limit field (tag 0x20) of a data frame's canonical header starts, walked field by field; -1 if none. */
function hopLimitAtOf(frame: Uint8Array): number {
  const varint = (at: number): [number, number] => {
    let value = 0
    let i = 0
    for (; frame[at + i]! >= 0x80; i++) value += (frame[at + i]! & 0x7f) * 2 ** (7 * i)
    return [value + frame[at + i]! * 2 ** (7 * i), at + i + 1]
  }
  let at = varint(1)[1]
  let last = -1
  while (at < frame.length && frame[at] !== 0x3a) {
    const tag = frame[at]!
    if (tag === 0x20) last = at + 1
    const [value, end] = varint(at + 1)
    at = (tag & 7) === 2 ? end + value : end
  }
  return last
}

describe('decodeDataHeader: a relay reads a data frame that arrived in pieces from its first piece', () => {
  it('gives the header decodeFrame gives and where the payload starts, or undefined when the first piece is too short', () => {
    console.log(`data header property: PHOENIX_SEED=${seed}`)
    let read = 0
    for (let round = 0; round < 500; round++) {
      const data = randomData()
      const frame = encodeFrame({ kind: 'data', data })
      const cut = random(frame.length + 1)
      const decoded = decodeDataHeader(frame.subarray(0, cut), frame.length)
      const { payload, ...header } = data
      const payloadStart = frame.length - payload.length
      if (cut < payloadStart) {
        expect(decoded, `cut at ${cut}, payload at ${payloadStart}`).toBeUndefined()
        continue
      }
      read++
      expect(decoded).toEqual({ header, payloadStart, hopLimitAt: hopLimitAtOf(frame) })
      expect(frame.subarray(payloadStart)).toEqual(payload)
      expect(decodeFrame(frame)).toEqual({ kind: 'data', data })
      // The hop limit of the same frame rewritten in its first piece: what encodeFrame makes of it.
      const hopLimit = data.hopLimit < 128 ? 1 + random(127) : 128 + random(128)
      expect(rewriteDataHopLimit(frame.subarray(0, cut), hopLimit, frame.length)).toBeDefined()
      expect(frame).toEqual(encodeFrame({ kind: 'data', data: { ...data, hopLimit } }))
    }
    expect(read).toBeGreaterThan(100)
  })

  it('reads an initial hop limit itself (a sender whose hop limit is not 16): before the payload, the payload still last', () => {
    const data: DataFrame = { source: 's', destination: 'd', name: 'n', hopLimit: 38, initialHopLimit: 40, messageId: 1, ackRequested: false, payload: new Uint8Array(10) }
    const frame = encodeFrame({ kind: 'data', data })
    const read = readCanonicalDataHeader(frame, 2, frame.length, WIRE_LIMITS)
    expect(read?.header).toEqual({ source: 's', destination: 'd', name: 'n', hopLimit: 38, initialHopLimit: 40, messageId: 1, ackRequested: false })
    expect(frame.subarray(read!.payloadStart)).toEqual(data.payload)
    // Over the wire's limit: left to the generic path, which names it.
    const over = encodeFrame({ kind: 'data', data: { ...data, initialHopLimit: 256 } })
    expect(readCanonicalDataHeader(over, 2, over.length, WIRE_LIMITS)).toBeUndefined()
    expect(() => decodeDataHeader(over, over.length)).toThrow(/data\.initialHopLimit is 256/)
  })

  it('leaves what it cannot read to decodeFrame, and refuses what decodeFrame refuses', () => {
    const data = randomData()
    const frame = encodeFrame({ kind: 'data', data })
    // Not a data frame; a length that is not the frame's; a field after the payload.
    expect(decodeDataHeader(encodeFrame({ kind: 'probe', probe: { nonce: 1, reply: false } }), 4)).toBeUndefined()
    expect(decodeDataHeader(frame, frame.length + 1)).toBeUndefined()
    const small = encodeFrame({ kind: 'data', data: { source: 's', destination: 'd', name: 'n', hopLimit: 9, messageId: 1, ackRequested: false, payload: new Uint8Array(10) } })
    expect(small[1]).toBeLessThan(0x7e) // Data's length is one varint byte
    const trailing = new Uint8Array([...small, 0x28, 0x02]) // message_id again, after the payload
    trailing[1]! += 2
    expect(decodeFrame(trailing)).toMatchObject({ kind: 'data', data: { messageId: 2 } })
    expect(decodeDataHeader(trailing, trailing.length)).toBeUndefined()
    // A name beyond the wire's limit is refused as decodeFrame refuses it.
    const long = encodeFrame({ kind: 'data', data: { ...data, name: 'n'.repeat(4096) } })
    expect(() => decodeFrame(long)).toThrow(WireError)
    expect(() => decodeDataHeader(long, long.length)).toThrow(WireError)
    expect(() => decodeDataHeader(frame, 2 ** 30)).toThrow(WireError)
  })
})

describe('encodeDataFramePieces: a data frame as its header and the payload itself', () => {
  it(`is byte for byte encodeFrame's frame, and its second piece is the caller's payload (seed ${seed})`, () => {
    const edge = [0, 1, 127, 128, 16_383, 16_384, 65_536, 2_097_152]
    const cases = [...edge.map((n) => ({ ...randomData(), payload: new Uint8Array(n).fill(n % 251) })), ...Array.from({ length: 200 }, randomData)]
    for (const data of cases) {
      const whole = encodeFrame({ kind: 'data', data })
      const [head, payload] = encodeDataFramePieces(data)
      expect(payload).toBe(data.payload)
      const joined = new Uint8Array(head.length + payload.length)
      joined.set(head)
      joined.set(payload, head.length)
      expect(joined).toEqual(whole)
      expect(decodeFrame(joined)).toEqual({ kind: 'data', data })
    }
  })

  it('refuses a frame over frameBytesMax, as encodeFrame does', () => {
    const data = { ...randomData(), payload: new Uint8Array(1_000) }
    expect(() => encodeDataFramePieces(data, 900)).toThrowError(WireError)
    expect(() => encodeDataFramePieces(data, 900)).toThrowError(/frameBytesMax \(900\)/)
  })
})

describe('readCanonicalDataHeader: the header of a frame as encodeFrame writes it, without protons', () => {
  const smallLimits = fc.record({
    nodeIdBytesMax: fc.integer({ min: 0, max: 60 }),
    nameBytesMax: fc.integer({ min: 0, max: 30 }),
    hopLimitMax: fc.integer({ min: 0, max: 300 }),
    payloadBytesMax: fc.integer({ min: 0, max: 40 }),
  }).map((small) => ({ ...WIRE_LIMITS, ...small }))
  const limitsArb = fc.oneof(fc.constant(WIRE_LIMITS), smallLimits)
  const textArb = fc.oneof(fc.string({ maxLength: 70 }), fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 20 }), fc.constantFrom('', 'a', '12D3KooWabc', 'x'.repeat(60)))
  const uint32 = fc.oneof(fc.constantFrom(0, 1, 127, 128, 255, 256, 2 ** 28 - 1, 2 ** 28, 2 ** 32 - 1), fc.nat({ max: 2 ** 32 - 1 }))
  const dataArb = fc.record({ source: textArb, destination: textArb, name: textArb, hopLimit: uint32, messageId: uint32, ackRequested: fc.boolean(), payload: fc.uint8Array({ minLength: 1, maxLength: 50 }) })
  /** A frame as encodeFrame writes it, or with its bytes changed: flipped, inserted, deleted, or extra fields before the payload. */
  const mutation = fc.oneof(
    fc.constant((b: number[]) => b),
    fc.tuple(fc.nat(), fc.nat({ max: 255 })).map(([i, v]) => (b: number[]) => b.map((x, j) => (j === 2 + (i % Math.max(1, b.length - 2)) ? v : x))),
    fc.tuple(fc.nat(), fc.array(fc.nat({ max: 255 }), { minLength: 1, maxLength: 6 })).map(([i, vs]) => (b: number[]) => [...b.slice(0, 2 + (i % b.length)), ...vs, ...b.slice(2 + (i % b.length))]),
    fc.nat().map((i) => (b: number[]) => b.filter((_, j) => j !== 2 + (i % Math.max(1, b.length - 2)))),
  )
  /** The frame's Data with the outer tag and length recomputed, so the frame's length is right whatever the mutation did. */
  const frameOf = (inner: number[]): Uint8Array => {
    const length: number[] = []
    for (let v = inner.length; ; v >>>= 7) {
      if (v < 0x80) { length.push(v); break }
      length.push((v & 0x7f) | 0x80)
    }
    return Uint8Array.from([0x12, ...length, ...inner])
  }

  it('gives exactly what protons and the Checker give whenever it gives a header, and reads every canonical ASCII frame', () => {
    let read = 0
    fc.assert(
      fc.property(dataArb, limitsArb, mutation, fc.oneof(fc.constant(-1), fc.nat()), (data, limits, mutate, cut) => {
        const encoded = encodeFrame({ kind: 'data', data })
        const dataStart = encoded[1]! < 0x80 ? 2 : encoded[2]! < 0x80 ? 3 : 4
        const frame = frameOf(mutate([...encoded.subarray(dataStart)]))
        const start = frame[1]! < 0x80 ? 2 : frame[2]! < 0x80 ? 3 : 4
        const head = cut < 0 ? frame : frame.subarray(0, cut % (frame.length + 1))
        const fast = readCanonicalDataHeader(head, start, frame.length, limits)
        let generic: unknown
        try {
          generic = decodeDataHeaderFields(head, start, frame.length, limits)
        } catch (error) {
          expect(error).toBeInstanceOf(WireError)
          expect(fast).toBeUndefined()
          return
        }
        if (fast !== undefined) {
          read++
          // The generic path does not note where the hop limit is.
          expect({ ...fast, hopLimitAt: -1 }).toEqual(generic)
          if (fast.hopLimitAt >= 0) expect(fast.hopLimitAt).toBe(hopLimitAtOf(head))
        }
      }),
      { seed, numRuns: 20_000 },
    )
    expect(read).toBeGreaterThan(200)
    // Every canonical frame of ASCII strings within the limits is read here, not left to protons.
    const data = { source: '12D3KooWsource', destination: '12D3KooWdestination', name: 'rank-7', hopLimit: 200, messageId: 2 ** 32 - 1, ackRequested: true, payload: new Uint8Array(300) }
    const frame = encodeFrame({ kind: 'data', data })
    const { payload, ...header } = data
    expect(readCanonicalDataHeader(frame, 3, frame.length, WIRE_LIMITS)).toEqual({ header, payloadStart: frame.length - payload.length, hopLimitAt: hopLimitAtOf(frame) })
    // A name's length in five bytes: protons keeps 32 bits of it (0 here), the generic path reads 2^32 and gives up.
    const odd = frameOf([0x0a, 1, 0x73, 0x12, 1, 0x64, 0x1a, 0x80, 0x80, 0x80, 0x80, 0x10, 0x3a, 1, 0])
    expect(decodeDataHeaderFields(odd, 2, odd.length, WIRE_LIMITS)).toBeUndefined()
    expect(readCanonicalDataHeader(odd, 2, odd.length, WIRE_LIMITS)).toBeUndefined()
  })

  it('hands out one string instance per id, so a relay makes no new string per frame', () => {
    const data = { source: '12D3KooWsame-source', destination: '12D3KooWsame-destination', name: 'n', hopLimit: 9, messageId: 1, ackRequested: false, payload: new Uint8Array(4) }
    const first = encodeFrame({ kind: 'data', data })
    const second = encodeFrame({ kind: 'data', data: { ...data, messageId: 2 } })
    const a = readCanonicalDataHeader(first, 2, first.length, WIRE_LIMITS)!.header
    const b = readCanonicalDataHeader(second, 2, second.length, WIRE_LIMITS)!.header
    expect(b).toEqual({ ...a, messageId: 2 })
    expect(b.source).toBe(a.source)
    // A string of the same length that differs in one byte is not mistaken for a recent one.
    const other = encodeFrame({ kind: 'data', data: { ...data, source: '12D3KooWsame-sourcf' } })
    expect(readCanonicalDataHeader(other, 2, other.length, WIRE_LIMITS)!.header.source).toBe('12D3KooWsame-sourcf')
  })
})
