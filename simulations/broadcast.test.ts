import { simulateBroadcast, type TableDump } from '@phoenix-overlay/sim'
import { describe, expect, it } from 'vitest'
import { broadcastComparison } from './broadcast.ts'

describe('broadcast in the simulator (simulations/broadcast.ts)', () => {
  it('times a copy hop by hop: bandwidth then latency per link, one copy at a time per direction', () => {
    // a1 - a0 (subnet A) = b0 - b1, b2 (subnet B); every table routes through the gateways.
    const route = (fwd: string, nhops: number) => ({ fwd, nhops, seq: 0 })
    const dump: TableDump = {
      nodes: ['a1', 'a0', 'b0', 'b1', 'b2'].map((id) => ({ id, subnet: id[0]!, gateway: id.endsWith('0'), alive: true })),
      connections: [],
      tables: {
        a1: { a0: route('a0', 1), b0: route('a0', 2), b1: route('a0', 3), b2: route('a0', 3) },
        a0: { b0: route('b0', 1), b1: route('b0', 2), b2: route('b0', 2) },
        b0: { b1: route('b1', 1), b2: route('b2', 1) },
      },
    }
    // 1,000 bytes: 0.008 ms on a 1,000 Mbps link, 0.08 ms on a 100 Mbps one.
    const network = { intraSubnet: { latencyUs: 100, bandwidthMbps: 1000 }, interSubnet: { latencyUs: 2000, bandwidthMbps: 100 } }
    const unicast = simulateBroadcast(dump, network, 'a1', 'unicast', 1000)
    const topology = simulateBroadcast(dump, network, 'a1', 'topology', 1000)
    expect(unicast).toMatchObject({ members: 4, interSubnetCopies: 3, linkCopies: 1 + 2 + 3 + 3, unreached: 0 })
    expect(topology).toMatchObject({ members: 4, interSubnetCopies: 1, linkCopies: 2 + 2 + 1, unreached: 0 })
    // Topology-aware: a1→a0 (0.008 + 0.1), a0→b0 (0.08 + 2), b0 relays to b1 and b2 on two links at once (0.008 + 0.1).
    expect(topology.lastMemberMs).toBeCloseTo(0.108 + 2.08 + 0.108, 6)
    // Unicast, copies in table order (a0, b0, b1, b2): on a0→b0 the copy for b0 goes at 0.116 (arriving
    // from a1), b1's waits until 0.196, b2's until 0.276 and leaves at 0.356; then 2 ms, then b0→b2.
    expect(unicast.lastMemberMs).toBeCloseTo(0.356 + 2 + 0.108, 6)
  })

  it('at 100 processes in three subnets: one inter-subnet copy per remote subnet, and the last member sooner than with unicasts', () => {
    const { unicast, topology } = broadcastComparison(100, 65_536)
    console.log(JSON.stringify({ unicast, topology }))
    expect(unicast.members).toBe(99)
    expect(topology.members).toBe(99)
    expect(topology.unreached + unicast.unreached).toBe(0)
    expect(topology.interSubnetCopies).toBe(2)
    expect(unicast.interSubnetCopies).toBeGreaterThanOrEqual(100 - 56) // every member outside subnet A (56 of 100 are in A) at least once
    expect(topology.lastMemberMs).toBeLessThanOrEqual(0.5 * unicast.lastMemberMs)
  }, 60_000)
})
