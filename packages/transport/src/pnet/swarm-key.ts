/**
 * The private network's pre-shared key in libp2p's swarm-key format (the format of `@libp2p/pnet`
 * and go-libp2p's pnet):
 *
 * ```text
 * /key/swarm/psk/1.0.0/
 * /base16/
 * <64 hex digits: the 32-byte key>
 * ```
 */
import { PhoenixTransportError } from '../errors.ts'

/** First line of a swarm key file: what it is and its version. */
export const SWARM_KEY_HEADER = '/key/swarm/psk/1.0.0/'
/** Second line: how the key is encoded (the only encoding `@libp2p/pnet` writes and reads). */
export const SWARM_KEY_ENCODING = '/base16/'
/** XSalsa20's key length. */
export const SWARM_KEY_BYTES = 32
/** A generated swarm key file's length: header, encoding, 64 hex digits, two newlines (95 bytes, as in `@libp2p/pnet`). */
export const SWARM_KEY_FILE_BYTES = SWARM_KEY_HEADER.length + 1 + SWARM_KEY_ENCODING.length + 1 + SWARM_KEY_BYTES * 2

/**
 * A swarm key that cannot be used; its message is one line naming the option and what is wrong.
 * A `PhoenixTransportError` (`INVALID_INPUT`, `field: 'privateNetworkKey'`), as every error of the
 * node's options is, so a caller switching on `code` needs no case of its own for it.
 */
export class SwarmKeyError extends PhoenixTransportError {
  constructor(message: string) {
    super('INVALID_INPUT', message, { field: 'privateNetworkKey' })
    this.name = 'SwarmKeyError'
  }
}

const HEX_KEY = new RegExp(`^[0-9a-fA-F]{${SWARM_KEY_BYTES * 2}}$`)

/**
 * The 32-byte key of a swarm key file. Lines may end in `\n`, `\r\n` or `\r`, and anything after
 * the key line (such as a final newline) is ignored, as `@libp2p/pnet` does.
 */
export function decodeSwarmKey(file: Uint8Array): Uint8Array {
  const [header, encoding, hex] = new TextDecoder().decode(file).split(/\r\n|\r|\n/)
  const expected = `expected ${SWARM_KEY_HEADER}, ${SWARM_KEY_ENCODING}, then ${SWARM_KEY_BYTES * 2} hex digits, one per line`
  if (header !== SWARM_KEY_HEADER) throw new SwarmKeyError(`privateNetworkKey: not a swarm key (first line is ${JSON.stringify(header?.slice(0, 40))}; ${expected})`)
  if (encoding !== SWARM_KEY_ENCODING) throw new SwarmKeyError(`privateNetworkKey: swarm key encoding ${JSON.stringify(encoding?.slice(0, 40))} is not supported (${expected})`)
  const digits = hex?.trim() ?? ''
  if (!HEX_KEY.test(digits)) throw new SwarmKeyError(`privateNetworkKey: swarm key line 3 has ${digits.length} characters, not ${SWARM_KEY_BYTES * 2} hex digits (${expected})`)
  const key = new Uint8Array(SWARM_KEY_BYTES)
  for (let i = 0; i < SWARM_KEY_BYTES; i++) key[i] = Number.parseInt(digits.slice(2 * i, 2 * i + 2), 16)
  return key
}

/** A new swarm key file (95 bytes) holding 32 random bytes. */
export function generateSwarmKey(): Uint8Array {
  const key = crypto.getRandomValues(new Uint8Array(SWARM_KEY_BYTES))
  const hex = Array.from(key, (byte) => byte.toString(16).padStart(2, '0')).join('')
  key.fill(0)
  const file = new TextEncoder().encode(`${SWARM_KEY_HEADER}\n${SWARM_KEY_ENCODING}\n${hex}`)
  if (file.byteLength !== SWARM_KEY_FILE_BYTES) throw new Error(`swarm key file is ${file.byteLength} bytes, expected ${SWARM_KEY_FILE_BYTES}`)
  return file
}

/**
 * `generateKey` of `@libp2p/pnet`, same signature and output: writes a new swarm key into `bytes`
 * (at least 95 bytes long) or onto a writable stream, e.g.
 * `node -e "import('@phoenix-overlay/transport').then(({ generateKey }) => generateKey(process.stdout))" > swarm.key`.
 */
export function generateKey(bytes: Uint8Array | NodeJS.WritableStream): void {
  const file = generateSwarmKey()
  if (bytes instanceof Uint8Array) {
    if (bytes.byteLength < file.byteLength) throw new SwarmKeyError(`generateKey: the buffer holds ${bytes.byteLength} bytes, a swarm key needs ${file.byteLength}`)
    bytes.set(file)
  } else {
    bytes.write(file)
  }
}
