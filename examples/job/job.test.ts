import { expect, test } from 'vitest'
import { runJob, violations } from './job.ts'

// The example job, small: 300 acknowledged sends to 3 workers while one leaves, one crashes, one
// hangs (each comes back) and a fourth joins. Whatever the timing, every send must end acked or
// failed with a code, and an ack must mean the worker's app printed the message.
test('the job: acked + failed = sent, no acked message missing, no received message reported failed', async () => {
  const lines: string[] = []
  const summary = await runJob({ messages: 300, workers: 3, ack: true, sendsPerSecond: 60, inFlightMax: 8, hangMs: 2_000, retries: 3, log: (l) => lines.push(l) })
  console.log(JSON.stringify(summary))
  expect(violations(summary, true)).toEqual([])
  expect(Object.keys(summary.failed).filter((code) => code.startsWith('uncoded'))).toEqual([])
  // The chaos really happened: leave, crash and hang, two restarts and a join.
  expect(summary.chaos.filter((c) => c.includes('restarted')).length).toBe(2)
  expect(summary.chaos.some((c) => c.includes('resumes'))).toBe(true)
  expect(summary.chaos.some((c) => c.includes('worker/3 joins'))).toBe(true)
  expect(summary.chaos.some((c) => c.includes('chaos step failed'))).toBe(false)
  // Most work gets through: the failures are the messages caught by a crash or a leave.
  expect(summary.acked).toBeGreaterThan(summary.sent * 0.8)
}, 120_000)
