import { invariant, subnetFirewallAllows, type UpdateMessage } from '@phoenix-overlay/core'
import { HELD_MESSAGES_PER_LINK_MAX } from './constants.ts'
import { SimulationError } from './errors.ts'
import type { Kernel, SimEvent } from './kernel.ts'
import { type LinkSlot, LinkTable } from './links.ts'
import type { Payload, SimNode } from './process.ts'

/** What a connection's latency and bandwidth come from: within a subnet or between two. */
export interface LinkClass {
  readonly latencyMs: number
  readonly msPerByte: number
}

/** Node indices in a pair key: NODES_MAX (20,000) fits 15 bits. */
const PAIR_SHIFT = 15

/** A node pair's key, the same either way round (a number: a string per dial was allocated and hashed twice). */
function pairKey(a: SimNode, b: SimNode): number {
  return a.index < b.index ? (a.index << PAIR_SHIFT) | b.index : (b.index << PAIR_SHIFT) | a.index
}

/**
 * The network model: the firewall (the subnet rule plus failed links), dials and their outcomes,
 * connections with latency and bandwidth, FIFO delivery per direction, messages held while a
 * receiver's inbox is full, and closes (noticed at once, or after `crashDetectMs`). It talks to
 * what runs on a node only through `SimProcess`.
 */
export class Network {
  /** Node pairs whose link failed (a `linkFail` event): no dial between them until `linkHeal`. */
  private readonly blockedPairs = new Set<number>()
  private readonly links: { readonly intra: LinkClass; readonly inter: LinkClass }
  /** The connections (open, and closed ones events still name). */
  readonly table: LinkTable
  /**
   * Messages a full inbox refused, in order, by direction (`2·slot + 1`: to b, `2·slot`: to a);
   * only for directions that hold some (a 2,000-node run has ~860,000 connections and almost none
   * ever holds anything). At most HELD_MESSAGES_PER_LINK_MAX each; emptied when the connection closes.
   */
  private readonly held = new Map<number, Payload[]>()
  /** Connections closed so far: each close's number, which its late `down` events carry (`onDown`). */
  private closesMade = 0

  constructor(private readonly kernel: Kernel) {
    this.table = new LinkTable(kernel.nodes.length)
    const { intraSubnet, interSubnet } = kernel.scenario.network
    const of = (c: typeof intraSubnet): LinkClass => Object.freeze({ latencyMs: c.latencyUs / 1000, msPerByte: 8 / (c.bandwidthMbps * 1000) })
    this.links = { intra: of(intraSubnet), inter: of(interSubnet) }
  }

  /** May `from` open a connection to `to` now: the subnet firewall, and the link not failed. */
  allowed(from: SimNode, to: SimNode): boolean {
    if (from === to) return false
    if (this.blockedPairs.size > 0 && this.blockedPairs.has(pairKey(from, to))) return false
    return subnetFirewallAllows(from, to)
  }

  /** Fails or heals the link between `a` and `b`; false when it already was so (nothing changed). */
  setLinkFailed(a: SimNode, b: SimNode, failed: boolean): boolean {
    const key = pairKey(a, b)
    if (this.blockedPairs.has(key) === failed) return false
    if (!failed) {
      this.blockedPairs.delete(key)
      return true
    }
    this.blockedPairs.add(key)
    const conn = this.table.slotBetween(a.index, b.index)
    if (conn >= 0) this.closeConnection(conn, false)
    return true
  }

  /** Failed links between two live nodes the firewall would let connect (they stay unconnected). */
  failedAllowedLinks(): number {
    let blocked = 0
    for (const key of this.blockedPairs) {
      const x = this.kernel.nodes[key >> PAIR_SHIFT]!
      const y = this.kernel.nodes[key & ((1 << PAIR_SHIFT) - 1)]!
      if (x.alive && y.alive && x !== y && (subnetFirewallAllows(x, y) || subnetFirewallAllows(y, x))) blocked++
    }
    return blocked
  }

  private linkClass(a: SimNode, b: SimNode): LinkClass {
    return a.subnet === b.subnet ? this.links.intra : this.links.inter
  }

  /** `node` dials `address` at `atMs`; the outcome is an event, after a round trip or a SYN timeout. */
  startDial(node: SimNode, address: string, atMs: number): void {
    const { kernel } = this
    kernel.counters.dialsStarted++
    const target = kernel.byAddress.get(address)
    const { latencyMs } = target !== undefined ? this.linkClass(node, target) : this.linkClass(node, node)
    const net = kernel.scenario.network
    let ok = false
    let doneMs: number
    const first = (node.process?.consecutiveDialFailures(address) ?? 0) === 0
    if (first) kernel.counters.firstDialsPending++
    if (target === undefined || !this.allowed(node, target)) {
      // Dropped SYNs: the dialler learns nothing until its SYN timeout; a rejecting firewall
      // answers with a reset after one round trip.
      doneMs = atMs + (net.firewall === 'reject' ? 2 * latencyMs : net.synTimeoutMs)
    } else if (!target.alive) {
      // The host answers with a reset: refused after one round trip.
      doneMs = atMs + 2 * latencyMs
    } else {
      ok = true
      kernel.counters.goodDialsPending++
      doneMs = atMs + 2 * latencyMs + net.connectSetupUs / 1000
    }
    kernel.schedule(doneMs, { k: 'dial', node, incarnation: node.incarnation, address, target, ok, first })
  }

  onDialDone(e: Extract<SimEvent, { k: 'dial' }>): void {
    const { kernel } = this
    if (e.ok) kernel.counters.goodDialsPending--
    if (e.first) kernel.counters.firstDialsPending--
    const { node, target } = e
    if (!node.alive || node.incarnation !== e.incarnation) return
    // Re-check at completion: the target may have died or the link failed meanwhile. A target at
    // its neighbour limit refuses the handshake (a real node's connection gate does the same,
    // packages/transport node.ts), unless the two are connected already (a crossing dial).
    const success =
      e.ok && target !== undefined && target.alive && this.allowed(node, target) && (this.connected(node, target) || target.process?.acceptsConnection?.(node) !== false)
    kernel.trace?.(kernel.nowMs, `dial ${node.id} -> ${target?.id ?? e.address} ${success ? 'up' : 'failed'}`)
    if (!success) {
      kernel.counters.dialsFailed++
      node.process?.dialFailed(e.address, kernel.nowMs)
      kernel.kick(node)
      return
    }
    if (!this.connected(node, target)) this.connect(node, target)
    node.process?.dialSucceeded(target, e.address, kernel.nowMs)
    kernel.kick(node)
  }

  private connect(a: SimNode, b: SimNode): void {
    const { kernel } = this
    // A new connection proves the old one dead even if the crash was not noticed yet.
    if (a.pendingDown.delete(b.index)) a.process?.connectionDown(b, kernel.nowMs)
    if (b.pendingDown.delete(a.index)) b.process?.connectionDown(a, kernel.nowMs)
    this.table.open(a.index, b.index, this.linkClass(a, b) === this.links.inter)
    kernel.counters.openConnections++
    kernel.charge(b, kernel.scenario.processing.perConnectionUs / 1000)
    b.process?.connectionUp(a, kernel.nowMs)
    kernel.kick(b)
    kernel.activity()
  }

  /** Whether `node` and `peer` have an open connection (a closing one, after a leave, is still open until its farewell arrived). */
  connected(node: SimNode, peer: SimNode): boolean {
    return this.table.slotBetween(node.index, peer.index) >= 0
  }

  /** How many open connections `node` has. */
  degree(node: SimNode): number {
    return this.table.degree(node.index)
  }

  /** `node`'s open connection to `peer`, or -1. */
  connectionTo(node: SimNode, peer: SimNode): LinkSlot {
    return this.table.slotBetween(node.index, peer.index)
  }

  /** Closes a connection; `notifyBothNow`: both ends learn it now, else after crashDetectMs. */
  closeConnection(conn: LinkSlot, notifyBothNow: boolean): void {
    const { kernel, table } = this
    if (!table.isOpen(conn)) return
    const a = kernel.nodes[table.a[conn]!]!
    const b = kernel.nodes[table.b[conn]!]!
    // Tells this close's late `down` events from those of a later connection between the two.
    const id = ++this.closesMade
    kernel.trace?.(kernel.nowMs, `close ${a.id} ${b.id}`)
    kernel.counters.openConnections--
    for (const key of [2 * conn, 2 * conn + 1]) {
      const held = this.held.get(key)
      if (held === undefined) continue
      kernel.counters.held -= held.length
      kernel.counters.messagesLost += held.length
      this.held.delete(key)
    }
    a.heldOn.delete(conn)
    b.heldOn.delete(conn)
    table.close(conn)
    for (const [self, peer] of [
      [a, b],
      [b, a],
    ] as const) {
      if (!self.alive) continue
      if (notifyBothNow) {
        self.process?.connectionDown(peer, kernel.nowMs)
        kernel.kick(self)
      } else {
        self.pendingDown.set(peer.index, id)
        kernel.schedule(kernel.nowMs + kernel.scenario.network.crashDetectMs, { k: 'down', node: self, incarnation: self.incarnation, peer, connId: id })
      }
    }
    kernel.activity()
  }

  /** A leave's scheduled close (`Lifecycle.leave`) is due. */
  onClose(e: Extract<SimEvent, { k: 'close' }>): void {
    this.closeConnection(e.conn, true)
    this.table.release(e.conn)
  }

  /** The `down` event: a node notices, late, that a connection died (a crash, a failed link). */
  onDown(e: Extract<SimEvent, { k: 'down' }>): void {
    const { node, peer } = e
    if (!node.alive || node.incarnation !== e.incarnation || node.pendingDown.get(peer.index) !== e.connId) return
    node.pendingDown.delete(peer.index)
    node.process?.connectionDown(peer, this.kernel.nowMs)
    this.kernel.activity()
    this.kernel.kick(node)
  }

  /**
   * Puts a payload on the wire from `from` to `to`, leaving at `departMs` once the link is free
   * (bandwidth), arriving a latency later; returns the arrival time. Counted even if lost.
   */
  send(from: SimNode, to: SimNode, payload: Payload, departMs: number, entries: number, bytes: number): number {
    return this.transmit(from, to, payload, false, departMs, entries, bytes)
  }

  /** `send` of a core's update, queued bare (`Kernel.scheduleDelivery`): its `Payload` is made when it arrives. */
  sendUpdate(from: SimNode, to: SimNode, message: UpdateMessage, departMs: number, bytes: number): number {
    return this.transmit(from, to, message, true, departMs, message.entries.length, bytes)
  }

  private transmit(from: SimNode, to: SimNode, item: Payload | UpdateMessage, update: boolean, departMs: number, entries: number, bytes: number): number {
    const counters = this.kernel.counters
    counters.messages++
    counters.entries += entries
    counters.bytes += bytes
    const { table } = this
    const conn = table.slotBetween(from.index, to.index)
    if (conn < 0) {
      // The sender still thinks the peer is there (its crash is not noticed yet): the bytes go nowhere.
      counters.messagesLost++
      return departMs
    }
    const link = table.isInter(conn) ? this.links.inter : this.links.intra
    const toB = table.a[conn] === from.index
    const txStart = Math.max(departMs, toB ? table.txFreeToBMs[conn]! : table.txFreeToAMs[conn]!)
    const txEnd = txStart + bytes * link.msPerByte
    if (toB) table.txFreeToBMs[conn] = txEnd
    else table.txFreeToAMs[conn] = txEnd
    counters.inFlight++
    const arrival = txEnd + link.latencyMs
    table.retain(conn)
    this.kernel.scheduleDelivery(arrival, conn, toB, item, update)
    return arrival
  }

  /** A delivery is due (`Kernel.scheduleDelivery`, its tag read back). */
  onDeliver(conn: LinkSlot, toB: boolean, payload: Payload): void {
    const counters = this.kernel.counters
    counters.inFlight--
    const { table } = this
    const nodes = this.kernel.nodes
    const to = nodes[toB ? table.b[conn]! : table.a[conn]!]!
    const open = table.isOpen(conn)
    table.release(conn) // an open connection keeps its row; a closed one's may be reused after this
    if (!open || !to.alive) {
      counters.messagesLost++
      return
    }
    const key = 2 * conn + (toB ? 1 : 0)
    // Almost no link ever holds anything: no lookup per delivery while none does.
    let held = this.held.size === 0 ? undefined : this.held.get(key)
    if (held !== undefined || !this.accept(to, nodes[toB ? table.a[conn]! : table.b[conn]!]!, payload)) {
      if (held === undefined) this.held.set(key, (held = []))
      if (held.length >= HELD_MESSAGES_PER_LINK_MAX) {
        throw new SimulationError('LIMIT_EXCEEDED', `${HELD_MESSAGES_PER_LINK_MAX} messages held on the link to ${to.id} (HELD_MESSAGES_PER_LINK_MAX): its inbox never drains`)
      }
      held.push(payload)
      counters.held++
      to.heldOn.add(conn)
    }
    this.kernel.kick(to)
  }

  /** Hands a payload to the node's process; false = it cannot take it now, hold it. */
  private accept(to: SimNode, from: SimNode, payload: Payload): boolean {
    return to.process?.receive(from, payload, this.kernel.nowMs) ?? true
  }

  /** Offers the node what its links hold for it, in order, until it refuses one. */
  retryHeld(node: SimNode): void {
    const { table } = this
    for (const conn of node.heldOn) {
      const toB = table.b[conn] === node.index
      const key = 2 * conn + (toB ? 1 : 0)
      const held = this.held.get(key)
      invariant(held !== undefined, 'a connection a node is held on holds messages for it')
      const from = this.kernel.nodes[toB ? table.a[conn]! : table.b[conn]!]!
      let taken = 0
      while (taken < held.length && this.accept(node, from, held[taken]!)) taken++
      held.splice(0, taken)
      this.kernel.counters.held -= taken
      if (held.length === 0) {
        this.held.delete(key)
        node.heldOn.delete(conn)
      }
    }
  }
}
