import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import { HolderSets, NodeSet, PhoenixCore, SharedNumbering, type Effect, type RouteAdvert, type UpdateMessage } from '../src/index.ts'
import { membersOf, setOf } from './nodesets.ts'

const sorted = (xs: Iterable<number>): number[] => [...new Set(xs)].sort((p, q) => p - q)
// Up to 100 crosses three words and bit 31 of each (the sign bit of an int32).
const members = fc.array(fc.integer({ min: 0, max: 100 }), { maxLength: 30 })

describe('HolderSets: interned rcpt sets', () => {
  it('union(a, holder, b) has exactly the members of a ∪ {holder} ∪ b, and equal contents give one frozen object', () => {
    fc.assert(
      fc.property(members, fc.integer({ min: -1, max: 100 }), fc.option(members, { nil: undefined }), fc.integer({ min: 1, max: 200 }), (a, holder, b, width) => {
        const holders = new HolderSets(1_000)
        const u = holders.union(setOf(a, width), holder, b === undefined ? undefined : setOf(b))
        const expected = sorted([...a, ...(holder >= 0 ? [holder] : []), ...(b ?? [])])
        expect(membersOf(u)).toEqual(expected)
        expect(u.frozen).toBe(true)
        // The same content reached another way (other widths, other split) is the same object.
        expect(holders.union(setOf(expected, 200), -1, undefined)).toBe(u)
        expect(holders.union(new NodeSet(), -1, setOf(expected))).toBe(u)
      }),
    )
  })

  it('different contents are different sets, even when their hashes collide in one bucket', () => {
    fc.assert(
      fc.property(members, members, (a, b) => {
        const holders = new HolderSets(1_000)
        const x = holders.union(setOf(a), -1, undefined)
        const y = holders.union(setOf(b), -1, undefined)
        expect(x === y).toBe(sorted(a).join() === sorted(b).join())
      }),
    )
  })

  it('without(set, slot) is the set minus slot, interned; the set itself when it lacks the slot', () => {
    const holders = new HolderSets(1_000)
    const s = holders.union(setOf([1, 31, 63]), -1, undefined)
    expect(holders.without(s, 5)).toBe(s)
    const t = holders.without(s, 31)
    expect(membersOf(t)).toEqual([1, 63])
    expect(membersOf(s)).toEqual([1, 31, 63])
    expect(holders.union(setOf([63]), 1, undefined)).toBe(t)
  })

  it('stays within its limit: past max distinct sets it starts afresh (old sets stay valid)', () => {
    const holders = new HolderSets(3)
    const first = holders.union(setOf([0]), -1, undefined)
    for (let i = 1; i < 10; i++) holders.union(setOf([i]), -1, undefined)
    expect(holders.size).toBeLessThanOrEqual(3)
    expect(membersOf(first)).toEqual([0])
  })
})

describe('HolderSets: the memo of recent operations', () => {
  const op = fc.record({ pick: fc.nat(), other: fc.option(fc.nat(), { nil: undefined }), holder: fc.integer({ min: -1, max: 100 }), remove: fc.boolean() })
  it('a remembered union or removal is the very set the buckets give, across collisions and fresh starts', () => {
    fc.assert(
      fc.property(fc.array(members, { minLength: 1, maxLength: 6 }), fc.array(op, { maxLength: 60 }), fc.constantFrom(1, 2, 8), fc.integer({ min: 2, max: 12 }), (seeds, ops, memoSlots, max) => {
        const holders = new HolderSets(max, memoSlots)
        // Operands from a few sets, the operations twice over: the second pass asks the memo again, after fresh starts.
        const pool = seeds.map((m) => holders.union(setOf(m), -1, undefined))
        for (const { pick, other, holder, remove } of [...ops, ...ops]) {
          const a = pool[pick % pool.length]!
          const b = other === undefined ? undefined : pool[other % pool.length]!
          const expected = remove ? membersOf(a).filter((m) => m !== holder) : sorted([...membersOf(a), ...(holder >= 0 ? [holder] : []), ...(b === undefined ? [] : membersOf(b))])
          const got = remove ? holders.without(a, Math.max(holder, 0)) : holders.union(a, holder, b)
          if (remove && holder < 0) continue
          expect(membersOf(got)).toEqual(expected)
          // The same content asked for again, without the memo (an unfrozen set is never a memo key).
          if (got !== a) expect(holders.union(setOf(expected, 200), -1, undefined)).toBe(got)
        }
      }),
    )
  })

  it('covers(a, b) answers a.containsAll(b), asked twice over a few sets (the second from the memo, across collisions)', () => {
    fc.assert(
      fc.property(fc.array(members, { minLength: 1, maxLength: 6 }), fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 40 }), fc.constantFrom(1, 2, 8), (seeds, pairs, memoSlots) => {
        const holders = new HolderSets(1_000, memoSlots)
        // Frozen sets (the memo's keys) and unfrozen ones of the same contents (never remembered).
        const pool = [...seeds.map((m) => holders.union(setOf(m), -1, undefined)), ...seeds.map((m) => setOf(m))]
        for (const [i, j] of [...pairs, ...pairs]) {
          const a = pool[i % pool.length]!
          const b = pool[j % pool.length]!
          const expected = membersOf(b).every((m) => a.has(m))
          expect(holders.covers(a, b)).toBe(expected)
        }
      }),
    )
  })

  it('withHolder(h, b) is union(∅, h, b), the very set, asked again after the memo lost it and after fresh starts; the second ask hashes nothing', () => {
    fc.assert(
      fc.property(fc.array(members, { minLength: 1, maxLength: 6 }), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 100 })), { maxLength: 30 }), fc.integer({ min: 2, max: 12 }), (seeds, asks, max) => {
        // One memo slot: every other union in between overwrites it, as at scale.
        const holders = new HolderSets(max, 1)
        const pool = seeds.map((m) => setOf(m).freeze())
        for (const [pick, holder] of [...asks, ...asks]) {
          const b = pool[pick % pool.length]!
          const got = holders.withHolder(holder, b)
          expect(membersOf(got)).toEqual(sorted([holder, ...membersOf(b)]))
          // The table's own set for that content (after a fresh start, the new table's).
          expect(holders.union(setOf(membersOf(got), 200), -1, undefined)).toBe(got)
          holders.union(got, -1, undefined) // the one memo slot now holds another union (of a set it has: no fresh start)
          const hashes = vi.spyOn(NodeSet, 'unionHash')
          expect(holders.withHolder(holder, b)).toBe(got)
          expect(hashes).not.toHaveBeenCalled()
          hashes.mockRestore()
        }
      }),
    )
  })

  it('a memo size that is not a power of two is refused', () => {
    expect(() => new HolderSets(10, 3)).toThrow(/memoSlots/)
  })
})

describe('HolderSets: a send round to neighbours whose hello is awaited', () => {
  const advert = (destination: string, seq: number, nhops: number): RouteAdvert => ({ destination, seq, nhops, names: [], addresses: [], trans: -1 })
  const drain = (core: PhoenixCore): void => {
    for (let i = 0; i < 100 && core.hasWork(0); i++) core.step(0)
  }
  const stepsSent = (core: PhoenixCore): Effect[] => {
    const sent: Effect[] = []
    for (let i = 0; i < 100 && core.hasWork(0); i++) sent.push(...core.step(0).effects)
    return sent
  }
  const sentOurRecordTo = (sent: readonly Effect[], to: string): boolean => sent.some((e) => e.type === 'send' && e.to === to && e.message.entries.some((a) => a.destination === 'u'))
  /**
   * Core u, connected to 40 peers whose records a hub brought first: u holds routes to them, so
   * its record waits for their hellos. The connections are up, their round not run yet.
   */
  const awaitingHellos = (): { u: PhoenixCore; numbering: SharedNumbering; peers: string[] } => {
    const peers = Array.from({ length: 40 }, (_, i) => `p${i}`)
    const numbering = new SharedNumbering(100)
    const u = new PhoenixCore({ id: 'u', addresses: ['addr:u'] }, numbering)
    u.connectionUp('h', 0)
    u.receive('h', { neighbourSlots: [], transSets: [], entries: [], hello: { receiverSeq: undefined } }, 0)
    u.receive('h', { neighbourSlots: [], transSets: [], entries: [advert('h', 2, 0), ...peers.map((p) => advert(p, 2, 1))] }, 0)
    drain(u)
    for (const p of peers) u.connectionUp(p, 0)
    return { u, numbering, peers }
  }

  it('interns one set for our record, not one per awaited neighbour (each of N bits: O(N) per neighbour in a clique)', () => {
    const { u, numbering, peers } = awaitingHellos()
    const before = numbering.holders.size
    drain(u)
    // One decision per peer's entry (each has its own rcpt) and a few for our record; before the
    // batched removal our record added one more set per awaited peer (80 here, not 42).
    expect(numbering.holders.size - before).toBeLessThanOrEqual(peers.length + 4)
    // Our record went to none of them (it waits for their hellos) and goes to each whose hello says it lacks it.
    u.receive('p0', { neighbourSlots: [], transSets: [], entries: [], hello: { receiverSeq: undefined } }, 0)
    const sent = stepsSent(u)
    expect(sentOurRecordTo(sent, 'p0')).toBe(true)
    expect(sentOurRecordTo(sent, 'p1')).toBe(false)
  })

  it("our own entry's holders grow in place: hellos of neighbours holding our record intern no set (two N-bit sets per neighbour before)", () => {
    const { u, numbering, peers } = awaitingHellos()
    drain(u)
    const before = numbering.holders.size
    // All but the last say they hold our current record; the last holds an older one.
    for (const p of peers) u.receive(p, { neighbourSlots: [], transSets: [], entries: [], hello: { receiverSeq: p === 'p39' ? u.ownSeq - 2 : u.ownSeq } }, 0)
    const sent = stepsSent(u)
    expect(numbering.holders.size - before).toBeLessThanOrEqual(2)
    expect(peers.filter((p) => sentOurRecordTo(sent, p))).toEqual(['p39'])
    u.checkInvariants()
  })
})

describe('SharedNumbering: trans sets left on a message for its receiver', () => {
  it('the receiver finds the sets the sender attached, in the same numbering only; a copy of the message does not carry them', () => {
    const numbering = new SharedNumbering(10)
    const other = new SharedNumbering(10)
    const message: UpdateMessage = { neighbourSlots: ['a'], transSets: [new Uint8Array([1])], entries: [] }
    const sets = [setOf([3])]
    expect(numbering.setsOf(message)).toBeUndefined()
    numbering.attach(message, sets)
    expect(numbering.setsOf(message)).toBe(sets)
    expect(other.setsOf(message)).toBeUndefined()
    expect(numbering.setsOf({ ...message })).toBeUndefined()
    expect(JSON.stringify(message)).toBe(JSON.stringify({ neighbourSlots: ['a'], transSets: [{ 0: 1 }], entries: [] }))
  })
})

describe('messages without trans sets', () => {
  it('share one frozen empty slot table and one frozen empty list of sets (no two arrays per message)', () => {
    // Naive DSDV names no holders: every update it sends is such a message.
    const u = new PhoenixCore({ id: 'u', addresses: ['addr:u'], mode: 'naive' })
    for (const p of ['p0', 'p1', 'p2']) u.connectionUp(p, 0)
    const sent: Effect[] = []
    for (let i = 0; i < 100 && u.hasWork(0); i++) sent.push(...u.step(0).effects)
    const messages = sent.flatMap((e) => (e.type === 'send' ? [e.message] : []))
    expect(messages.length).toBe(3)
    for (const m of messages) {
      expect(m.entries.length).toBeGreaterThan(0)
      expect(m.transSets).toEqual([])
      expect(m.transSets).toBe(messages[0]!.transSets)
      expect(m.neighbourSlots).toBe(messages[0]!.neighbourSlots)
      expect(Object.isFrozen(m.transSets) && Object.isFrozen(m.neighbourSlots)).toBe(true)
    }
  })
})
