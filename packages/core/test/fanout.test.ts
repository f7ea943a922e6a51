import { describe, expect, it, vi } from 'vitest'
import { AddressRows } from '../src/address-rows.ts'
import { AddressBook } from '../src/discovery.ts'
import { ownerHash } from '../src/fanout.ts'
import { DEFAULT_TIMING, PhoenixCore, type UpdateMessage } from '../src/index.ts'
import { helloWithRecord, hubWithCoHubAndJoiners, record } from './cohub-hub.ts'

/** A node `h` that three neighbours joined, each sending its record: it owes each the other two and its own. */
function hubJoinedBy(limits: Record<string, number> = {}): PhoenixCore {
  const h = new PhoenixCore({ id: 'h', addresses: ['addr:h'], discovery: false, limits })
  for (const n of ['a', 'b', 'c']) h.connectionUp(n, 0)
  for (const n of ['a', 'b', 'c']) h.receive(n, helloWithRecord(n), 0)
  expect(h.step(0).kind).toBe('apply')
  return h
}


describe('bounded send steps (sendStepEntriesMax, fanout.ts)', () => {
  it('a round larger than the bound goes out over several steps, a whole neighbour at a time, in slot order', () => {
    const h = hubJoinedBy({ sendStepEntriesMax: 1 })
    const steps: string[][] = []
    while (h.hasWork(0)) {
      const step = h.step(0)
      expect(step.kind).toBe('send')
      steps.push(step.effects.map((e) => (e.type === 'send' ? `${e.to}:${e.message.entries.map((x) => x.destination).sort().join('')}` : e.type)))
    }
    expect(steps).toEqual([['a:bch'], ['b:ach'], ['c:abh']])
  })

  it('updates that arrive during a round are applied between its steps', () => {
    const h = hubJoinedBy({ sendStepEntriesMax: 1 })
    expect(h.step(0).effects).toHaveLength(1)
    h.receive('a', { neighbourSlots: [], transSets: [], entries: [{ ...record('x'), nhops: 1 }] }, 0)
    expect(h.step(0).kind).toBe('apply')
    expect(h.route('x')?.fwd).toBe('a')
    expect(h.step(0).kind).toBe('send')
  })

  it('without the bound (the default) the same round is one step', () => {
    const h = hubJoinedBy()
    const step = h.step(0)
    expect(step.effects.map((e) => (e.type === 'send' ? e.to : e.type))).toEqual(['a', 'b', 'c'])
    expect(h.hasWork(0)).toBe(false)
  })

  it('an invalid bound is refused naming the option', () => {
    expect(() => new PhoenixCore({ id: 'h', limits: { sendStepEntriesMax: 0 } })).toThrow(/sendStepEntriesMax/)
    expect(() => new PhoenixCore({ id: 'h', timing: { coHubWaitMs: -1 } })).toThrow(/coHubWaitMs/)
  })
})

describe('co-hubs own a share of the neighbours (fanout.ts)', () => {
  it('the owner hash is pure and spreads neighbours over the hubs', () => {
    expect(ownerHash('A-000', 'B-017')).toBe(ownerHash('A-000', 'B-017'))
    const hubs = ['A-000', 'B-000', 'C-000']
    const owned = new Map<string, number>()
    for (let i = 0; i < 300; i++) {
      const n = `N-${i}`
      const owner = hubs.reduce((best, hub) => (ownerHash(hub, n) < ownerHash(best, n) ? hub : best))
      owned.set(owner, (owned.get(owner) ?? 0) + 1)
    }
    for (const hub of hubs) expect(owned.get(hub)).toBeGreaterThan(60)
  })

  it('a hub given its own address among the hubs tells its co-hub first, then serves only what the co-hub did not promise', () => {
    const hubs = ['addr:h', 'addr:g']
    // One next hop per destination (the paper; the simulator): with several, an equal offer is news (alternates.ts).
    const h = new PhoenixCore({ id: 'h', addresses: ['addr:h'], hubs, discovery: false, timing: { coHubWaitMs: 20 }, limits: { ecmpNextHopsMax: 1 } })
    const dial = h.step(0).effects.find((e) => e.type === 'dial')
    expect(dial).toMatchObject({ address: 'addr:g' })
    h.connectionUp('g', 1, 'addr:g')
    const joiners = Array.from({ length: 12 }, (_, i) => `n${i}`)
    for (const n of joiners) h.connectionUp(n, 1)
    h.receive('g', helloWithRecord('g'), 1)
    for (const n of joiners) h.receive(n, helloWithRecord(n), 1)
    expect(h.step(1).kind).toBe('apply')
    const first = h.step(1)
    const firstTargets = first.effects.flatMap((e) => (e.type === 'send' ? [e.to] : []))
    const gOwns = joiners.filter((n) => ownerHash('g', n) < ownerHash('h', n))
    expect(gOwns.length).toBeGreaterThan(0)
    // The co-hub first, alone: the rest of the round waits for its plan (or coHubWaitMs).
    expect(firstTargets).toEqual(['g'])
    expect(h.hasWork(1)).toBe(false)
    expect(h.nextWakeMs(1)).toBe(21)
    // The co-hub's plan: it sends its joiners every record (trans names them by its slots).
    const gSlots = ['h', ...gOwns]
    const bits = new Uint8Array(Math.ceil(gSlots.length / 8))
    for (let i = 1; i < gSlots.length; i++) bits[i >> 3]! |= 1 << (i & 7)
    const plan: UpdateMessage = { neighbourSlots: gSlots, transSets: [bits], entries: [...joiners.map((n) => ({ ...record(n), nhops: 1, trans: 0 })), { ...record('g'), trans: 0 }] }
    h.receive('g', plan, 2)
    const rest: string[] = []
    while (h.hasWork(2)) for (const e of h.step(2).effects) if (e.type === 'send') rest.push(`${e.to}:${e.message.entries.map((x) => x.destination).join(',')}`)
    // The co-hub's joiners get only what the co-hub did not promise: our own record; ours get everything.
    for (const n of gOwns) expect(rest).toContain(`${n}:h`)
    for (const n of joiners.filter((j) => !gOwns.includes(j))) expect(rest.find((r) => r.startsWith(`${n}:`))?.split(',')).toHaveLength(joiners.length + 1)
  })

  it('a co-hub that says its plan ended ends the wait, though it sent fewer entries than we sent it', () => {
    const { h, joiners } = hubWithCoHubAndJoiners()
    // Our round's first step: the co-hub alone, and its last message says our plan ended.
    const first = h.step(1).effects.flatMap((e) => (e.type === 'send' ? [e] : []))
    expect(first.map((e) => e.to)).toEqual(['g'])
    expect(first.map((e) => e.message.planEnd)).toEqual([...first.slice(1).map(() => undefined), true])
    expect(h.nextWakeMs(1)).toBe(21)
    // The co-hub's plan: only its own record (it knew no joiner yet), and the end of it.
    h.receive('g', { neighbourSlots: [], transSets: [], entries: [record('g')], planEnd: true }, 2)
    const got = new Map<string, number>()
    while (h.hasWork(2)) for (const e of h.step(2).effects) if (e.type === 'send') got.set(e.to, (got.get(e.to) ?? 0) + e.message.entries.length)
    // Served at 2, not at 21: the co-hub promised them nothing, so they get everything from us.
    const gOwns = joiners.filter((n) => ownerHash('g', n) < ownerHash('h', n))
    for (const n of gOwns) expect(got.get(n)).toBe(joiners.length + 1)
    // One round waited, and the plan end (not the bound) ended its wait.
    expect(h.stats()).toMatchObject({ coHubWaits: 1, coHubWaitsExpired: 0 })
  })

  it('without the co-hub\u2019s plan, the held-back neighbours get everything when the wait ends', () => {
    expect(DEFAULT_TIMING.coHubWaitMs).toBe(0)
    const { h, joiners } = hubWithCoHubAndJoiners()
    h.step(1)
    const gOwns = joiners.filter((n) => ownerHash('g', n) < ownerHash('h', n))
    const got = new Map<string, number>()
    while (h.hasWork(21) || h.nextWakeMs(21) === 21) for (const e of h.step(21).effects) if (e.type === 'send') got.set(e.to, (got.get(e.to) ?? 0) + e.message.entries.length)
    for (const n of gOwns) expect(got.get(n)).toBe(joiners.length + 1) // the other joiners, g and h
    expect(h.stats()).toMatchObject({ coHubWaits: 1, coHubWaitsExpired: 1 })
  })
})

describe('dial order (discovery.ts)', () => {
  it('addresses sharing a longer prefix with our own are dialled first, discovery order among equals', () => {
    const book = new AddressBook(100, 2, { dialBackoffInitialMs: 1000, dialBackoffMaxMs: 60_000, redialBackoffMaxMs: 4000, lostRedialsPerSecondMax: 10 })
    book.setOwnAddresses(['10.1.0.5:7000'])
    for (const a of ['10.2.0.7:7000', '10.3.0.1:7000', '10.1.0.9:7000']) {
      book.learn(a, undefined)
      book.want(a)
    }
    expect(book.takeDials(0, () => false).map((d) => d.address)).toEqual(['10.1.0.9:7000', '10.2.0.7:7000'])
  })

  it('sorts a long queue the same way, reading each address once (not twice per comparison)', () => {
    const book = new AddressBook(1_000, 1_000, { dialBackoffInitialMs: 1000, dialBackoffMaxMs: 60_000, redialBackoffMaxMs: 4000, lostRedialsPerSecondMax: 10 })
    book.setOwnAddresses(['10.1.0.5:7000'])
    // 300 addresses in discovery order, three prefixes (nearness 8, 5, 3) interleaved.
    const learned = Array.from({ length: 300 }, (_, i) => `10.${[1, 9, 11][(i * 7) % 3]}${i % 2 === 0 ? '.0' : '.1'}.${i}:7000`)
    for (const a of learned) {
      book.learn(a, undefined)
      book.want(a)
    }
    const nearness = (a: string): number => {
      let n = 0
      while (a[n] === '10.1.0.5:7000'[n]) n++
      return n
    }
    const expected = [...learned].sort((a, b) => nearness(b) - nearness(a)) // stable: discovery order among equals
    expect(new Set(learned.map(nearness)).size).toBeGreaterThan(2)
    const reads = vi.spyOn(AddressRows.prototype, 'get')
    expect(book.takeDials(0, () => false).map((d) => d.address)).toEqual(expected)
    // Once to sort, once to take: 600 (a read per comparison before, ~2 × 300 × log2 300 ≈ 4,900).
    expect(reads.mock.calls.length).toBeLessThanOrEqual(2 * learned.length)
    reads.mockRestore()
  })
})
