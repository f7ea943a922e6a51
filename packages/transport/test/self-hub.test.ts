import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { createServer } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { TestNodes, addressOf, waitUntil, type TestNode } from './nodes.ts'

const counter = (node: TestNode, name: string): number => Number(new RegExp(`phoenix_${name}_total (\\d+)`).exec(node.phoenix.metricsText())?.[1] ?? 0)

/** A loopback port free right now, for a node that must know its own address before it starts. */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Back-offs short enough that a node redialling its own address would do so dozens of times in the test's second. */
const FAST_REDIAL = { core: { timing: { dialBackoffInitialMs: 10, redialBackoffMaxMs: 50 } } }
const QUIET_MS = 1_000

describe('a hub list that names the node itself (every process of a job given the same list)', () => {
  const nodes = new TestNodes()
  afterEach(() => nodes.stopAll())

  it.each([
    ['by address only', (port: number) => `/ip4/127.0.0.1/tcp/${port}`],
    ['with its own peer id', (port: number, id: string) => `/ip4/127.0.0.1/tcp/${port}/p2p/${id}`],
  ])('%s: that address is dialled once, found to be itself, and never again; the other hub is a neighbour', async (_, form) => {
    const other = await nodes.start()
    const port = await freePort()
    const privateKey = await generateKeyPair('Ed25519')
    const self = form(port, peerIdFromPrivateKey(privateKey).toString())
    const a = await nodes.start({ listen: [`/ip4/127.0.0.1/tcp/${port}`], privateKey, hubs: [self, addressOf(other)], names: ['a'], ...FAST_REDIAL })
    await waitUntil('the other hub reaches a by name', () => other.phoenix.resolve('a') !== undefined)
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS))
    expect(counter(a, 'dials_reached_self')).toBe(1)
    // One dial of each hub: before, its own address was redialled every redialBackoffMaxMs, each a failure logged.
    expect(counter(a, 'dials_started')).toBe(2)
    expect(counter(a, 'dials_failed')).toBe(0)
    expect(counter(a, 'dials_failed_upgrade')).toBe(0)
    // Its own port: itself, not another process with its key.
    expect(counter(a, 'hubs_with_own_key')).toBe(0)
    expect(a.libp2p.getPeers().map(String)).toEqual([other.libp2p.peerId.toString()])
  })

  it('a hub list naming the node itself by peer id is taken with allowedPeers that leave the node out (it is no peer to dial)', async () => {
    const other = await nodes.start()
    const port = await freePort()
    const privateKey = await generateKeyPair('Ed25519')
    const self = `/ip4/127.0.0.1/tcp/${port}/p2p/${peerIdFromPrivateKey(privateKey).toString()}`
    const a = await nodes.start({ listen: [`/ip4/127.0.0.1/tcp/${port}`], privateKey, hubs: [self, addressOf(other)], allowedPeers: [other.libp2p.peerId.toString()], names: ['a'] })
    await waitUntil('the other hub reaches a by name', () => other.phoenix.resolve('a') !== undefined)
    expect(counter(a, 'dials_reached_self')).toBe(1)
  })

  it('a hub run with this node\'s own key elsewhere (a copied key file) is said once at error level, not dialled again', async () => {
    const privateKey = await generateKeyPair('Ed25519')
    const hub = await nodes.start({ privateKey })
    // Before, the copy sat alone without a word: its only hub "was itself".
    const copy = await nodes.start({ privateKey, hubs: [addressOf(hub)], ...FAST_REDIAL })
    await waitUntil('the copy found its hub to have its own peer id', () => counter(copy, 'dials_reached_self') === 1)
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS))
    expect(counter(copy, 'hubs_with_own_key')).toBe(1)
    expect(counter(copy, 'dials_started')).toBe(1)
    expect(copy.libp2p.getPeers()).toEqual([])
  })
})
