import type { UpdateMessage } from '@phoenix-overlay/core'
import type { LinkSlot } from './links.ts'
import type { Scenario } from './scenario.ts'

/** What travels on a simulated connection: a core's update, or the master baseline's report and table. */
export type Payload =
  | { readonly t: 'update'; readonly message: UpdateMessage }
  | { readonly t: 'report'; readonly neighbours: readonly number[] }
  | { readonly t: 'table'; readonly fwd: Int32Array; readonly nhops: Int32Array }

/** A node's route to a destination, as the measurements see it. */
export interface SimRoute {
  readonly fwd: SimNode
  readonly nhops: number
  readonly seq: number
}

/**
 * What runs on a simulated node, as the network model and the event loop see it: our core
 * (`core-process.ts`) or the master baseline (`baselines/master.ts`). The network model talks to
 * a node only through this interface. `nowMs` is the virtual time of the call.
 */
export interface SimProcess {
  /** The node is free and was woken: do one unit of work (charging its CPU, sending, dialling). */
  step(nowMs: number): void
  /** A payload arrived from `from`; false = the process cannot take it now (hold it on the link). */
  receive(from: SimNode, payload: Payload, nowMs: number): boolean
  /** A dial this process started to `address` failed (refused, forbidden, or timed out). */
  dialFailed(address: string, nowMs: number): void
  /** A dial this process started to `address` reached `target`: the connection is up. */
  dialSucceeded(target: SimNode, address: string, nowMs: number): void
  /**
   * Would it keep a connection from `peer` (room under its neighbour limit)? Asked when a dial to
   * it completes: false refuses the handshake, and the dialler sees a failed dial. Absent = yes.
   */
  acceptsConnection?(peer: SimNode): boolean
  /** `peer` opened a connection to this node. */
  connectionUp(peer: SimNode, nowMs: number): void
  /** This node learned that its connection to `peer` is gone. */
  connectionDown(peer: SimNode, nowMs: number): void
  /** Consecutive failed dials to `address` so far (0: never tried, or the last try worked). */
  consecutiveDialFailures(address: string): number
  /**
   * Graceful leave: sends its farewells and returns, per peer node index, when the farewell on
   * that connection arrives (the connection closes then); undefined if it can only stop (crash).
   */
  leave(nowMs: number): Map<number, number> | undefined
  /** Its valid route to `v`, if any. */
  route(v: SimNode): SimRoute | undefined
  /** `route(v)?.fwd`, where a process can tell it without building the route (reachability samples walk millions). */
  nextHop?(v: SimNode): SimNode | undefined
  /** `route(v)?.nhops`, -1 without a route; with `nextHop`, the final check reads every pair's route without building it. */
  hopsTo?(v: SimNode): number
  /**
   * Would its next step change something now: input it took and has not handled (an update in the
   * inbox of a node still busy with earlier work), sends due, an expiry due? The run is not over
   * while one node says yes.
   */
  hasWork(nowMs: number): boolean
}

/** One simulated host: its place in the network, whether it runs, its CPU, its connections. */
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
  /** What runs on it while it is alive. */
  process: SimProcess | undefined
  busyUntilMs: number
  stepAtMs: number
  stepToken: number
  /** Peers whose crash this node has not noticed yet: peer index -> connection id. */
  readonly pendingDown: Map<number, number>
  /** Connections on which messages to this node are held (its inbox was full), by slot (`Network.table`); its connections themselves are there too. */
  readonly heldOn: Set<LinkSlot>
  /**
   * Record signatures made and checked since the node's CPU was last charged for them. Kept by the
   * host, not the process: work counted by an incarnation that crashed before its next step is
   * charged to the next incarnation's first step.
   */
  readonly recordOps: { signs: number; verifies: number }
}

/** The scenario's nodes: ids `<subnet>-<number>`, addresses 10.<subnet>.x.y:7000, the first `gateways` of each subnet gateways. */
export function createNodes(scenario: Scenario): SimNode[] {
  const nodes: SimNode[] = []
  scenario.subnets.forEach((subnet, s) => {
    const width = Math.max(3, String(subnet.nodes - 1).length)
    for (let i = 0; i < subnet.nodes; i++) {
      // 10.s.x.y addresses repeat past 65,536 nodes per subnet; NODES_MAX keeps us far below.
      nodes.push({
        index: nodes.length,
        id: `${subnet.name}-${String(i).padStart(width, '0')}`,
        subnet: s,
        gateway: i < subnet.gateways,
        address: `10.${s + 1}.${(i >> 8) & 255}.${i & 255}:7000`,
        alive: false,
        everStarted: false,
        incarnation: 0,
        process: undefined,
        busyUntilMs: 0,
        stepAtMs: Number.POSITIVE_INFINITY,
        stepToken: 0,
        pendingDown: new Map(),
        heldOn: new Set(),
        recordOps: { signs: 0, verifies: 0 },
      })
    }
  })
  return nodes
}
