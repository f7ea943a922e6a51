import { describe, expect, it } from 'vitest'
import { DEFAULT_LIMITS, DEFAULT_TIMING } from '../src/index.ts'
import { KeyRing } from './keyring.ts'
import { Wires } from './wires.ts'

// Audit finding: the node ids a neighbour names in its update's slot table (`neighbourSlots`) are
// numbered in the receiver's node index (apply.ts `slotMapOf` -> `NodeIndex.intern`) and never
// released: only a destination that expires frees its number (expiry.ts). A member that sends
// updates naming fresh invented ids in its slot table fills the index (destinationsMax +
// 2 * neighboursMax numbers); from then on the victim takes no new destination ("no node number
// left", counted as destinationsRefused) and refuses every new connection ("neighbour limit
// reached", with one neighbour), until it restarts. The cost to the member: 2 tokens of its
// update bucket per message, 18 messages with the default limits.

/** V, and member M that has sent V enough slot tables of invented ids to fill V's node index. */
function attacked(): { wires: Wires; ring: KeyRing } {
    const ring = new KeyRing()
    const wires = new Wires()
    const V = wires.add({ id: 'V', records: ring.authority('V'), names: ['victim'] })
    ring.authority('M')
    V.connectionUp('M', wires.nowMs)
    wires.run()
    const slots = DEFAULT_LIMITS.neighboursMax
    const everyone = new Uint8Array(slots / 8).fill(0xff)
    const numbers = DEFAULT_LIMITS.destinationsMax + 2 * DEFAULT_LIMITS.neighboursMax
    for (let m = 0; m * slots < numbers + slots; m++) {
      wires.nowMs += 100
      const neighbourSlots = Array.from({ length: slots }, (_, i) => `ghost-${m}-${i}`)
      // M's own record (never charged to a share), its trans naming every slot.
      const ok = wires.deliver('M', 'V', { neighbourSlots, transSets: [everyone], entries: [{ ...ring.record('M', 2), trans: 0 }], ...(m === 0 ? { hello: { receiverSeq: undefined } } : {}) })
      expect(ok).toBe(true)
      wires.run()
    }
    expect(V.stats().peersDropped).toBe(0)
    return { wires, ring }
}

describe('audit: invented ids in a slot table', () => {
  it('a member naming fresh ids in its slot tables does not exhaust the node numbering of its neighbour', () => {
    const { wires, ring } = attacked()
    const V = wires.cores.get('V')!
    // An honest node C now connects to V and advertises itself.
    wires.add({ id: 'C', records: ring.authority('C'), names: ['honest'] })
    wires.connect('C', 'V')
    wires.run()
    expect(wires.closed).toEqual([])
    expect(V.isNeighbour('C')).toBe(true)
    expect(V.route('C')?.reachable).toBe(true)
    expect(V.resolve('honest')?.owner).toBe('C')
    // The member goes on: each time the numbering runs short, the invented ids are freed again.
    for (let m = 0; m < 40; m++) {
      wires.nowMs += 100
      wires.deliver('M', 'V', { neighbourSlots: Array.from({ length: DEFAULT_LIMITS.neighboursMax }, (_, i) => `again-${m}-${i}`), transSets: [], entries: [] })
      wires.run()
      expect(() => V.checkInvariants()).not.toThrow()
    }
    expect(V.route('C')?.reachable).toBe(true)
  })

  it('the numbers come back at the latest once the member is gone and its entry expired', () => {
    const { wires, ring } = attacked()
    const V = wires.cores.get('V')!
    wires.cut('V', 'M', 'the member leaves')
    for (let i = 0; i < 3; i++) wires.advance(DEFAULT_TIMING.unreachableRetentionMs)
    expect(V.route('M')).toBeUndefined()
    // An honest hub C with three nodes behind it connects to V.
    wires.add({ id: 'C', records: ring.authority('C'), names: ['honest'] })
    for (const d of ['D1', 'D2', 'D3']) {
      wires.add({ id: d, records: ring.authority(d), names: [`svc-${d}`] })
      wires.connect(d, 'C')
    }
    wires.run()
    wires.connect('C', 'V')
    wires.run()
    expect(wires.closed.filter((c) => c.startsWith('V-C'))).toEqual([])
    expect(V.isNeighbour('C')).toBe(true)
    for (const d of ['D1', 'D2', 'D3']) expect(V.resolve(`svc-${d}`)?.owner, d).toBe(d)
    expect(V.stats().destinationsRefused).toBe(0)
  })
})
