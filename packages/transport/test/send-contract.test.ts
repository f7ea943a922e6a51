import { WIRE_LIMITS } from '@phoenix-overlay/wire'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PhoenixTransportError, createPhoenixLibp2p, phoenix, type ReceivedMessage, type Undeliverable } from '../src/index.ts'
import { TestNodes, addressOf, text, waitUntil, type TestNode } from './nodes.ts'

/** The rejection of `promise`, which must be a PhoenixTransportError. */
async function failure(promise: Promise<unknown>): Promise<PhoenixTransportError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(PhoenixTransportError)
  return error as PhoenixTransportError
}

describe('the send contract (issue 11, items 1 and 2)', () => {
  const nodes = new TestNodes()
  let a: TestNode
  let b: TestNode
  const gotByB: ReceivedMessage[] = []

  beforeAll(async () => {
    a = await nodes.start({ names: ['a'] })
    b = await nodes.start({ names: ['b'], hubs: [addressOf(a)] })
    b.phoenix.addEventListener('message', (event) => gotByB.push(event.detail))
    await a.phoenix.send('b', text('hello'), { ack: true })
  })
  afterAll(() => nodes.stopAll())

  it('refuses a payload over the limit every node enforces before anything goes on the wire, and the link survives', async () => {
    const started = performance.now()
    const error = await failure(a.phoenix.send('b', new Uint8Array(WIRE_LIMITS.payloadBytesMax + 1), { ack: true, ackTimeoutMs: 3_000 }))
    expect(error.code).toBe('INVALID_INPUT')
    expect(error.field).toBe('payload')
    expect(error.message).toMatch(/payload is 4190209 bytes, more than every node accepts \(4190208/)
    expect(performance.now() - started).toBeLessThan(500)
    // The largest payload allowed goes through, and nobody was dropped for it.
    await a.phoenix.send('b', new Uint8Array(WIRE_LIMITS.payloadBytesMax), { ack: true })
    expect(a.phoenix.peers()).toEqual([b.libp2p.peerId.toString()])
    expect(b.phoenix.metricsText()).toMatch(/^phoenix_peers_dropped_total 0$/m)
  })

  it('refuses an empty or over-long name and bad options at once, naming the field', async () => {
    const cases: [string, Promise<unknown>, string][] = [
      ['name', a.phoenix.send('', text('x')), 'name'],
      ['long name', a.phoenix.send('n'.repeat(257), text('x')), 'name'],
      // A lookalike of b (zero-width space), and a name UTF-8 would respell as U+FFFD.
      ['zero-width name', a.phoenix.send('b\u200b', text('x')), 'name'],
      ['unpaired surrogate', a.phoenix.send('b\ud800', text('x')), 'name'],
      ['payload type', a.phoenix.send('b', 'text' as unknown as Uint8Array), 'payload'],
      ['routeWaitMs', a.phoenix.send('b', text('x'), { routeWaitMs: -1 }), 'options.routeWaitMs'],
      ['routeWaitMs as a string', a.phoenix.send('b', text('x'), { routeWaitMs: '100' as unknown as number }), 'options.routeWaitMs'],
      ['messageId as a string', a.phoenix.send('b', text('x'), { messageId: '5' as unknown as number }), 'options.messageId'],
      ['ackTimeoutMs', a.phoenix.send('b', text('x'), { ackTimeoutMs: Number.NaN }), 'options.ackTimeoutMs'],
      // 0 rejected every acknowledged send at once with ACK_TIMEOUT, though it was delivered (a user's audit).
      ['ackTimeoutMs 0', a.phoenix.send('b', text('x'), { ack: true, ackTimeoutMs: 0 }), 'options.ackTimeoutMs'],
      // Without ack nothing waits for an acknowledgement: it was accepted and ignored (the CLI and the control endpoint refuse it).
      ['ackTimeoutMs without ack', a.phoenix.send('b', text('x'), { ackTimeoutMs: 1_000 }), 'options.ackTimeoutMs'],
      ['ackTimeoutMs with ack false', a.phoenix.send('b', text('x'), { ack: false, ackTimeoutMs: 1_000 }), 'options.ackTimeoutMs'],
      ['messageId', a.phoenix.send('b', text('x'), { messageId: 0 }), 'options.messageId'],
      // A misspelt option ran with the default (it had been ignored), in a send and in a collective.
      ['a misspelt option', a.phoenix.send('b', text('x'), { ack: true, ackTimeout: 1 } as object), 'options.ackTimeout'],
      ['a misspelt broadcast option', a.phoenix.broadcast('b', text('x'), { ack: true, timeout: 1 } as object), 'options.timeout'],
      ['a broadcast ack', a.phoenix.broadcast('b', text('x'), { ack: 'yes' } as object), 'options.ack'],
      // Without ack a broadcast waits for nothing: its timeoutMs was accepted and ignored, as send's ackTimeoutMs was.
      ['a broadcast timeout without ack', a.phoenix.broadcast('b', text('x'), { timeoutMs: 1_000 }), 'options.timeoutMs'],
      ['a broadcast timeout with ack false', a.phoenix.broadcast('b', text('x'), { ack: false, timeoutMs: 1_000 }), 'options.timeoutMs'],
      ['null broadcast options', a.phoenix.broadcast('b', text('x'), null as unknown as object), 'options'],
      ['a misspelt reduce option', a.phoenix.reduce('b', 't', { op: 'sum', timout: 1 } as object), 'options.timout'],
    ]
    for (const [what, promise, field] of cases) {
      const error = await failure(promise)
      expect(error.code, what).toBe('INVALID_INPUT')
      expect(error.field, what).toBe(field)
      expect(error.message.split('\n'), what).toHaveLength(1)
    }
    expect((await failure(a.phoenix.send('b', text('x'), { ackTimeout: 1 } as object))).message).toBe('options.ackTimeout is not an option (did you mean options.ackTimeoutMs?)')
    // A string is shown quoted: "got 100" read as if 100 were refused.
    expect((await failure(a.phoenix.send('b', text('x'), { routeWaitMs: '100' as unknown as number }))).message).toBe('options.routeWaitMs must be a number of milliseconds in [0, 2^31), got "100"')
    expect((await failure(a.phoenix.send('b', text('x'), { messageId: '5' as unknown as number }))).message).toBe('options.messageId must be an integer in [1, 2^32), got "5"')
    expect((await failure(a.phoenix.send('b', text('x'), { ackTimeoutMs: Number.NaN }))).message).toMatch(/got NaN$/)
    expect((await failure(a.phoenix.send('b', text('x'), { ackTimeoutMs: 1_000 }))).message).toBe('options.ackTimeoutMs is the wait for an acknowledgement: it needs ack: true')
    expect((await failure(a.phoenix.broadcast('b', text('x'), { timeoutMs: 1_000 }))).message).toBe("options.timeoutMs is the wait for the members' acknowledgements: it needs ack: true")
  })

  it('refuses node options of the wrong shape before building anything, naming the option and the value', async () => {
    const bad = (options: unknown) => createPhoenixLibp2p(options as Parameters<typeof createPhoenixLibp2p>[0])
    const cases: [string, Promise<unknown>, string, RegExp][] = [
      ['no options', bad(undefined), 'options', /^options must be an object$/],
      // A string was read character by character ("/" is not a multiaddr), and names as a string failed with "toJSON not set".
      ['hubs as a string', bad({ listen: [], hubs: '/ip4/10.0.0.1/tcp/7000' }), 'hubs', /^hubs must be an array of strings, got "\/ip4\/10\.0\.0\.1\/tcp\/7000"$/],
      ['names as a string', bad({ listen: [], names: 'worker' }), 'names', /^names must be an array of strings, got "worker"$/],
      // JSON shows undefined and NaN in a list as null: it read "got [null]".
      ['a hole in names', bad({ listen: [], names: [undefined, Number.NaN] }), 'names', /^names must be an array of strings, got \[undefined,NaN\]$/],
      ['a listen address', bad({ listen: ['/ip4/127.0.0.1/tcp/0', 'localhost:7000'] }), 'listen', /^listen "localhost:7000" is not a multiaddr: /],
      // It failed "address already in use", as if another process held the port.
      ['a listen address twice', bad({ listen: ['/ip4/127.0.0.1/tcp/7000', '/ip4/127.0.0.1/tcp/7000'] }), 'listen', /^listen "\/ip4\/127\.0\.0\.1\/tcp\/7000" is given twice$/],
      ['timing', bad({ listen: [], timing: [] }), 'timing', /^timing must be an object, got \[\]$/],
      ['discovery', bad({ listen: [], discovery: 'yes' }), 'discovery', /^discovery must be a boolean, got "yes"$/],
      // A misspelt peer id quietly kept that peer out.
      ['an allowed peer', bad({ listen: [], allowedPeers: ['12D3KooWExve7pDCH7VePy7XJiiyMpVmfqHpRkpFDicQsBnnyW5V', 'notapeer'] }), 'allowedPeers', /^allowedPeers "notapeer" is not a peer id \(one such as 12D3KooW…/],
      // A hub the allowed peers leave out was never dialled: the node sat alone, "blocked by gater.allowDialPeer" at each redial.
      [
        'a hub not allowed',
        bad({ listen: [], allowedPeers: ['12D3KooWExve7pDCH7VePy7XJiiyMpVmfqHpRkpFDicQsBnnyW5V'], hubs: ['/ip4/127.0.0.1/tcp/7000', '/ip4/127.0.0.1/tcp/7001/p2p/12D3KooWREypnAYc661obaej18tFo1acauwMbFyTiyA3k5vgvDSP'] }),
        'hubs',
        /^hubs "\/ip4\/127\.0\.0\.1\/tcp\/7001\/p2p\/12D3KooWREyp\w+" is peer 12D3KooWREyp\w+, which allowedPeers does not list: the node would never dial it/,
      ],
      // An empty list allows no peer: it started, and sat alone (found by a new user).
      [
        'a hub with an empty allow-list',
        bad({ listen: [], allowedPeers: [], hubs: ['/ip4/127.0.0.1/tcp/7001/p2p/12D3KooWREypnAYc661obaej18tFo1acauwMbFyTiyA3k5vgvDSP'] }),
        'hubs',
        /^hubs "\/ip4\/127\.0\.0\.1\/tcp\/7001\/p2p\/12D3KooWREyp\w+" is peer 12D3KooWREyp\w+, which allowedPeers does not list/,
      ],
    ]
    // The service in a libp2p of one's own: the same shapes, from the factory (limits: null failed as a TypeError; mode only at start, as "options").
    const factory = async (init: unknown) => phoenix(init as Parameters<typeof phoenix>[0])
    cases.push(
      ['null limits, in the factory', factory({ limits: null }), 'limits', /^limits must be an object, got null$/],
      ['null ssh, in the factory', factory({ ssh: null }), 'ssh', /^ssh must be an object, got null$/],
      ['a mode', factory({ mode: 'fast' }), 'mode', /^mode must be 'optimized' or 'naive', got "fast"$/],
      ['a site', bad({ listen: [], site: 5 }), 'site', /^site must be a string, got 5$/],
      // These named no field (or `hub`, the argument of addHub, for the option hubs).
      ['a hub that is no multiaddr', bad({ listen: [], hubs: ['nope'] }), 'hubs', /^hubs "nope" is not a multiaddr/],
      // A user's audit: the node started, and every dial failed in the log only ("Please pass a multibase decoder …").
      ['a hub whose /p2p/ is no peer id', bad({ listen: [], hubs: ['/ip4/127.0.0.1/tcp/1/p2p/notapeerid'] }), 'hubs', /^hubs "\/ip4\/127\.0\.0\.1\/tcp\/1\/p2p\/notapeerid" names "notapeerid", which is not a peer id \(one such as 12D3KooW…, as a node prints it at start\)$/],
      ['a site prefix', bad({ listen: [], sitePrefixes: ['banana'] }), 'sitePrefixes', /^sitePrefixes "banana" is not a CIDR prefix/],
      ['a port range', bad({ listen: ['/ip4/127.0.0.1/tcp/0'], listenRange: '9-1' }), 'listenRange', /^listenRange: expected FIRST-LAST/],
      ['a port range as a number', bad({ listen: ['/ip4/127.0.0.1/tcp/0'], listenRange: 7000 }), 'listenRange', /^listenRange must be "FIRST-LAST" \(e\.g\. "7000-7010"\) or \{ first, last \}, got 7000$/],
      ['liveness timing', bad({ listen: [], timing: { probeAfterIdleMs: 5000 } }), 'timing.deadAfterSilenceMs', /^timing\.deadAfterSilenceMs \(6000\) must be at least twice/],
      // Found by a new user: a node listening nowhere started; a key that is no key failed as a
      // TypeError; a gater that is no object was taken; a string read as a number; no field.
      ['no listen', bad({ names: ['x'] }), 'listen', /^listen is required: the addresses to listen on/],
      ['a private key as a string', bad({ listen: [], privateKey: 'abc' }), 'privateKey', /^privateKey must be a libp2p private key .*, got "abc"$/],
      ['a gater as a string', bad({ listen: [], connectionGater: 'x' }), 'connectionGater', /^connectionGater must be a libp2p ConnectionGater object, got string$/],
      ['a wait as a string', bad({ listen: [], timing: { routeWaitMs: '100' } }), 'timing.routeWaitMs', /got "100"$/],
      ['a port range with no port 0 to choose', bad({ listen: ['/ip4/127.0.0.1/tcp/7000'], listenRange: '7000-7010' }), 'listenRange', /^listenRange 7000-7010: no listen address has port 0/],
    )
    for (const [what, promise, field, message] of cases) {
      const error = await failure(promise)
      expect(error.code, what).toBe('INVALID_INPUT')
      expect(error.field, what).toBe(field)
      expect(error.message, what).toMatch(message)
    }
  })

  it('a listen address in use: one line naming listen and the cause (libp2p said it in many lines, with stack traces)', async () => {
    const taken = a.libp2p.getMultiaddrs()[0]!.decapsulateCode(421).toString()
    const error = await failure(createPhoenixLibp2p({ listen: [taken] }))
    expect([error.code, error.field]).toEqual(['INVALID_INPUT', 'listen'])
    expect(error.message).toBe(`listen ${taken}: address already in use (another process listens there; pick another port, or /tcp/0 for any free one)`)
    expect(String((error.cause as Error).message)).toMatch(/EADDRINUSE/)
  })

  it('gives every send a message id that the receiver sees, and a retry with the same id is acknowledged but delivered once', async () => {
    gotByB.length = 0
    const first = await a.phoenix.send('b', text('once'), { ack: true })
    expect(first.messageId).toBeGreaterThan(0)
    const unacked = await a.phoenix.send('b', text('twice'))
    expect(unacked.messageId).not.toBe(first.messageId)
    const retry = await a.phoenix.send('b', text('once'), { ack: true, messageId: first.messageId })
    expect(retry.messageId).toBe(first.messageId)
    await waitUntil('b got the unacknowledged message', () => gotByB.length >= 2)
    expect(gotByB.map((m) => [new TextDecoder().decode(m.payload), m.messageId, m.from])).toEqual([
      ['once', first.messageId, a.libp2p.peerId.toString()],
      ['twice', unacked.messageId, a.libp2p.peerId.toString()],
    ])
    expect(b.phoenix.metricsText()).toMatch(/^phoenix_messages_duplicate_total 1$/m)
  })

  it('holds a message id while its send waits for a route: a second send with it is refused, not merged into the first', async () => {
    const waiting = a.phoenix.send('not-yet', text('first'), { ack: true, messageId: 4242, routeWaitMs: 300 })
    const second = await failure(a.phoenix.send('not-yet', text('second'), { ack: true, messageId: 4242, routeWaitMs: 300 }))
    expect([second.code, second.field, second.message]).toEqual(['INVALID_INPUT', 'options.messageId', 'options.messageId 4242 is already taken by a send waiting for a route'])
    // The failure names the message id it had, as every other failure of a send does.
    expect(await failure(waiting)).toMatchObject({ code: 'NO_ROUTE', messageId: 4242 })
    // Released with the wait: the id may be used again.
    expect((await failure(a.phoenix.send('not-yet', text('again'), { ack: true, messageId: 4242, routeWaitMs: 0 }))).code).toBe('NO_ROUTE')
  })

  it('a send to its own name copies the payload unless transferred, as a send to another node does', async () => {
    const own: ReceivedMessage[] = []
    a.phoenix.addEventListener('message', (event) => own.push(event.detail))
    const buffer = text('1111')
    await a.phoenix.send('a', buffer, { ack: true })
    buffer.fill(57)
    const moved = text('2222')
    await a.phoenix.send('a', moved, { ack: true, transfer: true })
    expect(own.map((m) => new TextDecoder().decode(m.payload))).toEqual(['1111', '2222'])
  })
})

describe('acks mean the application has it (issue 11, item 2)', () => {
  const nodes = new TestNodes()
  afterAll(() => nodes.stopAll())

  it('a consumer that is not reading: only what fits its buffer (half of it, for a source alone) is acked; the rest fails with receiver-too-slow, and the app gets exactly the acked ones', async () => {
    const a = await nodes.start({ names: ['a'] })
    const b = await nodes.start({ names: ['b'], hubs: [addressOf(a)], limits: { receiveBufferMax: 20 } })
    const iterator = b.phoenix.messages() // opened, not read
    await waitUntil('b has a route to a', () => b.phoenix.resolve('a') !== undefined)
    await waitUntil('a has a route to b', () => a.phoenix.resolve('b') !== undefined)
    const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => a.phoenix.send('b', text(`m${i}`), { ack: true, ackTimeoutMs: 5_000 })))
    const acked = results.filter((r) => r.status === 'fulfilled').map((r) => r.value.messageId)
    const failed = results.filter((r) => r.status === 'rejected').map((r) => r.reason as PhoenixTransportError)
    expect(acked).toHaveLength(10)
    expect(failed).toHaveLength(40)
    for (const error of failed) expect([error.code, error.reason]).toEqual(['UNDELIVERABLE', 'receiver-too-slow'])
    const read: number[] = []
    for (let i = 0; i < 10; i++) read.push((await iterator.next()).value!.messageId)
    expect(read).toEqual(acked)
    // Room again: the next one is delivered.
    await a.phoenix.send('b', text('room now'), { ack: true })
    expect(new TextDecoder().decode((await iterator.next()).value!.payload)).toBe('room now')
    await iterator.return!()
  })

  it('one source flooding a consumer that is not reading leaves room for another source: its acked send is delivered, and every refused one was told', async () => {
    // Before, the flooder's 40 messages filled b's buffer of 40 and c's send failed
    // receiver-too-slow (held-messages.ts, the share rule).
    const a = await nodes.start({ names: ['a'] })
    const b = await nodes.start({ names: ['b'], hubs: [addressOf(a)], limits: { receiveBufferMax: 40 } })
    const c = await nodes.start({ names: ['c'], hubs: [addressOf(a)] })
    const iterator = b.phoenix.messages() // opened, not read
    await waitUntil('a and c have a route to b', () => a.phoenix.resolve('b') !== undefined && c.phoenix.resolve('b') !== undefined)
    const flood = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => a.phoenix.send('b', text(`f${i}`), { ack: true, ackTimeoutMs: 5_000 })))
    const acked = flood.filter((r) => r.status === 'fulfilled').length
    expect(acked).toBe(20)
    for (const r of flood) if (r.status === 'rejected') expect((r.reason as PhoenixTransportError).reason).toBe('receiver-too-slow')
    const { messageId } = await c.phoenix.send('b', text('from c'), { ack: true, ackTimeoutMs: 5_000 })
    const read: string[] = []
    for (let i = 0; i <= acked; i++) {
      const m = (await iterator.next()).value!
      read.push(m.from === c.libp2p.peerId.toString() ? `c${m.messageId === messageId ? '' : '?'}` : 'a')
    }
    expect(read.filter((who) => who === 'c')).toEqual(['c'])
    await iterator.return!()
  })

  it('before any consumer, messages wait in the receive buffer for the first one; past it they fail with no-consumer, and unacked sends hear it as an event with their id', async () => {
    const a = await nodes.start({ names: ['a'] })
    const b = await nodes.start({ names: ['b'], hubs: [addressOf(a)], limits: { receiveBufferMax: 10 } })
    const undeliverable: Undeliverable[] = []
    a.phoenix.addEventListener('undeliverable', (event) => undeliverable.push(event.detail))
    await waitUntil('a has a route to b', () => a.phoenix.resolve('b') !== undefined)
    const results = await Promise.allSettled(Array.from({ length: 7 }, (_, i) => a.phoenix.send('b', text(`w${i}`), { ack: true })))
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5)
    for (const r of results.filter((r) => r.status === 'rejected')) expect((r.reason as PhoenixTransportError).reason).toBe('no-consumer')
    const { messageId } = await a.phoenix.send('b', text('no ack'))
    await waitUntil('the bounce of the unacknowledged send', () => undeliverable.length > 0)
    expect(undeliverable).toEqual([{ node: b.libp2p.peerId.toString(), messageId, reason: 'no-consumer' }])
    const got: string[] = []
    b.phoenix.addEventListener('message', (event) => got.push(new TextDecoder().decode(event.detail.payload)))
    await waitUntil('the waiting messages reach the first listener', () => got.length === 5)
    expect(got).toEqual(['w0', 'w1', 'w2', 'w3', 'w4'])
  })
})
