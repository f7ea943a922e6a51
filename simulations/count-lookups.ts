/**
 * Work a run does that does not depend on the machine's load: how many times the cores look a node
 * or address up by its text (`NodeIndex.get`) and hash a holder set over its N bits
 * (`NodeSet.unionHash`, a miss of `HolderSets`' memo), in one run of the checkout `--tree` (another
 * checkout's count for a before/after on a loaded machine, where CPU seconds vary by 20%).
 *
 *   node --max-old-space-size=8000 --experimental-transform-types --disable-warning=ExperimentalWarning count-lookups.ts --tree .. --nodes 2000
 *   (from simulations/; --scenario paper-1-subnet for the other scenario)
 */
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { intOption, scriptArgs } from '../tools/script-args.ts'

const here = dirname(fileURLToPath(import.meta.url))
const { values } = scriptArgs(
  { options: { tree: { type: 'string', default: '..' }, nodes: { type: 'string', default: '1000' }, scenario: { type: 'string', default: 'paper-3-subnets' } } },
  { summary: 'Lookups by text and holder-set hashes of one simulated run (hubs only).', help: { tree: 'the checkout whose packages run', nodes: 'processes', scenario: 'a file of simulations/scenarios/, without .json' } },
)
const tree = resolve(here, values.tree!)
const nodes = intOption(values, 'nodes', 2, 100_000)
const load = async <T>(path: string): Promise<T> => (await import(pathToFileURL(join(tree, path)).href)) as T
const { NodeIndex } = await load<typeof import('../packages/core/src/nodeindex.ts')>('packages/core/src/nodeindex.ts')
const { NodeSet } = await load<typeof import('../packages/core/src/nodeset.ts')>('packages/core/src/nodeset.ts')
const sim = await load<typeof import('../packages/sim/src/index.ts')>('packages/sim/src/index.ts')

let lookups = 0
let hashes = 0
const get = NodeIndex.prototype.get
NodeIndex.prototype.get = function (this: InstanceType<typeof NodeIndex>, id: string) {
  lookups++
  return get.call(this, id)
}
const unionHash = NodeSet.unionHash
NodeSet.unionHash = (...args: Parameters<typeof unionHash>) => {
  hashes++
  return unionHash(...args)
}
const scenario = sim.scaleScenario(sim.parseScenario(JSON.parse(readFileSync(join(tree, 'simulations/scenarios', `${values.scenario}.json`), 'utf8'))), nodes)
const { result } = sim.simulate(scenario, {})
process.stdout.write(`${JSON.stringify({ scenario: values.scenario, nodes, converged: result.converged, check: result.check?.method, nodeIndexGet: lookups, unionHash: hashes })}\n`)
