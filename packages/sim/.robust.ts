import { parseScenario, Simulation } from '@phoenix-overlay/sim'
let x = Number(process.argv[2] ?? 1) >>> 0
const runs = Number(process.argv[3] ?? 100)
const rnd = () => { x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0; x ^= x >>> 12; return (x >>> 0) / 2 ** 32 }
const pick = <T,>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!
const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1))
let fails = 0
for (let r = 0; r < runs; r++) {
  const seedState = x
  const nSub = int(1, 5)
  const subnets = Array.from({ length: nSub }, (_, i) => { const nodes = int(2, 50); return { name: String.fromCharCode(65 + i), nodes, gateways: int(1, Math.min(3, nodes)) } })
  const strategy = pick(['optimized', 'optimized', 'optimized', 'naive', 'offline', 'master'] as const)
  const discovery = strategy === 'offline' || strategy === 'master' ? 'hubs' : pick(['hubs', 'hubs', 'all'] as const)
  const ids = subnets.flatMap((s) => Array.from({ length: s.nodes }, (_, i) => `${s.name}-${String(i).padStart(3, '0')}`))
  const events: any[] = []
  if (strategy !== 'master' && rnd() < 0.6) {
    const k = int(1, 4)
    for (let e = 0; e < k; e++) {
      const at = int(50, 3000)
      const type = pick(['crash', 'restart', 'leave', 'linkFail', 'linkHeal', 'crash', 'restart'] as const)
      if (type === 'linkFail' || type === 'linkHeal') events.push({ atMs: at, type, between: [pick(ids), pick(ids)] })
      else events.push({ atMs: at, type, nodes: rnd() < 0.5 ? { fraction: pick([0.1, 0.3, 0.5]) } : [pick(ids)] })
    }
  }
  const json = {
    name: 'robust', seed: int(1, 1e6), strategy, discovery, subnets,
    network: { firewall: pick(['drop', 'reject']), crashDetectMs: pick([200, 1000]) },
    processing: { perMessageUs: pick([10, 50, 500]), perEntryUs: pick([1, 2, 20, 200]), perConnectionUs: pick([0, 200, 2000]) },
    startSpreadMs: pick([0, 0, 50, 500]),
    coreTiming: { sendHoldForDialsMs: pick([0, 50]), ...(rnd() < 0.5 ? { coHubWaitMs: pick([0, 50, 200]) } : {}) },
    events,
  }
  let scenario
  try { scenario = parseScenario(json) } catch (e) { continue }
  const sim = new Simulation(scenario)
  let res
  try { res = sim.run() } catch (e) { console.log('THROW', (e as Error).message, JSON.stringify(json)); fails++; continue }
  const pending = sim.nodes.filter((n) => n.alive && n.process?.hasWork(sim.nowMs)).length
  if (!res.converged || !res.check.ok || pending > 0) {
    fails++
    console.log(`FAIL run ${r} state ${seedState}: converged ${res.converged} ok ${res.check.ok} pending ${pending} ${JSON.stringify(res.check.failures.slice(0, 3))}\n  ${JSON.stringify(json)}`)
  }
}
console.log(`done ${runs} runs, ${fails} failures`)
