/**
 * One benchmark node: whatever stack its part in a path needs (a plain libp2p node that sinks or
 * relays, a circuit relay or client, a Phoenix node), the sender's and receiver's loops, and the
 * process's CPU and memory figures. The driver calls its methods: over IPC when the node has a
 * process of its own (node-main.ts), directly when every node shares the driver's process.
 */
import type { Libp2p, Stream } from '@libp2p/interface'
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { multiaddr } from '@multiformats/multiaddr'
import { makeMessage, MESSAGE_BYTES_MIN, MessageReader, nowNs, stampOf } from './framing.ts'
import { startOverlayNode, type OverlayNode } from './phoenix-adapter.ts'
import { drained, itPipeRelay, pauseResumeRelay, READ_BUFFER_BYTES_MAX } from './relays.ts'
import { bareNode, relayClientNode, relayServerNode } from './stack.ts'

export const SINK_PROTOCOL = '/phoenix-bench/sink/1.0.0'
export const RELAY_PROTOCOL = { pipe: '/phoenix-bench/relay-it-pipe/1.0.0', pause: '/phoenix-bench/relay-pause-resume/1.0.0' } as const

export type NodeSpec =
  /** A plain libp2p node that sinks streams and, with `relay`, forwards them to `next`. */
  | { stack: 'bare'; listen: string[]; relay?: { kind: keyof typeof RELAY_PROTOCOL; next: string; nextProtocol: string } }
  | { stack: 'relay-server'; listen: string[] }
  /** With `relayAddress`: listens (and sinks) through that relay; without: only dials. */
  | { stack: 'relay-client'; relayAddress?: string }
  | { stack: 'phoenix'; listen: string[]; hubs: string[]; names: string[] }

export interface Started {
  readonly peerId: string
  /** Dialable addresses; for a relay client, its circuit address. */
  readonly addresses: string[]
}

/** How the sender reaches the receiver: a raw stream to an address and protocol, or a Phoenix name. */
export type Target = { address: string; protocol: string } | { name: string; hops: number }

export interface Received {
  readonly endNs: bigint
  readonly messages: number
  readonly bytes: number
  /** One-way latencies, µs, when asked for. */
  readonly latenciesUs: number[]
}

export interface Usage {
  /** User + system CPU time since `mark`, µs. */
  readonly cpuUs: number
  readonly rssStartBytes: number
  readonly rssPeakBytes: number
  readonly rssEndBytes: number
}

const CIRCUIT_ADDRESS_WAIT_MS = 20_000
/**
 * A receiver that has had no message for this long has had all it will get: the longest pause
 * between two messages on loopback is a garbage collection or a descheduled process (well under
 * a second even on a loaded 2-core machine), so 10 s is a 10× margin, and a run that lost
 * messages ends in 10 s instead of waiting out its whole time budget (half an hour for 128 MiB).
 */
export const COLLECT_STALL_MS = 10_000
/** How often a waiting receiver checks for that stall. */
const STALL_CHECK_MS = 500
const ROUTE_WAIT_MS = 30_000

export class BenchNode {
  private libp2p: Libp2p | undefined
  private overlay: OverlayNode | undefined
  private outbound: Stream | undefined
  private overlayTarget: string | undefined
  // receiver state
  private expected = 0
  private received = 0
  private receivedBytes = 0
  private latenciesUs: number[] | undefined
  private endNs = 0n
  /** When the last message (or the arming) was, for the stall deadline (performance.now() ms). */
  private progressMs = performance.now()
  private onDone: (() => void) | undefined
  private failure: Error | undefined
  // usage
  private cpuMark = process.cpuUsage()
  private rss = { start: 0, peak: 0 }
  private sampler: ReturnType<typeof setInterval> | undefined
  private profiler: { session: Session; file: string } | undefined
  /** Phoenix nodes started by `crowd`: many neighbours of one node, in this one process. */
  private readonly crowdNodes: OverlayNode[] = []

  async start(spec: NodeSpec): Promise<Started> {
    if (this.libp2p !== undefined || this.overlay !== undefined) throw new Error('start: this bench node already runs a node; stop it first')
    if (spec.stack === 'phoenix') {
      this.overlay = await startOverlayNode({ listen: spec.listen, hubs: spec.hubs, names: spec.names })
      this.overlay.onMessages(
        (message) => this.arrived(stampOf(message.head), message.bytes),
        (error) => this.fail(error),
      )
      return { peerId: this.overlay.peerId, addresses: this.overlay.addresses }
    }
    const libp2p = spec.stack === 'bare' ? await bareNode(spec.listen) : spec.stack === 'relay-server' ? await relayServerNode(spec.listen) : await relayClientNode(spec.relayAddress)
    this.libp2p = libp2p
    await libp2p.handle(SINK_PROTOCOL, (stream) => this.sink(stream), { runOnLimitedConnection: true })
    if (spec.stack === 'bare' && spec.relay !== undefined) {
      const { kind, next, nextProtocol } = spec.relay
      await libp2p.handle(RELAY_PROTOCOL[kind], async (inbound) => {
        inbound.maxReadBufferLength = READ_BUFFER_BYTES_MAX
        const outbound = await libp2p.dialProtocol(multiaddr(next), nextProtocol, { runOnLimitedConnection: true })
        if (kind === 'pipe') itPipeRelay(inbound, outbound)
        else pauseResumeRelay(inbound, outbound)
      })
    }
    let addresses = libp2p.getMultiaddrs().map((ma) => ma.toString())
    if (spec.stack === 'relay-client' && spec.relayAddress !== undefined) addresses = await this.circuitAddresses(libp2p)
    return { peerId: libp2p.peerId.toString(), addresses }
  }

  /** A relay client's circuit address appears once its reservation on the relay is made. */
  private async circuitAddresses(libp2p: Libp2p): Promise<string[]> {
    const deadline = Date.now() + CIRCUIT_ADDRESS_WAIT_MS
    for (;;) {
      const circuit = libp2p.getMultiaddrs().map((ma) => ma.toString()).filter((a) => a.includes('/p2p-circuit'))
      if (circuit.length > 0) return circuit
      if (Date.now() > deadline) throw new Error(`no circuit relay reservation within ${CIRCUIT_ADDRESS_WAIT_MS} ms`)
      await sleep(20)
    }
  }

  private sink(stream: Stream): void {
    stream.maxReadBufferLength = READ_BUFFER_BYTES_MAX
    const reader = new MessageReader((stampNs, bytes) => this.arrived(stampNs, bytes))
    stream.addEventListener('message', (event) => {
      try {
        reader.push(event.data)
      } catch (error) {
        this.fail(error as Error)
        stream.abort(error as Error)
      }
    })
  }

  private arrived(stampNs: bigint, bytes: number): void {
    const now = nowNs()
    this.received++
    this.receivedBytes += bytes
    this.progressMs = performance.now()
    this.latenciesUs?.push(Number(now - stampNs) / 1000)
    if (this.received === this.expected) {
      this.endNs = now
      this.onDone?.()
    }
  }

  private fail(error: Error): void {
    this.failure ??= error
    this.onDone?.()
  }

  /** Receiver: count the next `messages` messages from now on (with their latencies if asked). */
  arm(params: { messages: number; latencies: boolean }): void {
    this.expected = params.messages
    this.received = 0
    this.receivedBytes = 0
    this.latenciesUs = params.latencies ? [] : undefined
    this.failure = undefined
    this.progressMs = performance.now()
  }

  /**
   * Receiver: resolves once the armed count has arrived. Fails, saying how many arrived, after
   * `timeoutMs` in all or once no message has come for `stallMs` (COLLECT_STALL_MS by default):
   * never waits forever for messages that were refused or lost on the way.
   */
  async collect(params: { timeoutMs: number; stallMs?: number }): Promise<Received> {
    const stallMs = params.stallMs ?? COLLECT_STALL_MS
    if (this.received < this.expected && this.failure === undefined) {
      const startedMs = performance.now()
      await new Promise<void>((resolve, reject) => {
        const check = setInterval(() => {
          const now = performance.now()
          const why = now - startedMs >= params.timeoutMs ? `after ${params.timeoutMs} ms` : now - this.progressMs >= stallMs ? `and none for ${stallMs} ms` : undefined
          if (why === undefined) return
          clearInterval(check)
          this.onDone = undefined
          reject(new Error(`receiver: ${this.received} of ${this.expected} messages (${this.expected - this.received} missing) ${why}`))
        }, Math.min(STALL_CHECK_MS, stallMs, params.timeoutMs))
        this.onDone = () => {
          clearInterval(check)
          resolve()
        }
      })
      this.onDone = undefined
    }
    if (this.failure !== undefined) throw this.failure
    return { endNs: this.endNs, messages: this.received, bytes: this.receivedBytes, latenciesUs: this.latenciesUs ?? [] }
  }

  /** Sender: its sends refused on the way so far, by reason (empty for a path without Phoenix). */
  refusals(): Record<string, number> {
    return this.overlay?.refusals() ?? {}
  }

  /** Sender: opens the path (a stream, or waits for the route) and sends one smallest message through it. */
  async open(target: Target): Promise<void> {
    if ('name' in target) {
      const overlay = this.need(this.overlay, 'a Phoenix node')
      const deadline = Date.now() + ROUTE_WAIT_MS
      while (overlay.hopsTo(target.name) !== target.hops) {
        if (Date.now() > deadline) throw new Error(`no ${target.hops}-hop route to ${target.name} within ${ROUTE_WAIT_MS} ms (have ${overlay.hopsTo(target.name)})`)
        await sleep(20)
      }
      this.overlayTarget = target.name
    } else {
      const libp2p = this.need(this.libp2p, 'a libp2p node')
      this.outbound = await libp2p.dialProtocol(multiaddr(target.address), target.protocol, { runOnLimitedConnection: true })
    }
    await this.sendOne(makeMessage(MESSAGE_BYTES_MIN, nowNs(), this.overlayTarget === undefined))
  }

  private async sendOne(framedOrNot: Uint8Array): Promise<void> {
    if (this.overlayTarget !== undefined) return this.need(this.overlay, 'a Phoenix node').send(this.overlayTarget, framedOrNot)
    const stream = this.need(this.outbound, 'an open stream (call open first)')
    if (!stream.send(framedOrNot)) await drained(stream)
  }

  /**
   * Sender: `messages` messages of `messageBytes`, as fast as backpressure allows. One buffer is
   * sent again and again (every transport here copies or encrypts it before it lets go), stamped
   * with the start: a latency probe sends one message at a time.
   */
  async send(params: { messageBytes: number; messages: number }): Promise<{ startNs: bigint }> {
    const startNs = nowNs()
    const message = makeMessage(params.messageBytes, startNs, this.overlayTarget === undefined)
    for (let i = 0; i < params.messages; i++) await this.sendOne(message)
    return { startNs }
  }

  /**
   * Starts counting this process's CPU time and sampling its resident memory every `rssSampleMs`
   * (0: only at the start and at `report`, since sampling costs the process some CPU);
   * with `profileFile`, also V8's CPU profiler (the `--cpu-prof` profiler, through the inspector,
   * so the profile holds this window only and not the process's start-up), written by `report`.
   */
  async mark(params: { rssSampleMs: number; profileFile?: string }): Promise<void> {
    if (params.profileFile !== undefined) {
      const session = new Session()
      session.connect()
      await session.post('Profiler.enable')
      await session.post('Profiler.start')
      this.profiler = { session, file: params.profileFile }
    }
    clearInterval(this.sampler)
    this.cpuMark = process.cpuUsage()
    const rss = process.memoryUsage.rss()
    this.rss = { start: rss, peak: rss }
    if (params.rssSampleMs > 0) this.sampler = setInterval(() => (this.rss.peak = Math.max(this.rss.peak, process.memoryUsage.rss())), params.rssSampleMs)
  }

  async report(): Promise<Usage> {
    clearInterval(this.sampler)
    this.sampler = undefined
    const cpu = process.cpuUsage(this.cpuMark)
    const rss = process.memoryUsage.rss()
    if (this.profiler !== undefined) {
      const { session, file } = this.profiler
      this.profiler = undefined
      const { profile } = await session.post('Profiler.stop')
      session.disconnect()
      writeFileSync(file, JSON.stringify(profile))
    }
    return { cpuUs: cpu.user + cpu.system, rssStartBytes: this.rss.start, rssPeakBytes: Math.max(this.rss.peak, rss), rssEndBytes: rss }
  }

  /** Starts `count` more Phoenix nodes here, each with `hub` as its only neighbour, named `<prefix><index>`. */
  async crowd(params: { count: number; hub: string; prefix: string }): Promise<string[]> {
    const names: string[] = []
    for (let i = 0; i < params.count; i++) {
      const name = `${params.prefix}${this.crowdNodes.length}`
      this.crowdNodes.push(await startOverlayNode({ listen: ['/ip4/127.0.0.1/tcp/0'], hubs: [params.hub], names: [name] }))
      names.push(name)
    }
    return names
  }

  /** Waits until this node has a route of `hops` hops to every name. */
  async waitRoutes(params: { names: string[]; hops: number; timeoutMs: number }): Promise<void> {
    const overlay = this.need(this.overlay, 'a Phoenix node')
    const deadline = Date.now() + params.timeoutMs
    for (;;) {
      const missing = params.names.filter((name) => overlay.hopsTo(name) !== params.hops)
      if (missing.length === 0) return
      if (Date.now() > deadline) throw new Error(`no ${params.hops}-hop route to ${missing.length} of ${params.names.length} names (e.g. ${missing[0]}) within ${params.timeoutMs} ms`)
      await sleep(50)
    }
  }

  /**
   * This process's memory: the median of `samples` readings `intervalMs` apart, each after a full
   * garbage collection when the process runs with --expose-gc.
   */
  async memory(params: { samples: number; intervalMs: number }): Promise<{ rssBytes: number; heapUsedBytes: number; externalBytes: number; collected: boolean }> {
    const gc = (globalThis as { gc?: () => void }).gc
    const readings: NodeJS.MemoryUsage[] = []
    for (let i = 0; i < params.samples; i++) {
      gc?.()
      readings.push(process.memoryUsage())
      await sleep(params.intervalMs)
    }
    const mid = (pick: (m: NodeJS.MemoryUsage) => number) => readings.map(pick).sort((a, b) => a - b)[Math.floor(readings.length / 2)]!
    return { rssBytes: mid((m) => m.rss), heapUsedBytes: mid((m) => m.heapUsed), externalBytes: mid((m) => m.external), collected: gc !== undefined }
  }

  async stop(): Promise<void> {
    await Promise.all(this.crowdNodes.splice(0).map((n) => n.stop()))
    clearInterval(this.sampler)
    this.outbound?.abort(new Error('benchmark case over'))
    this.outbound = undefined
    this.overlayTarget = undefined
    await this.overlay?.stop()
    await this.libp2p?.stop()
    this.overlay = undefined
    this.libp2p = undefined
    this.arm({ messages: 0, latencies: false })
  }

  private need<T>(value: T | undefined, what: string): T {
    if (value === undefined) throw new Error(`this bench node has no ${what}`)
    return value
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** The node's methods the driver may call, by name (the IPC protocol). */
export type NodeMethods = Pick<BenchNode, 'start' | 'arm' | 'collect' | 'open' | 'send' | 'mark' | 'report' | 'stop' | 'crowd' | 'waitRoutes' | 'memory' | 'refusals'>
export type MethodName = keyof NodeMethods
