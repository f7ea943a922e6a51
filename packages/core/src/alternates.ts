import { invariant } from './errors.ts'
import type { RouteEntry } from './route.ts'
import type { NodeId } from './types.ts'

/**
 * Several next hops per destination (equal-cost multipath, packages/core/README.md "Several next
 * hops"). Besides `fwd`, a route entry keeps its *alternates*: the neighbours that advertised the
 * destination at exactly our (seq, nhops − 1) with an even seq. The freshness rule is unchanged:
 * a fresher route resets them to the one neighbour it came from; an equal offer from another
 * neighbour adds it. An alternate that advertises worse at our seq, or whose connection drops, is
 * removed; if it was `fwd`, `fwd` moves to a surviving alternate with no change of (seq, nhops):
 * nothing to advertise, so failover is as fast as the connection drop. Only when none survives
 * does the table's usual invalidation happen. A retraction (odd seq) is fresher, so it is adopted
 * as in single-path DSDV even while alternates remain: the odd number must reach the destination
 * for the retracting neighbour ever to get a route again (apply.ts, `applyAdvert`).
 *
 * Loop freedom holds for every alternate, not only `fwd`: w was admitted when it advertised
 * (s, h − 1) for our (s, h); a neighbour's value never decreases at a fixed seq, and w's
 * retraction reaches us on w's one ordered stream before anything w sends later, and resets them.
 *
 * Storage: only entries with two or more alternates are stored (`fwd` is always among them);
 * absent means {fwd}. With `ecmpNextHopsMax` 1 nothing is ever stored and the table behaves
 * exactly as single-path DSDV.
 */
export class Alternates {
  /** Destination -> its alternates, sorted, `fwd` among them, 2..ecmpNextHopsMax long. At most one per table entry. */
  private readonly byDestination = new Map<NodeId, NodeId[]>()

  constructor(
    /** Next hops kept per destination (CoreLimits.ecmpNextHopsMax); 1 = single-path DSDV. */
    private readonly nextHopsMax: number,
  ) {
    invariant(Number.isInteger(nextHopsMax) && nextHopsMax >= 1, 'ecmpNextHopsMax is at least 1')
  }

  /** Whether several next hops are kept at all. */
  get enabled(): boolean {
    return this.nextHopsMax > 1
  }

  /** Destinations with two or more next hops. */
  get size(): number {
    return this.byDestination.size
  }

  /** The route to `entry` changed (adopted, direct, invalidated): its only next hop is `fwd` now. */
  reset(entry: RouteEntry): void {
    this.byDestination.delete(entry.destination)
  }

  /** The next hops of a reachable entry, sorted (`[fwd]` if only one); empty if unreachable. */
  of(entry: RouteEntry): readonly NodeId[] {
    if (!entry.reachable || entry.fwd === undefined) return []
    return this.byDestination.get(entry.destination) ?? [entry.fwd]
  }

  /**
   * Neighbour `from` advertised `entry`'s destination at our seq, `candidateHops` being its hops + 1.
   * Equal to ours: `from` becomes an alternate (while there is room). Worse, from an alternate:
   * it is removed (never the last one, which keeps single-path behaviour).
   */
  heardAtSameSeq(entry: RouteEntry, from: NodeId, candidateHops: number): void {
    if (!this.enabled || !entry.reachable || entry.fwd === undefined) return
    if (candidateHops !== entry.nhops) {
      this.remove(entry, from)
      return
    }
    if (from === entry.fwd) return
    const list = this.byDestination.get(entry.destination) ?? [entry.fwd]
    if (list.includes(from) || list.length >= this.nextHopsMax) return
    list.push(from)
    list.sort()
    this.byDestination.set(entry.destination, list)
  }

  /**
   * Whether a node that holds our entry at `heldHops` (at our seq) does not need our offer of
   * `offerHops`. Single path: if it holds one at least as good (the paper's trans/rcpt rule).
   * Several next hops: only if it holds a strictly better one; an equal one means our offer
   * would make us one of its alternates, so it must still get it.
   */
  covers(heldHops: number, offerHops: number): boolean {
    return this.enabled ? heldHops < offerHops : heldHops <= offerHops
  }

  /**
   * Which of `entry`'s next hops need not get our offer of `offerHops` at the same seq (several
   * next hops only; read before a change resets them): each advertised it at `nhops − 1`, so it
   * is covered if that is strictly better. When we connect to a destination our 2-hop route's next
   * hops are directly connected to it too: without this, each got our worse offer of 2, which was
   * most of the cost of equal offers in a subnet whose hosts all connect to each other
   * (packages/core/README.md, "Cost"). Empty with one next hop: the paper's rule covers them.
   */
  heldBetterThan(entry: RouteEntry, offerHops: number): readonly NodeId[] {
    return this.enabled && entry.nhops - 1 < offerHops ? this.of(entry) : []
  }

  /**
   * The connection to `peer` closed. Returns true if `entry` still has a next hop without it
   * (moved to a surviving alternate if `peer` was `fwd`); false if the table must do as before.
   */
  neighbourGone(entry: RouteEntry, peer: NodeId): boolean {
    return this.remove(entry, peer)
  }

  /**
   * The next hop for one flow: among the alternates, the one with the highest rendezvous hash of
   * (our id, destination, flow key, alternate). Pure and stable: a flow stays on one path while
   * its alternate lives; when one goes, only its flows move; salted with our id, so consecutive
   * hops do not all make the same choice. Without a flow key: `fwd`.
   */
  choose(entry: RouteEntry, self: NodeId, flowKey: string | undefined): NodeId | undefined {
    const list = this.byDestination.get(entry.destination)
    if (list === undefined || flowKey === undefined) return entry.fwd
    const prefix = fnv1a(`${self}\u0000${entry.destination}\u0000${flowKey}\u0000`, FNV_OFFSET)
    let best = list[0]
    let bestScore = -1
    for (const alternate of list) {
      const score = mix32(fnv1a(alternate, prefix))
      if (score > bestScore) {
        best = alternate
        bestScore = score
      }
    }
    return best
  }

  /** What must always hold for `entry` (called from the table's invariant check). */
  checkEntry(entry: RouteEntry, isNeighbour: (id: NodeId) => boolean): void {
    const list = this.byDestination.get(entry.destination)
    if (list === undefined) return
    const what = `alternates of ${entry.destination}`
    invariant(entry.reachable && entry.fwd !== undefined && list.includes(entry.fwd), `${what}: kept only for a reachable route, fwd among them`)
    invariant(list.length >= 2 && list.length <= this.nextHopsMax, `${what}: 2..ecmpNextHopsMax (${this.nextHopsMax}) of them`)
    for (const w of list) invariant(isNeighbour(w), `${what}: ${w} is a neighbour`)
  }

  /** Removes `peer` from several alternates (moving `fwd` if needed); false if it was not among several. */
  private remove(entry: RouteEntry, peer: NodeId): boolean {
    const list = this.byDestination.get(entry.destination)
    const at = list === undefined ? -1 : list.indexOf(peer)
    if (list === undefined || at < 0) return false
    list.splice(at, 1)
    if (entry.fwd === peer) entry.fwd = list[0]
    if (list.length === 1) this.byDestination.delete(entry.destination)
    return true
  }
}

/** FNV-1a's 32-bit offset basis: where a hash starts. */
export const FNV_OFFSET = 0x811c9dc5
const FNV_PRIME = 0x01000193

/** 32-bit FNV-1a over the UTF-16 code units of `text`, continuing from `hash`. */
export function fnv1a(text: string, hash: number): number {
  let h = hash
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), FNV_PRIME)
  return h >>> 0
}

/** MurmurHash3's 32-bit finaliser: FNV-1a's last characters barely reach the high bits without it. */
export function mix32(hash: number): number {
  let h = hash
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}
