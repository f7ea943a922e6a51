import type { AbortOptions, MultiaddrConnection, StreamCloseEvent, StreamMessageEvent } from '@libp2p/interface'
import { AbstractMultiaddrConnection, type SendResult } from '@libp2p/utils'
import type { Uint8ArrayList } from 'uint8arraylist'
import { Keystream } from './keystream.ts'

export const PROTECTED_CONNECTION_LIMITS = {
  /**
   * Plaintext bytes encrypted per write to the raw connection. A muxer may hand the connection
   * everything it has queued (tens of MiB) at once; encrypting it in pieces of this size means
   * only what the socket has accepted exists as ciphertext, and the rest waits, unencrypted and
   * uncopied, in the connection's write buffer until the socket drains. 64 KiB is one socket
   * read or a few TCP segments' worth: large enough that the per-call cost of the cipher (one
   * HSalsa20 block) is noise, small enough to be no memory at all.
   */
  writeChunkBytesMax: 64 * 1024,
} as const

export interface ProtectedConnectionInit {
  /** The raw connection, after the nonce exchange. */
  readonly raw: MultiaddrConnection
  /** The 32-byte pre-shared key (the protector's; not copied, never modified). */
  readonly key: Uint8Array
  readonly localNonce: Uint8Array
  readonly remoteNonce: Uint8Array
  /** Called once when the connection has closed, however it closed. */
  readonly onClosed: () => void
}

/**
 * A connection whose bytes are XORed with the XSalsa20 keystreams of the pre-shared key and the
 * two nonces, as `@libp2p/pnet`'s `BoxMessageStream` does: what we send with our nonce's
 * keystream, what we receive with the remote's. Its state is its two keystreams (a nonce and a
 * position each); on close both are wiped and it unhooks itself from the raw connection, so
 * nothing of it stays reachable from anything that outlives the connection.
 */
export class ProtectedConnection extends AbstractMultiaddrConnection {
  readonly #raw: MultiaddrConnection
  readonly #inbound: Keystream
  readonly #outbound: Keystream
  #onClosed: (() => void) | undefined

  constructor(init: ProtectedConnectionInit) {
    super({
      log: init.raw.log.newScope('private-network'),
      remoteAddr: init.raw.remoteAddr,
      direction: init.raw.direction,
      maxMessageSize: PROTECTED_CONNECTION_LIMITS.writeChunkBytesMax,
    })
    this.#raw = init.raw
    this.#inbound = new Keystream(init.key, init.remoteNonce)
    this.#outbound = new Keystream(init.key, init.localNonce)
    this.#onClosed = init.onClosed
    this.#raw.addEventListener('message', this.#onRawMessage)
    this.#raw.addEventListener('drain', this.#onRawDrain)
    this.#raw.addEventListener('close', this.#onRawClose)
    this.addEventListener('close', this.#release)
  }

  /**
   * Decrypts what arrives. A listener that throws would become an uncaught exception (the raw
   * connection dispatches from a timer), so a failure aborts this connection instead.
   */
  readonly #onRawMessage = (event: StreamMessageEvent): void => {
    try {
      const data = event.data
      if (data instanceof Uint8Array) this.onData(this.#inbound.xor(data))
      else for (const piece of data) this.onData(this.#inbound.xor(piece))
    } catch (error) {
      this.abort(error as Error)
    }
  }

  readonly #onRawDrain = (): void => {
    this.onMuxerDrain()
  }

  readonly #onRawClose = (event: StreamCloseEvent): void => {
    if (event.error === undefined) this.onTransportClosed()
    else if (event.local) this.abort(event.error)
    else this.onRemoteReset()
  }

  /** Once, on this connection's close: wipe both keystreams and let go of the raw connection's events. */
  readonly #release = (): void => {
    this.#inbound.destroy()
    this.#outbound.destroy()
    this.#raw.removeEventListener('message', this.#onRawMessage)
    this.#raw.removeEventListener('drain', this.#onRawDrain)
    this.#raw.removeEventListener('close', this.#onRawClose)
    this.removeEventListener('close', this.#release)
    const onClosed = this.#onClosed
    this.#onClosed = undefined
    onClosed?.()
  }

  /**
   * At most `writeChunkBytesMax` bytes (`maxMessageSize`), encrypted into one new buffer. A throw
   * (keystream exhausted) aborts this connection: the base class catches it.
   */
  sendData(data: Uint8ArrayList): SendResult {
    // `subarray()` joins the pieces (yamux headers and bodies) into one buffer, or returns the
    // only piece as is; the keystream copies it once more into the ciphertext.
    const ciphertext = this.#outbound.xor(data.subarray())
    return { sentBytes: ciphertext.byteLength, canSendMore: this.#raw.send(ciphertext) }
  }

  async sendClose(options?: AbortOptions): Promise<void> {
    await this.#raw.close(options)
  }

  sendReset(error: Error): void {
    this.#raw.abort(error)
  }

  sendPause(): void {
    this.#raw.pause()
  }

  sendResume(): void {
    this.#raw.resume()
  }
}
