import { invariant } from './errors.ts'
import type { CoreParts } from './parts.ts'
import { isUnreachableSeq, seqAdd, seqNewer } from './seq.ts'
import type { NodeId, RouteAdvert } from './types.ts'

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
 * owner is then answered as a retained entry would answer it: its record withdrawn one number
 * up, which only the owner is sent (`hearsay`), and from which it issues the next even number;
 * once its number passes the tombstone the record is taken and relayed as any fresher one, and
 * the tombstone goes. A record newer than the tombstone removes it too.
 */
export class Tombstones {
  /** Forgotten destination -> the last seq we held, oldest first (a Map keeps insertion order); at most `tombstonesMax`. */
  private readonly lastSeq = new Map<NodeId, number>()

  get size(): number {
    return this.lastSeq.size
  }

  /** `destination` was forgotten at `seq`; past `max` the oldest tombstone goes (its replays are taken as new again). */
  forgotten(destination: NodeId, seq: number, max: number): void {
    this.lastSeq.delete(destination)
    if (max === 0) return
    this.lastSeq.set(destination, seq)
    if (this.lastSeq.size > max) {
      const oldest = this.lastSeq.keys().next().value
      invariant(oldest !== undefined, 'a full tombstone table has an oldest')
      this.lastSeq.delete(oldest)
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
      this.lastSeq.delete(advert.destination)
      return 'take'
    }
    // The owner's own record (even): it lives. Its withdrawal (odd: it leaves) changes nothing here.
    if (advert.destination === from && !isUnreachableSeq(advert.seq)) return 'answer'
    return 'refuse' // a replay, or a restarted owner's old number relayed before it passed the tombstone
  }

  /** Checks the bound (for `PhoenixCore.checkInvariants`). */
  checkInvariants(max: number): void {
    invariant(this.lastSeq.size <= max, `at most tombstonesMax (${max}) tombstones`)
  }
}

/**
 * The owner of a forgotten destination advertised itself at or below its tombstone (it restarted,
 * its number forgotten): we hold its record withdrawn one number up (its own signature covers the
 * withdrawal), as an entry sent to nobody but the owner (`hearsay`, route.ts; the owner is sent it
 * because it holds an older number, apply.ts `heardFromOwner`). The owner then issues the next even
 * number, and we answer again until that passes the tombstone. `admit`: whether the record's
 * names may be stored (apply.ts `admitClaims`); if not, nothing is stored, as for any record.
 */
export function answerOwner(p: CoreParts, advert: RouteAdvert, admit: (advert: RouteAdvert) => boolean, nowMs: number): void {
  const { table } = p
  let entry = table.get(advert.destination)
  if (entry === undefined) {
    if (table.size >= p.limits.destinationsMax || !admit(advert)) return
    entry = table.insert(advert.destination, advert.seq, advert.destination)
    if (entry === undefined) return
    entry.introducedBy = undefined // its own record: charged to no share (police.ts)
  } else if (!seqNewer(seqAdd(advert.seq, 1), entry.seq)) return // we answer it already
  else if (!admit(advert)) return
  invariant(!isUnreachableSeq(advert.seq), 'the owner advertises itself at an even number')
  table.invalidate(entry, nowMs, { ...advert, seq: seqAdd(advert.seq, 1) })
  entry.hearsay = true
}
