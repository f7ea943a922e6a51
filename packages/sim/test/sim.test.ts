import { readFileSync } from 'node:fs'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { CoreProcess } from '../src/core-process.ts'
import { NODES_MAX } from '../src/constants.ts'
import { DELIVERY, deliveryTag } from '../src/kernel.ts'
import { EventQueue, Graph, Simulation, checkRoutesFast, SimulationError, parseScenario, resultToJson, scaleScenario, simulate, type Scenario } from '../src/index.ts'

const scenarioFile = (name: string): unknown => JSON.parse(readFileSync(new URL(`../../../simulations/scenarios/${name}`, import.meta.url), 'utf8'))

/** A small three-subnet scenario in the paper's proportions. */
function threeSubnets(nodes: number, overrides: Record<string, unknown> = {}): Scenario {
  return scaleScenario(parseScenario({ ...(scenarioFile('paper-3-subnets.json') as object), ...overrides }), nodes)
}

describe('event queue', () => {
  it('pops in time order, equal times in insertion order', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 300 }), (times) => {
        const q = new EventQueue<number>()
        times.forEach((t, i) => q.push(t, i))
        const out: [number, number][] = []
        while (q.size > 0) {
          const { timeMs, item } = q.pop()
          out.push([timeMs, item])
        }
        const expected = times.map((t, i) => [t, i] as [number, number]).sort((a, b) => a[0] - b[0] || a[1] - b[1])
        expect(out).toEqual(expected)
      }),
      { numRuns: 200 },
    )
  })

  it('pops in (time, insertion) order, each item with its tag, with pushes between pops, past its first growth (1,024 slots) and several levels', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 50 }), fc.nat({ max: 3 })), { minLength: 1_500, maxLength: 4_000 }), (ops) => {
        const q = new EventQueue<number>()
        // The reference: a sorted list of the pending (time, number), kept by insertion.
        const pending: [number, number][] = []
        let clock = 0
        ops.forEach(([dt, pops], i) => {
          // Each item tagged with its own number, read back beside it.
          q.push(clock + dt, i, i)
          pending.push([clock + dt, i])
          for (let k = 0; k < pops && q.size > 0; k++) {
            pending.sort((a, b) => a[0] - b[0] || a[1] - b[1])
            const [t, item] = pending.shift()!
            expect(q.peekTime()).toBe(t)
            expect(q.peekTag()).toBe(item)
            expect(q.take()).toBe(item)
            clock = t
          }
          expect(q.size).toBe(pending.length)
        })
      }),
      { numRuns: 20 },
    )
  })

  it('keeps same-time pushes with no look between them in one heap slot (a burst), and pops them and the rest in (time, insertion) order', () => {
    // Each step: a handler's pushes (times from a few, so runs of equal times are common), then pops.
    const step = fc.tuple(fc.array(fc.nat({ max: 2 }), { maxLength: 40 }), fc.nat({ max: 30 }))
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 200 }), (steps) => {
        const q = new EventQueue<number>()
        const pending: [number, number][] = []
        let clock = 0
        let next = 0
        for (const [dts, pops] of steps) {
          // Slots a handler's pushes add: one per change of time between consecutive pushes.
          const runs = dts.filter((dt, i) => i === 0 || dt !== dts[i - 1]).length
          const slotsBefore = q.size === 0 ? 0 : (q.peekTime(), q.slotsInHeap)
          for (const dt of dts) {
            q.push(clock + dt, next, next)
            pending.push([clock + dt, next++])
          }
          q.peekTime()
          expect(q.slotsInHeap).toBeLessThanOrEqual(slotsBefore + runs)
          for (let k = 0; k < pops && q.size > 0; k++) {
            pending.sort((a, b) => a[0] - b[0] || a[1] - b[1])
            const [t, item] = pending.shift()!
            expect([q.peekTime(), q.peekTag(), q.take()]).toEqual([t, item, item])
            clock = t
          }
          expect(q.size).toBe(pending.length)
        }
      }),
      { numRuns: 100 },
    )
    // A burst: 10,000 deliveries at one time, in one slot, then taken in push order.
    const q = new EventQueue<number>()
    q.push(5, -1)
    for (let i = 0; i < 10_000; i++) q.push(7, i, i + 1)
    q.push(6, -2)
    expect([q.size, q.peekTime(), q.slotsInHeap]).toEqual([10_002, 5, 3])
    const out = Array.from({ length: 10_002 }, () => [q.peekTag(), q.take()])
    expect(out).toEqual([[0, -1], [0, -2], ...Array.from({ length: 10_000 }, (_, i) => [i + 1, i])])
  })
})

describe('delivery tags', () => {
  it('give back the connection, the direction and the kind, and are positive int32s up to NODES_MAX²/2 connections', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: (NODES_MAX * NODES_MAX) / 2 }), fc.boolean(), fc.boolean(), (conn, toB, update) => {
        const tag = deliveryTag(conn, toB, update)
        expect(tag).toBeGreaterThan(0)
        expect(tag | 0).toBe(tag)
        expect([DELIVERY.conn(tag), DELIVERY.toB(tag), DELIVERY.update(tag)]).toEqual([conn, toB, update])
      }),
    )
  })
})

describe('determinism', () => {
  it('the same seed gives a byte-identical result file; another seed does not', () => {
    const scenario = { ...threeSubnets(40), startSpreadMs: 20 }
    const a = resultToJson(simulate(scenario).result)
    const b = resultToJson(simulate(scenario).result)
    const c = resultToJson(simulate({ ...scenario, seed: scenario.seed + 1 }).result)
    expect(a).toBe(b)
    expect(c).not.toBe(a)
  })
})

describe('firewall', () => {
  it('a forbidden dial fails after the SYN timeout, a dial to a gateway succeeds after a round trip and set-up', () => {
    // Two subnets of two; every address given, so B-001 dials A-001, which the firewall forbids.
    const scenario = parseScenario({
      subnets: [
        { name: 'A', nodes: 2, gateways: 1 },
        { name: 'B', nodes: 2, gateways: 1 },
      ],
      discovery: 'all',
      network: { synTimeoutMs: 3000, interSubnet: { latencyUs: 2000, bandwidthMbps: 100 }, connectSetupUs: 1000 },
      // The run would end once the graph is complete; a no-op event keeps it going past the SYN timeout.
      events: [{ atMs: 4000, type: 'linkHeal', between: ['A-000', 'B-000'] }],
    })
    const lines: [number, string][] = []
    const { result } = simulate(scenario, { trace: (t, line) => lines.push([t, line]) })
    const forbidden = lines.find(([, l]) => l === 'dial B-001 -> A-001 failed')
    expect(forbidden).toBeDefined()
    // Started at t=0 plus the dialler's CPU for the dial: fails a SYN timeout later, not at once.
    expect(forbidden![0]).toBeGreaterThanOrEqual(3000)
    expect(forbidden![0]).toBeLessThan(3001)
    const toGateway = lines.find(([, l]) => l === 'dial B-001 -> A-000 up')
    expect(toGateway).toBeDefined()
    expect(toGateway![0]).toBeGreaterThanOrEqual(2 * 2 + 1)
    expect(toGateway![0]).toBeLessThan(10)
    expect(result.check.ok).toBe(true)
    // A-001 and B-001 may never connect: they reach each other through the gateways.
    expect(result.connections).toBe(5)
    expect(result.connectionsMissing).toBe(0)
  })

  it("a rejecting firewall fails the dial after one round trip", () => {
    const scenario = parseScenario({
      subnets: [
        { name: 'A', nodes: 2, gateways: 1 },
        { name: 'B', nodes: 2, gateways: 1 },
      ],
      discovery: 'all',
      network: { firewall: 'reject', interSubnet: { latencyUs: 2000, bandwidthMbps: 100 } },
    })
    const lines: [number, string][] = []
    simulate(scenario, { trace: (t, line) => lines.push([t, line]) })
    const forbidden = lines.find(([, l]) => l === 'dial B-001 -> A-001 failed')
    expect(forbidden![0]).toBeGreaterThanOrEqual(4)
    expect(forbidden![0]).toBeLessThan(10)
  })
})

describe('final table check', () => {
  const { sim, result } = simulate(threeSubnets(30))

  it('passes on the real tables, with both checkers', () => {
    expect(result.check.ok).toBe(true)
    expect(sim.checkTables(undefined, 'reference').failures).toEqual([])
    expect(sim.checkTables(undefined, 'twin-classes').failures).toEqual([])
  })

  it('reads by number what the routes say (the twin-class check reads tables that way, building no route)', () => {
    let pairs = 0
    for (const u of sim.nodes) {
      for (const v of sim.nodes) {
        if (u === v) continue
        const r = u.process!.route(v)
        expect([u.process!.nextHop!(v), u.process!.hopsTo!(v)]).toEqual(r === undefined ? [undefined, -1] : [r.fwd, r.nhops])
        pairs++
      }
    }
    expect(pairs).toBe(30 * 29)
  })

  it('catches a corrupted entry (wrong hops, wrong next hop, missing route) with both checkers, identically', () => {
    const ids = sim.nodes.map((n) => n.id)
    fc.assert(
      fc.property(fc.nat(ids.length - 1), fc.nat(ids.length - 1), fc.constantFrom('hops', 'fwd', 'drop'), (i, j, how) => {
        fc.pre(i !== j)
        const [u, v] = [ids[i]!, ids[j]!]
        const corrupt = (a: string, b: string, r: { fwd: string; nhops: number } | undefined) => {
          if (a !== u || b !== v || r === undefined) return r
          if (how === 'hops') return { ...r, nhops: r.nhops + 1 }
          if (how === 'fwd') return { ...r, fwd: r.fwd === ids[0] ? ids[1]! : ids[0]! }
          return undefined
        }
        const reference = sim.checkTables(corrupt, 'reference')
        const fast = sim.checkTables(corrupt, 'twin-classes')
        expect(fast.failures).toEqual(reference.failures)
        // A different next hop can be just as good (another neighbour one step closer); the other two never are.
        if (how !== 'fwd') {
          expect(reference.ok).toBe(false)
          expect(reference.failures[0]).toMatchObject({ node: u, destination: v })
        }
      }),
      { numRuns: 60 },
    )
  })
})

describe('twin classes', () => {
  it('are the classes of equal closed neighbourhoods, numbered by first member', () => {
    // Random graphs of up to 12 nodes, cliques among them (where twins are), edges given twice.
    const graphs = fc.integer({ min: 1, max: 12 }).chain((n) =>
      fc.tuple(fc.constant(n), fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 40 }), fc.array(fc.nat(n - 1), { maxLength: 6 })),
    )
    fc.assert(
      fc.property(graphs, ([n, pairs, clique]) => {
        const seen = new Set<string>()
        const edges: [number, number][] = []
        const add = (a: number, b: number): void => {
          const key = `${Math.min(a, b)},${Math.max(a, b)}`
          if (a === b || seen.has(key)) return
          seen.add(key)
          edges.push([a, b])
        }
        for (const [a, b] of pairs) add(a, b)
        for (const a of clique) for (const b of clique) add(a, b)
        const graph = new Graph(n, edges)
        const closed = (v: number): string => [...graph.neighbours(v), v].sort((x, y) => x - y).join(',')
        const reps: number[] = []
        const classOf = Array.from({ length: n }, (_, v) => {
          const c = reps.findIndex((r) => closed(r) === closed(v))
          if (c >= 0) return c
          reps.push(v)
          return reps.length - 1
        })
        expect([...graph.classOf]).toEqual(classOf)
        expect(graph.classRep).toEqual(reps)
        // Every pair, not only those whose hashes met in a bucket.
        for (let u = 0; u < n; u++) for (let v = 0; v < n; v++) expect(graph.twins(u, v)).toBe(closed(u) === closed(v))
      }),
      { numRuns: 300 },
    )
  })
})

describe('twin-class checker: node by node (class rows kept) and destination by destination agree', () => {
  // Two cliques {0,1,2} and {3,4,5} joined by the edge 2-3, and a node 6 on its own.
  const edges: [number, number][] = [[0, 1], [0, 2], [1, 2], [3, 4], [3, 5], [4, 5], [2, 3]]
  const graph = new Graph(7, edges)
  const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g']
  const truth = (u: number, v: number): { fwd: number; nhops: number } | undefined => {
    if (u === 6 || v === 6) return undefined
    const { dist, parent } = graph.bfs(v)
    return { fwd: parent[u]!, nhops: dist[u]! }
  }
  it('finds the same failures for any one corrupted route, and none on the true tables', () => {
    expect(checkRoutesFast(graph, ids, truth, 100)).toEqual([])
    expect(checkRoutesFast(graph, ids, truth, 100, 0)).toEqual([])
    fc.assert(
      fc.property(fc.nat(6), fc.nat(6), fc.constantFrom('hops', 'fwd', 'drop', 'invent'), (u0, v0, how) => {
        fc.pre(u0 !== v0)
        const route = (u: number, v: number) => {
          const r = truth(u, v)
          if (u !== u0 || v !== v0) return r
          if (how === 'invent') return { fwd: (u + 1) % 7, nhops: 1 }
          if (r === undefined) return r
          return how === 'hops' ? { ...r, nhops: r.nhops + 1 } : how === 'fwd' ? { ...r, fwd: (r.fwd + 2) % 6 } : undefined
        }
        const byNode = checkRoutesFast(graph, ids, route, 100)
        expect(byNode).toEqual(checkRoutesFast(graph, ids, route, 100, 0))
        // Another next hop can be as good; any other change is one failure.
        const changed = JSON.stringify(route(u0, v0)) !== JSON.stringify(truth(u0, v0))
        if (how !== 'fwd') expect(byNode.length).toBe(changed ? 1 : 0)
      }),
    )
  })
})

describe('strategies converge to correct tables', () => {
  for (const strategy of ['optimized', 'naive', 'offline', 'master'] as const) {
    for (const discovery of ['hubs', 'all'] as const) {
      if ((strategy === 'offline' || strategy === 'master') && discovery === 'all') continue
      it(`${strategy} (${discovery}) on three subnets of 36`, () => {
        const { result } = simulate({ ...threeSubnets(36), strategy, discovery, network: { ...threeSubnets(36).network, firewall: 'reject' } })
        expect(result.converged).toBe(true)
        expect(result.check).toMatchObject({ ok: true, failures: [] })
        expect(result.connectionsMissing).toBe(0)
        expect(result.samples.at(-1)!.reachableFraction).toBe(1)
        expect(result.entries).toBeGreaterThanOrEqual(strategy === 'master' ? 35 * 36 : 1)
      })
    }
  }

  it('the run ends only once every node has handled what it received (a busy node with an unread update is not quiet)', () => {
    // With 5 ms per entry, a gateway is still busy when the last update reaches it and nothing is
    // left on the wire: the offline baseline used to end there, the update unread (at 200
    // processes its tables were wrong; at 60 the convergence time was 11.7 s instead of 19.1 s).
    for (const nodes of [60, 200]) {
      const base = threeSubnets(nodes)
      const sim = new Simulation({ ...base, strategy: 'offline', processing: { ...base.processing, perEntryUs: 5_000 } })
      const result = sim.run()
      expect(result.converged).toBe(true)
      expect(sim.nodes.filter((n) => n.alive && n.process?.hasWork(sim.nowMs)).map((n) => n.id)).toEqual([])
      expect(result.check).toMatchObject({ ok: true, failures: [] })
    }
  })

  it('the run ends only once every node has noticed the connections that died (a failed link, a crash: crashDetectMs later)', () => {
    // Found by a sweep of random scenarios: a failed link as the last event, and the run ended
    // before either end noticed (its routes still through the other: 'nhops 1, BFS distance 2').
    const base = threeSubnets(60, { startSpreadMs: 500 })
    for (const event of [
      { atMs: 2_000, type: 'linkFail', between: ['A-004', 'A-013'] },
      { atMs: 2_000, type: 'crash', nodes: ['A-007'] },
    ] as const) {
      const sim = new Simulation({ ...base, events: [event] })
      const result = sim.run()
      expect(result.converged).toBe(true)
      expect(result.convergenceMs).toBeGreaterThanOrEqual(event.atMs + base.network.crashDetectMs)
      expect(result.check).toMatchObject({ ok: true, failures: [] })
    }
  })

  it('a crash noticed late is told apart from a second crash of the same node: the first notice does not stand for the second', () => {
    // A-007 crashes, restarts and reconnects, and crashes again, all within crashDetectMs: its
    // peers hear of the second crash crashDetectMs after it, not when the first one's notice is
    // due (each close's late notice carries the close's own number, `Network.closesMade`).
    const base = threeSubnets(60, { startSpreadMs: 500 })
    const second = 2_600
    const sim = new Simulation({ ...base, events: [
      { atMs: 2_000, type: 'crash', nodes: ['A-007'] },
      { atMs: 2_100, type: 'restart', nodes: ['A-007'] },
      { atMs: second, type: 'crash', nodes: ['A-007'] },
    ] })
    const result = sim.run()
    expect(result.converged).toBe(true)
    expect(result.convergenceMs).toBeGreaterThanOrEqual(second + base.network.crashDetectMs)
    expect(result.check).toMatchObject({ ok: true, failures: [] })
  })

  it('master: a process whose dial reached the master before it started dials it again (startSpreadMs)', () => {
    // Every process used to dial the master once; refused (not started yet), the run stopped with
    // "has no connection to the master".
    const { result } = simulate({ ...threeSubnets(60, { startSpreadMs: 500 }), strategy: 'master' })
    expect(result.converged).toBe(true)
    expect(result.check).toMatchObject({ ok: true, failures: [] })
  })

  it('optimized sends fewer entries than naive DSDV', () => {
    const optimized = simulate({ ...threeSubnets(40), strategy: 'optimized' }).result
    const naive = simulate({ ...threeSubnets(40), strategy: 'naive' }).result
    expect(naive.entries).toBeGreaterThan(2 * optimized.entries)
  })
})

describe('signed records (modelled cost)', () => {
  it('each node verifies every other record once, signs its own, and pays for it in convergence time', () => {
    const unsigned = simulate(threeSubnets(40)).result
    const scenario = threeSubnets(40)
    const signed = simulate({ ...scenario, processing: { ...scenario.processing, perRecordSignUs: 90, perRecordVerifyUs: 5000 } }).result
    expect(unsigned.recordVerifications).toBe(0)
    expect(signed.check.ok).toBe(true)
    // The core checks a record when it first arrives, not on every copy: one verification per
    // (node, other node) pair and no more; a node re-signs only if its seq changes (none here).
    expect(signed.recordVerifications).toBe(40 * 39)
    expect(signed.recordSigns).toBe(40)
    // Nearly the same routing work: the gateways share out their neighbours (core fanout.ts) by
    // when their co-hubs' plans arrive, which the verification cost shifts (1,832 entries signed
    // against 1,925 when measured, both within 1.25 of the lower bound); the 64-byte signatures
    // make the bytes larger.
    expect(Math.abs(signed.entries - unsigned.entries)).toBeLessThan(0.06 * unsigned.entries)
    expect(signed.entriesOverLowerBound).toBeLessThan(1.3)
    expect(signed.bytes).toBeGreaterThan(unsigned.bytes)
    // 39 verifications at 5 ms each must delay every node by well over 100 ms.
    expect(signed.convergenceMs).toBeGreaterThan(unsigned.convergenceMs + 100)
  })

  it('rejects a negative cost', () => {
    expect(() => parseScenario({ ...(scenarioFile('paper-1-subnet.json') as object), processing: { perRecordVerifyUs: -1 } })).toThrow(/perRecordVerifyUs/)
  })
})

describe('coreTiming.dialDeferMs (the transport\'s: the larger id of a pair holds its dial back)', () => {
  it('fewer dials, the same connections, correct tables, convergence near; also through a crash and restart', () => {
    const fileTiming = (scenarioFile('paper-3-subnets.json') as { coreTiming: object }).coreTiming
    const withDefer = (deferMs: number, dialsInFlightMax = 64) => ({ coreLimits: { dialsInFlightMax }, coreTiming: { ...fileTiming, dialDeferMs: deferMs } })
    const run = (deferMs: number, slots?: number) => simulate(threeSubnets(60, withDefer(deferMs, slots))).result
    const [atOnce, deferred] = [run(0), run(3_000)]
    // Four dial slots: held-back dials that kept a slot each would leave a node with dozens of
    // peers dialling only as fast as its smaller peers reach it.
    const [atOnceFew, deferredFew] = [run(0, 4), run(3_000, 4)]
    for (const result of [atOnce, deferred, atOnceFew, deferredFew]) {
      expect(result.converged).toBe(true)
      expect(result.check).toMatchObject({ ok: true, failures: [] })
      expect(result.connectionsMissing).toBe(0)
      expect(result.connections).toBe(atOnce.connections)
    }
    // Each pair that learns of each other at once is dialled by one end, not two (1,773 dials against 3,369).
    expect(deferred.dialsStarted).toBeLessThan(atOnce.dialsStarted * 0.7)
    expect(deferred.convergenceMs).toBeLessThan(atOnce.convergenceMs * 1.2)
    expect(deferredFew.convergenceMs).toBeLessThan(atOnceFew.convergenceMs * 1.2)
    const churn = {
      ...threeSubnets(40, withDefer(3_000)),
      events: [
        { atMs: 300, type: 'crash' as const, nodes: { fraction: 0.3 } },
        { atMs: 900, type: 'restart' as const, nodes: { fraction: 0.3 } },
      ],
    }
    const { result } = simulate(churn)
    expect(result.converged).toBe(true)
    expect(result.check.ok).toBe(true)
    expect(result.connectionsMissing).toBe(0)
  })
})

describe('churn', () => {
  it('recovers from crashing half the nodes and restarting them', () => {
    const base = parseScenario(scenarioFile('paper-fig6-churn.json'))
    const scenario = {
      ...scaleScenario(base, 40),
      events: [
        { atMs: 1000, type: 'crash' as const, nodes: { fraction: 0.5 } },
        { atMs: 2000, type: 'restart' as const, nodes: { fraction: 0.5 } },
      ],
    }
    const { result } = simulate(scenario)
    expect(result.converged).toBe(true)
    expect(result.check.ok).toBe(true)
    expect(result.lastScenarioEventMs).toBe(2000)
    expect(result.connectionsMissing).toBe(0)
    // After the crash and before the restart some sample shows the dead half unreachable from the living: all live pairs
    // are reachable again only once tables caught up; at the end everything is reachable.
    const between = result.samples.filter((s) => s.tMs > 1000 && s.tMs < 2000)
    expect(between.some((s) => s.pairs < result.samples[0]!.pairs || s.reachableFraction < 1)).toBe(true)
    expect(result.samples.at(-1)!.reachableFraction).toBe(1)
  })

  it('graceful leave and link failure/heal end in correct tables', () => {
    const scenario = parseScenario({
      subnets: [{ name: 'A', nodes: 12, gateways: 1 }],
      events: [
        { atMs: 500, type: 'leave', nodes: ['A-003'] },
        { atMs: 600, type: 'linkFail', between: ['A-001', 'A-002'] },
        { atMs: 9000, type: 'linkHeal', between: ['A-001', 'A-002'] },
      ],
    })
    const lines: string[] = []
    const { sim, result } = simulate(scenario, { trace: (_t, line) => lines.push(line) })
    expect(result.check.ok).toBe(true)
    expect(sim.nodes.find((n) => n.id === 'A-003')!.alive).toBe(false)
    expect(lines).toContain('close A-001 A-002')
    // After the heal the pair reconnects (a retried dial), so the graph is complete again.
    expect(result.connectionsMissing).toBe(0)
    expect(result.connections).toBe((11 * 10) / 2)
  })
})

describe('when a run ends (found by a new user)', () => {
  it('not before every node started: with startSpreadMs it ended at the first quiet check, nodes never started, "converged"', () => {
    for (const spreadMs of [5_000, 3_000]) {
      const { sim, result } = simulate(parseScenario({ subnets: [{ name: 'A', nodes: 20, gateways: 1 }], startSpreadMs: spreadMs }))
      expect(result.converged).toBe(true)
      expect(sim.nodes.filter((n) => n.alive)).toHaveLength(20)
      expect(result.connectionsMissing).toBe(0)
      expect(result.check).toMatchObject({ ok: true, method: 'reference' })
      // The last start is late in the spread, and routing follows it.
      expect(result.convergenceMs).toBeGreaterThan(spreadMs * 0.8)
    }
  })

  it('an event that changes nothing is listed as skipped and moves neither convergenceMs nor lastScenarioEventMs', () => {
    const base = { subnets: [{ name: 'A', nodes: 12, gateways: 1 }] }
    const quiet = simulate(parseScenario(base)).result
    expect(quiet.reach90Ms).not.toBeNull()
    const noOps = [
      { atMs: 4000, type: 'linkHeal', between: ['A-001', 'A-002'] },
      { atMs: 4100, type: 'crash', nodes: { fraction: 0 } },
      { atMs: 4200, type: 'restart', nodes: ['A-003'] },
    ]
    const { result } = simulate(parseScenario({ ...base, events: noOps }))
    expect(result.eventsSkipped).toEqual([
      'events[0] linkHeal A-001 A-002: already healthy',
      'events[1] crash: selects no node',
      'events[2] restart A-003: already running',
    ])
    expect(result.convergenceMs).toBe(quiet.convergenceMs)
    expect(result.lastScenarioEventMs).toBe(0)
    // Reachable at the first sample, not "after" an event that did nothing.
    expect(result.reach90Ms).toBe(result.samples[1]!.tMs)
    expect(result.reach90Ms).toBeLessThan(4000)
    // A second fail of a failed link changes nothing either; the first one does.
    const twice = simulate(parseScenario({ ...base, events: [{ atMs: 4000, type: 'linkFail', between: ['A-001', 'A-002'] }, { atMs: 4500, type: 'linkFail', between: ['A-001', 'A-002'] }] })).result
    expect(twice.eventsSkipped).toEqual(['events[1] linkFail A-001 A-002: already failed'])
    expect(twice.lastScenarioEventMs).toBe(4000)
    expect(twice.convergenceMs).toBeGreaterThan(4000)
  })

  it('a result with no sample at 90% reachable says reach90Ms null (the field was left out)', () => {
    const { result } = simulate(parseScenario({ subnets: [{ name: 'A', nodes: 20, gateways: 1 }], endMs: 5 }))
    expect(result.reach90Ms).toBeNull()
    expect(JSON.parse(resultToJson(result))).toHaveProperty('reach90Ms', null)
  })

  it('a run that did not converge says its tables were not checked (it said "reference" and reported a failure)', () => {
    const { result } = simulate(parseScenario({ subnets: [{ name: 'A', nodes: 20, gateways: 1 }], endMs: 5 }))
    expect(result.converged).toBe(false)
    expect(result.check).toEqual({ ok: false, method: 'none', failures: [{ node: '-', destination: '-', problem: 'not converged by endMs 5: tables not checked' }] })
  })
})

describe('scenario validation', () => {
  const bad: [unknown, string][] = [
    [{ subnets: [] }, 'scenario.subnets: must be a non-empty list'],
    [{ subnets: [{ name: 'A', nodes: 4 }, { name: 'B', nodes: -1 }] }, 'scenario.subnets[1].nodes'],
    [{ subnets: [{ name: 'A', nodes: 4 }], network: { synTimeoutMs: 'x' } }, 'scenario.network.synTimeoutMs'],
    [{ subnets: [{ name: 'A', nodes: 4 }], network: { intraSubnet: { latencyUs: 1, bandwith: 3 } } }, 'scenario.network.intraSubnet.bandwith: unknown field'],
    [{ subnets: [{ name: 'A', nodes: 4 }], strategy: 'fast' }, 'scenario.strategy'],
    [{ subnets: [{ name: 'A', nodes: 4 }], events: [{ atMs: 1, type: 'crash', nodes: { fraction: 0.5, subnet: 'Z' } }] }, 'scenario.events[0].nodes.subnet'],
    [{ subnets: [{ name: 'A', nodes: 4 }], events: [{ atMs: 5, type: 'crash', nodes: ['A-001'] }, { atMs: 1, type: 'restart', nodes: ['A-001'] }] }, 'scenario.events[1].atMs'],
    [{ subnets: [{ name: 'A', nodes: 4 }], coreTiming: { sendHoldForDialMs: 5 } }, 'scenario.coreTiming.sendHoldForDialMs: unknown field'],
    [{ subnets: [{ name: 'A', nodes: 4 }], coreLimits: { ecmpNextHopsMax: 4 } }, 'scenario.coreLimits.ecmpNextHopsMax: unknown field'],
    [{ subnets: [{ name: 'A', nodes: 4 }], coreLimits: { neighboursMax: 0 } }, 'scenario.coreLimits.neighboursMax: must be in [1, 65536], got 0'],
    [{ subnets: [{ name: 'A', nodes: 4, gateways: 0 }, { name: 'B', nodes: 4, gateways: 0 }] }, 'no gateway'],
    // One subnet without a gateway: nobody knows anybody; it "converged" over an empty graph.
    [{ subnets: [{ name: 'A', nodes: 3, gateways: 0 }] }, 'scenario.subnets: no gateway, and with "discovery": "hubs" nodes know only the gateways at start'],
    [{ subnets: [{ name: 'A', nodes: 3, gateways: 0 }], strategy: 'naive' }, 'scenario.subnets: no gateway'],
    // Found by a new user: an event past the end never happened and the run ended "not converged";
    // a first back-off of 0 was refused by the core mid-run, naming the core's field, not the file's.
    [{ subnets: [{ name: 'A', nodes: 3 }], endMs: 1000, events: [{ atMs: 5000, type: 'crash', nodes: ['A-001'] }] }, 'scenario.events[0].atMs: 5000 is after endMs (1000): the run ends before it'],
    [{ subnets: [{ name: 'A', nodes: 4 }], coreTiming: { dialBackoffInitialMs: 0 } }, 'scenario.coreTiming.dialBackoffInitialMs: must be in [1, 86400000], got 0'],
    // The flag combination was refused; the same in the file was taken silently and the result said "all".
    [{ subnets: [{ name: 'A', nodes: 4 }], strategy: 'master', discovery: 'hubs' }, 'scenario.discovery: has no effect with "strategy": "master"'],
    [{ subnets: [{ name: 'A', nodes: 4 }], strategy: 'offline', discovery: 'all' }, 'scenario.discovery: has no effect with "strategy": "offline"'],
  ]
  for (const [input, message] of bad) {
    it(`rejects ${JSON.stringify(input).slice(0, 90)}`, () => {
      expect(() => parseScenario(input)).toThrowError(SimulationError)
      expect(() => parseScenario(input)).toThrowError(message)
    })
  }

  it('takes a subnet without gateways where nodes still meet: discovery all, offline, master, a lone node', () => {
    for (const extra of [{ discovery: 'all' }, { strategy: 'offline' }, { strategy: 'master' }]) expect(() => parseScenario({ subnets: [{ name: 'A', nodes: 3, gateways: 0 }], ...extra })).not.toThrow()
    expect(() => parseScenario({ subnets: [{ name: 'A', nodes: 1, gateways: 0 }] })).not.toThrow()
    // A scenario changed or built in code is checked again by the simulation.
    const all = parseScenario({ discovery: 'all', subnets: [{ name: 'A', nodes: 3, gateways: 0 }] })
    expect(() => new Simulation({ ...all, discovery: 'hubs' })).toThrowError('scenario.subnets: no gateway')
  })

  it('names an event node id that does not exist', () => {
    const scenario = parseScenario({ subnets: [{ name: 'A', nodes: 4 }], events: [{ atMs: 1, type: 'crash', nodes: ['A-001', 'A-009'] }] })
    expect(() => new Simulation(scenario)).toThrowError('scenario.events[0].nodes[1]: no node "A-009"')
  })

  it('scales the paper scenario keeping 224:128:48', () => {
    const base = parseScenario(scenarioFile('paper-3-subnets.json'))
    expect(scaleScenario(base, 400).subnets.map((s) => s.nodes)).toEqual([224, 128, 48])
    expect(scaleScenario(base, 2000).subnets.map((s) => s.nodes)).toEqual([1120, 640, 240])
    expect(scaleScenario(base, 101).subnets.map((s) => s.nodes).reduce((a, b) => a + b)).toBe(101)
    expect(() => scaleScenario(base, 2)).toThrowError('--nodes 2 is too few')
  })
})

describe('lookups by number (what the samples and the message gate use)', () => {
  it('next hop and neighbour by shared number agree with the lookups by id, for every pair, throughout a run with crashes and restarts', () => {
    const base = parseScenario(scenarioFile('paper-fig6-churn.json'))
    const scenario = {
      ...scaleScenario(base, 30),
      events: [
        { atMs: 1000, type: 'crash' as const, nodes: { fraction: 0.5 } },
        { atMs: 2000, type: 'restart' as const, nodes: { fraction: 0.5 } },
      ],
    }
    let sim: Simulation | undefined
    let lines = 0
    const seen = { routed: 0, unrouted: 0, neighbours: 0, strangers: 0 }
    const compare = (): void => {
      for (const u of sim!.nodes) {
        const process = u.process as CoreProcess | undefined
        if (process === undefined || !u.alive) continue
        for (const v of sim!.nodes) {
          if (v === u) continue
          const byId = process.core.route(v.id)?.fwd
          expect(process.nextHop(v)?.id).toBe(byId)
          seen[byId === undefined ? 'unrouted' : 'routed']++
          const neighbour = process.core.isNeighbour(v.id)
          expect(process.isNeighbour(v)).toBe(neighbour)
          seen[neighbour ? 'neighbours' : 'strangers']++
        }
      }
    }
    sim = new Simulation(scenario, { trace: () => { if (++lines % 97 === 0) compare() } })
    const result = sim.run()
    compare()
    expect(result.check.ok).toBe(true)
    // Both answers of each lookup were compared, many times.
    for (const count of Object.values(seen)) expect(count).toBeGreaterThan(500)
  })
})
