import { invariant } from './errors.ts'
import { helloOf, helloOnlyMessage } from './hello-messages.ts'
import type { Neighbour } from './neighbours.ts'
import { NodeSet } from './nodeset.ts'
import type { CoreParts } from './parts.ts'
import type { RouteEntry } from './route.ts'
import { seqNewer } from './seq.ts'
import type { Effect, NodeId, RouteAdvert, StepResult, UpdateMessage } from './types.ts'

/**
 * The slot table and trans sets of a message without trans sets (a hello, a record with no
 * holders to name): one frozen empty list each, shared by every such message, not two new arrays
 * per message (a one-subnet run has every node's hello to every other in flight at once).
 */
const NO_SLOTS: readonly NodeId[] = Object.freeze([])
const NO_SETS: readonly Uint8Array[] = Object.freeze([])

/**
 * Priority 3 of the scheduler: one step of a send round. Every changed entry (every entry, after a
 * new neighbour) goes to each neighbour that is in neither its trans nor its rcpt, and all entries
 * for one neighbour go out merged, in messages of at most `entriesPerMessageMax` entries. A round
 * goes out in steps of about `sendStepEntriesMax` entries, co-hubs first, and a hub holds back
 * what its co-hubs serve (fanout.ts). In naive mode (plain DSDV) every change goes to every
 * neighbour at once, and a new neighbour gets the whole table.
 */
export function sendRound(p: CoreParts, nowMs: number): StepResult {
  const round = new SendRound(p)
  if (p.mode === 'naive' || !p.fanout.pending) {
    // What changed from now on goes in the next round.
    if (p.mode === 'naive') round.collectNaive()
    else round.collectOptimized()
    p.table.dirty.clear()
    p.table.allDirty = false
    p.table.joined.clear()
    if (p.mode === 'naive') return round.build()
    round.endPlans()
    p.fanout.sortPromised()
    p.fanout.begin(round.plannedForCoHubs(), nowMs + p.timing.coHubWaitMs)
  }
  if (!p.fanout.waiting(nowMs)) round.takeFromFanout()
  return round.build()
}

/** Whether a send round has anything to do: changed entries, a new neighbour, a hello or lost notice due, or a round under way. */
export function hasPendingSends(p: CoreParts): boolean {
  const n = p.neighbours
  return p.table.dirty.size > 0 || p.table.allDirty || p.table.joined.size > 0 || n.count('needsWholeTable') > 0 || n.count('helloDue') > 0 || n.lostNoticesDue > 0 || p.fanout.pending
}

/** While dials started less than sendHoldForDialsMs ago are in flight, a new round waits (bounded); a round under way, only for co-hubs. */
export function sendHoldUntil(p: CoreParts, nowMs: number): number | undefined {
  if (p.fanout.pending) return p.fanout.waiting(nowMs) ? p.fanout.waitEndsAtMs : undefined
  if (p.mode === 'naive' || p.timing.sendHoldForDialsMs === 0) return undefined
  const oldest = p.book.oldestDialStartMs()
  if (oldest === undefined) return undefined
  const until = oldest + p.timing.sendHoldForDialsMs
  return until > nowMs ? until : undefined
}

/** One entry as sent: R_u[v] with the index of its trans set in the message (-1 = empty). */
export function advertOf(entry: RouteEntry, trans: number): RouteAdvert {
  return {
    destination: entry.destination,
    seq: entry.seq,
    nhops: entry.reachable ? entry.nhops : 0,
    names: entry.names,
    addresses: entry.addresses,
    trans,
    signature: entry.signature,
  }
}

/**
 * Whether a neighbour needs our entry for itself: only if it holds an older number of its own
 * record than we do. Until it has advertised itself on this connection (it always does, first
 * thing) we wait: `heardFromOwner` in apply.ts makes the entry due if it turns out to be older.
 */
function ownerNeedsOwnEntry(owner: Neighbour, seq: number): boolean {
  return owner.ownerSeqHeard !== undefined && seqNewer(seq, owner.ownerSeqHeard)
}

/** Who gets which entries (per neighbour slot), who is held back for a co-hub, and the new trans of each entry. */
interface Decision {
  readonly slots: number[]
  readonly heldBack: number[]
  readonly trans: NodeSet
}

class SendRound {
  private readonly perNeighbour = new Map<number, RouteEntry[]>()
  /** On the wire a trans set names only our neighbours (by slot); one wire form per distinct (shared) set per round. */
  private readonly wireForm = new Map<NodeSet, Uint8Array>()
  /** The wire forms of this round by content: the one object every equal set maps to. */
  private readonly wireFormByContent = new Map<string, Uint8Array>()
  /** With a shared numbering: the same set in that numbering, restricted to our neighbours like the wire form. */
  private readonly sharedForm = new Map<Uint8Array, NodeSet>()
  /** An entry goes to many neighbours in one round: one advert object per (entry, trans index), by the entry's row. */
  private readonly advertCache = new Map<number, RouteAdvert>()
  private slotTable: readonly string[] = []
  /** Our co-hubs among the neighbours when this round began (fanout.ts); empty unless we are a hub with co-hubs. */
  coHubs: readonly Neighbour[] = []
  /** The co-hubs' connection numbers. */
  private coHubSet = new Set<number>()
  /** Slots of the co-hubs this step tells that our plan ended (`UpdateMessage.planEnd`): each at the round's first step. */
  private readonly planEndSlots = new Set<number>()
  /** Per slot of this round: held back for a co-hub that owns the neighbour. */
  private readonly heldBackSlots = new Map<number, boolean>()

  constructor(private readonly p: CoreParts) {}

  collectNaive(): void {
    const { neighbours, table } = this.p
    for (const neighbour of neighbours.values()) {
      const entries = neighbour.needsWholeTable ? table.values() : table.dirty
      for (const entry of entries) if (!entry.hearsay || entry.destination === neighbour.id) this.push(neighbour.slot, entry)
      neighbours.setFlag(neighbour, 'needsWholeTable', false)
    }
  }

  collectOptimized(): void {
    const { table, neighbours, fanout } = this.p
    this.coHubs = this.p.coHubs()
    this.coHubSet = new Set(this.coHubs.map((hub) => hub.connection))
    fanout.prune(neighbours)
    // Entries whose trans and rcpt are the same (shared) sets get the same targets and the same
    // new trans: compute each pair once per round (for an unchanged entry, once more for the
    // neighbours that joined).
    const decided: DecisionCache = new Map()
    const decidedForJoined: DecisionCache = new Map()
    const joined = this.joinedNeighbours()
    const entries = table.allDirty ? table.values() : joined !== undefined ? table.valuesWhere(this.mayConcern(joined)) : table.dirty
    for (const entry of entries) {
      const owner = neighbours.getByIndex(entry.row) // a row is its destination's number
      if (entry.hearsay) {
        // route.ts: never sent on, but to its owner when it holds an older number (below); in trans,
        // as a promise stands only for those in it (`takeFromFanout`): left out, it never went.
        if (owner === undefined || !ownerNeedsOwnEntry(owner, entry.seq)) continue
        this.route(owner.slot, entry)
        entry.trans = table.holders.union(entry.trans, owner.index, undefined)
        continue
      }
      const decision = this.decisionFor(entry, joined !== undefined && !table.dirty.has(entry) && !table.isOwn(entry) ? joined : undefined, decided, decidedForJoined)
      for (const slot of decision.heldBack) if (slot !== owner?.slot) fanout.holdBack(this.neighbourAt(slot), entry)
      if (table.isOwn(entry) && neighbours.count('ownWaitsForHello') > 0) {
        entry.trans = this.ownWaitingForHellos(entry, decision)
        continue
      }
      for (const slot of decision.slots) if (slot !== owner?.slot) this.route(slot, entry)
      // The owner gets its own entry when it told us, on this connection, that it holds an older
      // number (it restarted, or a route to it was lost) — whatever trans sets and rcpt say: others'
      // trans sets claim it holds what they send around it (it needs no copy of its own record),
      // and those claims, echoed back, must not outweigh what it said itself. Never held back for
      // a co-hub, which has not heard it. (Found by a sweep of random scenarios: a node restarted
      // before its crash was noticed, and no neighbour ever sent it the odd number that makes it
      // issue a newer one; every route to it stayed lost.)
      if (owner !== undefined && ownerNeedsOwnEntry(owner, entry.seq)) this.route(owner.slot, entry)
      entry.trans = decision.trans
      // An owner held back for a co-hub holds its own entry all the same, as one we serve does
      // (decide puts it in trans; it gets the entry only if it asks, above). Left out of trans it
      // lacked the entry at every later round, and each such round sent the entry to every co-hub
      // again (what a gateway sends anyone goes to its co-hubs): at N processes, (2/3)·N entries
      // to each co-hub per round, for nothing.
      if (owner !== undefined && !entry.trans.has(owner.index) && !entry.rcpt.has(owner.index) && this.heldBackFor(owner.slot)) {
        entry.trans = table.holders.union(entry.trans, owner.index, undefined)
      }
    }
  }

  /**
   * The node indices of the neighbours that joined since the last round, ascending, if only they
   * can lack an unchanged entry (undefined: no neighbour joined, or every entry goes to every
   * neighbour that lacks it). After a round every neighbour is in each entry's trans or rcpt, or
   * held back and decided again, or waits for a hello that decides it; whatever takes one out of
   * them makes the entry dirty (table.ts, apply.ts). So an unchanged entry is checked against the
   * joined neighbours only: a round after each new connection tested every neighbour of every
   * entry, O(N^2 / 32) per connection, the most expensive loop of a 2,000-process run (9%).
   */
  private joinedNeighbours(): Joined | undefined {
    const { table, neighbours } = this.p
    if (table.allDirty || table.joined.size === 0) return undefined
    const list = table.joined.inAscending(neighbours.indexSet)
    if (list.length <= JOINED_LIST_MAX) return { list, set: undefined }
    const set = new NodeSet(list.at(-1)! + 1)
    for (const index of list) set.add(index)
    return { list, set }
  }

  /**
   * Whether a round with `joined` neighbours has anything to do with an entry, read from its
   * columns: it changed, or it is our own, or a joined neighbour lacks it, or its owner (a
   * neighbour) lacks it or asked for it (`ownerNeedsOwnEntry`). A round after new connections
   * visits every entry, and most of them concern nobody: no view, no decision is made for those
   * (at 5,000 processes the visit itself, a view and two lookups per entry and round, was the
   * largest cost after garbage collection). The tests check every entry skipped (`sendSelfCheck`).
   */
  private mayConcern(joined: Joined): (row: number, dirty: boolean, trans: NodeSet, rcpt: NodeSet, seq: number) => boolean {
    const { table, neighbours } = this.p
    const ownRow = table.own.row
    // Rows in insertion order often share their (interned) trans and rcpt sets: the joined
    // neighbours' test is made once per run of rows with the same pair.
    let lastTrans: NodeSet | undefined
    let lastRcpt: NodeSet | undefined
    let lastLacking = false
    return (row, dirty, trans, rcpt, seq) => {
      if (dirty || row === ownRow) return true
      if (trans !== lastTrans || rcpt !== lastRcpt) {
        lastTrans = trans
        lastRcpt = rcpt
        lastLacking = joined.set !== undefined ? NodeSet.anyMissing(joined.set, trans, rcpt) : anyLacking(joined.list, trans, rcpt)
      }
      if (lastLacking) return true
      const slot = neighbours.slotOfIndex(row)
      const owner = slot < 0 ? undefined : neighbours.at(slot)
      const concerns = owner !== undefined && ((!trans.has(owner.index) && !rcpt.has(owner.index)) || ownerNeedsOwnEntry(owner, seq))
      if (!concerns && sendSelfCheck.enabled) this.checkSkipped(row)
      return concerns
    }
  }

  /** `sendSelfCheck`: an entry `mayConcern` skipped goes to nobody by a decision over every neighbour. */
  private checkSkipped(row: number): void {
    const entry = this.p.table.get(this.p.nodeIndex.id(row)!)!
    if (entry.hearsay) return // route.ts: goes to nobody but a stale owner, whatever a decision says
    const full = this.decide(entry, undefined)
    sendSelfCheck.decisionsChecked++
    invariant(full.slots.length + full.heldBack.length === 0, `a skipped entry (${entry.destination}) goes to ${JSON.stringify([full.slots, full.heldBack])}`)
  }

  /** The decision for `entry`, shared by entries with the same trans and rcpt sets. `joined`: it is unchanged, and only the neighbours that joined can lack it. */
  private decisionFor(entry: RouteEntry, joined: Joined | undefined, decided: DecisionCache, decidedForJoined: DecisionCache): Decision {
    const cache = joined === undefined ? decided : decidedForJoined
    let byRcpt = cache.get(entry.trans)
    if (byRcpt === undefined) cache.set(entry.trans, (byRcpt = new Map()))
    let decision = byRcpt.get(entry.rcpt)
    if (decision === undefined) byRcpt.set(entry.rcpt, (decision = this.decide(entry, joined)))
    if (sendSelfCheck.enabled && joined !== undefined) {
      const full = this.decide(entry, undefined)
      const targets = (d: Decision) => JSON.stringify([d.slots, d.heldBack])
      sendSelfCheck.decisionsChecked++
      invariant(targets(full) === targets(decision), `an unchanged entry (${entry.destination}) lacked by a neighbour that did not join: ${targets(full)} vs ${targets(decision)}`)
    }
    return decision
  }

  /** The neighbours (of `among`, if given) in neither trans nor rcpt of `entry`, less those a co-hub serves, and its trans once they have it. */
  private decide(entry: RouteEntry, among: Joined | undefined): Decision {
    const { neighbours } = this.p
    const slots: number[] = []
    const heldBack: number[] = []
    let trans = entry.trans
    forEachLacking(neighbours.indexSet, entry, among, (index) => {
      const slot = neighbours.slotOfIndex(index)
      if (this.heldBackFor(slot)) {
        heldBack.push(slot)
        return
      }
      if (trans === entry.trans) trans = entry.trans.clone()
      trans.add(index)
      slots.push(slot)
    })
    // Our co-hubs get every entry we send anyone this round, even one they hold: its trans is
    // whom we serve, which they add to rcpt and serve no more (fanout.ts).
    if (slots.length + heldBack.length > 0) {
      for (const hub of this.coHubs) {
        if (slots.includes(hub.slot)) continue
        if (trans === entry.trans) trans = entry.trans.clone()
        trans.add(hub.index)
        slots.push(hub.slot)
      }
    }
    return { slots, heldBack, trans: trans === entry.trans ? trans : this.p.table.holders.intern(trans) }
  }

  /** Whether the neighbour in `slot` is another hub's to serve this round (fanout.ts). */
  private heldBackFor(slot: number): boolean {
    if (this.coHubs.length === 0) return false
    let held = this.heldBackSlots.get(slot)
    if (held === undefined) {
      const neighbour = this.neighbourAt(slot)
      held = !this.coHubSet.has(neighbour.connection) && this.p.fanout.ownedByCoHub(this.p.id, this.coHubs, neighbour)
      this.heldBackSlots.set(slot, held)
    }
    return held
  }

  private neighbourAt(slot: number): Neighbour {
    const neighbour = this.p.neighbours.at(slot)
    invariant(neighbour !== undefined, 'a send decision names only occupied slots')
    return neighbour
  }

  /**
   * Our record waits for each new neighbour's hello: it may hold it already. Returns our entry's
   * new trans: the decision's without the waiting neighbours, built as one copy and interned once
   * (one `holders.without` per waiting neighbour made and interned a set of N bits for each of
   * them, O(N) each, in a clique O(N^2) per node: 9% of a one-subnet run at 1,400 processes).
   */
  private ownWaitingForHellos(own: RouteEntry, decision: Decision): NodeSet {
    let trans: NodeSet | undefined
    for (const slot of decision.slots) {
      const peer = this.neighbourAt(slot)
      if (!peer.ownWaitsForHello) this.route(slot, own)
      else if (decision.trans.has(peer.index)) {
        trans ??= decision.trans.clone()
        trans.delete(peer.index)
      }
    }
    return trans === undefined ? decision.trans : this.p.table.holders.intern(trans)
  }

  /** Entries each co-hub gets in this step: our plan, and as much of theirs as we wait for. */
  plannedForCoHubs(): Map<string, number> {
    const out = new Map<string, number>()
    for (const hub of this.coHubs) out.set(hub.id, this.perNeighbour.get(hub.slot)?.length ?? 0)
    return out
  }

  /** This is the round's first step: each co-hub gets its plan now (maybe none), and word that it ended. */
  endPlans(): void {
    for (const hub of this.coHubs) this.planEndSlots.add(hub.slot)
  }

  /** A decided send: to a co-hub in this step (its plan is what the others wait for), to anyone else when the round reaches it. */
  private route(slot: number, entry: RouteEntry): void {
    if (this.coHubs.length > 0 && this.coHubSet.has(this.neighbourAt(slot).connection)) this.push(slot, entry)
    else this.p.fanout.promise(this.neighbourAt(slot), entry)
  }

  /** The next part of the round in progress (fanout.ts): promised entries still as promised, then held-back ones decided again. */
  takeFromFanout(): void {
    const { fanout, table, limits } = this.p
    // The entry's row, not its destination's text: a row stays its destination's while numbered (a
    // lookup by text per promise taken was 0.7% of a 5,000-process run, three subnets).
    const live = (n: Neighbour, e: RouteEntry) => n.open && table.has(e)
    // The neighbours a held-back entry now goes to join its trans in one copy per entry (by row),
    // interned once when the step's share is taken, not in one new interned set per neighbour:
    // that was O(N) per (neighbour, entry) pair, and at 5,000 processes a gateway's held-back
    // round built millions of 5,000-bit sets (the first 5,000-process run stalled there). The
    // messages are built after the take, so they read the same sets either way.
    const adding = new Map<number, { entry: RouteEntry; trans: NodeSet }>()
    fanout.take(
      limits.sendStepEntriesMax,
      // A promise stands while the entry is the one promised: a change empties its trans, and the next round decides again.
      (n, e) => live(n, e) && e.trans.has(n.index),
      (n, e) => {
        if (!live(n, e) || (adding.get(e.row)?.trans ?? e.trans).has(n.index) || e.rcpt.has(n.index)) return false
        if (table.isOwn(e) && n.ownWaitsForHello) return false
        let added = adding.get(e.row)
        if (added === undefined) adding.set(e.row, (added = { entry: e, trans: e.trans.clone() }))
        added.trans.add(n.index)
        return true
      },
      (n, e) => this.push(n.slot, e),
    )
    for (const { entry, trans } of adding.values()) entry.trans = table.holders.intern(trans)
  }

  private push(slot: number, entry: RouteEntry): void {
    let list = this.perNeighbour.get(slot)
    if (list === undefined) this.perNeighbour.set(slot, (list = []))
    list.push(entry)
  }

  /** The messages of the round, in neighbour-slot order (connection order), whatever the node numbering. */
  build(): StepResult {
    const { neighbours, traffic, mode } = this.p
    this.slotTable = mode === 'naive' ? [] : neighbours.slotTable()
    // A new neighbour gets our hello in our first update on the connection, even an empty one;
    // a neighbour we owe news of a lost connection gets it the same way.
    if (neighbours.count('helloDue') > 0 || neighbours.lostNoticesDue > 0) {
      for (const slot of neighbours.slotsInOrder()) {
        const due = (neighbours.flagAt(slot, 'helloDue') && !this.p.fanout.holdsFor(neighbours.connectionAt(slot))) || neighbours.owesLostAt(slot)
        if (due && !this.perNeighbour.has(slot)) this.perNeighbour.set(slot, [])
      }
    }
    for (const slot of this.planEndSlots) if (!this.perNeighbour.has(slot)) this.perNeighbour.set(slot, [])
    const effects: Effect[] = []
    let entriesSent = 0
    for (const slot of [...this.perNeighbour.keys()].sort((x, y) => x - y)) {
      const entries = this.perNeighbour.get(slot)!
      const to = neighbours.at(slot)
      invariant(to !== undefined, 'send target slot is occupied')
      for (const message of this.messagesTo(to, entries)) {
        effects.push({ type: 'send', to: to.id, message })
        entriesSent += message.entries.length
      }
    }
    traffic.messagesSent += effects.length
    traffic.entriesSent += entriesSent
    return { kind: 'send', effects, messagesApplied: 0, entriesApplied: 0, messagesSent: effects.length, entriesSent, wakeAtMs: undefined }
  }

  /** `entries` for one neighbour, cut into messages; the first carries our hello if one is due, and the connections we lost. */
  private messagesTo(to: Neighbour, entries: readonly RouteEntry[]): UpdateMessage[] {
    const { limits } = this.p
    const hello = helloFor(this.p, to)
    const lost = this.p.neighbours.takeLost(to)
    const planEnd = this.planEndSlots.has(to.slot)
    const allServed = saysAllServed(this.p, this.coHubs.length > 0 ? this.coHubSet : undefined, to)
    const out: UpdateMessage[] = []
    for (let start = 0; start < entries.length || (start === 0 && (hello !== undefined || lost !== undefined || planEnd)); start += limits.entriesPerMessageMax) {
      const last = start + limits.entriesPerMessageMax >= entries.length
      // One message takes the round's own list (built for this neighbour, unused after): no copy per message.
      const chunk = start === 0 && last ? entries : entries.slice(start, start + limits.entriesPerMessageMax)
      out.push(this.message(chunk, start === 0 ? hello : undefined, start === 0 ? lost : undefined, planEnd && last, allServed))
    }
    return out
  }

  private message(chunk: readonly RouteEntry[], hello: UpdateMessage['hello'], lost: readonly NodeId[] | undefined, planEnd: boolean, allServed: boolean): UpdateMessage {
    if (chunk.length === 0 && hello !== undefined && lost === undefined && !planEnd) return helloOnlyMessage(hello)
    const transSets: Uint8Array[] = []
    // Most messages carry one or two sets: a scan finds them without a map per message; past
    // TRANS_SETS_SCANNED_MAX, a map built then keeps a long message linear.
    let indexOfSet: Map<Uint8Array, number> | undefined
    const adverts = chunk.map((entry) => {
      if (this.p.mode === 'naive') return this.advertFor(entry, -1)
      const bytes = this.wireFormOf(entry.trans)
      if (bytes.length === 0) return this.advertFor(entry, -1)
      if (indexOfSet === undefined && transSets.length > TRANS_SETS_SCANNED_MAX) indexOfSet = new Map(transSets.map((set, i) => [set, i]))
      let index = indexOfSet === undefined ? transSets.indexOf(bytes) : (indexOfSet.get(bytes) ?? -1)
      if (index < 0) {
        index = transSets.length
        transSets.push(bytes)
        indexOfSet?.set(bytes, index)
      }
      return this.advertFor(entry, index)
    })
    const message: UpdateMessage = { neighbourSlots: transSets.length > 0 ? this.slotTable : NO_SLOTS, transSets: transSets.length > 0 ? transSets : NO_SETS, entries: adverts, ...(hello !== undefined ? { hello } : {}), ...(lost !== undefined ? { lostNeighbours: lost } : {}), ...(planEnd ? { planEnd: true as const } : {}), ...(allServed && transSets.length > 0 ? { allServed: true as const } : {}) }
    const numbering = this.p.numbering
    if (numbering !== undefined && transSets.length > 0) {
      numbering.attach(
        message,
        transSets.map((bytes) => {
          const shared = this.sharedForm.get(bytes)
          invariant(shared !== undefined, 'every wire form of this round has its shared form')
          return shared
        }),
      )
    }
    return message
  }

  private wireFormOf(trans: NodeSet): Uint8Array {
    let bytes = this.wireForm.get(trans)
    if (bytes !== undefined) return bytes
    const { neighbours, numbering, nodeIndex } = this.p
    const slots = new NodeSet(this.slotTable.length)
    const shared = numbering === undefined ? undefined : new NodeSet(nodeIndex.highWater)
    trans.forEach((index) => {
      const slot = neighbours.slotOfIndex(index)
      if (slot < 0) return
      slots.add(slot)
      shared?.add(index)
    })
    bytes = slots.toBytes()
    // Equal sets (held by different entries) share one wire form, so a message carries each once.
    const key = contentKey(bytes)
    const known = this.wireFormByContent.get(key)
    if (known !== undefined) {
      this.wireForm.set(trans, known)
      return known
    }
    this.wireFormByContent.set(key, bytes)
    this.wireForm.set(trans, bytes)
    if (shared !== undefined) this.sharedForm.set(bytes, shared.freeze())
    return bytes
  }

  private advertFor(entry: RouteEntry, transIndex: number): RouteAdvert {
    const cached = this.advertCache.get(entry.row)
    if (cached !== undefined && cached.trans === transIndex) return cached
    const advert = advertOf(entry, transIndex)
    this.advertCache.set(entry.row, advert)
    return advert
  }
}

/** Our hello for `to` if it is due (once per connection): the number of its own record we hold. */
function helloFor(p: CoreParts, to: Neighbour): UpdateMessage['hello'] {
  if (!to.helloDue) return undefined
  p.neighbours.setFlag(to, 'helloDue', false)
  const receiverSeq = p.table.get(to.id)?.seq
  // It holds at least this number of its own record (it would have issued a newer one).
  if (receiverSeq !== undefined && to.ownerSeqHeard === undefined) to.ownerSeqHeard = receiverSeq
  return helloOf(receiverSeq)
}

/**
 * The tests turn this on (vitest.setup.ts): every decision made for the joined neighbours only is
 * compared with the one over every neighbour, which is what `joinedNeighbours` rests on. Off, it
 * costs one test per entry and round.
 */
export const sendSelfCheck = { enabled: false, decisionsChecked: 0 }
type DecisionCache = Map<NodeSet, Map<NodeSet, Decision>>

/** The neighbours that joined since the last round (node indices, ascending), and as a set when there are many. */
interface Joined {
  readonly list: readonly number[]
  readonly set: NodeSet | undefined
}

/**
 * Up to this many joined neighbours are tested one by one; more, word by word (a set of them):
 * a node's index space is N/32 words, so a list of N/32 costs as much as the words.
 */
const JOINED_LIST_MAX = 32

/**
 * A message looks its trans sets up by scanning while it has at most this many (a scan of 8
 * references costs less than a map lookup, and most messages carry one or two); past it, by a map.
 */
const TRANS_SETS_SCANNED_MAX = 8

/**
 * Whether our updates to `to` say that every neighbour of ours holds or will get each entry in
 * them (`UpdateMessage.allServed`): we share out our neighbours with co-hubs (`coHubs`, or read
 * now when this step did not: it continues a round), and `to` is not one of them. True of every
 * entry we send: after a round each neighbour is in its trans or rcpt, or held back and decided
 * again, or joined since and is decided in the next round (`joinedNeighbours`); a co-hub's promise
 * counts only if at least as good as our offer, and we take no one's word but promises. A co-hub
 * is not told: its plan must rest on promises (two hubs each taking the other's word for a node
 * would both leave it out).
 */
function saysAllServed(p: CoreParts, coHubs: ReadonlySet<number> | undefined, to: Neighbour): boolean {
  if (p.mode !== 'optimized' || !p.mayHaveCoHubs()) return false
  const hubs = coHubs ?? new Set(p.coHubs().map((hub) => hub.connection))
  return hubs.size > 0 && !hubs.has(to.connection)
}

/** Whether one of `indices` is in neither `trans` nor `rcpt`. */
function anyLacking(indices: readonly number[], trans: NodeSet, rcpt: NodeSet): boolean {
  for (const index of indices) if (!trans.has(index) && !rcpt.has(index)) return true
  return false
}

/** Each neighbour (of `among`, if given) in neither trans nor rcpt of `entry`, in ascending index order. */
function forEachLacking(neighbours: NodeSet, entry: RouteEntry, among: Joined | undefined, visit: (index: number) => void): void {
  if (among === undefined) return NodeSet.forEachMissing(neighbours, entry.trans, entry.rcpt, visit)
  if (among.set !== undefined) return NodeSet.forEachMissing(among.set, entry.trans, entry.rcpt, visit)
  const { trans, rcpt } = entry
  for (const index of among.list) if (!trans.has(index) && !rcpt.has(index)) visit(index)
}

/** The bytes as a string, one character per byte: a Map key for their content. */
function contentKey(bytes: Uint8Array): string {
  let key = ''
  for (let i = 0; i < bytes.length; i++) key += String.fromCharCode(bytes[i]!)
  return key
}

/** The messages of a graceful leave: our own withdrawn entry to every neighbour at once, counted as sent. */
export function leaveMessages(p: CoreParts): Effect[] {
  const advert = advertOf(p.table.own, -1)
  const effects: Effect[] = []
  for (const peer of p.neighbours.ids()) effects.push({ type: 'send', to: peer, message: { neighbourSlots: [], transSets: [], entries: [advert] } })
  p.traffic.messagesSent += effects.length
  p.traffic.entriesSent += effects.length
  return effects
}
