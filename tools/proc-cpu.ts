import { readFileSync } from 'node:fs'

/**
 * CPU seconds (user + system) another process has used so far, from /proc (Linux); 0 once it is
 * gone or where there is no /proc. For a child the harness started itself: `process.cpuUsage()`
 * measures only the calling process. Resolution: one clock tick (USER_HZ, 100 per second on Linux).
 */
export function procCpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return 0
  try {
    // After the command name (which may hold spaces), utime and stime are the 12th and 13th fields.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return 0
  }
}

/** What `/proc` counts of a process (Linux): CPU by mode, read and write system calls, context switches. */
export interface ProcCounts {
  readonly userS: number
  readonly systemS: number
  /** read(2)-like and write(2)-like system calls (`/proc/<pid>/io` syscr, syscw): a socket write is one each. */
  readonly reads: number
  readonly writes: number
  /** Context switches: the process waited (voluntary), or was preempted (involuntary). */
  readonly voluntarySwitches: number
  readonly involuntarySwitches: number
}

/** `/proc`'s counts of process `pid` so far; undefined once it is gone or where there is no /proc (or no /proc/<pid>/io). */
export function procCounts(pid: number): ProcCounts | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const io = readFileSync(`/proc/${pid}/io`, 'utf8')
    const field = (text: string, name: string): number => {
      const match = new RegExp(`^${name}:\\s+(\\d+)$`, 'm').exec(text)
      if (match === null) throw new Error(`no ${name}`)
      return Number(match[1])
    }
    return {
      userS: Number(stat[11]) / 100,
      systemS: Number(stat[12]) / 100,
      reads: field(io, 'syscr'),
      writes: field(io, 'syscw'),
      voluntarySwitches: field(status, 'voluntary_ctxt_switches'),
      involuntarySwitches: field(status, 'nonvoluntary_ctxt_switches'),
    }
  } catch {
    return undefined
  }
}
