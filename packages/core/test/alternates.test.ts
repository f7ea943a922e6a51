import { describe, expect, it } from 'vitest'
import { PhoenixCore, PhoenixError, checkRoutesAgainstBfs, type CoreLimits, type Effect, type NodeId, type RouteAdvert, type UpdateMessage } from '../src/index.ts'
import { TestNet, addressOf } from '../src/testing/index.ts'
import { fnv1a, mix32 } from '../src/alternates.ts'

/**
 * Two sites of two hosts behind two gateways each (test/netns/SITES.md, "Several gateways"):
 * hosts reach only their own gateways, the gateways of a site see each other, and every gateway
 * of A sees every gateway of B. Hubs: each host knows its site's first gateway, B's gateways A0.
 */
const SITE_EDGES: readonly [NodeId, NodeId][] = [
  ['a1', 'A0'], ['a1', 'A1'], ['a2', 'A0'], ['a2', 'A1'], ['A0', 'A1'],
  ['b1', 'B0'], ['b1', 'B1'], ['b2', 'B0'], ['b2', 'B1'], ['B0', 'B1'],
  ['A0', 'B0'], ['A0', 'B1'], ['A1', 'B0'], ['A1', 'B1'],
]
const HUB: Record<NodeId, NodeId | undefined> = { a1: 'A0', a2: 'A0', A0: undefined, A1: 'A0', B0: 'A0', B1: 'A0', b1: 'B0', b2: 'B0' }

function twoSites(seed: number, limits: Partial<CoreLimits> = {}): TestNet {
  const edges = new Set(SITE_EDGES.map(([a, b]) => TestNet.key(a, b)))
  const net = new TestNet({ seed, allowed: (a, b) => edges.has(TestNet.key(a, b)) })
  for (const [id, hub] of Object.entries(HUB)) net.add({ id, hubs: hub === undefined ? [] : [addressOf(hub)], limits })
  net.runToQuiescence()
  return net
}

const core = (net: TestNet, id: NodeId): PhoenixCore => net.cores.get(id)!

/** A neighbour's advert of `destination` at seq 2, and an update of such adverts. */
const advertAt = (destination: NodeId, nhops: number): RouteAdvert => ({ destination, seq: 2, nhops, names: [], addresses: [`addr:${destination}`], trans: -1 })
const updateOf = (entries: RouteAdvert[]): UpdateMessage => ({ neighbourSlots: [], transSets: [], entries, hello: { receiverSeq: undefined } })

/** Runs `x` until it has nothing to do; the neighbours it sent an entry for `d` to, sorted. */
function sentOf(x: PhoenixCore, d: NodeId): NodeId[] {
  const to: NodeId[] = []
  for (let i = 0; i < 10 && x.hasWork(0); i++) for (const e of x.step(0).effects) if (e.type === 'send' && e.message.entries.some((a) => a.destination === d)) to.push(e.to)
  return to.sort()
}

describe('several next hops per destination (alternates.ts)', () => {
  it('a host keeps both of its gateways for a host of the other site, and each gateway both remote gateways', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const net = twoSites(seed)
      expect(core(net, 'a1').route('b1')).toMatchObject({ nhops: 3, alternates: ['A0', 'A1'] })
      expect(core(net, 'a2').route('b2')).toMatchObject({ nhops: 3, alternates: ['A0', 'A1'] })
      expect(core(net, 'A0').route('b1')).toMatchObject({ nhops: 2, alternates: ['B0', 'B1'] })
      expect(core(net, 'A1').route('b2')).toMatchObject({ nhops: 2, alternates: ['B0', 'B1'] })
      expect(core(net, 'b1').route('a1')).toMatchObject({ nhops: 3, alternates: ['B0', 'B1'] })
      expect(core(net, 'B1').route('a2')).toMatchObject({ nhops: 2, alternates: ['A0', 'A1'] })
      // A direct route has the destination as its one next hop.
      expect(core(net, 'a1').route('A0')).toMatchObject({ nhops: 1, alternates: ['A0'] })
    }
  })

  it('each flow keeps one next hop; flows spread over the alternates', () => {
    const a1 = core(twoSites(7), 'a1')
    const chosen = new Map<NodeId, number>()
    for (let flow = 0; flow < 256; flow++) {
      const d = a1.forward('b1', 16, undefined, `a1\u0000flow-${flow}`)
      expect(d.action).toBe('forward')
      if (d.action !== 'forward') continue
      expect(a1.forward('b1', 16, undefined, `a1\u0000flow-${flow}`)).toEqual(d)
      chosen.set(d.nextHop, (chosen.get(d.nextHop) ?? 0) + 1)
    }
    expect([...chosen.keys()].sort()).toEqual(['A0', 'A1'])
    // Rendezvous hashing: each alternate gets about half (binomial(256, 1/2): ±3 sigma is ±24).
    for (const count of chosen.values()) expect(Math.abs(count - 128)).toBeLessThan(40)
    // Without a flow key: fwd, as before.
    expect(a1.forward('b1', 16)).toEqual({ action: 'forward', nextHop: a1.route('b1')!.fwd, hopLimit: 15 })
  })

  it('when a gateway dies, its routes move to the other with no change of (seq, nhops) and only its flows move', () => {
    const net = twoSites(11)
    const a1 = core(net, 'a1')
    const before = a1.route('b1')!
    const flows = Array.from({ length: 64 }, (_, i) => `a1\u0000flow-${i}`)
    const hop = (key: string) => {
      const d = a1.forward('b1', 16, undefined, key)
      return d.action === 'forward' ? d.nextHop : undefined
    }
    const was = new Map(flows.map((f) => [f, hop(f)]))
    const routesBefore = new Map([...net.cores].flatMap(([id, c]) => [...net.cores.keys()].filter((d) => d !== id).map((d) => [`${id}>${d}`, c.route(d)] as const)))
    const sentBefore = net.entriesSent
    net.crash('A0')
    // At once, before any update: the route is there, through A1, at the same seq and hop count.
    expect(a1.route('b1')).toMatchObject({ reachable: true, fwd: 'A1', alternates: ['A1'], seq: before.seq, nhops: before.nhops })
    for (const f of flows) {
      expect(hop(f)).toBe('A1')
      if (was.get(f) === 'A1') expect(hop(f)).toBe(was.get(f))
    }
    expect(core(net, 'B0').route('a2')).toMatchObject({ reachable: true, fwd: 'A1', nhops: 2 })
    net.runToQuiescence()
    expect(a1.route('b1')).toMatchObject({ reachable: true, fwd: 'A1', seq: before.seq, nhops: before.nhops })
    // Only A0's own entry changed: every survivor's route to every other survivor is where it was,
    // at the same (seq, nhops) — no retraction of any other destination went out. What A0 vouched
    // for (who holds what, RouteEntry.vouchers) is forgotten with it, so those entries go out again
    // as duplicates: at most one per destination and neighbour.
    for (const [id, c] of net.cores) {
      for (const d of net.cores.keys()) {
        if (d === id) continue
        const was = routesBefore.get(`${id}>${d}`)!
        expect(c.route(d), `${id} to ${d}`).toMatchObject({ reachable: true, seq: was.seq, nhops: was.nhops })
      }
    }
    const perSurvivor = (net.entriesSent - sentBefore) / net.cores.size
    expect(perSurvivor).toBeLessThan(net.cores.size * net.cores.size)
  })

  it('with ecmpNextHopsMax 1 (single-path DSDV, the simulator) a dead next hop invalidates the route as before', () => {
    const net = twoSites(11, { ecmpNextHopsMax: 1 })
    const a1 = core(net, 'a1')
    expect(a1.route('b1')!.alternates).toHaveLength(1)
    const { fwd, seq } = a1.route('b1')!
    net.crash(fwd!)
    expect(a1.route('b1')).toMatchObject({ reachable: false, alternates: [] })
    // Back only after the retraction reached b1 and its newer record came back: a routing round trip.
    net.runToQuiescence()
    expect(a1.route('b1')).toMatchObject({ reachable: true, nhops: 3 })
    expect(a1.route('b1')!.seq).toBeGreaterThan(seq)
  })

  it('a retraction from one of several next hops is adopted: it reaches the owner, whose fresher number gives every node its route back', () => {
    const net = twoSites(3)
    const A0 = core(net, 'A0')
    const seq = A0.route('b1')!.seq
    expect(A0.route('b1')!.alternates).toEqual(['B0', 'B1'])
    // B0 retracts b1 (as a node does whose last next hop went). A0 still has B1, but swallowing
    // the retraction would leave B0 at seq + 1 for good: it refuses every older offer, and only b1
    // issues newer numbers (link-loss.test.ts pins the case where that happened).
    A0.receive('B0', { neighbourSlots: [], transSets: [], entries: [{ destination: 'b1', seq: seq + 1, nhops: 0, names: [], addresses: [], trans: -1 }] }, net.nowMs)
    // The net steps A0 (its effects go out): without the fix nobody ever holds more than seq + 1.
    net.runToQuiescence()
    for (const [id, c] of net.cores) {
      if (id === 'b1') continue
      expect(c.route('b1'), `${id} to b1`).toMatchObject({ reachable: true })
      expect(c.route('b1')!.seq, `${id} holds b1's fresher number`).toBeGreaterThan(seq + 1)
    }
    expect(checkRoutesAgainstBfs([...net.cores.keys()], net.connectionEdges(), net.lookup)).toEqual([])
  })

  it('on connecting to a destination, its 2-hop next hops (connected to it too) do not get our worse offer of 2', () => {
    // x holds d at 2 hops through w1 and w2 (both hold it at 1), and x's neighbour v holds it at 3.
    const x = new PhoenixCore({ id: 'x', addresses: ['addr:x'] })
    const sentTo = (effects: Effect[]): Map<NodeId, NodeId[]> => {
      const out = new Map<NodeId, NodeId[]>()
      for (const e of effects) if (e.type === 'send') out.set(e.to, [...(out.get(e.to) ?? []), ...e.message.entries.map((a) => a.destination)])
      return out
    }
    const step = (): Map<NodeId, NodeId[]> => {
      const effects: Effect[] = []
      for (let i = 0; i < 10 && x.hasWork(0); i++) effects.push(...x.step(0).effects)
      return sentTo(effects)
    }
    const advert = (destination: NodeId, nhops: number): RouteAdvert => ({ destination, seq: 2, nhops, names: [], addresses: [`addr:${destination}`], trans: -1 })
    const message = (entries: RouteAdvert[]): UpdateMessage => ({ neighbourSlots: [], transSets: [], entries, hello: { receiverSeq: undefined } })
    for (const n of ['w1', 'w2', 'v']) x.connectionUp(n, 0)
    x.receive('w1', message([advert('w1', 0), advert('d', 1)]), 0)
    x.receive('w2', message([advert('w2', 0), advert('d', 1)]), 0)
    x.receive('v', message([advert('v', 0), advert('d', 2)]), 0)
    step()
    expect(x.route('d')).toMatchObject({ nhops: 2, alternates: ['w1', 'w2'] })
    x.connectionUp('d', 0)
    x.receive('d', message([advert('d', 0)]), 0)
    const sent = step()
    expect(x.route('d')).toMatchObject({ nhops: 1, alternates: ['d'] })
    // v holds d at 3: our direct route is news to it. w1 and w2 hold it at 1, as good as d's own.
    expect(sent.get('v')).toContain('d')
    expect(sent.get('w1') ?? []).not.toContain('d')
    expect(sent.get('w2') ?? []).not.toContain('d')
  })

  it('a neighbour that another neighbour advertises at 1 hop holds that one directly, and does not get our offer of it', () => {
    const x = new PhoenixCore({ id: 'x', addresses: ['addr:x'] })
    for (const n of ['d', 'z', 'v']) x.connectionUp(n, 0)
    x.receive('z', updateOf([advertAt('z', 0)]), 0)
    x.receive('v', updateOf([advertAt('v', 0)]), 0)
    // d's own record, then (d has connected to z) its route to z at 1 hop.
    x.receive('d', updateOf([advertAt('d', 0), advertAt('z', 1)]), 0)
    // d's record goes to v, not to z, which holds it directly.
    expect(sentOf(x, 'd')).toEqual(['v'])
  })

  it('on connecting to a destination, a holder of our 2-hop route that will connect to it itself (willConnect) does not get our equal offer; others do', () => {
    // x and its neighbours y and u hold d at 2 hops through hub h. x connects to d. y shares d's
    // site (it will connect to d as x did); u does not (a host behind another gateway).
    const offersOfD = (willConnect: ((holder: NodeId, destination: NodeId) => boolean) | undefined): NodeId[] => {
      const x = new PhoenixCore({ id: 'x', addresses: ['addr:x'], ...(willConnect === undefined ? {} : { willConnect }) })
      for (const n of ['h', 'y', 'u']) x.connectionUp(n, 0)
      x.receive('h', updateOf([advertAt('h', 0), advertAt('d', 1)]), 0)
      x.receive('y', updateOf([advertAt('y', 0), advertAt('d', 2)]), 0)
      x.receive('u', updateOf([advertAt('u', 0), advertAt('d', 2)]), 0)
      sentOf(x, 'd')
      expect(x.route('d')).toMatchObject({ nhops: 2, fwd: 'h' })
      x.connectionUp('d', 0)
      x.receive('d', updateOf([advertAt('d', 0)]), 0)
      expect(x.route('d')).toMatchObject({ nhops: 1, fwd: 'd' })
      return sentOf(x, 'd')
    }
    expect(offersOfD((holder, destination) => destination === 'd' && holder === 'y')).toEqual(['u'])
    // Without it every holder at 2 gets the equal offer, as before (y's alternate until its own connection).
    expect(offersOfD(undefined)).toEqual(['u', 'y'])
    expect(offersOfD(() => false)).toEqual(['u', 'y'])
  })

  it('refuses ecmpNextHopsMax 0, naming the limit', () => {
    expect(() => new PhoenixCore({ id: 'x', limits: { ecmpNextHopsMax: 0 } })).toThrow(PhoenixError)
    expect(() => new PhoenixCore({ id: 'x', limits: { ecmpNextHopsMax: 0 } })).toThrow(/ecmpNextHopsMax/)
  })

  it('the hash is 32-bit FNV-1a (reference values) with a Murmur3 finaliser', () => {
    expect(fnv1a('', 0x811c9dc5)).toBe(0x811c9dc5)
    expect(fnv1a('a', 0x811c9dc5)).toBe(0xe40c292c)
    expect(fnv1a('foobar', 0x811c9dc5)).toBe(0xbf9cf968)
    expect(mix32(0)).toBe(0)
    expect(mix32(1)).not.toBe(mix32(2))
  })
})
