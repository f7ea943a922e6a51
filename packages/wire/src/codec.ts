import type { RouteAdvert, UpdateMessage } from '@phoenix-overlay/core'
import { INITIAL_HOP_LIMIT_DEFAULT, WIRE_LIMITS, type WireLimits } from './constants.ts'
import { utf8Bytes } from './utf8.ts'
import { readCanonicalDataHeader } from './data-header.ts'
import { FRAME_DATA_TAG, PAYLOAD_TAG, readVarint32, varint32Width, varintEnd, writeVarint32 } from './data-format.ts'
import { writeDataFrame } from './data-head-writer.ts'
import { WireError } from './errors.ts'
import { Data as DataMessage, Frame as FrameMessage, Undeliverable as UndeliverableMessage, type RouteAdvert as AdvertMessage, type Update as UpdateWire } from './frames.generated.ts'

export interface DataFrame {
  source: string
  destination: string
  name: string
  hopLimit: number
  /** uint32, chosen by the source; echoed by the ack. */
  messageId: number
  ackRequested: boolean
  payload: Uint8Array
  /**
   * The hop limit the source gave the frame, carried only when it is not
   * INITIAL_HOP_LIMIT_DEFAULT (absent: that): the destination counts the hops a message travelled
   * from it, whatever the source's limit (it counted from its own, wrong when the two differ).
   * Written before the payload (field 8 before field 7, which protons would write after it), so
   * the payload stays the last field and a relay reads the header from a frame's first piece.
   */
  initialHopLimit?: number | undefined
}
/**
 * Hops a data frame travelled, from the hop limit it arrived with and the one its source gave it
 * (`initialHopLimit`, else INITIAL_HOP_LIMIT_DEFAULT); never negative (a frame that arrived with
 * more than it started with is one a node on the way raised: 0).
 */
export function hopsTravelled(header: Pick<DataFrame, 'hopLimit' | 'initialHopLimit'>): number {
  const initial = header.initialHopLimit ?? INITIAL_HOP_LIMIT_DEFAULT
  return initial - Math.min(header.hopLimit, initial)
}

/** The hop limit fields of a frame a source with hop limit `hopLimit` sends: `initialHopLimit` only when not the default. */
export function sourceHopLimit(hopLimit: number): Pick<DataFrame, 'hopLimit' | 'initialHopLimit'> {
  return hopLimit === INITIAL_HOP_LIMIT_DEFAULT ? { hopLimit } : { hopLimit, initialHopLimit: hopLimit }
}

/**
 * The initial hop limit a relay gives a frame it passes on with hop limit `forwardedHopLimit`,
 * when it is not the one the frame came with: a relay whose own hop limit is less than the frame
 * has left lowers the frame's to its own (the core's `forward`), and the initial one by as much,
 * so that `hopsTravelled` still counts the hops. `false` when it stays (one less hop limit: the
 * frame can be rewritten in place); `undefined` for the default, which is not carried.
 */
export function relayedInitialHopLimit(header: Pick<DataFrame, 'hopLimit' | 'initialHopLimit'>, forwardedHopLimit: number): number | undefined | false {
  const loweredBy = header.hopLimit - 1 - forwardedHopLimit
  if (loweredBy <= 0) return false
  const initial = Math.max((header.initialHopLimit ?? INITIAL_HOP_LIMIT_DEFAULT) - loweredBy, forwardedHopLimit)
  return initial === INITIAL_HOP_LIMIT_DEFAULT ? undefined : initial
}

/** Whether a data frame carries `initialHopLimit` (0 is as if absent: proto3 does not write it). */
export const carriesInitialHopLimit = (data: Pick<DataFrame, 'initialHopLimit'>): boolean => data.initialHopLimit !== undefined && data.initialHopLimit !== 0

const joined = ([head, payload]: [Uint8Array, Uint8Array]): Uint8Array => {
  const out = new Uint8Array(head.byteLength + payload.byteLength)
  out.set(head)
  out.set(payload, head.byteLength)
  return out
}

/** A data frame without its payload: what a relay reads of a frame it passes on. */
export type DataHeader = Omit<DataFrame, 'payload'>
/**
 * `decodeDataHeader`'s answer: the header, where the payload starts, and where the varint of the
 * hop limit that counts starts (for `rewriteHopLimitAt`), or -1 if it has none or was not noted.
 */
export interface DecodedDataHeader {
  header: DataHeader
  payloadStart: number
  hopLimitAt: number
}
export interface AckFrame {
  source: string
  destination: string
  hopLimit: number
  messageId: number
}
/**
 * Why a data frame was not delivered (the `undeliverable` frame's reason): no route, hop limit
 * spent, a full queue on the way, a name the destination does not own, a destination whose
 * consumer was full (`receiver-too-slow`) or absent (`no-consumer`), a node that was leaving,
 * or a neighbour whose connection closed with the frame still queued for it (`neighbour-down`).
 */
export type UndeliverableReason = 'no-route' | 'hop-limit' | 'queue-full' | 'no-such-name' | 'receiver-too-slow' | 'no-consumer' | 'leaving' | 'neighbour-down'
export interface UndeliverableFrame {
  source: string
  destination: string
  hopLimit: number
  messageId: number
  reason: UndeliverableReason
}
/** A liveness probe between neighbours (never forwarded): `reply` false asks, true answers with the same nonce. */
export interface ProbeFrame {
  nonce: number
  reply: boolean
}
/** Credit returned to the previous hop for one flow: `bytes` of its data frames left this node. */
export interface FlowCredit {
  source: string
  destination: string
  bytes: number
}
/** Per-flow credit (never forwarded): see FLOW_CREDIT_BYTES. */
export interface CreditFrame {
  flows: FlowCredit[]
}
export { WireError, type WireErrorCode } from './errors.ts'

export type Frame =
  | { kind: 'update'; update: UpdateMessage }
  | { kind: 'data'; data: DataFrame }
  | { kind: 'ack'; ack: AckFrame }
  | { kind: 'undeliverable'; undeliverable: UndeliverableFrame }
  | { kind: 'probe'; probe: ProbeFrame }
  | { kind: 'credit'; credit: CreditFrame }

const REASONS: Record<UndeliverableReason, UndeliverableMessage.Reason> = {
  'no-route': UndeliverableMessage.Reason.NO_ROUTE,
  'hop-limit': UndeliverableMessage.Reason.HOP_LIMIT,
  'queue-full': UndeliverableMessage.Reason.QUEUE_FULL,
  'no-such-name': UndeliverableMessage.Reason.NO_SUCH_NAME,
  'receiver-too-slow': UndeliverableMessage.Reason.RECEIVER_TOO_SLOW,
  'no-consumer': UndeliverableMessage.Reason.NO_CONSUMER,
  leaving: UndeliverableMessage.Reason.LEAVING,
  'neighbour-down': UndeliverableMessage.Reason.NEIGHBOUR_DOWN,
}
const REASON_OF = new Map(Object.entries(REASONS).map(([k, v]) => [v, k as UndeliverableReason]))
const EMPTY = new Uint8Array(0)
/** `decodeDataHeader`'s default: no limit overridden (WIRE_LIMITS as they are, no copy per call). */
const NO_OVERRIDES: Partial<WireLimits> = Object.freeze({})

function advertToWire(a: RouteAdvert): AdvertMessage {
  return {
    destination: a.destination,
    seq: a.seq,
    nhops: a.nhops,
    names: [...a.names],
    addresses: [...a.addresses],
    transPlusOne: a.trans + 1,
    signature: (a.signature ?? EMPTY) as Uint8Array<ArrayBuffer>,
  }
}

function updateToWire(u: UpdateMessage): UpdateWire {
  const wire: UpdateWire = { neighbourSlots: [...u.neighbourSlots], transSets: [...u.transSets] as Uint8Array<ArrayBuffer>[], entries: u.entries.map(advertToWire), lostNeighbours: [...(u.lostNeighbours ?? [])], planEnd: u.planEnd === true, allServed: u.allServed === true }
  if (u.hello !== undefined) wire.hello = u.hello.receiverSeq === undefined ? {} : { receiverSeq: u.hello.receiverSeq }
  return wire
}

/** Encodes one frame. Throws WireError FRAME_TOO_LARGE if it would exceed the frame limit (see splitUpdate). */
export function encodeFrame(frame: Frame, frameBytesMax: number = WIRE_LIMITS.frameBytesMax): Uint8Array {
  let message: FrameMessage
  switch (frame.kind) {
    case 'update':
      message = { update: updateToWire(frame.update) }
      break
    case 'data': {
      // The frames every node sends and re-encodes: written by hand when the writer takes the header.
      const written = writeDataFrame(frame.data, frameBytesMax, true)
      if (written !== undefined) return written
      // The initial hop limit before the payload, as the writer puts it (protons would put it after).
      if (carriesInitialHopLimit(frame.data)) return joined(encodeDataFramePieces(frame.data, frameBytesMax))
      message = { data: { ...frame.data, payload: frame.data.payload as Uint8Array<ArrayBuffer>, initialHopLimit: 0 } }
      break
    }
    case 'ack':
      message = { ack: frame.ack }
      break
    case 'undeliverable':
      message = { undeliverable: { ...frame.undeliverable, reason: REASONS[frame.undeliverable.reason] } }
      break
    case 'probe':
      message = { probe: { nonce: frame.probe.nonce, reply: frame.probe.reply } }
      break
    case 'credit':
      message = { credit: { flows: frame.credit.flows.map((f) => ({ source: f.source, destination: f.destination, bytes: f.bytes })) } }
      break
  }
  const bytes = FrameMessage.encode(message)
  if (bytes.length > frameBytesMax) throw new WireError('FRAME_TOO_LARGE', `${frame.kind} frame is ${bytes.length} bytes, more than frameBytesMax (${frameBytesMax})`)
  return bytes
}

/**
 * A data frame as two pieces: everything up to the payload's bytes (a small buffer), and the
 * payload itself, not copied. Byte for byte what `encodeFrame` gives (the payload is the last
 * field), so any decoder reads it. Whoever holds the pieces holds the caller's payload: it must
 * not change until they are written (the transport's `send(…, { transfer: true })`).
 */
export function encodeDataFramePieces(data: DataFrame, frameBytesMax: number = WIRE_LIMITS.frameBytesMax): [Uint8Array, Uint8Array] {
  const written = writeDataFrame(data, frameBytesMax, false)
  if (written !== undefined) return [written, data.payload]
  // A header the writer does not take (a character beyond ASCII, …): its fields by protons.
  const fields = DataMessage.encode({ ...data, payload: new Uint8Array(0), initialHopLimit: data.initialHopLimit ?? 0 })
  const payloadBytes = data.payload.byteLength
  const payloadHeadBytes = payloadBytes === 0 ? 0 : 1 + varint32Width(payloadBytes)
  const innerBytes = fields.byteLength + payloadHeadBytes + payloadBytes
  const outerHeadBytes = 1 + varint32Width(innerBytes)
  const total = outerHeadBytes + innerBytes
  if (total > frameBytesMax) throw new WireError('FRAME_TOO_LARGE', `data frame is ${total} bytes, more than frameBytesMax (${frameBytesMax})`)
  const head = new Uint8Array(total - payloadBytes)
  head[0] = FRAME_DATA_TAG
  writeVarint32(head, 1, innerBytes)
  head.set(fields, outerHeadBytes)
  if (payloadBytes > 0) {
    head[outerHeadBytes + fields.byteLength] = PAYLOAD_TAG
    writeVarint32(head, outerHeadBytes + fields.byteLength + 1, payloadBytes)
  }
  return [head, data.payload]
}

/** Decodes one frame of untrusted bytes, within `limits`. Throws only WireError. */
export function decodeFrame(bytes: Uint8Array, overrides: Partial<WireLimits> = {}): Frame {
  const limits: WireLimits = { ...WIRE_LIMITS, ...overrides }
  if (bytes.length > limits.frameBytesMax) throw new WireError('FRAME_TOO_LARGE', `frame is ${bytes.length} bytes, more than frameBytesMax (${limits.frameBytesMax})`)
  let decoded: FrameMessage
  try {
    decoded = FrameMessage.decode(bytes, {
      limits: {
        update: {
          neighbourSlots: limits.neighbourSlotsMax,
          lostNeighbours: limits.lostNeighboursMax,
          transSets: limits.transSetsMax,
          entries: limits.entriesPerUpdateMax,
          entries$: { names: limits.namesPerNodeMax, addresses: limits.addressesPerEntryMax },
        },
        credit: { flows: limits.creditFlowsMax },
      },
    })
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    throw new WireError(/too many elements/.test(message) ? 'LIMIT_EXCEEDED' : 'MALFORMED', `cannot decode frame: ${message}`)
  }
  const kinds = (['update', 'data', 'ack', 'undeliverable', 'probe', 'credit'] as const).filter((k) => decoded[k] !== undefined)
  if (kinds.length !== 1) throw new WireError('MALFORMED', `a frame must hold exactly one of update, data, ack, undeliverable, probe, credit; it holds ${kinds.length === 0 ? 'none' : kinds.join(' and ')}`)
  const check = new Checker(limits)
  if (decoded.update !== undefined) return { kind: 'update', update: check.update(decoded.update) }
  if (decoded.data !== undefined) {
    const d = decoded.data
    return { kind: 'data', data: { ...check.dataHeader(d, d.payload.length), payload: d.payload } }
  }
  if (decoded.ack !== undefined) {
    const a = decoded.ack
    check.id('ack.source', a.source)
    check.id('ack.destination', a.destination)
    check.max('ack.hopLimit', a.hopLimit, limits.hopLimitMax)
    return { kind: 'ack', ack: { source: a.source, destination: a.destination, hopLimit: a.hopLimit, messageId: a.messageId } }
  }
  if (decoded.probe !== undefined) return { kind: 'probe', probe: { nonce: decoded.probe.nonce, reply: decoded.probe.reply } }
  if (decoded.credit !== undefined) {
    const flows = decoded.credit.flows.map((f, i): FlowCredit => {
      check.id(`credit.flows[${i}].source`, f.source)
      check.id(`credit.flows[${i}].destination`, f.destination)
      return { source: f.source, destination: f.destination, bytes: f.bytes }
    })
    return { kind: 'credit', credit: { flows } }
  }
  const u = decoded.undeliverable!
  check.id('undeliverable.source', u.source)
  check.id('undeliverable.destination', u.destination)
  check.max('undeliverable.hopLimit', u.hopLimit, limits.hopLimitMax)
  const reason = REASON_OF.get(u.reason)
  if (reason === undefined) throw new WireError('MALFORMED', `undeliverable.reason ${String(u.reason)} is not a known reason`)
  return { kind: 'undeliverable', undeliverable: { source: u.source, destination: u.destination, hopLimit: u.hopLimit, messageId: u.messageId, reason } }
}

class Checker {
  constructor(private readonly limits: WireLimits) {}

  dataHeader(d: Omit<DataMessage, 'payload'>, payloadBytes: number): DataHeader {
    const limits = this.limits
    this.id('data.source', d.source)
    this.id('data.destination', d.destination)
    this.text('data.name', d.name, limits.nameBytesMax, true)
    this.max('data.hopLimit', d.hopLimit, limits.hopLimitMax)
    this.max('data.initialHopLimit', d.initialHopLimit, limits.hopLimitMax)
    this.max('data.payload bytes', payloadBytes, limits.payloadBytesMax)
    const header: DataHeader = { source: d.source, destination: d.destination, name: d.name, hopLimit: d.hopLimit, messageId: d.messageId, ackRequested: d.ackRequested }
    if (d.initialHopLimit !== 0) header.initialHopLimit = d.initialHopLimit
    return header
  }

  max(field: string, value: number, max: number): void {
    if (value > max) throw new WireError('LIMIT_EXCEEDED', `${field} is ${value}, more than ${max}`)
  }

  /** A string field, measured in the UTF-8 bytes it took on the wire. */
  text(field: string, value: string, maxBytes: number, allowEmpty = false): void {
    // Each UTF-16 unit is 1 to 3 UTF-8 bytes: only strings near the limit need counting.
    if (value.length * 3 > maxBytes) {
      const bytes = utf8Bytes(value)
      if (bytes > maxBytes) throw new WireError('LIMIT_EXCEEDED', `${field} is ${bytes} bytes of UTF-8, more than ${maxBytes}`)
    }
    if (!allowEmpty && value.length === 0) throw new WireError('MALFORMED', `${field} is empty`)
  }

  id(field: string, value: string): void {
    this.text(field, value, this.limits.nodeIdBytesMax)
  }

  update(u: UpdateWire): UpdateMessage {
    const slots = u.neighbourSlots.length
    u.neighbourSlots.forEach((id, i) => this.text(`update.neighbourSlots[${i}]`, id, this.limits.nodeIdBytesMax, true))
    u.transSets.forEach((set, i) => this.max(`update.transSets[${i}] bytes`, set.length, Math.ceil(slots / 8)))
    const entries = u.entries.map((e, i): RouteAdvert => {
      const at = `update.entries[${i}]`
      this.id(`${at}.destination`, e.destination)
      this.max(`${at}.nhops`, e.nhops, this.limits.nhopsMax)
      e.names.forEach((n, j) => this.text(`${at}.names[${j}]`, n, this.limits.nameBytesMax))
      e.addresses.forEach((a, j) => this.text(`${at}.addresses[${j}]`, a, this.limits.addressBytesMax))
      this.max(`${at}.signature bytes`, e.signature.length, this.limits.signatureBytesMax)
      if (e.transPlusOne > u.transSets.length) throw new WireError('MALFORMED', `${at}.trans refers to trans set ${e.transPlusOne - 1}, but there are ${u.transSets.length}`)
      return { destination: e.destination, seq: e.seq, nhops: e.nhops, names: e.names, addresses: e.addresses, trans: e.transPlusOne - 1, signature: e.signature }
    })
    u.lostNeighbours.forEach((id, i) => this.id(`update.lostNeighbours[${i}]`, id))
    return {
      neighbourSlots: u.neighbourSlots,
      transSets: u.transSets,
      entries,
      ...(u.hello !== undefined ? { hello: { receiverSeq: u.hello.receiverSeq } } : {}),
      ...(u.lostNeighbours.length > 0 ? { lostNeighbours: u.lostNeighbours } : {}),
      ...(u.planEnd ? { planEnd: true as const } : {}),
      ...(u.allServed ? { allServed: true as const } : {}),
    }
  }
}


/**
 * Decodes a data frame's header (every field but the payload) from `head`, the first bytes of a
 * frame of `frameBytes` bytes whose rest may sit elsewhere (a frame that arrived in several
 * pieces): a relay reads what it needs without joining the pieces, i.e. without copying the
 * payload. The payload must be the frame's last field, as `encodeFrame` writes it; it is at
 * `[payloadStart, frameBytes)`. Undefined when that cannot be read from `head` alone (not a data
 * frame, a header longer than `head`, fields in another order): then decode the joined frame
 * with `decodeFrame`. Throws WireError as `decodeFrame` does for a header it can read.
 */
export function decodeDataHeader(head: Uint8Array, frameBytes: number, overrides: Partial<WireLimits> = NO_OVERRIDES): DecodedDataHeader | undefined {
  const limits: WireLimits = overrides === NO_OVERRIDES ? WIRE_LIMITS : { ...WIRE_LIMITS, ...overrides }
  if (frameBytes > limits.frameBytesMax) throw new WireError('FRAME_TOO_LARGE', `frame is ${frameBytes} bytes, more than frameBytesMax (${limits.frameBytesMax})`)
  if (head[0] !== FRAME_DATA_TAG) return undefined
  const length = readVarint32(head, 1, head.length)
  if (length < 0) return undefined
  const dataStart = varintEnd
  if (dataStart + length !== frameBytes) return undefined
  return readCanonicalDataHeader(head, dataStart, frameBytes, limits) ?? decodeDataHeaderFields(head, dataStart, frameBytes, limits)
}

/** `decodeDataHeader` past the frame's tag and length, with protons and the Checker: any encoding, every error naming its field. */
export function decodeDataHeaderFields(head: Uint8Array, dataStart: number, frameBytes: number, limits: WireLimits): DecodedDataHeader | undefined {
  for (let at = dataStart; at < head.length; ) {
    const tag = readVarint32(head, at, head.length)
    if (tag < 0) return undefined
    if (tag === PAYLOAD_TAG) {
      const payloadBytes = readVarint32(head, varintEnd, head.length)
      if (payloadBytes < 0) return undefined
      const payloadStart = varintEnd
      if (payloadStart + payloadBytes !== frameBytes) return undefined
      let fields: DataMessage
      try {
        fields = DataMessage.decode(head.subarray(dataStart, at))
      } catch (error) {
        throw new WireError('MALFORMED', `cannot decode frame: ${error instanceof Error ? error.message : String(error)}`)
      }
      return { header: new Checker(limits).dataHeader(fields, payloadBytes), payloadStart, hopLimitAt: -1 }
    }
    const next = skipField(head, varintEnd, tag)
    if (next === undefined) return undefined
    at = next
  }
  return undefined
}

/** The offset after a field whose tag (`tag`, already read) ends at `at`, if it lies within `bytes`; varint and length-delimited fields only (Data has no others). */
function skipField(bytes: Uint8Array, at: number, tag: number): number | undefined {
  const wireType = tag & 7
  if (wireType !== 0 && wireType !== 2) return undefined
  const value = readVarint32(bytes, at, bytes.length)
  if (value < 0) return undefined
  const end = wireType === 0 ? varintEnd : varintEnd + value
  return end <= bytes.length ? end : undefined
}
