/**
 * A private network's relay under load, and its cipher memory, in one run.
 *
 * 1. Relay: a hub with a pre-shared key (`privateNetworkKey`, our protector) is the only gateway
 *    between subnets A and B (4 nodes each; a connection gater lets a node dial only its own
 *    subnet and gateways, by port). 8 flows, a_i → b_i and b_i → a_i, each keep `--window`
 *    acknowledged 1 MiB messages in flight for `--seconds`. Every node is its own OS process
 *    (`process.execPath` with tsx's loader). Reported: the hub's peak RSS (VmHWM), messages acked
 *    and failed (by code), and whether the hub stayed up; the same run without a key first, as the
 *    baseline.
 * 2. Cipher memory, `@libp2p/pnet` 3.0.27 (baseline) against ours, each in a fresh process with
 *    `--expose-gc`: what the cipher holds before and after 10,000 protected connections have been
 *    opened, used and closed (pnet: xsalsa20's WebAssembly slots and memory; ours: connections
 *    the protector counts open, and the heap after GC), and one 64 MiB write through each.
 *
 * `--with-libp2p-pnet` adds a third relay run whose nodes use `@libp2p/pnet`'s protector.
 *
 *   npx tsx packages/transport/bench/psk-relay.ts [--seconds 60] [--window 4] [--connections 10000] [--with-libp2p-pnet]
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { fail, scriptArgs } from '../../../tools/script-args.ts'
import { generateSwarmKey } from '../src/index.ts'
import { runCipherMemory, type CipherMemoryReport } from './psk-relay-cipher.ts'
import { runRelayNode, type FlowReport, type NodeConfig } from './psk-relay-node.ts'

const SCRIPT = fileURLToPath(import.meta.url)
const MESSAGE_BYTES = 1024 * 1024
const FLOWS_PER_SIDE = 4

/** A child process running one role of this script, spoken to over Node's IPC channel. */
interface Child {
  readonly process: ChildProcess
  readonly exited: Promise<{ code: number | null; signal: string | null }>
  request<T>(message: object): Promise<T>
}

function spawnChild(role: string, nodeArgs: string[] = []): Child {
  const child = spawn(process.execPath, [...nodeArgs, '--import', import.meta.resolve('tsx'), SCRIPT, '--role', role], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  return {
    process: child,
    exited,
    request: <T>(message: object) =>
      new Promise<T>((resolve, reject) => {
        const onExit = () => reject(new Error(`${role} (pid ${child.pid}) exited before answering`))
        child.once('exit', onExit)
        child.once('message', (reply) => {
          child.off('exit', onExit)
          resolve(reply as T)
        })
        child.send(message)
      }),
  }
}

/** Linux's peak resident set of a process (VmHWM), in bytes; undefined where /proc is absent. */
function peakRssBytes(pid: number): number | undefined {
  try {
    const kib = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
    return kib === undefined ? undefined : Number(kib) * 1024
  } catch {
    return undefined
  }
}

interface RelayResult {
  readonly reports: FlowReport[]
  readonly elapsedS: number
  readonly hubUp: boolean
  readonly hubExit: { code: number | null; signal: string | null }
  readonly hubPeakRssBytes: number | undefined
  readonly hubEndRssBytes: number | undefined
}

/** Starts the hub and the 8 members (with the key, or none), waits for full routes, runs the flows, stops everything. */
async function relay(seconds: number, window: number, protector: 'none' | 'ours' | 'libp2p-pnet'): Promise<RelayResult> {
  const psk = protector === 'none' ? {} : { psk: Buffer.from(generateSwarmKey()).toString('latin1'), protector }
  const base = 41000 + (process.pid % 400) * 10
  const placement: NodeConfig['placement'] = { [base]: { subnet: 'hub', gateway: true } }
  const labels = [...Array.from({ length: FLOWS_PER_SIDE }, (_, i) => `a${i}`), ...Array.from({ length: FLOWS_PER_SIDE }, (_, i) => `b${i}`)]
  labels.forEach((label, i) => (placement[base + 1 + i] = { subnet: label[0]!.toUpperCase(), gateway: false }))
  const hub = spawnChild('node')
  const { address: hubAddress } = await hub.request<{ address: string }>({ label: 'hub', port: base, ...psk, hubs: [], placement } satisfies NodeConfig)
  const members = labels.map(() => spawnChild('node'))
  await Promise.all(members.map((m, i) => m.request({ label: labels[i]!, port: base + 1 + i, ...psk, hubs: [hubAddress], placement } satisfies NodeConfig)))
  const routeErrors = await Promise.all(members.map((m, i) => m.request<{ error?: string }>({ routesTo: labels.filter((_, j) => j !== i) })))
  for (const [i, r] of routeErrors.entries()) if (r.error !== undefined) throw new Error(`${labels[i]}: ${r.error}`)
  const peer = (label: string) => (label.startsWith('a') ? `b${label.slice(1)}` : `a${label.slice(1)}`)
  const started = performance.now()
  const reports = await Promise.all(members.map((m, i) => m.request<FlowReport>({ flowTo: peer(labels[i]!), seconds, window, messageBytes: MESSAGE_BYTES })))
  const elapsedS = (performance.now() - started) / 1000
  const hubUp = hub.process.exitCode === null && hub.process.signalCode === null
  const hubPeakRssBytes = peakRssBytes(hub.process.pid!)
  const hubEndRssBytes = hubUp ? (await hub.request<{ rssBytes: number }>({ status: true })).rssBytes : undefined
  for (const c of [hub, ...members]) if (c.process.exitCode === null && c.process.connected) c.process.send({ exit: true })
  await Promise.all([hub, ...members].map((c) => c.exited))
  return { reports, elapsedS, hubUp, hubExit: await hub.exited, hubPeakRssBytes, hubEndRssBytes }
}

function printRelay(title: string, r: RelayResult, window: number): void {
  const sum = (f: (report: FlowReport) => number) => r.reports.reduce((s, report) => s + f(report), 0)
  const failedOf = (report: FlowReport) => Object.values(report.failed).reduce((a, b) => a + b, 0)
  const failed: Record<string, number> = {}
  for (const report of r.reports) for (const [code, n] of Object.entries(report.failed)) failed[code] = (failed[code] ?? 0) + n
  const MiB = (b: number | undefined) => (b === undefined ? 'n/a' : `${(b / 1024 / 1024).toFixed(1)} MiB`)
  console.log(`${title}: 8 flows of acknowledged ${MESSAGE_BYTES / 1024} KiB messages (window ${window} each) through the hub, ${r.elapsedS.toFixed(1)} s`)
  console.log(`  sent ${sum((x) => x.sent)}, acked ${sum((x) => x.acked)}, failed ${sum(failedOf)} ${JSON.stringify(failed)}, unsettled ${sum((x) => x.sent - x.acked - failedOf(x))}; per flow acked: ${r.reports.map((x) => x.acked).join(' ')}`)
  console.log(`  acked ${((sum((x) => x.acked) * MESSAGE_BYTES) / 1024 / 1024 / r.elapsedS).toFixed(1)} MiB/s across the hub`)
  console.log(`  hub: ${r.hubUp ? `stayed up (exit ${r.hubExit.code ?? r.hubExit.signal} when told to)` : `DIED (exit ${r.hubExit.code ?? r.hubExit.signal})`}, peak RSS ${MiB(r.hubPeakRssBytes)} (VmHWM), RSS at the end ${MiB(r.hubEndRssBytes)}`)
}

async function cipherMemory(connections: number): Promise<void> {
  console.log(`cipher memory: ${connections} protected connections opened, used (one small write each way) and closed, one at a time; then one 64 MiB write`)
  for (const protector of ['none', 'libp2p-pnet', 'ours'] as const) {
    const child = spawnChild('cipher', ['--expose-gc'])
    const report = await child.request<CipherMemoryReport>({ protector, connections })
    child.process.send({ exit: true })
    await child.exited
    console.log(`  ${protector.padEnd(11)} ${report.summary}`)
  }
}

const { values } = scriptArgs({
  options: { role: { type: 'string' }, seconds: { type: 'string', default: '60' }, window: { type: 'string', default: '4' }, connections: { type: 'string', default: '10000' }, 'with-libp2p-pnet': { type: 'boolean', default: false } },
}, { summary: 'a private network\'s relay under load, and its cipher memory' })
if (values.role === 'node') runRelayNode()
else if (values.role === 'cipher') runCipherMemory()
else {
  const seconds = Number(values.seconds)
  const window = Number(values.window)
  const connections = Number(values.connections)
  if (!(seconds > 0)) fail(`--seconds: must be a positive number, got ${values.seconds}`)
  if (!Number.isInteger(window) || window < 1) fail(`--window: must be a positive integer, got ${values.window}`)
  if (!Number.isInteger(connections) || connections < 1) fail(`--connections: must be a positive integer, got ${values.connections}`)
  await cipherMemory(connections)
  const plain = await relay(seconds, window, 'none')
  printRelay('relay without a key (baseline)', plain, window)
  const keyed = await relay(seconds, window, 'ours')
  printRelay('relay with --psk (ours)', keyed, window)
  if (values['with-libp2p-pnet'] === true) printRelay('relay with --psk (@libp2p/pnet 3.0.27)', await relay(seconds, window, 'libp2p-pnet'), window)
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? 'n/a' : (a / b).toFixed(2))
  const ackedOf = (r: RelayResult) => r.reports.reduce((s, x) => s + x.acked, 0) / r.elapsedS
  console.log(`with --psk / without: hub peak RSS x${ratio(keyed.hubPeakRssBytes, plain.hubPeakRssBytes)}, acked messages per second x${ratio(ackedOf(keyed), ackedOf(plain))}`)
}
