import { describe, expect, it } from 'vitest'
import { checkLoopFree, checkRoutesAgainstBfs } from '../src/index.ts'
import { TestNet, addressOf, randomConnectedGraph, prng } from './net.ts'

describe('smoke', () => {
  for (const mode of ['optimized', 'naive'] as const) {
    it(`clique ${mode}`, () => {
      const net = new TestNet({ seed: 1 })
      for (let i = 0; i < 20; i++) net.add({ id: `n${i}`, hubs: i === 0 ? [] : [addressOf('n0')], mode })
      net.runToQuiescence()
      const nodes = [...net.cores.keys()]
      expect(checkRoutesAgainstBfs(nodes, net.connectionEdges(), net.lookup)).toEqual([])
      console.log(mode, net.entriesSent, net.messagesSent, net.events)
    })
    it(`random ${mode}`, () => {
      const g = randomConnectedGraph(30, 0.1, prng(5))
      const net = new TestNet({ seed: 2, allowed: (a, b) => g.edges.has(TestNet.key(a, b)), duplicate: 0.1, reorder: 0.2 })
      for (const id of g.nodes) net.add({ id, hubs: g.parent.has(id) ? [addressOf(g.parent.get(id)!)] : [], mode })
      net.runToQuiescence()
      const nodes = [...net.cores.keys()]
      expect(checkRoutesAgainstBfs(nodes, net.connectionEdges(), net.lookup)).toEqual([])
      expect(checkLoopFree(nodes, net.lookup)).toBeUndefined()
      console.log(mode, net.entriesSent, net.messagesSent, net.events, net.connectionEdges().length, g.edges.size)
    })
  }
})
