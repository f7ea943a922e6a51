import { PhoenixCore } from '@phoenix-overlay/core'
import type { Frame } from '@phoenix-overlay/wire'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { FakeNode, framesWritten, prefixed, settle, type FakeStream } from './fake-node.ts'

/**
 * What a relay does around one lone forwarded frame, counted (not timed): the work that runs in
 * the event loop's turns right after the write is CPU the next process on the path waits for when
 * the machine is busy, on a latency probe (issue 19).
 */
describe('a relay forwarding lone frames', () => {
  const started: FakeNode[] = []
  afterEach(async () => {
    vi.restoreAllMocks()
    await Promise.all(started.splice(0).map((fake) => fake.node.stop()))
  })

  async function relay(init: ConstructorParameters<typeof FakeNode>[1] = {}, nextOptions: { stalled?: boolean } = {}): Promise<{ source: { stream: FakeStream; peer: string }; next: { stream: FakeStream; peer: string } }> {
    const fake = await FakeNode.create({ names: ['relay'], signRecords: false, ...init, timing: { leaveLingerMaxMs: 0, ...init.timing } })
    started.push(fake)
    await fake.node.start()
    fake.node.afterStart()
    const source = await fake.connect({ encrypted: true })
    const next = await fake.connect({ encrypted: true, ...nextOptions })
    await settle(20)
    return { source, next }
  }

  const dataFrame = (source: string, destination: string, messageId: number): Uint8Array =>
    prefixed({ kind: 'data', data: { source, destination, name: '', hopLimit: 8, messageId, ackRequested: false, payload: new Uint8Array(64).fill(messageId & 0xff) } } as Frame)

  const dataWritten = (stream: FakeStream): number => framesWritten(stream).filter((frame) => frame.kind === 'data').length

  it('runs no pass of the routing core for a frame that only passes through (credit on, the default)', async () => {
    const { source, next } = await relay()
    const hasWork = vi.spyOn(PhoenixCore.prototype, 'hasWork')
    const frames = 20
    for (let i = 0; i < frames; i++) {
      source.stream.deliver(dataFrame(source.peer, next.peer, 1000 + i))
      await settle(3)
    }
    expect(dataWritten(next.stream)).toBe(frames)
    // Each write emptied the next hop's queue, and each credit frame back to the source emptied
    // its queue too: both drains scheduled a core pass (core steps, every link resumed, the wake
    // timer re-armed), two or more per frame. Nothing was held, so none is needed. (A core timer
    // that happens to fall due meanwhile is allowed for: at most 2 calls.)
    expect(hasWork.mock.calls.length).toBeLessThanOrEqual(2)
  })

  it('without credit, a link paused behind a full next hop resumes once that hop drains', async () => {
    const outboundFramesMaxPerNeighbour = 8
    const { source, next } = await relay({ limits: { flowWindowBytes: 0, outboundFramesMaxPerNeighbour } }, { stalled: true })
    const frames = 3 * outboundFramesMaxPerNeighbour
    // One delivery each: the next hop's queue fills, then the source's link holds the rest and pauses.
    for (let i = 0; i < frames; i++) source.stream.deliver(dataFrame(source.peer, next.peer, 2000 + i))
    await settle(5)
    const before = dataWritten(next.stream)
    expect(before).toBeLessThan(frames)
    // The next hop reads again: its queue empties, and that drain must let the held frames go on.
    next.stream.drain()
    await settle(20)
    expect(dataWritten(next.stream)).toBe(frames)
  })

  it('finishes writing to a neighbour that announced its leave once its queue drains', async () => {
    const { source, next } = await relay({}, { stalled: true })
    // Frames for the next hop wait in its queue: it stopped reading.
    for (let i = 0; i < 4; i++) source.stream.deliver(dataFrame(source.peer, next.peer, 3000 + i))
    await settle(5)
    // It withdraws its own route (a leave): our side is closed once what is queued for it is written.
    const leave: Frame = { kind: 'update', update: { neighbourSlots: [], transSets: [], entries: [{ destination: next.peer, seq: 1, nhops: 0, names: [], addresses: [], trans: -1 }] } }
    next.stream.deliver(prefixed(leave))
    await settle(5)
    expect(next.stream.writeClosed).toBe(false)
    next.stream.drain()
    await settle(10)
    expect(dataWritten(next.stream)).toBe(4)
    expect(next.stream.writeClosed).toBe(true)
  })
})
