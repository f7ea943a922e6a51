import type { CoreParts } from './parts.ts'
import type { NodeId, RouteAdvert } from './types.ts'

/**
 * Whose trans sets name holders (packages/core/README.md, "Holders are taken on the sender's
 * word"). A trans set says which of the sender's neighbours already hold an entry, and the
 * receiver does not send it to them (`rcpt`). Nothing checks it: a member that named our other
 * neighbours as holders of a destination kept it from them, and a node behind them whose only
 * way to it passed here never learned it (an adversarial audit, `test/audit-trans-lie.test.ts`).
 *
 * With discovery (the default: the overlay is found through hubs), holders are taken on the word
 * of those who can give it without harming a third node:
 * - one of our hubs (`isOurHub`: the peer that answered our dial at a hub address we were
 *   given), as its word that every neighbour is served (`allServed`) is: the hubs are the
 *   overlay's infrastructure, and their broadcasts are what spares a clique found through them
 *   a table per connection;
 * - the owner of a record, of its own record: a false holder of it only keeps that owner from
 *   being reached, which the owner can do anyway by not advertising itself.
 * A member's trans set for anyone else's record names no holder but the member itself: the entry
 * goes to our neighbours on our own decision, a duplicate where the member had sent it too. With
 * discovery, members seldom relay with trans sets (a hub's relay is the copy): the paper's
 * scenarios are unchanged at 400 and 2,000 processes, churn costs 3% more entries.
 * Without discovery (static peer lists: the simulator's offline and discovery-all baselines),
 * members' relays are most of the suppression (not taking their word cost 2.7× the entries at
 * 400 processes offline), and every peer's word is taken as before: what is left open there.
 */
export class TransWord {
  /** Whether the sender's trans sets are taken for every record (not only its own): decided once per message. */
  private readonly sendersWord: boolean

  constructor(p: CoreParts, private readonly from: NodeId) {
    this.sendersWord = p.mode !== 'optimized' || !p.discovery || p.isOurHub(from)
  }

  /** The trans set index to take from `advert` (-1: none, the sender alone holds it). */
  transOf(advert: RouteAdvert): number {
    return this.sendersWord || advert.destination === this.from ? advert.trans : -1
  }
}
