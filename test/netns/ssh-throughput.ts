/**
 * Throughput of Phoenix messages through an SSH tunnel against the same path without SSH, between
 * two sites in network namespaces (SITES.md, measurement 2). Site A lets only SSH in (a real sshd
 * on its gateway A0); site B leaves ports 7000-7010 open on its gateway B0. tc limits each
 * gateway's WAN link (`--rate` Mbit/s, both directions; 0 = no limit), as between real sites.
 *
 * - direct: A0 dials B0's public address; A0 sends 64 KiB messages to B0's name.
 * - via ssh: B0 dials A0's SSH address (a tunnel into site A); A0 sends to B0 the same way.
 *
 * Goodput is what B0 receives per second, from 1 s after the first message (TCP slow start, tc's
 * burst) to the last. Runs the two alternately, `--rounds` times each, and prints the medians.
 *
 *   sudo npx tsx test/netns/ssh-throughput.ts [--rate 16] [--seconds 8] [--rounds 2]
 */
import { rmSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { intOption, scriptArgs } from '../../tools/script-args.ts'
import { startInNamespace, type NamespaceProcess } from './processes.ts'
import { cleanUpOnSignals } from './signal-cleanup.ts'
import { buildSites, sitesMissingPrerequisite } from './sites.ts'
import { NODE_TS_FLAGS } from '../../tools/node-ts.ts'

const { values } = scriptArgs(
  { options: { rate: { type: 'string', default: '16' }, seconds: { type: 'string', default: '8' }, rounds: { type: 'string', default: '2' } } },
  { summary: 'throughput through an SSH-only gateway against an open port, in namespaces (root)', help: { rate: 'gateway link limit, Mbit/s (0: none)', seconds: 'seconds per measurement', rounds: 'interleaved rounds' } },
)
const rate = intOption(values, 'rate', 0)
const seconds = intOption(values, 'seconds', 3)
const rounds = intOption(values, 'rounds', 1)
const missing = sitesMissingPrerequisite()
if (missing !== undefined) throw new Error(`cannot run: ${missing}`)
cleanUpOnSignals()
const NODE = fileURLToPath(new URL('./throughput-node.ts', import.meta.url))
const gatewayRate = rate > 0 ? { gatewayRateMbit: rate } : {}
const sites = await buildSites(
  [
    { name: 'A', size: 1, inbound: 'ssh', ...gatewayRate },
    { name: 'B', size: 1, inbound: 'ports', ports: [7000, 7010], ...gatewayRate },
  ],
  { prefix: `phst${process.pid % 10000}-` },
)
const dir = await mkdtemp(join(tmpdir(), 'phoenix-ssh-throughput-'))
cleanUpOnSignals(() => rmSync(dir, { recursive: true, force: true }))
const running: NamespaceProcess[] = []

const start = async (id: string, args: string[]) => {
  const p = startInNamespace(sites.node(id).namespace, process.execPath, [...NODE_TS_FLAGS, NODE, ...args], process.env.BENCH_DEBUG !== undefined ? { DEBUG: 'phoenix*' } : {})
  running.push(p)
  return { p, info: JSON.parse(await p.waitForLine(/^\{"id"/, 60_000)) as { id: string; addresses: string[]; ssh: string | undefined } }
}

/** One transfer; returns B0's goodput in Mbit/s. */
async function transfer(viaSsh: boolean): Promise<number> {
  const ssh = sites.ssh!
  const knownHosts = join(dir, 'known_hosts')
  let receiver
  if (!viaSsh) {
    receiver = await start('B0', ['--listen', '/ip4/0.0.0.0/tcp/7000', '--name', 'sink'])
    const hub = `/ip4/${sites.node('B0').wan!.ipv4}/tcp/7000/p2p/${receiver.info.id}`
    await start('A0', ['--listen', '/ip4/127.0.0.1/tcp/7000', '--hub', hub, '--to', 'sink', '--seconds', String(seconds)])
  } else {
    const sender = await start('A0', ['--listen', '/ip4/127.0.0.1/tcp/7000', '--advertise', `${ssh.user}@${sites.node('A0').wan!.ipv4}:22`, '--to', 'sink', '--seconds', String(seconds)])
    receiver = await start('B0', ['--listen', '/ip4/0.0.0.0/tcp/7000', '--name', 'sink', '--hub', sender.info.ssh!, '--identity', ssh.key.privateKeyFile, '--known-hosts', knownHosts])
  }
  const sender = running.find((p) => p.namespace === sites.node('A0').namespace)!
  await sender.waitForLine(/^\{"sent"/, (seconds + 60) * 1000)
  receiver.p.child.kill('SIGUSR2')
  const { goodputMbit } = JSON.parse(await receiver.p.waitForLine(/^\{"goodputMbit"/, 30_000)) as { goodputMbit: number }
  for (const p of running.splice(0)) await p.kill('SIGKILL')
  return goodputMbit
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
try {
  const results: { direct: number[]; ssh: number[] } = { direct: [], ssh: [] }
  for (let round = 0; round < rounds; round++) {
    results.direct.push(await transfer(false))
    results.ssh.push(await transfer(true))
    console.log(`round ${round + 1}: direct ${results.direct.at(-1)!.toFixed(1)} Mbit/s, via ssh ${results.ssh.at(-1)!.toFixed(1)} Mbit/s`)
  }
  const direct = median(results.direct)
  const viaSsh = median(results.ssh)
  console.log(`64 KiB Phoenix messages A0 → B0 across ${rate > 0 ? `${rate} Mbit/s WAN links` : 'unlimited WAN links'}, ${seconds} s, median of ${rounds}:`)
  console.log(`  direct   ${direct.toFixed(1)} Mbit/s`)
  console.log(`  via ssh  ${viaSsh.toFixed(1)} Mbit/s (${((viaSsh / direct) * 100).toFixed(0)}% of direct)`)
} finally {
  for (const p of running) await p.kill('SIGKILL')
  await sites.destroy()
  await rm(dir, { recursive: true, force: true })
}
