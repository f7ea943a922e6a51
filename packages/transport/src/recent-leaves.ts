import { multiaddr } from '@multiformats/multiaddr'

/**
 * Neighbours that announced their leave (a graceful stop) in the last `windowMs`, by peer id and
 * by the address we reached them at: a hub dial that fails in the handshake while the hub is
 * still stopping is the hub going away, not a wrong port or a private network key on one side
 * only, which is what such a failure says otherwise (found by hand: every graceful stop of a hub
 * printed that hint on each of its workers, whose first redial came while it was still leaving).
 */
export class RecentLeaves {
  /** key (a peer id, or an address without its /p2p/ part) → when it left (the driver's clock). */
  private readonly leftAtMs = new Map<string, number>()

  constructor(
    /** How long after its leave a failed dial is put down to it: a leave's own bounds (linger and flush) and a redial's back-off. */
    private readonly windowMs: number,
    /**
     * Entries kept (two per leave: peer and address): a node's neighbours leaving within one
     * window; past it the oldest go first, and a forgotten leave only costs the hint.
     */
    private readonly entriesMax: number,
  ) {}

  /** `peer`, reached at `address` (a multiaddr, with or without /p2p/; undefined if not known), left at `nowMs`. */
  record(peer: string, address: string | undefined, nowMs: number): void {
    for (const key of address === undefined ? [peer] : [peer, withoutPeer(address)]) {
      this.leftAtMs.delete(key)
      this.leftAtMs.set(key, nowMs)
    }
    for (const [key, atMs] of this.leftAtMs) {
      if (this.leftAtMs.size <= this.entriesMax && nowMs - atMs <= this.windowMs) break
      this.leftAtMs.delete(key)
    }
  }

  /** How long ago the node at `address` (its /p2p/ peer, or the address itself) left, if within the window. */
  agoMs(address: string, nowMs: number): number | undefined {
    const peer = peerOf(address)
    const atMs = (peer !== undefined ? this.leftAtMs.get(peer) : undefined) ?? this.leftAtMs.get(withoutPeer(address))
    return atMs !== undefined && nowMs - atMs <= this.windowMs ? nowMs - atMs : undefined
  }
}

function peerOf(address: string): string | undefined {
  try {
    return multiaddr(address).getComponents().findLast((c) => c.name === 'p2p')?.value
  } catch {
    return undefined
  }
}

/** The address without its /p2p/ part (421, the p2p protocol's code): a hub given with or without it is the same place. */
function withoutPeer(address: string): string {
  try {
    return multiaddr(address).decapsulateCode(421).toString()
  } catch {
    return address
  }
}
