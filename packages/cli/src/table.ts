/** A peer id short enough for a table column: `12D3…frQwwXyz` (the first 4 and last 8 characters). */
export function shortId(id: string): string {
  return id.length <= 14 ? id : `${id.slice(0, 4)}…${id.slice(-8)}`
}

/** A list cut to `width` characters, ending in `…` when cut. */
export function clip(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`
}

/**
 * Rows as aligned text columns (two spaces apart, no borders), the header in capitals; columns
 * listed in `right` are right-aligned (numbers).
 */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[], right: ReadonlySet<number> = new Set()): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (right.has(i) ? c.padStart(widths[i]!) : i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [line(header.map((h) => h.toUpperCase())), ...rows.map(line)].join('\n') + '\n'
}
