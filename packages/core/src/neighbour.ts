import { invariant } from './errors.ts'
import { grownNarrow, type NarrowColumn, widenedFor } from './narrow.ts'
import type { NodeSet } from './nodeset.ts'
import { isValidSeq } from './seq.ts'
import type { NodeId, RoutingMode } from './types.ts'
import { UpdateBudgets } from './update-budgets.ts'

/** A sender's last slot table and the node index of each slot (see `Neighbour.senderSlots`). */
export interface SenderSlots {
  readonly table: readonly NodeId[]
  readonly map: Int32Array
  /** Every node of the table, interned, once a message with `UpdateMessage.allServed` asked (apply.ts). */
  served?: NodeSet
}

/** The bit of each flag in a slot's `flags` column. */
export const FLAG_BITS = { ownWaitsForHello: 1, helloDue: 2, needsWholeTable: 4 } as const
/** `Neighbour.awaitingHello`'s bit in the same column (not counted by the table). */
const AWAITING_HELLO_BIT = 8
/** Set once the neighbour advertised its own record on this connection (`Neighbour.ownerSeqHeard` is then its column's value). */
const OWNER_SEQ_HEARD_BIT = 16
export type NeighbourFlag = keyof typeof FLAG_BITS
export const NEIGHBOUR_FLAGS: readonly NeighbourFlag[] = ['ownWaitsForHello', 'helloDue', 'needsWholeTable']

/** The flags a new connection starts with in `mode`. */
export function initialFlags(mode: RoutingMode): number {
  return mode === 'optimized' ? FLAG_BITS.helloDue | AWAITING_HELLO_BIT : FLAG_BITS.needsWholeTable
}

/**
 * Connection numbers and positions in the log of losses are stored in Int32Array columns: a core
 * that opened (or lost) this many connections has run for 68 years at one a second (asserted when
 * one is written; connection 0 marks a free slot).
 */
export const CONNECTIONS_MAX = 2 ** 31 - 1

/**
 * How much a full set of columns grows: by a quarter (at least 16 rows). Doubling left them 0.58
 * full on average at the end of a simulation of three subnets (0.44 connections a (node,
 * destination) pair in 0.76 rows); a quarter keeps ~0.9, for a copy of every column ~4 times as
 * often, each a few kilobytes.
 */
export function grownCapacity(capacity: number, needed: number): number {
  return Math.max(needed, capacity + Math.max(16, capacity >> 2))
}

/**
 * What we know of each open connection, one row per neighbour slot, in typed columns: an object
 * per connection (the `Neighbour` record it replaces, 104 bytes, and the two arrays holding it)
 * cost ~60 bytes a (node, destination) pair in a simulation of three subnets, which has ~0.43
 * connections a pair. A slot's row is written when its connection opens and read through
 * `Neighbour` views. At most neighboursMax rows (the core refuses connections past it, and a freed
 * slot is reused lowest first), grown by doubling.
 */
export class NeighbourColumns {
  /**
   * Which connection holds the slot (`Neighbour.connection`, numbered from 1); 0: the slot is
   * free. Read through `connectionAt`. Undefined while slot s holds connection s + 1 (below
   * `implicitConnections`, free past it): until a connection closes, each opens in the next slot
   * with the next number. Made at the first that does not (`connectionColumn`). With `lostCursor`'s
   * and `NeighbourTable`'s order, 7.5 bytes a (node, destination) pair on one subnet, where no
   * connection closes (heap snapshot, 1,500 processes).
   */
  private connection: NarrowColumn | undefined = undefined
  private implicitConnections = 0
  /** The neighbour's number in the core's `NodeIndex`. */
  index: NarrowColumn = new Int16Array(0)
  /** Bits of `FLAG_BITS` and `AWAITING_HELLO_BIT`. */
  flags = new Uint8Array(0)
  /**
   * `Neighbour.ownerSeqHeard` (a sequence number is unsigned 32-bit), meaningful once
   * `OWNER_SEQ_HEARD_BIT` is set: 2 bytes a slot while every number heard is below 65,536 (a
   * record's seq grows by two a change from `initialSeq`, 0 unless configured), 4 from the first
   * that is not (`setOwnerSeqHeard`). 4 were 4.9 bytes a (node, destination) pair on one subnet
   * (heap snapshot, 1,500 processes), where every pair is a connection.
   */
  private ownerSeqHeard: Uint16Array | Uint32Array = new Uint16Array(0)
  /**
   * How many of the losses logged it has been told of (`NeighbourTable`'s log of losses; at most
   * CONNECTIONS_MAX; the table makes room for each new end of the log, `roomForLostPosition`).
   * This, `connection` and `index` are 2 bytes a slot while their numbers are below 32,768
   * (narrow.ts): 6 bytes a connection fewer, 2.6 a (node, destination) pair on three subnets.
   * Read through `lostCursorAt`. Undefined while every slot's is 0 (no loss logged yet: the
   * positions start at 0), made at the first other (`setLostCursor`).
   */
  private lostCursor: NarrowColumn | undefined = undefined
  /**
   * When the connection came up, in whole milliseconds (`Neighbour.upAtMs`, read through `upAtMsOf`):
   * 4 bytes a slot, as milliseconds from `upEpochMs` (the first connection's), while every time is
   * within ±2^31 ms (24 days) of it; past that the column holds the times themselves, 8 bytes a
   * slot (`setUpAtMs`). 8 were 4 bytes a (node, destination) pair on one subnet, 2 on three
   * (heap snapshot, 1,000 processes).
   */
  private upAtMs: Int32Array | Float64Array = new Int32Array(0)
  private upEpochMs: number | undefined
  /**
   * Each slot's update token bucket (`police.ts`: `updateEntriesPerSecondMax`, burst
   * `updateEntriesBurstMax`) as one number: when it is full again (-Infinity: full, as before the
   * neighbour's first update). The tokens at a time follow from it, the rate and the burst
   * (`NeighbourTable.chargeUpdateBudget`). Tokens and the time they were counted took two
   * columns, 8 bytes a (node, destination) pair more on one subnet (heap snapshot, 1,000 processes);
   * the time a Float64 a slot 8 more, now a 1-byte code (`UpdateBudgets`).
   */
  readonly budgets = new UpdateBudgets()
  /**
   * `Neighbour.senderSlots`, by slot: only for the neighbours that sent a slot table we had to
   * translate (in a simulator's shared numbering, only hubs saying their neighbours are served), so
   * a map rather than a reference per slot. At most one per slot.
   */
  readonly senderSlots = new Map<number, SenderSlots>()

  get capacity(): number {
    return this.flags.length
  }

  /** The connection in `slot` (below `capacity`; 0: free). */
  connectionAt(slot: number): number {
    if (this.connection !== undefined) return this.connection[slot]!
    return slot < this.implicitConnections ? slot + 1 : 0
  }

  /** How many of the losses logged the neighbour in `slot` has been told of (below `capacity`). */
  lostCursorAt(slot: number): number {
    return this.lostCursor === undefined ? 0 : this.lostCursor[slot]!
  }

  /** Sets `slot`'s position in the log of losses (at most CONNECTIONS_MAX). */
  setLostCursor(slot: number, position: number): void {
    if (this.lostCursor === undefined) {
      if (position === 0) return
      this.lostCursor = grownNarrow(new Int16Array(0), this.capacity, 0)
    }
    this.lostCursor = widenedFor(this.lostCursor, position)
    this.lostCursor[slot] = position
  }

  /** Writes the row of a connection that opened in `slot`. */
  open(slot: number, connection: number, index: number, mode: RoutingMode, upAtMs: number): void {
    invariant(connection > 0 && connection <= CONNECTIONS_MAX, `a connection number fits its column (at most ${CONNECTIONS_MAX})`)
    if (slot >= this.capacity) this.grow(grownCapacity(this.capacity, slot + 1))
    invariant(this.connectionAt(slot) === 0, 'a connection opens in a free slot')
    if (this.connection === undefined && slot === this.implicitConnections && connection === slot + 1) this.implicitConnections++
    else {
      this.connection = widenedFor(this.connectionColumn(), connection)
      this.connection[slot] = connection
    }
    this.index = widenedFor(this.index, index)
    this.index[slot] = index
    this.flags[slot] = initialFlags(mode)
    this.ownerSeqHeard[slot] = 0
    if (this.lostCursor !== undefined) this.lostCursor[slot] = 0
    this.setUpAtMs(slot, upAtMs)
    this.budgets.setFull(slot)
    this.senderSlots.delete(slot)
  }

  /** The owner seq heard on the connection in `slot` (see `ownerSeqHeard`). */
  ownerSeqHeardOf(slot: number): number {
    return this.ownerSeqHeard[slot]!
  }

  /** Writes the owner seq heard in `slot` (unsigned 32-bit), widening the column at the first past 65,535. */
  setOwnerSeqHeard(slot: number, seq: number): void {
    if (this.ownerSeqHeard instanceof Uint16Array && seq > 0xffff) this.ownerSeqHeard = Uint32Array.from(this.ownerSeqHeard)
    this.ownerSeqHeard[slot] = seq
  }

  /** When the connection in `slot` came up (whole milliseconds). */
  upAtMsOf(slot: number): number {
    return this.upAtMs instanceof Int32Array ? this.upEpochMs! + this.upAtMs[slot]! : this.upAtMs[slot]!
  }

  private setUpAtMs(slot: number, ms: number): void {
    this.upEpochMs ??= ms
    const offset = ms - this.upEpochMs
    if (this.upAtMs instanceof Int32Array && (offset | 0) !== offset) {
      const times = new Float64Array(this.upAtMs.length)
      for (let i = 0; i < times.length; i++) times[i] = this.upEpochMs + this.upAtMs[i]!
      this.upAtMs = times
    }
    this.upAtMs[slot] = this.upAtMs instanceof Int32Array ? offset : ms
  }

  /** Frees `slot`: only the connection number is cleared (a view of the closed connection then refuses to read the row). */
  close(slot: number): void {
    this.connection = this.connectionColumn()
    this.connection[slot] = 0
    this.senderSlots.delete(slot)
  }

  /** Room in `lostCursor` for positions up to `position`. */
  roomForLostPosition(position: number): void {
    if (this.lostCursor !== undefined) this.lostCursor = widenedFor(this.lostCursor, position)
  }

  /** `connection` as a column, made now if it was implicit. */
  private connectionColumn(): NarrowColumn {
    if (this.connection !== undefined) return this.connection
    const column = this.implicitConnections > 0x7fff ? new Int32Array(this.capacity) : new Int16Array(this.capacity)
    for (let slot = 0; slot < this.implicitConnections; slot++) column[slot] = slot + 1
    return column
  }

  private grow(size: number): void {
    const grown = <T extends Int32Array | Uint32Array | Uint16Array | Uint8Array | Float64Array>(old: T, make: (n: number) => T): T => {
      const out = make(size)
      out.set(old)
      return out
    }
    if (this.connection !== undefined) this.connection = grownNarrow(this.connection, size, 0)
    this.index = grownNarrow(this.index, size, 0)
    this.flags = grown(this.flags, (n) => new Uint8Array(n))
    this.ownerSeqHeard = this.ownerSeqHeard instanceof Uint16Array ? grown(this.ownerSeqHeard, (n) => new Uint16Array(n)) : grown(this.ownerSeqHeard, (n) => new Uint32Array(n))
    if (this.lostCursor !== undefined) this.lostCursor = grownNarrow(this.lostCursor, size, 0)
    this.upAtMs = this.upAtMs instanceof Int32Array ? grown(this.upAtMs, (n) => new Int32Array(n)) : grown(this.upAtMs, (n) => new Float64Array(n))
    this.budgets.grow(size)
  }
}

/**
 * One open connection and everything we know about the peer through it: a view of its slot's row
 * in `NeighbourColumns`, made on demand (compare `connection`, not objects: two views of one
 * connection are two objects). It names the connection it was made for, so once that connection
 * closes (its slot maybe reused) its state reads fail an assertion instead of reading the next
 * connection's; its id, index, slot, connection and up time stay readable. Nothing of a closed
 * connection survives in another table. (What the peer introduced into our routing table is not
 * connection state: it stays counted against the peer, in `police.ts`, as long as those entries stay.)
 */
export class Neighbour {
  constructor(
    private readonly columns: NeighbourColumns,
    readonly id: NodeId,
    /** Its number in our `NodeIndex` (trans/rcpt bitsets). */
    readonly index: number,
    /** Its slot: the trans sets we send name our neighbours by slot. */
    readonly slot: number,
    /** Which connection to it this is (a counter over all connections): news from an older one is stale. */
    readonly connection: number,
  ) {}

  /** Whether this view's connection is still open (its slot not freed or reused). */
  get open(): boolean {
    return this.columns.connectionAt(this.slot) === this.connection
  }

  /** Whether `other` is a view of the same connection. */
  is(other: Neighbour | undefined): boolean {
    return other !== undefined && other.connection === this.connection
  }

  /**
   * When the connection came up, in whole milliseconds (a fractional time would be a boxed double
   * per neighbour). A connection that goes down soon after is a flap (`AddressBook.connectionLost`).
   * Readable after the close, until the slot is reused.
   */
  get upAtMs(): number {
    return this.columns.upAtMsOf(this.slot)
  }

  /** Optimized mode: its first update on this connection (carrying its hello) is not applied yet. */
  get awaitingHello(): boolean {
    return (this.flags & AWAITING_HELLO_BIT) !== 0
  }

  set awaitingHello(awaiting: boolean) {
    this.columns.flags[this.current()] = awaiting ? this.flags | AWAITING_HELLO_BIT : this.flags & ~AWAITING_HELLO_BIT
  }

  /** Our own record waits for its hello: it probably holds it already (see `PhoenixCore.connectionUp`). */
  get ownWaitsForHello(): boolean {
    return (this.flags & FLAG_BITS.ownWaitsForHello) !== 0
  }

  /** We owe it our first update on this connection (it carries our hello, even if empty). */
  get helloDue(): boolean {
    return (this.flags & FLAG_BITS.helloDue) !== 0
  }

  /** Naive mode: it still needs our whole table. */
  get needsWholeTable(): boolean {
    return (this.flags & FLAG_BITS.needsWholeTable) !== 0
  }

  /**
   * The sequence number of its own record as it last advertised it to us on this connection
   * (optimized mode). It is told about itself only when we hold a newer number than this (it
   * restarted, or a route to it was lost): "Not telling a node about itself" in the README.
   */
  get ownerSeqHeard(): number | undefined {
    return (this.flags & OWNER_SEQ_HEARD_BIT) === 0 ? undefined : this.columns.ownerSeqHeardOf(this.slot)
  }

  set ownerSeqHeard(seq: number | undefined) {
    const slot = this.current()
    invariant(seq === undefined || isValidSeq(seq), 'a sequence number heard is unsigned 32-bit')
    this.columns.setOwnerSeqHeard(slot, seq ?? 0)
    this.columns.flags[slot] = seq === undefined ? this.flags & ~OWNER_SEQ_HEARD_BIT : this.flags | OWNER_SEQ_HEARD_BIT
  }

  /**
   * Its last slot table translated into our node indices: a sender's table changes only when its
   * neighbours do, so most messages reuse the translation of the previous one.
   */
  get senderSlots(): SenderSlots | undefined {
    return this.columns.senderSlots.get(this.current())
  }

  set senderSlots(slots: SenderSlots | undefined) {
    if (slots === undefined) this.columns.senderSlots.delete(this.current())
    else this.columns.senderSlots.set(this.current(), slots)
  }

  /** The flag bits (for `NeighbourTable`, which counts them). */
  get flags(): number {
    return this.columns.flags[this.current()]!
  }

  /** For `NeighbourTable` only, which keeps the counts of each flag: whether the flag changed. */
  setFlag(flag: NeighbourFlag, value: boolean): boolean {
    const bit = FLAG_BITS[flag]
    const flags = this.flags
    const changed = ((flags & bit) !== 0) !== value
    this.columns.flags[this.slot] = value ? flags | bit : flags & ~bit
    return changed
  }

  /** The slot, once asserted to be still this connection's. */
  private current(): number {
    invariant(this.open, `the connection to ${this.id} this view was made for is open`)
    return this.slot
  }
}
