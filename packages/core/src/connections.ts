import { peerProbablyHoldsOurs, routeDirectly } from './apply.ts'
import type { Neighbour } from './neighbours.ts'
import type { CoreParts } from './parts.ts'
import type { NodeId } from './types.ts'

/**
 * What a connection coming, going or being replaced does to one core (core.ts `connectionUp`,
 * `connectionDown`, `connectionReplaced`): the neighbour's record opens and closes with it, and
 * so does everything believed of the peer through it.
 */

/**
 * A new neighbour (its record just added): every entry may have to go to it, and a neighbour whose
 * record we hold is one hop away at once.
 */
export function neighbourOpened(p: CoreParts, neighbour: Neighbour, nowMs: number): void {
  if (p.mode === 'naive') return
  // Every entry may have to go to the new neighbour, except those it is already known to hold
  // (it was named in a trans set we received, e.g. a hub's broadcast): that is where indexing
  // all known nodes, not only neighbours, saves a full table per connection.
  p.table.joined.add(neighbour.index)
  // Our record waits for the hello only where the peer probably holds it: with discovery on,
  // connections follow the records (we dial what we learned), so if we hold the peer's record
  // it most likely got ours the same way (a hub broadcasts both, or says it serves it: apply.ts). A hub met through our
  // configuration, or a connection list given offline, would make us wait a round trip for
  // nothing, behind a peer that may be busy (measured: 10% slower offline convergence).
  if (peerProbablyHoldsOurs(p, neighbour.id, neighbour.index)) p.neighbours.setFlag(neighbour, 'ownWaitsForHello', true)
  routeDirectly(p, neighbour.id, neighbour.index, nowMs)
}

/**
 * Closes the record of the connection to `peer` (undefined if it was none). Whatever went over
 * it may have been lost with it: nothing counts as held by the peer any more, and the other
 * neighbours hear of the loss (`UpdateMessage.lostNeighbours`). `replaced`: the peer stays
 * connected, on a new connection the caller opens next, so it stays one hop away and no route
 * through it is withdrawn, and it is not dialled again. A withdrawal there was a retraction (the
 * peer's next odd number) that every node adopted, even the peer's other neighbours, until the
 * peer heard it and issued a newer number: the whole overlay lost both ends of a replaced link
 * for a moment (test/netns, right after convergence).
 */
export function neighbourClosed(p: CoreParts, peer: NodeId, nowMs: number, replaced: boolean): Neighbour | undefined {
  const coHub = p.coHubs().find((n) => n.id === peer)
  const gone = p.neighbours.remove(peer)
  if (gone === undefined) return undefined
  p.fanout.neighbourGone(gone, coHub?.is(gone) === true ? p : undefined) // fanout.ts: the round, a co-hub's promises
  // Dial it again until it answers: a hub always, another neighbour while remembered (the
  // addresses of its record, read before the table forgets where it was; discovery on only).
  if (!replaced) p.book.connectionLost(peer, p.discovery ? (p.table.get(peer)?.addresses ?? []) : undefined, nowMs, nowMs - gone.upAtMs)
  p.table.neighbourGone(peer, gone.index, nowMs, replaced)
  if (p.mode === 'optimized') p.neighbours.noteLost(peer, p.limits.neighboursMax)
  return gone
}
