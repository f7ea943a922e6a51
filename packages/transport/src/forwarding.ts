import { Uint8ArrayList } from 'uint8arraylist'
import { PhoenixError, isUnreachableSeq } from '@phoenix-overlay/core'
import { WireError, decodeFrame, encodeDataFramePieces, encodeFrame, hopsTravelled, relayedInitialHopLimit, rewriteDataHopLimit, rewriteHopLimitAt, type AckFrame, type DataFrame, type Frame, type UndeliverableFrame, type UndeliverableReason } from '@phoenix-overlay/wire'
import type { CoreDriver } from './core-driver.ts'
import { FlowCredits, type CreditSink } from './credit.ts'
import { PhoenixTransportError } from './errors.ts'
import { firstPiece, type FrameBytes, type NeighbourLink } from './link.ts'
import { receivedMessage } from './inbox.ts'
import { PairKey } from './pair-key.ts'
import { PiecesData, ReceivedData, receivedData } from './received-data.ts'
import type { FrameHandler, Neighbours } from './neighbours.ts'
import type { NodeParts } from './parts.ts'

type ControlFrame = Extract<Frame, { kind: 'ack' | 'undeliverable' }>

/**
 * Frames in, and data on its way: delivering what is for us, passing on what is not, and
 * telling a source what became of its message (an ack once our application has it, an
 * undeliverable notice with the reason otherwise). The forwarding decision is the core's
 * (`core.forward`); this module carries it out.
 */
export class Router implements FrameHandler {
  /** Set while the node leaves: data for us or through us is bounced (`leaving`), not taken. */
  leaving = false
  /** Per-flow credit toward each next hop and from each previous hop (off when limits.flowWindowBytes is 0). */
  readonly credit: FlowCredits

  constructor(
    private readonly parts: NodeParts,
    private readonly driver: CoreDriver,
    private readonly neighbours: Neighbours,
  ) {
    const sink: CreditSink = {
      hasRoom: (peer, bytes) => neighbours.get(peer)?.link.hasRoomFor(bytes) ?? true,
      write: (peer, frame, data) => neighbours.send(peer, frame, data),
      returnCredit: (peer, flows) => {
        const sent = neighbours.send(peer, encodeFrame({ kind: 'credit', credit: { flows } }))
        parts.metrics.count(sent ? 'credit_frames_sent' : 'credit_return_deferred')
        return sent
      },
      refuse: (data, from, reason) => this.bounce(data, reason, from),
      now: () => performance.now(),
    }
    const { flowWindowBytes, flowsMaxPerNeighbour, outboundBytesMaxPerNeighbour } = parts.limits
    // Our own sends may queue as much per flow as a link's queue holds (what a burst could before credit).
    this.credit = new FlowCredits({ flowWindowBytes, flowsMaxPerNeighbour, ownWaitingBytesMax: outboundBytesMaxPerNeighbour, flowStallMs: parts.timing.flowStallMs }, sink)
  }

  onFrame(link: NeighbourLink, received: FrameBytes): boolean {
    const core = this.driver.core
    if (!link.isOpen) return true
    let frame: Frame
    try {
      // A data frame: its header read (from its first piece, if it came in several), its payload
      // left where it is. Anything else, or a data frame that cannot be read so, is decoded whole.
      const data = receivedData(received)
      if (data !== undefined) frame = { kind: 'data', data }
      else frame = decodeFrame(received instanceof Uint8Array ? received : received.subarray())
    } catch (error) {
      this.neighbours.drop(link, 'wire', `undecodable frame: ${error instanceof WireError ? error.message : String(error)}`)
      return true
    }
    switch (frame.kind) {
      case 'update': {
        // A neighbour that withdraws its own route over its own stream is leaving (only a leave
        // does that; nobody else can speak on its stream). Heard even while we leave ourselves.
        if (frame.update.entries.some((entry) => entry.destination === link.peer && isUnreachableSeq(entry.seq))) this.neighbours.markLeaving(link.peer)
        if (core.hasLeft) return true
        let accepted: boolean
        try {
          accepted = core.receive(link.peer, frame.update, this.driver.now())
        } catch (error) {
          this.neighbours.drop(link, 'routing', error instanceof PhoenixError ? error.message : String(error))
          return true
        }
        if (!accepted) return false
        this.parts.metrics.count('updates_received')
        this.driver.schedule()
        return true
      }
      case 'data':
        return this.onData(link, frame.data, received)
      case 'credit': {
        this.parts.metrics.count('credit_frames_received')
        const unmatched = this.credit.granted(link.peer, frame.credit.flows)
        if (unmatched > 0) this.parts.metrics.count('credit_unmatched', unmatched)
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

  /** A data frame from `link`: false if it cannot be taken now (credit off, the next hop's queue full). */
  private onData(link: NeighbourLink, data: DataFrame, bytes: FrameBytes): boolean {
    const core = this.driver.core
    // Without credit, hop-by-hop backpressure: while the queue toward the next hop is full,
    // stop reading from this neighbour (the frame is retried when that queue drains), which
    // stalls every flow on this link (head-of-line blocking). With credit the frame arrived
    // with room promised for it: it goes on, waits in its flow's queue, or is refused.
    if (!this.credit.enabled) {
      const decision = core.forward(data.destination, data.hopLimit, data.name, flowKeyOf(data))
      if (!this.leaving && decision.action === 'forward') {
        const next = this.neighbours.get(decision.nextHop)
        if (next !== undefined && !next.link.hasRoomFor(bytes.byteLength)) return false
      }
    }
    // In place only into bytes decrypted for us (an encrypted connection: nobody else holds
    // them); a plaintext stream (an in-memory one in tests) may share its sender's buffer.
    const ours = this.neighbours.get(link.peer)?.connection.encryption !== undefined
    const queued = this.routeData(data, link.peer, ours ? bytes : undefined, bytes.byteLength)
    // Delivered, refused or dropped here: it left us, its credit goes back at once.
    if (this.credit.enabled && !queued) this.credit.consumed(link.peer, data, bytes.byteLength)
    return true
  }

  /**
   * A data frame here (`fromPeer` undefined: our own send): deliver it if it is for us, else
   * pass it on or say why not. Our own send throws instead of bouncing to ourselves. True if
   * credit took it (it went on toward the next hop or waits there); false if it was handled here.
   * `own`: our own send's payload is copied into its frame, or handed over as the frame's second
   * piece (`send(…, { transfer: true })`).
   */
  routeData(data: DataFrame, fromPeer: string | undefined, received?: FrameBytes, receivedBytes?: number, own: 'copy' | 'transfer' = 'copy'): boolean {
    if (this.leaving && fromPeer !== undefined) return this.bounce(data, 'leaving', fromPeer)
    const decision = this.driver.core.forward(data.destination, data.hopLimit, data.name, flowKeyOf(data))
    if (decision.action === 'deliver') return this.deliver(data, fromPeer)
    if (decision.action === 'drop') {
      this.parts.metrics.count(`dropped_${decision.reason.replaceAll('-', '_')}`)
      if (fromPeer === undefined) throw new PhoenixTransportError('NO_ROUTE', `no route to node ${data.destination}`, { messageId: data.messageId })
      return this.bounce(data, decision.reason, fromPeer)
    }
    if (this.neighbours.get(decision.nextHop)?.leaving === true) {
      // The next hop announced its leave: it would only bounce this, and it waits for us to
      // finish writing to it before it can go.
      if (fromPeer === undefined) throw new PhoenixTransportError('UNDELIVERABLE', `the next hop ${decision.nextHop} is leaving`, { messageId: data.messageId, reason: 'leaving', node: decision.nextHop })
      return this.bounce(data, 'leaving', fromPeer)
    }
    // A sender that keeps trying while its flow waits for credit: refused before its payload is copied into a frame.
    if (this.credit.enabled && fromPeer === undefined && this.credit.ownFlowFull(decision.nextHop, data)) return this.refused('flow-full', decision.nextHop, data, fromPeer)
    // Zero-copy forwarding: the received frame goes on with only its hop limit rewritten in
    // place (wire/hop-limit.ts); re-encoded (the payload copied) only when that cannot be done.
    // A hop limit lowered to ours (more left than our limit) lowers the initial one too: re-encoded.
    const initial = fromPeer === undefined ? false : relayedInitialHopLimit(data, decision.hopLimit)
    const inPlace = received !== undefined && initial === false ? rewrittenInPlace(received, decision.hopLimit, data) : undefined
    if (inPlace !== undefined) this.parts.metrics.count(inPlace instanceof Uint8Array ? 'forwarded_in_place' : 'forwarded_in_pieces')
    // (Not a spread of `data`: a PiecesData's payload is a getter on its prototype, which a spread drops.)
    const frame = inPlace ?? dataFrameBytes(withDataHopLimit(data, decision.hopLimit, initial === false ? data.initialHopLimit : initial), fromPeer === undefined && own === 'transfer')
    if (this.credit.enabled) return this.submit(decision.nextHop, frame, data, fromPeer, receivedBytes)
    if (!this.neighbours.send(decision.nextHop, frame, data)) {
      this.parts.metrics.count('dropped_queue_full')
      if (fromPeer === undefined) {
        throw new PhoenixTransportError('QUEUE_FULL', `the queue toward ${decision.nextHop} is full (limits.outboundBytesMaxPerNeighbour ${this.parts.limits.outboundBytesMaxPerNeighbour} bytes); nothing was sent, try again later`, { messageId: data.messageId })
      }
      return this.bounce(data, 'queue-full', fromPeer)
    }
    this.parts.metrics.count(fromPeer === undefined ? 'messages_sent' : 'messages_forwarded')
    return false
  }

  /** A data frame for the next hop, under per-flow credit: true if it went or waits for credit. */
  private submit(nextHop: string, frame: FrameBytes, data: DataFrame, fromPeer: string | undefined, receivedBytes: number | undefined): boolean {
    const { metrics } = this.parts
    const admission = this.credit.submit(nextHop, frame, data, fromPeer, receivedBytes)
    if (admission === 'sent' || admission === 'queued') {
      metrics.count(fromPeer === undefined ? 'messages_sent' : 'messages_forwarded')
      if (admission === 'queued') metrics.count('credit_waits')
      return true
    }
    return this.refused(admission, nextHop, data, fromPeer)
  }

  /** A data frame credit cannot take: QUEUE_FULL for our own send, a `queue-full` bounce for a forwarded one. */
  private refused(admission: 'flow-full' | 'table-full', nextHop: string, data: DataFrame, fromPeer: string | undefined): false {
    const { metrics, limits } = this.parts
    metrics.count('dropped_queue_full')
    metrics.count(admission === 'flow-full' ? 'dropped_flow_full' : 'dropped_flow_table_full')
    if (fromPeer === undefined) {
      const why = admission === 'flow-full' ? `the flow to ${data.destination} has ${limits.outboundBytesMaxPerNeighbour} bytes waiting for credit from ${nextHop} (limits.outboundBytesMaxPerNeighbour)` : `${limits.flowsMaxPerNeighbour} flows toward ${nextHop} are in use and none is stalled (limits.flowsMaxPerNeighbour)`
      throw new PhoenixTransportError('QUEUE_FULL', `${why}; nothing was sent, try again later`, { messageId: data.messageId })
    }
    return this.bounce(data, 'queue-full', fromPeer)
  }

  /** A message for us from another node: to the application, then the ack; or a bounce. */
  private deliver(data: DataFrame, fromPeer: string | undefined): false {
    // From the hop limit the source gave it (it counted from ours: wrong when the two differ).
    const hops = hopsTravelled(data)
    const delivery = this.parts.inbox.accept(receivedMessage({ from: data.source, name: data.name, hops, messageId: data.messageId }, data instanceof PiecesData ? data.payloadPieces : data.payload))
    if (delivery === 'receiver-too-slow' || delivery === 'no-consumer') return this.bounce(data, delivery, fromPeer)
    this.parts.metrics.count(delivery === 'delivered' ? 'messages_delivered' : 'messages_duplicate')
    if (data.ackRequested) this.routeControl({ kind: 'ack', ack: { source: this.parts.id, destination: data.source, hopLimit: this.driver.core.limits.hopLimit, messageId: data.messageId } }, fromPeer)
    return false
  }

  /** Tells a data frame's source that it was dropped here, and why (false: nothing went on). */
  bounce(data: DataFrame, reason: UndeliverableReason, fromPeer?: string): false {
    this.parts.metrics.count('messages_undeliverable')
    this.parts.metrics.count(`undeliverable_${reason.replaceAll('-', '_')}`)
    this.routeControl({ kind: 'undeliverable', undeliverable: { source: this.parts.id, destination: data.source, hopLimit: this.driver.core.limits.hopLimit, messageId: data.messageId, reason } }, fromPeer)
    return false
  }

  bounceUnsent(frames: readonly DataFrame[], peer: string): void {
    this.parts.log('bouncing %d data frames queued toward %s when its connection closed', frames.length, peer)
    // Closed by our own leave, the neighbour was fine: the reason is ours.
    for (const data of frames) this.bounce(data, this.leaving ? 'leaving' : 'neighbour-down')
  }

  linkDrained(peer: string): void {
    this.credit.linkDrained(peer)
  }

  /** Frames that waited for credit toward `peer` are bounced like those its link never wrote. */
  linkDown(peer: string): void {
    const stranded = this.credit.linkClosed(peer)
    if (stranded.length > 0) this.parts.log('bouncing %d data frames waiting for credit toward %s when its connection closed', stranded.length, peer)
    for (const item of stranded) this.bounce(item.data, this.leaving ? 'leaving' : 'neighbour-down', item.from)
  }

  /**
   * Acks and undeliverable notices travel like data, toward the original source; they are never
   * bounced. `cameFrom`: the neighbour the data frame they answer came from. Where we have no
   * route to the source yet (we joined a moment ago: data reaches us before the table does), the
   * answer goes back the way the data came, one hop: that neighbour had the data from the source
   * or from a node that routes to it.
   */
  private routeControl(frame: ControlFrame, cameFrom?: string): void {
    const header: AckFrame | UndeliverableFrame = frame.kind === 'ack' ? frame.ack : frame.undeliverable
    const decision = this.driver.core.forward(header.destination, header.hopLimit)
    if (decision.action === 'deliver') return this.settle(frame)
    if (decision.action === 'drop') {
      if (decision.reason === 'no-route' && cameFrom !== undefined && header.hopLimit > 1 && this.neighbours.send(cameFrom, encodeFrame(withHopLimit(frame, header.hopLimit - 1)))) {
        this.parts.metrics.count('control_reverse_path')
        return
      }
      this.parts.metrics.count('control_dropped')
      return
    }
    if (!this.neighbours.send(decision.nextHop, encodeFrame(withHopLimit(frame, decision.hopLimit)))) this.parts.metrics.count('control_dropped')
  }

  /** An ack or a notice for one of our sends. */
  private settle(frame: ControlFrame): void {
    const { sends, metrics } = this.parts
    if (frame.kind === 'ack') {
      if (!sends.acked(frame.ack.messageId, frame.ack.source)) metrics.count('acks_unmatched')
      return
    }
    const { messageId, source, reason } = frame.undeliverable
    if (sends.refused(messageId, source, reason)) return
    // A notice for an id we never used is forged (or very late after a retry): counted, not raised.
    if (!sends.isOurs(messageId)) return metrics.count('notices_unmatched')
    // A send without an acknowledgement was dropped on the way: say so rather than nothing.
    metrics.count('sends_undeliverable')
    this.parts.emit('undeliverable', { node: source, messageId, reason })
  }
}

/**
 * The flow a data frame belongs to: (source, name); the destination is the route's own. Where a
 * destination has several next hops (several gateways), each flow keeps to one of them, chosen by
 * the core (`forward`'s flowKey), so one sender's messages to one name stay in order; different
 * senders, or different names, spread.
 */
export function flowKeyOf(data: DataFrame): string {
  return lastFlowKey.of(data.source, data.name)
}
const lastFlowKey = new PairKey((source, name) => `${source}\u0000${name}`)

function withHopLimit(frame: ControlFrame, hopLimit: number): ControlFrame {
  return frame.kind === 'ack' ? { kind: 'ack', ack: { ...frame.ack, hopLimit } } : { kind: 'undeliverable', undeliverable: { ...frame.undeliverable, hopLimit } }
}

/**
 * The received frame with its hop limit rewritten in place (in its first piece), or undefined if
 * that cannot be done: where its header's reading found the hop limit, else found again.
 */
function rewrittenInPlace(received: FrameBytes, hopLimit: number, data: DataFrame): FrameBytes | undefined {
  if (data instanceof ReceivedData && data.hopLimitAt >= 0) {
    const first = firstPiece(received)
    return first !== undefined && rewriteHopLimitAt(first, data.hopLimitAt, hopLimit) ? received : undefined
  }
  if (received instanceof Uint8Array) return rewriteDataHopLimit(received, hopLimit)
  const first = firstPiece(received)
  return first !== undefined && rewriteDataHopLimit(first, hopLimit, received.byteLength) !== undefined ? received : undefined
}

function withDataHopLimit(d: DataFrame, hopLimit: number, initialHopLimit: number | undefined): DataFrame {
  return { source: d.source, destination: d.destination, name: d.name, hopLimit, messageId: d.messageId, ackRequested: d.ackRequested, payload: d.payload, initialHopLimit }
}

/**
 * A transferred payload shorter than this is copied into its frame all the same: one allocation
 * instead of a header and a Uint8ArrayList of two pieces, which cost more than copying a small
 * payload (a 64 B message's send is what latency probes time). Kept well under the link's
 * COPY_BELOW_BYTES (16 KiB), where the copy would add a garbage buffer per message of the
 * sizes a bulk sender uses (4 KiB), for the collector to sweep.
 */
export const TRANSFER_COPIED_BELOW_BYTES = 1024

/** A data frame's bytes: encoded (the payload copied in), or its header and the payload itself as two pieces (`transfer`). */
function dataFrameBytes(data: DataFrame, transfer: boolean): FrameBytes {
  if (!transfer || data.payload.byteLength < TRANSFER_COPIED_BELOW_BYTES) return encodeFrame({ kind: 'data', data })
  const [head, payload] = encodeDataFramePieces(data)
  return new Uint8ArrayList(head, payload)
}
