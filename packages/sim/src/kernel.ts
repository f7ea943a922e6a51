import { invariant, type UpdateMessage } from '@phoenix-overlay/core'
import { EventQueue } from './heap.ts'
import type { LinkSlot } from './links.ts'
import type { Payload, SimNode } from './process.ts'
import type { Scenario } from './scenario.ts'

/** Everything that can happen in a run, in virtual time; `sim.ts` hands each kind to its handler. */
export type SimEvent =
  | { readonly k: 'step'; readonly node: SimNode; readonly token: number }
  | { readonly k: 'dial'; readonly node: SimNode; readonly incarnation: number; readonly address: string; readonly target: SimNode | undefined; readonly ok: boolean; readonly first: boolean }
  | { readonly k: 'down'; readonly node: SimNode; readonly incarnation: number; readonly peer: SimNode; readonly connId: number }
  | { readonly k: 'scenario'; readonly index: number }
  | { readonly k: 'start'; readonly node: SimNode; readonly first?: boolean }
  | { readonly k: 'close'; readonly conn: LinkSlot }
  | { readonly k: 'sample' }
  | { readonly k: 'quiet' }

/**
 * A delivery's tag in the event queue: 1 + 4·slot + 2 if the item is a bare core update (its
 * `Payload` made only when it is delivered) + 1 if it goes to the connection's `b` end; 0 tags the
 * other events, which are objects. Slots stay below NODES_MAX²/2, so the tag fits an int32.
 */
export function deliveryTag(conn: LinkSlot, toB: boolean, update: boolean): number {
  return 1 + 4 * conn + (update ? 2 : 0) + (toB ? 1 : 0)
}

/** What a delivery's tag (`deliveryTag`, > 0) says: its connection, whether to `b`, whether a bare core update. */
export const DELIVERY = {
  conn: (tag: number): LinkSlot => (tag - 1) >> 2,
  toB: (tag: number): boolean => ((tag - 1) & 1) === 1,
  update: (tag: number): boolean => ((tag - 1) & 2) === 2,
} as const

/** What a run counts as it goes; the result is assembled from it (`result.ts`). */
export interface SimCounters {
  messages: number
  entries: number
  bytes: number
  messagesLost: number
  recordSigns: number
  recordVerifications: number
  dialsStarted: number
  dialsFailed: number
  /** Payloads on the wire now. */
  inFlight: number
  /** Payloads held on links because a full inbox refused them. */
  held: number
  /** Dials in flight that will succeed. */
  goodDialsPending: number
  openConnections: number
  /** Dials in flight to addresses never tried before: while any is, discovery is not done. */
  firstDialsPending: number
  /** Virtual time of the last routing activity (an update applied, a connection change, a master table applied). */
  lastActivityMs: number
  lastScenarioEventMs: number
  scenarioEventsLeft: number
  /** First starts still due (nodes spread over startSpreadMs): while any is, the run is not quiet. */
  startsLeft: number
}

/**
 * The simulator's kernel: the virtual clock, the event queue, the nodes (by index, id and
 * address) and their CPUs. A node is busy for what it was charged; `kick` wakes it as soon as it
 * is free. Every other part of the simulator acts through it.
 */
export class Kernel {
  nowMs = 0
  /** Events, and deliveries as their payload alone, tagged `deliveryTag` (`scheduleDelivery`). */
  readonly queue = new EventQueue<SimEvent | Payload | UpdateMessage>()
  readonly byId = new Map<string, SimNode>()
  readonly byAddress = new Map<string, SimNode>()
  readonly counters: SimCounters

  constructor(
    readonly scenario: Scenario,
    readonly nodes: readonly SimNode[],
    /** Connection events (dial outcomes, ups, downs) with the virtual time; for tests and debugging. */
    readonly trace: ((timeMs: number, line: string) => void) | undefined,
  ) {
    for (const node of nodes) {
      this.byAddress.set(node.address, node)
      this.byId.set(node.id, node)
    }
    this.counters = {
      messages: 0,
      entries: 0,
      bytes: 0,
      messagesLost: 0,
      recordSigns: 0,
      recordVerifications: 0,
      dialsStarted: 0,
      dialsFailed: 0,
      inFlight: 0,
      held: 0,
      goodDialsPending: 0,
      openConnections: 0,
      firstDialsPending: 0,
      lastActivityMs: 0,
      lastScenarioEventMs: 0,
      scenarioEventsLeft: scenario.events.length,
      startsLeft: 0,
    }
  }

  schedule(atMs: number, event: SimEvent): void {
    this.queue.push(atMs, event)
  }

  /**
   * `item` arrives on connection `conn` at its `b` end (`toB`) or its `a` end at `atMs`: queued
   * as itself under a tag (deliveryTag), no event object per message, and a core's update
   * (`update`) bare, without its `Payload`. A one-subnet run holds every hello of its burst in
   * the queue at once (1,000 processes: 998,470 events), each as long as hundreds of young
   * collections: two objects fewer per message to copy and to mark.
   */
  scheduleDelivery(atMs: number, conn: LinkSlot, toB: boolean, item: Payload | UpdateMessage, update: boolean): void {
    this.queue.push(atMs, item, deliveryTag(conn, toB, update))
  }

  /** The node is busy for `costMs` more, after whatever it was already doing; returns when it is free. */
  charge(node: SimNode, costMs: number): number {
    node.busyUntilMs = Math.max(this.nowMs, node.busyUntilMs) + costMs
    return node.busyUntilMs
  }

  /** Wakes `node` at `atMs` or as soon as it is free after that (at most one wake-up pending per node). */
  kick(node: SimNode, atMs = this.nowMs): void {
    if (!node.alive) return
    const at = Math.max(atMs, node.busyUntilMs)
    if (node.stepAtMs <= at) return
    node.stepAtMs = at
    this.schedule(at, { k: 'step', node, token: ++node.stepToken })
  }

  /** Routing activity now: the run is not quiet yet. */
  activity(): void {
    this.counters.lastActivityMs = this.nowMs
  }

  /** The node with id `id`, which a core or the scenario named: it must exist. */
  node(id: string): SimNode {
    const node = this.byId.get(id)
    invariant(node !== undefined, `a simulated node ${id} exists`)
    return node
  }

  /** The step event: the node is free (or reschedules itself until it is) and its process works once. */
  onStep(e: Extract<SimEvent, { k: 'step' }>, retryHeld: (node: SimNode) => void): void {
    const node = e.node
    if (e.token !== node.stepToken || !node.alive) return
    node.stepAtMs = Number.POSITIVE_INFINITY
    if (this.nowMs < node.busyUntilMs) {
      this.kick(node)
      return
    }
    node.process?.step(this.nowMs)
    if (node.heldOn.size > 0) {
      retryHeld(node)
      this.kick(node)
    }
  }
}
