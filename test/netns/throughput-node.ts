/**
 * One Phoenix node for `ssh-throughput.ts`, run inside a namespace: it prints one JSON line when it
 * listens (`{ id, addresses, ssh }`), then either sends 64 KiB messages to `--to` for `--seconds`
 * as fast as its first hop takes them, or counts what it receives and prints `{ goodputMbit }`
 * (from 1 s after the first message to the last) on SIGUSR2.
 */
import { parseArgs } from 'node:util'
import { createPhoenixLibp2p, PhoenixTransportError } from '../../packages/transport/src/index.ts'

const { values } = parseArgs({
  options: {
    listen: { type: 'string', multiple: true, default: [] },
    hub: { type: 'string', multiple: true, default: [] },
    name: { type: 'string' },
    to: { type: 'string' },
    seconds: { type: 'string', default: '8' },
    identity: { type: 'string' },
    'known-hosts': { type: 'string' },
    advertise: { type: 'string' },
  },
})
const PAYLOAD = new Uint8Array(64 * 1024)
const { libp2p, phoenix } = await createPhoenixLibp2p({
  listen: values.listen,
  hubs: values.hub,
  names: values.name === undefined ? [] : [values.name],
  ...(values.identity !== undefined || values.advertise !== undefined
    ? { ssh: { ...(values.identity !== undefined ? { identityFile: values.identity, knownHostsFile: values['known-hosts']! } : {}), ...(values.advertise !== undefined ? { advertise: values.advertise } : {}) } }
    : {}),
})
console.log(JSON.stringify({ id: libp2p.peerId.toString(), addresses: libp2p.getMultiaddrs().map(String), ssh: phoenix.sshAddress() }))

if (values.to !== undefined) {
  await phoenix.send(values.to, PAYLOAD, { ack: true, routeWaitMs: 30_000 })
  const endsAt = performance.now() + Number(values.seconds) * 1000
  let sent = 0
  while (performance.now() < endsAt) {
    try {
      await phoenix.send(values.to, PAYLOAD)
      sent += PAYLOAD.length
    } catch (error) {
      // A full first-hop queue: wait for room, as a library sender does.
      if (!(error instanceof PhoenixTransportError) || error.code !== 'QUEUE_FULL') throw error
      await new Promise((r) => setTimeout(r, 2))
    }
  }
  console.log(JSON.stringify({ sent }))
} else {
  // Goodput from 1 s after the first message (TCP slow start, tc's burst) to the last one.
  let firstMs: number | undefined
  let lastMs = 0
  let bytes = 0
  phoenix.addEventListener('message', ({ detail }) => {
    const now = performance.now()
    firstMs ??= now
    if (now < firstMs + 1000) return
    bytes += detail.payload.length
    lastMs = now
  })
  await new Promise((r) => process.once('SIGUSR2', r))
  const seconds = (lastMs - (firstMs ?? 0) - 1000) / 1000
  console.log(JSON.stringify({ goodputMbit: seconds > 0 ? (bytes * 8) / seconds / 1e6 : 0, bytes }))
}
await libp2p.stop()
process.exit(0)
