import { invariant } from './errors.ts'
import type { NodeId } from './types.ts'

/** What a check needs to know of one route: R_u[v] if u holds a reachable entry for v. */
export interface ValidRoute {
  readonly fwd: NodeId
  readonly nhops: number
}

/** `route(u, v)`: u's reachable entry for v, or undefined if u has none (or only an unreachable one). */
export type RouteLookup = (u: NodeId, v: NodeId) => ValidRoute | undefined

export interface RouteCheckFailure {
  readonly node: NodeId
  readonly destination: NodeId
  readonly problem: string
}

/** Hop distances from `source` in an undirected graph given as adjacency lists. */
export function bfsDistances(adjacency: ReadonlyMap<NodeId, readonly NodeId[]>, source: NodeId): Map<NodeId, number> {
  const dist = new Map<NodeId, number>([[source, 0]])
  const queue: NodeId[] = [source]
  for (let head = 0; head < queue.length; head++) {
    const u = queue[head]!
    const d = dist.get(u)
    invariant(d !== undefined, 'every queued node has its distance')
    for (const w of adjacency.get(u) ?? []) {
      if (dist.has(w)) continue
      dist.set(w, d + 1)
      queue.push(w)
    }
  }
  return dist
}

export function adjacencyOf(nodes: readonly NodeId[], edges: readonly (readonly [NodeId, NodeId])[]): Map<NodeId, NodeId[]> {
  const adjacency = new Map<NodeId, NodeId[]>(nodes.map((n) => [n, []]))
  for (const [a, b] of edges) {
    adjacency.get(a)?.push(b)
    adjacency.get(b)?.push(a)
  }
  return adjacency
}

/**
 * Checks every table against BFS shortest paths in the connection graph: for every node u and
 * every other node v of its component, u has a reachable route to v whose nhops is the BFS
 * distance and whose next hop is a neighbour one step closer; u has no reachable route to a node
 * outside its component. Returns every difference (empty = all tables correct).
 */
export function checkRoutesAgainstBfs(
  nodes: readonly NodeId[],
  edges: readonly (readonly [NodeId, NodeId])[],
  route: RouteLookup,
  maxFailures = 100,
): RouteCheckFailure[] {
  const adjacency = adjacencyOf(nodes, edges)
  const failures: RouteCheckFailure[] = []
  const distTo = new Map<NodeId, Map<NodeId, number>>()
  const distancesTo = (v: NodeId): Map<NodeId, number> => {
    let d = distTo.get(v)
    if (d === undefined) distTo.set(v, (d = bfsDistances(adjacency, v)))
    return d
  }
  for (const v of nodes) {
    const dist = distancesTo(v)
    for (const u of nodes) {
      if (u === v) continue
      if (failures.length >= maxFailures) return failures
      const r = route(u, v)
      const expected = dist.get(u)
      if (expected === undefined) {
        if (r !== undefined) failures.push({ node: u, destination: v, problem: `reachable route via ${r.fwd} to a node outside its component` })
        continue
      }
      if (r === undefined) {
        failures.push({ node: u, destination: v, problem: `no route (BFS distance ${expected})` })
      } else if (r.nhops !== expected) {
        failures.push({ node: u, destination: v, problem: `nhops ${r.nhops}, BFS distance ${expected}` })
      } else if (!(adjacency.get(u) ?? []).includes(r.fwd)) {
        failures.push({ node: u, destination: v, problem: `next hop ${r.fwd} is not a neighbour` })
      } else if (dist.get(r.fwd) !== expected - 1) {
        failures.push({ node: u, destination: v, problem: `next hop ${r.fwd} is ${String(dist.get(r.fwd))} hops away, expected ${expected - 1}` })
      }
    }
  }
  return failures
}

/**
 * Looks for a cycle in the next-hop graph toward each destination, among reachable entries only.
 * Returns the first cycle found (as the list of nodes on it) or undefined.
 */
export function checkLoopFree(nodes: readonly NodeId[], route: RouteLookup): { destination: NodeId; cycle: NodeId[] } | undefined {
  for (const v of nodes) {
    // 0 = unvisited, 1 = on the current walk, 2 = known to reach v or a dead end.
    const state = new Map<NodeId, number>()
    for (const start of nodes) {
      if (start === v || state.get(start) === 2) continue
      const walk: NodeId[] = []
      let u: NodeId | undefined = start
      while (u !== undefined && u !== v && state.get(u) !== 2) {
        if (state.get(u) === 1) return { destination: v, cycle: walk.slice(walk.indexOf(u)) }
        state.set(u, 1)
        walk.push(u)
        u = route(u, v)?.fwd
      }
      for (const w of walk) state.set(w, 2)
    }
  }
  return undefined
}
