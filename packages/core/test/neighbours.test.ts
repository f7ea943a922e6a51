import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { NeighbourTable } from '../src/neighbours.ts'
import { NodeIndex } from '../src/nodeindex.ts'

describe('NeighbourTable: slots', () => {
  it('a new connection takes the lowest free slot (the trans sets on the wire stay narrow), whatever closed before', () => {
    // Each step opens a connection to a node not connected (true) or closes one (false, picked by number).
    const steps = fc.array(fc.tuple(fc.boolean(), fc.nat()), { maxLength: 200 })
    fc.assert(
      fc.property(steps, (ops) => {
        const numbering = new NodeIndex(10_000)
        const table = new NeighbourTable(numbering)
        const open = new Map<string, number>()
        let next = 0
        for (const [opens, pick] of ops) {
          if (opens || open.size === 0) {
            const taken = new Set(open.values())
            let lowest = 0
            while (taken.has(lowest)) lowest++
            const id = `n${next++}`
            const neighbour = table.add(id, numbering.intern(id)!, 'optimized')
            expect(neighbour.slot).toBe(lowest)
            open.set(id, neighbour.slot)
          } else {
            const id = [...open.keys()][pick % open.size]!
            expect(table.remove(id)?.slot).toBe(open.get(id))
            open.delete(id)
          }
          // Found by id, and iterated in connection order (a send round's order follows it).
          expect(table.ids()).toEqual([...open.keys()])
          for (const id of open.keys()) expect(table.get(id)?.slot).toBe(open.get(id))
          table.checkInvariants(1_000)
        }
      }),
    )
  })
})
