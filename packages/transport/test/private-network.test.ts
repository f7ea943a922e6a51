import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { generateKeyPair } from '@libp2p/crypto/keys'
import type { ConnectionProtector, MessageStream } from '@libp2p/interface'
import { generateKey as pnetGenerateKey, preSharedKey } from '@libp2p/pnet'
import { tcp } from '@libp2p/tcp'
import { xsalsa20 } from '@noble/ciphers/salsa.js'
import fc from 'fast-check'
import { createHash } from 'node:crypto'
import v8 from 'node:v8'
import vm from 'node:vm'
import { createLibp2p } from 'libp2p'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createPhoenixLibp2p,
  decodeSwarmKey,
  generateKey,
  generateSwarmKey,
  KEYSTREAM_LIMITS,
  KeystreamExhaustedError,
  phoenix,
  PhoenixTransportError,
  PrivateNetworkProtector,
  privateNetwork,
  SwarmKeyError,
  type PhoenixNode,
} from '../src/index.ts'
import { Keystream } from '../src/pnet/keystream.ts'
import { patterned, pnetXsalsa20, protectedPair, receive, sendAll } from './pnet-helpers.ts'

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
const pnetProtector = (psk: Uint8Array) => preSharedKey({ psk })()

describe('swarm keys', () => {
  it('keys made by either generator are read by both protectors; a key with the same bytes is the same network', () => {
    const ours = new Uint8Array(95)
    generateKey(ours)
    const theirs = new Uint8Array(95)
    pnetGenerateKey(theirs)
    for (const file of [ours, theirs, generateSwarmKey()]) {
      expect(decodeSwarmKey(file)).toHaveLength(32)
      expect(() => pnetProtector(file)).not.toThrow()
    }
    expect(new TextDecoder().decode(ours)).toMatch(/^\/key\/swarm\/psk\/1\.0\.0\/\n\/base16\/\n[0-9a-f]{64}$/)
    const crlf = new TextEncoder().encode(new TextDecoder().decode(theirs).replaceAll('\n', '\r\n') + '\r\n')
    expect(decodeSwarmKey(crlf)).toEqual(decodeSwarmKey(theirs))
  })

  it('a bad key fails at once with one line naming privateNetworkKey', async () => {
    const bad = ['not a key', '/key/swarm/psk/1.0.0/\n/base64/\nAAAA', `/key/swarm/psk/1.0.0/\n/base16/\n${'ab'.repeat(31)}`, `/key/swarm/psk/1.0.0/\n/base16/\n${'zz'.repeat(32)}`]
    for (const text of bad) {
      const file = new TextEncoder().encode(text)
      expect(() => privateNetwork({ psk: file })).toThrow(SwarmKeyError)
      expect(() => decodeSwarmKey(file)).toThrow(/^privateNetworkKey: [^\n]+$/)
    }
    await expect(createPhoenixLibp2p({ listen: [], privateNetworkKey: new TextEncoder().encode('nope') })).rejects.toThrow(/^privateNetworkKey: not a swarm key/)
    // Like every error of the node's options: a PhoenixTransportError a caller switches on by code and field.
    const error = await createPhoenixLibp2p({ listen: [], privateNetworkKey: new TextEncoder().encode('nope') }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PhoenixTransportError)
    expect(error).toBeInstanceOf(SwarmKeyError)
    expect(error).toMatchObject({ code: 'INVALID_INPUT', field: 'privateNetworkKey', name: 'SwarmKeyError' })
  })
})

describe('keystream', () => {
  it('is the keystream of @libp2p/pnet\'s cipher, however the bytes are split on either side', () => {
    const reference = pnetXsalsa20()
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 12 }), fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 12 }), fc.integer(), (ourSplits, theirSplits, seed) => {
        const key = patterned(32, seed)
        const nonce = patterned(24, seed + 1)
        const total = ourSplits.reduce((a, b) => a + b, 0)
        const data = patterned(total, seed + 2)
        const ours = new Keystream(key, nonce)
        const oursOut = new Uint8Array(total)
        let at = 0
        for (const n of ourSplits) {
          oursOut.set(ours.xor(data.subarray(at, at + n)), at)
          at += n
        }
        const theirs = reference(nonce, key)
        const theirsOut = new Uint8Array(total)
        at = 0
        for (const n of [...theirSplits, total]) {
          const piece = data.subarray(at, Math.min(total, at + n))
          theirsOut.set(theirs.update(piece), at)
          at += piece.byteLength
        }
        theirs.finalize()
        expect(ours.positionBytes).toBe(total)
        expect(Buffer.from(oursOut).equals(Buffer.from(theirsOut))).toBe(true)
      }),
      { numRuns: 200 },
    )
  })

  it('leaves its input alone, and closes the connection rather than wrap at the end of its 256 GiB', () => {
    const key = patterned(32, 1)
    const nonce = patterned(24, 2)
    const input = patterned(100, 3)
    const copy = Uint8Array.from(input)
    const nearEnd = new Keystream(key, nonce, KEYSTREAM_LIMITS.bytesMax - 100)
    const out = nearEnd.xor(input)
    expect(input).toEqual(copy)
    // The last 100 bytes of the keystream, straight from noble: block 2^32 − 2 starts 28 bytes before them.
    const lastBlock = xsalsa20(key, nonce, new Uint8Array(128), undefined, 2 ** 32 - 3)
    expect(out).toEqual(input.map((b, i) => b ^ lastBlock[28 + i]!))
    expect(() => nearEnd.xor(new Uint8Array(1))).toThrow(KeystreamExhaustedError)
    nearEnd.destroy()
    expect(() => new Keystream(key, nonce).xor(new Uint8Array(0))).not.toThrow()
  })
})

describe('protector: wire compatibility with @libp2p/pnet', () => {
  it('ours and pnet\'s read each other\'s bytes, both ways, in any sizes', async () => {
    const psk = generateSwarmKey()
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 70_000 }), { minLength: 1, maxLength: 8 }), fc.boolean(), fc.integer(), async (sizes, oursDials, seed) => {
        const ours = new PrivateNetworkProtector({ psk })
        const [a, b] = oursDials ? await protectedPair(ours, pnetProtector(psk)) : await protectedPair(pnetProtector(psk), ours)
        for (const [from, to] of [[a, b], [b, a]] as const) {
          const data = sizes.map((n, i) => patterned(n, seed + i))
          const arriving = receive(to, data.reduce((s, d) => s + d.byteLength, 0))
          for (const d of data) await sendAll(from, d)
          expect(sha256(await arriving)).toBe(sha256(Buffer.concat(data)))
        }
        await Promise.all([a.close(), b.close()])
        expect(ours.openConnections).toBe(0)
      }),
      { numRuns: 25 },
    )
  })
})

describe('nodes: a Phoenix node with our protector and one with @libp2p/pnet\'s', () => {
  const stops: (() => Promise<void>)[] = []
  afterEach(async () => {
    await Promise.all(stops.splice(0).map((stop) => stop()))
  })
  /** A Phoenix node on libp2p with the given protector: `@libp2p/pnet`'s, or one of ours we keep a handle on. */
  const libp2pNode = async (protector: () => ConnectionProtector, names: string[], hubs: string[]) => {
    const libp2p = await createLibp2p({
      privateKey: await generateKeyPair('Ed25519'),
      addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
      transports: [tcp()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      connectionProtector: protector,
      connectionMonitor: { enabled: false },
      services: { phoenix: phoenix({ names, hubs }) },
    })
    stops.push(async () => {
      await libp2p.stop()
    })
    return { libp2p, phoenix: libp2p.services.phoenix as PhoenixNode }
  }
  const pnetNode = (psk: Uint8Array, names: string[], hubs: string[]) => libp2pNode(preSharedKey({ psk }), names, hubs)
  const ourNode = async (psk: Uint8Array, names: string[], hubs: string[] = []) => {
    const node = await createPhoenixLibp2p({ listen: ['/ip4/127.0.0.1/tcp/0'], privateNetworkKey: psk, names, hubs })
    stops.push(async () => {
      await node.libp2p.stop()
    })
    return node
  }
  const firstMessage = (node: PhoenixNode) => node.messages().next().then((m) => (m.done === true ? undefined : new TextDecoder().decode(m.value.payload)))

  it('exchange acknowledged Phoenix messages both ways', async () => {
    const psk = generateSwarmKey()
    const hub = await ourNode(psk, ['ours'])
    const member = await pnetNode(psk, ['pnets'], [hub.libp2p.getMultiaddrs()[0]!.toString()])
    const atHub = firstMessage(hub.phoenix)
    const atMember = firstMessage(member.phoenix)
    await member.phoenix.send('ours', new TextEncoder().encode('from pnet'), { ack: true, routeWaitMs: 20_000 })
    await hub.phoenix.send('pnets', new TextEncoder().encode('from ours'), { ack: true, routeWaitMs: 20_000 })
    expect(await atHub).toBe('from pnet')
    expect(await atMember).toBe('from ours')
  }, 60_000)

  it('with different keys, neither can connect to the other, and our protector keeps nothing of the attempts', async () => {
    const ourProtector = new PrivateNetworkProtector({ psk: generateSwarmKey() })
    const ours = await libp2pNode(() => ourProtector, ['ours'], [])
    const theirs = await pnetNode(generateSwarmKey(), ['pnets'], [])
    await expect(ours.libp2p.dial(theirs.libp2p.getMultiaddrs()[0]!)).rejects.toThrow()
    await expect(theirs.libp2p.dial(ours.libp2p.getMultiaddrs()[0]!)).rejects.toThrow()
    await new Promise((r) => setTimeout(r, 500))
    expect(ours.libp2p.getConnections()).toEqual([])
    expect(theirs.libp2p.getConnections()).toEqual([])
    expect(ours.phoenix.peers()).toEqual([])
    expect(ourProtector.openConnections).toBe(0)
  }, 60_000)

  it('a node of ours connects with the key, and the connection is let go when it closes', async () => {
    const psk = generateSwarmKey()
    const ourProtector = new PrivateNetworkProtector({ psk })
    const ours = await libp2pNode(() => ourProtector, ['ours'], [])
    const theirs = await pnetNode(psk, ['pnets'], [])
    const connection = await ours.libp2p.dial(theirs.libp2p.getMultiaddrs()[0]!)
    expect(ourProtector.openConnections).toBe(1)
    await connection.close()
    await new Promise((r) => setTimeout(r, 200))
    expect(ourProtector.openConnections).toBe(0)
  }, 60_000)
})

describe('protector: memory', () => {
  it('carries one 64 MiB + 1 write, and 32 concurrent 1 MiB writes, intact', async () => {
    const psk = generateSwarmKey()
    const [a, b] = await protectedPair(new PrivateNetworkProtector({ psk }), new PrivateNetworkProtector({ psk }))
    const big = patterned(64 * 1024 * 1024 + 1, 7)
    const arriving = receive(b, big.byteLength)
    a.send(big)
    expect(sha256(await arriving)).toBe(sha256(big))

    const writes = Array.from({ length: 32 }, (_, i) => patterned(1024 * 1024, 100 + i))
    const all = receive(a, 32 * 1024 * 1024)
    await Promise.all(writes.map((w) => sendAll(b, w)))
    expect(sha256(await all)).toBe(sha256(Buffer.concat(writes)))
    await Promise.all([a.close(), b.close()])
  }, 120_000)

  it('10,000 connections come and go: the protector holds nothing for any of them afterwards', async () => {
    v8.setFlagsFromString('--expose-gc')
    const gc = vm.runInNewContext('gc') as () => void
    const psk = generateSwarmKey()
    const dialer = new PrivateNetworkProtector({ psk })
    const listener = new PrivateNetworkProtector({ psk })
    // Every 10th connection is watched (watching all 20,000 ends would itself weigh ~1 MiB of heap).
    const oneConnection = async (i: number): Promise<WeakRef<MessageStream>[]> => {
      const [a, b] = await protectedPair(dialer, listener)
      const hello = patterned(100 + (i % 200), i)
      const arriving = receive(b, hello.byteLength)
      a.send(hello)
      expect(await arriving).toEqual(hello)
      await Promise.all([a.close(), b.close()])
      return i % 10 === 0 ? [new WeakRef(a), new WeakRef(b)] : []
    }
    const settle = async () => {
      for (let i = 0; i < 3; i++) {
        await new Promise((r) => setTimeout(r, 20))
        gc()
      }
    }
    // Warm up (modules loaded, JIT settled) so the baseline is not code being compiled; watched too.
    for (let i = 0; i < 100; i++) await oneConnection(10_000 + i)
    await settle()
    const heapBefore = process.memoryUsage().heapUsed
    const refs: WeakRef<MessageStream>[] = []
    for (let batch = 0; batch < 100; batch++) {
      const opened = await Promise.all(Array.from({ length: 100 }, (_, i) => oneConnection(batch * 100 + i)))
      for (const pair of opened) refs.push(...pair)
    }
    await settle()
    const heapGrowthBytes = process.memoryUsage().heapUsed - heapBefore
    console.log(`10,000 protected connections opened and closed: heap ${heapGrowthBytes} bytes over the start, ${refs.filter((r) => r.deref() !== undefined).length} of ${refs.length} watched connection ends still reachable`)
    expect(dialer.openConnections).toBe(0)
    expect(listener.openConnections).toBe(0)
    expect(refs.filter((r) => r.deref() !== undefined)).toEqual([])
    // 20,000 closed connection ends; 2 MiB is ~100 bytes each, far below what one end weighs (a few KiB).
    expect(heapGrowthBytes).toBeLessThan(2 * 1024 * 1024)
  }, 180_000)
})
