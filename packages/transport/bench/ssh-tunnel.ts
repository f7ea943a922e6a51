/**
 * What an SSH tunnel costs, against the same path without it, in one run on loopback (a real
 * sshd on a free port, the system's ssh client, `SshTunnels`):
 *
 * - plain TCP: bytes streamed to a sink, directly and through the tunnel's Unix socket;
 * - a libp2p stream (TCP, Noise, Yamux), directly and dialled through the tunnel, so Noise runs
 *   end to end inside SSH: the overhead Phoenix's neighbours would pay.
 *
 * Loopback has no bandwidth limit, so this measures CPU: SSH's cipher on top of everything else.
 * Between real sites the link is usually the bottleneck and the ratio is closer to 1.
 *
 *   npx tsx packages/transport/bench/ssh-tunnel.ts [--mib 64] [--rounds 3]
 */
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import type { Stream } from '@libp2p/interface'
import { tcp } from '@libp2p/tcp'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import { mkdtemp, rm } from 'node:fs/promises'
import { connect, createServer, type NetConnectOpts } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fail, scriptArgs } from '../../../tools/script-args.ts'
import type { Uint8ArrayList } from 'uint8arraylist'
import { SshTunnels } from '../src/ssh-tunnel.ts'
import { startSshd } from '../test/sshd.ts'
import { drained } from '../src/drain.ts'

const { values } = scriptArgs({ options: { mib: { type: 'string', default: '64' }, rounds: { type: 'string', default: '3' } } }, { summary: 'what an SSH tunnel costs, against the same path without it, on loopback' })
const totalBytes = Number(values.mib) * 1024 * 1024
const rounds = Number(values.rounds)
if (!(totalBytes > 0) || !(rounds >= 1)) fail('--mib and --rounds must be positive numbers')
const CHUNK = new Uint8Array(64 * 1024)
const PROTOCOL = '/phoenix-bench/sink/1.0.0'

/** Streams totalBytes over a plain socket to the sink; returns Mbit/s from first write to the sink's reply. */
async function plainTcp(options: NetConnectOpts): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const socket = connect(options, () => {
      let sent = 0
      const pump = () => {
        while (sent < totalBytes) {
          sent += CHUNK.length
          if (!socket.write(CHUNK)) return void socket.once('drain', pump)
        }
        socket.end()
      }
      pump()
    })
    socket.once('data', () => resolve((totalBytes * 8) / ((performance.now() - started) / 1000) / 1e6))
    socket.on('error', reject)
  })
}

/** Streams totalBytes over a new libp2p stream to `target`; returns Mbit/s until the sink has them all. */
async function libp2pStream(dialler: Libp2p, target: Multiaddr, received: { bytes: number; done?: () => void }): Promise<number> {
  const stream = await dialler.dialProtocol(target, PROTOCOL)
  received.bytes = 0
  const finished = new Promise<void>((r) => (received.done = r))
  const started = performance.now()
  for (let sent = 0; sent < totalBytes; sent += CHUNK.length) if (!stream.send(CHUNK)) await drained(stream)
  await finished
  const mbits = (totalBytes * 8) / ((performance.now() - started) / 1000) / 1e6
  await stream.close()
  return mbits
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const dir = await mkdtemp(join(tmpdir(), 'phoenix-ssh-bench-'))
// The sink answers one byte once it has every byte, so the sender times the whole transfer.
const sink = createServer((socket) => {
  let got = 0
  socket.on('data', (d: Buffer) => {
    got += d.length
    if (got >= totalBytes) socket.end('k')
  })
})
await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()))
const sinkPort = (sink.address() as { port: number }).port
const received: { bytes: number; done?: () => void } = { bytes: 0 }
const libp2pOptions = { transports: [tcp()], connectionEncrypters: [noise()], streamMuxers: [yamux()], connectionMonitor: { enabled: false } }
const receiver = await createLibp2p({ ...libp2pOptions, addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] } })
await receiver.handle(PROTOCOL, (stream: Stream) => {
  stream.addEventListener('message', (e) => {
    received.bytes += (e.data as Uint8Array | Uint8ArrayList).byteLength
    if (received.bytes >= totalBytes) received.done?.()
  })
})
const dialler = await createLibp2p(libp2pOptions)
const receiverAddress = receiver.getMultiaddrs()[0]!
const receiverPort = Number(receiverAddress.getComponents().find((c) => c.name === 'tcp')!.value)
const sshd = await startSshd({ permitOpen: [`127.0.0.1:${sinkPort}`, `127.0.0.1:${receiverPort}`] })
const tunnels = new SshTunnels({ identityFile: sshd.clientKey.privateKeyFile, knownHostsFile: join(dir, 'known_hosts') })
try {
  const target = (port: number) => ({ user: sshd.user, host: '127.0.0.1', port: sshd.port, targetHost: '127.0.0.1', targetPort: port })
  const sinkTunnel = await tunnels.open(target(sinkPort))
  const nodeTunnel = await tunnels.open(target(receiverPort))
  const results: Record<string, number[]> = { 'tcp direct': [], 'tcp via ssh': [], 'libp2p direct': [], 'libp2p via ssh': [] }
  for (let round = 0; round < rounds; round++) {
    results['tcp direct']!.push(await plainTcp({ host: '127.0.0.1', port: sinkPort }))
    results['tcp via ssh']!.push(await plainTcp({ path: sinkTunnel.localPath }))
    results['libp2p direct']!.push(await libp2pStream(dialler, receiverAddress, received))
    await dialler.hangUp(receiver.peerId)
    results['libp2p via ssh']!.push(await libp2pStream(dialler, multiaddr(`${nodeTunnel.localAddress}/p2p/${receiver.peerId}`), received))
    await dialler.hangUp(receiver.peerId)
  }
  const m = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, median(v)]))
  console.log(`${values.mib} MiB per transfer, median of ${rounds} rounds (Mbit/s):`)
  for (const [k, v] of Object.entries(m)) console.log(`  ${k.padEnd(15)} ${v.toFixed(0)}`)
  console.log(`  tcp through ssh: ${((m['tcp via ssh']! / m['tcp direct']!) * 100).toFixed(0)}% of direct; libp2p through ssh: ${((m['libp2p via ssh']! / m['libp2p direct']!) * 100).toFixed(0)}% of direct`)
} finally {
  await tunnels.stop()
  await sshd.stop()
  await dialler.stop()
  await receiver.stop()
  sink.close()
  await rm(dir, { recursive: true, force: true })
}
