/**
 * One Phoenix node in a child process, for tests and benches that stop (SIGSTOP), kill (SIGKILL)
 * and restart real processes. Run as `node --import tsx child-node.ts '<json ChildConfig>'`
 * (spawned with `process.execPath` directly, so the pid is the node's own and signals reach it).
 *
 * Prints `READY <peer id> <listen address>` once listening, then, every `reportEveryMs`, one
 * `STATUS <json ChildStatus>` line. With `sendTo`, sends `payloadBytes` messages to that name as
 * fast as the overlay takes them (a QUEUE_FULL send is retried 5 ms later: the backpressure).
 */
import { privateKeyFromProtobuf } from '@libp2p/crypto/keys'
import { createPhoenixLibp2p, PhoenixTransportError, type TransportLimits, type TransportTiming } from '../src/index.ts'

export interface ChildConfig {
  listen: string
  hubs?: string[]
  names?: string[]
  /** The identity, a libp2p private key protobuf in hex (a restart with the same key is the same node). */
  keyHex?: string
  timing?: Partial<TransportTiming>
  limits?: Partial<TransportLimits>
  /** false: connect only to the hubs (a fixed topology). */
  discovery?: boolean
  sendTo?: string
  payloadBytes?: number
  reportEveryMs?: number
}

export interface ChildStatus {
  rssBytes: number
  arrayBuffersBytes: number
  outboundBytesQueued: number
  streamWriteBufferBytes: number
  messagesSent: number
  messagesReceived: number
  neighbours: number
}

const config = JSON.parse(process.argv[2] ?? '{}') as ChildConfig
const { libp2p, phoenix } = await createPhoenixLibp2p({
  listen: [config.listen],
  hubs: config.hubs ?? [],
  names: config.names ?? [],
  ...(config.keyHex !== undefined ? { privateKey: privateKeyFromProtobuf(Buffer.from(config.keyHex, 'hex')) } : {}),
  ...(config.timing !== undefined ? { timing: config.timing } : {}),
  ...(config.limits !== undefined ? { limits: config.limits } : {}),
  ...(config.discovery !== undefined ? { discovery: config.discovery } : {}),
})
await libp2p.start()
let received = 0
phoenix.addEventListener('message', () => void received++)
console.log(`READY ${libp2p.peerId.toString()} ${libp2p.getMultiaddrs()[0]!.toString()}`)

let sent = 0
const gauge = (text: string, name: string) => Number(text.match(new RegExp(`^phoenix_${name} (\\d+)$`, 'm'))?.[1] ?? 0)
setInterval(() => {
  const memory = process.memoryUsage()
  const metrics = phoenix.metricsText()
  const status: ChildStatus = {
    rssBytes: memory.rss,
    arrayBuffersBytes: memory.arrayBuffers,
    outboundBytesQueued: gauge(metrics, 'outbound_bytes_queued'),
    streamWriteBufferBytes: gauge(metrics, 'stream_write_buffer_bytes'),
    messagesSent: sent,
    messagesReceived: received,
    neighbours: phoenix.peers().length,
  }
  console.log(`STATUS ${JSON.stringify(status)}`)
}, config.reportEveryMs ?? 500)

if (config.sendTo !== undefined) {
  const payload = new Uint8Array(config.payloadBytes ?? 64 * 1024)
  for (;;) {
    try {
      await phoenix.send(config.sendTo, payload, { routeWaitMs: 60_000 })
      sent++
      if (sent % 64 === 0) await new Promise((r) => setImmediate(r))
    } catch (error) {
      if (!(error instanceof PhoenixTransportError) || (error.code !== 'QUEUE_FULL' && error.code !== 'NO_ROUTE')) throw error
      await new Promise((r) => setTimeout(r, 5))
    }
  }
}
