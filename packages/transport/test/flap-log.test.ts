import type { Logger } from '@libp2p/interface'
import { describe, expect, it } from 'vitest'
import { FLAPPING_PEERS_MAX } from '../src/constants.ts'
import { FlapLog } from '../src/flap-log.ts'
import { Metrics } from '../src/metrics.ts'

/** A logger that keeps its lines: `info` for the plain ones, `error` for error level. */
function keptLog(): { log: Logger; lines: { level: 'info' | 'error'; text: string }[] } {
  const lines: { level: 'info' | 'error'; text: string }[] = []
  const format = (args: unknown[]) => args.map(String).join(' ')
  const log = Object.assign((...args: unknown[]) => lines.push({ level: 'info', text: format(args) }), {
    error: (...args: unknown[]) => lines.push({ level: 'error', text: format(args) }),
    trace: () => {},
    enabled: true,
  }) as unknown as Logger
  return { log, lines }
}

describe('a neighbour that closes the connection soon after it opened (a flap)', () => {
  it('once is a plain line (a crashed or killed process); the same peer again in a row is an error line saying it refuses us', () => {
    const { log, lines } = keptLog()
    const metrics = new Metrics()
    const flaps = new FlapLog(log, metrics)
    flaps.closed('w1', 120, 'aborted', true)
    expect(lines.map((l) => l.level)).toEqual(['info'])
    expect(lines[0]!.text).toContain('crashed or was killed')
    // Restarted with its key and killed again at once: still a plain line; the third in a row is an error.
    flaps.closed('w1', 15, 'aborted', true)
    flaps.closed('w1', 15, 'aborted', true)
    expect(lines.map((l) => l.level)).toEqual(['info', 'info', 'error'])
    expect(lines[2]!.text).toMatch(/times in a row: it refuses us, unless it crashed each time.* 3$/)
    // Another peer's first flap is its own first.
    flaps.closed('w2', 30, 'aborted', true)
    expect(lines[3]!.level).toBe('info')
    expect(metrics.get('neighbours_flapped')).toBe(4)
  })

  it('a connection that lived, or was closed by us or by a leave, starts the count again', () => {
    const { log, lines } = keptLog()
    const flaps = new FlapLog(log, new Metrics())
    flaps.closed('w1', 100, 'aborted', true)
    flaps.closed('w1', 100, 'aborted', true)
    flaps.closed('w1', 60_000, 'aborted', false)
    flaps.closed('w1', 100, 'aborted', true)
    expect(lines.map((l) => l.level)).toEqual(['info', 'info', 'info'])
    expect(flaps.size).toBe(1)
    flaps.closed('w1', 60_000, 'stream closed', false)
    expect(flaps.size).toBe(0)
  })

  it(`remembers at most ${FLAPPING_PEERS_MAX} peers, the oldest forgotten first`, () => {
    const { log, lines } = keptLog()
    const flaps = new FlapLog(log, new Metrics())
    for (let i = 0; i <= FLAPPING_PEERS_MAX; i++) flaps.closed(`w${i}`, 10, 'aborted', true)
    expect(flaps.size).toBe(FLAPPING_PEERS_MAX)
    // w0 was forgotten: two more flaps are its first and second; the newest peer's two more, its second and third.
    flaps.closed('w0', 10, 'aborted', true)
    flaps.closed('w0', 10, 'aborted', true)
    flaps.closed(`w${FLAPPING_PEERS_MAX}`, 10, 'aborted', true)
    flaps.closed(`w${FLAPPING_PEERS_MAX}`, 10, 'aborted', true)
    expect(lines.slice(-4).map((l) => l.level)).toEqual(['info', 'info', 'info', 'error'])
    expect(flaps.size).toBe(FLAPPING_PEERS_MAX)
  })
})
