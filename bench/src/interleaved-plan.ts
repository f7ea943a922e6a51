/**
 * The order of `run interleaved`'s transfers (src/interleaved.ts): first a warm-up of every path,
 * then the reps, each rep running every message size through every path in an order rotated by
 * one path per rep, then its latency probes.
 *
 * Why a warm-up, and why it starts with small messages: a path's first hundreds of MiB run
 * slower than the next (V8 compiling its hot code), and how much faster a path gets with more
 * traffic differs by path. A pipe relay's per-chunk code (the reader, yamux, Noise, the socket
 * write) runs once per chunk, so 4 KiB messages run it ~16 times as often per MiB as 64 KiB ones
 * do, and V8 optimizes it sooner; Phoenix batches small frames into writes of up to 256 KiB, so
 * small messages warm its libp2p code no more than large ones. Measured (bench/REPORT.md, "4 KiB
 * first"): after 16 MiB × 3 of 4 KiB on the same processes the pipe relays' 64 KiB runs used
 * 8-30% less CPU per MiB over their three processes, and kept it; Phoenix's did not move. Without
 * the warm-up, `--sizes 65536` measured the pipe relays half-warm and `--sizes 4096,65536` warm,
 * and the same code read 0.89× and 0.74×. With it, every path is measured warm, whatever the
 * sizes asked.
 */

/** One transfer of the run: a warm-up (not reported) or a measured rep. */
export interface ThroughputStep<P extends string> {
  readonly kind: 'warm-up' | 'measured'
  readonly path: P
  readonly messageBytes: number
  /** The rep it belongs to (0-based); -1 for a warm-up. */
  readonly rep: number
}

/** Then one slice of the 64 B latency probes of every path, in the rep's order. */
export interface LatencyStep<P extends string> {
  readonly kind: 'latency'
  readonly path: P
  readonly rep: number
}

export type Step<P extends string> = ThroughputStep<P> | LatencyStep<P>

/** The small messages every path moves first in its warm-up (see above), whatever `--sizes` asks. */
export const WARM_UP_SMALL_BYTES = 4096
/** How many runs of the small messages the warm-up makes: the "4 KiB first" runs that warmed the pipe relays made three. */
export const WARM_UP_SMALL_RUNS = 3

/**
 * Every transfer of the run, in order. With `warmUp`, each path first moves WARM_UP_SMALL_RUNS
 * runs of WARM_UP_SMALL_BYTES and then one run of each measured size, unreported; then `reps`
 * reps as described above (`latency`: whether each rep ends with a slice of the probes).
 */
export function interleavedSteps<P extends string>(plan: { paths: readonly P[]; sizes: readonly number[]; reps: number; warmUp: boolean; latency: boolean }): Step<P>[] {
  const { paths, sizes, reps } = plan
  if (paths.length === 0 || sizes.length === 0 || !Number.isInteger(reps) || reps < 1) throw new Error('interleavedSteps: needs a path, a size and at least one rep')
  const steps: Step<P>[] = []
  if (plan.warmUp) {
    for (const path of paths) {
      for (let i = 0; i < WARM_UP_SMALL_RUNS; i++) steps.push({ kind: 'warm-up', path, messageBytes: WARM_UP_SMALL_BYTES, rep: -1 })
      for (const messageBytes of sizes) steps.push({ kind: 'warm-up', path, messageBytes, rep: -1 })
    }
  }
  for (let rep = 0; rep < reps; rep++) {
    const order = paths.map((_, i) => paths[(i + rep) % paths.length]!)
    for (const messageBytes of sizes) for (const path of order) steps.push({ kind: 'measured', path, messageBytes, rep })
    if (plan.latency) for (const path of order) steps.push({ kind: 'latency', path, rep })
  }
  return steps
}
