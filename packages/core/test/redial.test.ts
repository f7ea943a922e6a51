import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { DEFAULT_LIMITS, DEFAULT_TIMING, PhoenixCore, type RouteAdvert } from '../src/index.ts'

// The seed is fast-check's global one (vitest.setup.ts prints it; replay with PHOENIX_SEED=<n>).
const runs = (numRuns: number) => ({ numRuns, verbose: true })

const HUB = '/ip4/10.0.0.1/tcp/4001/p2p/hub'
const addressOf = (id: string) => `/ip4/10.0.1.${id.length}/tcp/4001/p2p/${id}`
const advert = (destination: string, seq: number, nhops: number): RouteAdvert => ({ destination, seq, nhops, names: [], addresses: [addressOf(destination)], trans: -1 })

/** What a dial at `address` does at `nowMs`: connect to that peer, or fail. */
type Answer = (address: string, nowMs: number) => string | 'fail'

/**
 * Drives `core` from `fromMs` to `toMs` as a transport would: step whenever it has work, sleep
 * until its next wake otherwise; every dial is answered at once by `answer`. Returns each dial
 * started, with its time.
 */
function drive(core: PhoenixCore, fromMs: number, toMs: number, answer: Answer): { atMs: number; address: string }[] {
  const dials: { atMs: number; address: string }[] = []
  let now = fromMs
  for (let guard = 0; guard < 1_000_000; guard++) {
    while (core.hasWork(now)) {
      for (const effect of core.step(now).effects) {
        if (effect.type !== 'dial') continue
        dials.push({ atMs: now, address: effect.address })
        const outcome = answer(effect.address, now)
        if (outcome === 'fail') core.dialFailed(effect.address, now)
        else core.connectionUp(outcome, now, effect.address)
      }
    }
    core.checkInvariants()
    const wake = core.nextWakeMs(now)
    if (wake === undefined || wake > toMs) return dials
    now = Math.max(now, wake)
  }
  throw new Error('drive did not settle')
}

/** A node connected to the hub (through a dial of its address) and to `others` (they dialled it). */
function connectedNode(others: string[], discovery = true): PhoenixCore {
  const core = new PhoenixCore({ id: 'me', addresses: [addressOf('me')], hubs: [HUB], discovery })
  drive(core, 0, 0, () => 'hub')
  for (const other of others) core.connectionUp(other, 0)
  drive(core, 0, 0, () => 'fail')
  expect(core.neighbourIds().sort()).toEqual(['hub', ...others].sort())
  return core
}

describe('re-dial: hubs and lost neighbours are dialled again until they answer', () => {
  it('a hub whose connection goes down is dialled again at once, although the node has other neighbours', () => {
    const core = connectedNode(['n1', 'n2'])
    core.connectionDown('hub', 1_000)
    const dials = drive(core, 1_000, 1_000, () => 'hub')
    expect(dials).toContainEqual({ atMs: 1_000, address: HUB })
    expect(core.isNeighbour('hub')).toBe(true)
  })

  it('property: however long a hub is down, it is dialled within redialBackoffMaxMs of its return', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3_600_000 }), fc.integer({ min: 0, max: 5 }), (downForMs, otherNeighbours) => {
        const core = connectedNode(Array.from({ length: otherNeighbours }, (_, i) => `n${i}`))
        core.connectionDown('hub', 1_000)
        const backAtMs = 1_000 + downForMs
        const dials = drive(core, 1_000, backAtMs + 60_000, (address, now) => (address === HUB && now >= backAtMs ? 'hub' : 'fail'))
        const hubDials = dials.filter((d) => d.address === HUB)
        const reached = hubDials.find((d) => d.atMs >= backAtMs)
        expect(reached, `hub back at ${backAtMs} ms`).toBeDefined()
        expect(reached!.atMs - backAtMs).toBeLessThanOrEqual(DEFAULT_TIMING.redialBackoffMaxMs)
        // Never a flood: consecutive dials of the hub are at least dialBackoffInitialMs apart (after the first).
        for (let i = 2; i < hubDials.length; i++) expect(hubDials[i]!.atMs - hubDials[i - 1]!.atMs).toBeGreaterThanOrEqual(DEFAULT_TIMING.dialBackoffInitialMs)
        expect(core.isNeighbour('hub')).toBe(true)
      }),
      runs(200),
    )
  })

  it('a hub never reached is retried within redialBackoffMaxMs forever, not at the 60 s cap of discovered addresses', () => {
    const core = new PhoenixCore({ id: 'me', hubs: [HUB] })
    const dials = drive(core, 0, 600_000, () => 'fail')
    const gaps = dials.slice(1).map((d, i) => d.atMs - dials[i]!.atMs)
    expect(Math.max(...gaps)).toBe(DEFAULT_TIMING.redialBackoffMaxMs)
    expect(dials.length).toBeGreaterThan(600_000 / DEFAULT_TIMING.redialBackoffMaxMs - 5)
  })

  it('addHub of a known hub dials it now, its back-off cleared', () => {
    const core = new PhoenixCore({ id: 'me', hubs: [HUB] })
    drive(core, 0, 20_000, () => 'fail')
    const backoff = core.dialBackoff(HUB)!
    expect(backoff.retryAtMs).toBeGreaterThan(20_000)
    core.addHub(HUB)
    const dials = drive(core, 20_001, 20_001, () => 'hub')
    expect(dials).toEqual([{ atMs: 20_001, address: HUB }])
    expect(core.isNeighbour('hub')).toBe(true)
    // Connected: adding it again dials nothing.
    core.addHub(HUB)
    expect(drive(core, 20_002, 20_002, () => 'hub')).toEqual([])
  })

  it('addHub of an address learned from an update and backed off (a discovered address the host would not dial) dials it now', () => {
    // A restarted node hears of a gateway from a neighbour before it is told the gateway is its
    // hub (issue 19: the 45-process kill-half run): the discovered address failed (its class
    // unreachable from here) and backed off, doubling to dialBackoffMaxMs. Made a hub, it is
    // dialled at once, not when that back-off ends (that was up to 60 s: recovery's long tail).
    const core = connectedNode(['n1'])
    core.receive('n1', { neighbourSlots: [], transSets: [], entries: [advert('gw', 2, 1)] }, 10)
    const gw = addressOf('gw')
    drive(core, 10, 40_000, () => 'fail')
    expect(core.dialBackoff(gw)!.retryAtMs).toBeGreaterThan(40_001 + DEFAULT_TIMING.redialBackoffMaxMs)
    core.addHub(gw)
    const dials = drive(core, 40_001, 40_001, (address) => (address === gw ? 'gw' : 'fail'))
    expect(dials).toContainEqual({ atMs: 40_001, address: gw })
    expect(core.isNeighbour('gw')).toBe(true)
  })

  it('a lost neighbour is dialled again while it is remembered, then left alone', () => {
    const core = connectedNode(['n1'])
    // n1's record, with its address, arrives through the hub.
    core.receive('hub', { neighbourSlots: [], transSets: [], entries: [advert('n1', 2, 1)] }, 10)
    drive(core, 10, 10, () => 'fail')
    // Down after 2 s (a connection that lived: one that goes down within a second is a flap, backed off).
    core.connectionDown('n1', 2_000)
    const dials = drive(core, 2_000, 2_000 + DEFAULT_TIMING.unreachableRetentionMs + 120_000, () => 'fail').filter((d) => d.address === addressOf('n1'))
    expect(dials[0]).toEqual({ atMs: 2_000, address: addressOf('n1') })
    const retention = 2_000 + DEFAULT_TIMING.unreachableRetentionMs
    const whileRemembered = dials.filter((d) => d.atMs <= retention)
    for (let i = 1; i < whileRemembered.length; i++) expect(whileRemembered[i]!.atMs - whileRemembered[i - 1]!.atMs).toBeLessThanOrEqual(DEFAULT_TIMING.redialBackoffMaxMs)
    // Forgotten: its address falls back to the ordinary back-off (toward dialBackoffMaxMs), not every 4 s.
    const after = dials.filter((d) => d.atMs > retention + 1_000)
    expect(after.length).toBeLessThanOrEqual(4)
  })

  it('a lost neighbour that comes back is reached again', () => {
    const core = connectedNode(['n1'])
    core.receive('hub', { neighbourSlots: [], transSets: [], entries: [advert('n1', 2, 1)] }, 10)
    drive(core, 10, 10, () => 'fail')
    core.connectionDown('n1', 100)
    drive(core, 100, 30_000, (address, now) => (address === addressOf('n1') && now >= 25_000 ? 'n1' : 'fail'))
    expect(core.isNeighbour('n1')).toBe(true)
  })

  it('property: losing many neighbours at once re-dials them at most lostRedialsPerSecondMax a second, every one within a bounded time', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 0, max: 999 }), (lost, atMs) => {
        const ids = Array.from({ length: lost }, (_, i) => `peer-${i}`)
        const core = connectedNode(ids)
        core.receive('hub', { neighbourSlots: [], transSets: [], entries: ids.map((id) => advert(id, 2, 1)) }, 10)
        drive(core, 10, 10, () => 'fail')
        for (const id of ids) core.connectionDown(id, atMs + 10)
        const dials = drive(core, atMs + 10, atMs + 60_000, () => 'fail').filter((d) => d.address !== HUB)
        // Bounded rate: no one-second window holds more than lostRedialsPerSecondMax re-dials.
        for (const d of dials) {
          const inWindow = dials.filter((e) => e.atMs >= d.atMs && e.atMs < d.atMs + 1_000).length
          expect(inWindow).toBeLessThanOrEqual(DEFAULT_LIMITS.lostRedialsPerSecondMax)
        }
        // Every lost neighbour gets its first re-dial within lost / rate seconds (+1).
        const first = new Map<string, number>()
        for (const d of dials) if (!first.has(d.address)) first.set(d.address, d.atMs)
        expect(first.size).toBe(lost)
        for (const t of first.values()) expect(t - (atMs + 10)).toBeLessThanOrEqual(1_000 * Math.ceil(lost / DEFAULT_LIMITS.lostRedialsPerSecondMax))
      }),
      runs(40),
    )
  })

  it('with discovery off only hubs are re-dialled (a lost neighbour that is not a configured connection is not)', () => {
    const core = connectedNode(['n1'], false)
    core.receive('hub', { neighbourSlots: [], transSets: [], entries: [advert('n1', 2, 1)] }, 10)
    drive(core, 10, 10, () => 'fail')
    core.connectionDown('n1', 100)
    core.connectionDown('hub', 100)
    const dials = drive(core, 100, 30_000, () => 'fail')
    expect(new Set(dials.map((d) => d.address))).toEqual(new Set([HUB]))
  })

  it('lostRedialsPerSecondMax 0 turns re-dials of lost neighbours off (hubs are still re-dialled)', () => {
    const core = new PhoenixCore({ id: 'me', addresses: [addressOf('me')], hubs: [HUB], limits: { lostRedialsPerSecondMax: 0 } })
    drive(core, 0, 0, () => 'hub')
    core.connectionUp('n1', 0)
    core.receive('hub', { neighbourSlots: [], transSets: [], entries: [advert('n1', 2, 1)] }, 10)
    drive(core, 10, 10, () => 'fail')
    core.connectionDown('n1', 100)
    core.connectionDown('hub', 100)
    const dials = drive(core, 100, 30_000, () => 'fail')
    expect(new Set(dials.map((d) => d.address))).toEqual(new Set([HUB]))
  })
})

describe('flaps: a neighbour that closes each connection soon after it opens is re-dialled with a growing back-off', () => {
  // The CLI audit: one node run with --no-sign among signing ones. The hub dropped it at its first
  // record (~10 ms after the connection opened) and it dialled the hub again at once: ~100
  // connections a second and 80 error lines a second in the hub's log, for as long as both ran.
  /** Drives `core` until `toMs`; each dial of `peer`'s address connects and is closed `closeAfterMs` later. */
  function flapping(core: PhoenixCore, address: string, peer: string, fromMs: number, toMs: number, closeAfterMs: (dial: number) => number): number[] {
    const dialTimes: number[] = []
    let now = fromMs
    while (now <= toMs) {
      const dials = drive(core, now, toMs, (a) => (a === address ? peer : 'fail')).filter((d) => d.address === address)
      if (dials.length === 0) break
      const at = dials[0]!.atMs
      dialTimes.push(at)
      now = at + closeAfterMs(dialTimes.length)
      core.connectionDown(peer, now)
    }
    return dialTimes
  }

  it('a hub that drops us 10 ms after each connection is dialled 1, 2, 4, 4, ... s apart, not at once', () => {
    const core = connectedNode([])
    core.connectionDown('hub', 5_000) // a connection that lived: dialled again at once
    const dials = flapping(core, HUB, 'hub', 5_000, 65_000, () => 10)
    expect(dials[0]).toBe(5_000)
    const gaps = dials.slice(1).map((at, i) => at - dials[i]! - 10)
    expect(gaps.slice(0, 4)).toEqual([1_000, 2_000, 4_000, 4_000].map((ms) => Math.min(ms, DEFAULT_TIMING.redialBackoffMaxMs)))
    expect(Math.max(...gaps)).toBe(DEFAULT_TIMING.redialBackoffMaxMs)
    expect(dials.length).toBeLessThan(60_000 / DEFAULT_TIMING.redialBackoffMaxMs + 4)
  })

  it('one connection that lives a second clears the count: the next loss is re-dialled at once', () => {
    const core = connectedNode([])
    core.connectionDown('hub', 5_000)
    // Five flaps, then a connection that stays up for 1 s (connectionStableMs), then one more flap.
    const dials = flapping(core, HUB, 'hub', 5_000, 60_000, (n) => (n === 6 ? 1_000 : n <= 7 ? 10 : 60_000))
    const gaps = dials.slice(1).map((at, i) => at - dials[i]!)
    expect(gaps[4]).toBe(DEFAULT_TIMING.redialBackoffMaxMs + 10)
    expect(gaps[5]).toBe(1_000) // lived 1 s: dialled again at once
    expect(gaps[6]).toBe(10 + DEFAULT_TIMING.dialBackoffInitialMs) // the count started afresh
  })

  it('a lost neighbour (not a hub) that flaps is backed off too, and a stable one is dialled at once', () => {
    const core = connectedNode([])
    core.receive('hub', { neighbourSlots: [], transSets: [], entries: [advert('n1', 2, 1)] }, 10)
    const n1 = addressOf('n1')
    const first = drive(core, 10, 10, (a) => (a === n1 ? 'n1' : 'fail')).filter((d) => d.address === n1)
    expect(first).toHaveLength(1)
    core.connectionDown('n1', 20)
    const dials = flapping(core, n1, 'n1', 20, 20_000, () => 10)
    expect(dials[0]).toBe(20 + DEFAULT_TIMING.dialBackoffInitialMs)
    expect(dials.length).toBeLessThan(20_000 / DEFAULT_TIMING.redialBackoffMaxMs + 4)
    core.connectionDown('hub', 30_000) // lived 30 s
    expect(drive(core, 30_000, 30_000, () => 'hub')).toContainEqual({ atMs: 30_000, address: HUB })
  })
})

describe('dialDeferMs: the larger id of a pair holds its dial back, and holds no dial slot meanwhile', () => {
  /** Steps `core` at `nowMs` until it has no work; the dials it asks for, left in flight (unanswered). */
  const dialsAt = (core: PhoenixCore, nowMs: number): string[] => {
    const dials: string[] = []
    while (core.hasWork(nowMs)) for (const effect of core.step(nowMs).effects) if (effect.type === 'dial') dials.push(effect.address)
    core.checkInvariants()
    return dials
  }

  it('dials the larger peers at once with every slot, the smaller ones after dialDeferMs and only those that did not connect', () => {
    // Two dial slots; three peers with smaller ids than 'm' and three with larger ones, learned at once.
    const core = new PhoenixCore({ id: 'm', addresses: [addressOf('m')], hubs: [HUB], timing: { dialDeferMs: 3_000 }, limits: { dialsInFlightMax: 2 } })
    drive(core, 0, 0, () => 'hub')
    const [smaller, larger] = [['a', 'b', 'c'], ['x', 'y', 'z']]
    core.receive('hub', { neighbourSlots: [], transSets: [], entries: [...smaller, ...larger].map((id) => advert(id, 2, 1)) }, 10)
    // Held back, the smaller three take no slot: both go to larger peers.
    expect(dialsAt(core, 10)).toEqual(['x', 'y'].map(addressOf))
    expect(core.stats().dialsDeferred).toBe(3)
    core.connectionUp('x', 20, addressOf('x'))
    expect(dialsAt(core, 20)).toEqual([addressOf('z')])
    // a and b dial us, as they learned us too; c does not (a firewall in front of it, say).
    core.connectionUp('a', 30)
    core.connectionUp('b', 40)
    core.connectionUp('y', 50, addressOf('y'))
    core.connectionUp('z', 60, addressOf('z'))
    expect(dialsAt(core, 2_999)).toEqual([])
    // dialDeferMs after it was learned: only c, which never came, is dialled.
    expect(core.nextWakeMs(2_999)).toBe(3_010)
    expect(dialsAt(core, 3_010)).toEqual([addressOf('c')])
  })

  it('0 (the default) dials every peer at once, whatever the ids', () => {
    const core = new PhoenixCore({ id: 'm', addresses: [addressOf('m')], hubs: [HUB] })
    drive(core, 0, 0, () => 'hub')
    core.receive('hub', { neighbourSlots: [], transSets: [], entries: ['a', 'z'].map((id) => advert(id, 2, 1)) }, 10)
    expect(dialsAt(core, 10).sort()).toEqual(['a', 'z'].map(addressOf))
    expect(core.stats().dialsDeferred).toBe(0)
  })
})
