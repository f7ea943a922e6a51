import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectScript, runInNamespace, sinkScript, sourceScript, whoAmIScript } from './probe.ts'
import { buildSites, sitesMissingPrerequisite, type SiteNode, type Sites, type SiteSpec } from './sites.ts'

// No skipping: without root, nftables, tc or OpenSSH this fails with the reason.
const prerequisite = sitesMissingPrerequisite()

/** The self-test's sites: SSH-only with two gateways (and a tc limit), SSH-only IPv4, SSH-only IPv6-only, a port range, NAT. */
const SITES: SiteSpec[] = [
  { name: 'A', size: 4, gateways: 2, inbound: 'ssh', lan: 'dual', gatewayRateMbit: 16 },
  { name: 'B', size: 2, inbound: 'ssh' },
  { name: 'C', size: 2, inbound: 'ssh', lan: 'ipv6' },
  { name: 'P', size: 2, gateways: 0, inbound: 'ports', ports: [7000, 7010], publicIpv4: true, lan: 'dual' },
  { name: 'N', size: 2, nat: true, inbound: 'none' },
]
/** A probe counts as dropped after this long. Not less: an IPv6 host's first connection waits for neighbour discovery through the router, which took 1.1 s on an idle machine and past 1.5 s under load. */
const DROP_TIMEOUT_MS = 4_000

const run = (args: string[], timeoutMs = 20_000) =>
  new Promise<{ code: number; out: string }>((resolve) =>
    execFile(args[0]!, args.slice(1), { timeout: timeoutMs }, (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, out: `${stdout}${stderr}` })),
  )

describe('real sites in network namespaces: SSH-only gateways, several gateways, NAT, port ranges, address classes, tc', () => {
  let sites: Sites
  const listeners: ChildProcess[] = []
  const n = (id: string): SiteNode => sites.node(id)
  const addr = (id: string, cls: string, device = 'eth0') => n(id).addresses.find((a) => a.class === cls && a.device === device)!.ip

  const listen = async (id: string, host: string, ports: number[]) => {
    const child = spawn('ip', ['netns', 'exec', n(id).namespace, process.execPath, '--input-type=module', '-e', whoAmIScript(host, ports)])
    listeners.push(child)
    await new Promise<void>((resolve, reject) => {
      child.stdout!.once('data', () => resolve())
      child.once('exit', (code) => reject(new Error(`listener in ${id} exited with ${code}`)))
    })
  }
  type Probe = { ok: boolean; code: string; ms: number; data?: string }
  const connect = async (from: string, host: string, port: number) => JSON.parse(await runInNamespace(n(from).namespace, connectScript(host, port, DROP_TIMEOUT_MS))) as Probe
  /** Runs every probe at once (each is a node process in a namespace) and returns their results in order. */
  const probes = <T extends [string, string, number][]>(list: [...T]) => Promise.all(list.map(([from, host, port]) => connect(from, host, port))) as Promise<{ [K in keyof T]: Probe }>

  beforeAll(async () => {
    if (prerequisite !== undefined) throw new Error(`site tests cannot run here: ${prerequisite}`)
    sites = await buildSites(SITES, { prefix: `phxs${process.pid % 10000}-` })
    await Promise.all([
      listen('A0', '::', [7000]),
      listen('A2', '::', [22, 7000]),
      listen('C1', '::', [7000]),
      listen('P1', '::', [22, 6999, 7000, 7005, 7010, 7011]),
      listen('N1', '0.0.0.0', [7005]),
    ])
  }, 120_000)

  afterAll(async () => {
    for (const l of listeners) l.kill('SIGKILL')
    await sites?.destroy()
  }, 60_000)

  it('SSH-only sites: from another site only TCP 22 on a gateway\'s public address answers, and it is sshd', async () => {
    const [a0, a1, a0v6, a0other, a2v6, a0private, inside, toGateway] = await probes([
      ['B1', n('A0').wan!.ipv4, 22],
      ['B1', n('A1').wan!.ipv4, 22], // the second gateway
      ['C1', n('A0').wan!.ipv6, 22], // from an IPv6-only host
      ['B1', n('A0').wan!.ipv4, 7000], // listening, but not port 22
      ['C1', addr('A2', 'global-ipv6'), 7000], // a global address, but not a gateway
      ['B1', addr('A0', 'private-ipv4'), 22], // a gateway's private address
      ['A3', addr('A2', 'private-ipv4'), 7000], // inside the site everything is open
      ['A2', addr('A0', 'private-ipv4'), 7000],
    ])
    for (const r of [a0, a1, a0v6]) expect(r).toMatchObject({ ok: true, data: expect.stringMatching(/^SSH-2\.0-OpenSSH/) })
    for (const r of [a0other, a2v6, a0private]) {
      expect(r).toMatchObject({ ok: false, code: 'TIMEOUT' })
      expect(r.ms).toBeGreaterThanOrEqual(DROP_TIMEOUT_MS - 50)
    }
    expect(inside).toMatchObject({ ok: true, data: addr('A3', 'private-ipv4') })
    expect(toGateway).toMatchObject({ ok: true })
  })

  it('ssh logs in to each gateway with the topology\'s key, lands in that gateway\'s namespace, and refuses a stranger\'s key', async () => {
    const ssh = (from: string, host: string, key: string, command: string) =>
      run(['ip', 'netns', 'exec', n(from).namespace, 'ssh', '-F', '/dev/null', '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=5', '-o', 'StrictHostKeyChecking=accept-new', '-o', `UserKnownHostsFile=${join(sites.ssh!.dir, `known_hosts_${from}`)}`, '-o', 'IdentitiesOnly=yes', '-i', key, '-l', sites.ssh!.user, '--', host, command])
    const gateways = ['A0', 'A1', 'B0']
    const [v6, stranger, ...logins] = await Promise.all([
      ssh('C1', n('C0').wan!.ipv6, sites.ssh!.key.privateKeyFile, 'ip -o -6 addr show dev wan0'),
      ssh('A2', n('B0').wan!.ipv4, sites.ssh!.strangerKey.privateKeyFile, 'true'),
      ...gateways.map((g) => ssh('B1', n(g).wan!.ipv4, sites.ssh!.key.privateKeyFile, 'ip -o -4 addr show dev wan0')),
    ])
    for (const [i, g] of gateways.entries()) {
      expect(logins[i]!.code, logins[i]!.out).toBe(0)
      expect(logins[i]!.out).toContain(`inet ${n(g).wan!.ipv4}/30`)
    }
    expect(v6.out).toContain(n('C0').wan!.ipv6)
    expect(stranger.code).toBe(255)
    expect(stranger.out).toMatch(/Permission denied \(publickey\)/)
  })

  it('NAT: its hosts dial out under the router\'s address, reach each other, and cannot be dialled', async () => {
    const [out, inFromP, inFromGateway, lan] = await probes([
      ['N1', addr('P1', 'public-ipv4'), 7005],
      ['P1', addr('N1', 'private-ipv4'), 7005],
      ['A0', addr('N1', 'private-ipv4'), 7005],
      ['N0', addr('N1', 'private-ipv4'), 7005],
    ])
    expect(out.ok).toBe(true)
    // P1 sees the router's address on P's LAN, not N1's private one.
    expect(out.data).not.toBe(addr('N1', 'private-ipv4'))
    expect(out.data).toBe('198.51.100.129')
    for (const r of [inFromP, inFromGateway]) expect(r).toMatchObject({ ok: false, code: 'TIMEOUT' })
    expect(lan).toMatchObject({ ok: true, data: addr('N0', 'private-ipv4') })
  })

  it('a port range is the only thing open: 7000-7010 answer from other sites, 6999, 7011 and 22 do not, nor the private address', async () => {
    const p1 = addr('P1', 'public-ipv4')
    const results = await probes([
      ['B1', p1, 7000],
      ['B1', p1, 7005],
      ['B1', p1, 7010],
      ['C1', addr('P1', 'global-ipv6'), 7005],
      ['B1', p1, 6999],
      ['B1', p1, 7011],
      ['B1', p1, 22],
      ['B1', addr('P1', 'private-ipv4'), 7005],
    ])
    expect(results.map((r) => r.ok)).toEqual([true, true, true, true, false, false, false, false])
    for (const r of results.slice(4)) expect(r.code).toBe('TIMEOUT')
  })

  it('public, private and global addresses side by side; IPv4-only hosts have no IPv6, IPv6-only hosts no IPv4', async () => {
    const classes = (id: string) => n(id).addresses.map((a) => `${a.device}:${a.class}`)
    expect(classes('A0')).toEqual(['eth0:private-ipv4', 'eth0:global-ipv6', 'wan0:public-ipv4', 'wan0:global-ipv6'])
    expect(classes('A2')).toEqual(['eth0:private-ipv4', 'eth0:global-ipv6'])
    expect(classes('C1')).toEqual(['eth0:global-ipv6'])
    expect(classes('P1')).toEqual(['eth0:private-ipv4', 'eth0:public-ipv4', 'eth0:global-ipv6'])
    expect(n('N1').addresses.map((a) => a.ip)).toEqual(['192.168.5.11'])
    for (const a of sites.nodes.flatMap((x) => x.addresses)) {
      if (a.class === 'public-ipv4') expect(a.ip).toMatch(/^198\.51\.100\./)
      if (a.class === 'global-ipv6') expect(a.ip).toMatch(/^2001:db8:/)
    }
    const c1v4 = await run(['ip', '-n', n('C1').namespace, '-4', '-o', 'addr', 'show'])
    expect(c1v4.out.trim().split('\n').filter((l) => !/ lo /.test(l) && l !== '')).toEqual([])
    const b1v6 = await run(['ip', '-n', n('B1').namespace, '-6', '-o', 'addr', 'show'])
    expect(b1v6.out.trim()).toBe('')
    const [c1ToIpv4] = await probes([['C1', n('A0').wan!.ipv4, 22]])
    expect(c1ToIpv4.ok).toBe(false)
    expect(c1ToIpv4.code).toMatch(/ENETUNREACH|EHOSTUNREACH/)
  })

  it('tc makes each gateway\'s WAN link the bottleneck, both ways; the LAN is not limited', async () => {
    const rateMbit = SITES[0]!.gatewayRateMbit!
    const transfer = async (fromNs: string, toNs: string, host: string, port: number, bytes: number) => {
      const sink = spawn('ip', ['netns', 'exec', toNs, process.execPath, '--input-type=module', '-e', sinkScript(host, port)])
      listeners.push(sink)
      const lines: string[] = []
      sink.stdout!.on('data', (d: Buffer) => lines.push(...d.toString().split('\n').filter(Boolean)))
      await new Promise<void>((resolve, reject) => {
        sink.stdout!.once('data', () => resolve())
        sink.once('exit', (code) => reject(new Error(`sink in ${toNs} exited with ${code}`)))
      })
      await runInNamespace(fromNs, sourceScript(host, port, bytes))
      await new Promise((resolve) => (sink.exitCode !== null ? resolve(null) : sink.once('exit', resolve)))
      const { bytes: got, ms } = JSON.parse(lines.find((l) => l.startsWith('{'))!) as { bytes: number; ms: number }
      expect(got).toBe(bytes)
      return (got * 8) / (ms / 1000) / 1e6
    }
    const router = sites.routerNamespace
    const bytes = 1_500_000
    const a0Out = await transfer(n('A0').namespace, router, n('A0').wan!.routerIpv4, 9000, bytes)
    const a0In = await transfer(router, n('A0').namespace, n('A0').wan!.ipv4, 9001, bytes)
    const a1Out = await transfer(n('A1').namespace, router, n('A1').wan!.routerIpv4, 9002, bytes)
    const lan = await transfer(n('A2').namespace, n('A0').namespace, addr('A0', 'private-ipv4'), 9003, bytes * 4)
    console.log(`tc ${rateMbit} Mbit/s per gateway WAN link: A0 out ${a0Out.toFixed(1)}, A0 in ${a0In.toFixed(1)}, A1 out ${a1Out.toFixed(1)} Mbit/s; A2→A0 over the LAN ${lan.toFixed(0)} Mbit/s`)
    for (const r of [a0Out, a0In, a1Out]) {
      expect(r).toBeGreaterThan(rateMbit * 0.5)
      expect(r).toBeLessThan(rateMbit * 1.3)
    }
    expect(lan).toBeGreaterThan(rateMbit * 3)
  }, 60_000)

  it('rejects an impossible site with a clear line, and destroy() removes namespaces, sshd processes and keys', async () => {
    const prefix = `phxsx${process.pid % 10000}-`
    await expect(buildSites([{ name: 'N', size: 1, nat: true, gateways: 1, inbound: 'none' }], { prefix })).rejects.toThrow('site "N": a NAT site has no gateways, no public addresses, IPv4 only, and inbound "none"')
    await expect(buildSites([{ name: 'S', size: 1, gateways: 0, inbound: 'ssh' }], { prefix })).rejects.toThrow('site "S": an SSH-only site needs a gateway to run sshd')
    const small = await buildSites([{ name: 'S', size: 1, inbound: 'ssh' }], { prefix })
    const sshd = small.node('S0').sshd!
    expect(sshd.child.exitCode).toBeNull()
    await small.destroy()
    const stray = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l.startsWith(prefix))
    expect(stray).toEqual([])
    await new Promise((resolve) => (sshd.child.exitCode !== null || sshd.child.signalCode !== null ? resolve(null) : sshd.child.once('exit', resolve)))
    expect(sshd.child.signalCode).toBe('SIGKILL')
    expect(existsSync(small.ssh!.dir)).toBe(false)
  }, 60_000)
})
