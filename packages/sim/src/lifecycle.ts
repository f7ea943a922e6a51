import { invariant } from '@phoenix-overlay/core'
import { PRNG_SALTS } from './constants.ts'
import { SimulationError } from './errors.ts'
import type { Kernel } from './kernel.ts'
import type { Measurement } from './measure.ts'
import type { Network } from './network.ts'
import type { Prng } from '@phoenix-overlay/core/testing'
import type { SimNode, SimProcess } from './process.ts'
import type { NodeSelection, ScenarioEvent } from './scenario.ts'

/**
 * Nodes coming and going: start (and restart), crash, graceful leave, and the scenario's events
 * (which also fail and heal links). Selections by fraction or count pick non-gateway nodes from
 * one seeded permutation per run, so `crash {fraction: 0.5}` and `restart {fraction: 0.5}` pick
 * the same nodes.
 */
export class Lifecycle {
  /** One fixed order of non-gateway nodes per subnet (and overall, key '') for fraction/count selections. */
  private readonly selectionOrder = new Map<string, SimNode[]>()
  readonly eventsSkipped: string[] = []

  constructor(
    private readonly kernel: Kernel,
    private readonly network: Network,
    private readonly measurement: Measurement,
    /** What runs on a node that starts now (the strategy's process). */
    private readonly processFor: (node: SimNode) => SimProcess,
    rng: Prng,
  ) {
    const orderRng = rng.fork(PRNG_SALTS.selectionOrder)
    const all: SimNode[] = []
    kernel.scenario.subnets.forEach((subnet, s) => {
      const pool = orderRng.shuffle(kernel.nodes.filter((n) => n.subnet === s && !n.gateway))
      this.selectionOrder.set(subnet.name, pool)
      all.push(...pool)
    })
    this.selectionOrder.set('', orderRng.shuffle(all))
  }

  /** Resolves every selection of the scenario now, so a bad id fails before the run starts. */
  checkSelections(): void {
    this.kernel.scenario.events.forEach((e, i) => {
      if ('between' in e) e.between.forEach((id, j) => this.nodeById(id, `events[${i}].between[${j}]`))
      else this.select(e.nodes, `events[${i}].nodes`)
    })
  }

  /** Nodes a `join` event starts: they do not start at the beginning. */
  joiners(): Set<SimNode> {
    const held = new Set<SimNode>()
    for (const e of this.kernel.scenario.events) if (e.type === 'join' && 'nodes' in e) for (const n of this.select(e.nodes, 'events')) held.add(n)
    return held
  }

  private nodeById(id: string, field: string): SimNode {
    const node = this.kernel.byId.get(id)
    if (node === undefined) throw new SimulationError('INVALID_SCENARIO', `scenario.${field}: no node ${JSON.stringify(id)} (ids are <subnet>-<number>, e.g. ${this.kernel.nodes[0]!.id})`)
    return node
  }

  private select(selection: NodeSelection, field: string): SimNode[] {
    if (Array.isArray(selection)) return (selection as readonly string[]).map((id, j) => this.nodeById(id, `${field}[${j}]`))
    const spec = selection as { fraction?: number; count?: number; subnet?: string }
    const pool = this.selectionOrder.get(spec.subnet ?? '')
    invariant(pool !== undefined, 'a checked selection names a subnet of the scenario')
    const count = spec.fraction !== undefined ? Math.round(spec.fraction * pool.length) : (spec.count ?? 0)
    if (count > pool.length) throw new SimulationError('INVALID_SCENARIO', `scenario.${field}.count: ${count} nodes asked, only ${pool.length} non-gateway nodes to pick from`)
    return pool.slice(0, count)
  }

  /** Starts (or restarts) `node` with a new process. */
  start(node: SimNode): void {
    if (node.alive) return
    // Connections of a previous incarnation still closing (after a graceful leave) end now, and
    // its pending notices of dead connections go with it: their events, due later, are the old
    // incarnation's and are dropped, so one left here stayed pending for good (a run restarted in
    // the millisecond its link failed never ended).
    for (const conn of this.network.table.slotsOf(node.index)) this.network.closeConnection(conn, true)
    node.pendingDown.clear()
    node.alive = true
    node.everStarted = true
    node.incarnation++
    node.busyUntilMs = this.kernel.nowMs
    node.stepAtMs = Number.POSITIVE_INFINITY
    node.process = this.processFor(node)
    this.kernel.activity()
    this.kernel.kick(node)
  }

  /** The node vanishes: its connections are gone, its neighbours notice after crashDetectMs. */
  crash(node: SimNode): void {
    this.measurement.samplesSkippable = false
    node.alive = false
    node.process = undefined
    node.pendingDown.clear()
    for (const conn of this.network.table.slotsOf(node.index)) this.network.closeConnection(conn, false)
    node.heldOn.clear()
  }

  /** Farewells go out, then each connection closes once its farewell has arrived. */
  leave(node: SimNode): void {
    const lastArrival = node.process?.leave(this.kernel.nowMs)
    if (lastArrival === undefined) {
      this.crash(node)
      return
    }
    node.alive = false
    node.process = undefined
    const { table } = this.network
    table.forEachOf(node.index, (peer, conn) => {
      table.retain(conn)
      this.kernel.schedule(lastArrival.get(peer) ?? this.kernel.nowMs, { k: 'close', conn })
    })
  }

  /**
   * The scenario's event number `index` is due. An event that changes nothing (a heal of a link
   * that never failed, a selection of no node, a crash of nodes already down) is listed in
   * `eventsSkipped` and is not routing activity: it moves neither `convergenceMs` nor
   * `lastScenarioEventMs`.
   */
  onScenarioEvent(index: number): void {
    const { kernel } = this
    const e: ScenarioEvent | undefined = kernel.scenario.events[index]
    invariant(e !== undefined, 'a scheduled scenario event exists')
    kernel.counters.scenarioEventsLeft--
    const changed = 'between' in e ? this.onLinkEvent(index, e.type === 'linkFail', e.between) : this.onNodesEvent(index, e)
    if (!changed) return
    kernel.counters.lastScenarioEventMs = kernel.nowMs
    kernel.activity()
  }

  private onLinkEvent(index: number, fail: boolean, between: readonly [string, string]): boolean {
    const [a, b] = between.map((id) => this.kernel.node(id)) as [SimNode, SimNode]
    const changed = this.network.setLinkFailed(a, b, fail)
    if (!changed) this.eventsSkipped.push(`events[${index}] ${fail ? 'linkFail' : 'linkHeal'} ${a.id} ${b.id}: already ${fail ? 'failed' : 'healthy'}`)
    return changed
  }

  private onNodesEvent(index: number, e: Extract<ScenarioEvent, { nodes: NodeSelection }>): boolean {
    const selected = this.select(e.nodes, `events[${index}].nodes`)
    if (selected.length === 0) this.eventsSkipped.push(`events[${index}] ${e.type}: selects no node`)
    let changed = false
    for (const node of selected) {
      const wantAlive = e.type === 'join' || e.type === 'restart'
      if (node.alive === wantAlive) {
        this.eventsSkipped.push(`events[${index}] ${e.type} ${node.id}: already ${node.alive ? 'running' : 'down'}`)
        continue
      }
      changed = true
      if (e.type === 'crash') this.crash(node)
      else if (e.type === 'leave') this.leave(node)
      else this.start(node)
    }
    return changed
  }
}
