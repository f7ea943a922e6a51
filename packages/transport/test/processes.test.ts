import { generateKeyPair, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import type { Libp2p } from 'libp2p'
import { afterEach, describe, expect, it } from 'vitest'
import { TRANSPORT_LIMITS, TRANSPORT_TIMING, createPhoenixLibp2p, type PhoenixNode } from '../src/index.ts'
import { ChildNode, sleep, timeUntil } from './processes.ts'

const MiB = 1024 * 1024
const basePort = 47000 + (process.pid % 400) * 5

/** Everything a test started, stopped at its end whatever happened. */
const started: { children: ChildNode[]; nodes: Libp2p<{ phoenix: PhoenixNode }>[] } = { children: [], nodes: [] }
afterEach(async () => {
  await Promise.all(started.children.splice(0).map((c) => c.kill()))
  await Promise.all(started.nodes.splice(0).map((n) => n.stop()))
})

async function child(config: ConstructorParameters<typeof ChildNode>[0]): Promise<ChildNode> {
  const node = new ChildNode(config)
  started.children.push(node)
  await node.started()
  return node
}

async function local(hubs: string[], names: string[]): Promise<{ libp2p: Libp2p<{ phoenix: PhoenixNode }>; phoenix: PhoenixNode; address: string }> {
  const { libp2p, phoenix } = await createPhoenixLibp2p({ listen: ['/ip4/127.0.0.1/tcp/0'], hubs, names })
  started.nodes.push(libp2p)
  await libp2p.start()
  return { libp2p, phoenix, address: libp2p.getMultiaddrs()[0]!.toString() }
}

const reachable = (phoenix: PhoenixNode, destination: string) => phoenix.routes().some((r) => r.destination === destination && r.reachable)

describe('real processes: a hung neighbour, a restarted hub, a stopped receiver', () => {
  it('a neighbour stopped with SIGSTOP is declared down and its routes withdrawn within deadAfterSilenceMs (+ one check)', async () => {
    const observer = await local([], ['observer'])
    const victim = await child({ listen: '/ip4/127.0.0.1/tcp/0', hubs: [observer.address], names: ['victim'] })
    await timeUntil(() => observer.phoenix.resolve('victim') !== undefined, 30_000, 'the observer learns the victim')
    // An idle link for a while first: probes keep a live neighbour up.
    await sleep(TRANSPORT_TIMING.deadAfterSilenceMs + 1_000)
    expect(reachable(observer.phoenix, victim.peerId)).toBe(true)
    victim.signal('SIGSTOP')
    const withdrawnMs = await timeUntil(() => !reachable(observer.phoenix, victim.peerId), 30_000, 'the hung victim’s route is withdrawn')
    console.log(`SIGSTOP to route withdrawal: ${Math.round(withdrawnMs)} ms (deadAfterSilenceMs ${TRANSPORT_TIMING.deadAfterSilenceMs})`)
    expect(observer.phoenix.resolve('victim')).toBeUndefined()
    expect(observer.phoenix.peers()).not.toContain(victim.peerId)
    expect(observer.phoenix.metricsText()).toMatch(/^phoenix_neighbours_unresponsive_total 1$/m)
    // Bounds: not before the silence bound minus the time the idle link may already have been
    // silent when the victim stopped (up to a probe period plus a check and a round trip, 2 s of
    // margin for a loaded machine), and within the bound plus margin.
    expect(withdrawnMs).toBeGreaterThanOrEqual(TRANSPORT_TIMING.deadAfterSilenceMs - TRANSPORT_TIMING.probeAfterIdleMs - 2_000)
    expect(withdrawnMs).toBeLessThan(TRANSPORT_TIMING.deadAfterSilenceMs + 6_000)
    // Resumed, it is a neighbour again (the lost neighbour is re-dialled, and it re-dials its hub).
    victim.signal('SIGCONT')
    const backMs = await timeUntil(() => reachable(observer.phoenix, victim.peerId), 30_000, 'the resumed victim is reachable again')
    console.log(`SIGCONT to reachable again: ${Math.round(backMs)} ms`)
  }, 90_000)

  it('a hub killed with SIGKILL and restarted with its key and port is reached again by every node within 10 s of its return', async () => {
    const key = await generateKeyPair('Ed25519')
    const keyHex = Buffer.from(privateKeyToProtobuf(key)).toString('hex')
    const hubListen = `/ip4/127.0.0.1/tcp/${basePort}`
    let hub = await child({ listen: hubListen, keyHex, names: ['hub'] })
    const hubAddress = `${hubListen}/p2p/${hub.peerId}`
    const nodes = await Promise.all(['n1', 'n2', 'n3'].map((name) => local([hubAddress], [name])))
    // Everyone meets everyone through the hub: each node has neighbours besides the hub.
    await timeUntil(() => nodes.every((n) => n.phoenix.peers().length === nodes.length), 30_000, 'the nodes connect to the hub and to each other')
    await hub.kill()
    await timeUntil(() => nodes.every((n) => !n.phoenix.peers().includes(hub.peerId)), 10_000, 'the nodes notice the hub is gone')
    // A send to its name says who holds the name and why that fails, not only that there is no route.
    const noRoute = nodes[0]!.phoenix.send('hub', new Uint8Array(1), { routeWaitMs: 100 })
    await expect(noRoute).rejects.toMatchObject({ code: 'NO_ROUTE', message: expect.stringContaining(`no route to a node named "hub" after waiting 100 ms: it is held by ${hub.peerId}, which is unreachable`) })
    // Down long enough that an unbounded back-off would have grown past 10 s.
    await sleep(20_000)
    expect(nodes.every((n) => n.phoenix.peers().length === nodes.length - 1)).toBe(true)
    const returnedAt = performance.now()
    hub = await child({ listen: hubListen, keyHex, names: ['hub'] })
    const listeningMs = performance.now() - returnedAt
    const reachedMs = await timeUntil(() => nodes.every((n) => n.phoenix.peers().includes(hub.peerId) && n.phoenix.resolve('hub') !== undefined), 30_000, 'every node reaches the restarted hub')
    console.log(`hub restarted after 20 s down: listening after ${Math.round(listeningMs)} ms, reached by every node ${Math.round(reachedMs)} ms after that`)
    expect(reachedMs).toBeLessThanOrEqual(10_000)
  }, 120_000)

  it('a sender whose receiver is stopped (SIGSTOP) keeps its queues bounded: outboundBytesMaxPerNeighbour, and one frame in the stream', async () => {
    const receiver = await child({ listen: '/ip4/127.0.0.1/tcp/0', names: ['receiver'], reportEveryMs: 250 })
    // Liveness off for this one (a minute of silence allowed): only backpressure may bound the sender here.
    const sender = await child({
      listen: '/ip4/127.0.0.1/tcp/0',
      hubs: [receiver.address],
      sendTo: 'receiver',
      payloadBytes: 64 * 1024,
      reportEveryMs: 100,
      timing: { probeAfterIdleMs: 30_000, deadAfterSilenceMs: 60_000, livenessCheckEveryMs: 1_000 },
    })
    await timeUntil(() => (receiver.status?.messagesReceived ?? 0) > 200, 30_000, 'messages flow')
    receiver.signal('SIGSTOP')
    const stoppedAt = performance.now()
    await sleep(4_000)
    const during = sender.statuses.filter((s) => s.atMs > stoppedAt + 500).map((s) => s.status)
    const sentAtStop = sender.statuses.findLast((s) => s.atMs <= stoppedAt)!.status.messagesSent
    receiver.signal('SIGCONT')
    expect(during.length).toBeGreaterThan(10)
    const peak = (f: (s: (typeof during)[number]) => number) => Math.max(...during.map(f))
    const sentWhileStopped = during.at(-1)!.messagesSent - sentAtStop
    console.log(
      `receiver stopped 4 s: sender peak queue ${(peak((s) => s.outboundBytesQueued) / MiB).toFixed(1)} MiB, peak stream buffer ${peak((s) => s.streamWriteBufferBytes)} bytes, ` +
        `peak RSS ${(peak((s) => s.rssBytes) / MiB).toFixed(0)} MiB, ${sentWhileStopped} messages (${((sentWhileStopped * 64) / 1024).toFixed(1)} MiB) accepted while stopped`,
    )
    expect(peak((s) => s.outboundBytesQueued)).toBeLessThanOrEqual(TRANSPORT_LIMITS.outboundBytesMaxPerNeighbour)
    // One 64 KiB frame (plus its prefix and header) at most, where it used to grow without bound.
    expect(peak((s) => s.streamWriteBufferBytes)).toBeLessThanOrEqual(64 * 1024 + 1_024)
    // What the sender accepted while the receiver was stopped fits in its queue, the yamux window
    // (16 MiB) and the two sockets' kernel buffers (32 MiB is generous for loopback); it was 872 MiB
    // in 4 s before the fix.
    expect(sentWhileStopped * 64 * 1024).toBeLessThanOrEqual(TRANSPORT_LIMITS.outboundBytesMaxPerNeighbour + 16 * MiB + 32 * MiB)
  }, 90_000)
})
