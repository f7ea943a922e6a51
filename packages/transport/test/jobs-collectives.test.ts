import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PhoenixTransportError, float64Bytes, float64Values, type ReceivedMessage } from '../src/index.ts'
import { LocalCluster } from '../src/testing/index.ts'

const text = (s: string) => new TextEncoder().encode(s)

/** Resolves with the messages each of `labels` receives once all have one matching `payload`. */
function receivedBy(cluster: LocalCluster, labels: readonly string[], payload: string, timeoutMs = 10_000): Promise<Map<string, ReceivedMessage>> {
  const got = new Map<string, ReceivedMessage>()
  return new Promise((resolve, reject) => {
    const cleanups: (() => void)[] = []
    const done = (error?: Error) => {
      clearTimeout(timer)
      for (const c of cleanups) c()
      if (error) reject(error)
      else resolve(got)
    }
    const timer = setTimeout(() => done(new Error(`only ${[...got.keys()].join(',')} received "${payload}" within ${timeoutMs} ms`)), timeoutMs)
    for (const label of labels) {
      const listener = (e: CustomEvent<ReceivedMessage>) => {
        if (new TextDecoder().decode(e.detail.payload) !== payload) return
        got.set(label, e.detail)
        if (got.size === labels.length) done()
      }
      const phoenix = cluster.node(label).phoenix
      phoenix.addEventListener('message', listener)
      cleanups.push(() => phoenix.removeEventListener('message', listener))
    }
  })
}

describe('collectives over three sites: one copy per remote site, reduce combined per site', () => {
  const cluster = new LocalCluster({ A: 3, B: 3, C: 3 }, 22000 + (process.pid % 400) * 25, { declareSites: true })
  const labels = ['A0', 'A1', 'A2', 'B0', 'B1', 'B2', 'C0', 'C1', 'C2']
  const remote = labels.filter((l) => !l.startsWith('A'))

  beforeAll(async () => {
    await cluster.start({ names: (label) => [label, `worker/${label}`] })
    await cluster.converge(60_000)
    countCrossings()
  }, 90_000)
  afterAll(() => cluster.stop())

  /**
   * Data frames written to a neighbour in another subnet, by every node: copies crossing an
   * inter-site link. Counted by wrapping each node's neighbour send (test instrumentation: the
   * transport counts frames per node, not per link).
   */
  let crossings = 0
  const countCrossings = () => {
    const subnetOf = new Map(cluster.nodes.map((n) => [n.libp2p.peerId.toString(), n.subnet]))
    for (const n of cluster.alive()) {
      const neighbours = (n.phoenix as unknown as { session: { neighbours: { send(peer: string, frame: Uint8Array, data?: unknown): boolean } } }).session.neighbours
      const send = neighbours.send.bind(neighbours)
      neighbours.send = (peer, frame, data) => {
        if (data !== undefined && subnetOf.get(peer) !== n.subnet) crossings++
        return send(peer, frame, data)
      }
    }
  }
  const forwardedAtGateway = () => crossings

  it('broadcasts to every member, crossing each inter-site link once (vs one copy per remote member for unicasts)', async () => {
    const master = cluster.node('A1').phoenix
    let before = forwardedAtGateway()
    const arrived = receivedBy(cluster, labels, 'work 1')
    const sent = await master.broadcast('worker/*', text('work 1'))
    expect(sent.members).toEqual(labels.map((l) => `worker/${l}`))
    const got = await arrived
    const broadcastCopies = forwardedAtGateway() - before
    for (const [label, m] of got) expect(m).toMatchObject({ from: master.id, name: `worker/${label}` })

    before = forwardedAtGateway()
    const unicastArrived = receivedBy(cluster, remote, 'work 2')
    for (const l of remote) await master.send(`worker/${l}`, text('work 2'))
    await unicastArrived
    const unicastCopies = forwardedAtGateway() - before
    console.log(`data frames over inter-site links: broadcast ${broadcastCopies}, ${remote.length} unicasts ${unicastCopies} (ratio ${(broadcastCopies / unicastCopies).toFixed(2)})`)
    expect(broadcastCopies).toBe(2) // the number of remote sites
    expect(unicastCopies).toBeGreaterThanOrEqual(remote.length) // at least one crossing each; a route may cross two sites' links
  })

  it('says which members got an acknowledged broadcast', async () => {
    const result = await cluster.node('B2').phoenix.broadcast('worker/*1', text('acked'), { ack: true })
    expect(result).toEqual({ members: ['worker/A1', 'worker/B1', 'worker/C1'], delivered: ['worker/A1', 'worker/B1', 'worker/C1'], missing: [] })
  })

  it('reduces numeric values (sum, min, max) and with a combine function over bytes', async () => {
    const master = cluster.node('A1').phoenix
    const contributeAll = (tag: string, value: (i: number) => Uint8Array) => labels.forEach((l, i) => cluster.node(l).phoenix.contribute(`worker/${l}`, tag, value(i)))
    contributeAll('sum', (i) => float64Bytes([1, i]))
    const sum = await master.reduce('worker/*', 'sum', { op: 'sum' })
    expect(float64Values(sum.value!)).toEqual([9, 36])
    expect(sum.contributors).toEqual(labels.map((l) => `worker/${l}`))
    expect(sum.missing).toEqual([])
    contributeAll('max', (i) => float64Bytes([i, -i]))
    expect(float64Values((await master.reduce('worker/*', 'max', { op: 'max' })).value!).map((x) => x + 0)).toEqual([8, 0])
    contributeAll('min', (i) => float64Bytes([i]))
    expect(float64Values((await master.reduce('worker/*', 'min', { op: 'min' })).value!)).toEqual([0])
    contributeAll('concat', (i) => text(labels[i]!))
    const joined = await master.reduce('worker/*', 'concat', { combine: (a, b) => new Uint8Array([...a, ...text('+'), ...b]) })
    expect(new TextDecoder().decode(joined.value)).toBe(labels.join('+'))
  })

  it('gives every member the allreduced value', async () => {
    labels.forEach((l, i) => cluster.node(l).phoenix.contribute(`worker/${l}`, 'all', float64Bytes([i])))
    const result = await cluster.node('C1').phoenix.allreduce('worker/*', 'all', { op: 'sum' })
    expect(float64Values(result.value!)).toEqual([36])
    expect(result.broadcast?.delivered).toHaveLength(9)
  })

  it('refuses bad input with one line naming it, and never hangs', async () => {
    const master = cluster.node('A1').phoenix
    const error = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as PhoenixTransportError)
    expect(await error(master.broadcast('', text('x')))).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/^pattern must be a non-empty string/) })
    expect(await error(master.broadcast('nobody/*', text('x')))).toMatchObject({ code: 'NO_ROUTE', message: 'broadcast: no reachable name matches "nobody/*"' })
    expect(await error(master.reduce('worker/*', 't', { op: 'avg' as 'sum' }))).toMatchObject({ code: 'INVALID_INPUT', field: 'options.op' })
    cluster.node('B1').phoenix.contribute('worker/B1', 'sizes', float64Bytes([1, 2]))
    cluster.node('C2').phoenix.contribute('worker/C2', 'sizes', float64Bytes([1]))
    const sizes = await error(master.reduce('worker/*', 'sizes', { op: 'sum', timeoutMs: 1_500 }))
    expect(sizes).toMatchObject({ code: 'INVALID_INPUT', field: 'value', message: expect.stringMatching(/contributed 8 bytes and "worker\/B1" 16; sum needs values of one size/) })
  })

  it('reports a member that crashes mid-reduce as left, without waiting for the timeout', async () => {
    const master = cluster.node('A1').phoenix
    for (const l of labels) if (l !== 'B2') cluster.node(l).phoenix.contribute(`worker/${l}`, 'crash', float64Bytes([1]))
    const started = performance.now()
    const reduced = master.reduce('worker/*', 'crash', { op: 'sum', timeoutMs: 20_000 })
    setTimeout(() => void cluster.crash('B2'), 300)
    const result = await reduced
    const ms = performance.now() - started
    console.log(`reduce with a member crashing 300 ms in settled after ${Math.round(ms)} ms`)
    expect(result.missing).toEqual([{ name: 'worker/B2', reason: 'left' }])
    expect(float64Values(result.value!)).toEqual([8])
    expect(ms).toBeLessThan(5_000)
  }, 30_000)
  it('replaces a site relay lost mid-broadcast: the rest of its site gets its copy from the origin', async () => {
    for (const l of ['C1', 'C2']) cluster.node(l).phoenix.addName(`relay-test/${l}`)
    const master = cluster.node('A1').phoenix
    const deadline = performance.now() + 10_000
    while (master.members('relay-test/*').length < 2 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    // The relay is the member fewest hops away (both 2, via C0), ties by id; it swallows the step, then crashes.
    const [relay, other] = master.members('relay-test/*').sort((a, b) => (a.node < b.node ? -1 : 1))
    const relayNode = cluster.nodes.find((n) => n.libp2p.peerId.toString() === relay!.node)!
    ;(relayNode.phoenix as unknown as { inbox: { nodeMessages: () => string } }).inbox.nodeMessages = () => 'delivered'
    const started = performance.now()
    const result = master.broadcast('relay-test/*', text('via a lost relay'), { ack: true, timeoutMs: 15_000 })
    setTimeout(() => void cluster.crash(relayNode.label), 300)
    const { delivered, missing } = await result
    console.log(`broadcast whose relay crashed 300 ms in settled after ${Math.round(performance.now() - started)} ms`)
    expect(delivered).toEqual([other!.name])
    expect(missing).toEqual([{ name: relay!.name, reason: 'left' }])
    expect(performance.now() - started).toBeLessThan(5_000)
  }, 30_000)
})
