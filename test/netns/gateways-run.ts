/**
 * Several gateways per site, measured (issue "Real sites", item 2; test/netns/SITES.md): two sites
 * A and B, each two gateways (tc limits each gateway's WAN link, so gateways are the bottleneck)
 * and a few hosts; eight flows, each (A host, name of a B host), send acknowledged messages the
 * whole run, a window of them at a time.
 *
 *   phase 1 (two gateways per site)   kill A0   phase 2   kill B0   phase 3 (one gateway per site)
 *
 * Reported: goodput in phases 1 and 3 (their ratio is the gain of the second gateway, measured in
 * the same run), the bytes each gateway forwarded in phase 1, and for each kill how long the flows
 * it cut took to resume; over the whole run, every acknowledged message must have arrived and
 * every other send must have been refused with a code (none left pending).
 *
 * Node keys come from fixed seeds, so the ids, hence the per-flow split, are the same every run.
 * Nodes have discovery off: each dials only its hubs (hosts their site's gateways, B's gateways
 * A's gateways, over the `ports` firewall), which makes exactly the graph of SITES.md.
 */
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import type { RouteView } from '@phoenix-overlay/core'
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { keyOf, type Arrival, type SendRecord, type WorkerConfig } from './gateways-worker.ts'
import { buildSites, type SiteNode, type Sites } from './sites.ts'
import { NODE_TS_FLAGS } from '../../tools/node-ts.ts'

const WORKER = fileURLToPath(new URL('./gateways-worker.ts', import.meta.url))
const PORT = 7000
/** Flows of every run: names n0..n7, each sent to by one A host (the issue's "8 concurrent flows"). */
const FLOWS = 8

export interface GatewaysOptions {
  /** tc rate of each gateway's WAN link. */
  readonly rateMbit: number
  /** Length of each of the three phases. */
  readonly phaseMs: number
  readonly payloadBytes: number
  /** Sends of one flow awaiting their ack at once. */
  readonly window: number
  readonly ackTimeoutMs: number
  /** Hosts per site besides the two gateways (1, 2, 4 or 8): A host i sends to names n_k, k ≡ i (mod hosts); B host j owns the same names. */
  readonly hosts: number
  readonly prefix: string
  readonly log?: (line: string) => void
}

export interface Failover {
  readonly killed: string
  /** Flows whose messages went through the killed gateway just before. */
  readonly flowsCut: number
  /** Longest, over those flows, from the kill to the arrival of the first message sent after it. */
  readonly resumeMs: number
}

export interface GatewaysReport {
  readonly twoGatewaysMbit: number
  readonly oneGatewayMbit: number
  readonly ratio: number
  /** Data frames each gateway passed on during phase 1. */
  readonly forwardedPhase1: Record<string, number>
  readonly failovers: readonly Failover[]
  readonly sends: number
  readonly acked: number
  /** Acknowledged, yet not among the arrivals: must be 0. */
  readonly ackedLost: number
  /** Sends refused, by error code. */
  readonly refused: Record<string, number>
  /** Arrivals out of sequence within a flow. */
  readonly outOfOrder: number
}

interface Worker {
  readonly node: SiteNode
  readonly id: string
  readonly child: ChildProcess
  /** Whole JSON lines printed so far (bounded by the run: a few per command). */
  readonly lines: string[]
  /** The tail of stderr, for error messages. */
  readonly errors: string[]
  /** The first line of `event` printed from now on. */
  next(event: string, timeoutMs: number): Promise<string>
  kill(): Promise<void>
}

/** A worker in `node`'s namespace, with a stdin for commands (processes.ts's have none). */
function spawnWorker(node: SiteNode, config: WorkerConfig): Omit<Worker, 'id'> {
  const child = spawn('ip', ['netns', 'exec', node.namespace, process.execPath, ...NODE_TS_FLAGS, WORKER, JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'pipe'] })
  // Whole lines only: an arrivals report is one long line, delivered in many chunks.
  const lines: string[] = []
  const errors: string[] = []
  let partial = ''
  child.stdout!.on('data', (d: Buffer) => {
    const parts = (partial + d.toString('utf8')).split('\n')
    partial = parts.pop()!
    lines.push(...parts.filter((l) => l.startsWith('{')))
  })
  child.stderr!.on('data', (d: Buffer) => {
    errors.push(d.toString('utf8'))
    if (errors.length > 20) errors.shift()
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return {
    node,
    child,
    lines,
    errors,
    async next(event, timeoutMs) {
      const seen = lines.length
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const line = lines.slice(seen).find((l) => l.includes(`"event":"${event}"`))
        if (line !== undefined) return line
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${node.id} exited before ${event}: ${errors.join('').slice(-2000)}`)
        if (Date.now() > deadline) throw new Error(`${node.id}: no ${event} within ${timeoutMs} ms: ${errors.join('').slice(-2000)}`)
        await sleep(20)
      }
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGKILL')
      await exited
    },
  }
}

export async function runGateways(options: GatewaysOptions): Promise<GatewaysReport> {
  const log = options.log ?? (() => undefined)
  if (![1, 2, 4, 8].includes(options.hosts)) throw new Error(`hosts must be 1, 2, 4 or 8 (it divides the ${FLOWS} flows), got ${options.hosts}`)
  const spec = (name: string) => ({ name, size: 2 + options.hosts, gateways: 2, inbound: 'ports' as const, ports: [PORT, PORT] as const, gatewayRateMbit: options.rateMbit })
  const sites = await buildSites([spec('A'), spec('B')], { prefix: options.prefix })
  const workers = new Map<string, Worker>()
  try {
    const hosts = Array.from({ length: options.hosts }, (_, i) => String(2 + i))
    await startWorkers(sites, workers, hosts, log)
    await converge(workers, hosts)
    return await measure(workers, hosts, options, log)
  } finally {
    for (const w of workers.values()) await w.kill()
    await sites.destroy()
  }
}

const lan = (n: SiteNode) => `/ip4/${n.addresses.find((a) => a.class === 'private-ipv4')!.ip}/tcp/${PORT}`
const wan = (n: SiteNode) => `/ip4/${n.wan!.ipv4}/tcp/${PORT}`

/** Starts A's gateways first (B's dial them), then B's, then the hosts. */
async function startWorkers(sites: Sites, workers: Map<string, Worker>, hosts: readonly string[], log: (line: string) => void): Promise<void> {
  const n = (id: string) => sites.node(id)
  const configs: Record<string, Omit<WorkerConfig, 'keySeed'>> = {
    A0: { listen: [lan(n('A0')), wan(n('A0'))], hubs: [], names: [] },
    A1: { listen: [lan(n('A1')), wan(n('A1'))], hubs: [lan(n('A0'))], names: [] },
    B0: { listen: [lan(n('B0')), wan(n('B0'))], hubs: [wan(n('A0')), wan(n('A1'))], names: [] },
    B1: { listen: [lan(n('B1')), wan(n('B1'))], hubs: [lan(n('B0')), wan(n('A0')), wan(n('A1'))], names: [] },
  }
  for (const [i, h] of hosts.entries()) {
    configs[`A${h}`] = { listen: [lan(n(`A${h}`))], hubs: [lan(n('A0')), lan(n('A1'))], names: [] }
    configs[`B${h}`] = { listen: [lan(n(`B${h}`))], hubs: [lan(n('B0')), lan(n('B1'))], names: namesOf(i, hosts.length) }
  }
  const start = async (id: string) => {
    const config: WorkerConfig = { keySeed: `phoenix-gateways-${id}`, ...configs[id]! }
    const worker = spawnWorker(n(id), config)
    const up = JSON.parse(await worker.next('up', 60_000)) as { id: string }
    const expected = peerIdFromPrivateKey(await keyOf(config.keySeed)).toString()
    if (up.id !== expected) throw new Error(`${id}: peer id ${up.id}, expected ${expected} from its key seed`)
    workers.set(id, { ...worker, id: up.id })
    log(`${id} up: ${up.id}`)
  }
  for (const group of [['A0', 'A1'], ['B0', 'B1'], hosts.map((h) => `A${h}`), hosts.map((h) => `B${h}`)]) await Promise.all(group.map(start))
}

/** Sends a command to a worker and returns its next answer of `event`. */
async function ask<T>(w: Worker, command: object, event: string, timeoutMs = 60_000): Promise<T> {
  const answer = w.next(event, timeoutMs)
  writeTo(w, command)
  return JSON.parse(await answer) as T
}

function writeTo(w: Worker, command: object): void {
  w.child.stdin!.write(`${JSON.stringify(command)}\n`)
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)))

/**
 * Until every host and gateway has two next hops toward every host of the other site (hosts: their
 * gateways; gateways: the other site's). Not only the hosts: a gateway that gains its second next
 * hop during the run moves the flows that hash to it while their messages are in flight on the
 * first, and a moved flow's messages can then arrive out of order.
 */
async function converge(workers: Map<string, Worker>, hosts: readonly string[]): Promise<void> {
  const deadline = Date.now() + 60_000
  for (;;) {
    const missing: string[] = []
    for (const from of ['A0', 'A1', 'B0', 'B1', ...hosts.flatMap((h) => [`A${h}`, `B${h}`])]) {
      const routes = (await ask<{ routes: RouteView[] }>(workers.get(from)!, { cmd: 'routes' }, 'routes')).routes
      for (const k of hosts) {
        const to = `${from.startsWith('A') ? 'B' : 'A'}${k}`
        const r = routes.find((x) => x.destination === workers.get(to)!.id)
        if (r === undefined || !r.reachable || r.alternates.length !== 2) missing.push(`${from}->${to}: ${r === undefined ? 'none' : `${r.nhops} hops via ${r.alternates.length}`}`)
      }
    }
    if (missing.length === 0) return
    if (Date.now() > deadline) throw new Error(`routes with two next hops missing after 60 s: ${missing.slice(0, 4).join('; ')}`)
    await sleep(500)
  }
}

/** The names host i of `hosts` sends to (an A host) or owns (a B host). */
const namesOf = (i: number, hosts: number) => Array.from({ length: FLOWS / hosts }, (_, j) => `n${i + j * hosts}`)

async function measure(workers: Map<string, Worker>, hosts: readonly string[], o: GatewaysOptions, log: (line: string) => void): Promise<GatewaysReport> {
  const w = (id: string) => workers.get(id)!
  const gateways = ['A0', 'A1', 'B0', 'B1']
  const forwarded = async () => Object.fromEntries(await Promise.all(gateways.map(async (g) => [g, (await ask<{ forwarded: number }>(w(g), { cmd: 'metrics' }, 'metrics')).forwarded] as const)))
  const t0 = Date.now()
  const untilMs = t0 + 3 * o.phaseMs
  const senders = hosts.map((h) => w(`A${h}`))
  const sent = senders.map((s, i) => ask<{ records: SendRecord[] }>(s, { cmd: 'send', flows: namesOf(i, hosts.length), untilMs, payloadBytes: o.payloadBytes, window: o.window, ackTimeoutMs: o.ackTimeoutMs }, 'sent', 3 * o.phaseMs + 4 * o.ackTimeoutMs + 30_000))
  const warmupMs = o.phaseMs / 4
  await sleep(t0 + warmupMs - Date.now())
  const before = await forwarded()
  await sleep(t0 + o.phaseMs - 100 - Date.now())
  const after = await forwarded()
  const forwardedPhase1 = Object.fromEntries(gateways.map((g) => [g, after[g]! - before[g]!]))
  log(`phase 1 data frames forwarded per gateway: ${JSON.stringify(forwardedPhase1)}`)
  await sleep(t0 + o.phaseMs - Date.now())
  const killA = Date.now()
  await w('A0').kill()
  log('A0 killed')
  await sleep(t0 + 2 * o.phaseMs - Date.now())
  const killB = Date.now()
  await w('B0').kill()
  log('B0 killed')
  const records = (await Promise.all(sent)).flatMap((r, i) => r.records.map((x) => ({ ...x, flow: `${senders[i]!.id} ${x.flow}` })))
  const arrivals = (await Promise.all(hosts.map((h) => ask<{ arrivals: Arrival[] }>(w(`B${h}`), { cmd: 'arrivals' }, 'arrivals')))).flatMap((r) => r.arrivals)
  const goodput = (fromMs: number, toMs: number) => (arrivals.filter((a) => a.atMs >= fromMs && a.atMs < toMs).reduce((sum, a) => sum + a.bytes, 0) * 8) / ((toMs - fromMs) / 1000) / 1e6
  const twoGatewaysMbit = goodput(t0 + warmupMs, t0 + o.phaseMs)
  const oneGatewayMbit = goodput(t0 + 2 * o.phaseMs + warmupMs, untilMs)
  return {
    twoGatewaysMbit,
    oneGatewayMbit,
    ratio: twoGatewaysMbit / oneGatewayMbit,
    forwardedPhase1,
    failovers: [failover('A0', killA, records, arrivals, o.ackTimeoutMs), failover('B0', killB, records, arrivals, o.ackTimeoutMs)],
    ...accounting(records, arrivals),
  }
}

/** How long the flows a kill cut took to resume: from the kill to the first arrival of a message sent after it. */
function failover(killed: string, killMs: number, records: readonly SendRecord[], arrivals: readonly Arrival[], ackTimeoutMs: number): Failover {
  const cut = new Set(records.filter((r) => r.outcome !== 'acked' && r.sentAtMs < killMs && r.atMs >= killMs && r.atMs <= killMs + 2 * ackTimeoutMs).map((r) => r.flow))
  let resumeMs = 0
  for (const flow of new Set(records.map((r) => r.flow))) {
    const first = arrivals.filter((a) => a.flow === flow && a.sentAtMs >= killMs).reduce((m, a) => Math.min(m, a.atMs), Number.POSITIVE_INFINITY)
    resumeMs = Math.max(resumeMs, first - killMs)
  }
  return { killed, flowsCut: cut.size, resumeMs }
}

/** Acked yet missing, refused by code, and order within each flow. */
function accounting(records: readonly SendRecord[], arrivals: readonly Arrival[]): Pick<GatewaysReport, 'sends' | 'acked' | 'ackedLost' | 'refused' | 'outOfOrder'> {
  const arrived = new Set(arrivals.map((a) => `${a.flow}#${a.seq}`))
  const acked = records.filter((r) => r.outcome === 'acked')
  const refused: Record<string, number> = {}
  for (const r of records) if (r.outcome !== 'acked') refused[r.outcome] = (refused[r.outcome] ?? 0) + 1
  let outOfOrder = 0
  const last = new Map<string, number>()
  for (const a of [...arrivals].sort((x, y) => x.atMs - y.atMs)) {
    if ((last.get(a.flow) ?? -1) >= a.seq) outOfOrder++
    last.set(a.flow, a.seq)
  }
  return { sends: records.length, acked: acked.length, ackedLost: acked.filter((r) => !arrived.has(`${r.flow}#${r.seq}`)).length, refused, outOfOrder }
}
