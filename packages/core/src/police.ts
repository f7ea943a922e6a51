import { CORE_CONSTANTS, type CoreLimits } from './constants.ts'
import { PhoenixError, invariant } from './errors.ts'
import type { Neighbour } from './neighbours.ts'
import { type RecordAuthority, bytesEqual, recordPayload } from './records.ts'
import { NO_SIGNATURE, type RouteEntry } from './route.ts'
import { isValidSeq } from './seq.ts'
import type { Effect, NodeId, UpdateMessage } from './types.ts'

/** What the police count (part of `CoreStats`). */
export interface PoliceCounters {
  recordsVerified: number
  peersDropped: number
}

/** Destinations an update names that we do not know yet, each with the most names it is given. */
export type UnknownDestinations = ReadonlyMap<NodeId, number>

const NOTHING_UNKNOWN: UnknownDestinations = new Map()

/**
 * The limits on what comes in: checks of ids, names, addresses and whole updates (malformed input
 * throws INVALID_INPUT and nothing of it is kept), the per-neighbour limits (destinations and names
 * it introduced, its update token bucket) and record signatures. A neighbour that breaks a limit
 * or sends a forged record is dropped: a `close` effect is queued and `receive` throws.
 */
export class Police {
  /** Per neighbour: destinations it introduced that are still in the table. */
  private readonly introducedBy = new Map<NodeId, number>()
  /** Per neighbour: logical names carried by the records of the destinations it introduced. */
  private readonly introducedNamesBy = new Map<NodeId, number>()
  /**
   * Per neighbour, the unknown destinations named by its updates still in the inbox, each with the
   * number of queued updates naming it and the most names it was given: a destination counts once
   * against the neighbour however often it is repeated before it is applied. Bounded by the inbox
   * (inboxMessagesMax).
   */
  private readonly introducingQueued = new Map<NodeId, { readonly destinations: Map<NodeId, { messages: number; names: number }>; names: number }>()
  readonly counters: PoliceCounters = { recordsVerified: 0, peersDropped: 0 }

  constructor(
    private readonly limits: Readonly<CoreLimits>,
    private readonly records: RecordAuthority | undefined,
    /** Where a dropped neighbour's `close` effect goes (the core's priority-1 queue). */
    private readonly closes: Effect[],
  ) {}

  checkNodeId(id: unknown, what: string): void {
    if (typeof id !== 'string' || id.length === 0 || id.length > this.limits.nodeIdLengthMax) {
      throw new PhoenixError('INVALID_INPUT', `${what} must be a non-empty string of at most ${this.limits.nodeIdLengthMax} characters`)
    }
  }

  checkNames(names: readonly unknown[], what: string): string[] {
    if (names.length > this.limits.namesPerNodeMax) {
      throw new PhoenixError('LIMIT_EXCEEDED', `${what}: ${names.length} names, at most ${this.limits.namesPerNodeMax} per node (namesPerNodeMax)`)
    }
    for (const name of names) {
      if (typeof name !== 'string' || name.length === 0 || name.length > this.limits.nameLengthMax) {
        throw new PhoenixError('INVALID_INPUT', `${what}: a name must be a non-empty string of at most ${this.limits.nameLengthMax} characters`)
      }
    }
    // Names per node are few: a quadratic scan beats allocating a Set for every entry received.
    for (let i = 1; i < names.length; i++) {
      for (let j = 0; j < i; j++) if (names[i] === names[j]) throw new PhoenixError('INVALID_INPUT', `${what}: duplicate name`)
    }
    return names as string[]
  }

  checkAddresses(addresses: readonly unknown[], what: string, max = this.limits.addressesPerNodeMax): string[] {
    if (addresses.length > max) {
      throw new PhoenixError('LIMIT_EXCEEDED', `${what}: ${addresses.length} addresses, at most ${max} per node (addressesPerNodeMax)`)
    }
    for (const address of addresses) {
      if (typeof address !== 'string' || address.length === 0 || address.length > this.limits.addressLengthMax) {
        throw new PhoenixError('INVALID_INPUT', `${what}: an address must be a non-empty string of at most ${this.limits.addressLengthMax} characters`)
      }
    }
    return addresses as string[]
  }

  /**
   * Checks a whole update against the wire's shape and our limits; returns its distinct
   * destinations that `known` does not hold. `tableSize`: destinations we hold now.
   */
  checkMessage(message: UpdateMessage, known: (destination: NodeId) => boolean, tableSize: number): UnknownDestinations {
    this.checkFrame(message)
    let unknown: Map<NodeId, number> | undefined
    for (const entry of message.entries) {
      this.checkAdvert(entry, message.transSets.length)
      if (!known(entry.destination)) {
        unknown ??= new Map()
        unknown.set(entry.destination, Math.max(unknown.get(entry.destination) ?? 0, entry.names.length))
      }
    }
    if (unknown === undefined) return NOTHING_UNKNOWN
    if (tableSize + unknown.size > this.limits.destinationsMax) {
      throw new PhoenixError('LIMIT_EXCEEDED', `update would grow the table past destinationsMax (${this.limits.destinationsMax})`)
    }
    return unknown
  }

  /**
   * Admits an update from `from` or drops the neighbour: the destinations and names it would
   * introduce (with those of its updates still queued, each new destination once) and its token
   * bucket are checked, then the records it carries. On success the update counts as queued.
   */
  admit(from: Neighbour, message: UpdateMessage, unknown: UnknownDestinations, nowMs: number, known: (destination: NodeId) => RouteEntry | undefined): void {
    const queued = this.introducingQueued.get(from.id)
    let destinations = queued?.destinations.size ?? 0
    let names = queued?.names ?? 0
    for (const [destination, count] of unknown) {
      const already = queued?.destinations.get(destination)
      if (already === undefined) destinations++
      names += Math.max(0, count - (already?.names ?? 0))
    }
    this.policePeer(from, message.entries.length, destinations, names, nowMs)
    this.verifyRecords(from.id, message, known)
    if (unknown.size > 0) this.queueIntroductions(from.id, unknown, names)
  }

  /** An update left the inbox (applied or stale): its destinations no longer count as queued. */
  dequeued(from: NodeId, unknown: UnknownDestinations): void {
    if (unknown.size === 0) return
    const queued = this.introducingQueued.get(from)
    invariant(queued !== undefined, 'an update naming unknown destinations was counted when it was queued')
    for (const destination of unknown.keys()) {
      const pending = queued.destinations.get(destination)
      invariant(pending !== undefined, 'each unknown destination of a queued update is counted')
      if (--pending.messages > 0) continue
      queued.destinations.delete(destination)
      queued.names -= pending.names
    }
    if (queued.destinations.size === 0) this.introducingQueued.delete(from)
  }

  /** `peer` introduced a destination now in the table. */
  introduced(peer: NodeId): void {
    this.introducedBy.set(peer, (this.introducedBy.get(peer) ?? 0) + 1)
  }

  /** A destination `peer` introduced left the table, with its `names` names. */
  forgotten(peer: NodeId, names: number): void {
    this.introducedBy.set(peer, (this.introducedBy.get(peer) ?? 1) - 1)
    this.countNames(peer, -names)
  }

  /** The names of a destination `peer` introduced changed by `delta`. */
  countNames(peer: NodeId, delta: number): void {
    if (delta !== 0) this.introducedNamesBy.set(peer, (this.introducedNamesBy.get(peer) ?? 0) + delta)
  }

  /** Every per-neighbour count within its limit (for `PhoenixCore.checkInvariants`). */
  checkInvariants(): void {
    for (const [peer, n] of this.introducedBy) invariant(n >= 0 && n <= this.limits.destinationsPerNeighbourMax, `${peer} introduced ${n} destinations, within [0, destinationsPerNeighbourMax]`)
    for (const [peer, n] of this.introducedNamesBy) invariant(n >= 0 && n <= this.limits.namesPerNeighbourMax, `${peer}'s destinations carry ${n} names, within [0, namesPerNeighbourMax]`)
  }

  private checkFrame(message: UpdateMessage): void {
    if (typeof message !== 'object' || message === null) malformed('not an object')
    if (!Array.isArray(message.entries) || !Array.isArray(message.transSets) || !Array.isArray(message.neighbourSlots)) malformed('missing entries, transSets or neighbourSlots')
    if (message.entries.length > this.limits.entriesPerMessageMax) malformed(`${message.entries.length} entries, at most ${this.limits.entriesPerMessageMax} (entriesPerMessageMax)`)
    if (message.neighbourSlots.length > this.limits.neighboursMax) malformed(`${message.neighbourSlots.length} neighbour slots, at most ${this.limits.neighboursMax}`)
    for (const id of message.neighbourSlots) if (typeof id !== 'string' || id.length > this.limits.nodeIdLengthMax) malformed('neighbour slot is not a node id')
    const maxTransBytes = Math.ceil(message.neighbourSlots.length / 8)
    for (const set of message.transSets) if (!(set instanceof Uint8Array) || set.length > maxTransBytes) malformed('trans set wider than the neighbour slots')
  }

  private checkAdvert(entry: UpdateMessage['entries'][number], transSets: number): void {
    if (typeof entry !== 'object' || entry === null) malformed('entry is not an object')
    this.checkNodeId(entry.destination, 'entry destination')
    if (!isValidSeq(entry.seq)) malformed(`seq ${String(entry.seq)} is not an integer in [0, 2^32)`)
    const hopsMax = CORE_CONSTANTS.advertHopsMax
    if (!Number.isInteger(entry.nhops) || entry.nhops < 0 || entry.nhops > hopsMax) malformed(`nhops ${String(entry.nhops)} is not an integer in [0, ${hopsMax}]`)
    if (!Number.isInteger(entry.trans) || entry.trans < -1 || entry.trans >= transSets) malformed(`trans index ${String(entry.trans)} out of range`)
    if (!Array.isArray(entry.names) || !Array.isArray(entry.addresses)) malformed('names or addresses missing')
    this.checkNames(entry.names, `entry for ${entry.destination}`)
    this.checkAddresses(entry.addresses, `entry for ${entry.destination}`)
    if (entry.signature !== undefined && (!(entry.signature instanceof Uint8Array) || entry.signature.length > this.limits.signatureBytesMax)) {
      malformed(`signature for ${entry.destination} is not bytes or longer than signatureBytesMax (${this.limits.signatureBytesMax})`)
    }
  }

  private queueIntroductions(from: NodeId, unknown: UnknownDestinations, names: number): void {
    let queued = this.introducingQueued.get(from)
    if (queued === undefined) this.introducingQueued.set(from, (queued = { destinations: new Map(), names: 0 }))
    for (const [destination, count] of unknown) {
      const already = queued.destinations.get(destination)
      if (already === undefined) queued.destinations.set(destination, { messages: 1, names: count })
      else {
        already.messages++
        already.names = Math.max(already.names, count)
      }
    }
    queued.names = names
  }

  private drop(peer: NodeId, code: 'LIMIT_EXCEEDED' | 'INVALID_INPUT', why: string): never {
    this.counters.peersDropped++
    this.closes.push({ type: 'close', peer, reason: why })
    throw new PhoenixError(code, `peer ${peer} dropped: ${why}`)
  }

  /**
   * Disconnects a neighbour that introduces too many destinations or names, or sends too many
   * entries. `pendingDestinations` / `pendingNames`: what its queued updates and this one would
   * add, each new destination counted once.
   */
  private policePeer(from: Neighbour, entries: number, pendingDestinations: number, pendingNames: number, nowMs: number): void {
    const limits = this.limits
    const introduced = (this.introducedBy.get(from.id) ?? 0) + pendingDestinations
    if (introduced > limits.destinationsPerNeighbourMax) {
      this.drop(from.id, 'LIMIT_EXCEEDED', `it introduced ${introduced} destinations, more than destinationsPerNeighbourMax (${limits.destinationsPerNeighbourMax})`)
    }
    const names = (this.introducedNamesBy.get(from.id) ?? 0) + pendingNames
    if (names > limits.namesPerNeighbourMax) {
      this.drop(from.id, 'LIMIT_EXCEEDED', `it introduced destinations with ${names} names, more than namesPerNeighbourMax (${limits.namesPerNeighbourMax})`)
    }
    const budget = (from.budget ??= { tokens: limits.updateEntriesBurstMax, atMs: nowMs })
    budget.tokens = Math.min(limits.updateEntriesBurstMax, budget.tokens + ((nowMs - budget.atMs) * limits.updateEntriesPerSecondMax) / 1000)
    budget.atMs = nowMs
    budget.tokens -= entries
    if (budget.tokens < 0) {
      this.drop(from.id, 'LIMIT_EXCEEDED', `it sent more than updateEntriesPerSecondMax (${limits.updateEntriesPerSecondMax}) entries per second (burst ${limits.updateEntriesBurstMax})`)
    }
  }

  /**
   * Verifies the records in an update that we have not verified before (a record is checked once,
   * when it first arrives, not on every copy). A forged record drops the sender.
   */
  private verifyRecords(from: NodeId, message: UpdateMessage, known: (destination: NodeId) => RouteEntry | undefined): void {
    const records = this.records
    if (records === undefined) return
    for (const advert of message.entries) {
      const signature = advert.signature ?? NO_SIGNATURE
      const evenSeq = advert.seq - (advert.seq % 2)
      const entry = known(advert.destination)
      if (entry !== undefined && entry.seq - (entry.seq % 2) === evenSeq && bytesEqual(entry.signature, signature)) continue
      this.counters.recordsVerified++
      const payload = recordPayload(advert.destination, evenSeq, advert.names, advert.addresses)
      if (signature.length === 0 || !records.verify(advert.destination, payload, signature)) {
        this.drop(from, 'INVALID_INPUT', `it sent a record for ${advert.destination} (seq ${advert.seq}) whose signature does not verify`)
      }
    }
  }
}

/** A malformed update, as the error the sender sees. A function, not a closure per check: checks run once per received entry. */
function malformed(why: string): never {
  throw new PhoenixError('INVALID_INPUT', `malformed update: ${why}`)
}
