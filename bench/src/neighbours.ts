/**
 * Memory of one Phoenix node process, idle and per neighbour: a node alone in its process (run
 * with --expose-gc, so every reading follows a full collection), then with 1, 10 and 100
 * neighbours. The neighbours are Phoenix nodes whose only hub is that node (discovery off: a
 * star), hosted many to a process elsewhere. Each reading waits until the node has a 1-hop route
 * to every neighbour and a few seconds more, so routing traffic has settled.
 *
 *   npx -y pnpm@10 --filter @phoenix-overlay/bench run memory              # 1, 10, 100 neighbours
 *   npx -y pnpm@10 --filter @phoenix-overlay/bench run memory -- --quick   # 1, 3, 10
 */
import { writeFileSync, mkdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { scriptArgs } from '../../tools/script-args.ts'
import { machineLine, writeSection } from './report.ts'
import { spawnNode, type NodeHandle } from './rpc.ts'

const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const { values } = scriptArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' } } }, { summary: 'memory of one Phoenix node process, idle and per neighbour' })
const stages = values.quick ? [1, 3, 10] : [1, 10, 100]
/** Neighbours per hosting process: 50 Phoenix nodes share one process comfortably. */
const NEIGHBOURS_PER_PROCESS = 50
const SETTLE_MS = values.quick ? 500 : 3_000
const ROUTE_WAIT_MS = 120_000
const outDir = resolve(values.out ?? join(benchDir, values.quick ? 'results-quick' : 'results'))
const reportFile = values.quick || values.out !== undefined ? join(outDir, 'REPORT.md') : join(benchDir, 'REPORT.md')
mkdirSync(outDir, { recursive: true })
const log = (line: string) => process.stderr.write(`${line}\n`)

interface Reading {
  readonly stage: string
  readonly neighbours: number
  readonly rssBytes: number
  readonly heapUsedBytes: number
  readonly externalBytes: number
}

const readings: Reading[] = []
const center = await spawnNode('center', ['--expose-gc'])
const hosts: NodeHandle[] = []
try {
  const read = async (stage: string, neighbours: number) => {
    await new Promise((r) => setTimeout(r, SETTLE_MS))
    const m = await center.call('memory', { samples: 5, intervalMs: 200 })
    if (!m.collected) throw new Error('the measured process runs without --expose-gc')
    readings.push({ stage, neighbours, rssBytes: m.rssBytes, heapUsedBytes: m.heapUsedBytes, externalBytes: m.externalBytes })
    log(`${stage.padEnd(28)} RSS ${(m.rssBytes / 2 ** 20).toFixed(1)} MiB, heap used ${(m.heapUsedBytes / 2 ** 20).toFixed(1)} MiB`)
  }
  await read('process, no node', 0)
  const started = await center.call('start', { stack: 'phoenix', listen: ['/ip4/127.0.0.1/tcp/0'], hubs: [], names: ['center'] })
  const hub = started.addresses.find((a) => a.includes('/tcp/'))!
  await read('Phoenix node, idle', 0)
  const names: string[] = []
  for (const target of stages) {
    while (names.length < target) {
      const hostIndex = Math.floor(names.length / NEIGHBOURS_PER_PROCESS)
      if (hostIndex === hosts.length) hosts.push(await spawnNode(`neighbours-${hostIndex}`))
      const count = Math.min(target - names.length, NEIGHBOURS_PER_PROCESS - (names.length % NEIGHBOURS_PER_PROCESS))
      names.push(...(await hosts[hostIndex]!.call('crowd', { count, hub, prefix: `n${hostIndex}-` })))
    }
    await center.call('waitRoutes', { names, hops: 1, timeoutMs: ROUTE_WAIT_MS })
    await read(`${target} neighbour${target === 1 ? '' : 's'}`, target)
  }
} finally {
  await Promise.all([center, ...hosts].map((h) => h.close()))
}

const MiB = 2 ** 20
const fmt = (bytes: number) => (bytes / MiB).toFixed(1)
const kib = (bytes: number) => (bytes / 1024).toFixed(0)
const idle = readings[1]!
const rows = readings.map((r, i) => {
  const previous = readings[i - 1]
  const perNeighbour = previous !== undefined && r.neighbours > previous.neighbours ? (x: (q: Reading) => number) => kib((x(r) - x(previous)) / (r.neighbours - previous.neighbours)) : () => '–'
  return `| ${r.stage} | ${fmt(r.rssBytes)} | ${fmt(r.heapUsedBytes)} | ${fmt(r.externalBytes)} | ${perNeighbour((q) => q.rssBytes)} | ${perNeighbour((q) => q.heapUsedBytes)} |`
})
const markdown = `## Memory per idle node and per neighbour${values.quick ? ' (--quick smoke run)' : ''}

One Phoenix node alone in its process (Node with --expose-gc: each reading is the median of 5, each after a full collection), its neighbours Phoenix nodes in other processes (${NEIGHBOURS_PER_PROCESS} to a process) whose only hub it is. ${machineLine()}. Every run: [neighbours.csv](${values.quick || values.out !== undefined ? '' : 'results/'}neighbours.csv).

| stage | RSS, MiB | V8 heap used, MiB | external (buffers), MiB | RSS per added neighbour, KiB | heap per added neighbour, KiB |
|---|---|---|---|---|---|
${rows.join('\n')}

An idle Phoenix node costs ${fmt(idle.rssBytes - readings[0]!.rssBytes)} MiB of RSS over the process with the libraries loaded (${fmt(idle.rssBytes)} MiB in all).
`
writeFileSync(join(outDir, 'neighbours.csv'), `stage,neighbours,rss_bytes,heap_used_bytes,external_bytes\n${readings.map((r) => `${r.stage},${r.neighbours},${r.rssBytes},${r.heapUsedBytes},${r.externalBytes}`).join('\n')}\n`)
writeSection(reportFile, 'neighbours', markdown)
process.stdout.write(markdown)
