import { PhoenixTransportError } from './errors.ts'

/**
 * The oldest Node major this transport runs on. libp2p 3 needs Node 22: its stream muxing and
 * queues call `Promise.withResolvers` (V8 12.4, Node 22.0). Under Node 20 the package installs
 * (npm only warns about `engines`) and a node starts and listens, but every connection handshake
 * throws inside libp2p: no neighbour ever, and every send ends in `NO_ROUTE` after its wait, with
 * nothing naming the cause (found by hand: the packed package installed and run on Node 20).
 */
export const NODE_MAJOR_MIN = 22

/** Throws `UNSUPPORTED` naming both versions unless this runtime can run libp2p 3; checked before a node is built. */
export function checkRuntime(version: string = process.versions.node): void {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1] ?? Number.NaN)
  const withResolvers = typeof (Promise as { withResolvers?: unknown }).withResolvers === 'function'
  if (major >= NODE_MAJOR_MIN && withResolvers) return
  throw new PhoenixTransportError('UNSUPPORTED', `phoenix-overlay needs Node ${NODE_MAJOR_MIN} or later (libp2p 3 does: it calls Promise.withResolvers); this is Node ${version}`)
}
