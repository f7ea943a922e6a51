/**
 * A real node's memory at N destinations (default 1,000): what one `PhoenixCore` of its own (no
 * simulator sharing) holds once it has learned a network of N nodes through one hub, as a real
 * node does in hubs-only discovery. Phase 1 runs the hub and its N leaves and records what the
 * hub sends our node; phase 2 feeds copies of those messages to a fresh core and measures the heap
 * it keeps (after a forced GC, before minus after, the recorded messages held throughout).
 *
 *   npx pnpm@10 --filter @phoenix-overlay/simulations run node-memory                           # 1,000 destinations
 *   ... run node-memory -- --destinations 2000 --baseline ../other-checkout                    # also another checkout, with the ratio
 *
 * Each tree is measured in its own Node process (--expose-gc), so one's code and garbage do not
 * count against the other.
 */
import { spawnSync } from 'node:child_process'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { PhoenixCore, UpdateMessage } from '../packages/core/src/index.ts'
import { intOption, scriptArgs } from '../tools/script-args.ts'

const here = dirname(fileURLToPath(import.meta.url))
const { values } = scriptArgs(
  { options: { destinations: { type: 'string', default: '1000' }, baseline: { type: 'string' }, child: { type: 'boolean', default: false }, tree: { type: 'string' } } },
  {
    summary: "a real node's memory at N destinations: the heap one PhoenixCore keeps once it learned N nodes through one hub",
    help: { destinations: 'how many nodes the core learns', baseline: 'another checkout: measure it too and print the ratio', child: 'internal: one measurement (with --tree)' },
  },
)
/** Loop iterations (1 ms of time each) before a phase gives up: far more than a star of 10,000 needs. */
const ROUNDS_MAX = 200_000

type Core = typeof import('../packages/core/src/index.ts')

if (values.child) await child()
else parent()

function parent(): void {
  const destinations = intOption(values, 'destinations', 1)
  const trees = [resolve(here, '..'), ...(values.baseline === undefined ? [] : [resolve(values.baseline)])]
  const kib: number[] = []
  for (const tree of trees) {
    const run = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), '--child', '--tree', tree, '--destinations', String(destinations)], { cwd: here, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
    if (run.status !== 0) throw new Error(`node-memory: the run for ${tree} failed (exit ${run.status})`)
    const r = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { heapKiB: number; destinations: number }
    kib.push(r.heapKiB)
    process.stdout.write(`${tree === trees[0] ? 'this tree' : 'baseline'}: ${r.destinations} destinations, ${r.heapKiB.toFixed(0)} KiB heap (${((r.heapKiB * 1024) / r.destinations).toFixed(0)} bytes per destination)\n`)
  }
  if (kib.length === 2) process.stdout.write(`ratio (this / baseline): ${(kib[0]! / kib[1]!).toFixed(3)}\n`)
}

/** Steps every core with work and delivers what they send, until none has any; `tap` sees each message to `watched`. */
function drive(cores: Map<string, PhoenixCore>, clock: { nowMs: number }, watched: string, tap: (m: UpdateMessage) => void): void {
  for (let round = 0; round < ROUNDS_MAX; round++) {
    let busy = false
    for (const core of cores.values()) {
      if (!core.hasWork(clock.nowMs)) continue
      busy = true
      for (const effect of core.step(clock.nowMs).effects) {
        if (effect.type !== 'send') continue
        if (effect.to === watched) tap(effect.message)
        cores.get(effect.to)?.receive(core.id, effect.message, clock.nowMs)
      }
    }
    const wake = [...cores.values()].map((c) => c.nextWakeMs(clock.nowMs)).filter((t): t is number => t !== undefined)
    if (!busy && wake.length === 0) return
    clock.nowMs += 1
  }
  throw new Error(`node-memory: the star did not settle in ${ROUNDS_MAX} rounds`)
}

type Config = (id: string, discovery: boolean) => ConstructorParameters<Core['PhoenixCore']>[0]

/** Phase 1: the hub, n - 1 leaves and our node (n destinations for it); what the hub sends our node, and how many it learned. */
function record(core: Core, n: number, config: Config): { recorded: { atMs: number; message: UpdateMessage }[]; learned: number } {
  const recorded: { atMs: number; message: UpdateMessage }[] = []
  const clock = { nowMs: 0 }
  const cores = new Map<string, PhoenixCore>()
  const hub = new core.PhoenixCore(config('hub', false))
  cores.set(hub.id, hub)
  for (let i = 1; i < n; i++) cores.set(`leaf${i}`, new core.PhoenixCore(config(`leaf${i}`, false)))
  cores.set('node', new core.PhoenixCore(config('node', true)))
  for (const c of cores.values()) if (c !== hub) (c.connectionUp(hub.id, 0), hub.connectionUp(c.id, 0))
  drive(cores, clock, 'node', (message) => recorded.push({ atMs: clock.nowMs, message }))
  return { recorded, learned: cores.get('node')!.destinationCount }
}

async function child(): Promise<void> {
  const tree = resolve(values.tree!)
  const n = Number(values.destinations)
  const core = (await import(pathToFileURL(join(tree, 'packages/core/src/index.ts')).href)) as Core
  const gc = (globalThis as { gc?: () => void }).gc!
  const config: Config = (id, discovery) => ({ id, addresses: [`/ip4/10.0.${id.length}.1/tcp/4001/p2p/${id}`], discovery, limits: { destinationsMax: n + 10, neighboursMax: n + 10 } })
  const { recorded, learned } = record(core, n, config)
  // Phase 2: a fresh node fed copies of those messages (a real node's decoded messages are its own).
  gc()
  gc()
  const before = process.memoryUsage().heapUsed
  const node = new core.PhoenixCore(config('node', true))
  node.connectionUp('hub', 0)
  for (const { atMs, message } of recorded) {
    node.receive('hub', structuredClone(message), atMs)
    while (node.hasWork(atMs)) node.step(atMs)
  }
  gc()
  gc()
  const after = process.memoryUsage().heapUsed
  if (node.destinationCount !== learned) throw new Error(`node-memory: the replay learned ${node.destinationCount} destinations, the star ${learned}`)
  process.stdout.write(`${JSON.stringify({ destinations: node.destinationCount, heapKiB: (after - before) / 1024 })}\n`)
}
