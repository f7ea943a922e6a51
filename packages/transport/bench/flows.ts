/**
 * Eight flows through one gateway (issue 19, item 3), one OS process per node on loopback: a
 * sender with eight flows, a gateway, eight receivers (`sender -> gateway -> r1..r8`, discovery
 * off), so the eight flows share the sender's one link to the gateway. Each flow sends
 * acknowledged 64 KiB messages, up to `--outstanding` (48: 3 MiB) unsettled at a time, as fast
 * as the overlay takes them; the flow to r1, the receiver that will stop, up to
 * `--stopped-outstanding` (4,096: 256 MiB), a heavy sender that would fill every queue on its
 * way (the gateway's 16 MiB toward r1 and the yamux window behind it) if nothing stopped it. Per mode (per-flow credit on, then off: `limits.flowWindowBytes` 0, the
 * link-level backpressure it replaced), in the same run:
 *
 * `--window-kib` sets the credit window (limits.flowWindowBytes; the protocol's is 1024).
 *
 * 1. all receivers read for `--phase-s`: each flow's throughput (at its receiver) and Jain's
 *    fairness index over the eight;
 * 2. r1's process is SIGSTOPped; once r1's flow, at its phase-1 rate, could have filled the ~40 MiB
 *    of queues and windows between its sender and r1 (at least `--settle-s`, at most 60 s), the
 *    other seven flows' throughput over `--phase-s`, as a ratio to their own in phase 1 (the
 *    goal: >= 0.90);
 * 3. r1 continues, the sender stops sending and waits until every send settled; then per flow
 *    acknowledged and received counts: an acknowledged message its receiver does not have is lost.
 *
 * Liveness is off (deadAfterSilenceMs longer than the run), so only credit or backpressure acts
 * on the stopped receiver, not its link closing for silence.
 *
 *   node_modules/.bin/tsx packages/transport/bench/flows.ts [--phase-s 6] [--settle-s 3] [--outstanding 48] [--stopped-outstanding 4096] [--modes credit,no-credit] [--window-kib 1024]
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { fail, scriptArgs } from '../../../tools/script-args.ts'
import type { FlowsNodeConfig, FlowsNodeStatus } from './flows-node.ts'

const { values } = scriptArgs({
  options: {
    'phase-s': { type: 'string', default: '6' },
    'settle-s': { type: 'string', default: '3' },
    outstanding: { type: 'string', default: '48' },
    'stopped-outstanding': { type: 'string', default: '4096' },
    flows: { type: 'string', default: '8' },
    modes: { type: 'string', default: 'credit,no-credit' },
    'window-kib': { type: 'string', default: '1024' },
  },
}, { summary: 'eight flows through one gateway, one process per node: fairness, and the others when one receiver stops' })
const phaseMs = Number(values['phase-s']) * 1_000
const settleMs = Number(values['settle-s']) * 1_000
const outstandingMax = Number(values.outstanding)
const stoppedOutstandingMax = Number(values['stopped-outstanding'])
const flowCount = Number(values.flows)
const modes = values.modes.split(',')
const windowBytes = Number(values['window-kib']) * 1024
if (!(windowBytes > 0)) fail('--window-kib must be positive')
if (!(phaseMs > 0) || !(settleMs >= 0) || !(outstandingMax >= 1) || !(stoppedOutstandingMax >= 1) || !(flowCount >= 2)) fail('--phase-s, --outstanding must be positive, --settle-s ≥ 0, --flows ≥ 2')
for (const mode of modes) if (mode !== 'credit' && mode !== 'no-credit') fail(`--modes: "${mode}" is neither credit nor no-credit`)

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const NODE = fileURLToPath(new URL('./flows-node.ts', import.meta.url))
const PAYLOAD_BYTES = 64 * 1024
const MiB = 1024 * 1024
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** One bench node in its own process (spawned with this Node directly, so signals reach it). */
class Proc {
  readonly child: ChildProcess
  address = ''
  status: FlowsNodeStatus | undefined
  private output = ''
  readonly ready: Promise<void>
  private readonly exited: Promise<void>

  constructor(config: FlowsNodeConfig) {
    this.child = spawn(process.execPath, ['--import', 'tsx', NODE, JSON.stringify(config)], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] })
    this.exited = new Promise((resolve) => this.child.on('exit', () => resolve()))
    this.ready = new Promise((resolve, reject) => {
      this.child.stdout!.on('data', (chunk: Buffer) => {
        for (const line of chunk.toString('utf8').split('\n')) {
          const ready = /^READY \S+ (\S+)/.exec(line)
          if (ready !== null) {
            this.address = ready[1]!
            resolve()
          }
          if (line.startsWith('STATUS ')) this.status = JSON.parse(line.slice(7)) as FlowsNodeStatus
        }
      })
      this.child.stderr!.on('data', (chunk: Buffer) => (this.output = (this.output + chunk.toString('utf8')).slice(-4_000)))
      void this.exited.then(() => reject(new Error(`a bench node exited: ${this.output}`)))
    })
  }

  signal(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) process.kill(this.child.pid!, signal)
  }

  async kill(): Promise<void> {
    this.signal('SIGKILL')
    this.signal('SIGCONT')
    await this.exited
  }
}

async function until(what: string, condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await sleep(50)
  }
}

/** Jain's fairness index: (Σx)² / (n·Σx²); 1 when all are equal, 1/n when one takes everything. */
const jain = (xs: number[]) => xs.reduce((a, b) => a + b, 0) ** 2 / (xs.length * xs.reduce((a, b) => a + b * b, 0))

interface ModeResult {
  mode: string
  fillMs: number
  before: number[]
  during: number[]
  jain: number
  othersRatio: number
  othersMinRatio: number
  stoppedRefused: number
  stoppedWaitingMiB: number
  acked: number
  lost: number
  failed: Record<string, number>
}

async function runMode(mode: string): Promise<ModeResult> {
  const names = Array.from({ length: flowCount }, (_, i) => `r${i + 1}`)
  const base = {
    listen: '/ip4/127.0.0.1/tcp/0',
    limits: { flowWindowBytes: mode === 'credit' ? windowBytes : 0 },
    timing: { probeAfterIdleMs: 600_000, deadAfterSilenceMs: 1_200_000 },
    payloadBytes: PAYLOAD_BYTES,
    outstandingMax: Object.fromEntries(names.map((name, i) => [name, i === 0 ? stoppedOutstandingMax : outstandingMax])),
    reportEveryMs: 250,
  }
  const procs: Proc[] = []
  try {
    const gateway = new Proc({ ...base, hubs: [], names: ['gateway'], flows: [] })
    procs.push(gateway)
    await gateway.ready
    const receivers = names.map((name) => new Proc({ ...base, hubs: [gateway.address], names: [name], flows: [] }))
    procs.push(...receivers)
    await Promise.all(receivers.map((r) => r.ready))
    const sender = new Proc({ ...base, hubs: [gateway.address], names: ['sender'], flows: names })
    procs.push(sender)
    await sender.ready
    await until('every flow delivers', () => receivers.every((r) => (r.status?.received ?? 0) > 0), 120_000)
    await sleep(2_000)
    const counts = () => receivers.map((r) => r.status!.received)
    const rates = (from: number[], to: number[], ms: number) => to.map((n, i) => ((n - from[i]!) * PAYLOAD_BYTES) / MiB / (ms / 1_000))

    let at = counts()
    let t = performance.now()
    await sleep(phaseMs)
    const before = rates(at, counts(), performance.now() - t)

    const stopped = receivers[0]!
    stopped.signal('SIGSTOP')
    // Long enough for the stopped flow, at its own rate, to fill what lies between its sender and
    // its receiver without credit (the gateway's 16 MiB queue, a 16 MiB yamux window, socket
    // buffers: ~40 MiB): only then does a shared link block. At least --settle-s, at most 60 s.
    const fillMs = Math.min(60_000, Math.max(settleMs, (40 / Math.max(before[0]!, 0.1)) * 1_000))
    await sleep(fillMs)
    at = counts()
    t = performance.now()
    await sleep(phaseMs)
    const during = rates(at, counts(), performance.now() - t)
    const stoppedFlow = sender.status!.flows[names[0]!]!
    const stoppedRefused = stoppedFlow.refused
    const stoppedWaitingMiB = sender.status!.creditWaitingBytes / MiB
    stopped.signal('SIGCONT')

    sender.child.stdin!.write('stop\n')
    await until('every send settles', () => sender.status?.settled === true, 180_000)
    await sleep(1_000)
    const flows = sender.status!.flows
    let acked = 0
    let lost = 0
    const failed: Record<string, number> = {}
    names.forEach((name, i) => {
      const flow = flows[name]!
      acked += flow.acked
      lost += Math.max(0, flow.acked - receivers[i]!.status!.received)
      for (const [why, n] of Object.entries(flow.failed)) failed[why] = (failed[why] ?? 0) + n
    })
    const ratios = during.slice(1).map((d, i) => d / before[i + 1]!)
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
    return {
      mode,
      fillMs,
      before,
      during,
      jain: jain(before),
      othersRatio: sum(during.slice(1)) / sum(before.slice(1)),
      othersMinRatio: Math.min(...ratios),
      stoppedRefused,
      stoppedWaitingMiB,
      acked,
      lost,
      failed,
    }
  } finally {
    await Promise.all(procs.map((p) => p.kill()))
  }
}

const results: ModeResult[] = []
for (const mode of modes) {
  const result = await runMode(mode)
  results.push(result)
  const f = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(' ')
  console.log(`${mode}: per-flow MiB/s, all reading: ${f(result.before)}`)
  console.log(`${mode}: per-flow MiB/s, r1 stopped:   ${f(result.during)} (measured from ${(result.fillMs / 1_000).toFixed(1)} s after the stop)`)
}
console.log('')
console.log('| mode | total MiB/s | Jain (all reading) | 7 others, r1 stopped (sum; worst flow) | r1 sender: QUEUE_FULL; waiting for credit | acked | acked lost | other failures |')
console.log('|---|---|---|---|---|---|---|---|')
for (const r of results) {
  const total = r.before.reduce((a, b) => a + b, 0)
  console.log(`| ${r.mode} | ${total.toFixed(1)} | ${r.jain.toFixed(3)} | ${r.othersRatio.toFixed(2)} x; ${r.othersMinRatio.toFixed(2)} x | ${r.stoppedRefused}; ${r.stoppedWaitingMiB.toFixed(1)} MiB | ${r.acked} | ${r.lost} | ${JSON.stringify(r.failed)} |`)
}
