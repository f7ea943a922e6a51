/**
 * Shared by the private-network tests and `bench/psk-relay.ts`: protected connection pairs over
 * in-memory connections, reading a message stream, and `@libp2p/pnet`'s own cipher
 * (`xsalsa20@1.2.0`), reached through pnet's dependency so it is the very module pnet runs.
 */
import type { ConnectionProtector, MessageStream, StreamMessageEvent } from '@libp2p/interface'
import { multiaddrConnectionPair } from '@libp2p/utils'
import { realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Uint8ArrayList } from 'uint8arraylist'
import { drained } from '../src/drain.ts'

/** Two protected ends of one in-memory connection: `dialer` protects the outbound end, `listener` the inbound. */
export async function protectedPair(dialer: ConnectionProtector, listener: ConnectionProtector): Promise<[MessageStream, MessageStream]> {
  const [outbound, inbound] = multiaddrConnectionPair()
  return Promise.all([dialer.protect(outbound), listener.protect(inbound)])
}

/** Resolves with the next `bytes` bytes `stream` receives (rejects if it closes first). */
export function receive(stream: MessageStream, bytes: number): Promise<Uint8Array> {
  const received = new Uint8ArrayList()
  return new Promise((resolve, reject) => {
    const onMessage = (event: StreamMessageEvent) => {
      received.append(event.data)
      if (received.byteLength < bytes) return
      stream.removeEventListener('message', onMessage)
      stream.removeEventListener('close', onClose)
      resolve(received.subarray(0, bytes))
    }
    const onClose = () => reject(new Error(`stream closed after ${received.byteLength} of ${bytes} bytes`))
    stream.addEventListener('message', onMessage)
    stream.addEventListener('close', onClose)
  })
}

/** Sends `data` and resolves once the stream has handed it on (waits for its drain when it is full). */
export async function sendAll(stream: MessageStream, data: Uint8Array): Promise<void> {
  if (!stream.send(data)) await drained(stream)
}

/** Bytes that differ at every position and between calls with different `seed`s (cheap to make, unlike random bytes). */
export function patterned(bytes: number, seed: number): Uint8Array {
  const out = new Uint8Array(bytes)
  let x = (seed * 2654435761) >>> 0 || 1
  for (let i = 0; i < bytes; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    out[i] = x & 0xff
  }
  return out
}

interface Xsalsa20Xor {
  update(input: Uint8Array): Uint8Array
  finalize(): void
  _xor?: { _pointer?: number; _memory?: Uint8Array }
}
type Xsalsa20 = (nonce: Uint8Array, key: Uint8Array) => Xsalsa20Xor

/** The `xsalsa20` module `@libp2p/pnet` uses (CommonJS, one instance per process). */
export function pnetXsalsa20(): Xsalsa20 {
  const pnet = realpathSync(new URL('../node_modules/@libp2p/pnet/package.json', import.meta.url))
  return createRequire(pnet)('xsalsa20') as Xsalsa20
}

let probesTaken = 0

/**
 * What `xsalsa20` holds in its WebAssembly memory: `slotBytes` is the 64-byte cipher slots taken
 * and never given back, `memoryBytes` the memory's size. Read through a probe cipher: with no slot
 * handed back (pnet hands back none), a new cipher's slot sits after all slots ever taken, the
 * first at byte 144. The probe keeps its slot (handing it back would make the next probe reuse
 * it), so earlier probes' slots are subtracted.
 */
export function xsalsa20Memory(): { slotBytes: number; memoryBytes: number } {
  const probe = pnetXsalsa20()(new Uint8Array(24), new Uint8Array(32))
  const slotBytes = (probe._xor?._pointer ?? Number.NaN) - 144 - 64 * probesTaken++
  return { slotBytes, memoryBytes: probe._xor?._memory?.byteLength ?? Number.NaN }
}
