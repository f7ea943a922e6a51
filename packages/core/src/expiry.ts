import { invariant } from './errors.ts'
import type { CoreParts } from './parts.ts'
import type { RouteTable } from './table.ts'

/**
 * Expiry on a timer: unreachable entries are forgotten `unreachableRetentionMs` after their loss,
 * and the core says when the next one is due (`nextWakeMs`, the idle step's `wakeAtMs`), so an
 * idle node's table shrinks without traffic. Time comes in; nothing here reads a clock.
 */
export class Expiry {
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
    const { nodeIndex, numbering, table, neighbours } = p
    const forgotten: number[] = []
    const scanAtMs = table.nextExpiryScanAtMs
    const expired = table.expire(nowMs, p.timing.unreachableRetentionMs)
    if (table.nextExpiryScanAtMs !== scanAtMs) this.unreachableSinceMs = table.oldestUnreachableMs
    for (const { destination, introducedBy, names } of expired) {
      if (introducedBy !== undefined) p.police.forgotten(introducedBy, names)
      // No longer remembered: its addresses are not kept dialled any more.
      p.book.forgetLost(destination)
      p.traffic.entriesExpired++
      const index = nodeIndex.get(destination)
      if (index !== undefined && !neighbours.has(destination)) forgotten.push(index)
    }
    if (forgotten.length === 0) return
    table.forgetIndices(forgotten)
    // A shared numbering is never released: other cores may still use the number.
    if (numbering === undefined) {
      for (const index of forgotten) {
        const id = nodeIndex.id(index)
        invariant(id !== undefined, 'a forgotten destination was numbered')
        nodeIndex.release(id)
      }
    }
    // A cached slot map could name a released index that is later reused for another node.
    neighbours.forgetSenderSlots()
  }
}
