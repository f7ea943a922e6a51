import { DEFAULT_LIMITS, DEFAULT_TIMING, type CoreLimits, type CoreTiming } from './constants.ts'
import { AddressBook } from './discovery.ts'
import { PhoenixError, invariant } from './errors.ts'
import { NeighbourTable } from './neighbours.ts'
import { NodeIndex } from './nodeindex.ts'
import { EMPTY_SET, NodeSet } from './nodeset.ts'
import { type RecordAuthority, bytesEqual, recordPayload } from './records.ts'
import { NO_SIGNATURE, RouteEntry, UNREACHABLE_HOPS, isFresher } from './route.ts'
import { isUnreachableSeq, isValidSeq, nextOwnSeq, seqAdd, seqNewer } from './seq.ts'
import type {
  Effect,
  ForwardDecision,
  NodeId,
  PhysicalAddress,
  RouteAdvert,
  RouteView,
  RoutingMode,
  StepKind,
  StepResult,
  UpdateMessage,
} from './types.ts'

export interface CoreConfig {
  readonly id: NodeId
  /** This node's own physical addresses, advertised with its entry. May be set later. */
  readonly addresses?: readonly PhysicalAddress[]
  /** Addresses known at start (the hubs). Nothing else is known until updates arrive. */
  readonly hubs?: readonly PhysicalAddress[]
  readonly names?: readonly string[]
  /** 'optimized' (trans/rcpt, prioritized merged sends) or 'naive' (plain DSDV). Default optimized. */
  readonly mode?: RoutingMode
  /** Dial addresses learned from updates (default true). Off = only hubs are ever dialled. */
  readonly discovery?: boolean
  /** The first even sequence number this node issues (a restarted node may resume above its old one). */
  readonly initialSeq?: number
  readonly limits?: Partial<CoreLimits>
  readonly timing?: Partial<CoreTiming>
  /**
   * Sign our own record and verify everyone else's. Without it records are taken on trust (the
   * simulator, tests of the routing rules); with it only a destination can make its route fresh
   * or say what its names and addresses are.
   */
  readonly records?: RecordAuthority
  /**
   * One `NodeIndex` shared by every core of a process (the simulator): trans sets then travel in
   * that numbering beside their wire form and are not translated bit by bit. Purely a speed-up;
   * the routing is the same. Share it only among cores that run side by side in one simulator.
   */
  readonly sharedNodeIndex?: NodeIndex
}

export interface CoreStats {
  /** Record signatures checked (each new record once; the simulator charges a measured cost per check). */
  recordsVerified: number
  /** Neighbours disconnected for breaking a limit (too many destinations, too many updates). */
  peersDropped: number
  messagesReceived: number
  entriesReceived: number
  messagesSent: number
  entriesSent: number
  dialsStarted: number
  dialsFailed: number
  /** Entries not stored because the destination table was full. */
  destinationsRefused: number
  /** Addresses not remembered because the address book was full. */
  addressesRefused: number
  /** Unreachable entries forgotten after their retention time. */
  entriesExpired: number
}

interface InboxItem {
  readonly from: NodeId
  /** Which connection to `from` it arrived on: news from a closed connection is stale. */
  readonly connection: number
  readonly message: UpdateMessage
  /** Distinct destinations it names that we did not know when it arrived, with their names counts (counted against the sender until applied). */
  readonly unknownDestinations: ReadonlyMap<NodeId, number>
}

/**
 * One Phoenix node's routing and discovery state, as a pure state machine.
 *
 * Inputs: `connectionUp`, `connectionDown`, `dialFailed`, `receive`, name and address changes.
 * The driver then calls `step(nowMs)` whenever the node is free; each step serves the highest of
 * the paper's priorities that has work: (1) dial known-but-unconnected nodes, (2) apply every
 * received update, (3) send one merged update per neighbour. Effects come out of `step` (and of
 * `leave`); the core never performs I/O, reads a clock or draws a random number.
 */
export class PhoenixCore {
  readonly id: NodeId
  readonly mode: RoutingMode
  readonly discovery: boolean
  readonly limits: Readonly<CoreLimits>
  readonly timing: Readonly<CoreTiming>
  private readonly records: RecordAuthority | undefined
  private readonly sharedIndex: NodeIndex | undefined

  private readonly table = new Map<NodeId, RouteEntry>()
  private readonly own: RouteEntry
  /** Open connections; their slot numbers name them in the trans sets we send. */
  private readonly neighbours = new NeighbourTable()
  /** Every node id we know, numbered for the trans/rcpt bitsets. */
  private readonly nodeIndex: NodeIndex
  /** Our neighbours, as node indices: the universe of every send decision. */
  private readonly neighbourSet = new NodeSet()
  private readonly book: AddressBook
  private readonly hubs: PhysicalAddress[] = []
  /** Entries that changed since the last send round. */
  private readonly dirty = new Set<RouteEntry>()
  /** A neighbour joined since the last send round: every entry must be considered for it. */
  private allDirty = false
  /** Node index -> neighbour slot (-1: not a neighbour), for the hot paths of sending. */
  private slotOfIndex = new Int32Array(64).fill(-1)
  /** Naive mode: neighbours that still need the whole table. */
  private readonly freshNeighbours = new Set<NodeId>()
  private readonly inbox: InboxItem[] = []
  /** Per neighbour, the number of its current connection (bumped on every connectionUp). */
  private readonly connectionOf = new Map<NodeId, number>()
  /**
   * Per neighbour, the sequence number of its own record as it last advertised it to us on this
   * connection (optimized mode). A node is told about itself only when we hold a newer number
   * than this (it restarted, or a route to it was lost): see "Not telling a node about itself"
   * in packages/core/README.md. Bounded by the neighbours.
   */
  private readonly ownerSeqHeard = new Map<NodeId, number>()
  /** Neighbours whose first update on this connection (its hello) we have not applied. */
  private readonly awaitingHello = new Set<NodeId>()
  /** Those of them our own record waits for: they probably hold it already (see connectionUp). */
  private readonly ownWaitsForHello = new Set<NodeId>()
  /** Neighbours we owe our first update on this connection (it carries our hello, even if empty). */
  private readonly helloDue = new Set<NodeId>()
  /**
   * Per neighbour, its last slot table and the node index of each slot: a sender's table changes
   * only when its neighbours do, so most messages reuse the translation of the previous one.
   */
  private readonly senderSlots = new Map<NodeId, { table: readonly NodeId[]; map: Int32Array }>()
  private connectionsOpened = 0
  private inboxHead = 0
  /** name -> nodes whose freshest record claims it (usually one). */
  private readonly nameOwners = new Map<string, Set<NodeId>>()
  private nowMs = 0
  private nextExpiryScanMs = 0
  private left = false
  /** Per neighbour: destinations it introduced (still in the table), and its update token bucket. */
  private readonly introducedBy = new Map<NodeId, number>()
  /** Per neighbour: logical names carried by the records of the destinations it introduced. */
  private readonly introducedNamesBy = new Map<NodeId, number>()
  /**
   * Per neighbour, the unknown destinations named by its updates still in the inbox, each with the
   * number of queued updates naming it and the most names it was given: a destination counts once
   * against the neighbour however often it is repeated before it is applied. Bounded by the inbox
   * (inboxMessagesMax).
   */
  private readonly introducingQueued = new Map<NodeId, { readonly destinations: Map<NodeId, { messages: number; names: number }>; names: number }>()
  private readonly updateBudget = new Map<NodeId, { tokens: number; atMs: number }>()
  private readonly counters = { recordsVerified: 0, peersDropped: 0, messagesReceived: 0, entriesReceived: 0, messagesSent: 0, entriesSent: 0, destinationsRefused: 0, entriesExpired: 0 }

  constructor(config: CoreConfig) {
    this.limits = { ...DEFAULT_LIMITS, ...config.limits }
    this.timing = { ...DEFAULT_TIMING, ...config.timing }
    for (const [key, value] of Object.entries({ ...this.limits, ...this.timing })) {
      if (!Number.isFinite(value) || value < 0 || !Number.isInteger(value)) {
        throw new PhoenixError('INVALID_CONFIG', `${key} must be a non-negative integer, got ${String(value)}`)
      }
    }
    if (this.limits.hopLimit < 1) throw new PhoenixError('INVALID_CONFIG', 'hopLimit must be at least 1')
    if (this.timing.dialBackoffInitialMs < 1) throw new PhoenixError('INVALID_CONFIG', 'dialBackoffInitialMs must be at least 1')
    this.checkNodeId(config.id, 'config.id')
    this.id = config.id
    this.mode = config.mode ?? 'optimized'
    if (this.mode !== 'optimized' && this.mode !== 'naive') {
      throw new PhoenixError('INVALID_CONFIG', `mode must be 'optimized' or 'naive', got ${JSON.stringify(this.mode)}`)
    }
    this.discovery = config.discovery ?? true
    this.records = config.records
    this.sharedIndex = config.sharedNodeIndex
    const initialSeq = config.initialSeq ?? 0
    if (!isValidSeq(initialSeq) || isUnreachableSeq(initialSeq)) {
      throw new PhoenixError('INVALID_CONFIG', `initialSeq must be an even integer in [0, 2^32), got ${initialSeq}`)
    }
    // Destinations plus neighbours plus room for nodes that are only named in trans sets so far.
    this.nodeIndex = config.sharedNodeIndex ?? new NodeIndex(this.limits.destinationsMax + 2 * this.limits.neighboursMax)
    this.nodeIndex.intern(config.id)
    this.book = new AddressBook(this.limits.knownAddressesMax, this.limits.dialsInFlightMax, this.timing)
    this.own = new RouteEntry(this.id)
    this.own.fwd = this.id
    this.own.nhops = 0
    this.own.seq = initialSeq
    this.own.addresses = this.checkAddresses(config.addresses ?? [], 'config.addresses')
    this.own.names = this.checkNames(config.names ?? [], 'config.names')
    this.table.set(this.id, this.own)
    this.indexNames(this.own, [])
    this.signOwnRecord()
    for (const hub of this.checkAddresses(config.hubs ?? [], 'config.hubs', Number.POSITIVE_INFINITY)) {
      if (this.own.addresses.includes(hub)) continue
      this.hubs.push(hub)
      this.book.learn(hub, undefined)
      this.book.want(hub)
    }
  }

  // ---------------------------------------------------------------- inputs

  /** A connection to `peer` is open (we dialled `dialledAddress`, or it dialled us). */
  connectionUp(peer: NodeId, nowMs: number, dialledAddress?: PhysicalAddress): void {
    this.enter(nowMs)
    this.checkNodeId(peer, 'peer')
    if (dialledAddress !== undefined) this.book.dialSucceeded(dialledAddress, peer)
    if (peer === this.id) {
      this.pendingCloses.push({ type: 'close', peer, reason: 'connected to itself' })
      return
    }
    if (this.neighbours.has(peer)) return
    const index = this.nodeIndex.intern(peer)
    if (this.neighbours.size >= this.limits.neighboursMax || index === undefined) {
      this.pendingCloses.push({ type: 'close', peer, reason: `neighbour limit ${this.limits.neighboursMax} reached` })
      return
    }
    this.neighbours.add(peer)
    this.neighbourSet.add(index)
    this.connectionOf.set(peer, ++this.connectionsOpened)
    // Every entry may have to go to the new neighbour, except those it is already known to hold
    // (it was named in a trans set we received, e.g. a hub's broadcast): that is where indexing
    // all known nodes, not only neighbours, saves a full table per connection.
    if (this.mode === 'naive') this.freshNeighbours.add(peer)
    else {
      this.allDirty = true
      this.awaitingHello.add(peer)
      this.helloDue.add(peer)
      // Our record waits for the hello only where the peer probably holds it: with discovery on,
      // connections follow the records (we dial what we learned), so if we hold the peer's record
      // it most likely got ours the same way (a hub broadcasts both). A hub met through our
      // configuration, or a connection list given offline, would make us wait a round trip for
      // nothing, behind a peer that may be busy (measured: 10% slower offline convergence).
      if (this.discovery && this.table.get(peer)?.reachable === true) this.ownWaitsForHello.add(peer)
      if (this.routeDirectly(peer)) this.advertiseDirectRoute(this.table.get(peer)!, index)
    }
    this.setSlotOfIndex(index, this.neighbours.slot(peer)!)
  }

  /** A record of a neighbour relayed by someone else still routes directly to the neighbour. */
  private keepNeighbourDirect(entry: RouteEntry, from: NodeId): void {
    if (this.mode === 'naive' || from === entry.destination || !this.neighbours.has(entry.destination)) return
    if (this.routeDirectly(entry.destination)) this.advertiseDirectRoute(entry, this.nodeIndex.get(entry.destination)!)
  }

  /**
   * A neighbour whose record we already hold is one hop away: the connection itself shows it (the
   * transport authenticates the peer's id), so the route need not wait for the neighbour to
   * advertise itself, and it may not (see the hello). Loop-free: the next hop is the destination.
   * Returns true if the route changed; it is advertised by `advertiseDirectRoute`.
   */
  private routeDirectly(peer: NodeId): boolean {
    const entry = this.table.get(peer)
    if (entry === undefined || !entry.reachable || (entry.fwd === peer && entry.nhops === 1)) return false
    entry.fwd = peer
    entry.nhops = 1
    entry.changedAtMs = this.nowMs
    return true
  }

  /**
   * Advertises a direct route to the neighbour at node index `index` (the entry's destination) to
   * the neighbours that may need it. As on any change, whoever got our longer route needs this one
   * (trans := ∅). Not those in rcpt if they hold it at 2 hops or fewer: 1 + 1 is all we can offer
   * (typically the hub's other neighbours, who learned it from the hub).
   */
  private advertiseDirectRoute(entry: RouteEntry, index: number): void {
    entry.trans = EMPTY_SET
    let rcpt: NodeSet
    if (entry.rcptHopsMax <= 2) rcpt = entry.rcpt.clone()
    else {
      rcpt = new NodeSet(index + 1)
      entry.rcptHopsMax = 0
    }
    rcpt.add(index)
    entry.rcpt = rcpt.freeze()
    this.dirty.add(entry)
  }

  /** The connection to `peer` closed (crash, leave, network). Routes through it become unreachable. */
  connectionDown(peer: NodeId, nowMs: number): void {
    this.enter(nowMs)
    if (this.neighbours.remove(peer) === undefined) return
    this.connectionOf.delete(peer)
    this.ownerSeqHeard.delete(peer)
    this.awaitingHello.delete(peer)
    this.ownWaitsForHello.delete(peer)
    this.helloDue.delete(peer)
    this.senderSlots.delete(peer)
    this.updateBudget.delete(peer)
    const index = this.nodeIndex.get(peer)!
    this.neighbourSet.delete(index)
    this.setSlotOfIndex(index, -1)
    this.freshNeighbours.delete(peer)
    // It may come back with an empty table (a restart): nothing may count as already sent to it.
    for (const entry of this.table.values()) {
      entry.trans.forget(index)
      entry.rcpt.forget(index)
      if (entry.fwd === peer && entry.reachable && entry !== this.own) this.invalidate(entry)
    }
    // Cut off from everyone: start again from the hubs.
    if (this.neighbours.size === 0) for (const hub of this.hubs) this.book.want(hub)
  }

  /** A dial we asked for failed: refused, timed out, or forbidden by a firewall. */
  dialFailed(address: PhysicalAddress, nowMs: number): void {
    this.enter(nowMs)
    this.book.dialFailed(address, nowMs)
  }

  /**
   * Queues an update from neighbour `from` for the next apply step. The whole message is checked
   * first; a malformed one throws INVALID_INPUT and nothing of it is kept. Returns false when the
   * inbox is full: the driver must hold the message and stop reading until a step has run.
   */
  receive(from: NodeId, message: UpdateMessage, nowMs: number): boolean {
    this.enter(nowMs)
    if (!this.neighbours.has(from)) {
      throw new PhoenixError('INVALID_INPUT', `update from ${JSON.stringify(from)}, which is not a neighbour`)
    }
    const unknown = this.checkMessage(message)
    if (this.inbox.length - this.inboxHead >= this.limits.inboxMessagesMax) return false
    let queued = this.introducingQueued.get(from)
    let destinations = queued?.destinations.size ?? 0
    let names = queued?.names ?? 0
    for (const [destination, count] of unknown) {
      const already = queued?.destinations.get(destination)
      if (already === undefined) destinations++
      names += Math.max(0, count - (already?.names ?? 0))
    }
    this.policePeer(from, message.entries.length, destinations, names, nowMs)
    this.verifyRecords(from, message)
    this.inbox.push({ from, connection: this.connectionOf.get(from)!, message, unknownDestinations: unknown })
    if (unknown.size > 0) {
      if (queued === undefined) this.introducingQueued.set(from, (queued = { destinations: new Map(), names: 0 }))
      for (const [destination, count] of unknown) {
        const already = queued.destinations.get(destination)
        if (already === undefined) queued.destinations.set(destination, { messages: 1, names: count })
        else {
          already.messages++
          already.names = Math.max(already.names, count)
        }
      }
      queued.names = names
    }
    this.counters.messagesReceived++
    this.counters.entriesReceived += message.entries.length
    return true
  }

  addName(name: string): void {
    this.assertActive()
    if (this.own.names.includes(name)) return
    const names = this.checkNames([...this.own.names, name], 'name')
    this.setOwnRecord(names, this.own.addresses)
  }

  removeName(name: string): void {
    this.assertActive()
    if (!this.own.names.includes(name)) return
    this.setOwnRecord(this.own.names.filter((n) => n !== name), this.own.addresses)
  }

  /** Replaces this node's advertised physical addresses (e.g. once the transport listens). */
  setAddresses(addresses: readonly PhysicalAddress[]): void {
    this.assertActive()
    this.setOwnRecord(this.own.names, this.checkAddresses(addresses, 'addresses'))
  }

  /** Adds a hub at run time (it is dialled like the ones given at start). */
  addHub(address: PhysicalAddress): void {
    this.assertActive()
    this.checkAddresses([address], 'hub', Number.POSITIVE_INFINITY)
    if (this.hubs.includes(address) || this.own.addresses.includes(address)) return
    this.hubs.push(address)
    this.book.learn(address, undefined)
    this.book.want(address)
  }

  /**
   * Graceful leave: tells every neighbour at once that this node is gone (its own entry with the
   * next odd sequence number), so routes are repaired without waiting for connections to time
   * out. The driver sends the returned effects, then closes the connections.
   */
  leave(nowMs: number): Effect[] {
    this.enter(nowMs)
    this.own.seq = seqAdd(this.own.seq, 1)
    this.own.nhops = UNREACHABLE_HOPS
    this.left = true
    const advert = this.advertOf(this.own, -1)
    const effects: Effect[] = []
    for (const peer of this.neighbours.ids()) {
      effects.push({ type: 'send', to: peer, message: { neighbourSlots: [], transSets: [], entries: [advert] } })
    }
    this.counters.messagesSent += effects.length
    this.counters.entriesSent += effects.length
    return effects
  }

  // ---------------------------------------------------------------- scheduler

  private readonly pendingCloses: Effect[] = []

  /** True if `step(nowMs)` would do something now. */
  hasWork(nowMs: number): boolean {
    if (this.left) return false
    this.book.releaseBackoffs(nowMs)
    if (this.pendingCloses.length > 0 || this.book.hasDialReady() || this.inbox.length > this.inboxHead) return true
    if (!this.hasPendingSends()) return false
    return this.sendHoldUntil(nowMs) === undefined
  }

  step(nowMs: number): StepResult {
    this.enter(nowMs)
    if (this.left) return this.result('idle', [], undefined)
    this.expireUnreachable()
    const nextRetry = this.book.releaseBackoffs(nowMs)

    // Priority 1: connect to every known node we are not connected to.
    const closes = this.pendingCloses.splice(0)
    const dials = this.discoveryDials()
    if (dials.length > 0 || closes.length > 0) return this.result('dial', [...closes, ...dials], undefined)

    // Priority 2: apply received updates (all of them; naive DSDV reacts to each one at once).
    if (this.inbox.length > this.inboxHead) {
      if (this.mode === 'naive') {
        const applied = this.applyInbox(1)
        const sent = this.sendRound()
        return { ...sent, kind: 'apply', messagesApplied: applied.messages, entriesApplied: applied.entries }
      }
      const applied = this.applyInbox(Number.POSITIVE_INFINITY)
      return { ...this.result('apply', [], undefined), messagesApplied: applied.messages, entriesApplied: applied.entries }
    }

    // Priority 3: send, one merged message per neighbour.
    if (this.hasPendingSends()) {
      const holdUntil = this.sendHoldUntil(nowMs)
      if (holdUntil !== undefined) return this.result('idle', [], holdUntil)
      return this.sendRound()
    }
    return this.result('idle', [], nextRetry)
  }

  private discoveryDials(): Effect[] {
    const picked = this.book.takeDials(this.nowMs, (owner) => owner === this.id || this.neighbours.has(owner))
    return picked.map(({ address, owner }) => ({ type: 'dial', address, expectedPeer: owner }))
  }

  /** While dials started less than sendHoldForDialsMs ago are in flight, sends wait (bounded). */
  private sendHoldUntil(nowMs: number): number | undefined {
    if (this.mode === 'naive' || this.timing.sendHoldForDialsMs === 0) return undefined
    const oldest = this.book.oldestDialStartMs()
    if (oldest === undefined) return undefined
    const until = oldest + this.timing.sendHoldForDialsMs
    return until > nowMs ? until : undefined
  }

  /** Sender slot -> our node index for `table`, reusing what changed least since its last message. */
  private slotMapOf(from: NodeId, table: readonly NodeId[]): Int32Array {
    const cached = this.senderSlots.get(from)
    if (cached !== undefined && cached.table === table) return cached.map
    const map = new Int32Array(table.length)
    for (let i = 0; i < table.length; i++) {
      const id = table[i]!
      if (cached !== undefined && i < cached.table.length && cached.table[i] === id) map[i] = cached.map[i]!
      else map[i] = id === '' ? -1 : (this.nodeIndex.intern(id) ?? -1)
    }
    this.senderSlots.set(from, { table, map })
    return map
  }

  private hasPendingSends(): boolean {
    return this.dirty.size > 0 || this.allDirty || this.freshNeighbours.size > 0 || this.helloDue.size > 0
  }

  private setSlotOfIndex(index: number, slot: number): void {
    if (index >= this.slotOfIndex.length) {
      const grown = new Int32Array(Math.max(index + 1, this.slotOfIndex.length * 2)).fill(-1)
      grown.set(this.slotOfIndex)
      this.slotOfIndex = grown
    }
    this.slotOfIndex[index] = slot
  }

  private result(kind: StepKind, effects: Effect[], wakeAtMs: number | undefined): StepResult {
    return { kind, effects, messagesApplied: 0, entriesApplied: 0, messagesSent: 0, entriesSent: 0, wakeAtMs }
  }

  // ---------------------------------------------------------------- applying updates

  private dequeueIntroductions(item: InboxItem): void {
    if (item.unknownDestinations.size === 0) return
    const queued = this.introducingQueued.get(item.from)!
    for (const destination of item.unknownDestinations.keys()) {
      const pending = queued.destinations.get(destination)!
      if (--pending.messages > 0) continue
      queued.destinations.delete(destination)
      queued.names -= pending.names
    }
    if (queued.destinations.size === 0) this.introducingQueued.delete(item.from)
  }

  private applyInbox(maxMessages: number): { messages: number; entries: number } {
    let messages = 0
    let entries = 0
    while (this.inboxHead < this.inbox.length && messages < maxMessages) {
      const item = this.inbox[this.inboxHead]!
      this.inbox[this.inboxHead++] = undefined as unknown as InboxItem
      messages++
      entries += item.message.entries.length
      this.dequeueIntroductions(item)
      // The connection it came on may have closed since (and maybe reopened, e.g. the sender
      // restarted): its news is then stale, and applying it could mark the new incarnation as
      // already holding entries it never got.
      if (this.connectionOf.get(item.from) === item.connection) this.applyMessage(item.from, this.nodeIndex.get(item.from)!, item.message)
    }
    if (this.inboxHead === this.inbox.length) {
      this.inbox.length = 0
      this.inboxHead = 0
    }
    return { messages, entries }
  }

  private applyMessage(from: NodeId, fromIndex: number, message: UpdateMessage): void {
    // trans sets arrive in the sender's slot numbering; translate each distinct one once, into
    // one frozen set shared by every entry that references it.
    let slotMap: Int32Array | undefined
    const translated: (NodeSet | undefined)[] = []
    const transOf = (index: number): NodeSet | undefined => {
      if (index < 0 || this.mode === 'naive') return undefined
      let set = translated[index]
      if (set !== undefined) return set
      const hint = message.sharedIndexSets
      if (hint !== undefined && hint.space === this.nodeIndex && hint.sets[index] instanceof NodeSet) {
        set = hint.sets[index] as NodeSet
      } else {
        slotMap ??= this.slotMapOf(from, message.neighbourSlots)
        set = NodeSet.translate(message.transSets[index]!, slotMap, this.nodeIndex.highWater)
      }
      translated[index] = set
      return set
    }
    // rcpt after a change: the sender plus everyone it sent the same entry to; one set per trans set.
    const rcptAfterChange: NodeSet[] = []
    const rcptOf = (transIndex: number): NodeSet => {
      const key = transIndex + 1
      let set = rcptAfterChange[key]
      if (set === undefined) {
        set = new NodeSet(this.nodeIndex.highWater)
        set.add(fromIndex)
        const trans = transOf(transIndex)
        if (trans !== undefined) set.addAll(trans)
        rcptAfterChange[key] = set.freeze()
      }
      return set
    }
    if (this.awaitingHello.delete(from)) {
      this.ownWaitsForHello.delete(from)
      this.applyHello(fromIndex, message.hello)
    }
    for (const advert of message.entries) {
      this.applyAdvert(from, fromIndex, advert, transOf, rcptOf)
      if (advert.destination === from && this.mode === 'optimized') this.heardFromOwner(from, fromIndex, advert.seq)
    }
  }

  /**
   * The first update on a connection says which number of our record the neighbour holds. If it
   * holds our current one, it does not need it again; otherwise it gets ours now. A hello is not
   * signed, so a claim of a newer number (we restarted, or a route to us was lost) does not move
   * our sequence number: the neighbour sees our older record and sends us its signed newer one,
   * which does (`heardFromOwner`).
   */
  private applyHello(fromIndex: number, hello: UpdateMessage['hello']): void {
    if (hello?.receiverSeq === this.own.seq) this.noteHolder(this.own, fromIndex, 0, undefined)
    else this.dirty.add(this.own)
  }

  /** Someone holds our record with a newer number than ours: issue the next even one, so our fresh route wins everywhere. */
  private ownRecordSeenAt(seq: number): void {
    this.own.seq = nextOwnSeq(seq)
    this.signOwnRecord()
    this.own.changedAtMs = this.nowMs
    // Everyone, the sender included, holds an older record of us now.
    this.own.trans = EMPTY_SET
    this.own.rcpt = EMPTY_SET
    this.dirty.add(this.own)
  }

  /**
   * A neighbour advertised its own record. If we hold a newer number for it (it restarted, or a
   * retraction reached us first), it must hear ours to issue a fresher one: make our entry due
   * to it again.
   */
  private heardFromOwner(owner: NodeId, ownerIndex: number, seq: number): void {
    this.ownerSeqHeard.set(owner, seq)
    const entry = this.table.get(owner)
    if (entry === undefined || !seqNewer(entry.seq, seq)) return
    entry.trans = entry.trans.without(ownerIndex)
    entry.rcpt = entry.rcpt.without(ownerIndex)
    this.dirty.add(entry)
  }

  /**
   * Whether a neighbour needs our entry for itself: only if it holds an older number of its own
   * record than we do. Until it has advertised itself on this connection (it always does, first
   * thing) we wait: `heardFromOwner` makes the entry due if it turns out to be older.
   */
  private ownerNeedsOwnEntry(entry: RouteEntry): boolean {
    const heard = this.ownerSeqHeard.get(entry.destination)
    return heard !== undefined && seqNewer(entry.seq, heard)
  }

  private applyAdvert(
    from: NodeId,
    fromIndex: number,
    advert: RouteAdvert,
    transOf: (index: number) => NodeSet | undefined,
    rcptOf: (index: number) => NodeSet,
  ): void {
    const senderHops = isUnreachableSeq(advert.seq) ? UNREACHABLE_HOPS : advert.nhops
    if (advert.destination === this.id) {
      // Someone holds our record with a sequence number at least ours: we restarted, or a route
      // to us was lost (odd). Issue a newer even number so our fresh route wins everywhere.
      if (seqNewer(advert.seq, this.own.seq)) this.ownRecordSeenAt(advert.seq)
      else if (advert.seq === this.own.seq) this.noteHolder(this.own, fromIndex, senderHops, undefined)
      return
    }
    const candidateHops = senderHops + 1
    let entry = this.table.get(advert.destination)
    if (entry === undefined) {
      if (this.table.size >= this.limits.destinationsMax) {
        this.counters.destinationsRefused++
        return
      }
      entry = new RouteEntry(advert.destination)
      entry.seq = advert.seq
      entry.introducedBy = from
      this.introducedBy.set(from, (this.introducedBy.get(from) ?? 0) + 1)
      this.table.set(advert.destination, entry)
      this.adopt(entry, from, advert, candidateHops, rcptOf, true)
      this.keepNeighbourDirect(entry, from)
      return
    }
    if (isFresher(advert.seq, candidateHops, entry.seq, entry.nhops)) {
      this.adopt(entry, from, advert, candidateHops, rcptOf, false)
      this.keepNeighbourDirect(entry, from)
    } else if (advert.seq === entry.seq) {
      this.noteHolder(entry, fromIndex, senderHops, this.mode === 'naive' ? undefined : () => transOf(advert.trans))
    }
  }

  private adopt(
    entry: RouteEntry,
    from: NodeId,
    advert: RouteAdvert,
    candidateHops: number,
    rcptOf: (transIndex: number) => NodeSet,
    isNew: boolean,
  ): void {
    const reachable = !isUnreachableSeq(advert.seq)
    // Same seq means the same record (the owner bumps seq whenever its names or addresses change).
    const recordChanged = isNew || advert.seq !== entry.seq
    const previousNames = entry.names
    entry.seq = advert.seq
    entry.nhops = reachable ? candidateHops : UNREACHABLE_HOPS
    entry.fwd = reachable ? from : undefined
    entry.changedAtMs = this.nowMs
    if (recordChanged) {
      if (entry.introducedBy !== undefined) this.countIntroducedNames(entry.introducedBy, advert.names.length - previousNames.length)
      entry.names = advert.names
      entry.addresses = advert.addresses
      entry.signature = advert.signature ?? NO_SIGNATURE
      this.indexNames(entry, previousNames)
    }
    // The paper: on a change trans := ∅ and rcpt := {sender}. We also put e.trans into rcpt:
    // they got this very entry from the sender, one hop closer than we could offer, and
    // without it the paper's own Figure 2 does not come out (packages/core/README.md, "trans and rcpt").
    if (this.mode === 'optimized') {
      entry.trans = EMPTY_SET
      entry.rcpt = rcptOf(advert.trans)
      // The sender holds it one hop shorter than we do, and its trans got the sender's very offer.
      entry.rcptHopsMax = entry.nhops
    }
    this.dirty.add(entry)
    if (reachable && this.discovery) this.wantDial(entry)
  }

  /**
   * No change: the sender holds this entry at our sequence number. It counts as covered (we need
   * not send it ours) only if what it holds is at least as good as what we would give it, and its
   * trans only if those nodes got something at least as good. The paper adds both unconditionally;
   * that can starve a neighbour of a shorter route (packages/core/README.md, "trans and rcpt", and its unit test).
   */
  private noteHolder(entry: RouteEntry, fromIndex: number, senderHops: number, trans: (() => NodeSet | undefined) | undefined): void {
    if (this.mode === 'naive') return
    const set = trans !== undefined && senderHops <= entry.nhops ? trans() : undefined
    const holderCovered = senderHops <= entry.nhops + 1
    if (!holderCovered && set === undefined) return
    const news = (s: NodeSet) => (holderCovered && !s.has(fromIndex)) || (set !== undefined && !s.containsAll(set))
    if (!news(entry.trans) && !news(entry.rcpt)) return
    const newTrans = entry.trans.clone()
    const newRcpt = entry.rcpt.clone()
    if (holderCovered) {
      newTrans.add(fromIndex)
      newRcpt.add(fromIndex)
      entry.rcptHopsMax = Math.max(entry.rcptHopsMax, senderHops)
    }
    if (set !== undefined) {
      newTrans.addAll(set)
      newRcpt.addAll(set)
      entry.rcptHopsMax = Math.max(entry.rcptHopsMax, senderHops + 1)
    }
    entry.trans = newTrans.freeze()
    entry.rcpt = newRcpt.freeze()
  }

  /** Marks `entry` unreachable with the next odd sequence number, as DSDV does on a broken link. */
  private invalidate(entry: RouteEntry): void {
    entry.seq = seqAdd(entry.seq, 1)
    entry.nhops = UNREACHABLE_HOPS
    entry.fwd = undefined
    entry.changedAtMs = this.nowMs
    entry.trans = EMPTY_SET
    entry.rcpt = EMPTY_SET
    entry.rcptHopsMax = 0
    this.dirty.add(entry)
  }

  private wantDial(entry: RouteEntry | undefined): void {
    if (entry === undefined || !entry.reachable || entry === this.own || this.neighbours.has(entry.destination)) return
    for (const address of entry.addresses) {
      if (this.book.learn(address, entry.destination)) this.book.want(address)
    }
  }

  // ---------------------------------------------------------------- sending

  private sendRound(): StepResult {
    const perNeighbour = new Map<number, RouteEntry[]>()
    const push = (slot: number, entry: RouteEntry): void => {
      let list = perNeighbour.get(slot)
      if (list === undefined) perNeighbour.set(slot, (list = []))
      list.push(entry)
    }
    if (this.mode === 'naive') {
      for (const peer of this.neighbours.ids()) {
        const slot = this.neighbours.slot(peer)!
        const entries = this.freshNeighbours.has(peer) ? this.table.values() : this.dirty
        for (const entry of entries) push(slot, entry)
      }
      this.freshNeighbours.clear()
    } else {
      // Entries whose trans and rcpt are the same (shared) sets get the same targets and the same
      // new trans: compute each pair once per round.
      const decided = new Map<NodeSet, Map<NodeSet, { slots: number[]; trans: NodeSet }>>()
      for (const entry of this.allDirty ? this.table.values() : this.dirty) {
        let byRcpt = decided.get(entry.trans)
        if (byRcpt === undefined) decided.set(entry.trans, (byRcpt = new Map()))
        let decision = byRcpt.get(entry.rcpt)
        if (decision === undefined) {
          const slots: number[] = []
          let trans = entry.trans
          NodeSet.forEachMissing(this.neighbourSet, entry.trans, entry.rcpt, (index) => {
            if (trans === entry.trans) trans = entry.trans.clone()
            trans.add(index)
            slots.push(this.slotOfIndex[index]!)
          })
          decision = { slots, trans: trans.frozen ? trans : trans.freeze() }
          byRcpt.set(entry.rcpt, decision)
        }
        if (entry === this.own && this.ownWaitsForHello.size > 0) {
          // Our record waits for each new neighbour's hello: it may hold it already.
          let trans = decision.trans
          for (const slot of decision.slots) {
            const peer = this.neighbours.id(slot)!
            if (this.ownWaitsForHello.has(peer)) trans = trans.without(this.nodeIndex.get(peer)!)
            else push(slot, entry)
          }
          entry.trans = trans
          continue
        }
        if (decision.slots.length > 0) {
          const ownerSlot = this.neighbours.slot(entry.destination)
          for (const slot of decision.slots) if (slot !== ownerSlot || this.ownerNeedsOwnEntry(entry)) push(slot, entry)
        }
        entry.trans = decision.trans
      }
    }
    this.dirty.clear()
    this.allDirty = false
    return this.buildMessages(perNeighbour)
  }

  private buildMessages(perNeighbour: Map<number, RouteEntry[]>): StepResult {
    const effects: Effect[] = []
    let entriesSent = 0
    const slotTable = this.mode === 'naive' ? [] : this.neighbours.slotTable()
    // On the wire a trans set names only our neighbours (by slot): the others are not ours to
    // vouch for. One wire form per distinct (shared) set per round.
    const wireForm = new Map<NodeSet, Uint8Array>()
    // With a shared index: the same set in that numbering, restricted to our neighbours like the wire form.
    const sharedForm = new Map<Uint8Array, NodeSet>()
    const wireFormOf = (trans: NodeSet): Uint8Array => {
      let bytes = wireForm.get(trans)
      if (bytes === undefined) {
        const slots = new NodeSet(slotTable.length)
        const shared = this.sharedIndex === undefined ? undefined : new NodeSet(this.nodeIndex.highWater)
        trans.forEach((index) => {
          const slot = index < this.slotOfIndex.length ? this.slotOfIndex[index]! : -1
          if (slot < 0) return
          slots.add(slot)
          shared?.add(index)
        })
        wireForm.set(trans, (bytes = slots.toBytes()))
        if (shared !== undefined) sharedForm.set(bytes, shared.freeze())
      }
      return bytes
    }
    // An entry goes to many neighbours in one round: one advert object per (entry, trans index).
    const advertCache = new Map<RouteEntry, RouteAdvert>()
    const advertFor = (entry: RouteEntry, transIndex: number): RouteAdvert => {
      const cached = advertCache.get(entry)
      if (cached !== undefined && cached.trans === transIndex) return cached
      const advert = this.advertOf(entry, transIndex)
      advertCache.set(entry, advert)
      return advert
    }
    // Messages go out in neighbour-slot order (connection order), whatever the node numbering.
    // A new neighbour gets our hello in our first update on the connection, even an empty one.
    for (const peer of this.helloDue) {
      const slot = this.neighbours.slot(peer)!
      if (!perNeighbour.has(slot)) perNeighbour.set(slot, [])
    }
    const bySlot = [...perNeighbour].sort((x, y) => x[0] - y[0])
    for (const [slot, entries] of bySlot) {
      const to = this.neighbours.id(slot)
      invariant(to !== undefined, 'send target slot is occupied')
      let hello: UpdateMessage['hello']
      if (this.helloDue.delete(to)) {
        const receiverSeq = this.table.get(to)?.seq
        hello = { receiverSeq }
        // It holds at least this number of its own record (it would have issued a newer one).
        if (receiverSeq !== undefined && !this.ownerSeqHeard.has(to)) this.ownerSeqHeard.set(to, receiverSeq)
      }
      for (let start = 0; start < entries.length || (start === 0 && hello !== undefined); start += this.limits.entriesPerMessageMax) {
        const chunk = entries.slice(start, start + this.limits.entriesPerMessageMax)
        const transSets: Uint8Array[] = []
        const indexOfSet = new Map<Uint8Array, number>()
        const adverts = chunk.map((entry) => {
          if (this.mode === 'naive') return advertFor(entry, -1)
          const bytes = wireFormOf(entry.trans)
          if (bytes.length === 0) return advertFor(entry, -1)
          let index = indexOfSet.get(bytes)
          if (index === undefined) {
            index = transSets.length
            transSets.push(bytes)
            indexOfSet.set(bytes, index)
          }
          return advertFor(entry, index)
        })
        const message: UpdateMessage = { neighbourSlots: transSets.length > 0 ? slotTable : [], transSets, entries: adverts, ...(start === 0 && hello !== undefined ? { hello } : {}) }
        if (this.sharedIndex !== undefined && transSets.length > 0) {
          Object.assign(message, { sharedIndexSets: { space: this.sharedIndex, sets: transSets.map((bytes) => sharedForm.get(bytes)!) } })
        }
        effects.push({ type: 'send', to, message })
        entriesSent += adverts.length
      }
    }
    this.counters.messagesSent += effects.length
    this.counters.entriesSent += entriesSent
    return { kind: 'send', effects, messagesApplied: 0, entriesApplied: 0, messagesSent: effects.length, entriesSent, wakeAtMs: undefined }
  }

  private advertOf(entry: RouteEntry, trans: number): RouteAdvert {
    return {
      destination: entry.destination,
      seq: entry.seq,
      nhops: entry.reachable ? entry.nhops : 0,
      names: entry.names,
      addresses: entry.addresses,
      trans,
      signature: entry.signature,
    }
  }

  // ---------------------------------------------------------------- names and forwarding

  /**
   * The node a message for `name` should go to next, or undefined if no owner is reachable.
   * When several nodes claim the name, the reachable claimant with the smallest id wins: the
   * same answer at every node that can reach it, so a name never means two nodes at once
   * (`nameConflicts` reports the claims).
   */
  resolve(name: string): { owner: NodeId; nextHop: NodeId; nhops: number } | undefined {
    const owners = this.nameOwners.get(name)
    if (owners === undefined) return undefined
    let best: RouteEntry | undefined
    for (const owner of owners) {
      const entry = this.table.get(owner)
      if (entry === undefined || !entry.reachable) continue
      if (best === undefined || owner < best.destination) best = entry
    }
    if (best === undefined) return undefined
    return { owner: best.destination, nextHop: best.fwd!, nhops: best.nhops }
  }

  /** Names claimed by more than one node, with the claimants (resolution picks the nearest). */
  nameConflicts(): { name: string; owners: NodeId[] }[] {
    const out: { name: string; owners: NodeId[] }[] = []
    for (const [name, owners] of this.nameOwners) if (owners.size > 1) out.push({ name, owners: [...owners].sort() })
    return out
  }

  /**
   * Where a message for node `destination` goes from here. `hopLimit` is what the message
   * arrived with; a forwarded copy carries one less, and a message that arrives with none left
   * is dropped, so a transient loop cannot keep a message circulating.
   */
  forward(destination: NodeId, hopLimit: number): ForwardDecision {
    if (destination === this.id) return { action: 'deliver' }
    if (!Number.isInteger(hopLimit) || hopLimit <= 0) return { action: 'drop', reason: 'hop-limit' }
    const entry = this.table.get(destination)
    if (entry === undefined || !entry.reachable || entry.fwd === undefined) return { action: 'drop', reason: 'no-route' }
    return { action: 'forward', nextHop: entry.fwd, hopLimit: hopLimit - 1 }
  }

  private indexNames(entry: RouteEntry, previous: readonly string[]): void {
    for (const name of previous) {
      if (entry.names.includes(name)) continue
      const owners = this.nameOwners.get(name)
      owners?.delete(entry.destination)
      if (owners?.size === 0) this.nameOwners.delete(name)
    }
    for (const name of entry.names) {
      let owners = this.nameOwners.get(name)
      if (owners === undefined) this.nameOwners.set(name, (owners = new Set()))
      owners.add(entry.destination)
    }
  }

  private setOwnRecord(names: readonly string[], addresses: readonly PhysicalAddress[]): void {
    const previous = this.own.names
    this.own.names = names
    this.own.addresses = addresses
    this.indexNames(this.own, previous)
    this.own.seq = nextOwnSeq(this.own.seq)
    this.signOwnRecord()
    this.own.trans = EMPTY_SET
    this.own.rcpt = EMPTY_SET
    this.dirty.add(this.own)
  }

  // ---------------------------------------------------------------- queries

  route(destination: NodeId): RouteView | undefined {
    const entry = this.table.get(destination)
    return entry === undefined ? undefined : this.view(entry)
  }

  /** Every entry but this node's own, reachable or not. */
  routes(): RouteView[] {
    const out: RouteView[] = []
    for (const entry of this.table.values()) if (entry !== this.own) out.push(this.view(entry))
    return out
  }

  neighbourIds(): NodeId[] {
    return this.neighbours.ids()
  }

  isNeighbour(peer: NodeId): boolean {
    return this.neighbours.has(peer)
  }

  get ownSeq(): number {
    return this.own.seq
  }

  get names(): readonly string[] {
    return this.own.names
  }

  get addresses(): readonly PhysicalAddress[] {
    return this.own.addresses
  }

  get hasLeft(): boolean {
    return this.left
  }

  get inboxLength(): number {
    return this.inbox.length - this.inboxHead
  }

  get destinationCount(): number {
    return this.table.size - 1
  }

  dialBackoff(address: PhysicalAddress): { consecutiveFailures: number; retryAtMs: number } | undefined {
    return this.book.backoffOf(address)
  }

  stats(): CoreStats {
    return {
      ...this.counters,
      dialsStarted: this.book.dialsStarted,
      dialsFailed: this.book.dialsFailed,
      addressesRefused: this.book.addressesRefused,
    }
  }

  private view(entry: RouteEntry): RouteView {
    return {
      destination: entry.destination,
      fwd: entry.reachable ? entry.fwd : undefined,
      nhops: entry.nhops,
      seq: entry.seq,
      reachable: entry.reachable,
      names: entry.names,
      addresses: entry.addresses,
    }
  }

  // ---------------------------------------------------------------- housekeeping and checks

  private enter(nowMs: number): void {
    if (!Number.isFinite(nowMs) || nowMs < this.nowMs) {
      throw new PhoenixError('INVALID_INPUT', `time must be finite and never go back (was ${this.nowMs} ms, got ${nowMs} ms)`)
    }
    this.nowMs = nowMs
  }

  private assertActive(): void {
    if (this.left) throw new PhoenixError('INVALID_STATE', `node ${this.id} has left; create a new core to rejoin`)
  }

  /** Forgets unreachable entries kept longer than unreachableRetentionMs (scan at most once a second). */
  private expireUnreachable(): void {
    if (this.nowMs < this.nextExpiryScanMs) return
    this.nextExpiryScanMs = this.nowMs + 1_000
    const cutoff = this.nowMs - this.timing.unreachableRetentionMs
    const forgotten: number[] = []
    for (const [destination, entry] of this.table) {
      if (entry === this.own || entry.reachable || entry.changedAtMs > cutoff || this.dirty.has(entry) || this.allDirty) continue
      this.table.delete(destination)
      if (entry.introducedBy !== undefined) {
        this.introducedBy.set(entry.introducedBy, (this.introducedBy.get(entry.introducedBy) ?? 1) - 1)
        this.countIntroducedNames(entry.introducedBy, -entry.names.length)
      }
      const previous = entry.names
      entry.names = []
      this.indexNames(entry, previous)
      this.counters.entriesExpired++
      const index = this.nodeIndex.get(destination)
      if (index !== undefined && !this.neighbours.has(destination)) forgotten.push(index)
    }
    if (forgotten.length === 0) return
    // Free their indices for reuse; first scrub them from every set so a new node with a reused
    // index is not taken to hold entries it never got.
    for (const entry of this.table.values()) {
      for (const index of forgotten) {
        entry.trans.forget(index)
        entry.rcpt.forget(index)
      }
    }
    // A shared index is never released: other cores may still use the number.
    if (this.sharedIndex === undefined) for (const index of forgotten) this.nodeIndex.release(this.nodeIndex.id(index)!)
    // A cached slot map could name a released index that is later reused for another node.
    this.senderSlots.clear()
  }

  private checkNodeId(id: unknown, what: string): void {
    if (typeof id !== 'string' || id.length === 0 || id.length > this.limits.nodeIdLengthMax) {
      throw new PhoenixError('INVALID_INPUT', `${what} must be a non-empty string of at most ${this.limits.nodeIdLengthMax} characters`)
    }
  }

  private checkNames(names: readonly unknown[], what: string): string[] {
    if (names.length > this.limits.namesPerNodeMax) {
      throw new PhoenixError('LIMIT_EXCEEDED', `${what}: ${names.length} names, at most ${this.limits.namesPerNodeMax} per node (namesPerNodeMax)`)
    }
    for (const name of names) {
      if (typeof name !== 'string' || name.length === 0 || name.length > this.limits.nameLengthMax) {
        throw new PhoenixError('INVALID_INPUT', `${what}: a name must be a non-empty string of at most ${this.limits.nameLengthMax} characters`)
      }
    }
    // Names per node are few: a quadratic scan beats allocating a Set for every entry received.
    for (let i = 1; i < names.length; i++) {
      for (let j = 0; j < i; j++) if (names[i] === names[j]) throw new PhoenixError('INVALID_INPUT', `${what}: duplicate name`)
    }
    return names as string[]
  }

  private checkAddresses(addresses: readonly unknown[], what: string, max = this.limits.addressesPerNodeMax): string[] {
    if (addresses.length > max) {
      throw new PhoenixError('LIMIT_EXCEEDED', `${what}: ${addresses.length} addresses, at most ${max} per node (addressesPerNodeMax)`)
    }
    for (const address of addresses) {
      if (typeof address !== 'string' || address.length === 0 || address.length > this.limits.addressLengthMax) {
        throw new PhoenixError('INVALID_INPUT', `${what}: an address must be a non-empty string of at most ${this.limits.addressLengthMax} characters`)
      }
    }
    return addresses as string[]
  }

  /** Our record's signature must follow every change of our seq, names or addresses. */
  private signOwnRecord(): void {
    if (this.records === undefined) return
    const evenSeq = this.own.seq - (this.own.seq % 2)
    this.own.signature = this.records.sign(recordPayload(this.id, evenSeq, this.own.names, this.own.addresses))
  }

  /**
   * Verifies the records in an update that we have not verified before (a record is checked once,
   * when it first arrives, not on every copy). A forged record drops the sender.
   */
  private verifyRecords(from: NodeId, message: UpdateMessage): void {
    const records = this.records
    if (records === undefined) return
    for (const advert of message.entries) {
      const signature = advert.signature ?? NO_SIGNATURE
      const evenSeq = advert.seq - (advert.seq % 2)
      const known = this.table.get(advert.destination)
      if (known !== undefined && known.seq - (known.seq % 2) === evenSeq && bytesEqual(known.signature, signature)) continue
      this.counters.recordsVerified++
      const payload = recordPayload(advert.destination, evenSeq, advert.names, advert.addresses)
      if (signature.length === 0 || !records.verify(advert.destination, payload, signature)) {
        this.counters.peersDropped++
        const why = `it sent a record for ${advert.destination} (seq ${advert.seq}) whose signature does not verify`
        this.pendingCloses.push({ type: 'close', peer: from, reason: why })
        throw new PhoenixError('INVALID_INPUT', `peer ${from} dropped: ${why}`)
      }
    }
  }

  private countIntroducedNames(peer: NodeId, delta: number): void {
    if (delta !== 0) this.introducedNamesBy.set(peer, (this.introducedNamesBy.get(peer) ?? 0) + delta)
  }

  /**
   * Disconnects a neighbour that introduces too many destinations or names, or sends too many
   * entries. `pendingDestinations` / `pendingNames`: what its queued updates and this one would
   * add, each new destination counted once.
   */
  private policePeer(from: NodeId, entries: number, pendingDestinations: number, pendingNames: number, nowMs: number): void {
    const drop = (why: string): never => {
      this.counters.peersDropped++
      this.pendingCloses.push({ type: 'close', peer: from, reason: why })
      throw new PhoenixError('LIMIT_EXCEEDED', `peer ${from} dropped: ${why}`)
    }
    const introduced = (this.introducedBy.get(from) ?? 0) + pendingDestinations
    if (introduced > this.limits.destinationsPerNeighbourMax) {
      drop(`it introduced ${introduced} destinations, more than destinationsPerNeighbourMax (${this.limits.destinationsPerNeighbourMax})`)
    }
    const names = (this.introducedNamesBy.get(from) ?? 0) + pendingNames
    if (names > this.limits.namesPerNeighbourMax) {
      drop(`it introduced destinations with ${names} names, more than namesPerNeighbourMax (${this.limits.namesPerNeighbourMax})`)
    }
    const budget = this.updateBudget.get(from) ?? { tokens: this.limits.updateEntriesBurstMax, atMs: nowMs }
    budget.tokens = Math.min(this.limits.updateEntriesBurstMax, budget.tokens + ((nowMs - budget.atMs) * this.limits.updateEntriesPerSecondMax) / 1000)
    budget.atMs = nowMs
    budget.tokens -= entries
    this.updateBudget.set(from, budget)
    if (budget.tokens < 0) {
      drop(`it sent more than updateEntriesPerSecondMax (${this.limits.updateEntriesPerSecondMax}) entries per second (burst ${this.limits.updateEntriesBurstMax})`)
    }
  }

  /** Checks a whole update; returns its distinct destinations that we do not know yet, with the most names each is given. */
  private checkMessage(message: UpdateMessage): Map<NodeId, number> {
    const bad = (why: string): never => {
      throw new PhoenixError('INVALID_INPUT', `malformed update: ${why}`)
    }
    if (typeof message !== 'object' || message === null) bad('not an object')
    if (!Array.isArray(message.entries) || !Array.isArray(message.transSets) || !Array.isArray(message.neighbourSlots)) bad('missing entries, transSets or neighbourSlots')
    if (message.entries.length > this.limits.entriesPerMessageMax) bad(`${message.entries.length} entries, at most ${this.limits.entriesPerMessageMax} (entriesPerMessageMax)`)
    if (message.neighbourSlots.length > this.limits.neighboursMax) bad(`${message.neighbourSlots.length} neighbour slots, at most ${this.limits.neighboursMax}`)
    for (const id of message.neighbourSlots) if (typeof id !== 'string' || id.length > this.limits.nodeIdLengthMax) bad('neighbour slot is not a node id')
    const maxTransBytes = Math.ceil(message.neighbourSlots.length / 8)
    for (const set of message.transSets) if (!(set instanceof Uint8Array) || set.length > maxTransBytes) bad('trans set wider than the neighbour slots')
    let unknown: Map<NodeId, number> | undefined
    for (const entry of message.entries) {
      if (typeof entry !== 'object' || entry === null) bad('entry is not an object')
      this.checkNodeId(entry.destination, 'entry destination')
      if (!isValidSeq(entry.seq)) bad(`seq ${String(entry.seq)} is not an integer in [0, 2^32)`)
      if (!Number.isInteger(entry.nhops) || entry.nhops < 0 || entry.nhops > 255) bad(`nhops ${String(entry.nhops)} is not an integer in [0, 255]`)
      if (!Number.isInteger(entry.trans) || entry.trans < -1 || entry.trans >= message.transSets.length) bad(`trans index ${String(entry.trans)} out of range`)
      if (!Array.isArray(entry.names) || !Array.isArray(entry.addresses)) bad('names or addresses missing')
      this.checkNames(entry.names, `entry for ${entry.destination}`)
      this.checkAddresses(entry.addresses, `entry for ${entry.destination}`)
      if (entry.signature !== undefined && (!(entry.signature instanceof Uint8Array) || entry.signature.length > this.limits.signatureBytesMax)) {
        bad(`signature for ${entry.destination} is not bytes or longer than signatureBytesMax (${this.limits.signatureBytesMax})`)
      }
      if (!this.table.has(entry.destination)) {
        unknown ??= new Map()
        unknown.set(entry.destination, Math.max(unknown.get(entry.destination) ?? 0, entry.names.length))
      }
    }
    if (unknown === undefined) return NOTHING_UNKNOWN
    if (this.table.size + unknown.size > this.limits.destinationsMax) {
      throw new PhoenixError('LIMIT_EXCEEDED', `update would grow the table past destinationsMax (${this.limits.destinationsMax})`)
    }
    return unknown
  }
}

const NOTHING_UNKNOWN: Map<NodeId, number> = new Map()
