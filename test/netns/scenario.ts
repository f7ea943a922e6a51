/**
 * The paper's experiment on real firewalled subnets, with each node its own `phoenix node`
 * process: three subnets (one IPv6-only behind a dual-stacked gateway), only gateways accept
 * connections from other subnets, every node knows only the gateways. Measures convergence with
 * discovery against an "offline" run given the complete connection list, the time to 90% of
 * pairs reachable, and recovery after killing half the nodes and restarting them (Figure 6).
 *
 *   sudo npx tsx test/netns/scenario.ts [--a 14 --b 10 --c 6]
 */
import { buildTopology, type SubnetSpec, type Topology } from './topology.ts'
import { Overlay, type OverlayNode } from './overlay.ts'
import { cleanUpOnSignals } from './signal-cleanup.ts'

export interface ScenarioResult {
  nodes: number
  discovery: { convergedMs: number; reachable90Ms: number; startupMs: number }
  offline: { convergedMs: number; reachable90Ms: number; startupMs: number }
  recovery: { killed: number; convergedMs: number; reachable90Ms: number }
}

export const DEFAULT_SUBNETS: SubnetSpec[] = [
  { name: 'A', family: 'ipv4', size: 14 },
  { name: 'B', family: 'ipv4', size: 10 },
  { name: 'C', family: 'ipv6', size: 6 },
]

/**
 * Starts every process knowing nothing, then at one instant gives each its hubs (discovery) or
 * its complete connection list (offline), and times convergence from that instant: neither run
 * pays for the processes' start-up, and no dial races a peer that is not listening yet.
 */
export async function timedRun(overlay: Overlay, mode: 'discovery' | 'offline', timeoutMs: number) {
  const t0 = performance.now()
  await overlay.startAll(mode, true)
  const up = performance.now()
  const go = performance.now()
  await overlay.go(mode)
  const result = await overlay.converge(go, timeoutMs)
  return { ...result, startupMs: up - t0 }
}

/**
 * Kills half the non-gateway nodes, waits `downMs` (the paper: 5 s), restarts them knowing nothing,
 * and times the recovery from the instant they are all given the gateways (as `timedRun` does), so
 * the restarts' own start-up is not in it.
 */
export async function killHalfAndRestart(overlay: Overlay, downMs: number, timeoutMs: number, log: (line: string) => void = () => {}) {
  const victims: OverlayNode[] = overlay.nodes.filter((n) => !n.node.gateway).filter((_, i) => i % 2 === 0)
  await Promise.all(victims.map((n) => overlay.kill(n)))
  log(`killed ${victims.map((n) => n.node.id).join(' ')}`)
  await overlay.converge(performance.now(), timeoutMs)
  await new Promise((r) => setTimeout(r, downMs))
  await overlay.startMany(victims, 'discovery', true)
  const up = performance.now()
  await overlay.go('discovery', victims)
  const result = await overlay.converge(up, timeoutMs)
  return { killed: victims.length, ...result }
}

/** `options.prefix`: the namespaces' name prefix (default: one per process id), so concurrent runs do not collide. */
export async function runScenario(subnets: SubnetSpec[], log: (line: string) => void, options: { prefix?: string } = {}): Promise<ScenarioResult> {
  let topology: Topology | undefined
  let overlay: Overlay | undefined
  try {
    topology = await buildTopology(subnets, options.prefix !== undefined ? { prefix: options.prefix } : {})
    overlay = await Overlay.prepare(topology)
    log(`${topology.nodes.length} nodes in namespaces; starting with discovery (gateways known only)`)
    const discovery = await timedRun(overlay, 'discovery', 120_000)
    log(`discovery: converged ${discovery.convergedMs.toFixed(0)} ms after the hubs were given (90% reachable at ${discovery.reachable90Ms.toFixed(0)} ms)`)
    const recovery = await killHalfAndRestart(overlay, 5_000, 120_000, log)
    log(`recovery: converged ${recovery.convergedMs.toFixed(0)} ms after the ${recovery.killed} restarted processes were given the gateways`)
    await overlay.stopAll()
    const offline = await timedRun(overlay, 'offline', 120_000)
    log(`offline (complete connection list): converged ${offline.convergedMs.toFixed(0)} ms after the lists were given`)
    return { nodes: topology.nodes.length, discovery, offline, recovery }
  } finally {
    await overlay?.destroy()
    await topology?.destroy()
  }
}

const isMain = process.argv[1] !== undefined && /scenario\.ts$/.test(process.argv[1])
if (isMain) {
  cleanUpOnSignals()
  const { intOption, scriptArgs } = await import('../../tools/script-args.ts')
  const { values } = scriptArgs(
    { options: { a: { type: 'string', default: '14' }, b: { type: 'string', default: '10' }, c: { type: 'string', default: '6' } } },
    { summary: 'discovery against offline in three firewalled subnets of phoenix node processes, in namespaces (root)', help: { a: 'processes in subnet A', b: 'processes in subnet B', c: 'processes in subnet C (IPv6)' } },
  )
  const subnets = DEFAULT_SUBNETS.map((s) => ({ ...s, size: intOption(values, s.name.toLowerCase(), 1) }))
  const result = await runScenario(subnets, (line) => console.log(line))
  console.log(JSON.stringify(result, null, 2))
  console.log(`convergence, discovery / offline: ${(result.discovery.convergedMs / result.offline.convergedMs).toFixed(2)}x`)
  console.log(`90% of pairs reachable at ${(result.discovery.reachable90Ms / result.discovery.convergedMs * 100).toFixed(0)}% of the discovery run's convergence time`)
}
