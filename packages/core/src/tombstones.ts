import { invariant } from './errors.ts'
import type { CoreParts } from './parts.ts'
import { isUnreachableSeq, seqAdd, seqNewer } from './seq.ts'
import { UNREACHABLE_HOPS } from './route.ts'
import type { NodeId, PhysicalAddress, RouteAdvert } from './types.ts'

/** The last record held of a forgotten destination: what its owner signed (a withdrawal carries the signature of the even number below). */
export interface KeptRecord {
  readonly names: readonly string[]
  readonly addresses: readonly PhysicalAddress[]
  readonly signature: Uint8Array
}

/** What a kept record is counted as against `tombstoneRecordBytesMax`: 2 bytes a character (UTF-16), the signature, and the arrays around them. */
export function keptRecordBytes(record: KeptRecord): number {
  let chars = 0
  for (const name of record.names) chars += name.length
  for (const address of record.addresses) chars += address.length
  return KEPT_RECORD_OVERHEAD_BYTES + 2 * chars + record.signature.length
}

/** Two arrays, an object and a map slot, roughly (V8). */
const KEPT_RECORD_OVERHEAD_BYTES = 128

/**
 * Tombstones (packages/core/README.md, "Replays"): the last sequence number we held of each
 * destination we forgot (expiry.ts, `unreachableRetentionMs` after its loss). Before, a forgotten
 * destination's last record was new to us again: a member that kept a crashed node's last signed
 * record replayed it once, after everyone had forgotten the node, at 1 hop; it was stored as a new
 * destination, reachable through the member, and a reachable entry never expires, so the dead
 * node was routed to the member and held its names for as long as the member stayed (an
 * adversarial audit, `test/audit-replay-dead.test.ts`).
 *
 * Now a record at or below a destination's tombstone is refused, unless it comes from the owner
 * itself (the transport authenticated it: it lives, restarted with its number forgotten). The
 * owner is then answered as a retained entry would answer it: with its last record we held,
 * withdrawn (kept with the tombstone, `KeptRecord`; its own signature covers it; unsigned, its own
 * record serves), which only the owner is sent (`hearsay`); it issues the next even number, above the tombstone, and its record is
 * taken and relayed as any fresher one, and the tombstone goes: one round trip. A record newer than
 * the tombstone removes it too. Without the kept record (over `tombstoneRecordBytesMax`, or its
 * names held by another node now) the owner's own record is answered withdrawn one number up, as
 * before: one round trip per two numbers below the tombstone. A record at or below it relayed by
 * another neighbour is answered with the kept record too, sent on as a loss (`answerRelayed`).
 */
export class Tombstones {
  /** Forgotten destination -> the last seq we held, oldest first (a Map keeps insertion order); at most `tombstonesMax`. */
  private readonly lastSeq = new Map<NodeId, number>()
  /**
   * The signed records kept with tombstones, oldest first: the first to go past the budget. An
   * unsigned one is not kept: nobody checks the answer's signature, so the owner's own record
   * serves (`withdrawnRecord`), and a simulator's thousands of cores keep only the numbers.
   */
  private readonly records = new Map<NodeId, KeptRecord>()
  /** What the kept records are counted as (`keptRecordBytes`): at most `tombstoneRecordBytesMax`. */
  private recordBytes = 0

  get size(): number {
    return this.lastSeq.size
  }

  /** How many tombstones keep their record (for tests). */
  get recordsKept(): number {
    return this.records.size
  }

  /**
   * `destination` was forgotten at `seq`, its last record `record`; past `tombstonesMax` the oldest
   * tombstone goes (its replays are taken as new again), past `tombstoneRecordBytesMax` the oldest records go.
   */
  forgotten(destination: NodeId, seq: number, record: KeptRecord, limits: TombstoneLimits): void {
    this.remove(destination)
    if (limits.tombstonesMax === 0) return
    this.lastSeq.set(destination, seq)
    const bytes = keptRecordBytes(record)
    if (record.signature.length > 0 && bytes <= limits.tombstoneRecordBytesMax) {
      this.records.set(destination, record)
      this.recordBytes += bytes
    }
    if (this.lastSeq.size > limits.tombstonesMax) {
      const oldest = this.lastSeq.keys().next().value
      invariant(oldest !== undefined, 'a full tombstone table has an oldest')
      this.remove(oldest)
    }
    while (this.recordBytes > limits.tombstoneRecordBytesMax) {
      const oldest = this.records.keys().next().value
      invariant(oldest !== undefined, 'kept records over the budget have an oldest')
      this.dropRecord(oldest)
    }
  }

  /**
   * What to do with `advert` from neighbour `from`: 'take' it as usual (no tombstone, or it is
   * newer than the tombstone, which then goes), 'refuse' it (at or below the tombstone, relayed),
   * or 'answer' the owner (at or below it, from the owner itself: `answerOwner`).
   */
  verdict(advert: RouteAdvert, from: NodeId): 'take' | 'refuse' | 'answer' {
    const seq = this.lastSeq.get(advert.destination)
    if (seq === undefined) return 'take'
    if (seqNewer(advert.seq, seq)) {
      this.remove(advert.destination)
      return 'take'
    }
    // The owner's own record (even): it lives. Its withdrawal (odd: it leaves) changes nothing here.
    if (advert.destination === from && !isUnreachableSeq(advert.seq)) return 'answer'
    return 'refuse' // a replay, or a restarted owner's old number relayed before it passed the tombstone
  }

  /**
   * What answers the owner's `advert` at or below its tombstone in one round trip: its record
   * withdrawn at the tombstone's number (one up if that is even). The kept signed record; for an
   * unsigned one (nobody checks a signature) its own; undefined if a signed one was not kept.
   */
  withdrawnRecord(advert: RouteAdvert): RouteAdvert | undefined {
    const tombstone = this.lastSeq.get(advert.destination)
    if (tombstone === undefined) return undefined
    const seq = isUnreachableSeq(tombstone) ? tombstone : seqAdd(tombstone, 1)
    const kept = this.records.get(advert.destination)
    if (kept !== undefined) return { ...advert, seq, nhops: UNREACHABLE_HOPS, names: kept.names, addresses: kept.addresses, signature: kept.signature }
    if (advert.signature === undefined || advert.signature.length === 0) return { ...advert, seq, nhops: UNREACHABLE_HOPS }
    return undefined
  }

  /** Checks the bounds (for `PhoenixCore.checkInvariants`). */
  checkInvariants(limits: TombstoneLimits): void {
    invariant(this.lastSeq.size <= limits.tombstonesMax, `at most tombstonesMax (${limits.tombstonesMax}) tombstones`)
    invariant(this.recordBytes <= limits.tombstoneRecordBytesMax, `kept records within tombstoneRecordBytesMax (${limits.tombstoneRecordBytesMax})`)
    invariant(this.records.size <= this.lastSeq.size, 'a kept record belongs to a tombstone')
  }

  private remove(destination: NodeId): void {
    this.dropRecord(destination)
    this.lastSeq.delete(destination)
  }

  private dropRecord(destination: NodeId): void {
    const record = this.records.get(destination)
    if (record === undefined) return
    this.recordBytes -= keptRecordBytes(record)
    this.records.delete(destination)
  }
}

/** The limits a tombstone table keeps to (`CoreLimits`). */
export interface TombstoneLimits {
  readonly tombstonesMax: number
  readonly tombstoneRecordBytesMax: number
}

/**
 * The owner of a forgotten destination advertised itself at or below its tombstone (it restarted,
 * its number forgotten): we hold its last record we held, withdrawn at the tombstone's number
 * (`Tombstones.withdrawnRecord`: its own signature covers it), as an entry sent to nobody but the
 * owner (`hearsay`, route.ts; the owner is sent it because it holds an older number, apply.ts
 * `heardFromOwner`). The owner then issues the next even number, above the tombstone: one round
 * trip. Without a kept record (dropped for the budget, or its names may not be stored now: another
 * node holds one) the owner's own record is held withdrawn one number up, and we answer again
 * until its number passes the tombstone. `admit`: whether a record's names may be stored (apply.ts
 * `admitClaims`); if neither's may, nothing is stored, as for any record.
 */
export function answerOwner(p: CoreParts, advert: RouteAdvert, admit: (advert: RouteAdvert) => boolean, nowMs: number): void {
  invariant(!isUnreachableSeq(advert.seq), 'the owner advertises itself at an even number')
  const { table } = p
  let entry = table.get(advert.destination)
  if (entry !== undefined && !seqNewer(seqAdd(advert.seq, 1), entry.seq)) return // we answer it already
  if (entry === undefined && table.size >= p.limits.destinationsMax) return
  const kept = p.expiry.tombstones.withdrawnRecord(advert)
  let answer: RouteAdvert
  if (kept !== undefined && admit(kept)) answer = kept
  else if (admit(advert)) answer = { ...advert, seq: seqAdd(advert.seq, 1) }
  else return
  if (entry === undefined) {
    entry = table.insert(advert.destination, advert.seq, advert.destination)
    if (entry === undefined) return
    entry.introducedBy = undefined // its own record: charged to no share (police.ts)
  }
  table.invalidate(entry, nowMs, answer)
  entry.hearsay = true
}

/**
 * A neighbour relayed the record of a forgotten destination at or below our tombstone: a replay,
 * or its owner restarted and reached a node that held no tombstone of it (a hub restarted with
 * it, or a node that joined since). Refused, as before; but the neighbour holds a route at that
 * number, and if the owner lives its number moves only when its record changes, so nodes behind
 * us refused it for good (item 2 of the robustness list). So we answer as for a restarted owner,
 * with the last record we held, withdrawn at the tombstone's number, as an entry sent on like a
 * loss: the neighbour takes it (it is newer), and it goes back to the owner, which issues the next
 * number, above the tombstone; a replayed dead node is withdrawn where the replay was taken. Once
 * per number: an entry we hold already answers a repeat. Nothing if the record is a withdrawal
 * (the neighbour routes nowhere), or no signed record was kept, or its names may not be stored now.
 */
export function answerRelayed(p: CoreParts, advert: RouteAdvert, from: NodeId, admit: (advert: RouteAdvert) => boolean, nowMs: number): void {
  if (isUnreachableSeq(advert.seq) || p.table.get(advert.destination) !== undefined || p.table.size >= p.limits.destinationsMax) return
  const kept = p.expiry.tombstones.withdrawnRecord(advert)
  // Charged to the neighbour's share (police.ts), as a destination it introduces: a member that
  // relays many replays makes us hold at most its share of them again, each until it expires.
  if (kept === undefined || !p.police.mayIntroduce(from, advert.destination, kept.names.length) || !admit(kept)) return
  const entry = p.table.insert(advert.destination, advert.seq, from)
  if (entry === undefined) return
  p.police.introduced(from)
  p.police.countNames(from, p.table.invalidate(entry, nowMs, kept))
}
