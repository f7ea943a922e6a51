import { invariant } from './errors.ts'
import { NodeSet } from './nodeset.ts'
import type { CoreParts } from './parts.ts'
import type { RouteTable } from './table.ts'
import { Tombstones } from './tombstones.ts'

/**
 * Expiry on a timer: unreachable entries are forgotten `unreachableRetentionMs` after their loss,
 * and the core says when the next one is due (`nextWakeMs`, the idle step's `wakeAtMs`), so an
 * idle node's table shrinks without traffic. Time comes in; nothing here reads a clock.
 */
export class Expiry {
  /** The last seq of each destination forgotten here (tombstones.ts): a replay at or below it is refused. */
  readonly tombstones = new Tombstones()
  /**
   * The oldest `changedAtMs` of the unreachable entries we know of (Infinity: none): the last
   * expiry scan's, lowered by every entry that became unreachable since. Its retention deadline is
   * when the node must wake to forget it, even with nothing else to do.
   */
  private unreachableSinceMs = Number.POSITIVE_INFINITY

  /** When the oldest unreachable entry we know of is due to be forgotten (no earlier than the next expiry scan), or undefined if none is. */
  dueMs(p: CoreParts): number | undefined {
    if (this.unreachableSinceMs === Number.POSITIVE_INFINITY) return undefined
    const due = Math.max(this.unreachableSinceMs + p.timing.unreachableRetentionMs, p.table.nextExpiryScanAtMs)
    // A round under way (fanout.ts) holds expiry off until it is sent; one waiting for co-hubs, until the wait ends.
    return p.fanout.pending ? Math.max(due, p.fanout.waitEndsAtMs) : due
  }

  /** Entries that changed since the last send round and are unreachable now start their retention. */
  noteUnreachable(table: RouteTable): void {
    this.unreachableSinceMs = Math.min(this.unreachableSinceMs, table.dirty.oldestUnreachableMs(table.own.row))
  }

  /** Forgets unreachable entries kept longer than unreachableRetentionMs, and frees their node indices. */
  expire(p: CoreParts, nowMs: number): void {
    // An entry a round under way still has to send is kept, as a dirty one is: a route's loss must
    // reach its destination (it answers with a newer number) before anyone forgets it.
    if (p.fanout.pending) return
    const { nodeIndex, table, neighbours } = p
    const forgotten: number[] = []
    const scanAtMs = table.nextExpiryScanAtMs
    const expired = table.expire(nowMs, p.timing.unreachableRetentionMs)
    if (table.nextExpiryScanAtMs !== scanAtMs) this.unreachableSinceMs = table.oldestUnreachableMs
    for (const { destination, introducedBy, names, seq, record } of expired) {
      if (introducedBy !== undefined) p.police.forgotten(introducedBy, names)
      this.tombstones.forgotten(destination, seq, record, p.limits)
      // No longer remembered: its addresses are not kept dialled any more.
      p.book.forgetLost(destination)
      p.traffic.entriesExpired++
      const index = nodeIndex.get(destination)
      if (index !== undefined && !neighbours.has(destination)) forgotten.push(index)
    }
    if (forgotten.length > 0) forgetNumbers(p, forgotten)
  }

  /**
   * Makes room for `count` more node numbers if the numbering is short of it, by freeing those of
   * nodes we hold no entry for and are not connected to: named only in slot tables (a sender's
   * neighbours, for its trans sets), which nothing else frees. A member naming invented ids in its
   * slot tables filled the numbering for good in 18 updates (an adversarial audit): no new
   * neighbour, no new destination, until a restart. Before a message is applied and before a
   * connection is numbered, never within either (a message's sets hold numbers while it is
   * applied); not while a round is under way (its plans name nodes by number), nor in a
   * simulator's shared numbering (no member lies there, and other cores use the numbers).
   */
  makeRoom(p: CoreParts, count: number): void {
    const { nodeIndex, table, neighbours } = p
    if (nodeIndex.max - nodeIndex.size >= count || p.numbering !== undefined || p.fanout.pending) return
    // A scan that found nothing to free is not repeated until the numbering changes (a table full of destinations).
    if (nodeIndex.size === this.fruitlessScanAtSize) return
    const unheld: number[] = []
    for (let index = 0; index < nodeIndex.highWater; index++) {
      const id = nodeIndex.id(index)
      if (id !== undefined && table.get(id) === undefined && !neighbours.has(id)) unheld.push(index)
    }
    this.fruitlessScanAtSize = unheld.length === 0 ? nodeIndex.size : -1
    if (unheld.length > 0) forgetNumbers(p, unheld)
  }

  private fruitlessScanAtSize = -1
}

/**
 * Frees `forgotten` (numbers of nodes we hold no entry for and are not connected to): scrubbed
 * from every set that names nodes by number, then released for reuse (a simulator's shared
 * numbering is never released: other cores may still use the number).
 */
function forgetNumbers(p: CoreParts, forgotten: readonly number[]): void {
  const { nodeIndex, numbering, table, neighbours } = p
  const gone = new NodeSet()
  for (const index of forgotten) gone.add(index)
  table.forgetIndices(gone)
  // A hub's word that its neighbours are served (apply.ts `hubsServe`) names nodes by index too:
  // kept, a released index went back into rcpt and, reused, made another node a holder.
  for (const [hub, served] of neighbours.servedBy) neighbours.servedBy.set(hub, table.holders.withoutAll(served, gone))
  if (numbering === undefined) {
    for (const index of forgotten) {
      const id = nodeIndex.id(index)
      invariant(id !== undefined, 'a forgotten node was numbered')
      nodeIndex.release(id)
    }
  }
  // A cached slot map could name a released index that is later reused for another node.
  neighbours.forgetSenderSlots()
}
