import { expect, test } from 'vitest'
import { runCollectiveJob } from './collective-job.ts'

// The collective job, small: 4 workers in three sites, 4 rounds; worker/0 leaves before round 2,
// worker/1 crashes while round 3's reduce waits for it (that round runs again without it), worker/4
// joins before round 4. Every round's answer must be the sum of squares, from every member.
test('the collective job: answers checked while workers leave, crash and join', async () => {
  const lines: string[] = []
  const results = await runCollectiveJob({ workers: 4, rounds: 4, n: 10_000, log: (l) => lines.push(l) })
  console.log(lines.join('\n'))
  const expected = (10_000 * 10_001 * 20_001) / 6
  expect(results.map((r) => r.answer)).toEqual([expected, expected, expected, expected])
  expect(results.map((r) => r.members.length)).toEqual([4, 3, 2, 3])
  // The crash mid-round was noticed (reported missing, not waited on) and the round ran again.
  expect(results[2]!.attempts).toBe(2)
  expect(lines.some((l) => /^round 3\.1: .*missing worker\/1 \(left\)/.test(l))).toBe(true)
  expect(results.map((r) => r.attempts).filter((_, i) => i !== 2)).toEqual([1, 1, 1])
}, 120_000)
