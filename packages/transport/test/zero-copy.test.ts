import { afterEach, describe, expect, it } from 'vitest'
import { addressOf, TestNodes, waitUntil } from './nodes.ts'

describe('zero-copy forwarding', () => {
  const nodes = new TestNodes()
  afterEach(() => nodes.stopAll())

  it('a relay passes a data frame on with only its hop limit rewritten; the payload arrives intact', async () => {
    const receiver = await nodes.start({ names: ['dst'], discovery: false })
    const relay = await nodes.start({ hubs: [addressOf(receiver)], discovery: false })
    const sender = await nodes.start({ hubs: [addressOf(relay)], discovery: false })
    await waitUntil('a 2-hop route', () => sender.phoenix.resolve('dst')?.nhops === 2, 20_000)
    const payload = new Uint8Array(100_000).map((_, i) => (i * 7) % 251)
    const inbox = receiver.phoenix.messages()
    await sender.phoenix.send('dst', payload, { ack: true })
    const got = await inbox.next()
    expect(got.value.payload).toEqual(payload)
    expect(got.value.hops).toBe(2)
    // 100 kB is more than one Noise message holds (65,519 bytes): the frame came in pieces and
    // went on in them, never joined into one buffer.
    expect(relay.phoenix.metricsText()).toMatch(/^phoenix_forwarded_in_pieces_total 1$/m)
  })

  it('a small frame (in one piece) is rewritten in place too', async () => {
    const receiver = await nodes.start({ names: ['dst'], discovery: false })
    const relay = await nodes.start({ hubs: [addressOf(receiver)], discovery: false })
    const sender = await nodes.start({ hubs: [addressOf(relay)], discovery: false })
    await waitUntil('a 2-hop route', () => sender.phoenix.resolve('dst')?.nhops === 2, 20_000)
    const payload = new Uint8Array(1_000).map((_, i) => (i * 7) % 251)
    const inbox = receiver.phoenix.messages()
    await sender.phoenix.send('dst', payload, { ack: true })
    expect(new Uint8Array((await inbox.next()).value.payload)).toEqual(payload)
    expect(relay.phoenix.metricsText()).toMatch(/^phoenix_forwarded_in_place_total 1$/m)
  })
})
