import { CORE_CONSTANTS } from './constants.ts'
import { invariant } from './errors.ts'
import type { NodeIndex } from './nodeindex.ts'
import { NodeSet } from './nodeset.ts'
import type { NodeId, RoutingMode } from './types.ts'

/** A sender's last slot table and the node index of each slot (see `Neighbour.senderSlots`). */
export interface SenderSlots {
  readonly table: readonly NodeId[]
  readonly map: Int32Array
  /** Every node of the table, interned, once a message with `UpdateMessage.allServed` asked (apply.ts). */
  served?: NodeSet
}

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

/** The bit of each flag in `Neighbour.flags`. */
const FLAG_BITS = { ownWaitsForHello: 1, helloDue: 2, needsWholeTable: 4 } as const
/** `Neighbour.awaitingHello`'s bit in the same field (not counted by the table). */
const AWAITING_HELLO_BIT = 8

/**
 * One open connection and everything we know about the peer through it. It is created by
 * `connectionUp` and dropped whole by `connectionDown`: nothing of a closed connection survives
 * in another table. (What the peer introduced into our routing table is not connection state: it
 * stays counted against the peer, in `police.ts`, as long as those entries stay.)
 */
export class Neighbour {
  /**
   * Flags the table counts (bits of `FLAG_BITS`, in the object: no second object per connection;
   * change them through `NeighbourTable` only), and `awaitingHello`'s bit: a field of its own was
   * 8 of the object's 104 bytes, and there is an object per connection, ~0.43 per (node,
   * destination) pair in a simulation of three subnets.
   */
  private flags = 0
  /**
   * The sequence number of its own record as it last advertised it to us on this connection
   * (optimized mode). It is told about itself only when we hold a newer number than this (it
   * restarted, or a route to it was lost): "Not telling a node about itself" in the README.
   */
  ownerSeqHeard: number | undefined = undefined
  /**
   * Its last slot table translated into our node indices: a sender's table changes only when its
   * neighbours do, so most messages reuse the translation of the previous one.
   */
  senderSlots: SenderSlots | undefined = undefined
  /** How many of the neighbours we lost it has been told of (a position in `NeighbourTable`'s log of losses); changed by the table only. */
  lostCursor = 0

  constructor(
    readonly id: NodeId,
    /** Its number in our `NodeIndex` (trans/rcpt bitsets). */
    readonly index: number,
    /** Its slot: the trans sets we send name our neighbours by slot. */
    readonly slot: number,
    /** Which connection to it this is (a counter over all connections): news from an older one is stale. */
    readonly connection: number,
    mode: RoutingMode,
    /**
     * When the connection came up, in whole milliseconds: a small integer (V8 keeps it in the
     * field), where a fractional time was a boxed double per neighbour, ~24 bytes a pair in a
     * one-subnet simulation. A connection that goes down soon after is a flap (`AddressBook.connectionLost`).
     */
    readonly upAtMs = 0,
  ) {
    this.flags = mode === 'optimized' ? FLAG_BITS.helloDue | AWAITING_HELLO_BIT : FLAG_BITS.needsWholeTable
  }

  /** Optimized mode: its first update on this connection (carrying its hello) is not applied yet. */
  get awaitingHello(): boolean {
    return (this.flags & AWAITING_HELLO_BIT) !== 0
  }

  set awaitingHello(awaiting: boolean) {
    this.flags = awaiting ? this.flags | AWAITING_HELLO_BIT : this.flags & ~AWAITING_HELLO_BIT
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

  /** For `NeighbourTable` only, which keeps the counts of each flag. */
  setFlag(flag: 'ownWaitsForHello' | 'helloDue' | 'needsWholeTable', value: boolean): boolean {
    const bit = FLAG_BITS[flag]
    const changed = ((this.flags & bit) !== 0) !== value
    this.flags = value ? this.flags | bit : this.flags & ~bit
    return changed
  }
}

/**
 * The open connections, each given a small slot number: the trans sets we send name our
 * neighbours by slot. A freed slot is reused (lowest first), so those bitsets stay as wide as the
 * largest neighbour count. Iteration follows connection order.
 */
export class NeighbourTable {
  /**
   * The neighbours in connection order (a Map's order before, which decides the order of a send
   * round's messages). A neighbour is found by id through the node index and `slotOfIndexMap`,
   * with no map of its own: at one entry per neighbour per node, a Map cost ~42 bytes a pair in a
   * simulator of fully connected subnets (heap snapshot, 500 processes, one subnet).
   */
  private readonly inOrder: Neighbour[] = []
  private readonly bySlot: (Neighbour | undefined)[] = []
  /**
   * Each slot's update token bucket (`police.ts`: `updateEntriesPerSecondMax`, burst
   * `updateEntriesBurstMax`): tokens left, NaN until the neighbour's first update, and when they
   * were counted. Columns, not an object per neighbour: that cost ~56 bytes a pair (an object and
   * two boxed doubles) in the same snapshot. As long as `bySlot`: at most neighboursMax.
   */
  private budgetTokens = new Float64Array(0)
  private budgetAtMs = new Float64Array(0)
  /** Slots of closed connections, highest first once sorted (at most neighboursMax). */
  private readonly freeSlots: number[] = []
  /** Whether `freeSlots` is in order: sorted once after removals, not on every add (O(free) each). */
  private freeSlotsSorted = true
  /** The wire form of the slots, rebuilt only after a change so receivers can recognise it. */
  private cachedSlotTable: readonly NodeId[] | undefined
  /** Node index -> neighbour slot (-1: not a neighbour), for the hot paths of sending. */
  private slotOfIndexMap = new Int32Array(CORE_CONSTANTS.slotOfIndexInitial).fill(-1)
  /** Our neighbours, as node indices: the universe of every send decision. */
  readonly indexSet = new NodeSet()
  /**
   * Hubs that said every neighbour of theirs is served (`UpdateMessage.allServed`), and those
   * neighbours (apply.ts, `hubsServe`). At most one per hub we are connected to: a hub's latest word,
   * dropped with its connection or when it says it lost neighbours.
   */
  readonly servedBy = new Map<Neighbour, NodeSet>()
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
    return this.inOrder.length
  }

  get(id: NodeId): Neighbour | undefined {
    const index = this.nodeIndex.get(id)
    if (index === undefined) return undefined
    const slot = this.slotOfIndex(index)
    return slot < 0 ? undefined : this.bySlot[slot]
  }

  has(id: NodeId): boolean {
    return this.get(id) !== undefined
  }

  /** The neighbour in `slot`, if the slot is taken. */
  at(slot: number): Neighbour | undefined {
    return this.bySlot[slot]
  }

  /** The slot of the neighbour with node index `index`, or -1. */
  slotOfIndex(index: number): number {
    return index < this.slotOfIndexMap.length ? this.slotOfIndexMap[index]! : -1
  }

  ids(): NodeId[] {
    return this.inOrder.map((n) => n.id)
  }

  /** The neighbours in connection order; the table's own array: do not change the table while iterating it. */
  values(): readonly Neighbour[] {
    return this.inOrder
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
    const slot = this.freeSlots.pop() ?? this.bySlot.length
    const neighbour = new Neighbour(id, index, slot, ++this.opened, mode, Math.round(upAtMs))
    this.inOrder.push(neighbour)
    this.bySlot[slot] = neighbour
    this.resetBudget(slot)
    this.cachedSlotTable = undefined
    this.indexSet.add(index)
    this.setSlotOfIndex(index, slot)
    this.countFlags(neighbour, 1)
    neighbour.lostCursor = this.lostBase + this.lostLog.length // a new connection needs no news of older ones
    return neighbour
  }

  /** Drops the record of the connection to `id`; returns it, or undefined if `id` is not a neighbour. */
  remove(id: NodeId): Neighbour | undefined {
    const neighbour = this.get(id)
    if (neighbour === undefined) return undefined
    // A scan and a splice: connections close rarely, and at most neighboursMax entries move.
    this.inOrder.splice(this.inOrder.indexOf(neighbour), 1)
    this.bySlot[neighbour.slot] = undefined
    this.freeSlots.push(neighbour.slot)
    this.freeSlotsSorted = false
    this.cachedSlotTable = undefined
    this.servedBy.delete(neighbour)
    this.indexSet.delete(neighbour.index)
    this.setSlotOfIndex(neighbour.index, -1)
    this.countFlags(neighbour, -1)
    if (neighbour.lostCursor < this.lostBase + this.lostLog.length) this.lostDue--
    this.compactLost()
    return neighbour
  }

  /**
   * `peer` is no longer our neighbour: each remaining neighbour hears it in our next update, so
   * that it forgets what `peer` told it we hold, and what we told it `peer` holds (the updates on
   * the lost connection may have been lost with it).
   */
  noteLost(peer: NodeId, max: number): void {
    if (this.inOrder.length === 0) return
    const end = this.lostBase + this.lostLog.length
    for (const n of this.inOrder) if (n.lostCursor === end) this.lostDue++
    this.lostLog.push(peer)
    this.lostTails.clear()
    if (this.lostLog.length > max) {
      this.lostLog.shift()
      this.lostBase++
      for (const n of this.inOrder) n.lostCursor = Math.max(n.lostCursor, this.lostBase)
    }
  }

  /** The losses to tell `neighbour` in the update being built (none: undefined); each is told once. */
  takeLost(neighbour: Neighbour): readonly NodeId[] | undefined {
    const end = this.lostBase + this.lostLog.length
    if (neighbour.lostCursor >= end) return undefined
    let tail = this.lostTails.get(neighbour.lostCursor)
    if (tail === undefined) this.lostTails.set(neighbour.lostCursor, (tail = Object.freeze(this.lostLog.slice(neighbour.lostCursor - this.lostBase))))
    neighbour.lostCursor = end
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

  /** Whether `neighbour` has not been told every loss yet. */
  owesLost(neighbour: Neighbour): boolean {
    return neighbour.lostCursor < this.lostBase + this.lostLog.length
  }

  /** How many neighbours have a loss to tell. */
  get lostNoticesDue(): number {
    return this.lostDue
  }

  setFlag(neighbour: Neighbour, flag: 'ownWaitsForHello' | 'helloDue' | 'needsWholeTable', value: boolean): void {
    if (neighbour.setFlag(flag, value)) this.counts[flag] += value ? 1 : -1
  }

  /** How many neighbours have `flag` set. */
  count(flag: 'ownWaitsForHello' | 'helloDue' | 'needsWholeTable'): number {
    return this.counts[flag]
  }

  /** The slot table as sent on the wire: index = slot, '' = free. The same array until the next change. */
  slotTable(): readonly NodeId[] {
    if (this.cachedSlotTable !== undefined) return this.cachedSlotTable
    let end = this.bySlot.length
    while (end > 0 && this.bySlot[end - 1] === undefined) end--
    const out: NodeId[] = new Array(end)
    let longest = 0
    for (let i = 0; i < end; i++) {
      out[i] = this.bySlot[i]?.id ?? ''
      longest = Math.max(longest, out[i]!.length)
    }
    Object.defineProperty(out, LONGEST_ID, { value: longest })
    this.cachedSlotTable = Object.freeze(out)
    return out
  }

  /** Checks the table's own bookkeeping (for `PhoenixCore.checkInvariants`). */
  checkInvariants(neighboursMax: number): void {
    invariant(this.inOrder.length <= neighboursMax, `at most neighboursMax (${neighboursMax}) neighbours`)
    const counted = { ownWaitsForHello: 0, helloDue: 0, needsWholeTable: 0 }
    for (const n of this.inOrder) {
      invariant(this.bySlot[n.slot] === n, `neighbour ${n.id} sits in its slot`)
      invariant(this.nodeIndex.get(n.id) === n.index, `neighbour ${n.id} keeps its number in the node index`)
      invariant(this.slotOfIndex(n.index) === n.slot && this.indexSet.has(n.index), `neighbour ${n.id}'s index maps to its slot`)
      for (const flag of ['ownWaitsForHello', 'helloDue', 'needsWholeTable'] as const) if (n[flag]) counted[flag]++
    }
    invariant(this.indexSet.size() === this.inOrder.length, 'the neighbour index set holds exactly the neighbours')
    for (const flag of ['ownWaitsForHello', 'helloDue', 'needsWholeTable'] as const) invariant(counted[flag] === this.counts[flag], `the count of ${flag} matches the neighbours`)
    const end = this.lostBase + this.lostLog.length
    let lostDue = 0
    for (const n of this.inOrder) {
      invariant(n.lostCursor >= this.lostBase && n.lostCursor <= end, `neighbour ${n.id}'s place in the log of losses is in it`)
      if (n.lostCursor < end) lostDue++
    }
    invariant(lostDue === this.lostDue, 'the count of neighbours with a loss to tell matches the neighbours')
  }

  /**
   * Charges `entries` to `neighbour`'s update token bucket (`perSecond` tokens a second, at most
   * `burst`; full at its first update) and returns the tokens left: below 0, it sent too much.
   */
  chargeUpdateBudget(neighbour: Neighbour, entries: number, nowMs: number, perSecond: number, burst: number): number {
    const slot = neighbour.slot
    invariant(this.bySlot[slot] === neighbour, 'a bucket is charged to a neighbour of the table')
    const before = this.budgetTokens[slot]!
    const tokens = Number.isNaN(before) ? burst : Math.min(burst, before + ((nowMs - this.budgetAtMs[slot]!) * perSecond) / 1000)
    this.budgetAtMs[slot] = nowMs
    this.budgetTokens[slot] = tokens - entries
    return tokens - entries
  }

  /** A new connection in `slot`: its bucket starts full at its first update. */
  private resetBudget(slot: number): void {
    if (slot >= this.budgetTokens.length) {
      const size = Math.max(slot + 1, this.budgetTokens.length * 2, 16)
      const tokens = new Float64Array(size)
      tokens.set(this.budgetTokens)
      const atMs = new Float64Array(size)
      atMs.set(this.budgetAtMs)
      this.budgetTokens = tokens
      this.budgetAtMs = atMs
    }
    this.budgetTokens[slot] = Number.NaN
  }

  private countFlags(neighbour: Neighbour, sign: 1 | -1): void {
    for (const flag of ['ownWaitsForHello', 'helloDue', 'needsWholeTable'] as const) if (neighbour[flag]) this.counts[flag] += sign
  }

  private setSlotOfIndex(index: number, slot: number): void {
    if (index >= this.slotOfIndexMap.length) {
      const grown = new Int32Array(Math.max(index + 1, this.slotOfIndexMap.length * 2)).fill(-1)
      grown.set(this.slotOfIndexMap)
      this.slotOfIndexMap = grown
    }
    this.slotOfIndexMap[index] = slot
  }
}
