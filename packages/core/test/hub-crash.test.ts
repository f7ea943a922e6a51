import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { checkRoutesAgainstBfs, type NodeId } from '../src/index.ts'
import { TestNet, addressOf, prng, randomConnectedGraph } from '../src/testing/index.ts'

// Every node is given two or more hubs and one hub crashes at a random event, its updates to some
// nodes still in flight. The others believed those nodes held what the hub had sent them (its
// trans sets: RouteEntry.vouchers); unless that belief is dropped with the hub, the nodes whose
// copy was lost are never sent the route again. Seed: fast-check's global one (vitest.setup.ts
// prints it; PHOENIX_SEED replays); PHOENIX_PROPERTY_RUNS for a deeper run.
const PROPERTY_RUNS = Number(process.env.PHOENIX_PROPERTY_RUNS ?? 60)

const scenario = fc.record({
  nodes: fc.integer({ min: 3, max: 24 }),
  hubs: fc.integer({ min: 2, max: 3 }),
  density: fc.double({ min: 0, max: 0.3, noNaN: true }),
  graphSeed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  scheduleSeed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  ecmpNextHopsMax: fc.constantFrom(1, 8),
  reorder: fc.constantFrom(0, 0.2),
  crashHubAt: fc.integer({ min: 0, max: 300 }),
})
type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never

/**
 * Found by a sweep (21 nodes, two hubs, ecmpNextHopsMax 1): n1 held n2..n16 as holders of n7 on
 * n0's word; n0 crashed with those updates in flight; seven nodes kept 3- to 6-hop routes or none.
 */
const FOUND: Scenario[] = [
  { nodes: 21, hubs: 2, density: 0, graphSeed: 16, scheduleSeed: 6, ecmpNextHopsMax: 1, reorder: 0.2, crashHubAt: 104 },
  { nodes: 21, hubs: 2, density: 0, graphSeed: 16, scheduleSeed: 6, ecmpNextHopsMax: 1, reorder: 0.2, crashHubAt: 111 },
]

function run(s: Scenario): ReturnType<typeof checkRoutesAgainstBfs> {
  const g = randomConnectedGraph(s.nodes, s.density, prng(s.graphSeed))
  const hubs = g.nodes.slice(0, Math.min(s.hubs, s.nodes))
  const isHub = new Set(hubs)
  const net = new TestNet({ seed: s.scheduleSeed, allowed: (a, b) => g.edges.has(TestNet.key(a, b)) || isHub.has(b), reorder: s.reorder })
  const hubsOf = (id: NodeId) => [...new Set([...hubs.map(addressOf), ...(g.parent.has(id) ? [addressOf(g.parent.get(id)!)] : [])])]
  for (const id of g.nodes) net.add({ id, hubs: hubsOf(id), limits: { ecmpNextHopsMax: s.ecmpNextHopsMax } })
  while (net.events < s.crashHubAt && net.runOne()) {}
  net.crash(hubs[0]!)
  // Time passes (dial back-offs expire) until nothing is left to do.
  net.settle()
  return checkRoutesAgainstBfs([...net.cores.keys()], net.connectionEdges(), net.lookup)
}

describe('a hub crashes with its updates in flight', { timeout: 300_000 }, () => {
  it('the counterexamples found: every route is BFS-shortest again', () => {
    for (const s of FOUND) expect(run(s), JSON.stringify(s)).toEqual([])
  })

  it('random networks with several hubs, one crashing at a random event: every route BFS-shortest after quiescence', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const failures = run(s)
        expect(failures, JSON.stringify(failures.slice(0, 4))).toEqual([])
      }),
      { numRuns: PROPERTY_RUNS, examples: FOUND.map((s): [Scenario] => [s]) },
    )
  })
})
