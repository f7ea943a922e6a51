/**
 * The cipher-memory part of `psk-relay.ts`, in a process of its own started with `--expose-gc`:
 * protected connections over in-memory connection pairs, made by `@libp2p/pnet`'s protector or
 * ours, opened, used and closed one at a time; then one 64 MiB write.
 */
import type { ConnectionProtector } from '@libp2p/interface'
import { preSharedKey } from '@libp2p/pnet'
import { generateSwarmKey, PrivateNetworkProtector } from '../src/index.ts'
import { patterned, protectedPair, receive, xsalsa20Memory } from '../test/pnet-helpers.ts'

export interface CipherMemoryReport {
  readonly summary: string
}

interface CipherMemoryRequest {
  /** `none`: the in-memory connection pairs alone, unprotected: what the harness itself leaves behind. */
  readonly protector: 'none' | 'libp2p-pnet' | 'ours'
  readonly connections: number
}

const BIG_WRITE_BYTES = 64 * 1024 * 1024
const WARM_UP_CONNECTIONS = 200

async function settledHeapBytes(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('run with --expose-gc')
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 20))
    gc()
  }
  return process.memoryUsage().heapUsed
}

/** Leaves the connection as it is: the baseline. */
const unprotected: ConnectionProtector = { protect: async (connection) => connection }

async function oneConnection(dialer: ConnectionProtector, listener: ConnectionProtector, i: number): Promise<void> {
  const [a, b] = await protectedPair(dialer, listener)
  const hello = patterned(100 + (Math.abs(i) % 200), i)
  const there = receive(b, hello.byteLength)
  a.send(hello)
  await there
  const back = receive(a, hello.byteLength)
  b.send(hello)
  await back
  await Promise.all([a.close(), b.close()])
}

/** What the cipher holds, in bytes or connections: pnet's xsalsa20 WebAssembly slots and memory, or the connections ours counts open. */
function held(request: CipherMemoryRequest, ours: PrivateNetworkProtector[]): { amount: number; unit: string; memoryBytes?: number } {
  if (request.protector === 'none') return { amount: 0, unit: 'bytes (no cipher)' }
  if (request.protector === 'ours') return { amount: ours.reduce((s, p) => s + p.openConnections, 0), unit: 'connections held open' }
  const { slotBytes, memoryBytes } = xsalsa20Memory()
  return { amount: slotBytes, unit: 'bytes of xsalsa20 slots held', memoryBytes }
}

async function measure(request: CipherMemoryRequest): Promise<string> {
  const psk = generateSwarmKey()
  const ours = request.protector === 'ours' ? [new PrivateNetworkProtector({ psk }), new PrivateNetworkProtector({ psk })] : []
  const [dialer, listener] = request.protector === 'ours' ? ours : request.protector === 'none' ? [unprotected, unprotected] : [preSharedKey({ psk })(), preSharedKey({ psk })()]
  // Warm up: load every module and let the JIT settle, so the baseline is not code being compiled.
  for (let i = 0; i < WARM_UP_CONNECTIONS; i++) await oneConnection(dialer!, listener!, -1 - i)
  const heapBefore = await settledHeapBytes()
  const before = held(request, ours)
  const started = performance.now()
  let failure = ''
  for (let i = 1; i <= request.connections && failure === ''; i++) {
    await oneConnection(dialer!, listener!, i).catch((error: Error) => (failure = `connection ${i} failed: ${error.message}`))
  }
  const seconds = (performance.now() - started) / 1000
  const heapAfter = await settledHeapBytes()
  const after = held(request, ours)
  const wasm = before.memoryBytes === undefined ? '' : `, WebAssembly memory ${before.memoryBytes} -> ${after.memoryBytes} bytes`
  const big = await bigWrite(dialer!, listener!)
  return [
    `${failure || `all ${request.connections} connections ok`} (${seconds.toFixed(1)} s)`,
    `${before.amount} -> ${after.amount} ${before.unit} (+${after.amount - before.amount})${wasm}`,
    `heap after GC ${((heapAfter - heapBefore) / 1024).toFixed(0)} KiB over the start`,
    `one 64 MiB write: ${big}`,
  ].join('; ')
}

async function bigWrite(dialer: ConnectionProtector, listener: ConnectionProtector): Promise<string> {
  try {
    const [a, b] = await protectedPair(dialer, listener)
    const data = patterned(BIG_WRITE_BYTES, 1)
    const there = receive(b, data.byteLength)
    there.catch(() => undefined) // if the send throws, nothing waits for this any more
    const started = performance.now()
    a.send(data)
    const got = await there
    const ms = performance.now() - started
    return got.every((byte, i) => byte === data[i]) ? `ok in ${ms.toFixed(0)} ms` : 'CORRUPTED'
  } catch (error) {
    return `FAILED: ${(error as Error).name}: ${(error as Error).message.split('\n')[0]}`
  }
}

export function runCipherMemory(): void {
  process.on('message', (message: CipherMemoryRequest | { exit: true }) => {
    if ('exit' in message) process.exit(0)
    measure(message).then(
      (summary) => process.send!({ summary } satisfies CipherMemoryReport),
      (error: Error) => process.send!({ summary: `FAILED: ${error.message}` } satisfies CipherMemoryReport),
    )
  })
}
