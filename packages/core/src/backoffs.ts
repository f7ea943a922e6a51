import type { PhysicalAddress } from './types.ts'

/**
 * The address book's backed-off addresses (discovery.ts), in the order they were backed off, and
 * what the last full pass over them found (`BackoffPass`), so a step in which nothing changed and
 * nothing ends asks nothing of each. Every core step walked every back-off
 * (`releaseBackoffs`, and `hasDialReady` and `nextRetryAfter` when asked for work), each by a lookup
 * of its row by text: at 5,000 processes (three subnets) a member's dials to the other subnets'
 * members back off by the thousands, and the walks grew ×28 from 2,000 processes (2.4 s of the
 * run). Bounded by the book: at most one entry per address it holds.
 */
export class Backoffs extends Set<PhysicalAddress> {
  /**
   * Bumped whenever an address joins or leaves: a pass is valid only at the version it saw. An add
   * of a member changes nothing (wanting a backed-off address again, on each record of it adopted).
   */
  version = 0

  override add(address: PhysicalAddress): this {
    if (!this.has(address)) this.version++
    return super.add(address)
  }

  override delete(address: PhysicalAddress): boolean {
    const deleted = super.delete(address)
    if (deleted) this.version++
    return deleted
  }
}

/**
 * What a full pass over the back-offs found: every one ends after the pass's time, the earliest at
 * `earliestMs` (undefined: none is backed off), read at this version of the set. The book changes
 * a back-off's retry time only as its address joins or leaves the set (discovery.ts: a failure,
 * a loss or a deferral joins, a re-dial, a success or a release leaves), so while the version stands and the clock
 * is before `earliestMs`, no back-off has ended (a lost re-dial's rate limit applies only to one
 * that has) and the pass's answer stands.
 */
export interface BackoffPass {
  readonly setVersion: number
  readonly earliestMs: number | undefined
}

/** Whether `pass` still answers at `nowMs`: no back-off ended and none changed since. */
export function passStands(pass: BackoffPass | undefined, set: Backoffs, nowMs: number): pass is BackoffPass {
  return pass !== undefined && pass.setVersion === set.version && (pass.earliestMs === undefined || nowMs < pass.earliestMs)
}
