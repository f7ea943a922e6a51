/**
 * Where a process spent its time, from the V8 CPU profile `node --cpu-prof` writes: self time by
 * area (a package, Node's internals, the garbage collector) and by function.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { basename, join } from 'node:path'

interface CpuProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
}

interface CpuProfile {
  nodes: CpuProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

export interface ProfileSummary {
  readonly file: string
  /** Sampled time, idle included, ms. */
  readonly totalMs: number
  readonly idleMs: number
  readonly areas: { area: string; ms: number }[]
  readonly functions: { name: string; area: string; ms: number }[]
}

/** Which package or part of the runtime a script URL belongs to. */
export function areaOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)'
  if (url.startsWith('node:')) return 'node internals'
  const pnpm = url.match(/node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)\//)
  if (pnpm !== null) return pnpm[1]!
  const plain = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//)
  if (plain !== null) return plain[1]!
  const ours = url.match(/\/packages\/([^/]+)\//)
  if (ours !== null) return `@phoenix-overlay/${ours[1]}`
  if (url.includes('/bench/src/')) return 'bench harness'
  return basename(url)
}

/** Summarizes the newest profile in `dir`. */
export function profileMiddle(dir: string, top = 20): ProfileSummary {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))
  if (files.length === 0) throw new Error(`no .cpuprofile in ${dir}: did the middle process exit normally?`)
  const newest = files.map((f) => ({ f, t: statSync(join(dir, f)).mtimeMs })).sort((a, b) => b.t - a.t)[0]!.f
  return summarize(JSON.parse(readFileSync(join(dir, newest), 'utf8')) as CpuProfile, newest, top)
}

export function summarize(profile: CpuProfile, file: string, top: number): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const selfUs = new Map<number, number>()
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
  const areas = new Map<string, number>()
  const functions = new Map<string, { name: string; area: string; us: number }>()
  let totalUs = 0
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame
    const area = areaOf(frame.url, frame.functionName)
    totalUs += us
    areas.set(area, (areas.get(area) ?? 0) + us)
    const name = `${frame.functionName || '(anonymous)'} ${frame.url === '' ? '' : `${basename(frame.url)}:${frame.lineNumber + 1}`}`.trim()
    const entry = functions.get(name) ?? { name, area, us: 0 }
    entry.us += us
    functions.set(name, entry)
  }
  const ms = (us: number) => us / 1000
  return {
    file,
    totalMs: ms(totalUs),
    idleMs: ms(areas.get('(idle)') ?? 0),
    areas: [...areas].map(([area, us]) => ({ area, ms: ms(us) })).sort((a, b) => b.ms - a.ms),
    functions: [...functions.values()]
      .map((f) => ({ name: f.name, area: f.area, ms: ms(f.us) }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top),
  }
}
