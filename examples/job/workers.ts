/**
 * The worker processes of the example job: each is `worker.ts` in its own Node process (spawned
 * with this Node, so a signal sent to the pid reaches the node itself), with a fixed identity so
 * a restart comes back as the same peer. Every `got <seq>` line a worker prints is recorded.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { generateKeyPair, privateKeyToProtobuf } from '@libp2p/crypto/keys'

const HERE = fileURLToPath(new URL('.', import.meta.url))
const WORKER_SCRIPT = fileURLToPath(new URL('./worker.ts', import.meta.url))
/** How long a worker may take to start and join (a loaded machine starts Node slowly). */
const WORKER_START_MS = 30_000

export class WorkerProcess {
  private child: ChildProcess | undefined
  private exited: Promise<void> = Promise.resolve()
  /** Processes this slot has run (1 after the first start, 2 after a restart, …). */
  starts = 0

  private constructor(
    readonly name: string,
    private readonly keyHex: string,
    private readonly hub: string,
    /** Called with the sequence number of every message this worker's app received. */
    private readonly onReceived: (seq: number, worker: string) => void,
  ) {}

  static async create(name: string, hub: string, onReceived: (seq: number, worker: string) => void): Promise<WorkerProcess> {
    const key = await generateKeyPair('Ed25519')
    return new WorkerProcess(name, Buffer.from(privateKeyToProtobuf(key)).toString('hex'), hub, onReceived)
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null
  }

  /** Starts the process; resolves once it has printed `ready`. */
  async start(): Promise<void> {
    if (this.running) throw new Error(`${this.name} is already running`)
    const child = spawn(process.execPath, ['--experimental-transform-types', '--disable-warning=ExperimentalWarning', WORKER_SCRIPT, '--name', this.name, '--hub', this.hub, '--key', this.keyHex], { cwd: HERE, stdio: ['ignore', 'pipe', 'pipe'] })
    this.child = child
    this.starts++
    const stderr: string[] = []
    child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()))
    const lines = createInterface({ input: child.stdout! })
    this.exited = new Promise((resolve) => child.once('close', () => resolve()))
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name} did not start within ${WORKER_START_MS} ms: ${stderr.join('').trim()}`)), WORKER_START_MS)
      child.once('close', (code, signal) => {
        clearTimeout(timer)
        reject(new Error(`${this.name} exited before it was ready (${code ?? signal}): ${stderr.join('').trim()}`))
      })
      lines.on('line', (line) => {
        if (line.startsWith('ready ')) {
          clearTimeout(timer)
          resolve()
        } else if (line.startsWith('got ')) this.onReceived(Number(line.slice(4)), this.name)
      })
    })
  }

  /** Sends a signal to the worker's own pid (SIGTERM: graceful leave; SIGKILL: crash; SIGSTOP: hang). */
  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child!.kill(signal)
  }

  /** Resolves once the process has exited and its output is read to the end. */
  async waitForExit(): Promise<void> {
    await this.exited
  }

  /** Leaves gracefully (a hung worker is woken first); SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return this.waitForExit()
    this.signal('SIGCONT')
    this.signal('SIGTERM')
    const timer = setTimeout(() => this.signal('SIGKILL'), graceMs)
    await this.waitForExit()
    clearTimeout(timer)
  }
}
