import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { seed, seedOf } from '../../../vitest.setup.ts'

describe('tests set up once (vitest.setup.ts)', () => {
  it('fast-check runs from the printed seed: PHOENIX_SEED when set', () => {
    expect(fc.readConfigureGlobal().seed).toBe(seed)
    if (process.env.PHOENIX_SEED !== undefined && process.env.PHOENIX_SEED !== '') expect(seed).toBe(Number(process.env.PHOENIX_SEED))
  })

  it('reads PHOENIX_SEED strictly, and falls back to the clock only when it is unset', () => {
    expect(seedOf('42')).toBe(42)
    expect(seedOf(' 7 ')).toBe(7)
    const fromClock = seedOf(undefined)
    expect(Number.isInteger(fromClock) && fromClock >= 0 && fromClock < 2 ** 31).toBe(true)
    expect(() => seedOf('soon')).toThrow('PHOENIX_SEED must be an integer')
    expect(() => seedOf('-1')).toThrow('PHOENIX_SEED')
    expect(() => seedOf(String(2 ** 31))).toThrow('PHOENIX_SEED')
  })

  it('the same seed draws the same values (what makes a printed seed worth replaying)', () => {
    const draw = () => fc.sample(fc.integer(), { numRuns: 5 })
    expect(draw()).toEqual(draw())
  })
})
