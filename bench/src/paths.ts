/**
 * The paths measured: a chain of nodes from a sender (first) to a receiver (last). Each path is
 * set up from the receiver backwards, because every node must know the address of the next.
 */
import { RELAY_PROTOCOL, SINK_PROTOCOL, type Started, type Target } from './bench-node.ts'
import type { NodeHandle } from './rpc.ts'

export const PATH_IDS = ['bare', 'it-pipe', 'pause-resume', 'circuit-relay-v2', 'phoenix-0', 'phoenix-1', 'phoenix-2'] as const
export type PathId = (typeof PATH_IDS)[number]

export interface PathInfo {
  readonly id: PathId
  readonly label: string
  /** Nodes between the sender and the receiver. */
  readonly intermediates: number
}

export const PATHS: Record<PathId, PathInfo> = {
  bare: { id: 'bare', label: 'bare libp2p stream', intermediates: 0 },
  'it-pipe': { id: 'it-pipe', label: 'it-pipe relay', intermediates: 1 },
  'pause-resume': { id: 'pause-resume', label: 'pause/resume relay', intermediates: 1 },
  'circuit-relay-v2': { id: 'circuit-relay-v2', label: 'circuit-relay-v2', intermediates: 1 },
  'phoenix-0': { id: 'phoenix-0', label: 'Phoenix, direct', intermediates: 0 },
  'phoenix-1': { id: 'phoenix-1', label: 'Phoenix, 1 intermediate', intermediates: 1 },
  'phoenix-2': { id: 'phoenix-2', label: 'Phoenix, 2 intermediates', intermediates: 2 },
}

export const nodesOf = (path: PathId): number => PATHS[path].intermediates + 2

const LOOPBACK = ['/ip4/127.0.0.1/tcp/0']

/** The TCP address to dial a started node at. */
function tcpAddress(started: Started): string {
  const address = started.addresses.find((a) => a.includes('/tcp/') && !a.includes('/p2p-circuit'))
  if (address === undefined) throw new Error(`node ${started.peerId} has no TCP address (${started.addresses.join(', ')})`)
  return address
}

/** Starts the path's nodes on `nodes` (sender first) and says how the sender reaches the receiver. */
export async function setUpPath(path: PathId, nodes: readonly NodeHandle[]): Promise<Target> {
  if (nodes.length !== nodesOf(path)) throw new Error(`path ${path} needs ${nodesOf(path)} nodes, got ${nodes.length}`)
  const [sender, receiver] = [nodes[0]!, nodes[nodes.length - 1]!]
  switch (path) {
    case 'bare': {
      const sink = await receiver.call('start', { stack: 'bare', listen: LOOPBACK })
      await sender.call('start', { stack: 'bare', listen: [] })
      return { address: tcpAddress(sink), protocol: SINK_PROTOCOL }
    }
    case 'it-pipe':
    case 'pause-resume': {
      const kind = path === 'it-pipe' ? 'pipe' : 'pause'
      const sink = await receiver.call('start', { stack: 'bare', listen: LOOPBACK })
      const relay = await nodes[1]!.call('start', { stack: 'bare', listen: LOOPBACK, relay: { kind, next: tcpAddress(sink), nextProtocol: SINK_PROTOCOL } })
      await sender.call('start', { stack: 'bare', listen: [] })
      return { address: tcpAddress(relay), protocol: RELAY_PROTOCOL[kind] }
    }
    case 'circuit-relay-v2': {
      const relay = await nodes[1]!.call('start', { stack: 'relay-server', listen: LOOPBACK })
      const sink = await receiver.call('start', { stack: 'relay-client', relayAddress: tcpAddress(relay) })
      await sender.call('start', { stack: 'relay-client' })
      return { address: sink.addresses[0]!, protocol: SINK_PROTOCOL }
    }
    case 'phoenix-0':
    case 'phoenix-1':
    case 'phoenix-2': {
      // Discovery off and each node's only hub the next one: a chain, routed by name.
      let next = await receiver.call('start', { stack: 'phoenix', listen: LOOPBACK, hubs: [], names: ['dst'] })
      for (let i = nodes.length - 2; i >= 0; i--) {
        next = await nodes[i]!.call('start', { stack: 'phoenix', listen: LOOPBACK, hubs: [tcpAddress(next)], names: [i === 0 ? 'src' : `mid-${i}`] })
      }
      return { name: 'dst', hops: nodes.length - 1 }
    }
  }
}

/** Who a node is in a path: sender, middle (any intermediate) or receiver. */
export type Role = 'sender' | 'middle' | 'receiver'

export function roleOf(index: number, nodes: number): Role {
  return index === 0 ? 'sender' : index === nodes - 1 ? 'receiver' : 'middle'
}
