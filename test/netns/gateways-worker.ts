/**
 * One overlay node of the several-gateways measurement (gateways-run.ts), run inside a site's
 * namespace: `node --import tsx gateways-worker.ts '<WorkerConfig as JSON>'`. It prints one JSON
 * object per line on stdout and takes one JSON command per line on stdin:
 *
 * - `{"cmd":"routes"}` -> `{"event":"routes","routes":[…RouteView]}`
 * - `{"cmd":"metrics"}` -> `{"event":"metrics","forwarded":n}`
 * - `{"cmd":"send", …SendPlan}` (a sender) -> when every send settled: `{"event":"sent","records":[…]}`
 * - `{"cmd":"arrivals"}` (a receiver) -> `{"event":"arrivals","arrivals":[…]}`
 *
 * Each message of a flow carries its sequence number and send time (epoch ms; every namespace
 * shares the machine's clock) in its first 12 bytes, so the receivers can say what arrived when,
 * in which order, and how long after it left.
 */
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { createHash } from 'node:crypto'
import { resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { createPhoenixLibp2p, PhoenixTransportError } from '../../packages/transport/src/index.ts'

export interface WorkerConfig {
  /** The node's key is derived from this (SHA-256 of it as the Ed25519 seed): fixed ids, a reproducible flow split. */
  readonly keySeed: string
  readonly listen: readonly string[]
  readonly hubs: readonly string[]
  readonly names: readonly string[]
}

export interface SendPlan {
  /** The names this node sends to: one flow each (source, name). */
  readonly flows: readonly string[]
  /** Stop starting sends at this epoch ms. */
  readonly untilMs: number
  readonly payloadBytes: number
  /** Sends of one flow awaiting their ack at once. */
  readonly window: number
  readonly ackTimeoutMs: number
}

/** What became of one send: acknowledged at `atMs`, or refused with an error code. */
export interface SendRecord {
  readonly flow: string
  readonly seq: number
  readonly sentAtMs: number
  readonly atMs: number
  readonly outcome: 'acked' | string
}

export interface Arrival {
  /** `${source} ${name}`. */
  readonly flow: string
  readonly seq: number
  readonly sentAtMs: number
  readonly atMs: number
  readonly bytes: number
}

/** Bounds what a worker keeps for its report: 30 s at 32 Mbit/s of 32 KiB messages is ~3,700. */
const RECORDS_MAX = 200_000
/** seq (u32) and send time (f64) at the start of every payload. */
export const HEADER_BYTES = 12

/** The peer id a worker with `keySeed` will have (the orchestrator needs it before the start). */
export async function keyOf(keySeed: string) {
  return generateKeyPairFromSeed('Ed25519', createHash('sha256').update(keySeed).digest())
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2]!) as WorkerConfig
  const { libp2p, phoenix } = await createPhoenixLibp2p({ listen: [...config.listen], privateKey: await keyOf(config.keySeed), hubs: [...config.hubs], names: [...config.names], discovery: false })
  const out = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`)
  const arrivals: Arrival[] = []
  void (async () => {
    for await (const m of phoenix.messages()) {
      if (arrivals.length >= RECORDS_MAX) continue
      const view = new DataView(m.payload.buffer, m.payload.byteOffset, m.payload.byteLength)
      arrivals.push({ flow: `${m.from} ${m.name}`, seq: view.getUint32(0), sentAtMs: view.getFloat64(4), atMs: Date.now(), bytes: m.payload.byteLength })
    }
  })()
  out({ event: 'up', id: phoenix.id })
  for await (const line of createInterface({ input: process.stdin })) {
    const command = JSON.parse(line) as { cmd: string } & Partial<SendPlan>
    if (command.cmd === 'routes') out({ event: 'routes', routes: phoenix.routes() })
    else if (command.cmd === 'metrics') out({ event: 'metrics', forwarded: Number(/^phoenix_messages_forwarded_total (\d+)$/m.exec(phoenix.metricsText())?.[1] ?? 0) })
    else if (command.cmd === 'arrivals') out({ event: 'arrivals', arrivals })
    else if (command.cmd === 'send') void sendFlows(phoenix, command as SendPlan).then((records) => out({ event: 'sent', records }))
    else if (command.cmd === 'stop') break
  }
  await libp2p.stop()
  process.exit(0)
}

type Phoenix = Awaited<ReturnType<typeof createPhoenixLibp2p>>['phoenix']

/** Every flow sends until `untilMs`, `window` sends at a time; resolves once every send settled. */
async function sendFlows(phoenix: Phoenix, plan: SendPlan): Promise<SendRecord[]> {
  const records: SendRecord[] = []
  await Promise.all(plan.flows.map((flow) => sendFlow(phoenix, plan, flow, records)))
  return records
}

async function sendFlow(phoenix: Phoenix, plan: SendPlan, flow: string, records: SendRecord[]): Promise<void> {
  let seq = 0
  const lane = async () => {
    while (Date.now() < plan.untilMs && records.length < RECORDS_MAX) {
      const payload = new Uint8Array(plan.payloadBytes)
      const view = new DataView(payload.buffer)
      const sentAtMs = Date.now()
      const mine = seq++
      view.setUint32(0, mine)
      view.setFloat64(4, sentAtMs)
      let outcome = 'acked'
      try {
        await phoenix.send(flow, payload, { ack: true, ackTimeoutMs: plan.ackTimeoutMs, routeWaitMs: plan.ackTimeoutMs })
      } catch (error) {
        outcome = error instanceof PhoenixTransportError ? error.code : `OTHER ${String(error)}`
        // A full queue or no route: back off a little instead of spinning.
        if (outcome !== 'ACK_TIMEOUT') await new Promise((r) => setTimeout(r, 20))
      }
      records.push({ flow, seq: mine, sentAtMs, atMs: Date.now(), outcome })
    }
  }
  await Promise.all(Array.from({ length: plan.window }, lane))
}

// Run as a script (not when the orchestrator imports `keyOf`).
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) await main()
