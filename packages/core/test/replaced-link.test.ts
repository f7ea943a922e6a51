import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { checkRoutesAgainstBfs, type NodeId } from '../src/index.ts'
import { TestNet, addressOf, prng, randomConnectedGraph } from '../src/testing/index.ts'

// Both ends of a pair dial each other; the transport keeps the stream the smaller id opened and
// closes the other, so a link that was up is replaced by a new one, updates in flight on the old
// one lost. The core heard that as connectionDown then connectionUp: the peer's route was withdrawn
// (its next odd number) and, being a retraction, adopted by every node, the peer's other neighbours
// included, until the peer heard it and issued a newer number. In test/netns a replacement right
// after convergence was a moment in which up to 26 routes failed, or a node held its directly
// connected neighbour at an odd number. `connectionReplaced` keeps routes through the peer and
// forgets only what the old connection carried. Seed: fast-check's global one (vitest.setup.ts
// prints it; PHOENIX_SEED replays); PHOENIX_PROPERTY_RUNS for a deeper run.
const PROPERTY_RUNS = Number(process.env.PHOENIX_PROPERTY_RUNS ?? 60)

/** A withdrawn route at any node, or an owner that had to issue a newer number (only a retraction makes it). */
function withdrawals(net: TestNet): string[] {
  const out: string[] = []
  for (const [id, core] of net.cores) {
    if (core.ownSeq !== 0) out.push(`${id} issued seq ${core.ownSeq}`)
    for (const route of core.routes()) if (!route.reachable) out.push(`${id} holds ${route.destination} withdrawn at seq ${route.seq}`)
  }
  return out
}

describe('a link replaced by a new connection between the same two nodes', () => {
  it('withdraws nothing: both ends and every other node keep their routes, at the same numbers, after every event', () => {
    const ids = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5']
    let checking = false
    const seen: string[] = []
    const net = new TestNet({ seed: 7, afterEvent: (n) => void (checking && seen.push(...withdrawals(n))) })
    for (const id of ids) net.add({ id, hubs: id === 'n0' ? [] : [addressOf('n0')], limits: { ecmpNextHopsMax: 8 } })
    net.settle()
    expect(checkRoutesAgainstBfs(ids, net.connectionEdges(), net.lookup)).toEqual([])
    expect(net.cores.get('n2')!.route('n4')).toMatchObject({ fwd: 'n4', nhops: 1, seq: 0 })
    checking = true
    net.replace('n2', 'n4')
    seen.push(...withdrawals(net))
    expect(net.cores.get('n2')!.route('n4')).toMatchObject({ fwd: 'n4', nhops: 1, seq: 0, reachable: true })
    expect(net.cores.get('n4')!.route('n2')).toMatchObject({ fwd: 'n2', nhops: 1, seq: 0, reachable: true })
    net.settle()
    expect(seen).toEqual([])
    expect(checkRoutesAgainstBfs(ids, net.connectionEdges(), net.lookup)).toEqual([])
  })

  it('random networks, a link replaced at a random event (what was in flight on it lost): routes BFS-shortest after quiescence, nothing withdrawn', () => {
    const scenario = fc.record({
      nodes: fc.integer({ min: 2, max: 20 }),
      density: fc.double({ min: 0, max: 0.5, noNaN: true }),
      graphSeed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
      scheduleSeed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
      ecmpNextHopsMax: fc.constantFrom(1, 8),
      replaceAt: fc.integer({ min: 0, max: 400 }),
      pick: fc.nat(),
    })
    fc.assert(
      fc.property(scenario, (s) => {
        const g = randomConnectedGraph(s.nodes, s.density, prng(s.graphSeed))
        const hub = g.nodes[0]!
        const net = new TestNet({ seed: s.scheduleSeed, reorder: 0.1, allowed: (a, b) => g.edges.has(TestNet.key(a, b)) || b === hub })
        const hubsOf = (id: NodeId) => [...new Set([addressOf(hub), ...(g.parent.has(id) ? [addressOf(g.parent.get(id)!)] : [])])].filter((a) => a !== addressOf(id))
        for (const id of g.nodes) net.add({ id, hubs: hubsOf(id), limits: { ecmpNextHopsMax: s.ecmpNextHopsMax } })
        while (net.events < s.replaceAt && net.runOne()) {}
        const edges = net.connectionEdges()
        if (edges.length > 0) net.replace(...edges[s.pick % edges.length]!)
        net.settle()
        expect(withdrawals(net)).toEqual([])
        const failures = checkRoutesAgainstBfs(g.nodes, net.connectionEdges(), net.lookup)
        expect(failures, JSON.stringify(failures.slice(0, 4))).toEqual([])
      }),
      { numRuns: PROPERTY_RUNS },
    )
  }, 300_000)
})
