import { describe, expect, it } from 'vitest'
import { DEFAULT_TIMING, type CoreLimits } from '../src/index.ts'
import { Tombstones } from '../src/tombstones.ts'
import { KeyRing } from './keyring.ts'
import { Wires } from './wires.ts'

// A process restarted by a job manager comes back with its key and names and sequence number 0.
// Those that forgot it (unreachableRetentionMs after its loss) keep a tombstone of its last number
// (tombstones.ts) and refuse its record at or below it; its hub answered it with its own record
// withdrawn one number up, so it climbed two numbers per round trip: a node that had reached
// seq 1,000 stayed unreachable for 500 round trips. Now the tombstone keeps the last record held,
// and the answer is that record withdrawn (the owner's own signature covers it): the owner issues
// the next number above the tombstone, in one round trip.

const TOMBSTONE_SEQ = 1_000

function world(limits: Partial<CoreLimits> = {}, signed = true) {
  const ring = new KeyRing()
  const wires = new Wires()
  const config = (id: string, names: string[] = [], initialSeq = 0) => ({ id, ...(signed ? { records: ring.authority(id) } : {}), names, initialSeq, limits })
  wires.add(config('H'))
  wires.add(config('A'))
  wires.connect('H', 'A')
  // D has reached seq 1,000 (a long-lived node's number grows with each change of its record).
  wires.add(config('D', ['worker-7'], TOMBSTONE_SEQ))
  wires.connect('H', 'D')
  wires.run()
  expect(wires.cores.get('A')!.route('D')?.seq).toBe(TOMBSTONE_SEQ)
  // It crashes; H withdraws it at 1,001.
  wires.cut('H', 'D', 'crash')
  wires.cores.delete('D')
  wires.run()
  return { wires, config }
}

/** D restarts at seq 0 with its key and name and reconnects to H; returns the updates H sent it until all is quiet. */
function restart(wires: Wires, config: ReturnType<typeof world>['config'], names = ['worker-7']): number {
  wires.delivered.clear()
  wires.add(config('D', names))
  wires.connect('H', 'D')
  wires.run()
  return wires.delivered.get('H>D') ?? 0
}

function forget(wires: Wires): void {
  for (let i = 0; i < 3; i++) wires.advance(DEFAULT_TIMING.unreachableRetentionMs)
  for (const id of ['H', 'A']) expect(wires.cores.get(id)!.route('D'), `${id} forgot D`).toBeUndefined()
}

function expectReachable(wires: Wires, seq: number, name = 'worker-7'): void {
  expect(wires.cores.get('D')!.ownSeq).toBe(seq)
  for (const id of ['H', 'A']) {
    expect(wires.cores.get(id)!.route('D'), id).toMatchObject({ reachable: true, seq })
    expect(wires.cores.get(id)!.resolve(name)?.owner, id).toBe('D')
  }
  for (const core of wires.cores.values()) core.checkInvariants()
}

describe('a restarted node below its tombstone', () => {
  it('forgotten at seq 1,001, it restarts at 0 and is reachable after a bounded number of updates', () => {
    const { wires, config } = world()
    forget(wires)
    const updates = restart(wires, config)
    // The hello, the answer (its record of seq 1,000 withdrawn at 1,001), and the routes that follow its new record.
    expect(updates, 'updates H sent D').toBeLessThanOrEqual(4)
    expectReachable(wires, TOMBSTONE_SEQ + 2)
  })

  it('not yet forgotten, it restarts at 0 and is reachable in one round trip too', () => {
    const { wires, config } = world()
    wires.advance(DEFAULT_TIMING.unreachableRetentionMs / 4)
    const updates = restart(wires, config)
    expect(updates, 'updates H sent D').toBeLessThanOrEqual(4)
    expectReachable(wires, TOMBSTONE_SEQ + 2)
  })

  it('restarted with another name, it is answered with its old record and takes the new name', () => {
    const { wires, config } = world()
    forget(wires)
    const updates = restart(wires, config, ['worker-8'])
    expect(updates, 'updates H sent D').toBeLessThanOrEqual(4)
    expectReachable(wires, TOMBSTONE_SEQ + 2, 'worker-8')
    for (const id of ['H', 'A']) expect(wires.cores.get(id)!.resolve('worker-7'), id).toBeUndefined()
  })

  it('with unsigned records (the simulator) it is answered with its own record at the tombstone, in one round trip too', () => {
    const { wires, config } = world({}, false)
    forget(wires)
    const updates = restart(wires, config)
    expect(updates, 'updates H sent D').toBeLessThanOrEqual(4)
    expectReachable(wires, TOMBSTONE_SEQ + 2)
  })

  it('its kept record naming a name another node holds now, it is answered one number up as before, and reachable', () => {
    const { wires, config } = world()
    forget(wires)
    // R, another node, takes worker-7 once D is forgotten.
    wires.add(config('R', ['worker-7']))
    wires.connect('H', 'R')
    wires.run()
    wires.advance(DEFAULT_TIMING.nameContentionMs * 2)
    expect(wires.cores.get('H')!.resolve('worker-7')?.owner).toBe('R')
    const updates = restart(wires, config, ['worker-8'])
    // D's record of seq 1,000 claims worker-7: H may not store it, so it answers D's own record at 1, 3, 5, …
    expect(updates, 'updates H sent D: one answer per two numbers').toBeGreaterThan(TOMBSTONE_SEQ / 2)
    expectReachable(wires, TOMBSTONE_SEQ + 2, 'worker-8')
    expect(wires.cores.get('A')!.resolve('worker-7')?.owner).toBe('R')
  })

  it('without the kept record (no budget for it) it still passes the tombstone, one round trip per two numbers', () => {
    const { wires, config } = world({ tombstoneRecordBytesMax: 0 })
    forget(wires)
    const updates = restart(wires, config)
    expect(updates, 'updates H sent D: one answer per two numbers').toBeGreaterThan(TOMBSTONE_SEQ / 2)
    expectReachable(wires, TOMBSTONE_SEQ + 2)
  })
})

describe('Tombstones: the records kept', () => {
  const record = (name: string) => ({ names: [name], addresses: ['/ip4/10.0.0.1/tcp/4001'], signature: new Uint8Array(64).fill(1) })
  /** The owner's own record at seq 0, as it advertises itself after a restart. */
  const restarted = (destination: string, signature = new Uint8Array(64).fill(2)) => ({ destination, seq: 0, nhops: 0, names: ['new'], addresses: [], trans: -1, signature })

  it('past tombstoneRecordBytesMax the oldest drop their record and keep their number', () => {
    const tombstones = new Tombstones()
    const bytes = 128 + 2 * ('n0'.length + '/ip4/10.0.0.1/tcp/4001'.length) + 64
    const limits = { tombstonesMax: 10, tombstoneRecordBytesMax: 3 * bytes }
    for (let i = 0; i < 5; i++) tombstones.forgotten(`n${i}`, 10 + 2 * i + 1, record(`n${i}`), limits)
    tombstones.checkInvariants(limits)
    expect(tombstones.size).toBe(5)
    expect(tombstones.recordsKept).toBe(3)
    expect(tombstones.withdrawnRecord(restarted('n0')), 'the oldest dropped its record').toBeUndefined()
    expect(tombstones.withdrawnRecord(restarted('n4'))).toMatchObject({ destination: 'n4', seq: 19, names: ['n4'] })
    // Its number still refuses a replay.
    expect(tombstones.verdict({ destination: 'n0', seq: 10, nhops: 1, names: [], addresses: [], trans: -1 }, 'm')).toBe('refuse')
  })

  it('a record kept at an even number is answered withdrawn one up; past tombstonesMax the oldest goes with its record', () => {
    const tombstones = new Tombstones()
    const limits = { tombstonesMax: 2, tombstoneRecordBytesMax: 1 << 20 }
    tombstones.forgotten('a', 40, record('a'), limits)
    tombstones.forgotten('b', 41, record('b'), limits)
    expect(tombstones.withdrawnRecord(restarted('a'))?.seq).toBe(41)
    expect(tombstones.withdrawnRecord(restarted('b'))?.seq).toBe(41)
    tombstones.forgotten('c', 7, record('c'), limits)
    tombstones.checkInvariants(limits)
    expect(tombstones.withdrawnRecord(restarted('a'))).toBeUndefined()
    expect(tombstones.recordsKept).toBe(2)
  })

  it('an unsigned record is not kept: the owner is answered with its own record at the tombstone', () => {
    const tombstones = new Tombstones()
    const limits = { tombstonesMax: 2, tombstoneRecordBytesMax: 1 << 20 }
    tombstones.forgotten('u', 51, { ...record('u'), signature: new Uint8Array(0) }, limits)
    expect(tombstones.recordsKept).toBe(0)
    expect(tombstones.withdrawnRecord(restarted('u', new Uint8Array(0)))).toMatchObject({ destination: 'u', seq: 51, names: ['new'] })
    expect(tombstones.withdrawnRecord(restarted('u')), 'a signed owner needs its signed record').toBeUndefined()
  })
})

describe('a restarted node whose neighbour holds no tombstone of it, behind nodes that do', () => {
  // A job restarts its hub and its workers: the hub H has forgotten everything, so it takes the
  // worker D's record at seq 0 as new and relays it; G and M, which stayed, forgot D at 1,001 and
  // keep its tombstone. G is not D's neighbour, so it refused D's record as a replay, for as long
  // as D's number stayed below 1,001: D's number moves only when its record changes, so M never
  // reached D (item 2 of the robustness list). Now G answers the relayed record with the record it
  // kept, withdrawn at the tombstone's number: it goes back to D, which issues the next number.
  function chain(limits: Partial<CoreLimits> = {}) {
    const ring = new KeyRing()
    const wires = new Wires()
    const config = (id: string, names: string[] = [], initialSeq = 0) => ({ id, records: ring.authority(id), names, initialSeq, limits })
    for (const id of ['M', 'G', 'H']) wires.add(config(id))
    wires.connect('M', 'G')
    wires.connect('G', 'H')
    wires.add(config('D', ['worker-7'], TOMBSTONE_SEQ))
    wires.connect('H', 'D')
    wires.run()
    expect(wires.cores.get('M')!.resolve('worker-7')?.owner).toBe('D')
    wires.cut('H', 'D', 'crash')
    wires.cores.delete('D')
    wires.run()
    for (let i = 0; i < 3; i++) wires.advance(DEFAULT_TIMING.unreachableRetentionMs)
    for (const id of ['M', 'G', 'H']) expect(wires.cores.get(id)!.route('D'), `${id} forgot D`).toBeUndefined()
    // H restarts, its tombstones gone; then D restarts at 0 behind it.
    wires.cut('G', 'H', 'crash')
    wires.cores.delete('H')
    wires.run()
    wires.add(config('H'))
    wires.connect('G', 'H')
    wires.run()
    wires.delivered.clear()
    wires.add(config('D', ['worker-7']))
    wires.connect('H', 'D')
    wires.run()
    return wires
  }

  it('is reachable from every node after a bounded number of updates, at a number above the tombstone', () => {
    const wires = chain()
    expect(wires.cores.get('D')!.ownSeq).toBe(TOMBSTONE_SEQ + 2)
    for (const id of ['M', 'G', 'H']) {
      expect(wires.cores.get(id)!.route('D'), id).toMatchObject({ reachable: true, seq: TOMBSTONE_SEQ + 2 })
      expect(wires.cores.get(id)!.resolve('worker-7')?.owner, id).toBe('D')
    }
    let updates = 0
    for (const count of wires.delivered.values()) updates += count
    expect(updates, 'updates sent after D restarted').toBeLessThanOrEqual(20)
    for (const core of wires.cores.values()) core.checkInvariants()
  })

  it("a dead node's replay taken by a node that never knew it is withdrawn there once it reaches a node with the tombstone", () => {
    // The audit's replay (audit-replay-dead.test.ts), to a node H that joined after D was
    // forgotten (it holds no tombstone): H took it as new and routed D's name to the member P for
    // good. Now H's neighbour G, which keeps D's tombstone, answers H's relay with the withdrawal.
    const ring = new KeyRing()
    const wires = new Wires()
    const config = (id: string, names: string[] = []) => ({ id, records: ring.authority(id), names })
    wires.add(config('G'))
    wires.add(config('D', ['worker-7']))
    wires.connect('G', 'D')
    ring.authority('P')
    wires.cores.get('G')!.connectionUp('P', wires.nowMs)
    wires.deliver('P', 'G', { neighbourSlots: [], transSets: [], entries: [ring.record('P', 2)], hello: { receiverSeq: undefined } })
    wires.run()
    const heard = wires.sentTo.get('P')!.flatMap((m) => m.entries).find((e) => e.destination === 'D')!
    wires.cut('G', 'D', 'crash')
    wires.cores.delete('D')
    for (let i = 0; i < 3; i++) wires.advance(DEFAULT_TIMING.unreachableRetentionMs)
    expect(wires.cores.get('G')!.route('D')).toBeUndefined()
    // H joins, connected to G and to P; P replays D's last record to it at 1 hop, once.
    wires.add(config('H'))
    wires.connect('G', 'H')
    wires.cores.get('H')!.connectionUp('P', wires.nowMs)
    wires.deliver('P', 'H', { neighbourSlots: [], transSets: [], entries: [ring.record('P', 2)], hello: { receiverSeq: undefined } })
    wires.run()
    wires.deliver('P', 'H', { neighbourSlots: [], transSets: [], entries: [{ ...heard, nhops: 1, trans: -1 }] })
    wires.run()
    expect(wires.cores.get('H')!.route('D')?.reachable ?? false, 'H routes the dead D').toBe(false)
    for (let i = 0; i < 3; i++) wires.advance(DEFAULT_TIMING.unreachableRetentionMs)
    // A replacement without D's key claims the name, and gets it at both.
    wires.add(config('R', ['worker-7']))
    wires.connect('H', 'R')
    wires.run()
    wires.advance(DEFAULT_TIMING.nameContentionMs * 2)
    for (const id of ['G', 'H', 'R']) expect(wires.cores.get(id)!.resolve('worker-7')?.owner, id).toBe('R')
    for (const core of wires.cores.values()) core.checkInvariants()
  })
})

describe('answering relayed replays is bounded per neighbour', () => {
  it("a member that relays many replays makes a node hold at most its share of them again (destinationsPerNeighbourMax)", () => {
    const ring = new KeyRing()
    const wires = new Wires()
    const limits = { destinationsPerNeighbourMax: 3 }
    const config = (id: string, names: string[] = []) => ({ id, records: ring.authority(id), names, limits })
    wires.add(config('G'))
    ring.authority('P')
    wires.cores.get('G')!.connectionUp('P', wires.nowMs)
    wires.deliver('P', 'G', { neighbourSlots: [], transSets: [], entries: [ring.record('P', 2)], hello: { receiverSeq: undefined } })
    const dead = Array.from({ length: 10 }, (_, i) => `D${i}`)
    for (const id of dead) {
      wires.add(config(id, [`worker-${id}`]))
      wires.connect('G', id)
    }
    wires.run()
    const heard = wires.sentTo.get('P')!.flatMap((m) => m.entries).filter((e) => dead.includes(e.destination))
    expect(new Set(heard.map((e) => e.destination)).size).toBe(10)
    for (const id of dead) {
      wires.cut('G', id, 'crash')
      wires.cores.delete(id)
    }
    for (let i = 0; i < 3; i++) wires.advance(DEFAULT_TIMING.unreachableRetentionMs)
    const g = wires.cores.get('G')!
    for (const id of dead) expect(g.route(id)).toBeUndefined()
    const latest = new Map(heard.map((e) => [e.destination, e]))
    wires.deliver('P', 'G', { neighbourSlots: [], transSets: [], entries: [...latest.values()].map((e) => ({ ...e, nhops: 1, trans: -1 })) })
    wires.run()
    const held = dead.filter((id) => g.route(id) !== undefined)
    expect(held.length, 'entries G holds again for the replays').toBe(limits.destinationsPerNeighbourMax)
    for (const id of held) expect(g.route(id)?.reachable).toBe(false)
    g.checkInvariants()
  })
})
