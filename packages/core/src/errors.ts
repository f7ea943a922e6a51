export type PhoenixErrorCode =
  | 'LIMIT_EXCEEDED'
  | 'INVALID_INPUT'
  | 'INVALID_CONFIG'
  | 'INVALID_STATE'
  | 'NO_ROUTE'
  | 'HOP_LIMIT_EXCEEDED'

/** Every error the core throws: a code a program can switch on, and a message a person can read. */
export class PhoenixError extends Error {
  readonly code: PhoenixErrorCode

  constructor(code: PhoenixErrorCode, message: string) {
    super(message)
    this.name = 'PhoenixError'
    this.code = code
  }
}

export function invariant(condition: unknown, message: string): asserts condition {
  if (!condition) throw new PhoenixError('INVALID_STATE', `invariant violated: ${message}`)
}
