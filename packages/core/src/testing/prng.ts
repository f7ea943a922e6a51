/**
 * mulberry32: a small, fast 32-bit PRNG, the one seeded generator of the project. The simulator
 * draws from instances of it seeded from the scenario seed (a run is a pure function of scenario,
 * seed and strategy); the test harness, the benches and the demos from theirs, so any run can be
 * replayed from its seed. Deterministic code, no random source of the platform: the core stays pure.
 */
export class Prng {
  private state: number

  constructor(seed: number) {
    this.state = seed >>> 0
  }

  /** mulberry32's additive constant (Weyl sequence step). */
  private static readonly STEP = 0x6d2b79f5
  /** 2^32: the output as a fraction of the 32-bit range. */
  private static readonly RANGE = 4294967296
  /** Golden-ratio multiplier mixing a fork's salt into the state (Fibonacci hashing). */
  private static readonly FORK_MIX = 0x9e3779b1

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + Prng.STEP) >>> 0
    let t = this.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / Prng.RANGE
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n)
  }

  /** A derived, independent stream (so adding draws in one place does not shift another). */
  fork(salt: number): Prng {
    return new Prng(Math.imul((this.state ^ salt) >>> 0, Prng.FORK_MIX) ^ salt)
  }

  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1)
      const t = items[i]!
      items[i] = items[j]!
      items[j] = t
    }
    return items
  }
}

/** The same generator as a function, for code that wants a `() => number` (uniform in [0, 1)). */
export function prng(seed: number): () => number {
  const generator = new Prng(seed)
  return () => generator.next()
}
