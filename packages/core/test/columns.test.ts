import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { AddressRows, CONSECUTIVE_FAILURES_MAX } from '../src/address-rows.ts'
import { CORE_CONSTANTS } from '../src/constants.ts'
import { AddressBook } from '../src/discovery.ts'
import { RouteColumns } from '../src/columns.ts'
import { NodeIndex } from '../src/nodeindex.ts'
import { SetIds } from '../src/set-ids.ts'
import { EMPTY_SET } from '../src/nodeset.ts'
import { setOf } from './nodesets.ts'
import { UNREACHABLE_HOPS } from '../src/route.ts'

/** One step against the columns and against a model (a Map in insertion order, a dirty list). */
type Op = { kind: 'insert' | 'remove' | 'release' | 'dirty'; node: number } | { kind: 'clear' }

const ops = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constantFrom('insert' as const, 'remove' as const, 'release' as const, 'dirty' as const), node: fc.integer({ min: 0, max: 5 }) }),
    fc.constant({ kind: 'clear' as const }),
  ),
  // A few nodes, many steps: the same node is removed and inserted again, behind others.
  { minLength: 20, maxLength: 200 },
)

function apply(columns: RouteColumns, index: NodeIndex, model: Map<string, true>, dirty: string[], op: Op): void {
  if (op.kind === 'clear') {
    columns.clearDirty()
    dirty.length = 0
    return
  }
  const id = `n${op.node}`
  const row = columns.rowOf(id)
  if (op.kind === 'insert' && row === undefined) {
    expect(columns.insert(id)).toBeDefined()
    model.set(id, true)
  } else if ((op.kind === 'remove' || op.kind === 'release') && row !== undefined && !columns.isDirty(row)) {
    columns.remove(row)
    model.delete(id)
    // Expiry frees the node's number too: the row may come back for another node.
    if (op.kind === 'release') index.release(id)
  } else if (op.kind === 'dirty' && row !== undefined) {
    columns.markDirty(row)
    if (!dirty.includes(id)) dirty.push(id)
  }
}

describe('RouteColumns: the routing table in columns', () => {
  it('iterates in insertion order and marks dirty in the order of change, whatever rows are removed, reused or compacted (a Map and a Set did before)', () => {
    fc.assert(
      fc.property(ops, (steps) => {
        const index = new NodeIndex(64)
        const columns = new RouteColumns(index, new SetIds())
        const model = new Map<string, true>()
        const dirty: string[] = []
        for (const op of steps) {
          apply(columns, index, model, dirty, op)
          expect([...columns.rows()].map((row) => columns.idOf(row))).toEqual([...model.keys()])
          expect(columns.rowsWhere(() => true).map((row) => columns.idOf(row))).toEqual([...model.keys()])
          // Asked by row, listed in insertion order: a pick by the row's values keeps that order.
          const picks = (row: number, isDirty: boolean) => isDirty || row % 3 === 0
          expect(columns.rowsWhere(picks).map((row) => columns.idOf(row))).toEqual([...model.keys()].filter((id) => picks(columns.rowOf(id)!, dirty.includes(id))))
          expect(Array.from({ length: columns.dirtyCount }, (_, i) => columns.idOf(columns.dirtyRowAt(i)))).toEqual(dirty)
          expect(columns.size).toBe(model.size)
        }
      }),
    )
  })

  it('keeps changedAtMs only for unreachable rows, and reads every unreachable row as a column of every write did (a Float64Array before)', () => {
    // The table's discipline (table.ts): a change writes the seq, then the time (adopt, invalidate,
    // routeDirectly); a new row takes its seq with no time (insert). The model keeps every write.
    const step = fc.oneof(
      fc.record({ k: fc.constant('insert' as const), node: fc.nat({ max: 7 }), odd: fc.boolean() }),
      fc.record({ k: fc.constant('remove' as const), node: fc.nat({ max: 7 }) }),
      { arbitrary: fc.record({ k: fc.constant('change' as const), node: fc.nat({ max: 7 }), odd: fc.boolean(), ms: fc.double({ min: 0, max: 1e12, noNaN: true }) }), weight: 4 },
      fc.record({ k: fc.constant('dirty' as const), node: fc.nat({ max: 7 }) }),
      fc.constant({ k: 'clear' as const }),
    )
    fc.assert(
      fc.property(fc.array(step, { maxLength: 150, size: 'max' }), (steps) => {
        const index = new NodeIndex(16)
        const columns = new RouteColumns(index, new SetIds())
        const model = new Map<string, { seq: number; ms: number; dirty: boolean }>()
        for (const s of steps) {
          if (s.k === 'clear') {
            columns.clearDirty()
            for (const m of model.values()) m.dirty = false
            continue
          }
          const id = `n${s.node}`
          const row = columns.rowOf(id)
          const m = model.get(id)
          if (s.k === 'insert' && row === undefined) {
            const entry = columns.view(columns.insert(id)!)
            entry.seq = s.odd ? 3 : 2
            model.set(id, { seq: entry.seq, ms: 0, dirty: false })
          } else if (s.k === 'remove' && row !== undefined && !m!.dirty) {
            columns.remove(row)
            model.delete(id)
          } else if (s.k === 'change' && row !== undefined) {
            const entry = columns.view(row)
            entry.seq = entry.seq + (s.odd === (entry.seq % 2 === 0) ? 1 : 2)
            entry.changedAtMs = s.ms
            Object.assign(m!, { seq: entry.seq, ms: s.ms })
          } else if (s.k === 'dirty' && row !== undefined) {
            columns.markDirty(row)
            m!.dirty = true
          }
          const unreachable = [...model].filter(([, v]) => v.seq % 2 === 1)
          expect(unreachable.map(([d]) => columns.view(columns.rowOf(d)!).changedAtMs)).toEqual(unreachable.map(([, v]) => v.ms))
          expect(columns.changedTimesKept).toBeLessThanOrEqual(unreachable.length)
          const dirtyTimes = unreachable.filter(([, v]) => v.dirty).map(([, v]) => v.ms)
          expect(columns.oldestDirtyUnreachableMs(-1)).toBe(Math.min(Number.POSITIVE_INFINITY, ...dirtyTimes))
        }
      }),
    )
  })

  it('stores an unreachable hop count (Infinity) as its sentinel and reads it back as Infinity; refuses what it cannot store', () => {
    const index = new NodeIndex(8)
    const columns = new RouteColumns(index, new SetIds())
    const entry = columns.view(columns.insert('d')!)
    expect(entry.nhops).toBe(UNREACHABLE_HOPS)
    entry.nhops = 256
    expect(entry.nhops).toBe(256)
    entry.rcptHopsMax = UNREACHABLE_HOPS
    expect(entry.rcptHopsMax).toBe(UNREACHABLE_HOPS)
    entry.nhops = UNREACHABLE_HOPS
    expect(columns.nhops[entry.row]).toBe(0xffff)
    expect(() => (entry.nhops = 0xffff)).toThrow(/hop count/)
    expect(() => (entry.nhops = 1.5)).toThrow(/hop count/)
  })

  it('two views of one row are one entry: a write through either is seen by both; a next hop is kept as its node number', () => {
    const index = new NodeIndex(8)
    const columns = new RouteColumns(index, new SetIds())
    index.intern('hop')
    const row = columns.insert('d')!
    const a = columns.view(row)
    const b = columns.view(row)
    a.seq = 2 ** 32 - 2
    a.fwd = 'hop'
    expect([b.seq, b.fwd, b.reachable]).toEqual([2 ** 32 - 2, 'hop', true])
    a.seq = 2 ** 32 - 1
    a.changedAtMs = 12.25
    expect([b.changedAtMs, b.reachable]).toEqual([12.25, false])
    a.seq = 2 ** 32 - 2
    expect(columns.fwd[row]).toBe(index.get('hop'))
    b.fwd = undefined
    expect(a.fwd).toBeUndefined()
  })

  it('keeps insertion order and next hops past row 32,767 (the 2-byte columns widen), and every row before it', () => {
    const index = new NodeIndex(70_000)
    const columns = new RouteColumns(index, new SetIds())
    // Rows 0 to 39,999 in turn, so the order column widens while it holds small rows, then grows.
    const ids = Array.from({ length: 40_000 }, (_, i) => `n${i}`)
    for (const id of ids) columns.insert(id)
    // Small next hops first, then one that widens the column.
    columns.view(columns.rowOf('n32768')!).fwd = 'n32767'
    columns.view(columns.rowOf('n39999')!).fwd = 'n5'
    columns.view(columns.rowOf('n5')!).fwd = 'n39999'
    expect(['n5', 'n39999', 'n32768', 'n7'].map((id) => columns.view(columns.rowOf(id)!).fwd)).toEqual(['n39999', 'n5', 'n32767', undefined])
    const order = [...columns.rows()].map((row) => columns.idOf(row))
    expect(order).toEqual(ids)
  })

  it('holds no more rows than its node numbering may hand out: a destination past it is refused (undefined), not stored', () => {
    const index = new NodeIndex(3)
    const columns = new RouteColumns(index, new SetIds())
    expect(['a', 'b', 'c'].map((id) => columns.insert(id))).toEqual([0, 1, 2])
    expect(columns.insert('d')).toBeUndefined()
    expect(columns.size).toBe(3)
  })

  it('grows every reference column with the typed ones: a first row numbered past 1,000 is written inside each list, never past its end', () => {
    // A shared numbering (a simulator's, 3,000 nodes known) hands this table row 1,499 first: every column is sized for all 3,000 at once.
    const index = new NodeIndex(4096)
    for (let i = 0; i < 3000; i++) index.intern(`n${i}`)
    const columns = new RouteColumns(index, new SetIds())
    const row = columns.insert('n1499')!
    expect(row).toBe(1499)
    const lengths = [columns.introducers.capacity, columns.addresses.capacity]
    expect(lengths).toEqual(lengths.map(() => columns.seq.length))
    expect(columns.seq.length).toBe(3000)
    expect(columns.view(row).vouchers.isEmpty()).toBe(true)
  })

  it('keeps names and signatures only once some row has them: an empty one reads as the shared empty value, a row inserted again as blank', () => {
    const index = new NodeIndex(4096)
    const columns = new RouteColumns(index, new SetIds())
    const a = columns.insert('a')!
    const own: readonly string[] = []
    columns.setNames(a, own)
    columns.setSignature(a, new Uint8Array(0))
    expect(columns.namesOf(a)).toEqual([])
    expect(columns.signatureOf(a).length).toBe(0)
    // The first non-empty value allocates the list; rows inserted later, past the first capacity, are written inside it.
    const names = ['x', 'y']
    const signature = new Uint8Array([1, 2, 3])
    columns.setNames(a, names)
    columns.setSignature(a, signature)
    const rows = Array.from({ length: 100 }, (_, i) => columns.insert(`n${i}`)!)
    const last = rows.at(-1)!
    columns.setNames(last, ['z'])
    columns.setSignature(last, signature)
    expect([columns.namesOf(a), columns.signatureOf(a), columns.namesOf(last), columns.namesOf(rows[0]!)]).toEqual([names, signature, ['z'], []])
    // Emptied, and forgotten with the row.
    columns.setNames(last, [])
    expect(columns.namesOf(last)).toEqual([])
    columns.remove(a)
    expect(columns.insert('a')).toBe(a)
    expect([columns.namesOf(a), columns.signatureOf(a).length]).toEqual([[], 0])
  })

  it('sizes its columns for as many nodes as its numbering expects at the first row, never past the numbering\'s bound', () => {
    const index = new NodeIndex(5000)
    index.expected = 2000
    const columns = new RouteColumns(index, new SetIds())
    columns.insert('first')
    expect([columns.seq.length, columns.introducers.capacity, columns.addresses.capacity]).toEqual([2000, 2000, 2000])
    // A hint past the bound is cut to the bound; without one, the columns double from a few rows.
    const bounded = new RouteColumns(Object.assign(new NodeIndex(100), { expected: 1000 }), new SetIds())
    bounded.insert('a')
    expect(bounded.seq.length).toBe(100)
    const unhinted = new RouteColumns(new NodeIndex(5000), new SetIds())
    unhinted.insert('a')
    expect(unhinted.seq.length).toBeLessThan(100)
  })
})

describe('AddressRows: the address book in columns', () => {
  it('forgets addresses and reuses their rows and numbers, never past its limit; a shared numbering never forgets', () => {
    // Each step learns (op 0) or forgets (op 1) address /a/k, owned by n(k % 3).
    const steps = fc.array(fc.tuple(fc.nat(1), fc.nat(9)), { maxLength: 200, size: 'max' })
    fc.assert(
      fc.property(steps, (ops) => {
        const max = 6
        const rows = new AddressRows(max)
        const model = new Map<string, string>()
        for (const [op, k] of ops) {
          const address = `/a/${k}`
          if (op === 0 && !model.has(address) && rows.canAdd(address)) {
            rows.add(address).owner = `n${k % 3}`
            model.set(address, `n${k % 3}`)
          } else if (op === 1) {
            expect(rows.remove(address)).toBe(model.delete(address))
          }
          expect(rows.size).toBe(model.size)
          expect(rows.size).toBeLessThanOrEqual(max)
          expect(new Set([...rows].map(([a]) => a))).toEqual(new Set(model.keys()))
          for (const [a, owner] of model) expect(rows.get(a)?.owner).toBe(owner)
          for (let n = 0; n < 3; n++) expect(new Set(rows.addressesOf(`n${n}`))).toEqual(new Set([...model].filter(([, o]) => o === `n${n}`).map(([a]) => a)))
        }
        // A full book takes a new address once one is forgotten.
        if (model.size === max) expect(rows.canAdd('/new')).toBe(false)
      }),
    )
    const shared = new AddressRows(6, new NodeIndex(6))
    shared.add('/s')
    expect(shared.remove('/s')).toBe(false)
    expect(shared.get('/s')).toBeDefined()
  })

  it('keeps each field of each address apart: flags, failures, times (no dial in flight as undefined), owner', () => {
    const rows = new AddressRows(40)
    const states = Array.from({ length: 40 }, (_, i) => rows.add(`/a/${i}`))
    states.forEach((s, i) => {
      s.queued = i % 2 === 0
      s.redial = i % 3 === 0 ? 'hub' : i % 3 === 1 ? 'lost' : undefined
      s.consecutiveFailures = i
      s.retryAtMs = i + 0.5
      s.dialStartedAtMs = i % 4 === 0 ? undefined : i / 4
      s.owner = i % 5 === 0 ? undefined : `n${i}`
    })
    states.forEach((_, i) => {
      const s = rows.get(`/a/${i}`)!
      expect([s.queued, s.redial, s.consecutiveFailures, s.retryAtMs, s.dialStartedAtMs, s.owner]).toEqual([
        i % 2 === 0,
        i % 3 === 0 ? 'hub' : i % 3 === 1 ? 'lost' : undefined,
        i,
        i + 0.5,
        i % 4 === 0 ? undefined : i / 4,
        i % 5 === 0 ? undefined : `n${i}`,
      ])
    })
    // Setting the redial reason keeps the queued flag, and the other way round.
    const s = rows.get('/a/0')!
    s.redial = 'lost'
    expect(s.queued).toBe(true)
    s.queued = false
    expect(s.redial).toBe('lost')
    expect(rows.get('/a/none')).toBeUndefined()
  })

  it('books sharing one address numbering (a simulator) keep their own rows and states; each lists its addresses in number order', () => {
    const numbers = new NodeIndex(10)
    const a = new AddressRows(10, numbers)
    const b = new AddressRows(10, numbers)
    a.add('/x')
    a.add('/y')
    b.add('/z')
    b.add('/y')
    a.get('/y')!.consecutiveFailures = 3
    expect(b.get('/y')!.consecutiveFailures).toBe(0)
    expect(b.get('/x')).toBeUndefined()
    expect([...a].map(([address]) => address)).toEqual(['/x', '/y'])
    // Rows are the shared numbers there (no map from number to row): /y is 1, /z is 2.
    expect([...b].map(([address]) => address)).toEqual(['/y', '/z'])
    expect([a.size, b.size, numbers.size]).toEqual([2, 2, 3])
  })

  it('a book over a numbering that expects N addresses is sized for N at its first address, within its own limit', () => {
    const numbers = new NodeIndex(10_000)
    numbers.expected = 3000
    const book = new AddressRows(10_000, numbers)
    book.add('/x')
    expect(book.flags.length).toBe(3000)
    // A book's own limit bounds its rows where it numbers its addresses itself; on a shared
    // numbering a row is the address's number, so the columns span what the numbering expects.
    const small = new AddressRows(50)
    small.add('/y')
    expect(small.flags.length).toBe(16)
    for (let i = 0; i < 49; i++) small.add(`/y${i}`)
    expect(small.flags.length).toBe(50)
    const smallShared = new AddressRows(50, numbers)
    smallShared.add('/y')
    expect(smallShared.flags.length).toBe(3000)
    const unhinted = new AddressRows(10_000, new NodeIndex(10_000))
    unhinted.add('/z')
    expect(unhinted.flags.length).toBeLessThan(100)
  })

  it('a full shared numbering fills every book that shares it: the address is refused and counted, not thrown', () => {
    const numbers = new NodeIndex(2)
    const timing = { dialBackoffInitialMs: 1000, dialBackoffMaxMs: 60_000, redialBackoffMaxMs: 4000, lostRedialsPerSecondMax: 10 }
    const one = new AddressBook(100, 2, timing, numbers)
    const other = new AddressBook(100, 2, timing, numbers)
    expect([one.learn('/a', 'n1'), other.learn('/b', 'n2')]).toEqual([true, true])
    expect(one.learn('/c', 'n3')).toBe(false)
    expect(one.addressesRefused).toBe(1)
    // An address already numbered is still learned by another book.
    expect(one.learn('/b', 'n2')).toBe(true)
    expect(one.size).toBe(2)
  })

  it("lists each owner's addresses in the order they became its own, as owners change, with its own owner numbering or a shared one", () => {
    // Each step gives row `row` to owner `owner` (-1: to no one known).
    const steps = fc.array(fc.tuple(fc.nat(5), fc.integer({ min: -1, max: 4 })), { maxLength: 120 })
    fc.assert(
      fc.property(steps, fc.boolean(), (ops, shared) => {
        const rows = new AddressRows(6, new NodeIndex(6), shared ? new NodeIndex(5) : undefined)
        const states = Array.from({ length: 6 }, (_, i) => rows.add(`/a/${i}`))
        const model = new Map<string, string[]>()
        for (const [row, o] of ops) {
          const owner = o < 0 ? undefined : `n${o}`
          const address = `/a/${row}`
          const old = states[row]!.owner
          if (old !== owner) {
            if (old !== undefined) model.set(old, model.get(old)!.filter((a) => a !== address))
            if (owner !== undefined) model.set(owner, [...(model.get(owner) ?? []), address])
          }
          states[row]!.owner = owner
          for (let n = 0; n < 5; n++) expect(rows.addressesOf(`n${n}`)).toEqual(model.get(`n${n}`) ?? [])
          states.forEach((s, i) => expect(s.owner).toBe([...model].find(([, as]) => as.includes(`/a/${i}`))?.[0]))
        }
      }),
    )
  })

  it('gives an owner number back when the owner holds no address, so its own numbering never fills with owners of nothing', () => {
    const rows = new AddressRows(2)
    const a = rows.add('/a')
    // Two rows, a hundred owners one after another: a numbering that kept them would be full at the third.
    for (let i = 0; i < 100; i++) a.owner = `n${i}`
    expect(rows.addressesOf('n99')).toEqual(['/a'])
    expect(rows.addressesOf('n98')).toEqual([])
  })

  it('a book on a shared numbering (rows are numbers) keeps every field as a book numbering its own addresses (packed rows)', () => {
    const field = fc.constantFrom('queued' as const, 'redial' as const, 'failures' as const, 'retry' as const, 'dial' as const, 'owner' as const, 'nearness' as const)
    const step = fc.record({ address: fc.nat({ max: 11 }), field, value: fc.nat({ max: 5 }) })
    fc.assert(
      fc.property(fc.array(step, { maxLength: 120, size: 'max' }), fc.nat({ max: 20 }), (steps, others) => {
        const numbers = new NodeIndex(64)
        // Another book on the same numbering numbered some addresses first: numbers are not rows 0, 1, ...
        const other = new AddressRows(64, numbers)
        for (let i = 0; i < others; i++) other.add(`/o/${i}`)
        const shared = new AddressRows(64, numbers)
        const own = new AddressRows(64)
        for (const { address: k, field: f, value: v } of steps) {
          const address = `/a/${k}`
          for (const rows of [shared, own]) {
            const state = rows.get(address) ?? rows.add(address)
            if (f === 'queued') state.queued = v % 2 === 0
            else if (f === 'redial') state.redial = ([undefined, 'hub', 'lost'] as const)[v % 3]
            else if (f === 'failures') state.consecutiveFailures = v
            else if (f === 'retry') state.retryAtMs = v * 1.5
            else if (f === 'dial') state.dialStartedAtMs = v === 0 ? undefined : v
            else if (f === 'owner') state.owner = v === 0 ? undefined : `n${v}`
            else state.nearness = v
          }
          const read = (rows: AddressRows) => new Map([...rows].map(([a, s]) => [a, [s.queued, s.redial, s.consecutiveFailures, s.retryAtMs, s.dialStartedAtMs, s.owner, s.nearness]]))
          expect(read(shared)).toEqual(read(own))
          expect(shared.size).toBe(own.size)
          for (let n = 1; n <= 5; n++) expect(shared.addressesOf(`n${n}`)).toEqual(own.addressesOf(`n${n}`))
          expect(shared.get('/a/none')).toBeUndefined()
          expect(shared.get('/o/0')).toBeUndefined()
        }
      }),
    )
  })

  it('keeps owners and their addresses past number 32,767 (the 2-byte owner columns widen), on its own numbering and a shared one', () => {
    for (const shared of [false, true]) {
      const n = 40_000
      const rows = shared ? new AddressRows(n + 10, new NodeIndex(n + 10), new NodeIndex(n + 10)) : new AddressRows(n + 10)
      for (let i = 0; i < n; i++) rows.add(`/a/${i}`).owner = `n${i}`
      // Owners with several addresses: a link from a high row to a low one, and back.
      rows.get('/a/0')!.owner = 'n39999'
      rows.get('/a/39998')!.owner = 'n1'
      rows.get('/a/1')!.owner = 'n39999'
      expect([rows.addressesOf('n39999'), rows.addressesOf('n1'), rows.addressesOf('n0'), rows.addressesOf('n32768')]).toEqual([['/a/39999', '/a/0', '/a/1'], ['/a/39998'], [], ['/a/32768']])
      expect(['/a/0', '/a/1', '/a/39998', '/a/5'].map((a) => rows.get(a)!.owner)).toEqual(['n39999', 'n39999', 'n1', 'n5'])
      rows.get('/a/39999')!.owner = undefined
      expect(rows.addressesOf('n39999')).toEqual(['/a/0', '/a/1'])
    }
  })

  it('holds at most its limit (the book checks it first): one more is an invariant violation', () => {
    const rows = new AddressRows(2)
    rows.add('/x')
    rows.add('/y')
    expect(() => rows.add('/z')).toThrow(/within the book limit/)
    expect(rows.size).toBe(2)
  })
})

describe('RouteColumns: trans, rcpt and vouchers by id (SetIds)', () => {
  it('reads back every set a row was given, counts each set once per row column holding it, and lets a set go when none does', () => {
    // More sets than SetIds starts with room for (16), so its counts grow.
    const poolSize = 24
    const column = fc.constantFrom('trans' as const, 'rcpt' as const, 'vouchers' as const)
    const op = fc.oneof(
      fc.record({ k: fc.constant('insert' as const), node: fc.nat({ max: 29 }) }),
      fc.record({ k: fc.constant('remove' as const), node: fc.nat({ max: 29 }) }),
      { arbitrary: fc.record({ k: fc.constant('set' as const), node: fc.nat({ max: 29 }), column, set: fc.nat({ max: poolSize - 1 }) }), weight: 4 },
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200, size: 'max' }), (steps) => {
        const ids = new SetIds()
        const columns = new RouteColumns(new NodeIndex(64), ids)
        // A set is held by one table of sets: each run makes its own (EMPTY_SET is everyone's, id 0).
        const pool = [EMPTY_SET, ...Array.from({ length: poolSize - 1 }, (_, i) => setOf([i, i + 40]).freeze())]
        const model = new Map<string, { trans: number; rcpt: number; vouchers: number }>()
        for (const s of steps) {
          const id = `n${s.node}`
          const row = columns.rowOf(id)
          if (s.k === 'insert' && row === undefined) {
            columns.insert(id)
            model.set(id, { trans: 0, rcpt: 0, vouchers: 0 })
          } else if (s.k === 'remove' && row !== undefined) {
            columns.remove(row)
            model.delete(id)
          } else if (s.k === 'set' && row !== undefined) {
            const view = columns.view(row)
            view[s.column] = pool[s.set]!
            model.get(id)![s.column] = s.set
          }
          const held = pool.map(() => 0)
          for (const sets of model.values()) for (const c of ['trans', 'rcpt', 'vouchers'] as const) held[sets[c]]!++
          expect({
            rows: [...model.keys()].map((d) => { const v = columns.view(columns.rowOf(d)!); return [v.trans, v.rcpt, v.vouchers] }),
            held: pool.slice(1).map((set) => { const i = set.heldAs(ids); return i < 0 ? 0 : ids.holdersOf(i) }),
            size: ids.size,
          }).toEqual({
            rows: [...model.values()].map((m) => [pool[m.trans], pool[m.rcpt], pool[m.vouchers]]),
            held: held.slice(1),
            size: held.slice(1).filter((n) => n > 0).length,
          })
        }
      }),
    )
  })
})

describe('AddressBook: the dial queue', () => {
  it('dials in the order addresses were wanted, and holds what is pending plus at most a quarter more (none once all are taken)', () => {
    const timing = { dialBackoffInitialMs: 1000, dialBackoffMaxMs: 60_000, redialBackoffMaxMs: 4000, lostRedialsPerSecondMax: 10 }
    // Each step wants address k (if not wanted before), or takes up to n dials and then ends the dials in flight (succeeded or failed).
    const step = fc.oneof(
      { arbitrary: fc.record({ k: fc.constant('want' as const), address: fc.nat({ max: 399 }) }), weight: 3 },
      // Mostly a few at a time, so many are taken while more are pending (the queue then drops its prefix); now and then all.
      fc.record({ k: fc.constant('take' as const), n: fc.oneof({ arbitrary: fc.integer({ min: 1, max: 12 }), weight: 30 }, fc.constant(400)), fail: fc.boolean() }),
    )
    fc.assert(
      fc.property(fc.array(step, { maxLength: 600, size: 'max' }), (steps) => {
        const book = new AddressBook(1000, 256, timing)
        for (let i = 0; i < 400; i++) book.learn(`/a/${i}`, `n${i}`)
        const pending: string[] = []
        const wanted = new Set<string>()
        for (const s of steps) {
          if (s.k === 'want') {
            const address = `/a/${s.address}`
            if (wanted.has(address)) continue
            wanted.add(address)
            book.want(address)
            pending.push(address)
            continue
          }
          const taken = book.takeDials(0, () => false, s.n).map((d) => d.address)
          expect(taken).toEqual(pending.splice(0, s.n))
          for (const address of taken) {
            if (s.fail) book.dialFailed(address, 0)
            else book.dialSucceeded(address, `n${address.slice(3)}`)
          }
          expect(book.dialQueueHeld - pending.length).toBeLessThanOrEqual(pending.length === 0 ? 0 : Math.max(64, pending.length / 3))
        }
      }),
    )
  })
})

describe('AddressBook: consecutive failures in a byte', () => {
  it('counts failures up to 255 and stays there, the back-off the same as with every failure counted (it stops doubling long before)', () => {
    expect(CORE_CONSTANTS.dialBackoffExponentMax + 1).toBeLessThan(CONSECUTIVE_FAILURES_MAX)
    const timing = { dialBackoffInitialMs: 1, dialBackoffMaxMs: 2 ** 40, redialBackoffMaxMs: 2 ** 40, lostRedialsPerSecondMax: 10 }
    const book = new AddressBook(10, 2, timing)
    book.learn('/a', 'n1')
    const seen: { failures: number; waitMs: number }[] = []
    for (let i = 1; i <= 300; i++) {
      book.redialNow('/a')
      expect(book.takeDials(0, () => false).map((d) => d.address)).toEqual(['/a'])
      book.dialFailed('/a', 0)
      const { consecutiveFailures, retryAtMs } = book.backoffOf('/a')!
      seen.push({ failures: consecutiveFailures, waitMs: retryAtMs })
    }
    expect(seen.map((s) => s.failures)).toEqual(seen.map((_, i) => Math.min(i + 1, 255)))
    expect(seen.map((s) => s.waitMs)).toEqual(seen.map((_, i) => 2 ** Math.min(i, CORE_CONSTANTS.dialBackoffExponentMax)))
  })
})
