/**
 * A job with collectives: a master broadcasts work to the group `worker/*` and reduces the
 * results, while workers (each its own process, in three sites) leave, crash and join between
 * and during rounds. The work: the sum of the squares of 1..n, split among the members of the
 * round; the answer is checked against n(n+1)(2n+1)/6. A round whose reduce reports a member
 * missing (it crashed after the broadcast) is run again with the members that remain.
 *
 *   npx -y pnpm@10 --filter @phoenix-overlay/example-job run collective -- --workers 5 --rounds 4
 *
 * Chaos: in round 2 worker/0 leaves gracefully before the broadcast; in round 3 worker/1 is
 * killed (SIGKILL) while the reduce waits for its value; in round 4 a new worker joins.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { intOption, scriptArgs } from '../../tools/script-args.ts'
import { createPhoenixLibp2p, float64Values, type PhoenixNode } from '@phoenix-overlay/transport'

const HERE = fileURLToPath(new URL('.', import.meta.url))
const WORKER_SCRIPT = fileURLToPath(new URL('./collective-worker.ts', import.meta.url))
/** How long a worker may take to start (a loaded machine starts Node slowly). */
const WORKER_START_MS = 30_000
/** How long a round waits for the group to show the workers it expects. */
const MEMBERS_WAIT_MS = 20_000
/** A worker waits this long before contributing, so a crash right after the broadcast lands first. */
const WORKER_DELAY_MS = 300
const SITES = 3

export interface CollectiveJobOptions {
  readonly workers: number
  readonly rounds: number
  readonly n: number
  readonly log: (line: string) => void
}

export interface RoundResult {
  readonly round: number
  readonly attempts: number
  readonly members: readonly string[]
  readonly answer: number
  readonly expected: number
}

class Worker {
  private child: ChildProcess | undefined
  private exited: Promise<unknown> = Promise.resolve()

  constructor(
    readonly name: string,
    readonly site: string,
  ) {}

  async start(hub: string): Promise<void> {
    const child = spawn(process.execPath, ['--experimental-transform-types', '--disable-warning=ExperimentalWarning', WORKER_SCRIPT, '--name', this.name, '--site', this.site, '--hub', hub, '--delay-ms', String(WORKER_DELAY_MS)], { cwd: HERE, stdio: ['ignore', 'pipe', 'pipe'] })
    this.child = child
    this.exited = new Promise((resolve) => child.once('close', resolve))
    let stderr = ''
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name} did not start within ${WORKER_START_MS} ms: ${stderr.trim()}`)), WORKER_START_MS)
      child.once('close', (code, signal) => reject(new Error(`${this.name} exited before it was ready (${code ?? signal}): ${stderr.trim()}`)))
      createInterface({ input: child.stdout! }).on('line', (line) => line.startsWith('ready ') && (clearTimeout(timer), resolve()))
    })
  }

  /** SIGTERM: a graceful leave; SIGKILL: a crash. Resolves once the process is gone. */
  async stop(signal: NodeJS.Signals): Promise<void> {
    if (this.child?.exitCode === null && this.child.signalCode === null) this.child.kill(signal)
    await this.exited
  }
}

async function membersBecome(phoenix: PhoenixNode, expected: readonly string[]): Promise<void> {
  const want = [...expected].sort().join()
  const started = performance.now()
  while (phoenix.members('worker/*').map((m) => m.name).join() !== want) {
    if (performance.now() - started > MEMBERS_WAIT_MS) throw new Error(`the group worker/* is ${phoenix.members('worker/*').map((m) => m.name).join(',')}, expected ${want}, after ${MEMBERS_WAIT_MS} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** One round: broadcast the work to the members now, reduce; again while a member went missing. */
async function runRound(phoenix: PhoenixNode, round: number, n: number, crash: Worker | undefined, log: (line: string) => void): Promise<RoundResult> {
  const expected = (n * (n + 1) * (2 * n + 1)) / 6
  for (let attempt = 1; ; attempt++) {
    const members = phoenix.members('worker/*').map((m) => m.name)
    const tag = `round-${round}.${attempt}`
    const sent = await phoenix.broadcast('worker/*', new TextEncoder().encode(JSON.stringify({ tag, n, members })), { ack: true, timeoutMs: 5_000 })
    const reducing = phoenix.reduce('worker/*', tag, { op: 'sum', timeoutMs: 5_000 })
    if (attempt === 1 && crash !== undefined) await crash.stop('SIGKILL') // while the reduce waits for its value
    const reduced = await reducing
    const [answer = NaN, count = 0] = reduced.value === undefined ? [] : float64Values(reduced.value)
    const missing = [...sent.missing, ...reduced.missing].map((m) => `${m.name} (${m.reason})`)
    log(`round ${round}.${attempt}: ${members.length} members, ${count} contributed, answer ${answer}${missing.length > 0 ? `; missing ${missing.join(', ')}` : ''}`)
    if (missing.length === 0 && count === members.length && sent.delivered?.length === members.length) return { round, attempts: attempt, members, answer, expected }
    if (attempt === 3) throw new Error(`round ${round}: no complete attempt in 3 (last missing: ${missing.join(', ')})`)
  }
}

export async function runCollectiveJob(options: CollectiveJobOptions): Promise<RoundResult[]> {
  if (options.workers < 3) throw new Error(`--workers must be at least 3 (one leaves, one crashes), got ${options.workers}`)
  const { libp2p, phoenix } = await createPhoenixLibp2p({ listen: ['/ip4/127.0.0.1/tcp/0'], names: ['master'], site: 'site-0' })
  const hub = libp2p.getMultiaddrs()[0]!.toString()
  const workers = Array.from({ length: options.workers }, (_, i) => new Worker(`worker/${i}`, `site-${i % SITES}`))
  const alive = new Set<Worker>()
  const results: RoundResult[] = []
  try {
    await Promise.all(workers.map((w) => w.start(hub).then(() => alive.add(w))))
    for (let round = 1; round <= options.rounds; round++) {
      if (round === 2) {
        options.log('chaos: worker/0 leaves')
        await workers[0]!.stop('SIGTERM')
        alive.delete(workers[0]!)
      }
      if (round === 4) {
        const joiner = new Worker(`worker/${workers.length}`, `site-${workers.length % SITES}`)
        options.log(`chaos: ${joiner.name} joins`)
        workers.push(joiner)
        await joiner.start(hub)
        alive.add(joiner)
      }
      await membersBecome(phoenix, [...alive].map((w) => w.name))
      const crash = round === 3 ? workers[1] : undefined
      if (crash !== undefined) {
        options.log(`chaos: ${crash.name} crashes during the reduce`)
        alive.delete(crash)
      }
      results.push(await runRound(phoenix, round, options.n, crash, options.log))
    }
    return results
  } finally {
    await Promise.all(workers.map((w) => w.stop('SIGTERM')))
    await libp2p.stop()
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = scriptArgs({ options: { workers: { type: 'string', default: '5' }, rounds: { type: 'string', default: '4' }, n: { type: 'string', default: '100000' } } }, {
    summary: 'a master broadcasting work to the group worker/* in three sites and reducing the results, while workers leave, crash and join',
    help: { workers: 'workers at the start (at least 3)', rounds: 'broadcast-and-reduce rounds', n: 'each round sums the squares of 1..n' },
  })
  const results = await runCollectiveJob({ workers: intOption(values, 'workers', 3), rounds: intOption(values, 'rounds', 1), n: intOption(values, 'n', 1), log: (line) => console.log(line) })
  const wrong = results.filter((r) => r.answer !== r.expected)
  for (const r of results) console.log(`round ${r.round}: answer ${r.answer} (expected ${r.expected}) from ${r.members.length} workers in ${r.attempts} attempt(s)`)
  console.log(wrong.length === 0 ? 'every answer checked' : `${wrong.length} wrong answers`)
  process.exit(wrong.length === 0 ? 0 : 1)
}
