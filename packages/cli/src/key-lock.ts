import { randomBytes } from 'node:crypto'
import { linkSync, mkdirSync, readFileSync, rmdirSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { LOCK_TAKEOVER_STALE_MS } from './constants.ts'
import { processInfo } from './proc.ts'

/** The process a lock file names: its pid and, where /proc exists, its start time (so a reused pid is not taken for the holder). */
export interface LockHolder {
  readonly pid: number
  readonly startTicks: string | undefined
}

/** Thrown by `PidLock.acquire` when a live process holds the lock. */
export class LockHeldError extends Error {
  constructor(readonly holder: LockHolder) {
    super(`held by pid ${holder.pid}`)
    this.name = 'LockHeldError'
  }
}

function parseHolder(text: string): LockHolder | undefined {
  const match = /^(\d+) (\S+)\n$/.exec(text)
  if (match === null) return undefined
  return { pid: Number(match[1]), startTicks: match[2] === '-' ? undefined : match[2] }
}

function isAlive(holder: LockHolder): boolean {
  try {
    process.kill(holder.pid, 0)
  } catch (error) {
    // EPERM: it exists but is someone else's; only ESRCH means no such process.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false
  }
  const info = processInfo(holder.pid)
  // An exited holder its parent has not reaped yet (a job manager that kills and restarts at once) holds nothing.
  if (info?.running === false) return false
  return holder.startTicks === undefined || info === undefined || info.startTicks === holder.startTicks
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)

/**
 * Removes a dead holder's lock file, unless someone replaced it meanwhile. Two processes may find
 * the same stale lock at once: a directory (mkdir is atomic) makes the check-and-remove exclusive,
 * so neither can remove a lock the other has just taken.
 */
function removeStale(path: string, staleText: string): void {
  const guard = `${path}.takeover`
  try {
    mkdirSync(guard)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    const since = statSync(guard, { throwIfNoEntry: false })
    if (since !== undefined && Date.now() - since.mtimeMs > LOCK_TAKEOVER_STALE_MS) rmdirSync(guard)
    else sleepSync(20)
    return
  }
  try {
    if (readText(path) === staleText) unlinkSync(path)
  } finally {
    rmdirSync(guard)
  }
}

/**
 * A lock file naming the live process that holds it (`<pid> <start time>`). Why not a library:
 * proper-lockfile and lockfile decide staleness by the file's age, so a crashed holder blocks a
 * restart for their stale period, a paused one loses its lock, and neither can name the holder;
 * here staleness is "that process is gone", checked by pid (and start time, where /proc has it).
 * The file is written whole and then hard-linked into place, so a reader never sees a partial one.
 */
export class PidLock {
  private released = false

  private constructor(
    readonly path: string,
    private readonly text: string,
  ) {}

  /** Takes the lock at `path` (a stale one is taken over); throws `LockHeldError` naming a live holder. */
  static acquire(path: string): PidLock {
    const text = `${process.pid} ${processInfo(process.pid)?.startTicks ?? '-'}\n`
    const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`
    writeFileSync(temporary, text, { mode: 0o600 })
    try {
      // Each failed round removed a stale lock or waited for another remover; 100 rounds is
      // seconds of contention, far more than two or three processes starting at once can cause.
      for (let round = 0; round < 100; round++) {
        try {
          linkSync(temporary, path)
          return new PidLock(path, text)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
        }
        const held = readText(path)
        if (held === undefined) continue
        const holder = parseHolder(held)
        if (holder !== undefined && isAlive(holder)) throw new LockHeldError(holder)
        removeStale(path, held)
      }
      throw new Error(`could not take over the stale lock ${path}`)
    } finally {
      unlinkSync(temporary)
    }
  }

  /** Removes the lock file if it is still ours (synchronous: safe in an 'exit' handler; idempotent). */
  release(): void {
    if (this.released) return
    this.released = true
    try {
      if (readText(this.path) === this.text) unlinkSync(this.path)
    } catch {
      // Nothing to do: the file is gone or unreadable, and either way not ours to repair.
    }
  }
}
