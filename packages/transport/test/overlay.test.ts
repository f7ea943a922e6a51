import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PhoenixTransportError, type ReceivedMessage } from '../src/index.ts'
import { LocalCluster as Cluster } from '../src/testing/index.ts'

const text = (s: string) => new TextEncoder().encode(s)
const nextMessage = (cluster: Cluster, label: string, timeoutMs = 10_000) =>
  new Promise<ReceivedMessage>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label} received nothing within ${timeoutMs} ms`)), timeoutMs)
    cluster.node(label).phoenix.addEventListener('message', (e) => (clearTimeout(timer), resolve(e.detail)), { once: true })
  })

describe('real libp2p nodes in three firewalled subnets (loopback)', () => {
  // 10 nodes: A 5, B 3, C 2; the first of each is the gateway and the only hub anyone knows.
  const cluster = new Cluster({ A: 5, B: 3, C: 2 }, 42000 + (process.pid % 500) * 20)

  beforeAll(async () => {
    await cluster.start()
    const ms = await cluster.converge(60_000)
    console.log(`converged in ${Math.round(ms)} ms`)
  }, 90_000)
  afterAll(() => cluster.stop())

  it('discovers every connection the firewall allows and routes on shortest paths over them', () => {
    expect(cluster.missingLinks()).toEqual([])
    expect(cluster.routeFailures()).toEqual([])
    // Cross-subnet non-gateways are two hops apart (through a gateway), never more.
    const a1 = cluster.node('A1').phoenix
    const route = a1.routes().find((r) => r.destination === cluster.node('B2').libp2p.peerId.toString())
    expect(route).toMatchObject({ reachable: true, nhops: 2 })
  })

  it('delivers a message between every ordered pair of names, with end-to-end acknowledgement', async () => {
    const labels = cluster.nodes.map((n) => n.label)
    const received = new Map<string, string[]>(labels.map((l) => [l, []]))
    const listeners = cluster.nodes.map((n) => {
      const listener = (e: CustomEvent<ReceivedMessage>) => received.get(n.label)!.push(new TextDecoder().decode(e.detail.payload))
      n.phoenix.addEventListener('message', listener)
      return () => n.phoenix.removeEventListener('message', listener)
    })
    try {
      await Promise.all(labels.flatMap((from) => labels.filter((to) => to !== from).map((to) => cluster.node(from).phoenix.send(to, text(`${from}->${to}`), { ack: true }))))
      for (const to of labels) expect(received.get(to)!.sort()).toEqual(labels.filter((l) => l !== to).map((from) => `${from}->${to}`).sort())
    } finally {
      for (const remove of listeners) remove()
    }
  })

  it('a name nobody owns fails with NO_ROUTE after the bounded wait, naming the name and saying that no node holds it', async () => {
    const started = performance.now()
    const error = await cluster.node('A1').phoenix.send('nobody-has-this', text('x'), { routeWaitMs: 300 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PhoenixTransportError)
    expect((error as PhoenixTransportError).code).toBe('NO_ROUTE')
    expect((error as Error).message).toMatch(/"nobody-has-this" after waiting 300 ms: no node this one knows holds that name: none has announced it yet, or its node left \(a node that stops gives its names up at once\) or was forgotten$/)
    expect(performance.now() - started).toBeGreaterThanOrEqual(290)
    // A pattern is not a name: the failure says where patterns go.
    const pattern = await cluster.node('A1').phoenix.send('worker/*', text('x'), { routeWaitMs: 50 }).catch((e: unknown) => e)
    expect(pattern).toMatchObject({ code: 'NO_ROUTE', message: expect.stringMatching(/"worker\/\*" after waiting 50 ms: a name is matched as written, '\*' included: members\(pattern\) lists/) })
  })

  it('a send waits for a name that appears while it waits', async () => {
    const pending = cluster.node('B1').phoenix.send('late-name', text('found you'), { ack: true, routeWaitMs: 10_000 })
    const got = nextMessage(cluster, 'C1')
    await new Promise((r) => setTimeout(r, 100))
    cluster.node('C1').phoenix.addName('late-name')
    await pending
    expect(new TextDecoder().decode((await got).payload)).toBe('found you')
  })

  it('a full outbound queue is reported to the sender, not dropped silently', async () => {
    const sender = cluster.node('A2').phoenix
    const big = new Uint8Array(1024 * 1024)
    const results = await Promise.allSettled(Array.from({ length: 40 }, () => sender.send('A3', big)))
    const rejected = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason as PhoenixTransportError)
    // 40 MiB into a 16 MiB queue toward one neighbour: some sends must be refused, each with QUEUE_FULL.
    expect(rejected.length).toBeGreaterThan(0)
    for (const error of rejected) expect(error.code).toBe('QUEUE_FULL')
    expect(sender.metricsText()).toMatch(/phoenix_dropped_queue_full_total \d+/)
  })

  it('recovers from a crash, a graceful leave and a restart with the same identity', async () => {
    const victim = cluster.node('A4')
    const victimId = victim.libp2p.peerId.toString()
    await cluster.crash('A4')
    await cluster.leave('B2')
    await cluster.converge(30_000)
    for (const n of cluster.alive()) {
      const route = n.phoenix.routes().find((r) => r.destination === victimId)
      expect(route?.reachable ?? false).toBe(false)
    }
    await cluster.restart('A4')
    await cluster.restart('B2')
    await cluster.converge(30_000)
    expect(cluster.node('A4').libp2p.peerId.toString()).toBe(victimId)
    const got = nextMessage(cluster, 'A4')
    await cluster.node('C1').phoenix.send('A4', text('welcome back'), { ack: true })
    expect(new TextDecoder().decode((await got).payload)).toBe('welcome back')
  }, 90_000)

  it('a sustained stream of 64 KiB messages arrives whole (regression: a large delivery once broke the framing)', async () => {
    const to = cluster.node('A3')
    let received = 0
    // Only these: A3 also holds the 1 MiB messages of the queue test, which waited for a consumer and come to this first listener.
    const listener = (event: CustomEvent<ReceivedMessage>) => void (event.detail.payload.length === 64 * 1024 && received++)
    to.phoenix.addEventListener('message', listener)
    const payload = new Uint8Array(64 * 1024)
    try {
      for (let i = 0; i < 400; i++) {
        for (;;) {
          try {
            await cluster.node('A2').phoenix.send('A3', payload)
            break
          } catch (error) {
            if ((error as PhoenixTransportError).code !== 'QUEUE_FULL') throw error
            await new Promise((r) => setImmediate(r))
          }
        }
      }
      const deadline = performance.now() + 20_000
      while (received < 400 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20))
      expect(received).toBe(400)
    } finally {
      to.phoenix.removeEventListener('message', listener)
    }
  }, 60_000)

  it('exposes metrics in Prometheus text format; what only grows is a counter, named _total', () => {
    const metrics = cluster.node('A0').phoenix.metricsText()
    expect(metrics).toMatch(/^# TYPE phoenix_\w+ (counter|gauge)$/m)
    const types = [...metrics.matchAll(/^# TYPE (\S+) (\S+)$/gm)]
    expect(types.length).toBeGreaterThan(10)
    for (const [, name, type] of types) expect({ name, counter: type === 'counter' }).toEqual({ name, counter: name!.endsWith('_total') })
    // The core's and the credit table's counts, kept outside the metrics: counters too (a gauge's rate() reads a restart as a fall).
    expect(metrics).toMatch(/^# TYPE phoenix_core_entries_received_total counter\nphoenix_core_entries_received_total [1-9]\d*$/m)
    expect(metrics).toMatch(/^# TYPE phoenix_credit_flows_evicted_total counter$/m)
    expect(metrics).toMatch(/^phoenix_routes_reachable \d+$/m)
    const unreachable = cluster.node('A0').phoenix.routes().filter((r) => !r.reachable).length
    expect(metrics).toMatch(new RegExp(`^phoenix_routes_unreachable ${unreachable}$`, 'm'))
    expect(metrics).toMatch(/^phoenix_neighbours [1-9]\d*$/m)
  })
})
