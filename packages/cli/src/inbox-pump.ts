import type { PhoenixNode, ReceivedMessage } from '@phoenix-overlay/transport'
import { INBOX_DRAIN_IDLE_MS, INBOX_DRAIN_MAX_MS, PUMP_END_WAIT_MS, STREAMS_END_GRACE_MS } from './constants.ts'
import type { Inbox, InboxMessage } from './inbox.ts'

function toInboxMessage(m: ReceivedMessage): InboxMessage {
  return { from: m.from, name: m.name, id: m.messageId, hops: m.hops, payload: m.payload }
}

/** What `pump` reads from: the transport's messages (`PhoenixNode.messages`). */
export type MessageSource = Pick<PhoenixNode, 'messages'>

/**
 * Reads everything the transport delivers into the inbox, never taking a message the inbox has no
 * room for: when readers fall behind the transport's own buffer fills and refuses what comes next.
 * Ends when the transport's iterator does (the node stopped, and it handed out what it held).
 */
export async function pump(phoenix: MessageSource, inbox: Inbox): Promise<void> {
  // The iterator never throws: a message the transport has no room for is refused to its sender
  // (UNDELIVERABLE, receiver-too-slow), not lost here.
  const messages = phoenix.messages()
  for (;;) {
    await inbox.waitForRoom()
    const next = await messages.next()
    if (next.done === true) return
    inbox.push(toInboxMessage(next.value))
  }
}

/**
 * The node has left: its readers take what its inbox still holds (acknowledged messages), within
 * bounds, before their streams end; what no reader took is counted and said on stderr, those the
 * transport still held behind a full inbox included (`pumped`: the pump, which hands them to the
 * closed inbox once the stopped transport's iterator gives them out). Returns that count.
 */
export async function handOverInbox(inbox: Inbox, control: { endStreams(): void }, pumped: Promise<void>): Promise<number> {
  await drainInbox(inbox)
  control.endStreams()
  // A reader between two requests gets its answer (the end), not a closed socket.
  await new Promise((resolve) => setTimeout(resolve, STREAMS_END_GRACE_MS))
  inbox.close()
  let timer: NodeJS.Timeout | undefined
  await Promise.race([pumped, new Promise((resolve) => (timer = setTimeout(resolve, PUMP_END_WAIT_MS)))])
  clearTimeout(timer)
  // Before, only the inbox's were counted: a node whose inbox was full (10,000) also held 4,096
  // acknowledged messages in the transport's buffer, and said 10,000 (found by hand).
  const unread = inbox.unread
  if (unread > 0) process.stderr.write(`phoenix: ${unread} received messages were never read (no phoenix recv took them) and are lost, though their senders had them acknowledged\n`)
  return unread
}

/** Waits while readers take what the inbox holds: at most INBOX_DRAIN_MAX_MS, and INBOX_DRAIN_IDLE_MS without a message taken. */
async function drainInbox(inbox: Inbox): Promise<void> {
  const endMs = performance.now() + INBOX_DRAIN_MAX_MS
  let size = inbox.size
  let takenAtMs = performance.now()
  while (inbox.size > 0 && performance.now() < endMs && performance.now() - takenAtMs < INBOX_DRAIN_IDLE_MS) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    if (inbox.size < size) takenAtMs = performance.now()
    size = inbox.size
  }
}
