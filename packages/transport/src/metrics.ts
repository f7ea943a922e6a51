import type { Metrics as Libp2pMetrics } from '@libp2p/interface'

/**
 * Counters shown from the start, at 0, before anything counts them: a series that appears only
 * at its first event reads as missing to an alert (`absent()`), and `rate()` over its first
 * minute sees no rise from 0. The rest (per address class, per SSH failure code) appear when they
 * first count; they are many and most nodes never see them.
 */
const COUNTERS_FROM_ZERO = [
  'messages_sent', 'messages_forwarded', 'messages_delivered', 'messages_duplicate', 'messages_undeliverable', 'sends_undeliverable',
  'bytes_sent', 'bytes_received', 'updates_sent', 'updates_received', 'update_entries_sent',
  'neighbours_up', 'neighbours_down', 'neighbours_flapped', 'neighbours_unresponsive', 'dials_started', 'dials_failed',
  'dropped_no_route', 'dropped_hop_limit', 'dropped_no_such_name', 'dropped_queue_full',
  'frames_rejected', 'peers_dropped', 'internal_errors', 'name_conflicts', 'acks_unmatched', 'notices_unmatched', 'twins_suspected',
] as const

/**
 * Counters of one node, rendered in Prometheus' text exposition format (`metricsText()`, the
 * CLI's `/metrics`), and handed to libp2p's metrics (`components.metrics`) when the host node
 * has one, as two calculated groups: `phoenix_events_total` (the counters) and `phoenix_state`
 * (the gauges). Besides the counts made here, the owner passes counts kept elsewhere (the core's,
 * the credit table's) as `tallies`: they only grow too, so they are counters, `_total` and all;
 * exported as gauges, a `rate()` over a restart would read the reset as a fall.
 */
export class Metrics {
  private readonly counters = new Map<string, number>(COUNTERS_FROM_ZERO.map((name) => [name, 0]))

  count(name: string, by = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + by)
  }

  get(name: string): number {
    return this.counters.get(name) ?? 0
  }

  /** Registers the counters and `gauges` with libp2p's metrics, read when they are scraped. */
  registerWith(metrics: Libp2pMetrics | undefined, gauges: () => Record<string, number>, tallies: () => Record<string, number>): void {
    if (metrics === undefined) return
    metrics.registerCounterGroup('phoenix_events_total', { calculate: () => ({ ...Object.fromEntries(this.counters), ...tallies() }), help: 'Phoenix overlay node events, by kind' })
    metrics.registerMetricGroup('phoenix_state', { calculate: gauges, help: 'Phoenix overlay node state: routes, neighbours, queues' })
  }

  render(gauges: Record<string, number>, tallies: Record<string, number>): string {
    const lines: string[] = []
    for (const [name, value] of [...this.counters, ...Object.entries(tallies)].sort()) {
      lines.push(`# TYPE phoenix_${name}_total counter`, `phoenix_${name}_total ${value}`)
    }
    for (const [name, value] of Object.entries(gauges)) lines.push(`# TYPE phoenix_${name} gauge`, `phoenix_${name} ${value}`)
    return `${lines.join('\n')}\n`
  }
}
