import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineConfig } from 'vitest/config'

// Node's compile cache for every process the tests start (they inherit this environment): the
// suite starts a few hundred Node processes on the same sources, and with the cache each start
// skips compiling (and transforming) the modules it already compiled once.
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'phoenix-node-compile-cache')

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts', 'simulations/**/*.test.ts', 'bench/test/**/*.test.ts', 'examples/**/*.test.ts'],
    // fast-check's seed (PHOENIX_SEED or the clock), configured and printed once per test file.
    setupFiles: ['./vitest.setup.ts'],
    // Two test files at a time. Vitest 5 runs one at a time on a 2-core machine by default, and
    // most of the suite's time is spent waiting on child processes and network namespaces, not
    // on the CPU: one at a time left a core idle and the run near its 10-minute budget.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})
