import type { UndeliverableReason } from '@phoenix-overlay/wire'

/**
 * What went wrong, for callers to switch on (the README's send-contract table says, for each,
 * whether the message may have been delivered):
 * - `INVALID_INPUT`: an argument or option is wrong; nothing was sent.
 * - `NOT_STARTED`: the node is not running (before start, after stop, or leaving).
 * - `NO_ROUTE`: no node owns the name after waiting `routeWaitMs`; nothing was sent.
 * - `QUEUE_FULL`: the queue toward the first hop, or a table of waiting sends, is full; nothing was sent.
 * - `UNDELIVERABLE`: a node on the way (or the destination) refused it; `reason` says why. Not delivered.
 * - `ACK_TIMEOUT`: no acknowledgement in time. It may or may not have been delivered.
 * - `UNSUPPORTED`: this runtime cannot run a node (Node older than 22); nothing was started.
 * - `RECEIVER_TOO_SLOW`: kept for callers that switch on it; the transport now reports a full
 *   receiver to the sender as `UNDELIVERABLE` with reason `receiver-too-slow`.
 */
export type TransportErrorCode = 'NO_ROUTE' | 'QUEUE_FULL' | 'ACK_TIMEOUT' | 'UNDELIVERABLE' | 'NOT_STARTED' | 'INVALID_INPUT' | 'UNSUPPORTED' | 'RECEIVER_TOO_SLOW'

export interface TransportErrorDetails {
  /** The message id of the send this error settles, when there was one. */
  readonly messageId?: number
  /** For `UNDELIVERABLE`: why the message was refused, and by which node. */
  readonly reason?: UndeliverableReason
  readonly node?: string
  /** For `INVALID_INPUT`: the argument or option at fault. */
  readonly field?: string
}

/** Errors the transport gives its callers: a code to switch on and a message that says why. */
export class PhoenixTransportError extends Error {
  readonly code: TransportErrorCode
  readonly messageId: number | undefined
  readonly reason: UndeliverableReason | undefined
  readonly node: string | undefined
  readonly field: string | undefined
  constructor(code: TransportErrorCode, message: string, details: TransportErrorDetails = {}) {
    super(message)
    this.name = 'PhoenixTransportError'
    this.code = code
    this.messageId = details.messageId
    this.reason = details.reason
    this.node = details.node
    this.field = details.field
  }
}

/** An input the caller got wrong: one line naming the field. */
export function invalidInput(field: string, problem: string): PhoenixTransportError {
  return new PhoenixTransportError('INVALID_INPUT', `${field} ${problem}`, { field })
}

/** A value as an error message shows it: a number as written (JSON says null for NaN and Infinity), else short JSON (a string quoted, so '100' does not read as 100), else its type. */
export function shown(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'bigint') return String(value)
  // JSON says null for undefined, NaN and Infinity inside arrays and objects: `[undefined]` would read `[null]`.
  const json = value === undefined ? 'undefined' : JSON.stringify(value, (_key, inner: unknown) => (inner === undefined || (typeof inner === 'number' && !Number.isFinite(inner)) ? `\u0000${String(inner)}\u0000` : inner))
  return json === undefined || json.length > 60 ? typeof value : json.replaceAll(/"\\u0000([^"\\]*)\\u0000"/g, '$1')
}
