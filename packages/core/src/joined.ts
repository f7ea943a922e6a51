import { NodeSet } from './nodeset.ts'

/**
 * Below this many joined neighbours a round's `clear` deletes their bits one by one (it keeps
 * their indices); past it, it zeroes the words: a node's index space is N/32 words, so 32 deletes
 * cost as much as the words, and a clear per round with a few joins stays O(joins).
 */
const LISTED_MAX = 32

/**
 * The neighbours (node indices) that joined since the last send round (`RouteTable.joined`;
 * send.ts considers every entry for them), as bits over the node index. A `Set<number>` held all
 * of a node's neighbours between the dial phase and the next round: 20.5 bytes a (node,
 * destination) pair at the hello burst's peak in one subnet (heap snapshot at 1,000 processes,
 * `simulations/heap-owners.ts --at-events`), a bit here. At most one bit per node index
 * (destinationsMax), and the round reads them ascending as it sorted the set before.
 */
export class JoinedNeighbours {
  private readonly bits = new NodeSet()
  private count = 0
  /** The first `LISTED_MAX` indices added since the last clear, for a clear in O(joins). */
  private readonly listed: number[] = []

  get size(): number {
    return this.count
  }

  add(index: number): void {
    if (this.bits.has(index)) return
    this.bits.add(index)
    if (this.count < LISTED_MAX) this.listed.push(index)
    this.count++
  }

  has(index: number): boolean {
    return this.bits.has(index)
  }

  clear(): void {
    if (this.count === 0) return
    if (this.count <= LISTED_MAX) for (const index of this.listed) this.bits.delete(index)
    else this.bits.clear()
    this.listed.length = 0
    this.count = 0
  }

  /** The joined that are in `neighbours` (the open connections now), ascending. */
  inAscending(neighbours: NodeSet): number[] {
    const list: number[] = []
    if (this.count <= LISTED_MAX) {
      for (const index of this.listed) if (neighbours.has(index)) list.push(index)
      return list.sort((a, b) => a - b)
    }
    this.bits.forEach((index) => {
      if (neighbours.has(index)) list.push(index)
    })
    return list
  }
}
