import type { Stream } from '@libp2p/interface'

type Listener = (event: Event) => void

/**
 * The stream as the link sees it: the same object, with the half-close a leave needs added from
 * outside the link. Closing our side (`finishWriting`) sends what the stream holds,
 *   then end-of-stream, while we keep reading. While `holding`, the neighbour's end-of-stream is
 *   noted (`remoteDone`) but kept from the link, which would otherwise stop at once and drop what
 *   it still has to write (the bounces and acks a leaving node owes); `release` hands it over.
 */
export class StreamTap {
  readonly stream: Stream
  holding = false
  remoteDone = false
  writeClosed = false
  private readonly held: { listener: Listener; event: Event }[] = []

  constructor(private readonly raw: Stream) {
    raw.addEventListener('remoteCloseWrite', () => (this.remoteDone = true))
    this.stream = new Proxy(raw, {
      get: (target, property) => {
        if (property === 'addEventListener') return (type: string, listener: Listener, options?: unknown) => this.listen(type, listener, options)
        const value: unknown = Reflect.get(target, property, target)
        return typeof value === 'function' ? value.bind(target) : value
      },
      set: (target, property, value) => Reflect.set(target, property, value, target),
    })
  }

  private listen(type: string, listener: Listener, options: unknown): void {
    if (type !== 'remoteCloseWrite') return this.raw.addEventListener(type as 'close', listener, options as never)
    this.raw.addEventListener('remoteCloseWrite', (event: Event) => {
      if (this.holding) this.held.push({ listener, event })
      else listener(event)
    })
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
    await this.raw.close().catch(() => undefined)
  }
}
