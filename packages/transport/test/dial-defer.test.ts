import { afterEach, describe, expect, it } from 'vitest'
import { addressOf, TestNodes, waitUntil, type TestNode } from './nodes.ts'

const counter = (node: TestNode, name: string): number => Number(new RegExp(`phoenix_${name}(?:_total)? (\\d+)`).exec(node.phoenix.metricsText())?.[1] ?? 0)
/** Longer than a loopback handshake on a loaded machine (400 ms was not: the larger end then dialled too, and the counts were off). */
const DEFER_MS = 2_000
const timing = { dialDeferMs: DEFER_MS }
/** The address with the peer id: only a dial that names its peer can be deferred. */
const withId = (node: TestNode): string => (addressOf(node).includes('/p2p/') ? addressOf(node) : `${addressOf(node)}/p2p/${node.libp2p.peerId.toString()}`)

describe('dialDeferMs: one connection when both ends learn each other at once', () => {
  const nodes = new TestNodes()
  afterEach(() => nodes.stopAll())

  it('two nodes that learn each other from a hub: the larger peer id waits, finds the other connected, and does not dial', async () => {
    const hub = await nodes.start({ timing })
    const a = await nodes.start({ timing })
    const b = await nodes.start({ timing })
    const [smaller, larger] = a.phoenix.id < b.phoenix.id ? [a, b] : [b, a]
    a.phoenix.addHub(withId(hub))
    b.phoenix.addHub(withId(hub))
    await waitUntil('a and b neighbours', () => a.phoenix.peers().includes(b.phoenix.id) && b.phoenix.peers().includes(a.phoenix.id), 20_000)
    await new Promise((r) => setTimeout(r, DEFER_MS * 2))
    // The smaller dialled the hub and the larger; the larger dialled only the hub (its hub dial is not deferred).
    expect(counter(smaller, 'dials_started')).toBe(2)
    expect(counter(larger, 'dials_started')).toBe(1)
    // Usually the larger held its dial back and then found the smaller connected. But the smaller's
    // connection may reach it before the hub's table does (one run in eight, in CI too): then the
    // core never asks it to dial a node that is already a neighbour, and nothing is held back.
    // Either way there is one connection, and the held-back dial never started.
    expect(counter(larger, 'core_dials_deferred')).toBeLessThanOrEqual(1)
    expect(larger.libp2p.getConnections(smaller.libp2p.peerId)).toHaveLength(1)
  })

  it('a configured hub is dialled at once, whatever the ids', async () => {
    const [a, b] = [await nodes.start({ discovery: false, timing }), await nodes.start({ discovery: false, timing })]
    const [smaller, larger] = a.phoenix.id < b.phoenix.id ? [a, b] : [b, a]
    larger.phoenix.addHub(withId(smaller))
    await waitUntil('neighbours', () => smaller.phoenix.peers().length === 1 && larger.phoenix.peers().length === 1)
    expect(counter(larger, 'core_dials_deferred')).toBe(0)
    expect(counter(larger, 'dials_started')).toBe(1)
  })
})
