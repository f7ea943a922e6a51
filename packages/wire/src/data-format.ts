/**
 * The bytes of a data frame as `encodeFrame` writes them (`Frame { Data data = 2 }`, frames.proto),
 * shared by the modules that read or write them without protons: the header reader
 * (data-header.ts), the header writer (data-head-writer.ts) and the hop-limit rewrite
 * (hop-limit.ts). One definition of each tag and one varint reader, so the three cannot drift.
 */

/** The tag of `Frame.data` (field 2, length-delimited): the first byte of every data frame. */
export const FRAME_DATA_TAG = 0x12
/** The tags of `Data`'s fields (field number << 3 | wire type), as `encodeFrame` writes them. */
export const SOURCE_TAG = 0x0a
export const DESTINATION_TAG = 0x12
export const NAME_TAG = 0x1a
export const HOP_LIMIT_TAG = 0x20
export const MESSAGE_ID_TAG = 0x28
export const ACK_REQUESTED_TAG = 0x30
export const PAYLOAD_TAG = 0x3a
/** `Data.initial_hop_limit` (field 8, varint): only from a source whose hop limit is not 16; written before the payload (protons would write it after), so the payload stays last. */
export const INITIAL_HOP_LIMIT_TAG = 0x40

/** Longest varint of a 32-bit value. */
export const VARINT32_BYTES_MAX = 5

/** Where the last `readVarint32` that gave a value ended: a scratch slot, so reading one allocates nothing (a relay reads several per frame). */
export let varintEnd = 0

/**
 * The varint at `at` (before `end`) as an exact unsigned 32-bit value, its end in `varintEnd`;
 * -1 if it runs past `end`, or does not fit in 32 bits: a fifth byte other than 0x00-0x0f (a
 * value of 2^32 or more, or a varint longer than 5 bytes). Protons reads those otherwise (its
 * `uint32()` keeps a fifth byte's low 4 bits and skips up to 5 more bytes; a length or a tag so
 * read cannot be a frame's), so every caller leaves a -1 to the generic decoder, which gives the
 * same answer protons gives, or refuses the frame with its own error.
 */
export function readVarint32(bytes: Uint8Array, at: number, end: number): number {
  if (at >= end) return -1
  const first = bytes[at]!
  // One byte: every tag, and most lengths and hop limits a relay reads.
  if (first < 0x80) {
    varintEnd = at + 1
    return first
  }
  // Four bytes at most hold 28 bits: integer arithmetic, no sign to lose.
  let value = first & 0x7f
  for (let i = 1; i < VARINT32_BYTES_MAX - 1; i++) {
    if (at + i >= end) return -1
    const byte = bytes[at + i]!
    value |= (byte & 0x7f) << (7 * i)
    if (byte < 0x80) {
      varintEnd = at + i + 1
      return value
    }
  }
  if (at + 4 >= end) return -1
  const fifth = bytes[at + 4]!
  if (fifth > 0x0f) return -1
  varintEnd = at + 5
  return value + fifth * 2 ** 28
}

/** Bytes the varint of `value` (an unsigned 32-bit integer) takes. */
export const varint32Width = (value: number): number => (value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5)

/** Writes the varint of `value` (an unsigned 32-bit integer) at `at`, as protons does; the offset after it. */
export function writeVarint32(bytes: Uint8Array, at: number, value: number): number {
  while (value > 0x7f) {
    bytes[at++] = (value & 0x7f) | 0x80
    value >>>= 7
  }
  bytes[at++] = value
  return at
}
