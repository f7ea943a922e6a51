import { invariant } from './errors.ts'
import type { NodeId, PhysicalAddress } from './types.ts'

/** Why an address is kept dialled (discovery.ts's `Redial`), stored as a number. */
const REDIAL_CODES = [undefined, 'hub', 'lost'] as const
type RedialCode = (typeof REDIAL_CODES)[number]
/** Rows the book starts with; it doubles from there. */
const ROWS_INITIAL = 16
const QUEUED = 1
const REDIAL_SHIFT = 1

/**
 * The address book's per-address state (discovery.ts), in columns: a row per address learned, in
 * typed arrays (flags, failures, retry and dial-start times) and one reference (the owner's id).
 * An object per address cost ~90 bytes (72 for the object, 16 for the boxed dial-start time, a
 * fractional millisecond); with discovery every node learns every destination's address, so at
 * the end of a 400-process run (three subnets) the book's objects were the largest per-entry item
 * after the route table's. A row here is 31 bytes and allocates nothing when it changes.
 *
 * Addresses are never forgotten by the book, so rows are never freed: at most `max` rows (the
 * book's `knownAddressesMax`), grown by doubling.
 */
export class AddressRows {
  private readonly rowOf = new Map<PhysicalAddress, number>()
  private capacity = 0
  /** QUEUED, and the redial code above REDIAL_SHIFT. */
  flags = new Uint8Array(0)
  consecutiveFailures = new Uint32Array(0)
  retryAtMs = new Float64Array(0)
  /** NaN: no dial in flight. */
  dialStartedAtMs = new Float64Array(0)
  owner: (NodeId | undefined)[] = []
  /** Characters the address shares at the start with the nearest of our own addresses (dial order, discovery.ts's `takeDials`); text longer than 65,535 counts as 65,535. */
  nearness = new Uint16Array(0)

  constructor(private readonly max: number) {}

  get size(): number {
    return this.rowOf.size
  }

  /** The state of `address`, a view made on demand; undefined if not learned. */
  get(address: PhysicalAddress): AddressState | undefined {
    const row = this.rowOf.get(address)
    return row === undefined ? undefined : new AddressState(this, row)
  }

  /** A new address's state: no owner, not queued, not backed off. The caller checks the book's limit first. */
  add(address: PhysicalAddress): AddressState {
    invariant(!this.rowOf.has(address) && this.rowOf.size < this.max, 'an address is added once, within the book limit')
    const row = this.rowOf.size
    if (row >= this.capacity) this.grow()
    this.rowOf.set(address, row)
    this.flags[row] = 0
    this.consecutiveFailures[row] = 0
    this.retryAtMs[row] = 0
    this.dialStartedAtMs[row] = Number.NaN
    this.owner[row] = undefined
    this.nearness[row] = 0
    return new AddressState(this, row)
  }

  /** Every address learned with its state, in the order learned. */
  *[Symbol.iterator](): IterableIterator<[PhysicalAddress, AddressState]> {
    for (const [address, row] of this.rowOf) yield [address, new AddressState(this, row)]
  }

  private grow(): void {
    const capacity = Math.min(Math.max(ROWS_INITIAL, this.capacity * 2), Math.max(ROWS_INITIAL, this.max))
    invariant(capacity > this.capacity, 'the address book grows within knownAddressesMax')
    const flags = new Uint8Array(capacity)
    flags.set(this.flags)
    this.flags = flags
    const failures = new Uint32Array(capacity)
    failures.set(this.consecutiveFailures)
    this.consecutiveFailures = failures
    const retry = new Float64Array(capacity)
    retry.set(this.retryAtMs)
    this.retryAtMs = retry
    const started = new Float64Array(capacity).fill(Number.NaN)
    started.set(this.dialStartedAtMs)
    this.dialStartedAtMs = started
    const nearness = new Uint16Array(capacity)
    nearness.set(this.nearness)
    this.nearness = nearness
    for (let row = this.capacity; row < capacity; row++) this.owner.push(undefined)
    this.capacity = capacity
  }
}

/** One address's state: a view of its row (see `AddressRows`), with the fields the book reads and writes. */
export class AddressState {
  constructor(
    private readonly rows: AddressRows,
    private readonly row: number,
  ) {}

  get owner(): NodeId | undefined {
    return this.rows.owner[this.row]
  }

  set owner(owner: NodeId | undefined) {
    this.rows.owner[this.row] = owner
  }

  get redial(): RedialCode {
    return REDIAL_CODES[this.rows.flags[this.row]! >> REDIAL_SHIFT]
  }

  set redial(why: RedialCode) {
    const code = REDIAL_CODES.indexOf(why)
    this.rows.flags[this.row] = (this.rows.flags[this.row]! & QUEUED) | (code << REDIAL_SHIFT)
  }

  get queued(): boolean {
    return (this.rows.flags[this.row]! & QUEUED) !== 0
  }

  set queued(queued: boolean) {
    const flags = this.rows.flags[this.row]!
    this.rows.flags[this.row] = queued ? flags | QUEUED : flags & ~QUEUED
  }

  get consecutiveFailures(): number {
    return this.rows.consecutiveFailures[this.row]!
  }

  set consecutiveFailures(n: number) {
    this.rows.consecutiveFailures[this.row] = n
  }

  /** Earliest time a new dial may start; 0 = not backed off. */
  get retryAtMs(): number {
    return this.rows.retryAtMs[this.row]!
  }

  set retryAtMs(ms: number) {
    this.rows.retryAtMs[this.row] = ms
  }

  get dialStartedAtMs(): number | undefined {
    const ms = this.rows.dialStartedAtMs[this.row]!
    return Number.isNaN(ms) ? undefined : ms
  }

  set dialStartedAtMs(ms: number | undefined) {
    this.rows.dialStartedAtMs[this.row] = ms ?? Number.NaN
  }

  get nearness(): number {
    return this.rows.nearness[this.row]!
  }

  set nearness(characters: number) {
    this.rows.nearness[this.row] = Math.min(characters, 0xffff)
  }
}
