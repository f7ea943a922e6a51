import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parseScenario, scaleScenario, simulate } from '../src/index.ts'

const paper3 = (): Record<string, unknown> => JSON.parse(readFileSync(new URL('../../../simulations/scenarios/paper-3-subnets.json', import.meta.url), 'utf8'))

describe('a gateway at its neighbour limit (core acceptsConnection)', () => {
  it('refuses the handshake: the dialler sees a failed dial, no connection comes and goes, and every table is BFS-shortest', () => {
    // 120 processes in three subnets dial all three gateways: 119 dialers each, against a limit
    // of 80 (a subnet's clique is at most 67, so only the gateways are full). Before the gate, a
    // gateway accepted the connection and closed it at its next step; each dialer took that for
    // a lost neighbour, retracted its route to the gateway, and dialled its hub again: the
    // retractions never stopped and the run did not end (over 10 minutes of wall time).
    const scenario = scaleScenario(parseScenario({ ...paper3(), coreLimits: { neighboursMax: 80 }, endMs: 30_000 }), 120)
    let closes = 0
    const { result, sim } = simulate(scenario, { trace: (_t, line) => void (line.startsWith('close ') && closes++) })
    expect(result.converged).toBe(true)
    expect(result.check.ok, JSON.stringify(result.check.failures.slice(0, 3))).toBe(true)
    expect(closes).toBe(0)
    // The limit held, and it was reached: a gateway has exactly 80 neighbours.
    const degrees = sim.nodes.filter((n) => n.gateway).map((n) => sim.network.degree(n))
    expect(degrees).toEqual([80, 80, 80])
    expect(result.dialsFailed).toBeGreaterThan(0)
  })

  it('below the limit nothing changes: the same run without coreLimits gives the same result', () => {
    const file = paper3()
    const plain = simulate(scaleScenario(parseScenario(file), 60)).result
    const roomy = simulate(scaleScenario(parseScenario({ ...file, coreLimits: { neighboursMax: 60 } }), 60)).result
    expect(roomy.entries).toBe(plain.entries)
    expect(roomy.convergenceMs).toBe(plain.convergenceMs)
    expect(roomy.messages).toBe(plain.messages)
  })
})
