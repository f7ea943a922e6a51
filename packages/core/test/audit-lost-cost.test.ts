import { afterEach, describe, expect, it, vi } from 'vitest'
import { PhoenixCore, type UpdateMessage } from '../src/index.ts'
import { RouteTable } from '../src/table.ts'

// Audit finding: an update that names lost neighbours (`UpdateMessage.lostNeighbours`) costs its
// receiver a pass over the whole routing table (`RouteTable.forgetLostHolders`), however little it
// carries, and the police charge it one token of the update bucket. A member sending empty updates
// that each name one node bought a table pass per token: ~1.6 ms each at 20,000 destinations, and
// a full inbox, applied in one step, held the event loop ~13 s (the neighbours' liveness bound is
// 6 s). Now a sender's lists in one step after its first are merged into one pass (lost.ts).

/** V with `destinations` destinations behind F, and member M connected. */
function victim(destinations: number): { V: PhoenixCore; nowMs: number } {
  const V = new PhoenixCore({ id: 'V' })
  let nowMs = 0
  V.connectionUp('F', nowMs)
  V.connectionUp('M', nowMs)
  for (let i = 0; i < destinations; i += 1024) {
    const entries = Array.from({ length: Math.min(1024, destinations - i) }, (_, j) => ({ destination: `d-${i + j}`, seq: 0, nhops: 1, names: [], addresses: [], trans: -1 }))
    V.receive('F', { neighbourSlots: [], transSets: [], entries, ...(i === 0 ? { hello: { receiverSeq: undefined } } : {}) }, (nowMs += 50))
    while (V.hasWork(nowMs)) V.step(nowMs)
  }
  V.receive('M', { neighbourSlots: [], transSets: [], entries: [{ destination: 'M', seq: 0, nhops: 0, names: [], addresses: [], trans: -1 }], hello: { receiverSeq: undefined } }, nowMs)
  while (V.hasWork(nowMs)) V.step(nowMs)
  return { V, nowMs }
}

describe('audit: lostNeighbours as a CPU lever', () => {
  afterEach(() => vi.restoreAllMocks())

  it('a flood of updates naming lost neighbours costs one or two table passes per step, not one per update', () => {
    const { V, nowMs } = victim(2_000)
    const passes = vi.spyOn(RouteTable.prototype, 'forgetLostHolders')
    const n = 1_000
    for (let k = 0; k < n; k++) {
      const message: UpdateMessage = { neighbourSlots: [], transSets: [], entries: [], lostNeighbours: [`d-${k}`, ...(k % 2 === 0 ? ['F'] : [])] }
      expect(V.receive('M', message, nowMs + 2_000)).toBe(true)
    }
    let steps = 0
    while (V.hasWork(nowMs + 2_000)) {
      V.step(nowMs + 2_000)
      steps++
    }
    expect(V.stats().peersDropped).toBe(0)
    expect(passes.mock.calls.length).toBeGreaterThan(0)
    expect(passes.mock.calls.length).toBeLessThanOrEqual(2 * steps)
    expect(passes.mock.calls.length).toBeLessThan(n / 10)
    // The merged pass names every node the updates did.
    const named = new Set<number>()
    for (const [, lost] of passes.mock.calls) lost.forEach((index) => named.add(index))
    expect(named.size).toBe(n + 1)
    expect(() => V.checkInvariants()).not.toThrow()
  })
})
