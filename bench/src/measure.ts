/**
 * The two measurements of one path and message size: throughput (a byte budget sent as fast as
 * backpressure allows, timed from the sender's first send to the receiver's last byte, with
 * every process's CPU time), and one-way latency (stamped messages one at a time, so the path is
 * quiet). All processes read the same monotonic clock, so one-way times are exact to the clock.
 */
import type { Target, Usage } from './bench-node.ts'
import { roleOf, type Role } from './paths.ts'
import type { NodeHandle } from './rpc.ts'

const MiB = 1024 * 1024
/** How often each process samples its resident memory during a memory run (throughput runs do not sample). */
export const RSS_SAMPLE_MS = 50
/** A receiver that has not had everything after this long has failed (nothing is that slow on loopback). */
const RATE_FLOOR_BYTES_PER_S = 64 * 1024

export interface Throughput {
  readonly bytes: number
  readonly seconds: number
  readonly mibPerS: number
  /** CPU seconds per MiB moved, per role (middle: the mean over the middle nodes); undefined when roles share a process. */
  readonly cpuSPerMiB: Partial<Record<Role, number>> & { total: number }
  /** Each node's usage, sender first. */
  readonly usage: Usage[]
}

/** Opens the path: the sender reaches the receiver once, so later timings exclude set-up. */
export async function openPath(nodes: readonly NodeHandle[], target: Target): Promise<void> {
  const receiver = nodes[nodes.length - 1]!
  await receiver.call('arm', { messages: 1, latencies: false })
  const first = receiver.call('collect', { timeoutMs: 30_000 })
  await nodes[0]!.call('open', target)
  await explained(nodes[0]!, first)
}

/**
 * What the receiver collected; if it came up short, the error says why as far as the sender
 * knows: how many of its sends were refused on the way, by reason (a receiver whose inbox was
 * full says `receiver-too-slow`), or that it heard of none (lost without a word: a bug).
 */
export async function explained<T>(sender: NodeHandle, collected: Promise<T>): Promise<T> {
  try {
    return await collected
  } catch (error) {
    const refusals = await sender.call('refusals').catch(() => ({}))
    const heard = Object.entries(refusals).map(([reason, count]) => `${count} ${reason}`)
    const why = heard.length > 0 ? `the sender heard of ${heard.join(', ')}` : 'the sender heard of no refusal'
    throw new Error(`${(error as Error).message}; ${why}`)
  }
}

/**
 * `options.sampleRss`: sample every process's RSS during the run (for the peak);
 * `options.profile`: write a CPU profile of node `profile.node` over the run to `profile.file`.
 */
export async function measureThroughput(nodes: readonly NodeHandle[], messageBytes: number, budgetBytes: number, options: { sampleRss?: boolean; profile?: { node: number; file: string } } = {}): Promise<Throughput> {
  const { profile } = options
  const [sender, receiver] = [nodes[0]!, nodes[nodes.length - 1]!]
  const messages = Math.max(1, Math.round(budgetBytes / messageBytes))
  const bytes = messages * messageBytes
  await Promise.all(nodes.map((n, i) => n.call('mark', { rssSampleMs: options.sampleRss === true ? RSS_SAMPLE_MS : 0, ...(profile?.node === i ? { profileFile: profile.file } : {}) })))
  await receiver.call('arm', { messages, latencies: false })
  const collected = receiver.call('collect', { timeoutMs: 30_000 + (bytes / RATE_FLOOR_BYTES_PER_S) * 1000 })
  // Handled at once: if the receiver gives up while the sender still sends, the rejection waits here.
  collected.catch(() => undefined)
  const { startNs } = await sender.call('send', { messageBytes, messages })
  const got = await explained(sender, collected)
  const usage = await Promise.all(nodes.map((n) => n.call('report')))
  if (got.bytes !== bytes) throw new Error(`receiver got ${got.bytes} bytes, expected ${bytes}`)
  const seconds = Number(got.endNs - startNs) / 1e9
  return { bytes, seconds, mibPerS: bytes / MiB / seconds, cpuSPerMiB: cpuPerRole(nodes, usage, bytes / MiB), usage }
}

function cpuPerRole(nodes: readonly NodeHandle[], usage: readonly Usage[], mib: number): Throughput['cpuSPerMiB'] {
  const sharedProcess = new Set(nodes.map((n) => n.pid)).size < nodes.length
  if (sharedProcess) return { total: usage[0]!.cpuUs / 1e6 / mib }
  const byRole: Record<Role, number[]> = { sender: [], middle: [], receiver: [] }
  usage.forEach((u, i) => byRole[roleOf(i, nodes.length)].push(u.cpuUs / 1e6 / mib))
  const mean = (xs: number[]) => (xs.length === 0 ? undefined : xs.reduce((a, b) => a + b, 0) / xs.length)
  const result: Throughput['cpuSPerMiB'] = { total: usage.reduce((a, u) => a + u.cpuUs, 0) / 1e6 / mib }
  for (const role of ['sender', 'middle', 'receiver'] as const) {
    const value = mean(byRole[role])
    if (value !== undefined) result[role] = value
  }
  return result
}

export interface Latency {
  readonly samplesUs: number[]
  readonly medianUs: number
  readonly p99Us: number
}

/**
 * One message at a time: each is sent only once the previous one has arrived and `gapMs` more
 * have passed, so the path is quiet whatever its speed (a paced open loop is not, once a message
 * takes longer to cross than the pace). `settleMs`: a pause first, so the throughput run before
 * has left no work behind (timers, garbage).
 */
export async function measureLatency(nodes: readonly NodeHandle[], messageBytes: number, messages: number, gapMs: number, settleMs: number): Promise<Latency> {
  const [sender, receiver] = [nodes[0]!, nodes[nodes.length - 1]!]
  await new Promise((resolve) => setTimeout(resolve, settleMs))
  const samplesUs: number[] = []
  for (let i = 0; i < messages; i++) {
    await receiver.call('arm', { messages: 1, latencies: true })
    const collected = receiver.call('collect', { timeoutMs: 30_000 })
    collected.catch(() => undefined)
    await sender.call('send', { messageBytes, messages: 1 })
    samplesUs.push(...(await explained(sender, collected)).latenciesUs)
    await new Promise((resolve) => setTimeout(resolve, gapMs))
  }
  return { samplesUs, medianUs: quantile(samplesUs, 0.5), p99Us: quantile(samplesUs, 0.99) }
}

/** The q-quantile (nearest rank) of `xs`; NaN for none. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

export const median = (xs: readonly number[]): number => quantile(xs, 0.5)
