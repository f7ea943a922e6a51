import { readFileSync } from 'node:fs'
import { PhoenixCore } from '@phoenix-overlay/core'
import { parseScenario, Simulation } from '@phoenix-overlay/sim'
const s = parseScenario(JSON.parse(readFileSync(process.env.SCEN ?? '../../.scratch/fail286.json', 'utf8')))
const X = process.argv[2] ?? 'A-013', W = process.argv[3] ?? 'A-000'
const P = PhoenixCore.prototype as any
const origStep = P.step
const last = new Map<any, string>()
P.step = function (nowMs: number) {
  const r = origStep.call(this, nowMs)
  if (this.id === X || this.id === W) {
    const k = this.id === X ? `own seq ${this.ownSeq} left ${this.hasLeft}` : (() => { const rt = this.route(X); const nb = this.neighbours.get(X); const e = this.table.get(X); const tr = e && nb ? `trans ${e.trans.has ? e.trans.has(nb.index) : '?'} rcpt ${e.rcpt.has ? e.rcpt.has(nb.index) : '?'} dirty ${this.table.dirty.has(e)}` : ''; return (rt ? `${X}: reach ${rt.reachable} fwd ${rt.fwd} nhops ${rt.nhops} seq ${rt.seq}` : `${X}: none`) + ` nb ${nb ? 'yes heard ' + nb.ownerSeqHeard : 'no'} ${tr}` })()
    if (last.get(this) !== k) { console.log(nowMs.toFixed(3), this.id, k); last.set(this, k) }
    for (const e of r.effects) if (e.type === 'send' && ((this.id === W && e.to === X) || (this.id === X && e.to === W))) console.log(nowMs.toFixed(3), `${this.id} -> ${e.to}:`, e.message.entries.filter((x: any) => x.destination === X || x.destination === W).map((x: any) => `${x.destination} seq ${x.seq} nh ${x.nhops}`).join('; '), `(${e.message.entries.length})`)
  }
  return r
}
const origRecv = P.receive
P.receive = function (from: string, msg: any, nowMs: number) {
  if ((this.id === W && from === X) || (this.id === X && from === W)) console.log(nowMs.toFixed(3), `${this.id} <- ${from}:`, msg.entries.filter((x: any) => x.destination === X || x.destination === W).map((x: any) => `${x.destination} seq ${x.seq} nh ${x.nhops}`).join('; '), `(${msg.entries.length})`)
  return origRecv.call(this, from, msg, nowMs)
}
const sim = new Simulation(s, { trace: (t, line) => { if (line.includes(X) && (line.includes(W) || !line.includes('dial'))) console.log(t.toFixed(3), 'TRACE', line) } })
const r = sim.run()
console.log(r.convergenceMs, JSON.stringify(r.check).slice(0, 200))
