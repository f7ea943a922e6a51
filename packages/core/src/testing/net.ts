import { PhoenixCore, invariant, type SharedNumbering, type CoreConfig, type NodeId, type RouteView, type UpdateMessage, type ValidRoute } from '../index.ts'
import { LinkQueues } from './links.ts'
import { prng } from './prng.ts'

/** The address TestNet gives node `id` (dialling it reaches `id`). */
export const addressOf = (id: NodeId): string => `addr:${id}`
const idOfAddress = (address: string): NodeId => address.slice('addr:'.length)

export interface NetOptions {
  seed: number
  /** Who may open a connection to whom (a firewall). Default: everyone. */
  allowed?: (from: NodeId, to: NodeId) => boolean
  /** Probability that a delivered message stays in flight to be delivered again. */
  duplicate?: number
  /** Probability that a delivery takes a random message of the link instead of the oldest. */
  reorder?: number
  /** Called after every single event, for invariants that must hold at all times. It reads; it must not call into a core. */
  afterEvent?: (net: TestNet, event: string) => void
  /** Record a trace of every event (for the replay test). */
  trace?: boolean
  /** Check every touched core's invariants after every event (`PhoenixCore.checkInvariants`). Default true. */
  checkInvariants?: boolean
}

/**
 * Many cores in one process, connected by FIFO links that a seeded PRNG interleaves at random:
 * which link delivers next, which node steps next, which dial completes next, with optional
 * duplication and reordering. Time passes only through `advance`, so dial back-offs hold and
 * a run ends when nothing but back-off retries is left.
 */
export class TestNet {
  readonly cores = new Map<NodeId, PhoenixCore>()
  private readonly links = new LinkQueues()
  private readonly dials: { from: NodeId; by: PhoenixCore; address: string }[] = []
  private readonly connections = new Set<string>()
  /** Cores the current event has called into: their invariants are checked when it ends. */
  private readonly touched = new Set<PhoenixCore>()
  /**
   * Inside `runToQuiescence` only: each core's `hasWork` since the last event that touched it.
   * The clock stands still there and only this net's events call into cores, so an untouched
   * core's answer holds; asking every core after every event was most of a property run's time.
   * Outside it (a test may call a core between two `runOne`s) every core is asked afresh.
   */
  private busyCores: Map<PhoenixCore, boolean> | undefined
  readonly rand: () => number
  readonly trace: string[] = []
  nowMs = 0
  events = 0
  entriesSent = 0
  messagesSent = 0
  /** How many times a core's invariants were checked (after an event that touched it). */
  invariantChecks = 0

  constructor(readonly options: NetOptions) {
    this.rand = prng(options.seed)
  }

  /** `numbering`: the simulator's shared node numbering (see `SharedNumbering`), to test that it changes nothing. */
  add(config: Omit<CoreConfig, 'addresses'> & { addresses?: readonly string[] }, numbering?: SharedNumbering): PhoenixCore {
    const core = new PhoenixCore({ addresses: [addressOf(config.id)], ...config }, numbering)
    this.cores.set(config.id, core)
    this.log(`add ${config.id}`)
    this.touched.add(core)
    this.eventDone()
    return core
  }

  private log(event: string): void {
    if (this.options.trace) this.trace.push(`${this.events} ${event}`)
  }

  private allowed(from: NodeId, to: NodeId): boolean {
    return this.options.allowed?.(from, to) ?? true
  }

  static key(a: NodeId, b: NodeId): string {
    return a < b ? `${a}|${b}` : `${b}|${a}`
  }

  connectionEdges(): [NodeId, NodeId][] {
    return [...this.connections].map((k) => k.split('|') as [NodeId, NodeId])
  }

  /** Crash: the node vanishes; its neighbours see their connections close. */
  crash(id: NodeId): void {
    this.cores.delete(id)
    for (const key of [...this.connections]) {
      const [a, b] = key.split('|') as [NodeId, NodeId]
      if (a !== id && b !== id) continue
      this.disconnect(a, b)
    }
    this.log(`crash ${id}`)
    this.eventDone()
  }

  /** Graceful leave: the core's farewell is sent on every link, then the connections close. */
  leave(id: NodeId): void {
    const core = this.cores.get(id)
    invariant(core !== undefined, `leave: ${id} is running`)
    for (const effect of core.leave(this.nowMs)) {
      if (effect.type === 'send') this.deliverNow(id, effect.to, effect.message)
    }
    this.crash(id)
  }

  disconnect(a: NodeId, b: NodeId): void {
    if (!this.connections.delete(TestNet.key(a, b))) return
    this.links.delete(`${a}>${b}`)
    this.links.delete(`${b}>${a}`)
    for (const [self, peer] of [[a, b], [b, a]] as const) {
      const core = this.cores.get(self)
      core?.connectionDown(peer, this.nowMs)
      if (core !== undefined) this.touched.add(core)
    }
    this.log(`down ${a} ${b}`)
  }

  /**
   * The connection between `a` and `b` is replaced by a new one, as a transport does when both
   * ends dialled at once and each keeps the stream the smaller id opened: what was in flight on
   * the old one is lost, and each end hears `connectionReplaced`.
   */
  replace(a: NodeId, b: NodeId): void {
    if (!this.connections.has(TestNet.key(a, b))) return
    this.links.delete(`${a}>${b}`)
    this.links.delete(`${b}>${a}`)
    for (const [self, peer] of [[a, b], [b, a]] as const) {
      const core = this.cores.get(self)
      core?.connectionReplaced(peer, this.nowMs)
      if (core !== undefined) this.touched.add(core)
    }
    this.log(`replace ${a} ${b}`)
    this.eventDone()
  }

  private deliverNow(from: NodeId, to: NodeId, message: UpdateMessage): void {
    const core = this.cores.get(to)
    core?.receive(from, message, this.nowMs)
    if (core !== undefined) this.touched.add(core)
  }

  private send(from: NodeId, to: NodeId, message: UpdateMessage): void {
    const key = `${from}>${to}`
    this.links.push(key, message)
    this.messagesSent++
    this.entriesSent += message.entries.length
  }

  private applyEffects(from: NodeId, core: PhoenixCore): void {
    this.touched.add(core)
    const result = core.step(this.nowMs)
    for (const effect of result.effects) {
      if (effect.type === 'dial') this.dials.push({ from, by: core, address: effect.address })
      else if (effect.type === 'send') this.send(from, effect.to, effect.message)
      else this.disconnect(from, effect.peer)
    }
    this.log(`step ${from} ${result.kind} ${result.effects.map((e) => (e.type === 'send' ? `send>${e.to}:${e.message.entries.map((x) => `${x.destination}/${x.seq}/${x.nhops}/${x.trans}`).join(',')}` : e.type === 'dial' ? `dial>${e.address}` : `close>${e.peer}`)).join(' ')}`)
  }

  private completeDial(index: number): void {
    const [{ from, by, address }] = this.dials.splice(index, 1) as [{ from: NodeId; by: PhoenixCore; address: string }]
    const core = this.cores.get(from)
    // The dialler crashed (and maybe restarted) meanwhile: the socket died with it.
    if (core === undefined || core !== by) return
    this.touched.add(core)
    const to = idOfAddress(address)
    const target = this.cores.get(to)
    if (target === undefined || !this.allowed(from, to) || from === to) {
      core.dialFailed(address, this.nowMs)
      this.log(`dial-failed ${from} ${address}`)
      return
    }
    const key = TestNet.key(from, to)
    const isNew = !this.connections.has(key)
    this.connections.add(key)
    core.connectionUp(to, this.nowMs, address)
    if (isNew) target.connectionUp(from, this.nowMs)
    this.touched.add(target)
    this.log(`up ${from} ${to}`)
  }

  /** Runs one random event; returns false when nothing is left to do. */
  runOne(): boolean {
    const busyLinks = this.links.busy()
    const busyCores = [...this.cores].filter(([, c]) => this.hasWork(c))
    const total = busyLinks.length + busyCores.length + this.dials.length
    if (total === 0) return false
    this.events++
    let pick = Math.floor(this.rand() * total)
    let event: string
    if (pick < busyLinks.length) {
      const [key, queue] = busyLinks[pick]!
      const [from, to] = key.split('>') as [NodeId, NodeId]
      const index = this.rand() < (this.options.reorder ?? 0) ? Math.floor(this.rand() * queue.length) : 0
      const message = queue[index]!
      if (this.rand() >= (this.options.duplicate ?? 0)) queue.splice(index, 1)
      const core = this.cores.get(to)
      // A full inbox refuses the message; it stays in flight until the node has stepped.
      if (core !== undefined && !core.receive(from, message, this.nowMs)) queue.splice(index, 0, message)
      this.links.changed(key)
      if (core !== undefined) this.touched.add(core)
      event = `deliver ${key}`
      this.log(event)
    } else if ((pick -= busyLinks.length) < busyCores.length) {
      const [id, core] = busyCores[pick]!
      this.applyEffects(id, core)
      event = `step ${id}`
    } else {
      pick -= busyCores.length
      this.completeDial(pick)
      event = 'dial'
    }
    this.eventDone()
    this.options.afterEvent?.(this, event)
    return true
  }

  /** The end of an event: the invariants of every core it touched must hold. */
  private eventDone(): void {
    for (const core of this.touched) this.busyCores?.delete(core)
    if (this.options.checkInvariants !== false) {
      for (const core of this.touched) core.checkInvariants()
      this.invariantChecks += this.touched.size
    }
    this.touched.clear()
  }

  advance(ms: number): void {
    this.nowMs += ms
  }

  /** Runs until nothing is in flight and no core has work (time-deferred retries aside). */
  runToQuiescence(maxEvents = 2_000_000): void {
    this.busyCores = new Map()
    try {
      while (this.runOne()) {
        if (this.events > maxEvents) throw new Error(`no quiescence after ${maxEvents} events (seed ${this.options.seed})`)
      }
    } finally {
      this.busyCores = undefined
    }
  }

  private hasWork(core: PhoenixCore): boolean {
    if (this.busyCores === undefined) return core.hasWork(this.nowMs)
    let busy = this.busyCores.get(core)
    if (busy === undefined) this.busyCores.set(core, (busy = core.hasWork(this.nowMs)))
    return busy
  }

  /**
   * Runs until nothing is left to do, letting time pass `rounds` times (dial back-offs and co-hub
   * waits expire: each round moves the clock 70 s, past dialBackoffMaxMs' default 60 s).
   */
  settle(rounds = 8): void {
    for (let round = 0; round < rounds; round++) {
      this.runToQuiescence()
      this.advance(70_000)
    }
    this.runToQuiescence()
  }

  /** Reachable entry of u for v, as the verifiers want it. */
  readonly lookup = (u: NodeId, v: NodeId): ValidRoute | undefined => {
    const r: RouteView | undefined = this.cores.get(u)?.route(v)
    return r !== undefined && r.reachable && r.fwd !== undefined ? { fwd: r.fwd, nhops: r.nhops } : undefined
  }
}

/** A random connected graph: a random spanning tree plus each other edge with probability `density`. */
export function randomConnectedGraph(n: number, density: number, rand: () => number): { nodes: NodeId[]; edges: Set<string>; parent: Map<NodeId, NodeId> } {
  const nodes = Array.from({ length: n }, (_, i) => `n${i}`)
  const edges = new Set<string>()
  const parent = new Map<NodeId, NodeId>()
  for (let i = 1; i < n; i++) {
    const p = nodes[Math.floor(rand() * i)]!
    parent.set(nodes[i]!, p)
    edges.add(TestNet.key(nodes[i]!, p))
  }
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) if (rand() < density) edges.add(TestNet.key(nodes[i]!, nodes[j]!))
  return { nodes, edges, parent }
}
