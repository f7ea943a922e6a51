import { invariant } from './errors.ts'
import { Introducers } from './introducers.ts'
import { grownNarrow, type NarrowColumn, widenedFor } from './narrow.ts'
import { RecordAddresses } from './record-addresses.ts'
import { RowList } from './row-list.ts'
import type { NodeIndex } from './nodeindex.ts'
import type { NodeSet } from './nodeset.ts'
import { HOPS_NONE, NO_SIGNATURE, RouteEntry } from './route.ts'
import { isUnreachableSeq } from './seq.ts'
import { EMPTY_SET_ID, type SetIds } from './set-ids.ts'
import type { NodeId } from './types.ts'

/** Rows a table starts with; it doubles from there. */
const ROWS_INITIAL = 16
const PRESENT = 1
const DIRTY = 2
/** Learned only as unreachable (RouteEntry.hearsay). */
const HEARSAY = 4
/** Removed, with its old position still in `order` (dropped at the next compaction, which an insert of the row forces). */
const IN_ORDER = 8
const NONE = -1
const NO_NAMES: readonly string[] = Object.freeze([])

/**
 * The routing table's storage, one row per destination, in columns: a number of each entry in a
 * typed array over the node index (`NodeIndex`: a core's own numbering, or the simulator's shared
 * one), and a reference per entry where the value is an object several entries share (an interned
 * trans/rcpt set, the record's names and addresses as they arrived). One object per entry cost
 * ~1 KB each with what hung off it (a heap snapshot at 500 processes: `RouteEntry` objects of 115
 * bytes, about four boxed doubles each such as nhops = Infinity or a fractional time, and a
 * Map's backing store); a row here is ~80 bytes and allocates nothing when it changes.
 * `RouteEntry` is a view of one row, made on demand (route.ts).
 *
 * Rows are node indices: the table needs no map of its own (`NodeIndex` has it, shared by every
 * core of a simulator), and a next hop is stored as its index. Insertion order, which decides the
 * order of a whole-table send and of `routes()`, is kept in a list of its own, as is the order in
 * which entries became dirty.
 *
 * trans, rcpt and vouchers are ids of `HolderSets`' interned sets in its `SetIds`, which counts
 * the rows holding each set and keeps it alive while any does (4 bytes a column and row, where a
 * reference was 8: 12 bytes a (node, destination) pair). The holder table itself may start afresh
 * when full; the ids do not depend on it.
 */
/**
 * `RouteColumns.rowsWhere`'s answers by row, one byte each, shared by every table of the process
 * (the scan does not nest): at most the largest table's capacity, the node index's limit.
 */
let picked = new Uint8Array(0)

export class RouteColumns {
  /** Rows allocated: every column has this many. Grows by doubling, up to the node index's limit. */
  private capacity = 0
  /** Present rows (the table's size). */
  private present = 0
  /** Flags per row: PRESENT, DIRTY, HEARSAY, IN_ORDER. */
  private flags = new Uint8Array(0)
  seq = new Uint32Array(0)
  /** Hops to the destination; HOPS_NONE when unreachable. */
  nhops = new Uint16Array(0)
  /** What members of rcpt hold (see `RouteEntry.rcptHopsMax`); HOPS_NONE for Infinity. */
  rcptHopsMax = new Uint16Array(0)
  /**
   * The next hop's node index; NONE when unreachable. A next hop is a neighbour: its index lives as
   * long as the route. 2 bytes a row while every index is below 32,768 (narrow.ts; written through `setFwd`).
   */
  fwd: NarrowColumn = new Int16Array(0)
  /**
   * `RouteEntry.changedAtMs`, kept only for rows that are unreachable (odd seq) when it is written:
   * it is read only of unreachable rows (expiry, and the oldest unreachable dirty row), and every
   * change that makes a row unreachable writes it after the seq (`RouteTable.adopt`, `invalidate`;
   * a new row reads 0, as its blank column did). A Float64 column was 8 bytes a (node,
   * destination) pair, nearly all of reachable rows (heap snapshot, 1,000 processes, three
   * subnets). At most one per row; a row's time goes when it is written reachable or removed.
   */
  private readonly unreachableSinceMs = new Map<number, number>()
  /** Who introduced the destination, numbered (introducers.ts): an id, not a node index, it outlives the introducer's own entry (police.ts counts against it). */
  readonly introducers = new Introducers()
  /** trans, rcpt and vouchers by id in `ids` (read through `transOf` etc.; EMPTY_SET_ID in a blank row). */
  private transId = new Int32Array(0)
  private rcptId = new Int32Array(0)
  /** The neighbours on whose word (their trans sets) trans and rcpt hold others (see `RouteEntry.vouchers`). */
  private vouchersId = new Int32Array(0)
  /** The records' addresses (record-addresses.ts: a reference per row, or on a shared numbering a 1-byte version). */
  readonly addresses: RecordAddresses
  /**
   * The records' names and signatures, allocated only once a row holds a non-empty one (read
   * through `namesOf` / `signatureOf`: an empty one reads as the shared empty value). Nodes
   * without names or keys, as in the paper's simulations, hold none: each list cost 8 bytes a
   * (node, destination) pair at the end of a 1,000-process run (heap snapshot, three subnets).
   */
  private namesList: (readonly string[] | undefined)[] | undefined
  private signatureList: (Uint8Array | undefined)[] | undefined
  /**
   * Rows in insertion order, with the positions of removed rows (IN_ORDER) until compacted:
   * compacted on insert once half is holes, so it holds at most twice the present rows, and before
   * a removed row is inserted again (its old position would otherwise name it twice). No column of
   * positions: a removal leaves its position behind instead of clearing it (4 bytes a pair).
   * Map iteration order was insertion order, and a send round's messages follow it: keeping it
   * keeps results byte-identical. 2 bytes a position while every row is below 32,768 (narrow.ts).
   */
  private order: NarrowColumn = new Int16Array(0)
  private orderLength = 0
  private orderHoles = 0
  /** Dirty rows in the order they became dirty (a Set's order before); at most one per present row, emptied every send round. */
  private readonly dirtyList = new RowList()

  /** `ids`: where the rows' sets are numbered (`HolderSets.ids`, the table's holder sets). */
  constructor(
    readonly index: NodeIndex,
    private readonly ids: SetIds,
  ) {
    this.addresses = new RecordAddresses(index.addressVersions)
  }

  transOf(row: number): NodeSet {
    return this.ids.at(this.transId[row]!)
  }

  rcptOf(row: number): NodeSet {
    return this.ids.at(this.rcptId[row]!)
  }

  vouchersOf(row: number): NodeSet {
    return this.ids.at(this.vouchersId[row]!)
  }

  setTrans(row: number, set: NodeSet): void {
    this.transId[row] = this.replaced(this.transId[row]!, set)
  }

  setRcpt(row: number, set: NodeSet): void {
    this.rcptId[row] = this.replaced(this.rcptId[row]!, set)
  }

  setVouchers(row: number, set: NodeSet): void {
    this.vouchersId[row] = this.replaced(this.vouchersId[row]!, set)
  }

  /** The id a column holds once `set` replaces the set with id `old` (the new one counted first: rewriting the set a column holds keeps its id). */
  private replaced(old: number, set: NodeSet): number {
    const id = this.ids.retain(set)
    this.ids.release(old)
    return id
  }

  get size(): number {
    return this.present
  }

  /** The row of `destination` if it is in the table. */
  rowOf(destination: NodeId): number | undefined {
    const row = this.index.get(destination)
    return row !== undefined && row < this.capacity && (this.flags[row]! & PRESENT) !== 0 ? row : undefined
  }

  has(row: number): boolean {
    return row < this.capacity && (this.flags[row]! & PRESENT) !== 0
  }

  /** The node at `row` (a destination, or a next hop's index). */
  idOf(row: number): NodeId {
    const id = this.index.id(row)
    invariant(id !== undefined, 'a row names a numbered node')
    return id
  }

  /** The row of a next hop: a neighbour, numbered when its connection came up (so this only looks it up; `checkInvariants` checks it is a neighbour). */
  rowOfNextHop(id: NodeId): number {
    const row = this.index.intern(id)
    invariant(row !== undefined, 'a next hop is numbered')
    return row
  }

  view(row: number): RouteEntry {
    return new RouteEntry(this, row)
  }

  /** A new row for `destination`, blank (unreachable, seq 0, no sets); undefined when the node index is full. */
  insert(destination: NodeId): number | undefined {
    const row = this.index.intern(destination)
    if (row === undefined) return undefined
    invariant(!this.has(row), 'a destination is inserted once')
    if (row >= this.capacity) this.grow(row + 1)
    this.seq[row] = 0
    this.nhops[row] = HOPS_NONE
    this.rcptHopsMax[row] = 0
    this.fwd[row] = NONE
    this.clearReferences(row)
    if ((this.orderHoles > 0 && this.orderHoles * 2 >= this.orderLength) || (this.flags[row]! & IN_ORDER) !== 0) this.compactOrder()
    this.flags[row] = PRESENT
    if (this.orderLength === this.order.length) this.order = grownNarrow(this.order, Math.max(ROWS_INITIAL, this.orderLength * 2), NONE)
    this.order = widenedFor(this.order, row)
    this.order[this.orderLength++] = row
    this.present++
    return row
  }

  /** Forgets `row` (not dirty: the caller keeps dirty rows); what it referenced is let go, its numbers stay until the row is inserted again. */
  remove(row: number): void {
    invariant(this.has(row) && (this.flags[row]! & DIRTY) === 0, 'only a present, clean row is removed')
    this.flags[row] = IN_ORDER
    this.orderHoles++
    this.present--
    this.unreachableSinceMs.delete(row)
    this.clearReferences(row)
  }

  /** Sets the next hop's index of `row` (-1: none); the column widens for an index past 32,767 (narrow.ts). */
  setFwd(row: number, index: number): void {
    this.fwd = widenedFor(this.fwd, index)
    this.fwd[row] = index
  }

  /** `RouteEntry.changedAtMs` of an unreachable row (0 if never written since it became so, as a new row's). */
  changedAtMsOf(row: number): number {
    return this.unreachableSinceMs.get(row) ?? 0
  }

  /** How many rows keep a `changedAtMs` (tests: only unreachable rows do). */
  get changedTimesKept(): number {
    return this.unreachableSinceMs.size
  }

  /** Keeps `ms` only if the row is unreachable now (see `unreachableSinceMs`): a reachable row's time is never read. */
  setChangedAtMs(row: number, ms: number): void {
    if (isUnreachableSeq(this.seq[row]!)) this.unreachableSinceMs.set(row, ms)
    else this.unreachableSinceMs.delete(row)
  }

  /** Lets go of what `row` referenced (shared sets, the record's names, addresses and signature): a blank row's values. */
  private clearReferences(row: number): void {
    this.introducers.set(row, undefined)
    for (const column of [this.transId, this.rcptId, this.vouchersId]) {
      this.ids.release(column[row]!)
      column[row] = EMPTY_SET_ID
    }
    if (this.namesList !== undefined) this.namesList[row] = undefined
    this.addresses.set(row, NO_NAMES)
    if (this.signatureList !== undefined) this.signatureList[row] = undefined
  }

  /** The record's names at `row` (the shared empty list when it has none). */
  namesOf(row: number): readonly string[] {
    return this.namesList?.[row] ?? NO_NAMES
  }

  setNames(row: number, names: readonly string[]): void {
    if (names.length === 0 && this.namesList === undefined) return
    this.namesList ??= new Array<readonly string[] | undefined>(this.capacity)
    this.namesList[row] = names.length === 0 ? undefined : names
  }

  /** The record's signature at `row` (the shared empty one when unsigned). */
  signatureOf(row: number): Uint8Array {
    return this.signatureList?.[row] ?? NO_SIGNATURE
  }

  setSignature(row: number, signature: Uint8Array): void {
    if (signature.length === 0 && this.signatureList === undefined) return
    this.signatureList ??= new Array<Uint8Array | undefined>(this.capacity)
    this.signatureList[row] = signature.length === 0 ? undefined : signature
  }

  /**
   * The next hop's index toward the destination numbered `row`, or -1 when the table has no
   * reachable route to it. Reads two columns; makes no view (a simulator's reachability samples
   * walk every sampled pair's route this way, tens of millions of steps at 2,000 processes).
   */
  nextHopRow(row: number): number {
    if (!this.has(row) || isUnreachableSeq(this.seq[row]!)) return NONE
    return this.fwd[row]!
  }

  /** The hops of the route `nextHopRow` reads, -1 when that gives none; no view either (the simulator's final check reads every pair). */
  hopsRow(row: number): number {
    if (this.nextHopRow(row) === NONE) return -1
    const hops = this.nhops[row]!
    return hops === HOPS_NONE ? -1 : hops
  }

  /**
   * The present rows `wanted` accepts, in insertion order, as one array: a plain loop, where a
   * generator made an iterator result per row (at 2,000 processes, a send round after new
   * connections visits every row, and those objects were a tenth of what the run allocated).
   */
  rowsWhere(wanted: (row: number, dirty: boolean, trans: NodeSet, rcpt: NodeSet, seq: number) => boolean): number[] {
    const { order, flags, transId, rcptId, seq, ids, capacity } = this
    // Asked in row order, each column read front to back, then listed in insertion order from a
    // byte a row: in insertion order every row's columns were read at random, a cold core's cache
    // miss each (the scan was 3.5% of a 5,000-process three-subnet run, ×18 from 2,000). `wanted`
    // is a function of the row's values, so the order it is asked in changes nothing.
    if (picked.length < capacity) picked = new Uint8Array(Math.max(capacity, 2 * picked.length))
    for (let row = 0; row < capacity; row++) picked[row] = (flags[row]! & PRESENT) !== 0 && wanted(row, (flags[row]! & DIRTY) !== 0, ids.at(transId[row]!), ids.at(rcptId[row]!), seq[row]!) ? 1 : 0
    const out: number[] = []
    for (let i = 0; i < this.orderLength; i++) {
      const row = order[i]!
      if (picked[row] === 1 && (flags[row]! & PRESENT) !== 0) out.push(row)
    }
    return out
  }

  /** Present rows in insertion order. Removing the current row while iterating is allowed; inserting is not. */
  *rows(): IterableIterator<number> {
    for (let i = 0; i < this.orderLength; i++) {
      const row = this.order[i]!
      if ((this.flags[row]! & PRESENT) !== 0) yield row
    }
  }

  markDirty(row: number): void {
    if ((this.flags[row]! & DIRTY) !== 0) return
    invariant((this.flags[row]! & PRESENT) !== 0, 'a dirty entry is in the table')
    this.flags[row] = this.flags[row]! | DIRTY
    this.dirtyList.push(row)
  }

  isHearsay(row: number): boolean {
    return (this.flags[row]! & HEARSAY) !== 0
  }

  setHearsay(row: number, hearsay: boolean): void {
    this.flags[row] = hearsay ? this.flags[row]! | HEARSAY : this.flags[row]! & ~HEARSAY
  }

  isDirty(row: number): boolean {
    return row < this.capacity && (this.flags[row]! & DIRTY) !== 0
  }

  get dirtyCount(): number {
    return this.dirtyList.length
  }

  /** The `i`-th dirty row, in the order they became dirty (below `dirtyCount`). */
  dirtyRowAt(i: number): number {
    return this.dirtyList.at(i)
  }

  /**
   * The oldest `changedAtMs` among dirty rows whose seq is odd (unreachable), `except` aside;
   * Infinity if none. A loop over typed arrays: the expiry asks on every held send step, and
   * a view per dirty entry there was 3-5% of a 1,000-process run.
   */
  oldestDirtyUnreachableMs(except: number): number {
    let oldest = Number.POSITIVE_INFINITY
    for (let i = 0; i < this.dirtyList.length; i++) {
      const row = this.dirtyList.at(i)
      if (row === except || !isUnreachableSeq(this.seq[row]!)) continue
      const at = this.changedAtMsOf(row)
      if (at < oldest) oldest = at
    }
    return oldest
  }

  clearDirty(): void {
    for (let i = 0; i < this.dirtyList.length; i++) {
      const row = this.dirtyList.at(i)
      this.flags[row] = this.flags[row]! & ~DIRTY
    }
    this.dirtyList.clear()
  }

  /** Drops the positions of removed rows (each loses its IN_ORDER mark), keeping the order of the rest. */
  private compactOrder(): void {
    let to = 0
    const flags = this.flags
    for (let i = 0; i < this.orderLength; i++) {
      const row = this.order[i]!
      if ((flags[row]! & PRESENT) === 0) {
        flags[row] = flags[row]! & ~IN_ORDER
        continue
      }
      this.order[to++] = row
    }
    this.order.fill(NONE, to, this.orderLength)
    this.orderLength = to
    this.orderHoles = 0
  }

  /**
   * Room for rows below `needed`, by doubling. The limit is the node index's (`NodeIndex` hands out
   * no row past its max: destinationsMax + 2 · neighboursMax for a core's own numbering, the
   * simulator's nodesMax for a shared one), so a table never holds more rows than nodes it may number.
   */
  private grow(needed: number): void {
    // At least double (amortized O(1) per row), or straight to every node numbered so far, or
    // expected: a simulator's shared numbering expects its N processes, so the columns are sized
    // once at N instead of at the next power of two (600 processes: 1,024 rows, 40% idle), and
    // not grown again as the processes join.
    const capacity = Math.min(Math.max(needed, ROWS_INITIAL, this.capacity * 2, this.index.highWater, this.index.expected), Math.max(needed, this.index.max))
    this.flags = grownUint8(this.flags, capacity)
    this.seq = grown(this.seq, new Uint32Array(capacity))
    this.nhops = grown(this.nhops, new Uint16Array(capacity))
    this.rcptHopsMax = grown(this.rcptHopsMax, new Uint16Array(capacity))
    this.fwd = grownNarrow(this.fwd, capacity, NONE)
    // Every reference column grows with the others, so a row is written within its length (a
    // write past the end of an empty list by more than ~1,000 makes V8 keep it as a hash table),
    // each in one allocation (pushed a row at a time, a list was reallocated many times on the way).
    this.introducers.grow(capacity)
    this.transId = grownInt32(this.transId, capacity, EMPTY_SET_ID)
    this.rcptId = grownInt32(this.rcptId, capacity, EMPTY_SET_ID)
    this.vouchersId = grownInt32(this.vouchersId, capacity, EMPTY_SET_ID)
    if (this.namesList !== undefined) this.namesList = grownList(this.namesList, capacity)
    this.addresses.grow(capacity)
    if (this.signatureList !== undefined) this.signatureList = grownList(this.signatureList, capacity)
    this.capacity = capacity
  }
}

/** `old` copied into a list of `capacity` (rows past `old` read undefined until written). */
function grownList<T>(old: T[], capacity: number): T[] {
  const next = new Array<T>(capacity)
  for (let row = 0; row < old.length; row++) next[row] = old[row]!
  return next
}

function grown<T extends Uint32Array | Uint16Array>(old: T, next: T): T {
  next.set(old)
  return next
}

function grownUint8(old: Uint8Array, capacity: number): Uint8Array<ArrayBuffer> {
  const next = new Uint8Array(capacity)
  next.set(old)
  return next
}

function grownInt32(old: Int32Array, capacity: number, fill: number): Int32Array<ArrayBuffer> {
  const next = new Int32Array(capacity).fill(fill)
  next.set(old)
  return next
}

/** The entries changed since the last send round, in the order they changed: a Set's interface over the columns' dirty rows. */
export class DirtyEntries {
  constructor(private readonly columns: RouteColumns) {}

  get size(): number {
    return this.columns.dirtyCount
  }

  add(entry: RouteEntry): void {
    this.columns.markDirty(entry.row)
  }

  has(entry: RouteEntry): boolean {
    return this.columns.isDirty(entry.row)
  }

  clear(): void {
    this.columns.clearDirty()
  }

  /** The oldest `changedAtMs` of the dirty entries that are unreachable, the row `except` (our own) aside; Infinity if none. No view made. */
  oldestUnreachableMs(except: number): number {
    return this.columns.oldestDirtyUnreachableMs(except)
  }

  /** Views of the dirty entries, one made per step; an entry made dirty while iterating is visited too. */
  *[Symbol.iterator](): IterableIterator<RouteEntry> {
    const columns = this.columns
    for (let i = 0; i < columns.dirtyCount; i++) yield columns.view(columns.dirtyRowAt(i))
  }
}
