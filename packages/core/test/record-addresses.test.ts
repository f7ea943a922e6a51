import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { AddressVersions, RecordAddresses } from '../src/record-addresses.ts'

describe('RecordAddresses: the routing table\'s column of the records\' addresses', () => {
  it('reads back the addresses each row was given (a column of references before), on its own numbering or a shared one, as other tables write theirs', () => {
    // Each step gives row `row` of table `table` the list numbered `list` (a new array of it each time; 0 = empty).
    const lists = [[], ['/a'], ['/b'], ['/a', '/b'], ['/b', '/a']]
    const steps = fc.array(fc.record({ table: fc.nat({ max: 2 }), row: fc.nat({ max: 9 }), list: fc.nat({ max: lists.length - 1 }) }), { maxLength: 200, size: 'max' })
    fc.assert(
      fc.property(steps, fc.boolean(), (ops, shared) => {
        const versions = shared ? new AddressVersions() : undefined
        const tables = [0, 1, 2].map(() => new RecordAddresses(versions))
        for (const t of tables) t.grow(10)
        const model = tables.map(() => Array.from({ length: 10 }, () => [] as string[]))
        for (const { table, row, list } of ops) {
          tables[table]!.set(row, [...lists[list]!])
          model[table]![row] = lists[list]!
          expect(tables.map((t) => model[0]!.map((_, r) => t.of(r)))).toEqual(model)
        }
        // Growing keeps every row.
        for (const t of tables) t.grow(20)
        expect(tables.map((t) => model[0]!.map((_, r) => t.of(r)))).toEqual(model)
      }),
    )
  })

  it('keeps a row whose node had more lists than its versions number (past 254) as the list itself', () => {
    const versions = new AddressVersions()
    const a = new RecordAddresses(versions)
    const b = new RecordAddresses(versions)
    a.grow(4)
    b.grow(4)
    for (let i = 0; i < 300; i++) a.set(1, [`/p/${i}`])
    expect(a.of(1)).toEqual(['/p/299'])
    b.set(1, ['/p/3'])
    b.set(2, ['/q'])
    expect([b.of(1), b.of(2), a.of(1), a.of(0)]).toEqual([['/p/3'], ['/q'], ['/p/299'], []])
    // Written again with an early list, the row leaves the map for its version.
    expect(a.listsKept).toBe(1)
    a.set(1, ['/p/0'])
    expect([a.of(1), a.listsKept]).toEqual([['/p/0'], 0])
  })
})
