import { invariant } from '@phoenix-overlay/core'
import { NODES_MAX } from './constants.ts'

/** A connection's slot in `LinkTable`: reused once the connection closed and no event names it. */
export type LinkSlot = number

const NONE = -1
const OPEN = 1
/** The connection crosses subnets (`Network`'s inter-subnet latency and bandwidth). */
const INTER = 2
/**
 * The row holds a connection, open or closed with events naming it (not free). A connection
 * number a row (4 bytes, 2.3 a (node, destination) pair on one subnet, heap snapshot at 1,500
 * processes) marked this before; `Network` numbers the closes it needs told apart itself.
 */
const USED = 4

/**
 * The simulator's connections, in columns: one row (slot) per open connection or closed one that
 * events still name, a list of each node's connections in the order they opened, and a
 * dense index from node pair to slot. A `Connection` object per link (two boxed
 * doubles) and a `Map` per node, one entry per link at each end, cost ~48 bytes a (node,
 * destination) pair at the end of a 1,000-process run of three subnets (heap snapshot), with
 * ~0.22 connections a pair; a row here is ~45 bytes and the index 2 bytes a pair.
 *
 * Bounds: rows at most the open connections (≤ nodes²/2) plus those closed with events in flight,
 * grown by a quarter; the index one cell per node pair (NODES_MAX).
 */
export class LinkTable {
  /** Its ends: `a` dialled `b`. */
  a = new Int32Array(0)
  b = new Int32Array(0)
  private flags = new Uint8Array(0)
  /** When the sender's side of each direction is free to transmit again (bandwidth model). */
  txFreeToBMs = new Float64Array(0)
  txFreeToAMs = new Float64Array(0)
  /** Events in the queue that name the slot (deliveries, closes): it is not reused while any does. */
  private refs = new Int32Array(0)
  /**
   * Each node's connections as a doubly linked list through the rows' ends: end `2·slot` is the
   * row in `a`'s list, `2·slot + 1` in `b`'s. Appended when a connection opens: the order a
   * node's connections opened (a Map's order before, which orders a leave's closes).
   */
  private next = new Int32Array(0)
  private prev = new Int32Array(0)
  private readonly head: Int32Array
  private readonly tail: Int32Array
  private readonly degreeOf: Int32Array
  private readonly freeSlots: LinkSlot[] = []
  private rows = 0
  /**
   * The pair index: for nodes u < v, `pairSlot[v·(v−1)/2 + u]` is the open connection's slot + 1,
   * or 0. One 4-byte cell per unordered pair, 2 bytes a (node, destination) pair whatever the
   * connections: a hash index over the open connections (kept 0.19-0.5 full, 8 bytes a bucket)
   * held 16-42 bytes a connection, 8-21 a pair in one subnet, where every pair is connected
   * (1-2 GB at 10,000 processes against 200 MB here). Zero-filled, so the pages of pairs never
   * connected are never touched. Bound: NODES_MAX (20,000) nodes, 2·10^8 cells, 800 MB.
   */
  private readonly pairSlot: Int32Array
  private pairsUsed = 0

  constructor(nodes: number) {
    invariant(nodes <= NODES_MAX, 'the pair index is sized for at most NODES_MAX nodes')
    this.pairSlot = new Int32Array((nodes * (nodes - 1)) / 2)
    this.head = new Int32Array(nodes).fill(NONE)
    this.tail = new Int32Array(nodes).fill(NONE)
    this.degreeOf = new Int32Array(nodes)
  }

  /** Opens a connection from `a` to `b` (not connected now); `inter`: it crosses subnets. Returns its slot. */
  open(a: number, b: number, inter: boolean): LinkSlot {
    invariant(this.slotBetween(a, b) === NONE && a !== b, 'two nodes share at most one open connection')
    const slot = this.freeSlots.pop() ?? this.newRow()
    this.a[slot] = a
    this.b[slot] = b
    this.flags[slot] = USED | OPEN | (inter ? INTER : 0)
    this.txFreeToBMs[slot] = 0
    this.txFreeToAMs[slot] = 0
    this.append(a, 2 * slot)
    this.append(b, 2 * slot + 1)
    this.putPair(a, b, slot)
    return slot
  }

  /** Closes an open connection: it leaves both nodes' lists and the pair index; its row stays while events name it. */
  close(slot: LinkSlot): void {
    invariant(this.isOpen(slot), 'only an open connection closes')
    this.flags[slot]! &= ~OPEN
    this.unlink(this.a[slot]!, 2 * slot)
    this.unlink(this.b[slot]!, 2 * slot + 1)
    this.deletePair(this.a[slot]!, this.b[slot]!)
    this.freeIfUnused(slot)
  }

  isOpen(slot: LinkSlot): boolean {
    return (this.flags[slot]! & OPEN) !== 0
  }

  /** Whether the row holds a connection (open, or closed with events naming it): not free. */
  isUsed(slot: LinkSlot): boolean {
    return (this.flags[slot]! & USED) !== 0
  }

  isInter(slot: LinkSlot): boolean {
    return (this.flags[slot]! & INTER) !== 0
  }

  /** An event naming `slot` was scheduled. */
  retain(slot: LinkSlot): void {
    this.refs[slot]!++
  }

  /** An event naming `slot` was handled (after which its row may be reused). */
  release(slot: LinkSlot): void {
    invariant(this.refs[slot]! > 0, 'an event released its connection once')
    this.refs[slot]!--
    this.freeIfUnused(slot)
  }

  /** The open connection between nodes `u` and `v`, or NONE (-1). */
  slotBetween(u: number, v: number): LinkSlot {
    if (u === v) return NONE
    return this.pairSlot[pairCell(u, v)]! - 1
  }

  /** How many open connections node `u` has. */
  degree(u: number): number {
    return this.degreeOf[u]!
  }

  /** Node `u`'s open connections in the order they opened: `visit(peer, slot)`; do not open or close any meanwhile. */
  forEachOf(u: number, visit: (peer: number, slot: LinkSlot) => void): void {
    for (let end = this.head[u]!; end !== NONE; end = this.next[end]!) {
      const slot = end >> 1
      visit((end & 1) === 0 ? this.b[slot]! : this.a[slot]!, slot)
    }
  }

  /** Node `u`'s open connections in the order they opened, as slots (a copy: safe to close them while iterating). */
  slotsOf(u: number): LinkSlot[] {
    const out: LinkSlot[] = []
    this.forEachOf(u, (_, slot) => out.push(slot))
    return out
  }

  /** Checks the table's bookkeeping (tests). */
  checkInvariants(): void {
    let ends = 0
    for (let u = 0; u < this.head.length; u++) {
      let count = 0
      this.forEachOf(u, (peer, slot) => {
        count++
        invariant(this.isOpen(slot) && this.slotBetween(u, peer) === slot, 'a listed connection is open and indexed')
      })
      invariant(count === this.degreeOf[u], 'a node\'s degree counts its list')
      ends += count
    }
    invariant(ends === 2 * this.pairsUsed, 'the pair index holds every open connection once')
  }

  private freeIfUnused(slot: LinkSlot): void {
    if (this.isOpen(slot) || this.refs[slot]! > 0 || !this.isUsed(slot)) return
    this.flags[slot] = 0
    this.freeSlots.push(slot)
  }

  private newRow(): LinkSlot {
    if (this.rows === this.a.length) this.grow(Math.max(16, this.rows + (this.rows >> 2)))
    return this.rows++
  }

  private grow(size: number): void {
    const grown = <T extends Int32Array | Uint8Array | Float64Array>(old: T, make: (n: number) => T, n = size): T => {
      const out = make(n)
      out.set(old)
      return out
    }
    this.a = grown(this.a, (n) => new Int32Array(n))
    this.b = grown(this.b, (n) => new Int32Array(n))
    this.flags = grown(this.flags, (n) => new Uint8Array(n))
    this.txFreeToBMs = grown(this.txFreeToBMs, (n) => new Float64Array(n))
    this.txFreeToAMs = grown(this.txFreeToAMs, (n) => new Float64Array(n))
    this.refs = grown(this.refs, (n) => new Int32Array(n))
    this.next = grown(this.next, (n) => new Int32Array(n), 2 * size)
    this.prev = grown(this.prev, (n) => new Int32Array(n), 2 * size)
  }

  private append(u: number, end: number): void {
    const last = this.tail[u]!
    this.prev[end] = last
    this.next[end] = NONE
    if (last === NONE) this.head[u] = end
    else this.next[last] = end
    this.tail[u] = end
    this.degreeOf[u]!++
  }

  private unlink(u: number, end: number): void {
    const before = this.prev[end]!
    const after = this.next[end]!
    if (before === NONE) this.head[u] = after
    else this.next[before] = after
    if (after === NONE) this.tail[u] = before
    else this.prev[after] = before
    this.degreeOf[u]!--
  }

  private putPair(u: number, v: number, slot: LinkSlot): void {
    this.pairSlot[pairCell(u, v)] = slot + 1
    this.pairsUsed++
  }

  private deletePair(u: number, v: number): void {
    const cell = pairCell(u, v)
    invariant(this.pairSlot[cell] !== 0, 'a closing connection is in the pair index')
    this.pairSlot[cell] = 0
    this.pairsUsed--
  }
}

/** The pair index's cell of nodes `u` ≠ `v` (either way round). */
function pairCell(u: number, v: number): number {
  return u < v ? (v * (v - 1)) / 2 + u : (u * (u - 1)) / 2 + v
}
