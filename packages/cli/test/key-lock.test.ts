import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { LockHeldError, PidLock } from '../src/key-lock.ts'
import { goneLauncher } from '../src/process-guard.ts'
import { processInfo } from '../src/proc.ts'
import { tempDir } from './helpers.ts'

/** The pid of a process that has exited. */
function deadPid(): number {
  const pid = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout)
  expect(pid).toBeGreaterThan(0)
  return pid
}

/**
 * A process that has exited and is not reaped: a shell's background child, the shell replaced by a
 * `sleep` that never waits for it. `parent` is ours to kill once done (then init reaps the zombie).
 */
async function zombie(): Promise<{ pid: number; parent: ChildProcess }> {
  // The child exits only after the shell is replaced (a shell reaps a child that exits before).
  const parent = spawn('sh', ['-c', 'sleep 0.5 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] })
  const pid = await new Promise<number>((resolve) => parent.stdout!.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))))
  for (let i = 0; i < 250 && processInfo(pid)?.running !== false; i++) await new Promise((r) => setTimeout(r, 20))
  expect(processInfo(pid)?.running).toBe(false)
  return { pid, parent }
}

describe('PidLock', () => {
  it('names the live holder and is free again once released', () => {
    const path = join(tempDir('lock'), 'node.key.lock')
    const lock = PidLock.acquire(path)
    expect(readFileSync(path, 'utf8')).toMatch(new RegExp(`^${process.pid} \\d+\\n$`))
    try {
      PidLock.acquire(path)
      expect.unreachable('a live holder must keep its lock')
    } catch (error) {
      expect(error).toBeInstanceOf(LockHeldError)
      expect((error as LockHeldError).holder.pid).toBe(process.pid)
    }
    lock.release()
    expect(existsSync(path)).toBe(false)
    PidLock.acquire(path).release()
  })

  it('takes over a lock whose holder is dead, or whose pid now names another process', () => {
    const dir = tempDir('stale')
    const dead = join(dir, 'dead.lock')
    writeFileSync(dead, `${deadPid()} 12345\n`)
    const a = PidLock.acquire(dead)
    expect(readFileSync(dead, 'utf8')).toMatch(new RegExp(`^${process.pid} `))
    a.release()
    // Our own pid, but another start time: the pid was reused, the holder is gone.
    const reused = join(dir, 'reused.lock')
    writeFileSync(reused, `${process.pid} 1\n`)
    PidLock.acquire(reused).release()
    // Garbage is no holder either.
    const garbage = join(dir, 'garbage.lock')
    writeFileSync(garbage, 'not a lock')
    PidLock.acquire(garbage).release()
  })

  it('takes over a lock whose holder exited but is not reaped yet (a zombie still answers kill 0), and a launcher in that state counts as gone', { timeout: 15_000 }, async () => {
    const { pid, parent } = await zombie()
    try {
      // The zombie's pid still answers kill(pid, 0): only its state says it is gone.
      expect(() => process.kill(pid, 0)).not.toThrow()
      const path = join(tempDir('zombie'), 'node.key.lock')
      writeFileSync(path, `${pid} ${processInfo(pid)!.startTicks}\n`)
      PidLock.acquire(path).release()
      expect(goneLauncher([{ pid, startTicks: processInfo(pid)!.startTicks, command: 'sh' }])?.pid).toBe(pid)
      // A running process with its own start time is no zombie, and not gone.
      expect(goneLauncher([{ pid: process.pid, startTicks: processInfo(process.pid)!.startTicks, command: 'node' }])).toBeUndefined()
    } finally {
      parent.kill('SIGKILL')
    }
  })

  it('does not remove a lock someone else took after it was released', () => {
    const path = join(tempDir('release'), 'x.lock')
    const lock = PidLock.acquire(path)
    writeFileSync(path, `${process.pid} other\n`)
    lock.release()
    expect(existsSync(path)).toBe(true)
  })
})
