import { describe, expect, it } from 'vitest'
import { DEFAULT_TIMING, checkLoopFree, checkRoutesAgainstBfs } from '../src/index.ts'
import { TestNet, addressOf } from '../src/testing/index.ts'

/** Virtual time between two churn events: a worker goes (crash or leave) and a new one joins. */
const EVENT_EVERY_MS = 4_000
const EVENTS = 150

describe('unreachable entries under steady churn', () => {
  it('a dead destination is forgotten unreachableRetentionMs after its loss: nodes that joined later do not teach it back', () => {
    // An audit ran 40 minutes of workers crashing, leaving and joining: the unreachable entries
    // at every node grew linearly (355 at the end) and the names of crashed nodes stayed held,
    // because each node that learned a dead destination from a retraction kept it for a full
    // retention of its own and taught it back to those that had forgotten it.
    const net = new TestNet({ seed: 7 })
    const hubs = ['h0', 'h1']
    net.add({ id: 'h0', hubs: [] })
    net.add({ id: 'h1', hubs: [addressOf('h0')] })
    const live: string[] = []
    const lostAtMs = new Map<string, number>()
    let nowMs = 0
    let next = 0
    const join = () => {
      const id = `w${next++}`
      net.add({ id, names: [`job-${id}`], hubs: hubs.map(addressOf) })
      live.push(id)
    }
    for (let i = 0; i < 6; i++) join()
    net.runToQuiescence()
    let mostUnreachable = 0
    for (let event = 0; event < EVENTS; event++) {
      const gone = live.splice(event % live.length, 1)[0]!
      if (event % 2 === 0) net.crash(gone)
      else net.leave(gone)
      lostAtMs.set(gone, nowMs)
      join()
      net.runToQuiescence()
      net.advance(EVENT_EVERY_MS)
      nowMs += EVENT_EVERY_MS
      for (const core of net.cores.values()) mostUnreachable = Math.max(mostUnreachable, core.routes().filter((r) => !r.reachable).length)
    }
    // A node that saw the loss forgets it one retention after; one that joined later learned it
    // as hearsay (core README, "Unreachable entries") and forgets it one retention after it
    // learned it: so no node holds a destination lost more than two retentions (and an event) ago.
    const horizonMs = 2 * DEFAULT_TIMING.unreachableRetentionMs + EVENT_EVERY_MS
    const recent = [...lostAtMs.values()].filter((at) => nowMs - at <= horizonMs).length
    for (const [id, core] of net.cores) {
      const unreachable = core.routes().filter((r) => !r.reachable).map((r) => r.destination)
      const old = unreachable.filter((d) => nowMs - lostAtMs.get(d)! > horizonMs)
      expect(old, `${id} still holds destinations lost more than two retentions ago`).toEqual([])
      expect(unreachable.length).toBeLessThanOrEqual(recent)
    }
    // Their addresses go with them (a real node's book; a simulator's, on shared numberings, keeps
    // them): a job restarting workers on new ports filled the book with dead addresses.
    for (const [id, core] of net.cores) {
      const kept = [...lostAtMs].filter(([d, at]) => nowMs - at > horizonMs && core.dialBackoff(addressOf(d)) !== undefined).map(([d]) => d)
      expect(kept, `${id} still knows the addresses of destinations lost more than two retentions ago`).toEqual([])
    }
    // The hubs saw every loss: one retention.
    const oneRetention = [...lostAtMs.values()].filter((at) => nowMs - at <= DEFAULT_TIMING.unreachableRetentionMs + EVENT_EVERY_MS).length
    for (const hub of hubs) expect(net.cores.get(hub)!.routes().filter((r) => !r.reachable).length).toBeLessThanOrEqual(oneRetention)
    expect(mostUnreachable).toBeLessThanOrEqual(recent + 1)
    // And the living still route by shortest paths, without loops.
    const nodes = [...net.cores.keys()]
    expect(checkRoutesAgainstBfs(nodes, net.connectionEdges(), net.lookup)).toEqual([])
    expect(checkLoopFree(nodes, net.lookup)).toBeUndefined()
  })
})
