export type TransportErrorCode =
  | 'NO_ROUTE'
  | 'QUEUE_FULL'
  | 'ACK_TIMEOUT'
  | 'UNDELIVERABLE'
  | 'NOT_STARTED'
  | 'INVALID_INPUT'
  | 'RECEIVER_TOO_SLOW'

/** Errors the transport gives its callers: a code to switch on and a message that says why. */
export class PhoenixTransportError extends Error {
  readonly code: TransportErrorCode
  constructor(code: TransportErrorCode, message: string) {
    super(message)
    this.name = 'PhoenixTransportError'
    this.code = code
  }
}
