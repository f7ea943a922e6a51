import { invariant } from './errors.ts'
import { NodeSet } from './nodeset.ts'

/**
 * trans and rcpt sets, interned: equal sets are one frozen object. Holders follow the topology
 * (who got an entry from the hub, a subnet's members), so the tables of a whole simulation hold a
 * few thousand distinct sets among millions of entries (400 processes, three subnets: 1,193
 * distinct rcpt and 1,592 distinct trans among 160,000 entries), while one copy per entry costs N
 * bits each (N³ bits in all). Sharing changes nothing anyone sees: rcpt never goes on the wire,
 * and a message carries each distinct trans set once, by content.
 *
 * An interned set is never changed in place: a new holder or a forgotten node gives another set.
 * One table per core, or one for every core of a simulator (`SharedNumbering.holders`): the sets
 * are in the shared numbering there, so a set one core made serves them all.
 */
export class HolderSets {
  private readonly buckets = new Map<number, NodeSet[]>()
  private count = 0

  /**
   * `max`: distinct sets remembered before the table starts afresh. Sets no entry holds any more
   * stay here until then, so this bounds that garbage; starting afresh loses only sharing with
   * the sets made before.
   */
  constructor(private readonly max: number) {
    invariant(max >= 1, 'a holder-set table holds at least one set')
  }

  get size(): number {
    return this.count
  }

  /** The one set equal to a ∪ {holder} ∪ b (holder < 0: none; b undefined: none); allocates only for a content not seen before. */
  union(a: NodeSet, holder: number, b: NodeSet | undefined): NodeSet {
    const hash = NodeSet.unionHash(a, holder, b)
    const bucket = this.buckets.get(hash)
    if (bucket !== undefined) {
      for (const known of bucket) if (known.equalsUnion(a, holder, b)) return known
    }
    return this.add(hash, NodeSet.union(a, holder, b).freeze())
  }

  /** The one set equal to `set` (`set` itself, frozen, if its content is new). */
  intern(set: NodeSet): NodeSet {
    const hash = NodeSet.unionHash(set, -1, undefined)
    const bucket = this.buckets.get(hash)
    if (bucket !== undefined) {
      for (const known of bucket) if (known === set || known.equalsUnion(set, -1, undefined)) return known
    }
    return this.add(hash, set.freeze())
  }

  /** The one set equal to `set` without `slot` (`set` itself if it lacks it). */
  without(set: NodeSet, slot: number): NodeSet {
    if (!set.has(slot)) return set
    const copy = set.clone()
    copy.delete(slot)
    return this.union(copy, -1, undefined)
  }

  private add(hash: number, set: NodeSet): NodeSet {
    if (this.count >= this.max) {
      this.buckets.clear()
      this.count = 0
    }
    const bucket = this.buckets.get(hash)
    if (bucket === undefined) this.buckets.set(hash, [set])
    else bucket.push(set)
    this.count++
    return set
  }
}
