import { MASTER_DIALS_IN_FLIGHT_MAX, MASTER_REDIAL_AFTER_MS, MASTER_REDIALS_MAX } from '../constants.ts'
import { SimulationError } from '../errors.ts'
import { Graph } from '../graph.ts'
import type { Kernel } from '../kernel.ts'
import type { Network } from '../network.ts'
import type { Payload, SimNode, SimProcess, SimRoute } from '../process.ts'
import { estimateListBytes } from '../size.ts'

/**
 * The paper's "master" baseline (Figure 4), without DSDV: every process dials every other process
 * (MASTER_DIALS_IN_FLIGHT_MAX in flight, like the core), reports its neighbour list to the master
 * (the first gateway) once all its dials are done; the master computes all-pairs BFS routes and
 * sends each process its table. Its messages pay the same per-message and per-entry costs;
 * computing the routes costs one entry's work per route produced. Static scenarios only.
 */
export class MasterBaseline {
  /** The node that computes every table. */
  readonly masterIndex: number
  private readonly reports = new Map<number, readonly number[]>()
  private tablesApplied = 0
  /** Every process holds its table: the run is over. */
  done = false

  constructor(
    private readonly kernel: Kernel,
    private readonly network: Network,
  ) {
    if (kernel.scenario.events.length > 0) throw new SimulationError('UNSUPPORTED', 'scenario.events: the master baseline assumes static processes (as in the paper); run it without events')
    const gateway = kernel.nodes.find((n) => n.gateway)
    this.masterIndex = (gateway ?? kernel.nodes[0]!).index
  }

  /** The process of a node starting now. */
  processFor(node: SimNode): SimProcess {
    return new MasterProcess(node, this, this.kernel, this.network)
  }

  /** A process's neighbour list reached the master; once all are in, the master computes and sends every table. */
  receiveReport(master: SimNode, from: SimNode, neighbours: readonly number[]): void {
    const p = this.kernel.scenario.processing
    if (from !== master) this.kernel.charge(master, (p.perMessageUs + neighbours.length * p.perEntryUs) / 1000)
    this.reports.set(from.index, neighbours)
    if (this.reports.size < this.kernel.nodes.length) return
    const { fwd, nhops } = this.allPairsRoutes()
    const n = this.kernel.nodes.length
    // Computing the routes costs about one entry's work per route produced.
    this.kernel.charge(master, (n * (n - 1) * p.perEntryUs) / 1000)
    for (const node of this.kernel.nodes) {
      const departMs = this.kernel.charge(master, (p.perMessageUs + (n - 1) * p.perEntryUs) / 1000)
      const table: Payload = { t: 'table', fwd: fwd[node.index]!, nhops: nhops[node.index]! }
      if (node === master) master.process?.receive(master, table, this.kernel.nowMs)
      else this.network.send(master, node, table, departMs, n - 1, estimateListBytes(n - 1, node.id.length * 2, 2))
    }
  }

  /** A process applied its table (its CPU is busy until `doneMs`). */
  tableApplied(doneMs: number): void {
    const counters = this.kernel.counters
    counters.lastActivityMs = Math.max(counters.lastActivityMs, doneMs)
    if (++this.tablesApplied === this.kernel.nodes.length) this.done = true
  }

  /** All-pairs shortest paths over the union of reported connections: next hop and hops, -1 = none. */
  private allPairsRoutes(): { fwd: Int32Array[]; nhops: Int32Array[] } {
    const nodes = this.kernel.nodes
    const n = nodes.length
    const seen = new Set<string>()
    const edges: [number, number][] = []
    for (const [u, list] of this.reports) {
      for (const v of list) {
        const key = u < v ? `${u}|${v}` : `${v}|${u}`
        if (seen.has(key)) continue
        seen.add(key)
        edges.push([u, v])
      }
    }
    const graph = new Graph(n, edges)
    const fwd = nodes.map(() => new Int32Array(n).fill(-1))
    const nhops = nodes.map(() => new Int32Array(n).fill(-1))
    graph.forEachDestination((v, distTo, nextHopTo) => {
      for (let u = 0; u < n; u++) {
        const d = distTo(u)
        if (u === v || d < 0) continue
        fwd[u]![v] = nextHopTo(u)
        nhops[u]![v] = d
      }
    })
    return { fwd, nhops }
  }
}

/** One process of the master baseline: dial everyone, report, wait for its table. */
class MasterProcess implements SimProcess {
  private readonly targets: number[] = []
  private nextTarget = 0
  private dialsInFlight = 0
  private reported = false
  private masterRedials = 0
  private fwd: Int32Array | undefined
  private nhops: Int32Array | undefined

  constructor(
    private readonly node: SimNode,
    private readonly baseline: MasterBaseline,
    private readonly kernel: Kernel,
    private readonly network: Network,
  ) {
    const n = kernel.nodes.length
    // Start after oneself so that not everyone dials node 0 first.
    for (let k = 1; k < n; k++) this.targets.push((node.index + k) % n)
  }

  step(): void {
    const { kernel, node } = this
    const p = kernel.scenario.processing
    while (this.dialsInFlight < MASTER_DIALS_IN_FLIGHT_MAX && this.nextTarget < this.targets.length) {
      const target = kernel.nodes[this.targets[this.nextTarget++]!]!
      if (this.network.connected(node, target)) continue
      this.dialsInFlight++
      this.network.startDial(node, target.address, kernel.charge(node, p.perConnectionUs / 1000))
    }
    if (this.reported || this.dialsInFlight > 0 || this.nextTarget < this.targets.length) return
    const master = kernel.nodes[this.baseline.masterIndex]!
    if (node !== master && !this.network.connected(node, master)) {
      // Our dial reached the master before it started (startSpreadMs): the host refused it. Dial
      // again, as a process whose report must reach the master would.
      if (++this.masterRedials > MASTER_REDIALS_MAX) throw new SimulationError('UNSUPPORTED', `master baseline: ${node.id} has no connection to the master ${master.id} after ${MASTER_REDIALS_MAX} redials`)
      this.dialsInFlight++
      this.network.startDial(node, master.address, kernel.charge(node, p.perConnectionUs / 1000) + MASTER_REDIAL_AFTER_MS)
      return
    }
    this.reported = true
    const neighbours: number[] = []
    this.network.table.forEachOf(node.index, (peer) => neighbours.push(peer))
    neighbours.sort((x, y) => x - y)
    if (node === master) {
      this.baseline.receiveReport(node, node, neighbours)
      return
    }
    const departMs = kernel.charge(node, (p.perMessageUs + neighbours.length * p.perEntryUs) / 1000)
    this.network.send(node, master, { t: 'report', neighbours }, departMs, neighbours.length, estimateListBytes(neighbours.length, node.id.length, 0))
  }

  /** Its work happens as input arrives; the baseline says itself when it is done (`MasterBaseline.done`). */
  hasWork(): boolean {
    return false
  }

  receive(from: SimNode, payload: Payload): boolean {
    if (payload.t === 'report') this.baseline.receiveReport(this.node, from, payload.neighbours)
    else if (payload.t === 'table') this.applyTable(payload.fwd, payload.nhops)
    return true
  }

  private applyTable(fwd: Int32Array, nhops: Int32Array): void {
    const p = this.kernel.scenario.processing
    const doneMs = this.kernel.charge(this.node, (p.perMessageUs + (this.kernel.nodes.length - 1) * p.perEntryUs) / 1000)
    this.fwd = fwd
    this.nhops = nhops
    this.baseline.tableApplied(doneMs)
  }

  dialFailed(): void {
    this.dialsInFlight--
  }

  dialSucceeded(): void {
    this.dialsInFlight--
  }

  connectionUp(): void {}

  connectionDown(): void {}

  consecutiveDialFailures(): number {
    return 0
  }

  leave(): undefined {
    return undefined
  }

  route(v: SimNode): SimRoute | undefined {
    if (this.fwd === undefined || this.nhops === undefined) return undefined
    const f = this.fwd[v.index]!
    return f < 0 ? undefined : { fwd: this.kernel.nodes[f]!, nhops: this.nhops[v.index]!, seq: 0 }
  }
}
