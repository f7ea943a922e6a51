import type { Neighbour } from './neighbours.ts'
import { NodeSet } from './nodeset.ts'
import type { CoreParts } from './parts.ts'
import type { NodeId } from './types.ts'

/**
 * The lost connections a neighbour tells us of (`UpdateMessage.lostNeighbours`), over one apply
 * step. Each list costs a pass over the whole table (`RouteTable.forgetLostHolders`), and a member
 * naming a lost node in each of a flood of empty updates bought a pass per token of its update
 * budget: 1.6 ms each at 20,000 destinations, a full inbox ~13 s of one step, longer than the
 * neighbours' liveness bound (an adversarial audit). So a sender's first list in a step is applied
 * as it comes, and its later ones in the same step are merged and applied in one pass when the
 * step ends: one or two passes per sender per step. Forgetting holders later than heard only
 * forgets more (a few entries sent again), never less. Its word that its neighbours are served is
 * void at once, each time (a later message of the step may say it again).
 */
export class LostInStep {
  /** The connections (`Neighbour.connection`) whose first list of the step was applied; made at the first (a step per apply, most with no list). */
  private applied: Set<number> | undefined
  /** By connection; bounded by what the step's messages carry (the inbox's bound times `lostNeighbours`' length bound, police.ts). */
  private merged: Map<number, { from: Neighbour; ids: Set<NodeId> }> | undefined

  heard(p: CoreParts, from: Neighbour, lost: readonly NodeId[]): void {
    // Its word that its neighbours are served named them: void until it says it again.
    p.neighbours.servedBy.delete(from.index)
    this.applied ??= new Set()
    if (!this.applied.has(from.connection)) {
      this.applied.add(from.connection)
      forgetLost(p, from, lost)
      return
    }
    this.merged ??= new Map()
    let merged = this.merged.get(from.connection)
    if (merged === undefined) this.merged.set(from.connection, (merged = { from, ids: new Set() }))
    for (const id of lost) merged.ids.add(id)
  }

  /** The step ends: the merged lists, one pass per sender still connected on the same connection. */
  end(p: CoreParts): void {
    if (this.merged === undefined) return
    for (const [connection, { from, ids }] of this.merged) if (p.neighbours.get(from.id)?.connection === connection) forgetLost(p, from, [...ids])
  }
}

/**
 * `from` lost its connections to the nodes in `lost`: what went over them may have been lost with
 * them, while each end had told us it arrived (`RouteTable.forgetLostHolders`). A node we never
 * heard of is in no holder set; one that is not our neighbour (any more) vouched for nothing here.
 */
function forgetLost(p: CoreParts, from: Neighbour, lost: readonly NodeId[]): void {
  const all = new NodeSet()
  const neighbours = new NodeSet()
  for (const id of lost) {
    const index = p.nodeIndex.get(id)
    if (index === undefined) continue
    all.add(index)
    if (p.neighbours.has(id)) neighbours.add(index)
  }
  if (!all.isEmpty()) p.table.forgetLostHolders(from.index, all, neighbours)
}
