/**
 * One node of `psk-relay.ts`, in a process of its own, driven over the IPC channel: a config
 * message starts it (answered with its address), a flow message runs its sender and answers with
 * the flow's counts, `{ status: true }` answers with its memory, `{ exit: true }` stops it.
 */
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { generateKeyPair } from '@libp2p/crypto/keys'
import type { ConnectionGater } from '@libp2p/interface'
import { preSharedKey } from '@libp2p/pnet'
import { tcp } from '@libp2p/tcp'
import { createLibp2p, type Libp2p } from 'libp2p'
import { createPhoenixLibp2p, phoenix, PhoenixTransportError, subnetFirewall, type PhoenixNode } from '../src/index.ts'

export interface NodeConfig {
  readonly label: string
  readonly port: number
  /** The swarm key file's bytes, as a latin1 string (IPC carries JSON); absent = no private network (the baseline). */
  readonly psk?: string
  readonly hubs: string[]
  /** Whose protector guards the key (ours unless told; `@libp2p/pnet`'s is the baseline that dies). */
  readonly protector?: 'ours' | 'libp2p-pnet'
  /** Where every node sits, by port: the emulated firewall. */
  readonly placement: Record<number, { subnet: string; gateway: boolean }>
}

interface FlowRequest {
  readonly flowTo: string
  readonly seconds: number
  readonly window: number
  readonly messageBytes: number
}

export interface FlowReport {
  sent: number
  acked: number
  /** Failed sends by error code (a code-less error counts under its name). */
  failed: Record<string, number>
  /** Messages this node's application received (the other flow's). */
  received: number
}

const RSS_SAMPLE_MS = 100
/** How long every node may take to have a route to every other before the flows start. */
const ROUTES_WAIT_MS = 60_000

/** Our node (`createPhoenixLibp2p`, with our protector when there is a key). */
async function startOurs(config: NodeConfig): Promise<{ libp2p: Libp2p; phoenix: PhoenixNode }> {
  return createPhoenixLibp2p({
    listen: [`/ip4/127.0.0.1/tcp/${config.port}`],
    hubs: config.hubs,
    names: [config.label],
    ...(config.psk !== undefined ? { privateNetworkKey: new Uint8Array(Buffer.from(config.psk, 'latin1')) } : {}),
    connectionGater: firewallOf(config),
  })
}

/** The same node with `@libp2p/pnet`'s protector instead (the baseline that dies): TCP, Noise, Yamux, no connection monitor. */
async function startWithLibp2pPnet(config: NodeConfig): Promise<{ libp2p: Libp2p; phoenix: PhoenixNode }> {
  const libp2p = await createLibp2p({
    privateKey: await generateKeyPair('Ed25519'),
    addresses: { listen: [`/ip4/127.0.0.1/tcp/${config.port}`] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionGater: firewallOf(config),
    connectionProtector: preSharedKey({ psk: new Uint8Array(Buffer.from(config.psk!, 'latin1')) }),
    connectionMonitor: { enabled: false },
    services: { phoenix: phoenix({ hubs: config.hubs, names: [config.label] }) },
  })
  return { libp2p, phoenix: libp2p.services.phoenix }
}

function firewallOf(config: NodeConfig): ConnectionGater {
  return subnetFirewall(config.placement[config.port]!, (address) => config.placement[Number(/\/tcp\/(\d+)/.exec(address.toString())?.[1])])
}

async function start(config: NodeConfig): Promise<{ phoenix: PhoenixNode; stop: () => Promise<void>; address: string }> {
  const { libp2p, phoenix } = config.protector === 'libp2p-pnet' ? await startWithLibp2pPnet(config) : await startOurs(config)
  const stop = async () => {
    await libp2p.stop()
  }
  return { phoenix, stop, address: `/ip4/127.0.0.1/tcp/${config.port}/p2p/${libp2p.peerId.toString()}` }
}

/** Keeps `window` acknowledged sends to `flowTo` in flight until the time is up, then waits for them all to settle. */
async function flow(phoenix: PhoenixNode, request: FlowRequest, report: FlowReport): Promise<void> {
  const endAt = performance.now() + request.seconds * 1000
  const payload = new Uint8Array(request.messageBytes).fill(7)
  const sender = async () => {
    while (performance.now() < endAt) {
      report.sent++
      try {
        await phoenix.send(request.flowTo, payload, { ack: true, routeWaitMs: 20_000 })
        report.acked++
      } catch (error) {
        const code = error instanceof PhoenixTransportError ? error.code : (error as Error).name
        report.failed[code] = (report.failed[code] ?? 0) + 1
        // A failed send is counted, not retried at once: wait a little so a missing route is not a busy loop.
        await new Promise((r) => setTimeout(r, 50))
      }
    }
  }
  await Promise.all(Array.from({ length: request.window }, sender))
}

/** Reads every message delivered to this node, so the receiver is never the bottleneck. */
async function drain(phoenix: PhoenixNode, report: FlowReport): Promise<void> {
  for await (const _ of phoenix.messages()) report.received++
}

/** Resolves once this node has a route to every name in `names`, or rejects after `timeoutMs`. */
async function routesTo(phoenix: PhoenixNode, names: string[], timeoutMs: number): Promise<void> {
  const started = performance.now()
  while (!names.every((name) => phoenix.resolve(name) !== undefined)) {
    if (performance.now() - started > timeoutMs) throw new Error(`no route to ${names.filter((n) => phoenix.resolve(n) === undefined).join(', ')} after ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

export function runRelayNode(): void {
  let node: Awaited<ReturnType<typeof start>> | undefined
  const report: FlowReport = { sent: 0, acked: 0, failed: {}, received: 0 }
  let peakRssSampledBytes = 0
  setInterval(() => (peakRssSampledBytes = Math.max(peakRssSampledBytes, process.memoryUsage.rss())), RSS_SAMPLE_MS).unref()
  process.on('message', (message: NodeConfig | FlowRequest | { routesTo: string[] } | { status: true } | { exit: true }) => {
    void (async () => {
      if ('label' in message) {
        node = await start(message)
        drain(node.phoenix, report).catch((error: Error) => process.stderr.write(`${message.label}: receiving stopped: ${error.message}\n`))
        process.send!({ address: node.address })
      } else if ('routesTo' in message) {
        const error = await routesTo(node!.phoenix, message.routesTo, ROUTES_WAIT_MS).catch((e: Error) => e.message)
        process.send!({ error })
      } else if ('flowTo' in message) {
        await flow(node!.phoenix, message, report)
        process.send!(report)
      } else if ('status' in message) {
        process.send!({ rssBytes: process.memoryUsage.rss(), peakRssSampledBytes })
      } else {
        await node?.stop()
        process.exit(0)
      }
    })()
  })
}
