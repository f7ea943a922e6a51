import type { Libp2p, Stream } from '@libp2p/interface'
import { afterAll, describe, expect, it } from 'vitest'
import { resumeReading } from '@phoenix-overlay/transport/testing'
import { drained, pauseResumeRelay, READ_BUFFER_BYTES_MAX } from '../src/relays.ts'
import { bareNode } from '../src/stack.ts'

// The pause/resume relay toward a receiver that stops reading: the relay's outbound stream fills,
// it pauses its inbound one, and when the outbound drains a little it resumes, handing the data
// read meanwhile to the outbound at once, which is full again. With `inbound.resume()`
// (@libp2p/utils 7.4.1) that second pause did not reach Yamux: the sender was granted window
// while nothing was read, the relay's read buffer passed READ_BUFFER_BYTES_MAX and the stream was
// reset ("stream closed while waiting for drain" at the sender; the forwarding benchmark's
// pause/resume path under load, where the relay's turns came late). Each step here waits for a
// condition: the sender held (everything it sent has reached the relay, and a round trip later it
// still may not send), or the sender 40 MiB further on.

const TRANSFER_BYTES = 96 * 1024 * 1024
const STALL_AT_BYTES = 8 * 1024 * 1024
/** More than the relay may buffer: a sender this far ahead of a stalled receiver is not held. */
const AHEAD_BYTES = 40 * 1024 * 1024
const CHUNK = new Uint8Array(64 * 1024)
const listen = ['/ip4/127.0.0.1/tcp/0']

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5))
}

describe('the pause/resume relay toward a receiver that stalls twice', () => {
  const nodes: Libp2p[] = []
  afterAll(() => Promise.all(nodes.map((n) => n.stop())))

  it(`carries ${TRANSFER_BYTES / 1024 / 1024} MiB whole, the sender held while the receiver stalls`, async () => {
    const [sender, middle, receiver] = await Promise.all([bareNode(listen), bareNode(listen), bareNode(listen)])
    nodes.push(sender, middle, receiver)
    let sent = 0
    let held = false
    let closed: string | undefined
    let received = 0
    let stalls = 0
    let relayed = 0
    let relayInbound: Stream | undefined
    await receiver.handle('/relays-test/sink/1', (stream) => {
      stream.maxReadBufferLength = READ_BUFFER_BYTES_MAX
      stream.addEventListener('message', (event) => {
        received += event.data.byteLength
        // Stalls at 8 MiB until the sender is held, then reads one delivery and stalls again
        // until the sender is held again (or has gone far ahead, or lost its stream).
        if (stalls === 0 ? received < STALL_AT_BYTES : stalls > 1) return
        stalls++
        stream.pause()
        const sentAtStall = sent
        held = false
        void until(() => held || sent - sentAtStall >= AHEAD_BYTES || closed !== undefined).then(() => resumeReading(stream))
      })
    })
    await middle.handle('/relays-test/echo/1', (stream) => stream.addEventListener('message', (event) => void stream.send(event.data)))
    await middle.handle('/relays-test/relay/1', async (inbound) => {
      relayInbound = inbound
      inbound.maxReadBufferLength = READ_BUFFER_BYTES_MAX
      const outbound = await middle.dialProtocol(receiver.getMultiaddrs()[0]!, '/relays-test/sink/1')
      pauseResumeRelay(inbound, outbound)
      // After the relay's own listener: a listener before it took what arrived while it dialled.
      inbound.addEventListener('message', (event) => (relayed += event.data.byteLength))
    })
    const out = await sender.dialProtocol(middle.getMultiaddrs()[0]!, '/relays-test/relay/1')
    out.addEventListener('close', (event) => (closed = event.error?.message ?? 'closed'))
    const echo = await sender.dialProtocol(middle.getMultiaddrs()[0]!, '/relays-test/echo/1')
    const roundTrip = () => new Promise<void>((resolve) => {
      echo.addEventListener('message', () => resolve(), { once: true })
      echo.send(new Uint8Array([1]))
    })
    // Everything sent (but what waits in the sender's own buffer) has reached the relay, and the sender may not send.
    const arrived = () => out.writableNeedsDrain && relayed + (relayInbound?.readBufferLength ?? 0) === sent - out.writeBufferLength
    let bufferedMax = 0
    while (sent < TRANSFER_BYTES && closed === undefined) {
      bufferedMax = Math.max(bufferedMax, relayInbound?.readBufferLength ?? 0)
      sent += CHUNK.length
      if (out.send(CHUNK)) continue
      for (;;) {
        const drain = drained(out).then(() => true, () => true)
        if (await Promise.race([drain, until(() => arrived() || closed !== undefined).then(() => false)])) break
        if (closed !== undefined) break
        // A round trip brings any window update the relay sent for what arrived: still held, it is held.
        await roundTrip()
        if (arrived()) held = true
        if (await drain) break
      }
    }
    expect(closed, "the sender's stream").toBeUndefined()
    expect(stalls).toBe(2)
    await until(() => received >= TRANSFER_BYTES)
    expect(received).toBe(TRANSFER_BYTES)
    expect(bufferedMax).toBeLessThanOrEqual(READ_BUFFER_BYTES_MAX)
  }, 60_000)
})
