import type { CoreLimits, CoreTiming } from './constants.ts'
import type { AddressBook } from './discovery.ts'
import type { Fanout } from './fanout.ts'
import type { Neighbour, NeighbourTable } from './neighbours.ts'
import type { NameHolders } from './names.ts'
import type { NodeIndex } from './nodeindex.ts'
import type { Police } from './police.ts'
import type { SharedNumbering } from './shared-numbering.ts'
import type { RouteTable } from './table.ts'
import type { Expiry } from './expiry.ts'
import type { NodeId, RoutingMode } from './types.ts'

/** Messages and entries through one core (part of `CoreStats`). */
export interface TrafficCounters {
  messagesReceived: number
  entriesReceived: number
  messagesSent: number
  entriesSent: number
  destinationsRefused: number
  entriesExpired: number
}

/**
 * The pieces of one core as the modules that act on them see them (`apply.ts`, `send.ts`): the
 * façade `PhoenixCore` owns them and hands them over; none of them is shared between cores
 * (except a simulator's `numbering`).
 */
export interface CoreParts {
  readonly id: NodeId
  readonly mode: RoutingMode
  readonly discovery: boolean
  readonly limits: Readonly<CoreLimits>
  readonly timing: Readonly<CoreTiming>
  readonly table: RouteTable
  readonly neighbours: NeighbourTable
  /** Every node id we know, numbered for the trans/rcpt bitsets. */
  readonly nodeIndex: NodeIndex
  readonly book: AddressBook
  readonly police: Police
  /** Who holds each logical name. */
  readonly names: NameHolders
  readonly traffic: TrafficCounters
  /** The simulator's shared numbering, if this core runs in one (see `SharedNumbering`). */
  readonly numbering: SharedNumbering | undefined
  /** The send round in progress (fanout.ts). */
  readonly fanout: Fanout
  /** Our co-hubs among the neighbours now (fanout.ts): none unless we are a hub and coHubWaitMs is on. */
  readonly coHubs: () => readonly Neighbour[]
  /** Whether `coHubs()` can be non-empty at all (we are a hub and coHubWaitMs is on); cheaper than asking it. */
  readonly mayHaveCoHubs: () => boolean
  /** Whether `peer` answered our dial at one of our hubs' addresses (fanout.ts `isOurHub`): whose word `allServed` we take. */
  readonly isOurHub: (peer: NodeId) => boolean
  /** Whether we were given hubs besides ourselves: then only their updates settle our pending names (names.ts). */
  readonly hasHubs: () => boolean
  /** Expiry, and room in the node numbering (expiry.ts `makeRoom`). */
  readonly expiry: Expiry
  /** `CoreConfig.willConnect`. */
  readonly willConnect: ((holder: NodeId, destination: NodeId) => boolean) | undefined
}
