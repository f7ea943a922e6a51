import type { Missing } from './collective-codec.ts'

/** One node a collective waits on, and the names its answer covers (a relay's covers its whole site). */
export interface Awaited {
  readonly node: string
  readonly names: readonly string[]
  readonly relay: boolean
}

/**
 * The answers one collective step waits for: one per awaited node, each settled by its answer,
 * by its node becoming unreachable (`left`; a lost site relay is replaced by its site's members
 * when the step can ask them directly, else `relay-lost`: its site may have got it), or by the
 * deadline (`timeout`). Never waits longer than `waitMs`.
 */
export class Exchange<R> {
  readonly answers: { node: string; answer: R }[] = []
  readonly missing: Missing[] = []
  private readonly waiting = new Map<string, Awaited>()
  private readonly timer: ReturnType<typeof setTimeout>
  private settled = false
  readonly done: Promise<void>
  private resolve!: () => void

  constructor(
    readonly op: string,
    awaited: readonly Awaited[],
    waitMs: number,
    private readonly onSettled: () => void,
    /** A site relay became unreachable: who to wait on instead for its site (already asked), or undefined to report its names `relay-lost`. */
    private readonly replaceRelay?: (relay: Awaited) => { instead: Awaited[]; missing: Missing[] } | undefined,
  ) {
    for (const a of awaited) this.waiting.set(a.node, a)
    this.done = new Promise((resolve) => (this.resolve = resolve))
    this.timer = setTimeout(() => this.giveUp('timeout'), waitMs)
    this.check()
  }

  /** Whether `node` is one we still wait on. */
  awaits(node: string): boolean {
    return this.waiting.has(node)
  }

  answer(node: string, answer: R, missing: readonly Missing[]): void {
    if (!this.waiting.delete(node)) return // late, or not asked: nothing to settle
    this.answers.push({ node, answer })
    this.missing.push(...missing)
    this.check()
  }

  /** `node` became unreachable: what it answers for is missing. */
  nodeDown(node: string): void {
    const awaited = this.waiting.get(node)
    if (awaited === undefined) return
    this.waiting.delete(node)
    const replaced = awaited.relay ? this.replaceRelay?.(awaited) : undefined
    if (replaced !== undefined) {
      const covered = new Set([...replaced.instead.flatMap((a) => a.names), ...replaced.missing.map((m) => m.name)])
      this.missing.push(...replaced.missing)
      for (const name of awaited.names) if (!covered.has(name)) this.missing.push({ name, reason: 'left' })
      for (const a of replaced.instead) if (!this.waiting.has(a.node)) this.waiting.set(a.node, a)
    } else for (const name of awaited.names) this.missing.push({ name, reason: awaited.relay ? 'relay-lost' : 'left' })
    this.check()
  }

  /** Stops waiting: every name not yet answered for is missing with `reason`. */
  giveUp(reason: 'timeout' | 'left'): void {
    for (const node of [...this.waiting.keys()]) {
      for (const name of this.waiting.get(node)!.names) this.missing.push({ name, reason })
      this.waiting.delete(node)
    }
    this.check()
  }

  private check(): void {
    if (this.settled || this.waiting.size > 0) return
    this.settled = true
    clearTimeout(this.timer)
    this.onSettled()
    this.resolve()
  }
}
