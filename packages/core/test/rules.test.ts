import { describe, expect, it } from 'vitest'
import { NeighbourTable } from '../src/neighbours.ts'
import { NodeIndex } from '../src/nodeindex.ts'
import { sendSelfCheck } from '../src/send.ts'
import { DEFAULT_TIMING, PhoenixCore, PhoenixError, REFUSED_CHARACTERS_RULE, isFresher, nameProblem, nextOwnSeq, quoteEscaped, seqNewer, type CoreConfig, type Effect, type RouteAdvert, type UpdateMessage } from '../src/index.ts'

const advert = (destination: string, seq: number, nhops: number, extra: Partial<RouteAdvert> = {}): RouteAdvert => ({
  destination,
  seq,
  nhops,
  names: [],
  addresses: [],
  trans: -1,
  ...extra,
})
const update = (entries: RouteAdvert[], neighbourSlots: string[] = [], transSets: Uint8Array[] = []): UpdateMessage => ({ neighbourSlots, transSets, entries })

/** Runs steps until idle and returns every effect, in order. */
function drain(core: PhoenixCore, nowMs = 0): Effect[] {
  const effects: Effect[] = []
  for (let i = 0; i < 100 && core.hasWork(nowMs); i++) effects.push(...core.step(nowMs).effects)
  return effects
}
const sentTo = (effects: Effect[]) => {
  const out = new Map<string, RouteAdvert[]>()
  for (const e of effects) if (e.type === 'send') out.set(e.to, [...(out.get(e.to) ?? []), ...e.message.entries])
  return out
}

/** The first update a neighbour sends on a connection: its hello (here: it holds no record of the receiver). */
const hello = (receiverSeq?: number): UpdateMessage => ({ neighbourSlots: [], transSets: [], entries: [], hello: { receiverSeq } })

function coreWithNeighbours(id: string, neighbours: string[], mode: 'optimized' | 'naive' = 'optimized', discovery = true): PhoenixCore {
  const core = new PhoenixCore({ id, addresses: [`addr:${id}`], mode, discovery })
  for (const n of neighbours) core.connectionUp(n, 0)
  if (mode === 'optimized') for (const n of neighbours) core.receive(n, hello(), 0)
  drain(core)
  return core
}

/** Delivers every update the cores send each other until none is left (FIFO per pair). */
function exchange(cores: PhoenixCore[], nowMs = 0): void {
  const byId = new Map(cores.map((c) => [c.id, c]))
  for (let round = 0; round < 100; round++) {
    let moved = false
    for (const core of cores) {
      for (const effect of drain(core, nowMs)) {
        if (effect.type !== 'send') continue
        byId.get(effect.to)?.receive(core.id, effect.message, nowMs)
        moved = true
      }
    }
    if (!moved) return
  }
  throw new Error('cores kept exchanging updates for 100 rounds')
}

describe('sequence numbers', () => {
  it('compares modulo 2^32 so a wrapped number is still newer', () => {
    expect(seqNewer(4, 2)).toBe(true)
    expect(seqNewer(2, 4)).toBe(false)
    expect(seqNewer(2, 2)).toBe(false)
    expect(seqNewer(0, 2 ** 32 - 2)).toBe(true)
    expect(seqNewer(2 ** 32 - 2, 0)).toBe(false)
  })
  it('a destination issues only even numbers', () => {
    expect(nextOwnSeq(4)).toBe(6)
    expect(nextOwnSeq(5)).toBe(6)
    expect(nextOwnSeq(2 ** 32 - 2)).toBe(0)
  })
  it('fresher seq wins whatever the hops; equal seq needs fewer hops', () => {
    expect(isFresher(6, 9, 4, 1)).toBe(true)
    expect(isFresher(4, 1, 4, 2)).toBe(true)
    expect(isFresher(4, 2, 4, 2)).toBe(false)
    expect(isFresher(2, 1, 4, 9)).toBe(false)
  })
})

describe('receiving entries', () => {
  it('adopts a fresher entry and routes through its sender', () => {
    const core = coreWithNeighbours('u', ['a', 'b'])
    core.receive('a', update([advert('v', 4, 3)]), 0)
    drain(core)
    expect(core.route('v')).toMatchObject({ fwd: 'a', nhops: 4, seq: 4, reachable: true })
    core.receive('b', update([advert('v', 4, 1)]), 0)
    drain(core)
    expect(core.route('v')).toMatchObject({ fwd: 'b', nhops: 2 })
    core.receive('a', update([advert('v', 6, 5)]), 0)
    drain(core)
    expect(core.route('v')).toMatchObject({ fwd: 'a', nhops: 6, seq: 6 })
  })

  it('ignores an older or longer entry', () => {
    const core = coreWithNeighbours('u', ['a', 'b'])
    core.receive('a', update([advert('v', 6, 1)]), 0)
    core.receive('b', update([advert('v', 4, 1)]), 0)
    core.receive('b', update([advert('v', 6, 3)]), 0)
    drain(core)
    expect(core.route('v')).toMatchObject({ fwd: 'a', nhops: 2, seq: 6 })
  })

  it('a lost neighbour makes every route through it unreachable with the next odd seq, and says so', () => {
    const core = coreWithNeighbours('u', ['a', 'b'])
    core.receive('a', update([advert('a', 2, 0), advert('v', 4, 1)]), 0)
    core.receive('b', update([advert('w', 8, 1)]), 0)
    drain(core)
    core.connectionDown('a', 1)
    expect(core.route('v')).toMatchObject({ reachable: false, seq: 5, fwd: undefined })
    expect(core.route('a')).toMatchObject({ reachable: false, seq: 3 })
    expect(core.route('w')).toMatchObject({ reachable: true, seq: 8 })
    const toB = sentTo(drain(core, 1)).get('b') ?? []
    expect(toB.map((e) => [e.destination, e.seq])).toEqual(expect.arrayContaining([['v', 5], ['a', 3]]))
  })

  it('an unreachable route is replaced only by a newer sequence number', () => {
    const core = coreWithNeighbours('u', ['a', 'b'])
    core.receive('a', update([advert('v', 4, 1)]), 0)
    drain(core)
    core.connectionDown('a', 1)
    core.receive('b', update([advert('v', 4, 1)]), 1)
    drain(core, 1)
    expect(core.route('v')?.reachable).toBe(false)
    core.receive('b', update([advert('v', 6, 2)]), 1)
    drain(core, 1)
    expect(core.route('v')).toMatchObject({ reachable: true, fwd: 'b', seq: 6, nhops: 3 })
  })

  it('a node that hears its own record with a newer seq (a restart, or a lost route) issues a newer even seq', () => {
    const core = coreWithNeighbours('u', ['a'])
    expect(core.ownSeq).toBe(0)
    core.receive('a', update([advert('u', 7, 0)]), 0)
    const effects = drain(core)
    expect(core.ownSeq).toBe(8)
    expect(sentTo(effects).get('a')?.find((e) => e.destination === 'u')).toMatchObject({ seq: 8, nhops: 0 })
  })

  it('an echo of its own current record changes nothing', () => {
    const core = coreWithNeighbours('u', ['a'])
    core.receive('a', update([advert('u', 0, 1)]), 0)
    drain(core)
    expect(core.ownSeq).toBe(0)
  })

  it('rejects a malformed update as a whole, naming the problem', () => {
    const core = coreWithNeighbours('u', ['a'])
    const bad = [
      update([advert('v', -1, 0)]),
      update([advert('v', 2 ** 32, 0)]),
      update([advert('v', 2, 1.5)]),
      update([advert('v', 2, 0, { trans: 0 })]),
      update([advert('', 2, 0)]),
      update([advert('v', 2, 0, { names: ['x', 'x'] })]),
      update([advert('v', 2, 0, { addresses: Array.from({ length: 17 }, (_, i) => `a${i}`) })]),
    ]
    for (const message of bad) {
      expect(() => core.receive('a', message, 0)).toThrow(PhoenixError)
    }
    expect(core.inboxLength).toBe(0)
    expect(() => core.receive('stranger', update([]), 0)).toThrow(/not a neighbour/)
  })

  it('refuses a config key, limit or timing it does not take, naming it and the nearest it may mean', () => {
    const config = (extra: object) => () => new PhoenixCore({ id: 'u', ...extra } as CoreConfig)
    expect(config({ hub: [] })).toThrow('config.hub is not an option (did you mean config.hubs?)')
    expect(config({ timing: { coHubWaitMS: 5 } })).toThrow('timing.coHubWaitMS is not an option (did you mean timing.coHubWaitMs?)')
    expect(config({ limits: { destinationMax: 5 } })).toThrow('limits.destinationMax is not an option (did you mean limits.destinationsMax?)')
    expect(config({ limits: { zzz: 5 } })).toThrow(/^limits\.zzz is not an option; limits takes destinationsMax, /)
    expect(config({ hubs: [], names: [], mode: 'naive', discovery: false, initialSeq: 2, limits: {}, timing: {}, addresses: [] })).not.toThrow()
  })

  it('refuses a limit at 0 that leaves a node unable to route, naming it; takes 0 where it means something', () => {
    const config = (extra: object) => () => new PhoenixCore({ id: 'u', ...extra } as CoreConfig)
    // A node that may not dial, hold a neighbour or fit an entry in an update was taken, and sat there.
    expect(config({ limits: { dialsInFlightMax: 0 } })).toThrow('limits.dialsInFlightMax must be a positive integer, got 0')
    expect(config({ limits: { neighboursMax: 0 } })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', message: 'limits.neighboursMax must be a positive integer, got 0' }))
    expect(config({ limits: { entriesPerMessageMax: 0 } })).toThrow(/^limits\.entriesPerMessageMax /)
    expect(config({ timing: { dialBackoffInitialMs: 0 } })).toThrow('timing.dialBackoffInitialMs must be a positive integer, got 0')
    expect(config({ timing: { coHubWaitMs: -1 } })).toThrow('timing.coHubWaitMs must be a non-negative integer, got -1')
    expect(config({ limits: { hopLimit: '16' } })).toThrow('limits.hopLimit must be a positive integer, got "16"')
    expect(config({ limits: { namesPerNodeMax: 0, nameRefusalsMax: 0, signatureBytesMax: 0, lostRedialsPerSecondMax: 0 }, timing: { sendHoldForDialsMs: 0, unreachableRetentionMs: 0 } })).not.toThrow()
  })

  it('refuses control characters in names, addresses and ids, ours or received: they reach operators\' terminals', () => {
    const core = coreWithNeighbours('u', ['a'])
    const escape = '\u001b[31mRED\u001b[0m'
    const bad = [
      update([advert('v', 2, 0, { names: [escape] })]),
      update([advert('v', 2, 0, { names: ['two\nlines'] })]),
      update([advert('v', 2, 0, { names: ['c1\u009b2J'] })]),
      update([advert('v', 2, 0, { addresses: ['/ip4/10.0.0.1/tcp/7000\u0007'] })]),
      update([advert('v\u0000', 2, 0)]),
    ]
    for (const message of bad) expect(() => core.receive('a', message, 0)).toThrow(/must not contain control characters/)
    expect(core.inboxLength).toBe(0)
    expect(() => core.addName(escape)).toThrow(`name: a name ${REFUSED_CHARACTERS_RULE}, got "\\u001b[31mRED\\u001b[0m"`)
    expect(core.names).toEqual([])
    expect(() => core.setAddresses(['/ip4/10.0.0.1/tcp/7000\r'])).toThrow(/must not contain control characters/)
    expect(() => new PhoenixCore({ id: 'w', names: ['tab\there'] })).toThrow(/must not contain control characters/)
    // Printable text of any script, spaces included, is a name.
    expect(core.addName('ранг 7 — 作業')).toBe(true)
  })

  it('refuses format characters and unpaired surrogates in names, addresses and ids: lookalike names, reordered terminal lines, names the wire would respell', () => {
    const core = coreWithNeighbours('u', ['a'])
    const lookalikes = ['w2\u202e1', 'w2\u200b', '\ufeffw2', 'w\u2066x\u2069', 'w2\u00ad', 'tag\u{e0041}']
    for (const name of lookalikes) {
      expect(() => core.receive('a', update([advert('v', 2, 0, { names: [name] })]), 0)).toThrow(/must not contain control characters, format characters/)
      expect(() => core.addName(name)).toThrow(/must not contain control characters, format characters/)
    }
    expect(() => core.receive('a', update([advert('v', 2, 0, { addresses: ['/dns4/a\u200b.example/tcp/1'] })]), 0)).toThrow(/format characters/)
    expect(() => core.receive('a', update([advert('v\u202e', 2, 0)]), 0)).toThrow(/format characters/)
    // An unpaired surrogate: UTF-8 on the wire would turn it into U+FFFD, another name.
    expect(() => core.addName('half\ud800')).toThrow(/unpaired surrogates, got "half\\ud800"/)
    expect(() => core.addName('\udc00x')).toThrow(/unpaired surrogates/)
    expect(core.inboxLength).toBe(0)
    expect(core.names).toEqual([])
    // The refused character is shown escaped: the error line cannot reorder the terminal either.
    expect(() => core.addName('w2\u202e1')).toThrow('got "w2\\u202e1"')
    expect(() => core.addName('tag\u{e0041}')).toThrow('got "tag\\u{e0041}"')
    // Paired surrogates (emoji), combining marks and right-to-left scripts are names.
    for (const name of ['🚀 launcher', 'é', 'عامل-3', 'ворк\u0301ер']) expect(core.addName(name)).toBe(true)
    expect(quoteEscaped('ok \u0085 \u202e')).toBe('"ok \\u0085 \\u202e"')
    // The rule the transport's and the CLI's name options check, in one place: what the core takes, it passes.
    expect(['', 'n'.repeat(257), 'w2\u202e1', 'n'.repeat(256), '🚀 launcher'].map((name) => nameProblem(name))).toEqual([
      'must be a non-empty string',
      'is 257 characters, more than 256 (nameLengthMax)',
      `${REFUSED_CHARACTERS_RULE}, got "w2\\u202e1"`,
      undefined,
      undefined,
    ])
    expect(nameProblem('abcd', 3)).toBe('is 4 characters, more than 3 (nameLengthMax)')
  })

  it('tells the driver to push back when the inbox is full', () => {
    const core = new PhoenixCore({ id: 'u', limits: { inboxMessagesMax: 2 } })
    core.connectionUp('a', 0)
    expect(core.receive('a', update([]), 0)).toBe(true)
    expect(core.receive('a', update([]), 0)).toBe(true)
    expect(core.receive('a', update([]), 0)).toBe(false)
    drain(core)
    expect(core.receive('a', update([]), 0)).toBe(true)
  })

  it('refuses to grow past destinationsMax, and keeps the neighbour that relayed the surplus', () => {
    const core = new PhoenixCore({ id: 'u', limits: { destinationsMax: 3 } })
    core.connectionUp('a', 0)
    core.receive('a', update([advert('v1', 2, 1), advert('v2', 2, 1), advert('v3', 2, 1)]), 0)
    drain(core)
    expect(core.destinationCount).toBe(2)
    expect(core.stats()).toMatchObject({ destinationsRefused: 1, peersDropped: 0 })
    expect(core.isNeighbour('a')).toBe(true)
  })
})

describe('the connection hello, and not telling a node about itself', () => {
  const pair = () => {
    const u = coreWithNeighbours('u', ['h'])
    const v = new PhoenixCore({ id: 'v', addresses: ['addr:v'] })
    return { u, v }
  }
  const connect = (a: PhoenixCore, b: PhoenixCore) => {
    a.connectionUp(b.id, 0)
    b.connectionUp(a.id, 0)
  }
  const messagesTo = (effects: Effect[], to: string) => effects.flatMap((e) => (e.type === 'send' && e.to === to ? [e.message] : []))

  it('a node whose record we hold is one hop away as soon as it connects; our hello says which record we hold, and neither sends its own', () => {
    const { u, v } = pair()
    u.receive('h', update([advert('v', 0, 1)]), 0)
    drain(u)
    expect(u.route('v')).toMatchObject({ fwd: 'h', nhops: 2 })
    // v also learned u from the hub.
    v.connectionUp('h', 0)
    v.receive('h', hello(0), 0)
    v.receive('h', update([advert('u', 0, 1)]), 0)
    drain(v)
    connect(u, v)
    expect(u.route('v')).toMatchObject({ fwd: 'v', nhops: 1, seq: 0 })
    const toV = messagesTo(drain(u), 'v')
    expect(toV[0]!.hello).toEqual({ receiverSeq: 0 })
    expect(toV.flatMap((m) => m.entries).map((a) => a.destination)).not.toContain('u')
    expect(toV.flatMap((m) => m.entries).map((a) => a.destination)).not.toContain('v')
    for (const m of toV) v.receive('u', m, 0)
    const toU = messagesTo(drain(v), 'u')
    expect(toU[0]!.hello).toEqual({ receiverSeq: 0 })
    for (const m of toU) u.receive('v', m, 0)
    exchange([u, v])
    expect(v.route('u')).toMatchObject({ fwd: 'u', nhops: 1 })
    expect(u.route('v')).toMatchObject({ fwd: 'v', nhops: 1 })
  })

  it('a neighbour that does not hold our record (its hello says none, or an older one) gets it; one we know nothing of gets it at once', () => {
    // u learned a, b and c from its hub, so it expects they learned u the same way, and waits.
    const u = coreWithNeighbours('u', ['h'])
    u.receive('h', update([advert('a', 0, 1), advert('b', 0, 1), advert('c', 0, 1)]), 0)
    drain(u)
    u.connectionUp('a', 0)
    u.connectionUp('b', 0)
    u.connectionUp('c', 0)
    // Before the hellos our record waits: they may hold it already.
    expect([...sentTo(drain(u)).values()].flat().map((e) => e.destination)).not.toContain('u')
    u.addName('x') // own seq 2
    u.receive('a', hello(), 0)
    u.receive('b', hello(0), 0)
    u.receive('c', hello(2), 0)
    const sent = sentTo(drain(u))
    expect(sent.get('a')?.map((e) => e.destination)).toContain('u')
    expect(sent.get('b')?.map((e) => e.destination)).toContain('u')
    expect(sent.get('c')?.map((e) => e.destination) ?? []).not.toContain('u')
    // A node whose record we do not hold probably does not hold ours: no round trip for the hello.
    u.connectionUp('d', 0)
    expect(sentTo(drain(u)).get('d')?.map((e) => e.destination)).toContain('u')
  })

  it('a hello cannot move our sequence number (it is not signed): only a record can', () => {
    const u = coreWithNeighbours('u', [])
    u.connectionUp('m', 0)
    u.receive('m', hello(2 ** 31), 0)
    const toM = sentTo(drain(u)).get('m') ?? []
    expect(u.ownSeq).toBe(0)
    // m claimed to hold a record of ours it cannot have: it gets our real one.
    expect(toM).toContainEqual(expect.objectContaining({ destination: 'u', seq: 0 }))
  })

  it('a restarted node, told a newer number of its record, issues a fresher one', () => {
    const { u, v } = pair()
    u.receive('h', update([advert('v', 10, 1)]), 0)
    drain(u)
    connect(u, v)
    exchange([u, v])
    expect(v.ownSeq).toBe(12)
    expect(u.route('v')).toMatchObject({ fwd: 'v', nhops: 1, seq: 12 })
  })

  it('a neighbour is told when its record was retracted elsewhere (odd number), and answers with a fresher one', () => {
    const { u, v } = pair()
    connect(u, v)
    exchange([u, v])
    expect(u.route('v')).toMatchObject({ fwd: 'v', nhops: 1, seq: 0 })
    // A retraction of v's record at seq 0 reaches u through h: it must reach v, which issues 2.
    u.receive('h', update([advert('v', 1, 0)]), 0)
    const toV = messagesTo(drain(u), 'v')
    expect(toV.flatMap((m) => m.entries)).toContainEqual(expect.objectContaining({ destination: 'v', seq: 1 }))
    for (const m of toV) v.receive('u', m, 0)
    exchange([u, v])
    expect(v.ownSeq).toBe(2)
    expect(u.route('v')).toMatchObject({ fwd: 'v', nhops: 1, seq: 2 })
  })
})

describe('a misbehaving neighbour', () => {
  it('has a slot table with an id over nodeIdLengthMax refused, also when a core with a larger limit read the same frozen table first', () => {
    const slots = Object.freeze(['x'.repeat(20)])
    const lenient = new PhoenixCore({ id: 'u' })
    lenient.connectionUp('a', 0)
    expect(() => lenient.receive('a', update([], slots as string[]), 0)).not.toThrow()
    const strict = new PhoenixCore({ id: 'w', limits: { nodeIdLengthMax: 10 } })
    strict.connectionUp('a', 0)
    expect(() => strict.receive('a', update([], slots as string[]), 0)).toThrow(/neighbour slot is not a node id/)
    expect(() => strict.receive('a', update([], ['y', 42 as unknown as string]), 0)).toThrow(/neighbour slot is not a node id/)
  })

  it('has a slot table refused by its longest id when a core made it (a simulator\u2019s senders), and read in full otherwise', () => {
    // A table a core made carries its longest id's length, which a core with a smaller limit refuses.
    const numbering = new NodeIndex(10)
    const made = new NeighbourTable(numbering)
    made.add('y'.repeat(20), numbering.intern('y'.repeat(20))!, 'optimized')
    const strict = new PhoenixCore({ id: 'w', limits: { nodeIdLengthMax: 10 } })
    strict.connectionUp('a', 0)
    expect(() => strict.receive('a', update([], made.slotTable() as string[]), 0)).toThrow(/neighbour slot is not a node id/)
    const lenient = new PhoenixCore({ id: 'u' })
    lenient.connectionUp('a', 0)
    expect(() => lenient.receive('a', update([], made.slotTable() as string[]), 0)).not.toThrow()
    // A frozen table from elsewhere is read in full, whichever neighbour sends it.
    const slots = Object.freeze(['b', 'x'.repeat(20)])
    const core = new PhoenixCore({ id: 'v', limits: { nodeIdLengthMax: 10 } })
    core.connectionUp('a', 0)
    core.connectionUp('c', 0)
    expect(() => core.receive('a', update([], slots as string[]), 0)).toThrow(/neighbour slot is not a node id/)
    expect(() => core.receive('c', update([], slots as string[]), 0)).toThrow(/neighbour slot is not a node id/)
  })

  it('has the destinations it relays past destinationsPerNeighbourMax refused, and keeps its link', () => {
    const core = new PhoenixCore({ id: 'u', limits: { destinationsPerNeighbourMax: 3 } })
    core.connectionUp('a', 0)
    core.connectionUp('b', 0)
    core.receive('a', update([advert('v1', 2, 1), advert('v2', 2, 1)]), 0)
    core.receive('a', update([advert('v3', 2, 1), advert('v4', 2, 1)]), 0)
    // Its own record is never charged to its share: it is that record's origin.
    core.receive('a', update([advert('a', 2, 0)]), 0)
    expect(drain(core).filter((e) => e.type === 'close')).toEqual([])
    expect(core.routes().map((r) => r.destination).sort()).toEqual(['a', 'v1', 'v2', 'v3'])
    expect(core.stats()).toMatchObject({ peersDropped: 0, introductionsRefused: 1 })
    // Another neighbour has its own share, and destinations already known do not count again.
    core.receive('b', update([advert('v1', 2, 2), advert('w1', 2, 1), advert('w2', 2, 1), advert('w3', 2, 1), advert('w4', 2, 1)]), 0)
    drain(core)
    expect(core.route('w3')).toBeDefined()
    expect(core.route('w4')).toBeUndefined()
    expect(core.stats()).toMatchObject({ peersDropped: 0, introductionsRefused: 2 })
    expect(core.neighbourIds().sort()).toEqual(['a', 'b'])
  })

  it('counts a new destination once, however often it is repeated (found by the inbound fuzz)', () => {
    const core = new PhoenixCore({ id: 'u', limits: { destinationsPerNeighbourMax: 2 } })
    core.connectionUp('a', 0)
    // One destination three times in one update, then again in a second update still queued.
    core.receive('a', update([advert('v1', 2, 1), advert('v1', 2, 2), advert('v1', 2, 3)]), 0)
    core.receive('a', update([advert('v1', 4, 1), advert('v2', 2, 1)]), 0)
    drain(core)
    expect(core.stats().introductionsRefused).toBe(0)
    // A third distinct one is over the share.
    core.receive('a', update([advert('v3', 2, 1)]), 0)
    drain(core)
    expect(core.route('v3')).toBeUndefined()
    expect(core.stats()).toMatchObject({ introductionsRefused: 1, peersDropped: 0 })
  })

  it('has destinations past namesPerNeighbourMax refused, and a record that grows past it too', () => {
    const core = new PhoenixCore({ id: 'u', limits: { namesPerNeighbourMax: 4 } })
    core.connectionUp('a', 0)
    core.connectionUp('b', 0)
    // Repeated, a destination's names count once (its current record).
    core.receive('a', update([advert('v1', 2, 1, { names: ['x'] }), advert('v1', 2, 2, { names: ['x'] })]), 0)
    core.receive('a', update([advert('v1', 4, 1, { names: ['x', 'y'] }), advert('v2', 2, 1, { names: ['z'] })]), 0)
    drain(core)
    expect(core.stats().introductionsRefused).toBe(0)
    // v1's owner adds a name (a newer record, here via b): it still counts against a, who introduced v1.
    core.receive('b', update([advert('v1', 6, 1, { names: ['x', 'y', 'y2'] })]), 0)
    drain(core)
    expect(core.route('v1')?.names).toEqual(['x', 'y', 'y2'])
    core.receive('a', update([advert('v3', 2, 1, { names: ['w'] })]), 0)
    // Growing past a's share is refused too: v1 keeps its older record.
    core.receive('b', update([advert('v1', 8, 1, { names: ['x', 'y', 'y2', 'y3'] })]), 0)
    drain(core)
    expect(core.route('v3')).toBeUndefined()
    expect(core.route('v1')).toMatchObject({ seq: 6, names: ['x', 'y', 'y2'] })
    // b introduced nothing, so it has its own share.
    core.receive('b', update([advert('w1', 2, 1, { names: ['p', 'q', 'r', 's'] })]), 0)
    drain(core)
    expect(core.route('w1')).toBeDefined()
    expect(core.stats()).toMatchObject({ introductionsRefused: 2, peersDropped: 0 })
  })

  it('is dropped when it floods updates faster than its token bucket refills', () => {
    const core = new PhoenixCore({ id: 'u', limits: { updateEntriesPerSecondMax: 10, updateEntriesBurstMax: 20 } })
    core.connectionUp('a', 0)
    const ten = (t: number) => update(Array.from({ length: 9 }, (_, i) => advert(`v${i}`, t, 1))) // nine entries and the update itself: ten tokens
    core.receive('a', ten(2), 0)
    core.receive('a', ten(4), 0)
    // One second later ten more tokens have arrived: still within the rate.
    core.receive('a', ten(6), 1_000)
    expect(() => core.receive('a', ten(8), 1_000)).toThrow(/updateEntriesPerSecondMax/)
    expect(core.stats().peersDropped).toBe(1)
  })

  it('charges an empty update one token: a flood of them is dropped too', () => {
    // An adversarial audit held a hub at 100% CPU with 3-byte empty updates, which cost nothing.
    const core = new PhoenixCore({ id: 'u', limits: { updateEntriesPerSecondMax: 10, updateEntriesBurstMax: 20 } })
    core.connectionUp('a', 0)
    for (let i = 0; i < 20; i++) core.receive('a', update([]), 0)
    expect(() => core.receive('a', update([]), 0)).toThrow(/updateEntriesPerSecondMax/)
  })

  it('drops a neighbour that advertises another node at 0 hops (a replayed record taking its traffic), not one relaying a retraction', () => {
    const core = new PhoenixCore({ id: 'u' })
    core.connectionUp('a', 0)
    core.connectionUp('v', 0)
    core.receive('a', update([advert('w', 3, 0)]), 0) // unreachable: a retraction carries 0 hops
    core.receive('v', update([advert('v', 2, 0)]), 0) // its own record
    expect(core.stats().peersDropped).toBe(0)
    expect(() => core.receive('a', update([advert('v', 2, 0)]), 0)).toThrow(/peer a dropped: it advertised a route to v at 0 hops/)
    expect(core.stats().peersDropped).toBe(1)
  })

  it('gives each connection a full bucket of its own, also one that takes the slot of a drained one', () => {
    const core = new PhoenixCore({ id: 'u', limits: { updateEntriesPerSecondMax: 10, updateEntriesBurstMax: 20 } })
    const ten = (t: number) => update(Array.from({ length: 9 }, (_, i) => advert(`v${i}`, t, 1))) // nine entries and the update itself: ten tokens
    core.connectionUp('a', 0)
    core.connectionUp('b', 0)
    core.receive('a', ten(2), 0)
    core.receive('a', ten(4), 0) // a's bucket is empty
    core.receive('b', ten(6), 0) // b's is its own
    core.receive('b', ten(8), 0)
    core.connectionDown('a', 0)
    core.connectionUp('c', 0) // takes a's slot
    core.receive('c', ten(10), 0)
    core.receive('c', ten(12), 0)
    core.connectionUp('a', 0) // a again: a new connection, a full bucket
    core.receive('a', ten(14), 0)
    core.receive('a', ten(16), 0)
    expect(core.stats().peersDropped).toBe(0)
    expect(() => core.receive('a', ten(18), 0)).toThrow(/updateEntriesPerSecondMax/)
  })
})

describe('trans and rcpt', () => {
  /** u's neighbours are a, b, c; a reports v with trans = {b} in a's slot numbering. */
  function receiveWithTrans(core: PhoenixCore, nhops: number, seq = 4) {
    core.receive('a', update([advert('v', seq, nhops, { trans: 0 })], ['b', 'x'], [Uint8Array.of(0b01)]), 0)
  }

  it("the paper's Figure 2: only the freshest node broadcasts", () => {
    // v hangs off a; a, b, c, d form a clique; e hangs off d. When v issues a fresher entry, a
    // broadcasts it with trans = {b, c, d}: b and c stay silent, and only d, the one node with a
    // neighbour a did not reach, passes it on. Static peers (discovery off): every peer's trans set
    // names holders; with discovery only a hub's does, or an owner's of its own record (vouching.ts).
    const ids = ['v', 'a', 'b', 'c', 'd', 'e']
    const edges = [['v', 'a'], ['a', 'b'], ['a', 'c'], ['a', 'd'], ['b', 'c'], ['b', 'd'], ['c', 'd'], ['d', 'e']]
    const cores = new Map(ids.map((id) => [id, new PhoenixCore({ id, discovery: false })]))
    for (const [x, y] of edges) {
      cores.get(x!)!.connectionUp(y!, 0)
      cores.get(y!)!.connectionUp(x!, 0)
    }
    const senders = new Set<string>()
    const pump = () => {
      for (let round = 0; round < 50; round++) {
        let moved = false
        for (const [id, core] of cores) {
          while (core.hasWork(0)) {
            for (const e of core.step(0).effects) {
              if (e.type !== 'send') continue
              moved = true
              if (e.message.entries.some((x) => x.destination === 'v')) senders.add(id)
              cores.get(e.to)!.receive(id, e.message, 0)
            }
          }
        }
        if (!moved) return
      }
    }
    pump()
    senders.clear()
    cores.get('v')!.addName('fresh')
    pump()
    expect([...senders].sort()).toEqual(['a', 'd', 'v'])
    for (const id of ['a', 'b', 'c', 'd', 'e']) expect(cores.get(id)!.route('v')).toMatchObject({ seq: 2, reachable: true, names: ['fresh'] })
    expect(cores.get('e')!.route('v')).toMatchObject({ fwd: 'd', nhops: 3 })
  })

  it('does not send an entry to a neighbour that got it from the sender (e.trans on a change)', () => {
    const core = coreWithNeighbours('u', ['a', 'b', 'c'], 'optimized', false) // static peers: a's word is taken (vouching.ts)
    receiveWithTrans(core, 1)
    const sent = sentTo(drain(core))
    expect(sent.get('b')?.some((e) => e.destination === 'v')).toBeFalsy()
    expect(sent.get('a')?.some((e) => e.destination === 'v')).toBeFalsy()
    expect(sent.get('c')?.find((e) => e.destination === 'v')).toMatchObject({ seq: 4, nhops: 2 })
  })

  it('sends each version of an entry to each neighbour once', () => {
    const core = coreWithNeighbours('u', ['a', 'b'])
    core.receive('a', update([advert('v', 4, 1)]), 0)
    expect(sentTo(drain(core)).get('b')?.length).toBe(1)
    core.receive('a', update([advert('v', 4, 1)]), 0)
    expect(sentTo(drain(core)).size).toBe(0)
  })

  it('a new neighbour gets the whole table, including unreachable entries, but not those only ever heard of as unreachable', () => {
    const core = coreWithNeighbours('u', ['a'])
    // v and x had routes here, then lost them; w was first heard of in a retraction (hearsay:
    // passed on, each node that learned it kept it a retention of its own, and under churn dead
    // entries were taught back and never expired).
    core.receive('a', update([advert('v', 4, 1), advert('w', 7, 0), advert('x', 2, 1)]), 0)
    drain(core)
    core.receive('a', update([advert('x', 3, 0)]), 0)
    drain(core)
    core.connectionUp('n', 1)
    core.receive('n', hello(), 1)
    const toN = sentTo(drain(core, 1)).get('n') ?? []
    expect(toN.map((e) => e.destination).sort()).toEqual(['u', 'v', 'x'])
    expect(core.route('w')).toMatchObject({ reachable: false, seq: 7 })
    // A neighbour that holds an older number of w (w came back below its retraction) is told.
    core.receive('n', update([advert('w', 6, 1)]), 2)
    const toNAgain = sentTo(drain(core, 2)).get('n') ?? []
    expect(toNAgain.filter((e) => e.destination === 'w').map((e) => e.seq)).toEqual([7])
  })

  it("guards the paper's literal rule: a worse holder's trans does not silence a better route", () => {
    // u has v at 1 hop (seq 4) and has not told b yet. a reports v at seq 4 but 3 hops, with
    // trans {b}. The paper's rule ("otherwise add e.trans to trans and rcpt") would mark b as
    // served, and b would never learn its 2-hop route through u.
    const core = coreWithNeighbours('u', ['a', 'b', 'v'])
    core.receive('v', update([advert('v', 4, 0)]), 0)
    expect(core.step(0).kind).toBe('apply') // applied, not yet sent
    core.receive('a', update([advert('v', 4, 3, { trans: 0 })], ['b'], [Uint8Array.of(1)]), 0)
    const sent = sentTo(drain(core))
    expect(sent.get('b')?.find((e) => e.destination === 'v')).toMatchObject({ seq: 4, nhops: 1 })
    expect(sent.get('a')?.find((e) => e.destination === 'v')).toMatchObject({ seq: 4, nhops: 1 })
  })

  it('naive mode sends every change to every neighbour', () => {
    const core = coreWithNeighbours('u', ['a', 'b', 'c'], 'naive')
    receiveWithTrans(core, 1)
    const sent = sentTo(drain(core))
    for (const n of ['a', 'b', 'c']) expect(sent.get(n)?.some((e) => e.destination === 'v')).toBe(true)
  })
})

describe('scheduler priorities', () => {
  it('dials before applying, applies everything before sending, merges per neighbour', () => {
    const core = new PhoenixCore({ id: 'u', hubs: ['addr:h'] })
    core.connectionUp('a', 0)
    core.connectionUp('b', 0)
    core.receive('a', update([advert('v', 2, 1, { addresses: ['addr:v'] })]), 0)
    core.receive('b', update([advert('w', 2, 1, { addresses: ['addr:w'] })]), 0)
    const kinds: string[] = []
    const sends: Effect[] = []
    while (core.hasWork(0)) {
      const r = core.step(0)
      kinds.push(r.kind)
      sends.push(...r.effects.filter((e) => e.type === 'send'))
    }
    // hub dial, then both updates applied in one step, then the dials they taught, then one send round.
    expect(kinds).toEqual(['dial', 'apply', 'dial', 'send'])
    expect(sends.length).toBe(2)
    expect(sentTo(sends).get('a')!.map((e) => e.destination).sort()).toEqual(['u', 'w'])
  })

  it('a naive node answers each message at once', () => {
    const core = coreWithNeighbours('u', ['a', 'b'], 'naive')
    core.receive('a', update([advert('v', 2, 1)]), 0)
    core.receive('b', update([advert('w', 2, 1)]), 0)
    const first = core.step(0)
    expect(first.kind).toBe('apply')
    expect(first.messagesApplied).toBe(1)
    expect(first.effects.filter((e) => e.type === 'send').length).toBe(2)
  })

  it('can hold sends a bounded time for dials in flight', () => {
    const core = new PhoenixCore({ id: 'u', hubs: ['addr:h'], timing: { sendHoldForDialsMs: 50 } })
    core.connectionUp('a', 0)
    expect(core.step(0).kind).toBe('dial')
    const held = core.step(10)
    expect(held.kind).toBe('idle')
    expect(held.wakeAtMs).toBe(50)
    expect(core.step(50).kind).toBe('send')
  })
})

describe('discovery', () => {
  it('dials each learned address once, backs off after a failure, never in a tight loop', () => {
    const core = new PhoenixCore({ id: 'u', timing: { dialBackoffInitialMs: 100, dialBackoffMaxMs: 400 } })
    core.connectionUp('a', 0)
    core.receive('a', update([advert('v', 2, 1, { addresses: ['addr:v'] })]), 0)
    const dials = () => {
      const out: string[] = []
      for (let i = 0; i < 10; i++) for (const e of core.step(core['nowMs' as never] as number).effects) if (e.type === 'dial') out.push(e.address)
      return out
    }
    expect(dials()).toEqual(['addr:v'])
    expect(dials()).toEqual([])
    core.dialFailed('addr:v', 10)
    expect(core.dialBackoff('addr:v')).toEqual({ consecutiveFailures: 1, retryAtMs: 110 })
    core.step(109)
    expect(core.hasWork(109)).toBe(false)
    const retry = core.step(110).effects
    expect(retry).toEqual([{ type: 'dial', address: 'addr:v', expectedPeer: 'v' }])
    core.dialFailed('addr:v', 120)
    core.dialFailed.bind(core)
    expect(core.dialBackoff('addr:v')?.retryAtMs).toBe(320)
  })

  it('hasWork changes nothing: asking about a later time does not start a backed-off dial early', () => {
    const core = new PhoenixCore({ id: 'u', timing: { dialBackoffInitialMs: 100, dialBackoffMaxMs: 400 } })
    core.connectionUp('a', 0)
    core.receive('a', update([advert('v', 2, 1, { addresses: ['addr:v'] })]), 0)
    drain(core)
    core.dialFailed('addr:v', 10)
    expect(core.hasWork(500)).toBe(true)
    expect(core.hasWork(50)).toBe(false)
    expect(core.step(50).effects).toEqual([])
    expect(core.step(110).effects).toEqual([{ type: 'dial', address: 'addr:v', expectedPeer: 'v' }])
  })

  it('nextWakeMs says when to step next with no input: now, the end of a back-off or of a send hold, or never', () => {
    const core = new PhoenixCore({ id: 'u', hubs: ['addr:h'], timing: { dialBackoffInitialMs: 100, sendHoldForDialsMs: 50 } })
    expect(core.nextWakeMs(0)).toBe(0)
    expect(core.step(0).effects).toEqual([{ type: 'dial', address: 'addr:h', expectedPeer: undefined }])
    core.dialFailed('addr:h', 5)
    expect(core.nextWakeMs(6)).toBe(105)
    expect(core.nextWakeMs(6)).toBe(105)
    expect(core.step(6).wakeAtMs).toBe(105)
    expect(core.step(105).effects).toEqual([{ type: 'dial', address: 'addr:h', expectedPeer: undefined }])
    // A neighbour joins while the hub's dial is in flight: sends wait for the hold (dial at 105 + 50).
    core.connectionUp('a', 110)
    expect(core.hasWork(110)).toBe(false)
    expect(core.nextWakeMs(110)).toBe(155)
    expect(core.step(110).wakeAtMs).toBe(155)
    expect(core.nextWakeMs(155)).toBe(155)
    drain(core, 155)
    core.connectionUp('h', 160, 'addr:h')
    drain(core, 160)
    expect(core.nextWakeMs(200)).toBeUndefined()
  })

  it("tries a node's other address when the first fails (a dual-stacked node), one at a time", () => {
    const core = new PhoenixCore({ id: 'u' })
    core.connectionUp('a', 0)
    core.receive('a', update([advert('v', 2, 1, { addresses: ['/ip6/v', '/ip4/v'] })]), 0)
    const dialsNow = (t: number) => drain(core, t).flatMap((e) => (e.type === 'dial' ? [e.address] : []))
    expect(dialsNow(0)).toEqual(['/ip6/v'])
    core.dialFailed('/ip6/v', 1)
    expect(dialsNow(1)).toEqual(['/ip4/v'])
    core.connectionUp('v', 2, '/ip4/v')
    expect(dialsNow(5_000)).toEqual([])
  })

  it('does not dial a node it is already connected to, nor itself', () => {
    const core = new PhoenixCore({ id: 'u', addresses: ['addr:u'] })
    core.connectionUp('a', 0)
    core.receive('a', update([advert('a', 2, 0, { addresses: ['addr:a'] }), advert('u', 0, 1, { addresses: ['addr:u'] })]), 0)
    const effects = drain(core)
    expect(effects.filter((e) => e.type === 'dial')).toEqual([])
  })

  it('a discovery-off node dials only its hubs', () => {
    const core = new PhoenixCore({ id: 'u', hubs: ['addr:h'], discovery: false })
    core.connectionUp('a', 0)
    core.receive('a', update([advert('v', 2, 1, { addresses: ['addr:v'] })]), 0)
    const dials = drain(core).filter((e) => e.type === 'dial')
    expect(dials.map((e) => (e.type === 'dial' ? e.address : ''))).toEqual(['addr:h'])
  })

  it('caps dials in flight', () => {
    const core = new PhoenixCore({ id: 'u', limits: { dialsInFlightMax: 2 } })
    core.connectionUp('a', 0)
    core.receive('a', update(['v', 'w', 'x'].map((d) => advert(d, 2, 1, { addresses: [`addr:${d}`] }))), 0)
    expect(drain(core).filter((e) => e.type === 'dial').length).toBe(2)
    core.dialFailed('addr:v', 1)
    expect(drain(core, 1).filter((e) => e.type === 'dial').length).toBe(1)
  })

  it('a round after a new connection sends every entry to the new neighbour and nothing old to the others (checked against a decision over every neighbour)', () => {
    const core = coreWithNeighbours('u', ['a', 'b'])
    core.receive('a', update([advert('x', 2, 1), advert('y', 2, 2)]), 0)
    expect(sentTo(drain(core)).get('b')?.map((e) => e.destination).sort()).toEqual(['x', 'y'])
    const checked = sendSelfCheck.decisionsChecked
    core.connectionUp('c', 1)
    core.receive('c', { ...hello(), entries: [advert('c', 2, 0)] }, 1)
    const sent = sentTo(drain(core, 1))
    expect(sent.get('c')?.map((e) => e.destination).sort()).toEqual(['u', 'x', 'y'])
    // a and b hear of c (a new route), nothing they hold already.
    expect(sent.get('a')?.map((e) => e.destination)).toEqual(['c'])
    expect(sent.get('b')?.map((e) => e.destination)).toEqual(['c'])
    expect(sendSelfCheck.decisionsChecked).toBeGreaterThan(checked) // vitest.setup.ts turns the check on
  })

  it('dials no more nodes than it has room for under neighboursMax, and dials the rest as neighbours leave', () => {
    const core = new PhoenixCore({ id: 'u', limits: { neighboursMax: 2 } })
    core.connectionUp('a', 0)
    core.receive('a', update(['v', 'w', 'x'].map((d) => advert(d, 2, 1, { addresses: [`addr:${d}`] }))), 0)
    const dialsNow = (t: number) => drain(core, t).flatMap((e) => (e.type === 'dial' ? [e.address] : []))
    expect(dialsNow(0)).toEqual(['addr:v']) // a, and one dial in flight: full
    core.dialFailed('addr:v', 1)
    expect(dialsNow(1)).toEqual(['addr:w'])
    core.connectionUp('w', 2, 'addr:w')
    // Full: x stays queued, and neither hasWork nor a wake-up asks for a step to dial it (nor v's back-off).
    expect(dialsNow(60_000)).toEqual([])
    expect(core.hasWork(60_000)).toBe(false)
    expect(core.nextWakeMs(60_000)).toBeUndefined()
    core.connectionDown('a', 60_001)
    expect(dialsNow(60_001).length).toBe(1) // room for one again (a, x or v: whichever is due first)
    expect(core.neighbourIds()).toEqual(['w'])
  })
})

describe('names and forwarding', () => {
  it('resolves a name to its holder (the first claim stored; later claims refused) and sees names change', () => {
    const core = coreWithNeighbours('u', ['a', 'b'])
    core.receive('a', update([advert('a', 2, 0, { names: ['rank-1', 'shared'] })]), 0)
    drain(core)
    // Later than nameContentionMs: a holds 'shared'.
    const later = DEFAULT_TIMING.nameContentionMs + 1
    core.receive('a', update([advert('x', 2, 2, { names: ['shared'] })]), later)
    core.receive('b', update([advert('b', 2, 0, { names: ['shared'] })]), later)
    drain(core, later)
    expect(core.resolve('rank-1')).toEqual({ owner: 'a', nextHop: 'a', nhops: 1 })
    expect(core.resolve('shared')?.owner).toBe('a')
    // x's and b's records claim a held name: not stored (b, a neighbour, is still reached directly).
    expect(core.nameConflicts()).toEqual([{ name: 'shared', holder: 'a', refused: ['b', 'x'] }])
    expect(core.route('x')).toBeUndefined()
    expect(core.forward('b', 16)).toEqual({ action: 'forward', nextHop: 'b', hopLimit: 15 })
    core.receive('a', update([advert('a', 4, 0, { names: ['shared'] })]), later)
    drain(core, later)
    expect(core.resolve('rank-1')).toBeUndefined()
    expect(core.resolve('shared')?.owner).toBe('a')
    expect(core.resolve('nobody')).toBeUndefined()
  })

  it('adding a name advances the own seq so the new record wins everywhere', () => {
    const core = coreWithNeighbours('u', ['a'])
    core.addName('job-7')
    expect(core.ownSeq).toBe(2)
    expect(sentTo(drain(core)).get('a')?.[0]).toMatchObject({ destination: 'u', seq: 2, names: ['job-7'] })
    core.removeName('job-7')
    expect(core.ownSeq).toBe(4)
    expect(() => core.addName('')).toThrow(PhoenixError)
  })

  it('forwards with one less hop, delivers locally, drops at the hop limit or without a route', () => {
    const core = coreWithNeighbours('u', ['a'])
    core.receive('a', update([advert('v', 2, 1)]), 0)
    drain(core)
    expect(core.forward('u', 0)).toEqual({ action: 'deliver' })
    expect(core.forward('v', 5)).toEqual({ action: 'forward', nextHop: 'a', hopLimit: 4 })
    expect(core.forward('v', 0)).toEqual({ action: 'drop', reason: 'hop-limit' })
    expect(core.forward('w', 5)).toEqual({ action: 'drop', reason: 'no-route' })
    // More left than our own hop limit (16 by default; the wire allows 255) counts as our limit.
    expect(core.forward('v', 255)).toEqual({ action: 'forward', nextHop: 'a', hopLimit: core.limits.hopLimit - 1 })
    expect(core.forward('v', core.limits.hopLimit)).toEqual({ action: 'forward', nextHop: 'a', hopLimit: core.limits.hopLimit - 1 })
  })

  it('a neighbour is one hop away as soon as its connection is up, before its record arrives', () => {
    const core = coreWithNeighbours('u', ['a'])
    core.connectionUp('b', 1)
    expect(core.route('b')).toBeUndefined()
    expect(core.forward('b', 5)).toEqual({ action: 'forward', nextHop: 'b', hopLimit: 4 })
    expect(core.forward('b', 0)).toEqual({ action: 'drop', reason: 'hop-limit' })
    core.connectionDown('b', 2)
    expect(core.forward('b', 5)).toEqual({ action: 'drop', reason: 'no-route' })
  })

  it('a message for a name is delivered only by the node that owns the name (checked at the destination)', () => {
    const core = new PhoenixCore({ id: 'u', names: ['rank-1'] })
    core.connectionUp('a', 0)
    core.receive('a', update([advert('v', 2, 1)]), 0)
    drain(core)
    expect(core.forward('u', 3, 'rank-1')).toEqual({ action: 'deliver' })
    expect(core.forward('u', 3, 'rank-2')).toEqual({ action: 'drop', reason: 'no-such-name' })
    // '' and no name: addressed to the node itself.
    expect(core.forward('u', 3, '')).toEqual({ action: 'deliver' })
    expect(core.forward('u', 3)).toEqual({ action: 'deliver' })
    // On the way, the name is the destination's business.
    expect(core.forward('v', 3, 'rank-9')).toEqual({ action: 'forward', nextHop: 'a', hopLimit: 2 })
    core.removeName('rank-1')
    expect(core.forward('u', 3, 'rank-1')).toEqual({ action: 'drop', reason: 'no-such-name' })
  })
})

describe('checkInvariants', () => {
  /** A core after some traffic: neighbours a and b, destinations v (via a) and w (unreachable). */
  function busyCore(): PhoenixCore {
    const core = coreWithNeighbours('u', ['a', 'b'])
    core.receive('a', update([advert('v', 2, 1), advert('w', 3, 0)]), 0)
    drain(core)
    return core
  }
  // The checker must notice each broken rule; the state is corrupted through private fields on purpose.
  const table = (core: PhoenixCore) => core['table' as never] as { own: { nhops: number; seq: number }; get(d: string): { fwd: string | undefined } }

  it('holds through ordinary traffic', () => {
    const core = busyCore()
    expect(() => core.checkInvariants()).not.toThrow()
    core.connectionDown('a', 1)
    expect(() => core.checkInvariants()).not.toThrow()
  })

  it.each([
    ['our own entry 0 hops away', (core: PhoenixCore) => (table(core).own.nhops = 2), /0 hops away/],
    ['our own seq even', (core: PhoenixCore) => (table(core).own.seq = 5), /even sequence number/],
    ["a reachable route's next hop is a neighbour", (core: PhoenixCore) => (table(core).get('v').fwd = 'x'), /next hop is a neighbour/],
    ['an unreachable route has no next hop', (core: PhoenixCore) => (table(core).get('w').fwd = 'a'), /unreachable route has no next hop/],
  ])('notices a broken rule: %s', (_, corrupt, message) => {
    const core = busyCore()
    corrupt(core)
    expect(() => core.checkInvariants()).toThrow(message)
  })
})

describe('join and leave', () => {
  it('a graceful leave tells every neighbour the node is unreachable', () => {
    const core = coreWithNeighbours('u', ['a', 'b'])
    const effects = core.leave(5)
    expect(sentTo(effects).get('a')).toEqual([expect.objectContaining({ destination: 'u', seq: 1 })])
    expect(sentTo(effects).get('b')).toEqual([expect.objectContaining({ destination: 'u', seq: 1 })])
    expect(() => core.addName('x')).toThrow(/has left/)
  })

  it('forgets unreachable entries after their retention time', () => {
    const core = new PhoenixCore({ id: 'u', timing: { unreachableRetentionMs: 1_000 } })
    core.connectionUp('a', 0)
    core.receive('a', update([advert('v', 2, 1)]), 0)
    drain(core)
    core.connectionDown('a', 10)
    drain(core, 10)
    expect(core.route('v')?.reachable).toBe(false)
    core.step(1_011)
    expect(core.route('v')).toBeUndefined()
    expect(core.stats().entriesExpired).toBe(1)
  })

  it('rejects bad configuration with the field named', () => {
    expect(() => new PhoenixCore({ id: '' })).toThrow(/config.id/)
    expect(() => new PhoenixCore({ id: 'u', initialSeq: 3 })).toThrow(/initialSeq/)
    expect(() => new PhoenixCore({ id: 'u', limits: { hopLimit: 0 } })).toThrow(/hopLimit/)
    expect(() => new PhoenixCore({ id: 'u', limits: { neighboursMax: -1 } })).toThrow(/neighboursMax/)
    expect(() => new PhoenixCore({ id: 'u', mode: 'fast' as never })).toThrow(/mode/)
    expect(() => new PhoenixCore({ id: 'u', names: Array.from({ length: 65 }, (_, i) => `n${i}`) })).toThrow(/namesPerNodeMax/)
  })

  it('accepts connections up to neighboursMax and says so before one is made (acceptsConnection), closing any past it', () => {
    const core = new PhoenixCore({ id: 'u', limits: { neighboursMax: 2 } })
    expect(core.acceptsConnection('u')).toBe(false)
    expect(core.acceptsConnection('a')).toBe(true)
    core.connectionUp('a', 1)
    core.connectionUp('b', 1)
    expect(core.acceptsConnection('c')).toBe(false)
    expect(core.acceptsConnection('a')).toBe(true) // a neighbour already: a crossing dial is kept
    core.connectionUp('c', 2) // a driver that did not ask: the core closes it
    expect(core.step(3).effects.filter((e) => e.type === 'close')).toEqual([{ type: 'close', peer: 'c', reason: 'neighbour limit 2 reached' }])
    expect(core.neighbourIds().sort()).toEqual(['a', 'b'])
    core.connectionDown('b', 4)
    expect(core.acceptsConnection('c')).toBe(true)
  })

  it('refuses time that goes backwards', () => {
    const core = new PhoenixCore({ id: 'u' })
    core.step(10)
    expect(() => core.step(9)).toThrow(/never go back/)
  })
})
