/**
 * The benchmark's only door into `@phoenix-overlay/transport`. Everything the harness does with a
 * Phoenix node goes through this module, so a change of the transport's API is fixed here alone.
 *
 * Transport API used (and nothing else):
 * - `createPhoenixLibp2p({ listen, hubs, names, discovery })` → `{ libp2p, phoenix }`;
 * - `phoenix.send(name, payload, { transfer: true })` (no acknowledgement; resolves once handed to the next hop; the payload handed over, not copied);
 *   a send refused with an error whose `code` is `'QUEUE_FULL'` is retried after a short wait
 *   (that is the overlay's backpressure toward a local sender), for at most QUEUE_FULL_GIVE_UP_MS;
 * - the `message` event (`{ payloadList, hops }`), the same delivery as `phoenix.messages()`: the
 *   payload read as the pieces it arrived in (`payloadList`), as the raw paths' receivers read
 *   their stream's chunks, never joined into one array (`payload` would copy a 64 KiB message);
 * - the `undeliverable` event (`{ reason }`): a send that a node on the way refused (a receiver
 *   whose inbox is full says `receiver-too-slow`); counted by reason, so a run that comes up
 *   short says why instead of waiting for messages that will never come;
 * - `phoenix.resolve(name)?.nhops`: to wait until the route has the expected length;
 * - `libp2p.getMultiaddrs()`, `libp2p.peerId`, `libp2p.stop()`.
 */
import { createPhoenixLibp2p } from '@phoenix-overlay/transport'
import { STAMP_BYTES } from './framing.ts'

/** What the harness needs of an overlay node. */
export interface OverlayNode {
  readonly peerId: string
  /** Listen addresses with the peer id, to give to the previous node of a chain as its hub. */
  readonly addresses: string[]
  /** Sends `payload` to the node named `name`, waiting (not failing) while the first hop's queue is full. */
  send(name: string, payload: Uint8Array): Promise<void>
  /** Calls `onMessage` for every message delivered here (its first STAMP_BYTES bytes, what the harness reads of it, and its length) until the node stops; `onError` if it throws. */
  onMessages(onMessage: (message: { head: Uint8Array; bytes: number }, hops: number) => void, onError: (error: Error) => void): void
  /** Hops to the node named `name`, or undefined while there is no route. */
  hopsTo(name: string): number | undefined
  /** Sends of ours refused on the way since the node started, by reason (the `undeliverable` events). */
  refusals(): Record<string, number>
  stop(): Promise<void>
}

export interface OverlayNodeOptions {
  listen: string[]
  /** The only nodes this one dials (discovery is off: a chain stays a chain). */
  hubs: string[]
  names: string[]
}

/** How long a sender waits before retrying a send refused for a full queue. */
const QUEUE_FULL_RETRY_MS = 1
/**
 * A send still refused QUEUE_FULL after this long fails: the first hop has not taken one frame
 * of ours in 10 s, so its credit or its link is stuck (on loopback a window drains in
 * milliseconds); the run says so instead of retrying forever.
 */
const QUEUE_FULL_GIVE_UP_MS = 10_000

export async function startOverlayNode(options: OverlayNodeOptions): Promise<OverlayNode> {
  const { libp2p, phoenix } = await createPhoenixLibp2p({ listen: options.listen, hubs: options.hubs, names: options.names, discovery: false })
  let stopped = false
  const refusals: Record<string, number> = {}
  phoenix.addEventListener('undeliverable', (event) => {
    refusals[event.detail.reason] = (refusals[event.detail.reason] ?? 0) + 1
  })
  return {
    peerId: libp2p.peerId.toString(),
    addresses: libp2p.getMultiaddrs().map((ma) => ma.toString()),
    async send(name, payload) {
      const refusedSinceMs = performance.now()
      for (;;) {
        try {
          // Handed over, not copied (the buffer is never changed after): the contract of a
          // libp2p stream's send, which the other paths have.
          await phoenix.send(name, payload, { transfer: true })
          return
        } catch (error) {
          if ((error as { code?: unknown }).code !== 'QUEUE_FULL') throw error
          if (performance.now() - refusedSinceMs > QUEUE_FULL_GIVE_UP_MS) throw new Error(`sender: refused QUEUE_FULL for ${QUEUE_FULL_GIVE_UP_MS} ms, giving up: ${(error as Error).message}`)
          await new Promise((resolve) => setTimeout(resolve, QUEUE_FULL_RETRY_MS))
        }
      }
    },
    onMessages(onMessage, onError) {
      // The 'message' event, as the raw paths' receivers read their stream's 'message' event:
      // the async iterator (`phoenix.messages()`) hands a message on one microtask later, and on
      // loopback that microtask waits behind the rest of libp2p's handling of the same socket
      // read (about 90-120 µs in an in-process probe), which the raw paths do not pay.
      phoenix.addEventListener('message', (event) => {
        if (stopped) return
        try {
          const pieces = event.detail.payloadList
          onMessage({ head: pieces.subarray(0, Math.min(STAMP_BYTES, pieces.byteLength)), bytes: pieces.byteLength }, event.detail.hops)
        } catch (error) {
          onError(error as Error)
        }
      })
    },
    hopsTo(name) {
      return phoenix.resolve(name)?.nhops
    },
    refusals() {
      return { ...refusals }
    },
    async stop() {
      stopped = true
      await libp2p.stop()
    },
  }
}
