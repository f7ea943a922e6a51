import { invariant } from './errors.ts'
import type { NodeId } from './types.ts'

/** A row with no introducer (its destination's own record came first, or a blank row). */
const NONE = 0
/** Introducer numbers a 2-byte column holds (1 to this); the column is 4 bytes from the first past it. */
const NARROW_MAX = 0xffff

/**
 * Who introduced each row's destination (`RouteEntry.introducedBy`: the neighbour that first
 * relayed it; per-neighbour limits count against it, police.ts), as a small number per
 * introducer in a typed column. An id, not a node index: it outlives the introducer's own entry
 * and connection. A reference per row was 8 bytes a (node, destination) pair, where a core has few
 * introducers (1.7 on average at the end of a 1,000-process three-subnet run: its gateways, and
 * some peers): here 2 bytes a row while at most 65,535 introducers are held at once, 4 past that.
 * Each introducer is counted once per row naming it and keeps its number while counted; at zero
 * its number is reused. So it holds at most one introducer per row.
 */
export class Introducers {
  private column: Uint16Array | Int32Array = new Uint16Array(0)
  private readonly numberOf = new Map<NodeId, number>()
  /** Introducer by number; index 0 (NONE) unused. */
  private readonly ids: (NodeId | undefined)[] = [undefined]
  /** Rows naming each number. */
  private readonly rows: number[] = [0]
  private readonly free: number[] = []

  /** The introducer of `row`, if any. */
  of(row: number): NodeId | undefined {
    const number = this.column[row]!
    return number === NONE ? undefined : this.ids[number]
  }

  /** `row` was introduced by `id` now (undefined: by no one). */
  set(row: number, id: NodeId | undefined): void {
    const old = this.column[row]!
    const number = id === undefined ? NONE : this.retain(id)
    if (number > NARROW_MAX && this.column instanceof Uint16Array) this.column = Int32Array.from(this.column)
    this.column[row] = number
    if (old !== NONE) this.release(old)
  }

  /** Room for `capacity` rows (new rows have no introducer). */
  grow(capacity: number): void {
    const grown = this.column instanceof Uint16Array ? new Uint16Array(capacity) : new Int32Array(capacity)
    grown.set(this.column)
    this.column = grown
  }

  /** Rows the column has room for (tests). */
  get capacity(): number {
    return this.column.length
  }

  /** Introducers held now (tests). */
  get size(): number {
    return this.numberOf.size
  }

  private retain(id: NodeId): number {
    let number = this.numberOf.get(id)
    if (number === undefined) {
      number = this.free.pop() ?? this.ids.length
      this.numberOf.set(id, number)
      this.ids[number] = id
      this.rows[number] = 0
    }
    this.rows[number]!++
    return number
  }

  private release(number: number): void {
    invariant(this.rows[number]! > 0, 'an introducer is released once per row naming it')
    if (--this.rows[number]! > 0) return
    this.numberOf.delete(this.ids[number]!)
    this.ids[number] = undefined
    this.free.push(number)
  }
}
