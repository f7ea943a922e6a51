import type { Stream } from '@libp2p/interface'

type Listener = (event: Event) => void

/**
 * What a leave needs of a neighbour's stream, beside the link: the half-close. Closing our side
 * (`finishWriting`) sends what the stream holds, then end-of-stream, while we keep reading. While
 * `holding`, the neighbour's end-of-stream is noted (`remoteDone`) but kept from the link (whose
 * 'remoteCloseWrite' listener goes through `gate`), which would otherwise stop at once and drop
 * what it still has to write (the bounces and acks a leaving node owes); `release` hands it over.
 *
 * The link holds the stream itself. It held a Proxy of it once, whose `get` trap bound a new
 * function on every method read: every `stream.send` of every forwarded frame went through the
 * trap and a fresh bound function, on the path a relay's latency is measured on (issue 19).
 */
export class StreamTap {
  holding = false
  remoteDone = false
  writeClosed = false
  private readonly held: { listener: Listener; event: Event }[] = []

  constructor(readonly stream: Stream) {
    stream.addEventListener('remoteCloseWrite', () => (this.remoteDone = true))
  }

  /** `listener` for the stream's 'remoteCloseWrite', held back while `holding`. */
  gate(listener: Listener): Listener {
    return (event: Event) => {
      if (this.holding) this.held.push({ listener, event })
      else listener(event)
    }
  }

  /** Hands the link the end-of-stream held back. */
  release(): void {
    this.holding = false
    for (const { listener, event } of this.held.splice(0)) listener(event)
  }

  /** Closes our side once what the stream holds is sent; reading goes on. */
  async finishWriting(): Promise<void> {
    if (this.writeClosed) return
    this.writeClosed = true
    await this.stream.close().catch(() => undefined)
  }
}
