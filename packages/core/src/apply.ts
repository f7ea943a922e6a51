import { invariant } from './errors.ts'
import type { Inbox, InboxItem } from './inbox.ts'
import type { Neighbour, SenderSlots } from './neighbours.ts'
import { EMPTY_SET, NodeSet } from './nodeset.ts'
import { LostInStep } from './lost.ts'
import type { CoreParts } from './parts.ts'
import { type RouteEntry, UNREACHABLE_HOPS, isFresher } from './route.ts'
import { isUnreachableSeq, seqNewer } from './seq.ts'
import type { TransSource } from './table.ts'
import type { NodeId, RouteAdvert, UpdateMessage } from './types.ts'
import { answerOwner, answerRelayed } from './tombstones.ts'
import { TransWord } from './vouching.ts'

/**
 * Priority 2 of the scheduler: applying received updates to the routing table, in the order
 * they arrived. What one advert does: a fresher route is adopted (`RouteTable.adopt`), an equal
 * one only tells us who holds it (`RouteTable.noteHolder`); a neighbour's first update carries
 * its hello, and its own record tells us whether it needs ours of it.
 */

/** Applies up to `maxMessages` queued updates; returns how many messages and entries it took. */
export function applyInbox(p: CoreParts, inbox: Inbox, maxMessages: number, nowMs: number): { messages: number; entries: number } {
  let messages = 0
  let entries = 0
  const lost = new LostInStep()
  while (messages < maxMessages) {
    const item = inbox.take()
    if (item === undefined) break
    messages++
    entries += item.message.entries.length
    // The connection it came on may have closed since (and maybe reopened, e.g. the sender
    // restarted): its news is then stale, and applying it could mark the new incarnation as
    // already holding entries it never got. Connection numbers are never reused: a match is `from`.
    const from = p.neighbours.getByIndex(item.index)
    if (from !== undefined && from.connection === item.connection) applyMessage(p, from, item.message, lost, nowMs)
    else applyFarewell(p, item, nowMs)
  }
  lost.end(p)
  return { messages, entries }
}

/**
 * From an update whose connection closed before it was applied, only the sender's own record
 * withdrawn at a newer number is taken: a leaving node's farewell (core.ts `leave`, its names given
 * up), which arrives just before its connection closes. Its number orders it, so it is never stale;
 * dropped, the node's names stayed with it as with a crash (the simulator closes the connection as
 * the farewell arrives, and dropped every one). Its signature was checked on receipt (police.ts).
 */
function applyFarewell(p: CoreParts, item: InboxItem, nowMs: number): void {
  for (const advert of item.message.entries) {
    if (advert.destination !== item.from || !isUnreachableSeq(advert.seq) || advert.names.length > 0) continue
    const entry = p.table.get(advert.destination)
    if (entry === undefined || !seqNewer(advert.seq, entry.seq)) continue
    const namesAdded = p.table.invalidate(entry, nowMs, advert)
    if (entry.introducedBy !== undefined) p.police.countNames(entry.introducedBy, namesAdded)
  }
}

/** The trans sets of one message in our numbering, each translated once, and the rcpt sets made from them. */
class MessageSets implements TransSource {
  private slotMap: Int32Array | undefined
  private readonly translated: (NodeSet | undefined)[] = []
  private readonly rcptAfterChange: NodeSet[] = []
  /** `served()` once per message: null until asked. */
  private servedSet: NodeSet | undefined | null = null
  private readonly shared: readonly NodeSet[] | undefined
  /** Whose trans sets we take (vouching.ts). */
  readonly word: TransWord

  constructor(
    private readonly p: CoreParts,
    private readonly from: Neighbour,
    private readonly message: UpdateMessage,
  ) {
    this.shared = p.numbering?.setsOf(message)
    this.word = new TransWord(p, from.id)
  }

  /** The sender's trans after its send, in our numbering; one frozen set per trans index, shared by every entry that names it. */
  trans(index: number): NodeSet | undefined {
    if (index < 0 || this.p.mode === 'naive') return undefined
    let set = this.translated[index]
    if (set !== undefined) return set
    const shared = this.shared?.[index]
    if (shared !== undefined) set = shared
    else {
      this.slotMap ??= slotMapOf(this.p, this.from, this.message.neighbourSlots)
      const bytes = this.message.transSets[index]
      invariant(bytes !== undefined, 'a checked update names only trans sets it carries')
      set = NodeSet.translate(bytes, this.slotMap, this.p.nodeIndex.highWater)
    }
    if (!this.p.fanout.orphans.isEmpty()) set = this.p.fanout.withoutOrphans(set) // fanout.ts: a closed co-hub's promises
    this.translated[index] = set
    return set
  }

  /**
   * The sender's neighbours, if it says each holds or will get every entry here
   * (`UpdateMessage.allServed`, a hub sharing out its neighbours with co-hubs) and we take its
   * word: only from one of our hubs (`isOurHub`), and not if we can have co-hubs ourselves, whose plans must rest on promises alone (two hubs
   * each taking the other's word for a node would both leave it out). One set per slot table.
   */
  served(): NodeSet | undefined {
    if (this.servedSet !== null) return this.servedSet
    this.servedSet = undefined
    if (this.message.allServed !== true || this.p.mode === 'naive' || this.message.neighbourSlots.length === 0 || this.p.mayHaveCoHubs()) return undefined
    // Only from one of our hubs: a member's word would keep our direct routes from its neighbours.
    if (!this.p.isOurHub(this.from.id)) return undefined
    this.slotMap ??= slotMapOf(this.p, this.from, this.message.neighbourSlots)
    const slots = this.from.senderSlots
    invariant(slots !== undefined && slots.map === this.slotMap, 'the slot map is the sender\'s latest')
    if (slots.served === undefined) {
      const set = new NodeSet(this.p.nodeIndex.highWater)
      for (const index of slots.map) if (index >= 0) set.add(index)
      slots.served = this.p.table.holders.intern(set)
    }
    this.servedSet = slots.served
    return slots.served
  }

  /** rcpt after a change: the sender plus everyone it sent the same entry to (and those it says are served); one set per trans set. */
  rcpt(transIndex: number): NodeSet {
    const key = transIndex + 1
    let set = this.rcptAfterChange[key]
    if (set === undefined) {
      const trans = this.trans(transIndex)
      set = trans === undefined ? this.p.table.holders.union(EMPTY_SET, this.from.index, undefined) : this.p.table.holders.withHolder(this.from.index, trans)
      const served = this.served()
      if (served !== undefined) set = this.p.table.holders.union(set, -1, served)
      this.rcptAfterChange[key] = set
    }
    return set
  }
}

/**
 * A hub that said every neighbour of its is served (`UpdateMessage.allServed`) holds each of them
 * at 1 hop (they connected to it, and each advertises itself first thing), so each of them holds
 * or will get a route of 2 hops or fewer to every other, from the hub or a co-hub. Our route to
 * one of them therefore cannot improve the others' (1 + 1 at best): they join rcpt, the hub
 * vouching. Without it, a node whose hub served it late was dialled by peers served early, learned
 * each peer's record from the peer, and told every other peer of them its direct route: 0.57·N(N−1)
 * copies at 3,600 processes in three subnets (simulations/ANALYSIS.md). After a change of the
 * route (adopted, or direct), which starts rcpt afresh. Not our own entry (the hellos settle it).
 */
function hubsServe(p: CoreParts, entry: RouteEntry): void {
  const table = p.table
  if (p.neighbours.servedBy.size === 0 || !entry.reachable || table.isOwn(entry)) return
  // alternates.ts: with several next hops, holding it at exactly our offer is not covered.
  if (!table.alternates.covers(HUB_NEIGHBOUR_HOPS, entry.nhops + 1)) return
  for (const [hub, served] of p.neighbours.servedBy) {
    if (!served.has(entry.row) || table.holders.covers(entry.rcpt, served)) continue
    entry.rcpt = table.holders.union(entry.rcpt, -1, served)
    entry.rcptHopsMax = Math.max(entry.rcptHopsMax, HUB_NEIGHBOUR_HOPS)
    entry.vouchers = table.holders.union(entry.vouchers, hub, undefined)
  }
}

/**
 * Whether our record waits for a new neighbour's hello (core.ts `connectionUp`): with discovery,
 * if we hold its record (a hub broadcast both), or if a hub said its neighbours are served and it
 * is one of them (it holds or will get ours from that hub, as we are the hub's neighbour too).
 * The hello says whether it does; if not, ours goes then.
 */
export function peerProbablyHoldsOurs(p: CoreParts, peer: NodeId, index: number): boolean {
  if (!p.discovery) return false
  if (p.table.get(peer)?.reachable === true) return true
  for (const served of p.neighbours.servedBy.values()) if (served.has(index)) return true
  return false
}

/** What a hub's neighbours hold each other at: 1 hop to the hub, 1 from it. */
const HUB_NEIGHBOUR_HOPS = 2

/** A new neighbour's number (undefined: none left), room made first (expiry.ts `makeRoom`). */
export function numberNeighbour(p: CoreParts, peer: NodeId): number | undefined {
  p.expiry.makeRoom(p, 1)
  return p.nodeIndex.intern(peer)
}

/**
 * Sender slot -> our node index for `table`, reusing what changed least since its last message.
 * In a shared numbering every core translates a table alike: one translation per table for all
 * (`SharedNumbering.slotMapOf`).
 */
function slotMapOf(p: CoreParts, from: Neighbour, table: readonly NodeId[]): Int32Array {
  const cached = from.senderSlots
  if (cached !== undefined && cached.table === table) return cached.map
  const map = p.numbering?.slotMapOf(table, () => translateSlots(p, cached, table)) ?? translateSlots(p, cached, table)
  from.senderSlots = { table, map }
  return map
}

/** `table` in our numbering, reusing `cached` (the sender's previous table) where it names the same nodes. */
function translateSlots(p: CoreParts, cached: SenderSlots | undefined, table: readonly NodeId[]): Int32Array {
  const map = new Int32Array(table.length)
  for (let i = 0; i < table.length; i++) {
    const id = table[i]!
    if (cached !== undefined && i < cached.table.length && cached.table[i] === id) map[i] = cached.map[i]!
    else map[i] = id === '' ? -1 : (p.nodeIndex.intern(id) ?? -1)
  }
  return map
}

function applyMessage(p: CoreParts, from: Neighbour, message: UpdateMessage, lost: LostInStep, nowMs: number): void {
  // Every node the message names may need a number (expiry.ts): before its sets hold any.
  p.expiry.makeRoom(p, message.neighbourSlots.length + message.entries.length)
  const sets = new MessageSets(p, from, message)
  // names.ts: our start-up claims yield only to the network's word: one of our hubs', anyone's if we have none.
  p.names.fromNetwork = !p.hasHubs() || p.isOurHub(from.id)
  // A hub's word that its neighbours are served stands for its entries to come (`hubsServe`).
  const served = sets.served()
  if (served !== undefined) p.neighbours.servedBy.set(from.index, served)
  // A co-hub's update carries its plan (fanout.ts): a round waiting for it counts what came.
  if (p.mayHaveCoHubs()) p.fanout.heardFrom(from.id, message.entries.length)
  if (from.awaitingHello) {
    from.awaitingHello = false
    p.neighbours.setFlag(from, 'ownWaitsForHello', false)
    applyHello(p, from, message.hello)
  }
  for (const advert of message.entries) {
    applyAdvert(p, from, advert, sets, nowMs)
    if (advert.nhops === 1 && !isUnreachableSeq(advert.seq) && p.mode === 'optimized') heardConnected(p, from, advert.destination)
    if (advert.destination === from.id && p.mode === 'optimized') heardFromOwner(p, from, advert.seq)
  }
  if (message.lostNeighbours !== undefined && message.lostNeighbours.length > 0 && p.mode === 'optimized') lost.heard(p, from, message.lostNeighbours)
  if (message.planEnd === true) p.fanout.planEnded(from.id, p.neighbours.connectionsOpened)
  // Our names claimed before we heard the network are established now (names.ts).
  if (p.names.fromNetwork) p.names.heardNetwork()
}

/**
 * May a record with these names be stored? Not if it claims a name another stored record holds
 * (names.ts); if it is our own pending claim that loses, we yield first: the name leaves our record.
 */
function admitClaims(p: CoreParts, advert: RouteAdvert): boolean {
  if (advert.names.length === 0) return true
  const verdict = p.names.check(advert.destination, advert.names)
  if (!verdict.accept) return false
  if (verdict.yielded.length > 0) {
    const own = p.table.own
    p.table.setOwnRecord(own.names.filter((name) => !verdict.yielded.includes(name)), own.addresses)
  }
  return true
}

/**
 * The first update on a connection says which number of our record the neighbour holds. If it
 * holds our current one, it does not need it again; otherwise it gets ours now. A hello is not
 * signed, so a claim of a newer number (we restarted, or a route to us was lost) does not move
 * our sequence number: the neighbour sees our older record and sends us its signed newer one,
 * which does (`heardFromOwner`).
 */
function applyHello(p: CoreParts, from: Neighbour, hello: UpdateMessage['hello']): void {
  const own = p.table.own
  if (hello?.receiverSeq === own.seq) p.table.noteHolder(own, from.index, 0, undefined)
  else p.table.dirty.add(own)
}

/**
 * A neighbour advertised its own record. If we hold a newer number for it (it restarted, or a
 * retraction reached us first), it must hear ours to issue a fresher one: make our entry due
 * to it again.
 */
function heardFromOwner(p: CoreParts, owner: Neighbour, seq: number): void {
  owner.ownerSeqHeard = seq
  const entry = p.table.get(owner.id)
  if (entry === undefined || !seqNewer(entry.seq, seq)) return
  entry.trans = p.table.holders.without(entry.trans, owner.index)
  entry.rcpt = p.table.holders.without(entry.rcpt, owner.index)
  p.table.dirty.add(entry)
}

/**
 * alternates.ts: neighbour `from` advertised `other` at 1 hop, so the two are connected. If
 * `other` is our neighbour too, it holds `from` at 1 hop, better than any offer of ours: covered
 * (`from`, as the owner of its record, sees that its neighbours hold its newest one). With
 * several next hops nothing else tells us, and each would get our worse offer: the bulk of the
 * cost in a subnet whose hosts all connect to each other (packages/core/README.md, "Cost"). With
 * one next hop the paper's rule covers it already, and nothing changes (the simulator).
 */
function heardConnected(p: CoreParts, from: Neighbour, other: NodeId): void {
  if (!p.table.alternates.enabled) return
  const neighbour = p.neighbours.get(other)
  const entry = p.table.get(from.id)
  if (neighbour === undefined || entry === undefined || !entry.reachable) return
  p.table.noteHolder(entry, neighbour.index, 1, undefined)
}

function applyAdvert(p: CoreParts, from: Neighbour, advert: RouteAdvert, sets: MessageSets, nowMs: number): void {
  const senderHops = isUnreachableSeq(advert.seq) ? UNREACHABLE_HOPS : advert.nhops
  const table = p.table
  if (advert.destination === p.id) {
    // Someone holds our record with a sequence number at least ours: we restarted, or a route
    // to us was lost (odd). Issue a newer even number so our fresh route wins everywhere.
    if (seqNewer(advert.seq, table.own.seq)) table.ownRecordSeenAt(advert.seq, nowMs)
    else if (advert.seq === table.own.seq && p.mode === 'optimized') table.noteHolder(table.own, from.index, senderHops, undefined)
    return
  }
  // tombstones.ts: at or below a forgotten destination's last number, a replay (or its restarted owner).
  const tombstone = p.expiry.tombstones.verdict(advert, from.id)
  if (tombstone === 'answer') return answerOwner(p, advert, (a) => admitClaims(p, a), nowMs)
  if (tombstone === 'refuse') return answerRelayed(p, advert, from.id, (a) => admitClaims(p, a), nowMs)
  const candidateHops = senderHops + 1
  let entry = table.get(advert.destination)
  if (entry === undefined) {
    if (table.size >= p.limits.destinationsMax) {
      p.traffic.destinationsRefused++
      return
    }
    // Charged to the neighbour that relayed it, unless it is the neighbour's own record; past its
    // share the destination is refused and the neighbour keeps its link (police.ts). Then its
    // names: a record claiming a held name is refused whole (names.ts).
    if (!p.police.mayIntroduce(from.id, advert.destination, advert.names.length) || !admitClaims(p, advert)) return
    entry = table.insert(advert.destination, advert.seq, from.id)
    if (entry === undefined) {
      p.traffic.destinationsRefused++ // no node number left for it (columns.ts): as with a full table
      return
    }
    if (advert.destination === from.id) entry.introducedBy = undefined
    else p.police.introduced(from.id)
    adopt(p, entry, from, advert, candidateHops, sets, true, nowMs)
  } else if (isFresher(advert.seq, candidateHops, entry.seq, entry.nhops)) {
    // A retraction (odd seq) is adopted even while other next hops remain: the retracting
    // neighbour holds seq + 1 and refuses every older offer, so only the destination's next even
    // number gives it a route again, and only the odd number reaching the destination makes it
    // issue one. Keeping the route and swallowing the retraction left the neighbour without a
    // route for good (test/link-loss.test.ts, pinned case). Failover on a dropped connection
    // (`Alternates.neighbourGone`) is unchanged: no retraction goes out while an alternate lives.
    // A newer record that grows past its introducer's name share, or claims a held name, is
    // refused (the older one stays).
    if (entry.introducedBy !== undefined && advert.seq !== entry.seq && !p.police.mayGrowNames(entry.introducedBy, advert.names.length - entry.names.length)) return
    if (advert.seq !== entry.seq && !admitClaims(p, advert)) return
    adopt(p, entry, from, advert, candidateHops, sets, false, nowMs)
  } else if (advert.seq === entry.seq) {
    // alternates.ts: an equal offer adds a next hop, a worse one from a next hop removes it.
    table.alternates.heardAtSameSeq(entry, from.id, candidateHops)
    if (p.mode === 'optimized') table.noteHolder(entry, from.index, senderHops, sets, sets.word.transOf(advert))
  } else if (entry.hearsay) {
    // route.ts, `hearsay`: a neighbour holds an older number of it (the destination came back at a
    // number below its retraction): it is sent on from now, so the retraction reaches the owner,
    // which then issues a newer one.
    entry.hearsay = false
    table.dirty.add(entry)
  }
}

/** Takes a fresher (or new) route, learns its addresses, and keeps a neighbour's route direct. */
function adopt(p: CoreParts, entry: RouteEntry, from: Neighbour, advert: RouteAdvert, candidateHops: number, sets: MessageSets, isNew: boolean, nowMs: number): void {
  const rcpt = p.mode === 'optimized' ? sets.rcpt(sets.word.transOf(advert)) : undefined
  const namesAdded = p.table.adopt(entry, from.id, from.index, advert, candidateHops, rcpt, isNew, nowMs)
  // route.ts, `hearsay`: a destination first heard of in a retraction stays hearsay until a route comes.
  entry.hearsay = isNew || entry.hearsay
  if (p.mode === 'optimized') hubsServe(p, entry)
  if (entry.introducedBy !== undefined) p.police.countNames(entry.introducedBy, namesAdded)
  if (entry.reachable && p.discovery) wantDial(p, entry, nowMs)
  // A record of a neighbour relayed by someone else still routes directly to the neighbour.
  const neighbour = p.neighbours.getByIndex(entry.row)
  if (p.mode === 'optimized' && neighbour !== undefined && !from.is(neighbour)) routeDirectly(p, neighbour.id, neighbour.index, nowMs)
}

/** `RouteTable.routeDirectly` with what the core knows of the neighbours: their numbers, and which will connect to `peer` themselves (`CoreConfig.willConnect`). */
export function routeDirectly(p: CoreParts, peer: NodeId, index: number, nowMs: number): void {
  const willConnect = p.willConnect
  const staysWith = willConnect === undefined || !p.discovery ? undefined : (holder: NodeId) => willConnect(holder, peer)
  p.table.routeDirectly(peer, index, nowMs, (id) => p.neighbours.get(id)?.index, staysWith)
  const entry = p.table.get(peer)
  if (entry !== undefined && p.table.dirty.has(entry)) hubsServe(p, entry)
}

/**
 * Discovery: the addresses of a destination we are not connected to are worth a dial; held back
 * dialDeferMs if its id is smaller than ours (it dials us meanwhile, as it learned us too).
 */
function wantDial(p: CoreParts, entry: RouteEntry, nowMs: number): void {
  if (p.table.isOwn(entry) || p.neighbours.slotOfIndex(entry.row) >= 0) return
  const deferMs = p.timing.dialDeferMs
  for (const address of entry.addresses) {
    if (!p.book.learn(address, entry.destination)) continue
    if (deferMs > 0 && entry.destination < p.id) p.book.wantDeferred(address, nowMs + deferMs)
    else p.book.want(address)
  }
}
