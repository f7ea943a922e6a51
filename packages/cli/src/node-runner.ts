import { generateKeyPair } from '@libp2p/crypto/keys'
import { enable as enableLogs } from '@libp2p/logger'
import { multiaddr } from '@multiformats/multiaddr'
import { DEFAULT_LIMITS } from '@phoenix-overlay/core'
import type { NameConflict } from '@phoenix-overlay/transport'
import { readFileSync, statSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { ConfigError } from './config-error.ts'
import { INBOX_BYTES_MAX, INBOX_MESSAGES_MAX } from './constants.ts'
import { controlText, type ControlEndpoint } from './control-client.ts'
import { bindControl } from './control-endpoint.ts'
import { createControlServer } from './control-server.ts'
import { lockKey, loadOrCreateKey } from './identity.ts'
import { Inbox, type InboxMessage, type InboxReader } from './inbox.ts'
import { handOverInbox, pump } from './inbox-pump.ts'
import { toMessageLine } from './message-line.ts'
import { guardProcess } from './process-guard.ts'

export interface NodeOptions {
  listen: string[]
  hub: string[]
  name: string[]
  key?: string
  control?: ControlEndpoint
  mode: 'optimized' | 'naive'
  sign: boolean
  discovery: boolean
  psk?: string
  allow: string[]
  print?: boolean
  site?: string
  listenRange?: string
  sitePrefix: string[]
  sshIdentity?: string
  sshKnownHosts?: string
  sshStrictHostKeys?: boolean
  sshConfig?: string
  sshAdvertise?: string
}

/** The transport names its init fields; the user gave flags. */
const FLAG_OF: readonly [RegExp, string][] = [
  [/^listenRange\b/, '--listen-range'],
  [/^listen\b/, '--listen'],
  [/^(config\.)?names\b/, '--name'],
  [/^site\b/, '--site'],
  [/^sitePrefixes\b/, '--site-prefix'],
  [/\ballowedPeers\b/g, '--allow'],
  [/^hubs\b/, '--hub'],
  [/\bssh\.advertise\b/g, '--ssh-advertise'],
  [/\bssh\.identityFile\b/g, '--ssh-identity'],
  [/\bssh\.knownHostsFile\b/g, '--ssh-known-hosts'],
  [/\bssh\.configFile\b/g, '--ssh-config'],
]

function sshInit(options: NodeOptions) {
  if (options.sshIdentity === undefined && options.sshAdvertise === undefined) {
    for (const [flag, value] of [['--ssh-known-hosts', options.sshKnownHosts], ['--ssh-config', options.sshConfig], ['--ssh-strict-host-keys', options.sshStrictHostKeys]] as const) {
      if (value !== undefined) throw new ConfigError(`${flag}: has no effect without --ssh-identity`)
    }
    return undefined
  }
  return {
    ...(options.sshIdentity !== undefined ? { identityFile: options.sshIdentity } : {}),
    ...(options.sshKnownHosts !== undefined ? { knownHostsFile: options.sshKnownHosts } : {}),
    ...(options.sshStrictHostKeys === true ? { strictHostKeys: true } : {}),
    ...(options.sshConfig !== undefined ? { configFile: options.sshConfig } : {}),
    ...(options.sshAdvertise !== undefined ? { advertise: options.sshAdvertise } : {}),
    optionNames: { identityFile: '--ssh-identity', knownHostsFile: '--ssh-known-hosts', configFile: '--ssh-config', advertise: '--ssh-advertise' },
  }
}

function checkMultiaddrs(option: string, values: readonly string[]): void {
  for (const value of values) {
    // SSH addresses are checked by the transport, which registers their `/ssh/` protocol (it loads later).
    if (value.includes('/ssh/')) continue
    try {
      multiaddr(value)
    } catch (error) {
      throw new ConfigError(`${option} ${value}: not a multiaddr (${(error as Error).message.split('\n')[0]})`)
    }
  }
}

/**
 * The transport names its options (`listen /ip4/…: address already in use (…)`); the user gave
 * flags. A configuration error (exit status 2) unless it may pass on a retry.
 */
function describeStartError(error: Error, pskFile: string | undefined): Error {
  // A listen address in use may pass on a retry; any other cause (not our address) will not.
  if ((error as { field?: unknown }).field === 'listen' && /EADDRINUSE/.test(String((error.cause as Error | undefined)?.message))) {
    return new Error(error.message.split('\n')[0]!.replace(/^listen\b/, '--listen'))
  }
  // The transport names its option (`privateNetworkKey: …`); the user gave `--psk <file>`.
  if (/^privateNetworkKey: /.test(error.message)) return new ConfigError(`--psk ${pskFile}: ${error.message.split('\n')[0]!.slice('privateNetworkKey: '.length)}`)
  if (/pre-shared key|psk|swarm key/i.test(error.message)) return new ConfigError(`--psk: ${error.message.split('\n')[0]}`)
  // Ours (a port range, an SSH option or address): a configuration error, exit status 2.
  const code = (error as { code?: unknown }).code
  // LIMIT_EXCEEDED at start-up is a configuration past a limit too (more names than namesPerNodeMax).
  if (code === 'INVALID_INPUT' || code === 'INVALID_CONFIG' || code === 'LIMIT_EXCEEDED') {
    let line = error.message.split('\n')[0]!.replace(/^hub /, '--hub ')
    for (const [field, flag] of FLAG_OF) line = line.replace(field, flag)
    return new ConfigError(line)
  }
  return new Error(error.message.split('\n')[0])
}

/**
 * `node --print`: stdout as the reader of last resort, one NDJSON line per message. If stdout
 * closes (`phoenix node --print | head`), printing stops and messages wait for `recv` instead,
 * those whose lines stdout had not taken included: they go back to the inbox. Before, the message
 * whose write met the closed pipe was lost, acknowledged (found by hand: `node --print | head -1`,
 * three sends acknowledged, recv then got the third only). A line the pipe took is the reader's.
 */
function printMessages(inbox: Inbox): void {
  /** Handed to stdout, its write not yet done: at most what stdout buffers before it says stop. */
  const unwritten = new Set<InboxMessage>()
  const reader: InboxReader = {
    names: undefined,
    fallback: true,
    take: (message) => {
      unwritten.add(message)
      const flowing = process.stdout.write(toMessageLine(message), (error) => {
        if (error === null || error === undefined) unwritten.delete(message)
      })
      if (!flowing) process.stdout.once('drain', () => inbox.ready(reader))
      return flowing
    },
  }
  const detach = inbox.attach(reader)
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    detach()
    const back = [...unwritten]
    unwritten.clear()
    inbox.putBack(back)
    process.stderr.write(`phoenix: stdout failed (${error.code ?? error.message}); --print stops, messages wait for phoenix recv (${back.length} it had not written among them)\n`)
  })
}

async function readPsk(file: string): Promise<Uint8Array> {
  try {
    return new Uint8Array(readFileSync(file))
  } catch (error) {
    throw new ConfigError(`--psk ${file}: cannot read the private network key (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`)
  }
}

/**
 * Runs one node: takes its identity's lock and its control endpoint first (so a conflict fails
 * before anything joins the network), then starts libp2p, and leaves gracefully when the process
 * guard says so. Locks and the socket are released on any exit.
 */
export async function runNode(options: NodeOptions, version: string): Promise<void> {
  checkMultiaddrs('--listen', options.listen)
  checkMultiaddrs('--hub', options.hub)
  const say = (line: string) => (options.print === true ? process.stderr : process.stdout).write(`${line}\n`)
  const releases: (() => void)[] = []
  process.on('exit', () => {
    for (const release of releases.reverse()) release()
  })
  if (options.key !== undefined) {
    const lock = lockKey(options.key)
    releases.push(() => lock.release())
  }
  const control = createControlServer()
  if (options.control !== undefined) releases.push((await bindControl(control.server, options.control)).release)
  const privateKey = options.key !== undefined ? await loadOrCreateKey(options.key) : await generateKeyPair('Ed25519')
  const privateNetworkKey = options.psk !== undefined ? await readPsk(options.psk) : undefined
  // Loaded only now: libp2p takes seconds to load on a busy machine, and a conflict or a bad
  // option found above should fail at once.
  const ssh = sshInit(options)
  // Node's realpathSync (its ESM resolver's) trusts the file type of the last synchronous stat for
  // path components it has cached, and stops resolving symlinks after a socket or a FIFO (a stale
  // control socket, `--psk <(…)`; nodejs/node#20167's review asked about that shared array): the
  // transport would resolve under node_modules, where Node will not run TypeScript. Stat a file.
  statSync(fileURLToPath(import.meta.url))
  const { createPhoenixLibp2p } = await import('@phoenix-overlay/transport')
  const { libp2p, phoenix } = await createPhoenixLibp2p({
    listen: options.listen,
    hubs: options.hub,
    names: options.name,
    mode: options.mode,
    signRecords: options.sign,
    discovery: options.discovery,
    ...(options.site !== undefined ? { site: options.site } : {}),
    ...(options.listenRange !== undefined ? { listenRange: options.listenRange } : {}),
    ...(options.sitePrefix.length > 0 ? { sitePrefixes: options.sitePrefix } : {}),
    ...(ssh !== undefined ? { ssh } : {}),
    privateKey,
    ...(privateNetworkKey !== undefined ? { privateNetworkKey } : {}),
    ...(options.allow.length > 0 ? { allowedPeers: options.allow } : {}),
  }).catch((error: Error) => Promise.reject(describeStartError(error, options.psk)))
  // A neighbour dropped for breaking the protocol is logged at error level: shown by default
  // (DEBUG=... replaces this choice, e.g. DEBUG=phoenix:* for everything the node logs).
  if (process.env.DEBUG === undefined) enableLogs('phoenix:*:error')
  // A name another node claims too: messages for it go to one of them only (the transport's name:conflict).
  phoenix.addEventListener('name:conflict', ({ detail: c }) => void (c.ours && process.stderr.write(`${conflictWarning(c, libp2p.peerId.toString(), (id) => phoenix.routes().some((r) => r.destination === id && r.reachable))}\n`)))
  const inbox = new Inbox(INBOX_MESSAGES_MAX, INBOX_BYTES_MAX)
  if (options.print === true) printMessages(inbox)
  const pumped = pump(phoenix, inbox).catch((error: Error) => void process.stderr.write(`phoenix: receiving stopped: ${error.message}\n`))
  // The CLI sets no core limits: the node runs with the core's defaults.
  control.serve({ phoenix, inbox, id: libp2p.peerId.toString(), addresses: () => libp2p.getMultiaddrs().map(String), version, namesPerNodeMax: DEFAULT_LIMITS.namesPerNodeMax })
  // A graceful leave on SIGTERM/SIGINT or a launcher's death: neighbours hear we are gone before connections close.
  // Installed before the lines below, which a job manager reads as "started": a signal sent the
  // moment it sees them must find the handler (Node's default for SIGTERM is to die at once).
  guardProcess({
    stop: async () => {
      await libp2p.stop()
      await handOverInbox(inbox, control, pumped)
      say('left')
    },
  })

  say(`phoenix node ${libp2p.peerId.toString()} listening on ${libp2p.getMultiaddrs().map(String).join(' ')}`)
  say(`names: ${phoenix.names.join(', ') || '(none)'}; hubs: ${new Set(options.hub).size}; pid ${process.pid}`)
  const sshAddress = phoenix.sshAddress()
  if (sshAddress !== undefined) say(`reachable through ssh at ${sshAddress}`)
  if (options.control !== undefined) say(`control endpoint on ${'port' in options.control ? `127.0.0.1:${options.control.port}` : `unix socket ${controlText(options.control)}`}`)
}

/**
 * The line a node prints when a name it claims is claimed by others too. The other claimants can
 * all be gone from what it knows (the holder gave the name up, or its entry expired) while its own
 * claim is still refused: then it says so instead of naming nobody. A holder that is not reachable
 * (a process restarted without its key comes back as another node, and its old self still holds
 * its names) keeps the name until its entry expires: the line says so and how to avoid it.
 */
export function conflictWarning(c: Pick<NameConflict, 'name' | 'owners' | 'winner'>, selfId: string, reachable: (id: string) => boolean): string {
  const others = c.owners.filter((o) => o !== selfId)
  if (others.length === 0) return `phoenix: warning: name "${c.name}": the node this one yielded it to no longer holds it; this node claims it again unless another claim arrives (at once if that claim was new, else after nameReclaimDelayMs); messages for it go to no reachable node`
  const head = `phoenix: warning: name "${c.name}" is also claimed by ${others.join(', ')}; messages for it go to`
  if (c.winner === selfId) return `${head} this node`
  if (c.winner === undefined) return `${head} no reachable node`
  if (reachable(c.winner)) return `${head} ${c.winner}`
  return `${head} ${c.winner}, not reachable now: it keeps the name until its entry expires (unreachableRetentionMs), then this node takes it (a node restarted with --key keeps its id and its names)`
}
