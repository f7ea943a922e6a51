export type SimulationErrorCode = 'INVALID_SCENARIO' | 'LIMIT_EXCEEDED' | 'NOT_CONVERGED' | 'ROUTES_WRONG' | 'UNSUPPORTED'

/** Every failure of the simulator: a code to branch on and a message naming the field or limit. */
export class SimulationError extends Error {
  constructor(
    readonly code: SimulationErrorCode,
    message: string,
  ) {
    super(message)
    this.name = 'SimulationError'
  }
}
