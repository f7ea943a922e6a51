import { invariant } from './errors.ts'
import { grownNarrow, type NarrowColumn, widenedFor } from './narrow.ts'
import { NodeIndex } from './nodeindex.ts'
import type { NodeId, PhysicalAddress } from './types.ts'

/** Why an address is kept dialled (discovery.ts's `Redial`), stored as a number. */
const REDIAL_CODES = [undefined, 'hub', 'lost'] as const
type RedialCode = (typeof REDIAL_CODES)[number]
/** Rows the book starts with; it doubles from there. */
const ROWS_INITIAL = 16
const QUEUED = 1
const REDIAL_SHIFT = 1
/** The redial code's bits in `flags`. */
const REDIAL_MASK = 0b110
/** A row of an address learned, in a book whose rows are the address numbers (`rowIsNumber`). */
const LEARNED = 0x40
/** A row whose address was forgotten (`remove`), free for the next one learned. */
const FREE = 0x80
/**
 * Consecutive failures a row counts up to (it stays there): the back-off stops doubling at
 * dialBackoffExponentMax + 1 failures (31), so it is the same from there on, and a byte a row is
 * enough (4 were 3 bytes a (node, destination) pair more in a simulator, where every book holds
 * every address).
 */
export const CONSECUTIVE_FAILURES_MAX = 0xff

/**
 * The address book's per-address state (discovery.ts), in columns: a row per address learned, in
 * typed arrays (flags, failures, the owner's number and the owner's next address); retry and dial-start
 * times only for the rows that have one (see the fields).
 * An object per address cost ~90 bytes (72 for the object, 16 for the boxed dial-start time, a
 * fractional millisecond); with discovery every node learns every destination's address, so at
 * the end of a 400-process run (three subnets) the book's objects were the largest per-entry item
 * after the route table's. A row here is 19 bytes (and 4 per address number and per owner number, see the constructor)
 * and allocates nothing when it changes (a retry or dial-start time may grow its map).
 *
 * At most `max` rows (the book's `knownAddressesMax`), grown by doubling. A book with numberings
 * of its own (a real node's) forgets the addresses of a forgotten destination (`remove`: its row
 * and its number reused); a simulator's books, on shared numberings, never forget.
 */
export class AddressRows {
  /**
   * Address number (`numbers`) -> row, -1 for an address this book has not learned. Empty in a book
   * on a shared numbering (`rowIsNumber`).
   */
  private rowOfNumber: Int32Array = new Int32Array(0)
  /** Row -> address number: the row's address, and the order addresses were learned. Empty where `rowIsNumber`. */
  private numberOfRow: Int32Array = new Int32Array(0)
  /**
   * Whether a row is its address's number (LEARNED in `flags` once learned): in a book on a shared
   * numbering, which never forgets, so rows need not be packed for reuse. The two columns above
   * then stay empty: they were 8 bytes a (node, destination) pair in a simulator, where every book
   * learns nearly every address (heap snapshot, 1,000 processes, three subnets). Such a book lists
   * its addresses in number order, not in the order learned (nothing depends on the order: the
   * only walk, `AddressBook.setOwnAddresses`, sets each row by itself).
   */
  private readonly rowIsNumber: boolean
  /** Addresses learned, forgotten ones included (their rows are in `freeRows`). */
  private count = 0
  private capacity = 0
  /** QUEUED, and the redial code above REDIAL_SHIFT. */
  flags = new Uint8Array(0)
  /** Up to CONSECUTIVE_FAILURES_MAX. */
  consecutiveFailures = new Uint8Array(0)
  /**
   * Row -> earliest time a new dial may start, only for rows backed off or deferred (0, not
   * backed off, is not kept): at most one per row, so at most the book's limit; in a simulation
   * most rows never fail. A column cost 8 bytes a (node, destination) pair (heap snapshot at the
   * end of a 1,000-process run, three subnets).
   */
  private readonly retryAtMsOfRow = new Map<number, number>()
  /**
   * Row -> when its dial started, only while the dial is in flight: at most the book's dials in
   * flight (`dialsInFlightMax`), the rows of its `inFlight` set. A column cost 8 bytes a pair, as above.
   */
  private readonly dialStartedAtMsOfRow = new Map<number, number>()
  /**
   * Row -> its owner's number in `owners`, -1 for an owner not known. This and the owner links
   * below are 2 bytes a row while their numbers are below 32,768 (narrow.ts): 4 bytes a (node,
   * destination) pair fewer in a simulator of up to 32,767 processes.
   */
  private ownerOfRow: NarrowColumn = new Int16Array(0)
  /** Row -> the next row of the same owner, in the order it got them; -1 after the last. */
  private nextOfOwner: NarrowColumn = new Int16Array(0)
  /**
   * Where rows are numbers (`rowIsNumber`, a simulator's books) the same, only for rows with a next
   * (an owner with several addresses in this book; at most one per row), and `nextOfOwner` stays
   * empty: there owners have one address each, and the column was 4 bytes a (node, destination) pair.
   */
  private readonly nextOfOwnerMap = new Map<number, number>()
  /**
   * Owner number -> its first row, -1 for none. With the two columns above, a lost neighbour's
   * addresses are found without a walk of the book and without a map of owners: a Map of owner
   * -> address cost ~41 bytes a pair in a simulation where every node learns every address (heap
   * snapshot, 700 processes, three subnets), this ~12 (and 4 per owner number of the numbering).
   */
  private firstOfOwner: NarrowColumn = new Int16Array(0)
  /** Characters the address shares at the start with the nearest of our own addresses (dial order, discovery.ts's `takeDials`); text longer than 65,535 counts as 65,535. */
  nearness = new Uint16Array(0)

  /** Numbers for the owners' ids (`owners` of the constructor). */
  private readonly owners: NodeIndex
  /** Whether `owners` is the book's own: then an owner's number is released when it owns nothing here (a simulator's shared one is never released). */
  private readonly ownersOwn: boolean
  /** Whether `numbers` is the book's own: then a forgotten address gives its number back (`remove`). */
  private readonly numbersOwn: boolean
  /** Rows of forgotten addresses (`remove`), reused first: at most `max`. */
  private readonly freeRows: number[] = []

  /**
   * `numbers`: small integers for addresses (a `NodeIndex` over addresses; a book's own gives a
   * forgotten address's number back, a shared one never does), so the book finds a row through an array, not a map of its own. A
   * core has its own, for at most `max` addresses; a simulator's cores share one
   * (`SharedNumbering`), and each book then costs 4 bytes per address of the whole simulation
   * instead of a map entry per address it learned (the live set at the end of a 1,000-process run,
   * three subnets: 444 vs 461 MiB). `owners`: numbers for the owners' ids, the same way: a
   * simulator's shared node numbering, or the book's own, which holds only owners of some row (at
   * most `max`).
   */
  private readonly numbers: NodeIndex

  constructor(
    private readonly max: number,
    numbers?: NodeIndex,
    owners?: NodeIndex,
  ) {
    this.numbers = numbers ?? new NodeIndex(max)
    this.numbersOwn = numbers === undefined
    this.owners = owners ?? new NodeIndex(max)
    this.ownersOwn = owners === undefined
    this.rowIsNumber = !this.numbersOwn
  }

  get size(): number {
    return this.count - this.freeRows.length
  }

  /** The state of `address`, a view made on demand; undefined if not learned. */
  get(address: PhysicalAddress): AddressState | undefined {
    const row = this.rowOf(address)
    return row < 0 ? undefined : new AddressState(this, row)
  }

  /** Whether `address` (not learned yet) can be added: within the book's limit, and numbered or room to number it. */
  canAdd(address: PhysicalAddress): boolean {
    return this.size < this.max && (this.numbers.size < this.numbers.max || this.numbers.get(address) !== undefined)
  }

  /** A new address's state: no owner, not queued, not backed off. The caller checks `canAdd` first. */
  add(address: PhysicalAddress): AddressState {
    invariant(this.rowOf(address) < 0 && this.size < this.max, 'an address is added once, within the book limit')
    const number = this.numbers.intern(address)
    invariant(number !== undefined, 'an address is numbered within the numbering limit')
    const row = this.rowIsNumber ? number : (this.freeRows.pop() ?? this.count)
    if (this.rowIsNumber || row === this.count) this.count++
    if (row >= this.capacity) this.grow(row + 1)
    if (!this.rowIsNumber) {
      if (number >= this.rowOfNumber.length) this.rowOfNumber = grownInt32(this.rowOfNumber, Math.max(ROWS_INITIAL, number + 1, this.rowOfNumber.length * 2, this.numbers.expected), -1)
      this.rowOfNumber[number] = row
      this.numberOfRow[row] = number
    }
    this.flags[row] = this.rowIsNumber ? LEARNED : 0
    this.consecutiveFailures[row] = 0
    this.retryAtMsOfRow.delete(row)
    this.dialStartedAtMsOfRow.delete(row)
    this.ownerOfRow[row] = -1
    this.setNext(row, -1)
    this.nearness[row] = 0
    return new AddressState(this, row)
  }

  /**
   * Forgets `address`: its row and number are reused by addresses learned later. Only in a book
   * with numberings of its own (false otherwise, or if the address is not known). The caller
   * takes it out of its queue and sets first (discovery.ts `forgetLost`).
   */
  remove(address: PhysicalAddress): boolean {
    const row = this.rowOf(address)
    if (row < 0 || this.rowIsNumber || !this.ownersOwn) return false
    const owner = this.ownerOfRow[row]!
    if (owner >= 0) this.unlink(row, owner)
    this.rowOfNumber[this.numberOfRow[row]!] = -1
    this.numbers.release(address)
    this.retryAtMsOfRow.delete(row)
    this.dialStartedAtMsOfRow.delete(row)
    this.flags[row] = FREE
    this.freeRows.push(row)
    return true
  }

  /** Earliest time a new dial to `row` may start; 0 = not backed off. */
  retryAtMs(row: number): number {
    return this.retryAtMsOfRow.get(row) ?? 0
  }

  setRetryAtMs(row: number, ms: number): void {
    if (ms === 0) this.retryAtMsOfRow.delete(row)
    else this.retryAtMsOfRow.set(row, ms)
  }

  /** When the dial in flight to `row` started; undefined when none is. */
  dialStartedAtMs(row: number): number | undefined {
    return this.dialStartedAtMsOfRow.get(row)
  }

  setDialStartedAtMs(row: number, ms: number | undefined): void {
    if (ms === undefined) this.dialStartedAtMsOfRow.delete(row)
    else this.dialStartedAtMsOfRow.set(row, ms)
  }

  ownerOf(row: number): NodeId | undefined {
    const number = this.ownerOfRow[row]!
    return number < 0 ? undefined : this.owners.id(number)
  }

  /** `row` now belongs to `owner` (undefined: to no one known), last of its rows. */
  setOwner(row: number, owner: NodeId | undefined): void {
    const owners = this.owners
    const old = this.ownerOfRow[row]!
    if (old >= 0) {
      if (owners.id(old) === owner) return
      this.unlink(row, old)
    }
    if (owner === undefined) return
    const number = owners.intern(owner)
    // Its own numbering holds at most one owner per row; a shared one numbers every node.
    invariant(number !== undefined, 'an owner is numbered within the numbering limit')
    if (number >= this.firstOfOwner.length) this.firstOfOwner = grownNarrow(this.firstOfOwner, Math.max(ROWS_INITIAL, number + 1, this.firstOfOwner.length * 2, owners.expected), -1)
    this.ownerOfRow = widenedFor(this.ownerOfRow, number)
    this.ownerOfRow[row] = number
    this.setNext(row, -1)
    let at = this.firstOfOwner[number]!
    if (at < 0) {
      this.setFirst(number, row)
      return
    }
    while (this.nextOf(at) >= 0) at = this.nextOf(at)
    this.setNext(at, row)
  }

  /** The addresses of `owner`, in the order it got them. */
  addressesOf(owner: NodeId): PhysicalAddress[] {
    const number = this.owners.get(owner)
    const out: PhysicalAddress[] = []
    if (number === undefined || number >= this.firstOfOwner.length) return out
    for (let row = this.firstOfOwner[number]!; row >= 0; row = this.nextOf(row)) out.push(this.addressAt(row))
    return out
  }

  private setFirst(owner: number, row: number): void {
    this.firstOfOwner = widenedFor(this.firstOfOwner, row)
    this.firstOfOwner[owner] = row
  }

  /** The next row of `row`'s owner, -1 after the last. */
  private nextOf(row: number): number {
    return this.rowIsNumber ? (this.nextOfOwnerMap.get(row) ?? -1) : this.nextOfOwner[row]!
  }

  private setNext(row: number, next: number): void {
    if (!this.rowIsNumber) {
      this.nextOfOwner = widenedFor(this.nextOfOwner, next)
      this.nextOfOwner[row] = next
    } else if (next < 0) this.nextOfOwnerMap.delete(row)
    else this.nextOfOwnerMap.set(row, next)
  }

  /** Takes `row` out of its owner's (number `owner`) list; an owner of nothing gives its own number back. */
  private unlink(row: number, owner: number): void {
    if (this.firstOfOwner[owner] === row) this.setFirst(owner, this.nextOf(row))
    else {
      let at = this.firstOfOwner[owner]!
      while (this.nextOf(at) !== row) at = this.nextOf(at)
      this.setNext(at, this.nextOf(row))
    }
    this.ownerOfRow[row] = -1
    this.setNext(row, -1)
    if (this.ownersOwn && this.firstOfOwner[owner]! < 0) this.owners.release(this.owners.id(owner)!)
  }

  /** The state of a learned `row` (the dial queue's rows: discovery.ts), a view made on demand. */
  stateAt(row: number): AddressState {
    invariant(row < this.capacity && (this.flags[row]! & (this.rowIsNumber ? LEARNED : FREE)) === (this.rowIsNumber ? LEARNED : 0) && (this.rowIsNumber || row < this.count), 'a row asked for is learned')
    return new AddressState(this, row)
  }

  /** The address of a learned `row`. */
  addressAt(row: number): PhysicalAddress {
    const address = this.numbers.id(this.rowIsNumber ? row : this.numberOfRow[row]!)
    invariant(address !== undefined, 'a learned address keeps its number')
    return address
  }

  /** Every address learned with its state, in the order learned (in number order where `rowIsNumber`). */
  *[Symbol.iterator](): IterableIterator<[PhysicalAddress, AddressState]> {
    if (this.rowIsNumber) {
      for (let row = 0; row < this.capacity; row++) if ((this.flags[row]! & LEARNED) !== 0) yield [this.addressAt(row), new AddressState(this, row)]
      return
    }
    for (let row = 0; row < this.count; row++) if ((this.flags[row]! & FREE) === 0) yield [this.addressAt(row), new AddressState(this, row)]
  }

  private rowOf(address: PhysicalAddress): number {
    const number = this.numbers.get(address)
    if (number === undefined) return -1
    if (this.rowIsNumber) return number < this.capacity && (this.flags[number]! & LEARNED) !== 0 ? number : -1
    return number >= this.rowOfNumber.length ? -1 : this.rowOfNumber[number]!
  }

  /** Room for rows below `needed`. */
  private grow(needed: number): void {
    // Doubling, or at once to as many as the numbering expects (a simulator's: each book learns
    // about every address of the run), never past the book's limit (where rows are numbers, the
    // numbering's: its numbers are below its own limit, and the book holds at most its own).
    const bound = this.rowIsNumber ? this.numbers.max : this.max
    const capacity = Math.min(Math.max(ROWS_INITIAL, needed, this.capacity * 2, this.numbers.expected), Math.max(ROWS_INITIAL, bound))
    invariant(capacity >= needed && capacity > this.capacity, 'the address book grows within knownAddressesMax')
    const flags = new Uint8Array(capacity)
    flags.set(this.flags)
    this.flags = flags
    const failures = new Uint8Array(capacity)
    failures.set(this.consecutiveFailures)
    this.consecutiveFailures = failures
    if (!this.rowIsNumber) this.numberOfRow = grownInt32(this.numberOfRow, capacity, 0)
    const nearness = new Uint16Array(capacity)
    nearness.set(this.nearness)
    this.nearness = nearness
    this.ownerOfRow = grownNarrow(this.ownerOfRow, capacity, -1)
    if (!this.rowIsNumber) this.nextOfOwner = grownNarrow(this.nextOfOwner, capacity, -1)
    this.capacity = capacity
  }
}

/** `array` copied into a new one of `length`, the rest filled with `fill`. */
function grownInt32(array: Int32Array, length: number, fill: number): Int32Array {
  const grown = new Int32Array(length).fill(fill)
  grown.set(array)
  return grown
}

/** One address's state: a view of its row (see `AddressRows`), with the fields the book reads and writes. */
export class AddressState {
  constructor(
    private readonly rows: AddressRows,
    /** Its row in the book's columns (the dial queue holds rows: dial-queue.ts). */
    readonly row: number,
  ) {}

  get owner(): NodeId | undefined {
    return this.rows.ownerOf(this.row)
  }

  /** Its owner, last of the owner's addresses (`AddressRows.addressesOf`). */
  set owner(owner: NodeId | undefined) {
    this.rows.setOwner(this.row, owner)
  }

  get redial(): RedialCode {
    return REDIAL_CODES[(this.rows.flags[this.row]! & REDIAL_MASK) >> REDIAL_SHIFT]
  }

  set redial(why: RedialCode) {
    const code = REDIAL_CODES.indexOf(why)
    this.rows.flags[this.row] = (this.rows.flags[this.row]! & ~REDIAL_MASK) | (code << REDIAL_SHIFT)
  }

  get queued(): boolean {
    return (this.rows.flags[this.row]! & QUEUED) !== 0
  }

  set queued(queued: boolean) {
    const flags = this.rows.flags[this.row]!
    this.rows.flags[this.row] = queued ? flags | QUEUED : flags & ~QUEUED
  }

  get consecutiveFailures(): number {
    return this.rows.consecutiveFailures[this.row]!
  }

  /** Counts up to CONSECUTIVE_FAILURES_MAX and stays there. */
  set consecutiveFailures(n: number) {
    this.rows.consecutiveFailures[this.row] = Math.min(n, CONSECUTIVE_FAILURES_MAX)
  }

  /** Earliest time a new dial may start; 0 = not backed off. */
  get retryAtMs(): number {
    return this.rows.retryAtMs(this.row)
  }

  set retryAtMs(ms: number) {
    this.rows.setRetryAtMs(this.row, ms)
  }

  get dialStartedAtMs(): number | undefined {
    return this.rows.dialStartedAtMs(this.row)
  }

  set dialStartedAtMs(ms: number | undefined) {
    this.rows.setDialStartedAtMs(this.row, ms)
  }

  get nearness(): number {
    return this.rows.nearness[this.row]!
  }

  set nearness(characters: number) {
    this.rows.nearness[this.row] = Math.min(characters, 0xffff)
  }
}
