/**
 * Real sites on one Linux machine, harder than `topology.ts`'s subnets: the shapes Phoenix's users
 * run on (issue "Real sites").
 *
 * - One router namespace is the Internet and every site's border firewall (nftables, forbidden SYNs
 *   dropped). Each site has a LAN (a bridge in the router namespace); each gateway also has its own
 *   WAN link (a routed veth pair) carrying its public addresses.
 * - Addresses: private IPv4 on the LANs (10.232.x.0/24, or 192.168.x.0/24 behind NAT), "public"
 *   ones from documentation prefixes: 198.51.100.0/25 for WAN links (a /30 each), 198.51.100.128/25
 *   for sites whose hosts have public IPv4 (a /28 each), 2001:db8:<site>::/64 on LANs with IPv6,
 *   2001:db8:ff:<gateway>::/64 on WAN links. A site can be IPv6-only: its hosts have no IPv4 at all.
 * - Inbound policy per site: `ssh` — other sites may open only TCP 22, only to the gateways' public
 *   addresses, where a real sshd listens; `ports` — a port range (default 7000-7010) to every public
 *   address of the site; `none` — nothing. A `nat` site sits behind a masquerading router: its
 *   hosts dial out and cannot be dialled. Private addresses are never reachable from another site.
 * - `gatewayRateMbit`: tc's token bucket on both ends of each gateway's WAN link, so the gateway is
 *   the bottleneck between sites.
 *
 * Same conventions as `buildTopology`: everything carries the run's prefix and `destroy()` removes
 * it (also on a failed build), including processes in the namespaces and the SSH key directory.
 */
import { spawnSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { sshdMissing, sshKeyPair, startSshd, type KeyPair, type TestSshd } from '../../packages/transport/test/sshd.ts'
import { onInterrupt } from './signal-cleanup.ts'
import { addNamespace, applyNftables, destroyByPrefix, missingPrerequisite, sh, type NetnsNode } from './topology.ts'

export type SiteInbound = 'ssh' | 'ports' | 'none'
export type SiteLan = 'ipv4' | 'dual' | 'ipv6'

export interface SiteSpec {
  /** One capital letter; it names namespaces and interfaces. */
  readonly name: string
  /** Hosts in the site, gateways first. */
  readonly size: number
  /** How many of them are gateways (a WAN link with public addresses). Default 1; 0 for a NAT site. */
  readonly gateways?: number
  /** What other sites may open to this one. */
  readonly inbound: SiteInbound
  /** For `ports`: the open range, inclusive (default 7000-7010). */
  readonly ports?: readonly [number, number]
  /** Behind a masquerading router (LAN 192.168.x.0/24, no gateways, inbound `none`). */
  readonly nat?: boolean
  /** LAN addressing: private IPv4 (`ipv4`, hosts without IPv6), plus global IPv6 (`dual`), or global IPv6 only (`ipv6`). Default `ipv4`. */
  readonly lan?: SiteLan
  /** Every host also holds a public IPv4 address on the LAN (at most 13 hosts). */
  readonly publicIpv4?: boolean
  /** tc limit on each gateway's WAN link, both directions, in Mbit/s. */
  readonly gatewayRateMbit?: number
}

export type SiteAddressClass = 'private-ipv4' | 'public-ipv4' | 'global-ipv6'

export interface SiteAddress {
  readonly ip: string
  readonly prefixLength: number
  readonly device: 'eth0' | 'wan0'
  readonly class: SiteAddressClass
}

/** A gateway's WAN link: its public addresses, the router's end, and the router-side device. */
export interface WanLink {
  readonly ipv4: string
  readonly ipv6: string
  readonly routerIpv4: string
  readonly routerIpv6: string
  readonly routerDevice: string
  readonly rateMbit: number | undefined
}

export interface SiteNode extends NetnsNode {
  readonly site: string
  readonly addresses: readonly SiteAddress[]
  readonly wan: WanLink | undefined
  sshd: TestSshd | undefined
}

export interface SiteSsh {
  /** Who logs in to the gateways' sshd: the user running the tests. */
  readonly user: string
  /** Accepted by every gateway. */
  readonly key: KeyPair
  /** Accepted by none. */
  readonly strangerKey: KeyPair
  readonly dir: string
}

export interface Sites {
  readonly prefix: string
  readonly routerNamespace: string
  readonly specs: readonly SiteSpec[]
  readonly nodes: readonly SiteNode[]
  /** Present when a site is SSH-only. */
  readonly ssh: SiteSsh | undefined
  node(id: string): SiteNode
  /** Addresses other sites may try: public and global ones (the inbound policy decides whether they answer). */
  publicAddresses(id: string): SiteAddress[]
  /**
   * New TCP connections the router saw toward a private address (10.232.0.0/16, 192.168.0.0/16):
   * inside a site such traffic is bridged, never routed, so each is an attempt to dial another
   * site's private address (the firewall drops it). Read from an nftables counter.
   */
  foreignPrivateDials(): Promise<number>
  destroy(): Promise<void>
}

/** Why this machine cannot build sites, or undefined if it can. */
export function sitesMissingPrerequisite(): string | undefined {
  const base = missingPrerequisite()
  if (base !== undefined) return base
  if (spawnSync('sh', ['-c', 'command -v tc']).status !== 0) return '`tc` is missing: install iproute2 (apt-get install -y iproute2)'
  return sshdMissing()
}

const privateLan = (k: number, nat: boolean) => (nat ? `192.168.${k + 1}` : `10.232.${k + 1}`)
const globalLan = (k: number) => `2001:db8:${(k + 1).toString(16)}:`
const publicLanBase = (j: number) => 128 + 16 * j
const WAN_LINKS_MAX = 32
const PUBLIC_LAN_SITES_MAX = 8
const PUBLIC_LAN_HOSTS_MAX = 13

function checkSpecs(specs: readonly SiteSpec[]): void {
  const seen = new Set<string>()
  const bad = (s: SiteSpec, why: string) => {
    throw new Error(`site ${JSON.stringify(s.name)}: ${why}`)
  }
  for (const s of specs) {
    if (!/^[A-Z]$/.test(s.name)) bad(s, 'name must be one capital letter')
    if (seen.has(s.name)) bad(s, 'name used twice')
    seen.add(s.name)
    const gateways = s.gateways ?? (s.nat === true ? 0 : 1)
    if (!Number.isInteger(s.size) || s.size < 1 || s.size > (s.publicIpv4 === true ? PUBLIC_LAN_HOSTS_MAX : 200)) bad(s, `size must be an integer in [1, ${s.publicIpv4 === true ? PUBLIC_LAN_HOSTS_MAX : 200}], got ${s.size}`)
    if (!Number.isInteger(gateways) || gateways < 0 || gateways > s.size) bad(s, `gateways must be an integer in [0, size], got ${gateways}`)
    if (s.nat === true && (gateways !== 0 || s.inbound !== 'none' || s.publicIpv4 === true || (s.lan ?? 'ipv4') !== 'ipv4')) bad(s, 'a NAT site has no gateways, no public addresses, IPv4 only, and inbound "none"')
    if (s.inbound === 'ssh' && gateways === 0) bad(s, 'an SSH-only site needs a gateway to run sshd')
    const [lo, hi] = s.ports ?? [7000, 7010]
    if (!(Number.isInteger(lo) && Number.isInteger(hi) && lo >= 1 && lo <= hi && hi <= 65_535)) bad(s, `ports must be [first, last] within 1-65535, got ${JSON.stringify(s.ports)}`)
    if (s.gatewayRateMbit !== undefined && !(s.gatewayRateMbit > 0)) bad(s, `gatewayRateMbit must be positive, got ${s.gatewayRateMbit}`)
  }
  const wan = specs.reduce((n, s) => n + (s.gateways ?? (s.nat === true ? 0 : 1)), 0)
  if (wan > WAN_LINKS_MAX) throw new Error(`at most ${WAN_LINKS_MAX} gateways in all (198.51.100.0/25 in /30 links), got ${wan}`)
  if (specs.filter((s) => s.publicIpv4 === true).length > PUBLIC_LAN_SITES_MAX) throw new Error(`at most ${PUBLIC_LAN_SITES_MAX} sites with public IPv4 LANs (198.51.100.128/25 in /28s)`)
}

/** What one host of a site gets on its LAN: addresses, and the router addresses to route through. */
function lanPlan(spec: SiteSpec, k: number, publicIndex: number | undefined, i: number) {
  const lan = spec.lan ?? 'ipv4'
  const addresses: SiteAddress[] = []
  if (lan !== 'ipv6') addresses.push({ ip: `${privateLan(k, spec.nat === true)}.${10 + i}`, prefixLength: 24, device: 'eth0', class: 'private-ipv4' })
  if (publicIndex !== undefined) addresses.push({ ip: `198.51.100.${publicLanBase(publicIndex) + 2 + i}`, prefixLength: 28, device: 'eth0', class: 'public-ipv4' })
  if (lan !== 'ipv4') addresses.push({ ip: `${globalLan(k)}:${(0x10 + i).toString(16)}`, prefixLength: 64, device: 'eth0', class: 'global-ipv6' })
  const router4 = publicIndex !== undefined ? `198.51.100.${publicLanBase(publicIndex) + 1}` : lan !== 'ipv6' ? `${privateLan(k, spec.nat === true)}.1` : undefined
  const router6 = lan !== 'ipv4' ? `${globalLan(k)}:1` : undefined
  return { addresses, router4, router6 }
}

export async function buildSites(specs: readonly SiteSpec[], options: { prefix?: string } = {}): Promise<Sites> {
  const missing = sitesMissingPrerequisite()
  if (missing !== undefined) throw new Error(`cannot build sites: ${missing}`)
  checkSpecs(specs)
  const prefix = options.prefix ?? `phxs${process.pid % 10000}-`
  const router = `${prefix}r`
  const nodes: SiteNode[] = []
  let ssh: SiteSsh | undefined
  // The SSH keys' directory, if the run is interrupted before destroy() (signal-cleanup.ts).
  const forgetInterrupt = onInterrupt(() => ssh !== undefined && rmSync(ssh.dir, { recursive: true, force: true }))
  const destroy = async () => {
    await destroyByPrefix(prefix)
    if (ssh !== undefined) await rm(ssh.dir, { recursive: true, force: true })
    forgetInterrupt()
  }
  const node = (id: string) => nodes.find((n) => n.id === id) ?? fail(`no node ${id}`)
  const publicAddresses = (id: string) => node(id).addresses.filter((a) => a.class !== 'private-ipv4')
  try {
    await destroyByPrefix(prefix)
    await buildRouter(router)
    let gatewayIndex = 0
    let publicIndex = 0
    for (const [k, spec] of specs.entries()) {
      const pub = spec.publicIpv4 === true ? publicIndex++ : undefined
      await buildLan(router, spec, k, pub)
      for (let i = 0; i < spec.size; i++) {
        const gateway = i < (spec.gateways ?? (spec.nat === true ? 0 : 1))
        nodes.push(await buildHost(router, spec, k, pub, i, gateway ? gatewayIndex++ : undefined, prefix))
      }
    }
    await applyNftables(router, ruleset(specs, nodes))
    if (specs.some((s) => s.inbound === 'ssh')) {
      const dir = await mkdtemp(join(tmpdir(), 'phoenix-sites-ssh-'))
      const [key, strangerKey] = await Promise.all([sshKeyPair(join(dir, 'client_key')), sshKeyPair(join(dir, 'stranger_key'))])
      ssh = { user: userInfo().username, key, strangerKey, dir }
      const gateways = nodes.filter((n) => n.gateway && specs.find((s) => s.name === n.site)!.inbound === 'ssh')
      await Promise.all(gateways.map(async (n) => (n.sshd = await startSshd({ namespace: n.namespace, port: 22, dir: join(dir, n.id), clientKey: key, strangerKey }))))
    }
    const foreignPrivateDials = async () => {
      const out = spawnSync('ip', ['netns', 'exec', router, 'nft', 'list', 'counter', 'inet', 'phoenix_sites', 'foreign_private_dials'], { encoding: 'utf8' })
      const packets = /packets (\d+)/.exec(out.stdout)?.[1]
      if (packets === undefined) throw new Error(`cannot read the foreign_private_dials counter: ${out.stderr.trim()}`)
      return Number(packets)
    }
    return { prefix, routerNamespace: router, specs, nodes, ssh, node, publicAddresses, foreignPrivateDials, destroy }
  } catch (error) {
    await destroy()
    throw error
  }
}

function fail(message: string): never {
  throw new Error(message)
}

async function buildRouter(router: string): Promise<void> {
  await addNamespace(router)
  const inRouter = (...args: string[]) => sh(['ip', 'netns', 'exec', router, ...args])
  await sh(['ip', '-n', router, 'link', 'set', 'lo', 'up'])
  await inRouter('sysctl', '-qw', 'net.ipv4.ip_forward=1')
  await inRouter('sysctl', '-qw', 'net.ipv6.conf.all.forwarding=1')
  // As in topology.ts: bridged frames must not pass the firewall where br_netfilter is loaded.
  for (const knob of ['net.bridge.bridge-nf-call-iptables', 'net.bridge.bridge-nf-call-ip6tables']) await inRouter('sysctl', '-qw', `${knob}=0`).catch(() => undefined)
}

async function buildLan(router: string, spec: SiteSpec, k: number, pub: number | undefined): Promise<void> {
  const bridge = `br${spec.name}`
  await sh(['ip', '-n', router, 'link', 'add', bridge, 'type', 'bridge'])
  await sh(['ip', '-n', router, 'link', 'set', bridge, 'up'])
  const lan = spec.lan ?? 'ipv4'
  if (lan !== 'ipv6') await sh(['ip', '-n', router, 'addr', 'add', `${privateLan(k, spec.nat === true)}.1/24`, 'dev', bridge])
  if (pub !== undefined) await sh(['ip', '-n', router, 'addr', 'add', `198.51.100.${publicLanBase(pub) + 1}/28`, 'dev', bridge])
  if (lan !== 'ipv4') await sh(['ip', '-n', router, '-6', 'addr', 'add', `${globalLan(k)}:1/64`, 'dev', bridge, 'nodad'])
}

async function buildHost(router: string, spec: SiteSpec, k: number, pub: number | undefined, i: number, gatewayIndex: number | undefined, prefix: string): Promise<SiteNode> {
  const id = `${spec.name}${i}`
  const namespace = `${prefix}${id}`
  const { addresses, router4, router6 } = lanPlan(spec, k, pub, i)
  await addNamespace(namespace)
  const inNode = (...args: string[]) => sh(['ip', '-n', namespace, ...args])
  await sh(['ip', 'link', 'add', `v${id}`, 'netns', router, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace])
  await sh(['ip', '-n', router, 'link', 'set', `v${id}`, 'master', `br${spec.name}`, 'up'])
  await inNode('link', 'set', 'lo', 'up')
  await inNode('link', 'set', 'eth0', 'up')
  const wan = gatewayIndex === undefined ? undefined : await buildWan(router, namespace, id, gatewayIndex, spec.gatewayRateMbit)
  if (wan === undefined && !addresses.some((a) => a.class === 'global-ipv6')) {
    // An IPv4-only host: no IPv6 at all (not even link-local), so the family really is missing.
    await sh(['ip', 'netns', 'exec', namespace, 'sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1'])
  }
  for (const a of addresses) await inNode(...(a.ip.includes(':') ? ['-6'] : []), 'addr', 'add', `${a.ip}/${a.prefixLength}`, 'dev', 'eth0', ...(a.ip.includes(':') ? ['nodad'] : []))
  // A gateway routes everything beyond its LAN through its WAN link; other hosts through the LAN router.
  if (wan === undefined && router4 !== undefined) await inNode('route', 'add', 'default', 'via', router4)
  if (wan === undefined && router6 !== undefined) await inNode('-6', 'route', 'add', 'default', 'via', router6)
  const all = wan === undefined ? addresses : [...addresses, { ip: wan.ipv4, prefixLength: 30, device: 'wan0', class: 'public-ipv4' } as const, { ip: wan.ipv6, prefixLength: 64, device: 'wan0', class: 'global-ipv6' } as const]
  const ipv4 = all.find((a) => !a.ip.includes(':'))?.ip
  const ipv6 = all.find((a) => a.ip.includes(':'))?.ip
  return { id, subnet: spec.name, site: spec.name, namespace, gateway: wan !== undefined, ipv4, ipv6, addresses: all, wan, sshd: undefined }
}

async function buildWan(router: string, namespace: string, id: string, g: number, rateMbit: number | undefined): Promise<WanLink> {
  const routerDevice = `w${id}`
  const link: WanLink = { ipv4: `198.51.100.${4 * g + 2}`, ipv6: `2001:db8:ff:${(g + 1).toString(16)}::2`, routerIpv4: `198.51.100.${4 * g + 1}`, routerIpv6: `2001:db8:ff:${(g + 1).toString(16)}::1`, routerDevice, rateMbit }
  await sh(['ip', 'link', 'add', routerDevice, 'netns', router, 'type', 'veth', 'peer', 'name', 'wan0', 'netns', namespace])
  await sh(['ip', '-n', router, 'addr', 'add', `${link.routerIpv4}/30`, 'dev', routerDevice])
  await sh(['ip', '-n', router, '-6', 'addr', 'add', `${link.routerIpv6}/64`, 'dev', routerDevice, 'nodad'])
  await sh(['ip', '-n', router, 'link', 'set', routerDevice, 'up'])
  await sh(['ip', '-n', namespace, 'addr', 'add', `${link.ipv4}/30`, 'dev', 'wan0'])
  await sh(['ip', '-n', namespace, '-6', 'addr', 'add', `${link.ipv6}/64`, 'dev', 'wan0', 'nodad'])
  await sh(['ip', '-n', namespace, 'link', 'set', 'wan0', 'up'])
  await sh(['ip', '-n', namespace, 'route', 'add', 'default', 'via', link.routerIpv4])
  await sh(['ip', '-n', namespace, '-6', 'route', 'add', 'default', 'via', link.routerIpv6])
  if (rateMbit !== undefined) {
    // Egress on both ends: the gateway's sending side, and the router's side toward it (its receiving side).
    // Burst: 10 ms at the rate, at least 16 KiB (tbf needs rate/HZ); queue up to 100 ms.
    const burst = Math.max(16 * 1024, Math.ceil((rateMbit * 1e6) / 8 / 100))
    const tbf = (ns: string, dev: string) => sh(['ip', 'netns', 'exec', ns, 'tc', 'qdisc', 'add', 'dev', dev, 'root', 'tbf', 'rate', `${rateMbit}mbit`, 'burst', `${burst}`, 'latency', '100ms'])
    await tbf(namespace, 'wan0')
    await tbf(router, routerDevice)
  }
  return link
}

/** The firewall between sites and the NAT in front of NAT sites. */
function ruleset(specs: readonly SiteSpec[], nodes: readonly SiteNode[]): string {
  const forward: string[] = []
  const nat: string[] = []
  const set = (ips: string[]) => `{ ${ips.join(', ')} }`
  for (const [k, spec] of specs.entries()) {
    const hosts = nodes.filter((n) => n.site === spec.name)
    // A site reaches its own gateways' public side.
    for (const g of hosts.filter((n) => n.wan !== undefined)) forward.push(`iifname "br${spec.name}" oifname "${g.wan!.routerDevice}" accept`)
    const open = (candidates: SiteNode[], ports: string) => {
      const v4 = candidates.flatMap((n) => n.addresses.filter((a) => a.class === 'public-ipv4').map((a) => a.ip))
      const v6 = candidates.flatMap((n) => n.addresses.filter((a) => a.class === 'global-ipv6').map((a) => a.ip))
      if (v4.length > 0) forward.push(`ip daddr ${set(v4)} tcp dport ${ports} ct state new accept`)
      if (v6.length > 0) forward.push(`ip6 daddr ${set(v6)} tcp dport ${ports} ct state new accept`)
    }
    if (spec.inbound === 'ssh') open(hosts.filter((n) => n.gateway), '22')
    if (spec.inbound === 'ports') open(hosts, `${(spec.ports ?? [7000, 7010])[0]}-${(spec.ports ?? [7000, 7010])[1]}`)
    if (spec.nat === true) nat.push(`ip saddr ${privateLan(k, true)}.0/24 oifname != "br${spec.name}" masquerade`)
  }
  return [
    'table inet phoenix_sites {',
    '  counter foreign_private_dials { }',
    '  chain forward {',
    // Dropped, not rejected: a forbidden connection times out, as behind a real firewall.
    '    type filter hook forward priority 0; policy drop;',
    '    ct state established,related accept',
    // Counted only (the verdict is the rules' below): a site's own private traffic is bridged, never forwarded.
    '    ct state new meta l4proto tcp ip daddr { 10.232.0.0/16, 192.168.0.0/16 } counter name "foreign_private_dials"',
    ...forward.map((r) => `    ${r}`),
    '  }',
    '  chain postrouting {',
    '    type nat hook postrouting priority srcnat; policy accept;',
    ...nat.map((r) => `    ${r}`),
    '  }',
    '}',
  ].join('\n')
}
