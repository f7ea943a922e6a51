/**
 * mulberry32: a small, fast 32-bit PRNG. The whole simulation draws from instances of it seeded
 * from the scenario seed, so a run is a pure function of (scenario, seed, strategy).
 */
export class Prng {
  private state: number

  constructor(seed: number) {
    this.state = seed >>> 0
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0
    let t = this.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n)
  }

  /** A derived, independent stream (so adding draws in one place does not shift another). */
  fork(salt: number): Prng {
    return new Prng(Math.imul((this.state ^ salt) >>> 0, 0x9e3779b1) ^ salt)
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
