import type { AddressInfo } from 'node:net'
import { PhoenixTransportError } from '@phoenix-overlay/transport'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createControlServer, type ControlTarget } from '../src/control-server.ts'
import { Inbox } from '../src/inbox.ts'
import { phoenix } from './helpers.ts'

/**
 * `phoenix send`'s failure line against a stand-in node whose receiver is full: the third message
 * is refused `receiver-too-slow`, as a node no `recv` reads refuses once its inbox and the
 * transport's buffer are full (found by hand: the line said only "receiver-too-slow", and
 * `--lines` did not say that the rest of the input was not sent).
 */
describe('phoenix send, when the receiver takes nothing more', () => {
  const server = createControlServer()
  let port = 0
  let calls = 0
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.server.listen(0, '127.0.0.1', resolve))
    port = (server.server.address() as AddressInfo).port
    const node = {
      send: async () => {
        calls++
        if (calls % 3 !== 0) return { messageId: calls }
        throw new PhoenixTransportError('UNDELIVERABLE', `node 12D3KooWx could not deliver message ${calls}: receiver-too-slow`, { messageId: calls, reason: 'receiver-too-slow', node: '12D3KooWx' })
      },
      resolve: () => ({ owner: '12D3KooWx', nextHop: '12D3KooWx', nhops: 1 }),
    }
    server.serve({ phoenix: node as unknown as ControlTarget['phoenix'], id: 'self', addresses: () => [], inbox: new Inbox(10, 1000), version: '0', namesPerNodeMax: 64 })
  })
  afterAll(() => new Promise<void>((resolve) => server.server.close(() => resolve())))

  it('--lines: the line names the cause, what to do, and that no later line was sent', async () => {
    calls = 0
    const run = await phoenix(['send', '--control', String(port), 'w', '--lines', '--ack'], 'l1\nl2\nl3\nl4\nl5\n')
    expect(run.code).toBe(1)
    expect(run.stdout.trim().split('\n')).toHaveLength(2)
    const line = run.stderr.trim()
    expect(line.split('\n')).toHaveLength(1)
    expect(line).toMatch(/^phoenix: send to w, line 3: UNDELIVERABLE: node 12D3KooWx could not deliver message 3: receiver-too-slow \(the receiving node holds .*nothing reads them there, such as `phoenix recv`.*sending it again later is safe\); the 2 line\(s\) before it were sent, no later line was$/)
    expect(calls).toBe(3)
  })

  it('one message: the same hint', async () => {
    calls = 2
    const run = await phoenix(['send', '--control', String(port), 'w', 'hello', '--ack'])
    expect(run.code).toBe(1)
    expect(run.stderr.trim()).toMatch(/^phoenix: send to w: UNDELIVERABLE: node 12D3KooWx could not deliver message 3: receiver-too-slow \(the receiving node holds .*sending it again later is safe\)$/)
  })
})
