import { subnetFirewallAllows } from '@phoenix-overlay/core'
import type { SimNode } from '../process.ts'

/**
 * The "offline" baseline (the paper's Figure 4): our core with discovery off, each node given its
 * share of the complete configuration — every pair the firewall allows, dialled once by one end.
 */

/** May `from` open a connection to `to` at all (the subnet firewall; a node never dials itself)? */
function allowedStatic(from: SimNode, to: SimNode): boolean {
  return from !== to && subnetFirewallAllows(from, to)
}

/** Does `u` dial `v`? Every allowed pair once; a balanced orientation when both may. */
export function offlineDials(u: SimNode, v: SimNode): boolean {
  const uv = allowedStatic(u, v)
  const vu = allowedStatic(v, u)
  if (!uv) return false
  if (!vu) return true
  return u.index < v.index === ((u.index + v.index) % 2 === 0)
}

/** The addresses `node` is told to dial: its share of the complete configuration. */
export function offlineHubs(node: SimNode, nodes: readonly SimNode[]): string[] {
  return nodes.filter((n) => n !== node && offlineDials(node, n)).map((n) => n.address)
}
