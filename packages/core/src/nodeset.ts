import { invariant } from './errors.ts'

/**
 * A set of nodes, as a bitset over the owning core's node indices (see NodeIndex). trans and
 * rcpt of every routing entry are such sets: a word-wise OR/AND-NOT keeps the send decision for
 * one entry at O(nodes / 32). Sets are shared between entries copy-on-write: a frozen set is
 * never changed in place (except to forget a node everywhere), so a thousand entries that
 * arrived in one message hold one set, not a thousand.
 */
/** The next `NodeSet.serial`: sets are told apart by number in `HolderSets`' memo. */
let nextSerial = 0

/** {holder} ∪ a set, as the table of sets `sets` (in its `generation`) gave it (`HolderSets.withHolder`). */
export interface WithHolderMemo {
  readonly sets: object
  readonly generation: number
  readonly holder: number
  readonly union: NodeSet
}

export class NodeSet {
  private words: Uint32Array
  private isFrozen = false
  /** A number no other set in this process has: what `HolderSets` keys its memo on (2^53 sets before a repeat). */
  readonly serial = nextSerial++
  /** The `SetIds` that holds this set for routing-table rows, and its id there (-1: none does). */
  private holder: object | undefined = undefined
  private holderId = -1
  /** `HolderSets.withHolder`'s last answer for this set, kept on it (for that class only). */
  withHolderMemo: WithHolderMemo | undefined = undefined

  constructor(capacityBits = 32) {
    this.words = new Uint32Array(Math.max(1, Math.ceil(capacityBits / 32)))
  }

  /** Its id in `ids` (set-ids.ts), -1 if `ids` does not hold it. */
  heldAs(ids: object): number {
    invariant(this.holder === undefined || this.holder === ids, 'a set is held by the ids of one table of sets')
    return this.holder === ids ? this.holderId : -1
  }

  /** For `SetIds` only: `ids` holds this set as `id` (undefined, -1: no longer). */
  holdAs(ids: object | undefined, id: number): void {
    this.holder = ids
    this.holderId = id
  }

  get frozen(): boolean {
    return this.isFrozen
  }

  freeze(): this {
    this.isFrozen = true
    return this
  }

  /** A mutable copy. */
  clone(): NodeSet {
    const copy = new NodeSet(0)
    copy.words = this.words.slice()
    return copy
  }

  /** Removes `slot` even from a frozen set: used only when a node is forgotten everywhere. */
  forget(slot: number): void {
    const i = slot >>> 5
    if (i < this.words.length) this.words[i]! &= ~(1 << (slot & 31))
  }

  private ensure(slot: number): void {
    const need = (slot >>> 5) + 1
    if (need <= this.words.length) return
    const grown = new Uint32Array(Math.max(need, this.words.length * 2))
    grown.set(this.words)
    this.words = grown
  }

  add(slot: number): void {
    if (this.isFrozen) throw new Error('NodeSet is frozen')
    this.ensure(slot)
    this.words[slot >>> 5]! |= 1 << (slot & 31)
  }

  delete(slot: number): void {
    if (this.isFrozen) throw new Error('NodeSet is frozen')
    const i = slot >>> 5
    if (i < this.words.length) this.words[i]! &= ~(1 << (slot & 31))
  }

  /** This set without `slot`, frozen: itself if `slot` is absent, else a copy (copy-on-write). */
  without(slot: number): NodeSet {
    if (!this.has(slot) && this.frozen) return this
    const copy = this.clone()
    copy.delete(slot)
    return copy.freeze()
  }

  has(slot: number): boolean {
    const i = slot >>> 5
    return i < this.words.length && (this.words[i]! & (1 << (slot & 31))) !== 0
  }

  clear(): void {
    if (this.isFrozen) throw new Error('NodeSet is frozen')
    this.words.fill(0)
  }

  addAll(other: NodeSet): void {
    if (this.isFrozen) throw new Error('NodeSet is frozen')
    if (other.words.length > this.words.length) this.ensure(other.words.length * 32 - 1)
    for (let i = 0; i < other.words.length; i++) this.words[i]! |= other.words[i]!
  }

  /** True if this set and `other` have a member in common. */
  intersects(other: NodeSet): boolean {
    const n = Math.min(this.words.length, other.words.length)
    for (let i = 0; i < n; i++) if ((this.words[i]! & other.words[i]!) !== 0) return true
    return false
  }

  /** True if every member of `other` is in this set. */
  containsAll(other: NodeSet): boolean {
    const o = other.words
    for (let i = 0; i < o.length; i++) {
      const w = o[i]!
      // `w & ~mine` rather than `(mine & w) !== w`: & yields a signed int32, so the latter is never
      // equal when bit 31 is set, and a set would not contain itself (found by the shared-numbering
      // property test, which compares traces between two numberings).
      if (w !== 0 && (i >= this.words.length || (w & ~this.words[i]!) !== 0)) return false
    }
    return true
  }

  /**
   * A frozen set of `map[i]` for every bit i set in the wire bitset `bytes` (entries of `map`
   * below 0 are skipped): the translation of a sender's trans set into our node indices, done
   * byte by byte into words sized once.
   */
  static translate(bytes: Uint8Array, map: Int32Array, capacityBits: number): NodeSet {
    const set = new NodeSet(capacityBits)
    const words = set.words
    const limit = Math.min(bytes.length, Math.ceil(map.length / 8))
    for (let i = 0; i < limit; i++) {
      let b = bytes[i]!
      while (b !== 0) {
        const bit = 31 - Math.clz32(b & -b)
        b &= b - 1
        const slot = i * 8 + bit
        const index = slot < map.length ? map[slot]! : -1
        if (index >= 0) {
          if (index >>> 5 >= words.length) {
            set.ensure(index)
            return NodeSet.translateSlow(bytes, map, set)
          }
          words[index >>> 5]! |= 1 << (index & 31)
        }
      }
    }
    return set.freeze()
  }

  private static translateSlow(bytes: Uint8Array, map: Int32Array, set: NodeSet): NodeSet {
    forEachBit(bytes, (slot) => {
      const index = slot < map.length ? map[slot]! : -1
      if (index >= 0) set.add(index)
    })
    return set.freeze()
  }

  /**
   * Word `i` of a ∪ {holder} ∪ b (holder < 0: none; b undefined: none), without building the set:
   * what `HolderSets.union` hashes and compares before it allocates anything.
   */
  static unionWord(a: NodeSet, holder: number, b: NodeSet | undefined, i: number): number {
    let w = a.words[i] ?? 0
    if (b !== undefined) w |= b.words[i] ?? 0
    if (holder >= 0 && holder >>> 5 === i) w |= 1 << (holder & 31)
    return w | 0
  }

  /** How many words a ∪ {holder} ∪ b spans at most. */
  static unionWidth(a: NodeSet, holder: number, b: NodeSet | undefined): number {
    return Math.max(a.words.length, b?.words.length ?? 0, holder >= 0 ? (holder >>> 5) + 1 : 0)
  }

  /** A hash of a ∪ {holder} ∪ b's members (trailing zero words ignored: equal sets of different widths agree). */
  static unionHash(a: NodeSet, holder: number, b: NodeSet | undefined): number {
    let i = NodeSet.unionWidth(a, holder, b) - 1
    while (i >= 0 && NodeSet.unionWord(a, holder, b, i) === 0) i--
    let h = 0x811c9dc5
    for (; i >= 0; i--) h = Math.imul(h ^ NodeSet.unionWord(a, holder, b, i), 0x01000193) ^ i
    return h >>> 0
  }

  /** True if this set has exactly the members of a ∪ {holder} ∪ b. */
  equalsUnion(a: NodeSet, holder: number, b: NodeSet | undefined): boolean {
    const width = Math.max(this.words.length, NodeSet.unionWidth(a, holder, b))
    // Both sides as int32: a Uint32Array yields unsigned numbers, unionWord signed ones.
    for (let i = 0; i < width; i++) if (((this.words[i] ?? 0) | 0) !== NodeSet.unionWord(a, holder, b, i)) return false
    return true
  }

  /** a ∪ {holder} ∪ b as a new (mutable) set. */
  static union(a: NodeSet, holder: number, b: NodeSet | undefined): NodeSet {
    const set = new NodeSet(NodeSet.unionWidth(a, holder, b) * 32)
    for (let i = 0; i < set.words.length; i++) set.words[i] = NodeSet.unionWord(a, holder, b, i)
    return set
  }

  isEmpty(): boolean {
    for (let i = 0; i < this.words.length; i++) if (this.words[i] !== 0) return false
    return true
  }

  /** Whether some member of `universe` is in neither `a` nor `b` (`forEachMissing` would visit one). */
  static anyMissing(universe: NodeSet, a: NodeSet, b: NodeSet): boolean {
    const u = universe.words
    const aw = a.words
    const bw = b.words
    for (let i = 0; i < u.length; i++) {
      let w = u[i]!
      if (w === 0) continue
      if (i < aw.length) w &= ~aw[i]!
      if (i < bw.length) w &= ~bw[i]!
      if (w !== 0) return true
    }
    return false
  }

  /** Slots in `universe` that are in neither `a` nor `b`, i.e. universe \ (a ∪ b). */
  static forEachMissing(universe: NodeSet, a: NodeSet, b: NodeSet, visit: (slot: number) => void): void {
    const u = universe.words
    const aw = a.words
    const bw = b.words
    // No read past the end of `a` or `b` (an out-of-bounds typed-array read takes V8's slow path:
    // 13% of a 2,000-process run was this loop).
    const na = Math.min(u.length, aw.length)
    const nb = Math.min(u.length, bw.length)
    for (let i = 0; i < u.length; i++) {
      let w = u[i]!
      if (w === 0) continue
      if (i < na) w &= ~aw[i]!
      if (i < nb) w &= ~bw[i]!
      while (w !== 0) {
        const bit = 31 - Math.clz32(w & -w)
        visit((i << 5) | bit)
        w &= w - 1
      }
    }
  }

  forEach(visit: (slot: number) => void): void {
    for (let i = 0; i < this.words.length; i++) {
      let w = this.words[i]!
      while (w !== 0) {
        const bit = 31 - Math.clz32(w & -w)
        visit((i << 5) | bit)
        w &= w - 1
      }
    }
  }

  size(): number {
    let n = 0
    for (let i = 0; i < this.words.length; i++) {
      let w = this.words[i]!
      while (w !== 0) {
        w &= w - 1
        n++
      }
    }
    return n
  }

  /** The set as bytes (little-endian bit order), trailing zero bytes trimmed: the wire form of trans. */
  toBytes(): Uint8Array {
    let last = this.words.length - 1
    while (last >= 0 && this.words[last] === 0) last--
    if (last < 0) return new Uint8Array(0)
    const bytes = new Uint8Array((last + 1) * 4)
    for (let i = 0; i <= last; i++) {
      const w = this.words[i]!
      bytes[i * 4] = w & 0xff
      bytes[i * 4 + 1] = (w >>> 8) & 0xff
      bytes[i * 4 + 2] = (w >>> 16) & 0xff
      bytes[i * 4 + 3] = (w >>> 24) & 0xff
    }
    let end = bytes.length
    while (end > 0 && bytes[end - 1] === 0) end--
    return bytes.subarray(0, end)
  }
}

/** Visits the indices of the bits set in a wire bitset (as produced by `NodeSet.toBytes`). */
export function forEachBit(bytes: Uint8Array, visit: (index: number) => void): void {
  for (let i = 0; i < bytes.length; i++) {
    let b = bytes[i]!
    while (b !== 0) {
      const bit = 31 - Math.clz32(b & -b)
      visit(i * 8 + bit)
      b &= b - 1
    }
  }
}

/** The empty set every entry starts with; frozen, so it is shared by all. */
export const EMPTY_SET = new NodeSet(32).freeze()
