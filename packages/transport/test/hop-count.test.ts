import { afterAll, describe, expect, it } from 'vitest'
import type { ReceivedMessage } from '../src/index.ts'
import { addressOf, TestNodes, text, waitUntil } from './nodes.ts'

describe("a message's hop count when nodes have different hop limits", () => {
  const nodes = new TestNodes()
  afterAll(() => nodes.stopAll())

  it('counts the hops travelled from the sender’s hop limit, not the receiver’s', async () => {
    // a (hop limit 8) — relay (the default, 16) — b (hop limit 40): a destination counted from its
    // own limit, so b read a's 2 hops as 34 and a read b's as 0.
    const relay = await nodes.start({ names: ['relay'], discovery: false })
    const a = await nodes.start({ names: ['a'], hubs: [addressOf(relay)], discovery: false, core: { limits: { hopLimit: 8 } } })
    const b = await nodes.start({ names: ['b'], hubs: [addressOf(relay)], discovery: false, core: { limits: { hopLimit: 40 } } })
    await waitUntil('2-hop routes both ways', () => a.phoenix.resolve('b')?.nhops === 2 && b.phoenix.resolve('a')?.nhops === 2, 20_000)
    const got = new Map<string, ReceivedMessage[]>()
    for (const [name, node] of [['a', a], ['b', b], ['relay', relay]] as const) {
      got.set(name, [])
      node.phoenix.addEventListener('message', (event) => got.get(name)!.push(event.detail))
    }
    await a.phoenix.send('b', text('from a'), { ack: true })
    await b.phoenix.send('a', text('from b'), { ack: true })
    await relay.phoenix.send('a', text('from the relay'), { ack: true })
    await a.phoenix.send('relay', text('from a'), { ack: true })
    expect(got.get('b')!.map((m) => m.hops)).toEqual([2])
    expect(got.get('a')!.map((m) => m.hops)).toEqual([2, 1])
    expect(got.get('relay')!.map((m) => m.hops)).toEqual([1])
  })
})
