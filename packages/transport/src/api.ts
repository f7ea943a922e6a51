import type { Uint8ArrayList } from 'uint8arraylist'
import type { ComponentLogger, Libp2pEvents, Metrics as Libp2pMetrics, PeerId, PrivateKey, Startable, TypedEventTarget } from '@libp2p/interface'
import type { AddressManager, ConnectionManager, Registrar } from '@libp2p/interface-internal'
import type { CoreLimits, CoreTiming, RouteView, RoutingMode } from '@phoenix-overlay/core'
import type { UndeliverableReason } from '@phoenix-overlay/wire'
import type { TransportLimits, TransportTiming } from './constants.ts'
import type { SshInit } from './dial-path.ts'
import type { Member, NameChange } from './groups.ts'
import type { Topology } from './topology.ts'
import type { BroadcastResult, CollectiveOptions, ReduceOptions, ReduceResult } from './collectives.ts'

export interface PhoenixInit {
  /** Multiaddrs known at start (the hubs); everything else is discovered. */
  hubs?: string[]
  /** Logical names this node answers to (more can be added at run time). */
  names?: string[]
  /**
   * This node's site (topology level 1; see topology.ts): letters, digits, '.', '_', ':', '-'.
   * Default: derived from its address (an IPv4 /24, an IPv6 /64). Declared, it travels as one
   * reserved name in the node's record.
   */
  site?: string
  /** 'optimized' (default) or 'naive' DSDV. */
  mode?: RoutingMode
  /** Dial addresses learned from routing updates (default true). Off: only the hubs are dialled (an "offline" configuration that lists every connection). */
  discovery?: boolean
  /** Sign our record and verify everyone's with their peer ids' keys (default true). */
  signRecords?: boolean
  protocol?: string
  /**
   * SSH tunnels (SITES.md): `identityFile` lets this node dial neighbours' SSH addresses through
   * the system's OpenSSH client; `advertise` (`user@host[:port]`) makes it reachable that way.
   */
  ssh?: SshInit
  /**
   * Private prefixes beyond this host's interface subnets that its site routes (`10.0.0.0/8`):
   * a peer's private address is dialled only if it lies in one of ours.
   */
  sitePrefixes?: string[]
  limits?: Partial<TransportLimits>
  timing?: Partial<TransportTiming>
  core?: { limits?: Partial<CoreLimits>; timing?: Partial<CoreTiming> }
}

/** The libp2p components the service uses (libp2p hands them to the factory). */
export interface PhoenixComponents {
  peerId: PeerId
  privateKey: PrivateKey
  registrar: Registrar
  connectionManager: ConnectionManager
  addressManager: AddressManager
  logger: ComponentLogger
  events: TypedEventTarget<Libp2pEvents>
  /** Present when the host libp2p was created with a metrics implementation (e.g. Prometheus). */
  metrics?: Libp2pMetrics
}

export interface ReceivedMessage {
  /** Node id (peer id) of the sender. */
  readonly from: string
  /** Which of our names it was sent to. */
  readonly name: string
  /**
   * The payload, one contiguous array. A large message arrives in several pieces (a 64 KiB one
   * always spans two Noise messages); they are joined, copied once, when this is first read.
   */
  readonly payload: Uint8Array
  /**
   * The payload as the pieces it arrived in, without copying them (what a libp2p stream's
   * `'message'` event gives): for a consumer that writes it on, hashes it or reads a few bytes
   * of it, and never needs it contiguous. The pieces are views of the decrypted bytes, which
   * this message keeps alive (up to one Noise message, 64 KiB, more than the payload per piece).
   */
  readonly payloadList: Uint8ArrayList
  /**
   * Hops it travelled: the hop limit its sender gave it (carried in the frame when not the
   * default, 16) less the one it arrived with, whatever each node's `limits.hopLimit`; never
   * negative. Counted from 16 when a node of an older release on the way dropped the sender's.
   */
  readonly hops: number
  /** The sender's message id: the same for a retry, so (from, messageId) identifies a message. */
  readonly messageId: number
}

/** Why a neighbour was disconnected (the `peer:dropped` event). */
export interface PeerDropped {
  readonly peer: string
  /**
   * 'wire': bytes that are not a valid frame; 'routing': an update the core refused (a forged or
   * unsigned record, a flood, a malformed entry); 'internal': handling one of its frames failed
   * here (a bug): only that connection is closed, the node goes on.
   */
  readonly kind: 'wire' | 'routing' | 'internal'
  readonly reason: string
}

/** A send of ours that a node on the way refused (the `undeliverable` event, for sends without `ack`). */
export interface Undeliverable {
  /** The node that refused it. */
  readonly node: string
  readonly messageId: number
  readonly reason: UndeliverableReason
}

/** Several nodes claim one name (the `name:conflict` event); messages for it go to `winner`. */
export interface NameConflict {
  readonly name: string
  /** Every claimant we know of, the holder first, ours included when `ours`. */
  readonly owners: readonly string[]
  /**
   * The holder: the claimant that keeps the name (the first one, while its record lives; see the
   * core README, "Names have holders"), and the node `send` resolves the name to. Undefined if
   * the holder's entry has been forgotten since.
   */
  readonly winner: string | undefined
  /** Whether this node is one of the claimants. */
  readonly ours: boolean
}

export interface PhoenixEvents {
  message: CustomEvent<ReceivedMessage>
  undeliverable: CustomEvent<Undeliverable>
  'peer:dropped': CustomEvent<PeerDropped>
  'name:conflict': CustomEvent<NameConflict>
  /** A name became reachable, or moved to another owner (groups.ts: at most `GROUP_TIMING.scanIntervalMs` after the route). */
  'name:up': CustomEvent<NameChange>
  /** A name was lost: its owner crashed, left, was cut off, or dropped the name. */
  'name:down': CustomEvent<NameChange>
}

export interface SendOptions {
  /** Resolve only once the destination's application has it (default false: once handed to the next hop). */
  ack?: boolean
  /** How long to wait for a route to the name to appear (default TRANSPORT_TIMING.routeWaitMs). */
  routeWaitMs?: number
  /** How long to wait for the acknowledgement, more than 0 (default TRANSPORT_TIMING.ackTimeoutMs); only with `ack: true` (refused without it). */
  ackTimeoutMs?: number
  /**
   * The message id (an integer in [1, 2^32)). Give the id of an earlier send to retry it: the
   * receiver drops a repeat it already delivered (and acknowledges it again). Default: a new id.
   */
  messageId?: number
  /**
   * Hand the payload over instead of copying it (default false). The node then keeps `payload`
   * itself until it has been written to the first hop's connection, as a libp2p stream's `send`
   * does: the caller must not change those bytes after the call. A copy per message is what a
   * sender of large messages spends most of its CPU on, in the garbage collector (64 KiB
   * messages: bench/REPORT.md). Without it, `payload` may be reused as soon as `send` returns.
   */
  transfer?: boolean
}

export interface SendResult {
  /** The id the message carries; acks, `undeliverable` events and errors name it. */
  readonly messageId: number
}

/** A Phoenix overlay node as a libp2p service (`libp2p.services.phoenix`). */
export interface PhoenixService extends TypedEventTarget<PhoenixEvents>, Startable {
  /** This node's id (its peer id). */
  readonly id: string
  readonly names: readonly string[]
  send(name: string, payload: Uint8Array, options?: SendOptions): Promise<SendResult>
  messages(): AsyncIterableIterator<ReceivedMessage>
  addHub(address: string): void
  /**
   * Claims `name` for this node. False when another node holds it: the claim is refused (the name
   * stays out of `names`), `nameConflicts()` and a `name:conflict` event name the holder, and the
   * node claims it once the holder's entry is forgotten. True when the name is this node's.
   */
  addName(name: string): boolean
  /** Gives `name` up (nothing happens if this node does not hold it). */
  removeName(name: string): void
  routes(): RouteView[]
  resolve(name: string): { owner: string; nextHop: string; nhops: number } | undefined
  peers(): string[]
  nameConflicts(): NameConflict[]
  metricsText(): string
  /** Levels (overlay, site, host) and colors of every reachable node, as this node sees them (topology.ts); when not running, this node alone, with no names or addresses. */
  topology(): Topology
  /** The reachable names matching `pattern` (`*`: any characters), with their owners, by name. Bad pattern: INVALID_INPUT naming `pattern`. */
  members(pattern: string): Member[]
  /** `up` for each member now, then every `name:up` / `name:down` of `pattern`, as an async iterator (bounded: GROUP_LIMITS). */
  watch(pattern: string): AsyncIterableIterator<NameChange>
  /**
   * Sends `payload` to every member of `pattern`: one copy per remote site, which that site's
   * relay fans out; members get it as a `message` from this node. With `ack`, resolves once every
   * member answered, left, or `timeoutMs` passed, saying which got it (`timeoutMs` only with
   * `ack: true`: refused without it). No member: NO_ROUTE.
   */
  broadcast(pattern: string, payload: Uint8Array, options?: CollectiveOptions & { ack?: boolean }): Promise<BroadcastResult>
  /**
   * Combines the values the members of `pattern` contribute for `tag` (`contribute`): a numeric
   * `op` over little-endian float64 arrays, combined at each site's relay, or your `combine`, here.
   * Members that leave or give nothing within `timeoutMs` are listed in `missing`.
   */
  reduce(pattern: string, tag: string, options: ReduceOptions): Promise<ReduceResult>
  /** `reduce`, then an acknowledged broadcast of the result: every member gets it as a message. */
  allreduce(pattern: string, tag: string, options: ReduceOptions): Promise<ReduceResult & { broadcast: BroadcastResult | undefined }>
  /** Our name `name`'s value for the next reduce over `tag`; held until one asks (at most COLLECTIVE_LIMITS.contributionsMax). */
  contribute(name: string, tag: string, value: Uint8Array): void
}
