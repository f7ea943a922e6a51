import type { ComponentLogger, Connection, Libp2pEvents, Logger, PeerId, PrivateKey, Startable, Stream, TypedEventTarget } from '@libp2p/interface'
import type { AddressManager, ConnectionManager, Registrar } from '@libp2p/interface-internal'
import { peerIdFromString } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'
import { PhoenixCore, PhoenixError, type CoreLimits, type CoreTiming, type Effect, type RecordAuthority, type RouteView, type RoutingMode, type StepResult } from '@phoenix-overlay/core'
import { WireError, decodeFrame, encodeFrame, encodeUpdateFrames, type AckFrame, type DataFrame, type Frame, type UndeliverableFrame, type UndeliverableReason } from '@phoenix-overlay/wire'
import { PHOENIX_PROTOCOL, TRANSPORT_LIMITS, TRANSPORT_TIMING, type TransportLimits, type TransportTiming } from './constants.ts'
import { PhoenixTransportError } from './errors.ts'
import { NeighbourLink } from './link.ts'
import { checkLivenessTiming } from './liveness.ts'
import { Metrics } from './metrics.ts'

export interface PhoenixInit {
  /** Multiaddrs known at start (the hubs); everything else is discovered. */
  hubs?: string[]
  /** Logical names this node answers to (more can be added at run time). */
  names?: string[]
  /** 'optimized' (default) or 'naive' DSDV. */
  mode?: RoutingMode
  /** Dial addresses learned from routing updates (default true). Off: only the hubs are dialled (an "offline" configuration that lists every connection). */
  discovery?: boolean
  /** Sign our record and verify everyone's with their peer ids' keys (default true). */
  signRecords?: boolean
  protocol?: string
  limits?: Partial<TransportLimits>
  timing?: Partial<TransportTiming>
  core?: { limits?: Partial<CoreLimits>; timing?: Partial<CoreTiming> }
}

export interface PhoenixComponents {
  peerId: PeerId
  privateKey: PrivateKey
  registrar: Registrar
  connectionManager: ConnectionManager
  addressManager: AddressManager
  logger: ComponentLogger
  events: TypedEventTarget<Libp2pEvents>
}

export interface ReceivedMessage {
  /** Node id (peer id) of the sender. */
  readonly from: string
  /** Which of our names it was sent to. */
  readonly name: string
  readonly payload: Uint8Array
  /** Hops it travelled. */
  readonly hops: number
}

/** Why a neighbour was disconnected for breaking the protocol (the `peer:dropped` event). */
export interface PeerDropped {
  readonly peer: string
  /** 'wire': bytes that are not a valid frame; 'routing': an update the core refused (a forged or unsigned record, a flood, a malformed entry). */
  readonly kind: 'wire' | 'routing'
  readonly reason: string
}

export interface SendOptions {
  /** Resolve only once the destination acknowledges receipt (default false: once handed to the next hop). */
  ack?: boolean
  /** How long to wait for a route to the name to appear (default TRANSPORT_TIMING.routeWaitMs). */
  routeWaitMs?: number
  /** How long to wait for the acknowledgement (default TRANSPORT_TIMING.ackTimeoutMs). */
  ackTimeoutMs?: number
}

/**
 * One Phoenix overlay node on libp2p: the pure routing core driven by real connections. Each
 * neighbour has one long-lived stream carrying routing updates and routed messages.
 */
export class PhoenixNode extends EventTarget implements Startable {
  readonly [Symbol.toStringTag] = '@phoenix-overlay/transport'
  private core: PhoenixCore | undefined
  private readonly log: Logger
  private readonly limits: TransportLimits
  private readonly timing: TransportTiming
  private readonly protocol: string
  private readonly links = new Map<string, NeighbourLink>()
  private readonly epochMs = performance.now()
  private drainScheduled = false
  private wakeTimer: ReturnType<typeof setTimeout> | undefined
  private nextMessageId = 1
  private readonly pendingAcks = new Map<number, { resolve: () => void; reject: (e: Error) => void; timer: ReturnType<typeof setTimeout> }>()
  private readonly routeWaiters = new Set<() => void>()
  private readonly iterators = new Set<{ push: (m: ReceivedMessage) => void }>()
  private stopping = false
  readonly metrics = new Metrics()

  constructor(
    private readonly components: PhoenixComponents,
    private readonly init: PhoenixInit = {},
  ) {
    super()
    this.log = components.logger.forComponent('phoenix:node')
    this.limits = { ...TRANSPORT_LIMITS, ...init.limits }
    this.timing = { ...TRANSPORT_TIMING, ...init.timing }
    checkLivenessTiming(this.timing)
    this.protocol = init.protocol ?? PHOENIX_PROTOCOL
    for (const hub of init.hubs ?? []) {
      try {
        multiaddr(hub)
      } catch (error) {
        throw new PhoenixTransportError('INVALID_INPUT', `hub ${JSON.stringify(hub)} is not a multiaddr: ${(error as Error).message}`)
      }
    }
  }

  get id(): string {
    return this.components.peerId.toString()
  }

  private now(): number {
    return performance.now() - this.epochMs
  }

  private get routing(): PhoenixCore {
    if (this.core === undefined) throw new PhoenixTransportError('NOT_STARTED', 'the Phoenix node is not started')
    return this.core
  }

  async start(): Promise<void> {
    this.stopping = false
    this.core = new PhoenixCore({
      id: this.id,
      addresses: this.ownAddresses(),
      hubs: this.init.hubs ?? [],
      names: this.init.names ?? [],
      mode: this.init.mode ?? 'optimized',
      discovery: this.init.discovery ?? true,
      ...(this.init.signRecords === false ? {} : { records: this.recordAuthority() }),
      ...(this.init.core?.limits ? { limits: this.init.core.limits } : {}),
      ...(this.init.core?.timing ? { timing: this.init.core.timing } : {}),
    })
    // One stream per neighbour, plus one while a simultaneous open is being resolved.
    await this.components.registrar.handle(this.protocol, (stream, connection) => this.attach(stream, connection, undefined), {
      maxInboundStreams: 2,
      maxOutboundStreams: 2,
    })
  }

  afterStart(): void {
    this.components.events.addEventListener('self:peer:update', this.onSelfUpdate)
    this.onSelfUpdate()
  }

  /** Our listen addresses are known only once transports listen, and may change: the record follows. */
  private readonly onSelfUpdate = (): void => {
    const core = this.core
    if (core === undefined || core.hasLeft) return
    const addresses = this.ownAddresses()
    if (addresses.length > 0 && addresses.join() !== core.addresses.join()) core.setAddresses(addresses)
    this.scheduleDrain()
  }

  /** Graceful leave: neighbours hear that we are gone before the connections close. */
  async stop(): Promise<void> {
    if (this.core === undefined || this.stopping) return
    this.stopping = true
    this.components.events.removeEventListener('self:peer:update', this.onSelfUpdate)
    clearTimeout(this.wakeTimer)
    if (!this.core.hasLeft) this.perform(this.core.leave(this.now()))
    await Promise.all([...this.links.values()].map((link) => link.close('leaving')))
    await this.components.registrar.unhandle(this.protocol).catch(() => undefined)
    for (const [, pending] of this.pendingAcks) {
      clearTimeout(pending.timer)
      pending.reject(new PhoenixTransportError('NOT_STARTED', 'the node stopped before the acknowledgement arrived'))
    }
    this.pendingAcks.clear()
    for (const wake of this.routeWaiters) wake()
  }

  private ownAddresses(): string[] {
    return this.components.addressManager
      .getAddresses()
      .map((ma) => ma.toString())
      .slice(0, 16)
  }

  /** Signs with our libp2p key; verifies a record against the key its node id (peer id) names. */
  private recordAuthority(): RecordAuthority {
    const key = this.components.privateKey
    return {
      sign: (payload) => {
        const signature = key.sign(payload)
        if (signature instanceof Promise) throw new PhoenixTransportError('INVALID_INPUT', `records need a key that signs synchronously (Ed25519); this node has ${key.type}`)
        return signature
      },
      verify: (node, payload, signature) => {
        try {
          const publicKey = peerIdFromString(node).publicKey
          const ok = publicKey?.verify(payload, signature)
          return ok === true
        } catch {
          return false
        }
      },
    }
  }

  // ------------------------------------------------------------------ the core's loop

  private scheduleDrain(): void {
    if (this.drainScheduled || this.core === undefined) return
    this.drainScheduled = true
    setImmediate(() => this.drain())
  }

  private drain(): void {
    this.drainScheduled = false
    const core = this.core
    if (core === undefined || core.hasLeft) return
    const now = this.now()
    let routesMayHaveChanged = false
    for (let steps = 0; core.hasWork(now); steps++) {
      if (steps === 256) {
        // Let I/O in: a node with a large backlog must not starve its sockets.
        this.scheduleDrain()
        break
      }
      const result = core.step(now)
      if (result.kind === 'apply') routesMayHaveChanged = true
      this.perform(result.effects)
    }
    for (const link of this.links.values()) link.resume()
    if (routesMayHaveChanged) for (const wake of [...this.routeWaiters]) wake()
    const idle: StepResult = core.step(now)
    this.perform(idle.effects)
    clearTimeout(this.wakeTimer)
    if (idle.wakeAtMs !== undefined) this.wakeTimer = setTimeout(() => this.scheduleDrain(), Math.max(1, idle.wakeAtMs - now))
  }

  private perform(effects: readonly Effect[]): void {
    for (const effect of effects) {
      if (effect.type === 'dial') this.dial(effect.address)
      else if (effect.type === 'close') this.links.get(effect.peer)?.abort(effect.reason)
      else {
        const link = this.links.get(effect.to)
        if (link === undefined) continue // gone already: the core hears connectionDown
        for (const frame of encodeUpdateFrames(effect.message)) {
          this.metrics.count('updates_sent')
          if (!link.send(frame)) {
            // Routing updates are never dropped: a neighbour that cannot take them is disconnected,
            // and the core resends its table when the connection comes back.
            link.abort('outbound queue full while sending a routing update')
            break
          }
        }
        this.metrics.count('update_entries_sent', effect.message.entries.length)
      }
    }
  }

  private dial(address: string): void {
    const core = this.routing
    let target
    try {
      target = multiaddr(address)
    } catch {
      core.dialFailed(address, this.now())
      return
    }
    this.metrics.count('dials_started')
    const signal = AbortSignal.timeout(this.timing.dialTimeoutMs)
    this.components.connectionManager
      .openConnection(target, { signal })
      .then(async (connection) => this.attach(await connection.newStream(this.protocol, { signal }), connection, address))
      .catch((error: Error) => {
        this.metrics.count('dials_failed')
        this.log('dial %s failed: %s', address, error.message)
        if (this.core === core && !core.hasLeft) {
          core.dialFailed(address, this.now())
          this.scheduleDrain()
        }
      })
  }

  /** A stream to a neighbour opened (by us or by it). Exactly one is kept per neighbour. */
  private attach(stream: Stream, connection: Connection, dialledAddress: string | undefined): void {
    const core = this.core
    if (core === undefined || this.stopping) {
      stream.abort(new Error('node is stopping'))
      return
    }
    const peer = connection.remotePeer.toString()
    const existing = this.links.get(peer)
    if (existing !== undefined && existing.isOpen) {
      // Both sides opened a stream at once: keep the one opened by the smaller peer id, the
      // same choice on both sides. Replacing a link is a connection down and up for the core,
      // so nothing sent on the old one can be lost unnoticed.
      const opener = stream.direction === 'outbound' ? this.id : peer
      const smaller = this.id < peer ? this.id : peer
      const existingOpener = existing.stream.direction === 'outbound' ? this.id : peer
      if (opener !== smaller || existingOpener === smaller) {
        stream.abort(new Error('duplicate Phoenix stream'))
        if (dialledAddress !== undefined) core.connectionUp(peer, this.now(), dialledAddress)
        return
      }
      existing.abort('replaced by the stream opened by the smaller peer id')
    }
    const link: NeighbourLink = new NeighbourLink(
      peer,
      stream,
      { outboundBytesMax: this.limits.outboundBytesMaxPerNeighbour, outboundFramesMax: this.limits.outboundFramesMaxPerNeighbour, inboundBytesMax: this.limits.inboundBytesMaxPerNeighbour },
      this.log,
      (bytes): boolean => this.onFrame(link, bytes),
      (closed, reason) => this.onLinkClosed(closed, reason),
      (bad, reason) => this.dropPeer(bad, 'wire', reason),
      () => this.scheduleDrain(),
      {
        timing: this.timing,
        onUnresponsive: (_dead, reason) => {
          this.metrics.count('neighbours_unresponsive')
          connection.abort(new Error(reason))
        },
      },
    )
    this.links.set(peer, link)
    core.connectionUp(peer, this.now(), dialledAddress)
    this.metrics.count('neighbours_up')
    this.scheduleDrain()
  }

  private onLinkClosed(link: NeighbourLink, reason: string): void {
    this.metrics.count('bytes_sent', link.bytesSent)
    this.metrics.count('bytes_received', link.bytesReceived)
    if (this.links.get(link.peer) !== link) return
    this.links.delete(link.peer)
    this.log('neighbour %s down: %s', link.peer, reason)
    this.metrics.count('neighbours_down')
    if (this.core !== undefined && !this.core.hasLeft) {
      this.core.connectionDown(link.peer, this.now())
      this.scheduleDrain()
    }
  }

  // ------------------------------------------------------------------ frames in

  /**
   * Disconnects a neighbour that broke the protocol, saying why in the log, in the metrics
   * (`peers_dropped`, and `frames_rejected` for bytes that did not decode) and in a `peer:dropped`
   * event. It may connect again; the core polices it afresh (its limits and its records).
   */
  private dropPeer(link: NeighbourLink, kind: PeerDropped['kind'], reason: string): void {
    if (!link.isOpen) return
    this.metrics.count('peers_dropped')
    if (kind === 'wire') this.metrics.count('frames_rejected')
    this.log.error('dropping neighbour %s (%s): %s', link.peer, kind, reason)
    link.abort(reason)
    this.dispatchEvent(new CustomEvent<PeerDropped>('peer:dropped', { detail: { peer: link.peer, kind, reason } }))
  }

  private onFrame(link: NeighbourLink, bytes: Uint8Array): boolean {
    const core = this.core
    if (core === undefined || core.hasLeft || !link.isOpen) return true
    let frame: Frame
    try {
      frame = decodeFrame(bytes)
    } catch (error) {
      this.dropPeer(link, 'wire', `undecodable frame: ${error instanceof WireError ? error.message : String(error)}`)
      return true
    }
    switch (frame.kind) {
      case 'update': {
        let accepted: boolean
        try {
          accepted = core.receive(link.peer, frame.update, this.now())
        } catch (error) {
          this.dropPeer(link, 'routing', error instanceof PhoenixError ? error.message : String(error))
          return true
        }
        if (!accepted) return false
        this.metrics.count('updates_received')
        this.scheduleDrain()
        return true
      }
      case 'data': {
        // Hop-by-hop backpressure: while the queue toward the next hop is full, stop reading
        // from this neighbour (the frame is retried when that queue drains), so a fast sender
        // meets QUEUE_FULL at its own first hop instead of losing frames in the middle.
        const decision = core.forward(frame.data.destination, frame.data.hopLimit)
        if (decision.action === 'forward') {
          const next = this.links.get(decision.nextHop)
          if (next !== undefined && !next.hasRoomFor(bytes.length)) return false
        }
        this.routeData(frame.data, link.peer)
        return true
      }
      case 'ack':
      case 'undeliverable':
        this.routeControl(frame)
        return true
      case 'probe':
        link.onProbe(frame.probe)
        return true
    }
  }

  /**
   * The core's forwarding decision, except that a node we have a link to is reachable in one hop
   * even before its record has reached our table (it connected a moment ago): an ack to a node
   * that just sent us its first message must not be dropped for want of a route.
   */
  private decide(destination: string, hopLimit: number): ReturnType<PhoenixCore['forward']> {
    const decision = this.routing.forward(destination, hopLimit)
    if (decision.action === 'drop' && decision.reason === 'no-route' && hopLimit > 0 && this.links.has(destination)) {
      return { action: 'forward', nextHop: destination, hopLimit: hopLimit - 1 }
    }
    return decision
  }

  /** A data frame here: deliver it if it is for us, else pass it on or say why not. */
  private routeData(data: DataFrame, fromPeer: string | undefined): void {
    const decision = this.decide(data.destination, data.hopLimit)
    if (decision.action === 'deliver') {
      if (data.name !== '' && !this.routing.names.includes(data.name)) return this.bounce(data, 'no-such-name')
      if (!this.deliver({ from: data.source, name: data.name, payload: data.payload, hops: this.routing.limits.hopLimit - data.hopLimit })) return this.bounce(data, 'queue-full')
      if (data.ackRequested) this.routeControl({ kind: 'ack', ack: { source: this.id, destination: data.source, hopLimit: this.routing.limits.hopLimit, messageId: data.messageId } })
      return
    }
    if (decision.action === 'drop') {
      this.metrics.count(`dropped_${decision.reason.replace('-', '_')}`)
      if (fromPeer === undefined) throw new PhoenixTransportError('NO_ROUTE', `no route to node ${data.destination}`)
      return this.bounce(data, decision.reason)
    }
    const link = this.links.get(decision.nextHop)
    const frame = encodeFrame({ kind: 'data', data: { ...data, hopLimit: decision.hopLimit } })
    if (link === undefined || !link.send(frame)) {
      this.metrics.count('dropped_queue_full')
      if (fromPeer === undefined) throw new PhoenixTransportError('QUEUE_FULL', `the queue toward ${decision.nextHop} is full (${this.limits.outboundBytesMaxPerNeighbour} bytes); try again later`)
      return this.bounce(data, 'queue-full')
    }
    this.metrics.count(fromPeer === undefined ? 'messages_sent' : 'messages_forwarded')
  }

  /** Tells a data frame's source that it was dropped here, and why. */
  private bounce(data: DataFrame, reason: UndeliverableReason): void {
    this.metrics.count('messages_undeliverable')
    this.routeControl({ kind: 'undeliverable', undeliverable: { source: this.id, destination: data.source, hopLimit: this.routing.limits.hopLimit, messageId: data.messageId, reason } })
  }

  /** Acks and undeliverable notices travel like data, toward the original source; they are never bounced. */
  private routeControl(frame: Extract<Frame, { kind: 'ack' | 'undeliverable' }>): void {
    const header: AckFrame | UndeliverableFrame = frame.kind === 'ack' ? frame.ack : frame.undeliverable
    const decision = this.decide(header.destination, header.hopLimit)
    if (decision.action === 'deliver') {
      const pending = this.pendingAcks.get(header.messageId)
      if (pending === undefined) {
        // A send without an acknowledgement was dropped on the way: say so rather than nothing.
        if (frame.kind === 'undeliverable') {
          this.metrics.count('sends_undeliverable')
          this.dispatchEvent(new CustomEvent<UndeliverableFrame>('undeliverable', { detail: frame.undeliverable }))
        }
        return
      }
      this.pendingAcks.delete(header.messageId)
      clearTimeout(pending.timer)
      if (frame.kind === 'ack') pending.resolve()
      else pending.reject(new PhoenixTransportError('UNDELIVERABLE', `node ${header.source} could not deliver the message: ${(header as UndeliverableFrame).reason}`))
      return
    }
    if (decision.action === 'drop') {
      this.metrics.count('control_dropped')
      return
    }
    const moved: Frame = frame.kind === 'ack' ? { kind: 'ack', ack: { ...frame.ack, hopLimit: decision.hopLimit } } : { kind: 'undeliverable', undeliverable: { ...frame.undeliverable, hopLimit: decision.hopLimit } }
    if (!this.links.get(decision.nextHop)?.send(encodeFrame(moved))) this.metrics.count('control_dropped')
  }

  private deliver(message: ReceivedMessage): boolean {
    for (const iterator of this.iterators) iterator.push(message)
    this.metrics.count('messages_delivered')
    this.dispatchEvent(new CustomEvent<ReceivedMessage>('message', { detail: message }))
    return true
  }

  // ------------------------------------------------------------------ the API

  /**
   * Sends `payload` to the node that owns `name`, routed hop by hop. Waits up to `routeWaitMs` for
   * a route while tables converge; with `ack`, resolves only once the destination has it.
   */
  async send(name: string, payload: Uint8Array, options: SendOptions = {}): Promise<void> {
    const core = this.routing
    if (this.stopping) throw new PhoenixTransportError('NOT_STARTED', 'the node is stopping')
    const route = core.resolve(name) ?? (await this.waitForRoute(name, options.routeWaitMs ?? this.timing.routeWaitMs))
    const messageId = this.nextMessageId
    this.nextMessageId = (this.nextMessageId + 1) >>> 0 || 1
    const data: DataFrame = { source: this.id, destination: route.owner, name, hopLimit: core.limits.hopLimit, messageId, ackRequested: options.ack === true, payload }
    if (route.owner === this.id) {
      this.deliver({ from: this.id, name, payload, hops: 0 })
      return
    }
    if (options.ack !== true) {
      this.routeData(data, undefined)
      return
    }
    if (this.pendingAcks.size >= this.limits.pendingAcksMax) {
      throw new PhoenixTransportError('QUEUE_FULL', `${this.pendingAcks.size} sends already wait for acknowledgements (pendingAcksMax)`)
    }
    const acknowledged = new Promise<void>((resolve, reject) => {
      const timeoutMs = options.ackTimeoutMs ?? this.timing.ackTimeoutMs
      const timer = setTimeout(() => {
        this.pendingAcks.delete(messageId)
        reject(new PhoenixTransportError('ACK_TIMEOUT', `no acknowledgement from ${route.owner} for "${name}" within ${timeoutMs} ms`))
      }, timeoutMs)
      this.pendingAcks.set(messageId, { resolve, reject, timer })
    })
    try {
      this.routeData(data, undefined)
    } catch (error) {
      const pending = this.pendingAcks.get(messageId)
      if (pending !== undefined) clearTimeout(pending.timer)
      this.pendingAcks.delete(messageId)
      throw error
    }
    return acknowledged
  }

  private waitForRoute(name: string, timeoutMs: number): Promise<{ owner: string; nextHop: string; nhops: number }> {
    if (this.routeWaiters.size >= this.limits.pendingRouteWaitsMax) {
      return Promise.reject(new PhoenixTransportError('QUEUE_FULL', `${this.routeWaiters.size} sends already wait for routes (pendingRouteWaitsMax)`))
    }
    return new Promise((resolve, reject) => {
      const check = () => {
        const route = this.core?.resolve(name)
        if (route !== undefined) {
          done()
          resolve(route)
        } else if (this.stopping) {
          done()
          reject(new PhoenixTransportError('NOT_STARTED', 'the node stopped while waiting for a route'))
        }
      }
      const timer = setTimeout(() => {
        done()
        reject(new PhoenixTransportError('NO_ROUTE', `no route to a node named "${name}" after waiting ${timeoutMs} ms`))
      }, timeoutMs)
      const done = () => {
        clearTimeout(timer)
        this.routeWaiters.delete(check)
      }
      this.routeWaiters.add(check)
    })
  }

  /** Messages delivered to this node, as an async iterator (bounded: a consumer that falls behind fails). */
  messages(): AsyncIterableIterator<ReceivedMessage> {
    const buffer: ReceivedMessage[] = []
    let wake: (() => void) | undefined
    let failure: Error | undefined
    const entry = {
      push: (message: ReceivedMessage) => {
        if (buffer.length >= this.limits.receiveBufferMax) {
          failure ??= new PhoenixTransportError('RECEIVER_TOO_SLOW', `more than receiveBufferMax (${this.limits.receiveBufferMax}) messages waited for this iterator`)
        } else buffer.push(message)
        wake?.()
      },
    }
    this.iterators.add(entry)
    const iterators = this.iterators
    return {
      [Symbol.asyncIterator]() {
        return this
      },
      async next(): Promise<IteratorResult<ReceivedMessage>> {
        while (buffer.length === 0) {
          if (failure !== undefined) throw failure
          await new Promise<void>((resolve) => (wake = resolve))
        }
        return { value: buffer.shift()!, done: false }
      },
      async return(): Promise<IteratorResult<ReceivedMessage>> {
        iterators.delete(entry)
        return { value: undefined, done: true }
      },
    }
  }

  /** Adds a hub (or, with discovery off, a connection to open) at run time. */
  addHub(address: string): void {
    try {
      multiaddr(address)
    } catch (error) {
      throw new PhoenixTransportError('INVALID_INPUT', `hub ${JSON.stringify(address)} is not a multiaddr: ${(error as Error).message}`)
    }
    this.routing.addHub(address)
    this.scheduleDrain()
  }

  addName(name: string): void {
    this.routing.addName(name)
    this.scheduleDrain()
  }

  removeName(name: string): void {
    this.routing.removeName(name)
    this.scheduleDrain()
  }

  get names(): readonly string[] {
    return this.routing.names
  }

  /** Every destination known, reachable or not. */
  routes(): RouteView[] {
    return this.routing.routes()
  }

  resolve(name: string): { owner: string; nextHop: string; nhops: number } | undefined {
    return this.routing.resolve(name)
  }

  /** Neighbours: peers with an open Phoenix stream. */
  peers(): string[] {
    return [...this.links.keys()]
  }

  /** Prometheus text exposition of this node's counters and gauges. */
  metricsText(): string {
    const core = this.routing
    const stats = core.stats()
    let queued = 0
    let queuedBytes = 0
    let streamBytes = 0
    for (const link of this.links.values()) {
      queued += link.queuedFrames
      queuedBytes += link.queuedBytesTotal
      streamBytes += link.streamBufferedBytes
    }
    return this.metrics.render({
      routes_reachable: core.routes().filter((r) => r.reachable).length,
      neighbours: this.links.size,
      outbound_frames_queued: queued,
      outbound_bytes_queued: queuedBytes,
      stream_write_buffer_bytes: streamBytes,
      core_entries_received: stats.entriesReceived,
      core_entries_sent: stats.entriesSent,
      core_peers_dropped: stats.peersDropped,
      core_records_verified: stats.recordsVerified,
    })
  }
}

/** The libp2p service factory: `services: { phoenix: phoenix({ hubs, names }) }`. */
export function phoenix(init: PhoenixInit = {}): (components: PhoenixComponents) => PhoenixNode {
  return (components) => new PhoenixNode(components, init)
}
