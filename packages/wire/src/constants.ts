import { DEFAULT_LIMITS } from '@phoenix-overlay/core'

/** Every limit of decoding untrusted bytes, with its reason. Decoding never allocates past them. */
export const WIRE_LIMITS = {
  /** Bytes in one frame. A full 1,024-entry update with addresses and signatures fits in well under 1 MiB; 4 MiB leaves room for large payloads without letting one frame pin much memory. */
  frameBytesMax: 4 * 1024 * 1024,
  /** Entries in one update: the core's entriesPerMessageMax (a sender splits bigger tables). */
  entriesPerUpdateMax: DEFAULT_LIMITS.entriesPerMessageMax,
  /** Slots in an update's neighbour table: a sender names each of its neighbours once (core's neighboursMax). */
  neighbourSlotsMax: DEFAULT_LIMITS.neighboursMax,
  /** Lost neighbours named in one update: a sender loses at most the neighbours it has (core's neighboursMax) between two updates. */
  lostNeighboursMax: DEFAULT_LIMITS.neighboursMax,
  /** Distinct trans sets in one update: at most one per entry. */
  transSetsMax: DEFAULT_LIMITS.entriesPerMessageMax,
  /** Names in one entry (core's namesPerNodeMax). */
  namesPerNodeMax: DEFAULT_LIMITS.namesPerNodeMax,
  /** Addresses in one entry (core's addressesPerNodeMax). */
  addressesPerEntryMax: DEFAULT_LIMITS.addressesPerNodeMax,
  /**
   * UTF-8 bytes in a node id, a logical name and a physical address. The core counts these in
   * UTF-16 code units (nodeIdLengthMax 128, nameLengthMax 256, addressLengthMax 512); one unit
   * takes at most 3 UTF-8 bytes, so 3x the core's limit is the least that never refuses on the
   * wire what the core accepts. The core then checks the characters, and drops a peer over them.
   */
  nodeIdBytesMax: 3 * DEFAULT_LIMITS.nodeIdLengthMax,
  nameBytesMax: 3 * DEFAULT_LIMITS.nameLengthMax,
  addressBytesMax: 3 * DEFAULT_LIMITS.addressLengthMax,
  /** Bytes in a record signature (core's signatureBytesMax). */
  signatureBytesMax: DEFAULT_LIMITS.signatureBytesMax,
  /** Bytes of application payload in one data frame: the frame less room for its header. */
  payloadBytesMax: 4 * 1024 * 1024 - 4096,
  /** Hop limit a frame may carry: overlay paths are a few hops; 255 is the protocol's ceiling. */
  hopLimitMax: 255,
  /**
   * Flows named in one credit frame. A node sends one credit frame per neighbour per turn of its
   * event loop, naming each flow whose frames left it since the last; 1,024 covers far more flows
   * than share one link in practice (a sender splits a longer list).
   */
  creditFlowsMax: 1_024,
  /** Hop count in a routing entry (the core rejects more). */
  nhopsMax: 255,
} as const

export type WireLimits = { -readonly [K in keyof typeof WIRE_LIMITS]: number }

/**
 * Per-flow credit (the protocol's window): the bytes of one flow (source, destination) a node
 * may have outstanding at its next hop, sent and not yet returned by a credit frame. The next hop
 * holds at most this plus one frame per flow and previous hop, so it never needs to stop reading
 * a link for want of room, and a flow whose receiver stops runs out of its own credit only.
 * 4 MiB: 64 messages of 64 KiB, 40 ms at 100 MiB/s between a frame's arrival and its credit
 * coming back. Measured: with 1 MiB a 64 KiB stream through one intermediate left every node idle
 * 30-50% of the time, waiting for credit; 4 MiB gave 1.26x its throughput (16 MiB no more), and
 * 8 flows through one neighbour may hold 32 MiB there (transport README, "Per-flow credit").
 */
export const FLOW_CREDIT_BYTES = 4 * 1024 * 1024

/**
 * The hop limit a data frame without `initialHopLimit` started with: a source whose hop limit is
 * this (the core's default) does not carry it, so the frames of every node left at the default
 * stay as they were. Part of the wire format: it does not follow a change of the core's default.
 */
export const INITIAL_HOP_LIMIT_DEFAULT = 16
