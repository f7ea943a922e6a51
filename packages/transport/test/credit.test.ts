import { afterAll, describe, expect, it } from 'vitest'
import { PhoenixTransportError, TRANSPORT_LIMITS } from '../src/index.ts'
import { TestNodes, addressOf, waitUntil } from './nodes.ts'
import { ChildNode, sleep } from './processes.ts'

/** Per-flow credit on (the default); set to 0 to see this test fail with head-of-line blocking. */
const FLOW_WINDOW_BYTES = TRANSPORT_LIMITS.flowWindowBytes
const PAYLOAD_BYTES = 64 * 1024
/** Acknowledged sends in flight on the flow that keeps running (each waits for its ack). */
const WORKERS = 8
/**
 * Smaller link queues than the default (16 MiB) so that, without credit, the flood toward the
 * stopped receiver fills the gateway's queue, and with it the shared link, within a second or two
 * even on a loaded host; with credit, queue sizes do not matter to the other flow.
 */
const LIMITS = { flowWindowBytes: FLOW_WINDOW_BYTES, outboundBytesMaxPerNeighbour: 4 * 1024 * 1024 }
/** Liveness off for the stop: only credit (or backpressure) acts on the stopped receiver, not a link closed for silence. */
const TIMING = { probeAfterIdleMs: 60_000, deadAfterSilenceMs: 120_000 }

describe('per-flow credit through one gateway (issue 19, item 3)', () => {
  const nodes = new TestNodes()
  const children: ChildNode[] = []
  afterAll(async () => {
    await Promise.all(children.map((c) => c.kill()))
    await nodes.stopAll()
  })

  it('a stopped receiver does not stall another flow that shares the link to the gateway; its own sender meets QUEUE_FULL; nothing is lost', async () => {
    // sender -> gateway -> {stopped (its own process, SIGSTOPped), running}: both flows share the sender's one link.
    const gateway = await nodes.start({ discovery: false, limits: LIMITS, timing: TIMING })
    const stopped = new ChildNode({ listen: '/ip4/127.0.0.1/tcp/0', names: ['stopped'], hubs: [addressOf(gateway)], discovery: false, limits: LIMITS, timing: TIMING, reportEveryMs: 100 })
    children.push(stopped)
    const running = await nodes.start({ names: ['running'], hubs: [addressOf(gateway)], discovery: false, limits: LIMITS, timing: TIMING })
    const sender = await nodes.start({ hubs: [addressOf(gateway)], discovery: false, limits: LIMITS, timing: TIMING })
    await stopped.started()
    await waitUntil('2-hop routes to both receivers', () => sender.phoenix.resolve('stopped')?.nhops === 2 && sender.phoenix.resolve('running')?.nhops === 2, 20_000)

    const got = new Set<number>()
    running.phoenix.addEventListener('message', (event) => got.add(event.detail.messageId))
    const acked: number[] = []
    const ackedAt: number[] = []
    let done = false
    // The running flow: acknowledged sends, WORKERS at a time.
    const workers = Array.from({ length: WORKERS }, async () => {
      while (!done) {
        try {
          const { messageId } = await sender.phoenix.send('running', new Uint8Array(PAYLOAD_BYTES), { ack: true, ackTimeoutMs: 60_000 })
          acked.push(messageId)
          ackedAt.push(performance.now())
        } catch (error) {
          if (!(error instanceof PhoenixTransportError) || error.code !== 'QUEUE_FULL') throw error
          await sleep(5)
        }
      }
    })
    // The flow to the receiver that will stop: as fast as the overlay takes it.
    let floodSent = 0
    let floodRefused = 0
    let stoppedAtMs = Infinity
    const flood = (async () => {
      while (!done) {
        try {
          await sender.phoenix.send('stopped', new Uint8Array(PAYLOAD_BYTES))
          floodSent++
          if (floodSent % 16 === 0) await new Promise((r) => setImmediate(r))
        } catch (error) {
          if (!(error instanceof PhoenixTransportError) || error.code !== 'QUEUE_FULL') throw error
          if (performance.now() > stoppedAtMs) floodRefused++
          await sleep(5)
        }
      }
    })()
    const undeliverable: string[] = []
    sender.phoenix.addEventListener('undeliverable', (event) => undeliverable.push(event.detail.reason))
    const rate = (fromMs: number, toMs: number) => ackedAt.filter((t) => t >= fromMs && t < toMs).length / ((toMs - fromMs) / 1_000)

    try {
      await waitUntil('both flows move', () => acked.length >= 20 && (stopped.status?.messagesReceived ?? 0) >= 20, 20_000)
      const baselineFromMs = performance.now()
      await sleep(1_500)
      const baseline = rate(baselineFromMs, performance.now())
      stopped.signal('SIGSTOP')
      stoppedAtMs = performance.now()
      // Without credit the gateway's queue toward the stopped receiver fills, it stops reading the
      // shared link, and the running flow stops within a second or two: measure after that.
      await sleep(3_000)
      const duringFromMs = performance.now()
      await sleep(2_500)
      const during = rate(duringFromMs, performance.now())
      console.log(`credit test (flowWindowBytes ${FLOW_WINDOW_BYTES}): running flow ${baseline.toFixed(0)} msg/s before the stop, ${during.toFixed(0)} msg/s during it (${(during / baseline).toFixed(2)} x); the stopped flow's sender was refused ${floodRefused} times`)
      expect(during).toBeGreaterThan(0.3 * baseline)
      // The stopped flow's sender is told (QUEUE_FULL at its own node), nothing is dropped on the way.
      expect(floodRefused).toBeGreaterThan(0)
      stopped.signal('SIGCONT')
    } finally {
      done = true
      stopped.signal('SIGCONT')
    }
    await Promise.all([...workers, flood])
    // Everything the sender accepted for the stopped receiver arrives once it runs again; every acked message arrived.
    await waitUntil('the stopped receiver catches up', () => stopped.status!.messagesReceived === floodSent, 20_000).catch(() => undefined)
    expect(stopped.status!.messagesReceived).toBe(floodSent)
    expect(undeliverable).toEqual([])
    for (const id of acked) expect(got.has(id), `message ${id} was acked but not received`).toBe(true)
    // Credit went back on the wire, each frame covering some of the gateway's forwarded frames; what the gateway sent, the sender heard.
    const counter = (node: typeof sender, name: string) => Number(node.phoenix.metricsText().match(new RegExp(`^phoenix_${name}_total (\\d+)$`, 'm'))?.[1] ?? 0)
    const forwarded = counter(gateway, 'messages_forwarded')
    expect(counter(gateway, 'credit_frames_sent')).toBeGreaterThan(0)
    expect(counter(gateway, 'credit_frames_sent')).toBeLessThanOrEqual(forwarded)
    await waitUntil('the sender hears every credit frame the gateway sent (the last may still be on its way)', () => counter(sender, 'credit_frames_received') === counter(gateway, 'credit_frames_sent'), 5_000)
  }, 60_000)
})
