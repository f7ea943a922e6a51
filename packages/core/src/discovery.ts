import { CORE_CONSTANTS } from './constants.ts'
import { PhoenixError } from './errors.ts'
import type { NodeId, PhysicalAddress } from './types.ts'

interface AddressState {
  owner: NodeId | undefined
  consecutiveFailures: number
  /** Earliest time a new dial may start; 0 = not backed off. */
  retryAtMs: number
  dialStartedAtMs: number | undefined
  queued: boolean
}

export interface DiscoveryTiming {
  readonly dialBackoffInitialMs: number
  readonly dialBackoffMaxMs: number
}

/**
 * The address book: every physical address learned (hubs at start, then each destination's
 * addresses from routing updates), which of them to dial next, and back-off for failed dials so
 * a forbidden address is retried at a decreasing rate, never in a tight loop.
 */
export class AddressBook {
  private readonly addresses = new Map<PhysicalAddress, AddressState>()
  /** FIFO of addresses ready to dial; discovery order is dial order. */
  private readonly queue: PhysicalAddress[] = []
  private queueHead = 0
  private readonly inFlight = new Set<PhysicalAddress>()
  private readonly ownersDialling = new Map<NodeId, number>()
  /** Backed-off addresses, kept sorted by retry time only when someone asks (few at a time). */
  private readonly backedOff = new Set<PhysicalAddress>()
  dialsStarted = 0
  dialsFailed = 0
  addressesRefused = 0

  constructor(
    private readonly maxAddresses: number,
    private readonly maxInFlight: number,
    private readonly timing: DiscoveryTiming,
  ) {}

  get size(): number {
    return this.addresses.size
  }

  get inFlightCount(): number {
    return this.inFlight.size
  }

  /** Learns an address (and its owner if known). Returns false when the book is full. */
  learn(address: PhysicalAddress, owner: NodeId | undefined): boolean {
    let state = this.addresses.get(address)
    if (state === undefined) {
      if (this.addresses.size >= this.maxAddresses) {
        this.addressesRefused++
        return false
      }
      state = { owner, consecutiveFailures: 0, retryAtMs: 0, dialStartedAtMs: undefined, queued: false }
      this.addresses.set(address, state)
    } else if (owner !== undefined) {
      state.owner = owner
    }
    return true
  }

  ownerOf(address: PhysicalAddress): NodeId | undefined {
    return this.addresses.get(address)?.owner
  }

  /** Asks for `address` to be dialled when allowed (not in flight, not backed off). */
  want(address: PhysicalAddress): void {
    const state = this.addresses.get(address)
    if (state === undefined || state.queued || state.dialStartedAtMs !== undefined) return
    if (state.retryAtMs > 0) {
      this.backedOff.add(address)
      return
    }
    state.queued = true
    this.queue.push(address)
  }

  /** Moves back-offs that have expired into the dial queue; returns the earliest pending retry. */
  releaseBackoffs(nowMs: number): number | undefined {
    let earliest: number | undefined
    for (const address of this.backedOff) {
      const state = this.addresses.get(address)
      if (state === undefined) {
        this.backedOff.delete(address)
        continue
      }
      if (state.retryAtMs <= nowMs) {
        this.backedOff.delete(address)
        state.retryAtMs = 0
        this.want(address)
      } else if (earliest === undefined || state.retryAtMs < earliest) {
        earliest = state.retryAtMs
      }
    }
    return earliest
  }

  /**
   * Takes the next addresses to dial, skipping those whose owner `skipOwner` says needs no dial
   * (self, or already a neighbour) and owners that already have a dial in flight.
   */
  takeDials(nowMs: number, skipOwner: (owner: NodeId) => boolean): { address: PhysicalAddress; owner: NodeId | undefined }[] {
    const out: { address: PhysicalAddress; owner: NodeId | undefined }[] = []
    // Another address of a node already being dialled waits its turn: if that dial fails, this
    // one is next (a dual-stacked node's IPv6 address may be unreachable from here, its IPv4 not).
    const waiting: PhysicalAddress[] = []
    while (this.queueHead < this.queue.length && this.inFlight.size < this.maxInFlight) {
      const address = this.queue[this.queueHead++]!
      const state = this.addresses.get(address)
      if (state === undefined) continue
      if (state.owner !== undefined && this.ownersDialling.has(state.owner) && !skipOwner(state.owner)) {
        waiting.push(address)
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
    this.queue.push(...waiting)
    // Compact the consumed prefix so the queue's memory follows what is pending, not history.
    if (this.queueHead > CORE_CONSTANTS.dialQueueCompactAfter && this.queueHead * 2 > this.queue.length) {
      this.queue.splice(0, this.queueHead)
      this.queueHead = 0
    }
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
    for (let i = this.queueHead; i < this.queue.length; i++) {
      if (free(this.addresses.get(this.queue[i]!)?.owner)) return true
    }
    for (const address of this.backedOff) {
      const state = this.addresses.get(address)
      if (state !== undefined && state.retryAtMs <= nowMs && !state.queued && state.dialStartedAtMs === undefined && free(state.owner)) return true
    }
    return false
  }

  /** The earliest back-off that ends after `nowMs` (when a dial may become ready with no input), if any. Changes nothing. */
  nextRetryAfter(nowMs: number): number | undefined {
    let earliest: number | undefined
    for (const address of this.backedOff) {
      const retryAtMs = this.addresses.get(address)?.retryAtMs
      if (retryAtMs !== undefined && retryAtMs > nowMs && (earliest === undefined || retryAtMs < earliest)) earliest = retryAtMs
    }
    return earliest
  }

  /** Start time of the oldest dial still in flight. */
  oldestDialStartMs(): number | undefined {
    let oldest: number | undefined
    for (const address of this.inFlight) {
      const started = this.addresses.get(address)?.dialStartedAtMs
      if (started !== undefined && (oldest === undefined || started < oldest)) oldest = started
    }
    return oldest
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
    this.dialsFailed++
    state.consecutiveFailures++
    const backoff = Math.min(
      this.timing.dialBackoffMaxMs,
      this.timing.dialBackoffInitialMs * 2 ** Math.min(CORE_CONSTANTS.dialBackoffExponentMax, state.consecutiveFailures - 1),
    )
    state.retryAtMs = nowMs + backoff
    this.backedOff.add(address)
  }

  isInFlight(address: PhysicalAddress): boolean {
    return this.inFlight.has(address)
  }

  backoffOf(address: PhysicalAddress): { consecutiveFailures: number; retryAtMs: number } | undefined {
    const state = this.addresses.get(address)
    return state === undefined ? undefined : { consecutiveFailures: state.consecutiveFailures, retryAtMs: state.retryAtMs }
  }

  addressesOf(owner: NodeId): PhysicalAddress[] {
    const out: PhysicalAddress[] = []
    for (const [address, state] of this.addresses) if (state.owner === owner) out.push(address)
    return out
  }
}
