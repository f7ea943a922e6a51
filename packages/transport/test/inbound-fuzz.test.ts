import { generateKeyPair } from '@libp2p/crypto/keys'
import type { Connection, PrivateKey, Stream } from '@libp2p/interface'
import { defaultLogger } from '@libp2p/logger'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { LengthPrefixedDecoder } from '@libp2p/utils'
import { recordPayload, type RouteAdvert, type RouteView } from '@phoenix-overlay/core'
import { WIRE_LIMITS, decodeFrame, encodeFrame, type Frame } from '@phoenix-overlay/wire'
import fc from 'fast-check'
import * as varint from 'uint8-varint'
import { beforeAll, describe, expect, it } from 'vitest'
import { PhoenixNode, type PeerDropped, type PhoenixComponents } from '../src/index.ts'
import { corkedWhile } from '../src/link.ts'
import { FakeStream, concat } from './fake-node.ts'

// A fast-check fuzz of a live node's inbound handler: the bytes one neighbour sends, through the
// real NeighbourLink framing, frame decoding and routing core, without sockets. The seed is printed;
// replay with PHOENIX_SEED=<n>. PHOENIX_FUZZ_RUNS changes the number of cases (default 5,000, below).
const seed = Number(process.env.PHOENIX_SEED ?? Date.now() % 2 ** 31)
// 5,000 by default (10,000 took 92 s of a loaded full run, 55 s alone, since per-flow credit); PHOENIX_FUZZ_RUNS=100000 for a deep run.
const numRuns = Number(process.env.PHOENIX_FUZZ_RUNS ?? 5_000)
console.log(`fast-check seed for the inbound handler fuzz: ${seed} (replay with PHOENIX_SEED=${seed}), ${numRuns} cases`)

/** Small, so that a flood is a few frames; a legitimate peer here can introduce at most 4 destinations with 2 names each. */
const DESTINATIONS_PER_NEIGHBOUR_MAX = 5
const NAMES_PER_NEIGHBOUR_MAX = 8
const OUR_NAME = 'mine'

interface Catalogue {
  nodeKey: PrivateKey
  nodeId: string
  peerKey: PrivateKey
  peerId: string
  /** Node ids whose keys we hold: the neighbour, two other nodes, and the node under test. */
  signerIds: string[]
  /** Correctly signed records of those nodes: several sequence numbers, names and addresses each. */
  records: RouteAdvert[]
}

let catalogue: Catalogue

beforeAll(async () => {
  const keys = await Promise.all([0, 1, 2, 3].map(() => generateKeyPair('Ed25519')))
  const ids = keys.map((k) => peerIdFromPrivateKey(k).toString())
  const records: RouteAdvert[] = []
  keys.forEach((key, k) => {
    for (const seq of [0, 2, 4]) {
      for (const names of [[], [`svc-${k}`], [`svc-${k}`, 'shared']]) {
        for (const addresses of [[], [`/ip4/10.0.0.${k + 1}/tcp/7000`]]) {
          const signature = key.sign(recordPayload(ids[k]!, seq, names, addresses)) as Uint8Array
          records.push({ destination: ids[k]!, seq, nhops: 0, names, addresses, trans: -1, signature })
        }
      }
    }
  })
  catalogue = { nodeKey: keys[3]!, nodeId: ids[3]!, peerKey: keys[0]!, peerId: ids[0]!, signerIds: ids, records }
})

// ------------------------------------------------------------------ what the neighbour sends

type Intent = 'valid' | 'refused' | 'mutated' | 'raw' | 'bad-length'
interface Piece {
  intent: Intent
  /** The frame inside the length prefix (undefined for raw bytes and a bad prefix). */
  frame: Uint8Array | undefined
  bytes: Uint8Array
}

const prefixed = (frame: Uint8Array): Uint8Array => {
  const prefix = varint.encode(frame.length)
  const out = new Uint8Array(prefix.length + frame.length)
  out.set(prefix)
  out.set(frame, prefix.length)
  return out
}

const uint32 = fc.integer({ min: 0, max: 2 ** 32 - 1 })
const someId = fc.oneof(
  fc.constantFrom(0, 1, 2, 3).map((k) => catalogue.signerIds[k]!),
  fc.string({ minLength: 1, maxLength: 12 }).map((s) => `stranger-${s}`),
)

/**
 * A correctly signed entry from the catalogue, at its even seq or retracted (seq + 1, same
 * signature); at 0 hops only the neighbour's own record or a retraction (anyone else at 0 hops
 * drops the neighbour: the core README, "Distance is not signed").
 */
const validEntry: fc.Arbitrary<RouteAdvert> = fc
  .record({ pick: fc.nat(), retract: fc.boolean(), nhops: fc.integer({ min: 0, max: 6 }) })
  .map(({ pick, retract, nhops }) => {
    const record = catalogue.records[pick % catalogue.records.length]!
    const atZero = retract || record.destination === catalogue.peerId
    return { ...record, seq: record.seq + (retract ? 1 : 0), nhops: nhops === 0 && !atZero ? 1 : nhops }
  })

/** Valid updates, some with a hello claiming any number of the node's record (an unsigned claim it must not believe). */
const validUpdate: fc.Arbitrary<Frame> = fc
  .record({ entries: fc.array(validEntry, { minLength: 1, maxLength: 3 }), hello: fc.option(fc.option(uint32, { nil: undefined }), { nil: null }) })
  .map(({ entries, hello }) => ({ kind: 'update', update: { neighbourSlots: [], transSets: [], entries, ...(hello === null ? {} : { hello: { receiverSeq: hello } }) } }))

const validTraffic: fc.Arbitrary<Frame> = fc.oneof(
  fc
    .record({
      source: someId,
      destination: fc.oneof(someId, fc.constant('').map(() => catalogue.nodeId)), // half of them for us
      name: fc.constantFrom('', OUR_NAME, 'svc-1', 'nobody'),
      hopLimit: fc.integer({ min: 0, max: 20 }),
      messageId: uint32,
      ackRequested: fc.boolean(),
      payload: fc.uint8Array({ maxLength: 64 }),
    })
    .map((data): Frame => ({ kind: 'data', data })),
  fc.record({ source: someId, destination: someId, hopLimit: fc.integer({ min: 0, max: 20 }), messageId: uint32 }).map((ack): Frame => ({ kind: 'ack', ack })),
  fc
    .record({ source: someId, destination: someId, hopLimit: fc.integer({ min: 0, max: 20 }), messageId: uint32, reason: fc.constantFrom('no-route', 'hop-limit', 'queue-full', 'no-such-name' as const) })
    .map((undeliverable): Frame => ({ kind: 'undeliverable', undeliverable })),
)

/** Frames that decode but that the node must refuse, each by a different defence. */
const refusedUpdate: fc.Arbitrary<Frame> = fc
  .record({
    attack: fc.constantFrom('forged-signature', 'unsigned', 'signature-of-another-record', 'stolen-seq', 'duplicate-names', 'flood', 'names-flood'),
    entry: validEntry,
    other: validEntry,
    bytes: fc.uint8Array({ minLength: 64, maxLength: 64 }),
    nonce: fc.nat(),
  })
  .map(({ attack, entry, other, bytes, nonce }): Frame => {
    let entries: RouteAdvert[]
    switch (attack) {
      case 'forged-signature':
        entries = [{ ...entry, signature: bytes }]
        break
      case 'unsigned':
        entries = [{ ...entry, signature: new Uint8Array(0) }]
        break
      case 'signature-of-another-record':
        // Someone else's valid signature, or this node's own for other names: never for this payload.
        entries = [{ ...entry, names: [...entry.names, 'stolen'], signature: other.signature! }]
        break
      case 'stolen-seq':
        // A fresher sequence number for someone else's record, keeping the old signature.
        entries = [{ ...entry, seq: entry.seq + 2 }]
        break
      case 'duplicate-names':
        entries = [{ ...entry, names: ['twice', 'twice'] }]
        break
      case 'flood':
        entries = Array.from({ length: DESTINATIONS_PER_NEIGHBOUR_MAX + 1 }, (_, i) => ({ ...entry, destination: `fake-${nonce}-${i}` }))
        break
      case 'names-flood':
        entries = [{ ...entry, destination: `fake-${nonce}`, names: Array.from({ length: NAMES_PER_NEIGHBOUR_MAX + 1 }, (_, i) => `name-${i}`) }]
        break
    }
    return { kind: 'update', update: { neighbourSlots: [], transSets: [], entries } }
  })

const mutation = fc.oneof(
  fc.record({ op: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ op: fc.constant('set' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ op: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ op: fc.constant('insert' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ op: fc.constant('delete' as const), at: fc.nat() }),
)
type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never

function mutate(frame: Uint8Array, mutations: readonly Mutation[]): Uint8Array {
  let bytes = Array.from(frame)
  for (const m of mutations) {
    const at = bytes.length === 0 ? 0 : m.at % bytes.length
    if (m.op === 'flip' && bytes.length > 0) bytes[at] = bytes[at]! ^ (1 << m.bit)
    else if (m.op === 'set' && bytes.length > 0) bytes[at] = m.value
    else if (m.op === 'truncate') bytes = bytes.slice(0, at)
    else if (m.op === 'insert') bytes.splice(at, 0, m.value)
    else if (m.op === 'delete') bytes.splice(at, 1)
  }
  return Uint8Array.from(bytes)
}

const validPiece = fc.oneof(validUpdate, validTraffic).map((f): Piece => ({ intent: 'valid', frame: encodeFrame(f), bytes: prefixed(encodeFrame(f)) }))
const refusedPiece = refusedUpdate.map((f): Piece => ({ intent: 'refused', frame: encodeFrame(f), bytes: prefixed(encodeFrame(f)) }))
const mutatedPiece = fc.record({ frame: fc.oneof(validUpdate, validTraffic, refusedUpdate), mutations: fc.array(mutation, { minLength: 1, maxLength: 3 }) }).map(({ frame, mutations }): Piece => {
  const bytes = mutate(encodeFrame(frame), mutations)
  return { intent: 'mutated', frame: bytes, bytes: prefixed(bytes) }
})
const rawPiece = fc.uint8Array({ minLength: 1, maxLength: 48 }).map((bytes): Piece => ({ intent: 'raw', frame: undefined, bytes }))
const badLengthPiece = fc.integer({ min: WIRE_LIMITS.frameBytesMax + 1, max: 2 ** 31 }).map((length): Piece => ({ intent: 'bad-length', frame: undefined, bytes: varint.encode(length) }))

/** A well-behaved neighbour, one whose frames were damaged on the way (some still decode), and one sending anything. */
const pieces = fc.oneof(
  fc.array(validPiece, { minLength: 1, maxLength: 8 }),
  fc.array(fc.oneof({ weight: 3, arbitrary: validPiece }, { weight: 2, arbitrary: mutatedPiece }), { minLength: 1, maxLength: 8 }),
  fc.array(fc.oneof({ weight: 4, arbitrary: validPiece }, { weight: 2, arbitrary: refusedPiece }, { weight: 3, arbitrary: mutatedPiece }, rawPiece, badLengthPiece), { minLength: 1, maxLength: 8 }),
)

const scenario = fc.record({
  pieces,
  /** Where the byte stream is cut into deliveries (fractions of its length). */
  cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }),
})

// ------------------------------------------------------------------ a node with fake components

interface Harness {
  node: PhoenixNode
  stream: FakeStream
  dropped: PeerDropped[]
  delivered: number
}

async function startNode(): Promise<Harness> {
  let handler: ((stream: Stream, connection: Connection) => void) | undefined
  const components = {
    peerId: peerIdFromPrivateKey(catalogue.nodeKey),
    privateKey: catalogue.nodeKey,
    registrar: {
      handle: async (_protocol: string, h: (stream: Stream, connection: Connection) => void) => {
        handler = h
      },
      unhandle: async () => {},
    },
    connectionManager: { openConnection: async () => Promise.reject(new Error('this test has no network')) },
    addressManager: { getAddresses: () => [] },
    logger: defaultLogger(),
    events: new EventTarget(),
  } as unknown as PhoenixComponents
  const node = new PhoenixNode(components, { names: [OUR_NAME], timing: { leaveLingerMaxMs: 0 }, core: { limits: { destinationsPerNeighbourMax: DESTINATIONS_PER_NEIGHBOUR_MAX, namesPerNeighbourMax: NAMES_PER_NEIGHBOUR_MAX } } })
  await node.start()
  node.afterStart()
  const harness: Harness = { node, stream: new FakeStream(), dropped: [], delivered: 0 }
  node.addEventListener('peer:dropped', (event) => harness.dropped.push(event.detail))
  node.addEventListener('message', () => harness.delivered++)
  handler!(harness.stream as unknown as Stream, { remotePeer: peerIdFromPrivateKey(catalogue.peerKey) } as unknown as Connection)
  await settle()
  return harness
}

/** Lets the node's scheduled work run (it drains on setImmediate; failed dials settle on promises). */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve))
}

const routesOf = (node: PhoenixNode): RouteView[] => [...node.routes()].sort((a, b) => (a.destination < b.destination ? -1 : 1))


const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex')

/** What the node wrote: every frame but credit, as hex in order; credit, as the bytes returned per flow. */
function splitCredit(chunks: readonly Uint8Array[]): { other: string; credit: Record<string, number> } {
  const decoder = new LengthPrefixedDecoder({ maxDataLength: WIRE_LIMITS.frameBytesMax, maxBufferSize: Number.MAX_SAFE_INTEGER })
  const other: Uint8Array[] = []
  const credit: Record<string, number> = {}
  for (const chunk of chunks) {
    for (const list of decoder.decode(chunk)) {
      const frame = list.subarray()
      const decoded = decodeFrame(frame)
      if (decoded.kind !== 'credit') other.push(frame)
      else for (const flow of decoded.credit.flows) credit[`${flow.source} ${flow.destination}`] = (credit[`${flow.source} ${flow.destination}`] ?? 0) + flow.bytes
    }
  }
  return { other: hex(concat(other)), credit }
}

/** Frames of `kinds` the node wrote (acks, bounces and credit are answers: at most one per frame received). */
function written(chunks: readonly Uint8Array[], kinds: readonly Frame['kind'][]): number {
  const decoder = new LengthPrefixedDecoder({ maxDataLength: WIRE_LIMITS.frameBytesMax, maxBufferSize: Number.MAX_SAFE_INTEGER })
  let count = 0
  for (const chunk of chunks) for (const frame of decoder.decode(chunk)) if (kinds.includes(decodeFrame(frame.subarray()).kind)) count++
  return count
}

describe("a node's inbound handler under random and mutated frames (fast-check)", () => {
  it(`never crashes, stays bounded, and drops a misbehaving neighbour at the first bad frame (${numRuns} cases)`, async () => {
    // What the cases exercised, printed so a generator that stopped producing some kind shows.
    const tally = { mustDrop: 0, mustKeep: 0, eitherWay: 0, dropped: 0, routesLearned: 0, recordsVerified: 0, delivered: 0, byKind: {} as Record<string, number> }
    await fc.assert(
      fc.asyncProperty(scenario, async ({ pieces, cuts }) => {
        const bytes = concat(pieces.map((p) => p.bytes))

        // What the neighbour said, frame by frame, by the protocol's definition: a varint length
        // prefix, then a frame that must decode. Known pieces tell what each decodable frame is.
        const intentOf = new Map<string, Intent>()
        for (const p of pieces) if (p.frame !== undefined && (p.intent === 'valid' || p.intent === 'refused')) intentOf.set(hex(p.frame), p.intent)
        const reference = new LengthPrefixedDecoder({ maxDataLength: WIRE_LIMITS.frameBytesMax, maxBufferSize: Number.MAX_SAFE_INTEGER })
        const frames: Uint8Array[] = []
        let framingBroken = false
        try {
          for (const frame of reference.decode(bytes)) frames.push(frame.subarray())
        } catch {
          framingBroken = true
        }
        // Where libp2p's decoder waits for good on a length prefix past 8 bytes, ours refuses it
        // (frame-decoder.ts): the bytes after the last frame start with 8 continuation bytes.
        const consumed = frames.reduce((sum, f) => sum + varint.encodingLength(f.length) + f.length, 0)
        const rest = bytes.subarray(consumed)
        if (!framingBroken && rest.length >= 8 && rest.subarray(0, 8).every((b) => b >= 0x80)) framingBroken = true
        let undecodableAt: number | undefined
        let refused = false
        let allKnownValid = true
        for (let i = 0; i < frames.length; i++) {
          try {
            decodeFrame(frames[i]!)
          } catch {
            undecodableAt = i
            break
          }
          const intent = intentOf.get(hex(frames[i]!))
          if (intent === 'refused') refused = true
          if (intent !== 'valid') allKnownValid = false
        }
        const mustDrop = framingBroken || undecodableAt !== undefined || refused
        const mustKeep = !mustDrop && allKnownValid
        tally[mustDrop ? 'mustDrop' : mustKeep ? 'mustKeep' : 'eitherWay']++

        // The node under test gets the raw bytes, cut at random places. A control node with the
        // same key gets the same frames one by one, cleanly framed, up to the first undecodable.
        const fuzzed = await startNode()
        const control = await startNode()
        const positions = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b)
        // All within one run of code, as the links see one turn of the event loop: what the
        // frames before a bad one queued is written when the run ends, on both nodes alike (by
        // then the bad frame has closed the link), however the bytes were cut.
        corkedWhile(() => {
          let from = 0
          for (const at of [...positions, bytes.length]) {
            if (at > from) fuzzed.stream.deliver(bytes.subarray(from, at))
            from = Math.max(from, at)
          }
        })
        corkedWhile(() => {
          for (const frame of frames.slice(0, undecodableAt === undefined ? frames.length : undecodableAt + 1)) control.stream.deliver(prefixed(frame))
          if (framingBroken && undecodableAt === undefined) control.stream.emitClose()
        })
        await settle()

        // Dropped = disconnected for misbehaving (a peer:dropped event). A neighbour can also go
        // without misbehaving: a valid update withdrawing its own route is its leave, after which
        // we close our side too; then it is gone without a drop, on both nodes alike.
        const isDropped = (h: Harness) => h.dropped.length > 0
        const disconnected = (h: Harness) => h.node.peers().length === 0
        // No crash: reaching here means nothing was thrown out of the handler; drains are checked by settle().
        if (mustDrop) expect(isDropped(fuzzed), 'a bad frame must disconnect the neighbour').toBe(true)
        if (mustKeep) expect(isDropped(fuzzed), `a well-behaved neighbour was dropped: ${fuzzed.dropped[0]?.reason}`).toBe(false)
        // Nothing after the first bad frame had an effect, and chunking changed nothing: the
        // node ends exactly like the control, which never saw anything past it.
        expect(isDropped(fuzzed)).toBe(isDropped(control) || framingBroken)
        expect(disconnected(fuzzed)).toBe(disconnected(control) || framingBroken)
        if (isDropped(fuzzed)) expect(disconnected(fuzzed)).toBe(true)
        expect(routesOf(fuzzed.node)).toEqual(routesOf(control.node))
        expect(fuzzed.delivered).toBe(control.delivered)
        // The same answers in the same order; credit comes back on its own turn of the event loop
        // (its place among the updates varies), so it is compared as the total per flow.
        const fuzzedOut = splitCredit(fuzzed.stream.written)
        const controlOut = splitCredit(control.stream.written)
        expect(fuzzedOut.other).toBe(controlOut.other)
        expect(fuzzedOut.credit).toEqual(controlOut.credit)
        // A drop is said once, with a reason, in the event, the metric and the stream's abort.
        if (isDropped(fuzzed)) {
          expect(fuzzed.dropped).toHaveLength(1)
          expect(fuzzed.dropped[0]!.reason.length).toBeGreaterThan(0)
          expect(fuzzed.stream.aborted).toBe(fuzzed.dropped[0]!.reason)
          expect(fuzzed.node.metricsText()).toMatch(/^phoenix_peers_dropped_total 1$/m)
        } else expect(fuzzed.dropped).toEqual([])
        // Bounded: the table (other nodes only) holds at most what one neighbour may introduce, and
        // the node wrote no more traffic frames than it received frames.
        expect(fuzzed.node.routes().length).toBeLessThanOrEqual(DESTINATIONS_PER_NEIGHBOUR_MAX)
        expect(written(fuzzed.stream.written, ['data', 'ack', 'undeliverable', 'probe'])).toBeLessThanOrEqual(frames.length)
        // Credit for the data frames it took: at most one credit frame per data frame, usually one per turn of the event loop.
        expect(written(fuzzed.stream.written, ['credit'])).toBeLessThanOrEqual(frames.length)
        if (isDropped(fuzzed)) {
          tally.dropped++
          const kind = `${fuzzed.dropped[0]!.kind}: ${fuzzed.dropped[0]!.reason.replace(/^peer \S+ dropped: /, '').split(/[:(0-9]/)[0]!.trim()}`
          tally.byKind[kind] = (tally.byKind[kind] ?? 0) + 1
        }
        tally.routesLearned += fuzzed.node.routes().length
        tally.recordsVerified += Number(/^phoenix_core_records_verified_total (\d+)$/m.exec(fuzzed.node.metricsText())![1])
        tally.delivered += fuzzed.delivered
        await Promise.all([fuzzed.node.stop(), control.node.stop()])
      }),
      { seed, numRuns },
    )
    console.log(`inbound fuzz: ${JSON.stringify(tally, null, 1)}`)
    // The generator must reach every branch: drops of both kinds, kept peers, learned routes, deliveries.
    expect(Math.min(tally.mustDrop, tally.mustKeep, tally.eitherWay, tally.routesLearned, tally.recordsVerified, tally.delivered)).toBeGreaterThan(0)
  }, 600_000)
})
