/**
 * A data frame's header read without the generic protobuf decoder, for the frames a relay passes
 * on (issue 19: a relay's added latency is about how much code and memory it touches per frame,
 * since latency probes reach processes that slept 1-5 ms). It reads only the encoding `encodeFrame`
 * writes: fields 1-6 and 8, each with its own wire type (so a one-byte tag), strings of ASCII
 * characters, then the payload as the last field. Anything else (an unknown field or wire type, a
 * non-ASCII string, a length protons reads differently, a limit exceeded) is left to the generic path (`decodeDataHeader` in codec.ts: protons
 * and its Checker), which decodes it or refuses it with the error naming the field: whenever this
 * reader gives a header, the generic path gives the same one (property-tested in
 * test/data-header.test.ts), so no frame is accepted here that the generic path would refuse.
 */
import type { WireLimits } from './constants.ts'
import type { DataHeader, DecodedDataHeader } from './codec.ts'

import { ACK_REQUESTED_TAG, DESTINATION_TAG, HOP_LIMIT_TAG, INITIAL_HOP_LIMIT_TAG, MESSAGE_ID_TAG, NAME_TAG, PAYLOAD_TAG, SOURCE_TAG, readVarint32, varintEnd } from './data-format.ts'

/**
 * Recently read strings (peer ids, names), handed out again for the same bytes: a relay sees the
 * same few sources, destinations and names frame after frame, and one string instance per id
 * means no new string per frame and its hash computed once for every Map it is looked up in.
 * Strings only, compared character by character with the bytes: no bytes are kept.
 */
const RECENT_STRINGS = 16
const recent: string[] = Array.from({ length: RECENT_STRINGS }, () => '')
let recentNext = 0

/** The ASCII string of `bytes[at, at + length)`, from `recent` if it is there; undefined if a byte is not ASCII. */
function asciiString(bytes: Uint8Array, at: number, length: number): string | undefined {
  if (length === 0) return ''
  for (let i = 0; i < RECENT_STRINGS; i++) {
    const s = recent[i]!
    if (s.length === length && sameAscii(s, bytes, at)) return s
  }
  for (let i = at; i < at + length; i++) if (bytes[i]! >= 0x80) return undefined
  const s = String.fromCharCode.apply(null, bytes.subarray(at, at + length) as unknown as number[])
  recent[recentNext] = s
  recentNext = (recentNext + 1) % RECENT_STRINGS
  return s
}

/** Whether `s` is the bytes at `at` (`s` is ASCII and as long): from the end, where peer ids differ. */
function sameAscii(s: string, bytes: Uint8Array, at: number): boolean {
  for (let i = s.length - 1; i >= 0; i--) if (s.charCodeAt(i) !== bytes[at + i]) return false
  return true
}

/**
 * The header of a canonically encoded data frame whose `Data` starts at `dataStart` in `head` (the
 * frame's first piece; the frame is `frameBytes` long), and where its payload starts; undefined
 * if the header is not canonical, not all in `head`, or breaks a limit (the generic path decides).
 */
export function readCanonicalDataHeader(head: Uint8Array, dataStart: number, frameBytes: number, limits: WireLimits): DecodedDataHeader | undefined {
  let source = ''
  let destination = ''
  let name = ''
  let hopLimit = 0
  let messageId = 0
  let ackRequested = false
  let initialHopLimit = 0
  let hopLimitAt = -1
  const end = head.length
  for (let at = dataStart; at < end; ) {
    const tag = head[at++]!
    // A field repeated or out of order is read as protons reads it (the last one counts).
    if (tag === PAYLOAD_TAG) {
      const payloadBytes = readVarint32(head, at, end)
      if (payloadBytes < 0 || varintEnd + payloadBytes !== frameBytes || payloadBytes > limits.payloadBytesMax) return undefined
      // The Checker's limits: ids not empty, ids and name within their bytes (ASCII: a byte a character).
      if (source.length === 0 || source.length > limits.nodeIdBytesMax || destination.length === 0 || destination.length > limits.nodeIdBytesMax) return undefined
      if (name.length > limits.nameBytesMax || hopLimit > limits.hopLimitMax || initialHopLimit > limits.hopLimitMax) return undefined
      const header: DataHeader = { source, destination, name, hopLimit, messageId, ackRequested }
      if (initialHopLimit !== 0) header.initialHopLimit = initialHopLimit
      return { header, payloadStart: varintEnd, hopLimitAt }
    }
    if (tag === HOP_LIMIT_TAG || tag === MESSAGE_ID_TAG || tag === ACK_REQUESTED_TAG || tag === INITIAL_HOP_LIMIT_TAG) {
      const value = readVarint32(head, at, end)
      if (value < 0) return undefined
      if (tag === HOP_LIMIT_TAG) {
        hopLimit = value
        hopLimitAt = at
      } else if (tag === MESSAGE_ID_TAG) messageId = value
      else if (tag === INITIAL_HOP_LIMIT_TAG) initialHopLimit = value
      else ackRequested = value !== 0
      at = varintEnd
      continue
    }
    if (tag !== SOURCE_TAG && tag !== DESTINATION_TAG && tag !== NAME_TAG) return undefined
    const length = readVarint32(head, at, end)
    if (length < 0 || varintEnd + length > end) return undefined
    const value = asciiString(head, varintEnd, length)
    if (value === undefined) return undefined
    at = varintEnd + length
    if (tag === SOURCE_TAG) source = value
    else if (tag === DESTINATION_TAG) destination = value
    else name = value
  }
  return undefined
}
