import { CORE_CONSTANTS } from './constants.ts'
import { invariant } from './errors.ts'
import { CONNECTIONS_MAX, FLAG_BITS, NEIGHBOUR_FLAGS, grownCapacity, Neighbour, NeighbourColumns, type NeighbourFlag } from './neighbour.ts'
import { grownNarrow, type NarrowColumn, widenedFor } from './narrow.ts'
import type { NodeIndex } from './nodeindex.ts'
import { NodeSet } from './nodeset.ts'
import type { NodeId, RoutingMode } from './types.ts'

export { Neighbour, type SenderSlots } from './neighbour.ts'

/**
 * Marks a slot table made by `NeighbourTable.slotTable()` with the length of its longest id: it is
 * frozen and holds only ids a core checked when their connections came up. The symbol is this
 * module's, so nothing decoded from the wire carries the mark; in a simulator, where senders are
 * cores in the same process, the police need not read such a table again (`coreSlotTableLongestId`).
 */
const LONGEST_ID = Symbol('longest id of a slot table made by a core')

/** The longest id's length if `table` was made by a core's `NeighbourTable`, else undefined (see `LONGEST_ID`). */
export function coreSlotTableLongestId(table: readonly unknown[]): number | undefined {
  return (table as { [LONGEST_ID]?: number })[LONGEST_ID]
}

/**
 * The open connections, each given a small slot number: the trans sets we send name our
 * neighbours by slot. A freed slot is reused (lowest first), so those bitsets stay as wide as the
 * largest neighbour count. Iteration follows connection order. What we know of each connection
 * is a row of `NeighbourColumns`; `Neighbour` is a view of one, made when asked for.
 */
export class NeighbourTable {
  /** One row per slot: at most neighboursMax (the core refuses connections past it). */
  private readonly rows = new NeighbourColumns()
  /**
   * The occupied slots in connection order (a Map's order before, which decides the order of a
   * send round's messages), the first `orderLength` of the column; as long as the rows. A
   * neighbour is found by id through the node index and `slotOfIndexMap`, with no map of its own:
   * at one entry per neighbour per node, a Map cost ~42 bytes a pair in a simulator of fully
   * connected subnets (heap snapshot, 500 processes, one subnet). Undefined while it would be
   * 0, 1, 2, ...: until a connection closes, each opens in the next slot (no slot is free), and
   * the column was 2.5 bytes a pair on one subnet (heap snapshot, 1,500 processes), where none
   * closes; made at the first removal (`orderColumn`).
   */
  private order: NarrowColumn | undefined = undefined
  private orderLength = 0
  /** One more than the highest slot ever taken: how far the slot table reaches before trimming free slots. */
  private slotsEnd = 0
  /** Slots of closed connections, highest first once sorted (at most neighboursMax). */
  private readonly freeSlots: number[] = []
  /** Whether `freeSlots` is in order: sorted once after removals, not on every add (O(free) each). */
  private freeSlotsSorted = true
  /** The wire form of the slots, rebuilt only after a change so receivers can recognise it. */
  private cachedSlotTable: readonly NodeId[] | undefined
  /**
   * Node index -> neighbour slot (-1: not a neighbour), for the hot paths of sending. Over every
   * node index, in each core: 4 bytes an index were 5-6 bytes a (node, destination) pair in a
   * simulator (heap snapshot, 1,000 processes). 2 while every slot fits (narrow.ts), and sized at
   * once for as many nodes as the numbering expects, not doubled up to it.
   */
  private slotOfIndexMap: NarrowColumn = new Int16Array(CORE_CONSTANTS.slotOfIndexInitial).fill(-1)
  /** Our neighbours, as node indices: the universe of every send decision. */
  readonly indexSet = new NodeSet()
  /**
   * Hubs that said every neighbour of theirs is served (`UpdateMessage.allServed`), by the hub's
   * node index, and those neighbours (apply.ts, `hubsServe`). At most one per hub we are connected
   * to: a hub's latest word, dropped with its connection or when it says it lost neighbours.
   */
  readonly servedBy = new Map<number, NodeSet>()
  private opened = 0

  /** Connections opened so far: the number of the newest (`Neighbour.connection`). */
  get connectionsOpened(): number {
    return this.opened
  }
  private readonly counts = { ownWaitsForHello: 0, helloDue: 0, needsWholeTable: 0 }
  /**
   * The neighbours we lost, in order, to tell the others in our next update to each
   * (`UpdateMessage.lostNeighbours`): `lostLog[i]` is loss number `lostBase + i`, and a neighbour
   * has been told those before its `lostCursor`. Emptied whenever every neighbour has been told
   * (each gets an update in the next send round), and at most neighboursMax long: a neighbour
   * further behind is told only the latest (more cannot be lost between two rounds unless the
   * node held more neighbours than it may).
   */
  private lostLog: NodeId[] = []
  private lostBase = 0
  /** Neighbours not yet told every loss in the log: an update is due to each. */
  private lostDue = 0
  /** The log from a position to its end, one array for every neighbour at that position (messages share it). */
  private lostTails = new Map<number, readonly NodeId[]>()

  /** `nodeIndex`: the core's numbering, where every neighbour's id stays numbered while it is one (expiry.ts spares neighbours). */
  constructor(private readonly nodeIndex: NodeIndex) {}

  get size(): number {
    return this.orderLength
  }

  get(id: NodeId): Neighbour | undefined {
    const index = this.nodeIndex.get(id)
    if (index === undefined) return undefined
    const slot = this.slotOfIndex(index)
    return slot < 0 ? undefined : new Neighbour(this.rows, id, index, slot, this.rows.connectionAt(slot))
  }

  /** `get` of the node numbered `index` (a routing-table row is its destination's number): an array read, no lookup of the id. */
  getByIndex(index: number): Neighbour | undefined {
    const slot = this.slotOfIndex(index)
    return slot < 0 ? undefined : new Neighbour(this.rows, this.idOf(index), index, slot, this.rows.connectionAt(slot))
  }

  has(id: NodeId): boolean {
    const index = this.nodeIndex.get(id)
    return index !== undefined && this.slotOfIndex(index) >= 0
  }

  /** The neighbour in `slot`, if the slot is taken. */
  at(slot: number): Neighbour | undefined {
    const connection = slot < this.rows.capacity ? this.rows.connectionAt(slot) : 0
    if (connection === 0) return undefined
    const index = this.rows.index[slot]!
    return new Neighbour(this.rows, this.idOf(index), index, slot, connection)
  }

  /** Whether `neighbour`'s connection is still open (its slot not freed or reused since the view was made). */
  isOpen(neighbour: Neighbour): boolean {
    return neighbour.open
  }

  /** The connection in `slot` (0: free). */
  connectionAt(slot: number): number {
    return slot < this.rows.capacity ? this.rows.connectionAt(slot) : 0
  }

  /** The slot of the neighbour with node index `index`, or -1. */
  slotOfIndex(index: number): number {
    return index < this.slotOfIndexMap.length ? this.slotOfIndexMap[index]! : -1
  }

  ids(): NodeId[] {
    const out: NodeId[] = new Array(this.orderLength)
    for (let i = 0; i < this.orderLength; i++) out[i] = this.idOf(this.rows.index[this.slotInOrder(i)]!)
    return out
  }

  /** The neighbours in connection order, as views made now (do not change the table while iterating). */
  values(): Neighbour[] {
    const out: Neighbour[] = new Array(this.orderLength)
    for (let i = 0; i < this.orderLength; i++) out[i] = this.at(this.slotInOrder(i))!
    return out
  }

  /** The occupied slots in connection order, a copy (no view made). */
  slotsInOrder(): Int16Array | Int32Array {
    return this.order === undefined ? this.orderColumn() : this.order.slice(0, this.orderLength)
  }

  /** The slot of the `i`th neighbour in connection order (`i` below `size`). */
  private slotInOrder(i: number): number {
    return this.order === undefined ? i : this.order[i]!
  }

  /** The order as a column, made now if it was implicit (see `order`). */
  private orderColumn(): NarrowColumn {
    if (this.order !== undefined) return this.order
    const column: NarrowColumn = this.orderLength > 0x7fff ? new Int32Array(this.orderLength) : new Int16Array(this.orderLength)
    for (let i = 0; i < this.orderLength; i++) column[i] = i
    return column
  }

  /** Whether the neighbour in occupied `slot` has `flag` (no view made). */
  flagAt(slot: number, flag: NeighbourFlag): boolean {
    invariant(this.connectionAt(slot) !== 0, 'a flag is read of an occupied slot')
    return (this.rows.flags[slot]! & FLAG_BITS[flag]) !== 0
  }

  /** Opens a record for a new connection to `id` (which must not be a neighbour already; `index` is its number in the node index). */
  add(id: NodeId, index: number, mode: RoutingMode, upAtMs = 0): Neighbour {
    invariant(this.nodeIndex.get(id) === index, 'a neighbour is numbered in the node index')
    invariant(this.slotOfIndex(index) < 0, 'a neighbour is added once per connection')
    // Lowest free slot first keeps the bitsets narrow.
    if (!this.freeSlotsSorted) {
      this.freeSlots.sort((a, b) => b - a)
      this.freeSlotsSorted = true
    }
    const slot = this.freeSlots.pop() ?? this.slotsEnd
    this.slotsEnd = Math.max(this.slotsEnd, slot + 1)
    // When the connection came up, in whole milliseconds (`Neighbour.upAtMs`).
    this.rows.open(slot, ++this.opened, index, mode, Math.round(upAtMs))
    this.pushOrder(slot)
    this.cachedSlotTable = undefined
    this.indexSet.add(index)
    this.setSlotOfIndex(index, slot)
    const neighbour = new Neighbour(this.rows, id, index, slot, this.opened)
    this.countFlags(neighbour, 1)
    this.rows.roomForLostPosition(this.lostBase + this.lostLog.length)
    this.rows.setLostCursor(slot, this.lostBase + this.lostLog.length) // a new connection needs no news of older ones
    return neighbour
  }

  /** Drops the record of the connection to `id`; returns a view of it (its state no longer readable), or undefined if `id` is not a neighbour. */
  remove(id: NodeId): Neighbour | undefined {
    const neighbour = this.get(id)
    if (neighbour === undefined) return undefined
    const slot = neighbour.slot
    this.countFlags(neighbour, -1)
    if (this.rows.lostCursorAt(slot) < this.lostBase + this.lostLog.length) this.lostDue--
    // A scan and a shift: connections close rarely, and at most neighboursMax entries move.
    const order = (this.order = this.orderColumn())
    const at = order.subarray(0, this.orderLength).indexOf(slot)
    order.copyWithin(at, at + 1, this.orderLength)
    this.orderLength--
    this.rows.close(slot)
    this.freeSlots.push(slot)
    this.freeSlotsSorted = false
    this.cachedSlotTable = undefined
    this.servedBy.delete(neighbour.index)
    this.indexSet.delete(neighbour.index)
    this.setSlotOfIndex(neighbour.index, -1)
    this.compactLost()
    return neighbour
  }

  /** Forgets every sender's slot translation (a released node index may be reused: expiry.ts). */
  forgetSenderSlots(): void {
    this.rows.senderSlots.clear()
  }

  /**
   * `peer` is no longer our neighbour: each remaining neighbour hears it in our next update, so
   * that it forgets what `peer` told it we hold, and what we told it `peer` holds (the updates on
   * the lost connection may have been lost with it).
   */
  noteLost(peer: NodeId, max: number): void {
    if (this.orderLength === 0) return
    const end = this.lostBase + this.lostLog.length
    for (let i = 0; i < this.orderLength; i++) if (this.rows.lostCursorAt(this.slotInOrder(i)) === end) this.lostDue++
    this.lostLog.push(peer)
    invariant(this.lostBase + this.lostLog.length <= CONNECTIONS_MAX, 'a position in the log of losses fits its column')
    this.rows.roomForLostPosition(this.lostBase + this.lostLog.length)
    this.lostTails.clear()
    if (this.lostLog.length > max) {
      this.lostLog.shift()
      this.lostBase++
      for (let i = 0; i < this.orderLength; i++) {
        const slot = this.slotInOrder(i)
        this.rows.setLostCursor(slot, Math.max(this.rows.lostCursorAt(slot), this.lostBase))
      }
    }
  }

  /** The losses to tell `neighbour` in the update being built (none: undefined); each is told once. */
  takeLost(neighbour: Neighbour): readonly NodeId[] | undefined {
    invariant(neighbour.open, 'losses are told on an open connection')
    const end = this.lostBase + this.lostLog.length
    const cursor = this.rows.lostCursorAt(neighbour.slot)
    if (cursor >= end) return undefined
    let tail = this.lostTails.get(cursor)
    if (tail === undefined) this.lostTails.set(cursor, (tail = Object.freeze(this.lostLog.slice(cursor - this.lostBase))))
    this.rows.setLostCursor(neighbour.slot, end)
    this.lostDue--
    this.compactLost()
    return tail
  }

  /** Everyone told: the log starts again empty. */
  private compactLost(): void {
    if (this.lostDue > 0 || this.lostLog.length === 0) return
    this.lostBase += this.lostLog.length
    this.lostLog = []
    this.lostTails.clear()
  }

  /** Whether the neighbour in occupied `slot` has not been told every loss yet. */
  owesLostAt(slot: number): boolean {
    return this.rows.lostCursorAt(slot) < this.lostBase + this.lostLog.length
  }

  /** How many neighbours have a loss to tell. */
  get lostNoticesDue(): number {
    return this.lostDue
  }

  setFlag(neighbour: Neighbour, flag: NeighbourFlag, value: boolean): void {
    if (neighbour.setFlag(flag, value)) this.counts[flag] += value ? 1 : -1
  }

  /** How many neighbours have `flag` set. */
  count(flag: NeighbourFlag): number {
    return this.counts[flag]
  }

  /** The slot table as sent on the wire: index = slot, '' = free. The same array until the next change. */
  slotTable(): readonly NodeId[] {
    if (this.cachedSlotTable !== undefined) return this.cachedSlotTable
    let end = this.slotsEnd
    while (end > 0 && this.connectionAt(end - 1) === 0) end--
    const out: NodeId[] = new Array(end)
    let longest = 0
    for (let i = 0; i < end; i++) {
      out[i] = this.connectionAt(i) === 0 ? '' : this.idOf(this.rows.index[i]!)
      longest = Math.max(longest, out[i]!.length)
    }
    Object.defineProperty(out, LONGEST_ID, { value: longest })
    this.cachedSlotTable = Object.freeze(out)
    return out
  }

  /** Checks the table's own bookkeeping (for `PhoenixCore.checkInvariants`). */
  checkInvariants(neighboursMax: number): void {
    invariant(this.orderLength <= neighboursMax, `at most neighboursMax (${neighboursMax}) neighbours`)
    const counted = { ownWaitsForHello: 0, helloDue: 0, needsWholeTable: 0 }
    const end = this.lostBase + this.lostLog.length
    let lostDue = 0
    let occupied = 0
    for (let slot = 0; slot < this.rows.capacity; slot++) if (this.connectionAt(slot) !== 0) occupied++
    invariant(occupied === this.orderLength, 'the order lists exactly the occupied slots')
    for (const n of this.values()) {
      invariant(this.nodeIndex.get(n.id) === n.index, `neighbour ${n.id} keeps its number in the node index`)
      invariant(this.slotOfIndex(n.index) === n.slot && this.indexSet.has(n.index), `neighbour ${n.id}'s index maps to its slot`)
      for (const flag of NEIGHBOUR_FLAGS) if (n[flag]) counted[flag]++
      const cursor = this.rows.lostCursorAt(n.slot)
      invariant(cursor >= this.lostBase && cursor <= end, `neighbour ${n.id}'s place in the log of losses is in it`)
      if (cursor < end) lostDue++
    }
    invariant(this.indexSet.size() === this.orderLength, 'the neighbour index set holds exactly the neighbours')
    for (const flag of NEIGHBOUR_FLAGS) invariant(counted[flag] === this.counts[flag], `the count of ${flag} matches the neighbours`)
    invariant(lostDue === this.lostDue, 'the count of neighbours with a loss to tell matches the neighbours')
    for (const index of this.servedBy.keys()) invariant(this.slotOfIndex(index) >= 0, 'a hub\'s word stands only while it is a neighbour')
  }

  /**
   * Charges `entries` to `neighbour`'s update token bucket (`perSecond` tokens a second, at most
   * `burst`; full at its first update) and returns the tokens left: below 0, it sent too much.
   * The bucket is kept as when it is full again (`NeighbourColumns.budgets`): the same
   * tokens as `min(burst, tokens then + elapsed · rate)`, up to rounding, and exactly `burst` once
   * full. The rate and burst are the core's limits, the same at every charge.
   */
  chargeUpdateBudget(neighbour: Neighbour, entries: number, nowMs: number, perSecond: number, burst: number): number {
    const slot = neighbour.slot
    invariant(neighbour.open, 'a bucket is charged to a neighbour of the table')
    const budgets = this.rows.budgets
    const owedMs = budgets.fullAtMs(slot) - nowMs
    const left = (owedMs > 0 ? burst - (owedMs * perSecond) / 1000 : burst) - entries
    budgets.set(slot, nowMs + ((burst - left) * 1000) / perSecond, nowMs)
    return left
  }

  private idOf(index: number): NodeId {
    const id = this.nodeIndex.id(index)
    invariant(id !== undefined, 'a neighbour stays numbered in the node index')
    return id
  }

  private pushOrder(slot: number): void {
    if (this.order === undefined && slot === this.orderLength) {
      this.orderLength++
      return
    }
    let order = this.orderColumn()
    if (this.orderLength === order.length) order = grownNarrow(order, grownCapacity(order.length, this.orderLength + 1), 0)
    this.order = widenedFor(order, slot)
    this.order[this.orderLength++] = slot
  }

  private countFlags(neighbour: Neighbour, sign: 1 | -1): void {
    for (const flag of NEIGHBOUR_FLAGS) if (neighbour[flag]) this.counts[flag] += sign
  }

  private setSlotOfIndex(index: number, slot: number): void {
    const length = this.slotOfIndexMap.length
    if (index >= length) this.slotOfIndexMap = grownNarrow(this.slotOfIndexMap, Math.max(index + 1, index < this.nodeIndex.expected ? this.nodeIndex.expected : length * 2), -1)
    this.slotOfIndexMap = widenedFor(this.slotOfIndexMap, slot)
    this.slotOfIndexMap[index] = slot
  }
}

