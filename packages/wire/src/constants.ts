import { DEFAULT_LIMITS } from '@phoenix-overlay/core'

/** Every limit of decoding untrusted bytes, with its reason. Decoding never allocates past them. */
export const WIRE_LIMITS = {
  /** Bytes in one frame. A full 1,024-entry update with addresses and signatures fits in well under 1 MiB; 4 MiB leaves room for large payloads without letting one frame pin much memory. */
  frameBytesMax: 4 * 1024 * 1024,
  /** Entries in one update: the core's entriesPerMessageMax (a sender splits bigger tables). */
  entriesPerUpdateMax: DEFAULT_LIMITS.entriesPerMessageMax,
  /** Slots in an update's neighbour table: a sender names each of its neighbours once (core's neighboursMax). */
  neighbourSlotsMax: DEFAULT_LIMITS.neighboursMax,
  /** Distinct trans sets in one update: at most one per entry. */
  transSetsMax: DEFAULT_LIMITS.entriesPerMessageMax,
  /** Names in one entry (core's namesPerNodeMax). */
  namesPerNodeMax: DEFAULT_LIMITS.namesPerNodeMax,
  /** Addresses in one entry (core's addressesPerNodeMax). */
  addressesPerEntryMax: DEFAULT_LIMITS.addressesPerNodeMax,
  /** Characters in a node id (core's nodeIdLengthMax; a libp2p peer id is 52 or 59). */
  nodeIdCharsMax: DEFAULT_LIMITS.nodeIdLengthMax,
  /** Characters in a logical name (core's nameLengthMax). */
  nameCharsMax: DEFAULT_LIMITS.nameLengthMax,
  /** Characters in a physical address (core's addressLengthMax). */
  addressCharsMax: DEFAULT_LIMITS.addressLengthMax,
  /** Bytes in a record signature (core's signatureBytesMax). */
  signatureBytesMax: DEFAULT_LIMITS.signatureBytesMax,
  /** Bytes of application payload in one data frame: the frame less room for its header. */
  payloadBytesMax: 4 * 1024 * 1024 - 4096,
  /** Hop limit a frame may carry: overlay paths are a few hops; 255 is the protocol's ceiling. */
  hopLimitMax: 255,
  /** Hop count in a routing entry (the core rejects more). */
  nhopsMax: 255,
} as const

export type WireLimits = { -readonly [K in keyof typeof WIRE_LIMITS]: number }
