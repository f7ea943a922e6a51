import { describe, expect, it } from 'vitest'
import { decodeDataHeader, decodeFrame, encodeFrame, rewriteDataHopLimit, rewriteHopLimitAt, type DataFrame } from '../src/index.ts'

describe('rewriteDataHopLimit: a data frame forwarded with only its hop limit rewritten', () => {
  it('gives exactly what encodeFrame gives, in the same buffer, whenever the width allows', () => {
    const seed = Number(process.env.PHOENIX_SEED ?? Date.now() % 1_000_000)
    console.log(`hop limit rewrite property: PHOENIX_SEED=${seed}`)
    let state = seed
    const random = (n: number) => {
      state = (state * 1103515245 + 12345) % 2 ** 31
      return Math.floor(state / 65536) % n
    }
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(97 + random(26))).join('')
    let inPlace = 0
    for (let round = 0; round < 500; round++) {
      const data: DataFrame = {
        source: text(52),
        destination: text(52),
        name: text(random(20)),
        hopLimit: 1 + random(255),
        messageId: random(2 ** 31),
        ackRequested: random(2) === 0,
        payload: new Uint8Array(Array.from({ length: random(3) === 0 ? 0 : random(3000) }, () => random(256))),
      }
      const hopLimit = random(256)
      const frame = encodeFrame({ kind: 'data', data })
      const rewritten = rewriteDataHopLimit(frame, hopLimit)
      const sameWidth = (data.hopLimit < 128) === (hopLimit < 128)
      if (hopLimit >= 1 && sameWidth) {
        expect(rewritten, `hop ${data.hopLimit} → ${hopLimit}`).toBe(frame)
        inPlace++
      } else {
        expect(rewritten).toBeUndefined()
        continue
      }
      expect(rewritten).toEqual(encodeFrame({ kind: 'data', data: { ...data, hopLimit } }))
      expect(decodeFrame(rewritten!)).toEqual({ kind: 'data', data: { ...data, hopLimit } })
    }
    expect(inPlace).toBeGreaterThan(100)
  })

  it('leaves other frames alone and refuses what it cannot do in place', () => {
    const ack = encodeFrame({ kind: 'ack', ack: { source: 's', destination: 'd', hopLimit: 5, messageId: 1 } })
    const before = ack.slice()
    expect(rewriteDataHopLimit(ack, 4)).toBeUndefined()
    expect(ack).toEqual(before)
    const data = encodeFrame({ kind: 'data', data: { source: 's', destination: 'd', name: 'n', hopLimit: 16, messageId: 1, ackRequested: false, payload: new Uint8Array(10) } })
    expect(rewriteDataHopLimit(data, 0)).toBeUndefined()
    expect(rewriteDataHopLimit(data.subarray(0, data.length - 1), 15)).toBeUndefined()
    expect(rewriteDataHopLimit(data, 15)).toBe(data)
  })

  it('rewrites the hop limit that counts: the last of a repeated field, as protons and the header reader read it', () => {
    // Data { source 's', destination 'd', hop_limit 5, hop_limit 9, message_id 3, payload [1, 2] }: protons reads 9.
    const inner = [0x0a, 1, 0x73, 0x12, 1, 0x64, 0x20, 5, 0x20, 9, 0x28, 3, 0x3a, 2, 1, 2]
    const frame = Uint8Array.of(0x12, inner.length, ...inner)
    expect(decodeFrame(frame)).toMatchObject({ kind: 'data', data: { hopLimit: 9 } })
    // Rewriting the first left the frame at 9 at every hop.
    expect(rewriteDataHopLimit(frame, 8)).toBe(frame)
    expect(decodeFrame(frame)).toMatchObject({ kind: 'data', data: { hopLimit: 8 } })
    const read = decodeDataHeader(frame, frame.length)!
    expect(read.header.hopLimit).toBe(8)
    expect(read.hopLimitAt).toBe(11)
    expect(rewriteHopLimitAt(frame, read.hopLimitAt, 7)).toBe(true)
    expect(decodeFrame(frame)).toMatchObject({ kind: 'data', data: { hopLimit: 7 } })
    // Not as wide, not a hop limit's offset, not a hop limit: nothing written.
    const before = [...frame]
    expect(rewriteHopLimitAt(frame, read.hopLimitAt, 200)).toBe(false)
    expect(rewriteHopLimitAt(frame, read.hopLimitAt, 0)).toBe(false)
    expect(rewriteHopLimitAt(frame, 5, 3)).toBe(false)
    expect([...frame]).toEqual(before)
    // Field 1 written as a varint: protons reads it as a string all the same, at other offsets than a walk by wire types: left to a re-encoding.
    const odd = Uint8Array.of(0x12, 12, 0x08, 2, 0x20, 5, 0x12, 1, 0x64, 0x20, 6, 0x3a, 1, 0)
    expect(rewriteDataHopLimit(odd, 4)).toBeUndefined()
    // A first piece that ends before a field past the hop limit's number may hold another hop limit.
    const whole = encodeFrame({ kind: 'data', data: { source: 's', destination: 'd', name: '', hopLimit: 9, messageId: 3, ackRequested: false, payload: Uint8Array.of(1, 2) } })
    const afterHopLimit = whole.indexOf(0x20) + 2
    expect(rewriteDataHopLimit(whole.subarray(0, afterHopLimit), 8, whole.length)).toBeUndefined()
    expect(rewriteDataHopLimit(whole.subarray(0, afterHopLimit + 1), 8, whole.length)).toBeDefined()
    expect(decodeFrame(whole)).toMatchObject({ kind: 'data', data: { hopLimit: 8 } })
    // A frame that ends with its hop limit (no message id, no payload) is all there: rewritten.
    const short = encodeFrame({ kind: 'data', data: { source: 's', destination: 'd', name: '', hopLimit: 9, messageId: 0, ackRequested: false, payload: new Uint8Array(0) } })
    expect(rewriteDataHopLimit(short, 8)).toBe(short)
  })
})
