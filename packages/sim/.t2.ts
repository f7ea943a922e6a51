import { readFileSync } from 'node:fs'
import { PhoenixCore } from '@phoenix-overlay/core'
import { parseScenario, Simulation } from '@phoenix-overlay/sim'
const s = parseScenario(JSON.parse(readFileSync(process.env.SCEN!, 'utf8')))
const P = PhoenixCore.prototype as any
const W = process.env.W ?? 'A-005'
const origRecv = P.receive
P.receive = function (from: string, msg: any, nowMs: number) {
  if (this.id === W && from === 'A-000') {
    console.log(nowMs.toFixed(3), `${W} <- A-000: slots ${msg.neighbourSlots.length} trans ${msg.transSets.length}`, msg.entries.filter((x: any) => ['A-000', 'A-001'].includes(x.destination)).map((x: any) => `${x.destination} seq ${x.seq} nh ${x.nhops} t ${x.trans}`).join('; '), `(${msg.entries.length})`)
  }
  const r = origRecv.call(this, from, msg, nowMs)
  if (this.id === W) {
    const e = this.table.get('A-000'); const a0 = this.neighbours.get('A-000'); const a1 = this.neighbours.get('A-001')
    if (e && a1) console.log(`   ${W} entry A-000 seq ${e.seq} vouch(A-000) ${a0 ? e.vouchers.has(a0.index) : '-'} rcpt(A-001) ${e.rcpt.has(a1.index)} trans(A-001) ${e.trans.has(a1.index)} slots ${a0?.senderSlots ? 'yes' : 'no'}`)
  }
  return r
}
const sim = new Simulation(s)
const r = sim.run()
console.log(r.convergenceMs, JSON.stringify(r.check).slice(0, 200))
