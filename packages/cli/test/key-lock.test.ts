import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { LockHeldError, PidLock } from '../src/key-lock.ts'
import { tempDir } from './helpers.ts'

/** The pid of a process that has exited. */
function deadPid(): number {
  const pid = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout)
  expect(pid).toBeGreaterThan(0)
  return pid
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

  it('does not remove a lock someone else took after it was released', () => {
    const path = join(tempDir('release'), 'x.lock')
    const lock = PidLock.acquire(path)
    writeFileSync(path, `${process.pid} other\n`)
    lock.release()
    expect(existsSync(path)).toBe(true)
  })
})
