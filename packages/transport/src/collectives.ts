/**
 * Collectives over a name group, multilevel after MPICH-G2 (`seeds/001`, section 3.3): members in
 * this node's site get their copy directly; for each other site, ONE copy crosses to a relay (the
 * site's member fewest hops away) that fans it out inside its site and reports back. A reduce
 * goes the other way: each site's relay combines its site's values and sends one.
 *
 * Messages between collective peers are data frames addressed to a node, not a name (name '' on
 * the wire, which applications cannot send to), so they never reach an application's consumers.
 * Each step waits on a bounded {@link Exchange}: an answer, the node becoming unreachable, or the
 * deadline, whichever comes first; what did not arrive is reported per name, never waited on.
 */
import type { Logger } from '@libp2p/interface'
import { WIRE_LIMITS } from '@phoenix-overlay/wire'
import type { ReceivedMessage } from './api.ts'
import { combineNumeric, decodeEnvelope, encodeEnvelope, splitParts, type Header, type Missing, type ReduceOp, type Target } from './collective-codec.ts'
import { Exchange, type Awaited } from './collective-exchange.ts'
import { TIMER_MS_MAX } from './constants.ts'
import { PhoenixTransportError, invalidInput, shown } from './errors.ts'
import type { Member } from './groups.ts'
import { Inbox, receivedMessage, type Delivery } from './inbox.ts'
import type { Topology } from './topology.ts'
import { checkCallOptions, checkName } from './validate.ts'

export const COLLECTIVE_LIMITS = {
  /** Collective steps waiting for answers at once (each holds a timer): a runaway caller meets QUEUE_FULL. */
  pendingMax: 1_024,
  /** Contributions held for reduces not yet asked for (name, tag); a full store refuses with QUEUE_FULL rather than drop one. */
  contributionsMax: 4_096,
  /** Reduce requests waiting for a contribution at once. */
  contributionWaitsMax: 4_096,
  /** Header room kept in a frame besides the payload (names, ids, targets of one site). */
  envelopeBytesReserve: 64 * 1024,
} as const

export const COLLECTIVE_TIMING = {
  /** How long a collective waits for answers, unless `timeoutMs` says otherwise. */
  timeoutMs: 10_000,
  /** A relay answers this much before the origin gives up on it (at most a quarter of the time). */
  relayMarginMs: 1_000,
} as const

export interface CollectiveHost {
  readonly id: string
  readonly log: Logger
  topology(): Topology
  members(pattern: string): Member[]
  ownNames(): readonly string[]
  allocateId(): number
  /** Sends `bytes` to `node` (itself included); throws PhoenixTransportError when it cannot be sent. */
  sendToNode(node: string, bytes: Uint8Array): void
  /** Hands a message to this node's application (the send contract's delivery rule). */
  deliver(message: ReceivedMessage): Delivery
}

export interface CollectiveOptions {
  /** How long to wait for answers (default COLLECTIVE_TIMING.timeoutMs). */
  timeoutMs?: number
}

export interface BroadcastResult {
  /** The names it was sent to (the group's members when it started), sorted. */
  readonly members: readonly string[]
  /** With `ack`: the names whose application got it, sorted. */
  readonly delivered: readonly string[] | undefined
  /**
   * Names not known to have got it (with `ack`), or that could not be sent to, and why. A site
   * relay lost before it reported is `left`, though it may have handed the message to its own
   * application first: not known, not "not delivered".
   */
  readonly missing: readonly Missing[]
}

export interface ReduceOptions extends CollectiveOptions {
  /** Element-wise over little-endian float64 arrays of one size; combined at each site's relay. */
  op?: 'sum' | 'min' | 'max'
  /** Your own combine over bytes: every value goes to this node, folded in name order. */
  combine?: (a: Uint8Array, b: Uint8Array) => Uint8Array
}

export interface ReduceResult {
  /** The combined value; undefined when no member contributed. */
  readonly value: Uint8Array | undefined
  readonly contributors: readonly string[]
  readonly missing: readonly Missing[]
}

interface ValueAnswer {
  readonly contributors: string[]
  readonly parts: Uint8Array[]
  readonly error: string | undefined
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

export class Collectives {
  private readonly exchanges = new Map<string, Exchange<unknown>>()
  private readonly contributions = new Map<string, Uint8Array>()
  private readonly contributionWaits = new Map<string, (value: Uint8Array | undefined) => void>()
  private opCount = 0

  constructor(private readonly host: CollectiveHost) {}

  // ------------------------------------------------------------------ planning

  /** Members by node; this site's nodes directly, each other site through its relay. */
  private plan(members: readonly Member[]): { direct: Target[]; relays: { leader: Target; others: Target[] }[] } {
    const byNode = new Map<string, string[]>()
    for (const m of members) byNode.set(m.node, [...(byNode.get(m.node) ?? []), m.name])
    const topology = this.host.topology()
    const info = new Map(topology.nodes.map((n) => [n.id, n]))
    const mySite = topology.nodes[0]?.site
    const sites = new Map<string, Target[]>()
    const direct: Target[] = []
    for (const [node, names] of byNode) {
      const site = info.get(node)?.site
      if (site === undefined || site === mySite) direct.push({ node, names })
      else sites.set(site, [...(sites.get(site) ?? []), { node, names }])
    }
    const hops = (t: Target) => info.get(t.node)?.nhops ?? Number.MAX_SAFE_INTEGER
    const relays = [...sites.values()].map((targets) => {
      const [leader, ...others] = targets.sort((a, b) => hops(a) - hops(b) || (a.node < b.node ? -1 : 1))
      return { leader: leader!, others }
    })
    return { direct, relays }
  }

  private groupOf(what: string, pattern: string): Member[] {
    const members = this.host.members(pattern)
    if (members.length === 0) throw new PhoenixTransportError('NO_ROUTE', `${what}: no reachable name matches ${JSON.stringify(pattern)}`)
    return members
  }

  /** Starts waiting for `awaited` (replies arrive asynchronously, never during the sends that precede this). */
  private open<R>(op: string, awaited: readonly Awaited[], waitMs: number, replaceRelay?: (relay: Awaited) => { instead: Awaited[]; missing: Missing[] } | undefined): Exchange<R> {
    if (this.exchanges.size >= COLLECTIVE_LIMITS.pendingMax) throw new PhoenixTransportError('QUEUE_FULL', `${COLLECTIVE_LIMITS.pendingMax} collective steps wait for answers already (COLLECTIVE_LIMITS.pendingMax)`)
    const exchange = new Exchange<R>(op, awaited, waitMs, () => this.exchanges.delete(op), replaceRelay)
    if (awaited.length > 0) this.exchanges.set(op, exchange as Exchange<unknown>)
    return exchange
  }

  /** Sends one envelope; a failure is reported as `unsent` for the names it covered. */
  private post(node: string, header: Header, parts: readonly Uint8Array[], covers: readonly string[], missing: Missing[]): boolean {
    try {
      this.host.sendToNode(node, encodeEnvelope(header, parts))
      return true
    } catch (error) {
      this.host.log('collective %s: could not send to %s: %s', header.op, node, (error as Error).message)
      for (const name of covers) missing.push({ name, reason: 'unsent' })
      return false
    }
  }

  // ------------------------------------------------------------------ broadcast

  async broadcast(pattern: string, payload: Uint8Array, options: CollectiveOptions & { ack?: boolean } = {}): Promise<BroadcastResult> {
    if (!(payload instanceof Uint8Array)) throw invalidInput('payload', 'must be a Uint8Array')
    const payloadBytesMax = WIRE_LIMITS.payloadBytesMax - COLLECTIVE_LIMITS.envelopeBytesReserve
    if (payload.length > payloadBytesMax) throw invalidInput('payload', `is ${payload.length} bytes, more than a broadcast carries (${payloadBytesMax})`)
    checkCallOptions(options, BROADCAST_OPTION_KEYS)
    if (options.ack !== undefined && typeof options.ack !== 'boolean') throw invalidInput('options.ack', `must be a boolean, got ${JSON.stringify(options.ack)}`)
    const waitMs = checkWait(options.timeoutMs)
    // Without ack nothing is awaited: the wait was accepted and ignored (as send's ackTimeoutMs was).
    if (options.timeoutMs !== undefined && options.ack !== true) throw invalidInput('options.timeoutMs', "is the wait for the members' acknowledgements: it needs ack: true")
    const members = this.groupOf('broadcast', pattern)
    const op = `${this.host.id}/${++this.opCount}`
    const { direct, relays } = this.plan(members)
    const withIds = (t: Target): Target => ({ ...t, ids: t.names.map(() => this.host.allocateId()) })
    const replyTo = options.ack === true ? this.host.id : undefined
    const missing: Missing[] = []
    const awaited: Awaited[] = []
    const sites = new Map<string, Target[]>() // relay → the rest of its site, with their ids
    const step = (target: Target, others: Target[]) => {
      const t = withIds(target)
      const rest = others.map(withIds)
      const covers = [...t.names, ...others.flatMap((o) => o.names)]
      const header: Header = { t: 'b', op, origin: this.host.id, replyTo, waitMs: relayWait(waitMs), names: [...t.names], ids: [...t.ids!], targets: rest }
      if (this.post(t.node, header, [payload], covers, missing)) awaited.push({ node: t.node, names: covers, relay: others.length > 0 })
      sites.set(t.node, rest)
    }
    // A relay lost before it reported: its site's members get their copy from here, with the same
    // message ids, so one that had it from the relay does not deliver it twice (and says so).
    const replaceRelay = (relay: Awaited) => {
      const instead: Awaited[] = []
      const unsent: Missing[] = []
      for (const t of sites.get(relay.node) ?? []) {
        const header: Header = { t: 'b', op, origin: this.host.id, replyTo, waitMs: 0, names: [...t.names], ids: [...t.ids!], targets: [] }
        if (this.post(t.node, header, [payload], t.names, unsent)) instead.push({ node: t.node, names: t.names, relay: false })
      }
      return { instead, missing: unsent }
    }
    for (const t of direct) step(t, [])
    for (const r of relays) step(r.leader, r.others)
    const names = members.map((m) => m.name)
    if (replyTo === undefined) return { members: names, delivered: undefined, missing: missing.sort(byName) }
    const exchange = this.open<string[]>(op, awaited, waitMs, replaceRelay)
    await exchange.done
    const delivered = exchange.answers.flatMap((a) => a.answer).sort()
    return { members: names, delivered, missing: [...missing, ...exchange.missing].sort(byName) }
  }

  private onBroadcast(h: Extract<Header, { t: 'b' }>, payload: Uint8Array, hops: number): void {
    const delivered: string[] = []
    const missing: Missing[] = []
    const own = this.host.ownNames()
    h.names.forEach((name, i) => {
      if (!own.includes(name)) return void missing.push({ name, reason: 'not-owned' })
      const d = this.host.deliver(receivedMessage({ from: h.origin, name, hops, messageId: h.ids[i] ?? 0 }, payload))
      if (d === 'delivered' || d === 'duplicate') delivered.push(name)
      else missing.push({ name, reason: d })
    })
    const answer = () => void (h.replyTo !== undefined && this.post(h.replyTo, { t: 'r', op: h.op, delivered, missing }, [], [], []))
    if (h.targets.length === 0) return answer()
    // A site relay: fan out inside the site, then report for all of it.
    const awaited: Awaited[] = []
    for (const t of h.targets) {
      const header: Header = { t: 'b', op: h.op, origin: h.origin, replyTo: h.replyTo === undefined ? undefined : this.host.id, waitMs: 0, names: [...t.names], ids: [...(t.ids ?? [])], targets: [] }
      if (this.post(t.node, header, [payload], t.names, missing)) awaited.push({ node: t.node, names: t.names, relay: false })
    }
    if (h.replyTo === undefined) return
    const exchange = this.open<string[]>(h.op, awaited, h.waitMs)
    void exchange.done.then(() => {
      delivered.push(...exchange.answers.flatMap((a) => a.answer))
      missing.push(...exchange.missing)
      answer()
    })
  }

  // ------------------------------------------------------------------ reduce

  /** Records `value` as `name`'s contribution to the next reduce over `tag` (taken once). */
  contribute(name: string, tag: string, value: Uint8Array): void {
    checkName('tag', tag)
    if (!this.host.ownNames().includes(name)) throw invalidInput('name', `${JSON.stringify(name)} is not a name of this node${name.startsWith('@') ? " (names starting with '@' are reserved for the overlay)" : ''}`)
    if (!(value instanceof Uint8Array)) throw invalidInput('value', 'must be a Uint8Array')
    const key = `${name}\n${tag}`
    const waiting = this.contributionWaits.get(key)
    if (waiting !== undefined) return waiting(value)
    if (!this.contributions.has(key) && this.contributions.size >= COLLECTIVE_LIMITS.contributionsMax) throw new PhoenixTransportError('QUEUE_FULL', `${COLLECTIVE_LIMITS.contributionsMax} contributions wait for a reduce already (COLLECTIVE_LIMITS.contributionsMax)`)
    this.contributions.set(key, value)
  }

  private takeContribution(name: string, tag: string, waitMs: number): Promise<Uint8Array | undefined> {
    const key = `${name}\n${tag}`
    const held = this.contributions.get(key)
    if (held !== undefined) {
      this.contributions.delete(key)
      return Promise.resolve(held)
    }
    if (this.contributionWaits.has(key) || this.contributionWaits.size >= COLLECTIVE_LIMITS.contributionWaitsMax) return Promise.resolve(undefined)
    return new Promise((resolve) => {
      const timer = setTimeout(() => settle(undefined), waitMs)
      const settle = (value: Uint8Array | undefined) => {
        clearTimeout(timer)
        this.contributionWaits.delete(key)
        resolve(value)
      }
      this.contributionWaits.set(key, settle)
    })
  }

  async reduce(pattern: string, tag: string, options: ReduceOptions): Promise<ReduceResult> {
    checkName('tag', tag)
    const op = checkReduceOptions(options)
    const waitMs = checkWait(options.timeoutMs)
    const members = this.groupOf('reduce', pattern)
    const id = `${this.host.id}/${++this.opCount}`
    const { direct, relays } = this.plan(members)
    const missing: Missing[] = []
    const awaited: Awaited[] = []
    const ask = (target: Target, others: Target[]) => {
      const covers = [...target.names, ...others.flatMap((o) => o.names)]
      const header: Header = { t: 'q', op: id, origin: this.host.id, replyTo: this.host.id, waitMs: relayWait(waitMs), tag, reduce: op, names: [...target.names], targets: others }
      if (this.post(target.node, header, [], covers, missing)) awaited.push({ node: target.node, names: covers, relay: others.length > 0 })
    }
    for (const t of direct) ask(t, [])
    for (const r of relays) ask(r.leader, r.others)
    const step = this.open<ValueAnswer>(id, awaited, waitMs)
    await step.done
    const answers = step.answers.map((a) => a.answer)
    const error = answers.find((a) => a.error !== undefined)?.error
    if (error !== undefined) throw invalidInput('value', error.replace(/^value /, ''))
    const values = answers.flatMap((a) => (op === 'gather' ? a.contributors.map((name, i) => ({ name, bytes: a.parts[i]! })) : a.parts.map((bytes) => ({ name: a.contributors[0]!, bytes }))))
    const contributors = answers.flatMap((a) => a.contributors).sort()
    return { value: this.combine(op, values, options), contributors, missing: [...missing, ...step.missing].sort(byName) }
  }

  private combine(op: ReduceOp, values: { name: string; bytes: Uint8Array }[], options: ReduceOptions): Uint8Array | undefined {
    if (values.length === 0) return undefined
    const sorted = values.sort(byName)
    if (op !== 'gather') return combineNumeric(op, sorted)
    return sorted.slice(1).reduce((acc, v) => options.combine!(acc, v.bytes), sorted[0]!.bytes)
  }

  private async onReduceRequest(h: Extract<Header, { t: 'q' }>): Promise<void> {
    const own = this.host.ownNames()
    const missing: Missing[] = []
    const local: { name: string; bytes: Uint8Array }[] = []
    const awaited: Awaited[] = []
    for (const t of h.targets) {
      const header: Header = { ...h, replyTo: this.host.id, waitMs: relayWait(h.waitMs), names: [...t.names], targets: [] }
      if (this.post(t.node, header, [], t.names, missing)) awaited.push({ node: t.node, names: t.names, relay: false })
    }
    const exchange = awaited.length > 0 ? this.open<ValueAnswer>(h.op, awaited, h.waitMs) : undefined
    const waitMs = awaited.length > 0 ? relayWait(h.waitMs) : h.waitMs
    await Promise.all(
      h.names.map(async (name) => {
        if (!own.includes(name)) return void missing.push({ name, reason: 'not-owned' })
        const bytes = await this.takeContribution(name, h.tag, waitMs)
        if (bytes === undefined) missing.push({ name, reason: 'no-contribution' })
        else local.push({ name, bytes })
      }),
    )
    if (exchange !== undefined) await exchange.done
    const values = [...local]
    let error: string | undefined
    for (const { answer } of exchange?.answers ?? []) {
      error ??= answer.error
      if (h.reduce === 'gather') answer.contributors.forEach((name, i) => values.push({ name, bytes: answer.parts[i]! }))
      else if (answer.parts[0] !== undefined) values.push({ name: answer.contributors[0]!, bytes: answer.parts[0] })
    }
    missing.push(...(exchange?.missing ?? []))
    const contributors = [...local.map((v) => v.name), ...(exchange?.answers ?? []).flatMap((a) => a.answer.contributors)]
    let parts = values.sort(byName).map((v) => v.bytes)
    if (h.reduce !== 'gather' && values.length > 0 && error === undefined) {
      try {
        parts = [combineNumeric(h.reduce, values)]
      } catch (e) {
        error = (e as Error).message
      }
    }
    if (h.reduce === 'gather') contributors.splice(0, contributors.length, ...values.map((v) => v.name))
    else contributors.sort()
    this.post(h.replyTo, { t: 'v', op: h.op, contributors, missing, sizes: parts.map((p) => p.length), ...(error === undefined ? {} : { error }) }, parts, [], [])
  }

  // ------------------------------------------------------------------ frames in, nodes gone

  /** A node-addressed message (name ''): a collective step. Bad bytes are a peer's bug: logged and dropped. */
  handle(message: ReceivedMessage): Delivery {
    try {
      const { header, rest } = decodeEnvelope(message.payload)
      if (header.t === 'b') this.onBroadcast(header, rest, message.hops)
      else if (header.t === 'r') this.exchanges.get(header.op)?.answer(message.from, header.delivered, header.missing)
      else if (header.t === 'q') void this.onReduceRequest(header).catch((error: unknown) => this.host.log.error('reduce step %s failed: %s', header.op, (error as Error).message))
      else if (header.t === 'v') this.exchanges.get(header.op)?.answer(message.from, { contributors: header.contributors, parts: splitParts(rest, header.sizes), error: header.error } satisfies ValueAnswer, header.missing)
    } catch (error) {
      this.host.log.error('dropped a collective message from %s: %s', message.from, (error as Error).message)
    }
    return 'delivered'
  }

  /** `node` became unreachable: steps waiting on it stop waiting. */
  nodeDown(node: string): void {
    for (const exchange of [...this.exchanges.values()]) if (exchange.awaits(node)) exchange.nodeDown(node)
  }

  /** The node stopped: nothing waits any longer. */
  stop(): void {
    for (const exchange of [...this.exchanges.values()]) exchange.giveUp('left')
    for (const settle of [...this.contributionWaits.values()]) settle(undefined)
    this.contributions.clear()
  }
}

function checkWait(timeoutMs: number | undefined): number {
  if (timeoutMs === undefined) return COLLECTIVE_TIMING.timeoutMs
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > TIMER_MS_MAX) throw invalidInput('options.timeoutMs', `must be a number of milliseconds in (0, 2^31), got ${shown(timeoutMs)}`)
  return timeoutMs
}

/** What a site relay may wait for its site, so that its report reaches the origin in time. */
function relayWait(waitMs: number): number {
  return Math.max(1, waitMs - Math.min(COLLECTIVE_TIMING.relayMarginMs, waitMs / 4))
}

const BROADCAST_OPTION_KEYS = Object.keys({ timeoutMs: 1, ack: 1 } satisfies Record<keyof (CollectiveOptions & { ack?: boolean }), 1>)
const REDUCE_OPTION_KEYS = Object.keys({ timeoutMs: 1, op: 1, combine: 1 } satisfies Record<keyof ReduceOptions, 1>)

function checkReduceOptions(options: ReduceOptions): ReduceOp {
  if (typeof options !== 'object' || options === null) throw invalidInput('options', 'must be an object with op or combine')
  checkCallOptions(options, REDUCE_OPTION_KEYS)
  if (options.combine !== undefined && typeof options.combine !== 'function') throw invalidInput('options.combine', 'must be a function (a: Uint8Array, b: Uint8Array) => Uint8Array')
  if ((options.op === undefined) === (options.combine === undefined)) throw invalidInput('options.op', "or options.combine: give exactly one of them (op 'sum', 'min' or 'max', or a combine function)")
  if (options.op !== undefined && !['sum', 'min', 'max'].includes(options.op)) throw invalidInput('options.op', `must be 'sum', 'min' or 'max', got ${JSON.stringify(options.op)}`)
  return options.op ?? 'gather'
}

/** The node's inbox, with node-addressed messages (name '', which applications cannot send to) going to the collectives instead. */
export class NodeInbox extends Inbox {
  nodeMessages: ((message: ReceivedMessage) => Delivery) | undefined

  override accept(message: ReceivedMessage): Delivery {
    if (message.name === '' && this.nodeMessages !== undefined) return this.nodeMessages(message)
    return super.accept(message)
  }
}
