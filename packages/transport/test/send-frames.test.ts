import { decodeFrame, type Frame } from '@phoenix-overlay/wire'
import { afterEach, describe, expect, it } from 'vitest'
import { COPY_BELOW_BYTES, NeighbourLink, type FrameBytes } from '../src/link.ts'
import { checkSendName } from '../src/validate.ts'
import { FakeNode, prefixed, settle } from './fake-node.ts'

describe('the frames a send hands to its first hop', () => {
  const originalSend = NeighbourLink.prototype.send
  afterEach(() => {
    NeighbourLink.prototype.send = originalSend
  })

  it('a transferred payload under COPY_BELOW_BYTES is one piece with its header; a larger one is the header and the payload itself', async () => {
    const fake = await FakeNode.create({ signRecords: false, timing: { leaveLingerMaxMs: 0 } })
    await fake.node.start()
    fake.node.afterStart()
    const neighbour = await fake.connect()
    const claim: Frame = { kind: 'update', update: { neighbourSlots: [], transSets: [], entries: [{ destination: neighbour.peer, seq: 2, nhops: 0, names: ['there'], addresses: [], trans: -1 }] } }
    neighbour.stream.deliver(prefixed(claim))
    await settle(20)
    const queued: FrameBytes[] = []
    NeighbourLink.prototype.send = function (this: NeighbourLink, frame: FrameBytes, tag?: unknown) {
      if (frame instanceof Uint8Array ? frame[0] === 0x12 : frame.get(0) === 0x12) queued.push(frame)
      return originalSend.call(this, frame, tag)
    }
    const small = new Uint8Array(COPY_BELOW_BYTES - 1).fill(3)
    const large = new Uint8Array(COPY_BELOW_BYTES).fill(4)
    const { messageId: first } = await fake.node.send('there', small, { transfer: true })
    const { messageId: second } = await fake.node.send('there', large, { transfer: true })
    expect(queued).toHaveLength(2)
    const header = { source: fake.node.id, destination: neighbour.peer, name: 'there', ackRequested: false }
    // One buffer, no list: the link copies a frame that small into its write anyway.
    expect(queued[0]).toBeInstanceOf(Uint8Array)
    expect(decodeFrame(queued[0] as Uint8Array)).toMatchObject({ kind: 'data', data: { ...header, messageId: first, payload: small } })
    // The payload itself, not copied: the list's second piece is the caller's array.
    expect(queued[1]).not.toBeInstanceOf(Uint8Array)
    const pieces = [...(queued[1] as Exclude<FrameBytes, Uint8Array>)]
    expect(pieces).toHaveLength(2)
    expect(pieces[1]).toBe(large)
    expect(decodeFrame(queued[1]!.subarray())).toMatchObject({ kind: 'data', data: { ...header, messageId: second, payload: large } })
    await fake.node.stop()
  })

  it('a send\'s name that passed passes again without its checks, and every other is still checked', () => {
    checkSendName('b')
    checkSendName('b')
    for (const bad of ['b\u200b', '@site/x', '', 'b\ud800', 7]) {
      expect(() => checkSendName(bad), String(bad)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT', field: 'name' }))
      // Refused after a name that passed, and a refused name is not remembered.
      expect(() => checkSendName(bad), String(bad)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }))
      checkSendName('b')
    }
  })
})
