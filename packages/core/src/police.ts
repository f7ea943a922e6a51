import { CORE_CONSTANTS, DEFAULT_LIMITS, type CoreLimits } from './constants.ts'
import { PhoenixError, invariant } from './errors.ts'
import { type Neighbour, type NeighbourTable, coreSlotTableLongestId } from './neighbours.ts'
import { type RecordAuthority, bytesEqual, recordPayload } from './records.ts'
import { NO_SIGNATURE, type RouteEntry } from './route.ts'
import { isUnreachableSeq, isValidSeq, seqNewer } from './seq.ts'
import type { Effect, NodeId, UpdateMessage } from './types.ts'


/** What the police count (part of `CoreStats`). */
export interface PoliceCounters {
  recordsVerified: number
  peersDropped: number
  /** New destinations not stored because the neighbour that relayed them was over its share (its link is kept). */
  introductionsRefused: number
}

/**
 * The limits on what comes in: checks of ids, names, addresses and whole updates (malformed input
 * throws INVALID_INPUT and nothing of it is kept), the per-neighbour shares (destinations and names
 * it introduced), its update token bucket, and record signatures.
 *
 * Who is charged (packages/core/README.md, "Charge the origin, not the messenger"): a neighbour is
 * dropped only for what it alone answers for — bytes that are not an update, a record that does not
 * verify (an honest relay verifies before it stores or relays), more entries than its token bucket.
 * Its own record is never charged to a share (it is that record's origin). The destinations it
 * relays are charged to its share, and past the share they are refused, not stored, and counted
 * (`introductionsRefused`): a hub that relays one member's flood keeps its links, and the flood's
 * surplus is what is lost.
 */
export class Police {
  /** Per neighbour: destinations it relayed to us first that are still in the table (its share). */
  private readonly introducedBy = new Map<NodeId, number>()
  /** Per neighbour: logical names carried by the records of the destinations it introduced. */
  private readonly introducedNamesBy = new Map<NodeId, number>()
  readonly counters: PoliceCounters = { recordsVerified: 0, peersDropped: 0, introductionsRefused: 0 }
  /**
   * Records verified since the inbox was last applied, by destination (its even seq and
   * signature): two copies of a new record queued together (a hub's relay and the owner's own
   * copy, arriving in one busy spell) are checked once. Emptied by `inboxApplied`, so it holds
   * at most what the inbox holds (inboxMessagesMax updates).
   */
  private readonly verifiedQueued = new Map<NodeId, { evenSeq: number; signature: Uint8Array }>()

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
    refuseCharacters(id, what)
  }

  checkNames(names: readonly unknown[], what: string): string[] {
    if (names.length > this.limits.namesPerNodeMax) {
      throw new PhoenixError('LIMIT_EXCEEDED', `${what}: ${names.length} names, at most ${this.limits.namesPerNodeMax} per node (namesPerNodeMax)`)
    }
    for (const name of names) {
      if (typeof name !== 'string' || name.length === 0 || name.length > this.limits.nameLengthMax) {
        const got = typeof name !== 'string' ? typeof name : name.length === 0 ? 'an empty one' : `one of ${name.length}`
        throw new PhoenixError('INVALID_INPUT', `${what}: a name must be a non-empty string of at most ${this.limits.nameLengthMax} characters, got ${got}`)
      }
      refuseCharacters(name, `${what}: a name`)
    }
    // Names per node are few: a quadratic scan beats allocating a Set for every entry received.
    for (let i = 1; i < names.length; i++) {
      for (let j = 0; j < i; j++) if (names[i] === names[j]) throw new PhoenixError('INVALID_INPUT', `${what}: ${JSON.stringify(names[i])} is given twice`)
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
      refuseCharacters(address, `${what}: an address`)
    }
    return addresses as string[]
  }

  /** Checks a whole update against the wire's shape and our limits (throws INVALID_INPUT, nothing kept). */
  checkMessage(message: UpdateMessage): void {
    this.checkFrame(message)
    for (const entry of message.entries) this.checkAdvert(entry, message.transSets.length)
  }

  /**
   * Admits an update from `from` or drops the neighbour: its token bucket, then the records it
   * carries. A full table or a neighbour over its share is not a reason to drop it: the surplus is
   * refused when the update is applied (`mayIntroduce`).
   */
  admit(from: Neighbour, budgets: NeighbourTable, message: UpdateMessage, nowMs: number, known: (destination: NodeId) => RouteEntry | undefined): void {
    // An update costs at least one entry: empty ones cost us their handling too, and were free
    // (a new-user audit's flood of 3-byte empty updates held a hub at 100% CPU, never dropped).
    this.chargeBucket(from, budgets, message.entries.length + 1, nowMs)
    this.checkRelayedDistances(from.id, message)
    this.verifyRecords(from.id, message, known)
  }

  /**
   * 0 hops is the sender's own record: a reachable route to anyone else is at least one hop away.
   * A member replaying another node's signed record at 0 hops (the signature covers the record,
   * not the distance) became an equal-cost next hop toward that node, even for its own direct
   * neighbours, and took its traffic (found by an adversarial audit).
   */
  private checkRelayedDistances(from: NodeId, message: UpdateMessage): void {
    for (const advert of message.entries) {
      if (advert.nhops === 0 && advert.destination !== from && !isUnreachableSeq(advert.seq)) {
        this.drop(from, 'INVALID_INPUT', `it advertised a route to ${advert.destination} at 0 hops (only its own record is 0 hops away)`)
      }
    }
  }

  /**
   * May neighbour `from` introduce a new destination whose record carries `names` names? Its own
   * record always may (and is not charged: `introduced` is not called for it). Otherwise only
   * within its shares (destinationsPerNeighbourMax, namesPerNeighbourMax); a refusal is counted.
   */
  mayIntroduce(from: NodeId, destination: NodeId, names: number): boolean {
    if (destination === from) return true
    const limits = this.limits
    if ((this.introducedBy.get(from) ?? 0) + 1 <= limits.destinationsPerNeighbourMax && (this.introducedNamesBy.get(from) ?? 0) + names <= limits.namesPerNeighbourMax) return true
    this.counters.introductionsRefused++
    return false
  }

  /** May the record of a destination `from` introduced grow by `delta` names? Within its name share only. */
  mayGrowNames(introducer: NodeId, delta: number): boolean {
    if (delta <= 0 || (this.introducedNamesBy.get(introducer) ?? 0) + delta <= this.limits.namesPerNeighbourMax) return true
    this.counters.introductionsRefused++
    return false
  }

  /** `peer` introduced a destination now in the table. */
  introduced(peer: NodeId): void {
    this.introducedBy.set(peer, (this.introducedBy.get(peer) ?? 0) + 1)
  }

  /** A destination `peer` introduced left the table, with its `names` names. */
  forgotten(peer: NodeId, names: number): void {
    adjust(this.introducedBy, peer, -1)
    this.countNames(peer, -names)
  }

  /** The names of a destination `peer` introduced changed by `delta`. */
  countNames(peer: NodeId, delta: number): void {
    adjust(this.introducedNamesBy, peer, delta)
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
    // A table a core made holds only checked ids and says how long the longest is (a simulator's
    // cores share their senders' tables); any other table (decoded from the wire) is read. Not a
    // map keyed by every table read: a clique of 5,000 makes millions of them, and that run died
    // inside a WeakMap insert (simulations/ANALYSIS.md, "The fifth wall").
    const longest = coreSlotTableLongestId(message.neighbourSlots)
    if (longest !== undefined) {
      if (longest > this.limits.nodeIdLengthMax) malformed('neighbour slot is not a node id')
    } else {
      for (const id of message.neighbourSlots) {
        if (typeof id !== 'string' || id.length > this.limits.nodeIdLengthMax) malformed('neighbour slot is not a node id')
      }
    }
    const lost = message.lostNeighbours
    if (lost !== undefined) {
      if (!Array.isArray(lost) || lost.length > this.limits.neighboursMax) malformed(`lostNeighbours is not a list of at most ${this.limits.neighboursMax} node ids (neighboursMax)`)
      for (const id of lost) this.checkNodeId(id, 'lostNeighbours entry')
    }
    if (message.planEnd !== undefined && message.planEnd !== true) malformed('planEnd is neither true nor absent')
    if (message.allServed !== undefined && message.allServed !== true) malformed('allServed is neither true nor absent')
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

  private drop(peer: NodeId, code: 'LIMIT_EXCEEDED' | 'INVALID_INPUT', why: string): never {
    this.counters.peersDropped++
    this.closes.push({ type: 'close', peer, reason: why })
    throw new PhoenixError(code, `peer ${peer} dropped: ${why}`)
  }

  /** Drops a neighbour that sends more entries than its token bucket allows: reading them costs us, whoever signed them. */
  private chargeBucket(from: Neighbour, budgets: NeighbourTable, entries: number, nowMs: number): void {
    const limits = this.limits
    if (budgets.chargeUpdateBudget(from, entries, nowMs, limits.updateEntriesPerSecondMax, limits.updateEntriesBurstMax) < 0) {
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
      // Older than what we hold: applying it changes nothing (apply.ts), so it is not verified.
      // Replayed stale records were each verified again (an adversarial audit held a hub at 100%
      // CPU with 40 frames of old records in a loop, under the entries' token bucket).
      if (entry !== undefined && seqNewer(entry.seq, advert.seq)) continue
      const queued = this.verifiedQueued.get(advert.destination)
      if (queued !== undefined && queued.evenSeq === evenSeq && bytesEqual(queued.signature, signature)) continue
      this.counters.recordsVerified++
      const payload = recordPayload(advert.destination, evenSeq, advert.names, advert.addresses)
      if (signature.length === 0 || !records.verify(advert.destination, payload, signature)) {
        this.drop(from, 'INVALID_INPUT', `it sent a record for ${advert.destination} (seq ${advert.seq}) whose signature does not verify`)
      }
      this.verifiedQueued.set(advert.destination, { evenSeq, signature })
    }
  }

  /** The inbox was applied: what it verified is in the table now, or was refused there. */
  inboxApplied(): void {
    // Map.clear() allocates a new table even when empty (V8); this runs per step.
    if (this.verifiedQueued.size > 0) this.verifiedQueued.clear()
  }
}

/**
 * Characters no id, name or address may contain. They come from every member of the overlay and
 * end up in operators' terminals (`phoenix routes`, `members`, `topology`), logs and lookups:
 * - C0 and C1 control characters and DEL (`\p{Cc}`): a name carrying an escape sequence
 *   recoloured or rewrote an operator's terminal, and one with a newline broke the tables (found
 *   by hand, `POST /names?add=%1b[31mRED`);
 * - format characters (`\p{Cf}`): a bidi override or isolate (U+202A-U+202E, U+2066-U+2069)
 *   reverses the rest of a `phoenix routes` line in a terminal that applies bidi, so a name can
 *   show another node's id beside it, and zero-width ones (U+200B-U+200D, U+2060, U+FEFF) make a
 *   name look exactly like another member's while being a different name (found by hand:
 *   `--name` with a U+202E was taken and printed raw);
 * - unpaired surrogates (`\p{Cs}`, only an API caller can make one): UTF-8 on the wire turns
 *   them into U+FFFD, so every peer would know the name under another spelling than its holder,
 *   and sends to it from elsewhere failed NO_ROUTE.
 * Refused wherever one enters: our own names and hubs, and every update (a record carrying one is
 * malformed). Names are identifiers: letters of any script, digits, punctuation, symbols and
 * emoji without joiners are all taken.
 */
const REFUSED_CHARACTER = /[\p{Cc}\p{Cf}\p{Cs}]/u
const REFUSED_CHARACTERS = /[\p{Cc}\p{Cf}\p{Cs}]/gu

/** What a name, address or id must not contain, said the same way by every layer that checks one. */
export const REFUSED_CHARACTERS_RULE = 'must not contain control characters, format characters (bidi controls, zero-width characters) or unpaired surrogates'

export function hasRefusedCharacters(text: string): boolean {
  return REFUSED_CHARACTER.test(text)
}

/**
 * Why no node can hold `name`, or undefined: empty, longer than `lengthMax` characters (the
 * default limit unless given), or holding a character `hasRefusedCharacters` refuses. The one
 * rule behind the transport's name options, its member patterns and the CLI's `--name` flags,
 * said the same way by each (the caller puts the option's name in front).
 */
export function nameProblem(name: string, lengthMax: number = DEFAULT_LIMITS.nameLengthMax): string | undefined {
  if (name.length === 0) return 'must be a non-empty string'
  if (name.length > lengthMax) return `is ${name.length} characters, more than ${lengthMax} (nameLengthMax)`
  if (hasRefusedCharacters(name)) return `${REFUSED_CHARACTERS_RULE}, got ${quoteEscaped(name)}`
  return undefined
}

/** `text` quoted, with every refused character escaped (`\u202e`), so that an error message showing it cannot itself rewrite the terminal it is printed on. */
export function quoteEscaped(text: string): string {
  return JSON.stringify(text).replace(REFUSED_CHARACTERS, (c) => {
    const code = c.codePointAt(0)!
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`
  })
}

function refuseCharacters(text: string, what: string): void {
  if (REFUSED_CHARACTER.test(text)) throw new PhoenixError('INVALID_INPUT', `${what} ${REFUSED_CHARACTERS_RULE}, got ${quoteEscaped(text)}`)
}

/** A malformed update, as the error the sender sees. A function, not a closure per check: checks run once per received entry. */
function malformed(why: string): never {
  throw new PhoenixError('INVALID_INPUT', `malformed update: ${why}`)
}

/** Adds `delta` to a per-neighbour count, forgetting it at zero: the maps hold only neighbours with something in the table. */
function adjust(counts: Map<NodeId, number>, peer: NodeId, delta: number): void {
  if (delta === 0) return
  const n = (counts.get(peer) ?? 0) + delta
  invariant(n >= 0, `a per-neighbour count of ${peer} stays non-negative`)
  if (n === 0) counts.delete(peer)
  else counts.set(peer, n)
}
