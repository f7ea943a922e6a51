import { PhoenixCore, bytesEqual, type CoreConfig, type Effect, type RecordAuthority, type SharedNumbering, type StepResult, type UpdateMessage } from '@phoenix-overlay/core'
import { offlineHubs } from './baselines/offline.ts'
import { MODELLED_SIGNATURE_BYTES } from './constants.ts'
import type { Kernel, SimCounters } from './kernel.ts'
import type { Network } from './network.ts'
import type { Payload, SimNode, SimProcess, SimRoute } from './process.ts'

/** Sizes an update on the wire; the default is the wire codec's exact `encodedUpdateSize`. */
export type UpdateSizer = (update: UpdateMessage) => number

/** What every core of a run shares: the kernel, the network, the update sizer, the shared node numbering. */
export interface CoreProcessEnv {
  readonly kernel: Kernel
  readonly network: Network
  readonly sizeOfUpdate: UpdateSizer
  /**
   * One node numbering for every core of this run: trans sets then travel in it beside their wire
   * form and are not translated bit by bit at each receiver (`SharedNumbering`; the routing is
   * identical, a core property test checks the traces match).
   */
  readonly numbering: SharedNumbering
  /** Each node's number in `numbering`, and back. */
  readonly numbered: NumberedNodes
}

/**
 * Each node's number in the run's shared numbering and back, cached both ways (a shared
 * numbering never releases a number). For the reachability samples: a walk along routes asks
 * each core by number (`PhoenixCore.nextHopIndex`), where asking by id cost two id lookups and a
 * route view per step (7% of a 2,000-process run).
 */
export class NumberedNodes {
  private readonly indexOfNode: Int32Array
  private readonly nodeOfIndex: (SimNode | undefined)[] = []

  constructor(
    private readonly kernel: Kernel,
    private readonly numbering: SharedNumbering,
  ) {
    this.indexOfNode = new Int32Array(kernel.nodes.length).fill(-1)
  }

  /** `node`'s number, -1 while no core has numbered it. */
  indexOf(node: SimNode): number {
    let index = this.indexOfNode[node.index]!
    if (index < 0) {
      index = this.numbering.index.get(node.id) ?? -1
      this.indexOfNode[node.index] = index
    }
    return index
  }

  /** The node numbered `index`. */
  nodeAt(index: number): SimNode | undefined {
    let node = this.nodeOfIndex[index]
    if (node === undefined) {
      const id = this.numbering.index.id(index)
      node = id === undefined ? undefined : this.kernel.byId.get(id)
      this.nodeOfIndex[index] = node
    }
    return node
  }
}

/**
 * Our core on a simulated node: each step is charged to the node's CPU (per message, per entry,
 * per dial, per record signed or verified) and its effects leave when the step is done.
 */
export class CoreProcess implements SimProcess {
  readonly core: PhoenixCore

  constructor(
    private readonly node: SimNode,
    private readonly env: CoreProcessEnv,
    config: CoreConfig,
  ) {
    this.core = new PhoenixCore(config, env.numbering)
  }

  step(nowMs: number): void {
    this.applyStep(this.core.step(nowMs))
  }

  receive(from: SimNode, payload: Payload, nowMs: number): boolean {
    if (payload.t !== 'update') return true
    // The core refused this connection (e.g. its neighbour limit) and will close it at its next
    // step; until then what arrives on it is discarded, as a transport would, and counted as lost.
    const index = this.env.numbered.indexOf(from)
    if (index < 0 || !this.core.isNeighbourIndex(index)) {
      this.env.kernel.counters.messagesLost++
      return true
    }
    return this.core.receive(from.id, payload.message, nowMs, index)
  }

  /** Whether `peer` is the core's neighbour, asked by number: an id lookup in a map of every neighbour was 2% of a 2,000-process run. */
  isNeighbour(peer: SimNode): boolean {
    const index = this.env.numbered.indexOf(peer)
    return index >= 0 && this.core.isNeighbourIndex(index)
  }

  dialFailed(address: string, nowMs: number): void {
    this.core.dialFailed(address, nowMs)
  }

  dialSucceeded(target: SimNode, address: string, nowMs: number): void {
    this.core.connectionUp(target.id, nowMs, address)
  }

  acceptsConnection(peer: SimNode): boolean {
    return this.core.acceptsConnection(peer.id)
  }

  connectionUp(peer: SimNode, nowMs: number): void {
    this.core.connectionUp(peer.id, nowMs)
  }

  connectionDown(peer: SimNode, nowMs: number): void {
    this.core.connectionDown(peer.id, nowMs)
  }

  consecutiveDialFailures(address: string): number {
    return this.core.dialBackoff(address)?.consecutiveFailures ?? 0
  }

  leave(nowMs: number): Map<number, number> {
    const { kernel, network } = this.env
    const lastArrival = new Map<number, number>()
    for (const effect of this.core.leave(nowMs)) {
      if (effect.type !== 'send') continue
      const to = kernel.node(effect.to)
      lastArrival.set(to.index, network.sendUpdate(this.node, to, effect.message, nowMs, this.env.sizeOfUpdate(effect.message)))
    }
    return lastArrival
  }

  hasWork(nowMs: number): boolean {
    return this.core.hasWork(nowMs)
  }

  nextHop(v: SimNode): SimNode | undefined {
    const numbered = this.env.numbered
    const index = numbered.indexOf(v)
    if (index < 0) return undefined
    const fwd = this.core.nextHopIndex(index)
    return fwd < 0 ? undefined : numbered.nodeAt(fwd)
  }

  hopsTo(v: SimNode): number {
    const index = this.env.numbered.indexOf(v)
    return index < 0 ? -1 : this.core.hopsIndex(index)
  }

  route(v: SimNode): SimRoute | undefined {
    const r = this.core.route(v.id)
    if (r === undefined || !r.reachable || r.fwd === undefined) return undefined
    const fwd = this.env.kernel.byId.get(r.fwd)
    return fwd === undefined ? undefined : { fwd, nhops: r.nhops, seq: r.seq }
  }

  private applyStep(result: StepResult): void {
    const { kernel } = this.env
    const node = this.node
    const p = kernel.scenario.processing
    let dials = 0
    for (const effect of result.effects) if (effect.type === 'dial') dials++
    const costUs =
      p.perMessageUs * (result.messagesApplied + result.messagesSent) +
      p.perEntryUs * (result.entriesApplied + result.entriesSent) +
      p.perConnectionUs * dials +
      p.perRecordSignUs * node.recordOps.signs +
      p.perRecordVerifyUs * node.recordOps.verifies
    node.recordOps.signs = 0
    node.recordOps.verifies = 0
    const doneMs = kernel.charge(node, costUs / 1000)
    if (result.messagesApplied > 0) kernel.counters.lastActivityMs = doneMs
    this.performEffects(result.effects, doneMs)
    if (result.kind !== 'idle') kernel.kick(node)
    else if (result.wakeAtMs !== undefined) kernel.kick(node, result.wakeAtMs)
  }

  private performEffects(effects: readonly Effect[], atMs: number): void {
    const { kernel, network } = this.env
    for (const effect of effects) {
      if (effect.type === 'send') {
        const to = kernel.node(effect.to)
        network.sendUpdate(this.node, to, effect.message, atMs, this.env.sizeOfUpdate(effect.message))
      } else if (effect.type === 'dial') {
        network.startDial(this.node, effect.address, atMs)
      } else {
        const peer = kernel.byId.get(effect.peer)
        const conn = peer === undefined ? -1 : network.connectionTo(this.node, peer)
        if (conn >= 0) network.closeConnection(conn, true)
      }
    }
  }
}

/**
 * Stands in for Ed25519 so that the core signs and verifies exactly when it would with real keys
 * (its own record on every change; a received record once, when first seen) while the simulator
 * charges the measured CPU cost. The "signature" is a 32-bit FNV-1a hash of the payload bound to
 * the signer's id, so a record altered on the way would still fail to verify, padded to Ed25519's
 * 64 bytes (MODELLED_SIGNATURE_BYTES) so that updates are as large on the modelled links as on real ones.
 */
const FNV1A_OFFSET_BASIS = 0x811c9dc5
const FNV1A_PRIME = 0x01000193

export function modelledRecordAuthority(id: string, ops: { signs: number; verifies: number }, totals: Pick<SimCounters, 'recordSigns' | 'recordVerifications'>): RecordAuthority {
  const tag = (node: string, payload: Uint8Array): Uint8Array => {
    let hash = FNV1A_OFFSET_BASIS
    for (let i = 0; i < node.length; i++) hash = Math.imul(hash ^ node.charCodeAt(i), FNV1A_PRIME)
    for (const byte of payload) hash = Math.imul(hash ^ byte, FNV1A_PRIME)
    const out = new Uint8Array(MODELLED_SIGNATURE_BYTES)
    new DataView(out.buffer).setUint32(0, hash >>> 0)
    return out
  }
  return {
    sign: (payload) => {
      ops.signs++
      totals.recordSigns++
      return tag(id, payload)
    },
    verify: (node, payload, signature) => {
      ops.verifies++
      totals.recordVerifications++
      return bytesEqual(signature, tag(node, payload))
    },
  }
}

/**
 * The configuration of `node`'s core for the run's strategy: hubs only (discovery), every address
 * (`discovery: 'all'`), or its share of the complete configuration (the offline baseline).
 */
export function coreConfigFor(node: SimNode, kernel: Kernel): CoreConfig {
  const s = kernel.scenario
  const others = (pred: (n: SimNode) => boolean) => kernel.nodes.filter((n) => n !== node && pred(n)).map((n) => n.address)
  let hubs: string[]
  let discovery = true
  if (s.strategy === 'offline') {
    hubs = offlineHubs(node, kernel.nodes)
    discovery = false
  } else if (s.discovery === 'all') {
    hubs = others(() => true)
    discovery = false
  } else {
    // Every node is given the same hub list, a gateway its own address too: that is how a
    // gateway knows it is a hub and the others are its co-hubs (core fanout.ts, coHubWaitMs).
    hubs = kernel.nodes.filter((n) => n.gateway).map((n) => n.address)
  }
  const signed = s.processing.perRecordSignUs > 0 || s.processing.perRecordVerifyUs > 0
  return {
    id: node.id,
    addresses: [node.address],
    hubs,
    mode: s.strategy === 'naive' ? 'naive' : 'optimized',
    discovery,
    timing: s.coreTiming,
    // The paper's protocol: one next hop per destination. Several (alternates.ts) change the
    // update traffic and the failover, and the simulator models neither per-flow forwarding nor
    // the figures' baselines with them.
    limits: { ecmpNextHopsMax: 1, ...s.coreLimits },
    ...(signed ? { records: modelledRecordAuthority(node.id, node.recordOps, kernel.counters) } : {}),
  }
}
