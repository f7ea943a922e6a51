import { NodeIndex, PhoenixCore, bytesEqual, checkRoutesAgainstBfs, type CoreConfig, type RecordAuthority, type Effect, type RouteCheckFailure, type StepResult, type UpdateMessage } from '@phoenix-overlay/core'
import {
  CHECK_FAILURES_MAX,
  EVENTS_PER_RUN_MAX,
  HELD_MESSAGES_PER_LINK_MAX,
  MASTER_DIALS_IN_FLIGHT_MAX,
  QUIET_CHECK_EVERY_MS,
  QUIET_COMPLETE_MS,
  REFERENCE_CHECK_NODES_MAX,
  SAMPLES_MAX,
  SAMPLE_HOPS_MAX,
} from './constants.ts'
import { SimulationError } from './errors.ts'
import { Graph, checkRoutesFast } from './graph.ts'
import { EventQueue } from './heap.ts'
import { Prng } from './prng.ts'
import type { NodeSelection, Scenario, ScenarioEvent } from './scenario.ts'
import { encodedUpdateSize } from '@phoenix-overlay/wire'
import { estimateListBytes } from './size.ts'

/** Sizes an update on the wire; the default is the wire codec's exact `encodedUpdateSize`. */
export type UpdateSizer = (update: UpdateMessage) => number

type Payload =
  | { readonly t: 'update'; readonly message: UpdateMessage }
  | { readonly t: 'report'; readonly neighbours: readonly number[] }
  | { readonly t: 'table'; readonly fwd: Int32Array; readonly nhops: Int32Array }

interface Connection {
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
  readonly latencyMs: number
  readonly msPerByte: number
}

interface MasterProcess {
  targets: number[]
  nextTarget: number
  dialsInFlight: number
  reported: boolean
  fwd: Int32Array | undefined
  nhops: Int32Array | undefined
}

export interface SimNode {
  readonly index: number
  readonly id: string
  readonly subnet: number
  readonly gateway: boolean
  readonly address: string
  alive: boolean
  everStarted: boolean
  /** Bumped on every (re)start: events addressed to an earlier incarnation are void. */
  incarnation: number
  core: PhoenixCore | undefined
  master: MasterProcess | undefined
  busyUntilMs: number
  stepAtMs: number
  stepToken: number
  readonly links: Map<number, Connection>
  /** Peers whose crash this node has not noticed yet: peer index -> connection id. */
  readonly pendingDown: Map<number, number>
  /** Connections on which messages to this node are held (its inbox was full). */
  readonly heldOn: Set<Connection>
  /** Record signatures made and checked since the node's CPU was last charged for them. */
  readonly recordOps: { signs: number; verifies: number }
}

type SimEvent =
  | { readonly k: 'step'; readonly node: SimNode; readonly token: number }
  | { readonly k: 'dial'; readonly node: SimNode; readonly incarnation: number; readonly address: string; readonly target: SimNode | undefined; readonly ok: boolean; readonly first: boolean }
  | { readonly k: 'deliver'; readonly conn: Connection; readonly toB: boolean; readonly payload: Payload }
  | { readonly k: 'down'; readonly node: SimNode; readonly incarnation: number; readonly peer: SimNode; readonly connId: number }
  | { readonly k: 'scenario'; readonly index: number }
  | { readonly k: 'start'; readonly node: SimNode }
  | { readonly k: 'close'; readonly conn: Connection }
  | { readonly k: 'sample' }
  | { readonly k: 'quiet' }

export interface Sample {
  readonly tMs: number
  /** Of the sampled ordered pairs of live nodes, the share whose route leads hop by hop to the destination. */
  readonly reachableFraction: number
  /** Mean hops over those reachable pairs (0 if none). */
  readonly meanHops: number
  readonly pairs: number
}

export interface SimResult {
  readonly scenario: string
  readonly strategy: string
  readonly discovery: string
  readonly seed: number
  readonly nodes: number
  readonly subnets: readonly { name: string; nodes: number; gateways: number }[]
  readonly converged: boolean
  /** Virtual time of the last routing activity (an update applied, a connection change, a master table applied). */
  readonly convergenceMs: number
  readonly lastScenarioEventMs: number
  readonly endedAtMs: number
  /** First sample after the last scenario event at which >= 90% of sampled pairs were reachable. */
  readonly reach90Ms: number | undefined
  readonly messages: number
  readonly entries: number
  readonly bytes: number
  readonly bytesModel: string
  /** entries / (N·(N−1)): the paper's lower bound on entries for a full table at every node. */
  readonly entriesOverLowerBound: number
  readonly messagesLost: number
  /** Origin records signed and verified (0 unless processing.perRecordSignUs/VerifyUs are set). */
  readonly recordSigns: number
  readonly recordVerifications: number
  readonly dialsStarted: number
  readonly dialsFailed: number
  readonly connections: number
  /** Pairs of live nodes the firewall allows to connect that are not connected at the end. */
  readonly connectionsMissing: number
  readonly eventsSkipped: readonly string[]
  readonly eventsProcessed: number
  readonly samplingStopped: boolean
  readonly check: { readonly ok: boolean; readonly method: 'reference' | 'twin-classes'; readonly failures: readonly RouteCheckFailure[] }
  readonly samples: readonly Sample[]
}

export interface RunOptions {
  /**
   * Called every `progressEvery` events and once at the end, for progress bars: the virtual time,
   * the events processed, and the latest sample's reachable fraction (0 before the first sample),
   * which tracks convergence where the virtual time (bounded only by endMs) does not.
   */
  readonly onProgress?: (virtualMs: number, events: number, reachableFraction: number) => void
  readonly sizeOfUpdate?: UpdateSizer
  readonly bytesModel?: string
  /** Called for connection events (dial outcomes, ups, downs) with the virtual time; for tests and debugging. */
  readonly trace?: (timeMs: number, line: string) => void
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000

/** The held-message queue of a connection that never held anything; never written to. */
const NO_HELD: Payload[] = Object.freeze([]) as unknown as Payload[]

/**
 * The discrete-event simulator: many nodes in one process, in virtual time, over a network of
 * subnets, a firewall and per-link latency and bandwidth, each node charged a processing cost for
 * what its core does. Deterministic: the only randomness is a PRNG seeded from the scenario.
 */
export class Simulation {
  readonly nodes: SimNode[] = []
  private readonly byAddress = new Map<string, SimNode>()
  private readonly byId = new Map<string, SimNode>()
  private readonly queue = new EventQueue<SimEvent>()
  private readonly rng: Prng
  /** One fixed order of non-gateway nodes per subnet (and overall) for fraction/count selections. */
  private readonly selectionOrder = new Map<string, SimNode[]>()
  private readonly blockedPairs = new Set<string>()
  private readonly heldBeforeStart = new Set<SimNode>()
  private readonly sizeOfUpdate: UpdateSizer
  /**
   * One node numbering for every core of this run: trans sets then travel in it beside their wire
   * form and are not translated bit by bit at each receiver (the core's `sharedNodeIndex`; the
   * routing is identical, a core property test checks the traces match).
   */
  private readonly nodeIndex = new NodeIndex(1 << 22)
  private readonly bytesModel: string
  private readonly trace: ((timeMs: number, line: string) => void) | undefined
  private samplePairs: [SimNode, SimNode][] = []
  nowMs = 0
  private nextConnId = 1
  private events = 0
  private messages = 0
  private entries = 0
  private bytes = 0
  private messagesLost = 0
  private readonly recordTotals = { signs: 0, verifies: 0 }
  private dialsStarted = 0
  private dialsFailed = 0
  private inFlight = 0
  private held = 0
  private goodDialsPending = 0
  private openConnections = 0
  /** Dials in flight to addresses never tried before: while any is, discovery is not done. */
  private firstDialsPending = 0
  private lastActivityMs = 0
  private lastScenarioEventMs = 0
  private scenarioEventsLeft: number
  private readonly eventsSkipped: string[] = []
  private readonly samples: Sample[] = []
  private samplingStopped = false
  /** False after a liveness change that activity does not record (a crash): the next sample is taken. */
  private samplesSkippable = true
  private finished = false
  private masterIndex = 0
  private masterReports = new Map<number, readonly number[]>()
  private masterTablesApplied = 0
  private masterDone = false

  constructor(
    readonly scenario: Scenario,
    options: RunOptions = {},
  ) {
    this.rng = new Prng(scenario.seed)
    this.sizeOfUpdate = options.sizeOfUpdate ?? encodedUpdateSize
    this.bytesModel = options.bytesModel ?? (options.sizeOfUpdate === undefined ? 'updates: @phoenix-overlay/wire encodedUpdateSize; master reports/tables: estimate (packages/sim/src/size.ts)' : 'custom')
    this.trace = options.trace
    scenario.subnets.forEach((subnet, s) => {
      const width = Math.max(3, String(subnet.nodes - 1).length)
      for (let i = 0; i < subnet.nodes; i++) {
        const node: SimNode = {
          index: this.nodes.length,
          id: `${subnet.name}-${String(i).padStart(width, '0')}`,
          subnet: s,
          gateway: i < subnet.gateways,
          address: `10.${s + 1}.${(i >> 8) & 255}.${i & 255}:7000`,
          alive: false,
          everStarted: false,
          incarnation: 0,
          core: undefined,
          master: undefined,
          busyUntilMs: 0,
          stepAtMs: Number.POSITIVE_INFINITY,
          stepToken: 0,
          links: new Map(),
          pendingDown: new Map(),
          heldOn: new Set(),
          recordOps: { signs: 0, verifies: 0 },
        }
        // 10.s.x.y addresses repeat past 65,536 nodes per subnet; NODES_MAX keeps us far below.
        this.nodes.push(node)
        this.byAddress.set(node.address, node)
        this.byId.set(node.id, node)
      }
    })
    const orderRng = this.rng.fork(0x5e1ec7)
    const all: SimNode[] = []
    scenario.subnets.forEach((subnet, s) => {
      const pool = orderRng.shuffle(this.nodes.filter((n) => n.subnet === s && !n.gateway))
      this.selectionOrder.set(subnet.name, pool)
      all.push(...pool)
    })
    this.selectionOrder.set('', orderRng.shuffle(all))
    if (scenario.strategy === 'master') {
      if (scenario.events.length > 0) throw new SimulationError('UNSUPPORTED', 'scenario.events: the master baseline assumes static processes (as in the paper); run it without events')
      const gateway = this.nodes.find((n) => n.gateway)
      this.masterIndex = (gateway ?? this.nodes[0]!).index
    }
    // Resolve every selection now, so a bad id fails before the run starts.
    scenario.events.forEach((e, i) => {
      if ('between' in e) e.between.forEach((id, j) => this.nodeById(id, `events[${i}].between[${j}]`))
      else this.select(e.nodes, `events[${i}].nodes`)
    })
    this.scenarioEventsLeft = scenario.events.length
  }

  private nodeById(id: string, field: string): SimNode {
    const node = this.byId.get(id)
    if (node === undefined) throw new SimulationError('INVALID_SCENARIO', `scenario.${field}: no node ${JSON.stringify(id)} (ids are <subnet>-<number>, e.g. ${this.nodes[0]!.id})`)
    return node
  }

  private select(selection: NodeSelection, field: string): SimNode[] {
    if (Array.isArray(selection)) return (selection as readonly string[]).map((id, j) => this.nodeById(id, `${field}[${j}]`))
    const spec = selection as { fraction?: number; count?: number; subnet?: string }
    const pool = this.selectionOrder.get(spec.subnet ?? '')!
    const count = spec.fraction !== undefined ? Math.round(spec.fraction * pool.length) : spec.count!
    if (count > pool.length) throw new SimulationError('INVALID_SCENARIO', `scenario.${field}.count: ${count} nodes asked, only ${pool.length} non-gateway nodes to pick from`)
    return pool.slice(0, count)
  }

  // ---------------------------------------------------------------- network model

  private allowed(from: SimNode, to: SimNode): boolean {
    if (from === to) return false
    if (this.blockedPairs.has(pairKey(from, to))) return false
    return from.subnet === to.subnet || to.gateway
  }

  private linkClass(a: SimNode, b: SimNode): { latencyMs: number; msPerByte: number } {
    const c = a.subnet === b.subnet ? this.scenario.network.intraSubnet : this.scenario.network.interSubnet
    return { latencyMs: c.latencyUs / 1000, msPerByte: 8 / (c.bandwidthMbps * 1000) }
  }

  private schedule(atMs: number, event: SimEvent): void {
    this.queue.push(atMs, event)
  }

  /** The node is busy for `costMs` more, after whatever it was already doing. */
  private charge(node: SimNode, costMs: number): number {
    node.busyUntilMs = Math.max(this.nowMs, node.busyUntilMs) + costMs
    return node.busyUntilMs
  }

  private kick(node: SimNode, atMs = this.nowMs): void {
    if (!node.alive) return
    const at = Math.max(atMs, node.busyUntilMs)
    if (node.stepAtMs <= at) return
    node.stepAtMs = at
    this.schedule(at, { k: 'step', node, token: ++node.stepToken })
  }

  private startDial(node: SimNode, address: string, atMs: number): void {
    this.dialsStarted++
    const target = this.byAddress.get(address)
    const { latencyMs } = target !== undefined ? this.linkClass(node, target) : this.linkClass(node, node)
    const net = this.scenario.network
    let ok = false
    let doneMs: number
    const first = (node.core?.dialBackoff(address)?.consecutiveFailures ?? 0) === 0
    if (first) this.firstDialsPending++
    if (target === undefined || !this.allowed(node, target)) {
      // Dropped SYNs: the dialler learns nothing until its SYN timeout; a rejecting firewall
      // answers with a reset after one round trip.
      doneMs = atMs + (net.firewall === 'reject' ? 2 * latencyMs : net.synTimeoutMs)
    } else if (!target.alive) {
      // The host answers with a reset: refused after one round trip.
      doneMs = atMs + 2 * latencyMs
    } else {
      ok = true
      this.goodDialsPending++
      doneMs = atMs + 2 * latencyMs + net.connectSetupUs / 1000
    }
    this.schedule(doneMs, { k: 'dial', node, incarnation: node.incarnation, address, target, ok, first })
  }

  private onDialDone(e: Extract<SimEvent, { k: 'dial' }>): void {
    if (e.ok) this.goodDialsPending--
    if (e.first) this.firstDialsPending--
    const { node, target } = e
    if (!node.alive || node.incarnation !== e.incarnation) return
    // Re-check at completion: the target may have died or the link failed meanwhile.
    const success = e.ok && target !== undefined && target.alive && this.allowed(node, target)
    this.trace?.(this.nowMs, `dial ${node.id} -> ${target?.id ?? e.address} ${success ? 'up' : 'failed'}`)
    if (!success) {
      this.dialsFailed++
      if (node.core !== undefined) node.core.dialFailed(e.address, this.nowMs)
      else this.masterDialDone(node)
      this.kick(node)
      return
    }
    let conn = node.links.get(target.index)
    if (conn === undefined) conn = this.connect(node, target)
    node.core?.connectionUp(target.id, this.nowMs, e.address)
    if (node.master !== undefined) this.masterDialDone(node)
    this.kick(node)
  }

  private connect(a: SimNode, b: SimNode): Connection {
    const { latencyMs, msPerByte } = this.linkClass(a, b)
    const conn: Connection = { id: this.nextConnId++, a, b, open: true, txFreeToBMs: 0, txFreeToAMs: 0, heldToB: NO_HELD, heldToA: NO_HELD, latencyMs, msPerByte }
    for (const [self, peer] of [
      [a, b],
      [b, a],
    ] as const) {
      // A new connection proves the old one dead even if the crash was not noticed yet.
      if (self.pendingDown.delete(peer.index)) self.core?.connectionDown(peer.id, this.nowMs)
      self.links.set(peer.index, conn)
    }
    this.openConnections++
    this.charge(b, this.scenario.processing.perConnectionUs / 1000)
    b.core?.connectionUp(a.id, this.nowMs)
    this.kick(b)
    this.lastActivityMs = this.nowMs
    return conn
  }

  /** Closes a connection; `notify` says which ends learn it now (the others learn after crashDetectMs). */
  private closeConnection(conn: Connection, notifyNow: readonly SimNode[]): void {
    if (!conn.open) return
    this.trace?.(this.nowMs, `close ${conn.a.id} ${conn.b.id}`)
    conn.open = false
    this.openConnections--
    this.held -= conn.heldToA.length + conn.heldToB.length
    this.messagesLost += conn.heldToA.length + conn.heldToB.length
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
        self.core?.connectionDown(peer.id, this.nowMs)
        this.kick(self)
      } else {
        self.pendingDown.set(peer.index, conn.id)
        this.schedule(this.nowMs + this.scenario.network.crashDetectMs, { k: 'down', node: self, incarnation: self.incarnation, peer, connId: conn.id })
      }
    }
    this.lastActivityMs = this.nowMs
  }

  private send(from: SimNode, to: SimNode, payload: Payload, departMs: number, entries: number, bytes: number): number {
    this.messages++
    this.entries += entries
    this.bytes += bytes
    const conn = from.links.get(to.index)
    if (conn === undefined || !conn.open) {
      // The core still thinks the peer is there (its crash is not noticed yet): the bytes go nowhere.
      this.messagesLost++
      return departMs
    }
    const toB = conn.a === from
    const txStart = Math.max(departMs, toB ? conn.txFreeToBMs : conn.txFreeToAMs)
    const txEnd = txStart + bytes * conn.msPerByte
    if (toB) conn.txFreeToBMs = txEnd
    else conn.txFreeToAMs = txEnd
    this.inFlight++
    const arrival = txEnd + conn.latencyMs
    this.schedule(arrival, { k: 'deliver', conn, toB, payload })
    return arrival
  }

  private onDeliver(e: Extract<SimEvent, { k: 'deliver' }>): void {
    this.inFlight--
    const { conn, toB, payload } = e
    const to = toB ? conn.b : conn.a
    if (!conn.open || !to.alive) {
      this.messagesLost++
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
      this.held++
      to.heldOn.add(conn)
    }
    this.kick(to)
  }

  /** Hands a payload to the node; false = its inbox is full, hold it. */
  private accept(to: SimNode, from: SimNode, payload: Payload): boolean {
    if (payload.t === 'update') {
      // The core refused this connection (e.g. its neighbour limit) and will close it at its next
      // step; until then what arrives on it is discarded, as a transport would, and counted as lost.
      if (!to.core!.isNeighbour(from.id)) {
        this.messagesLost++
        return true
      }
      return to.core!.receive(from.id, payload.message, this.nowMs)
    }
    if (payload.t === 'report') this.masterReceiveReport(to, from, payload.neighbours)
    else this.masterReceiveTable(to, payload.fwd, payload.nhops)
    return true
  }

  private retryHeld(node: SimNode): void {
    for (const conn of node.heldOn) {
      const toB = conn.b === node
      const held = toB ? conn.heldToB : conn.heldToA
      const from = toB ? conn.a : conn.b
      let taken = 0
      while (taken < held.length && this.accept(node, from, held[taken]!)) taken++
      held.splice(0, taken)
      this.held -= taken
      if (held.length === 0) node.heldOn.delete(conn)
    }
  }

  // ---------------------------------------------------------------- node steps (core strategies)

  private onStep(e: Extract<SimEvent, { k: 'step' }>): void {
    const node = e.node
    if (e.token !== node.stepToken || !node.alive) return
    node.stepAtMs = Number.POSITIVE_INFINITY
    if (this.nowMs < node.busyUntilMs) {
      this.kick(node)
      return
    }
    if (node.master !== undefined) {
      this.masterStep(node)
      return
    }
    const core = node.core!
    const result = core.step(this.nowMs)
    this.applyStep(node, result)
    if (node.heldOn.size > 0) {
      this.retryHeld(node)
      this.kick(node)
    }
  }

  private applyStep(node: SimNode, result: StepResult): void {
    const p = this.scenario.processing
    let dials = 0
    for (const effect of result.effects) if (effect.type === 'dial') dials++
    const costUs =
      p.perMessageUs * (result.messagesApplied + result.messagesSent) +
      p.perEntryUs * (result.entriesApplied + result.entriesSent) +
      p.perConnectionUs * dials +
      p.perRecordSignUs * node.recordOps.signs +
      p.perRecordVerifyUs * node.recordOps.verifies
    node.recordOps.signs = 0
    node.recordOps.verifies = 0
    const doneMs = this.charge(node, costUs / 1000)
    if (result.messagesApplied > 0) this.lastActivityMs = doneMs
    this.performEffects(node, result.effects, doneMs)
    if (result.kind !== 'idle') this.kick(node)
    else if (result.wakeAtMs !== undefined) this.kick(node, result.wakeAtMs)
  }

  private performEffects(node: SimNode, effects: readonly Effect[], atMs: number): void {
    for (const effect of effects) {
      if (effect.type === 'send') {
        const to = this.byId.get(effect.to)!
        this.send(node, to, { t: 'update', message: effect.message }, atMs, effect.message.entries.length, this.sizeOfUpdate(effect.message))
      } else if (effect.type === 'dial') {
        this.startDial(node, effect.address, atMs)
      } else {
        const peer = this.byId.get(effect.peer)
        const conn = peer === undefined ? undefined : node.links.get(peer.index)
        if (conn !== undefined) this.closeConnection(conn, [conn.a, conn.b])
      }
    }
  }

  // ---------------------------------------------------------------- lifecycle

  private coreConfig(node: SimNode): CoreConfig {
    const s = this.scenario
    const others = (pred: (n: SimNode) => boolean) => this.nodes.filter((n) => n !== node && pred(n)).map((n) => n.address)
    let hubs: string[]
    let discovery = true
    if (s.strategy === 'offline') {
      // The complete configuration: every pair that may connect, dialled once, by one end.
      hubs = others((n) => this.offlineDials(node, n))
      discovery = false
    } else if (s.discovery === 'all') {
      hubs = others(() => true)
      discovery = false
    } else {
      hubs = others((n) => n.gateway)
    }
    return {
      id: node.id,
      addresses: [node.address],
      hubs,
      mode: s.strategy === 'naive' ? 'naive' : 'optimized',
      discovery,
      timing: s.coreTiming,
      sharedNodeIndex: this.nodeIndex,
      ...(s.processing.perRecordSignUs > 0 || s.processing.perRecordVerifyUs > 0 ? { records: modelledRecordAuthority(node.id, node.recordOps, this.recordTotals) } : {}),
    }
  }

  /** Offline strategy: does `u` dial `v`? Every allowed pair once; a balanced orientation when both may. */
  private offlineDials(u: SimNode, v: SimNode): boolean {
    const uv = this.allowedStatic(u, v)
    const vu = this.allowedStatic(v, u)
    if (!uv) return false
    if (!vu) return true
    return u.index < v.index === ((u.index + v.index) % 2 === 0)
  }

  private allowedStatic(from: SimNode, to: SimNode): boolean {
    return from !== to && (from.subnet === to.subnet || to.gateway)
  }

  private start(node: SimNode): void {
    if (node.alive) return
    // Connections of a previous incarnation still closing (after a graceful leave) end now.
    for (const conn of [...node.links.values()]) this.closeConnection(conn, [conn.a, conn.b])
    node.alive = true
    node.everStarted = true
    node.incarnation++
    node.busyUntilMs = this.nowMs
    node.stepAtMs = Number.POSITIVE_INFINITY
    if (this.scenario.strategy === 'master') {
      const n = this.nodes.length
      const targets: number[] = []
      // Start after oneself so that not everyone dials node 0 first.
      for (let k = 1; k < n; k++) targets.push((node.index + k) % n)
      node.master = { targets, nextTarget: 0, dialsInFlight: 0, reported: false, fwd: undefined, nhops: undefined }
    } else {
      node.core = new PhoenixCore(this.coreConfig(node))
    }
    this.lastActivityMs = this.nowMs
    this.kick(node)
  }

  private crash(node: SimNode): void {
    this.samplesSkippable = false
    node.alive = false
    node.core = undefined
    node.master = undefined
    node.pendingDown.clear()
    for (const conn of [...node.links.values()]) this.closeConnection(conn, [])
    node.heldOn.clear()
  }

  private leave(node: SimNode): void {
    const core = node.core
    if (core === undefined) {
      this.crash(node)
      return
    }
    // Farewells go out, then each connection closes once its farewell has arrived.
    const lastArrival = new Map<number, number>()
    for (const effect of core.leave(this.nowMs)) {
      if (effect.type !== 'send') continue
      const to = this.byId.get(effect.to)!
      lastArrival.set(to.index, this.send(node, to, { t: 'update', message: effect.message }, this.nowMs, effect.message.entries.length, this.sizeOfUpdate(effect.message)))
    }
    node.alive = false
    node.core = undefined
    for (const [peer, conn] of node.links) this.schedule(lastArrival.get(peer) ?? this.nowMs, { k: 'close', conn })
  }

  private onScenarioEvent(index: number): void {
    const e: ScenarioEvent = this.scenario.events[index]!
    this.scenarioEventsLeft--
    this.lastScenarioEventMs = this.nowMs
    this.lastActivityMs = this.nowMs
    if ('between' in e) {
      const [a, b] = e.between.map((id) => this.byId.get(id)!) as [SimNode, SimNode]
      if (e.type === 'linkHeal') {
        this.blockedPairs.delete(pairKey(a, b))
        return
      }
      this.blockedPairs.add(pairKey(a, b))
      const conn = a.links.get(b.index)
      if (conn !== undefined) this.closeConnection(conn, [])
      return
    }
    for (const node of this.select(e.nodes, `events[${index}].nodes`)) {
      const wantAlive = e.type === 'join' || e.type === 'restart'
      if (node.alive === wantAlive) {
        this.eventsSkipped.push(`events[${index}] ${e.type} ${node.id}: already ${node.alive ? 'running' : 'down'}`)
        continue
      }
      if (e.type === 'crash') this.crash(node)
      else if (e.type === 'leave') this.leave(node)
      else this.start(node)
    }
  }

  // ---------------------------------------------------------------- master baseline

  private masterStep(node: SimNode): void {
    const m = node.master!
    while (m.dialsInFlight < MASTER_DIALS_IN_FLIGHT_MAX && m.nextTarget < m.targets.length) {
      const target = this.nodes[m.targets[m.nextTarget++]!]!
      if (node.links.has(target.index)) continue
      m.dialsInFlight++
      this.startDial(node, target.address, this.charge(node, this.scenario.processing.perConnectionUs / 1000))
    }
    if (m.reported || m.dialsInFlight > 0 || m.nextTarget < m.targets.length) return
    m.reported = true
    const neighbours = [...node.links.keys()].sort((x, y) => x - y)
    if (node.index === this.masterIndex) {
      this.masterReceiveReport(node, node, neighbours)
      return
    }
    const master = this.nodes[this.masterIndex]!
    if (!node.links.has(master.index)) throw new SimulationError('UNSUPPORTED', `master baseline: ${node.id} has no connection to the master ${master.id}`)
    const departMs = this.charge(node, (this.scenario.processing.perMessageUs + neighbours.length * this.scenario.processing.perEntryUs) / 1000)
    this.send(node, master, { t: 'report', neighbours }, departMs, neighbours.length, estimateListBytes(neighbours.length, node.id.length, 0))
  }

  private masterDialDone(node: SimNode): void {
    node.master!.dialsInFlight--
  }

  private masterReceiveReport(master: SimNode, from: SimNode, neighbours: readonly number[]): void {
    const p = this.scenario.processing
    if (from !== master) this.charge(master, (p.perMessageUs + neighbours.length * p.perEntryUs) / 1000)
    this.masterReports.set(from.index, neighbours)
    if (this.masterReports.size < this.nodes.length) return
    // All reports in: all-pairs shortest paths over the union of reported connections.
    const edges: [number, number][] = []
    for (const [u, list] of this.masterReports) for (const v of list) edges.push([u, v])
    const graph = new Graph(this.nodes.length, dedupeEdges(edges))
    const n = this.nodes.length
    const fwd = this.nodes.map(() => new Int32Array(n).fill(-1))
    const nhops = this.nodes.map(() => new Int32Array(n).fill(-1))
    graph.forEachDestination((v, distTo, nextHopTo) => {
      for (let u = 0; u < n; u++) {
        const d = distTo(u)
        if (u === v || d < 0) continue
        fwd[u]![v] = nextHopTo(u)
        nhops[u]![v] = d
      }
    })
    // Computing the routes costs about one entry's work per route produced.
    this.charge(master, (n * (n - 1) * p.perEntryUs) / 1000)
    for (const node of this.nodes) {
      const departMs = this.charge(master, (p.perMessageUs + (n - 1) * p.perEntryUs) / 1000)
      if (node === master) {
        this.masterReceiveTable(master, fwd[node.index]!, nhops[node.index]!)
        continue
      }
      this.send(master, node, { t: 'table', fwd: fwd[node.index]!, nhops: nhops[node.index]! }, departMs, n - 1, estimateListBytes(n - 1, node.id.length * 2, 2))
    }
  }

  private masterReceiveTable(node: SimNode, fwd: Int32Array, nhops: Int32Array): void {
    const m = node.master!
    const p = this.scenario.processing
    const doneMs = this.charge(node, (p.perMessageUs + (this.nodes.length - 1) * p.perEntryUs) / 1000)
    m.fwd = fwd
    m.nhops = nhops
    this.lastActivityMs = Math.max(this.lastActivityMs, doneMs)
    if (++this.masterTablesApplied === this.nodes.length) this.masterDone = true
  }

  // ---------------------------------------------------------------- measurement

  /** Node `u`'s valid route to `v` as (next hop, hops), from its core or master table. */
  routeOf(u: SimNode, v: SimNode): { fwd: SimNode; nhops: number; seq: number } | undefined {
    if (u.core !== undefined) {
      const r = u.core.route(v.id)
      if (r === undefined || !r.reachable || r.fwd === undefined) return undefined
      const fwd = this.byId.get(r.fwd)
      return fwd === undefined ? undefined : { fwd, nhops: r.nhops, seq: r.seq }
    }
    const m = u.master
    if (m?.fwd === undefined || m.nhops === undefined) return undefined
    const f = m.fwd[v.index]!
    return f < 0 ? undefined : { fwd: this.nodes[f]!, nhops: m.nhops[v.index]!, seq: 0 }
  }

  private choosePairs(): void {
    const n = this.nodes.length
    const all = n * (n - 1)
    const rng = this.rng.fork(0x9a125)
    if (all <= this.scenario.samplePairsMax) {
      for (const u of this.nodes) for (const v of this.nodes) if (u !== v) this.samplePairs.push([u, v])
      return
    }
    for (let i = 0; i < this.scenario.samplePairsMax; i++) {
      const u = rng.int(n)
      let v = rng.int(n - 1)
      if (v >= u) v++
      this.samplePairs.push([this.nodes[u]!, this.nodes[v]!])
    }
  }

  private sample(force = false): void {
    // Tables change only through activity; with none since the last sample this one would be
    // identical, so it is skipped (the series is a step function between recorded samples).
    const previous = this.samples.at(-1)
    if (!force && previous !== undefined && this.lastActivityMs < previous.tMs && this.samplesSkippable) return
    this.samplesSkippable = true
    if (this.samples.length >= SAMPLES_MAX) {
      this.samplingStopped = true
      return
    }
    let pairs = 0
    let reachable = 0
    let hops = 0
    for (const [u, v] of this.samplePairs) {
      if (!u.alive || !v.alive) continue
      pairs++
      let at = u
      let h = 0
      while (at !== v && h < SAMPLE_HOPS_MAX) {
        const r = this.routeOf(at, v)
        const conn = r === undefined ? undefined : at.links.get(r.fwd.index)
        if (r === undefined || conn === undefined || !conn.open) break
        at = r.fwd
        h++
      }
      if (at === v) {
        reachable++
        hops += h
      }
    }
    this.samples.push({ tMs: round3(this.nowMs), reachableFraction: pairs === 0 ? 0 : reachable / pairs, meanHops: reachable === 0 ? 0 : hops / reachable, pairs })
  }

  /**
   * The run is over when nothing is in flight and either (a) every pair of live nodes the firewall
   * allows is connected and nothing happened for a send hold plus QUIET_COMPLETE_MS, or (b)
   * nothing happened for quietMs and no address is being dialled for the first time (discovery is
   * exhausted; the graph stays incomplete, which the result reports as connectionsMissing).
   */
  private isQuiet(): boolean {
    if (this.scenarioEventsLeft > 0 || this.inFlight > 0 || this.held > 0 || this.goodDialsPending > 0) return false
    if (this.scenario.strategy === 'master') return this.masterDone
    const live = this.nodes.filter((n) => n.alive)
    if (this.connectionsMissing(live, this.openConnections) === 0) {
      const hold = this.scenario.coreTiming.sendHoldForDialsMs ?? 0
      if (this.nowMs >= this.lastActivityMs + hold + QUIET_COMPLETE_MS) return true
    }
    return this.firstDialsPending === 0 && this.nowMs >= this.lastActivityMs + this.scenario.quietMs
  }

  /** Live nodes and the open connections among them, for the final check and the table dump. */
  finalGraph(): { live: SimNode[]; edges: [SimNode, SimNode][] } {
    const live = this.nodes.filter((n) => n.alive)
    const edges: [SimNode, SimNode][] = []
    for (const u of live) for (const [v, conn] of u.links) if (conn.open && u.index < v && this.nodes[v]!.alive) edges.push([u, this.nodes[v]!])
    return { live, edges }
  }

  /**
   * Checks every live node's table against BFS shortest paths in the final connection graph.
   * `corrupt` lets a test tamper with what the check sees, to prove the check notices.
   */
  checkTables(
    corrupt?: (u: string, v: string, r: { fwd: string; nhops: number } | undefined) => { fwd: string; nhops: number } | undefined,
    method: 'auto' | 'reference' | 'twin-classes' = 'auto',
  ): { ok: boolean; method: 'reference' | 'twin-classes'; failures: RouteCheckFailure[] } {
    const { live, edges } = this.finalGraph()
    const lookup = (u: SimNode, v: SimNode): { fwd: string; nhops: number } | undefined => {
      const r = this.routeOf(u, v)
      const view = r === undefined ? undefined : { fwd: r.fwd.id, nhops: r.nhops }
      return corrupt === undefined ? view : corrupt(u.id, v.id, view)
    }
    const useReference = method === 'reference' || (method === 'auto' && live.length <= REFERENCE_CHECK_NODES_MAX)
    if (useReference) {
      const failures = checkRoutesAgainstBfs(
        live.map((n) => n.id),
        edges.map(([a, b]) => [a.id, b.id] as const),
        (u, v) => lookup(this.byId.get(u)!, this.byId.get(v)!),
        CHECK_FAILURES_MAX,
      )
      return { ok: failures.length === 0, method: 'reference', failures }
    }
    const position = new Map(live.map((n, i) => [n.index, i]))
    const graph = new Graph(
      live.length,
      edges.map(([a, b]) => [position.get(a.index)!, position.get(b.index)!] as [number, number]),
    )
    const ids = live.map((n) => n.id)
    const failures = checkRoutesFast(
      graph,
      ids,
      (u, v) => {
        const r = lookup(live[u]!, live[v]!)
        if (r === undefined) return undefined
        const f = this.byId.get(r.fwd)
        return { fwd: f === undefined ? -1 : (position.get(f.index) ?? -1), nhops: r.nhops }
      },
      CHECK_FAILURES_MAX,
    )
    return { ok: failures.length === 0, method: 'twin-classes', failures }
  }

  private connectionsMissing(live: readonly SimNode[], connected: number): number {
    // Allowed unordered pairs: same-subnet pairs, plus cross-subnet pairs with a gateway at one end
    // (= all cross pairs minus cross pairs of two non-gateways).
    const all = new Map<number, number>()
    const plain = new Map<number, number>()
    for (const n of live) {
      all.set(n.subnet, (all.get(n.subnet) ?? 0) + 1)
      if (!n.gateway) plain.set(n.subnet, (plain.get(n.subnet) ?? 0) + 1)
    }
    const sumSquares = (m: Map<number, number>) => [...m.values()].reduce((acc, c) => acc + c * c, 0)
    const total = live.length
    const plainTotal = [...plain.values()].reduce((a, b) => a + b, 0)
    const sameSubnet = [...all.values()].reduce((acc, c) => acc + (c * (c - 1)) / 2, 0)
    const allowedPairs = sameSubnet + (total * total - sumSquares(all)) / 2 - (plainTotal * plainTotal - sumSquares(plain)) / 2
    let blocked = 0
    for (const key of this.blockedPairs) {
      const [a, b] = key.split('|').map(Number) as [number, number]
      const x = this.nodes[a]!
      const y = this.nodes[b]!
      if (x.alive && y.alive && (this.allowedStatic(x, y) || this.allowedStatic(y, x))) blocked++
    }
    return allowedPairs - blocked - connected
  }

  // ---------------------------------------------------------------- the run

  run(options: RunOptions = {}): SimResult {
    if (this.finished) throw new SimulationError('UNSUPPORTED', 'a Simulation runs once; create a new one')
    const s = this.scenario
    const startRng = this.rng.fork(0x57a27)
    for (const e of s.events) if (e.type === 'join' && 'nodes' in e) for (const n of this.select(e.nodes, 'events')) this.heldBeforeStart.add(n)
    for (const node of this.nodes) {
      if (this.heldBeforeStart.has(node)) continue
      this.schedule(s.startSpreadMs > 0 ? startRng.next() * s.startSpreadMs : 0, { k: 'start', node })
    }
    s.events.forEach((e, index) => this.schedule(e.atMs, { k: 'scenario', index }))
    this.choosePairs()
    this.schedule(0, { k: 'sample' })
    this.schedule(QUIET_CHECK_EVERY_MS, { k: 'quiet' })
    // Often enough for a live progress line at 2,000+ nodes, rare enough to cost nothing.
    const progressEvery = 20_000
    let converged = false
    while (this.queue.size > 0) {
      const { timeMs, item } = this.queue.pop()
      if (timeMs > s.endMs) {
        this.nowMs = s.endMs
        break
      }
      this.nowMs = timeMs
      if (++this.events > EVENTS_PER_RUN_MAX) throw new SimulationError('LIMIT_EXCEEDED', `more than ${EVENTS_PER_RUN_MAX} events (EVENTS_PER_RUN_MAX)`)
      if (this.events % progressEvery === 0) options.onProgress?.(this.nowMs, this.events, this.samples.at(-1)?.reachableFraction ?? 0)
      switch (item.k) {
        case 'step':
          this.onStep(item)
          break
        case 'deliver':
          this.onDeliver(item)
          break
        case 'dial':
          this.onDialDone(item)
          break
        case 'down':
          if (item.node.alive && item.node.incarnation === item.incarnation && item.node.pendingDown.get(item.peer.index) === item.connId) {
            item.node.pendingDown.delete(item.peer.index)
            item.node.core?.connectionDown(item.peer.id, this.nowMs)
            this.lastActivityMs = this.nowMs
            this.kick(item.node)
          }
          break
        case 'close':
          this.closeConnection(item.conn, [item.conn.a, item.conn.b])
          break
        case 'start':
          this.start(item.node)
          break
        case 'scenario':
          this.onScenarioEvent(item.index)
          break
        case 'sample':
          this.sample()
          if (!this.samplingStopped) this.schedule(this.nowMs + s.sampleEveryMs, { k: 'sample' })
          break
        case 'quiet':
          if (this.isQuiet()) converged = true
          else this.schedule(this.nowMs + QUIET_CHECK_EVERY_MS, { k: 'quiet' })
          break
      }
      if (converged) break
    }
    this.finished = true
    if (converged && this.samples.at(-1)?.tMs !== round3(this.nowMs)) this.sample(true)
    options.onProgress?.(this.nowMs, this.events, this.samples.at(-1)?.reachableFraction ?? 0)
    const { live, edges } = this.finalGraph()
    const check = converged ? this.checkTables() : { ok: false, method: 'reference' as const, failures: [{ node: '-', destination: '-', problem: `not converged by endMs ${s.endMs}` }] }
    const n = this.nodes.length
    const reach90 = this.samples.find((x) => x.tMs >= this.lastScenarioEventMs && x.reachableFraction >= 0.9)
    return {
      scenario: s.name,
      strategy: s.strategy,
      discovery: s.strategy === 'offline' || s.strategy === 'master' ? 'all' : s.discovery,
      seed: s.seed,
      nodes: n,
      subnets: s.subnets.map((x) => ({ name: x.name, nodes: x.nodes, gateways: x.gateways })),
      converged,
      convergenceMs: round3(this.lastActivityMs),
      lastScenarioEventMs: round3(this.lastScenarioEventMs),
      endedAtMs: round3(this.nowMs),
      reach90Ms: reach90?.tMs,
      messages: this.messages,
      entries: this.entries,
      bytes: this.bytes,
      bytesModel: this.bytesModel,
      entriesOverLowerBound: n > 1 ? round3(this.entries / (n * (n - 1))) : 0,
      messagesLost: this.messagesLost,
      recordSigns: this.recordTotals.signs,
      recordVerifications: this.recordTotals.verifies,
      dialsStarted: this.dialsStarted,
      dialsFailed: this.dialsFailed,
      connections: edges.length,
      connectionsMissing: this.connectionsMissing(live, edges.length),
      eventsSkipped: this.eventsSkipped,
      eventsProcessed: this.events,
      samplingStopped: this.samplingStopped,
      check,
      samples: this.samples,
    }
  }

  /** The final state in the shape `--dump-tables` documents, for independent verification. */
  dumpTables(): {
    nodes: { id: string; subnet: string; gateway: boolean; alive: boolean }[]
    connections: [string, string][]
    tables: Record<string, Record<string, { fwd: string; nhops: number; seq: number }>>
  } {
    const { live, edges } = this.finalGraph()
    const tables: Record<string, Record<string, { fwd: string; nhops: number; seq: number }>> = {}
    for (const u of live) {
      const table: Record<string, { fwd: string; nhops: number; seq: number }> = {}
      for (const v of this.nodes) {
        if (v === u) continue
        const r = this.routeOf(u, v)
        if (r !== undefined) table[v.id] = { fwd: r.fwd.id, nhops: r.nhops, seq: r.seq }
      }
      tables[u.id] = table
    }
    return {
      nodes: this.nodes.map((n) => ({ id: n.id, subnet: this.scenario.subnets[n.subnet]!.name, gateway: n.gateway, alive: n.alive })),
      connections: edges.map(([a, b]) => [a.id, b.id]),
      tables,
    }
  }
}

function pairKey(a: SimNode, b: SimNode): string {
  return a.index < b.index ? `${a.index}|${b.index}` : `${b.index}|${a.index}`
}

function dedupeEdges(edges: [number, number][]): [number, number][] {
  const seen = new Set<string>()
  const out: [number, number][] = []
  for (const [a, b] of edges) {
    const key = a < b ? `${a}|${b}` : `${b}|${a}`
    if (seen.has(key)) continue
    seen.add(key)
    out.push([a, b])
  }
  return out
}

/** Parses, runs and checks in one call (what the CLI and the figure script use). */
export function simulate(scenario: Scenario, options: RunOptions = {}): { sim: Simulation; result: SimResult } {
  const sim = new Simulation(scenario, options)
  const result = sim.run(options)
  return { sim, result }
}

/**
 * Stands in for Ed25519 so that the core signs and verifies exactly when it would with real keys
 * (its own record on every change; a received record once, when first seen) while the simulator
 * charges the measured CPU cost. The "signature" is a 32-bit FNV-1a hash of the payload bound to
 * the signer's id, so a record altered on the way would still fail to verify, padded to Ed25519's
 * 64 bytes so that updates are as large on the modelled links as on real ones.
 */
const ED25519_SIGNATURE_BYTES = 64

function modelledRecordAuthority(id: string, ops: { signs: number; verifies: number }, totals: { signs: number; verifies: number }): RecordAuthority {
  const tag = (node: string, payload: Uint8Array): Uint8Array => {
    let hash = 0x811c9dc5
    for (let i = 0; i < node.length; i++) hash = Math.imul(hash ^ node.charCodeAt(i), 0x01000193)
    for (const byte of payload) hash = Math.imul(hash ^ byte, 0x01000193)
    const out = new Uint8Array(ED25519_SIGNATURE_BYTES)
    new DataView(out.buffer).setUint32(0, hash >>> 0)
    return out
  }
  return {
    sign: (payload) => {
      ops.signs++
      totals.signs++
      return tag(id, payload)
    },
    verify: (node, payload, signature) => {
      ops.verifies++
      totals.verifies++
      return bytesEqual(signature, tag(node, payload))
    },
  }
}
