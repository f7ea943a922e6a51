/**
 * The fair forwarding benchmark: one OS process per node on loopback, Phoenix through 0, 1 and 2
 * intermediates against a bare libp2p stream, an it-pipe relay, a pause/resume relay and
 * circuit-relay-v2, in interleaved rounds; the in-process variant (all nodes in this process)
 * for comparison; the middle node's memory over a long transfer. Writes REPORT.md's forwarding
 * section, a CSV of every run and an SVG figure.
 *
 *   npx -y pnpm@10 --filter @phoenix-overlay/bench run forwarding                # about 10 minutes
 *   npx -y pnpm@10 --filter @phoenix-overlay/bench run forwarding -- --quick     # smoke run, seconds
 *   ... run forwarding -- --rounds 5 --out DIR --no-in-process --no-memory --profile --paths bare,phoenix-1
 *   ... run forwarding -- --node-flags ''     # every node process on Node's defaults (see NODE_FLAGS);
 *                                             # others as --node-flags='--max-semi-space-size=8'
 */
import { mkdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fail, scriptArgs } from '../../tools/script-args.ts'
import { measureLatency, measureThroughput, openPath, RSS_SAMPLE_MS } from './measure.ts'
import { nodesOf, PATH_IDS, PATHS, setUpPath, type PathId } from './paths.ts'
import { makePlan, parseNodeFlags, SIZE_BYTES, sizeLabel, type Plan, type SizePlan } from './plan.ts'
import { summarizeProfile, type ProfileSummary } from './profile.ts'
import { writeForwardingReport, type MemoryRow, type Row, type Variant } from './report.ts'
import { localNode, spawnNode, type NodeHandle } from './rpc.ts'

const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const { values } = scriptArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    out: { type: 'string' },
    'no-in-process': { type: 'boolean', default: false },
    'no-memory': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    paths: { type: 'string' },
    sizes: { type: 'string' },
    'node-flags': { type: 'string' },
  },
}, { summary: 'the fair forwarding benchmark: one process per node, Phoenix through 0-2 intermediates against a bare stream, pipe relays and circuit-relay-v2' })
const rounds = values.rounds === undefined ? undefined : Number(values.rounds)
if (rounds !== undefined && !(Number.isInteger(rounds) && rounds > 0)) fail(`--rounds must be a positive integer, got ${JSON.stringify(values.rounds)}`)
const paths = values.paths?.split(',').map((p) => p.trim())
for (const p of paths ?? []) if (!(PATH_IDS as readonly string[]).includes(p)) fail(`--paths: unknown path ${JSON.stringify(p)}; known: ${PATH_IDS.join(', ')}`)
const sizes = values.sizes?.split(',').map((s) => Number(s.trim()))
for (const s of sizes ?? []) if (!SIZE_BYTES.includes(s)) fail(`--sizes: unknown message size ${JSON.stringify(s)}; known: ${SIZE_BYTES.join(', ')}`)
let nodeFlags: string[] | undefined
try {
  nodeFlags = values['node-flags'] === undefined ? undefined : parseNodeFlags(values['node-flags'])
} catch (error) {
  fail((error as Error).message)
}
const plan = makePlan({ quick: values.quick, ...(rounds !== undefined ? { rounds } : {}), ...(paths !== undefined ? { paths: paths as PathId[] } : {}), ...(sizes !== undefined ? { sizes } : {}), ...(nodeFlags !== undefined ? { nodeFlags } : {}) })
const outDir = resolve(values.out ?? join(benchDir, values.quick ? 'results-quick' : 'results'))
mkdirSync(outDir, { recursive: true })
const log = (line: string) => process.stderr.write(`${line}\n`)

/** Measures every size on one path whose nodes are `nodes` (sender first), then stops them. */
async function runPath(plan: Plan, variant: Variant, round: number, path: PathId, nodes: NodeHandle[], sizes: readonly SizePlan[]): Promise<Row[]> {
  const rows: Row[] = []
  try {
    const t0 = performance.now()
    await openPath(nodes, await setUpPath(path, nodes))
    log(`  ${variant} r${round} ${path}: set up in ${(performance.now() - t0).toFixed(0)} ms`)
    for (const size of sizes) {
      const warmup = await measureThroughput(nodes, size.messageBytes, size.warmupBytes)
      const throughput = await measureThroughput(nodes, size.messageBytes, size.budgetBytes)
      const latency = await measureLatency(nodes, size.messageBytes, size.latencyMessages, size.gapMs, plan.settleMs)
      rows.push({ variant, round, path, intermediates: PATHS[path].intermediates, messageBytes: size.messageBytes, warmup, throughput, latency })
      log(`  ${variant} r${round} ${path.padEnd(16)} ${sizeLabel(size.messageBytes).padStart(6)}: ${throughput.mibPerS.toFixed(1).padStart(7)} MiB/s (first transfer ${warmup.mibPerS.toFixed(1)}), latency median ${latency.medianUs.toFixed(0)} µs, p99 ${latency.p99Us.toFixed(0)} µs`)
    }
  } finally {
    await Promise.all(nodes.map((n) => n.call('stop')))
  }
  return rows
}

async function withProcesses<T>(count: number, body: (nodes: NodeHandle[]) => Promise<T>): Promise<T> {
  const nodes = await Promise.all(Array.from({ length: count }, (_, i) => spawnNode(`node-${i}`, plan.nodeFlags)))
  try {
    return await body(nodes)
  } finally {
    await Promise.all(nodes.map((n) => n.close()))
  }
}

/**
 * Round r runs every path (in an order rotated by r, so no path always runs first), then the
 * in-process variant. `last` runs on the last round's processes before they end.
 */
async function runRounds(plan: Plan, inProcess: boolean, last: (pool: NodeHandle[]) => Promise<void>): Promise<Row[]> {
  const rows: Row[] = []
  const widest = Math.max(3, ...plan.paths.map(nodesOf))
  for (let round = 1; round <= plan.rounds; round++) {
    const order = plan.paths.map((_, i) => plan.paths[(i + round - 1) % plan.paths.length]!)
    log(`round ${round}/${plan.rounds}: one process per node`)
    await withProcesses(widest, async (pool) => {
      for (const path of order) rows.push(...(await runPath(plan, 'process', round, path, pool.slice(0, nodesOf(path)), plan.sizes)))
      if (round === plan.rounds) await last(pool)
    })
    if (!inProcess) continue
    log(`round ${round}/${plan.rounds}: every node in one process`)
    for (const path of order) {
      const nodes = Array.from({ length: nodesOf(path) }, (_, i) => localNode(`local-${i}`))
      rows.push(...(await runPath(plan, 'in-process', round, path, nodes, plan.inProcessSizes)))
    }
  }
  return rows
}

/** The middle node's resident memory over one long transfer, per relay kind: fresh processes each, or (a smoke run) `shared`. */
async function runMemory(plan: Plan, shared: NodeHandle[] | undefined): Promise<MemoryRow[]> {
  const measure = async (path: PathId, nodes: NodeHandle[]): Promise<MemoryRow> => {
    log(`memory: ${path}, ${sizeLabel(plan.memoryBytes)} of 64 KiB messages`)
    try {
      await openPath(nodes, await setUpPath(path, nodes))
      const throughput = await measureThroughput(nodes, 64 * 1024, plan.memoryBytes, { sampleRss: true })
      const middle = throughput.usage[1]!
      log(`  middle RSS ${(middle.rssStartBytes / 2 ** 20).toFixed(0)} → peak ${(middle.rssPeakBytes / 2 ** 20).toFixed(0)} → ${(middle.rssEndBytes / 2 ** 20).toFixed(0)} MiB`)
      return { path, bytes: throughput.bytes, mibPerS: throughput.mibPerS, rssStartBytes: middle.rssStartBytes, rssPeakBytes: middle.rssPeakBytes, rssEndBytes: middle.rssEndBytes, sampleMs: RSS_SAMPLE_MS }
    } finally {
      await Promise.all(nodes.map((n) => n.call('stop')))
    }
  }
  const rows: MemoryRow[] = []
  for (const path of plan.memoryPaths) rows.push(shared !== undefined ? await measure(path, shared.slice(0, nodesOf(path))) : await withProcesses(nodesOf(path), (nodes) => measure(path, nodes)))
  return rows
}

/** Phoenix through one intermediate at 64 KiB, the middle node's CPU profiled over the transfer only. */
async function runProfile(plan: Plan): Promise<ProfileSummary> {
  const file = join(outDir, 'phoenix-1-middle.cpuprofile')
  const budget = plan.sizes.find((s) => s.messageBytes === 64 * 1024)!.budgetBytes
  log(`profile: phoenix-1, the middle node's CPU over ${sizeLabel(budget)} of 64 KiB messages → ${file}`)
  await withProcesses(3, async (nodes) => {
    await openPath(nodes, await setUpPath('phoenix-1', nodes))
    await measureThroughput(nodes, 64 * 1024, budget, { profile: { node: 1, file } })
  })
  return summarizeProfile(file)
}

const started = performance.now()
let memory: MemoryRow[] = []
const rows = await runRounds(plan, !values['no-in-process'], async (pool) => {
  if (!values['no-memory'] && !plan.memoryFreshProcesses) memory = await runMemory(plan, pool)
})
if (!values['no-memory'] && plan.memoryFreshProcesses) memory = await runMemory(plan, undefined)
const profile = values.profile ? await runProfile(plan) : undefined
const report = await writeForwardingReport({ plan, rows, memory, profile, outDir, quick: values.quick, reportFile: values.quick || values.out !== undefined ? join(outDir, 'REPORT.md') : join(benchDir, 'REPORT.md'), wallSeconds: (performance.now() - started) / 1000 })
process.stdout.write(report)
