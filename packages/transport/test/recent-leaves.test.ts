import { describe, expect, it } from 'vitest'
import { RecentLeaves } from '../src/recent-leaves.ts'

const PEER = '12D3KooWEDNR1FDD6UBXS34Jvd9Qg4neUkSYKwWvRvhhVv9x5uDc'
const OTHER = '12D3KooWBYFuZEkz8DnXgrmdhMyTGD2mXq83XB34UYhJviML491M'

describe('RecentLeaves: which hub left gracefully of late', () => {
  it('finds a leave by the /p2p/ peer of a hub address or by the address itself, within the window only', () => {
    const leaves = new RecentLeaves(5_000, 64)
    leaves.record(PEER, '/ip4/127.0.0.1/tcp/7800', 1_000)
    expect(leaves.agoMs(`/ip4/127.0.0.1/tcp/7800/p2p/${PEER}`, 2_000)).toBe(1_000)
    // The hub given without its peer id: the address it was reached at.
    expect(leaves.agoMs('/ip4/127.0.0.1/tcp/7800', 2_500)).toBe(1_500)
    // The same peer id at another address (it moved): still the node that left.
    expect(leaves.agoMs(`/ip4/10.0.0.1/tcp/1/p2p/${PEER}`, 2_000)).toBe(1_000)
    // Another node, another address, or past the window: not put down to the leave.
    expect(leaves.agoMs(`/ip4/127.0.0.1/tcp/7801/p2p/${OTHER}`, 2_000)).toBeUndefined()
    expect(leaves.agoMs('/ip4/127.0.0.1/tcp/7801', 2_000)).toBeUndefined()
    expect(leaves.agoMs(`/ip4/127.0.0.1/tcp/7800/p2p/${PEER}`, 6_001)).toBeUndefined()
    expect(leaves.agoMs('not a multiaddr', 2_000)).toBeUndefined()
  })

  it('keeps at most entriesMax entries, the oldest going first', () => {
    const leaves = new RecentLeaves(60_000, 4)
    for (let i = 0; i < 5; i++) leaves.record(`peer-${i}`, `/ip4/10.0.0.${i}/tcp/1`, i)
    // Two entries a leave: the last two leaves are kept, the first three forgotten.
    expect(leaves.agoMs('/ip4/10.0.0.4/tcp/1', 10)).toBe(6)
    expect(leaves.agoMs('/ip4/10.0.0.3/tcp/1', 10)).toBe(7)
    expect(leaves.agoMs('/ip4/10.0.0.2/tcp/1', 10)).toBeUndefined()
  })
})
