import type { Connection } from '@libp2p/interface'
import type { NodeParts } from './parts.ts'

/** Peers `SecondStreams.reportTwin` remembers having reported (and counted): a few in practice; past this, no more are said. */
const TWINS_REPORTED_MAX = 64

/**
 * A second stream to a peer we hold one to (neighbours.ts, `attach`). Both ends keep the one the
 * smaller peer id opened, so when both dialled at once the larger end replaces its link: the core
 * hears `connectionReplaced`, which withdraws no route (a down and an up withdrew the peer's route,
 * and every node adopted the withdrawal until the peer issued a newer number).
 *
 * The smaller end may see the stream the larger opened reset *before* its own stream attaches
 * here: the larger end accepted ours and closed its own at once, while our opening was still
 * waiting for the protocol's answer (or ours came on another connection). Told to the core, that
 * close was a loss (the peer's route withdrawn, network-wide) and the attach a new neighbour held
 * at the odd number, until the peer heard of it and issued a newer one: test/netns saw 21 routes
 * fail right after convergence that way. So while a dial of ours to the peer is under way, the
 * close of a stream the peer opened is held: our stream attaching makes it a replacement; the dial
 * ending without one makes it the loss it was, told late by at most the dial's time.
 */
export class SecondStreams {
  private readonly dialsTo = new Map<string, number>()
  /** Peers whose link closed while a dial of ours to them was under way: not told to the core yet. */
  private readonly held = new Set<string>()
  /** Peers reported as possibly two processes with one key (`reportTwin`). */
  private readonly twinsReported = new Set<string>()

  constructor(private readonly parts: NodeParts) {}

  /** A dial of ours to `peer` (null: the address names no peer id) starts. Returns its end, which says whether a close held for it is due now. */
  dialStarted(peer: string | null): () => boolean {
    if (peer === null) return () => false
    this.dialsTo.set(peer, (this.dialsTo.get(peer) ?? 0) + 1)
    return () => {
      const left = (this.dialsTo.get(peer) ?? 1) - 1
      if (left > 0) this.dialsTo.set(peer, left)
      else this.dialsTo.delete(peer)
      return left === 0 && this.held.delete(peer)
    }
  }

  /**
   * The link to `peer` closed, not by us: whether it is held (the peer opened it, `inbound`, ours
   * would be kept, and a dial of ours to it is under way).
   */
  holdClose(peer: string, direction: 'inbound' | 'outbound'): boolean {
    if (direction !== 'inbound' || !(this.parts.id < peer) || !this.dialsTo.has(peer)) return false
    this.held.add(peer)
    this.parts.log('link to %s closed while our stream to it is being opened: held as replaced until our dial ends', peer)
    return true
  }

  /** A link to `peer` attaches: whether the close of its previous one was held (then it replaces that one). */
  takeHeld(peer: string): boolean {
    return this.held.delete(peer)
  }

  /**
   * A peer opened a second stream, on another connection, while its first is open: one node
   * keeps one stream per neighbour, so two processes run with one key (a copied key file), or it
   * restarted with its key and its old connection is not known dead yet. Said once per peer.
   */
  reportTwin(peer: string, first: Connection, second: Connection): void {
    if (this.twinsReported.has(peer) || this.twinsReported.size >= TWINS_REPORTED_MAX) return
    this.twinsReported.add(peer)
    this.parts.metrics.count('twins_suspected')
    this.parts.log.error('peer %s connected again from %s while its connection from %s is open: two processes may run with one key (each needs its own --key / privateKey; a copied key file is the same node), or it restarted and its old connection is not known dead yet. The second is refused', peer, second.remoteAddr.toString(), first.remoteAddr.toString())
  }
}
