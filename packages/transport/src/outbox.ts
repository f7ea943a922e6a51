import type { DataFrame } from '@phoenix-overlay/wire'
import * as varint from 'uint8-varint'

/**
 * The data frames queued toward one neighbour and not yet handed to its stream, so that a
 * connection that closes with frames still queued bounces them (`neighbour-down`) to their
 * sources instead of dropping them silently.
 *
 * It is kept beside the link, by byte count: every frame the node queues on the link is noted
 * here with its length-prefixed size, and every write to the stream counts its bytes off the
 * front (see StreamTap). Bytes written that were not noted here (none today) would count frames as
 * written early: an error toward reporting less, never toward reporting a delivered frame lost.
 * Bounded by the link's own queue (outboundFramesMaxPerNeighbour): a frame is noted only once
 * the link took it.
 */
export class Outbox {
  private entries: { bytes: number; data: DataFrame | undefined }[] = []
  private head = 0
  private writtenBytes = 0

  /** The link accepted a frame of `frameBytes` (data frames keep their header for a bounce). */
  queued(frameBytes: number, data: DataFrame | undefined): void {
    this.entries.push({ bytes: varint.encodingLength(frameBytes) + frameBytes, data })
    // The link may write a frame before `send` returns (its flush starts at once), so the bytes
    // can be counted before the frame is noted: settle them now.
    this.written(0)
  }

  /** The link handed `bytes` to the stream. */
  written(bytes: number): void {
    this.writtenBytes += bytes
    while (this.head < this.entries.length && this.entries[this.head]!.bytes <= this.writtenBytes) {
      this.writtenBytes -= this.entries[this.head]!.bytes
      this.head++
    }
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head)
      this.head = 0
    }
  }

  /** Data frames noted and never written; forgets them. */
  takeUnsent(): DataFrame[] {
    const unsent: DataFrame[] = []
    for (let i = this.head; i < this.entries.length; i++) {
      const data = this.entries[i]!.data
      if (data !== undefined) unsent.push(data)
    }
    this.entries = []
    this.head = 0
    return unsent
  }
}
