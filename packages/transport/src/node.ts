import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { generateKeyPair } from '@libp2p/crypto/keys'
import type { ConnectionGater, MultiaddrConnection, PrivateKey } from '@libp2p/interface'
import { peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id'
import { tcp } from '@libp2p/tcp'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import { subnetFirewallAllows, unknownKeyProblem } from '@phoenix-overlay/core'
import type { PhoenixInit } from './api.ts'
import { TRANSPORT_TIMING } from './constants.ts'
import { SSH_DIAL_TIMEOUT_MS } from './dial-path.ts'
import { PhoenixTransportError, invalidInput, shown } from './errors.ts'
import { PHOENIX_INIT_KEYS, checkInitKeys, checkNodeOptionShapes } from './validate.ts'
import { privateNetwork } from './pnet/protector.ts'
import { formatPortRange, parsePortRange, withPortFromRange, type PortRange } from './port-range.ts'
import { checkRuntime } from './runtime.ts'
import { phoenix, type PhoenixNode } from './service.ts'

/** Every key `createPhoenixLibp2p` takes: the service's and its own (the type checks the list is whole). */
const NODE_OPTION_KEYS = [...PHOENIX_INIT_KEYS, ...Object.keys({ listen: 1, listenRange: 1, privateKey: 1, connectionGater: 1, privateNetworkKey: 1, allowedPeers: 1, strangers: 1 } satisfies Record<Exclude<keyof OverlayNodeOptions, keyof PhoenixInit>, 1>)]

export interface OverlayNodeOptions extends PhoenixInit {
  /** Listen multiaddrs, e.g. /ip4/127.0.0.1/tcp/0. */
  listen: string[]
  /**
   * A port range (`7000-7010`) the site's firewall leaves open: the listen addresses with port 0
   * get the first port of it free on all their hosts. Someone taking it between that probe and
   * our listen makes us try the next one; none free fails with INVALID_INPUT naming `listenRange`.
   */
  listenRange?: string | PortRange
  /** The node's identity; a new Ed25519 key if absent. */
  privateKey?: PrivateKey
  /** Who may dial whom (an emulated firewall); everything is allowed if absent. */
  connectionGater?: ConnectionGater
  /**
   * A private network: the pre-shared key, a swarm key file's bytes (libp2p pnet's format, as made
   * by `generateKey` of this package or of `@libp2p/pnet`). A node without the same key cannot
   * complete a handshake, so it can neither join nor be routed through. Wire-compatible with
   * `@libp2p/pnet`'s protector, without its cipher's memory limits (see `PrivateNetworkProtector`).
   */
  privateNetworkKey?: Uint8Array
  /** Peer ids allowed to connect, in either direction; absent = anyone (with the key, if one is set). */
  allowedPeers?: string[]
  /** What an inbound connection may cost before its handshake completes (defaults: `STRANGER_LIMITS`). */
  strangers?: Partial<StrangerLimits>
}

/**
 * What a stranger — an inbound connection whose handshake (private-network nonce, Noise) has not
 * completed, so nobody knows who it is — may cost. Garbage sent by plain TCP clients used to be
 * read, decrypted and buffered in full (1 MiB each: 200 of them took a node from 143 MB to 529 MB
 * of RSS, kept). Bounded, a stranger costs at most `strangerBytesMax` for at most
 * `strangerHandshakeTimeoutMs`, and at most `handshakesInProgressMax` of them at once.
 */
export const STRANGER_LIMITS = {
  /**
   * Bytes an inbound connection may send before its Noise handshake completes; past it the socket
   * is aborted. An honest handshake is under 2 KiB (24-byte nonce, protocol selection, three Noise
   * messages with the identity key); what follows it (muxer frames, the first Phoenix update) is
   * sent only once the dialler has negotiated the stream, after the handshake is accepted here.
   * 16 KiB is 8 times what is needed and caps what one stranger reads into memory.
   */
  strangerBytesMax: 16 * 1024,
  /**
   * Time an inbound connection has to complete the whole upgrade (libp2p's `inboundUpgradeTimeout`,
   * default 10 s), as long as a dialler gives it (TRANSPORT_TIMING.upgradeTimeoutMs): on a busy
   * host an honest handshake took over 5 s, and aborting it threw its work away and made both ends
   * start again (issue 19). A stranger that goes silent is closed sooner (`strangerSilenceMs`).
   */
  strangerHandshakeTimeoutMs: 30_000,
  /**
   * A stranger that has sent nothing for this long (since it connected, or since its last bytes)
   * is closed: a silent connection holds a slot 5 s, as before the whole-upgrade limit was raised.
   * An honest handshake answers each message within its own CPU time; a dialler that has not
   * written for 5 s is gone or a prober.
   */
  strangerSilenceMs: 5_000,
  /**
   * Inbound handshakes in progress at once (libp2p's `maxIncomingPendingConnections`, default 10;
   * more are refused at once and the dialler retries after its back-off). A hub is dialled by every
   * node at start-up; a loopback handshake takes a few milliseconds, so 128 admits a few hundred
   * nodes within a back-off or two, and bounds strangers' buffers to 128 × strangerBytesMax (2 MiB).
   */
  handshakesInProgressMax: 128,
}

export type StrangerLimits = { -readonly [K in keyof typeof STRANGER_LIMITS]: number }

/**
 * The caller's gater, plus the byte budget of strangers: every inbound connection is metered from
 * the moment it is accepted (`denyInboundConnection`) until its handshake has authenticated the
 * peer (`denyInboundEncryptedConnection`); past `bytesMax` it is aborted. The meter wraps the
 * connection's `onData` (where the TCP transport hands over each socket chunk), so it counts
 * bytes as they are read, before any protector or decoder buffers them.
 */
function strangerGater(gater: ConnectionGater | undefined, limits: StrangerLimits): ConnectionGater {
  type Metered = MultiaddrConnection & { onData?: (data: Uint8Array) => void }
  const { strangerBytesMax: bytesMax, strangerSilenceMs: silenceMs } = limits
  const silenceTimers = new WeakMap<MultiaddrConnection, ReturnType<typeof setTimeout>>()
  /**
   * Each metered connection's own `onData`, put back once it is authenticated. Bounded by the
   * handshakes in progress (`handshakesInProgressMax`): taken out at authentication, and weak, so
   * an aborted stranger's entry goes with its connection.
   */
  const unmetered = new WeakMap<MultiaddrConnection, (data: Uint8Array) => void>()
  const watchSilence = (conn: Metered) => {
    clearTimeout(silenceTimers.get(conn))
    const timer = setTimeout(() => {
      if (conn.status === 'open') conn.abort(new Error(`a stranger sent nothing for ${silenceMs} ms before its handshake completed (strangerSilenceMs)`))
    }, silenceMs)
    timer.unref?.()
    silenceTimers.set(conn, timer)
  }
  return {
    ...gater,
    denyInboundConnection: async (maConn) => {
      if ((await gater?.denyInboundConnection?.(maConn)) === true) return true
      const conn = maConn as Metered
      const onData = conn.onData
      if (typeof onData !== 'function') return false // a transport without the hook: the timeout and the pending limit still bound it
      let bytes = 0
      watchSilence(conn)
      unmetered.set(conn, onData)
      conn.onData = (data: Uint8Array) => {
        bytes += data.byteLength
        watchSilence(conn)
        if (bytes <= bytesMax) return onData.call(conn, data)
        conn.onData = () => undefined
        clearTimeout(silenceTimers.get(conn))
        conn.abort(new Error(`a stranger sent more than ${bytesMax} bytes before its handshake completed (strangerBytesMax)`))
      }
      return false
    },
    denyInboundEncryptedConnection: async (peer, maConn) => {
      // Authenticated: from here on the peer is a member, policed by its links and the routing core.
      // Its own `onData` back, assigned: `delete` made the connection a dictionary (V8's slow
      // properties), and every later socket read of it looked up its fields in a hash table
      // (issue 19: libp2p's read path ran slower in our processes than in a plain libp2p node's;
      // a 64 B message through one intermediate 11 µs faster one way without it, CHANGELOG).
      const onData = unmetered.get(maConn)
      if (onData !== undefined) (maConn as Metered).onData = onData
      unmetered.delete(maConn)
      clearTimeout(silenceTimers.get(maConn))
      return (await gater?.denyInboundEncryptedConnection?.(peer, maConn)) ?? false
    },
  }
}

/**
 * The caller's gater, plus the core's neighbour limit: a node with no room left refuses the
 * handshake, so the dialler sees a failed dial and backs off. Accepted and then closed, the
 * connection would be a neighbour that comes and goes at the dialler, each going retracting its
 * routes through us: in the simulator, gateways at their limit kept the network from ever
 * settling (packages/sim/README.md, "A node at its neighbour limit"). `node()` is undefined until libp2p has
 * made the service.
 */
function neighbourLimitGater(gater: ConnectionGater | undefined, node: () => PhoenixNode | undefined): ConnectionGater {
  return {
    ...gater,
    denyInboundEncryptedConnection: async (peer, conn) => node()?.acceptsNeighbour(peer.toString()) === false || ((await gater?.denyInboundEncryptedConnection?.(peer, conn)) ?? false),
  }
}

/** The caller's gater, narrowed to `allowedPeers` when a list is given. */
function membershipGater(gater: ConnectionGater | undefined, allowedPeers: string[] | undefined): ConnectionGater | undefined {
  if (allowedPeers === undefined) return gater
  const allowed = new Set(allowedPeers)
  const outsider = (peer: { toString(): string }) => !allowed.has(peer.toString())
  return {
    ...gater,
    denyDialPeer: async (peer) => outsider(peer) || ((await gater?.denyDialPeer?.(peer)) ?? false),
    denyInboundEncryptedConnection: async (peer, conn) => outsider(peer) || ((await gater?.denyInboundEncryptedConnection?.(peer, conn)) ?? false),
    denyOutboundEncryptedConnection: async (peer, conn) => outsider(peer) || ((await gater?.denyOutboundEncryptedConnection?.(peer, conn)) ?? false),
  }
}

/**
 * A libp2p node (TCP, Noise, Yamux) running the Phoenix service, with the settings that let
 * dozens of nodes share one host:
 * - `inboundConnectionThreshold`: libp2p accepts at most 5 inbound connections per second from
 *   one host by default, against connection floods. Every local node shares 127.0.0.1, and at
 *   start-up every node dials the hubs at once, so the limit is raised to 10,000/s.
 * - strangers (`STRANGER_LIMITS`): handshakes in progress at once (`maxIncomingPendingConnections`),
 *   the time one may take (`inboundUpgradeTimeout`) and the bytes a connection may send before it.
 * - `maxConnections`: open connections (default 300), raised to 2,048 so a clique of a few
 *   hundred nodes plus dials in flight fits.
 * - the connection monitor pings every connection and closes those that do not answer. It is
 *   off: Phoenix probes each neighbour on its own stream (liveness.ts: a probe after 2 s of
 *   silence, down after 6 s), which replaces it for every connection Phoenix uses, needs no ping
 *   service on the other side (our nodes run none), and also catches a peer whose socket is
 *   alive but whose process is hung.
 */
export async function createPhoenixLibp2p(options: OverlayNodeOptions): Promise<{ libp2p: Libp2p<{ phoenix: PhoenixNode }>; phoenix: PhoenixNode }> {
  checkRuntime()
  checkNodeOptionShapes(options)
  checkInitKeys(options, NODE_OPTION_KEYS)
  checkNodeOnlyOptions(options)
  const strangersProblem = unknownKeyProblem(options.strangers, Object.keys(STRANGER_LIMITS), 'strangers')
  // The problem starts with the misspelt key's path (`strangers.maxx is not an option …`): that is the field.
  if (strangersProblem !== undefined) throw new PhoenixTransportError('INVALID_INPUT', strangersProblem, { field: strangersProblem.slice(0, strangersProblem.indexOf(' ')) })
  checkListenAddresses(options.listen ?? [])
  checkAllowedPeers(options.allowedPeers ?? [])
  checkHubsAllowed(options.hubs ?? [], options.allowedPeers, options.privateKey)
  if (options.listenRange === undefined) return createStarted(options, options.listen)
  const given: unknown = options.listenRange
  // A range object is checked as its text form.
  const isRange = typeof given === 'object' && given !== null && 'first' in given && 'last' in given
  if (typeof given !== 'string' && !isRange) throw new PhoenixTransportError('INVALID_INPUT', `listenRange must be "FIRST-LAST" (e.g. "7000-7010") or { first, last }, got ${JSON.stringify(given)}`, { field: 'listenRange' })
  const range = parsePortRange(typeof given === 'string' ? given : formatPortRange(given as { first: number; last: number }), 'listenRange')
  const hosts = options.listen.map(portZeroHost).filter((h): h is string => h !== undefined)
  if (hosts.length === 0) throw new PhoenixTransportError('INVALID_INPUT', `listenRange ${formatPortRange(range)}: no listen address has port 0 for it to choose (e.g. /ip4/0.0.0.0/tcp/0)`, { field: 'listenRange' })
  const zeroPort = /\/tcp\/0(?=\/|$)/
  return withPortFromRange(range, hosts, (port) => createStarted(options, options.listen.map((a) => (portZeroHost(a) === undefined ? a : a.replace(zeroPort, `/tcp/${port}`)))), { what: 'listenRange' })
}

/**
 * What only a node of our making takes, checked before libp2p sees it: a missing `listen` started
 * a node listening nowhere (the type says it is required), a `privateKey` that is no key failed
 * as "Cannot read properties of undefined (reading 'type')", a gater that is no object was taken.
 */
function checkNodeOnlyOptions(options: OverlayNodeOptions): void {
  const given = options as unknown as Record<string, unknown>
  if (given.listen === undefined) throw invalidInput('listen', "is required: the addresses to listen on, e.g. ['/ip4/0.0.0.0/tcp/0'] ([] for a node that only dials)")
  const key = given.privateKey as { type?: unknown; raw?: unknown } | undefined
  if (key !== undefined && (typeof key !== 'object' || key === null || typeof key.type !== 'string' || !(key.raw instanceof Uint8Array))) {
    throw invalidInput('privateKey', `must be a libp2p private key (generateKeyPair or privateKeyFromProtobuf of @libp2p/crypto/keys), got ${typeof key === 'string' ? JSON.stringify(key).slice(0, 40) : typeof key}`)
  }
  const gater = given.connectionGater
  if (gater !== undefined && (typeof gater !== 'object' || gater === null || Array.isArray(gater))) throw invalidInput('connectionGater', `must be a libp2p ConnectionGater object, got ${typeof gater}`)
}

/**
 * Each listen address is a multiaddr: libp2p's own error names neither the option nor the address.
 * One given twice is said so: libp2p's EADDRINUSE read as if another process held the port.
 */
function checkListenAddresses(listen: readonly string[]): void {
  listen.forEach((address, i) => {
    if (listen.indexOf(address) !== i) throw invalidInput('listen', `${JSON.stringify(address)} is given twice`)
  })
  for (const address of listen) {
    try {
      multiaddr(address)
    } catch (error) {
      throw invalidInput('listen', `${JSON.stringify(address)} is not a multiaddr: ${(error as Error).message}`)
    }
  }
}

/** Each allowed peer is a peer id: a misspelt one would quietly keep that peer out. */
function checkAllowedPeers(peers: readonly string[]): void {
  for (const peer of peers) {
    try {
      peerIdFromString(peer)
    } catch {
      // libp2p's own message is about multibase decoders.
      throw invalidInput('allowedPeers', `${JSON.stringify(peer)} is not a peer id (one such as 12D3KooW…, as a node prints it at start)`)
    }
  }
}

/**
 * A hub named by a peer id that `allowedPeers` leaves out would never be dialled (the gater
 * blocks it: the node sat with no neighbour, logging "blocked by gater.allowDialPeer" at each
 * redial). Our own id is no hub to dial (a job's shared hub list names the hub too).
 */
function checkHubsAllowed(hubs: readonly string[], allowedPeers: readonly string[] | undefined, privateKey: PrivateKey | undefined): void {
  // An empty list is no exception: it allows no peer at all, so every hub is left out.
  if (allowedPeers === undefined) return
  const own = privateKey === undefined ? undefined : peerIdFromPrivateKey(privateKey).toString()
  for (const hub of hubs) {
    const peer = peerOfAddress(hub)
    if (peer === undefined || peer === own || allowedPeers.includes(peer)) continue
    throw invalidInput('hubs', `${JSON.stringify(hub)} is peer ${peer}, which allowedPeers does not list: the node would never dial it (add the peer to allowedPeers)`)
  }
}

/** The peer id an address ends in; undefined without one, or for what is no multiaddr (refused elsewhere, naming it). */
function peerOfAddress(address: string): string | undefined {
  try {
    return multiaddr(address).getComponents().findLast((c) => c.name === 'p2p')?.value
  } catch {
    return undefined
  }
}

/** The host of a `/ip4|ip6/<host>/tcp/0` listen address, or undefined for any other. */
function portZeroHost(address: string): string | undefined {
  return /^\/ip[46]\/([^/]+)\/tcp\/0(?:\/|$)/.exec(address)?.[1]
}

/** createLibp2p, started; a node whose start failed is stopped again (its listeners closed) before the error is thrown. */
async function createStarted(options: OverlayNodeOptions, listen: string[]): Promise<{ libp2p: Libp2p<{ phoenix: PhoenixNode }>; phoenix: PhoenixNode }> {
  const { listen: _listen, listenRange: _range, privateKey, connectionGater, privateNetworkKey, allowedPeers, strangers, ...init } = options
  const stranger = { ...STRANGER_LIMITS, ...strangers }
  for (const [key, value] of Object.entries(stranger)) {
    if (!Number.isInteger(value) || value < 1) throw new PhoenixTransportError('INVALID_INPUT', `strangers.${key} must be a positive integer, got ${shown(value)}`, { field: `strangers.${key}` })
  }
  let service: PhoenixNode | undefined
  const gater = strangerGater(neighbourLimitGater(membershipGater(connectionGater, allowedPeers), () => service), stranger)
  const timing = { ...TRANSPORT_TIMING, ...init.timing }
  // libp2p cuts each address's dial at addressDialTimeout (6 s) whatever our signal says: it must
  // cover a direct dial's two phases (DialDeadline) and an SSH dial.
  const dialMaxMs = Math.max(timing.dialTimeoutMs + timing.upgradeTimeoutMs, SSH_DIAL_TIMEOUT_MS)
  const libp2p = await createLibp2p({
    privateKey: privateKey ?? (await generateKeyPair('Ed25519')),
    addresses: { listen },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionGater: gater,
    ...(privateNetworkKey !== undefined ? { connectionProtector: privateNetwork({ psk: privateNetworkKey }) } : {}),
    connectionManager: {
      inboundConnectionThreshold: 10_000,
      maxIncomingPendingConnections: stranger.handshakesInProgressMax,
      inboundUpgradeTimeout: stranger.strangerHandshakeTimeoutMs,
      addressDialTimeout: dialMaxMs,
      dialTimeout: dialMaxMs,
      maxConnections: 2_048,
    },
    connectionMonitor: { enabled: false },
    services: { phoenix: phoenix(init) },
    start: false,
  })
  service = libp2p.services.phoenix
  try {
    await libp2p.start()
  } catch (error) {
    await Promise.resolve(libp2p.stop()).catch(() => undefined)
    throw listenFailure(error)
  }
  return { libp2p, phoenix: libp2p.services.phoenix }
}

const LISTEN_CAUSES: Record<string, string> = {
  EADDRINUSE: 'address already in use (another process listens there; pick another port, or /tcp/0 for any free one)',
  EADDRNOTAVAIL: 'not an address of this machine',
  EACCES: 'permission denied (ports below 1024 need privileges)',
}

/**
 * libp2p reports a listen failure as one multi-line error (stack traces, and advice about a
 * `transportManager` option our callers do not have): it becomes one line naming the `listen`
 * address and the cause, `INVALID_INPUT` with `field: 'listen'`; libp2p's error is its `cause`
 * (a port in use may pass on a retry: `cause` says EADDRINUSE). Any other error passes as it is.
 */
function listenFailure(error: unknown): unknown {
  if (!(error instanceof Error) || error.name !== 'UnsupportedListenAddressesError') return error
  const first = /^\s+(\/\S+): (?:\w*Error: )?(.+)$/m.exec(error.message)
  const code = first === null ? undefined : /\b(E[A-Z]+)\b/.exec(first[2]!)?.[1]
  const line = first === null ? error.message.split('\n')[0]! : `${first[1]}: ${(code !== undefined ? LISTEN_CAUSES[code] : undefined) ?? first[2]}`
  return Object.assign(invalidInput('listen', line), { cause: error })
}

export interface SubnetPlacement {
  readonly subnet: string
  /** Gateways are the only nodes of a subnet that accept connections from other subnets. */
  readonly gateway: boolean
}

/**
 * The paper's firewall, emulated in one process: inside a subnet every node may dial every
 * other; across subnets only gateways accept. `placementOf` maps a dialled address to where that
 * node sits (e.g. by port); unknown addresses are denied. A denied dial fails at once here; the
 * network-namespace tests have the real thing, where forbidden SYNs are dropped.
 */
export function subnetFirewall(own: SubnetPlacement, placementOf: (address: Multiaddr) => SubnetPlacement | undefined): ConnectionGater {
  return {
    denyDialMultiaddr: (address) => {
      const target = placementOf(address)
      return target === undefined || !subnetFirewallAllows(own, target)
    },
  }
}
