/**
 * Where a process spent its time, from a V8 CPU profile (`.cpuprofile`, as `node --cpu-prof` writes): self time by
 * area (a package, Node's internals, the garbage collector) and by function.
 */
import { readFileSync } from 'node:fs'
import { basename } from 'node:path'

interface CpuProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
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
  /** Self time, and inclusive time (samples with the area anywhere on the stack), per area. */
  readonly areas: { area: string; ms: number; inclusiveMs: number }[]
  readonly functions: { name: string; area: string; ms: number }[]
}

/** Which package or part of the runtime a script URL belongs to. */
export function areaOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)'
  if (url.startsWith('node:')) return 'node internals'
  if (url.startsWith('wasm://')) return '(wasm)'
  const pnpm = url.match(/node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)\//)
  if (pnpm !== null) return pnpm[1]!
  const plain = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//)
  if (plain !== null) return plain[1]!
  const ours = url.match(/\/packages\/([^/]+)\//)
  if (ours !== null) return `@phoenix-overlay/${ours[1]}`
  if (url.includes('/bench/src/')) return 'bench harness'
  return basename(url)
}

/** Summarizes a `.cpuprofile` file. */
export function summarizeProfile(file: string, top = 20): ProfileSummary {
  return summarize(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, basename(file), top)
}

/** The profiler's own frames (starting and stopping it through the inspector) are not the program's time. */
const isProfiler = (url: string) => url === 'node:inspector' || url.startsWith('node:inspector/')

export function summarize(profile: CpuProfile, file: string, top: number): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id)
  const stackAreas = (id: number): Set<string> => {
    const areas = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!.callFrame
      if (frame.functionName !== '(root)') areas.add(areaOf(frame.url, frame.functionName))
    }
    return areas
  }
  const selfUs = new Map<number, number>()
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
  const areas = new Map<string, { self: number; inclusive: number }>()
  const areaEntry = (area: string) => areas.get(area) ?? (areas.set(area, { self: 0, inclusive: 0 }).get(area)!)
  const functions = new Map<string, { name: string; area: string; us: number }>()
  let totalUs = 0
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame
    if (isProfiler(frame.url)) continue
    const area = areaOf(frame.url, frame.functionName)
    totalUs += us
    areaEntry(area).self += us
    for (const onStack of stackAreas(id)) areaEntry(onStack).inclusive += us
    // Code compiled by tsx reports line 1 for everything: the file alone says more.
    const where = frame.url === '' ? '' : frame.lineNumber === 0 ? basename(frame.url) : `${basename(frame.url)}:${frame.lineNumber + 1}`
    const name = `${frame.functionName || '(anonymous)'} ${where}`.trim()
    const entry = functions.get(name) ?? { name, area, us: 0 }
    entry.us += us
    functions.set(name, entry)
  }
  const ms = (us: number) => us / 1000
  return {
    file,
    totalMs: ms(totalUs),
    idleMs: ms(areas.get('(idle)')?.self ?? 0),
    areas: [...areas].map(([area, t]) => ({ area, ms: ms(t.self), inclusiveMs: ms(t.inclusive) })).sort((a, b) => b.ms - a.ms),
    functions: [...functions.values()]
      .map((f) => ({ name: f.name, area: f.area, ms: ms(f.us) }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top),
  }
}
