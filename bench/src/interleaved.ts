/**
 * Relay kinds against each other on a busy machine: one set of processes per path, kept for the
 * whole run, and short throughput runs alternating between the paths (the order rotated each
 * rep), so every path sees the same load; then one-way latency probes, also interleaved. Reports
 * each path's median, CPU per MiB by role, and Phoenix's ratio to the best pipe relay taken rep
 * by rep (the ratio of two runs seconds apart, not of two medians minutes apart).
 *
 *   npx -y pnpm@10 --filter @phoenix-overlay/bench run interleaved -- --reps 5 --sizes 4096,65536 --latency 100
 *   ... --paths pause-resume,it-pipe,phoenix-1 --mib 16
 *
 * Prints a markdown table; writes nothing.
 */
import { loadavg } from 'node:os'
import { fail, scriptArgs } from '../../tools/script-args.ts'
import { measureLatency, measureThroughput, median, openPath } from './measure.ts'
import { nodesOf, PATH_IDS, PATHS, setUpPath, type PathId } from './paths.ts'
import { sizeLabel, SIZE_BYTES } from './plan.ts'
import { spawnNode, type NodeHandle } from './rpc.ts'

const MiB = 2 ** 20
const { values } = scriptArgs({
  options: {
    paths: { type: 'string', default: 'pause-resume,it-pipe,phoenix-1' },
    sizes: { type: 'string', default: '4096,65536' },
    reps: { type: 'string', default: '5' },
    latency: { type: 'string', default: '100' },
    mib: { type: 'string', default: '16' },
  },
}, { summary: 'relay kinds against each other on a busy machine: short interleaved runs, ratios rep by rep' })
const positive = (name: string, text: string, zeroOk = false): number => {
  const n = Number(text)
  if (!Number.isInteger(n) || n < (zeroOk ? 0 : 1)) fail(`--${name} must be a ${zeroOk ? 'non-negative' : 'positive'} integer, got ${JSON.stringify(text)}`)
  return n
}
const paths = values.paths.split(',').map((p) => p.trim()) as PathId[]
for (const p of paths) if (!(PATH_IDS as readonly string[]).includes(p)) fail(`--paths: unknown path ${JSON.stringify(p)}; known: ${PATH_IDS.join(', ')}`)
const sizes = values.sizes.split(',').map((s) => Number(s.trim()))
for (const s of sizes) if (!SIZE_BYTES.includes(s)) fail(`--sizes: unknown message size ${JSON.stringify(s)}; known: ${SIZE_BYTES.join(', ')}`)
const reps = positive('reps', values.reps)
const probes = positive('latency', values.latency, true)
/** Bytes per throughput run: `--mib` for messages under 64 KiB, four times it from 64 KiB (a run of a second or more either way). */
const budget = (messageBytes: number) => positive('mib', values.mib) * MiB * (messageBytes >= 64 * 1024 ? 4 : 1)
const log = (line: string) => process.stderr.write(`${line}\n`)

interface Sample {
  mibPerS: number[]
  middleMsPerMiB: number[]
  totalMsPerMiB: number[]
}
const samples = new Map<string, Sample>()
const sampleOf = (path: PathId, bytes: number): Sample => {
  const key = `${path} ${bytes}`
  if (!samples.has(key)) samples.set(key, { mibPerS: [], middleMsPerMiB: [], totalMsPerMiB: [] })
  return samples.get(key)!
}
const latencyUs = new Map<PathId, number[]>()

const pools = new Map<PathId, NodeHandle[]>()
try {
  for (const path of paths) {
    const nodes = await Promise.all(Array.from({ length: nodesOf(path) }, (_, i) => spawnNode(`${path}-${i}`)))
    pools.set(path, nodes)
    await openPath(nodes, await setUpPath(path, nodes))
  }
  for (let rep = 0; rep < reps; rep++) {
    const order = paths.map((_, i) => paths[(i + rep) % paths.length]!)
    for (const bytes of sizes) {
      for (const path of order) {
        const t = await measureThroughput(pools.get(path)!, bytes, budget(bytes))
        const s = sampleOf(path, bytes)
        s.mibPerS.push(t.mibPerS)
        s.middleMsPerMiB.push(1000 * (t.cpuSPerMiB.middle ?? Number.NaN))
        s.totalMsPerMiB.push(1000 * t.cpuSPerMiB.total)
        log(`rep ${rep + 1}/${reps} ${path} ${sizeLabel(bytes)}: ${t.mibPerS.toFixed(1)} MiB/s, middle ${(1000 * (t.cpuSPerMiB.middle ?? Number.NaN)).toFixed(2)} ms CPU/MiB`)
      }
    }
    // Latency in slices of the probes, interleaved the same way.
    const slice = Math.ceil(probes / reps)
    if (slice > 0) for (const path of order) latencyUs.set(path, [...(latencyUs.get(path) ?? []), ...(await measureLatency(pools.get(path)!, 64, slice, 1, 50)).samplesUs])
  }
} finally {
  await Promise.all([...pools.values()].flat().map((n) => n.call('stop').catch(() => undefined)))
  await Promise.all([...pools.values()].flat().map((n) => n.close()))
}

const fmt = (x: number, digits = 1) => (Number.isNaN(x) ? '–' : x.toFixed(digits))
const lines = [`Interleaved, ${reps} reps, one process per node; load average ${loadavg().map((x) => x.toFixed(1)).join(' / ')} at the end.`, '']
lines.push('| path | message | MiB/s (median) | per rep | middle CPU ms/MiB | all CPU ms/MiB |', '|---|---|---|---|---|---|')
for (const bytes of sizes) {
  for (const path of paths) {
    const s = sampleOf(path, bytes)
    lines.push(`| ${PATHS[path].label} | ${sizeLabel(bytes)} | ${fmt(median(s.mibPerS))} | ${s.mibPerS.map((x) => x.toFixed(0)).join(' ')} | ${fmt(median(s.middleMsPerMiB), 2)} | ${fmt(median(s.totalMsPerMiB), 2)} |`)
  }
}
const pipes = paths.filter((p) => p === 'it-pipe' || p === 'pause-resume')
const phoenix = paths.filter((p) => p.startsWith('phoenix'))
if (pipes.length > 0 && phoenix.length > 0) {
  lines.push('', '| ratio, rep by rep | message | median | per rep |', '|---|---|---|---|')
  for (const bytes of sizes) {
    for (const path of phoenix) {
      const ratios = sampleOf(path, bytes).mibPerS.map((x, i) => x / Math.max(...pipes.map((p) => sampleOf(p, bytes).mibPerS[i]!)))
      lines.push(`| ${PATHS[path].label} / best pipe relay | ${sizeLabel(bytes)} | ${fmt(median(ratios), 2)} | ${ratios.map((x) => x.toFixed(2)).join(' ')} |`)
    }
  }
}
if (probes > 0) {
  lines.push('', '| path | 64 B one-way latency, median µs | samples |', '|---|---|---|')
  for (const path of paths) lines.push(`| ${PATHS[path].label} | ${fmt(median(latencyUs.get(path) ?? []), 0)} | ${latencyUs.get(path)?.length ?? 0} |`)
}
process.stdout.write(`${lines.join('\n')}\n`)
