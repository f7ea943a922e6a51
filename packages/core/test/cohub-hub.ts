import { PhoenixCore, type RouteAdvert, type UpdateMessage } from '../src/index.ts'

export const record = (destination: string): RouteAdvert => ({ destination, seq: 0, nhops: 0, names: [], addresses: [`addr:${destination}`], trans: -1 })
/** A neighbour's first update: its hello (it holds no record of us) and its own record. */
export const helloWithRecord = (id: string): UpdateMessage => ({ neighbourSlots: [], transSets: [], entries: [record(id)], hello: { receiverSeq: undefined } })

/** Hub `h` (co-hub `g`, a 20 ms wait) that 12 nodes joined at 1 ms, their hellos applied: its next step begins the round. */
export function hubWithCoHubAndJoiners(): { h: PhoenixCore; joiners: string[] } {
  const h = new PhoenixCore({ id: 'h', addresses: ['addr:h'], hubs: ['addr:h', 'addr:g'], discovery: false, timing: { coHubWaitMs: 20 }, limits: { ecmpNextHopsMax: 1 } })
  h.step(0)
  h.connectionUp('g', 1, 'addr:g')
  const joiners = Array.from({ length: 12 }, (_, i) => `n${i}`)
  for (const n of joiners) h.connectionUp(n, 1)
  for (const n of ['g', ...joiners]) h.receive(n, helloWithRecord(n), 1)
  h.step(1)
  return { h, joiners }
}
