import { delimiter, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { processTree, REPO, start, waitGone } from './helpers.ts'

describe('examples/shell-job: a coordinator and workers in bash with the phoenix command only', () => {
  it('deals tasks with acknowledged sends, workers take them with recv and answer, and nothing is left running', async () => {
    const env = { ...process.env, WORKERS: '2', PATH: `${join(REPO, 'node_modules/.bin')}${delimiter}${process.env.PATH ?? ''}` }
    const job = start('bash', ['-c', 'seq 1 8 | bash examples/shell-job/job.sh'], env)
    let tree = new Set<number>()
    const watch = setInterval(() => (tree = new Set([...tree, ...processTree(job.pid)])), 200)
    try {
      expect(await job.exited).toBe(0)
      clearInterval(watch)
      // Every node left when the job ended (SIGTERM to the pids the script started), and took its pipelines with it.
      await waitGone(tree, 5_000)
      expect(tree.size).toBeGreaterThan(5)
    } finally {
      clearInterval(watch)
      job.killGroup()
    }
    const lines = job.stdout.trim().split('\n')
    expect(lines.slice(0, -1)).toEqual([1, 3, 5, 7, 2, 4, 6, 8].map((n, i) => `worker-${i < 4 ? 0 : 1}: ${n} squared is ${n * n}`))
    expect(lines.at(-1)).toBe('tasks 8, acknowledged 8, results 8, sum of squares 204 (expected 204)')
  })
})
