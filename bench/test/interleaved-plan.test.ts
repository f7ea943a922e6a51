import { describe, expect, it } from 'vitest'
import { interleavedSteps, WARM_UP_SMALL_BYTES, WARM_UP_SMALL_RUNS, type Step } from '../src/interleaved-plan.ts'

const paths = ['pause-resume', 'it-pipe', 'phoenix-1'] as const
const measured = <P extends string>(steps: Step<P>[]) => steps.filter((s) => s.kind === 'measured')
const warmUps = <P extends string>(steps: Step<P>[]) => steps.filter((s) => s.kind === 'warm-up')

describe('run interleaved: the order of its transfers', () => {
  it('warms every path with small messages and each measured size before any measured run, whatever the sizes asked', () => {
    for (const sizes of [[65536], [4096, 65536], [64, 1048576]]) {
      const steps = interleavedSteps({ paths, sizes, reps: 4, warmUp: true, latency: true })
      const firstMeasured = steps.findIndex((s) => s.kind === 'measured')
      // Every warm-up comes before the first measured run (none is mixed into the reps).
      expect(steps.slice(firstMeasured).filter((s) => s.kind === 'warm-up')).toHaveLength(0)
      for (const path of paths) {
        const own = warmUps(steps).filter((s) => s.path === path)
        expect(own.filter((s) => s.kind === 'warm-up' && s.messageBytes === WARM_UP_SMALL_BYTES).length, `${path} ${sizes}`).toBeGreaterThanOrEqual(WARM_UP_SMALL_RUNS)
        for (const bytes of sizes) expect(own.some((s) => s.kind === 'warm-up' && s.messageBytes === bytes), `${path} warmed at ${bytes}`).toBe(true)
      }
      expect(warmUps(steps)).toHaveLength(paths.length * (WARM_UP_SMALL_RUNS + sizes.length))
    }
  })

  it('measures every path at every size once per rep, each path first in turn, and warms nothing with --no-warm-up', () => {
    const sizes = [4096, 65536]
    const steps = interleavedSteps({ paths, sizes, reps: 5, warmUp: false, latency: true })
    expect(warmUps(steps)).toHaveLength(0)
    expect(measured(steps)).toHaveLength(5 * paths.length * sizes.length)
    for (let rep = 0; rep < 5; rep++) {
      const inRep = measured(steps).filter((s) => s.rep === rep)
      for (const path of paths) for (const bytes of sizes) expect(inRep.filter((s) => s.path === path && s.kind === 'measured' && s.messageBytes === bytes)).toHaveLength(1)
      expect(inRep[0]!.path).toBe(paths[rep % paths.length])
      expect(steps.filter((s) => s.kind === 'latency' && s.rep === rep).map((s) => s.path)).toHaveLength(paths.length)
    }
    expect(interleavedSteps({ paths, sizes, reps: 2, warmUp: false, latency: false }).filter((s) => s.kind === 'latency')).toHaveLength(0)
  })

  it('refuses an empty run', () => {
    expect(() => interleavedSteps({ paths, sizes: [], reps: 1, warmUp: true, latency: false })).toThrow(/needs a path/)
    expect(() => interleavedSteps({ paths, sizes: [65536], reps: 0, warmUp: true, latency: false })).toThrow(/needs a path/)
  })
})
