/** An opaque node identity (a libp2p peer id string on real nodes, any string in the simulator). */
export type NodeId = string
/** An opaque physical address (a multiaddr on real nodes, any string in the simulator). */
export type PhysicalAddress = string

/** One routing entry as sent to a neighbour: R_sender[destination], the paper's update unit. */
export interface RouteAdvert {
  readonly destination: NodeId
  /** Even: issued by the destination itself. Odd: someone lost the route (unreachable). */
  readonly seq: number
  /** Hops from the sender to the destination; 0 for the sender itself; ignored when seq is odd. */
  readonly nhops: number
  /** The destination's logical names, as of `seq`. */
  readonly names: readonly string[]
  /** The destination's physical addresses, as of `seq`: how discovery learns whom to dial. */
  readonly addresses: readonly PhysicalAddress[]
  /** Index into `UpdateMessage.transSets`: the sender's trans for this entry after this send; -1 = empty. */
  readonly trans: number
  /**
   * The destination's signature over its record (id, even part of seq, names, addresses), when
   * records are signed (`CoreConfig.records`); empty or absent otherwise. An odd seq is a
   * retraction of the signed record seq - 1 and carries that record's signature unchanged.
   */
  readonly signature?: Uint8Array
}

/** One merged update from a node to one neighbour. Self-contained, so it may be reordered or duplicated. */
export interface UpdateMessage {
  /** The sender's neighbour slots when it sent this: bit i of a trans set means neighbourSlots[i]; '' = free slot. */
  readonly neighbourSlots: readonly NodeId[]
  /** Distinct trans sets referenced by the entries, as little-endian bitsets over neighbourSlots. */
  readonly transSets: readonly Uint8Array[]
  readonly entries: readonly RouteAdvert[]
  /**
   * Only on the first update a node sends on a connection (optimized mode): the sequence number
   * of the receiver's own record that the sender holds, or undefined if it holds none. The
   * receiver sends its own record only if the sender lacks this one; see "The connection hello"
   * in packages/core/README.md.
   */
  readonly hello?: { readonly receiverSeq: number | undefined }
  /**
   * Optimized mode: neighbours the sender lost since its last update to the receiver. What they
   * said the sender holds, and what the sender said they hold, may never have arrived (updates
   * lost with the connection): the receiver forgets those holders, and their entries go again to
   * whoever lacks them. See "Lost with a connection" in packages/core/README.md.
   */
  readonly lostNeighbours?: readonly NodeId[]
  /**
   * Optimized mode, from a hub to a co-hub (see "Co-hubs" in packages/core/README.md): the last
   * message of the first step of the sender's send round, which carries everything it plans to
   * send the receiver in that round (its plan), sent even when the plan is empty. A co-hub whose
   * round waits for this sender's plan stops waiting; until then it holds back what the sender
   * may serve.
   */
  readonly planEnd?: true
  /**
   * Optimized mode, from a hub whose co-hubs share out its neighbours (see "A hub's word that
   * every neighbour of its is served" in packages/core/README.md), to a node that is not one of
   * them: every node in `neighbourSlots` holds each entry the sender holds (those of this message
   * among them) at the sender's hops + 1 or fewer, or will get that from the sender or one of its
   * co-hubs; so each holds the others at 2 hops or fewer. The receiver, unless it can have co-hubs
   * itself, counts them in rcpt, never in trans: the word is not passed on, so no hub ever takes
   * it back as a promise.
   */
  readonly allServed?: true
}

export type Effect =
  /** Open a connection to `address`; report back with `connectionUp` or `dialFailed`. */
  | { readonly type: 'dial'; readonly address: PhysicalAddress; readonly expectedPeer: NodeId | undefined }
  /** Deliver `message` to neighbour `to` over the connection, in order. */
  | { readonly type: 'send'; readonly to: NodeId; readonly message: UpdateMessage }
  /** Close the connection to `peer` (dialled ourselves, or the peer broke a rule). */
  | { readonly type: 'close'; readonly peer: NodeId; readonly reason: string }

export type StepKind = 'dial' | 'apply' | 'send' | 'idle'

export interface StepResult {
  /** Which of the scheduler's priorities this step served. */
  readonly kind: StepKind
  readonly effects: readonly Effect[]
  readonly messagesApplied: number
  readonly entriesApplied: number
  readonly messagesSent: number
  readonly entriesSent: number
  /** When idle only because sends are held for dials in flight, a back-off ends or an unreachable entry is due to expire: call `step` again then. */
  readonly wakeAtMs: number | undefined
}

export interface RouteView {
  readonly destination: NodeId
  /** Next hop; the destination itself for a neighbour; undefined when unreachable. */
  readonly fwd: NodeId | undefined
  /** Every next hop at this (seq, nhops), sorted, `fwd` among them (alternates.ts); empty when unreachable. */
  readonly alternates: readonly NodeId[]
  readonly nhops: number
  readonly seq: number
  readonly reachable: boolean
  readonly names: readonly string[]
  readonly addresses: readonly PhysicalAddress[]
}

export type ForwardDecision =
  | { readonly action: 'deliver' }
  | { readonly action: 'forward'; readonly nextHop: NodeId; readonly hopLimit: number }
  | { readonly action: 'drop'; readonly reason: 'no-route' | 'hop-limit' | 'no-such-name' }

export type RoutingMode = 'optimized' | 'naive'
