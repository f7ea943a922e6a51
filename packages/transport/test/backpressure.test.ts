import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import type { Stream } from '@libp2p/interface'
import { defaultLogger } from '@libp2p/logger'
import { tcp } from '@libp2p/tcp'
import { createLibp2p, type Libp2p } from 'libp2p'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BATCH_BYTES_MAX, NeighbourLink } from '../src/link.ts'

const PROTOCOL = '/phoenix-test/backpressure/1.0.0'
const FRAME_BYTES = 64 * 1024
const MiB = 1024 * 1024

const node = () =>
  createLibp2p({ addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] }, transports: [tcp()], connectionEncrypters: [noise()], streamMuxers: [yamux()], connectionMonitor: { enabled: false } })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('a link toward a receiver that stops reading', () => {
  let sender: Libp2p
  let receiver: Libp2p
  beforeAll(async () => {
    ;[sender, receiver] = await Promise.all([node(), node()])
  })
  afterAll(async () => {
    await Promise.all([sender.stop(), receiver.stop()])
  })

  it('keeps its queue within outboundBytesMax and the stream’s write buffer within one batch, after drains have come and gone', async () => {
    // The receiver reads the first 4 MiB (so the sender's stream sees many 'drain' events: the
    // first one is what used to turn `onDrain()` into a no-op), then stops reading for good.
    let read = 0
    const paused = new Promise<void>((resolve) => {
      void receiver.handle(PROTOCOL, (stream: Stream) => {
        // As a Phoenix link does: room for a whole yamux window (16 MiB) while paused.
        stream.maxReadBufferLength = 32 * MiB
        stream.addEventListener('message', (event) => {
          read += event.data.byteLength
          if (read >= 4 * MiB && stream.readStatus === 'readable') {
            stream.pause()
            resolve()
          }
        })
      })
    })
    const stream = await sender.dialProtocol(receiver.getMultiaddrs()[0]!, PROTOCOL)
    const limits = { outboundBytesMax: 8 * MiB, outboundFramesMax: 65_536, inboundBytesMax: 16 * MiB }
    let closedWith: string | undefined
    const link = new NeighbourLink('receiver', stream, limits, defaultLogger().forComponent('test:link'), () => true, (_l, reason) => (closedWith = reason), () => {})
    const frame = new Uint8Array(FRAME_BYTES)
    let offered = 0
    let refused = 0
    let peakStreamBytes = 0
    let peakQueueBytes = 0
    // Offer 96 MiB over time, as a relay would: whatever the link takes, as fast as it takes it.
    const deadline = performance.now() + 8_000
    while (offered < 96 * MiB && performance.now() < deadline) {
      if (link.send(frame)) offered += FRAME_BYTES
      else {
        refused++
        await sleep(5)
      }
      peakStreamBytes = Math.max(peakStreamBytes, link.streamBufferedBytes)
      peakQueueBytes = Math.max(peakQueueBytes, link.queuedBytesTotal)
      if (offered % MiB === 0) await new Promise((r) => setImmediate(r))
    }
    await paused
    await sleep(200)
    peakStreamBytes = Math.max(peakStreamBytes, link.streamBufferedBytes)
    console.log(`offered ${offered / MiB} MiB, receiver read ${(read / MiB).toFixed(1)} MiB; peak: stream buffer ${peakStreamBytes} bytes, link queue ${peakQueueBytes} bytes; ${refused} sends refused (queue full)`)
    expect(closedWith).toBeUndefined()
    expect(link.isOpen).toBe(true)
    // Backpressure holds: the link refuses frames once its queue is full ...
    expect(refused).toBeGreaterThan(0)
    expect(peakQueueBytes).toBeLessThanOrEqual(limits.outboundBytesMax)
    // ... and the stream holds at most the batch it was writing when the window ran out (BATCH_BYTES_MAX).
    expect(peakStreamBytes).toBeLessThanOrEqual(BATCH_BYTES_MAX)
    // What left the process is bounded by what the receiver read plus its windows and the sockets' buffers.
    expect(offered).toBeLessThan(read + limits.outboundBytesMax + 32 * MiB)
    link.abort('test over')
  }, 30_000)
})
