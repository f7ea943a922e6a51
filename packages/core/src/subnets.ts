/**
 * The paper's firewall, defined once for everyone who emulates it (the simulator's network model,
 * the transport's connection gater, the demos, the test harness): inside a subnet anyone may open
 * a connection to anyone; across subnets only a gateway accepts. Pure data in, a yes or no out.
 */

/** Where a node sits: its subnet (any label) and whether it is one of the subnet's gateways. */
export interface SubnetPlacement {
  readonly subnet: string | number
  /** Gateways are the only nodes of a subnet that accept connections from other subnets. */
  readonly gateway: boolean
}

/** May a node at `from` open a connection to a node at `to`? */
export function subnetFirewallAllows(from: SubnetPlacement, to: SubnetPlacement): boolean {
  return from.subnet === to.subnet || to.gateway
}

/**
 * How many unordered pairs of `placements` may connect (in at least one direction), counted in
 * O(n) rather than over all n² pairs: every pair inside a subnet, plus every pair across subnets
 * except those of two non-gateways.
 */
export function connectablePairs(placements: Iterable<SubnetPlacement>): number {
  const all = new Map<string | number, number>()
  const plain = new Map<string | number, number>()
  for (const p of placements) {
    all.set(p.subnet, (all.get(p.subnet) ?? 0) + 1)
    if (!p.gateway) plain.set(p.subnet, (plain.get(p.subnet) ?? 0) + 1)
  }
  const sum = (m: Map<string | number, number>) => [...m.values()].reduce((acc, c) => acc + c, 0)
  const sumSquares = (m: Map<string | number, number>) => [...m.values()].reduce((acc, c) => acc + c * c, 0)
  const total = sum(all)
  const plainTotal = sum(plain)
  const sameSubnet = [...all.values()].reduce((acc, c) => acc + (c * (c - 1)) / 2, 0)
  return sameSubnet + (total * total - sumSquares(all)) / 2 - (plainTotal * plainTotal - sumSquares(plain)) / 2
}
