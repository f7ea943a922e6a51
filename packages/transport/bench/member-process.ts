import { spawn, type ChildProcess } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { MemberNodeOptions } from './member-node.ts'

const here = dirname(fileURLToPath(import.meta.url))
const REPO = join(here, '..', '..', '..')
/** Lines kept per process: enough to explain a failure, bounded so a chatty node cannot fill memory. */
const OUTPUT_LINES_MAX = 400

/** A `member-node.ts` process: its real pid (Node started directly, not through a shim), its output, a line protocol on stdin. */
export class MemberProcess {
  readonly child: ChildProcess
  readonly output: string[] = []
  private readonly waiters: { pattern: RegExp; resolve: (line: string) => void; reject: (e: Error) => void }[] = []
  private readonly exited: Promise<void>

  constructor(
    readonly label: string,
    options: MemberNodeOptions,
    /** Node's own flags, e.g. --expose-gc for `liveHeap`. */
    nodeFlags: readonly string[] = [],
  ) {
    this.child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', join(here, 'member-node.ts'), JSON.stringify(options)], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] })
    let partial = ''
    const onData = (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n')
      partial = lines.pop()!
      for (const line of lines) this.onLine(line)
    }
    this.child.stdout!.on('data', onData)
    this.child.stderr!.on('data', (chunk: Buffer) => this.keep(`stderr: ${chunk.toString('utf8').trimEnd()}`))
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => {
      for (const waiter of this.waiters.splice(0)) waiter.reject(new Error(`${label} exited (${code ?? signal}); last output:\n${this.output.slice(-15).join('\n')}`))
      resolve()
    }))
  }

  private keep(line: string): void {
    this.output.push(line)
    if (this.output.length > OUTPUT_LINES_MAX) this.output.shift()
  }

  private onLine(line: string): void {
    this.keep(line)
    const index = this.waiters.findIndex((w) => w.pattern.test(line))
    if (index >= 0) this.waiters.splice(index, 1)[0]!.resolve(line)
  }

  /** The next line matching `pattern` (from now on), within `timeoutMs`. */
  next(pattern: RegExp, timeoutMs = 60_000): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.label}: no line matching ${pattern} within ${timeoutMs} ms; last output:\n${this.output.slice(-15).join('\n')}`)), timeoutMs)
      this.waiters.push({ pattern, resolve: (line) => (clearTimeout(timer), resolve(line)), reject: (e) => (clearTimeout(timer), reject(e)) })
    })
  }

  /** A line already printed, or the next one, matching `pattern`. */
  line(pattern: RegExp, timeoutMs = 60_000): Promise<string> {
    const seen = this.output.find((l) => pattern.test(l))
    return seen !== undefined ? Promise.resolve(seen) : this.next(pattern, timeoutMs)
  }

  private ask(command: string, answer: RegExp): Promise<string> {
    const reply = this.next(answer, 30_000)
    this.child.stdin!.write(`${command}\n`)
    return reply
  }

  async rss(): Promise<number> {
    return Number((await this.ask('rss', /^rss \d+$/)).slice(4))
  }

  /**
   * The live JS heap: `heapUsed` right after a full collection (the node must run with
   * --expose-gc). RSS cannot say whether memory was given back: V8 and malloc keep the pages they
   * once committed, whereas this counts what is still reachable.
   */
  async liveHeap(): Promise<number> {
    await this.ask('gc', /^rss \d+$/)
    return (await this.memory()).heapUsed
  }

  /** `process.memoryUsage()` of the node. */
  async memory(): Promise<NodeJS.MemoryUsage> {
    return JSON.parse((await this.ask('memory', /^memory /)).slice(7)) as NodeJS.MemoryUsage
  }

  async state(): Promise<NodeState> {
    return JSON.parse((await this.ask('state', /^state /)).slice(6)) as NodeState
  }

  async addName(name: string): Promise<void> {
    await this.ask(`add-name ${name}`, /^ok$/)
  }

  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL')
    await this.exited
  }
}

export interface NodeState {
  id: string
  peers: string[]
  destinations: number
  reachable: number
  names: string[]
  stats: Record<string, number>
  conflicts: { name: string; holder: string | undefined; refused: string[] }[]
  resolved: Record<string, string | null>
}

export const MiB = 1024 * 1024
export const mib = (bytes: number): string => `${(bytes / MiB).toFixed(0)} MiB`
