import type { Stream } from '@libp2p/interface'

/**
 * Resumes reading a paused `stream` so that a pause made while it resumes holds.
 *
 * `stream.resume()` alone does not: in @libp2p/utils 7.4.1 (and on js-libp2p's main,
 * packages/utils/src/abstract-message-stream.ts, as of commit 057bac49) it sets the read status
 * back to 'readable', hands what was read while paused to the 'message' listeners at once, and
 * only then tells the muxer to resume (`sendResume`). A listener whose consumer is still full
 * pauses again inside that dispatch: the read status says 'paused', but the muxer was resumed
 * after it, and Yamux grants the sender window again on every frame it receives. Nothing is read,
 * the read buffer grows, and past `maxReadBufferLength` the stream is reset (`Read buffer length …
 * exceeded limit …, read status is paused`): a relay that pauses its inbound stream while its
 * outbound one drains lost the stream, and its sender's wait for a drain failed ("stream closed
 * while waiting for drain", the forwarding benchmark's pause/resume path under load). No upstream
 * issue for it was found (searched js-libp2p issues for resume, pause and the read buffer).
 *
 * Paused again, it is resumed and paused once more: the dispatch emptied the read buffer, so the
 * second resume hands nothing to the listeners, and the muxer's pause comes last.
 */
export function resumeReading(stream: Stream): void {
  stream.resume()
  if (readStatusOf(stream) !== 'paused') return
  stream.resume()
  // Its remote end may have finished meanwhile: with nothing left to read it is closed, not paused.
  if (readStatusOf(stream) === 'readable') stream.pause()
}

/** Read afresh after each call (the type checker would keep what it narrowed before `resume()`). */
function readStatusOf(stream: Stream): Stream['readStatus'] {
  return stream.readStatus
}
