/**
 * Set up once for every test file (`setupFiles` in vitest.config.ts): fast-check draws from one
 * seed, PHOENIX_SEED if set, else the clock, and the seed is printed so that any failing property
 * run can be replayed with `PHOENIX_SEED=<seed> npx vitest run <file>`. (fast-check's own repo
 * configures itself the same way, in its vitest.setup.mjs.)
 */
import fc from 'fast-check'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { sendSelfCheck } from './packages/core/src/send.ts'

/** fast-check seeds are 32-bit integers; the clock's milliseconds are folded into [0, 2^31). */
const SEED_RANGE = 2 ** 31

/** The seed PHOENIX_SEED names, or the clock's if it is unset or empty. */
export function seedOf(text: string | undefined): number {
  if (text === undefined || text.trim() === '') return Date.now() % SEED_RANGE
  const seed = Number(text)
  if (!Number.isInteger(seed) || seed < 0 || seed >= SEED_RANGE) throw new Error(`PHOENIX_SEED must be an integer in [0, 2^31), got ${JSON.stringify(text)}`)
  return seed
}

export const seed = seedOf(process.env.PHOENIX_SEED)
fc.configureGlobal({ seed })
console.log(`fast-check seed ${seed} (replay with PHOENIX_SEED=${seed})`)

// Every send round checks that the neighbours that joined are the only ones an unchanged entry
// can lack (packages/core/src/send.ts, `sendSelfCheck`): the shortcut that makes a round O(joined).
sendSelfCheck.enabled = true

// Every test file gets a temporary directory of its own as TMPDIR (for itself and every process
// it starts), removed after its last test: the tests make hundreds of directories (keys, control
// sockets, scenario files, ssh sockets), and each left behind stayed in /tmp for good (1,800 of
// them after a few days of runs, found by a new-user audit).
const outerTmpDir = process.env.TMPDIR
const fileTmpDir = mkdtempSync(join(tmpdir(), 'phoenix-test-'))
process.env.TMPDIR = fileTmpDir
afterAll(() => {
  if (outerTmpDir === undefined) delete process.env.TMPDIR
  else process.env.TMPDIR = outerTmpDir
  // A child process still exiting may write a last file: retry rather than leave the directory.
  rmSync(fileTmpDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
})
