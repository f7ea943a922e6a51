/**
 * Relay kinds against each other on a busy machine: one set of processes per path, kept for the
 * whole run, and short throughput runs alternating between the paths (the order rotated each
 * rep), so every path sees the same load; then one-way latency probes, also interleaved. Reports
 * each path's median, CPU per MiB by role, and Phoenix's ratio to the best pipe relay taken rep
 * by rep (the ratio of two runs seconds apart, not of two medians minutes apart).
 *
 *   npx -y pnpm@10 --filter @phoenix-overlay/bench run interleaved -- --reps 5 --sizes 4096,65536 --latency 100
 *   ... --paths pause-resume,it-pipe,phoenix-1 --mib 16
 *   ... --paths pause-resume,it-pipe,phoenix-1,base:phoenix-1 --baseline ../.scratch/base
 *
 * A path written `base:<path>` runs the code of another checkout (`--baseline`, a tree with its
 * own install): before and after a change, measured in the same run, reported as after / before.
 *
 * Prints a markdown table; writes nothing.
 */
import { existsSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { fail, scriptArgs } from '../../tools/script-args.ts'
import { interleavedSteps, WARM_UP_SMALL_BYTES, WARM_UP_SMALL_RUNS } from './interleaved-plan.ts'
import { measureLatency, measureThroughput, median, openPath } from './measure.ts'
import { nodesOf, PATH_IDS, PATHS, setUpPath, type PathId } from './paths.ts'
import { NODE_FLAGS, parseNodeFlags, sizeLabel, SIZE_BYTES } from './plan.ts'
import { spawnNode, type NodeHandle } from './rpc.ts'

const MiB = 2 ** 20
const { values } = scriptArgs({
  options: {
    paths: { type: 'string', default: 'pause-resume,it-pipe,phoenix-1' },
    sizes: { type: 'string', default: '4096,65536' },
    reps: { type: 'string', default: '5' },
    latency: { type: 'string', default: '100' },
    mib: { type: 'string', default: '16' },
    baseline: { type: 'string', default: '' },
    'node-flags': { type: 'string' },
    'no-warm-up': { type: 'boolean', default: false },
  },
}, { summary: 'relay kinds against each other on a busy machine: short interleaved runs, ratios rep by rep' })
const positive = (name: string, text: string, zeroOk = false): number => {
  const n = Number(text)
  if (!Number.isInteger(n) || n < (zeroOk ? 0 : 1)) fail(`--${name} must be a ${zeroOk ? 'non-negative' : 'positive'} integer, got ${JSON.stringify(text)}`)
  return n
}
/** A path to measure: one of PATHS, run by this tree's code or (`base:` before it) by the `--baseline` tree's. */
type RunPath = PathId | `base:${PathId}`
const BASE = 'base:'
const pathIdOf = (p: RunPath): PathId => (p.startsWith(BASE) ? p.slice(BASE.length) : p) as PathId
const labelOf = (p: RunPath): string => `${PATHS[pathIdOf(p)].label}${p.startsWith(BASE) ? ' (baseline)' : ''}`
const paths = values.paths.split(',').map((p) => p.trim()) as RunPath[]
for (const p of paths) if (!(PATH_IDS as readonly string[]).includes(pathIdOf(p))) fail(`--paths: unknown path ${JSON.stringify(p)}; known: ${PATH_IDS.join(', ')}, each optionally as base:<path>`)
const baselineMain = values.baseline === '' ? undefined : resolve(values.baseline, 'bench/src/node-main.ts')
if (baselineMain !== undefined && !existsSync(baselineMain)) fail(`--baseline: no ${join('bench', 'src', 'node-main.ts')} under ${values.baseline} (a checkout with its own install)`)
if (paths.some((p) => p.startsWith(BASE)) && baselineMain === undefined) fail('--paths: a base:<path> needs --baseline <checkout>')
const sizes = values.sizes.split(',').map((s) => Number(s.trim()))
for (const s of sizes) if (!SIZE_BYTES.includes(s)) fail(`--sizes: unknown message size ${JSON.stringify(s)}; known: ${SIZE_BYTES.join(', ')}`)
const reps = positive('reps', values.reps)
/** Node's flags for every node process, as `run forwarding -- --node-flags` (NODE_FLAGS unless given). */
let nodeFlags: readonly string[] = NODE_FLAGS
try {
  if (values['node-flags'] !== undefined) nodeFlags = parseNodeFlags(values['node-flags'])
} catch (error) {
  fail((error as Error).message)
}
const probes = positive('latency', values.latency, true)
/** Every path warmed before the reps (src/interleaved-plan.ts says why), unless `--no-warm-up`. */
const warmUp = !values['no-warm-up']
/** Bytes per throughput run: `--mib` for messages under 64 KiB, four times it from 64 KiB (a run of a second or more either way). */
const budget = (messageBytes: number) => positive('mib', values.mib) * MiB * (messageBytes >= 64 * 1024 ? 4 : 1)
const log = (line: string) => process.stderr.write(`${line}\n`)

interface Sample {
  mibPerS: number[]
  middleMsPerMiB: number[]
  totalMsPerMiB: number[]
}
const samples = new Map<string, Sample>()
const sampleOf = (path: RunPath, bytes: number): Sample => {
  const key = `${path} ${bytes}`
  if (!samples.has(key)) samples.set(key, { mibPerS: [], middleMsPerMiB: [], totalMsPerMiB: [] })
  return samples.get(key)!
}
const latencyUs = new Map<RunPath, number[]>()

const pools = new Map<RunPath, NodeHandle[]>()
try {
  for (const path of paths) {
    const main = path.startsWith(BASE) ? baselineMain : undefined
    const nodes = await Promise.all(Array.from({ length: nodesOf(pathIdOf(path)) }, (_, i) => spawnNode(`${path}-${i}`, nodeFlags, main)))
    pools.set(path, nodes)
    await openPath(nodes, await setUpPath(pathIdOf(path), nodes))
  }
  const slice = Math.ceil(probes / reps)
  for (const step of interleavedSteps({ paths, sizes, reps, warmUp, latency: slice > 0 })) {
    const nodes = pools.get(step.path)!
    // Latency in slices of the probes, interleaved the same way.
    if (step.kind === 'latency') {
      latencyUs.set(step.path, [...(latencyUs.get(step.path) ?? []), ...(await measureLatency(nodes, 64, slice, 1, 50)).samplesUs])
      continue
    }
    const bytes = step.messageBytes
    const t = await measureThroughput(nodes, bytes, budget(bytes))
    const line = `${step.path} ${sizeLabel(bytes)}: ${t.mibPerS.toFixed(1)} MiB/s, middle ${(1000 * (t.cpuSPerMiB.middle ?? Number.NaN)).toFixed(2)} ms CPU/MiB`
    if (step.kind === 'warm-up') {
      log(`warm-up ${line}`)
      continue
    }
    const s = sampleOf(step.path, bytes)
    s.mibPerS.push(t.mibPerS)
    s.middleMsPerMiB.push(1000 * (t.cpuSPerMiB.middle ?? Number.NaN))
    s.totalMsPerMiB.push(1000 * t.cpuSPerMiB.total)
    log(`rep ${step.rep + 1}/${reps} ${line}`)
  }
} finally {
  await Promise.all([...pools.values()].flat().map((n) => n.call('stop').catch(() => undefined)))
  await Promise.all([...pools.values()].flat().map((n) => n.close()))
}

const fmt = (x: number, digits = 1) => (Number.isNaN(x) ? '–' : x.toFixed(digits))
const warmUpText = warmUp ? `each path warmed first (${WARM_UP_SMALL_RUNS} runs of ${sizeLabel(WARM_UP_SMALL_BYTES)}, then one of each size, not reported)` : 'no warm-up'
const lines = [`Interleaved, ${reps} reps, ${warmUpText}, one process per node, Node's flags ${nodeFlags.length === 0 ? 'none' : nodeFlags.join(' ')}; load average ${loadavg().map((x) => x.toFixed(1)).join(' / ')} at the end.`, '']
lines.push('| path | message | MiB/s (median) | per rep | middle CPU ms/MiB | all CPU ms/MiB |', '|---|---|---|---|---|---|')
for (const bytes of sizes) {
  for (const path of paths) {
    const s = sampleOf(path, bytes)
    lines.push(`| ${labelOf(path)} | ${sizeLabel(bytes)} | ${fmt(median(s.mibPerS))} | ${s.mibPerS.map((x) => x.toFixed(0)).join(' ')} | ${fmt(median(s.middleMsPerMiB), 2)} | ${fmt(median(s.totalMsPerMiB), 2)} |`)
  }
}
const pipes = paths.filter((p) => p === 'it-pipe' || p === 'pause-resume')
const phoenix = paths.filter((p) => pathIdOf(p).startsWith('phoenix'))
const circuit = paths.filter((p) => p === 'circuit-relay-v2')
if (pipes.length > 0 && phoenix.length > 0) {
  lines.push('', '| ratio, rep by rep | message | median | per rep |', '|---|---|---|---|')
  for (const bytes of sizes) {
    for (const path of phoenix) {
      const ratios = sampleOf(path, bytes).mibPerS.map((x, i) => x / Math.max(...pipes.map((p) => sampleOf(p, bytes).mibPerS[i]!)))
      lines.push(`| ${labelOf(path)} / best pipe relay | ${sizeLabel(bytes)} | ${fmt(median(ratios), 2)} | ${ratios.map((x) => x.toFixed(2)).join(' ')} |`)
    }
  }
}
/** One path's throughput over another's, rep by rep (both measured within seconds of each other). */
const ratioRow = (over: RunPath, under: RunPath, bytes: number): string => {
  const below = sampleOf(under, bytes).mibPerS
  const ratios = sampleOf(over, bytes).mibPerS.map((x, i) => x / below[i]!)
  return `| ${labelOf(over)} / ${labelOf(under)} | ${sizeLabel(bytes)} | ${fmt(median(ratios), 2)} | ${ratios.map((x) => x.toFixed(2)).join(' ')} |`
}
const pairs: [RunPath, RunPath][] = [
  ...phoenix.filter((p) => !p.startsWith(BASE)).flatMap((p) => circuit.map((c): [RunPath, RunPath] => [p, c])),
  ...phoenix.filter((p) => !p.startsWith(BASE) && paths.includes(`${BASE}${p}` as RunPath)).map((p): [RunPath, RunPath] => [p, `${BASE}${p}` as RunPath]),
]
if (pairs.length > 0) {
  lines.push('', '| ratio, rep by rep | message | median | per rep |', '|---|---|---|---|')
  for (const bytes of sizes) for (const [over, under] of pairs) lines.push(ratioRow(over, under, bytes))
}
if (probes > 0) {
  lines.push('', '| path | 64 B one-way latency, median µs | samples |', '|---|---|---|')
  for (const path of paths) lines.push(`| ${labelOf(path)} | ${fmt(median(latencyUs.get(path) ?? []), 0)} | ${latencyUs.get(path)?.length ?? 0} |`)
  const medianUs = (p: RunPath) => median(latencyUs.get(p) ?? [])
  const bestPipeUs = Math.min(...pipes.map(medianUs))
  if (pipes.length > 0) lines.push('', ...phoenix.filter((p) => pathIdOf(p) === 'phoenix-1').map((p) => `${labelOf(p)}: ${fmt(medianUs(p) - bestPipeUs, 0)} µs over the best pipe relay's median.`))
  // What one intermediate adds: the relay path against its own direct path (a pipe relay against the bare stream, Phoenix through one node against Phoenix direct).
  if (pipes.length > 0 && paths.includes('bare')) {
    const pipeAddedUs = bestPipeUs - medianUs('bare')
    lines.push(`Added by one intermediate: best pipe relay ${fmt(pipeAddedUs, 0)} µs over the bare stream.`)
    for (const p of phoenix.filter((q) => pathIdOf(q) === 'phoenix-1')) {
      const direct = `${p.startsWith(BASE) ? BASE : ''}phoenix-0` as RunPath
      if (paths.includes(direct)) lines.push(`Added by one intermediate: ${labelOf(p)} ${fmt(medianUs(p) - medianUs(direct), 0)} µs over ${labelOf(direct)}, ${fmt(medianUs(p) - medianUs(direct) - pipeAddedUs, 0)} µs more than the pipe relay adds (the goal: ≤ 20 µs).`)
    }
  }
}
process.stdout.write(`${lines.join('\n')}\n`)
