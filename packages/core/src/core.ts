import { applyInbox, numberNeighbour } from './apply.ts'
import { neighbourClosed, neighbourOpened } from './connections.ts'
import { DEFAULT_LIMITS, DEFAULT_TIMING, type CoreLimits, type CoreTiming } from './constants.ts'
import { AddressBook } from './discovery.ts'
import { Expiry } from './expiry.ts'
import { Inbox } from './inbox.ts'
import { Fanout, coHubsOf, isOurHub, mayHaveCoHubs } from './fanout.ts'
import { checkCoreInvariants } from './invariants.ts'
import { PhoenixError } from './errors.ts'
import { NameHolders, reclaimNames, type NameConflict } from './names.ts'
import { unknownKeyProblem } from './option-keys.ts'
import { NeighbourTable } from './neighbours.ts'
import { NodeIndex } from './nodeindex.ts'
import type { CoreParts, TrafficCounters } from './parts.ts'
import { Police } from './police.ts'
import type { RecordAuthority } from './records.ts'
import type { RouteEntry } from './route.ts'
import { hasPendingSends, leaveMessages, sendHoldUntil, sendRound } from './send.ts'
import { isUnreachableSeq, isValidSeq } from './seq.ts'
import type { SharedNumbering } from './shared-numbering.ts'
import { RouteTable, forwardDecision } from './table.ts'
import type { Effect, ForwardDecision, NodeId, PhysicalAddress, RouteView, RoutingMode, StepResult, UpdateMessage } from './types.ts'

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
   * With several next hops (`ecmpNextHopsMax` > 1): whether neighbour `holder` will connect to
   * `destination` directly (the driver knows: the two share a site and discovery is on). When we
   * connect to `destination`, such a holder of our 2-hop route is not sent our equal 2-hop offer:
   * it would be its alternate only until its own connection comes (packages/core/README.md,
   * "Cost"). Without it, every such offer goes out.
   */
  readonly willConnect?: (holder: NodeId, destination: NodeId) => boolean
}

/** Every key of `CoreConfig` (the type checks the list is whole): anything else is refused, naming it. */
const CORE_CONFIG_KEYS = Object.keys({ id: 1, addresses: 1, hubs: 1, names: 1, mode: 1, discovery: 1, initialSeq: 1, limits: 1, timing: 1, records: 1, willConnect: 1 } satisfies Record<keyof CoreConfig, 1>)

export interface CoreStats {
  /** Record signatures checked (each new record once; the simulator charges a measured cost per check). */
  recordsVerified: number
  /** Neighbours disconnected for breaking the protocol (a forged record, more entries than their token bucket). */
  peersDropped: number
  /** New destinations refused because the neighbour that relayed them was over its share (destinationsPerNeighbourMax, namesPerNeighbourMax); the neighbour keeps its link. */
  introductionsRefused: number
  messagesReceived: number
  entriesReceived: number
  messagesSent: number
  entriesSent: number
  dialsStarted: number
  dialsFailed: number
  /** Addresses whose first dial was held back dialDeferMs (the peer has the smaller id; it may dial us first). */
  dialsDeferred: number
  /** Entries not stored because the destination table was full. */
  destinationsRefused: number
  /** Addresses not remembered because the address book was full. */
  addressesRefused: number
  /** Unreachable entries forgotten after their retention time. */
  entriesExpired: number
  /** Records refused because they claimed a name another node holds here, and our own claims refused (names.ts). */
  claimsRefused: number
  /** Send rounds that waited for a co-hub's plan (fanout.ts), and those whose wait `coHubWaitMs` ended with a plan still missing. */
  coHubWaits: number
  coHubWaitsExpired: number
}

/**
 * Limits that may be 0: no names of its own, no name refusals remembered, no signature taken
 * (unsigned records only), no redials of lost neighbours. Any other limit at 0 leaves a node that
 * cannot route (no destination, no neighbour, no dial, no update that fits, every neighbour
 * policed away), so it is refused.
 */
const LIMITS_ZERO_ALLOWED: ReadonlySet<string> = new Set(['namesPerNodeMax', 'nameRefusalsMax', 'signatureBytesMax', 'lostRedialsPerSecondMax', 'tombstonesMax', 'tombstoneRecordBytesMax'])

/**
 * Limits and timing with defaults filled in, each checked (an integer, at least 1 where 0 makes
 * no node; `limits.X` named): what the constructor does first, for a driver that checks its
 * user's settings before it makes a core (INVALID_CONFIG).
 */
export function resolveSettings(config: CoreConfig): { limits: Readonly<CoreLimits>; timing: Readonly<CoreTiming>; mode: RoutingMode } {
  const unknown = unknownKeyProblem(config, CORE_CONFIG_KEYS, 'config') ?? unknownKeyProblem(config.limits, Object.keys(DEFAULT_LIMITS), 'limits') ?? unknownKeyProblem(config.timing, Object.keys(DEFAULT_TIMING), 'timing')
  if (unknown !== undefined) throw new PhoenixError('INVALID_CONFIG', unknown)
  const limits = { ...DEFAULT_LIMITS, ...config.limits }
  const timing = { ...DEFAULT_TIMING, ...config.timing }
  const min = (group: string, key: string): number => (group === 'limits' ? (LIMITS_ZERO_ALLOWED.has(key) ? 0 : 1) : key === 'dialBackoffInitialMs' ? 1 : 0)
  for (const [group, values] of [['limits', limits], ['timing', timing]] as const) {
    for (const [key, value] of Object.entries(values)) {
      if (typeof value === 'number' && Number.isSafeInteger(value) && value >= min(group, key)) continue
      throw new PhoenixError('INVALID_CONFIG', `${group}.${key} must be ${min(group, key) === 0 ? 'a non-negative' : 'a positive'} integer, got ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`)
    }
  }
  return { limits, timing, mode: config.mode ?? 'optimized' }
}

/**
 * One Phoenix node's routing and discovery state, as a pure state machine: this class is the
 * façade (configuration, inputs, `step`, queries); the protocol's nouns live in their own modules
 * (the layout table in packages/core/README.md).
 *
 * Inputs: `connectionUp`, `connectionDown`, `connectionReplaced`, `dialFailed`, `receive`, name and
 * address changes. The driver then calls `step(nowMs)` whenever the node is free; each step serves the highest of
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
  private readonly parts: CoreParts
  private readonly table: RouteTable
  private readonly neighbours: NeighbourTable
  private readonly book: AddressBook
  private readonly police: Police
  private readonly holders: NameHolders
  private readonly inbox = new Inbox()
  private readonly hubs: PhysicalAddress[] = []
  private readonly hubsGiven: PhysicalAddress[] = [] // our own included: we are then a hub (fanout.ts)
  private readonly fanout = new Fanout() // the send round in progress
  /** Closes waiting for the next step (priority 1 with the dials): refused or dropped connections. */
  private readonly pendingCloses: Effect[] = []
  private readonly traffic: TrafficCounters = { messagesReceived: 0, entriesReceived: 0, messagesSent: 0, entriesSent: 0, destinationsRefused: 0, entriesExpired: 0 }
  private nowMs = 0
  private left = false
  /** Forgets unreachable entries, and says when the next one is due (expiry.ts). */
  private readonly expiry = new Expiry()

  /** `numbering`: only for a simulator running many cores in one process (`SharedNumbering`), a speed-up that changes no routing decision. */
  constructor(config: CoreConfig, numbering?: SharedNumbering) {
    const { limits, timing, mode } = resolveSettings(config)
    this.limits = limits
    this.timing = timing
    this.police = new Police(limits, config.records, this.pendingCloses)
    this.police.checkNodeId(config.id, 'config.id')
    this.id = config.id
    this.mode = mode
    if (mode !== 'optimized' && mode !== 'naive') throw new PhoenixError('INVALID_CONFIG', `mode must be 'optimized' or 'naive', got ${JSON.stringify(mode)}`)
    this.discovery = config.discovery ?? true
    const initialSeq = config.initialSeq ?? 0
    if (!isValidSeq(initialSeq) || isUnreachableSeq(initialSeq)) {
      throw new PhoenixError('INVALID_CONFIG', `initialSeq must be an even integer in [0, 2^32), got ${initialSeq}`)
    }
    // Destinations plus neighbours plus room for nodes that are only named in trans sets so far.
    const nodeIndex = numbering?.index ?? new NodeIndex(limits.destinationsMax + 2 * limits.neighboursMax)
    nodeIndex.intern(config.id)
    this.neighbours = new NeighbourTable(nodeIndex)
    this.book = new AddressBook(limits.knownAddressesMax, limits.dialsInFlightMax, { ...timing, lostRedialsPerSecondMax: limits.lostRedialsPerSecondMax }, numbering?.addresses, numbering?.index)
    const addresses = this.police.checkAddresses(config.addresses ?? [], 'config.addresses')
    this.book.setOwnAddresses(addresses) // dial order (discovery.ts)
    const names = this.police.checkNames(config.names ?? [], 'config.names')
    this.holders = new NameHolders(this.id, limits.nameRefusalsMax, timing.nameContentionMs, timing.nameReclaimDelayMs)
    this.table = new RouteTable(this.id, nodeIndex, initialSeq, names, addresses, config.records, this.holders, numbering?.holders, limits.ecmpNextHopsMax)
    for (const hub of this.police.checkAddresses(config.hubs ?? [], 'config.hubs', Number.POSITIVE_INFINITY)) this.learnHub(hub)
    const { book, table, neighbours, police, traffic, discovery, holders, fanout } = this
    this.parts = { id: this.id, willConnect: config.willConnect, mode, discovery, limits, timing, table, neighbours, nodeIndex, book, police, names: holders, traffic, numbering, fanout, coHubs: () => coHubsOf(table.own.addresses, this.hubsGiven, book, neighbours, timing.coHubWaitMs), mayHaveCoHubs: () => mayHaveCoHubs(table.own.addresses, this.hubsGiven, timing.coHubWaitMs), isOurHub: (peer) => isOurHub(this.hubs, book, peer), hasHubs: () => this.hubs.length > 0, expiry: this.expiry }
  }

  // ---------------------------------------------------------------- inputs

  /** A connection to `peer` is open (we dialled `dialledAddress`, or it dialled us). */
  connectionUp(peer: NodeId, nowMs: number, dialledAddress?: PhysicalAddress): void {
    this.enter(nowMs)
    this.police.checkNodeId(peer, 'peer')
    if (dialledAddress !== undefined) this.book.dialSucceeded(dialledAddress, peer)
    if (peer === this.id) {
      this.pendingCloses.push({ type: 'close', peer, reason: 'connected to itself' })
      return
    }
    if (this.neighbours.has(peer)) return
    const index = this.acceptsConnection(peer) ? numberNeighbour(this.parts, peer) : undefined
    if (index === undefined) {
      this.pendingCloses.push({ type: 'close', peer, reason: `neighbour limit ${this.limits.neighboursMax} reached` })
      return
    }
    neighbourOpened(this.parts, this.neighbours.add(peer, index, this.mode, nowMs), nowMs)
  }

  /** The connection to `peer` closed (crash, leave, network). Routes through it become unreachable. */
  connectionDown(peer: NodeId, nowMs: number): void {
    this.enter(nowMs)
    if (neighbourClosed(this.parts, peer, nowMs, false) === undefined) return
    if (this.neighbours.size === 0) for (const hub of this.hubs) this.book.want(hub) // cut off from everyone: start again from the hubs
  }

  /**
   * The connection to `peer` was replaced by a new one (both ends opened one at once, and the
   * driver keeps one): as `connectionDown` then `connectionUp`, what went over the old connection
   * may be lost, but the peer stays one hop away, so no route through it is withdrawn
   * (connections.ts). Not a neighbour: as `connectionUp`.
   */
  connectionReplaced(peer: NodeId, nowMs: number, dialledAddress?: PhysicalAddress): void {
    this.enter(nowMs)
    neighbourClosed(this.parts, peer, nowMs, true)
    this.connectionUp(peer, nowMs, dialledAddress)
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
   * `fromIndex`: `from`'s number, from a simulator whose cores share one (`SharedNumbering`): no lookup of the id.
   */
  receive(from: NodeId, message: UpdateMessage, nowMs: number, fromIndex?: number): boolean {
    this.enter(nowMs)
    const neighbour = fromIndex === undefined ? this.neighbours.get(from) : this.neighbours.getByIndex(fromIndex)
    if (neighbour === undefined || neighbour.id !== from) throw new PhoenixError('INVALID_INPUT', `update from ${JSON.stringify(from)}, which is not a neighbour`)
    this.police.checkMessage(message)
    if (this.inbox.length >= this.limits.inboxMessagesMax) return false
    this.police.admit(neighbour, this.neighbours, message, nowMs, (d) => this.table.get(d))
    this.inbox.push(from, neighbour.index, neighbour.connection, message)
    this.traffic.messagesReceived++
    this.traffic.entriesReceived += message.entries.length
    return true
  }

  /**
   * Claims `name`. If another node holds it here (its record is stored with the name), the claim
   * is refused: the name stays out of our record, `nameConflicts()` reports it (holder, and us
   * among the refused), and we claim it again `nameReclaimDelayMs` after the holder's entry is
   * forgotten. Returns false when refused.
   */
  addName(name: string): boolean {
    this.assertActive()
    const own = this.table.own
    if (own.names.includes(name)) return true
    const names = this.police.checkNames([...own.names, name], 'name')
    if (this.holders.ownClaimHeldBy(name) !== undefined) return false
    this.table.setOwnRecord(names, own.addresses)
    return true
  }

  removeName(name: string): void {
    this.assertActive()
    this.holders.forgetOwn(name)
    const own = this.table.own
    if (!own.names.includes(name)) return
    this.table.setOwnRecord(own.names.filter((n) => n !== name), own.addresses)
  }

  /** Replaces this node's advertised physical addresses (e.g. once the transport listens). */
  setAddresses(addresses: readonly PhysicalAddress[]): void {
    this.assertActive()
    this.table.setOwnRecord(this.table.own.names, this.police.checkAddresses(addresses, 'addresses'))
    this.book.setOwnAddresses(this.table.own.addresses)
  }

  /**
   * Adds a hub at run time (it is dialled like the ones given at start, and kept dialled until it
   * answers). It is dialled now, any back-off cleared (also of an address learned from an update
   * before it was made a hub), unless it is connected or a dial to it is in flight.
   */
  addHub(address: PhysicalAddress): void {
    this.assertActive()
    this.police.checkAddresses([address], 'hub', Number.POSITIVE_INFINITY)
    if (this.hubs.includes(address)) this.book.redialNow(address)
    else this.learnHub(address)
  }

  /** Whether `address` is one of this node's hubs (given at start or added): the transport dials those at once. */
  isHub(address: PhysicalAddress): boolean {
    return this.hubs.includes(address)
  }

  /**
   * Graceful leave: tells every neighbour at once that this node is gone (its own entry with the
   * next odd sequence number), so routes are repaired without waiting for connections to time
   * out. The driver sends the returned effects, then closes the connections.
   */
  leave(nowMs: number): Effect[] {
    this.enter(nowMs)
    // A graceful leave gives our names up: the withdrawal carries a record with none, signed at
    // the next even number, so every node frees them as it hears we left. A crashed node's names
    // stay with it until its entry expires (it may come back with its key); a node that said
    // goodbye will not, and kept, its names blocked a replacement started without its key (a job
    // manager restarting a worker) for unreachableRetentionMs + nameReclaimDelayMs (130 s).
    if (this.table.own.names.length > 0) this.table.setOwnRecord([], this.table.own.addresses)
    this.table.withdrawOwn()
    this.left = true
    return leaveMessages(this.parts)
  }

  // ---------------------------------------------------------------- scheduler

  /** True if `step(nowMs)` would do something now. Changes nothing. */
  hasWork(nowMs: number): boolean {
    if (this.left) return false
    if (this.pendingCloses.length > 0 || (this.dialRoom() > 0 && this.book.hasDialReady(nowMs)) || this.inbox.length > 0) return true
    if ((this.housekeepingDueMs() ?? Number.POSITIVE_INFINITY) <= nowMs) return true
    return hasPendingSends(this.parts) && sendHoldUntil(this.parts, nowMs) === undefined
  }

  /**
   * When to call `step` next if no input arrives: `nowMs` if there is work now, the end of a send
   * hold or of a dial back-off, or undefined if only an input (a message, a connection, a dial
   * outcome) can give this node work. Changes nothing: a driver asks this instead of making an
   * idle `step` to read its `wakeAtMs`.
   */
  nextWakeMs(nowMs: number): number | undefined {
    if (this.left) return undefined
    if (this.hasWork(nowMs)) return nowMs
    const hold = hasPendingSends(this.parts) ? sendHoldUntil(this.parts, nowMs) : undefined
    const retry = this.dialRoom() > 0 ? this.book.nextRetryAfter(nowMs) : undefined
    return earliest(earliest(hold, retry), this.housekeepingDueMs())
  }

  /** The next expiry or name reclaim: an idle node wakes for them. */
  private housekeepingDueMs(): number | undefined {
    return earliest(this.expiry.dueMs(this.parts), this.holders.nextReclaimMs())
  }

  step(nowMs: number): StepResult {
    this.enter(nowMs)
    if (this.left) return idle(undefined)
    this.expiry.expire(this.parts, nowMs)
    reclaimNames(this.holders, this.table, nowMs)
    const nextRetry = this.book.releaseBackoffs(nowMs)

    // Priority 1: connect to every known node we are not connected to.
    const closes = this.pendingCloses.splice(0)
    const dials = this.discoveryDials()
    if (dials.length > 0 || closes.length > 0) return { ...idle(undefined), kind: 'dial', effects: [...closes, ...dials] }

    // Priority 2: apply received updates (all of them; naive DSDV reacts to each one at once).
    if (this.inbox.length > 0) {
      if (this.mode === 'naive') {
        const applied = applyInbox(this.parts, this.inbox, 1, nowMs)
        this.expiry.noteUnreachable(this.table)
        return { ...sendRound(this.parts, nowMs), kind: 'apply', messagesApplied: applied.messages, entriesApplied: applied.entries }
      }
      const applied = applyInbox(this.parts, this.inbox, Number.POSITIVE_INFINITY, nowMs)
      this.police.inboxApplied()
      return { ...idle(undefined), kind: 'apply', messagesApplied: applied.messages, entriesApplied: applied.entries }
    }

    // Priority 3: send, one merged message per neighbour.
    if (hasPendingSends(this.parts)) {
      const holdUntil = sendHoldUntil(this.parts, nowMs)
      this.expiry.noteUnreachable(this.table)
      if (holdUntil !== undefined) return idle(earliest(holdUntil, this.housekeepingDueMs()))
      return sendRound(this.parts, nowMs)
    }
    return idle(earliest(nextRetry, this.housekeepingDueMs()))
  }

  private discoveryDials(): Effect[] {
    const picked = this.book.takeDials(this.nowMs, (owner) => owner === this.id || this.neighbours.has(owner), this.dialRoom())
    return picked.map(({ address, owner }) => ({ type: 'dial', address, expectedPeer: owner }))
  }

  /**
   * Dials we may start: room under neighboursMax for their connections, less the dials in flight.
   * A full node takes none (and sleeps on its queue): the connection would be refused by its own
   * core, the peer seeing a neighbour that comes and goes (packages/sim/README.md, "A node at its
   * neighbour limit"). The queue is kept, and dialled once a neighbour leaves.
   */
  private dialRoom(): number {
    return Math.max(0, this.limits.neighboursMax - this.neighbours.size - this.book.inFlightCount)
  }

  // ---------------------------------------------------------------- names and forwarding

  /**
   * The node a message for `name` should go to next: the name's holder, if reachable. The first
   * claim stored keeps the name while its record lives; later claims are refused everywhere they
   * arrive (packages/core/README.md, "Names have holders"), so every node gives the same answer.
   */
  resolve(name: string): { owner: NodeId; nextHop: NodeId; nhops: number } | undefined {
    return this.table.resolve(name)
  }

  /**
   * Names whose claims were refused here, each with its holder and the refused claimants: on the
   * holder's side (a later claim of a name it or we hold arrived) and on the claimant's (our own
   * claim lost: we are among the refused).
   */
  nameConflicts(): NameConflict[] {
    return this.table.nameConflicts()
  }

  /**
   * The one forwarding decision: what to do here with a message for node `destination`.
   * `hopLimit` is what the message arrived with; a forwarded copy carries one less, and a message
   * that arrives with none left is dropped, so a transient loop cannot keep a message
   * circulating. A neighbour is one hop away as soon as its connection is up, even before its
   * record arrives. `name` (optional; '' = none): the logical name the message is addressed to;
   * at the destination it must be one of ours, or the message is dropped as `no-such-name`.
   * `flowKey` (optional): which flow the message belongs to; where several neighbours offer the
   * destination at the same (seq, nhops), each flow keeps to one of them (alternates.ts), so its
   * messages stay in order; without one, `fwd`. More than our `limits.hopLimit` left counts as
   * our limit: a frame claiming 255 cannot outlive in a loop the limit every node was told.
   */
  forward(destination: NodeId, hopLimit: number, name?: string, flowKey?: string): ForwardDecision {
    return forwardDecision(this.table, destination, Math.min(hopLimit, this.limits.hopLimit), this.neighbours.has(destination), name, flowKey)
  }

  // ---------------------------------------------------------------- queries

  route(destination: NodeId): RouteView | undefined {
    const entry = this.table.get(destination)
    return entry === undefined ? undefined : view(entry, this.table.alternates.of(entry))
  }

  /** `route(d)?.fwd` and `route(d)?.nhops` by number, for a simulator whose cores share one numbering (`SharedNumbering`): the next hop's index and the hops, -1 if unreachable; no id lookup, no view. */
  nextHopIndex(index: number): number { return this.table.nextHopIndex(index) }
  hopsIndex(index: number): number { return this.table.hopsIndex(index) }

  /** Every entry but this node's own, reachable or not. */
  routes(): RouteView[] {
    const out: RouteView[] = []
    for (const entry of this.table.values()) if (!this.table.isOwn(entry)) out.push(view(entry, this.table.alternates.of(entry)))
    return out
  }

  neighbourIds(): NodeId[] {
    return this.neighbours.ids()
  }

  isNeighbour(peer: NodeId): boolean {
    return this.neighbours.has(peer)
  }

  /** `isNeighbour` by number, for a simulator whose cores share one numbering (`SharedNumbering`): an array read, no id lookup. */
  isNeighbourIndex(index: number): boolean { return this.neighbours.slotOfIndex(index) >= 0 }

  /**
   * Whether a connection from `peer` would be kept (it is one already, or there is room under
   * neighboursMax). For the driver's connection gate: a full node refuses the handshake, so the
   * dialler sees a failed dial (and backs off) instead of a neighbour that comes and goes, each
   * going retracting its routes through us (packages/sim/README.md, "A node at its neighbour limit").
   */
  acceptsConnection(peer: NodeId): boolean {
    return peer !== this.id && (this.neighbours.has(peer) || this.neighbours.size < this.limits.neighboursMax)
  }

  get ownSeq(): number { return this.table.own.seq }
  get names(): readonly string[] { return this.table.own.names }
  get addresses(): readonly PhysicalAddress[] { return this.table.own.addresses }

  get hasLeft(): boolean { return this.left }
  get inboxLength(): number { return this.inbox.length }
  get destinationCount(): number { return this.table.size - 1 }

  dialBackoff(address: PhysicalAddress): { consecutiveFailures: number; retryAtMs: number } | undefined {
    return this.book.backoffOf(address)
  }

  stats(): CoreStats {
    return {
      ...this.police.counters,
      ...this.traffic,
      claimsRefused: this.holders.claimsRefused,
      dialsStarted: this.book.dialsStarted,
      dialsFailed: this.book.dialsFailed,
      dialsDeferred: this.book.dialsDeferred,
      addressesRefused: this.book.addressesRefused,
      coHubWaits: this.fanout.waitsBegun,
      coHubWaitsExpired: this.fanout.waitsExpired,
    }
  }

  /** Asserts everything that must hold between events (invariants.ts); the property tests call it after every event. */
  checkInvariants(): void {
    checkCoreInvariants(this.parts, this.inbox.length, this.left)
  }

  // ---------------------------------------------------------------- housekeeping

  private learnHub(address: PhysicalAddress): void {
    if (!this.hubsGiven.includes(address)) this.hubsGiven.push(address)
    if (this.table.own.addresses.includes(address)) return
    this.hubs.push(address)
    this.book.learn(address, undefined)
    this.book.keep(address, 'hub')
    // Dialled now even if known and backed off as a discovered address (a restarted node hears of
    // its hub from a neighbour first): a hub is the user's choice, redialled within 4 s, not 60.
    this.book.redialNow(address)
  }

  private enter(nowMs: number): void {
    if (!Number.isFinite(nowMs) || nowMs < this.nowMs) {
      throw new PhoenixError('INVALID_INPUT', `time must be finite and never go back (was ${this.nowMs} ms, got ${nowMs} ms)`)
    }
    this.nowMs = nowMs
    this.holders.nowMs = nowMs
  }

  private assertActive(): void {
    if (this.left) throw new PhoenixError('INVALID_STATE', `node ${this.id} has left; create a new core to rejoin`)
  }
}

function earliest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b
  return b === undefined ? a : Math.min(a, b)
}

function idle(wakeAtMs: number | undefined): StepResult {
  return { kind: 'idle', effects: [], messagesApplied: 0, entriesApplied: 0, messagesSent: 0, entriesSent: 0, wakeAtMs }
}

function view(entry: RouteEntry, alternates: readonly NodeId[]): RouteView {
  return {
    destination: entry.destination,
    fwd: entry.reachable ? entry.fwd : undefined,
    alternates,
    nhops: entry.nhops,
    seq: entry.seq,
    reachable: entry.reachable,
    names: entry.names,
    addresses: entry.addresses,
  }
}
