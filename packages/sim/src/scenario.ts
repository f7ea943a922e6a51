import { NODES_MAX, SAMPLE_PAIRS_DEFAULT, SAMPLE_PAIRS_MAX, SCENARIO_EVENTS_MAX, SUBNETS_MAX } from './constants.ts'
import { SimulationError } from './errors.ts'

export type Strategy = 'optimized' | 'naive' | 'offline' | 'master'
export const STRATEGIES: readonly Strategy[] = ['optimized', 'naive', 'offline', 'master']
/** 'hubs': nodes start knowing only the gateways' addresses; 'all': every address is given. */
export type Discovery = 'hubs' | 'all'
export const DISCOVERIES: readonly Discovery[] = ['hubs', 'all']

export interface SubnetSpec {
  readonly name: string
  readonly nodes: number
  /** The first `gateways` nodes of the subnet accept connections from other subnets. */
  readonly gateways: number
}

export interface LinkClass {
  readonly latencyUs: number
  readonly bandwidthMbps: number
}

export interface NetworkSpec {
  readonly intraSubnet: LinkClass
  readonly interSubnet: LinkClass
  /** Time to set a connection up beyond the round trip (TCP + authentication handshake). */
  readonly connectSetupUs: number
  /** A dial the firewall drops fails after this (the SYN retry timeout), not at once. */
  readonly synTimeoutMs: number
  /** How long until a node notices that a crashed neighbour's connection is dead. */
  readonly crashDetectMs: number
  /** 'drop' (default): forbidden dials fail after synTimeoutMs. 'reject': after one round trip (an RST). */
  readonly firewall: 'drop' | 'reject'
}

export interface ProcessingSpec {
  readonly perMessageUs: number
  readonly perEntryUs: number
  /** CPU a node spends on each connection it opens or accepts. */
  readonly perConnectionUs: number
  /**
   * CPU to sign this node's own origin record, and to verify a record received for the first
   * time. Both 0 (the default) leaves records unsigned, as in the paper; any non-zero value gives
   * every core a modelled record authority, so the core decides exactly when to sign and verify
   * and the simulator charges these costs (measured: packages/transport/bench/records.ts).
   */
  readonly perRecordSignUs: number
  readonly perRecordVerifyUs: number
}

/** Nodes an event applies to: explicit ids, or a share of the non-gateway nodes (optionally of one subnet). */
export type NodeSelection = readonly string[] | { readonly fraction: number; readonly subnet?: string } | { readonly count: number; readonly subnet?: string }

export type ScenarioEvent =
  | { readonly atMs: number; readonly type: 'join' | 'crash' | 'leave' | 'restart'; readonly nodes: NodeSelection }
  | { readonly atMs: number; readonly type: 'linkFail' | 'linkHeal'; readonly between: readonly [string, string] }

export interface Scenario {
  readonly name: string
  readonly seed: number
  readonly strategy: Strategy
  readonly discovery: Discovery
  readonly subnets: readonly SubnetSpec[]
  readonly network: NetworkSpec
  readonly processing: ProcessingSpec
  /** Nodes not held back by a join event start at a uniform random time in [0, startSpreadMs]. */
  readonly startSpreadMs: number
  readonly sampleEveryMs: number
  readonly samplePairsMax: number
  /** The run ends once nothing routing-related happened for this long after the last event. */
  readonly quietMs: number
  /** Virtual time limit: a run still busy then fails with NOT_CONVERGED. */
  readonly endMs: number
  /** Core timing options passed to every core (e.g. sendHoldForDialsMs). */
  readonly coreTiming: Readonly<Record<string, number>>
  /**
   * Core limits passed to every core (e.g. neighboursMax), over the simulator's own
   * (ecmpNextHopsMax 1). Absent keys keep the core's defaults.
   */
  readonly coreLimits: Readonly<Record<string, number>>
  readonly events: readonly ScenarioEvent[]
}

/** The cost model's defaults: a 2004-era cluster (see README, "Cost model"). */
export const DEFAULT_NETWORK: NetworkSpec = {
  intraSubnet: { latencyUs: 100, bandwidthMbps: 1000 },
  interSubnet: { latencyUs: 2000, bandwidthMbps: 100 },
  connectSetupUs: 1000,
  synTimeoutMs: 3000,
  crashDetectMs: 1000,
  firewall: 'drop',
}
export const DEFAULT_PROCESSING: ProcessingSpec = { perMessageUs: 50, perEntryUs: 2, perConnectionUs: 200, perRecordSignUs: 0, perRecordVerifyUs: 0 }

const CORE_TIMING_KEYS = ['coHubWaitMs', 'dialBackoffInitialMs', 'dialBackoffMaxMs', 'dialDeferMs', 'sendHoldForDialsMs', 'unreachableRetentionMs']
/**
 * Core limits a scenario may set, each an integer in [1, max]: the ones that shape a run at scale
 * (a gateway's neighbour cap, dial concurrency, the size of a send step and of a message).
 */
const CORE_LIMIT_MAX: Readonly<Record<string, number>> = {
  neighboursMax: 65_536,
  dialsInFlightMax: 65_536,
  entriesPerMessageMax: 65_536,
  sendStepEntriesMax: 1_073_741_824,
  lostRedialsPerSecondMax: 1_000_000,
}

type Json = unknown

function fail(field: string, why: string): never {
  throw new SimulationError('INVALID_SCENARIO', `scenario.${field}: ${why}`)
}

function isObject(value: Json): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function checkKeys(value: Record<string, Json>, field: string, allowed: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) fail(field === '' ? key : `${field}.${key}`, `unknown field (expected one of ${allowed.join(', ')})`)
  }
}

function num(value: Json, field: string, min: number, max: number, integer = false): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(field, `must be a number, got ${JSON.stringify(value)}`)
  if (integer && !Number.isInteger(value)) fail(field, `must be an integer, got ${value}`)
  if (value < min || value > max) fail(field, `must be in [${min}, ${max}], got ${value}`)
  return value
}

function optNum(obj: Record<string, Json>, key: string, field: string, fallback: number, min: number, max: number, integer = false): number {
  return obj[key] === undefined ? fallback : num(obj[key], `${field}.${key}`.replace(/^\./, ''), min, max, integer)
}

function str(value: Json, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 64) fail(field, `must be a non-empty string of at most 64 characters, got ${JSON.stringify(value)}`)
  return value
}

function oneOf<T extends string>(value: Json, field: string, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !allowed.includes(value as T)) fail(field, `must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`)
  return value as T
}

function linkClass(value: Json, field: string, fallback: LinkClass): LinkClass {
  if (value === undefined) return fallback
  if (!isObject(value)) fail(field, 'must be an object')
  checkKeys(value, field, ['latencyUs', 'bandwidthMbps'])
  return {
    latencyUs: optNum(value, 'latencyUs', field, fallback.latencyUs, 0, 10_000_000),
    bandwidthMbps: optNum(value, 'bandwidthMbps', field, fallback.bandwidthMbps, 0.001, 1_000_000),
  }
}

function selection(value: Json, field: string, subnetNames: readonly string[]): NodeSelection {
  if (Array.isArray(value)) {
    if (value.length === 0) fail(field, 'must name at least one node')
    return value.map((id, i) => str(id, `${field}[${i}]`))
  }
  if (!isObject(value)) fail(field, 'must be a list of node ids or {"fraction"|"count", "subnet"?}')
  checkKeys(value, field, ['fraction', 'count', 'subnet'])
  if (value.subnet !== undefined && !subnetNames.includes(value.subnet as string)) fail(`${field}.subnet`, `no subnet named ${JSON.stringify(value.subnet)}`)
  const subnet = value.subnet === undefined ? {} : { subnet: value.subnet as string }
  if ((value.fraction === undefined) === (value.count === undefined)) fail(field, 'needs exactly one of "fraction" and "count"')
  if (value.fraction !== undefined) return { fraction: num(value.fraction, `${field}.fraction`, 0, 1), ...subnet }
  return { count: num(value.count, `${field}.count`, 1, NODES_MAX, true), ...subnet }
}

function parseSubnets(input: Record<string, Json>): SubnetSpec[] {
  if (!Array.isArray(input.subnets) || input.subnets.length === 0) fail('subnets', 'must be a non-empty list')
  if (input.subnets.length > SUBNETS_MAX) fail('subnets', `at most ${SUBNETS_MAX} subnets (SUBNETS_MAX), got ${input.subnets.length}`)
  const subnets = input.subnets.map((s: Json, i: number): SubnetSpec => {
    const field = `subnets[${i}]`
    if (!isObject(s)) fail(field, 'must be an object {name, nodes, gateways}')
    checkKeys(s, field, ['name', 'nodes', 'gateways'])
    const nodes = num(s.nodes, `${field}.nodes`, 1, NODES_MAX, true)
    const gateways = s.gateways === undefined ? 1 : num(s.gateways, `${field}.gateways`, 0, nodes, true)
    return { name: str(s.name, `${field}.name`), nodes, gateways }
  })
  const names = subnets.map((s) => s.name)
  names.forEach((n, i) => {
    if (names.indexOf(n) !== i) fail(`subnets[${i}].name`, `duplicate subnet name ${JSON.stringify(n)}`)
    if (!/^[A-Za-z0-9_]+$/.test(n)) fail(`subnets[${i}].name`, 'must be letters, digits or _ (it prefixes node ids)')
  })
  const total = subnets.reduce((sum, s) => sum + s.nodes, 0)
  if (total > NODES_MAX) fail('subnets', `${total} nodes in all, at most ${NODES_MAX} (NODES_MAX)`)
  if (subnets.length > 1 && subnets.every((s) => s.gateways === 0)) fail('subnets', 'several subnets but no gateway: they could never reach each other')
  return subnets
}

/** `input[key]` as an object with only `allowed` keys ({} if absent). */
function section(input: Record<string, Json>, key: string, allowed: readonly string[]): Record<string, Json> {
  const value = input[key] ?? {}
  if (!isObject(value)) fail(key, 'must be an object')
  checkKeys(value, key, allowed)
  return value
}

function parseNetwork(network: Record<string, Json>, synTimeoutMs: number): NetworkSpec {
  return {
    intraSubnet: linkClass(network.intraSubnet, 'network.intraSubnet', DEFAULT_NETWORK.intraSubnet),
    interSubnet: linkClass(network.interSubnet, 'network.interSubnet', DEFAULT_NETWORK.interSubnet),
    connectSetupUs: optNum(network, 'connectSetupUs', 'network', DEFAULT_NETWORK.connectSetupUs, 0, 60_000_000),
    synTimeoutMs,
    crashDetectMs: optNum(network, 'crashDetectMs', 'network', DEFAULT_NETWORK.crashDetectMs, 0, 600_000),
    firewall: network.firewall === undefined ? 'drop' : oneOf(network.firewall, 'network.firewall', ['drop', 'reject'] as const),
  }
}

function parseProcessing(processing: Record<string, Json>): ProcessingSpec {
  const field = (key: keyof ProcessingSpec, max: number) => optNum(processing, key, 'processing', DEFAULT_PROCESSING[key], 0, max)
  return {
    perMessageUs: field('perMessageUs', 1_000_000),
    perEntryUs: field('perEntryUs', 1_000_000),
    perConnectionUs: field('perConnectionUs', 60_000_000),
    perRecordSignUs: field('perRecordSignUs', 1_000_000),
    perRecordVerifyUs: field('perRecordVerifyUs', 1_000_000),
  }
}

function parseEvents(input: Record<string, Json>, subnetNames: readonly string[]): ScenarioEvent[] {
  const eventsIn = input.events ?? []
  if (!Array.isArray(eventsIn)) fail('events', 'must be a list')
  if (eventsIn.length > SCENARIO_EVENTS_MAX) fail('events', `at most ${SCENARIO_EVENTS_MAX} events (SCENARIO_EVENTS_MAX), got ${eventsIn.length}`)
  const events = eventsIn.map((e: Json, i: number): ScenarioEvent => {
    const field = `events[${i}]`
    if (!isObject(e)) fail(field, 'must be an object')
    const type = oneOf(e.type, `${field}.type`, ['join', 'crash', 'leave', 'restart', 'linkFail', 'linkHeal'] as const)
    const atMs = num(e.atMs, `${field}.atMs`, 0, 86_400_000)
    if (type === 'linkFail' || type === 'linkHeal') {
      checkKeys(e, field, ['type', 'atMs', 'between'])
      if (!Array.isArray(e.between) || e.between.length !== 2) fail(`${field}.between`, 'must be a pair of node ids')
      return { atMs, type, between: [str(e.between[0], `${field}.between[0]`), str(e.between[1], `${field}.between[1]`)] }
    }
    checkKeys(e, field, ['type', 'atMs', 'nodes'])
    return { atMs, type, nodes: selection(e.nodes, `${field}.nodes`, subnetNames) }
  })
  for (let i = 1; i < events.length; i++) {
    if (events[i]!.atMs < events[i - 1]!.atMs) fail(`events[${i}].atMs`, 'events must be listed in time order')
  }
  return events
}

/** Checks a parsed scenario file and fills in defaults. Every error names the offending field. */
export function parseScenario(input: Json): Scenario {
  if (!isObject(input)) fail('(root)', 'must be a JSON object')
  checkKeys(input, '', ['name', 'description', 'seed', 'strategy', 'discovery', 'subnets', 'network', 'processing', 'startSpreadMs', 'sampleEveryMs', 'samplePairsMax', 'quietMs', 'endMs', 'coreTiming', 'coreLimits', 'events'])
  const name = input.name === undefined ? 'scenario' : str(input.name, 'name')
  const subnets = parseSubnets(input)
  const network = section(input, 'network', ['intraSubnet', 'interSubnet', 'connectSetupUs', 'synTimeoutMs', 'crashDetectMs', 'firewall'])
  const processing = section(input, 'processing', ['perMessageUs', 'perEntryUs', 'perConnectionUs', 'perRecordSignUs', 'perRecordVerifyUs'])
  const coreTimingIn = section(input, 'coreTiming', CORE_TIMING_KEYS)
  const coreTiming: Record<string, number> = {}
  // The core refuses a first back-off of 0 (a dial retried in a loop): refused here, naming the file's field.
  for (const key of Object.keys(coreTimingIn).sort()) coreTiming[key] = num(coreTimingIn[key], `coreTiming.${key}`, key === 'dialBackoffInitialMs' ? 1 : 0, 86_400_000, true)
  const coreLimitsIn = section(input, 'coreLimits', Object.keys(CORE_LIMIT_MAX))
  const coreLimits: Record<string, number> = {}
  for (const key of Object.keys(coreLimitsIn).sort()) coreLimits[key] = num(coreLimitsIn[key], `coreLimits.${key}`, 1, CORE_LIMIT_MAX[key]!, true)
  const synTimeoutMs = optNum(network, 'synTimeoutMs', 'network', DEFAULT_NETWORK.synTimeoutMs, 0, 600_000)
  const events = parseEvents(input, subnets.map((s) => s.name))
  const sendHold = coreTiming.sendHoldForDialsMs ?? 0
  const scenario: Scenario = {
    name,
    seed: input.seed === undefined ? 1 : num(input.seed, 'seed', 0, 2 ** 32 - 1, true),
    strategy: input.strategy === undefined ? 'optimized' : oneOf(input.strategy, 'strategy', STRATEGIES),
    discovery: input.discovery === undefined ? 'hubs' : oneOf(input.discovery, 'discovery', DISCOVERIES),
    subnets,
    network: parseNetwork(network, synTimeoutMs),
    processing: parseProcessing(processing),
    startSpreadMs: optNum(input, 'startSpreadMs', '', 0, 0, 3_600_000),
    sampleEveryMs: optNum(input, 'sampleEveryMs', '', 250, 1, 3_600_000),
    samplePairsMax: optNum(input, 'samplePairsMax', '', SAMPLE_PAIRS_DEFAULT, 1, SAMPLE_PAIRS_MAX, true),
    // Long enough that a batch of firewalled dials (which fail only after the SYN timeout), a
    // send hold and a dial held back (dialDeferMs, then dialled) cannot pass for the end of all activity.
    quietMs: optNum(input, 'quietMs', '', synTimeoutMs + sendHold + (coreTiming.dialDeferMs ?? 0) + 1000, 1, 3_600_000),
    endMs: optNum(input, 'endMs', '', 600_000, 1, 86_400_000),
    coreTiming,
    coreLimits,
    events,
  }
  // The baselines are given their connections or a master's table: a file's discovery would be
  // taken silently and the result say "all" (the command line's --discovery is refused the same way).
  if (input.discovery !== undefined && (scenario.strategy === 'offline' || scenario.strategy === 'master')) {
    fail('discovery', `has no effect with "strategy": "${scenario.strategy}" (its connections are given, not discovered); leave it out`)
  }
  if (scenario.quietMs <= sendHold) fail('quietMs', `must exceed coreTiming.sendHoldForDialsMs (${sendHold}), or held sends pass for quiet`)
  // An event past the end never happens: the run ended "not converged" waiting for it, unsaid.
  const late = events.findIndex((e) => e.atMs > scenario.endMs)
  if (late >= 0) fail(`events[${late}].atMs`, `${events[late]!.atMs} is after endMs (${scenario.endMs}): the run ends before it`)
  checkNodesCanMeet(scenario)
  return scenario
}

/**
 * With discovery through hubs a node knows only the gateways at start: with none, no node ever
 * met another, and the run reported "converged, tables match BFS" over an empty graph. Checked by
 * `parseScenario` and again by `Simulation` (a strategy or discovery given on the command line, a
 * scenario built in code).
 */
export function checkNodesCanMeet(scenario: Scenario): void {
  const discovers = scenario.discovery === 'hubs' && (scenario.strategy === 'optimized' || scenario.strategy === 'naive')
  const nodes = scenario.subnets.reduce((sum, s) => sum + s.nodes, 0)
  if (discovers && scenario.subnets.every((s) => s.gateways === 0) && nodes > 1) {
    fail('subnets', 'no gateway, and with "discovery": "hubs" nodes know only the gateways at start: none would ever meet another (give a subnet "gateways": 1, or "discovery": "all")')
  }
}

/**
 * The same scenario with `nodes` nodes in all, each subnet keeping its share (largest remainder;
 * every subnet keeps at least its gateways and one node).
 */
export function scaleScenario(scenario: Scenario, nodes: number): Scenario {
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > NODES_MAX) {
    throw new SimulationError('INVALID_SCENARIO', `--nodes must be an integer in [1, ${NODES_MAX}], got ${nodes}`)
  }
  const minimum = scenario.subnets.map((s) => Math.max(1, s.gateways))
  if (nodes < minimum.reduce((a, b) => a + b, 0)) {
    throw new SimulationError('INVALID_SCENARIO', `--nodes ${nodes} is too few for ${scenario.subnets.length} subnets and their gateways`)
  }
  const total = scenario.subnets.reduce((sum, s) => sum + s.nodes, 0)
  const exact = scenario.subnets.map((s) => (s.nodes * nodes) / total)
  const counts = exact.map((x, i) => Math.max(minimum[i]!, Math.floor(x)))
  let left = nodes - counts.reduce((a, b) => a + b, 0)
  const order = exact.map((x, i) => ({ i, r: x - Math.floor(x) })).sort((a, b) => b.r - a.r || a.i - b.i)
  for (let k = 0; left > 0; k++, left--) counts[order[k % order.length]!.i]!++
  for (let k = counts.length - 1; left < 0; k = (k + counts.length - 1) % counts.length) {
    if (counts[k]! > minimum[k]!) {
      counts[k]!--
      left++
    }
  }
  return { ...scenario, subnets: scenario.subnets.map((s, i) => ({ ...s, nodes: counts[i]! })) }
}
