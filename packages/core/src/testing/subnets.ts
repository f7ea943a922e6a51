import { subnetFirewallAllows, type SubnetPlacement } from '../subnets.ts'
import type { NodeId } from '../types.ts'
import { addressOf } from './net.ts'

/** Nodes laid out in subnets behind the paper's firewall, as the demos, benches and tests build them. */
export interface SubnetLayout {
  /** Ids `<subnet><i>` (A0, A1, …, B0, …) in subnet order. */
  readonly nodes: NodeId[]
  /** The first node of each subnet (`A0`, `B0`, …): the only one that accepts connections from other subnets. */
  readonly gateways: NodeId[]
  readonly placementOf: (id: NodeId) => SubnetPlacement
  /** The firewall (`subnetFirewallAllows`), as `TestNet`'s `allowed` option wants it. */
  readonly allowed: (from: NodeId, to: NodeId) => boolean
  /** What a node knows at start: every gateway's address but its own. */
  readonly hubsOf: (id: NodeId) => string[]
}

/** A layout with `sizes[subnet]` nodes per subnet, the first of each a gateway. */
export function subnetLayout(sizes: Readonly<Record<string, number>>): SubnetLayout {
  const placement = new Map<NodeId, SubnetPlacement>()
  for (const [subnet, size] of Object.entries(sizes)) for (let i = 0; i < size; i++) placement.set(`${subnet}${i}`, { subnet, gateway: i === 0 })
  const nodes = [...placement.keys()]
  const gateways = nodes.filter((id) => placement.get(id)?.gateway === true)
  const placementOf = (id: NodeId): SubnetPlacement => {
    const p = placement.get(id)
    if (p === undefined) throw new Error(`subnetLayout: no node ${JSON.stringify(id)}`)
    return p
  }
  return {
    nodes,
    gateways,
    placementOf,
    allowed: (from, to) => subnetFirewallAllows(placementOf(from), placementOf(to)),
    hubsOf: (id) => gateways.filter((g) => g !== id).map(addressOf),
  }
}
