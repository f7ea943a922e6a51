import { TypedEventEmitter, serviceCapabilities, type EventHandler, type Logger, type Startable } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'
import { PhoenixCore, type RecordAuthority, type RouteView } from '@phoenix-overlay/core'
import { WIRE_LIMITS, sourceHopLimit, type DataFrame } from '@phoenix-overlay/wire'
import type { NameConflict, PhoenixComponents, PhoenixEvents, PhoenixInit, PhoenixService, ReceivedMessage, SendOptions, SendResult } from './api.ts'
import { OWN_ADDRESSES_MAX, PHOENIX_PROTOCOL, TRANSPORT_LIMITS, TRANSPORT_TIMING, type TransportLimits, type TransportTiming } from './constants.ts'
import { PhoenixTransportError, invalidInput } from './errors.ts'
import { receivedMessage } from './inbox.ts'
import { NodeInbox, type BroadcastResult, type CollectiveOptions, type ReduceOptions, type ReduceResult } from './collectives.ts'
import { DialPath } from './dial-path.ts'
import { Jobs } from './jobs.ts'
import { checkInitSettings } from './settings.ts'
import { Metrics } from './metrics.ts'
import type { NodeParts } from './parts.ts'
import { Sends, type Route } from './sends.ts'
import { checkRuntime } from './runtime.ts'
import { Session } from './session.ts'
import { isSshAddress, parseSshAddress } from './ssh-address.ts'
import type { Member, NameChange } from './groups.ts'
import { checkSiteLabel, isReservedName, refuseReservedName, sameSite, siteName, type Topology } from './topology.ts'
import { checkHubMultiaddr, checkInitKeys, checkName, checkNodeOptionShapes, checkSendName, checkSendOptions, coreErrorToTransport } from './validate.ts'

type State = 'stopped' | 'starting' | 'started' | 'leaving'

/**
 * One Phoenix overlay node as a libp2p service: the pure routing core driven by real
 * connections, one long-lived stream per neighbour carrying routing updates and routed messages.
 *
 * Lifecycle (libp2p calls these; calling them yourself is safe too): `start` and `stop` are
 * idempotent and safe in any order. `beforeStop` is the graceful leave (libp2p stops components
 * concurrently, so it must happen before). After `stop` the node is as before `start`: queries
 * answer empty (`routes()`, `peers()`, `nameConflicts()`), `send` and the name and hub changes
 * fail with `NOT_STARTED`, `messages()` iterators end. `start` after `stop` joins afresh.
 */
export class PhoenixNode extends TypedEventEmitter<PhoenixEvents> implements PhoenixService, Startable {
  readonly [Symbol.toStringTag] = '@phoenix-overlay/transport'
  readonly [serviceCapabilities]: string[] = ['@phoenix-overlay/overlay']
  readonly metrics = new Metrics()
  private readonly parts: NodeParts
  private readonly limits: TransportLimits
  private readonly timing: TransportTiming
  private readonly log: Logger
  private readonly inbox: NodeInbox
  private readonly sends: Sends
  private state: State = 'stopped'
  private session: Session | undefined
  private leaving: Promise<void> | undefined
  private starting: Promise<void> | undefined
  private stopping: Promise<void> | undefined
  private readonly jobs: Jobs
  private readonly dialPath: DialPath

  constructor(
    private readonly components: PhoenixComponents,
    private readonly init: PhoenixInit = {},
  ) {
    super()
    this.log = components.logger.forComponent('phoenix:node')
    this.limits = { ...TRANSPORT_LIMITS, ...init.limits }
    this.timing = { ...TRANSPORT_TIMING, ...init.timing }
    checkInitSettings(init)
    if (init.site !== undefined) checkSiteLabel(init.site)
    this.dialPath = new DialPath(init.ssh, init.sitePrefixes, this.metrics)
    for (const hub of init.hubs ?? []) this.checkHub(hub, 'hubs')
    for (const name of init.names ?? []) refuseReservedName('names', name)
    this.inbox = new NodeInbox(this.limits, () => this.listenerCount('message'), (message) => this.safeDispatchEvent('message', { detail: message }))
    this.sends = new Sends(this.limits)
    this.parts = {
      id: components.peerId.toString(),
      components,
      protocol: init.protocol ?? PHOENIX_PROTOCOL,
      limits: this.limits,
      timing: this.timing,
      log: this.log,
      metrics: this.metrics,
      inbox: this.inbox,
      sends: this.sends,
      dialPath: this.dialPath,
      emit: (type, detail) => this.safeDispatchEvent(type, { detail }),
      routesChanged: () => this.jobs.groups.refreshSoon(),
    }
    this.metrics.registerWith(components.metrics, () => this.gauges(), () => this.tallies())
    const emitChange = (change: NameChange) => this.safeDispatchEvent(change.type === 'up' ? 'name:up' : 'name:down', { detail: change })
    this.jobs = new Jobs({ id: this.id, log: this.log, sends: this.sends, inbox: this.inbox, running: (what) => this.running(what), current: () => this.session, emit: emitChange })
  }

  get id(): string {
    return this.parts.id
  }

  /** A `'message'` listener is a consumer: it is handed what waited for one (see inbox.ts). */
  override addEventListener<K extends keyof PhoenixEvents>(type: K, listener: EventHandler<PhoenixEvents[K]> | null, options?: boolean | Parameters<EventTarget['addEventListener']>[2]): void {
    super.addEventListener(type, listener, options)
    if (type === 'message') this.inbox.listenerAdded()
  }

  // ------------------------------------------------------------------ lifecycle

  async start(): Promise<void> {
    // A stop under way finishes first (start() during it resolved at once and left the node stopped).
    await this.stopping
    if (this.state === 'starting') return this.starting
    if (this.state !== 'stopped') return
    this.state = 'starting'
    this.starting = this.startSession().finally(() => (this.starting = undefined))
    return this.starting
  }

  private async startSession(): Promise<void> {
    let session: Session
    try {
      // A missing ssh client or an unusable identity file fails the start, naming the option,
      // rather than every SSH dial later.
      await this.dialPath.start((line) => this.log('%s', line))
      session = new Session(this.parts, this.createCore())
      // One stream per neighbour, plus one while a simultaneous open is being resolved.
      await this.components.registrar.handle(this.parts.protocol, (stream, connection) => session.neighbours.attach(stream, connection, undefined), { maxInboundStreams: 2, maxOutboundStreams: 2 })
    } catch (error) {
      this.state = 'stopped'
      await this.dialPath.stop()
      throw error
    }
    this.session = session
    this.state = 'started'
    this.inbox.reopen()
    this.jobs.start()
  }

  afterStart(): void {
    if (this.state !== 'started') return
    this.components.events.removeEventListener('self:peer:update', this.onSelfUpdate)
    this.components.events.addEventListener('self:peer:update', this.onSelfUpdate)
    this.onSelfUpdate()
  }

  /** The graceful leave (see `Session.leave`): our sends are refused from here on. */
  async beforeStop(): Promise<void> {
    if (this.state === 'leaving') return this.leaving
    if (this.state !== 'started' || this.session === undefined) return
    this.state = 'leaving'
    this.components.events.removeEventListener('self:peer:update', this.onSelfUpdate)
    this.sends.routesChanged() // sends waiting for a route give up now
    this.leaving = this.session.leave().catch((error: unknown) => this.session?.internalError('leaving', error))
    return this.leaving
  }

  async stop(): Promise<void> {
    this.stopping ??= this.stopSession().finally(() => (this.stopping = undefined))
    return this.stopping
  }

  private async stopSession(): Promise<void> {
    if (this.state === 'starting') await this.starting?.catch(() => undefined)
    if (this.state === 'stopped') return
    await this.beforeStop()
    const session = this.session
    this.session = undefined
    this.leaving = undefined
    this.state = 'stopped'
    session?.driver.stop()
    this.jobs.stop()
    await this.dialPath.stop()
    await this.components.registrar.unhandle(this.parts.protocol).catch(() => undefined)
    this.sends.failAll()
    this.inbox.endAll()
  }

  private createCore(): PhoenixCore {
    const { init } = this
    // The core's refusal of a name or hub names its config (`config.names: "a" is given twice`): as the user's option, with `field`.
    return coreErrorToTransport('options', () => new PhoenixCore({
      id: this.id,
      addresses: this.ownAddresses(),
      hubs: init.hubs ?? [],
      names: [...(init.names ?? []), ...(init.site === undefined ? [] : [siteName(init.site, this.id)])],
      mode: init.mode ?? 'optimized',
      discovery: init.discovery ?? true,
      ...(init.signRecords === false ? {} : { records: this.recordAuthority() }),
      ...(init.core?.limits ? { limits: init.core.limits } : {}),
      // The core holds back the larger end's dial of a pair (dialDeferMs): a held-back dial must not take a dial slot.
      timing: { dialDeferMs: this.timing.dialDeferMs, ...init.core?.timing },
      willConnect: (holder, destination) => sameSite((id) => this.session?.core.route(id), holder, destination),
    }))
  }

  /** Our listen addresses are known only once transports listen, and may change: the record follows. */
  private readonly onSelfUpdate = (): void => {
    const session = this.session
    if (session === undefined || this.state !== 'started') return
    const addresses = this.ownAddresses()
    if (addresses.length > 0 && addresses.join() !== session.core.addresses.join()) session.core.setAddresses(addresses)
    session.driver.schedule()
  }

  /**
   * What our record advertises: our listen addresses that another host can use (loopback only in
   * a single-host cluster), best class first, and our SSH address if we advertise one.
   */
  private ownAddresses(): string[] {
    const listening = this.components.addressManager.getAddresses().map((ma) => ma.toString())
    this.dialPath.refresh(listening)
    return this.dialPath.advertised(listening, this.id, OWN_ADDRESSES_MAX)
  }

  /** Our SSH address (`ssh.advertise`), once we listen; undefined without one. */
  sshAddress(): string | undefined {
    return this.dialPath.sshAddress(this.components.addressManager.getAddresses().map((ma) => ma.toString()), this.id)
  }

  /** Signs with our libp2p key; verifies a record against the key its node id (peer id) names. */
  private recordAuthority(): RecordAuthority {
    const key = this.components.privateKey
    return {
      sign: (payload) => {
        const signature = key.sign(payload)
        if (signature instanceof Promise) throw invalidInput('privateKey', `must sign synchronously (Ed25519) for signed records; this node has ${key.type}`)
        return signature
      },
      verify: (node, payload, signature) => {
        try {
          return peerIdFromString(node).publicKey?.verify(payload, signature) === true
        } catch {
          return false
        }
      },
    }
  }

  /** The running session, or NOT_STARTED naming what was attempted. */
  private running(what: string): Session {
    if (this.state === 'leaving') throw new PhoenixTransportError('NOT_STARTED', `${what}: the node is leaving`)
    if (this.session === undefined || this.state !== 'started') throw new PhoenixTransportError('NOT_STARTED', `${what}: the Phoenix node is not started`)
    return this.session
  }

  // ------------------------------------------------------------------ sending

  /**
   * Sends `payload` to the node that owns `name`, routed hop by hop, and resolves to its message
   * id. Checks every input before anything goes on the wire; waits up to `routeWaitMs` for a
   * route while tables converge; with `ack`, resolves only once the destination's application
   * has it. Fails only with PhoenixTransportError (see the README's send contract).
   */
  async send(name: string, payload: Uint8Array, options: SendOptions = {}): Promise<SendResult> {
    this.running('send')
    checkSendName(name)
    if (!(payload instanceof Uint8Array)) throw invalidInput('payload', 'must be a Uint8Array')
    if (payload.length > WIRE_LIMITS.payloadBytesMax) throw invalidInput('payload', `is ${payload.length} bytes, more than every node accepts (${WIRE_LIMITS.payloadBytesMax}, WIRE_LIMITS.payloadBytesMax)`)
    checkSendOptions(options)
    const messageId = this.sends.allocate(options.messageId)
    const route = this.running('send').core.resolve(name) ?? (await this.waitForRoute(messageId, name, options.routeWaitMs ?? this.timing.routeWaitMs))
    const session = this.running('send')
    const data: DataFrame = { source: this.id, destination: route.owner, name, ...sourceHopLimit(session.core.limits.hopLimit), messageId, ackRequested: options.ack === true, payload }
    // Our own name: handed over in this process, so copied unless transferred (the caller may reuse its buffer once send returns).
    if (route.owner === this.id) return this.sendToSelf(options.transfer === true ? data : { ...data, payload: payload.slice() })
    const own = options.transfer === true ? 'transfer' : 'copy'
    if (options.ack !== true) {
      session.router.routeData(data, undefined, undefined, undefined, own)
      return { messageId }
    }
    const acknowledged = this.sends.expectAck(messageId, route.owner, name, options.ackTimeoutMs ?? this.timing.ackTimeoutMs)
    try {
      session.router.routeData(data, undefined, undefined, undefined, own)
    } catch (error) {
      this.sends.forget(messageId)
      throw error
    }
    return acknowledged
  }

  private waitForRoute(messageId: number, name: string, timeoutMs: number): Promise<Route> {
    return this.sends.waitForRoute(messageId, name, timeoutMs, () => this.session?.core.resolve(name), () => this.state !== 'started', () => whyNoRoute(this.session?.core, name))
  }

  /**
   * Why a name has no route when a node we know holds it: that node is unreachable (crashed, or
   * cut off). A job manager that restarts a process without its key gets a new id, and the name
   * stays with the old one until its entry is forgotten: the error says so. Undefined when no
   * node we know claims the name. Walks the table: only for a send that failed.
   */
  /** A name of our own: the same consumer rule as a message from elsewhere, answered at once. */
  private sendToSelf(data: DataFrame): SendResult {
    const delivery = this.inbox.accept(receivedMessage({ from: this.id, name: data.name, hops: 0, messageId: data.messageId }, data.payload))
    if (delivery === 'receiver-too-slow' || delivery === 'no-consumer') {
      throw new PhoenixTransportError('UNDELIVERABLE', `this node could not deliver message ${data.messageId} to its own name "${data.name}": ${delivery}`, { messageId: data.messageId, reason: delivery, node: this.id })
    }
    return { messageId: data.messageId }
  }

  /** Messages delivered to this node, as an async iterator (bounded: see the README's delivery rule). It ends when the node stops. */
  messages(): AsyncIterableIterator<ReceivedMessage> {
    return this.inbox.messages()
  }

  // ------------------------------------------------------------------ names and hubs

  /** `field`: the option (`hubs`) or the argument (`hub`, of addHub) it came from. */
  private checkHub(address: string, field = 'hub'): void {
    checkHubMultiaddr(address, field)
    if (!isSshAddress(address)) return
    parseSshAddress(address, field)
    if (!this.dialPath.canSsh) throw invalidInput(field, `${JSON.stringify(address)} is an SSH address, and no SSH identity is given (${this.init.ssh?.optionNames?.identityFile ?? 'ssh.identityFile'})`)
  }

  /** Adds a hub (or, with discovery off, a connection to open) at run time. */
  addHub(address: string): void {
    this.checkHub(address)
    const session = this.running('addHub')
    coreErrorToTransport('hub', () => session.core.addHub(address))
    session.driver.schedule()
  }

  /** Adds a name; raises `name:conflict` if another node we know of claims it too. */
  addName(name: string): boolean {
    checkName('name', name)
    const session = this.running('addName')
    refuseReservedName('name', name)
    const claimed = coreErrorToTransport('name', () => session.core.addName(name))
    session.checkNameConflicts()
    session.driver.schedule()
    this.jobs.groups.refresh()
    return claimed
  }

  removeName(name: string): void {
    checkName('name', name)
    const session = this.running('removeName')
    // The overlay's own names (a declared site's) are not the application's to remove: the site went `unknown`.
    refuseReservedName('name', name)
    session.core.removeName(name)
    session.checkNameConflicts()
    session.driver.schedule()
    this.jobs.groups.refresh()
  }

  // ------------------------------------------------------------------ jobs (jobs.ts; documented on PhoenixService in api.ts)

  topology(): Topology {
    return this.jobs.topology()
  }
  members(pattern: string): Member[] {
    return this.jobs.members(pattern)
  }
  watch(pattern: string): AsyncIterableIterator<NameChange> {
    return this.jobs.groups.watch(pattern)
  }
  broadcast(pattern: string, payload: Uint8Array, options?: CollectiveOptions & { ack?: boolean }): Promise<BroadcastResult> {
    return this.jobs.broadcast(pattern, payload, options)
  }
  reduce(pattern: string, tag: string, options: ReduceOptions): Promise<ReduceResult> {
    return this.jobs.reduce(pattern, tag, options)
  }
  allreduce(pattern: string, tag: string, options: ReduceOptions): Promise<ReduceResult & { broadcast: BroadcastResult | undefined }> {
    return this.jobs.allreduce(pattern, tag, options)
  }
  contribute(name: string, tag: string, value: Uint8Array): void {
    this.jobs.contribute(name, tag, value)
  }

  // ------------------------------------------------------------------ queries (empty when not running)

  get names(): readonly string[] {
    return (this.session?.core.names ?? []).filter((name) => !isReservedName(name))
  }

  /** Every destination known, reachable or not. */
  routes(): RouteView[] {
    return this.session?.core.routes() ?? []
  }

  resolve(name: string): Route | undefined {
    return this.session?.core.resolve(name)
  }

  /** Neighbours: peers with an open Phoenix stream. */
  peers(): string[] {
    return this.session?.neighbours.ids() ?? []
  }

  /** Whether a connection from `peer` would be kept as a neighbour (room under the core's neighboursMax): the connection gate asks before the handshake ends. */
  acceptsNeighbour(peer: string): boolean {
    return this.session?.core.acceptsConnection(peer) ?? true
  }

  /** Names claimed by more than one node, as far as this node knows. */
  nameConflicts(): NameConflict[] {
    return this.session?.nameConflicts() ?? []
  }

  private gauges(): Record<string, number> {
    const session = this.session
    if (session === undefined) return { routes_reachable: 0, routes_unreachable: 0, neighbours: 0, outbound_frames_queued: 0, outbound_bytes_queued: 0, stream_write_buffer_bytes: 0, acks_pending: this.sends.pendingCount }
    let queued = 0
    let queuedBytes = 0
    let streamBytes = 0
    for (const { link } of session.neighbours.all()) {
      queued += link.queuedFrames
      queuedBytes += link.queuedBytesTotal
      streamBytes += link.streamBufferedBytes
    }
    const waiting = session.router.credit.waiting
    const routes = session.core.routes()
    const reachable = routes.filter((r) => r.reachable).length
    return {
      ...this.dialPath.gauges(),
      credit_waiting_frames: waiting.frames,
      credit_waiting_bytes: waiting.bytes,
      credit_flows: waiting.flows,
      routes_reachable: reachable,
      // Kept after a loss for unreachableRetentionMs (a churn audit found them growing only by counting GET /routes).
      routes_unreachable: routes.length - reachable,
      neighbours: session.neighbours.size,
      outbound_frames_queued: queued,
      outbound_bytes_queued: queuedBytes,
      stream_write_buffer_bytes: streamBytes,
      acks_pending: this.sends.pendingCount,
    }
  }

  private tallies(): Record<string, number> {
    return this.session === undefined ? {} : sessionTallies(this.session)
  }

  /** Prometheus text exposition of this node's counters and gauges (the same numbers go to `components.metrics` when libp2p has one). */
  metricsText(): string {
    return this.metrics.render(this.gauges(), this.tallies())
  }
}

/** The libp2p service factory: `services: { phoenix: phoenix({ hubs, names }) }`. */
export function phoenix(init: PhoenixInit = {}): (components: PhoenixComponents) => PhoenixNode {
  checkRuntime()
  checkNodeOptionShapes(init)
  checkInitKeys(init)
  checkInitSettings(init)
  return (components) => new PhoenixNode(components, init)
}

/** What a send that found no route is told beyond that: who holds the name, that nobody does, or that a pattern is not a name. */
function whyNoRoute(core: PhoenixCore | undefined, name: string): string | undefined {
  const holder = core?.routes().find((route) => !route.reachable && route.names.includes(name))
  if (holder === undefined && name.includes('*')) return `a name is matched as written, '*' included: members(pattern) lists the names a pattern matches (the CLI: phoenix members), and broadcast(pattern, bytes) sends to each`
  if (core === undefined) return undefined
  // Nothing held under the name: say what that can mean, so that a send after a graceful leave does not read like a routing fault.
  if (holder === undefined) return 'no node this one knows holds that name: none has announced it yet, or its node left (a node that stops gives its names up at once) or was forgotten'
  return `it is held by ${holder.destination}, which is unreachable; the name stays with that node until its entry is forgotten (core timing unreachableRetentionMs, ${core.timing.unreachableRetentionMs} ms after it became unreachable) unless it comes back, as a node restarted with its key does`
}

/** Counts kept by the core and the credit table (the metrics' counters beside their own). */
function sessionTallies(session: Session): Record<string, number> {
  const stats = session.core.stats()
  return {
    credit_flows_evicted: session.router.credit.evictions,
    credit_flows_resynced: session.router.credit.resyncs,
    core_entries_received: stats.entriesReceived,
    core_entries_sent: stats.entriesSent,
    core_peers_dropped: stats.peersDropped,
    core_records_verified: stats.recordsVerified,
    core_cohub_waits: stats.coHubWaits,
    core_dials_deferred: stats.dialsDeferred,
    core_cohub_waits_expired: stats.coHubWaitsExpired,
  }
}
