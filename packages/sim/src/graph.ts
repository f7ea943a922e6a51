import type { RouteCheckFailure, ValidRoute } from '@phoenix-overlay/core'
import { CHECK_DISTANCE_CELLS_MAX } from './constants.ts'

/** FNV-1a's constants, over node numbers instead of bytes (a hash of a closed neighbourhood). */
const FNV_OFFSET_BASIS = 0x811c9dc5
const FNV_PRIME = 0x01000193

/**
 * An undirected graph over node numbers 0..n-1 in compressed sparse rows, with sorted neighbour
 * lists (adjacency tests by binary search) and its true-twin classes: nodes with the same closed
 * neighbourhood N[v] have the same distance to every other node, so one BFS serves the whole
 * class. In the paper's topologies (cliques joined at gateways) that turns N BFS runs into a
 * handful, which is what makes checking every table at 2,000+ nodes cheap.
 */
export class Graph {
  readonly start: Int32Array
  readonly adjacent: Int32Array
  /** Class number of each node; classRep[c] is its first member. */
  readonly classOf: Int32Array
  readonly classRep: number[] = []

  /** `edges`: pairs of node numbers, as arrays or flattened (a, b, a, b, …: no array per edge). */
  constructor(
    readonly n: number,
    edges: readonly (readonly [number, number])[] | Int32Array,
  ) {
    const pairs = edges instanceof Int32Array ? edges : Int32Array.from(edges.flat())
    const degree = new Int32Array(n)
    for (let i = 0; i < pairs.length; i++) degree[pairs[i]!]!++
    this.start = new Int32Array(n + 1)
    for (let i = 0; i < n; i++) this.start[i + 1] = this.start[i]! + degree[i]!
    this.adjacent = new Int32Array(this.start[n]!)
    const fill = this.start.slice(0, n)
    for (let i = 0; i < pairs.length; i += 2) {
      const a = pairs[i]!
      const b = pairs[i + 1]!
      this.adjacent[fill[a]!++] = b
      this.adjacent[fill[b]!++] = a
    }
    for (let i = 0; i < n; i++) this.adjacent.subarray(this.start[i]!, this.start[i + 1]!).sort()
    this.classOf = new Int32Array(n)
    // Classes by a hash of the closed neighbourhood, each candidate compared member by member: a
    // string of every closed neighbourhood was N² numbers printed in a clique (at 10,000
    // processes in one subnet, ~500 MB of strings to find one class).
    const classesByHash = new Map<number, number[]>()
    for (let v = 0; v < n; v++) {
      const hash = this.closedHash(v)
      let bucket = classesByHash.get(hash)
      if (bucket === undefined) classesByHash.set(hash, (bucket = []))
      let c = bucket.find((k) => this.twins(this.classRep[k]!, v))
      if (c === undefined) {
        c = this.classRep.length
        bucket.push(c)
        this.classRep.push(v)
      }
      this.classOf[v] = c
    }
  }

  /** A hash of N[v] (v's sorted neighbours with v in its place), the same for twins. */
  private closedHash(v: number): number {
    let hash = FNV_OFFSET_BASIS
    let placed = false
    for (let i = this.start[v]!; i < this.start[v + 1]!; i++) {
      const x = this.adjacent[i]!
      if (!placed && x > v) {
        hash = Math.imul(hash ^ v, FNV_PRIME)
        placed = true
      }
      hash = Math.imul(hash ^ x, FNV_PRIME)
    }
    return placed ? hash : Math.imul(hash ^ v, FNV_PRIME)
  }

  /** Whether N[u] = N[v] (true twins): u and v adjacent (or the same) and their other neighbours the same. */
  twins(u: number, v: number): boolean {
    if (u === v) return true
    const du = this.start[u + 1]! - this.start[u]!
    if (du !== this.start[v + 1]! - this.start[v]! || !this.isAdjacent(u, v)) return false
    // N(u) \ {v} = N(v) \ {u}: two sorted lists of du - 1 members each.
    let i = this.start[u]!
    let j = this.start[v]!
    const iEnd = this.start[u + 1]!
    const jEnd = this.start[v + 1]!
    for (;;) {
      if (i < iEnd && this.adjacent[i] === v) i++
      if (j < jEnd && this.adjacent[j] === u) j++
      if (i === iEnd || j === jEnd) return i === iEnd && j === jEnd
      if (this.adjacent[i] !== this.adjacent[j]) return false
      i++
      j++
    }
  }

  neighbours(v: number): Int32Array {
    return this.adjacent.subarray(this.start[v]!, this.start[v + 1]!)
  }

  isAdjacent(u: number, w: number): boolean {
    let lo = this.start[u]!
    let hi = this.start[u + 1]! - 1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      const x = this.adjacent[mid]!
      if (x === w) return true
      if (x < w) lo = mid + 1
      else hi = mid - 1
    }
    return false
  }

  /** BFS from `source`: hop distance to every node (-1 = other component) and a BFS parent. */
  bfs(source: number): { dist: Int32Array; parent: Int32Array } {
    const dist = new Int32Array(this.n).fill(-1)
    const parent = new Int32Array(this.n).fill(-1)
    const queue = new Int32Array(this.n)
    dist[source] = 0
    queue[0] = source
    let tail = 1
    for (let head = 0; head < tail; head++) {
      const u = queue[head]!
      const d = dist[u]! + 1
      for (let i = this.start[u]!; i < this.start[u + 1]!; i++) {
        const w = this.adjacent[i]!
        if (dist[w] !== -1) continue
        dist[w] = d
        parent[w] = u
        queue[tail++] = w
      }
    }
    return { dist, parent }
  }

  /**
   * The BFS distances from every class's representative (row c: from classRep[c]), if all rows
   * fit in `cellsMax` numbers; undefined otherwise (too many classes: the caller goes
   * destination by destination, one BFS at a time).
   */
  classDistances(cellsMax = CHECK_DISTANCE_CELLS_MAX): Int32Array[] | undefined {
    if (this.classRep.length * this.n > cellsMax) return undefined
    return this.classRep.map((rep) => this.bfs(rep).dist)
  }

  /**
   * Calls `visit(v, distTo)` for every node v, where distTo(u) is the hop distance from u to v
   * (-1: unreachable), reusing one BFS per twin class.
   */
  forEachDestination(visit: (v: number, distTo: (u: number) => number, nextHopTo: (u: number) => number) => void): void {
    const byClass: number[][] = this.classRep.map(() => [])
    for (let v = 0; v < this.n; v++) byClass[this.classOf[v]!]!.push(v)
    for (let c = 0; c < byClass.length; c++) {
      const rep = this.classRep[c]!
      const { dist, parent } = this.bfs(rep)
      for (const v of byClass[c]!) {
        // Twins are adjacent; for any other u, d(u, v) = d(u, rep).
        const distTo = (u: number): number => (u === v ? 0 : u === rep ? 1 : dist[u]!)
        const nextHopTo = (u: number): number => (u === v ? v : u === rep || dist[u] === 1 ? v : parent[u]!)
        visit(v, distTo, nextHopTo)
      }
    }
  }
}

/**
 * The same check as core's `checkRoutesAgainstBfs`, over node numbers and one BFS per twin class
 * instead of one per node: every u has a route to every v of its component whose nhops is the BFS
 * distance and whose next hop is a neighbour one step closer, and no route to other components.
 */
export function checkRoutesFast(
  graph: Graph,
  ids: readonly string[],
  route: (u: number, v: number) => { fwd: number; nhops: number } | undefined,
  maxFailures: number,
  distanceCellsMax = CHECK_DISTANCE_CELLS_MAX,
): RouteCheckFailure[] {
  const failures: RouteCheckFailure[] = []
  const checkPair = (u: number, v: number, distances: Distances): void => {
    const r = route(u, v)
    const expected = distances.at(u)
    const node = ids[u]!
    const destination = ids[v]!
    if (expected === -1) {
      if (r !== undefined) failures.push({ node, destination, problem: `reachable route via ${ids[r.fwd] ?? r.fwd} to a node outside its component` })
      return
    }
    if (r === undefined) failures.push({ node, destination, problem: `no route (BFS distance ${expected})` })
    else if (r.nhops !== expected) failures.push({ node, destination, problem: `nhops ${r.nhops}, BFS distance ${expected}` })
    else if (r.fwd < 0 || !graph.isAdjacent(u, r.fwd)) failures.push({ node, destination, problem: `next hop ${ids[r.fwd] ?? r.fwd} is not a neighbour` })
    else if (distances.at(r.fwd) !== expected - 1) failures.push({ node, destination, problem: `next hop ${ids[r.fwd]!} is ${distances.at(r.fwd)} hops away, expected ${expected - 1}` })
  }
  const rows = graph.classDistances(distanceCellsMax)
  if (rows !== undefined) {
    // Node by node: one table's routes are looked up together (they sit together in memory),
    // where destination by destination touches every table once per destination.
    const row = new TwinRow()
    for (let u = 0; u < graph.n && failures.length < maxFailures; u++) {
      for (let v = 0; v < graph.n && failures.length < maxFailures; v++) {
        if (u === v) continue
        const c = graph.classOf[v]!
        row.v = v
        row.rep = graph.classRep[c]!
        row.dist = rows[c]!
        checkPair(u, v, row)
      }
    }
    return failures
  }
  graph.forEachDestination((v, distTo) => {
    const distances = { at: distTo }
    for (let u = 0; u < graph.n && failures.length < maxFailures; u++) if (u !== v) checkPair(u, v, distances)
  })
  return failures
}

interface Distances {
  /** Hops from `x` to the destination, -1 for another component. */
  at(x: number): number
}

/** Distances to `v` read from its twin class's row (twins are adjacent; for any other x, d(x, v) = d(x, rep)); refilled for each pair, not made anew (millions of pairs). */
class TwinRow implements Distances {
  v = 0
  rep = 0
  dist: Int32Array = new Int32Array(0)

  at(x: number): number {
    return x === this.v ? 0 : x === this.rep ? 1 : this.dist[x]!
  }
}

export type { ValidRoute }
