/**
 * Listening inside the port range a site's firewall leaves open (`--listen-range 7000-7010`, as
 * QCG-OMPI and MPICH-G2 do): parse the range, then take the first port of it that is free here.
 */
import { createServer } from 'node:net'
import { PhoenixTransportError } from './errors.ts'

export interface PortRange {
  readonly first: number
  readonly last: number
}

/** Parses `FIRST-LAST` (or a single port); a malformed range throws INVALID_INPUT naming `what`. */
export function parsePortRange(text: string, what = '--listen-range'): PortRange {
  const m = /^\s*(\d{1,5})\s*(?:-\s*(\d{1,5})\s*)?$/.exec(text)
  const first = Number(m?.[1])
  const last = m?.[2] === undefined ? first : Number(m[2])
  if (m === null || first < 1 || last > 65_535 || first > last) {
    throw new PhoenixTransportError('INVALID_INPUT', `${what}: expected FIRST-LAST with 1 <= FIRST <= LAST <= 65535 (e.g. 7000-7010), got ${JSON.stringify(text)}`, { field: what })
  }
  return { first, last }
}

export function formatPortRange(range: PortRange): string {
  return range.first === range.last ? `${range.first}` : `${range.first}-${range.last}`
}

/** What a listen attempt found: the port is ours to use, or taken by someone else. Anything else throws. */
export type PortProbe = (port: number, host: string) => Promise<'free' | 'in-use'>

/**
 * Whether `host:port` can be listened on now, by listening and closing at once. `EADDRINUSE` (and
 * `EACCES` for a privileged port) means "in use"; any other error (the host is not an address of
 * this machine, say) is not something another port would fix, so it throws.
 */
export const probeListen: PortProbe = (port, host) =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE' || error.code === 'EACCES') resolve('in-use')
      else reject(error)
    })
    // IPv6 only, as libp2p's TCP transport listens on an /ip6 address: a dual-stack `::` would
    // collide with our own 0.0.0.0 listener on the same port.
    server.listen({ port, host, exclusive: true, ipv6Only: host.includes(':') }, () => server.close(() => resolve('free')))
  })

/**
 * The first port of `range` free on `host`. Another process may take it between this probe and
 * the real listen: a caller whose listen then fails with EADDRINUSE asks again from the next port
 * (`from`). None free throws INVALID_INPUT naming `what`, the host and the range.
 */
export async function firstFreePort(range: PortRange, host: string, options: { what?: string; from?: number; probe?: PortProbe } = {}): Promise<number> {
  const what = options.what ?? '--listen-range'
  const probe = options.probe ?? probeListen
  const from = Math.max(range.first, options.from ?? range.first)
  for (let port = from; port <= range.last; port++) {
    let result
    try {
      result = await probe(port, host)
    } catch (error) {
      const e = error as NodeJS.ErrnoException
      throw new PhoenixTransportError('INVALID_INPUT', `${what} ${formatPortRange(range)}: cannot listen on ${host}: ${e.code ?? e.message}`, { field: what })
    }
    if (result === 'free') return port
  }
  const tried = range.last - from + 1
  throw new PhoenixTransportError('INVALID_INPUT', `${what} ${formatPortRange(range)}: no free port on ${host} (${tried === 1 ? 'the one port is' : `all ${tried} ports${from > range.first ? ` from ${from}` : ''} are`} in use)`, { field: what })
}

/**
 * Runs `attempt` (a listen) on the first port of `range` free on every one of `hosts`. Another
 * process may take that port between our probe and the listen: an attempt failing with
 * EADDRINUSE moves on to the next port of the range. Every other failure is thrown as it is.
 */
export async function withPortFromRange<T>(range: PortRange, hosts: readonly string[], attempt: (port: number) => Promise<T>, options: { what?: string; probe?: PortProbe } = {}): Promise<T> {
  const what = options.what ?? '--listen-range'
  const probe = options.probe ?? probeListen
  const hostsText = hosts.join(' and ')
  // One host after another: probes of the same port at once would find each other (`::` and `0.0.0.0`).
  const onEveryHost: PortProbe = async (port) => {
    for (const host of hosts) if ((await probe(port, host)) === 'in-use') return 'in-use'
    return 'free'
  }
  for (let from = range.first; ; ) {
    const port = await firstFreePort(range, hostsText, { what, from, probe: onEveryHost })
    try {
      return await attempt(port)
    } catch (error) {
      // libp2p's error, or ours naming `listen` with libp2p's as its cause.
      const said = `${(error as Error).message} ${((error as Error).cause as Error | undefined)?.message ?? ''}`
      if (!/EADDRINUSE/.test(said)) throw error
      if (port >= range.last) throw new PhoenixTransportError('INVALID_INPUT', `${what} ${formatPortRange(range)}: no free port on ${hostsText} (port ${port} was taken after it was found free)`, { field: what })
      from = port + 1
    }
  }
}
