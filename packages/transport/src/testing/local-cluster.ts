import { checkRoutesAgainstBfs, subnetFirewallAllows, type NodeId } from '@phoenix-overlay/core'
import type { Multiaddr } from '@multiformats/multiaddr'
import { generateKeyPair } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'
import type { Libp2p } from 'libp2p'
import { createPhoenixLibp2p, subnetFirewall } from '../node.ts'
import type { PhoenixNode } from '../service.ts'

export interface ClusterNode {
  readonly label: string
  readonly subnet: string
  readonly gateway: boolean
  libp2p: Libp2p<{ phoenix: PhoenixNode }>
  phoenix: PhoenixNode
  port: number
  /** Kept so a restart comes back with the same identity. */
  privateKey: PrivateKey
}

/**
 * Real libp2p nodes on loopback in emulated subnets: `sizes` nodes per subnet, the first of
 * each a gateway (and a hub, the only addresses anyone knows at start). Ports are fixed per node
 * so the firewall can tell subnets apart by port and a restarted node comes back at its address.
 */
export class LocalCluster {
  readonly nodes: ClusterNode[] = []
  private readonly placement = new Map<number, { subnet: string; gateway: boolean }>()
  /** The names each node is given (kept for restarts). */
  private namesOf: ((label: string) => string[]) | undefined

  constructor(
    readonly sizes: Record<string, number>,
    readonly basePort: number,
    /** `declareSites`: each node declares its subnet as its site (`PhoenixInit.site`); on loopback a derived site is `localhost` for all. */
    readonly options: { declareSites?: boolean } = {},
  ) {}

  hubAddresses(): string[] {
    return this.nodes.filter((n) => n.gateway).map((n) => `/ip4/127.0.0.1/tcp/${n.port}/p2p/${n.libp2p.peerId.toString()}`)
  }

  private placementOf = (address: Multiaddr): { subnet: string; gateway: boolean } | undefined => {
    const port = Number(address.toString().match(/\/tcp\/(\d+)/)?.[1])
    return this.placement.get(port)
  }

  async start(options: { names?: (label: string) => string[] } = {}): Promise<void> {
    this.namesOf = options.names
    let port = this.basePort
    const plan: { label: string; subnet: string; gateway: boolean; port: number }[] = []
    for (const [subnet, size] of Object.entries(this.sizes)) {
      for (let i = 0; i < size; i++) {
        plan.push({ label: `${subnet}${i}`, subnet, gateway: i === 0, port })
        this.placement.set(port, { subnet, gateway: i === 0 })
        port++
      }
    }
    // Gateways first: everyone else is told only their addresses.
    for (const p of plan.filter((x) => x.gateway)) this.nodes.push(await this.create(p, [], options.names?.(p.label) ?? [p.label]))
    const hubs = this.hubAddresses()
    const rest = await Promise.all(plan.filter((x) => !x.gateway).map((p) => this.create(p, hubs, options.names?.(p.label) ?? [p.label])))
    this.nodes.push(...rest)
    // Gateways learn each other through the hubs list too.
    for (const g of this.nodes.filter((n) => n.gateway)) for (const hub of hubs) if (!hub.includes(g.libp2p.peerId.toString())) await g.libp2p.dial(this.multiaddrOf(hub)).catch(() => undefined)
  }

  private multiaddrOf(address: string): Multiaddr {
    return this.nodes[0]!.libp2p.getMultiaddrs()[0]!.decapsulate('/ip4').encapsulate(address)
  }

  private async create(p: { label: string; subnet: string; gateway: boolean; port: number }, hubs: string[], names: string[], key?: PrivateKey): Promise<ClusterNode> {
    const privateKey = key ?? (await generateKeyPair('Ed25519'))
    const { libp2p, phoenix } = await createPhoenixLibp2p({
      listen: [`/ip4/127.0.0.1/tcp/${p.port}`],
      hubs,
      names,
      ...(this.options.declareSites === true ? { site: p.subnet } : {}),
      connectionGater: subnetFirewall({ subnet: p.subnet, gateway: p.gateway }, this.placementOf),
      privateKey,
    })
    return { label: p.label, subnet: p.subnet, gateway: p.gateway, port: p.port, libp2p, phoenix, privateKey }
  }

  node(label: string): ClusterNode {
    const n = this.nodes.find((x) => x.label === label)
    if (n === undefined) throw new Error(`no node ${label}`)
    return n
  }

  alive(): ClusterNode[] {
    return this.nodes.filter((n) => n.libp2p.status === 'started')
  }

  /** Each node's reachable routes compared with BFS over the Phoenix links that are actually open. */
  routeFailures() {
    const alive = this.alive()
    const ids = alive.map((n) => n.libp2p.peerId.toString())
    const byId = new Map(alive.map((n) => [n.libp2p.peerId.toString(), n]))
    const edges = new Set<string>()
    for (const n of alive) for (const p of n.phoenix.peers()) if (byId.has(p)) edges.add([n.libp2p.peerId.toString(), p].sort().join('|'))
    const lookup = (u: NodeId, v: NodeId) => {
      const r = byId.get(u)!.phoenix.routes().find((x) => x.destination === v)
      return r?.reachable && r.fwd ? { fwd: r.fwd, nhops: r.nhops } : undefined
    }
    return checkRoutesAgainstBfs(ids, [...edges].map((e) => e.split('|') as [string, string]), lookup)
  }

  /** Pairs of live nodes the firewall lets connect, that have no Phoenix link yet. */
  missingLinks(): string[] {
    const alive = this.alive()
    const missing: string[] = []
    for (const a of alive) {
      for (const b of alive) {
        if (a.label >= b.label) continue
        // Either may dial the other: the firewall rule the core defines, both ways.
        const allowed = subnetFirewallAllows(a, b) || subnetFirewallAllows(b, a)
        if (allowed && !a.phoenix.peers().includes(b.libp2p.peerId.toString())) missing.push(`${a.label}-${b.label}`)
      }
    }
    return missing
  }

  /** Waits until every allowed connection is open and every table matches BFS, stable for `stableMs`. */
  async converge(timeoutMs: number, stableMs = 300): Promise<number> {
    const started = performance.now()
    let cleanSince: number | undefined
    while (performance.now() - started < timeoutMs) {
      const failures = this.routeFailures()
      if (failures.length === 0 && this.missingLinks().length === 0) {
        cleanSince ??= performance.now()
        if (performance.now() - cleanSince >= stableMs) return cleanSince - started
      } else cleanSince = undefined
      await new Promise((r) => setTimeout(r, 50))
    }
    throw new Error(`no convergence within ${timeoutMs} ms: missing links ${this.missingLinks().slice(0, 5).join(' ')}; route failures ${JSON.stringify(this.routeFailures().slice(0, 3))}`)
  }

  async crash(label: string): Promise<void> {
    const n = this.node(label)
    // A crash: connections close without a farewell.
    for (const c of n.libp2p.getConnections()) c.abort(new Error('crash'))
    await n.libp2p.stop()
  }

  async leave(label: string): Promise<void> {
    await this.node(label).libp2p.stop()
  }

  async restart(label: string): Promise<void> {
    const n = this.node(label)
    const key = n.libp2p.peerId
    const fresh = await this.create(n, n.gateway ? [] : this.hubAddresses(), this.namesOf?.(label) ?? [label], n.privateKey)
    if (fresh.libp2p.peerId.toString() !== key.toString()) throw new Error('restart must keep the identity')
    Object.assign(n, { libp2p: fresh.libp2p, phoenix: fresh.phoenix })
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => Promise.resolve(n.libp2p.stop()).catch(() => undefined)))
  }
}
