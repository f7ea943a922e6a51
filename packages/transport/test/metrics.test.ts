import { describe, expect, it } from 'vitest'
import { Metrics } from '../src/metrics.ts'

describe('metrics', () => {
  it('shows the main counters at 0 before anything counts them (a series that appears only at its first event reads as absent)', () => {
    const metrics = new Metrics()
    const text = metrics.render({ routes: 3 }, { core_updates_applied: 0 })
    for (const name of ['messages_delivered', 'messages_undeliverable', 'dropped_no_route', 'neighbours_down', 'peers_dropped', 'internal_errors']) {
      expect(text).toMatch(new RegExp(`^# TYPE phoenix_${name}_total counter\\nphoenix_${name}_total 0$`, 'm'))
    }
    expect(text).toMatch(/^phoenix_routes 3$/m)
    metrics.count('messages_delivered', 2)
    metrics.count('dials_link_local')
    const after = metrics.render({}, {})
    expect(after).toMatch(/^phoenix_messages_delivered_total 2$/m)
    // Each counter once, in name order.
    const names = [...after.matchAll(/^phoenix_(\w+)_total /gm)].map((m) => m[1]!)
    expect(names).toEqual([...new Set(names)].sort())
    expect(names).toContain('dials_link_local')
  })
})
