/** Counters of one node, rendered in Prometheus' text exposition format. */
export class Metrics {
  private readonly counters = new Map<string, number>()

  count(name: string, by = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + by)
  }

  get(name: string): number {
    return this.counters.get(name) ?? 0
  }

  render(gauges: Record<string, number>): string {
    const lines: string[] = []
    for (const [name, value] of [...this.counters].sort()) {
      lines.push(`# TYPE phoenix_${name}_total counter`, `phoenix_${name}_total ${value}`)
    }
    for (const [name, value] of Object.entries(gauges)) lines.push(`# TYPE phoenix_${name} gauge`, `phoenix_${name} ${value}`)
    return `${lines.join('\n')}\n`
  }
}
