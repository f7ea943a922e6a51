/**
 * How this node reaches an address the core asks it to dial (SITES.md, "phase 2"): which of a
 * peer's discovered addresses are worth a dial at all (address classes, judged against what this
 * host holds), and, for an SSH address, the tunnel that carries the dial. Also what this node
 * advertises of its own addresses: the classes others can use, and its SSH address when it is a
 * gateway reachable only through SSH.
 *
 * The core dials one address of an owner at a time, in the order the owner's record lists them;
 * a node advertises its addresses best class first, so the first dial goes to the best class both
 * ends hold, and an address this host must not dial (another site's private address, loopback on
 * another host, a family it lacks, an SSH hop without an SSH identity) fails at once, without a
 * packet sent, and the next one is tried.
 */
import { networkInterfaces } from 'node:os'
import { multiaddr } from '@multiformats/multiaddr'
import { advertisable, classifyAddress, interfaceCidrs, orderForDialing, sitePrefix, type AddressClass, type LocalView } from './address-classes.ts'
import { invalidInput, PhoenixTransportError } from './errors.ts'
import type { Metrics } from './metrics.ts'
import { formatSshAddress, isSshAddress, parseSshAddress, type SshAddress } from './ssh-address.ts'
import { SshTunnelError, SshTunnels, type SshTunnelLease, type SshTunnelLimits, type SshTunnelTiming } from './ssh-tunnel.ts'

/** `PhoenixInit.ssh`: reaching neighbours through the system's OpenSSH client, and being reached that way. */
export interface SshInit {
  /** The private key to log in with (`ssh -i`). Without it this node never dials SSH addresses. */
  identityFile?: string
  /** Host keys learned on first contact and checked afterwards (default `~/.ssh/known_hosts`). */
  knownHostsFile?: string
  /** Refuse SSH servers not already in `knownHostsFile` instead of learning them. */
  strictHostKeys?: boolean
  /** An ssh_config to use instead of the user's (`ssh -F`). */
  configFile?: string
  /**
   * `user@host[:port]`: this node (a gateway whose site lets only SSH in) is reached by logging in
   * there; its record then carries the SSH form of its own listen address.
   */
  advertise?: string
  /** The OpenSSH client (default `ssh` on PATH). */
  sshPath?: string
  limits?: Partial<SshTunnelLimits>
  timing?: Partial<SshTunnelTiming>
  /** How messages name these options (the CLI passes its flags); default `ssh.identityFile` and so on. */
  optionNames?: { identityFile?: string; knownHostsFile?: string; configFile?: string; advertise?: string }
}

/**
 * How long an SSH dial may take: the tunnel's start (TCP, key exchange, authentication, forward:
 * `readyTimeoutMs`, 10 s) plus the libp2p handshake through it. A direct dial's 5 s would cut a
 * slow but healthy SSH login short.
 */
export const SSH_DIAL_TIMEOUT_MS = 15_000

/**
 * Addresses whose last failure reported at error level is remembered (SSH addresses, and hubs
 * that answer with another peer id), so an address that keeps failing is reported once per cause
 * (its redials every few seconds go to debug): a handful in practice, the hubs and SSH addresses
 * this node dials; past the bound the oldest is forgotten (and may be reported again).
 */
export const FAILURES_REPORTED_MAX = 64

/**
 * Causes remembered per address since its last success: a hub on another private network fails
 * by turns with a reset handshake and a timeout, and each was logged again whenever it followed
 * the other (every 4-9 s, found by a new-user audit). A few causes cover such alternation.
 */
export const FAILURE_CAUSES_PER_ADDRESS_MAX = 8

export type DialPlan =
  | { readonly kind: 'skip'; readonly class: AddressClass | 'malformed'; readonly viaSsh: boolean; readonly reason: string }
  | { readonly kind: 'direct'; readonly class: AddressClass }
  | { readonly kind: 'ssh'; readonly class: AddressClass; readonly ssh: SshAddress }

const metricName = (c: string) => c.replace(/-/g, '_')

export class DialPath {
  private local: LocalView
  /** The SSH tunnels of one run (made at start, stopped at stop); undefined without an identity. */
  private tunnels: SshTunnels | undefined
  private readonly advertiseAs: { user: string; host: string; port: number } | undefined
  private readonly sitePrefixes: readonly string[]
  /** The failures reported of each such address since its last success (bounded: FAILURES_REPORTED_MAX addresses, FAILURE_CAUSES_PER_ADDRESS_MAX causes each). */
  private readonly failuresReported = new Map<string, string[]>()

  constructor(
    private readonly ssh: SshInit | undefined,
    sitePrefixes: readonly string[] | undefined,
    private readonly metrics: Metrics,
  ) {
    this.sitePrefixes = sitePrefixes ?? []
    for (const p of this.sitePrefixes) sitePrefix(p, 'sitePrefixes')
    this.advertiseAs = ssh?.advertise === undefined ? undefined : parseAdvertise(ssh.advertise, ssh.optionNames?.advertise ?? 'ssh.advertise')
    this.local = { cidrs: [], listening: [], sitePrefixes: this.sitePrefixes, ssh: this.canSsh }
  }

  /** Whether this node can dial SSH addresses (it has an identity). */
  get canSsh(): boolean {
    return this.ssh?.identityFile !== undefined
  }

  /**
   * A run begins: its tunnel supervisor is made, and fails the start (one line naming the option)
   * if the SSH client or the identity cannot work, rather than every SSH dial later.
   */
  async start(log: (message: string) => void): Promise<void> {
    const ssh = this.ssh
    if (ssh?.identityFile === undefined) return
    const tunnels = new SshTunnels({
      identityFile: ssh.identityFile,
      knownHostsFile: ssh.knownHostsFile ?? `${process.env.HOME ?? '.'}/.ssh/known_hosts`,
      ...(ssh.strictHostKeys !== undefined ? { strictHostKeys: ssh.strictHostKeys } : {}),
      ...(ssh.configFile !== undefined ? { configFile: ssh.configFile } : {}),
      ...(ssh.sshPath !== undefined ? { sshPath: ssh.sshPath } : {}),
      ...(ssh.limits !== undefined ? { limits: ssh.limits } : {}),
      ...(ssh.timing !== undefined ? { timing: ssh.timing } : {}),
      optionNames: { identityFile: ssh.optionNames?.identityFile ?? 'ssh.identityFile', knownHostsFile: ssh.optionNames?.knownHostsFile ?? 'ssh.knownHostsFile', configFile: ssh.optionNames?.configFile ?? 'ssh.configFile' },
      log,
    })
    const { metrics } = this
    tunnels.addEventListener('tunnel:up', ({ detail }) => metrics.count(detail.restarts > 0 ? 'ssh_tunnel_restarts' : 'ssh_tunnels_started'))
    tunnels.addEventListener('tunnel:down', () => metrics.count('ssh_tunnels_down'))
    tunnels.addEventListener('tunnel:failed', ({ detail }) => metrics.count(`ssh_tunnel_failures_${detail.error.code.toLowerCase()}`))
    tunnels.addEventListener('forward:refused', () => metrics.count('ssh_forwards_refused'))
    await tunnels.check().catch((error: unknown) => {
      // Every error of the node's options is a PhoenixTransportError naming the option; the
      // supervisor's own error, with its code, is the cause.
      if (!(error instanceof SshTunnelError)) throw error
      // Not given, the known-hosts file is ~/.ssh/known_hosts: say so, or the line names a file the user never chose.
      const defaulted = error.field === 'knownHostsFile' && ssh.knownHostsFile === undefined ? ` (the default, as none was given: create that directory, or give ${ssh.optionNames?.knownHostsFile ?? 'ssh.knownHostsFile'})` : ''
      throw Object.assign(new PhoenixTransportError('INVALID_INPUT', `${error.message}${defaulted}`, { field: `ssh.${error.field ?? 'identityFile'}` }), { cause: error })
    })
    this.tunnels = tunnels
  }

  /** What this host holds now: its interfaces and our listen addresses (called when they change). */
  refresh(listening: readonly string[]): void {
    this.local = { cidrs: interfaceCidrs(networkInterfaces()), listening: listening.filter(judgeable), sitePrefixes: this.sitePrefixes, ssh: this.canSsh }
  }

  /**
   * Whether and how to dial `address`. Hubs are the user's explicit choice: dialled whatever their
   * class (an SSH hub still needs an identity).
   */
  plan(address: string, hub: boolean): DialPlan {
    let classified
    try {
      classified = classifyAddress(address)
    } catch (error) {
      return { kind: 'skip', class: 'malformed', viaSsh: false, reason: (error as Error).message }
    }
    if (classified.viaSsh && !this.canSsh) return { kind: 'skip', class: classified.class, viaSsh: true, reason: `an SSH address, and this node has no SSH identity (${this.ssh?.optionNames?.identityFile ?? 'ssh.identityFile'})` }
    if (!hub && orderForDialing([address], this.local).dial.length === 0) return { kind: 'skip', class: classified.class, viaSsh: classified.viaSsh, reason: `a ${classified.class} address this host cannot reach` }
    if (!classified.viaSsh) return { kind: 'direct', class: classified.class }
    return { kind: 'ssh', class: classified.class, ssh: parseSshAddress(address) }
  }

  /**
   * Counts a dial about to start, or skipped, by the class of its address (an SSH address by its
   * server's): `phoenix_dials_<class>[_ssh]_total`, `phoenix_dials_skipped_<class>[_ssh]_total`.
   */
  count(plan: DialPlan): void {
    const ssh = plan.kind === 'ssh' || (plan.kind === 'skip' && plan.viaSsh) ? '_ssh' : ''
    this.metrics.count(`dials_${plan.kind === 'skip' ? 'skipped_' : ''}${metricName(plan.class)}${ssh}`)
  }

  /**
   * Whether this failure of a dial to `address` is news (a cause not reported since its last
   * success; numbers in the message, such as a timeout's milliseconds, do not make it new):
   * worth a line at error level.
   */
  failureIsNew(address: string, message: string): boolean {
    const cause = String(message).replace(/\d+/g, '#')
    const reported = this.failuresReported.get(address) ?? []
    if (reported.includes(cause)) return false
    this.failuresReported.delete(address)
    if (this.failuresReported.size >= FAILURES_REPORTED_MAX) this.failuresReported.delete(this.failuresReported.keys().next().value!)
    this.failuresReported.set(address, [...reported.slice(1 - FAILURE_CAUSES_PER_ADDRESS_MAX), cause])
    return true
  }

  /** A dial of `address` succeeded: its next failure is news again. */
  dialSucceeded(address: string): void {
    this.failuresReported.delete(address)
  }

  /** The tunnel for an SSH address, and the address libp2p dials through it. */
  async openTunnel(ssh: SshAddress, signal: AbortSignal): Promise<{ lease: SshTunnelLease; target: string }> {
    if (this.tunnels === undefined) throw new Error('the node is not running')
    const lease = await this.tunnels.open(ssh, { signal })
    return { lease, target: `${lease.localAddress}${ssh.peerId === undefined ? '' : `/p2p/${ssh.peerId}`}` }
  }

  /**
   * What to advertise of `own` (our listen addresses), at most `max`: `advertisable`'s choice,
   * plus our SSH address when `ssh.advertise` is set, pointing at the listen address the SSH
   * server can reach (a loopback one if we listen there, else our first).
   */
  advertised(own: readonly string[], peerId: string, max: number): string[] {
    const usable = own.filter(judgeable)
    const chosen = advertisable(usable)
    const sshAddress = this.sshAddress(usable, peerId)
    // The SSH address keeps its place within `max`: for a gateway it is the way in.
    return sshAddress === undefined ? chosen.slice(0, max) : [...chosen.slice(0, max - 1), sshAddress]
  }

  /** This node's SSH address, if it advertises one and listens on TCP. */
  sshAddress(own: readonly string[], peerId: string): string | undefined {
    if (this.advertiseAs === undefined) return undefined
    const tcp = own.map(tcpTarget).filter((t): t is { target: string; loopback: boolean } => t !== undefined)
    const target = tcp.find((t) => t.loopback) ?? tcp[0]
    return target === undefined ? undefined : formatSshAddress(this.advertiseAs, target.target, peerId)
  }

  /** Closes every tunnel (their ssh processes end). */
  async stop(): Promise<void> {
    const tunnels = this.tunnels
    this.tunnels = undefined
    await tunnels?.stop()
  }

  gauges(): Record<string, number> {
    const info = this.tunnels?.tunnelsInfo() ?? []
    return { ssh_tunnels_up: info.filter((t) => t.state === 'up').length, ssh_tunnels: info.length }
  }
}

/** An address the classes can judge (a /p2p-circuit or /memory one is left out of both lists). */
function judgeable(address: string): boolean {
  try {
    classifyAddress(address, 'own address')
    return true
  } catch {
    return false
  }
}

/** `/ip4/h/tcp/p…` → the `/ip4/h/tcp/p` part, and whether h is loopback. */
function tcpTarget(address: string): { target: string; loopback: boolean } | undefined {
  const [host, tcp] = multiaddr(address).getComponents()
  if (host === undefined || tcp?.name !== 'tcp' || (host.name !== 'ip4' && host.name !== 'ip6')) return undefined
  const c = classifyAddress(`/${host.name}/${host.value}`, 'own address').class
  return { target: `/${host.name}/${host.value}/tcp/${tcp.value}`, loopback: c === 'loopback' }
}

/** `user@host[:port]` (an IPv6 host in brackets: `user@[2001:db8::1]:22`). */
export function parseAdvertise(text: string, what: string): { user: string; host: string; port: number } {
  const m = /^([^@\s]+)@(\[[0-9a-fA-F:.]+\]|[^:@\s[\]]+)(?::(\d{1,5}))?$/.exec(text)
  if (m === null) throw invalidInput(what, `${JSON.stringify(text)}: expected user@host[:port], like phoenix@198.51.100.6:22`)
  const host = m[2]!.replace(/^\[|\]$/g, '')
  const server = { user: m[1]!, host, port: m[3] === undefined ? 22 : Number(m[3]) }
  try {
    formatSshAddress(server, '/ip4/127.0.0.1/tcp/1')
  } catch (error) {
    throw invalidInput(what, `${JSON.stringify(text)}: ${(error as Error).message.replace(/^formatted SSH address "[^"]*" is not an SSH address: /, '')}`)
  }
  return server
}

export { isSshAddress }
