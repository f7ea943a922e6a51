/**
 * A data frame written without the generic protobuf encoder, the mirror of data-header.ts's
 * reader, for the frames a node sends (issue 19: a sender's and a relay's latency is about how
 * much code and memory they touch per frame). Protons builds a writer, a list of operations and a
 * spread copy of the frame per message; this counts the bytes, allocates once and writes. It
 * takes the headers nodes send: ASCII strings (peer ids, and names in practice), a hop limit and
 * a message id that are unsigned 32-bit integers, a boolean ack flag; for anything else it gives
 * undefined and the caller encodes with protons. Whatever it writes is byte for byte what protons
 * writes for the same frame (but for `initialHopLimit`'s place, below) (property-tested in test/data-head-writer.test.ts): proto3 leaves out
 * fields at their defaults ('', 0, false, an empty payload), and writes the rest in field order.
 */
import type { DataFrame } from './codec.ts'
import { ACK_REQUESTED_TAG, DESTINATION_TAG, FRAME_DATA_TAG, HOP_LIMIT_TAG, INITIAL_HOP_LIMIT_TAG, MESSAGE_ID_TAG, NAME_TAG, PAYLOAD_TAG, SOURCE_TAG, varint32Width, writeVarint32 } from './data-format.ts'
import { WireError } from './errors.ts'

/** Largest `Data` this writer measures with a 32-bit varint (protons' length prefix is one too); a longer one is left to protons. */
const DATA_BYTES_MAX = 0xffffffff

/** Whether every character of `s` is ASCII (then it is as many UTF-8 bytes as characters). */
function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false
  return true
}

/** Bytes of a string field (tag, length, characters) of `length` ASCII characters; none when empty. */
const stringFieldBytes = (length: number): number => (length === 0 ? 0 : 1 + varint32Width(length) + length)
/** Bytes of a varint field of `value`; none when 0. */
const varintFieldBytes = (value: number): number => (value === 0 ? 0 : 1 + varint32Width(value))

/** Writes a string field of ASCII `s` at `at` (nothing if it is empty); the offset after it. */
function writeAsciiField(out: Uint8Array, at: number, tag: number, s: string): number {
  if (s.length === 0) return at
  out[at++] = tag
  at = writeVarint32(out, at, s.length)
  for (let i = 0; i < s.length; i++) out[at + i] = s.charCodeAt(i)
  return at + s.length
}

/** Writes a varint field at `at` (nothing if `value` is 0); the offset after it. */
function writeVarintField(out: Uint8Array, at: number, tag: number, value: number): number {
  if (value === 0) return at
  out[at] = tag
  return writeVarint32(out, at + 1, value)
}

/**
 * The data frame `data` as `encodeFrame` encodes it: the whole frame (`withPayload`), or everything
 * up to the payload's bytes (the payload is the last field: the frame is this and the payload).
 * Undefined if a field is outside what this writer takes (see above): then encode with protons.
 * An `initialHopLimit` (field 8) is written before the payload (field 7), where protons would
 * write it after: the payload stays last (every decoder reads fields in any order).
 * Throws WireError FRAME_TOO_LARGE if the frame would be longer than `frameBytesMax`.
 */
export function writeDataFrame(data: DataFrame, frameBytesMax: number, withPayload: boolean): Uint8Array | undefined {
  const { source, destination, name, hopLimit, messageId, ackRequested, payload } = data
  const initialHopLimit = data.initialHopLimit ?? 0
  if (hopLimit >>> 0 !== hopLimit || messageId >>> 0 !== messageId || initialHopLimit >>> 0 !== initialHopLimit || (ackRequested !== true && ackRequested !== false)) return undefined
  if (!isAscii(source) || !isAscii(destination) || !isAscii(name)) return undefined
  const payloadBytes = payload.byteLength
  const fieldsBytes = stringFieldBytes(source.length) + stringFieldBytes(destination.length) + stringFieldBytes(name.length) + varintFieldBytes(hopLimit) + varintFieldBytes(messageId) + (ackRequested ? 2 : 0) + varintFieldBytes(initialHopLimit)
  const dataBytes = fieldsBytes + (payloadBytes === 0 ? 0 : 1 + varint32Width(payloadBytes) + payloadBytes)
  if (dataBytes > DATA_BYTES_MAX) return undefined
  const total = 1 + varint32Width(dataBytes) + dataBytes
  if (total > frameBytesMax) throw new WireError('FRAME_TOO_LARGE', `data frame is ${total} bytes, more than frameBytesMax (${frameBytesMax})`)
  const out = new Uint8Array(withPayload ? total : total - payloadBytes)
  out[0] = FRAME_DATA_TAG
  let at = writeVarint32(out, 1, dataBytes)
  at = writeAsciiField(out, at, SOURCE_TAG, source)
  at = writeAsciiField(out, at, DESTINATION_TAG, destination)
  at = writeAsciiField(out, at, NAME_TAG, name)
  at = writeVarintField(out, at, HOP_LIMIT_TAG, hopLimit)
  at = writeVarintField(out, at, MESSAGE_ID_TAG, messageId)
  if (ackRequested) {
    out[at++] = ACK_REQUESTED_TAG
    out[at++] = 1
  }
  at = writeVarintField(out, at, INITIAL_HOP_LIMIT_TAG, initialHopLimit)
  if (payloadBytes > 0) {
    out[at++] = PAYLOAD_TAG
    at = writeVarint32(out, at, payloadBytes)
    if (withPayload) {
      out.set(payload, at)
      at += payloadBytes
    }
  }
  if (at !== out.length) throw new Error(`invariant: a data frame of ${out.length} bytes was written as ${at}`)
  return out
}
