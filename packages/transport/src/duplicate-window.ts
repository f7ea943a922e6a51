import { invariant } from '@phoenix-overlay/core'

const EMPTY = 0
/** Slots per remembered pair at most: a linear-probing table stays under half full. */
const SLOTS_PER_PAIR = 2
/** Pairs the arrays hold before they first grow (doubling up to the window). */
const INITIAL_PAIRS = 1_024

/**
 * The last `windowMax` (source, message id) pairs delivered, oldest forgotten first: what a
 * receiver checks a message against to drop a retry whose first copy arrived.
 *
 * Typed arrays, not a Set of `source\nid` strings: one string per message was made, hashed and
 * kept until its pair left the window, so a full window held 65,536 of them on the heap (7.4 MiB),
 * and the garbage collector marked every one at each mark-compact. A receiver of a bulk transfer
 * runs a mark-compact every few hundred milliseconds (bench/REPORT.md, "Node's young generation
 * after small messages"), so that was paid over and over. Here a pair is two numbers in a ring
 * and a slot in an open-addressing table (linear probing, deletion by backward shift); the only
 * objects are the sources' ids, each once. Memory: 16 bytes per pair the window has held, the
 * arrays doubling from 1,024 pairs up to `windowMax` (1 MiB at the default 65,536).
 */
export class DuplicateWindow {
  /** Ring of remembered pairs, in delivery order: the source's number and the message id. */
  private ringSource = new Int32Array(0)
  private ringId = new Uint32Array(0)
  /** Pairs in the ring; once it reaches windowMax, `next` is the oldest (overwritten next). */
  private count = 0
  private next = 0
  /** Open addressing: ring position + 1 of the pair in each slot, EMPTY for none. */
  private slots = new Int32Array(0)
  /** Sources numbered while a pair of theirs is in the window, with how many pairs each has there. */
  private readonly sourceNumber = new Map<string, number>()
  private readonly sourceIds: (string | undefined)[] = []
  private readonly sourceRefs: number[] = []
  private readonly freeNumbers: number[] = []

  constructor(readonly windowMax: number) {
    invariant(Number.isInteger(windowMax) && windowMax >= 0, 'duplicateWindowMax is a non-negative integer')
  }

  get size(): number {
    return this.count
  }

  /** Distinct sources with a pair in the window. */
  get sources(): number {
    return this.sourceNumber.size
  }

  has(source: string, messageId: number): boolean {
    const number = this.sourceNumber.get(source)
    return number !== undefined && this.slotOf(number, messageId) >= 0
  }

  /** Remembers a delivered pair (the caller checked `has` first), forgetting the oldest if the window is full. */
  remember(source: string, messageId: number): void {
    if (this.windowMax === 0) return
    const full = this.count === this.windowMax
    if (full) this.forget(this.next)
    else if (this.count === this.ringId.length) this.grow()
    const at = full ? this.next : this.count
    this.ringSource[at] = this.numberOf(source)
    this.ringId[at] = messageId
    this.insert(at)
    if (full) this.next = (this.next + 1) % this.windowMax
    else this.count++
    invariant(this.count <= this.windowMax && this.sourceNumber.size <= this.count, 'the window holds at most duplicateWindowMax pairs')
  }

  private numberOf(source: string): number {
    let number = this.sourceNumber.get(source)
    if (number === undefined) {
      number = this.freeNumbers.pop() ?? this.sourceRefs.length
      this.sourceNumber.set(source, number)
      this.sourceIds[number] = source
      this.sourceRefs[number] = 0
    }
    this.sourceRefs[number]!++
    return number
  }

  /** The pair at ring position `at` leaves the window (its slot and, if it was its source's last, the source's number). */
  private forget(at: number): void {
    const number = this.ringSource[at]!
    this.removeSlot(this.slotOf(number, this.ringId[at]!))
    if (--this.sourceRefs[number]! > 0) return
    this.sourceNumber.delete(this.sourceIds[number]!)
    this.sourceIds[number] = undefined
    this.freeNumbers.push(number)
  }

  private hash(number: number, messageId: number): number {
    return (Math.imul(number, 0x9e3779b1) ^ Math.imul(messageId, 0x85ebca6b)) & (this.slots.length - 1)
  }

  /** The slot holding (number, messageId), or -1. */
  private slotOf(number: number, messageId: number): number {
    const mask = this.slots.length - 1
    if (mask < 0) return -1
    for (let slot = this.hash(number, messageId); ; slot = (slot + 1) & mask) {
      const entry = this.slots[slot]!
      if (entry === EMPTY) return -1
      if (this.ringId[entry - 1] === messageId && this.ringSource[entry - 1] === number) return slot
    }
  }

  private insert(at: number): void {
    const mask = this.slots.length - 1
    let slot = this.hash(this.ringSource[at]!, this.ringId[at]!)
    while (this.slots[slot] !== EMPTY) slot = (slot + 1) & mask
    this.slots[slot] = at + 1
  }

  /** Empties `slot` and moves later entries of its probe run back, so every entry stays reachable from its hash. */
  private removeSlot(slot: number): void {
    invariant(slot >= 0, 'a pair in the ring has a slot')
    const mask = this.slots.length - 1
    let hole = slot
    for (let probe = (slot + 1) & mask; this.slots[probe] !== EMPTY; probe = (probe + 1) & mask) {
      const entry = this.slots[probe]!
      const home = this.hash(this.ringSource[entry - 1]!, this.ringId[entry - 1]!)
      // The entry may move into the hole unless its home lies cyclically in (hole, probe].
      const stays = hole <= probe ? home > hole && home <= probe : home > hole || home <= probe
      if (stays) continue
      this.slots[hole] = entry
      hole = probe
    }
    this.slots[hole] = EMPTY
  }

  /** Doubles the ring (up to windowMax) and rebuilds the table for it; only while the ring is not yet full, so positions stay. */
  private grow(): void {
    const pairs = Math.min(this.windowMax, Math.max(INITIAL_PAIRS, this.ringId.length * 2))
    const ringSource = new Int32Array(pairs)
    ringSource.set(this.ringSource)
    const ringId = new Uint32Array(pairs)
    ringId.set(this.ringId)
    this.ringSource = ringSource
    this.ringId = ringId
    let slots = 1
    while (slots < pairs * SLOTS_PER_PAIR) slots *= 2
    this.slots = new Int32Array(slots)
    for (let at = 0; at < this.count; at++) this.insert(at)
  }
}
