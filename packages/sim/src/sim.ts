import { SharedNumbering, type UpdateMessage } from '@phoenix-overlay/core'
import { encodedUpdateSize } from '@phoenix-overlay/wire'
import { MasterBaseline } from './baselines/master.ts'
import { EVENTS_PER_RUN_MAX, PRNG_SALTS, PROGRESS_EVERY_EVENTS, QUIET_CHECK_EVERY_MS, SHARED_NUMBERING_NODES_MAX } from './constants.ts'
import { CoreProcess, NumberedNodes, coreConfigFor, type CoreProcessEnv, type UpdateSizer } from './core-process.ts'
import { SimulationError } from './errors.ts'
import { DELIVERY, Kernel, type SimEvent } from './kernel.ts'
import { Lifecycle } from './lifecycle.ts'
import { Measurement, type RouteCorruption, type TableCheck, type TableDump } from './measure.ts'
import { Network } from './network.ts'
import { Prng } from '@phoenix-overlay/core/testing'
import { createNodes, type Payload, type SimNode, type SimProcess, type SimRoute } from './process.ts'
import { assembleResult, round3, type SimResult } from './result.ts'
import { checkNodesCanMeet, type Scenario } from './scenario.ts'

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

type Handlers = { readonly [K in SimEvent['k']]: (event: Extract<SimEvent, { k: K }>) => void }

/**
 * The discrete-event simulator: many nodes in one process, in virtual time, over a network of
 * subnets, a firewall and per-link latency and bandwidth, each node charged a processing cost for
 * what its process does. Deterministic: the only randomness is a PRNG seeded from the scenario.
 * This class is the event loop; the network model, the processes (our core, the baselines), the
 * nodes' lifecycle, the measurements and the result each have their own module.
 */
export class Simulation {
  readonly nodes: SimNode[]
  private readonly kernel: Kernel
  private readonly rng: Prng
  /** The network model: firewall, dials, connections (read by tests). */
  readonly network: Network
  private readonly measurement: Measurement
  private readonly lifecycle: Lifecycle
  private readonly master: MasterBaseline | undefined
  private readonly bytesModel: string
  private events = 0
  private finished = false
  private converged = false

  constructor(
    readonly scenario: Scenario,
    options: RunOptions = {},
  ) {
    checkNodesCanMeet(scenario)
    this.rng = new Prng(scenario.seed)
    this.nodes = createNodes(scenario)
    this.kernel = new Kernel(scenario, this.nodes, options.trace)
    this.network = new Network(this.kernel)
    this.measurement = new Measurement(this.kernel, this.network)
    const numbering = new SharedNumbering(SHARED_NUMBERING_NODES_MAX)
    // Every core's table and address book will hold about every node and its one address: sized
    // for them at once, not doubled up to them as the processes join (a hint; nothing is bounded by it).
    numbering.index.expected = this.nodes.length
    numbering.addresses.expected = this.nodes.length
    const env: CoreProcessEnv = {
      kernel: this.kernel,
      network: this.network,
      sizeOfUpdate: options.sizeOfUpdate ?? encodedUpdateSize,
      numbering,
      numbered: new NumberedNodes(this.kernel, numbering),
    }
    this.bytesModel = options.bytesModel ?? (options.sizeOfUpdate === undefined ? 'updates: @phoenix-overlay/wire encodedUpdateSize; master reports/tables: estimate (packages/sim/src/size.ts)' : 'custom')
    const processFor = (node: SimNode): SimProcess => this.master?.processFor(node) ?? new CoreProcess(node, env, coreConfigFor(node, this.kernel))
    this.lifecycle = new Lifecycle(this.kernel, this.network, this.measurement, processFor, this.rng)
    this.master = scenario.strategy === 'master' ? new MasterBaseline(this.kernel, this.network) : undefined
    this.lifecycle.checkSelections()
  }

  /** The virtual time. */
  get nowMs(): number {
    return this.kernel.nowMs
  }

  /** Node `u`'s valid route to `v` as (next hop, hops), from its core or master table. */
  routeOf(u: SimNode, v: SimNode): SimRoute | undefined {
    return this.measurement.routeOf(u, v)
  }

  /** Live nodes and the open connections among them, for the final check and the table dump. */
  finalGraph(): { live: SimNode[]; edges: [SimNode, SimNode][] } {
    return this.measurement.finalGraph()
  }

  /**
   * Checks every live node's table against BFS shortest paths in the final connection graph.
   * `corrupt` lets a test tamper with what the check sees, to prove the check notices.
   */
  checkTables(corrupt?: RouteCorruption, method: 'auto' | 'reference' | 'twin-classes' = 'auto'): TableCheck {
    return this.measurement.checkTables(corrupt, method)
  }

  /** The final state in the shape `--dump-tables` documents, for independent verification. */
  dumpTables(): TableDump {
    return this.measurement.dumpTables()
  }

  run(options: RunOptions = {}): SimResult {
    if (this.finished) throw new SimulationError('UNSUPPORTED', 'a Simulation runs once; create a new one')
    this.scheduleStart()
    const handlers = this.handlers()
    const { kernel, scenario } = this
    const queue = kernel.queue
    while (queue.size > 0) {
      const timeMs = queue.peekTime()!
      const tag = queue.peekTag()
      const item = queue.take()
      if (timeMs > scenario.endMs) {
        kernel.nowMs = scenario.endMs
        break
      }
      kernel.nowMs = timeMs
      if (++this.events > EVENTS_PER_RUN_MAX) throw new SimulationError('LIMIT_EXCEEDED', `more than ${EVENTS_PER_RUN_MAX} events (EVENTS_PER_RUN_MAX)`)
      if (this.events % PROGRESS_EVERY_EVENTS === 0) options.onProgress?.(kernel.nowMs, this.events, this.reachableFraction())
      // A delivery is its payload under a tag (kernel.ts deliveryTag); the rest are event objects.
      if (tag > 0) this.deliver(tag, item as Payload | UpdateMessage)
      else (handlers[(item as SimEvent).k] as (event: SimEvent) => void)(item as SimEvent)
      if (this.converged) break
    }
    this.finished = true
    const { measurement } = this
    if (this.converged && measurement.samples.at(-1)?.tMs !== round3(kernel.nowMs)) measurement.sample(true)
    options.onProgress?.(kernel.nowMs, this.events, this.reachableFraction())
    return this.result()
  }

  /** A delivery is due: its connection, direction and kind from its tag (kernel.ts `deliveryTag`). */
  private deliver(tag: number, item: Payload | UpdateMessage): void {
    const payload: Payload = DELIVERY.update(tag) ? { t: 'update', message: item as UpdateMessage } : (item as Payload)
    this.network.onDeliver(DELIVERY.conn(tag), DELIVERY.toB(tag), payload)
  }

  private reachableFraction(): number {
    return this.measurement.samples.at(-1)?.reachableFraction ?? 0
  }

  /** Every node not held back by a `join` starts (spread over startSpreadMs); scenario events, sampling and the end check are scheduled. */
  private scheduleStart(): void {
    const { kernel, scenario: s } = this
    const startRng = this.rng.fork(PRNG_SALTS.startTimes)
    const joiners = this.lifecycle.joiners()
    for (const node of this.nodes) {
      if (joiners.has(node)) continue
      kernel.schedule(s.startSpreadMs > 0 ? startRng.next() * s.startSpreadMs : 0, { k: 'start', node, first: true })
      kernel.counters.startsLeft++
    }
    s.events.forEach((e, index) => kernel.schedule(e.atMs, { k: 'scenario', index }))
    this.measurement.choosePairs(this.rng.fork(PRNG_SALTS.samplePairs))
    kernel.schedule(0, { k: 'sample' })
    kernel.schedule(QUIET_CHECK_EVERY_MS, { k: 'quiet' })
  }

  /** Which part of the simulator each kind of event goes to. */
  private handlers(): Handlers {
    const { kernel, network, measurement, lifecycle } = this
    return {
      step: (e) => kernel.onStep(e, (node) => network.retryHeld(node)),
      dial: (e) => network.onDialDone(e),
      down: (e) => network.onDown(e),
      close: (e) => network.onClose(e),
      start: (e) => {
        if (e.first === true) kernel.counters.startsLeft--
        lifecycle.start(e.node)
      },
      scenario: (e) => lifecycle.onScenarioEvent(e.index),
      sample: () => {
        measurement.sample()
        if (!measurement.samplingStopped) kernel.schedule(kernel.nowMs + this.scenario.sampleEveryMs, { k: 'sample' })
      },
      quiet: () => {
        if (measurement.isQuiet(this.master?.done)) this.converged = true
        else kernel.schedule(kernel.nowMs + QUIET_CHECK_EVERY_MS, { k: 'quiet' })
      },
    }
  }

  private result(): SimResult {
    const { kernel, measurement, scenario: s } = this
    const final = measurement.finalPairs(kernel.nodes.filter((n) => n.alive))
    const { live } = final
    const connections = final.pairs.length / 2
    const check: TableCheck = this.converged ? measurement.checkTables(undefined, 'auto', final) : { ok: false, method: 'none', failures: [{ node: '-', destination: '-', problem: `not converged by endMs ${s.endMs}: tables not checked` }] }
    return assembleResult(s, this.nodes.length, kernel.counters, {
      converged: this.converged,
      endedAtMs: kernel.nowMs,
      events: this.events,
      eventsSkipped: this.lifecycle.eventsSkipped,
      connections,
      connectionsMissing: measurement.connectionsMissing(live, connections),
      check,
      samples: measurement.samples,
      samplingStopped: measurement.samplingStopped,
      bytesModel: this.bytesModel,
    })
  }
}

/** Parses, runs and checks in one call (what the CLI and the figure script use). */
export function simulate(scenario: Scenario, options: RunOptions = {}): { sim: Simulation; result: SimResult } {
  const sim = new Simulation(scenario, options)
  const result = sim.run(options)
  return { sim, result }
}
