import { describe, expect, it } from 'vitest'
import { DEFAULT_TIMING } from '../src/index.ts'
import { KeyRing } from './keyring.ts'
import { Wires } from './wires.ts'

// Audit finding: the core README said of replays, "a node that has forgotten a destination (after
// unreachableRetentionMs) could accept a replay of its last record until the owner's next record
// arrives; the retention time bounds that window". For an owner that crashed for good the next
// record never arrives: a member that kept the dead node's last signed record replays it once,
// after the entry expired, at a small distance. It is stored as a new destination (nothing older
// is known to refuse it), reachable through the member, and a reachable entry never expires, so
// the dead node is routed to the member and holds its names for as long as the member stays: a
// replacement started without the old key (a job manager restarting a worker) never gets the name
// (its record is refused whole wherever the replay was stored), and the name's traffic goes to the
// member. The window was not bounded by the retention time, nor by anything else. Now each node
// keeps the last number of a destination it forgot (tombstones.ts) and refuses a record at or
// below it, unless the owner itself advertises it (it restarted): that is answered until the owner's
// number passes the tombstone.

function world() {
  const ring = new KeyRing()
  const wires = new Wires()
  const config = (id: string, names: string[] = []) => ({ id, records: ring.authority(id), names })
  return { retentionMs: DEFAULT_TIMING.unreachableRetentionMs, ring, wires, config }
}

describe('audit: a dead node replayed after it was forgotten', () => {
  it("a member's replay of a crashed node's last record does not hold the node's name for good", () => {
    const { retentionMs, ring, wires, config } = world()
    wires.add(config('H'))
    wires.add(config('A'))
    wires.add(config('D', ['worker-7']))
    wires.connect('H', 'A')
    wires.connect('H', 'D')
    ring.authority('M')
    wires.cores.get('H')!.connectionUp('M', wires.nowMs)
    wires.deliver('M', 'H', { neighbourSlots: [], transSets: [], entries: [ring.record('M', 2)], hello: { receiverSeq: undefined } })
    wires.run()
    // What M heard from H: D's signed record, as every neighbour of H does.
    const heard = wires.sentTo.get('M')!.flatMap((m) => m.entries).find((e) => e.destination === 'D')!
    expect(heard.seq).toBe(0)

    // D crashes for good; every node forgets it one retention later.
    wires.cut('H', 'D', 'crash')
    wires.cores.delete('D')
    for (let i = 0; i < 3; i++) wires.advance(retentionMs)
    for (const id of ['H', 'A']) expect(wires.cores.get(id)!.route('D'), id).toBeUndefined()

    // M replays D's last record at 1 hop, once.
    wires.deliver('M', 'H', { neighbourSlots: [], transSets: [], entries: [{ ...heard, nhops: 1, trans: -1 }] })
    wires.run()
    // Several retentions later, with nothing more from M (it just stays connected):
    for (let i = 0; i < 3; i++) wires.advance(retentionMs)
    for (const id of ['H', 'A']) expect(wires.cores.get(id)!.route('D')?.reachable ?? false, `${id} routes the dead D`).toBe(false)
    // A replacement without D's key claims the name, and gets it.
    wires.add(config('R', ['worker-7']))
    wires.connect('H', 'R')
    wires.run()
    wires.advance(DEFAULT_TIMING.nameContentionMs * 2)
    for (const id of ['H', 'A', 'R']) expect(wires.cores.get(id)!.resolve('worker-7')?.owner, id).toBe('R')
  })

  it('a node forgotten everywhere that restarts with its number forgotten is reachable again, its names held', () => {
    const { retentionMs, wires, config } = world()
    wires.add(config('H'))
    wires.add(config('A'))
    const D = wires.add(config('D', ['worker-7']))
    wires.connect('H', 'A')
    wires.connect('H', 'D')
    wires.run()
    // D's number grows (each change of its names is a new record), then it crashes at 6, forgotten at 7.
    D.addName('a')
    wires.run()
    D.removeName('a')
    wires.run()
    D.addName('b')
    wires.run()
    expect(wires.cores.get('A')!.route('D')?.seq).toBe(6)
    wires.cut('H', 'D', 'crash')
    wires.cores.delete('D')
    for (let i = 0; i < 3; i++) wires.advance(retentionMs)
    for (const id of ['H', 'A']) expect(wires.cores.get(id)!.route('D'), id).toBeUndefined()

    // It restarts with its key and names, at seq 0, and reaches its hub.
    const again = wires.add(config('D', ['worker-7', 'b']))
    wires.connect('H', 'D')
    wires.run()
    expect(again.route('D')?.seq, "D's number passed its tombstone (7)").toBe(8)
    for (const id of ['H', 'A']) {
      expect(wires.cores.get(id)!.route('D')).toMatchObject({ reachable: true, seq: 8 })
      expect(wires.cores.get(id)!.resolve('worker-7')?.owner, id).toBe('D')
    }
    for (const core of wires.cores.values()) core.checkInvariants()
  })
})
