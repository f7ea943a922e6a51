/**
 * One node of the flows bench (flows.ts), in its own process: run as
 * `node --import tsx flows-node.ts '<json FlowsNodeConfig>'`. Prints `READY <peer id> <address>`,
 * then a `STATUS <json FlowsNodeStatus>` line every `reportEveryMs`. With `flows`, sends
 * acknowledged `payloadBytes` messages to each of those names, up to `outstandingMax[name]`
 * unsettled, as fast as the overlay takes them (after a QUEUE_FULL that flow pauses 2 ms). A line
 * `stop` on stdin ends the sending; once every send has settled the status says `settled`.
 */
import { createInterface } from 'node:readline'
import { createPhoenixLibp2p, PhoenixTransportError, type TransportLimits, type TransportTiming } from '../src/index.ts'

export interface FlowsNodeConfig {
  listen: string
  hubs: string[]
  names: string[]
  limits: Partial<TransportLimits>
  timing: Partial<TransportTiming>
  flows: string[]
  payloadBytes: number
  /** Unsettled sends per flow at most, by destination name. */
  outstandingMax: Record<string, number>
  reportEveryMs: number
}

export interface FlowStatus {
  acked: number
  /** Sends refused with QUEUE_FULL (nothing sent). */
  refused: number
  /** Sends failed otherwise, by error code and reason. */
  failed: Record<string, number>
  /** Sends waiting for their ack now. */
  outstanding: number
}

export interface FlowsNodeStatus {
  received: number
  flows: Record<string, FlowStatus>
  settled: boolean
  creditWaitingBytes: number
  rssBytes: number
}

const config = JSON.parse(process.argv[2] ?? '{}') as FlowsNodeConfig
const { libp2p, phoenix } = await createPhoenixLibp2p({ listen: [config.listen], hubs: config.hubs, names: config.names, discovery: false, limits: config.limits, timing: config.timing })
await libp2p.start()
let received = 0
phoenix.addEventListener('message', () => void received++)
console.log(`READY ${libp2p.peerId.toString()} ${libp2p.getMultiaddrs()[0]!.toString()}`)

const flows: Record<string, FlowStatus> = Object.fromEntries(config.flows.map((name) => [name, { acked: 0, refused: 0, failed: {}, outstanding: 0 }]))
let sending = config.flows.length > 0
const gauge = (name: string) => Number(phoenix.metricsText().match(new RegExp(`^phoenix_${name} (\\d+)$`, 'm'))?.[1] ?? 0)
const report = () => {
  const settled = !sending && Object.values(flows).every((f) => f.outstanding === 0)
  const status: FlowsNodeStatus = { received, flows, settled, creditWaitingBytes: gauge('credit_waiting_bytes'), rssBytes: process.memoryUsage().rss }
  console.log(`STATUS ${JSON.stringify(status)}`)
}
setInterval(report, config.reportEveryMs)
// A clean exit on SIGTERM, so that `--cpu-prof` writes its profile.
process.on('SIGTERM', () => process.exit(0))
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === 'stop') sending = false
})

async function sendFlow(name: string, flow: FlowStatus): Promise<void> {
  const payload = new Uint8Array(config.payloadBytes)
  const outstandingMax = config.outstandingMax[name] ?? 1
  for (let issued = 0; sending; issued++) {
    if (flow.outstanding >= outstandingMax) {
      await new Promise((r) => setTimeout(r, 1))
      continue
    }
    flow.outstanding++
    void phoenix.send(name, payload, { ack: true, ackTimeoutMs: 120_000, routeWaitMs: 60_000 }).then(
      () => {
        flow.outstanding--
        flow.acked++
      },
      (error: unknown) => {
        flow.outstanding--
        if (error instanceof PhoenixTransportError && error.code === 'QUEUE_FULL') {
          flow.refused++
          return
        }
        const key = error instanceof PhoenixTransportError ? `${error.code}/${error.reason ?? ''}` : String(error)
        flow.failed[key] = (flow.failed[key] ?? 0) + 1
      },
    )
    // A send refused QUEUE_FULL is refused at once, its handler run within a few microtasks (an
    // accepted one settles at its ack): after one, this flow waits 2 ms before trying again
    // instead of issuing more to be refused.
    const refusedBefore = flow.refused
    for (let i = 0; i < 3; i++) await Promise.resolve()
    if (flow.refused > refusedBefore) await new Promise((r) => setTimeout(r, 2))
    if (issued % 16 === 15) await new Promise((r) => setImmediate(r))
  }
}

await Promise.all(Object.entries(flows).map(([name, flow]) => sendFlow(name, flow)))
