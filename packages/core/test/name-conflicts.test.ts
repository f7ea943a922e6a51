import { describe, expect, it } from 'vitest'
import { DEFAULT_TIMING, PhoenixCore } from '../src/index.ts'
import { twoClaimantsThroughHub } from './claimants.ts'
import { KeyRing } from './keyring.ts'

/**
 * `nameConflicts()` is a report: who holds a contested name, and who lost it. It must say the same
 * whichever way the loser lost (its record refused, or its contended claim yielded), and never
 * list the holder among the losers.
 */
describe('nameConflicts reports a lost claim at every node that saw it', () => {
  it('two nodes started with one name: once the loser yields, the winner and the hub still list it, as the loser does', () => {
    // Started together behind one hub, run for a second (claimants.ts): a holds w, b yielded it.
    const cores = twoClaimantsThroughHub()
    const core = (id: string) => cores.get(id)!
    const ids = ['h', 'a', 'b']
    for (const [id, c] of cores) expect(c.resolve('w')?.owner, id).toBe('a')
    // b's claim was stored everywhere (contended), then b yielded and its record dropped the name.
    expect(core('b').names).not.toContain('w')
    expect(core('h').route('b')?.names).toEqual([])
    // Before, only b listed it: a, which had raised the conflict, and h listed nothing once b yielded.
    for (const id of ids) expect(core(id).nameConflicts(), id).toEqual([{ name: 'w', holder: 'a', refused: ['b'] }])
  })

  it('a refused claimant whose claim is stored later (the holder gave the name up) is the holder, not listed as refused', () => {
    const ring = new KeyRing()
    const x = new PhoenixCore({ id: 'x', names: ['svc'], records: ring.authority('x') })
    ring.authority('m')
    x.connectionUp('h', 0)
    x.receive('h', { neighbourSlots: [], transSets: [], entries: [], hello: { receiverSeq: undefined } }, 0)
    const t = DEFAULT_TIMING.nameContentionMs + 1
    x.connectionUp('m', t)
    x.receive('m', { neighbourSlots: [], transSets: [], entries: [ring.record('m', 2, ['svc'])], hello: { receiverSeq: undefined } }, t)
    while (x.hasWork(t)) x.step(t)
    expect(x.nameConflicts()).toEqual([{ name: 'svc', holder: 'x', refused: ['m'] }])
    // x gives the name up; m's next record claiming it is stored: m holds it, and nothing is contested.
    x.removeName('svc')
    while (x.hasWork(t + 1)) x.step(t + 1)
    x.receive('m', { neighbourSlots: [], transSets: [], entries: [ring.record('m', 4, ['svc'])] }, t + 2)
    while (x.hasWork(t + 2)) x.step(t + 2)
    expect(x.resolve('svc')?.owner).toBe('m')
    // Before: [{ name: 'svc', holder: 'm', refused: ['m'] }], the holder listed as refused.
    expect(x.nameConflicts()).toEqual([])
    x.checkInvariants()
  })
})
