import { afterEach, describe, expect, it } from 'vitest'
import { TestNodes, addressOf, waitUntil, type TestNode } from './nodes.ts'

const counter = (node: TestNode, name: string): number => Number(new RegExp(`phoenix_${name}_total (\\d+)`).exec(node.phoenix.metricsText())?.[1] ?? 0)

describe('a node at its neighbour limit (core neighboursMax)', () => {
  const nodes = new TestNodes()
  afterEach(() => nodes.stopAll())

  it('refuses the handshake: the dialler sees failed dials, never a neighbour that comes and goes', async () => {
    const hub = await nodes.start({ names: ['hub'], core: { limits: { neighboursMax: 1 } } })
    const first = await nodes.start({ names: ['first'], hubs: [addressOf(hub)] })
    await waitUntil('first is the hub neighbour', () => hub.phoenix.peers().length === 1)
    const second = await nodes.start({ names: ['second'], hubs: [addressOf(hub)], core: { timing: { dialBackoffInitialMs: 100, redialBackoffMaxMs: 200 } } })
    await waitUntil('the second dialled the hub and was refused twice', () => counter(second, 'dials_failed') >= 2)
    expect(hub.phoenix.peers()).toEqual([first.libp2p.peerId.toString()])
    expect(second.phoenix.peers()).toEqual([])
    // Neither end ever had the second as a neighbour (accepted and then closed, it would count).
    expect(counter(hub, 'neighbours_up')).toBe(1)
    expect(counter(second, 'neighbours_up')).toBe(0)
    // Room again: the second gets in on its next redial.
    await first.libp2p.stop()
    await waitUntil('the second is the hub neighbour', () => hub.phoenix.peers().join() === second.libp2p.peerId.toString(), 15_000)
  }, 30_000)
})
