/**
 * Where a simulation's garbage comes from: one run under V8's sampling heap profiler with the
 * objects the collector already freed included (`node --heap-prof` keeps only what is still
 * alive at the end, which says nothing about garbage), then the allocation sites by bytes.
 * Garbage collection was a fifth of a 2,000-process run's CPU (simulations/ANALYSIS.md, Scale).
 *
 *   npx tsx simulations/alloc-profile.ts --nodes 1000 --scenario paper-3-subnets --top 25
 *
 * The sampled total is an estimate (one sample per --interval-bytes allocated, 64 KiB here),
 * and the sites are V8's function names with their file: `(anon)` is an arrow
 * function, and `set` or `next` with no file are built-ins (a Map growing, a generator's result).
 */
import { Session } from 'node:inspector/promises'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseScenario, scaleScenario, simulate } from '../packages/sim/src/index.ts'
import { fail, intOption, scriptArgs } from '../tools/script-args.ts'

const here = dirname(fileURLToPath(import.meta.url))

const { values } = scriptArgs(
  {
    options: {
      nodes: { type: 'string', default: '1000' },
      scenario: { type: 'string', default: 'paper-3-subnets' },
      top: { type: 'string', default: '25' },
      'interval-bytes': { type: 'string', default: '65536' },
      callers: { type: 'string' },
    },
  },
  {
    summary: 'Allocation sites of one simulated run, by bytes, the garbage included.',
    help: {
      nodes: 'processes (the scenario scaled to this size)',
      scenario: 'a file of simulations/scenarios/, without .json',
      top: 'how many sites to print',
      'interval-bytes': 'bytes allocated per sample',
      callers: 'also print who calls this site (as printed, e.g. "next" or "messagesTo send.ts"), by bytes',
    },
  },
)
const nodes = intOption(values, 'nodes', 2, 100_000)
const top = intOption(values, 'top', 1, 1_000)
const samplingInterval = intOption(values, 'interval-bytes', 1_024, 2 ** 30)

interface ProfileNode {
  readonly callFrame: { readonly functionName: string; readonly url: string }
  readonly selfSize: number
  readonly children: readonly ProfileNode[]
}

const file = join(here, 'scenarios', `${values.scenario}.json`)
if (!existsSync(file)) fail(`--scenario: no simulations/scenarios/${values.scenario}.json`)
const scenario = scaleScenario(parseScenario(JSON.parse(readFileSync(file, 'utf8'))), nodes)
const session = new Session()
session.connect()
await session.post('HeapProfiler.startSampling', { samplingInterval, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
const started = performance.now()
const { result } = simulate(scenario, {})
const wallS = (performance.now() - started) / 1000
const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: { head: ProfileNode } }
session.disconnect()

// Self bytes by site, and by caller of the --callers site, walking the tree with a stack (a deep
// call tree must not overflow ours).
const siteOf = (node: ProfileNode): string => {
  const file = node.callFrame.url.split('/').pop() ?? ''
  return `${node.callFrame.functionName || '(anon)'}${file === '' ? '' : ` ${file}`}`
}
const bySite = new Map<string, number>()
const byCaller = new Map<string, number>()
let total = 0
const stack: { node: ProfileNode; caller: string }[] = [{ node: profile.head, caller: '(root)' }]
while (stack.length > 0) {
  const { node, caller } = stack.pop()!
  const site = siteOf(node)
  bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize)
  if (site === values.callers) byCaller.set(caller, (byCaller.get(caller) ?? 0) + node.selfSize)
  total += node.selfSize
  for (const child of node.children) stack.push({ node: child, caller: site })
}
const line = (bytes: number, what: string) => `${((100 * bytes) / total).toFixed(1).padStart(5)}%  ${(bytes / 2 ** 20).toFixed(0).padStart(6)} MiB  ${what}\n`
process.stdout.write(`${scenario.name} at ${nodes}: ${result.converged && result.check.ok ? 'ok' : 'NOT ok'}, ${wallS.toFixed(1)} s wall (profiled), about ${(total / 2 ** 20).toFixed(0)} MiB allocated\n`)
for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(line(bytes, site))
if (values.callers !== undefined) {
  process.stdout.write(`\ncallers of ${values.callers}:\n`)
  for (const [caller, bytes] of [...byCaller].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(line(bytes, caller))
}
