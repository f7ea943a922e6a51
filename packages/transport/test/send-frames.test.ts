import { decodeFrame, type Frame } from '@phoenix-overlay/wire'
import { afterEach, describe, expect, it } from 'vitest'
import { TRANSFER_COPIED_BELOW_BYTES } from '../src/forwarding.ts'
import { NeighbourLink, type FrameBytes } from '../src/link.ts'
import { checkSendName } from '../src/validate.ts'
import { FakeNode, prefixed, settle } from './fake-node.ts'

describe('the frames a send hands to its first hop', () => {
  const originalSend = NeighbourLink.prototype.send
  afterEach(() => {
    NeighbourLink.prototype.send = originalSend
  })

  it('a transferred payload under TRANSFER_COPIED_BELOW_BYTES is one piece with its header; a larger one is the header and the payload itself', async () => {
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
    const small = new Uint8Array(TRANSFER_COPIED_BELOW_BYTES - 1).fill(3)
    const large = new Uint8Array(TRANSFER_COPIED_BELOW_BYTES).fill(4)
    const { messageId: first } = await fake.node.send('there', small, { transfer: true })
    const { messageId: second } = await fake.node.send('there', large, { transfer: true })
    expect(queued).toHaveLength(2)
    const header = { source: fake.node.id, destination: neighbour.peer, name: 'there', ackRequested: false }
    // One buffer, no list: copying so small a payload costs less.
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

describe('a relay\'s hop limit rewrite', () => {
  it('passes a frame on with the hop limit that counts lowered: the last of a repeated field, in the bytes it read', async () => {
    const relay = await FakeNode.create({ signRecords: false, timing: { leaveLingerMaxMs: 0 } })
    await relay.node.start()
    relay.node.afterStart()
    const from = await relay.connect({ encrypted: true })
    const to = await relay.connect({ encrypted: true })
    await settle(20)
    const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0))
    // Data { source, destination, hop_limit 5, hop_limit 9, message_id 1, payload 3 bytes }: every decoder reads 9.
    const inner = [0x0a, from.peer.length, ...ascii(from.peer), 0x12, to.peer.length, ...ascii(to.peer), 0x20, 5, 0x20, 9, 0x28, 1, 0x3a, 3, 7, 7, 7]
    const frame = Uint8Array.of(0x12, inner.length, ...inner)
    expect(decodeFrame(frame)).toMatchObject({ kind: 'data', data: { hopLimit: 9 } })
    to.stream.written.length = 0
    from.stream.deliver(Uint8Array.of(frame.length, ...frame))
    const passed = to.stream.written.map((bytes) => decodeFrame(bytes.subarray(1))).filter((f) => f.kind === 'data')
    expect(passed).toMatchObject([{ kind: 'data', data: { hopLimit: 8, messageId: 1 } }])
    expect(relay.node.metricsText()).toMatch(/^phoenix_forwarded_in_place_total 1$/m)
    await relay.node.stop()
  })
})
