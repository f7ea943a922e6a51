import { PhoenixCore } from '@phoenix-overlay/core'
import type { Frame } from '@phoenix-overlay/wire'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { PeerDropped, ReceivedMessage } from '../src/index.ts'
import { FakeNode, concat, framesWritten, prefixed, settle } from './fake-node.ts'

const update = (peer: string, seq: number): Frame => ({ kind: 'update', update: { neighbourSlots: [], transSets: [], entries: [{ destination: peer, seq, nhops: 0, names: [`svc-${seq}`], addresses: [], trans: -1 }] } })
const data = (source: string, destination: string, name: string): Frame => ({ kind: 'data', data: { source, destination, name, hopLimit: 8, messageId: 7, ackRequested: false, payload: new Uint8Array([1, 2, 3]) } })

/**
 * A node whose core takes one queued update at a time (inboxMessagesMax 1): a second update in
 * the same delivery is held, the link pauses, and the held frames are handed in again in the
 * middle of the next drain, which is where the clock and the guards matter.
 */
async function pausedNode() {
  const fake = await FakeNode.create({ names: ['mine'], signRecords: false, timing: { leaveLingerMaxMs: 0 }, core: { limits: { inboxMessagesMax: 1 } } })
  await fake.node.start()
  fake.node.afterStart()
  const dropped: PeerDropped[] = []
  const received: ReceivedMessage[] = []
  fake.node.addEventListener('peer:dropped', (event) => dropped.push(event.detail))
  fake.node.addEventListener('message', (event) => received.push(event.detail))
  return { fake, dropped, received }
}

describe('a relay survives its traffic (issue 11, items 5 and 6)', () => {
  const uncaught: unknown[] = []
  const record = (error: unknown) => uncaught.push(error)
  beforeEach(() => {
    uncaught.length = 0
    process.on('uncaughtException', record)
    process.on('unhandledRejection', record)
  })
  afterEach(() => {
    process.off('uncaughtException', record)
    process.off('unhandledRejection', record)
    vi.restoreAllMocks()
  })

  it('one clock per core: a frame handed to the core in the middle of a drain never makes a later step go back in time', async () => {
    const { fake, dropped } = await pausedNode()
    const { stream, peer } = await fake.connect()
    for (let round = 0; round < 20; round++) {
      // Two updates at once: the second waits for the first to be applied, then goes in mid-drain.
      stream.deliver(concat([prefixed(update(peer, 4 * round)), prefixed(update(peer, 4 * round + 2))]))
      await settle()
    }
    expect(uncaught.map(String)).toEqual([])
    expect(dropped).toEqual([])
    expect(fake.node.peers()).toEqual([peer])
    expect(fake.node.routes().find((r) => r.destination === peer)).toMatchObject({ seq: 78, reachable: true })
    await fake.node.stop()
  })

  it('a stream that cannot resume (it is closing: a leave) closes its link; the neighbour is not dropped as an internal error', async () => {
    // A churn audit: once in 392 graceful leaves, "dropping neighbour … (internal): … StreamStateError".
    const { fake, dropped } = await pausedNode()
    const { stream, peer } = await fake.connect()
    stream.resume = () => {
      throw new Error('StreamStateError: Cannot resume a stream that is closing/closed')
    }
    // Two updates at once: the second is held (the core takes one at a time) and the stream paused; taking it resumes the stream.
    stream.deliver(concat([prefixed(update(peer, 2)), prefixed(update(peer, 4))]))
    await settle(20)
    expect(uncaught.map(String)).toEqual([])
    expect(dropped).toEqual([])
    expect(fake.node.peers()).toEqual([])
    await fake.node.stop()
  })

  it('a frame that makes the core throw closes that connection only; the node and its other neighbours go on', async () => {
    const { fake, dropped, received } = await pausedNode()
    const bad = await fake.connect()
    const good = await fake.connect()
    const forward = PhoenixCore.prototype.forward
    vi.spyOn(PhoenixCore.prototype, 'forward').mockImplementation(function (this: PhoenixCore, destination, hopLimit, name) {
      if (name === 'boom') throw new TypeError('boom: the core failed on this frame')
      return forward.call(this, destination, hopLimit, name)
    })
    // The data frame is held behind an update and handled when the link resumes, inside a drain.
    bad.stream.deliver(concat([prefixed(update(bad.peer, 0)), prefixed(update(bad.peer, 2)), prefixed(data(bad.peer, fake.id, 'boom'))]))
    await settle()
    expect(uncaught.map(String)).toEqual([])
    expect(dropped).toHaveLength(1)
    expect(dropped[0]).toMatchObject({ peer: bad.peer, kind: 'internal' })
    expect(dropped[0]!.reason).toMatch(/boom: the core failed on this frame/)
    expect(bad.stream.aborted).toMatch(/boom/)
    expect(fake.node.metricsText()).toMatch(/^phoenix_internal_errors_total 1$/m)
    // The same frame handled straight away (not held) is guarded the same way.
    const other = await fake.connect()
    other.stream.deliver(prefixed(data(other.peer, fake.id, 'boom')))
    await settle()
    expect(uncaught.map(String)).toEqual([])
    expect(dropped.map((d) => d.peer)).toEqual([bad.peer, other.peer])
    // The node goes on: the good neighbour's message is delivered.
    good.stream.deliver(prefixed(data(good.peer, fake.id, 'mine')))
    await settle()
    expect(received.map((m) => m.from)).toEqual([good.peer])
    expect(fake.node.peers()).toEqual([good.peer])
    await fake.node.stop()
  })

  it('a connection whose close makes the core throw is still closed, and the process goes on', async () => {
    const { fake } = await pausedNode()
    const { stream, peer } = await fake.connect()
    vi.spyOn(PhoenixCore.prototype, 'connectionDown').mockImplementation(() => {
      throw new TypeError('connectionDown failed')
    })
    stream.emitClose(new Error('reset by peer'))
    await settle()
    expect(uncaught.map(String)).toEqual([])
    expect(fake.node.peers()).not.toContain(peer)
    expect(fake.node.metricsText()).toMatch(/^phoenix_internal_errors_total 1$/m)
    vi.restoreAllMocks()
    await fake.node.stop()
  })

  it('a relay bounces what it still held for a neighbour whose connection closed (neighbour-down), never drops it silently', async () => {
    const { fake } = await pausedNode()
    const source = await fake.connect()
    const stalled = await fake.connect()
    await settle()
    stalled.stream.stalled = true // from now on: the first write fills the stream
    const frames = Array.from({ length: 10 }, (_, i): Frame => ({ kind: 'data', data: { source: source.peer, destination: stalled.peer, name: '', hopLimit: 8, messageId: 100 + i, ackRequested: true, payload: new Uint8Array(64) } }))
    // The first frame alone (the link writes what one delivery queued as one batch), then the rest.
    source.stream.deliver(prefixed(frames[0]!))
    await settle()
    source.stream.deliver(concat(frames.slice(1).map(prefixed)))
    await settle()
    // The stream took the first frame and stalled; the other nine wait in the relay's queue.
    const written = framesWritten(stalled.stream).flatMap((f) => (f.kind === 'data' ? [f.data.messageId] : []))
    expect(written).toEqual([100])
    stalled.stream.emitClose(new Error('connection reset'))
    await settle()
    const bounced = framesWritten(source.stream).flatMap((f) => (f.kind === 'undeliverable' ? [f.undeliverable] : []))
    const unsent = frames.flatMap((f) => (f.kind === 'data' && !written.includes(f.data.messageId) ? [f.data.messageId] : []))
    expect(bounced.map((u) => [u.messageId, u.reason, u.destination])).toEqual(unsent.map((id) => [id, 'neighbour-down', source.peer]))
    expect(unsent).toHaveLength(9)
    expect(uncaught.map(String)).toEqual([])
    await fake.node.stop()
  })

  it('a relay never bounces a frame the next hop\'s stream already took, however soon the connection closes after it', async () => {
    // The link writes a frame to the stream as soon as it is queued (one microtask later): a frame
    // written that way and followed by nothing else was once counted unsent and bounced at the close, though
    // the next hop had it (a message received and reported lost).
    const { fake } = await pausedNode()
    const source = await fake.connect()
    const next = await fake.connect()
    const frames = Array.from({ length: 5 }, (_, i): Frame => ({ kind: 'data', data: { source: source.peer, destination: next.peer, name: '', hopLimit: 8, messageId: 200 + i, ackRequested: true, payload: new Uint8Array(64) } }))
    for (const frame of frames) {
      source.stream.deliver(prefixed(frame))
      await settle()
    }
    const written = framesWritten(next.stream).flatMap((f) => (f.kind === 'data' ? [f.data.messageId] : []))
    expect(written).toEqual([200, 201, 202, 203, 204])
    next.stream.emitClose(new Error('connection reset'))
    await settle()
    const bounced = framesWritten(source.stream).flatMap((f) => (f.kind === 'undeliverable' ? [f.undeliverable.messageId] : []))
    expect(bounced).toEqual([])
    expect(uncaught.map(String)).toEqual([])
    await fake.node.stop()
  })

  it('answers a message from a node it has no route to yet (it just joined) back the way the message came, instead of dropping the ack', async () => {
    const { fake, received } = await pausedNode()
    const relay = await fake.connect()
    const far = 'a-node-two-hops-away-not-in-our-table-yet'
    relay.stream.deliver(prefixed({ kind: 'data', data: { source: far, destination: fake.id, name: 'mine', hopLimit: 7, messageId: 42, ackRequested: true, payload: new Uint8Array([1]) } }))
    await settle()
    expect(received.map((m) => m.messageId)).toEqual([42])
    const acks = framesWritten(relay.stream).flatMap((f) => (f.kind === 'ack' ? [f.ack] : []))
    expect(acks.map(({ source, destination, messageId }) => ({ source, destination, messageId }))).toEqual([{ source: fake.id, destination: far, messageId: 42 }])
    expect(fake.node.metricsText()).not.toMatch(/phoenix_control_dropped_total/)
    await fake.node.stop()
  })

  it('an undeliverable notice for an id this node never used is counted, not raised; one for its own send is raised', async () => {
    const { fake } = await pausedNode()
    const next = await fake.connect()
    next.stream.deliver(prefixed(update(next.peer, 2)))
    await settle()
    const notices: number[] = []
    fake.node.addEventListener('undeliverable', (event) => notices.push(event.detail.messageId))
    await fake.node.send('svc-2', new Uint8Array([1]))
    await fake.node.send('svc-2', new Uint8Array([2]), { messageId: 77 })
    await settle()
    const sent = framesWritten(next.stream).flatMap((f) => (f.kind === 'data' ? [f.data.messageId] : []))
    expect(sent).toHaveLength(2)
    const notice = (messageId: number): Frame => ({ kind: 'undeliverable', undeliverable: { source: next.peer, destination: fake.id, hopLimit: 8, messageId, reason: 'no-route' } })
    // Forged: the ids right after and before ours (what a last + 1 counter would have used), and 1.
    for (const forged of [sent[0]! + 1, sent[0]! - 1, 1]) next.stream.deliver(prefixed(notice(forged)))
    next.stream.deliver(prefixed(notice(sent[0]!)))
    next.stream.deliver(prefixed(notice(77)))
    await settle()
    expect(notices).toEqual([sent[0], 77])
    expect(fake.node.metricsText()).toMatch(/phoenix_notices_unmatched_total 3\b/)
    await fake.node.stop()
  })

  it('a message that arrived with more hop limit left than ours reports 0 hops, never a negative count', async () => {
    const { fake, received } = await pausedNode()
    const relay = await fake.connect()
    const message = (hopLimit: number, messageId: number): Frame => ({ kind: 'data', data: { source: relay.peer, destination: fake.id, name: 'mine', hopLimit, messageId, ackRequested: false, payload: new Uint8Array([1]) } })
    relay.stream.deliver(prefixed(message(255, 1)))
    relay.stream.deliver(prefixed(message(14, 2)))
    await settle()
    expect(received.map((m) => [m.messageId, m.hops])).toEqual([[1, 0], [2, 2]])
    await fake.node.stop()
  })
})
