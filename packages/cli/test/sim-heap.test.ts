import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { HEAP_RAISED_ENV, heapToRaiseMiB, parentGone } from '../src/sim-heap.ts'
import { REPO, processTree, sleep, start, waitGone } from './helpers.ts'

const MiB = 2 ** 20
const PHOENIX = join(REPO, 'node_modules/.bin/phoenix')
const SCENARIO = join(REPO, 'simulations/scenarios/paper-3-subnets.json')
/** A small V8 heap for the command that starts the run (its young generation small too, so the limit is mostly the old space). */
const SMALL_HEAP = { ...process.env, NODE_OPTIONS: '--max-old-space-size=48 --max-semi-space-size=2' }

describe('phoenix sim raises its own heap limit when a run may need more (a 3,000-process run stopped with "heap out of memory")', () => {
  it('raises to what the run may need, only when over the limit, within the machine, and once', () => {
    expect(heapToRaiseMiB(100 * MiB, 200 * MiB, 1000 * MiB, {})).toBeUndefined()
    expect(heapToRaiseMiB(300 * MiB + 1, 200 * MiB, 1000 * MiB, {})).toBe(301)
    // More than the machine has: no limit helps (the warning says how many processes fit).
    expect(heapToRaiseMiB(2000 * MiB, 200 * MiB, 1000 * MiB, {})).toBeUndefined()
    // The run started with the raised limit never starts another.
    expect(heapToRaiseMiB(300 * MiB, 200 * MiB, 1000 * MiB, { [HEAP_RAISED_ENV]: '1' })).toBeUndefined()
  })

  it('runs again with the raised limit, says so in one line, and gives its result and status', async () => {
    const run = start(PHOENIX, ['sim', SCENARIO, '--nodes', '300'], SMALL_HEAP)
    expect(await run.exited).toBe(0)
    await run.closed
    const lines = run.stderr.trim().split('\n')
    // 300² pairs at 900 bytes (SIM_LIMITS.HEAP_BYTES_PER_PAIR): 78 MiB.
    expect(lines[0]).toMatch(/^phoenix sim: 300 processes may need ~78 MiB of heap, more than V8's limit here \(\d+ MiB\): running with --max-old-space-size=78$/)
    expect(lines[1]).toMatch(/^paper-3-subnets: 300 nodes, .*tables match BFS/)
    expect(JSON.parse(run.stdout)).toMatchObject({ nodes: 300, converged: true })
  }, 60_000)

  it('the run stops with the command: a SIGTERM to the command reaches it', async () => {
    const run = start(PHOENIX, ['sim', SCENARIO, '--nodes', '1500'], SMALL_HEAP)
    let tree = new Set<number>()
    for (let i = 0; i < 100 && tree.size < 2; i++) {
      await sleep(100)
      tree = processTree(run.pid)
    }
    // The command and the run it started (a launcher between them where the workspace's Node is a shim).
    expect(tree.size, 'the command and the run it started').toBeGreaterThanOrEqual(2)
    await sleep(1_000)
    tree = processTree(run.pid)
    process.kill(run.pid, 'SIGTERM')
    expect(await run.exited).toBe(128 + 15)
    // Gone well before the 1,500-process run would have ended (~30 s).
    await waitGone(tree, 5_000)
  }, 60_000)

  it('a run whose command was killed outright (SIGKILL: nothing passed on) sees it at its next progress step', () => {
    // Only in a run started by rerunWithHeap (the variable set), and only once the parent changed.
    expect(parentGone(process.ppid)).toBe(false)
    const before = process.env[HEAP_RAISED_ENV]
    process.env[HEAP_RAISED_ENV] = '1'
    try {
      expect(parentGone(process.ppid)).toBe(false)
      expect(parentGone(process.ppid + 1)).toBe(true)
    } finally {
      if (before === undefined) delete process.env[HEAP_RAISED_ENV]
      else process.env[HEAP_RAISED_ENV] = before
    }
  })
})
