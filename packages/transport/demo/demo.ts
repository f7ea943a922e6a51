/**
 * The main demo: 20 real libp2p nodes on this machine in three subnets (11:6:3, the paper's
 * 224:128:48 scaled down) behind an emulated firewall — inside a subnet anyone may connect,
 * across subnets only to a gateway — where every node knows only the three gateways. It shows
 * discovery and convergence, messages between subnets by logical name, a crash, a graceful leave
 * and restarts, and prints routes and hop counts. Exits non-zero if anything fails.
 *
 *   npx tsx packages/transport/demo/demo.ts
 */
import { LocalCluster, type ClusterNode } from '../src/testing/index.ts'

const text = (s: string) => new TextEncoder().encode(s)
const short = (id: string) => `…${id.slice(-6)}`
const started = performance.now()
const clock = () => `${((performance.now() - started) / 1000).toFixed(1)}s`

const cluster = new LocalCluster({ A: 11, B: 6, C: 3 }, 43000 + (process.pid % 400) * 25)
const labelOf = new Map<string, string>()

function progress(): string {
  const alive = cluster.alive()
  const pairs = alive.length * (alive.length - 1)
  let reachable = 0
  for (const n of alive) reachable += n.phoenix.routes().filter((r) => r.reachable && alive.some((m) => m.libp2p.peerId.toString() === r.destination)).length
  // A link counts once whether one end or both see it open yet (half of the ends' sum showed "102.5").
  const links = new Set<string>()
  for (const n of alive) {
    const self = n.libp2p.peerId.toString()
    for (const peer of n.phoenix.peers()) links.add(self < peer ? `${self} ${peer}` : `${peer} ${self}`)
  }
  return `${clock()}  links ${String(links.size).padStart(3)}  reachable pairs ${reachable}/${pairs}  missing direct links ${cluster.missingLinks().length}`
}

async function converge(what: string): Promise<void> {
  const ticker = setInterval(() => console.log(`  ${progress()}`), 250)
  try {
    const ms = await cluster.converge(60_000)
    console.log(`  ${progress()}`)
    console.log(`✓ ${what}: every allowed link open and every table on BFS shortest paths after ${Math.round(ms)} ms\n`)
  } finally {
    clearInterval(ticker)
  }
}

function hopTable(nodes: ClusterNode[]): void {
  const table: Record<string, Record<string, string>> = {}
  for (const from of nodes) {
    const routes = new Map(from.phoenix.routes().map((r) => [r.destination, r]))
    table[from.label] = {}
    for (const to of nodes) {
      const r = routes.get(to.libp2p.peerId.toString())
      table[from.label]![to.label] = from === to ? '·' : r?.reachable ? String(r.nhops) : '∞'
    }
  }
  console.table(table)
}

async function sendAll(pairs: [string, string][]): Promise<void> {
  const rows = await Promise.all(
    pairs.map(async ([from, to]) => {
      const t0 = performance.now()
      const route = cluster.node(from).phoenix.resolve(to)
      await cluster.node(from).phoenix.send(to, text(`hello ${to}, from ${from}`), { ack: true })
      return { from, to, 'next hop': labelOf.get(route?.nextHop ?? '') ?? '?', hops: route?.nhops ?? '?', 'acked after ms': (performance.now() - t0).toFixed(1) }
    }),
  )
  console.table(rows)
}

let failed = false
try {
  console.log('Phoenix overlay demo: 20 nodes in subnets A(11) B(6) C(3); A0, B0, C0 are the gateways and the only hubs anyone knows.')
  console.log('Firewall (emulated by a libp2p connection gater): same subnet → allowed; other subnet → only to its gateway.\n')
  await cluster.start()
  for (const n of cluster.nodes) labelOf.set(n.libp2p.peerId.toString(), n.label)
  await converge('discovery and routing')

  const sample = ['A0', 'A5', 'B0', 'B3', 'C0', 'C2'].map((l) => cluster.node(l))
  console.log('Hop counts among a sample (1 = direct connection; across subnets non-gateways go through a gateway):')
  hopTable(sample)

  console.log('Messages by logical name across subnets, each acknowledged end to end:')
  await sendAll([['A5', 'C2'], ['C2', 'B3'], ['B3', 'A7'], ['A0', 'B5'], ['C1', 'A10']])

  console.log(`${clock()}  crash of A7 (no farewell), graceful leave of B3:`)
  await cluster.crash('A7')
  await cluster.leave('B3')
  await converge('after the crash and the leave')
  const a7 = cluster.node('A7').libp2p.peerId.toString()
  const stale = cluster.alive().filter((n) => n.phoenix.routes().some((r) => r.destination === a7 && r.reachable))
  console.log(`  nodes still holding a usable route to A7: ${stale.length}`)
  const unreachable = await cluster.node('A1').phoenix.send('A7', text('anyone there?'), { routeWaitMs: 500 }).then(() => 'delivered (unexpected)', (e: Error) => e.message)
  console.log(`  A1 → A7: ${unreachable}\n`)

  console.log(`${clock()}  restart of A7 and B3 with their old identities:`)
  await cluster.restart('A7')
  await cluster.restart('B3')
  for (const n of cluster.nodes) labelOf.set(n.libp2p.peerId.toString(), n.label)
  await converge('after the restarts')
  await sendAll([['C2', 'A7'], ['A7', 'B3'], ['B3', 'C2']])

  console.log(`Routes of C2 (${short(cluster.node('C2').libp2p.peerId.toString())}):`)
  console.table(
    cluster
      .node('C2')
      .phoenix.routes()
      .filter((r) => r.reachable)
      .map((r) => ({ to: labelOf.get(r.destination) ?? short(r.destination), 'next hop': labelOf.get(r.fwd ?? '') ?? '', hops: r.nhops, seq: r.seq }))
      .sort((a, b) => a.to.localeCompare(b.to, 'en', { numeric: true })),
  )
  console.log(`✓ demo finished in ${clock()}`)
} catch (error) {
  failed = true
  console.error(`✗ demo failed: ${(error as Error).message}`)
} finally {
  await cluster.stop()
}
process.exit(failed ? 1 : 0)
