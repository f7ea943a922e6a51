import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parseScenario, scaleScenario, simulate, type Scenario } from '../src/index.ts'

const paper3 = (): Record<string, unknown> => JSON.parse(readFileSync(new URL('../../../simulations/scenarios/paper-3-subnets.json', import.meta.url), 'utf8'))

/** The paper's three subnets at `nodes` processes, hubs only, with the co-hub wait set to `coHubWaitMs`. */
function threeSubnets(nodes: number, coHubWaitMs: number, events: unknown[] = []): Scenario {
  const file = paper3()
  const coreTiming = { ...(file.coreTiming as object), coHubWaitMs }
  return scaleScenario(parseScenario({ ...file, coreTiming, events }), nodes)
}

describe('co-hubs (core fanout.ts): one copy of each record per node with three gateway hubs', () => {
  it('every node hears each record about once, not once per gateway, and every table is BFS-shortest', () => {
    const off = simulate(threeSubnets(120, 0)).result
    const on = simulate(threeSubnets(120, 20)).result
    for (const r of [off, on]) {
      expect(r.converged).toBe(true)
      expect(r.check.ok, JSON.stringify(r.check.failures.slice(0, 3))).toBe(true)
    }
    // Without co-hubs each of the three gateways relays every record to every node.
    expect(off.entriesOverLowerBound).toBeGreaterThan(2.5)
    expect(on.entriesOverLowerBound).toBeLessThan(1.5)
    // And nobody waits for the other gateways' copies: convergence is not slower.
    expect(on.convergenceMs).toBeLessThan(off.convergenceMs * 1.3)
  })

  it('a long bound on the wait costs nothing when every co-hub says where its plan ends', () => {
    // 25 processes: a gateway has less to share than it is sent, so a wait that ended only on a
    // count of entries ran to the bound (2 s here, and convergence with it).
    const short = simulate(threeSubnets(25, 20)).result
    const long = simulate(threeSubnets(25, 2000)).result
    for (const r of [short, long]) {
      expect(r.converged).toBe(true)
      expect(r.check.ok, JSON.stringify(r.check.failures.slice(0, 3))).toBe(true)
    }
    expect(long.convergenceMs).toBeLessThan(short.convergenceMs + 50)
  })

  it('half the processes killed and restarted: still converges to BFS-shortest tables', () => {
    const events = [
      { atMs: 2000, type: 'crash', nodes: { fraction: 0.5 } },
      { atMs: 4000, type: 'restart', nodes: { fraction: 0.5 } },
    ]
    const { result } = simulate(threeSubnets(90, 20, events))
    expect(result.converged).toBe(true)
    expect(result.check.ok, JSON.stringify(result.check.failures.slice(0, 3))).toBe(true)
  })

  it('a gateway killed for good: its nodes are served by the others and every table stays BFS-shortest', () => {
    // The run would end once the survivors' graph is complete, before the crash is noticed; a
    // no-op event keeps it going past the crash detection and the repairs.
    const events = [
      { atMs: 1000, type: 'crash', nodes: ['B-000'] },
      { atMs: 8000, type: 'linkHeal', between: ['A-000', 'C-000'] },
    ]
    const { result } = simulate(threeSubnets(90, 20, events))
    expect(result.converged).toBe(true)
    expect(result.check.ok, JSON.stringify(result.check.failures.slice(0, 3))).toBe(true)
  })
})
