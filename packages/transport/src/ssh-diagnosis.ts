/**
 * What went wrong with an `ssh` process, from what it printed: one line naming the option or the
 * address at fault and the cause. Pure: the tunnel supervisor feeds it OpenSSH's stderr.
 */

export type SshTunnelErrorCode =
  /** No `ssh` binary (`sshPath`). */
  | 'NOT_INSTALLED'
  /** Our options or the identity file are unusable; retrying cannot help. */
  | 'INVALID_CONFIG'
  /** The SSH server cannot be reached (refused, timed out, no route, unknown name, not an SSH server). */
  | 'UNREACHABLE'
  /** The server refused our key. */
  | 'AUTH_REFUSED'
  /** The server's host key is not the one we know (or, with strict checking, unknown). */
  | 'HOST_KEY'
  /** The local end of the forward could not be opened. */
  | 'FORWARD_FAILED'
  /** The server refused to forward to the target (administratively prohibited, target refused). */
  | 'FORWARD_REFUSED'
  /** No forward within `readyTimeoutMs`. */
  | 'READY_TIMEOUT'
  /** `ssh` exited for another reason (connection lost, killed). */
  | 'EXITED'
  /** More tunnels than `tunnelsMax`. */
  | 'LIMIT'
  /** The tunnel was closed while someone waited for it. */
  | 'CLOSED'

/** Failures a restart cannot fix: the supervisor gives up at once. */
export const FATAL_SSH_ERRORS: ReadonlySet<SshTunnelErrorCode> = new Set(['NOT_INSTALLED', 'INVALID_CONFIG', 'AUTH_REFUSED', 'HOST_KEY', 'FORWARD_FAILED', 'LIMIT', 'CLOSED'])

export class SshTunnelError extends Error {
  readonly code: SshTunnelErrorCode
  /** The `ssh` option at fault, when the check before any ssh runs found it (`sshPath`, `identityFile`, `knownHostsFile`). */
  readonly field: string | undefined
  constructor(code: SshTunnelErrorCode, message: string, field?: string) {
    super(message)
    this.name = 'SshTunnelError'
    this.code = code
    this.field = field
  }
}

/** What a diagnosis needs to name the culprit. */
export interface SshContext {
  /** `ssh user@host:port → target`: how every message starts. */
  readonly label: string
  readonly user: string
  readonly host: string
  readonly port: number
  readonly target: string
  readonly identityFile: string
  readonly knownHostsFile: string
  /** How the caller names its options in messages (CLI flags, init fields). */
  readonly optionNames: { readonly identityFile: string; readonly knownHostsFile: string }
}

const isDebug = (line: string) => /^debug\d:/.test(line)

/** The last line OpenSSH printed that is not debug chatter (the cause, usually), or the last line at all. */
export function lastWords(lines: readonly string[]): string {
  const meaningful = lines.filter((l) => !isDebug(l) && !/^(Transferred|Bytes per second):/.test(l) && l.trim() !== '')
  return (meaningful.at(-1) ?? lines.at(-1) ?? '(nothing)').trim()
}

/** A forward refused by the server for one connection (`channel 3: open failed: administratively prohibited: open failed`). */
export function forwardRefusal(line: string): string | undefined {
  return /^channel \d+: open failed: (.*)$/.exec(line.trim())?.[1]
}

type Rule = (lines: readonly string[], ctx: SshContext) => SshTunnelError | undefined
const find = (lines: readonly string[], pattern: RegExp) => {
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = pattern.exec(lines[i]!)
    if (m !== null) return m
  }
  return undefined
}

const RULES: readonly Rule[] = [
  (lines, ctx) => {
    if (find(lines, /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/) === undefined) return undefined
    const unknown = find(lines, /No \S+ host key is known for (\S+)/)
    const why = unknown !== undefined ? `no host key for ${unknown[1]} is recorded there and checking is strict` : 'the server\'s host key does not match the one recorded there (if it really changed, remove the old one with ssh-keygen -R)'
    return new SshTunnelError('HOST_KEY', `${ctx.label}: host key check failed against ${ctx.knownHostsFile} (${ctx.optionNames.knownHostsFile}): ${why}`)
  },
  (lines, ctx) => {
    const perms = find(lines, /Permissions (\d+) for '(.*)' are too open/)
    if (perms !== undefined) return new SshTunnelError('INVALID_CONFIG', `${ctx.label}: ssh ignores identity file ${ctx.identityFile} (${ctx.optionNames.identityFile}): its permissions ${perms[1]} are too open (chmod 600 it)`)
    const denied = find(lines, /Permission denied \((.*)\)|Too many authentication failures/)
    if (denied === undefined) return undefined
    return new SshTunnelError('AUTH_REFUSED', `${ctx.label}: the SSH server refused key ${ctx.identityFile} (${ctx.optionNames.identityFile}) for user ${ctx.user}: ${denied[0].replace(/\.$/, '')}`)
  },
  (lines, ctx) => {
    const resolve = find(lines, /Could not resolve hostname (\S+?):? (.*)$/)
    if (resolve !== undefined) return new SshTunnelError('UNREACHABLE', `${ctx.label}: cannot resolve the SSH server's name ${ctx.host}: ${resolve[2]!.replace(/\.$/, '')}`)
    const connect = find(lines, /connect to host \S+ port \d+: (.*)$/)
    if (connect !== undefined) return new SshTunnelError('UNREACHABLE', `${ctx.label}: cannot reach the SSH server ${ctx.host} port ${ctx.port}: ${connect[1]}`)
    const banner = find(lines, /Connection timed out during banner exchange|kex_exchange_identification: (.*)$|banner exchange: (.*)$/)
    if (banner !== undefined) return new SshTunnelError('UNREACHABLE', `${ctx.label}: ${ctx.host} port ${ctx.port} did not answer as an SSH server: ${banner[1] ?? banner[2] ?? banner[0]}`)
    return undefined
  },
  (lines, ctx) => {
    const bind = find(lines, /unix_listener: (.*)$|bind \[?[^\]]*\]?: (.*)$|Could not request local forwarding/)
    if (bind === undefined) return undefined
    const cause = find(lines, /unix_listener: (.*)$|bind .*: (.*)$/)
    return new SshTunnelError('FORWARD_FAILED', `${ctx.label}: could not open the local end of the forward: ${cause?.[1] ?? cause?.[2] ?? bind[0]}`)
  },
  (lines, ctx) => {
    const option = find(lines, /(command-line|line \d+): (Bad configuration option.*|.*unsupported.*|.*invalid.*)$/i)
    return option === undefined ? undefined : new SshTunnelError('INVALID_CONFIG', `${ctx.label}: ssh rejected its options: ${option[2]}`)
  },
  (lines, ctx) => {
    const lost = find(lines, /Timeout, server \S+ not responding|Connection to \S+ closed by remote host|Connection (?:closed|reset) by \S+|client_loop: send disconnect: (.*)$|Broken pipe/)
    return lost === undefined ? undefined : new SshTunnelError('EXITED', `${ctx.label}: lost the SSH server: ${lost[0].replace(/\.$/, '')}`)
  },
]

/** Turns what a dead `ssh` printed, and how it exited, into one clear error. */
export function diagnose(lines: readonly string[], exit: { code: number | null; signal: NodeJS.Signals | null }, ctx: SshContext): SshTunnelError {
  for (const rule of RULES) {
    const error = rule(lines, ctx)
    if (error !== undefined) return error
  }
  const how = exit.signal !== null ? `was killed by ${exit.signal}` : `exited with status ${exit.code}`
  return new SshTunnelError('EXITED', `${ctx.label}: ssh ${how}: ${lastWords(lines)}`)
}
