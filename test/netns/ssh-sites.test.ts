import { generateKeyPair, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startInNamespace, type NamespaceProcess } from './processes.ts'
import { buildSites, sitesMissingPrerequisite, type Sites, type SiteSpec } from './sites.ts'
import { NODE_TS_FLAGS } from '../../tools/node-ts.ts'

// Real `phoenix node` processes at real sites (SITES.md, "phase 2"): two SSH-only sites whose
// firewalls let only TCP 22 in (a real sshd on each gateway), a site whose firewall leaves a port
// range open, a site behind NAT and an IPv6-only site. No skipping: without root, nftables or OpenSSH this fails
// with the reason.
const PHOENIX_BIN = fileURLToPath(new URL('../../packages/cli/bin/phoenix.js', import.meta.url))
const SITES: SiteSpec[] = [
  { name: 'A', size: 2, inbound: 'ssh' },
  { name: 'B', size: 2, inbound: 'ssh' },
  { name: 'P', size: 1, gateways: 0, inbound: 'ports', ports: [7000, 7010], publicIpv4: true, lan: 'dual' },
  { name: 'N', size: 2, nat: true, inbound: 'none' },
  // IPv6 only: its host has no IPv4 address at all, and dials out to P0 over IPv6.
  { name: 'V', size: 1, gateways: 0, inbound: 'none', lan: 'ipv6' },
]
/** A routed send between sites crosses up to 4 hops, one of them SSH: 10 s covers a redial. */
const SEND_WAIT_MS = 20_000

interface Node {
  readonly id: string
  readonly peerId: string
  readonly socket: string
  process: NamespaceProcess
}

describe('phoenix nodes at SSH-only, port-range and NAT sites', () => {
  let sites: Sites
  let dir: string
  const nodes = new Map<string, Node>()
  const node = (id: string) => nodes.get(id) ?? fail(`no node ${id}`)

  const call = (n: Node, method: string, path: string, body?: Uint8Array) =>
    new Promise<{ status: number; json: unknown }>((resolve, reject) => {
      const req = request({ socketPath: n.socket, method, path, timeout: 30_000 }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          let json: unknown = text
          try {
            json = JSON.parse(text)
          } catch {}
          resolve({ status: res.statusCode ?? 0, json })
        })
      })
      req.on('error', reject)
      req.on('timeout', () => req.destroy(new Error(`control call ${path} to ${n.id} timed out`)))
      req.end(body)
    })
  const metric = async (n: Node, name: string) => Number(new RegExp(`^phoenix_${name} (\\d+)$`, 'm').exec((await call(n, 'GET', '/metrics')).json as string)?.[1] ?? 0)

  /** Starts `id`'s node; resolves with the lines it printed once its control endpoint is up. */
  const start = async (id: string, args: string[]) => {
    const key = await generateKeyPair('Ed25519')
    const keyFile = join(dir, `${id}.key`)
    await writeFile(keyFile, privateKeyToProtobuf(key), { mode: 0o600 })
    const socket = join(dir, `${id}.sock`)
    const process_ = startInNamespace(sites.node(id).namespace, process.execPath, [...NODE_TS_FLAGS, PHOENIX_BIN, 'node', '--name', id, '--key', keyFile, '--control', socket, ...args])
    const n: Node = { id, peerId: peerIdFromPrivateKey(key).toString(), socket, process: process_ }
    nodes.set(id, n)
    await process_.waitForLine(/^control endpoint on/, 40_000)
    return process_.output
  }
  const sshOptions = (id: string) => ['--ssh-identity', sites.ssh!.key.privateKeyFile, '--ssh-known-hosts', join(dir, `${id}.known_hosts`)]
  const sshAddressOf = (output: readonly string[]) => /^reachable through ssh at (\S+)$/.exec(output.find((l) => l.startsWith('reachable through ssh at ')) ?? '')?.[1] ?? fail('no SSH address printed')

  beforeAll(async () => {
    const missing = sitesMissingPrerequisite()
    if (missing !== undefined) throw new Error(`site tests cannot run here: ${missing}`)
    sites = await buildSites(SITES, { prefix: `phss${process.pid % 10000}-` })
    dir = await mkdtemp(join(tmpdir(), 'phoenix-ssh-sites-'))
    const lan = (id: string) => sites.node(id).addresses.find((a) => a.class === 'private-ipv4')!.ip
    // P0: the port-range site; it listens on every address, on the first free port of 7000-7010.
    const p0Out = await start('P0', ['--listen', '/ip4/0.0.0.0/tcp/0', '--listen', '/ip6/::/tcp/0', '--listen-range', '7000-7010', ...sshOptions('P0')])
    const p0Public = sites.node('P0').addresses.find((a) => a.class === 'public-ipv4')!.ip
    const p0Port = /\/ip4\/\S+\/tcp\/(\d+)/.exec(p0Out.find((l) => l.includes('listening on'))!)![1]!
    const p0Hub = `/ip4/${p0Public}/tcp/${p0Port}/p2p/${node('P0').peerId}`
    const p0Hub6 = `/ip6/${sites.node('P0').addresses.find((a) => a.class === 'global-ipv6')!.ip}/tcp/${p0Port}/p2p/${node('P0').peerId}`
    // Gateways of the SSH-only sites listen inside only (loopback and their LAN): others reach them through sshd.
    const gateway = (id: string, hubs: string[]) =>
      start(id, ['--listen', '/ip4/127.0.0.1/tcp/7000', '--listen', `/ip4/${lan(id)}/tcp/7000`, '--ssh-advertise', `${sites.ssh!.user}@${sites.node(id).wan!.ipv4}:22`, ...sshOptions(id), ...hubs.flatMap((h) => ['--hub', h])])
    const b0Ssh = sshAddressOf(await gateway('B0', [p0Hub]))
    const a0Ssh = sshAddressOf(await gateway('A0', [p0Hub, b0Ssh]))
    expect(a0Ssh).toBe(`/ip4/${sites.node('A0').wan!.ipv4}/tcp/22/ssh/${sites.ssh!.user}/ip4/127.0.0.1/tcp/7000/p2p/${node('A0').peerId}`)
    const hubOf = (id: string) => `/ip4/${lan(id)}/tcp/7000/p2p/${node(id).peerId}`
    await Promise.all([
      start('A1', ['--listen', '/ip4/0.0.0.0/tcp/7000', '--hub', hubOf('A0')]),
      start('B1', ['--listen', '/ip4/0.0.0.0/tcp/7000', '--hub', hubOf('B0')]),
      // Behind NAT: they dial out to P0 and are reached through it; their site-mates find each other by discovery.
      start('N0', ['--listen', '/ip4/0.0.0.0/tcp/7000', '--hub', p0Hub]),
      start('N1', ['--listen', '/ip4/0.0.0.0/tcp/7000', '--hub', p0Hub]),
      start('V0', ['--listen', '/ip6/::/tcp/7000', '--hub', p0Hub6]),
    ])
  }, 120_000)

  afterAll(async () => {
    await Promise.all([...nodes.values()].map((n) => n.process.kill('SIGKILL')))
    await sites?.destroy()
    if (dir !== undefined) await rm(dir, { recursive: true, force: true })
  }, 60_000)

  /** Sends one acknowledged message from `from` to the name `to`; the answer's status and body. */
  const sendAck = async (from: string, to: string) => {
    const r = await call(node(from), 'POST', `/send?name=${to}&ack=1&waitMs=${SEND_WAIT_MS}`, new TextEncoder().encode(`${from}→${to}`))
    return { pair: `${from}→${to}`, status: r.status, json: r.json }
  }

  /** Every node has a route to every other; then links settle (deferred dials, duplicate streams) for `settleMs`. */
  const converge = async (timeoutMs: number, settleMs: number) => {
    const since = performance.now()
    let last = ''
    for (;;) {
      const missing: string[] = []
      for (const n of nodes.values()) {
        const routes = (await call(n, 'GET', '/routes')).json as { destination: string; reachable: boolean }[]
        const reachable = new Set(routes.filter((r) => r.reachable).map((r) => r.destination))
        for (const m of nodes.values()) if (m !== n && !reachable.has(m.peerId)) missing.push(`${n.id}→${m.id}`)
      }
      if (missing.length === 0) break
      last = missing.join(' ')
      if (performance.now() - since > timeoutMs) throw new Error(`no route within ${timeoutMs} ms: ${last}`)
      await new Promise((r) => setTimeout(r, 100))
    }
    const convergedMs = performance.now() - since
    await new Promise((r) => setTimeout(r, settleMs))
    return convergedMs
  }

  it('every ordered pair reaches the other by name, acknowledged, across SSH tunnels and NAT', async () => {
    const ids = [...nodes.keys()]
    console.log(`routes between all ${ids.length} nodes after ${(await converge(30_000, 2_000)).toFixed(0)} ms`)
    const results = await Promise.all(ids.flatMap((from) => ids.filter((to) => to !== from).map((to) => sendAck(from, to))))
    expect(results.filter((r) => r.status !== 200)).toEqual([])
    // The two SSH-only gateways are neighbours through a tunnel: the only way in is port 22.
    const peers = (await call(node('A0'), 'GET', '/peers')).json as string[]
    expect(peers).toContain(node('B0').peerId)
    expect((await metric(node('A0'), 'ssh_tunnels_up')) + (await metric(node('B0'), 'ssh_tunnels_up'))).toBeGreaterThanOrEqual(1)
  }, 60_000)

  it('dials no other site\'s private address, no loopback address, and no SSH address without an identity', async () => {
    // An address is classed (and a forbidden one counted as skipped) when it is dialled. The larger
    // peer id of a pair holds its dial back dialDeferMs (3 s) and dials only if the other has not
    // connected (behind NAT, it cannot): such a skip is counted that much after convergence.
    const eventually = async (read: () => Promise<number>): Promise<number> => {
      const untilMs = performance.now() + 15_000
      for (;;) {
        const value = await read()
        if (value > 0 || performance.now() > untilMs) return value
        await new Promise((r) => setTimeout(r, 200))
      }
    }
    expect(await sites.foreignPrivateDials()).toBe(0)
    for (const n of nodes.values()) expect(await metric(n, 'dials_loopback_total'), `${n.id} dialled loopback`).toBe(0)
    // The NAT hosts' and the other sites' private addresses were advertised, seen, and not dialled.
    const skippedPrivate = await eventually(async () => {
      let sum = 0
      for (const n of nodes.values()) sum += await metric(n, 'dials_skipped_private_ipv4_total')
      return sum
    })
    expect(skippedPrivate).toBeGreaterThan(0)
    // The NAT hosts dialled each other on their private LAN, and P0 over the public one.
    expect(await metric(node('N0'), 'dials_private_ipv4_total') + (await metric(node('N1'), 'dials_private_ipv4_total'))).toBeGreaterThan(0)
    expect(await eventually(() => metric(node('N0'), 'dials_skipped_public_ipv4_ssh_total'))).toBeGreaterThan(0)
    // The IPv6-only host dials no IPv4 address (it saw plenty), and the IPv4-only ones no IPv6 one:
    // A1's first dial of P0 (which lists its global IPv6 address first) goes to its public IPv4 one.
    const ipv4Classes = ['public_ipv4', 'private_ipv4', 'public_ipv4_ssh']
    for (const cls of ipv4Classes) expect(await metric(node('V0'), `dials_${cls}_total`), `V0 ${cls}`).toBe(0)
    const v0Skipped = await eventually(async () => {
      let sum = 0
      for (const cls of ipv4Classes) sum += await metric(node('V0'), `dials_skipped_${cls}_total`)
      return sum
    })
    expect(v0Skipped).toBeGreaterThan(0)
    expect(await metric(node('A1'), 'dials_global_ipv6_total')).toBe(0)
    // A1 dials P0 itself when its peer id is the smaller of the two; otherwise it holds its dial
    // back (dialDeferMs) and P0's connection usually comes first, and then A1 dials nothing of P0.
    if (node('A1').peerId < node('P0').peerId) {
      expect(await metric(node('A1'), 'dials_skipped_global_ipv6_total')).toBeGreaterThan(0)
      expect(await metric(node('A1'), 'dials_public_ipv4_total')).toBeGreaterThan(0)
    }
  }, 90_000)

  it('killing a tunnel\'s ssh process heals by itself', async () => {
    // The gateway whose node runs the ssh to the other one (A0 dialled B0, its hub).
    const victims = (await sshChildren(node('A0').process.child.pid!)).concat(await sshChildren(node('B0').process.child.pid!))
    expect(victims.length).toBeGreaterThan(0)
    // The supervisor restarts the tunnel (its back-off), and the core redials the lost neighbour into it.
    const restarts = async () => (await metric(node('A0'), 'ssh_tunnel_restarts_total')) + (await metric(node('B0'), 'ssh_tunnel_restarts_total'))
    const restartsBefore = await restarts()
    const killedAt = performance.now()
    for (const pid of victims) process.kill(pid, 'SIGKILL')
    // Back: a tunnel restarted, the gateways are neighbours again, and a send across is acknowledged.
    for (;;) {
      const restarted = await restarts()
      const peers = (await call(node('A0'), 'GET', '/peers')).json as string[]
      if (restarted > restartsBefore && peers.includes(node('B0').peerId)) break
      if (performance.now() - killedAt > 30_000) throw new Error(`no tunnel back within 30 s (restarts ${restarted}, before ${restartsBefore})`)
      await new Promise((r) => setTimeout(r, 100))
    }
    const healedMs = performance.now() - killedAt
    const results = await Promise.all([sendAck('A1', 'B1'), sendAck('B1', 'A1'), sendAck('N0', 'A1')])
    console.log(`ssh SIGKILLed (pids ${victims.join(', ')}): tunnel and link back after ${healedMs.toFixed(0)} ms`)
    expect(results.filter((r) => r.status !== 200)).toEqual([])
  }, 60_000)
})

/** The `ssh` processes whose parent is `pid` (a node runs its tunnels' ssh as its children). */
async function sshChildren(pid: number): Promise<number[]> {
  const found: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '')
    // pid (comm) state ppid …: comm may hold spaces, so parse from the last ')'.
    const m = /^\d+ \((.*)\) \S+ (\d+)/.exec(stat)
    if (m?.[1] === 'ssh' && Number(m[2]) === pid) found.push(Number(entry))
  }
  return found
}

function fail(message: string): never {
  throw new Error(message)
}
