/**
 * Name groups: a group is a name pattern (`worker/*`); its members are the reachable names that
 * match it, now. `name:up` / `name:down` say when a name became reachable (or moved to another
 * owner) and when it was lost (crash, leave, partition, removed).
 *
 * Lateness: this node compares what it can reach with what it reported after every routing
 * change it applies, and every {@link GROUP_TIMING}.scanIntervalMs besides (a neighbour's
 * connection closing changes the table without an update). So an event comes at most
 * scanIntervalMs after the route itself appeared or went (measured in `test/jobs-topology.test.ts`).
 */
import { nameProblem } from '@phoenix-overlay/core'
import { PhoenixTransportError, invalidInput } from './errors.ts'
import { isReservedName, refuseReservedName } from './topology.ts'

export const GROUP_LIMITS = {
  /** Changes buffered per `watch()` iterator; one that falls this far behind ends with QUEUE_FULL rather than miss a change. */
  watchBufferMax: 4_096,
  /** `watch()` iterators open at once (each is offered every change). */
  watchersMax: 1_024,
} as const

export const GROUP_TIMING = {
  /** How often reachability is compared with what was reported, besides after each routing change: the bound on an event's lateness. */
  scanIntervalMs: 100,
} as const

/** A name that became reachable (`up`) or was lost (`down`); the `name:up` / `name:down` events. */
export interface NameChange {
  readonly type: 'up' | 'down'
  readonly name: string
  /** The node that owns it (for `down`: the node that owned it). */
  readonly node: string
  /** `performance.now()` when this node noticed. */
  readonly atMs: number
}

/** One member of a group: a reachable name and the node that owns it. */
export interface Member {
  readonly name: string
  readonly node: string
}

/** A compiled name pattern: `*` matches any run of characters (none included, `/` included). */
export class NamePattern {
  private readonly regex: RegExp

  constructor(readonly source: string) {
    checkPattern(source)
    const escaped = source.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    this.regex = new RegExp(`^${escaped.join('.*')}$`, 's')
  }

  matches(name: string): boolean {
    return !isReservedName(name) && this.regex.test(name)
  }
}

/** Empty, over-long, characters no name may hold (the core's police.ts), or a reserved ('@') pattern: INVALID_INPUT naming `pattern`. */
export function checkPattern(pattern: unknown): asserts pattern is string {
  if (typeof pattern !== 'string' || pattern.length === 0) throw invalidInput('pattern', 'must be a non-empty string, like "worker/*"')
  const problem = nameProblem(pattern)
  if (problem !== undefined) throw invalidInput('pattern', problem)
  refuseReservedName('pattern', pattern)
}

interface Watcher {
  readonly pattern: NamePattern
  readonly buffer: NameChange[]
  overflowed: boolean
  ended: boolean
  wake: (() => void) | undefined
}

/**
 * Tracks which names are reachable, raises the changes, and hands them to `watch()` iterators.
 * Lives as long as the node (across restarts): a stop reports every name down.
 */
export class Groups {
  /** name → owner, as last reported. */
  private reported = new Map<string, string>()
  private readonly watchers = new Set<Watcher>()
  private timer: ReturnType<typeof setInterval> | undefined
  private refreshScheduled = false
  /** The node stopped (and has not started again): an iterator opened now ends at once; one opened before the first start waits for it. */
  private stopped = false

  constructor(
    /** Reachable names now: name → owner (reserved names included; they are left out here). */
    private readonly reachable: () => Map<string, string>,
    private readonly emit: (change: NameChange) => void,
  ) {}

  start(): void {
    this.stopped = false
    clearInterval(this.timer)
    this.timer = setInterval(() => this.refresh(), GROUP_TIMING.scanIntervalMs)
    this.timer.unref?.()
    this.refresh()
  }

  /** The node stopped: every name it reported is down, and iterators end. */
  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
    this.diff(new Map())
    for (const w of this.watchers) this.end(w)
    this.stopped = true
  }

  /** A refresh on the next turn, once however many routing changes come before it (a busy node applies many). */
  refreshSoon(): void {
    if (this.refreshScheduled) return
    this.refreshScheduled = true
    setImmediate(() => {
      this.refreshScheduled = false
      if (this.timer !== undefined) this.refresh()
    })
  }

  /** Compares what is reachable with what was reported; raises the differences. */
  refresh(): void {
    const now = new Map<string, string>()
    for (const [name, owner] of this.reachable()) if (!isReservedName(name)) now.set(name, owner)
    this.diff(now)
  }

  private diff(now: Map<string, string>): void {
    const atMs = performance.now()
    const changes: NameChange[] = []
    for (const [name, node] of this.reported) if (now.get(name) !== node) changes.push({ type: 'down', name, node, atMs })
    for (const [name, node] of now) if (this.reported.get(name) !== node) changes.push({ type: 'up', name, node, atMs })
    this.reported = now
    for (const change of changes) this.publish(change)
  }

  private publish(change: NameChange): void {
    this.emit(change)
    for (const w of this.watchers) {
      if (w.ended || !w.pattern.matches(change.name)) continue
      if (w.buffer.length >= GROUP_LIMITS.watchBufferMax) w.overflowed = true
      else w.buffer.push(change)
      w.wake?.()
    }
  }

  /** The members of `pattern` now, by name. */
  members(pattern: string): Member[] {
    const compiled = new NamePattern(pattern)
    const out: Member[] = []
    for (const [name, node] of this.reachable()) if (compiled.matches(name)) out.push({ name, node })
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  /**
   * The changes of `pattern` from now on, as an async iterator: first an `up` for each member now,
   * then each change. Ends when the node stops or the loop breaks; one that falls
   * watchBufferMax changes behind throws QUEUE_FULL rather than skip any.
   */
  watch(pattern: string): AsyncIterableIterator<NameChange> {
    const compiled = new NamePattern(pattern)
    if (this.watchers.size >= GROUP_LIMITS.watchersMax) throw new PhoenixTransportError('QUEUE_FULL', `watch: ${GROUP_LIMITS.watchersMax} iterators are open already (GROUP_LIMITS.watchersMax)`)
    const atMs = performance.now()
    const watcher: Watcher = { pattern: compiled, buffer: [], overflowed: false, ended: false, wake: undefined }
    for (const [name, node] of this.reported) if (compiled.matches(name)) watcher.buffer.push({ type: 'up', name, node, atMs })
    // Opened on a stopped node it would wait for a start that may never come (a `for await` hung).
    if (this.stopped) watcher.ended = true
    else this.watchers.add(watcher)
    return this.iterate(watcher)
  }

  private end(w: Watcher): void {
    w.ended = true
    this.watchers.delete(w)
    w.wake?.()
  }

  /** A hand-made iterator, so `return()` ends it even while a `next()` waits (an async generator would queue it behind that wait). */
  private iterate(w: Watcher): AsyncIterableIterator<NameChange> {
    const done = (): IteratorResult<NameChange> => ({ done: true, value: undefined })
    const next = async (): Promise<IteratorResult<NameChange>> => {
      for (;;) {
        const change = w.buffer.shift()
        if (change !== undefined) return { done: false, value: change }
        if (w.overflowed) {
          this.end(w)
          throw new PhoenixTransportError('QUEUE_FULL', `watch(${JSON.stringify(w.pattern.source)}): the consumer fell ${GROUP_LIMITS.watchBufferMax} changes behind (GROUP_LIMITS.watchBufferMax)`)
        }
        if (w.ended) return done()
        await new Promise<void>((resolve) => (w.wake = resolve))
        w.wake = undefined
      }
    }
    const iterator: AsyncIterableIterator<NameChange> = {
      next,
      return: async () => {
        w.buffer.length = 0
        this.end(w)
        return done()
      },
      [Symbol.asyncIterator]: () => iterator,
    }
    return iterator
  }
}

/** What a routing core knows of names: ours, and each reachable destination's (conflicts resolved as `send` would). */
export function reachableNames(core: { readonly id: string; readonly names: readonly string[]; routes(): readonly { destination: string; reachable: boolean; names: readonly string[] }[]; resolve(name: string): { owner: string } | undefined }): Map<string, string> {
  const out = new Map<string, string>()
  for (const name of core.names) out.set(name, core.resolve(name)?.owner ?? core.id)
  for (const r of core.routes()) {
    if (!r.reachable) continue
    for (const name of r.names) if (!out.has(name)) out.set(name, core.resolve(name)?.owner ?? r.destination)
  }
  return out
}
