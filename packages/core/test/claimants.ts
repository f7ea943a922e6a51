import { PhoenixCore, type UpdateMessage } from '../src/index.ts'
import { KeyRing } from './keyring.ts'

/**
 * Two nodes, `a` and `b`, started together with the name `w` behind one hub `h`, run for a second
 * in synchronous rounds: the cores step, then everything sent is delivered, 50 ms apart. In the
 * first round only a and b step, so the hub hears both claimants before it sends: each one's first
 * update from it holds the other's claim. Returns the cores after the last round.
 */
export function twoClaimantsThroughHub(): Map<string, PhoenixCore> {
  const ring = new KeyRing()
  const cores = new Map(['h', 'a', 'b'].map((id) => [id, new PhoenixCore({ id, names: id === 'h' ? [] : ['w'], records: ring.authority(id) })]))
  const core = (id: string) => cores.get(id)!
  let nowMs = 0
  for (const id of ['a', 'b']) {
    core(id).connectionUp('h', nowMs)
    core('h').connectionUp(id, nowMs)
  }
  const round = (ids: readonly string[]) => {
    const sent: [string, string, UpdateMessage][] = []
    for (const id of ids) while (core(id).hasWork(nowMs)) for (const e of core(id).step(nowMs).effects) if (e.type === 'send') sent.push([id, e.to, e.message])
    for (const [from, to, message] of sent) core(to).receive(from, message, nowMs)
    nowMs += 50
  }
  round(['a', 'b'])
  while (nowMs < 1_000) round(['h', 'a', 'b'])
  return cores
}
