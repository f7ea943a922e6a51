import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { totalmem } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { getHeapStatistics } from 'node:v8'
import { InvalidArgumentError, type Command } from 'commander'
import { ConfigError } from '../config-error.ts'
import { SimProgress, type ProgressStream } from '../sim-progress.ts'
import { heapToRaiseMiB, parentGone, rerunWithHeap } from '../sim-heap.ts'
import { DISCOVERIES, SIM_LIMITS, STRATEGIES, SimulationError, checkNodesCanMeet, parseScenario, resultToJson, samplesToCsv, scaleScenario, Simulation, type Discovery, type Scenario, type SimResult, type Strategy } from '@phoenix-overlay/sim'

function integer(name: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value)
    // Digits only: Number() also reads "1e2" and "0x10" (they ran 100 and 16 processes).
    if (!/^\d+$/.test(value) || n < min || n > max) throw new InvalidArgumentError(`${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(value)}`)
    return n
  }
}

function choice<T extends string>(name: string, allowed: readonly T[]) {
  return (value: string): T => {
    if (!allowed.includes(value as T)) throw new InvalidArgumentError(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`)
    return value as T
  }
}

export interface SimCommandOptions {
  seed?: number
  nodes?: number
  strategy?: Strategy
  discovery?: Discovery
  sendHold?: number
  signUs?: number
  verifyUs?: number
  out?: string
  dumpTables?: string
  progress?: boolean
}

/** Loads the scenario file and applies the command-line overrides. */
export function loadScenario(file: string, options: SimCommandOptions): Scenario {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new ConfigError(`cannot read scenario ${file}: ${(error as Error).message}`)
  }
  let json: unknown
  try {
    // A byte-order mark (editors on Windows write one) is not JSON's, but it is not the user's error either.
    json = JSON.parse(text.startsWith('\uFEFF') ? text.slice(1) : text)
  } catch (error) {
    throw new ConfigError(`${file} is not valid JSON: ${(error as Error).message}`)
  }
  // --send-hold goes into the file's coreTiming before it is read: the default quietMs and the
  // rule that quietMs exceeds the hold follow it, as they follow the file's own value.
  if (options.sendHold !== undefined && typeof json === 'object' && json !== null && !Array.isArray(json)) {
    const timing = (json as { coreTiming?: unknown }).coreTiming
    json = { ...json, coreTiming: { ...(typeof timing === 'object' && timing !== null ? timing : {}), sendHoldForDialsMs: options.sendHold } }
  }
  let scenario: Scenario
  try {
    scenario = parseScenario(json)
    // `--nodes 2` for a file of three subnets is the command line's error, as the file's are (exit 2).
    if (options.nodes !== undefined) scenario = scaleScenario(scenario, options.nodes)
  } catch (error) {
    // The file's fields, checked before anything runs: a configuration error.
    if (error instanceof SimulationError && error.code === 'INVALID_SCENARIO') throw new ConfigError(error.message)
    throw error
  }
  // The baselines are given their connections (offline) or a master's table: nothing is
  // discovered, and the result says discovery "all" whatever was asked (it was taken silently).
  const strategy = options.strategy ?? scenario.strategy
  if (options.discovery !== undefined && (strategy === 'offline' || strategy === 'master')) {
    throw new ConfigError(`--discovery ${options.discovery}: has no effect with strategy ${strategy} (its connections are given, not discovered); leave it out`)
  }
  const given: Scenario = {
    ...scenario,
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(options.strategy !== undefined ? { strategy: options.strategy } : {}),
    ...(options.discovery !== undefined ? { discovery: options.discovery } : {}),
    processing: {
      ...scenario.processing,
      ...(options.signUs !== undefined ? { perRecordSignUs: options.signUs } : {}),
      ...(options.verifyUs !== undefined ? { perRecordVerifyUs: options.verifyUs } : {}),
    },
  }
  try {
    // Again with the command line's strategy and discovery (`--discovery hubs` on a file without gateways).
    checkNodesCanMeet(given)
  } catch (error) {
    if (error instanceof SimulationError && error.code === 'INVALID_SCENARIO') throw new ConfigError(error.message)
    throw error
  }
  return given
}

export function registerSimCommand(program: Command, description: string): void {
  program
    .command('sim')
    .description(description)
    .argument('<scenario>', 'scenario JSON file (see packages/sim/README.md)')
    .option('--seed <n>', 'PRNG seed (overrides the file)', integer('--seed', 0, 2 ** 32 - 1))
    .option('--nodes <n>', 'scale the scenario to this many nodes, keeping subnet proportions', integer('--nodes', 1, 20_000))
    .option('--strategy <name>', `one of ${STRATEGIES.join(', ')}`, choice('--strategy', STRATEGIES))
    .option('--discovery <mode>', 'hubs: only gateways known at start; all: every address given', choice('--discovery', DISCOVERIES))
    .option('--send-hold <ms>', "core timing sendHoldForDialsMs (overrides the file's coreTiming)", integer('--send-hold', 0, 3_600_000))
    .option('--sign-us <µs>', 'CPU to sign an origin record (processing.perRecordSignUs; with --verify-us, 0 = unsigned records)', integer('--sign-us', 0, 1_000_000))
    .option('--verify-us <µs>', 'CPU to verify a received origin record (processing.perRecordVerifyUs); measure with packages/transport/bench/records.ts', integer('--verify-us', 0, 1_000_000))
    .option('--out <dir>', 'write result.json and samples.csv here (otherwise the result goes to stdout)')
    .option('--dump-tables <file>', 'write the final nodes, connections and tables as JSON')
    .option('--progress', 'when stderr is not a terminal, print a progress line every 5 s (on a terminal the bar is always shown)')
    .action(async (file: string, options: SimCommandOptions) => {
      const code = await runSimCommand(file, options)
      if (code !== 0) process.exitCode = code
    })
}

/**
 * The command: `runSim` here, or in a child with a raised heap limit when the run may need more
 * than V8's limit here and the machine has it (sim-heap.ts).
 */
async function runSimCommand(file: string, options: SimCommandOptions): Promise<number> {
  const nodes = loadScenario(file, options).subnets.reduce((sum, s) => sum + s.nodes, 0)
  const needBytes = nodes * nodes * SIM_LIMITS.HEAP_BYTES_PER_PAIR
  const limitBytes = getHeapStatistics().heap_size_limit
  const heapMiB = heapToRaiseMiB(needBytes, limitBytes, totalmem())
  if (heapMiB === undefined) return runSim(file, options)
  process.stderr.write(`phoenix sim: ${nodes} processes may need ~${heapMiB} MiB of heap, more than V8's limit here (${Math.ceil(limitBytes / 2 ** 20)} MiB): running with --max-old-space-size=${heapMiB}\n`)
  return rerunWithHeap(heapMiB)
}

/** Runs the command; returns the exit code (1 when a table is wrong or the run did not converge). Progress and the summary go to `stderr`. */
export function runSim(file: string, options: SimCommandOptions, stderr: ProgressStream = process.stderr): number {
  const scenario = loadScenario(file, options)
  checkOutputs(options)
  const heapWarning = heapShortfall(scenario.subnets.reduce((sum, s) => sum + s.nodes, 0), getHeapStatistics().heap_size_limit)
  if (heapWarning !== undefined) stderr.write(`${heapWarning}\n`)
  // The run is one synchronous loop, so progress is drawn from the simulator's callback, never from a timer.
  const progress = new SimProgress(stderr, options.progress === true)
  const wallStart = performance.now()
  const parent = process.ppid
  const onProgress = (virtualMs: number, events: number, reachable: number): void => {
    if (parentGone(parent)) {
      stderr.write(`phoenix sim: the command that started this run (pid ${parent}) is gone; stopping\n`)
      process.exit(1)
    }
    progress.update(virtualMs, events, reachable)
  }
  let sim: Simulation
  try {
    sim = new Simulation(scenario, { onProgress })
  } catch (error) {
    // Checked as the run is set up (an event's node ids, the master baseline with events): the file's fault too, exit 2.
    if (error instanceof SimulationError && (error.code === 'INVALID_SCENARIO' || error.code === 'UNSUPPORTED')) throw new ConfigError(error.message)
    throw error
  }
  const result = sim.run({ onProgress })
  progress.stop()
  const wallMs = performance.now() - wallStart
  const json = resultToJson(result)
  if (options.out !== undefined) {
    writeFileSync(join(options.out, 'result.json'), json)
    writeFileSync(join(options.out, 'samples.csv'), samplesToCsv(result))
  } else {
    process.stdout.write(json)
  }
  if (options.dumpTables !== undefined) writeFileSync(options.dumpTables, `${JSON.stringify(sim.dumpTables())}\n`)
  // Wall time and memory vary from run to run, so they go to stderr, never into the result file.
  stderr.write(
    `${result.scenario}: ${result.nodes} nodes, ${result.strategy}/${result.discovery}: ` +
      `${result.converged ? `converged at ${result.convergenceMs} ms virtual` : 'DID NOT CONVERGE'}, ` +
      `${result.messages} messages, ${result.entries} entries (${result.entriesOverLowerBound}x N(N-1)), ${result.bytes} bytes; ` +
      `tables ${result.check.method === 'none' ? 'not checked' : result.check.ok ? 'match BFS' : 'WRONG'}${result.converged ? partial(result) : ''}; wall ${(wallMs / 1000).toFixed(1)} s, rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB\n`,
  )
  if (result.check.method === 'none') return 1
  if (!result.check.ok) {
    for (const f of result.check.failures.slice(0, 10)) stderr.write(`  ${f.node} -> ${f.destination}: ${f.problem}\n`)
    return 1
  }
  return 0
}

/** What a run that ended quiet left unformed (a node that never learned of the others, a neighbour limit below a subnet's clique); empty when nothing. */
function partial(result: SimResult): string {
  if (result.connectionsMissing === 0) return ''
  const last = result.samples.at(-1)
  const reach = last === undefined ? '' : `, ${(last.reachableFraction * 100).toFixed(1)}% of sampled pairs reachable`
  return ` (over the connections that formed: ${result.connectionsMissing} allowed connections missing${reach})`
}

/**
 * Where the results will go, made and checked before the run: a run of minutes or hours must not
 * end on a path it cannot write, losing what it computed.
 */
function checkOutputs(options: SimCommandOptions): void {
  if (options.out !== undefined) {
    try {
      makeDirectory(options.out)
      if (!statSync(options.out).isDirectory()) throw new Error('not a directory')
      accessSync(options.out, constants.W_OK)
    } catch (error) {
      throw new ConfigError(`--out ${options.out}: cannot write there (${(error as Error).message})`)
    }
  }
  if (options.dumpTables !== undefined) {
    const directory = dirname(resolve(options.dumpTables))
    if (!existsSync(directory) || !statSync(directory).isDirectory()) throw new ConfigError(`--dump-tables ${options.dumpTables}: directory ${directory} does not exist`)
    // A directory given as the file ended the run, once it was done, with EISDIR and nothing written (found by hand).
    if (existsSync(options.dumpTables) && statSync(options.dumpTables).isDirectory()) throw new ConfigError(`--dump-tables ${options.dumpTables}: is a directory; give the path of a file to write`)
    try {
      accessSync(existsSync(options.dumpTables) ? options.dumpTables : directory, constants.W_OK)
    } catch (error) {
      throw new ConfigError(`--dump-tables ${options.dumpTables}: cannot write there (${(error as Error).message})`)
    }
  }
}

/**
 * `mkdir -p`, one level at a time. Node's `mkdirSync(path, { recursive: true })` never returns
 * where a parent exists but cannot hold children (under /proc, a dangling symlink): ENOENT for the
 * child, EEXIST for the parent, over and over (Node 24.9; the same loop as oven-sh/bun#36162).
 */
function makeDirectory(path: string): void {
  const missing: string[] = []
  for (let at = resolve(path); !existsSync(at); at = dirname(at)) {
    missing.push(at)
    if (dirname(at) === at) break
  }
  for (const directory of missing.reverse()) {
    try {
      mkdirSync(directory)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
}

/**
 * A warning when a run of `nodes` processes is expected to need more heap than V8 may use
 * (`SIM_LIMITS.HEAP_BYTES_PER_PAIR` per pair): V8 stops such a run with "heap out of memory" after
 * minutes of work. Past the machine's memory a larger heap limit cannot help: the warning says so,
 * and how many processes fit. Undefined when it should fit.
 */
export function heapShortfall(nodes: number, heapLimitBytes: number, memoryBytes = totalmem()): string | undefined {
  const needBytes = nodes * nodes * SIM_LIMITS.HEAP_BYTES_PER_PAIR
  const mib = (bytes: number): number => Math.ceil(bytes / 2 ** 20)
  if (needBytes > memoryBytes) {
    const fitting = Math.floor(Math.sqrt(memoryBytes / SIM_LIMITS.HEAP_BYTES_PER_PAIR))
    return `phoenix sim: ${nodes} processes may need ~${mib(needBytes)} MiB of heap, more than this machine's memory (${mib(memoryBytes)} MiB): expect the run to be killed or to swap; about ${fitting} processes fit`
  }
  if (needBytes <= heapLimitBytes) return undefined
  return `phoenix sim: ${nodes} processes may need ~${mib(needBytes)} MiB of heap, more than V8's limit here (${mib(heapLimitBytes)} MiB); raise it with NODE_OPTIONS=--max-old-space-size=${mib(needBytes)} if the run stops with "heap out of memory"`
}
