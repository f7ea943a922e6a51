import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import { PhoenixCore, SharedNumbering, type UpdateMessage } from '../src/index.ts'
import { type Neighbour, NeighbourTable, type SenderSlots } from '../src/neighbours.ts'
import { NodeIndex } from '../src/nodeindex.ts'

describe('NeighbourTable: slots', () => {
  it('a new connection takes the lowest free slot (the trans sets on the wire stay narrow), whatever closed before', () => {
    // Each step opens a connection to a node not connected (true) or closes one (false, picked by number).
    const steps = fc.array(fc.tuple(fc.boolean(), fc.nat()), { maxLength: 200 })
    fc.assert(
      fc.property(steps, (ops) => {
        const numbering = new NodeIndex(10_000)
        const table = new NeighbourTable(numbering)
        const open = new Map<string, number>()
        let next = 0
        for (const [opens, pick] of ops) {
          if (opens || open.size === 0) {
            const taken = new Set(open.values())
            let lowest = 0
            while (taken.has(lowest)) lowest++
            const id = `n${next++}`
            const neighbour = table.add(id, numbering.intern(id)!, 'optimized')
            expect(neighbour.slot).toBe(lowest)
            open.set(id, neighbour.slot)
          } else {
            const id = [...open.keys()][pick % open.size]!
            expect(table.remove(id)?.slot).toBe(open.get(id))
            open.delete(id)
          }
          // Found by id, and iterated in connection order (a send round's order follows it).
          expect(table.ids()).toEqual([...open.keys()])
          for (const id of open.keys()) expect(table.get(id)?.slot).toBe(open.get(id))
          // Found by number too (`getByIndex`), the same connection; a node not connected is not.
          for (let n = 0; n < next; n++) {
            const id = `n${n}`
            const byIndex = table.getByIndex(numbering.get(id)!)
            expect(byIndex?.id).toBe(open.has(id) ? id : undefined)
            expect(byIndex?.connection).toBe(table.get(id)?.connection)
          }
          table.checkInvariants(1_000)
        }
      }),
    )
  })
})

describe('NeighbourTable: slot columns 2 bytes wide until a slot needs 4', () => {
  it('finds every neighbour by id and keeps connection order across slot 32,767 (the columns widen, then grow), and after closes', () => {
    const numbering = new NodeIndex(80_000)
    const table = new NeighbourTable(numbering)
    const ids = Array.from({ length: 70_000 }, (_, i) => `n${i}`)
    // Others numbered first, so slots are not the indices; the columns grow past the widening.
    for (let i = 0; i < 100; i++) numbering.intern(`other${i}`)
    for (const id of ids) table.add(id, numbering.intern(id)!, 'optimized')
    expect(table.get('n32767')?.slot).toBe(32_767)
    expect(table.get('n35999')?.slot).toBe(35_999)
    expect(table.slotOfIndex(numbering.get('n35999')!)).toBe(35_999)
    expect(table.slotOfIndex(numbering.get('n5')!)).toBe(5)
    // Close a few, open others: the lowest free slots are taken again, found by id.
    for (const id of ['n3', 'n40000x', 'n32800']) table.remove(id)
    const later = ['m0', 'm1']
    for (const id of later) table.add(id, numbering.intern(id)!, 'optimized')
    expect(later.map((id) => table.get(id)?.slot)).toEqual([3, 32_800])
    const expected = [...ids.filter((id) => id !== 'n3' && id !== 'n32800'), ...later]
    expect(table.ids()).toEqual(expected)
    expect([...table.slotsInOrder()]).toEqual(expected.map((id) => table.get(id)!.slot))
    table.checkInvariants(80_000)
  })
})

describe('NeighbourTable: positions in the log of losses past 32,767', () => {
  it('tells each neighbour the losses it was not told, as positions pass 32,767 (the column widens)', () => {
    const numbering = new NodeIndex(100)
    const table = new NeighbourTable(numbering)
    const a = table.add('a', numbering.intern('a')!, 'optimized')
    const b = table.add('b', numbering.intern('b')!, 'optimized')
    for (let i = 0; i < 40_000; i++) {
      table.noteLost(`x${i}`, 4)
      if (i < 39_999) expect(table.takeLost(table.get('a')!)).toEqual([`x${i}`])
    }
    // a was told every loss but the last one; b none: it hears the log's last 4.
    expect(table.owesLostAt(a.slot)).toBe(true)
    expect(table.takeLost(table.get('a')!)).toEqual(['x39999'])
    expect(table.takeLost(table.get('b')!)).toEqual(['x39996', 'x39997', 'x39998', 'x39999'])
    expect([table.owesLostAt(a.slot), table.owesLostAt(b.slot), table.lostNoticesDue]).toEqual([false, false, 0])
    // A connection opened now starts at the end of the log.
    const c = table.add('c', numbering.intern('c')!, 'optimized')
    expect(table.owesLostAt(c.slot)).toBe(false)
    table.noteLost('y', 4)
    expect(table.takeLost(table.get('c')!)).toEqual(['y'])
    table.checkInvariants(100)
  })
})

/** What an object per connection held (the `Neighbour` record before its state became columns over the slot). */
interface ConnectionModel {
  readonly id: string
  readonly index: number
  readonly slot: number
  readonly connection: number
  readonly upAtMs: number
  flags: { ownWaitsForHello: boolean; helloDue: boolean; needsWholeTable: boolean }
  awaitingHello: boolean
  ownerSeqHeard: number | undefined
  senderSlots: SenderSlots | undefined
  tokens: number
  atMs: number
  lost: string[]
}

const FLAGS = ['ownWaitsForHello', 'helloDue', 'needsWholeTable'] as const
const LOST_MAX = 3
const BURST = 100

describe('NeighbourTable: each connection\'s state in columns', () => {
  it('reads, through views made at any time, what an object per connection held, under churn; a closed connection\'s view refuses its state', () => {
    const op = fc.oneof(
      // Opens weigh most, so that tables often grow past their first 16 rows (the columns are copied then).
      { arbitrary: fc.record({ k: fc.constant('open' as const), upAtMs: fc.oneof({ arbitrary: fc.integer({ min: -50_000, max: 100_000 }).map((ms) => 1.7e12 + ms), weight: 30 }, fc.double({ min: 0, max: 1e12, noNaN: true })), naive: fc.boolean() }), weight: 6 },
      fc.record({ k: fc.constant('close' as const), pick: fc.nat() }),
      fc.record({ k: fc.constant('flag' as const), pick: fc.nat(), flag: fc.constantFrom(...FLAGS), value: fc.boolean() }),
      fc.record({ k: fc.constant('hello' as const), pick: fc.nat(), value: fc.boolean() }),
      // Small numbers most often (the column stays 2 bytes a slot until one past 65,535), some past it.
      fc.record({ k: fc.constant('seq' as const), pick: fc.nat(), seq: fc.option(fc.oneof({ arbitrary: fc.nat({ max: 70_000 }), weight: 4 }, fc.nat({ max: 2 ** 32 - 1 })), { nil: undefined }) }),
      fc.record({ k: fc.constant('slots' as const), pick: fc.nat(), forget: fc.boolean() }),
      fc.record({ k: fc.constant('charge' as const), pick: fc.nat(), entries: fc.nat({ max: 60 }), nowMs: fc.nat({ max: 10_000 }) }),
      fc.record({ k: fc.constant('lost' as const), pick: fc.nat() }),
      fc.record({ k: fc.constant('take' as const), pick: fc.nat() }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 150, size: 'max' }), (ops) => {
        const numbering = new NodeIndex(10_000)
        const table = new NeighbourTable(numbering)
        const open: ConnectionModel[] = []
        const closedViews: Neighbour[] = []
        let next = 0
        for (const o of ops) {
          const model = open.length === 0 ? undefined : open[('pick' in o ? o.pick : 0) % open.length]!
          const view = model === undefined ? undefined : table.get(model.id)!
          if (o.k === 'open' || model === undefined || view === undefined) {
            const id = `n${next++}`
            const mode = o.k === 'open' && o.naive ? 'naive' : 'optimized'
            const upAtMs = o.k === 'open' ? o.upAtMs : 0
            const n = table.add(id, numbering.intern(id)!, mode, upAtMs)
            const optimized = mode === 'optimized'
            open.push({ id, index: n.index, slot: n.slot, connection: n.connection, upAtMs: Math.round(upAtMs), flags: { ownWaitsForHello: false, helloDue: optimized, needsWholeTable: !optimized }, awaitingHello: optimized, ownerSeqHeard: undefined, senderSlots: undefined, tokens: Number.NaN, atMs: 0, lost: [] })
          } else if (o.k === 'close') {
            const gone = table.remove(model.id)!
            expect(gone.is(view)).toBe(true)
            expect(gone.upAtMs).toBe(model.upAtMs)
            open.splice(open.indexOf(model), 1)
            closedViews.push(view)
          } else if (o.k === 'flag') {
            table.setFlag(view, o.flag, o.value)
            model.flags[o.flag] = o.value
          } else if (o.k === 'hello') {
            view.awaitingHello = o.value
            model.awaitingHello = o.value
          } else if (o.k === 'seq') {
            view.ownerSeqHeard = o.seq
            model.ownerSeqHeard = o.seq
          } else if (o.k === 'slots') {
            const slots = o.forget ? undefined : { table: [model.id], map: new Int32Array([model.index]) }
            view.senderSlots = slots
            model.senderSlots = slots
          } else if (o.k === 'charge') {
            const nowMs = Math.max(o.nowMs, Number.isNaN(model.atMs) ? 0 : model.atMs)
            const tokens = Number.isNaN(model.tokens) ? BURST : Math.min(BURST, model.tokens + ((nowMs - model.atMs) * 10) / 1000)
            model.tokens = tokens - o.entries
            model.atMs = nowMs
            // One number kept (when the bucket is full again) where the model keeps two: the same tokens up to rounding.
            expect(table.chargeUpdateBudget(view, o.entries, nowMs, 10, BURST)).toBeCloseTo(model.tokens, 6)
          } else if (o.k === 'lost') {
            table.noteLost(model.id, LOST_MAX)
            for (const m of open) m.lost = [...m.lost, model.id].slice(-LOST_MAX)
          } else {
            const told = table.takeLost(view)
            expect(told === undefined ? [] : [...told]).toEqual(model.lost)
            model.lost = []
          }
          expectSame(table, open, closedViews)
        }
      }),
    )
  })
})

function expectSame(table: NeighbourTable, open: readonly ConnectionModel[], closedViews: readonly Neighbour[]): void {
  // One comparison per step (an expect per field made the property slow): what the views read, and what the model holds.
  const read = (view: Neighbour) => [view.id, view.index, view.slot, view.connection, view.upAtMs, view.open, ...FLAGS.map((f) => view[f]), ...FLAGS.map((f) => table.flagAt(view.slot, f)), view.awaitingHello, view.ownerSeqHeard, view.senderSlots, table.owesLostAt(view.slot)]
  const held = (m: ConnectionModel) => [m.id, m.index, m.slot, m.connection, m.upAtMs, true, ...FLAGS.map((f) => m.flags[f]), ...FLAGS.map((f) => m.flags[f]), m.awaitingHello, m.ownerSeqHeard, m.senderSlots, m.lost.length > 0]
  const slotTable: string[] = []
  for (const m of open) slotTable[m.slot] = m.id
  const actual = {
    ids: table.ids(),
    order: [...table.slotsInOrder()],
    slotTable: [...table.slotTable()],
    inOrder: table.values().map(read),
    byId: open.map((m) => read(table.get(m.id)!)),
    bySlot: open.map((m) => read(table.at(m.slot)!)),
    counts: FLAGS.map((f) => table.count(f)),
    lostDue: table.lostNoticesDue,
  }
  const rows = open.map(held)
  expect(actual).toEqual({
    ids: open.map((m) => m.id),
    order: open.map((m) => m.slot),
    slotTable: Array.from(slotTable, (id) => id ?? ''),
    inOrder: rows,
    byId: rows,
    bySlot: rows,
    counts: FLAGS.map((f) => open.filter((m) => m.flags[f]).length),
    lostDue: open.filter((m) => m.lost.length > 0).length,
  })
  // The latest closed ones (throwing costs a stack trace each): every closed view was the latest once.
  for (const view of closedViews.slice(-2)) {
    expect(view.open).toBe(false)
    expect(() => view.helloDue).toThrow(/is open/)
    expect(() => (view.ownerSeqHeard = 2)).toThrow(/is open/)
  }
  table.checkInvariants(1_000)
}

describe('PhoenixCore.receive: the sender by number (a simulator sharing the numbering)', () => {
  const empty = (): UpdateMessage => ({ neighbourSlots: [], transSets: [], entries: [] })
  it('receiving and applying an update given the sender\'s number looks no id up; a number that is not the sender\'s is refused', () => {
    const numbering = new SharedNumbering(100)
    const u = new PhoenixCore({ id: 'u', addresses: ['addr:u'] }, numbering)
    u.connectionUp('h', 0)
    const h = numbering.index.get('h')!
    u.receive('h', { ...empty(), hello: { receiverSeq: undefined } }, 0, h)
    while (u.hasWork(0)) u.step(0)
    const lookups = vi.spyOn(numbering.index, 'get')
    expect(u.receive('h', empty(), 0, h)).toBe(true)
    expect(u.step(0).kind).toBe('apply')
    // Twice per update before (the receipt and the apply step each looked the sender's id up).
    expect(lookups).not.toHaveBeenCalled()
    lookups.mockRestore()
    expect(() => u.receive('h', empty(), 0, numbering.index.get('u')!)).toThrow(/not a neighbour/)
    expect(() => u.receive('x', empty(), 0, h)).toThrow(/not a neighbour/)
    expect(u.stats().messagesReceived).toBe(2)
  })
})
