import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { NODES_MAX } from '../src/constants.ts'
import { LinkTable } from '../src/links.ts'

/** What a `Connection` object per link and a `Map` per node (peer -> connection, in insertion order) held. */
interface LinkModel {
  readonly a: number
  readonly b: number
  open: boolean
  refs: number
  toBMs: number
}

const NODES = 12

describe('LinkTable against a Connection object per link and a Map per node', () => {
  it('finds, lists in opening order and counts every open connection, and reuses no row an event still names, under churn', () => {
    const op = fc.oneof(
      // Opens weigh most, so that the rows and the pair index grow (and are rebuilt) often.
      { arbitrary: fc.record({ k: fc.constant('open' as const), u: fc.nat({ max: NODES - 1 }), v: fc.nat({ max: NODES - 1 }), inter: fc.boolean() }), weight: 5 },
      fc.record({ k: fc.constant('close' as const), pick: fc.nat() }),
      fc.record({ k: fc.constant('retain' as const), pick: fc.nat() }),
      fc.record({ k: fc.constant('release' as const), pick: fc.nat() }),
      fc.record({ k: fc.constant('send' as const), pick: fc.nat(), atMs: fc.double({ min: 0, max: 1e6, noNaN: true }) }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300, size: 'max' }), (ops) => {
        const table = new LinkTable(NODES)
        // Every connection ever opened by its row while the row is not free, and each node's Map.
        const bySlot = new Map<number, LinkModel>()
        const perNode = Array.from({ length: NODES }, () => new Map<number, number>())
        for (const o of ops) {
          const live = [...bySlot.entries()]
          const [slot, link] = live.length === 0 ? [-1, undefined] : live[('pick' in o ? o.pick : 0) % live.length]!
          if (o.k === 'open') {
            if (o.u === o.v || perNode[o.u]!.has(o.v)) continue
            const opened = table.open(o.u, o.v, o.inter)
            expect(bySlot.has(opened), 'a row an event names or an open connection holds is not reused').toBe(false)
            bySlot.set(opened, { a: o.u, b: o.v, open: true, refs: 0, toBMs: 0 })
            perNode[o.u]!.set(o.v, opened)
            perNode[o.v]!.set(o.u, opened)
            expect([table.isUsed(opened), table.isInter(opened)]).toEqual([true, o.inter])
          } else if (link === undefined) {
            continue
          } else if (o.k === 'close') {
            if (!link.open) continue
            table.close(slot)
            link.open = false
            perNode[link.a]!.delete(link.b)
            perNode[link.b]!.delete(link.a)
          } else if (o.k === 'retain') {
            table.retain(slot)
            link.refs++
          } else if (o.k === 'release') {
            if (link.refs === 0) continue
            table.release(slot)
            link.refs--
          } else {
            table.txFreeToBMs[slot] = o.atMs
            link.toBMs = o.atMs
          }
          if (link !== undefined && !link.open && link.refs === 0) bySlot.delete(slot)
          // One comparison per step (an expect per value made the property slow).
          const rows = [...bySlot.keys()]
          const nodes = Array.from({ length: NODES }, (_, u) => u)
          const listed = (u: number) => {
            const out: [number, number][] = []
            table.forEachOf(u, (peer, s) => out.push([peer, s]))
            return out
          }
          expect({
            rows: rows.map((s) => [table.isUsed(s), table.a[s], table.b[s], table.isOpen(s), table.txFreeToBMs[s]]),
            lists: nodes.map(listed),
            degrees: nodes.map((u) => table.degree(u)),
            between: nodes.map((u) => nodes.map((v) => table.slotBetween(u, v))),
          }).toEqual({
            rows: rows.map((s) => bySlot.get(s)!).map((m) => [true, m.a, m.b, m.open, m.toBMs]),
            lists: nodes.map((u) => [...perNode[u]!]),
            degrees: nodes.map((u) => perNode[u]!.size),
            between: nodes.map((u) => nodes.map((v) => perNode[u]!.get(v) ?? -1)),
          })
          table.checkInvariants()
        }
      }),
    )
  })
})

describe('LinkTable: the pair index at NODES_MAX nodes (one cell per node pair)', () => {
  it('finds each connection from either end and no other pair, at the first and last nodes and next to them', () => {
    const table = new LinkTable(NODES_MAX)
    const last = NODES_MAX - 1
    const pairs: [number, number][] = [
      [0, 1],
      [last, last - 1],
      [0, last],
      [1, last],
      [last - 1, 0],
      [12_345, 12_346],
    ]
    const slots = pairs.map(([u, v]) => table.open(u, v, false))
    pairs.forEach(([u, v], i) => expect([table.slotBetween(u, v), table.slotBetween(v, u)]).toEqual([slots[i], slots[i]]))
    // Neighbouring cells stay empty: (1, 2) is the cell after (0, 2) and before (0, 3); (last, 2) two after (last, 0).
    for (const [u, v] of [[0, 2], [1, 2], [0, 3], [last, 2], [last - 2, last], [12_344, 12_346]] as const) expect(table.slotBetween(u, v)).toBe(-1)
    table.close(slots[2]!)
    expect([table.slotBetween(0, last), table.slotBetween(1, last), table.slotBetween(last - 1, 0)]).toEqual([-1, slots[3], slots[4]])
    table.checkInvariants()
  })
})
