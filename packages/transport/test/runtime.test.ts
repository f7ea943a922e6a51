import { describe, expect, it } from 'vitest'
import { NODE_MAJOR_MIN, createPhoenixLibp2p, phoenix } from '../src/index.ts'
import { checkRuntime } from '../src/runtime.ts'

/** Runs `body` with `process.versions.node` reading `version` (what an older Node reports). */
async function asNode<T>(version: string, body: () => T | Promise<T>): Promise<T> {
  const saved = Object.getOwnPropertyDescriptor(process.versions, 'node')!
  Object.defineProperty(process.versions, 'node', { ...saved, value: version })
  try {
    return await body()
  } finally {
    Object.defineProperty(process.versions, 'node', saved)
  }
}

describe('the runtime a node needs', () => {
  it('refuses a Node older than 22 naming both versions, and accepts 22 and this one', () => {
    expect(NODE_MAJOR_MIN).toBe(22)
    expect(() => checkRuntime('20.20.2')).toThrow('phoenix-overlay needs Node 22 or later (libp2p 3 does: it calls Promise.withResolvers); this is Node 20.20.2')
    expect(() => checkRuntime('v21.7.3')).toThrow(/this is Node v21\.7\.3$/)
    expect(() => checkRuntime('not a version')).toThrow(/this is Node not a version$/)
    expect(() => checkRuntime('22.0.0')).not.toThrow()
    expect(() => checkRuntime()).not.toThrow()
  })

  it('refuses a runtime without Promise.withResolvers whatever its version says', () => {
    const promise = Promise as { withResolvers?: unknown }
    const saved = promise.withResolvers
    delete promise.withResolvers
    try {
      expect(() => checkRuntime('24.9.0')).toThrow(/needs Node 22 or later/)
    } finally {
      promise.withResolvers = saved
    }
  })

  it('the service factory and the node helper refuse before building anything (under Node 20 they started, and never connected)', async () => {
    await asNode('20.20.2', async () => {
      expect(() => phoenix({ names: ['x'] })).toThrow(expect.objectContaining({ code: 'UNSUPPORTED', name: 'PhoenixTransportError' }))
      await expect(createPhoenixLibp2p({ listen: ['/ip4/127.0.0.1/tcp/0'] })).rejects.toMatchObject({ code: 'UNSUPPORTED', message: expect.stringContaining('this is Node 20.20.2') })
    })
  })
})

describe('options a node does not take are refused, naming them', () => {
  it('a misspelt option, limit or timing is INVALID_INPUT naming it and what it may have meant (it was ignored: a node given `hub` never connected)', async () => {
    const listen = ['/ip4/127.0.0.1/tcp/0']
    const refused = async (options: object) => {
      let error: { code: string; message: string; field: string } | undefined
      try {
        const node = await createPhoenixLibp2p(options as Parameters<typeof createPhoenixLibp2p>[0])
        await node.libp2p.stop()
      } catch (e) {
        error = e as { code: string; message: string; field: string }
      }
      return error === undefined ? 'started' : `${error.code} ${error.field}: ${error.message}`
    }
    expect(await refused({ listen, hub: ['/ip4/127.0.0.1/tcp/1'] })).toBe('INVALID_INPUT options.hub: options.hub is not an option (did you mean options.hubs?)')
    expect(await refused({ listen, core: { timing: { coHubWaitMS: 5 } } })).toBe('INVALID_INPUT core.timing.coHubWaitMS: core.timing.coHubWaitMS is not an option (did you mean core.timing.coHubWaitMs?)')
    expect(await refused({ listen, core: { limit: {} } })).toBe('INVALID_INPUT core.limit: core.limit is not an option (did you mean core.limits?)')
    expect(await refused({ listen, limits: { queueBytes: 1 } })).toMatch(/^INVALID_INPUT limits\.queueBytes: limits\.queueBytes is not an option; limits takes /)
    expect(await refused({ listen, strangers: { handshakesInProgressMAX: 1 } })).toBe('INVALID_INPUT strangers.handshakesInProgressMAX: strangers.handshakesInProgressMAX is not an option (did you mean strangers.handshakesInProgressMax?)')
    expect(await refused({ listen, ssh: { identity: 'id' } })).toMatch(/^INVALID_INPUT ssh\.identity: ssh\.identity is not an option; ssh takes identityFile, /)
    // The service alone (a libp2p node of the user's own) checks the same.
    expect(() => phoenix({ hubz: [] } as object)).toThrow('options.hubz is not an option (did you mean options.hubs?)')
    // Every option the types name is taken.
    expect(await refused({ listen, hubs: [], names: ['k'], site: 's', mode: 'optimized', discovery: true, signRecords: true, sitePrefixes: [], limits: {}, timing: {}, core: { limits: {}, timing: {} }, strangers: {}, allowedPeers: [] })).toBe('started')
  })

  it('a limit, timing or protocol out of range is INVALID_INPUT naming it, before anything starts (they were taken as given)', async () => {
    const listen = ['/ip4/127.0.0.1/tcp/0']
    const refused = async (options: object) => {
      try {
        const node = await createPhoenixLibp2p({ listen, ...options } as Parameters<typeof createPhoenixLibp2p>[0])
        await node.libp2p.stop()
        return 'started'
      } catch (e) {
        const error = e as { code: string; message: string; field: string }
        return `${error.code} ${error.field}: ${error.message}`
      }
    }
    // A negative window failed as an internal invariant; a string limit was compared as text; 0 acks pending refused every send with an ack.
    expect(await refused({ limits: { flowWindowBytes: -1 } })).toBe('INVALID_INPUT limits.flowWindowBytes: limits.flowWindowBytes must be a non-negative integer, got -1')
    expect(await refused({ limits: { receiveBufferMax: '5' } })).toBe('INVALID_INPUT limits.receiveBufferMax: limits.receiveBufferMax must be a positive integer, got "5"')
    expect(await refused({ limits: { pendingAcksMax: 0 } })).toBe('INVALID_INPUT limits.pendingAcksMax: limits.pendingAcksMax must be a positive integer, got 0')
    expect(await refused({ timing: { ackTimeoutMs: Number.POSITIVE_INFINITY } })).toBe("INVALID_INPUT timing.ackTimeoutMs: timing.ackTimeoutMs must be a positive integer of ms below 2^31 (the timers' ceiling), got Infinity")
    // Past setTimeout's ceiling a timer fires at once: a 2^31 ms route wait ended after 1 ms.
    expect(await refused({ timing: { routeWaitMs: 2 ** 31 } })).toBe("INVALID_INPUT timing.routeWaitMs: timing.routeWaitMs must be a non-negative integer of ms below 2^31 (the timers' ceiling), got 2147483648")
    expect(await refused({ ssh: { timing: { readyTimeoutMs: 2 ** 32 } } })).toMatch(/^INVALID_INPUT ssh\.timing\.readyTimeoutMs: .* below 2\^31/)
    // The core's limits: refused only at start before, as the core's INVALID_CONFIG naming `limits.neighboursMax`.
    expect(await refused({ core: { limits: { neighboursMax: 0 } } })).toBe('INVALID_INPUT core.limits.neighboursMax: core.limits.neighboursMax must be a positive integer, got 0')
    expect(await refused({ core: { timing: { coHubWaitMs: 1.5 } } })).toBe('INVALID_INPUT core.timing.coHubWaitMs: core.timing.coHubWaitMs must be a non-negative integer, got 1.5')
    // Above the wire's 255 the node started, and every neighbour dropped it at its first send (a user's audit).
    expect(await refused({ core: { limits: { hopLimit: 300 } } })).toBe("INVALID_INPUT core.limits.hopLimit: core.limits.hopLimit must be at most 255 (the wire's hop limit field; a node drops a neighbour that sends more), got 300")
    // multistream-select frames a protocol id as one line starting with '/'.
    expect(await refused({ protocol: 'phoenix' })).toMatch(/^INVALID_INPUT protocol: protocol must be a libp2p protocol id, a string starting with "\/"/)
    expect(await refused({ protocol: '/a\nb' })).toMatch(/^INVALID_INPUT protocol: /)
    expect(() => phoenix({ limits: { outboundFramesMaxPerNeighbour: 0 } })).toThrow('limits.outboundFramesMaxPerNeighbour must be a positive integer, got 0')
    expect(await refused({ ssh: { identityFile: '/k', limits: { tunnelsMax: -1 } } })).toBe('INVALID_INPUT ssh.limits.tunnelsMax: ssh.limits.tunnelsMax must be a positive integer, got -1')
    expect(await refused({ strangers: { handshakesInProgressMax: '5' } })).toBe('INVALID_INPUT strangers.handshakesInProgressMax: strangers.handshakesInProgressMax must be a positive integer, got "5"')
    // The key file read as text failed as Node's ERR_INVALID_ARG_TYPE; names refused at start said `config.names`, with no field.
    expect(await refused({ privateNetworkKey: '/key/swarm/psk/1.0.0/' })).toMatch(/^INVALID_INPUT privateNetworkKey: privateNetworkKey must be a Uint8Array, /)
    expect(await refused({ names: ['a', 'a'] })).toBe('INVALID_INPUT names: names: "a" is given twice')
    expect(await refused({ names: [''] })).toBe('INVALID_INPUT names: names: a name must be a non-empty string of at most 256 characters, got an empty one')
    // Where 0 means something, it is taken: credit off, no wait for a route, a node without names, no redials.
    expect(await refused({ limits: { flowWindowBytes: 0, duplicateWindowMax: 0 }, timing: { routeWaitMs: 0, dialDeferMs: 0 }, core: { limits: { namesPerNodeMax: 0, lostRedialsPerSecondMax: 0 }, timing: { coHubWaitMs: 0 } }, protocol: '/my/overlay/1.0.0' })).toBe('started')
  })
})
