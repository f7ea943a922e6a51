import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { runSim } from '../src/commands/sim.ts'
import { REPO, tempDir } from './helpers.ts'

describe('phoenix sim progress', () => {
  it('the bar tracks convergence (share of pairs reachable), not the scenario end time', () => {
    // A terminal-like stream: the bar is drawn only on terminals.
    const stream = Object.assign(new PassThrough(), { isTTY: true, columns: 120 })
    let drawn = ''
    stream.on('data', (d: Buffer) => (drawn += d.toString('utf8')))
    const out = tempDir('sim')
    const code = runSim(join(REPO, 'simulations/scenarios/paper-3-subnets.json'), { nodes: 60, out }, stream)
    expect(code).toBe(0)
    const result = JSON.parse(readFileSync(join(out, 'result.json'), 'utf8')) as { converged: boolean; convergenceMs: number }
    expect(result.converged).toBe(true)
    const frames = [...drawn.matchAll(/(\d+)% of pairs reachable \| ([\d.]+) s virtual/g)].map((m) => ({ percent: Number(m[1]), virtualS: Number(m[2]) }))
    expect(frames.length).toBeGreaterThanOrEqual(2)
    expect(frames[0]!.percent).toBe(0)
    // Converged in well under a second of the scenario's 600 s, and the bar says so: it is full.
    const last = frames.at(-1)!
    expect(last.percent).toBe(100)
    expect(last.virtualS).toBeLessThan(5)
  })
})
