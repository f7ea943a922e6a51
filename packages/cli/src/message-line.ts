import type { InboxMessage } from './inbox.ts'

/**
 * One received message as one line of JSON (NDJSON: the control endpoint's `GET /messages`,
 * `phoenix recv --json`, `phoenix node --print`):
 * `{"from":"12D3…","name":"rank-1","id":7,"hops":2,"text":"hello"}`. The payload is `text` when
 * it is valid UTF-8 (JSON-escaped), otherwise `base64`; exactly one of the two is present. `id` is
 * the sender's message id, null when the transport gives none.
 */
export interface MessageLine {
  readonly from: string
  readonly name: string
  readonly id: number | null
  readonly hops: number
  readonly text?: string
  readonly base64?: string
}

// fatal: invalid UTF-8 throws instead of becoming U+FFFD; ignoreBOM: a leading BOM is kept, not eaten.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

function asText(payload: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(payload)
  } catch {
    return undefined
  }
}

export function toMessageLine(message: InboxMessage): string {
  const text = asText(message.payload)
  const line: MessageLine = {
    from: message.from,
    name: message.name,
    id: message.id ?? null,
    hops: message.hops,
    ...(text !== undefined ? { text } : { base64: Buffer.from(message.payload).toString('base64') }),
  }
  return `${JSON.stringify(line)}\n`
}

/** The payload bytes of a line read back (what `phoenix recv` prints without `--json`). */
export function payloadOfLine(line: MessageLine): Uint8Array {
  if (line.text !== undefined) return new TextEncoder().encode(line.text)
  return new Uint8Array(Buffer.from(line.base64 ?? '', 'base64'))
}
