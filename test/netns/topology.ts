/**
 * Real firewalled subnets on one Linux machine: one network namespace per node, one router
 * namespace holding a bridge per subnet, and nftables in the router enforcing the paper's
 * policy — inside a subnet everything may connect; across subnets only a subnet's gateway
 * accepts new connections, on one port. Forbidden SYNs are dropped (not refused), so a forbidden
 * dial fails the way it does behind a real firewall: by timing out.
 *
 * Needs root, iproute2 and nftables. Everything it creates carries the run's prefix and is
 * removed by `destroy()` (also on a failed build), including processes left in the namespaces.
 */
import { execFile, spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { promisify } from 'node:util'

const run = promisify(execFile)

export type AddressFamily = 'ipv4' | 'ipv6'

export interface SubnetSpec {
  /** One capital letter; it names namespaces and interfaces. */
  readonly name: string
  readonly family: AddressFamily
  readonly size: number
}

export interface NetnsNode {
  readonly id: string
  readonly subnet: string
  readonly namespace: string
  readonly gateway: boolean
  /** IPv4 address, if the node has one (IPv4 subnets, and the dual-stacked gateway of an IPv6 subnet). */
  readonly ipv4: string | undefined
  /** IPv6 address, if the node has one. */
  readonly ipv6: string | undefined
}

export interface Topology {
  readonly prefix: string
  readonly routerNamespace: string
  readonly nodes: readonly NetnsNode[]
  /** The one port on which gateways accept connections from other subnets. */
  readonly gatewayPort: number
  destroy(): Promise<void>
}

/** Why this machine cannot build the topology, or undefined if it can. */
export function missingPrerequisite(): string | undefined {
  if (process.getuid?.() !== 0) return 'network namespaces need root (run the tests as root, as CI does)'
  for (const tool of ['ip', 'nft']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) {
      return `\`${tool}\` is missing: install iproute2 and nftables (apt-get install -y iproute2 nftables; .ci/run does)`
    }
  }
  return undefined
}

// Documentation-adjacent private ranges that nothing on a test machine uses.
const ipv4Subnet = (index: number) => `10.231.${index + 1}`
const ipv6Subnet = (index: number) => `fd00:231:${index + 1}:`

/** Runs one command; a failure throws with the command line and its stderr. */
export async function sh(args: string[]): Promise<void> {
  try {
    await run(args[0]!, args.slice(1))
  } catch (error) {
    const e = error as { stderr?: string; message: string }
    throw new Error(`${args.join(' ')} failed: ${e.stderr?.trim() || e.message}`)
  }
}

/** Loads an nftables ruleset into namespace `ns`. */
export function applyNftables(ns: string, ruleset: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const child = execFile('ip', ['netns', 'exec', ns, 'nft', '-f', '-'], (error, _out, stderr) => (error ? reject(new Error(`nft: ${stderr || error.message}`)) : resolve()))
    child.stdin!.end(ruleset)
  })
}

/**
 * Namespaces this process added and has not deleted yet, by name: what a signal handler removes
 * (signal-cleanup.ts) when a run is interrupted before its `destroy()`.
 */
export const createdNamespaces = new Set<string>()

/** `ip netns add name`, recorded in `createdNamespaces` first (a signal during the command still finds it). */
export async function addNamespace(name: string): Promise<void> {
  createdNamespaces.add(name)
  await sh(['ip', 'netns', 'add', name])
}

/** Removes every namespace whose name starts with `prefix` (and the processes inside). Idempotent. */
export async function destroyByPrefix(prefix: string): Promise<void> {
  const { stdout } = await run('ip', ['netns', 'list']).catch(() => ({ stdout: '' }))
  const namespaces = stdout
    .split('\n')
    .map((line) => line.split(' ')[0]!)
    .filter((ns) => ns.startsWith(prefix))
  for (const ns of namespaces) {
    const pids = await run('ip', ['netns', 'pids', ns]).then((r) => r.stdout.split('\n').filter(Boolean), () => [] as string[])
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL')
      } catch {
        // already gone
      }
    }
    await run('ip', ['netns', 'del', ns]).catch(() => undefined)
    createdNamespaces.delete(ns)
  }
}

/**
 * The kernel's neighbour tables (ARP, and NDP for IPv6) are one table per family for every
 * network namespace of the host, and past `gc_thresh3` entries (1,024 by default) a new
 * neighbour is refused (dmesg: "neighbour: arp_cache: neighbor table overflow!"): a namespace
 * then cannot reach a peer on its own bridge, and its TCP connects time out. A run needs about
 * Σ(subnet size)² entries (each node caches its subnet's peers and the router) plus the router's
 * one per node: 60 nodes in 28:20:12 need ~1,400, and that run never converged (same-subnet
 * links missing, every dial of a few nodes "connect timed out"). The limits are host-wide and
 * settable only from the initial namespace: raised here to four times the need (room for other
 * runs at the same time), never lowered, with one line on stderr saying so.
 */
export function ensureNeighbourTables(subnets: readonly SubnetSpec[]): void {
  const needed = subnets.reduce((sum, s) => sum + (s.size + 1) * (s.size + 1) + s.size, 0)
  for (const family of ['ipv4', 'ipv6']) {
    const knob = (n: number) => `/proc/sys/net/${family}/neigh/default/gc_thresh${n}`
    const current = Number(readFileSync(knob(3), 'utf8').trim())
    if (!(current < 2 * needed)) continue
    writeFileSync(knob(3), String(4 * needed))
    writeFileSync(knob(2), String(Math.max(Number(readFileSync(knob(2), 'utf8').trim()), 2 * needed)))
    process.stderr.write(`netns harness: raised net.${family}.neigh.default.gc_thresh3 ${current} -> ${4 * needed} (host-wide neighbour table; ${needed} entries needed)\n`)
  }
}

export async function buildTopology(subnets: readonly SubnetSpec[], options: { prefix?: string; gatewayPort?: number } = {}): Promise<Topology> {
  const missing = missingPrerequisite()
  if (missing !== undefined) throw new Error(`cannot build network namespaces: ${missing}`)
  for (const s of subnets) {
    if (!/^[A-Z]$/.test(s.name)) throw new Error(`subnet name must be one capital letter, got ${JSON.stringify(s.name)}`)
    if (!Number.isInteger(s.size) || s.size < 1 || s.size > 200) throw new Error(`subnet ${s.name}: size must be an integer in [1, 200], got ${s.size}`)
  }
  ensureNeighbourTables(subnets)
  const prefix = options.prefix ?? `phx${process.pid % 100000}-`
  const gatewayPort = options.gatewayPort ?? 7000
  const router = `${prefix}r`
  const nodes: NetnsNode[] = []
  const topology: Topology = { prefix, routerNamespace: router, nodes, gatewayPort, destroy: () => destroyByPrefix(prefix) }
  try {
    await destroyByPrefix(prefix)
    await addNamespace(router)
    const inRouter = (...args: string[]) => sh(['ip', 'netns', 'exec', router, ...args])
    await inRouter('ip', 'link', 'set', 'lo', 'up')
    await inRouter('sysctl', '-qw', 'net.ipv4.ip_forward=1')
    await inRouter('sysctl', '-qw', 'net.ipv6.conf.all.forwarding=1')
    // Where br_netfilter is loaded (Docker loads it), bridged frames would pass the firewall too;
    // same-subnet traffic must not, so switch that off for this namespace where the knob exists.
    for (const knob of ['net.bridge.bridge-nf-call-iptables', 'net.bridge.bridge-nf-call-ip6tables']) {
      await inRouter('sysctl', '-qw', `${knob}=0`).catch(() => undefined)
    }
    for (const [index, subnet] of subnets.entries()) {
      const bridge = `br${subnet.name}`
      await inRouter('ip', 'link', 'add', bridge, 'type', 'bridge')
      await inRouter('ip', 'link', 'set', bridge, 'up')
      // The router has both families on every bridge, so the dual-stacked gateway of an IPv6
      // subnet is reachable over IPv4 from the other subnets.
      await inRouter('ip', 'addr', 'add', `${ipv4Subnet(index)}.1/24`, 'dev', bridge)
      await inRouter('ip', '-6', 'addr', 'add', `${ipv6Subnet(index)}:1/64`, 'dev', bridge, 'nodad')
      for (let i = 0; i < subnet.size; i++) {
        const id = `${subnet.name}${i}`
        const namespace = `${prefix}${id}`
        const gateway = i === 0
        const ipv4 = subnet.family === 'ipv4' || gateway ? `${ipv4Subnet(index)}.${10 + i}` : undefined
        const ipv6 = subnet.family === 'ipv6' ? `${ipv6Subnet(index)}:${(0x10 + i).toString(16)}` : undefined
        await addNamespace(namespace)
        const inNode = (...args: string[]) => sh(['ip', 'netns', 'exec', namespace, ...args])
        const port = `v${id}`
        await sh(['ip', 'link', 'add', port, 'netns', router, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace])
        await inRouter('ip', 'link', 'set', port, 'master', bridge, 'up')
        await inNode('ip', 'link', 'set', 'lo', 'up')
        await inNode('ip', 'link', 'set', 'eth0', 'up')
        if (ipv4 !== undefined) {
          await inNode('ip', 'addr', 'add', `${ipv4}/24`, 'dev', 'eth0')
          await inNode('ip', 'route', 'add', 'default', 'via', `${ipv4Subnet(index)}.1`)
        }
        if (ipv6 !== undefined) {
          await inNode('ip', '-6', 'addr', 'add', `${ipv6}/64`, 'dev', 'eth0', 'nodad')
          await inNode('ip', '-6', 'route', 'add', 'default', 'via', `${ipv6Subnet(index)}:1`)
        } else {
          // An IPv4-only host: no IPv6 at all, so the address family really is missing.
          await inNode('sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1')
        }
        nodes.push({ id, subnet: subnet.name, namespace, gateway, ipv4, ipv6 })
      }
    }
    const gateways4 = nodes.filter((n) => n.gateway && n.ipv4 !== undefined).map((n) => n.ipv4!)
    const gateways6 = nodes.filter((n) => n.gateway && n.ipv6 !== undefined).map((n) => n.ipv6!)
    const sameSubnet = subnets.flatMap((_, index) => [
      `ip saddr ${ipv4Subnet(index)}.0/24 ip daddr ${ipv4Subnet(index)}.0/24 accept`,
      `ip6 saddr ${ipv6Subnet(index)}:/64 ip6 daddr ${ipv6Subnet(index)}:/64 accept`,
    ])
    const ruleset = [
      'table inet phoenix_firewall {',
      '  chain forward {',
      // Dropped, not rejected: a forbidden connection attempt times out, like behind a real firewall.
      '    type filter hook forward priority 0; policy drop;',
      '    ct state established,related accept',
      // Same-subnet traffic is bridged; these rules matter only if br_netfilter still sends it here.
      ...sameSubnet.map((rule) => `    ${rule}`),
      '    icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit, nd-router-advert } accept',
      gateways4.length > 0 ? `    ip daddr { ${gateways4.join(', ')} } tcp dport ${gatewayPort} ct state new accept` : '',
      gateways6.length > 0 ? `    ip6 daddr { ${gateways6.join(', ')} } tcp dport ${gatewayPort} ct state new accept` : '',
      '  }',
      '}',
    ].join('\n')
    await applyNftables(router, ruleset)
    return topology
  } catch (error) {
    await topology.destroy()
    throw error
  }
}
