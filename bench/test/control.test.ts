import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { procCpuSeconds } from '../../tools/proc-cpu.ts'
import { runBenchScript } from './run-script.ts'

describe('control endpoint benchmark, --quick (bench/src/control.ts)', () => {
  const out = mkdtempSync(join(tmpdir(), 'phoenix-bench-control-'))
  afterAll(() => rmSync(out, { recursive: true, force: true }))

  it('sends through every mode end to end and writes throughput and the sending node\'s CPU for each', { timeout: 120_000 }, async () => {
    const { code, stderr } = await runBenchScript('control.ts', ['--quick', '--out', out])
    expect(code, stderr).toBe(0)

    const [header, ...rows] = readFileSync(join(out, 'control.csv'), 'utf8').trim().split('\n')
    expect(header).toBe('round,mode,messageBytes,bytes,mibPerS,senderCpuMsPerMiB')
    const runs = rows.map((r) => r.split(','))
    expect(runs.map((r) => r[1])).toEqual(expect.arrayContaining(['library', 'per-request', 'streaming', 'send --lines']))
    expect(runs).toHaveLength(4)
    for (const [, mode, messageBytes, bytes, mibPerS, cpu] of runs) {
      expect(Number(messageBytes), mode).toBe(4096)
      expect(Number(bytes), mode).toBe(2 * 1024 * 1024)
      expect(Number(mibPerS), mode).toBeGreaterThan(0)
      // Every mode makes its sending node work: a CPU of 0 would mean the wrong process was read.
      expect(Number(cpu), mode).toBeGreaterThan(0)
    }
    const report = readFileSync(join(out, 'REPORT.md'), 'utf8')
    expect(report).toMatch(/\| message \| how \| MiB\/s \| × library \| sending node's CPU, ms per MiB \|/)
    expect(report).toMatch(/Goal \(issue 19\): streaming send ≥ 0\.50 × the library API at 4 KiB: \*\*\d+\.\d\d\*\*/)
  })

  it('reads another process\'s CPU from /proc, and 0 for one that is gone', async () => {
    // Spends 0.3 s of CPU (not of wall time: the machine may be busy), says so, and waits to be stopped.
    const busy = spawn(process.execPath, ['-e', "while (process.cpuUsage().user < 300000); console.log('spent'); setInterval(() => {}, 1000)"], { stdio: ['ignore', 'pipe', 'ignore'] })
    await new Promise((spent) => busy.stdout.once('data', spent))
    expect(procCpuSeconds(busy.pid)).toBeGreaterThanOrEqual(0.28)
    busy.kill('SIGKILL')
    await new Promise((done) => busy.on('exit', done))
    expect(procCpuSeconds(busy.pid)).toBe(0)
    expect(procCpuSeconds(undefined)).toBe(0)
  })
})
