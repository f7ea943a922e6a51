/**
 * Topology for applications, after MPICH-G2 (`seeds/001`, section 3.2): every node has a *depth*
 * (how many levels) and a *color* per level; two nodes with the same color at a level can talk
 * directly at that level. Levels, widest first:
 *
 * - 0 `overlay`: every node the overlay can route to (one color: the overlay routes between any two).
 * - 1 `site`: nodes that reach each other directly, without an overlay gateway in between.
 * - 2 `host`: nodes on the same machine.
 *
 * Where the labels come from (nothing new on the wire unless `site` is declared):
 * - **host**: the host part of the address that places the node (its record already carries its
 *   addresses): the most private one (a site's inside), IPv6 before IPv4 (see `placeOf`); the IP
 *   literal or DNS name; `/unix` and loopback-only nodes are all `localhost`.
 * - **site, derived**: that address's network: an IPv4 /24 or an IPv6 /64 (`10.231.1.0/24`);
 *   loopback-only nodes are one site, `localhost`.
 * - **site, declared** (`PhoenixInit.site`, `phoenix node --site`): carried as one reserved name
 *   in the node's signed record, `@site/<label>/<id tail>` (the tail: the last
 *   {@link SITE_ID_TAIL_CHARS} characters of the node id, so no two nodes claim the same name and
 *   no name conflict is raised). Cost: that name, about 8 + label + 10 bytes, in each update that
 *   carries the node's record, and one of the node's `namesPerNodeMax` (64) names. A declared
 *   site wins over a derived one.
 *
 * Colors are small integers: the index of the label among the distinct labels of the nodes this
 * node can reach (itself included), sorted. Every node that knows the same reachable set computes
 * the same colors, so colors agree everywhere once routes converge, and change on join and leave.
 */
import { nameProblem, quoteEscaped, type RouteView } from '@phoenix-overlay/core'
import { classifyAddress } from './address-classes.ts'
import { invalidInput } from './errors.ts'

export const TOPOLOGY_LEVELS = ['overlay', 'site', 'host'] as const
/** Characters of the node id kept in the reserved site name: 10 base58 characters are 58 bits, unique among any number of nodes an overlay holds. */
export const SITE_ID_TAIL_CHARS = 10
/** A declared site label: short (it travels in every update carrying the record) and without '/' (the name's separator). */
export const SITE_LABEL_CHARS_MAX = 64
const SITE_NAME_PREFIX = '@site/'
/** Names starting with '@' are reserved for the overlay's own use (topology); groups never list them. */
export const RESERVED_NAME_PREFIX = '@'

export interface TopologyNode {
  readonly id: string
  /** Its logical names (reserved ones left out). */
  readonly names: readonly string[]
  readonly site: string
  /** Whether the site was declared (`--site`) rather than derived from an address. */
  readonly siteDeclared: boolean
  readonly host: string
  /** One color per level of `Topology.levels`: `[overlay, site, host]`. */
  readonly colors: readonly number[]
  /** 0 for this node, 1 for a neighbour. */
  readonly nhops: number
  /** Next hop from this node (itself for this node). */
  readonly nextHop: string
}

export interface Topology {
  /** This node's id. */
  readonly self: string
  readonly levels: readonly string[]
  /** Every reachable node, this one first, then by id. */
  readonly nodes: readonly TopologyNode[]
  /** This node's direct links (its neighbours' ids, sorted). */
  readonly links: readonly string[]
}

/** Checks a declared site label; a bad one is INVALID_INPUT naming `site`. */
export function checkSiteLabel(site: unknown): asserts site is string {
  if (typeof site !== 'string' || site.length === 0) throw invalidInput('site', 'must be a non-empty string')
  if (site.length > SITE_LABEL_CHARS_MAX) throw invalidInput('site', `is ${site.length} characters, more than ${SITE_LABEL_CHARS_MAX}`)
  if (!/^[A-Za-z0-9._:-]+$/.test(site)) throw invalidInput('site', `${quoteEscaped(site)} may hold only letters, digits, '.', '_', ':' and '-'`)
}

/** The reserved name that declares `site` for node `id`. */
export function siteName(site: string, id: string): string {
  checkSiteLabel(site)
  return `${SITE_NAME_PREFIX}${site}/${id.slice(-SITE_ID_TAIL_CHARS)}`
}

/** The site a node declared among its names, if any (the reserved name must carry its own id's tail). */
export function declaredSite(id: string, names: readonly string[]): string | undefined {
  const tail = `/${id.slice(-SITE_ID_TAIL_CHARS)}`
  for (const name of names) {
    if (name.startsWith(SITE_NAME_PREFIX) && name.endsWith(tail)) return name.slice(SITE_NAME_PREFIX.length, -tail.length)
  }
  return undefined
}

export function isReservedName(name: string): boolean {
  return name.startsWith(RESERVED_NAME_PREFIX)
}

const reservedNameProblem = (name: string): string => `${JSON.stringify(name)}: names starting with '@' are reserved for the overlay`

/** Refuses a reserved name (or pattern) given by the user as `field`: it would pose as the overlay's own (a site's `@site/…`). */
export function refuseReservedName(field: string, name: string): void {
  if (isReservedName(name)) throw invalidInput(field, reservedNameProblem(name))
}

/** Why no message can ever be delivered to `name` (a reader waiting for one would wait for good), or undefined. */
export function undeliverableNameProblem(name: string): string | undefined {
  return nameProblem(name) ?? (isReservedName(name) ? `${reservedNameProblem(name)}, and no message is sent to one` : undefined)
}

/**
 * Which of a node's addresses places it (lower first): the inside of a site first (private IPv4,
 * unique-local IPv6), then public ones, then loopback; IPv6 before IPv4 within a class, so a
 * dual-stacked gateway of an IPv6-only subnet lands in that subnet, as its hosts do.
 */
const PLACE_RANK: Partial<Record<string, number>> = { 'unique-local-ipv6': 0, 'private-ipv4': 1, 'global-ipv6': 2, 'public-ipv4': 3, dns: 4, loopback: 5 }

/** Host and derived site of a node from its advertised addresses: the best-placed one (PLACE_RANK), ties in record order. */
export function placeOf(addresses: readonly string[]): { host: string; site: string } {
  let best: { rank: number; host: string; dns: boolean; loopback: boolean } | undefined
  for (const address of addresses) {
    let classified
    try {
      classified = classifyAddress(address)
    } catch {
      continue // a malformed address says nothing about where the node is
    }
    const rank = PLACE_RANK[classified.class]
    if (rank === undefined || (best !== undefined && best.rank <= rank)) continue
    best = { rank, host: classified.host, dns: classified.class === 'dns', loopback: classified.class === 'loopback' }
  }
  if (best === undefined) return { host: 'unknown', site: 'unknown' }
  if (best.loopback) return { host: 'localhost', site: 'localhost' }
  return { host: best.host, site: networkOf(best.host, best.dns) }
}

/** `placeOf(addresses)` per record's address list (a record's lists are kept as they are until it changes). */
const places = new WeakMap<readonly string[], { host: string; site: string }>()

/** `placeOf`, remembered per address list: the core asks for two nodes' sites at each new connection, per holder of the route. */
function placeOfRecord(addresses: readonly string[]): { host: string; site: string } {
  let placed = places.get(addresses)
  if (placed === undefined) {
    placed = placeOf(addresses)
    places.set(addresses, placed)
  }
  return placed
}

/**
 * Whether the records `record` gives of nodes `a` and `b` place them in one site (a declared
 * `@site`, else derived from the addresses as the topology does); false if either is unknown or
 * placed nowhere. Nodes of one site connect to each other once discovery finds them, which is
 * what the core asks (`CoreConfig.willConnect`).
 */
export function sameSite(record: (id: string) => { names: readonly string[]; addresses: readonly string[] } | undefined, a: string, b: string): boolean {
  const siteOf = (id: string): string | undefined => {
    const r = record(id)
    if (r === undefined) return undefined
    const derived = placeOfRecord(r.addresses).site
    return declaredSite(id, r.names) ?? (derived === 'unknown' ? undefined : derived)
  }
  const site = siteOf(a)
  return site !== undefined && site === siteOf(b)
}

/** The /24 of an IPv4 literal, the /64 of an IPv6 one, a DNS name's parent domain. */
function networkOf(host: string, dns: boolean): string {
  if (dns) return host.includes('.') ? host.slice(host.indexOf('.') + 1) : host
  if (!host.includes(':') || /^::ffff:\d/i.test(host)) {
    const v4 = host.replace(/^::ffff:/i, '').split('.')
    return `${v4.slice(0, 3).join('.')}.0/24`
  }
  const groups = expandIpv6(host).slice(0, 4)
  return `${groups.map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`
}

function expandIpv6(ip: string): string[] {
  const [head = '', tail] = ip.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const zeros = Array.from({ length: Math.max(0, 8 - left.length - right.length) }, () => '0')
  return [...left, ...(tail === undefined ? [] : zeros), ...right]
}

interface Placed {
  readonly id: string
  readonly names: readonly string[]
  readonly site: string
  readonly siteDeclared: boolean
  readonly host: string
  readonly nhops: number
  readonly nextHop: string
}

function place(id: string, names: readonly string[], addresses: readonly string[], nhops: number, nextHop: string): Placed {
  const derived = placeOfRecord(addresses)
  const declared = declaredSite(id, names)
  return { id, names: names.filter((n) => !isReservedName(n)), site: declared ?? derived.site, siteDeclared: declared !== undefined, host: derived.host, nhops, nextHop }
}

/** Colors of one level: each distinct label's index among the labels, sorted. */
function colorsBy(labels: readonly string[]): Map<string, number> {
  return new Map([...new Set(labels)].sort().map((label, color) => [label, color]))
}

/**
 * The topology as node `self` sees it: itself and every reachable destination of its table.
 * The host level is colored by (site, host): a machine belongs to one site.
 */
export function buildTopology(self: { id: string; names: readonly string[]; addresses: readonly string[] }, routes: readonly RouteView[], links: readonly string[]): Topology {
  const placed = [place(self.id, self.names, self.addresses, 0, self.id)]
  for (const r of routes) if (r.reachable && r.fwd !== undefined && r.destination !== self.id) placed.push(place(r.destination, r.names, r.addresses, r.nhops, r.fwd))
  const rest = placed.slice(1).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  const all = [placed[0]!, ...rest]
  const siteColors = colorsBy(all.map((p) => p.site))
  const hostKey = (p: Placed) => `${p.site}\n${p.host}`
  const hostColors = colorsBy(all.map(hostKey))
  const nodes = all.map((p) => ({ ...p, colors: [0, siteColors.get(p.site)!, hostColors.get(hostKey(p))!] }))
  return { self: self.id, levels: TOPOLOGY_LEVELS, nodes, links: [...links].sort() }
}
