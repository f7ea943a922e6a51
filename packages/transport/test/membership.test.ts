import { generateKeyPair } from '@libp2p/crypto/keys'
import { generateKey } from '@libp2p/pnet'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { afterEach, describe, expect, it } from 'vitest'
import { createPhoenixLibp2p, type OverlayNodeOptions } from '../src/index.ts'

type Started = Awaited<ReturnType<typeof createPhoenixLibp2p>>
const base = 47000 + (process.pid % 300) * 10
const swarmKey = () => {
  const key = new Uint8Array(95)
  generateKey(key)
  return key
}

describe('membership: private network key and allow-list', () => {
  const started: Started[] = []
  const start = async (port: number, options: Partial<OverlayNodeOptions>) => {
    const node = await createPhoenixLibp2p({ listen: [`/ip4/127.0.0.1/tcp/${port}`], ...options })
    started.push(node)
    return node
  }
  const hubOf = (n: Started, port: number) => `/ip4/127.0.0.1/tcp/${port}/p2p/${n.libp2p.peerId.toString()}`
  afterEach(async () => {
    await Promise.all(started.splice(0).map((n) => n.libp2p.stop()))
  })

  it('a node without the network key cannot join or be reached; members route among themselves', async () => {
    const key = swarmKey()
    const hub = await start(base, { privateNetworkKey: key, names: ['hub'] })
    const member = await start(base + 1, { privateNetworkKey: key, names: ['member'], hubs: [hubOf(hub, base)] })
    const outsider = await start(base + 2, { privateNetworkKey: swarmKey(), names: ['outsider'], hubs: [hubOf(hub, base)] })
    await member.phoenix.send('hub', new TextEncoder().encode('in'), { ack: true, routeWaitMs: 10_000 })
    await new Promise((r) => setTimeout(r, 1_000))
    expect(outsider.phoenix.peers()).toEqual([])
    expect(hub.phoenix.peers()).toEqual([member.libp2p.peerId.toString()])
    await expect(outsider.phoenix.send('hub', new Uint8Array(1), { routeWaitMs: 300 })).rejects.toMatchObject({ code: 'NO_ROUTE' })
    await expect(member.phoenix.send('outsider', new Uint8Array(1), { routeWaitMs: 300 })).rejects.toMatchObject({ code: 'NO_ROUTE' })
  }, 30_000)

  it('a node missing from the allow-list is refused both ways', async () => {
    const keys = await Promise.all([0, 1, 2].map(() => generateKeyPair('Ed25519')))
    const [hubId, memberId] = keys.map((k) => peerIdFromPrivateKey(k).toString())
    const allowedPeers = [hubId!, memberId!]
    const hub = await start(base + 3, { privateKey: keys[0]!, names: ['hub'], allowedPeers })
    const member = await start(base + 4, { privateKey: keys[1]!, names: ['member'], allowedPeers, hubs: [hubOf(hub, base + 3)] })
    // The outsider has no list of its own: the members' lists must keep it out.
    const outsider = await start(base + 5, { privateKey: keys[2]!, names: ['outsider'], hubs: [hubOf(hub, base + 3), hubOf(member, base + 4)] })
    await member.phoenix.send('hub', new TextEncoder().encode('in'), { ack: true, routeWaitMs: 10_000 })
    await new Promise((r) => setTimeout(r, 1_000))
    expect(outsider.phoenix.peers()).toEqual([])
    expect(hub.phoenix.peers()).toEqual([memberId])
    await expect(outsider.phoenix.send('member', new Uint8Array(1), { routeWaitMs: 300 })).rejects.toMatchObject({ code: 'NO_ROUTE' })
    // Nor may a member dial out to it.
    await expect(hub.libp2p.dial(peerIdFromPrivateKey(keys[2]!))).rejects.toThrow()
  }, 30_000)
})
