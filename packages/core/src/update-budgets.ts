import { invariant } from './errors.ts'

/** The code of a full bucket (`UpdateBudgets`): its time is -Infinity, before any charge. */
const FULL = 0
/** How many distinct times 1-byte codes name (code 0 included); past it, 2-byte codes. */
const BYTE_CODES = 256
/** How many distinct times 2-byte codes name; past it, a Float64 a slot (`direct`). */
const SHORT_CODES = 65_536

/**
 * Each neighbour slot's update token bucket as the time it is full again (`NeighbourTable.
 * chargeUpdateBudget`), exactly, as a 1-byte code a slot into a list of the distinct times in use
 * (`palette`; code 0: full, -Infinity). A Float64 a slot was 9.7 bytes a (node, destination) pair
 * on one subnet (heap snapshot, 1,500 processes), where every pair is a connection; few times are
 * in use at once in a core: a charge at `nowMs` fills again `entries / rate` later (0.02 ms an
 * entry at the default 50,000 a second), and a step's messages are charged at one `nowMs`, so
 * the N − 1 hellos of a one-subnet burst share one time.
 *
 * A time at or before the core's clock reads as a full bucket (the charge computes the same
 * tokens from either), and the clock never goes back (`PhoenixCore.enter`): such times are
 * dropped when the list is full (`compact`). Bounds: at most BYTE_CODES times; if compacting
 * leaves more than half of them in use, the codes widen to 2 bytes (SHORT_CODES), then to the
 * times themselves (8 bytes a slot, as before).
 */
export class UpdateBudgets {
  private codes: Uint8Array | Uint16Array = new Uint8Array(0)
  /** The times the codes name (`palette[FULL]` = -Infinity); at most `codesMax`. */
  private palette: number[] = [Number.NEGATIVE_INFINITY]
  private codesMax = BYTE_CODES
  /** Past SHORT_CODES times in use: the times themselves, a slot each (`codes` then unused). */
  private direct: Float64Array | undefined

  get capacity(): number {
    return this.direct?.length ?? this.codes.length
  }

  /** Room for `size` slots, the new ones full. */
  grow(size: number): void {
    invariant(size >= this.capacity, 'the budgets only grow')
    if (this.direct !== undefined) {
      const direct = new Float64Array(size).fill(Number.NEGATIVE_INFINITY)
      direct.set(this.direct)
      this.direct = direct
      return
    }
    const codes = this.codes instanceof Uint8Array ? new Uint8Array(size) : new Uint16Array(size)
    codes.set(this.codes)
    this.codes = codes
  }

  /** When `slot`'s bucket is full again (-Infinity: full since its connection opened). */
  fullAtMs(slot: number): number {
    return this.direct !== undefined ? this.direct[slot]! : this.palette[this.codes[slot]!]!
  }

  /** Marks `slot`'s bucket full (a new connection's). */
  setFull(slot: number): void {
    if (this.direct !== undefined) this.direct[slot] = Number.NEGATIVE_INFINITY
    else this.codes[slot] = FULL
  }

  /** Sets when `slot`'s bucket is full again to `atMs`; `nowMs` is the core's clock (times at or before it read as full). */
  set(slot: number, atMs: number, nowMs: number): void {
    if (this.direct === undefined) {
      // The last time added is the one to share: a step's charges of equal size (the hellos of a
      // burst) come one after another at one `nowMs`. Others get a code of their own (a time may
      // then have two codes until `compact`, which keeps them apart: the list only bounds them).
      // A Map from time to code, rebuilt at each compaction, took the peak of a 2,000-process
      // one-subnet run from 1,391 to 1,701 MiB and its CPU 1.05×.
      if (this.palette[this.palette.length - 1] !== atMs) {
        if (this.palette.length === this.codesMax) this.compact(nowMs)
        if (this.direct === undefined) this.palette.push(atMs)
      }
      if (this.direct === undefined) {
        this.codes[slot] = this.palette.length - 1
        return
      }
    }
    this.direct![slot] = atMs
  }

  /**
   * Drops the times at or before `nowMs` (their slots read as full) and those no slot names, and
   * numbers the rest again; widens the codes if more than half of the list is still in use.
   */
  private compact(nowMs: number): void {
    const renumbered = new Int32Array(this.palette.length).fill(-1)
    const palette = [Number.NEGATIVE_INFINITY]
    const codes = this.codes
    for (let slot = 0; slot < codes.length; slot++) {
      const code = codes[slot]!
      if (code === FULL) continue
      const atMs = this.palette[code]!
      if (atMs <= nowMs) {
        codes[slot] = FULL
        continue
      }
      if (renumbered[code]! < 0) {
        renumbered[code] = palette.length
        palette.push(atMs)
      }
      codes[slot] = renumbered[code]!
    }
    this.palette = palette
    if (palette.length <= this.codesMax >> 1) return
    if (this.codesMax === BYTE_CODES) {
      this.codes = Uint16Array.from(codes)
      this.codesMax = SHORT_CODES
      return
    }
    const direct = new Float64Array(codes.length)
    for (let slot = 0; slot < codes.length; slot++) direct[slot] = palette[codes[slot]!]!
    this.direct = direct
    this.codes = new Uint8Array(0)
    this.palette = [Number.NEGATIVE_INFINITY]
  }

  /** How many bytes a slot the budgets take now (1, 2 or 8; tests). */
  get bytesPerSlot(): number {
    return this.direct !== undefined ? 8 : this.codes.BYTES_PER_ELEMENT
  }
}
