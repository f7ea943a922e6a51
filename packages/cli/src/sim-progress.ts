import { Presets, SingleBar } from 'cli-progress'
import type { Writable } from 'node:stream'

/** Where progress goes: stderr, or any stream that says whether it is a terminal. */
export type ProgressStream = Writable & { isTTY?: boolean; columns?: number }

/** Seconds between progress lines when the stream is not a terminal (`--progress`). */
const PROGRESS_LINE_EVERY_MS = 5_000

/**
 * The simulator's progress: how much of the overlay can reach itself, the share of sampled pairs
 * of live nodes whose routes lead to each other. A run ends when the overlay is quiet, usually
 * long before the scenario's endMs, so virtual time says nothing about how far along it is; the
 * reachable share climbs to 100% as the tables converge. On a terminal it is a bar (cli-progress);
 * elsewhere, with `lines`, a line every 5 s; otherwise nothing.
 */
export class SimProgress {
  private readonly bar: SingleBar | undefined
  private lastLineMs = 0
  private readonly startMs = performance.now()

  constructor(
    private readonly stream: ProgressStream,
    private readonly lines: boolean,
  ) {
    if (stream.isTTY === true) {
      this.bar = new SingleBar(
        { stream: stream as NodeJS.WriteStream, format: 'sim |{bar}| {percentage}% of pairs reachable | {virtual} s virtual | {events} events', hideCursor: true },
        Presets.shades_classic,
      )
      this.bar.start(100, 0, { virtual: '0.000', events: 0 })
    }
  }

  /** The simulator's onProgress callback. */
  update(virtualMs: number, events: number, reachableFraction: number): void {
    // Rounded down, so 100% means every sampled pair is reachable.
    const percent = Math.floor(reachableFraction * 100)
    this.bar?.update(percent, { virtual: (virtualMs / 1000).toFixed(3), events })
    const now = performance.now()
    if (this.bar === undefined && this.lines && now - this.lastLineMs >= PROGRESS_LINE_EVERY_MS) {
      this.lastLineMs = now
      this.stream.write(
        `sim: ${percent}% of pairs reachable, ${(virtualMs / 1000).toFixed(3)} s virtual, ${events} events, ${((now - this.startMs) / 1000).toFixed(0)} s wall, rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB\n`,
      )
    }
  }

  stop(): void {
    this.bar?.stop()
  }
}
