/**
 * What several next hops cost in update entries, and whether every alternate is learned: 40 cores
 * in three firewalled subnets (the paper's 224:128:48 proportions, gateways as hubs), optimized
 * mode, until quiescence, with `ecmpNextHopsMax` 1 (single path) and 8 (the default) on the same
 * seeds. "missing" counts next hops a node does not keep although the neighbour holds the
 * destination at exactly (our seq, our hops − 1): every equal-cost next hop that exists at the end.
 * "willConnect": 8 next hops with `CoreConfig.willConnect` saying which nodes share a subnet (what
 * the transport derives from sites), so equal offers to a host that will connect itself are not sent.
 *
 *   npx pnpm@10 --filter @phoenix-overlay/core run bench:ecmp [-- --seeds 3]
 */
import { intOption, scriptArgs } from '../../../tools/script-args.ts'
import type { NodeId, PhoenixCore, RouteAdvert } from '../src/index.ts'
import { checkRoutesAgainstBfs } from '../src/index.ts'
import { TestNet, subnetLayout } from '../src/testing/index.ts'

const { values } = scriptArgs({ options: { seeds: { type: 'string', default: '3' } } }, { summary: 'what equal-cost multipath costs in entries, 40 nodes in three subnets', help: { seeds: 'seeds to run' } })
const seedCount = intOption(values, 'seeds', 1)

const n = 40
const a = Math.round((n * 224) / 400)
const b = Math.round((n * 128) / 400)
const layout = subnetLayout({ A: a, B: b, C: n - a - b })

interface Outcome {
  entries: number
  multipath: number
  missing: number
  /** Received entries by what they were to the receiver (see `kindOf`). */
  kinds: Map<string, number>
}

/** What an advert from `from` is to `core` just before it applies it (same seq: equal, worse). */
function kindOf(core: PhoenixCore, from: NodeId, advert: RouteAdvert): string {
  const held = core.route(advert.destination)
  if (held === undefined || held.seq !== advert.seq || !held.reachable || advert.destination === core.id) return 'other'
  const offer = advert.nhops + 1
  if (offer < held.nhops) return 'other'
  if (offer === held.nhops) return held.alternates.includes(from) ? 'equal, already a next hop' : 'equal, adds a next hop'
  if (held.fwd === from) return 'worse, from our next hop'
  return held.nhops === 1 ? 'worse, to a direct neighbour of the destination' : 'worse, other'
}

/** Counts what each received entry is to its receiver, without changing what it does. */
function classifyReceived(core: PhoenixCore, kinds: Map<string, number>): void {
  const receive = core.receive.bind(core)
  core.receive = (from, message, nowMs) => {
    for (const advert of message.entries) {
      const kind = kindOf(core, from, advert)
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1)
    }
    return receive(from, message, nowMs)
  }
}

/** `CoreConfig.willConnect` as the transport gives it (same site; here, same subnet), or none. */
function run(seed: number, ecmpNextHopsMax: number, sameSubnet = false): Outcome {
  const net = new TestNet({ seed, allowed: layout.allowed })
  const kinds = new Map<string, number>()
  const willConnect = (a: NodeId, b: NodeId) => layout.placementOf(a).subnet === layout.placementOf(b).subnet
  for (const id of layout.nodes) {
    net.add({ id, hubs: layout.hubsOf(id), limits: { ecmpNextHopsMax }, ...(sameSubnet ? { willConnect } : {}) })
    classifyReceived(net.cores.get(id)!, kinds)
  }
  net.runToQuiescence(50_000_000)
  const failures = checkRoutesAgainstBfs(layout.nodes, net.connectionEdges(), net.lookup)
  if (failures.length > 0) throw new Error(`seed ${seed}, ecmpNextHopsMax ${ecmpNextHopsMax}: ${JSON.stringify(failures.slice(0, 3))}`)
  let multipath = 0
  let missing = 0
  for (const [id, core] of net.cores) {
    const neighbours: NodeId[] = core.neighbourIds()
    for (const route of core.routes()) {
      if (!route.reachable) continue
      if (route.alternates.length >= 2) multipath++
      if (ecmpNextHopsMax === 1) continue
      const equal = neighbours.filter((w) => {
        const held = w === route.destination ? { seq: route.seq, nhops: 0 } : net.cores.get(w)?.route(route.destination)
        return held !== undefined && held.seq === route.seq && held.nhops === route.nhops - 1
      })
      const expected = Math.min(equal.length, ecmpNextHopsMax)
      if (route.alternates.length < expected) {
        missing += expected - route.alternates.length
        if (process.env.ECMP_VERBOSE) process.stderr.write(`seed ${seed}: ${id} -> ${route.destination} keeps ${route.alternates} of ${equal}\n`)
      }
    }
  }
  return { entries: net.entriesSent, multipath, missing, kinds }
}

const rows: Record<string, string | number>[] = []
const kindRows: Record<string, string | number>[] = []
let single = 0
let several = 0
let sited = 0
for (let seed = 1; seed <= seedCount; seed++) {
  const one = run(seed, 1)
  const eight = run(seed, 8)
  const eightSited = run(seed, 8, true)
  sited += eightSited.entries
  for (const kind of new Set([...one.kinds.keys(), ...eight.kinds.keys()])) kindRows.push({ seed, 'received entry': kind, '1 next hop': one.kinds.get(kind) ?? 0, '8 next hops': eight.kinds.get(kind) ?? 0 })
  single += one.entries
  several += eight.entries
  rows.push({ seed, 'entries, 1 next hop': one.entries, 'entries, 8 next hops': eight.entries, ratio: +(eight.entries / one.entries).toFixed(2), 'routes with ≥ 2 next hops': eight.multipath, 'alternates missing': eight.missing, 'entries, 8, willConnect': eightSited.entries, 'ratio, willConnect': +(eightSited.entries / one.entries).toFixed(2), 'routes ≥ 2, willConnect': eightSited.multipath, 'missing, willConnect': eightSited.missing })
}
rows.push({ seed: 'mean', 'entries, 1 next hop': Math.round(single / seedCount), 'entries, 8 next hops': Math.round(several / seedCount), ratio: +(several / single).toFixed(2), 'entries, 8, willConnect': Math.round(sited / seedCount), 'ratio, willConnect': +(sited / single).toFixed(2) })
console.log(`${n} nodes in 3 subnets (${a}:${b}:${n - a - b}), gateways as hubs, optimized mode, until quiescence`)
console.table(rows)
console.log('received entries at the same seq, by what they were to the receiver ("other": new, fresher or stale)')
console.table(kindRows)
