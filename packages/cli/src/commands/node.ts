import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'
import { enable as enableLogs } from '@libp2p/logger'
import { createPhoenixLibp2p, PhoenixTransportError } from '@phoenix-overlay/transport'
import { Command, InvalidArgumentError, Option } from 'commander'
import { existsSync } from 'node:fs'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http'

/** Largest message body the control endpoint accepts for `send` (the wire's payload limit is larger; a CLI has no business near it). */
const CONTROL_BODY_BYTES_MAX = 1024 * 1024

/** `--control`: a TCP port on 127.0.0.1, or a unix socket path (reachable from other network namespaces). */
type ControlEndpoint = { port: number } | { socketPath: string }

function parseControl(value: string): ControlEndpoint {
  if (/^\d+$/.test(value)) {
    const port = Number(value)
    if (port < 1 || port > 65535) throw new InvalidArgumentError(`port must be in 1..65535, got ${value}`)
    return { port }
  }
  if (value.length === 0) throw new InvalidArgumentError('give a port number or a unix socket path')
  return { socketPath: value }
}

const collect = (value: string, previous: string[]) => [...previous, value]

async function loadOrCreateKey(file: string): Promise<PrivateKey> {
  if (existsSync(file)) {
    try {
      return privateKeyFromProtobuf(await readFile(file))
    } catch (error) {
      throw new Error(`--key ${file}: not a libp2p private key (${(error as Error).message})`)
    }
  }
  const key = await generateKeyPair('Ed25519')
  await writeFile(file, privateKeyToProtobuf(key), { mode: 0o600 })
  return key
}

function reply(res: ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  res.writeHead(status, { 'content-type': contentType })
  res.end(contentType === 'application/json' ? `${JSON.stringify(body)}\n` : String(body))
}

async function readBody(req: IncomingMessage): Promise<Uint8Array> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > CONTROL_BODY_BYTES_MAX) throw new PhoenixTransportError('INVALID_INPUT', `message larger than ${CONTROL_BODY_BYTES_MAX} bytes`)
    chunks.push(chunk as Buffer)
  }
  return new Uint8Array(Buffer.concat(chunks))
}

/** Calls a running node's control endpoint. */
function callControl(endpoint: ControlEndpoint, method: string, path: string, body?: Uint8Array): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ ...endpoint, ...('port' in endpoint ? { host: '127.0.0.1' } : {}), method, path }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }))
    })
    req.on('error', (error) => reject(new Error(`cannot reach the node's control endpoint (${'port' in endpoint ? `127.0.0.1:${endpoint.port}` : endpoint.socketPath}): ${error.message}`)))
    req.end(body)
  })
}

interface NodeOptions {
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
}

async function runNode(options: NodeOptions): Promise<void> {
  const privateKey = options.key !== undefined ? await loadOrCreateKey(options.key) : await generateKeyPair('Ed25519')
  let privateNetworkKey: Uint8Array | undefined
  if (options.psk !== undefined) {
    try {
      privateNetworkKey = new Uint8Array(await readFile(options.psk))
    } catch (error) {
      throw new Error(`--psk ${options.psk}: cannot read the private network key (${(error as Error).message})`)
    }
  }
  const { libp2p, phoenix } = await createPhoenixLibp2p({
    listen: options.listen,
    hubs: options.hub,
    names: options.name,
    mode: options.mode,
    signRecords: options.sign,
    discovery: options.discovery,
    privateKey,
    ...(privateNetworkKey !== undefined ? { privateNetworkKey } : {}),
    ...(options.allow.length > 0 ? { allowedPeers: options.allow } : {}),
  })
  // A neighbour dropped for breaking the protocol is logged at error level: shown by default
  // (DEBUG=... replaces this choice, e.g. DEBUG=phoenix:* for everything the node logs).
  if (process.env.DEBUG === undefined) enableLogs('phoenix:*:error')
  console.log(`phoenix node ${libp2p.peerId.toString()} listening on ${libp2p.getMultiaddrs().map(String).join(' ')}`)
  console.log(`names: ${phoenix.names.join(', ') || '(none)'}; hubs: ${options.hub.length}`)

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://control')
    void (async () => {
      try {
        if (req.method === 'GET' && url.pathname === '/routes') return reply(res, 200, phoenix.routes())
        if (req.method === 'GET' && url.pathname === '/peers') return reply(res, 200, phoenix.peers())
        if (req.method === 'GET' && url.pathname === '/metrics') return reply(res, 200, phoenix.metricsText(), 'text/plain; version=0.0.4')
        if (req.method === 'GET' && url.pathname === '/status') {
          return reply(res, 200, { id: libp2p.peerId.toString(), addresses: libp2p.getMultiaddrs().map(String), names: phoenix.names, peers: phoenix.peers().length, reachable: phoenix.routes().filter((r) => r.reachable).length })
        }
        if (req.method === 'POST' && url.pathname === '/send') {
          const name = url.searchParams.get('name')
          if (name === null || name === '') return reply(res, 400, { error: 'INVALID_INPUT', message: 'send needs ?name=<logical name>' })
          const t0 = performance.now()
          await phoenix.send(name, await readBody(req), { ack: url.searchParams.get('ack') === '1', routeWaitMs: Number(url.searchParams.get('waitMs') ?? 10_000) })
          return reply(res, 200, { sent: true, name, ms: +(performance.now() - t0).toFixed(2), route: phoenix.resolve(name) })
        }
        if (req.method === 'POST' && url.pathname === '/hubs') {
          const added = url.searchParams.getAll('add')
          for (const hub of added) phoenix.addHub(hub)
          return reply(res, 200, { added: added.length })
        }
        if (req.method === 'POST' && url.pathname === '/names') {
          for (const name of url.searchParams.getAll('add')) phoenix.addName(name)
          for (const name of url.searchParams.getAll('remove')) phoenix.removeName(name)
          return reply(res, 200, { names: phoenix.names })
        }
        reply(res, 404, { error: 'NOT_FOUND', message: 'GET /routes /peers /metrics /status, POST /send?name=&ack=1, POST /names?add=&remove=, POST /hubs?add=' })
      } catch (error) {
        const code = error instanceof PhoenixTransportError ? error.code : 'ERROR'
        reply(res, code === 'NO_ROUTE' ? 404 : code === 'QUEUE_FULL' ? 503 : 400, { error: code, message: (error as Error).message })
      }
    })()
  })
  if (options.control !== undefined) {
    const control = options.control
    if ('socketPath' in control) await rm(control.socketPath, { force: true })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      if ('port' in control) server.listen(control.port, '127.0.0.1', resolve)
      else server.listen(control.socketPath, resolve)
    })
    console.log(`control endpoint on ${'port' in control ? `127.0.0.1:${control.port}` : control.socketPath}`)
  }

  // A graceful leave on SIGTERM/SIGINT: neighbours hear we are gone before connections close.
  await new Promise<void>((resolve) => {
    const stop = () => resolve()
    process.once('SIGTERM', stop)
    process.once('SIGINT', stop)
  })
  console.log('leaving…')
  server.close()
  await libp2p.stop()
  if (options.control !== undefined && 'socketPath' in options.control) await rm(options.control.socketPath, { force: true })
}

export function registerNodeCommands(program: Command): void {
  program
    .command('node')
    .description('run one overlay node until SIGTERM/SIGINT (then leave gracefully)')
    .option('--listen <multiaddr>', 'listen address (repeatable)', collect, [] as string[])
    .option('--hub <multiaddr>', 'a hub known at start (repeatable); everything else is discovered', collect, [] as string[])
    .option('--name <name>', 'a logical name of this node (repeatable)', collect, [] as string[])
    .option('--key <file>', 'identity key file (libp2p protobuf); created if missing')
    .option('--control <port|socket>', 'serve the control endpoint on 127.0.0.1:<port> or a unix socket path', parseControl)
    .addOption(new Option('--mode <mode>', 'routing mode').choices(['optimized', 'naive']).default('optimized'))
    .option('--no-sign', 'do not sign and verify origin records')
    .option('--no-discovery', 'dial only the --hub addresses (give it every connection it should open)')
    .option('--psk <file>', 'join only the private network with this pre-shared key (libp2p pnet swarm key)')
    .option('--allow <peerId>', 'accept and dial only these peers (repeatable)', collect, [] as string[])
    .action(async (options: NodeOptions) => {
      if (options.listen.length === 0) options.listen = ['/ip4/127.0.0.1/tcp/0']
      await runNode(options)
    })

  const controlOption = () => new Option('--control <port|socket>', 'the node\'s control endpoint').argParser(parseControl).makeOptionMandatory()
  const show = async (endpoint: ControlEndpoint, path: string, json: boolean, toRows: (data: never) => unknown) => {
    const { status, text } = await callControl(endpoint, 'GET', path)
    if (status !== 200) throw new Error(`node answered ${status}: ${text.trim()}`)
    if (json) process.stdout.write(text)
    else console.table(toRows(JSON.parse(text) as never))
  }

  program
    .command('routes')
    .description("print a running node's routing table")
    .addOption(controlOption())
    .option('--json', 'print JSON instead of a table')
    .action(async (o: { control: ControlEndpoint; json?: boolean }) =>
      show(o.control, '/routes', o.json === true, (routes: { destination: string; fwd?: string; nhops: number; seq: number; reachable: boolean; names: string[] }[]) =>
        routes.map((r) => ({ destination: r.destination, names: r.names.join(','), 'next hop': r.fwd ?? '', hops: r.reachable ? r.nhops : '∞', seq: r.seq })),
      ),
    )

  program
    .command('peers')
    .description("print a running node's neighbours")
    .addOption(controlOption())
    .option('--json', 'print JSON instead of a table')
    .action(async (o: { control: ControlEndpoint; json?: boolean }) => show(o.control, '/peers', o.json === true, (peers: string[]) => peers.map((peer) => ({ peer }))))

  program
    .command('send')
    .description('send a message to a logical name through a running node')
    .addOption(controlOption())
    .argument('<name>', 'logical name of the destination')
    .argument('<message>', 'the message (UTF-8)')
    .option('--ack', 'wait for the end-to-end acknowledgement')
    .action(async (name: string, message: string, o: { control: ControlEndpoint; ack?: boolean }) => {
      const { status, text } = await callControl(o.control, 'POST', `/send?name=${encodeURIComponent(name)}${o.ack ? '&ack=1' : ''}`, new TextEncoder().encode(message))
      if (status !== 200) throw new Error(`send failed (${status}): ${text.trim()}`)
      process.stdout.write(text)
    })
}
