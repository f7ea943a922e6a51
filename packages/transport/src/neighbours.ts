import type { Connection, Stream } from '@libp2p/interface'
import { CORE_CONSTANTS } from '@phoenix-overlay/core'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import type { DataFrame } from '@phoenix-overlay/wire'
import type { PeerDropped } from './api.ts'
import type { CoreDriver } from './core-driver.ts'
import { NeighbourLink, type FrameBytes } from './link.ts'
import { SecondStreams } from './second-streams.ts'
import { StreamTap } from './stream-tap.ts'
import { DialDeadline } from './dial-deadline.ts'
import { FlapLog } from './flap-log.ts'
import { RecentLeaves } from './recent-leaves.ts'
import { dialReachedSelf } from './own-key.ts'
import { SSH_DIAL_TIMEOUT_MS, type DialPlan } from './dial-path.ts'
import { describeError, type NodeParts } from './parts.ts'
import type { SshAddress } from './ssh-address.ts'

/** One neighbour: its link, what is queued on it, and whether it announced its leave. */
export interface Neighbour {
  readonly link: NeighbourLink
  readonly tap: StreamTap
  readonly connection: Connection
  /** It withdrew its own route (a graceful leave): nothing more is routed to it, and once its queue is written our side of the stream is closed. */
  leaving: boolean
  /**
   * When the link came up (the driver's clock). One the peer closes within the core's
   * connectionStableMs was most likely refused (a record it cannot verify, another process with our
   * key): the core re-dials it with a growing back-off, and the node says so once per close.
   */
  readonly upAtMs: number
  /** We closed it (`drop`, or the core's `close`: its neighbour limit, itself): not the peer's refusal. */
  closedByUs: boolean
  /**
   * A new stream to the same peer took its place (`attach`): the core hears `connectionReplaced`
   * with the new link, not a down and an up (which withdrew the peer's route, see the core's
   * connections.ts), so its close tells the core nothing.
   */
  replaced: boolean
}


/** How frames from a neighbour are handled (forwarding.ts). */
export interface FrameHandler {
  /** Handles one frame; false = cannot take it now (the link pauses and retries on resume). */
  onFrame(link: NeighbourLink, bytes: FrameBytes): boolean
  /** Data frames that were queued toward a neighbour whose connection closed. */
  bounceUnsent(frames: readonly DataFrame[], peer: string): void
  /** The link to `peer` emptied its outbound queue (frames waiting for room may go). */
  linkDrained(peer: string): void
  /** The link to `peer` closed (after its unsent frames were bounced). */
  linkDown(peer: string): void
}

/**
 * The neighbours of one run: dialling, the one stream kept per neighbour, queueing frames on it,
 * and dropping a neighbour. Every callback a link makes is guarded: an error in handling one
 * connection closes that connection, never the process.
 */
export class Neighbours {
  private readonly byPeer = new Map<string, Neighbour>()
  /** A frame was refused since the last `resumeAll` began: a link may hold frames, and a drain asks for a pass. */
  private refused = false
  handler: FrameHandler | undefined
  /** Set while leaving: streams opened to us are refused. */
  closing = false
  private readonly flaps: FlapLog
  /** Second streams to a peer: twins reported, closes held while our own stream is being opened. */
  private readonly second: SecondStreams
  /** Neighbours that left gracefully of late: a hub dial failing while the hub still stops is said as that. */
  private readonly leaves: RecentLeaves
  constructor(
    private readonly parts: NodeParts,
    private readonly driver: CoreDriver,
  ) {
    this.flaps = new FlapLog(parts.log, parts.metrics)
    this.second = new SecondStreams(parts)
    const { leaveLingerMaxMs, leaveFlushMaxMs, dialTimeoutMs } = parts.timing
    this.leaves = new RecentLeaves(leaveLingerMaxMs + leaveFlushMaxMs + dialTimeoutMs, RECENT_LEAVES_MAX)
  }

  get(peer: string): Neighbour | undefined {
    return this.byPeer.get(peer)
  }

  get size(): number {
    return this.byPeer.size
  }

  ids(): string[] {
    return [...this.byPeer.keys()]
  }

  all(): Neighbour[] {
    return [...this.byPeer.values()]
  }

  /** Queues a frame toward `peer`; false if there is no link, its queue is full, or our side is closed. */
  send(peer: string, frame: FrameBytes, data?: DataFrame): boolean {
    const neighbour = this.byPeer.get(peer)
    return neighbour !== undefined && !neighbour.tap.writeClosed && neighbour.link.send(frame, data)
  }

  resumeAll(): void {
    this.refused = false // each link holding frames retries them now, and sets it again if refused
    for (const neighbour of this.all()) {
      this.guard(neighbour.link, () => neighbour.link.resume(), undefined)
      if (neighbour.leaving) this.finishIfWritten(neighbour)
    }
  }

  /**
   * `link` wrote all it had queued: the core driver's pass (resumeLinks) runs only if a link may hold
   * frames (`refused`) or this neighbour leaves (finished once written), not after every lone frame.
   */
  private linkDrained(link: NeighbourLink): void {
    if (this.refused || this.byPeer.get(link.peer)?.leaving === true) this.driver.schedule()
    this.guard(link, () => this.handler?.linkDrained(link.peer), undefined)
  }

  /**
   * A neighbour announced its leave (it withdrew its own route). It keeps reading until we close
   * our side, so: route nothing more to it, write out what is queued for it, then close our
   * side; it answers what it got (bounces, acks) and closes its own.
   */
  markLeaving(peer: string): void {
    const neighbour = this.byPeer.get(peer)
    if (neighbour === undefined || neighbour.leaving) return
    neighbour.leaving = true
    // Every libp2p connection has its remote address; a stand-in connection in tests may not.
    this.leaves.record(peer, (neighbour.connection.remoteAddr as Multiaddr | undefined)?.toString(), this.driver.now())
    this.parts.log('neighbour %s is leaving', peer)
    this.finishIfWritten(neighbour)
  }

  private finishIfWritten(neighbour: Neighbour): void {
    if (neighbour.link.queuedFrames === 0 && !neighbour.tap.writeClosed) void neighbour.tap.finishWriting()
  }

  dial(address: string): void {
    const { driver, parts } = this
    const core = driver.core
    const plan = parts.dialPath.plan(address, core.isHub(address))
    parts.dialPath.count(plan)
    if (plan.kind === 'skip') {
      // Not a packet sent: the core backs the address off and dials the owner's next one.
      parts.metrics.count('dials_skipped')
      parts.log('not dialling %s: %s', address, plan.reason)
      core.dialFailed(address, driver.now())
      return
    }
    // Both ends of a pair usually learn each other from the same update: the core holds the
    // dial of the end with the larger id back (dialDeferMs, core timing), so one connection is
    // set up, not two. One that comes in meanwhile still ends the dial here.
    const remote = /\/p2p\/([^/]+)$/.exec(address)?.[1] ?? null
    this.dialUnlessConnected(address, plan, remote)
  }

  /** Dials `address`, unless `remote` is a neighbour by now (then the dial counts as done). */
  private dialUnlessConnected(address: string, plan: DialPlan & { kind: 'direct' | 'ssh' }, remote: string | null): void {
    const { driver, parts } = this
    const core = driver.core
    if (this.closing || core.hasLeft) return
    if (remote !== null && this.byPeer.get(remote)?.link.isOpen === true) {
      parts.metrics.count('dials_skipped_connected')
      core.connectionUp(remote, driver.now(), address)
      driver.schedule()
      return
    }
    parts.metrics.count('dials_started')
    const ended = this.second.dialStarted(remote)
    const opened = plan.kind === 'ssh' ? this.openThroughSsh(address, plan.ssh) : this.openDirect(address)
    // Guarded as every link callback is: an error in handling a failed dial is logged and counted, never the end of the process.
    void opened.catch((thrown: unknown) => this.guard(undefined, () => this.dialFailed(address, plan, thrown), undefined)).finally(() => this.guard(undefined, () => ended() && this.heldCloseIsLoss(remote!), undefined))
  }

  /** A link closed while our dial to its peer was under way (second-streams.ts), and the dial ended with no stream of ours: the loss it was. */
  private heldCloseIsLoss(peer: string): void {
    if (this.closing || this.driver.core.hasLeft || this.byPeer.has(peer)) return
    this.parts.log('neighbour %s down: its link closed while we dialled it, and our dial brought no stream', peer)
    this.driver.core.connectionDown(peer, this.driver.now())
    this.driver.schedule()
  }

  /** A dial failed: counted, said at error level once per new cause for a hub or an SSH address, and backed off. */
  private dialFailed(address: string, plan: DialPlan & { kind: 'direct' | 'ssh' }, thrown: unknown): void {
    const { driver, parts } = this
    const core = driver.core
    // Not always an Error with a message: one without took workers down when their hub stopped
    // (found by a new-user audit: `failureIsNew` read `undefined.replace`).
    const error = thrown instanceof Error && typeof thrown.message === 'string' ? thrown : new Error(describeError(thrown))
    if (reachedSelf(error)) return dialReachedSelf(this.parts, this.driver, address, this.closing)
    parts.metrics.count('dials_failed')
    // A tunnel failure is worth a line at error level (it names the SSH option or server at
    // fault), once per cause: the redials of a hub that stays unreachable go to debug. So is a
    // hub that answers with another peer id (usually restarted without its key file).
    const hub = core.isHub(address)
    // A hub that left gracefully refuses the handshake while it stops: that, not a hint at a wrong port or key.
    const leftAgoMs = hub && isHandshakeFailure(error) ? this.leaves.agoMs(address, driver.now()) : undefined
    const reason = leftAgoMs !== undefined ? `${error.message}: the hub left ${Math.round(leftAgoMs)} ms ago, and was still stopping` : hubFailureReason(error, hub)
    // A hub is what a node starts from: each new cause of its failing (not up yet, refused, a
    // handshake reset by a node on another private network) is said once, or a node with no
    // neighbour would wait silently.
    // A dial the node's own stop aborted is no failure to report ("The operation was aborted", found by hand).
    const news = !this.closing && !core.hasLeft && (plan.kind === 'ssh' || hub) && leftAgoMs === undefined
    if (news && parts.dialPath.failureIsNew(address, error.message)) parts.log.error('dial %s failed: %s', address, reason)
    else parts.log('dial %s failed: %s', address, reason)
    if (this.closing || core.hasLeft) return
    try {
      core.dialFailed(address, driver.now())
      driver.schedule()
    } catch (failure) {
      parts.log.error('dial %s: %s', address, describeError(failure))
    }
  }

  /**
   * A direct dial: dialTimeoutMs for the TCP connection, then upgradeTimeoutMs for the handshakes
   * (DialDeadline). A failure after the connection was up is also counted as `dials_failed_upgrade`.
   */
  private async openDirect(address: string): Promise<Connection> {
    const deadline = new DialDeadline(this.parts.timing.dialTimeoutMs, this.parts.timing.upgradeTimeoutMs)
    try {
      const connection = await this.open(multiaddr(address), deadline.signal, address, deadline.onProgress)
      this.parts.dialPath.dialSucceeded(address)
      return connection
    } catch (error) {
      if (deadline.connected && !reachedSelf(error as Error)) this.parts.metrics.count('dials_failed_upgrade')
      throw error
    } finally {
      deadline.clear()
    }
  }

  /** Opens a connection and our stream on it, and attaches it as a dial of `address` (the address the core asked for). */
  private async open(target: Multiaddr, signal: AbortSignal, address = target.toString(), onProgress?: DialDeadline['onProgress']): Promise<Connection> {
    const { parts } = this
    const connection = await parts.components.connectionManager.openConnection(target, onProgress === undefined ? { signal } : { signal, onProgress })
    this.attach(await connection.newStream(parts.protocol, { signal }), connection, address)
    return connection
  }

  /**
   * An SSH address: lease the tunnel (started, or shared with an earlier dial), dial its local
   * socket, and attach the connection as a dial of the SSH address, so the core's bookkeeping
   * sees the address it asked for. The lease is released when that connection closes, or at once
   * if the dial fails (the failure then names what the SSH server refused, if it did).
   */
  private async openThroughSsh(address: string, ssh: SshAddress): Promise<void> {
    const signal = AbortSignal.timeout(SSH_DIAL_TIMEOUT_MS)
    const { lease, target } = await this.parts.dialPath.openTunnel(ssh, signal)
    let connection: Connection
    try {
      connection = await this.open(multiaddr(target), signal, address)
    } catch (error) {
      // Timed out through a tunnel ssh calls up, with no forward refused: the tunnel is dead.
      if (signal.aborted && lease.forwardRefused() === undefined) lease.suspect(`a dial through it timed out after ${SSH_DIAL_TIMEOUT_MS} ms`)
      await lease.release()
      throw lease.forwardRefused() ?? error
    }
    if (connection.status !== 'open') return void lease.release()
    this.parts.dialPath.dialSucceeded(address)
    const onClose = ({ detail }: CustomEvent<Connection>) => {
      if (detail !== connection) return
      this.parts.components.events.removeEventListener('connection:close', onClose)
      void lease.release()
    }
    this.parts.components.events.addEventListener('connection:close', onClose)
  }

  /** A stream to a neighbour opened (by us or by it). Exactly one is kept per neighbour. */
  attach(stream: Stream, connection: Connection, dialledAddress: string | undefined): void {
    const { driver, parts } = this
    if (this.closing || driver.core.hasLeft) {
      stream.abort(new Error('node is stopping'))
      return
    }
    const peer = connection.remotePeer.toString()
    const existing = this.byPeer.get(peer)
    if (existing !== undefined && existing.link.isOpen) {
      // Both sides opened a stream at once: keep the one opened by the smaller peer id, the
      // same choice on both sides. Replacing a link is `connectionReplaced` for the core (below),
      // so nothing sent on the old one can be lost unnoticed, and no route through the peer goes.
      const opener = stream.direction === 'outbound' ? parts.id : peer
      const smaller = parts.id < peer ? parts.id : peer
      const existingOpener = existing.link.stream.direction === 'outbound' ? parts.id : peer
      if (opener !== smaller || existingOpener === smaller) {
        parts.metrics.count('streams_duplicate')
        if (opener === peer && existingOpener === peer && connection !== existing.connection) this.second.reportTwin(peer, existing.connection, connection)
        stream.abort(new Error('duplicate Phoenix stream'))
        if (dialledAddress !== undefined) driver.core.connectionUp(peer, driver.now(), dialledAddress)
        return
      }
      parts.metrics.count('streams_replaced')
      // Closed by us: not the neighbour refusing us (a "flap" logged at error level each time).
      existing.replaced = true
      this.closeOurs(peer, 'replaced by the stream opened by the smaller peer id', existing.link)
    }
    const tap = new StreamTap(stream)
    const { limits } = parts
    const link: NeighbourLink = new NeighbourLink(
      peer,
      tap.stream,
      { outboundBytesMax: limits.outboundBytesMaxPerNeighbour, outboundFramesMax: limits.outboundFramesMaxPerNeighbour, inboundBytesMax: limits.inboundBytesMaxPerNeighbour },
      parts.log,
      // Guarded as guard() does, without a closure per frame.
      (bytes): boolean => {
        try {
          const taken = this.handler?.onFrame(link, bytes) ?? true
          if (!taken) this.refused = true
          return taken
        } catch (error) {
          return this.failed(link, error, true)
        }
      },
      (closed, reason) => this.guard(undefined, () => this.onLinkClosed(closed, reason), undefined),
      (bad, reason) => this.drop(bad, 'wire', reason),
      () => this.linkDrained(link),
      {
        timing: parts.timing,
        onUnresponsive: (_dead, reason) => {
          parts.metrics.count('neighbours_unresponsive')
          connection.abort(new Error(reason))
        },
      },
      tap,
    )
    this.byPeer.set(peer, { link, tap, connection, leaving: false, upAtMs: driver.now(), closedByUs: false, replaced: false })
    if (existing?.replaced === true || this.second.takeHeld(peer)) driver.core.connectionReplaced(peer, driver.now(), dialledAddress)
    else driver.core.connectionUp(peer, driver.now(), dialledAddress)
    parts.metrics.count('neighbours_up')
    driver.schedule()
  }

  /**
   * Runs a link callback. If it throws (a bug here, or the core refusing an input), the
   * connection it came from is closed as `internal`, the error is logged and counted, and the
   * process goes on.
   */
  private guard<T>(link: NeighbourLink | undefined, run: () => T, fallback: T): T {
    try {
      return run()
    } catch (error) {
      return this.failed(link, error, fallback)
    }
  }

  private failed<T>(link: NeighbourLink | undefined, error: unknown, fallback: T): T {
    this.parts.metrics.count('internal_errors')
    if (link !== undefined) this.drop(link, 'internal', `handling its frame failed: ${describeError(error)}`)
    else this.parts.log.error('internal error: %s', describeError(error))
    return fallback
  }

  private onLinkClosed(link: NeighbourLink, reason: string): void {
    const { parts, driver } = this
    parts.metrics.count('bytes_sent', link.bytesSent)
    parts.metrics.count('bytes_received', link.bytesReceived)
    const neighbour = this.byPeer.get(link.peer)
    if (neighbour?.link !== link) return
    this.byPeer.delete(link.peer)
    parts.log('neighbour %s down: %s', link.peer, reason)
    parts.metrics.count('neighbours_down')
    const livedMs = Math.round(driver.now() - neighbour.upAtMs)
    // Closed by the peer while our own stream to it is being opened: most likely replaced by it (second-streams.ts).
    const held = !neighbour.closedByUs && !neighbour.leaving && !this.closing && !neighbour.replaced && this.second.holdClose(link.peer, neighbour.link.stream.direction)
    this.flaps.closed(link.peer, livedMs, reason, livedMs < CORE_CONSTANTS.connectionStableMs && !neighbour.leaving && !neighbour.closedByUs && !this.closing && !held)
    if (!driver.core.hasLeft && !neighbour.replaced && !held) {
      driver.core.connectionDown(link.peer, driver.now())
      driver.schedule()
    }
    // A neighbour that left has closed its side after everything it owed us, and waits for us to
    // confirm that we read it all: closing the connection says so (it may stop now).
    if (neighbour.leaving) void Promise.resolve(neighbour.connection.close?.()).catch(() => undefined)
    const unsent = neighbour.link.takeUnsent() as DataFrame[]
    if (unsent.length > 0) this.handler?.bounceUnsent(unsent, link.peer)
    this.handler?.linkDown(link.peer)
  }

  /** Closes the link to `peer` (`link`, if given, only if it is still that one), marked as closed by us. */
  closeOurs(peer: string, reason: string, link = this.byPeer.get(peer)?.link): void {
    const neighbour = this.byPeer.get(peer)
    if (neighbour !== undefined && neighbour.link === link) neighbour.closedByUs = true
    link?.abort(reason)
  }

  /**
   * Disconnects a neighbour, saying why in the log, in the metrics (`peers_dropped`, and
   * `frames_rejected` for bytes that did not decode) and in a `peer:dropped` event. It may
   * connect again; the core polices it afresh (its limits and its records).
   */
  drop(link: NeighbourLink, kind: PeerDropped['kind'], reason: string): void {
    if (!link.isOpen) return
    this.parts.metrics.count('peers_dropped')
    if (kind === 'wire') this.parts.metrics.count('frames_rejected')
    this.parts.log.error('dropping neighbour %s (%s): %s', link.peer, kind, reason)
    this.closeOurs(link.peer, reason, link)
    this.parts.emit('peer:dropped', { peer: link.peer, kind, reason })
  }

  /**
   * Our side of a leave, for every link: hold each neighbour's end-of-stream until we have
   * answered everything it sent (see StreamTap). Each neighbour, once it heard our leave and
   * wrote what it had queued for us, closes its side; then we write out our queue (bounces and
   * acks) and close ours. A neighbour that does not close its side within `lingerMaxMs` (an
   * older node) is closed anyway, and any link whose queue is not written `flushMaxMs` later is
   * aborted.
   */
  async closeAll(reason: string, lingerMaxMs: number, flushMaxMs: number): Promise<void> {
    // First every neighbour finishes writing to us: until then any of our links may be needed
    // (a bounce for a frame from one neighbour may have to go out through another).
    const lingerEndsMs = performance.now() + lingerMaxMs
    const writing = () => this.all().filter((n) => n.link.isOpen && !n.tap.remoteDone)
    while (writing().length > 0 && performance.now() < lingerEndsMs) await sleep(LEAVE_POLL_MS)
    this.parts.metrics.count('leave_linger_expired', writing().length)
    // Then we write out our queues and close our sides (or close outright where the neighbour did not finish).
    const flushEndsMs = performance.now() + flushMaxMs
    const neighbours = this.all()
    const closing = neighbours.map(async ({ link, tap }) => {
      if (!tap.remoteDone) {
        tap.release()
        return link.close(reason)
      }
      while (link.isOpen && link.queuedFrames > 0 && performance.now() < flushEndsMs) await sleep(LEAVE_POLL_MS)
      await tap.finishWriting()
      tap.release()
    })
    let timer: ReturnType<typeof setTimeout> | undefined
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, flushMaxMs)))
    await Promise.race([Promise.all(closing), deadline])
    clearTimeout(timer)
    for (const { link } of this.all()) if (link.isOpen) link.abort(`${reason}: its queue was not written within ${flushMaxMs} ms`)
    // What we wrote may still be in the sockets: a neighbour confirms it read everything by
    // closing the connection. Stopping earlier could reset the connection under bytes it has
    // not read yet (measured: the last ~8 KiB of bounces lost that way).
    const connections = neighbours.map((n) => n.connection)
    while (performance.now() < flushEndsMs && connections.some((c) => c.status !== undefined && c.status !== 'closed')) await sleep(LEAVE_POLL_MS)
  }

  /**
   * Waits, at most `waitMs`, until the data already queued toward every neighbour is written,
   * and `framesWaiting()` (frames waiting for credit toward a next hop) is 0. A leave's farewell
   * is a control frame, and control frames go first: sent ahead of that data, it made the
   * neighbour finish writing before it could acknowledge the data it then delivered (a sender
   * stopped right after 50 acknowledged sends heard NOT_STARTED for 49 delivered ones). Frames
   * waiting for credit were not waited for: a stop right after 40 sends of 64 KiB with a 128 KiB
   * window wrote 5 of them and bounced the rest (test/leave.test.ts; all 40 arrive now).
   */
  async dataWritten(waitMs: number, framesWaiting: () => number): Promise<void> {
    const endsMs = performance.now() + waitMs
    const unwritten = () => framesWaiting() > 0 || this.all().some(({ link }) => link.isOpen && link.queuedDataFrames > 0)
    while (unwritten() && performance.now() < endsMs) await sleep(LEAVE_POLL_MS)
  }

  /** From now on each neighbour's end-of-stream waits until we have answered it (a leave). */
  holdRemoteCloses(): void {
    for (const neighbour of this.all()) neighbour.tap.holding = true
  }
}

/**
 * Leaves remembered (RecentLeaves: two entries each, peer and address) within one window of a few
 * seconds: 32 neighbours leaving at once is more than a node's hubs; a leave forgotten costs only
 * the wording of a failed redial.
 */
const RECENT_LEAVES_MAX = 64

/** How often a leave looks whether its neighbours have finished: a few ms, against the ~100 ms a leave takes. */
const LEAVE_POLL_MS = 5

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A dial failure as said to the user, with what it probably means when the address is a hub. */
function hubFailureReason(error: Error, hub: boolean): string {
  if (!hub) return error.message
  if (isWrongPeer(error)) return `${error.message}: another node answers at this hub address (restarted without its key file, phoenix node --key?); give it its key, or name the hub without /p2p/…`
  if (isHandshakeFailure(error)) return `${error.message}: ${HANDSHAKE_HINT}`
  return error.message
}

/**
 * What a hub dial that connected but failed in the handshake most often means. A node without our
 * private network key (or with another) cannot read our first bytes and drops the connection; so
 * does anything else listening there, most often the hub's own control endpoint (its `--control`
 * port given as `--hub`; found by a new-user trial: the line blamed only the private network key).
 */
const HANDSHAKE_HINT =
  'the hub address answered but the handshake failed (is a phoenix node listening there, at its --listen address, not its --control port? or a private network key, --psk, on one side only or different on each?)'

/**
 * Whether a dial connected and then failed in the handshake: the connection reset or closed
 * (`ECONNRESET`, `EPIPE`, it-byte-stream's "Unexpected EOF"), multistream-select read no protocol
 * line ("Missing newline"), or the upgrader's `EncryptionFailedError` ("Encryption failed": the
 * bytes were no Noise handshake). A refused or timed-out connect is none of these.
 */
function isHandshakeFailure(error: Error): boolean {
  if (error.name === 'EncryptionFailedError' || error.name === 'UnexpectedEOFError') return true
  return /ECONNRESET|EPIPE|Unexpected EOF|Missing newline|Encryption failed/.test(error.message)
}

/**
 * Whether a dial failed because the node that answered has another peer id than the address
 * names. Noise throws UnexpectedPeerError ("Payload identity key … does not match expected remote
 * identity key …"), and libp2p's upgrader re-throws it as EncryptionFailedError with only the
 * message kept (libp2p 3.x, `_encryptOutbound`), so the message is the one sign left.
 */
function isWrongPeer(error: Error): boolean {
  return error.name === 'UnexpectedPeerError' || /does not match expected remote identity key/.test(error.message)
}

/** libp2p's refusal of a dial that reached this node (`InvalidPeerIdError: Can not dial self`, connection-manager or upgrader). */
function reachedSelf(error: Error): boolean {
  return error.name === 'InvalidPeerIdError' && /dial self/i.test(error.message)
}
