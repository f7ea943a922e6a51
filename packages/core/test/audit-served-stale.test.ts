import { describe, expect, it } from 'vitest'
import { DEFAULT_TIMING, PhoenixCore, type RouteAdvert } from '../src/index.ts'

// Audit finding (found by fuzzing `receive` with crafted updates and checking invariants after
// every step): a hub's word that its neighbours are served (`allServed`) is kept as a set of node
// indices per hub (`NeighbourTable.servedBy`, apply.ts), and expiry (expiry.ts) releases the
// indices of forgotten destinations without scrubbing that set (it scrubs trans and rcpt only,
// `RouteTable.forgetIndices`). The next change of a route to one of the hub's neighbours puts the
// stale set into rcpt (`hubsServe`): rcpt then names a released index, which the core's own
// invariant forbids ("trans/rcpt name only known nodes"), and once the index is handed to another
// node (a new neighbour or destination) that node counts as holding entries it never got, so they
// are never sent to it. It takes a hub that says allServed and then says nothing about the lost
// node (no lostNeighbours) for a retention: a member can, an honest hub whose update is lost
// with a connection may.

const own = (id: string, seq = 0): RouteAdvert => ({ destination: id, seq, nhops: 0, names: [], addresses: [], trans: -1 })
const via = (id: string, seq: number): RouteAdvert => ({ destination: id, seq, nhops: 1, names: [], addresses: [], trans: -1 })

describe('audit: a hub word kept past expiry', () => {
  it("expiry scrubs a hub's served set with the indices it releases", () => {
    let nowMs = 0
    const V = new PhoenixCore({ id: 'V' })
    V.connectionUp('H', nowMs)
    const step = () => {
      while (V.hasWork(nowMs)) V.step(nowMs)
      V.checkInvariants()
    }
    // H says it serves its neighbours V, X and Z.
    V.receive('H', { neighbourSlots: ['V', 'X', 'Z'], transSets: [], entries: [own('H'), via('X', 0), via('Z', 0)], hello: { receiverSeq: undefined }, allServed: true }, nowMs)
    step()
    // X is lost (H retracts it), and is forgotten one retention later: its index is released.
    V.receive('H', { neighbourSlots: ['V', 'X', 'Z'], transSets: [], entries: [via('X', 1)], allServed: true }, (nowMs += 100))
    step()
    for (let i = 0; i < 3; i++) {
      nowMs += DEFAULT_TIMING.unreachableRetentionMs
      step()
    }
    expect(V.route('X')).toBeUndefined()
    // Z issues a new record; H relays it (its slot table unchanged).
    V.receive('H', { neighbourSlots: ['V', 'X', 'Z'], transSets: [], entries: [via('Z', 2)] }, (nowMs += 100))
    expect(() => step()).not.toThrow()
  })
})
