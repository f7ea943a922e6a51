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
