/**
 * The most a simulation holds at once: one run (as `scale.ts --child` runs it) with a full
 * collection every `--every` events, the largest heap used plus array buffers seen, and where in
 * the run; the same at the end. A resident set's peak also counts V8's room (young generation,
 * garbage before a collection), which moves with the collector's timing: this does not.
 *
 *   node --expose-gc --max-semi-space-size=128 --max-old-space-size=4096 --import tsx simulations/peak-live.ts --nodes 2000 --scenario paper-1-subnet
 *   ... --tree ../other-checkout                                                  # another checkout's code
 *
 * About 1.3× a plain run's CPU at 2,000 processes with `--every 200000` (a one-subnet run is 2-3 M events).
 */
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { fail, intOption, scriptArgs } from '../tools/script-args.ts'

const here = dirname(fileURLToPath(import.meta.url))
const { values } = scriptArgs(
  { options: { nodes: { type: 'string', default: '2000' }, scenario: { type: 'string', default: 'paper-1-subnet' }, every: { type: 'string', default: '200000' }, tree: { type: 'string' } } },
  {
    summary: 'the most a simulation holds at once (heap used plus array buffers after a full collection every --every events), and at its end',
    help: { nodes: 'processes (the scenario scaled to this size)', scenario: 'a file of simulations/scenarios/, without .json', every: 'events between two full collections (a multiple of 2,000: progress is reported every 2,000)', tree: 'the checkout whose packages/sim runs (default: this one)' },
  },
)
const nodes = intOption(values, 'nodes', 2, 100_000)
const every = intOption(values, 'every', 2_000, 1e9)
const gc = (globalThis as { gc?: () => void }).gc ?? fail('run with node --expose-gc')

const tree = resolve(values.tree ?? join(here, '..'))
const sim = (await import(pathToFileURL(join(tree, 'packages/sim/src/index.ts')).href)) as typeof import('@phoenix-overlay/sim')
const scaled = sim.scaleScenario(sim.parseScenario(JSON.parse(readFileSync(join(here, 'scenarios', `${values.scenario}.json`), 'utf8'))), nodes)
const mib = (bytes: number) => Number((bytes / 2 ** 20).toFixed(1))
const held = () => {
  gc()
  const m = process.memoryUsage()
  return { liveMiB: mib(m.heapUsed + m.arrayBuffers), heapMiB: mib(m.heapUsed), arrayBuffersMiB: mib(m.arrayBuffers) }
}
let peak = { liveMiB: 0, heapMiB: 0, arrayBuffersMiB: 0, events: 0, virtualMs: 0 }
let peakRss = 0
// As scale.ts: every process may connect to every gateway.
const run = sim.simulate(
  { ...scaled, coreLimits: { neighboursMax: Math.max(4096, nodes), ...scaled.coreLimits } },
  {
    onProgress: (virtualMs: number, events: number) => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss)
      if (events % every !== 0) return
      const now = held()
      if (now.liveMiB > peak.liveMiB) peak = { ...now, events, virtualMs: Number(virtualMs.toFixed(3)) }
    },
  },
)
const end = held()
process.stdout.write(
  `${JSON.stringify({ scenario: values.scenario, nodes, tree, converged: run.result.converged, entries: run.result.entries, peak, end, peakRssMiB: mib(peakRss), bytesPerPairAtPeak: Number(((peak.liveMiB * 2 ** 20) / nodes ** 2).toFixed(1)) })}\n`,
)
