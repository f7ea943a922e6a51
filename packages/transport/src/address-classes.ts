/**
 * Address classes (after the IPv6 extension to Open MPI, `seeds/003`): which of a peer's addresses
 * to dial, and in which order. Pure functions: the caller supplies what it knows about this host.
 *
 * - Order: global IPv6, then public IPv4 (and DNS names), then private addresses (RFC 1918,
 *   100.64/10, unique-local IPv6); direct addresses before SSH hops of the same class.
 * - Never: link-local, unspecified, multicast, reserved.
 * - A private address is dialled only if we hold an address in the same prefix (an interface's
 *   subnet, or a configured site prefix): another site's 10.0.0.5 is not the host we mean, and a
 *   firewall drops the attempt or, worse, it reaches a different host of our own site.
 * - Loopback (and `/unix`) addresses mean "this host": a node advertises them only when it has no
 *   other address (every node of a single-host cluster), and dials them only when it, too, listens
 *   on loopback alone. Two nodes on one host with real interfaces reach each other through those.
 * - A host with no IPv4 address dials no IPv4 address; one without a global IPv6 address dials no
 *   global IPv6 one.
 * - An SSH address is judged by its SSH server's part, and dialled only if we can run SSH.
 *
 * These rules are for discovered addresses. Hubs are the user's explicit choice and are dialled as
 * given.
 */
import { IpNet } from '@chainsafe/netmask'
import { multiaddr } from '@multiformats/multiaddr'
import type { NetworkInterfaceInfo } from 'node:os'
import { PhoenixTransportError } from './errors.ts'
import { isSshAddress, parseSshAddress } from './ssh-address.ts'

export type AddressClass =
  | 'global-ipv6'
  | 'public-ipv4'
  /** A DNS name: its class is known only once resolved; ranked like a public address. */
  | 'dns'
  | 'private-ipv4'
  | 'unique-local-ipv6'
  | 'loopback'
  | 'link-local'
  /** Unspecified, multicast, broadcast, reserved: never a peer. */
  | 'unusable'

export interface ClassifiedAddress {
  readonly address: string
  readonly class: AddressClass
  /** The IP or DNS name judged (an SSH address's server). */
  readonly host: string
  /** 4 or 6 for IP literals and dns4/dns6; undefined for `dns` names and `/unix`. */
  readonly family: 4 | 6 | undefined
  readonly viaSsh: boolean
}

const net = (cidr: string) => new IpNet(cidr)
const IPV4_UNUSABLE = ['0.0.0.0/8', '224.0.0.0/4', '240.0.0.0/4'].map(net)
const IPV4_LOOPBACK = net('127.0.0.0/8')
const IPV4_LINK_LOCAL = net('169.254.0.0/16')
/** RFC 1918 and the shared address space of carrier-grade NAT (RFC 6598). */
const IPV4_PRIVATE = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10'].map(net)
const IPV6_LINK_LOCAL = net('fe80::/10')
const IPV6_UNIQUE_LOCAL = net('fc00::/7')
const IPV6_GLOBAL_UNICAST = net('2000::/3')

/** The class of one IP literal. Documentation prefixes (198.51.100.0/24, 2001:db8::/32) count as public, as the namespace tests use them. */
export function classifyIp(ip: string): AddressClass {
  const v4 = ip.includes(':') ? ipv4Mapped(ip) : ip
  if (v4 !== undefined) {
    if (IPV4_LOOPBACK.contains(v4)) return 'loopback'
    if (IPV4_LINK_LOCAL.contains(v4)) return 'link-local'
    if (v4 === '255.255.255.255' || IPV4_UNUSABLE.some((n) => n.contains(v4))) return 'unusable'
    return IPV4_PRIVATE.some((n) => n.contains(v4)) ? 'private-ipv4' : 'public-ipv4'
  }
  if (ip === '::1') return 'loopback'
  if (IPV6_LINK_LOCAL.contains(ip)) return 'link-local'
  if (IPV6_UNIQUE_LOCAL.contains(ip)) return 'unique-local-ipv6'
  return IPV6_GLOBAL_UNICAST.contains(ip) ? 'global-ipv6' : 'unusable'
}

function ipv4Mapped(ip: string): string | undefined {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  return m?.[1]
}

/** Classifies a multiaddr (an SSH address by its server's part). A malformed one throws INVALID_INPUT naming `what`. */
export function classifyAddress(address: string, what = 'address'): ClassifiedAddress {
  if (isSshAddress(address)) {
    const ssh = parseSshAddress(address, what)
    return { ...classifyAddress(ssh.server, what), address, viaSsh: true }
  }
  let first
  try {
    first = multiaddr(address).getComponents()[0]
  } catch (error) {
    throw new PhoenixTransportError('INVALID_INPUT', `${what} ${JSON.stringify(address)} is not a multiaddr: ${(error as Error).message}`)
  }
  const value = first?.value ?? ''
  switch (first?.name) {
    case 'ip4':
    case 'ip6': {
      const family = first.name === 'ip4' || ipv4Mapped(value) !== undefined ? 4 : 6
      return { address, class: classifyIp(value), host: value, family, viaSsh: false }
    }
    case 'dns4':
    case 'dns6':
    case 'dns':
    case 'dnsaddr': {
      const loopback = value === 'localhost' || value.endsWith('.localhost')
      const family = first.name === 'dns4' ? 4 : first.name === 'dns6' ? 6 : undefined
      return { address, class: loopback ? 'loopback' : 'dns', host: value, family, viaSsh: false }
    }
    case 'unix':
      return { address, class: 'loopback', host: value, family: undefined, viaSsh: false }
    default:
      throw new PhoenixTransportError('INVALID_INPUT', `${what} ${JSON.stringify(address)}: cannot tell where /${first?.name ?? ''} leads (expected ip4, ip6, dns, dns4, dns6, unix or an SSH address)`)
  }
}

/** What this host holds, which decides what it can dial. */
export interface LocalView {
  /** This host's interface addresses with prefix lengths (`10.231.1.11/24`, `2001:db8:1::11/64`). */
  readonly cidrs: readonly string[]
  /** The addresses this node listens on (multiaddrs): all loopback means a single-host cluster. */
  readonly listening: readonly string[]
  /** Private prefixes beyond our interfaces' subnets that our site routes (e.g. `10.0.0.0/8`). */
  readonly sitePrefixes?: readonly string[]
  /** Whether this node can dial through SSH (it has an SSH identity). */
  readonly ssh: boolean
}

/** The interface addresses of `os.networkInterfaces()` as CIDRs (loopback included; the rules skip it). */
export function interfaceCidrs(interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>): string[] {
  return Object.values(interfaces).flatMap((list) => (list ?? []).map((i) => i.cidr).filter((c): c is string => c !== null))
}

/** Dial order of each class (lower first); an SSH hop comes after every direct address. */
const CLASS_RANK: Readonly<Record<AddressClass, number | undefined>> = {
  'global-ipv6': 0,
  'public-ipv4': 1,
  dns: 1,
  'private-ipv4': 2,
  'unique-local-ipv6': 2,
  loopback: 3,
  'link-local': undefined,
  unusable: undefined,
}
const SSH_RANK_OFFSET = 4

interface HostFacts {
  readonly ipv4: boolean
  readonly globalIpv6: boolean
  readonly anyIpv6: boolean
  readonly loopbackOnly: boolean
  readonly prefixes: readonly IpNet[]
}

function factsOf(local: LocalView): HostFacts {
  const own = local.cidrs.map((cidr) => ({ cidr, ip: cidr.split('/')[0]!, class: classifyIp(cidr.split('/')[0]!) }))
  const routable = own.filter((a) => a.class !== 'loopback' && a.class !== 'link-local' && a.class !== 'unusable')
  const listening = local.listening.map((a) => classifyAddress(a, 'listen address'))
  return {
    ipv4: routable.some((a) => !a.ip.includes(':')),
    globalIpv6: routable.some((a) => a.class === 'global-ipv6'),
    anyIpv6: routable.some((a) => a.ip.includes(':')),
    loopbackOnly: onlyLoopback(listening),
    prefixes: [
      ...routable.filter((a) => a.class === 'private-ipv4' || a.class === 'unique-local-ipv6').map((a) => net(a.cidr)),
      ...(local.sitePrefixes ?? []).map((p) => sitePrefix(p)),
    ],
  }
}

/** A configured site prefix (`10.0.0.0/8`); a malformed one throws INVALID_INPUT naming it. */
export function sitePrefix(cidr: string, what = 'site prefix'): IpNet {
  try {
    if (!/^[0-9a-fA-F.:]+\/\d{1,3}$/.test(cidr)) throw new Error('expected an address and a prefix length, like 10.0.0.0/8 or fd00::/8')
    return net(cidr)
  } catch (error) {
    throw new PhoenixTransportError('INVALID_INPUT', `${what} ${JSON.stringify(cidr)} is not a CIDR prefix: ${(error as Error).message}`, { field: what })
  }
}

/** Some loopback address and no other usable one (link-local and unusable ones do not count). */
function onlyLoopback(addresses: readonly ClassifiedAddress[]): boolean {
  const usable = addresses.filter((a) => CLASS_RANK[a.class] !== undefined)
  return usable.length > 0 && usable.every((a) => a.class === 'loopback')
}

function reachable(a: ClassifiedAddress, facts: HostFacts): boolean {
  switch (a.class) {
    case 'global-ipv6':
      return facts.globalIpv6
    case 'public-ipv4':
      return facts.ipv4
    case 'dns':
      return a.family === 4 ? facts.ipv4 : a.family === 6 ? facts.anyIpv6 : facts.ipv4 || facts.anyIpv6
    case 'private-ipv4':
    case 'unique-local-ipv6':
      return facts.prefixes.some((p) => p.contains(a.host))
    case 'loopback':
      return facts.loopbackOnly
    default:
      return false
  }
}

/** Where `address` goes in our dial order (lower first), or undefined if we must never dial it. */
export function dialRank(address: string, local: LocalView): number | undefined {
  return rankWith(classifyAddress(address), factsOf(local), local.ssh)
}

function rankWith(a: ClassifiedAddress, facts: HostFacts, ssh: boolean): number | undefined {
  const rank = CLASS_RANK[a.class]
  if (rank === undefined || !reachable(a, facts) || (a.viaSsh && !ssh)) return undefined
  return a.viaSsh ? rank + SSH_RANK_OFFSET : rank
}

/**
 * The addresses of one peer worth dialling, best first (stable within a rank). Malformed ones are
 * dropped and listed in `rejected` with the reason, so the caller can count and log them.
 */
export function orderForDialing(addresses: readonly string[], local: LocalView): { dial: string[]; skipped: string[]; rejected: { address: string; reason: string }[] } {
  const facts = factsOf(local)
  const ranked: { address: string; rank: number }[] = []
  const skipped: string[] = []
  const rejected: { address: string; reason: string }[] = []
  for (const address of addresses) {
    let rank: number | undefined
    try {
      rank = rankWith(classifyAddress(address), facts, local.ssh)
    } catch (error) {
      rejected.push({ address, reason: (error as Error).message })
      continue
    }
    if (rank === undefined) skipped.push(address)
    else ranked.push({ address, rank })
  }
  return { dial: ranked.sort((a, b) => a.rank - b.rank).map((r) => r.address), skipped, rejected }
}

/**
 * What a node should advertise of its own addresses, best class first: never link-local or
 * unusable ones; loopback and `/unix` only when it has nothing else (a single-host cluster).
 */
export function advertisable(ownAddresses: readonly string[]): string[] {
  const classified = ownAddresses.map((address) => classifyAddress(address, 'own address'))
  const loopbackOnly = onlyLoopback(classified)
  return classified
    .filter((a) => CLASS_RANK[a.class] !== undefined && (loopbackOnly || a.class !== 'loopback'))
    .map((a) => ({ address: a.address, rank: CLASS_RANK[a.class]! + (a.viaSsh ? SSH_RANK_OFFSET : 0) }))
    .sort((a, b) => a.rank - b.rank)
    .map((a) => a.address)
}
