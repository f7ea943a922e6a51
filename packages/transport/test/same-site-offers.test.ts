import { afterEach, describe, expect, it } from 'vitest'
import { sameSite } from '../src/topology.ts'
import { TestNodes, addressOf, waitUntil, type TestNode } from './nodes.ts'

const entriesReceived = (node: TestNode): number => Number(/^phoenix_core_entries_received_total (\d+)$/m.exec(node.phoenix.metricsText())?.[1] ?? 0)

describe('equal offers to a node of the same site (CoreConfig.willConnect)', () => {
  it('sameSite: a declared site, else the one the addresses place the node in; unknown is no site', () => {
    const records: Record<string, { names: string[]; addresses: string[] }> = {
      a: { names: [], addresses: ['/ip4/10.1.2.3/tcp/1'] },
      b: { names: [], addresses: ['/ip4/10.1.2.9/tcp/1', '/ip4/127.0.0.1/tcp/1'] },
      c: { names: [], addresses: ['/ip4/10.1.3.3/tcp/1'] },
      // Declared sites win over addresses (the reserved name carries the id's tail).
      dx: { names: ['@site/lab/dx'], addresses: ['/ip4/10.1.3.4/tcp/1'] },
      ex: { names: ['@site/lab/ex'], addresses: ['/ip4/192.168.0.1/tcp/1'] },
      f: { names: [], addresses: ['not an address'] },
      g: { names: [], addresses: ['/ip4/127.0.0.1/tcp/2'] },
      h: { names: [], addresses: ['/ip6/::1/tcp/2'] },
    }
    const same = (x: string, y: string) => sameSite((id) => records[id], x, y)
    expect([same('a', 'b'), same('a', 'c'), same('c', 'dx'), same('dx', 'ex'), same('f', 'f'), same('a', 'nobody'), same('g', 'h')]).toEqual([true, false, false, true, false, false, true])
  })

  describe('real nodes on loopback (one site), several next hops (the default)', () => {
    const nodes = new TestNodes()
    afterEach(() => nodes.stopAll())

    it('a node connecting to a destination does not offer it to the others of its site: about 2 entries a pair, not 4 at 8 nodes (each hears every record from the hub and from its owner)', async () => {
      const hub = await nodes.start({ names: ['hub'] })
      const all = [hub]
      for (let i = 1; i < 8; i++) all.push(await nodes.start({ names: [`w${i}`], hubs: [addressOf(hub)] }))
      const n = all.length
      await waitUntil('every node a direct neighbour of every other', () => all.every((x) => x.phoenix.routes().filter((r) => r.reachable && r.nhops === 1).length === n - 1), 30_000)
      // Settled: no entry received for 2 s.
      let total = -1
      for (let i = 0; i < 15; i++) {
        const now = all.reduce((a, x) => a + entriesReceived(x), 0)
        if (now === total) break
        total = now
        await new Promise((resolve) => setTimeout(resolve, 2_000))
      }
      // Before: 4.05 a pair at 8 nodes, 19-25 at 30 (one process, loopback).
      expect(total / (n * (n - 1))).toBeLessThanOrEqual(3)
      expect(total / (n * (n - 1))).toBeGreaterThanOrEqual(1)
    }, 60_000)
  })
})
