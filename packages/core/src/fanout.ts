import { invariant } from './errors.ts'
import { FNV_OFFSET, fnv1a, mix32 } from './alternates.ts'
import type { AddressBook } from './discovery.ts'
import type { Neighbour, NeighbourTable } from './neighbours.ts'
import { NodeSet } from './nodeset.ts'
import type { CoreParts } from './parts.ts'
import type { RouteEntry } from './route.ts'
import type { NodeId, PhysicalAddress } from './types.ts'

/**
 * A send round that takes more than one step: its fan-out (send.ts decides, this module holds
 * what is still to go). Two things make a round last several steps:
 *
 * - **Bounded steps** (`limits.sendStepEntriesMax`). A hub that 400 nodes joined owes each of them
 *   its table: 160,000 entries, built and sent in one step, all leaving when the last is built.
 *   In bounded steps the first joiners get their tables (and start dialling their peers) while
 *   the hub builds the rest, and updates that arrive meanwhile are applied between steps
 *   (priority 2 first, as always).
 * - **Co-hubs** (`timing.coHubWaitMs`). Nodes that know several hubs connect to all of them, and
 *   each hub would send each of them every record: k copies for k hubs (three subnets, one
 *   gateway each: 2.97·N(N−1) entries). A hub that is one of the hubs it was given (its own
 *   address among them) and is connected to others of them (its co-hubs) splits its neighbours
 *   with them by a hash of (hub, neighbour) both sides compute alike (`ownerOf`): it sends its
 *   co-hubs first, then the neighbours it owns, and holds back the others'. Those updates to the
 *   co-hubs carry, as trans, everyone each hub promised to serve; every hub adds what its
 *   co-hubs promised to rcpt (the paper's rule), so when it decides the held-back neighbours
 *   again, after each co-hub said its plan ended (`UpdateMessage.planEnd`, or `coHubWaitMs`),
 *   it sends only what no co-hub promised at least as good. Nothing is promised that is not
 *   sent (a held-back neighbour is not in trans), so a neighbour a co-hub cannot serve still
 *   gets every entry from us, later.
 *
 * The bookkeeping is per round: entries promised to a neighbour (in its trans), and entries held
 * back for it (in neither trans nor rcpt yet), by neighbour. Both are bounded by the table size
 * times the neighbour count, what one round of the unbounded scheduler built at once.
 */
export class Fanout {
  /** Promised entries per neighbour (by connection number), to go out in slot order, each in its trans when promised. */
  private readonly promised = new Map<number, Pending>()
  /** Entries held back for a neighbour a co-hub owns (by connection number): decided again once the co-hubs' plans are in. */
  private readonly heldBack = new Map<number, Pending>()
  /** Co-hubs whose plan is not all in yet, and how many entries of it we still expect from each. */
  private readonly awaited = new Map<NodeId, number>()
  /**
   * Entries received from each neighbour since the last round began (a co-hub's plan may come
   * before ours begins). Bounded by the neighbour table: emptied at every round.
   */
  private readonly heard = new Map<NodeId, number>()
  /**
   * For each neighbour whose plan ended (`UpdateMessage.planEnd`), how many connections we had
   * opened when the word came (`NeighbourTable.connectionsOpened`). A co-hub's plan that came
   * before our round began covers the neighbours that had joined us by then (they join every hub
   * at about the same time), so a round that holds back only those needs no other. Bounded by
   * the neighbour table: a neighbour leaves it when it goes.
   */
  private readonly planEndConnections = new Map<NodeId, number>()
  /** The round's wait for its co-hubs ends then at the latest. */
  private waitEndsMs = Number.NEGATIVE_INFINITY
  /** Rounds that waited for a co-hub's plan, and those of them whose wait the bound ended (a plan still missing when the held-back entries were decided): `CoreStats`. */
  waitsBegun = 0
  waitsExpired = 0
  private expiryCounted = true
  /** The co-hubs the owner cache was made for (their ids joined), and the cache: neighbour -> owned by a co-hub. */
  /**
   * Neighbours a co-hub that closed may have owned (`coHubGone`): the trans sets we receive say
   * nothing about them any more, since updates still under way may repeat that co-hub's promises.
   * At most our neighbours; each leaves with its connection.
   */
  readonly orphans = new NodeSet()
  private ownersKey = ''
  /** By connection number: the neighbour's slot, and whether a co-hub owns it (`OWNED_ELSEWHERE_BIT`). */
  private readonly ownedElsewhere = new Map<number, number>()

  /** Whether a round is under way: entries promised or held back are still to be sent or decided. */
  get pending(): boolean {
    return this.promised.size > 0 || this.heldBack.size > 0
  }

  /** Whether the round waits for co-hubs at `nowMs` (then nothing of it is sent before `waitEndsAtMs`). */
  waiting(nowMs: number): boolean {
    return this.awaited.size > 0 && nowMs < this.waitEndsMs
  }

  get waitEndsAtMs(): number {
    return this.waitEndsMs
  }

  /** Whether anything of this round is still to go to the neighbour on `connection` (its hello then goes with it). */
  holdsFor(connection: number): boolean {
    return this.promised.has(connection) || this.heldBack.has(connection)
  }

  /** `entry` goes to `neighbour` later in this round (it is in the entry's trans already). */
  promise(neighbour: Neighbour, entry: RouteEntry): void {
    push(this.promised, neighbour, entry)
  }

  /** `entry` is held back for `neighbour`, whose owner is a co-hub: decided again after the wait. */
  holdBack(neighbour: Neighbour, entry: RouteEntry): void {
    push(this.heldBack, neighbour, entry)
  }

  /**
   * The round begins. If it held anything back, it waits until `untilMs` at the latest for each
   * co-hub's plan: until the co-hub says its plan ended (`planEnded`), or as many entries came
   * from it as we send it now (`planned`; a co-hub that does not say so, an older node, has the
   * same records to share out). What it sent since our last round began counts.
   */
  begin(planned: ReadonlyMap<NodeId, number>, untilMs: number): void {
    // Map.clear() allocates a new table even when empty (V8); rounds are frequent and these mostly empty.
    if (this.awaited.size > 0) this.awaited.clear()
    if (this.heldBack.size > 0) {
      let newestHeld = 0
      for (const connection of this.heldBack.keys()) newestHeld = Math.max(newestHeld, connection)
      for (const [hub, entries] of planned) {
        const missing = entries - (this.heard.get(hub) ?? 0)
        const planCovers = (this.planEndConnections.get(hub) ?? 0) >= newestHeld
        if (missing > 0 && !planCovers) this.awaited.set(hub, missing)
      }
      this.waitEndsMs = untilMs
      if (this.awaited.size > 0) this.waitsBegun++
      this.expiryCounted = this.awaited.size === 0
    }
    if (this.heard.size > 0) this.heard.clear()
  }

  /**
   * `peer` sent the last message of its round's first step to us (`UpdateMessage.planEnd`) when
   * we had opened `connectionsOpened` connections: a co-hub's plan is all in.
   */
  planEnded(peer: NodeId, connectionsOpened: number): void {
    this.planEndConnections.set(peer, connectionsOpened)
    this.awaited.delete(peer)
  }

  /** `entries` from `peer` were applied: part of its plan, if it is a co-hub (asked only of a core that can have co-hubs, `CoreParts.mayHaveCoHubs`: only such a core plans with them). */
  heardFrom(peer: NodeId, entries: number): void {
    const awaited = this.awaited.get(peer)
    if (awaited === undefined) this.heard.set(peer, (this.heard.get(peer) ?? 0) + entries)
    else if (awaited <= entries) this.awaited.delete(peer)
    else this.awaited.set(peer, awaited - entries)
  }

  /** `neighbour` is gone: nothing more of this round goes to it. With `coHubOf`, it was a co-hub of that core (`coHubGone`). */
  neighbourGone(neighbour: Neighbour, coHubOf?: CoreParts): void {
    this.promised.delete(neighbour.connection)
    this.heldBack.delete(neighbour.connection)
    this.awaited.delete(neighbour.id)
    this.heard.delete(neighbour.id)
    this.planEndConnections.delete(neighbour.id)
    this.orphans.delete(neighbour.index)
    if (coHubOf !== undefined) coHubGone(coHubOf, neighbour)
  }

  /**
   * The next part of the round, about `budget` entries: promised entries first (whole neighbours,
   * in slot order, at least one), then the held-back ones (`decide` says, for each, whether it
   * still goes). `emit(neighbour, entry)` takes what goes out now.
   */
  take(budget: number, stillPromised: (n: Neighbour, e: RouteEntry) => boolean, decide: (n: Neighbour, e: RouteEntry) => boolean, emit: (n: Neighbour, e: RouteEntry) => void): void {
    invariant(budget >= 1, 'a send step takes at least one entry')
    let taken = 0
    taken = drain(this.promised, budget, taken, stillPromised, emit)
    if (this.promised.size === 0 && taken < budget) {
      if (!this.expiryCounted && this.awaited.size > 0 && this.heldBack.size > 0) this.waitsExpired++
      this.expiryCounted = true
      drain(this.heldBack, budget, taken, decide, emit)
    }
    if (!this.pending && this.awaited.size > 0) this.awaited.clear()
  }

  /** Promised neighbours in slot order (the order of a round without bounded steps). */
  sortPromised(): void {
    if (this.promised.size < 2) return
    const sorted = [...this.promised].sort((a, b) => a[1].neighbour.slot - b[1].neighbour.slot)
    this.promised.clear()
    for (const [n, list] of sorted) this.promised.set(n, list)
  }

  /**
   * Whether a co-hub owns `neighbour`: of us and our co-hubs, the one with the smallest hash of
   * (hub id, neighbour id). Every hub computes the same owner when they know the same co-hubs;
   * where they do not, a neighbour is served twice or later, never not at all.
   */
  ownedByCoHub(self: NodeId, coHubs: readonly Neighbour[], neighbour: Neighbour): boolean {
    const key = coHubs.map((h) => h.id).join('\u0000')
    if (key !== this.ownersKey) {
      this.ownersKey = key
      this.ownedElsewhere.clear()
    }
    const cached = this.ownedElsewhere.get(neighbour.connection)
    if (cached !== undefined) return (cached & OWNED_ELSEWHERE_BIT) !== 0
    const mine = ownerHash(self, neighbour.id)
    const owned = coHubs.some((hub) => !hub.is(neighbour) && ownerHash(hub.id, neighbour.id) < mine)
    this.ownedElsewhere.set(neighbour.connection, neighbour.slot * 2 + (owned ? OWNED_ELSEWHERE_BIT : 0))
    return owned
  }

  /** `set` (a received trans set, in our numbering) without the orphans: frozen, itself if it names none. */
  withoutOrphans(set: NodeSet): NodeSet {
    let out: NodeSet | undefined
    this.orphans.forEach((index) => {
      if (!set.has(index)) return
      out ??= set.clone()
      out.delete(index)
    })
    return out === undefined ? set : out.freeze()
  }

  /** Forgets cached owners of neighbours that are gone (bounded by the neighbour table). */
  prune(neighbours: NeighbourTable): void {
    for (const [connection, cached] of this.ownedElsewhere) if (neighbours.connectionAt(Math.floor(cached / 2)) !== connection) this.ownedElsewhere.delete(connection)
  }
}

/**
 * Our co-hubs: the neighbours that own one of the hub addresses we were given, if we are a hub
 * ourselves (our own address among them) and `coHubWaitMs` is on; else none.
 */
export function coHubsOf(own: readonly PhysicalAddress[], hubsGiven: readonly PhysicalAddress[], book: AddressBook, neighbours: NeighbourTable, coHubWaitMs: number): Neighbour[] {
  if (!mayHaveCoHubs(own, hubsGiven, coHubWaitMs)) return []
  const out: Neighbour[] = []
  for (const address of hubsGiven) {
    const owner = book.ownerOf(address)
    const neighbour = owner === undefined ? undefined : neighbours.get(owner)
    if (neighbour !== undefined && !out.some((hub) => hub.is(neighbour))) out.push(neighbour)
  }
  return out
}

/**
 * Whether `peer` is one of our hubs: the node that answered at one of `hubs` (the addresses we were
 * given, not our own). The book's owner of a hub address is set by a dial there, or by a record
 * only while no owner is known (discovery.ts `learn`), so a member cannot take a hub's place by
 * listing its address.
 */
export function isOurHub(hubs: readonly PhysicalAddress[], book: AddressBook, peer: NodeId): boolean {
  for (const address of hubs) if (book.ownerOf(address) === peer) return true
  return false
}

/** Whether a core can have co-hubs at all: it is a hub (one of the hubs it was given is its own address) and coHubWaitMs is on. */
export function mayHaveCoHubs(own: readonly PhysicalAddress[], hubsGiven: readonly PhysicalAddress[], coHubWaitMs: number): boolean {
  if (coHubWaitMs === 0) return false
  for (const address of hubsGiven) if (own.includes(address)) return true
  return false
}

/**
 * Co-hub `gone` closed. Our neighbours may be in our trans and rcpt on its word alone (its plan),
 * directly or through another co-hub's plan that repeated it, for entries it may never have sent
 * them (it crashed first): they are forgotten as holders everywhere, and every entry is
 * considered for them again. Duplicates for what they did get, nothing missing; and from now on
 * no trans set we receive counts for them (`orphans`): the other co-hubs' updates under way
 * still carry the promises they took over. The cost is one full round after a co-hub closes.
 */
export function coHubGone(p: CoreParts, gone: Neighbour): void {
  // Every neighbour, not only those it owned by the hash: where two hubs' views of their co-hubs
  // differed it may have promised anyone, and the survivors relay each other's promises in their
  // trans sets (each believing the other serves a node only the gone hub did serve).
  const indices = new NodeSet()
  for (const n of p.neighbours.values()) if (!n.is(gone)) indices.add(n.index)
  if (indices.isEmpty()) return
  indices.forEach((index) => p.fanout.orphans.add(index))
  p.table.forgetIndices(indices)
  p.table.allDirty = true
}

/** What a round still owes one neighbour: a view of its connection (the map's key), and the entries. */
interface Pending {
  readonly neighbour: Neighbour
  readonly entries: RouteEntry[]
}

/** `Fanout.ownedElsewhere`'s bit for "a co-hub owns it" (the rest is the slot, times 2). */
const OWNED_ELSEWHERE_BIT = 1

function push(map: Map<number, Pending>, neighbour: Neighbour, entry: RouteEntry): void {
  let pending = map.get(neighbour.connection)
  if (pending === undefined) map.set(neighbour.connection, (pending = { neighbour, entries: [] }))
  pending.entries.push(entry)
}

function drain(map: Map<number, Pending>, budget: number, taken: number, keep: (n: Neighbour, e: RouteEntry) => boolean, emit: (n: Neighbour, e: RouteEntry) => void): number {
  for (const [connection, { neighbour, entries: list }] of map) {
    if (taken >= budget) break
    map.delete(connection)
    for (const entry of list) {
      if (!keep(neighbour, entry)) continue
      emit(neighbour, entry)
      taken++
    }
  }
  return taken
}

/** 32-bit FNV-1a of (hub, neighbour) with Murmur3's finaliser (alternates.ts's hash): pure, so every hub ranks alike. */
export function ownerHash(hub: NodeId, neighbour: NodeId): number {
  return mix32(fnv1a(`${hub}\u0000${neighbour}`, FNV_OFFSET))
}
