import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import type { CoreDriver } from './core-driver.ts'
import type { NodeParts } from './parts.ts'

/**
 * A dial of `address` met this node itself: a hub list that names us too, by an address our
 * record does not carry (every process of a job given the same list; libp2p finds out after the
 * handshake, or before it when the address ends in our peer id). It was logged as an error and
 * redialled every few seconds for as long as the node ran. The core now counts the address as
 * ours (`connectionUp` with our own id: its dials skip an address whose owner is us), so it is
 * never dialled again. `closing`: the node is leaving (nothing is told the core).
 */
export function dialReachedSelf(parts: NodeParts, driver: CoreDriver, address: string, closing: boolean): void {
  parts.metrics.count('dials_reached_self')
  parts.log('dial %s reached this node itself: not dialled again', address)
  // A hub with our peer id on a port we do not listen on is another process run with our key
  // (a copied key file): the two cannot reach each other, and this node sat alone without a word.
  if (driver.core.isHub(address) && !listensOnPortOf(parts, address)) {
    parts.metrics.count('hubs_with_own_key')
    parts.log.error('hub %s has this node\'s own peer id, but this node does not listen there: another process runs with the same key, and neither can reach the other (give each process its own --key / privateKey); not dialled again', address)
  }
  if (closing || driver.core.hasLeft) return
  driver.core.connectionUp(parts.id, driver.now(), address)
  driver.schedule()
}

/** Whether we listen on `address`'s TCP port (on any interface): then it is most likely us. */
function listensOnPortOf(parts: NodeParts, address: string): boolean {
  const port = (ma: Multiaddr) => ma.getComponents().find((c) => c.name === 'tcp')?.value
  const wanted = port(multiaddr(address))
  return wanted === undefined || parts.components.addressManager.getAddresses().some((ma) => port(ma) === wanted)
}
