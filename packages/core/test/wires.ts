import { PhoenixCore, PhoenixError, type CoreConfig, type UpdateMessage } from '../src/index.ts'

/**
 * Cores wired by hand (members.test.ts, the adversarial audit's tests): every `send` delivered at
 * once, a `close` (or an update the receiver refuses, which throws) takes the connection down on
 * both sides. A member or attacker need not be a core: the test plays it, calling `deliver` with
 * crafted updates.
 */
export class Wires {
  readonly cores = new Map<string, PhoenixCore>()
  readonly closed: string[] = []
  /** Updates each core sent to a node the test plays (not a core here), by receiver. */
  readonly sentTo = new Map<string, UpdateMessage[]>()
  /** Updates delivered (or sent to a node the test plays), by `from>to`: the exchanges a test counts. */
  readonly delivered = new Map<string, number>()
  nowMs = 0
  add(config: CoreConfig): PhoenixCore {
    const core = new PhoenixCore(config)
    this.cores.set(config.id, core)
    return core
  }
  connect(a: string, b: string): void {
    this.cores.get(a)?.connectionUp(b, this.nowMs)
    this.cores.get(b)?.connectionUp(a, this.nowMs)
  }
  cut(a: string, b: string, why: string): void {
    this.closed.push(`${a}-${b}: ${why}`)
    this.cores.get(a)?.connectionDown(b, this.nowMs)
    this.cores.get(b)?.connectionDown(a, this.nowMs)
  }
  /** `from` (a core, or a node the test plays) sends `to` an update; false if refused (the link is cut). */
  deliver(from: string, to: string, message: UpdateMessage): boolean {
    const pair = `${from}>${to}`
    this.delivered.set(pair, (this.delivered.get(pair) ?? 0) + 1)
    const core = this.cores.get(to)
    if (core === undefined) {
      let list = this.sentTo.get(to)
      if (list === undefined) this.sentTo.set(to, (list = []))
      list.push(message)
      return true
    }
    if (!core.isNeighbour(from)) return false
    try {
      core.receive(from, message, this.nowMs)
      return true
    } catch (error) {
      if (!(error instanceof PhoenixError)) throw error
      this.cut(to, from, error.message)
      return false
    }
  }
  run(): void {
    for (let round = 0; round < 10_000; round++) {
      let moved = false
      for (const [id, core] of this.cores) {
        while (core.hasWork(this.nowMs)) {
          for (const effect of core.step(this.nowMs).effects) {
            moved = true
            if (effect.type === 'send') this.deliver(id, effect.to, effect.message)
            else if (effect.type === 'close') this.cut(id, effect.peer, effect.reason)
          }
        }
      }
      if (!moved) return
    }
    throw new Error('no quiescence')
  }
  /** Advances time by `ms`, then runs. */
  advance(ms: number): void {
    this.nowMs += ms
    this.run()
  }
}
