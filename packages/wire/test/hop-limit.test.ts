import { describe, expect, it } from 'vitest'
import { decodeFrame, encodeFrame, rewriteDataHopLimit, type DataFrame } from '../src/index.ts'

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
})
