/**
 * A sender's memory while its receiver is stopped (SIGSTOP): two Phoenix nodes in child
 * processes on loopback, the sender pushing 64 KiB messages at the receiver as fast as the
 * overlay takes them (a QUEUE_FULL send is retried 5 ms later). The baseline is the sender's RSS
 * over the seconds before the stop, while the receiver reads, measured in the same run; the
 * result is the sender's RSS during the stop as a ratio to it, with its queue and stream buffer.
 *
 * Liveness is off by default (deadAfterSilenceMs longer than the stop), so only backpressure
 * bounds the sender; `--liveness` keeps the default timing, and the link to the stopped receiver
 * is closed after deadAfterSilenceMs instead.
 *
 *   npx tsx packages/transport/bench/stopped-receiver.ts [--duration-s 60] [--warmup-s 5] [--liveness]
 *
 * Measured (liveness off, 60 s): sender RSS 249 MiB before and during the stop (1.00 x), queue
 * 16.0 MiB (its bound), stream write buffer 0 bytes; before the fix the stream buffered 900 MiB
 * in 4 s (test/processes.test.ts).
 */
import { fail, scriptArgs } from '../../../tools/script-args.ts'
import { TRANSPORT_LIMITS } from '../src/index.ts'
import { ChildNode, sleep } from '../test/processes.ts'

const { values } = scriptArgs({
  options: { 'duration-s': { type: 'string', default: '60' }, 'warmup-s': { type: 'string', default: '5' }, liveness: { type: 'boolean', default: false } },
}, { summary: 'a sender\'s memory while its receiver is stopped (SIGSTOP)' })
const durationMs = Number(values['duration-s']) * 1_000
const warmupMs = Number(values['warmup-s']) * 1_000
if (!(durationMs > 0) || !(warmupMs > 0)) fail('--duration-s and --warmup-s must be positive numbers')

const MiB = 1024 * 1024
const mib = (bytes: number) => (bytes / MiB).toFixed(1)
const livenessOff = { probeAfterIdleMs: durationMs + 10_000, deadAfterSilenceMs: 2 * (durationMs + 10_000), livenessCheckEveryMs: 1_000 }

const receiver = new ChildNode({ listen: '/ip4/127.0.0.1/tcp/0', names: ['receiver'], reportEveryMs: 500, ...(values.liveness ? {} : { timing: livenessOff }) })
const children = [receiver]
try {
  await receiver.started()
  const sender = new ChildNode({
    listen: '/ip4/127.0.0.1/tcp/0',
    hubs: [receiver.address],
    sendTo: 'receiver',
    payloadBytes: 64 * 1024,
    reportEveryMs: 250,
    ...(values.liveness ? {} : { timing: livenessOff }),
  })
  children.push(sender)
  await sender.started()
  while ((receiver.status?.messagesReceived ?? 0) === 0) await sleep(50)
  const flowingAt = performance.now()
  await sleep(warmupMs)
  const stoppedAt = performance.now()
  const receivedBefore = receiver.status!.messagesReceived
  receiver.signal('SIGSTOP')
  for (let s = 10_000; s <= durationMs; s += 10_000) {
    await sleep(Math.min(10_000, durationMs - (s - 10_000)))
    const st = sender.status!
    console.log(`  ${Math.round((performance.now() - stoppedAt) / 1_000)} s stopped: sender RSS ${mib(st.rssBytes)} MiB, queue ${mib(st.outboundBytesQueued)} MiB, stream buffer ${st.streamWriteBufferBytes} bytes, neighbours ${st.neighbours}`)
  }
  await sleep(Math.max(0, stoppedAt + durationMs - performance.now()))
  receiver.signal('SIGCONT')
  const before = sender.statuses.filter((s) => s.atMs > flowingAt + warmupMs / 2 && s.atMs <= stoppedAt).map((s) => s.status)
  const during = sender.statuses.filter((s) => s.atMs > stoppedAt).map((s) => s.status)
  const peak = (list: typeof during, f: (s: (typeof during)[number]) => number) => Math.max(...list.map(f))
  const baseline = peak(before, (s) => s.rssBytes)
  const last = during.at(-1)!
  console.log(`receiver reading (baseline, ${values['warmup-s']} s, ${receivedBefore} messages): sender peak RSS ${mib(baseline)} MiB`)
  console.log(`receiver stopped ${values['duration-s']} s (liveness ${values.liveness ? 'on' : 'off'}):`)
  console.log(`  sender peak RSS ${mib(peak(during, (s) => s.rssBytes))} MiB = ${(peak(during, (s) => s.rssBytes) / baseline).toFixed(2)} x baseline; at the end ${mib(last.rssBytes)} MiB = ${(last.rssBytes / baseline).toFixed(2)} x`)
  console.log(`  peak link queue ${mib(peak(during, (s) => s.outboundBytesQueued))} MiB (outboundBytesMaxPerNeighbour ${mib(TRANSPORT_LIMITS.outboundBytesMaxPerNeighbour)} MiB), peak stream write buffer ${peak(during, (s) => s.streamWriteBufferBytes)} bytes`)
  console.log(`  ArrayBuffers at the end ${mib(last.arrayBuffersBytes)} MiB; messages accepted while stopped ${last.messagesSent - before.at(-1)!.messagesSent}`)
} finally {
  await Promise.all(children.map((c) => c.kill()))
}
