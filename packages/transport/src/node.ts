import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { generateKeyPair } from '@libp2p/crypto/keys'
import type { ConnectionGater, PrivateKey } from '@libp2p/interface'
import { tcp } from '@libp2p/tcp'
import type { Multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import { subnetFirewallAllows } from '@phoenix-overlay/core'
import type { PhoenixInit } from './api.ts'
import { privateNetwork } from './pnet/protector.ts'
import { phoenix, type PhoenixNode } from './service.ts'

export interface OverlayNodeOptions extends PhoenixInit {
  /** Listen multiaddrs, e.g. /ip4/127.0.0.1/tcp/0. */
  listen: string[]
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
 * - `maxIncomingPendingConnections`: connections being upgraded at once (default 10); a hub
 *   receives a connection from every node at start, so 1,024.
 * - `maxConnections`: open connections (default 300), raised to 2,048 so a clique of a few
 *   hundred nodes plus dials in flight fits.
 * - the connection monitor pings every connection and closes those that do not answer. It is
 *   off: Phoenix probes each neighbour on its own stream (liveness.ts: a probe after 2 s of
 *   silence, down after 6 s), which replaces it for every connection Phoenix uses, needs no ping
 *   service on the other side (our nodes run none), and also catches a peer whose socket is
 *   alive but whose process is hung.
 */
export async function createPhoenixLibp2p(options: OverlayNodeOptions): Promise<{ libp2p: Libp2p<{ phoenix: PhoenixNode }>; phoenix: PhoenixNode }> {
  const { listen, privateKey, connectionGater, privateNetworkKey, allowedPeers, ...init } = options
  const gater = membershipGater(connectionGater, allowedPeers)
  const libp2p = await createLibp2p({
    privateKey: privateKey ?? (await generateKeyPair('Ed25519')),
    addresses: { listen },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    ...(gater !== undefined ? { connectionGater: gater } : {}),
    ...(privateNetworkKey !== undefined ? { connectionProtector: privateNetwork({ psk: privateNetworkKey }) } : {}),
    connectionManager: {
      inboundConnectionThreshold: 10_000,
      maxIncomingPendingConnections: 1_024,
      maxConnections: 2_048,
    },
    connectionMonitor: { enabled: false },
    services: { phoenix: phoenix(init) },
  })
  return { libp2p, phoenix: libp2p.services.phoenix }
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
