/**
 * A job built on the overlay, as a user would write it: a coordinator sends messages round-robin
 * to workers that join, leave, crash and restart while it runs, and every outcome is accounted
 * for. Run: `npx tsx test/delivery-job/job.ts [--messages 2000] [--no-ack] [--no-crash] [--seed N]`
 * (`--no-crash`: workers only leave gracefully and come back).
 *
 * With acks: acked + failed-with-a-code = sent, no send unsettled, no acked message that no
 * worker's application received, and no message a worker received that was reported failed with
 * a code that says "not delivered" (ACK_TIMEOUT and NOT_STARTED say "maybe": counted apart).
 * Without acks: resolved sends, refusals, `undeliverable` events and receipts, and the sends
 * that vanished without any report (only a crash can do that: it takes what was in flight).
 */
import { parseArgs } from 'node:util'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { createPhoenixLibp2p, PhoenixTransportError } from '../../packages/transport/src/index.ts'

const { values } = parseArgs({ options: { messages: { type: 'string', default: '2000' }, 'no-ack': { type: 'boolean', default: false }, seed: { type: 'string' }, workers: { type: 'string', default: '6' }, 'no-crash': { type: 'boolean', default: false } } })
const MESSAGES = Number(values.messages)
const WORKERS = Number(values.workers)
const ACK = !values['no-ack']
let seed = Number(values.seed ?? Date.now() % 2 ** 31)
console.log(`delivery job: ${MESSAGES} messages, ${WORKERS} workers, ${ACK ? 'with' : 'without'} acks, seed ${seed} (replay with --seed ${seed})`)
/** mulberry32: a small seeded PRNG, so a run's churn can be replayed. */
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

type Node = Awaited<ReturnType<typeof createPhoenixLibp2p>>
const listen = ['/ip4/127.0.0.1/tcp/0']
const hub = await createPhoenixLibp2p({ listen, names: ['hub'] })
const hubAddress = hub.libp2p.getMultiaddrs()[0]!.toString()
const coordinator = await createPhoenixLibp2p({ listen, names: ['coordinator'], hubs: [hubAddress] })

/** What each worker's application received, by sender message id (kept across its restarts). */
const received = new Set<number>()
interface Worker {
  name: string
  key: Awaited<ReturnType<typeof generateKeyPair>>
  node: Node | undefined
}
const workers: Worker[] = []

async function startWorker(worker: Worker): Promise<void> {
  const node = await createPhoenixLibp2p({ listen, names: [worker.name], hubs: [hubAddress], privateKey: worker.key })
  node.phoenix.addEventListener('message', (event) => received.add(event.detail.messageId))
  worker.node = node
}

for (let i = 0; i < WORKERS; i++) {
  const worker: Worker = { name: `worker-${i}`, key: await generateKeyPair('Ed25519'), node: undefined }
  workers.push(worker)
  await startWorker(worker)
}

/** Churn: every 100-300 ms one worker leaves gracefully, crashes, or comes back (same key). */
const churnLog: string[] = []
let churning = true
const churn = (async () => {
  while (churning) {
    await new Promise((r) => setTimeout(r, 100 + random() * 200))
    if (!churning) break
    const worker = workers[Math.floor(random() * workers.length)]!
    if (worker.node === undefined) {
      await startWorker(worker)
      churnLog.push(`${worker.name} rejoined`)
    } else if (values['no-crash'] || random() < 0.5) {
      await worker.node.libp2p.stop()
      worker.node = undefined
      churnLog.push(`${worker.name} left`)
    } else {
      // A crash: connections reset without a farewell, then the process is gone.
      for (const connection of worker.node.libp2p.getConnections()) connection.abort(new Error('crash'))
      await worker.node.libp2p.stop()
      worker.node = undefined
      churnLog.push(`${worker.name} crashed`)
    }
  }
})()

const outcomes = new Map<number, string>()
const undeliverable = new Map<number, string>()
coordinator.phoenix.addEventListener('undeliverable', (event) => undeliverable.set(event.detail.messageId, event.detail.reason))
const started = performance.now()
const sends: Promise<void>[] = []
for (let i = 0; i < MESSAGES; i++) {
  const name = `worker-${i % WORKERS}`
  sends.push(
    coordinator.phoenix.send(name, new TextEncoder().encode(`task ${i}`), { ack: ACK, routeWaitMs: 2_000 }).then(
      ({ messageId }) => void outcomes.set(messageId, ACK ? 'acked' : 'sent'),
      (error: PhoenixTransportError) => void outcomes.set(error.messageId ?? -1 - i, `${error.code}${error.reason ? `/${error.reason}` : ''}`),
    ),
  )
  if (i % 20 === 19) await new Promise((r) => setTimeout(r, 5)) // a steady stream, not one burst
}
const deadline = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 60_000))
const settled = await Promise.race([Promise.all(sends).then(() => 'settled' as const), deadline])
churning = false
await churn
await new Promise((r) => setTimeout(r, 500)) // late undeliverable events

const byOutcome: Record<string, number> = {}
for (const outcome of outcomes.values()) byOutcome[outcome] = (byOutcome[outcome] ?? 0) + 1
const maybe = (o: string) => o === 'ACK_TIMEOUT' || o.startsWith('NOT_STARTED')
let ackedNotReceived = 0
let receivedReportedFailed = 0
const receivedReportedFailedCodes: Record<string, number> = {}
let receivedMaybeFailed = 0
let vanished = 0
for (const [id, outcome] of outcomes) {
  if (outcome === 'acked' && !received.has(id)) ackedNotReceived++
  if (outcome !== 'acked' && outcome !== 'sent' && received.has(id)) {
    if (maybe(outcome)) receivedMaybeFailed++
    else {
      receivedReportedFailed++
      receivedReportedFailedCodes[outcome] = (receivedReportedFailedCodes[outcome] ?? 0) + 1
    }
  }
  if (outcome === 'sent' && !received.has(id) && !undeliverable.has(id)) vanished++
}
console.log(JSON.stringify({ sent: MESSAGES, settled, unsettled: MESSAGES - outcomes.size, seconds: +((performance.now() - started) / 1000).toFixed(1), outcomes: byOutcome, received: received.size, ...(ACK ? { ackedNotReceived, receivedReportedFailed, receivedReportedFailedCodes, receivedButAckTimeoutOrStopped: receivedMaybeFailed } : { undeliverableEvents: undeliverable.size, vanishedWithoutReport: vanished, receivedReportedFailed }), churn: churnLog.length }))
await Promise.all([coordinator.libp2p.stop(), hub.libp2p.stop(), ...workers.map((w) => w.node?.libp2p.stop())])
process.exit(ackedNotReceived + receivedReportedFailed === 0 && outcomes.size === MESSAGES ? 0 : 1)
