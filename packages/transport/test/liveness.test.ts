import { describe, expect, it } from 'vitest'
import { PhoenixTransportError } from '../src/index.ts'
import { Liveness, checkLivenessTiming, type LivenessDecision } from '../src/liveness.ts'

const timing = { probeAfterIdleMs: 2_000, deadAfterSilenceMs: 6_000, livenessCheckEveryMs: 500 }

/** Runs checks every `livenessCheckEveryMs` from `fromMs` to `toMs` and returns the decisions that did something. */
function run(alive: Liveness, fromMs: number, toMs: number, paused = false): { atMs: number; decision: LivenessDecision }[] {
  const out: { atMs: number; decision: LivenessDecision }[] = []
  for (let t = fromMs; t <= toMs; t += timing.livenessCheckEveryMs) {
    const decision = alive.check(t, paused)
    if (decision.action !== 'none') out.push({ atMs: t, decision })
  }
  return out
}

describe('liveness (pure timing decisions)', () => {
  it('a silent neighbour is probed at 2 s and 4 s and declared dead at 6 s, with a reason', () => {
    const alive = new Liveness(timing, 0)
    const decisions = run(alive, 500, 6_000)
    expect(decisions.map((d) => [d.atMs, d.decision.action])).toEqual([
      [2_000, 'probe'],
      [4_000, 'probe'],
      [6_000, 'dead'],
    ])
    const dead = decisions.at(-1)!.decision as { reason: string }
    expect(dead.reason).toMatch(/no frame and no answer to 2 probes for 6000 ms \(deadAfterSilenceMs 6000\)/)
  })

  it('a neighbour that answers the probe is never declared dead, however long the link is idle', () => {
    const alive = new Liveness(timing, 0)
    for (let t = 500; t <= 120_000; t += 500) {
      const decision = alive.check(t, false)
      expect(decision.action).not.toBe('dead')
      // The answer comes 50 ms after the question (the next frame heard).
      if (decision.action === 'probe') alive.heard(t + 50)
    }
    // One probe per idle period (2 s of silence, seen at the next 500 ms check: every 2.5 s), not one per check.
    expect(alive.probesSent).toBe(48)
  })

  it('a busy link (frames heard all the time) sends no probe at all', () => {
    const alive = new Liveness(timing, 0)
    for (let t = 500; t <= 60_000; t += 500) {
      alive.heard(t - 100)
      expect(alive.check(t, false).action).toBe('none')
    }
    expect(alive.probesSent).toBe(0)
  })

  it('silence while our own reader is paused is ours, not the neighbour’s; meanwhile we tell the neighbour we are alive', () => {
    const alive = new Liveness(timing, 0)
    // Never dead while paused, and a probe of ours every probeAfterIdleMs, so the neighbour, whose
    // answers we do not read, hears from us (without it, it declared us dead after 6 s).
    const paused = run(alive, 500, 30_000, true)
    expect(paused.map((d) => d.decision.action).every((a) => a === 'probe')).toBe(true)
    expect(paused.map((d) => d.atMs)).toEqual(Array.from({ length: 15 }, (_, i) => 500 + i * 2_000))
    // Once reading resumes, the neighbour gets the full bound again.
    expect(run(alive, 30_500, 36_000).map((d) => d.decision.action)).toEqual(['probe', 'probe', 'dead'])
  })

  it('a stall of our own process (checks that come late) is forgiven, not blamed on the neighbour', () => {
    const alive = new Liveness(timing, 0)
    expect(alive.check(500, false).action).toBe('none')
    // We were stopped for 20 s: the next check comes at 20.5 s.
    expect(alive.check(20_500, false).action).toBe('none')
    expect(alive.stallsForgiven).toBe(1)
    expect(run(alive, 21_000, 26_500).map((d) => [d.atMs, d.decision.action])).toEqual([
      [22_500, 'probe'],
      [24_500, 'probe'],
      [26_500, 'dead'],
    ])
  })

  it('refuses timing where a probe could not be answered before the deadline, naming the option', () => {
    expect(() => checkLivenessTiming({ ...timing, deadAfterSilenceMs: 3_000 })).toThrow(PhoenixTransportError)
    expect(() => checkLivenessTiming({ ...timing, deadAfterSilenceMs: 3_000 })).toThrow(/timing\.deadAfterSilenceMs \(3000\) must be at least twice timing\.probeAfterIdleMs/)
    expect(() => checkLivenessTiming({ ...timing, probeAfterIdleMs: 0 })).toThrow(/timing\.probeAfterIdleMs must be a positive integer/)
    expect(() => checkLivenessTiming({ ...timing, livenessCheckEveryMs: 2_500 })).toThrow(/timing\.livenessCheckEveryMs/)
    expect(() => checkLivenessTiming(timing)).not.toThrow()
  })
})
