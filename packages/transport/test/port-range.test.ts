import { createServer, type Server } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { PhoenixTransportError } from '../src/errors.ts'
import { firstFreePort, parsePortRange, probeListen, withPortFromRange, type PortProbe } from '../src/port-range.ts'

const servers: Server[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))))
})

/** Holds `count` consecutive loopback ports; returns the first. Port 0 finds a base, then the rest must be free too. */
async function occupy(count: number): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 40_000)
    const held: Server[] = []
    for (let port = base; port < base + count; port++) {
      const server = createServer()
      const ok = await new Promise<boolean>((resolve) => {
        server.once('error', () => resolve(false))
        server.listen({ port, host: '127.0.0.1', exclusive: true }, () => resolve(true))
      })
      if (!ok) break
      held.push(server)
    }
    if (held.length === count) {
      servers.push(...held)
      return base
    }
    await Promise.all(held.map((s) => new Promise((r) => s.close(r))))
  }
  throw new Error(`could not hold ${count} consecutive ports`)
}

const messageOf = (f: () => unknown): string => {
  try {
    f()
  } catch (e) {
    expect(e).toBeInstanceOf(PhoenixTransportError)
    expect((e as PhoenixTransportError).code).toBe('INVALID_INPUT')
    return (e as Error).message
  }
  throw new Error('did not throw')
}

describe('port ranges', () => {
  it('parses FIRST-LAST and a single port', () => {
    expect(parsePortRange('7000-7010')).toEqual({ first: 7000, last: 7010 })
    expect(parsePortRange(' 7000 - 7010 ')).toEqual({ first: 7000, last: 7010 })
    expect(parsePortRange('7005')).toEqual({ first: 7005, last: 7005 })
  })

  it('a malformed range is one line naming the option', () => {
    for (const bad of ['7010-7000', '0-10', '7000-70000', '7000-', 'a-b', '', '7000:7010']) {
      expect(messageOf(() => parsePortRange(bad))).toBe(`--listen-range: expected FIRST-LAST with 1 <= FIRST <= LAST <= 65535 (e.g. 7000-7010), got ${JSON.stringify(bad)}`)
    }
    expect(messageOf(() => parsePortRange('x', 'listenRange'))).toMatch(/^listenRange: /)
  })

  it('takes the first free port of the range, skipping ports in use', async () => {
    const base = await occupy(3)
    // base, base+1, base+2 are held; base+3 is the first that can be free.
    const port = await firstFreePort({ first: base, last: base + 10 }, '127.0.0.1')
    expect(port).toBeGreaterThanOrEqual(base + 3)
    expect(await probeListen(port, '127.0.0.1')).toBe('free')
    expect(await probeListen(base + 1, '127.0.0.1')).toBe('in-use')
  })

  it('resumes after a port lost between the probe and the listen', async () => {
    const probed: number[] = []
    const port = await firstFreePort({ first: 7000, last: 7010 }, '10.0.0.1', { from: 7004, probe: async (p) => (probed.push(p), p < 7006 ? 'in-use' : 'free') })
    expect(port).toBe(7006)
    expect(probed).toEqual([7004, 7005, 7006])
  })

  it('no free port in the range: a clear error naming the option, the host and the range, not a hang', async () => {
    const base = await occupy(3)
    await expect(firstFreePort({ first: base, last: base + 2 }, '127.0.0.1')).rejects.toThrow(`--listen-range ${base}-${base + 2}: no free port on 127.0.0.1 (all 3 ports are in use)`)
    await expect(firstFreePort({ first: base, last: base }, '127.0.0.1', { what: 'listenRange' })).rejects.toThrow(`listenRange ${base}: no free port on 127.0.0.1 (the one port is in use)`)
  })

  it('a host that is not ours is not "in use": it fails at once with the cause', async () => {
    // 192.0.2.1 (TEST-NET-1) is not an address of this machine: EADDRNOTAVAIL.
    await expect(firstFreePort({ first: 7000, last: 7010 }, '192.0.2.1')).rejects.toThrow('--listen-range 7000-7010: cannot listen on 192.0.2.1: EADDRNOTAVAIL')
  })
})

describe('withPortFromRange: the listen, and the race with another process', () => {
  const allFree: PortProbe = async () => 'free'
  const inUse = (port: number) => Object.assign(new Error(`listen EADDRINUSE: address already in use 0.0.0.0:${port}`), { code: 'EADDRINUSE' })

  it('a port taken between the probe and the listen: the next one of the range', async () => {
    const tried: number[] = []
    const port = await withPortFromRange({ first: 7000, last: 7010 }, ['0.0.0.0'], async (p) => {
      tried.push(p)
      if (p < 7002) throw inUse(p)
      return p
    }, { probe: allFree })
    expect(port).toBe(7002)
    expect(tried).toEqual([7000, 7001, 7002])
  })

  it('the last port taken too: one line naming the option and what happened', async () => {
    await expect(withPortFromRange({ first: 7000, last: 7001 }, ['0.0.0.0', '::'], async (p) => Promise.reject(inUse(p)), { what: 'listenRange', probe: allFree })).rejects.toThrow(
      'listenRange 7000-7001: no free port on 0.0.0.0 and :: (port 7001 was taken after it was found free)',
    )
  })

  it('a port must be free on every host; other listen failures are not retried', async () => {
    const probed: string[] = []
    const probe: PortProbe = async (port, host) => (probed.push(`${host}:${port}`), host === '::' && port === 7000 ? 'in-use' : 'free')
    expect(await withPortFromRange({ first: 7000, last: 7010 }, ['0.0.0.0', '::'], async (p) => p, { probe })).toBe(7001)
    expect(probed).toEqual(['0.0.0.0:7000', ':::7000', '0.0.0.0:7001', ':::7001'])
    let attempts = 0
    await expect(withPortFromRange({ first: 7000, last: 7010 }, ['0.0.0.0'], async () => (attempts++, Promise.reject(new Error('EACCES'))), { probe: allFree })).rejects.toThrow('EACCES')
    expect(attempts).toBe(1)
  })
})
