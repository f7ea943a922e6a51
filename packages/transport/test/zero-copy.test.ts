import { afterEach, describe, expect, it } from 'vitest'
import type { ReceivedMessage } from '../src/index.ts'
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

  it('a frame in pieces whose hop limit changes width is re-encoded whole, its payload joined from the pieces', async () => {
    const receiver = await nodes.start({ names: ['dst'], discovery: false })
    const relay = await nodes.start({ hubs: [addressOf(receiver)], discovery: false })
    // The sender's frames leave with hop limit 128 (two varint bytes); the relay's 127 takes one.
    const sender = await nodes.start({ hubs: [addressOf(relay)], discovery: false, core: { limits: { hopLimit: 129 } } })
    await waitUntil('a 2-hop route', () => sender.phoenix.resolve('dst')?.nhops === 2, 20_000)
    const payload = new Uint8Array(100_000).map((_, i) => (i * 11) % 253)
    const inbox = receiver.phoenix.messages()
    await sender.phoenix.send('dst', payload, { ack: true })
    expect(new Uint8Array((await inbox.next()).value.payload)).toEqual(payload)
    expect(relay.phoenix.metricsText()).not.toMatch(/^phoenix_forwarded_in_(pieces|place)_total [1-9]/m)
  })

  it('a payload handed over (transfer) arrives intact, large or small, through a relay', async () => {
    const receiver = await nodes.start({ names: ['dst'], discovery: false })
    const relay = await nodes.start({ hubs: [addressOf(receiver)], discovery: false })
    const sender = await nodes.start({ hubs: [addressOf(relay)], discovery: false })
    await waitUntil('a 2-hop route', () => sender.phoenix.resolve('dst')?.nhops === 2, 20_000)
    const inbox = receiver.phoenix.messages()
    const sizes = [0, 1, 1_000, 16_384, 65_536, 100_000]
    const payloads = sizes.map((n, k) => new Uint8Array(n).map((_, i) => (i * 13 + k) % 251))
    // Unacknowledged and in a burst: several frames of the sender's own share a batch.
    for (const payload of payloads.slice(0, -1)) await sender.phoenix.send('dst', payload, { transfer: true })
    await sender.phoenix.send('dst', payloads.at(-1)!, { transfer: true, ack: true })
    for (const payload of payloads) expect(new Uint8Array((await inbox.next()).value.payload)).toEqual(payload)
    await expect(sender.phoenix.send('dst', new Uint8Array(1), { transfer: 'yes' as never })).rejects.toMatchObject({ code: 'INVALID_INPUT', field: 'options.transfer' })
  })

  it('a message is handed over as the pieces it arrived in (payloadList), joined only when payload is read', async () => {
    const receiver = await nodes.start({ names: ['dst'], discovery: false })
    const sender = await nodes.start({ hubs: [addressOf(receiver)], discovery: false })
    await waitUntil('a route', () => sender.phoenix.resolve('dst')?.nhops === 1, 20_000)
    const inbox = receiver.phoenix.messages()
    const listened: ReceivedMessage[] = []
    receiver.phoenix.addEventListener('message', (event) => listened.push({ ...event.detail }))
    const sizes = [0, 100, 100_000, 300_000]
    const payloads = sizes.map((n, k) => new Uint8Array(n).map((_, i) => (i * 17 + k) % 251))
    for (const payload of payloads) await sender.phoenix.send('dst', payload, { ack: true })
    for (const [k, payload] of payloads.entries()) {
      const message = (await inbox.next()).value as ReceivedMessage
      const pieces = [...message.payloadList]
      expect(message.payloadList.byteLength).toBe(payload.byteLength)
      // More than one Noise message (65,519 bytes) arrives in several pieces, handed over as they came.
      if (payload.byteLength > 65_519) expect(pieces.length).toBeGreaterThan(1)
      expect(new Uint8Array(message.payloadList.subarray())).toEqual(payload)
      expect(new Uint8Array(message.payload)).toEqual(payload)
      expect(message.payload).toBe(message.payload) // joined once
      // A spread copy (the listener's) keeps the payload: the getters are the message's own.
      expect(new Uint8Array(listened[k]!.payload)).toEqual(payload)
    }
  })
})
