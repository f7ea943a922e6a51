import { defaultLogger } from '@libp2p/logger'
import type { Stream } from '@libp2p/interface'
import { FLOW_CREDIT_BYTES, WIRE_LIMITS, encodeFrame, type DataFrame, type FlowCredit } from '@phoenix-overlay/wire'
import type { Uint8ArrayList } from 'uint8arraylist'
import { describe, expect, it } from 'vitest'
import { FlowCredits, type CreditSink } from '../src/credit.ts'
import { NeighbourLink } from '../src/link.ts'
import { FakeStream, framesWritten } from './fake-node.ts'

const FRAME_PAYLOAD_BYTES = 1_000
const data = (source: string, destination: string, messageId: number): DataFrame => ({ source, destination, name: destination, hopLimit: 8, messageId, ackRequested: false, payload: new Uint8Array(FRAME_PAYLOAD_BYTES) })
const frameOf = (d: DataFrame) => encodeFrame({ kind: 'data', data: d })
/** Every frame here is this size: ids 1-127 (one varint byte), and names of the same length. */
const FRAME_BYTES = frameOf(data('me', 'a', 1)).length

/** A sink that records everything: what went to which link, the credit returned, the frames refused. */
class Recorder implements CreditSink {
  readonly written: { peer: string; data: DataFrame }[] = []
  readonly returned: { peer: string; flows: FlowCredit[] }[] = []
  readonly refused: { data: DataFrame; reason: string }[] = []
  nowMs = 0
  room = true
  hasRoom: (peer: string, bytes: number) => boolean = () => this.room
  write = (peer: string, _frame: Uint8Array, d: DataFrame) => (this.written.push({ peer, data: d }), true)
  returnCredit = (peer: string, flows: FlowCredit[]) => (this.returned.push({ peer, flows }), true)
  refuse = (d: DataFrame, _from: string | undefined, reason: string) => void this.refused.push({ data: d, reason })
  now = () => this.nowMs
}

const turn = () => new Promise((r) => setImmediate(r))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
async function waitFor(condition: () => boolean, withinMs: number): Promise<void> {
  const deadline = performance.now() + withinMs
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`not within ${withinMs} ms`)
    await sleep(10)
  }
}
const limits = { flowWindowBytes: 3 * FRAME_BYTES, ownWaitingBytesMax: 2 * FRAME_BYTES, flowsMaxPerNeighbour: 2, flowStallMs: 1_000 }

describe('per-flow credit, one node (credit.ts)', () => {
  it('a flow stops at its window while another on the same link goes on; credit back moves it again, round robin', () => {
    const sink = new Recorder()
    const credits = new FlowCredits(limits, sink)
    const sent = (to: string) => sink.written.filter((w) => w.data.destination === to).length
    for (let i = 1; i <= 5; i++) expect(credits.submit('gw', frameOf(data('me', 'x', i)), data('me', 'x', i), undefined)).toBe(i <= 3 ? 'sent' : 'queued')
    // Our own sender may have ownWaitingBytesMax waiting: then QUEUE_FULL, for this flow only.
    expect(credits.submit('gw', frameOf(data('me', 'x', 9)), data('me', 'x', 9), undefined)).toBe('flow-full')
    expect(credits.submit('gw', frameOf(data('me', 'y', 1)), data('me', 'y', 1), undefined)).toBe('sent')
    expect([sent('x'), sent('y')]).toEqual([3, 1])
    expect(credits.waiting).toEqual({ frames: 2, bytes: 2 * FRAME_BYTES, flows: 2 })
    // One frame's credit back: one more frame of that flow goes, no more.
    expect(credits.granted('gw', [{ source: 'me', destination: 'x', bytes: FRAME_BYTES }])).toBe(0)
    expect(sent('x')).toBe(4)
    // Credit for a flow we do not know is counted as unmatched, and changes nothing.
    expect(credits.granted('gw', [{ source: 'me', destination: 'z', bytes: FRAME_BYTES }])).toBe(1)
  })

  it('returns a previous hop its credit as frames leave, once per turn; refuses frames beyond its window', async () => {
    const sink = new Recorder()
    const credits = new FlowCredits({ ...limits, flowWindowBytes: FRAME_BYTES }, sink)
    // From 'prev' toward 'next': the first goes on at once, the second waits for next's credit.
    expect(credits.submit('next', frameOf(data('sr', 'd', 1)), data('sr', 'd', 1), 'prev')).toBe('sent')
    expect(credits.submit('next', frameOf(data('sr', 'd', 2)), data('sr', 'd', 2), 'prev')).toBe('queued')
    await turn()
    expect(sink.returned).toEqual([{ peer: 'prev', flows: [{ source: 'sr', destination: 'd', bytes: FRAME_BYTES }] }])
    credits.granted('next', [{ source: 'sr', destination: 'd', bytes: FRAME_BYTES }])
    await turn()
    expect(sink.returned.at(-1)).toEqual({ peer: 'prev', flows: [{ source: 'sr', destination: 'd', bytes: FRAME_BYTES }] })
    // A previous hop that ignores credit: once it holds the protocol's window plus one largest
    // frame here (FLOW_CREDIT_BYTES + frameBytesMax), more is refused.
    sink.room = false
    const big = { ...data('sr', 'd', 3), payload: new Uint8Array(4 * 1024 * 1024 - 4096) }
    const bigBytes = frameOf(big).byteLength
    const results: string[] = []
    for (let i = 0; i < 10 && results.at(-1) !== 'flow-full'; i++) results.push(credits.submit('next', frameOf(big), big, 'prev'))
    const accepted = Math.ceil((FLOW_CREDIT_BYTES + WIRE_LIMITS.frameBytesMax) / bigBytes)
    expect(results).toEqual([...Array<string>(accepted).fill('queued'), 'flow-full'])
  })

  it('returns credit for exactly the flow that used it, whatever characters its ids hold (a newline too)', async () => {
    const sink = new Recorder()
    const credits = new FlowCredits({ ...limits, flowWindowBytes: FRAME_BYTES, flowsMaxPerNeighbour: 8 }, sink)
    // Distinct flows that a key joined with a newline would confuse: ('a\nb', 'c') and ('a', 'b\nc').
    const flows = [['\nsr', 'd'], ['a\nb', 'c'], ['a', 'b\nc'], ['1:x', 'y']] as const
    for (const [source, destination] of flows) expect(credits.submit('next', frameOf(data(source, destination, 1)), data(source, destination, 1), 'prev')).toBe('sent')
    await turn()
    const returned = sink.returned.flatMap((r) => r.flows)
    expect(returned).toEqual(flows.map(([source, destination]) => ({ source, destination, bytes: frameOf(data(source, destination, 1)).length })))
    // The credit frame we write for them decodes (the neighbour would drop us for one it cannot).
    expect(() => encodeFrame({ kind: 'credit', credit: { flows: returned } })).not.toThrow()
    // And credit the next hop returns for them finds each flow: nothing unmatched.
    expect(credits.granted('next', returned)).toBe(0)
  })

  it('returns the bytes the previous hop counted, even when the frame goes on re-encoded a byte shorter (a hop limit of 128 becoming 127)', async () => {
    const sink = new Recorder()
    const credits = new FlowCredits(limits, sink)
    const d = data('sr', 'd', 1)
    expect(credits.submit('next', frameOf(d), d, 'prev', FRAME_BYTES + 1)).toBe('sent')
    await turn()
    expect(sink.returned).toEqual([{ peer: 'prev', flows: [{ source: 'sr', destination: 'd', bytes: FRAME_BYTES + 1 }] }])
  })

  it('a full flow table evicts the flow stalled longest (its waiting frames refused), or refuses the new flow', () => {
    const sink = new Recorder()
    const credits = new FlowCredits(limits, sink)
    sink.room = false
    credits.submit('gw', frameOf(data('me', 'a', 1)), data('me', 'a', 1), undefined)
    sink.nowMs = 500
    credits.submit('gw', frameOf(data('me', 'b', 1)), data('me', 'b', 1), undefined)
    // Two flows toward gw (flowsMaxPerNeighbour): a third is refused while none is stalled.
    expect(credits.submit('gw', frameOf(data('me', 'c', 1)), data('me', 'c', 1), undefined)).toBe('table-full')
    sink.nowMs = 1_200 // 'a' stalled 1.2 s, 'b' 0.7 s: only 'a' may go
    expect(credits.submit('gw', frameOf(data('me', 'c', 1)), data('me', 'c', 1), undefined)).toBe('queued')
    expect(sink.refused.map((r) => [r.data.destination, r.reason])).toEqual([['a', 'queue-full']])
    expect(credits.evictions).toBe(1)
    // A link that closes hands back what waited toward it, to be bounced.
    expect(credits.linkClosed('gw').map((w) => w.data.destination).sort()).toEqual(['b', 'c'])
    expect(credits.waiting).toEqual({ frames: 0, bytes: 0, flows: 0 })
  })
  it('credit owed while credit is being returned goes back too: a link that drains as credit is written to it moves frames at once, and their previous hop is owed', async () => {
    // Node M between A and B: a flow A→B and a flow B→A. Returning credit to B drains B's link at
    // once (the write left its queue empty), and the pump that follows passes A's frame that
    // waited for room toward B: A is owed for it in the middle of returning credit.
    const sink = new Recorder()
    const blocked = new Set<string>()
    sink.hasRoom = (peer: string) => !blocked.has(peer)
    const credits = new FlowCredits(limits, sink)
    sink.returnCredit = (peer: string, flows: FlowCredit[]) => {
      sink.returned.push({ peer, flows })
      if (peer === 'B' && blocked.delete('B')) credits.pump('B')
      return true
    }
    expect(credits.submit('B', frameOf(data('sa', 'db', 1)), data('sa', 'db', 1), 'A')).toBe('sent')
    blocked.add('B')
    expect(credits.submit('B', frameOf(data('sa', 'db', 2)), data('sa', 'db', 2), 'A')).toBe('queued')
    expect(credits.submit('A', frameOf(data('sb', 'da', 1)), data('sb', 'da', 1), 'B')).toBe('sent')
    await turn()
    await turn()
    expect(sink.written.filter((w) => w.peer === 'B')).toHaveLength(2)
    const returnedTo = (peer: string) => sink.returned.filter((r) => r.peer === peer).flatMap((r) => r.flows).reduce((sum, f) => sum + f.bytes, 0)
    // Both of A's frames left M, so A has both frames' credit back (without it, A's flow stalls for good).
    const bytesOf = (source: string, destination: string) => frameOf(data(source, destination, 1)).length
    expect(returnedTo('A')).toBe(2 * bytesOf('sa', 'db'))
    expect(returnedTo('B')).toBe(bytesOf('sb', 'da'))
  })
  it('credit a link cannot take now (its control queue is full) stays owed and goes once the link drains, never dropped', async () => {
    const sink = new Recorder()
    const credits = new FlowCredits(limits, sink)
    let full = true
    sink.returnCredit = (peer: string, flows: FlowCredit[]) => !full && (sink.returned.push({ peer, flows }), true)
    const d = data('sr', 'd', 1)
    expect(credits.submit('next', frameOf(d), d, 'prev')).toBe('sent')
    await turn()
    expect(sink.returned).toEqual([])
    expect(credits.creditRefused).toBe(1)
    full = false
    credits.linkDrained('prev')
    await turn()
    expect(sink.returned).toEqual([{ peer: 'prev', flows: [{ source: 'sr', destination: 'd', bytes: FRAME_BYTES }] }])
  })
  it('self-repair: a flow out of credit with frames waiting and no credit back for flowStallMs sends again, once per stall', async () => {
    const sink = new Recorder()
    // flowStallMs 200 ms of the sink's clock; the check runs every 100 ms of real time.
    const credits = new FlowCredits({ ...limits, flowStallMs: 200 }, sink)
    for (let i = 1; i <= 5; i++) credits.submit('gw', frameOf(data('me', 'x', i)), data('me', 'x', i), undefined)
    expect(sink.written).toHaveLength(3) // the window; two wait, and their credit never comes (lost)
    await sleep(400) // real checks ran, but on the sink's clock no time passed: not stalled yet
    expect([sink.written.length, credits.resyncs]).toEqual([3, 0])
    sink.nowMs = 200
    await waitFor(() => credits.resyncs > 0, 5_000)
    expect(sink.written.map((w) => w.data.messageId)).toEqual([1, 2, 3, 4, 5])
    expect(credits.resyncs).toBe(1)
    // Nothing waits any more: no further resync.
    await sleep(400)
    expect(credits.resyncs).toBe(1)
    expect(credits.waiting).toEqual({ frames: 0, bytes: 0, flows: 1 })
  })
})

describe('a link', () => {
  it('hands the stream a large frame itself, its length prefix beside it: the payload is not copied', async () => {
    const stream = new FakeStream()
    const handed: unknown[] = []
    const send = stream.send.bind(stream)
    stream.send = (bytes) => (handed.push(bytes), send(bytes))
    const link = new NeighbourLink('peer', stream as unknown as Stream, { outboundBytesMax: 1024 * 1024, outboundFramesMax: 16, inboundBytesMax: 1024 * 1024 }, defaultLogger().forComponent('test:link'), () => true, () => {}, () => {})
    const frame = frameOf({ ...data('me', 'far', 1), payload: new Uint8Array(64 * 1024) })
    expect(link.send(frame)).toBe(true)
    await Promise.resolve()
    expect(handed).toHaveLength(1)
    expect([...(handed[0] as Iterable<Uint8Array>)].at(-1)).toBe(frame)
    link.abort('done')
  })


  it('writes the first frame at once and the rest queued in the same turn in one stream write, in order, small ones copied into one buffer', async () => {
    const stream = new FakeStream()
    const handed: (Uint8Array | Uint8ArrayList)[] = []
    const send = stream.send.bind(stream)
    stream.send = (bytes) => (handed.push(bytes), send(bytes))
    const link = new NeighbourLink('peer', stream as unknown as Stream, { outboundBytesMax: 1024 * 1024, outboundFramesMax: 64, inboundBytesMax: 1024 * 1024 }, defaultLogger().forComponent('test:link'), () => true, () => {}, () => {})
    const ids = Array.from({ length: 20 }, (_, i) => i + 1)
    for (const id of ids) expect(link.send(frameOf(data('me', 'far', id)))).toBe(true)
    await turn()
    expect(handed).toHaveLength(2)
    expect([...(handed[1] as Uint8ArrayList)]).toHaveLength(1)
    expect(framesWritten(stream).map((f) => (f.kind === 'data' ? f.data.messageId : -1))).toEqual(ids)
    link.abort('done')
  })

  it('writes a routing update queued behind megabytes of data next: control frames go before data', async () => {
    const stream = new FakeStream()
    stream.stalled = true
    const link = new NeighbourLink('peer', stream as unknown as Stream, { outboundBytesMax: 64 * 1024 * 1024, outboundFramesMax: 65_536, inboundBytesMax: 1024 * 1024 }, defaultLogger().forComponent('test:link'), () => true, () => {}, () => {})
    for (let i = 0; i < 100; i++) expect(link.send(frameOf({ ...data('me', 'far', i), payload: new Uint8Array(64 * 1024) }))).toBe(true)
    await turn()
    // The first batch is in the stream, which stalled; the rest of the data waits.
    const first = framesWritten(stream).length
    expect(first).toBeGreaterThan(0)
    expect(first).toBeLessThan(100)
    expect(link.send(encodeFrame({ kind: 'update', update: { neighbourSlots: [], transSets: [], entries: [] } }))).toBe(true)
    stream.drain()
    await turn()
    const kinds = framesWritten(stream).map((f) => f.kind)
    expect(kinds.slice(0, first + 2)).toEqual([...Array<string>(first).fill('data'), 'update', 'data'])
    expect(kinds).toHaveLength(101)
    link.abort('done')
  })
})
