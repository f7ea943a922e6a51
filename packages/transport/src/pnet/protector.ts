import type { AbortOptions, ConnectionProtector, MessageStream, MultiaddrConnection } from '@libp2p/interface'
import { byteStream } from '@libp2p/utils'
import { NONCE_BYTES } from './keystream.ts'
import { ProtectedConnection } from './protected-connection.ts'
import { decodeSwarmKey } from './swarm-key.ts'

export const PRIVATE_NETWORK_TIMING = {
  /**
   * How long the nonce exchange may take when libp2p gives no deadline of its own (its upgrader
   * always does). `@libp2p/pnet` allows 1 s; a loaded machine with hundreds of nodes starting at
   * once needs more, and a peer that never sends its nonce only holds one socket until then.
   */
  nonceExchangeTimeoutMs: 5_000,
} as const

export interface PrivateNetworkInit {
  /** The swarm key file's bytes (`/key/swarm/psk/1.0.0/`, `/base16/`, 64 hex digits). */
  readonly psk: Uint8Array
  /** Overrides `PRIVATE_NETWORK_TIMING.nonceExchangeTimeoutMs`. */
  readonly nonceExchangeTimeoutMs?: number
}

/**
 * libp2p's private network (pnet) protector, on `@noble/ciphers`: each side sends a random 24-byte
 * nonce in the clear, then everything either side sends is XORed with the XSalsa20 keystream of
 * (pre-shared key, its own nonce). The bytes on the wire are those of `@libp2p/pnet`, so nodes
 * with either protector and the same key form one network; a node with another key sees noise,
 * and the connection encrypter's handshake that follows fails on both sides.
 *
 * Why not `@libp2p/pnet` itself (3.0.27, the newest release): its cipher, `xsalsa20@1.2.0`, keeps
 * every cipher of the process in one WebAssembly memory capped at 64 MB and copies each write
 * whole into it, so one write of ~63 MiB kills the process (`RangeError: WebAssembly.Memory.grow():
 * Maximum memory size exceeded`); and pnet never calls `finalize()`, so every connection ever
 * opened keeps 128 bytes of that memory for good. Fixed upstream, unreleased: js-libp2p pull
 * request 3585, "fix(pnet): bound xsalsa20 wasm memory per message and per connection"
 * (https://github.com/libp2p/js-libp2p/pull/3585), which chunks writes and finalizes ciphers.
 * Here there is no WebAssembly and no shared pool: see `Keystream` and `ProtectedConnection`.
 *
 * The protector itself holds the key and one number: how many of its connections are open.
 */
export class PrivateNetworkProtector implements ConnectionProtector {
  readonly #key: Uint8Array
  readonly #nonceExchangeTimeoutMs: number
  #openConnections = 0

  constructor(init: PrivateNetworkInit) {
    this.#key = decodeSwarmKey(init.psk)
    this.#nonceExchangeTimeoutMs = init.nonceExchangeTimeoutMs ?? PRIVATE_NETWORK_TIMING.nonceExchangeTimeoutMs
  }

  readonly [Symbol.toStringTag] = '@phoenix-overlay/private-network'

  /** Connections this protector has protected that have not closed yet (its only per-connection state). */
  get openConnections(): number {
    return this.#openConnections
  }

  /** Exchanges nonces over `connection`, then wraps it in a connection that encrypts and decrypts. */
  async protect(connection: MessageStream, options?: AbortOptions): Promise<MessageStream> {
    const raw = connection as MultiaddrConnection
    const localNonce = crypto.getRandomValues(new Uint8Array(NONCE_BYTES))
    const signal = options?.signal ?? AbortSignal.timeout(this.#nonceExchangeTimeoutMs)
    const bytes = byteStream(raw)
    const [remote] = await Promise.all([bytes.read({ bytes: NONCE_BYTES, signal }), bytes.write(localNonce, { signal })])
    const remoteNonce = remote.subarray()
    if (remoteNonce.byteLength !== NONCE_BYTES) throw new Error(`private network: remote nonce is ${remoteNonce.byteLength} bytes, expected ${NONCE_BYTES}`)
    this.#openConnections++
    return new ProtectedConnection({
      raw: bytes.unwrap(),
      key: this.#key,
      localNonce,
      remoteNonce,
      onClosed: () => {
        this.#openConnections--
        if (this.#openConnections < 0) throw new Error('private network: more connections closed than opened')
      },
    })
  }
}

/**
 * The private network's protector for libp2p's `connectionProtector` option; a drop-in for
 * `preSharedKey({ psk })` of `@libp2p/pnet`. Throws `SwarmKeyError` at once for a bad key.
 */
export function privateNetwork(init: PrivateNetworkInit): () => PrivateNetworkProtector {
  decodeSwarmKey(init.psk)
  return () => new PrivateNetworkProtector(init)
}
