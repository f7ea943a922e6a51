import type { Metrics as Libp2pMetrics } from '@libp2p/interface'

/**
 * Counters of one node, rendered in Prometheus' text exposition format (`metricsText()`, the
 * CLI's `/metrics`), and handed to libp2p's metrics (`components.metrics`) when the host node
 * has one, as two calculated groups: `phoenix_events_total` (the counters) and `phoenix_state`
 * (the gauges). Besides the counts made here, the owner passes counts kept elsewhere (the core's,
 * the credit table's) as `tallies`: they only grow too, so they are counters, `_total` and all;
 * exported as gauges, a `rate()` over a restart would read the reset as a fall.
 */
export class Metrics {
  private readonly counters = new Map<string, number>()

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
