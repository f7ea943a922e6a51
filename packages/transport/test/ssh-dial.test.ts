import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { DialPath, FAILURE_CAUSES_PER_ADDRESS_MAX, parseAdvertise } from '../src/dial-path.ts'
import { PhoenixTransportError } from '../src/errors.ts'
import { Metrics } from '../src/metrics.ts'
import { TestNodes, addressOf, text, waitUntil } from './nodes.ts'
import { sshdMissing, startSshd, type TestSshd } from './sshd.ts'

// A real sshd on a free loopback port. No skipping: without OpenSSH this fails with the reason.
const missing = sshdMissing()
const PEER = '12D3KooWExve7pDCH7VePy7XJiiyMpVmfqHpRkpFDicQsBnnyW5V'

describe('the dial path: which addresses are dialled, and how', () => {
  const path = (ssh = false, listening = ['/ip4/10.232.1.10/tcp/7000']) => {
    const dial = new DialPath(ssh ? { identityFile: '/nonexistent/key' } : undefined, undefined, new Metrics())
    dial.refresh(listening)
    return dial
  }

  it('skips loopback on a host with real addresses, and keeps it in a single-host cluster', () => {
    expect(path(false, ['/ip4/127.0.0.1/tcp/1']).plan(`/ip4/127.0.0.1/tcp/2/p2p/${PEER}`, false).kind).toBe('direct')
    expect(path(false, ['/ip4/127.0.0.1/tcp/1', '/ip4/198.51.100.2/tcp/1']).plan(`/ip4/127.0.0.1/tcp/2/p2p/${PEER}`, false)).toMatchObject({ kind: 'skip', class: 'loopback' })
    // A hub is the user's explicit choice: dialled whatever its class.
    expect(path(false, ['/ip4/198.51.100.2/tcp/1']).plan(`/ip4/127.0.0.1/tcp/2/p2p/${PEER}`, true).kind).toBe('direct')
  })

  it('a start that cannot use ssh fails with a PhoenixTransportError naming the ssh option, the supervisor\'s error as its cause', async () => {
    const start = (ssh: ConstructorParameters<typeof DialPath>[0]) => new DialPath(ssh, undefined, new Metrics()).start(() => {}).then(() => undefined, (e: unknown) => e)
    const missingClient = await start({ identityFile: '/nonexistent/key', sshPath: '/nonexistent/ssh' })
    expect(missingClient).toBeInstanceOf(PhoenixTransportError)
    expect(missingClient).toMatchObject({ code: 'INVALID_INPUT', field: 'ssh.sshPath', message: expect.stringMatching(/^sshPath "\/nonexistent\/ssh": the OpenSSH client is not installed/), cause: { name: 'SshTunnelError', code: 'NOT_INSTALLED' } })
    // Any program that runs stands in for the client here: the identity is checked next.
    const missingKey = await start({ identityFile: '/nonexistent/key', sshPath: process.execPath })
    expect(missingKey).toMatchObject({ code: 'INVALID_INPUT', field: 'ssh.identityFile', message: 'ssh.identityFile /nonexistent/key: cannot read it: ENOENT', cause: { code: 'INVALID_CONFIG' } })
  })

  it('a start checks the known-hosts directory (saying when it is the default) and the ssh_config, with ssh itself', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'phoenix-ssh-check-'))
    const home = process.env.HOME
    try {
      const key = join(dir, 'id')
      writeFileSync(key, 'not read: only its mode is checked here\n', { mode: 0o600 })
      const start = (ssh: ConstructorParameters<typeof DialPath>[0]) => new DialPath(ssh, undefined, new Metrics()).start(() => {}).then(() => undefined, (e: unknown) => e)
      process.env.HOME = join(dir, 'no-home')
      expect(await start({ identityFile: key })).toMatchObject({ field: 'ssh.knownHostsFile', message: `ssh.knownHostsFile ${join(dir, 'no-home/.ssh/known_hosts')}: its directory cannot be used: ENOENT (the default, as none was given: create that directory, or give ssh.knownHostsFile)` })
      const knownHostsFile = join(dir, 'known_hosts')
      expect(await start({ identityFile: key, knownHostsFile: join(dir, 'nowhere/known_hosts') })).toMatchObject({ message: expect.stringMatching(/cannot be used: ENOENT$/) })
      expect(await start({ identityFile: key, knownHostsFile, configFile: join(dir, 'none') })).toMatchObject({ code: 'INVALID_INPUT', field: 'ssh.configFile', message: `ssh.configFile ${join(dir, 'none')}: cannot read it: ENOENT` })
      const bad = join(dir, 'bad_config')
      writeFileSync(bad, 'Host *\n  BogusOption yes\n')
      expect(await start({ identityFile: key, knownHostsFile, configFile: bad })).toMatchObject({ field: 'ssh.configFile', message: expect.stringMatching(new RegExp(`^ssh\\.configFile ${bad}: ssh rejects it: .*[Bb]ad configuration option: bogusoption`)) })
      const good = join(dir, 'good_config')
      writeFileSync(good, 'Host *\n  ServerAliveInterval 5\n')
      expect(await start({ identityFile: key, knownHostsFile, configFile: good })).toBeUndefined()
    } finally {
      process.env.HOME = home
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('skips private addresses outside our prefixes, and SSH addresses without an identity', () => {
    // 10.0.0.0/8 is no interface of the test host, so no such address is ours to dial.
    expect(path().plan(`/ip4/10.99.7.5/tcp/7000/p2p/${PEER}`, false)).toMatchObject({ kind: 'skip', class: 'private-ipv4' })
    const sshAddress = `/ip4/198.51.100.6/tcp/22/ssh/phoenix/ip4/127.0.0.1/tcp/7000/p2p/${PEER}`
    expect(path(false).plan(sshAddress, false)).toMatchObject({ kind: 'skip', viaSsh: true })
    expect(path(false).plan(sshAddress, false)).toMatchObject({ kind: 'skip', reason: expect.stringContaining('no SSH identity') })
    expect(path(true).plan(sshAddress, false)).toMatchObject({ kind: 'ssh', ssh: { host: '198.51.100.6', user: 'phoenix', targetPort: 7000, peerId: PEER } })
    expect(path().plan('/not/an/address', false)).toMatchObject({ kind: 'skip', class: 'malformed' })
  })

  it('advertises no loopback beside real addresses, best class first, and its SSH address last', () => {
    const own = ['/ip4/127.0.0.1/tcp/7000', '/ip4/10.232.1.10/tcp/7000', '/ip6/2001:db8:ff:1::2/tcp/7000', '/ip6/fe80::1/tcp/7000']
    const dial = new DialPath({ identityFile: '/k', advertise: 'phoenix@198.51.100.2' }, undefined, new Metrics())
    expect(dial.advertised(own, PEER, 16)).toEqual([
      '/ip6/2001:db8:ff:1::2/tcp/7000',
      '/ip4/10.232.1.10/tcp/7000',
      // The SSH server reaches us on its own loopback.
      `/ip4/198.51.100.2/tcp/22/ssh/phoenix/ip4/127.0.0.1/tcp/7000/p2p/${PEER}`,
    ])
    expect(path().advertised(['/ip4/127.0.0.1/tcp/7000', '/ip6/::1/tcp/7001'], PEER, 16)).toEqual(['/ip4/127.0.0.1/tcp/7000', '/ip6/::1/tcp/7001'])
    // Past the bound, the SSH address keeps its place (the last one) and direct ones give way.
    const many = Array.from({ length: 20 }, (_, i) => `/ip4/198.51.100.${i + 10}/tcp/7000`)
    const bounded = dial.advertised(many, PEER, 16)
    expect(bounded).toHaveLength(16)
    expect(bounded.at(-1)).toMatch(/\/ssh\/phoenix\//)
  })

  it('an SSH failure is news once per cause, and again after a success', () => {
    const dial = path(true)
    expect(dial.failureIsNew('/a', 'refused')).toBe(true)
    expect(dial.failureIsNew('/a', 'refused')).toBe(false)
    expect(dial.failureIsNew('/b', 'refused')).toBe(true)
    expect(dial.failureIsNew('/a', 'timed out after 5001 ms')).toBe(true)
    // Causes that take turns (a hub on another private network: a reset handshake, then a
    // timeout) are each said once, not at every change; a timeout's milliseconds are no new cause.
    expect(dial.failureIsNew('/a', 'refused')).toBe(false)
    expect(dial.failureIsNew('/a', 'timed out after 5012 ms')).toBe(false)
    dial.dialSucceeded('/a')
    expect(dial.failureIsNew('/a', 'timed out after 5001 ms')).toBe(true)
    // At most FAILURE_CAUSES_PER_ADDRESS_MAX causes are kept per address: the oldest goes first.
    for (let i = 0; i < FAILURE_CAUSES_PER_ADDRESS_MAX; i++) expect(dial.failureIsNew('/c', `cause ${String.fromCharCode(97 + i)}`)).toBe(true)
    expect(dial.failureIsNew('/c', 'cause a')).toBe(false)
    expect(dial.failureIsNew('/c', 'cause z')).toBe(true)
    expect(dial.failureIsNew('/c', 'cause a')).toBe(true)
    // A failure without a message (a rejection that was not an Error with one) is a cause too, never a crash.
    expect(dial.failureIsNew('/d', undefined as unknown as string)).toBe(true)
    expect(dial.failureIsNew('/d', undefined as unknown as string)).toBe(false)
  })

  it('parses --ssh-advertise and refuses what ssh could take for an option', () => {
    expect(parseAdvertise('phoenix@gw.example.org:2222', 'x')).toEqual({ user: 'phoenix', host: 'gw.example.org', port: 2222 })
    expect(parseAdvertise('u@[2001:db8::1]', 'x')).toEqual({ user: 'u', host: '2001:db8::1', port: 22 })
    expect(() => parseAdvertise('-oProxyCommand=x@host', '--ssh-advertise')).toThrow(/^--ssh-advertise "-oProxyCommand=x@host": /)
    expect(() => parseAdvertise('host-only', '--ssh-advertise')).toThrow(/^--ssh-advertise "host-only": expected user@host\[:port\]/)
  })
})

describe('neighbours through an SSH tunnel (real sshd, real nodes)', () => {
  let sshd: TestSshd
  let dir: string
  const nodes = new TestNodes()

  beforeAll(async () => {
    if (missing !== undefined) throw new Error(`SSH tests cannot run here: ${missing}`)
    sshd = await startSshd()
    dir = await mkdtemp(join(tmpdir(), 'phoenix-ssh-dial-'))
  }, 30_000)

  afterEach(() => nodes.stopAll())

  afterAll(async () => {
    await sshd?.stop()
    if (dir !== undefined) await rm(dir, { recursive: true, force: true })
  })

  const sshInit = (key = sshd.clientKey.privateKeyFile) => ({ identityFile: key, knownHostsFile: join(dir, 'known_hosts') })

  it('dials an SSH hub through a tunnel, routes over it, and ends the ssh process at stop', async () => {
    const gateway = await nodes.start({ names: ['gateway'], ssh: { advertise: `${sshd.user}@127.0.0.1:${sshd.port}` } })
    const sshAddress = gateway.phoenix.sshAddress()!
    expect(sshAddress).toBe(`/ip4/127.0.0.1/tcp/${sshd.port}/ssh/${sshd.user}${addressOf(gateway).replace(/\/p2p\/.*$/, '')}/p2p/${gateway.libp2p.peerId.toString()}`)
    const outside = await nodes.start({ names: ['outside'], hubs: [sshAddress], ssh: sshInit() })
    await waitUntil('a neighbour through the tunnel', () => outside.phoenix.peers().includes(gateway.libp2p.peerId.toString()), 20_000)
    // The connection libp2p made runs over the tunnel's Unix socket.
    const connection = outside.libp2p.getConnections(gateway.libp2p.peerId)[0]!
    expect(connection.remoteAddr.toString()).toMatch(/^\/unix\//)
    await outside.phoenix.send('gateway', text('through ssh'), { ack: true, routeWaitMs: 10_000 })
    const metrics = outside.phoenix.metricsText()
    expect(metrics).toMatch(/^phoenix_dials_loopback_ssh_total 1$/m)
    expect(metrics).toMatch(/^phoenix_ssh_tunnels_up 1$/m)
    const tunnelPids = sshChildren()
    expect(tunnelPids.length).toBeGreaterThan(0)
    await outside.libp2p.stop()
    for (const pid of tunnelPids) expect(alive(pid), `ssh ${pid} after stop()`).toBe(false)
  }, 60_000)

  it('a refused key fails the dial with one line naming the option, and the core backs off', async () => {
    const gateway = await nodes.start({ ssh: { advertise: `${sshd.user}@127.0.0.1:${sshd.port}` } })
    const outside = await nodes.start({ hubs: [gateway.phoenix.sshAddress()!], ssh: { ...sshInit(sshd.strangerKey.privateKeyFile), optionNames: { identityFile: '--ssh-identity' } } })
    await waitUntil('a failed dial', () => /^phoenix_dials_failed_total [1-9]/m.test(outside.phoenix.metricsText()), 20_000)
    expect(outside.phoenix.metricsText()).toMatch(/^phoenix_ssh_tunnel_failures_auth_refused_total [1-9]/m)
    expect(outside.phoenix.peers()).toEqual([])
  }, 60_000)

  it('a node without an identity refuses an SSH hub at once, naming the option', async () => {
    await expect(nodes.start({ hubs: [`/ip4/127.0.0.1/tcp/${sshd.port}/ssh/${sshd.user}/ip4/127.0.0.1/tcp/9`] })).rejects.toMatchObject({ field: 'hubs', message: expect.stringMatching(/^hubs ".*" is an SSH address, and no SSH identity is given \(ssh\.identityFile\)$/) })
  })

  it('listenRange takes the first free port of the range, and the next if it is taken', async () => {
    const first = await nodes.start({ listenRange: '17450-17460' })
    const second = await nodes.start({ listenRange: '17450-17460' })
    const port = (n: typeof first) => Number(/\/tcp\/(\d+)/.exec(addressOf(n))![1])
    expect(port(first)).toBeGreaterThanOrEqual(17450)
    expect(port(second)).toBeGreaterThan(port(first))
    expect(port(second)).toBeLessThanOrEqual(17460)
    // Both wildcards, as libp2p listens on them (the IPv6 one IPv6-only): one port free on both.
    const both = await nodes.start({ listen: ['/ip4/0.0.0.0/tcp/0', '/ip6/::/tcp/0'], listenRange: '17470-17480' })
    const ports = new Set(both.libp2p.getMultiaddrs().map((a) => /\/tcp\/(\d+)/.exec(a.toString())![1]))
    expect(ports.size).toBe(1)
    await expect(nodes.start({ listenRange: `${port(first)}-${port(first)}` })).rejects.toThrow(new RegExp(`^listenRange ${port(first)}: no free port on 127\\.0\\.0\\.1 \\(the one port is in use\\)$`))
  })
})

/** The `ssh` processes whose parent is this process (where the nodes of this test run their tunnels). */
function sshChildren(): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat = ''
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue
    }
    const m = /^\d+ \((.*)\) \S+ (\d+)/.exec(stat)
    if (m?.[1] === 'ssh' && Number(m[2]) === process.pid) found.push(Number(entry))
  }
  return found
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
