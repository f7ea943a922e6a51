import type { SimResult } from './result.ts'

/** The result file: stable key order and no wall-clock data, so one seed gives identical bytes. */
export function resultToJson(result: SimResult): string {
  return `${JSON.stringify(result, null, 2)}\n`
}

export function samplesToCsv(result: SimResult): string {
  const lines = ['t_ms,reachable_fraction,mean_hops,pairs']
  for (const s of result.samples) lines.push(`${s.tMs},${s.reachableFraction.toFixed(6)},${s.meanHops.toFixed(6)},${s.pairs}`)
  return `${lines.join('\n')}\n`
}
