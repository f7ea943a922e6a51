import { grownNarrow, type NarrowColumn, widenedFor } from './narrow.ts'

/** Rows a list keeps room for after `clear`: past this, it lets its column go (a burst's room is not kept for a trickle: 128 bytes a list). */
const KEPT_ROWS_MAX = 64

/**
 * A list of row numbers in push order, 2 bytes a row while every row is below 32,768 (narrow.ts),
 * grown by a quarter (at least 16). The routing table's dirty rows (`RouteColumns`) were a
 * `number[]`: 10.3 bytes a (node, destination) pair at the hello burst's peak in one subnet, when
 * every row of every table is dirty at once (heap snapshot at 1,000 processes,
 * `simulations/heap-owners.ts --at-events`). At most what its owner pushes between two clears.
 */
export class RowList {
  private column: NarrowColumn = new Int16Array(0)
  private count = 0

  get length(): number {
    return this.count
  }

  at(i: number): number {
    return this.column[i]!
  }

  push(row: number): void {
    let column = this.column
    if (this.count === column.length) column = grownNarrow(column, Math.max(this.count + 16, this.count + (this.count >> 2)), 0)
    this.column = widenedFor(column, row)
    this.column[this.count++] = row
  }

  clear(): void {
    this.count = 0
    if (this.column.length > KEPT_ROWS_MAX) this.column = new Int16Array(0)
  }
}
