/**
 * Zero-copy forwarding (issue 19, item 2): a relay passes a data frame on with only its hop limit
 * rewritten, in the bytes it received, instead of decoding and re-encoding it (which copies the
 * payload into a new frame). The wire format is unchanged: the protobuf `Frame { Data data = 2 }`
 * with `Data.hop_limit = 4` a varint. The rewrite is in place when the new hop limit's varint is
 * as wide as the old one (1–127 and 128–255 each keep their width; the default hop limit, 16,
 * counts down in one byte); otherwise (and for 0, which proto3 omits) the caller re-encodes.
 */

import { DESTINATION_TAG, FRAME_DATA_TAG, HOP_LIMIT_TAG, NAME_TAG, SOURCE_TAG, readVarint32, varint32Width, varintEnd, writeVarint32 } from './data-format.ts'

/** Skips the field whose tag is at `at`; the offset after it, or undefined if it is malformed. */
function skipField(bytes: Uint8Array, at: number, end: number): number | undefined {
  const tag = readVarint32(bytes, at, end)
  if (tag < 0) return undefined
  const next = varintEnd
  const wireType = tag & 7
  if (wireType === 0) return readVarint32(bytes, next, end) < 0 ? undefined : varintEnd
  if (wireType === 2) {
    const length = readVarint32(bytes, next, end)
    if (length < 0) return undefined
    return varintEnd + length <= end ? varintEnd + length : undefined
  }
  if (wireType === 1) return next + 8 <= end ? next + 8 : undefined
  if (wireType === 5) return next + 4 <= end ? next + 4 : undefined
  return undefined
}

/**
 * Rewrites the hop limit of an encoded data frame (`encodeFrame({ kind: 'data', … })`) to
 * `hopLimit`, in place, reading only the fields before it and never touching the payload.
 * `frame` may be only the first piece of the frame, of `frameBytes` in all (then undefined if the
 * hop limit is not in that piece).
 * Returns `frame` itself, now carrying `hopLimit`, or undefined when it cannot be done in place
 * (not a data frame, no hop limit field, a different varint width, or `hopLimit` 0): then
 * re-encode. The result is byte for byte what `encodeFrame` makes of the same frame.
 */
export function rewriteDataHopLimit(frame: Uint8Array, hopLimit: number, frameBytes: number = frame.length): Uint8Array | undefined {
  if (!Number.isInteger(hopLimit) || hopLimit < 1 || hopLimit > 0xffffffff) return undefined
  if (frame[0] !== FRAME_DATA_TAG) return undefined
  const length = readVarint32(frame, 1, frame.length)
  if (length < 0) return undefined
  const start = varintEnd
  if (start + length !== frameBytes) return undefined
  // `frame` may be the first piece of a longer frame (`frameBytes`): only its bytes are read.
  const end = Math.min(start + length, frame.length)
  // The last hop limit field counts (protons reads a repeated field so): rewriting the first of
  // two left the frame's hop limit as it was at every hop. Fields are written in field order:
  // past the hop limit's number there is none; a piece that ends before that may hold another.
  // Fields 1-4 only with their own wire types: protons reads a field by its number whatever its
  // wire type, so another would be read at other offsets than this walk's.
  let last = -1
  let at = start
  while (at < end && frame[at]! >>> 3 <= HOP_LIMIT_TAG >>> 3) {
    const tag = frame[at]
    if (tag === HOP_LIMIT_TAG) last = at + 1
    else if (tag !== SOURCE_TAG && tag !== DESTINATION_TAG && tag !== NAME_TAG) return undefined
    const next = skipField(frame, at, end)
    if (next === undefined) return undefined
    at = next
  }
  if (last < 0 || (at === end && end < start + length)) return undefined
  return rewriteHopLimitAt(frame, last, hopLimit) ? frame : undefined
}

/**
 * Rewrites in place the hop limit whose varint starts at `at` in `frame` (where `decodeDataHeader`
 * found it: `hopLimitAt`) to `hopLimit`; false, and nothing written, when the new value's varint
 * is not as wide as the old one's, or `hopLimit` is not in [1, 2^32) (then re-encode). The
 * relay's rewrite of a frame whose header it has just read, without walking its fields again.
 */
export function rewriteHopLimitAt(frame: Uint8Array, at: number, hopLimit: number): boolean {
  if (!Number.isInteger(hopLimit) || hopLimit < 1 || hopLimit > 0xffffffff) return false
  if (at < 1 || frame[at - 1] !== HOP_LIMIT_TAG || readVarint32(frame, at, frame.length) < 0) return false
  if (varint32Width(hopLimit) !== varintEnd - at) return false
  writeVarint32(frame, at, hopLimit)
  return true
}

/** True if `frame` (one encoded frame, no length prefix) is a data frame: it starts with the tag of `Frame.data`. */
export function isDataFrameBytes(frame: Uint8Array): boolean {
  return frame[0] === FRAME_DATA_TAG
}
