import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Uint8ArrayList } from 'uint8arraylist'
import { afterAll, describe, expect, it } from 'vitest'
import { makeMessage, MessageReader } from '../src/framing.ts'
import { BenchNode } from '../src/bench-node.ts'
import { explained, quantile } from '../src/measure.ts'
import type { NodeHandle } from '../src/rpc.ts'
import { PATH_IDS } from '../src/paths.ts'
import { makePlan, NODE_FLAGS, parseNodeFlags } from '../src/plan.ts'
import { goals, summarize, type Goal, type MemoryRow, type Row, type Summary } from '../src/report.ts'
import type { PathId } from '../src/paths.ts'
import { runBenchScript } from './run-script.ts'

describe('MessageReader', () => {
  it('finds every message and its stamp however the byte stream is cut', () => {
    const sizes = [8, 9, 64, 4096, 70_000, 8, 100]
    const stream = new Uint8ArrayList(...sizes.map((size, i) => makeMessage(size, BigInt(1_000 + i), true)))
    const bytes = stream.subarray()
    // Cuts at every offset below 40 (lengths and stamps straddle chunks) and then in big strides.
    for (const cut of [1, 3, 5, 7, 11, 13, 40, 4099, 65_536]) {
      const seen: [bigint, number][] = []
      const reader = new MessageReader((stamp, size) => seen.push([stamp, size]))
      for (let at = 0; at < bytes.length; at += cut) {
        // Half the pieces arrive as a Uint8ArrayList of two chunks, as libp2p streams deliver them.
        const piece = bytes.subarray(at, Math.min(bytes.length, at + cut))
        if (piece.length > 1 && (at / cut) % 2 === 1) reader.push(new Uint8ArrayList(piece.subarray(0, 1), piece.subarray(1)))
        else reader.push(piece)
      }
      expect(seen, `cut every ${cut} bytes`).toEqual(sizes.map((size, i) => [BigInt(1_000 + i), size]))
    }
  })

  it('refuses a frame shorter than its stamp', () => {
    const reader = new MessageReader(() => undefined)
    expect(() => reader.push(new Uint8Array([0, 0, 0, 4, 1, 2, 3, 4, 5, 6, 7, 8]))).toThrow(/bad frame/)
  })
})

describe('quantile', () => {
  it('takes the nearest rank', () => {
    const xs = Array.from({ length: 100 }, (_, i) => 100 - i) // 100 … 1
    expect(quantile(xs, 0.5)).toBe(50)
    expect(quantile(xs, 0.99)).toBe(99)
    expect(quantile([7], 0.99)).toBe(7)
    expect(quantile([], 0.5)).toBeNaN()
  })
})

describe('a receiver that comes up short', () => {
  it('gives up once no message has come for its stall time, saying how many are missing, instead of waiting out the whole budget', { timeout: 15_000 }, async () => {
    const receiver = new BenchNode()
    receiver.arm({ messages: 3, latencies: false })
    const startedMs = performance.now()
    // The total budget (60 s) is longer than this test may take: only the stall deadline ends it.
    await expect(receiver.collect({ timeoutMs: 60_000, stallMs: 300 })).rejects.toThrow('receiver: 0 of 3 messages (3 missing) and none for 300 ms')
    expect(performance.now() - startedMs).toBeLessThan(5_000)
  })

  it('says what the sender heard of the missing messages: refusals by reason, or none', async () => {
    const sender = (refusals: Record<string, number>) => ({ call: async (method: string) => (method === 'refusals' ? refusals : undefined) }) as unknown as NodeHandle
    const short = () => Promise.reject(new Error('receiver: 7 of 10 messages (3 missing) and none for 10000 ms'))
    await expect(explained(sender({ 'receiver-too-slow': 3 }), short())).rejects.toThrow('receiver: 7 of 10 messages (3 missing) and none for 10000 ms; the sender heard of 3 receiver-too-slow')
    await expect(explained(sender({}), short())).rejects.toThrow('; the sender heard of no refusal')
    await expect(explained(sender({}), Promise.resolve(5))).resolves.toBe(5)
  })
})

describe('the goals', () => {
  /** A round's measured throughput of one path at one size (everything else a placeholder). */
  const row = (round: number, path: PathId, messageBytes: number, mibPerS: number): Row => {
    const throughput = { bytes: 1, seconds: 1, mibPerS, cpuSPerMiB: { total: 0 }, usage: [] }
    return { variant: 'process', round, path, intermediates: 1, messageBytes, warmup: throughput, throughput, latency: { samplesUs: [100], medianUs: 100, p99Us: 100 } }
  }

  it('give a throughput ratio on the medians, and its value in each round against that round\'s best relay', () => {
    const rows = [64 * 1024, 4096].flatMap((bytes) => [
      // Round 1: it-pipe is the faster relay; rounds 0 and 2: pause/resume.
      ...[[100, 90, 80], [80, 100, 90], [120, 110, 120]].map(([itPipe, pauseResume, phoenix], round) => [
        row(round, 'it-pipe', bytes, itPipe!),
        row(round, 'pause-resume', bytes, pauseResume!),
        row(round, 'phoenix-1', bytes, phoenix!),
        row(round, 'circuit-relay-v2', bytes, 50),
      ]).flat(),
    ])
    const [pipe64, circuit64] = goals(summarize(rows), [], rows)
    // Medians: Phoenix 90, it-pipe 100, pause/resume 100: 0.90. By round: 80/100, 90/100, 120/120.
    expect(pipe64!.value).toBeCloseTo(0.9)
    expect(pipe64!.display).toBe('0.90× (first transfer 0.90×; by round 0.80, 0.90, 1.00)')
    expect(circuit64!.display).toBe('1.80× (first transfer 1.80×; by round 1.60, 1.80, 2.40)')
    // One round: no spread to show.
    expect(goals(summarize(rows.filter((r) => r.round === 0)), [], rows.filter((r) => r.round === 0))[0]!.display).toBe('0.80× (first transfer 0.80×)')
  })
})

describe('forwarding benchmark, --quick, one process per node', () => {
  const out = mkdtempSync(join(tmpdir(), 'phoenix-bench-'))
  afterAll(() => rmSync(out, { recursive: true, force: true }))

  it('measures every path and size end to end and computes the goals', { timeout: 180_000 }, async () => {
    const { code, stderr } = await runBenchScript('forwarding.ts', ['--quick', '--out', out])
    expect(code, stderr).toBe(0)

    const { summaries, goals, memory } = JSON.parse(readFileSync(join(out, 'forwarding.json'), 'utf8')) as { summaries: Summary[]; goals: Goal[]; memory: MemoryRow[] }
    const processRuns = summaries.filter((s) => s.variant === 'process')
    expect(processRuns).toHaveLength(PATH_IDS.length * 4) // every path at 64 B, 4 KiB, 64 KiB, 1 MiB
    for (const s of summaries) {
      expect(s.mibPerS, `${s.variant} ${s.path} ${s.messageBytes}`).toBeGreaterThan(0)
      expect(Number.isFinite(s.mibPerS)).toBe(true)
      // Each case is measured after a first transfer of its own (the warm-up), reported apart.
      expect(s.firstMiBPerS, `first transfer: ${s.variant} ${s.path} ${s.messageBytes}`).toBeGreaterThan(0)
      expect(Number.isFinite(s.firstMiBPerS)).toBe(true)
      expect(s.latencyMedianUs).toBeGreaterThan(0)
      expect(s.latencyP99Us).toBeGreaterThanOrEqual(s.latencyMedianUs)
      expect(s.cpuSPerMiB.total).toBeGreaterThan(0)
    }
    // Each process reports its own CPU: a relayed path has all three roles.
    expect(processRuns.find((s) => s.path === 'phoenix-1')!.cpuSPerMiB).toEqual(expect.objectContaining({ sender: expect.any(Number), middle: expect.any(Number), receiver: expect.any(Number) }))
    expect(summaries.filter((s) => s.variant === 'in-process')).toHaveLength(PATH_IDS.length)

    expect(goals.map((g) => g.what)).toEqual([
      expect.stringMatching(/64 KiB: Phoenix \/ best pipe relay/),
      expect.stringMatching(/64 KiB: Phoenix \/ circuit-relay-v2/),
      expect.stringMatching(/4 KiB: Phoenix \/ best pipe relay/),
      expect.stringMatching(/added median one-way latency per hop, 64 B, both over the bare stream/),
      expect.stringMatching(/added median one-way latency per hop, 64 B, each over its own direct path/),
      expect.stringMatching(/middle node memory/),
    ])
    for (const g of goals) expect(Number.isFinite(g.value), g.what).toBe(true)

    expect(memory.map((m) => m.path)).toEqual(['it-pipe', 'pause-resume', 'circuit-relay-v2', 'phoenix-1'])
    for (const m of memory) expect(m.rssPeakBytes).toBeGreaterThanOrEqual(m.rssStartBytes)

    expect(readFileSync(join(out, 'forwarding.svg'), 'utf8')).toMatch(/^<svg[^>]*>.*throughput, MiB\/s/s)
    const csv = readFileSync(join(out, 'runs.csv'), 'utf8').trim().split('\n')
    expect(csv).toHaveLength(1 + PATH_IDS.length * 4 + PATH_IDS.length)
    const header = csv[0]!.split(',')
    const column = (name: string) => csv.slice(1).map((line) => Number(line.split(',')[header.indexOf(name)]))
    const planned = new Map(makePlan({ quick: true }).sizes.map((size) => [size.messageBytes, size.warmupBytes]))
    const messageBytes = column('message_bytes')
    column('first_transfer_bytes').forEach((bytes, i) => expect(bytes, `row ${i + 1}`).toBe(planned.get(messageBytes[i]!)))
    for (const goal of goals.slice(0, 3)) expect(goal.display).toMatch(/^\d+\.\d\d× \(first transfer \d+\.\d\d×\)$/)
    const report = readFileSync(join(out, 'REPORT.md'), 'utf8')
    expect(report).toContain('<!-- forwarding:start -->')
    expect(report).toContain("### The issue's goals, from this run")
    // Every node process, baseline or Phoenix, ran with the same flags, and the report says which.
    expect(report).toContain(`every node process with \`${NODE_FLAGS.join(' ')}\``)
  })

  it('refuses a --node-flags value that is not Node options, naming the option, before starting anything', async () => {
    const { code, stderr } = await runBenchScript('forwarding.ts', ['--quick', '--out', out, '--node-flags=--max-semi-space-size=16 semi'])
    expect(code).toBe(2)
    expect(stderr.trim().split('\n')).toHaveLength(1)
    expect(stderr).toMatch(/--node-flags: "semi" is not a Node option/)
  })
})

describe('node flags of the bench processes', () => {
  it("parses --node-flags: '' is Node's defaults, options split on spaces", () => {
    expect(parseNodeFlags('')).toEqual([])
    expect(parseNodeFlags(' --a=1  --b ')).toEqual(['--a=1', '--b'])
    expect(() => parseNodeFlags('--a x')).toThrow(/--node-flags: "x"/)
  })

  it('gives every plan the default flags unless told otherwise, full run or smoke run alike', () => {
    expect(NODE_FLAGS).toContain('--max-semi-space-size=16')
    expect(makePlan({ quick: false }).nodeFlags).toEqual(NODE_FLAGS)
    expect(makePlan({ quick: true }).nodeFlags).toEqual(NODE_FLAGS)
    expect(makePlan({ quick: true, nodeFlags: [] }).nodeFlags).toEqual([])
  })
})
