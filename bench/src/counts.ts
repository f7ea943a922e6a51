/**
 * What each process of a path does per MiB moved, counted by the kernel rather than timed by a
 * profiler (on 2 cores shared by three processes a CPU profile charges time spent descheduled to
 * whatever ran last): user and system CPU, socket reads and writes (`/proc/<pid>/io`), context
 * switches, over throughput runs alternating between the paths on one set of processes per path
 * (the order rotated each rep), each warmed first as `run interleaved` warms it. Linux only.
 *
 *   cd bench && ../node_modules/.bin/tsx src/counts.ts --paths phoenix-1,pause-resume --reps 3
 *   ... --paths phoenix-1,base:phoenix-1 --baseline <another checkout with its install>
 *
 * Prints one line per process per run (ms of CPU and calls per MiB); writes nothing.
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { fail, scriptArgs } from '../../tools/script-args.ts'
import { procCounts, type ProcCounts } from '../../tools/proc-cpu.ts'
import { WARM_UP_SMALL_BYTES, WARM_UP_SMALL_RUNS } from './interleaved-plan.ts'
import { measureThroughput, openPath } from './measure.ts'
import { nodesOf, PATH_IDS, roleOf, setUpPath, type PathId } from './paths.ts'
import { NODE_FLAGS, parseNodeFlags, SIZE_BYTES } from './plan.ts'
import { spawnNode, type NodeHandle } from './rpc.ts'

const MiB = 2 ** 20
const { values } = scriptArgs({
  options: {
    paths: { type: 'string', default: 'phoenix-1,pause-resume' },
    size: { type: 'string', default: '65536' },
    reps: { type: 'string', default: '3' },
    mib: { type: 'string', default: '128' },
    baseline: { type: 'string', default: '' },
    'node-flags': { type: 'string' },
  },
}, { summary: 'per process and per MiB: CPU by mode, socket reads and writes, context switches, from /proc' })
const whole = (name: string, text: string): number => {
  const n = Number(text)
  if (!Number.isInteger(n) || n < 1) fail(`--${name} must be a positive integer, got ${JSON.stringify(text)}`)
  return n
}
const [size, reps, mib] = [whole('size', values.size), whole('reps', values.reps), whole('mib', values.mib)]
if (!SIZE_BYTES.includes(size)) fail(`--size: unknown message size ${size}; known: ${SIZE_BYTES.join(', ')}`)
const paths = values.paths.split(',').map((p) => p.trim())
const idOf = (p: string) => p.replace(/^base:/, '') as PathId
for (const p of paths) if (!(PATH_IDS as readonly string[]).includes(idOf(p))) fail(`--paths: unknown path ${JSON.stringify(p)}`)
const baselineMain = values.baseline === '' ? undefined : resolve(values.baseline, 'bench/src/node-main.ts')
if (paths.some((p) => p.startsWith('base:')) && (baselineMain === undefined || !existsSync(baselineMain))) fail('--paths: a base:<path> needs --baseline <checkout with its install>')
let nodeFlags: readonly string[] = NODE_FLAGS
try {
  if (values['node-flags'] !== undefined) nodeFlags = parseNodeFlags(values['node-flags'])
} catch (error) {
  fail((error as Error).message)
}
if (procCounts(process.pid) === undefined) fail('needs /proc/<pid>/stat, status and io (Linux)')

/** One process's counts over a run, per MiB. */
function perMiB(before: ProcCounts, after: ProcCounts, mibMoved: number): string {
  const per = (a: number, b: number, scale = 1) => (((a - b) * scale) / mibMoved).toFixed(scale === 1 ? 0 : 2)
  return `user ${per(after.userS, before.userS, 1000)} sys ${per(after.systemS, before.systemS, 1000)} ms, reads ${per(after.reads, before.reads)} writes ${per(after.writes, before.writes)}, switches ${per(after.voluntarySwitches, before.voluntarySwitches)}+${per(after.involuntarySwitches, before.involuntarySwitches)}`
}

const pools = new Map<string, NodeHandle[]>()
try {
  for (const path of paths) {
    const nodes = await Promise.all(Array.from({ length: nodesOf(idOf(path)) }, (_, i) => spawnNode(`${path}-${i}`, nodeFlags, path.startsWith('base:') ? baselineMain : undefined)))
    pools.set(path, nodes)
    await openPath(nodes, await setUpPath(idOf(path), nodes))
    for (let i = 0; i < WARM_UP_SMALL_RUNS; i++) await measureThroughput(nodes, WARM_UP_SMALL_BYTES, 16 * MiB)
    await measureThroughput(nodes, size, mib * MiB)
  }
  for (let rep = 0; rep < reps; rep++) {
    // The order rotated each rep, as `run interleaved` does: a path's place in the rotation moves its figures.
    for (const path of paths.map((_, i) => paths[(i + rep) % paths.length]!)) {
      const nodes = pools.get(path)!
      const counts = () => nodes.map((n) => procCounts(n.pid) ?? fail(`process ${n.pid} is gone`))
      const before = counts()
      const t = await measureThroughput(nodes, size, mib * MiB)
      const after = counts()
      process.stdout.write(`rep ${rep + 1} ${path} ${t.mibPerS.toFixed(0)} MiB/s\n`)
      for (const [i, b] of before.entries()) process.stdout.write(`  ${roleOf(i, nodes.length).padEnd(8)} ${perMiB(b, after[i]!, t.bytes / MiB)}\n`)
    }
  }
} finally {
  const all = [...pools.values()].flat()
  await Promise.all(all.map((n) => n.call('stop').catch(() => undefined)))
  await Promise.all(all.map((n) => n.close()))
}
