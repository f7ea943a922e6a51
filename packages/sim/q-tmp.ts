import { readFileSync } from 'node:fs'
import { parseScenario, scaleScenario, simulate } from './src/index.ts'
const sc = scaleScenario(parseScenario(JSON.parse(readFileSync('simulations/scenarios/paper-3-subnets.json', 'utf8'))), 400)
const buckets = new Map<string, number>()
const { result } = simulate(sc, { trace: (t, line) => {
  const k = `${Math.floor(t / 20) * 20} ${line.split(' ')[0]} ${line.split(' ').at(-1)}`
  buckets.set(k, (buckets.get(k) ?? 0) + 1)
} })
for (const [k, v] of buckets) console.log(k, v)
console.log(result.convergenceMs, result.reach90Ms)
