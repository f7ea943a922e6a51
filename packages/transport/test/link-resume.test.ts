import type { Stream } from '@libp2p/interface'
import { defaultLogger } from '@libp2p/logger'
import * as varint from 'uint8-varint'
import { describe, expect, it } from 'vitest'
import { NeighbourLink, type FrameBytes } from '../src/link.ts'

/** The first byte of a data frame (wire: Frame.data, field 2, length-delimited). */
const DATA = 0x12
const limits = { outboundBytesMax: 1 << 20, outboundFramesMax: 1024, inboundBytesMax: 1 << 20 }

/**
 * A stream that pauses and resumes as @libp2p/utils 7.4.1's does (stream-resume.ts): data that
 * arrives while paused is buffered; `resume()` sets 'readable', hands the buffer to the 'message'
 * listeners, and only then tells the muxer to resume, whatever the listeners did meanwhile.
 */
class UpstreamOrderStream extends EventTarget {
  readStatus: 'readable' | 'paused' = 'readable'
  /** What the muxer was told last: true = the remote end is granted window. */
  muxerReading = true
  maxReadBufferLength = 0
  writeBufferLength = 0
  writableNeedsDrain = false
  private readonly buffered: Uint8Array[] = []
  send(): boolean {
    return true
  }
  pause(): void {
    this.readStatus = 'paused'
    this.muxerReading = false
  }
  resume(): void {
    this.readStatus = 'readable'
    for (const data of this.buffered.splice(0)) this.dispatchEvent(Object.assign(new Event('message'), { data }))
    this.muxerReading = true
  }
  async close(): Promise<void> {}
  abort(): void {}
  /** The neighbour's bytes arrive: handed on at once when readable, buffered when paused. */
  arrive(bytes: Uint8Array): void {
    if (this.readStatus === 'paused') this.buffered.push(bytes)
    else this.dispatchEvent(Object.assign(new Event('message'), { data: bytes }))
  }
}

const prefixedFrame = (bytes: number): Uint8Array => {
  const frame = new Uint8Array(bytes).fill(7, 1).fill(DATA, 0, 1)
  const length = varint.encode(frame.byteLength)
  const out = new Uint8Array(length.byteLength + frame.byteLength)
  out.set(length)
  out.set(frame, length.byteLength)
  return out
}

describe('a link resumed while its handler is still full', () => {
  it('stays paused toward the muxer when the data read while paused is refused again', () => {
    const stream = new UpstreamOrderStream()
    let room = 0
    const taken: FrameBytes[] = []
    const link = new NeighbourLink('peer', stream as unknown as Stream, limits, defaultLogger().forComponent('test:link-resume'), (frame) => {
      if (room === 0) return false
      room--
      taken.push(frame)
      return true
    }, () => {}, () => {})
    stream.arrive(prefixedFrame(100)) // refused: held, the stream paused
    expect(stream.readStatus).toBe('paused')
    stream.arrive(prefixedFrame(100)) // arrives while paused: buffered by the stream
    room = 1 // room for the held frame only
    link.resume()
    expect(taken).toHaveLength(1)
    // The buffered frame was refused during resume's dispatch: the link holds it, and the muxer
    // must end paused, or the neighbour is granted window while nothing is read.
    expect(stream.readStatus).toBe('paused')
    expect(stream.muxerReading).toBe(false)
    room = 1
    link.resume()
    expect(taken).toHaveLength(2)
    expect(stream.readStatus).toBe('readable')
    expect(stream.muxerReading).toBe(true)
  })
})
