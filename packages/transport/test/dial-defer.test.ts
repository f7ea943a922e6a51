import { afterEach, describe, expect, it } from 'vitest'
import { addressOf, TestNodes, waitUntil, type TestNode } from './nodes.ts'

const counter = (node: TestNode, name: string): number => Number(new RegExp(`phoenix_${name}_total (\\d+)`).exec(node.phoenix.metricsText())?.[1] ?? 0)
const DEFER_MS = 400
/** The address with the peer id: only a dial that names its peer can be deferred. */
const withId = (node: TestNode): string => (addressOf(node).includes('/p2p/') ? addressOf(node) : `${addressOf(node)}/p2p/${node.libp2p.peerId.toString()}`)

describe('dialDeferMs: one connection when both ends dial each other at once', () => {
  const nodes = new TestNodes()
  afterEach(() => nodes.stopAll())

  async function pair(): Promise<{ smaller: TestNode; larger: TestNode }> {
    const [a, b] = [await nodes.start({ discovery: false, timing: { dialDeferMs: DEFER_MS } }), await nodes.start({ discovery: false, timing: { dialDeferMs: DEFER_MS } })]
    return a.phoenix.id < b.phoenix.id ? { smaller: a, larger: b } : { smaller: b, larger: a }
  }

  it('the larger peer id waits, finds the smaller one connected, and does not dial', async () => {
    const { smaller, larger } = await pair()
    smaller.phoenix.addHub(withId(larger))
    larger.phoenix.addHub(withId(smaller))
    await waitUntil('neighbours', () => smaller.phoenix.peers().length === 1 && larger.phoenix.peers().length === 1)
    await new Promise((r) => setTimeout(r, DEFER_MS * 2))
    expect(counter(smaller, 'dials_started')).toBe(1)
    expect(counter(larger, 'dials_deferred')).toBe(1)
    expect(counter(larger, 'dials_started')).toBe(0)
    expect(counter(larger, 'dials_skipped_connected')).toBe(1)
    expect(larger.libp2p.getConnections(smaller.libp2p.peerId)).toHaveLength(1)
  })

  it('the larger peer id dials after dialDeferMs when the smaller one does not', async () => {
    const { smaller, larger } = await pair()
    const t0 = performance.now()
    larger.phoenix.addHub(withId(smaller))
    await waitUntil('neighbours', () => smaller.phoenix.peers().length === 1 && larger.phoenix.peers().length === 1)
    expect(performance.now() - t0).toBeGreaterThanOrEqual(DEFER_MS - 5)
    expect(counter(larger, 'dials_started')).toBe(1)
  })
})
