import { setFlagsFromString } from 'node:v8'
import { afterEach, describe, expect, it } from 'vitest'
import { TestNodes, addressOf, waitUntil } from './nodes.ts'

// V8's own answer (a natives-syntax function, compiled after the flag is set): does the object
// keep fast properties (a hidden class), or has it become a dictionary?
setFlagsFromString('--allow-natives-syntax')
const hasFastProperties = new Function('o', 'return %HasFastProperties(o)') as (o: object) => boolean

/** libp2p's connection object holds the transport's connection (`maConn`, not in its public type): what every socket read goes through. */
function socketConnectionOf(connection: unknown): object {
  const maConn = (connection as { maConn?: unknown }).maConn
  if (typeof maConn !== 'object' || maConn === null) throw new Error('libp2p no longer keeps the socket connection as `maConn`: update this test')
  return maConn
}

// Issue 19: the strangers' byte meter (node.ts) wraps an inbound connection's `onData` until the
// handshake authenticates the peer. It was taken off with `delete`, which turns the object into a
// dictionary for the rest of its life, and every socket read of a connection a neighbour dialled
// (a relay's inbound hop, a receiver's) looked up its fields in a hash table.
describe('inbound connections after the stranger meter', () => {
  const nodes = new TestNodes()
  afterEach(() => nodes.stopAll())

  it('keep fast properties once authenticated, as outbound ones do', async () => {
    const hub = await nodes.start({ names: ['hub'], discovery: false })
    const member = await nodes.start({ names: ['member'], hubs: [addressOf(hub)], discovery: false })
    await waitUntil('the member reaches the hub', () => member.phoenix.resolve('hub') !== undefined)
    const inbound = hub.libp2p.getConnections()
    const outbound = member.libp2p.getConnections()
    expect(inbound.map((c) => c.direction)).toEqual(['inbound'])
    expect(outbound.map((c) => c.direction)).toEqual(['outbound'])
    // The check itself tells a dictionary apart (else a pass would mean nothing).
    const dictionary: Record<string, number> = { a: 1, b: 2 }
    delete dictionary.a
    expect(hasFastProperties(dictionary)).toBe(false)
    expect(hasFastProperties(socketConnectionOf(outbound[0]))).toBe(true)
    expect(hasFastProperties(socketConnectionOf(inbound[0]))).toBe(true)
  })
})
