/**
 * The two hand-made relays a middle node can run between an inbound stream and an outbound one
 * toward the next node, and the sink a receiver runs. Both relays move the bytes untouched (no
 * framing): they are the floor of what any libp2p hop costs.
 */
import type { Stream } from '@libp2p/interface'
import { pipe } from 'it-pipe'
import { resumeReading } from '@phoenix-overlay/transport/testing'

/**
 * What a paused inbound stream may buffer: yamux's largest stream window (16 MiB), so a sender
 * that filled the window before the pause took effect does not get the stream reset (the
 * default, 4 MiB, is smaller than the window). The transport uses the same bound.
 */
export const READ_BUFFER_BYTES_MAX = 16 * 1024 * 1024

/**
 * Resolves on the stream's next real 'drain' event (rejects if it closes first). Not
 * `stream.onDrain()`: in @libp2p/utils 7.4.1 its promise is made once and never renewed, so after
 * the first drain it resolves at once while the stream still needs draining.
 */
export function drained(stream: Stream): Promise<void> {
  return new Promise((resolve, reject) => {
    const onDrain = () => {
      stream.removeEventListener('close', onClose)
      resolve()
    }
    const onClose = () => {
      stream.removeEventListener('drain', onDrain)
      reject(new Error('stream closed while waiting for drain'))
    }
    stream.addEventListener('drain', onDrain, { once: true })
    stream.addEventListener('close', onClose, { once: true })
  })
}

/** Ends `to` the way `from` ended: a clean close is passed on, an error aborts. */
function linkEnds(from: Stream, to: Stream): void {
  from.addEventListener('close', (event) => {
    if (event.error !== undefined) to.abort(event.error)
  })
}

/**
 * Pause/resume forwarding, libp2p's own way of joining two streams (the `redirect` helper in
 * js-libp2p's libp2p/src/utils.ts): every chunk goes straight on; when the outbound buffer is full
 * the inbound stream is paused (yamux then stops granting it window) until the outbound drains.
 */
export function pauseResumeRelay(inbound: Stream, outbound: Stream): void {
  let waiting = false
  inbound.addEventListener('message', (event) => {
    if (outbound.send(event.data) || waiting) return
    waiting = true
    inbound.pause()
    void drained(outbound).then(
      () => {
        waiting = false
        // Not inbound.resume(): its data read while paused goes to this listener at once, which
        // pauses again if the outbound is full, and @libp2p/utils 7.4.1 then resumes the muxer
        // anyway; the read buffer grew past its limit and the stream was reset ("stream closed
        // while waiting for drain" at the sender, under load). stream-resume.ts says more.
        if (inbound.readStatus === 'paused') resumeReading(inbound)
      },
      () => undefined,
    )
  })
  inbound.addEventListener('remoteCloseWrite', () => void outbound.close().catch(() => undefined))
  linkEnds(inbound, outbound)
  linkEnds(outbound, inbound)
}

/**
 * An it-pipe relay: the inbound stream's async iterator piped into a sink that writes to the
 * outbound stream and waits for drain. The inbound iterator reads everything as it comes (it has
 * no way to pause the stream), which is also how circuit-relay-v2 joins its streams (`pipe` from
 * @libp2p/utils, it-pipe over the same iterator).
 */
export function itPipeRelay(inbound: Stream, outbound: Stream): void {
  linkEnds(outbound, inbound)
  void pipe(inbound, async (source: AsyncIterable<Parameters<Stream['send']>[0]>) => {
    for await (const chunk of source) if (!outbound.send(chunk)) await drained(outbound)
    await outbound.close()
  }).catch((error: Error) => {
    inbound.abort(error)
    outbound.abort(error)
  })
}
