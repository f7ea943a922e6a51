import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { ChildConfig, ChildStatus } from './child-node.ts'
import { NODE_TS_FLAGS } from '../../../tools/node-ts.ts'

/** The repository root: `--import tsx` resolves tsx from here. */
const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const CHILD = fileURLToPath(new URL('./child-node.ts', import.meta.url))

/** A Phoenix node in its own process (child-node.ts), spawned with this Node directly so signals reach it. */
export class ChildNode {
  readonly process: ChildProcess
  peerId = ''
  address = ''
  status: ChildStatus | undefined
  readonly statuses: { atMs: number; status: ChildStatus }[] = []
  private output = ''
  private readonly ready: Promise<void>
  readonly exited: Promise<number | null>

  constructor(config: ChildConfig) {
    this.process = spawn(process.execPath, [...NODE_TS_FLAGS, CHILD, JSON.stringify(config)], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] })
    this.exited = new Promise((resolve) => this.process.on('exit', (code) => resolve(code)))
    this.ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`child node did not start within 60 s: ${this.output}`)), 60_000)
      this.process.stdout!.on('data', (chunk: Buffer) => {
        for (const line of chunk.toString('utf8').split('\n')) {
          const ready = line.match(/^READY (\S+) (\S+)/)
          if (ready !== null) {
            ;[, this.peerId, this.address] = ready as unknown as [string, string, string]
            clearTimeout(timer)
            resolve()
          }
          const status = line.match(/^STATUS (.*)$/)
          if (status !== null) {
            this.status = JSON.parse(status[1]!) as ChildStatus
            this.statuses.push({ atMs: performance.now(), status: this.status })
          }
        }
      })
      this.process.stderr!.on('data', (chunk: Buffer) => (this.output = (this.output + chunk.toString('utf8')).slice(-4_000)))
      void this.exited.then((code) => reject(new Error(`child node exited with ${code}: ${this.output}`)))
    })
  }

  started(): Promise<void> {
    return this.ready
  }

  get pid(): number {
    return this.process.pid!
  }

  signal(signal: NodeJS.Signals): void {
    if (this.process.exitCode === null && this.process.signalCode === null) process.kill(this.pid, signal)
  }

  /** Ends the child for good (a stopped child is continued first so it can die). */
  async kill(): Promise<void> {
    this.signal('SIGKILL')
    this.signal('SIGCONT')
    await this.exited
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Polls `condition` every 20 ms; resolves with the time it took, rejects after `timeoutMs`. */
export async function timeUntil(condition: () => boolean, timeoutMs: number, what: string): Promise<number> {
  const started = performance.now()
  while (!condition()) {
    if (performance.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await sleep(20)
  }
  return performance.now() - started
}
