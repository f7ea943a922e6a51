import type { Logger } from '@libp2p/interface'
import { FLAPPING_PEERS_MAX } from './constants.ts'
import type { Metrics } from './metrics.ts'

/**
 * Early closes in a row that make the line an error: a refusal repeats at every redial (1 s, 2 s,
 * then `redialBackoffMaxMs` apart), while a worker a job manager kills right after it started is
 * seen once, twice if it is restarted with its key and killed again at once.
 */
const FLAPS_IN_A_ROW_FOR_ERROR = 3

/**
 * What a node says of a neighbour that closed the connection soon after it opened (a flap: under
 * `connectionStableMs`, not closed by us, not a leave). Once is what a process that crashed or
 * was killed does, routine where a job manager kills workers: a plain line. The same peer doing it
 * FLAPS_IN_A_ROW_FOR_ERROR times in a row refuses us, and the error line says the likely reasons. A churn audit of real
 * processes saw the error line for nearly every worker it killed.
 */
export class FlapLog {
  /** Early closes in a row, by peer (at most FLAPPING_PEERS_MAX; a Map keeps insertion order, the oldest first). */
  private readonly inARow = new Map<string, number>()

  constructor(
    private readonly log: Logger,
    private readonly metrics: Metrics,
  ) {}

  /** `peer`'s connection closed after `livedMs`; `flap`: early, and not by us or a leave. */
  closed(peer: string, livedMs: number, reason: string, flap: boolean): void {
    const before = this.inARow.get(peer) ?? 0
    this.inARow.delete(peer)
    if (!flap) return
    this.metrics.count('neighbours_flapped')
    if (this.inARow.size >= FLAPPING_PEERS_MAX) this.inARow.delete(this.inARow.keys().next().value!)
    this.inARow.set(peer, before + 1)
    if (before + 1 < FLAPS_IN_A_ROW_FOR_ERROR) {
      this.log('neighbour %s closed the connection %d ms after it opened (%s), as a process that crashed or was killed does; it is dialled again with a growing back-off', peer, livedMs, reason)
      return
    }
    this.log.error('neighbour %s closed the connection %d ms after it opened (%s), %d times in a row: it refuses us, unless it crashed each time, and its log says why: it cannot verify our record (one node signs records, signRecords / --no-sign, and the other does not), or another process runs with this node\'s key (a copied key file); it is dialled again with a growing back-off', peer, livedMs, reason, before + 1)
  }

  get size(): number {
    return this.inARow.size
  }
}

