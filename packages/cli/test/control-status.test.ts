import { readdirSync, readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { PhoenixTransportError, type TransportErrorCode } from '@phoenix-overlay/transport'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createControlServer, type ControlTarget } from '../src/control-server.ts'
import { Inbox } from '../src/inbox.ts'

const root = join(import.meta.dirname, '..', '..')

/** Every `.ts` file under `dir`, as [path, text]. */
function sources(dir: string): [string, string][] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => [file, readFileSync(join(dir, file), 'utf8')])
}

/** What each code the transport raises must answer: 400 only for the caller's own mistake (the CLI exits 2 on it). */
const EXPECTED: Record<Exclude<TransportErrorCode, 'RECEIVER_TOO_SLOW'>, number> = {
  INVALID_INPUT: 400,
  NO_ROUTE: 404,
  UNDELIVERABLE: 502,
  QUEUE_FULL: 503,
  NOT_STARTED: 503,
  ACK_TIMEOUT: 504,
  UNSUPPORTED: 500,
}

/**
 * The codes the transport's sources name outside errors.ts: every code it raises (and some it only
 * compares with). `invalidInput(…)` raises INVALID_INPUT.
 */
function codesNamedByTransport(): Set<string> {
  const all = new Set<string>(['RECEIVER_TOO_SLOW', ...Object.keys(EXPECTED)])
  const named = new Set<string>()
  for (const [file, text] of sources(join(root, 'transport', 'src'))) {
    if (file === 'errors.ts') continue
    for (const [, code] of text.matchAll(/'([A-Z_]+)'/g)) if (all.has(code!)) named.add(code!)
    if (/\binvalidInput\(/.test(text)) named.add('INVALID_INPUT')
  }
  return named
}

describe('the control endpoint answers each transport error with its own status', () => {
  let thrown: unknown
  const server = createControlServer()
  let base = ''
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.server.address() as AddressInfo).port}`
    const phoenix = {
      send: async () => {
        throw thrown
      },
      resolve: () => undefined,
    }
    server.serve({ phoenix: phoenix as unknown as ControlTarget['phoenix'], id: 'self', addresses: () => [], inbox: new Inbox(10, 1000), version: '0', namesPerNodeMax: 64 })
  })
  afterAll(() => new Promise<void>((resolve) => server.server.close(() => resolve())))

  const answer = async (error: unknown) => {
    thrown = error
    const res = await fetch(`${base}/send?name=x&waitMs=0`, { method: 'POST', body: 'hi' })
    return { status: res.status, body: (await res.json()) as { error: string; message: string } }
  }

  it('nothing raises the legacy RECEIVER_TOO_SLOW, and the CLI no longer maps or catches it', () => {
    const named = codesNamedByTransport()
    expect(named.has('RECEIVER_TOO_SLOW')).toBe(false)
    // The scan finds what it should (it is not vacuous).
    expect([...named].sort()).toEqual(expect.arrayContaining(['ACK_TIMEOUT', 'INVALID_INPUT', 'NOT_STARTED', 'NO_ROUTE', 'QUEUE_FULL', 'UNDELIVERABLE', 'UNSUPPORTED']))
    // Neither a status for it nor a comparison with it (the inbox pump caught it, and said messages were lost).
    for (const [file, text] of sources(join(root, 'cli', 'src'))) expect(/[=!]==\s*'RECEIVER_TOO_SLOW'|RECEIVER_TOO_SLOW:\s*\d/.test(text), file).toBe(false)
  })

  it('every code the transport names has a status, 400 only for INVALID_INPUT; anything else is 500 ERROR, not 400', async () => {
    for (const code of codesNamedByTransport()) {
      expect(Object.keys(EXPECTED), `a status for ${code}`).toContain(code)
      const expected = EXPECTED[code as keyof typeof EXPECTED]
      expect(await answer(new PhoenixTransportError(code as TransportErrorCode, `${code} happened`)), code).toEqual({ status: expected, body: { error: code, message: `${code} happened` } })
    }
    // Were it raised after all, it is no status of its own: a server error, like any code the endpoint does not know.
    expect((await answer(new PhoenixTransportError('RECEIVER_TOO_SLOW', 'full'))).status).toBe(500)
    // A bug of ours, or of the host: a server error (the CLI exits 1), not the command line's (400, exit 2).
    expect(await answer(new TypeError('x is undefined'))).toEqual({ status: 500, body: { error: 'ERROR', message: 'x is undefined' } })
  })

  it("the answer carries the transport error's reason, node, message id and field, so a script need not parse the message", async () => {
    const full = new PhoenixTransportError('UNDELIVERABLE', 'node n1 could not deliver message 9: receiver-too-slow', { messageId: 9, reason: 'receiver-too-slow', node: 'n1' })
    expect(await answer(full)).toEqual({ status: 502, body: { error: 'UNDELIVERABLE', message: full.message, reason: 'receiver-too-slow', node: 'n1', messageId: 9 } })
    const field = new PhoenixTransportError('INVALID_INPUT', 'payload is too large', { field: 'payload' })
    expect(await answer(field)).toEqual({ status: 400, body: { error: 'INVALID_INPUT', message: 'payload is too large', field: 'payload' } })
    // The streaming send's failure line too.
    thrown = full
    const res = await fetch(`${base}/send-stream?name=x&waitMs=0`, { method: 'POST', body: new Uint8Array([0, 0, 0, 2, 104, 105]) })
    const lines = (await res.text()).trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(lines).toEqual([{ error: 'UNDELIVERABLE', message: full.message, reason: 'receiver-too-slow', node: 'n1', messageId: 9, index: 1, sent: 0 }])
  })
})
