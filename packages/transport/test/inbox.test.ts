import fc from 'fast-check'
import { Uint8ArrayList } from 'uint8arraylist'
import { describe, expect, it } from 'vitest'
import { Inbox, receivedMessage, type Delivery } from '../src/inbox.ts'

const message = (from: string, messageId: number) => receivedMessage({ from, name: 'app', hops: 1, messageId }, new Uint8Array([messageId & 0xff]))

describe('the inbox: duplicates within the window (fast-check seed printed at the start of the run)', () => {
  it('a (source, message id) is a duplicate exactly when it is among the last duplicateWindowMax messages delivered', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.integer({ min: 1, max: 12 })), { maxLength: 300 }),
        (windowMax, arrivals) => {
          const inbox = new Inbox({ receiveBufferMax: 1_000, duplicateWindowMax: windowMax }, () => 1, () => {})
          const delivered: string[] = [] // the model: every delivered key, in order
          for (const [from, id] of arrivals) {
            const key = `${from}/${id}`
            const expected: Delivery = delivered.slice(-windowMax).includes(key) ? 'duplicate' : 'delivered'
            expect(inbox.accept(message(from, id)), `${key} after ${delivered.slice(-windowMax).join(' ')}`).toBe(expected)
            if (expected === 'delivered') delivered.push(key)
          }
        },
      ),
    )
  })

  it('costs no more per message once the window is full (it forgets the oldest key at once)', () => {
    // Taking the oldest key of a Map after many deletions walks every deleted slot: the inbox
    // did that once per message once its window was full, ~20 µs each at 65,536 against ~1 µs
    // while it filled. Compared with the filling phase of the same run, not a wall-clock bound.
    const windowMax = 65_536
    const from = '12D3KooWQ1pGkvFZqgYHRJ1bWjvZ3p2h5pkh8n1RYx3pG7oEwNd1'
    const inbox = new Inbox({ receiveBufferMax: 1_000, duplicateWindowMax: windowMax }, () => 1, () => {})
    const phaseMs = (firstId: number): number => {
      const started = performance.now()
      let refused = 0
      for (let id = firstId; id < firstId + windowMax; id++) if (inbox.accept(message(from, id)) !== 'delivered') refused++
      expect(refused).toBe(0)
      return performance.now() - started
    }
    const fillingMs = phaseMs(1)
    const evictingMs = Math.min(phaseMs(1 + windowMax), phaseMs(1 + 2 * windowMax))
    console.log(`inbox: ${windowMax} messages filling the window ${fillingMs.toFixed(0)} ms, once full ${evictingMs.toFixed(0)} ms`)
    expect(evictingMs).toBeLessThan(4 * fillingMs)
    expect(inbox.accept(message(from, 3 * windowMax))).toBe('duplicate') // the newest is remembered
    expect(inbox.accept(message(from, 2 * windowMax))).toBe('delivered') // the oldest of the window before was forgotten
  })

  it('hands a payload in one piece over as it is, and one in pieces joined once, on first read', () => {
    const one = new Uint8Array([1, 2, 3])
    const single = receivedMessage({ from: 'a', name: 'app', hops: 1, messageId: 1 }, one)
    expect(single.payload).toBe(one)
    expect([...single.payloadList]).toEqual([one])
    const pieces = receivedMessage({ from: 'a', name: 'app', hops: 1, messageId: 2 }, new Uint8ArrayList(one, new Uint8Array([4, 5])))
    expect([...pieces.payload]).toEqual([1, 2, 3, 4, 5])
    expect(pieces.payload).toBe(pieces.payload)
    expect({ ...pieces }.payload).toBe(pieces.payload)
  })
})
