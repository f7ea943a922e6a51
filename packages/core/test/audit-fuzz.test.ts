import { expect, it } from 'vitest'
import { PhoenixCore, PhoenixError, type UpdateMessage, type RouteAdvert } from '../src/index.ts'
import { prng } from '../src/testing/index.ts'

// Audit: crafted updates into `receive` (slot tables naming ourselves, duplicates and free slots,
// entries for ourselves, hop counts 0 and 255 for others, sequence numbers at the wrap, hellos,
// lostNeighbours, planEnd and allServed in every combination, a core that is a hub with co-hubs
// or not, one or eight next hops), connections going up and down, time jumping past the
// retention. Every update is either taken or refused with a PhoenixError (the transport drops the
// sender), no step throws, and the core's invariants hold after every step. Seed 20 found the
// hub's served set kept past expiry (audit-served-stale.test.ts).
it('crafted updates are taken or refused, never break a step or an invariant', () => {
  const seeds = Number(process.env.PHOENIX_AUDIT_FUZZ_SEEDS ?? 300)
  console.log(`audit fuzz: seeds 1..${seeds} (PHOENIX_AUDIT_FUZZ_SEEDS)`)
  let accepted = 0, refused = 0
  for (let seed = 1; seed <= seeds; seed++) {
    const r = prng(seed)
    const pick = <T,>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!
    const ids = ['V', 'A', 'B', 'C', 'D', 'E', '', 'addr:V']
    const hub = r() < 0.5
    const V = new PhoenixCore({ id: 'V', addresses: ['addr:V'], hubs: hub ? ['addr:V', 'addr:A'] : ['addr:A'], names: ['n'], timing: { coHubWaitMs: hub ? 100 : 0 }, limits: { ecmpNextHopsMax: pick([1, 8]) } })
    let now = 0
    for (const p of ['A', 'B', 'C']) V.connectionUp(p, now, p === 'A' ? 'addr:A' : undefined)
    const seqs = [0, 1, 2, 3, 4, 2 ** 32 - 2, 2 ** 32 - 1, 2 ** 31, 2 ** 31 + 1, 2 ** 31 - 2]
    for (let k = 0; k < 200; k++) {
      const from = pick(['A', 'B', 'C'])
      const slots = Array.from({ length: Math.floor(r() * 6) }, () => pick(ids))
      const transSets = Array.from({ length: Math.floor(r() * 3) }, () => Uint8Array.of(Math.floor(r() * 256)).subarray(0, slots.length > 0 ? 1 : 0))
      const entries: RouteAdvert[] = Array.from({ length: Math.floor(r() * 5) }, () => ({ destination: pick(['V', 'A', 'B', 'C', 'D', 'E', from]), seq: pick(seqs), nhops: pick([0, 1, 2, 255]), names: pick([[], ['n'], ['m'], ['n', 'm']]), addresses: pick([[], ['addr:D'], ['addr:V']]), trans: Math.floor(r() * (transSets.length + 1)) - 1 }))
      const msg: UpdateMessage = { neighbourSlots: slots, transSets, entries, ...(r() < 0.2 ? { hello: { receiverSeq: pick([undefined, ...seqs]) } } : {}), ...(r() < 0.2 ? { lostNeighbours: [pick(['A', 'B', 'C', 'D', 'V'])] } : {}), ...(r() < 0.2 ? { planEnd: true as const } : {}), ...(r() < 0.2 ? { allServed: true as const } : {}) }
      now += Math.floor(r() * 3000)
      if (!V.isNeighbour(from)) V.connectionUp(from, now)
      try { V.receive(from, msg, now); accepted++ } catch (e) { if (!(e instanceof PhoenixError)) throw e; refused++ }
      if (r() < 0.1) V.connectionDown(pick(['A', 'B', 'C']), now)
      if (r() < 0.1) V.connectionUp(pick(['A', 'B', 'C', 'D']), now)
      try {
        while (V.hasWork(now)) V.step(now)
        V.checkInvariants()
      } catch (e) {
        throw new Error(`seed ${seed}, update ${k} from ${from}: ${JSON.stringify(msg, (_, v) => (v instanceof Uint8Array ? [...v] : v))}: ${String(e)}`)
      }
    }
  }
  expect(accepted).toBeGreaterThan(refused)
})
