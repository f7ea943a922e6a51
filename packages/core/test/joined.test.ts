import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { JoinedNeighbours } from '../src/joined.ts'
import { NodeSet } from '../src/nodeset.ts'

describe('JoinedNeighbours: the neighbours joined since the last round, as bits', () => {
  it('holds what a Set<number> held through adds and clears, few or many, and lists those still neighbours ascending (what the round sorted)', () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant('add' as const), index: fc.nat({ max: 300 }) }),
      // Many joins in one round (past the 32 it keeps a list of), as after a dial phase.
      fc.record({ k: fc.constant('many' as const), from: fc.nat({ max: 300 }), count: fc.integer({ min: 1, max: 80 }) }),
      fc.record({ k: fc.constant('clear' as const) }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), fc.array(fc.nat({ max: 400 }), { maxLength: 200 }), (ops, neighbourIndices) => {
        const joined = new JoinedNeighbours()
        const model = new Set<number>()
        const neighbours = new NodeSet()
        for (const index of neighbourIndices) neighbours.add(index)
        const add = (index: number) => {
          joined.add(index)
          model.add(index)
        }
        for (const o of ops) {
          if (o.k === 'add') add(o.index)
          else if (o.k === 'many') for (let i = 0; i < o.count; i++) add(o.from + i)
          else {
            joined.clear()
            model.clear()
          }
          expect(joined.size).toBe(model.size)
          for (let index = 0; index <= 400; index++) expect(joined.has(index)).toBe(model.has(index))
          expect(joined.inAscending(neighbours)).toEqual([...model].filter((index) => neighbours.has(index)).sort((a, b) => a - b))
        }
      }),
    )
  })
})
