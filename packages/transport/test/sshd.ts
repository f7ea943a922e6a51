/**
 * A real OpenSSH server for tests (Debian's openssh-server): its own config, host key and
 * authorized keys in a temporary directory, no PAM, key authentication only, TCP forwarding
 * allowed. Runs on a free loopback port here, or inside a network namespace on port 22
 * (`test/netns/sites.ts`). Stopped by `stop()`; in a namespace, also by the topology's cleanup.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** Lines of sshd output kept to explain a failure. */
const OUTPUT_LINES_MAX = 200

export interface KeyPair {
  readonly privateKeyFile: string
  readonly publicKey: string
}

/** An Ed25519 key pair made by ssh-keygen, private key 0600. */
export async function sshKeyPair(file: string, comment = 'phoenix-test'): Promise<KeyPair> {
  await rm(file, { force: true })
  await rm(`${file}.pub`, { force: true })
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file])
  return { privateKeyFile: file, publicKey: (await readFile(`${file}.pub`, 'utf8')).trim() }
}

/** Why this machine cannot run the SSH tests, or undefined. */
export function sshdMissing(): string | undefined {
  for (const [tool, path] of [['ssh', 'ssh'], ['ssh-keygen', 'ssh-keygen'], ['sshd', sshdPath()]] as const) {
    // `-V` may print usage and exit non-zero; only "cannot run" matters.
    if (spawnSync(path, ['-V'], { stdio: 'ignore' }).error !== undefined) {
      return `\`${tool}\` is missing: install openssh-client and openssh-server (apt-get install -y openssh-client openssh-server)`
    }
  }
  return undefined
}

/** Debian installs sshd in /usr/sbin, which is not on every user's PATH. */
export function sshdPath(): string {
  return process.env.PHOENIX_SSHD ?? '/usr/sbin/sshd'
}

export interface TestSshd {
  readonly dir: string
  readonly port: number
  /** Who may log in: the user running the tests. */
  readonly user: string
  /** A key the server accepts, and one it does not. */
  readonly clientKey: KeyPair
  readonly strangerKey: KeyPair
  /** The server's host public key, for a known_hosts line. */
  readonly hostPublicKey: string
  readonly output: string[]
  readonly child: ChildProcess
  stop(): Promise<void>
}

export interface SshdOptions {
  /** Run inside this network namespace (`ip netns exec`), listening on all its addresses. */
  namespace?: string
  /** Default: a free loopback port (outside a namespace) or 22 (inside one). */
  port?: number
  /** `PermitOpen`: the only targets the server forwards to (default any). */
  permitOpen?: string[]
  /** Extra authorized public keys. */
  authorizedKeys?: string[]
  /** A directory to keep config and keys in (default a new temporary one, removed by stop()). */
  dir?: string
  /** Reuse these client keys (e.g. one key for every gateway of a topology). */
  clientKey?: KeyPair
  strangerKey?: KeyPair
}

async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })
}

function config(dir: string, port: number, listen: string[], user: string, permitOpen: string[] | undefined): string {
  return [
    `Port ${port}`,
    ...listen.map((a) => `ListenAddress ${a}`),
    `HostKey ${join(dir, 'host_key')}`,
    `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
    'PidFile none',
    'UsePAM no',
    'StrictModes no', // the temporary directory's modes are not sshd's business here
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PubkeyAuthentication yes',
    'PermitRootLogin prohibit-password',
    `AllowUsers ${user}`,
    'AllowTcpForwarding local',
    ...(permitOpen !== undefined ? [`PermitOpen ${permitOpen.join(' ')}`] : []),
    'AllowAgentForwarding no',
    'X11Forwarding no',
    'PermitTTY no',
    'MaxStartups 100:30:200', // tests open many sessions at once
    'LogLevel VERBOSE',
    '',
  ].join('\n')
}

/** Starts sshd and resolves once it listens. */
export async function startSshd(options: SshdOptions = {}): Promise<TestSshd> {
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'phoenix-sshd-')))
  const ownsDir = options.dir === undefined
  await mkdir(dir, { recursive: true })
  // Debian's sshd, run as root, insists on its privilege-separation directory.
  if (process.getuid?.() === 0) await mkdir('/run/sshd', { recursive: true, mode: 0o755 })
  const user = userInfo().username
  const [clientKey, strangerKey, host] = await Promise.all([
    options.clientKey ?? sshKeyPair(join(dir, 'client_key')),
    options.strangerKey ?? sshKeyPair(join(dir, 'stranger_key')),
    sshKeyPair(join(dir, 'host_key'), 'phoenix-test-host'),
  ])
  await writeFile(join(dir, 'authorized_keys'), [clientKey.publicKey, ...(options.authorizedKeys ?? [])].join('\n') + '\n', { mode: 0o600 })
  for (let attempt = 0; ; attempt++) {
    const port = options.port ?? (options.namespace !== undefined ? 22 : await freeLoopbackPort())
    const listen = options.namespace !== undefined ? ['0.0.0.0', '[::]'] : ['127.0.0.1']
    const configFile = join(dir, `sshd_config.${port}`)
    await writeFile(configFile, config(dir, port, listen, user, options.permitOpen))
    const argv = [sshdPath(), '-D', '-e', '-f', configFile]
    const child = options.namespace !== undefined ? spawn('ip', ['netns', 'exec', options.namespace, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] }) : spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] })
    const output: string[] = []
    const listening = new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
          output.push(line)
          if (output.length > OUTPUT_LINES_MAX) output.shift()
          if (/^Server listening on/.test(line)) resolve()
        }
      }
      child.stdout!.on('data', onData)
      child.stderr!.on('data', onData)
      child.once('exit', (code) => reject(new Error(`sshd exited with ${code} before listening:\n${output.join('\n')}`)))
      setTimeout(() => reject(new Error(`sshd did not listen within 10 s:\n${output.join('\n')}`)), 10_000).unref()
    })
    try {
      await listening
    } catch (error) {
      child.kill('SIGKILL')
      // Someone took the port between our probe and sshd's bind: try another.
      if (attempt < 3 && options.port === undefined && output.some((l) => /Address already in use/.test(l))) continue
      throw error
    }
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        await exited
      }
      if (ownsDir) await rm(dir, { recursive: true, force: true })
    }
    return { dir, port, user, clientKey, strangerKey, hostPublicKey: host.publicKey, output, child, stop }
  }
}
