import { PhoenixCore, type Effect, type UpdateMessage } from '@phoenix-overlay/core'
import { DRAIN_SLICE_MS, DRAIN_STEPS_MAX, TIMER_MS_MAX } from './constants.ts'

/** What the driver asks of the node: carrying out the core's effects and hearing what changed. */
export interface DriverSink {
  dial(address: string): void
  close(peer: string, reason: string): void
  sendUpdate(peer: string, message: UpdateMessage): void
  /** After a drain: frames held back (a full core inbox, a full next hop) may go now. */
  resumeLinks(): void
  /** An apply step ran: routes and names may have changed. */
  routesChanged(): void
  /** Something threw where no connection is to blame: logged and counted; the node goes on. */
  internalError(where: string, error: unknown): void
}

/**
 * Drives one routing core: its clock, its drain loop (steps while it has work, then a timer for
 * its next wake-up) and its effects.
 *
 * One clock per core: every call into the core takes its time from `now()`, read at the call.
 * `now()` never goes back, by construction (it is the largest reading so far), so a core input
 * made in the middle of a drain (a link resuming feeds the core a frame) cannot leave a later
 * step with an older time, which the core refuses with `time must never go back`.
 */
export class CoreDriver {
  private readonly epochMs = performance.now()
  private lastMs = 0
  private drainScheduled = false
  private wakeTimer: ReturnType<typeof setTimeout> | undefined
  private stopped = false

  constructor(
    readonly core: PhoenixCore,
    private readonly sink: DriverSink,
  ) {}

  /** Milliseconds since this driver began; never less than any earlier reading. */
  now(): number {
    const ms = performance.now() - this.epochMs
    if (ms > this.lastMs) this.lastMs = ms
    return this.lastMs
  }

  /** Runs the core soon (once, however many inputs arrive before it runs). */
  schedule(): void {
    if (this.drainScheduled || this.stopped) return
    this.drainScheduled = true
    setImmediate(() => this.drain())
  }

  /** No more steps or timers (the node stopped or left). */
  stop(): void {
    this.stopped = true
    clearTimeout(this.wakeTimer)
  }

  private drain(): void {
    this.drainScheduled = false
    if (this.stopped || this.core.hasLeft) return
    try {
      this.runSteps()
    } catch (error) {
      this.sink.internalError('the core loop', error)
    }
    this.sink.resumeLinks()
    this.armWakeTimer()
  }

  private runSteps(): void {
    let routesMayHaveChanged = false
    const startedMs = performance.now()
    for (let steps = 0; this.core.hasWork(this.now()); steps++) {
      if (steps === DRAIN_STEPS_MAX || performance.now() - startedMs > DRAIN_SLICE_MS) {
        this.schedule() // let I/O in first
        break
      }
      const result = this.core.step(this.now())
      if (result.kind === 'apply') routesMayHaveChanged = true
      this.perform(result.effects)
    }
    if (routesMayHaveChanged) this.sink.routesChanged()
  }

  private armWakeTimer(): void {
    clearTimeout(this.wakeTimer)
    if (this.stopped || this.core.hasLeft) return
    const now = this.now()
    const wakeAtMs = this.core.nextWakeMs(now)
    // At most setTimeout's ceiling (a core timing may be longer: a longer delay would fire at once, every 1 ms); woken early, the step finds nothing due and arms again.
    if (wakeAtMs !== undefined) this.wakeTimer = setTimeout(() => this.schedule(), Math.min(TIMER_MS_MAX, Math.max(1, wakeAtMs - now)))
  }

  perform(effects: readonly Effect[]): void {
    for (const effect of effects) {
      if (effect.type === 'dial') this.sink.dial(effect.address)
      else if (effect.type === 'close') this.sink.close(effect.peer, effect.reason)
      else this.sink.sendUpdate(effect.to, effect.message)
    }
  }
}
