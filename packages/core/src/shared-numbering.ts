import { HolderSets } from './holders.ts'
import { NodeIndex } from './nodeindex.ts'
import { AddressVersions } from './record-addresses.ts'
import type { NodeSet } from './nodeset.ts'
import type { UpdateMessage } from './types.ts'

/**
 * Distinct trans/rcpt sets the shared table remembers before starting afresh: a simulation of
 * 400 processes holds under 3,000; past this many, garbage kept alive (at most this many sets of
 * N bits, with their object headers: about 30 MB at 2,000 processes) would outweigh sharing.
 */
const SHARED_HOLDER_SETS_MAX = 65_536
/**
 * Recent set operations the shared table's memo keeps (`HolderSets`): 2^18 slots, 8 MiB. Every
 * core's received entries go through it; a smaller memo misses more as N grows.
 */
const SHARED_HOLDER_MEMO_SLOTS = 262_144

/** The hidden property of a message that holds its trans sets in a shared numbering (`SharedNumbering.attach`). */
const SHARED_SETS = Symbol('phoenix.sharedSets')

interface AttachedSets {
  readonly numbering: SharedNumbering
  readonly sets: readonly NodeSet[]
}

/**
 * A simulator's speed-up, apart from the protocol: one node numbering (and one address numbering)
 * shared by every core of one process, and each message's trans sets left on it by its sender
 * already in that numbering, so the receiver need not translate them from the wire form bit by
 * bit. The routing is the same with or without it (a property test compares whole traces); only
 * cores given the same `SharedNumbering` object (the second argument of `new PhoenixCore`) use it.
 * Never on real nodes: their messages cross a wire, and each core keeps its own numbering.
 */
export class SharedNumbering {
  readonly index: NodeIndex
  /** trans/rcpt sets in the shared numbering, one object per content for every core (see `HolderSets`). */
  readonly holders = new HolderSets(SHARED_HOLDER_SETS_MAX, SHARED_HOLDER_MEMO_SLOTS)
  /** Every core's address book numbers addresses here (address-rows.ts): an array per book, not a map. */
  readonly addresses: NodeIndex

  /**
   * Each sender's slot table translated into this numbering (apply.ts `slotMapOf`), one for every
   * core that receives it: alike for all, where each receiver kept its own, ~4 bytes a (node,
   * destination) pair per hub whose table it was given (12 at the end of a three-subnet run).
   * Weak: a table goes when no sender's message or receiver holds it; at most the live tables.
   */
  private readonly slotMaps = new WeakMap<readonly string[], Int32Array>()

  /** `nodesMax`: how many node ids the whole process may number, and as many addresses. */
  constructor(nodesMax: number) {
    this.index = new NodeIndex(nodesMax)
    this.index.addressVersions = new AddressVersions()
    this.addresses = new NodeIndex(nodesMax)
  }

  /**
   * The sender's side: `sets[i]` is `message.transSets[i]` in the shared numbering. Kept on the
   * message itself (a hidden property), so a message forgotten by the simulator takes its sets
   * with it. Not in a WeakMap of messages: with every message in flight a key, such a table can
   * outgrow what V8 allows (a 5,000-process run on one subnet died of "FATAL ERROR: invalid table
   * size" in a WeakMap insert, as one with the wire's WeakMap of advert sizes did on three).
   */
  attach(message: UpdateMessage, sets: readonly NodeSet[]): void {
    Object.defineProperty(message, SHARED_SETS, { value: { numbering: this, sets }, enumerable: false })
  }

  /** `table`'s translation into this numbering: the one made before, else `translate()`'s, kept for the next receiver. */
  slotMapOf(table: readonly string[], translate: () => Int32Array): Int32Array {
    let map = this.slotMaps.get(table)
    if (map === undefined) this.slotMaps.set(table, (map = translate()))
    return map
  }

  /** The receiver's side: the message's trans sets in the shared numbering, if its sender left them (in this numbering). */
  setsOf(message: UpdateMessage): readonly NodeSet[] | undefined {
    const attached = (message as { [SHARED_SETS]?: AttachedSets })[SHARED_SETS]
    return attached?.numbering === this ? attached.sets : undefined
  }
}
