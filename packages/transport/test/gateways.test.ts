import { afterEach, describe, expect, it } from 'vitest'
import { addressOf, TestNodes, text, waitUntil, type TestNode } from './nodes.ts'

/** `node`'s route to `destination`. */
const routeOf = (node: TestNode, destination: string) => node.phoenix.routes().find((r) => r.destination === destination)

/** How many data frames `node` passed on (messages_forwarded). */
const forwarded = (node: TestNode): number => Number(/^phoenix_messages_forwarded_total (\d+)$/m.exec(node.phoenix.metricsText())?.[1] ?? 0)

/**
 * Two gateways between a sender and a receiver (packages/core alternates.ts, forwarding.ts's
 * flow key): the sender's route to the receiver has both as next hops; flows (source, name)
 * spread over them, each staying on one; when one stops, the other carries everything at once.
 */
describe('several gateways: per-flow next hops', () => {
  const nodes = new TestNodes()
  afterEach(() => nodes.stopAll())

  it('spreads flows over both gateways, keeps each flow on one, and fails over to the survivor', async () => {
    const names = Array.from({ length: 16 }, (_, i) => `flow-${i}`)
    const receiver = await nodes.start({ names, discovery: false })
    const g0 = await nodes.start({ hubs: [addressOf(receiver)], discovery: false })
    const g1 = await nodes.start({ hubs: [addressOf(receiver)], discovery: false })
    const sender = await nodes.start({ hubs: [addressOf(g0), addressOf(g1)], discovery: false })
    await waitUntil('two next hops toward the receiver', () => routeOf(sender, receiver.phoenix.id)?.alternates.length === 2, 20_000)
    const inbox = receiver.phoenix.messages()
    const perFlow = 4
    const via = new Map<string, string>()
    for (const name of names) {
      const before = [forwarded(g0), forwarded(g1)]
      for (let i = 0; i < perFlow; i++) await sender.phoenix.send(name, text(`${name}#${i}`), { ack: true })
      const moved = [forwarded(g0) - before[0]!, forwarded(g1) - before[1]!]
      // One flow, one path: all of its messages through the same gateway.
      expect(moved.sort()).toEqual([0, perFlow])
      via.set(name, forwarded(g0) - before[0]! === perFlow ? 'g0' : 'g1')
    }
    const onG0 = [...via.values()].filter((g) => g === 'g0').length
    // Rendezvous hashing over 16 flows: both gateways carry some (all on one: probability 2^-15).
    expect(onG0).toBeGreaterThan(0)
    expect(onG0).toBeLessThan(names.length)
    for (let i = 0; i < names.length * perFlow; i++) await inbox.next()

    await g0.libp2p.stop()
    await waitUntil('the sender sees g0 gone', () => !sender.phoenix.peers().includes(g0.phoenix.id), 10_000)
    // No update needed: the route is still there, through g1, at the same hop count.
    expect(routeOf(sender, receiver.phoenix.id)).toMatchObject({ reachable: true, nhops: 2, fwd: g1.phoenix.id })
    const before = forwarded(g1)
    for (const name of names) await sender.phoenix.send(name, text(`${name}#after`), { ack: true })
    expect(forwarded(g1) - before).toBe(names.length)
  })
})
