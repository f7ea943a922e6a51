import { AddressRows, type AddressState } from './address-rows.ts'
import { CORE_CONSTANTS } from './constants.ts'
import { type BackoffPass, Backoffs, passStands } from './backoffs.ts'
import { DialQueue } from './dial-queue.ts'
import { invariant, PhoenixError } from './errors.ts'
import type { NodeIndex } from './nodeindex.ts'
import type { NodeId, PhysicalAddress } from './types.ts'

/**
 * Why an address is kept dialled until it answers: a configured hub (for good), or an address of
 * a neighbour whose connection went down (while its destination is remembered). Other addresses
 * are dialled when discovery wants them and backed off up to dialBackoffMaxMs when they fail.
 */
export type Redial = 'hub' | 'lost'

export interface DiscoveryTiming {
  readonly dialBackoffInitialMs: number
  readonly dialBackoffMaxMs: number
  readonly redialBackoffMaxMs: number
  readonly lostRedialsPerSecondMax: number
}

/**
 * The address book: every physical address learned (hubs at start, then each destination's
 * addresses from routing updates), which of them to dial next, and back-off for failed dials so
 * a forbidden address is retried at a decreasing rate, never in a tight loop.
 */
export class AddressBook {
  /** Each address's state, in columns (address-rows.ts). */
  private readonly addresses: AddressRows
  /** Rows of the addresses ready to dial, nearest first, then in discovery order (dial-queue.ts). */
  private readonly queue: DialQueue
  /** Our own addresses: which known addresses look nearest (`nearnessOf`). */
  private ownAddresses: readonly PhysicalAddress[] = []
  private readonly inFlight = new Set<PhysicalAddress>()
  private readonly ownersDialling = new Map<NodeId, number>()
  /** Backed-off addresses, in the order backed off (released in that order). */
  private readonly backedOff = new Backoffs()
  /** The last full pass over `backedOff` that left none ended (backoffs.ts): steps before its earliest end skip the walk. */
  private backoffPass: BackoffPass | undefined
  /** Re-dials of lost neighbours started in the current one-second window (rate-limited; hubs are not). */
  private lostRedialWindowStartMs = Number.NEGATIVE_INFINITY
  private lostRedialsInWindow = 0
  /** Consecutive flaps per peer (connections that went down within connectionStableMs), for `connectionLost`. */
  private readonly flaps = new Map<NodeId, number>()
  dialsStarted = 0
  dialsFailed = 0
  /** Addresses whose first dial was held back (`wantDeferred`). */
  dialsDeferred = 0
  addressesRefused = 0
  redialsStarted = 0
  /** Full walks of the back-offs by `releaseBackoffs` (tests: a step with nothing changed walks none). */
  backoffWalks = 0

  constructor(
    maxAddresses: number,
    private readonly maxInFlight: number,
    private readonly timing: DiscoveryTiming,
    /** A simulator's shared address numbers (`SharedNumbering`); a core's own otherwise. */
    numbers?: NodeIndex,
    /** A simulator's shared node numbers, for the owners (`SharedNumbering`); the book's own otherwise. */
    owners?: NodeIndex,
  ) {
    this.addresses = new AddressRows(maxAddresses, numbers, owners)
    this.queue = new DialQueue((row) => this.addresses.nearness[row]!)
  }

  get size(): number {
    return this.addresses.size
  }

  get inFlightCount(): number {
    return this.inFlight.size
  }

  /** Addresses the dial queue holds, taken ones not yet dropped included (tests: its memory follows what is pending). */
  get dialQueueHeld(): number {
    return this.queue.held
  }

  /** Learns an address (and its owner if known). Returns false when the book is full. */
  learn(address: PhysicalAddress, owner: NodeId | undefined): boolean {
    let state = this.addresses.get(address)
    if (state === undefined) {
      if (!this.addresses.canAdd(address)) {
        this.addressesRefused++
        return false
      }
      state = this.addresses.add(address)
      state.nearness = this.nearnessOf(address)
    }
    // A hub's address changes owner only by a dial that reached it (`dialSucceeded`): a member
    // listing a gateway's address in its record would otherwise be taken for that gateway, a
    // co-hub trusted with its plan (fanout.ts `coHubsOf`) or a hub whose word is taken (`isOurHub`).
    if (owner !== undefined && state.owner !== undefined && state.redial === 'hub') return true
    if (owner !== undefined) state.owner = owner // unchanged if it is the owner already; else last of the owner's addresses
    return true
  }

  /**
   * Keeps `address` dialled until it answers: after a failure it is retried within
   * redialBackoffMaxMs, not dialBackoffMaxMs. A hub stays a hub.
   */
  keep(address: PhysicalAddress, why: Redial): void {
    const state = this.addresses.get(address)
    if (state !== undefined && state.redial !== 'hub') state.redial = why
  }

  /**
   * A neighbour's connection went down: its hub addresses are dialled again at once; with
   * `record` (its record's addresses; undefined = discovery off) and lost re-dials on, every
   * address of it is dialled again as soon as the lost re-dial rate allows, until it answers or
   * is forgotten. A connection that lived less than connectionStableMs (`livedMs`) is a flap:
   * those re-dials wait as after a failed dial, longer for each flap in a row.
   */
  connectionLost(owner: NodeId, record: readonly PhysicalAddress[] | undefined, nowMs: number, livedMs = Number.POSITIVE_INFINITY): void {
    const flaps = this.countFlap(owner, livedMs)
    const redialAtMs = flaps === 0 ? nowMs : nowMs + this.backoffMs(flaps, true)
    const redialLost = record !== undefined && this.timing.lostRedialsPerSecondMax > 0
    if (redialLost) for (const address of record) this.learn(address, owner)
    for (const address of this.addresses.addressesOf(owner)) {
      const state = this.addresses.get(address)!
      if (state.redial === 'hub' && flaps === 0) {
        this.want(address)
        continue
      }
      if (state.redial !== 'hub' && !redialLost) continue
      if (state.redial !== 'hub') state.redial = 'lost'
      if (state.queued || state.dialStartedAtMs !== undefined || this.backedOff.has(address)) continue
      // Through the back-off set, so the re-dial rate limit applies (retry at once if room).
      state.retryAtMs = redialAtMs
      this.backedOff.add(address)
    }
  }

  /** Counts a connection of `owner` that lived `livedMs`: the flaps in a row, 0 once one lived connectionStableMs. */
  private countFlap(owner: NodeId, livedMs: number): number {
    const before = this.flaps.get(owner) ?? 0
    this.flaps.delete(owner)
    if (livedMs >= CORE_CONSTANTS.connectionStableMs) return 0
    if (this.flaps.size >= CORE_CONSTANTS.flappingPeersMax) this.flaps.delete(this.flaps.keys().next().value!)
    this.flaps.set(owner, before + 1)
    return before + 1
  }

  /** The wait after `failures` failed dials (or flaps) in a row; `redial` = an address kept dialled (capped at redialBackoffMaxMs). */
  private backoffMs(failures: number, redial: boolean): number {
    const { dialBackoffInitialMs, dialBackoffMaxMs, redialBackoffMaxMs } = this.timing
    const exponent = Math.min(CORE_CONSTANTS.dialBackoffExponentMax, failures - 1)
    return Math.min(redial ? Math.min(dialBackoffMaxMs, redialBackoffMaxMs) : dialBackoffMaxMs, dialBackoffInitialMs * 2 ** exponent)
  }

  /**
   * `owner` was forgotten (its unreachable entry expired): its addresses are forgotten too, unless
   * a hub's, queued or being dialled (they get ordinary back-off again; in a simulator's book, on
   * shared numberings, all do). A job that restarted workers on new ports kept every address it
   * ever learned, until the book was full and the next workers' addresses were refused.
   */
  forgetLost(owner: NodeId): void {
    this.flaps.delete(owner)
    for (const address of this.addresses.addressesOf(owner)) {
      const state = this.addresses.get(address)!
      if (state.redial === 'lost') state.redial = undefined
      if (state.redial === 'hub' || state.queued || state.dialStartedAtMs !== undefined) continue
      if (this.addresses.remove(address)) this.backedOff.delete(address)
    }
  }

  /** Dials `address` now (unless a dial is in flight): its back-off is cleared. */
  redialNow(address: PhysicalAddress): void {
    const state = this.addresses.get(address)
    if (state === undefined || state.dialStartedAtMs !== undefined) return
    this.backedOff.delete(address)
    state.retryAtMs = 0
    this.want(address)
  }

  /** When the next lost re-dial may start: `nowMs` if the window has room, else when it ends. */
  private lostRedialRoomAt(nowMs: number): number {
    if (nowMs - this.lostRedialWindowStartMs >= CORE_CONSTANTS.redialWindowMs) return nowMs
    return this.lostRedialsInWindow < this.timing.lostRedialsPerSecondMax ? nowMs : this.lostRedialWindowStartMs + CORE_CONSTANTS.redialWindowMs
  }

  private countLostRedial(nowMs: number): void {
    if (nowMs - this.lostRedialWindowStartMs >= CORE_CONSTANTS.redialWindowMs) {
      this.lostRedialWindowStartMs = nowMs
      this.lostRedialsInWindow = 0
    }
    this.lostRedialsInWindow++
  }

  /** Forgets the last back-off pass (tests: every answer then comes from a full walk). */
  forgetBackoffPass(): void {
    this.backoffPass = undefined
  }

  ownerOf(address: PhysicalAddress): NodeId | undefined {
    return this.addresses.get(address)?.owner
  }

  /**
   * Our own addresses changed: addresses sharing a longer prefix with one of ours are dialled
   * first. That is RFC 6724's longest-matching-prefix rule, on the address text: a peer on our own
   * network is the likeliest to accept us, while one behind another site's firewall may hold a
   * dial slot until its SYN times out (three subnets, hubs only: a node that learned the other
   * subnets' addresses first waited 3 s per 64 of them before dialling its own subnet).
   */
  setOwnAddresses(addresses: readonly PhysicalAddress[]): void {
    this.ownAddresses = addresses
    for (const [address, state] of this.addresses) state.nearness = this.nearnessOf(address)
    this.queue.resortAll()
  }

  private nearnessOf(address: PhysicalAddress): number {
    let best = 0
    for (const own of this.ownAddresses) {
      let i = 0
      while (i < own.length && i < address.length && own.charCodeAt(i) === address.charCodeAt(i)) i++
      if (i > best) best = i
    }
    return best
  }

  /** Asks for `address` to be dialled when allowed (not in flight, not backed off). */
  want(address: PhysicalAddress): void {
    const state = this.addresses.get(address)
    if (state === undefined || state.queued || state.dialStartedAtMs !== undefined) return
    if (state.retryAtMs > 0 || this.backedOff.has(address)) {
      this.backedOff.add(address)
      return
    }
    state.queued = true
    this.queue.push(state.row)
  }

  /**
   * As `want`, but not before `atMs` (core timing dialDeferMs): the address waits among the
   * backed-off ones, holding no dial slot; `takeDials` then skips it if its owner connected
   * meanwhile. An address already queued, dialling or backed off keeps its turn.
   */
  wantDeferred(address: PhysicalAddress, atMs: number): void {
    const state = this.addresses.get(address)
    if (state === undefined || state.queued || state.dialStartedAtMs !== undefined || state.retryAtMs > 0 || this.backedOff.has(address)) return this.want(address)
    state.retryAtMs = atMs
    this.backedOff.add(address)
    this.dialsDeferred++
  }

  /** Moves back-offs that have expired into the dial queue; returns the earliest pending retry. */
  releaseBackoffs(nowMs: number): number | undefined {
    if (passStands(this.backoffPass, this.backedOff, nowMs)) return this.backoffPass.earliestMs
    this.backoffWalks++
    let earliest: number | undefined
    // Whether every back-off left ends after `nowMs` (none waits for the lost re-dials' rate limit).
    let allLater = true
    for (const address of this.backedOff) {
      const state = this.addresses.get(address)
      if (state === undefined) {
        this.backedOff.delete(address)
        continue
      }
      let readyAtMs = state.retryAtMs
      if (readyAtMs <= nowMs && state.redial === 'lost') readyAtMs = this.lostRedialRoomAt(nowMs)
      if (readyAtMs <= nowMs) {
        if (state.redial === 'lost') {
          this.countLostRedial(nowMs)
          this.redialsStarted++
        }
        this.backedOff.delete(address)
        state.retryAtMs = 0
        this.want(address)
        continue
      }
      if (earliest === undefined || readyAtMs < earliest) earliest = readyAtMs
      if (state.retryAtMs <= nowMs) allLater = false
    }
    this.backoffPass = allLater ? { setVersion: this.backedOff.version, earliestMs: earliest } : undefined
    return earliest
  }

  /**
   * Takes the next addresses to dial, skipping those whose owner `skipOwner` says needs no dial
   * (self, or already a neighbour) and owners that already have a dial in flight; at most
   * `countMax` of them (the core's room for more neighbours).
   */
  takeDials(nowMs: number, skipOwner: (owner: NodeId) => boolean, countMax = Number.POSITIVE_INFINITY): { address: PhysicalAddress; owner: NodeId | undefined }[] {
    const out: { address: PhysicalAddress; owner: NodeId | undefined }[] = []
    // Another address of a node already being dialled waits its turn: if that dial fails, this
    // one is next (a dual-stacked node's IPv6 address may be unreachable from here, its IPv4 not).
    const waiting: number[] = []
    this.queue.sort()
    while (this.inFlight.size < this.maxInFlight && out.length < countMax) {
      const row = this.queue.take()
      if (row < 0) break
      // A queued row is never forgotten (`forgetLost`), so it is still its address's.
      const state = this.addresses.stateAt(row)
      const address = this.addresses.addressAt(row)
      if (state.owner !== undefined && this.ownersDialling.has(state.owner) && !skipOwner(state.owner)) {
        waiting.push(row)
        continue
      }
      state.queued = false
      if (state.owner !== undefined && skipOwner(state.owner)) continue
      state.dialStartedAtMs = nowMs
      this.inFlight.add(address)
      if (state.owner !== undefined) this.ownersDialling.set(state.owner, (this.ownersDialling.get(state.owner) ?? 0) + 1)
      this.dialsStarted++
      out.push({ address, owner: state.owner })
    }
    this.queue.putBack(waiting)
    this.queue.compact()
    return out
  }

  /**
   * True if some dial could start at `nowMs`: an address queued, or backed off until no later than
   * `nowMs`, whose owner is not being dialled already. Changes nothing (`releaseBackoffs` moves
   * the expired back-offs into the queue when the dials are taken).
   */
  hasDialReady(nowMs: number): boolean {
    if (this.inFlight.size >= this.maxInFlight) return false
    const free = (owner: NodeId | undefined) => owner === undefined || !this.ownersDialling.has(owner)
    if (this.queue.some((row) => free(this.addresses.ownerOf(row)))) return true
    if (passStands(this.backoffPass, this.backedOff, nowMs)) return false
    for (const address of this.backedOff) {
      const state = this.addresses.get(address)
      if (state === undefined || state.retryAtMs > nowMs || state.queued || state.dialStartedAtMs !== undefined || !free(state.owner)) continue
      if (state.redial !== 'lost' || this.lostRedialRoomAt(nowMs) <= nowMs) return true
    }
    return false
  }

  /** The earliest back-off that ends after `nowMs` (when a dial may become ready with no input), if any. Changes nothing. */
  nextRetryAfter(nowMs: number): number | undefined {
    if (passStands(this.backoffPass, this.backedOff, nowMs)) return this.backoffPass.earliestMs
    let earliest: number | undefined
    for (const address of this.backedOff) {
      const state = this.addresses.get(address)
      if (state === undefined) continue
      let readyAtMs = state.retryAtMs
      if (readyAtMs <= nowMs && state.redial === 'lost') readyAtMs = this.lostRedialRoomAt(nowMs)
      if (readyAtMs > nowMs && (earliest === undefined || readyAtMs < earliest)) earliest = readyAtMs
    }
    return earliest
  }

  /** Start time of the oldest dial still in flight. */
  oldestDialStartMs(): number | undefined {
    // `inFlight` is in the order the dials started and the core's clock never goes back
    // (PhoenixCore.enter), so the first one that counts is the oldest: asked on every step and
    // wake of a node with sends pending, a walk over every dial was 3% of a 1,000-process run.
    for (const address of this.inFlight) {
      const state = this.addresses.get(address)
      // Re-dials of lost neighbours hold no sends: they are not discovery, and mostly fail.
      const started = state?.redial === 'lost' ? undefined : state?.dialStartedAtMs
      if (started !== undefined) return started
    }
    return undefined
  }

  private finish(address: PhysicalAddress): AddressState | undefined {
    const state = this.addresses.get(address)
    if (state === undefined || !this.inFlight.delete(address)) return undefined
    state.dialStartedAtMs = undefined
    if (state.owner !== undefined) {
      const n = (this.ownersDialling.get(state.owner) ?? 1) - 1
      if (n <= 0) this.ownersDialling.delete(state.owner)
      else this.ownersDialling.set(state.owner, n)
    }
    return state
  }

  dialSucceeded(address: PhysicalAddress, peer: NodeId): void {
    const state = this.finish(address) ?? this.addresses.get(address)
    if (state === undefined) return
    state.owner = peer
    state.consecutiveFailures = 0
    state.retryAtMs = 0
    this.backedOff.delete(address)
  }

  /** Records a failed or forbidden dial; the address is retried after an exponential back-off. */
  dialFailed(address: PhysicalAddress, nowMs: number): void {
    const state = this.finish(address)
    if (state === undefined) {
      throw new PhoenixError('INVALID_INPUT', `dialFailed for ${JSON.stringify(address)}, which has no dial in flight`)
    }
    // A dial in flight is never backed off (`want`, `connectionLost`): the add below joins it, so a walk's answer is renewed (backoffs.ts).
    invariant(!this.backedOff.has(address), 'a failed dial was not backed off')
    this.dialsFailed++
    state.consecutiveFailures++
    state.retryAtMs = nowMs + this.backoffMs(state.consecutiveFailures, state.redial !== undefined)
    this.backedOff.add(address)
  }

  isInFlight(address: PhysicalAddress): boolean {
    return this.inFlight.has(address)
  }

  backoffOf(address: PhysicalAddress): { consecutiveFailures: number; retryAtMs: number } | undefined {
    const state = this.addresses.get(address)
    return state === undefined ? undefined : { consecutiveFailures: state.consecutiveFailures, retryAtMs: state.retryAtMs }
  }

  /** `owner`'s addresses, in the order they became its own. */
  addressesOf(owner: NodeId): PhysicalAddress[] {
    return this.addresses.addressesOf(owner)
  }

}
