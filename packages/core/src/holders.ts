import { invariant } from './errors.ts'
import { EMPTY_SET, NodeSet } from './nodeset.ts'
import { SetIds } from './set-ids.ts'

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
/** Memo slots of a core's own table: 1,024 recent operations, 32 KiB. */
export const HOLDER_MEMO_SLOTS_DEFAULT = 1_024
/** The memo's third key for a union without a second set, and for a removal (serials are ≥ 0). */
const MEMO_NO_SET = -2
const MEMO_WITHOUT = -3
/** The memo slot's third key for `covers` (its own memo: the slot only spreads the pairs). */
const MEMO_COVERS = -4
/** Slots of the `covers` memo at most: 4,096, 52 KiB (a simulator's shared union memo has 2^18, 8 MiB, to stay out of the processor's cache). */
const COVERS_MEMO_SLOTS_MAX = 4_096

export class HolderSets {
  /** The sets routing-table rows hold, by number (set-ids.ts): the columns keep ids, not references. */
  readonly ids = new SetIds()
  private readonly buckets = new Map<number, NodeSet[]>()
  private count = 0
  /** How many times the table started afresh (`add`): an answer kept from before is not this table's set. */
  private generation = 0
  /**
   * A direct-mapped memo of recent unions and removals: (serial of a, holder, serial of b or a
   * code) at slot `hash & (slots - 1)`, three numbers per slot, and the result beside it. A hit
   * costs a few compares instead of hashing and comparing N bits, which is what made a received
   * entry cost O(N) (the profile at 700 processes: `union` 25% of the run). A collision just
   * overwrites: the memo is a cache, the buckets stay the truth.
   */
  private readonly memoKeys: Float64Array
  private readonly memoSets: (NodeSet | undefined)[]
  private readonly memoMask: number
  /**
   * A direct-mapped memo of `covers` answers, as the one above: (serial of a, serial of b) at slot
   * `hash & (slots - 1)` and whether a ⊇ b beside it (1 yes, 0 no). As many slots as that memo,
   * at most COVERS_MEMO_SLOTS_MAX: the entries of one message ask about the same few pairs.
   */
  private readonly coversKeys: Float64Array
  private readonly coversAnswers: Uint8Array
  private readonly coversMask: number

  /**
   * `max`: distinct sets remembered before the table starts afresh. Sets no entry holds any more
   * stay here until then, so this bounds that garbage; starting afresh loses only sharing with
   * the sets made before. `memoSlots` (a power of two): how many recent operations the memo
   * keeps, 32 bytes each (a core's own table: 1,024, 32 KiB; a simulator's shared one: more).
   */
  constructor(
    private readonly max: number,
    memoSlots = HOLDER_MEMO_SLOTS_DEFAULT,
  ) {
    invariant(max >= 1, 'a holder-set table holds at least one set')
    invariant(memoSlots >= 1 && (memoSlots & (memoSlots - 1)) === 0, 'memoSlots is a power of two')
    this.memoKeys = new Float64Array(memoSlots * 3).fill(-1)
    this.memoSets = new Array<NodeSet | undefined>(memoSlots).fill(undefined)
    this.memoMask = memoSlots - 1
    const coversSlots = Math.min(memoSlots, COVERS_MEMO_SLOTS_MAX)
    this.coversKeys = new Float64Array(coversSlots * 2).fill(-1)
    this.coversAnswers = new Uint8Array(coversSlots)
    this.coversMask = coversSlots - 1
  }

  get size(): number {
    return this.count
  }

  /** The one set equal to a ∪ {holder} ∪ b (holder < 0: none; b undefined: none); allocates only for a content not seen before. */
  union(a: NodeSet, holder: number, b: NodeSet | undefined): NodeSet {
    // Only frozen sets are keys: their content never changes under their serial.
    const memoable = a.frozen && (b === undefined || b.frozen)
    const code = b === undefined ? MEMO_NO_SET : b.serial
    if (memoable) {
      const hit = this.recall(a.serial, holder, code)
      if (hit !== undefined) return hit
    }
    const result = this.unionSlow(a, holder, b)
    if (memoable) this.remember(a.serial, holder, code, result)
    return result
  }

  /**
   * The one set equal to {holder} ∪ b (`union(EMPTY_SET, holder, b)`): rcpt after a change, the
   * sender and its trans set (apply.ts). Every receiver of a round asks it of the same sender and
   * set, at times far apart: by then the memo above had mostly lost it (a recompute over N bits
   * for each: `equalsUnion` and `unionHash` grew 33 and 24 times from 2,000 to 5,000 processes in
   * three subnets). So the answer is kept on a frozen `b` itself, for this table and generation.
   */
  withHolder(holder: number, b: NodeSet): NodeSet {
    const memo = b.withHolderMemo
    if (memo !== undefined && memo.sets === this && memo.generation === this.generation && memo.holder === holder) return memo.union
    const union = this.union(EMPTY_SET, holder, b)
    if (b.frozen) b.withHolderMemo = { sets: this, generation: this.generation, holder, union }
    return union
  }

  /**
   * Whether `a` holds every member of `b` (`a.containsAll(b)`), remembered for frozen sets: their
   * content never changes under their serial. A hub's word (apply.ts `hubsServe`) asks it for
   * every entry applied, N/32 words each, with the same few sets (N³ in all: 4.4% of a
   * 2,000-process run of three subnets, 23 times what it was at 1,000).
   */
  covers(a: NodeSet, b: NodeSet): boolean {
    if (!a.frozen || !b.frozen) return a.containsAll(b)
    const slot = this.memoSlot(a.serial, b.serial, MEMO_COVERS) & this.coversMask
    const keys = this.coversKeys
    if (keys[2 * slot] === a.serial && keys[2 * slot + 1] === b.serial) return this.coversAnswers[slot] === 1
    const answer = a.containsAll(b)
    keys[2 * slot] = a.serial
    keys[2 * slot + 1] = b.serial
    this.coversAnswers[slot] = answer ? 1 : 0
    return answer
  }

  private unionSlow(a: NodeSet, holder: number, b: NodeSet | undefined): NodeSet {
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

  /** The one set equal to `set` without the members of `gone` (`set` itself if it has none of them). */
  withoutAll(set: NodeSet, gone: NodeSet): NodeSet {
    if (!set.intersects(gone)) return set
    const copy = set.clone()
    gone.forEach((slot) => copy.delete(slot))
    return this.intern(copy)
  }

  /** The one set equal to `set` without `slot` (`set` itself if it lacks it). */
  without(set: NodeSet, slot: number): NodeSet {
    if (!set.has(slot)) return set
    if (set.frozen) {
      const hit = this.recall(set.serial, slot, MEMO_WITHOUT)
      if (hit !== undefined) return hit
    }
    const copy = set.clone()
    copy.delete(slot)
    const result = this.unionSlow(copy, -1, undefined)
    if (set.frozen) this.remember(set.serial, slot, MEMO_WITHOUT, result)
    return result
  }

  private memoSlot(a: number, holder: number, code: number): number {
    let h = Math.imul(a | 0, 0x9e3779b1) ^ Math.imul(holder + 1, 0x85ebca6b) ^ Math.imul(code | 0, 0xc2b2ae35)
    h ^= h >>> 15
    return h & this.memoMask
  }

  private recall(a: number, holder: number, code: number): NodeSet | undefined {
    const slot = this.memoSlot(a, holder, code)
    const k = slot * 3
    const keys = this.memoKeys
    return keys[k] === a && keys[k + 1] === holder && keys[k + 2] === code ? this.memoSets[slot] : undefined
  }

  private remember(a: number, holder: number, code: number, result: NodeSet): void {
    const slot = this.memoSlot(a, holder, code)
    const k = slot * 3
    this.memoKeys[k] = a
    this.memoKeys[k + 1] = holder
    this.memoKeys[k + 2] = code
    this.memoSets[slot] = result
  }

  private add(hash: number, set: NodeSet): NodeSet {
    if (this.count >= this.max) {
      this.buckets.clear()
      this.count = 0
      // The memo's results are sets of the old table: a union must give the new table's one.
      this.memoKeys.fill(-1)
      this.memoSets.fill(undefined)
      this.generation++ // so too the answers kept on sets (`withHolder`)
    }
    const bucket = this.buckets.get(hash)
    if (bucket === undefined) this.buckets.set(hash, [set])
    else bucket.push(set)
    this.count++
    return set
  }
}
