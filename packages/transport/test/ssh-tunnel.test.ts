import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { tcp } from '@libp2p/tcp'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { chmod, copyFile, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { connect, createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SshTunnelError, SshTunnels, socketDirectory, type SshTunnelEvents, type SshTunnelsInit, type TunnelTarget } from '../src/ssh-tunnel.ts'
import { sshdMissing, startSshd, type TestSshd } from './sshd.ts'

// A real sshd on a free loopback port. No skipping: without OpenSSH this fails with the reason.
const missing = sshdMissing()

/** Sends `bytes` through a Unix socket to the echo server behind the tunnel and returns what came back. */
function roundTrip(path: string, bytes: Uint8Array, timeoutMs = 10_000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ path })
    const chunks: Buffer[] = []
    let got = 0
    const timer = setTimeout(() => (socket.destroy(), reject(new Error(`echo through ${path}: ${got} of ${bytes.length} bytes back within ${timeoutMs} ms`))), timeoutMs)
    socket.on('data', (c: Buffer) => {
      chunks.push(c)
      got += c.length
      if (got >= bytes.length) (clearTimeout(timer), socket.end(), resolve(Buffer.concat(chunks)))
    })
    socket.on('error', (e) => (clearTimeout(timer), reject(e)))
    socket.on('close', () => (clearTimeout(timer), got < bytes.length && reject(new Error(`echo through ${path}: closed after ${got} of ${bytes.length} bytes`))))
    socket.write(bytes)
  })
}

const listen = (server: Server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)))
const alive = (pid: number | undefined) => {
  try {
    process.kill(pid!, 0)
    return true
  } catch {
    return false
  }
}
const nextEvent = <K extends keyof SshTunnelEvents>(tunnels: SshTunnels, type: K, timeoutMs: number) =>
  new Promise<SshTunnelEvents[K]['detail']>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} within ${timeoutMs} ms`)), timeoutMs)
    tunnels.addEventListener(type, (e) => (clearTimeout(timer), resolve((e as CustomEvent).detail)), { once: true })
  })

describe('SSH tunnels through the system OpenSSH client, against a real sshd', () => {
  let dir: string
  let sshd: TestSshd
  let echo: Server
  let echoPort: number
  let closedPort: number
  let deniedPort: number
  let node: Libp2p
  let nodePort: number
  const open: SshTunnels[] = []

  const tunnelsWith = (extra: Partial<SshTunnelsInit> = {}) => {
    const t = new SshTunnels({ identityFile: sshd.clientKey.privateKeyFile, knownHostsFile: join(dir, 'known_hosts'), optionNames: { identityFile: '--ssh-identity', knownHostsFile: '--ssh-known-hosts' }, ...extra })
    open.push(t)
    return t
  }
  const to = (targetPort: number, port = sshd.port): TunnelTarget => ({ user: sshd.user, host: '127.0.0.1', port, targetHost: '127.0.0.1', targetPort })
  const label = (targetPort: number, port = sshd.port) => `ssh ${sshd.user}@127.0.0.1:${port} → 127.0.0.1:${targetPort}`

  beforeAll(async () => {
    if (missing !== undefined) throw new Error(`SSH tests cannot run here: ${missing}`)
    dir = await mkdtemp(join(tmpdir(), 'phoenix-ssh-test-'))
    echo = createServer((s) => s.pipe(s))
    echoPort = await listen(echo)
    const closer = createServer()
    closedPort = await listen(closer)
    await new Promise((r) => closer.close(r))
    const denier = createServer()
    deniedPort = await listen(denier) // listening, but not in PermitOpen
    node = await createLibp2p({ addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] }, transports: [tcp()], connectionEncrypters: [noise()], streamMuxers: [yamux()], connectionMonitor: { enabled: false } })
    nodePort = Number(node.getMultiaddrs()[0]!.getComponents().find((c) => c.name === 'tcp')!.value)
    sshd = await startSshd({ permitOpen: [echoPort, closedPort, nodePort].map((p) => `127.0.0.1:${p}`) })
  }, 60_000)

  afterAll(async () => {
    await Promise.all(open.map((t) => t.stop()))
    await node?.stop()
    echo?.close()
    await sshd?.stop()
    if (dir !== undefined) await rm(dir, { recursive: true, force: true })
  })

  it('forwards bytes both ways through a Unix socket only this user can open', async () => {
    const tunnels = tunnelsWith()
    const lease = await tunnels.open(to(echoPort))
    const bytes = randomBytes(256 * 1024)
    expect((await roundTrip(lease.localPath, bytes)).equals(bytes)).toBe(true)
    expect((await stat(lease.localPath)).mode & 0o077).toBe(0)
    expect(tunnels.tunnelsInfo()).toMatchObject([{ state: 'up', leases: 1, restarts: 0 }])
    await lease.release()
  })

  it('carries a libp2p connection with Noise end to end: the right peer id connects, another is refused', async () => {
    const tunnels = tunnelsWith()
    const lease = await tunnels.open(to(nodePort))
    const dialler = await createLibp2p({ transports: [tcp()], connectionEncrypters: [noise()], streamMuxers: [yamux()], connectionMonitor: { enabled: false } })
    try {
      const connection = await dialler.dial(multiaddr(`${lease.localAddress}/p2p/${node.peerId}`), { signal: AbortSignal.timeout(10_000) })
      expect(connection.remotePeer.toString()).toBe(node.peerId.toString())
      await connection.close()
      const impostor = peerIdFromPrivateKey(await generateKeyPair('Ed25519'))
      await expect(dialler.dial(multiaddr(`${lease.localAddress}/p2p/${impostor}`), { signal: AbortSignal.timeout(10_000) })).rejects.toThrow()
    } finally {
      await dialler.stop()
      await lease.release()
    }
  })

  it('runs ssh in a process group of its own: a signal to the node\'s group (Ctrl-C, GNU timeout) leaves the tunnel to the leave', async () => {
    const tunnels = tunnelsWith()
    const lease = await tunnels.open(to(echoPort))
    // /proc/<pid>/stat: "pid (comm) state ppid pgrp …"; comm may hold spaces, so read after its ')'.
    const groupOf = (pid: number | 'self') => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[2])
    const pid = tunnels.tunnelsInfo()[0]!.pid!
    expect(groupOf(pid)).toBe(pid)
    expect(groupOf(pid)).not.toBe(groupOf('self'))
    await lease.release()
  })

  it('replaces a stopped ssh when a lease suspects the tunnel (a dial through it timed out)', async () => {
    // A new-user audit stopped a tunnel's ssh (SIGSTOP): it stayed "up" and was never replaced.
    const tunnels = tunnelsWith({ timing: { restartBackoffInitialMs: 50 } })
    const lease = await tunnels.open(to(echoPort))
    const before = tunnels.tunnelsInfo()[0]!
    process.kill(before.pid!, 'SIGSTOP')
    const up = nextEvent(tunnels, 'tunnel:up', 15_000)
    lease.suspect('a dial through it timed out')
    const restarted = await up
    expect(restarted.pid).not.toBe(before.pid)
    expect(alive(before.pid)).toBe(false)
    const bytes = randomBytes(16 * 1024)
    expect((await roundTrip(lease.localPath, bytes)).equals(bytes)).toBe(true)
    await lease.release()
  })

  it('heals by itself when its ssh process is killed', async () => {
    const tunnels = tunnelsWith({ timing: { restartBackoffInitialMs: 50 } })
    const lease = await tunnels.open(to(echoPort))
    const before = tunnels.tunnelsInfo()[0]!
    const up = nextEvent(tunnels, 'tunnel:up', 15_000)
    process.kill(before.pid!, 'SIGKILL')
    const restarted = await up
    expect(restarted.restarts).toBe(1)
    expect(restarted.pid).not.toBe(before.pid)
    expect(alive(before.pid)).toBe(false)
    const bytes = randomBytes(64 * 1024)
    expect((await roundTrip(lease.localPath, bytes)).equals(bytes)).toBe(true)
    await lease.release()
  })

  it('a refused key fails fast with one line naming the option, and leaves no ssh behind', async () => {
    const tunnels = tunnelsWith({ identityFile: sshd.strangerKey.privateKeyFile })
    const started = performance.now()
    const error = await tunnels.open(to(echoPort)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SshTunnelError)
    expect((error as SshTunnelError).code).toBe('AUTH_REFUSED')
    expect((error as Error).message).toBe(`${label(echoPort)}: the SSH server refused key ${sshd.strangerKey.privateKeyFile} (--ssh-identity) for user ${sshd.user}: Permission denied (publickey)`)
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(tunnels.tunnelsInfo()).toEqual([])
  })

  it('an unreachable SSH server fails fast: refused port, and a port that never speaks SSH', async () => {
    const tunnels = tunnelsWith({ timing: { connectTimeoutMs: 1_000 } })
    const refused = await tunnels.open(to(echoPort, closedPort)).catch((e: unknown) => e)
    expect((refused as SshTunnelError).code).toBe('UNREACHABLE')
    expect((refused as Error).message).toBe(`${label(echoPort, closedPort)}: cannot reach the SSH server 127.0.0.1 port ${closedPort}: Connection refused`)
    const silent = createServer(() => {}) // accepts, says nothing
    const silentPort = await listen(silent)
    try {
      const started = performance.now()
      const mute = await tunnels.open(to(echoPort, silentPort)).catch((e: unknown) => e)
      expect((mute as SshTunnelError).code).toBe('UNREACHABLE')
      expect((mute as Error).message).toMatch(new RegExp(`^${label(echoPort, silentPort)}: 127\\.0\\.0\\.1 port ${silentPort} did not answer as an SSH server: `))
      expect(performance.now() - started).toBeLessThan(8_000)
    } finally {
      silent.close()
    }
  })

  it("the caller's abort signal (a dial's timeout) ends the wait at once", async () => {
    const silent = createServer(() => {})
    const silentPort = await listen(silent)
    try {
      const tunnels = tunnelsWith({ timing: { connectTimeoutMs: 5_000 } })
      const started = performance.now()
      const error = await tunnels.open(to(echoPort, silentPort), { signal: AbortSignal.timeout(200) }).catch((e: unknown) => e)
      expect((error as SshTunnelError).code).toBe('CLOSED')
      expect((error as Error).message).toBe(`${label(echoPort, silentPort)}: the wait was aborted`)
      expect(performance.now() - started).toBeLessThan(2_000)
      await tunnels.stop()
    } finally {
      silent.close()
    }
  })

  it('a host key that does not match the recorded one is refused, naming the known-hosts option', async () => {
    const knownHostsFile = join(dir, 'wrong_known_hosts')
    const impostorKey = sshd.strangerKey.publicKey.split(' ').slice(0, 2).join(' ')
    await writeFile(knownHostsFile, `[127.0.0.1]:${sshd.port} ${impostorKey}\n`)
    const error = await tunnelsWith({ knownHostsFile }).open(to(echoPort)).catch((e: unknown) => e)
    expect((error as SshTunnelError).code).toBe('HOST_KEY')
    expect((error as Error).message).toMatch(new RegExp(`^${label(echoPort)}: host key check failed against ${knownHostsFile} \\(--ssh-known-hosts\\): the server's host key does not match`))
    // Strict checking refuses a host it has never seen.
    const strict = await tunnelsWith({ knownHostsFile: join(dir, 'empty_known_hosts'), strictHostKeys: true }).open(to(echoPort)).catch((e: unknown) => e)
    expect((strict as SshTunnelError).code).toBe('HOST_KEY')
    expect((strict as Error).message).toMatch(/no host key for .* is recorded there and checking is strict/)
  })

  it('a forward the server refuses is reported with its cause', async () => {
    const tunnels = tunnelsWith()
    for (const [port, cause] of [[deniedPort, 'administratively prohibited: open failed'], [closedPort, 'connect failed: Connection refused']] as const) {
      const lease = await tunnels.open(to(port))
      const refused = nextEvent(tunnels, 'forward:refused', 10_000)
      // ssh closes the local connection when the server refuses: our byte may be unwritten yet
      // (EPIPE), unread (ECONNRESET), or read and dropped (closed before the answer).
      await expect(roundTrip(lease.localPath, new Uint8Array([1]))).rejects.toThrow(/closed after 0 of 1 bytes|ECONNRESET|EPIPE/)
      const { error } = await refused
      expect(error.code).toBe('FORWARD_REFUSED')
      expect(error.message).toBe(`${label(port)}: the SSH server refused to forward to 127.0.0.1:${port}: ${cause}`)
      expect(lease.forwardRefused()).toBe(error)
      await lease.release()
    }
  })

  it('gives up after restartAttemptsMax failed restarts and reports it', async () => {
    const lonely = await startSshd({ clientKey: sshd.clientKey, permitOpen: [`127.0.0.1:${echoPort}`] })
    const tunnels = tunnelsWith({ limits: { restartAttemptsMax: 2 }, timing: { restartBackoffInitialMs: 50, connectTimeoutMs: 1_000 } })
    const lease = await tunnels.open(to(echoPort, lonely.port))
    const pid = tunnels.tunnelsInfo()[0]!.pid!
    await lonely.stop() // the listener goes; the running session survives until its ssh dies
    const failed = nextEvent(tunnels, 'tunnel:failed', 15_000)
    process.kill(pid, 'SIGKILL')
    const { error } = await failed
    expect(error.code).toBe('UNREACHABLE')
    expect(error.message).toBe(`${label(echoPort, lonely.port)}: cannot reach the SSH server 127.0.0.1 port ${lonely.port}: Connection refused (gave up after 2 restarts; restartAttemptsMax)`)
    expect(tunnels.tunnelsInfo()).toEqual([])
    await lease.release()
  })

  it('shares one ssh per target, refuses past tunnelsMax, and makes room by closing an idle one', async () => {
    const tunnels = tunnelsWith({ limits: { tunnelsMax: 2 } })
    const [a1, a2] = await Promise.all([tunnels.open(to(echoPort)), tunnels.open(to(echoPort))])
    expect(a1.localPath).toBe(a2.localPath)
    expect(tunnels.tunnelsInfo()).toMatchObject([{ leases: 2 }])
    const b = await tunnels.open(to(nodePort))
    const limit = await tunnels.open(to(closedPort)).catch((e: unknown) => e)
    expect((limit as SshTunnelError).code).toBe('LIMIT')
    expect((limit as Error).message).toBe(`ssh ${sshd.user}@127.0.0.1:${sshd.port}: at most 2 SSH tunnels at once (tunnelsMax), all in use`)
    await b.release() // idle now: it lingers, and gives way to a new one
    const idlePid = tunnels.tunnelsInfo().find((t) => t.leases === 0)!.pid
    const c = await tunnels.open(to(closedPort))
    expect(tunnels.tunnelsInfo().map((t) => t.leases).sort()).toEqual([1, 2])
    expect(alive(idlePid)).toBe(false)
    await Promise.all([a1.release(), a2.release(), c.release()])
  })

  it('stop closes every tunnel, kills its ssh and removes its socket', async () => {
    const tunnels = tunnelsWith()
    const lease = await tunnels.open(to(echoPort))
    const pid = tunnels.tunnelsInfo()[0]!.pid
    await tunnels.stop()
    expect(alive(pid)).toBe(false)
    await expect(stat(lease.localPath)).rejects.toThrow(/ENOENT/)
    await expect(tunnels.open(to(echoPort))).rejects.toMatchObject({ code: 'CLOSED' })
  })

  it('bad configuration fails before any ssh runs, one line each', async () => {
    const missingKey = join(dir, 'no_such_key')
    await expect(tunnelsWith({ identityFile: missingKey }).open(to(echoPort))).rejects.toThrow(`--ssh-identity ${missingKey}: cannot read it: ENOENT`)
    const openKey = join(dir, 'open_key')
    await copyFile(sshd.clientKey.privateKeyFile, openKey)
    await chmod(openKey, 0o644)
    await expect(tunnelsWith({ identityFile: openKey }).open(to(echoPort))).rejects.toThrow(`--ssh-identity ${openKey}: permissions 0644 are too open, ssh ignores such a key (chmod 600 it)`)
    await expect(tunnelsWith({ sshPath: join(dir, 'no-ssh-here') }).open(to(echoPort))).rejects.toMatchObject({ code: 'NOT_INSTALLED' })
    await expect(tunnelsWith().open({ ...to(echoPort), host: '-oProxyCommand=touch pwned' })).rejects.toThrow('ssh tunnel: host "-oProxyCommand=touch pwned" is not valid')
    await expect(tunnelsWith().open({ ...to(echoPort), user: '-l' })).rejects.toMatchObject({ code: 'INVALID_CONFIG' })
  })
})

describe('the tunnels\' socket directory', () => {
  it('removes those of nodes that died without stop (named for a pid that no longer runs), and no other', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'phoenix-sockdir-'))
    try {
      const dead = spawnSync(process.execPath, ['-e', '']).pid // exited: its pid runs no more
      for (const name of [`phoenix-ssh-${dead}-gone`, `phoenix-ssh-${process.pid}-ours`, `phoenix-ssh-${process.ppid}-parent`, 'phoenix-ssh-test-other']) await mkdir(join(parent, name))
      await writeFile(join(parent, `phoenix-ssh-${dead}-gone`, 't1.sock'), '')
      const made = await socketDirectory(parent)
      expect(made.startsWith(join(parent, `phoenix-ssh-${process.pid}-`))).toBe(true)
      expect((await readdir(parent)).sort()).toEqual([`phoenix-ssh-${process.pid}-ours`, `phoenix-ssh-${process.ppid}-parent`, 'phoenix-ssh-test-other', made.slice(parent.length + 1)].sort())
    } finally {
      await rm(parent, { recursive: true, force: true })
    }
  })
})
