import { describe, expect, it } from 'vitest'
import { ownerHash } from '../src/fanout.ts'
import { helloWithRecord, hubWithCoHubAndJoiners } from './cohub-hub.ts'
import { PhoenixCore, SharedNumbering, type RouteAdvert, type StepResult, type UpdateMessage } from '../src/index.ts'

const record = (destination: string, nhops = 0, trans = -1): RouteAdvert => ({ destination, seq: 0, nhops, names: [], addresses: [`addr:${destination}`], trans })
/** A trans set naming `slots` of a slot table `width` long. */
function bitsOf(width: number, slots: readonly number[]): Uint8Array {
  const bits = new Uint8Array(Math.ceil(width / 8))
  for (const slot of slots) bits[slot >> 3]! |= 1 << (slot & 7)
  return bits
}
const sends = (step: StepResult): { to: string; message: UpdateMessage }[] => step.effects.flatMap((e) => (e.type === 'send' ? [{ to: e.to, message: e.message }] : []))

/** Runs `core` until it has nothing to do at `nowMs`; every update it sent. */
function drain(core: PhoenixCore, nowMs: number): { to: string; message: UpdateMessage }[] {
  const out: { to: string; message: UpdateMessage }[] = []
  for (let i = 0; i < 100 && core.hasWork(nowMs); i++) out.push(...sends(core.step(nowMs)))
  return out
}

/**
 * A hub's update to a node says that every neighbour of the hub is served (`UpdateMessage.allServed`):
 * the node then knows its peers hold what the hub relays at 2 hops, though another hub (a co-hub)
 * serves them, and does not announce them its direct routes to each other (simulations/ANALYSIS.md:
 * at 3,600 processes in three subnets, 0.67·N(N−1) such copies when the gateways' rounds ended apart).
 */
/** x, whose hub h answered at addr:h, with a neighbour z (its record heard); discovery on (records' addresses are learned). */
function servedByH(): PhoenixCore {
  const x = new PhoenixCore({ id: 'x', addresses: ['addr:x'], hubs: ['addr:h'], limits: { ecmpNextHopsMax: 1 } })
  x.connectionUp('h', 0, 'addr:h')
  x.connectionUp('z', 0)
  x.receive('z', helloWithRecord('z'), 0)
  return x
}

describe('a hub with co-hubs says every neighbour of its is served (allServed)', () => {
  it('its updates to the nodes it serves say so, even when the co-hub\'s plan never came; its updates to the co-hub do not', () => {
    const { h, joiners } = hubWithCoHubAndJoiners()
    const first = sends(h.step(1))
    expect(first.map((s) => s.to)).toEqual(['g'])
    expect(first.every((s) => s.message.allServed === undefined)).toBe(true)
    // The co-hub stays silent: the wait ends at 21 ms, and the hub serves its own and decides the co-hub's again.
    const rest = drain(h, 21)
    const ours = joiners.filter((n) => ownerHash('h', n) < ownerHash('g', n))
    expect(ours.length).toBeGreaterThan(0)
    for (const n of joiners) {
      const to = rest.filter((s) => s.to === n)
      expect(to.length).toBeGreaterThan(0)
      for (const { message } of to) if (message.transSets.length > 0) expect(message.allServed).toBe(true)
    }
    // Every joiner is in the slot table the word is about.
    const withWord = rest.find((s) => s.message.allServed === true)
    expect(withWord?.message.neighbourSlots).toEqual(expect.arrayContaining(joiners))
  })

  it('a node takes the word into rcpt: it does not announce its direct route to a peer that the hub serves too', () => {
    // x, served by hub h; h's neighbours are x, its peers d and z, and its co-hub g (which serves z, say).
    const x = servedByH()
    const hSlots = ['x', 'd', 'z', 'g']
    const onlyX = bitsOf(hSlots.length, [0])
    // h's table to x: its trans names x alone (g serves z and d, and its plan had not come), but h says all are served.
    x.receive('h', { neighbourSlots: hSlots, transSets: [onlyX], entries: [record('h'), record('d', 1, 0), record('g', 1, 0)], hello: { receiverSeq: undefined }, allServed: true }, 0)
    drain(x, 0)
    expect(x.route('d')).toMatchObject({ fwd: 'h', nhops: 2 })
    // x connects to d: a direct route, which z (holding d at 2 hops through its own hub) does not need.
    x.connectionUp('d', 1)
    x.receive('d', helloWithRecord('d'), 1)
    const after = drain(x, 1)
    expect(x.route('d')).toMatchObject({ fwd: 'd', nhops: 1 })
    const toZ = after.filter((s) => s.to === 'z').flatMap((s) => s.message.entries.map((e) => e.destination))
    expect(toZ).not.toContain('d')
    expect(() => x.checkInvariants()).not.toThrow()
  })

  it('the word stands for the hub\'s neighbours later: a peer\'s record heard from the peer is not announced to the others', () => {
    // x, held back by hub h for a co-hub that has not served it yet: h sent it only h's own record, with the word.
    const x = new PhoenixCore({ id: 'x', addresses: ['addr:x'], hubs: ['addr:h'], limits: { ecmpNextHopsMax: 1 } })
    x.connectionUp('h', 0, 'addr:h')
    x.connectionUp('z', 0)
    x.receive('z', helloWithRecord('z'), 0)
    const hSlots = ['x', 'd', 'z', 'g']
    x.receive('h', { neighbourSlots: hSlots, transSets: [bitsOf(hSlots.length, [0, 3])], entries: [record('h', 0, 0)], hello: { receiverSeq: undefined }, allServed: true }, 0)
    drain(x, 0)
    // d, served early, dials x and sends its own record: x learns d from d.
    x.connectionUp('d', 1)
    const beforeHello = drain(x, 1)
    // Our record waits for d's hello: d is h's neighbour, so it holds ours or will get it from h.
    expect(beforeHello.filter((s) => s.to === 'd').flatMap((s) => s.message.entries.map((e) => e.destination))).not.toContain('x')
    x.receive('d', { ...helloWithRecord('d'), hello: { receiverSeq: 0 } }, 1)
    const after = drain(x, 1)
    expect(x.route('d')).toMatchObject({ fwd: 'd', nhops: 1 })
    // z holds d at 2 hops or fewer (h's word): x does not tell it its direct route, nor d its own record.
    expect(after.filter((s) => s.to === 'z').flatMap((s) => s.message.entries.map((e) => e.destination))).not.toContain('d')
    expect(after.filter((s) => s.to === 'd').flatMap((s) => s.message.entries.map((e) => e.destination))).not.toContain('x')
    // h loses z: its word is void until said again, and z is no longer counted as holding d.
    x.receive('h', { neighbourSlots: [], transSets: [], entries: [], lostNeighbours: ['z'] }, 2)
    const relearned = drain(x, 2)
    expect(relearned.filter((s) => s.to === 'z').flatMap((s) => s.message.entries.map((e) => e.destination))).toContain('d')
    expect(() => x.checkInvariants()).not.toThrow()
  })

  it('the word of a neighbour that is not our hub is not taken, nor of one that lists our hub\'s address as its own', () => {
    const hSlots = ['x', 'd', 'z', 'g']
    for (const liar of ['m', 'm-claiming-addr:h']) {
      const x = servedByH()
      const m = liar === 'm' ? 'm' : 'm2'
      // m's record, relayed by z, names h's address: it must not become the owner of our hub's address.
      x.receive('z', { neighbourSlots: [], transSets: [], entries: [{ ...record(m, 1), addresses: liar === 'm' ? [`addr:${m}`] : ['addr:h'] }] }, 0)
      drain(x, 0)
      x.connectionUp(m, 0)
      x.receive(m, helloWithRecord(m), 0)
      x.receive(m, { neighbourSlots: hSlots, transSets: [bitsOf(hSlots.length, [0])], entries: [record('d', 1, 0)], allServed: true }, 0)
      drain(x, 0)
      x.connectionUp('d', 1)
      x.receive('d', helloWithRecord('d'), 1)
      const after = drain(x, 1)
      expect(x.route('d')).toMatchObject({ fwd: 'd', nhops: 1 })
      // Nothing says z holds d: x tells it its direct route.
      expect(after.filter((s) => s.to === 'z').flatMap((s) => s.message.entries.map((e) => e.destination)), liar).toContain('d')
    }
  })

  it('a member that lists a co-hub\'s address as its own does not become the hub\'s co-hub', () => {
    // Discovery on: addresses in records are learned.
    const h = new PhoenixCore({ id: 'h', addresses: ['addr:h'], hubs: ['addr:h', 'addr:g'], timing: { coHubWaitMs: 20 }, limits: { ecmpNextHopsMax: 1 } })
    h.step(0)
    h.connectionUp('g', 1, 'addr:g')
    h.receive('g', helloWithRecord('g'), 1)
    // m's record, relayed by n, names g's address; then m connects.
    h.connectionUp('n', 1)
    h.receive('n', { ...helloWithRecord('n'), entries: [record('n'), { ...record('m', 1), addresses: ['addr:g'] }] }, 1)
    h.step(1)
    h.connectionUp('m', 1)
    h.receive('m', helloWithRecord('m'), 1)
    h.step(1) // the hellos
    // The round begins with the co-hubs' plan: to g alone, not to m.
    expect(sends(h.step(2)).map((s) => s.to)).toEqual(['g'])
  })

  it('a hub that can have co-hubs does not take the word (its plan rests on promises alone)', () => {
    const g = new PhoenixCore({ id: 'g', addresses: ['addr:g'], hubs: ['addr:h', 'addr:g'], discovery: false, timing: { coHubWaitMs: 20 }, limits: { ecmpNextHopsMax: 1 } })
    g.connectionUp('h', 0, 'addr:h')
    g.connectionUp('z', 0)
    g.receive('z', helloWithRecord('z'), 0)
    const hSlots = ['g', 'd', 'z']
    g.receive('h', { neighbourSlots: hSlots, transSets: [bitsOf(hSlots.length, [0])], entries: [record('h'), record('d', 1, 0)], hello: { receiverSeq: undefined }, allServed: true }, 0)
    const out = drain(g, 100)
    // z lacks d as far as g knows: g sends it (the word would have left z to h, and h leaves it to g).
    expect(out.filter((s) => s.to === 'z').flatMap((s) => s.message.entries.map((e) => e.destination))).toContain('d')
  })
})

describe('a hub\'s slot table is translated once for every core of a shared numbering (the simulator)', () => {
  it('two nodes sharing a numbering hold the very same translation, naming the nodes of the table as a node with its own numbering does', () => {
    const numbering = new SharedNumbering(1_000)
    const cores = [new PhoenixCore({ id: 'x', addresses: ['addr:x'], discovery: false }, numbering), new PhoenixCore({ id: 'y', addresses: ['addr:y'], discovery: false }, numbering), new PhoenixCore({ id: 'a', addresses: ['addr:a'], discovery: false })]
    const table = Object.freeze(['x', 'y', 'a', '', 'z'])
    const message: UpdateMessage = { neighbourSlots: table, transSets: [bitsOf(table.length, [0, 1, 2, 4])], entries: [record('z', 1, 0)], allServed: true }
    const translations = cores.map((core) => {
      core.connectionUp('h', 1)
      core.receive('h', helloWithRecord('h'), 1)
      drain(core, 1)
      core.receive('h', message, 2)
      drain(core, 2)
      expect(core.route('z')?.nhops).toBe(2)
      const internals = core as unknown as { neighbours: { get(id: string): { senderSlots?: { map: Int32Array } } }; parts: { nodeIndex: { id(i: number): string | undefined } } }
      const map = internals.neighbours.get('h').senderSlots?.map
      expect(map).toBeDefined()
      return { map: map!, ids: [...map!].map((i) => (i < 0 ? '' : internals.parts.nodeIndex.id(i))) }
    })
    expect(translations[0]!.map).toBe(translations[1]!.map)
    expect(translations[2]!.map).not.toBe(translations[0]!.map)
    for (const { ids } of translations) expect(ids).toEqual([...table])
  })
})
