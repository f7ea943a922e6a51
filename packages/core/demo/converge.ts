/**
 * A small network converging, printed as tables: 14 nodes in three subnets (8:4:2, the paper's
 * proportions scaled down), where only each subnet's gateway accepts connections from outside
 * and every node knows only the three gateways. Delivery order is shuffled from a seed.
 *
 *   npx tsx packages/core/demo/converge.ts [--seed N]
 */
import { intOption, scriptArgs } from '../../../tools/script-args.ts'
import { checkRoutesAgainstBfs } from '../src/index.ts'
import { TestNet, subnetLayout } from '../src/testing/index.ts'

const { values } = scriptArgs({ options: { seed: { type: 'string', default: '7' } } }, { summary: 'the pure core converging on 14 nodes in three subnets, step by step', help: { seed: 'the seed of the event order' } })
const seed = intOption(values, 'seed', Number.MIN_SAFE_INTEGER)

const subnets = { A: 8, B: 4, C: 2 }
const { nodes, gateways, allowed, hubsOf } = subnetLayout(subnets)

const net = new TestNet({ seed, allowed })
for (const id of nodes) net.add({ id, hubs: hubsOf(id), names: [`rank-${nodes.indexOf(id)}`] })

console.log(`Phoenix core demo: ${nodes.length} nodes in subnets ${Object.entries(subnets).map(([s, n]) => `${s}(${n})`).join(' ')}; gateways ${gateways.join(', ')} are the only hubs (seed ${seed})\n`)
const progress: Record<string, number | string>[] = []
const reachablePairs = () => nodes.reduce((sum, u) => sum + nodes.filter((v) => v !== u && net.lookup(u, v) !== undefined).length, 0)
let nextReport = 0
while (net.runOne()) {
  if (net.events >= nextReport) {
    progress.push({ event: net.events, connections: net.connectionEdges().length, 'reachable pairs': `${reachablePairs()}/${nodes.length * (nodes.length - 1)}`, 'entries sent': net.entriesSent })
    nextReport += 150
  }
}
progress.push({ event: net.events, connections: net.connectionEdges().length, 'reachable pairs': `${reachablePairs()}/${nodes.length * (nodes.length - 1)}`, 'entries sent': net.entriesSent })
console.log('Convergence (discovery and routing interleaved):')
console.table(progress)

const failures = checkRoutesAgainstBfs(nodes, net.connectionEdges(), net.lookup)
console.log(`Every table checked against BFS shortest paths: ${failures.length === 0 ? 'all correct' : `${failures.length} differences`}\n`)

console.log('Hop counts (row: from, column: to; 1 = direct connection):')
const matrix: Record<string, Record<string, string>> = {}
for (const u of nodes) {
  matrix[u] = {}
  for (const v of nodes) matrix[u]![v] = u === v ? '·' : String(net.lookup(u, v)?.nhops ?? '∞')
}
console.table(matrix)

const core = net.cores.get('A3')!
console.log('Routes of A3 by logical name:')
console.table(['rank-0', 'rank-9', 'rank-12', 'rank-13'].map((name) => ({ name, ...core.resolve(name) })))
if (failures.length > 0) process.exit(1)
