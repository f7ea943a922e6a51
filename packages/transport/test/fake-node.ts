import { generateKeyPair } from '@libp2p/crypto/keys'
import type { Connection, PrivateKey, Stream } from '@libp2p/interface'
import { defaultLogger } from '@libp2p/logger'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { LengthPrefixedDecoder } from '@libp2p/utils'
import { WIRE_LIMITS, decodeFrame, encodeFrame, type Frame } from '@phoenix-overlay/wire'
import * as varint from 'uint8-varint'
import type { Uint8ArrayList } from 'uint8arraylist'
import { PhoenixNode, type PhoenixComponents, type PhoenixInit } from '../src/index.ts'

type Listener = (event: { data?: Uint8Array; error?: Error }) => void

/** A libp2p stream whose bytes the test hands in; it records what the node writes. */
export class FakeStream {
  readonly direction = 'inbound' as const
  maxReadBufferLength = 0
  readonly written: Uint8Array[] = []
  aborted: string | undefined
  closed = false
  writeClosed = false
  private paused = false
  /** A neighbour that stopped reading: every write fills the stream and no drain ever comes. */
  stalled = false
  private readonly waiting: Uint8Array[] = []
  private readonly listeners = new Map<string, Listener[]>()

  addEventListener(type: string, listener: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener])
  }

  removeEventListener(type: string, listener: Listener): void {
    this.listeners.set(type, (this.listeners.get(type) ?? []).filter((l) => l !== listener))
  }

  /** Delivers bytes as libp2p does: synchronously to the listener, or buffered while paused. */
  deliver(data: Uint8Array): void {
    if (this.closed) return
    if (this.paused) this.waiting.push(data)
    else for (const listener of this.listeners.get('message') ?? []) listener({ data })
  }

  send(bytes: Uint8Array | Uint8ArrayList): boolean {
    if (this.writeClosed) throw new Error('the stream is closed for writing')
    this.written.push(bytes instanceof Uint8Array ? bytes : bytes.subarray())
    return !this.stalled
  }

  onDrain(): Promise<void> {
    return this.stalled ? new Promise(() => {}) : Promise.resolve()
  }

  /** As a libp2p stream: true while a write is waiting for a 'drain' (which a stalled neighbour never gives). */
  get writableNeedsDrain(): boolean {
    return this.stalled
  }

  get writeBufferLength(): number {
    return 0
  }

  pause(): void {
    this.paused = true
  }

  /** The neighbour reads again: no longer stalled, and a 'drain' event. */
  drain(): void {
    this.stalled = false
    for (const listener of this.listeners.get('drain') ?? []) listener({})
  }

  resume(): void {
    this.paused = false
    while (!this.paused && this.waiting.length > 0) this.deliver(this.waiting.shift()!)
  }

  abort(error: Error): void {
    this.aborted ??= error.message
    this.emitClose(error)
  }

  /** Closes our writing side only, as libp2p's `close` does: reading goes on until the remote closes too. */
  async close(): Promise<void> {
    this.writeClosed = true
  }

  /** The remote end went away. */
  emitClose(error?: Error): void {
    if (this.closed) return
    this.closed = true
    for (const listener of this.listeners.get('close') ?? []) listener(error === undefined ? {} : { error })
  }
}

export const prefixed = (frame: Frame): Uint8Array => {
  const bytes = encodeFrame(frame)
  const prefix = varint.encode(bytes.length)
  const out = new Uint8Array(prefix.length + bytes.length)
  out.set(prefix)
  out.set(bytes, prefix.length)
  return out
}

/** The frames a node wrote to a fake stream. */
export function framesWritten(stream: FakeStream): Frame[] {
  const decoder = new LengthPrefixedDecoder({ maxDataLength: WIRE_LIMITS.frameBytesMax, maxBufferSize: Number.MAX_SAFE_INTEGER })
  const frames: Frame[] = []
  for (const chunk of stream.written) for (const frame of decoder.decode(chunk)) frames.push(decodeFrame(frame.subarray()))
  return frames
}

export const concat = (parts: readonly Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

/** Lets the node's scheduled work run (it drains on setImmediate). */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve))
}

/** A node with fake libp2p components: no sockets; neighbours are FakeStreams the test connects. */
export class FakeNode {
  handler: ((stream: Stream, connection: Connection) => void) | undefined
  handles = 0
  readonly node: PhoenixNode

  constructor(
    readonly key: PrivateKey,
    init: PhoenixInit,
    extra: Partial<PhoenixComponents> = {},
  ) {
    const components = {
      peerId: peerIdFromPrivateKey(key),
      privateKey: key,
      registrar: {
        handle: async (_protocol: string, h: (stream: Stream, connection: Connection) => void) => {
          if (this.handler !== undefined) throw new Error('DuplicateProtocolHandlerError: the protocol is already handled')
          this.handler = h
          this.handles++
        },
        unhandle: async () => {
          this.handler = undefined
        },
      },
      connectionManager: { openConnection: async () => Promise.reject(new Error('this test has no network')) },
      addressManager: { getAddresses: () => [] },
      logger: defaultLogger(),
      events: new EventTarget(),
      ...extra,
    } as unknown as PhoenixComponents
    this.node = new PhoenixNode(components, init)
  }

  static async create(init: PhoenixInit = {}, extra: Partial<PhoenixComponents> = {}): Promise<FakeNode> {
    return new FakeNode(await generateKeyPair('Ed25519'), init, extra)
  }

  get id(): string {
    return peerIdFromPrivateKey(this.key).toString()
  }

  /**
   * A neighbour with a fresh key opens a stream to the node. `encrypted`: its connection says it
   * is (as Noise's does), so the node may rewrite the bytes it reads from it in place (a relay's
   * hop limit); a plaintext stream's bytes may be its sender's.
   */
  async connect(options: { stalled?: boolean; encrypted?: boolean } = {}): Promise<{ stream: FakeStream; peer: string }> {
    const key = await generateKeyPair('Ed25519')
    const stream = new FakeStream()
    stream.stalled = options.stalled === true
    const connection = { remotePeer: peerIdFromPrivateKey(key), ...(options.encrypted === true ? { encryption: '/noise' } : {}) }
    this.handler!(stream as unknown as Stream, connection as unknown as Connection)
    await settle()
    return { stream, peer: peerIdFromPrivateKey(key).toString() }
  }
}
