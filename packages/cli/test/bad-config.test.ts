import { createServer, type Server } from 'node:net'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSshd, type TestSshd } from '../../transport/test/sshd.ts'
import { freePort, phoenix, startNode, tempDir, type Run, type Started } from './helpers.ts'

/**
 * Bad configurations of sites (issue "Real sites"): each gives one line naming the option (or the
 * address) and the cause, within a bounded time, never a hang. A node whose hub cannot be reached
 * keeps running (the hub may come up later) and says why each dial failed.
 */
const SOME_PEER = '12D3KooWExve7pDCH7VePy7XJiiyMpVmfqHpRkpFDicQsBnnyW5V'
/** One SSH attempt to a refusing server or with a refused key takes well under a second; a loaded machine gets 20 s. */
const LINE_WITHIN_MS = 20_000
/** What the line adds to a hub dial that connected and then failed in the handshake. */
const HANDSHAKE_HINT =
  'the hub address answered but the handshake failed (is a phoenix node listening there, at its --listen address, not its --control port? or a private network key, --psk, on one side only or different on each?)'
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** Exited with status 2 and exactly one line on stderr matching `expected`. */
function configError(run: Run, expected: RegExp): void {
  const lines = run.stderr.trim().split('\n')
  expect(lines, run.stderr).toHaveLength(1)
  expect(lines[0]).toMatch(expected)
  expect(run.code).toBe(2)
}

describe('bad site configuration: one line naming the option and the cause', () => {
  const dir = tempDir('bad-config')
  let sshd: TestSshd
  const blockers: Server[] = []
  const running: Started[] = []

  beforeAll(async () => {
    sshd = await startSshd()
  }, 30_000)

  afterAll(async () => {
    for (const node of running) node.killGroup()
    for (const b of blockers) b.close()
    await sshd?.stop()
  })

  const sshHub = (port: number) => `/ip4/127.0.0.1/tcp/${port}/ssh/${sshd.user}/ip4/127.0.0.1/tcp/9/p2p/${SOME_PEER}`
  const sshFlags = (key: string) => ['--ssh-identity', key, '--ssh-known-hosts', join(dir, 'known_hosts')]

  /** Starts a node and returns the first stderr line matching `pattern` (it keeps running: a hub may come up later). */
  const dialError = async (args: string[], pattern: RegExp) => {
    const node = startNode(args)
    running.push(node)
    const startedAt = performance.now()
    const line = (await node.waitFor(pattern, LINE_WITHIN_MS))[0]
    expect(performance.now() - startedAt).toBeLessThan(LINE_WITHIN_MS)
    return { line, node }
  }

  it('an unreachable SSH server: the hub\'s dial fails with the server and the cause, said once while it stays the same', async () => {
    const closed = await freePort()
    const { line, node } = await dialError([...sshFlags(sshd.clientKey.privateKeyFile), '--hub', sshHub(closed)], /^.*dial .*failed: .*$/m)
    expect(line).toContain(`ssh ${sshd.user}@127.0.0.1:${closed} → 127.0.0.1:9: cannot reach the SSH server 127.0.0.1 port ${closed}: Connection refused`)
    // The hub is redialled (after 1 s, then 2 s): the same cause is not repeated at error level.
    await new Promise((r) => setTimeout(r, 4_000))
    expect(node.stderr.match(/dial .* failed: /g)).toHaveLength(1)
  }, 30_000)

  it('a hub that is not up, or on another private network: the dial fails once at error level with the cause, and a hint for a reset handshake', async () => {
    const closed = await freePort()
    const { line, node } = await dialError(['--hub', `/ip4/127.0.0.1/tcp/${closed}`], /^.*dial .*failed: .*$/m)
    expect(line).toMatch(new RegExp(`dial /ip4/127\\.0\\.0\\.1/tcp/${closed} failed: .*ECONNREFUSED`))
    await new Promise((r) => setTimeout(r, 4_000))
    expect(node.stderr.match(/dial .* failed: /g)).toHaveLength(1)
    // A hub without the private network key this node has cannot read the handshake: it resets
    // the connection (then the line says what that probably means) or lets it time out.
    const hub = startNode(['--listen', '/ip4/127.0.0.1/tcp/0'])
    running.push(hub)
    const hubAddress = (await hub.waitFor(/listening on (\S+)/))[1]!
    const psk = join(dir, 'swarm.key')
    writeFileSync(psk, `/key/swarm/psk/1.0.0/\n/base16/\n${'ab'.repeat(32)}\n`)
    const member = await dialError(['--psk', psk, '--hub', hubAddress], /^.*dial .*failed: .*$/m)
    expect(member.line).toMatch(new RegExp(`failed: (.*ECONNRESET: ${escaped(HANDSHAKE_HINT)}|connect timed out after \\d+ ms \\(dialTimeoutMs\\))$`))
  }, 60_000)

  it('a hub address where no phoenix node listens (its control port, or a server that closes): the line says so', async () => {
    // The commonest slip: a node's --control port given as another's --hub.
    const controlPort = await freePort()
    const hub = startNode(['--listen', '/ip4/127.0.0.1/tcp/0', '--control', String(controlPort)])
    running.push(hub)
    await hub.waitFor(/control endpoint on/)
    const atControl = await dialError(['--hub', `/ip4/127.0.0.1/tcp/${controlPort}`], /^.*dial .*failed: .*$/m)
    expect(atControl.line).toMatch(new RegExp(`dial /ip4/127\\.0\\.0\\.1/tcp/${controlPort} failed: .+: ${escaped(HANDSHAKE_HINT)}$`))
    // A server that accepts and closes at once.
    const closer = createServer((socket) => socket.destroy())
    await new Promise<void>((resolve) => closer.listen(0, '127.0.0.1', resolve))
    blockers.push(closer)
    const port = (closer.address() as { port: number }).port
    const atCloser = await dialError(['--hub', `/ip4/127.0.0.1/tcp/${port}`], /^.*dial .*failed: .*$/m)
    expect(atCloser.line).toMatch(new RegExp(`failed: .+: ${escaped(HANDSHAKE_HINT)}$`))
  }, 60_000)

  it('a hub that leaves gracefully: its workers do not put the redials that meet it stopping down to a wrong port or key', async () => {
    // Found by hand: each graceful stop of a hub printed the handshake hint on one or both of its
    // workers, whose first redial, 1 s after its leave, met its connections being reset as it
    // stopped. Here, once the hub has gone, a server on its port resets every connection, as the
    // stopping hub did: every redial in the seconds after the leave meets it.
    const port = await freePort()
    const hub = startNode(['--listen', `/ip4/127.0.0.1/tcp/${port}`, '--key', join(dir, 'leaving-hub.key'), '--name', 'leaving-hub'])
    running.push(hub)
    const hubAddress = (await hub.waitFor(/listening on (\S+)/))[1]!
    const controlPort = await freePort()
    const worker = startNode(['--hub', hubAddress, '--control', String(controlPort)])
    running.push(worker)
    await worker.waitFor(/control endpoint on/)
    for (let i = 0; i < 200 && !(await phoenix(['peers', '--control', String(controlPort)])).stdout.includes('leaving-hub'); i++) await new Promise((r) => setTimeout(r, 100))
    process.kill(hub.pid, 'SIGTERM')
    expect(await hub.exited).toBe(0)
    let resets = 0
    const resetter = createServer((socket) => {
      resets++
      socket.resetAndDestroy()
    })
    await new Promise<void>((resolve) => resetter.listen(port, '127.0.0.1', resolve))
    blockers.push(resetter)
    // Redials back off 1, 2, 4 s: at least one within the next 5 s meets the resetting server.
    for (let i = 0; i < 100 && resets === 0; i++) await new Promise((r) => setTimeout(r, 100))
    await new Promise((r) => setTimeout(r, 500))
    expect(resets).toBeGreaterThan(0)
    expect(worker.stderr).not.toContain(HANDSHAKE_HINT)
  }, 60_000)

  it('a dial in flight when the node stops is no failure: nothing said at error level', async () => {
    // A hub address whose server accepts and never answers: the dial waits in the handshake.
    const silent = createServer(() => undefined)
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    blockers.push(silent)
    const node = startNode(['--hub', `/ip4/127.0.0.1/tcp/${(silent.address() as { port: number }).port}`])
    running.push(node)
    await node.waitFor(/control endpoint on|names: /)
    await new Promise((r) => setTimeout(r, 500))
    process.kill(node.pid, 'SIGTERM')
    expect(await node.exited).toBe(0)
    await node.closed
    // It said "dial … failed: The operation was aborted" as it left.
    expect(node.stderr).not.toMatch(/dial .* failed/)
    expect(`${node.stdout}${node.stderr}`).toMatch(/^left$/m)
  }, 30_000)

  it('a key the SSH server refuses: the dial fails naming --ssh-identity and the key', async () => {
    const { line } = await dialError([...sshFlags(sshd.strangerKey.privateKeyFile), '--hub', sshHub(sshd.port)], /^.*dial .*failed: .*$/m)
    expect(line).toContain(`the SSH server refused key ${sshd.strangerKey.privateKeyFile} (--ssh-identity) for user ${sshd.user}`)
  }, 30_000)

  it('a port range with no free port exits 2 at once', async () => {
    const port = await freePort()
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve))
    blockers.push(blocker)
    configError(await phoenix(['node', '--listen', '/ip4/127.0.0.1/tcp/0', '--listen-range', `${port}-${port}`]), new RegExp(`^phoenix: --listen-range ${port}: no free port on 127\\.0\\.0\\.1 \\(the one port is in use\\)$`))
  }, 30_000)

  it('malformed addresses and options exit 2 naming the option', async () => {
    const key = sshd.clientKey.privateKeyFile
    const badSshConfig = join(dir, 'bad_ssh_config')
    writeFileSync(badSshConfig, 'BogusOption yes\n')
    const cases: [string[], RegExp][] = [
      [['--ssh-identity', key, '--hub', `/ip4/127.0.0.1/tcp/22/ssh/-oProxyCommand=x/ip4/127.0.0.1/tcp/9`], /^phoenix: --hub "\/ip4\/127\.0\.0\.1\/tcp\/22\/ssh\/-oProxyCommand=x\/ip4\/127\.0\.0\.1\/tcp\/9" is not a multiaddr: ssh user "-oProxyCommand=x" is not a login name/],
      [['--ssh-identity', key, '--hub', `/ip4/127.0.0.1/tcp/22/ssh/${sshd.user}/tcp/9`], /^phoenix: --hub .* is not an SSH address: expected \/<ip4\|ip6\|dns\|dns4\|dns6>\//],
      [['--hub', sshHub(22)], /^phoenix: --hub .* is an SSH address, and no SSH identity is given \(--ssh-identity\)$/],
      [['--ssh-identity', join(dir, 'no-such-key')], new RegExp(`^phoenix: --ssh-identity ${join(dir, 'no-such-key')}: cannot read it: ENOENT$`)],
      [['--ssh-identity', key, '--ssh-advertise', 'nobody'], /^phoenix: --ssh-advertise "nobody": expected user@host\[:port\]/],
      [['--listen-range', '7010-7000'], /^phoenix: --listen-range: expected FIRST-LAST with 1 <= FIRST <= LAST <= 65535 \(e\.g\. 7000-7010\), got "7010-7000"$/],
      [['--ssh-config', join(dir, 'ssh_config')], /^phoenix: --ssh-config: has no effect without --ssh-identity$/],
      // An ssh_config ssh cannot read or parse failed every dial later: it fails the start.
      [['--ssh-identity', key, '--ssh-config', join(dir, 'no-such-config')], new RegExp(`^phoenix: --ssh-config ${join(dir, 'no-such-config')}: cannot read it: ENOENT$`)],
      [['--ssh-identity', key, '--ssh-config', badSshConfig], new RegExp(`^phoenix: --ssh-config ${badSshConfig}: ssh rejects it: .*[Bb]ad configuration option: bogusoption`)],
      // Names: the field the core and the transport check, said as the flag; a reserved name refused, not dropped.
      [['--name', ''], /^phoenix: --name: a name must be a non-empty string of at most 256 characters, got an empty one$/],
      [['--name', 'a', '--name', 'a'], /^phoenix: --name: "a" is given twice$/],
      [['--name', '@site/x'], /^phoenix: --name "@site\/x": names starting with '@' are reserved for the overlay$/],
      [Array.from({ length: 65 }, (_, i) => ['--name', `n${i}`]).flat(), /^phoenix: --name: 65 names, at most 64 per node \(namesPerNodeMax\)$/],
      [['--site', 'lab b'], /^phoenix: --site "lab b" may hold only letters, digits, '\.', '_', ':' and '-'$/],
    ]
    const knownHosts = (args: string[]) => (args.includes('--ssh-identity') ? ['--ssh-known-hosts', join(dir, 'known_hosts'), ...args] : args)
    // Two at a time: each is a Node process loading libp2p, on a machine shared with other tests.
    for (let i = 0; i < cases.length; i += 2) {
      const batch = cases.slice(i, i + 2)
      const runs = await Promise.all(batch.map(([args]) => phoenix(['node', ...knownHosts(args)], undefined, LINE_WITHIN_MS)))
      runs.forEach((run, j) => configError(run, batch[j]![1]))
    }
  }, 120_000)
})
