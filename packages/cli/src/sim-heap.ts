import { spawn } from 'node:child_process'
import { constants } from 'node:os'
import { LAUNCHER_POLL_MS } from './constants.ts'
import { hasProc } from './proc.ts'
import { findLaunchers, goneLauncher } from './process-guard.ts'

/**
 * Set in the environment of a `phoenix sim` run again with a raised heap limit (`rerunWithHeap`):
 * that run runs the simulation itself, never a child of its own.
 */
export const HEAP_RAISED_ENV = 'PHOENIX_SIM_HEAP_RAISED'

/**
 * The heap limit (MiB) to run a simulation again with: what it may need (`needBytes`, from
 * SIM_LIMITS.HEAP_BYTES_PER_PAIR) when that is over V8's limit here and within the machine's
 * memory; undefined when the limit is enough, when this run was raised already, or when no limit
 * would help (more than the machine has: `heapShortfall` says so instead).
 */
export function heapToRaiseMiB(needBytes: number, limitBytes: number, memoryBytes: number, env: NodeJS.ProcessEnv = process.env): number | undefined {
  if (env[HEAP_RAISED_ENV] !== undefined || needBytes <= limitBytes || needBytes > memoryBytes) return undefined
  return Math.ceil(needBytes / 2 ** 20)
}

/**
 * Runs this same command line again in a child Node with `--max-old-space-size=<heapMiB>`,
 * writing to our stdout and stderr. A 3,000-process run needs about twice V8's default limit
 * here; it stopped with "heap out of memory" after minutes, the fix left to the user. The child
 * stops with us: SIGTERM, SIGINT and SIGHUP are passed on, and so is the death of a launcher we
 * were started through (pnpm's shim does not pass signals on: process-guard.ts). Resolves to the
 * child's exit status, 128 + the signal's number if a signal ended it.
 */
export function rerunWithHeap(heapMiB: number): Promise<number> {
  const args = [...process.execArgv, `--max-old-space-size=${heapMiB}`, ...process.argv.slice(1)]
  const child = spawn(process.execPath, args, { stdio: 'inherit', env: { ...process.env, [HEAP_RAISED_ENV]: '1' } })
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal)
  const handlers = (['SIGTERM', 'SIGINT', 'SIGHUP'] as const).map((signal) => [signal, forward(signal)] as const)
  for (const [signal, handler] of handlers) process.on(signal, handler)
  const launchers = hasProc() ? findLaunchers() : []
  const poll = setInterval(() => {
    if (goneLauncher(launchers) !== undefined) child.kill('SIGTERM')
  }, LAUNCHER_POLL_MS)
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      clearInterval(poll)
      for (const [name, handler] of handlers) process.off(name, handler)
      resolve(code ?? 128 + (signal === null ? 0 : constants.signals[signal]))
    })
  })
}

/**
 * In a run started by `rerunWithHeap`: whether the process that started it is gone (it was
 * killed outright, SIGKILL, and could pass nothing on). The simulation is one synchronous loop, so
 * it asks at each progress callback and stops: a multi-GiB run must not go on with no one to
 * read it.
 */
export function parentGone(parentPid: number): boolean {
  return process.env[HEAP_RAISED_ENV] !== undefined && process.ppid !== parentPid
}
