import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts', 'simulations/**/*.test.ts', 'bench/test/**/*.test.ts', 'examples/**/*.test.ts'],
    // fast-check's seed (PHOENIX_SEED or the clock), configured and printed once per test file.
    setupFiles: ['./vitest.setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})
