import { describe, expect, it } from 'vitest'
import { NameHolders } from '../src/names.ts'
import { NodeIndex } from '../src/nodeindex.ts'
import { RouteTable } from '../src/table.ts'

describe('RouteTable.has(entry)', () => {
  it('reads an entry by its row: in the table until it expires, not after (its number still held)', () => {
    const index = new NodeIndex(16)
    const table = new RouteTable('self', index, 0, [], [], undefined, new NameHolders('self', 8, 1000, 1000))
    const entry = table.insert('far', 1, 'near')! // an odd number: unreachable, so it may expire
    expect(table.has(entry)).toBe(true)
    table.dirty.clear()
    expect(table.expire(10_000, 1).map((e) => e.destination)).toEqual(['far'])
    expect(index.get('far')).toBe(entry.row) // the caller frees numbers: the row still names it
    expect(table.has(entry)).toBe(false)
  })
})
