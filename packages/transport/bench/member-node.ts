/**
 * One process of the members-and-strangers benches and tests (issue 14), started with
 * `process.execPath --import tsx member-node.ts '<json options>'` so its pid is the real node's
 * and its RSS is its own. Two roles:
 *
 * - `node`: a Phoenix node (TCP, Noise, Yamux, the private-network key). Prints `ready <multiaddr>`,
 *   then answers one line per command on stdin: `rss` → `rss <bytes>`; `state` → `state <json>`
 *   (neighbours, destinations, core stats, name conflicts, what each asked name resolves to);
 *   `add-name <name>` → `ok`. Every `name:conflict`-style change of the conflicts is printed as
 *   `conflicts <json>`.
 * - `flooder`: a member that holds the key and misbehaves within the limits: it opens a Phoenix
 *   stream to the hub and advertises its own record and then `fakes` validly signed fake
 *   destinations (each with its own Ed25519 key), `perUpdate` per update every `intervalMs`.
 *   Prints `flooded <count> in <ms> ms` when done, then keeps the connection open.
 */
import { createInterface } from 'node:readline'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { LengthPrefixedDecoder } from '@libp2p/utils'
import { multiaddr } from '@multiformats/multiaddr'
import { recordPayload, type PhoenixCore, type CoreLimits, type CoreTiming, type RouteAdvert } from '@phoenix-overlay/core'
import { WIRE_LIMITS, decodeFrame, encodeFrame } from '@phoenix-overlay/wire'
import * as varint from 'uint8-varint'
import { PHOENIX_PROTOCOL, createPhoenixLibp2p } from '../src/index.ts'
import { drained } from '../src/drain.ts'

export interface MemberNodeOptions {
  role: 'node' | 'flooder'
  port: number
  /** The private network's swarm key, hex. */
  psk: string
  hubs?: string[]
  names?: string[]
  /** Dial addresses learned from updates (default true); off, a node reaches others only through its hubs. */
  discovery?: boolean
  /** Names whose resolution `state` reports. */
  watch?: string[]
  core?: { limits?: Partial<CoreLimits>; timing?: Partial<CoreTiming> }
  /** Flooder: how many fake destinations, how many per update, and the pause between updates. */
  fakes?: number
  perUpdate?: number
  intervalMs?: number
}

const options = JSON.parse(process.argv[2] ?? '{}') as MemberNodeOptions
const psk = Uint8Array.from(Buffer.from(options.psk, 'hex'))
const privateKey = await generateKeyPair('Ed25519')
const { libp2p, phoenix } = await createPhoenixLibp2p({
  listen: [`/ip4/127.0.0.1/tcp/${options.port}`],
  privateKey,
  privateNetworkKey: psk,
  // The flooder speaks the protocol by hand; it runs no Phoenix routing of its own.
  ...(options.role === 'node' ? { hubs: options.hubs ?? [], names: options.names ?? [], discovery: options.discovery ?? true } : { protocol: '/phoenix-bench/unused/1.0.0' }),
  ...(options.core !== undefined ? { core: options.core } : {}),
})
const say = (line: string) => process.stdout.write(`${line}\n`)

if (options.role === 'node') {
  let lastConflicts = '[]'
  setInterval(() => {
    const conflicts = JSON.stringify(conflictsOf())
    if (conflicts !== lastConflicts) say(`conflicts ${(lastConflicts = conflicts)}`)
  }, 200).unref()
  say(`ready /ip4/127.0.0.1/tcp/${options.port}/p2p/${libp2p.peerId.toString()}`)
  createInterface({ input: process.stdin }).on('line', (line) => {
    const [command, ...rest] = line.trim().split(' ')
    if (command === 'rss') say(`rss ${process.memoryUsage().rss}`)
    else if (command === 'gc') {
      ;(globalThis as { gc?: () => void }).gc?.()
      say(`rss ${process.memoryUsage().rss}`)
    } else if (command === 'memory') say(`memory ${JSON.stringify(process.memoryUsage())}`)
    else if (command === 'state') say(`state ${JSON.stringify(stateOf())}`)
    else if (command === 'add-name') {
      phoenix.addName(rest.join(' '))
      say('ok')
    }
  })
} else {
  await flood()
}

/**
 * The node's routing core, for what the service does not expose (all core stats, name conflicts).
 * Reaches past `PhoenixNode`'s public API on purpose: a bench may look inside, the node may not.
 */
function core(): PhoenixCore {
  const core = (phoenix as unknown as { session: { core: PhoenixCore } | undefined }).session?.core
  if (core === undefined) throw new Error('member-node: the Phoenix service has no running session')
  return core
}

function conflictsOf() {
  return core().nameConflicts()
}

function stateOf() {
  const routes = phoenix.routes()
  const resolved: Record<string, string | null> = {}
  for (const name of options.watch ?? []) resolved[name] = phoenix.resolve(name)?.owner ?? null
  return {
    id: libp2p.peerId.toString(),
    peers: phoenix.peers(),
    destinations: routes.length,
    reachable: routes.filter((r) => r.reachable).length,
    names: phoenix.names,
    stats: core().stats(),
    conflicts: conflictsOf(),
    resolved,
  }
}

function prefixed(frame: Uint8Array): Uint8Array {
  const prefix = varint.encode(frame.length)
  const out = new Uint8Array(prefix.length + frame.length)
  out.set(prefix)
  out.set(frame, prefix.length)
  return out
}

async function flood(): Promise<void> {
  const hub = options.hubs?.[0]
  if (hub === undefined) throw new Error('flooder: hubs[0] is required')
  const fakes = options.fakes ?? 0
  const perUpdate = options.perUpdate ?? 1_024
  const intervalMs = options.intervalMs ?? 100
  // Keys and signed records first, so the pacing below measures sending only.
  const records: RouteAdvert[] = []
  for (let i = 0; i < fakes; i++) {
    const key = await generateKeyPair('Ed25519')
    const id = peerIdFromPrivateKey(key).toString()
    const signature = (await key.sign(recordPayload(id, 2, [], []))) as Uint8Array
    records.push({ destination: id, seq: 2, nhops: 1, names: [], addresses: [], trans: -1, signature })
  }
  const connection = await libp2p.dial(multiaddr(hub))
  const stream = await connection.newStream(PHOENIX_PROTOCOL)
  // Read whatever the hub sends, so its queue toward us never fills, and answer its liveness
  // probes (a member that stays silent is rightly declared down after deadAfterSilenceMs).
  const decoder = new LengthPrefixedDecoder({ maxDataLength: WIRE_LIMITS.frameBytesMax })
  stream.addEventListener('message', (event) => {
    for (const bytes of decoder.decode(event.data)) {
      const frame = decodeFrame(bytes.subarray())
      if (frame.kind === 'probe' && !frame.probe.reply) stream.send(prefixed(encodeFrame({ kind: 'probe', probe: { nonce: frame.probe.nonce, reply: true } })))
    }
  })
  const write = async (entries: RouteAdvert[], hello: boolean) => {
    const frame = encodeFrame({ kind: 'update', update: { neighbourSlots: [], transSets: [], entries, ...(hello ? { hello: { receiverSeq: undefined } } : {}) } })
    if (!stream.send(prefixed(frame))) await drained(stream)
  }
  const own = libp2p.peerId.toString()
  const ownSignature = (await privateKey.sign(recordPayload(own, 2, [], []))) as Uint8Array
  await write([{ destination: own, seq: 2, nhops: 0, names: [], addresses: [], trans: -1, signature: ownSignature }], true)
  const started = performance.now()
  for (let i = 0; i < records.length; i += perUpdate) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
    await write(records.slice(i, i + perUpdate), false)
  }
  say(`flooded ${records.length} in ${Math.round(performance.now() - started)} ms`)
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line.trim() === 'rss') say(`rss ${process.memoryUsage().rss}`)
  })
}
