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
