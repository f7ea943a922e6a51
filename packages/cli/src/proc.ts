import { readFileSync } from 'node:fs'

/** What Linux's /proc says about a process; undefined where there is no /proc or no such process. */
export interface ProcessInfo {
  readonly ppid: number
  /** Start time in clock ticks since boot (field 22 of /proc/<pid>/stat): with the pid, it names one process for good. */
  readonly startTicks: string
  /** The command line, arguments joined by spaces (what `ps -o args` shows). */
  readonly command: string
}

export function processInfo(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 2 (the command name) is in parentheses and may itself contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '').join(' ')
    return { ppid: Number(fields[1]), startTicks: fields[19] ?? '', command }
  } catch {
    return undefined
  }
}

/** True where /proc describes processes (Linux). */
export function hasProc(): boolean {
  return processInfo(process.pid) !== undefined
}
