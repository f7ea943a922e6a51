export type WireErrorCode = 'FRAME_TOO_LARGE' | 'MALFORMED' | 'LIMIT_EXCEEDED'

/** Everything decoding can throw: a code to switch on and a message naming the field. */
export class WireError extends Error {
  readonly code: WireErrorCode
  constructor(code: WireErrorCode, message: string) {
    super(message)
    this.name = 'WireError'
    this.code = code
  }
}
