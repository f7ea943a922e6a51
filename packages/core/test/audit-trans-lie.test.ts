import { describe, expect, it } from 'vitest'
import { DEFAULT_TIMING } from '../src/index.ts'
import { KeyRing } from './keyring.ts'
import { Wires } from './wires.ts'

// Audit finding: a received trans set was taken on the sender's word (apply.ts `MessageSets.rcpt`,
// `RouteTable.adopt`: rcpt := {sender} ∪ e.trans), like `allServed`, and nothing withdrew it while
// the sender stayed connected and said no lostNeighbours. A member that offers a destination first
// (at the "small false distance" the README admits, 1 hop) with a trans set naming the receiver's
// other neighbours made the receiver count them as holders: it never sent them the destination.
// When an honest neighbour then offered the same route (equal hops: noted, not adopted), rcpt was
// kept. A node behind the receiver (a leaf whose only neighbour it is) never learned the
// destination, nor its names, although the receiver held an honest route: beyond "attracts
// traffic", a third, honest node ended with a table that lacked a route and never healed.
// Now, in a network found through hubs, only our hubs' trans sets and an owner's for its own
// record name holders (vouching.ts); a member's names the member alone.

const HUB = 'addr:H'

/** D behind hub H, leaf X behind V (V's hub is H), member M a neighbour of H and V, V just connected to H. */
function network() {
  const ring = new KeyRing()
  const wires = new Wires()
  const config = (id: string, names: string[] = []) => ({ id, records: ring.authority(id), names, ...(id === 'X' ? {} : { hubs: [HUB] }), ...(id === 'H' ? { addresses: [HUB] } : {}) })
  for (const id of ['H', 'V', 'X']) wires.add(config(id))
  wires.add(config('D', ['svc']))
  wires.cores.get('D')!.connectionUp('H', wires.nowMs, HUB)
  wires.cores.get('H')!.connectionUp('D', wires.nowMs)
  wires.connect('V', 'X') // X is a leaf behind V
  wires.run()
  // M, a member, is a neighbour of H (so it has D's signed record) and of V.
  ring.authority('M')
  for (const at of ['H', 'V']) {
    wires.cores.get(at)!.connectionUp('M', wires.nowMs)
    wires.deliver('M', at, { neighbourSlots: [], transSets: [], entries: [ring.record('M', 2)], hello: { receiverSeq: undefined } })
  }
  wires.run()
  const d = wires.sentTo.get('M')!.flatMap((m) => m.entries).find((e) => e.destination === 'D')!
  // V reaches its hub H.
  wires.cores.get('V')!.connectionUp('H', wires.nowMs, HUB)
  wires.cores.get('H')!.connectionUp('V', wires.nowMs)
  return { ring, wires, d }
}

describe('audit: a trans set that lies', () => {
  it("a member's trans set naming our other neighbours does not keep a destination from them for good", () => {
    const { wires, d } = network()
    // Before H's table arrives, M offers D at 1 hop, its trans naming X.
    wires.deliver('M', 'V', { neighbourSlots: ['X'], transSets: [Uint8Array.of(1)], entries: [{ ...d, nhops: 1, trans: 0 }] })
    wires.run()
    for (let i = 0; i < 3; i++) wires.advance(DEFAULT_TIMING.unreachableRetentionMs) // long after
    const V = wires.cores.get('V')!
    expect(V.route('D')?.reachable).toBe(true)
    expect(V.route('D')?.alternates).toContain('H') // V holds an honest route to D
    const X = wires.cores.get('X')!
    expect(X.route('D')?.reachable ?? false, 'X has a route to D').toBe(true)
    expect(X.resolve('svc')?.owner).toBe('D')
  })

  it("our hub's trans set and an owner's for its own record still name holders", () => {
    const { ring, wires, d } = network()
    const V = wires.cores.get('V')!
    // The hub says X holds D (a hub's word is taken): V does not send D to X.
    wires.deliver('H', 'V', { neighbourSlots: ['X'], transSets: [Uint8Array.of(1)], entries: [{ ...d, nhops: 1, trans: 0 }] })
    // M's own record at a newer number, its trans naming X (the owner's word, of its own record).
    wires.deliver('M', 'V', { neighbourSlots: ['X'], transSets: [Uint8Array.of(1)], entries: [{ ...ring.record('M', 4), trans: 0 }] })
    wires.run()
    expect(V.route('D')?.reachable).toBe(true)
    expect(V.route('M')?.reachable).toBe(true)
    const X = wires.cores.get('X')!
    expect(X.route('D'), 'V did not send X the entry for D').toBeUndefined()
    expect(X.route('M')?.seq, "V did not send X M's newer record").toBe(2)
  })
})
