/**
 * Every table, set and queue of the core is bounded. Each default below says why it is what it
 * is; all of them can be lowered (or raised) per node through `CoreLimits`.
 */
export const DEFAULT_LIMITS = {
  /**
   * Destinations in one routing table. Every destination costs one entry plus two neighbour
   * bitsets at every node, so a table of N destinations costs O(N * neighbours) bits per node.
   * The paper runs 400 processes and our simulations go to 10,000; 65,536 leaves headroom while
   * keeping a flood of fake destinations from exhausting memory.
   */
  destinationsMax: 65_536,
  /**
   * Open connections (neighbours) of one node. Bounded by file descriptors on real hosts and
   * by the bitset width of trans/rcpt here; a clique of a few thousand nodes is the densest
   * topology we target.
   */
  neighboursMax: 4_096,
  /** Logical names one node may own. Names travel with the node's record in every update. */
  namesPerNodeMax: 64,
  /** UTF-16 code units in one logical name; names are identifiers, not payload. */
  nameLengthMax: 256,
  /** Physical addresses one node may advertise (dual stack, several interfaces, a relay or two). */
  addressesPerNodeMax: 16,
  /** Characters in one physical address (a multiaddr with a peer id fits in well under 512). */
  addressLengthMax: 512,
  /** Characters in one node id (a libp2p peer id string is 52 or 59). */
  nodeIdLengthMax: 128,
  /**
   * Physical addresses remembered for dialling (known + backed-off). One per address of every
   * destination plus hubs; beyond this we stop learning new addresses rather than grow.
   */
  knownAddressesMax: 131_072,
  /**
   * Dials in flight at once. Each holds a socket; a node that learns 2,000 addresses at once
   * must not open 2,000 sockets, and dials to firewalled addresses can hang until a timeout.
   */
  dialsInFlightMax: 64,
  /**
   * Received updates waiting to be applied. The scheduler applies all of them in one step, so
   * the queue holds about one merged update per neighbour per round; twice the neighbour limit
   * leaves room for a second round. A driver that finds it full must stop reading (backpressure).
   */
  inboxMessagesMax: 8_192,
  /**
   * Entries in one update message. A full table for a new neighbour is split into several
   * messages so that one frame stays under the wire codec's size limit.
   */
  entriesPerMessageMax: 1_024,
  /**
   * Destinations one neighbour may introduce into our table. A hub legitimately introduces a
   * whole network, so this cannot be small; half the table keeps one peer from crowding out
   * every other route with invented destinations.
   */
  destinationsPerNeighbourMax: 32_768,
  /**
   * Logical names carried by the records of the destinations one neighbour introduced. A record
   * may carry namesPerNodeMax (64) names, so destinationsPerNeighbourMax alone would let one peer
   * fill 2 M names (up to 1 GiB of strings); real nodes own a handful, so 4 per destination on
   * average is generous and bounds a peer to about 64 MiB of names.
   */
  namesPerNeighbourMax: 131_072,
  /**
   * Entries one neighbour may send us per second, on average (token bucket; the burst is
   * `updateEntriesBurstMax`). Steady-state updates are a trickle; this stops a flood.
   */
  updateEntriesPerSecondMax: 50_000,
  /** Burst of the same bucket: a full table for a new neighbour arrives at once. */
  updateEntriesBurstMax: 70_000,
  /**
   * Refused name claims remembered for `nameConflicts` (who claimed what, held by whom). Only for
   * reporting — refusing needs only the holders — so the oldest are forgotten first; every refusal
   * is counted in `claimsRefused` all the same.
   */
  nameRefusalsMax: 1_024,
  /**
   * Forgotten destinations whose last sequence number is remembered (tombstones.ts), so a replay
   * of a dead node's last record is refused after its entry expired. One is an id and a number
   * (about 100 bytes): destinationsMax of them, every destination the table can hold forgotten
   * once, cost about 7 MiB. Past it the oldest goes, and a replay of that node's last record is
   * taken as new again (as before tombstones). 0 = none kept.
   */
  tombstonesMax: 65_536,
  /**
   * What the records kept with tombstones may add up to (tombstones.ts `keptRecordBytes`: 2 bytes
   * a character of names and addresses, the signature, 128 for the rest). A tombstone keeps the
   * forgotten destination's last record so that its owner, restarted with its number forgotten,
   * is answered with it and passes the tombstone in one round trip (without it: one round trip
   * per two numbers below it). A typical record (a name, a few addresses, a 64-byte signature) is
   * counted as 300-600 bytes, so 32 MiB keeps tombstonesMax of them; a record may be counted up
   * to about 50 KiB (namesPerNodeMax names and addressesPerNodeMax addresses at their longest),
   * and past the budget the oldest tombstones drop their record (their number stays). 0 = none kept.
   */
  tombstoneRecordBytesMax: 33_554_432,
  /** Bytes in one record signature (Ed25519: 64; RSA-4096: 512). */
  signatureBytesMax: 512,
  /**
   * Re-dials of lost neighbours (connections that went down) started per second, all neighbours
   * together. A node that loses hundreds of neighbours at once (a subnet's crash) retries them
   * at this rate instead of all at once; each is retried within redialBackoffMaxMs once its turn
   * comes. Hubs are not counted: there are few and they are retried on their own back-off.
   * 0 = lost neighbours are not re-dialled (only hubs and discovery dial).
   */
  lostRedialsPerSecondMax: 10,
  /** Hops a forwarded message may take. Overlay shortest paths are a few hops; this bounds any
   *  transient loop (see "Loop freedom" in packages/core/README.md). */
  hopLimit: 16,
  /**
   * Next hops kept per destination: the neighbours that offer it at the same (seq, nhops) as our
   * route (alternates.ts), among which each flow picks one. A site has a handful of gateways;
   * 8 covers them while bounding the per-entry list. 1 = single-path DSDV, the paper's protocol.
   */
  ecmpNextHopsMax: 8,
  /**
   * Entries one send step builds before its messages go out (fanout.ts); the rest of the round
   * follows in the next steps, after what arrived meanwhile is applied (at least one neighbour's
   * share goes per step). Bounded steps get a hub's first tables out sooner, but then the nodes
   * served first connect to those not served yet and relay records to them that the hub also
   * sends: three subnets at 400, 4,096 per step converged in 302 ms instead of 368 ms with 1.76
   * instead of 1.02 entries per pair (simulations/ANALYSIS.md). So by default a round is one step
   * (2^30 entries: more than destinationsMax times neighboursMax); lower it to trade entries for
   * time, or to bound the messages one step builds.
   */
  sendStepEntriesMax: 1_073_741_824,
} as const

export type CoreLimits = { -readonly [K in keyof typeof DEFAULT_LIMITS]: number }

export const DEFAULT_TIMING = {
  /** First back-off after a failed or forbidden dial. */
  dialBackoffInitialMs: 1_000,
  /** Back-off doubles per consecutive failure up to this; forbidden addresses are retried rarely. */
  dialBackoffMaxMs: 60_000,
  /**
   * Back-off cap for the addresses a node keeps dialling until they answer: its configured hubs,
   * and the addresses of neighbours it lost while it remembers them. Low, so a restarted hub or
   * gateway is reached again within this (plus a dial) of its return, however long it was down:
   * 1 s, 2 s, 4 s, 4 s, ... is one dial per 4 s per address in the long run.
   */
  redialBackoffMaxMs: 4_000,
  /**
   * How long updates may wait for dials in flight before they are sent anyway. 0 = the paper's
   * policy (dialling has priority, but sends do not wait for the dials to finish).
   */
  sendHoldForDialsMs: 0,
  /**
   * Of two nodes that learn each other's record (both from the same hub's update, usually), the
   * one with the larger id holds its dial back this long and dials only if no connection came by
   * then (the smaller may be behind a firewall): one connection set up per pair instead of two.
   * A held-back address waits among the backed-off ones, holding no dial slot
   * (dialsInFlightMax): held in a slot (as the transport did), a node learning more peers at once
   * than it has slots dialled only as fast as its smaller peers reached it, and they in turn
   * waited on theirs. Addresses learned from updates only; hubs and lost neighbours are
   * dialled as before. 0 = both dial at once (the paper; the simulator's default). The transport
   * sets it from its own `dialDeferMs`.
   */
  dialDeferMs: 0,
  /**
   * A hub whose own address is among its hubs, connected to other hubs of that list (co-hubs),
   * serves only the neighbours it owns (a hash of hub and neighbour) and waits up to this long for
   * its co-hubs' plans before it decides the others' again (fanout.ts): a node connected to k hubs
   * hears each record about once instead of k times. The wait ends as soon as the plans are in;
   * this bounds it, so it must cover a co-hub's first send step and the link between hubs (the
   * paper's scenario: 20 ms was too short at 2,000 processes, 200 ms is not). 0 = off: every hub
   * serves every neighbour (the paper).
   */
  coHubWaitMs: 0,
  /**
   * How long an unreachable (odd-sequence) entry is kept before it is forgotten. It must outlive
   * the propagation of the route loss, or a stale even entry could be accepted again.
   */
  unreachableRetentionMs: 120_000,
  /**
   * A name whose holder left is free once the holder's entry is forgotten (unreachableRetentionMs
   * after its loss); a node that yielded the name claims it again this much later, so that the
   * holder's entry is forgotten everywhere first (the loss reaches every node within seconds).
   * A claim gone within nameContentionMs / 2 of its arrival is claimed again at once (names.ts).
   */
  nameReclaimDelayMs: 10_000,
  /**
   * Claims of one name stored within this long of each other are contended (two nodes claimed a
   * free name at once): the smallest id holds it everywhere and the others yield. After it, a
   * claim is held and later ones are refused. It must outlast a claim's propagation to every node
   * (seconds), and is the only window in which an id decides anything.
   */
  nameContentionMs: 10_000,
} as const

export type CoreTiming = { -readonly [K in keyof typeof DEFAULT_TIMING]: number }

/**
 * Fixed numbers of the core that are not per-node options. Each is here, not inline, so that its
 * reason is next to it.
 */
export const CORE_CONSTANTS = {
  /**
   * Unreachable entries are looked for at most this often: the scan walks the whole table, and
   * retention is measured in minutes (unreachableRetentionMs), so a second of slack costs nothing.
   */
  expiryScanEveryMs: 1_000,
  /** Largest hop count an advert may carry: the wire encodes nhops as one byte's worth (0–255). */
  advertHopsMax: 255,
  /**
   * Initial width of the node-index → neighbour-slot array; it doubles as indices grow. 64 covers
   * the neighbours of a small node without a reallocation.
   */
  slotOfIndexInitial: 64,
  /**
   * The dial queue drops its consumed prefix once more than this many addresses were taken (and
   * they are over a quarter of it; all of it at once when nothing is pending): its memory follows
   * what is pending, not its history, without a copy on every dial.
   */
  dialQueueCompactAfter: 64,
  /**
   * Back-off doubles per consecutive failure; the exponent stops here so 2^n cannot overflow to
   * Infinity (dialBackoffMaxMs caps the delay long before).
   */
  dialBackoffExponentMax: 30,
  /**
   * A connection that goes down sooner than this after it came up is a flap: the peer refused
   * us (a record it cannot verify, another process with our key) or died at once. Its re-dial is backed off like a
   * failed dial (`AddressBook.connectionLost`), else a hub that drops us at once is re-dialled
   * at once, ~100 times a second. A second covers a refusal that waits for the first update
   * (a round trip and a step) on a loaded link.
   */
  connectionStableMs: 1_000,
  /**
   * Peers whose flaps are counted at once (`AddressBook`): the oldest is forgotten past this (its
   * next flap backs off from the start again). Only the peers flapping now matter.
   */
  flappingPeersMax: 1_024,
  /** The window of `lostRedialsPerSecondMax`. */
  redialWindowMs: 1_000,
  /**
   * A holder of a destination at this many hops or fewer gains nothing from our direct route to
   * it (1 hop from us is 2 from them): such holders stay in rcpt when the route becomes direct.
   */
  directRouteHolderHopsMax: 2,
  /**
   * Distinct trans/rcpt sets one table interns before starting afresh (`HolderSets`). A node holds
   * a few distinct sets per neighbourhood shape; past this many, sets no entry holds any more would
   * be kept alive (at most this many bitsets of the known nodes) for little sharing.
   */
  holderSetsMax: 4_096,
} as const
