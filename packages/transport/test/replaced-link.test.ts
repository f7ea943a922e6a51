import { generateKeyPair } from '@libp2p/crypto/keys'
import type { Connection, PrivateKey, Stream } from '@libp2p/interface'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import type { Frame } from '@phoenix-overlay/wire'
import { describe, expect, it } from 'vitest'
import { FakeNode, FakeStream, framesWritten, prefixed, settle } from './fake-node.ts'

const ownRecord = (peer: string): Frame => ({ kind: 'update', update: { neighbourSlots: [], transSets: [], entries: [{ destination: peer, seq: 0, nhops: 0, names: [], addresses: [], trans: -1 }], hello: { receiverSeq: undefined } } })

/** A stream as `attach` sees it, opened by us (outbound) or by the peer (inbound). */
function streamOpenedBy(direction: 'inbound' | 'outbound'): FakeStream {
  const stream = new FakeStream()
  Object.defineProperty(stream, 'direction', { value: direction })
  return stream
}

/** A node whose dials wait until the test answers them (`answer`: a stream of ours, or a failure), and a peer with a larger id. */
async function nodeWithPendingDial() {
  const fakeKey = await generateKeyPair('Ed25519')
  let key: PrivateKey
  do key = await generateKeyPair('Ed25519')
  while (peerIdFromPrivateKey(key).toString() < peerIdFromPrivateKey(fakeKey).toString())
  const remotePeer = peerIdFromPrivateKey(key)
  let answer: (outcome: FakeStream | Error) => void = () => {}
  let dialled: () => void = () => {}
  const dialStarted = new Promise<void>((resolve) => (dialled = resolve))
  const openConnection = () => {
    dialled()
    return new Promise((resolve, reject) => (answer = (outcome) => (outcome instanceof Error ? reject(outcome) : resolve({ remotePeer, newStream: async () => outcome }))))
  }
  const fake = new FakeNode(fakeKey, { names: ['mine'], signRecords: false }, { connectionManager: { openConnection } as never })
  await fake.node.start()
  fake.node.afterStart()
  return { fake, peer: remotePeer.toString(), connection: { remotePeer } as unknown as Connection, dialStarted, answer: (outcome: FakeStream | Error) => answer(outcome) }
}

/** What the node told a neighbour about `destination` on `stream`: [seq, nhops] of each entry. */
const told = (stream: FakeStream, destination: string) => framesWritten(stream).flatMap((f) => (f.kind === 'update' ? f.update.entries : [])).filter((e) => e.destination === destination).map((e) => [e.seq, e.nhops])

describe('a link replaced by the stream the smaller peer id opened (both ends dialled at once)', () => {
  it('keeps the peer one hop away at its number: no withdrawal to the peer or to the other neighbours', async () => {
    // The core heard the replacement as connectionDown then connectionUp: it withdrew the peer's
    // route (seq 1), told every other neighbour, which adopted the retraction even where it was
    // connected to the peer itself, and held the peer at the odd number while connected to it,
    // until the peer issued seq 2 (test/netns: a moment of up to 26 failed routes right after
    // convergence). Now it is `connectionReplaced`: routes stay, and so does the number.
    const fake = await FakeNode.create({ names: ['mine'], signRecords: false })
    await fake.node.start()
    fake.node.afterStart()
    const other = await fake.connect()
    other.stream.deliver(prefixed(ownRecord(other.peer)))
    const key = await generateKeyPair('Ed25519')
    const peer = peerIdFromPrivateKey(key).toString()
    const connection = { remotePeer: peerIdFromPrivateKey(key) } as unknown as Connection
    // The kept stream is the one the smaller id opened: first the other one, then that one.
    const weAreSmaller = fake.id < peer
    const first = streamOpenedBy(weAreSmaller ? 'inbound' : 'outbound')
    fake.handler!(first as unknown as Stream, connection)
    first.deliver(prefixed(ownRecord(peer)))
    await settle(20)
    expect(fake.node.routes().find((r) => r.destination === peer)).toMatchObject({ seq: 0, nhops: 1, reachable: true })
    expect(told(other.stream, peer)).toEqual([[0, 1]])
    const second = streamOpenedBy(weAreSmaller ? 'outbound' : 'inbound')
    fake.handler!(second as unknown as Stream, connection)
    await settle(20)
    expect(first.aborted).toMatch(/replaced/)
    expect(second.aborted).toBeUndefined()
    expect(fake.node.peers().sort()).toEqual([other.peer, peer].sort())
    expect(fake.node.routes().find((r) => r.destination === peer)).toMatchObject({ seq: 0, nhops: 1, reachable: true })
    // Nothing withdrawn anywhere; the new stream starts with our hello, which says we hold its seq 0.
    expect(told(other.stream, peer).filter(([seq]) => seq !== 0)).toEqual([])
    const hello = framesWritten(second).find((f) => f.kind === 'update')
    expect(hello?.kind === 'update' ? hello.update.hello : undefined).toEqual({ receiverSeq: 0 })
    await fake.node.stop()
  })

  it('the smaller end: a close of the peer\'s stream while our own is being opened waits for ours, which replaces it; with no stream of ours it is the loss it was', async () => {
    // test/netns: the larger end accepted our stream and reset its own before our opening had its
    // answer; the close here was a loss (the peer withdrawn, seq 3, 21 routes failed across the
    // overlay) and our stream, attached a moment later, a new neighbour held at the odd number.
    for (const outcome of ['our stream', 'no stream'] as const) {
      const { fake, peer, connection, dialStarted, answer } = await nodeWithPendingDial()
      const other = await fake.connect()
      other.stream.deliver(prefixed(ownRecord(other.peer)))
      fake.node.addHub(`/ip4/10.9.9.9/tcp/4001/p2p/${peer}`)
      await dialStarted
      const theirs = streamOpenedBy('inbound')
      fake.handler!(theirs as unknown as Stream, connection)
      theirs.deliver(prefixed(ownRecord(peer)))
      await settle(20)
      expect(fake.node.routes().find((r) => r.destination === peer)).toMatchObject({ seq: 0, nhops: 1, reachable: true })
      theirs.emitClose(new Error('The stream has been reset'))
      await settle(20)
      expect(fake.node.routes().find((r) => r.destination === peer)).toMatchObject({ seq: 0, nhops: 1, reachable: true })
      expect(told(other.stream, peer).filter(([seq]) => seq !== 0)).toEqual([])
      if (outcome === 'our stream') {
        const ours = streamOpenedBy('outbound')
        answer(ours)
        await settle(20)
        expect(fake.node.peers().sort()).toEqual([other.peer, peer].sort())
        expect(fake.node.routes().find((r) => r.destination === peer)).toMatchObject({ seq: 0, nhops: 1, reachable: true })
        expect(told(other.stream, peer).filter(([seq]) => seq !== 0)).toEqual([])
      } else {
        answer(new Error('connection refused'))
        await settle(20)
        expect(fake.node.peers()).toEqual([other.peer])
        expect(fake.node.routes().find((r) => r.destination === peer)).toMatchObject({ seq: 1, reachable: false })
        expect(told(other.stream, peer)).toContainEqual([1, 0])
      }
      await fake.node.stop()
    }
  })
})
