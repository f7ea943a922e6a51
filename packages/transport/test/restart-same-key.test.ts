import { generateKeyPair } from '@libp2p/crypto/keys'
import { afterAll, describe, expect, it } from 'vitest'
import { TestNodes, addressOf, text, waitUntil } from './nodes.ts'

// A job manager restarts a worker with its key and name; it comes back at sequence number 0
// (nothing is kept on disk). Before the others forgot it they hold its last record and answer it
// with that; after (unreachableRetentionMs, 1 s here) they hold a tombstone of its last number and
// refuse anything at or below it, and answer it with its last record withdrawn (the core's
// tombstones.ts): either way its next number is above what they held and it is reachable again.

const core = { timing: { unreachableRetentionMs: 1_000 } }

describe('a node restarted with its key and name', () => {
  const nodes = new TestNodes()
  afterAll(() => nodes.stopAll())

  for (const forgotten of [false, true]) {
    it(`is reachable again, its name its own, ${forgotten ? 'after' : 'before'} the others forgot it`, async () => {
      const hub = await nodes.start({ names: ['hub'], core })
      const other = await nodes.start({ names: ['other'], hubs: [addressOf(hub)], core })
      const key = await generateKeyPair('Ed25519')
      const name = `worker-${String(forgotten)}`
      const first = await nodes.start({ privateKey: key, names: [name], hubs: [addressOf(hub)], core })
      const id = first.libp2p.peerId.toString()
      const seqAt = (node: typeof hub) => node.phoenix.routes().find((r) => r.destination === id)
      // Its number grows: each change of its names is a new record.
      for (let i = 0; i < 20; i++) first.phoenix[i % 2 === 0 ? 'addName' : 'removeName'](`${name}-extra`)
      await waitUntil('the other node holds its 20 changes', () => (seqAt(other)?.seq ?? 0) >= 40, 30_000)
      const lastSeq = seqAt(other)!.seq
      await first.libp2p.stop()
      if (forgotten) await waitUntil('the hub and the other node forget it', () => seqAt(hub) === undefined && seqAt(other) === undefined, 30_000)
      else expect(seqAt(hub), 'the hub still holds it').toBeDefined()

      const again = await nodes.start({ privateKey: key, names: [name], hubs: [addressOf(hub)], core })
      expect(again.libp2p.peerId.toString()).toBe(id)
      await waitUntil('the other node routes to it again', () => seqAt(other)?.reachable === true && other.phoenix.resolve(name)?.owner === id, 30_000)
      expect(seqAt(other)!.seq, 'its number passed the one held before').toBeGreaterThan(lastSeq)
      const got = new Promise<string>((resolve) => again.phoenix.addEventListener('message', (event) => resolve(new TextDecoder().decode(event.detail.payload)), { once: true }))
      await other.phoenix.send(name, text('welcome back'), { ack: true })
      expect(await got).toBe('welcome back')
    }, 120_000)
  }
})
