/**
 * The libp2p progress event that says a dial's TCP connection is up (and its protector, if any,
 * done): the upgrader starts encrypting. Emitted by libp2p's upgrader for every outbound
 * connection (`upgrader:encrypt-outbound-connection`, libp2p 3.x `upgrader.js`).
 */
export const CONNECTED_EVENT = 'upgrader:encrypt-outbound-connection'

/**
 * A dial's deadline in two phases: `connectMs` until the TCP connection is up (a dropped SYN
 * never answers, so this stays short), then `upgradeMs` for the handshakes on it (a peer that
 * answered is there: a slow handshake on a busy host should finish, not be thrown away and
 * started again). Pass `signal` and `onProgress` to `openConnection`; `clear()` when done.
 */
export class DialDeadline {
  private readonly controller = new AbortController()
  private timer: ReturnType<typeof setTimeout>
  /** Whether the TCP connection came up (a failure after it was a handshake's, not the network's). */
  connected = false

  constructor(
    connectMs: number,
    private readonly upgradeMs: number,
  ) {
    if (!(connectMs > 0) || !(upgradeMs > 0)) throw new RangeError(`dial deadline: dialTimeoutMs and upgradeTimeoutMs must be positive, got ${connectMs} and ${upgradeMs}`)
    this.timer = this.arm(connectMs, 'connect')
  }

  get signal(): AbortSignal {
    return this.controller.signal
  }

  readonly onProgress = (event: { type: string }): void => {
    if (event.type !== CONNECTED_EVENT || this.connected) return
    this.connected = true
    clearTimeout(this.timer)
    this.timer = this.arm(this.upgradeMs, 'upgrade')
  }

  clear(): void {
    clearTimeout(this.timer)
  }

  private arm(ms: number, phase: 'connect' | 'upgrade'): ReturnType<typeof setTimeout> {
    const option = phase === 'connect' ? 'dialTimeoutMs' : 'upgradeTimeoutMs'
    return setTimeout(() => this.controller.abort(new DOMException(`${phase} timed out after ${ms} ms (${option})`, 'TimeoutError')), ms)
  }
}
