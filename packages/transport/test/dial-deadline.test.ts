import { createServer, connect, type Server, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { CONNECTED_EVENT, DialDeadline } from '../src/dial-deadline.ts'
import { TestNodes, waitUntil, type TestNode } from './nodes.ts'

const counter = (node: TestNode, name: string): number => Number(new RegExp(`phoenix_${name}_total (\\d+)`).exec(node.phoenix.metricsText())?.[1] ?? 0)

/** Every chunk, each way, arrives this much later: the handshake takes over 6 s, past libp2p's per-address dial cut (6 s) and the 5 s the listener once gave an inbound upgrade. */
const DELAY_MS = 1_000

/** A TCP proxy on loopback to `port` that accepts at once and delays every chunk by DELAY_MS (a slow, busy peer). */
async function slowProxy(port: number): Promise<{ server: Server; port: number }> {
  const sockets: Socket[] = []
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1')
    sockets.push(client, upstream)
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      from.on('data', (d) => setTimeout(() => to.writable && to.write(d), DELAY_MS))
      from.on('close', () => setTimeout(() => to.destroy(), DELAY_MS + 10))
      from.on('error', () => undefined)
    }
  })
  server.on('close', () => sockets.forEach((s) => s.destroy()))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, port: (server.address() as { port: number }).port }
}

const tcpPort = (node: TestNode): number => Number(/\/tcp\/(\d+)/.exec(node.libp2p.getMultiaddrs()[0]!.toString())![1])

describe('a dial: dialTimeoutMs until the TCP connection is up, then upgradeTimeoutMs for the handshakes', () => {
  const nodes = new TestNodes()
  const servers: Server[] = []
  afterEach(async () => {
    await nodes.stopAll()
    for (const s of servers.splice(0)) s.close()
  })

  it('a peer that answers at once but handshakes slowly (seconds) is connected, not cut at dialTimeoutMs and redialled', async () => {
    const b = await nodes.start({ discovery: false })
    const proxy = await slowProxy(tcpPort(b))
    servers.push(proxy.server)
    // 300 ms is far less than the handshake through the proxy (TCP, multistream, Noise, yamux, the stream: > 6 s).
    const a = await nodes.start({ discovery: false, timing: { dialTimeoutMs: 300, upgradeTimeoutMs: 20_000 } })
    const started = performance.now()
    a.phoenix.addHub(`/ip4/127.0.0.1/tcp/${proxy.port}/p2p/${b.libp2p.peerId.toString()}`)
    await waitUntil('a and b neighbours', () => a.phoenix.peers().includes(b.phoenix.id), 20_000)
    console.log(`dial through a ${DELAY_MS} ms-per-chunk proxy took ${(performance.now() - started).toFixed(0)} ms`)
    expect(performance.now() - started).toBeGreaterThan(6_000) // the handshake really was slower than dialTimeoutMs
    expect(counter(a, 'dials_failed')).toBe(0)
    expect(counter(a, 'dials_started')).toBe(1)
  }, 30_000)

  it('a peer that accepts the TCP connection and never answers fails at upgradeTimeoutMs, counted as an upgrade failure', async () => {
    const silent = createServer(() => undefined)
    servers.push(silent)
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const port = (silent.address() as { port: number }).port
    const b = await nodes.start({ discovery: false })
    const a = await nodes.start({ discovery: false, timing: { dialTimeoutMs: 300, upgradeTimeoutMs: 1_500 } })
    const started = performance.now()
    a.phoenix.addHub(`/ip4/127.0.0.1/tcp/${port}/p2p/${b.libp2p.peerId.toString()}`)
    await waitUntil('the dial failed', () => counter(a, 'dials_failed') >= 1, 15_000)
    expect(performance.now() - started).toBeGreaterThan(1_000)
    expect(counter(a, 'dials_failed_upgrade')).toBe(1)
  }, 30_000)

  it('without the connected event the deadline fires at the connect timeout, naming dialTimeoutMs; with it, only at the upgrade timeout', async () => {
    const waitAbort = (d: DialDeadline) => new Promise<number>((resolve) => {
      const t0 = performance.now()
      d.signal.addEventListener('abort', () => resolve(performance.now() - t0))
    })
    const cut = new DialDeadline(100, 2_000)
    expect(await waitAbort(cut)).toBeLessThan(1_000)
    expect(String(cut.signal.reason)).toMatch(/dialTimeoutMs/)
    expect(cut.connected).toBe(false)

    const slow = new DialDeadline(100, 600)
    const aborted = waitAbort(slow)
    slow.onProgress({ type: 'tcp:open-connection' })
    slow.onProgress({ type: CONNECTED_EVENT })
    expect(await aborted).toBeGreaterThan(500)
    expect(String(slow.signal.reason)).toMatch(/upgradeTimeoutMs/)
    expect(slow.connected).toBe(true)
    expect(() => new DialDeadline(0, 1)).toThrow(/dialTimeoutMs/)
  })
})
