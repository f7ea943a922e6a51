import type { NodeId } from './types.ts'

/**
 * Open connections, each given a small slot number: the trans sets we send name our neighbours
 * by slot. A freed slot is reused, so those bitsets stay as wide as the largest neighbour count.
 */
export class NeighbourTable {
  private readonly slotOf = new Map<NodeId, number>()
  private readonly idAt: (NodeId | undefined)[] = []
  private readonly freeSlots: number[] = []
  /** The wire form of the slots, rebuilt only after a change so receivers can recognise it. */
  private cachedSlotTable: readonly NodeId[] | undefined

  get size(): number {
    return this.slotOf.size
  }

  slot(id: NodeId): number | undefined {
    return this.slotOf.get(id)
  }

  id(slot: number): NodeId | undefined {
    return this.idAt[slot]
  }

  has(id: NodeId): boolean {
    return this.slotOf.has(id)
  }

  add(id: NodeId): number {
    const existing = this.slotOf.get(id)
    if (existing !== undefined) return existing
    // Lowest free slot first keeps the bitsets narrow.
    this.freeSlots.sort((a, b) => b - a)
    const slot = this.freeSlots.pop() ?? this.idAt.length
    this.slotOf.set(id, slot)
    this.idAt[slot] = id
    this.cachedSlotTable = undefined
    return slot
  }

  remove(id: NodeId): number | undefined {
    const slot = this.slotOf.get(id)
    if (slot === undefined) return undefined
    this.slotOf.delete(id)
    this.idAt[slot] = undefined
    this.freeSlots.push(slot)
    this.cachedSlotTable = undefined
    return slot
  }

  ids(): NodeId[] {
    return [...this.slotOf.keys()]
  }

  /** The slot table as sent on the wire: index = slot, '' = free. The same array until the next change. */
  slotTable(): readonly NodeId[] {
    if (this.cachedSlotTable !== undefined) return this.cachedSlotTable
    let end = this.idAt.length
    while (end > 0 && this.idAt[end - 1] === undefined) end--
    const out: NodeId[] = new Array(end)
    for (let i = 0; i < end; i++) out[i] = this.idAt[i] ?? ''
    this.cachedSlotTable = Object.freeze(out)
    return out
  }
}
