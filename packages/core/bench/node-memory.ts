/**
 * What one real node's routing state costs: a core with its own numbering (no simulator sharing)
 * learns `--destinations` destinations from `--neighbours` neighbours (every neighbour advertises
 * every destination; the first adopts it, the others note themselves as holders, naming some of
 * their neighbours as trans), and the heap it retains afterwards is measured (after a full GC).
 * `--core` points at another checkout's `packages/core/src/index.ts`, to compare with a baseline
 * in the same run:
 *
 *   node --expose-gc --import tsx packages/core/bench/node-memory.ts [--destinations 1000] [--neighbours 16] [--core ../base/packages/core/src/index.ts]
 */
import { resolve } from 'node:path'
import { fail, intOption, scriptArgs } from '../../../tools/script-args.ts'
import { pathToFileURL } from 'node:url'

const { values } = scriptArgs(
  { options: { destinations: { type: 'string', default: '1000' }, neighbours: { type: 'string', default: '16' }, core: { type: 'string' } } },
  { summary: "one core's memory per destination (run with node --expose-gc)", help: { destinations: 'destinations in the table', neighbours: 'neighbours advertising them', core: "another checkout's packages/core/src/index.ts, for a same-run baseline" } },
)
const destinations = intOption(values, 'destinations', 1)
const neighbours = intOption(values, 'neighbours', 1, 255)
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) fail('run with node --expose-gc (the measurement needs a full GC)')

const core = (await import(values.core === undefined ? '../src/index.ts' : pathToFileURL(resolve(values.core)).href)) as typeof import('../src/index.ts')
type UpdateMessage = import('../src/index.ts').UpdateMessage

const peers = Array.from({ length: neighbours }, (_, k) => `peer-${k}`)
const ids = Array.from({ length: destinations }, (_, i) => `node-${String(i).padStart(6, '0')}`)
// Made before the baseline heap is taken: only what the core itself retains is counted.
const messages: { from: string; message: UpdateMessage }[] = []
for (let k = 0; k < neighbours; k++) {
  // Sender k's neighbours: all peers; its trans names the peers before it (they got the entry from it).
  const trans = new Uint8Array(Math.ceil(neighbours / 8))
  for (let j = 0; j < k; j++) trans[j >> 3]! |= 1 << (j & 7)
  const transSets = k === 0 ? [] : [trans]
  for (let start = 0; start < destinations; start += 256) {
    const entries = ids.slice(start, start + 256).map((destination) => ({ destination, seq: 2, nhops: 1 + (k % 3), names: [], addresses: [], trans: k === 0 ? -1 : 0 }))
    messages.push({ from: peers[k]!, message: { neighbourSlots: peers, transSets, entries } })
  }
}

const heap = (): number => {
  gc()
  gc()
  const m = process.memoryUsage()
  return m.heapUsed + m.arrayBuffers
}
const before = heap()
const node = new core.PhoenixCore({ id: 'me', limits: { destinationsMax: destinations + 16 } })
let nowMs = 0
for (const peer of peers) node.connectionUp(peer, nowMs)
for (const { from, message } of messages) {
  node.receive(from, message, (nowMs += 1))
  while (node.hasWork(nowMs)) node.step(nowMs)
}
const after = heap()
node.checkInvariants()
const routes = node.routes().filter((r) => r.reachable).length
if (routes !== destinations) throw new Error(`expected ${destinations} routes, got ${routes}`)
const bytes = after - before
process.stdout.write(
  `${values.core ?? 'this checkout'}: ${destinations} destinations from ${neighbours} neighbours: ${(bytes / 2 ** 10).toFixed(0)} KiB retained, ${(bytes / destinations).toFixed(0)} bytes per destination\n`,
)
