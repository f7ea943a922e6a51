import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { subnetFirewallAllows } from '@phoenix-overlay/core'
import { Simulation, parseScenario } from '../src/index.ts'

// Random scenario files through the whole simulator: subnets, gateways, strategies, firewalls,
// start spreads, processing costs and events of every kind. Whatever the scenario, a run must end
// converged, with every table matching BFS on the final graph and no node left with work. Defects
// of the run's end (packages/sim/README.md, "When a run ends") and one of the core were found this way.
// Seed: fast-check's global one (vitest.setup.ts prints it; PHOENIX_SEED replays);
// PHOENIX_PROPERTY_RUNS for a deeper run.
const PROPERTY_RUNS = Number(process.env.PHOENIX_PROPERTY_RUNS ?? 60)

const subnet = fc.record({ nodes: fc.integer({ min: 2, max: 30 }), gateways: fc.integer({ min: 1, max: 3 }) })

const event = fc.oneof(
  fc.record({ atMs: fc.integer({ min: 50, max: 3_000 }), type: fc.constantFrom('crash', 'restart', 'leave'), pick: fc.nat(), fraction: fc.constantFrom(undefined, 0.1, 0.3, 0.5) }),
  fc.record({ atMs: fc.integer({ min: 50, max: 3_000 }), type: fc.constantFrom('linkFail', 'linkHeal'), pick: fc.nat(), other: fc.nat() }),
)

const scenarioArb = fc.record({
  seed: fc.integer({ min: 1, max: 1_000_000 }),
  subnets: fc.array(subnet, { minLength: 1, maxLength: 4 }),
  strategy: fc.constantFrom('optimized', 'optimized', 'naive', 'offline', 'master'),
  allAddresses: fc.boolean(),
  firewall: fc.constantFrom('drop', 'reject'),
  crashDetectMs: fc.constantFrom(200, 1_000),
  // The transport's dialDeferMs (the larger id of a pair holds its dial back); 0 as in the paper's runs.
  dialDeferMs: fc.constantFrom(0, 0, 30, 3_000),
  perMessageUs: fc.constantFrom(10, 50, 500),
  perEntryUs: fc.constantFrom(1, 2, 20, 200),
  perConnectionUs: fc.constantFrom(0, 200, 2_000),
  startSpreadMs: fc.constantFrom(0, 50, 500),
  sendHoldForDialsMs: fc.constantFrom(0, 50),
  coHubWaitMs: fc.constantFrom(undefined, 0, 50, 200),
  events: fc.array(event, { maxLength: 4 }),
})
type Drawn = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never

/** The scenario file a draw stands for (ids are `<subnet letter>-<index>`, as the simulator names them). */
function scenarioFile(d: Drawn): unknown {
  const subnets = d.subnets.map((s, i) => ({ name: String.fromCharCode(65 + i), nodes: s.nodes, gateways: Math.min(s.gateways, s.nodes) }))
  const ids = subnets.flatMap((s) => Array.from({ length: s.nodes }, (_, i) => `${s.name}-${String(i).padStart(3, '0')}`))
  const id = (n: number) => ids[n % ids.length]!
  // The master baseline assumes static processes (the paper's): it gets no events.
  const events =
    d.strategy === 'master'
      ? []
      : d.events.map((e) => ('other' in e ? { atMs: e.atMs, type: e.type, between: [id(e.pick), id(e.other)] } : { atMs: e.atMs, type: e.type, nodes: e.fraction === undefined ? [id(e.pick)] : { fraction: e.fraction } }))
  return {
    name: 'random',
    seed: d.seed,
    strategy: d.strategy,
    discovery: d.allAddresses && (d.strategy === 'optimized' || d.strategy === 'naive') ? 'all' : 'hubs',
    subnets,
    network: { firewall: d.firewall, crashDetectMs: d.crashDetectMs },
    processing: { perMessageUs: d.perMessageUs, perEntryUs: d.perEntryUs, perConnectionUs: d.perConnectionUs },
    startSpreadMs: d.startSpreadMs,
    coreTiming: { sendHoldForDialsMs: d.sendHoldForDialsMs, dialDeferMs: d.dialDeferMs, ...(d.coHubWaitMs === undefined ? {} : { coHubWaitMs: d.coHubWaitMs }) },
    events,
  }
}

/** Found by sweeps (the first: a link failure as the last event, the run ended before its ends noticed). */
const FOUND: Drawn[] = [
  {
    seed: 794148,
    subnets: [
      { nodes: 18, gateways: 1 },
      { nodes: 22, gateways: 2 },
    ],
    strategy: 'optimized',
    allAddresses: false,
    firewall: 'drop',
    crashDetectMs: 1_000,
    dialDeferMs: 0,
    perMessageUs: 500,
    perEntryUs: 20,
    perConnectionUs: 0,
    startSpreadMs: 500,
    sendHoldForDialsMs: 0,
    coHubWaitMs: undefined,
    // The link between B-013 and B-004 (ids 31 and 22 of 40: A has 18, then B).
    events: [{ atMs: 2_055, type: 'linkFail', pick: 31, other: 22 }],
  },
  {
    // A-013 crashed at 1,513 ms and restarted at 1,859 ms, before its neighbours noticed: each held
    // its lost route at an odd number, and none sent it there (core send.ts: trans sets claimed it
    // held it), so it never issued a newer one and every route to it stayed lost.
    seed: 44786,
    subnets: [
      { nodes: 25, gateways: 1 },
      { nodes: 40, gateways: 2 },
    ],
    strategy: 'optimized',
    allAddresses: true,
    firewall: 'reject',
    crashDetectMs: 1_000,
    dialDeferMs: 0,
    perMessageUs: 500,
    perEntryUs: 200,
    perConnectionUs: 200,
    startSpreadMs: 0,
    sendHoldForDialsMs: 0,
    coHubWaitMs: 50,
    events: [
      { atMs: 682, type: 'restart', pick: 41, fraction: undefined },
      { atMs: 795, type: 'restart', pick: 25, fraction: undefined },
      { atMs: 1_513, type: 'crash', pick: 0, fraction: 0.3 },
      { atMs: 1_859, type: 'restart', pick: 0, fraction: 0.1 },
    ],
  },
  {
    // The hub A-000's own record was in flight to A-001 when their link failed at 50 ms; A-000's
    // trans set had told the others A-001 held it, so none sent it: A-001 never had a route to A-000.
    seed: 1,
    subnets: [
      { nodes: 22, gateways: 1 },
      { nodes: 2, gateways: 1 },
    ],
    strategy: 'optimized',
    allAddresses: false,
    firewall: 'drop',
    crashDetectMs: 200,
    dialDeferMs: 0,
    perMessageUs: 10,
    perEntryUs: 1,
    perConnectionUs: 2_000,
    startSpreadMs: 0,
    sendHoldForDialsMs: 0,
    coHubWaitMs: undefined,
    events: [{ atMs: 50, type: 'linkFail', pick: 0, other: 1 }],
  },
  {
    // A-001 started after its link to the only hub had failed: nobody can ever learn of it, and the
    // check counted its pair with A-002 as discovery left undone (seed 590945187, in CI).
    seed: 1,
    subnets: [{ nodes: 3, gateways: 1 }],
    strategy: 'optimized',
    allAddresses: false,
    firewall: 'drop',
    crashDetectMs: 200,
    dialDeferMs: 0,
    perMessageUs: 10,
    perEntryUs: 1,
    perConnectionUs: 0,
    startSpreadMs: 500,
    sendHoldForDialsMs: 0,
    coHubWaitMs: undefined,
    events: [{ atMs: 201, type: 'linkFail', pick: 0, other: 1 }],
  },
  {
    // A link failed, and in the same millisecond A-001 left and was restarted: the notice of the
    // failed connection, due crashDetectMs later, belonged to its old incarnation and was dropped,
    // but the new one kept it as pending, so the run never found every node done and ran to endMs
    // "not converged" (found by CI's sweep, seed 631074533).
    seed: 1,
    subnets: [{ nodes: 2, gateways: 1 }],
    strategy: 'optimized',
    allAddresses: false,
    firewall: 'drop',
    crashDetectMs: 200,
    dialDeferMs: 0,
    perMessageUs: 10,
    perEntryUs: 1,
    perConnectionUs: 0,
    startSpreadMs: 0,
    sendHoldForDialsMs: 0,
    coHubWaitMs: undefined,
    events: [
      { atMs: 50, type: 'linkFail', pick: 0, other: 253447341 },
      { atMs: 50, type: 'leave', pick: 0, fraction: 0.5 },
      { atMs: 50, type: 'restart', pick: 0, fraction: 0.5 },
    ],
  },
]

interface ScenarioFile {
  readonly discovery: string
  readonly events: readonly { readonly type: string; readonly between?: readonly [string, string] }[]
}

/**
 * The allowed, unconnected pairs that include a node nobody can learn of: discovery through hubs,
 * never a connection in the whole run, and every gateway dead or behind a link that is failed at the end. It
 * knows only the gateways, and no node can hear of it (found by the sweep, seed 590945187: A-001
 * started after its link to the only hub, A-000, had failed).
 */
function pairsOfUnknowable(sim: Simulation, file: ScenarioFile, everConnected: ReadonlySet<string>): number {
  if (file.discovery !== 'hubs') return 0
  const key = (a: string, b: string) => (a < b ? `${a}|${b}` : `${b}|${a}`)
  const failed = new Set<string>()
  for (const e of file.events) {
    if (e.between === undefined) continue
    if (e.type === 'linkFail') failed.add(key(...e.between))
    else failed.delete(key(...e.between))
  }
  const live = sim.nodes.filter((n) => n.alive)
  const gateways = sim.nodes.filter((n) => n.gateway)
  // Never connected at all: a node that met anyone once was heard of, and must have been dialled.
  const alone = live.filter((n) => !everConnected.has(n.id) && gateways.every((g) => g === n || !g.alive || failed.has(key(n.id, g.id))))
  let pairs = 0
  for (const n of alone) {
    for (const m of live) {
      if (m === n || (alone.includes(m) && m.index < n.index) || failed.has(key(n.id, m.id))) continue
      if (subnetFirewallAllows(n, m) || subnetFirewallAllows(m, n)) pairs++
    }
  }
  return pairs
}

function check(d: Drawn): void {
  const file = scenarioFile(d)
  let scenario
  try {
    scenario = parseScenario(file)
  } catch {
    return // an event the validator refuses (e.g. a link between a node and itself): not a run
  }
  const everConnected = new Set<string>()
  const sim = new Simulation(scenario, {
    trace: (_atMs, line) => {
      const up = /^dial (\S+) -> (\S+) up$/.exec(line)
      if (up !== null) for (const id of [up[1]!, up[2]!]) everConnected.add(id)
    },
  })
  const result = sim.run()
  const busy = sim.nodes.filter((n) => n.alive && (n.pendingDown.size > 0 || n.process?.hasWork(sim.nowMs))).map((n) => n.id)
  // Discovery dials what it learns until it answers: no allowed pair is left unconnected (a
  // held-back dial included), except the pairs of a node nobody can learn of.
  const missing = d.strategy === 'optimized' || d.strategy === 'naive' ? result.connectionsMissing - pairsOfUnknowable(sim, file as ScenarioFile, everConnected) : 0
  const verdict = { converged: result.converged, failures: result.check.failures.slice(0, 3), busy, missing }
  expect(verdict, JSON.stringify(file)).toEqual({ converged: true, failures: [], busy: [], missing: 0 })
}

describe('random scenarios: every run ends converged, its tables matching BFS, no node with work left', () => {
  it('the scenario found by the sweep', () => {
    for (const d of FOUND) check(d)
  })

  it(`${PROPERTY_RUNS} random scenarios`, () => {
    fc.assert(fc.property(scenarioArb, check), { numRuns: PROPERTY_RUNS })
  }, 240_000)
})
