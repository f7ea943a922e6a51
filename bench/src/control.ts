/**
 * The control endpoint (what shell jobs use) against the library API, in one run: a chain
 * sender → middle → receiver, one process per node, and the same bytes sent four ways:
 *
 * - `library`: `phoenix.send` in the sender's own process (a bench node);
 * - `per-request`: a `phoenix node --control` sender, one `POST /send` per message from this
 *   process over one keep-alive connection, each request once the previous one was answered;
 * - `streaming`: the same node, every message in one `POST /send-stream` (packages/cli/README.md);
 * - `send --lines`: the `phoenix send --lines` command (its process start-up included) on a file
 *   of lines, which uses the streaming send.
 *
 *   npx -y pnpm@10 --filter @phoenix-overlay/bench run control              # 3 rounds, ~2 min
 *   npx -y pnpm@10 --filter @phoenix-overlay/bench run control -- --quick   # smoke run
 */
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { procCpuSeconds } from '../../tools/proc-cpu.ts'
import { fail, scriptArgs } from '../../tools/script-args.ts'
import { nowNs } from './framing.ts'
import { median } from './measure.ts'
import { NODE_FLAGS, sizeLabel } from './plan.ts'
import { machineLine, writeSection } from './report.ts'
import { spawnNode, type NodeHandle } from './rpc.ts'
import { NODE_TS_FLAGS } from '../../tools/node-ts.ts'

const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
/** The `phoenix` command of this workspace (the CLI package's bin, run by this Node). */
const PHOENIX_JS = fileURLToPath(new URL('../../packages/cli/bin/phoenix.js', import.meta.url))
const KiB = 1024
const MiB = 1024 * KiB
const MODES = ['library', 'per-request', 'streaming', 'send --lines'] as const
type Mode = (typeof MODES)[number]
/** Client-side batching of frames into one write (as `send --lines` does). */
const BATCH_BYTES = 64 * KiB
const QUEUE_FULL_RETRY_MS = 1

const { values } = scriptArgs({ options: { quick: { type: 'boolean', default: false }, rounds: { type: 'string' }, out: { type: 'string' }, mib: { type: 'string' } } }, { summary: 'the control endpoint (what shell jobs use) against the library API, one process per node' })
const quick = values.quick
const rounds = Number(values.rounds ?? (quick ? 1 : 3))
if (!(Number.isInteger(rounds) && rounds > 0)) fail(`--rounds must be a positive integer, got ${JSON.stringify(values.rounds)}`)
/** `--mib N`: the 4 KiB budget (64 KiB messages get twice it), for a busy machine. */
const mib = Number(values.mib ?? 32)
if (!(Number.isInteger(mib) && mib > 0)) fail(`--mib must be a positive integer, got ${JSON.stringify(values.mib)}`)
const sizes = quick ? [{ messageBytes: 4 * KiB, budgetBytes: 2 * MiB }] : [{ messageBytes: 4 * KiB, budgetBytes: mib * MiB }, { messageBytes: 64 * KiB, budgetBytes: 2 * mib * MiB }]
const outDir = resolve(values.out ?? join(benchDir, quick ? 'results-quick' : 'results'))
mkdirSync(outDir, { recursive: true })
const log = (line: string) => process.stderr.write(`${line}\n`)
const scratch = mkdtempSync(join(tmpdir(), 'phoenix-bench-control-'))

/** Starts `phoenix node` and resolves once its control endpoint answers; `stop` ends it. */
async function startCliNode(hub: string, socketPath: string): Promise<{ pid: number | undefined; stop(): Promise<void> }> {
  // Node's flags as `phoenix node` gets them from bin/phoenix (the other processes get them too).
  const child = spawn(process.execPath, [...NODE_FLAGS, ...NODE_TS_FLAGS, PHOENIX_JS, 'node', '--no-discovery', '--hub', hub, '--name', 'src-cli', '--control', socketPath], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  // If this driver dies, the node must not outlive it (it was not started through a launcher it watches).
  const orphaned = () => child.kill('SIGKILL')
  process.once('exit', orphaned)
  for (const deadline = Date.now() + 60_000; !/control endpoint on/.test(output); ) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`phoenix node did not start (exit ${child.exitCode}): ${output}`)
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    pid: child.pid,
    async stop() {
      process.off('exit', orphaned)
      child.kill('SIGTERM')
      await exited
    },
  }
}

function call(socketPath: string, path: string, body: Uint8Array | undefined, agent?: Agent): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method: body === undefined ? 'GET' : 'POST', path, ...(agent !== undefined ? { agent } : {}) }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

async function waitRoute(socketPath: string, name: string, hops: number): Promise<void> {
  for (const deadline = Date.now() + 60_000; ; ) {
    const routes = JSON.parse((await call(socketPath, '/routes', undefined)).text) as { names: string[]; nhops: number }[]
    if (routes.some((r) => r.names.includes(name) && r.nhops === hops)) return
    if (Date.now() > deadline) throw new Error(`phoenix node: no ${hops}-hop route to ${name}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** One `POST /send` per message, each once the previous one was answered (QUEUE_FULL retried). */
async function perRequest(socketPath: string, message: Uint8Array, count: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  try {
    for (let i = 0; i < count; ) {
      const { status, text } = await call(socketPath, '/send?name=dst', message, agent)
      if (status === 200) i++
      else if (status === 503 && text.includes('QUEUE_FULL')) await new Promise((r) => setTimeout(r, QUEUE_FULL_RETRY_MS))
      else throw new Error(`POST /send: ${status} ${text}`)
    }
  } finally {
    agent.destroy()
  }
}

/** Every message in one `POST /send-stream`, written in batches as fast as the connection takes them. */
async function streaming(socketPath: string, message: Uint8Array, count: number): Promise<void> {
  const frame = Buffer.alloc(4 + message.length)
  frame.writeUInt32BE(message.length, 0)
  frame.set(message, 4)
  const perBatch = Math.max(1, Math.floor(BATCH_BYTES / frame.length))
  const batch = Buffer.concat(Array.from({ length: perBatch }, () => frame))
  const req = request({ socketPath, method: 'POST', path: '/send-stream?name=dst' })
  // Read the answer as it comes: a client that does not would stall the node's writes, then its reads.
  const answer = new Promise<string>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve(Buffer.concat(chunks).toString()))
    })
    req.on('error', reject)
  })
  for (let sent = 0; sent < count; ) {
    const n = Math.min(perBatch, count - sent)
    const ok = req.write(n === perBatch ? batch : batch.subarray(0, n * frame.length))
    sent += n
    if (!ok) await new Promise((r) => req.once('drain', r))
  }
  req.end()
  const last = JSON.parse((await answer).trim().split('\n').at(-1)!) as { done?: boolean; sent?: number }
  if (last.done !== true || last.sent !== count) throw new Error(`POST /send-stream ended with ${JSON.stringify(last)}`)
}

/** `phoenix send --lines --file`: `count` lines of `messageBytes` characters. */
async function sendLinesCommand(socketPath: string, messageBytes: number, count: number): Promise<void> {
  const file = join(scratch, `lines-${messageBytes}-${count}.txt`)
  writeFileSync(file, `${'x'.repeat(messageBytes)}\n`.repeat(count))
  const child = spawn(process.execPath, [...NODE_TS_FLAGS, PHOENIX_JS, 'send', '--control', socketPath, '--lines', '--file', file, 'dst'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`phoenix send --lines exited ${code}: ${stderr}`)
}

interface Run {
  readonly round: number
  readonly mode: Mode
  readonly messageBytes: number
  readonly bytes: number
  readonly mibPerS: number
  /** CPU of the sending node per MiB sent, ms: the library sender's process, or the `phoenix node` fed by the other modes (not its client). */
  readonly senderCpuMsPerMiB: number
}

/**
 * Sends `count` messages one way and times it from the first send to the receiver's last byte;
 * with the sending node's CPU over the same span (the library sender's own account, or the
 * `phoenix node` process's from /proc).
 */
async function measure(mode: Mode, sender: NodeHandle, receiver: NodeHandle, cli: { socketPath: string; pid: number | undefined }, messageBytes: number, count: number): Promise<{ mibPerS: number; senderCpuMsPerMiB: number }> {
  const { socketPath } = cli
  await receiver.call('arm', { messages: count, latencies: false })
  // A receiver that has not had everything at 16 KiB/s has failed (messages lost), however busy the machine.
  const collected = receiver.call('collect', { timeoutMs: 60_000 + ((count * messageBytes) / (16 * KiB)) * 1000 })
  const message = new Uint8Array(messageBytes).fill(120)
  if (mode === 'library') await sender.call('mark', { rssSampleMs: 0 })
  const cliCpuStartS = procCpuSeconds(cli.pid)
  const startNs = nowNs()
  if (mode === 'library') await sender.call('send', { messageBytes, messages: count })
  else if (mode === 'per-request') await perRequest(socketPath, message, count)
  else if (mode === 'streaming') await streaming(socketPath, message, count)
  else await sendLinesCommand(socketPath, messageBytes, count)
  const got = await collected
  const cpuS = mode === 'library' ? (await sender.call('report')).cpuUs / 1e6 : procCpuSeconds(cli.pid) - cliCpuStartS
  if (got.bytes !== count * messageBytes) throw new Error(`${mode}: receiver got ${got.bytes} bytes, expected ${count * messageBytes}`)
  const mib = got.bytes / MiB
  return { mibPerS: mib / (Number(got.endNs - startNs) / 1e9), senderCpuMsPerMiB: (cpuS * 1000) / mib }
}

async function runRound(round: number): Promise<Run[]> {
  const [receiver, middle, sender] = await Promise.all(['receiver', 'middle', 'sender'].map((label) => spawnNode(label, NODE_FLAGS)))
  const socketPath = join(scratch, `control-${round}.sock`)
  let cli: { pid: number | undefined; stop(): Promise<void> } | undefined
  try {
    const tcp = (addresses: string[]) => addresses.find((a) => a.includes('/tcp/'))!
    const dst = await receiver!.call('start', { stack: 'phoenix', listen: ['/ip4/127.0.0.1/tcp/0'], hubs: [], names: ['dst'] })
    const mid = await middle!.call('start', { stack: 'phoenix', listen: ['/ip4/127.0.0.1/tcp/0'], hubs: [tcp(dst.addresses)], names: ['mid'] })
    await sender!.call('start', { stack: 'phoenix', listen: ['/ip4/127.0.0.1/tcp/0'], hubs: [tcp(mid.addresses)], names: ['src'] })
    cli = await startCliNode(tcp(mid.addresses), socketPath)
    await receiver!.call('arm', { messages: 1, latencies: false })
    const first = receiver!.call('collect', { timeoutMs: 60_000 })
    await sender!.call('open', { name: 'dst', hops: 2 })
    await first
    await waitRoute(socketPath, 'dst', 2)
    const runs: Run[] = []
    const order = MODES.map((_, i) => MODES[(i + round - 1) % MODES.length]!)
    for (const { messageBytes, budgetBytes } of sizes) {
      for (const mode of order) {
        const count = Math.round(budgetBytes / messageBytes)
        const { mibPerS, senderCpuMsPerMiB } = await measure(mode, sender!, receiver!, { socketPath, pid: cli.pid }, messageBytes, count)
        runs.push({ round, mode, messageBytes, bytes: count * messageBytes, mibPerS, senderCpuMsPerMiB })
        log(`  r${round} ${mode.padEnd(12)} ${sizeLabel(messageBytes).padStart(6)}: ${mibPerS.toFixed(1).padStart(6)} MiB/s, sending node ${senderCpuMsPerMiB.toFixed(1)} ms CPU per MiB`)
      }
    }
    return runs
  } finally {
    await cli?.stop()
    await Promise.all([receiver, middle, sender].map((n) => n!.close()))
  }
}

const started = performance.now()
const runs: Run[] = []
try {
  for (let round = 1; round <= rounds; round++) {
    log(`round ${round}/${rounds}`)
    runs.push(...(await runRound(round)))
  }
} finally {
  rmSync(scratch, { recursive: true, force: true })
}

const runsOf = (mode: Mode, messageBytes: number) => runs.filter((r) => r.mode === mode && r.messageBytes === messageBytes)
const mibOf = (mode: Mode, messageBytes: number) => median(runsOf(mode, messageBytes).map((r) => r.mibPerS))
const cpuOf = (mode: Mode, messageBytes: number) => median(runsOf(mode, messageBytes).map((r) => r.senderCpuMsPerMiB))
const rows = sizes.flatMap(({ messageBytes }) => {
  const library = mibOf('library', messageBytes)
  return MODES.map((mode) => `| ${sizeLabel(messageBytes)} | ${mode} | ${mibOf(mode, messageBytes).toFixed(1)} | ${(mibOf(mode, messageBytes) / library).toFixed(2)} | ${cpuOf(mode, messageBytes).toFixed(1)} |`)
})
const goal = mibOf('streaming', 4 * KiB) / mibOf('library', 4 * KiB)
const markdown = [
  `## The control endpoint${quick ? ' (--quick smoke run: tiny budgets, numbers mean nothing)' : ''}`,
  `Phoenix through one intermediate (sender → middle → receiver, one process per node, loopback), the same messages sent four ways (bench/src/control.ts): the library API in the sender's process; a \`phoenix node --control\` sender fed one \`POST /send\` per message (one keep-alive connection, each request after the previous answer); the same node fed one \`POST /send-stream\` (length-prefixed frames); and the \`phoenix send --lines --file\` command, its ~0.5 s start-up included. Median of ${rounds} interleaved round(s); budgets ${sizes.map((s) => `${sizeLabel(s.budgetBytes)} of ${sizeLabel(s.messageBytes)}`).join(', ')}; ${machineLine()}; ${((performance.now() - started) / 1000).toFixed(0)} s in all.`,
  `| message | how | MiB/s | × library | sending node's CPU, ms per MiB |\n|---|---|---|---|---|\n${rows.join('\n')}`,
  'The CPU column is the process that sends into the overlay: for the library, the sender\'s own process; for the other three, the `phoenix node` (from /proc), not the client feeding it. It moves less with the machine\'s other load than MiB/s does, which on 2 cores shared by four processes follows their CPU shares.',
  `Goal (issue 19): streaming send ≥ 0.50 × the library API at 4 KiB: **${goal.toFixed(2)}** — ${goal >= 0.5 ? 'met' : 'not met'}.`,
].join('\n\n')
writeFileSync(join(outDir, 'control.csv'), `round,mode,messageBytes,bytes,mibPerS,senderCpuMsPerMiB\n${runs.map((r) => `${r.round},${r.mode},${r.messageBytes},${r.bytes},${r.mibPerS.toFixed(3)},${r.senderCpuMsPerMiB.toFixed(2)}`).join('\n')}\n`)
writeSection(quick || values.out !== undefined ? join(outDir, 'REPORT.md') : join(benchDir, 'REPORT.md'), 'control', markdown)
process.stdout.write(`${markdown}\n`)
