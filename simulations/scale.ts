/**
 * The scale curve: the paper's scenarios (hubs only) at growing N, each run in its own Node
 * process so its peak RSS is its own, with wall time, entries, ns per entry and the log-log slope
 * of each against N. Writes figures/scale.csv, figures/scale.svg and the "Scale" section of
 * REPORT.md (between its markers; figures.ts keeps that section when it rewrites the report).
 *
 *   npx pnpm@10 --filter @phoenix-overlay/simulations run scale                          # 500 … 10,000, both scenarios
 *   npx pnpm@10 --filter @phoenix-overlay/simulations run scale -- --sizes 500,1000      # some sizes
 *   ... run scale -- --scenarios paper-3-subnets --timeout-s 600                         # one scenario, a run stops after 10 min
 *   ... run scale -- --baseline ../other-checkout                                        # also run another checkout (same sizes) and print ratios
 *   ... run scale -- --report-only                                                       # rewrite the figure and the REPORT.md section from figures/scale.csv
 *   ... run scale -- --rss-limit-mib 8000                                                # stop a run whose resident set passes 8,000 MiB (default 16,384; the V8 heap limit of a run too large for 4,096 MiB)
 *   node ... scale.ts --child --time-check --tree .. --scenario-file scenarios/paper-3-subnets.json --nodes 5000   # one run, then the final table check again, timed (stderr)
 *
 * Each row also records the machine's load average during the run (wall time depends on it) and
 * the live set at the end (heap and array buffers after a full collection). Each run's process gets
 * glibc's malloc asked for transparent huge pages (huge-pages.ts; `GLIBC_TUNABLES=glibc.malloc.hugetlb=0`
 * in the environment runs without them).
 *
 * A run that times out, passes the memory limit or crashes is recorded as such (with the wall time and resident set it reached), and the scenario's larger
 * sizes are skipped. Progress: one line per run on stderr, and the child's own line every 10 s.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { cpus, loadavg } from 'node:os'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { SIM_LIMITS } from '@phoenix-overlay/sim'
import { fail, scriptArgs } from '../tools/script-args.ts'
import { withHugePages } from './huge-pages.ts'
import * as vega from 'vega'
import * as vegaLite from 'vega-lite'

const here = dirname(fileURLToPath(import.meta.url))

/** What one child run reports on its stdout (one JSON line). */
interface RunOutcome {
  scenario: string
  nodes: number
  tree: string
  status: 'ok' | 'not converged' | 'tables wrong' | 'timeout' | 'over memory limit' | 'out of heap' | 'crashed'
  wallS: number
  /** User + system CPU seconds of the run's process: what wall time would be on an idle machine (give or take GC threads). */
  cpuS: number
  peakRssMiB: number
  entries: number
  check: string
  convergenceMs: number
  /** What the run still holds at its end, after a full GC (V8 heap + array buffers, MiB): the live set, apart from garbage and V8's headroom; 0 where not recorded. */
  liveMiB?: number
  /** The machine's 1-minute load average while the run went, lowest–highest (sampled every second by the parent); '' where not recorded. */
  load?: string
}

const { values } = scriptArgs(
  {
    options: {
      sizes: { type: 'string', default: '500,1000,2000,5000,10000' },
      scenarios: { type: 'string', default: 'paper-1-subnet,paper-3-subnets' },
      'timeout-s': { type: 'string', default: '1800' },
      'rss-limit-mib': { type: 'string', default: '16384' },
      baseline: { type: 'string' },
      'report-only': { type: 'boolean', default: false },
      child: { type: 'boolean', default: false },
      tree: { type: 'string' },
      'scenario-file': { type: 'string' },
      nodes: { type: 'string' },
      'time-check': { type: 'boolean', default: false },
    },
  },
  {
    summary: 'the scale curve: each scenario at each size in its own Node process; writes figures/scale.csv, figures/scale.svg and the Scale section of REPORT.md',
    help: {
      sizes: 'process counts, comma-separated',
      scenarios: 'names of scenarios/*.json, comma-separated',
      'timeout-s': 'a run still going after this long is stopped (and larger sizes of its scenario skipped)',
      'rss-limit-mib': 'a run whose resident set passes this is stopped; also the V8 heap limit of a run too large for 4,096 MiB',
      baseline: 'another checkout: run it too, at the same sizes, and print the ratios (writes nothing)',
      'report-only': 'rewrite the figure and the REPORT.md section from figures/scale.csv',
      child: 'internal: one run, its outcome as a JSON line (with --tree, --scenario-file, --nodes)',
      'time-check': 'with --child: check every table a second time after the run and print how long that check took (stderr)',
    },
  },
)

const nsPerEntry = (r: RunOutcome): string => (r.entries > 0 ? ((r.wallS * 1e9) / r.entries).toFixed(0) : 'n/a')
const SCALE_BEGIN = '<!-- scale:begin (written by scale.ts) -->'
const SCALE_END = '<!-- scale:end -->'
/** The core's default neighbour limit (packages/core constants.ts DEFAULT_LIMITS.neighboursMax). */
const NEIGHBOURS_MAX_DEFAULT = 4_096
/** V8's semi-space for each run (MiB): see runChild. */
const SEMI_SPACE_MIB = 128
/**
 * V8's heap limit (MiB) for a run expected to fit in it; a larger run gets the resident-set limit.
 * A limit far above what a run needs made it slower: three subnets at 2,000 processes, same code
 * and machine, 55–61 s wall at 4,096 MiB or V8's default (about the same), 67–70 s at 6,144 and
 * 16,384 (five runs); checked again alternated, 61.4 and 59.8 s at 4,096, 70.7 and 64.3 s at
 * 16,384 (simulations/ANALYSIS.md); one subnet at 2,000, 91.8 s / 4.2 GiB peak at 4,096 against 94.1 s / 5.0 GiB
 * at 16,384.
 */
const SMALL_HEAP_MIB = 4_096
/**
 * How a run's process reads the TypeScript sources: as `phoenix sim` does (bin/phoenix), with
 * Node's own transform where Node has one (22.7 and later: the workspace's Node 24), so the table
 * measures what a user's command runs; else tsx's loader.
 */
const TYPESCRIPT_ARGS = process.features.typescript !== undefined ? ['--experimental-transform-types', '--disable-warning=ExperimentalWarning'] : ['--import', 'tsx']
/** Heap a run needs per (process, destination) pair, bytes (the sim package's estimate). */
const { HEAP_BYTES_PER_PAIR } = SIM_LIMITS

if (values.child) await child()
else await parent()

/** Child mode: one simulation with the sim package of `--tree`, its outcome as one JSON line. */
async function child(): Promise<void> {
  const tree = resolve(values.tree ?? join(here, '..'))
  const file = values['scenario-file']!
  const nodes = Number(values.nodes)
  const sim = (await import(pathToFileURL(join(tree, 'packages/sim/src/index.ts')).href)) as typeof import('@phoenix-overlay/sim')
  const scaled = sim.scaleScenario(sim.parseScenario(JSON.parse(readFileSync(file, 'utf8'))), nodes)
  // Every process dials every gateway: a gateway needs a neighbour per process, past the core's
  // default neighboursMax (4,096) from 4,097 processes on. At its limit it refuses dials, and the
  // refused learn their records from peers instead of a hub: at 600 processes with a limit of
  // 400, 41 entries per pair instead of 1.07 (packages/sim/README.md, "A node at its neighbour
  // limit"). (A checkout from before scenarios had coreLimits ignores the field.)
  const scenario = { ...scaled, coreLimits: { neighboursMax: Math.max(NEIGHBOURS_MAX_DEFAULT, nodes), ...scaled.coreLimits } }
  const start = performance.now()
  let nextLineMs = start + 10_000
  // The simulation is kept until the live set is measured: without it a full GC frees it all.
  const { sim: simulation, result } = sim.simulate(scenario, {
    onProgress: (virtualMs: number, events: number) => {
      const now = performance.now()
      if (now < nextLineMs) return
      nextLineMs = now + 10_000
      process.stderr.write(`  ${scenario.name}@${nodes}: ${((now - start) / 1000).toFixed(0)} s wall, virtual ${virtualMs.toFixed(0)} ms, ${events} events, rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB\n`)
    },
  })
  const outcome: RunOutcome = {
    scenario: scenario.name,
    nodes,
    tree,
    status: !result.converged ? 'not converged' : !result.check.ok ? 'tables wrong' : 'ok',
    wallS: (performance.now() - start) / 1000,
    cpuS: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
    // resourceUsage().maxRSS is in KiB: the whole process's peak, what /usr/bin/time -v reports.
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
    entries: result.entries,
    check: result.check.method,
    convergenceMs: result.convergenceMs,
  }
  // Measured after the outcome's times: a full collection is not part of the run.
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc !== undefined) {
    gc()
    const memory = process.memoryUsage()
    outcome.liveMiB = (memory.heapUsed + memory.arrayBuffers) / 2 ** 20
    // Used after the collection, so the simulation is still reachable during it.
    if (simulation === undefined) throw new Error('scale: the simulation was not kept')
  }
  if (values['time-check']) {
    // The run's own check is inside its wall time; this one repeats it alone (same method, same tables).
    const checkStart = performance.now()
    const check = simulation.checkTables()
    process.stderr.write(`  table check: ${((performance.now() - checkStart) / 1000).toFixed(2)} s (${check.method}, ${check.ok ? 'ok' : 'failed'})\n`)
  }
  // The co-hubs' waits (packages/core fanout.ts), summed over the gateways: how many send rounds
  // waited for another gateway's plan, and how many of those waits the bound ended instead.
  let waits = 0
  let expired = 0
  for (const node of simulation.nodes) {
    const core = (node.process as { core?: { stats(): { coHubWaits: number; coHubWaitsExpired: number } } } | undefined)?.core
    if (core === undefined) continue
    const stats = core.stats()
    waits += stats.coHubWaits
    expired += stats.coHubWaitsExpired
  }
  process.stderr.write(`  co-hub waits: ${waits} rounds waited for a co-hub's plan, ${expired} ended by coHubWaitMs\n`)
  process.stdout.write(`${JSON.stringify(outcome)}\n`)
}

/** The resident set of process `pid` in MiB (Linux /proc), 0 where unknown. */
function rssMiB(pid: number | undefined): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))
    return line === undefined ? 0 : Number(line.split(/\s+/)[1]) / 1024
  } catch {
    return 0
  }
}

/**
 * One run, with the small heap limit where the run should fit in it (HEAP_BYTES_PER_PAIR); a run
 * that still runs out of it is run again with the resident-set limit as its heap limit, and says so.
 */
async function runSized(tree: string, scenario: string, nodes: number, timeoutS: number, rssLimitMiB: number): Promise<RunOutcome> {
  const fits = (nodes * nodes * HEAP_BYTES_PER_PAIR) / 2 ** 20 <= SMALL_HEAP_MIB && SMALL_HEAP_MIB < rssLimitMiB
  if (fits) {
    const r = await runChild(tree, scenario, nodes, timeoutS, rssLimitMiB, SMALL_HEAP_MIB)
    if (r.status !== 'out of heap') return r
    process.stderr.write(`  out of the ${SMALL_HEAP_MIB} MiB heap after ${r.wallS.toFixed(1)} s: running again with a ${rssLimitMiB} MiB heap\n`)
  }
  return runChild(tree, scenario, nodes, timeoutS, rssLimitMiB, rssLimitMiB)
}

function runChild(tree: string, scenario: string, nodes: number, timeoutS: number, rssLimitMiB: number, heapLimitMiB: number): Promise<RunOutcome> {
  // A larger young generation: a run allocates short-lived objects (messages, adverts, views) by
  // the gigabyte, and each scavenge copies what a few hundred events still hold and walks the
  // large old generation's pointers into the young one (at 1,000 processes, three subnets: 15%
  // less CPU with 64 MiB than with 16, measured; then 128 against 64: 2,000 processes, three
  // subnets, 113 and 115 s -> 98 and 109 s wall; 1,000 on one subnet 31.6 -> 23.6 s; 500 unchanged).
  // The old generation gets SMALL_HEAP_MIB where the run fits in it, else it may grow to the
  // resident-set limit (V8's default is ~4 GiB whatever the machine has): a run past that is
  // stopped by the watch below, not by an out-of-memory crash.
  const args = ['--expose-gc', `--max-semi-space-size=${SEMI_SPACE_MIB}`, `--max-old-space-size=${Math.round(heapLimitMiB)}`, ...TYPESCRIPT_ARGS, fileURLToPath(import.meta.url), '--child', '--tree', tree, '--scenario-file', join(here, 'scenarios', `${scenario}.json`), '--nodes', String(nodes)]
  return new Promise((done) => {
    const started = performance.now()
    // Transparent huge pages for the typed arrays' memory (huge-pages.ts): the run is bound by
    // memory access, and with 4 KiB pages its random touches of the state miss the TLB too.
    const proc = spawn(process.execPath, args, { cwd: here, env: withHugePages(process.env), stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutS * 1000)
    // A run past the memory limit is stopped before it takes the machine down (the heap limit does
    // not cover typed arrays' backing stores); what it reached is reported.
    let peakSeen = 0
    let overLimit = false
    // Wall time depends on what else the machine runs: each row says how loaded it was.
    const loads: number[] = []
    const load = (): string => (loads.length === 0 ? '' : `${Math.min(...loads).toFixed(0)}–${Math.max(...loads).toFixed(0)}`)
    const watch = setInterval(() => {
      loads.push(loadavg()[0]!)
      peakSeen = Math.max(peakSeen, rssMiB(proc.pid))
      if (peakSeen > rssLimitMiB) {
        overLimit = true
        proc.kill('SIGKILL')
      }
    }, 1000)
    proc.on('close', (code, signal) => {
      clearTimeout(timer)
      clearInterval(watch)
      const line = out.trim().split('\n').at(-1)
      const wallS = (performance.now() - started) / 1000
      if (code === 0 && line !== undefined && line.startsWith('{')) done({ ...(JSON.parse(line) as RunOutcome), load: load() })
      else done({ scenario, nodes, tree, status: overLimit ? 'over memory limit' : wallS >= timeoutS ? 'timeout' : outOfHeap(code, signal, heapLimitMiB, rssLimitMiB) ? 'out of heap' : 'crashed', wallS, cpuS: 0, peakRssMiB: peakSeen, entries: 0, check: '', convergenceMs: 0, load: load() })
    })
  })
}

/** V8 aborts (SIGABRT) when a heap below the resident-set limit is full. */
function outOfHeap(code: number | null, signal: NodeJS.Signals | null, heapLimitMiB: number, rssLimitMiB: number): boolean {
  return heapLimitMiB < rssLimitMiB && (signal === 'SIGABRT' || code === 134)
}

/** Least-squares slope of log(y) against log(x). */
function slope(points: readonly (readonly [number, number])[]): number | undefined {
  const p = points.filter(([x, y]) => x > 0 && y > 0).map(([x, y]) => [Math.log(x), Math.log(y)] as const)
  if (p.length < 2) return undefined
  const mx = p.reduce((s, [x]) => s + x, 0) / p.length
  const my = p.reduce((s, [, y]) => s + y, 0) / p.length
  const sxx = p.reduce((s, [x]) => s + (x - mx) ** 2, 0)
  return p.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0) / sxx
}

async function parent(): Promise<void> {
  const sizes = values.sizes.split(',').map(Number)
  const scenarios = values.scenarios.split(',')
  const timeoutS = Number(values['timeout-s'])
  const rssLimitMiB = Number(values['rss-limit-mib'])
  const baseline = values.baseline
  if (sizes.some((n) => !Number.isInteger(n) || n < 2)) fail(`--sizes: integers >= 2, comma-separated, got ${JSON.stringify(values.sizes)}`)
  if (!(timeoutS > 0)) fail(`--timeout-s: a positive number, got ${JSON.stringify(values['timeout-s'])}`)
  if (!(rssLimitMiB > 0)) fail(`--rss-limit-mib: a positive number, got ${JSON.stringify(values['rss-limit-mib'])}`)
  for (const name of scenarios) if (!existsSync(join(here, 'scenarios', `${name}.json`))) fail(`--scenarios: no scenarios/${name}.json`)
  if (baseline !== undefined && !existsSync(join(baseline, 'packages/sim/src/index.ts'))) fail(`--baseline: ${baseline} is not a checkout of this repository (no packages/sim/src/index.ts)`)
  const trees = [resolve(here, '..'), ...(baseline === undefined ? [] : [resolve(baseline)])]
  const reportOnly = values['report-only']
  const csvFile = join(here, 'figures', 'scale.csv')
  const rows = new Map<string, RunOutcome>()
  // Earlier runs of other sizes stay in the table: the curve can be built a few sizes at a time.
  if (existsSync(csvFile) && baseline === undefined) for (const r of readCsv(csvFile)) rows.set(`${r.scenario}@${r.nodes}`, r)
  for (const scenario of reportOnly ? [] : scenarios) {
    const stopped = new Set<string>()
    for (const nodes of sizes) {
      for (const tree of trees) {
        if (stopped.has(tree)) continue
        process.stderr.write(`${scenario} at ${nodes}${tree === trees[0] ? '' : ' (baseline)'}: running (timeout ${timeoutS} s)\n`)
        const r = await runSized(tree, scenario, nodes, timeoutS, rssLimitMiB)
        process.stderr.write(`${scenario} at ${nodes}${tree === trees[0] ? '' : ' (baseline)'}: ${r.status}, ${r.wallS.toFixed(1)} s, ${r.peakRssMiB.toFixed(0)} MiB peak, ${r.entries} entries, ${nsPerEntry(r)} ns/entry, check ${r.check}\n`)
        if (tree === trees[0]) {
          rows.set(`${scenario}@${nodes}`, r)
          // Saved after every run: a long curve cut short keeps what it measured.
          if (baseline === undefined) await save(csvFile, rows)
        } else {
          const ours = rows.get(`${scenario}@${nodes}`)!
          process.stderr.write(`  ratio (this / baseline): wall ${(ours.wallS / r.wallS).toFixed(2)}, CPU ${(ours.cpuS / r.cpuS).toFixed(2)} (${ours.cpuS.toFixed(1)} s / ${r.cpuS.toFixed(1)} s), peak RSS ${(ours.peakRssMiB / r.peakRssMiB).toFixed(2)}, live at the end ${ours.liveMiB && r.liveMiB ? `${(ours.liveMiB / r.liveMiB).toFixed(2)} (${ours.liveMiB.toFixed(0)} / ${r.liveMiB.toFixed(0)} MiB)` : 'n/a'}; load ${ours.load ?? '?'} / ${r.load ?? '?'}\n`)
        }
        if (r.status !== 'ok') stopped.add(tree)
      }
    }
  }
  if (baseline !== undefined) return
  await save(csvFile, rows)
  process.stderr.write(`wrote figures/scale.csv, figures/scale.svg and the Scale section of REPORT.md\n`)
}

/** Writes the CSV, the figure and the REPORT.md section from every row so far. */
async function save(csvFile: string, rows: ReadonlyMap<string, RunOutcome>): Promise<void> {
  const all = [...rows.values()].sort((a, b) => a.scenario.localeCompare(b.scenario) || a.nodes - b.nodes)
  mkdirSync(join(here, 'figures'), { recursive: true })
  writeFileSync(csvFile, `scenario,nodes,status,wall_s,peak_rss_mib,entries,check,convergence_ms,cpu_s,load,live_mib\n${all.map((r) => [r.scenario, r.nodes, r.status, r.wallS.toFixed(1), r.peakRssMiB.toFixed(0), r.entries, r.check, r.convergenceMs, r.cpuS > 0 ? r.cpuS.toFixed(1) : '', r.load ?? '', r.liveMiB !== undefined && r.liveMiB > 0 ? r.liveMiB.toFixed(0) : ''].join(',')).join('\n')}\n`)
  await writeFigure(all)
  writeReportSection(all)
}

function readCsv(file: string): RunOutcome[] {
  const [, ...lines] = readFileSync(file, 'utf8').trim().split('\n')
  return lines.map((line) => {
    const [scenario, nodes, status, wallS, peakRssMiB, entries, check, convergenceMs, cpuS, load, liveMiB] = line.split(',')
    return { scenario: scenario!, nodes: Number(nodes), tree: '', status: status as RunOutcome['status'], wallS: Number(wallS), cpuS: Number(cpuS ?? 0) || 0, peakRssMiB: Number(peakRssMiB), entries: Number(entries), check: check!, convergenceMs: Number(convergenceMs), load: load ?? '', liveMiB: Number(liveMiB ?? 0) || 0 }
  })
}

async function writeFigure(all: readonly RunOutcome[]): Promise<void> {
  const ok = all.filter((r) => r.status === 'ok')
  const values = ok.flatMap((r) => [
    { scenario: r.scenario, nodes: r.nodes, measure: 'wall time (s)', value: r.wallS },
    { scenario: r.scenario, nodes: r.nodes, measure: 'peak RSS (GiB)', value: r.peakRssMiB / 1024 },
  ])
  const spec: vegaLite.TopLevelSpec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: 'Simulator scale curve (hubs only), log-log',
    data: { values },
    facet: { column: { field: 'measure', type: 'nominal', title: null } },
    spec: {
      width: 300,
      height: 220,
      mark: { type: 'line', point: true },
      encoding: {
        x: { field: 'nodes', type: 'quantitative', title: 'processes', scale: { type: 'log' } },
        y: { field: 'value', type: 'quantitative', title: null, scale: { type: 'log' } },
        color: { field: 'scenario', type: 'nominal' },
      },
    },
    resolve: { scale: { y: 'independent' } },
  }
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' })
  writeFileSync(join(here, 'figures', 'scale.svg'), await view.toSVG())
}


function writeReportSection(all: readonly RunOutcome[]): void {
  const lines = all.map((r) => `| ${r.scenario} | ${r.nodes} | ${r.status} | ${r.wallS.toFixed(1)} | ${r.cpuS > 0 ? r.cpuS.toFixed(1) : 'n/a'} | ${r.load !== undefined && r.load !== '' ? r.load : 'n/a'} | ${r.peakRssMiB.toFixed(0)} | ${r.liveMiB !== undefined && r.liveMiB > 0 ? r.liveMiB.toFixed(0) : 'n/a'} | ${r.entries} | ${nsPerEntry(r)} | ${r.check} |`)
  const slopes = [...new Set(all.map((r) => r.scenario))].map((scenario) => {
    const ok = all.filter((r) => r.scenario === scenario && r.status === 'ok')
    const s = (f: (r: RunOutcome) => number) => slope(ok.map((r) => [r.nodes, f(r)] as const))?.toFixed(2) ?? 'n/a'
    return `| ${scenario} | ${ok.map((r) => r.nodes).join(', ')} | ${s((r) => r.wallS)} | ${s((r) => r.peakRssMiB)} | ${s((r) => r.entries)} |`
  })
  const section = `${SCALE_BEGIN}
## Scale

Written by \`simulations/scale.ts\` (\`npx pnpm@10 --filter @phoenix-overlay/simulations run scale\`): each run
in its own Node process (the TypeScript sources run as \`phoenix sim\` runs them, on Node's own transform; V8 semi-space ${SEMI_SPACE_MIB} MiB; heap limit ${SMALL_HEAP_MIB} MiB where N²·${HEAP_BYTES_PER_PAIR} bytes fit in it, else the resident-set limit), hubs only, every core's \`neighboursMax\` at least N (a gateway has a neighbour per process), wall time and peak RSS of that process, every table checked
(the check column: \`reference\` = core's BFS checker on every node; \`twin-classes\` = the exact
same check with one BFS per class of nodes with identical closed neighbourhoods, every pair).
ns per entry = wall time / entries sent; CPU s = the process's user + system time (wall time
depends on what else the machine runs; load = the machine's 1-minute load average during the run,
lowest–highest, on ${cpus().length} cores; live MiB = what the process still held at the end
after a full collection, V8 heap and array buffers: the state itself, apart from garbage; n/a: not recorded). Figure: [figures/scale.svg](figures/scale.svg).

| scenario | N | status | wall s | CPU s | load | peak RSS MiB | live MiB | entries | ns/entry | check |
|---|---|---|---|---|---|---|---|---|---|---|
${lines.join('\n')}

Log-log slopes (least squares over the converged sizes):

| scenario | sizes | wall time | peak RSS | entries |
|---|---|---|---|---|
${slopes.join('\n')}
${SCALE_END}`
  const file = join(here, 'REPORT.md')
  const report = readFileSync(file, 'utf8')
  const begin = report.indexOf(SCALE_BEGIN)
  const end = report.indexOf(SCALE_END)
  const next = begin >= 0 && end > begin ? report.slice(0, begin) + section + report.slice(end + SCALE_END.length) : `${report.trimEnd()}\n\n${section}\n`
  writeFileSync(file, next)
}
