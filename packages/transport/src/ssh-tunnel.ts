/**
 * SSH tunnels to neighbours that only SSH can reach (the Phoenix paper's gateways behind
 * firewalls that let only port 22 in): the system's OpenSSH client forwards a local Unix socket to
 * the neighbour's libp2p listener, and libp2p dials that socket with its ordinary TCP transport.
 * The libp2p connection runs inside the tunnel unchanged, so Noise still authenticates the peer id
 * end to end; SSH adds the way in.
 *
 *   ssh -N -L <dir>/t1.sock:<target host>:<target port> -l <user> -p <port> -i <key> -- <host>
 *
 * Why a Unix socket rather than a loopback TCP port: nothing can take it between our choice and
 * ssh's bind (a free-port probe races), readiness is visible without opening a channel to the
 * target, and only this user can use it (the directory is 0700) — a loopback port would let every
 * local user of a shared login node through our SSH session into the remote site. Why `-L` and not
 * `-W`: one ssh process carries every reconnection to that neighbour, its readiness can be checked
 * before libp2p dials, and libp2p needs no custom transport.
 *
 * Supervised: a tunnel whose ssh dies is restarted with exponential back-off and given up after
 * `restartAttemptsMax` consecutive failures (reported as `tunnel:failed`); a first start that fails
 * fails at once, so the caller's dial fails fast. Failures a restart cannot fix (refused key, host
 * key mismatch, bad options) are never retried. Every wait has a timeout. Tunnels are bounded
 * (`tunnelsMax`) and shared: two leases of the same target use one ssh process.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { TypedEventEmitter } from 'main-event'
import { FATAL_SSH_ERRORS, SshTunnelError, diagnose, forwardRefusal, type SshContext } from './ssh-diagnosis.ts'

export { SshTunnelError, type SshTunnelErrorCode } from './ssh-diagnosis.ts'

/** Every bound of the tunnel supervisor, with its reason. */
export const SSH_TUNNEL_LIMITS = {
  /**
   * Tunnels at once. Each is an `ssh` process and a TCP connection; a gateway needs one per remote
   * gateway it dials. Records from other nodes name SSH addresses, so without a bound they could
   * make a node fork hundreds of processes.
   */
  tunnelsMax: 16,
  /** Consecutive failed restarts of a tunnel before it gives up and reports failure. */
  restartAttemptsMax: 6,
  /** Lines of one ssh's output kept to explain a failure (`-v` prints ~60 at start, 3 per forwarded connection). */
  outputLinesMax: 200,
} as const

export const SSH_TUNNEL_TIMING = {
  /** ssh's ConnectTimeout: a firewall that drops SYNs to port 22 fails the tunnel in this time, not TCP's minutes. */
  connectTimeoutMs: 5_000,
  /** From start to forward ready: TCP connect, key exchange, authentication, forward set-up. */
  readyTimeoutMs: 10_000,
  /** ServerAliveInterval × ServerAliveCountMax: a silent dead server is noticed within 15 s. */
  serverAliveIntervalMs: 5_000,
  serverAliveCountMax: 3,
  /** Back-off between restarts after ssh dies: 250 ms, doubling, at most 8 s. */
  restartBackoffInitialMs: 250,
  restartBackoffMaxMs: 8_000,
  /** After SIGTERM, how long ssh has to exit before SIGKILL. */
  stopTimeoutMs: 2_000,
  /**
   * How long a tunnel nobody leases stays up (and supervised). A connection through it that drops
   * when ssh dies is redialled within the core's back-off and finds the tunnel restarting, not gone.
   */
  idleLingerMs: 30_000,
} as const

export type SshTunnelLimits = { -readonly [K in keyof typeof SSH_TUNNEL_LIMITS]: number }
export type SshTunnelTiming = { -readonly [K in keyof typeof SSH_TUNNEL_TIMING]: number }

export interface SshTunnelsInit {
  /** The private key to log in with (`ssh -i`); must not be readable by others. */
  identityFile: string
  /** Where host keys are learned on first contact and checked afterwards (`UserKnownHostsFile`). */
  knownHostsFile: string
  /** Refuse hosts not already in `knownHostsFile` (`StrictHostKeyChecking=yes`) instead of learning them. */
  strictHostKeys?: boolean
  /** An ssh_config to use instead of the user's (`ssh -F`). */
  configFile?: string
  /** The OpenSSH client (default `ssh` on PATH). */
  sshPath?: string
  limits?: Partial<SshTunnelLimits>
  timing?: Partial<SshTunnelTiming>
  /** How messages name the options (e.g. the CLI's `--ssh-identity`); defaults to the init field names. */
  optionNames?: { identityFile?: string; knownHostsFile?: string; configFile?: string }
  log?: (message: string) => void
}

/** Where to tunnel to: an SSH server, a login, and the target as seen from the server. `SshAddress` is one. */
export interface TunnelTarget {
  readonly user: string
  readonly host: string
  readonly port: number
  readonly targetHost: string
  readonly targetPort: number
}

export interface SshTunnelEvents {
  'tunnel:up': CustomEvent<{ key: string; pid: number | undefined; restarts: number }>
  'tunnel:down': CustomEvent<{ key: string; reason: string }>
  'tunnel:failed': CustomEvent<{ key: string; error: SshTunnelError }>
  'forward:refused': CustomEvent<{ key: string; error: SshTunnelError }>
}

export interface TunnelInfo {
  readonly key: string
  readonly state: TunnelState
  readonly pid: number | undefined
  readonly restarts: number
  readonly leases: number
  readonly localPath: string
}

/** One use of a tunnel; release it when the connection through it is gone. */
export interface SshTunnelLease {
  readonly key: string
  /** The Unix socket ssh listens on. */
  readonly localPath: string
  /** The same as a multiaddr libp2p's TCP transport dials (`/unix/…`); append `/p2p/<id>`. */
  readonly localAddress: string
  /** The last forward the server refused through this tunnel, as an error to report with a failed dial. */
  forwardRefused(): SshTunnelError | undefined
  /**
   * Something through the tunnel timed out though ssh reports it up (a hung or stopped ssh, or a
   * session whose keepalives have not yet noticed a dead path): ssh is killed, and the supervisor
   * starts it again as after any exit. Without this a stopped ssh was never replaced (a new-user
   * audit: SIGSTOP, 66 s, every redial into the dead tunnel timing out).
   */
  suspect(why: string): void
  release(): Promise<void>
}

type TunnelState = 'starting' | 'up' | 'backing-off' | 'failed' | 'closed'

const USER = /^[A-Za-z_][A-Za-z0-9._-]{0,31}$/
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|[0-9a-fA-F:.]+)$/
const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000))
/** `ssh -G` only reads files and prints: it answers in milliseconds; this bounds a wedged one (a `Match exec` in the config) at start. */
const SSH_CONFIG_CHECK_TIMEOUT_MS = 5_000

/** What every tunnel of one supervisor shares. */
interface TunnelEnv {
  readonly init: SshTunnelsInit
  readonly limits: SshTunnelLimits
  readonly timing: SshTunnelTiming
  /** The ssh command, behind `setpriv --pdeathsig TERM` where available, so an ssh never outlives its node. */
  command: string[]
  readonly optionNames: { identityFile: string; knownHostsFile: string; configFile: string }
  emit<K extends keyof SshTunnelEvents>(type: K, detail: SshTunnelEvents[K]['detail']): void
  forget(tunnel: SshTunnel): void
  log(message: string): void
}

interface Waiter {
  resolve(): void
  reject(error: SshTunnelError): void
}

/** One supervised ssh process. */
class SshTunnel {
  state: TunnelState = 'starting'
  leases = 0
  restarts = 0
  pid: number | undefined
  lastError: SshTunnelError | undefined
  lastRefusal: SshTunnelError | undefined
  /** Set while nobody leases the tunnel: when it fires, the tunnel closes. */
  linger: NodeJS.Timeout | undefined
  readonly context: SshContext
  private child: ChildProcess | undefined
  private output: string[] = []
  private everUp = false
  private failures = 0
  private timer: NodeJS.Timeout | undefined
  private timedOut: SshTunnelError | undefined
  private readonly waiters = new Set<Waiter>()

  constructor(
    readonly key: string,
    readonly target: TunnelTarget,
    readonly localPath: string,
    private readonly env: TunnelEnv,
  ) {
    const targetText = `${target.targetHost.includes(':') ? `[${target.targetHost}]` : target.targetHost}:${target.targetPort}`
    this.context = {
      label: `ssh ${target.user}@${target.host}:${target.port} → ${targetText}`,
      user: target.user,
      host: target.host,
      port: target.port,
      target: targetText,
      identityFile: env.init.identityFile,
      knownHostsFile: env.init.knownHostsFile,
      optionNames: env.optionNames,
    }
  }

  private args(): string[] {
    const { init, timing } = this.env
    const t = this.target
    const options = [
      'BatchMode=yes', // never prompt: no password, passphrase or host-key question can hang us
      'ExitOnForwardFailure=yes',
      `ConnectTimeout=${seconds(timing.connectTimeoutMs)}`,
      `ServerAliveInterval=${seconds(timing.serverAliveIntervalMs)}`,
      `ServerAliveCountMax=${timing.serverAliveCountMax}`,
      `StrictHostKeyChecking=${init.strictHostKeys === true ? 'yes' : 'accept-new'}`,
      `UserKnownHostsFile=${init.knownHostsFile}`,
      'IdentitiesOnly=yes', // exactly our key, not every key an agent holds (servers cap attempts)
      'ControlMaster=no', // never join, or become, a user's shared connection: this process is the tunnel
      'ControlPath=none',
      'StreamLocalBindUnlink=yes', // a socket left by a killed ssh is replaced, not an error
      'StreamLocalBindMask=0177',
      'ForwardAgent=no',
      'ForwardX11=no',
      'PermitLocalCommand=no',
      'RequestTTY=no',
    ]
    const targetHost = t.targetHost.includes(':') ? `[${t.targetHost}]` : t.targetHost
    return [
      '-N',
      '-v', // readiness is the "Local forwarding listening on path" line
      ...options.flatMap((o) => ['-o', o]),
      ...(init.configFile !== undefined ? ['-F', init.configFile] : []),
      '-i', init.identityFile,
      '-p', String(t.port),
      '-l', t.user,
      '-L', `${this.localPath}:${targetHost}:${t.targetPort}`,
      '--', t.host,
    ]
  }

  start(): void {
    this.state = 'starting'
    this.output = []
    this.timedOut = undefined
    const [command, ...prefix] = this.env.command
    // In a process group of its own: Ctrl-C, GNU `timeout` or `kill -- -PGID` signal the node's
    // whole group, and an ssh in it died with the node's first breath, so the neighbours behind the
    // tunnel saw a crash while the node printed `left`. It ends with the node all the same: stop()
    // closes it, and the kernel's parent-death signal (setpriv, checkSetup) if the node dies.
    const child = spawn(command!, [...prefix, ...this.args()], { stdio: ['ignore', 'ignore', 'pipe'], detached: true })
    this.child = child
    this.pid = child.pid
    createInterface({ input: child.stderr! }).on('line', (line) => this.onLine(child, line))
    child.once('error', (error: NodeJS.ErrnoException) => {
      const cause = error.code === 'ENOENT' ? new SshTunnelError('NOT_INSTALLED', `${this.context.label}: cannot run ${command}: not installed or not on PATH (sshPath)`) : undefined
      this.onExit(child, null, null, cause)
    })
    child.once('close', (code, signal) => this.onExit(child, code, signal))
    this.timer = setTimeout(() => {
      if (this.child !== child || this.state !== 'starting') return
      this.timedOut = new SshTunnelError('READY_TIMEOUT', `${this.context.label}: no forward within ${this.env.timing.readyTimeoutMs} ms (readyTimeoutMs); ssh said: ${lastLine(this.output)}`)
      child.kill('SIGKILL')
    }, this.env.timing.readyTimeoutMs)
  }

  private onLine(child: ChildProcess, line: string): void {
    if (child !== this.child) return
    this.output.push(line)
    if (this.output.length > this.env.limits.outputLinesMax) this.output.shift()
    if (this.state === 'starting' && line.includes(`Local forwarding listening on path ${this.localPath}`)) {
      clearTimeout(this.timer)
      this.state = 'up'
      this.everUp = true
      this.failures = 0
      this.env.log(`${this.context.label}: up (pid ${this.pid}, restarts ${this.restarts})`)
      this.env.emit('tunnel:up', { key: this.key, pid: this.pid, restarts: this.restarts })
      this.settle(undefined)
      return
    }
    const refused = forwardRefusal(line)
    if (refused !== undefined) {
      this.lastRefusal = new SshTunnelError('FORWARD_REFUSED', `${this.context.label}: the SSH server refused to forward to ${this.context.target}: ${refused}`)
      this.env.log(this.lastRefusal.message)
      this.env.emit('forward:refused', { key: this.key, error: this.lastRefusal })
    }
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null, cause?: SshTunnelError): void {
    if (child !== this.child) return
    this.child = undefined
    clearTimeout(this.timer)
    if (this.state === 'closed') return
    const error = cause ?? this.timedOut ?? diagnose(this.output, { code, signal }, this.context)
    this.lastError = error
    if (this.state === 'up') {
      this.env.log(`${this.context.label}: down: ${error.message}`)
      this.env.emit('tunnel:down', { key: this.key, reason: error.message })
    }
    if (!this.everUp || FATAL_SSH_ERRORS.has(error.code)) return this.fail(error)
    if (this.failures >= this.env.limits.restartAttemptsMax) {
      return this.fail(new SshTunnelError(error.code, `${error.message} (gave up after ${this.failures} restarts; restartAttemptsMax)`))
    }
    const { restartBackoffInitialMs, restartBackoffMaxMs } = this.env.timing
    const delayMs = Math.min(restartBackoffMaxMs, restartBackoffInitialMs * 2 ** Math.min(30, this.failures))
    this.failures++
    this.state = 'backing-off'
    this.timer = setTimeout(() => {
      this.restarts++
      this.start()
    }, delayMs)
  }

  /** lease.suspect: an up tunnel's ssh is killed; onExit restarts it with the usual back-off. */
  suspect(why: string): void {
    if (this.state !== 'up' || this.child === undefined) return
    this.env.log(`${this.context.label}: ${why}; restarting ssh`)
    this.child.kill('SIGKILL')
  }

  private fail(error: SshTunnelError): void {
    this.state = 'failed'
    this.lastError = error
    this.env.log(error.message)
    this.env.emit('tunnel:failed', { key: this.key, error })
    this.settle(error)
    this.env.forget(this)
    void rm(this.localPath, { force: true })
  }

  private settle(error: SshTunnelError | undefined): void {
    for (const waiter of [...this.waiters]) {
      this.waiters.delete(waiter)
      if (error === undefined) waiter.resolve()
      else waiter.reject(error)
    }
  }

  /** Resolves once the forward is up; rejects on failure, close, `timeoutMs` or `signal`. */
  whenUp(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.state === 'up') return Promise.resolve()
    if (this.state === 'failed' || this.state === 'closed') return Promise.reject(this.lastError ?? closedError(this))
    if (signal?.aborted === true) return Promise.reject(new SshTunnelError('CLOSED', `${this.context.label}: the wait was aborted`))
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        this.waiters.delete(waiter)
      }
      const waiter: Waiter = { resolve: () => (done(), resolve()), reject: (e) => (done(), reject(e)) }
      const timer = setTimeout(() => waiter.reject(new SshTunnelError('READY_TIMEOUT', `${this.context.label}: not up within ${timeoutMs} ms (${this.state}); last: ${this.lastError?.message ?? lastLine(this.output)}`)), timeoutMs)
      const onAbort = () => waiter.reject(new SshTunnelError('CLOSED', `${this.context.label}: the wait was aborted`))
      signal?.addEventListener('abort', onAbort, { once: true })
      this.waiters.add(waiter)
    })
  }

  async close(): Promise<void> {
    if (this.state === 'closed') return
    this.state = 'closed'
    clearTimeout(this.timer)
    this.lastError = closedError(this)
    this.settle(this.lastError)
    const child = this.child
    this.child = undefined
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('close', () => resolve()))
      child.kill('SIGTERM')
      const killer = setTimeout(() => child.kill('SIGKILL'), this.env.timing.stopTimeoutMs)
      await exited
      clearTimeout(killer)
    }
    await rm(this.localPath, { force: true })
  }

  info(): TunnelInfo {
    return { key: this.key, state: this.state, pid: this.pid, restarts: this.restarts, leases: this.leases, localPath: this.localPath }
  }
}

/** How the tunnels' socket directories are named: `phoenix-ssh-<pid of their node>-XXXXXX`. */
const SOCKET_DIR_PREFIX = 'phoenix-ssh-'

/**
 * A directory of our own for the tunnels' sockets (0700, made by mkdtemp). It carries our pid, so
 * a later node removes those of nodes that died without `stop()` (SIGKILL): each left one behind
 * with its dead socket (found by a new-user audit). Only directories named for a pid that no
 * longer runs, and owned by our user, are removed.
 */
export async function socketDirectory(parent = tmpdir()): Promise<string> {
  const names = await readdir(parent).catch(() => [] as string[])
  for (const name of names) {
    const pid = Number(new RegExp(`^${SOCKET_DIR_PREFIX}(\\d+)-`).exec(name)?.[1])
    if (!Number.isInteger(pid) || pid <= 0 || processRuns(pid)) continue
    const path = join(parent, name)
    const info = await stat(path).catch(() => undefined)
    if (info?.isDirectory() === true && info.uid === process.getuid?.()) await rm(path, { recursive: true, force: true }).catch(() => undefined)
  }
  return mkdtemp(join(parent, `${SOCKET_DIR_PREFIX}${process.pid}-`))
}

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' // another user's: it runs
  }
}

const closedError = (t: SshTunnel) => new SshTunnelError('CLOSED', `${t.context.label}: the tunnel was closed`)
const lastLine = (lines: readonly string[]) => lines.filter((l) => !/^debug\d:/.test(l)).at(-1) ?? lines.at(-1) ?? '(nothing yet)'

/**
 * The bounded set of tunnels of one node. `open` starts (or shares) a tunnel and resolves once its
 * forward is up; `release` on the lease closes it when nobody uses it; `stop` closes all.
 */
export class SshTunnels extends TypedEventEmitter<SshTunnelEvents> {
  private readonly tunnels = new Map<string, SshTunnel>()
  private readonly env: TunnelEnv
  private dir: Promise<string> | undefined
  private checked: Promise<void> | undefined
  private next = 0
  private stopped = false

  constructor(private readonly init: SshTunnelsInit) {
    super()
    const sshPath = init.sshPath ?? 'ssh'
    this.env = {
      init,
      limits: { ...SSH_TUNNEL_LIMITS, ...init.limits },
      timing: { ...SSH_TUNNEL_TIMING, ...init.timing },
      command: [sshPath],
      optionNames: { identityFile: init.optionNames?.identityFile ?? 'identityFile', knownHostsFile: init.optionNames?.knownHostsFile ?? 'knownHostsFile', configFile: init.optionNames?.configFile ?? 'configFile' },
      emit: (type, detail) => this.safeDispatchEvent(type, { detail } as never),
      forget: (tunnel) => {
        if (this.tunnels.get(tunnel.key) === tunnel) this.tunnels.delete(tunnel.key)
      },
      log: init.log ?? (() => {}),
    }
  }

  /** Opens (or shares) the tunnel to `target` and resolves once its forward is up. */
  async open(target: TunnelTarget, options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<SshTunnelLease> {
    checkTarget(target)
    if (this.stopped) throw new SshTunnelError('CLOSED', 'the SSH tunnels are stopped')
    await this.check()
    const dir = await (this.dir ??= socketDirectory())
    // No await from here to the registration below: concurrent opens of one target share a tunnel.
    const key = `${target.user}@${target.host}:${target.port}>${target.targetHost}:${target.targetPort}`
    let tunnel = this.tunnels.get(key)
    if (tunnel === undefined) {
      if (this.tunnels.size >= this.env.limits.tunnelsMax) {
        const idle = [...this.tunnels.values()].find((t) => t.leases === 0)
        if (idle === undefined) throw new SshTunnelError('LIMIT', `ssh ${target.user}@${target.host}:${target.port}: at most ${this.env.limits.tunnelsMax} SSH tunnels at once (tunnelsMax), all in use`)
        void this.retire(idle)
      }
      tunnel = new SshTunnel(key, target, join(dir, `t${++this.next}.sock`), this.env)
      this.tunnels.set(key, tunnel)
      tunnel.start()
    }
    clearTimeout(tunnel.linger)
    tunnel.leases++
    try {
      await tunnel.whenUp(options.timeoutMs ?? this.env.timing.readyTimeoutMs, options.signal)
    } catch (error) {
      await this.release(tunnel)
      throw error
    }
    return this.lease(tunnel)
  }

  private lease(tunnel: SshTunnel): SshTunnelLease {
    let released = false
    return {
      key: tunnel.key,
      localPath: tunnel.localPath,
      localAddress: `/unix/${encodeURIComponent(tunnel.localPath)}`,
      forwardRefused: () => tunnel.lastRefusal,
      suspect: (why) => tunnel.suspect(why),
      release: async () => {
        if (released) return
        released = true
        await this.release(tunnel)
      },
    }
  }

  private async release(tunnel: SshTunnel): Promise<void> {
    tunnel.leases--
    if (tunnel.leases > 0) return
    if (tunnel.state === 'failed' || tunnel.state === 'closed' || this.env.timing.idleLingerMs === 0) return this.retire(tunnel)
    tunnel.linger = setTimeout(() => {
      if (tunnel.leases === 0) void this.retire(tunnel)
    }, this.env.timing.idleLingerMs)
  }

  private async retire(tunnel: SshTunnel): Promise<void> {
    clearTimeout(tunnel.linger)
    this.env.forget(tunnel)
    await tunnel.close()
  }

  /** Fails (one line naming the option) if the client or the identity file cannot work; `open` checks it too. */
  async check(): Promise<void> {
    await (this.checked ??= this.checkSetup())
  }

  /** Fails before any ssh runs if the client or the identity file cannot work. */
  private async checkSetup(): Promise<void> {
    const { identityFile, knownHostsFile } = this.init
    const names = this.env.optionNames
    const sshPath = this.env.command[0]!
    const runs = (file: string, args: string[]) => new Promise<{ ok: boolean; output: string }>((resolve) => execFile(file, args, (error, stdout, stderr) => resolve({ ok: (error as NodeJS.ErrnoException | null)?.code !== 'ENOENT', output: `${stdout}${stderr}` })))
    if (!(await runs(sshPath, ['-V'])).ok) throw new SshTunnelError('NOT_INSTALLED', `sshPath ${JSON.stringify(sshPath)}: the OpenSSH client is not installed or not on PATH`, 'sshPath')
    // An ssh whose node died without stop() would keep its session open forever: where util-linux's
    // setpriv can, the kernel sends it SIGTERM when its parent dies (PR_SET_PDEATHSIG).
    const setpriv = await runs('setpriv', ['--help'])
    if (setpriv.ok && setpriv.output.includes('--pdeathsig') && this.env.command.length === 1) this.env.command.unshift('setpriv', '--pdeathsig', 'TERM')
    const key = await stat(identityFile).catch((e: NodeJS.ErrnoException) => {
      throw new SshTunnelError('INVALID_CONFIG', `${names.identityFile} ${identityFile}: cannot read it: ${e.code ?? e.message}`, 'identityFile')
    })
    if (!key.isFile()) throw new SshTunnelError('INVALID_CONFIG', `${names.identityFile} ${identityFile}: not a file`, 'identityFile')
    if (key.uid === process.getuid?.() && (key.mode & 0o077) !== 0) {
      throw new SshTunnelError('INVALID_CONFIG', `${names.identityFile} ${identityFile}: permissions ${(key.mode & 0o777).toString(8).padStart(4, '0')} are too open, ssh ignores such a key (chmod 600 it)`, 'identityFile')
    }
    await stat(dirname(knownHostsFile)).catch((e: NodeJS.ErrnoException) => {
      throw new SshTunnelError('INVALID_CONFIG', `${names.knownHostsFile} ${knownHostsFile}: its directory cannot be used: ${e.code ?? e.message}`, 'knownHostsFile')
    })
    if (this.init.configFile !== undefined) await this.checkConfigFile(sshPath, this.init.configFile)
  }

  /**
   * An ssh_config ssh cannot read or parse failed every dial later, each with ssh's own line: it
   * fails the start now. `ssh -G` parses the file (and prints the result) without connecting.
   */
  private async checkConfigFile(sshPath: string, configFile: string): Promise<void> {
    const name = this.env.optionNames.configFile
    const file = await stat(configFile).catch((e: NodeJS.ErrnoException) => {
      throw new SshTunnelError('INVALID_CONFIG', `${name} ${configFile}: cannot read it: ${e.code ?? e.message}`, 'configFile')
    })
    if (!file.isFile()) throw new SshTunnelError('INVALID_CONFIG', `${name} ${configFile}: not a file`, 'configFile')
    const problem = await new Promise<string | undefined>((resolve) => {
      execFile(sshPath, ['-G', '-F', configFile, 'phoenix-config-check.invalid'], { timeout: SSH_CONFIG_CHECK_TIMEOUT_MS }, (error, _stdout, stderr) => {
        resolve(error === null ? undefined : (stderr.split('\n').find((line) => line.trim() !== '') ?? error.message))
      })
    })
    if (problem !== undefined) throw new SshTunnelError('INVALID_CONFIG', `${name} ${configFile}: ssh rejects it: ${problem.trim()}`, 'configFile')
  }

  tunnelsInfo(): TunnelInfo[] {
    return [...this.tunnels.values()].map((t) => t.info())
  }

  /** Closes every tunnel and removes the socket directory. */
  async stop(): Promise<void> {
    this.stopped = true
    const all = [...this.tunnels.values()]
    this.tunnels.clear()
    await Promise.all(all.map((t) => (clearTimeout(t.linger), t.close())))
    if (this.dir !== undefined) await rm(await this.dir, { recursive: true, force: true })
  }
}

/** Nothing from another node's record reaches ssh's command line unless it is plainly a login, a host and ports. */
function checkTarget(t: TunnelTarget): void {
  const bad = (what: string, value: unknown) => {
    throw new SshTunnelError('INVALID_CONFIG', `ssh tunnel: ${what} ${JSON.stringify(value)} is not valid`)
  }
  if (!USER.test(t.user)) bad('user', t.user)
  for (const host of [t.host, t.targetHost]) if (!HOST.test(host) || host.startsWith('-')) bad('host', host)
  for (const port of [t.port, t.targetPort]) if (!Number.isInteger(port) || port < 1 || port > 65_535) bad('port', port)
}
