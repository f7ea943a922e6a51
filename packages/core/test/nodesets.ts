import { NodeSet } from '../src/index.ts'

/** A NodeSet of `members` (capacity `width` bits to start; it grows). */
export const setOf = (members: readonly number[], width?: number): NodeSet => {
  const s = new NodeSet(width)
  for (const m of members) s.add(m)
  return s
}

/** A NodeSet's members in its own iteration order. */
export const membersOf = (s: NodeSet): number[] => {
  const out: number[] = []
  s.forEach((i) => out.push(i))
  return out
}
