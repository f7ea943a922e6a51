import { readFileSync } from 'node:fs'
import { encodedUpdateSize } from '@phoenix-overlay/wire'
import type { UpdateMessage } from '@phoenix-overlay/core'
import { describe, expect, it } from 'vitest'
import { parseScenario, scaleScenario, simulate } from '../src/index.ts'

const scenario = (name: string, nodes: number) =>
  scaleScenario(parseScenario(JSON.parse(readFileSync(new URL(`../../../simulations/scenarios/${name}`, import.meta.url), 'utf8'))), nodes)

const helloOnly = (m: UpdateMessage): boolean => m.hello !== undefined && m.entries.length === 0 && m.transSets.length === 0 && m.lostNeighbours === undefined && m.planEnd === undefined

describe('the one-subnet hello burst', () => {
  it('every node greets every other with a hello and nothing else, and those N(N−1) messages are a handful of shared frozen objects, not one each', () => {
    const nodes = 60
    const hellos: UpdateMessage[] = []
    const { result } = simulate(scenario('paper-1-subnet.json', nodes), {
      sizeOfUpdate: (m) => {
        if (helloOnly(m)) hellos.push(m)
        return encodedUpdateSize(m)
      },
    })
    expect(result.converged).toBe(true)
    // All but the hub's joiners' first messages (which carry its table) are bare hellos.
    expect(hellos.length).toBeGreaterThanOrEqual(nodes * (nodes - 1) - 2 * nodes)
    const distinct = new Set(hellos)
    // One per receiver seq the senders hold (every record here is at its first seq or two).
    expect(distinct.size).toBeLessThanOrEqual(4)
    for (const m of distinct) expect(Object.isFrozen(m)).toBe(true)
  })
})
