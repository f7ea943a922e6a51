import { readFileSync } from 'node:fs'

/** What Linux's /proc says about a process; undefined where there is no /proc or no such process. */
export interface ProcessInfo {
  readonly ppid: number
  /** Start time in clock ticks since boot (field 22 of /proc/<pid>/stat): with the pid, it names one process for good. */
  readonly startTicks: string
  /** The command line, arguments joined by spaces (what `ps -o args` shows). */
  readonly command: string
  /**
   * False for a process that has exited and waits to be reaped (a zombie, state Z or X): it still
   * answers `kill(pid, 0)`, for as long as its parent does not wait for it (0.8 s after a SIGKILL
   * here; for good under a parent that never waits), but holds nothing.
   */
  readonly running: boolean
}

export function processInfo(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 2 (the command name) is in parentheses and may itself contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '').join(' ')
    return { ppid: Number(fields[1]), startTicks: fields[19] ?? '', command, running: fields[0] !== 'Z' && fields[0] !== 'X' }
  } catch {
    return undefined
  }
}

/** True where /proc describes processes (Linux). */
export function hasProc(): boolean {
  return processInfo(process.pid) !== undefined
}
