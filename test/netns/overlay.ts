/**
 * Phoenix overlay nodes as separate `phoenix node` processes, one per network namespace of a
 * `Topology`, observed through their control endpoints (unix sockets: the filesystem is shared
 * across namespaces, so the test process reaches every node without entering its namespace).
 */
import { generateKeyPair, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { checkRoutesAgainstBfs, subnetFirewallAllows, type RouteView } from '@phoenix-overlay/core'
import { rmSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startInNamespace, type NamespaceProcess } from './processes.ts'
import { onInterrupt } from './signal-cleanup.ts'
import type { NetnsNode, Topology } from './topology.ts'
import { NODE_TS_FLAGS } from '../../tools/node-ts.ts'

const PHOENIX_BIN = fileURLToPath(new URL('../../packages/cli/bin/phoenix.js', import.meta.url))

/**
 * Node processes started at once. A start is about 2 s of CPU (Node, libp2p); 27 at once on 2
 * cores made each wait for all the others, past its 60 s budget, when the machine was busy. No
 * measurement spans the starts: the timed runs and the recovery hand out hubs only once every
 * process is up.
 */
/** Lines of each failing node's output a convergence failure shows: its recent errors, not its whole life. */
const LOG_LINES_ON_FAILURE = 30
const STARTS_AT_ONCE = 6

export interface OverlayNode {
  readonly node: NetnsNode
  readonly peerId: string
  readonly keyFile: string
  readonly socket: string
  /** Multiaddrs this node listens on (one per address family it has). */
  readonly listen: string[]
  process: NamespaceProcess | undefined
}

/** Whether `a` may open a connection to `b`: same subnet, or `b` is a gateway, over an address family both have. */
export function mayDial(a: NetnsNode, b: NetnsNode): boolean {
  const commonFamily = (a.ipv4 !== undefined && b.ipv4 !== undefined) || (a.ipv6 !== undefined && b.ipv6 !== undefined)
  return commonFamily && subnetFirewallAllows(a, b)
}

/** Which pairs end up connected: one of them may dial the other. */
export function mayConnect(a: NetnsNode, b: NetnsNode): boolean {
  return mayDial(a, b) || mayDial(b, a)
}

/** In the complete configuration, who opens the connection between `a` and `b`: one allowed to, the smaller id if both are. */
function dialler(a: NetnsNode, b: NetnsNode): NetnsNode {
  if (mayDial(a, b) && mayDial(b, a)) return a.id < b.id ? a : b
  return mayDial(a, b) ? a : b
}

export class Overlay {
  readonly nodes: OverlayNode[] = []
  /** Removes the key directory if the run is interrupted (signal-cleanup.ts) before `destroy()`. */
  private readonly forgetInterrupt: () => void
  private constructor(
    readonly topology: Topology,
    private readonly dir: string,
  ) {
    this.forgetInterrupt = onInterrupt(() => rmSync(dir, { recursive: true, force: true }))
  }

  static async prepare(topology: Topology): Promise<Overlay> {
    const dir = await mkdtemp(join(tmpdir(), 'phoenix-netns-'))
    const overlay = new Overlay(topology, dir)
    for (const node of topology.nodes) {
      const key = await generateKeyPair('Ed25519')
      const keyFile = join(dir, `${node.id}.key`)
      await writeFile(keyFile, privateKeyToProtobuf(key), { mode: 0o600 })
      const listen = [
        ...(node.ipv4 !== undefined ? [`/ip4/${node.ipv4}/tcp/${topology.gatewayPort}`] : []),
        ...(node.ipv6 !== undefined ? [`/ip6/${node.ipv6}/tcp/${topology.gatewayPort}`] : []),
      ]
      overlay.nodes.push({ node, peerId: peerIdFromPrivateKey(key).toString(), keyFile, socket: join(dir, `${node.id}.sock`), listen, process: undefined })
    }
    return overlay
  }

  byId(id: string): OverlayNode {
    const n = this.nodes.find((x) => x.node.id === id)
    if (n === undefined) throw new Error(`no node ${id}`)
    return n
  }

  private addressesOf(n: OverlayNode): string[] {
    return n.listen.map((a) => `${a}/p2p/${n.peerId}`)
  }

  /**
   * Starts `node`. Discovery: it knows only the gateways' addresses. Offline: it is given the
   * complete list of connections to open (each allowed pair once, opened by the smaller id) and
   * dials nothing else.
   */
  /** What `n` is told at start: the gateways (discovery) or every connection it should open (offline). */
  hubsOf(n: OverlayNode, mode: 'discovery' | 'offline'): string[] {
    if (mode === 'discovery') return this.nodes.filter((g) => g.node.gateway && g !== n).flatMap((g) => this.addressesOf(g))
    return this.nodes.filter((m) => m !== n && mayConnect(n.node, m.node) && dialler(n.node, m.node) === n.node).flatMap((m) => this.addressesOf(m))
  }

  /**
   * `deferHubs`: start the process knowing nothing; `go` hands out the hubs later, so a run can be
   * timed from one instant without the processes' start-up in it.
   */
  async start(n: OverlayNode, mode: 'discovery' | 'offline', deferHubs = false): Promise<void> {
    const hubs = deferHubs ? [] : this.hubsOf(n, mode)
    const args = [...NODE_TS_FLAGS, PHOENIX_BIN, 'node', ...n.listen.flatMap((l) => ['--listen', l]), ...hubs.flatMap((h) => ['--hub', h]), '--name', n.node.id, '--key', n.keyFile, '--control', n.socket]
    if (mode === 'offline') args.push('--no-discovery')
    n.process = startInNamespace(n.node.namespace, process.execPath, args)
    await n.process.waitForLine(/^control endpoint on/, 60_000)
  }

  async startAll(mode: 'discovery' | 'offline', deferHubs = false): Promise<void> {
    // Gateways first, so the others' first dials find them listening.
    await this.startMany(this.nodes.filter((n) => n.node.gateway), mode, deferHubs)
    await this.startMany(this.nodes.filter((n) => !n.node.gateway), mode, deferHubs)
  }

  /** Starts `nodes`, at most STARTS_AT_ONCE at a time; resolves when all are up. */
  async startMany(nodes: readonly OverlayNode[], mode: 'discovery' | 'offline', deferHubs = false): Promise<void> {
    const queue = [...nodes]
    const worker = async () => {
      for (let n = queue.shift(); n !== undefined; n = queue.shift()) await this.start(n, mode, deferHubs)
    }
    await Promise.all(Array.from({ length: Math.min(STARTS_AT_ONCE, queue.length) }, worker))
  }

  /** Gives every live node (or just `nodes`) its hubs, or its connection list, at once: the start of a timed run. */
  async go(mode: 'discovery' | 'offline', nodes: readonly OverlayNode[] = this.alive()): Promise<void> {
    await Promise.all(
      nodes.map(async (n) => {
        const query = this.hubsOf(n, mode).map((h) => `add=${encodeURIComponent(h)}`).join('&')
        if (query === '') return
        const r = await this.call(n, 'POST', `/hubs?${query}`)
        if (r.status !== 200) throw new Error(`${n.node.id}: /hubs answered ${r.status} ${JSON.stringify(r.json)}`)
      }),
    )
  }

  async kill(n: OverlayNode): Promise<void> {
    await n.process?.kill('SIGKILL')
    n.process = undefined
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.nodes.map((n) => this.kill(n)))
  }

  async destroy(): Promise<void> {
    await this.stopAll()
    await rm(this.dir, { recursive: true, force: true })
    this.forgetInterrupt()
  }

  alive(): OverlayNode[] {
    return this.nodes.filter((n) => n.process !== undefined)
  }

  /** Calls a node's control endpoint. */
  call(n: OverlayNode, method: string, path: string, body?: Uint8Array): Promise<{ status: number; json: unknown }> {
    return new Promise((resolve, reject) => {
      const req = request({ socketPath: n.socket, method, path, timeout: 30_000 }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          try {
            resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) })
          } catch {
            resolve({ status: res.statusCode ?? 0, json: text })
          }
        })
      })
      req.on('error', reject)
      req.on('timeout', () => req.destroy(new Error(`control call ${path} to ${n.node.id} timed out`)))
      req.end(body)
    })
  }

  async metrics(n: OverlayNode): Promise<string> {
    return (await this.call(n, 'GET', '/metrics')).json as string
  }

  /** Every live node's routes and neighbours, and what they say about the whole overlay. */
  async snapshot(): Promise<{ reachableFraction: number; meanHops: number; missingLinks: string[]; routeFailures: number; detail: string; failing: OverlayNode[] }> {
    const alive = this.alive()
    const state = await Promise.all(
      alive.map(async (n) => {
        const [routes, peers] = await Promise.all([this.call(n, 'GET', '/routes'), this.call(n, 'GET', '/peers')])
        return { n, routes: routes.json as RouteView[], peers: peers.json as string[] }
      }),
    )
    const idOf = new Map(alive.map((n) => [n.peerId, n]))
    let reachable = 0
    let hops = 0
    const edges = new Set<string>()
    for (const s of state) {
      for (const r of s.routes) {
        if (r.reachable && idOf.has(r.destination)) {
          reachable++
          hops += r.nhops
        }
      }
      for (const p of s.peers) if (idOf.has(p)) edges.add([s.n.peerId, p].sort().join('|'))
    }
    const missingLinks: string[] = []
    for (const a of alive) for (const b of alive) if (a.node.id < b.node.id && mayConnect(a.node, b.node) && !edges.has([a.peerId, b.peerId].sort().join('|'))) missingLinks.push(`${a.node.id}-${b.node.id}`)
    const routesOf = new Map(state.map((s) => [s.n.peerId, new Map(s.routes.map((r) => [r.destination, r]))]))
    const failures = checkRoutesAgainstBfs(
      alive.map((n) => n.peerId),
      [...edges].map((e) => e.split('|') as [string, string]),
      (u, v) => {
        const r = routesOf.get(u)?.get(v)
        return r?.reachable && r.fwd !== undefined ? { fwd: r.fwd, nhops: r.nhops } : undefined
      },
    )
    const pairs = alive.length * (alive.length - 1)
    // Enough to tell a half-open link from a stale record: who lists whom as a peer, and both ends' view of the destination.
    const peersOf = new Map(state.map((s) => [s.n.peerId, new Set(s.peers)]))
    const entry = (u: string, v: string) => {
      const r = routesOf.get(u)?.get(v)
      return r === undefined ? 'none' : `seq ${r.seq} nhops ${r.nhops} ${r.reachable ? `via ${idOf.get(r.fwd ?? '')?.node.id ?? r.fwd}` : 'unreachable'}`
    }
    const detail = failures
      .slice(0, 3)
      .map((f) => {
        const [u, v] = [idOf.get(f.node)?.node.id, idOf.get(f.destination)?.node.id]
        const why = `${u} lists ${v} as peer: ${peersOf.get(f.node)?.has(f.destination) === true}, ${v} lists ${u}: ${peersOf.get(f.destination)?.has(f.node) === true}; ${u}'s entry for ${v}: ${entry(f.node, f.destination)}; ${v}'s for ${u}: ${entry(f.destination, f.node)}`
        return `${u}→${v}: ${f.problem} [${why}]`
      })
      .join('; ')
    const failing = failures.slice(0, 1).flatMap((f) => [idOf.get(f.node), idOf.get(f.destination)]).filter((n) => n !== undefined)
    return { reachableFraction: pairs === 0 ? 1 : reachable / pairs, meanHops: reachable === 0 ? 0 : hops / reachable, missingLinks, routeFailures: failures.length, detail, failing }
  }

  /**
   * Polls until every allowed link is open and every table is on BFS shortest paths. Returns the
   * time that took and when 90% of node pairs first became reachable (both from `sinceMs`).
   */
  async converge(sinceMs: number, timeoutMs: number): Promise<{ convergedMs: number; reachable90Ms: number }> {
    let reachable90Ms: number | undefined
    let last = ''
    let failing: OverlayNode[] = []
    while (performance.now() - sinceMs < timeoutMs) {
      let s
      try {
        s = await this.snapshot()
      } catch (error) {
        // A control socket can reset a call on a machine this busy; the next poll asks again,
        // and a node that is really gone shows as a timeout with this reason.
        last = `a control call failed: ${(error as Error).message}`
        await new Promise((r) => setTimeout(r, 100))
        continue
      }
      const at = performance.now() - sinceMs
      if (reachable90Ms === undefined && s.reachableFraction >= 0.9) reachable90Ms = at
      if (s.missingLinks.length === 0 && s.routeFailures === 0) return { convergedMs: at, reachable90Ms: reachable90Ms ?? at }
      last = `reachable ${(s.reachableFraction * 100).toFixed(1)}%, missing links ${s.missingLinks.length} (${s.missingLinks.slice(0, 4).join(' ')}), route failures ${s.routeFailures} (${s.detail})`
      failing = s.failing
      await new Promise((r) => setTimeout(r, 100))
    }
    // The last lines each end of the first failing pair wrote (its errors; DEBUG=phoenix:* for everything).
    const logs = failing.map((n) => `--- ${n.node.id} (${n.peerId}):\n${(n.process?.output ?? []).slice(-LOG_LINES_ON_FAILURE).join('\n')}`).join('\n')
    throw new Error(`no convergence within ${timeoutMs} ms: ${last}${logs === '' ? '' : `\n${logs}`}`)
  }
}
