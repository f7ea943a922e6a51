import { PhoenixTransportError } from './errors.ts'

/**
 * Liveness of one neighbour, as pure timing decisions: the link tells it when it heard from the
 * neighbour and asks, at any time, what to do now. No clock, no timers, no I/O here, so every rule
 * is tested with plain numbers (test/liveness.test.ts).
 *
 * The rules (defaults in TRANSPORT_TIMING):
 * - anything heard from the neighbour proves it alive: bytes of any frame, or a `'drain'` of our
 *   stream (the neighbour granted us flow-control window, so it is reading);
 * - after `probeAfterIdleMs` of silence, send one probe (the neighbour answers at once, whatever
 *   else it is doing); after another `probeAfterIdleMs` of silence, probe again;
 * - after `deadAfterSilenceMs` of silence the neighbour is dead: the link closes with a reason and
 *   the core hears connectionDown, so routes through it are withdrawn;
 * - silence while we ourselves did not read (our reader paused for our own backpressure) or while
 *   our own process did not run (the checks came late: we were stopped, swapped out, or blocked)
 *   is ours, not the neighbour's: it is forgiven and the count starts again;
 * - while our reader is paused, the neighbour cannot hear our answers to its probes (they wait
 *   behind the frames we do not read), so we send it a probe every `probeAfterIdleMs` ourselves:
 *   a frame from us proves to it that we are alive, only busy. Without this, a node whose core
 *   falls behind (a flood of records to verify) was declared dead by the neighbour feeding it.
 */
export interface LivenessTiming {
  /** Silence after which a probe is sent (and sent again, while the silence lasts). */
  readonly probeAfterIdleMs: number
  /** Silence after which the neighbour is declared dead. */
  readonly deadAfterSilenceMs: number
  /** How often the link asks `check`; a check that comes more than twice this late means we were stalled. */
  readonly livenessCheckEveryMs: number
}

export type LivenessDecision = { readonly action: 'none' } | { readonly action: 'probe'; readonly nonce: number } | { readonly action: 'dead'; readonly reason: string }

/** Checks the timing is usable: a probe must have time to be answered before the neighbour is declared dead. */
export function checkLivenessTiming(timing: LivenessTiming): void {
  const { probeAfterIdleMs, deadAfterSilenceMs, livenessCheckEveryMs } = timing
  for (const [key, value] of Object.entries({ probeAfterIdleMs, deadAfterSilenceMs, livenessCheckEveryMs })) {
    if (!Number.isInteger(value) || value < 1) throw new PhoenixTransportError('INVALID_INPUT', `timing.${key} must be a positive integer (ms), got ${String(value)}`, { field: `timing.${key}` })
  }
  if (timing.deadAfterSilenceMs < 2 * timing.probeAfterIdleMs) {
    throw new PhoenixTransportError('INVALID_INPUT', `timing.deadAfterSilenceMs (${timing.deadAfterSilenceMs}) must be at least twice timing.probeAfterIdleMs (${timing.probeAfterIdleMs}), so a probe can be answered`, { field: 'timing.deadAfterSilenceMs' })
  }
  if (timing.livenessCheckEveryMs > timing.probeAfterIdleMs) {
    throw new PhoenixTransportError('INVALID_INPUT', `timing.livenessCheckEveryMs (${timing.livenessCheckEveryMs}) must not exceed timing.probeAfterIdleMs (${timing.probeAfterIdleMs})`, { field: 'timing.livenessCheckEveryMs' })
  }
}

export class Liveness {
  private lastHeardMs: number
  private lastProbeMs: number | undefined
  private lastCheckMs: number
  /** When we last told the neighbour we are alive while our reader was paused. */
  private lastBusyProbeMs = Number.NEGATIVE_INFINITY
  private nonce = 0
  /** Probes sent since the neighbour was last heard. */
  private probesUnanswered = 0
  probesSent = 0
  stallsForgiven = 0

  constructor(
    private readonly timing: LivenessTiming,
    nowMs: number,
  ) {
    this.lastHeardMs = nowMs
    this.lastCheckMs = nowMs
  }

  /** Something came from the neighbour (a frame's bytes, a drain of our stream). */
  heard(nowMs: number): void {
    if (nowMs > this.lastHeardMs) this.lastHeardMs = nowMs
    this.lastProbeMs = undefined
    this.probesUnanswered = 0
  }

  /** Milliseconds since anything was heard. */
  silenceMs(nowMs: number): number {
    return Math.max(0, nowMs - this.lastHeardMs)
  }

  /**
   * What to do at `nowMs`. `readerPaused`: we are not reading from this neighbour (our own
   * backpressure), so its silence proves nothing.
   */
  check(nowMs: number, readerPaused: boolean): LivenessDecision {
    const late = nowMs - this.lastCheckMs > 2 * this.timing.livenessCheckEveryMs
    this.lastCheckMs = Math.max(this.lastCheckMs, nowMs)
    if (readerPaused || late) {
      if (late) this.stallsForgiven++
      this.heard(nowMs)
      if (!readerPaused || nowMs - this.lastBusyProbeMs < this.timing.probeAfterIdleMs) return { action: 'none' }
      this.lastBusyProbeMs = nowMs
      this.nonce = (this.nonce + 1) >>> 0
      this.probesSent++
      return { action: 'probe', nonce: this.nonce }
    }
    const silence = this.silenceMs(nowMs)
    if (silence >= this.timing.deadAfterSilenceMs) {
      return { action: 'dead', reason: `no frame and no answer to ${this.probesUnanswered === 1 ? 'a probe' : `${this.probesUnanswered} probes`} for ${Math.round(silence)} ms (deadAfterSilenceMs ${this.timing.deadAfterSilenceMs})` }
    }
    const sinceProbe = this.lastProbeMs === undefined ? silence : nowMs - this.lastProbeMs
    if (silence >= this.timing.probeAfterIdleMs && sinceProbe >= this.timing.probeAfterIdleMs) {
      this.lastProbeMs = nowMs
      this.nonce = (this.nonce + 1) >>> 0
      this.probesSent++
      this.probesUnanswered++
      return { action: 'probe', nonce: this.nonce }
    }
    return { action: 'none' }
  }
}
