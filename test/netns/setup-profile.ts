/**
 * Where discovery's time goes beyond offline (issue 19, item 4): the paper's three firewalled
 * subnets, each node its own `phoenix node`, timed from the instant the hubs (discovery) or the
 * complete connection lists (offline) are handed out, as scenario.ts does, with each run cut into
 * phases observed through the control endpoints (polled every PROFILE_POLL_MS):
 *
 * - first link: every node has at least one neighbour (its first dial done: TCP, Noise, Yamux,
 *   identify, the Phoenix stream);
 * - all known: every node has a route to every other (routing through whatever links exist);
 * - links: every allowed link is open (discovery: learning the peers, then dialling them);
 * - converged: every allowed link open and every table on BFS shortest paths.
 *
 * Also each node's dial counters (the `/metrics` of the transport): dials started and failed
 * (discovery dials addresses the firewall drops; those fail by timing out).
 *
 *   sudo npx tsx test/netns/setup-profile.ts [--rounds 2] [--a 14 --b 10 --c 6] [--prefix NAME-]
 *
 * Namespaces are named with `--prefix` (default: phx<pid>-, unique to the run) and removed at the
 * end, or on SIGINT/SIGTERM (signal-cleanup.ts).
 */
import { loadavg } from 'node:os'
import { procCpuSeconds } from '../../tools/proc-cpu.ts'
import { intOption, scriptArgs } from '../../tools/script-args.ts'
import { mayConnect, Overlay, type OverlayNode } from './overlay.ts'
import { DEFAULT_SUBNETS } from './scenario.ts'
import { cleanUpOnSignals } from './signal-cleanup.ts'
import { buildTopology } from './topology.ts'

/** Poll period of the phase observer: short enough to place a phase, long enough not to load 30 nodes. */
const PROFILE_POLL_MS = 100
const RUN_TIMEOUT_MS = 180_000

export interface Phases {
  mode: 'discovery' | 'offline'
  firstLinkMs: number
  allKnownMs: number
  linksMs: number
  convergedMs: number
  dialsStarted: number
  dialsFailed: number
  /** Of those, dials that failed after their TCP connection was up (a handshake cut or refused, not the firewall). */
  dialsFailedUpgrade: number
  /** Addresses whose dial the larger peer id held back (dialDeferMs, the core's gauge), and dials skipped because the other end had connected. */
  dialsDeferred: number
  dialsSkipped: number
  linksMax: number
  /** The allowed pairs linked last, with when each was first seen linked (ms from the start): the tail of "links". */
  lastPairs: { pair: string; ms: number }[]
  /**
   * CPU seconds all node processes used from the start to convergence (user + system): the work
   * a run took, which the other load on the machine changes far less than it changes wall time.
   */
  nodeCpuS: number
  /** The 1-minute load average when the run started and when it converged. */
  load: [number, number]
}

const nodesCpuSeconds = (nodes: readonly OverlayNode[]) => nodes.reduce((a, n) => a + procCpuSeconds(n.process?.child.pid), 0)

/** Pairs listed in `lastPairs`: enough to see whether a few late dials or the whole set make the tail. */
const LAST_PAIRS_SHOWN = 6

interface NodeView {
  n: OverlayNode
  peers: string[]
  reachable: number
}

async function views(overlay: Overlay): Promise<NodeView[]> {
  return Promise.all(
    overlay.alive().map(async (n) => {
      const [routes, peers] = await Promise.all([overlay.call(n, 'GET', '/routes'), overlay.call(n, 'GET', '/peers')])
      return { n, peers: peers.json as string[], reachable: (routes.json as { reachable: boolean }[]).filter((r) => r.reachable).length }
    }),
  )
}

function counter(metrics: string, name: string): number {
  const line = metrics.split('\n').find((l) => [`phoenix_${name}_total `, `phoenix_${name} `, `${name} `].some((start) => l.startsWith(start)))
  return line === undefined ? 0 : Number(line.trim().split(/\s+/).at(-1))
}

/** One timed run of `mode`, its phases from the instant the hubs are given. */
export async function profileRun(overlay: Overlay, mode: 'discovery' | 'offline', log: (line: string) => void): Promise<Phases> {
  await overlay.startAll(mode, true)
  const nodes = overlay.alive()
  const allowed = nodes.flatMap((a) => nodes.filter((b) => a.node.id < b.node.id && mayConnect(a.node, b.node)).map((b) => [a, b] as const))
  const cpu0 = nodesCpuSeconds(nodes)
  const load0 = loadavg()[0]!
  const t0 = performance.now()
  await overlay.go(mode)
  const at: Partial<Record<'firstLinkMs' | 'allKnownMs' | 'linksMs', number>> = {}
  let linksMax = 0
  const pairUpMs = new Map<string, number>()
  for (;;) {
    const elapsed = performance.now() - t0
    if (elapsed > RUN_TIMEOUT_MS) throw new Error(`${mode}: no convergence within ${RUN_TIMEOUT_MS} ms`)
    let vs: NodeView[]
    try {
      vs = await views(overlay)
    } catch {
      continue
    }
    const now = performance.now() - t0
    const peersOf = new Map(vs.map((v) => [v.n.peerId, new Set(v.peers)]))
    linksMax = Math.max(linksMax, ...vs.map((v) => v.peers.length))
    if (at.firstLinkMs === undefined && vs.every((v) => v.peers.length > 0)) at.firstLinkMs = now
    if (at.allKnownMs === undefined && vs.every((v) => v.reachable >= nodes.length - 1)) at.allKnownMs = now
    for (const [a, b] of allowed) {
      const key = `${a.node.id}-${b.node.id}`
      if (!pairUpMs.has(key) && (peersOf.get(a.peerId)?.has(b.peerId) === true || peersOf.get(b.peerId)?.has(a.peerId) === true)) pairUpMs.set(key, now)
    }
    if (at.linksMs === undefined && allowed.every(([a, b]) => peersOf.get(a.peerId)?.has(b.peerId) === true || peersOf.get(b.peerId)?.has(a.peerId) === true)) at.linksMs = now
    if (at.linksMs !== undefined) {
      const s = await overlay.snapshot()
      if (s.missingLinks.length === 0 && s.routeFailures === 0) {
        const convergedMs = performance.now() - t0
        const metrics = await Promise.all(nodes.map((n) => overlay.metrics(n)))
        const phases: Phases = {
          mode,
          firstLinkMs: at.firstLinkMs ?? convergedMs,
          allKnownMs: at.allKnownMs ?? convergedMs,
          linksMs: at.linksMs,
          convergedMs,
          dialsStarted: metrics.reduce((a, m) => a + counter(m, 'dials_started'), 0),
          dialsFailed: metrics.reduce((a, m) => a + counter(m, 'dials_failed'), 0),
          dialsFailedUpgrade: metrics.reduce((a, m) => a + counter(m, 'dials_failed_upgrade'), 0),
          dialsDeferred: metrics.reduce((a, m) => a + counter(m, 'core_dials_deferred'), 0),
          dialsSkipped: metrics.reduce((a, m) => a + counter(m, 'dials_skipped_connected'), 0),
          linksMax,
          nodeCpuS: Math.round((nodesCpuSeconds(nodes) - cpu0) * 10) / 10,
          load: [load0, loadavg()[0]!].map((l) => Math.round(l * 10) / 10) as [number, number],
          lastPairs: [...pairUpMs].sort((x, y) => y[1] - x[1]).slice(0, LAST_PAIRS_SHOWN).map(([pair, ms]) => ({ pair, ms: Math.round(ms) })),
        }
        log(`${mode}: ${JSON.stringify(phases)}`)
        return phases
      }
    }
    await new Promise((r) => setTimeout(r, Math.max(0, PROFILE_POLL_MS - (performance.now() - t0 - now))))
  }
}

const isMain = process.argv[1] !== undefined && /setup-profile\.ts$/.test(process.argv[1])
if (isMain) {
  cleanUpOnSignals()
  const { values } = scriptArgs(
    { options: { rounds: { type: 'string', default: '2' }, a: { type: 'string', default: '14' }, b: { type: 'string', default: '10' }, c: { type: 'string', default: '6' }, prefix: { type: 'string' } } },
    { summary: 'where connection set-up spends its time: discovery and offline rounds, phase by phase, in namespaces (root)', help: { rounds: 'rounds of each mode', a: 'processes in subnet A', b: 'processes in subnet B', c: 'processes in subnet C (IPv6)', prefix: 'namespace name prefix' } },
  )
  const subnets = DEFAULT_SUBNETS.map((s) => ({ ...s, size: intOption(values, s.name.toLowerCase(), 1) }))
  const rounds = intOption(values, 'rounds', 1)
  const topology = await buildTopology(subnets, values.prefix !== undefined ? { prefix: values.prefix } : {})
  const overlay = await Overlay.prepare(topology)
  const log = (line: string) => console.log(line)
  const runs: Phases[] = []
  try {
    for (let round = 0; round < rounds; round++) {
      // Alternate which mode goes first, so neither always runs on a machine warmed by the other.
      for (const mode of round % 2 === 0 ? (['offline', 'discovery'] as const) : (['discovery', 'offline'] as const)) {
        runs.push(await profileRun(overlay, mode, log))
        await overlay.stopAll()
      }
    }
  } finally {
    await overlay.destroy()
    await topology.destroy()
  }
  const med = (mode: string, key: keyof Phases) => {
    const xs = runs.filter((r) => r.mode === mode).map((r) => r[key] as number).sort((a, b) => a - b)
    return xs[Math.floor((xs.length - 1) / 2)]!
  }
  for (const key of ['firstLinkMs', 'allKnownMs', 'linksMs', 'convergedMs', 'dialsStarted', 'dialsFailed', 'dialsFailedUpgrade', 'dialsDeferred', 'dialsSkipped', 'nodeCpuS'] as const) {
    console.log(`${key.padEnd(14)} discovery ${med('discovery', key).toFixed(0).padStart(7)}  offline ${med('offline', key).toFixed(0).padStart(7)}`)
  }
  // Each round's own ratio (its two runs back to back, on nearly the same machine load), then their median and spread.
  const ratios = (key: 'convergedMs' | 'nodeCpuS') =>
    Array.from({ length: rounds }, (_, i) => runs.filter((r) => r.mode === 'discovery')[i]![key] / runs.filter((r) => r.mode === 'offline')[i]![key]).map((x) => Math.round(x * 100) / 100)
  const summary = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b)
    return `median ${sorted[Math.floor((sorted.length - 1) / 2)]!.toFixed(2)}x, range ${sorted[0]!.toFixed(2)}–${sorted.at(-1)!.toFixed(2)} (per round: ${xs.join(', ')})`
  }
  console.log(`convergence, discovery / offline: ${summary(ratios('convergedMs'))}`)
  console.log(`node CPU seconds, discovery / offline: ${summary(ratios('nodeCpuS'))}`)
  console.log(`load average (1 min) at the runs' starts: ${runs.map((r) => r.load[0]).join(', ')}`)
}
