import type { RouteCheckFailure } from '@phoenix-overlay/core'
import type { SimCounters } from './kernel.ts'
import type { TableCheck } from './measure.ts'
import type { Scenario } from './scenario.ts'

export interface Sample {
  readonly tMs: number
  /** Of the sampled ordered pairs of live nodes, the share whose route leads hop by hop to the destination. */
  readonly reachableFraction: number
  /** Mean hops over those reachable pairs (0 if none). */
  readonly meanHops: number
  readonly pairs: number
}

export interface SimResult {
  readonly scenario: string
  readonly strategy: string
  readonly discovery: string
  readonly seed: number
  readonly nodes: number
  readonly subnets: readonly { name: string; nodes: number; gateways: number }[]
  readonly converged: boolean
  /** Virtual time of the last routing activity (an update applied, a connection change, a master table applied). */
  readonly convergenceMs: number
  readonly lastScenarioEventMs: number
  readonly endedAtMs: number
  /** First sample after the last scenario event at which >= 90% of sampled pairs were reachable; null if none was. */
  readonly reach90Ms: number | null
  readonly messages: number
  readonly entries: number
  readonly bytes: number
  readonly bytesModel: string
  /** entries / (N·(N−1)): the paper's lower bound on entries for a full table at every node. */
  readonly entriesOverLowerBound: number
  readonly messagesLost: number
  /** Origin records signed and verified (0 unless processing.perRecordSignUs/VerifyUs are set). */
  readonly recordSigns: number
  readonly recordVerifications: number
  readonly dialsStarted: number
  readonly dialsFailed: number
  readonly connections: number
  /** Pairs of live nodes the firewall allows to connect that are not connected at the end. */
  readonly connectionsMissing: number
  readonly eventsSkipped: readonly string[]
  readonly eventsProcessed: number
  readonly samplingStopped: boolean
  readonly check: { readonly ok: boolean; readonly method: 'reference' | 'twin-classes' | 'none'; readonly failures: readonly RouteCheckFailure[] }
  readonly samples: readonly Sample[]
}

/** Milliseconds rounded to the microsecond, as the result file holds them (stable across platforms' float printing). */
export const round3 = (x: number): number => Math.round(x * 1000) / 1000

/** How the run ended, besides its counters: what `assembleResult` needs. */
export interface RunOutcome {
  readonly converged: boolean
  readonly endedAtMs: number
  readonly events: number
  readonly eventsSkipped: readonly string[]
  readonly connections: number
  readonly connectionsMissing: number
  readonly check: TableCheck
  readonly samples: readonly Sample[]
  readonly samplingStopped: boolean
  readonly bytesModel: string
}

/** The result file's content. Key order is the file's: a result is compared byte for byte. */
export function assembleResult(s: Scenario, nodes: number, c: SimCounters, o: RunOutcome): SimResult {
  const reach90 = o.samples.find((x) => x.tMs >= c.lastScenarioEventMs && x.reachableFraction >= 0.9)
  return {
    scenario: s.name,
    strategy: s.strategy,
    discovery: s.strategy === 'offline' || s.strategy === 'master' ? 'all' : s.discovery,
    seed: s.seed,
    nodes,
    subnets: s.subnets.map((x) => ({ name: x.name, nodes: x.nodes, gateways: x.gateways })),
    converged: o.converged,
    convergenceMs: round3(c.lastActivityMs),
    lastScenarioEventMs: round3(c.lastScenarioEventMs),
    endedAtMs: round3(o.endedAtMs),
    reach90Ms: reach90?.tMs ?? null,
    messages: c.messages,
    entries: c.entries,
    bytes: c.bytes,
    bytesModel: o.bytesModel,
    entriesOverLowerBound: nodes > 1 ? round3(c.entries / (nodes * (nodes - 1))) : 0,
    messagesLost: c.messagesLost,
    recordSigns: c.recordSigns,
    recordVerifications: c.recordVerifications,
    dialsStarted: c.dialsStarted,
    dialsFailed: c.dialsFailed,
    connections: o.connections,
    connectionsMissing: o.connectionsMissing,
    eventsSkipped: o.eventsSkipped,
    eventsProcessed: o.events,
    samplingStopped: o.samplingStopped,
    check: o.check,
    samples: o.samples,
  }
}
