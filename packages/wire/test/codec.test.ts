import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { DEFAULT_LIMITS, type RouteAdvert, type UpdateMessage } from '@phoenix-overlay/core'
import { INITIAL_HOP_LIMIT_DEFAULT, WIRE_LIMITS, WireError, decodeFrame, encodeFrame, encodedUpdateSize, hopsTravelled, sourceHopLimit, splitUpdate, type Frame } from '../src/index.ts'

// The seed is fast-check's global one (vitest.setup.ts prints it; replay with PHOENIX_SEED=<n>).
const runs = (numRuns: number) => ({ numRuns })

const id = fc.string({ minLength: 1, maxLength: 60 })
const uint32 = fc.integer({ min: 0, max: 2 ** 32 - 1 })
const bytes = (max: number) => fc.uint8Array({ maxLength: max })

const updateArb: fc.Arbitrary<UpdateMessage> = fc
  .record({
    neighbourSlots: fc.array(fc.oneof(id, fc.constant('')), { maxLength: 40 }),
    setCount: fc.integer({ min: 0, max: 5 }),
    // No hello, a hello holding no record of the receiver, or one holding a given number.
    hello: fc.oneof(fc.constant(undefined), fc.constant(null), uint32),
    // Neighbours the sender lost since its last update (none: the field is absent).
    lost: fc.option(fc.array(id, { minLength: 1, maxLength: 8 }), { nil: undefined }),
    // The end of a co-hub's plan (absent when false).
    planEnd: fc.boolean(),
    // Every neighbour served (absent when false).
    allServed: fc.boolean(),
    entries: fc.array(
      fc.record({
        destination: id,
        seq: uint32,
        nhops: fc.integer({ min: 0, max: 255 }),
        names: fc.array(fc.string({ minLength: 1, maxLength: 20 }), { maxLength: 4 }),
        addresses: fc.array(fc.string({ minLength: 1, maxLength: 40 }), { maxLength: 3 }),
        transPick: fc.nat(),
        signature: bytes(64),
      }),
      { maxLength: 30 },
    ),
  })
  .chain((u) =>
    fc.array(bytes(Math.ceil(u.neighbourSlots.length / 8)), { minLength: u.setCount, maxLength: u.setCount }).map((transSets) => ({
      ...(u.hello === undefined ? {} : { hello: { receiverSeq: u.hello ?? undefined } }),
      ...(u.lost === undefined ? {} : { lostNeighbours: u.lost }),
      ...(u.planEnd ? { planEnd: true as const } : {}),
      ...(u.allServed ? { allServed: true as const } : {}),
      neighbourSlots: u.neighbourSlots,
      transSets,
      entries: u.entries.map(({ transPick, ...e }): RouteAdvert => ({ ...e, trans: transSets.length === 0 ? -1 : (transPick % (transSets.length + 1)) - 1 })),
    })),
  )

const frameArb: fc.Arbitrary<Frame> = fc.oneof(
  updateArb.map((update) => ({ kind: 'update' as const, update })),
  fc
    .record({ source: id, destination: id, name: fc.string({ maxLength: 30 }), hopLimit: fc.integer({ min: 0, max: 255 }), messageId: uint32, ackRequested: fc.boolean(), payload: bytes(200), initial: fc.option(fc.integer({ min: 1, max: 255 })) })
    .map(({ initial, ...data }) => ({ kind: 'data' as const, data: { ...data, ...(initial !== null ? { initialHopLimit: initial } : {}) } })),
  fc.record({ source: id, destination: id, hopLimit: fc.integer({ min: 0, max: 255 }), messageId: uint32 }).map((ack) => ({ kind: 'ack' as const, ack })),
  fc
    .record({ source: id, destination: id, hopLimit: fc.integer({ min: 0, max: 255 }), messageId: uint32, reason: fc.constantFrom('no-route' as const, 'hop-limit' as const, 'queue-full' as const, 'no-such-name' as const) })
    .map((undeliverable) => ({ kind: 'undeliverable' as const, undeliverable })),
  fc.record({ nonce: uint32, reply: fc.boolean() }).map((probe) => ({ kind: 'probe' as const, probe })),
  fc.array(fc.record({ source: id, destination: id, bytes: uint32 }), { maxLength: 5 }).map((flows) => ({ kind: 'credit' as const, credit: { flows } })),
)

/** Decoding must return a frame or throw WireError, nothing else. */
function decodesSafely(input: Uint8Array): void {
  try {
    decodeFrame(input)
  } catch (error) {
    if (!(error instanceof WireError)) throw new Error(`decode threw ${String(error)} instead of a WireError`)
  }
}

describe('wire codec', () => {
  it('round-trips every kind of frame exactly', () => {
    fc.assert(
      fc.property(frameArb, (frame) => {
        expect(decodeFrame(encodeFrame(frame))).toEqual(frame)
      }),
      runs(1_000),
    )
  })

  it('encodedUpdateSize equals the encoded length', () => {
    fc.assert(
      fc.property(updateArb, (update) => {
        expect(encodedUpdateSize(update)).toBe(encodeFrame({ kind: 'update', update }).length)
      }),
      runs(1_000),
    )
  })

  it('splits an update too large for one frame into parts that fit and lose nothing', () => {
    fc.assert(
      fc.property(updateArb, fc.integer({ min: 400, max: 3_000 }), (update, frameBytesMax) => {
        const parts = splitUpdate(update, frameBytesMax)
        for (const part of parts) expect(encodedUpdateSize(part)).toBeLessThanOrEqual(frameBytesMax)
        const flat = parts.flatMap((p) => p.entries.map((e) => ({ ...e, trans: e.trans < 0 ? undefined : [...p.transSets[e.trans]!] })))
        expect(flat).toEqual(update.entries.map((e) => ({ ...e, trans: e.trans < 0 ? undefined : [...update.transSets[e.trans]!] })))
        // The hello and the lost neighbours are said once, on the first part.
        expect(parts.map((p) => p.hello)).toEqual(parts.map((_, i) => (i === 0 ? update.hello : undefined)))
        expect(parts.map((p) => p.lostNeighbours)).toEqual(parts.map((_, i) => (i === 0 ? update.lostNeighbours : undefined)))
        // The plan's end, once, on the last part: it is true only once every part is out.
        expect(parts.map((p) => p.planEnd)).toEqual(parts.map((_, i) => (i === parts.length - 1 ? update.planEnd : undefined)))
        // Every neighbour served: said of every entry, so on every part.
        expect(parts.map((p) => p.allServed)).toEqual(parts.map(() => update.allServed))
      }),
      runs(300),
    )
  })

  it('refuses what is over a limit, naming the field', () => {
    const advert = (over: Partial<RouteAdvert>): RouteAdvert => ({ destination: 'v', seq: 2, nhops: 1, names: [], addresses: [], trans: -1, ...over })
    const update = (entries: RouteAdvert[], extra: Partial<UpdateMessage> = {}): Frame => ({ kind: 'update', update: { neighbourSlots: [], transSets: [], entries, ...extra } })
    const cases: [Frame, RegExp][] = [
      [update([advert({ names: Array.from({ length: 65 }, (_, i) => `n${i}`) })]), /too many elements/],
      [update([advert({ destination: 'x'.repeat(385) })]), /entries\[0\]\.destination is 385 bytes of UTF-8, more than 384/],
      [update([advert({ nhops: 256 })]), /entries\[0\]\.nhops is 256/],
      [update([advert({ names: ['€'.repeat(257)] })]), /names\[0\] is 771 bytes of UTF-8, more than 768/],
      [update([advert({ addresses: ['/dns4/' + '😀'.repeat(384)] })]), /addresses\[0\] is 1542 bytes of UTF-8, more than 1536/],
      [update([advert({ trans: 0 })]), /refers to trans set 0, but there are 0/],
      [update([], { neighbourSlots: ['a'], transSets: [Uint8Array.of(1, 2)] }), /transSets\[0\] bytes is 2, more than 1/],
      [update(Array.from({ length: WIRE_LIMITS.entriesPerUpdateMax + 1 }, (_, i) => advert({ destination: `d${i}` }))), /too many elements/],
      [{ kind: 'data', data: { source: 's', destination: 'd', name: 'n', hopLimit: 300, messageId: 1, ackRequested: false, payload: new Uint8Array(0) } }, /data\.hopLimit is 300/],
      [{ kind: 'data', data: { source: 's', destination: 'd', name: 'n', hopLimit: 3, initialHopLimit: 256, messageId: 1, ackRequested: false, payload: new Uint8Array(0) } }, /data\.initialHopLimit is 256/],
      [{ kind: 'data', data: { source: '', destination: 'd', name: 'n', hopLimit: 3, messageId: 1, ackRequested: false, payload: new Uint8Array(0) } }, /data\.source is empty/],
    ]
    for (const [frame, message] of cases) expect(() => decodeFrame(encodeFrame(frame))).toThrow(message)
    expect(() => decodeFrame(new Uint8Array(WIRE_LIMITS.frameBytesMax + 1))).toThrow(/frameBytesMax/)
    expect(() => encodeFrame({ kind: 'data', data: { source: 's', destination: 'd', name: '', hopLimit: 1, messageId: 1, ackRequested: false, payload: new Uint8Array(200) } }, 100)).toThrow(WireError)
    expect(() => decodeFrame(new Uint8Array(0))).toThrow(/exactly one of/)
    // A probe and anything else in one frame is malformed too (field 5 = probe, field 3 = ack).
    const probeAndAck = new Uint8Array([...encodeFrame({ kind: 'probe', probe: { nonce: 7, reply: false } }), ...encodeFrame({ kind: 'ack', ack: { source: 's', destination: 'd', hopLimit: 1, messageId: 1 } })])
    expect(() => decodeFrame(probeAndAck)).toThrow(/holds ack and probe/)
  })

  it("counts a data frame's hops from the hop limit its source gave it, which it carries unless it is the default", () => {
    // The core's default: a frame from a node left at it carries nothing more than before.
    expect(INITIAL_HOP_LIMIT_DEFAULT).toBe(DEFAULT_LIMITS.hopLimit)
    const frame = (hopLimit: number) => ({ source: 's', destination: 'd', name: 'n', ...sourceHopLimit(hopLimit), messageId: 1, ackRequested: false, payload: Uint8Array.of(1, 2) })
    const travelled = (hopLimit: number, relays: number) => {
      const sent = frame(hopLimit)
      const decoded = decodeFrame(encodeFrame({ kind: 'data', data: { ...sent, hopLimit: sent.hopLimit - relays } }))
      return decoded.kind === 'data' ? hopsTravelled(decoded.data) : -1
    }
    expect(sourceHopLimit(16)).toEqual({ hopLimit: 16 })
    expect(encodeFrame({ kind: 'data', data: frame(16) })).toHaveLength(encodeFrame({ kind: 'data', data: { ...frame(16), initialHopLimit: 0 } }).length)
    // Two hops from sources of limits 4, 16, 40 and 255 (a destination counting from its own 16: 0, 2, 0, 0).
    for (const limit of [4, 16, 40, 255]) expect(travelled(limit, 2), `limit ${limit}`).toBe(2)
    // A frame that arrived with more than its source gave it (raised on the way): 0, never negative.
    expect(hopsTravelled({ hopLimit: 20, initialHopLimit: 8 })).toBe(0)
    expect(hopsTravelled({ hopLimit: 200 })).toBe(0)
  })

  it('a credit frame naming more flows than creditFlowsMax is refused', () => {
    const flows = Array.from({ length: 3 }, (_, i) => ({ source: 's', destination: `d${i}`, bytes: 65_536 }))
    const encoded = encodeFrame({ kind: 'credit', credit: { flows } })
    expect(decodeFrame(encoded, { creditFlowsMax: 3 })).toEqual({ kind: 'credit', credit: { flows } })
    expect(() => decodeFrame(encoded, { creditFlowsMax: 2 })).toThrow(WireError)
  })

  it('a probe is a few bytes on the wire (it is sent on every idle link)', () => {
    const encoded = encodeFrame({ kind: 'probe', probe: { nonce: 0xffff_ffff, reply: true } })
    expect(encoded.length).toBeLessThanOrEqual(12)
    expect(decodeFrame(encoded)).toEqual({ kind: 'probe', probe: { nonce: 0xffff_ffff, reply: true } })
  })

  it('never refuses what the core accepts: its longest names, ids and addresses, in 3-byte characters', () => {
    const longest = { destination: '€'.repeat(DEFAULT_LIMITS.nodeIdLengthMax), names: ['€'.repeat(DEFAULT_LIMITS.nameLengthMax)], addresses: ['€'.repeat(DEFAULT_LIMITS.addressLengthMax)] }
    const frame: Frame = { kind: 'update', update: { neighbourSlots: [], transSets: [], entries: [{ ...longest, seq: 2, nhops: 1, trans: -1 }] } }
    expect(decodeFrame(encodeFrame(frame))).toMatchObject({ update: { entries: [longest] } })
  })

  it('a truncated frame is refused with a WireError', () => {
    fc.assert(
      fc.property(frameArb, fc.nat(), (frame, cut) => {
        const encoded = encodeFrame(frame)
        const truncated = encoded.subarray(0, cut % Math.max(1, encoded.length))
        decodesSafely(truncated)
      }),
      runs(1_000),
    )
  })

  it('fuzz: 10,000 random byte strings and mutated valid frames decode to a frame or a WireError, quickly', () => {
    const started = performance.now()
    fc.assert(fc.property(fc.uint8Array({ maxLength: 512 }), (input) => decodesSafely(input)), runs(5_000))
    fc.assert(
      fc.property(frameArb, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }), fc.nat(), (frame, flips, splice) => {
        const mutated = encodeFrame(frame).slice()
        for (const [at, value] of flips) if (mutated.length > 0) mutated[at % mutated.length] = value
        decodesSafely(mutated)
        decodesSafely(new Uint8Array([...mutated.subarray(0, splice % (mutated.length + 1)), ...mutated]))
      }),
      runs(5_000),
    )
    expect(performance.now() - started).toBeLessThan(30_000)
  })
})
