import { FLOW_CREDIT_BYTES, WIRE_LIMITS, type DataFrame, type FlowCredit } from '@phoenix-overlay/wire'
import type { FrameBytes } from './link.ts'
import { PairKey } from './pair-key.ts'

/** Per-flow credit's bounds (TRANSPORT_LIMITS; see FLOW_CREDIT_BYTES in the wire package for the protocol's window). */
export interface CreditLimits {
  /** Bytes of one flow outstanding at the next hop (sent, credit not yet returned); 0 turns credit off. */
  readonly flowWindowBytes: number
  /** Bytes of our own sends one flow may have waiting for credit (beyond them the sender gets QUEUE_FULL). */
  readonly ownWaitingBytesMax: number
  /** Flows with frames waiting or credit outstanding toward one neighbour, and flows one neighbour has frames of here. */
  readonly flowsMaxPerNeighbour: number
  /** A flow that made no progress this long may be evicted when a new flow finds the table full. */
  readonly flowStallMs: number
}

/** Where credited frames go and where returned credit is written (the node's links). */
export interface CreditSink {
  /** Room in the data queue toward `peer` for a frame of `bytes`. */
  hasRoom(peer: string, bytes: number): boolean
  /** Queues a data frame toward `peer` (it had room); false if the link is gone. */
  write(peer: string, frame: FrameBytes, data: DataFrame): boolean
  /** Returns credit to `peer` (a previous hop); false if its link could not take the frame now (its control queue is full). */
  returnCredit(peer: string, flows: FlowCredit[]): boolean
  /** A frame that waited here for credit cannot go on (its flow was evicted, its link is gone): tell its source. */
  refuse(data: DataFrame, from: string | undefined, reason: 'queue-full' | 'neighbour-down'): void
  now(): number
}

/** A data frame waiting here for credit toward its next hop. */
interface Waiting {
  readonly frame: FrameBytes
  readonly data: DataFrame
  /** The previous hop (owed credit once the frame leaves); undefined for our own sends. */
  readonly from: string | undefined
  /** The bytes the previous hop counted: the frame as received (a re-encoded one may differ by a byte). */
  readonly receivedBytes: number
}

/** One flow toward one next hop: what waits for credit and what is outstanding there. */
interface OutFlow {
  readonly key: string
  readonly waiting: Waiting[]
  waitingBytes: number
  inFlightBytes: number
  lastProgressMs: number
}

/** What one neighbour's flows hold here, in each direction. */
interface PeerFlows {
  /** Flows toward this neighbour (it is their next hop), in round-robin order. */
  readonly out: Map<string, OutFlow>
  /** Bytes of each flow this neighbour sent us that are still here (not yet passed on). */
  readonly held: Map<string, number>
  /** Credit to return to this neighbour, per flow (its frames that left us). */
  readonly owed: Map<string, number>
}

export type Admission = 'sent' | 'queued' | 'flow-full' | 'table-full'

/**
 * A flow's key: the source's length, then the source and the destination. Ids come from the wire
 * and may hold any character: joined with a separator and split again, a source with a newline
 * came back split in the wrong place, and the credit frame for it named an empty source, which
 * the neighbour refused as malformed and dropped the link (found by the inbound fuzz test).
 */
export const flowKeyOf = (source: string, destination: string): string => `${source.length}:${source}${destination}`
const lastFlowKey = new PairKey(flowKeyOf)
export const flowKey = (data: DataFrame): string => lastFlowKey.of(data.source, data.destination)

/** The flow a key names (`flowKeyOf` undone). */
export function flowOfKey(key: string): { source: string; destination: string } {
  const colon = key.indexOf(':')
  const sourceEnd = colon + 1 + Number(key.slice(0, colon))
  return { source: key.slice(colon + 1, sourceEnd), destination: key.slice(sourceEnd) }
}

/**
 * Per-flow credit (issue 19, item 3; Grid Gateway's tokens for buffer space at the gateway). A
 * flow is a (source, destination) pair. Toward each next hop a flow may have `flowWindowBytes`
 * outstanding; beyond that its frames wait here, in its own queue, and the previous hop (or our
 * own sender) runs out of its credit for that flow. The next hop returns credit as the frames
 * leave it. So a stopped receiver exhausts its own flow's credit, every other flow sharing the
 * links keeps moving, and no node stops reading a link for want of room: frames arrive only
 * with credit, and room for them was promised.
 */
export class FlowCredits {
  private readonly peers = new Map<string, PeerFlows>()
  /** Neighbours with credit owed, returned once per turn of the event loop. */
  private readonly owing = new Set<string>()
  private returnScheduled = false
  /** Neighbours being pumped now, and those whose pump was asked for again meanwhile. */
  private readonly pumping = new Set<string>()
  private readonly pumpAgain = new Set<string>()
  evictions = 0
  /** Credit frames a link could not take at once (kept owed, returned once it drains). */
  creditRefused = 0
  /** Flows that re-synchronised: out of credit for `flowStallMs` with frames waiting (resyncStalled). */
  resyncs = 0
  /** Runs resyncStalled while some flow waits for credit; cleared once none does. */
  private stallTimer: ReturnType<typeof setInterval> | undefined

  constructor(
    private readonly limits: CreditLimits,
    private readonly sink: CreditSink,
  ) {
    if (limits.flowWindowBytes < 0 || limits.flowsMaxPerNeighbour < 1) throw new Error('invariant: flowWindowBytes ≥ 0 and flowsMaxPerNeighbour ≥ 1')
  }

  get enabled(): boolean {
    return this.limits.flowWindowBytes > 0
  }

  private flows(peer: string): PeerFlows {
    let flows = this.peers.get(peer)
    if (flows === undefined) {
      flows = { out: new Map(), held: new Map(), owed: new Map() }
      this.peers.set(peer, flows)
    }
    return flows
  }

  /**
   * A data frame for `nextHop`, from the previous hop `from` (undefined: our own send). It goes
   * at once if its flow has credit and the link room, else waits in its flow's queue. Refused
   * (`flow-full`) when the previous hop sent beyond its credit or our own sender has
   * `ownWaitingBytesMax` waiting; `table-full` when a new flow finds no room (after evicting a stalled one, if any).
   */
  submit(nextHop: string, frame: FrameBytes, data: DataFrame, from: string | undefined, receivedBytes = frame.byteLength): Admission {
    const key = flowKey(data)
    const window = this.limits.flowWindowBytes
    const inbound = from === undefined ? undefined : this.flows(from)
    const held = inbound?.held.get(key)
    // The previous hop may have a window outstanding here (the protocol's, or ours if larger), plus the frame that crossed it.
    if (held !== undefined && held >= Math.max(window, FLOW_CREDIT_BYTES) + WIRE_LIMITS.frameBytesMax) return 'flow-full'
    if (inbound !== undefined && held === undefined && inbound.held.size >= this.limits.flowsMaxPerNeighbour) return 'table-full'
    const outbound = this.flows(nextHop)
    let flow = outbound.out.get(key)
    if (flow === undefined) {
      if (!this.makeRoom(outbound)) return 'table-full'
      flow = { key, waiting: [], waitingBytes: 0, inFlightBytes: 0, lastProgressMs: this.sink.now() }
      outbound.out.set(key, flow)
    }
    if (from === undefined && flow.waitingBytes >= this.limits.ownWaitingBytesMax) return 'flow-full'
    inbound?.held.set(key, (held ?? 0) + receivedBytes)
    if (flow.waiting.length === 0 && flow.inFlightBytes < window && this.sink.hasRoom(nextHop, frame.byteLength)) {
      this.pass(nextHop, flow, { frame, data, from, receivedBytes })
      return 'sent'
    }
    flow.waiting.push({ frame, data, from, receivedBytes })
    flow.waitingBytes += frame.byteLength
    this.watchStalls()
    return 'queued'
  }

  /** True if our own sender's flow toward `nextHop` has `ownWaitingBytesMax` waiting: checked before a frame is encoded for nothing. */
  ownFlowFull(nextHop: string, data: DataFrame): boolean {
    return (this.peers.get(nextHop)?.out.get(flowKey(data))?.waitingBytes ?? 0) >= this.limits.ownWaitingBytesMax
  }

  /** A frame goes to the link: credit toward the next hop is spent, and what we owe its previous hop grows. */
  private pass(nextHop: string, flow: OutFlow, item: Waiting): void {
    flow.lastProgressMs = this.sink.now()
    // Counted before the write: the link may call back (linkDrained, a pump) before it returns.
    flow.inFlightBytes += item.frame.byteLength
    if (!this.sink.write(nextHop, item.frame, item.data)) {
      flow.inFlightBytes -= item.frame.byteLength
      this.sink.refuse(item.data, item.from, 'neighbour-down')
    }
    if (item.from !== undefined) this.release(item.from, flow.key, item.receivedBytes)
  }

  /** `bytes` of `from`'s frames of flow `key` left us (passed on, delivered or refused): credit is owed. */
  release(from: string, key: string, bytes: number): void {
    const flows = this.peers.get(from)
    const held = flows?.held.get(key)
    if (flows === undefined || held === undefined) return // the neighbour went away meanwhile
    if (held <= bytes) flows.held.delete(key)
    else flows.held.set(key, held - bytes)
    flows.owed.set(key, (flows.owed.get(key) ?? 0) + bytes)
    this.scheduleReturn(from)
  }

  /** Credit owed to `peer` goes out on the next turn of the event loop, with everything else owed by then. */
  private scheduleReturn(peer: string): void {
    this.owing.add(peer)
    if (this.returnScheduled) return
    this.returnScheduled = true
    setImmediate(() => this.returnOwed())
  }

  /** Counts a data frame from `from` that is handled at once (delivered here, or refused): its credit is owed right away. */
  consumed(from: string, data: DataFrame, bytes: number): void {
    const key = flowKey(data)
    const flows = this.flows(from)
    flows.held.set(key, (flows.held.get(key) ?? 0) + bytes)
    this.release(from, key, bytes)
  }

  /** One credit frame per neighbour we owe, per turn of the event loop (split at creditFlowsMax). */
  private returnOwed(): void {
    this.returnScheduled = false
    // Taken before any credit goes out: a credit frame's write may drain its link at once, and the
    // pump that follows may pass frames and owe more credit (release). That must land in a fresh
    // set with its own turn scheduled; cleared afterwards, it would be stranded until that
    // neighbour sent again, and a neighbour out of credit never does (a flow stalled for good).
    const owing = [...this.owing]
    this.owing.clear()
    for (const peer of owing) {
      const flows = this.peers.get(peer)
      if (flows === undefined) continue
      const credits: FlowCredit[] = []
      for (const [key, bytes] of flows.owed) {
        credits.push({ ...flowOfKey(key), bytes })
      }
      flows.owed.clear()
      this.forgetIfIdle(peer, flows)
      for (let at = 0; at < credits.length; at += WIRE_LIMITS.creditFlowsMax) {
        const part = credits.slice(at, at + WIRE_LIMITS.creditFlowsMax)
        if (this.sink.returnCredit(peer, part)) continue
        // Never dropped: credit lost with the link up stalls its flow for good. It stays owed and
        // goes when the link has room again (`linkDrained`); the link closing forgets it with the rest.
        this.creditRefused++
        const kept = this.flows(peer)
        for (const { source, destination, bytes } of part) {
          const key = flowKeyOf(source, destination)
          kept.owed.set(key, (kept.owed.get(key) ?? 0) + bytes)
        }
      }
    }
  }

  /** `peer`'s link emptied its queue: credit it could not take before goes now, then waiting frames move. */
  linkDrained(peer: string): void {
    if ((this.peers.get(peer)?.owed.size ?? 0) > 0) this.scheduleReturn(peer)
    this.pump(peer)
  }

  /** Credit returned by `peer` (a next hop): frames of those flows may go on. */
  granted(peer: string, credits: readonly FlowCredit[]): number {
    const flows = this.peers.get(peer)
    let unmatched = 0
    for (const credit of credits) {
      const flow = flows?.out.get(flowKeyOf(credit.source, credit.destination))
      if (flow === undefined) {
        unmatched++
        continue
      }
      flow.inFlightBytes = Math.max(0, flow.inFlightBytes - credit.bytes)
      flow.lastProgressMs = this.sink.now()
    }
    this.pump(peer)
    return unmatched
  }

  /**
   * Moves waiting frames toward `peer` while their flows have credit and its link has room,
   * one frame per flow per round (round robin), so flows share a link evenly.
   */
  pump(peer: string): void {
    // A write may call back into a pump (the link drained): the outer pump goes round again instead.
    if (this.pumping.has(peer)) {
      this.pumpAgain.add(peer)
      return
    }
    this.pumping.add(peer)
    try {
      do {
        this.pumpAgain.delete(peer)
        this.pumpOnce(peer)
      } while (this.pumpAgain.has(peer))
    } finally {
      this.pumping.delete(peer)
    }
  }

  private pumpOnce(peer: string): void {
    const flows = this.peers.get(peer)
    if (flows === undefined) return
    const window = this.limits.flowWindowBytes
    for (let moved = true; moved; ) {
      moved = false
      for (const flow of [...flows.out.values()]) {
        if (flow.waiting.length === 0) {
          if (flow.inFlightBytes === 0) flows.out.delete(flow.key)
          continue
        }
        if (flow.inFlightBytes >= window) continue
        const next = flow.waiting[0]!
        if (!this.sink.hasRoom(peer, next.frame.byteLength)) return
        flow.waiting.shift()
        flow.waitingBytes -= next.frame.byteLength
        this.pass(peer, flow, next)
        // To the back of the round: the next pump starts with the flows that waited longest.
        flows.out.delete(flow.key)
        flows.out.set(flow.key, flow)
        moved = true
      }
    }
    this.forgetIfIdle(peer, flows)
  }

  /**
   * Checks for stalled flows twice per `flowStallMs` (a stall is then seen within 1.5 × flowStallMs)
   * while any frame waits; the timer does not keep the process alive and stops once nothing waits.
   */
  private watchStalls(): void {
    if (this.stallTimer !== undefined) return
    this.stallTimer = setInterval(() => this.resyncStalled(), this.limits.flowStallMs / 2)
    this.stallTimer.unref?.()
  }

  /**
   * Self-repair: credit lost while its link stays up (a bug, or a credit frame that never came)
   * would stall a flow for good, since its credit otherwise comes back only when the link closes
   * or the flow is evicted. A flow with frames waiting, its window exhausted and no credit back
   * for `flowStallMs` (10 s, beyond any sender's ack timeout: such a flow is stuck, not slow) is
   * taken to have nothing outstanding and sends again. Bounded: a next hop that does hold our
   * window (its receiver really stopped) takes at most its window plus one frame of the flow
   * from us and refuses the rest `queue-full`, loudly; so a flow that resyncs for nothing costs
   * at most that, once per `flowStallMs`.
   */
  resyncStalled(): void {
    const now = this.sink.now()
    const window = this.limits.flowWindowBytes
    let waiting = 0
    for (const [peer, flows] of [...this.peers]) {
      let resynced = false
      for (const flow of flows.out.values()) {
        if (flow.waiting.length === 0) continue
        waiting++
        if (flow.inFlightBytes < window || now - flow.lastProgressMs < this.limits.flowStallMs) continue
        flow.inFlightBytes = 0
        flow.lastProgressMs = now
        this.resyncs++
        resynced = true
      }
      if (resynced) this.pump(peer)
    }
    if (waiting === 0) {
      clearInterval(this.stallTimer)
      this.stallTimer = undefined
    }
  }

  /** Every neighbour's waiting frames, after a link had room again. */
  pumpAll(): void {
    for (const peer of [...this.peers.keys()]) this.pump(peer)
  }

  /**
   * Room for a new flow toward a neighbour: if its table is full, the flow stalled longest (no credit
   * back for `flowStallMs`) is evicted, its waiting frames refused `queue-full`, its outstanding
   * credit forgotten (a next hop still holding that much refuses any overrun, loudly).
   */
  private makeRoom(flows: PeerFlows): boolean {
    if (flows.out.size < this.limits.flowsMaxPerNeighbour) return true
    const now = this.sink.now()
    let victim: OutFlow | undefined
    for (const flow of flows.out.values()) if (now - flow.lastProgressMs >= this.limits.flowStallMs && (victim === undefined || flow.lastProgressMs < victim.lastProgressMs)) victim = flow
    if (victim === undefined) return false
    flows.out.delete(victim.key)
    this.evictions++
    for (const item of victim.waiting) {
      if (item.from !== undefined) this.release(item.from, victim.key, item.receivedBytes)
      this.sink.refuse(item.data, item.from, 'queue-full')
    }
    return true
  }

  private forgetIfIdle(peer: string, flows: PeerFlows): void {
    if (flows.out.size === 0 && flows.held.size === 0 && flows.owed.size === 0) this.peers.delete(peer)
  }

  /** `peer`'s link closed: the frames waiting to go to it (to bounce), and nothing more of its credit in either direction. */
  linkClosed(peer: string): Waiting[] {
    const flows = this.peers.get(peer)
    this.peers.delete(peer)
    this.owing.delete(peer)
    if (flows === undefined) return []
    const stranded: Waiting[] = []
    for (const flow of flows.out.values()) stranded.push(...flow.waiting)
    for (const item of stranded) if (item.from !== undefined) this.release(item.from, flowKey(item.data), item.receivedBytes)
    return stranded
  }

  /** Frames waiting for credit, and their bytes (the metrics' gauges). */
  get waiting(): { frames: number; bytes: number; flows: number } {
    let frames = 0
    let bytes = 0
    let count = 0
    for (const flows of this.peers.values()) {
      for (const flow of flows.out.values()) {
        frames += flow.waiting.length
        bytes += flow.waitingBytes
        count++
      }
    }
    return { frames, bytes, flows: count }
  }
}
