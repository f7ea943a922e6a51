import { LAUNCHER_POLL_MS, LEAVE_TIMEOUT_MS, SIGNAL_ECHO_MS } from './constants.ts'
import { hasProc, processInfo } from './proc.ts'

/** A process between the user and this Node: npm/npx, pnpm, a `sh -c`, a node_modules/.bin shim. */
export interface Launcher {
  readonly pid: number
  readonly startTicks: string
  readonly command: string
}

/** No launcher chain is this long (npx → sh -c → shim → pnpm → shim is 5); past it we are looking at something else. */
const LAUNCHERS_MAX = 16

/**
 * The launchers this process was started through. A SIGTERM sent to the pid a user or job manager
 * holds reaches that launcher, not Node: pnpm's `node` shim runs Node as a child without exec and
 * dies of the signal, npm forwards it only to its own child shell. Every launcher passes the
 * user's arguments through, so they are the ancestors whose command line ends with ours; the
 * first that does not (the user's shell, the job manager) is where the chain stops.
 */
export function findLaunchers(args: readonly string[] = process.argv.slice(2)): Launcher[] {
  const tail = args.join(' ')
  const launchers: Launcher[] = []
  if (tail === '') return launchers
  let pid = process.ppid
  while (pid > 1 && launchers.length < LAUNCHERS_MAX) {
    const info = processInfo(pid)
    if (info === undefined || !(info.command === tail || info.command.endsWith(` ${tail}`))) break
    launchers.push({ pid, startTicks: info.startTicks, command: info.command })
    pid = info.ppid
  }
  return launchers
}

/** The first launcher that is gone (exited, even if not reaped yet, or its pid now names another process), if any. */
export function goneLauncher(launchers: readonly Launcher[]): Launcher | undefined {
  return launchers.find((l) => {
    const info = processInfo(l.pid)
    return info === undefined || !info.running || info.startTicks !== l.startTicks
  })
}

export interface GuardOptions {
  /** Runs once, on the first SIGTERM/SIGINT/SIGHUP or launcher exit; the process exits when it settles. */
  readonly stop: (reason: string) => Promise<void>
  /** Exit anyway this long after the stop began (default LEAVE_TIMEOUT_MS). */
  readonly leaveTimeoutMs?: number
  /** Where the reason for stopping is said (default stderr). */
  readonly say?: (line: string) => void
}

/**
 * Makes the command stop gracefully on SIGTERM, SIGINT or SIGHUP to its own pid, and on the death of any
 * launcher it was started through (polled every LAUNCHER_POLL_MS), whichever comes first; a second
 * signal exits at once. Without /proc (not Linux) the launcher check is "our parent changed".
 */
export function guardProcess(options: GuardOptions): void {
  const say = options.say ?? ((line: string) => process.stderr.write(`${line}\n`))
  const leaveTimeoutMs = options.leaveTimeoutMs ?? LEAVE_TIMEOUT_MS
  let stopping = false
  let firstSignal: { signal: NodeJS.Signals; atMs: number } | undefined
  const begin = (reason: string) => {
    if (stopping) return
    stopping = true
    clearInterval(poll)
    say(`phoenix: ${reason}; leaving`)
    setTimeout(() => {
      say(`phoenix: the leave took longer than ${leaveTimeoutMs} ms; exiting without finishing it`)
      process.exit(1)
    }, leaveTimeoutMs)
    options.stop(reason).then(
      () => process.exit(0),
      (error: unknown) => {
        say(`phoenix: leave failed: ${error instanceof Error ? error.message : String(error)}`)
        process.exit(1)
      },
    )
  }
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (!stopping) {
        firstSignal = { signal, atMs: Date.now() }
        return begin(`${signal} received`)
      }
      if (firstSignal?.signal === signal && Date.now() - firstSignal.atMs < SIGNAL_ECHO_MS) return // the same signal again (SIGNAL_ECHO_MS)
      say(`phoenix: second ${signal}; exiting without finishing the leave`)
      process.exit(1)
    })
  }
  // The terminal or SSH session it runs in closed. Node's default for SIGHUP is to die at once: no
  // leave, so acknowledged messages still in the inbox were lost without a word and the names
  // stayed held as after a crash (found by hand, `kill -HUP`). It leaves as on SIGTERM. The
  // terminal is gone, so writes to it fail (EIO): they must not crash the leave. The kernel and the
  // shell may both send one: a repeat is not a "second signal".
  process.on('SIGHUP', () => {
    for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined)
    begin('SIGHUP received (its terminal closed)')
  })
  const launchers = hasProc() ? findLaunchers() : undefined
  const parent = process.ppid
  const poll = setInterval(() => {
    if (launchers === undefined) {
      if (process.ppid !== parent) begin(`parent process ${parent} exited`)
      return
    }
    const gone = goneLauncher(launchers)
    if (gone !== undefined) begin(`launcher pid ${gone.pid} (${gone.command.slice(0, 60)}) exited`)
  }, LAUNCHER_POLL_MS)
  poll.unref()
}
