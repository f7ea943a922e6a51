import type { RouteColumns } from './columns.ts'
import type { NodeSet } from './nodeset.ts'
import { isUnreachableSeq, seqNewer } from './seq.ts'
import type { NodeId, PhysicalAddress } from './types.ts'

export const NO_SIGNATURE = new Uint8Array(0)

/** nhops of an unreachable entry. */
export const UNREACHABLE_HOPS = Number.POSITIVE_INFINITY
/** The stored nhops of an unreachable entry (columns.ts): no real route is this long. */
export const HOPS_NONE = 0xffff

/**
 * R_u[v]: what node u knows about destination v, as a view of its row in the table's columns
 * (columns.ts), made on demand: it holds nothing but the row, so two views of one row are the same
 * entry (compare `row`, not the objects), and a view outlives nothing — once the table forgets the
 * destination its row may be reused.
 */
export class RouteEntry {
  constructor(
    private readonly columns: RouteColumns,
    /** The destination's row (its node index). */
    readonly row: number,
  ) {}

  get destination(): NodeId {
    return this.columns.idOf(this.row)
  }

  get reachable(): boolean {
    return !isUnreachableSeq(this.columns.seq[this.row]!)
  }

  /** Next hop; undefined when unreachable. */
  get fwd(): NodeId | undefined {
    const at = this.columns.fwd[this.row]!
    return at < 0 ? undefined : this.columns.idOf(at)
  }

  set fwd(id: NodeId | undefined) {
    this.columns.setFwd(this.row, id === undefined ? -1 : this.columns.rowOfNextHop(id))
  }

  get nhops(): number {
    const hops = this.columns.nhops[this.row]!
    return hops === HOPS_NONE ? UNREACHABLE_HOPS : hops
  }

  set nhops(hops: number) {
    this.columns.nhops[this.row] = encodeHops(hops)
  }

  get seq(): number {
    return this.columns.seq[this.row]!
  }

  set seq(seq: number) {
    this.columns.seq[this.row] = seq
    if (!isUnreachableSeq(seq)) this.columns.setHearsay(this.row, false)
  }

  /**
   * Learned only as unreachable: the destination was first heard of here in a retraction (odd
   * seq), so no route of ours to it was ever lost, and no neighbour routes through us to it. Such
   * an entry is kept (its names stay held, a stale even record stays refused) but never sent on:
   * passed on, it started its retention anew at each node that learned it, so under churn a node
   * that joined later taught a dead destination back to those that had forgotten it, and no dead
   * entry ever expired (an audit: 355 after 40 min of churn, all names of crashed nodes held).
   * Cleared by an even seq (a route).
   */
  get hearsay(): boolean {
    return this.columns.isHearsay(this.row)
  }

  set hearsay(hearsay: boolean) {
    this.columns.setHearsay(this.row, hearsay && !this.reachable)
  }

  get names(): readonly string[] {
    return this.columns.namesOf(this.row)
  }

  set names(names: readonly string[]) {
    this.columns.setNames(this.row, names)
  }

  get addresses(): readonly PhysicalAddress[] {
    return this.columns.addresses.of(this.row)
  }

  set addresses(addresses: readonly PhysicalAddress[]) {
    this.columns.addresses.set(this.row, addresses)
  }

  /** The destination's signature over the record (names, addresses, even part of seq); empty when unsigned. */
  get signature(): Uint8Array {
    return this.columns.signatureOf(this.row)
  }

  set signature(signature: Uint8Array) {
    this.columns.setSignature(this.row, signature)
  }

  /** Nodes this entry (as it is now) has been sent to, or who are known to hold it. Interned (holders.ts). */
  get trans(): NodeSet {
    return this.columns.transOf(this.row)
  }

  set trans(set: NodeSet) {
    this.columns.setTrans(this.row, set)
  }

  /** Nodes that received, or will soon receive, an entry at least as good from someone else. Interned (holders.ts). */
  get rcpt(): NodeSet {
    return this.columns.rcptOf(this.row)
  }

  set rcpt(set: NodeSet) {
    this.columns.setRcpt(this.row, set)
  }

  /**
   * The neighbours whose trans sets put others into trans and rcpt: holders we believe on their
   * word alone. Its word covers messages it had not delivered yet; if it crashes they are lost,
   * so when one of these neighbours goes, what trans and rcpt say is forgotten (`RouteTable.neighbourGone`).
   * Interned (holders.ts).
   */
  get vouchers(): NodeSet {
    return this.columns.vouchersOf(this.row)
  }

  set vouchers(set: NodeSet) {
    this.columns.setVouchers(this.row, set)
  }

  /** Members of rcpt hold this sequence number at no more than this many hops (what a shorter route of ours could still improve). */
  get rcptHopsMax(): number {
    const hops = this.columns.rcptHopsMax[this.row]!
    return hops === HOPS_NONE ? UNREACHABLE_HOPS : hops
  }

  set rcptHopsMax(hops: number) {
    this.columns.rcptHopsMax[this.row] = encodeHops(hops)
  }

  /** The neighbour that first told us of this destination (per-neighbour limits count against it). */
  get introducedBy(): NodeId | undefined {
    return this.columns.introducers.of(this.row)
  }

  set introducedBy(id: NodeId | undefined) {
    this.columns.introducers.set(this.row, id)
  }

  /**
   * When fwd/nhops/seq last changed: how long an unreachable entry has been kept. Kept only while
   * unreachable (columns.ts `unreachableSinceMs`): write it after the seq; a reachable entry reads 0.
   */
  get changedAtMs(): number {
    return this.columns.changedAtMsOf(this.row)
  }

  set changedAtMs(ms: number) {
    this.columns.setChangedAtMs(this.row, ms)
  }
}

/** The longest route a row stores: an advert carries at most `advertHopsMax` (255) hops, so a row holds at most 256. */
const HOPS_STORED_MAX = HOPS_NONE - 1

/** Stored form of a hop count: Infinity (unreachable) as HOPS_NONE. */
function encodeHops(hops: number): number {
  if (hops === UNREACHABLE_HOPS) return HOPS_NONE
  if (!(Number.isInteger(hops) && hops >= 0 && hops <= HOPS_STORED_MAX)) throw new RangeError(`a stored hop count is an integer in [0, ${HOPS_STORED_MAX}], got ${hops}`)
  return hops
}

/**
 * The freshness rule, as one pure predicate: a candidate replaces the current entry if its
 * sequence number is newer, or equal with strictly fewer hops. Loop-freedom rests on this:
 * along any chain of next hops (seq, -nhops) strictly increases, so no chain can close.
 */
export function isFresher(candidateSeq: number, candidateHops: number, currentSeq: number, currentHops: number): boolean {
  if (seqNewer(candidateSeq, currentSeq)) return true
  return candidateSeq === currentSeq && candidateHops < currentHops
}
