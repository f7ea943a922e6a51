import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import type { Stream } from '@libp2p/interface'
import { tcp } from '@libp2p/tcp'
import { createLibp2p, type Libp2p } from 'libp2p'
import { afterAll, describe, expect, it } from 'vitest'
import { drained } from '../src/drain.ts'
import { resumeReading } from '../src/stream-resume.ts'

// A consumer that pauses its inbound stream whenever it is full, and resumes it once it has room
// (a relay waiting for its outbound stream to drain). If it is still full when the data read
// while paused is handed to it on resume, it pauses again inside `resume()`; @libp2p/utils then
// tells Yamux to resume after that, so the sender is granted window again while nothing is read,
// and the stream is reset once the read buffer passes its limit (stream-resume.ts).

const CHUNK = new Uint8Array(64 * 1024)
/** Yamux's largest window (16 MiB) is what a paused stream may have to buffer; the limit is above it. */
const READ_BUFFER_LIMIT = 20 * 1024 * 1024
/** Far more than a window: without flow control, the read buffer passes its limit. */
const SEND_BYTES_MAX = 48 * 1024 * 1024

const node = () => createLibp2p({ addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] }, transports: [tcp()], connectionEncrypters: [noise()], streamMuxers: [yamux()], connectionMonitor: { enabled: false } })

/** What happened: the paused receiver's buffer, whether the sender was held, whether the stream survived. */
async function run(resume: (stream: Stream) => void, nodes: Libp2p[]): Promise<{ sentBytes: number; held: boolean; reset: boolean; bufferedMax: number }> {
  const [a, b] = [await node(), await node()]
  nodes.push(a, b)
  let inbound: Stream | undefined
  let arrived = 0
  let bufferedMax = 0
  await b.handle('/resume-test/1', (stream) => {
    inbound = stream
    stream.maxReadBufferLength = READ_BUFFER_LIMIT
    // Always full: it pauses at every delivery, the one handed to it on resume too.
    stream.addEventListener('message', (event) => {
      arrived += event.data.byteLength
      stream.pause()
    })
  })
  await b.handle('/resume-test/echo/1', (stream) => stream.addEventListener('message', (event) => void stream.send(event.data)))
  const out = await a.dialProtocol(b.getMultiaddrs()[0]!, '/resume-test/1')
  // A round trip on the same connection: what the receiver sent before its echo (window updates
  // for what it had received) has reached the sender when the echo has.
  const echo = await a.dialProtocol(b.getMultiaddrs()[0]!, '/resume-test/echo/1')
  const roundTrip = () => new Promise<void>((resolve) => {
    echo.addEventListener('message', () => resolve(), { once: true })
    echo.send(new Uint8Array([1]))
  })
  let reset = false
  out.addEventListener('close', () => (reset = true))
  let sentBytes = 0
  let resumed = false
  const received = () => arrived + (inbound?.readBufferLength ?? 0)
  for (;;) {
    bufferedMax = Math.max(bufferedMax, inbound?.readBufferLength ?? 0)
    if (reset || sentBytes >= SEND_BYTES_MAX) return { sentBytes, held: false, reset, bufferedMax }
    if (out.send(CHUNK)) sentBytes += CHUNK.length
    else {
      sentBytes += CHUNK.length
      // Held: everything it sent (but what waits in its own buffer) has reached the receiver, and
      // after a round trip, which brings any window update the receiver sent for it, it still may
      // not send. Otherwise its drain comes (a window update), or the stream closes.
      const heldNow = () => out.writableNeedsDrain && received() === sentBytes - out.writeBufferLength
      await Promise.race([drained(out), until(() => heldNow() || reset)])
      if (heldNow()) await roundTrip()
      if (heldNow() && resumed) return { sentBytes, held: true, reset, bufferedMax: Math.max(bufferedMax, inbound?.readBufferLength ?? 0) }
      // The first hold: the receiver has room again once, and resumes (and is full again at once).
      // Resuming grants the sender a window: wait for it to arrive before looking for a hold again.
      if (heldNow() && inbound !== undefined && !resumed) {
        resumed = true
        bufferedMax = Math.max(bufferedMax, inbound.readBufferLength)
        resume(inbound)
        await Promise.race([drained(out), until(() => reset)])
      }
    }
  }
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5))
}

describe('resuming a paused stream whose reader pauses again at once', () => {
  const nodes: Libp2p[] = []
  afterAll(() => Promise.all(nodes.map((n) => n.stop())))

  it('resumeReading: the sender is held again within a window, and the stream stays up', async () => {
    const r = await run(resumeReading, nodes)
    console.log(`resumeReading: ${JSON.stringify(r)}`)
    expect(r.reset).toBe(false)
    expect(r.held).toBe(true)
    expect(r.bufferedMax).toBeLessThanOrEqual(16 * 1024 * 1024)
  }, 60_000)

  it('stream.resume() alone (@libp2p/utils 7.4.1): the sender is granted window while nothing is read, and the stream is reset (a check that the upstream bug is still there)', async () => {
    const r = await run((stream) => stream.resume(), nodes)
    console.log(`stream.resume(): ${JSON.stringify(r)}`)
    expect(r.held).toBe(false)
    expect(r.reset).toBe(true)
  }, 60_000)
})
