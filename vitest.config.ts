import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts', 'simulations/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})
