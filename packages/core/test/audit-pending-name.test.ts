import { describe, expect, it } from 'vitest'
import { DEFAULT_TIMING } from '../src/index.ts'
import { KeyRing } from './keyring.ts'
import { Wires } from './wires.ts'

// Audit finding: a name claimed at start-up was *pending* until the first update the node applied,
// and any claim of it in that update won (names.ts `check`: `ours && this.pending.has(name)` ->
// yield). The rule trusted whichever neighbour's update was applied first to speak for the network.
// A member that connects to a (re)starting node before its hub does (it knows the node's address
// from before, and dials it until it answers) sends its own validly signed record claiming the
// node's names: the node yields them, relays the member's claim, and the member holds the names
// everywhere, although the rest of the network held the node's claim for minutes and although the
// member's id sorts after the node's (so the contention rule would not have given it the name
// either). A held name stolen by one member, for good: the victim waits for the member's claim to
// be forgotten, which never happens while the member stays. Now a node given hubs takes only an
// update of one of its hubs to settle its pending names; a member's claim of one is refused.

const HUB = 'addr:H'

/** H a hub at HUB, every other node given it as its hub; `toHub` opens a node's connection to it. */
function hubWorld() {
  const ring = new KeyRing()
  const wires = new Wires()
  const config = (id: string, names: string[] = []) => ({ id, records: ring.authority(id), names, ...(id === 'H' ? { addresses: [HUB] } : { hubs: [HUB] }) })
  const toHub = (id: string) => {
    wires.cores.get(id)!.connectionUp('H', wires.nowMs, HUB)
    wires.cores.get('H')!.connectionUp(id, wires.nowMs)
  }
  return { ring, wires, config, toHub }
}

describe('audit: a member speaks first to a starting node', () => {
  it("a restarting node keeps the name the network holds for it, whatever a member's first update claims", () => {
    const { ring, wires, config, toHub } = hubWorld()
    wires.add(config('H'))
    wires.add(config('A'))
    wires.add(config('N', ['leader']))
    toHub('A')
    toHub('N')
    wires.run()
    wires.advance(DEFAULT_TIMING.nameContentionMs * 3)
    for (const id of ['H', 'A']) expect(wires.cores.get(id)!.resolve('leader')?.owner, id).toBe('N')

    // N crashes and restarts with its key; its name is held for it everywhere meanwhile.
    wires.cut('H', 'N', 'crash')
    wires.cores.delete('N')
    wires.advance(1_000)
    for (const id of ['H', 'A']) expect(wires.cores.get(id)!.resolve('leader'), id).toBeUndefined()
    const N = wires.add(config('N', ['leader']))
    // Member z-M (its id sorts after N's) dials N's known address first and speaks first: its own
    // record, validly signed, claiming N's name.
    ring.authority('z-M')
    N.connectionUp('z-M', wires.nowMs)
    wires.deliver('z-M', 'N', { neighbourSlots: [], transSets: [], entries: [ring.record('z-M', 2, ['leader'])], hello: { receiverSeq: undefined } })
    wires.run()
    // Then N reaches its hub.
    toHub('N')
    wires.run()
    wires.advance(DEFAULT_TIMING.nameContentionMs * 3)

    expect(N.names).toContain('leader')
    expect(N.nameConflicts()).toContainEqual({ name: 'leader', holder: 'N', refused: ['z-M'] })
    for (const id of ['H', 'A', 'N']) expect(wires.cores.get(id)!.resolve('leader')?.owner, id).toBe('N')
  })

  it("a restarting node still yields, at its hub's word, a name the network gave away meanwhile, whatever a member said first", () => {
    const { ring, wires, config, toHub } = hubWorld()
    for (const id of ['H', 'A']) wires.add(config(id))
    wires.add(config('N', ['leader']))
    toHub('A')
    toHub('N')
    wires.run()
    // N crashes and is forgotten; P takes the name.
    wires.cut('H', 'N', 'crash')
    wires.cores.delete('N')
    for (let i = 0; i < 3; i++) wires.advance(DEFAULT_TIMING.unreachableRetentionMs)
    wires.add(config('P', ['leader']))
    toHub('P')
    wires.run()
    wires.advance(DEFAULT_TIMING.nameContentionMs * 3)
    for (const id of ['H', 'A', 'P']) expect(wires.cores.get(id)!.resolve('leader')?.owner, id).toBe('P')

    // N restarts with its name; a member speaks first, claiming it (refused), then N reaches its hub.
    const N = wires.add(config('N', ['leader']))
    ring.authority('z-M')
    N.connectionUp('z-M', wires.nowMs)
    wires.deliver('z-M', 'N', { neighbourSlots: [], transSets: [], entries: [ring.record('z-M', 2, ['leader'])], hello: { receiverSeq: undefined } })
    wires.run()
    expect(N.names).toContain('leader') // pending still: a member does not speak for the network
    toHub('N')
    wires.run()
    wires.advance(DEFAULT_TIMING.nameContentionMs * 3)
    expect(N.names).not.toContain('leader')
    for (const id of ['H', 'A', 'P', 'N']) {
      expect(wires.cores.get(id)!.resolve('leader')?.owner, id).toBe('P')
      if (id !== 'N') expect(wires.cores.get(id)!.route('N')?.reachable, `${id} routes N`).toBe(true)
    }
  })
})
