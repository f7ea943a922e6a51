/**
 * A broadcast over a converged overlay, in virtual time (issue 17 item 6): one origin sends
 * `payloadBytes` to every other live node, either as N unicasts or topology-aware (after MPICH-G2,
 * `seeds/001` section 3.3: one copy per remote subnet to a relay, the member fewest hops away,
 * which fans it out inside its subnet; the origin's own subnet directly). Each copy follows the
 * routing tables hop by hop (store and forward); each direction of each connection sends one copy
 * at a time at its link class's bandwidth, then the copy arrives after its latency: the same
 * link model as the simulator's updates (per-connection bandwidth). Counts the copies that cross
 * an inter-subnet link and the time the last member has it.
 */
import { EventQueue } from './heap.ts'
import type { TableDump } from './measure.ts'
import type { NetworkSpec } from './scenario.ts'

export type BroadcastStrategy = 'unicast' | 'topology'

export interface BroadcastOutcome {
  readonly strategy: BroadcastStrategy
  readonly members: number
  /** Copies that crossed a link between two subnets (each crossing counted). */
  readonly interSubnetCopies: number
  /** Copies sent over any link (each hop counted). */
  readonly linkCopies: number
  /** Virtual time from the origin's first send until the last member has its copy. */
  readonly lastMemberMs: number
  /** Members no route reached (a table without the destination). */
  readonly unreached: number
}

interface Copy {
  readonly at: string
  readonly destination: string
  /** For a relay's copy: the members of its subnet it passes it on to. */
  readonly fanOut: readonly string[]
}

/** The member of `members` fewest hops from `origin` (by its table), ties by id. */
function nearest(tables: TableDump['tables'], origin: string, members: readonly string[]): string {
  const hops = (m: string) => tables[origin]?.[m]?.nhops ?? Number.MAX_SAFE_INTEGER
  return [...members].sort((a, b) => hops(a) - hops(b) || (a < b ? -1 : 1))[0]!
}

/** The first copies the origin sends: every member (unicast), or its subnet's members and one relay per other subnet (remote ones first: their links are the slow ones). */
function plan(dump: TableDump, origin: string, strategy: BroadcastStrategy): Copy[] {
  const live = dump.nodes.filter((n) => n.alive && n.id !== origin)
  if (strategy === 'unicast') return live.map((n) => ({ at: origin, destination: n.id, fanOut: [] }))
  const subnetOf = new Map(dump.nodes.map((n) => [n.id, n.subnet]))
  const bySubnet = new Map<string, string[]>()
  for (const n of live) bySubnet.set(n.subnet, [...(bySubnet.get(n.subnet) ?? []), n.id])
  const copies: Copy[] = []
  for (const [subnet, members] of bySubnet) {
    if (subnet === subnetOf.get(origin)) continue
    const relay = nearest(dump.tables, origin, members)
    copies.push({ at: origin, destination: relay, fanOut: members.filter((m) => m !== relay) })
  }
  for (const id of bySubnet.get(subnetOf.get(origin)!) ?? []) copies.push({ at: origin, destination: id, fanOut: [] })
  return copies
}

/** Runs one broadcast from `origin` over the tables and connections of `dump`. */
export function simulateBroadcast(dump: TableDump, network: Pick<NetworkSpec, 'intraSubnet' | 'interSubnet'>, origin: string, strategy: BroadcastStrategy, payloadBytes: number): BroadcastOutcome {
  const subnetOf = new Map(dump.nodes.map((n) => [n.id, n.subnet]))
  if (!subnetOf.has(origin)) throw new Error(`origin ${origin} is not a node of the run`)
  const linkFreeAtMs = new Map<string, number>()
  const queue = new EventQueue<Copy>()
  for (const copy of plan(dump, origin, strategy)) queue.push(0, copy)
  const reached = new Set<string>()
  let interSubnetCopies = 0
  let linkCopies = 0
  let lastMemberMs = 0
  let unreached = 0
  while (queue.size > 0) {
    const { timeMs, item: copy } = queue.pop()
    if (copy.at === copy.destination) {
      reached.add(copy.at)
      lastMemberMs = Math.max(lastMemberMs, timeMs)
      for (const member of copy.fanOut) queue.push(timeMs, { at: copy.at, destination: member, fanOut: [] })
      continue
    }
    const next = dump.tables[copy.at]?.[copy.destination]?.fwd
    if (next === undefined) {
      unreached++
      continue
    }
    const inter = subnetOf.get(copy.at) !== subnetOf.get(next)
    const link = inter ? network.interSubnet : network.intraSubnet
    const key = `${copy.at}>${next}`
    const startMs = Math.max(timeMs, linkFreeAtMs.get(key) ?? 0)
    const endMs = startMs + (payloadBytes * 8) / (link.bandwidthMbps * 1000)
    linkFreeAtMs.set(key, endMs)
    linkCopies++
    if (inter) interSubnetCopies++
    queue.push(endMs + link.latencyUs / 1000, { ...copy, at: next })
  }
  return { strategy, members: reached.size, interSubnetCopies, linkCopies, lastMemberMs, unreached }
}
