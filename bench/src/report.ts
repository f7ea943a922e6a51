/**
 * Turns the runs into the report: medians over rounds, the issue's goals as ratios, markdown
 * tables, a CSV of every run and a vega-lite figure (SVG, rendered the way simulations/figures.ts
 * does it). REPORT.md keeps one section per command between markers, so the forwarding and
 * memory commands can each rewrite their own.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join, relative } from 'node:path'
import * as vega from 'vega'
import * as vegaLite from 'vega-lite'
import { median, quantile, type Latency, type Throughput } from './measure.ts'
import { PATHS, type PathId } from './paths.ts'
import { sizeLabel, type Plan } from './plan.ts'
import type { ProfileSummary } from './profile.ts'

export type Variant = 'process' | 'in-process'

export interface Row {
  readonly variant: Variant
  readonly round: number
  readonly path: PathId
  readonly intermediates: number
  readonly messageBytes: number
  /** The unmeasured transfer just before `throughput` (SizePlan.warmupBytes): what a fresh path gives. */
  readonly warmup: Throughput
  readonly throughput: Throughput
  readonly latency: Latency
}

export interface MemoryRow {
  readonly path: PathId
  readonly bytes: number
  readonly mibPerS: number
  readonly rssStartBytes: number
  readonly rssPeakBytes: number
  readonly rssEndBytes: number
  readonly sampleMs: number
}

/** One path and size, over all rounds of a variant. */
export interface Summary {
  readonly variant: Variant
  readonly path: PathId
  readonly messageBytes: number
  readonly rounds: number
  /** Median over rounds. */
  readonly mibPerS: number
  /** Median over rounds, of the first transfer (the warm-up). */
  readonly firstMiBPerS: number
  /** Over every latency sample of every round. */
  readonly latencyMedianUs: number
  readonly latencyP99Us: number
  /** Median over rounds, CPU seconds per MiB moved. */
  readonly cpuSPerMiB: { sender?: number; middle?: number; receiver?: number; total: number }
}

export function summarize(rows: readonly Row[]): Summary[] {
  const groups = new Map<string, Row[]>()
  for (const row of rows) {
    const key = `${row.variant}|${row.path}|${row.messageBytes}`
    groups.set(key, [...(groups.get(key) ?? []), row])
  }
  return [...groups.values()].map((group) => {
    const first = group[0]!
    const samples = group.flatMap((r) => r.latency.samplesUs)
    const cpu = (role: 'sender' | 'middle' | 'receiver' | 'total') => {
      const values = group.map((r) => r.throughput.cpuSPerMiB[role]).filter((v): v is number => v !== undefined)
      return values.length === 0 ? undefined : median(values)
    }
    const cpuSPerMiB: Summary['cpuSPerMiB'] = { total: cpu('total')! }
    for (const role of ['sender', 'middle', 'receiver'] as const) {
      const value = cpu(role)
      if (value !== undefined) cpuSPerMiB[role] = value
    }
    return {
      variant: first.variant,
      path: first.path,
      messageBytes: first.messageBytes,
      rounds: group.length,
      mibPerS: median(group.map((r) => r.throughput.mibPerS)),
      firstMiBPerS: median(group.map((r) => r.warmup.mibPerS)),
      latencyMedianUs: quantile(samples, 0.5),
      latencyP99Us: quantile(samples, 0.99),
      cpuSPerMiB,
    }
  })
}

export interface Goal {
  readonly what: string
  /** The measured ratio or difference. */
  readonly value: number
  readonly display: string
  readonly target: string
  readonly met: boolean
}

const KiB = 1024

/**
 * The issue's goals, from one run's medians (one process per node); a goal whose paths were not
 * measured is left out. With `rows` of two rounds or more, a throughput ratio also shows its value
 * in each round (the paths of a round run back to back): on two cores the median of three moves by
 * ±0.1 from run to run, and the spread says how far to trust it.
 */
export function goals(summaries: readonly Summary[], memory: readonly MemoryRow[], rows: readonly Row[] = []): Goal[] {
  const at = (path: PathId, bytes: number) => summaries.find((s) => s.variant === 'process' && s.path === path && s.messageBytes === bytes)
  // A throughput goal is taken on the measured (second) transfer; the first one's ratio is shown beside it.
  type Transfer = 'mibPerS' | 'firstMiBPerS'
  const mibPerS = (path: PathId, bytes: number, transfer: Transfer) => at(path, bytes)?.[transfer] ?? Number.NaN
  const bestPipe = (bytes: number, transfer: Transfer) => Math.max(mibPerS('it-pipe', bytes, transfer), mibPerS('pause-resume', bytes, transfer))
  const addedUs = (path: PathId, bytes: number) => ((at(path, bytes)?.latencyMedianUs ?? Number.NaN) - (at('bare', bytes)?.latencyMedianUs ?? Number.NaN)) / PATHS[path].intermediates
  /** Phoenix through one intermediate against `baseline`, at `bytes`. */
  /** Measured MiB/s of `path` at `bytes` in each round (process variant), by round number. */
  const byRound = (path: PathId, bytes: number) => new Map(rows.filter((r) => r.variant === 'process' && r.path === path && r.messageBytes === bytes).map((r) => [r.round, r.throughput.mibPerS]))
  const ratio = (what: string, bytes: number, baseline: (bytes: number, transfer: Transfer) => number, baselinePaths: PathId[], min: number): Goal => {
    const [value, first] = (['mibPerS', 'firstMiBPerS'] as const).map((t) => mibPerS('phoenix-1', bytes, t) / baseline(bytes, t)) as [number, number]
    const phoenix = byRound('phoenix-1', bytes)
    const baselines = baselinePaths.map((path) => byRound(path, bytes))
    const perRound = [...phoenix].sort(([a], [b]) => a - b).flatMap(([round, mib]) => {
      const best = Math.max(...baselines.map((b) => b.get(round) ?? Number.NaN))
      return Number.isFinite(best) ? [mib / best] : []
    })
    const rounds = perRound.length >= 2 ? `; by round ${perRound.map((r) => r.toFixed(2)).join(', ')}` : ''
    return { what, value, display: `${value.toFixed(2)}× (first transfer ${first.toFixed(2)}×${rounds})`, target: `≥ ${min.toFixed(2)}×`, met: value >= min }
  }
  const result = [
    ratio('1 intermediate, 64 KiB: Phoenix / best pipe relay (the faster of it-pipe and pause/resume)', 64 * KiB, bestPipe, ['it-pipe', 'pause-resume'], 0.9),
    ratio('1 intermediate, 64 KiB: Phoenix / circuit-relay-v2', 64 * KiB, (bytes, t) => mibPerS('circuit-relay-v2', bytes, t), ['circuit-relay-v2'], 1.3),
    ratio('1 intermediate, 4 KiB: Phoenix / best pipe relay', 4 * KiB, bestPipe, ['it-pipe', 'pause-resume'], 0.8),
  ]
  const pipeAdded = Math.min(addedUs('it-pipe', 64), addedUs('pause-resume', 64))
  const phoenixAdded = addedUs('phoenix-1', 64)
  result.push({ what: `added median one-way latency per hop, 64 B, both over the bare stream: Phoenix (${phoenixAdded.toFixed(0)} µs) − best pipe relay (${pipeAdded.toFixed(0)} µs)`, value: phoenixAdded - pipeAdded, display: `${(phoenixAdded - pipeAdded).toFixed(0)} µs`, target: '≤ 20 µs', met: phoenixAdded - pipeAdded <= 20 })
  // The other reading: what one intermediate adds to each system's own direct path (Phoenix's
  // endpoints, slower than a bare stream's, then count for neither side).
  const phoenixHop = (at('phoenix-1', 64)?.latencyMedianUs ?? Number.NaN) - (at('phoenix-0', 64)?.latencyMedianUs ?? Number.NaN)
  result.push({ what: `added median one-way latency per hop, 64 B, each over its own direct path: Phoenix 1 − Phoenix direct (${phoenixHop.toFixed(0)} µs) − best pipe relay (${pipeAdded.toFixed(0)} µs)`, value: phoenixHop - pipeAdded, display: `${(phoenixHop - pipeAdded).toFixed(0)} µs`, target: '≤ 20 µs', met: phoenixHop - pipeAdded <= 20 })
  const grownMiB = (path: PathId) => {
    const m = memory.find((row) => row.path === path)
    return m === undefined ? Number.NaN : (m.rssPeakBytes - m.rssStartBytes) / 2 ** 20
  }
  // "Flat" against a relay whose memory is bounded by construction (pause/resume: yamux windows
  // and one write buffer), with 64 MiB of slack for the overlay's bounded queues (16 MiB each way).
  const phoenixGrown = grownMiB('phoenix-1')
  const boundedGrown = grownMiB('pause-resume')
  const memoryBytes = memory.find((m) => m.path === 'phoenix-1')?.bytes ?? 0
  result.push({ what: `middle node memory over ${sizeLabel(memoryBytes)}: Phoenix RSS peak − start (pause/resume relay: ${boundedGrown.toFixed(0)} MiB)`, value: phoenixGrown, display: `${phoenixGrown.toFixed(0)} MiB`, target: `≤ ${(boundedGrown + 64).toFixed(0)} MiB (the pause/resume relay's + 64)`, met: phoenixGrown <= boundedGrown + 64 })
  return result.filter((g) => !Number.isNaN(g.value))
}

const fmt = (x: number | undefined, digits = 1) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(digits))
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0)

function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n')
}

function processTables(summaries: readonly Summary[], plan: Plan): string {
  const sizes = plan.sizes.map((s) => s.messageBytes)
  const at = (path: PathId, bytes: number) => summaries.find((s) => s.variant === 'process' && s.path === path && s.messageBytes === bytes)
  const bare = (bytes: number) => at('bare', bytes)
  const header = ['path', 'intermediates', ...sizes.map(sizeLabel)]
  const mibTable = (transfer: 'mibPerS' | 'firstMiBPerS') => table(header, plan.paths.map((p) => [PATHS[p].label, String(PATHS[p].intermediates), ...sizes.map((b) => fmt(at(p, b)?.[transfer]))]))
  const throughput = mibTable('mibPerS')
  const first = mibTable('firstMiBPerS')
  const latency = table(header, plan.paths.map((p) => [PATHS[p].label, String(PATHS[p].intermediates), ...sizes.map((b) => `${fmt(at(p, b)?.latencyMedianUs, 0)} / ${fmt(at(p, b)?.latencyP99Us, 0)}`)]))
  const relayed = plan.paths.filter((p) => PATHS[p].intermediates > 0)
  const added = table(
    ['path', ...sizes.map(sizeLabel)],
    relayed.map((p) => [PATHS[p].label, ...sizes.map((b) => fmt(((at(p, b)?.latencyMedianUs ?? Number.NaN) - (bare(b)?.latencyMedianUs ?? Number.NaN)) / PATHS[p].intermediates, 0))]),
  )
  const cpuRows = sizes.flatMap((b) =>
    plan.paths.map((p) => {
      const c = at(p, b)?.cpuSPerMiB
      return [sizeLabel(b), PATHS[p].label, fmt(c?.sender, 4), fmt(c?.middle, 4), fmt(c?.receiver, 4), fmt(c?.total, 4)]
    }),
  )
  const cpu = table(['message', 'path', 'sender', 'middle (each)', 'receiver', 'all processes'], cpuRows)
  return [
    `### Throughput, MiB/s (median of ${plan.rounds} rounds)\n\n${throughput}`,
    `### The first transfer (the warm-up before each measured one), MiB/s (median of ${plan.rounds} rounds)\n\n${first}`,
    `### One-way latency, µs: median / p99 (every sample of every round)\n\n${latency}`,
    `### Added median one-way latency per intermediate node vs the bare stream, µs\n\n(path median − bare stream median) / intermediates, at the same message size.\n\n${added}`,
    `### CPU seconds per MiB moved, by role (median of rounds)\n\nFrom \`process.cpuUsage()\` of each process over the throughput run; "middle (each)" is the mean over the intermediate nodes.\n\n${cpu}`,
  ].join('\n\n')
}

function inProcessTable(summaries: readonly Summary[], plan: Plan): string {
  const rows = plan.inProcessSizes.flatMap((size) =>
    plan.paths.map((p) => {
      const local = summaries.find((s) => s.variant === 'in-process' && s.path === p && s.messageBytes === size.messageBytes)
      const own = summaries.find((s) => s.variant === 'process' && s.path === p && s.messageBytes === size.messageBytes)
      return [sizeLabel(size.messageBytes), PATHS[p].label, fmt(local?.mibPerS), fmt(own?.mibPerS), local && own ? `${(local.mibPerS / own.mibPerS).toFixed(2)}×` : '–', fmt(local?.latencyMedianUs, 0), fmt(local?.cpuSPerMiB.total, 4)]
    }),
  )
  return table(['message', 'path', 'in one process, MiB/s', 'one process per node, MiB/s', 'ratio', 'median latency, µs', 'CPU s/MiB'], rows)
}

function memoryTable(memory: readonly MemoryRow[]): string {
  return table(
    ['middle node', 'transfer', 'MiB/s', 'RSS start, MiB', 'RSS peak, MiB', 'RSS end, MiB', 'peak − start, MiB'],
    memory.map((m) => [PATHS[m.path].label, sizeLabel(m.bytes), fmt(m.mibPerS), mib(m.rssStartBytes), mib(m.rssPeakBytes), mib(m.rssEndBytes), mib(m.rssPeakBytes - m.rssStartBytes)]),
  )
}

function profileSection(profile: ProfileSummary): string {
  const busy = profile.totalMs - profile.idleMs
  const share = (ms: number) => `${((ms / busy) * 100).toFixed(1)}%`
  const areas = table(
    ['area', 'self ms', 'self, of busy time', 'inclusive, of busy time'],
    profile.areas.filter((a) => a.area !== '(idle)').slice(0, 15).map((a) => [a.area, fmt(a.ms, 0), share(a.ms), share(a.inclusiveMs)]),
  )
  const functions = table(['function', 'area', 'self ms', 'of busy time'], profile.functions.filter((f) => f.area !== '(idle)').map((f) => [`\`${f.name}\``, f.area, fmt(f.ms, 0), share(f.ms)]))
  return `### Where Phoenix's middle node spends its time (64 KiB messages, 1 intermediate)\n\nV8's CPU profiler (what \`--cpu-prof\` runs), started and stopped through the inspector around the transfer only: ${fmt(busy, 0)} ms busy of ${fmt(profile.totalMs, 0)} ms sampled (\`${profile.file}\`). Self time is spent in the area's own code; inclusive time counts every sample with the area anywhere on the stack (so the areas overlap). "node internals" are Node's JavaScript (streams, sockets, events, crypto wrappers); "(native)" is C++ (socket writes, the cipher).\n\n${areas}\n\n${functions}`
}

export function csv(rows: readonly Row[]): string {
  const header = 'variant,round,path,intermediates,message_bytes,bytes,seconds,mib_per_s,latency_median_us,latency_p99_us,latency_samples,cpu_sender_s_per_mib,cpu_middle_s_per_mib,cpu_receiver_s_per_mib,cpu_total_s_per_mib,first_transfer_bytes,first_transfer_mib_per_s'
  const line = (r: Row) => {
    const c = r.throughput.cpuSPerMiB
    return [r.variant, r.round, r.path, r.intermediates, r.messageBytes, r.throughput.bytes, r.throughput.seconds.toFixed(6), r.throughput.mibPerS.toFixed(3), r.latency.medianUs.toFixed(1), r.latency.p99Us.toFixed(1), r.latency.samplesUs.length, c.sender ?? '', c.middle ?? '', c.receiver ?? '', c.total, r.warmup.bytes, r.warmup.mibPerS.toFixed(3)].join(',')
  }
  return `${[header, ...rows.map(line)].join('\n')}\n`
}

export async function svg(spec: vegaLite.TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' })
  return view.toSVG()
}

export function figureSpec(summaries: readonly Summary[], plan: Plan): vegaLite.TopLevelSpec {
  const values = summaries.filter((s) => s.variant === 'process').map((s) => ({ path: PATHS[s.path].label, size: sizeLabel(s.messageBytes), mibPerS: s.mibPerS, latencyUs: s.latencyMedianUs }))
  const pathOrder = plan.paths.map((p) => PATHS[p].label)
  const sizeOrder = plan.sizes.map((s) => sizeLabel(s.messageBytes))
  const panel = (field: string, title: string) => ({
    data: { values },
    facet: { column: { field: 'size', type: 'nominal' as const, sort: sizeOrder, title: 'message size' } },
    spec: {
      width: 140,
      height: 160,
      mark: 'bar' as const,
      encoding: {
        x: { field: 'path', type: 'nominal' as const, sort: pathOrder, title: null, axis: { labelAngle: -50, labelLimit: 200 } },
        y: { field, type: 'quantitative' as const, title },
        color: { field: 'path', type: 'nominal' as const, sort: pathOrder, legend: null },
      },
    },
    resolve: { scale: { y: 'independent' as const } },
  })
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: `Forwarding over loopback, one process per node (median of ${plan.rounds} rounds)`,
    vconcat: [panel('mibPerS', 'throughput, MiB/s'), panel('latencyUs', 'median one-way latency, µs')],
  } as vegaLite.TopLevelSpec
}

/** Replaces (or appends) the section `name` of a markdown file kept between markers. */
export function writeSection(file: string, name: string, markdown: string, title = '# Phoenix overlay: forwarding and memory benchmarks'): void {
  const start = `<!-- ${name}:start -->`
  const end = `<!-- ${name}:end -->`
  const block = `${start}\n${markdown.trim()}\n${end}`
  const old = existsSync(file) ? readFileSync(file, 'utf8') : `${title}\n\nWritten by the commands in bench/README.md; each rewrites its own section.\n`
  const [i, j] = [old.indexOf(start), old.indexOf(end)]
  writeFileSync(file, i >= 0 && j > i ? `${old.slice(0, i)}${block}${old.slice(j + end.length)}` : `${old.trimEnd()}\n\n${block}\n`)
}

export function machineLine(): string {
  const cpu = cpus()
  return `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, Node ${process.versions.node}, load average ${loadavg().map((l) => l.toFixed(2)).join(' / ')} at the end`
}

export interface ForwardingReportInput {
  readonly plan: Plan
  readonly rows: readonly Row[]
  readonly memory: readonly MemoryRow[]
  readonly profile: ProfileSummary | undefined
  readonly outDir: string
  readonly reportFile: string
  readonly quick: boolean
  readonly wallSeconds: number
}

/** The node processes' flags as the report states them. */
export function nodeFlagsLine(plan: Pick<Plan, 'nodeFlags'>): string {
  return plan.nodeFlags.length === 0 ? "Node's defaults (`--node-flags ''`)" : `\`${plan.nodeFlags.join(' ')}\` (\`--node-flags\`; NODE_FLAGS in src/plan.ts says why)`
}

/** Writes runs.csv, forwarding.json and forwarding.svg to `outDir` and the forwarding section of `reportFile`; returns that section. */
export async function writeForwardingReport(input: ForwardingReportInput): Promise<string> {
  const { plan, rows, memory, profile, outDir, reportFile } = input
  const summaries = summarize(rows)
  const goalList = goals(summaries, memory, rows)
  writeFileSync(join(outDir, 'runs.csv'), csv(rows))
  writeFileSync(join(outDir, 'forwarding.json'), `${JSON.stringify({ summaries, goals: goalList, memory }, null, 1)}\n`)
  writeFileSync(join(outDir, 'forwarding.svg'), await svg(figureSpec(summaries, plan)))
  const link = (file: string) => relative(join(reportFile, '..'), join(outDir, file)).split('\\').join('/')
  const sections = [
    `## Forwarding${input.quick ? ' (--quick smoke run: tiny budgets, numbers mean nothing)' : ''}`,
    `Loopback, one OS process per node, ${plan.rounds} interleaved round(s); ${machineLine()}; ${input.wallSeconds.toFixed(0)} s in all. Every path runs on the same libp2p stack (TCP, Noise, Yamux), every node process with ${nodeFlagsLine(plan)}. Figure: [forwarding.svg](${link('forwarding.svg')}); every run: [runs.csv](${link('runs.csv')}).`,
    `Byte budget per throughput case: ${plan.sizes.map((s) => `${sizeLabel(s.messageBytes)} messages ${sizeLabel(s.budgetBytes)}`).join(', ')}, each measured right after a first transfer of the same messages on the same processes (${plan.sizes.map((s) => sizeLabel(s.warmupBytes)).join(', ')}), every path alike: a fresh path is several times slower at first (V8 compiling its hot code, the heap growing), so the first transfer says how much code a path runs more than how fast it moves data; its figures are in their own table below and in runs.csv. Latency: ${plan.sizes.map((s) => `${s.latencyMessages} × ${sizeLabel(s.messageBytes)}`).join(', ')}, one at a time (each sent ${[...new Set(plan.sizes.map((s) => s.gapMs))].join(' or ')} ms after the previous one arrived), stamped with the monotonic clock all processes share. circuit-relay-v2 runs with its data and duration limits raised to 1 TiB and one day (defaults: 128 KiB, 2 minutes).`,
    `### The issue's goals, from this run\n\n${table(['goal', 'measured', 'target', 'met'], goalList.map((g) => [g.what, g.display, g.target, g.met ? 'yes' : 'no']))}`,
    processTables(summaries, plan),
  ]
  if (plan.inProcessSizes.length > 0 && summaries.some((s) => s.variant === 'in-process')) {
    sections.push(`### In-process variant: every node in one process (as packages/transport/bench/forwarding.ts)\n\n${inProcessTable(summaries, plan)}`)
  }
  if (memory.length > 0) sections.push(`### The middle node's memory over a ${sizeLabel(plan.memoryBytes)} transfer (64 KiB messages, RSS sampled every ${memory[0]!.sampleMs} ms)\n\n${memoryTable(memory)}`)
  if (profile !== undefined) sections.push(profileSection(profile))
  const markdown = `${sections.join('\n\n')}\n`
  writeSection(reportFile, 'forwarding', markdown)
  return markdown
}
