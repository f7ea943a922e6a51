/**
 * The libp2p nodes of the baselines: the same stack `createPhoenixLibp2p` builds (TCP, Noise,
 * Yamux, the same connection-manager settings, the connection monitor off), without the Phoenix
 * service; and the circuit-relay-v2 relay and clients on that same stack.
 */
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { circuitRelayServer, circuitRelayTransport } from '@libp2p/circuit-relay-v2'
import { identify } from '@libp2p/identify'
import { tcp } from '@libp2p/tcp'
import { createLibp2p, type Libp2p, type Libp2pOptions } from 'libp2p'

/** The transport's settings for many nodes on one host (see packages/transport/src/node.ts). */
const COMMON = {
  connectionEncrypters: [noise()],
  streamMuxers: [yamux()],
  connectionManager: { inboundConnectionThreshold: 10_000, maxIncomingPendingConnections: 1_024, maxConnections: 2_048 },
  connectionMonitor: { enabled: false },
} satisfies Libp2pOptions

/** A plain node: the stack the overlay runs on, with no service. */
export async function bareNode(listen: string[]): Promise<Libp2p> {
  return createLibp2p({ ...COMMON, addresses: { listen }, transports: [tcp()] })
}

/**
 * Circuit relay limits, raised so one relayed connection can carry the whole transfer: by default
 * a relayed connection may carry 128 KiB for 2 minutes (DEFAULT_DATA_LIMIT and
 * DEFAULT_DURATION_LIMIT in @libp2p/circuit-relay-v2's constants). The limits stay applied (the
 * relay still counts every byte, as a deployed relay does), at 1 TiB and one day.
 */
export const RELAY_DATA_LIMIT_BYTES = 2n ** 40n
export const RELAY_DURATION_LIMIT_MS = 24 * 3600 * 1000

/** A circuit-relay-v2 relay (hop) server on the overlay's stack. */
export async function relayServerNode(listen: string[]): Promise<Libp2p> {
  return createLibp2p({
    ...COMMON,
    addresses: { listen },
    transports: [tcp(), circuitRelayTransport()],
    services: {
      identify: identify(),
      relay: circuitRelayServer({ reservations: { defaultDataLimit: RELAY_DATA_LIMIT_BYTES, defaultDurationLimit: RELAY_DURATION_LIMIT_MS } }),
    },
  })
}

/**
 * A circuit relay client. With `relayAddress` it listens through that relay (it makes a
 * reservation there, and dialling `<relay>/p2p-circuit/p2p/<it>` reaches it); without, it only
 * dials. As in js-libp2p's own tests (packages/integration-tests/test/circuit-relay.node.ts,
 * "pre-configured relay address").
 */
export async function relayClientNode(relayAddress: string | undefined): Promise<Libp2p> {
  return createLibp2p({
    ...COMMON,
    addresses: { listen: relayAddress === undefined ? [] : [`${relayAddress}/p2p-circuit`] },
    transports: [tcp(), circuitRelayTransport()],
    services: { identify: identify() },
  })
}
