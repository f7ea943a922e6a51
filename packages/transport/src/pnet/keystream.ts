import { xsalsa20 } from '@noble/ciphers/salsa.js'
import { SWARM_KEY_BYTES } from './swarm-key.ts'

/** XSalsa20's nonce: each side of a connection picks one at random and sends it in the clear. */
export const NONCE_BYTES = 24
/** Salsa20 makes its keystream in blocks of 64 bytes, numbered by a block counter. */
const BLOCK_BYTES = 64

export const KEYSTREAM_LIMITS = {
  /**
   * Bytes one keystream can encrypt: `@noble/ciphers` takes a 32-bit block counter and refuses to
   * wrap it (libsodium's is 64-bit; noble chose to throw rather than pick a wrap rule), so
   * (2^32 − 1) blocks of 64 bytes, about 256 GiB, per direction of one connection. Past it the
   * connection is closed with `KeystreamExhaustedError`; a new connection has new nonces.
   */
  bytesMax: (2 ** 32 - 1) * BLOCK_BYTES,
} as const

/** One direction of a connection has used all of its keystream; the connection must close. */
export class KeystreamExhaustedError extends Error {
  override readonly name = 'KeystreamExhaustedError'
}

/**
 * One direction of a private-network connection: the XSalsa20 keystream of (pre-shared key,
 * nonce), consumed from byte 0 on, as `@libp2p/pnet` consumes it (`xsalsa20(nonce, psk).update`).
 *
 * It holds a copy of the 24-byte nonce and a byte position, nothing else: the key is the
 * protector's, and every call of noble's `xsalsa20` is stateless (it copies the key and wipes
 * the copy before it returns). There is no WebAssembly memory and no pool shared with other
 * connections, so nothing outlives the connection and no write is too large for the cipher.
 */
export class Keystream {
  readonly #key: Uint8Array
  readonly #nonce: Uint8Array
  #positionBytes: number
  #destroyed = false

  /** `positionBytes` starts the keystream further on (0 on a connection; tests use the end). */
  constructor(key: Uint8Array, nonce: Uint8Array, positionBytes = 0) {
    if (key.byteLength !== SWARM_KEY_BYTES) throw new Error(`keystream: key is ${key.byteLength} bytes, expected ${SWARM_KEY_BYTES}`)
    if (nonce.byteLength !== NONCE_BYTES) throw new Error(`keystream: nonce is ${nonce.byteLength} bytes, expected ${NONCE_BYTES}`)
    if (!Number.isSafeInteger(positionBytes) || positionBytes < 0 || positionBytes > KEYSTREAM_LIMITS.bytesMax) throw new Error(`keystream: position ${positionBytes} is outside [0, ${KEYSTREAM_LIMITS.bytesMax}]`)
    this.#key = key
    this.#nonce = Uint8Array.from(nonce)
    this.#positionBytes = positionBytes
  }

  /** Bytes of keystream used so far. */
  get positionBytes(): number {
    return this.#positionBytes
  }

  /**
   * `input` XORed with the next `input.byteLength` bytes of keystream, in a new buffer (the input
   * is left alone: a muxer may still hold it). One call of noble's cipher over a 4-byte-aligned
   * buffer that starts on a block boundary, so its fast path runs, whatever the position.
   */
  xor(input: Uint8Array): Uint8Array {
    if (this.#destroyed) throw new Error('keystream: used after its connection closed')
    const start = this.#positionBytes
    const end = start + input.byteLength
    if (end > KEYSTREAM_LIMITS.bytesMax) {
      throw new KeystreamExhaustedError(`private network: this connection has used all ${KEYSTREAM_LIMITS.bytesMax} bytes of one direction's keystream; reconnect`)
    }
    const leadBytes = start % BLOCK_BYTES
    const buffer = new Uint8Array(leadBytes + input.byteLength)
    buffer.set(input, leadBytes)
    xsalsa20(this.#key, this.#nonce, buffer, buffer, (start - leadBytes) / BLOCK_BYTES)
    // The lead bytes hold keystream already used; do not leave it lying in the output's buffer.
    buffer.fill(0, 0, leadBytes)
    this.#positionBytes = end
    return buffer.subarray(leadBytes)
  }

  /** Wipes the nonce; any later `xor` throws. */
  destroy(): void {
    this.#destroyed = true
    this.#nonce.fill(0)
  }
}
