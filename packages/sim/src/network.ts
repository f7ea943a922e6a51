import { subnetFirewallAllows } from '@phoenix-overlay/core'
import { HELD_MESSAGES_PER_LINK_MAX } from './constants.ts'
import { SimulationError } from './errors.ts'
import type { Kernel, SimEvent } from './kernel.ts'
import type { Payload, SimNode } from './process.ts'

/** One open (or closing) connection between two nodes: latency, bandwidth and what it holds back. */
export interface Connection {
  readonly id: number
  readonly a: SimNode
  readonly b: SimNode
  open: boolean
  /** When the sender's side of each direction is free to transmit again (bandwidth model). */
  txFreeToBMs: number
  txFreeToAMs: number
  /** Messages a full inbox refused, in order, per direction (shared empty array until needed:
   *  a 2,000-node run has ~860,000 connections and almost none ever holds anything). */
  heldToB: Payload[]
  heldToA: Payload[]
  /** Its latency and bandwidth: one object per kind of link, shared (two fractional numbers per connection were two boxed doubles each). */
  readonly link: LinkClass
}

/** What a connection's latency and bandwidth come from: within a subnet or between two. */
export interface LinkClass {
  readonly latencyMs: number
  readonly msPerByte: number
}

/** The held-message queue of a connection that never held anything; never written to. */
const NO_HELD: Payload[] = Object.freeze([]) as unknown as Payload[]

/** A node pair's key, the same either way round. */
function pairKey(a: SimNode, b: SimNode): string {
  return a.index < b.index ? `${a.index}|${b.index}` : `${b.index}|${a.index}`
}

/**
 * The network model: the firewall (the subnet rule plus failed links), dials and their outcomes,
 * connections with latency and bandwidth, FIFO delivery per direction, messages held while a
 * receiver's inbox is full, and closes (noticed at once, or after `crashDetectMs`). It talks to
 * what runs on a node only through `SimProcess`.
 */
export class Network {
  /** Node pairs whose link failed (a `linkFail` event): no dial between them until `linkHeal`. */
  private readonly blockedPairs = new Set<string>()
  private nextConnId = 1
  private readonly links: { readonly intra: LinkClass; readonly inter: LinkClass }

  constructor(private readonly kernel: Kernel) {
    const { intraSubnet, interSubnet } = kernel.scenario.network
    const of = (c: typeof intraSubnet): LinkClass => Object.freeze({ latencyMs: c.latencyUs / 1000, msPerByte: 8 / (c.bandwidthMbps * 1000) })
    this.links = { intra: of(intraSubnet), inter: of(interSubnet) }
  }

  /** May `from` open a connection to `to` now: the subnet firewall, and the link not failed. */
  allowed(from: SimNode, to: SimNode): boolean {
    if (from === to) return false
    if (this.blockedPairs.has(pairKey(from, to))) return false
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
    const conn = a.links.get(b.index)
    if (conn !== undefined) this.closeConnection(conn, [])
    return true
  }

  /** Failed links between two live nodes the firewall would let connect (they stay unconnected). */
  failedAllowedLinks(): number {
    let blocked = 0
    for (const key of this.blockedPairs) {
      const [a, b] = key.split('|').map(Number) as [number, number]
      const x = this.kernel.nodes[a]!
      const y = this.kernel.nodes[b]!
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
      e.ok && target !== undefined && target.alive && this.allowed(node, target) && (node.links.has(target.index) || target.process?.acceptsConnection?.(node) !== false)
    kernel.trace?.(kernel.nowMs, `dial ${node.id} -> ${target?.id ?? e.address} ${success ? 'up' : 'failed'}`)
    if (!success) {
      kernel.counters.dialsFailed++
      node.process?.dialFailed(e.address, kernel.nowMs)
      kernel.kick(node)
      return
    }
    if (!node.links.has(target.index)) this.connect(node, target)
    node.process?.dialSucceeded(target, e.address, kernel.nowMs)
    kernel.kick(node)
  }

  private connect(a: SimNode, b: SimNode): Connection {
    const { kernel } = this
    const conn: Connection = { id: this.nextConnId++, a, b, open: true, txFreeToBMs: 0, txFreeToAMs: 0, heldToB: NO_HELD, heldToA: NO_HELD, link: this.linkClass(a, b) }
    for (const [self, peer] of [
      [a, b],
      [b, a],
    ] as const) {
      // A new connection proves the old one dead even if the crash was not noticed yet.
      if (self.pendingDown.delete(peer.index)) self.process?.connectionDown(peer, kernel.nowMs)
      self.links.set(peer.index, conn)
    }
    kernel.counters.openConnections++
    kernel.charge(b, kernel.scenario.processing.perConnectionUs / 1000)
    b.process?.connectionUp(a, kernel.nowMs)
    kernel.kick(b)
    kernel.activity()
    return conn
  }

  /** `node`'s connection to `peer`, if it has an open or closing one. */
  connectionTo(node: SimNode, peer: SimNode): Connection | undefined {
    return node.links.get(peer.index)
  }

  /** Closes a connection; `notifyNow` says which ends learn it now (the others learn after crashDetectMs). */
  closeConnection(conn: Connection, notifyNow: readonly SimNode[]): void {
    if (!conn.open) return
    const { kernel } = this
    kernel.trace?.(kernel.nowMs, `close ${conn.a.id} ${conn.b.id}`)
    conn.open = false
    kernel.counters.openConnections--
    kernel.counters.held -= conn.heldToA.length + conn.heldToB.length
    kernel.counters.messagesLost += conn.heldToA.length + conn.heldToB.length
    conn.heldToA = NO_HELD
    conn.heldToB = NO_HELD
    conn.a.heldOn.delete(conn)
    conn.b.heldOn.delete(conn)
    for (const [self, peer] of [
      [conn.a, conn.b],
      [conn.b, conn.a],
    ] as const) {
      if (self.links.get(peer.index) === conn) self.links.delete(peer.index)
      if (!self.alive) continue
      if (notifyNow.includes(self)) {
        self.process?.connectionDown(peer, kernel.nowMs)
        kernel.kick(self)
      } else {
        self.pendingDown.set(peer.index, conn.id)
        kernel.schedule(kernel.nowMs + kernel.scenario.network.crashDetectMs, { k: 'down', node: self, incarnation: self.incarnation, peer, connId: conn.id })
      }
    }
    kernel.activity()
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
    const counters = this.kernel.counters
    counters.messages++
    counters.entries += entries
    counters.bytes += bytes
    const conn = from.links.get(to.index)
    if (conn === undefined || !conn.open) {
      // The sender still thinks the peer is there (its crash is not noticed yet): the bytes go nowhere.
      counters.messagesLost++
      return departMs
    }
    const toB = conn.a === from
    const txStart = Math.max(departMs, toB ? conn.txFreeToBMs : conn.txFreeToAMs)
    const txEnd = txStart + bytes * conn.link.msPerByte
    if (toB) conn.txFreeToBMs = txEnd
    else conn.txFreeToAMs = txEnd
    counters.inFlight++
    const arrival = txEnd + conn.link.latencyMs
    this.kernel.schedule(arrival, { k: 'deliver', conn, toB, payload })
    return arrival
  }

  onDeliver(e: Extract<SimEvent, { k: 'deliver' }>): void {
    const counters = this.kernel.counters
    counters.inFlight--
    const { conn, toB, payload } = e
    const to = toB ? conn.b : conn.a
    if (!conn.open || !to.alive) {
      counters.messagesLost++
      return
    }
    let held = toB ? conn.heldToB : conn.heldToA
    if (held.length > 0 || !this.accept(to, toB ? conn.a : conn.b, payload)) {
      if (held === NO_HELD) {
        held = []
        if (toB) conn.heldToB = held
        else conn.heldToA = held
      }
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
    for (const conn of node.heldOn) {
      const toB = conn.b === node
      const held = toB ? conn.heldToB : conn.heldToA
      const from = toB ? conn.a : conn.b
      let taken = 0
      while (taken < held.length && this.accept(node, from, held[taken]!)) taken++
      held.splice(0, taken)
      this.kernel.counters.held -= taken
      if (held.length === 0) node.heldOn.delete(conn)
    }
  }
}
