/**
 * The address form of "reach me through SSH": a multiaddr that says which SSH server to log in to,
 * as whom, and where that server forwards to, ending with the peer id Noise will check.
 *
 *   /ip4/198.51.100.6/tcp/22/ssh/phoenix/ip4/127.0.0.1/tcp/7000/p2p/12D3KooW…
 *   └── the SSH server ──┘    └ user ┘└ target, as seen from the SSH server ┘
 *
 * `ssh` is registered with multiaddr's protocol registry (a private-use code), so these addresses
 * parse, encapsulate and travel in records like any other. The target is relative to the SSH
 * server: `127.0.0.1` there means the server's own loopback, not ours.
 *
 * Every part is validated before it can reach an `ssh` command line: the addresses come from other
 * nodes' records, and a host or user starting with `-` would be an option to `ssh`.
 */
import { multiaddr, registry, V } from '@multiformats/multiaddr'
import { PhoenixTransportError } from './errors.ts'

/** From the multicodec table's private-use range (0x300000–0x3fffff); "22" for the SSH port. */
export const SSH_MULTIADDR_CODE = 0x300022

/** A login name `ssh` accepts and cannot mistake for an option. */
const USER = /^[A-Za-z_][A-Za-z0-9._-]{0,31}$/
/** A DNS name (RFC 1123 labels): no leading `-`, no spaces, nothing a shell or `ssh` would read. */
const DNS_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/

if (!hasSshProtocol()) {
  registry.addProtocol({
    code: SSH_MULTIADDR_CODE,
    name: 'ssh',
    size: V,
    validate(user: string): void {
      if (!USER.test(user)) throw new Error(`ssh user ${JSON.stringify(user)} is not a login name (letters, digits, . _ -, not starting with - or a digit, at most 32)`)
    },
  })
}

function hasSshProtocol(): boolean {
  try {
    return registry.getProtocol('ssh').code === SSH_MULTIADDR_CODE
  } catch {
    return false
  }
}

export type HostKind = 'ip4' | 'ip6' | 'dns' | 'dns4' | 'dns6'
const HOST_KINDS: ReadonlySet<string> = new Set<HostKind>(['ip4', 'ip6', 'dns', 'dns4', 'dns6'])

export interface SshAddress {
  /** The SSH server: an IP literal or a DNS name. */
  readonly host: string
  readonly hostKind: HostKind
  readonly port: number
  readonly user: string
  /** Where the SSH server forwards to, as seen from the SSH server. */
  readonly targetHost: string
  readonly targetKind: HostKind
  readonly targetPort: number
  /** The peer id at the end, which Noise checks through the tunnel. */
  readonly peerId: string | undefined
  /** The SSH server's part (`/ip4/…/tcp/22`): what address classes judge. */
  readonly server: string
}

/** True if `address` names an SSH hop (cheap; `parseSshAddress` validates). */
export function isSshAddress(address: string): boolean {
  return address.includes('/ssh/')
}

/** Parses an SSH address; a malformed one throws INVALID_INPUT naming `what` and the cause. */
export function parseSshAddress(address: string, what = 'address'): SshAddress {
  const bad = (cause: string): never => {
    throw new PhoenixTransportError('INVALID_INPUT', `${what} ${JSON.stringify(address)} is not an SSH address: ${cause}`, { field: what })
  }
  let components
  try {
    components = multiaddr(address).getComponents()
  } catch (error) {
    return bad((error as Error).message)
  }
  const shape = components.map((c) => c.name).join('/')
  const at = (i: number): string => components[i]?.value ?? ''
  if (!/^(ip4|ip6|dns|dns4|dns6)\/tcp\/ssh\/(ip4|ip6|dns|dns4|dns6)\/tcp(\/p2p)?$/.test(shape)) {
    return bad(`expected /<ip4|ip6|dns|dns4|dns6>/<host>/tcp/<port>/ssh/<user>/<ip4|ip6|dns…>/<target>/tcp/<port>[/p2p/<id>], got the shape /${shape}`)
  }
  const host = at(0)
  const targetHost = at(3)
  for (const [name, kind] of [[host, components[0]!.name], [targetHost, components[3]!.name]] as const) {
    if (kind.startsWith('dns') && !DNS_NAME.test(name)) bad(`${JSON.stringify(name)} is not a DNS name`)
  }
  const port = Number(at(1))
  const targetPort = Number(at(4))
  if (port < 1 || targetPort < 1) bad('port 0 cannot be dialled')
  return {
    host,
    hostKind: components[0]!.name as HostKind,
    port,
    user: at(2),
    targetHost,
    targetKind: components[3]!.name as HostKind,
    targetPort,
    peerId: components[5]?.value,
    server: `/${components[0]!.name}/${host}/tcp/${port}`,
  }
}

/** Builds the SSH address of a node listening on `target` (a `/ip4|ip6|dns…/…/tcp/…` multiaddr as seen from the SSH server). */
export function formatSshAddress(server: { host: string; port?: number; user: string }, target: string, peerId?: string): string {
  const kind = server.host.includes(':') ? 'ip6' : /^\d+\.\d+\.\d+\.\d+$/.test(server.host) ? 'ip4' : 'dns'
  const text = `/${kind}/${server.host}/tcp/${server.port ?? 22}/ssh/${server.user}${target}${peerId === undefined ? '' : `/p2p/${peerId}`}`
  parseSshAddress(text, 'formatted SSH address')
  return text
}

/** Whether a multiaddr component name is a host (IP literal or DNS name). */
export function isHostKind(name: string): name is HostKind {
  return HOST_KINDS.has(name)
}
