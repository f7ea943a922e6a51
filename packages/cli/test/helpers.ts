import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { NODE_TS_FLAGS } from '../../../tools/node-ts.ts'

/** The repository root (tests run `npx`, the `.bin` shim and `pnpm exec` from here, as the README does). */
export const REPO = fileURLToPath(new URL('../../../', import.meta.url))
/** The CLI's bin, run with this test's own Node (no shim): the quick way to run a one-shot command. */
export const PHOENIX_JS = fileURLToPath(new URL('../bin/phoenix.js', import.meta.url))
/** Node's flags for running PHOENIX_JS on the TypeScript sources without tsx, as bin/phoenix passes them (tools/node-ts.ts). */
export const NODE_TS = NODE_TS_FLAGS

export const tempDir = (label: string) => mkdtempSync(join(tmpdir(), `phoenix-cli-${label}-`))

export interface Run {
  code: number | null
  stdout: string
  stdoutBytes: Uint8Array
  stderr: string
}

/** Runs `phoenix <args>` to its end (stdin from `input`). */
export function phoenix(args: readonly string[], input?: string | Uint8Array, timeoutMs = 30_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...NODE_TS, PHOENIX_JS, ...args], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] })
    const stdout: Buffer[] = []
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => stdout.push(d))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`phoenix ${args.join(' ')} did not finish within ${timeoutMs} ms; stderr: ${stderr}`))
    }, timeoutMs)
    child.on('close', (code) => {
      clearTimeout(timer)
      const bytes = Buffer.concat(stdout)
      resolve({ code, stdout: bytes.toString('utf8'), stdoutBytes: new Uint8Array(bytes), stderr })
    })
    child.stdin.on('error', () => {})
    child.stdin.end(input)
  })
}

/** A long-running command started in its own process group (so every process it starts can be found and cleaned up). */
export class Started {
  stdout = ''
  stderr = ''
  readonly exited: Promise<number | null>
  /** Every process holding its stdout and stderr has closed them, and all they wrote has been read. */
  readonly closed: Promise<void>

  constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (d: Buffer) => (this.stdout += d.toString('utf8')))
    child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString('utf8')))
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
    this.closed = new Promise((resolve) => child.on('close', () => resolve()))
  }

  get pid(): number {
    return this.child.pid!
  }

  /** Waits until stdout or stderr matches. */
  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
    const start = Date.now()
    for (;;) {
      const match = pattern.exec(this.stdout) ?? pattern.exec(this.stderr)
      if (match !== null) return match
      if (Date.now() - start > timeoutMs) throw new Error(`no ${pattern} within ${timeoutMs} ms; stdout: ${this.stdout}; stderr: ${this.stderr}`)
      if (this.child.exitCode !== null) throw new Error(`exited (${this.child.exitCode}) before ${pattern}; stdout: ${this.stdout}; stderr: ${this.stderr}`)
      await sleep(50)
    }
  }

  /** SIGKILLs whatever is left of its process group (cleanup after a failed test). */
  killGroup(): void {
    try {
      process.kill(-this.pid, 'SIGKILL')
    } catch {
      // Already gone.
    }
  }
}

export function start(command: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Started {
  return new Started(spawn(command, args, { cwd: REPO, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env }))
}

/** `phoenix node …` through our own Node: quick, and its pid is Node's. */
export function startNode(args: readonly string[]): Started {
  return start(process.execPath, [...NODE_TS, PHOENIX_JS, 'node', ...args])
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Every live process whose /proc entry exists, with its parent and process group. */
function processTable(): { pid: number; ppid: number; pgid: number }[] {
  const table: { pid: number; ppid: number; pgid: number }[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (fields[0] === 'Z') continue
      table.push({ pid: Number(entry), ppid: Number(fields[1]), pgid: Number(fields[2]) })
    } catch {
      // It exited while we looked.
    }
  }
  return table
}

/** The pid and all its live descendants, plus every live member of its process group. */
export function processTree(pid: number): Set<number> {
  const table = processTable()
  const tree = new Set<number>([pid])
  for (let grew = true; grew; ) {
    grew = false
    for (const p of table) {
      if (!tree.has(p.pid) && (tree.has(p.ppid) || p.pgid === pid)) {
        tree.add(p.pid)
        grew = true
      }
    }
  }
  return new Set([...tree].filter((p) => table.some((t) => t.pid === p)))
}

/** Which of `pids` are still alive (zombies count as gone). */
export function alive(pids: Iterable<number>): number[] {
  const live = new Set(processTable().map((p) => p.pid))
  return [...pids].filter((p) => live.has(p))
}

/** Waits until none of `pids` is alive; returns how long that took, or throws after `timeoutMs` naming the survivors. */
export async function waitGone(pids: Iterable<number>, timeoutMs: number): Promise<number> {
  const list = [...pids]
  const start = performance.now()
  for (;;) {
    const left = alive(list)
    if (left.length === 0) return performance.now() - start
    if (performance.now() - start > timeoutMs) {
      const commands = left.map((p) => {
        try {
          return `${p}: ${readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\0', ' ').slice(0, 120)}`
        } catch {
          return String(p)
        }
      })
      throw new Error(`still running ${timeoutMs} ms later: ${commands.join('; ')}`)
    }
    await sleep(25)
  }
}

/** A TCP port on 127.0.0.1 that was free a moment ago (nothing listens on it now). */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}
