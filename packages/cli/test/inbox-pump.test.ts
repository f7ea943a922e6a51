import { afterEach, describe, expect, it, vi } from 'vitest'
import type { ReceivedMessage } from '@phoenix-overlay/transport'
import { Inbox } from '../src/inbox.ts'
import { handOverInbox, pump, type MessageSource } from '../src/inbox-pump.ts'

/** A stopped transport that still holds `n` acknowledged messages: its iterator hands them out, then ends. */
function stoppedTransport(n: number): MessageSource {
  const held: ReceivedMessage[] = Array.from({ length: n }, (_, i) => ({ from: 'p', name: 'w', messageId: i + 1, hops: 1, payload: new Uint8Array([i]) }) as unknown as ReceivedMessage)
  return {
    messages: () => {
      const iterator: AsyncIterableIterator<ReceivedMessage> = {
        [Symbol.asyncIterator]: () => iterator,
        next: async () => (held.length > 0 ? { value: held.shift()!, done: false } : { value: undefined, done: true }),
      }
      return iterator
    },
  }
}

describe("a node's leave counts every acknowledged message no reader took", () => {
  afterEach(() => vi.restoreAllMocks())

  it('those behind a full inbox, still in the transport, included (they were lost without a word)', async () => {
    const inbox = new Inbox(3, 1 << 20)
    const pumped = pump(stoppedTransport(7), inbox)
    // The pump fills the inbox and waits for room: 4 messages stay in the transport.
    while (inbox.size < 3) await new Promise((resolve) => setImmediate(resolve))
    const said: string[] = []
    vi.spyOn(process.stderr, 'write').mockImplementation((line) => said.push(String(line)) > 0)
    let ended = 0
    const unread = await handOverInbox(inbox, { endStreams: () => ended++ }, pumped)
    // Before: 3, the inbox's only.
    expect(unread).toBe(7)
    expect(ended).toBe(1)
    expect(said).toEqual(['phoenix: 7 received messages were never read (no phoenix recv took them) and are lost, though their senders had them acknowledged\n'])
  })

  it('a reader still taking messages at the end (--print) gets them all, and none is counted', async () => {
    const inbox = new Inbox(3, 1 << 20)
    const pumped = pump(stoppedTransport(5), inbox)
    while (inbox.size < 3) await new Promise((resolve) => setImmediate(resolve))
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    const printed: number[] = []
    // A reader attached only at the close, so the drain (no reader: 0.3 s) takes nothing before it.
    const unread = await handOverInbox(
      inbox,
      { endStreams: () => void inbox.attach({ names: undefined, fallback: true, take: (m) => printed.push(m.id!) > 0 }) },
      pumped,
    )
    expect(printed).toEqual([1, 2, 3, 4, 5])
    expect(unread).toBe(0)
  })
})
