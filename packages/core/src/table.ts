import { Alternates } from './alternates.ts'
import { DirtyEntries, RouteColumns } from './columns.ts'
import { CORE_CONSTANTS } from './constants.ts'
import { invariant } from './errors.ts'
import { HolderSets } from './holders.ts'
import { JoinedNeighbours } from './joined.ts'
import type { NameConflict, NameHolders } from './names.ts'
import type { NodeIndex } from './nodeindex.ts'
import { EMPTY_SET, NodeSet } from './nodeset.ts'
import { type RecordAuthority, recordPayload } from './records.ts'
import { NO_SIGNATURE, RouteEntry, UNREACHABLE_HOPS } from './route.ts'
import { isUnreachableSeq, nextOwnSeq, seqAdd, seqNewer } from './seq.ts'
import type { KeptRecord } from './tombstones.ts'
import type { ForwardDecision, NodeId, PhysicalAddress, RouteAdvert } from './types.ts'

/** The sender's trans sets of one message, in our numbering, translated on demand (apply.ts's `MessageSets`). */
export interface TransSource {
  trans(index: number): NodeSet | undefined
  /**
   * The nodes the sender says hold every entry of the message at its hops + 1 or fewer, or will
   * get that from it or a co-hub (`UpdateMessage.allServed`): for rcpt only, never trans (the word
   * is not passed on). Undefined when it says nothing, or when we do not take its word.
   */
  served(): NodeSet | undefined
}

/** An entry forgotten by `RouteTable.expire`: its destination, who introduced it, and how many names its record carried. */
export interface ExpiredEntry {
  readonly destination: NodeId
  readonly introducedBy: NodeId | undefined
  readonly names: number
  /** The seq it was forgotten at (its tombstone, tombstones.ts). */
  readonly seq: number
  /** Its record at that seq, kept with the tombstone to answer a restarted owner (tombstones.ts). */
  readonly record: KeptRecord
}

/**
 * The routing table R_u: one `RouteEntry` per destination, our own included, and what hangs off
 * it — who holds each entry (trans/rcpt), which entries changed since the last send round (dirty),
 * which node owns each logical name. Here are the table's own rules: adopting a fresher route,
 * noting a holder without a change, invalidating a lost route, a neighbour's direct route, our own
 * record, expiry, name resolution and the forwarding decision. Deciding *when* they apply is
 * `apply.ts` (received updates) and `core.ts` (connections).
 */
export class RouteTable {
  /** The entries, one row each (columns.ts); `RouteEntry` is a view of a row. */
  private readonly columns: RouteColumns
  readonly own: RouteEntry
  /** Entries that changed since the last send round. */
  readonly dirty: DirtyEntries
  /** Every entry must be considered for every neighbour in the next send round (a co-hub closed: fanout.ts). */
  allDirty = false
  /** Neighbours (node indices) joined since the last send round: every entry is considered for them (send.ts). At most neighboursMax. */
  readonly joined = new JoinedNeighbours()
  private nextExpiryScanMs = 0
  /** The oldest `changedAtMs` of the unreachable entries the last `expire` scan kept (Infinity: none). */
  oldestUnreachableMs = Number.POSITIVE_INFINITY
  /** Each entry's other next hops at the same (seq, nhops) (alternates.ts). */
  readonly alternates: Alternates

  constructor(
    readonly id: NodeId,
    /** The core's node numbering (or a simulator's shared one): a destination's row is its index. */
    nodeIndex: NodeIndex,
    initialSeq: number,
    names: readonly string[],
    addresses: readonly PhysicalAddress[],
    private readonly records: RecordAuthority | undefined,
    /** Who holds each name (names.ts): every stored record's names are indexed there. */
    private readonly nameHolders: NameHolders,
    /** Where rcpt sets are interned: this table's own, or a simulator's shared one. */
    readonly holders: HolderSets = new HolderSets(CORE_CONSTANTS.holderSetsMax),
    /** Several next hops per destination (alternates.ts); `CoreLimits.ecmpNextHopsMax`, 1 = single path. */
    ecmpNextHopsMax = 1,
  ) {
    this.alternates = new Alternates(ecmpNextHopsMax)
    this.columns = new RouteColumns(nodeIndex, holders.ids)
    this.dirty = new DirtyEntries(this.columns)
    const ownRow = this.columns.insert(id)
    invariant(ownRow !== undefined, 'our own id is numbered')
    this.own = this.columns.view(ownRow)
    this.own.fwd = id
    this.own.nhops = 0
    this.own.seq = initialSeq
    this.own.addresses = addresses
    this.own.names = names
    this.indexNames(this.own, [])
    this.signOwnRecord()
  }

  get size(): number {
    return this.columns.size
  }

  /** The entry for `destination`: a view made on demand (route.ts). */
  get(destination: NodeId): RouteEntry | undefined {
    const row = this.columns.rowOf(destination)
    return row === undefined ? undefined : this.columns.view(row)
  }

  has(entry: RouteEntry): boolean {
    return this.columns.has(entry.row)
  }

  /** Whether `entry` is our own (views are made on demand: compare rows, not objects). */
  isOwn(entry: RouteEntry): boolean {
    return entry.row === this.own.row
  }

  /** Every entry, in the order the destinations were first inserted (what a whole-table send follows). */
  *values(): IterableIterator<RouteEntry> {
    for (const row of this.columns.rows()) yield this.columns.view(row)
  }

  /** The entries `wanted` picks from their columns, in `values()` order; no view is made for the others (send.ts). */
  valuesWhere(wanted: (row: number, dirty: boolean, trans: NodeSet, rcpt: NodeSet, seq: number) => boolean): RouteEntry[] {
    const c = this.columns
    return c.rowsWhere(wanted).map((row) => c.view(row))
  }

  /** For a driver sharing the numbering (`SharedNumbering`): the next hop's index toward the destination numbered `index`, -1 if unreachable. */
  nextHopIndex(index: number): number {
    return this.columns.nextHopRow(index)
  }

  /** With `nextHopIndex`: that route's hops, -1 if unreachable. */
  hopsIndex(index: number): number {
    return this.columns.hopsRow(index)
  }

  /**
   * A new destination, first heard of from neighbour `from` (limits count against it); undefined
   * when the node index has no number left for it (the caller refuses it as with a full table).
   */
  insert(destination: NodeId, seq: number, from: NodeId): RouteEntry | undefined {
    const row = this.columns.insert(destination)
    if (row === undefined) return undefined
    const entry = this.columns.view(row)
    entry.seq = seq
    entry.introducedBy = from
    return entry
  }

  /**
   * Takes the route `advert` offers through neighbour `from` (it is fresher than ours, or new).
   * `rcpt`: who holds it now (optimized mode; undefined in naive mode, which keeps no sets).
   * Returns by how many names the record grew (for the per-neighbour name limit).
   */
  adopt(entry: RouteEntry, from: NodeId, fromIndex: number, advert: RouteAdvert, candidateHops: number, rcpt: NodeSet | undefined, isNew: boolean, nowMs: number): number {
    const reachable = !isUnreachableSeq(advert.seq)
    // Same seq means the same record (the owner bumps seq whenever its names or addresses change).
    const recordChanged = isNew || advert.seq !== entry.seq
    const previousNames = entry.names
    entry.seq = advert.seq
    entry.nhops = reachable ? candidateHops : UNREACHABLE_HOPS
    entry.fwd = reachable ? from : undefined
    this.alternates.reset(entry) // alternates.ts: a fresher route comes from `from` alone
    entry.changedAtMs = nowMs
    if (recordChanged) this.takeRecord(entry, advert)
    // The paper: on a change trans := ∅ and rcpt := {sender}. We also put e.trans into rcpt:
    // they got this very entry from the sender, one hop closer than we could offer, and
    // without it the paper's own Figure 2 does not come out (packages/core/README.md, "trans and rcpt").
    if (rcpt !== undefined) {
      entry.trans = EMPTY_SET
      entry.rcpt = rcpt
      entry.vouchers = this.holders.union(EMPTY_SET, fromIndex, undefined)
      // The sender holds it one hop shorter than we do, and its trans got the sender's very offer.
      entry.rcptHopsMax = entry.nhops
    }
    this.dirty.add(entry)
    return recordChanged ? advert.names.length - previousNames.length : 0
  }

  /**
   * No change: the neighbour at `fromIndex` holds this entry at our sequence number. It counts as
   * covered (we need not send it ours) only if what it holds is at least as good as what we would
   * give it, and its trans only if those nodes got something at least as good. The paper adds both
   * unconditionally; that can starve a neighbour of a shorter route (packages/core/README.md,
   * "trans and rcpt", and its unit test). Optimized mode only.
   */
  noteHolder(entry: RouteEntry, fromIndex: number, senderHops: number, trans: TransSource | undefined, transIndex = -1): void {
    // alternates.ts: with several next hops, holding it at exactly our offer is not covered.
    const set = trans !== undefined && this.alternates.covers(senderHops + 1, entry.nhops + 1) ? trans.trans(transIndex) : undefined
    const holderCovered = this.alternates.covers(senderHops, entry.nhops + 1)
    // Nodes the sender says are served (`TransSource.served`): rcpt only, bound as its trans; not our own entry (hellos).
    const claims = trans !== undefined && !this.isOwn(entry) && this.alternates.covers(senderHops + 1, entry.nhops + 1) ? trans.served() : undefined
    if (!holderCovered && set === undefined && claims === undefined) return
    if (set === undefined && this.isOwn(entry)) return noteOwnHolder(entry, fromIndex, senderHops)
    const holder = holderCovered ? fromIndex : -1
    // The union is memoized (HolderSets): when it gives the very set we hold, nothing is lacking,
    // without looking at N bits; otherwise the bits decide (our set may be an equal, uninterned one).
    const transUnion = this.holders.union(entry.trans, holder, set)
    const rcptUnion = this.holders.union(claims === undefined ? entry.rcpt : this.holders.union(entry.rcpt, -1, claims), holder, set)
    const transLacks = transUnion !== entry.trans && lacksHolders(entry.trans, holder, set)
    const rcptLacks = rcptUnion !== entry.rcpt && (lacksHolders(entry.rcpt, holder, set) || (claims !== undefined && !entry.rcpt.containsAll(claims)))
    if (!transLacks && !rcptLacks) return
    if (holderCovered) entry.rcptHopsMax = Math.max(entry.rcptHopsMax, senderHops)
    if (set !== undefined || claims !== undefined) entry.rcptHopsMax = Math.max(entry.rcptHopsMax, senderHops + 1)
    // A set that holds them all already stays as it is.
    if (transLacks) entry.trans = transUnion
    if (rcptLacks) entry.rcpt = rcptUnion
    if ((set !== undefined && !set.isEmpty()) || (claims !== undefined && !claims.isEmpty())) entry.vouchers = this.holders.union(entry.vouchers, fromIndex, undefined)
  }

  /**
   * Marks `entry` unreachable with the next odd sequence number, as DSDV does on a broken link; or
   * with `farewell`'s, the destination's own withdrawal at a newer number, and its record (apply.ts).
   */
  invalidate(entry: RouteEntry, nowMs: number, farewell?: RouteAdvert): number {
    invariant(farewell === undefined || (farewell.destination === entry.destination && isUnreachableSeq(farewell.seq) && seqNewer(farewell.seq, entry.seq)), 'a farewell is the destination\'s own record, withdrawn at a newer number')
    const previousNames = entry.names
    entry.seq = farewell?.seq ?? seqAdd(entry.seq, 1)
    if (farewell !== undefined) this.takeRecord(entry, farewell)
    entry.nhops = UNREACHABLE_HOPS
    entry.fwd = undefined
    this.alternates.reset(entry) // alternates.ts
    entry.changedAtMs = nowMs
    this.forgetHolders(entry)
    entry.rcptHopsMax = 0
    this.dirty.add(entry)
    return entry.names.length - previousNames.length
  }

  /** A new record of `entry`'s destination: names, addresses and their signature go together. */
  private takeRecord(entry: RouteEntry, advert: RouteAdvert): void {
    const previousNames = entry.names
    entry.names = advert.names
    entry.addresses = advert.addresses
    entry.signature = advert.signature ?? NO_SIGNATURE
    this.indexNames(entry, previousNames)
  }

  /** Nobody counts as holding `entry`: it goes to every neighbour again. */
  private forgetHolders(entry: RouteEntry): void {
    entry.trans = EMPTY_SET
    entry.rcpt = EMPTY_SET
    entry.vouchers = EMPTY_SET
  }

  /**
   * The neighbour `peer` (node index `index`) is gone: nothing counts as held by it any more (it
   * may come back with an empty table, a restart), and routes through it are lost. `stays`: its
   * connection was replaced by a new one (connections.ts): it is still one hop away, routes stay.
   */
  neighbourGone(peer: NodeId, index: number, nowMs: number, stays = false): void {
    for (const entry of this.values()) {
      if (entry.vouchers.has(index)) {
        // Holders we believed on its word: it may have crashed before its messages to them left
        // (a hub's update to n2 lost while ours arrived; a property test found n2 never repaired).
        // Forget them all: the entry goes again to whoever lacks it, a duplicate to the others.
        this.forgetHolders(entry)
        entry.rcptHopsMax = 0
        this.dirty.add(entry)
      }
      entry.trans = this.holders.without(entry.trans, index)
      entry.rcpt = this.holders.without(entry.rcpt, index)
      // alternates.ts: a surviving alternate takes over with no change of (seq, nhops).
      if (stays || this.alternates.neighbourGone(entry, peer)) continue
      if (entry.fwd === peer && entry.reachable && !this.isOwn(entry)) this.invalidate(entry, nowMs)
    }
  }

  /**
   * Neighbour `from` lost its connections to the nodes in `lost`; those in `lostNeighbours` are our
   * neighbours too. The updates on a lost connection may have been lost with it while each end had
   * told us (its trans sets) that they arrived: forget the nodes in `lost` as holders of what
   * `from` vouched for, and `from` as a holder of what those in `lostNeighbours` vouched for.
   * Those entries go to them again: duplicates if they had arrived, the repair if not (a hub's own
   * record lost in flight on a failed link left a node without it for good). One pass.
   */
  forgetLostHolders(from: number, lost: NodeSet, lostNeighbours: NodeSet): void {
    for (const entry of this.values()) {
      let trans = entry.trans
      let rcpt = entry.rcpt
      if (entry.vouchers.has(from)) {
        trans = this.holders.withoutAll(trans, lost)
        rcpt = this.holders.withoutAll(rcpt, lost)
      }
      if (entry.vouchers.intersects(lostNeighbours)) {
        trans = this.holders.without(trans, from)
        rcpt = this.holders.without(rcpt, from)
      }
      if (trans === entry.trans && rcpt === entry.rcpt) continue
      entry.trans = trans
      entry.rcpt = rcpt
      this.dirty.add(entry)
    }
  }

  /**
   * A neighbour whose record we already hold is one hop away: the connection itself shows it (the
   * transport authenticates the peer's id), so the route need not wait for the neighbour to
   * advertise itself, and it may not (see the hello). Loop-free: the next hop is the destination.
   * If the route changes, it is advertised to the neighbours that may need it. As on any change,
   * whoever got our longer route needs this one (trans := ∅). Not those in rcpt if they hold it at
   * 2 hops or fewer: 1 + 1 is all we can offer (typically the hub's other neighbours). With
   * several next hops only those holding it at 1 (`Alternates.covers`), which our 2-hop route's
   * next hops do: `indexOf` gives their node indexes (our neighbours'). And, with several next
   * hops, those holding it at 2 that `staysWith` says will connect to `peer` themselves
   * (`CoreConfig.willConnect`): our equal offer would be their alternate only until then, and in
   * a subnet whose hosts all connect to each other it went to every host from every host.
   */
  routeDirectly(peer: NodeId, index: number, nowMs: number, indexOf: (neighbour: NodeId) => number | undefined, staysWith?: (holder: NodeId) => boolean): void {
    const entry = this.get(peer)
    if (entry === undefined || !entry.reachable || (entry.fwd === peer && entry.nhops === 1)) return
    const atOneHop = this.alternates.heldBetterThan(entry, CORE_CONSTANTS.directRouteHolderHopsMax) // alternates.ts: before the reset
    entry.fwd = peer
    entry.nhops = 1
    this.alternates.reset(entry) // alternates.ts
    entry.changedAtMs = nowMs
    entry.trans = EMPTY_SET
    const keep = this.alternates.covers(entry.rcptHopsMax, CORE_CONSTANTS.directRouteHolderHopsMax) // alternates.ts
    const staying = !keep && staysWith !== undefined && entry.rcptHopsMax <= CORE_CONSTANTS.directRouteHolderHopsMax ? holdersWhere(entry.rcpt, this.columns.index, staysWith) : EMPTY_SET
    if (!keep) {
      entry.rcptHopsMax = staying.isEmpty() ? 0 : CORE_CONSTANTS.directRouteHolderHopsMax
      entry.vouchers = EMPTY_SET
    }
    entry.rcpt = this.holders.union(keep ? entry.rcpt : staying, index, undefined)
    for (const holder of atOneHop) {
      const at = indexOf(holder)
      if (at !== undefined) entry.rcpt = this.holders.union(entry.rcpt, at, undefined)
    }
    if (atOneHop.length > 0) entry.rcptHopsMax = Math.max(entry.rcptHopsMax, 1)
    this.dirty.add(entry)
  }

  /** Our names or addresses changed: a new even sequence number, signed, due to everyone. */
  setOwnRecord(names: readonly string[], addresses: readonly PhysicalAddress[]): void {
    const previous = this.own.names
    this.own.names = names
    this.own.addresses = addresses
    this.indexNames(this.own, previous)
    this.own.seq = nextOwnSeq(this.own.seq)
    this.signOwnRecord()
    this.forgetHolders(this.own)
    this.dirty.add(this.own)
  }

  /** Someone holds our record with a newer number than ours: issue the next even one, so our fresh route wins everywhere. */
  ownRecordSeenAt(seq: number, nowMs: number): void {
    this.own.seq = nextOwnSeq(seq)
    this.signOwnRecord()
    this.own.changedAtMs = nowMs
    // Everyone, the sender included, holds an older record of us now.
    this.forgetHolders(this.own)
    this.dirty.add(this.own)
  }

  /** Graceful leave: our own entry becomes unreachable (the next odd number). */
  withdrawOwn(): void {
    this.own.seq = seqAdd(this.own.seq, 1)
    this.own.nhops = UNREACHABLE_HOPS
  }

  /**
   * Forgets unreachable entries kept longer than `retentionMs` (scanning at most once per
   * `expiryScanEveryMs`); an entry still to be sent is kept. Returns what was forgotten; the
   * caller frees their node indices.
   */
  expire(nowMs: number, retentionMs: number): ExpiredEntry[] {
    if (nowMs < this.nextExpiryScanMs) return []
    this.nextExpiryScanMs = nowMs + CORE_CONSTANTS.expiryScanEveryMs
    const cutoff = nowMs - retentionMs
    const expired: ExpiredEntry[] = []
    let oldestKept = Number.POSITIVE_INFINITY
    for (const entry of this.values()) {
      if (this.isOwn(entry) || entry.reachable) continue
      if (entry.changedAtMs > cutoff || this.dirty.has(entry) || this.allDirty || this.joined.size > 0) {
        oldestKept = Math.min(oldestKept, entry.changedAtMs)
        continue
      }
      expired.push({ destination: entry.destination, introducedBy: entry.introducedBy, names: entry.names.length, seq: entry.seq, record: { names: entry.names, addresses: entry.addresses, signature: entry.signature } })
      const previous = entry.names
      entry.names = []
      this.indexNames(entry, previous)
      this.columns.remove(entry.row)
    }
    this.oldestUnreachableMs = oldestKept
    return expired
  }

  /** When `expire` may scan again (it scans at most once per expiryScanEveryMs). */
  get nextExpiryScanAtMs(): number {
    return this.nextExpiryScanMs
  }

  /** Scrubs node indices about to be freed from every set, so a node given a reused index is not taken to hold entries it never got. */
  forgetIndices(gone: NodeSet): void {
    for (const entry of this.values()) {
      entry.trans = this.holders.withoutAll(entry.trans, gone)
      entry.rcpt = this.holders.withoutAll(entry.rcpt, gone)
    }
  }

  /**
   * The node a message for `name` should go to next: its holder (names.ts), if reachable. A name
   * has one holder in the table (later claims are refused), so every node that stored the same
   * first claim gives the same answer.
   */
  resolve(name: string): { owner: NodeId; nextHop: NodeId; nhops: number } | undefined {
    const holder = this.nameHolders.holder(name)
    const entry = holder === undefined ? undefined : this.get(holder)
    if (entry === undefined || !entry.reachable) return undefined
    invariant(entry.fwd !== undefined, 'a reachable entry has a next hop')
    return { owner: entry.destination, nextHop: entry.fwd, nhops: entry.nhops }
  }

  /** Names whose claims were refused here, with their holder (names.ts). */
  nameConflicts(): NameConflict[] {
    return this.nameHolders.conflicts()
  }

  /** Checks what the table must always hold (for `PhoenixCore.checkInvariants`). */
  checkInvariants(left: boolean, isNeighbour: (id: NodeId) => boolean, isKnownIndex: (index: number) => boolean, destinationsMax: number): void {
    invariant(this.size <= destinationsMax + 1, `at most destinationsMax (${destinationsMax}) destinations besides our own`)
    invariant(this.columns.rowOf(this.id) === this.own.row && this.own.fwd === this.id, 'our own entry is in the table and points at us')
    if (!left) invariant(this.own.nhops === 0 && !isUnreachableSeq(this.own.seq), 'our own entry is 0 hops away with an even sequence number')
    const checkedSets = new Set<NodeSet>()
    for (const entry of this.values()) {
      if (!this.isOwn(entry)) checkEntry(entry, isNeighbour)
      this.alternates.checkEntry(entry, isNeighbour)
      for (const set of [entry.trans, entry.rcpt]) {
        invariant(set.frozen || this.isOwn(entry), `trans/rcpt of ${entry.destination} are shared sets, frozen (only our own entry's grow in place)`)
        if (checkedSets.has(set)) continue
        checkedSets.add(set)
        set.forEach((index) => invariant(isKnownIndex(index), `trans/rcpt of ${entry.destination} name only known nodes (index ${index})`))
      }
    }
    for (const entry of this.dirty) invariant(this.columns.has(entry.row), `dirty entry ${entry.row} is in the table`)
    this.nameHolders.checkInvariants((node, name) => this.get(node)?.names.includes(name) === true)
  }

  private indexNames(entry: RouteEntry, previous: readonly string[]): void {
    this.nameHolders.recordChanged(entry.destination, previous, entry.names)
  }

  /** Our record's signature must follow every change of our seq, names or addresses. */
  private signOwnRecord(): void {
    if (this.records === undefined) return
    const evenSeq = this.own.seq - (this.own.seq % 2)
    this.own.signature = this.records.sign(recordPayload(this.id, evenSeq, this.own.names, this.own.addresses))
  }
}

/** Whether `s` lacks `holder` (if ≥ 0) or a member of `set` (if given). */
function lacksHolders(s: NodeSet, holder: number, set: NodeSet | undefined): boolean {
  return (holder >= 0 && !s.has(holder)) || (set !== undefined && !s.containsAll(set))
}

function checkEntry(entry: RouteEntry, isNeighbour: (id: NodeId) => boolean): void {
  const what = `route to ${entry.destination}`
  if (entry.reachable) {
    invariant(entry.fwd !== undefined && isNeighbour(entry.fwd), `${what}: a reachable route's next hop is a neighbour`)
    invariant(Number.isInteger(entry.nhops) && entry.nhops >= 1, `${what}: a reachable route is at least one hop`)
  } else {
    invariant(entry.fwd === undefined && entry.nhops === UNREACHABLE_HOPS, `${what}: an unreachable route has no next hop`)
  }
}

/**
 * `RouteTable.noteHolder` for our own entry, with no trans set (a neighbour's hello, or its offer
 * of our current record; the holder is covered). Our own entry gains a holder with every new
 * neighbour, one at a time, and no other entry shares its sets: they grow in place, copied once
 * from a shared set, not built and interned anew as N-bit sets per neighbour. That was up to
 * N³/4 bytes of garbage per run, and 81% of a 5,000-process run went to collecting it
 * (simulations/ANALYSIS.md, "The fourth wall"). Whatever else changes them makes shared sets
 * again (`HolderSets`); a send round reads them within one call, with no change in between.
 */
function noteOwnHolder(own: RouteEntry, fromIndex: number, senderHops: number): void {
  const transLacks = !own.trans.has(fromIndex)
  const rcptLacks = !own.rcpt.has(fromIndex)
  if (!transLacks && !rcptLacks) return
  own.rcptHopsMax = Math.max(own.rcptHopsMax, senderHops)
  if (transLacks) own.trans = withMember(own.trans, fromIndex)
  if (rcptLacks) own.rcpt = withMember(own.rcpt, fromIndex)
}

/** The members of `set` (numbered by `index`) that `wanted` keeps, as a new set (EMPTY_SET when none). */
function holdersWhere(set: NodeSet, index: NodeIndex, wanted: (holder: NodeId) => boolean): NodeSet {
  let kept: NodeSet | undefined
  set.forEach((slot) => {
    const holder = index.id(slot)
    if (holder === undefined || !wanted(holder)) return
    kept ??= new NodeSet()
    kept.add(slot)
  })
  return kept ?? EMPTY_SET
}

/** `set` with `member`: changed in place if it is private (not frozen), else a private copy. */
function withMember(set: NodeSet, member: number): NodeSet {
  const grown = set.frozen ? set.clone() : set
  grown.add(member)
  return grown
}

/**
 * The forwarding decision (see `PhoenixCore.forward`). `linked`: whether we hold an open
 * connection to the destination, which makes it one hop away even before its record arrives.
 */
export function forwardDecision(table: RouteTable, destination: NodeId, hopLimit: number, linked: boolean, name: string | undefined, flowKey?: string): ForwardDecision {
  if (destination === table.id) {
    if (name !== undefined && name !== '' && !table.own.names.includes(name)) return { action: 'drop', reason: 'no-such-name' }
    return { action: 'deliver' }
  }
  if (!Number.isInteger(hopLimit) || hopLimit <= 0) return { action: 'drop', reason: 'hop-limit' }
  const entry = table.get(destination)
  // alternates.ts: one of several equal next hops, per flow.
  const nextHop = entry !== undefined && entry.reachable ? table.alternates.choose(entry, table.id, flowKey) : undefined
  if (nextHop !== undefined) return { action: 'forward', nextHop, hopLimit: hopLimit - 1 }
  if (linked) return { action: 'forward', nextHop: destination, hopLimit: hopLimit - 1 }
  return { action: 'drop', reason: 'no-route' }
}
