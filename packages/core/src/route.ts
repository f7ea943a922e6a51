import { EMPTY_SET, type NodeSet } from './nodeset.ts'
import { isUnreachableSeq, seqNewer } from './seq.ts'
import type { NodeId, PhysicalAddress } from './types.ts'

export const NO_SIGNATURE = new Uint8Array(0)

/** nhops of an unreachable entry. */
export const UNREACHABLE_HOPS = Number.POSITIVE_INFINITY

/** R_u[v]: what node u knows about destination v. */
export class RouteEntry {
  fwd: NodeId | undefined = undefined
  nhops: number = UNREACHABLE_HOPS
  seq = 0
  names: readonly string[] = []
  addresses: readonly PhysicalAddress[] = []
  /** The destination's signature over the record (names, addresses, even part of seq); empty when unsigned. */
  signature: Uint8Array = NO_SIGNATURE
  /** Nodes this entry (as it is now) has been sent to, or who are known to hold it. Shared copy-on-write. */
  trans: NodeSet = EMPTY_SET
  /** Nodes that received, or will soon receive, an entry at least as good from someone else. Shared copy-on-write. */
  rcpt: NodeSet = EMPTY_SET
  /** Members of rcpt hold this sequence number at no more than this many hops (what a shorter route of ours could still improve). */
  rcptHopsMax = 0
  /** The neighbour that first told us of this destination (per-neighbour limits count against it). */
  introducedBy: NodeId | undefined = undefined
  /** When fwd/nhops/seq last changed: how long an unreachable entry has been kept. */
  changedAtMs = 0

  constructor(readonly destination: NodeId) {}

  get reachable(): boolean {
    return !isUnreachableSeq(this.seq)
  }
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
