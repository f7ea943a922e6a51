import { FLOW_CREDIT_BYTES } from '@phoenix-overlay/wire'

/** Every queue and buffer of a transport node, with its reason. All can be changed per node (`PhoenixInit.limits`). */
export const TRANSPORT_LIMITS = {
  /**
   * Bytes queued for one neighbour and not yet taken by its stream. A full routing table is a
   * few hundred KiB; 16 MiB absorbs bursts of large messages while one slow neighbour cannot
   * hold much of the process's memory.
   */
  outboundBytesMaxPerNeighbour: 16 * 1024 * 1024,
  /** Frames queued for one neighbour (bounds per-frame overhead when frames are tiny). */
  outboundFramesMaxPerNeighbour: 65_536,
  /**
   * Bytes one neighbour can have in flight to us: yamux's largest stream window (16 MiB), which
   * is what bounds a single delivery. The frame decoder holds this plus one partial frame.
   */
  inboundBytesMaxPerNeighbour: 16 * 1024 * 1024,
  /** Sends waiting for an end-to-end acknowledgement at once; each holds a timer and a promise. */
  pendingAcksMax: 16_384,
  /** Sends waiting for a route to appear at once. */
  pendingRouteWaitsMax: 16_384,
  /**
   * Messages buffered per `messages()` iterator whose consumer is slow. A message that finds an
   * iterator full is refused (the sender hears `receiver-too-slow`), never acknowledged. Each
   * source may hold only as many as are free (held-messages.ts): one source alone half of it, so
   * one flooding source leaves room for the others.
   */
  receiveBufferMax: 4_096,
  /**
   * Payload bytes buffered per `messages()` iterator, and waiting for a first consumer: the count
   * alone let one member, sending 1 MiB messages from a new source id each (a new flow, so its own
   * credit), grow a node's memory to 3 GiB in 44 s (an adversarial audit; 4,096 × 4 MiB is 16 GiB).
   * A message that finds a buffer past it is refused like one past `receiveBufferMax`; one message
   * always fits an empty buffer, whatever its size. 64 MiB is what `phoenix node`'s inbox holds.
   */
  receiveBufferBytesMax: 64 * 1024 * 1024,
  /**
   * (source, message id) pairs remembered to drop a repeated message (a retry whose first copy
   * did arrive). A retry comes within the sender's ack timeout (10 s by default); 65,536 covers
   * that at 6,500 messages/s from all sources together, in 1 MiB (duplicate-window.ts: 16 bytes per pair).
   * A repeat older than the window is delivered again.
   */
  duplicateWindowMax: 65_536,
  /**
   * Per-flow credit (credit.ts): bytes of one flow (source, destination) this node may have
   * outstanding at its next hop; beyond that the flow's frames wait here, in the flow's own queue:
   * forwarded frames at most a window (the previous hop then runs out of credit), our own sends at
   * most outboundBytesMaxPerNeighbour (then `send` fails QUEUE_FULL).
   * The protocol's window (FLOW_CREDIT_BYTES, 4 MiB): a next hop accepts that much per flow (or
   * its own flowWindowBytes if larger) and refuses more, so a larger value meets `queue-full`
   * bounces unless every node has it; smaller costs throughput.
   * 0 turns credit off: data then shares each link's queue and a full queue toward the next hop
   * stops the node reading from the previous one (head-of-line blocking; kept for comparison).
   * All nodes of an overlay must agree on on/off.
   */
  flowWindowBytes: FLOW_CREDIT_BYTES,
  /**
   * Flows tracked per neighbour, in each direction (frames waiting or credit outstanding toward
   * it; its frames held here). At most a window each, so 1,024 flows bound what one neighbour's
   * flows can hold here to 1 GiB in theory; in practice only flows whose next hop is stalled
   * keep their window. A new flow that finds the table full evicts one stalled `flowStallMs`.
   */
  flowsMaxPerNeighbour: 1_024,
} as const

export type TransportLimits = { -readonly [K in keyof typeof TRANSPORT_LIMITS]: number }

/** setTimeout's ceiling: a longer delay fires at once (Node warns, and waits 1 ms). Every wait an option sets stays under it. */
export const TIMER_MS_MAX = 2 ** 31 - 1

export const TRANSPORT_TIMING = {
  /** How long `send` waits for a route to a name to appear while tables converge. */
  routeWaitMs: 10_000,
  /** How long `send({ ack: true })` waits for the acknowledgement. */
  ackTimeoutMs: 10_000,
  /**
   * How long a dial may wait for the TCP connection before it counts as failed (a firewall that
   * drops SYNs never answers). Once the connection is up, `upgradeTimeoutMs` applies instead.
   */
  dialTimeoutMs: 5_000,
  /**
   * How long the rest of a dial may take once its TCP connection is up: Noise, Yamux and the
   * Phoenix stream. Longer than dialTimeoutMs, because a peer that answered is there and its
   * handshake is progressing: 30 node processes on 2 busy cores took over 5 s for it, and a 5 s
   * cut on the whole dial aborted 236 of the offline run's 460 dials (to peers that were allowed
   * and listening), threw their work away and started it again (issue 19, test/netns/SETUP-PROFILE.md).
   * The other end gives an inbound handshake as long (STRANGER_LIMITS.strangerHandshakeTimeoutMs).
   */
  upgradeTimeoutMs: 30_000,
  /**
   * How long the end of a pair with the larger peer id waits before it dials the other, so that
   * when both learn each other at once only one connection is set up (issue 19, item 4: in the
   * 30-process namespace run both ends dialled, doubling the handshakes on a starved CPU). The
   * smaller end dials at once; the larger dials after this only if no connection came (the
   * smaller may be behind a firewall). The core does the holding back (its timing dialDeferMs,
   * set from this), and a held-back address holds none of its dialsInFlightMax dial slots. Addresses learned from updates only: hubs are dialled at
   * once. 0 = both dial at once. 3 s, not 1 s: the smaller's connection must arrive within it, and
   * on a busy host a handshake takes seconds; with 1 s both ends still dialled, and each such pair
   * replaced its link (a down and up for the core, and a wave of updates through the overlay):
   * 40–55 replaced links in a 30-process run, 5 with 3 s, and 2,198 update messages instead of
   * 3,700–4,800 (test/netns/SETUP-PROFILE.md). What it costs: a pair whose smaller end cannot dial
   * the larger (a firewall in front of the larger, which is not its hub) links 3 s later.
   */
  dialDeferMs: 3_000,
  /**
   * How long a leaving node keeps reading while it waits for each neighbour to close its side
   * (which a neighbour does once it heard the leave and wrote out what it had queued for us).
   * Frames in that queue would otherwise be lost. A neighbour that does not close its side by
   * then (an older version, a hung host) is closed anyway.
   */
  leaveLingerMaxMs: 2_000,
  /**
   * The longest a leave waits for its queues (farewells, acks it owes, bounces) to be written
   * before it closes the connections anyway: a neighbour that does not read cannot hold up a stop.
   */
  leaveFlushMaxMs: 2_000,
  /**
   * Liveness (liveness.ts): a neighbour silent this long is sent a probe, which it answers at once.
   * 2 s: an idle link costs one ~8-byte frame each way per 2 s; a busy one costs nothing.
   */
  probeAfterIdleMs: 2_000,
  /**
   * A neighbour silent this long (no frame, no answer to the probes sent at 2 s and 4 s, no
   * flow-control window granted) is down: its link closes and routes through it are withdrawn.
   * 6 s leaves a loaded peer two probe round trips of 2 s each; a hung (SIGSTOPped) peer is
   * withdrawn 6–6.5 s after it last spoke.
   */
  deadAfterSilenceMs: 6_000,
  /**
   * A flow whose next hop returned no credit this long is stalled (its receiver stopped reading):
   * when a new flow finds the table full (flowsMaxPerNeighbour), the flow stalled longest is
   * evicted and its waiting frames bounced `queue-full`. 10 s: the default ack timeout, after
   * which its sender gave up on those messages anyway.
   */
  flowStallMs: 10_000,
  /** How often each link checks its neighbour's silence (the resolution of the two bounds above). */
  livenessCheckEveryMs: 500,
} as const

export type TransportTiming = { -readonly [K in keyof typeof TRANSPORT_TIMING]: number }

export const PHOENIX_PROTOCOL = '/phoenix/overlay/2.0.0'

/**
 * Core steps one drain makes before yielding to I/O: a node with a large backlog must not
 * starve its sockets (each step is at most one apply or one send round).
 */
export const DRAIN_STEPS_MAX = 256

/**
 * The longest one drain keeps the event loop before yielding to I/O, however few its steps: a
 * core behind on a flood of records (each verified) must still read, write and answer liveness
 * probes, or its neighbours, hearing nothing, declare it down. 20 ms is well under the 2 s probe
 * interval and long enough that the yield costs nothing measurable.
 */
export const DRAIN_SLICE_MS = 20

/** Addresses of our own advertised at most (the core's addressesPerNodeMax is larger; 16 covers every interface a host has in practice). */
export const OWN_ADDRESSES_MAX = 16

/**
 * Message ids the application chose (`send`'s `messageId`, a retry's) remembered, so that a notice
 * about one of them is known for ours (ids we drew are checked by inverting their permutation,
 * message-ids.ts, with no memory). A notice comes within a round trip of its send; 4,096 retries
 * after it, one is taken for a forgery and counted (`notices_unmatched`), not raised. 16 bytes each.
 */
export const CALLER_IDS_MAX = 4_096

/**
 * Peers whose early closes in a row are counted (flap-log.ts), the oldest forgotten first. A peer
 * counts until one of its connections lives or is closed by either side for a known reason; under
 * churn every killed worker is one entry. 1,024 holds far more peers than flap at once (a node
 * has at most its neighbour limit), at ~100 bytes each.
 */
export const FLAPPING_PEERS_MAX = 1_024
