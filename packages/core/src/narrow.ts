/**
 * Columns of small non-negative numbers (slots, node indices; -1 for none) 2 bytes each while
 * every value is below 32,768, 4 from the first that is not (`widenedFor`). In a simulator of up
 * to 32,767 processes, or a core that numbers fewer nodes, they stay 2 bytes a row.
 */
export type NarrowColumn = Int16Array | Int32Array

/** The value an Int16Array holds at most. */
const NARROW_MAX = 0x7fff

/** `column`, or a copy 4 bytes an element if it is 2 and `value` does not fit. */
export function widenedFor(column: NarrowColumn, value: number): NarrowColumn {
  return column instanceof Int16Array && value > NARROW_MAX ? Int32Array.from(column) : column
}

/** `column` copied into a column of the same width and `length`, the rest `fill`. */
export function grownNarrow(column: NarrowColumn, length: number, fill: number): NarrowColumn {
  const grown = column instanceof Int16Array ? new Int16Array(length) : new Int32Array(length)
  grown.fill(fill)
  grown.set(column)
  return grown
}
