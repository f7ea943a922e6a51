import type { AddressVersions } from './record-addresses.ts'
import type { NodeId } from './types.ts'

/**
 * Small integers for the node ids a core knows (destinations, neighbours, and nodes named in
 * the trans sets it receives), so trans/rcpt can be bitsets. Indexing every known node, not
 * only neighbours, is what lets a node remember that a future neighbour already got an entry
 * from a hub: without it, every new connection costs a full table (packages/core/README.md).
 * The address book numbers addresses with one too (address-rows.ts), releasing those it forgets.
 * Numbers are freed by expiry (a destination forgotten) and when the numbering runs short, those
 * of nodes named only in slot tables (expiry.ts `makeRoom`).
 */
export class NodeIndex {
  private readonly indexOf = new Map<NodeId, number>()
  private readonly idAt: (NodeId | undefined)[] = []
  private readonly free: number[] = []

  /**
   * How many ids this numbering expects to hold (a simulator knows its node count; 0 = unknown):
   * tables over it size for that many at their first growth instead of doubling up to it. A hint,
   * never a bound: `max` is the bound.
   */
  expected = 0

  /**
   * A simulator's shared numbering also keeps the distinct address lists of each node's records
   * (record-addresses.ts), so the routing tables over it keep a 1-byte version a row instead of a
   * reference. Undefined in a core's own numbering.
   */
  addressVersions: AddressVersions | undefined

  /** `max`: how many ids may be numbered at once (the bound of every table indexed by node). */
  constructor(readonly max: number) {}

  get size(): number {
    return this.indexOf.size
  }

  /** One more than the largest index ever handed out: how wide a set over these indices gets. */
  get highWater(): number {
    return this.idAt.length
  }

  get(id: NodeId): number | undefined {
    return this.indexOf.get(id)
  }

  id(index: number): NodeId | undefined {
    return this.idAt[index]
  }

  /** The index of `id`, allocated if new; undefined when the index is full (the id then goes unremembered). */
  intern(id: NodeId): number | undefined {
    const existing = this.indexOf.get(id)
    if (existing !== undefined) return existing
    if (this.indexOf.size >= this.max) return undefined
    const index = this.free.pop() ?? this.idAt.length
    this.indexOf.set(id, index)
    this.idAt[index] = id
    return index
  }

  /** Frees `id`'s index; the caller must first clear it from every set. */
  release(id: NodeId): number | undefined {
    const index = this.indexOf.get(id)
    if (index === undefined) return undefined
    this.indexOf.delete(id)
    this.idAt[index] = undefined
    this.free.push(index)
    return index
  }
}
