/**
 * Broadcast in the simulator (issue 17 item 6): the paper's three-subnet scenario scaled to
 * `--nodes` processes runs until its tables converge; then one process of the largest subnet (not
 * its gateway) broadcasts `--bytes` to every other process, as N unicasts and topology-aware (one
 * copy per remote subnet to a relay that fans out), over the same tables and link model.
 *
 *   npx -y pnpm@10 --filter @phoenix-overlay/simulations run broadcast -- --nodes 400 --bytes 65536
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { intOption, scriptArgs } from '../tools/script-args.ts'
import { parseScenario, scaleScenario, simulate, simulateBroadcast, type BroadcastOutcome } from '@phoenix-overlay/sim'

export function broadcastComparison(nodes: number, payloadBytes: number): { unicast: BroadcastOutcome; topology: BroadcastOutcome; convergedMs: number | undefined } {
  const here = dirname(fileURLToPath(import.meta.url))
  const scenario = scaleScenario(parseScenario(JSON.parse(readFileSync(join(here, 'scenarios', 'paper-3-subnets.json'), 'utf8'))), nodes)
  const { sim, result } = simulate(scenario)
  const dump = sim.dumpTables()
  const origin = dump.nodes.find((n) => n.subnet === dump.nodes[0]!.subnet && !n.gateway)!.id
  const run = (strategy: 'unicast' | 'topology') => simulateBroadcast(dump, scenario.network, origin, strategy, payloadBytes)
  return { unicast: run('unicast'), topology: run('topology'), convergedMs: result.convergenceMs ?? undefined }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = scriptArgs({ options: { nodes: { type: 'string', default: '400' }, bytes: { type: 'string', default: '65536' } } }, { summary: 'a broadcast to every process of paper-3-subnets: unicast to each against topology-aware', help: { nodes: 'processes', bytes: 'payload bytes' } })
  const { unicast, topology, convergedMs } = broadcastComparison(intOption(values, 'nodes', 6), intOption(values, 'bytes', 0))
  console.log(`paper-3-subnets at ${values.nodes} processes (converged at ${convergedMs?.toFixed(0)} ms virtual), ${values.bytes} bytes from one non-gateway process of subnet A`)
  console.log('strategy   members  inter-subnet copies  link copies  last member (ms)')
  for (const o of [unicast, topology]) console.log(`${o.strategy.padEnd(9)}  ${String(o.members).padStart(7)}  ${String(o.interSubnetCopies).padStart(19)}  ${String(o.linkCopies).padStart(11)}  ${o.lastMemberMs.toFixed(1).padStart(16)}`)
  console.log(`topology-aware / unicast: inter-subnet copies ${(topology.interSubnetCopies / unicast.interSubnetCopies).toFixed(3)}, time to the last member ${(topology.lastMemberMs / unicast.lastMemberMs).toFixed(3)}`)
}
