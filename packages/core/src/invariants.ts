import { invariant } from './errors.ts'
import type { CoreParts } from './parts.ts'

/**
 * Everything that must hold in one core between events (throws INVALID_STATE naming the broken
 * rule): our own entry is 0 hops away with an even sequence number; every reachable route's next
 * hop is a neighbour; trans and rcpt name only nodes we know; every limit is respected. Walks the
 * whole state: the property tests call it after every event, drivers do not.
 */
export function checkCoreInvariants(parts: CoreParts, inboxLength: number, left: boolean): void {
  const { limits, table, neighbours, book, police, nodeIndex } = parts
  table.checkInvariants(left, (id) => neighbours.has(id), (index) => nodeIndex.id(index) !== undefined, limits.destinationsMax)
  neighbours.checkInvariants(limits.neighboursMax)
  parts.expiry.tombstones.checkInvariants(limits)
  police.checkInvariants()
  invariant(inboxLength <= limits.inboxMessagesMax, `at most inboxMessagesMax (${limits.inboxMessagesMax}) queued updates`)
  invariant(book.size <= limits.knownAddressesMax, `at most knownAddressesMax (${limits.knownAddressesMax}) known addresses`)
  invariant(book.inFlightCount <= limits.dialsInFlightMax, `at most dialsInFlightMax (${limits.dialsInFlightMax}) dials in flight`)
  invariant(table.own.names.length <= limits.namesPerNodeMax, `at most namesPerNodeMax (${limits.namesPerNodeMax}) names of our own`)
  invariant(table.own.addresses.length <= limits.addressesPerNodeMax, `at most addressesPerNodeMax (${limits.addressesPerNodeMax}) addresses of our own`)
}
