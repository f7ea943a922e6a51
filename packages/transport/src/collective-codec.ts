/**
 * The collectives' envelope (collectives.ts): what travels in a data frame addressed to a node
 * rather than a name (name '' on the wire, which applications cannot use), and the numeric
 * combine. Layout: a 4-byte big-endian header length, the header as JSON, then the parts' bytes
 * one after another (the header gives their sizes).
 */
import { invalidInput } from './errors.ts'

/** A per-name result that did not arrive: why. */
export interface Missing {
  readonly name: string
  /**
   * `left`: its node became unreachable (crash, leave, partition) before answering;
   * `relay-lost`: the site's relay became unreachable before reporting (it may have been delivered);
   * `timeout`: no answer within the operation's time; `not-owned`: its node no longer owns the name;
   * `receiver-too-slow` / `no-consumer`: its application did not take the message (see the send contract);
   * `unsent`: it could not be sent (`NO_ROUTE`, `QUEUE_FULL`, leaving), `no-contribution`: its node had no value for the tag in time.
   */
  readonly reason: 'left' | 'relay-lost' | 'timeout' | 'not-owned' | 'receiver-too-slow' | 'no-consumer' | 'unsent' | 'no-contribution'
}

/** Names on one node (with the message ids they get, for a broadcast). */
export interface Target {
  readonly node: string
  readonly names: readonly string[]
  readonly ids?: readonly number[]
}

export type ReduceOp = 'sum' | 'min' | 'max' | 'gather'

export type Header =
  /** Broadcast: deliver to `names` here; a site relay passes it on to `targets`. */
  | { t: 'b'; op: string; origin: string; replyTo: string | undefined; waitMs: number; names: string[]; ids: number[]; targets: Target[] }
  /** Broadcast report: which names got it. */
  | { t: 'r'; op: string; delivered: string[]; missing: Missing[] }
  /** Reduce request: each of `names` here contributes its value for `tag`; a relay asks `targets` and combines. */
  | { t: 'q'; op: string; origin: string; replyTo: string; waitMs: number; tag: string; reduce: ReduceOp; names: string[]; targets: Target[] }
  /** Reduce reply: one combined part (numeric) or one part per contributor (gather), and an error if values could not be combined. */
  | { t: 'v'; op: string; contributors: string[]; missing: Missing[]; sizes: number[]; error?: string }

const HEADER_LENGTH_BYTES = 4

export function encodeEnvelope(header: Header, parts: readonly Uint8Array[] = []): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header))
  const total = HEADER_LENGTH_BYTES + json.length + parts.reduce((n, p) => n + p.length, 0)
  const out = new Uint8Array(total)
  new DataView(out.buffer).setUint32(0, json.length)
  out.set(json, HEADER_LENGTH_BYTES)
  let at = HEADER_LENGTH_BYTES + json.length
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  return out
}

/** The header and the bytes after it; throws on bytes that are not an envelope (a peer's bug: the caller drops the message). */
export function decodeEnvelope(bytes: Uint8Array): { header: Header; rest: Uint8Array } {
  if (bytes.length < HEADER_LENGTH_BYTES) throw new Error('collective envelope shorter than its header length')
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0)
  if (HEADER_LENGTH_BYTES + length > bytes.length) throw new Error('collective envelope header longer than the message')
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(HEADER_LENGTH_BYTES, HEADER_LENGTH_BYTES + length))) as Header
  if (typeof header !== 'object' || header === null || typeof header.op !== 'string') throw new Error('collective envelope without an operation id')
  return { header, rest: bytes.subarray(HEADER_LENGTH_BYTES + length) }
}

/** `rest` cut into parts of `sizes` bytes. */
export function splitParts(rest: Uint8Array, sizes: readonly number[]): Uint8Array[] {
  const parts: Uint8Array[] = []
  let at = 0
  for (const size of sizes) {
    if (!Number.isInteger(size) || size < 0 || at + size > rest.length) throw new Error('collective envelope parts longer than the message')
    parts.push(rest.subarray(at, at + size))
    at += size
  }
  return parts
}

const FLOAT64_BYTES = 8

/**
 * Element-wise sum, min or max of values that are arrays of little-endian float64. Every value
 * must have the same size, a multiple of 8 bytes; otherwise INVALID_INPUT naming `value` and the
 * names whose sizes differ.
 */
export function combineNumeric(op: 'sum' | 'min' | 'max', values: readonly { name: string; bytes: Uint8Array }[]): Uint8Array {
  const first = values[0]
  if (first === undefined) throw invalidInput('value', 'nothing to combine')
  for (const v of values) {
    if (v.bytes.length % FLOAT64_BYTES !== 0) throw invalidInput('value', `"${v.name}" contributed ${v.bytes.length} bytes; ${op} takes little-endian float64 arrays (a multiple of 8 bytes)`)
    if (v.bytes.length !== first.bytes.length) throw invalidInput('value', `"${v.name}" contributed ${v.bytes.length} bytes and "${first.name}" ${first.bytes.length}; ${op} needs values of one size`)
  }
  const count = first.bytes.length / FLOAT64_BYTES
  const out = new Float64Array(count)
  const views = values.map((v) => new DataView(v.bytes.buffer, v.bytes.byteOffset, v.bytes.byteLength))
  for (let i = 0; i < count; i++) {
    let acc = views[0]!.getFloat64(i * FLOAT64_BYTES, true)
    for (let k = 1; k < views.length; k++) {
      const x = views[k]!.getFloat64(i * FLOAT64_BYTES, true)
      acc = op === 'sum' ? acc + x : op === 'min' ? Math.min(acc, x) : Math.max(acc, x)
    }
    out[i] = acc
  }
  const bytes = new Uint8Array(out.length * FLOAT64_BYTES)
  const view = new DataView(bytes.buffer)
  for (let i = 0; i < out.length; i++) view.setFloat64(i * FLOAT64_BYTES, out[i]!, true)
  return bytes
}

/** Float64 values as the bytes `reduce` sums (little-endian). */
export function float64Bytes(values: readonly number[]): Uint8Array {
  const bytes = new Uint8Array(values.length * FLOAT64_BYTES)
  const view = new DataView(bytes.buffer)
  values.forEach((x, i) => view.setFloat64(i * FLOAT64_BYTES, x, true))
  return bytes
}

/** The float64 values of bytes `reduce` returns. */
export function float64Values(bytes: Uint8Array): number[] {
  if (bytes.length % FLOAT64_BYTES !== 0) throw invalidInput('value', `is ${bytes.length} bytes, not a multiple of 8`)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  return Array.from({ length: bytes.length / FLOAT64_BYTES }, (_, i) => view.getFloat64(i * FLOAT64_BYTES, true))
}
