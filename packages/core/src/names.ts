import { invariant } from './errors.ts'
import type { RouteTable } from './table.ts'
import type { NodeId } from './types.ts'

/** A name claimed by more than one node: who holds it, and whose claims were refused (`PhoenixCore.nameConflicts`). */
export interface NameConflict {
  readonly name: string
  /** The node whose claim this node keeps; undefined if the holder's entry has been forgotten since. */
  readonly holder: NodeId | undefined
  /**
   * Claimants that lost the name here and have not claimed it since with a claim stored here: a
   * record refused (not stored), or a contended claim stored and then given up to the holder
   * (yielded); this node itself included if it yielded.
   */
  readonly refused: readonly NodeId[]
}

/** What `check` decides about a record that claims names. */
export type ClaimVerdict =
  /** Store it: it takes no name another node holds here. */
  | { readonly accept: true; readonly yielded: readonly string[] }
  /** Do not store it: `name` is held by `holder`. */
  | { readonly accept: false; readonly name: string; readonly holder: NodeId }

/**
 * Who holds each logical name, at this node: a record that claims a name is stored only if no
 * other stored record has claimed it for longer than `contentionMs`; then its claim is kept while
 * its entry stays in the table — reachable, or unreachable until it expires
 * (`unreachableRetentionMs` after its loss). A later record that claims a held name is refused
 * whole (never stored, so never relayed): a later claimant cannot take a held name, whatever its
 * id, and every node refuses it alike. Claims stored within `contentionMs` of each other (two nodes
 * claimed a free name at once) are contended: all are stored, the smallest id holds the name at
 * every node, and the others yield. See "Names have holders" in packages/core/README.md.
 *
 * Our own names: a name we claimed before hearing from any neighbour is *pending* until the first
 * update we apply from one of our hubs (from anyone if we were given none); any claim of it in that
 * update wins (the network had it before our record could reach anyone), and we yield. A member
 * that speaks first cannot take it so: its claims of a pending name are refused. A yielded name leaves our record and is claimed again
 * `reclaimDelayMs` after the last stored claim of it is forgotten here.
 */
export class NameHolders {
  /**
   * name -> the nodes whose stored records claim it, each with when its claim was stored here.
   * More than one only while contended (claims within contentionMs of each other).
   */
  private readonly claims = new Map<string, Map<NodeId, number>>()
  /**
   * name -> claimants refused here, in the order they were (last) refused: records refused, and
   * contended claims given up to the holder. A claimant leaves it when a claim of its is stored.
   * Bounded by `refusalsMax` (oldest forgotten first): they are for reporting; refusing needs
   * only `claims`.
   */
  private readonly refused = new Map<string, Map<NodeId, number>>()
  private refusalCount = 0
  /** Our own names still pending (claimed before we heard any neighbour). */
  private readonly pending = new Set<string>()
  /** Names we want but yielded: name -> when we may claim it again (undefined while someone's claim of it is stored). */
  private readonly yielded = new Map<string, number | undefined>()
  private heard = false
  /**
   * Whether the update being applied speaks for the network (apply.ts): it comes from one of our
   * hubs, or from anyone if we were given none. Only such an update settles our pending claims.
   */
  fromNetwork = true
  /** The driver's time, set by the core on every input (the core is pure: time comes in). */
  nowMs = 0
  /** Refusals counted since start (part of `CoreStats.claimsRefused`). */
  claimsRefused = 0

  constructor(
    private readonly self: NodeId,
    private readonly refusalsMax: number,
    private readonly contentionMs: number,
    private readonly reclaimDelayMs: number,
  ) {}

  /** The holder of `name`: the smallest id among the stored claims (one, unless contended). */
  holder(name: string): NodeId | undefined {
    const claimants = this.claims.get(name)
    if (claimants === undefined) return undefined
    let best: NodeId | undefined
    for (const node of claimants.keys()) if (best === undefined || node < best) best = node
    return best
  }

  /**
   * May `claimant`'s record with `names` be stored? Not if one of them has been held by another
   * node for longer than contentionMs — unless that is our pending claim: then we yield. A
   * contended claim is stored, and if it beats ours, we yield. `yielded`: the names our record
   * must drop before the record is stored.
   */
  check(claimant: NodeId, names: readonly string[]): ClaimVerdict {
    let yielded: string[] | undefined
    for (const name of names) {
      const claimants = this.claims.get(name)
      // No other claim, or the claimant holds the name already (its new record keeps it).
      if (claimants === undefined || (claimants.has(claimant) && this.holder(name) === claimant)) continue
      const ours = claimants.has(this.self) && claimant !== this.self
      if (ours && this.pending.has(name)) {
        if (this.fromNetwork) {
          ;(yielded ??= []).push(name)
          continue
        }
        // A member spoke first (not one of our hubs): our pending claim stands against its update,
        // which cannot speak for the network (test/audit-pending-name.test.ts).
        this.refuse(name, claimant)
        return { accept: false, name, holder: this.self }
      }
      let since = Number.POSITIVE_INFINITY
      for (const [node, at] of claimants) if (node !== claimant) since = Math.min(since, at)
      if (this.nowMs - since > this.contentionMs) {
        const holder = this.holder(name)
        invariant(holder !== undefined, 'a claimed name has a holder')
        this.refuse(name, claimant)
        return { accept: false, name, holder }
      }
      if (ours && claimant < this.self) (yielded ??= []).push(name)
    }
    for (const name of yielded ?? []) this.yieldOwn(name)
    return { accept: true, yielded: yielded ?? [] }
  }

  /**
   * A stored record's names changed from `previous` to `names` (stored, replaced, or forgotten with
   * `names` empty). Only records `check` accepted reach here.
   */
  recordChanged(node: NodeId, previous: readonly string[], names: readonly string[]): void {
    for (const name of previous) {
      if (names.includes(name)) continue
      const claimants = this.claims.get(name)
      const storedAtMs = claimants?.get(node)
      if (storedAtMs === undefined) continue
      const lost = this.holder(name) !== node
      claimants!.delete(node)
      if (claimants!.size > 0) {
        // A contended claim given up to the holder is a lost claim, reported like a refused one:
        // before, the holder and every node between listed nothing once the loser yielded.
        if (lost) this.note(name, node)
        continue
      }
      this.claims.delete(name)
      if (this.yielded.has(name)) this.yielded.set(name, this.reclaimAtMs(storedAtMs))
    }
    for (const name of names) {
      let claimants = this.claims.get(name)
      if (claimants === undefined) this.claims.set(name, (claimants = new Map()))
      if (!claimants.has(node)) {
        claimants.set(node, this.nowMs)
        // Its claim is stored now: no longer a refused claimant of the name (it may hold it).
        this.forgetRefusal(name, node)
      }
      if (node === this.self && !this.heard) this.pending.add(name)
    }
    if (node === this.self) for (const name of this.pending) if (!names.includes(name)) this.pending.delete(name)
  }

  /** We applied an update that speaks for the network (`fromNetwork`): our pending names are established. */
  heardNetwork(): void {
    this.heard = true
    // Map.clear() allocates a new table even when empty (V8), and this runs per message applied.
    if (this.pending.size > 0) this.pending.clear()
  }

  /**
   * Is our own new claim of `name` refused here? Yes if someone else's claim of it is stored (we
   * do not contend for a name we know is claimed): then the name is yielded, and the holder is
   * returned.
   */
  ownClaimHeldBy(name: string): NodeId | undefined {
    const holder = this.holder(name)
    if (holder === undefined || holder === this.self) return undefined
    this.yieldOwn(name)
    return holder
  }

  /** We no longer want `name` (removeName): stop waiting for it. */
  forgetOwn(name: string): void {
    this.yielded.delete(name)
    this.pending.delete(name)
  }

  /** Yielded names whose reclaim time has come; they are no longer yielded. */
  takeReclaimable(nowMs: number): string[] {
    const out: string[] = []
    for (const [name, at] of this.yielded) {
      if (at === undefined || at > nowMs) continue
      this.yielded.delete(name)
      this.forgetRefusal(name, this.self)
      out.push(name)
    }
    return out
  }

  /** The earliest reclaim time of a yielded name, if any (the node wakes for it). */
  nextReclaimMs(): number | undefined {
    let next: number | undefined
    for (const at of this.yielded.values()) if (at !== undefined && (next === undefined || at < next)) next = at
    return next
  }

  /** Names claimed by more than one node here (refused, or contended), each with its holder; sorted. */
  conflicts(): NameConflict[] {
    const out: NameConflict[] = []
    const names = new Set([...this.refused.keys()])
    for (const [name, claimants] of this.claims) if (claimants.size > 1) names.add(name)
    for (const name of names) {
      const holder = this.holder(name)
      const refused = new Set(this.refused.get(name)?.keys())
      for (const node of this.claims.get(name)?.keys() ?? []) if (node !== holder) refused.add(node)
      out.push({ name, holder, refused: [...refused].sort() })
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  /** Every stored claim is in its claimant's record (`claims(node, name)`); refusals within their bound. */
  checkInvariants(claims: (node: NodeId, name: string) => boolean): void {
    for (const [name, claimants] of this.claims) {
      invariant(claimants.size > 0, `name ${name} has a claimant`)
      for (const node of claimants.keys()) invariant(claims(node, name), `name ${name} is claimed by ${node}, whose record claims it`)
    }
    invariant(this.refusalCount <= this.refusalsMax, `at most nameRefusalsMax (${this.refusalsMax}) refusals remembered`)
  }

  /**
   * When to claim a yielded name again, now that the last stored claim of it (stored here at
   * `storedAtMs`) is gone. A claim gone within half the contention window of its arrival is still
   * young at every node (it spread in seconds): a claim of ours now is contended there, not
   * refused, so we claim at once. That is the case of two nodes started together that each yielded
   * to the other (each was pending, and each one's first update carried the other's claim): waiting
   * reclaimDelayMs left the name to no one for that long. An older claim may still be held where
   * its loss has not arrived yet, and would refuse ours whole: we wait reclaimDelayMs.
   */
  private reclaimAtMs(storedAtMs: number): number {
    return this.nowMs - storedAtMs < this.contentionMs / 2 ? this.nowMs : this.nowMs + this.reclaimDelayMs
  }

  private yieldOwn(name: string): void {
    this.pending.delete(name)
    this.yielded.set(name, undefined)
    this.refuse(name, this.self)
  }

  private refuse(name: string, claimant: NodeId): void {
    this.claimsRefused++
    this.note(name, claimant)
  }

  /** Remembers `claimant` as having lost `name` here (for `conflicts`), last in the order of refusal. */
  private note(name: string, claimant: NodeId): void {
    let claimants = this.refused.get(name)
    if (claimants === undefined) this.refused.set(name, (claimants = new Map()))
    if (!claimants.has(claimant)) this.refusalCount++
    claimants.delete(claimant) // re-inserted last: the map's order is the order of refusal
    claimants.set(claimant, this.nowMs)
    while (this.refusalCount > this.refusalsMax) this.forgetOldestRefusal()
  }

  private forgetRefusal(name: string, claimant: NodeId): void {
    const claimants = this.refused.get(name)
    if (claimants?.delete(claimant) !== true) return
    this.refusalCount--
    if (claimants.size === 0) this.refused.delete(name)
  }

  /** Drops the refusal remembered longest (the first name's first claimant: close enough to oldest for a report). */
  private forgetOldestRefusal(): void {
    const [name, claimants] = this.refused.entries().next().value as [string, Map<NodeId, number>]
    const [claimant] = claimants.keys()
    claimants.delete(claimant as NodeId)
    this.refusalCount--
    if (claimants.size === 0) this.refused.delete(name)
  }
}

/** Names we yielded whose last claimant has been gone long enough: claimed again, unless someone else's claim of them is stored now. */
export function reclaimNames(holders: NameHolders, table: RouteTable, nowMs: number): void {
  const due = holders.takeReclaimable(nowMs)
  if (due.length === 0) return
  const own = table.own
  const names = [...own.names]
  for (const name of due) if (!names.includes(name) && holders.ownClaimHeldBy(name) === undefined) names.push(name)
  if (names.length !== own.names.length) table.setOwnRecord(names, own.addresses)
}
