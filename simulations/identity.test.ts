import { describe, expect, it } from 'vitest'
import { IDENTITY_CASES, compareCase, firstDifference, runCase } from './identity.ts'

// The full check (every scenario at 400 processes, ~2 min) is `run identity` in this package; the
// suite runs the small cases, which reach the same code paths, against the same fixtures.
describe('same seed, same bytes (simulations/fixtures/identity)', () => {
  for (const c of IDENTITY_CASES.filter((x) => x.quick)) {
    it(`${c.name} is byte-identical to its fixture`, () => {
      expect(compareCase(c, runCase(c))).toEqual([])
    })
  }

  it('the comparison notices a change of one byte', () => {
    const c = IDENTITY_CASES.find((x) => x.quick)!
    const out = runCase(c)
    const changed = { ...out, result: out.result.replace(/"messages": (\d+)/, (_, n: string) => `"messages": ${Number(n) + 1}`) }
    expect(changed.result).not.toBe(out.result)
    expect(compareCase(c, changed)).toHaveLength(1)
    expect(firstDifference('a\nb\n', 'a\nc\n')).toBe('line 2: expected "b", got "c"')
  })
})
