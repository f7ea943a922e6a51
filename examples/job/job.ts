/**
 * A job on the overlay, and the check of what an acknowledgement means. A coordinator (the hub)
 * sends `--messages` messages round-robin by name to workers `worker/<n>`, each its own process,
 * while workers leave gracefully, crash (SIGKILL), hang (SIGSTOP), restart with their identity and
 * join. Every send ends acked or failed with a code; the workers print every message their app
 * received. The job then checks the promise an application builds on:
 *
 * - acked + failed = sent, and nothing is left unsettled;
 * - no message acked that the worker's app did not receive;
 * - no message the worker's app received reported as failed with a code that says it was not
 *   delivered (a retrying coordinator would run it twice).
 *
 * A send that ends `ACK_TIMEOUT` (it may have been delivered) is retried `--retries` times with
 * the same message id, which the worker's node delivers at most once; if it still times out, the
 * summary counts it under `receivedWithUnknownOutcome` when the worker did get it.
 *
 * It exits 1 if any of these fails (without `--ack`, only the first is checked: a send then means
 * handed to the next hop).
 *
 *   npx -y pnpm@10 --filter @phoenix-overlay/example-job run job -- --messages 2000 --workers 4 --ack
 */
import { intOption, scriptArgs } from '../../tools/script-args.ts'
import { createPhoenixLibp2p, PhoenixTransportError } from '@phoenix-overlay/transport'
import { WorkerProcess } from './workers.ts'

export interface JobOptions {
  readonly messages: number
  /** Workers at the start (at least 3: one leaves, one crashes, one hangs); one more joins later. */
  readonly workers: number
  readonly ack: boolean
  /** Sends started per second (the chaos happens while they go out). */
  readonly sendsPerSecond: number
  /** Sends in flight at once. */
  readonly inFlightMax: number
  /** Retries (same message id) of a send whose outcome is unknown (ACK_TIMEOUT); 0 = none. */
  readonly retries: number
  /** How long the hung worker stays stopped (SIGSTOP … SIGCONT). */
  readonly hangMs: number
  readonly log: (line: string) => void
}

export interface JobSummary {
  readonly sent: number
  /** With ack: acknowledged; without: handed to the next hop. */
  readonly acked: number
  readonly failed: Record<string, number>
  readonly unsettled: number
  readonly receivedDistinct: number
  readonly receivedTwice: number
  /** Acked (without ack: handed on, with no `undeliverable` event since) but never received: without ack, lost silently, e.g. in a crashed worker's socket. */
  readonly ackedButNotReceived: number
  /** Received, but the send failed with a code that says it was not delivered (a broken promise). */
  readonly receivedButReportedFailed: number
  /** Received, and the send ended `ACK_TIMEOUT`, which says it may have been (not a broken promise; a retry with its id is safe). */
  readonly receivedWithUnknownOutcome: number
  /** `undeliverable` events (for sends without ack, the only news of a loss). */
  readonly undeliverableEvents: number
  readonly chaos: string[]
  readonly durationMs: number
}

/** How long a send may wait for a route while its worker is away (shorter than the default 10 s, so the job moves). */
const ROUTE_WAIT_MS = 2_000
const ACK_TIMEOUT_MS = 10_000
/** Between a send whose outcome is unknown and its retry (a worker that hung or restarted needs a moment to be routable again). */
const RETRY_PAUSE_MS = 2_000

export async function runJob(options: JobOptions): Promise<JobSummary> {
  if (options.workers < 3) throw new Error(`--workers must be at least 3 (one leaves, one crashes, one hangs), got ${options.workers}`)
  const started = performance.now()
  const { libp2p, phoenix } = await createPhoenixLibp2p({ listen: ['/ip4/127.0.0.1/tcp/0'], names: ['coordinator'] })
  let undeliverableEvents = 0
  phoenix.addEventListener('undeliverable', () => undeliverableEvents++)
  const hub = libp2p.getMultiaddrs()[0]!.toString()
  const received = new Map<number, number>()
  const receivedBy = new Map<number, string>()
  const onReceived = (seq: number, worker: string) => {
    received.set(seq, (received.get(seq) ?? 0) + 1)
    receivedBy.set(seq, worker)
  }
  const workers: WorkerProcess[] = []
  try {
    for (let i = 0; i < options.workers; i++) workers.push(await WorkerProcess.create(`worker/${i}`, hub, onReceived))
    await Promise.all(workers.map((w) => w.start()))
    await waitForRoutes(phoenix, workers.map((w) => w.name))
    options.log(`${workers.length} workers up and routable after ${Math.round(performance.now() - started)} ms`)
    const chaos: string[] = []
    const outcomes = await sendAll(options, phoenix, workers, hub, onReceived, chaos)
    await new Promise((r) => setTimeout(r, 500))
    await Promise.all(workers.map((w) => w.stop()))
    const summary = summarize(outcomes, received, undeliverableEvents, chaos, performance.now() - started)
    outcomes.forEach((outcome, seq) => {
      if (outcome !== undefined && outcome !== 'acked' && outcome !== 'ACK_TIMEOUT' && received.has(seq)) options.log(`message ${seq}: received by ${receivedBy.get(seq)} but reported ${outcome}`)
    })
    return summary
  } finally {
    await Promise.all(workers.map((w) => w.stop()))
    await libp2p.stop()
  }
}

type Phoenix = Awaited<ReturnType<typeof createPhoenixLibp2p>>['phoenix']
/** Per message: 'acked', an error code, or undefined while unsettled. */
type Outcomes = (string | undefined)[]

async function waitForRoutes(phoenix: Phoenix, names: string[]): Promise<void> {
  const deadline = performance.now() + 30_000
  while (names.some((name) => phoenix.resolve(name) === undefined)) {
    if (performance.now() > deadline) throw new Error(`no route to ${names.filter((n) => phoenix.resolve(n) === undefined).join(', ')} after 30 s`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** The chaos, each at a fraction of the sends started: leave, crash and hang a worker, each restarted; a new worker joins. */
function chaosPlan(hangMs: number, workers: WorkerProcess[], hub: string, onReceived: (seq: number, worker: string) => void, chaos: string[], joined: (w: WorkerProcess) => void): [number, () => Promise<void>][] {
  const note = (what: string) => chaos.push(`${new Date().toISOString().slice(11, 23)} ${what}`)
  const restartAfter = async (worker: WorkerProcess, ms: number) => {
    await worker.waitForExit()
    await new Promise((r) => setTimeout(r, ms))
    await worker.start()
    note(`${worker.name} restarted with its identity`)
  }
  return [
    [0.2, async () => (note(`${workers[0]!.name} leaves (SIGTERM)`), workers[0]!.signal('SIGTERM'), await restartAfter(workers[0]!, 1_000))],
    [0.35, async () => (note(`${workers[1]!.name} crashes (SIGKILL)`), workers[1]!.signal('SIGKILL'), await restartAfter(workers[1]!, 1_000))],
    [0.5, async () => {
      note(`${workers[2]!.name} hangs (SIGSTOP) for ${hangMs} ms`)
      workers[2]!.signal('SIGSTOP')
      await new Promise((r) => setTimeout(r, hangMs))
      workers[2]!.signal('SIGCONT')
      note(`${workers[2]!.name} resumes (SIGCONT)`)
    }],
    [0.65, async () => {
      const fresh = await WorkerProcess.create(`worker/${workers.length}`, hub, onReceived)
      note(`${fresh.name} joins`)
      await fresh.start()
      joined(fresh)
    }],
  ]
}

/**
 * One message, to the end: a send whose outcome is unknown (`ACK_TIMEOUT`: it may have been
 * delivered) is retried with the same message id, which the receiver delivers at most once, until
 * it is acked or `retries` run out. A definite failure of the first attempt (nothing delivered) is
 * final; after an unknown one, a later definite failure of a retry leaves the outcome unknown.
 */
async function sendOne(options: JobOptions, phoenix: Phoenix, name: string, payload: Uint8Array, onId: (messageId: number) => void): Promise<string> {
  let messageId: number | undefined
  let unknown = false
  for (let attempt = 0; ; attempt++) {
    try {
      const result = await phoenix.send(name, payload, { ack: options.ack, routeWaitMs: ROUTE_WAIT_MS, ...(options.ack ? { ackTimeoutMs: ACK_TIMEOUT_MS } : {}), ...(messageId !== undefined ? { messageId } : {}) })
      messageId = result.messageId
      onId(messageId)
      return 'acked'
    } catch (error) {
      if (!(error instanceof PhoenixTransportError)) return `uncoded: ${(error as Error).message}`
      messageId ??= error.messageId
      unknown ||= error.code === 'ACK_TIMEOUT'
      if (!unknown || messageId === undefined || attempt >= options.retries) return unknown ? 'ACK_TIMEOUT' : error.code + (error.reason !== undefined ? `/${error.reason}` : '')
      await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS))
    }
  }
}

async function sendAll(options: JobOptions, phoenix: Phoenix, workers: WorkerProcess[], hub: string, onReceived: (seq: number, worker: string) => void, chaos: string[]): Promise<Outcomes> {
  const outcomes: Outcomes = new Array(options.messages).fill(undefined)
  // Without ack, a send resolves once handed on; a later refusal comes as an `undeliverable` event with its id.
  const seqOf = new Map<number, number>()
  phoenix.addEventListener('undeliverable', (event) => {
    const seq = seqOf.get(event.detail.messageId)
    if (seq !== undefined && outcomes[seq] === 'acked') outcomes[seq] = `UNDELIVERABLE/${event.detail.reason} (event)`
    if (seq !== undefined) options.log(`undeliverable event for message ${seq} from …${event.detail.node.slice(-6)}: ${event.detail.reason}`)
  })
  const targets = workers.map((w) => w.name)
  const plan = chaosPlan(options.hangMs, workers, hub, onReceived, chaos, (w) => {
    workers.push(w)
    targets.push(w.name)
  })
  const chaosDone: Promise<void>[] = []
  const inFlight = new Set<Promise<void>>()
  const gapMs = 1_000 / options.sendsPerSecond
  const encoder = new TextEncoder()
  for (let seq = 0; seq < options.messages; seq++) {
    while (plan.length > 0 && seq >= plan[0]![0] * options.messages) chaosDone.push(plan.shift()![1]().catch((e: Error) => void chaos.push(`chaos step failed: ${e.message}`)))
    while (inFlight.size >= options.inFlightMax) await Promise.race(inFlight)
    const send = sendOne(options, phoenix, targets[seq % targets.length]!, encoder.encode(String(seq)), (id) => seqOf.set(id, seq))
      .then((outcome) => void (outcomes[seq] = outcome))
      .finally(() => inFlight.delete(send))
    inFlight.add(send)
    if (seq % 250 === 0) options.log(`sent ${seq}/${options.messages}, ${outcomes.filter((o) => o === 'acked').length} ${options.ack ? 'acked' : 'handed on'}`)
    await new Promise((r) => setTimeout(r, gapMs))
  }
  // Every send settles by itself (route wait, ack timeout and retries are bounded); this deadline
  // only catches a send that never does, which the summary reports as unsettled.
  const settleMs = (options.retries + 1) * (ROUTE_WAIT_MS + ACK_TIMEOUT_MS + RETRY_PAUSE_MS) + 5_000
  await Promise.race([Promise.all(inFlight), new Promise((r) => setTimeout(r, settleMs))])
  await Promise.all(chaosDone)
  return outcomes
}

function summarize(outcomes: Outcomes, received: Map<number, number>, undeliverableEvents: number, chaos: string[], durationMs: number): JobSummary {
  const failed: Record<string, number> = {}
  let acked = 0
  let unsettled = 0
  let ackedButNotReceived = 0
  let receivedButReportedFailed = 0
  let receivedWithUnknownOutcome = 0
  outcomes.forEach((outcome, seq) => {
    if (outcome === undefined) unsettled++
    else if (outcome === 'acked') {
      acked++
      if (!received.has(seq)) ackedButNotReceived++
    } else {
      failed[outcome] = (failed[outcome] ?? 0) + 1
      if (received.has(seq) && outcome === 'ACK_TIMEOUT') receivedWithUnknownOutcome++
      else if (received.has(seq)) receivedButReportedFailed++
    }
  })
  const receivedTwice = [...received.values()].filter((n) => n > 1).length
  return { sent: outcomes.length, acked, failed, unsettled, receivedDistinct: received.size, receivedTwice, ackedButNotReceived, receivedButReportedFailed, receivedWithUnknownOutcome, undeliverableEvents, chaos, durationMs: Math.round(durationMs) }
}

/** The promise an application builds on; without ack only the first line applies. */
export function violations(summary: JobSummary, ack: boolean): string[] {
  const out: string[] = []
  const failed = Object.values(summary.failed).reduce((a, b) => a + b, 0)
  if (summary.acked + failed !== summary.sent) out.push(`acked ${summary.acked} + failed ${failed} != sent ${summary.sent}`)
  if (summary.unsettled > 0) out.push(`${summary.unsettled} sends never settled`)
  if (ack && summary.ackedButNotReceived > 0) out.push(`${summary.ackedButNotReceived} acked but never received`)
  if (ack && summary.receivedButReportedFailed > 0) out.push(`${summary.receivedButReportedFailed} received but reported failed`)
  return out
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = scriptArgs({
    options: {
      messages: { type: 'string', default: '2000' },
      workers: { type: 'string', default: '4' },
      ack: { type: 'boolean', default: false },
      rate: { type: 'string', default: '200' },
      'in-flight': { type: 'string', default: '16' },
      'hang-ms': { type: 'string', default: '3000' },
      retries: { type: 'string', default: '3' },
    },
  }, {
    summary: 'a coordinator sending work to worker processes that leave, crash, hang, restart and join; checks that acked + failed = sent',
    help: { messages: 'messages to send', workers: 'workers at the start (at least 3; one more joins later)', ack: 'ask for an acknowledgement of every message', rate: 'sends started per second', 'in-flight': 'sends in flight at once', 'hang-ms': 'how long the hanging worker hangs', retries: 'times a failed send is retried' },
  })
  const ack = values.ack
  const summary = await runJob({ messages: intOption(values, 'messages', 1), workers: intOption(values, 'workers', 3), ack, sendsPerSecond: intOption(values, 'rate', 1), inFlightMax: intOption(values, 'in-flight', 1), hangMs: intOption(values, 'hang-ms', 0), retries: intOption(values, 'retries', 0), log: (line) => console.log(line) })
  console.log(JSON.stringify(summary, null, 2))
  const problems = violations(summary, ack)
  for (const p of problems) console.error(`✗ ${p}`)
  if (problems.length === 0) console.log(`✓ ${ack ? 'acked' : 'handed on'} + failed-with-code = sent, nothing unsettled${ack ? ', every acked message received, no received message reported failed' : ''}`)
  process.exit(problems.length === 0 ? 0 : 1)
}
