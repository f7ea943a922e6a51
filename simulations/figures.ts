/**
 * Regenerates the paper's Figures 3-7 as SVG and simulations/REPORT.md with the ratios the paper
 * quotes. Usage (from the repo root):
 *
 *   npx pnpm@10 --filter @phoenix-overlay/simulations run figures            # sweeps to 400, then 1,000 (how REPORT.md is made)
 *   npx pnpm@10 --filter @phoenix-overlay/simulations run figures -- --quick # smoke: small sizes, a few seconds
 *   ... run figures -- --max-nodes 400                                        # the sweeps only
 *   ... run figures -- --max-nodes 2000                                       # adds 2,000
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SingleBar, Presets } from 'cli-progress'
import { parseScenario, scaleScenario, simulate, type Discovery, type Scenario, type SimResult, type Strategy } from '@phoenix-overlay/sim'
import * as vega from 'vega'
import * as vegaLite from 'vega-lite'
import { intOption, scriptArgs } from '../tools/script-args.ts'

const here = dirname(fileURLToPath(import.meta.url))
// The sweeps go to 400 processes per curve, then 1,000 is added (--max-nodes 400 stops at the
// sweeps; 2000 adds 2,000). The scale table (scale.ts) goes further with the optimized strategy.
const { values } = scriptArgs(
  { options: { quick: { type: 'boolean', default: false }, 'max-nodes': { type: 'string', default: '1000' } } },
  { summary: "the paper's Figures 3-7 from the simulator: writes figures/ and REPORT.md", help: { quick: 'smoke run: small sizes, seconds; writes figures-quick/ and REPORT-quick.md', 'max-nodes': 'the largest process count of each curve' } },
)
const quick = values.quick
const maxNodes = intOption(values, 'max-nodes', 1)
const outDir = join(here, quick ? 'figures-quick' : 'figures')
mkdirSync(outDir, { recursive: true })

const load = (file: string): Scenario => parseScenario(JSON.parse(readFileSync(join(here, 'scenarios', file), 'utf8')))
const oneSubnet = load('paper-1-subnet.json')
const threeSubnets = load('paper-3-subnets.json')
const churn = load('paper-fig6-churn.json')
// The same three subnets behind a firewall that answers forbidden SYNs with a reset: the master
// baseline must try every pair, so with a dropping firewall it waits out SYN timeouts; this
// variant shows the comparison without that handicap.
const threeSubnetsReject: Scenario = { ...threeSubnets, network: { ...threeSubnets.network, firewall: 'reject' } }

interface Run {
  readonly figure: string
  readonly topology: '1 subnet' | '3 subnets' | '3 subnets, RST firewall' | 'churn'
  readonly strategy: Strategy
  readonly discovery: Discovery
  readonly nodes: number
  readonly sendHoldMs: number
  readonly scenario: Scenario
}

interface Done extends Run {
  readonly result: SimResult
  readonly wallMs: number
  readonly rssMiB: number
}

const sizes = quick ? [10, 20, 40] : [25, 50, 100, 200, 300, 400]
// Naive DSDV does not scale (the paper stops at ~100; so do we: a 150-node run takes minutes).
const naiveSizes = quick ? [10, 20] : [25, 50, 75, 100]
const largeSizes = quick ? [] : [1000, 2000].filter((n) => n <= maxNodes)

function run(figure: string, topology: Run['topology'], base: Scenario, strategy: Strategy, discovery: Discovery, nodes: number, sendHoldMs?: number): Run {
  const scaled = scaleScenario(base, nodes)
  const hold = sendHoldMs ?? scaled.coreTiming.sendHoldForDialsMs ?? 0
  return {
    figure,
    topology,
    strategy,
    discovery,
    nodes,
    sendHoldMs: hold,
    scenario: { ...scaled, strategy, discovery, coreTiming: { ...scaled.coreTiming, sendHoldForDialsMs: hold } },
  }
}

const plan: Run[] = []
for (const [topology, base] of [
  ['1 subnet', oneSubnet],
  ['3 subnets', threeSubnets],
] as const) {
  for (const n of naiveSizes) plan.push(run('3', topology, base, 'naive', 'hubs', n), run('3', topology, base, 'optimized', 'hubs', n))
  for (const n of [...sizes, ...largeSizes]) {
    for (const strategy of ['optimized', 'offline', 'master'] as const) plan.push(run('4', topology, base, strategy, 'hubs', n))
  }
}
for (const n of sizes) {
  for (const strategy of ['optimized', 'offline', 'master'] as const) plan.push(run('4', '3 subnets, RST firewall', threeSubnetsReject, strategy, 'hubs', n))
  plan.push(run('7', '3 subnets', threeSubnets, 'optimized', 'all', n))
  // The paper's own policy: no send hold (our default hold is the improvement).
  plan.push(run('paper-policy', '3 subnets', threeSubnets, 'optimized', 'hubs', n, 0))
  plan.push(run('paper-policy', '1 subnet', oneSubnet, 'optimized', 'hubs', n, 0))
}
plan.push(run('5', '1 subnet', oneSubnet, 'optimized', 'hubs', quick ? 40 : 224))
plan.push(run('6', 'churn', churn, 'optimized', 'hubs', quick ? 40 : 224))

// Same scenario asked twice (figure 3 and 4 share optimized runs): run once.
const key = (r: Run) => `${r.topology}|${r.strategy}|${r.discovery}|${r.nodes}|${r.sendHoldMs}`
const unique = [...new Map(plan.map((r) => [key(r), r])).values()]

// A bar on a terminal; elsewhere one line per run (runs are synchronous, so no timer could redraw).
const bar = process.stderr.isTTY === true ? new SingleBar({ stream: process.stderr, format: 'figures |{bar}| {value}/{total} runs | {run}' }, Presets.shades_classic) : undefined
bar?.start(unique.length, 0, { run: '' })
const done = new Map<string, Done>()
for (const [i, r] of unique.entries()) {
  const label = `${r.topology} ${r.strategy}/${r.discovery} N=${r.nodes} hold=${r.sendHoldMs}`
  if (bar !== undefined) bar.update(i, { run: label })
  else process.stderr.write(`[${i + 1}/${unique.length}] ${label}\n`)
  const start = performance.now()
  const { result } = simulate(r.scenario)
  const wallMs = performance.now() - start
  if (!result.check.ok) throw new Error(`${label}: tables wrong or not converged: ${JSON.stringify(result.check.failures.slice(0, 3))}`)
  done.set(key(r), { ...r, result, wallMs, rssMiB: process.memoryUsage().rss / 2 ** 20 })
}
bar?.update(unique.length, { run: 'done' })
bar?.stop()
const results = (pred: (d: Done) => boolean) => [...done.values()].filter(pred)
const find = (topology: Run['topology'], strategy: Strategy, discovery: Discovery, nodes: number, hold?: number) =>
  [...done.values()].find((d) => d.topology === topology && d.strategy === strategy && d.discovery === discovery && d.nodes === nodes && (hold === undefined || d.sendHoldMs === hold))

// ---------------------------------------------------------------- charts

async function svg(name: string, spec: vegaLite.TopLevelSpec): Promise<void> {
  const compiled = vegaLite.compile(spec).spec
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' })
  writeFileSync(join(outDir, name), await view.toSVG())
}

const seconds = (ms: number) => Math.round(ms) / 1000
const timeChart = (title: string, rows: object[], series: string): vegaLite.TopLevelSpec => ({
  $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
  title,
  data: { values: rows },
  facet: { row: { field: 'topology', type: 'nominal', title: null } },
  spec: {
    width: 420,
    height: 200,
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: 'nodes', type: 'quantitative', title: 'processes' },
      y: { field: 'seconds', type: 'quantitative', title: 'time to stable tables (virtual s)' },
      color: { field: series, type: 'nominal' },
    },
  },
  resolve: { scale: { y: 'independent' } },
})

const defaultHold = (d: Done) => d.sendHoldMs === (d.topology === '1 subnet' ? oneSubnet : threeSubnets).coreTiming.sendHoldForDialsMs
const isPaperTopology = (d: Done) => d.topology === '1 subnet' || d.topology === '3 subnets'
const fig3 = results((d) => d.discovery === 'hubs' && (d.strategy === 'naive' || d.strategy === 'optimized') && naiveSizes.includes(d.nodes) && defaultHold(d) && isPaperTopology(d))
await svg('figure3-naive-vs-optimized.svg', timeChart('Figure 3: naive DSDV vs optimized', fig3.map((d) => ({ topology: d.topology, nodes: d.nodes, seconds: seconds(d.result.convergenceMs), strategy: d.strategy })), 'strategy'))
const fig4 = results((d) => d.discovery === 'hubs' && d.strategy !== 'naive' && defaultHold(d) && d.topology !== 'churn')
await svg('figure4-optimized-offline-master.svg', timeChart('Figure 4: optimized vs offline vs master', fig4.map((d) => ({ topology: d.topology, nodes: d.nodes, seconds: seconds(d.result.convergenceMs), strategy: d.strategy })), 'strategy'))
const fig7 = results((d) => d.topology === '3 subnets' && d.strategy === 'optimized' && defaultHold(d) && sizes.includes(d.nodes))
await svg(
  'figure7-discovery.svg',
  timeChart('Figure 7: with (hubs only) and without (all addresses given) discovery', fig7.map((d) => ({ topology: d.topology, nodes: d.nodes, seconds: seconds(d.result.convergenceMs), discovery: d.discovery === 'hubs' ? 'with discovery (hubs)' : 'without (all given)' })), 'discovery'),
)

const overTime = (title: string, d: Done): vegaLite.TopLevelSpec => {
  const rows = d.result.samples.flatMap((s) => [
    { t: s.tMs / 1000, value: s.reachableFraction, panel: 'fraction of reachable pairs' },
    { t: s.tMs / 1000, value: s.meanHops, panel: 'mean hops between reachable pairs' },
  ])
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title,
    data: { values: rows },
    facet: { row: { field: 'panel', type: 'nominal', title: null } },
    spec: {
      width: 420,
      height: 160,
      mark: { type: 'line', interpolate: 'step-after' },
      encoding: { x: { field: 't', type: 'quantitative', title: 'virtual time (s)' }, y: { field: 'value', type: 'quantitative', title: null } },
    },
    resolve: { scale: { y: 'independent' } },
  }
}
const fig5 = results((d) => d.topology === '1 subnet' && d.strategy === 'optimized' && d.nodes === (quick ? 40 : 224) && defaultHold(d))[0]!
await svg('figure5-reachability.svg', overTime(`Figure 5: routes becoming ready, ${fig5.nodes} processes, one subnet`, fig5))
const fig6 = results((d) => d.topology === 'churn')[0]!
await svg('figure6-churn.svg', overTime(`Figure 6: ${fig6.nodes} processes, half killed at 30 s and restarted at 35 s`, fig6))

// ---------------------------------------------------------------- report

const ratio = (a: number | null | undefined, b: number | null | undefined) => (a == null || b == null || b === 0 ? 'n/a' : (a / b).toFixed(2))
const row = (d: Done) =>
  `| ${d.topology} | ${d.strategy} | ${d.discovery} | ${d.sendHoldMs} | ${d.nodes} | ${d.result.convergenceMs.toFixed(1)} | ${d.result.reach90Ms ?? 'n/a'} | ${d.result.messages} | ${d.result.entries} | ${d.result.entriesOverLowerBound} | ${(d.result.bytes / 2 ** 20).toFixed(1)} | ${d.result.connectionsMissing} | ${(d.wallMs / 1000).toFixed(1)} |`
const ratioRows: string[] = []
for (const topology of ['1 subnet', '3 subnets', '3 subnets, RST firewall'] as const) {
  for (const n of [...sizes, ...largeSizes]) {
    const opt = find(topology, 'optimized', 'hubs', n)
    if (opt === undefined || !defaultHold(opt)) continue
    const off = find(topology, 'offline', 'hubs', n)
    const master = find(topology, 'master', 'hubs', n)
    const naive = find(topology, 'naive', 'hubs', n)
    const paper = find(topology, 'optimized', 'hubs', n, 0)
    ratioRows.push(
      `| ${topology} | ${n} | ${ratio(opt.result.convergenceMs, off?.result.convergenceMs)} | ${ratio(opt.result.convergenceMs, master?.result.convergenceMs)} | ${ratio(naive?.result.convergenceMs, opt.result.convergenceMs)} | ${ratio(opt.result.reach90Ms, opt.result.convergenceMs)} | ${opt.result.entriesOverLowerBound} | ${paper === undefined ? 'n/a' : `${ratio(paper.result.convergenceMs, off?.result.convergenceMs)} / ${paper.result.entriesOverLowerBound}`} |`,
    )
  }
}
const report = `# Phoenix overlay: the paper's evaluation, simulated

Generated by \`simulations/figures.ts\`${quick ? ' in --quick mode (small sizes: a smoke test, not the evaluation)' : ''}; rerun with
\`npx pnpm@10 --filter @phoenix-overlay/simulations run figures\` (add \`-- --quick\` for a smoke run).
Every run below ended with every routing table checked against BFS shortest paths in the final
connection graph (the script stops on any difference). Times are **virtual** (the simulator's
clock under the cost model in packages/sim/README.md), except "wall", the simulator's own run time.

What the numbers mean, the goals met and missed, and the core changes they point to:
[ANALYSIS.md](ANALYSIS.md) (hand-written).

Figures: ${['figure3-naive-vs-optimized.svg', 'figure4-optimized-offline-master.svg', 'figure5-reachability.svg', 'figure6-churn.svg', 'figure7-discovery.svg'].map((f) => `[${f}](${quick ? 'figures-quick' : 'figures'}/${f})`).join(', ')}.

## Ratios the paper quotes

Optimized = our core with the scenario files' send hold (\`sendHoldForDialsMs\` ${threeSubnets.coreTiming.sendHoldForDialsMs}); "paper policy" = the same core with
no hold (the paper's scheduling), shown as (its time / offline) / (its entries over N·(N−1)).
Paper at 400 processes, three subnets: optimized/offline 2.3, optimized/master 1.5, 90% reachable at 10 s of 14 s (0.71).
Goals: optimized/offline ≤ 1.3, optimized/master ≤ 1.0, 90%-reachable time ≤ 0.5 of stabilization, entries ≤ 1.5·N·(N−1) on one subnet.

| topology | N | optimized/offline | optimized/master | naive/optimized | t(90% reachable)/t(stable) | entries/N(N−1) | paper policy: time/offline / entries |
|---|---|---|---|---|---|---|---|
${ratioRows.join('\n')}

## Every run

| topology | strategy | discovery | send hold ms | N | stable at (ms) | 90% reachable at (ms) | messages | entries | entries/N(N−1) | MiB sent | connections missing | wall s |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
${[...done.values()].sort((a, b) => a.topology.localeCompare(b.topology) || a.strategy.localeCompare(b.strategy) || a.discovery.localeCompare(b.discovery) || a.sendHoldMs - b.sendHoldMs || a.nodes - b.nodes).map(row).join('\n')}

Bytes: ${[...done.values()][0]?.result.bytesModel ?? 'n/a'}.
`
// Sections other scripts write, which this one does not make: kept as they are. The "Scale"
// section is scale.ts's (its own runs, minutes to hours); the netns section is netns-figures.ts's
// (real processes).
const reportFile = join(here, quick ? 'REPORT-quick.md' : 'REPORT.md')
const previous = existsSync(reportFile) ? readFileSync(reportFile, 'utf8') : ''
const scaleSection = /<!-- scale:begin[\s\S]*<!-- scale:end -->/.exec(previous)?.[0]
const netnsSection = /<!-- netns:start -->[\s\S]*<!-- netns:end -->/.exec(previous)?.[0]
writeFileSync(reportFile, [report, scaleSection, netnsSection].filter((part) => part !== undefined).join('\n') + '\n')
writeFileSync(
  join(outDir, 'runs.csv'),
  `topology,strategy,discovery,send_hold_ms,nodes,convergence_ms,reach90_ms,messages,entries,entries_over_lower_bound,bytes,connections_missing,wall_ms\n${[...done.values()]
    .map((d) => [d.topology, d.strategy, d.discovery, d.sendHoldMs, d.nodes, d.result.convergenceMs, d.result.reach90Ms ?? '', d.result.messages, d.result.entries, d.result.entriesOverLowerBound, d.result.bytes, d.result.connectionsMissing, Math.round(d.wallMs)].join(','))
    .join('\n')}\n`,
)
process.stderr.write(`wrote ${outDir} and ${quick ? 'REPORT-quick.md' : 'REPORT.md'}\n`)
