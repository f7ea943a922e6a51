import type { MessageStream } from '@libp2p/interface'

/**
 * Resolves once `stream` can take more: a real 'drain' has come and the stream does not need
 * another, or it closed, or `stopped()` says the writer gave up. `onWaiting` receives the wake-up,
 * for a writer that must be woken from outside (a link that closes).
 *
 * Not `stream.onDrain()`: in @libp2p/utils 7.4.1 (and on js-libp2p's main,
 * packages/utils/src/abstract-message-stream.ts, as of commit 057bac49) it keeps one promise for
 * the stream's life, resolved by the first 'drain' and never replaced, so every later call returns
 * at once and the stream's write buffer grows without bound toward a slow reader. No upstream
 * issue or fix for it was found (searched js-libp2p issues and PRs for onDrain; the nearest are
 * #3551/#3552, pnet not forwarding 'drain', and #3415/#3512, the drain microtask throwing on a
 * closing stream). A fresh listener per wait is correct on any version.
 */
export async function drained(stream: MessageStream, stopped: () => boolean = () => false, onWaiting?: (wake: () => void) => void): Promise<void> {
  let closed = false
  while (!closed && !stopped() && stream.writableNeedsDrain) {
    await new Promise<void>((resolve) => {
      const done = (event?: Event) => {
        if (event?.type === 'close') closed = true
        stream.removeEventListener('drain', done)
        stream.removeEventListener('close', done)
        resolve()
      }
      onWaiting?.(done)
      stream.addEventListener('drain', done)
      stream.addEventListener('close', done)
    })
    // The stream's own 'drain' listener queued its send in a microtask; let it run, so
    // `writableNeedsDrain` says whether that send filled the window again.
    await Promise.resolve()
  }
}
