import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { procCounts } from '../../tools/proc-cpu.ts'

describe('procCounts (run counts: what the kernel counted of a process)', () => {
  it.runIf(process.platform === 'linux')('counts every write system call of a process, and nothing for a process that is gone', () => {
    const dir = mkdtempSync(join(tmpdir(), 'phoenix-counts-'))
    try {
      const fd = openSync(join(dir, 'out'), 'w')
      const before = procCounts(process.pid)!
      for (let i = 0; i < 200; i++) writeSync(fd, 'x')
      const after = procCounts(process.pid)!
      closeSync(fd)
      // Each writeSync is one write(2); the test runner may write too, never fewer.
      expect(after.writes - before.writes).toBeGreaterThanOrEqual(200)
      expect(after.userS + after.systemS).toBeGreaterThanOrEqual(before.userS + before.systemS)
      expect(after.voluntarySwitches).toBeGreaterThanOrEqual(before.voluntarySwitches)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    // Past the largest pid Linux hands out (2^22): no such process.
    expect(procCounts(2 ** 22 + 1)).toBeUndefined()
  })
})
