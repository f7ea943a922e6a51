/**
 * Forwarding cost of the overlay, against a bare libp2p stream measured in the same run.
 * Four nodes on loopback in a line, A — B — C — D (a connection gater allows only neighbours),
 * so messages from A to B are direct, to C cross one intermediate node, to D two.
 *
 * - throughput: 64 KiB messages streamed from A until the receiver has them all (the sender
 *   retries when its queue toward the next hop is full, which is the overlay's backpressure);
 * - latency: small messages sent one at a time with an end-to-end acknowledgement; the round
 *   trip grows by two forwarding steps per extra hop (out and back), so the added one-way
 *   latency per hop is (rtt(k hops) − rtt(direct)) / (2 (k − 1)).
 *
 *   npx tsx packages/transport/bench/forwarding.ts [--mib 64] [--pings 500]
 */
import type { Stream } from '@libp2p/interface'
import { fail, scriptArgs } from '../../../tools/script-args.ts'
import { Uint8ArrayList } from 'uint8arraylist'
import { createPhoenixLibp2p, PhoenixTransportError, type PhoenixNode } from '../src/index.ts'
import { drained } from '../src/drain.ts'

const { values } = scriptArgs({ options: { mib: { type: 'string', default: '64' }, pings: { type: 'string', default: '500' } } }, { summary: 'forwarding cost of the overlay, every node in this process, against a bare libp2p stream' })
const totalMiB = Number(values.mib)
const pings = Number(values.pings)
if (!(totalMiB > 0) || !(pings > 0)) fail('--mib and --pings must be positive numbers')

const MESSAGE_BYTES = 64 * 1024
const messages = Math.ceil((totalMiB * 1024 * 1024) / MESSAGE_BYTES)
const base = 44000 + (process.pid % 300) * 10
const labels = ['A', 'B', 'C', 'D']
const portOf = (i: number) => base + i
const RAW_PROTOCOL = '/phoenix-bench/raw/1.0.0'

// Build the line: each node may dial only its neighbours in the line.
const nodes: { label: string; phoenix: PhoenixNode; libp2p: Awaited<ReturnType<typeof createPhoenixLibp2p>>['libp2p'] }[] = []
for (const [i, label] of labels.entries()) {
  const hubs = i === 0 ? [] : [`/ip4/127.0.0.1/tcp/${portOf(i - 1)}/p2p/${nodes[i - 1]!.libp2p.peerId.toString()}`]
  const { libp2p, phoenix } = await createPhoenixLibp2p({
    listen: [`/ip4/127.0.0.1/tcp/${portOf(i)}`],
    hubs,
    names: [label],
    connectionGater: { denyDialMultiaddr: (ma) => Math.abs(Number(ma.toString().match(/\/tcp\/(\d+)/)?.[1]) - portOf(i)) !== 1 },
  })
  nodes.push({ label, phoenix, libp2p })
}
const [a, b] = [nodes[0]!, nodes[1]!]

try {
  // Wait for A to have its routes: 1, 2 and 3 hops.
  const t0 = performance.now()
  while (!['B', 'C', 'D'].every((name, i) => a.phoenix.resolve(name)?.nhops === i + 1)) {
    if (performance.now() - t0 > 30_000) throw new Error('routes did not form within 30 s')
    await new Promise((r) => setTimeout(r, 20))
  }

  // ---- bare libp2p stream baseline (A → B): length-prefixed frames, stream backpressure
  let rawReceived = 0
  let rawDone: (() => void) | undefined
  await b.libp2p.handle(RAW_PROTOCOL, (stream: Stream) => {
    stream.addEventListener('message', (e) => {
      rawReceived += (e.data as Uint8Array | Uint8ArrayList).byteLength
      if (rawReceived >= messages * (MESSAGE_BYTES + 4) && rawDone) rawDone()
    })
  })
  const rawStream = await a.libp2p.dialProtocol(b.libp2p.getMultiaddrs()[0]!, RAW_PROTOCOL)
  const frame = new Uint8Array(MESSAGE_BYTES + 4)
  new DataView(frame.buffer).setUint32(0, MESSAGE_BYTES)
  const rawStart = performance.now()
  const rawFinished = new Promise<void>((r) => (rawDone = r))
  for (let i = 0; i < messages; i++) if (!rawStream.send(frame)) await drained(rawStream)
  await rawFinished
  const rawMiBs = (messages * MESSAGE_BYTES) / 1024 / 1024 / ((performance.now() - rawStart) / 1000)

  // Bare round trip: an echo over a second raw stream.
  await b.libp2p.handle('/phoenix-bench/echo/1.0.0', (stream: Stream) => {
    stream.addEventListener('message', (e) => stream.send((e.data as Uint8Array | Uint8ArrayList).subarray()))
  })
  const echo = await a.libp2p.dialProtocol(b.libp2p.getMultiaddrs()[0]!, '/phoenix-bench/echo/1.0.0')
  const rawRtts: number[] = []
  for (let i = 0; i < pings; i++) {
    const t = performance.now()
    const back = new Promise<void>((r) => echo.addEventListener('message', () => r(), { once: true }))
    echo.send(new Uint8Array(64))
    await back
    rawRtts.push(performance.now() - t)
  }

  // ---- the overlay
  const throughput = async (to: (typeof nodes)[number]): Promise<number> => {
    let received = 0
    let done: (() => void) | undefined
    const finished = new Promise<void>((r) => (done = r))
    const listener = () => {
      if (++received === messages) done!()
    }
    to.phoenix.addEventListener('message', listener)
    const payload = new Uint8Array(MESSAGE_BYTES)
    const start = performance.now()
    for (let i = 0; i < messages; i++) {
      for (;;) {
        try {
          await a.phoenix.send(to.label, payload)
          break
        } catch (error) {
          if (!(error instanceof PhoenixTransportError) || error.code !== 'QUEUE_FULL') throw error
          await new Promise((r) => setImmediate(r))
        }
      }
    }
    const watchdog = setInterval(() => console.error(`  ${to.label}: ${received}/${messages} received`), 2_000)
    await finished
    clearInterval(watchdog)
    to.phoenix.removeEventListener('message', listener)
    return (messages * MESSAGE_BYTES) / 1024 / 1024 / ((performance.now() - start) / 1000)
  }
  const latency = async (to: (typeof nodes)[number]): Promise<number[]> => {
    const rtts: number[] = []
    const small = new Uint8Array(64)
    for (let i = 0; i < pings; i++) {
      const t = performance.now()
      await a.phoenix.send(to.label, small, { ack: true })
      rtts.push(performance.now() - t)
    }
    return rtts
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!
  const p99 = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length * 0.99)]!

  const rows: Record<string, string | number>[] = [{ path: 'bare libp2p stream A→B', 'MiB/s (64 KiB msgs)': rawMiBs.toFixed(1), 'vs bare': '1.00', 'median RTT µs': (median(rawRtts) * 1000).toFixed(0), 'p99 RTT µs': (p99(rawRtts) * 1000).toFixed(0) }]
  const overlay: { hops: number; mibs: number; rtts: number[] }[] = []
  for (const [i, to] of nodes.slice(1).entries()) {
    const mibs = await throughput(to)
    const rtts = await latency(to)
    overlay.push({ hops: i + 1, mibs, rtts })
    rows.push({ path: `overlay A→${to.label} (${i} intermediate)`, 'MiB/s (64 KiB msgs)': mibs.toFixed(1), 'vs bare': (mibs / rawMiBs).toFixed(2), 'median RTT µs': (median(rtts) * 1000).toFixed(0), 'p99 RTT µs': (p99(rtts) * 1000).toFixed(0) })
  }
  console.log(`${messages} messages of 64 KiB (${totalMiB} MiB) per throughput run; ${pings} acknowledged 64-byte messages per latency run`)
  console.table(rows)
  const direct = overlay[0]!
  const oneHop = overlay[1]!
  const twoHops = overlay[2]!
  console.log(`throughput through one intermediate node: ${((oneHop.mibs / direct.mibs) * 100).toFixed(0)}% of the overlay's direct path, ${((oneHop.mibs / rawMiBs) * 100).toFixed(0)}% of the bare stream (goal ≥ 90%)`)
  const perHop = (k: { hops: number; rtts: number[] }) => ((median(k.rtts) - median(direct.rtts)) / (2 * (k.hops - 1))) * 1000
  console.log(`added median one-way latency per hop: ${perHop(oneHop).toFixed(0)} µs (1 intermediate), ${perHop(twoHops).toFixed(0)} µs (2 intermediates) (goal < 100 µs)`)
  console.log(`overlay direct vs bare stream, median RTT: ${(median(direct.rtts) * 1000).toFixed(0)} µs vs ${(median(rawRtts) * 1000).toFixed(0)} µs`)
} finally {
  await Promise.all(nodes.map((n) => n.libp2p.stop()))
}
