import { createHash } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { heapShortfall, runSim, type SimCommandOptions } from '../src/commands/sim.ts'
import { REPO, tempDir } from './helpers.ts'

/** Writes a scenario file into `dir` (named after its content) and returns its path. */
function scenarioIn(dir: string, scenario: object): string {
  const path = join(dir, `s${createHash('sha1').update(JSON.stringify(scenario)).digest('hex').slice(0, 8)}.json`)
  writeFileSync(path, JSON.stringify(scenario))
  return path
}

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

describe('phoenix sim heap warning', () => {
  const GiB = 2 ** 30
  it('warns, naming NODE_OPTIONS and the size, only when N² pairs may not fit in the heap limit', () => {
    // 2,000 processes ran in V8's 4 GiB (simulations/REPORT.md, Scale); 5,000 needed ~15 GiB.
    expect(heapShortfall(2000, 4 * GiB, 24 * GiB)).toBeUndefined()
    const warning = heapShortfall(5000, 4 * GiB, 24 * GiB)
    expect(warning).toMatch(/^phoenix sim: 5000 processes may need ~(\d+) MiB of heap, more than V8's limit here \(4096 MiB\); raise it with NODE_OPTIONS=--max-old-space-size=(\d+) /)
    const [, need, raise] = /~(\d+) MiB.*size=(\d+)/.exec(warning!)!
    expect(Number(need)).toBe(Number(raise))
    expect(Number(need)).toBeGreaterThan(4096 * 4)
    expect(heapShortfall(5000, 24 * GiB, 24 * GiB)).toBeUndefined()
  })

  it('past the machine\'s memory, says so and how many processes fit instead of naming a heap limit', () => {
    const warning = heapShortfall(10_000, 4 * GiB, 24 * GiB)
    expect(warning).toMatch(/^phoenix sim: 10000 processes may need ~\d+ MiB of heap, more than this machine's memory \(24576 MiB\): expect the run to be killed or to swap; about (\d+) processes fit$/)
    const fitting = Number(/about (\d+) processes/.exec(warning!)![1])
    // The count given fits by the same estimate, one more does not.
    expect(heapShortfall(fitting, 64 * GiB, 24 * GiB)).toBeUndefined()
    expect(heapShortfall(fitting + 1, 64 * GiB, 24 * GiB)).toMatch(/more than this machine's memory/)
    expect(warning).not.toContain('max-old-space-size')
  })

  it('refuses an --out or --dump-tables it cannot write before the run, not after it: one line, exit status 2 (and no hang under /proc)', () => {
    let text = ''
    const stream = Object.assign(new PassThrough(), { isTTY: false })
    stream.on('data', (d: Buffer) => (text += d.toString('utf8')))
    const scenario = join(REPO, 'simulations/scenarios/paper-3-subnets.json')
    const dir = tempDir('sim-out')
    const file = join(dir, 'a-file')
    writeFileSync(file, 'x')
    const cases: [SimCommandOptions, RegExp][] = [
      // Node's recursive mkdir never returns here (a parent that exists but cannot hold children).
      [{ out: '/proc/phoenix-no-such-dir' }, /^--out \/proc\/phoenix-no-such-dir: cannot write there \(ENOENT/],
      [{ out: file }, /^--out .*a-file: cannot write there \(not a directory\)$/],
      [{ dumpTables: join(dir, 'no', 'such', 'tables.json') }, /^--dump-tables .*tables\.json: directory .*such does not exist$/],
      // It ran the whole simulation, then failed with EISDIR.
      [{ dumpTables: dir }, /^--dump-tables .*: is a directory; give the path of a file to write$/],
    ]
    // No gateway, and --discovery hubs given on the command line: nobody would meet anybody.
    const lone = join(dir, 'no-gateway.json')
    writeFileSync(lone, JSON.stringify({ discovery: 'all', subnets: [{ name: 'A', nodes: 5, gateways: 0 }] }))
    const byFile: [string, SimCommandOptions, RegExp][] = [
      ...cases.map(([options, message]): [string, SimCommandOptions, RegExp] => [scenario, { nodes: 30, ...options }, message]),
      [lone, { discovery: 'hubs' }, /^scenario\.subnets: no gateway, and with "discovery": "hubs"/],
      [lone, { strategy: 'naive', discovery: 'hubs' }, /^scenario\.subnets: no gateway/],
      // Too few processes for the file's subnets: the command line's error too (it exited 1, as a failed run does).
      [scenario, { nodes: 2 }, /^--nodes 2 is too few for 3 subnets and their gateways$/],
      // Found by a new user: set up by the run, these exited 1 as a failed run does.
      [scenarioIn(dir, { subnets: [{ name: 'A', nodes: 3 }], events: [{ atMs: 10, type: 'crash', nodes: ['A-009'] }] }), {}, /^scenario\.events\[0\]\.nodes\[0\]: no node "A-009"/],
      [scenarioIn(dir, { subnets: [{ name: 'A', nodes: 3 }], events: [{ atMs: 10, type: 'crash', nodes: { count: 100 } }] }), {}, /^scenario\.events\[0\]\.nodes\.count: 100 nodes asked, only 2 non-gateway nodes/],
      [join(REPO, 'simulations/scenarios/paper-fig6-churn.json'), { nodes: 30, strategy: 'master' }, /^scenario\.events: the master baseline assumes static processes/],
      // A baseline discovers nothing: --discovery was taken silently (the result said "all").
      [scenario, { nodes: 30, strategy: 'offline', discovery: 'hubs' }, /^--discovery hubs: has no effect with strategy offline \(its connections are given, not discovered\); leave it out$/],
    ]
    for (const [path, options, message] of byFile) {
      let thrown: unknown
      try {
        runSim(path, options, stream)
      } catch (error) {
        thrown = error
      }
      expect((thrown as Error | undefined)?.message).toMatch(message)
      expect((thrown as { exitCode?: number }).exitCode).toBe(2)
    }
    // Nothing ran: no summary line.
    expect(text).not.toContain('converged')
    // A directory that does not exist yet is made, levels and all.
    expect(runSim(scenario, { nodes: 30, out: join(dir, 'new', 'deep') }, stream)).toBe(0)
    expect(readFileSync(join(dir, 'new', 'deep', 'result.json'), 'utf8')).toContain('"converged": true')
  })

  it('--send-hold is the file\'s sendHoldForDialsMs: the same result either way (the default quietMs followed only the file\'s)', () => {
    const stream = Object.assign(new PassThrough(), { isTTY: false })
    const dir = tempDir('sim-hold')
    const file = join(dir, 'held.json')
    const paper = JSON.parse(readFileSync(join(REPO, 'simulations/scenarios/paper-1-subnet.json'), 'utf8')) as { coreTiming?: object }
    writeFileSync(file, JSON.stringify({ ...paper, coreTiming: { ...paper.coreTiming, sendHoldForDialsMs: 6_000 } }))
    expect(runSim(file, { nodes: 20, out: join(dir, 'file') }, stream)).toBe(0)
    expect(runSim(join(REPO, 'simulations/scenarios/paper-1-subnet.json'), { nodes: 20, sendHold: 6_000, out: join(dir, 'flag') }, stream)).toBe(0)
    const [fromFile, fromFlag] = ['file', 'flag'].map((d) => readFileSync(join(dir, d, 'result.json'), 'utf8').replace(/"name": "[^"]*"/, ''))
    expect(fromFlag).toBe(fromFile)
  })

  it('reads a file that starts with a UTF-8 byte-order mark (it said "not valid JSON")', () => {
    const stream = Object.assign(new PassThrough(), { isTTY: false })
    const dir = tempDir('sim-bom')
    const file = join(dir, 'bom.json')
    writeFileSync(file, `\uFEFF${readFileSync(join(REPO, 'simulations/scenarios/paper-1-subnet.json'), 'utf8')}`)
    expect(readFileSync(file)[0]).toBe(0xef)
    expect(runSim(file, { nodes: 20, out: join(dir, 'out') }, stream)).toBe(0)
    expect(readFileSync(join(dir, 'out', 'result.json'), 'utf8')).toContain('"converged": true')
  })

  it('a run that ends quiet with connections missing for good says so; one that did not converge says its tables were not checked', () => {
    let text = ''
    const stream = Object.assign(new PassThrough(), { isTTY: false })
    stream.on('data', (d: Buffer) => (text += d.toString('utf8')))
    const dir = tempDir('sim-partial')
    // The only gateway (every node's hub) crashes at 0: nobody meets anybody; it said only "converged … tables match BFS".
    const cut = scenarioIn(dir, { subnets: [{ name: 'A', nodes: 10, gateways: 1 }], events: [{ atMs: 0, type: 'crash', nodes: ['A-000'] }] })
    expect(runSim(cut, { out: join(dir, 'cut') }, stream)).toBe(0)
    expect(text).toMatch(/tables match BFS \(over the connections that formed: 36 allowed connections missing, 0\.0% of sampled pairs reachable\)/)
    text = ''
    expect(runSim(scenarioIn(dir, { subnets: [{ name: 'A', nodes: 20, gateways: 1 }], endMs: 5 }), { out: join(dir, 'short') }, stream)).toBe(1)
    expect(text).toMatch(/DID NOT CONVERGE.*tables not checked;/)
    expect(text).not.toMatch(/WRONG|-> -/)
  })

  it('runSim prints no warning for a run that fits (processes.test.ts has one that does not)', () => {
    let text = ''
    const stream = Object.assign(new PassThrough(), { isTTY: false })
    stream.on('data', (d: Buffer) => (text += d.toString('utf8')))
    expect(runSim(join(REPO, 'simulations/scenarios/paper-3-subnets.json'), { nodes: 30, out: tempDir('sim') }, stream)).toBe(0)
    expect(text).not.toContain('heap')
    expect(text).toContain('tables match BFS')
  })
})
