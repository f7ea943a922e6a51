import { describe, expect, it } from 'vitest'
import { WireError, decodeDataHeader, decodeFrame, encodeDataFramePieces, encodeFrame, rewriteDataHopLimit, type DataFrame } from '../src/index.ts'

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
})

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
      expect(decoded).toEqual({ header, payloadStart })
      expect(frame.subarray(payloadStart)).toEqual(payload)
      expect(decodeFrame(frame)).toEqual({ kind: 'data', data })
      // The hop limit of the same frame rewritten in its first piece: what encodeFrame makes of it.
      const hopLimit = data.hopLimit < 128 ? 1 + random(127) : 128 + random(128)
      expect(rewriteDataHopLimit(frame.subarray(0, cut), hopLimit, frame.length)).toBeDefined()
      expect(frame).toEqual(encodeFrame({ kind: 'data', data: { ...data, hopLimit } }))
    }
    expect(read).toBeGreaterThan(100)
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
