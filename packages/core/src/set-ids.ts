import { invariant } from './errors.ts'
import { EMPTY_SET, type NodeSet } from './nodeset.ts'

/** The id of `EMPTY_SET` in every `SetIds`: a blank row's sets, never counted. */
export const EMPTY_SET_ID = 0

/**
 * The interned sets the routing table's rows hold (trans, rcpt, vouchers: `HolderSets`), by
 * number: a row keeps three 4-byte ids in typed columns where it kept three 8-byte references,
 * 12 bytes a (node, destination) pair (RouteColumns). Each set is counted once per row column
 * that holds it and keeps its id while counted; at zero it lets the set go and its id is reused.
 * So this holds what the rows hold and nothing else: at most three sets per row (fewer: rows
 * share sets), and is where the rows' sets are kept alive. One per `HolderSets`: a core's own, or
 * one for every core of a simulator (`SharedNumbering.holders`), whose sets all cores share.
 */
export class SetIds {
  /** Set by id; undefined where the id is free. Id 0 is `EMPTY_SET`'s for good. */
  private readonly sets: (NodeSet | undefined)[] = [EMPTY_SET]
  /** How many row columns hold each id (id 0 aside). */
  private refs = new Int32Array(16)
  /** Ids free for reuse (at most the high-water mark of ids in use). */
  private readonly free: number[] = []
  private used = 0

  /** Sets held now, `EMPTY_SET` aside. */
  get size(): number {
    return this.used
  }

  /** The set with id `id` (held by some row). */
  at(id: number): NodeSet {
    const set = this.sets[id]
    invariant(set !== undefined, 'a row holds a set by an id in use')
    return set
  }

  /** A row column now holds `set`: its id, one more holder counted. */
  retain(set: NodeSet): number {
    if (set === EMPTY_SET) return EMPTY_SET_ID
    let id = set.heldAs(this)
    if (id < 0) {
      id = this.free.pop() ?? this.sets.length
      if (id >= this.refs.length) {
        const grown = new Int32Array(Math.max(id + 1, this.refs.length * 2))
        grown.set(this.refs)
        this.refs = grown
      }
      this.sets[id] = set
      set.holdAs(this, id)
      this.used++
    }
    this.refs[id]!++
    return id
  }

  /** A row column no longer holds the set with id `id`: at zero holders, the set goes and its id is free. */
  release(id: number): void {
    if (id === EMPTY_SET_ID) return
    invariant(this.refs[id]! > 0, 'a set is released once per holder')
    if (--this.refs[id]! > 0) return
    this.sets[id]!.holdAs(undefined, -1)
    this.sets[id] = undefined
    this.free.push(id)
    this.used--
  }

  /** How many row columns hold `id` (tests). */
  holdersOf(id: number): number {
    return id === EMPTY_SET_ID ? Number.POSITIVE_INFINITY : this.refs[id]!
  }
}
