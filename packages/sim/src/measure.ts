import { checkRoutesAgainstBfs, connectablePairs, type RouteCheckFailure } from '@phoenix-overlay/core'
import { CHECK_FAILURES_MAX, QUIET_COMPLETE_MS, REFERENCE_CHECK_NODES_MAX, SAMPLES_MAX, SAMPLE_HOPS_MAX } from './constants.ts'
import { Graph, checkRoutesFast } from './graph.ts'
import type { Kernel } from './kernel.ts'
import type { Network } from './network.ts'
import type { Prng } from '@phoenix-overlay/core/testing'
import type { SimNode, SimRoute } from './process.ts'
import { round3, type Sample } from './result.ts'

/** A test's hook into the final check: tamper with what the check sees, to prove it notices. */
export type RouteCorruption = (u: string, v: string, r: { fwd: string; nhops: number } | undefined) => { fwd: string; nhops: number } | undefined

export interface TableCheck {
  ok: boolean
  /** How the tables were checked; 'none': they were not (the run did not converge, so they are not final). */
  method: 'reference' | 'twin-classes' | 'none'
  failures: RouteCheckFailure[]
}

/** The final connection graph (`Measurement.finalPairs`): the live nodes, each node index's position among them (-1: not live), and the open connections as pairs of positions, flattened. */
export interface FinalPairs {
  readonly live: readonly SimNode[]
  readonly positionOf: Int32Array
  readonly pairs: Int32Array
}

/** The final state in the shape `--dump-tables` documents, for independent verification. */
export interface TableDump {
  nodes: { id: string; subnet: string; gateway: boolean; alive: boolean }[]
  connections: [string, string][]
  tables: Record<string, Record<string, { fwd: string; nhops: number; seq: number }>>
}

/**
 * What a run measures, apart from what it counts: reachability samples over time (Figures 5–6),
 * the end of the run (quiet), the final connection graph, the check of every table against BFS
 * shortest paths in it, and the table dump.
 */
export class Measurement {
  readonly samples: Sample[] = []
  samplingStopped = false
  /** False after a liveness change that activity does not record (a crash): the next sample is taken. */
  samplesSkippable = true
  /** The sampled ordered pairs as node indices, source then destination (a pair of ints each, not an array each: up to samplePairsMax pairs). */
  private samplePairs = new Int32Array(0)

  constructor(
    private readonly kernel: Kernel,
    private readonly network: Network,
  ) {}

  /** Node `u`'s valid route to `v` as (next hop, hops), from whatever runs on it. */
  routeOf(u: SimNode, v: SimNode): SimRoute | undefined {
    return u.process?.route(v)
  }

  /** The ordered pairs every sample walks: all of them up to samplePairsMax, a seeded sample beyond. */
  choosePairs(rng: Prng): void {
    const nodes = this.kernel.nodes
    const n = nodes.length
    const max = this.kernel.scenario.samplePairsMax
    if (n * (n - 1) <= max) {
      const pairs = (this.samplePairs = new Int32Array(2 * n * (n - 1)))
      let at = 0
      for (let u = 0; u < n; u++) {
        for (let v = 0; v < n; v++) {
          if (u === v) continue
          pairs[at++] = nodes[u]!.index
          pairs[at++] = nodes[v]!.index
        }
      }
      return
    }
    // Drawn as u·n + v, then sorted: walked grouped by source, consecutive walks start in the same
    // core's table, which stays in the processor's cache (a sample is a sum over the pairs, whatever
    // their order). In the order drawn, every walk began with cache misses: at 2,000 processes the
    // samples were 7% of the run.
    const keys = new Float64Array(max)
    for (let i = 0; i < max; i++) {
      const u = rng.int(n)
      let v = rng.int(n - 1)
      if (v >= u) v++
      keys[i] = nodes[u]!.index * n + nodes[v]!.index
    }
    keys.sort()
    this.samplePairs = new Int32Array(2 * max)
    for (let i = 0; i < max; i++) {
      this.samplePairs[2 * i] = Math.floor(keys[i]! / n)
      this.samplePairs[2 * i + 1] = keys[i]! % n
    }
  }

  /** Takes a reachability sample now, unless nothing happened since the last one (`force`: take it anyway). */
  sample(force = false): void {
    // Tables change only through activity; with none since the last sample this one would be
    // identical, so it is skipped (the series is a step function between recorded samples).
    const previous = this.samples.at(-1)
    if (!force && previous !== undefined && this.kernel.counters.lastActivityMs < previous.tMs && this.samplesSkippable) return
    this.samplesSkippable = true
    if (this.samples.length >= SAMPLES_MAX) {
      this.samplingStopped = true
      return
    }
    let pairs = 0
    let reachable = 0
    let hops = 0
    const nodes = this.kernel.nodes
    const sampled = this.samplePairs
    for (let i = 0; i < sampled.length; i += 2) {
      const u = nodes[sampled[i]!]!
      const v = nodes[sampled[i + 1]!]!
      if (!u.alive || !v.alive) continue
      pairs++
      const h = this.hopsAlongRoutes(u, v)
      if (h !== undefined) {
        reachable++
        hops += h
      }
    }
    this.samples.push({ tMs: round3(this.kernel.nowMs), reachableFraction: pairs === 0 ? 0 : reachable / pairs, meanHops: reachable === 0 ? 0 : hops / reachable, pairs })
  }

  /** Hops from `u` to `v` following each node's route over open connections, or undefined if the walk does not arrive. */
  private hopsAlongRoutes(u: SimNode, v: SimNode): number | undefined {
    let at = u
    let h = 0
    while (at !== v && h < SAMPLE_HOPS_MAX) {
      const process = at.process
      const fwd = process === undefined ? undefined : process.nextHop !== undefined ? process.nextHop(v) : process.route(v)?.fwd
      if (fwd === undefined || !this.network.connected(at, fwd)) break
      at = fwd
      h++
    }
    return at === v ? h : undefined
  }

  /**
   * The run is over when nothing is in flight and either (a) every pair of live nodes the firewall
   * allows is connected and nothing happened for a send hold plus QUIET_COMPLETE_MS, or (b)
   * nothing happened for quietMs and no address is being dialled for the first time (discovery is
   * exhausted; the graph stays incomplete, which the result reports as connectionsMissing).
   * `masterDone`: the master baseline's own end (undefined for the other strategies).
   */
  isQuiet(masterDone: boolean | undefined): boolean {
    const { counters, scenario, nowMs } = this.kernel
    // A node whose start is still due (startSpreadMs) has yet to join: a run that ended before ended with nodes never started (found by a new user).
    if (counters.scenarioEventsLeft > 0 || counters.startsLeft > 0 || counters.inFlight > 0 || counters.held > 0 || counters.goodDialsPending > 0) return false
    if (masterDone !== undefined) return masterDone
    const live = this.kernel.nodes.filter((n) => n.alive)
    let quiet = counters.firstDialsPending === 0 && nowMs >= counters.lastActivityMs + scenario.quietMs
    if (!quiet && this.connectionsMissing(live, counters.openConnections) === 0) {
      // Sends held for dials, and a hub's round waiting for its co-hubs, pass for quiet otherwise.
      const hold = (scenario.coreTiming.sendHoldForDialsMs ?? 0) + (scenario.coreTiming.coHubWaitMs ?? 0)
      quiet = nowMs >= counters.lastActivityMs + hold + QUIET_COMPLETE_MS
    }
    // Nothing on the wire is not enough: an update delivered to a node still busy with earlier work
    // waits in its inbox (the offline baseline at 700 processes ended with a gateway's only copy of
    // a neighbour's record unread), and a node has yet to notice a connection that died (a crash,
    // a failed link: crashDetectMs later), whose routes it still uses. Asked last: it visits every node.
    return quiet && !live.some((n) => n.pendingDown.size > 0 || n.process?.hasWork(nowMs) === true)
  }

  /** Allowed pairs of live nodes (`live`) that are not connected, given `connected` open connections among them. */
  connectionsMissing(live: readonly SimNode[], connected: number): number {
    return connectablePairs(live) - this.network.failedAllowedLinks() - connected
  }

  /** Live nodes and the open connections among them, for the final check and the table dump. */
  finalGraph(): { live: SimNode[]; edges: [SimNode, SimNode][] } {
    const live = this.kernel.nodes.filter((n) => n.alive)
    const { pairs } = this.finalPairs(live)
    const edges: [SimNode, SimNode][] = []
    for (let i = 0; i < pairs.length; i += 2) edges.push([live[pairs[i]!]!, live[pairs[i + 1]!]!])
    return { live, edges }
  }

  /**
   * Checks every live node's table against BFS shortest paths in the final connection graph:
   * core's reference checker up to REFERENCE_CHECK_NODES_MAX nodes, the twin-class checker beyond.
   */
  checkTables(corrupt?: RouteCorruption, method: 'auto' | 'reference' | 'twin-classes' = 'auto', final?: FinalPairs): TableCheck {
    const live = final?.live ?? this.kernel.nodes.filter((n) => n.alive)
    const lookup = (u: SimNode, v: SimNode): { fwd: string; nhops: number } | undefined => {
      const r = this.routeOf(u, v)
      const view = r === undefined ? undefined : { fwd: r.fwd.id, nhops: r.nhops }
      return corrupt === undefined ? view : corrupt(u.id, v.id, view)
    }
    if (method === 'reference' || (method === 'auto' && live.length <= REFERENCE_CHECK_NODES_MAX)) {
      const { edges } = this.finalGraph()
      const failures = checkRoutesAgainstBfs(
        live.map((n) => n.id),
        edges.map(([a, b]) => [a.id, b.id] as const),
        (u, v) => lookup(this.kernel.node(u), this.kernel.node(v)),
        CHECK_FAILURES_MAX,
      )
      return { ok: failures.length === 0, method: 'reference', failures }
    }
    const { positionOf, pairs } = final ?? this.finalPairs(live)
    const graph = new Graph(live.length, pairs)
    const failures = checkRoutesFast(graph, live.map((n) => n.id), this.routeByPosition(live, positionOf, lookup, corrupt !== undefined), CHECK_FAILURES_MAX)
    return { ok: failures.length === 0, method: 'twin-classes', failures }
  }

  /**
   * The open connections among `live` as pairs of positions in it (flattened, the lower node
   * index first), and each node index's position (-1: not live). Two numbers per connection, where
   * an array for each was 860,000 arrays at 2,000 processes in three subnets (`finalGraph` makes
   * them from these, for the reference check and the table dump).
   */
  finalPairs(live: readonly SimNode[]): FinalPairs {
    const nodes = this.kernel.nodes
    const positionOf = new Int32Array(nodes.length).fill(-1)
    live.forEach((n, i) => (positionOf[n.index] = i))
    let linksTotal = 0
    const { table } = this.network
    for (const u of live) linksTotal += table.degree(u.index)
    // Two numbers per connection, each counted at both its ends in linksTotal: at most linksTotal
    // numbers (twice that was 400 MB too many at 10,000 processes in one subnet); one pass over
    // the links, and the unused tail (connections to nodes not live) cut off.
    const pairs = new Int32Array(linksTotal)
    let at = 0
    for (const u of live) {
      table.forEachOf(u.index, (v) => {
        if (u.index >= v || positionOf[v]! < 0) return
        pairs[at++] = positionOf[u.index]!
        pairs[at++] = positionOf[v]!
      })
    }
    return { live, positionOf, pairs: pairs.subarray(0, at) }
  }

  /**
   * The twin-class check's view of routes, by position in `live`: `lookup`'s answers. Unless a
   * test `tampered` with them, and where every live process tells next hop and hops by number,
   * it builds no route: one scratch answer is refilled per pair (the checker reads it before
   * asking for the next), where a route and its views were four objects a pair, 16 million at
   * 2,000 processes.
   */
  private routeByPosition(live: readonly SimNode[], positionOf: Int32Array, lookup: (u: SimNode, v: SimNode) => { fwd: string; nhops: number } | undefined, tampered: boolean): (u: number, v: number) => { fwd: number; nhops: number } | undefined {
    const numeric = !tampered && live.every((n) => n.process?.nextHop !== undefined && n.process.hopsTo !== undefined)
    if (!numeric) {
      return (u, v) => {
        const r = lookup(live[u]!, live[v]!)
        if (r === undefined) return undefined
        const f = this.kernel.byId.get(r.fwd)
        return { fwd: f === undefined ? -1 : positionOf[f.index]!, nhops: r.nhops }
      }
    }
    const scratch = { fwd: -1, nhops: 0 }
    return (u, v) => {
      const process = live[u]!.process!
      const target = live[v]!
      const fwd = process.nextHop!(target)
      if (fwd === undefined) return undefined
      scratch.fwd = positionOf[fwd.index]!
      scratch.nhops = process.hopsTo!(target)
      return scratch
    }
  }

  dumpTables(): TableDump {
    const { live, edges } = this.finalGraph()
    const tables: TableDump['tables'] = {}
    for (const u of live) {
      const table: TableDump['tables'][string] = {}
      for (const v of this.kernel.nodes) {
        if (v === u) continue
        const r = this.routeOf(u, v)
        if (r !== undefined) table[v.id] = { fwd: r.fwd.id, nhops: r.nhops, seq: r.seq }
      }
      tables[u.id] = table
    }
    return {
      nodes: this.kernel.nodes.map((n) => ({ id: n.id, subnet: this.kernel.scenario.subnets[n.subnet]!.name, gateway: n.gateway, alive: n.alive })),
      connections: edges.map(([a, b]) => [a.id, b.id]),
      tables,
    }
  }
}
