/**
 * Where a simulation's live bytes are, by owner: one run (as `scale.ts --child` runs it), a full
 * collection, a heap snapshot, then every object's self size given to the first instance of a
 * class of ours on its shortest path from the roots, by that instance's field (`RouteColumns.seq`,
 * `AddressBook.queue`; a typed array's buffer counts with its owner's field), in bytes a (node,
 * destination) pair, grouped as simulations/ANALYSIS.md's tables are.
 *
 *   node --expose-gc --import tsx simulations/heap-owners.ts --nodes 1000 --scenario paper-1-subnet --top 40
 *   ... --at-events 540000                                                         # mid-run, e.g. at peak-live.ts's peak
 *   ... --tree ../other-checkout                                                  # another checkout's code
 *
 * About 20 s and 1 GB at 1,000 processes (the snapshot is ~130 MB of JSON, parsed here).
 */
import { readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { writeHeapSnapshot } from 'node:v8'
import { fail, intOption, scriptArgs } from '../tools/script-args.ts'

const here = dirname(fileURLToPath(import.meta.url))
const { values } = scriptArgs(
  { options: { nodes: { type: 'string', default: '1000' }, scenario: { type: 'string', default: 'paper-3-subnets' }, top: { type: 'string', default: '40' }, 'at-events': { type: 'string' }, tree: { type: 'string' } } },
  {
    summary: "a simulation's live bytes by owner (class and field), per (node, destination) pair, from a heap snapshot at its end or at --at-events",
    help: { nodes: 'processes (the scenario scaled to this size)', scenario: 'a file of simulations/scenarios/, without .json', top: 'how many owners to list', 'at-events': 'take the snapshot at this event count instead of at the end (peak-live.ts says where the peak is)', tree: 'the checkout whose packages/sim runs (default: this one)' },
  },
)
const nodes = intOption(values, 'nodes', 2, 100_000)
const top = intOption(values, 'top', 1, 10_000)
const atEvents = values['at-events'] === undefined ? undefined : intOption(values, 'at-events', 1, 1e12)
const gc = (globalThis as { gc?: () => void }).gc ?? fail('run with node --expose-gc')

/** Owner groups of ANALYSIS.md's tables, by class name; the rest is "other". */
const GROUPS: readonly (readonly [string, RegExp])[] = [
  ['route table', /^(RouteColumns|Introducers|RecordAddresses|AddressVersions|SetIds|RouteTable|DirtyEntries|JoinedNeighbours|RowList)\b/],
  ['address book', /^(AddressBook|AddressRows)\b/],
  ["the core's connections", /^(NeighbourColumns|NeighbourTable|UpdateBudgets)\b/],
  ["the simulator's connections", /^(LinkTable|Network)\b/],
  ['holder sets and memo', /^(HolderSets|NodeSet)\b/],
  ['event queue', /^EventQueue(Run)?\b/],
  ['inbox (received, not applied)', /^Inbox\b/],
]
/** Constructor names that are not classes of ours: their instances pass their owner on. */
const BUILT_IN = /^(Object|Array|Map|Set|Weak\w*|Function|\w*Array|ArrayBuffer|DataView|Promise|Error|RegExp|Date|Module|Buffer|Symbol|String|Number|Boolean|Generator|Iterator|EventEmitter|global|process)$/

/** One run kept until its snapshot is written; the path of the snapshot. */
async function snapshot(): Promise<string> {
  const tree = resolve(values.tree ?? join(here, '..'))
  const sim = (await import(pathToFileURL(join(tree, 'packages/sim/src/index.ts')).href)) as typeof import('@phoenix-overlay/sim')
  const scaled = sim.scaleScenario(sim.parseScenario(JSON.parse(readFileSync(join(here, 'scenarios', `${values.scenario}.json`), 'utf8'))), nodes)
  // As scale.ts: every process may connect to every gateway.
  // Mid-run (`--at-events`): the snapshot is taken from the progress callback, the run's state live below it.
  let file: string | undefined
  const take = () => {
    gc()
    file = writeHeapSnapshot(join(tmpdir(), `heap-owners-${process.pid}.heapsnapshot`))
  }
  const onProgress = (_virtualMs: number, events: number) => {
    if (atEvents !== undefined && file === undefined && events >= atEvents) take()
  }
  const run = sim.simulate({ ...scaled, coreLimits: { neighboursMax: Math.max(4096, nodes), ...scaled.coreLimits } }, { onProgress })
  if (file === undefined) take()
  process.stderr.write(`${values.scenario}@${nodes}: converged ${run.result.converged}, ${run.result.entries} entries, ${run.sim.nodes.length} nodes kept for the snapshot${atEvents !== undefined ? `, snapshot at event ${atEvents}` : ''}\n`)
  return file!
}

interface Snapshot {
  readonly snapshot: { readonly meta: { readonly node_fields: string[]; readonly edge_fields: string[]; readonly node_types: [string[]]; readonly edge_types: [string[]] } }
  readonly nodes: number[]
  readonly edges: number[]
  readonly strings: string[]
}

/** Bytes by owner label ("Class.field", "Class (objects)", or "(root)" before any class of ours). */
function owners(s: Snapshot): Map<string, number> {
  const { meta } = s.snapshot
  const nf = meta.node_fields.length
  const ef = meta.edge_fields.length
  const [nType, nName, nSelf, nEdges] = ['type', 'name', 'self_size', 'edge_count'].map((f) => meta.node_fields.indexOf(f)) as [number, number, number, number]
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => meta.edge_fields.indexOf(f)) as [number, number, number]
  const count = s.nodes.length / nf
  const firstEdge = new Uint32Array(count + 1)
  for (let i = 0, e = 0; i <= count; i++) {
    firstEdge[i] = e
    if (i < count) e += s.nodes[i * nf + nEdges]! * ef
  }
  const classOf = (i: number): string | undefined => {
    if (meta.node_types[0][s.nodes[i * nf + nType]!] !== 'object') return undefined
    const name = s.strings[s.nodes[i * nf + nName]!]!
    return /^[A-Z][A-Za-z0-9]+$/.test(name) && !BUILT_IN.test(name) ? name : undefined
  }
  // Breadth first from the root: each object takes the label of its first discoverer.
  const label: (string | undefined)[] = new Array(count)
  const queue = new Int32Array(count)
  let head = 0
  let tail = 0
  label[0] = '(root)'
  queue[tail++] = 0
  while (head < tail) {
    const i = queue[head++]!
    const owner = classOf(i)
    for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += ef) {
      const type = meta.edge_types[0][s.edges[e + eType]!]
      const to = s.edges[e + eTo]! / nf
      if (type === 'weak' || type === 'shortcut' || label[to] !== undefined) continue
      const toClass = classOf(to)
      const field = type === 'element' || type === 'hidden' ? `[${type}]` : type === 'property' || type === 'context' || type === 'internal' ? s.strings[s.edges[e + eName]!] : String(s.edges[e + eName])
      label[to] = toClass !== undefined ? `${toClass} (objects)` : owner !== undefined ? `${owner}.${field}` : label[i]
      queue[tail++] = to
    }
  }
  const bytes = new Map<string, number>()
  for (let i = 0; i < count; i++) {
    const l = label[i] ?? '(unreachable)'
    bytes.set(l, (bytes.get(l) ?? 0) + s.nodes[i * nf + nSelf]!)
  }
  return bytes
}

const file = await snapshot()
gc()
const bytes = owners(JSON.parse(readFileSync(file, 'utf8')) as Snapshot)
rmSync(file)
const pairs = nodes * nodes
const groups = new Map<string, number>([...GROUPS.map(([g]) => [g, 0] as [string, number]), ['other', 0]])
for (const [owner, b] of bytes) {
  const group = GROUPS.find(([, pattern]) => pattern.test(owner))?.[0] ?? 'other'
  groups.set(group, groups.get(group)! + b)
}
const perPair = (b: number) => (b / pairs).toFixed(1).padStart(7)
process.stdout.write(`bytes a (node, destination) pair, ${values.scenario} at ${nodes} processes\n`)
for (const [group, b] of groups) process.stdout.write(`${perPair(b)}  ${group}\n`)
process.stdout.write(`${perPair([...groups.values()].reduce((a, b) => a + b, 0))}  in all\n\nthe largest owners:\n`)
for (const [owner, b] of [...bytes].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${perPair(b)}  ${owner}\n`)
