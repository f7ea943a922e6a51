/**
 * Entries sent until quiescence, naive DSDV vs optimized (trans/rcpt + prioritized merged sends),
 * on the same topologies and the same randomized delivery schedules, with the lower bound
 * N·(N−1) (every node must hear of every other once). 'optimized+hold' also holds sends while
 * dials are in flight (`sendHoldForDialsMs`). No timing model: delivery order, node
 * steps and dial completions are interleaved at random from a seed, so these counts measure the
 * rules, not a network; the simulator (packages/sim) measures them under latency and CPU cost.
 *
 *   npx pnpm@10 --filter @phoenix-overlay/core run bench:entries [-- --seeds 5]
 */
import { intOption, scriptArgs } from '../../../tools/script-args.ts'
import type { NodeId, RoutingMode } from '../src/index.ts'
import { checkRoutesAgainstBfs } from '../src/index.ts'
import { TestNet, addressOf, subnetLayout } from '../src/testing/index.ts'

const { values } = scriptArgs({ options: { seeds: { type: 'string', default: '5' } } }, { summary: 'entries received per (node, destination) pair on a few topologies, each routing mode', help: { seeds: 'seeds to run' } })
const seedCount = intOption(values, 'seeds', 1)

interface Topology {
  name: string
  nodes: NodeId[]
  hubsOf: (id: NodeId) => string[]
  allowed: (from: NodeId, to: NodeId) => boolean
}

const clique = (n: number): Topology => {
  const nodes = Array.from({ length: n }, (_, i) => `n${i}`)
  return { name: `${n}-node clique, one hub`, nodes, hubsOf: (id) => (id === 'n0' ? [] : [addressOf('n0')]), allowed: () => true }
}

/** Three subnets in the paper's 224:128:48 proportions; only gateways accept connections from outside. */
const threeSubnets = (n: number): Topology => {
  const a = Math.round((n * 224) / 400)
  const b = Math.round((n * 128) / 400)
  const layout = subnetLayout({ A: a, B: b, C: n - a - b })
  return { name: `${n} nodes in 3 subnets (${a}:${b}:${n - a - b}), gateways as hubs`, nodes: layout.nodes, hubsOf: layout.hubsOf, allowed: layout.allowed }
}

type Variant = 'naive' | 'optimized' | 'optimized+hold'
const VARIANTS: Variant[] = ['naive', 'optimized', 'optimized+hold']

function run(t: Topology, variant: Variant, seed: number): { entries: number; messages: number } {
  const net = new TestNet({ seed, allowed: t.allowed })
  const mode: RoutingMode = variant === 'naive' ? 'naive' : 'optimized'
  // Time stands still in this harness, so a hold lasts until the dials in flight have completed.
  const timing = variant === 'optimized+hold' ? { sendHoldForDialsMs: 1 } : {}
  for (const id of t.nodes) net.add({ id, hubs: t.hubsOf(id), mode, timing })
  net.runToQuiescence(50_000_000)
  const failures = checkRoutesAgainstBfs(t.nodes, net.connectionEdges(), net.lookup)
  if (failures.length > 0) throw new Error(`${t.name} ${variant} seed ${seed}: ${JSON.stringify(failures.slice(0, 3))}`)
  return { entries: net.entriesSent, messages: net.messagesSent }
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
const rows: Record<string, string | number>[] = []
const allKnown = (t: Topology): Topology => ({ ...t, name: `${t.name.split(',')[0]}, all addresses known`, hubsOf: (id) => t.nodes.filter((x) => x !== id && t.allowed(id, x)).map(addressOf) })
for (const topology of [clique(40), allKnown(clique(40)), threeSubnets(40)]) {
  const n = topology.nodes.length
  const lowerBound = n * (n - 1)
  const results: Record<Variant, number[]> = { naive: [], optimized: [], 'optimized+hold': [] }
  const messages: Record<Variant, number[]> = { naive: [], optimized: [], 'optimized+hold': [] }
  for (let seed = 1; seed <= seedCount; seed++) {
    for (const variant of VARIANTS) {
      const r = run(topology, variant, seed)
      results[variant].push(r.entries)
      messages[variant].push(r.messages)
    }
    process.stderr.write(`\r${topology.name}: seed ${seed}/${seedCount}`)
  }
  process.stderr.write('\n')
  rows.push({
    topology: topology.name,
    'N(N-1)': lowerBound,
    'naive entries': Math.round(mean(results.naive)),
    'optimized entries': Math.round(mean(results.optimized)),
    'optimized+hold entries': Math.round(mean(results['optimized+hold'])),
    'naive / optimized': +(mean(results.naive) / mean(results.optimized)).toFixed(2),
    'optimized / N(N-1)': +(mean(results.optimized) / lowerBound).toFixed(2),
    'optimized+hold / N(N-1)': +(mean(results['optimized+hold']) / lowerBound).toFixed(2),
    'naive msgs': Math.round(mean(messages.naive)),
    'optimized msgs': Math.round(mean(messages.optimized)),
  })
}
console.log(`mean over ${seedCount} random schedules (seeds 1..${seedCount}); every run checked against BFS`)
console.table(rows)
