import type { Logger } from '@libp2p/interface'
import type { PhoenixComponents, PhoenixEvents } from './api.ts'
import type { TransportLimits, TransportTiming } from './constants.ts'
import type { DialPath } from './dial-path.ts'
import type { Inbox } from './inbox.ts'
import type { Metrics } from './metrics.ts'
import type { Sends } from './sends.ts'

/** What lives as long as the node object (across restarts), shared by the modules of a run. */
export interface NodeParts {
  readonly id: string
  readonly components: PhoenixComponents
  readonly protocol: string
  readonly limits: TransportLimits
  readonly timing: TransportTiming
  readonly log: Logger
  readonly metrics: Metrics
  readonly inbox: Inbox
  readonly sends: Sends
  /** Which addresses to dial, and SSH tunnels for those that need one (dial-path.ts). */
  readonly dialPath: DialPath
  /** Routes or names may have changed (after an apply step): groups compare and raise `name:up` / `name:down`. */
  routesChanged(): void
  emit<K extends keyof PhoenixEvents>(type: K, detail: PhoenixEvents[K]['detail']): void
}

/** One line for a thrown value. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}
